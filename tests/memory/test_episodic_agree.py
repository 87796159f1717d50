"""The Episodic tab, `agent_filter` search and recall agree on what an agent produced: a DAG step's output is an
agent's result as a delegation loop's worker result is."""

from __future__ import annotations

import json

import pytest

from experiments.ingest import EventIn, append_events
from memory.episodes import recall_for
from tests.factories import PASSWORD, make_experiment, make_member, make_run, make_token

pytestmark = pytest.mark.django_db


@pytest.fixture
def dag_experiment():
    experiment = make_experiment()
    run = make_run(experiment)
    append_events(run, [
        EventIn("run.start", "key:start", {"task": "Collect facts about comets."}),
        EventIn("state.snapshot", "key:s1", {"agent_id": "collector", "state": {
            "collector": {"summary": "Comets have icy nuclei.", "confidence": 0.8}}}, agent_id="collector"),
        EventIn("state.snapshot", "key:s2", {"agent_id": "verifier", "state": {
            "collector": {"summary": "Comets have icy nuclei."},
            "verifier": {"summary": "Verified the comet nucleus claim.", "api_key": "sk-live-COMETSECRET42"}}},
            agent_id="verifier"),
        EventIn("worker.complete", "key:w1", {"summary": "Loop worker found tails point away from the sun."},
                agent_id="looper", iteration=1),
    ])  # fmt: skip
    return experiment


def test_a_dag_steps_output_is_on_the_episodic_tab(client, dag_experiment) -> None:
    user = make_member(dag_experiment)
    client.login(username=user.username, password=PASSWORD)
    page = client.get(f"/experiments/{dag_experiment.slug}/memory/episodic/?agent=verifier")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Verified the comet nucleus claim." in html and "step 2" in html
    assert "COMETSECRET42" not in html
    agents = client.get(f"/experiments/{dag_experiment.slug}/memory/episodic/").content.decode()
    for agent in ("collector", "verifier", "looper"):
        assert f'<option value="{agent}"' in agents


def test_agent_filter_search_finds_dag_and_loop_outputs_alike(client, dag_experiment) -> None:
    token = make_token(dag_experiment, ["memory:read"])

    def search(agent: str) -> list[str]:
        response = client.post(f"/api/v1/experiments/{dag_experiment.slug}/memory/search",
                               json.dumps({"mode": "agent_filter", "agent_filter": [agent]}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert response.status_code == 200, response.content
        return [r["content"] for r in response.json()["data"]["results"]]

    assert search("verifier") == ["Verified the comet nucleus claim."]
    assert search("collector") == ["Comets have icy nuclei."]
    assert search("looper") == ["Loop worker found tails point away from the sun."]
    for agent in ("collector", "verifier", "looper"):
        own = [s.episode for s in recall_for(experiment=dag_experiment, agent_id=agent, top_k=10).items
               if s.episode.agent_id == agent]  # fmt: skip
        assert own, agent  # recall, the tab and the search all know the agent's output
