"""A JSONPath subset for state deltas: `$.a.b`, `$['key with.dots']`, `$.list[3]`, `$.list[-1]` (pure).

A parsed path is a tuple of segments: `str` for an object key, `int` for a list index. `format_path`
gives the one normalized spelling of a path, so `parse_path(format_path(p)) == p` for every path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

Segment = str | int
Path = tuple[Segment, ...]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_INDEX = re.compile(r"-?[0-9]+")
_MISSING = object()
_ABSENT = object()


class PathError(ValueError):
    """A path that cannot be parsed, or cannot be followed in a given document."""

    code = "invalid_path"


class PathNotFound(PathError):
    """The path leads nowhere in this document."""

    code = "path_missing"


class PathExists(PathError):
    """`add` met a key that is already there."""

    code = "path_exists"


@lru_cache(maxsize=65536)
def parse_path(text: str) -> Path:
    """Parse a JSONPath of the subset into segments; cached, because a run repeats a few paths many times."""
    return tuple(scan_segments(text))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Wildcard:
    """An unquoted `*` (one key or index) or `**` (any depth) in a path pattern; a quoted `['*']` is a plain key."""

    text: str


STAR, DEEP = Wildcard("*"), Wildcard("**")
_WILDCARD = re.compile(r"\*\*?")


def scan_segments(text: str, *, wildcards: bool = False) -> list[Segment | Wildcard]:
    """The segments of a path (`wildcards`: also `.*`, `.**`, `[*]`, `[**]` as STAR and DEEP, for patterns)."""
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathError(f"A path must start with '$' (got {text!r}).")
    segments: list[Segment | Wildcard] = []
    pos, end = 1, len(text)
    while pos < end:
        char = text[pos]
        star = _WILDCARD.match(text, pos + 1) if wildcards and char in ".[" else None
        if star and (char == "." or text[star.end() : star.end() + 1] == "]"):
            segments.append(STAR if star.group() == "*" else DEEP)
            pos = star.end() + (char == "[")
        elif char == ".":
            match = _NAME.match(text, pos + 1)
            if not match:
                raise PathError(f"Expected a key name after '.' at position {pos + 1} of {text!r}; use $['…'] for other keys.")
            segments.append(match.group())
            pos = match.end()
        elif char == "[":
            segment, pos = _parse_bracket(text, pos + 1)
            segments.append(segment)
        else:
            raise PathError(f"Unexpected {char!r} at position {pos} of {text!r}.")
    return segments


def _parse_bracket(text: str, pos: int) -> tuple[Segment, int]:
    if pos < len(text) and text[pos] in "'\"":
        quote, out, pos = text[pos], [], pos + 1
        while pos < len(text) and text[pos] != quote:
            if text[pos] == "\\" and pos + 1 < len(text):
                pos += 1
            out.append(text[pos])
            pos += 1
        if text[pos : pos + 2] != quote + "]":
            raise PathError(f"Unterminated quoted key in {text!r}: close it with {quote}].")
        return "".join(out), pos + 2
    match = _INDEX.match(text, pos)
    if not match or text[match.end() : match.end() + 1] != "]":
        raise PathError(f"Expected a list index or a quoted key inside [] at position {pos} of {text!r}.")
    return int(match.group()), match.end() + 1


def format_segment(segment: Segment) -> str:
    """One segment in its normalized spelling."""
    if isinstance(segment, int):
        return f"[{segment}]"
    if _NAME.fullmatch(segment):
        return f".{segment}"
    escaped = segment.replace("\\", "\\\\").replace("'", "\\'")
    return f"['{escaped}']"


def format_path(path: Path) -> str:
    """The normalized spelling of a parsed path."""
    return "$" + "".join(format_segment(segment) for segment in path)


def normalize_path(text: str) -> str:
    """Parse and re-format, so equal paths compare equal as strings (`$["a"]` → `$.a`)."""
    return format_path(parse_path(text))


def _step(node: Any, segment: Segment) -> Any:
    if isinstance(segment, int):
        if isinstance(node, list) and -len(node) <= segment < len(node):
            return node[segment]
        return _MISSING
    if isinstance(node, dict):
        return node.get(segment, _MISSING)
    return _MISSING


def get_path(document: Any, path: Path, default: Any = _MISSING) -> Any:
    """The value at `path`; raises PathNotFound unless a default is given."""
    node = document
    for segment in path:
        node = _step(node, segment)
        if node is _MISSING:
            if default is _MISSING:
                raise PathNotFound(f"{format_path(path)} does not exist.")
            return default
    return node


def has_path(document: Any, path: Path) -> bool:
    """Whether `path` leads to a value."""
    return get_path(document, path, default=_ABSENT) is not _ABSENT


def _parent(document: Any, path: Path, *, create: bool) -> Any:
    """The container holding the last segment; `create` makes missing intermediate objects."""
    node = document
    for depth, segment in enumerate(path[:-1]):
        child = _step(node, segment)
        if child is _MISSING:
            if not (create and isinstance(node, dict) and isinstance(segment, str)):
                raise PathNotFound(f"{format_path(path[: depth + 1])} does not exist.")
            child = node[segment] = {}
        node = child
    return node


def set_path(document: dict[str, Any], path: Path, value: Any, *, create: bool = True) -> None:
    """Write `value` at `path` in place (object keys are created or replaced; list indices replaced)."""
    if not path:
        raise PathError("The root '$' cannot be written; name a key.")
    parent, last = _parent(document, path, create=create), path[-1]
    if isinstance(parent, dict) and isinstance(last, str):
        parent[last] = value
    elif isinstance(parent, list) and isinstance(last, int) and -len(parent) <= last < len(parent):
        parent[last] = value
    else:
        raise PathNotFound(f"{format_path(path)} cannot be written: its parent is not a matching object or list.")


def insert_path(document: dict[str, Any], path: Path, value: Any) -> None:
    """`add`: create a new object key (error if present) or insert into a list at index 0..len."""
    if not path:
        raise PathError("The root '$' cannot be written; name a key.")
    parent, last = _parent(document, path, create=True), path[-1]
    if isinstance(parent, dict) and isinstance(last, str):
        if last in parent:
            raise PathExists(f"{format_path(path)} already exists; use op 'modify' to change it.")
        parent[last] = value
    elif isinstance(parent, list) and isinstance(last, int) and 0 <= last <= len(parent):
        parent.insert(last, value)
    else:
        raise PathNotFound(f"{format_path(path)} cannot be added: its parent is not a matching object or list.")


def remove_path(document: dict[str, Any], path: Path) -> Any:
    """Remove and return the value at `path`; raises PathNotFound when absent."""
    if not path:
        raise PathError("The root '$' cannot be removed.")
    parent, last = _parent(document, path, create=False), path[-1]
    if isinstance(parent, dict) and isinstance(last, str) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list) and isinstance(last, int) and -len(parent) <= last < len(parent):
        return parent.pop(last)
    raise PathNotFound(f"{format_path(path)} does not exist.")
