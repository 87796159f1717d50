"""What the Pool page shows, as plain dicts, redacted (one builder for the page, its fragments and live frames)."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from pool import rules, services
from pool.models import Participant, PoolAudit, PoolFactVersion, PoolProposal
from pool.redaction import redact_pool, redact_pool_text

DECIDED_SHOWN = 50
FACTS_SHOWN = 100
AUDIT_SHOWN = 100


def pool_context(user: Any, *, trace: str) -> dict[str, Any]:
    """Everything on the Pool page for this user."""
    now = timezone.now()
    me = services.person_claw_id(user)
    active = Participant.objects.active(now).count()
    open_rows = [_proposal(p, me, active, now) for p in PoolProposal.objects.filter(status="open").prefetch_related("votes")]
    decided = [_proposal(p, me, active, now) for p in PoolProposal.objects.exclude(status="open").order_by("-decided_at", "-pk").prefetch_related("votes")[:DECIDED_SHOWN]]
    audit = PoolAudit.objects.filter(trace_id=trace) if trace else PoolAudit.objects.all()
    return {
        "open_proposals": open_rows,
        "decided_proposals": decided,
        "facts": _facts(),
        "participants": [_participant(p, now) for p in Participant.objects.all()[:500]],
        "audit": [_audit(a) for a in audit.order_by("-pk")[:AUDIT_SHOWN]],
        "trace": trace,
        "active_count": active,
        "can_vote": services.may_vote(user),
        "me": me,
        "governance": settings.AWP_POOL_GOVERNANCE,
        "deployment": services.local_claw_id(),
        "min_active": rules.MIN_ACTIVE,
    }


def _proposal(p: PoolProposal, me: str, active: int, now: Any) -> dict[str, Any]:
    votes = list(p.votes.all())
    yes = sum(1 for v in votes if v.vote == "yes")
    no = len(votes) - yes
    return {
        "proposal_id": p.proposal_id,
        "dom_id": f"pool-proposal-{p.pk}",
        "statement": redact_pool_text(p.statement),
        "tags": p.tags,
        "status": p.status,
        "proposer": p.proposer,
        "coordinator": p.coordinator,
        "amends_fact_id": p.amends_fact_id,
        "trace_id": p.trace_id,
        "created_at": p.created_at,
        "expires_at": p.created_at + timedelta(seconds=settings.AWP_POOL_PROPOSAL_TTL),
        "decided_at": p.decided_at,
        "decision": redact_pool(p.decision) if p.decision else None,
        "votes": [{"claw_id": v.claw_id, "vote": v.vote, "reason": redact_pool_text(v.reason), "created_at": v.created_at} for v in votes],
        "yes": yes,
        "no": no,
        "needed": rules.votes_still_needed(active=active, yes=yes),
        "waiting_for_participants": active < rules.MIN_ACTIVE,
        "my_vote": next((v.vote for v in votes if v.claw_id == me), None),
    }


def _facts() -> list[dict[str, Any]]:
    versions: dict[str, list[PoolFactVersion]] = defaultdict(list)
    newest_ids = list(PoolFactVersion.objects.newest().values_list("fact_id", flat=True))
    recent = sorted(PoolFactVersion.objects.newest(), key=lambda f: (f.created_at, f.pk), reverse=True)[:FACTS_SHOWN]
    shown = {f.fact_id for f in recent} & set(newest_ids)
    for version in PoolFactVersion.objects.filter(fact_id__in=shown).order_by("fact_id", "-version"):
        versions[version.fact_id].append(version)
    return [
        {
            "fact_id": fact.fact_id,
            "version": fact.version,
            "statement": redact_pool_text(fact.statement),
            "tags": fact.tags,
            "confidence": fact.confidence,
            "source": redact_pool(fact.source) if fact.source else None,
            "history": [
                {"version": v.version, "statement": redact_pool_text(v.statement), "proposal_id": v.proposal_id, "created_at": v.created_at, "trace_id": v.trace_id}
                for v in versions[fact.fact_id]
            ],
        }
        for fact in recent
    ]


def _participant(p: Participant, now: Any) -> dict[str, Any]:
    return {
        "claw_id": p.claw_id,
        "kind": p.kind,
        "active": p.is_active(now),
        "last_seen_at": p.last_seen_at,
        "capabilities": p.capabilities,
        "instances": len(p.instance_ids),
    }


def _audit(a: PoolAudit) -> dict[str, Any]:
    return {
        "pk": a.pk, "trace_id": a.trace_id, "type": a.type, "claw_id": a.claw_id, "origin": a.origin, "outcome": a.outcome,
        "code": a.code, "reason": redact_pool_text(a.reason), "created_at": a.created_at,
    }  # fmt: skip
