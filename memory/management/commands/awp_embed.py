"""Embed memory chunks that have no vector of the current model yet; --loop keeps doing it as a worker."""

from __future__ import annotations

import signal
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections
from tqdm import tqdm

from experiments.models import Experiment
from memory import embeddings
from memory.chunks import embed_pending_chunks, pending_count
from memory.services import archive_old_entries


class Command(BaseCommand):
    help = "Embed every memory chunk not yet embedded (all experiments, or one), with a progress bar."

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--experiment", metavar="SLUG", help="only this experiment's chunks")
        which.add_argument("--all", action="store_true", help="every experiment (the default)")
        parser.add_argument("--loop", action="store_true", help="keep polling for new chunks (background worker)")
        parser.add_argument("--interval", type=float, default=5.0, help="seconds between polls with --loop")
        parser.add_argument("--batch-size", type=int, default=64)

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = None
        if options["experiment"]:
            experiment = Experiment.objects.filter(slug=options["experiment"]).first()
            if experiment is None:
                raise CommandError(f"No experiment with slug '{options['experiment']}'.")
        enabled = embeddings.is_enabled()
        if not enabled:
            # A disabled embedder is a supported configuration, not an error: awp_serve must not see a crash.
            self.stdout.write("The semantic tier is disabled (AWP_EMBEDDER=none): nothing to embed.")
        if options["loop"]:
            # SIGTERM (systemd, docker stop) stops the worker like Ctrl-C, so its socket is removed.
            signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
        # The worker holds the model for every process of the install: web processes ask it over a socket.
        close = embeddings.serve_model() if enabled and options["loop"] else None
        try:
            while True:
                self._archive(experiment)
                if enabled:
                    self._embed_once(experiment, options["batch_size"])
                if not options["loop"]:
                    return
                close_old_connections()
                time.sleep(options["interval"] if enabled else max(options["interval"], 60.0))
        except KeyboardInterrupt:
            # Ctrl-C on `make run` reaches every process: stop quietly (what is embedded stays embedded).
            self.stdout.write("embedding worker stopped")
        finally:
            if close is not None:
                close()

    def _archive(self, experiment: Experiment | None) -> None:
        # Retention runs with the worker: working entries past retention_days are archived, never deleted.
        for each in [experiment] if experiment else Experiment.objects.all():
            archived = archive_old_entries(experiment=each)
            if archived:
                self.stdout.write(f"Archived {archived} working entr{'y' if archived == 1 else 'ies'} of {each.slug}.")

    def _embed_once(self, experiment: Experiment | None, batch_size: int) -> None:
        total = pending_count(experiment=experiment)
        if total == 0:
            return
        with tqdm(total=total, unit="chunk", desc="embedding", file=self.stderr._out) as bar:
            done = embed_pending_chunks(experiment=experiment, batch_size=batch_size, on_batch=bar.update)
        self.stdout.write(f"Embedded {done} chunk(s) with {embeddings.current_model_name()}.")


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
