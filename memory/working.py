"""Daily log parsing (workspace/memory/YYYY-MM-DD.md) and retention: pure functions, no Django."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, time, timedelta

# `### 22:40:13` (memory.write target=daily) or `### 22:40:13 -- researcher (confidence: 0.9)` (DAG auto-log).
_HEADING = re.compile(
    r"^###\s+(?P<time>\d{1,2}:\d{2}(?::\d{2})?)"
    r"(?:\s+--\s+(?P<agent>.+?)(?:\s+\(confidence:\s*(?P<confidence>[-+0-9.eE]+)\))?)?\s*$"
)
_DAY_FILE = re.compile(r"(?:^|/)(?P<day>\d{4}-\d{2}-\d{2})\.md$")
MIN_RETENTION_DAYS = 30


@dataclass(frozen=True)
class DailyEntry:
    """One entry of a daily log: its time, agent and confidence when the heading names them, its body."""

    index: int
    time: time | None
    agent_id: str
    confidence: float | None
    content: str

    def dedupe_key(self, relpath: str) -> str:
        """A key stable across re-reads of an append-only file, so importing it again adds nothing."""
        digest = hashlib.sha256(self.content.encode()).hexdigest()[:16]
        stamp = self.time.isoformat() if self.time else "-"
        return f"file:{relpath}:{self.index}:{stamp}:{digest}"


def day_of_path(relpath: str) -> date | None:
    """The calendar day a daily log path names (`…/memory/2026-03-23.md`), or None."""
    match = _DAY_FILE.search(relpath)
    if not match:
        return None
    try:
        return date.fromisoformat(match["day"])
    except ValueError:
        return None


def _parse_time(text: str) -> time | None:
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 2:
        parts.append(0)
    hour, minute, second = parts
    if hour > 23 or minute > 59 or second > 59:
        return None
    return time(hour, minute, second)


def _parse_confidence(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None


def parse_daily_log(text: str) -> list[DailyEntry]:
    """Split a daily log into entries at `### HH:MM:SS[ -- agent (confidence: x)]` headings.

    Text before the first heading (e.g. a `# 2026-03-23` title) becomes an entry without a time
    when it carries more than a title, so nothing in the file is silently dropped.
    """
    entries: list[DailyEntry] = []
    head: tuple[time | None, str, float | None] | None = None
    body: list[str] = []
    preamble: list[str] = []

    def flush() -> None:
        if head is None:
            return
        content = "\n".join(body).strip()
        if content or head[1]:
            entries.append(DailyEntry(len(entries), head[0], head[1], head[2], content))

    for line in text.splitlines():
        match = _HEADING.match(line.strip())
        if match:
            flush()
            head = (_parse_time(match["time"]), (match["agent"] or "").strip(), _parse_confidence(match["confidence"]))
            body = []
        elif head is None:
            preamble.append(line)
        else:
            body.append(line)
    flush()
    loose = "\n".join(line for line in preamble if not line.lstrip().startswith("# ")).strip()
    if loose:
        entries.insert(0, DailyEntry(-1, None, "", None, loose))
    return entries


def retention_days(memory_config: dict) -> int:
    """Days of working memory kept visible: the protocol's retention_days, never under 30."""
    tiers = memory_config.get("tiers") or {}
    candidates = [
        (tiers.get("working") or {}).get("retention_days"),
        (memory_config.get("daily_log") or {}).get("retention_days"),
    ]
    for value in candidates:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return max(MIN_RETENTION_DAYS, int(value))
    return MIN_RETENTION_DAYS


def archive_cutoff(today: date, days: int) -> date:
    """Entries of days strictly before this date are archived (kept, hidden by default)."""
    return today - timedelta(days=max(MIN_RETENTION_DAYS, days))


_SKIPPED_RESULT_KEYS = {"confidence", "error"}


def summarize_result(result: dict, max_chars: int = 200) -> str:
    """A worker result as a daily-log body: its summary, else one `- **key**: value` line per result key."""
    summary = result.get("summary")
    if isinstance(summary, str) and summary.strip():
        return summary.strip()
    lines = []
    for key, value in result.items():
        if key in _SKIPPED_RESULT_KEYS or str(key).startswith("_"):
            continue
        text = value if isinstance(value, str) else repr(value)
        lines.append(f"- **{key}**: {text[:max_chars]}")
    return "\n".join(lines)
