"""MCP benchmark: a memory_search round trip through /mcp/ against the same search through the HTTP API (goal ≤ 1.5×).

    .venv/bin/python bench/mcp.py            # 1,000 working-memory entries, 200 calls per path
    .venv/bin/python bench/mcp.py --quick    # 60 calls per path

One daphne process on the benchmark database (`awp_bench_mcp`). The HTTP API is called with a kept-alive
`requests` session (POST /api/v1/experiments/{slug}/memory/search); MCP with the SDK's own client (one
`Client` over streamable HTTP, kept-alive httpx2 connection, `call_tool("memory_search", …)`). Both send the
same token and the same search and get the same results; the two paths alternate in blocks of 20 calls so
drift in the machine's load hits both. Figures are printed, never asserted.
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
BLOCK = 20


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


async def mcp_calls(
    base_url: str, token: str, blocks: list[int], yield_to_api: asyncio.Event, api_done: asyncio.Event
) -> tuple[list[float], dict]:  # type: ignore[type-arg]
    """Time memory_search through MCP, `blocks[i]` calls at a time, yielding to the API between blocks."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    samples: list[float] = []
    answer: dict = {}  # type: ignore[type-arg]
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(f"{base_url}/mcp/", http_client=http)) as client:
            for _ in range(5):
                await client.call_tool("memory_search", SEARCH)
            for count in blocks:
                for _ in range(count):
                    start = time.perf_counter()
                    result = await client.call_tool("memory_search", SEARCH)
                    samples.append(time.perf_counter() - start)
                answer = result.structured_content or {}
                yield_to_api.set()
                await api_done.wait()
                api_done.clear()
    return samples, answer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    calls = 60 if args.quick else 200
    database_url = setup_django("mcp")
    import requests

    from experiments.models import ApiToken

    experiment = build(args.entries)
    ApiToken.objects.filter(experiment=experiment).delete()
    _, token = ApiToken.issue(experiment=experiment, name="bench", scopes=["memory:read"])
    blocks = [BLOCK] * (calls // BLOCK)

    with daphne(database_url) as base_url:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        url = f"{base_url}/api/v1/experiments/{experiment.slug}/memory/search"
        for _ in range(5):
            session.post(url, json=SEARCH, timeout=30).raise_for_status()
        api_samples: list[float] = []
        api_answer: dict = {}  # type: ignore[type-arg]

        async def run() -> tuple[list[float], dict]:  # type: ignore[type-arg]
            yield_to_api, api_done = asyncio.Event(), asyncio.Event()

            async def api_blocks() -> None:
                nonlocal api_answer
                for count in blocks:
                    await yield_to_api.wait()
                    yield_to_api.clear()
                    for _ in range(count):  # blocking on purpose: nothing else runs while the API call is timed
                        start = time.perf_counter()
                        response = session.post(url, json=SEARCH, timeout=30)
                        api_samples.append(time.perf_counter() - start)
                    api_answer = response.json()["data"]
                    api_done.set()

            api_task = asyncio.create_task(api_blocks())
            result = await mcp_calls(base_url, token, blocks, yield_to_api, api_done)
            await api_task
            return result

        mcp_samples, mcp_answer = asyncio.run(run())

    api_ms, mcp_ms = summary_ms(api_samples), summary_ms(mcp_samples)
    print(f"# MCP memory_search vs HTTP API search · {machine()} · load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.entries:,} working-memory entries, {calls} calls per path in blocks of {BLOCK}, same results: {mcp_answer == api_answer}")
    print_table(
        ["path", "calls", "p50 ms", "p95 ms", "mean ms"],
        [["HTTP API (POST memory/search)", api_ms["n"], api_ms["p50"], api_ms["p95"], api_ms["mean"]],
         ["MCP (tools/call memory_search)", mcp_ms["n"], mcp_ms["p50"], mcp_ms["p95"], mcp_ms["mean"]]],
    )  # fmt: skip
    print(f"ratio p50 MCP/API {mcp_ms['p50'] / api_ms['p50']:.2f} (goal ≤ 1.5)")


if __name__ == "__main__":
    main()
