"""Follow AWP folders: a pass whenever one changes, ingest what is new, shard folders between watchers by advisory locks."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from django.db import close_old_connections

from awp_site.db import dedicated_params
from experiments.folder_changes import FolderChanges, mode_for
from experiments.importer import FolderImporter

log = logging.getLogger(__name__)


def folder_lock_key(folder: Path) -> int:
    """A signed 64-bit advisory-lock key for a folder (same on every host that sees the same path)."""
    digest = hashlib.sha256(f"awp-watch:{folder.resolve()}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class FolderLocks:
    """Session-level advisory locks held on one dedicated connection: if this process dies, Postgres frees them."""

    def __init__(self) -> None:
        self.params = dedicated_params()  # kept: a reconnect may come while Django's connection is down
        self.conn: psycopg.Connection[Any] | None = psycopg.connect(**self.params, autocommit=True)
        self.held: set[int] = set()

    def _locked(self, key: int) -> bool:
        if self.conn is None or self.conn.closed:
            self.conn = psycopg.connect(**self.params, autocommit=True)
        row = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
        return bool(row and row[0])

    def try_acquire(self, folder: Path) -> bool:
        key = folder_lock_key(folder)
        if key in self.held:
            return True
        try:
            if self._locked(key):
                self.held.add(key)
                return True
        except psycopg.Error:
            self.conn = None  # Postgres is away; try again on a later pass
        return False

    def holds(self, folder: Path) -> bool:
        return folder_lock_key(folder) in self.held

    def revalidate(self) -> None:
        """After the lock connection died (Postgres restarted), take the locks again or give the folders up."""
        if self.conn is not None:
            try:
                self.conn.execute("SELECT 1")
                return
            except psycopg.Error:
                self.conn = None
        kept = set()
        for key in self.held:
            try:
                if self._locked(key):
                    kept.add(key)
            except psycopg.Error:
                self.conn = None
                break
        self.held = kept

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()


# A watcher at rest wakes once a second (to see should_stop), checks its lock connection every 30 s (Postgres
# restarted? then another watcher may own a folder now) and passes over every folder every 10 minutes in
# case a notification was lost. A pending folder (missing, or held by another watcher) is retried at every
# wake; one whose pass failed (Postgres away) after 1, 2, 4 … 30 s.
WAKE_SECONDS = 1.0
LOCK_CHECK_SECONDS = 30.0
RESYNC_SECONDS = 600.0
RETRY_MAX_SECONDS = 30.0


def watch_folders(
    folders: list[Path],
    *,
    experiment_slug: str | None = None,
    interval: float = 0.2,
    mode: str | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    on_pass: Callable[[Path, int], None] | None = None,
) -> None:
    """Follow `folders` until `should_stop()`: a pass over a folder whenever it changes; one watcher per folder.

    Changes come from kernel notifications, or from polling every `interval` seconds where those do not work
    (`mode`: auto | notify | poll, see experiments.folder_changes). A folder is marked clean only after a
    pass over it committed, so a failed pass is retried until it succeeds.
    """
    locks = FolderLocks()
    importers: dict[Path, FolderImporter] = {}
    changes = FolderChanges(mode=mode_for(folders, mode), poll_interval=interval)
    log.info("watching %d folder(s) by %s", len(folders), "polling" if changes.mode == "poll" else "notifications")
    dirty = set(folders)  # the first pass covers everything: cursors make it cheap
    failures: dict[Path, int] = {}  # consecutive failed passes per folder
    not_before: dict[Path, float] = {}  # when a failed folder may be tried again
    recheck: dict[Path, float] = {}  # folder → when a file that was still settling must be read again
    waiting: dict[Path, float] = {}  # folder → when its oldest change not yet read was seen (epoch)
    last_resync = last_lock_check = time.monotonic()
    try:
        while not should_stop():
            now = time.monotonic()
            if now - last_resync >= RESYNC_SECONDS:
                dirty |= set(folders)
                last_resync = now
            due = {f for f, at in recheck.items() if time.time() >= at}
            for folder in due:
                del recheck[folder]
            dirty |= due
            if dirty or now - last_lock_check >= LOCK_CHECK_SECONDS:
                locks.revalidate()
                lost = [f for f in importers if not locks.holds(f)]
                for folder in lost:
                    del importers[folder]
                dirty |= set(lost)
                last_lock_check = now
            if changes.follow(f for f in folders if f.is_dir()):
                dirty |= set(folders)  # (re)started watching: a pass catches what happened before
            for folder in folders:
                if should_stop():
                    break
                if folder not in dirty or not folder.is_dir() or time.monotonic() < not_before.get(folder, 0.0):
                    continue
                if folder not in importers:
                    if not locks.try_acquire(folder):
                        continue  # another watcher has it; try again later (it may die)
                    importers[folder] = FolderImporter(folder, experiment_slug=experiment_slug, source="watcher", final=False)
                started = time.monotonic()
                try:
                    stats = importers[folder].sync()
                except Exception as error:  # a bad pass must not kill the watcher; the next pass retries from the cursors
                    log.exception("watch pass failed for %s", folder)
                    _report(folder, new_events=0, seconds=time.monotonic() - started, error=f"{type(error).__name__}: {error}",
                            waiting_since=waiting.get(folder))  # fmt: skip
                    close_old_connections()
                    # Retry after 1, 2, 4 … 30 s: a lasting failure (schema not migrated) must not spin.
                    failures[folder] = failures.get(folder, 0) + 1
                    not_before[folder] = time.monotonic() + min(RETRY_MAX_SECONDS, 2.0 ** (failures[folder] - 1))
                    continue
                failures.pop(folder, None)
                not_before.pop(folder, None)
                dirty.discard(folder)
                _report(folder, new_events=stats.new_events, seconds=time.monotonic() - started, waiting_since=waiting.pop(folder, None))
                settle = importers[folder].recheck_at
                if settle is not None:
                    recheck[folder] = settle
                if on_pass:
                    on_pass(folder, stats.new_events)
            woken = changes.wait(WAKE_SECONDS)
            for folder in woken:
                waiting.setdefault(folder, time.time())  # the lag counts from the first change not yet read
            dirty |= woken
    finally:
        changes.close()
        locks.close()
        _forget(folders)


def _forget(folders: list[Path]) -> None:
    from experiments.watch_health import forget_passes

    forget_passes(folders)


def _report(folder: Path, **report: Any) -> None:
    """The pass's heartbeat for /healthz; a full disk must not stop the watcher."""
    from experiments.watch_health import record_pass

    try:
        record_pass(folder, **report)
    except OSError:
        log.warning("could not write the watcher report for %s", folder, exc_info=True)
