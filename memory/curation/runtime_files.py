"""Readers of the runtime curator's files: memory/tools/*.md, memory/facts/*.md, memory/antipatterns/*.md (pure)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^## v(\d+)\s*$")
_TITLE = re.compile(r"^# Tool Recipe:\s*(.+?)\s*$")
_FACT_LINE = re.compile(r"^- \[([^\]]*)\]\s?(.*)$")
_FACTS_HEADER = re.compile(r"^# Facts \((\d{4}-\d{2}-\d{2})\)\s*$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class ToolVersion:
    """One `## vN` section of a tool recipe file."""

    name: str
    version: int
    content_hash: str
    created_by: str
    created_at: str
    run_id: str
    purpose: str
    parameters: str


@dataclass(frozen=True)
class FactLine:
    """One `- [<run_id>] <fact>` line of a facts day file."""

    day: str
    run_id: str
    text: str
    line: str


@dataclass(frozen=True)
class AntipatternFile:
    """One memory/antipatterns/<sha16>.md file."""

    sha: str
    run_id: str
    iteration: int | None
    reason: str
    signature: str
    instructions: str


def _stem(relpath: str) -> str:
    name = relpath.replace("\\", "/").rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".md") else name


def _bullets(lines: list[str]) -> dict[str, str]:
    """`- key: value` lines (first occurrence wins)."""
    out: dict[str, str] = {}
    for line in lines:
        if line.startswith("- ") and ":" in line:
            key, value = line[2:].split(":", 1)
            out.setdefault(key.strip(), value.strip())
    return out


def _subsection(lines: list[str], title: str) -> list[str]:
    """The lines under `### <title>` up to the next heading of level ≤3."""
    out: list[str] = []
    inside = False
    for line in lines:
        if line.strip().lower().startswith("### "):
            if inside:
                break
            inside = line.strip()[4:].strip().lower().startswith(title.lower())
            continue
        if inside:
            out.append(line)
    return out


def parse_tool_recipe(relpath: str, content: str) -> list[ToolVersion]:
    """Every version section of a tool recipe; the name comes from the title, else the file name."""
    lines = content.splitlines()
    name = _stem(relpath)
    for line in lines:
        match = _TITLE.match(line)
        if match:
            name = match.group(1)
            break
    sections: list[tuple[int, list[str]]] = []
    for line in lines:
        match = _VERSION.match(line)
        if match:
            sections.append((int(match.group(1)), []))
        elif sections:
            sections[-1][1].append(line)
    versions: list[ToolVersion] = []
    for number, body in sections:
        fields = _bullets(body)
        purpose = next((s.strip() for s in _subsection(body, "Purpose") if s.strip()), "")
        parameters = "\n".join(_subsection(body, "Parameters")).strip()
        if parameters.startswith("```"):
            parameters = "\n".join(parameters.splitlines()[1:-1]).strip()
        versions.append(
            ToolVersion(
                name=name,
                version=number,
                content_hash=fields.get("content_hash", ""),
                created_by=fields.get("created_by", ""),
                created_at=fields.get("created_at", ""),
                run_id=fields.get("run_id", ""),
                purpose="" if purpose == "(no description)" else purpose,
                parameters=parameters,
            )
        )
    return versions


def parse_facts_file(relpath: str, content: str) -> list[FactLine]:
    """The fact lines of a facts day file (the day comes from the header, else the file name)."""
    day = _stem(relpath) if _DAY.match(_stem(relpath)) else ""
    facts: list[FactLine] = []
    for raw in content.splitlines():
        header = _FACTS_HEADER.match(raw)
        if header:
            day = header.group(1)
            continue
        line = raw.strip()
        match = _FACT_LINE.match(line)
        if match and match.group(2).strip():
            facts.append(FactLine(day=day, run_id=match.group(1).strip(), text=match.group(2).strip(), line=line))
    return facts


def parse_antipattern(relpath: str, content: str) -> AntipatternFile:
    """An antipattern file's fields; the excerpt is the text under `## Instructions Excerpt`."""
    lines = content.splitlines()
    sha = _stem(relpath)
    for line in lines:
        if line.startswith("# Antipattern "):
            sha = line[len("# Antipattern ") :].strip() or sha
            break
    fields = _bullets(lines)
    excerpt: list[str] = []
    inside = False
    for line in lines:
        if line.startswith("## "):
            inside = line[3:].strip().lower().startswith("instructions")
            continue
        if inside:
            excerpt.append(line)
    iteration = fields.get("iteration", "")
    return AntipatternFile(
        sha=sha,
        run_id=fields.get("run_id", ""),
        iteration=int(iteration) if iteration.isdigit() else None,
        reason=fields.get("reason", "unknown") or "unknown",
        signature=fields.get("signature", ""),
        instructions="\n".join(excerpt).strip(),
    )
