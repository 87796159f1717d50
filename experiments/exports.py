"""Exports of a run's events and metrics as CSV and JSON: streamed in seq order, CHUNK events at a time, each
chunk redacted through the façade (state.services_redaction) before it leaves, like every other way out: payloads,
and the names a row is labelled with (event kind, agent id, metric field names), which may be known secrets too.
The response then passes the stream net (awp_site.middleware.RedactionNet) like every other answer."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Iterator
from typing import Any

import orjson
from asgiref.sync import sync_to_async

from experiments.models import Event, Run
from experiments.summaries import event_summary
from state.services_redaction import Redactor, redactor_for

CHUNK = 2000
EVENT_COLUMNS = ["seq", "kind", "agent_id", "iteration", "depth", "occurred_at", "recorded_at", "summary", "payload"]
METRIC_COLUMNS = ["seq", "kind", "agent_id", "iteration", "occurred_at", "field", "value"]


def _chunk(run: Run, what: str, after: int) -> tuple[Redactor, list[tuple[Event, Any]]]:
    """The next CHUNK events after `after` (metrics: metric.* kinds only) with their redacted payloads."""
    events = run.events.filter(seq__gt=after)
    if what == "metrics":
        events = events.filter(kind__startswith="metric.")
    rows = list(events.order_by("seq")[:CHUNK])
    redactor = redactor_for(run.experiment)
    payloads = redactor.value([e.payload for e in rows])
    return redactor, list(zip(rows, payloads, strict=True))


def _text(redactor: Redactor, value: str) -> str:
    return redactor.text(value) if value else value


def _record(redactor: Redactor, event: Event, payload: Any) -> dict[str, Any]:
    return {
        "seq": event.seq,
        "kind": _text(redactor, event.kind),
        "agent_id": _text(redactor, event.agent_id),
        "iteration": event.iteration,
        "depth": event.depth,
        "occurred_at": event.occurred_at.isoformat() if event.occurred_at else None,
        "recorded_at": event.recorded_at.isoformat(),
        "payload": payload,
    }


def _records(redactor: Redactor, rows: list[tuple[Event, Any]]) -> list[dict[str, Any]]:
    return [_record(redactor, event, payload) for event, payload in rows]


def _numbers(payload: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted field, value) of every number in a metric payload, nested objects flattened."""
    if isinstance(payload, dict):
        for key, value in payload.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if isinstance(value, dict):
                yield from _numbers(value, name)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                yield name, value


def csv_lines(redactor: Redactor, what: str, rows: list[tuple[Event, Any]]) -> str:
    """CSV text for one chunk: events one row each, metrics one row per numeric field."""
    out = io.StringIO()
    writer = csv.writer(out)
    for event, payload in rows:
        when = event.occurred_at.isoformat() if event.occurred_at else ""
        agent, kind = _text(redactor, event.agent_id), _text(redactor, event.kind)
        if what == "metrics":
            for name, value in _numbers(payload):
                writer.writerow([event.seq, kind, agent, event.iteration, when, _text(redactor, name), value])
        else:
            compact = orjson.dumps(payload, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
            writer.writerow([event.seq, kind, agent, event.iteration, event.depth, when, event.recorded_at.isoformat(), event_summary(event.kind, payload), compact])
    return out.getvalue()


async def stream_export(run: Run, what: str, fmt: str) -> AsyncIterator[bytes]:
    """The export as an async stream (daphne sends each chunk as it is read; memory stays at one chunk)."""
    after = 0
    first = True
    if fmt == "csv":
        head = io.StringIO()
        csv.writer(head).writerow(METRIC_COLUMNS if what == "metrics" else EVENT_COLUMNS)
        yield head.getvalue().encode()
    else:
        yield b'{"run_id": ' + orjson.dumps(await sync_to_async(lambda: _text(redactor_for(run.experiment), run.run_id))()) + b', "' + what.encode() + b'": ['
    while True:
        redactor, rows = await sync_to_async(_chunk)(run, what, after)
        if not rows:
            break
        after = rows[-1][0].seq
        if fmt == "csv":
            yield (await sync_to_async(csv_lines)(redactor, what, rows)).encode()
        else:
            records = await sync_to_async(_records)(redactor, rows)
            body = b",\n".join(orjson.dumps(r, option=orjson.OPT_NON_STR_KEYS, default=str) for r in records)
            yield (b"\n" if first else b",\n") + body
            first = False
        if len(rows) < CHUNK:
            break
    if fmt != "csv":
        yield b"\n]}\n"
