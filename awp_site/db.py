"""Database wiring: the embedded Postgres (pgserver) by default, DATABASE_URL when set."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import psutil
import psycopg

EMBEDDED_DB_NAME = "awp"


class DatabaseUnavailable(RuntimeError):
    """Raised with a sentence a person can act on when the database cannot serve the app."""


def parse_database_url(url: str) -> dict[str, Any]:
    """Turn a postgres:// URL into a Django DATABASES entry."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql", "postgresql+psycopg"}:
        raise DatabaseUnavailable(f"DATABASE_URL must be a postgres:// URL, not {parsed.scheme}://")
    query = parse_qs(parsed.query)
    host = unquote(parsed.hostname or "") or query.get("host", [""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or "") or "postgres",
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
    }


def start_embedded_server(data_dir: Path) -> dict[str, Any]:
    """Start (or join) the embedded Postgres 16 + pgvector under data_dir and describe how to reach it."""
    import warnings

    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); pgserver copes, so say nothing.
    warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR.*")
    import pgserver  # imported lazily: only the embedded mode needs it

    pgdata = data_dir / "pg"
    pgdata.mkdir(parents=True, exist_ok=True)
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    _forget_dead_handles(pgdata, pgserver.PostgresServer._lock)
    # "stop": the last process holding a handle stops the server, so Ctrl-C on `make run` leaves nothing behind.
    server = pgserver.get_server(pgdata, cleanup_mode="stop")
    socket_dir = str(pgdata)
    existing = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{EMBEDDED_DB_NAME}';")
    if "(0 rows)" in existing:
        server.psql(f"CREATE DATABASE {EMBEDDED_DB_NAME};")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": EMBEDDED_DB_NAME,
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": socket_dir,
        "PORT": "",
    }


def _forget_dead_handles(pgdata: Path, lock: Any) -> None:
    """Drop pids of processes that died without cleaning up (SIGKILL), so the last live one still stops the server."""
    handles = pgdata / ".handle_pids.json"
    with lock:
        if not handles.exists():
            return
        try:
            pids = json.loads(handles.read_text())
        except ValueError:
            pids = []
        alive = [pid for pid in pids if psutil.pid_exists(pid)]
        if alive != pids:
            handles.write_text(json.dumps(alive))


def embedded_url(config: dict[str, Any], name: str | None = None) -> str:
    """A libpq URL for a DATABASES entry, for subprocesses (tests, benchmarks, the watcher)."""
    db = name or config["NAME"]
    if config["HOST"].startswith("/"):
        return f"postgresql://{config['USER']}@/{db}?host={config['HOST']}"
    auth = config["USER"] + (f":{config['PASSWORD']}" if config["PASSWORD"] else "")
    port = f":{config['PORT']}" if config["PORT"] else ""
    return f"postgresql://{auth}@{config['HOST']}{port}/{db}"


def ensure_pgvector(alias: str = "default") -> str:
    """Create the vector extension if needed and return its version, or raise DatabaseUnavailable."""
    from django.db import connections
    from django.db.utils import Error as DatabaseError

    connection = connections[alias]
    where = connection.settings_dict.get("HOST") or "localhost"
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
            if row is None:
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                row = cursor.fetchone()
    except DatabaseError as exc:
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "vector" in message:
            raise DatabaseUnavailable(
                f"The Postgres server at {where} has no pgvector extension ({message}). "
                "Install pgvector on that server (https://github.com/pgvector/pgvector#installation), "
                "or unset DATABASE_URL to use the embedded Postgres that ships with pgvector."
            ) from None
        raise DatabaseUnavailable(
            f"Cannot use the database at {where}: {message}. Check DATABASE_URL, or unset it to use the embedded Postgres."
        ) from None
    return str(row[0])


def exit_unless_pgvector() -> None:
    """Stop the process with one clear sentence (no traceback) when pgvector is unavailable."""
    try:
        ensure_pgvector()
    except DatabaseUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def wants_database(argv: list[str]) -> bool:
    """Whether this manage.py invocation needs the database (help and version do not)."""
    if len(argv) < 2:
        return False
    return argv[1] not in {"help", "--help", "-h", "version", "--version", "makemigrations", "shell_plus"}


def data_dir() -> Path:
    """Where local state (the embedded database, demo folders) lives."""
    default = Path(__file__).resolve().parent.parent / ".awp-data"
    return Path(os.environ.get("AWP_DATA_DIR", default)).resolve()


def dedicated_params() -> dict[str, Any]:
    """psycopg.connect() arguments for a connection of its own to Django's database (no pool, no Django cursor
    class): for what must hold a session — advisory locks, LISTEN — apart from the pooled request connections."""
    from django.db import connection

    connection.ensure_connection()
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return params


@contextmanager
def prepared_cursor() -> Iterator[Any]:
    """A cursor on Django's connection whose statements are prepared on the server: parsed and planned once per
    pooled connection and statement text, then only executed. For a hot statement whose planning costs more than
    its run (the one-event push: ~0.7 ms of planning against ~0.4 ms of work).

    Django binds on the client and prepares nothing (for poolers such as PgBouncer in transaction mode);
    AWP_PREPARED_STATEMENTS=0 does the same here. Parameters go typed and apart from the text, so a parameter in
    a select list needs its cast. Still Django's cursor wrapper: its errors, its query log (CaptureQueriesContext).
    """
    from django.conf import settings
    from django.db import connection

    if not getattr(settings, "AWP_PREPARED_STATEMENTS", True):
        with connection.cursor() as cursor:
            yield cursor
        return
    connection.ensure_connection()
    conn = connection.connection
    # Django turns preparing off (None). Only while this cursor runs, a threshold no count reaches lets prepare=True
    # prepare: with a threshold set, psycopg would also count every query of Django's cursors by its text (with
    # client-side binding the text holds the parameters: megabytes for a large batch, kept per connection).
    conn.prepare_threshold = sys.maxsize
    try:
        raw = _PreparingCursor(conn)
        with _debug_wrapper()(raw, connection) if connection.queries_logged else connection.make_cursor(raw) as cursor:
            yield cursor
    finally:
        conn.prepare_threshold = None


class _PreparingCursor(psycopg.Cursor):  # type: ignore[type-arg]
    """Server-side binding, every statement prepared (psycopg keeps the names per connection, the 100 last used)."""

    def execute(self, query: Any, params: Any = None, *, prepare: bool | None = None, binary: bool | None = None) -> Any:
        return super().execute(query, params, prepare=True, binary=binary)


@cache
def _debug_wrapper() -> type:
    from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

    class PreparedDebugCursor(CursorDebugWrapper):
        """Django's query log, with the statement's text: a prepared run leaves psycopg no query text to report."""

        def execute(self, sql: Any, params: Any = None) -> Any:
            with self.debug_sql(sql, params):
                return CursorWrapper.execute(self, sql, params)

    return PreparedDebugCursor
