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
    known = Episode.objects.filter(run=run).aggregate(top=Max("turn"))["top"] or 0
    steps = Episode.objects.filter(run=run, kind="state.snapshot").count()
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
            turn=turn, is_public=event.kind in recall.PUBLIC_KINDS, fields=fields, text=text,
            occurred_at=event.occurred_at or event.recorded_at,
        ))  # fmt: skip
    Episode.objects.bulk_create(rows, ignore_conflicts=True)
    from memory.reflection import schedule_due_reflections

    schedule_due_reflections(experiment)


def load_episodes(experiment: Experiment, reader: str) -> list[recall.Episode]:
    """Every episode of the experiment on its turn clock; other agents' outputs carry their fields for filtering."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT r.run_id, coalesce(max(e.turn), 0) + 1 FROM experiments_run r
               JOIN memory_episode e ON e.run_id = r.id WHERE r.experiment_id = %s
               GROUP BY r.id ORDER BY coalesce(r.started_at, min(e.occurred_at), r.created_at), r.id""",
            [experiment.pk],
        )
        offsets = recall.turn_clock(cursor.fetchall())
        # Own episodes and text-only ones need no fields: leaving them out keeps a 10k-episode recall cheap.
        cursor.execute(
            """SELECT e.key, e.agent_id, e.kind, coalesce(r.run_id, ''), e.turn, e.text,
                      CASE WHEN e.agent_id = %s THEN NULL ELSE e.fields END
               FROM memory_episode e LEFT JOIN experiments_run r ON r.id = e.run_id
               WHERE e.experiment_id = %s""",
            [reader, experiment.pk],
        )
        rows = cursor.fetchall()
    # Django leaves jsonb undecoded on a raw cursor. Fields are rendered into text for others to read, so they
    # pass the redaction façade first (one call for all of them): a masked key never turns into prose.
    decoded = [json.loads(row[6]) if isinstance(row[6], str) else row[6] for row in rows]
    masked = iter(redact_for(experiment, [fields for fields in decoded if fields is not None]))
    rows = [(*row[:6], next(masked) if fields is not None else None) for row, fields in zip(rows, decoded, strict=True)]
    return [
        recall.Episode(key=key, agent_id=agent, kind=kind, run_id=run_id, turn=turn, clock=offsets.get(run_id, 0) + turn,
                       text=text, fields=fields, source=_source(kind, run_id, turn, agent))
        for key, agent, kind, run_id, turn, text, fields in rows
    ]  # fmt: skip


def _source(kind: str, run_id: str, turn: int, agent: str) -> str:
    who = f" · {agent}" if agent else ""
    if kind == "reflection":
        return f"reflection of {agent} after run {run_id} turn {turn}"
    return f"run {run_id} · turn {turn}{who}"


def recall_for(
    *, experiment: Experiment, agent_id: str, query: str = "", turn: int | None = None, top_k: int | None = None
) -> recall.RecallBlock:
    """The recall block `agent_id` would receive now (or at `turn` on the experiment's turn clock)."""
    weights = recall.SalienceWeights.from_config(experiment.memory_config)
    policy = state_settings(experiment.protocol).sharing
    episodes = load_episodes(experiment, agent_id)
    relevance = semantic_relevance(experiment, query)
    return recall.recall(episodes, reader=agent_id, policy=policy, weights=weights, query=query, turn=turn, top_k=top_k,
                         relevance=relevance)  # fmt: skip


def semantic_relevance(experiment: Experiment, query: str) -> dict[str, float] | None:
    """Cosine similarity (clipped at 0) of the query and every embedded episode, when the semantic tier is on.

    Worker results and reflections are episodic chunks keyed like their episodes; None (keyword relevance for
    all) when there is no query, the tier is off, or nothing is embedded yet (the model is then not even asked).
    """
    if not query.strip() or not embeddings.is_enabled():
        return None
    model = embeddings.current_model_name()
    where = "experiment_id = %s AND tier = 'episodic' AND model_name = %s AND embedding IS NOT NULL"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM memory_memorychunk WHERE {where})", [experiment.pk, model])
        if not cursor.fetchone()[0]:
            return None
        try:
            vector = vector_literal(embeddings.embed_query(query))
        except embeddings.EmbedderDisabled:
            return None
        cursor.execute(
            f"SELECT ref_key, greatest(0, 1 - (embedding <=> %s::vector)) FROM memory_memorychunk WHERE {where}",
            [vector, experiment.pk, model],
        )
        return {key: float(score) for key, score in cursor.fetchall()}


def recall_agents(experiment: Experiment) -> list[str]:
    """Agents that produced episodes in this experiment (whose recall one can look at)."""
    names = Episode.objects.filter(experiment=experiment, is_public=False).exclude(agent_id="")
    return sorted(set(names.values_list("agent_id", flat=True).distinct()))


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
        "considered": block.considered, "items": [item(s) for s in block.items], "below_cut": [item(s) for s in block.below],
        "block": redact_text_for(experiment, block.block),
    }  # fmt: skip
