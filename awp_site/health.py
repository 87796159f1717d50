"""What /healthz and the status page report: the database, the embedding worker, the folder watchers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

# A watcher re-reads its folders at least every RESYNC_SECONDS (experiments.watch); a heartbeat older than a few
# of those while its folder still changes means the watcher is gone.
STALE_AFTER = timedelta(minutes=10)


def database() -> dict[str, Any]:
    """The database answers and has pgvector."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # any database failure is reported by name, never raised
        return {"ok": False, "database": f"error: {type(exc).__name__}", "failing": "database"}
    if row is None:
        return {"ok": False, "database": "ok", "pgvector": None, "failing": "pgvector"}
    return {"ok": True, "database": "ok", "pgvector": row[0]}


def embedding() -> dict[str, Any]:
    """The semantic tier: on or off, the worker answering, this process holding a model, chunks waiting for vectors."""
    from memory import embeddings
    from memory.models import MemoryChunk

    if not embeddings.is_enabled():
        return {"enabled": False}
    report: dict[str, Any] = {"enabled": True, "model": embeddings.current_model_name(),
                              "worker": embeddings.worker_status(), "model_loaded_here": embeddings.model_loaded_here()}  # fmt: skip
    try:
        report["chunks_waiting"] = MemoryChunk.objects.pending(embeddings.current_model_name()).count()
    except Exception as exc:  # the database part reports the database
        report["chunks_waiting"] = f"error: {type(exc).__name__}"
    return report


def watchers(*, folders: bool, slugs: set[str] | None = None) -> dict[str, Any]:
    """Folder watchers by their heartbeats: how many, how many stale or failing; with `folders`, one row each
    (restricted to `slugs` when given: an owner sees the folders of their experiments)."""
    from experiments.models import WatcherHeartbeat

    try:
        rows = list(WatcherHeartbeat.objects.order_by("folder"))
    except Exception as exc:
        return {"error": type(exc).__name__}
    now = timezone.now()

    def row(beat: WatcherHeartbeat) -> dict[str, Any]:
        age = (now - beat.last_pass_at).total_seconds() if beat.last_pass_at else None
        return {"folder": beat.folder, "experiment": beat.experiment_slug, "mode": beat.mode, "host": beat.host,
                "pid": beat.pid, "last_pass_at": beat.last_pass_at, "seconds_since_pass": age,
                "lag_seconds": beat.lag_seconds, "new_events": beat.new_events, "failures": beat.failures,
                "last_error": beat.last_error, "stale": age is None or age > STALE_AFTER.total_seconds()}  # fmt: skip

    reports = [row(beat) for beat in rows]
    summary: dict[str, Any] = {
        "count": len(reports), "failing": sum(1 for r in reports if r["failures"]),
        "stale": sum(1 for r in reports if r["stale"]),
        "max_lag_seconds": max((r["lag_seconds"] for r in reports), default=0),
    }  # fmt: skip
    if folders:
        summary["folders"] = [r for r in reports if slugs is None or r["experiment"] in slugs]
    return summary


def report(*, folders: bool = False, slugs: set[str] | None = None) -> dict[str, Any]:
    """The whole health report; `ok` is the database's (the other parts degrade features, not the service)."""
    body = database()
    body["channel_layer"] = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
    if body["ok"]:
        body["embedding"] = embedding()
        body["watchers"] = watchers(folders=folders, slugs=slugs)
    return body
