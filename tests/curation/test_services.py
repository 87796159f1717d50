"""Curation and review services on real Postgres: proposals, idempotency, votes, quorum, promotion, retraction."""

from __future__ import annotations

import pytest

from memory.curation.models import Decision, Fact, Proposal, Vote
from memory.curation.prior import prior_run_block
from memory.curation.services import (
    ReviewRefused,
    curate_experiment,
    curate_run,
    edit_promoted,
    retract_proposal,
    review_proposal,
)
from memory.longterm import current_long_term
from tests.curation.builders import add_digest, complete, spawn_and_complete, two_iteration_run
from tests.factories import make_member, make_run

FACT = "fact_collector: FACT_ALPHA: 42 is even."
OTHER = "fact_collector: FACT_BETA: 42 is the answer."

pytestmark = pytest.mark.django_db


def test_fact_seen_in_two_digests_is_proposed_with_both_as_evidence(experiment):
    run, shas = two_iteration_run(experiment, FACT)
    summary = curate_run(run=run)
    proposal = Proposal.objects.get(experiment=experiment, kind="fact")
    assert summary.proposed == 1
    assert proposal.text == FACT and proposal.status == "pending" and proposal.origin == "dashboard_curator"
    assert sorted(e.digest_sha for e in proposal.evidence.all()) == sorted(shas)
    assert {e.iteration for e in proposal.evidence.all()} == {1, 2}
    assert {e.run_id for e in proposal.evidence.all()} == {run.pk}


def test_fact_in_one_digest_only_is_not_proposed(experiment):
    run = make_run(experiment)
    add_digest(run, 1, ["only once"], [0.9])
    assert curate_run(run=run).proposed == 0
    assert not Proposal.objects.exists()


def test_sub_manager_digests_resolve_by_sha_across_runs(experiment):
    root = make_run(experiment)
    child = make_run(experiment, parent=root, depth=1)
    child_sha = add_digest(child, 1, ["sub: the child found it"], [0.9])
    add_digest(root, 1, ["sub: the child found it"], [0.9], children=[child_sha])
    curate_run(run=root)
    proposal = Proposal.objects.get(kind="fact")
    assert {e.run_id for e in proposal.evidence.all()} == {root.pk, child.pk}


def test_curating_twice_proposes_nothing_new(experiment):
    run, _ = two_iteration_run(experiment, FACT)
    first = curate_run(run=run)
    second = curate_run(run=run)
    assert first.proposed == 1
    assert second.proposed == 0 and second.already_known == 1 and second.evidence_added == 0
    assert Proposal.objects.count() == 1


def test_rejected_fact_is_not_reproposed_but_gains_evidence(experiment, curator):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = Proposal.objects.get()
    review_proposal(proposal=proposal, reviewer=curator, verdict="reject", reason="not general")
    later, later_shas = two_iteration_run(experiment, FACT)
    summary = curate_run(run=later)
    proposal.refresh_from_db()
    assert summary.proposed == 0 and summary.already_known == 1
    assert proposal.status == "rejected"
    assert set(later_shas) <= {e.digest_sha for e in proposal.evidence.all()}


def test_awp_curate_style_pass_skips_curated_and_running_roots(experiment):
    done, _ = two_iteration_run(experiment, FACT)
    complete(done)
    running, _ = two_iteration_run(experiment, OTHER)
    first = curate_experiment(experiment=experiment, only_new=True)
    again = curate_experiment(experiment=experiment, only_new=True)
    assert (first.runs, first.proposed) == (1, 1)
    assert (again.runs, again.proposed) == (0, 0)
    assert running.status == "running"


def test_approval_promotes_into_memory_md_and_fact_v1(experiment, curator):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = review_proposal(proposal=Proposal.objects.get(), reviewer=curator, verdict="approve")
    assert proposal.status == "approved"
    document = current_long_term(experiment)
    assert document.source == "promotion"
    assert "## Facts" in document.content
    assert f"{FACT} <!-- proposal:{proposal.pk} v1 -->" in document.content
    assert list(Fact.objects.values_list("version", "state")) == [(1, "active")]
    assert Decision.objects.get().outcome == "approved"
    assert FACT in prior_run_block(experiment)


def test_edit_and_approve_promotes_the_edit_and_keeps_the_original(experiment, curator):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = review_proposal(proposal=Proposal.objects.get(), reviewer=curator, verdict="approve", text="42 is even.")
    assert proposal.text == FACT and proposal.edited_text == "42 is even."
    content = current_long_term(experiment).content
    assert "42 is even." in content and FACT not in content
    edit_promoted(proposal=proposal, actor=curator, text="42 is an even number.")
    assert list(proposal.facts.values_list("version", "text")) == [(1, "42 is even."), (2, "42 is an even number.")]
    assert "42 is an even number." in current_long_term(experiment).content


def test_quorum_two_needs_two_curators_and_refuses_a_viewer(experiment, curator, viewer):
    experiment.review_quorum = 2
    experiment.save()
    second = make_member(experiment, "curator")
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = Proposal.objects.get()
    assert review_proposal(proposal=proposal, reviewer=curator, verdict="approve").status == "pending"
    with pytest.raises(ReviewRefused) as refused:
        review_proposal(proposal=proposal, reviewer=viewer, verdict="approve")
    assert refused.value.status == 403
    with pytest.raises(ReviewRefused) as twice:
        review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
    assert twice.value.code == "already_voted"
    assert current_long_term(experiment) is None
    assert review_proposal(proposal=proposal, reviewer=second, verdict="approve").status == "approved"
    assert Vote.objects.filter(proposal=proposal).count() == 2
    assert set(Decision.objects.get().decided_by.split(", ")) == {curator.username, second.username}


def test_decided_proposal_refuses_more_votes(experiment, curator, owner):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = review_proposal(proposal=Proposal.objects.get(), reviewer=curator, verdict="reject")
    with pytest.raises(ReviewRefused) as refused:
        review_proposal(proposal=proposal, reviewer=owner, verdict="approve")
    assert refused.value.code == "already_decided"
    assert current_long_term(experiment) is None


def test_retraction_is_a_new_memory_version_and_a_new_fact_version(experiment, curator):
    run, _ = two_iteration_run(experiment, FACT, OTHER)
    curate_run(run=run)
    first, second = Proposal.objects.order_by("text")
    review_proposal(proposal=first, reviewer=curator, verdict="approve")
    review_proposal(proposal=second, reviewer=curator, verdict="approve")
    before = current_long_term(experiment)
    retract_proposal(proposal=first, actor=curator, reason="wrong")
    after = current_long_term(experiment)
    assert after.version == before.version + 1 and after.source == "retraction"
    assert first.text not in after.content and second.text in after.content
    assert list(first.facts.values_list("version", "state")) == [(1, "active"), (2, "retracted")]
    assert first.text not in prior_run_block(experiment) and second.text in prior_run_block(experiment)


def test_antipatterns_from_ledger_low_confidence_error_and_redundant(experiment):
    run = make_run(experiment)
    spawn_and_complete(run, 1, "w1", "Do the thing", {"summary": "meh", "confidence": 0.1})
    spawn_and_complete(run, 2, "w1", "Do the thing", {"error": "boom"})
    curate_run(run=run)
    antipatterns = list(Proposal.objects.filter(kind="antipattern"))
    reasons = sorted(r for p in antipatterns for r in [p.details["reason"]])
    # low confidence and error share the envelope's signature (one key); the redundant dispatch is the same too.
    assert len(antipatterns) == 1
    assert reasons == ["low_confidence"]
    notes = sorted(e.note.split()[0] for e in antipatterns[0].evidence.all())
    assert notes == ["error", "low_confidence", "redundant"]


def test_tool_recipe_new_hash_for_known_name_is_a_new_version(experiment):
    run = make_run(experiment)
    spawn_and_complete(run, 1, "w1", "make a tool", {"confidence": 0.9, "tools_created": [{"name": "sum_it", "description": "Adds"}]})
    spawn_and_complete(run, 2, "w2", "better tool", {"confidence": 0.9, "tools_created": [{"name": "sum_it", "description": "Adds fast"}]})
    curate_run(run=run)
    tools = list(Proposal.objects.filter(kind="tool").order_by("version"))
    assert [(t.details["name"], t.version) for t in tools] == [("sum_it", 1), ("sum_it", 2)]
    assert curate_run(run=run).proposed == 0


def test_prior_block_is_capped_and_only_promoted(experiment, curator):
    run, _ = two_iteration_run(experiment, "x" * 250, "y" * 250)
    curate_run(run=run)
    pending = Proposal.objects.order_by("text").last()
    assert prior_run_block(experiment) == ""
    review_proposal(proposal=Proposal.objects.order_by("text").first(), reviewer=curator, verdict="approve")
    block = prior_run_block(experiment, max_chars=200)
    assert block.startswith("## PRIOR RUN MEMORY") and len(block) <= 200
    assert pending.text not in prior_run_block(experiment)
