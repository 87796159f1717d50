"""Helpers for the proof suites (security, reliability, load, scale-out): real servers, real sockets, loopback only."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from bench.common import free_port
from tests.factories import PASSWORD

FRAME_MARK = re.compile(r'data-frame="(\d+)"')


def login_cookie(base_url: str, username: str, password: str = PASSWORD) -> str:
    """Log in through the real login form of a live server; return a Cookie header value."""
    session = requests.Session()
    session.get(f"{base_url}/login/", timeout=10)
    response = session.post(
        f"{base_url}/login/",
        data={"username": username, "password": password, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{base_url}/login/"},
        timeout=10,
    )
    assert response.status_code == 200 and "sessionid" in session.cookies, response.status_code
    return "; ".join(f"{k}={v}" for k, v in session.cookies.items())


def push(base_url: str, token: str, run_id: str, events: list[dict[str, Any]], timeout: float = 60) -> requests.Response:
    """POST one batch to the ingest endpoint."""
    return requests.post(
        f"{base_url}/api/v1/ingest",
        json={"run_id": run_id, "events": events},
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout,
    )


def log_events(n: int, *, start: int = 0, prefix: str = "e", kind: str = "log") -> list[dict[str, Any]]:
    """n small events with idempotency keys prefix<i> (so a replay stores nothing new)."""
    return [
        {"kind": kind, "idempotency_key": f"{prefix}{i}", "payload": {"msg": f"{prefix} event {i}", "i": i}}
        for i in range(start, start + n)
    ]


def run_start(run_id: str) -> dict[str, Any]:
    return {"kind": "run.start", "idempotency_key": "start", "payload": {"run_id": run_id, "task": "proof"}}


async def collect_frames(
    ws_url: str,
    cookie: str,
    *,
    origin: str,
    seconds: float,
    until: Callable[[list[str]], bool] | None = None,
) -> tuple[list[str], int | None]:
    """Follow one socket for up to `seconds` (acknowledging frames); return (frames, close code or None)."""
    import websockets

    frames: list[str] = []
    headers = {"Cookie": cookie, "Origin": origin}
    async with websockets.connect(ws_url, additional_headers=headers, open_timeout=10) as sock:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while loop.time() < deadline:
            try:
                frame = await asyncio.wait_for(sock.recv(), timeout=max(0.05, deadline - loop.time()))
            except TimeoutError:
                break
            except websockets.ConnectionClosed as closed:
                return frames, closed.rcvd.code if closed.rcvd else None
            frames.append(str(frame))
            mark = FRAME_MARK.search(str(frame))
            if mark:
                await sock.send(json.dumps({"ack": int(mark.group(1))}))
            if until is not None and until(frames):
                break
    return frames, None


def ws_url(base_url: str, path: str) -> str:
    return base_url.replace("http://", "ws://", 1) + path


def wait_until(predicate: Callable[[], bool], *, timeout: float, interval: float = 0.1, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise TimeoutError(f"{what} not reached within {timeout}s")


class RedisServer:
    """A private redis-server on a free loopback port (never the machine's shared one on 6379)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(self.workdir)]
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.05)
        raise TimeoutError("redis-server did not start")

    def start_on_same_port(self) -> RedisServer:
        """Start again after stop() on the same port (a restart, as clients see it)."""
        return self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.proc = None


def database_clock() -> object:
    """The test database's clock now (to count the backends a server opens after it)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def backends_since(started: object, application_name: str | None = None) -> int:
    """Client backends of this test database opened since `started` (a server's, not those of a server an earlier
    test stopped: they leave pg_stat_activity a moment after; nor this process's own), of one application if named."""
    from django.db import connection

    named = " AND application_name = %s" if application_name is not None else ""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            f" AND backend_type = 'client backend' AND backend_start >= %s{named}",
            [started, *([application_name] if application_name is not None else [])],
        )
        return int(cursor.fetchone()[0])
