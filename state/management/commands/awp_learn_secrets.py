"""Learn the known secrets of data stored before value masking existed (ledger and memory texts), per experiment."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from experiments.models import Experiment
from state.secrets import learn_from_history


class Command(BaseCommand):
    help = "Learn known secrets from the stored ledger and memory (once after an upgrade; ingest learns by itself)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--experiment", help="slug (default: every experiment)")

    def handle(self, *args: Any, **options: Any) -> None:
        experiments = Experiment.objects.all()
        if options["experiment"]:
            experiments = experiments.filter(slug=options["experiment"])
        for experiment in experiments:
            count = learn_from_history(experiment=experiment)
            self.stdout.write(f"{experiment.slug}: {count} new known secret(s)")  # counts only, never values
