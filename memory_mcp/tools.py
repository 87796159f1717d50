"""What each MCP tool does: the memory API's use cases for one authenticated token, as plain values.

Sync functions (run through `database_sync_to_async` by memory_mcp.server). Each one resolves the agent as the
memory API does (the `agent_id` argument, else the X-AWP-Agent header, else the token's name), checks the
protocol's memory access rules through memory.services.check_access, calls the same services as
memory/api.py, and redacts its answer with state.services_redaction. Nothing here writes a table itself.
"""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone

from experiments.ingest import EventIn, append_events
from experiments.models import BoardPost, Experiment, Run
from experiments.projections import IngestRefused, ProjectionContext
from memory import search as memory_search
from memory.access import TARGET_TIER
from memory.curation import services as curation
from memory.curation.models import Proposal
from memory.curation.prior import prior_run_block
from memory.episodes import recall_data, recall_for
from memory.longterm import current_long_term, get_long_term_version
from memory.recall import RecallConfigError
from memory.services import Actor, MemoryDenied, check_access, write_memory
from memory_mcp.principal import Credentials, Principal
from pool.shared import subscribed_facts
from state.services import state_at_seq, view_as
from state.services_redaction import mask_output_for, redact_for, redact_text_for
from state.viewing import redact_state


class Refusal(Exception):
    """A call the tool will not carry out: a machine-readable code, the argument it is about, a sentence."""

    def __init__(self, code: str, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.code, self.message, self.field = code, message, field

    def body(self) -> dict[str, Any]:
        return {"ok": False, "code": self.code, "message": self.message, **({"field": self.field} if self.field else {})}


def actor_for(principal: Principal, agent_id: str) -> Actor:
    """The agent behind a call, named as the memory API names it."""
    token = principal.token
    named = agent_id.strip() or principal.agent_header.strip() or token.name
    return Actor(agent_id=named[:200], user=token.user, token=token)


def _run(experiment: Experiment, run_id: str) -> Run:
    run = Run.objects.filter(experiment=experiment, run_id=run_id).first()
    if run is None:
        raise Refusal("run_not_found", f"No run '{run_id}' in this experiment.", field="run_id")
    return run


def _with_run_id(service: Callable[..., Any], run_id: str, **kwargs: Any) -> Any:
    """Call a memory service, handing it the run id when it takes one (it records what memory the run was given)."""
    parameters = inspect.signature(service).parameters
    if run_id and "run_id" in parameters:
        kwargs["run_id"] = run_id
        if "channel" in parameters:
            kwargs["channel"] = "mcp"  # the run's exposure is recorded as served through MCP
    return service(**kwargs)


def _date(value: str, name: str) -> Any:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        raise Refusal("bad_date", f"{name} must be a date like 2026-03-23.", field=name) from None


# ---------------------------------------------------------------- read (memory:read)


def search(
    principal: Principal, *, query: str, mode: str, tiers: list[str], max_results: int, agent_id: str = "",
    agent_filter: list[str] | None = None, start: str = "", end: str = "", run_id: str = "",
) -> dict[str, Any]:
    """memory/search, as POST /memory/search answers it in `data`."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    request = memory_search.SearchRequest(
        query=query, mode=mode, tiers=tuple(tiers), start=_date(start, "start"), end=_date(end, "end"),
        agent_filter=tuple(agent_filter or ()), max_results=max_results,
    )  # fmt: skip
    memory_search.validate(request)
    for tier in request.effective_tiers:
        check_access(experiment=experiment, actor=actor, tier="working" if tier == "notes" else tier, action="read")
    result = _with_run_id(memory_search.search_memory, run_id, experiment=experiment, request=request)
    results = [
        {"tier": hit.tier, "source": hit.source, "content": hit.content, "score": hit.score,
         "timestamp": hit.timestamp.isoformat().replace("+00:00", "Z") if hit.timestamp else None}
        for hit in result.hits
    ]  # fmt: skip
    return redact_for(experiment, {"results": results, "total": result.total})


def recall(principal: Principal, *, agent_id: str, query: str, top_k: int | None, run_id: str = "") -> dict[str, Any]:
    """The recall block the agent would receive now, as POST /memory/recall answers it in `data`."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    check_access(experiment=experiment, actor=actor, tier="episodic", action="read")
    try:
        block = _with_run_id(recall_for, run_id, experiment=experiment, agent_id=actor.agent_id, query=query, top_k=top_k)
    except RecallConfigError as exc:
        raise Refusal("invalid_memory_config", f"The protocol's memory settings cannot be used: {exc}") from exc
    return redact_for(experiment, recall_data(experiment, block))


def read_long_term(principal: Principal, *, agent_id: str, version: int | None, run_id: str = "") -> dict[str, Any]:
    """MEMORY.md at the current version (or the one asked for), with its version number."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    check_access(experiment=experiment, actor=actor, tier="long_term", action="read")
    if version is None:
        document = _with_run_id(current_long_term, run_id, experiment=experiment, agent_id=actor.agent_id)
    else:
        document = get_long_term_version(experiment, version)
        if document is None:
            raise Refusal("version_not_found", f"MEMORY.md has no version {version}.", field="version")
    if document is None:
        return {"version": 0, "content": "", "exists": False, "updated_at": None}
    return {
        "version": document.version, "content": redact_text_for(experiment, document.content), "exists": True,
        "updated_at": document.created_at.isoformat(),
    }  # fmt: skip


def prior(principal: Principal, *, agent_id: str, run_id: str = "") -> dict[str, Any]:
    """The prior-run block (promoted memory only), as POST /memory/prior answers it."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    check_access(experiment=experiment, actor=actor, tier="long_term", action="read")
    block = _with_run_id(prior_run_block, run_id, experiment=experiment, agent_id=actor.agent_id)
    return {"block": redact_text_for(experiment, block)}


def proposal_status(principal: Principal, *, proposal_id: int) -> dict[str, Any]:
    """Where a proposal stands: pending, approved (with the MEMORY.md version) or rejected (with the reason)."""
    proposal = Proposal.objects.filter(experiment=principal.experiment, pk=proposal_id).first()
    if proposal is None:
        raise Refusal("proposal_not_found", f"No proposal {proposal_id} in this experiment.", field="proposal_id")
    answer = curation.proposal_status(proposal)
    answer["review_url"] = review_url(principal, proposal)
    return redact_for(principal.experiment, answer)


def board_read(principal: Principal, *, run_id: str, topic: str = "", since: float | None = None) -> dict[str, Any]:
    """Blackboard entries of a run (optionally one topic, newer than `since`), as POST /board/read answers."""
    experiment = principal.experiment
    posts = BoardPost.objects.filter(run=_run(experiment, run_id)).order_by("seq")
    if topic:
        posts = posts.filter(topic=topic)
    if since is not None:
        posts = posts.filter(ts__gt=since)
    entries = [{"id": p.entry_id, "ts": p.ts, "topic": p.topic, "worker_id": p.worker_id, "payload": p.payload} for p in posts[:1000]]
    return redact_for(experiment, {"entries": entries})


def state_get(principal: Principal, *, run_id: str, seq: int | None, agent_id: str) -> dict[str, Any]:
    """A run's state at `seq` (the head by default) as the calling agent may see it under the sharing rules."""
    run = _run(principal.experiment, run_id)
    actor = actor_for(principal, agent_id)
    at, state = state_at_seq(run=run, seq=seq)
    state = view_as(run=run, state=state, agent=actor.agent_id)
    return {"run_id": run.run_id, "seq": at, "agent_id": actor.agent_id, "state": redact_state(run.experiment, state)}


def pool_facts(principal: Principal) -> dict[str, Any]:
    """The shared pool's facts this experiment subscribes to (newest version of each)."""
    facts = subscribed_facts(principal.experiment)
    return {"facts": [{"fact_id": f.fact_id, "version": f.version, "statement": f.statement, "tags": list(f.tags),
                       "label": f.label} for f in facts]}  # fmt: skip


def protocol(principal: Principal) -> dict[str, Any]:
    """The experiment's protocol as its Protocol tab shows it."""
    experiment = principal.experiment
    return redact_for(experiment, {
        "slug": experiment.slug, "name": experiment.name, "goal": experiment.goal, "hypothesis": experiment.hypothesis,
        "description": experiment.description, "status": experiment.status, "tags": list(experiment.tags),
        "protocol": experiment.protocol,
    })  # fmt: skip


# ---------------------------------------------------------------- write (memory:write)


def review_url(principal: Principal, proposal: Proposal) -> str:
    """Where a person reviews the proposal: the Review tab with it selected (absolute over HTTP)."""
    path = f"{reverse('curation:review', args=[principal.experiment.slug])}?status=all&selected={proposal.pk}"
    return f"{principal.base_url}{path}"


def propose(
    principal: Principal, *, client: str, statement: str, kind: str, agent_id: str, source: str = "", evidence: str = "",
    run_id: str = "", idempotency_key: str = "",
) -> dict[str, Any]:
    """Put a statement in the Review queue with the agent and the MCP client as provenance; never MEMORY.md itself."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    # Proposing is the governed way to write long-term memory: an agent that may not write it may not propose.
    check_access(experiment=experiment, actor=actor, tier="long_term", action="write")
    if run_id:
        _run(experiment, run_id)
    try:
        proposal, created = curation.propose_item(
            experiment=experiment, kind=kind, statement=statement, agent_id=actor.agent_id, client=client,
            via=f"token:{principal.token.pk}", source=source, evidence=evidence, run_id=run_id,
            idempotency_key=idempotency_key,
        )  # fmt: skip
    except curation.ReviewRefused as refusal:
        raise Refusal(refusal.code, refusal.message, field="statement" if "statement" in refusal.code else "kind") from refusal
    return {"status": "proposed", "proposal_id": proposal.pk, "review_url": review_url(principal, proposal),
            "proposal_status": proposal.status, "created": created}  # fmt: skip


def note(principal: Principal, *, agent_id: str, content: str, run_id: str = "") -> dict[str, Any]:
    """A working-tier entry in today's daily log, as POST /memory/write with target daily."""
    experiment = principal.experiment
    actor = actor_for(principal, agent_id)
    if not run_id:
        return write_memory(experiment=experiment, actor=actor, target="daily", content=content)
    # With a run, the entry goes through the run's ledger as a memory.write event (what the memory API does).
    run = _run(experiment, run_id)
    check_access(experiment=experiment, actor=actor, tier=TARGET_TIER["daily"], action="write")
    event = EventIn(
        kind="memory.write", dedupe_key=f"key:memory-write:{uuid.uuid4().hex}", agent_id=actor.agent_id,
        payload={"agent_id": actor.agent_id, "target": "daily", "content": content}, occurred_at=timezone.now(),
        ts_source="received",
    )  # fmt: skip
    try:
        result = append_events(run, [event], ctx=ProjectionContext(strict=True, source="api"))
    except IngestRefused as refused:
        raise Refusal(refused.code, refused.message) from refused
    return {"target": "daily", "run_id": run.run_id, "seq": result.seqs[0]}


def board_post(principal: Principal, *, run_id: str, topic: str, payload: dict[str, Any], agent_id: str) -> dict[str, Any]:
    """Append a blackboard entry to a run (through the ledger, as POST /board/post does)."""
    run = _run(principal.experiment, run_id)
    worker_id = actor_for(principal, agent_id).agent_id
    ts = round(datetime.now(UTC).timestamp(), 6)
    entry_id = f"{ts:.6f}-{uuid.uuid4().hex[:8]}"
    body = {"id": entry_id, "ts": ts, "topic": topic, "worker_id": worker_id, "payload": payload}
    event = EventIn(kind="board.post", dedupe_key=f"board:{entry_id}", payload=body, agent_id=worker_id,
                    occurred_at=datetime.fromtimestamp(ts, UTC), ts_source="record")  # fmt: skip
    try:
        result = append_events(run, [event], ctx=ProjectionContext(strict=True, source="api"))
    except IngestRefused as refused:
        raise Refusal(refused.code, refused.message) from refused
    return {"entry_id": entry_id, "seq": result.seqs[0]}


# ---------------------------------------------------------------- review (review)


def review(principal: Principal, *, client: str, proposal_id: int, verdict: str, text: str = "", reason: str = "") -> dict[str, Any]:
    """Vote on a proposal as the user the token was issued to (quorum rules as on the Review tab)."""
    token = principal.token
    if token.user is None:
        raise Refusal("token_without_user", "This token is not issued to a user; reviews need a named reviewer.")
    proposal = Proposal.objects.select_related("experiment").filter(experiment=principal.experiment, pk=proposal_id).first()
    if proposal is None:
        raise Refusal("proposal_not_found", f"No proposal {proposal_id} in this experiment.", field="proposal_id")
    try:
        curation.review_proposal(
            proposal=proposal, reviewer=token.user, verdict=verdict, text=text, reason=reason,
            via=f"mcp:token:{token.name} ({client})",
        )  # fmt: skip
    except curation.ReviewRefused as refusal:
        raise Refusal(refusal.code, refusal.message) from refusal
    return proposal_status(principal, proposal_id=proposal_id)


def net(experiment: Experiment, value: dict[str, Any]) -> dict[str, Any]:
    """The last-line net every API answer passes (every known secret of the experiment, as rendered JSON)."""
    return json.loads(mask_output_for(experiment, json.dumps(value, ensure_ascii=False)))  # type: ignore[no-any-return]


def answer(
    impl: Callable[..., dict[str, Any]], credentials: Credentials, *, scope: str, agent_header: str = "", **kwargs: Any
) -> tuple[bool, dict[str, Any]]:
    """(refused, body): authenticate, check the scope, run the tool; answer and refusal both through the net.

    Anything that is not a refusal is a bug and raises.
    """
    try:
        principal = credentials.resolve(agent_header=agent_header)
    except Exception as exc:  # the token look-up's rate limit (429 rate_limited)
        refusal = translate(exc)
        if refusal is None:
            raise
        return True, refusal.body()
    if principal is None:
        return True, Refusal("invalid_token", "The token is unknown or revoked.").body()
    if not principal.may(scope):
        return True, Refusal("missing_scope", f"This token lacks the '{scope}' scope.").body()
    try:
        return False, net(principal.experiment, impl(principal, **kwargs))
    except Exception as exc:
        refusal = translate(exc)
        if refusal is None:
            raise
        return True, net(principal.experiment, refusal.body())


def translate(exc: Exception) -> Refusal | None:
    """The refusal a service exception stands for (None: not a refusal, a bug)."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, MemoryDenied):
        return Refusal("memory_access_denied", exc.message)
    if isinstance(exc, memory_search.SearchRefused):
        return Refusal(exc.code, exc.message)
    from awp_site.apierrors import ApiError

    if isinstance(exc, ApiError):
        return Refusal(exc.code, exc.message)
    return None
