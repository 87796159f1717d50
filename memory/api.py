"""The memory API for runtimes: search, write, read, prior-run block, blackboard and digests.

Tool-style endpoints answer in the AWP tool envelope {ok, status, data, error} (plus `code` on errors), so a
runtime can hand the answer to its agent as is. The agent is named by `agent_id` in the body (or the
X-AWP-Agent header, else the token's name); memory.access_control is enforced for it on every call.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from functools import wraps
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from ninja import Router, Schema
from pydantic import Field, ValidationError

from awp_site.apierrors import ApiError
from awp_site.auth import Caller, api_auth, experiment_for
from awp_site.jsonbody import parse_json_body
from experiments.ingest import EventIn, append_events
from experiments.models import BoardPost, Digest, Experiment, Run
from experiments.projections import IngestRefused, ProjectionContext
from memory import search as memory_search
from memory.access import TARGET_TIER
from memory.documents import truncate_for_injection
from memory.episodes import recall_data, recall_for
from memory.longterm import current_long_term, long_term_for_run, long_term_history
from memory.models import MemoryEntry
from memory.recall import RecallConfigError
from memory.services import Actor, MemoryDenied, check_access, write_memory
from otel.send import enabled as send_enabled
from otel.send import memory_span
from state.services_redaction import redact_for, redact_text_for, redactor_for

router = Router(tags=["memory"], auth=api_auth)


class Envelope(Schema):
    ok: bool
    status: int
    data: Any = None
    error: str | None = None


class DateRange(Schema):
    start: str | None = None
    end: str | None = None


class SearchIn(Schema):
    query: str = Field(default="", description=f"at most {memory_search.MAX_QUERY_CHARS} characters and {memory_search.MAX_QUERY_WORDS} words (400 query_too_long / query_too_many_words)")
    mode: Literal["keyword", "semantic", "date_range", "agent_filter"] = "keyword"
    tiers: list[str] = Field(default_factory=list, max_length=8)
    date_range: DateRange | None = None
    agent_filter: list[str] = Field(default_factory=list, max_length=100)
    max_results: int = 10
    agent_id: str = ""
    include_archived: bool = False
    salience: bool = False


class WriteIn(Schema):
    agent_id: str = ""
    target: Literal["daily", "long_term"] = "daily"
    content: str = Field(min_length=1, max_length=100_000)
    run_id: str = ""


class ReadIn(Schema):
    agent_id: str = ""
    target: Literal["long_term", "daily", "dates"] = "long_term"
    date: str | None = None
    inject: bool = False
    run_id: str = Field(default="", max_length=200, description="the run reading: what it is given is recorded")


class RecallIn(Schema):
    agent_id: str = ""
    query: str = Field(default="", description=f"at most {memory_search.MAX_QUERY_CHARS} characters and {memory_search.MAX_QUERY_WORDS} words")
    turn: int | None = Field(default=None, ge=0, le=2**31 - 1)
    top_k: int | None = Field(default=None, ge=1, le=100)
    run_id: str = Field(default="", max_length=200, description="the run asking: what it is given is recorded")


class PriorIn(Schema):
    agent_id: str = ""
    run_id: str = Field(default="", max_length=200, description="the run asking: what it is given is recorded")


class BoardPostIn(Schema):
    run_id: str = Field(min_length=1)
    topic: str = Field(min_length=1, max_length=300)
    payload: dict[str, Any] = Field(default_factory=dict)
    worker_id: str = ""
    agent_id: str = ""


class BoardReadIn(Schema):
    run_id: str = Field(min_length=1)
    topic: str | None = None
    since: str | float | None = None
    agent_id: str = ""


class DigestIn(Schema):
    sha: str = Field(min_length=64, max_length=64)
    agent_id: str = ""


class LongTermOut(Schema):
    version: int
    content: str
    updated_at: datetime | None


class VersionOut(Schema):
    version: int
    author: str
    reason: str
    created_at: datetime


def envelope(status: int, data: Any = None, error: str | None = None, code: str | None = None) -> JsonResponse:
    body: dict[str, Any] = {"ok": error is None, "status": status, "data": data, "error": error}
    if code:
        body["code"] = code
    return JsonResponse(body, status=status)


# How each memory tool reads as a GenAI memory operation when memory work is exported (otel/send.py).
TOOL_OPERATIONS = {"write": "update_memory", "board_post": "update_memory"}


def _span_experiment(request: HttpRequest, slug: str) -> Experiment | None:
    """The experiment a memory span names (only looked up when spans are sent)."""
    return Experiment.objects.filter(slug=slug).first() if send_enabled() else None


def tool(schema: type[Schema]) -> Callable[..., Callable[..., HttpResponse]]:
    """Parse the body with `schema` and turn every refusal into an envelope with a status and a sentence."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, slug: str) -> HttpResponse:
            try:
                body = schema.model_validate(parse_json_body(request.body or b"{}"))
            except ApiError as exc:
                return envelope(exc.status, error=exc.message, code=exc.code)
            except ValidationError as exc:
                problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in exc.errors())
                return envelope(422, error=f"Invalid request: {problems}.", code="invalid_request")
            try:
                with memory_span(TOOL_OPERATIONS.get(view.__name__, "search_memory"), experiment=_span_experiment(request, slug), carrier=request.headers,
                                 **{"awp.memory.tool": view.__name__, "awp.agent.id": getattr(body, "agent_id", ""), "awp.memory.tier": getattr(body, "target", None)}) as outcome:  # fmt: skip
                    response = view(request, slug, body)
                    outcome["awp.response.status"] = response.status_code
                return response
            except ApiError as exc:
                return envelope(exc.status, error=exc.message, code=exc.code)
            except MemoryDenied as exc:
                return envelope(403, error=exc.message, code="memory_access_denied")
            except memory_search.SearchRefused as exc:
                return envelope(exc.status, error=exc.message, code=exc.code)

        # ninja reads the signature: it must see (request, slug) only, the body is parsed here.
        del wrapper.__wrapped__
        return wrapper

    return decorate


def _doc(schema: type[Schema]) -> dict[str, Any]:
    return {"requestBody": {"content": {"application/json": {"schema": schema.model_json_schema()}}, "required": True}}


def actor_for(request: HttpRequest, agent_id: str) -> Actor:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    named = agent_id.strip() or request.headers.get("X-AWP-Agent", "").strip()
    if not named:
        named = caller.token.name if caller.token is not None else f"user:{caller.user.get_username()}"
    return Actor(agent_id=named[:200], user=caller.user, token=caller.token)


def _run(experiment: Experiment, run_id: str) -> Run:
    run = Run.objects.filter(experiment=experiment, run_id=run_id).first()
    if run is None:
        raise ApiError(404, "run_not_found", f"No run '{run_id}' in this experiment.")
    return run


def _date(value: str | None, name: str) -> Any:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).date()
    except ValueError:
        raise ApiError(400, "bad_date", f"{name} must be a date like 2026-03-23.") from None


@router.post("/experiments/{slug}/memory/search", response=Envelope, openapi_extra=_doc(SearchIn))
@tool(SearchIn)
def search(request: HttpRequest, slug: str, body: SearchIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    actor = actor_for(request, body.agent_id)
    query = memory_search.SearchRequest(
        query=body.query, mode=body.mode, tiers=tuple(body.tiers),
        start=_date(body.date_range.start if body.date_range else None, "date_range.start"),
        end=_date(body.date_range.end if body.date_range else None, "date_range.end"),
        agent_filter=tuple(body.agent_filter), max_results=body.max_results,
        include_archived=body.include_archived, salience=body.salience,
    )  # fmt: skip
    memory_search.validate(query)
    for tier in query.effective_tiers:
        check_access(experiment=experiment, actor=actor, tier="working" if tier == "notes" else tier, action="read")
    result = memory_search.search_memory(experiment, query)
    results = [
        {"tier": hit.tier, "source": hit.source, "content": hit.content, "score": hit.score,
         "timestamp": hit.timestamp.isoformat().replace("+00:00", "Z") if hit.timestamp else None}
        for hit in result.hits
    ]  # fmt: skip
    return envelope(200, redact_for(experiment, {"results": results, "total": result.total}))


@router.post("/experiments/{slug}/memory/write", response=Envelope, openapi_extra=_doc(WriteIn))
@tool(WriteIn)
def write(request: HttpRequest, slug: str, body: WriteIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:write")
    actor = actor_for(request, body.agent_id)
    if not body.run_id:
        return envelope(200, write_memory(experiment=experiment, actor=actor, target=body.target, content=body.content))
    # With a run, the write goes through the run's ledger as a memory.write event; its projector applies it.
    run = _run(experiment, body.run_id)
    check_access(experiment=experiment, actor=actor, tier=TARGET_TIER[body.target], action="write")
    event = EventIn(
        kind="memory.write", dedupe_key=f"key:memory-write:{uuid.uuid4().hex}", agent_id=actor.agent_id,
        payload={"agent_id": actor.agent_id, "target": body.target, "content": body.content}, occurred_at=timezone.now(),
        ts_source="received",
    )  # fmt: skip
    try:
        result = append_events(run, [event], ctx=ProjectionContext(strict=True, source="api"))
    except IngestRefused as refused:
        return envelope(422, error=refused.message, code=refused.code)
    return envelope(200, {"target": body.target, "run_id": run.run_id, "seq": result.seqs[0]})


@router.post("/experiments/{slug}/memory/read", response=Envelope, openapi_extra=_doc(ReadIn))
@tool(ReadIn)
def read(request: HttpRequest, slug: str, body: ReadIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    actor = actor_for(request, body.agent_id)
    tier = "long_term" if body.target == "long_term" else "working"
    check_access(experiment=experiment, actor=actor, tier=tier, action="read")
    entries = MemoryEntry.objects.filter(experiment=experiment).visible()
    if body.target == "dates":
        dates = sorted({d.isoformat() for d in entries.values_list("day", flat=True)}, reverse=True)
        return envelope(200, {"dates": dates})
    if body.target == "daily":
        day = _date(body.date, "date") or timezone.now().astimezone(UTC).date()
        chosen = list(entries.filter(day=day))
        content = redact_text_for(experiment, "\n".join(_daily_block(entry) for entry in chosen))
        return envelope(200, {"content": content, "date": day.isoformat(), "exists": bool(chosen)})
    if body.run_id:
        _run(experiment, body.run_id)
    document = current_long_term(experiment)
    text = long_term_for_run(experiment, document, run_id=body.run_id, agent_id=actor.agent_id) if document else ""
    content = redact_text_for(experiment, text)
    if body.inject:
        content = truncate_for_injection(content, _long_term_max_chars(experiment))
    return envelope(200, {"content": content, "exists": document is not None, "version": document.version if document else 0})


def _daily_block(entry: MemoryEntry) -> str:
    stamp = entry.time.isoformat() if entry.time else "--:--:--"
    agent = f" -- {entry.agent_id}" if entry.agent_id else ""
    confidence = f" (confidence: {entry.confidence:g})" if entry.confidence is not None else ""
    return f"### {stamp}{agent}{confidence}\n{entry.content}\n"


def _long_term_max_chars(experiment: Experiment) -> int:
    config = experiment.memory_config
    value = config.get("long_term_max_tokens") or (config.get("long_term") or {}).get("max_tokens") or 2000
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 2000


@router.post("/experiments/{slug}/memory/recall", response=Envelope, openapi_extra=_doc(RecallIn))
@tool(RecallIn)
def recall_block(request: HttpRequest, slug: str, body: RecallIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    actor = actor_for(request, body.agent_id)
    check_access(experiment=experiment, actor=actor, tier="episodic", action="read")
    memory_search.check_query(body.query)
    if body.run_id:
        _run(experiment, body.run_id)
    try:
        block = recall_for(experiment=experiment, agent_id=actor.agent_id, query=body.query, turn=body.turn, top_k=body.top_k,
                           run_id=body.run_id)  # fmt: skip
    except RecallConfigError as exc:
        return envelope(422, error=f"The protocol's memory settings cannot be used: {exc}", code="invalid_memory_config")
    return envelope(200, redact_for(experiment, recall_data(experiment, block)))


@router.post("/experiments/{slug}/memory/prior", response=Envelope, openapi_extra=_doc(PriorIn))
@tool(PriorIn)
def prior(request: HttpRequest, slug: str, body: PriorIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    actor = actor_for(request, body.agent_id)
    check_access(experiment=experiment, actor=actor, tier="long_term", action="read")
    if body.run_id:
        _run(experiment, body.run_id)
    try:
        # Provided by the curation part; imported lazily so this module loads without it.
        from memory.curation.prior import prior_run_block
    except ImportError:
        return envelope(503, error="The prior-run block is not available on this server yet.", code="prior_unavailable")
    block = prior_run_block(experiment, run_id=body.run_id, agent_id=actor.agent_id)
    return envelope(200, {"block": redact_text_for(experiment, block)})


@router.post("/experiments/{slug}/board/post", response=Envelope, openapi_extra=_doc(BoardPostIn))
@tool(BoardPostIn)
def board_post(request: HttpRequest, slug: str, body: BoardPostIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:write")
    actor = actor_for(request, body.agent_id or body.worker_id)
    run = _run(experiment, body.run_id)
    ts = round(datetime.now(UTC).timestamp(), 6)
    entry_id = f"{ts:.6f}-{uuid.uuid4().hex[:8]}"
    worker_id = body.worker_id or actor.agent_id
    payload = {"id": entry_id, "ts": ts, "topic": body.topic, "worker_id": worker_id, "payload": body.payload}
    event = EventIn(kind="board.post", dedupe_key=f"board:{entry_id}", payload=payload, agent_id=worker_id,
                    occurred_at=datetime.fromtimestamp(ts, UTC), ts_source="record")  # fmt: skip
    try:
        result = append_events(run, [event], ctx=ProjectionContext(strict=True, source="api"))
    except IngestRefused as refused:
        return envelope(422, error=refused.message, code=refused.code)
    return envelope(200, {"entry_id": entry_id, "seq": result.seqs[0]})


@router.post("/experiments/{slug}/board/read", response=Envelope, openapi_extra=_doc(BoardReadIn))
@tool(BoardReadIn)
def board_read(request: HttpRequest, slug: str, body: BoardReadIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    run = _run(experiment, body.run_id)
    posts = BoardPost.objects.filter(run=run).order_by("seq")
    if body.topic:
        posts = posts.filter(topic=body.topic)
    if body.since not in (None, ""):
        posts = posts.filter(ts__gt=_since_ts(run, body.since))
    entries = [
        {"id": p.entry_id, "ts": p.ts, "topic": p.topic, "worker_id": p.worker_id, "payload": p.payload} for p in posts
    ]
    return envelope(200, redact_for(experiment, {"entries": entries}))


def _since_ts(run: Run, since: str | float | None) -> float:
    """`since` is an entry id or an epoch timestamp; entries strictly newer are returned."""
    if isinstance(since, int | float):
        return float(since)
    found = BoardPost.objects.filter(run=run, entry_id=since).values_list("ts", flat=True).first()
    if found is not None:
        return float(found)
    try:
        return float(str(since))
    except ValueError:
        raise ApiError(400, "bad_since", "since must be a blackboard entry id or an epoch timestamp.") from None


@router.post("/experiments/{slug}/digest/fetch", response=Envelope, openapi_extra=_doc(DigestIn))
@tool(DigestIn)
def digest_fetch(request: HttpRequest, slug: str, body: DigestIn) -> HttpResponse:
    experiment = experiment_for(request, slug, scope="memory:read")
    digest = Digest.objects.filter(experiment=experiment, sha=body.sha.lower()).first()
    if digest is None:
        return envelope(404, error=f"No digest {body.sha[:12]}… in this experiment.", code="digest_not_found")
    return envelope(200, redact_for(experiment, {"sha": digest.sha, "record": digest.record}))


@router.get("/experiments/{slug}/memory/long-term", response=LongTermOut)
def long_term(request: HttpRequest, slug: str) -> dict[str, Any]:
    experiment = experiment_for(request, slug, scope="memory:read")
    document = current_long_term(experiment)
    if document is None:
        return {"version": 0, "content": "", "updated_at": None}
    return {"version": document.version, "content": redact_text_for(experiment, document.content), "updated_at": document.created_at}


@router.get("/experiments/{slug}/memory/long-term/versions", response=list[VersionOut])
def long_term_versions(request: HttpRequest, slug: str) -> list[dict[str, Any]]:
    experiment = experiment_for(request, slug, scope="memory:read")
    redactor = redactor_for(experiment)
    return [
        {"version": d.version, "author": d.author_label or (d.author.get_username() if d.author else ""),
         "reason": redactor.text(d.reason), "created_at": d.created_at}
        for d in long_term_history(experiment)
    ]  # fmt: skip

