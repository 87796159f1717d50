"""What the facts list, a fact's page and the facts API show: status, pin, version, exposure and impact."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Max

from experiments.models import Experiment
from memory import exposure, impact
from memory.curation.lifecycle import status_of
from memory.curation.models import FactTrial, Proposal


@dataclass
class FactRow:
    """One fact with its lifecycle status and measured impact."""

    proposal: Proposal
    status: str
    version: int
    exposed_runs: int
    comparisons: list[impact.Comparison] = field(default_factory=list)

    @property
    def impact(self) -> impact.Comparison | None:
        return impact.headline(self.comparisons)

    @property
    def is_flagged(self) -> bool:
        """The runs that carried it did worse on its headline metric: flagged for review."""
        return self.impact is not None and self.impact.is_worse

    def as_api(self) -> dict[str, Any]:
        p = self.proposal
        return {
            "id": p.pk, "text": p.promoted_text, "status": self.status, "pinned": p.is_pinned, "version": self.version,
            "exposed_runs": self.exposed_runs, "impact": self.impact.as_dict() if self.impact else None,
            "flagged": self.is_flagged, "valid_until": p.valid_until.isoformat() if p.valid_until else None,
            "superseded_by": p.superseded_by_id,
        }  # fmt: skip


def fact_rows(experiment: Experiment, *, only: list[int] | None = None) -> list[FactRow]:
    """Every fact that was ever promoted, best measured impact first (too few to tell in the middle, worst last)."""
    proposals = Proposal.objects.filter(experiment=experiment, kind=Proposal.Kind.FACT)
    if only is None:
        proposals = proposals.exclude(status__in=[Proposal.Status.PENDING, Proposal.Status.REJECTED])
    proposals = (
        proposals.annotate(latest_version=Max("facts__version"))
        .select_related("experiment")
        .order_by("-decided_at", "-pk")
    )
    if only is not None:
        proposals = proposals.filter(pk__in=only)  # one fact's answer: whatever its status (pending on a quorum)
    on_trial = set(
        FactTrial.objects.filter(proposal__experiment=experiment, status=FactTrial.Status.RUNNING).values_list("proposal_id", flat=True)
    )
    carried = exposure.exposed_runs(experiment)
    # A list needs each fact's headline only; one fact's page (and an API answer) gets every metric.
    impacts = exposure.fact_impacts(experiment, only=only, headline_only=only is None)
    rows = [
        FactRow(p, status_of(p, on_trial=p.pk in on_trial), p.latest_version or 1, len(carried.get(p.pk, ())), impacts.get(p.pk, []))
        for p in proposals
    ]
    return sorted(rows, key=lambda row: impact.sort_key(row.impact))


def fact_row(proposal: Proposal) -> FactRow:
    """One fact's row (the answer of every lifecycle call)."""
    return fact_rows(proposal.experiment, only=[proposal.pk])[0]
