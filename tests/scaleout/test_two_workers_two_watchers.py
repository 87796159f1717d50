"""Scale-out on one machine: 2 daphne workers on Redis + 2 watchers sharded by advisory locks, one ledger.

Redis is the machine's 127.0.0.1:6379 with a db number of its own (channel names are per test database, so
concurrent test runs cannot mix frames they would then read from their own Postgres anyway).
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from channels.db import database_sync_to_async

from experiments.models import Event, Run
from tests.awp_runtime import run_delegation_loop
from tests.conftest import ROOT, subprocess_env
from tests.factories import make_experiment, make_member, make_token
from tests.proofkit import log_events, login_cookie, push, run_start, wait_until, ws_url

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]
REDIS_URL = "redis://127.0.0.1:6379/11"


def marked_delta(marker: str, round_: int) -> dict[str, object]:
    return {
        "kind": "state.delta",
        "agent_id": "w",
        "idempotency_key": marker,
        "payload": {"agent_id": "w", "round": round_, "op": "add", "path": f"$.m{round_}", "value": marker, "provenance": "t"},
    }


def start_watcher(folders: list[Path], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "awp_watch", *map(str, folders), "--experiment", "scale", "--interval", "0.2"],
            cwd=ROOT,
            env=subprocess_env(REDIS_URL=REDIS_URL, AWP_EMBEDDER="none"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def follow(url: str, cookie: str, origin: str, seconds: float, stop: threading.Event) -> str:
    import websockets

    text = ""
    async with websockets.connect(url, additional_headers={"Cookie": cookie, "Origin": origin}, open_timeout=10) as sock:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline and not stop.is_set():
            try:
                frame = str(await asyncio.wait_for(sock.recv(), timeout=0.3))
            except TimeoutError:
                continue
            text += frame
            mark = re.search(r'data-frame="(\d+)"', frame)
            if mark:
                await sock.send(json.dumps({"ack": int(mark.group(1))}))
    return text


def test_two_workers_and_two_watchers_make_one_ledger_live_on_both(live_server_factory, fake_llm, tmp_path):
    worker_a = live_server_factory(REDIS_URL=REDIS_URL)
    worker_b = live_server_factory(REDIS_URL=REDIS_URL)
    experiment = make_experiment(slug="scale")
    viewer = make_member(experiment, "viewer")
    token = make_token(experiment, ["ingest"])
    assert push(worker_a.url, token, "scale-run", [run_start("scale-run")]).status_code == 200
    run = Run.objects.get(run_id="scale-run")

    f1, f2, shared = tmp_path / "f1", tmp_path / "f2", tmp_path / "shared"
    for folder in (f1, f2, shared):
        folder.mkdir()
    watchers = [
        start_watcher([f1, shared], tmp_path / "w1.log"),
        start_watcher([f2, shared], tmp_path / "w2.log"),
    ]
    try:
        cookies = {w.url: login_cookie(w.url, viewer.username) for w in (worker_a, worker_b)}
        stop = threading.Event()

        async def scenario() -> list[str]:
            sockets = [
                follow(ws_url(w.url, f"/ws/runs/{run.pk}/?after=0"), cookies[w.url], w.url, 60, stop) for w in (worker_a, worker_b)
            ] + [follow(ws_url(w.url, "/ws/experiments/scale/"), cookies[w.url], w.url, 60, stop) for w in (worker_a, worker_b)]
            tasks = [asyncio.create_task(s) for s in sockets]
            await asyncio.sleep(1.0)

            # Ingest through both workers at once, into the same run.
            def pusher(worker, prefix: str) -> None:  # type: ignore[no-untyped-def]
                for b in range(10):
                    assert push(worker.url, token, "scale-run", log_events(100, start=b * 100, prefix=prefix)).status_code == 200

            threads = [threading.Thread(target=pusher, args=(w, p)) for w, p in ((worker_a, "a"), (worker_b, "b"))]
            for t in threads:
                t.start()
            await asyncio.to_thread(lambda: [t.join() for t in threads])
            await asyncio.to_thread(push, worker_a.url, token, "scale-run", [marked_delta("VIA-A", 1)])
            await asyncio.to_thread(push, worker_b.url, token, "scale-run", [marked_delta("VIA-B", 2)])

            # Real runs written into the three folders; the watchers (separate processes) import them.
            for folder in (f1, f2, shared):
                await asyncio.to_thread(run_delegation_loop, folder, fake_llm)
            # ORM from async code through Channels' wrapper: it hands the thread's connection back to the pool
            # (a plain asyncio.to_thread kept it checked out to the end of the session, and the test database
            # could not be dropped).
            await database_sync_to_async(wait_until)(
                lambda: Event.objects.filter(run__experiment=experiment, kind="run.complete").count() == 3,
                timeout=60,
                what="all three folder runs imported",
            )
            await asyncio.sleep(2.0)
            stop.set()
            return list(await asyncio.gather(*tasks))

        run_a, run_b, exp_a, exp_b = asyncio.run(scenario())

        # One consistent ledger: every pushed event once, gap-free seqs, whichever worker took it.
        rows = list(Event.objects.filter(run=run).order_by("seq").values_list("seq", "dedupe_key"))
        assert len(rows) == 1 + 2000 + 2
        assert [s for s, _ in rows] == list(range(1, len(rows) + 1))
        assert len({k for _, k in rows}) == len(rows)
        # Live on both: each worker's socket reached the head, i.e. saw what was ingested through the other one.
        head = Run.objects.get(pk=run.pk).last_seq
        for frames in (run_a, run_b):
            seqs = [int(s) for s in re.findall(r'id="live-mark"[^>]*data-seq="(\d+)"', frames)]
            assert seqs and max(seqs) == head, (seqs[-3:], head)
            assert 'id="event-2003"' in frames or "VIA-B" in frames, frames[-500:]
        folder_runs = list(Run.objects.filter(experiment=experiment).exclude(pk=run.pk).values_list("run_id", flat=True))
        assert len(folder_runs) == 3
        for frames in (exp_a, exp_b):
            assert frames, "the experiment page on each worker heard about the watchers' imports"
            assert any(run_id in frames for run_id in folder_runs) or "experiment-row" in frames or "run-row" in frames

        # The shared folder went to exactly one watcher (advisory lock), and nothing was missed or doubled.
        logs = [(tmp_path / f"w{i}.log").read_text() for i in (1, 2)]
        holders = [i for i, log in enumerate(logs) if f"{shared}: +" in log]
        assert len(holders) == 1, logs
        check = subprocess.run(
            [sys.executable, "manage.py", "awp_import", str(f1), str(f2), str(shared), "--experiment", "scale", "--json"],
            cwd=ROOT,
            env=subprocess_env(AWP_EMBEDDER="none"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        summary = json.loads(check.stdout.strip().splitlines()[-1])
        assert summary["new_events"] == 0, summary
        assert all(w.poll() is None for w in watchers)
    finally:
        for watcher in watchers:
            watcher.terminate()
        for watcher in watchers:
            try:
                watcher.wait(timeout=10)
            except subprocess.TimeoutExpired:
                watcher.kill()
