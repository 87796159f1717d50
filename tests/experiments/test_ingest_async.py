"""POST /api/v1/ingest with `Prefer: respond-async`: accepted now (202 and a receipt), appended by a drainer.

What must hold: the edge refuses what the synchronous path refuses at the edge (the body, the batch limit, the
kinds) and accepts nothing then; an accepted batch is invisible until a drainer applies it through the one
ingest path, which settles its receipt with the seqs (or the refusal) a synchronous push would have answered;
the batches of a run are applied in the order they were accepted; a drainer that is not alive means no accept.
"""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections.abc import Iterator
from typing import Any

import psutil
import psycopg
import pytest
import requests
from django.db import connection
from django.test import Client

from awp_site.db import dedicated_params
from experiments import inbox
from experiments.inbox import _CLAIM, DRAINER_LOCK, Drainer, drain_one, drain_pending
from experiments.models import AcceptedBatch, Event, Run
from experiments.projections import register_projector
from tests.factories import make_experiment, make_member, make_token

pytestmark = pytest.mark.django_db

ASYNC = {"HTTP_PREFER": "respond-async"}


def _explode(run, events, ctx):  # type: ignore[no-untyped-def]
    raise RuntimeError("a projector's bug")


register_projector("metric.explodes", _explode, name="tests.explode")


def _tell(run, events, ctx):  # type: ignore[no-untyped-def]
    raise RuntimeError(f"a projector's bug quoting {events[0].payload['api_key']}")


register_projector("metric.tells", _tell, name="tests.tell")


def _session() -> psycopg.Connection[Any]:
    """A connection of its own to the test database (autocommit), as another process would have."""
    return psycopg.connect(**dedicated_params(), autocommit=True)


@pytest.fixture
def drainer_alive() -> Iterator[None]:
    """What a running drainer shows the accept statement: its shared advisory lock, on a connection of its own."""
    with _session() as held:
        held.execute("SELECT pg_advisory_lock_shared(%s, %s)", DRAINER_LOCK)
        yield


def post(client: Client, token: str | None, body: Any, **headers: str) -> Any:
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post("/api/v1/ingest", data, content_type="application/json", **auth, **headers)


def batch(run_id: str = "r1", n: int = 3, *, start: bool = True, prefix: str = "m") -> dict[str, Any]:
    events = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}}] if start else []
    events += [{"kind": "metric.loss", "idempotency_key": f"{prefix}{i}", "iteration": 1, "payload": {"value": i}} for i in range(n)]
    return {"run_id": run_id, "events": events}


def receipt(client: Client, token: str, batch_id: int) -> Any:
    return client.get(f"/api/v1/ingest/batches/{batch_id}", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_an_accepted_batch_is_invisible_until_drained_then_its_receipt_has_the_synchronous_answer(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    accepted = post(client, token, batch(), **ASYNC)
    assert accepted.status_code == 202, accepted.content
    body = accepted.json()
    assert body["state"] == "pending" and body["events"] == 4 and body["run_id"] == "r1"
    assert accepted["Location"] == body["status_url"] == f"/api/v1/ingest/batches/{body['batch']}"
    assert accepted["Preference-Applied"] == "respond-async"
    assert not Run.objects.filter(run_id="r1").exists() and not Event.objects.exists()
    pending = receipt(client, token, body["batch"]).json()
    assert pending["state"] == "pending" and pending["result"] is None and pending["settled_at"] is None

    assert drain_pending() == 1
    settled = receipt(client, token, body["batch"]).json()
    assert settled["state"] == "applied"
    assert settled["result"] == {"run_id": "r1", "seqs": [1, 2, 3, 4], "new": 4, "last_seq": 4}
    assert list(Event.objects.order_by("seq").values_list("kind", flat=True)) == ["run.start", *["metric.loss"] * 3]
    assert AcceptedBatch.objects.get().body is None  # the body goes once it is in the ledger
    # The same batch pushed again, synchronously: the answer the receipt gave.
    again = post(client, token, batch())
    assert again.status_code == 200 and again.json() == {**settled["result"], "new": 0}


def test_a_body_is_stored_compressed_and_one_an_earlier_version_stored_with_zlib_is_still_applied(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    sent = json.dumps(batch(n=50)).encode()
    first = post(client, token, sent, **ASYNC).json()["batch"]
    stored = bytes(AcceptedBatch.objects.get(pk=first).body)
    assert stored[:4] == b"\x28\xb5\x2f\xfd" and len(stored) < len(sent) / 3  # a zstd frame
    assert inbox.unpack(stored) == sent
    second = post(client, token, batch(n=2, start=False, prefix="late"), **ASYNC).json()["batch"]
    earlier = json.dumps(batch(n=2, start=False, prefix="late")).encode()
    AcceptedBatch.objects.filter(pk=second).update(body=zlib.compress(earlier, 1))
    assert drain_pending() == 2
    assert [b.state for b in AcceptedBatch.objects.order_by("pk")] == ["applied", "applied"]
    assert Event.objects.filter(run__run_id="r1").count() == 53


def test_a_known_secret_in_an_accepted_batch_is_learnt_when_applied(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    secret = "Zq7vKp2mWx9rTb4nHc8s"
    body = batch()
    body["events"].append({"kind": "log", "idempotency_key": "creds", "payload": {"api_key": secret}})
    body["events"].append({"kind": "log", "idempotency_key": "echo", "payload": {"msg": f"the agent said {secret} twice"}})
    assert post(client, token, body, **ASYNC).status_code == 202
    drain_pending()
    reader = make_token(experiment, scopes=["memory:read"])
    events = client.get("/api/v1/runs/r1/events", HTTP_AUTHORIZATION=f"Bearer {reader}")
    assert events.status_code == 200 and "the agent said" in events.content.decode()
    assert secret not in events.content.decode()


def test_an_accept_notes_the_tokens_use_as_a_push_does(experiment, drainer_alive):
    from experiments.models import ApiToken

    client, token = Client(), make_token(experiment)
    assert ApiToken.objects.get(experiment=experiment).last_used_at is None
    assert post(client, token, batch(), **ASYNC).status_code == 202
    assert ApiToken.objects.get(experiment=experiment).last_used_at is not None


def test_without_a_drainer_or_with_a_session_the_batch_is_appended_at_once(experiment, drainer_alive):
    client = Client()
    owner = make_member(experiment, "owner")
    client.force_login(owner)
    answer = post(client, None, {**batch(), "experiment": experiment.slug}, **ASYNC)
    assert answer.status_code == 200 and answer.json()["seqs"] == [1, 2, 3, 4]
    assert "Preference-Applied" not in answer and not AcceptedBatch.objects.exists()


def test_no_drainer_alive_means_no_accept(experiment):
    client, token = Client(), make_token(experiment)
    answer = post(client, token, batch(), **ASYNC)
    assert answer.status_code == 200 and answer.json()["new"] == 4
    assert not AcceptedBatch.objects.exists()


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ('{"run_id": "r1", "events": [', 400, "invalid_json"),
        ('{"run_id": "r1", "events": [{"kind": "log", "payload": {"x": NaN}}]}', 422, "non_finite_number"),
        ('{"run_id": "r1", "events": [{"kind": "log", "payload": {"x": "a\\u0000b"}}]}', 400, "json_nul_character"),
        ('{"run_id": "r1", "events": [{"kind": "log", "payload": {"x": "\\ud800"}}]}', 400, "invalid_unicode"),
        ('{"run_id": "r1", "events": [{"kind": "no.such.kind", "payload": {}}]}', 422, "invalid_events"),
        ('{"run_id": "", "events": [{"kind": "log", "payload": {}}]}', 422, "invalid_request"),
    ],
)
def test_the_edge_refuses_what_the_synchronous_path_refuses_and_accepts_nothing(experiment, drainer_alive, body, status, code):
    client, token = Client(), make_token(experiment)
    answer = post(client, token, body, **ASYNC)
    assert answer.status_code == status and answer.json()["code"] == code, answer.content
    assert not AcceptedBatch.objects.exists() and not Event.objects.exists()


def test_an_oversize_batch_is_413_at_the_edge(experiment, drainer_alive, settings):
    settings.AWP_INGEST_MAX_BATCH = 3
    client, token = Client(), make_token(experiment)
    answer = post(client, token, batch(n=3), **ASYNC)
    assert answer.status_code == 413 and answer.json()["code"] == "batch_too_large"
    assert not AcceptedBatch.objects.exists()


def test_a_full_inbox_answers_429_with_retry_after_and_stores_nothing(experiment, drainer_alive, settings):
    client, token = Client(), make_token(experiment)
    first = json.dumps(batch())
    settings.AWP_INGEST_INBOX_BYTES = len(first) + 10
    assert post(client, token, first, **ASYNC).status_code == 202
    full = post(client, token, batch("r2"), **ASYNC)
    assert full.status_code == 429 and full.json()["code"] == "inbox_full" and full["Retry-After"] == "1"
    assert AcceptedBatch.objects.count() == 1
    drain_pending()
    assert post(client, token, batch("r2"), **ASYNC).status_code == 202  # room again once drained


def test_a_batch_refused_when_applied_stores_nothing_and_its_receipt_names_the_item(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    body = batch()
    body["events"].append({"kind": "digest", "payload": {"sha": "0" * 64, "record": {"what": "not this"}}})
    accepted = post(client, token, body, **ASYNC).json()
    drain_pending()
    settled = receipt(client, token, accepted["batch"]).json()
    assert settled["state"] == "refused" and settled["result"]["code"] == "invalid_events"
    assert [e["index"] for e in settled["result"]["errors"]] == [4]
    assert settled["result"]["errors"][0]["code"] in {"digest_sha_mismatch", "invalid_digest"}
    assert not Run.objects.filter(run_id="r1").exists() and not Event.objects.exists()
    # A batch for a run nobody started is refused as the synchronous push refuses it.
    later = post(client, token, batch("r9", start=False), **ASYNC).json()
    drain_pending()
    assert receipt(client, token, later["batch"]).json()["result"]["code"] == "unknown_run"


def test_a_batch_whose_apply_fails_is_refused_and_does_not_hold_its_run(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    post(client, token, batch(), **ASYNC)
    broken = post(client, token, {"run_id": "r1", "events": [{"kind": "metric.explodes", "payload": {}}]}, **ASYNC).json()
    after = post(client, token, batch(prefix="x", start=False), **ASYNC).json()
    assert drain_pending() == 3
    assert receipt(client, token, broken["batch"]).json()["result"]["code"] == "apply_failed"
    assert receipt(client, token, after["batch"]).json()["result"]["seqs"] == [5, 6, 7]


def test_the_log_of_a_failed_apply_is_masked_as_the_pushing_requests_would_be(experiment, drainer_alive, caplog):
    client, token = Client(), make_token(experiment)
    secret = "TulipHarborMeadow"  # words: no shape gives it away, only the name it stands under in the body
    body = {"run_id": "r1", "events": [{"kind": "run.start", "payload": {"task": "t"}}, {"kind": "metric.tells", "payload": {"api_key": secret}}]}
    assert post(client, token, body, **ASYNC).status_code == 202
    with caplog.at_level("ERROR", logger="experiments.inbox"):
        drain_pending()
    assert "a projector's bug quoting" in caplog.text
    assert secret not in caplog.text


@pytest.mark.django_db(transaction=True)
def test_batches_of_a_run_are_applied_in_the_order_accepted_while_another_drainer_holds_the_first(drainer_alive):
    experiment = make_experiment()
    client, token = Client(), make_token(experiment)
    ids = [post(client, token, batch("a", prefix=f"a{i}-", start=i == 0), **ASYNC).json()["batch"] for i in range(3)]
    other = post(client, token, batch("b"), **ASYNC).json()["batch"]
    # Another drainer has claimed the run's first batch (row locked, still pending, its transaction open): this
    # drainer must take the other run's batch, never the second batch of the first run.
    with _session() as elsewhere:
        elsewhere.execute("BEGIN")
        claimed = elsewhere.execute(_CLAIM).fetchone()
        assert claimed == (ids[0],)
        assert drain_one() == other
        assert drain_one() is None  # run a's later batches wait behind the claimed one
        elsewhere.execute("ROLLBACK")
    assert drain_pending() == 3
    seqs = [receipt(client, token, i).json()["result"]["seqs"] for i in ids]
    assert seqs == [[1, 2, 3, 4], [5, 6, 7], [8, 9, 10]]
    assert receipt(client, token, other).json()["state"] == "applied"


def test_a_receipt_is_read_only_with_an_ingest_token_or_role_of_its_experiment(experiment, drainer_alive):
    client, token = Client(), make_token(experiment)
    batch_id = post(client, token, batch(), **ASYNC).json()["batch"]
    stranger = make_token(make_experiment())
    assert receipt(client, stranger, batch_id).status_code == 404
    reader = make_token(experiment, scopes=["memory:read"])
    assert receipt(client, reader, batch_id).status_code == 403
    assert receipt(client, token, batch_id + 1000).status_code == 404
    viewer = Client()
    viewer.force_login(make_member(experiment, "viewer"))
    assert viewer.get(f"/api/v1/ingest/batches/{batch_id}").status_code == 403
    assert Client().get(f"/api/v1/ingest/batches/{batch_id}").status_code == 401


@pytest.fixture
def drainer_thread() -> Iterator[None]:
    """A drainer running in a thread of the test process (as in awp_serve) until the test ends."""
    stop = threading.Event()
    drainer = threading.Thread(target=Drainer(poll=0.2).run, args=(stop,), daemon=True)
    drainer.start()
    try:
        deadline = time.monotonic() + 30
        while not inbox.drainer_alive():
            assert time.monotonic() < deadline, "the drainer did not take its lock"
            time.sleep(0.05)
        yield
    finally:
        stop.set()
        drainer.join(timeout=10)


@pytest.mark.django_db(transaction=True)
def test_the_drainers_postgres_process_runs_below_the_requests(drainer_thread):
    # Half an apply's CPU is the server's: at full priority it took the cores an accept needed.
    deadline = time.monotonic() + 30
    while True:
        # This test database's only: another test process's servers run drainers on the same Postgres.
        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
                           [inbox.APPLICATION_NAME])  # fmt: skip
            pids = [row[0] for row in cursor.fetchall()]
        # The drainer lowers its backend just after connecting: its row is visible for that moment before.
        if len(pids) == 1 and psutil.Process(pids[0]).nice() == inbox.DRAINER_NICE:
            break
        assert time.monotonic() < deadline, ("the drainer has no connection of its own, or did not lower it", pids)
        time.sleep(0.05)
    assert len(pids) == 1
    assert psutil.Process(pids[0]).nice() == inbox.DRAINER_NICE
    assert psutil.Process(connection.connection.info.backend_pid).nice() < inbox.DRAINER_NICE  # a request's own


@pytest.mark.django_db(transaction=True)
def test_through_a_server_and_a_drainer_thread_a_run_of_many_batches_lands_whole_and_in_order(asgi_server, drainer_thread):
    experiment = make_experiment()
    token = make_token(experiment)
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Prefer": "respond-async"})
    receipts = []
    for i in range(10):
        body = batch("served", n=20, start=i == 0, prefix=f"b{i}-")
        answer = session.post(f"{asgi_server.url}/api/v1/ingest", json=body, timeout=60)
        assert answer.status_code == 202, answer.text
        receipts.append(answer.json()["status_url"])
    deadline = time.monotonic() + 30
    results = []
    for url in receipts:
        while True:
            state = session.get(f"{asgi_server.url}{url}", timeout=30).json()
            if state["state"] != "pending":
                break
            assert time.monotonic() < deadline, "the drainer did not settle the batches"
            time.sleep(0.05)
        assert state["state"] == "applied", state
        results.append(state["result"]["seqs"])
    assert [s for seqs in results for s in seqs] == list(range(1, 202))
    run = Run.objects.get(experiment=experiment, run_id="served")
    assert run.last_seq == 201 and Event.objects.filter(run=run).count() == 201


def test_awp_drain_once_settles_what_waits_and_awp_serve_runs_a_drainer(experiment, drainer_alive):
    from io import StringIO

    from django.core.management import call_command

    from experiments.management.commands.awp_serve import Command as Serve

    client, token = Client(), make_token(experiment)
    post(client, token, batch(), **ASYNC)
    post(client, token, batch("r2"), **ASYNC)
    out = StringIO()
    call_command("awp_drain", "--once", stdout=out)
    assert "2 batch(es) settled" in out.getvalue()
    assert set(AcceptedBatch.objects.values_list("state", flat=True)) == {"applied"}
    assert "ingest drainer" in Serve().companions(no_demo=True)


@pytest.mark.django_db(transaction=True)
def test_the_push_client_accepts_then_waits_for_the_seqs_and_raises_a_refusal(asgi_server, drainer_thread):
    from awp_site.client import IngestClient, IngestError

    experiment = make_experiment()
    token = make_token(experiment)
    with IngestClient(asgi_server.url, token=token, run_id="client-async", batch_size=4, accept_async=True) as client:
        client.send("run.start", {"task": "t"})
        for i in range(9):
            client.send("log", {"msg": i}, iteration=1)
        client.flush()
        assert client.seqs == [] and len(client.pending) == 3  # accepted, not yet waited for
        assert client.wait(timeout=30) == list(range(1, 11))
    refused = IngestClient(asgi_server.url, token=token, run_id="never-started", accept_async=True)
    refused.send("log", {"msg": "x"})
    with pytest.raises(IngestError) as caught:
        refused.wait(timeout=30)
    assert caught.value.code == "unknown_run"
    refused.close()
