"""Database wiring: the embedded Postgres (pgserver) by default, DATABASE_URL when set."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import psutil

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
