"""Serve the ASGI app with several daphne workers on one socket (plus the demo and embedder); Ctrl-C stops all.

The listening socket is bound once, here, and every worker accepts on it (daphne --fd): the kernel hands each
connection to one idle worker, so every core serves pages. Workers share nothing but Postgres; live updates
cross them through the channel layer (LISTEN/NOTIFY by default, Redis when REDIS_URL is set).

The demo's folder follower and the embedding worker run as threads of this process, not as processes of their
own: this process has Django loaded anyway, and each further Django process held ~90 MB (bench/footprint.py).
The embedding worker starts the model's process only when vectors are asked for (memory.embeddings.ModelHost).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Run daphne on 127.0.0.1:PORT plus the background processes of a local install."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
        parser.add_argument("--no-demo", action="store_true", help="do not replay the demo run")
        parser.add_argument(
            "--workers", type=int, default=int(os.environ.get("AWP_WORKERS", "0")) or (os.cpu_count() or 1),
            help="daphne processes sharing the port (default: AWP_WORKERS, else one per core)",
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        # Handle Ctrl-C and SIGTERM even when started in the background (where SIGINT arrives ignored).
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _raise_keyboard_interrupt)
        python = sys.executable
        companions = self.companions(no_demo=options["no_demo"])
        if "embedding worker" in companions:
            os.environ.setdefault("AWP_EMBED_WORKER", "required")  # the daphne workers below ask it, never load the model
        # Two malloc arenas per process, not 8 per core: Django runs each sync request in a thread of its own and
        # ONNX Runtime infers on a thread pool; every arena kept the peak of what its thread did (bench/footprint.py).
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        listener = bind_listener(options["host"], options["port"])
        workers = max(1, options["workers"])
        daphne = [python, "-m", "awp_site.daphne_worker", "--fd", str(listener.fileno()), "awp_site.asgi:application"]
        procs = [subprocess.Popen(daphne, preexec_fn=_default_signals, pass_fds=[listener.fileno()]) for _ in range(workers)]
        listener.close()  # the workers hold it now
        # The companions start after the workers: preexec_fn is only safe while this process has one thread.
        stop = threading.Event()
        threads = [threading.Thread(target=_companion, args=(name, run, stop), name=f"awp-{name}", daemon=True) for name, run in companions.items()]
        for thread in threads:
            thread.start()
        url = f"http://{options['host']}:{options['port']}"
        self.stdout.write(f"  Dashboard: {url}   ({workers} daphne worker{'s' if workers != 1 else ''}; Ctrl-C stops it)")
        try:
            wait_any(procs)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stop.set()
            stop_all(procs)
            for thread in threads:
                thread.join(timeout=15)

    def companions(self, *, no_demo: bool) -> dict[str, Callable[[threading.Event], None]]:
        """What runs beside daphne, each in a thread of this process (the ingest and memory capabilities add theirs)."""
        from django.core.management import get_commands

        available = get_commands()
        found: dict[str, Callable[[threading.Event], None]] = {}
        if not no_demo and "awp_demo" in available:
            from experiments.management.commands.awp_demo import follow_demo

            found["demo"] = lambda stop: follow_demo(self.stdout, stop=stop)
        if "awp_embed" in available:
            from memory.management.commands.awp_embed import run_worker

            found["embedding worker"] = lambda stop: run_worker(self.stdout, self.stderr, stop=stop)
        return found


def _companion(name: str, run: Callable[[threading.Event], None], stop: threading.Event) -> None:
    """One companion in its thread: a failure is printed and ends that companion only, as a process of its own would."""
    from django.db import connection

    try:
        run(stop)
    except Exception:
        if not stop.is_set():
            import traceback

            print(f"awp_serve: the {name} stopped on an error:\n{traceback.format_exc()}", file=sys.stderr)
    finally:
        connection.close()


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, bound once and inherited by every worker."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.set_inheritable(True)
    return listener


def wait_any(workers: list[subprocess.Popen[bytes]]) -> None:
    """Sleep until a worker exits (a crashed worker stops the whole server rather than serving with fewer)."""
    while True:
        try:
            exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # blocks; leaves the child for Popen to reap
        except ChildProcessError:
            return
        if exited is None or any(proc.pid == exited.si_pid for proc in workers):
            return
        # Another child (the model's process, stopped when idle): its owner reaps it; if it has not within a
        # second, it is reaped here, so this loop does not wake on it again.
        time.sleep(1.0)
        try:
            os.waitid(os.P_PID, exited.si_pid, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            pass


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
