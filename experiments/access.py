"""Per-experiment access for views: load by slug, 404 for non-members, 403 below the needed role."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from experiments.models import Experiment, Membership, role_at_least
from state.services_redaction import mark_in_scope


def get_experiment_or_404(request: HttpRequest, slug: str) -> tuple[Experiment, str]:
    """The experiment and the user's role on it; a non-member gets the same 404 as a missing slug."""
    user = request.user
    if not user.is_authenticated:
        raise Http404("No such experiment.")
    if user.is_staff:
        experiment = Experiment.objects.filter(slug=slug).first()
        role: str | None = Membership.Role.OWNER
    else:
        # One query for the experiment and the member's role (every page pays this look-up).
        member = Membership.objects.filter(user=user, experiment__slug=slug).select_related("experiment").first()
        experiment, role = (member.experiment, member.role) if member is not None else (None, None)
    if experiment is None:
        raise Http404("No such experiment.")
    assert role is not None
    return experiment, role


def experiment_view(role: str = Membership.Role.VIEWER) -> Callable[..., Callable[..., HttpResponse]]:
    """Decorate a view taking (request, experiment, ...) that needs at least `role` on the experiment."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            experiment, actual = get_experiment_or_404(request, slug)
            if not role_at_least(actual, role):
                raise PermissionDenied(f"Needs the {role} role on this experiment.")
            request.experiment_role = actual  # type: ignore[attr-defined]
            mark_in_scope(request, experiment)
            return view(request, experiment, *args, **kwargs)

        return wrapper

    return decorate


def can(request: HttpRequest, role: str) -> bool:
    """Whether the current request's experiment role is at least `role` (for templates via context)."""
    return role_at_least(getattr(request, "experiment_role", None), role)
