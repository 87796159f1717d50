"""Turn AWP files and JSONL lines into ledger event specs (kinds and dedupe keys per docs/events.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from experiments.awp.layout import SourceFile


@dataclass(frozen=True)
class EventSpec:
    """A ledger event before it has a seq; `dedupe_key` makes a replay a no-op (experiments.ingest appends it)."""

    kind: str
    dedupe_key: str
    payload: dict[str, Any] = field(default_factory=dict)
    agent_id: str = ""
    iteration: int | None = None
    depth: int = 0
    occurred_at: datetime | None = None
    payload_bytes: bytes | None = None  # the payload already serialised by experiments.jsonb.payload_json
    ts_source: str = ""  # where occurred_at came from: record | parent | mtime | received (experiments.awp.timing)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_time(value: Any) -> datetime | None:
    """An ISO string or epoch seconds as an aware datetime; None when it is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            # Arithmetic, not datetime.fromtimestamp: that one costs ~25 µs a call under Django's TZ setup.
            return EPOCH + timedelta(seconds=float(value))
        except (OverflowError, ValueError):
            return None
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def _source_of(when: datetime | None) -> str:
    # "record" when the record carries its own time; otherwise experiments.awp.timing.stamp decides later.
    return "record" if when is not None else ""


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def file_event(source: SourceFile, data: Any, *, digest_sha: str | None = None) -> EventSpec:
    """The event for a whole JSON file (already parsed and, for digests, verified)."""
    kind = source.kind
    key = f"file:{source.relpath}"
    agent = source.worker
    when: datetime | None = None
    payload: dict[str, Any]
    if kind == "digest":
        payload = {"sha": digest_sha, "record": data}
        key = f"digest:{digest_sha}"
    elif kind == "state.snapshot":
        body = data if isinstance(data, dict) else {}
        agent = str(body.get("agent_id") or source.worker)
        when = parse_time(body.get("timestamp"))
        payload = {"agent_id": agent, "timestamp": body.get("timestamp"), "state": body.get("state", {}), "file": source.relpath}
    elif isinstance(data, list):
        payload = {"calls": data} if kind == "worker.tool_calls" else {"items": data}
    elif isinstance(data, dict):
        payload = dict(data)
    else:
        payload = {"value": data}
    if kind == "run.start":
        when = parse_time(payload.get("started"))
    elif kind == "run.complete":
        when = parse_time(payload.get("completed"))
    iteration = source.iteration
    if kind == "digest" and isinstance(data, dict):
        iteration = _as_int(data.get("iteration"))
    return EventSpec(kind=kind, dedupe_key=key, payload=payload, agent_id=agent, iteration=iteration, depth=source.depth, occurred_at=when, ts_source=_source_of(when))


def line_event(source: SourceFile, value: Any, offset: int, *, generation: int = 0) -> EventSpec:
    """The event for one JSONL line of a metrics, log, tool-call or blackboard stream."""
    body: dict[str, Any] = value if isinstance(value, dict) else {"value": value}
    where = source.relpath if generation == 0 else f"{source.relpath}@{generation}"
    key = f"line:{where}:{offset}"
    fields = body.get("fields") if isinstance(body.get("fields"), dict) else {}
    when = parse_time(body.get("ts"))
    if source.kind == "jsonl:board":
        entry_id = str(body.get("id") or f"{where}:{offset}")
        return EventSpec(
            kind="board.post",
            dedupe_key=f"board:{entry_id}",
            payload=body,
            agent_id=str(body.get("worker_id") or ""),
            depth=source.depth,
            occurred_at=when,
            ts_source=_source_of(when),
        )
    if source.kind == "jsonl:metric":
        raw_kind = str(body.get("kind") or "metric.unknown")
        kind = raw_kind if raw_kind.startswith("metric.") else f"metric.{raw_kind}"
        agent = str(body.get("worker_id") or "")
        iteration = _as_int(body.get("iteration"))
    elif source.kind == "jsonl:tool":
        kind, agent, iteration = "tool.call", str(body.get("worker_id") or ""), _as_int(body.get("iteration"))
    else:
        kind = "log"
        agent = str(fields.get("worker_id") or fields.get("worker") or "")
        iteration = _as_int(fields.get("iteration"))
    return EventSpec(kind=kind, dedupe_key=key, payload=body, agent_id=agent, iteration=iteration, depth=source.depth, occurred_at=when, ts_source=_source_of(when))
