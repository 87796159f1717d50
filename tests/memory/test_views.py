"""The Memory tab's sub-tabs: permissions in the views, sanitized rendering, edits as versions, htmx partials."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memory.longterm import write_long_term_version
from memory.models import MemoryEntry, Note
from tests.factories import make_member
from tests.memory.conftest import seed_memory

pytestmark = pytest.mark.django_db


def url(name: str, experiment, *args) -> str:  # type: ignore[no-untyped-def]
    return reverse(f"memory:{name}", args=[experiment.slug, *args])


def test_every_subtab_renders_for_a_viewer(client, experiment, viewer) -> None:
    seed_memory(experiment)
    client.force_login(viewer)
    for name in ["tab", "long-term", "curated", "working", "episodic", "notes", "search", "audit"]:
        response = client.get(url(name, experiment))
        assert response.status_code == 200, name
    partial = client.get(url("working", experiment), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tab")
    assert b"<html" not in partial.content and b"memory-calendar" in partial.content


def test_a_non_member_gets_404(client, experiment, django_user_model) -> None:
    outsider = django_user_model.objects.create_user("outsider", password="x")
    client.force_login(outsider)
    assert client.get(url("long-term", experiment)).status_code == 404


def test_script_in_memory_md_is_rendered_inert(client, experiment, viewer) -> None:
    write_long_term_version(experiment=experiment, content="# Facts\n<script>alert('x')</script>\n- safe", reason="r")
    client.force_login(viewer)
    html = client.get(url("long-term", experiment)).content.decode()
    assert "alert('x')" not in html and "<h1>Facts</h1>" in html


def test_edit_is_for_curators_and_adds_one_version(client, experiment, viewer, curator) -> None:
    client.force_login(viewer)
    assert client.get(url("long-term-edit", experiment)).status_code == 403
    assert client.post(url("long-term-edit", experiment), {"content": "x", "reason": "r", "base_version": 0}).status_code == 403
    client.force_login(curator)
    response = client.post(url("long-term-edit", experiment), {"content": "# New", "reason": "first", "base_version": 0})
    assert response.status_code == 302 and experiment.memory_documents.get().content == "# New"
    stale = client.post(url("long-term-edit", experiment), {"content": "# Lost?", "reason": "r", "base_version": 0})
    assert stale.status_code == 200 and b"changed meanwhile" in stale.content
    assert experiment.memory_documents.count() == 1


def test_restore_and_diff_pages(client, experiment, curator) -> None:
    write_long_term_version(experiment=experiment, content="alpha\n", reason="one")
    write_long_term_version(experiment=experiment, content="beta\n", reason="two")
    client.force_login(curator)
    diff = client.get(url("long-term-diff", experiment), {"a": 1, "b": 2}).content.decode()
    assert '<span class="diff-del">- alpha</span>' in diff and '<span class="diff-add">+ beta</span>' in diff
    assert client.post(url("long-term-restore", experiment, 1)).status_code == 302
    assert experiment.memory_documents.order_by("-version").first().content == "alpha\n"
    assert client.post(url("long-term-restore", experiment, 9)).status_code == 404


def test_working_hides_archived_entries_by_default(client, experiment, viewer) -> None:
    data = seed_memory(experiment)
    MemoryEntry.objects.filter(experiment=experiment, agent_id="analyst").update(is_archived=True)
    client.force_login(viewer)
    day = data["days"][1].isoformat()
    shown = client.get(url("working", experiment), {"day": day}).content.decode()
    assert "garden" in shown and "Quarterly revenue" not in shown
    archived = client.get(url("working", experiment), {"day": day, "archived": "1"}).content.decode()
    assert "Quarterly revenue" in archived
    only = client.get(url("working", experiment), {"day": day, "agent": "analyst", "archived": "1"}).content.decode()
    assert "garden" not in only


def test_notes_are_edited_only_by_their_author(client, experiment, curator, viewer) -> None:
    client.force_login(viewer)
    assert client.post(url("notes", experiment), {"kind": "finding", "content": "x"}).status_code == 403
    client.force_login(curator)
    assert client.post(url("notes", experiment), {"kind": "finding", "content": "Workers stall at depth 3"}).status_code == 302
    note = Note.objects.get(experiment=experiment)
    other = make_member(experiment, "curator")
    client.force_login(other)
    assert client.post(url("note-edit", experiment, note.pk), {"kind": "note", "content": "hijack"}).status_code == 403
    client.force_login(curator)
    client.post(url("note-edit", experiment, note.pk), {"kind": "decision", "content": "Cap depth at 2"})
    note.refresh_from_db()
    assert (note.kind, note.content) == ("decision", "Cap depth at 2")


def test_search_page_highlights_matches_and_links_sources(client, experiment, viewer) -> None:
    seed_memory(experiment)
    client.force_login(viewer)
    html = client.get(url("search", experiment), {"q": "potassium", "mode": "keyword", "tiers": ["working"]}).content.decode()
    assert "<mark>potassium</mark>" in html and "?day=" in html
    disabled = client.get(url("search", experiment), {"q": "", "mode": "keyword"}).content.decode()
    assert "non-empty query" in disabled
