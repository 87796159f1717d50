"""Follow AWP folders: poll, ingest what is new, and shard folders between watchers with advisory locks."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from django.db import close_old_connections, connection

from experiments.importer import FolderImporter

log = logging.getLogger(__name__)


def folder_lock_key(folder: Path) -> int:
    """A signed 64-bit advisory-lock key for a folder (same on every host that sees the same path)."""
    digest = hashlib.sha256(f"awp-watch:{folder.resolve()}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class FolderLocks:
    """Session-level advisory locks held on one dedicated connection: if this process dies, Postgres frees them."""

    def __init__(self) -> None:
        connection.ensure_connection()
        params = connection.get_connection_params()
        params.pop("cursor_factory", None)
        params.pop("context", None)
        self.params = params
        self.conn: psycopg.Connection[Any] | None = psycopg.connect(**params, autocommit=True)
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


def watch_folders(
    folders: list[Path],
    *,
    experiment_slug: str | None = None,
    interval: float = 0.2,
    should_stop: Callable[[], bool] = lambda: False,
    on_pass: Callable[[Path, int], None] | None = None,
) -> None:
    """Poll `folders` until `should_stop()`; each folder is followed by at most one watcher at a time."""
    locks = FolderLocks()
    importers: dict[Path, FolderImporter] = {}
    try:
        while not should_stop():
            # A session lock dies with its connection: another watcher may own a folder now.
            locks.revalidate()
            for folder in [f for f in importers if not locks.holds(f)]:
                del importers[folder]
            for folder in folders:
                if should_stop():
                    break
                if not folder.is_dir():
                    continue
                if folder not in importers:
                    if not locks.try_acquire(folder):
                        continue  # another watcher has it; try again later (it may die)
                    importers[folder] = FolderImporter(folder, experiment_slug=experiment_slug, source="watcher", final=False)
                try:
                    stats = importers[folder].sync()
                except Exception:  # a bad pass must not kill the watcher; the next pass retries from the cursors
                    log.exception("watch pass failed for %s", folder)
                    close_old_connections()
                    continue
                if on_pass:
                    on_pass(folder, stats.new_events)
            time.sleep(interval)
    finally:
        locks.close()
