"""A run page in Chromium follows ingest live, survives a server restart and fills the gap without duplicates."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests
from django.db import connections
from playwright.sync_api import expect

from tests.conftest import ROOT, AsgiServer, login, subprocess_env, wait_for_port
from tests.factories import make_member, make_run, make_token
from tests.live.helpers import append

pytestmark = pytest.mark.browser


class TimelineServer(AsgiServer):
    """daphne serving tests.live.asgi_timeline (the real app + a stand-in timeline renderer)."""

    def start(self) -> TimelineServer:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "tests.live.asgi_timeline:application"]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc)
        return self


@pytest.fixture
def timeline_server(transactional_db):  # type: ignore[no-untyped-def]
    server = TimelineServer(subprocess_env()).start()
    yield server
    server.stop()


def ingest(server: AsgiServer, token: str, run_id: str, keys: list[str]) -> None:
    events = [{"kind": "log", "idempotency_key": key, "payload": {"msg": f"event {key}", "api_key": "sk-SECRET"}} for key in keys]
    response = requests.post(
        f"{server.url}/api/v1/ingest", json={"run_id": run_id, "events": events},
        headers={"Authorization": f"Bearer {token}"}, timeout=10,
    )
    assert response.status_code == 200, response.text


def row_seqs(page) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(s) for s in page.locator("#run-tab .test-row").evaluate_all("rows => rows.map(r => r.dataset.seq)")]


def test_run_page_follows_ingest_and_fills_the_gap_after_a_restart(timeline_server, page, experiment):
    user = make_member(experiment, "viewer")
    token = make_token(experiment, ["ingest"])
    run = make_run(experiment, run_id="browser-live")
    append(run, 3)  # rendered history: the page starts at seq 3
    login(page, timeline_server, user.username)
    page.goto(f"{timeline_server.url}/experiments/{experiment.slug}/runs/{run.pk}/")
    page.wait_for_selector("#live-indicator[data-state=live]", state="attached")
    rows = page.locator("#run-tab .test-row")

    ingest(timeline_server, token, run.run_id, ["a", "b"])
    expect(rows).to_have_count(2)
    assert row_seqs(page) == [4, 5]
    assert "sk-SECRET" not in page.content()

    timeline_server.stop()
    page.wait_for_selector("#live-indicator[data-state=reconnecting]", state="attached")
    append(run, 3, start=100)  # seqs 6..8 arrive while the server is down (another process)
    timeline_server.start()
    page.wait_for_selector("#live-indicator[data-state=live]", state="attached", timeout=30_000)
    expect(rows).to_have_count(5, timeout=15_000)
    ingest(timeline_server, token, run.run_id, ["c"])
    expect(rows).to_have_count(6)
    assert row_seqs(page) == [4, 5, 6, 7, 8, 9]
    assert page.locator("#live-mark").get_attribute("data-seq") == "9"
    connections.close_all()  # the test body's own connection (Playwright runs it in a greenlet of its own)
