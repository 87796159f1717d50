"""Server time of the pages people open most, with 100k events, 10k proposals and 10k runs in the database.

Django's test client in this process (no network), warm (a few unmeasured requests first), logged in as the
experiment's owner. Prints p50/p95/p99 and the SQL query count of each page, and the baseline: the same
pages for an experiment with a tiny run (10 events, 10 proposals) in the same run, so the table shows what
the data volume costs.

    python bench/pages.py            # 100k events, 10k proposals, 10k runs, 50 timed requests per page
    python bench/pages.py --quick    # 20k events, 2k proposals, 10k runs, 20 timed requests per page
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

from common import machine, print_table, setup_django, summary_ms, time_calls

SLUG = "bench-pages"
SMALL_SLUG = "bench-pages-small"
BATCH = 2000


def events_for(start: int, n: int) -> list[Any]:
    """A delegation loop's mix: decisions, spawns, results, tool calls, board posts, metrics and logs."""
    from experiments.ingest import EventIn

    out = []
    for i in range(start, start + n):
        iteration, slot = divmod(i, 100)
        worker = f"worker_{slot % 4}"
        if slot == 0:
            kind, payload = "iteration.decision", {"decision": "delegate", "reasoning": f"iteration {iteration}", "confidence": 0.8}
        elif slot % 25 == 1:
            kind, payload = "worker.spawn", {"worker_id": worker, "instructions": "Collect facts about 42."}
        elif slot % 25 == 2:
            kind, payload = "worker.complete", {"summary": f"{worker} found fact {i}", "confidence": 0.9}
        elif slot % 25 == 3:
            kind = "board.post"
            payload = {"id": f"b{i}", "ts": 1795300746.0 + i, "topic": "facts", "worker_id": worker, "payload": {"fact": f"fact {i}"}}
        elif slot % 5 == 0:
            kind, payload = "tool.call", {"tool": "search", "args": {"q": f"query {i}"}, "ok": True}
        elif slot % 2:
            kind, payload = "metric.confidence", {"mean": 0.9, "per_worker": [{"name": worker, "confidence": 0.9}]}
        else:
            kind, payload = "log", {"ts": 1795300746.0 + i, "level": "info", "category": "worker", "msg": f"event {i} " + "x" * 120}
        out.append(EventIn(kind=kind, dedupe_key=f"bench:{i}", payload=payload, agent_id=worker, iteration=iteration))
    return out


def seed(slug: str, *, events: int, proposals: int) -> tuple[Any, Any, Any]:
    """Create (or reuse) an experiment with one run of `events` events and `proposals` proposals."""
    from django.contrib.auth import get_user_model

    from experiments.ingest import ProjectionContext, append_events
    from experiments.models import Experiment, Membership, Run
    from memory.curation.models import Evidence, Proposal

    user, _ = get_user_model().objects.get_or_create(username="bench-owner")
    experiment, _ = Experiment.objects.get_or_create(slug=slug, defaults={"name": f"Bench {slug}", "goal": "Measure pages."})
    Membership.objects.get_or_create(user=user, experiment=experiment, defaults={"role": Membership.Role.OWNER})
    run, _ = Run.objects.get_or_create(experiment=experiment, run_id=f"{slug}-run", defaults={"status": "complete"})
    ctx = ProjectionContext(strict=False, source="bench")
    started = time.perf_counter()
    while run.last_seq < events:
        n = min(BATCH, events - run.last_seq)
        append_events(run, events_for(run.last_seq, n), ctx=ctx)
        run.refresh_from_db()
    have = Proposal.objects.filter(experiment=experiment).count()
    if have < proposals:
        kinds = ["fact", "tool", "antipattern"]
        rows = [
            Proposal(experiment=experiment, kind=kinds[i % 3], key=f"k{i}", text=f"Proposal {i}: 42 is even, seen again.")
            for i in range(have, proposals)
        ]
        Proposal.objects.bulk_create(rows, batch_size=2000)
        fresh = Proposal.objects.filter(experiment=experiment, evidence__isnull=True)
        evidence = [
            Evidence(proposal=p, ref=f"digest:{p.pk:064x}"[:80] + f":{j}", digest_sha=f"{p.pk:064x}", run=run, run_ref=run.run_id, iteration=j)
            for p in fresh
            for j in (1, 2)
        ]
        Evidence.objects.bulk_create(evidence, batch_size=4000)
    if time.perf_counter() - started > 1:
        print(f"seeded {slug}: {run.last_seq:,} events, {proposals:,} proposals in {time.perf_counter() - started:.0f} s", flush=True)
    return experiment, run, user


def seed_runs(experiment: Any, n: int) -> None:
    """Top up the experiment to `n` runs (a tenth with a sub-manager run), as an experiment with months of runs."""
    from datetime import UTC, datetime, timedelta

    from experiments.models import Run

    have = Run.objects.filter(experiment=experiment).count()
    if have >= n:
        return
    started = time.perf_counter()
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    roots = [
        Run(
            experiment=experiment, run_id=f"bench-run-{i:06d}", status=("complete", "partial", "failed")[i % 3], reason="done",
            started_at=t0 + timedelta(minutes=20 * i), ended_at=t0 + timedelta(minutes=20 * i, seconds=30 + (i * 37) % 5000),
            iterations=i % 23, budget_used={"tokens": {"consumed": (i * 7919) % 250_000, "max": 250_000}},
            task_text=("summarise the tide tables" if i % 4 == 0 else "collect facts about 42"), last_seq=0,
        )
        for i in range(have, n - n // 10)
    ]  # fmt: skip
    Run.objects.bulk_create(roots, batch_size=2000)
    parents = list(Run.objects.filter(experiment=experiment, run_id__startswith="bench-run-").order_by("pk")[: n // 10])
    children = [
        Run(experiment=experiment, run_id=f"{p.run_id}-sub", parent=p, depth=1, parent_worker="sub_research", status="complete",
            started_at=p.started_at, ended_at=p.ended_at, iterations=2)
        for p in parents
    ]  # fmt: skip
    Run.objects.bulk_create(children[: max(0, n - Run.objects.filter(experiment=experiment).count())], batch_size=2000)
    print(f"seeded {Run.objects.filter(experiment=experiment).count():,} runs in {time.perf_counter() - started:.0f} s", flush=True)


def deep_runs_cursor(experiment: Any, position: int) -> str:
    """The keyset cursor of the Runs tab after `position` newest top-level runs (page position/50 + 1)."""
    from django.db.models import F
    from django.db.models.functions import Coalesce

    from experiments import run_list

    runs = experiment.runs.filter(parent__isnull=True).annotate(sort_key=Coalesce(F("started_at"), F("created_at")))
    run = runs.order_by("-sort_key", "-pk")[position - 1]
    return run_list.encode_cursor("started", run)


def measure(client: Any, url: str, repeat: int, *, cold: bool = False, **headers: str) -> tuple[dict[str, float], int, int]:
    """(latency summary, SQL queries of one request, response bytes); cold: as the first view after an ingest."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def call() -> None:
        if cold:
            forget_run_heads()
        response = client.get(url, **headers)
        assert response.status_code == 200, (url, response.status_code)

    samples = time_calls(call, repeat=repeat, warmup=3)
    with CaptureQueriesContext(connection) as queries:
        if cold:
            forget_run_heads()
        response = client.get(url, **headers)
    return summary_ms(samples), len(queries), len(response.content)


def forget_run_heads() -> None:
    """Empty what is kept per (run, last_seq): every run then stands at a head not seen yet, as after an ingest."""
    from experiments import ledger_cache

    ledger_cache.clear()


def pages_for(experiment: Any, run: Any) -> list[tuple[str, str, dict[str, str], bool]]:
    """(name, url, headers, cold): cold pages are measured as the first view after an ingest."""
    from urllib.parse import quote

    base = f"/experiments/{experiment.slug}"
    total = experiment.runs.filter(parent__isnull=True).count()
    deep = quote(deep_runs_cursor(experiment, min(total, 5_000)))
    return [
        ("experiment page (Protocol)", f"{base}/protocol/", {}, False),
        ("experiment Overview", f"{base}/", {}, False),
        ("Runs tab (first page, charts)", f"{base}/runs/", {}, False),
        ("Runs tab, page 101 (keyset, htmx)", f"{base}/runs/?after={deep}", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-list"}, False),
        ("Runs tab, search task words (htmx)", f"{base}/runs/?q=tide+tables", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-list"}, False),
        ("Runs tab, sorted by tokens (htmx)", f"{base}/runs/?sort=tokens", {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "run-list"}, False),
        ("run page (Timeline, charts, graph)", f"{base}/runs/{run.pk}/", {}, False),
        # A live run moves its head with every event: its charts, graph and worker filter are read again.
        ("run page, first view at a new head", f"{base}/runs/{run.pk}/", {}, True),
        ("run Timeline, last page (htmx)", f"{base}/runs/{run.pk}/?after={max(0, run.last_seq - 100)}", {"HTTP_HX_REQUEST": "true"}, False),
        ("Review tab", f"{base}/review/", {}, False),
        # The run against itself: both sides at full size (headers, overlaid charts, state diff, digests).
        ("compare view (run vs itself)", f"{base}/compare/?a={run.pk}&b={run.pk}", {}, False),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="20k events, 2k proposals, 20 requests per page")
    parser.add_argument("--runs", type=int, default=10_000, help="runs in the big experiment (Runs tab)")
    args = parser.parse_args()
    events, proposals, repeat = (20_000, 2_000, 20) if args.quick else (100_000, 10_000, 50)
    setup_django("pages")
    from django.conf import settings
    from django.test import Client

    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    slug = SLUG if not args.quick else f"{SLUG}-quick"
    print(f"# bench/pages.py · {machine()} · {events:,} events, {proposals:,} proposals, {args.runs:,} runs, {repeat} timed requests per page · {load_average()}")
    big_experiment, big_run, user = seed(slug, events=events, proposals=proposals)
    seed_runs(big_experiment, args.runs)
    small_experiment, small_run, _ = seed(SMALL_SLUG, events=10, proposals=10)
    from experiments.models import Membership

    Membership.objects.get_or_create(user=user, experiment=small_experiment, defaults={"role": Membership.Role.OWNER})
    client = Client()
    client.force_login(user)
    rows = []
    worst_p95 = 0.0
    for (name, url, headers, cold), (_, small_url, small_headers, _) in zip(
        pages_for(big_experiment, big_run), pages_for(small_experiment, small_run), strict=True
    ):
        big, big_queries, size = measure(client, url, repeat, cold=cold, **headers)
        small, small_queries, _ = measure(client, small_url, repeat, cold=cold, **small_headers)
        worst_p95 = max(worst_p95, big["p95"])
        rows.append(
            (name, big["p50"], big["p95"], big["p99"], big_queries, f"{size / 1024:.0f} KiB", small["p50"], small_queries, big["p50"] / small["p50"])
        )
    headers = ["page", "p50 ms", "p95 ms", "p99 ms", "queries", "size", "baseline p50 ms", "baseline queries", "× baseline"]
    print_table(headers, rows)
    print(f"worst p95 {worst_p95:.1f} ms (goal < 150 ms) · {load_average()}")


def load_average() -> str:
    """The machine's load (the cores are shared: read figures beside it)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


if __name__ == "__main__":
    main()
