"""Announce ledger progress to live pages: 'run R reached seq N' (notify, then read)."""

from __future__ import annotations


def announce_run_advanced(*, run_id: int, experiment_id: int, seq: int) -> None:
    """Tell open pages that run `run_id` has events up to `seq`. Call from transaction.on_commit."""
    # Filled by the live capability; ingest already calls it after every commit.
    return None


def announce_experiment_changed(*, experiment_id: int, what: str) -> None:
    """Tell open experiment pages that something other than a run's ledger changed (e.g. the review badge)."""
    return None
