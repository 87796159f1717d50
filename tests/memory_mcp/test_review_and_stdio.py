"""An MCP proposal through review in a real Chromium, and the stdio transport (`manage.py awp_mcp`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from django.test import Client
from playwright.sync_api import expect

from experiments.models import ApiToken
from memory.curation.models import Proposal
from memory.longterm import current_long_term
from tests.conftest import login
from tests.factories import make_experiment, make_member, make_token
from tests.memory_mcp.conftest import call, http_client, stdio_client
from tests.memory_mcp.test_http import READ_TOOLS, WRITE_TOOLS, seed

T = TypeVar("T")


def run_async(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run an async scenario on a thread of its own (Playwright's sync API holds this thread's event loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(scenario())).result()  # type: ignore[arg-type]


@pytest.mark.browser
def test_a_proposal_waits_for_review_and_its_status_follows_the_approval(asgi_server, page) -> None:
    experiment = make_experiment(slug="mcp-review")
    seed(experiment, "gateway")
    curator = make_member(experiment, "curator")
    token = make_token(experiment, ["memory:read", "memory:write"])
    statement = "The gateway cache is warm after three requests."

    async def propose() -> tuple[dict[str, Any], dict[str, Any]]:
        async with http_client(asgi_server.url, token, name="claude-like", agent="scout") as client:
            _, proposed = await call(client, "memory_propose", {"statement": statement, "kind": "fact", "source": "bench/gateway.log",
                                                                "evidence": "p50 fell from 80 ms to 9 ms"})  # fmt: skip
            _, status = await call(client, "memory_proposal_status", {"proposal_id": proposed["proposal_id"]})
            return proposed, status

    proposed, status = run_async(propose)
    before = current_long_term(experiment)
    assert proposed["status"] == "proposed" and status["status"] == "pending"
    proposal = Proposal.objects.get(pk=proposed["proposal_id"])
    assert (proposal.status, proposal.origin, proposal.text) == ("pending", "agent", statement)
    assert proposal.details["proposed_by"]["agent_id"] == "scout"
    assert statement not in before.content  # never a direct write to MEMORY.md

    login(page, asgi_server, curator.username)
    page.goto(proposed["review_url"])
    detail = page.locator(f"#proposal-detail[data-proposal='{proposal.pk}']")
    expect(detail.locator(".proposal-full")).to_have_text(statement)
    expect(detail.locator(".proposed-by")).to_have_text("scout · MCP claude-like 1.0")
    expect(page.locator("#review-queue")).to_contain_text("agent")
    detail.locator("form.vote-approve button[type=submit]").click()
    expect(page.get_by_text(f"{proposal.short_id} is approved.")).to_be_visible()

    async def follow() -> tuple[dict[str, Any], dict[str, Any]]:
        async with http_client(asgi_server.url, token, agent="scout") as client:
            _, status = await call(client, "memory_proposal_status", {"proposal_id": proposal.pk})
            _, memory = await call(client, "memory_read")
            return status, memory

    status, memory = run_async(follow)
    after = current_long_term(experiment)
    assert after.version == before.version + 1
    assert (status["status"], status["memory_version"]) == ("approved", after.version)
    assert memory["version"] == after.version and statement in memory["content"]


def test_stdio_serves_the_same_tools_and_answers(transactional_db) -> None:
    experiment = make_experiment(slug="mcp-stdio")
    seed(experiment, "gateway")
    token = make_token(experiment, ["memory:read", "memory:write"])
    reader = make_token(experiment, ["memory:read"])
    args = {"query": "gateway", "mode": "keyword", "max_results": 5}

    async def scenario() -> dict[str, Any]:
        async with stdio_client(experiment.slug, token) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            _, searched = await call(client, "memory_search", args)
            _, proposed = await call(client, "memory_propose", {"statement": "stdio proposals land too.", "idempotency_key": "s-1"})
            memory = (await client.read_resource("awp://memory/MEMORY.md")).contents[0].text
        async with stdio_client(experiment.slug, reader) as client:
            read_tools = {tool.name for tool in (await client.list_tools()).tools}
            refused = await call(client, "memory_note", {"content": "not allowed"})
        return {"tools": tools, "searched": searched, "proposed": proposed, "memory": memory, "read_tools": read_tools, "refused": refused}

    seen = asyncio.run(scenario())
    assert seen["tools"] == READ_TOOLS | WRITE_TOOLS and seen["read_tools"] == READ_TOOLS
    response = Client().post(f"/api/v1/experiments/{experiment.slug}/memory/search", json.dumps(args),
                             content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
    assert seen["searched"]["total"] >= 3 and seen["searched"] == response.json()["data"]
    proposal = Proposal.objects.get(pk=seen["proposed"]["proposal_id"])
    assert proposal.status == "pending" and proposal.details["proposed_by"]["client"] == "MCP pytest-stdio 1.0"
    assert seen["proposed"]["review_url"] == f"/experiments/mcp-stdio/review/?status=all&selected={proposal.pk}"
    assert "gateway is served from the edge" in seen["memory"]
    assert seen["refused"][0] and seen["refused"][1]["code"] == "missing_scope"


def test_stdio_refuses_a_token_of_another_experiment(transactional_db) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT, subprocess_env

    make_experiment(slug="mine")
    other = make_experiment(slug="theirs")
    token = make_token(other, ["memory:read"])
    done = subprocess.run([sys.executable, "manage.py", "awp_mcp", "--experiment", "mine", "--token", token], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0 and "another experiment" in done.stderr and done.stdout == ""
    ApiToken.objects.filter(experiment=other).update(revoked_at="2026-01-01T00:00:00Z")
    done = subprocess.run([sys.executable, "manage.py", "awp_mcp", "--experiment", "theirs", "--token", token], cwd=ROOT,
                          env=subprocess_env(), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode != 0 and "revoked" in done.stderr
