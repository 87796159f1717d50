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

from experiments.models import Experiment, Run
from tests.awp_runtime import Script, run_dag, run_delegation_loop
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.proofkit import login_cookie
from tests.security.surfaces import surfaces_for_a_viewer, token_answers, websocket_frames

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
    call_command("awp_embed", "--experiment", experiment.slug, stdout=io.StringIO(), stderr=io.StringIO())
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


def test_a_viewer_never_sees_a_secret_anywhere(tmp_path, fake_llm, live_server_factory):
    server = live_server_factory()
    experiment, viewer, token = build_secret_experiment(tmp_path, fake_llm, f"{server.url}/api/v1/ingest")
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))
    assert len(runs) >= 3

    browser = Client()
    assert browser.login(username=viewer.username, password=PASSWORD)
    # Every page and fragment, searches in every mode, every memory sub-tab, the State tab at every seq, every
    # API read; then the same reads and searches with a memory:read token.
    bodies = surfaces_for_a_viewer(browser, experiment, runs)
    assert len(bodies) >= 20 + 5 * len(runs), sorted(bodies)
    assert any("vault_worker" in body for body in bodies.values())  # the crawl saw the pushed run
    bodies.update(token_answers(experiment, token))
    # Every surface is checked before failing, so one report names every leak.
    leaks: dict[str, list[str]] = {where: LEAK.findall(body) for where, body in bodies.items() if LEAK.search(body)}

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

    cookie = login_cookie(server.url, viewer.username)
    frames = asyncio.run(websocket_frames(server.url, cookie, [r.pk for r in runs], push_live))
    assert len(frames) >= len(runs), "every run socket sends its history from seq 0"
    assert any("Rotated." in f for f in frames), "the live push arrived over the socket"
    leaks.update({f"frame {i}": LEAK.findall(f) for i, f in enumerate(frames) if LEAK.search(f)})
    assert leaks == {}, "secrets reached a viewer:\n" + "\n".join(f"{where}: {found}" for where, found in sorted(leaks.items()))
