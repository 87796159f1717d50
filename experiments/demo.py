"""Replay the recorded AWP run in experiments/demo_data/ into a folder, file by file, as the runtime wrote it.

The copies keep the recorded run's times: each file's mtime is when the run wrote it (from the run's own records),
so the demo run's Timeline never mixes the replay's clock with the record's.

A replay may take a new run id (`as_run`): every path and text naming the recorded run names the new one, and each
digest is renamed by the SHA-256 of its rewritten record, so the copy is a run of its own that ingest accepts.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from experiments.awp import layout
from experiments.awp.events import file_event, line_event
from experiments.awp.tail import parse_lines
from experiments.awp.timing import Read, stamp

DEMO_DATA = Path(__file__).resolve().parent / "demo_data"
RECORDED_RUN = "2026-11-22_00-29-15_3992cbc1"


def new_run_id() -> str:
    """A run id of the recorded run's shape (its start time kept, a new suffix): the runtime's own format."""
    return f"{RECORDED_RUN.rsplit('_', 1)[0]}_{secrets.token_hex(4)}"


def as_run(rel: str, data: bytes, run_id: str) -> tuple[str, bytes]:
    """The file `rel` with contents `data` as the run `run_id` would have written it."""
    if run_id == RECORDED_RUN:
        return rel, data
    rel, data = rel.replace(RECORDED_RUN, run_id), data.replace(RECORDED_RUN.encode(), run_id.encode())
    if "/digest/" in rel and rel.endswith(".json"):
        record = json.loads(data)
        sha = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        rel = f"{rel.rsplit('/', 1)[0]}/{sha}.json"
    return rel, data


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


def _append_missing_lines(data: bytes, target: Path, upto: int, mtime: float) -> None:
    """Make `target` hold the first `upto` lines of `data`, appending only what is missing (never rewriting)."""
    lines = data.splitlines(keepends=True)[:upto]
    wanted = b"".join(lines)
    have = target.read_bytes() if target.exists() else b""
    if len(have) >= len(wanted) or not wanted.startswith(have):
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("ab") as handle:
        handle.write(wanted[len(have) :])
    os.utime(target, (mtime, mtime))


def replay_demo(target: Path, *, delay: float = 0.4, should_stop: Callable[[], bool] = lambda: False, run_id: str = RECORDED_RUN) -> int:
    """Copy the recorded run into `target` step by step (as `run_id`); files already there unchanged are skipped.
    Returns steps done."""
    plan = replay_plan()
    copies = {rel: as_run(rel, (DEMO_DATA / "workflow" / rel).read_bytes(), run_id) for rel in plan}
    streams = [rel for rel in plan if rel.endswith(".jsonl")]
    files = [rel for rel in plan if not rel.endswith(".jsonl")]
    totals = {rel: len(copies[rel][1].splitlines()) for rel in streams}
    when = written_at()
    steps = 0
    for index, rel in enumerate(files, start=1):
        if should_stop():
            break
        dest_rel, data = copies[rel]
        dest = target / dest_rel
        changed = not dest.exists() or dest.read_bytes() != data
        if changed:
            _write_atomic(dest, data, when[rel])
        # JSONL streams grow alongside the files, a few lines at a time, append-only as the runtime does.
        for stream in streams:
            stream_rel, stream_data = copies[stream]
            _append_missing_lines(stream_data, target / stream_rel, round(totals[stream] * index / len(files)), when[rel])
        if changed:
            steps += 1
            time.sleep(delay)
    return steps
