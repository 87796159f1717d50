"""The Review tab (queue, detail, votes, bulk actions) and the Curated panel (promoted items, retraction)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import Count, Max, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from awp_site.live import Viewer
from experiments.access import experiment_view
from experiments.models import Digest, Experiment, Membership, role_at_least
from experiments.views import render_tab
from memory.curation import badge, services, writeback
from memory.curation.facts import fact_rows
from memory.curation.models import FactTrial, Proposal
from memory.impact import sort_key as impact_sort_key
from state.services_redaction import redact_for

KINDS = [choice for choice, _ in Proposal.Kind.choices]
STATUSES = [choice for choice, _ in Proposal.Status.choices]


def _filters(data: Any) -> dict[str, str]:
    kind = data.get("kind", "")
    status = data.get("status", "pending")
    return {"kind": kind if kind in KINDS else "", "status": status if status in STATUSES + ["all"] else "pending"}


PAGE_SIZE = 100


def queue_context(experiment: Experiment, filters: dict[str, str], role: str | None, page: int = 1) -> dict[str, Any]:
    """One page of queue rows for the filters (evidence and run counts annotated for that page only)."""
    proposals = Proposal.objects.filter(experiment=experiment)
    if filters["kind"]:
        proposals = proposals.filter(kind=filters["kind"])
    if filters["status"] != "all":
        proposals = proposals.filter(status=filters["status"])
    ordering = ("-first_seen_at", "-pk")
    offset = (page - 1) * PAGE_SIZE
    # Pick the page first, then count evidence for its rows: counting for 10k proposals to show 100 is waste.
    ids = list(proposals.order_by(*ordering).values_list("pk", flat=True)[offset : offset + PAGE_SIZE + 1])
    rows = Proposal.objects.filter(pk__in=ids[:PAGE_SIZE]).annotate(
        evidence_count=Count("evidence", distinct=True),
        run_count=Count("evidence__run_ref", distinct=True, filter=~Q(evidence__run_ref="")),
    ).order_by(*ordering)
    return {
        "experiment": experiment,
        "proposals": rows,
        "page": page,
        "next_page": page + 1 if len(ids) > PAGE_SIZE else None,
        "previous_page": page - 1 if page > 1 else None,
        "filters": filters,
        "filter_query": urlencode(filters),
        "kinds": KINDS,
        "statuses": STATUSES + ["all"],
        "can_vote": role_at_least(role, Membership.Role.CURATOR),
        "writeback_failure": writeback.latest_failure(experiment),
    }


def detail_context(experiment: Experiment, proposal: Proposal, role: str | None) -> dict[str, Any]:
    """A proposal with its evidence: each digest's goal, the fact among its key facts, the confidence trend."""
    evidence = list(proposal.evidence.select_related("run").order_by("run_ref", "iteration", "pk"))
    digests = {d.sha: d for d in Digest.objects.filter(experiment=experiment, sha__in=[e.digest_sha for e in evidence if e.digest_sha])}
    rows = []
    for item in evidence:
        digest = digests.get(item.digest_sha)
        facts = [{"text": str(f), "match": str(f).strip() == proposal.text} for f in (digest.key_facts if digest else [])]
        rows.append({"evidence": item, "digest": digest, "facts": redact_for(experiment, facts)})
    return {
        "experiment": experiment,
        "proposal": proposal,
        "details": redact_for(experiment, proposal.details),
        "evidence_rows": rows,
        "votes": proposal.votes.select_related("reviewer").order_by("created_at"),
        "decisions": proposal.decisions.order_by("created_at"),
        "fact_versions": proposal.facts.order_by("version"),
        "can_vote": role_at_least(role, Membership.Role.CURATOR),
        "contradicts": _contradicted(experiment, proposal),
    }


def _contradicted(experiment: Experiment, proposal: Proposal) -> list[dict[str, Any]]:
    """The promoted or pool facts this candidate contradicts, each with its own evidence (side by side)."""
    out = []
    for flag in (proposal.details or {}).get("contradicts", []):
        ref = str(flag.get("ref", ""))
        fact = None
        if ref.startswith("proposal:") and ref[9:].isdigit():
            fact = experiment.proposals.filter(pk=int(ref[9:])).prefetch_related("evidence").first()
        evidence = [{"run_ref": e.run_ref, "iteration": e.iteration, "digest_sha": e.digest_sha[:12], "note": e.note}
                    for e in (fact.evidence.all() if fact else [])]  # fmt: skip
        out.append(redact_for(experiment, {"ref": ref, "why": flag.get("why", ""), "similarity": flag.get("similarity"),
                                           "text": fact.promoted_text if fact else flag.get("text", ""), "evidence": evidence,
                                           "fact_id": fact.pk if fact else None, "status": fact.status if fact else "pool"}))  # fmt: skip
    return out


@require_GET
@experiment_view()
def review_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    role = request.experiment_role  # type: ignore[attr-defined]
    page = request.GET.get("page", "1")
    context = queue_context(experiment, _filters(request.GET), role, page=int(page) if page.isdigit() and int(page) > 0 else 1)
    selected = request.GET.get("selected", "")
    if selected.isdigit():
        proposal = Proposal.objects.filter(experiment=experiment, pk=int(selected)).first()
        if proposal is not None:
            context.update(detail_context(experiment, proposal, role))
    if request.htmx and request.htmx.target == "review-queue":
        return render(request, "curation/review_tab.html#queue", context)
    waiting = FactTrial.objects.filter(proposal__experiment=experiment, status=FactTrial.Status.MEASURED).order_by("pk")
    return render_tab(request, "curation/review_tab.html", {**context, "tab": "review", "trials_waiting": list(waiting)})


@require_GET
@experiment_view()
def proposal_detail(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, pk=pk)
    if not request.htmx:
        return redirect(f"{reverse('curation:review', args=[experiment.slug])}?status=all&selected={pk}")
    context = detail_context(experiment, proposal, request.experiment_role)  # type: ignore[attr-defined]
    return render(request, "curation/_proposal_detail.html", context)


def _after_action(request: HttpRequest, experiment: Experiment, note: str = "") -> HttpResponse:
    """Re-render the queue (htmx, with the badges out of band) or go back to the Review tab."""
    filters = _filters(request.POST)
    if not request.htmx:
        if note:
            messages.info(request, note)
        return redirect(f"{reverse('curation:review', args=[experiment.slug])}?{urlencode(filters)}")
    context = queue_context(experiment, filters, request.experiment_role)  # type: ignore[attr-defined]
    context["note"] = note
    html = render_to_string("curation/review_tab.html#queue", context, request=request)
    viewer = Viewer(user=request.user, role=request.experiment_role)  # type: ignore[attr-defined]
    html += "".join(badge.badge_fragments(experiment, viewer, []))
    html += '<aside id="proposal-detail" hx-swap-oob="true"><p class="muted">Decision recorded.</p></aside>'
    return HttpResponse(html)


@require_POST
@experiment_view(Membership.Role.CURATOR)
def vote(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, pk=pk)
    try:
        reviewed = services.review_proposal(
            proposal=proposal,
            reviewer=request.user,
            verdict=request.POST.get("verdict", ""),
            text=request.POST.get("text", ""),
            reason=request.POST.get("reason", ""),
        )
    except services.ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status)
    return _after_action(request, experiment, f"{reviewed.short_id} is {reviewed.status}.")


@require_POST
@experiment_view(Membership.Role.CURATOR)
def bulk(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    ids = [int(value) for value in request.POST.getlist("ids") if value.isdigit()]
    verdict = request.POST.get("verdict", "")
    if not ids or verdict not in ("approve", "reject"):
        return HttpResponse("Select proposals and choose approve or reject.", status=400)
    outcome = services.bulk_review(
        experiment=experiment, ids=ids, reviewer=request.user, verdict=verdict, reason=request.POST.get("reason", "")
    )
    note = f"{verdict.title()}: {len(outcome['done'])} voted"
    if outcome["refused"]:
        note += f", {len(outcome['refused'])} refused ({', '.join(sorted(set(outcome['refused'].values())))})"
    return _after_action(request, experiment, note + ".")


@require_POST
@experiment_view(Membership.Role.CURATOR)
def curate_now(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    summary = services.curate_experiment(experiment=experiment)
    return _after_action(request, experiment, f"Curated {summary.runs} runs: {summary.proposed} new, {summary.already_known} known.")


@require_POST
@experiment_view(Membership.Role.CURATOR)
def writeback_retry(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    attempt = writeback.write_back(experiment_id=experiment.pk, trigger="manual")
    note = "Write-back is off for this experiment." if attempt is None else f"Write-back {attempt.status}."
    return _after_action(request, experiment, note)


# ---------------------------------------------------------------- Curated panel (Memory tab)


def curated_context(experiment: Experiment, role: str | None) -> dict[str, Any]:
    """Promoted and retracted items by kind, with their versions, for `curation/_curated_panel.html`."""
    items = (
        Proposal.objects.filter(experiment=experiment, status__in=[Proposal.Status.APPROVED, Proposal.Status.RETRACTED])
        .annotate(latest_version=Max("facts__version"))
        .order_by("kind", "-decided_at", "-pk")
    )
    groups: dict[str, list[Proposal]] = {kind: [] for kind in KINDS}
    for item in items:
        groups[item.kind].append(item)
    # Facts: best measured impact first, the ones whose runs did worse last (and flagged).
    rows = {row.proposal.pk: row for row in fact_rows(experiment)}
    for item in groups["fact"]:
        item.impact_row = rows.get(item.pk)  # type: ignore[attr-defined]
    groups["fact"].sort(key=lambda item: impact_sort_key(rows[item.pk].impact if item.pk in rows else None))
    return {
        "experiment": experiment,
        "curated_groups": [(kind, groups[kind]) for kind in KINDS],
        "can_retract": role_at_least(role, Membership.Role.CURATOR),
        "writeback_failure": writeback.latest_failure(experiment),
    }


@require_GET
@experiment_view()
def curated_panel(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    return render(request, "curation/_curated_panel.html", {"experiment": experiment})


def _panel_response(request: HttpRequest, experiment: Experiment, note: str) -> HttpResponse:
    if not request.htmx:
        messages.info(request, note)
        return redirect(reverse("memory:tab", args=[experiment.slug]))
    return render(request, "curation/_curated_panel.html", {"experiment": experiment, "note": note})


@require_POST
@experiment_view(Membership.Role.CURATOR)
def retract(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, pk=pk)
    try:
        services.retract_proposal(proposal=proposal, actor=request.user, reason=request.POST.get("reason", ""))
    except services.ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status)
    return _panel_response(request, experiment, f"{proposal.short_id} retracted.")


@require_POST
@experiment_view(Membership.Role.CURATOR)
def edit_promoted(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    proposal = get_object_or_404(Proposal, experiment=experiment, pk=pk)
    try:
        services.edit_promoted(
            proposal=proposal, actor=request.user, text=request.POST.get("text", ""), reason=request.POST.get("reason", "")
        )
    except services.ReviewRefused as refusal:
        return HttpResponse(refusal.message, status=refusal.status)
    return _panel_response(request, experiment, f"{proposal.short_id} edited.")
