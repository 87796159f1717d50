"""Per-experiment access for views: load by slug, 404 for non-members, 403 below the needed role."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from experiments.models import Experiment, Membership, role_at_least
from state.secrets import stamp_sql
from state.services_redaction import mark_in_scope, read_known_stamp


def get_experiment_or_404(request: HttpRequest, slug: str) -> tuple[Experiment, str]:
    """The experiment and the user's role on it; a non-member gets the same 404 as a missing slug."""
    user = request.user
    if not user.is_authenticated:
        raise Http404("No such experiment.")
    # One statement for the experiment, the member's role and the freshness stamp of the experiment's known secrets
    # (every page pays this look-up, and every page redacts). Written once as SQL: compiling the same annotated ORM
    # query for every request cost about a tenth of a page's CPU.
    if user.is_staff:
        found = list(Experiment.objects.raw(_lookup_sql(member=False), [slug]))
    else:
        found = list(Experiment.objects.raw(_lookup_sql(member=True), [user.pk, slug]))
    if not found:
        raise Http404("No such experiment.")
    experiment = found[0]
    return experiment, experiment.awp_role  # type: ignore[attr-defined]


# The experiment's known-secret stamp as a column of the look-up above, correlated with the experiment's row.
KNOWN_STAMP_SQL = stamp_sql('"experiments_experiment"."id"')


@lru_cache(maxsize=2)
def _lookup_sql(*, member: bool) -> str:
    """The experiment's columns, the role (a staff user is an owner of every experiment) and the stamp, by slug."""
    table = Experiment._meta.db_table
    columns = ", ".join(f'"{table}"."{field.column}"' for field in Experiment._meta.concrete_fields)
    if not member:
        owner = Membership.Role.OWNER.value  # a constant of the code, not input
        return f'SELECT {columns}, \'{owner}\' AS awp_role, ({KNOWN_STAMP_SQL}) AS known_stamp FROM "{table}" WHERE "{table}"."slug" = %s'
    membership = Membership._meta.db_table
    return (f'SELECT {columns}, "{membership}"."role" AS awp_role, ({KNOWN_STAMP_SQL}) AS known_stamp'
            f' FROM "{table}" JOIN "{membership}" ON "{membership}"."experiment_id" = "{table}"."id"'
            f' AND "{membership}"."user_id" = %s WHERE "{table}"."slug" = %s')  # fmt: skip


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
            read_known_stamp(experiment.pk, experiment.known_stamp)  # type: ignore[attr-defined]
            return view(request, experiment, *args, **kwargs)

        return wrapper

    return decorate


def can(request: HttpRequest, role: str) -> bool:
    """Whether the current request's experiment role is at least `role` (for templates via context)."""
    return role_at_least(getattr(request, "experiment_role", None), role)
