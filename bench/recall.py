"""Recall benchmark: the recall block of an agent with 10k episodes (goal: p95 < 50 ms).

    .venv/bin/python bench/recall.py            # 10k own episodes + 2k of a peer, 200 calls per case
    .venv/bin/python bench/recall.py --quick    # the same with 60 calls per case

Episodes go in through the real ingest path (append_events → episode projector) into `awp_bench_recall`:
20 runs of 500 iterations with one `worker.complete` of the agent and one decision each, plus a peer whose
results the selective rule partly shares. Timed: the recall service (`recall_for`), with and without a query,
and the whole API call (`POST memory/recall` in process: auth, access check, envelope, redaction). The
baseline is the bare SQL read of the same rows. Figures are printed, never asserted.
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

PROTOCOL = """
state:
  sharing:
    strategy: selective
    rules:
      - {from: peer, to: [agent], fields: [findings]}
memory:
  salience: {top_k: 8}
"""
# A vocabulary of 2,000 made-up words: episode texts share some words, as real results do, not all of them.
WORDS = [f"{a}{b}{c}{n}" for a in ("ba", "ko", "mi", "tu", "re", "sa", "lo", "ne") for b in ("ran", "vel", "tis", "mod", "qua")
         for c in ("a", "o", "us", "en", "ix", "or", "um", "et", "ia", "on") for n in range(5)]  # fmt: skip


QUERY = "barana0 kovelus1 mitisix2"


def build(runs: int, iterations: int, seed: int):  # type: ignore[no-untyped-def]
    from experiments.ingest import EventIn, append_events
    from experiments.models import Experiment, Run
    from experiments.protocol import parse_protocol

    rng = random.Random(seed)
    slug = f"bench-recall-v2-{runs}x{iterations}"
    found = Experiment.objects.filter(slug=slug, name="bench (complete)").first()
    if found is not None:
        return found  # ingesting 20k events takes minutes on a busy machine: a finished build is reused
    Experiment.objects.filter(slug=slug).delete()
    experiment = Experiment.objects.create(slug=slug, name="bench", protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    for r in range(runs):
        run = Run.objects.create(experiment=experiment, run_id=f"run-{seed}-{r}")
        events = [EventIn("run.start", "key:start", {"task": "Learn things."})]
        for i in range(1, iterations + 1):
            text = " ".join(rng.choice(WORDS) for _ in range(12))
            events.append(EventIn("worker.complete", f"key:a{i}", {"summary": f"Iteration {i}: {text}", "confidence": 0.8},
                                  agent_id="agent", iteration=i))  # fmt: skip
            events.append(EventIn("iteration.decision", f"key:d{i}", {"decision": "delegate", "reasoning": text}, iteration=i))
            if i % 10 == 0:
                events.append(EventIn("worker.complete", f"key:p{i}", {"summary": "peer", "findings": [text], "notes": text},
                                      agent_id="peer", iteration=i))  # fmt: skip
        for start in range(0, len(events), 1000):
            append_events(run, events[start : start + 1000])
    Experiment.objects.filter(pk=experiment.pk).update(name="bench (complete)")
    return experiment


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    setup_django("recall")
    from django.db import connection
    from django.test import Client

    from memory.episodes import recall_for
    from memory.models import Episode
    from tests.factories import make_token

    repeat = 60 if args.quick else 200
    print(machine(), flush=True)
    started = time.perf_counter()
    experiment = build(runs=20, iterations=500, seed=int(time.time()) % 100000)
    build_s = time.perf_counter() - started
    own = Episode.objects.filter(experiment=experiment, agent_id="agent").count()
    total = Episode.objects.filter(experiment=experiment).count()
    print(f"episodes: {own:,} of the agent, {total:,} in the experiment (built or reused in {build_s:.0f} s)", flush=True)
    token = make_token(experiment, ["memory:read"])
    client = Client(HTTP_HOST="127.0.0.1")

    def sql_floor() -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT key, agent_id, kind, turn, text FROM memory_episode WHERE experiment_id = %s", [experiment.pk])
            cursor.fetchall()

    def api() -> None:
        response = client.post(f"/api/v1/experiments/{experiment.slug}/memory/recall",
                               json.dumps({"agent_id": "agent", "query": QUERY}),
                               content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")  # fmt: skip
        assert response.status_code == 200, response.content

    cases = [
        ("baseline: SQL read of the rows", sql_floor),
        ("recall_for, no query", lambda: recall_for(experiment=experiment, agent_id="agent")),
        ("recall_for, query", lambda: recall_for(experiment=experiment, agent_id="agent", query=QUERY)),
        ("POST memory/recall (API, query)", api),
    ]
    rows = []
    for name, fn in cases:
        stats = summary_ms(time_calls(fn, repeat=repeat))
        rows.append([name, stats["n"], f"{stats['p50']:.1f}", f"{stats['p95']:.1f}", f"{stats['p99']:.1f}"])
    print_table(["case", "calls", "p50 ms", "p95 ms", "p99 ms"], rows)


if __name__ == "__main__":
    main()
