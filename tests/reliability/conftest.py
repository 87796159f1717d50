"""Fault-test fixtures: a private Postgres (never the shared embedded one) and a private Redis, both on loopback."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.proofkit import RedisServer


@dataclass
class PrivatePostgres:
    """A pgserver instance in a temp dir: stop() and start() it with pg_ctl while services use it."""

    server: object
    url: str

    @property
    def pgdata(self) -> Path:
        return self.server.pgdata  # type: ignore[attr-defined,no-any-return]

    def stop(self) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.pgdata, user=self.server.system_user)  # type: ignore[attr-defined]

    def start(self) -> None:
        # pgserver's own start path (same socket directory, same options), run under its inter-process lock.
        with self.server._lock:  # type: ignore[attr-defined]
            self.server.ensure_postgres_running()  # type: ignore[attr-defined]

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE", "REDIS_URL"}}
        env.update({"DATABASE_URL": self.url, "DJANGO_SETTINGS_MODULE": "awp_site.settings", "PYTHONUNBUFFERED": "1", "AWP_EMBEDDER": "none"})
        env.update(extra)
        return env

    def manage(self, *args: str, timeout: float = 240) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(), capture_output=True, text=True, timeout=timeout
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
        return result.stdout

    def shell(self, code: str) -> str:
        return self.manage("shell", "-c", code)


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivatePostgres]:
    import pgserver

    root = Path(tempfile.mkdtemp(prefix="awp-pg-"))
    os.chmod(root, 0o755)  # pgserver runs postgres as its own system user when we are root
    server = pgserver.get_server(root / "pg", cleanup_mode="delete")
    server.psql("CREATE DATABASE awp;")
    url = server.get_uri("awp")
    private = PrivatePostgres(server=server, url=url)
    private.manage("migrate", "--no-input", "-v", "0")
    yield private
    try:
        server.cleanup()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    redis = RedisServer(tmp_path / "redis").start()
    yield redis
    redis.stop()
