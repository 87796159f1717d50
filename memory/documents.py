"""Pure helpers for MEMORY.md text: sections for search, line diffs between versions, injection truncation."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """A piece of MEMORY.md under one heading (the heading line included)."""

    heading: str
    content: str

    @property
    def key(self) -> str:
        """Content address: an unchanged section keeps its key (and its embedding) across versions."""
        return hashlib.sha256(self.content.encode()).hexdigest()[:24]


@dataclass(frozen=True)
class DiffLine:
    """One line of a diff: op is ' ' (same), '+' (added), '-' (removed) or '@' (hunk header)."""

    op: str
    text: str


def split_sections(text: str, max_chars: int = 1500) -> list[Section]:
    """Cut Markdown at headings; long sections are cut again at blank lines so each stays embeddable."""
    sections: list[Section] = []
    heading = ""
    lines: list[str] = []

    def flush() -> None:
        body = "\n".join(lines).strip()
        if not body:
            return
        for piece in _cut(body, max_chars):
            sections.append(Section(heading, piece))

    for line in text.splitlines():
        if line.startswith("#"):
            flush()
            heading, lines = line.lstrip("#").strip(), [line]
        else:
            lines.append(line)
    flush()
    return sections


def _cut(body: str, max_chars: int) -> list[str]:
    if len(body) <= max_chars:
        return [body]
    pieces, current = [], ""
    for paragraph in body.split("\n\n"):
        if current and len(current) + len(paragraph) + 2 > max_chars:
            pieces.append(current)
            current = ""
        current = f"{current}\n\n{paragraph}" if current else paragraph
        while len(current) > max_chars:
            pieces.append(current[:max_chars])
            current = current[max_chars:]
    if current.strip():
        pieces.append(current)
    return pieces


def diff_lines(old: str, new: str, context: int = 3) -> list[DiffLine]:
    """The line diff turning `old` into `new` (unified, with `context` lines around each change)."""
    raw = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=context)
    result = []
    for line in raw:
        if line.startswith(("---", "+++")):
            continue
        op = "@" if line.startswith("@@") else line[:1] or " "
        result.append(DiffLine(op, line if op == "@" else line[1:]))
    return result


def truncate_for_injection(text: str, max_chars: int) -> str:
    """MEMORY.md as injected into a prompt: cut to `max_chars` characters (the protocol's long_term_max_tokens)."""
    return text if max_chars <= 0 or len(text) <= max_chars else text[:max_chars]
