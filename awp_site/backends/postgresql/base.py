"""Django's PostgreSQL backend with a pool that waits for a busy pool but not for a dead server.

psycopg_pool's getconn waits its whole timeout whether every connection is busy (worth waiting for) or
Postgres is down (not worth it: the API should answer 503 `database_unavailable` at once). So the wait is
cut in slices (the pool's own `timeout`, 2 s in settings): after each slice without a connection, one direct connection attempt asks the server; if it
does not answer, the request fails now; if it does, the pool was only busy and the wait goes on.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from django.conf import settings
from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        pool = self.pool
        if pool is None:
            return super().get_new_connection(conn_params)
        from psycopg_pool import PoolTimeout

        deadline = time.monotonic() + float(getattr(settings, "AWP_DB_POOL_WAIT", 60.0))
        while True:
            try:
                return super().get_new_connection(conn_params)
            except PoolTimeout:
                if time.monotonic() >= deadline or not _server_answers(pool):
                    raise


def _server_answers(pool: Any) -> bool:
    """Whether Postgres accepts a new connection right now (a short, direct attempt beside the pool)."""
    try:
        with psycopg.connect(pool.conninfo, **{**pool.kwargs, "connect_timeout": 2}):
            return True
    except psycopg.Error:
        return False
