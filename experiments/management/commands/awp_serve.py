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
        if "embedding worker" in companions and "AWP_EMBED_WORKER" not in os.environ:
            from django.conf import settings

            # The daphne workers below (forked: this process's settings; started: the environment) ask it, never load the model.
            os.environ["AWP_EMBED_WORKER"] = settings.AWP_EMBED_WORKER = "required"
        # Two malloc arenas per process, not 8 per core: Django runs each sync request in a thread of its own and
        # ONNX Runtime infers on a thread pool; every arena kept the peak of what its thread did (bench/footprint.py).
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        _limit_malloc_arenas(int(os.environ["MALLOC_ARENA_MAX"]))  # this process and the workers forked from it
        listener = bind_listener(options["host"], options["port"])
        workers = max(1, options["workers"])
        procs: list[Any]
        if forkable():
            procs = [fork_worker(listener.fileno()) for _ in range(workers)]
        else:
            daphne = [python, "-m", "awp_site.daphne_worker", "--fd", str(listener.fileno()), APP]
            procs = [subprocess.Popen(daphne, preexec_fn=_default_signals, pass_fds=[listener.fileno()]) for _ in range(workers)]
        listener.close()  # the workers hold it now
        url = f"http://{options['host']}:{options['port']}"
        self.stdout.write(f"  Dashboard: {url}   ({workers} daphne worker{'s' if workers != 1 else ''}; Ctrl-C stops it)")
        # The companions start after the workers: fork and preexec_fn are only safe while this process has one thread.
        stop = threading.Event()
        threads = [threading.Thread(target=_companion, args=(name, run, stop), name=f"awp-{name}", daemon=True) for name, run in companions.items()]
        try:
            for thread in threads:
                thread.start()
            wait_any(procs)
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            stop.set()
            stop_all(procs)
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=15)

    def companions(self, *, no_demo: bool) -> dict[str, Callable[[threading.Event], None]]:
        """What runs beside daphne, each in a thread of this process (the ingest and memory capabilities add theirs)."""
        from django.core.management import get_commands

        available = get_commands()
        found: dict[str, Callable[[threading.Event], None]] = {}
        if not no_demo and "awp_demo" in available:
            from experiments.management.commands.awp_demo import follow_demo

            found["demo"] = lambda stop: follow_demo(self.stdout, stop=stop)
        if "awp_drain" in available:
            from experiments.inbox import Drainer

            found["ingest drainer"] = Drainer().run
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


APP = "awp_site.asgi:application"
WORKER_NAME = b"awp-daphne"  # the forked workers' process name (ps -e, psutil name()): their command line is ours


def forkable() -> bool:
    """Whether the daphne workers can be forked from this process: the app loaded here, Twisted not (each
    worker installs its own reactor), one thread and no open database connection or pool (a child would
    share them). Forked workers share the ~70 MB of Django, the app and the libraries loaded here (copy on
    write, kept shared by gc.freeze in awp_site.asgi) instead of each building its own copy."""
    if os.environ.get("AWP_FORK_WORKERS", "1") == "0":
        return False
    from django.db import connections

    import awp_site.asgi  # noqa: F401 - the app, the URLconf and every view module, frozen out of the collector

    for conn in connections.all(initialized_only=True):
        conn.close()
        if hasattr(conn, "close_pool"):
            conn.close_pool()
    return "twisted" not in sys.modules and threading.active_count() == 1


class ForkedWorker:
    """A daphne worker forked from this process, with the part of Popen's interface that stop_all uses."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 0  # reaped elsewhere
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(0.05)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def fork_worker(fd: int) -> ForkedWorker:
    """A daphne worker on the inherited listening socket `fd`, forked from this process (see forkable)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return ForkedWorker(pid)
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        _set_process_name(WORKER_NAME)
        sys.argv = ["daphne", "--fd", str(fd), APP]
        from awp_site.daphne_worker import main

        main()
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    except KeyboardInterrupt:
        code = 0
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # not the parent's atexit handlers (the embedded Postgres is the parent's to stop)


def _set_process_name(name: bytes) -> None:
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").prctl(15, ctypes.c_char_p(name), 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def _limit_malloc_arenas(count: int) -> None:
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").mallopt(-8, count)  # M_ARENA_MAX: what MALLOC_ARENA_MAX does at a process's start
    except (OSError, AttributeError):
        pass


def bind_listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, bound once and inherited by every worker."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.set_inheritable(True)
    return listener


def wait_any(workers: list[Any]) -> None:
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


def stop_all(procs: list[Any]) -> None:
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
