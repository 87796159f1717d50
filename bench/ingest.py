"""Ingest throughput: events/s through POST /api/v1/ingest (daphne on loopback, token auth) at batch sizes
1 / 100 / 1000 / 5000, against raw COPY of the same rows into a bare table with one index on the same server.

    python bench/ingest.py            # 100k events per batch size (batch size 1: 500, under the auth rate limit)
    python bench/ingest.py --quick    # 20k events (batch size 1: 300); a few minutes at most

Prints a table and ends with `ratio <x>` = (events/s at batch 5000) ÷ (events/s of raw COPY).
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import requests
from common import daphne, machine, print_table, setup_django


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


def push(base: str, token: str, run_id: str, events: list[dict[str, Any]], batch: int) -> float:
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    start_body = {"run_id": run_id, "events": [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "bench"}}]}
    assert session.post(f"{base}/api/v1/ingest", data=json.dumps(start_body), timeout=60).status_code == 200
    # Bodies are serialised before the clock starts: this measures the server, not the client's json.dumps.
    bodies = [json.dumps({"run_id": run_id, "events": events[i : i + batch]}) for i in range(0, len(events), batch)]
    started = time.perf_counter()
    for body in bodies:
        response = session.post(f"{base}/api/v1/ingest", data=body, timeout=300)
        while response.status_code == 429:  # the token-auth rate limit (600 requests/min per client) counts in the figure
            time.sleep(float(response.json().get("retry_after", 1)))
            response = session.post(f"{base}/api/v1/ingest", data=body, timeout=300)
        if response.status_code != 200:
            raise SystemExit(f"ingest failed: {response.status_code} {response.text[:300]}")
    return time.perf_counter() - started


def raw_copy(n: int) -> float:
    """COPY n ledger-shaped rows into a bare table with one (run_id, seq) index, as fast as Postgres goes."""
    from django.db import connection

    now = datetime.now(tz=UTC)
    rows = [
        (1, i + 1, "metric.confidence", f"worker_{i % 4}", i // 100, 0, now, now,
         json.dumps({"mean": 0.9, "per_worker": [{"name": f"worker_{i % 4}", "confidence": 0.9}], "msg": f"event {i}", "category": "worker"}), f"key:{i}")
        for i in range(n)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    url = setup_django("ingest")
    from django.conf import settings

    from experiments.models import ApiToken, Experiment

    total = 20_000 if args.quick else 100_000
    sizes = {1: 300 if args.quick else 500, 100: total, 1000: total, 5000: total}
    experiment = Experiment.objects.create(slug=f"bench-{uuid.uuid4().hex[:8]}", name="ingest benchmark")
    _token, secret = ApiToken.issue(experiment=experiment, name="bench", scopes=["ingest"])
    print(f"# ingest benchmark · {machine()} · max batch {settings.AWP_INGEST_MAX_BATCH}")
    rows: list[list[Any]] = []
    rates: dict[int, float] = {}
    with daphne(url) as base:
        for size, n in sizes.items():
            tag = uuid.uuid4().hex[:8]
            elapsed = push(base, secret, f"bench-{size}-{tag}", make_events(n, tag), size)
            rates[size] = n / elapsed
            rows.append([f"HTTP batch {size}", n, elapsed, rates[size]])
    copy_elapsed = raw_copy(total)
    copy_rate = total / copy_elapsed
    rows.append(["raw COPY (bare table, 1 index)", total, copy_elapsed, copy_rate])
    print_table(["path", "events", "seconds", "events/s"], rows)
    print(f"ratio {rates[5000] / copy_rate:.3f}")


if __name__ == "__main__":
    main()
