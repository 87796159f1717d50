"""State-at-seq benchmark: nearest snapshot + tail vs a full replay, at 10k, 100k and 1M deltas.

    .venv/bin/python bench/replay.py            # 10k, 100k, 1M deltas
    .venv/bin/python bench/replay.py --quick    # 10k, 100k

For each size a run gets N state deltas (1,000 distinct paths under 20 agents, added then modified over
and over), snapshots every AWP_SNAPSHOT_EVERY deltas (as the projector writes them), loaded with COPY into
the benchmark database `awp_bench_replay`. Then `state.services.state_at_seq` (what the API and the State
tab call) is timed at random seqs below the head, and compared with one full replay from seq 1. A few
answers are checked against the full replay on the way. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, print_table, setup_django, summary_ms, time_calls  # noqa: E402

PATHS = [f"$.agent{a}.field{f}" for a in range(20) for f in range(50)]


def make_changes(n: int) -> list:
    """N changes: the first 1,000 add a path each, the rest modify them round-robin."""
    from state.replay import Change

    out = []
    for i in range(n):
        op = "add" if i < len(PATHS) else "modify"
        value = {"i": i, "note": f"value {i}"} if i % 10 == 0 else i
        out.append(Change(seq=i + 1, index=0, op=op, path=PATHS[i % len(PATHS)], value=value, agent_id=f"agent{(i % len(PATHS)) // 50}"))
    return out


def load(run, changes: list, every: int) -> float:
    """COPY the deltas and insert the snapshots and head; returns seconds."""
    from django.db import connection

    from state.models import Snapshot, StateHead
    from state.replay import SharedDict, take_snapshots

    started = time.perf_counter()
    columns = "run_id, seq, index, agent_id, round, weight, op, path, value, provenance, outcome, code"
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY state_statedelta ({columns}) FROM STDIN") as copy:
        for c in changes:
            copy.write_row((run.pk, c.seq, 0, c.agent_id, 1, 1.0, c.op, c.path, json.dumps(c.value), "bench", "applied", ""))
    snapshots = take_snapshots(changes, every)
    Snapshot.objects.bulk_create(
        [Snapshot(run=run, seq=s.seq, state=s.state, delta_count=s.seq) for s in snapshots], batch_size=200
    )
    final = SharedDict().replay(snapshots[-1].state if snapshots else {}, [c for c in changes if not snapshots or c.seq > snapshots[-1].seq])
    StateHead.objects.create(run=run, seq=len(changes), round=1, delta_count=len(changes), state=final)
    type(run).objects.filter(pk=run.pk).update(last_seq=len(changes))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE state_statedelta")
        cursor.execute("ANALYZE state_snapshot")
    return time.perf_counter() - started


def full_replay(run) -> dict:
    """Read every applied delta of the run and fold them (what a store without snapshots must do)."""
    from state.models import StateDelta
    from state.replay import Change, SharedDict

    rows = StateDelta.objects.applied().filter(run=run).order_by("seq", "index").values_list("seq", "index", "op", "path", "value")
    return SharedDict().replay({}, (Change(s, i, op, p, v) for s, i, op, p, v in rows.iterator(chunk_size=20000)))


def drop(run) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("state_statedelta", "state_snapshot", "state_statehead"):
            cursor.execute(f"DELETE FROM {table} WHERE run_id = %s", [run.pk])
        cursor.execute("DELETE FROM experiments_run WHERE id = %s", [run.pk])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10k and 100k only")
    args = parser.parse_args()
    setup_django("replay")
    from django.conf import settings

    from experiments.models import Experiment, Run
    from state.replay import SharedDict
    from state.services import state_at_seq

    every = settings.AWP_SNAPSHOT_EVERY
    sizes = [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000]
    experiment, _ = Experiment.objects.get_or_create(slug="bench-replay", defaults={"name": "bench replay"})
    print(f"# state at seq · {machine()} · snapshot every {every} deltas")
    rows = []
    rng = random.Random(42)
    for n in sizes:
        for stale in Run.objects.filter(experiment=experiment, run_id=f"replay-{n}"):
            drop(stale)  # left over from an interrupted earlier run
        run = Run.objects.create(experiment=experiment, run_id=f"replay-{n}", engine="api")
        changes = make_changes(n)
        load_s = load(run, changes, every)
        seqs = [rng.randint(1, n - 1) for _ in range(60)]
        queue = iter(seqs * 2)
        samples = time_calls(lambda run=run, queue=queue: state_at_seq(run=run, seq=next(queue)), repeat=50, warmup=5)
        for seq in rng.sample(seqs, 3):
            expected = SharedDict().replay({}, changes[:seq])
            assert state_at_seq(run=run, seq=seq)[1] == expected, f"state at {seq} differs from the full replay"
        started = time.perf_counter()
        full = full_replay(run)
        full_s = time.perf_counter() - started
        assert full == state_at_seq(run=run)[1]
        stats = summary_ms(samples)
        rows.append([f"{n:,}", f"{load_s:.1f} s", stats["p50"], stats["p95"], full_s * 1000, full_s * 1000 / stats["p50"]])
        drop(run)
    print_table(["deltas", "load (COPY)", "state-at-seq p50 ms", "p95 ms", "full replay ms", "full / p50"], rows)
    print("State at seq reads one snapshot and at most K deltas, so it stays flat as runs grow; the full replay grows with N.")


if __name__ == "__main__":
    main()
