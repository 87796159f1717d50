"""Episodes: the ledger projected into what agents can recall, and the recall block one agent would receive."""

from __future__ import annotations

import json
from typing import Any

from django.db import connection
from django.db.models import Max

from experiments.models import Event, Experiment, Run
from experiments.projections import ProjectionContext
from memory import embeddings, recall
from memory.models import Episode
from memory.search import vector_literal
from state.config import state_settings
from state.services_redaction import redact_for, redact_text_for

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
        rows.append(Episode(
            experiment=experiment, run=run, key=f"ev:{run.pk}:{event.seq}", agent_id=agent[:200], kind=event.kind,
            turn=turn, is_public=event.kind in recall.PUBLIC_KINDS, fields=fields, text=text, words=sorted(recall.words(text)),
            occurred_at=event.occurred_at or event.recorded_at,
        ))  # fmt: skip
    Episode.objects.bulk_create(rows, ignore_conflicts=True)
    from memory.reflection import schedule_due_reflections

    schedule_due_reflections(experiment)


def turn_clock(experiment: Experiment) -> tuple[dict[int, tuple[str, int]], int]:
    """Each run's (run id, offset) on the experiment's turn clock, and the latest turn on it."""
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
    return runs, sum(length for _, _, length in rows) - 1 if rows else 0


def load_episodes(
    experiment: Experiment, reader: str, *, where: str = "", params: list[Any] | None = None,
    runs: dict[int, tuple[str, int]] | None = None,
) -> list[recall.Episode]:
    """Episodes of the experiment on its turn clock (all, or those `where` selects); other agents' outputs carry
    their fields, key-redacted, for the sharing filter."""
    if runs is None:
        runs, _ = turn_clock(experiment)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""SELECT e.key, e.agent_id, e.kind, e.run_id, e.turn, e.text,
                      CASE WHEN e.agent_id = %s THEN NULL ELSE e.fields END
               FROM memory_episode e WHERE e.experiment_id = %s {where}""",
            [reader, experiment.pk, *(params or [])],
        )
        rows = cursor.fetchall()
    # Django leaves jsonb undecoded on a raw cursor. Fields are rendered into text for others to read, so they
    # pass the redaction façade first (one call for all of them): a masked key never turns into prose.
    decoded = [json.loads(row[6]) if isinstance(row[6], str) else row[6] for row in rows]
    masked = iter(redact_for(experiment, [fields for fields in decoded if fields is not None]))
    out = []
    for (key, agent, kind, run_pk, turn, text, _), fields in zip(rows, decoded, strict=True):
        run_id, offset = runs.get(run_pk, ("", 0))
        out.append(recall.Episode(key=key, agent_id=agent, kind=kind, run_id=run_id, turn=turn, clock=offset + turn, text=text,
                                  fields=next(masked) if fields is not None else None, source=_source(kind, run_id, turn, agent)))  # fmt: skip
    return out


def _source(kind: str, run_id: str, turn: int, agent: str) -> str:
    who = f" · {agent}" if agent else ""
    if kind == "reflection":
        return f"reflection of {agent} after run {run_id} turn {turn}"
    return f"run {run_id} · turn {turn}{who}"


def recall_for(
    *, experiment: Experiment, agent_id: str, query: str = "", turn: int | None = None, top_k: int | None = None
) -> recall.RecallBlock:
    """The recall block `agent_id` would receive now (or at `turn` on the experiment's turn clock).

    Same result as `recall.recall` over every episode, but fast for big histories: the episodes the agent sees
    whole (its own, the public record, outputs shared whole) are scored and cut in SQL; only what it sees in
    part (selective rules, never_share fields present) goes through the pure filter in Python.
    """
    weights = recall.SalienceWeights.from_config(experiment.memory_config)
    policy = state_settings(experiment.protocol).sharing
    runs, latest = turn_clock(experiment)
    now = turn if turn is not None else latest
    k = top_k or weights.top_k
    whole, partial = recall.split_producers(policy, agent_id, recall_agents(experiment))
    hidden = sorted(policy.never_share)
    # A row naming a never_share key anywhere in its fields cannot be shown as stored: the Python path filters it.
    patterns = ['%"' + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + '":%' for name in hidden]
    fast = ("(e.agent_id = %(reader)s OR ((e.is_public OR e.agent_id = ANY(%(whole)s))"
            + (" AND NOT coalesce(e.fields::text, '') LIKE ANY(%(hidden)s)))" if hidden else "))"))  # fmt: skip
    params = {"reader": agent_id, "whole": whole, "hidden": patterns}
    semantic = semantic_query_vector(experiment, query)
    limit = k + recall.BELOW_CUT
    # Recent turns first: their (k + BELOW_CUT)-th best is a floor the whole history must beat, so episodes too
    # old to reach it (and sharing no word with the query) are never scored.
    scored = _scored_in_sql(experiment, runs, weights, now, query, k, fast, params, semantic=semantic,
                            min_clock=now - 4 * limit, or_words=False)  # fmt: skip
    floor = scored[-1].exact if len(scored) >= limit else None
    oldest = recall.oldest_clock_that_can_rank(weights, now=now, threshold=floor, has_query=semantic is not None)
    scored = _scored_in_sql(experiment, runs, weights, now, query, k, fast, params, semantic=semantic,
                            min_clock=oldest, or_words=True)  # fmt: skip
    names_hidden = "coalesce(e.fields::text, '') LIKE ANY(%s)" if hidden else "false"
    hidden_params = [patterns] if hidden else []
    slow = (f"AND e.agent_id <> %s AND ((NOT e.is_public AND e.agent_id = ANY(%s)) "
            f"OR ((e.is_public OR e.agent_id = ANY(%s)) AND {names_hidden}))")  # fmt: skip
    slow_params = [agent_id, partial, whole, *hidden_params]
    # What the sharing rules show in part is scored in Python: only from turns where it could still make the cut.
    threshold = scored[-1].exact if len(scored) >= k + recall.BELOW_CUT else None
    oldest = recall.oldest_clock_that_can_rank(weights, now=now, threshold=threshold, has_query=bool(recall.words(query)))
    if oldest is not None:
        slow += " AND e.turn >= coalesce((%s::int[])[array_position(%s::bigint[], e.run_id)], %s)"
        slow_params += [[oldest - offset for _, offset in runs.values()], list(runs), oldest]
    rest = recall.score_episodes(load_episodes(experiment, agent_id, where=slow, params=slow_params, runs=runs), reader=agent_id,
                                 policy=policy, weights=weights, now=now, query=query)  # fmt: skip
    items, below = recall.cut([*scored, *rest], k=k)
    return recall.RecallBlock(agent_id=agent_id, turn=now, query=query, weights=weights, items=items, below=below)


def _scored_in_sql(
    experiment: Experiment, runs: dict[int, tuple[str, int]], weights: recall.SalienceWeights, now: int, query: str,
    k: int, where: str, params: dict[str, Any], *, semantic: str | None, min_clock: int | None, or_words: bool,
) -> list[recall.Scored]:
    """The best k + BELOW_CUT of the rows `where` selects, scored by the reference formula in SQL.

    `min_clock` leaves out older rows (also those sharing a query word unless `or_words`) before scoring.
    """
    total = weights.relevance + weights.recency + weights.importance
    query_words = sorted(recall.words(query))
    kinds = list(recall.IMPORTANCE)
    recent = ""
    if min_clock is not None:
        recent = " AND (coalesce(o.off, 0) + e.turn >= %(min_clock)s" + (" OR e.words && %(q)s::text[])" if or_words and query_words else ")")
    # Jaccard of the stored word set and the query's words, exactly as recall.keyword_relevance computes it.
    # |query ∩ words| as a sum of one-element containments (no subquery per row); the query's words are bound
    # one by one as q0, q1, …
    shared = " + ".join(f"(e.words @> ARRAY[%(q{i})s]::text[])::int" for i in range(len(query_words))) or "0"
    keyword = (f"CASE WHEN e.words && %(q)s::text[] THEN ({shared})::float8 / (cardinality(e.words) + %(nq)s - ({shared})) "
               "ELSE 0 END")  # fmt: skip
    relevance = f"coalesce(greatest(0, 1 - (c.embedding <=> %(vec)s::vector))::float8, {keyword})" if semantic else keyword
    chunk = ("LEFT JOIN memory_memorychunk c ON c.experiment_id = e.experiment_id AND c.ref_key = e.key "
             "AND c.model_name = %(model)s AND c.embedding IS NOT NULL") if semantic else ""  # fmt: skip
    sql = f"""
        WITH o(run_pk, off) AS (SELECT * FROM unnest(%(runs)s::bigint[], %(offs)s::int[])),
        s AS (
            SELECT e.key, e.agent_id, e.kind, e.run_id, e.turn, e.text, coalesce(o.off, 0) + e.turn AS clock,
                   {relevance if query_words or semantic else "0::float8"} AS rel
            FROM memory_episode e LEFT JOIN o ON o.run_pk = e.run_id {chunk}
            WHERE e.experiment_id = %(exp)s AND {where}{recent}
        ),
        t AS (
            SELECT *, CASE WHEN d > 700 THEN 0::float8 ELSE exp(-d) END AS rec,
                   coalesce((%(imps)s::float8[])[array_position(%(kinds)s::text[], kind)], (%(default)s)::float8) AS imp
            FROM (SELECT *, (%(lam)s)::float8 * greatest(0, %(now)s - clock) AS d FROM s WHERE clock <= %(now)s) decayed
        )
        -- exp() underflows to an error in Postgres where Python's gives 0: beyond e^-700 recency is 0.
        SELECT key, agent_id, kind, run_id, turn, text, clock, rel, rec, imp,
               ((%(wrel)s)::float8 * least(1, greatest(0, rel)) + (%(wrec)s)::float8 * rec + (%(wimp)s)::float8 * imp)
                   / (%(total)s)::float8 AS sal
        FROM t ORDER BY sal DESC, clock DESC, key DESC LIMIT %(limit)s"""
    named = {
        "runs": list(runs), "offs": [offset for _, offset in runs.values()], "exp": experiment.pk, "q": query_words,
        "nq": len(query_words), "lam": weights.decay_lambda, "now": now, "imps": [recall.IMPORTANCE[kind] for kind in kinds],
        "kinds": kinds, "default": recall.DEFAULT_IMPORTANCE, "wrel": weights.relevance, "wrec": weights.recency,
        "wimp": weights.importance, "total": total, "limit": k + recall.BELOW_CUT,
        "vec": semantic or "", "model": embeddings.current_model_name() if semantic else "", "min_clock": min_clock,
    }  # fmt: skip
    named.update(params)
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
    names = Episode.objects.filter(experiment=experiment, is_public=False).exclude(agent_id="").order_by()
    return sorted(names.values_list("agent_id", flat=True).distinct())


def recall_data(experiment: Experiment, block: recall.RecallBlock) -> dict[str, Any]:
    """The recall block as the API and the page show it, every text through the redaction façade."""

    def item(scored: recall.Scored) -> dict[str, Any]:
        episode = scored.episode
        return {
            "content": redact_text_for(experiment, scored.content), "source": episode.source, "kind": episode.kind,
            "turn": episode.clock, "run_id": episode.run_id, "agent_id": episode.agent_id,
            "scores": {"relevance": scored.relevance, "recency": scored.recency, "importance": scored.importance,
                       "salience": scored.salience},
        }  # fmt: skip

    return {
        "agent_id": block.agent_id, "turn": block.turn, "query": block.query, "top_k": len(block.items),
        "items": [item(s) for s in block.items], "below_cut": [item(s) for s in block.below],
        "block": redact_text_for(experiment, block.block),
    }  # fmt: skip
