"""The one-event push in one statement — experiments.push (autocommit, one round trip) and experiments.ingest.push_one
(inside the API's transaction, for events a projector reads) — against the general path they short-cut."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.models import ApiToken, BoardPost, Event, Experiment, Run
from memory.models import Episode, MemoryEntry
from state.models import KnownSecret
from state.secrets import learn_secrets
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
    st.builds(lambda key, v: {"kind": "metric.loss", "idempotency_key": key, "agent_id": "w2", "payload": {"value": v}}, st.sampled_from(KEYS), st.floats(0, 1)),
    st.builds(lambda key: {"kind": "tool.call", "idempotency_key": key, "payload": {"tool": "grep", "args": ["-n", key]}}, st.sampled_from(KEYS)),
    st.builds(lambda: {"kind": "log", "payload": {"msg": "no key"}}),
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
        "episodes": list(Episode.objects.filter(run=run).order_by("turn", "kind", "agent_id", "text").values_list("kind", "turn", "text")),  # ties (two results of one agent in one turn) in a fixed order
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
                patch.setattr("experiments.push.one_statement_push", lambda request: None)
                patch.setattr("experiments.api.push_one", lambda *args, **kwargs: None)
            start = _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}})
            answers.append([start] + [_push(client, "r", event) for event in pushes])
        states.append(_state(Run.objects.get(experiment=experiment, run_id="r")))
    assert answers[0] == answers[1]
    assert states[0] == states[1]


def _statements(client: Client, run_id: str, event: dict[str, Any]) -> tuple[int, Any, list[str]]:
    """The push's answer and the first word of each statement it sent (not the test's own savepoints)."""
    with CaptureQueriesContext(connection) as queries:
        status, body = _push(client, run_id, event)
    words = [q["sql"].strip().split()[0].upper() for q in queries.captured_queries]
    return status, body, [word for word in words if word not in ("SAVEPOINT", "RELEASE")]


def _client(experiment: Experiment) -> Client:
    client = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}", HTTP_HOST="127.0.0.1")
    assert _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {}})[0] == 200
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("prepared", [True, False])
def test_a_one_event_push_is_one_statement(settings, prepared):
    settings.AWP_PREPARED_STATEMENTS = prepared  # prepared on the server, or bound on the client as Django does
    client = _client(make_experiment())
    status, body, statements = _statements(client, "r", {"kind": "log", "idempotency_key": "one", "payload": {"msg": "hi"}})
    # token check, run lock, dedupe, insert, head, NOTIFY and the known-secret stamp: one statement, in autocommit
    assert (status, body, statements) == (200, {"seqs": [2], "new": 1, "last_seq": 2}, ["WITH"])
    status, body, statements = _statements(client, "r", {"kind": "log", "idempotency_key": "one", "payload": {"msg": "hi"}})
    assert (status, body, statements) == (200, {"seqs": [2], "new": 0, "last_seq": 2}, ["WITH"])  # a replay
    assert Event.objects.filter(run__run_id="r").count() == 2


@pytest.mark.django_db
def test_a_token_this_process_has_not_seen_costs_one_look_up_more():
    experiment = make_experiment()
    _client(experiment)
    token, secret = ApiToken.issue(experiment=experiment, name="second", scopes=["ingest"])
    second = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
    status, _body, statements = _statements(second, "r", {"kind": "log", "idempotency_key": "a", "payload": {}})
    assert (status, statements) == (200, ["SELECT", "WITH"])
    token.refresh_from_db()
    assert token.last_used_at is not None  # the statement notes its use, as the general path's look-up does


@pytest.mark.django_db
def test_events_a_projector_reads_take_the_transaction_with_the_projectors():
    experiment = make_experiment()
    client = _client(experiment)
    status, _body, statements = _statements(client, "r", {"kind": "iteration.decision", "idempotency_key": "d", "iteration": 3, "payload": {}})
    assert status == 200 and statements[:2] == ["SELECT", "WITH"] and len(statements) > 2  # look-up, push_one, projectors
    assert Run.objects.get(experiment=experiment, run_id="r").iterations == 3
    secret = {"kind": "log", "idempotency_key": "s", "payload": {"api_key": "sk-live-5f0d8a7c2b9e4d61"}}
    status, _body, statements = _statements(client, "r", secret)
    assert status == 200 and statements[:2] == ["SELECT", "WITH"] and len(statements) > 2
    assert KnownSecret.objects.filter(experiment=experiment, value="sk-live-5f0d8a7c2b9e4d61").exists()


@pytest.mark.django_db
def test_a_token_changed_after_this_process_knew_it_is_answered_as_before():
    experiment, other = make_experiment(), make_experiment()
    token, secret = ApiToken.issue(experiment=experiment, name="t", scopes=["ingest"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
    assert _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {}})[0] == 200
    assert _push(client, "r", {"kind": "log", "idempotency_key": "a", "payload": {}})[0] == 200  # known now
    body = {"run_id": "r", "experiment": other.slug, "events": [{"kind": "log", "idempotency_key": "b", "payload": {}}]}
    response = client.post("/api/v1/ingest", data=json.dumps(body), content_type="application/json")
    assert (response.status_code, response.json()["code"]) == (403, "token_experiment_mismatch")
    ApiToken.objects.filter(pk=token.pk).update(scopes=["memory:read"])
    assert _push(client, "r", {"kind": "log", "idempotency_key": "c", "payload": {}}) == (403, "missing_scope")
    ApiToken.objects.filter(pk=token.pk).update(scopes=["ingest"], revoked_at=timezone.now())
    assert _push(client, "r", {"kind": "log", "idempotency_key": "d", "payload": {}}) == (401, "unauthorized")
    assert _push(client, "nope", {"kind": "log", "idempotency_key": "e", "payload": {}}) == (401, "unauthorized")
    stored = Event.objects.filter(run__experiment=experiment).order_by("seq").values_list("dedupe_key", flat=True)
    assert list(stored) == ["key:start", "key:a"]


@pytest.mark.django_db
def test_a_protocol_that_makes_a_field_sensitive_is_seen_by_the_next_push():
    experiment = make_experiment()
    client = _client(experiment)
    assert _statements(client, "r", {"kind": "log", "idempotency_key": "a", "payload": {"zorblax": "plain words"}})[2] == ["WITH"]
    Experiment.objects.filter(pk=experiment.pk).update(protocol={"security": {"sensitive_fields": ["zorblax"]}})
    event = {"kind": "log", "idempotency_key": "b", "payload": {"zorblax": "Quokka-Marmot-Umbrella-81"}}
    status, _body, statements = _statements(client, "r", event)
    # the statement saw the changed protocol and wrote nothing; the general path learnt the new field's value
    assert status == 200 and statements[0] == "WITH" and len(statements) > 3
    assert KnownSecret.objects.filter(experiment=experiment, value="Quokka-Marmot-Umbrella-81").exists()
    assert Event.objects.filter(run__experiment=experiment).count() == 3


@pytest.mark.django_db
def test_the_answer_passes_the_net_with_the_stamp_the_statement_read():
    experiment = make_experiment()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}", HTTP_HOST="127.0.0.1")
    run_id = "run-Zq7xK2mWp9Lr4Tn8"
    assert _push(client, run_id, {"kind": "run.start", "idempotency_key": "start", "payload": {}})[0] == 200
    assert _push(client, run_id, {"kind": "log", "idempotency_key": "a", "payload": {}})[0] == 200  # the matcher is compiled
    learn_secrets(experiment_id=experiment.pk, values=[run_id])  # learnt after that (elsewhere: another process)
    body = {"run_id": run_id, "events": [{"kind": "log", "idempotency_key": "b", "payload": {}}]}
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/api/v1/ingest", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200 and response.json()["seqs"] == [3] and run_id not in response.content.decode()
    assert len(queries.captured_queries) == 2  # the statement, then the new values of the matcher its stamp called for


@pytest.mark.django_db
def test_rate_limits_count_each_push_once_whichever_path_answers(settings):
    cache.clear()
    settings.AWP_RATE_LIMIT_TOKEN_PER_MINUTE = 4
    experiment = make_experiment()
    token, secret = ApiToken.issue(experiment=experiment, name="t", scopes=["ingest"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
    try:
        answers = [
            _push(client, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {}})[0],  # the general path
            _push(client, "r", {"kind": "log", "idempotency_key": "a", "payload": {}})[0],  # one statement
            _push(client, "gone", {"kind": "log", "idempotency_key": "b", "payload": {}})[1],  # the statement, then the general path
            _push(client, "r", {"kind": "log", "idempotency_key": "c", "payload": {}})[0],
            _push(client, "r", {"kind": "log", "idempotency_key": "d", "payload": {}})[1],
        ]
        assert answers == [200, 200, "unknown_run", 200, "rate_limited"]
        ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
        assert _push(client, "r", {"kind": "log", "idempotency_key": "e", "payload": {}})[1] == "unauthorized"  # revoked beats the limit
        settings.AWP_RATE_LIMIT_ADDRESS_PER_MINUTE = 6  # six attempts from this address so far, each counted once
        other = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}", HTTP_HOST="127.0.0.1")
        assert _push(other, "r", {"kind": "log", "idempotency_key": "f", "payload": {}})[1] == "rate_limited"
    finally:
        cache.clear()


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
