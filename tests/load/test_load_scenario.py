"""Load: 200 concurrent page users (logged in, browsing with think time) plus steady ingest, on loopback.

Zero 5xx and zero transport errors; p50/p95 per page are printed (figures, not assertions). Each page user keeps
one keep-alive connection (bench.common.LoopbackPage: the clients cost the shared cores next to nothing).
AWP_LOAD_SECONDS sets the duration (default 8 s for `make test`; e.g. 300 for the full scenario):

    AWP_LOAD_SECONDS=300 .venv/bin/python -m pytest tests/load/test_load_scenario.py -s
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections import defaultdict

import pytest
from django.conf import settings
from django.test import Client

from bench.common import LoopbackPage, percentile
from tests.factories import make_experiment, make_member, make_token
from tests.proofkit import log_events, push, run_start

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
USERS = int(os.environ.get("AWP_LOAD_USERS", "200"))
SECONDS = float(os.environ.get("AWP_LOAD_SECONDS", "8"))
INGEST_BATCH, INGEST_EVERY = 50, 0.25  # 200 events/s, steady


def session_cookies(users: list[object]) -> list[str]:
    """A session per user, made in-process (the login form's rate limit is for people, not for this test)."""
    cookies = []
    for user in users:
        client = Client()
        client.force_login(user)
        cookies.append(f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}")
    return cookies


async def scenario(base: str, cookies: list[str], pages: list[tuple[str, dict[str, str]]], token: str) -> dict[str, object]:
    latencies: dict[str, list[float]] = defaultdict(list)
    statuses: dict[int, int] = defaultdict(int)
    errors: list[str] = []
    ingested = 0
    deadline = time.monotonic() + SECONDS

    async def page_user(n: int) -> None:
        rng = random.Random(n)
        headers_base = {"Cookie": cookies[n % len(cookies)]}
        connection = LoopbackPage(base)  # one keep-alive connection per user, as a browser keeps
        await asyncio.sleep(rng.uniform(0, 3))  # users arrive over the first seconds
        while time.monotonic() < deadline:
            name, headers = pages[rng.randrange(len(pages))]
            started = time.perf_counter()
            try:
                status, body = await asyncio.wait_for(connection.get(name, {**headers_base, **headers}), timeout=120)
            except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
                errors.append(f"{name}: {type(exc).__name__}")
            else:
                statuses[status] += 1
                if status >= 500:
                    errors.append(f"{name}: {status} {body[:300]!r}")
                latencies[name.split("?")[0]].append(time.perf_counter() - started)
            await asyncio.sleep(rng.uniform(1.0, 3.0))  # think time
        connection.close()

    async def ingester() -> None:
        nonlocal ingested
        batch = 0
        while time.monotonic() < deadline:
            events = log_events(INGEST_BATCH, start=batch * INGEST_BATCH, prefix="load")
            response = await asyncio.to_thread(push, base, token, "load-run", events)
            statuses[response.status_code] += 1
            if response.status_code == 200:
                ingested += INGEST_BATCH
            else:
                errors.append(f"ingest {response.status_code}: {response.text[:200]}")
            batch += 1
            await asyncio.sleep(INGEST_EVERY)

    await asyncio.gather(ingester(), *(page_user(n) for n in range(USERS)))
    return {"latencies": latencies, "statuses": dict(statuses), "errors": errors, "ingested": ingested}


def test_200_page_users_and_steady_ingest_without_a_single_5xx(live_server_factory):
    # As `make run` serves: one daphne worker per core on one socket, each with its connection pool (on by default).
    server = live_server_factory(workers=os.cpu_count() or 1, AWP_EMBEDDER="none")
    experiment = make_experiment(slug="load")
    users = [make_member(experiment, "viewer") for _ in range(10)]
    token = make_token(experiment, ["ingest"])
    assert push(server.url, token, "load-run", [run_start("load-run"), *log_events(500, prefix="seed")]).status_code == 200
    from experiments.models import Run

    run = Run.objects.get(run_id="load-run")
    base = f"/experiments/{experiment.slug}"
    pages = [
        ("/", {}),
        (f"{base}/protocol/", {}),
        (f"{base}/runs/", {}),
        (f"{base}/runs/{run.pk}/", {}),
        (f"{base}/runs/{run.pk}/", {"HX-Request": "true"}),
        (f"{base}/runs/{run.pk}/board/", {}),
        (f"{base}/review/", {}),
        (f"{base}/memory/", {}),
    ]
    outcome = asyncio.run(scenario(server.url, session_cookies(users), pages, token))
    statuses: dict[int, int] = outcome["statuses"]  # type: ignore[assignment]
    total = sum(statuses.values())
    print(f"\nload: {USERS} page users + {INGEST_BATCH / INGEST_EVERY:.0f} events/s ingest for {SECONDS:.0f} s → {total} requests, {outcome['ingested']} events")
    print(f"statuses: {statuses}")
    everything: list[float] = []
    for page, samples in sorted(outcome["latencies"].items()):  # type: ignore[attr-defined]
        everything += samples
        print(f"  {page:50s} n={len(samples):5d} p50={percentile(samples, 50) * 1000:8.1f} ms p95={percentile(samples, 95) * 1000:8.1f} ms")
    print(f"  {'all pages':50s} n={len(everything):5d} p50={percentile(everything, 50) * 1000:8.1f} ms p95={percentile(everything, 95) * 1000:8.1f} ms")
    assert outcome["errors"] == [], outcome["errors"][:20]  # type: ignore[index]
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200}, statuses
    assert total >= USERS, "every user got at least one page"
    assert Run.objects.get(pk=run.pk).last_seq == 1 + 500 + outcome["ingested"]  # type: ignore[operator]
