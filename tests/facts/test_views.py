"""The Facts pages under the Memory tab, the run's carried memory, contradictions side by side in Review,
and the lifecycle buttons (curators only)."""

from __future__ import annotations

import pytest
from django.test import Client

from memory import exposure
from memory.curation import lifecycle
from memory.curation.models import FactEvent, Proposal
from memory.curation.prior import prior_run_block
from memory.curation.services import review_proposal
from tests.factories import make_run
from tests.facts.test_services_api import CONTRA, FACT, _proposed

pytestmark = pytest.mark.django_db


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def test_fact_pages_show_exposure_history_and_contradictions(experiment, curator, viewer):
    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    run = make_run(experiment)
    prior_run_block(experiment, run_id=run.run_id, agent_id="manager")
    candidate = _proposed(experiment, CONTRA)
    page = _client(viewer).get(f"/experiments/{experiment.slug}/memory/facts/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "Does a fact help?" in body and f'id="fact-{fact.pk}"' in body and "too few runs to tell" in body
    detail = _client(viewer).get(f"/experiments/{experiment.slug}/memory/facts/{fact.pk}/").content.decode()
    assert run.run_id in detail and "prior, <em>served</em>" in detail and "manager" in detail
    assert candidate.short_id in detail and "Retire" not in detail  # viewers see, curators act
    carried = _client(viewer).get(f"/experiments/{experiment.slug}/memory/runs/{run.pk}/facts/").content.decode()
    assert FACT in carried and "served" in carried
    review = _client(curator).get(f"/experiments/{experiment.slug}/review/?selected={candidate.pk}").content.decode()
    assert "side-by-side" in review and FACT in review and "Supersede P" in review and "Keep both" in review
    assert [x.run_id for x in exposure.run_exposures(run)] == [run.pk]


def test_lifecycle_buttons_are_for_curators_and_every_step_is_audited(experiment, curator, viewer):
    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    base = f"/experiments/{experiment.slug}/memory/facts/{fact.pk}"
    assert _client(viewer).post(f"{base}/pin").status_code == 403
    assert _client(curator).post(f"{base}/pin").status_code == 302
    assert _client(curator).post(f"{base}/retire", {"reason": "stale"}).status_code == 302
    assert _client(curator).post(f"{base}/retire", {"reason": "again"}).status_code == 409
    assert _client(curator).post(f"{base}/restore").status_code == 302
    assert _client(curator).post(f"{base}/bogus").status_code == 404
    superseded = _client(curator).post(f"{base}/supersede", {"text": "42 is even and composite."})
    newer = Proposal.objects.get(experiment=experiment, text="42 is even and composite.")
    assert superseded["Location"].endswith(f"/memory/facts/{newer.pk}/")
    actions = list(FactEvent.objects.filter(proposal=fact).values_list("action", flat=True))
    assert actions == ["promote", "pin", "retire", "restore", "supersede"]
    detail = _client(curator).get(f"{base}/").content.decode()
    assert "superseded" in detail and "Restore" in detail


def test_approve_on_trial_from_review_then_decide(experiment, curator):
    candidate = _proposed(experiment)
    response = _client(curator).post(f"/experiments/{experiment.slug}/review/{candidate.pk}/trial", {"runs": "4", "assignment": "random", "seed": "9"})
    assert response.status_code == 302
    candidate.refresh_from_db()
    trial = candidate.trials.get()
    assert candidate.status == "approved" and lifecycle.status_of(candidate) == "trial" and (trial.seed, trial.assignment) == (9, "random")
    assert _client(curator).post(f"/experiments/{experiment.slug}/review/{candidate.pk}/trial", {"runs": "x"}).status_code == 422
    page = _client(curator).get(f"/experiments/{experiment.slug}/memory/facts/{candidate.pk}/").content.decode()
    assert "Trial (running)" in page and "Keep it for every run" in page
    for _ in range(4):
        prior_run_block(experiment, run_id=make_run(experiment).run_id)
    review = _client(curator).get(f"/experiments/{experiment.slug}/review/").content.decode()
    assert "Trials waiting for your decision" in review and f"P{candidate.pk}</a> (4 runs measured)" in review
    assert _client(curator).post(f"/experiments/{experiment.slug}/memory/facts/{candidate.pk}/keep").status_code == 302
    trial.refresh_from_db()
    assert trial.status == "kept" and lifecycle.status_of(candidate) == "active"


def test_a_fact_whose_runs_did_worse_is_flagged_and_sorted_last(experiment, curator, viewer):
    from experiments.ingest import EventIn, append_events

    helpful, harmful = _proposed(experiment), _proposed(experiment, "fact_collector: FACT_BETA: always retry forever.")
    for proposal in (harmful, helpful):
        review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
    for n, (gets, confidence) in enumerate([("helpful", 0.9), ("helpful", 0.95), ("helpful", 0.85),
                                            ("harmful", 0.2), ("harmful", 0.25), ("harmful", 0.3)]):  # fmt: skip
        run = make_run(experiment)
        other = harmful if gets == "helpful" else helpful
        # Give each run one of the two facts: the other is retired for the moment it asks, then restored.
        lifecycle.retire_fact(proposal=other, actor=curator, reason=f"setup {n}")
        prior_run_block(experiment, run_id=run.run_id)
        lifecycle.restore_fact(proposal=other, actor=curator, reason=f"setup {n}")
        append_events(run, [EventIn(kind="worker.complete", dedupe_key="w", agent_id="w", iteration=1, payload={"confidence": confidence}),
                            EventIn(kind="run.complete", dedupe_key="file:run_completion.json", payload={"status": "complete"})])  # fmt: skip
    body = _client(viewer).get(f"/experiments/{experiment.slug}/memory/facts/").content.decode()
    assert body.index(f'id="fact-{helpful.pk}"') < body.index(f'id="fact-{harmful.pk}"')
    assert f'id="fact-{harmful.pk}" class="fact-row status-active flagged"' in body
    curated = _client(viewer).get(f"/experiments/{experiment.slug}/memory/curated/").content.decode()
    assert curated.index(f'id="curated-{helpful.pk}"') < curated.index(f'id="curated-{harmful.pk}"') and "flagged" in curated


def test_a_secret_in_a_fact_is_masked_on_every_facts_surface(experiment, curator, viewer):
    from tests.factories import make_token

    secret = "hunter2-facts-page"
    fact = _proposed(experiment, f"fact_collector: deploy with password={secret} works.")
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    run = make_run(experiment)
    prior_run_block(experiment, run_id=run.run_id, agent_id="manager")
    token = make_token(experiment, scopes=["memory:read"])
    bodies = [
        _client(viewer).get(f"/experiments/{experiment.slug}/memory/facts/").content.decode(),
        _client(viewer).get(f"/experiments/{experiment.slug}/memory/facts/{fact.pk}/").content.decode(),
        _client(viewer).get(f"/experiments/{experiment.slug}/memory/runs/{run.pk}/facts/").content.decode(),
        Client().get(f"/api/v1/experiments/{experiment.slug}/facts", HTTP_AUTHORIZATION=f"Bearer {token}").content.decode(),
    ]
    assert all("deploy with password" in body for body in bodies)
    assert not any(secret in body for body in bodies)


def test_the_facts_subtab_answers_its_partial_to_an_htmx_tab_switch(experiment, viewer):
    client = _client(viewer)
    full = client.get(f"/experiments/{experiment.slug}/memory/facts/").content.decode()
    partial = client.get(f"/experiments/{experiment.slug}/memory/facts/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tab").content.decode()
    assert "<html" in full and "<html" not in partial
    assert 'id="facts-panel"' in partial and 'class="active">Facts</a>' in partial
