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
    if b"\\u0000" in data and _has_nul(payload):
        raise PayloadNotStorable("the payload contains a NUL character (\\u0000), which Postgres jsonb cannot store")
    return data


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False
