"""experiments.push_edge through a real daphne: a one-event push answered on the event loop equals the same push
answered by Django (answers, ledger, projections, headers), refuses nothing itself, counts each attempt once,
masks what the net masks, and keeps seqs gap-free beside Django's path under concurrent writers."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.models import ApiToken, Event, Run
from state.secrets import learn_secrets
from tests.experiments.test_push_one import _state
from tests.experiments.test_push_one import events as one_events
from tests.factories import make_experiment, make_token
from tests.proofkit import backends_since, database_clock

pytestmark = pytest.mark.django_db(transaction=True)

LOG = {"kind": "log", "idempotency_key": "l1", "payload": {"msg": "one line"}}


def _post(base: str, token: str, run_id: str, event: dict[str, Any], **headers: str) -> requests.Response:
    return requests.post(
        f"{base}/api/v1/ingest",
        data=json.dumps({"run_id": run_id, "events": [event]}),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json", **headers},
        timeout=30,
    )


def _edge_connections(since: object) -> int:
    """Backends a worker opened for its edge since `since` (one per worker, at its first edge push)."""
    return backends_since(since, application_name="awp push edge")


def _answer(response: requests.Response) -> tuple[int, Any]:
    body = response.json()
    return response.status_code, {k: v for k, v in body.items() if k != "run_id"} if response.status_code == 200 else body.get("code")


@pytest.fixture
def two_servers(live_server_factory):  # type: ignore[no-untyped-def]
    """The same code twice on the test database: with the edge (the default), and with AWP_PUSH_EDGE=0."""
    return live_server_factory(), live_server_factory(AWP_PUSH_EDGE="0")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(one_events, min_size=1, max_size=12))
def test_pushes_at_the_edge_equal_pushes_through_django(two_servers, pushes):
    answers, states = [], []
    for server in two_servers:
        experiment = make_experiment()
        token = make_token(experiment)
        start = _post(server.url, token, "r", {"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}})
        answers.append([_answer(start)] + [_answer(_post(server.url, token, "r", event)) for event in pushes])
        states.append(_state(Run.objects.get(experiment=experiment, run_id="r")))
    assert answers[0] == answers[1]
    assert states[0] == states[1]


def test_a_log_push_is_answered_at_the_edge_with_the_headers_django_sends(two_servers):
    edge, django_only = two_servers
    started = database_clock()
    answers = {}
    for name, server in (("edge", edge), ("django", django_only)):
        token = make_token(make_experiment())
        assert _post(server.url, token, "r", {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200
        answers[name] = _post(server.url, token, "r", LOG)
        assert answers[name].status_code == 200, answers[name].text
    assert _edge_connections(started) == 1  # the edge took the log push of the first server; the second has none
    assert answers["edge"].json() == answers["django"].json() == {"run_id": "r", "seqs": [2], "new": 1, "last_seq": 2}
    edge_headers, django_headers = ({k: v for k, v in answers[name].headers.items() if k != "Date"} for name in ("edge", "django"))
    assert edge_headers == django_headers


def test_the_edge_hands_every_refusal_to_django_and_counts_each_attempt_once(live_server_factory):
    started = database_clock()
    server = live_server_factory(AWP_RATE_LIMIT_TOKEN_PER_MINUTE="6")
    experiment, other = make_experiment(), make_experiment()
    token = make_token(experiment)
    assert _post(server.url, token, "r", {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200  # 1
    assert _post(server.url, token, "r", LOG).status_code == 200  # 2: at the edge, the token now loaded
    assert _edge_connections(started) == 1
    # A host Django refuses, an experiment the token is not for, a run that does not exist, an event Django refuses.
    assert _post(server.url, token, "r", LOG, Host="evil.example").status_code == 400  # not counted: Django refuses first
    wrong = requests.post(f"{server.url}/api/v1/ingest", json={"run_id": "r", "experiment": other.slug, "events": [LOG]},
                          headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
    assert wrong.status_code == 403, wrong.text  # 3
    missing = _post(server.url, token, "no-such-run", {**LOG, "idempotency_key": "m"})
    assert (missing.status_code, missing.json()["code"]) == (404, "unknown_run")  # 4
    bad = _post(server.url, token, "r", {"kind": "log", "idempotency_key": "n", "payload": {"x": float("nan")}})
    assert bad.status_code in (400, 422), bad.text  # 5
    assert _post(server.url, token, "r", {**LOG, "idempotency_key": "l2"}).status_code == 200  # 6: the limit
    over = _post(server.url, token, "r", {**LOG, "idempotency_key": "l3"})  # 7: each attempt was counted once
    assert over.status_code == 429 and over.json()["code"] == "rate_limited" and int(over.headers["Retry-After"]) > 0
    assert Run.objects.get(experiment=experiment, run_id="r").last_seq == 3


def test_a_token_revoked_after_the_edge_loaded_it_writes_nothing(asgi_server):
    started = database_clock()
    experiment = make_experiment()
    token = make_token(experiment)
    assert _post(asgi_server.url, token, "r", {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200
    assert _post(asgi_server.url, token, "r", LOG).status_code == 200
    assert _edge_connections(started) == 1
    ApiToken.objects.filter(experiment=experiment).update(revoked_at=timezone.now())
    for key in ("r1", "r2"):  # the statement finds it revoked; then the process has forgotten it
        revoked = _post(asgi_server.url, token, "r", {**LOG, "idempotency_key": key})
        assert (revoked.status_code, revoked.json()["code"]) == (401, "unauthorized"), revoked.text
    assert list(Event.objects.filter(run__experiment=experiment).values_list("seq", flat=True).order_by("seq")) == [1, 2]


def test_an_edge_answer_passes_the_known_secret_net(asgi_server):
    started = database_clock()
    secret = "Zq8vN3xT5pL2wR7kHc"
    experiment = make_experiment()
    token = make_token(experiment)
    run_id = f"deploy-{secret}"
    assert _post(asgi_server.url, token, run_id, {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200
    first = _post(asgi_server.url, token, run_id, LOG)  # the matcher compiled before the secret was known
    assert _edge_connections(started) == 1
    learn_secrets(experiment_id=experiment.pk, values=[secret])
    for key in ("l2", "l3"):  # after learning: read in a thread once, then compiled
        answer = _post(asgi_server.url, token, run_id, {**LOG, "idempotency_key": key})
        assert answer.status_code == 200 and secret not in answer.text and answer.json()["seqs"] == [int(key[1]) + 1], answer.text
    assert secret in first.text  # before it was known, nothing masked it (the test can fail)


def test_concurrent_pushes_at_the_edge_and_through_django_keep_seqs_gap_free(asgi_server):
    started = database_clock()
    token = make_token(make_experiment(slug="crowd"))
    assert _post(asgi_server.url, token, "r", {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200

    def writer(w: int) -> list[int]:
        session, seqs = requests.Session(), []
        for i in range(12):
            event = {"kind": "log", "idempotency_key": f"w{w}-{i % 10}", "payload": {"w": w, "i": i}}  # 2 replays each
            response = session.post(f"{asgi_server.url}/api/v1/ingest", json={"run_id": "r", "events": [event]},
                                    headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
            assert response.status_code == 200, response.text
            seqs += response.json()["seqs"]
        return seqs

    with ThreadPoolExecutor(8) as pool:
        answered = [seq for seqs in pool.map(writer, range(8)) for seq in seqs]
    stored = list(Event.objects.filter(run__run_id="r", run__experiment__slug="crowd").order_by("seq").values_list("seq", flat=True))
    assert stored == list(range(1, 1 + 1 + 8 * 10))
    assert set(answered) == set(stored) - {1}
    assert Run.objects.get(run_id="r", experiment__slug="crowd").last_seq == stored[-1]
    assert _edge_connections(started) == 1


HOSTILE = [
    b'{"run_id": "r", "events": [' + b"[" * 2000 + b"]" * 2000 + b"]}",  # deep nesting
    b'{"run_id": "r", "events": [{"kind": "log", "payload": {"m": "\\ud800"}}]}',  # a lone surrogate
    b'{"run_id": "r", "events": [{"kind": "log", "payload": {"m": "a\\u0000b"}}]}',  # NUL
    b'{"run_id": "r", "events": [{"kind": "log", "payload": {"n": NaN}}]}',
    b'{"run_id": "r", "events": [{"kind": "log", "iteration": 99999999999999999999999, "payload": {}}]}',
    b'{"run_id": "r\\u0000", "events": [{"kind": "log", "payload": {}}]}',
    b'{"run_id": "r", "events": [{"kind": "' + b"k" * 5000 + b'", "payload": {}}]}',
    b'{"run_id": "r", "events": [{"kind": "log", "payload": []}]}',
    b"not json at all",
    b"\xff\xfe\x00",
    b"[]",
]


def test_hostile_bodies_after_the_edge_loaded_the_token_get_a_4xx_with_a_code(asgi_server):
    """Once the token is loaded every body goes to the edge first: whatever it cannot take, Django refuses, never 5xx."""
    experiment = make_experiment()
    token = make_token(experiment)
    assert _post(asgi_server.url, token, "r", {"kind": "run.start", "idempotency_key": "s", "payload": {}}).status_code == 200
    assert _post(asgi_server.url, token, "r", LOG).status_code == 200
    for body in HOSTILE:
        for content_type in ("application/json", "text/plain"):
            answer = requests.post(f"{asgi_server.url}/api/v1/ingest", data=body, timeout=30,
                                   headers={"Authorization": f"Bearer {token}", "Content-Type": content_type})  # fmt: skip
            assert 400 <= answer.status_code < 500, (body[:60], answer.status_code, answer.text[:200])
            assert answer.json()["code"], answer.text
    assert Run.objects.get(run_id="r", experiment=experiment).last_seq == 2  # nothing stored
