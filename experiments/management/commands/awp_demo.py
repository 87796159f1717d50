"""Replay the recorded demo run into settings.AWP_DEMO_DIR while a watcher follows it into the `demo` experiment."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser, OutputWrapper

from experiments.demo import RECORDED_RUN, new_run_id, replay_demo
from experiments.importer import FolderImporter
from experiments.models import Experiment, Run
from experiments.watch import watch_folders


class Command(BaseCommand):
    help = "Replay a recorded AWP run file by file (small delays) and follow it into the demo experiment; Ctrl-C stops."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--delay", type=float, default=0.4, help="seconds between files")
        parser.add_argument("--once", action="store_true", help="stop once the replay is done and ingested")
        parser.add_argument("--as-recorded", action="store_true", help="replay under the recorded run id only (no new run)")

    def handle(self, *args: Any, **options: Any) -> None:
        stop = threading.Event()
        signal.signal(signal.SIGINT, lambda *a: stop.set())
        signal.signal(signal.SIGTERM, lambda *a: stop.set())
        follow_demo(self.stdout, stop=stop, delay=options["delay"], once=options["once"], as_recorded=options["as_recorded"])


def follow_demo(stdout: OutputWrapper, *, stop: threading.Event, delay: float = 0.4, once: bool = False, as_recorded: bool = False) -> None:
    """Replay the recorded run into AWP_DEMO_DIR and follow the folder into the demo experiment until `stop`
    (with `once`: until the replay is in). awp_serve runs this in a thread of its own process."""
    if not Experiment.objects.filter(slug="demo").exists():
        call_command("awp_seed_demo", stdout=stdout)
    target = Path(settings.AWP_DEMO_DIR) / "workflow"
    target.mkdir(parents=True, exist_ok=True)

    finished = threading.Event()
    # Every start replays a run people can watch live: the recorded one first, then as new runs (a second
    # one on the first start, so Compare has two runs to compare).
    if as_recorded:
        run_ids = [RECORDED_RUN]
    elif not Run.objects.filter(experiment__slug="demo", run_id=RECORDED_RUN).exists():
        run_ids = [RECORDED_RUN, new_run_id()]
    else:
        run_ids = [new_run_id()]

    def replay() -> None:
        for run_id in run_ids:
            steps = replay_demo(target, delay=delay, should_stop=stop.is_set, run_id=run_id)
            stdout.write(f"demo: replayed {steps} new file(s) of run {run_id} into {target}")
        finished.set()

    threading.Thread(target=replay, daemon=True, name="awp-demo-replay").start()

    def should_stop() -> bool:
        return stop.is_set() or (once and finished.is_set())

    stdout.write(f"demo: following {target} into experiment 'demo'")
    watch_folders([target], experiment_slug="demo", should_stop=should_stop)
    if once and not stop.is_set():
        # --once: the replay is done; one last pass takes whatever the watcher had not reached yet.
        FolderImporter(target, experiment_slug="demo", source="watcher", final=False).sync()
