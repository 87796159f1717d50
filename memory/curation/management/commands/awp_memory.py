"""Export an experiment's curated memory with its provenance, or import such an archive. Last line: JSON summary.

    python manage.py awp_memory export --experiment SLUG --out FILE
    python manage.py awp_memory import FILE --experiment SLUG [--restore]
    python manage.py awp_memory expire [--experiment SLUG]      # retire facts past their valid_until
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments.models import Experiment
from memory.curation import archive, lifecycle


class Command(BaseCommand):
    help = "Export or import an experiment's curated memory (JSON Lines with provenance); retire expired facts."

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        export = verbs.add_parser("export", help="write the archive")
        export.add_argument("--experiment", required=True)
        export.add_argument("--out", required=True, help="the archive file to write (JSON Lines)")
        load = verbs.add_parser("import", help="read an archive into an experiment")
        load.add_argument("file")
        load.add_argument("--experiment", required=True)
        load.add_argument("--restore", action="store_true", help="land items as they were, not as proposals")
        expire = verbs.add_parser("expire", help="retire facts whose valid_until has passed")
        expire.add_argument("--experiment")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verb"] == "expire":
            experiment = _experiment(options["experiment"]) if options["experiment"] else None
            self.stdout.write(json.dumps({"expired": lifecycle.expire_due(experiment=experiment)}))
            return
        experiment = _experiment(options["experiment"])
        if options["verb"] == "export":
            counts: Counter[str] = Counter()
            path = Path(options["out"])
            with path.open("w", encoding="utf-8") as out:
                for record in archive.export_records(experiment):
                    counts[record["type"]] += 1
                    out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
            self.stdout.write(json.dumps({"experiment": experiment.slug, "out": str(path), **dict(sorted(counts.items()))}))
            return
        try:
            lines = Path(options["file"]).read_text(encoding="utf-8").splitlines()
            records = [json.loads(line) for line in lines if line.strip()]
            summary = archive.import_records(experiment, records, restore=options["restore"])
        except (OSError, ValueError, KeyError, TypeError, archive.ArchiveError) as exc:
            raise CommandError(f"Cannot import {options['file']}: {exc}") from exc
        self.stdout.write(json.dumps(summary))


def _experiment(slug: str) -> Experiment:
    experiment = Experiment.objects.filter(slug=slug).first()
    if experiment is None:
        raise CommandError(f"No experiment with slug '{slug}'.")
    return experiment
