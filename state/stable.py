"""Stable paths: JSONPath patterns whose values are identities once set (pure).

A pattern is a path of the subset in state/paths.py where an unquoted `*` stands for one key or list index and
`**` for any depth (zero or more segments; at the end of a pattern one or more, so `$.a.**` is everything
below `$.a`). A quoted key is always literal: `$['*']` is the key "*", `$['a.b']` the key "a.b".

A value at a concrete path the patterns cover is *set* when it is present and not null; once set it may not
change. `identity_changes` says which set values one write would change, comparing JSON values strictly
(`1`, `1.0` and `true` differ), so writing the same value again is no change.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from state.paths import (
    DEEP,
    STAR,
    Path,
    PathError,
    Segment,
    Wildcard,
    format_path,
    format_segment,
    get_path,
    scan_segments,
)

Pattern = tuple[Segment | Wildcard, ...]
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()


class PatternError(PathError):
    """A stable-path pattern that cannot be parsed."""

    code = "invalid_stable_path"


def parse_pattern(text: str) -> Pattern:
    """Parse a stable-path pattern into segments (STAR / DEEP for the unquoted wildcards)."""
    try:
        pattern = tuple(scan_segments(text, wildcards=True))
    except PathError as exc:
        raise PatternError(f"Stable path {text!r}: {exc}") from None
    if not pattern:
        raise PatternError(f"Stable path {text!r} names the whole state; name the keys below '$' whose values are identities.")
    return pattern


def format_pattern(pattern: Pattern) -> str:
    """The normalized spelling of a pattern."""
    return "$" + "".join(f".{segment.text}" if isinstance(segment, Wildcard) else format_segment(segment) for segment in pattern)


def matches(pattern: Pattern, path: Path) -> bool:
    """Whether the concrete `path` is one the pattern names."""
    return _match(pattern, 0, path, 0)


def _match(pattern: Pattern, i: int, path: Path, j: int) -> bool:
    if i == len(pattern):
        return j == len(path)
    segment = pattern[i]
    if segment == DEEP:
        if i == len(pattern) - 1:
            return j < len(path)
        return any(_match(pattern, i + 1, path, k) for k in range(j, len(path) + 1))
    if j == len(path):
        return False
    if segment == STAR or (type(segment) is type(path[j]) and segment == path[j]):
        return _match(pattern, i + 1, path, j + 1)
    return False


def may_match_below(pattern: Pattern, prefix: Path) -> bool:
    """Whether some path strictly below `prefix` could match the pattern (to skip walking values that cannot)."""
    return _below(pattern, 0, prefix, 0)


def _below(pattern: Pattern, i: int, prefix: Path, j: int) -> bool:
    if j == len(prefix):
        return i < len(pattern)
    if i == len(pattern):
        return False
    segment = pattern[i]
    if segment == DEEP:
        return _below(pattern, i + 1, prefix, j) or _below(pattern, i, prefix, j + 1)
    if segment == STAR or (type(segment) is type(prefix[j]) and segment == prefix[j]):
        return _below(pattern, i + 1, prefix, j + 1)
    return False


def same_json(a: Any, b: Any) -> bool:
    """JSON equality: 1, 1.0 and true are different values (Python's == says they are equal)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True)
class IdentityChange:
    """A set value at a stable path that a write would change (`new` is ABSENT when it would be removed)."""

    path: str
    old: Any
    new: Any

    @property
    def is_removal(self) -> bool:
        return self.new is ABSENT


@dataclass(frozen=True)
class StablePaths:
    """The protocol's `state.stable_paths`, parsed."""

    patterns: tuple[Pattern, ...] = ()

    @classmethod
    def from_config(cls, raw: Any) -> StablePaths:
        """Read `state.stable_paths` (a list of patterns); raises PatternError on a bad one."""
        if raw is None:
            return cls()
        items = raw
        if not isinstance(items, list | tuple) or not all(isinstance(item, str) for item in items):
            raise PatternError("state.stable_paths must be a list of JSONPath patterns such as \"$.bindings.*\".")
        return cls(tuple(parse_pattern(item) for item in items))

    def __bool__(self) -> bool:
        return bool(self.patterns)

    @property
    def texts(self) -> list[str]:
        return [format_pattern(pattern) for pattern in self.patterns]

    def covers(self, path: Path) -> bool:
        """Whether `path` is a stable path."""
        return any(matches(pattern, path) for pattern in self.patterns)

    def covers_below(self, prefix: Path) -> bool:
        return any(may_match_below(pattern, prefix) for pattern in self.patterns)

    def identity_changes(self, before: dict[str, Any], path: Path, after: dict[str, Any]) -> list[IdentityChange]:
        """Set stable values at `path`, above it or below it in `before` that differ in `after` (the same write's result)."""
        if not self.patterns:
            return []
        found: list[IdentityChange] = []
        candidates = [path[:n] for n in range(1, len(path) + 1)]
        old_here = get_path(before, path, default=ABSENT)
        if old_here is not ABSENT and self.covers_below(path):
            candidates += list(self._below(old_here, path))
        for candidate in candidates:
            if not self.covers(candidate):
                continue
            old = get_path(before, candidate, default=ABSENT)
            if old is ABSENT or old is None:
                continue
            new = get_path(after, candidate, default=ABSENT)
            if not same_json(old, new):
                found.append(IdentityChange(format_path(candidate), old, new))
        return found

    def _below(self, value: Any, prefix: Path) -> Iterator[Path]:
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in items:
            path = (*prefix, key)
            yield path
            if self.covers_below(path):
                yield from self._below(child, path)
