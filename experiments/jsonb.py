"""Payload text for Postgres jsonb (pure): fast serialisation, a clear refusal of what jsonb cannot hold, and the
one reading of a JSON document held in a text (a tool's arguments, a model's answer, a worker's output)."""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

# How deep a JSON document may nest: request bodies (awp_site.jsonbody) and documents read out of texts alike, so
# every recursive step after the reading (redaction, detection, projections) stays far from Python's recursion limit.
MAX_DEPTH = 100


class PayloadNotStorable(ValueError):
    """A payload Postgres' jsonb cannot hold (a NUL character, a lone surrogate)."""


def payload_json(payload: dict[str, Any]) -> bytes:
    """Serialise a payload for jsonb, or raise PayloadNotStorable with the reason."""
    try:
        data = orjson.dumps(payload, default=str, option=orjson.OPT_NON_STR_KEYS)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise PayloadNotStorable(f"the payload cannot be stored as JSON ({exc})") from None
    if b"\\u0000" in data and holds_nul(payload):
        raise PayloadNotStorable("the payload contains a NUL character (\\u0000), which Postgres jsonb cannot store")
    return data


def holds_nul(value: object) -> bool:
    """Whether any string (key or value) in a JSON document contains U+0000 (iterative: no recursion limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def holds_non_finite(value: object) -> bool:
    """Whether a JSON document holds a NaN or an infinite float (orjson writes them as null; iterative)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def json_document(text: str, *, allow_nan: bool = True) -> dict[str, Any] | list[Any] | None:
    """The object or array a text holds as JSON, or None: not JSON, a scalar, nested deeper than MAX_DEPTH, or
    (allow_nan=False) holding NaN/Infinity. Any text may come from outside: nothing here raises for its shape."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or stripped[-1:] not in ("}", "]"):
        return None
    try:
        document = json.loads(stripped) if allow_nan else json.loads(stripped, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict | list):
        return None
    if nests_deeper_than(document, MAX_DEPTH, containers=stripped.count("{") + stripped.count("[")):
        return None
    return document


def _refuse_constant(literal: str) -> Any:
    raise ValueError(f"{literal} is not a JSON number")


def nests_deeper_than(value: Any, limit: int, *, containers: int) -> bool:
    """Whether arrays/objects nest deeper than `limit`: level by level, containers only (skipped when the text
    has too few brackets to be that deep). About as long as orjson's own parse of the text."""
    if containers <= limit or (type(value) is not dict and type(value) is not list):
        return False
    level, depth = [value], 1
    while level:
        if depth > limit:
            return True
        deeper: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            deeper.extend([child for child in children if type(child) is dict or type(child) is list])
        level, depth = deeper, depth + 1
    return False
