"""Memory search benchmark: pgvector HNSW vs exact, with and without the per-experiment filter.

    .venv/bin/python bench/search.py            # 100k and 1M random vectors + the real-text set
    .venv/bin/python bench/search.py --quick    # 100k only

Speed is measured on random low-rank unit vectors (shaped like sentence embeddings; recall on them is
indicative only). Recall is judged on a real-text set: docstrings of the standard library and Django, embedded
with the real all-MiniLM-L6-v2 model, whose embedding throughput is measured on the way.

Everything runs in a scratch database `awp_bench_search` on the configured server (dropped at the end),
through psycopg with auto-prepare off so `SET hnsw.ef_search` is never hidden behind a cached plan.
The SQL and the exact-vs-HNSW plan are the ones `memory.search` uses.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.db import connection  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from awp_site.db import embedded_url  # noqa: E402
from memory import embeddings  # noqa: E402
from memory.search import EXACT_SEARCH_THRESHOLD, plan_semantic, semantic_sql  # noqa: E402

DB = "awp_bench_search"
DIM = 384
K = 10
COLUMNS = "c.id"
TABLE = """
CREATE TABLE memory_memorychunk (
    id bigserial PRIMARY KEY,
    experiment_id integer NOT NULL,
    model_name text NOT NULL DEFAULT 'm',
    embedding vector(384)
);
"""


def connect(name: str) -> psycopg.Connection:
    url = embedded_url(connection.settings_dict, name)
    conn = psycopg.connect(url, autocommit=True, prepare_threshold=None)
    return conn


def fresh_database() -> psycopg.Connection:
    with connect(connection.settings_dict["NAME"]) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")
        admin.execute(f"CREATE DATABASE {DB}")
    conn = connect(DB)
    conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    register_vector(conn)
    conn.execute("SET maintenance_work_mem = '6GB'")
    conn.execute("SET max_parallel_maintenance_workers = 2")
    return conn


def drop_database() -> None:
    with connect(connection.settings_dict["NAME"]) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DB}")


def random_unit(n: int, rng: np.random.Generator, rank: int = 48) -> np.ndarray:
    """Random unit vectors of low intrinsic rank (like sentence embeddings) plus a little full-rank noise."""
    basis = np.random.default_rng(1).standard_normal((rank, DIM), dtype=np.float32)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        size = min(100_000, n - start)
        block = rng.standard_normal((size, rank), dtype=np.float32) @ basis
        block += 0.3 * rng.standard_normal((size, DIM), dtype=np.float32) * np.sqrt(rank / DIM)
        vectors[start : start + size] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return vectors


def load(conn: psycopg.Connection, vectors: np.ndarray, experiments: np.ndarray) -> float:
    """COPY the rows in binary; returns seconds."""
    conn.execute("DROP TABLE IF EXISTS memory_memorychunk")
    conn.execute(TABLE)
    started = time.perf_counter()
    with conn.cursor().copy("COPY memory_memorychunk (experiment_id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int4", "vector"])
        for experiment, vector in zip(experiments.tolist(), vectors, strict=True):
            copy.write_row((experiment, vector))
    conn.execute("CREATE INDEX ON memory_memorychunk (experiment_id)")
    conn.execute("ANALYZE memory_memorychunk")
    return time.perf_counter() - started


def build_hnsw(conn: psycopg.Connection) -> float:
    started = time.perf_counter()
    conn.execute(
        "CREATE INDEX memory_chunk_embedding_hnsw ON memory_memorychunk "
        "USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)"
    )
    conn.execute("ANALYZE memory_memorychunk")
    return time.perf_counter() - started


def query(conn: psycopg.Connection, vector: np.ndarray, experiment: int | None, plan: int | None | str) -> list[int]:
    """One search; plan is "exact", or an ef_search for the index path (None = the service's own plan)."""
    where, params = ["c.model_name = %s", "c.embedding IS NOT NULL"], ["m"]
    if experiment is not None:
        where.insert(0, "c.experiment_id = %s")
        params.insert(0, experiment)
    literal = "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"
    exact = plan == "exact"
    with conn.transaction():
        if not exact:
            conn.execute(f"SET LOCAL hnsw.ef_search = {int(plan)}")
        rows = conn.execute(semantic_sql(" AND ".join(where), exact=exact, columns=COLUMNS), [literal, *params, literal, K])
        return [row[0] for row in rows.fetchall()]


def service_plan(k: int, rows_in_experiment: int, total: int, threshold: int = EXACT_SEARCH_THRESHOLD) -> int | str:
    ef = plan_semantic(k, rows_in_experiment, total, threshold)
    return "exact" if ef is None else ef


def timed(fn, queries) -> tuple[list[list[int]], float, float]:  # type: ignore[no-untyped-def]
    results, latencies = [], []
    for q in queries:
        started = time.perf_counter()
        results.append(fn(q))
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    return results, statistics.median(latencies), latencies[max(0, int(len(latencies) * 0.95) - 1)]


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    hits = sum(len(set(f) & set(t)) for f, t in zip(found, truth, strict=True))
    return hits / max(1, sum(len(t) for t in truth))


def assign_experiments(n: int, rng: np.random.Generator) -> np.ndarray:
    """Experiment 1 holds 20% of the rows (big: index path), 2..81 hold 1% each (small: exact path)."""
    experiments = np.empty(n, dtype=np.int32)
    big = int(n * 0.2)
    experiments[:big] = 1
    experiments[big:] = 2 + (np.arange(n - big) % 80)
    rng.shuffle(experiments)
    return experiments


def bench_random(conn: psycopg.Connection, n: int, queries: int) -> None:
    rng = np.random.default_rng(7)
    print(f"\n== {n:,} random low-rank unit vectors (speed; recall on synthetic data is indicative only) ==")
    vectors = random_unit(n, rng)
    experiments = assign_experiments(n, rng)
    print(f"load (COPY binary + btree): {load(conn, vectors, experiments):.1f} s")
    probes = random_unit(queries, rng)
    exact_all, e50, e95 = timed(lambda v: query(conn, v, None, "exact"), probes)
    print(f"build HNSW (m=16, ef_construction=64): {build_hnsw(conn):.1f} s")
    hnsw_all, h50, h95 = timed(lambda v: query(conn, v, None, 40), probes)
    print(f"no filter   exact scan         p50 {e50:7.2f} ms  p95 {e95:7.2f} ms")
    print(f"no filter   HNSW ef_search=40  p50 {h50:7.2f} ms  p95 {h95:7.2f} ms  "
          f"({e95 / h95:.0f}× faster at p95, recall@10 {recall(hnsw_all, exact_all):.2f} on synthetic data)")
    small, small_rows = 2, int((experiments == 2).sum())
    big, big_rows = 1, int((experiments == 1).sum())
    for label, experiment, rows in [("1% filter ", small, small_rows), ("20% filter", big, big_rows)]:
        plan = service_plan(K, rows, n)
        truth, t50, t95 = timed(lambda v, e=experiment: query(conn, v, e, "exact"), probes)
        found, p50, p95 = timed(lambda v, e=experiment, p=plan: query(conn, v, e, p), probes)
        naive, _, _ = timed(lambda v, e=experiment: query(conn, v, e, 40), probes)
        short = sum(len(r) < K for r in naive)
        print(f"{label}  exact (btree)      p50 {t50:7.2f} ms  p95 {t95:7.2f} ms  ({rows:,} rows)")
        print(f"{label}  service plan {str(plan):>5} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  "
              f"recall@10 {recall(found, truth):.2f}; naive HNSW ef=40 came back short {short}/{len(probes)} times")


def real_texts(limit: int) -> list[str]:
    """First paragraphs of docstrings from the stdlib and Django: real prose about many topics."""
    roots = [Path(os.__file__).parent, Path(django.__file__).parent]
    seen, texts = set(), []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "test" in path.parts or "tests" in path.parts:
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
            except (SyntaxError, ValueError):
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
                    doc = ast.get_docstring(node) or ""
                    text = " ".join(doc.split("\n\n")[0].split())
                    if 40 <= len(text) <= 400 and text not in seen:
                        seen.add(text)
                        texts.append(text)
            if len(texts) >= limit:
                return texts
    return texts


def bench_real(conn: psycopg.Connection, size: int, queries: int) -> None:
    print(f"\n== real text: {size:,} docstrings + {queries} held-out queries, all-MiniLM-L6-v2 ==")
    texts = real_texts(size + queries)
    random.Random(3).shuffle(texts)
    corpus, probes_text = texts[:size], texts[size : size + queries]
    embeddings.embed_texts(corpus[:32])  # load the model outside the timing
    started = time.perf_counter()
    vectors = np.array(embeddings.embed_texts(corpus, batch_size=32), dtype=np.float32)
    took = time.perf_counter() - started
    mean_chars = statistics.mean(len(t) for t in corpus)
    print(f"embedding throughput: {len(corpus) / took:.0f} chunks/s (batch 32, mean {mean_chars:.0f} chars, torch CPU)")
    probes = np.array(embeddings.embed_texts(probes_text), dtype=np.float32)
    rng = np.random.default_rng(11)
    # Experiments with 50%, 20%, 5% and 1% of the rows.
    experiments = rng.choice([1, 2, 3, 4, 5], size=len(corpus), p=[0.5, 0.2, 0.05, 0.01, 0.24]).astype(np.int32)
    load(conn, vectors, experiments)
    print(f"build HNSW: {build_hnsw(conn):.1f} s")
    truth, _, _ = timed(lambda v: query(conn, v, None, "exact"), probes)
    for ef in (40, 80):
        found, p50, p95 = timed(lambda v, ef=ef: query(conn, v, None, ef), probes)
        print(f"no filter   HNSW ef_search={ef:<4} recall@10 {recall(found, truth):.3f}  p50 {p50:.2f} ms  p95 {p95:.2f} ms")
    total = len(corpus)
    for experiment, share in [(1, "50%"), (2, "20%"), (3, " 5%"), (4, " 1%")]:
        rows = int((experiments == experiment).sum())
        truth, _, _ = timed(lambda v, e=experiment: query(conn, v, e, "exact"), probes)
        naive, _, _ = timed(lambda v, e=experiment: query(conn, v, e, 40), probes)
        # Threshold 0 forces the index path even for this small set, to measure its recall under the filter.
        plan = service_plan(K, rows, total, threshold=0)
        forced, p50, p95 = timed(lambda v, e=experiment, p=plan: query(conn, v, e, p), probes)
        shipped = service_plan(K, rows, total)
        print(f"{share} filter ({rows:,} rows): naive HNSW ef=40 recall@10 {recall(naive, truth):.3f}; "
              f"index path ef_search={plan} recall@10 {recall(forced, truth):.3f} (p95 {p95:.2f} ms); "
              f"shipped plan: {shipped}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100k vectors only")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--real", type=int, default=3000, help="size of the real-text set")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    if not embeddings.is_enabled():
        sys.exit("AWP_EMBEDDER=none: the real-text part needs the model.")
    conn = fresh_database()
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    print(f"pgvector {version}; exact-search threshold {EXACT_SEARCH_THRESHOLD:,} rows per experiment; k={K}")
    print("load average (1/5/15 min): " + " ".join(f"{x:.1f}" for x in os.getloadavg()) + f" on {os.cpu_count()} CPUs")
    try:
        bench_real(conn, args.real, args.queries)
        for n in [100_000] if args.quick else [100_000, 1_000_000]:
            bench_random(conn, n, args.queries if n <= 100_000 else max(20, args.queries // 2))
        print("\nload average at the end: " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    finally:
        conn.close()
        if not args.keep:
            drop_database()


if __name__ == "__main__":
    main()
