"""Health you can see (issue 27): /healthz and the status page report the embedding worker and the watchers;
a stopped worker turns semantic search into a clear 503, not a silent model load in a web process."""

from __future__ import annotations

import json
import threading
from multiprocessing.connection import Listener
from pathlib import Path

import pytest
from django.test import Client

from experiments.watch_health import forget_passes, record_pass, watcher_id
from memory import embeddings
from tests.factories import make_experiment, make_member, make_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def data_dir(settings, tmp_path):  # type: ignore[no-untyped-def]
    settings.AWP_DATA_DIR = tmp_path
    settings.AWP_EMBED_WORKER = "required"
    settings.AWP_EMBEDDER = "minilm"
    return tmp_path


class FakeWorker:
    """The worker's socket protocol (a status probe answered), without loading a model."""

    def __init__(self, path: Path) -> None:
        self.listener = Listener(str(path), family="AF_UNIX", authkey=embeddings.socket_key())
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        try:
            with self.listener.accept() as conn:
                assert json.loads(conn.recv_bytes()) == {"status": 1}
                conn.send_bytes(json.dumps({"model_loaded": True}).encode())
        except OSError:
            pass

    def close(self) -> None:
        self.listener.close()


def test_healthz_reports_a_missing_worker_as_degraded_not_down(client, data_dir):
    body = client.get("/healthz").json()
    assert body["ok"] is True and body["embedding"]["socket"] == "absent" and body["embedding"]["chunks_waiting"] == 0
    assert body["degraded"] == ["embedding_worker"]


def test_healthz_reports_a_stale_socket_as_not_answering(client, data_dir):
    (data_dir / "embed.sock").write_text("")  # a worker killed without cleaning up
    assert client.get("/healthz").json()["embedding"]["socket"] == "not answering"


def test_healthz_reports_an_answering_worker_and_its_model(client, data_dir):
    worker = FakeWorker(data_dir / "embed.sock")
    try:
        body = client.get("/healthz").json()
    finally:
        worker.close()
    assert body["embedding"]["socket"] == "answering" and body["embedding"]["model_loaded"] is True
    assert body["degraded"] == []


def test_healthz_reports_each_watcher_with_last_pass_and_lag(client, data_dir):
    record_pass(Path("/work/a"), new_events=3, seconds=0.05, waiting_since=None)
    record_pass(Path("/work/b"), new_events=0, seconds=0.01)
    stopped = next(p for p in (data_dir / "watchers").iterdir() if '"/work/b"' in p.read_text())
    stopped.write_text(json.dumps({**json.loads(stopped.read_text()), "pid": 2**22 + 12345}))  # its process is gone
    body = client.get("/healthz").json()
    assert "/work/" not in json.dumps(body)  # /healthz needs no login: folders are named by an id, not a path
    watchers = {w["folder"]: w for w in body["watchers"]}
    a, b = watcher_id("/work/a"), watcher_id("/work/b")
    assert watchers[a]["running"] is True and watchers[a]["new_events"] == 3
    assert watchers[a]["seconds_since_last_pass"] < 60 and "lag_seconds" in watchers[a]
    assert watchers[b]["running"] is False
    assert f"watcher:{b}" in body["degraded"]


def test_watchers_of_another_deployment_or_stopped_cleanly_are_not_reported(client, data_dir, settings):
    """A test run and `make run` may share a data folder: each reports its own database's watchers; a watcher
    that stops cleanly takes its report away."""
    record_pass(Path("/work/mine"), new_events=1, seconds=0.01)
    real = settings.DATABASES["default"]["NAME"]
    settings.DATABASES["default"]["NAME"] = "another_deployment"
    try:
        record_pass(Path("/work/theirs"), new_events=1, seconds=0.01)
    finally:
        settings.DATABASES["default"]["NAME"] = real
    assert [w["folder"] for w in client.get("/healthz").json()["watchers"]] == [watcher_id("/work/mine")]
    forget_passes([Path("/work/mine")])
    assert client.get("/healthz").json()["watchers"] == []


def test_semantic_search_says_the_worker_is_down_instead_of_loading_the_model(data_dir, monkeypatch):
    monkeypatch.setattr(embeddings, "_model", None)
    monkeypatch.setattr(embeddings, "_load", lambda: pytest.fail("a web process loaded the model"))
    experiment = make_experiment()
    token = make_token(experiment, ["memory:read"])
    response = Client().post(
        f"/api/v1/experiments/{experiment.slug}/memory/search", json.dumps({"query": "tides", "mode": "semantic"}),
        content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert response.status_code == 503 and response.json()["code"] == "embedding_worker_down"
    viewer = make_member(experiment, "viewer")
    page = Client()
    page.force_login(viewer)
    body = page.get(f"/experiments/{experiment.slug}/memory/search/", {"q": "tides", "mode": "semantic"}).content.decode()
    assert "The embedding worker is not running" in body


def test_status_page_is_for_owners(data_dir):
    experiment = make_experiment()
    owner, viewer = make_member(experiment, "owner"), make_member(experiment, "viewer")
    for user, status in ((owner, 200), (viewer, 403)):
        client = Client()
        client.force_login(user)
        response = client.get("/status/")
        assert response.status_code == status
    client = Client()
    client.force_login(owner)
    body = client.get("/status/").content.decode()
    assert "Embedding worker" in body and "Folder watchers" in body and "Degraded: embedding_worker" in body


def test_a_disabled_semantic_tier_is_not_a_degraded_worker(client, data_dir, settings):
    settings.AWP_EMBEDDER = "none"
    body = client.get("/healthz").json()
    assert body["embedding"]["enabled"] is False and body["degraded"] == []
