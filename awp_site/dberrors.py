"""What a database error means for the caller: the database is down (503, retry), the input could not be
stored (400, never retry), or a bug (500).

psycopg files very different failures under OperationalError: a refused connection and a restarting server,
but also a query cancelled, a tsquery too long for Postgres (54000) or a statement too complex (54001).
Only the first kind is worth a retry, so a 503 `database_unavailable` is answered for exactly those: no
SQLSTATE (the connection failed or broke), class 08 (connection exception), 57P01–57P03 (the server is
shutting down or starting), 53300 (too many connections), an exhausted pool, or an InterfaceError (a
connection already closed).
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db import DatabaseError, InterfaceError

DOWN_STATES = frozenset({"57P01", "57P02", "57P03", "53300"})
RETRY_AFTER_SECONDS = 2


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _sqlstate(exc: BaseException) -> str | None:
    for link in _chain(exc):
        state = getattr(link, "sqlstate", None)
        if state:
            return str(state)
    return None


def is_database_down(exc: BaseException) -> bool:
    """Whether `exc` says the database cannot be reached or is restarting (not what a query asked of it)."""
    import psycopg

    from awp_site.db import DatabaseUnavailable

    links = list(_chain(exc))
    if any(isinstance(link, DatabaseUnavailable | InterfaceError | psycopg.InterfaceError) for link in links):
        return True
    if not any(isinstance(link, DatabaseError | psycopg.OperationalError) for link in links):
        return False
    state = _sqlstate(exc)
    if state is None:
        return any(isinstance(link, psycopg.OperationalError) for link in links)
    return state.startswith("08") or state in DOWN_STATES


def is_input_refused_by_database(exc: BaseException) -> bool:
    """Whether Postgres refused the data itself (class 22 data exception, class 54 program limit exceeded)."""
    state = _sqlstate(exc) or ""
    return state.startswith(("22", "54"))


def answer_for(exc: BaseException) -> tuple[int, dict[str, object]] | None:
    """(status, JSON body) for a database error, or None when it is a bug (a 500)."""
    if is_database_down(exc):
        message = "The database is unavailable right now; retry shortly."
        return 503, {"code": "database_unavailable", "message": message, "retry_after": RETRY_AFTER_SECONDS}
    if is_input_refused_by_database(exc):
        message = "The input cannot be stored or searched as sent (a value out of range, too long or malformed); do not retry it unchanged."
        return 400, {"code": "input_not_storable", "message": message}
    return None
