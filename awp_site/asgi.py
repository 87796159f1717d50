"""ASGI entry point: Django for HTTP, the MCP server at /mcp/, Channels for websockets (session auth + origin check)."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")

import django  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402


class OneHopASGIHandler(ASGIHandler):
    """Django's ASGI handler with the middleware chain and the view run in one thread hop per request.

    Every middleware here and every page view is synchronous. Django's own handler builds an async chain around
    them: the request goes to a thread for the middleware, back to the event loop for the innermost (async)
    handler, into the thread again for the view, and back out twice (four hand-overs, each a wake-up of a thread
    and of the loop). Built synchronous, the chain runs in the request's thread from the first middleware to the
    view and back: one hand-over in, one out. It is the same thread-sensitive thread Django would use (one per
    request, ThreadSensitiveContext), so the database connection and request_finished's clean-up are as before.
    An async view, should one come, still runs (Django's sync handler wraps it with async_to_sync).
    """

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):  # type: ignore[no-untyped-def]
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


django.setup(set_prefix=False)
# Serve /static/ (htmx, app JS and CSS) from the ASGI app itself, so daphne alone is a working site.
django_asgi_app = ASGIStaticFilesHandler(OneHopASGIHandler())

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from awp_site.db import exit_unless_pgvector  # noqa: E402
from awp_site.logging import mask_daphne_access_log  # noqa: E402
from awp_site.routing import websocket_urlpatterns  # noqa: E402
from memory_mcp.asgi import McpMount  # noqa: E402

exit_unless_pgvector()
mask_daphne_access_log()

application = ProtocolTypeRouter(
    {
        # /mcp/ is the Model Context Protocol server (memory_mcp); everything else is Django.
        "http": McpMount(django_asgi_app),
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
