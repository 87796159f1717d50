"""Shared fixtures: real Postgres (embedded pgserver, a fresh database per run), a live ASGI server, Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from bench.common import free_port, wait_for_port
from tests.factories import PASSWORD, make_experiment, make_member

# The real-runtime harness (FakeLLM, fake_llm fixture) is available to every test module.
pytest_plugins = ["tests.awp_runtime"]

# Playwright's sync API keeps an event loop on the main thread; the ORM calls of the test body are still sync.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def test_database_url() -> str:
    """A libpq URL for the test database, for subprocesses (daphne, management commands, the runtime)."""
    from django.db import connection

    from awp_site.db import embedded_url

    return embedded_url(connection.settings_dict, connection.settings_dict["NAME"])


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for a child process that must see the test database."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update({"DATABASE_URL": test_database_url(), "DJANGO_SETTINGS_MODULE": "tests.child_settings", "PYTHONUNBUFFERED": "1"})
    env.update(extra)
    return env


class AsgiServer:
    """A daphne process on a loopback port serving the test database; restartable (for reconnect tests).

    With workers=N it is `manage.py awp_serve` instead (what `make run` starts): N daphne workers on one socket.
    """

    def __init__(self, env: dict[str, str], port: int | None = None, workers: int = 0) -> None:
        self.env, self.port, self.workers = env, port or free_port(), workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = Path(f"/tmp/awp-test-daphne-{self.port}.log")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AsgiServer:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "awp_site.asgi:application"]
        if self.workers:
            command = [sys.executable, "manage.py", "awp_serve", "--port", str(self.port), "--workers", str(self.workers), "--no-demo"]
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        wait_for_port(self.port, self.proc)
        return self

    def stop(self, sig: int = 15) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def live_server_factory(transactional_db: None) -> Iterator[type[AsgiServer]]:
    """Start daphne processes against the test database; all are stopped at the end of the test."""
    servers: list[AsgiServer] = []

    def start(port: int | None = None, workers: int = 0, **env: str) -> AsgiServer:
        server = AsgiServer(subprocess_env(**env), port=port, workers=workers).start()
        servers.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in servers:
        server.stop()


@pytest.fixture
def asgi_server(live_server_factory) -> AsgiServer:  # type: ignore[no-untyped-def]
    return live_server_factory()


@pytest.fixture
def browser() -> Iterator[object]:
    # Function scope on purpose: Playwright's sync API leaves an event loop running on the main thread while it
    # is started, which would break later async_to_sync users (websocket consumer tests) in the same session.
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: run `make test` (it installs it) or apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield chromium
        close_playwright_time_connections()
        chromium.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    close_playwright_time_connections()
    context.close()


def close_playwright_time_connections() -> None:
    """Close the database connections the test opened while Playwright ran, before Playwright stops.

    Playwright's sync API marks its event loop as running on the main thread between calls, and Django keeps
    connections in an asgiref Local that switches to a per-context store whenever a loop is running: ORM calls
    made then get a second connection, which Django never closes once the loop is gone. It outlived its test
    and kept the test database "in use by another session" at teardown.
    """
    from django.db import connections

    for conn in connections.all(initialized_only=True):
        if not conn.in_atomic_block:  # a `db` test's transaction is rolled back by pytest-django, not closed
            conn.close()


def login(page, server: AsgiServer, username: str, password: str = PASSWORD) -> None:  # type: ignore[no-untyped-def]
    """Log a Playwright page in through the real login form."""
    page.goto(f"{server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{server.url}/")


@pytest.fixture
def experiment(db):  # type: ignore[no-untyped-def]
    return make_experiment()


@pytest.fixture
def owner(experiment):  # type: ignore[no-untyped-def]
    return make_member(experiment, "owner")


@pytest.fixture
def curator(experiment):  # type: ignore[no-untyped-def]
    return make_member(experiment, "curator")


@pytest.fixture
def viewer(experiment):  # type: ignore[no-untyped-def]
    return make_member(experiment, "viewer")


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["tests.hashers.FastPBKDF2PasswordHasher"]


assert settings.DATABASES["default"]["ENGINE"].endswith("postgresql"), "tests run on Postgres only"


def _drop_test_databases(only_dead: bool) -> None:
    """Drop this run's test database (or those of dead test runs) even when a stray connection holds it."""
    import psutil
    import psycopg
    from django.db import connection

    from awp_site.db import embedded_url

    url = embedded_url(connection.settings_dict, "postgres")
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
            names = [row[0] for row in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'test_awp_%'")]
            for name in names:
                # test_awp_<pid>, test_awp_poolb_<pid>; pytest-django suffixes _gw<n> under pytest-xdist.
                pid = next((part for part in name.split("_") if part.isdigit()), "")
                mine = pid == str(os.getpid())
                dead = pid.isdigit() and not psutil.pid_exists(int(pid))
                if (only_dead and dead) or (not only_dead and mine):
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass  # best effort: a leftover database costs disk, never correctness


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Fail the test that leaves a pooled database connection checked out, by name, at its own teardown.

    Django keeps a connection per thread: ORM code run on a thread the test does not own (asyncio.to_thread, an
    executor) checks a connection out of the process's pool and nothing hands it back. It then holds the test
    database to the end of the session, where dropping it fails ("being accessed by other users") far from the
    test that caused it. Run such code through `channels.db.database_sync_to_async`, or close the thread's
    connections when it is done.
    """
    result = yield
    left = _wait_for_connections_back(timeout=3.0)
    if left:
        raise AssertionError(
            f"{item.nodeid} left {left} database connection(s) checked out of the pool: ORM code ran on a thread "
            "that never closed its connection (use channels.db.database_sync_to_async, or close it in the thread)"
        )
    return result


def _wait_for_connections_back(timeout: float) -> int:
    """How many pooled connections stay checked out beyond the main thread's own (0 when all came back)."""
    import time

    from django.db import connections

    connection = connections["default"]
    pool = type(connection)._connection_pools.get(connection.alias)  # never create a pool just to look at it
    if pool is None:
        return 0
    deadline = time.monotonic() + timeout
    while True:
        stats = pool.get_stats()
        # A connection the pool is still opening counts in pool_size too, hence the short wait.
        left = stats["pool_size"] - stats["pool_available"] - (connection.connection is not None)
        if left <= 0 or time.monotonic() >= deadline:
            return max(left, 0)
        time.sleep(0.05)


def pytest_sessionstart(session: pytest.Session) -> None:
    _drop_test_databases(only_dead=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _drop_test_databases(only_dead=False)
