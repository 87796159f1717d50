"""Import AWP folders (workflow dirs, experiments roots, DAG workflows) into the ledger in one pass."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from experiments.importer import import_folders


class Command(BaseCommand):
    help = "One pass over AWP folders: runs, events, blackboard, digests, memory files; safe to run again."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--experiment", help="put plain workflow folders into this experiment (created if missing)")
        parser.add_argument("--json", action="store_true", help="end with one JSON line of totals")

    def handle(self, *args: Any, **options: Any) -> None:
        paths: list[Path] = options["paths"]
        missing = [str(p) for p in paths if not p.is_dir()]
        if missing:
            raise CommandError(f"Not a folder: {', '.join(missing)}")
        bar = tqdm(total=0, unit="file", file=sys.stderr, disable=None, desc="import")

        def grow(n: int) -> None:
            bar.total += n
            bar.refresh()

        summary = import_folders(paths=paths, experiment_slug=options["experiment"], progress=bar.update, total=grow)
        bar.close()
        data = summary.as_dict()
        if options["json"]:
            self.stdout.write(json.dumps(data))
            return
        self.stdout.write(
            f"{data['runs']} runs, {data['events']} events ({data['new_events']} new), {data['board_posts']} board entries, "
            f"{data['digests']} digests, {data['workspace_files']} memory files, {data['problems']} problems"
            f" → {', '.join(data['experiments']) or 'no experiment'}"
        )
