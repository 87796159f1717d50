"""Episodes: the ledger projected into what agents can recall, and the recall block one agent would receive."""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Max

from awp_site.bulk import bare, insert_rows
from experiments.models import Event, Experiment, Run
from experiments.projections import ProjectionContext
from memory import embeddings, recall
from memory.models import Episode
from memory.search import vector_literal
from state.config import state_settings
from state.redaction import may_hold_key_secrets_rows
from state.services_redaction import redact_for, redactor_for, sensitive_fields_for

_RUN_FIELDS = ("status", "reason", "total_iterations")
_DECISION_FIELDS = ("decision", "reasoning", "confidence", "final_result")


def _fields(event: Event) -> tuple[str, dict[str, Any]] | None:
    """(producer, structured output) of an event that is an episode, or None."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    kind = event.kind
    if kind == "worker.complete":
        return event.agent_id or str(payload.get("worker_id") or ""), dict(payload)
    if kind == "state.snapshot":
        agent = event.agent_id or str(payload.get("agent_id") or "")
        state = payload.get("state") if isinstance(payload.get("state"), dict) else {}
        if not agent or agent == "final" or agent not in state:
            return None
        output = state[agent]
        return agent, output if isinstance(output, dict) else {"output": output}
    if kind == "board.post":
        body = payload.get("payload")
        return str(payload.get("worker_id") or event.agent_id or ""), body if isinstance(body, dict) else {"post": body}
    if kind == "iteration.decision":
        fields = {key: payload[key] for key in _DECISION_FIELDS if key in payload}
        delegations = payload.get("delegations")
        if isinstance(delegations, list):
            fields["delegated_to"] = [str(d.get("worker_id")) for d in delegations if isinstance(d, dict)]
        return event.agent_id, fields
    if kind == "iteration.validation":
        return event.agent_id, {"validations": [_verdict(item) for item in payload.get("items") or [] if isinstance(item, dict)]}
    if kind == "run.start":
        return "", {"task": payload.get("task") or payload.get("goal") or ""}
    if kind == "run.complete":
        fields = {key: payload[key] for key in _RUN_FIELDS if key in payload}
        if isinstance(payload.get("final_result"), dict):
            fields["final_result"] = payload["final_result"]
        return "", fields
    return None


def _verdict(item: dict[str, Any]) -> dict[str, Any]:
    """One validation as a verdict: whose work, passed or not, the feedback (not the validator's internals)."""
    checks = item.get("deterministic") if isinstance(item.get("deterministic"), dict) else {}
    passed = item.get("passed", checks.get("passed"))
    return {key: value for key, value in (("worker_id", item.get("worker_id")), ("passed", passed),
                                          ("feedback", item.get("feedback"))) if value is not None}  # fmt: skip


def project_episodes(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """Ledger events that are episodes → Episode rows (bulk, a constant number of queries per batch)."""
    picked = [(event, found) for event in events if event.kind in recall.EPISODE_KINDS and (found := _fields(event))]
    if not picked:
        return
    # Two lookups only when a batch needs them (a DAG step's number, an event without an iteration).
    kinds_needing_turn = {event.kind for event, _ in picked if event.iteration is None} - {"run.start", "state.snapshot"}
    known = (Episode.objects.filter(run=run).aggregate(top=Max("turn"))["top"] or 0) if kinds_needing_turn else 0
    has_steps = any(event.kind == "state.snapshot" for event, _ in picked)
    steps = Episode.objects.filter(run=run, kind="state.snapshot").count() if has_steps else 0
    experiment = run.experiment
    # One façade call for the whole batch: episode texts are stored key-redacted, so relevance never matches a secret.
    redacted = redact_for(experiment, [fields for _, (_, fields) in picked])
    rows = []
    for (event, (agent, fields)), shown in zip(picked, redacted, strict=True):
        if event.kind == "state.snapshot":
            steps += 1
            turn = steps
        elif event.kind == "run.start":
            turn = 0
        else:
            turn = event.iteration if event.iteration is not None else known
        known = max(known, turn)
        text = recall.render_fields(shown)
        if event.kind == "board.post":
            text = f"[{(event.payload or {}).get('topic', '')}] {text}"
        rows.append(bare(Episode, {
            "experiment_id": experiment.pk, "run_id": run.pk, "key": f"ev:{run.pk}:{event.seq}", "agent_id": agent[:200],
            "kind": event.kind, "turn": turn, "is_public": event.kind in recall.PUBLIC_KINDS, "fields": fields, "text": text,
            "words": sorted(recall.words(text)), "occurred_at": event.occurred_at or event.recorded_at,
        }))  # fmt: skip
    # One statement of constant size (a batch's episodes are thousands of rows with a JSON and an array column).
    insert_rows(rows, ignore_conflicts=True)
    _index_outputs(run, [(row, fields) for row, (_, (_, fields)) in zip(rows, picked, strict=True)])
    from memory.reflection import schedule_due_reflections

    schedule_due_reflections(experiment)


def _index_outputs(run: Run, rows: list[tuple[Episode, dict[str, Any]]]) -> None:
    """A DAG step's or a board post's output is an agent's result, as a worker result is: it goes to the episodic
    tier too (search by agent, the semantic join of recall by key), so the Episodic tab, `agent_filter` search
    and recall agree on what an agent produced. worker.complete results are indexed by `log_worker_result`."""
    from memory.chunks import upsert_chunk  # memory.chunks → services import this module's neighbours
    from memory.models import MemoryChunk
    from memory.working import summarize_result

    for row, fields in rows:
        if row.kind not in recall.OUTPUT_KINDS or row.kind == "worker.complete" or not row.agent_id:
            continue
        content = summarize_result(redact_for(run.experiment, fields))
        if not content:
            continue
        step = f"step {row.turn}" if row.kind == "state.snapshot" else f"board turn {row.turn}"
        upsert_chunk(
            experiment=run.experiment, tier=MemoryChunk.Tier.EPISODIC, ref_key=row.key,
            source=f"run {run.run_id} · {step} · {row.agent_id}", content=content, agent_id=row.agent_id,
            occurred_at=row.occurred_at,
        )  # fmt: skip


def turn_clock(experiment: Experiment) -> tuple[dict[int, tuple[str, int]], int]:
    """Each run's (run id, offset) on the experiment's turn clock, and the latest turn on it."""
    runs, latest, _ = _run_clock(experiment)
    return runs, latest


def _run_clock(experiment: Experiment) -> tuple[dict[int, tuple[str, int]], int, dict[int, int]]:
    """`turn_clock`, and each run's last turn on the clock."""
    with connection.cursor() as cursor:
        # Per run, two probes of the (run, turn) index rather than a scan of every episode.
        cursor.execute(
            """SELECT id, run_id, length FROM (
                   SELECT r.id, r.run_id, r.started_at, r.created_at,
                          (SELECT max(e.turn) + 1 FROM memory_episode e WHERE e.run_id = r.id) AS length,
                          (SELECT e.occurred_at FROM memory_episode e WHERE e.run_id = r.id ORDER BY e.turn, e.id LIMIT 1) AS first
                   FROM experiments_run r WHERE r.experiment_id = %s) runs
               WHERE length IS NOT NULL ORDER BY coalesce(started_at, first, created_at), id""",
            [experiment.pk],
        )
        rows = cursor.fetchall()
    offsets = recall.turn_clock((pk, length) for pk, _, length in rows)
    runs = {pk: (run_id, offsets[pk]) for pk, run_id, _ in rows}
    last = {pk: offsets[pk] + length - 1 for pk, _, length in rows}
    return runs, sum(length for _, _, length in rows) - 1 if rows else 0, last


def load_episodes(
    experiment: Experiment, reader: str | None, *, where: str = "", params: list[Any] | None = None,
    runs: dict[int, tuple[str, int]] | None = None,
) -> list[recall.Episode]:
    """Episodes of the experiment on its turn clock (all, or those `where` selects); other agents' outputs carry
    their fields, key-redacted, for the sharing filter."""
    if runs is None:
        runs, _ = turn_clock(experiment)
    return _episodes(experiment, _episode_rows(experiment, reader, where=where, params=params), runs)


_Row = tuple[str, str, str, int | None, int, str, str | None]  # key, agent, kind, run pk, turn, text, fields as JSON text


def _episode_rows(experiment: Experiment, reader: str | None, *, where: str = "", params: list[Any] | None = None) -> list[_Row]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT e.key, e.agent_id, e.kind, e.run_id, e.turn, e.text,
                      CASE WHEN e.agent_id = %s THEN NULL ELSE e.fields::text END
               FROM memory_episode e WHERE e.experiment_id = %s {where}""",
            [reader, experiment.pk, *(params or [])],
        )
        return cursor.fetchall()


def _episodes(experiment: Experiment, rows: list[_Row], runs: dict[int, tuple[str, int]]) -> list[recall.Episode]:
    # Fields are rendered into text for others to read, so they pass the redaction façade first (one call for all
    # of them): a masked key never turns into prose.
    decoded = [json.loads(row[6]) if row[6] is not None else None for row in rows]
    masked = iter(redact_for(experiment, [fields for fields in decoded if fields is not None]))
    out = []
    for (key, agent, kind, run_pk, turn, text, _), fields in zip(rows, decoded, strict=True):
        run_id, offset = runs.get(run_pk, ("", 0)) if run_pk is not None else ("", 0)
        out.append(recall.Episode(key=key, agent_id=agent, kind=kind, run_id=run_id, turn=turn, clock=offset + turn, text=text,
                                  fields=next(masked) if fields is not None else None, source=_source(kind, run_id, turn, agent)))  # fmt: skip
    return out


def _source(kind: str, run_id: str, turn: int, agent: str) -> str:
    who = f" · {agent}" if agent else ""
    if kind == "reflection":
        return f"reflection of {agent} after run {run_id} turn {turn}"
    return f"run {run_id} · turn {turn}{who}"


@dataclass(frozen=True)
class _Reading:
    """What one `recall_for` call reads the episodes with: the clock, the formula, the rows it may score in SQL."""

    experiment: Experiment
    runs: dict[int, tuple[str, int]]
    last: dict[int, int]  # each run's last turn on the clock
    weights: recall.SalienceWeights
    now: int
    query_words: list[str]
    where: str  # the episodes the reader sees whole (scored in SQL)
    params: dict[str, Any]
    semantic: str | None
    limit: int  # k + BELOW_CUT


def recall_for(
    *, experiment: Experiment, agent_id: str, query: str = "", turn: int | None = None, top_k: int | None = None,
    run_id: str = "", channel: str = "recall",
) -> recall.RecallBlock:
    """The recall block `agent_id` would receive now (or at `turn` on the experiment's turn clock).

    Same result as `recall.recall` over every episode, but fast for big histories: the episodes the agent sees
    whole (its own, the public record, outputs shared whole) are scored and cut in SQL, reading only those that
    can still make the cut; only what it sees in part (selective rules, never_share fields present) goes through
    the pure filter in Python, and only where it can still make the cut.
    """
    weights = recall.SalienceWeights.from_config(experiment.memory_config)
    policy = state_settings(experiment.protocol).sharing
    runs, latest, last = _run_clock(experiment)
    now = turn if turn is not None else latest
    k = top_k or weights.top_k
    limit = k + recall.BELOW_CUT
    whole, partial = recall.split_producers(policy, agent_id, recall_agents(experiment))
    hidden = sorted(policy.never_share)
    # A row naming a never_share key anywhere in its fields cannot be shown as stored: the Python path filters it.
    patterns = ['%"' + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + '":%' for name in hidden]
    fast = ("(e.agent_id = %(reader)s OR ((e.is_public OR e.agent_id = ANY(%(whole)s))"
            + (" AND NOT coalesce(e.fields::text, '') LIKE ANY(%(hidden)s)))" if hidden else "))"))  # fmt: skip
    semantic = semantic_query_vector(experiment, query)
    reading = _Reading(experiment=experiment, runs=runs, last=last, weights=weights, now=now,
                       query_words=sorted(recall.words(query)), where=fast,
                       params={"reader": agent_id, "whole": whole, "hidden": patterns}, semantic=semantic, limit=limit)  # fmt: skip
    # Recent turns first, with the older episodes sharing a word with the query (through the word-set index):
    # their (k + BELOW_CUT)-th best is a floor the whole history must beat (scoring more episodes only raises
    # it). Any other older episode has keyword relevance 0 and scores at most w_rec·recency + w_imp·max
    # importance, so before `oldest` it stays strictly below the floor: it can be neither in the top k nor among
    # the BELOW_CUT after them, and is never read. With the semantic tier any episode may be relevant: the bound
    # then takes relevance 1 for all. (Pruned = unpruned: test_recall_api's property test.)
    start = now - 4 * limit
    scored = _scored_in_sql(reading, lo=start, hi=now, words_before=start)
    floor = scored[-1].exact if len(scored) >= limit else None
    oldest = recall.oldest_clock_that_can_rank(weights, now=now, threshold=floor, has_query=semantic is not None)
    if oldest is None or oldest < start:
        # The word-sharing ones were read already: by key, each episode counts once.
        older = {s.episode.key: s for s in [*scored, *_scored_in_sql(reading, lo=oldest, hi=start - 1)]}
        scored = heapq.nlargest(limit, older.values(), key=_rank)
    # What the sharing rules show in part is scored in Python: only from turns where it could still make the cut,
    # and before them only what may share a word with the query.
    threshold = scored[-1].exact if len(scored) >= limit else None
    oldest = recall.oldest_clock_that_can_rank(weights, now=now, threshold=threshold, has_query=False)
    names_hidden = "coalesce(e.fields::text, '') LIKE ANY(%s)" if hidden else "false"
    slow = (f"AND e.agent_id <> %s AND ((NOT e.is_public AND e.agent_id = ANY(%s)) "
            f"OR ((e.is_public OR e.agent_id = ANY(%s)) AND {names_hidden}))")  # fmt: skip
    slow_params = [agent_id, partial, whole, *([patterns] if hidden else [])]
    rest = recall.score_episodes(_seen_in_part(reading, agent_id, slow, slow_params, oldest=oldest), reader=agent_id,
                                 policy=policy, weights=weights, now=now, query=query)  # fmt: skip
    items, below = recall.cut([*scored, *rest], k=k)
    block = recall.RecallBlock(agent_id=agent_id, turn=now, query=query, weights=weights, items=items, below=below)
    return _for_run(experiment, block, run_id=run_id, channel=channel) if run_id else block


def _for_run(experiment: Experiment, block: recall.RecallBlock, *, run_id: str, channel: str) -> recall.RecallBlock:
    """The block as run `run_id` receives it: episodes stating a fact its trial arm withholds are left out, and
    the facts the block carries are recorded as the run's exposure."""
    from memory import exposure
    from memory.curation.models import Proposal
    from memory.curation.render import one_line

    run = exposure.run_named(experiment, run_id)
    withheld = exposure.withheld_for_run(experiment, run)
    if withheld:
        texts = [one_line(p.promoted_text) for p in Proposal.objects.filter(pk__in=withheld)]
        block.items = [s for s in block.items if not any(t in one_line(s.content) for t in texts)]
        block.below = [s for s in block.below if not any(t in one_line(s.content) for t in texts)]
    exposure.record_served(experiment=experiment, run=run, channel=channel, agent_id=block.agent_id, text=block.block)
    return block


def _rank(scored: recall.Scored) -> tuple[float, int, str]:
    return scored.exact, scored.episode.clock, scored.episode.key  # as recall.cut ranks


def _seen_in_part(reading: _Reading, reader: str, where: str, params: list[Any], *, oldest: int | None) -> list[recall.Episode]:
    """The episodes `where` selects that may still make the cut: from `oldest` on (all when None), and before it
    those `recall.keyword_may_match` keeps (redacted with the rest when they may hold a secret of their own)."""
    runs, experiment, query_words = reading.runs, reading.experiment, frozenset(reading.query_words)
    if oldest is not None and not query_words:
        where += " AND e.turn >= coalesce((%s::int[])[array_position(%s::bigint[], e.run_id)], %s)"
        params = [*params, [oldest - offset for _, offset in runs.values()], list(runs), oldest]
    rows = _episode_rows(experiment, reader, where=where, params=params)
    if oldest is None or not query_words:
        return _episodes(experiment, rows, runs)
    older = [(key, stored) for key, _, _, run_pk, turn, _, stored in rows
             if stored is not None and (runs[run_pk][1] if run_pk in runs else 0) + turn < oldest]  # fmt: skip
    documents = [stored for _, stored in older]
    # A row holding a value under a sensitive key masks that value in the others it is redacted with (the
    # document's own secrets): redacted along, it keeps their content as the unpruned batch gives it.
    may_match = recall.keyword_may_match_rows(query_words, documents)
    may_hold = may_hold_key_secrets_rows(documents, sensitive_fields_for(experiment))
    dropped = {key for (key, _), match, hold in zip(older, may_match, may_hold, strict=True) if not (match or hold)}
    return _episodes(experiment, [row for row in rows if row[0] not in dropped], runs)


def _scored_in_sql(reading: _Reading, *, lo: int | None, hi: int, words_before: int | None = None) -> list[recall.Scored]:
    """The best k + BELOW_CUT, by the reference formula computed in SQL, of the episodes `reading.where` selects
    with lo ≤ turn clock ≤ hi (no lower end when lo is None) and of the older ones (clock < words_before) that
    share a word with the query."""
    weights, runs, query_words = reading.weights, reading.runs, reading.query_words
    total = weights.relevance + weights.recency + weights.importance
    kinds = list(recall.IMPORTANCE)
    columns = "e.key, e.agent_id, e.kind, e.run_id, e.turn, e.text, e.words"
    # Each run's turns in [lo, hi] through the (run, turn) index; runs that end before lo are not even probed.
    lower = "" if lo is None else " AND e.turn >= %(lo)s - r.off"
    parts = [
        f"""SELECT {columns}, r.off + e.turn AS clock
            FROM unnest(%(reach)s::bigint[], %(reach_offs)s::int[]) r(run_pk, off) CROSS JOIN LATERAL (
                SELECT * FROM memory_episode e WHERE e.run_id = r.run_pk AND e.turn <= %(hi)s - r.off{lower}) e
            WHERE e.experiment_id = %(exp)s AND {reading.where}""",
        f"""SELECT {columns}, e.turn AS clock FROM memory_episode e
            WHERE e.experiment_id = %(exp)s AND e.run_id IS NULL AND e.turn <= %(hi)s{"" if lo is None else " AND e.turn >= %(lo)s"}
              AND {reading.where}""",
    ]  # fmt: skip
    if words_before is not None and query_words and reading.semantic is None:
        parts.append(f"""SELECT {columns}, coalesce(o.off, 0) + e.turn AS clock
            FROM memory_episode e LEFT JOIN unnest(%(runs)s::bigint[], %(offs)s::int[]) o(run_pk, off) ON o.run_pk = e.run_id
            WHERE e.experiment_id = %(exp)s AND e.words && %(q)s::text[] AND coalesce(o.off, 0) + e.turn < %(before)s
              AND {reading.where}""")  # fmt: skip
    # Jaccard of the stored word set and the query's words, exactly as recall.keyword_relevance computes it.
    # |query ∩ words| as a sum of one-element containments (no subquery per row); the query's words are bound
    # one by one as q0, q1, …
    shared = " + ".join(f"(s.words @> ARRAY[%(q{i})s]::text[])::int" for i in range(len(query_words))) or "0"
    keyword = (f"CASE WHEN s.words && %(q)s::text[] THEN ({shared})::float8 / (cardinality(s.words) + %(nq)s - ({shared})) "
               "ELSE 0 END")  # fmt: skip
    semantic = reading.semantic
    # An episode with no vector yet (LEFT JOIN gives NULL) falls back to keyword relevance, as the pure reference
    # does. Not coalesce(greatest(0, …)): Postgres' greatest ignores NULL, so that reads 0 for every such episode.
    relevance = (f"CASE WHEN c.embedding IS NULL THEN ({keyword}) "
                 "ELSE greatest(0, 1 - (c.embedding <=> %(vec)s::vector))::float8 END") if semantic else keyword  # fmt: skip
    chunk = ("LEFT JOIN memory_memorychunk c ON c.experiment_id = %(exp)s AND c.ref_key = s.key "
             "AND c.model_name = %(model)s AND c.embedding IS NOT NULL") if semantic else ""  # fmt: skip
    union = "\n            UNION ALL\n            ".join(parts)
    sql = f"""
        WITH s AS (
            {union}
        ),
        t AS (
            SELECT s.key, s.agent_id, s.kind, s.run_id, s.turn, s.text, s.clock,
                   {relevance if query_words or semantic else "0::float8"} AS rel
            FROM s {chunk} WHERE s.clock <= %(now)s
        ),
        u AS (
            SELECT *, CASE WHEN d > 700 THEN 0::float8 ELSE exp(-d) END AS rec,
                   coalesce((%(imps)s::float8[])[array_position(%(kinds)s::text[], kind)], (%(default)s)::float8) AS imp
            FROM (SELECT *, (%(lam)s)::float8 * greatest(0, %(now)s - clock) AS d FROM t) decayed
        )
        -- exp() underflows to an error in Postgres where Python's gives 0: beyond e^-700 recency is 0.
        -- Keys compare by code point, as Python's do (the tie-break of recall.cut).
        SELECT key, agent_id, kind, run_id, turn, text, clock, rel, rec, imp,
               ((%(wrel)s)::float8 * least(1, greatest(0, rel)) + (%(wrec)s)::float8 * rec + (%(wimp)s)::float8 * imp)
                   / (%(total)s)::float8 AS sal
        FROM u ORDER BY sal DESC, clock DESC, key COLLATE "C" DESC LIMIT %(limit)s"""
    reach = [pk for pk in runs if lo is None or reading.last[pk] >= lo]
    named: dict[str, Any] = {
        "runs": list(runs), "offs": [offset for _, offset in runs.values()], "exp": reading.experiment.pk,
        "reach": reach, "reach_offs": [runs[pk][1] for pk in reach], "lo": lo, "hi": hi, "before": words_before,
        "q": query_words, "nq": len(query_words), "lam": weights.decay_lambda, "now": reading.now,
        "imps": [recall.IMPORTANCE[kind] for kind in kinds], "kinds": kinds, "default": recall.DEFAULT_IMPORTANCE,
        "wrel": weights.relevance, "wrec": weights.recency, "wimp": weights.importance, "total": total, "limit": reading.limit,
        "vec": semantic or "", "model": embeddings.current_model_name() if semantic else "",
    }  # fmt: skip
    named.update(reading.params)
    named.update({f"q{i}": word for i, word in enumerate(query_words)})
    with connection.cursor() as cursor:
        cursor.execute(sql, named)
        rows = cursor.fetchall()
    out: list[recall.Scored] = []
    for key, agent, kind, run_pk, turn, text, clock, rel, rec, imp, sal in rows:
        run_id = runs.get(run_pk, ("", 0))[0]
        episode = recall.Episode(key=key, agent_id=agent, kind=kind, run_id=run_id, turn=turn, clock=clock, text=text,
                                 source=_source(kind, run_id, turn, agent))  # fmt: skip
        out.append(recall.Scored(episode, text, round(rel, 4), round(rec, 4), imp, round(sal, 4), sal))
    return out


def semantic_query_vector(experiment: Experiment, query: str) -> str | None:
    """The query's vector (pgvector literal) when the semantic tier is on and the experiment has embedded
    episodes; None otherwise (the model is then not even asked)."""
    if not query.strip() or not embeddings.is_enabled():
        return None
    model = embeddings.current_model_name()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT EXISTS (SELECT 1 FROM memory_memorychunk WHERE experiment_id = %s AND tier = 'episodic' "
            "AND model_name = %s AND embedding IS NOT NULL)",
            [experiment.pk, model],
        )
        if not cursor.fetchone()[0]:
            return None
    try:
        return vector_literal(embeddings.embed_query(query))
    except embeddings.EmbedderDisabled:
        return None


def recall_agents(experiment: Experiment) -> list[str]:
    """Agents that produced episodes in this experiment (whose recall one can look at)."""
    with connection.cursor() as cursor:
        # A skip scan of the private episodes' (experiment, agent) index: one probe per agent, where DISTINCT would
        # read every episode (a few, against tens of thousands).
        cursor.execute(
            """WITH RECURSIVE a(agent_id) AS (
                   SELECT min(agent_id) FROM memory_episode WHERE experiment_id = %(exp)s AND NOT is_public AND agent_id > ''
                   UNION ALL
                   SELECT (SELECT min(e.agent_id) FROM memory_episode e
                           WHERE e.experiment_id = %(exp)s AND NOT e.is_public AND e.agent_id > a.agent_id)
                   FROM a WHERE a.agent_id IS NOT NULL)
               SELECT agent_id FROM a WHERE agent_id IS NOT NULL""",
            {"exp": experiment.pk},
        )
        return sorted(agent for (agent,) in cursor.fetchall())


def recall_data(experiment: Experiment, block: recall.RecallBlock) -> dict[str, Any]:
    """The recall block as the API and the page show it, every text through the redaction façade."""
    redactor = redactor_for(experiment)  # one look-up of the masks for the block's ~15 texts

    def item(scored: recall.Scored) -> dict[str, Any]:
        episode = scored.episode
        return {
            "content": redactor.text(scored.content), "source": episode.source, "kind": episode.kind,
            "turn": episode.clock, "run_id": episode.run_id, "agent_id": episode.agent_id,
            "scores": {"relevance": scored.relevance, "recency": scored.recency, "importance": scored.importance,
                       "salience": scored.salience},
        }  # fmt: skip

    return {
        "agent_id": block.agent_id, "turn": block.turn, "query": block.query, "top_k": len(block.items),
        "items": [item(s) for s in block.items], "below_cut": [item(s) for s in block.below],
        "block": redactor.text(block.block),
    }  # fmt: skip


def remask_episodes(experiment_id: int, values: list[str]) -> int:
    """Mask newly learnt secrets in episodes projected before they were known: their text and word set are made
    again from the masked fields, so no recall query can confirm a guess of a masked value by its relevance."""
    like = [f"%{_like_escape(value)}%" for value in values]
    in_json = [f"%{_like_escape(json.dumps(value, ensure_ascii=False)[1:-1])}%" for value in values]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memory_episode WHERE experiment_id = %s AND (text LIKE ANY(%s) OR fields::text LIKE ANY(%s))",
            [experiment_id, like, in_json],
        )
        ids = [pk for (pk,) in cursor.fetchall()]
    if not ids:
        return 0
    experiment = Experiment.objects.get(pk=experiment_id)
    redactor = redactor_for(experiment)
    changed = []
    for episode in Episode.objects.filter(pk__in=ids).only("pk", "kind", "fields", "text", "words"):
        text = _masked_text(episode, redactor)
        if text != episode.text:
            episode.text, episode.words = text, sorted(recall.words(text))
            changed.append(episode)
    Episode.objects.bulk_update(changed, ["text", "words"])
    return len(changed)


def _masked_text(episode: Episode, redactor: Any) -> str:
    """The episode's text made again from its masked fields (a value cut by the length limit is masked too)."""
    if episode.kind == "reflection" or not isinstance(episode.fields, dict):
        return redactor.text(episode.text)
    prefix = ""
    if episode.kind == "board.post" and episode.text.startswith("[") and "] " in episode.text:
        prefix = redactor.text(episode.text[: episode.text.index("] ") + 2])
    return prefix + recall.render_fields(redactor.value(episode.fields))


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
