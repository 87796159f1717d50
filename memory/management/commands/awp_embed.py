"""Embed memory chunks that have no vector of the current model yet; --loop keeps doing it as a worker."""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import close_old_connections, connection
from tqdm import tqdm

from experiments.models import Experiment
from memory import embeddings
from memory.chunks import embed_pending_chunks, pending_count
from memory.services import archive_old_entries

log = logging.getLogger(__name__)


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
        if not options["loop"]:
            run_worker(self.stdout, self.stderr, experiment=experiment, batch_size=options["batch_size"], loop=False)
            return
        # SIGTERM (systemd, docker stop) stops the worker like Ctrl-C, so its socket is removed.
        stop = threading.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *a: stop.set())
        run_worker(self.stdout, self.stderr, experiment=experiment, batch_size=options["batch_size"], interval=options["interval"], stop=stop)


def run_worker(
    stdout: OutputWrapper, stderr: OutputWrapper, *, experiment: Experiment | None = None, batch_size: int = 64,
    interval: float = 5.0, loop: bool = True, stop: threading.Event | None = None,
) -> None:  # fmt: skip
    """The embedding worker: retention, then every pending chunk embedded; with `loop`, again every `interval`
    seconds until `stop` is set, answering other processes' embedding requests meanwhile (awp_serve runs this
    in a thread of its own process)."""
    stop = stop or threading.Event()
    enabled = embeddings.is_enabled()
    if not enabled:
        # A disabled embedder is a supported configuration, not an error: awp_serve must not see a crash.
        stdout.write("The semantic tier is disabled (AWP_EMBEDDER=none): nothing to embed.")
    # The worker answers for the model for every process of the install: web processes ask it over a socket.
    close = embeddings.serve_model(stop.is_set) if enabled and loop else None
    try:
        while not stop.is_set():
            try:
                _archive(stdout, experiment)
                if enabled:
                    _embed_once(stdout, stderr, experiment, batch_size, stop)
            except Exception:
                if not loop:
                    raise
                if not stop.is_set():  # the next pass retries (the database or the model process was away)
                    log.exception("embedding pass failed")
            if not loop:
                return
            close_old_connections()
            stop.wait(interval if enabled else max(interval, 60.0))
        stdout.write("embedding worker stopped")  # what is embedded stays embedded
    finally:
        if close is not None:
            close()
        if loop:
            connection.close()  # this thread's connection (awp_serve runs the worker in a thread)


def _archive(stdout: OutputWrapper, experiment: Experiment | None) -> None:
    # Retention runs with the worker: working entries past retention_days are archived, never deleted.
    for each in [experiment] if experiment else Experiment.objects.all():
        archived = archive_old_entries(experiment=each)
        if archived:
            stdout.write(f"Archived {archived} working entr{'y' if archived == 1 else 'ies'} of {each.slug}.")


class _Stopped(Exception):
    pass


def _embed_once(stdout: OutputWrapper, stderr: OutputWrapper, experiment: Experiment | None, batch_size: int, stop: threading.Event) -> None:
    total = pending_count(experiment=experiment)
    if total == 0:
        return

    def on_batch(count: int) -> None:
        bar.update(count)
        if stop.is_set():
            raise _Stopped  # Ctrl-C stops between two batches; what is embedded stays embedded

    with tqdm(total=total, unit="chunk", desc="embedding", file=stderr._out) as bar:
        try:
            done = embed_pending_chunks(experiment=experiment, batch_size=batch_size, on_batch=on_batch)
        except _Stopped:
            return
    stdout.write(f"Embedded {done} chunk(s) with {embeddings.current_model_name()}.")
