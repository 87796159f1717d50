"""Two deployments (two daphne servers on two databases) sharing one pool through a real NATS JetStream
server on loopback, each with its own `awp_pool_bridge` process; the stream is unique to this test run."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.conf import settings

from bench.common import free_port, wait_for_port
from pool.transport import delete_stream
from tests import conftest
from tests.conftest import ROOT, AsgiServer, subprocess_env
from tests.pool.helpers import PoolClient, create_claw, envelope
from tests.proofkit import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
NATS_URL = settings.AWP_POOL_NATS_URL  # the machine's server; a private one when it is not running


def _reachable(url: str) -> bool:
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url)
    try:
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 4222), timeout=2):
            return True
    except OSError:
        return False


@pytest.fixture
def nats_url(tmp_path) -> Iterator[str]:
    """The machine's JetStream server (AWP_POOL_NATS_URL), or a private one from Debian's nats-server package."""
    if _reachable(NATS_URL):
        yield NATS_URL
        return
    binary = shutil.which("nats-server") or "/usr/sbin/nats-server"
    assert Path(binary).exists(), f"no NATS server at {NATS_URL} and no nats-server binary (apt-get install nats-server)"
    port = free_port()
    proc = subprocess.Popen([binary, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(tmp_path / "nats")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def second_database() -> Iterator[str]:
    """A second, migrated database on the same embedded Postgres (dropped with the run's test databases)."""
    from django.db import connection

    from awp_site.db import embedded_url

    name = f"test_awp_poolb_{os.getpid()}"
    admin = embedded_url(connection.settings_dict, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = embedded_url(connection.settings_dict, name)
    subprocess.run([sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=subprocess_env(DATABASE_URL=url), check=True, timeout=600)
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Bridge:
    """An `awp_pool_bridge` process for one deployment."""

    def __init__(self, env: dict[str, str], stream: str, subject: str, url: str) -> None:
        self.env, self.stream, self.subject, self.url = env, stream, subject, url
        self.log = Path(f"/tmp/awp-test-bridge-{uuid.uuid4().hex[:8]}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Bridge:
        command = [sys.executable, "manage.py", "awp_pool_bridge", "--stream", self.stream, "--subject", self.subject, "--nats-url", self.url]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        return self

    def stop(self) -> str:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        return self.log.read_text()


def rows(url: str, sql: str, *params: object) -> list[tuple]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


def claw_on(url: str, claw_id: str) -> str:
    out = subprocess.run([sys.executable, "manage.py", "awp_claw", "create", "--claw-id", claw_id], cwd=ROOT,
                         env=subprocess_env(DATABASE_URL=url), check=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


async def _publish_foreign(url: str, stream: str, subject: str, raw: dict, origin: str) -> None:
    import nats

    nc = await nats.connect(url)
    try:
        await nc.jetstream().publish(subject, json.dumps(raw).encode(), stream=stream, headers={"Awp-Origin": origin})
    finally:
        await nc.close()


def test_two_deployments_converge_through_jetstream(second_database, nats_url):
    run = uuid.uuid4().hex[:10]
    stream, subject = f"AWP_POOL_TEST_{run}", f"awp.pool.test.{run}"
    url_a, url_b = conftest.test_database_url(), second_database
    env_a = subprocess_env(AWP_POOL_CLAW_ID="deploy-a", DATABASE_URL=url_a)
    env_b = subprocess_env(AWP_POOL_CLAW_ID="deploy-b", DATABASE_URL=url_b)
    servers = [AsgiServer(env_a).start(), AsgiServer(env_b).start()]
    bridges = [Bridge(env_a, stream, subject, nats_url).start(), Bridge(env_b, stream, subject, nats_url).start()]
    try:
        a, b = servers
        c1, c2, c3 = (PoolClient(a.url, name, create_claw(name)) for name in ("claw-1", "claw-2", "claw-3"))
        b1 = PoolClient(b.url, "claw-b1", claw_on(url_b, "claw-b1"))
        assert b1.presence().json()["outcome"] == "accepted"  # B's own envelope travels to A: four active there
        wait_until(lambda: rows(url_a, "SELECT count(*) FROM pool_participant WHERE claw_id = 'claw-b1'") == [(1,)], timeout=60, what="B's presence reaching A")
        for c in (c1, c2, c3):
            c.presence()
        c1.propose("shared-1", "Error E142 with a DB timeout maps to mitigation M7", tags=["incident"])
        c1.vote("shared-1", "yes")
        assert "decision" not in c2.vote("shared-1", "yes").json()  # 2 of 4 active: a majority needs 3

        # B's participant votes on B; the vote crosses over and A, the coordinator, decides.
        wait_until(lambda: rows(url_b, "SELECT count(*) FROM pool_poolproposal WHERE proposal_id = 'shared-1'") == [(1,)], timeout=60, what="the proposal reaching B")
        assert b1.vote("shared-1", "yes", "seen here too").json()["outcome"] == "accepted"
        wait_until(lambda: c1.proposal("shared-1")["status"] == "accepted", timeout=60, what="A deciding with B's vote")

        # The fact accepted in A appears in B exactly once, with the same version; B's copy of the proposal is decided.
        wait_until(lambda: any(f["fact_id"] == "fact:shared-1" for f in b1.facts()), timeout=60, what="fact reaching deployment B")
        assert [(f["fact_id"], f["version"]) for f in b1.facts()] == [("fact:shared-1", 1)]
        assert rows(url_b, "SELECT fact_id, version FROM pool_poolfactversion") == [("fact:shared-1", 1)]
        assert b1.proposal("shared-1")["status"] == "accepted"
        assert sorted(v["claw_id"] for v in b1.proposal("shared-1")["votes"]) == ["claw-1", "claw-2", "claw-b1"]
        # B's envelopes reached A through the rules (origin bus); A's own envelopes never came back as bus ones.
        assert rows(url_a, "SELECT DISTINCT claw_id FROM pool_poolenvelope WHERE origin = 'bus'") == [("claw-b1",)]
        assert rows(url_a, "SELECT count(*) FROM pool_poolaudit WHERE origin = 'bus' AND claw_id <> 'claw-b1'") == [(0,)]

        # Restarting B's bridge replays the whole subject: nothing doubles (every replayed envelope is a duplicate).
        envelopes_b = rows(url_b, "SELECT count(*) FROM pool_poolenvelope")[0][0]
        bus_from_a = rows(url_b, "SELECT count(*) FROM pool_poolenvelope WHERE origin = 'bus'")[0][0]
        duplicates_before = rows(url_b, "SELECT count(*) FROM pool_poolaudit WHERE outcome = 'duplicate'")[0][0]
        bridges[1].stop()
        bridges[1] = Bridge(env_b, stream, subject, nats_url).start()
        wait_until(
            lambda: rows(url_b, "SELECT count(*) FROM pool_poolaudit WHERE outcome = 'duplicate'")[0][0] >= duplicates_before + bus_from_a,
            timeout=60, what="B's bridge replaying the subject",
        )  # fmt: skip
        assert rows(url_b, "SELECT count(*) FROM pool_poolenvelope")[0][0] == envelopes_b
        assert rows(url_b, "SELECT fact_id, version FROM pool_poolfactversion") == [("fact:shared-1", 1)]

        # An amendment in A reaches B as v2, once.
        c2.propose("shared-2", "Error E142 maps to mitigation M7, then M8 if it recurs", amends_fact_id="fact:shared-1")
        for c in (c1, c2, c3):
            c.vote("shared-2", "yes")
        wait_until(lambda: any(f["version"] == 2 for f in b1.facts()), timeout=60, what="v2 reaching B")
        assert rows(url_b, "SELECT fact_id, version FROM pool_poolfactversion ORDER BY version") == [("fact:shared-1", 1), ("fact:shared-1", 2)]

        # An envelope on the bus that claims A's own clawId is ignored by A (self-loop suppression), and audited.
        forged = envelope("fact", "deploy-a", {"fact_id": "fact:shared-1", "version": 3, "statement": "loop", "proposal_id": "shared-2"}, trace="trace-loop")
        asyncio.run(_publish_foreign(nats_url, stream, subject, forged, origin="somewhere-else"))
        wait_until(lambda: rows(url_a, "SELECT count(*) FROM pool_poolaudit WHERE trace_id = 'trace-loop'")[0][0] >= 1, timeout=60, what="the forged envelope reaching A")
        assert rows(url_a, "SELECT outcome, code FROM pool_poolaudit WHERE trace_id = 'trace-loop'") == [("ignored", "self_loop")]
        assert rows(url_a, "SELECT max(version) FROM pool_poolfactversion") == [(2,)]
        # B applies it through the rules and refuses it: the decision behind shared-2 made v2, not v3.
        wait_until(lambda: rows(url_b, "SELECT count(*) FROM pool_poolaudit WHERE trace_id = 'trace-loop'")[0][0] >= 1, timeout=60, what="the forged envelope reaching B")
        assert rows(url_b, "SELECT outcome, code FROM pool_poolaudit WHERE trace_id = 'trace-loop'") == [("rejected", "conflict")]
        assert rows(url_b, "SELECT max(version) FROM pool_poolfactversion") == [(2,)]
    finally:
        logs = [bridge.stop() for bridge in bridges]
        for server in servers:
            server.stop()
        asyncio.run(delete_stream(url=nats_url, stream=stream))
    assert all("Traceback" not in log for log in logs), logs
