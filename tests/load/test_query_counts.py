"""A bounded number of SQL queries per page, whatever the data volume (no N+1): counts, not timings.

bench/pages.py measures the same pages' server time at 100k events and 10k proposals.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from experiments.ingest import EventIn, ProjectionContext, append_events
from memory.curation.models import Evidence, Proposal
from tests.factories import make_experiment, make_member, make_run

pytestmark = pytest.mark.django_db
MAX_QUERIES = 25


def seeded(events: int, proposals: int):  # type: ignore[no-untyped-def]
    """An experiment whose run has `events` events of every common kind and `proposals` proposals with evidence."""
    experiment = make_experiment()
    owner = make_member(experiment, "owner")
    run = make_run(experiment, status="complete")
    batch = []
    for i in range(events):
        worker, iteration = f"worker_{i % 4}", i // 20
        kind, payload = [
            ("iteration.decision", {"decision": "delegate", "reasoning": "r", "confidence": 0.8}),
            ("worker.spawn", {"worker_id": worker, "instructions": "do"}),
            ("worker.complete", {"summary": f"found {i}", "confidence": 0.9}),
            ("board.post", {"id": f"b{i}", "ts": 1795300746.0 + i, "topic": "facts", "worker_id": worker, "payload": {"f": i}}),
            ("tool.call", {"tool": "search", "args": {"q": str(i)}}),
            ("metric.confidence", {"mean": 0.9}),
            ("log", {"level": "info", "msg": f"line {i}"}),
        ][i % 7]
        batch.append(EventIn(kind=kind, dedupe_key=f"q{i}", payload=payload, agent_id=worker, iteration=iteration))
    append_events(run, batch, ctx=ProjectionContext(strict=False, source="test"))
    rows = Proposal.objects.bulk_create(
        [Proposal(experiment=experiment, kind=["fact", "tool", "antipattern"][i % 3], key=f"k{i}", text=f"P {i}") for i in range(proposals)]
    )
    Evidence.objects.bulk_create(
        [Evidence(proposal=p, ref=f"digest:{p.pk}:{j}", digest_sha="a" * 64, run=run, run_ref=run.run_id, iteration=j) for p in rows for j in (1, 2)]
    )
    client = Client()
    client.force_login(owner)
    base = f"/experiments/{experiment.slug}"
    pages = {
        "experiment page": (f"{base}/protocol/", {}),
        "runs tab": (f"{base}/runs/", {}),
        "run page": (f"{base}/runs/{run.pk}/", {}),
        "run timeline fragment": (f"{base}/runs/{run.pk}/", {"HTTP_HX_REQUEST": "true"}),
        "run iterations": (f"{base}/runs/{run.pk}/iterations/", {}),
        "run blackboard": (f"{base}/runs/{run.pk}/board/", {}),
        "review tab": (f"{base}/review/", {}),
        "experiments list": ("/", {}),
    }
    return client, pages


def query_count(client: Client, url: str, headers: dict[str, str]) -> int:
    client.get(url, **headers)  # warm caches (sessions, content types) like a second visit
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    return len(queries)


def test_pages_run_a_bounded_number_of_queries_independent_of_data_volume(django_assert_max_num_queries):
    small_client, small_pages = seeded(events=30, proposals=3)
    big_client, big_pages = seeded(events=700, proposals=60)
    growth = {}
    for name, (url, headers) in big_pages.items():
        with django_assert_max_num_queries(MAX_QUERIES):
            big_client.get(url, **headers)
        small = query_count(small_client, *small_pages[name])
        big = query_count(big_client, url, headers)
        if big > small + 1:
            growth[name] = (small, big)
    assert growth == {}, f"query count grows with the data (N+1): {growth}"
