"""The experiment's Overview (where it opens) and its Connect page: tokens and ready-to-copy ways in."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from experiments import snippets
from experiments.access import experiment_view
from experiments.models import ApiToken, Experiment, Membership
from experiments.tokens import TokenRefused, issue_token, revoke_token

logger = logging.getLogger(__name__)


@require_GET
@experiment_view()
def overview_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    """Latest runs, the review queue and memory at a glance: what a person looks at first."""
    from experiments.views import render_tab
    from memory.curation.models import Proposal
    from memory.models import MemoryDocument, MemoryEntry

    latest = list(experiment.runs.order_by("-created_at", "-pk")[:8])
    pending = list(Proposal.objects.filter(experiment=experiment, status="pending").order_by("-first_seen_at")[:5])
    document = MemoryDocument.objects.filter(experiment=experiment).order_by("-version").first()
    context = {
        "experiment": experiment,
        "tab": "overview",
        "latest_runs": latest,
        "run_total": experiment.runs.count(),
        "pending": pending,
        "memory_version": document.version if document else None,
        "memory_entries": MemoryEntry.objects.filter(experiment=experiment).count(),
        "approved_count": Proposal.objects.filter(experiment=experiment, status="approved").count(),
    }
    return render_tab(request, "experiments/overview_tab.html", context)


@never_cache
@require_GET
@experiment_view(Membership.Role.OWNER)
def connect_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    return _render_connect(request, experiment)


@never_cache  # the one answer that carries a new secret must not sit in any cache
@require_POST
@experiment_view(Membership.Role.OWNER)
def token_create(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    scopes = [s for s in request.POST.getlist("scopes") if s]
    try:
        token, secret = issue_token(
            experiment=experiment, name=request.POST.get("name", ""), scopes=scopes,
            user=request.user if "review" in scopes else None, actor=request.user, via="connect page",
        )  # fmt: skip
    except TokenRefused as refused:
        return _render_connect(request, experiment, error={"field": refused.field, "message": str(refused)}, status=400)
    return _render_connect(request, experiment, new_token=token, new_secret=secret)


@require_POST
@experiment_view(Membership.Role.OWNER)
def token_revoke(request: HttpRequest, experiment: Experiment, token_pk: int) -> HttpResponse:
    from django.contrib import messages

    token = revoke_token(experiment=experiment, token_id=token_pk, actor=request.user, via="connect page")
    if token is None:
        return HttpResponse("No active token with this id on this experiment.", status=404)
    messages.success(request, f"Revoked token '{token.name}'. Clients using it now get 401.")
    return redirect("experiments:connect", slug=experiment.slug)


@sensitive_post_parameters("values")  # an error report must not print them
@never_cache
@require_POST
@experiment_view(Membership.Role.OWNER)
def secrets_declare(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    """Values pasted one per line become known secrets (state.declared); the answer names lines, never values."""
    from state.declared import MAX_DECLARED, declare, refusals

    values = [line.strip() for line in request.POST.get("values", "").splitlines() if line.strip()]
    if not values:
        return _render_connect(request, experiment, secrets_error="Paste at least one value, one per line.", status=400)
    if len(values) > MAX_DECLARED:
        return _render_connect(request, experiment, secrets_error=f"At most {MAX_DECLARED} values at a time.", status=400)
    refused = refusals(values, first=1)
    if refused:
        lines = ", ".join(str(r.index) for r in refused)
        message = f"Nothing was declared. Line{'s' if len(refused) > 1 else ''} {lines}: {refused[0].message}"
        return _render_connect(request, experiment, secrets_error=message, status=400)
    new = declare(experiment.pk, values)
    logger.info("experiment %s: %d secret value(s) declared by user %s on the Connect page, %d new", experiment.slug, len(values), request.user.pk, new)
    return _render_connect(request, experiment, secrets_declared=len(values), secrets_new=new)


def _render_connect(request: HttpRequest, experiment: Experiment, *, status: int = 200, **extra: Any) -> HttpResponse:
    from experiments.views import render_tab

    secret = extra.get("new_secret")
    context = {
        "experiment": experiment,
        "tab": "connect",
        "tokens": list(experiment.tokens.all()),
        "scopes": ApiToken.SCOPES,
        "scope_help": SCOPE_HELP,
        "snippets": snippets.snippets_for(server=server_url(request), slug=experiment.slug, token=secret),
        **extra,
    }
    response = render_tab(request, "experiments/connect_tab.html", context)
    response.status_code = status
    return response


def server_url(request: HttpRequest) -> str:
    """The address this page was reached at: what a runtime on the same network calls."""
    return request.build_absolute_uri("/").rstrip("/")


SCOPE_HELP = {
    "ingest": "push events of runs (POST /api/v1/ingest)",
    "memory:read": "search, read, recall and the prior-run block",
    "memory:write": "write memory entries and blackboard posts",
    "review": "vote on proposals (issued to you: votes are a person's)",
}
