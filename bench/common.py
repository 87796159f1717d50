"""Shared helpers for the benchmarks: a benchmark database, daphne on loopback, timing and percentiles.

A benchmark runs against its own database (`awp_bench_<name>`) on the embedded Postgres (or on the server
DATABASE_URL names), never against the development database. Figures are printed, never asserted.
"""

from __future__ import annotations

import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def percentile(samples: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) of samples, by linear interpolation between closest ranks."""
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summary_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean in milliseconds for samples in seconds."""
    ms = [s * 1000.0 for s in samples_s]
    return {
        "n": len(ms),
        "p50": percentile(ms, 50),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "mean": statistics.fmean(ms) if ms else float("nan"),
    }


def time_calls(fn: Callable[[], Any], *, repeat: int, warmup: int = 3) -> list[float]:
    """Call fn warmup times (not measured), then repeat times; return each call's wall time in seconds."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def machine() -> str:
    """One line naming the machine the figures come from."""
    return f"{platform.node()} · {os.cpu_count()} cores · Python {platform.python_version()} · {platform.machine()}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def benchmark_database_url(name: str) -> str:
    """A libpq URL for database awp_bench_<name>, created if missing on the embedded (or DATABASE_URL) server."""
    import psycopg

    from awp_site.db import data_dir, embedded_url, parse_database_url, start_embedded_server

    if os.environ.get("DATABASE_URL"):
        config = parse_database_url(os.environ["DATABASE_URL"])
    else:
        config = start_embedded_server(data_dir())
    db_name = f"awp_bench_{name}"
    admin_url = embedded_url(config, "postgres")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db_name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{db_name}"')
    return embedded_url(config, db_name)


def setup_django(name: str, *, migrate: bool = True) -> str:
    """Point this process at the benchmark database, set Django up, migrate; return the database URL."""
    url = benchmark_database_url(name)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")
    os.environ.setdefault("AWP_EMBEDDER", "none")
    import django

    django.setup()
    if migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0, interactive=False)
    return url


def child_env(database_url: str, **extra: str) -> dict[str, str]:
    """Environment for a child process (daphne, a watcher) on the benchmark database."""
    env = dict(os.environ)
    env.update({"DATABASE_URL": database_url, "DJANGO_SETTINGS_MODULE": "awp_site.settings", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


def wait_for_port(port: int, proc: subprocess.Popen[bytes] | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited early with {proc.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


@contextmanager
def daphne(database_url: str, *, port: int | None = None, **env: str) -> Iterator[str]:
    """A daphne process on a loopback port serving the benchmark database; yields its base URL."""
    port = port or free_port()
    log = Path(f"/tmp/awp-bench-daphne-{port}.log")
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "awp_site.asgi:application"]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=child_env(database_url, **env), stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class LoopbackPage:
    """A page user's keep-alive HTTP/1.1 connection: GETs over asyncio streams, nothing else.

    A load test measures the server, and the clients share its cores here. httpx spent ~1.6 ms of client CPU per
    request (40 % of a core for the load scenario's page users, more than either daphne worker got); this costs
    ~0.16 ms, as a browser on another machine costs the server nothing. Bodies come by Content-Length or chunked.
    """

    def __init__(self, base_url: str) -> None:
        host, _, port = base_url.removeprefix("http://").rstrip("/").partition(":")
        self.host, self.port = host, int(port or 80)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        """(status, body) of GET path; a broken connection raises and the next call reconnects."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        try:
            return await self._exchange(path, headers)
        except BaseException:
            self.close()
            raise

    async def _exchange(self, path: str, headers: dict[str, str]) -> tuple[int, bytes]:
        assert self.reader is not None and self.writer is not None
        lines = [f"GET {path} HTTP/1.1", f"Host: {self.host}:{self.port}", *(f"{k}: {v}" for k, v in headers.items())]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status_line, *header_lines = head[:-4].split("\r\n")
        status = int(status_line.split(" ", 2)[1])
        fields = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
        if "content-length" in fields:
            body = await self.reader.readexactly(int(fields["content-length"]))
        elif fields.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readexactly(2)
            await self.reader.readuntil(b"\r\n")
            body = b"".join(parts)
        else:
            body = await self.reader.read()
            fields["connection"] = "close"
        if fields.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A small Markdown table on stdout (the format bench/README.md keeps)."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    print("| " + " | ".join(headers) + " |")
    print("|" + "|".join("---" for _ in headers) + "|")
    for row in rows:
        print("| " + " | ".join(cell(v) for v in row) + " |")
