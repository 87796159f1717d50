"""Replay the recorded AWP run in experiments/demo_data/ into a folder, file by file, as the runtime wrote it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"


def replay_plan() -> list[str]:
    """Relative paths in the order the runtime wrote them."""
    return list(json.loads((DEMO_DATA / "replay.json").read_text())["order"])


def _write_atomic(path: Path, data: bytes) -> None:
    # Like the runtime: <file>.tmp then os.replace, so a follower never sees half a JSON file.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _append_missing_lines(source: Path, target: Path, upto: int) -> None:
    """Make `target` hold the first `upto` lines of `source`, appending only what is missing (never rewriting)."""
    lines = source.read_bytes().splitlines(keepends=True)[:upto]
    wanted = b"".join(lines)
    have = target.read_bytes() if target.exists() else b""
    if len(have) >= len(wanted) or not wanted.startswith(have):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab") as handle:
        handle.write(wanted[len(have) :])


def replay_demo(target: Path, *, delay: float = 0.4, should_stop: Callable[[], bool] = lambda: False) -> int:
    """Copy the recorded run into `target` step by step; files already there unchanged are skipped. Returns steps done."""
    plan = replay_plan()
    streams = [rel for rel in plan if rel.endswith(".jsonl")]
    files = [rel for rel in plan if not rel.endswith(".jsonl")]
    totals = {rel: len((DEMO_DATA / "workflow" / rel).read_bytes().splitlines()) for rel in streams}
    steps = 0
    for index, rel in enumerate(files, start=1):
        if should_stop():
            break
        source, dest = DEMO_DATA / "workflow" / rel, target / rel
        data = source.read_bytes()
        changed = not dest.exists() or dest.read_bytes() != data
        if changed:
            _write_atomic(dest, data)
        # JSONL streams grow alongside the files, a few lines at a time, append-only as the runtime does.
        for stream in streams:
            _append_missing_lines(DEMO_DATA / "workflow" / stream, target / stream, round(totals[stream] * index / len(files)))
        if changed:
            steps += 1
            time.sleep(delay)
    return steps
