"""Long-term MEMORY.md versions: every change is one new version; diff, restore, import, workspace files."""

from __future__ import annotations

import hashlib

import pytest

from experiments.projections import WorkspaceFile, handle_workspace_file
from memory.longterm import (
    current_long_term,
    diff_long_term,
    import_long_term,
    long_term_history,
    restore_long_term_version,
    write_long_term_version,
)
from memory.models import MemoryChunk, MemoryDocument, MemoryEntry

pytestmark = pytest.mark.django_db


def _file(kind: str, relpath: str, content: str) -> WorkspaceFile:
    return WorkspaceFile(kind, relpath, content, hashlib.sha256(content.encode()).hexdigest(), "/tmp/wf")


def test_edit_promote_import_restore_each_add_one_version(experiment, curator) -> None:
    write_long_term_version(experiment=experiment, content="# Facts\n- a\n", reason="edit", author=curator)
    write_long_term_version(
        experiment=experiment, content="# Facts\n- a\n- b\n", reason="promoted fact b",
        source=MemoryDocument.Source.PROMOTION, author=curator,
    )  # fmt: skip
    assert import_long_term(experiment=experiment, content="# Facts\n- a\n- b\n- c\n") is not None
    restored = restore_long_term_version(experiment=experiment, version=1, author=curator)
    history = long_term_history(experiment)
    assert [d.version for d in history] == [4, 3, 2, 1]
    assert [d.source for d in history] == ["restore", "import", "promotion", "edit"]
    assert restored.content == "# Facts\n- a\n" and current_long_term(experiment).version == 4
    assert history[0].author == curator and history[1].author_label == "importer"


def test_import_of_unchanged_text_adds_no_version(experiment) -> None:
    import_long_term(experiment=experiment, content="same")
    assert import_long_term(experiment=experiment, content="same") is None
    handle_workspace_file(experiment, _file("long_term", "workspace/MEMORY.md", "same"))
    handle_workspace_file(experiment, _file("long_term", "workspace/MEMORY.md", "changed"))
    assert list(experiment.memory_documents.values_list("version", flat=True).order_by("version")) == [1, 2]


def test_diff_between_any_two_versions_shows_exactly_the_change(experiment) -> None:
    for text in ["one\ntwo\nthree\n", "one\nTWO\nthree\n", "one\nTWO\nthree\nfour\n"]:
        write_long_term_version(experiment=experiment, content=text, reason="edit")
    changes = [(line.op, line.text) for line in diff_long_term(experiment, 1, 3) if line.op in "+-"]
    assert changes == [("-", "two"), ("+", "TWO"), ("+", "four")]
    assert diff_long_term(experiment, 1, 9) is None


def test_restore_of_a_missing_version_changes_nothing(experiment) -> None:
    write_long_term_version(experiment=experiment, content="x", reason="edit")
    with pytest.raises(LookupError):
        restore_long_term_version(experiment=experiment, version=7)
    assert experiment.memory_documents.count() == 1


def test_long_term_chunks_follow_the_current_version(experiment) -> None:
    write_long_term_version(experiment=experiment, content="# A\nalpha\n# B\nbeta\n", reason="edit")
    first = set(MemoryChunk.objects.filter(experiment=experiment, tier="long_term").values_list("ref_key", flat=True))
    write_long_term_version(experiment=experiment, content="# A\nalpha\n# C\ngamma\n", reason="edit")
    chunks = MemoryChunk.objects.filter(experiment=experiment, tier="long_term")
    assert sorted(c.content for c in chunks) == ["# A\nalpha", "# C\ngamma"]
    assert len(first & {c.ref_key for c in chunks}) == 1  # the unchanged section kept its chunk


def test_daily_file_import_is_idempotent(experiment) -> None:
    text = "### 10:00:01\nfirst\n\n### 11:00:00 -- researcher (confidence: 0.7)\nsecond\n"
    handle_workspace_file(experiment, _file("daily", "workspace/memory/2026-03-23.md", text))
    handle_workspace_file(experiment, _file("daily", "workspace/memory/2026-03-23.md", text))
    handle_workspace_file(experiment, _file("daily", "workspace/memory/2026-03-23.md", text + "### 12:00:00\nthird\n"))
    entries = list(MemoryEntry.objects.filter(experiment=experiment).order_by("time"))
    assert [(e.content, e.agent_id, e.confidence) for e in entries] == [
        ("first", "", None), ("second", "researcher", 0.7), ("third", "", None),
    ]  # fmt: skip
    assert MemoryChunk.objects.filter(experiment=experiment, tier="working").count() == 3


def test_retention_archives_old_entries_and_keeps_them(experiment) -> None:
    from datetime import date

    from memory.services import append_daily_entry, archive_old_entries

    append_daily_entry(experiment=experiment, content="old", day=date(2026, 9, 1), dedupe_key="a")
    append_daily_entry(experiment=experiment, content="recent", day=date(2026, 11, 1), dedupe_key="b")
    MemoryEntry.objects.update(is_archived=False)
    assert archive_old_entries(experiment=experiment, today=date(2026, 11, 20)) == 1
    assert list(MemoryEntry.objects.visible().values_list("content", flat=True)) == ["recent"]
    assert MemoryEntry.objects.count() == 2
    assert MemoryChunk.objects.get(experiment=experiment, content="old").is_archived
