"""The experiments API router, mounted under /api/v1/ by awp_site.api: experiments, runs, events, digests, ingest."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from awp_site.apierrors import ApiError
from awp_site.auth import Caller, api_auth, authorize_experiment, experiment_for
from experiments.ingest import append_locked, lock_run, push_one
from experiments.models import AcceptedBatch, Digest, Event, Experiment, Run
from experiments.projections import IngestRefused, ProjectionContext
from experiments.pushed import validate_batch
from state.services_redaction import redact_for

router = Router(tags=["experiments"], auth=api_auth)


class ExperimentOut(Schema):
    slug: str
    name: str
    status: str
    runs: int


@router.get("/experiments", response=list[ExperimentOut], summary="Experiments the caller can see")
def list_experiments(request: HttpRequest) -> list[dict[str, object]]:
    caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None:
        if not caller.token.has_scope("memory:read"):
            raise ApiError(403, "missing_scope", "This token lacks the 'memory:read' scope.")
        experiments = Experiment.objects.filter(pk=caller.token.experiment_id)
    else:
        experiments = Experiment.objects.visible_to(caller.user)
    rows = experiments.annotate(run_count=Count("runs")).order_by("slug")
    return [{"slug": e.slug, "name": e.name, "status": e.status, "runs": e.run_count} for e in rows]


# ---- ingest ---------------------------------------------------------------------------------------


class IngestIn(Schema):
    run_id: str = Field(..., min_length=1, max_length=200, description="the runtime's run id (created by a run.start in this batch)")
    experiment: str | None = Field(None, description="experiment slug; optional with a token (must be the token's), required with a session")
    # list[Any]: each event is validated by experiments.pushed (per-item errors); pydantic copying 5,000 dicts
    # first would cost more than the whole ledger write.
    events: list[Any] = Field(
        ...,
        json_schema_extra={"items": {"type": "object"}},
        description=(
            "Events in order, each {kind, idempotency_key?, agent_id?, iteration?, depth?, ts?, payload}. "
            "Kinds: run.start, run.complete, iteration.*, worker.*, tool.call, metric.*, board.post, digest, "
            "state.delta, state.snapshot, memory.write, log (docs/events.md)."
        ),
    )


class IngestOut(Schema):
    run_id: str
    seqs: list[int] = Field(..., description="the ledger seq of each event, in input order (the existing seq for a replay)")
    new: int
    last_seq: int


def ingest_experiment(request: HttpRequest, slug: str | None) -> Experiment:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None:
        if slug and slug != caller.token.experiment.slug:
            raise ApiError(403, "token_experiment_mismatch", "This token belongs to another experiment.")
        return experiment_for(request, caller.token.experiment.slug, scope="ingest")
    if not slug:
        raise ApiError(422, "experiment_required", "Name the experiment (field 'experiment') when pushing with a session.")
    return experiment_for(request, slug, scope="ingest")


@router.post(
    "/ingest",
    response=IngestOut,
    summary="Append a batch of events to a run's ledger (all or nothing, idempotent)",
    description=(
        "With a token and `Prefer: respond-async`, the batch is accepted rather than appended before the answer: "
        "202 with a receipt (`batch`, `status_url`) once its body is stored, then appended by a drainer in the "
        "order accepted; `GET /api/v1/ingest/batches/{batch_id}` gives its seqs or its refusal. Without a drainer "
        "running, the preference is not applied (200 with seqs)."
    ),
    openapi_extra={"responses": {202: {"description": "accepted (Prefer: respond-async): a receipt to read at status_url"}, 401: {"description": "no credentials"}, 403: {"description": "token of another experiment or without scope ingest"}, 404: {"description": "unknown run"}, 413: {"description": "batch_too_large"}, 422: {"description": "per-item errors"}, 429: {"description": "rate limited, or inbox_full (Retry-After)"}}},
)
def ingest(request: HttpRequest, body: IngestIn) -> dict[str, Any]:
    experiment = ingest_experiment(request, body.experiment)
    return append_batch(experiment, body.run_id, body.events)


def append_batch(experiment: Experiment, run_id: str, items: list[Any]) -> dict[str, Any]:
    """A pushed batch into the run's ledger (all or nothing): the answer, or an ApiError saying what was refused.
    The synchronous push answers with it; the inbox's drainer settles an accepted batch's receipt with it."""
    limit = settings.AWP_INGEST_MAX_BATCH
    if len(items) > limit:
        raise ApiError(413, "batch_too_large", f"A batch holds at most {limit} events; this one has {len(items)}.", max_batch=limit)
    events, errors = validate_batch(items)
    if errors:
        raise ApiError(422, "invalid_events", f"{len(errors)} event(s) were refused; nothing was stored.", errors=[e.as_dict() for e in errors])
    try:
        ctx = ProjectionContext(strict=True, source="api")
        with transaction.atomic():
            # A one-event push into an existing run: one statement (lock, dedupe, insert, head, announce), then commit.
            pushed = push_one(experiment, run_id, events[0], ctx=ctx) if len(events) == 1 else None
            if pushed is not None:
                run, result = pushed
            else:
                run = _locked_run_for_batch(experiment, run_id, starts=any(e.kind == "run.start" for e in events))
                result = append_locked(run, events, ctx=ctx)
    except IngestRefused as refused:
        index = next((i for i, e in enumerate(events) if e.dedupe_key == refused.dedupe_key), None)
        raise ApiError(422, refused.code, refused.message, errors=[{"index": index, "code": refused.code, "message": refused.message}]) from None
    return {"run_id": run.run_id, "seqs": result.seqs, "new": result.new_count, "last_seq": run.last_seq}


class BatchOut(Schema):
    batch: int
    state: str = Field(..., description="pending, applied or refused")
    run_id: str
    events: int
    accepted_at: datetime
    settled_at: datetime | None
    result: dict[str, Any] | None = Field(
        None, description="applied: {run_id, seqs, new, last_seq} as a synchronous push answers; refused: {code, message, errors?}"
    )


@router.get(
    "/ingest/batches/{batch_id}",
    response=BatchOut,
    summary="The receipt of a batch accepted with Prefer: respond-async: pending, applied (with its seqs) or refused",
)
def ingest_batch(request: HttpRequest, batch_id: int) -> dict[str, Any]:
    batch = AcceptedBatch.objects.select_related("experiment").filter(pk=batch_id).defer("body").first()
    caller: Caller = request.auth  # type: ignore[attr-defined]
    if batch is None or (caller.token is not None and caller.token.experiment_id != batch.experiment_id):
        raise ApiError(404, "batch_not_found", f"No accepted batch {batch_id} for this caller.")
    authorize_experiment(request, batch.experiment, scope="ingest")
    return {
        "batch": batch.pk, "state": batch.state, "run_id": batch.run_id, "events": batch.events,
        "accepted_at": batch.accepted_at, "settled_at": batch.settled_at, "result": batch.result,
    }  # fmt: skip


def _locked_run_for_batch(experiment: Experiment, run_id: str, *, starts: bool) -> Run:
    """The batch's run with its row locked for this transaction (created by a batch that starts it)."""
    run = lock_run(experiment.pk, run_id)
    if run is not None:
        run.experiment = experiment  # loaded with the caller's token or membership: no second read
        return run
    if not starts:
        raise ApiError(404, "unknown_run", f"No run '{run_id}' in this experiment; start it with a run.start event.")
    # Concurrent first batches of one run: the unique constraint picks one row, everyone uses it.
    Run.objects.bulk_create([Run(experiment=experiment, run_id=run_id, engine="api")], ignore_conflicts=True)
    run = lock_run(experiment.pk, run_id)
    assert run is not None
    run.experiment = experiment
    return run


# ---- reads ----------------------------------------------------------------------------------------


class RunOut(Schema):
    run_id: str
    status: str
    reason: str
    parent_run_id: str | None
    depth: int
    iterations: int
    engine: str
    loss: float | None
    last_seq: int
    started_at: datetime | None
    ended_at: datetime | None


@router.get("/experiments/{slug}/runs", response=list[RunOut], summary="Runs of an experiment (sub-manager runs name their parent)")
def list_runs(request: HttpRequest, slug: str) -> list[dict[str, Any]]:
    experiment = experiment_for(request, slug, scope="memory:read")
    runs = experiment.runs.select_related("parent").order_by("depth", "created_at")
    return [
        {
            "run_id": r.run_id,
            "status": r.status,
            "reason": r.reason,
            "parent_run_id": r.parent.run_id if r.parent else None,
            "depth": r.depth,
            "iterations": r.iterations,
            "engine": r.engine,
            "loss": r.loss,
            "last_seq": r.last_seq,
            "started_at": r.started_at,
            "ended_at": r.ended_at,
        }
        for r in runs
    ]


class EventOut(Schema):
    seq: int
    kind: str
    agent_id: str
    iteration: int | None
    depth: int
    ts: datetime = Field(..., description="when it happened, ISO 8601 in UTC (stable): see ts_source")
    ts_source: str = Field(..., description="where ts came from: record | parent (the record it belongs to) | mtime (the file's) | received | span (an OTel span's start)")
    occurred_at: datetime | None
    recorded_at: datetime
    payload: Any


class EventPage(Schema):
    run_id: str
    events: list[EventOut]
    last_seq: int = Field(..., description="the run's head: the highest seq in its ledger")
    next_after: int | None = Field(None, description="pass as ?after= for the next page; null when this page reached the head")


def _visible_run(request: HttpRequest, run_id: str, experiment_slug: str | None) -> Run:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    runs = Run.objects.select_related("experiment").filter(run_id=run_id)
    if caller.token is not None:
        runs = runs.filter(experiment_id=caller.token.experiment_id)
    else:
        runs = runs.filter(experiment__in=Experiment.objects.visible_to(caller.user))
    if experiment_slug:
        runs = runs.filter(experiment__slug=experiment_slug)
    run = runs.order_by("-created_at").first()
    if run is None:
        raise ApiError(404, "unknown_run", f"No run '{run_id}' that you can see.")
    authorize_experiment(request, run.experiment, scope="memory:read")
    return run


@router.get("/runs/{run_id}/events", response=EventPage, summary="A run's ledger in seq order, paged by ?after=")
def run_events(
    request: HttpRequest,
    run_id: str,
    after: int = Query(0, ge=0),
    limit: int = Query(500, ge=1, le=5000),
    experiment: str | None = Query(None, description="experiment slug, when the run id exists in several"),
) -> dict[str, Any]:
    run = _visible_run(request, run_id, experiment)
    rows = list(Event.objects.filter(run=run, seq__gt=after).order_by("seq")[:limit])
    events = [
        {
            "seq": e.seq,
            "kind": e.kind,
            "agent_id": e.agent_id,
            "iteration": e.iteration,
            "depth": e.depth,
            "ts": e.ts.astimezone(UTC),
            "ts_source": e.ts_from,
            "occurred_at": e.occurred_at,
            "recorded_at": e.recorded_at,
            "payload": e.payload,
        }
        for e in rows
    ]
    next_after = rows[-1].seq if rows and rows[-1].seq < run.last_seq else None
    return {"run_id": run.run_id, "events": redact_for(run.experiment, events), "last_seq": run.last_seq, "next_after": next_after}


class DigestChild(Schema):
    sha: str
    missing: bool
    goal: str | None = None
    iteration: int | None = None
    run_id: str | None = None
    key_facts: list[Any] | None = None
    confidence_trend: list[Any] | None = None


class DigestOut(Schema):
    sha: str
    goal: str
    key_facts: list[Any]
    open_questions: list[Any]
    confidence_trend: list[Any]
    iteration: int
    run_id: str
    children: list[DigestChild]


@router.get("/digests/{sha}", response=DigestOut, summary="A digest by SHA, its children resolved across runs (or marked missing)")
def get_digest(request: HttpRequest, sha: str) -> dict[str, Any]:
    caller: Caller = request.auth  # type: ignore[attr-defined]
    digests = Digest.objects.select_related("experiment")
    if caller.token is not None:
        digests = digests.filter(experiment_id=caller.token.experiment_id)
    else:
        digests = digests.filter(experiment__in=Experiment.objects.visible_to(caller.user))
    digest = digests.filter(sha=sha.lower()).first()
    if digest is None:
        raise ApiError(404, "digest_not_found", f"No digest {sha[:12]}… that you can see.")
    authorize_experiment(request, digest.experiment, scope="memory:read")
    found = {d.sha: d for d in Digest.objects.filter(experiment=digest.experiment, sha__in=digest.child_digest_hashes)}
    children = [
        {"sha": h, "missing": False, "goal": found[h].goal, "iteration": found[h].iteration, "run_id": found[h].run_ref, "key_facts": found[h].key_facts, "confidence_trend": found[h].confidence_trend}
        if h in found
        else {"sha": h, "missing": True}
        for h in digest.child_digest_hashes
    ]
    body = {
        "sha": digest.sha,
        "goal": digest.goal,
        "key_facts": digest.key_facts,
        "open_questions": digest.open_questions,
        "confidence_trend": digest.confidence_trend,
        "iteration": digest.iteration,
        "run_id": digest.run_ref,
        "children": children,
    }
    return redact_for(digest.experiment, body)  # type: ignore[no-any-return]
