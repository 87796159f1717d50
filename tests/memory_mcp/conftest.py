"""Helpers for the MCP tests: the SDK's own client over streamable HTTP (against daphne) and over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation

from tests.conftest import ROOT, subprocess_env


@asynccontextmanager
async def http_client(
    base_url: str, token: str, *, name: str = "pytest-agent", agent: str = "", mode: str = "auto"
) -> AsyncIterator[Client]:
    """An MCP client on `base_url`/mcp/ sending the token (and the X-AWP-Agent header when given).

    mode "auto" speaks the 2026-07-28 revision (no handshake); "legacy" the initialize handshake of older clients.
    """
    headers = {"Authorization": f"Bearer {token}", **({"X-AWP-Agent": agent} if agent else {})}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(f"{base_url}/mcp/", http_client=http)
        async with Client(transport, client_info=Implementation(name=name, version="1.0"), mode=mode) as client:  # type: ignore[arg-type]
            yield client


@asynccontextmanager
async def stdio_client(slug: str, token: str) -> AsyncIterator[Client]:
    """An MCP client talking to `manage.py awp_mcp` started as a child process on the test database."""
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "awp_mcp", "--experiment", slug, "--token", token],
        cwd=str(ROOT), env=subprocess_env(),
    )  # fmt: skip
    async with Client(params, client_info=Implementation(name="pytest-stdio", version="1.0")) as client:
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any] | None = None) -> tuple[bool, dict[str, Any]]:
    """(is_error, answer): the tool's structured answer, or its refusal {code, message} when it failed."""
    result = await client.call_tool(name, arguments or {})
    if result.is_error:
        text = result.content[0].text if result.content else ""
        try:
            return True, json.loads(text)
        except ValueError:
            return True, {"code": "sdk_error", "message": text}
    return False, result.structured_content or json.loads(result.content[0].text)
