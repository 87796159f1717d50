"""The pending-proposals count shown as a badge (experiment tabs, experiments list)."""

from __future__ import annotations

from experiments.models import Experiment


def pending_count(experiment: Experiment) -> int:
    """How many proposals of the experiment wait for review."""
    return 0
