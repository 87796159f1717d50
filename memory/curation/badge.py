"""The pending-proposals count shown as a badge (experiment tabs, experiments list), live."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet
from django.utils.html import format_html

from awp_site.live import Viewer
from experiments.models import Experiment


def pending_count(experiment: Experiment) -> int:
    """How many proposals of the experiment wait for review."""
    cached = getattr(experiment, "_pending_count", None)
    if cached is not None:
        return int(cached)
    return experiment.proposals.filter(status="pending").count()


def with_pending_counts(experiments: QuerySet[Experiment]) -> QuerySet[Experiment]:
    """The queryset annotated with `pending_count` in the same query (for the experiments list)."""
    return experiments.annotate(pending_count=Count("proposals", filter=Q(proposals__status="pending"), distinct=True))


def _get(self: Experiment) -> int:
    return pending_count(self)


def _set(self: Experiment, value: Any) -> None:
    # An annotation of the same name (with_pending_counts) lands here and spares the per-row query.
    self._pending_count = value  # type: ignore[attr-defined]


def install_property() -> None:
    """Give Experiment a `pending_count` attribute so list rows (`e.pending_count`) show the badge."""
    if not isinstance(getattr(Experiment, "pending_count", None), property):
        Experiment.pending_count = property(_get, _set)  # type: ignore[attr-defined]


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
