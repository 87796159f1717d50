"""Payload text for Postgres jsonb (pure): fast serialisation, and a clear refusal of what jsonb cannot hold."""

from __future__ import annotations

from typing import Any

import orjson


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
