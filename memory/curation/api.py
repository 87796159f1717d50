"""The curation API router (proposals, reviews), mounted under /api/v1/."""

from __future__ import annotations

from typing import Any, Literal

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from awp_site.apierrors import ApiError
from awp_site.auth import Caller, api_auth, authorize_experiment, experiment_for
from memory.curation.models import Proposal
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
