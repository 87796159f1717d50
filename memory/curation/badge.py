"""The pending-proposals count shown as a badge (experiment tabs, experiments list), live."""

from __future__ import annotations

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils.html import format_html

from awp_site.live import Viewer
from experiments.models import Experiment


def pending_count(experiment: Experiment) -> int:
    """How many proposals of the experiment wait for review."""
    return experiment.proposals.filter(status="pending").count()


def with_pending_counts(experiments: QuerySet[Experiment]) -> QuerySet[Experiment]:
    """The queryset annotated with `pending_count` by one correlated subquery (no join fan-out with other counts)."""
    from memory.curation.models import Proposal

    pending = (
        Proposal.objects.filter(experiment=OuterRef("pk"), status="pending")
        .order_by()
        .values("experiment")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return experiments.annotate(pending_count=Coalesce(Subquery(pending), 0))


def badge_fragments(experiment: Experiment, viewer: Viewer, changed_run_ids: list[int]) -> list[str]:
    """Out-of-band swaps of the tab badge and the experiments-list badge."""
    count = pending_count(experiment)
    text = str(count) if count else ""
    return [
        format_html('<span class="pending-badge" id="pending-badge" hx-swap-oob="true">{}</span>', text),
        format_html(
            '<span class="pending-badge" id="pending-badge-{}" hx-swap-oob="true">{}</span>', experiment.pk, text
        ),
    ]
