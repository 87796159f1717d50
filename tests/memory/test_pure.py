"""Pure memory modules: daily log parsing, retention, access control, diffs, Markdown sanitizing (salience: test_recall_pure.py)."""

from __future__ import annotations

from datetime import date, time

from hypothesis import given
from hypothesis import strategies as st

from memory.access import access_level, allows
from memory.documents import diff_lines, split_sections, truncate_for_injection
from memory.markdown import render_markdown
from memory.working import archive_cutoff, day_of_path, parse_daily_log, retention_days, summarize_result

DAILY = """# 2026-03-23

### 10:00:01
Plain memory.write entry.

### 22:40:13 -- researcher (confidence: 0.9)

- **summary**: Looks fine.
- **score**: 0.9
### 23:01:00 -- analyst
Second agent.
"""


def test_daily_log_parses_both_heading_forms() -> None:
    entries = parse_daily_log(DAILY)
    assert [(e.time, e.agent_id, e.confidence) for e in entries] == [
        (time(10, 0, 1), "", None),
        (time(22, 40, 13), "researcher", 0.9),
        (time(23, 1, 0), "analyst", None),
    ]
    assert entries[0].content == "Plain memory.write entry."
    assert entries[1].content == "- **summary**: Looks fine.\n- **score**: 0.9"


def test_daily_log_keys_are_stable_when_the_file_grows() -> None:
    before = [e.dedupe_key("m/2026-03-23.md") for e in parse_daily_log(DAILY)]
    after = [e.dedupe_key("m/2026-03-23.md") for e in parse_daily_log(DAILY + "\n### 23:59:00\nlate\n")]
    assert after[: len(before)] == before and len(after) == len(before) + 1


def test_text_before_the_first_heading_is_kept() -> None:
    entries = parse_daily_log("stray note\n### 10:00:00\nx")
    assert entries[0].content == "stray note" and entries[0].time is None


@given(st.text(max_size=300))
def test_parsing_never_raises(text: str) -> None:
    parse_daily_log(text)


def test_day_of_path() -> None:
    assert day_of_path("workspace/memory/2026-03-23.md") == date(2026, 3, 23)
    assert day_of_path("workspace/memory/notes.md") is None
    assert day_of_path("workspace/memory/2026-13-40.md") is None


def test_retention_is_never_under_thirty_days() -> None:
    assert retention_days({}) == 30
    assert retention_days({"daily_log": {"retention_days": 7}}) == 30
    assert retention_days({"tiers": {"working": {"retention_days": 90}}}) == 90
    assert archive_cutoff(date(2026, 3, 31), 10) == date(2026, 3, 1)


def test_access_control_levels() -> None:
    config = {"access_control": {"writer": {"long_term": "read", "working": "read_write", "episodic": "none"}}}
    assert access_level(config, "writer", "long_term") == "read"
    assert access_level(config, "writer", "episodic") == "none"
    assert access_level(config, "someone_else", "long_term") == "read_write"
    assert access_level({"tiers": {"working": {"enabled": False}}}, "x", "working") == "none"
    assert access_level({"access_control": {"w": {"long_term": "rwx"}}}, "w", "long_term") == "none"
    assert allows("read", "read") and not allows("read", "write") and allows("read_write", "write")
    assert not allows("none", "read")


def test_diff_shows_exactly_the_change() -> None:
    lines = diff_lines("a\nb\nc\n", "a\nB\nc\n")
    changes = [(line.op, line.text) for line in lines if line.op in "+-"]
    assert changes == [("-", "b"), ("+", "B")]


def test_sections_are_cut_at_headings() -> None:
    sections = split_sections("intro\n# One\nfirst\n## Two\nsecond")
    assert [s.heading for s in sections] == ["", "One", "Two"]
    assert sections[1].content == "# One\nfirst"


def test_truncation_for_injection() -> None:
    assert truncate_for_injection("x" * 50, 10) == "x" * 10
    assert truncate_for_injection("short", 10) == "short"


def test_script_tags_are_rendered_inert() -> None:
    html = render_markdown(
        "# Facts\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n[x](javascript:alert(3))\n"
        '<a href="https://ok.example" onclick="alert(4)">ok</a>'
    )
    lowered = html.lower()
    assert "<script" not in lowered and "alert(1)" not in lowered
    assert "onerror" not in lowered and "onclick" not in lowered and "javascript:" not in lowered
    assert "<h1>Facts</h1>" in html and 'href="https://ok.example"' in html


def test_summarize_result_prefers_the_summary() -> None:
    assert summarize_result({"summary": " done ", "confidence": 0.8}) == "done"
    assert summarize_result({"finding": "x" * 300, "confidence": 0.8, "_eval": 1}) == "- **finding**: " + "x" * 200
