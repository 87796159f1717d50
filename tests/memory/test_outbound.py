"""Third parties see what the agent may see, masked (issue 23), through one outbound builder (memory.outbound).

Agent `writer` of a run whose decision and `run.complete` carry never_share fields, whose own output carries an
unshareable contract field, and which quotes a credential in prose in one batch and carries it under `api_key`
in another. Whatever the order of the batches (a reflection is asked after each), the tests' OpenAI-compatible
endpoint receives no never_share or unshareable value and no credential; every body it receives is a stored
prompt; the belief that comes back is masked and other agents recall none of those fields.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from experiments.ingest import EventIn, append_events
from experiments.models import Experiment
from memory import outbound
from memory.episodes import recall_for
from memory.models import Reflection
from memory.reflection import reflect_experiment
from state.models import KnownSecret
from tests.awp_runtime import FakeLLM, Script
from tests.factories import make_run

pytestmark = pytest.mark.django_db

CRED = "ghp_R4nd0mT0kenValue1234567890abcdefGH"  # a GitHub token: quoted in prose first, keyed later (or the reverse)
NEVER_DECISION = "NEVER-decision-notes-5521"
NEVER_COMPLETE = "NEVER-complete-scratch-8830"
UNSHAREABLE = "UNSHAREABLE-draft-source-3318"
OWN_NEVER = "NEVER-writer-own-notes-4410"
HIDDEN = (CRED, NEVER_DECISION, NEVER_COMPLETE, UNSHAREABLE, OWN_NEVER)
PROTOCOL: dict[str, Any] = {
    "state": {"sharing": {"strategy": "selective", "never_share": ["internal_notes", "private_scratch"],
                          "rules": [{"from": "writer", "to": ["reader"], "fields": ["summary", "draft"]}]}},
    "agents": {"writer": {"output_contract": {"properties": {
        "summary": {"type": "string"}, "draft_source": {"type": "string", "x-awp-shareable": False}}}}},
}  # fmt: skip

PROSE = [EventIn(kind="worker.complete", dedupe_key="prose", agent_id="writer", iteration=1, payload={
    "worker_id": "writer", "summary": f"Deployed with {CRED} as the runbook says.", "draft": "first draft",
    "draft_source": UNSHAREABLE, "internal_notes": OWN_NEVER, "confidence": 0.9})]  # fmt: skip
KEYED = [EventIn(kind="worker.complete", dedupe_key="keyed", agent_id="writer", iteration=2, payload={
    "worker_id": "writer", "summary": "Rotated the deploy key.", "api_key": CRED, "confidence": 0.8})]  # fmt: skip
PUBLIC = [
    EventIn(kind="iteration.decision", dedupe_key="decision", agent_id="manager", iteration=2, payload={
        "decision": "complete", "reasoning": "The answer is 42.", "confidence": 0.9,
        "final_result": {"answer": "FORTY-TWO", "internal_notes": NEVER_DECISION}}),
    EventIn(kind="run.complete", dedupe_key="complete", payload={
        "status": "completed", "reason": "done", "total_iterations": 2,
        "final_result": {"answer": "FORTY-TWO", "private_scratch": NEVER_COMPLETE}}),
]  # fmt: skip
BATCHES = {"prose": PROSE, "keyed": KEYED, "public": PUBLIC}
_slugs = itertools.count(1)


@pytest.fixture(scope="module")
def llm() -> Any:
    server = FakeLLM(Script(reflection_echo=True)).start()
    yield server
    server.stop()


def run_batches(order: tuple[str, ...], llm: FakeLLM) -> Experiment:
    experiment = Experiment.objects.create(slug=f"outbound-{next(_slugs)}", name="outbound", protocol=PROTOCOL)
    run = make_run(experiment)
    # The reader has an output of its own, so it is an agent of the experiment with a recall of its own.
    append_events(run, [EventIn(kind="worker.complete", dedupe_key="reader", agent_id="reader", iteration=1,
                                payload={"worker_id": "reader", "summary": "Read the draft.", "confidence": 0.7})])  # fmt: skip
    for name in order:
        append_events(run, BATCHES[name])
        reflect_experiment(experiment=experiment, agent_id="writer", force=True, trigger="manual")
    return experiment


def assert_nothing_hidden_left(experiment: Experiment, bodies: list[dict[str, Any]]) -> None:
    stored = [r.prompt for r in Reflection.objects.filter(experiment=experiment)]
    assert bodies and len(bodies) == len(stored)
    sent = json.dumps(bodies)
    for hidden in HIDDEN:
        assert hidden not in sent, hidden
        assert hidden not in json.dumps(stored), hidden
    # Every body the endpoint received is a prompt stored exactly as sent.
    assert all(body["messages"] in stored for body in bodies)
    # The public record and the agent's own prose are in the prompt (masked, not dropped).
    assert "FORTY-TWO" in sent and "Deployed with" in sent


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(order=st.permutations(list(BATCHES)))
@example(order=["prose", "keyed", "public"])  # the credential in prose one batch before it is keyed
@example(order=["keyed", "prose", "public"])  # and the reverse
@example(order=["public", "prose", "keyed"])
def test_the_endpoint_receives_no_never_share_value_and_no_credential_whatever_the_order(llm, settings, order) -> None:  # type: ignore[no-untyped-def]
    settings.LLM_BASE_URL = llm.url
    before = len(llm.reflection_bodies())
    experiment = run_batches(tuple(order), llm)
    bodies = llm.reflection_bodies()[before:]
    assert_nothing_hidden_left(experiment, bodies)
    # The belief echoes the prompt; other agents recall it, and it holds none of the hidden values.
    beliefs = [r.belief for r in Reflection.objects.filter(experiment=experiment, status="done")]
    assert len(beliefs) == len(order) and all("FORTY-TWO" in b or "Deployed" in b or "Rotated" in b for b in beliefs)
    block = recall_for(experiment=experiment, agent_id="reader", query="deploy key answer notes", top_k=50)
    recalled = json.dumps([item.content for item in block.items])
    assert "BELIEF" in recalled
    for hidden in HIDDEN:
        assert hidden not in recalled, hidden
    assert KnownSecret.objects.filter(experiment=experiment, value=CRED).exists()  # learnt, whichever came first


def test_a_credential_only_the_detector_finds_is_masked_when_it_would_leave(llm, settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The detector is asked at send time (state.detection.detect_secrets, by that name), and what it finds is
    masked and learnt: a credential in prose that no key and no known format marks."""
    settings.LLM_BASE_URL = llm.url
    plain = "plain-prose-credential-7Hq2"
    real = outbound.detect_secrets
    monkeypatch.setattr(outbound, "detect_secrets", lambda text, sensitive: real(text, sensitive) | ({plain} if plain in text else set()))
    experiment = Experiment.objects.create(slug=f"outbound-{next(_slugs)}", name="outbound", protocol=PROTOCOL)
    append_events(make_run(experiment), [EventIn(kind="worker.complete", dedupe_key="w", agent_id="writer", iteration=1,
                                                 payload={"worker_id": "writer", "summary": f"I logged in with {plain} today."})])  # fmt: skip
    before = len(llm.reflection_bodies())
    reflect_experiment(experiment=experiment, agent_id="writer", force=True)
    bodies = llm.reflection_bodies()[before:]
    assert len(bodies) == 1 and plain not in json.dumps(bodies) and "I logged in with [redacted] today." in json.dumps(bodies)
    assert KnownSecret.objects.filter(experiment=experiment, value=plain).exists()


def test_the_answer_is_scanned_and_masked_like_ingested_text_before_it_is_stored(settings) -> None:  # type: ignore[no-untyped-def]
    said = "Hq93-model-said-it-x"
    server = FakeLLM(Script(reflection_answer=json.dumps({"belief": f"writer keeps the password: {said} in mind"}))).start()
    try:
        settings.LLM_BASE_URL = server.url
        experiment = run_batches(("prose",), server)
    finally:
        server.stop()
    reflection = Reflection.objects.get(experiment=experiment)
    assert reflection.status == "done"
    assert said not in reflection.belief and said not in reflection.answer and "[redacted]" in reflection.belief
    assert KnownSecret.objects.filter(experiment=experiment, value__contains=said).exists()  # learnt: masked everywhere now


def test_a_prompt_stored_before_a_secret_was_learnt_is_masked_again_and_stored_as_sent(llm, settings) -> None:  # type: ignore[no-untyped-def]
    from memory.reflection import _request, run_reflection
    from state.secrets import learn_secrets

    settings.LLM_BASE_URL = llm.url
    experiment = Experiment.objects.create(slug=f"outbound-{next(_slugs)}", name="outbound", protocol=PROTOCOL)
    later = "learnt-after-storing-9Kd"
    append_events(make_run(experiment), [EventIn(kind="worker.complete", dedupe_key="w", agent_id="writer", iteration=1,
                                                 payload={"worker_id": "writer", "summary": f"uses {later} daily"})])  # fmt: skip
    reflection = _request(experiment, "writer", every=None, force=True, trigger="manual")
    assert later in json.dumps(reflection.prompt)  # not a secret yet when it was built
    learn_secrets(experiment_id=experiment.pk, values=[later])
    before = len(llm.reflection_bodies())
    assert run_reflection(reflection)
    body = llm.reflection_bodies()[before:]
    assert len(body) == 1 and later not in json.dumps(body)
    assert body[0]["messages"] == Reflection.objects.get(pk=reflection.pk).prompt


def test_unmasked_messages_are_refused_before_anything_is_sent(llm, settings) -> None:  # type: ignore[no-untyped-def]
    settings.LLM_BASE_URL = llm.url
    experiment = Experiment.objects.create(slug=f"outbound-{next(_slugs)}", name="outbound", protocol=PROTOCOL)
    before = len(llm.bodies)
    with pytest.raises(outbound.UnmaskedOutbound):
        outbound.send_chat(experiment, [{"role": "user", "content": f"password: {CRED}"}])
    assert len(llm.bodies) == before


ROOT = Path(__file__).resolve().parents[2]
# Ways a module could open a connection to a third party.
HTTP_CLIENTS = re.compile(r"\burlopen\b|\bhttp\.client\b|^\s*import requests\b|^\s*from requests\b|\bhttpx\b|\baiohttp\b|\bopenai\b|\bcreate_connection\b", re.M)


def product_modules() -> list[Path]:
    """The checkout's Python files outside the tests, the benches and what is not the product's own (pruned, not
    walked: the virtualenv and the data directory hold tens of thousands of files)."""
    skip = {".venv", "tests", "bench", "node_modules", ".awp-data", ".git", "__pycache__"}
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [name for name in subfolders if name not in skip and not name.startswith(".")]
        found += [Path(folder) / name for name in files if name.endswith(".py")]
    return found


def test_only_the_outbound_module_opens_connections_to_the_chat_endpoint() -> None:
    modules = product_modules()
    assert len(modules) > 50  # the walk found the product
    names_endpoint = {str(p.relative_to(ROOT)) for p in modules if "LLM_BASE_URL" in p.read_text()}
    assert names_endpoint == {"memory/outbound.py", "awp_site/settings.py"}, names_endpoint
    # The standalone push client (clients/python, re-exported by awp_site/client.py) talks to this dashboard's own
    # API, never to a third party; it runs in the agents' processes, not in the server.
    connecting = {str(p.relative_to(ROOT)) for p in modules if HTTP_CLIENTS.search(p.read_text())}
    assert connecting == {"memory/outbound.py", "clients/python/src/awp_memory_client/client.py"}, connecting


def test_a_secret_learnt_after_a_call_is_masked_in_the_stored_prompt_and_answer(llm, settings) -> None:  # type: ignore[no-untyped-def]
    from state.secrets import learn_secrets

    settings.LLM_BASE_URL = llm.url
    experiment = Experiment.objects.create(slug=f"outbound-{next(_slugs)}", name="outbound", protocol=PROTOCOL)
    later = "learnt-after-the-call-4Vb"
    append_events(make_run(experiment), [EventIn(kind="worker.complete", dedupe_key="w", agent_id="writer", iteration=1,
                                                 payload={"worker_id": "writer", "summary": f"uses {later} daily"})])  # fmt: skip
    reflect_experiment(experiment=experiment, agent_id="writer", force=True)
    stored = Reflection.objects.get(experiment=experiment)
    assert later in json.dumps(stored.prompt) and later in stored.belief  # not a secret when it was sent
    learn_secrets(experiment_id=experiment.pk, values=[later])
    stored.refresh_from_db()
    assert later not in json.dumps(stored.prompt) + stored.belief + stored.answer
    assert "[redacted]" in stored.belief
