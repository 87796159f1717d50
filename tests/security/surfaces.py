"""What a viewer and a read token can reach, gathered for the redaction crawlers: every page and fragment (also
searches in every mode with queries a curious viewer would try, every memory sub-tab, the State tab at every
seq), every API read, every run socket's frames."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import urlencode

from django.test import Client
from django.urls import reverse

from experiments.models import Digest, Experiment, Run
from state.models import StateDelta
from tests.security.crawl import crawl

QUERIES = ["api_key", "client_secret", "owner_password", "access_token", "password", "token", "secret", "vault", "SHAPED", "sk-test", "Bearer", "postgres"]
MODES = ["keyword", "semantic", "date_range", "agent_filter"]


def api_bodies(client: Client, experiment: Experiment) -> dict[str, str]:
    """Every GET of the OpenAPI schema with its parameters filled from the experiment, plus the read POSTs."""
    schema = client.get("/api/v1/openapi.json").json()
    runs = list(Run.objects.filter(experiment=experiment))
    shas = list(Digest.objects.filter(experiment=experiment).values_list("sha", flat=True))
    from memory.curation.models import Proposal

    proposals = list(Proposal.objects.filter(experiment=experiment).values_list("pk", flat=True))
    values: dict[str, list[Any]] = {
        "slug": [experiment.slug],
        "run_id": [r.run_id for r in runs],
        "sha": shas[:10],
        "proposal_id": proposals[:5],
    }
    bodies: dict[str, str] = {}
    for path, ops in schema["paths"].items():
        if "get" not in ops:
            continue
        names = re.findall(r"{(\w+)}", path)
        urls = [path]
        for name in names:
            urls = [u.replace("{" + name + "}", str(v)) for u in urls for v in values.get(name, [])]
        for url in urls:
            # Extra parameters a curious viewer might try: reveal flags are not theirs to use.
            full = url.replace("/api/v1", "", 0)
            response = client.get(f"{full}?after=0&limit=1000&reveal=1&reveal_sensitive=true")
            bodies[f"GET {url}"] = f"{response.status_code} {response.content.decode()}"
    posts = [
        ("memory/search", {"query": "api_key vault password", "mode": "keyword", "max_results": 50}),
        ("memory/search", {"query": "", "mode": "agent_filter", "agent_filter": ["researcher", "vault_worker", "fact_collector"], "max_results": 50}),
        ("memory/read", {"target": "long_term"}),
        ("memory/read", {"target": "dates"}),
        ("memory/prior", {}),
    ]
    posts += [("memory/recall", {"agent_id": agent, "query": "api_key vault password credentials", "top_k": 100})
              for agent in ("researcher", "analyst", "vault_worker", "fact_collector")]  # fmt: skip
    posts += [("board/read", {"run_id": r.run_id}) for r in runs]
    posts += [("digest/fetch", {"sha": sha}) for sha in shas[:10]]
    for action, payload in posts:
        url = f"/api/v1/experiments/{experiment.slug}/{action}"
        response = client.post(url, data=json.dumps(payload), content_type="application/json")
        bodies[f"POST {url} {payload}"] = f"{response.status_code} {response.content.decode()}"
    return bodies


QUIET_AFTER_PUSH = 2.0  # seconds without a frame, once the live push was answered, that end a socket's listening


async def websocket_frames(base_url: str, cookie: str, run_pks: list[int], push: Any) -> list[str]:
    """Open a socket per run from seq 0, push one more secret while they are open, collect every frame."""
    import websockets

    frames: list[str] = []
    headers = {"Cookie": cookie, "Origin": base_url}

    pushed_at: list[float] = []

    async def follow(pk: int) -> None:
        url = base_url.replace("http", "ws") + f"/ws/runs/{pk}/?after=0"
        async with websockets.connect(url, additional_headers=headers, open_timeout=10) as socket:
            loop = asyncio.get_running_loop()
            deadline, last = loop.time() + 6, loop.time()
            while loop.time() < deadline:
                # Until the push is answered, listen up to the deadline; after it, QUIET_AFTER_PUSH without a frame ends.
                if pushed_at and loop.time() - max(last, pushed_at[0]) > QUIET_AFTER_PUSH:
                    break
                try:
                    frame = await asyncio.wait_for(socket.recv(), timeout=max(0.05, min(0.25, deadline - loop.time())))
                except TimeoutError:
                    continue
                except websockets.ConnectionClosed:
                    break
                last = loop.time()
                frames.append(str(frame))
                mark = re.search(r'data-frame="(\d+)"', str(frame))
                if mark:
                    await socket.send(json.dumps({"ack": int(mark.group(1))}))

    async def push_later() -> None:
        await asyncio.sleep(1.5)
        await asyncio.to_thread(push)
        pushed_at.append(asyncio.get_running_loop().time())

    await asyncio.gather(*(follow(pk) for pk in run_pks), push_later())
    return frames


# Blame pages (the State tab with `?path=`) a crawl follows per run: every node of a tree links to its blame, and
# each is the whole State tab again (a run whose workers return 300 documents had 734 of them, three quarters
# of the crawl's time and its page budget). Blame is one view over a path's deltas: a run with fewer paths than
# this is still crawled whole.
BLAME_PER_RUN = 12


def _blame_per_run(url: str) -> str:
    """Blame URLs share one shape per run (the crawl visits BLAME_PER_RUN of them); every other URL is its own."""
    return url.split("?", 1)[0] + " blame" if "/state/" in url and "path=" in url else url


def surfaces_for_a_viewer(browser: Client, experiment: Experiment, runs: list[Run]) -> dict[str, str]:
    """Every page, fragment, search, State tab at every seq and API answer a viewer can reach."""
    slug = experiment.slug
    starts = ["/", experiment.get_absolute_url()] + [run.get_absolute_url() for run in runs]
    starts += [reverse(f"memory:{tab}", args=[slug]) for tab in ("long-term", "curated", "working", "episodic", "notes", "search", "audit")]
    for mode in MODES:
        for query in QUERIES:
            params = {"q": query, "mode": mode, "start": "2000-01-01", "end": "2100-01-01", "max_results": 50,
                      "agents": "researcher,analyst,fact_collector"}  # fmt: skip
            starts.append(reverse("memory:search", args=[slug]) + "?" + urlencode(params))
    for run in runs:
        seqs = sorted(set(StateDelta.objects.filter(run=run).values_list("seq", flat=True)))
        base = reverse("state:run-state", args=[slug, run.pk])
        starts += [f"{base}?{urlencode({'seq': seq})}" for seq in [0, *seqs]]
        starts += [f"{base}?{urlencode({'seq': seq, 'reveal': '1'})}" for seq in seqs[-1:]]  # not the viewer's to use
    seen = crawl(browser, starts, max_pages=900, shape=_blame_per_run, per_shape=BLAME_PER_RUN)
    assert not seen.errors(), seen.errors()
    bodies = {f"page {url}": body for url, body in seen.bodies.items()}
    bodies.update({f"api {url}": body for url, body in api_bodies(browser, experiment).items()})
    return bodies


def token_answers(experiment: Experiment, token: str) -> dict[str, str]:
    """A memory:read token: every read endpoint, and memory/search in every mode with every query."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    bodies = {f"token {k}": v for k, v in api_bodies(client, experiment).items()}
    for mode in MODES:
        for query in QUERIES:
            payload = {"query": query, "mode": mode, "max_results": 50, "date_range": {"start": "2000-01-01", "end": "2100-01-01"},
                       "agent_filter": ["researcher", "analyst", "fact_collector"],
                       "tiers": ["long_term", "working", "episodic", "notes"] if mode != "semantic" else []}  # fmt: skip
            response = client.post(f"/api/v1/experiments/{experiment.slug}/memory/search", json.dumps(payload), content_type="application/json")
            assert response.status_code == 200, (mode, query, response.content)
            bodies[f"token search {mode} {query}"] = response.content.decode()
    for target in ("long_term", "daily", "dates"):
        response = client.post(f"/api/v1/experiments/{experiment.slug}/memory/read", json.dumps({"target": target}), content_type="application/json")
        bodies[f"token read {target}"] = response.content.decode()
    return bodies
