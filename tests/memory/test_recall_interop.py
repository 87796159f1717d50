"""Recall and reflections end to end with the real AWP runtime and the tests' fake LLM.

A DAG run (researcher → analyst, selective sharing, never_share internal_reasoning) and a delegation loop
(fact_collector, carrying a secret and a never_share field) are imported into one experiment whose protocol
asks for a reflection every 4 episodes. The test derives what each agent may see and how it must rank from
the ledger and the reference formula by itself, and compares with the memory API.
"""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from experiments.models import Event, Experiment, Run
from experiments.protocol import parse_protocol
from memory.curation.models import Fact, Proposal
from memory.curation.services import review_proposal
from memory.longterm import current_long_term
from memory.models import Episode, Reflection
from memory.recall import render_fields
from state.services import state_at_seq, view_as
from tests.awp_driver import DAG_WORKFLOW
from tests.awp_runtime import FakeLLM, Script, run_dag, run_delegation_loop
from tests.factories import make_member, make_token

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]

PROTOCOL = DAG_WORKFLOW.split("memory:\n")[0] + "memory:\n  enabled: true\n  reflection:\n    every: 4\n"
LOOP_SECRET = "sk-loop-SECRET-7777"
LOOP_HIDDEN = "LOOP-HIDDEN-reasoning"
# The reference's importance by kind, mapped onto AWP kinds as the README documents it.
REFERENCE_IMPORTANCE = {"run.start": 0.3, "board.post": 0.5, "worker.complete": 0.8, "state.snapshot": 0.8,
                        "reflection": 0.85, "iteration.decision": 0.9, "iteration.validation": 0.9, "run.complete": 1.0}  # fmt: skip
PUBLIC = ("run.start", "iteration.decision", "iteration.validation", "run.complete")


@pytest.fixture(scope="module")
def workflows(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    llm = FakeLLM(Script(iterations=3, extra_fields={"internal_reasoning": LOOP_HIDDEN, "api_key": LOOP_SECRET})).start()
    try:
        root = tmp_path_factory.mktemp("recall")
        run_dag(root / "dag", llm)  # first: the DAG run is the earlier one on the turn clock
        run_delegation_loop(root / "loop", llm)
    finally:
        llm.stop()
    return root


@pytest.fixture
def llm() -> Any:
    server = FakeLLM().start()
    yield server
    server.stop()


def import_both(workflows: Path, slug: str) -> Experiment:
    experiment = Experiment.objects.create(slug=slug, name=slug, protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    for name in ("dag", "loop"):
        call_command("awp_import", str(workflows / name), "--experiment", slug, "--json", stdout=io.StringIO())
    experiment.refresh_from_db()
    return experiment


def recall_api(client: Client, token: str, slug: str, body: dict[str, Any]) -> dict[str, Any]:
    response = client.post(f"/api/v1/experiments/{slug}/memory/recall", json.dumps(body), content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is True and body["status"] == 200
    return body["data"]


def expected_ledger_episodes(experiment: Experiment, reader: str) -> list[tuple[str, str, int]]:
    """(kind, producer, turn clock) of every ledger episode `reader` may see, derived from the events alone."""
    dag = Run.objects.get(experiment=experiment, events__kind="state.snapshot", events__agent_id="researcher")
    loop = Run.objects.exclude(pk=dag.pk).get(experiment=experiment, parent__isnull=True)
    steps = [e for e in Event.objects.filter(run=dag, kind="state.snapshot").order_by("seq") if e.agent_id != "final"]
    out = []
    for step, event in enumerate(steps, 1):
        # Selective sharing: the analyst reads the researcher's findings and summary; nobody reads the analyst.
        if event.agent_id == reader or (event.agent_id, reader) == ("researcher", "analyst"):
            out.append(("state.snapshot", event.agent_id, step))
    offset = len(steps) + 1  # the DAG run's turns 0..2 come first
    iterations = max(e.iteration or 0 for e in Event.objects.filter(run=loop))
    for event in Event.objects.filter(run=loop, kind__in=PUBLIC).order_by("seq"):
        turn = 0 if event.kind == "run.start" else event.iteration if event.iteration is not None else iterations
        out.append((event.kind, "", offset + turn))
    if reader == "fact_collector":
        for event in Event.objects.filter(run=loop, kind="worker.complete"):
            out.append(("worker.complete", "fact_collector", offset + event.iteration))
    return sorted(out)


def jaccard(query: str, text: str) -> float:
    q, t = set(re.findall(r"\w+", query.lower())), set(re.findall(r"\w+", text.lower()))
    return len(q & t) / len(q | t) if q and t else 0.0


def reference_salience(item: dict[str, Any], now: int, query: str) -> float:
    return (0.3 * jaccard(query, item["content"]) + 0.4 * math.exp(-0.1 * (now - item["turn"]))
            + 0.3 * REFERENCE_IMPORTANCE[item["kind"]])  # fmt: skip


def test_recall_shows_what_sharing_allows_ranked_by_the_reference_formula(workflows, llm, settings, client) -> None:
    settings.LLM_BASE_URL = llm.url
    experiment = import_both(workflows, "recall-rank")
    token = make_token(experiment, ["memory:read"])
    everything = recall_api(client, token, experiment.slug, {"agent_id": "analyst", "top_k": 100})
    items = everything["items"]
    ledger = sorted((i["kind"], i["agent_id"], i["turn"]) for i in items if i["kind"] not in ("reflection", "board.post"))
    assert ledger == expected_ledger_episodes(experiment, "analyst")
    assert not [i for i in items if i["kind"] in ("worker.complete", "board.post")]  # fact_collector is not shared
    researcher = next(i for i in items if i["agent_id"] == "researcher")
    assert "42 is even" in researcher["content"] and "Researched the number 42." in researcher["content"]
    # The same fields the State tab shows "as seen by" the analyst.
    dag = Run.objects.get(experiment=experiment, events__kind="state.snapshot", events__agent_id="researcher")
    as_seen = view_as(run=dag, state=state_at_seq(run=dag)[1], agent="analyst")["researcher"]
    assert researcher["content"] == render_fields(as_seen) and set(as_seen) == {"findings", "summary"}
    text = json.dumps(everything)
    for hidden in ("scratch notes", "sk-test-SECRET", LOOP_SECRET, LOOP_HIDDEN, "confidence\": 0.9"):
        assert hidden not in text
    # The scores are the reference's formula, computed here from the answer's turns, kinds and contents.
    query = "42 pronic number analysis"
    ranked = recall_api(client, token, experiment.slug, {"agent_id": "analyst", "query": query, "top_k": 100})
    now = ranked["turn"]
    assert now == max(turn for _, _, turn in expected_ledger_episodes(experiment, "analyst"))
    for item in ranked["items"]:
        assert item["scores"]["salience"] == pytest.approx(reference_salience(item, now, query), abs=2e-4)
    expected = sorted((reference_salience(i, now, query) for i in ranked["items"]), reverse=True)
    top3 = recall_api(client, token, experiment.slug, {"agent_id": "analyst", "query": query, "top_k": 3})
    assert sorted((reference_salience(i, now, query) for i in top3["items"]), reverse=True) == pytest.approx(expected[:3])
    assert all(reference_salience(b, now, query) <= min(expected[:3]) + 1e-9 for b in top3["below_cut"])
    assert [i["turn"] for i in top3["items"]] == sorted(i["turn"] for i in top3["items"])  # read in turn order
    assert top3["block"].count("\n") == 2 and "[sal=" in top3["block"]
    # The own agent sees its own results; the analyst's view of the researcher equals the State tab's "as seen by".
    own = recall_api(client, token, experiment.slug, {"agent_id": "fact_collector", "top_k": 100})
    assert sorted((i["kind"], i["agent_id"], i["turn"]) for i in own["items"]
                  if i["kind"] not in ("reflection", "board.post")) == expected_ledger_episodes(experiment, "fact_collector")  # fmt: skip


def test_reflection_after_n_episodes_waits_for_review_and_promotes(workflows, llm, settings, client) -> None:
    settings.LLM_BASE_URL = llm.url
    experiment = import_both(workflows, "recall-reflect")
    reflections = {r.agent_id: r for r in Reflection.objects.filter(experiment=experiment)}
    # Every agent that saw ≥ 4 episodes (own + public record) reflected once, on commit of the import.
    assert set(reflections) == {"researcher", "analyst", "fact_collector"}
    assert all(r.status == "done" and r.episode_keys and r.model and r.completed_at for r in reflections.values())
    prompts = "\n".join(llm.reflection_prompts())
    assert len(llm.reflection_prompts()) == 3
    for hidden in ("sk-test-SECRET", LOOP_SECRET, LOOP_HIDDEN, "scratch notes"):
        assert hidden not in prompts and hidden not in json.dumps([r.prompt for r in reflections.values()])
    belief = reflections["fact_collector"].belief
    assert belief.startswith("BELIEF: fact_collector")
    assert Episode.objects.filter(experiment=experiment, kind="reflection", agent_id="fact_collector").count() == 1

    # In the recall block (a reflection is public: the analyst recalls it too) and in the Episodic tab.
    token = make_token(experiment, ["memory:read"])
    block = recall_api(client, token, experiment.slug, {"agent_id": "fact_collector", "top_k": 100})
    mine = [i for i in block["items"] if i["kind"] == "reflection" and i["agent_id"] == "fact_collector"]
    assert mine and mine[0]["content"] == belief and mine[0]["scores"]["importance"] == 0.85
    viewer = make_member(experiment, "viewer")
    client.force_login(viewer)
    page = client.get(f"/experiments/{experiment.slug}/memory/episodic/?agent=fact_collector")
    assert page.status_code == 200 and belief in page.content.decode()

    # It waits in the Review queue; approving it promotes it like a fact.
    proposal = Proposal.objects.get(experiment=experiment, kind="reflection", details__agent_id="fact_collector")
    assert proposal.status == "pending" and proposal.text == belief
    assert proposal.evidence.count() == len(reflections["fact_collector"].episode_keys)
    review = client.get(f"/experiments/{experiment.slug}/review/?kind=reflection")
    assert review.status_code == 200 and belief in review.content.decode()
    before = current_long_term(experiment)
    curator = make_member(experiment, "curator")
    review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
    after = current_long_term(experiment)
    assert after is not None and after.version == (before.version if before else 0) + 1
    assert "## Reflections" in after.content and belief in after.content
    assert Fact.objects.get(proposal=proposal).version == 1


def test_a_malformed_answer_is_recorded_then_retried_never_half_stored(workflows, llm, settings) -> None:
    experiment = import_both(workflows, "recall-retry")  # no endpoint configured during the import: reflection off
    assert not Reflection.objects.filter(experiment=experiment).exists()
    settings.LLM_BASE_URL = llm.url
    llm.reset(Script(reflection_answer='{"belief": "cut off in the mid'))
    out = io.StringIO()
    call_command("awp_reflect", "--experiment", experiment.slug, "--agent", "analyst", stdout=out)
    assert json.loads(out.getvalue().strip().splitlines()[-1]) == {"reflections": 0, "agents": 1, "skipped": 1}
    failed = Reflection.objects.get(experiment=experiment, agent_id="analyst")
    assert failed.status == "failed" and failed.attempts == 1 and "JSON" in failed.error and failed.next_retry_at
    assert not Episode.objects.filter(experiment=experiment, kind="reflection").exists()
    assert not Proposal.objects.filter(experiment=experiment, kind="reflection").exists()

    llm.reset(Script())
    out = io.StringIO()
    call_command("awp_reflect", "--experiment", experiment.slug, "--agent", "analyst", stdout=out)
    assert json.loads(out.getvalue().strip().splitlines()[-1]) == {"reflections": 1, "agents": 1, "skipped": 0}
    failed.refresh_from_db()
    assert failed.status == "done" and failed.attempts == 2 and failed.belief.startswith("BELIEF: analyst")
    assert Reflection.objects.filter(experiment=experiment).count() == 1  # the same reflection, retried
    assert Proposal.objects.filter(experiment=experiment, kind="reflection").count() == 1
