"""POST /api/v1/ingest and the read endpoints: all-or-nothing batches, idempotent replays, tokens per experiment."""

from __future__ import annotations

import pytest
from django.test import Client

from experiments.awp.digests import digest_sha
from experiments.models import BoardPost, Event, Run
from experiments.projections import IngestRefused, register_projector
from tests.experiments.awp_trees import digest_record
from tests.factories import make_experiment, make_member, make_token

pytestmark = pytest.mark.django_db


def _refuse(run, events, ctx):  # type: ignore[no-untyped-def]
    for event in events:
        if ctx.strict and event.payload.get("refuse"):
            raise IngestRefused("R13", "reserved key _meta", dedupe_key=event.dedupe_key)


register_projector("metric.refusable", _refuse, name="tests.refuse")


def post(client: Client, token: str | None, body: dict) -> object:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client.post("/api/v1/ingest", body, content_type="application/json", **headers)


def batch(run_id: str = "r1", n: int = 3, start: bool = True) -> dict:
    events = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t", "models": {"manager": "m"}}}] if start else []
    events += [{"kind": "metric.confidence", "idempotency_key": f"m{i}", "iteration": 1, "payload": {"mean": 0.5, "api_key": "sk-secret"}} for i in range(n)]
    return {"run_id": run_id, "events": events}


def test_replayed_batch_answers_the_same_seqs_and_stores_nothing(experiment):
    client, token = Client(), make_token(experiment)
    first = post(client, token, batch())
    assert first.status_code == 200, first.content
    again = post(client, token, batch())
    assert again.json()["seqs"] == first.json()["seqs"] == [1, 2, 3, 4] and again.json()["new"] == 0
    assert Event.objects.filter(run__run_id="r1").count() == 4
    assert Run.objects.get(run_id="r1").task_text == "t"


def test_one_bad_item_stores_nothing_and_is_named(experiment):
    client, token = Client(), make_token(experiment)
    body = batch()
    body["events"][2] = {"kind": "bogus.kind", "payload": {}}
    response = post(client, token, body)
    assert response.status_code == 422
    assert response.json()["errors"] == [{"index": 2, "code": "unknown_kind", "message": response.json()["errors"][0]["message"]}]
    assert not Run.objects.filter(run_id="r1").exists() and not Event.objects.exists()


def test_wrong_digest_sha_and_projector_refusal_are_422_with_the_index(experiment):
    client, token = Client(), make_token(experiment)
    post(client, token, batch())
    record = digest_record()
    body = {"run_id": "r1", "events": [{"kind": "digest", "payload": {"sha": digest_sha(record)[::-1], "record": record}}]}
    response = post(client, token, body)
    assert response.status_code == 422 and response.json()["errors"][0]["code"] == "digest_sha_mismatch"
    body = {"run_id": "r1", "events": [{"kind": "log", "payload": {}}, {"kind": "metric.refusable", "idempotency_key": "x", "payload": {"refuse": True}}]}
    response = post(client, token, body)
    assert response.status_code == 422 and response.json()["code"] == "R13"
    assert response.json()["errors"][0]["index"] == 1
    assert Event.objects.filter(run__run_id="r1").count() == 4


def test_auth_size_and_unknown_run_errors(experiment, settings):
    client, token = Client(), make_token(experiment)
    other = make_experiment()
    other_token = make_token(other)
    assert post(client, None, batch()).status_code == 401
    assert post(client, make_token(experiment, scopes=["memory:read"]), batch()).status_code == 403
    foreign = post(client, other_token, {**batch(), "experiment": experiment.slug})
    assert foreign.status_code == 403 and foreign.json()["code"] == "token_experiment_mismatch"
    post(client, token, batch())
    # A token of another experiment cannot reach this experiment's run by id either.
    assert post(client, other_token, batch(start=False)).status_code == 404
    assert Event.objects.filter(run__experiment=experiment).count() == 4
    settings.AWP_INGEST_MAX_BATCH = 3
    too_big = post(client, token, batch(n=3))
    assert too_big.status_code == 413 and too_big.json()["code"] == "batch_too_large"
    assert post(client, token, batch("nope", start=False)).status_code == 404


def test_board_posts_and_digests_are_projected(experiment):
    client, token = Client(), make_token(experiment)
    record = digest_record("r1")
    body = batch(n=0)
    body["events"] += [
        {"kind": "board.post", "agent_id": "w", "payload": {"id": "e1", "ts": 1795300746.5, "topic": "findings", "worker_id": "w", "payload": {"x": 1}}},
        {"kind": "digest", "payload": {"record": record}},
    ]
    assert post(client, token, body).status_code == 200
    assert BoardPost.objects.get(entry_id="e1").topic == "findings"
    reader = make_token(experiment, scopes=["memory:read"])
    got = client.get(f"/api/v1/digests/{digest_sha(record)}", HTTP_AUTHORIZATION=f"Bearer {reader}")
    assert got.status_code == 200 and got.json()["goal"] == record["goal"]


def test_read_endpoints_redact_and_stay_inside_the_token_experiment(experiment):
    client, token = Client(), make_token(experiment)
    post(client, token, batch(n=5))
    reader = make_token(experiment, scopes=["memory:read"])
    auth = {"HTTP_AUTHORIZATION": f"Bearer {reader}"}
    runs = client.get(f"/api/v1/experiments/{experiment.slug}/runs", **auth).json()
    assert runs[0]["run_id"] == "r1" and runs[0]["parent_run_id"] is None
    page = client.get("/api/v1/runs/r1/events?after=1&limit=2", **auth).json()
    assert [e["seq"] for e in page["events"]] == [2, 3] and page["last_seq"] == 6 and page["next_after"] == 3
    assert "sk-secret" not in str(page)
    outsider = make_token(make_experiment(), scopes=["memory:read"])
    assert client.get("/api/v1/runs/r1/events", HTTP_AUTHORIZATION=f"Bearer {outsider}").status_code == 404
    assert client.get(f"/api/v1/experiments/{experiment.slug}/runs", HTTP_AUTHORIZATION=f"Bearer {outsider}").status_code == 403
    viewer = make_member(experiment, "viewer")
    client.force_login(viewer)
    assert client.get("/api/v1/runs/r1/events").status_code == 200


def test_digest_children_resolve_across_runs_or_are_marked_missing(experiment):
    client, token = Client(), make_token(experiment)
    child = digest_record("child")
    parent = digest_record("r1", children=[digest_sha(child), "f" * 64])
    post(client, token, {"run_id": "child", "events": [{"kind": "run.start", "payload": {}}, {"kind": "digest", "payload": {"record": child}}]})
    post(client, token, {"run_id": "r1", "events": [{"kind": "run.start", "payload": {}}, {"kind": "digest", "payload": {"record": parent}}]})
    reader = make_token(experiment, scopes=["memory:read"])
    body = client.get(f"/api/v1/digests/{digest_sha(parent)}", HTTP_AUTHORIZATION=f"Bearer {reader}").json()
    assert [(c["sha"], c["missing"]) for c in body["children"]] == [(digest_sha(child), False), ("f" * 64, True)]
    assert body["children"][0]["run_id"] == "child"
