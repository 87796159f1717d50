"""Follow AWP folders as the runtime writes them; resumes from Postgres cursors after a restart."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from experiments.folder_changes import MODES
from experiments.watch import watch_folders


class Command(BaseCommand):
    help = "Keep following AWP folders (kernel notifications, or polling where they fail) until Ctrl-C."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--experiment", help="put plain workflow folders into this experiment (created if missing)")
        parser.add_argument("--interval", type=float, default=0.2, help="seconds between polls when polling")
        parser.add_argument(
            "--watch-mode",
            choices=MODES,
            default=None,
            help="notify (kernel notifications), poll, or auto: poll only folders on network filesystems "
            "(default: AWP_WATCH_MODE, else auto)",
        )

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
        watch_folders(folders, experiment_slug=options["experiment"], interval=options["interval"], mode=options["watch_mode"], should_stop=lambda: stopping["now"], on_pass=report)
