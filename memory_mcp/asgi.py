"""/mcp/ in the ASGI app: host and origin checks, the bearer token, then the SDK's streamable HTTP session manager.

Django's ASGI handler (and daphne) run no lifespan, so nothing would ever enter the session manager's `run()`
and every request would fail: the mount enters it itself, once per event loop, on the first request, and keeps
it running for the life of the process. Stateless with JSON responses, so every call is one POST and one answer
and any worker can serve it.

Hosts and origins follow Django's ALLOWED_HOSTS with Django's own matcher (DNS-rebinding protection), instead
of the SDK's separate lists that could drift from it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host

from awp_site.apierrors import ApiError
from experiments.jsonb import json_document
from memory_mcp.principal import AGENT_HEADER, Credentials, authenticate

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

MOUNT = "/mcp"
VERIFIED_FOR_SECONDS = 60.0


def is_mcp_path(path: str) -> bool:
    return path == MOUNT or path == f"{MOUNT}/"


SECURITY_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-store"), (b"referrer-policy", b"same-origin")]


async def _answer(send: Any, status: int, code: str, message: str, headers: list[tuple[bytes, bytes]] = ()) -> None:  # type: ignore[assignment]
    body = json.dumps({"code": code, "message": message}).encode()
    await _with_headers(send)({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return ""


def _with_headers(send: Any) -> Any:
    """The headers Django's SecurityMiddleware puts on the API's answers, on the SDK's answers too."""

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
        await send(message)

    return sending


def _allowed(host: str) -> bool:
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


async def _read_body(receive: Any, limit: int) -> tuple[bytes, Any]:
    """The request's body (up to `limit` bytes and one more, enough for the SDK to refuse a larger one), and a
    `receive` that hands it on as one message, then whatever the client sends next (its disconnect)."""
    chunks: list[bytes] = []
    size, more = 0, True
    while more and size <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return b"", _replay([message], receive)
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        more = message.get("more_body", False)
    body = b"".join(chunks)
    return body, _replay([{"type": "http.request", "body": body, "more_body": more}], receive)


def _replay(messages: list[dict[str, Any]], receive: Any) -> Any:
    async def replayed() -> dict[str, Any]:
        return messages.pop(0) if messages else await receive()

    return replayed


def _unanswerable_id(body: bytes) -> str:
    """Why a request's id can never be answered, or "": JSON-RPC ids are strings or integers (MCP: never null).
    The SDK reads any other id as a notification and drops the call with a bare 202, leaving the client waiting."""
    if b'"id"' not in body or b'"method"' not in body:
        return ""
    try:
        document = json_document(body.decode("utf-8"))
    except UnicodeDecodeError:
        return ""
    if not isinstance(document, dict) or "id" not in document or "method" not in document:
        return ""
    ident = document["id"]
    if isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool)):
        return ""
    return f"Invalid Request: id must be a string or an integer, not {_json_kind(ident)}."


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", float: "a fractional number", list: "an array", dict: "an object"}.get(type(value), type(value).__name__)


async def _json_rpc_refusal(send: Any, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    await _with_headers(send)({"type": "http.response.start", "status": 400,
                               "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})  # fmt: skip
    await send({"type": "http.response.body", "body": body})


class McpMount:
    """The ASGI app for /mcp/: everything else goes to `fallback` (Django)."""

    def __init__(self, fallback: Any) -> None:
        self.fallback = fallback
        self._manager: StreamableHTTPSessionManager | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: asyncio.Future[None] | None = None
        self._serving: asyncio.Task[None] | None = None
        # sha256 of secrets this process found valid lately: only decides whether the 401 pre-check runs, never
        # grants anything (every call looks its token up again).
        self._verified: dict[str, float] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not is_mcp_path(scope.get("path", "")):
            await self.fallback(scope, receive, send)
            return
        if not _allowed(_header(scope, b"host")):
            await _answer(send, 421, "invalid_host", "This host is not in ALLOWED_HOSTS.")
            return
        origin = _header(scope, b"origin")
        if origin and not _allowed(urlsplit(origin).netloc):
            await _answer(send, 403, "invalid_origin", "Requests from this origin are not accepted.")
            return
        if scope.get("method") != "POST":
            # Stateless with JSON answers: no event stream to open with GET (the SDK's would stay open forever,
            # pinning a connection per call) and no session to end with DELETE. The MCP transport answers 405.
            await _answer(send, 405, "method_not_allowed", "The MCP endpoint takes POST only (stateless, JSON answers).", [(b"allow", b"POST")])
            return
        scheme, _, secret = _header(scope, b"authorization").partition(" ")
        secret = secret.strip() if scheme.lower() == "bearer" else ""
        credentials = Credentials(
            secret=secret, agent_header=_header(scope, AGENT_HEADER.encode()), client_address=(scope.get("client") or ("?", 0))[0],
            base_url=f"{scope.get('scheme', 'http')}://{_header(scope, b'host')}",
        )  # fmt: skip
        if not self._seen_lately(secret):
            # A token this process has not seen lately is looked up here, so a wrong one gets HTTP 401 (what MCP
            # clients expect). Every tool call looks it up again anyway, in the hop that does its work.
            try:
                token = await database_sync_to_async(authenticate)(secret, client_address=credentials.client_address) if secret else None
            except ApiError as exc:
                await _answer(send, exc.status, exc.code, exc.message)
                return
            if token is None:
                await _answer(send, 401, "invalid_token", "Send an experiment API token: Authorization: Bearer <token>.",
                              [(b"www-authenticate", b'Bearer realm="awp-mcp"')])  # fmt: skip
                return
            self._remember(secret)
        body, receive = await _read_body(receive, settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        unanswerable = _unanswerable_id(body)
        if unanswerable:
            await _json_rpc_refusal(send, unanswerable)
            return
        manager = await self._running_manager()
        # A fresh state dict per request: credentials must never leak into another request's scope.
        scoped = {**scope, "state": {**scope.get("state", {}), "awp_credentials": credentials}}
        await manager.handle_request(scoped, receive, _with_headers(send))

    def _seen_lately(self, secret: str) -> bool:
        seen = self._verified.get(hashlib.sha256(secret.encode()).hexdigest()) if secret else None
        return seen is not None and time.monotonic() - seen < VERIFIED_FOR_SECONDS

    def _remember(self, secret: str) -> None:
        if len(self._verified) > 10_000:
            self._verified.clear()
        self._verified[hashlib.sha256(secret.encode()).hexdigest()] = time.monotonic()

    async def _running_manager(self) -> StreamableHTTPSessionManager:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # One manager per event loop (daphne has one); its run() lives in a task of that loop.
            self._loop, self._ready = loop, loop.create_future()
            # The SDK (~20 MB per process) is imported on the first /mcp/ call, not by every worker at start.
            from mcp.server.transport_security import TransportSecuritySettings

            from memory_mcp.server import build_server

            server = build_server()
            # The Starlette app it returns is not used: only its session manager, mounted here.
            server.streamable_http_app(
                json_response=True,
                stateless_http=True,
                # Host and origin are checked above, against ALLOWED_HOSTS.
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
                max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
            )
            self._manager = server.session_manager
            # Kept on self: the loop holds tasks only weakly, and this one must live as long as the process.
            self._serving = loop.create_task(self._serve(self._manager, self._ready))
        assert self._ready is not None and self._manager is not None
        await asyncio.shield(self._ready)
        return self._manager

    @staticmethod
    async def _serve(manager: StreamableHTTPSessionManager, ready: asyncio.Future[None]) -> None:
        try:
            async with manager.run():
                ready.set_result(None)
                await asyncio.Event().wait()  # until the process ends
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise
