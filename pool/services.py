"""Use cases of the pool: apply an envelope through every rule, decide as the coordinator, people's votes,
proposing an experiment's fact, subscriptions, participants.

`apply_envelope` is the one door: the API, the Pool page, the coordinator and the bridge all pass through
it, so idempotency, one vote per participant, fact versions, the governance gate, self-loop suppression
and the audit hold whichever way an envelope arrives.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from statistics import mean
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from awp_site.live import announce_pool_changed
from experiments.models import Experiment, Membership
from otel.send import memory_event
from pool import rules
from pool.models import (
    Participant,
    PoolAudit,
    PoolEnvelope,
    PoolFactVersion,
    PoolProposal,
    PoolSubscription,
    PoolVote,
)
from pool.rules import Envelope, Refusal
from state.secrets import learn_from_pool_envelope
from state.services_redaction import redact_text_for

Origin = PoolEnvelope.Origin
PERSON_PRESENCE_EVERY = timedelta(seconds=30)  # a person's page views refresh presence at most this often


@dataclass(frozen=True)
class Applied:
    """What the caller answers: an HTTP status and a body ({outcome, ...} or {code, message})."""

    status: int
    body: dict[str, Any]

    @property
    def outcome(self) -> str:
        return str(self.body.get("outcome") or "rejected")


def local_claw_id() -> str:
    return str(settings.AWP_POOL_CLAW_ID)


def person_claw_id(user: Any) -> str:
    return f"user:{user.get_username()}"


def new_envelope(kind: str, payload: dict[str, Any], *, claw_id: str, trace_id: str | None = None, key: str | None = None) -> dict[str, Any]:
    """A well-formed envelope (for the coordinator, the Pool page and tests)."""
    return {
        "schemaVersion": rules.SCHEMA_VERSION,
        "type": kind,
        "traceId": trace_id or f"trace-{uuid.uuid4().hex}",
        "timestamp": timezone.now().isoformat(),
        "idempotencyKey": key or f"{kind}-{uuid.uuid4().hex}",
        "clawId": claw_id,
        "instanceId": f"{claw_id}@{os.getpid()}",
        "payload": payload,
    }


# ---------------------------------------------------------------- the one door


def apply_envelope(raw: Any, *, origin: str, deployment: str = "", caller_claw_id: str | None = None) -> Applied:
    """Check and apply one envelope; every outcome (accepted, duplicate, rejected, ignored) is audited."""
    try:
        envelope = rules.parse_envelope(raw)
        if caller_claw_id is not None and envelope.claw_id != caller_claw_id:
            raise Refusal(403, "claw_mismatch", f"This token belongs to '{caller_claw_id}', not to clawId '{envelope.claw_id}'.", "clawId")
        learn_from_pool_envelope(envelope.raw)  # what it carries is a known secret of the pool before it is kept
        if origin in (Origin.API, Origin.PAGE) and rules.is_reserved_key(envelope.idempotency_key):
            raise Refusal(400, "reserved_idempotency_key", f"idempotencyKey: keys starting with '{rules.COORDINATOR_KEY_PREFIX}' are the coordinator's own.", "idempotencyKey")
        if rules.is_self_loop(envelope, local_claw_id=local_claw_id(), from_bus=origin == Origin.BUS):
            _audit(raw, origin, PoolAudit.Outcome.IGNORED, "self_loop", "An envelope claiming this deployment's own clawId came back from the bus.")
            return Applied(200, {"outcome": "ignored", "reason": "self_loop", "idempotency_key": envelope.idempotency_key})
        rules.gate(envelope, governance_enabled=settings.AWP_POOL_GOVERNANCE)
    except Refusal as refusal:
        return refuse(raw, origin, refusal)
    return _apply(envelope, origin=origin, deployment=deployment or local_claw_id())


def refuse(raw: Any, origin: str, refusal: Refusal) -> Applied:
    """Audit a refused envelope (nothing else is stored) and answer its status and {code, message, field}."""
    _audit(raw, origin, PoolAudit.Outcome.REJECTED, refusal.code, refusal.message)
    return Applied(refusal.status, refusal.body())


@transaction.atomic
def _apply(envelope: Envelope, *, origin: str, deployment: str) -> Applied:
    # One (clawId, key) is applied by one transaction at a time: a concurrent replay waits here for the first
    # to commit and then answers its outcome (never a 409 or a unique-key error for a duplicate).
    _lock(f"pool-key:{envelope.claw_id}\n{envelope.idempotency_key}")
    original = _original(envelope)
    if original is not None:
        return _duplicate(envelope, original, origin)
    try:
        with transaction.atomic():  # a refusal undoes the partial apply, and only it
            answer = APPLY[envelope.type](envelope, origin=origin, deployment=deployment)
            answer = {"outcome": "accepted", "type": envelope.type, "idempotency_key": envelope.idempotency_key, "trace_id": envelope.trace_id, **answer}
            _store(envelope, origin=origin, deployment=deployment, answer=answer)
    except Refusal as refusal:
        return refuse(envelope.raw, origin, refusal)
    _audit(envelope.raw, origin, PoolAudit.Outcome.ACCEPTED, "", "")
    decided = _coordinate(envelope)
    if decided:
        answer = {**answer, "decision": decided}
    memory_event("update_memory", experiment=None, **{"awp.pool.type": envelope.type, "awp.pool.outcome": "accepted", "awp.pool.decided": bool(decided),
                 "awp.pool.origin": origin})  # fmt: skip
    transaction.on_commit(lambda: _after_commit(envelope.type, bool(decided) or envelope.type == "fact"))
    return Applied(200, answer)


def _original(envelope: Envelope) -> PoolEnvelope | None:
    return PoolEnvelope.objects.filter(claw_id=envelope.claw_id, idempotency_key=envelope.idempotency_key).first()


def _duplicate(envelope: Envelope, original: PoolEnvelope, origin: str) -> Applied:
    _audit(envelope.raw, origin, PoolAudit.Outcome.DUPLICATE, "", f"Already applied as {original.type} #{original.pk}; nothing changed.")
    return Applied(200, {**original.answer, "outcome": "duplicate"})


def _store(envelope: Envelope, *, origin: str, deployment: str, answer: dict[str, Any]) -> PoolEnvelope:
    return PoolEnvelope.objects.create(
        idempotency_key=envelope.idempotency_key, type=envelope.type, trace_id=envelope.trace_id, claw_id=envelope.claw_id,
        instance_id=envelope.instance_id, timestamp=envelope.timestamp, body=envelope.raw, origin=origin,
        deployment=deployment, answer=answer,
    )  # fmt: skip


def _audit(raw: Any, origin: str, outcome: str, code: str, reason: str) -> None:
    fields = raw if isinstance(raw, dict) else {}

    def text(key: str, limit: int = 200) -> str:
        value = fields.get(key)
        return _storable_text(value, limit) if isinstance(value, str) else ""

    PoolAudit.objects.create(
        trace_id=text("traceId"), idempotency_key=text("idempotencyKey"), type=text("type", 16), claw_id=text("clawId"),
        origin=origin, outcome=outcome, code=code, reason=_storable_text(reason, 2000),
    )  # fmt: skip


def _storable_text(text: str, limit: int) -> str:
    """What of an untrusted string the audit can keep: no NUL, no lone surrogate, bounded."""
    return text[:limit].replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _after_commit(kind: str, facts_changed: bool) -> None:
    announce_pool_changed(what=kind)
    if facts_changed:
        sync_subscribed_workspaces()


# ---------------------------------------------------------------- one handler per type


def _apply_proposal(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    body = envelope.body
    assert isinstance(body, rules.ProposalBody)
    if PoolProposal.objects.filter(proposal_id=body.proposal_id).exists():
        raise Refusal(409, "conflict", f"Proposal '{body.proposal_id}' exists already; choose a new proposal_id.", "payload.proposal_id")
    if body.amends_fact_id and current_version(body.amends_fact_id) == 0:
        raise Refusal(409, "conflict", f"Proposal amends fact '{body.amends_fact_id}', which this pool does not hold.", "payload.amends_fact_id")
    PoolProposal.objects.create(
        proposal_id=body.proposal_id, statement=body.statement, tags=list(body.tags), confidence=body.confidence,
        source=body.source, amends_fact_id=body.amends_fact_id, proposer=envelope.claw_id,
        coordinator=deployment, trace_id=envelope.trace_id,
    )  # fmt: skip
    return {"proposal_id": body.proposal_id, "status": "open"}


def _apply_vote(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    body = envelope.body
    assert isinstance(body, rules.VoteBody)
    proposal = _locked_proposal(body.proposal_id)
    if PoolVote.objects.filter(proposal=proposal, claw_id=envelope.claw_id).exists():
        raise Refusal(409, "already_voted", f"'{envelope.claw_id}' has voted on '{body.proposal_id}' already; one vote each.", "payload.proposal_id")
    if not proposal.is_open:
        raise Refusal(409, "conflict", f"Proposal '{body.proposal_id}' is {proposal.status} already; votes are closed.", "payload.proposal_id")
    try:
        with transaction.atomic():
            PoolVote.objects.create(proposal=proposal, claw_id=envelope.claw_id, vote=body.vote, reason=body.reason, trace_id=envelope.trace_id)
    except IntegrityError:  # the unique (proposal, claw_id) constraint: a concurrent second vote
        raise Refusal(409, "already_voted", f"'{envelope.claw_id}' has voted on '{body.proposal_id}' already; one vote each.", "payload.proposal_id") from None
    return {"proposal_id": body.proposal_id, "vote": body.vote}


def _apply_decision(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    body = envelope.body
    assert isinstance(body, rules.DecisionBody)
    if origin not in (Origin.BUS, Origin.COORDINATOR):
        raise rules.invalid("Decisions are taken by the pool's coordinator; a participant cannot send one.", "type")
    proposal = _locked_proposal(body.proposal_id)
    if envelope.claw_id != proposal.coordinator:
        raise Refusal(409, "conflict", f"Only '{proposal.coordinator}' decides '{body.proposal_id}'.")
    if not proposal.is_open:
        raise Refusal(409, "conflict", f"Proposal '{body.proposal_id}' is {proposal.status} already.")
    proposal.status = body.outcome
    proposal.decision = {**envelope.raw["payload"], "by": envelope.claw_id, "trace_id": envelope.trace_id}
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decision", "decided_at"])
    return {"proposal_id": body.proposal_id, "status": body.outcome}


def _apply_fact(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    body = envelope.body
    assert isinstance(body, rules.FactBody)
    _lock_fact(body.fact_id)
    rules.check_next_version(current=current_version(body.fact_id), version=body.version)
    proposal = PoolProposal.objects.filter(proposal_id=body.proposal_id).first()
    if proposal is None:
        raise Refusal(404, "unknown_proposal", f"No proposal '{body.proposal_id}' behind this fact.", "payload.proposal_id")
    if proposal.status != PoolProposal.Status.ACCEPTED:
        raise Refusal(409, "conflict", f"Proposal '{body.proposal_id}' is {proposal.status}, not accepted: no fact follows from it.")
    if envelope.claw_id != proposal.coordinator:
        raise Refusal(409, "conflict", f"Only '{proposal.coordinator}', which decided '{body.proposal_id}', publishes its fact.")
    decision = proposal.decision or {}
    if (decision.get("fact_id"), decision.get("version")) != (body.fact_id, body.version):
        raise Refusal(409, "conflict", f"Proposal '{body.proposal_id}' was decided as {decision.get('fact_id')} v{decision.get('version')}, not {body.fact_id} v{body.version}.")
    _insert_version(body, trace_id=envelope.trace_id)
    return {"fact_id": body.fact_id, "version": body.version}


def _apply_presence(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    participant = _seen(envelope, origin)
    return {"claw_id": participant.claw_id, "active": participant.is_active()}


def _apply_capabilities(envelope: Envelope, *, origin: str, deployment: str) -> dict[str, Any]:
    body = envelope.body
    assert isinstance(body, rules.CapabilitiesBody)
    participant = _seen(envelope, origin)
    participant.capabilities = list(body.capabilities)
    participant.save(update_fields=["capabilities"])
    return {"claw_id": participant.claw_id, "capabilities": participant.capabilities}


APPLY = {
    "proposal": _apply_proposal,
    "vote": _apply_vote,
    "decision": _apply_decision,
    "fact": _apply_fact,
    "presence": _apply_presence,
    "capabilities": _apply_capabilities,
}


def _seen(envelope: Envelope, origin: str) -> Participant:
    """Record a sign of presence; bus envelopes count from their own timestamp, so a replay wakes nobody."""
    now = timezone.now()
    seen = min(envelope.timestamp, now) if origin == Origin.BUS else now
    kind = Participant.Kind.REMOTE if origin == Origin.BUS else Participant.Kind.AGENT
    if envelope.claw_id.startswith("user:") and origin != Origin.BUS:
        kind = Participant.Kind.PERSON
    participant, _ = Participant.objects.select_for_update().get_or_create(claw_id=envelope.claw_id, defaults={"kind": kind})
    if participant.last_seen_at is None or seen > participant.last_seen_at:
        participant.last_seen_at = seen
    if envelope.instance_id not in participant.instance_ids:
        participant.instance_ids = [*participant.instance_ids, envelope.instance_id][-20:]
    participant.save(update_fields=["last_seen_at", "instance_ids"])
    return participant


def _locked_proposal(proposal_id: str) -> PoolProposal:
    proposal = PoolProposal.objects.select_for_update().filter(proposal_id=proposal_id).first()
    if proposal is None:
        raise Refusal(404, "unknown_proposal", f"No proposal '{proposal_id}' in this pool.", "payload.proposal_id")
    return proposal


def _lock_fact(fact_id: str) -> None:
    # Versions of one fact are written one at a time; the trigger and the unique key would refuse a race anyway.
    _lock(f"pool-fact:{fact_id}")


def _lock(name: str) -> None:
    """A transaction-scoped advisory lock on a name (a hash collision only serialises two unrelated applies)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])


def current_version(fact_id: str) -> int:
    """The newest version of a fact (0 when the pool does not hold it)."""
    return int(PoolFactVersion.objects.filter(fact_id=fact_id).aggregate(v=Max("version"))["v"] or 0)


def _insert_version(body: rules.FactBody, *, trace_id: str) -> PoolFactVersion:
    try:
        with transaction.atomic():
            return PoolFactVersion.objects.create(
                fact_id=body.fact_id, version=body.version, statement=body.statement, tags=list(body.tags),
                confidence=body.confidence, source=body.source, proposal_id=body.proposal_id, trace_id=trace_id,
            )  # fmt: skip
    except IntegrityError:
        raise Refusal(409, "conflict", f"Fact '{body.fact_id}' v{body.version} does not follow its current version.") from None


# ---------------------------------------------------------------- the coordinator


def _coordinate(envelope: Envelope) -> dict[str, Any] | None:
    """After an accepted envelope: decide what it may have tipped (only proposals this deployment coordinates)."""
    now = timezone.now()
    expire_due(now=now)
    if envelope.type in ("proposal", "vote"):
        body = envelope.body
        assert isinstance(body, rules.ProposalBody | rules.VoteBody)
        return evaluate_proposal(body.proposal_id, now=now)
    if envelope.type in ("presence", "capabilities"):
        outcomes = [evaluate_proposal(pid, now=now) for pid in _open_local_ids()]
        return next((o for o in outcomes if o), None)
    return None


def _open_local_ids() -> list[str]:
    return list(PoolProposal.objects.filter(status=PoolProposal.Status.OPEN, coordinator=local_claw_id()).values_list("proposal_id", flat=True)[:500])


def tally(proposal: PoolProposal, *, now: datetime | None = None) -> dict[str, int]:
    """Active participants, yes and no votes, and the yes votes still needed."""
    active = Participant.objects.active(now).count()
    yes = proposal.votes.filter(vote="yes").count()
    no = proposal.votes.filter(vote="no").count()
    return {"active": active, "yes": yes, "no": no, "needed": rules.votes_still_needed(active=active, yes=yes)}


def evaluate_proposal(proposal_id: str, *, now: datetime) -> dict[str, Any] | None:
    """Decide an open proposal this deployment coordinates once a majority of ≥3 active participants agrees."""
    proposal = PoolProposal.objects.select_for_update().filter(proposal_id=proposal_id).first()
    if proposal is None or not proposal.is_open or proposal.coordinator != local_claw_id():
        return None
    counts = tally(proposal, now=now)
    outcome = rules.decide(active=counts["active"], yes=counts["yes"], no=counts["no"])
    return _decide(proposal, outcome, counts) if outcome else None


def expire_due(*, now: datetime | None = None) -> int:
    """Expire the open proposals this deployment coordinates that outlived AWP_POOL_PROPOSAL_TTL."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.AWP_POOL_PROPOSAL_TTL)
    due = PoolProposal.objects.select_for_update(skip_locked=True).filter(status="open", coordinator=local_claw_id(), created_at__lte=cutoff)
    expired = 0
    for proposal in due[:100]:
        if rules.is_expired(proposal.created_at, now=now, ttl_seconds=settings.AWP_POOL_PROPOSAL_TTL):
            _decide(proposal, "expired", tally(proposal, now=now))
            expired += 1
    return expired


def _decide(proposal: PoolProposal, outcome: str, counts: dict[str, int]) -> dict[str, Any]:
    """Record the decision as a coordinator envelope and, when accepted, the fact version in the same transaction."""
    me = local_claw_id()
    payload: dict[str, Any] = {"proposal_id": proposal.proposal_id, "outcome": outcome, "yes": counts["yes"], "no": counts["no"], "active": counts["active"]}
    fact: rules.FactBody | None = None
    if outcome == "accepted":
        fact_id = proposal.amends_fact_id or rules.new_fact_id(proposal.proposal_id)
        _lock_fact(fact_id)
        fact = rules.FactBody(
            fact_id=fact_id, version=current_version(fact_id) + 1, statement=proposal.statement, proposal_id=proposal.proposal_id,
            tags=tuple(proposal.tags), confidence=proposal.confidence, source=proposal.source,
        )  # fmt: skip
        payload |= {"fact_id": fact.fact_id, "version": fact.version}
    decision = new_envelope("decision", payload, claw_id=me, trace_id=proposal.trace_id, key=rules.coordinator_key("decision", proposal.proposal_id))
    _apply_generated(decision)
    if fact is not None:
        fact_payload = {
            "fact_id": fact.fact_id, "version": fact.version, "statement": fact.statement, "proposal_id": fact.proposal_id,
            "tags": list(fact.tags), "confidence": fact.confidence, "source": fact.source,
        }  # fmt: skip
        _apply_generated(new_envelope("fact", fact_payload, claw_id=me, trace_id=proposal.trace_id, key=rules.coordinator_key("fact", fact.fact_id, f"v{fact.version}")))
    return payload


def _apply_generated(raw: dict[str, Any]) -> None:
    envelope = rules.parse_envelope(raw)
    answer = APPLY[envelope.type](envelope, origin=Origin.COORDINATOR, deployment=local_claw_id())
    answer = {"outcome": "accepted", "type": envelope.type, "idempotency_key": envelope.idempotency_key, "trace_id": envelope.trace_id, **answer}
    _store(envelope, origin=Origin.COORDINATOR, deployment=local_claw_id(), answer=answer)
    _audit(raw, Origin.COORDINATOR, PoolAudit.Outcome.ACCEPTED, "", "")


# ---------------------------------------------------------------- people, from the Pool page


def may_vote(user: Any) -> bool:
    """People who curate at least one experiment of this deployment vote in its pool (viewers only watch)."""
    roles = [Membership.Role.CURATOR, Membership.Role.OWNER]
    return bool(user.is_authenticated and Membership.objects.filter(user=user, role__in=roles).exists())


def may_view(user: Any) -> bool:
    """Members of any experiment (and staff) see the pool."""
    return bool(user.is_authenticated and (user.is_staff or Membership.objects.filter(user=user).exists()))


def announce_person(user: Any) -> None:
    """A person who may vote is present while signed in and seen within the TTL: refresh on page views."""
    if not may_vote(user):
        return
    seen = Participant.objects.filter(claw_id=person_claw_id(user)).values_list("last_seen_at", flat=True).first()
    if seen is None or timezone.now() - seen > PERSON_PRESENCE_EVERY:
        apply_envelope(new_envelope("presence", {}, claw_id=person_claw_id(user)), origin=Origin.PAGE)


def vote_as_person(*, user: Any, proposal_id: str, vote: str, reason: str) -> Applied:
    """A person's vote from the Pool page, as `user:<username>`, through the same door as every envelope."""
    announce_person(user)
    proposal = PoolProposal.objects.filter(proposal_id=proposal_id).first()
    trace = proposal.trace_id if proposal else None
    payload = {"proposal_id": proposal_id, "vote": vote, "reason": reason}
    return apply_envelope(new_envelope("vote", payload, claw_id=person_claw_id(user), trace_id=trace), origin=Origin.PAGE)


def propose_curated_fact(*, experiment: Experiment, curated: Any, user: Any) -> Applied:
    """Propose a promoted fact of an experiment to the pool; its statement leaves the experiment redacted."""
    evidence = list(curated.evidence.all()[:50])
    shas = [e.digest_sha for e in evidence if e.digest_sha]
    source = {
        "deployment": local_claw_id(),
        "experiment": experiment.slug,
        "curated_proposal": curated.pk,
        "evidence": [{"digest_sha": e.digest_sha, "run_id": e.run_ref, "iteration": e.iteration} for e in evidence],
    }
    payload: dict[str, Any] = {
        "proposal_id": curated_proposal_id(experiment.slug, curated.pk),
        "statement": redact_text_for(experiment, curated.promoted_text)[: rules.MAX_STATEMENT],
        "tags": [experiment.slug[:100]],
        "source": source,
    }
    confidence = _evidence_confidence(experiment, shas)
    if confidence is not None:
        payload["confidence"] = confidence
    return apply_envelope(new_envelope("proposal", payload, claw_id=person_claw_id(user)), origin=Origin.PAGE)


def curated_proposal_id(slug: str, curated_pk: int) -> str:
    """The pool id of an experiment's curated fact: stable (a second click is a conflict, not a second proposal)
    and unguessable (a keyed digest), so no participant can take the id before the fact is proposed."""
    tag = hmac.new(settings.SECRET_KEY.encode(), f"pool-proposal:{slug}:{curated_pk}".encode(), hashlib.sha256).hexdigest()[:20]
    return f"{local_claw_id()[:100]}:{slug[:50]}:{curated_pk}:{tag}"


def _evidence_confidence(experiment: Experiment, shas: list[str]) -> float | None:
    """The mean of the last confidence each confirming digest reported (None without any)."""
    last = []
    for trend in experiment.digests.filter(sha__in=shas).values_list("confidence_trend", flat=True):
        numbers = [x for x in (trend or []) if isinstance(x, int | float) and not isinstance(x, bool)]
        if numbers and 0 <= numbers[-1] <= 1:
            last.append(float(numbers[-1]))
    return round(mean(last), 3) if last else None


# ---------------------------------------------------------------- participants and subscriptions


@transaction.atomic
def create_claw(*, claw_id: str, capabilities: list[str], kind: str = Participant.Kind.AGENT) -> tuple[Participant, str]:
    """Register (or re-key) a participant and return its new bearer secret, shown once."""
    participant, _ = Participant.objects.get_or_create(claw_id=claw_id, defaults={"kind": kind})
    if capabilities:
        participant.capabilities = list(dict.fromkeys(capabilities))
        participant.save(update_fields=["capabilities"])
    return participant, participant.issue_token()


@transaction.atomic
def set_subscription(*, experiment: Experiment, mode: str, tags: list[str], user: Any) -> PoolSubscription | None:
    """Subscribe an experiment to every pool fact ("all"), to facts with given tags ("tags"), or to none ("off")."""
    if mode == "off":
        PoolSubscription.objects.filter(experiment=experiment).delete()
        subscription = None
    else:
        clean = sorted({t.strip().lower()[:100] for t in tags if t.strip()})[: rules.MAX_TAGS]
        subscription, _ = PoolSubscription.objects.update_or_create(
            experiment=experiment,
            defaults={"all_facts": mode == "all", "tags": clean, "updated_by": user.get_username(), "updated_at": timezone.now()},
        )
    transaction.on_commit(lambda: sync_subscribed_workspaces(experiment_ids=[experiment.pk]))
    return subscription


def sync_subscribed_workspaces(experiment_ids: list[int] | None = None) -> None:
    """Write pool facts into the workflow folders of subscribed experiments that have write-back on."""
    from memory.curation.writeback import write_back

    experiments = Experiment.objects.filter(writeback_enabled=True).exclude(workspace_path="")
    if experiment_ids is None:
        experiments = experiments.filter(pool_subscription__isnull=False)
    else:
        experiments = experiments.filter(pk__in=experiment_ids)
    for experiment_id in experiments.values_list("pk", flat=True):
        write_back(experiment_id=experiment_id, trigger="pool")
