"""Websocket routes (the live capability adds the run and experiment consumers)."""

from __future__ import annotations

websocket_urlpatterns: list = []
