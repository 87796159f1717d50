"""Postgres restarted under ingest: the web service reconnects and the watcher resumes, nothing lost or doubled.

A private pgserver in a temp dir (never the shared embedded server); daphne and `awp_watch` run as child
processes on it; the test stops Postgres with pg_ctl in the middle of pushed batches and of a real AWP run
being written, then starts it again.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import psycopg
import pytest
import requests

from tests.awp_runtime import Script, run_delegation_loop
from tests.conftest import ROOT, AsgiServer
from tests.proofkit import log_events, run_start, wait_until

pytestmark = [pytest.mark.interop, pytest.mark.slow]

BATCHES, BATCH = 40, 100


def pusher(base_url: str, token: str, run_id: str, outcome: dict[str, object]) -> None:
    """Push BATCHES batches, retrying each (same idempotency keys) on connection errors and 5xx."""
    attempts = failures = 0
    session = requests.Session()
    for b in range(BATCHES):
        events = ([run_start(run_id)] if b == 0 else []) + log_events(BATCH, start=b * BATCH)
        while True:
            attempts += 1
            try:
                response = session.post(
                    f"{base_url}/api/v1/ingest",
                    json={"run_id": run_id, "events": events},
                    headers={"Authorization": f"Bearer {token}"},
                    timeout=15,
                )
                if response.status_code == 200:
                    break
                # Only server trouble is retried; every answer must still say what happened.
                bodies = outcome.setdefault("error_bodies", [])
                bodies.append((response.status_code, response.text[:300]))  # type: ignore[union-attr]
                if response.status_code < 500:
                    break
            except requests.ConnectionError:
                pass
            failures += 1
            time.sleep(0.2)
        time.sleep(0.05)
    outcome.update(attempts=attempts, failures=failures, done=True)


def test_postgres_restart_under_ingest_loses_nothing(private_postgres, fake_llm, tmp_path):
    pg = private_postgres
    secret = pg.shell(
        "from experiments.models import Experiment, ApiToken\n"
        "e, _ = Experiment.objects.get_or_create(slug='pgfault', defaults={'name': 'PG fault'})\n"
        "print(ApiToken.issue(experiment=e, name='t', scopes=['ingest'])[1])"
    ).strip().splitlines()[-1]
    folder = tmp_path / "wf"
    run_delegation_loop(folder, fake_llm)  # one finished run on disk before anything starts

    server = AsgiServer(pg.env()).start()
    watch_log = (tmp_path / "watch.log").open("wb")
    watcher = subprocess.Popen(
        [sys.executable, "manage.py", "awp_watch", str(folder), "--experiment", "pgfault", "--interval", "0.2"],
        cwd=ROOT,
        env=pg.env(),
        stdout=watch_log,
        stderr=subprocess.STDOUT,
    )
    runtime = None
    try:
        with psycopg.connect(pg.url) as conn:

            def run_events(run_id: str | None = None) -> int:
                sql = "SELECT count(*) FROM experiments_event e JOIN experiments_run r ON r.id = e.run_id"
                row = conn.execute(sql + (" WHERE r.run_id = %s" if run_id else ""), [run_id] if run_id else []).fetchone()
                conn.commit()
                return int(row[0]) if row else 0

            wait_until(lambda: run_events() > 0, timeout=60, what="the watcher imported the first run")
            outcome: dict[str, object] = {}
            thread = threading.Thread(target=pusher, args=(server.url, secret, "pushed-run", outcome), daemon=True)
            thread.start()
            wait_until(lambda: run_events("pushed-run") >= 5 * BATCH, timeout=60, what="ingest under way")

            # A second real run starts writing while Postgres goes away.
            fake_llm.reset(Script(iterations=3, delay_s=0.3))
            runtime = run_delegation_loop(folder, fake_llm, background=True)
        pg.stop()
        time.sleep(3)
        health_down = requests.get(f"{server.url}/healthz", timeout=10)
        pg.start()
        thread.join(timeout=120)
        assert outcome.get("done"), f"the pusher never finished: {outcome}"
        assert runtime.wait(timeout=120) == 0, runtime.stderr.read() if runtime.stderr else ""

        assert health_down.status_code == 503 and health_down.json()["failing"] == "database"
        wait_until(lambda: requests.get(f"{server.url}/healthz", timeout=10).status_code == 200, timeout=30, what="healthz ok")
        assert server.proc is not None and server.proc.poll() is None, "daphne survived the restart"
        assert watcher.poll() is None, "the watcher survived the restart"

        with psycopg.connect(pg.url) as conn:
            rows = conn.execute(
                "SELECT e.seq, e.dedupe_key FROM experiments_event e JOIN experiments_run r ON r.id = e.run_id "
                "WHERE r.run_id = 'pushed-run' ORDER BY e.seq"
            ).fetchall()
        # Every pushed event exactly once, in gap-free seqs, although some batches were sent more than once.
        assert len(rows) == BATCHES * BATCH + 1
        assert [seq for seq, _ in rows] == list(range(1, len(rows) + 1))
        assert len({key for _, key in rows}) == len(rows)
        assert int(outcome["failures"]) > 0, "the restart really interrupted the pushes"  # type: ignore[call-overload]

        # The watcher caught up with the run written across the restart: a one-shot import finds nothing new.
        def nothing_new() -> bool:
            out = pg.manage("awp_import", str(folder), "--experiment", "pgfault", "--json")
            summary = json.loads(out.strip().splitlines()[-1])
            return summary["new_events"] == 0 and summary["runs"] == 2

        wait_until(nothing_new, timeout=60, interval=1.0, what="the watcher caught up (a one-shot import adds nothing)")
        # While the database was away the API said so: a retryable 503 with a code, never an HTML 500.
        for status, body in outcome.get("error_bodies", []):  # type: ignore[attr-defined]
            assert status in {502, 503} and json.loads(body)["code"], (status, body)
    finally:
        if runtime is not None and runtime.poll() is None:
            runtime.kill()
        watcher.terminate()
        try:
            watcher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watcher.kill()
        server.stop()
        watch_log.close()
