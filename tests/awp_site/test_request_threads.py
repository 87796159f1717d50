"""awp_site.asgi.PooledASGIHandler through a real daphne: each request's synchronous work in one job on a fixed
pool of threads, streamed answers still streamed and masked, connections handed back, nothing carried over."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import threading

import pytest
import requests

from bench.common import LoopbackPage
from tests.factories import make_experiment, make_member, make_token
from tests.load.test_load_scenario import session_cookies
from tests.proofkit import backends_since, database_clock, log_events, push, run_start

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_streamed_export_through_daphne_is_whole_and_masked(live_server_factory):
    server = live_server_factory(AWP_EMBEDDER="none")
    experiment = make_experiment(slug="threads")
    cookie = session_cookies([make_member(experiment, "viewer")])[0]
    token = make_token(experiment, ["ingest"])
    secret = "hunter2-Zq8pL3vX9wRt"  # keyed under api_key: learnt at ingest, masked by value on every way out
    events = [run_start("r1"), {"kind": "log", "idempotency_key": "k", "payload": {"api_key": secret}}]
    events += [{**e, "payload": {**e["payload"], "note": f"uses {secret}"}} for e in log_events(1200, prefix="x")]
    assert push(server.url, token, "r1", events).status_code == 200
    from experiments.models import Run

    run = Run.objects.get(run_id="r1")
    base = f"{server.url}/experiments/{experiment.slug}/runs/{run.pk}/export/"
    answer = requests.get(base + "events.json", headers={"Cookie": cookie}, timeout=60)
    assert answer.status_code == 200 and answer.headers.get("Transfer-Encoding") == "chunked"
    assert [e["seq"] for e in json.loads(answer.content)["events"]] == list(range(1, run.last_seq + 1))
    rows = list(csv.DictReader(io.StringIO(requests.get(base + "events.csv", headers={"Cookie": cookie}, timeout=60).text)))
    assert len(rows) == run.last_seq
    assert secret not in answer.text and all(secret not in str(row) for row in rows)


def test_streamed_exports_hand_their_views_connections_back(live_server_factory):
    # Two pooled connections, three exports at once: each view's thread must give its connection back when the view
    # returns (its stream reads in a thread of its own and needs one too), or the streams wait for the pool in vain.
    server = live_server_factory(AWP_EMBEDDER="none", AWP_DB_POOL_MAX="2", AWP_DB_POOL_TIMEOUT="10")
    experiment = make_experiment(slug="threads")
    cookie = session_cookies([make_member(experiment, "viewer")])[0]
    token = make_token(experiment, ["ingest"])
    assert push(server.url, token, "r1", [run_start("r1"), *log_events(300, prefix="x")]).status_code == 200
    from experiments.models import Run

    url = f"{server.url}/experiments/{experiment.slug}/runs/{Run.objects.get(run_id='r1').pk}/export/events.csv"
    answers: list[object] = []

    def export() -> None:
        try:
            answers.append(requests.get(url, headers={"Cookie": cookie}, timeout=30))
        except requests.RequestException as exc:
            answers.append(exc)

    for _ in range(3):
        threads = [threading.Thread(target=export) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert all(getattr(a, "status_code", None) == 200 and len(a.text.splitlines()) == 302 for a in answers), answers  # type: ignore[attr-defined]


def test_many_more_concurrent_pages_than_threads_all_answer_and_hand_their_connections_back(live_server_factory):
    # Two threads and two pooled connections for forty users at once: they queue for a thread, never for a
    # connection (a 503 or a 500 here), and when they are done the worker holds no more than its pool.
    experiment = make_experiment(slug="threads")
    started = database_clock()
    server = live_server_factory(AWP_EMBEDDER="none", AWP_DB_POOL_MAX="2")
    cookie = session_cookies([make_member(experiment, "viewer")])[0]
    pages = ["/", f"/experiments/{experiment.slug}/runs/", f"/experiments/{experiment.slug}/protocol/", "/healthz"]

    async def users() -> list[tuple[int, bytes]]:
        async def user(n: int) -> list[tuple[int, bytes]]:
            page = LoopbackPage(server.url)
            answers = [await page.get(pages[(n + i) % len(pages)], {"Cookie": cookie}) for i in range(6)]
            page.close()
            return answers

        return [answer for many in await asyncio.gather(*(user(n) for n in range(40))) for answer in many]

    answers = asyncio.run(users())
    assert len(answers) == 240 and {status for status, _ in answers} == {200}
    assert all(b"Sign in" not in body for status, body in answers)  # every page was served to the member
    assert backends_since(started) <= 2 + 1  # the pool's two, and the channel layer's LISTEN connection


def test_a_request_sees_its_own_user_after_another_users_request_on_the_same_thread(live_server_factory):
    # One thread serves everyone in turn: whatever a request leaves behind (its user, its known secrets, its
    # context) must not reach the next one. Two members of different experiments alternate on it.
    server = live_server_factory(AWP_EMBEDDER="none", AWP_DB_POOL_MAX="1")
    a, b = make_experiment(slug="alpha-threads"), make_experiment(slug="beta-threads")
    cookie_a = session_cookies([make_member(a, "viewer")])[0]
    cookie_b = session_cookies([make_member(b, "viewer")])[0]
    errors: list[str] = []

    def browse(cookie: str, mine: str, theirs: str) -> None:
        try:
            for _ in range(15):
                own = requests.get(f"{server.url}/experiments/{mine}/protocol/", headers={"Cookie": cookie}, timeout=30)
                other = requests.get(f"{server.url}/experiments/{theirs}/protocol/", headers={"Cookie": cookie}, timeout=30)
                listing = requests.get(f"{server.url}/", headers={"Cookie": cookie}, timeout=30).text
                if own.status_code != 200 or other.status_code != 404 or theirs in listing or mine not in listing:
                    errors.append(f"{mine}: {own.status_code} {other.status_code}")
        except requests.RequestException as exc:
            errors.append(f"{mine}: {exc!r}")

    threads = [threading.Thread(target=browse, args=args) for args in ((cookie_a, "alpha-threads", "beta-threads"), (cookie_b, "beta-threads", "alpha-threads"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
