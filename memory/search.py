"""The one memory search service: keyword, semantic, date_range and agent_filter over an experiment's chunks.

Every query is scoped to one experiment in SQL (`experiment_id = %s`), so one experiment's search never
sees another's memory. Scores are in [0, 1] and comparable within a mode.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from experiments.models import Experiment
from memory import embeddings, recall

MODES = ("keyword", "semantic", "date_range", "agent_filter")
SEARCH_TIERS = ("long_term", "working", "episodic", "semantic", "notes", "shared")
DEFAULT_TIERS = {
    "keyword": ("long_term", "working", "shared"),
    "semantic": ("semantic",),
    "date_range": ("working",),
    "agent_filter": ("episodic",),
}
# Chunk tiers a request's tiers stand for; "semantic" means the vector index over every tier.
CHUNK_TIERS = {"semantic": ("long_term", "working", "episodic", "notes")}
MAX_RESULTS_LIMIT = 100
# A query is words to look for, not a document: past these, Postgres' tsquery work grows without bound (a 2 MB
# query used to run for seconds and fail as a program limit); refused with 400 before any SQL runs.
MAX_QUERY_CHARS = 2000
MAX_QUERY_WORDS = 64
MAX_AGENT_FILTER = 100
# Up to this many vectors in one experiment, semantic search scans them exactly (btree on experiment_id):
# HNSW post-filters by experiment on pgvector 0.6 and then returns too few rows for a small experiment.
EXACT_SEARCH_THRESHOLD = int(getattr(settings, "AWP_MEMORY_EXACT_THRESHOLD", 20_000))
HNSW_MAX_EF_SEARCH = 1000


class SearchRefused(Exception):
    """A search the service cannot run as asked: status, machine-readable code, and a sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class SearchRequest:
    query: str = ""
    mode: str = "keyword"
    tiers: tuple[str, ...] = ()
    start: date | None = None
    end: date | None = None
    agent_filter: tuple[str, ...] = ()
    max_results: int = 10
    include_archived: bool = False
    salience: bool = False

    @property
    def effective_tiers(self) -> tuple[str, ...]:
        return self.tiers or DEFAULT_TIERS[self.mode]

    @property
    def chunk_tiers(self) -> list[str]:
        found: list[str] = []
        for tier in self.effective_tiers:
            for chunk_tier in CHUNK_TIERS.get(tier, (tier,)):
                if chunk_tier not in found:
                    found.append(chunk_tier)
        return found


@dataclass(frozen=True)
class SearchHit:
    tier: str
    source: str
    content: str
    score: float
    timestamp: datetime | None
    chunk_id: int
    ref_key: str
    agent_id: str = ""


@dataclass
class SearchResult:
    hits: list[SearchHit]
    total: int
    strategy: str = ""
    notes: list[str] = field(default_factory=list)


def validate(request: SearchRequest) -> None:
    """Refuse a malformed request with a specific code before touching the database."""
    if request.mode not in MODES:
        raise SearchRefused(400, "unknown_mode", f"Mode '{request.mode}' is not one of {', '.join(MODES)}.")
    unknown = [tier for tier in request.tiers if tier not in SEARCH_TIERS]
    if unknown:
        raise SearchRefused(400, "unknown_tier", f"Unknown tier(s) {', '.join(unknown)}; use {', '.join(SEARCH_TIERS)}.")
    check_query(request.query)
    if len(request.agent_filter) > MAX_AGENT_FILTER or any(len(agent) > 200 for agent in request.agent_filter):
        raise SearchRefused(400, "bad_agent_filter", f"agent_filter takes at most {MAX_AGENT_FILTER} agent ids of at most 200 characters.")
    if not 1 <= request.max_results <= MAX_RESULTS_LIMIT:
        raise SearchRefused(400, "bad_max_results", f"max_results must be between 1 and {MAX_RESULTS_LIMIT}.")
    if request.mode in ("keyword", "semantic") and not request.query.strip():
        raise SearchRefused(400, "empty_query", f"A {request.mode} search needs a non-empty query.")
    if request.mode == "date_range" and not (request.start or request.end):
        raise SearchRefused(400, "missing_date_range", "A date_range search needs date_range.start and/or end.")
    if request.start and request.end and request.start > request.end:
        raise SearchRefused(400, "bad_date_range", "date_range.start is after date_range.end.")
    if request.mode == "agent_filter" and not request.agent_filter:
        raise SearchRefused(400, "missing_agent_filter", "An agent_filter search needs at least one agent id.")
    if request.mode == "semantic" and not embeddings.is_enabled():
        raise SearchRefused(
            400, "semantic_disabled", "Semantic search is disabled on this server (AWP_EMBEDDER=none); use keyword mode."
        )
    if request.mode == "semantic" and embeddings.worker_required() and embeddings.worker_status()["socket"] != "answering":
        raise SearchRefused(
            503, "embedding_worker_down",
            "The embedding worker is not running, so semantic search cannot answer right now. Start it with "
            "`python manage.py awp_embed --loop` (make run starts it) or use keyword mode; /healthz shows its state.",
        )  # fmt: skip


def check_query(query: str, *, field: str = "query") -> None:
    """Refuse a query past the length or word limit (400 `query_too_long` / `query_too_many_words`)."""
    if len(query) > MAX_QUERY_CHARS:
        raise SearchRefused(400, "query_too_long", f"{field} has {len(query)} characters; the limit is {MAX_QUERY_CHARS}.")
    words = len(re.findall(r"\w+", query))
    if words > MAX_QUERY_WORDS:
        raise SearchRefused(400, "query_too_many_words", f"{field} has {words} words; the limit is {MAX_QUERY_WORDS}.")


def search_memory(experiment: Experiment, request: SearchRequest) -> SearchResult:
    """Run a validated search for one experiment."""
    validate(request)
    if request.mode == "semantic":
        result = _semantic(experiment, request)
    else:
        result = _lexical(experiment, request)
    if "shared" in request.effective_tiers and request.mode == "keyword":
        result = _with_shared(experiment, request, result)
    if request.salience:
        result.hits = _by_salience(experiment, result.hits, request.max_results)
    return result


def _with_shared(experiment: Experiment, request: SearchRequest, result: SearchResult) -> SearchResult:
    """Add tier `shared`: pool facts the experiment subscribes to (pool/shared.py), newest version only."""
    from pool.shared import search_shared

    shared = [
        SearchHit(tier="shared", source=fact.label, content=fact.statement, score=round(min(1.0, score), 4),
                  timestamp=fact.created_at, chunk_id=0, ref_key=fact.label)
        for fact, score in search_shared(experiment, request.query, request.max_results)
    ]  # fmt: skip
    if not shared:
        return result
    hits = sorted([*result.hits, *shared], key=lambda hit: -hit.score)[: request.max_results]
    return SearchResult(hits, result.total + len(shared), result.strategy, result.notes)


def _filters(experiment: Experiment, request: SearchRequest) -> tuple[list[str], list[Any]]:
    clauses = ["c.experiment_id = %s", "c.tier = ANY(%s)"]
    params: list[Any] = [experiment.pk, request.chunk_tiers]
    if not request.include_archived:
        clauses.append("NOT c.is_archived")
    if request.start:
        clauses.append("c.occurred_at >= %s")
        params.append(datetime.combine(request.start, time.min, tzinfo=UTC))
    if request.end:
        clauses.append("c.occurred_at <= %s")
        params.append(datetime.combine(request.end, time.max, tzinfo=UTC))
    if request.agent_filter:
        clauses.append("c.agent_id = ANY(%s)")
        params.append(list(request.agent_filter))
    return clauses, params


_COLUMNS = "c.id, c.tier, c.source, c.content, c.occurred_at, c.ref_key, c.agent_id"


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _hits(rows: list[tuple[Any, ...]]) -> list[SearchHit]:
    return [
        SearchHit(tier=r[1], source=r[2], content=r[3], timestamp=r[4], ref_key=r[5], agent_id=r[6], chunk_id=r[0],
                  score=round(min(1.0, max(0.0, float(r[7]))), 4))
        for r in rows
    ]  # fmt: skip


def _prefix_query(text: str) -> str:
    """`work coord` → `work:* & coord:*` (only word characters reach to_tsquery, so no syntax errors)."""
    return " & ".join(f"{word}:*" for word in re.findall(r"\w+", text.lower())[:16])


def _lexical(experiment: Experiment, request: SearchRequest) -> SearchResult:
    clauses, params = _filters(experiment, request)
    limit = request.max_results
    query = request.query.strip()
    if not query:
        # date_range / agent_filter without words: every matching entry, newest first, all equally relevant.
        sql = (f"SELECT {_COLUMNS}, 1.0, count(*) OVER () FROM memory_memorychunk c WHERE {' AND '.join(clauses)}"
               " ORDER BY c.occurred_at DESC NULLS LAST, c.id DESC LIMIT %s")  # fmt: skip
        rows = _rows(sql, [*params, limit])
        return SearchResult(_hits(rows), rows[0][-1] if rows else 0, "filter")
    attempts = [("websearch", "websearch_to_tsquery('english', %s)", query)]
    prefix = _prefix_query(query)
    if prefix:
        attempts.append(("prefix", "to_tsquery('english', %s)", prefix))
    for strategy, tsquery, argument in attempts:
        # ts_rank_cd normalisation 32 maps the rank into [0, 1): rank / (rank + 1).
        sql = (f"SELECT {_COLUMNS}, ts_rank_cd(to_tsvector('english', c.content), q, 32), count(*) OVER () "
               f"FROM memory_memorychunk c, {tsquery} q WHERE {' AND '.join(clauses)} "
               "AND to_tsvector('english', c.content) @@ q "
               "ORDER BY 8 DESC, c.occurred_at DESC NULLS LAST, c.id DESC LIMIT %s")  # fmt: skip
        rows = _rows(sql, [argument, *params, limit])
        if rows:
            return SearchResult(_hits(rows), rows[0][-1], strategy)
    # Last resort for fragments inside words ("board" in "blackboard"): a substring match, scored lower.
    pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    sql = (f"SELECT {_COLUMNS}, 0.5, count(*) OVER () FROM memory_memorychunk c WHERE {' AND '.join(clauses)} "
           "AND c.content ILIKE %s ORDER BY c.occurred_at DESC NULLS LAST, c.id DESC LIMIT %s")  # fmt: skip
    rows = _rows(sql, [*params, pattern, limit])
    return SearchResult(_hits(rows), rows[0][-1] if rows else 0, "substring")


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def _semantic(experiment: Experiment, request: SearchRequest) -> SearchResult:
    vector = vector_literal(embeddings.embed_query(request.query))
    model = embeddings.current_model_name()
    clauses, params = _filters(experiment, request)
    clauses += ["c.model_name = %s", "c.embedding IS NOT NULL"]
    params.append(model)
    with transaction.atomic():
        count = _experiment_vector_count(experiment, model)
        strategy, hits = semantic_query(vector, clauses, params, request.max_results, count, _table_vector_count(model))
    return SearchResult(hits, len(hits), strategy)


def _experiment_vector_count(experiment: Experiment, model: str) -> int:
    rows = _rows(
        "SELECT count(*) FROM memory_memorychunk WHERE experiment_id = %s AND model_name = %s AND embedding IS NOT NULL",
        [experiment.pk, model],
    )
    return int(rows[0][0])


def _table_vector_count(model: str) -> int:
    # The planner's estimate is enough to size ef_search; an exact count of a big table is not worth it.
    rows = _rows("SELECT reltuples::bigint FROM pg_class WHERE relname = 'memory_memorychunk'", [])
    return max(1, int(rows[0][0]) if rows else 1)


def plan_semantic(k: int, experiment_rows: int, table_rows: int, threshold: int = EXACT_SEARCH_THRESHOLD) -> int | None:
    """None for an exact scan (small experiment), else the hnsw.ef_search that leaves ~k rows after the filter.

    pgvector 0.6 filters HNSW candidates after the scan, so about ef_search × (experiment share) rows survive;
    ef_search is sized for 20× k of them (capped at pgvector's 1000), and a short answer falls back to exact.
    """
    if experiment_rows <= threshold:
        return None
    share = max(experiment_rows / max(table_rows, experiment_rows), 1e-6)
    return min(HNSW_MAX_EF_SEARCH, max(40, math.ceil(20 * k / share)))


def semantic_sql(where: str, *, exact: bool, columns: str = _COLUMNS) -> str:
    """The nearest-neighbour query: params are (vector, *where params, vector, k). Score = 1 - cosine distance / 2."""
    # "+ 0" keeps the planner off the HNSW index: an exact scan of the rows the filter (btree) selects.
    order = "(c.embedding <=> %s::vector) + 0" if exact else "c.embedding <=> %s::vector"
    return (f"SELECT {columns}, 1 - (c.embedding <=> %s::vector) / 2 FROM memory_memorychunk c "
            f"WHERE {where} ORDER BY {order} LIMIT %s")  # fmt: skip


def semantic_query(
    vector: str, clauses: list[str], params: list[Any], k: int, experiment_rows: int, table_rows: int
) -> tuple[str, list[SearchHit]]:
    """Nearest chunks under `clauses` with the plan of `plan_semantic`; must run inside a transaction (SET LOCAL)."""
    where = " AND ".join(clauses)
    ef = plan_semantic(k, experiment_rows, table_rows)
    if ef is not None:
        with connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
    rows = _rows(semantic_sql(where, exact=ef is None), [vector, *params, vector, k])
    strategy = "exact" if ef is None else f"hnsw(ef_search={ef})"
    if ef is not None and len(rows) < min(k, experiment_rows):
        # The post-filtered index scan came up short: answer exactly rather than return too few.
        rows = _rows(semantic_sql(where, exact=True), [vector, *params, vector, k])
        strategy += "+exact"
    return strategy, _hits(rows)


def _by_salience(experiment: Experiment, hits: list[SearchHit], k: int) -> list[SearchHit]:
    """Re-rank hits with the one salience function: the search score as relevance, recency in steps of time
    (the newest hit is the current turn, each older distinct moment one turn back), importance by tier."""
    try:
        weights = recall.SalienceWeights.from_config(experiment.memory_config)
    except recall.RecallConfigError:
        weights = recall.SalienceWeights()
    moments = sorted({hit.timestamp for hit in hits if hit.timestamp is not None}, reverse=True)
    age = {moment: index for index, moment in enumerate(moments)}

    def score(hit: SearchHit) -> float:
        steps = age.get(hit.timestamp, len(moments)) if hit.timestamp is not None else len(moments)
        rec = recall.recency(steps, weights.decay_lambda)
        return recall.salience(hit.score, rec, recall.TIER_IMPORTANCE.get(hit.tier, recall.DEFAULT_IMPORTANCE), weights)

    return sorted(hits, key=lambda hit: (-score(hit), hit.chunk_id))[:k]
