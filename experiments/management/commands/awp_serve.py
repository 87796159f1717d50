"""Serve the ASGI app with daphne (and, when asked, the demo watcher beside it); Ctrl-C stops everything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run daphne on 127.0.0.1:PORT plus the background processes of a local install."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="do not replay the demo run")

    def handle(self, *args: Any, **options: Any) -> None:
        # Handle Ctrl-C and SIGTERM even when started in the background (where SIGINT arrives ignored).
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _raise_keyboard_interrupt)
        python = sys.executable
        procs: list[subprocess.Popen[bytes]] = []
        for command in self.companion_commands(no_demo=options["no_demo"]):
            procs.append(subprocess.Popen([python, "manage.py", *command], preexec_fn=_default_signals))
        url = f"http://{options['host']}:{options['port']}"
        self.stdout.write(f"  Dashboard: {url}   (Ctrl-C stops it)")
        daphne = subprocess.Popen(
            [python, "-m", "daphne", "-b", options["host"], "-p", str(options["port"]), "awp_site.asgi:application"],
            preexec_fn=_default_signals,
        )
        procs.append(daphne)
        try:
            daphne.wait()
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stop_all(procs)

    def companion_commands(self, *, no_demo: bool) -> list[list[str]]:
        """Management commands run beside daphne (the ingest and memory capabilities add theirs)."""
        from django.core.management import get_commands

        available = get_commands()
        commands: list[list[str]] = []
        if not no_demo and "awp_demo" in available:
            commands.append(["awp_demo"])
        if "awp_embed" in available:
            commands.append(["awp_embed", "--loop"])
        return commands


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _default_signals() -> None:
    """In the child before exec: default SIGINT/SIGTERM, so Python and daphne shut down gracefully."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Ask every child to stop (SIGINT: graceful, runs atexit so the embedded database is released), then wait."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    for proc in procs:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
