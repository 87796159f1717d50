"""Append batches accepted with `Prefer: respond-async` to their runs' ledgers (experiments.inbox) until Ctrl-C.

`awp_serve` runs a drainer as one of its threads; run this beside daphne when the web processes are started
some other way. Several drainers may run: each takes a different run's oldest batch.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from experiments.inbox import Drainer, drain_pending


class Command(BaseCommand):
    help = "Apply accepted ingest batches as they arrive (or, with --once, those waiting now)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--once", action="store_true", help="apply what is waiting now, then exit")
        parser.add_argument("--poll", type=float, default=1.0, help="seconds between looks when no accept wakes it")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["once"]:
            self.stdout.write(f"{drain_pending()} batch(es) settled")
            return
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
        if options["verbosity"] > 0:
            self.stdout.write("Draining accepted ingest batches (Ctrl-C stops).")
        Drainer(poll=options["poll"]).run(stop)
