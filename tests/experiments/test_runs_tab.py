"""The Runs tab at real volumes (issue 27): newest first, keyset pages, search, sort, duration and tokens columns."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from experiments.models import Run, Task
from tests.factories import make_run

pytestmark = pytest.mark.django_db

T0 = timezone.now() - timedelta(days=30)


def bulk_runs(experiment, n: int) -> list[Run]:  # type: ignore[no-untyped-def]
    task = Task.objects.create(experiment=experiment, number=1, slug="t", prompt="Collect facts about tides")
    runs = [
        Run(
            experiment=experiment, task=task if i % 2 else None, run_id=f"run-{i:05d}", status="complete" if i % 3 else "failed",
            started_at=T0 + timedelta(minutes=i), ended_at=T0 + timedelta(minutes=i, seconds=(i * 37) % 1000),
            iterations=i % 17, budget_used={"tokens": {"consumed": (i * 7919) % 100_000, "max": 100_000}},
            task_text="summarise the moon" if i % 5 == 0 else "count the stars",
        )
        for i in range(n)
    ]  # fmt: skip
    return Run.objects.bulk_create(runs)


def ids_on(body: str) -> list[str]:
    return re.findall(r'<a href="/experiments/[^/]+/runs/\d+/">(run-\d+)</a>', body)


def get(client: Client, experiment, **params: str) -> str:  # type: ignore[no-untyped-def]
    response = client.get(f"/experiments/{experiment.slug}/runs/", params)
    assert response.status_code == 200
    return response.content.decode()


def next_link(body: str, rel: str = "next") -> dict[str, str]:
    href = re.search(rf'<a rel="{rel}" href="[^"?]*\?([^"]*)"', body).group(1).replace("&amp;", "&")
    from urllib.parse import parse_qsl

    return dict(parse_qsl(href))


@pytest.fixture
def client(viewer) -> Client:  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(viewer)
    return c


def test_all_runs_reachable_newest_first_in_keyset_pages_without_offset(experiment, client):
    bulk_runs(experiment, 2_130)
    seen: list[str] = []
    params: dict[str, str] = {}
    with CaptureQueriesContext(connection) as queries:
        body = get(client, experiment)
    assert not any(" OFFSET " in q["sql"] for q in queries.captured_queries)
    assert "2,130 runs" in body
    while True:
        page = ids_on(body)
        assert len(page) <= 50
        seen += page
        if 'rel="next"' not in body:
            break
        params = next_link(body)
        body = get(client, experiment, **params)
    assert seen == [f"run-{i:05d}" for i in reversed(range(2_130))]  # none dropped, none twice, newest first
    back = get(client, experiment, **next_link(body, "prev"))
    assert ids_on(back) == [f"run-{i:05d}" for i in reversed(range(30, 80))]


def test_search_by_run_id_status_and_task_words(experiment, client):
    bulk_runs(experiment, 300)
    assert ids_on(get(client, experiment, q="run-00042")) == ["run-00042"]
    failed = ids_on(get(client, experiment, q="failed"))
    assert failed and all(int(r[4:]) % 3 == 0 for r in failed)
    moon = get(client, experiment, q="the moon")
    assert ids_on(moon) and all(int(r[4:]) % 5 == 0 for r in ids_on(moon)) and "60 runs match" in moon
    assert "tides" in Task.objects.get().prompt and len(ids_on(get(client, experiment, q="tides"))) == 50  # task prompt words
    assert "No runs" in get(client, experiment, q="nothing-like-this")


@pytest.mark.parametrize("sort", ["duration", "iterations", "tokens", "started"])
def test_sort_orders_every_page_by_the_key(experiment, client, sort):
    runs = {r.run_id: r for r in bulk_runs(experiment, 160)}

    def key(run_id: str):  # type: ignore[no-untyped-def]
        run = runs[run_id]
        return {"duration": run.duration_seconds, "iterations": run.iterations, "tokens": run.tokens_consumed, "started": run.started_at}[sort]

    for direction in ("desc", "asc"):
        body, order = get(client, experiment, sort=sort, dir=direction), []
        while True:
            order += ids_on(body)
            if 'rel="next"' not in body:
                break
            body = get(client, experiment, **next_link(body))
        assert sorted(order) == sorted(runs)
        keys = [key(r) for r in order]
        assert keys == sorted(keys, reverse=direction == "desc")


def test_duration_and_tokens_columns_read_like_people_write_them(experiment, client):
    make_run(experiment, run_id="long-one", started_at=T0, ended_at=T0 + timedelta(seconds=310413.3), budget_used={"tokens": {"consumed": 1234567}})
    body = get(client, experiment)
    assert "3 d 14 h" in body and "1,234,567" in body and "310413" not in body


def test_submanager_runs_nest_under_their_root(experiment, client):
    root = make_run(experiment, status="complete")
    make_run(experiment, parent=root, depth=1, parent_worker="sub_research", status="partial")
    body = get(client, experiment)
    assert body.index(f"run-row-{root.pk}") < body.index("sub_research") and "depth-1" in body


def test_the_first_page_follows_new_runs_and_other_pages_do_not(experiment, client):
    bulk_runs(experiment, 60)
    assert 'data-live-new="top"' in get(client, experiment)
    assert 'data-live-new="ignore"' in get(client, experiment, q="run")
    assert 'data-live-new="ignore"' in get(client, experiment, sort="tokens")


def test_a_bad_cursor_starts_from_the_top(experiment, client):
    bulk_runs(experiment, 10)
    assert ids_on(get(client, experiment, after="garbage~x"))[0] == "run-00009"


def test_5000_runs_keep_the_page_light_and_the_queries_few(experiment, client):
    bulk_runs(experiment, 5_000)
    for params in ({}, {"q": "moon"}, {"sort": "tokens"}):
        with CaptureQueriesContext(connection) as queries:
            body = get(client, experiment, **params)
        assert len(ids_on(body)) == 50
        assert len(body.encode()) < 200_000, (params, len(body.encode()))  # was 1.3 MB at 2,010 runs
        assert len(queries.captured_queries) < 25, [q["sql"][:80] for q in queries.captured_queries]
    deep = get(client, experiment, after=next_link(get(client, experiment))["after"])
    assert len(ids_on(deep)) == 50
