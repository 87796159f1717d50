"""The recall API and the Recall sub-tab over pushed events: envelope, access control, refusals, redaction, roles."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


_SHARING = {
    "selective": "strategy: selective\n    rules:\n      - {from: researcher, to: [writer], fields: [findings]}\n"
                 "    never_share: [internal_reasoning]",
    "full+never_share": "strategy: full\n    never_share: [internal_reasoning]",
    "isolated": "strategy: isolated\n    share_input: {writer: [researcher.findings, other]}\n    never_share: [reasoning]",
}  # fmt: skip
_VOCAB = ["bananas", "ripe", "report", "fact", "7", "07", "1e", "σας", "ΣΑΣ", "café", "yellow", "e"]


def _build_history(experiment: Experiment, seed: int, runs: int, turns: int) -> None:
    """Runs of `turns` iterations: the researcher's results (partly shared), the writer's, another agent's and the
    manager's decisions, with texts drawn from a small vocabulary, numbers Python spells otherwise, a JSON
    document in a string and a secret under a sensitive key now and then."""
    import random

    rng = random.Random(seed)

    def text(n: int) -> str:
        return " ".join(rng.choice(_VOCAB) for _ in range(rng.randint(1, n)))

    for r in range(runs):
        events = [EventIn("run.start", "key:start", {"task": text(3)})]
        for i in range(1, turns + 1):
            if rng.random() < 0.8:
                payload: dict[str, Any] = {"summary": text(4), "findings": [text(3)], "internal_reasoning": text(2)}
                extra = rng.choice([None, None, {"confidence": 1e-07}, {"notes": ' {"password": "hunter22-SECRET"} '},
                                    {"password": "hunter22-SECRET"}, {"score": 0.30000000000000004}])  # fmt: skip
                events.append(EventIn("worker.complete", f"key:r{i}", {**payload, **(extra or {})}, agent_id="researcher",
                                      iteration=i))  # fmt: skip
            if rng.random() < 0.5:
                events.append(EventIn("worker.complete", f"key:w{i}", {"summary": text(4)}, agent_id="writer", iteration=i))
            if rng.random() < 0.3:
                events.append(EventIn("worker.complete", f"key:o{i}", {"summary": text(3), "reasoning": text(2)},
                                      agent_id="other", iteration=i))  # fmt: skip
            if rng.random() < 0.4:
                events.append(EventIn("iteration.decision", f"key:d{i}", {"decision": "delegate", "reasoning": text(3)},
                                      iteration=i))  # fmt: skip
        if r < runs - 1 or rng.random() < 0.5:
            events.append(EventIn("run.complete", "key:end", {"status": "complete", "total_iterations": turns}))
        append_events(make_run(experiment), events)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sharing=st.sampled_from(sorted(_SHARING)), seed=st.integers(0, 10**6), runs=st.integers(1, 2),
       turns=st.integers(20, 60), top_k=st.integers(1, 3), decay=st.sampled_from([0.1, 0.3, 0.05]),
       w_relevance=st.sampled_from([0.3, 1.0, 3.0]))  # fmt: skip
def test_pruned_recall_equals_the_unpruned_reference(sharing, seed, runs, turns, top_k, decay, w_relevance) -> None:
    """recall_for reads only the episodes that can still reach the top k + BELOW_CUT (recent turns per run,
    older ones sharing a query word); the reference scores every episode. Both must give the same block."""
    from memory import recall as pure
    from memory.episodes import load_episodes, recall_for
    from state.config import state_settings

    text = (f"state:\n  sharing:\n    {_SHARING[sharing]}\n"
            f"memory:\n  salience: {{top_k: {top_k}, decay_lambda: {decay}, w_relevance: {w_relevance}}}\n")  # fmt: skip
    experiment = make_experiment(protocol_yaml=text, protocol=parse_protocol(text))
    _build_history(experiment, seed, runs, turns)
    policy = state_settings(experiment.protocol).sharing
    weights = pure.SalienceWeights.from_config(experiment.memory_config)
    latest = recall_for(experiment=experiment, agent_id="writer").turn
    for reader in ("writer", "researcher", "stranger"):
        for query in ("", "bananas", "ripe report 7", "σας café", "1e 07", "redacted"):
            for turn in (None, latest // 2):
                fast = recall_for(experiment=experiment, agent_id=reader, query=query, turn=turn)
                slow = pure.recall(load_episodes(experiment, reader), reader=reader, policy=policy, weights=weights,
                                   query=query, turn=turn)  # fmt: skip
                case = (reader, query, turn)
                assert [(s.episode.key, s.content, s.salience, s.relevance, s.recency) for s in fast.items] == \
                       [(s.episode.key, s.content, s.salience, s.relevance, s.recency) for s in slow.items], case  # fmt: skip
                assert [(s.episode.key, s.content) for s in fast.below] == [(s.episode.key, s.content) for s in slow.below], case


def test_recall_reads_only_what_can_still_make_the_cut(monkeypatch) -> None:
    """A long history: the block equals the reference's while the partly shared episodes redacted and scored in
    Python are a few of them (the recent turns and those that may share a query word), not all."""
    from memory import episodes
    from memory import recall as pure
    from state.config import state_settings

    text = f"state:\n  sharing:\n    {_SHARING['selective']}\nmemory:\n  salience: {{top_k: 2}}\n"
    experiment = make_experiment(protocol_yaml=text, protocol=parse_protocol(text))
    append_events(make_run(experiment), [
        EventIn("worker.complete", f"key:{agent}{i}", {"summary": f"{agent} bananas {i}", "findings": [f"fact{i % 7} ripe"]},
                agent_id=agent, iteration=i)
        for i in range(1, 201) for agent in ("researcher", "writer")
    ])  # fmt: skip
    redacted: list[int] = []
    real = episodes._episodes
    monkeypatch.setattr(episodes, "_episodes", lambda experiment, rows, runs: redacted.append(len(rows)) or real(experiment, rows, runs))
    policy = state_settings(experiment.protocol).sharing
    for query, at_most in (("", 10), ("fact3", 40), ("apples", 10)):
        redacted.clear()
        fast = episodes.recall_for(experiment=experiment, agent_id="writer", query=query)
        assert sum(redacted) <= at_most, (query, redacted)
        slow = pure.recall(real(experiment, episodes._episode_rows(experiment, "writer"), episodes.turn_clock(experiment)[0]),
                           reader="writer", policy=policy, weights=pure.SalienceWeights(top_k=2), query=query)  # fmt: skip
        assert [(s.episode.key, s.content, s.salience) for s in fast.items + fast.below] == \
               [(s.episode.key, s.content, s.salience) for s in slow.items + slow.below], query  # fmt: skip


def test_an_episode_without_a_vector_falls_back_to_keyword_relevance(monkeypatch) -> None:
    """With the semantic tier on, an episode not yet embedded is scored by its words (as the pure reference and the
    README say), not 0; an embedded one by its vector."""
    from memory import episodes as episodes_module
    from memory import recall as pure
    from memory.embeddings import current_model_name
    from memory.models import MemoryChunk
    from memory.search import vector_literal

    experiment = make_experiment()
    run = make_run(experiment)
    append_events(run, [
        EventIn("worker.complete", "key:a", {"summary": "Kiwis grow on vines in warm valleys."}, agent_id="a", iteration=1),
        EventIn("worker.complete", "key:b", {"summary": "Bananas ripen fast."}, agent_id="a", iteration=2),
    ])  # fmt: skip
    embedded = Episode.objects.get(experiment=experiment, text__contains="Bananas")
    vector = [1.0] + [0.0] * 383
    MemoryChunk.objects.update_or_create(
        experiment=experiment, ref_key=embedded.key,
        defaults={"tier": MemoryChunk.Tier.EPISODIC, "source": "x", "content": embedded.text, "agent_id": "a",
                  "embedding": vector, "model_name": current_model_name()},
    )  # fmt: skip
    MemoryChunk.objects.filter(experiment=experiment).exclude(ref_key=embedded.key).update(embedding=None)
    monkeypatch.setattr(episodes_module, "semantic_query_vector", lambda experiment, query: vector_literal(vector))

    block = episodes_module.recall_for(experiment=experiment, agent_id="a", query="kiwis vines", top_k=5)
    scores = {s.episode.text: s.relevance for s in [*block.items, *block.below]}
    kiwi = next(text for text in scores if "Kiwis" in text)
    assert scores[kiwi] == round(pure.keyword_relevance(pure.words("kiwis vines"), kiwi), 4) > 0
    assert scores[embedded.text] == 1.0  # the same vector as the query
