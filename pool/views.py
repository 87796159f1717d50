"""The Pool page (proposals, votes, facts, participants, audit), people's votes, and the two experiment hooks:
propose a curated fact to the pool, and subscribe an experiment to pool facts.

Who sees the pool: members of any experiment. Who votes: curators and owners of at least one experiment
(services.may_vote), as `user:<username>`; viewers only watch.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from experiments.access import experiment_view
from experiments.models import Experiment, Membership
from memory.curation.models import Proposal
from pool import presenters, services


def _require_viewer(request: HttpRequest) -> None:
    if not services.may_view(request.user):
        raise PermissionDenied("Only members of an experiment on this deployment see its pool.")


@require_GET
def pool_page(request: HttpRequest) -> HttpResponse:
    _require_viewer(request)
    services.announce_person(request.user)
    context = presenters.pool_context(request.user, trace=request.GET.get("trace", "").strip()[:200])
    if request.htmx and request.GET.get("part") == "audit":
        return render(request, "pool/pool.html#audit", context)
    return render(request, "pool/pool.html", context)


@require_POST
def vote(request: HttpRequest, proposal_id: str) -> HttpResponse:
    _require_viewer(request)
    if not services.may_vote(request.user):
        raise PermissionDenied("Only curators or owners of an experiment vote in the pool.")
    choice = request.POST.get("vote", "")
    applied = services.vote_as_person(user=request.user, proposal_id=proposal_id, vote=choice, reason=request.POST.get("reason", "")[:2000])
    note = f"Vote recorded: {choice}." if applied.status == 200 else str(applied.body.get("message"))
    if not request.htmx:
        (messages.info if applied.status == 200 else messages.error)(request, note)
        return redirect("pool:page")
    # A refused vote still answers 200 to htmx (which swaps only 2xx): the section shows the refusal's sentence.
    context = presenters.pool_context(request.user, trace="")
    error_code = "" if applied.status == 200 else str(applied.body.get("code"))
    return render(request, "pool/pool.html#proposals", {**context, "note": note, "note_is_error": bool(error_code), "error_code": error_code})


@require_POST
@experiment_view(Membership.Role.CURATOR)
def propose(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    curated = get_object_or_404(Proposal, experiment=experiment, pk=pk, kind=Proposal.Kind.FACT, status=Proposal.Status.APPROVED)
    applied = services.propose_curated_fact(experiment=experiment, curated=curated, user=request.user)
    if applied.status == 200:
        messages.info(request, f"{curated.short_id} proposed to the shared pool ({applied.body.get('proposal_id')}).")
    else:
        messages.error(request, f"Not proposed: {applied.body.get('message')}")
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("memory:curated", args=[experiment.slug])
        return response
    return redirect("memory:curated", slug=experiment.slug)


@require_POST
@experiment_view(Membership.Role.CURATOR)
def subscribe(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    mode = request.POST.get("mode", "")
    if mode not in ("all", "tags", "off"):
        return HttpResponse("mode must be all, tags or off.", status=400)
    tags = [t for t in request.POST.get("tags", "").replace(";", ",").split(",")]
    if mode == "tags" and not any(t.strip() for t in tags):
        messages.error(request, "Give at least one tag to subscribe by tags.")
    else:
        services.set_subscription(experiment=experiment, mode=mode, tags=tags, user=request.user)
        messages.info(request, "Pool subscription saved.")
    return redirect("memory:curated", slug=experiment.slug)
