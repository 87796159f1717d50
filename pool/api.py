"""The pool API, mounted at /api/v1/pool/: envelopes in (participant tokens), proposals and facts out."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Router, Schema
from ninja.security import HttpBearer

from awp_site.apierrors import ApiError
from awp_site.auth import SessionUser
from awp_site.jsonbody import parse_json_body
from awp_site.ratelimit import check_rate, per_minute
from experiments.models import hash_secret
from pool import services
from pool.models import Participant, PoolFactVersion, PoolProposal
from pool.redaction import redact_pool
from pool.rules import Refusal


class ParticipantBearer(HttpBearer):
    """A participant's bearer token (`awp_claw create` prints it); only its SHA-256 is stored."""

    def authenticate(self, request: HttpRequest, token: str) -> Participant | None:
        client = request.META.get("REMOTE_ADDR", "?")
        check_rate(f"claw-auth:{client}", limit=per_minute("AWP_RATE_LIMIT_ADDRESS_PER_MINUTE"), per_seconds=60, setting="AWP_RATE_LIMIT_ADDRESS_PER_MINUTE")
        found = Participant.objects.filter(hashed_secret=hash_secret(token)).first()
        if found is None:
            check_rate(f"claw-auth-fail:{client}", limit=per_minute("AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE"), per_seconds=60,
                       setting="AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE")  # fmt: skip
        return found


class PoolSession(SessionUser):
    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        caller = super().authenticate(request, key)
        if caller is not None and not services.may_view(caller.user):
            raise ApiError(403, "forbidden", "Only members of an experiment on this deployment see its pool.")
        return caller


router = Router(tags=["pool"])


class AnswerOut(Schema):
    outcome: str


class ErrorOut(Schema):
    code: str
    message: str
    field: str | None = None


class VoteOut(Schema):
    claw_id: str
    vote: str
    reason: str
    created_at: str


class ProposalOut(Schema):
    proposal_id: str
    status: str
    statement: str
    tags: list[str]
    amends_fact_id: str
    proposer: str
    trace_id: str
    votes: list[VoteOut]
    decision: dict[str, Any] | None


class FactOut(Schema):
    fact_id: str
    version: int
    statement: str
    tags: list[str]
    source: dict[str, Any] | None
    confidence: float | None


@router.post(
    "/envelopes",
    auth=ParticipantBearer(),
    response={200: dict[str, Any], 400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut},
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}, "required": True}},
)
def post_envelope(request: HttpRequest) -> HttpResponse | tuple[int, dict[str, Any]]:
    """Apply one envelope `{schemaVersion, type, traceId, timestamp, idempotencyKey, clawId, instanceId, payload}`."""
    participant: Participant = request.auth  # type: ignore[attr-defined]
    try:
        raw = parse_json_body(request.body or b"null")
    except ApiError as exc:  # unreadable: refused and audited like any malformed envelope
        code = "invalid_envelope" if exc.code == "invalid_json" else exc.code
        refusal = Refusal(exc.status, code, exc.message, str(exc.extra.get("field") or "body"))
        applied = services.refuse({"clawId": participant.claw_id}, services.Origin.API, refusal)
        return applied.status, applied.body
    applied = services.apply_envelope(raw, origin=services.Origin.API, caller_claw_id=participant.claw_id)
    return applied.status, redact_pool(applied.body)


@router.get("/proposals/{proposal_id}", auth=[ParticipantBearer(), PoolSession()], response={200: ProposalOut, 404: ErrorOut})
def get_proposal(request: HttpRequest, proposal_id: str) -> tuple[int, dict[str, Any]]:
    """A proposal with its votes and decision."""
    proposal = PoolProposal.objects.filter(proposal_id=proposal_id).prefetch_related("votes").first()
    if proposal is None:
        raise ApiError(404, "unknown_proposal", f"No proposal '{proposal_id}' in this pool.")
    body = {
        "proposal_id": proposal.proposal_id, "status": proposal.status, "statement": proposal.statement, "tags": proposal.tags,
        "amends_fact_id": proposal.amends_fact_id, "proposer": proposal.proposer, "trace_id": proposal.trace_id,
        "votes": [{"claw_id": v.claw_id, "vote": v.vote, "reason": v.reason, "created_at": v.created_at.isoformat()} for v in proposal.votes.all()],
        "decision": proposal.decision,
    }  # fmt: skip
    return 200, redact_pool(body)


@router.get("/facts", auth=[ParticipantBearer(), PoolSession()], response=list[FactOut])
def list_facts(request: HttpRequest) -> list[dict[str, Any]]:
    """The newest version of every fact in the pool."""
    facts = PoolFactVersion.objects.newest()
    body = [
        {"fact_id": f.fact_id, "version": f.version, "statement": f.statement, "tags": f.tags, "source": f.source, "confidence": f.confidence}
        for f in facts
    ]
    return redact_pool(body)
