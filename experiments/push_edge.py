"""The one-event push answered on the worker's event loop, before Django (an ASGI layer in awp_site.asgi).

A push that experiments.push would take (a bearer token this process has seen, one valid event into an existing
run, a kind no projector reads) costs its statement and its commit in Postgres. Through Django it also paid a hand-over
to a request thread and back, Django's request and response and the middleware chain: most of its time in the
worker (bench/server.py). Here the same push is read, checked and written on the event loop, on one connection of
its own per worker (psycopg's async connection), with the same statement (experiments.push.write_statement), the
same rate limits counted once, the same answer, masked by the same known-secret matcher the net uses, and the headers
the middleware would add.

Whatever is not exactly that goes on, untouched, to Django, which answers it as it always has: another path or method,
a query string, a body over EDGE_MAX_BODY or without Content-Length, no bearer token or one this process has not
loaded yet, a host Django would refuse, a body the JSON reader or the event validation refuses, an event a projector
reads, `Prefer: respond-async` (the inbox), HTTPS settings (redirects and HSTS are Django's), a cache that is not
this process's memory (counting there could block the loop), a busy edge connection (a second concurrent push), a
token or run the statement does not find, and any error before the statement has answered (the general path is
idempotent by the event's dedupe key, so a push whose commit was lost with its connection is not written twice).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from awp_site.apierrors import ApiError
from awp_site.auth import CountedRates, check_address_rate, hit_token_rate
from awp_site.jsonbody import parse_json_body
from experiments import push
from experiments.models import hash_secret
from experiments.projections import needs_projection

log = logging.getLogger(__name__)

PATH = "/api/v1/ingest"
EDGE_MAX_BODY = 64 * 1024  # a one-event push is a few KB; larger bodies are batches, Django's

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class PushAtTheEdge:
    """ASGI: answers the pushes it can take itself and hands every other request to `app` as it came."""

    def __init__(self, app: Callable[..., Awaitable[None]], threads: Executor) -> None:
        self.app = app
        self.threads = threads  # for a step that must read through Django (known secrets learnt since the last look)
        self.conn: Any = None
        self.connect_after = 0.0  # monotonic time before which no new connection is tried
        self.busy = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        length = _candidate_length(scope)
        if length is None:
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        if body is None:
            return  # the client went away before its body had come: nobody to answer
        replay = _replaying(body, receive)
        if self.busy or len(body) != length:
            await self.app(scope, replay, send)
            return
        self.busy = True
        try:
            answer = await self._push(scope, body)
        except Exception as exc:  # noqa: BLE001 - a fault here must not cost the push: Django's path answers it
            log.warning("a push at the edge went to Django's path: %s", type(exc).__name__)
            answer = None
        finally:
            self.busy = False
        if answer is None:
            await self.app(scope, replay, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": answer_headers(len(answer))})
        await send({"type": "http.response.body", "body": answer, "more_body": False})

    async def _push(self, scope: Scope, body: bytes) -> bytes | None:
        """The answer's bytes, or None to hand the request to Django (with what was counted, in the scope)."""
        headers = _headers(scope)
        secret = push.bearer_of(headers.get(b"authorization", b"").decode("latin-1"))
        if secret is None or not _host_allowed(headers.get(b"host", b"")):
            return None
        try:
            value = parse_json_body(body)
        except ApiError:
            return None
        event, run_id, slug = push.one_event_of(value)
        if event is None:
            return None
        hashed = hash_secret(secret)
        token = push.loaded_token(hashed)  # a look-up is Django's
        if token is None or not push.may_push(token, slug):
            return None
        notify = push.notify_expression()
        if notify is None or needs_projection(event, token.experiment):
            return None
        # From here the attempt counts (address, then token), once: a hand-over tells Django's path what was counted.
        client = (scope.get("client") or ("?",))[0]
        try:
            check_address_rate(client)
        except ApiError:
            return None  # over the address's limit: Django's path counts it again (still over) and answers 429
        wait = hit_token_rate(token.id)
        scope[push.COUNTED_RATES] = CountedRates(token_id=token.id, token_wait=wait)
        if wait is not None:
            return None
        row = await self._write(token, hashed, run_id, event, notify)
        if row is None:
            return None
        valid, run_pk, head, known, seq, _notified, stamp = row
        if not valid:
            push.forget_token(hashed)
            return None
        if run_pk is None or (seq is None and known is None):
            return None  # no such run (Django answers 404), or a concurrent writer's key (Django reads its seq)
        masks = await self._known_secrets(token.experiment.pk, (int(stamp[0]), int(stamp[1])))
        return masks.mask(push.answer_json(run_id, seq=seq, known=known, head=head)).encode()

    async def _write(self, token: Any, hashed: str, run_id: str, event: Any, notify: tuple[str, list[Any]]) -> tuple[Any, ...] | None:
        """experiments.push's statement on the edge's connection; None (and a new connection next time) on any error."""
        sql, params = push.write_statement(token, hashed, run_id, event, notify)
        if self.conn is None or self.conn.closed:
            if time.monotonic() < self.connect_after:
                return None  # the last attempt failed a moment ago (Postgres down or restarting): Django answers
            try:
                self.conn = await _connect()
            except Exception as exc:  # noqa: BLE001
                log.warning("the push edge could not connect (%s); pushes go through Django for a second", type(exc).__name__)
                self.connect_after = time.monotonic() + 1.0
                return None
        try:
            cursor = await self.conn.execute(sql, params, prepare=getattr(settings, "AWP_PREPARED_STATEMENTS", True))
            return await cursor.fetchone()
        except BaseException as exc:  # a failure, or the task cancelled mid-statement: this connection is not reused
            conn, self.conn = self.conn, None
            asyncio.get_running_loop().create_task(_close(conn))
            if not isinstance(exc, Exception):
                raise
            log.warning("a push at the edge went to Django's path: %s", type(exc).__name__)
            return None

    async def _known_secrets(self, experiment_id: int, stamp: tuple[int, int]) -> Any:
        """The net's matcher for the experiment at this stamp: compiled already (no query), or read in a thread."""
        from state.secrets import compiled_known_secrets, known_secrets_for

        masks = compiled_known_secrets(experiment_id, stamp=stamp, escaped=True)
        if masks is not None:
            return masks

        def read() -> Any:
            from django.db import connection

            try:
                return known_secrets_for(experiment_id, escaped=True, stamp=stamp)
            finally:
                connection.close()  # back to the pool now, not when this thread next serves a request

        return await asyncio.get_running_loop().run_in_executor(self.threads, read)


def answer_headers(length: int) -> list[tuple[bytes, bytes]]:
    """The headers of a push's answer: those Django's path sends (tests/experiments/test_push_edge.py compares)."""
    from awp_site.middleware import CONTENT_SECURITY_POLICY, PERMISSIONS_POLICY

    headers = [(b"content-type", b"application/json; charset=utf-8")]
    if settings.SECURE_CONTENT_TYPE_NOSNIFF:
        headers.append((b"x-content-type-options", b"nosniff"))
    if settings.SECURE_REFERRER_POLICY:
        headers.append((b"referrer-policy", settings.SECURE_REFERRER_POLICY.encode()))
    if settings.SECURE_CROSS_ORIGIN_OPENER_POLICY:
        headers.append((b"cross-origin-opener-policy", settings.SECURE_CROSS_ORIGIN_OPENER_POLICY.encode()))
    headers += [
        (b"x-frame-options", settings.X_FRAME_OPTIONS.encode()),
        (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
        (b"permissions-policy", PERMISSIONS_POLICY.encode()),
        (b"vary", b"Cookie"),  # Django's session middleware: the login check reads the (absent) session
        (b"content-length", str(length).encode()),
    ]
    return headers


async def _close(conn: Any) -> None:
    with contextlib.suppress(Exception):
        await conn.close()


async def _connect() -> Any:
    """The edge's own connection: Django's connection parameters, autocommit (each statement its own transaction)."""
    import psycopg
    from django.db import connections

    params = connections["default"].get_connection_params()
    for name in ("cursor_factory", "prepare_threshold"):
        params.pop(name, None)
    params.setdefault("connect_timeout", 2)
    return await psycopg.AsyncConnection.connect(**params, autocommit=True, application_name="awp push edge")


def _candidate_length(scope: Scope) -> int | None:
    """The announced body length of a request the edge may take; None for every other request."""
    if scope["type"] != "http" or scope.get("method") != "POST" or scope.get("path") != PATH or scope.get("query_string"):
        return None
    if not settings.AWP_PUSH_EDGE:
        return None
    if scope.get("scheme", "http") != "http" or settings.SECURE_SSL_REDIRECT or settings.SECURE_PROXY_SSL_HEADER:
        return None
    if not _local_cache():
        return None
    length = None
    for name, value in scope.get("headers") or ():
        if name == b"content-length":
            if length is not None or not value.isdigit():
                return None
            length = int(value)
        elif name == b"transfer-encoding" or (name == b"prefer" and b"respond-async" in value.lower()):
            return None
    return length if length is not None and 0 < length <= EDGE_MAX_BODY else None


def _local_cache() -> bool:
    backend = settings.CACHES.get("default", {}).get("BACKEND", "")
    return backend.endswith("locmem.LocMemCache")


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body (daphne has read it already: its Content-Length is at most EDGE_MAX_BODY); None on a disconnect."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body the edge read, then whatever the client sends next (a disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replay() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replay


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request's headers by name; a name sent twice is left out (Django judges such a request)."""
    seen: dict[bytes, bytes] = {}
    twice: set[bytes] = set()
    for name, value in scope.get("headers") or ():
        if name in seen:
            twice.add(name)
        seen[name] = value
    for name in twice:
        del seen[name]
    return seen


def _host_allowed(value: bytes) -> bool:
    """What Django's request.get_host() accepts (CommonMiddleware refuses any other host with a 400)."""
    domain, _port = split_domain_port(value.decode("latin-1"))
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)
