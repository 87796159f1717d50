"""What each folder watcher last did, for /healthz and the status page: one small JSON file per folder.

Written by the watcher after every pass (a pass runs at least every RESYNC_SECONDS, so an idle watcher still
reports), read by any process on the same machine; a watcher whose process is gone shows as stopped.
Files under AWP_DATA_DIR/watchers/: watchers on other machines report on their own /healthz.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from django.conf import settings


def _dir() -> Path:
    return Path(settings.AWP_DATA_DIR) / "watchers"


def record_pass(folder: Path, *, new_events: int, seconds: float, error: str = "", waiting_since: float | None = None) -> None:
    """Note one pass over `folder`; `waiting_since` is when its oldest unread change was seen (for the lag)."""
    directory = _dir()
    directory.mkdir(parents=True, exist_ok=True)
    now = time.time()
    report = {
        "folder": str(folder), "database": _database(), "pid": os.getpid(), "last_pass_at": now, "pass_seconds": round(seconds, 3),
        "new_events": new_events, "error": error[:300],
        "lag_seconds": round(now - waiting_since, 3) if waiting_since is not None else round(seconds, 3),
    }  # fmt: skip
    target = _path(folder)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(report))
    os.replace(tmp, target)


def _database() -> str:
    """The deployment a report belongs to: several (a test run, `make run`) may share one data folder."""
    return str(settings.DATABASES["default"].get("NAME", ""))


def _path(folder: Path) -> Path:
    key = f"{_database()}\0{folder}"
    return _dir() / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def watcher_id(folder: str) -> str:
    """A short name for a watched folder that does not reveal its path (for /healthz, which needs no login)."""
    return hashlib.sha256(folder.encode()).hexdigest()[:12]


def forget_passes(folders: list[Path]) -> None:
    """A watcher that stops cleanly takes its reports away (one that dies keeps them, shown as stopped)."""
    for folder in folders:
        path = _path(folder)
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            continue


def watcher_reports(now: float | None = None) -> list[dict[str, Any]]:
    """Every watcher's last report for this deployment's database, with its age and whether its process runs."""
    now = time.time() if now is None else now
    out = []
    for path in sorted(_dir().glob("*.json")) if _dir().is_dir() else []:
        try:
            report = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if report.get("database", _database()) != _database():
            continue  # another deployment's (a test run's) watcher in the same data folder
        report["seconds_since_last_pass"] = round(now - float(report.get("last_pass_at", 0)), 1)
        report["running"] = _alive(int(report.get("pid", 0)))
        out.append(report)
    return out


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
