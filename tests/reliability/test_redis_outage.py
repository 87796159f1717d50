"""Redis stopped under a live page: ingest keeps working, live updates pause, and resume (with the gap) after.

A private redis-server on a free loopback port (never the machine's shared one); daphne runs with REDIS_URL
pointing at it. The client behaves like live.js: on a close it reconnects with ?after=<newest seq it has>.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from tests.factories import make_experiment, make_member, make_token
from tests.proofkit import login_cookie, push, run_start, ws_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

SEQ = re.compile(r'id="live-mark"[^>]*data-seq="(\d+)"')


def delta(marker: str, round_: int) -> dict[str, object]:
    return {
        "kind": "state.delta",
        "agent_id": "w",
        "idempotency_key": marker,
        "payload": {"agent_id": "w", "round": round_, "op": "add", "path": f"$.m{round_}", "value": marker, "provenance": "t"},
    }


class LivePage:
    """A websocket client that keeps a run page live: acks frames, reconnects from its newest seq."""

    def __init__(self, url: str, cookie: str, origin: str) -> None:
        self.url, self.cookie, self.origin = url, cookie, origin
        self.text, self.seq, self.reconnects = "", 0, 0
        self.stopped = False

    async def run(self) -> None:
        import websockets

        while not self.stopped:
            try:
                async with websockets.connect(
                    f"{self.url}?after={self.seq}", additional_headers={"Cookie": self.cookie, "Origin": self.origin}, open_timeout=5
                ) as sock:
                    while not self.stopped:
                        try:
                            frame = str(await asyncio.wait_for(sock.recv(), timeout=0.5))
                        except TimeoutError:
                            continue
                        self.text += frame
                        seq = SEQ.search(frame)
                        if seq:
                            self.seq = max(self.seq, int(seq.group(1)))
                        mark = re.search(r'data-frame="(\d+)"', frame)
                        if mark:
                            await sock.send(json.dumps({"ack": int(mark.group(1))}))
            except (OSError, websockets.ConnectionClosed, websockets.InvalidStatus, TimeoutError):
                pass
            if not self.stopped:
                self.reconnects += 1
                await asyncio.sleep(0.5)

    async def wait_for(self, marker: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if marker in self.text:
                return True
            await asyncio.sleep(0.1)
        return False


def test_redis_outage_pauses_live_updates_and_never_ingest(live_server_factory, private_redis):
    server = live_server_factory(REDIS_URL=private_redis.url)
    experiment = make_experiment()
    viewer = make_member(experiment, "viewer")
    token = make_token(experiment, ["ingest"])
    assert push(server.url, token, "redis-run", [run_start("redis-run"), delta("BEFORE-1", 1)]).status_code == 200
    from experiments.models import Run

    run = Run.objects.get(run_id="redis-run")
    cookie = login_cookie(server.url, viewer.username)

    async def scenario() -> dict[str, object]:
        page = LivePage(ws_url(server.url, f"/ws/runs/{run.pk}/"), cookie, server.url)
        task = asyncio.create_task(page.run())
        seen: dict[str, object] = {}
        seen["history"] = await page.wait_for("BEFORE-1", 10)
        await asyncio.to_thread(push, server.url, token, "redis-run", [delta("LIVE-2", 2)])
        seen["live"] = await page.wait_for("LIVE-2", 10)

        await asyncio.to_thread(private_redis.stop)
        statuses = []
        for i in range(3, 6):
            response = await asyncio.to_thread(push, server.url, token, "redis-run", [delta(f"OUTAGE-{i}", i)])
            statuses.append(response.status_code)
        seen["ingest_during_outage"] = statuses
        await asyncio.sleep(1.0)

        await asyncio.to_thread(private_redis.start_on_same_port)
        await asyncio.sleep(1.5)
        await asyncio.to_thread(push, server.url, token, "redis-run", [delta("AFTER-9", 9)])
        seen["resumed"] = await page.wait_for("AFTER-9", 20)
        seen["gap_filled"] = all(f"OUTAGE-{i}" in page.text for i in range(3, 6))
        seen["reconnects"] = page.reconnects
        page.stopped = True
        await asyncio.wait_for(task, timeout=5)
        return seen

    seen = asyncio.run(scenario())
    assert seen["history"] and seen["live"], seen
    assert seen["ingest_during_outage"] == [200, 200, 200], seen
    assert seen["resumed"] and seen["gap_filled"], seen
    assert Run.objects.get(pk=run.pk).last_seq == 7  # run.start + 6 deltas, each once
