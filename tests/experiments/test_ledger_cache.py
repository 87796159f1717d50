"""Run page values kept per run head (experiments/ledger_cache.py): a new event is a new head, so the charts,
the graph and the worker filter show it at once, on the page and in the live frames; redaction and permissions
apply on every read; an entry never serves another run."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from experiments import ledger_cache, run_charts
from experiments.ingest import EventIn, append_events
from experiments.models import Run
from state.secrets import learn_secrets
from tests.factories import make_experiment, make_member, make_run, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache():  # type: ignore[no-untyped-def]
    ledger_cache.clear()  # pks repeat across test databases
    yield
    ledger_cache.clear()


def delegations(iterations: range, workers: tuple[str, ...] = ("w1", "w2"), confidence: float = 0.5) -> list[EventIn]:
    """A delegation loop's worker spawns and results, one of each per worker and iteration."""
    out = []
    for iteration in iterations:
        for worker in workers:
            out.append(EventIn(kind="worker.spawn", dedupe_key=f"s{iteration}{worker}", payload={"instructions": "go"}, agent_id=worker, iteration=iteration))
            out.append(EventIn(kind="worker.complete", dedupe_key=f"c{iteration}{worker}", payload={"summary": "done", "confidence": confidence}, agent_id=worker, iteration=iteration))
    return out


def points(html: str, chart_id: str) -> int:
    found = re.search(rf'<figure class="chart" id="{chart_id}" data-points="(\d+)"', html)
    assert found, f"no {chart_id}"
    return int(found.group(1))


def view(client: Client, run: Run) -> tuple[str, int]:
    """The run page and how many of its queries read worker events (chart, graph or worker filter)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(run.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode(), sum("worker." in q["sql"] for q in queries.captured_queries)


def test_cached_chart_graph_and_worker_filter_gain_the_new_iteration_after_an_ingest(experiment, viewer):
    run = make_run(experiment)
    append_events(run, delegations(range(1, 4)))
    client = Client()
    client.force_login(viewer)
    first, reads = view(client, run)
    again, reads_again = view(client, run)
    assert reads > 0 and reads_again == 0  # the second view is served from the cache
    assert points(first, "chart-confidence") == points(again, "chart-confidence") == 6
    assert '<option value="w3"' not in again and f'data-node="r{run.pk}-i4-w3"' not in again

    append_events(run, delegations(range(4, 5), workers=("w3",), confidence=0.75))
    after, reads_after = view(client, run)
    assert reads_after > 0  # a new head: read again
    assert points(after, "chart-confidence") == 7 and "w3 · iteration 4 · confidence 0.75" in after
    assert '<option value="w3"' in after and f'data-node="r{run.pk}-i4-w3"' in after


def test_live_frame_after_an_ingest_carries_the_chart_with_the_new_point(experiment, viewer):
    from awp_site.live import Viewer
    from experiments.consumers import render_run_range

    run = make_run(experiment)
    append_events(run, delegations(range(1, 3)))
    client = Client()
    client.force_login(viewer)
    assert points(view(client, run)[0], "chart-confidence") == 4  # the page warmed the cache at this head
    head = Run.objects.get(pk=run.pk).last_seq
    append_events(run, delegations(range(3, 4), workers=("w1",), confidence=0.25))
    _, frame = render_run_range(run.pk, head, head + 2, Viewer(viewer, "viewer"))
    assert 'id="run-charts" class="chart-grid" hx-swap-oob="true"' in frame
    assert points(frame, "chart-confidence") == 5 and "w1 · iteration 3 · confidence 0.25" in frame


def test_a_worker_name_learnt_as_a_secret_after_caching_is_masked_on_the_next_read(experiment):
    secret = "agent-sk-live-4f9a8b7c6d"
    run = make_run(experiment)
    append_events(run, delegations(range(1, 3), workers=(secret,)))
    run = Run.objects.select_related("experiment").get(pk=run.pk)
    assert [s.name for s in run_charts.run_series(run).confidence] == [secret]
    assert any(node.label == secret for node in run_charts.run_graph(run))

    learn_secrets(experiment_id=experiment.pk, values=[secret])  # no new event: the same head, a cache hit
    series = run_charts.run_series(run)
    assert secret not in series.confidence[0].name and all(secret not in p.label for p in series.confidence[0].points)
    assert all(secret not in node.label for node in run_charts.run_graph(run))


def test_members_of_another_experiment_never_reach_a_cached_run(experiment, viewer):
    run = make_run(experiment)
    append_events(run, delegations(range(1, 3)))
    owner_client = Client()
    owner_client.force_login(viewer)
    assert points(view(owner_client, run)[0], "chart-confidence") == 4  # cached now
    other = make_experiment()
    outsider = make_member(other, "owner")
    client = Client()
    client.force_login(outsider)
    assert client.get(run.get_absolute_url()).status_code == 404
    assert client.get(f"/experiments/{other.slug}/runs/{run.pk}/").status_code == 404
    assert client.get(f"/experiments/{other.slug}/compare/?a={run.pk}&b={run.pk}").status_code == 404
    stranger = Client()
    stranger.force_login(make_user())
    assert stranger.get(run.get_absolute_url()).status_code == 404


def fake_run(pk: int, experiment_id: int, last_seq: int, created: int = 0) -> SimpleNamespace:
    return SimpleNamespace(pk=pk, experiment_id=experiment_id, created_at=datetime(2026, 1, 1, 0, 0, created, tzinfo=UTC), last_seq=last_seq)


def test_an_entry_is_per_run_head_and_never_serves_another_run_with_the_same_pk():
    calls = []

    def compute(run):  # type: ignore[no-untyped-def]
        calls.append(run)
        return (run.experiment_id, run.last_seq)

    first = fake_run(7, experiment_id=1, last_seq=10)
    assert ledger_cache.cached(first, "v", compute) == (1, 10)
    assert ledger_cache.cached(first, "v", compute) == (1, 10) and len(calls) == 1
    assert ledger_cache.cached(fake_run(7, experiment_id=1, last_seq=11), "v", compute) == (1, 11)  # a new head
    assert ledger_cache.cached(fake_run(7, experiment_id=2, last_seq=11), "v", compute) == (2, 11)  # another experiment
    assert ledger_cache.cached(fake_run(7, experiment_id=1, last_seq=11, created=5), "v", compute) == (1, 11)  # a reused pk
    assert len(calls) == 4


def test_a_request_behind_the_head_never_replaces_the_newer_entry():
    ledger_cache.cached(fake_run(3, 1, last_seq=20), "v", lambda run: "new")
    assert ledger_cache.cached(fake_run(3, 1, last_seq=19), "v", lambda run: "old") == "old"
    assert ledger_cache.cached(fake_run(3, 1, last_seq=20), "v", lambda run: "recomputed") == "new"
