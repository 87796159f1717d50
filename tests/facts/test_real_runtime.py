"""Acceptance with the real AWP runtime and a fake LLM whose workers report a higher confidence when a given
fact is in their prompt: promotion on trial, write-back, inferred exposure, alternating arms (proved by the
prompts the fake receives), measured impact, a contradicting candidate, retirement, export and import."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client

from experiments.models import Experiment, Run
from memory.curation import lifecycle
from memory.curation.models import Evidence, Exposure, Fact, FactEvent, FactTrial, Proposal
from memory.exposure import fact_impacts, trial_impact
from memory.models import MemoryDocument
from tests.awp_runtime import FakeLLM, Script, run_delegation_loop
from tests.factories import make_experiment, make_member, make_token
from tests.facts.test_archive import portable_history

pytestmark = [pytest.mark.interop]

ALPHA = "FACT_ALPHA: 42 is even and equals 6 x 7."
MARKER = "42 is even and equals 6 x 7"
CONTRA = "FACT_ALPHA: 42 is odd and equals 6 x 8."
GAMMA = "FACT_GAMMA: 42 is pronic."
# The fact helps: workers given it report 0.85-0.95, the others 0.40-0.50 (deterministic, cycled).
BOOST = (MARKER, [0.9, 0.95, 0.85], [0.45, 0.5, 0.4])
TRIAL_RUNS = 6  # 3 runs per arm: the fewest for which impact.MIN_RUNS gives a measured interval per arm
CONTRA_RUN = 4  # a trial run given the fact (alternate arms: 0, 2, 4)
# 8 real runs in all: the first (proposes the fact), 6 trial runs, one after retiring it.


def _import(path, slug: str) -> dict:
    out = io.StringIO()
    call_command("awp_import", str(path), "--experiment", slug, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _one_run(workflow, llm: FakeLLM, slug: str, script: Script) -> tuple[Run, str]:
    """One real run in the folder, imported; returns its root run and the first prompt its root manager got."""
    llm.reset(script)
    before = len(llm.manager_prompts())
    known = set(Run.objects.filter(experiment__slug=slug).values_list("pk", flat=True))
    run_delegation_loop(workflow, llm)
    _import(workflow, slug)
    [run] = Run.objects.filter(experiment__slug=slug, parent__isnull=True).exclude(pk__in=known)
    return run, llm.manager_prompts()[before]


def test_a_helpful_fact_is_measured_tried_retired_and_exported(tmp_path, transactional_db):
    workflow = tmp_path / "wf"
    llm = FakeLLM().start()
    try:
        experiment = make_experiment(slug="facts-real")
        first, _ = _one_run(workflow, llm, experiment.slug, Script(iterations=2, facts=[ALPHA], confidences=[0.8]))
        alpha = Proposal.objects.get(experiment=experiment, kind="fact", text__contains="FACT_ALPHA")
        Experiment.objects.filter(pk=experiment.pk).update(workspace_path=str(workflow), writeback_enabled=True)
        experiment.refresh_from_db()
        curator = make_member(experiment, "curator")

        # Approved on trial: the server alternates the fact across the next runs through the written-back files.
        trial = lifecycle.approve_on_trial(proposal=alpha, reviewer=curator, runs=TRIAL_RUNS, reason="try it")
        assert trial is not None and ALPHA in (workflow / "workspace" / "MEMORY.md").read_text()
        arms = []
        for index in range(TRIAL_RUNS):
            script = Script(iterations=1, facts=[GAMMA], boost=BOOST)
            if index == CONTRA_RUN:  # its workers (given the fact) also report a fact that contradicts it
                script = Script(iterations=2, facts=[CONTRA], boost=BOOST)
            run, prompt = _one_run(workflow, llm, experiment.slug, script)
            arms.append((run, MARKER in prompt))
        # The prompts the fake received prove the arms: given, withheld, given, ... and nothing leaked across.
        assert [given for _, given in arms] == [True, False] * (TRIAL_RUNS // 2)
        trial.refresh_from_db()
        assert trial.status == FactTrial.Status.MEASURED
        assert [(a.run_id, a.carried) for a in trial.arms.order_by("index")] == [(run.pk, given) for run, given in arms]
        # The runtime's own step evaluation scores the workers' results: the headline; their confidence agrees.
        effects = {c.metric: c for c in trial_impact(trial)}
        assert next(iter(effects)) == "eval_score"
        for metric in ("eval_score", "confidence"):
            assert effects[metric].low > 0 and (effects[metric].n_with, effects[metric].n_without) == (3, 3)

        lifecycle.decide_trial(trial=trial, actor=curator, keep=True, reason="it helps")

        # The runs after the promotion that were given the fact are listed as exposed (inferred from write-back).
        exposed = set(Exposure.objects.filter(proposal=alpha).values_list("run_id", flat=True))
        assert exposed == {run.pk for run, given in arms if given}
        assert set(Exposure.objects.filter(proposal=alpha).values_list("mode", flat=True)) == {"inferred"}
        assert first.pk not in exposed
        comparisons = {c.metric: c for c in fact_impacts(experiment)[alpha.pk]}
        for metric in ("eval_score", "confidence"):
            assert comparisons[metric].diff > 0 and comparisons[metric].low > 0
            assert (comparisons[metric].n_with, comparisons[metric].n_without) == (3, 4)  # run 0 never had it

        # The contradicting candidate is flagged beside the fact, never resolved silently.
        contra = Proposal.objects.get(experiment=experiment, kind="fact", text__contains="42 is odd")
        assert contra.status == "pending"
        assert [c["ref"] for c in contra.details["contradicts"]] == [f"proposal:{alpha.pk}"]

        # The facts API: sorted by impact, with the counts; retiring through it with a review token.
        viewer_token = make_token(experiment, scopes=["memory:read"])
        listing = Client().get(f"/api/v1/experiments/{experiment.slug}/facts", HTTP_AUTHORIZATION=f"Bearer {viewer_token}").json()
        assert listing[0]["id"] == alpha.pk and listing[0]["status"] == "active" and listing[0]["impact"]["low"] > 0
        review_token = make_token(experiment, scopes=["review"], user=curator)
        versions_before = MemoryDocument.objects.filter(experiment=experiment).count()
        retired = Client().post(f"/api/v1/facts/{alpha.pk}/retire", json.dumps({"reason": "superstition"}),
                                content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {review_token}")  # fmt: skip
        assert retired.status_code == 200, retired.content
        assert retired.json()["status"] == "retired"
        newest = MemoryDocument.objects.filter(experiment=experiment).order_by("-version").first()
        assert newest.version == versions_before + 1 and MARKER not in newest.content
        assert MARKER in MemoryDocument.objects.get(experiment=experiment, version=newest.version - 1).content
        _after, prompt = _one_run(workflow, llm, experiment.slug, Script(iterations=1, facts=[GAMMA], boost=BOOST))
        assert MARKER not in prompt
        actions = list(FactEvent.objects.filter(proposal=alpha).values_list("action", flat=True))
        assert actions == ["promote", "trial_start", "trial_decide", "retire"]
    finally:
        llm.stop()

    # Export, then import into a fresh experiment: facts, versions, evidence links and lifecycle come back.
    archive_path = tmp_path / "memory.jsonl"
    exported = _memory_command("export", "--experiment", experiment.slug, "--out", str(archive_path))
    assert exported["proposal"] == Proposal.objects.filter(experiment=experiment).count() and exported["trial"] == 1
    fresh = make_experiment(slug="facts-restored")
    restored = _memory_command("import", str(archive_path), "--experiment", fresh.slug, "--restore")
    assert restored["proposals"] == exported["proposal"] and restored["events"] == exported["event"]
    assert portable_history(fresh.slug) == portable_history(experiment.slug)  # MEMORY.md markers name the restored items
    # Links between items travel by name, not by this database's ids.
    restored_alpha = Proposal.objects.get(experiment=fresh, key=alpha.key)
    assert Proposal.objects.get(experiment=fresh, key=contra.key).details["contradicts"][0]["ref"] == f"proposal:{restored_alpha.pk}"
    again = _memory_command("import", str(archive_path), "--experiment", fresh.slug, "--restore")
    assert (again["proposals"], again["events"], again["fact_versions"], again["memory_versions"]) == (0, 0, 0, 0)
    assert portable_history(fresh.slug) == portable_history(experiment.slug)  # MEMORY.md markers name the restored items


def _memory_command(*args: str) -> dict:
    out = io.StringIO()
    call_command("awp_memory", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def _history(experiment: Experiment) -> dict:
    proposals = Proposal.objects.filter(experiment=experiment).order_by("kind", "key")
    return {
        "proposals": [(p.kind, p.key, p.status, p.retired_as, p.is_pinned, p.promoted_text) for p in proposals],
        "versions": [(f.proposal.key, f.version, f.state, f.text, f.memory_version)
                     for f in Fact.objects.filter(proposal__experiment=experiment).select_related("proposal").order_by("proposal__key", "version")],
        "evidence": sorted((e.proposal.key, e.ref, e.digest_sha, e.run_ref, e.iteration)
                           for e in Evidence.objects.filter(proposal__experiment=experiment).select_related("proposal")),
        "events": [(ev.proposal.key, ev.action, ev.actor_label, ev.reason, ev.memory_version)
                   for ev in FactEvent.objects.filter(proposal__experiment=experiment).select_related("proposal").order_by("created_at", "pk")],
        "memory": [(d.version, d.content, d.source) for d in MemoryDocument.objects.filter(experiment=experiment).order_by("version")],
    }  # fmt: skip
