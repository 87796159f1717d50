"""Curation benchmark: curate a run tree with many digests, then curate it again (idempotent pass).

    .venv/bin/python bench/curation.py            # 50, 200, 800 digests per tree
    .venv/bin/python bench/curation.py --quick    # 50, 200

Each tree is a root run plus 4 sub-manager runs; every digest carries 10 key facts drawn from a pool, so
many facts are confirmed by many digests (the runtime keeps the last 10 facts per digest). Digests go in
through the real ingest path (append_events → digest projector) into `awp_bench_curation`. Printed: the
first curation (proposals + evidence created), the second (nothing new) and the prior-block render time.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, print_table, setup_django  # noqa: E402


def build_tree(n_digests: int, seed: int):  # type: ignore[no-untyped-def]
    from experiments.ingest import EventIn, append_events
    from experiments.models import Experiment, Run

    rng = random.Random(seed)
    experiment = Experiment.objects.create(slug=f"bench-curation-{seed}-{n_digests}", name="bench")
    root = Run.objects.create(experiment=experiment, run_id=f"root-{seed}")
    runs = [root] + [Run.objects.create(experiment=experiment, run_id=f"sub-{seed}-{i}", parent=root, depth=1) for i in range(4)]
    pool = [f"worker_{i % 7}: finding number {i} about the number 42" for i in range(n_digests // 2 + 20)]
    for index in range(n_digests):
        run = runs[index % len(runs)]
        record = {
            "child_digest_hashes": [],
            "confidence_trend": [round(rng.uniform(0.8, 1.0), 2)],
            "goal": "Collect facts about 42.",
            "iteration": index // len(runs) + 1,
            "key_facts": rng.sample(pool, 10),
            "open_questions": [],
            "run_id": run.run_id,
        }
        sha = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        append_events(run, [EventIn(kind="digest", dedupe_key=f"digest:{sha}", payload={"sha": sha, "record": record})])
    return experiment, root


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    setup_django("curation")
    from memory.curation.models import Evidence, Proposal
    from memory.curation.prior import prior_run_block
    from memory.curation.services import curate_run

    print(machine())
    rows = []
    for n in [50, 200] if args.quick else [50, 200, 800]:
        experiment, root = build_tree(n, seed=int(time.time()) % 100000)
        start = time.perf_counter()
        first = curate_run(run=root)
        first_s = time.perf_counter() - start
        start = time.perf_counter()
        second = curate_run(run=root)
        second_s = time.perf_counter() - start
        Proposal.objects.filter(experiment=experiment).update(status="approved")
        start = time.perf_counter()
        block = prior_run_block(experiment)
        prior_ms = (time.perf_counter() - start) * 1000
        evidence = Evidence.objects.filter(proposal__experiment=experiment).count()
        rows.append([n, first.proposed, evidence, f"{first_s * 1000:.0f}", second.proposed, f"{second_s * 1000:.0f}", f"{prior_ms:.1f}", len(block)])
    print_table(
        ["digests", "proposed", "evidence rows", "1st curation ms", "2nd: new", "2nd curation ms", "prior block ms", "block chars"],
        rows,
    )


if __name__ == "__main__":
    main()
