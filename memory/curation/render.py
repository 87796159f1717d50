"""Text the curation layer writes: MEMORY.md sections, the PRIOR RUN MEMORY block, facts day files (pure)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

SECTION_TITLES = {"fact": "Facts", "tool": "Tool Recipes", "antipattern": "Antipatterns", "reflection": "Reflections"}
PRIOR_CAP = 3000
TRUNCATED = "\n… (truncated)"
MARKER = re.compile(r"<!-- proposal:(\d+)(?: v\d+)? -->")
_FACT_LINE = re.compile(r"^- \[([^\]]*)\]\s?(.*)$")


def one_line(text: str) -> str:
    """Collapse whitespace so a promoted item is exactly one Markdown line."""
    return " ".join(str(text).split())


def promoted_line(*, text: str, proposal_id: int, version: int) -> str:
    """A MEMORY.md bullet traceable to its proposal through an HTML comment."""
    return f"- {one_line(text)} <!-- proposal:{proposal_id} v{version} -->"


def marked_proposals(content: str) -> set[int]:
    """Proposal ids that have a line in this MEMORY.md."""
    return {int(match.group(1)) for match in MARKER.finditer(content)}


def _is_marked(line: str, proposal_id: int) -> bool:
    return any(int(m.group(1)) == proposal_id for m in MARKER.finditer(line))


def remove_promoted(content: str, proposal_id: int) -> str:
    """MEMORY.md without the line(s) of one proposal; everything else stays byte for byte."""
    lines = content.splitlines(keepends=True)
    return "".join(line for line in lines if not _is_marked(line, proposal_id))


def upsert_promoted(content: str, *, kind: str, proposal_id: int, line: str) -> str:
    """MEMORY.md with `line` replacing the proposal's line, or appended to its kind's `## ` section."""
    lines = content.splitlines()
    for index, existing in enumerate(lines):
        if _is_marked(existing, proposal_id):
            lines[index] = line
            return "\n".join(lines) + "\n"
    heading = f"## {SECTION_TITLES[kind]}"
    if heading not in (existing.strip() for existing in lines):
        body = "\n".join(lines).rstrip("\n")
        prefix = "# MEMORY\n" if not body.strip() else body + "\n"
        return f"{prefix}\n{heading}\n{line}\n"
    start = next(i for i, existing in enumerate(lines) if existing.strip() == heading)
    end = start + 1
    while end < len(lines) and not lines[end].startswith("#"):
        end += 1
    insert_at = end
    while insert_at > start + 1 and not lines[insert_at - 1].strip():
        insert_at -= 1
    lines.insert(insert_at, line)
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class PriorItems:
    """Promoted items for the prior-run block: (name, purpose), (run_id, fact), (reason, key, excerpt),
    and subscribed pool facts (label, statement), newest version only."""

    tools: list[tuple[str, str]]
    facts: list[tuple[str, str]]
    antipatterns: list[tuple[str, str, str]]
    shared: list[tuple[str, str]] = field(default_factory=list)


def prior_block(items: PriorItems, *, max_chars: int = PRIOR_CAP) -> str:
    """The `## PRIOR RUN MEMORY` block (empty when nothing is promoted), at most `max_chars` long."""
    if not (items.tools or items.facts or items.antipatterns or items.shared):
        return ""
    out = ["## PRIOR RUN MEMORY", f"### Known Tools ({len(items.tools)})"]
    out += [f"- {name}: {one_line(purpose)[:160]}" for name, purpose in items.tools] or ["(none)"]
    out += ["", f"### Confirmed Facts ({len(items.facts)})"]
    out += [f"- [{run_id}] {one_line(fact)}" for run_id, fact in items.facts] or ["(none)"]
    out += ["", f"### Antipatterns to Avoid ({len(items.antipatterns)})"]
    out += [f"- [{reason}] {key}: {one_line(excerpt)[:120]}" for reason, key, excerpt in items.antipatterns] or ["(none)"]
    if items.shared:  # the shared pool's part, only for experiments that subscribe (and within the same cap)
        out += ["", f"### Shared Facts ({len(items.shared)})"]
        out += [f"- [{label}] {one_line(statement)}" for label, statement in items.shared]
    block = "\n".join(out)
    if len(block) > max_chars:
        block = block[: max(0, max_chars - len(TRUNCATED))].rstrip() + TRUNCATED
    return block[:max_chars]


def fact_file_line(run_id: str, text: str) -> str:
    """A facts day-file line, as the runtime's PRIOR RUN MEMORY reader expects it."""
    return f"- [{run_id}] {one_line(text)}"


def fact_text_of(line: str) -> str | None:
    """The fact text of a `- [<run_id>] <fact>` line, or None for any other line."""
    match = _FACT_LINE.match(line.strip())
    return match.group(2).strip() if match else None


def sync_facts_files(
    files: dict[str, str],
    *,
    today: str,
    window: Iterable[str],
    promoted: list[tuple[str, str]],
    removed: set[str],
) -> dict[str, str]:
    """Changed day files (name → text): lines of `removed` facts dropped, missing promoted facts added to today.

    `files` maps day (YYYY-MM-DD) to current text; `window` lists the days the runtime still reads. Lines
    the runtime wrote are kept unless their fact is one the reviewers rejected or retracted.
    """
    changed: dict[str, str] = {}
    present: set[str] = set()
    window_days = set(window)
    for day, text in sorted(files.items()):
        kept = [line for line in text.splitlines() if (fact_text_of(line) or "\0") not in removed]
        if len(kept) != len(text.splitlines()):
            changed[day] = "\n".join(kept) + "\n"
        if day in window_days:
            present |= {fact_text_of(line) or "" for line in kept}
    missing = [(run_id, text) for run_id, text in promoted if one_line(text) not in present and one_line(text) not in removed]
    if missing:
        base = changed.get(today, files.get(today))
        lines = base.splitlines() if base is not None else [f"# Facts ({today})"]
        for run_id, text in missing:
            line = fact_file_line(run_id, text)
            if line not in lines:
                lines.append(line)
        changed[today] = "\n".join(lines) + "\n"
    return changed


def merge_memory_md(disk: str | None, ours: str, previously_written: str) -> str:
    """The workspace MEMORY.md to write: ours, plus lines someone else (the runtime) added since we last wrote."""
    if disk is None:
        return ours
    known = set(ours.splitlines()) | set(previously_written.splitlines())
    extra = [line for line in disk.splitlines() if line.strip() and line not in known and not MARKER.search(line)]
    if not extra:
        return ours
    return ours.rstrip("\n") + "\n\n" + "\n".join(extra) + "\n"
