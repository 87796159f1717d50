"""The curation API router (proposals, reviews), mounted under /api/v1/."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from awp_site.apierrors import ApiError
from awp_site.auth import Caller, api_auth, authorize_experiment, experiment_for
from memory.curation import lifecycle
from memory.curation.facts import fact_row, fact_rows
from memory.curation.models import FactTrial, Proposal
from memory.curation.services import ReviewRefused, review_proposal
from state.services_redaction import redact_for

router = Router(tags=["curation"], auth=api_auth)


class EvidenceOut(Schema):
    digest_sha: str
    run_id: str
    iteration: int | None


class ProposalOut(Schema):
    id: int
    kind: str
    text: str
    edited_text: str
    status: str
    origin: str
    version: int
    first_seen_at: str
    evidence: list[EvidenceOut]


class ProposalFilter(Schema):
    status: Literal["pending", "approved", "rejected", "retracted"] | None = None
    kind: Literal["fact", "tool", "antipattern", "reflection"] | None = None


class ReviewIn(Schema):
    verdict: Literal["approve", "reject"]
    text: str | None = Field(None, max_length=5000, description="approve with this edited text instead")
    reason: str | None = Field(None, max_length=2000)


def proposal_out(proposal: Proposal) -> dict[str, Any]:
    """The API shape of a proposal, redacted for its experiment."""
    body = {
        "id": proposal.pk,
        "kind": proposal.kind,
        "text": proposal.text,
        "edited_text": proposal.edited_text,
        "status": proposal.status,
        "origin": proposal.origin,
        "version": proposal.version,
        "first_seen_at": proposal.first_seen_at.isoformat(),
        "evidence": [
            {"digest_sha": e.digest_sha, "run_id": e.run_ref, "iteration": e.iteration} for e in proposal.evidence.all()
        ],
    }
    return redact_for(proposal.experiment, body)


@router.get("/experiments/{slug}/proposals", response=list[ProposalOut], summary="Curation proposals with their evidence")
def list_proposals(request: HttpRequest, slug: str, filters: Query[ProposalFilter]) -> list[dict[str, Any]]:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    scope = "review" if caller.token is not None and caller.token.has_scope("review") else "memory:read"
    experiment = experiment_for(request, slug, scope=scope)
    proposals = Proposal.objects.filter(experiment=experiment).select_related("experiment").prefetch_related("evidence")
    if filters.status:
        proposals = proposals.filter(status=filters.status)
    if filters.kind:
        proposals = proposals.filter(kind=filters.kind)
    return [proposal_out(p) for p in proposals.order_by("-first_seen_at", "-pk")[:1000]]


@router.post("/proposals/{proposal_id}/review", response=ProposalOut, summary="Vote on a proposal (approve or reject)")
def review(request: HttpRequest, proposal_id: int, body: ReviewIn) -> dict[str, Any]:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    proposal = Proposal.objects.select_related("experiment").filter(pk=proposal_id).first()
    if proposal is None:
        raise ApiError(404, "proposal_not_found", f"No proposal {proposal_id}.")
    authorize_experiment(request, proposal.experiment, scope="review")
    if caller.user is None:
        raise ApiError(403, "token_without_user", "This token is not issued to a user; reviews need a named reviewer.")
    via = f"token:{caller.token.name}" if caller.token is not None else "api-session"
    try:
        reviewed = review_proposal(
            proposal=proposal,
            reviewer=caller.user,
            verdict=body.verdict,
            text=body.text or "",
            reason=body.reason or "",
            via=via,
        )
    except ReviewRefused as refusal:
        raise ApiError(refusal.status, refusal.code, refusal.message) from refusal
    return proposal_out(Proposal.objects.select_related("experiment").get(pk=reviewed.pk))


# ---------------------------------------------------------------- facts: lifecycle, exposure, impact


class ImpactOut(Schema):
    metric: str
    with_mean: float
    without_mean: float
    diff: float
    low: float
    high: float
    n_with: int
    n_without: int


class FactOut(Schema):
    id: int
    text: str
    status: Literal["active", "retired", "superseded", "trial", "expired", "pending", "rejected"]
    pinned: bool
    version: int
    exposed_runs: int
    impact: ImpactOut | None
    flagged: bool
    valid_until: str | None
    superseded_by: int | None


class ReasonIn(Schema):
    reason: str = Field("", max_length=2000)


class SupersedeIn(Schema):
    text: str = Field(..., min_length=1, max_length=5000)
    reason: str = Field("", max_length=2000)


class TrialIn(Schema):
    runs: int = Field(..., ge=2, le=1000, description="how many of the next runs the trial spans")
    assignment: Literal["alternate", "random"] = "alternate"
    seed: int = Field(0, ge=0, le=2**31 - 1)
    reason: str = Field("", max_length=2000)


class DecideIn(Schema):
    keep: bool
    reason: str = Field("", max_length=2000)


class ResolveIn(Schema):
    action: Literal["supersede", "keep_both", "reject"]
    fact_id: int | None = Field(None, ge=1, le=2**63 - 1, description="with supersede: the promoted fact the candidate replaces")
    reason: str = Field("", max_length=2000)


def fact_out(row: Any) -> dict[str, Any]:
    return redact_for(row.proposal.experiment, row.as_api())


@router.get("/experiments/{slug}/facts", response=list[FactOut], summary="Promoted facts: status, exposure, measured impact")
def list_facts(request: HttpRequest, slug: str) -> list[dict[str, Any]]:
    experiment = experiment_for(request, slug, scope="memory:read")
    return [fact_out(row) for row in fact_rows(experiment)]


def _reviewer_call(request: HttpRequest, proposal_id: int, action: Any) -> dict[str, Any]:
    """Look up the fact, authorize a curator (session) or a `review` token issued to a user, run `action`."""
    caller: Caller = request.auth  # type: ignore[attr-defined]
    proposal = Proposal.objects.select_related("experiment").filter(pk=proposal_id, kind=Proposal.Kind.FACT).first() if 0 < proposal_id < 2**63 else None
    if proposal is None:
        raise ApiError(404, "fact_not_found", f"No fact {proposal_id}.")
    authorize_experiment(request, proposal.experiment, scope="review")
    if caller.user is None:
        raise ApiError(403, "token_without_user", "This token is not issued to a user; lifecycle changes need a named curator.")
    try:
        result = action(proposal, caller.user)
    except ReviewRefused as refusal:
        raise ApiError(refusal.status, refusal.code, refusal.message) from refusal
    target = result if isinstance(result, Proposal) else proposal
    return fact_out(fact_row(Proposal.objects.select_related("experiment").get(pk=target.pk)))


@router.post("/facts/{fact_id}/pin", response=FactOut, summary="Pin a fact (always in the prior-run block)")
def pin(request: HttpRequest, fact_id: int, body: ReasonIn) -> dict[str, Any]:
    return _reviewer_call(request, fact_id, lambda p, u: lifecycle.pin_fact(proposal=p, actor=u, reason=body.reason))


@router.post("/facts/{fact_id}/unpin", response=FactOut, summary="Unpin a fact")
def unpin(request: HttpRequest, fact_id: int, body: ReasonIn) -> dict[str, Any]:
    return _reviewer_call(request, fact_id, lambda p, u: lifecycle.pin_fact(proposal=p, actor=u, pinned=False, reason=body.reason))


@router.post("/facts/{fact_id}/retire", response=FactOut, summary="Retire a fact (a tombstone: out of MEMORY.md, kept in history)")
def retire(request: HttpRequest, fact_id: int, body: ReasonIn) -> dict[str, Any]:
    return _reviewer_call(request, fact_id, lambda p, u: lifecycle.retire_fact(proposal=p, actor=u, reason=body.reason))


@router.post("/facts/{fact_id}/restore", response=FactOut, summary="Restore a retired, superseded or expired fact")
def restore(request: HttpRequest, fact_id: int, body: ReasonIn) -> dict[str, Any]:
    return _reviewer_call(request, fact_id, lambda p, u: lifecycle.restore_fact(proposal=p, actor=u, reason=body.reason))


@router.post("/facts/{fact_id}/supersede", response=FactOut, summary="Replace a fact with a new text (answers the new fact)")
def supersede(request: HttpRequest, fact_id: int, body: SupersedeIn) -> dict[str, Any]:
    return _reviewer_call(request, fact_id, lambda p, u: lifecycle.supersede_fact(proposal=p, actor=u, text=body.text, reason=body.reason))


@router.post("/proposals/{proposal_id}/trial", response=FactOut, summary="Approve a fact on trial for the next N runs")
def trial(request: HttpRequest, proposal_id: int, body: TrialIn) -> dict[str, Any]:
    def start(p: Proposal, u: Any) -> Proposal:
        lifecycle.approve_on_trial(proposal=p, reviewer=u, runs=body.runs, assignment=body.assignment, seed=body.seed, reason=body.reason)
        return p

    return _reviewer_call(request, proposal_id, start)


@router.post("/facts/{fact_id}/trial/decide", response=FactOut, summary="The final decision after a trial: keep or retire")
def decide(request: HttpRequest, fact_id: int, body: DecideIn) -> dict[str, Any]:
    def run(p: Proposal, u: Any) -> Proposal:
        found = FactTrial.objects.filter(proposal=p).first()
        if found is None:
            raise ReviewRefused(404, "trial_not_found", f"Fact {p.pk} has no trial.")
        lifecycle.decide_trial(trial=found, actor=u, keep=body.keep, reason=body.reason)
        return p

    return _reviewer_call(request, fact_id, run)


@router.post("/proposals/{proposal_id}/resolve", response=FactOut, summary="Resolve a contradicting candidate")
def resolve(request: HttpRequest, proposal_id: int, body: ResolveIn) -> dict[str, Any]:
    return _reviewer_call(
        request, proposal_id,
        lambda p, u: lifecycle.resolve_contradiction(candidate=p, actor=u, action=body.action, fact_id=body.fact_id, reason=body.reason),
    )  # fmt: skip
