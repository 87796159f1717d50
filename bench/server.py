"""The request path through the real server (`manage.py awp_serve`, what `make run` starts): daphne workers on
one socket, the connection pool, session and token auth, on loopback.

    python bench/server.py            # 1 worker, then one per core; 2,000 list requests, 500 pushes per run
    python bench/server.py --quick    # fewer requests

Two figures, each against a baseline measured in the same run:
- one-event push (POST /api/v1/ingest, token, concurrency 1) p50 ÷ GET /healthz p50 (same connection kind); beside
  it the same for a kind a projector reads (iteration.*) and the server's durable commit at the time;
- the experiments list (logged in, 10 concurrent keep-alive clients) in requests/s, beside /healthz at the same
  concurrency (the server's floor).
The client is a small asyncio HTTP/1.1 keep-alive client in this process (no extra package). Also printed: the
workers' CPU per request, which a busy machine hardly moves (latencies it does). Printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    ROOT,
    child_env,
    free_port,
    machine,
    percentile,
    print_table,
    setup_django,
    wait_for_port,
)

CONCURRENCY = 10


class Connection:
    """One keep-alive HTTP/1.1 connection: request() → (status, body bytes)."""

    def __init__(self, port: int, headers: dict[str, str]) -> None:
        self.port, self.headers = port, headers
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"", content_type: str = "application/json") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self.reader is not None
        head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}", "Connection: keep-alive"]
        head += [f"{name}: {value}" for name, value in self.headers.items()]
        if body:
            head += [f"Content-Type: {content_type}", f"Content-Length: {len(body)}"]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        status_line = await self.reader.readline()
        status = int(status_line.split()[1])
        length, chunked = 0, False
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "content-length":
                length = int(value)
            elif name.lower() == "transfer-encoding" and "chunked" in value.lower():
                chunked = True
        if not chunked:
            return status, await self.reader.readexactly(length)
        chunks = []
        while size := int((await self.reader.readline()).strip(), 16):
            chunks.append(await self.reader.readexactly(size))
            await self.reader.readline()
        await self.reader.readline()
        return status, b"".join(chunks)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def sequential(port: int, headers: dict[str, str], calls: list[tuple[str, str, bytes]]) -> list[float]:
    """Each call on one keep-alive connection, one after another; their latencies in seconds."""
    conn, out = Connection(port, headers), []
    for method, path, body in calls:
        started = time.perf_counter()
        status, text = await conn.request(method, path, body)
        out.append(time.perf_counter() - started)
        if status != 200:
            raise SystemExit(f"{method} {path}: {status} {text[:300]!r}")
    await conn.close()
    return out


async def concurrent(port: int, headers: dict[str, str], path: str, total: int, clients: int = CONCURRENCY) -> tuple[float, list[float]]:
    """`total` GETs of `path` by `clients` keep-alive clients at once: (requests/s, latencies)."""
    remaining, latencies = [total], []

    async def worker() -> None:
        conn = Connection(port, headers)
        while remaining[0] > 0:
            remaining[0] -= 1
            started = time.perf_counter()
            status, text = await conn.request("GET", path)
            latencies.append(time.perf_counter() - started)
            if status != 200:
                raise SystemExit(f"GET {path}: {status} {text[:300]!r}")
        await conn.close()

    await asyncio.gather(*(worker() for _ in range(clients)))  # warm every worker's connections first
    remaining[0], latencies = total, []
    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(clients)))
    return total / (time.perf_counter() - started), latencies


def fixtures() -> tuple[str, str]:
    """A session for a member of 10 experiments (5 runs each) and an ingest token; returns (cookie, token)."""
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from experiments.models import ApiToken, Experiment, Membership, Run

    user, _ = get_user_model().objects.get_or_create(username="bench-server")
    for i in range(10):
        experiment, _ = Experiment.objects.get_or_create(slug=f"bench-server-{i}", defaults={"name": f"Bench {i}", "goal": "measure the list"})
        Membership.objects.get_or_create(user=user, experiment=experiment, defaults={"role": "owner"})
        for r in range(5 - experiment.runs.count()):
            Run.objects.create(experiment=experiment, run_id=f"run-{r}")
    session = SessionStore()
    session.update({"_auth_user_id": str(user.pk), "_auth_user_backend": "django.contrib.auth.backends.ModelBackend", "_auth_user_hash": user.get_session_auth_hash()})
    session.create()
    _token, secret = ApiToken.issue(experiment=Experiment.objects.get(slug="bench-server-0"), name=f"bench-{time.time_ns()}", scopes=["ingest"])
    return session.session_key or "", secret


def start_server(url: str, workers: int) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = Path(f"/tmp/awp-bench-server-{port}.log").open("ab")
    command = [sys.executable, "manage.py", "awp_serve", "--port", str(port), "--workers", str(workers), "--no-demo"]
    proc = subprocess.Popen(command, cwd=ROOT, env=child_env(url, AWP_EMBEDDER="none"), stdout=log, stderr=subprocess.STDOUT)
    wait_for_port(port, proc, timeout=60)
    time.sleep(1.0 * workers)  # every worker up (the port answers as soon as the first one is)
    return proc, port


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGINT)  # Ctrl-C: awp_serve stops its workers
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def worker_cpu(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds (user + system) used so far by the daphne workers of awp_serve."""
    import psutil

    total = 0.0
    for child in psutil.Process(proc.pid).children():
        if child.name() == "awp-daphne" or "daphne" in " ".join(child.cmdline()):  # forked by awp_serve, or started
            times = child.cpu_times()
            total += times.user + times.system
    return total


def commit_p50(url: str, n: int = 200) -> float:
    """The durable commit's own cost on this server now (ms): an autocommit one-row INSERT p50 minus SELECT 1 p50.

    What a push pays beyond /healthz however few its round trips (synchronous_commit on: the WAL is flushed)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_probe (v int)")  # not TEMP: temp tables write no WAL
        inserts, selects = [], []
        for _ in range(n):
            for sql, out in (("INSERT INTO bench_commit_probe VALUES (1)", inserts), ("SELECT 1", selects)):
                started = time.perf_counter()
                conn.execute(sql)
                out.append(time.perf_counter() - started)
        conn.execute("DROP TABLE bench_commit_probe")
    return (percentile(inserts, 50) - percentile(selects, 50)) * 1000


def measure(url: str, workers: int, cookie: str, token: str, pushes: int, lists: int) -> dict[str, Any]:
    proc, port = start_server(url, workers)
    try:
        run_id = f"push-{time.time_ns()}"
        start = json.dumps({"run_id": run_id, "events": [{"kind": "run.start", "idempotency_key": "s", "payload": {}}]}).encode()
        bodies = [
            json.dumps({"run_id": run_id, "events": [{"kind": "log", "idempotency_key": f"e{i}", "payload": {"msg": f"event {i}"}}]}).encode()
            for i in range(pushes)
        ]
        bearer = {"Authorization": f"Bearer {token}"}
        asyncio.run(sequential(port, bearer, [("POST", "/api/v1/ingest", start)] + [("GET", "/healthz", b"")] * 50))
        # Interleaved, so both see the same moments of a busy machine.
        calls: list[tuple[str, str, bytes]] = []
        for body in bodies:
            calls += [("GET", "/healthz", b""), ("POST", "/api/v1/ingest", body)]
        times = asyncio.run(sequential(port, bearer, calls))
        health, push = times[0::2], times[1::2]
        # Server CPU per request: far less sensitive to a busy machine than latency (other work only steals time).
        cpu0 = worker_cpu(proc)
        asyncio.run(sequential(port, bearer, [("GET", "/healthz", b"")] * pushes))
        cpu1 = worker_cpu(proc)
        more = [
            json.dumps({"run_id": run_id, "events": [{"kind": "log", "idempotency_key": f"more{i}", "payload": {"msg": f"event {i}"}}]}).encode()
            for i in range(pushes // 2)
        ]
        asyncio.run(sequential(port, bearer, [("POST", "/api/v1/ingest", body) for body in more]))
        cpu2 = worker_cpu(proc)
        # A kind a projector reads (iteration.*: the run's header) takes the general path: the same interleaving.
        calls = []
        for i in range(pushes // 2):
            event = {"kind": "iteration.start", "idempotency_key": f"it{i}", "iteration": i, "payload": {}}
            calls += [("GET", "/healthz", b""), ("POST", "/api/v1/ingest", json.dumps({"run_id": run_id, "events": [event]}).encode())]
        times = asyncio.run(sequential(port, bearer, calls))
        projected, projected_health = times[1::2], times[0::2]
        session = {"Cookie": f"sessionid={cookie}"}
        health_rps, health_lat = asyncio.run(concurrent(port, session, "/healthz", lists))
        cpu3 = worker_cpu(proc)
        list_rps, list_lat = asyncio.run(concurrent(port, session, "/", lists))
        cpu4 = worker_cpu(proc)
    finally:
        stop_server(proc)
    return {
        "workers": workers,
        "health_p50": percentile(health, 50) * 1000,
        "push_p50": percentile(push, 50) * 1000,
        "push_p95": percentile(push, 95) * 1000,
        "health_rps": health_rps,
        "list_rps": list_rps,
        "list_p50": percentile(list_lat, 50) * 1000,
        "list_p95": percentile(list_lat, 95) * 1000,
        "health_c10_p50": percentile(health_lat, 50) * 1000,
        "health_cpu": (cpu1 - cpu0) / pushes * 1000,
        "push_cpu": (cpu2 - cpu1) / len(more) * 1000,
        "projected_ratio": percentile(projected, 50) / percentile(projected_health, 50),
        "commit_p50": commit_p50(url),
        "list_cpu": (cpu4 - cpu3) / (2 * lists) * 1000,  # the warm-up round counts too: 2 × lists requests
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--workers", type=str, default="", help="comma-separated worker counts (default: 1 and one per core)")
    args = parser.parse_args()
    url = setup_django("server")
    cookie, token = fixtures()
    counts = [int(n) for n in args.workers.split(",")] if args.workers else sorted({1, os.cpu_count() or 1})
    pushes, lists = (250, 600) if args.quick else (500, 2000)  # pushes stay under the token rate limit (600/min)
    results = [measure(url, n, cookie, token, pushes, lists) for n in counts]
    print(f"# request path through awp_serve · {machine()} · {pushes} pushes, {lists} list requests per row")
    print("\nOne-event push, concurrency 1, keep-alive; baseline: GET /healthz interleaved on the same connection\n")
    print_table(
        ["workers", "healthz p50 ms", "push p50 ms", "push p95 ms", "push ÷ healthz (p50)", "healthz CPU ms", "push CPU ms", "iteration.* push ÷ healthz", "commit ms"],
        [
            [r["workers"], r["health_p50"], r["push_p50"], r["push_p95"], r["push_p50"] / r["health_p50"], r["health_cpu"], r["push_cpu"], r["projected_ratio"], r["commit_p50"]]
            for r in results
        ],
    )
    print("\niteration.* push: a kind a projector reads (the general path). commit ms: this server's durable commit now")
    print("(autocommit one-row INSERT p50 − SELECT 1 p50), which every push pays and /healthz does not.")
    print(f"\nExperiments list (10 experiments, logged in), {CONCURRENCY} concurrent keep-alive clients; baseline: /healthz at the same concurrency\n")
    print_table(
        ["workers", "healthz requests/s", "list requests/s", "list p50 ms", "list p95 ms", "list CPU ms (daphne)"],
        [[r["workers"], r["health_rps"], r["list_rps"], r["list_p50"], r["list_p95"], r["list_cpu"]] for r in results],
    )
    print("\nCPU ms: daphne workers' CPU per request (user + system, Postgres not included); a busy machine hardly moves it.")
    best = results[-1]
    print(f"\npush_ratio {best['push_p50'] / best['health_p50']:.2f}")
    print(f"list_rps {best['list_rps']:.0f}")


if __name__ == "__main__":
    main()
