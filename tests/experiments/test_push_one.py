"""The one-event push in one statement (experiments.ingest.push_one) against the general path it short-cuts."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.models import BoardPost, Event, Run
from memory.models import Episode, MemoryEntry
from tests.factories import make_experiment, make_member, make_token
from tests.live.test_processes import frame_reaching, open_socket
from tests.proofkit import login_cookie

KEYS = [f"k{i}" for i in range(6)]
events = st.one_of(
    st.builds(lambda key, i: {"kind": "log", "idempotency_key": key, "payload": {"msg": f"line {i}"}}, st.sampled_from(KEYS), st.integers(0, 3)),
    st.builds(lambda key, it: {"kind": "iteration.decision", "idempotency_key": key, "iteration": it, "payload": {"decision": "go"}}, st.sampled_from(KEYS), st.integers(0, 4)),
    st.builds(lambda key: {"kind": "worker.complete", "idempotency_key": key, "agent_id": "w1", "iteration": 1, "payload": {"summary": f"done {key}", "confidence": 0.5}}, st.sampled_from(KEYS)),
    st.builds(lambda topic: {"kind": "board.post", "payload": {"topic": topic, "payload": {"x": 1}}}, st.sampled_from(["a", "b"])),
    st.builds(lambda key: {"kind": "run.complete", "idempotency_key": key, "payload": {"status": "complete", "loss": 0.25}}, st.sampled_from(KEYS)),
    st.builds(lambda key: {"kind": "log", "idempotency_key": key, "payload": {"password": "hunter2-swordfish"}}, st.sampled_from(KEYS)),
    st.just({"kind": "no.such.kind", "payload": {}}),
)  # fmt: skip


def _push(client: Client, run_id: str, event: dict[str, Any]) -> tuple[int, Any]:
    response = client.post("/api/v1/ingest", data=json.dumps({"run_id": run_id, "events": [event]}), content_type="application/json")
    body = response.json()
    return response.status_code, {k: v for k, v in body.items() if k != "run_id"} if response.status_code == 200 else body.get("code")


def _state(run: Run) -> dict[str, Any]:
    run.refresh_from_db()
    ledger = list(Event.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "agent_id", "iteration", "payload", "dedupe_key", "ts_source"))
    return {
        "ledger": ledger,
        "head": (run.last_seq, run.status, run.iterations, run.loss),
        "board": list(BoardPost.objects.filter(run=run).order_by("seq").values_list("seq", "topic", "payload")),
        "episodes": list(Episode.objects.filter(run=run).order_by("turn", "kind", "agent_id").values_list("kind", "turn", "text")),
        "entries": list(MemoryEntry.objects.filter(run=run).order_by("pk").values_list("content", "agent_id")),
    }


@pytest.mark.django_db
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(events, min_size=1, max_size=10))
def test_one_event_pushes_equal_the_general_path(monkeypatch, pushes):
    answers, states = [], []
    for one_statement in (True, False):
        experiment = make_experiment()
        client = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}", HTTP_HOST="127.0.0.1")
        with monkeypatch.context() as patch:
            if not one_statement:
                patch.setattr("experiments.api.push_one", lambda *args, **kwargs: None)
            start = _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}})
            answers.append([start] + [_push(client, "r", event) for event in pushes])
        states.append(_state(Run.objects.get(experiment=experiment, run_id="r")))
    assert answers[0] == answers[1]
    assert states[0] == states[1]


@pytest.mark.django_db
def test_a_one_event_push_is_one_statement_between_begin_and_commit():
    experiment = make_experiment()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}", HTTP_HOST="127.0.0.1")
    assert _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {}})[0] == 200
    with CaptureQueriesContext(connection) as queries:
        status, body = _push(client, "r", {"kind": "log", "idempotency_key": "one", "payload": {"msg": "hi"}})
    assert (status, body["seqs"], body["new"]) == (200, [2], 1)
    statements = [q["sql"].strip().split()[0].upper() for q in queries.captured_queries]
    # token look-up, BEGIN, the one statement, COMMIT, the response net's freshness check of the known secrets
    assert statements.count("WITH") == 1 and "INSERT" not in statements and len(statements) <= 5, statements


@pytest.mark.django_db(transaction=True)
def test_concurrent_one_event_pushes_with_shared_keys_stay_gap_free_and_deduplicated(asgi_server):
    experiment = make_experiment()
    headers = {"Authorization": f"Bearer {make_token(experiment)}"}
    url = f"{asgi_server.url}/api/v1/ingest"
    start = {"run_id": "shared", "events": [{"kind": "run.start", "idempotency_key": "start", "payload": {}}]}
    assert requests.post(url, json=start, headers=headers, timeout=30).status_code == 200

    def push(writer: int) -> dict[str, int]:
        seqs = {}
        with requests.Session() as session:
            for i in range(8):
                key = f"shared-{i}" if i % 2 else f"w{writer}-{i}"  # every odd key is pushed by all ten writers at once
                body = {"run_id": "shared", "events": [{"kind": "log", "idempotency_key": key, "payload": {"i": i}}]}
                response = session.post(url, json=body, headers=headers, timeout=60)
                assert response.status_code == 200, response.text
                seqs[key] = response.json()["seqs"][0]
        return seqs

    with ThreadPoolExecutor(max_workers=10) as pool:
        answers = list(pool.map(push, range(10)))
    run = Run.objects.get(experiment=experiment, run_id="shared")
    stored = dict(Event.objects.filter(run=run).values_list("dedupe_key", "seq"))
    assert sorted(stored.values()) == list(range(1, 1 + 10 * 4 + 4 + 1)) and run.last_seq == 45
    for answer in answers:
        assert all(stored[f"key:{key}"] == seq for key, seq in answer.items())


@pytest.mark.django_db(transaction=True)
def test_a_one_event_push_reaches_an_open_run_page(live_server_factory):
    experiment = make_experiment()
    user = make_member(experiment, "viewer")
    token = make_token(experiment)
    server = live_server_factory()
    url = f"{server.url}/api/v1/ingest"
    start = {"run_id": "live", "events": [{"kind": "run.start", "idempotency_key": "start", "payload": {}}]}
    assert requests.post(url, json=start, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 200
    run = Run.objects.get(experiment=experiment, run_id="live")
    cookie = login_cookie(server.url, user.username)

    async def scenario() -> str:
        async with open_socket(server, f"/ws/runs/{run.pk}/?after=1", cookie) as ws:
            await asyncio.sleep(0.5)  # subscribed right after accept
            body = {"run_id": "live", "events": [{"kind": "log", "idempotency_key": "one", "payload": {"msg": "pushed alone"}}]}
            response = await asyncio.to_thread(requests.post, url, json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert response.json()["seqs"] == [2]
            return await frame_reaching(ws, 2)

    assert "pushed alone" in asyncio.run(scenario())
