"""The state projectors, registered with the ingest core in StateConfig.ready()."""

from __future__ import annotations

from experiments.projections import register_preparer, register_projector
from state.secrets import learn_from_events, may_learn_from, prepare_learning
from state.services import STATE_EVENT_KINDS, project_state_events


def register() -> None:
    """Register one projector for every kind, so mixed batches are projected in seq order.

    Known secrets are learnt first, so memory projectors (registered later) already mask them in what they store.
    """
    register_projector("", learn_from_events, name="state.learn_secrets", applies=may_learn_from)
    register_preparer(prepare_learning)  # its reading of the texts overlaps the ledger write
    register_projector("", project_state_events, name="state.project_state_events", applies=lambda event, _experiment: event.kind in STATE_EVENT_KINDS)
