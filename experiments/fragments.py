"""Live fragments of the ingest part (filled in below)."""

from __future__ import annotations


def register() -> None:
    """Called from ExperimentsConfig.ready()."""
