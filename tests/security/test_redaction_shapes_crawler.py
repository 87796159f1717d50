"""R14 on real runtime output with secrets in every shape (issue 12 §1).

The tests' fake LLM makes real awp-agents runs hand out secrets the way agents do (SHAPED_SECRETS: nested in a
list of dicts, a Bearer header line, a DSN password in prose, env lines in a multi-line string, a password
quoted later in a summary, a Python repr in a memory note, JSON serialized in a string, `client_secret = …` in a
build log, a token quoted under a harmless key, a repr bullet in the daily log). After importing the folders,
a viewer crawls every page and fragment, searches in every mode, opens every memory sub-tab and the State tab
at every seq, reads every run socket; a `memory:read` token calls every read endpoint and searches in every
mode. No secret may appear anywhere, nor in any stored derivative (chunks). An owner still reveals, audited.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from experiments.models import Experiment, Run
from memory.models import MemoryChunk
from state.models import KnownSecret, RevealAudit, StateDelta
from tests.awp_runtime import SHAPED_SECRETS, Script, run_dag, run_delegation_loop
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.proofkit import login_cookie
from tests.security.surfaces import surfaces_for_a_viewer, token_answers, websocket_frames

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]

LEAK = re.compile(r"SHAPED-[\w-]+|" + "|".join(re.escape(v.split("-", 1)[1]) for v in SHAPED_SECRETS.values()))
REPR_NOTE = "Worker note: connected with settings " + repr({"host": "db.internal", "secret": SHAPED_SECRETS["repr"], "port": 5432})


def build_shaped_experiment(tmp_path, fake_llm) -> tuple[Experiment, Any, Any, str]:  # type: ignore[no-untyped-def]
    experiment = make_experiment(slug="shapes")
    viewer, owner = make_member(experiment, "viewer"), make_member(experiment, "owner")
    fake_llm.reset(Script(iterations=1, shapes=True))
    run_delegation_loop(tmp_path / "loop", fake_llm)
    run_dag(tmp_path / "dag", fake_llm)
    for folder in ("loop", "dag"):
        call_command("awp_import", str(tmp_path / folder), "--experiment", experiment.slug, "--json", stdout=io.StringIO())
    token = make_token(experiment, ["memory:read", "memory:write"])
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    written = agent.post(f"/api/v1/experiments/{experiment.slug}/memory/write",
                         json.dumps({"agent_id": "fact_collector", "target": "daily", "content": REPR_NOTE}),
                         content_type="application/json")  # fmt: skip
    assert written.status_code == 200, written.content
    call_command("awp_embed", "--experiment", experiment.slug, stdout=io.StringIO(), stderr=io.StringIO())
    return experiment, viewer, owner, token


def _raw_ledger(experiment: Experiment) -> str:
    return " ".join(json.dumps(e.payload) for run in Run.objects.filter(experiment=experiment) for e in run.events.all())


def test_secrets_in_every_shape_reach_no_viewer_and_no_read_token(tmp_path, fake_llm, live_server_factory):
    server = live_server_factory()
    experiment, viewer, owner, token = build_shaped_experiment(tmp_path, fake_llm)
    raw = _raw_ledger(experiment)
    # Not vacuous: the runtime really wrote these values, and they are stored raw in the ledger.
    stored = [name for name, value in SHAPED_SECRETS.items() if value in raw]
    assert len(stored) >= 8, stored
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))

    browser = Client()
    assert browser.login(username=viewer.username, password=PASSWORD)
    bodies = surfaces_for_a_viewer(browser, experiment, runs)
    assert any("FACT_SHAPES" in body for body in bodies.values()), "the crawl saw the worker's result"
    assert any("[redacted]" in body for body in bodies.values())
    bodies.update(token_answers(experiment, token))
    assert any('"tier": "semantic"' in b or "semantic" in k for k, b in bodies.items())

    cookie = login_cookie(server.url, viewer.username)
    frames = asyncio.run(websocket_frames(server.url, cookie, [r.pk for r in runs], lambda: None))
    assert len(frames) >= len(runs)
    bodies.update({f"frame {i}": frame for i, frame in enumerate(frames)})

    leaks = {where: sorted(set(LEAK.findall(body))) for where, body in bodies.items() if LEAK.search(body)}
    assert leaks == {}, "secrets reached a viewer:\n" + "\n".join(f"{w}: {f}" for w, f in sorted(leaks.items()))
    # No stored derivative a viewer can reach holds a secret: chunks (search corpus, vectors) were masked first.
    assert not [c.content for c in MemoryChunk.objects.filter(experiment=experiment) if LEAK.search(c.content)]
    assert KnownSecret.objects.filter(experiment=experiment).count() >= 8


def test_an_owner_still_reveals_on_the_state_tab_and_it_is_audited(tmp_path, fake_llm):
    experiment, viewer, owner, _ = build_shaped_experiment(tmp_path, fake_llm)
    dag_run = next(r for r in Run.objects.filter(experiment=experiment) if StateDelta.objects.filter(run=r, agent_id="researcher").exists())
    url = reverse("state:run-state", args=[experiment.slug, dag_run.pk])
    browser = Client()
    assert browser.login(username=owner.username, password=PASSWORD)
    hidden = browser.get(url).content.decode()
    assert SHAPED_SECRETS["prose_token"] not in hidden and "[redacted]" in hidden
    revealed = browser.get(url + "?reveal=1").content.decode()
    assert SHAPED_SECRETS["prose_token"] in revealed
    assert RevealAudit.objects.filter(user=owner, run=dag_run).count() == 1
    viewer_client = Client()
    assert viewer_client.login(username=viewer.username, password=PASSWORD)
    assert SHAPED_SECRETS["prose_token"] not in viewer_client.get(url + "?reveal=1").content.decode()
