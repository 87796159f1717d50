"""MCP benchmark: a memory_search round trip through /mcp/ against the same search through the HTTP API (goal ≤ 1.5×).

    .venv/bin/python bench/mcp.py            # 1,000 working-memory entries, 200 calls per path and order
    .venv/bin/python bench/mcp.py --quick    # 60 calls per path and order

One daphne process on the benchmark database (`awp_bench_mcp`). The HTTP API is called with a kept-alive
`requests` session (POST /api/v1/experiments/{slug}/memory/search); MCP with the SDK's own client (one
`Client` over streamable HTTP, kept-alive httpx2 connection, `call_tool("memory_search", …)`). Both send the
same token and the same search and get the same results. Measured twice: alternating call by call (both
paths see the same moment's load) and in blocks of 20 (each path's calls back to back, none disturbing the
other's). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name would hide the `mcp` SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import daphne, machine, print_table, setup_django, summary_ms  # noqa: E402

WORDS = ["gateway", "cache", "edge", "latency", "retry", "quota", "shard", "replica", "index", "token"]
SEARCH = {"query": "gateway latency", "mode": "keyword", "max_results": 10}


def build(entries: int):  # type: ignore[no-untyped-def]
    from datetime import date
    from datetime import time as clock

    from experiments.models import Experiment
    from memory.services import append_daily_entry

    slug = f"bench-mcp-{entries}"
    found = Experiment.objects.filter(slug=slug, name="bench (complete)").first()
    if found is not None:
        return found
    Experiment.objects.filter(slug=slug).delete()
    experiment = Experiment.objects.create(slug=slug, name="bench")
    for i in range(entries):
        text = " ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(6))
        append_daily_entry(experiment=experiment, content=f"Entry {i}: {text}.", day=date(2026, 11, 1 + i % 20),
                           at=clock(12, i % 60), agent_id=f"agent-{i % 5}", dedupe_key=f"bench:{i}")  # fmt: skip
    Experiment.objects.filter(pk=experiment.pk).update(name="bench (complete)")
    return experiment


async def measure(base_url: str, token: str, slug: str, calls: int, block: int) -> tuple[list[float], list[float], bool]:
    """`block` API calls, then `block` MCP calls, until each path made `calls`: block 1 interleaves call by call."""
    import httpx2
    import requests
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    url = f"{base_url}/api/v1/experiments/{slug}/memory/search"
    api_samples: list[float] = []
    mcp_samples: list[float] = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{base_url}/mcp/", http_client=http)) as client:
            for _ in range(5):  # warm-up: connections, the tool list the client caches, the server's caches
                session.post(url, json=SEARCH, timeout=30).raise_for_status()
                await client.call_tool("memory_search", SEARCH)
            for _ in range(calls // block):
                for _ in range(block):
                    start = time.perf_counter()
                    response = session.post(url, json=SEARCH, timeout=30)  # blocking on purpose: nothing else runs meanwhile
                    api_samples.append(time.perf_counter() - start)
                for _ in range(block):
                    start = time.perf_counter()
                    result = await client.call_tool("memory_search", SEARCH)
                    mcp_samples.append(time.perf_counter() - start)
    return api_samples, mcp_samples, result.structured_content == response.json()["data"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    calls = 60 if args.quick else 200  # ≤ 205 token look-ups per path and order: under the 600 a minute limit
    database_url = setup_django("mcp")
    from experiments.models import ApiToken

    experiment = build(args.entries)
    ApiToken.objects.filter(experiment=experiment).delete()
    _, token = ApiToken.issue(experiment=experiment, name="bench", scopes=["memory:read"])

    rows, ratios = [], []
    with daphne(database_url) as base_url:
        for block in (1, 20):
            if block != 1:
                # Token look-ups are rate limited per client address (600 a minute, as on the API): each order
                # of calls gets a fresh minute window.
                time.sleep(60.5 - time.time() % 60)
            api_samples, mcp_samples, same = asyncio.run(measure(base_url, token, experiment.slug, calls, block))
            api_ms, mcp_ms = summary_ms(api_samples), summary_ms(mcp_samples)
            order = "call by call" if block == 1 else f"blocks of {block}"
            rows += [[f"HTTP API (POST memory/search), {order}", api_ms["n"], api_ms["p50"], api_ms["p95"], api_ms["mean"]],
                     [f"MCP (tools/call memory_search), {order}", mcp_ms["n"], mcp_ms["p50"], mcp_ms["p95"], mcp_ms["mean"]]]  # fmt: skip
            ratios.append(f"{order}: {mcp_ms['p50'] / api_ms['p50']:.2f}{'' if same else ' (answers differ!)'}")
    print(f"# MCP memory_search vs HTTP API search · {machine()} · load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.entries:,} working-memory entries, {calls} calls per path and order")
    print_table(["path", "calls", "p50 ms", "p95 ms", "mean ms"], rows)
    print(f"ratio p50 MCP/API (goal ≤ 1.5): {'; '.join(ratios)}")


if __name__ == "__main__":
    main()
