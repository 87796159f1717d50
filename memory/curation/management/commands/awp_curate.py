"""Curate completed root runs not curated yet; retry failed write-backs. Last line: a JSON summary."""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments.models import Experiment
from memory.curation import lifecycle, writeback
from memory.curation.services import CurationSummary, curate_experiment, judge_contradictions


class Command(BaseCommand):
    help = "Curate every completed root run of an experiment (or all) not curated yet, and retry due write-backs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--experiment", help="experiment slug (default: every experiment)")
        parser.add_argument("--all", action="store_true", help="re-curate runs already curated too (idempotent)")
        parser.add_argument("--retry-writeback", action="store_true", help="retry failed write-backs now, due or not")
        parser.add_argument("--loop", type=float, metavar="SECONDS", help="repeat every SECONDS (a retry loop)")

    def handle(self, *args: Any, **options: Any) -> None:
        experiments = Experiment.objects.order_by("slug")
        if options["experiment"]:
            experiments = experiments.filter(slug=options["experiment"])
            if not experiments.exists():
                raise CommandError(f"No experiment with slug '{options['experiment']}'.")
        while True:
            summary = self.one_pass(list(experiments), only_new=not options["all"], force=options["retry_writeback"])
            self.stdout.write(json.dumps(summary))
            if not options["loop"]:
                return
            time.sleep(options["loop"])

    def one_pass(self, experiments: list[Experiment], *, only_new: bool, force: bool) -> dict[str, Any]:
        total = CurationSummary()
        expired: list[int] = []
        judged = 0
        for experiment in experiments:
            total.add(curate_experiment(experiment=experiment, only_new=only_new))
            expired += lifecycle.expire_due(experiment=experiment)  # facts past their valid_until leave memory
            judged += judge_contradictions(experiment_id=experiment.pk)  # near misses, with the configured LLM
        retried = [a for a in writeback.retry_due(force=force) if a.experiment in experiments]
        return {
            **total.as_dict(),
            "writeback_retried": len(retried),
            "writeback_failed": sum(1 for a in retried if a.status == "failed"),
            "expired": expired,
            "contradictions_judged": judged,
        }
