"""Tail append-only JSONL files by byte offset, consuming only complete lines."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JsonlLine:
    """One complete line: its byte offset, 1-based line number when known, and the parsed value or an error."""

    offset: int
    value: Any
    error: str | None = None


@dataclass(frozen=True)
class TailResult:
    lines: list[JsonlLine]
    next_offset: int
    truncated: bool = False  # the file is now shorter than the stored offset (rewritten in place)
    pending_bytes: int = 0  # bytes after the last newline, not consumed yet


def parse_lines(data: bytes, base_offset: int) -> tuple[list[JsonlLine], int]:
    """Split `data` into complete lines (up to the last newline); return them and the bytes consumed."""
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    lines: list[JsonlLine] = []
    position = 0
    while position <= end:
        newline = data.index(b"\n", position)
        raw = data[position:newline]
        offset = base_offset + position
        position = newline + 1
        if not raw.strip():
            continue
        try:
            lines.append(JsonlLine(offset=offset, value=json.loads(raw.decode("utf-8"))))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            lines.append(JsonlLine(offset=offset, value=None, error=f"not valid JSON: {exc}"))
    return lines, end + 1


def tail_jsonl(path: Path, offset: int) -> TailResult:
    """Read complete lines of `path` from byte `offset`; a file shorter than `offset` is reported as truncated."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return TailResult(lines=[], next_offset=offset)
    if size < offset:
        return TailResult(lines=[], next_offset=offset, truncated=True)
    if size == offset:
        return TailResult(lines=[], next_offset=offset)
    with path.open("rb") as handle:
        handle.seek(offset)
        data = handle.read(size - offset)
    lines, consumed = parse_lines(data, offset)
    return TailResult(lines=lines, next_offset=offset + consumed, pending_bytes=len(data) - consumed)
