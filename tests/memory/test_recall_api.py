"""The recall API and the Recall sub-tab over pushed events: envelope, access control, refusals, redaction, roles."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from experiments.ingest import EventIn, append_events
from experiments.models import Experiment
from experiments.protocol import parse_protocol
from memory.models import AccessAudit, Episode
from tests.factories import make_experiment, make_member, make_run, make_token

pytestmark = pytest.mark.django_db

PROTOCOL = """
state:
  sharing:
    strategy: selective
    rules:
      - {from: researcher, to: [writer], fields: [findings]}
    never_share: [internal_reasoning]
memory:
  access_control:
    intruder: {episodic: none}
  salience: {top_k: 2}
"""


@pytest.fixture
def seeded() -> Experiment:
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    run = make_run(experiment)
    append_events(run, [
        EventIn("run.start", "key:start", {"task": "Learn about bananas."}),
        EventIn("worker.complete", "key:r1", {"summary": "Bananas are yellow.", "findings": ["bananas ripen fast"],
                "internal_reasoning": "PRIVATE-THOUGHT", "password": "hunter2-PASS"}, agent_id="researcher", iteration=1),
        EventIn("worker.complete", "key:w1", {"summary": "Drafted the banana report."}, agent_id="writer", iteration=2),
        EventIn("iteration.decision", "key:d2", {"decision": "complete", "reasoning": "enough bananas"}, iteration=2),
    ])  # fmt: skip
    return experiment


def recall(client: Client, token: str, slug: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(f"/api/v1/experiments/{slug}/memory/recall", json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
    return response.status_code, response.json()


def test_recall_answers_the_block_in_the_envelope(client, seeded) -> None:
    token = make_token(seeded, ["memory:read"])
    status, body = recall(client, token, seeded.slug, {"agent_id": "writer", "query": "bananas", "top_k": 10})
    assert status == 200 and body["ok"] is True and body["error"] is None
    data = body["data"]
    assert set(data) >= {"items", "block", "below_cut", "turn"}
    item = data["items"][0]
    assert set(item) >= {"content", "source", "kind", "turn", "run_id", "scores"}
    assert set(item["scores"]) == {"relevance", "recency", "importance", "salience"}
    contents = " ".join(i["content"] for i in data["items"])
    assert "bananas ripen fast" in contents  # the selective rule's field
    assert "Bananas are yellow" not in contents and "PRIVATE-THOUGHT" not in json.dumps(body)  # summary not shared
    assert "hunter2-PASS" not in json.dumps(body)
    assert [i["kind"] for i in data["items"]].count("worker.complete") == 2  # own + the researcher's findings
    # The protocol's top_k applies when the request names none.
    _, small = recall(client, token, seeded.slug, {"agent_id": "writer"})
    assert len(small["data"]["items"]) == 2 and small["data"]["below_cut"]


def test_the_producer_recalls_its_own_output_but_never_a_secret(client, seeded) -> None:
    token = make_token(seeded, ["memory:read"])
    _, body = recall(client, token, seeded.slug, {"agent_id": "researcher", "top_k": 10})
    text = json.dumps(body)
    assert "Bananas are yellow" in text and "PRIVATE-THOUGHT" in text  # its own never_share field
    assert "hunter2-PASS" not in text


def test_recall_refusals(client, seeded) -> None:
    token = make_token(seeded, ["memory:read"])
    status, body = recall(client, token, seeded.slug, {"agent_id": "intruder"})
    assert status == 403 and body["code"] == "memory_access_denied"
    assert AccessAudit.objects.filter(experiment=seeded, agent_id="intruder", allowed=False).exists()
    for bad in ({"agent_id": "writer", "top_k": 0}, {"agent_id": "writer", "turn": -1}, {"agent_id": "writer", "top_k": "x"}):
        status, body = recall(client, token, seeded.slug, bad)
        assert status == 422 and body["code"] == "invalid_request" and body["error"]
    other = make_token(make_experiment(), ["memory:read"])
    status, _ = recall(client, other, seeded.slug, {"agent_id": "writer"})
    assert status in (403, 404)
    assert client.post(f"/api/v1/experiments/{seeded.slug}/memory/recall", "{}", content_type="application/json").status_code == 401
    broken = "memory:\n  salience: {w_recency: -1}\n"
    Experiment.objects.filter(pk=seeded.pk).update(protocol_yaml=broken, protocol=parse_protocol(broken))
    status, body = recall(client, token, seeded.slug, {"agent_id": "writer"})
    assert status == 422 and body["code"] == "invalid_memory_config" and "w_recency" in body["error"]


def test_episodes_are_projected_once(seeded) -> None:
    run = seeded.runs.get()
    count = Episode.objects.filter(experiment=seeded).count()
    assert count == 4
    append_events(run, [EventIn("worker.complete", "key:r1", {"summary": "again"}, agent_id="researcher", iteration=1)])
    assert Episode.objects.filter(experiment=seeded).count() == count


def test_recall_page_roles_and_partial(client, seeded) -> None:
    viewer = make_member(seeded, "viewer")
    client.force_login(viewer)
    url = f"/experiments/{seeded.slug}/memory/recall/"
    page = client.get(url, {"agent": "writer", "q": "bananas"})
    html = page.content.decode()
    assert page.status_code == 200 and "What will this agent remember?" in html and "bananas ripen fast" in html
    assert "Reflection is off" in html and "Reflect now" not in html
    partial = client.get(url, {"agent": "writer", "q": "report"}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="recall-result")
    body = partial.content.decode()
    assert partial.status_code == 200 and 'id="recall-result"' in body and "<html" not in body and "Drafted the banana report" in body
    assert client.get(url, {"agent": "nobody"}).status_code == 200  # an unknown agent is a form error, not a crash
    assert client.post(f"{url}reflect/", {"agent": "writer"}).status_code == 403
    client.force_login(make_member(make_experiment(), "owner"))
    assert client.get(url).status_code == 404


SCENARIOS = {
    "selective": PROTOCOL,
    "full+never_share": "state:\n  sharing: {strategy: full, never_share: [internal_reasoning]}\n",
    "full": "state:\n  sharing: {strategy: full}\n",
    "isolated": "state:\n  sharing:\n    strategy: isolated\n    share_input: {writer: [researcher.findings]}\n"
                "    never_share: [reasoning]\n",
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_the_sql_path_equals_the_pure_reference(scenario) -> None:
    from memory import recall as pure
    from memory.episodes import load_episodes, recall_for
    from state.config import state_settings

    text = SCENARIOS[scenario]
    experiment = make_experiment(protocol_yaml=text, protocol=parse_protocol(text))
    for _ in range(2):
        run = make_run(experiment)
        append_events(run, [
            EventIn("run.start", "key:start", {"task": "Learn about bananas."}),
            *[EventIn("worker.complete", f"key:{agent}{i}", {"summary": f"{agent} says bananas {i} report",
                      "findings": [f"fact {i}"], "internal_reasoning": f"hidden {agent} {i}"}, agent_id=agent, iteration=i)
              for i in range(1, 4) for agent in ("researcher", "writer", "other")],
            EventIn("iteration.decision", "key:d", {"decision": "complete", "reasoning": "enough bananas"}, iteration=3),
            EventIn("run.complete", "key:end", {"status": "complete", "total_iterations": 3}),
        ])  # fmt: skip
    policy = state_settings(experiment.protocol).sharing
    for reader in ("researcher", "writer", "other", "stranger"):
        for query in ("", "bananas report 2", "hidden"):
            for turn, top_k in ((None, 4), (5, 3), (None, 30)):
                fast = recall_for(experiment=experiment, agent_id=reader, query=query, turn=turn, top_k=top_k)
                slow = pure.recall(load_episodes(experiment, reader), reader=reader, policy=policy,
                                   weights=pure.SalienceWeights(), query=query, turn=turn, top_k=top_k)  # fmt: skip
                case = (scenario, reader, query, turn, top_k)
                assert fast.turn == slow.turn, case
                assert [(s.episode.key, s.content, s.salience) for s in fast.items] == \
                       [(s.episode.key, s.content, s.salience) for s in slow.items], case  # fmt: skip
                assert [s.episode.key for s in fast.below] == [s.episode.key for s in slow.below], case
                assert [(s.relevance, s.recency) for s in fast.items] == [(s.relevance, s.recency) for s in slow.items], case


def test_a_long_history_prunes_old_partial_episodes_without_changing_the_block() -> None:
    from memory import recall as pure
    from memory.episodes import load_episodes, recall_for
    from state.config import state_settings

    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    append_events(make_run(experiment), [
        EventIn("worker.complete", f"key:{agent}{i}", {"summary": f"{agent} bananas {i}", "findings": [f"fact {i % 7}"]},
                agent_id=agent, iteration=i)
        for i in range(1, 121) for agent in ("researcher", "writer")
    ])  # fmt: skip
    policy = state_settings(experiment.protocol).sharing
    for query in ("", "fact 3", "bananas 7"):
        fast = recall_for(experiment=experiment, agent_id="writer", query=query)
        slow = pure.recall(load_episodes(experiment, "writer"), reader="writer", policy=policy,
                           weights=pure.SalienceWeights(top_k=2), query=query)  # fmt: skip
        assert [(s.episode.key, s.salience) for s in fast.items + fast.below] == \
               [(s.episode.key, s.salience) for s in slow.items + slow.below], query  # fmt: skip
