"""Redaction of sensitive fields (R14), pure: JSON in, JSON out, at any depth of nesting."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "[redacted]"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def normalise_key(key: str) -> str:
    """apiKey, Api-Key and API_KEY all become api_key."""
    return _CAMEL.sub("_", key).lower().replace("-", "_").replace(" ", "_")


def is_sensitive(key: str, sensitive: frozenset[str]) -> bool:
    """A key is sensitive when its words contain a sensitive name: openai_api_key yes, max_tokens no."""
    name = f"_{normalise_key(key)}_"
    return any(f"_{word}_" in name for word in sensitive)


def sensitive_set(names: Iterable[str]) -> frozenset[str]:
    """Normalise a list of sensitive field names for `redact`."""
    return frozenset(normalise_key(name) for name in names if name)


_PATH_WORD = re.compile(r"[A-Za-z_][\w-]*")


def redact(value: Any, sensitive: frozenset[str]) -> Any:
    """Return a copy of `value` with the value of every sensitive key replaced by REDACTED."""
    if isinstance(value, dict):
        out = {k: (REDACTED if is_sensitive(str(k), sensitive) else redact(v, sensitive)) for k, v in value.items()}
        # A delta names its field in `path`, not as a key: {"path": "$.vault.api_key", "value": "sk-…"}.
        path = value.get("path")
        if isinstance(path, str) and "value" in out and any(is_sensitive(w, sensitive) for w in _PATH_WORD.findall(path)):
            out["value"] = REDACTED
        return out
    if isinstance(value, list):
        return [redact(item, sensitive) for item in value]
    return value


_TEXT_FIELD = re.compile(r"""(?P<key>[*_"'`]*(?P<name>[A-Za-z_][\w-]*)[*_"'`]*\s*[:=]\s*)(?P<value>[^\n,}]+)""")


def redact_text(text: str, sensitive: frozenset[str]) -> str:
    """Mask the value of `key: value` / `**key**: value` / `"key": "value"` / `key=value` in free text."""

    def mask(match: re.Match[str]) -> str:
        if not is_sensitive(match.group("name"), sensitive):
            return match.group(0)
        return match.group("key") + REDACTED

    return _TEXT_FIELD.sub(mask, text)


def path_is_sensitive(segments: Iterable[str | int], sensitive: frozenset[str]) -> bool:
    """Whether any key on a path is sensitive (then everything below it is too)."""
    return any(isinstance(segment, str) and is_sensitive(segment, sensitive) for segment in segments)


def redact_at(segments: Iterable[str | int], value: Any, sensitive: frozenset[str]) -> Any:
    """Redact a value found at a path: whole when the path itself is sensitive, else key by key."""
    if path_is_sensitive(segments, sensitive):
        return REDACTED
    return redact(value, sensitive)
