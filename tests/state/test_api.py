"""The state API through the real endpoints: pushes refused with a rule id, state at a seq, as an agent, history."""

from __future__ import annotations

import pytest
from django.test import Client

from experiments.protocol import parse_protocol
from state.models import RevealAudit
from tests.factories import make_experiment, make_member, make_token
from tests.state.helpers import d

pytestmark = pytest.mark.django_db

PROTOCOL = """
state:
  limits: {max_state_size_mb: 0.002}
  sharing:
    strategy: selective
    rules:
      - {from: researcher, to: [analyst], fields: [findings]}
    sensitive_fields: [internal_notes]
"""


@pytest.fixture
def setup():
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    return experiment, make_token(experiment, scopes=["ingest", "memory:read"])


def ingest(client, token, *deltas, key="k"):
    events = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}}]
    events += [{"kind": "state.delta", "idempotency_key": f"{key}{i}", "agent_id": p["agent_id"], "payload": p} for i, p in enumerate(deltas)]
    return client.post("/api/v1/ingest", {"run_id": "run-1", "events": events}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def get(client, token, url):
    return client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}")


def test_push_refusals_answer_422_with_rule_id_and_keep_state(setup):
    experiment, token = setup
    client = Client()
    assert ingest(client, token, d("researcher", "add", "$.researcher", {"findings": ["42"], "api_key": "sk-1", "draft": "d"})).status_code == 200
    before = get(client, token, "/api/v1/runs/run-1/state").json()
    refused = ingest(client, token, d("researcher", "add", "$._meta", {"x": 1}), key="m")
    assert refused.status_code == 422 and refused.json()["code"] == "R13" and "_meta" in refused.json()["message"]
    too_big = ingest(client, token, d("analyst", "add", "$.analyst", "x" * 4000), key="b")
    assert too_big.status_code == 422 and too_big.json()["code"] == "state_limit"
    assert "max_state_size_mb" in too_big.json()["message"]
    assert get(client, token, "/api/v1/runs/run-1/state").json() == before


def test_state_at_seq_as_agent_redacted_and_history(setup):
    experiment, token = setup
    client = Client()
    ingest(client, token, d("researcher", "add", "$.researcher", {"findings": ["42"], "api_key": "sk-1", "draft": "d"}))
    ingest(client, token, d("researcher", "modify", "$.researcher.findings", ["42", "6x7"], round=2), key="n")
    head = get(client, token, "/api/v1/runs/run-1/state").json()
    assert head["seq"] == 3 and head["state"]["researcher"]["findings"] == ["42", "6x7"]
    assert head["state"]["researcher"]["api_key"] == "[redacted]" and "sk-1" not in str(head)
    at_two = get(client, token, "/api/v1/runs/run-1/state?seq=2").json()
    assert at_two == {"seq": 2, "state": {"researcher": {"findings": ["42"], "api_key": "[redacted]", "draft": "d"}}}
    as_analyst = get(client, token, "/api/v1/runs/run-1/state?as_agent=analyst").json()
    assert as_analyst["state"] == {"researcher": {"findings": ["42", "6x7"]}}
    history = get(client, token, "/api/v1/runs/run-1/state/history?path=$['researcher'].findings").json()
    assert history["path"] == "$.researcher.findings"
    assert [(h["seq"], h["op"], h["outcome"]) for h in history["deltas"]] == [(2, "add", "applied"), (3, "modify", "applied")]
    assert history["deltas"][0]["value"]["api_key"] == "[redacted]"
    bad = get(client, token, "/api/v1/runs/run-1/state/history?path=researcher")
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_path"


def test_reveal_is_for_logged_in_owners_and_audited(setup):
    experiment, token = setup
    client = Client()
    ingest(client, token, d("researcher", "add", "$.researcher", {"api_key": "sk-1"}))
    assert get(client, token, "/api/v1/runs/run-1/state?reveal=true").json()["code"] == "reveal_forbidden"
    viewer, owner = make_member(experiment, "viewer"), make_member(experiment, "owner")
    client.force_login(viewer)
    assert client.get("/api/v1/runs/run-1/state?reveal=true").status_code == 403
    client.force_login(owner)
    revealed = client.get("/api/v1/runs/run-1/state?reveal=true").json()
    assert revealed["state"]["researcher"]["api_key"] == "sk-1"
    assert RevealAudit.objects.filter(user=owner, where="api").count() == 1


def test_other_experiments_runs_are_not_found(setup):
    experiment, token = setup
    client = Client()
    ingest(client, token, d("researcher", "add", "$.x", 1))
    other = make_token(make_experiment(), scopes=["memory:read"])
    assert get(client, other, "/api/v1/runs/run-1/state").status_code == 404
