"""Follow AWP folders as the runtime writes them; resumes from Postgres cursors after a restart."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from experiments.watch import watch_folders


class Command(BaseCommand):
    help = "Keep following AWP folders (poll every --interval seconds) until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--experiment", help="put plain workflow folders into this experiment (created if missing)")
        parser.add_argument("--interval", type=float, default=0.2)

    def handle(self, *args: Any, **options: Any) -> None:
        stopping = {"now": False}

        def stop(signum: int, frame: Any) -> None:
            stopping["now"] = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        verbosity = options["verbosity"]

        def report(folder: Path, new_events: int) -> None:
            if new_events and verbosity > 0:
                self.stdout.write(f"{folder}: +{new_events} events")

        folders = [p.resolve() for p in options["paths"]]
        self.stdout.write(f"watching {', '.join(map(str, folders))}")
        watch_folders(folders, experiment_slug=options["experiment"], interval=options["interval"], should_stop=lambda: stopping["now"], on_pass=report)
