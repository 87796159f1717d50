"""ASGI entry point: Django for HTTP, the MCP server at /mcp/, Channels for websockets (session auth + origin check)."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

# Serve /static/ (htmx, app JS and CSS) from the ASGI app itself, so daphne alone is a working site.
django_asgi_app = ASGIStaticFilesHandler(get_asgi_application())

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
