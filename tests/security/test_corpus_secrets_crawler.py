"""R14 on real runtime runs whose agents handle credentials in the corpus' everyday shapes (tests/corpus/secrets).

A real delegation loop's workers return TUNE and HOLDOUT documents (shell sessions, config files, markup, HTTP
traces, tables, next-line values) as free text under harmless keys, a worker writes some to the daily log
through the memory API, and more arrive pushed as tool calls and logs (the blind parts HOLDOUT2 to HOLDOUT18
too); a real DAG runs beside it. Then a viewer crawls every page, fragment, API answer and run socket, and a
`memory:read` token searches and recalls: no TUNE or HOLDOUT value may be visible in any escaped form, and no
blind value beyond what the detector misses in the document alone. The figure per part is printed
(docs/redaction.md keeps them).
"""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import ahocorasick
import pytest
import requests
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from experiments.models import Run
from state.detection import detect_secrets
from state.redaction import KnownSecrets, escaped_forms, redact_text, sensitive_set
from tests.awp_runtime import Script, run_dag, run_delegation_loop
from tests.corpus.secrets.holdout import generate as holdout
from tests.corpus.secrets.holdout2 import generate as holdout2
from tests.corpus.secrets.holdout3 import generate as holdout3
from tests.corpus.secrets.holdout4 import generate as holdout4
from tests.corpus.secrets.holdout5 import generate as holdout5
from tests.corpus.secrets.holdout6 import generate as holdout6
from tests.corpus.secrets.holdout7 import generate as holdout7
from tests.corpus.secrets.holdout8 import generate as holdout8
from tests.corpus.secrets.holdout9 import generate as holdout9
from tests.corpus.secrets.holdout10 import generate as holdout10
from tests.corpus.secrets.holdout11 import generate as holdout11
from tests.corpus.secrets.holdout12 import generate as holdout12
from tests.corpus.secrets.holdout13 import generate as holdout13
from tests.corpus.secrets.holdout14 import generate as holdout14
from tests.corpus.secrets.holdout15 import generate as holdout15
from tests.corpus.secrets.holdout16 import generate as holdout16
from tests.corpus.secrets.holdout17 import generate as holdout17
from tests.corpus.secrets.holdout18 import generate as holdout18
from tests.corpus.secrets.tune import generate as tune
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.proofkit import login_cookie
from tests.security.surfaces import surfaces_for_a_viewer, token_answers, websocket_frames

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]

PUSH_RUN = "2026-11-25_09-00-00_corpus"
PUSH_BATCH = 250
TUNE_DOCS = [d for d in tune.documents(seed=4711, per_shape=2) if d.secrets]
HOLDOUT_DOCS = [d for d in holdout.documents(seed=8086) if d.secrets]
# Written blind later, each after the part before it was spent on the detector: what it misses is what the
# design misses on text nobody tuned against (docs/redaction.md).
BLIND_DOCS = {
    part.upper(): [d for d in module.documents() if d.secrets]
    for part, module in (("holdout2", holdout2), ("holdout3", holdout3), ("holdout4", holdout4), ("holdout5", holdout5), ("holdout6", holdout6), ("holdout7", holdout7), ("holdout8", holdout8), ("holdout9", holdout9), ("holdout10", holdout10), ("holdout11", holdout11), ("holdout12", holdout12), ("holdout13", holdout13), ("holdout14", holdout14), ("holdout15", holdout15), ("holdout16", holdout16), ("holdout17", holdout17), ("holdout18", holdout18))
}


def _visible(planted: dict[str, list[str]], bodies: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """Per part, each planted value found in any body, in any of its escaped forms, with where.

    One automaton for every part, one pass per body (a pass per part and body was 10 of the test's 100 s).
    """
    owners: dict[str, list[tuple[str, str]]] = {}
    for part, values in planted.items():
        # A form two values of one part share names the later one, as one automaton per part did.
        forms = {form: value for value in values for form in escaped_forms(value)}
        for form, value in forms.items():
            owners.setdefault(form, []).append((part, value))
    automaton = ahocorasick.Automaton()
    for form, owned in owners.items():
        automaton.add_word(form, owned)
    automaton.make_automaton()
    found: dict[str, dict[str, list[str]]] = {part: {} for part in planted}
    for name, body in bodies.items():
        for part, value in {hit for _, owned in automaton.iter(body) for hit in owned}:
            found[part].setdefault(value, []).append(name)
    return {part: {value: where[:3] for value, where in values.items()} for part, values in found.items()}


def _strings(value: Any) -> str:
    """Every string of a JSON value (keys too), as stored, joined by spaces."""
    if isinstance(value, dict):
        return " ".join(f"{key} {_strings(item)}" for key, item in value.items())
    if isinstance(value, list):
        return " ".join(_strings(item) for item in value)
    return value if isinstance(value, str) else ""


def test_no_corpus_credential_handled_by_real_agents_reaches_a_viewer_or_a_read_token(tmp_path, fake_llm, live_server_factory):
    server = live_server_factory()
    experiment = make_experiment(slug="corpus")
    viewer = make_member(experiment, "viewer")
    docs = TUNE_DOCS + HOLDOUT_DOCS
    # The blind parts are pushed, each document once (in every worker result they would make every page huge).
    blind = [d for part in BLIND_DOCS.values() for d in part]
    # The loop's workers return every document as free text under a harmless key.
    fake_llm.reset(Script(iterations=2, extra_fields={f"attachment_{i}": doc.text for i, doc in enumerate(docs)}))
    run_delegation_loop(tmp_path / "loop", fake_llm)
    run_dag(tmp_path / "dag", fake_llm)
    for folder in ("loop", "dag"):
        call_command("awp_import", str(tmp_path / folder), "--experiment", experiment.slug, "--json", stdout=io.StringIO())
    token = make_token(experiment, ["ingest", "memory:read", "memory:write"])
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    for doc in docs[::4]:  # a worker keeps some in its daily log
        written = agent.post(f"/api/v1/experiments/{experiment.slug}/memory/write",
                             json.dumps({"agent_id": "fact_collector", "target": "daily", "content": f"Notes:\n{doc.text}"}),
                             content_type="application/json")  # fmt: skip
        assert written.status_code == 200, written.content
    events: list[dict[str, Any]] = [{"kind": "run.start", "idempotency_key": "s", "payload": {"run_id": PUSH_RUN, "task": "Deploy."}}]
    events += [{"kind": "tool.call", "agent_id": "deployer", "idempotency_key": f"t{i}",
                "payload": {"tool": "shell", "args": {"command": doc.text}}} for i, doc in enumerate(docs[1::3])]  # fmt: skip
    events += [{"kind": "log", "idempotency_key": f"l{i}", "payload": {"msg": doc.text}} for i, doc in enumerate(docs[2::3])]
    events += [{"kind": "tool.call", "agent_id": "operator", "idempotency_key": f"b{i}",
                "payload": {"tool": "shell", "args": {"command": doc.text}}} for i, doc in enumerate(blind[0::2])]  # fmt: skip
    events += [{"kind": "log", "idempotency_key": f"bl{i}", "payload": {"msg": doc.text}} for i, doc in enumerate(blind[1::2])]
    # In batches as an agent pushes (one request for every part's ~3,500 documents ran past its timeout on a busy
    # machine: each batch learns, scans and projects hundreds of documents).
    for start in range(0, len(events), PUSH_BATCH):
        pushed = requests.post(f"{server.url}/api/v1/ingest", json={"run_id": PUSH_RUN, "events": events[start : start + PUSH_BATCH]},
                               headers={"Authorization": f"Bearer {token}"}, timeout=60)  # fmt: skip
        assert pushed.status_code == 200, pushed.text
    call_command("awp_embed", "--experiment", experiment.slug, stdout=io.StringIO(), stderr=io.StringIO())
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))
    # The values really are stored raw: the crawl is not vacuous.
    raw = " ".join(_strings(e.payload) for run in runs for e in run.events.all())  # unescaped: a value may hold `"`, `\` or a newline
    planted = {"TUNE": [s for d in TUNE_DOCS for s in d.secrets], "HOLDOUT": [s for d in HOLDOUT_DOCS for s in d.secrets]}
    planted.update({part: [s for d in part_docs for s in d.secrets] for part, part_docs in BLIND_DOCS.items()})
    assert all(value in raw for values in planted.values() for value in values)

    browser = Client()
    assert browser.login(username=viewer.username, password=PASSWORD)
    bodies = surfaces_for_a_viewer(browser, experiment, runs)
    bodies.update(token_answers(experiment, token))
    assert any("fact_collector" in body for body in bodies.values())
    live = HOLDOUT_DOCS[0]

    def push_live() -> None:
        event = {"kind": "log", "idempotency_key": "live", "payload": {"msg": f"again: {live.text}"}}
        requests.post(f"{server.url}/api/v1/ingest", json={"run_id": PUSH_RUN, "events": [event]},
                      headers={"Authorization": f"Bearer {token}"}, timeout=30).raise_for_status()  # fmt: skip

    frames = asyncio.run(websocket_frames(server.url, login_cookie(server.url, viewer.username), [r.pk for r in runs], push_live))
    assert len(frames) >= len(runs)
    bodies.update({f"frame {i}": frame for i, frame in enumerate(frames)})
    leaks = _visible(planted, bodies)
    for part, values in planted.items():
        print(f"{part}: {len(leaks[part])} of {len(values)} planted values visible")  # the figure of docs/redaction.md
    assert leaks["TUNE"] == {}, leaks
    # HOLDOUT: the detector finds every value in the documents alone; every way out masks whatever was found.
    # The blind parts: nothing visible beyond what the detector misses in the document alone (their figures are
    # printed above; docs/redaction.md keeps them).
    sensitive = sensitive_set(settings.AWP_SENSITIVE_FIELDS)

    def missed_alone(part_docs: list[Any]) -> set[str]:
        return {s for d in part_docs for s in d.secrets if s in redact_text(d.text, sensitive, KnownSecrets.of(detect_secrets(d.text, sensitive)))}

    assert leaks["HOLDOUT"] == {} and missed_alone(HOLDOUT_DOCS) == set(), leaks["HOLDOUT"]
    for part, part_docs in BLIND_DOCS.items():
        assert set(leaks[part]) <= missed_alone(part_docs), (part, set(leaks[part]) - missed_alone(part_docs))
