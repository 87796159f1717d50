"""Exposure served through the memory API per run, trial arms that never leak, the facts lifecycle API,
expiry, and contradicting candidates (real Postgres, Django's client)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.curation import contradictions, lifecycle
from memory.curation.models import Exposure, FactEvent, FactTrial, Proposal
from memory.curation.services import curate_run, review_proposal
from memory.longterm import current_long_term
from tests.curation.builders import two_iteration_run
from tests.factories import make_run, make_token

FACT = "fact_collector: FACT_ALPHA: 42 is even."
CONTRA = "fact_collector: FACT_ALPHA: 42 is odd."

pytestmark = pytest.mark.django_db


def _proposed(experiment, text: str = FACT) -> Proposal:
    run, _ = two_iteration_run(experiment, text)
    curate_run(run=run)
    return Proposal.objects.get(experiment=experiment, kind="fact", text=text)


def _post(path: str, token: str, body: dict | None = None):  # type: ignore[no-untyped-def]
    return Client().post(path, json.dumps(body or {}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_trial_arms_through_the_api_alternate_per_run_and_never_leak(experiment, curator):
    proposal = _proposed(experiment)
    trial = lifecycle.approve_on_trial(proposal=proposal, reviewer=curator, runs=4)
    token = make_token(experiment, scopes=["memory:read"])
    base = f"/api/v1/experiments/{experiment.slug}/memory"
    runs = [make_run(experiment) for _ in range(5)]
    given = []
    for run in runs:
        prior = [_post(f"{base}/prior", token, {"run_id": run.run_id, "agent_id": "manager"}).json()["data"]["block"] for _ in range(2)]
        read = _post(f"{base}/read", token, {"run_id": run.run_id, "target": "long_term"}).json()["data"]["content"]
        recall = _post(f"{base}/recall", token, {"run_id": run.run_id, "agent_id": "fact_collector", "query": "42 even"})
        assert recall.status_code == 200, recall.content
        # Prior block, MEMORY.md and recall of one run agree on its arm, asked as often as it likes.
        assert (FACT in prior[0]) == (FACT in prior[1]) == (FACT in read)
        assert (FACT in recall.json()["data"]["block"]) <= (FACT in read)
        given.append(FACT in prior[0])
    assert given == [True, False, True, False, True]  # four arms, then the fact for everyone (trial measured)
    trial.refresh_from_db()
    assert trial.status == FactTrial.Status.MEASURED and trial.arms.count() == 4
    carried = Exposure.objects.filter(proposal=proposal)
    assert {e.run_id for e in carried} == {run.pk for run, g in zip(runs, given, strict=True) if g}
    assert {(e.channel, e.mode) for e in carried} >= {("prior", "served"), ("read", "served")}
    assert carried.filter(channel="prior").first().agent_id == "manager"
    # Without a run id nothing is recorded; an unknown run id is refused, naming the field.
    _post(f"{base}/prior", token, {})
    assert Exposure.objects.count() == carried.count()
    missing = _post(f"{base}/prior", token, {"run_id": "no-such-run"})
    assert missing.status_code == 404 and missing.json()["code"] == "run_not_found"


def test_lifecycle_api_pin_retire_restore_supersede_each_answers_the_fact(experiment, curator, viewer):
    proposal = _proposed(experiment)
    review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
    review = make_token(experiment, scopes=["review"], user=curator)
    read_only = make_token(experiment, scopes=["memory:read"], user=viewer)
    facts = f"/api/v1/facts/{proposal.pk}"
    assert _post(f"{facts}/pin", read_only).status_code == 403
    assert _post("/api/v1/facts/999999/pin", review).json()["code"] == "fact_not_found"
    pinned = _post(f"{facts}/pin", review).json()
    assert pinned["pinned"] is True and pinned["status"] == "active" and pinned["version"] == 1
    assert _post(f"{facts}/unpin", review).json()["pinned"] is False

    before = current_long_term(experiment).version
    retired = _post(f"{facts}/retire", review, {"reason": "stale"}).json()
    assert retired["status"] == "retired" and retired["version"] == 2
    assert current_long_term(experiment).version == before + 1 and FACT not in current_long_term(experiment).content
    again = _post(f"{facts}/retire", review)
    assert again.status_code == 409 and again.json()["code"] == "not_active"
    restored = _post(f"{facts}/restore", review, {"reason": "it was right"}).json()
    assert restored["status"] == "active" and FACT in current_long_term(experiment).content

    assert _post(f"{facts}/supersede", review, {"text": ""}).status_code == 422
    newer = _post(f"{facts}/supersede", review, {"text": "42 is even and composite."}).json()
    assert newer["status"] == "active" and newer["id"] != proposal.pk
    proposal.refresh_from_db()
    assert proposal.retired_as == "superseded" and proposal.superseded_by_id == newer["id"]
    memory = current_long_term(experiment).content
    assert "42 is even and composite." in memory and FACT not in memory
    listing = Client().get(f"/api/v1/experiments/{experiment.slug}/facts", HTTP_AUTHORIZATION=f"Bearer {read_only}").json()
    assert {(f["id"], f["status"]) for f in listing} == {(proposal.pk, "superseded"), (newer["id"], "active")}
    assert all(f["impact"] is None for f in listing)  # no runs carried anything: too few to tell
    actions = list(FactEvent.objects.filter(proposal=proposal).values_list("action", "actor_label"))
    assert [a for a, _ in actions] == ["promote", "pin", "unpin", "retire", "restore", "supersede"]
    assert {label for _, label in actions} == {curator.username}


def test_expired_facts_leave_memory_but_pinned_ones_stay(experiment, curator):
    first, second = _proposed(experiment), _proposed(experiment, "fact_collector: FACT_BETA: 7 is prime.")
    for proposal in (first, second):
        review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
        lifecycle.set_valid_until(proposal=proposal, actor=curator, valid_until=timezone.now() - timedelta(minutes=1))
    lifecycle.pin_fact(proposal=second, actor=curator)
    assert lifecycle.expire_due(experiment=experiment) == [first.pk]
    first.refresh_from_db()
    assert lifecycle.status_of(first) == "expired"
    assert FACT not in current_long_term(experiment).content and "7 is prime" in current_long_term(experiment).content


def test_contradicting_candidate_is_flagged_and_can_supersede(experiment, curator):
    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    candidate = _proposed(experiment, CONTRA)
    assert candidate.status == "pending"
    [flag] = candidate.details["contradicts"]
    assert flag["ref"] == f"proposal:{fact.pk}" and flag["why"] == "one negates the other"
    token = make_token(experiment, scopes=["review"], user=curator)
    answer = _post(f"/api/v1/proposals/{candidate.pk}/resolve", token, {"action": "supersede"}).json()
    assert answer["id"] == candidate.pk and answer["status"] == "active"
    fact.refresh_from_db()
    assert fact.retired_as == "superseded" and fact.superseded_by_id == candidate.pk
    assert _post(f"/api/v1/proposals/{candidate.pk}/resolve", token, {"action": "dunno"}).status_code == 422


def test_contradiction_rules_are_numbers_and_negation_on_the_same_subject() -> None:
    assert contradictions.conflict("42 is odd", "42 is even").why == "one negates the other"  # type: ignore[union-attr]
    assert contradictions.conflict("The API allows 100 requests per minute", "The API allows 60 requests per minute").why == "numbers differ"  # type: ignore[union-attr]
    assert contradictions.conflict("The cache is not shared", "The cache is shared") is not None
    assert contradictions.conflict("42 is even", "42 is even") is None
    assert contradictions.conflict("Invoices are printed on A4", "42 is even") is None  # another subject


def test_the_configured_llm_judges_near_misses_the_rules_cannot_tell(experiment, curator, settings):
    import io

    from django.core.management import call_command

    from tests.awp_runtime import FakeLLM

    fact = _proposed(experiment, "fact_collector: The build cache is cold on Mondays.")
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    candidate = _proposed(experiment, "fact_collector: The build cache is warm on Mondays.")
    unrelated = _proposed(experiment, "fact_collector: Invoices are printed on A4.")
    assert candidate.details.get("judge_pending") is True and "judge_pending" not in unrelated.details
    out = io.StringIO()
    call_command("awp_curate", "--experiment", experiment.slug, stdout=out)  # no endpoint: nothing judged
    assert json.loads(out.getvalue().splitlines()[-1])["contradictions_judged"] == 0
    llm = FakeLLM().start()
    try:
        settings.LLM_BASE_URL = llm.url
        out = io.StringIO()
        call_command("awp_curate", "--experiment", experiment.slug, stdout=out)
    finally:
        llm.stop()
    assert json.loads(out.getvalue().splitlines()[-1])["contradictions_judged"] == 1
    candidate.refresh_from_db()
    [flag] = candidate.details["contradicts"]
    assert flag["ref"] == f"proposal:{fact.pk}" and flag["why"].startswith("LLM judge: warm is the opposite")
    assert "judge_pending" not in candidate.details and "contradicts" not in unrelated.details
    [asked] = [r["user"] for r in llm.requests if r["role"] == "judge"]  # only the near miss went to the judge
    assert "cold on Mondays" in asked and "warm on Mondays" in asked


def test_answers_for_candidates_that_stay_pending_or_are_rejected(experiment, curator):
    from experiments.models import Experiment

    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    token = make_token(experiment, scopes=["review"], user=curator)
    rejected = _post(f"/api/v1/proposals/{_proposed(experiment, CONTRA).pk}/resolve", token, {"action": "reject"})
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    Experiment.objects.filter(pk=experiment.pk).update(review_quorum=2)
    waiting = _proposed(experiment, "fact_collector: FACT_GAMMA: 7 is prime.")
    answer = _post(f"/api/v1/proposals/{waiting.pk}/trial", token, {"runs": 4})
    assert answer.status_code == 200 and answer.json()["status"] == "pending"  # one vote of two: no trial yet
    assert not FactTrial.objects.filter(proposal=waiting).exists()
    assert _post("/api/v1/facts/99999999999999999999/pin", token).status_code in (404, 422)
    assert _post(f"/api/v1/proposals/{waiting.pk}/trial", token, {"runs": 1}).status_code == 422


def test_a_sub_managers_exposure_counts_for_its_root_run(experiment, curator):
    from memory.curation.prior import prior_run_block
    from memory.exposure import exposed_runs

    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    root = make_run(experiment)
    child = make_run(experiment, parent=root, depth=1)
    grandchild = make_run(experiment, parent=child, depth=2)
    prior_run_block(experiment, run_id=grandchild.run_id, agent_id="sub_worker")
    assert Exposure.objects.get(proposal=fact).run_id == grandchild.pk
    assert exposed_runs(experiment)[fact.pk] == {root.pk}


def test_a_sub_manager_gets_its_roots_trial_arm(experiment, curator):
    from memory.curation.prior import prior_run_block

    fact = _proposed(experiment)
    lifecycle.approve_on_trial(proposal=fact, reviewer=curator, runs=4)
    first, second = make_run(experiment), make_run(experiment)
    assert FACT in prior_run_block(experiment, run_id=first.run_id)
    assert FACT not in prior_run_block(experiment, run_id=second.run_id)
    child = make_run(experiment, parent=second, depth=1)
    assert FACT not in prior_run_block(experiment, run_id=child.run_id)  # the root's arm, not a new one
    assert fact.trials.get().arms.count() == 2
