"""End to end with the real AWP runtime: a fact two iterations confirm is proposed, approved in the browser,
written back, and primes the next real run's first manager prompt; a rejected fact never does."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import call_command

from experiments.models import Digest, Event, Experiment, Run
from memory.curation.models import Proposal
from tests.awp_runtime import FakeLLM, Script, run_delegation_loop, run_with_submanagers
from tests.conftest import login
from tests.factories import make_experiment, make_member

pytestmark = [pytest.mark.interop, pytest.mark.browser]

ALPHA = "FACT_ALPHA: 42 is even and equals 6 x 7."
BETA = "FACT_BETA: 42 is odd."


def awp_import(path, slug: str) -> dict:
    out = io.StringIO()
    call_command("awp_import", str(path), "--experiment", slug, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _prior_block(prompt: str) -> str:
    match = re.search(r"## PRIOR RUN MEMORY\n(.*?)(?:\n## |\Z)", prompt, re.S)
    return match.group(1) if match else ""


def _worker_errors(experiment: Experiment) -> list[str]:
    """What the runtime wrote for each worker that failed (its worker.complete carries an `error`)."""
    rows = Event.objects.filter(run__experiment=experiment, kind="worker.complete").values_list("agent_id", "payload")
    return [f"{agent}: {payload['error']}" for agent, payload in rows if isinstance(payload, dict) and "error" in payload]


def test_real_run_fact_review_writeback_primes_next_run(tmp_path, asgi_server, page):
    workflow = tmp_path / "wf"
    # Iterations 1 and 3 report ALPHA, iteration 2 BETA: ALPHA lands in 3 digests, BETA in 2.
    llm = FakeLLM(Script(iterations=3, facts=[ALPHA, BETA, ALPHA])).start()
    try:
        run_delegation_loop(workflow, llm)
        experiment = make_experiment(slug="interop-review")
        awp_import(workflow, experiment.slug)
        experiment.refresh_from_db()
        root = Run.objects.get(experiment=experiment, parent__isnull=True)
        assert root.status != "running"
        # The premise: every worker of the real run delivered (a worker the runtime failed delivers no fact; once in a
        # full suite one did, and this says why if it happens again).
        assert _worker_errors(experiment) == [], _worker_errors(experiment)

        # The run.complete projector curated the tree after the import committed.
        alpha = Proposal.objects.get(experiment=experiment, kind="fact", text__contains="FACT_ALPHA")
        beta = Proposal.objects.get(experiment=experiment, kind="fact", text__contains="FACT_BETA")
        digests_with = {
            name: {d.sha for d in Digest.objects.filter(experiment=experiment) if any(name in f for f in d.key_facts)}
            for name in ("FACT_ALPHA", "FACT_BETA")
        }
        assert {e.digest_sha for e in alpha.evidence.all()} == digests_with["FACT_ALPHA"] and len(digests_with["FACT_ALPHA"]) == 3
        assert {e.digest_sha for e in beta.evidence.all()} == digests_with["FACT_BETA"] and len(digests_with["FACT_BETA"]) == 2
        assert awp_import(workflow, experiment.slug)["new_events"] == 0
        assert Proposal.objects.filter(experiment=experiment).count() == 2  # re-import, re-curation: nothing new

        Experiment.objects.filter(pk=experiment.pk).update(workspace_path=str(workflow), writeback_enabled=True)
        curator = make_member(experiment, "curator")

        # Approve ALPHA and reject BETA with the keyboard in a real browser.
        login(page, asgi_server, curator.username)
        page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/review/")
        page.wait_for_selector(f"#proposal-{alpha.pk}")
        rows = page.locator("#review-queue .proposal-row")
        order = [int(rows.nth(i).get_attribute("data-id")) for i in range(rows.count())]
        page.keyboard.press("j" if order.index(alpha.pk) else "k")
        if order.index(alpha.pk) == 0:
            page.keyboard.press("k")
        page.keyboard.press("a")
        page.wait_for_selector(f"#proposal-{alpha.pk}", state="detached")
        page.keyboard.press("r")
        page.keyboard.type("42 is not odd")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"#proposal-{beta.pk}", state="detached")
        alpha.refresh_from_db()
        beta.refresh_from_db()
        assert (alpha.status, beta.status) == ("approved", "rejected")

        # Write-back ran in the server process after the commit.
        facts_files = sorted((workflow / "memory" / "facts").glob("*.md"))
        facts = "".join(p.read_text() for p in facts_files)
        assert f"- [{root.run_id}] {alpha.text}" in facts and "FACT_BETA" not in facts
        memory_md = (workflow / "workspace" / "MEMORY.md").read_text()
        assert alpha.text in memory_md and "FACT_BETA" not in memory_md

        # The next real run in the same workflow folder is primed with the approved fact only.
        llm.reset(Script(iterations=1, facts=["FACT_GAMMA: 42 is pronic."]))
        before = len(llm.manager_prompts())
        run_delegation_loop(workflow, llm)
        first_prompt = llm.manager_prompts()[before]
        block = _prior_block(first_prompt)
        assert "## PRIOR RUN MEMORY" in first_prompt
        assert "FACT_ALPHA" in block
        assert "FACT_BETA" not in first_prompt
    finally:
        llm.stop()


def test_sub_manager_digests_count_towards_facts(tmp_path, transactional_db):
    """Sub-manager digests live in other folders; the dashboard resolves them by SHA across runs."""
    llm = FakeLLM(Script(iterations=2)).start()
    try:
        run_with_submanagers(tmp_path / "subs", llm, count=2)
    finally:
        llm.stop()
    experiment = make_experiment(slug="interop-subs")
    awp_import(tmp_path / "subs", experiment.slug)
    # The premises, each saying what the real run wrote when it fails (it failed once in a fresh-clone suite in
    # round 10 with no FACT_SUB proposal at all; these tell which step was missing if it happens again).
    runs_written = sorted((r.run_id, r.parent_id is not None, r.status) for r in Run.objects.filter(experiment=experiment))
    assert sum(1 for _, is_sub, _ in runs_written if is_sub) >= 2, runs_written
    assert _worker_errors(experiment) == [], _worker_errors(experiment)
    sub_digests = [d.key_facts for d in Digest.objects.filter(experiment=experiment) if any("FACT_SUB" in f for f in d.key_facts)]
    assert sub_digests, (runs_written, [d.key_facts for d in Digest.objects.filter(experiment=experiment)])
    sub_fact = Proposal.objects.filter(experiment=experiment, kind="fact", text__contains="FACT_SUB").first()
    assert sub_fact is not None, (runs_written, sub_digests, list(Proposal.objects.filter(experiment=experiment).values_list("text", flat=True)))
    runs = {e.run_id for e in sub_fact.evidence.all()}
    assert len(runs) >= 2  # confirmed by digests of different (sub-manager) runs
    assert all(Run.objects.get(pk=pk).parent_id is not None for pk in runs)


def test_runtime_antipattern_file_and_ledger_agree_on_the_key(tmp_path, transactional_db):
    """The runtime's antipattern file and the dashboard's ledger rule name the same failure identically."""
    llm = FakeLLM(Script(iterations=1, confidences=[0.2])).start()
    try:
        run_delegation_loop(tmp_path / "low", llm)
    finally:
        llm.stop()
    [file] = list((tmp_path / "low" / "memory" / "antipatterns").glob("*.md"))
    experiment = make_experiment(slug="interop-antipattern")
    awp_import(tmp_path / "low", experiment.slug)
    [proposal] = Proposal.objects.filter(experiment=experiment, kind="antipattern")
    refs = [e.ref for e in proposal.evidence.all()]
    assert proposal.key == file.stem and proposal.details["reason"] == "low_confidence"
    assert any(r.startswith("file:") for r in refs) and any(r.startswith("event:") for r in refs)
