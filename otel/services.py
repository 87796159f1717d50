"""The OTLP use case: an export's spans appended to their runs' ledgers through the one ingest service."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from experiments.ingest import append_locked, lock_or_create_run
from experiments.models import Experiment
from experiments.projections import ProjectionContext
from otel.decode import SpanIn
from otel.mapping import map_spans

ENGINE = "otel"


@dataclass(frozen=True)
class ExportResult:
    runs: list[str]
    new_events: int


def ingest_spans(*, experiment: Experiment, spans: list[SpanIn]) -> ExportResult:
    """Append the spans' events run by run (one transaction per run, in run id order: no lock-order deadlocks).

    Spans already happened, like the folder runtime's files: a projector's objection is recorded on the run,
    it does not refuse the export (strict=False). A resend adds nothing (dedupe key = trace id + span id).
    """
    new = 0
    runs = []
    for batch in map_spans(spans):
        with transaction.atomic():
            run = lock_or_create_run(experiment.pk, batch.run_id, engine=ENGINE)
            result = append_locked(run, batch.events, ctx=ProjectionContext(strict=False, source=ENGINE))
        new += result.new_count
        runs.append(batch.run_id)
    return ExportResult(runs=runs, new_events=new)
