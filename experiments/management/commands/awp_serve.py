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
        python = sys.executable
        procs: list[subprocess.Popen[bytes]] = []
        extra = self.companion_commands(no_demo=options["no_demo"])
        for command in extra:
            procs.append(subprocess.Popen([python, "manage.py", *command]))
        url = f"http://{options['host']}:{options['port']}"
        self.stdout.write(f"  Dashboard: {url}   (Ctrl-C stops it)")
        daphne = subprocess.Popen(
            [python, "-m", "daphne", "-b", options["host"], "-p", str(options["port"]), "awp_site.asgi:application"]
        )
        procs.append(daphne)
        try:
            daphne.wait()
        except KeyboardInterrupt:
            pass
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()

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
