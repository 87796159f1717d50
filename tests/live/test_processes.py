"""Real processes: frames cross daphne workers over Redis, and cross processes over the default Postgres layer."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import textwrap

import pytest
import requests
from websockets.asyncio.client import connect

from tests.conftest import ROOT, subprocess_env
from tests.factories import make_member, make_run, make_token
from tests.proofkit import login_cookie

REDIS_URL = f"redis://127.0.0.1:6379/{os.getpid() % 15 + 1}"
SEQ = re.compile(r'id="live-mark"[^>]*data-frame="(\d+)" data-seq="(\d+)"')


async def frame_reaching(ws, seq: int, timeout: float = 20) -> str:  # type: ignore[no-untyped-def]
    """Frames until one marks `seq` (acknowledging each, as a page does)."""
    async with asyncio.timeout(timeout):
        while True:
            text = await ws.recv()
            mark = SEQ.search(text)
            if mark:
                await ws.send(f'{{"ack": {mark.group(1)}}}')
                if int(mark.group(2)) >= seq:
                    return text


def open_socket(server, path: str, cookie: str):  # type: ignore[no-untyped-def]
    return connect(
        f"ws://127.0.0.1:{server.port}{path}", origin=server.url, additional_headers={"Cookie": cookie}
    )


def test_two_redis_backed_workers_socket_on_a_ingest_through_b(live_server_factory, experiment):
    pytest.importorskip("redis").Redis.from_url(REDIS_URL).ping()
    user = make_member(experiment, "viewer")
    token = make_token(experiment, ["ingest"])
    run = make_run(experiment, run_id="two-workers")
    a = live_server_factory(REDIS_URL=REDIS_URL)
    b = live_server_factory(REDIS_URL=REDIS_URL)
    cookie = login_cookie(a.url, user.username)

    async def scenario() -> str:
        async with open_socket(a, f"/ws/runs/{run.pk}/?after=0", cookie) as ws:
            await asyncio.sleep(0.5)  # the subscription is made right after accept
            response = await asyncio.to_thread(
                requests.post,
                f"{b.url}/api/v1/ingest",
                json={"run_id": run.run_id, "events": [{"kind": "log", "idempotency_key": "b-1", "payload": {"msg": "via B"}}]},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            )
            assert response.status_code == 200, response.text
            assert response.json()["last_seq"] == 1
            return await frame_reaching(ws, 1)

    frame = asyncio.run(scenario())
    assert 'data-seq="1"' in frame


def test_default_postgres_layer_carries_an_append_from_another_process(live_server_factory, experiment):
    user = make_member(experiment, "viewer")
    run = make_run(experiment, run_id="cross-process")
    server = live_server_factory()  # no REDIS_URL: the Postgres LISTEN/NOTIFY layer
    cookie = login_cookie(server.url, user.username)
    script = textwrap.dedent(
        f"""
        from experiments.ingest import EventIn, append_events
        from experiments.models import Run
        run = Run.objects.get(pk={run.pk})
        append_events(run, [EventIn(kind="log", dedupe_key=f"cli-{{i}}", payload={{"i": i}}) for i in range(3)])
        """
    )

    async def scenario() -> str:
        async with open_socket(server, f"/ws/runs/{run.pk}/?after=0", cookie) as ws:
            await asyncio.sleep(0.5)
            done = await asyncio.to_thread(
                subprocess.run,
                [sys.executable, "manage.py", "shell", "-c", script],
                cwd=ROOT,
                env=subprocess_env(),
                capture_output=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr.decode()[-2000:]
            return await frame_reaching(ws, 3)

    frame = asyncio.run(scenario())
    assert 'data-seq="3"' in frame
