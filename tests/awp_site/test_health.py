"""/healthz and the status page: the embedding worker (answering, stopped, waiting chunks) and folder watchers."""

from __future__ import annotations

import json
import socket

import pytest
from django.test import Client

from experiments.demo import replay_demo
from experiments.models import Experiment, Membership, WatcherHeartbeat
from experiments.watch import watch_folders
from memory import embeddings
from tests.factories import PASSWORD, make_experiment, make_member, make_token


def stale_socket(path) -> None:  # type: ignore[no-untyped-def]
    """What a killed embedding worker leaves behind: its socket file, with nobody listening."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.close()


@pytest.mark.django_db
def test_a_stopped_embedding_worker_is_reported_and_pauses_semantic_search(client: Client, settings, tmp_path, monkeypatch) -> None:
    settings.AWP_DATA_DIR = tmp_path
    monkeypatch.setattr(embeddings, "_model", None)  # a web process: it asks the worker, it holds no model
    body = client.get("/healthz").json()
    assert body["ok"] and body["embedding"]["worker"] == "not running" and body["embedding"]["model_loaded_here"] is False
    assert isinstance(body["embedding"]["chunks_waiting"], int)

    stale_socket(embeddings.socket_path())
    assert client.get("/healthz").json()["embedding"]["worker"] == "not answering"
    experiment = make_experiment()
    token = make_token(experiment, ["memory:read"])
    response = client.post(f"/api/v1/experiments/{experiment.slug}/memory/search",
                           json.dumps({"query": "bananas", "mode": "semantic"}), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
    assert response.status_code == 503 and response.json()["code"] == "embedding_unavailable"
    assert "awp_embed --loop" in response.json()["error"]
    user = make_member(experiment, Membership.Role.VIEWER)
    client.login(username=user.username, password=PASSWORD)
    page = client.get(f"/experiments/{experiment.slug}/memory/search/?q=bananas&mode=semantic")
    assert page.status_code == 200 and "embedding worker is not answering" in page.content.decode()


def test_watchers_report_their_passes_to_owners_only(client: Client, tmp_path, transactional_db) -> None:
    folder = tmp_path / "wf"
    replay_demo(folder, delay=0)
    passes: list[int] = []
    watch_folders([folder], experiment_slug="watched-health", mode="poll", interval=0.05,
                  should_stop=lambda: bool(passes), on_pass=lambda _folder, new: passes.append(new))  # fmt: skip
    beat = WatcherHeartbeat.objects.get(folder=str(folder))
    assert beat.new_events == passes[0] > 0 and beat.failures == 0 and beat.last_pass_at is not None

    body = client.get("/healthz").json()
    assert body["watchers"]["count"] == 1 and body["watchers"]["stale"] == 0
    assert str(folder) not in json.dumps(body)  # no folder names without a login

    watched = Experiment.objects.get(slug="watched-health")  # the watcher made it
    owner, stranger = make_member(watched, Membership.Role.OWNER), make_member(make_experiment(), Membership.Role.OWNER)
    viewer = make_member(watched, Membership.Role.VIEWER)
    client.login(username=viewer.username, password=PASSWORD)
    assert client.get("/status/").status_code == 403
    client.login(username=owner.username, password=PASSWORD)
    page = client.get("/status/").content.decode()
    assert "Folder watchers" in page and "1 watched folder" in page and str(folder) in page
    client.login(username=stranger.username, password=PASSWORD)
    assert str(folder) not in client.get("/status/").content.decode()  # an owner sees the folders of their experiments
    client.logout()
    assert client.get("/status/").status_code == 302  # to the login page
