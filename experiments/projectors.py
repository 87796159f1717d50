"""Projectors of the experiments app: run header fields, blackboard posts and digests, from ledger events.

Each projector handles a whole batch with a constant number of queries (no per-event queries), so
the hot ingest path stays lean. All are deterministic given the ledger: `rebuild_run_projections`
replays a run's events through them.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from experiments.awp.digests import check_digest
from experiments.awp.events import parse_time
from experiments.models import BoardPost, Digest, Event, IngestProblem, Run
from experiments.projections import IngestRefused, ProjectionContext, register_projector

TERMINAL = {choice for choice, _ in Run.Status.choices} - {Run.Status.RUNNING}


def _status_of(raw: Any) -> str:
    text = str(raw or "").lower()
    if text in TERMINAL:
        return text
    return Run.Status.FAILED if text in {"eval_fail", "budget_exceeded"} else Run.Status.PARTIAL if text else Run.Status.COMPLETE


def project_run(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """run.* and iteration.* → the Run row's header fields (one UPDATE per batch)."""
    fields: dict[str, Any] = {}
    parent_ref: str | None = None
    for event in events:
        payload = event.payload
        if event.ts_source == "span" and event.kind in SPAN_USAGE_KINDS:
            fields["budget_used"] = _span_usage(fields.get("budget_used", run.budget_used), event)
            continue
        if not event.kind.startswith(("run.", "iteration.")):
            continue
        if event.kind == "run.start":
            fields["task_text"] = str(payload.get("task") or "")[:100_000]
            if isinstance(payload.get("models"), dict):
                fields["models_used"] = payload["models"]
            if isinstance(payload.get("budget"), dict):
                fields["budget"] = payload["budget"]
            started = parse_time(payload.get("started")) or event.occurred_at
            if started:
                fields["started_at"] = started
            if payload.get("parent_run_id") and not run.parent_id:
                parent_ref = str(payload["parent_run_id"])
        elif event.kind == "run.complete":
            fields["status"] = _status_of(payload.get("status"))
            fields["reason"] = str(payload.get("reason") or "")[:200]
            fields["ended_at"] = parse_time(payload.get("completed")) or event.occurred_at or event.recorded_at
            total = payload.get("total_iterations")
            if isinstance(total, int):
                fields["iterations"] = max(total, fields.get("iterations", run.iterations))
            if isinstance(payload.get("final_budget"), dict):
                fields["budget_used"] = payload["final_budget"]
            if isinstance(payload.get("loss"), int | float):
                fields["loss"] = float(payload["loss"])
        elif event.kind.startswith("iteration.") and event.iteration is not None:
            fields["iterations"] = max(event.iteration, fields.get("iterations", run.iterations))
            if event.kind == "iteration.budget" and fields.get("status", run.status) == Run.Status.RUNNING:
                fields["budget_used"] = event.payload
    if parent_ref:
        parent = Run.objects.filter(experiment_id=run.experiment_id, run_id=parent_ref).only("pk", "depth").first()
        if parent is not None:
            fields.update(parent_id=parent.pk, depth=parent.depth + 1)
    if fields:
        Run.objects.filter(pk=run.pk).update(**fields)
        for name, value in fields.items():
            setattr(run, name, value)


SPAN_USAGE_KINDS = frozenset({"metric.model_call", "tool.call"})


def _span_usage(used: Any, event: Event) -> dict[str, Any]:
    """An OpenTelemetry run has no budget limits: its use (tokens, model calls and their latency, tool calls) adds up."""
    totals = {key: dict(value) for key, value in (used or {}).items() if isinstance(value, dict)}
    payload = event.payload
    if event.kind == "tool.call":
        tools = totals.setdefault("tool_calls", {})
        tools["used"] = tools.get("used", 0) + 1
        return totals
    tokens = totals.setdefault("tokens", {})
    for field in ("input_tokens", "output_tokens"):
        value = payload.get(field)
        if isinstance(value, int | float) and not isinstance(value, bool):
            name = field.removesuffix("_tokens")
            tokens[name] = tokens.get(name, 0) + value
    tokens["consumed"] = tokens.get("input", 0) + tokens.get("output", 0)
    calls = totals.setdefault("model_calls", {})
    calls["used"] = calls.get("used", 0) + 1
    latency = payload.get("latency_ms")
    if isinstance(latency, int | float) and not isinstance(latency, bool):
        calls["latency_ms"] = round(calls.get("latency_ms", 0) + latency, 3)
    return totals


def project_span_errors(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """OpenTelemetry spans that ended in error → the run's problems (one per span; a resend adds none)."""
    rows = []
    for event in events:
        error = event.payload.get("error") if event.ts_source == "span" else None
        if not isinstance(error, dict):
            continue
        name = str(event.payload.get("name") or event.kind)
        what = ": ".join(part for part in (str(error.get("type") or ""), str(error.get("message") or "")) if part) or "error"
        rows.append(
            IngestProblem(
                experiment_id=run.experiment_id, run_id=run.pk, path=f"span {name}"[:1000], code="span_error",
                message=f"{name} ({event.kind}, agent {event.agent_id or '-'}): {what}", dedupe_key=f"span-error:{run.pk}:{event.dedupe_key}"[:1200],
            )
        )  # fmt: skip
    IngestProblem.objects.bulk_create(rows, ignore_conflicts=True)


def project_board(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """board.post → BoardPost rows (bulk; a known entry id is kept as first written)."""
    rows = []
    for event in events:
        payload = event.payload
        ts = payload.get("ts")
        ts_value = float(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else (event.occurred_at or event.recorded_at).timestamp()
        body = payload.get("payload")
        rows.append(
            BoardPost(
                run_id=run.pk,
                seq=event.seq,
                entry_id=str(payload.get("id") or event.dedupe_key)[:200],
                ts=ts_value,
                posted_at=event.occurred_at or parse_time(ts_value) or event.recorded_at,
                topic=str(payload.get("topic") or "")[:300],
                worker_id=str(payload.get("worker_id") or event.agent_id or "")[:200],
                payload=body if isinstance(body, dict) else {"value": body},
            )
        )
    BoardPost.objects.bulk_create(rows, ignore_conflicts=True)


def project_digest(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """digest → Digest rows keyed by SHA; the SHA is recomputed and a mismatch refused (API) or skipped (disk)."""
    rows = []
    for event in events:
        record = event.payload.get("record")
        sha, error = check_digest(record, event.payload.get("sha"))
        if error:
            if ctx.strict:
                raise IngestRefused("digest_sha_mismatch", error, dedupe_key=event.dedupe_key)
            continue
        assert isinstance(record, dict)
        rows.append(
            Digest(
                experiment_id=run.experiment_id,
                run_id=run.pk,
                sha=sha,
                run_ref=str(record.get("run_id") or run.run_id)[:200],
                iteration=record.get("iteration") if isinstance(record.get("iteration"), int) else 0,
                goal=str(record.get("goal") or ""),
                key_facts=list(record.get("key_facts") or []),
                open_questions=list(record.get("open_questions") or []),
                confidence_trend=list(record.get("confidence_trend") or []),
                child_digest_hashes=list(record.get("child_digest_hashes") or []),
                record=record,
                seq=event.seq,
            )
        )
    Digest.objects.bulk_create(rows, ignore_conflicts=True)


def register() -> None:
    """Called from ExperimentsConfig.ready()."""
    # One projector for run.* and iteration.*, so a batch updates the Run row once and in seq order.
    register_projector("", project_run, name="experiments.run", applies=run_projection_applies)
    register_projector("board.post", project_board, name="experiments.board")
    register_projector("digest", project_digest, name="experiments.digest")
    register_projector("", project_span_errors, name="experiments.span_errors", applies=lambda event, _experiment: event.ts_source == "span")


def run_projection_applies(event: Any, experiment: Any) -> bool:
    """project_run reads run.* and iteration.* events and the usage of OpenTelemetry spans; nothing else."""
    return event.kind.startswith(("run.", "iteration.")) or (event.ts_source == "span" and event.kind in SPAN_USAGE_KINDS)


@transaction.atomic
def rebuild_run_projections(*, run: Run, chunk: int = 5000) -> int:
    """Drop this app's projections of `run` (header, blackboard, digests) and replay its ledger through them.

    Other apps' projectors are not replayed here: they own their tables and their rebuilds.
    """
    BoardPost.objects.filter(run=run).delete()
    Digest.objects.filter(run=run).delete()
    Run.objects.filter(pk=run.pk).update(iterations=0, budget_used={}, status=Run.Status.RUNNING, reason="", ended_at=None)
    run.refresh_from_db()
    ctx = ProjectionContext(strict=False, source="rebuild")
    count, after = 0, 0
    while True:
        events = list(Event.objects.filter(run=run, seq__gt=after).order_by("seq")[:chunk])
        if not events:
            return count
        project_run(run, events, ctx)
        project_board(run, [e for e in events if e.kind.startswith("board.post")], ctx)
        project_digest(run, [e for e in events if e.kind.startswith("digest")], ctx)
        count += len(events)
        after = events[-1].seq
