"""Ledger and workspace-file hooks: curate when a run tree completes; runtime-curator files become proposals."""

from __future__ import annotations

import logging

from django.db import transaction

from experiments.models import Event, Experiment, Run
from experiments.projections import ProjectionContext, WorkspaceFile
from memory.curation import services

logger = logging.getLogger(__name__)


def on_run_complete(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """After the batch commits, curate the run's whole tree (a sub-run completing re-curates its root)."""
    run_pk = run.pk

    def curate_after_commit() -> None:
        current = Run.objects.filter(pk=run_pk).first()
        if current is None:
            return
        root = services.root_of(current)
        if root.status == Run.Status.RUNNING and root.pk != current.pk:
            return  # the root's own completion will curate the tree
        services.curate_run(run=root)
        if root.pk == current.pk:
            from memory.exposure import on_root_run_finished

            # What the run was given (inferred from the write-back before it started); a trial's next arm.
            on_root_run_finished(root)

    # Curation never fails an ingest: it runs after the commit and only logs its own errors.
    transaction.on_commit(curate_after_commit, robust=True)


def on_runtime_curator_file(experiment: Experiment, file: WorkspaceFile) -> None:
    """The runtime curator's memory/tools|facts|antipatterns file → proposals with origin runtime_curator."""
    try:
        services.ingest_runtime_file(experiment, file)
    except Exception:
        # A file we cannot read as a proposal must not undo the import around it (its savepoint rolled back).
        logger.exception("curation: could not take %s as proposals", file.relpath)
