"""The state projector, registered with the ingest core in StateConfig.ready()."""

from __future__ import annotations

from experiments.projections import register_projector
from state.services import project_state_events


def register() -> None:
    """Register one projector for every kind, so mixed batches are projected in seq order."""
    register_projector("", project_state_events, name="state.project_state_events")
