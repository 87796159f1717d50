"""Bad input refused early with a code, through a real daphne: oversize (also chunked) bodies, deep nesting,
NUL characters Postgres cannot store; the ledger is left intact every time."""

from __future__ import annotations

import http.client
import json

import pytest
import requests

from experiments.models import Event, Run
from tests.factories import make_experiment, make_token
from tests.proofkit import log_events, push, run_start

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 1_000_000


@pytest.fixture
def target(live_server_factory):  # type: ignore[no-untyped-def]
    server = live_server_factory(AWP_MAX_BODY_BYTES=str(LIMIT))
    experiment = make_experiment()
    token = make_token(experiment, ["ingest", "memory:read"])
    assert push(server.url, token, "bad-input", [run_start("bad-input"), *log_events(3)]).status_code == 200
    return server, experiment, token


def ledger() -> list[tuple[int, str]]:
    return list(Event.objects.filter(run__run_id="bad-input").order_by("seq").values_list("seq", "dedupe_key"))


def test_oversize_body_is_refused_with_413_before_it_is_read(target):
    server, _experiment, token = target
    before = ledger()
    response = push(server.url, token, "bad-input", log_events(1, prefix="big") + [{"kind": "log", "payload": {"x": "y" * LIMIT}}])
    assert response.status_code == 413 and response.json()["code"] == "body_too_large"
    assert ledger() == before


def test_oversize_chunked_body_without_length_is_refused_too(target):
    server, _experiment, token = target
    before = ledger()
    body = json.dumps({"run_id": "bad-input", "events": [{"kind": "log", "payload": {"x": "y" * (LIMIT * 2)}}]}).encode()
    conn = http.client.HTTPConnection("127.0.0.1", int(server.url.rsplit(":", 1)[1]), timeout=30)

    def chunks():  # type: ignore[no-untyped-def]
        for i in range(0, len(body), 65536):
            yield body[i : i + 65536]

    conn.request(
        "POST", "/api/v1/ingest", body=chunks(), headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, encode_chunked=True
    )
    response = conn.getresponse()
    text = response.read().decode()
    assert response.status == 413, (response.status, text[:300])
    assert json.loads(text)["code"] == "body_too_large", text[:300]
    assert ledger() == before


def test_deeply_nested_json_is_a_400_not_a_crash(target):
    server, _experiment, token = target
    before = ledger()
    deep = '{"run_id": "bad-input", "events": [{"kind": "log", "payload": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}]}"
    response = requests.post(
        f"{server.url}/api/v1/ingest", data=deep, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}, timeout=30
    )
    assert response.status_code == 400 and response.json()["code"] == "json_too_deep"
    assert ledger() == before


@pytest.mark.parametrize(
    "where",
    ["payload value", "payload key", "idempotency key", "agent id"],
)
def test_nul_characters_are_refused_with_a_code_and_store_nothing(target, where):
    server, _experiment, token = target
    before = ledger()
    event: dict[str, object] = {"kind": "log", "idempotency_key": "nul", "payload": {"msg": "ok"}}
    if where == "payload value":
        event["payload"] = {"msg": "a\x00b"}
    elif where == "payload key":
        event["payload"] = {"a\x00b": 1}
    elif where == "idempotency key":
        event["idempotency_key"] = "n\x00l"
    else:
        event["agent_id"] = "w\x00"
    response = push(server.url, token, "bad-input", [event])
    assert response.status_code == 400, (response.status_code, response.text[:300])
    assert response.json()["code"] == "json_nul_character" and response.json()["message"]
    assert ledger() == before


def test_nul_in_a_memory_api_lookup_is_a_4xx(target):
    server, experiment, token = target
    response = requests.post(
        f"{server.url}/api/v1/experiments/{experiment.slug}/digest/fetch",
        json={"sha": "a" * 30 + "\x00" + "b" * 33},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert response.status_code == 400, (response.status_code, response.text[:300])
    assert response.json()["code"] == "json_nul_character"


def test_a_batch_over_the_event_limit_is_refused_whole(target, settings):
    server, _experiment, token = target
    before = ledger()
    response = push(server.url, token, "bad-input", log_events(5001, prefix="over"))
    assert response.status_code == 413 and response.json()["code"] == "batch_too_large"
    assert ledger() == before
    assert Run.objects.filter(run_id="bad-input").count() == 1


@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, "[" * 900 + "]" * 900, '{"a": ' * 600 + '{"password": "hunter2-Tq8v"}' + "}" * 600],
    ids=["5000 deep", "900 deep", "600 deep object"],
)
def test_a_text_that_is_deeply_nested_json_is_stored_and_read_back_without_a_5xx(target, text):
    """A string is a string, whatever it spells: the JSON body is shallow, but redaction and the detector read a text
    that looks like a JSON document as one, and a deep one was a RecursionError (a 500, and a traceback the log's
    own masking crashed on) on the push, the memory write and every read of it."""
    server, experiment, token = target
    events = [
        {"kind": "worker.complete", "agent_id": "deep", "idempotency_key": "deep-w", "payload": {"worker_id": "deep", "output": text, "result": text}},
        {"kind": "memory.write", "agent_id": "deep", "idempotency_key": "deep-m", "payload": {"content": text, "target": "daily"}},
        {"kind": "log", "idempotency_key": "deep-l", "payload": {"msg": text}},
    ]
    response = push(server.url, token, "bad-input", events)
    assert response.status_code == 200, (response.status_code, response.text[:300])
    headers = {"Authorization": f"Bearer {token}"}
    reads = [
        requests.get(f"{server.url}/api/v1/runs/bad-input/events", headers=headers, timeout=60),
        requests.get(f"{server.url}/api/v1/runs/bad-input/state", headers=headers, timeout=60),
        requests.post(f"{server.url}/api/v1/experiments/{experiment.slug}/memory/search", json={"query": "deep"}, headers=headers, timeout=60),
        requests.post(f"{server.url}/api/v1/experiments/{experiment.slug}/memory/write", json={"content": text, "agent_id": "deep"}, headers={"Authorization": f"Bearer {make_token(experiment, ['memory:write'])}"}, timeout=60),
    ]
    assert [r.status_code for r in reads] == [200] * 4, [(r.status_code, r.text[:200]) for r in reads]
    assert "hunter2-Tq8v" not in reads[0].text
