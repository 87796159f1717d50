"""Ingest throughput: events/s through POST /api/v1/ingest (daphne on loopback, token auth) at batch sizes
1 / 100 / 1000 / 5000, against raw COPY of the same rows into a bare table with one index on the same server.

    python bench/ingest.py            # 100k events per batch size (batch size 1: 500, under the auth rate limit)
    python bench/ingest.py --quick    # 20k events (batch size 1: 300); a few minutes at most
    python bench/ingest.py --quick --profile   # also cProfile one in-process batch of 5,000 of each size

Two event sizes, each against raw COPY of the same rows (same payloads) in the same run:
- small (~150 bytes: metric and log lines);
- agent-sized (~1 KB: a model call's messages and attributes as a `log`, a tool call's arguments and result as
  a `tool.call`, every 20th a `worker.complete` with a summary: text the secret detector and the projectors read).

Batch 5,000 is pushed again, twice as many events, with `Prefer: respond-async` (experiments.inbox) and a
drainer process (`manage.py awp_drain`) beside daphne: *accepted* is the rate at which the batches are answered
202 (the body parsed, checked and stored durably), *accepted → applied* the rate until the drainer has put every
one of them into the ledger, scanned and projected (from the first request to the last receipt settled). Raw COPY
is timed three times and its best counts.

Prints a table per size and ends with, for small events and then agent-sized ones (`agent_` prefix), each as
(events/s at batch 5000) ÷ (events/s of raw COPY of the same rows):
- `ratio`: accepted with `Prefer: respond-async` (what a pushing agent waits for);
- `applied_ratio`: accepted → applied (the ledger's own throughput, the drainer working beside daphne);
- `sync_ratio`: appended before the answer (200 with seqs, no preference).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, child_env, daphne, machine, print_table, setup_django  # noqa: E402


def make_events(n: int, run_tag: str) -> list[dict[str, Any]]:
    """Events shaped like a real run's metric and log lines."""
    return [
        {
            "kind": "metric.confidence" if i % 3 else "log",
            "idempotency_key": f"{run_tag}-{i}",
            "agent_id": f"worker_{i % 4}",
            "iteration": i // 100,
            "ts": 1795300746.0 + i / 1000,
            "payload": {"mean": 0.9, "per_worker": [{"name": f"worker_{i % 4}", "confidence": 0.9}], "msg": f"event {i}", "category": "worker"},
        }
        for i in range(n)
    ]


SENTENCES = [
    "Summarise the failing test and propose the smallest fix that keeps the public API unchanged.",
    "The tool returned a stack trace pointing at the retry loop in the HTTP client; the timeout is not propagated.",
    "Read the configuration file, list every key under [database], and report which ones the code never reads.",
    "Confidence is moderate: the benchmark moved by four percent, inside the noise of the previous three runs.",
    "Search the repository for callers of parse_time and check that each passes an aware datetime.",
]


def agent_events(n: int, run_tag: str) -> list[dict[str, Any]]:
    """~1 KB events shaped like an agent's: model calls (messages, attributes), tool calls (arguments), results."""
    out: list[dict[str, Any]] = []
    for i in range(n):
        worker = f"worker_{i % 4}"
        text = " ".join(SENTENCES[(i + k) % len(SENTENCES)] for k in range(2))
        common = {"idempotency_key": f"{run_tag}-{i}", "agent_id": worker, "iteration": i // 100, "ts": 1795300746.0 + i / 1000}
        if i % 20 == 19:
            payload = {"confidence": 0.8, "summary": f"{text} Step {i} done.", "findings": [SENTENCES[i % 5], SENTENCES[(i + 3) % 5]], "tokens": 900 + i % 300}
            out.append({"kind": "worker.complete", **common, "payload": payload})
        elif i % 2:
            payload = {
                "tool": "read_file" if i % 3 else "search_code",
                "arguments": {"path": f"src/module_{i % 37}/handler.py", "query": SENTENCES[i % 5], "max_lines": 200, "context": text},
                "result": {"ok": True, "lines": 120 + i % 50, "excerpt": f"def handler_{i}(request):\n    return respond(request, timeout=30)\n" * 3},
                "duration_ms": 12.5 + i % 40, "worker_id": worker,
            }  # fmt: skip
            out.append({"kind": "tool.call", **common, "payload": payload})
        else:
            payload = {
                "level": "info", "category": "llm", "msg": "model call",
                "fields": {
                    "gen_ai.system": "anthropic", "gen_ai.request.model": "claude-sonnet", "gen_ai.usage.input_tokens": 1800 + i % 500,
                    "gen_ai.usage.output_tokens": 220 + i % 90, "gen_ai.response.finish_reasons": ["end_turn"], "latency_ms": 850 + i % 400,
                    "messages": [
                        {"role": "system", "content": "You are a careful software agent. Answer with the smallest correct change."},
                        {"role": "user", "content": text},
                        {"role": "assistant", "content": SENTENCES[(i + 2) % 5] + f" (call {i})"},
                    ],
                },
            }  # fmt: skip
            out.append({"kind": "log", **common, "payload": payload})
    return out


def push(base: str, token: str, run_id: str, events: list[dict[str, Any]], batch: int, *, prefer_async: bool = False) -> tuple[float, list[int]]:
    """Seconds to push `events` in batches (and the accepted batches' ids with `prefer_async`)."""
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    start_body = {"run_id": run_id, "events": [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "bench"}}]}
    assert session.post(f"{base}/api/v1/ingest", data=json.dumps(start_body), timeout=60).status_code == 200
    if prefer_async:
        session.headers["Prefer"] = "respond-async"
    # Bodies are serialised before the clock starts: this measures the server, not the client's json.dumps.
    bodies = [json.dumps({"run_id": run_id, "events": events[i : i + batch]}) for i in range(0, len(events), batch)]
    accepted: list[int] = []
    started = time.perf_counter()
    for body in bodies:
        response = session.post(f"{base}/api/v1/ingest", data=body, timeout=300)
        while response.status_code == 429:  # the token-auth rate limit (600 requests/min per client) counts in the figure
            time.sleep(float(response.json().get("retry_after", 1)))
            response = session.post(f"{base}/api/v1/ingest", data=body, timeout=300)
        if response.status_code != (202 if prefer_async else 200):
            raise SystemExit(f"ingest failed: {response.status_code} {response.text[:300]}")
        if prefer_async:
            accepted.append(response.json()["batch"])
    return time.perf_counter() - started, accepted


def settled_after(ids: list[int], started: float, timeout: float = 600) -> float:
    """Seconds from `started` until every accepted batch in `ids` is settled; exits if one was refused."""
    from experiments.models import AcceptedBatch

    deadline = time.monotonic() + timeout
    while AcceptedBatch.objects.filter(pk__in=ids, state=AcceptedBatch.PENDING).exists():
        if time.monotonic() > deadline:
            raise SystemExit("the drainer did not apply the accepted batches in time")
        time.sleep(0.01)
    elapsed = time.perf_counter() - started
    refused = list(AcceptedBatch.objects.filter(pk__in=ids).exclude(state=AcceptedBatch.APPLIED).values_list("result", flat=True))
    if refused:
        raise SystemExit(f"accepted batches were refused: {refused[:1]}")
    return elapsed


@contextmanager
def drainer(database_url: str) -> Iterator[None]:
    """`manage.py awp_drain` beside daphne, until it holds the drainer lock (accepts are applied, not refused)."""
    from experiments.inbox import drainer_alive

    command = [sys.executable, "manage.py", "awp_drain", "--poll", "0.5", "-v", "0"]
    proc = subprocess.Popen(command, cwd=ROOT, env=child_env(database_url))
    try:
        deadline = time.monotonic() + 60
        while not drainer_alive():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the drainer did not start")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def raw_copy(events: list[dict[str, Any]]) -> float:
    """COPY the rows of `events` (same payloads) into a bare table with one (run_id, seq) index, as fast as Postgres goes."""
    from django.db import connection

    now = datetime.now(tz=UTC)
    rows = [
        (1, i + 1, e["kind"], e["agent_id"], e["iteration"], 0, now, now, json.dumps(e["payload"]), f"key:{e['idempotency_key']}")
        for i, e in enumerate(events)
    ]
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_raw_copy")
        cursor.execute(
            "CREATE TABLE bench_raw_copy (run_id bigint, seq bigint, kind varchar(64), agent_id varchar(200), iteration int, depth smallint,"
            " occurred_at timestamptz, recorded_at timestamptz, payload jsonb, dedupe_key varchar(300))"
        )
        cursor.execute("CREATE UNIQUE INDEX ON bench_raw_copy (run_id, seq)")
        raw = cursor.cursor
        started = time.perf_counter()
        with raw.copy("COPY bench_raw_copy FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        connection.connection.commit() if not connection.get_autocommit() else None
        elapsed = time.perf_counter() - started
        cursor.execute("DROP TABLE bench_raw_copy")
    return elapsed


def profile_batch(secret: str, events: list[dict[str, Any]], label: str) -> None:
    """cProfile one batch through the API view in this process (Django's test client: no socket, same view)."""
    import cProfile
    import io
    import pstats

    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}", HTTP_HOST="127.0.0.1")
    run_id = f"profile-{label}-{uuid.uuid4().hex[:8]}"
    start = {"run_id": run_id, "events": [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "bench"}}]}
    assert client.post("/api/v1/ingest", data=json.dumps(start), content_type="application/json").status_code == 200
    body = json.dumps({"run_id": run_id, "events": events})
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    response = client.post("/api/v1/ingest", data=body, content_type="application/json")
    profiler.disable()
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.content[:300]
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    print(f"\n## profile: one {label} batch of {len(events)} in process, {elapsed * 1000:.0f} ms wall\n")
    print("\n".join(line for line in out.getvalue().splitlines()[:60] if line.strip()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--profile", action="store_true", help="also cProfile one in-process batch of 5,000 per event size")
    parser.add_argument("--only", choices=["small", "agent"], help="one event size only")
    args = parser.parse_args()
    url = setup_django("ingest")
    from django.conf import settings

    from experiments.models import ApiToken, Experiment

    total = 20_000 if args.quick else 100_000
    kinds = {"small": make_events, "agent": agent_events}
    if args.only:
        kinds = {args.only: kinds[args.only]}
    experiment = Experiment.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="ingest benchmark")
    _token, secret = ApiToken.issue(experiment=experiment, name="bench", scopes=["ingest"])
    print(f"# ingest benchmark · {machine()} · max batch {settings.AWP_INGEST_MAX_BATCH}")
    ratios: dict[str, float] = {}
    for name, make in kinds.items():
        sample = make(total, "size")
        size_bytes = sum(len(json.dumps(e)) for e in sample) / len(sample)
        sizes = {1: 300 if args.quick else 500, 100: total, 1000: total, 5000: total} if name == "small" else {100: total // 2, 1000: total, 5000: total}
        rows: list[list[Any]] = []
        rates: dict[int, float] = {}
        with daphne(url) as base:
            for size, n in sizes.items():
                tag = uuid.uuid4().hex[:8]
                elapsed, _ = push(base, secret, f"bench-{name}-{size}-{tag}", make(n, tag), size)
                rates[size] = n / elapsed
                rows.append([f"HTTP batch {size}", n, elapsed, rates[size]])
            with drainer(url):
                tag = uuid.uuid4().hex[:8]
                n = 2 * sizes[5000]  # eight batches at least: one stalled by a checkpoint's fsync is an eighth
                started = time.perf_counter()
                elapsed, ids = push(base, secret, f"bench-{name}-async-{tag}", make(n, tag), 5000, prefer_async=True)
                applied = settled_after(ids, started)
                rates[-1], rates[-2] = n / elapsed, n / applied
                rows.append(["HTTP batch 5000, Prefer: respond-async: accepted", n, elapsed, rates[-1]])
                rows.append(["the same, accepted → applied by the drainer", n, applied, rates[-2]])
        copy_elapsed = min(raw_copy(sample) for _ in range(3))  # the baseline at its best: a stricter ratio, a steadier one
        copy_rate = total / copy_elapsed
        rows.append(["raw COPY of the same rows (bare table, 1 index)", total, copy_elapsed, copy_rate])
        print(f"\n## {name} events (~{size_bytes:,.0f} bytes of JSON each)\n")
        print_table(["path", "events", "seconds", "events/s"], rows)
        ratios[name] = rates[-1] / copy_rate
        ratios[f"{name}_applied"] = rates[-2] / copy_rate
        ratios[f"{name}_sync"] = rates[5000] / copy_rate
        if args.profile:
            profile_batch(secret, make(5000, uuid.uuid4().hex[:8]), name)
    print()
    for name, prefix in (("small", ""), ("agent", "agent_")):
        if name in ratios:
            print(f"{prefix}ratio {ratios[name]:.3f}")
            print(f"{prefix}applied_ratio {ratios[name + '_applied']:.3f}")
            print(f"{prefix}sync_ratio {ratios[name + '_sync']:.3f}")


if __name__ == "__main__":
    main()
