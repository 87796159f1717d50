"""Memory work out as gen_ai.memory spans: a server with an OTLP endpoint exports to another (this product's own
receiver), with ids, counts and states only: never a secret, a content or a query in an attribute."""

from __future__ import annotations

import json
import time

import pytest
import requests

from experiments.models import Event
from otel.send import safe_attributes
from tests.factories import make_experiment, make_token
from tests.otel.spans import SECRET


@pytest.mark.django_db
def test_safe_attributes_drop_text_keys_and_redact_strings(experiment):
    from state.secrets import learn_secrets

    learn_secrets(experiment_id=experiment.pk, values=["agent-with-a-secret-name-7731"])
    kept = safe_attributes(experiment, {"awp.memory.content": "x", "gen_ai.memory.query": "y", "awp.review.status": "approved",
                                        "awp.agent.id": "agent-with-a-secret-name-7731", "awp.fact.version": 3, "awp.flag": True})  # fmt: skip
    assert set(kept) == {"awp.review.status", "awp.agent.id", "awp.fact.version", "awp.flag"}
    assert "7731" not in kept["awp.agent.id"] and kept["awp.fact.version"] == 3
    assert safe_attributes(None, {"awp.agent.id": "someone", "awp.pool.type": "fact"}) == {"awp.pool.type": "fact"}


def test_memory_tools_are_exported_as_memory_spans_without_secrets(live_server_factory):
    work, telemetry = make_experiment(), make_experiment()
    receiver = live_server_factory()
    server = live_server_factory(
        OTEL_EXPORTER_OTLP_ENDPOINT=f"{receiver.url}/otel", OTEL_EXPORTER_OTLP_HEADERS=f"Authorization=Bearer%20{make_token(telemetry)}",
        OTEL_BSP_SCHEDULE_DELAY="100", OTEL_SERVICE_NAME="awp-under-test",
    )  # fmt: skip
    headers = {"Authorization": f"Bearer {make_token(work, ['memory:read', 'memory:write'])}", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    base = f"{server.url}/api/v1/experiments/{work.slug}/memory"
    wrote = requests.post(f"{base}/write", data=json.dumps({"agent_id": "keeper", "content": f"The deploy key is {SECRET}."}), headers=headers, timeout=30)
    found = requests.post(f"{base}/search", data=json.dumps({"agent_id": "keeper", "query": f"deploy key {SECRET}"}), headers=headers, timeout=30)
    assert wrote.status_code == found.status_code == 200, (wrote.text, found.text)

    deadline = time.monotonic() + 30
    while Event.objects.filter(run__experiment=telemetry, kind__startswith="memory.").count() < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    spans = {e.payload["attributes"]["awp.memory.tool"]: e for e in Event.objects.filter(run__experiment=telemetry, kind__startswith="memory.")}
    assert set(spans) == {"write", "search"}
    write, search = spans["write"], spans["search"]
    assert write.kind == "memory.update" and search.kind == "memory.search"
    assert write.payload["attributes"]["awp.response.status"] == 200 and write.payload["attributes"]["awp.memory.tier"] == "daily"
    assert write.payload["memory"] == {"namespace": work.slug} and write.payload["service"] == "awp-under-test"
    assert write.payload["trace_id"] == "0af7651916cd43dd8448eb211c80319c"  # a child of the agent's own span
    everything = json.dumps([e.payload for e in Event.objects.filter(run__experiment=telemetry)])
    assert SECRET not in everything and "deploy key" not in everything
