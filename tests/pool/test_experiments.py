"""From an experiment to the pool and back: propose a curated fact, subscribe, and receive pool facts in the
prior-run block and memory search (tier `shared`); unsubscribed experiments receive nothing."""

from __future__ import annotations

import pytest
from django.test import Client

from memory.curation.models import Proposal
from memory.curation.prior import prior_run_block
from memory.curation.services import curate_run, review_proposal
from pool import services
from pool.models import PoolProposal, PoolSubscription
from tests.curation.builders import two_iteration_run
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.pool.helpers import envelope

pytestmark = pytest.mark.django_db(transaction=True)


def accepted_fact(proposal_id: str, statement: str, *, tags: list[str] | None = None, amends: str = "") -> dict:
    """Three present participants, a proposal and two yes votes, through the same door as the API."""
    for claw in ("c1", "c2", "c3"):
        services.apply_envelope(envelope("presence", claw, {}), origin="api")
    payload = {"proposal_id": proposal_id, "statement": statement, "tags": tags or []}
    if amends:
        payload["amends_fact_id"] = amends
    assert services.apply_envelope(envelope("proposal", "c1", payload), origin="api").status == 200
    services.apply_envelope(envelope("vote", "c1", {"proposal_id": proposal_id, "vote": "yes"}), origin="api")
    decided = services.apply_envelope(envelope("vote", "c2", {"proposal_id": proposal_id, "vote": "yes"}), origin="api")
    assert decided.body["decision"]["outcome"] == "accepted", decided.body
    return decided.body["decision"]


def search(experiment, token: str, query: str, **extra) -> list[dict]:
    client = Client()
    response = client.post(
        f"/api/v1/experiments/{experiment.slug}/memory/search",
        data={"query": query, **extra}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    return response.json()["data"]["results"]


def test_subscribed_experiment_receives_pool_facts_unsubscribed_does_not():
    subscribed, by_tag, unsubscribed, other_tag = (make_experiment() for _ in range(4))
    owner = make_member(subscribed, "owner")
    services.set_subscription(experiment=subscribed, mode="all", tags=[], user=owner)
    services.set_subscription(experiment=by_tag, mode="tags", tags=["Incident"], user=owner)
    services.set_subscription(experiment=other_tag, mode="tags", tags=["billing"], user=owner)

    accepted_fact("p-e142", "Error E142 with a DB timeout maps to mitigation M7; deploy with password=hunter2-pool", tags=["incident"])
    block = prior_run_block(subscribed)
    assert block.startswith("## PRIOR RUN MEMORY") and "### Shared Facts (1)" in block
    assert "- [pool:fact:p-e142 v1] Error E142 with a DB timeout maps to mitigation M7" in block
    assert "hunter2-pool" not in block  # redacted for the experiment on the way out
    assert "Error E142" in prior_run_block(by_tag)
    assert prior_run_block(unsubscribed) == "" and prior_run_block(other_tag) == ""

    results = search(subscribed, make_token(subscribed, ["memory:read"]), "mitigation")
    assert [(r["tier"], r["source"]) for r in results] == [("shared", "pool:fact:p-e142 v1")]
    assert "hunter2-pool" not in results[0]["content"]
    assert search(unsubscribed, make_token(unsubscribed, ["memory:read"]), "mitigation") == []
    explicit = search(subscribed, make_token(subscribed, ["memory:read"]), "E142", tiers=["shared"])
    assert [r["tier"] for r in explicit] == ["shared"]

    # An amendment: the block and search carry the newest version only.
    accepted_fact("p-e142-v2", "Error E142 maps to mitigation M7, then M8", tags=["incident"], amends="fact:p-e142")
    block = prior_run_block(subscribed)
    assert "[pool:fact:p-e142 v2] Error E142 maps to mitigation M7, then M8" in block and "v1]" not in block
    assert [r["source"] for r in search(subscribed, make_token(subscribed, ["memory:read"]), "mitigation")] == ["pool:fact:p-e142 v2"]

    # The budget holds with the shared part: never over 3,000 characters.
    for n in range(40):
        accepted_fact(f"p-bulk-{n}", f"Bulk shared fact number {n} " + "x" * 80)
    assert len(prior_run_block(subscribed)) <= 3000

    services.set_subscription(experiment=subscribed, mode="off", tags=[], user=owner)
    assert prior_run_block(subscribed) == "" and not PoolSubscription.objects.filter(experiment=subscribed).exists()


def test_curator_proposes_a_curated_fact_and_subscribes_from_the_memory_tab():
    experiment = make_experiment(slug="exp-pool")
    curator, viewer = make_member(experiment, "curator"), make_member(experiment, "viewer")
    run, shas = two_iteration_run(experiment, fact="fact_collector: FACT_POOL: 42 is even")
    curate_run(run=run)
    curated = Proposal.objects.get(experiment=experiment, kind="fact")
    review_proposal(proposal=curated, reviewer=curator, verdict="approve")

    client = Client()
    client.login(username=curator.username, password=PASSWORD)
    panel = client.get(f"/experiments/{experiment.slug}/memory/curated/").content.decode()
    assert "Propose to the pool" in panel and "Shared pool facts" in panel
    response = client.post(f"/experiments/{experiment.slug}/pool/propose/{curated.pk}")
    assert response.status_code == 302
    pooled = PoolProposal.objects.get()
    assert "FACT_POOL" in pooled.statement
    assert pooled.proposer == f"user:{curator.username}" and pooled.source["experiment"] == "exp-pool"
    assert {e["digest_sha"] for e in pooled.source["evidence"]} == set(shas)
    assert pooled.confidence == 0.925  # the mean of each confirming digest's last confidence (0.9 and 0.95)
    assert client.post(f"/experiments/{experiment.slug}/pool/propose/{curated.pk}").status_code == 302  # again: refused, kept once
    assert PoolProposal.objects.count() == 1

    assert client.post(f"/experiments/{experiment.slug}/pool/subscription", {"mode": "tags", "tags": "incident, checkout"}).status_code == 302
    assert PoolSubscription.objects.get(experiment=experiment).tags == ["checkout", "incident"]

    # Viewers see the pool but cannot propose, subscribe or vote; non-members get 404 on the experiment.
    as_viewer = Client()
    as_viewer.login(username=viewer.username, password=PASSWORD)
    assert as_viewer.post(f"/experiments/{experiment.slug}/pool/propose/{curated.pk}").status_code == 403
    assert as_viewer.post(f"/experiments/{experiment.slug}/pool/subscription", {"mode": "off"}).status_code == 403
    assert as_viewer.post(f"/pool/proposals/{pooled.proposal_id}/vote", {"vote": "yes"}).status_code == 403
    page = as_viewer.get("/pool/").content.decode()
    assert "FACT_POOL" in page and "Vote yes" not in page
    outsider = make_member(make_experiment(), "viewer")
    stranger = Client()
    stranger.login(username=outsider.username, password=PASSWORD)
    assert stranger.post(f"/experiments/{experiment.slug}/pool/propose/{curated.pk}").status_code == 404

    # A curator votes from the page (htmx fragment), once.
    fragment = client.post(f"/pool/proposals/{pooled.proposal_id}/vote", {"vote": "yes", "reason": "confirmed twice"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and 'id="pool-proposals"' in fragment.content.decode()
    again = client.post(f"/pool/proposals/{pooled.proposal_id}/vote", {"vote": "no"}, HTTP_HX_REQUEST="true")
    assert again.status_code == 200 and 'data-error-code="already_voted"' in again.content.decode()
    assert list(pooled.votes.values_list("claw_id", "vote", "reason")) == [(f"user:{curator.username}", "yes", "confirmed twice")]
