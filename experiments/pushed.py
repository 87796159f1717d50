"""Validate pushed event batches (pure): kinds, fields, digest SHAs, dedupe keys and storable payloads, with per-item errors."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import simdjson

from awp_site.jsonbody import read_unbuilt
from experiments.awp.digests import check_digest
from experiments.awp.events import EventSpec, parse_time
from experiments.jsonb import PayloadNotStorable, payload_json

EXACT_KINDS = {"run.start", "run.complete", "tool.call", "board.post", "digest", "state.delta", "state.snapshot", "memory.write", "log"}
PREFIX_KINDS = ("iteration.", "worker.", "metric.")
DELTA_OPS = {"add", "modify", "remove"}


@dataclass(frozen=True)
class ItemError:
    index: int
    code: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "code": self.code, "message": self.message}


@lru_cache(maxsize=1024)
def kind_allowed(kind: str) -> bool:
    """Whether `kind` is one of the ledger kinds a client may push (docs/events.md)."""
    return kind in EXACT_KINDS or (kind.startswith(PREFIX_KINDS) and len(kind) > len(kind.split(".")[0]) + 1)


def _content_hash(item: dict[str, Any]) -> str:
    canonical = json.dumps(
        [item.get("kind"), item.get("agent_id") or "", item.get("iteration"), item.get("ts"), item.get("payload") or {}],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def validate_item(index: int, item: Any) -> tuple[EventSpec | None, ItemError | None]:
    """One pushed event → an EventSpec, or the reason it is refused."""

    def fail(code: str, message: str) -> tuple[None, ItemError]:
        return None, ItemError(index, code, message)

    if not isinstance(item, dict):
        return fail("invalid_event", "Each event must be a JSON object.")
    kind = item.get("kind")
    if not isinstance(kind, str) or not kind_allowed(kind):
        return fail("unknown_kind", f"Unknown event kind {kind!r}; see docs/events.md for the kinds.")
    payload = item.get("payload", {})
    if not isinstance(payload, dict):
        return fail("invalid_payload", "payload must be a JSON object.")
    key = item.get("idempotency_key")
    if key is not None and (not isinstance(key, str) or not key or len(key) > 200):
        return fail("invalid_idempotency_key", "idempotency_key must be a non-empty string of at most 200 characters.")
    agent = item.get("agent_id") or ""
    if not isinstance(agent, str) or len(agent) > 200:
        return fail("invalid_agent_id", "agent_id must be a string of at most 200 characters.")
    iteration = item.get("iteration")
    if iteration is not None and (isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0):
        return fail("invalid_iteration", "iteration must be a non-negative integer.")
    depth = item.get("depth", 0)
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 64:
        return fail("invalid_depth", "depth must be an integer between 0 and 64.")
    ts = item.get("ts")
    occurred = parse_time(ts) if ts is not None else None
    if ts is not None and occurred is None:
        return fail("invalid_ts", "ts must be an ISO 8601 time or epoch seconds.")
    dedupe = f"key:{key}" if key else ""
    if kind == "board.post":
        if not isinstance(payload.get("topic"), str) or not payload["topic"]:
            return fail("invalid_board_post", "A board.post payload needs a non-empty topic.")
        entry_id = payload.get("id") or key or _content_hash(item)[:32]
        payload = {**payload, "id": str(entry_id), "ts": payload.get("ts", ts if isinstance(ts, int | float) else None)}
        dedupe = dedupe or f"board:{entry_id}"
    elif kind == "digest":
        record = payload.get("record")
        sha, error = check_digest(record, payload.get("sha"))
        if error:
            return fail("digest_sha_mismatch" if sha else "invalid_digest", error)
        payload = {"sha": sha, "record": record}
        dedupe = dedupe or f"digest:{sha}"
    elif kind == "state.delta":
        if payload.get("op") not in DELTA_OPS or not isinstance(payload.get("path"), str):
            return fail("invalid_delta", "A state.delta payload needs op (add|modify|remove) and a JSONPath string path.")
    elif kind == "memory.write":
        if not isinstance(payload.get("content"), str) or payload.get("target", "daily") not in ("daily", "long_term"):
            return fail("invalid_memory_write", "A memory.write payload needs content (string) and target daily|long_term.")
    dedupe = dedupe or f"hash:{_content_hash(item)}"
    try:
        data = payload_json(payload)  # serialised once, here: ingest copies these bytes into the ledger as they are
    except PayloadNotStorable as exc:
        return fail("invalid_payload", str(exc))
    spec = EventSpec(kind=kind, dedupe_key=dedupe[:300], payload=payload, agent_id=agent, iteration=iteration, depth=depth, occurred_at=occurred, payload_bytes=data, ts_source="record" if occurred else "received")
    return spec, None


BATCH_FIELDS = frozenset({"run_id", "events", "experiment"})  # a push body's fields (experiments.api.IngestIn)


def batch_head_ok(run_id: Any, slug: Any) -> bool:
    """Whether a push body's run id and experiment slug are what IngestIn takes."""
    return type(run_id) is str and 1 <= len(run_id) <= 200 and (slug is None or type(slug) is str)


def quick_batch(body: bytes, *, max_events: int) -> tuple[str, str | None, int] | None:
    """(run_id, experiment slug or None, number of events) of a push body that passes every refusal of the full
    reader and holds 1..max_events objects with known kinds, read without building it
    (awp_site.jsonbody.read_unbuilt); None when it needs the full reading and validation."""
    return read_unbuilt(body, lambda document: _batch_head(document, max_events))


def _batch_head(document: Any, max_events: int) -> tuple[str, str | None, int] | None:
    if not isinstance(document, simdjson.Object):
        return None
    keys = list(document.keys())  # a repeated key: orjson would read the last, simdjson the first
    if len(keys) != len(set(keys)) or not BATCH_FIELDS.issuperset(keys):
        return None
    run_id, events, slug = document.get("run_id"), document.get("events"), document.get("experiment")
    if not batch_head_ok(run_id, slug) or not isinstance(events, simdjson.Array) or not 1 <= len(events) <= max_events:
        return None
    for item in events:
        kind = item.get("kind") if isinstance(item, simdjson.Object) else None
        if type(kind) is not str or not kind_allowed(kind):
            return None
    return run_id, slug, len(events)


def validate_batch(items: list[Any]) -> tuple[list[EventSpec], list[ItemError]]:
    """All items → specs, or every item's error (a batch is all or nothing)."""
    specs: list[EventSpec] = []
    errors: list[ItemError] = []
    for index, item in enumerate(items):
        spec, error = validate_item(index, item)
        if error:
            errors.append(error)
        elif spec:
            specs.append(spec)
    return specs, errors
