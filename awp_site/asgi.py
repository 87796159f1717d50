"""ASGI entry point: Django for HTTP, the MCP server at /mcp/, Channels for websockets (session auth + origin check)."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")

import asyncio  # noqa: E402
import contextvars  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402

import django  # noqa: E402
from asgiref.sync import ThreadSensitiveContext, sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core import signals  # noqa: E402
from django.core.exceptions import RequestAborted  # noqa: E402
from django.core.handlers.asgi import ASGIHandler, get_script_prefix  # noqa: E402
from django.db import close_old_connections, connections  # noqa: E402
from django.http import FileResponse  # noqa: E402
from django.urls import set_script_prefix  # noqa: E402


class PooledASGIHandler(ASGIHandler):
    """Django's ASGI handler with each request's synchronous work done in one call on a fixed pool of threads.

    Every middleware here and every page view is synchronous. Django's own handler starts a new thread for every
    request (its ThreadSensitiveContext makes a one-thread executor and shuts it down after the response) and hands
    the request over to it several times: request_started, the middleware chain and the view, request_finished.
    Here the whole synchronous part runs in one job on a long-lived pool thread: request_started, building the
    request, the middleware chain and the view, and request_finished (Django's `response.close()`, which hands the
    database connection back to the pool); the event loop then only sends the bytes. One request's sync code still
    runs in one thread from start to end, which is all thread-sensitive code needs (the connection, the URLconf).
    The pool has as many threads as a process has database connections (AWP_DB_POOL_MAX): requests beyond that wait
    for a thread instead of for a connection, with nothing to wake meanwhile.

    A streamed response (an export) is sent as Django sends it, inside a ThreadSensitiveContext, so its iterator's
    database work and its close run in one thread of their own. An async view, should one come, still runs (the
    sync middleware chain wraps it with async_to_sync).
    """

    def __init__(self, threads: int) -> None:
        super().__init__()
        self.threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="awp-request")

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        # A copy of this request's context, as sync_to_async gives: nothing one request sets leaks into the next.
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        response = await loop.run_in_executor(self.threads, context.run, self.respond, scope, body_file)
        if not response.streaming:
            await self.send_response(response, send)
            return
        async with ThreadSensitiveContext():
            try:
                await self.send_response(response, send)
            finally:
                await sync_to_async(response.close)()

    def respond(self, scope, body_file):  # type: ignore[no-untyped-def]
        """In a pool thread: what Django's handler does for one request, up to the bytes to send."""
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            response = self.get_response(request)
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.content  # noqa: B018 -- rendered here, in this thread, before request_finished
            response.close()  # request_finished: the database connection goes back to the pool
        else:
            # Its iterator reads in a thread of its own, where its close sends request_finished: the view's connection
            # goes back to the pool now, not when this thread next serves a request.
            close_old_connections()
        body_file.close()
        return response


django.setup(set_prefix=False)
# Serve /static/ (htmx, app JS and CSS) from the ASGI app itself, so daphne alone is a working site.
django_handler = PooledASGIHandler(threads=max(4, settings.AWP_DB_POOL_MAX))
django_asgi_app = ASGIStaticFilesHandler(django_handler)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from awp_site.db import exit_unless_pgvector  # noqa: E402
from awp_site.logging import mask_daphne_access_log  # noqa: E402
from awp_site.routing import websocket_urlpatterns  # noqa: E402
from experiments.push_edge import PushAtTheEdge  # noqa: E402
from memory_mcp.asgi import McpMount  # noqa: E402

exit_unless_pgvector()
# The check's connection goes back to the pool: the main thread serves no request, and kept, it held one of the
# pool's connections for the life of the worker (with AWP_DB_POOL_MAX=1, every request waited for it in vain).
connections.close_all()
mask_daphne_access_log()

application = ProtocolTypeRouter(
    {
        # /mcp/ is the Model Context Protocol server (memory_mcp); a one-event push the edge can take is answered on
        # the event loop (experiments.push_edge); everything else is Django.
        "http": McpMount(PushAtTheEdge(django_asgi_app, threads=django_handler.threads)),
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)


def _freeze_startup_heap() -> None:
    """Move everything startup allocated out of the collector's reach (gc.freeze).

    Django, the views, the models and the libraries are ~150,000 tracked objects that live as long as the process;
    every full collection walked them all again (~110 ms of each 5,000-event ingest batch, and pauses in pages).
    The URLconf is imported first so the view modules are part of the frozen heap.
    """
    import gc

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 -- imports every view module now
    gc.collect()
    gc.freeze()


_freeze_startup_heap()
