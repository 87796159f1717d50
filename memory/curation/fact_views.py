"""Memory tab › Facts: every promoted fact with its status and measured impact, a fact's page (impact, trial,
runs that carried it, lifecycle history, actions), and the facts one run carried."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_GET, require_POST

from experiments.access import experiment_view
from experiments.models import Experiment, Membership, Run
from experiments.views import render_tab
from memory import exposure, impact
from memory.curation import lifecycle
from memory.curation.facts import fact_row, fact_rows
from memory.curation.models import FactEvent, FactTrial, Proposal
from memory.curation.services import ReviewRefused
from state.services_redaction import redactor_for

TEMPLATE = "memory/memory_tab.html"
METRIC_LABELS = {"eval_score": "evaluation score", "confidence": "worker confidence", "completed": "completed (share)",
                 "iterations": "iterations", "tokens": "tokens", "duration_s": "duration (s)"}  # fmt: skip


def _tab(request: HttpRequest, experiment: Experiment, subtab: str, panel: str, **context: Any) -> HttpResponse:
    return render_tab(request, TEMPLATE, {"experiment": experiment, "tab": "memory", "subtab": subtab, "panel": panel, **context})  # fmt: skip


def _labelled(comparisons: list[Any]) -> list[tuple[str, Any]]:
    return [(METRIC_LABELS.get(c.metric, c.metric), c) for c in comparisons]


@require_GET
@experiment_view()
def facts(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    redactor = redactor_for(experiment)
    rows = [(row, redactor.text(row.proposal.promoted_text), METRIC_LABELS.get(row.impact.metric, "") if row.impact else "")
            for row in fact_rows(experiment)]  # fmt: skip
    pool = [(redactor.text(label), runs, impact.headline(found), METRIC_LABELS.get(found[0].metric, "") if found else "")
            for label, (runs, found) in exposure.pool_impacts(experiment).items()]  # fmt: skip
    return _tab(request, experiment, "facts", "curation/_facts.html", rows=rows, pool=pool)


@require_GET
@experiment_view()
def fact_detail(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, kind=Proposal.Kind.FACT, pk=pk)
    redactor = redactor_for(experiment)
    row = fact_row(proposal) if proposal.status in (Proposal.Status.APPROVED, Proposal.Status.RETRACTED) else None
    exposures = proposal.exposures.select_related("run").order_by("run__created_at", "pk")
    trials = [(trial, _labelled(exposure.trial_impact(trial)), list(trial.arms.select_related("run"))) for trial in proposal.trials.all()]
    contradicted_by = [p for p in experiment.proposals.filter(status=Proposal.Status.PENDING, kind=Proposal.Kind.FACT)
                       if any(c.get("ref") == f"proposal:{proposal.pk}" for c in (p.details or {}).get("contradicts", []))]  # fmt: skip
    return _tab(
        request, experiment, "facts", "curation/_fact_detail.html",
        fact=proposal, row=row, text=redactor.text(proposal.promoted_text), comparisons=_labelled(row.comparisons if row else []),
        status=lifecycle.status_of(proposal), exposures=exposures, trials=trials,
        events=[(ev, redactor.text(ev.reason)) for ev in FactEvent.objects.filter(proposal=proposal).select_related("related")],
        versions=[(f, redactor.text(f.text)) for f in proposal.facts.order_by("version")],
        contradicted_by=[(p, redactor.text(p.text)) for p in contradicted_by],
        can_act=getattr(request, "experiment_role", None) in (Membership.Role.CURATOR, Membership.Role.OWNER),
    )  # fmt: skip


@require_POST
@experiment_view(Membership.Role.CURATOR)
def fact_action(request: HttpRequest, experiment: Experiment, pk: int, action: str) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, kind=Proposal.Kind.FACT, pk=pk)
    reason, user = request.POST.get("reason", "")[:2000], request.user
    target = proposal
    try:
        if action in ("pin", "unpin"):
            lifecycle.pin_fact(proposal=proposal, actor=user, pinned=action == "pin", reason=reason)
        elif action == "retire":
            lifecycle.retire_fact(proposal=proposal, actor=user, reason=reason)
        elif action == "restore":
            lifecycle.restore_fact(proposal=proposal, actor=user, reason=reason)
        elif action == "supersede":
            target = lifecycle.supersede_fact(proposal=proposal, actor=user, text=request.POST.get("text", "")[:5000], reason=reason)
        elif action == "expire":
            when = _moment(request.POST.get("valid_until", ""))
            lifecycle.set_valid_until(proposal=proposal, actor=user, valid_until=when)
        elif action in ("keep", "drop"):
            trial = proposal.trials.filter(status__in=[FactTrial.Status.RUNNING, FactTrial.Status.MEASURED]).first()
            if trial is None:
                raise ReviewRefused(409, "no_trial", "This fact has no trial waiting for a decision.")
            lifecycle.decide_trial(trial=trial, actor=user, keep=action == "keep", reason=reason)
        else:
            return HttpResponse("Unknown action.", status=404, content_type="text/plain")
    except ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status, content_type="text/plain")
    messages.success(request, f"{target.short_id}: {action} done.")
    return redirect("curation:fact", experiment.slug, target.pk)


def _moment(value: str) -> datetime | None:
    """A form's date-time (None when empty); one that does not name a moment is refused (422), not a 500."""
    if not value:
        return None
    try:
        moment = parse_datetime(value)
    except ValueError:  # well-formed but impossible: month 13, an offset of +99:00
        moment = None
    if moment is None:
        raise ReviewRefused(422, "bad_valid_until", "valid_until must be a date and time like 2026-03-23T12:00.")
    return moment


@require_POST
@experiment_view(Membership.Role.CURATOR)
def approve_on_trial(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, kind=Proposal.Kind.FACT, pk=pk)
    try:
        runs = int(request.POST.get("runs", "0"))
        seed = int(request.POST.get("seed", "0") or 0)
    except ValueError:
        return HttpResponse("runs and seed must be whole numbers.", status=422, content_type="text/plain")
    try:
        lifecycle.approve_on_trial(proposal=proposal, reviewer=request.user, runs=runs, seed=seed,
                                   assignment=request.POST.get("assignment", "alternate"), reason=request.POST.get("reason", "")[:2000])  # fmt: skip
    except ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status, content_type="text/plain")
    return redirect("curation:fact", experiment.slug, proposal.pk)


@require_POST
@experiment_view(Membership.Role.CURATOR)
def resolve(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    candidate = get_object_or_404(Proposal, experiment=experiment, kind=Proposal.Kind.FACT, pk=pk)
    fact_id = request.POST.get("fact_id", "")
    try:
        result = lifecycle.resolve_contradiction(candidate=candidate, actor=request.user, action=request.POST.get("action", ""),
                                                 fact_id=int(fact_id) if fact_id.isdigit() else None, reason=request.POST.get("reason", "")[:2000])  # fmt: skip
    except ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status, content_type="text/plain")
    messages.success(request, f"{candidate.short_id}: {request.POST.get('action')} done.")
    return redirect("curation:fact", experiment.slug, result.pk) if result.status == Proposal.Status.APPROVED else redirect("curation:review", experiment.slug)


@require_GET
@experiment_view()
def run_facts(request: HttpRequest, experiment: Experiment, run_pk: int) -> HttpResponse:
    run = get_object_or_404(Run, experiment=experiment, pk=run_pk)
    redactor = redactor_for(experiment)
    rows = [(x, redactor.text(x.proposal.promoted_text) if x.proposal else redactor.text(x.item)) for x in exposure.run_exposures(run)]
    arms = list(run.trial_arms.select_related("trial__proposal"))
    return _tab(request, experiment, "facts", "curation/_run_facts.html", run=run, rows=rows, arms=arms)
