"""Redaction end to end: a viewer crawls every page, fragment, API answer and websocket frame of runs that hold
known secrets in sensitive fields (the real runtime's DAG researcher writes api_key "sk-test-SECRET-4242";
a delegation loop and pushed events carry more, nested), and no secret appears anywhere.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Any

import pytest
import requests
from django.core.management import call_command
from django.test import Client

from experiments.models import Digest, Experiment, Run
from tests.awp_runtime import Script, run_dag, run_delegation_loop
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.security.crawl import crawl

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]

DAG_SECRET = "sk-test-SECRET-4242"
LOOP_KEY, LOOP_PASSWORD = "sk-test-LOOPKEY-1111", "sk-test-NESTEDPW-2222"
PUSHED = {
    "nested_password": "sk-test-PUSHPW-3333",
    "list_token": "sk-test-PUSHTOK-4444",
    "authorization": "sk-test-PUSHAUTH-5555",
    "board_key": "sk-test-BOARD-6666",
    "delta_value": "sk-test-DELTA-7777",
    "delta_object": "sk-test-DELTAOBJ-8888",
    "tool_header": "sk-test-TOOL-9999",
    "live_key": "sk-test-LIVE-1010",
}
SECRETS = [DAG_SECRET, LOOP_KEY, LOOP_PASSWORD, *PUSHED.values()]
# Any fragment of any secret: the distinctive middle parts too, in case a page truncates or escapes.
LEAK = re.compile("|".join(re.escape(s.split("-", 2)[2]) for s in SECRETS))
PUSH_RUN = "2026-11-21_09-00-00_pushsecret"


def pushed_events() -> list[dict[str, Any]]:
    return [
        {"kind": "run.start", "idempotency_key": "s", "payload": {"run_id": PUSH_RUN, "task": "Use the vault."}},
        {
            "kind": "worker.complete",
            "agent_id": "vault_worker",
            "iteration": 1,
            "idempotency_key": "w1",
            "payload": {
                "summary": "Connected to the vault.",
                "confidence": 0.9,
                "config": {"db": {"host": "127.0.0.1", "password": PUSHED["nested_password"]}},
                "items": [{"name": "first", "token": PUSHED["list_token"]}],
            },
        },
        {"kind": "log", "idempotency_key": "l1", "payload": {"msg": "calling the vault", "fields": {"authorization": PUSHED["authorization"]}}},
        {
            "kind": "board.post",
            "agent_id": "vault_worker",
            "idempotency_key": "b1",
            "payload": {"topic": "credentials", "worker_id": "vault_worker", "payload": {"api_key": PUSHED["board_key"], "note": "shared"}},
        },
        {
            "kind": "state.delta",
            "agent_id": "vault_worker",
            "idempotency_key": "d1",
            "payload": {"agent_id": "vault_worker", "round": 1, "op": "add", "path": "$.vault.api_key", "value": PUSHED["delta_value"], "provenance": "vault login"},
        },
        {
            "kind": "state.delta",
            "agent_id": "vault_worker",
            "idempotency_key": "d2",
            "payload": {
                "agent_id": "vault_worker",
                "round": 2,
                "op": "add",
                "path": "$.service",
                "value": {"name": "vault", "secret": PUSHED["delta_object"], "nested": [{"password": PUSHED["delta_object"]}]},
                "provenance": "service registered",
            },
        },
        {
            "kind": "tool.call",
            "agent_id": "vault_worker",
            "idempotency_key": "t1",
            "payload": {"tool": "http_get", "args": {"url": "http://127.0.0.1/", "headers": {"Authorization": PUSHED["tool_header"]}}},
        },
    ]


def build_secret_experiment(tmp_path, fake_llm, ingest_url: str) -> tuple[Experiment, Any, str]:  # type: ignore[no-untyped-def]
    """Import a real DAG run and a real delegation loop holding secrets, push more; return (experiment, viewer, token)."""
    experiment = make_experiment(slug="vault")
    viewer = make_member(experiment, "viewer")
    run_dag(tmp_path / "dag", fake_llm)
    call_command("awp_import", str(tmp_path / "dag"), "--experiment", experiment.slug, "--json", stdout=io.StringIO())
    fake_llm.reset(Script(iterations=2, extra_fields={"api_key": LOOP_KEY, "credentials": {"password": LOOP_PASSWORD}}))
    run_delegation_loop(tmp_path / "loop", fake_llm)
    call_command("awp_import", str(tmp_path / "loop"), "--experiment", experiment.slug, "--json", stdout=io.StringIO())
    token = make_token(experiment, ["ingest", "memory:read"])
    response = requests.post(
        ingest_url, json={"run_id": PUSH_RUN, "events": pushed_events()}, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 200, response.text
    try:
        call_command("awp_curate", "--experiment", experiment.slug, stdout=io.StringIO())
    except Exception:  # the Review tab is crawled either way; curation has its own tests
        pass
    # The secrets really are stored raw (the raw ledger is kept): the crawl below is not vacuous.
    raw = " ".join(json.dumps(e.payload) for run in Run.objects.filter(experiment=experiment) for e in run.events.all())
    assert DAG_SECRET in raw and LOOP_KEY in raw and PUSHED["delta_value"] in raw
    return experiment, viewer, token


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


async def websocket_frames(base_url: str, cookie: str, run_pks: list[int], push: Any) -> list[str]:
    """Open a socket per run from seq 0, push one more secret while they are open, collect every frame."""
    import websockets

    frames: list[str] = []
    headers = {"Cookie": cookie, "Origin": base_url}

    async def follow(pk: int) -> None:
        url = base_url.replace("http", "ws") + f"/ws/runs/{pk}/?after=0"
        async with websockets.connect(url, additional_headers=headers, open_timeout=10) as socket:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 6
            while loop.time() < deadline:
                try:
                    frame = await asyncio.wait_for(socket.recv(), timeout=max(0.1, deadline - loop.time()))
                except (TimeoutError, websockets.ConnectionClosed):
                    break
                frames.append(str(frame))
                mark = re.search(r'data-frame="(\d+)"', str(frame))
                if mark:
                    await socket.send(json.dumps({"ack": int(mark.group(1))}))

    async def push_later() -> None:
        await asyncio.sleep(1.5)
        await asyncio.to_thread(push)

    await asyncio.gather(*(follow(pk) for pk in run_pks), push_later())
    return frames


def test_a_viewer_never_sees_a_secret_anywhere(tmp_path, fake_llm, live_server_factory):
    server = live_server_factory()
    experiment, viewer, token = build_secret_experiment(tmp_path, fake_llm, f"{server.url}/api/v1/ingest")
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))
    assert len(runs) >= 3

    browser = Client()
    assert browser.login(username=viewer.username, password=PASSWORD)
    starts = ["/", experiment.get_absolute_url()] + [run.get_absolute_url() for run in runs]
    seen = crawl(browser, starts, max_pages=600)
    assert not seen.errors(), seen.errors()
    assert len(seen.bodies) >= 20 + 5 * len(runs), sorted(seen.bodies)
    # Every surface is checked before failing, so one report names every leak.
    leaks: dict[str, list[str]] = {}
    leaks.update({f"page {url}": LEAK.findall(body) for url, body in seen.bodies.items() if LEAK.search(body)})

    api = api_bodies(browser, experiment)
    assert any("vault_worker" in body for body in api.values())  # the crawl saw the pushed run
    leaks.update({f"api {url}": LEAK.findall(body) for url, body in api.items() if LEAK.search(body)})

    def push_live() -> None:
        event = {
            "kind": "worker.complete",
            "agent_id": "vault_worker",
            "iteration": 2,
            "idempotency_key": "live1",
            "payload": {"summary": "Rotated.", "credentials": {"api_key": PUSHED["live_key"]}},
        }
        requests.post(
            f"{server.url}/api/v1/ingest",
            json={"run_id": PUSH_RUN, "events": [event]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        ).raise_for_status()

    login = requests.Session()
    login.get(f"{server.url}/login/")
    login.post(
        f"{server.url}/login/",
        data={"username": viewer.username, "password": PASSWORD, "csrfmiddlewaretoken": login.cookies["csrftoken"]},
        headers={"Referer": f"{server.url}/login/"},
    )
    cookie = "; ".join(f"{k}={v}" for k, v in login.cookies.items())
    assert "sessionid" in cookie
    frames = asyncio.run(websocket_frames(server.url, cookie, [r.pk for r in runs], push_live))
    assert len(frames) >= len(runs), "every run socket sends its history from seq 0"
    assert any("Rotated." in f for f in frames), "the live push arrived over the socket"
    leaks.update({f"frame {i}": LEAK.findall(f) for i, f in enumerate(frames) if LEAK.search(f)})
    assert leaks == {}, "secrets reached a viewer:\n" + "\n".join(f"{where}: {found}" for where, found in sorted(leaks.items()))
