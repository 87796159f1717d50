"""The Runs tab's review flow chart: proposals per day by first sight, approvals and rejections per day by decision,
one experiment's only (one statement in run_charts.review_flow)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from experiments.run_charts import review_flow
from memory.curation.models import Decision, Proposal
from tests.factories import make_experiment

pytestmark = pytest.mark.django_db


def _proposal(experiment, n: int, seen: datetime) -> Proposal:  # type: ignore[no-untyped-def]
    return Proposal.objects.create(experiment=experiment, kind="fact", key=f"k{n}", text=f"fact {n}", first_seen_at=seen)


def test_counts_per_day_for_proposed_approved_and_rejected_of_this_experiment_only():
    experiment, other = make_experiment(slug="flow"), make_experiment(slug="other-flow")
    day1 = datetime(2026, 3, 1, 23, 30, tzinfo=UTC)  # late in the day: still day 1 in UTC
    day2, day3 = day1 + timedelta(hours=1), day1 + timedelta(days=1, hours=2)
    first = [_proposal(experiment, n, day1) for n in range(3)]
    second = [_proposal(experiment, 10 + n, day2) for n in range(2)]
    _proposal(other, 99, day2)  # another experiment's: counted nowhere here
    for p in first[:2]:
        Decision.objects.create(proposal=p, outcome="approved", decided_by="a", created_at=day2)
    Decision.objects.create(proposal=first[2], outcome="rejected", decided_by="a", created_at=day3)
    Decision.objects.create(proposal=second[0], outcome="retracted", decided_by="a", created_at=day3)  # not drawn
    other_proposal = Proposal.objects.get(experiment=other)
    Decision.objects.create(proposal=other_proposal, outcome="approved", decided_by="a", created_at=day3)

    chart = review_flow(experiment)
    rows = {x: cells for x, cells in chart.rows}
    names = [line.name for line in chart.lines]
    assert names == ["proposed", "approved", "rejected"]
    assert rows == {"2026-03-01": ["3", "0", "0"], "2026-03-02": ["2", "2", "0"], "2026-03-03": ["0", "0", "1"]}


def test_an_experiment_without_review_activity_draws_an_empty_chart():
    assert review_flow(make_experiment(slug="quiet-flow")).is_empty
