"""Real senders against the running server: the SDK's OTLP/HTTP exporters (protobuf and JSON) and pydantic-ai
(instrumented, two agents and one tool, against the tests' own OpenAI-compatible server)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
import requests
from django.test import Client
from opentelemetry.exporter.otlp.common.http import Compression
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as ProtobufExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from websockets.asyncio.client import connect

from experiments.models import Event, Run
from memory.models import Episode
from tests.conftest import ROOT, subprocess_env
from tests.factories import make_experiment, make_member, make_token
from tests.otel.fake_openai import COMPLETION_TOKENS, PROMPT_TOKENS, FakeOpenAI
from tests.otel.spans import SECRET, collected
from tests.otel.test_receive import ledger
from tests.proofkit import login_cookie


def test_both_sdk_exporters_deliver_the_same_ledger_and_resends_add_nothing(live_server_factory):
    server = live_server_factory()
    spans = collected()
    by_protobuf, by_json = make_experiment(), make_experiment()
    endpoint = f"{server.url}/otel/v1/traces"
    protobuf = ProtobufExporter(endpoint=endpoint, headers={"Authorization": f"Bearer {make_token(by_protobuf)}"})
    as_json = JsonExporter(endpoint=endpoint, headers={"Authorization": f"Bearer {make_token(by_json)}"}, compression=Compression.GZIP)
    assert protobuf.export(spans) == SpanExportResult.SUCCESS
    assert as_json.export(spans) == SpanExportResult.SUCCESS
    first = ledger(Run.objects.get(experiment=by_protobuf))
    assert len(first) == len(spans) + 2  # every span, plus the run's start and its root span's completion
    assert first == ledger(Run.objects.get(experiment=by_json))
    assert protobuf.export(spans) == SpanExportResult.SUCCESS  # an exporter's resend
    assert ledger(Run.objects.get(experiment=by_protobuf)) == first
    refused = requests.post(endpoint, data=b"\x0a\xff\xff", headers={"Authorization": f"Bearer {make_token(by_json)}", "Content-Type": "application/x-protobuf"}, timeout=10)
    assert refused.status_code == 400 and refused.json()["code"] == "invalid_protobuf"
    assert ledger(Run.objects.get(experiment=by_json)) == first


async def _first_frame(url: str, cookie: str, timeout: float = 60) -> str:
    async with connect(url.replace("http", "ws", 1), origin=url.split("/ws/")[0], additional_headers={"Cookie": cookie}) as ws:
        async with asyncio.timeout(timeout):
            while True:
                text = await ws.recv()
                if "run-row-" in text:
                    return str(text)


def test_pydantic_ai_two_agents_one_tool_become_a_live_run_with_state_recall_and_masked_secrets(live_server_factory, experiment):
    owner = make_member(experiment, "owner")
    token = make_token(experiment, ["ingest", "memory:read"])
    server = live_server_factory()
    cookie = login_cookie(server.url, owner.username)
    with FakeOpenAI() as model:
        env = subprocess_env(
            OTEL_EXPORTER_OTLP_ENDPOINT=f"{server.url}/otel",
            OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{token}",
            OPENAI_BASE_URL=model.url,
            OPENAI_API_KEY="test-key",
        )

        async def scenario() -> tuple[str, subprocess.CompletedProcess[str]]:
            frame = asyncio.create_task(_first_frame(f"{server.url}/ws/experiments/{experiment.slug}/", cookie))
            await asyncio.sleep(0.5)  # the subscription is made right after accept
            task = f"Plan a trip to Lisbon. My OpenAI key is {SECRET}, keep it safe."
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-m", "tests.otel.pydantic_ai_run", task], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
            )
            return await frame, done

        frame, done = asyncio.run(scenario())
        assert done.returncode == 0, done.stderr
        assert len(model.requests) == 3  # planner → tool call, writer, planner's answer
    run = Run.objects.get(experiment=experiment)
    assert run.engine == "otel" and f"run-row-{run.pk}" in frame  # the run appeared on the experiment page, live
    events = Event.objects.filter(run=run)
    agents = {e.agent_id: e for e in events.filter(kind="worker.complete")}
    assert set(agents) == {"planner", "writer"}
    tool = events.get(kind="tool.call")
    assert tool.payload["tool_name"] == "ask_writer" and tool.agent_id == "planner"
    calls = list(events.filter(kind="metric.model_call"))
    assert len(calls) == 3 and all(c.payload["input_tokens"] == PROMPT_TOKENS and c.payload["output_tokens"] == COMPLETION_TOKENS for c in calls)
    run.refresh_from_db()
    assert run.status == "complete" and run.budget_used["tokens"] == {"input": 3 * PROMPT_TOKENS, "output": 3 * COMPLETION_TOKENS, "consumed": 3 * (PROMPT_TOKENS + COMPLETION_TOKENS)}

    client = Client()
    owner.refresh_from_db()  # the live server re-hashed the password at login (its own hasher)
    client.force_login(owner)
    response = client.get(f"/experiments/{experiment.slug}/runs/{run.pk}/")
    assert response.status_code == 200, response
    page = response.content.decode()
    assert f'data-node="s{agents["writer"].payload["span_id"]}" data-parent="s{agents["planner"].payload["span_id"]}"' in page  # the agent tree
    assert f"{3 * PROMPT_TOKENS} in · {3 * COMPLETION_TOKENS} out" in page and "ask_writer" in page

    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    state = client.get(f"/api/v1/runs/{run.run_id}/state", **bearer).json()["state"]
    assert state["writer"]["output"].startswith("Pack sunscreen") and state["planner"]["output"].startswith("Plan ready")
    assert Episode.objects.filter(run=run, agent_id="writer").exists()
    recall = client.post(f"/api/v1/experiments/{experiment.slug}/memory/recall", json.dumps({"agent_id": "planner", "query": "sunscreen packing"}), content_type="application/json", **bearer)
    assert recall.status_code == 200 and "sunscreen" in recall.content.decode()

    ways_out = [
        page,
        client.get(f"/api/v1/runs/{run.run_id}/events?limit=5000", **bearer).content.decode(),
        json.dumps(state),
        recall.content.decode(),
        requests.get(f"{server.url}/experiments/{experiment.slug}/runs/{run.pk}/export/events.json", headers={"Cookie": cookie}, timeout=30).text,
    ]
    assert SECRET in events.get(kind="run.start").payload["task"]  # the ledger keeps what was sent …
    for text in ways_out:
        assert SECRET not in text and SECRET[:20] not in text  # … nothing shows it
    assert any("Plan a trip to Lisbon" in text for text in ways_out)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_undecodable_bodies_store_nothing_on_the_running_server(live_server_factory, experiment, encoding):
    server = live_server_factory()
    content_type = "application/x-protobuf" if encoding == "protobuf" else "application/json"
    body = b"\x0a\x05\x0a" if encoding == "protobuf" else b'{"resourceSpans": {"not": "a list"}}'
    response = requests.post(f"{server.url}/otel/v1/traces", data=body, headers={"Authorization": f"Bearer {make_token(experiment)}", "Content-Type": content_type}, timeout=10)
    assert response.status_code == 400, response.text
    assert not Event.objects.exists() and not Run.objects.exists()
