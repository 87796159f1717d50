"""Words and labels a newcomer reads (issue 27): each test failed on the page as it was."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from experiments.ingest import EventIn, append_events
from tests.factories import make_run

pytestmark = pytest.mark.django_db


def get(user, url: str) -> str:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def test_curated_reflections_are_not_called_antipatterns(experiment, viewer):
    from memory.curation.models import Proposal

    for kind in ("antipattern", "reflection", "reflection"):
        Proposal.objects.create(experiment=experiment, kind=kind, key=f"{kind}-{Proposal.objects.count()}", text=f"a {kind}", status="approved")
    body = get(viewer, f"/experiments/{experiment.slug}/memory/curated/")
    assert body.count("Antipatterns (") == 1 and "Antipatterns (1)" in body and "Reflections (2)" in body


def test_run_header_labels_status_and_reason_and_says_each_once(experiment, viewer):
    run = make_run(experiment, status="complete", reason="complete", ended_at=timezone.now())
    body = get(viewer, run.get_absolute_url())
    assert "Status: complete" in body and "Reason: complete" not in body
    other = make_run(experiment, status="partial", reason="budget_exhausted", ended_at=timezone.now())
    assert "Reason: budget_exhausted" in get(viewer, other.get_absolute_url())


def test_experiment_status_is_labelled_as_the_protocols_beside_what_runs_do(experiment, viewer):
    experiment.status = "running"
    experiment.save()
    make_run(experiment, status="complete")
    body = get(viewer, f"/experiments/{experiment.slug}/")
    assert "Protocol: Running" in body and "no run running" in body


def test_durations_read_in_human_units_and_a_replay_counts_from_its_own_start(experiment, viewer):
    started = timezone.now() - timedelta(days=3)
    done = make_run(experiment, status="complete", started_at=started, ended_at=started + timedelta(seconds=310413.3))
    assert "3 d 14 h" in get(viewer, done.get_absolute_url())
    replaying = make_run(experiment, status="running", started_at=started)  # a recording replayed now
    append_events(replaying, [EventIn(kind="log", dedupe_key="a", payload={}, occurred_at=started + timedelta(seconds=90), ts_source="record")])
    replaying.refresh_from_db()
    body = get(viewer, replaying.get_absolute_url())
    assert "1 min 30 s" in body and "3 d" not in body.split('id="run-header"')[1].split("</dl>")[0]


def test_budget_numbers_have_thousands_separators(experiment, viewer):
    run = make_run(experiment, budget_used={"tokens": {"consumed": 1234567, "max": 2000000}}, last_seq=0)
    body = get(viewer, run.get_absolute_url())
    assert "1,234,567 / 2,000,000" in body


def test_glossary_is_linked_from_the_help_menu_and_explains_the_words(experiment, viewer):
    assert 'href="/help/glossary/"' in get(viewer, f"/experiments/{experiment.slug}/")
    body = get(viewer, "/help/glossary/")
    for word in ("Salience", "R13", "clawId", "Digest", "websearch", "substring"):
        assert word in body
    assert Client().get("/help/glossary/").status_code == 302  # login for every page


def test_the_same_fact_found_in_two_tiers_is_one_result_naming_both():
    from types import SimpleNamespace

    from memory.views import _grouped

    def view(tier: str, content: str) -> dict:  # type: ignore[type-arg]
        return {"hit": SimpleNamespace(tier=tier, content=content, source=f"{tier}-src"), "html": content, "link": "#"}

    grouped = _grouped([view("working", "42 is  even."), view("episodic", "42 is even."), view("long_term", "Something else.")])
    assert [g["hit"].tier for g in grouped] == ["working", "long_term"]
    assert [other["hit"].tier for other in grouped[0]["also"]] == ["episodic"]
