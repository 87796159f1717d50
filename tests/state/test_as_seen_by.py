"""'As seen by' (issue 27): offers only the run's own agents, and says so when the agent may see nothing."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from experiments.ingest import EventIn, append_events
from experiments.protocol import parse_protocol
from tests.factories import make_experiment, make_member, make_run
from tests.state.helpers import d, push

pytestmark = pytest.mark.django_db

PROTOCOL = """
state:
  sharing:
    strategy: selective
    rules:
      - {from: researcher, to: [analyst], fields: [findings]}
      - {from: fact_collector, to: [verifier], fields: [findings]}
"""


def state_page(run, **params: str) -> str:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(make_member(run.experiment, "viewer"))
    response = client.get(f"/experiments/{run.experiment.slug}/runs/{run.pk}/state/", params)
    assert response.status_code == 200
    return response.content.decode()


def test_as_seen_by_offers_the_runs_agents_only_and_explains_an_empty_view():
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    run = make_run(experiment)
    append_events(run, [EventIn(kind="worker.spawn", dedupe_key="w", agent_id="verifier", iteration=1, payload={})])
    push(run, d("fact_collector", "add", "$.fact_collector", {"notes": "only mine"}))
    body = state_page(run)
    offered = re.findall(r'<option value="([^"]+)"', body.split('id="state-as"')[1].split("</select>")[0])
    assert offered == ["fact_collector", "verifier"]  # not researcher / analyst: named by the protocol, not in this run
    hidden = state_page(run, **{"as": "verifier"})
    assert "holds nothing verifier may see" in hidden and "No state at seq" not in hidden
