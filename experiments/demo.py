"""Replay the recorded AWP run in experiments/demo_data/ into a folder, file by file, as the runtime wrote it.

The copies keep the recorded run's times: each file's mtime is when the run wrote it (from the run's own records),
so the demo run's Timeline never mixes the replay's clock with the record's.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from experiments.awp import layout
from experiments.awp.events import file_event, line_event
from experiments.awp.tail import parse_lines
from experiments.awp.timing import Read, stamp

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"


def replay_plan() -> list[str]:
    """Relative paths in the order the runtime wrote them."""
    return list(json.loads((DEMO_DATA / "replay.json").read_text())["order"])


def written_at() -> dict[str, float]:
    """When the recorded run wrote each file of the replay plan (epoch seconds), from the run's own records."""
    root = DEMO_DATA / "workflow"
    reads = []
    for source in layout.scan_workflow(root).files:
        raw = (root / source.relpath).read_bytes()
        if source.is_jsonl:
            reads += [Read(line_event(source, line.value, line.offset), (source.relpath, line.offset)) for line in parse_lines(raw, 0)[0]]
        else:
            reads.append(Read(file_event(source, json.loads(raw)), (source.relpath, 0)))
    times: dict[str, float] = {}
    for read in stamp(reads):
        rel, when = read.order[0], read.spec.occurred_at
        if when is not None:
            times[rel] = max(times.get(rel, 0.0), when.timestamp())
    # Files that are no events (Markdown, inputs) were written when the file before them in the plan was.
    out, previous = {}, min(times.values())
    for rel in replay_plan():
        previous = out[rel] = times.get(rel, previous)
    return out


def _write_atomic(path: Path, data: bytes, mtime: float) -> None:
    # Like the runtime: <file>.tmp then os.replace, so a follower never sees half a JSON file (nor a wrong mtime).
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.utime(tmp, (mtime, mtime))
    os.replace(tmp, path)


def _append_missing_lines(source: Path, target: Path, upto: int, mtime: float) -> None:
    """Make `target` hold the first `upto` lines of `source`, appending only what is missing (never rewriting)."""
    lines = source.read_bytes().splitlines(keepends=True)[:upto]
    wanted = b"".join(lines)
    have = target.read_bytes() if target.exists() else b""
    if len(have) >= len(wanted) or not wanted.startswith(have):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab") as handle:
        handle.write(wanted[len(have) :])
    os.utime(target, (mtime, mtime))


def replay_demo(target: Path, *, delay: float = 0.4, should_stop: Callable[[], bool] = lambda: False) -> int:
    """Copy the recorded run into `target` step by step; files already there unchanged are skipped. Returns steps done."""
    plan = replay_plan()
    streams = [rel for rel in plan if rel.endswith(".jsonl")]
    files = [rel for rel in plan if not rel.endswith(".jsonl")]
    totals = {rel: len((DEMO_DATA / "workflow" / rel).read_bytes().splitlines()) for rel in streams}
    when = written_at()
    steps = 0
    for index, rel in enumerate(files, start=1):
        if should_stop():
            break
        source, dest = DEMO_DATA / "workflow" / rel, target / rel
        data = source.read_bytes()
        changed = not dest.exists() or dest.read_bytes() != data
        if changed:
            _write_atomic(dest, data, when[rel])
        # JSONL streams grow alongside the files, a few lines at a time, append-only as the runtime does.
        for stream in streams:
            _append_missing_lines(DEMO_DATA / "workflow" / stream, target / stream, round(totals[stream] * index / len(files)), when[rel])
        if changed:
            steps += 1
            time.sleep(delay)
    return steps
