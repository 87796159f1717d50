"""Chart data of a run (confidence, eval score, budget use, loss) and of an experiment (runs over time, review flow).

Values are read with a few SQL queries that pull only the numbers out of the payloads (never whole payloads),
each capped and bounded by the run's head, and kept per (run, head) in experiments/ledger_cache.py, so a run
with 100k events draws as fast as a small one; experiments/charts.py does the geometry. Numbers are not
secrets, but labels (worker ids, run ids) pass through the redaction façade like every text, on every read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from django.db import connection
from django.urls import reverse
from django.utils import timezone

from experiments import ledger_cache
from experiments.charts import Chart, Point, Series, fmt_number, line_chart
from experiments.models import Experiment, Run

MAX_ITERATIONS = 100  # the newest iterations a run chart draws (a note says when older ones are left out)
ROW_CAP = 800  # rows read per chart query, newest first (the oldest iteration read is dropped when it may be partial)
BUDGET_DIMENSIONS = (
    ("loops", "used", "max", "loops"),
    ("workers", "spawned", "max", "workers"),
    ("tokens", "consumed", "max", "tokens"),
    ("tool_calls", "used", "max", "tool calls"),
    ("wall_time", "elapsed_s", "max_s", "wall time"),
)
# metric.budget lines carry the same numbers flat (awp-agents metrics.jsonl).
FLAT_BUDGET = {"loops": ("loops_used", "max_loops"), "workers": ("workers_used", "max_workers"), "tokens": ("tokens_used", "max_tokens"), "tool_calls": ("tool_calls_used", "max_tool_calls"), "wall_time": ("wall_time_s", "max_wall_time_s")}
CHART_KINDS = frozenset({"worker.complete", "metric.eval", "metric.budget", "metric.loss", "iteration.budget", "state.snapshot", "metric.model_call"})


@dataclass
class RunCharts:
    confidence: Chart
    score: Chart
    budget: Chart
    loss: Chart
    is_dag: bool
    iterations_shown: int
    oldest_shown: int | None

    @property
    def charts(self) -> list[tuple[str, Chart]]:
        out = [("confidence", self.confidence), ("score", self.score), ("budget", self.budget)]
        return out + ([("loss", self.loss)] if not self.loss.is_empty else [])


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _json(value: Any) -> Any:
    """A jsonb column read through a raw cursor: Django's psycopg setup hands it over as text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _rows(sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _newest(run: Run, kind: str, columns: str) -> list[tuple[Any, ...]]:
    """(seq, iteration, agent_id, <columns>) of the newest ROW_CAP events of a kind up to the run's head, oldest first."""
    # Bounded by the head the caller keys its cache entry on (experiments/ledger_cache.py).
    rows = _rows(
        f"SELECT seq, iteration, agent_id, {columns} FROM experiments_event WHERE run_id = %s AND kind = %s AND seq <= %s ORDER BY seq DESC LIMIT %s",
        [run.pk, kind, run.last_seq, ROW_CAP],
    )
    if len(rows) == ROW_CAP and rows[-1][1] is not None:
        # The cap may have cut the oldest iteration read in half: leave it out rather than draw part of it.
        cut = rows[-1][1]
        rows = [row for row in rows if row[1] is None or row[1] != cut]
    return [(seq, iteration, agent, *(_json(v) for v in values)) for seq, iteration, agent, *values in reversed(rows)]


def _keep_newest(points: dict[str, list[Point]], limit: int) -> tuple[dict[str, list[Point]], int | None]:
    xs = sorted({p.x for ps in points.values() for p in ps})
    if len(xs) <= limit:
        return points, None
    floor = xs[-limit]
    return {name: [p for p in ps if p.x >= floor] for name, ps in points.items()}, int(floor)


@dataclass
class RunSeries:
    """A run's chart values before scaling (the compare view overlays two of these)."""

    confidence: list[Series]
    score: list[Series]
    budget: list[Series]
    loss: list[Series]
    is_dag: bool
    iterations_shown: int
    oldest_shown: int | None


def run_series(run: Run) -> RunSeries:
    """Per-iteration (or per DAG step) confidence and eval score per worker, budget use, loss; names redacted."""
    return _redacted(run, ledger_cache.cached(run, "run_series", _ledger_series, run.engine))


def _ledger_series(run: Run) -> RunSeries:
    """run_series as the ledger says it, up to the run's head, before redaction (what ledger_cache keeps)."""
    is_dag = run.engine == "dag"
    step = "DAG step" if is_dag else "iteration"
    confidence: dict[str, list[Point]] = defaultdict(list)
    score: dict[str, list[Point]] = defaultdict(list)
    if is_dag:
        # One state snapshot per agent as it finishes: the agent's own confidence in its slice of the state.
        for number, (_, _, agent, value) in enumerate(_newest(run, "state.snapshot", "payload->'state'->agent_id->'confidence'"), start=1):
            if (v := _number(value)) is not None and agent:
                confidence[agent].append(Point(number, v, f"{agent} · step {number} · confidence {v:.2f}"))
    else:
        for _, iteration, agent, value, eval_score in _newest(run, "worker.complete", "payload->'confidence', payload->'_eval_score'"):
            if iteration is None:
                continue
            if (v := _number(value)) is not None:
                confidence[agent or "?"].append(Point(iteration, v, f"{agent} · iteration {iteration} · confidence {v:.2f}"))
            if (sc := _number(eval_score)) is not None:
                score[agent or "?"].append(Point(iteration, sc, f"{agent} · iteration {iteration} · eval score {sc:.3f}"))
        if not score:
            for _, iteration, agent, value in _newest(run, "metric.eval", "payload->'score'"):
                if iteration is not None and (sc := _number(value)) is not None:
                    score[agent or "?"].append(Point(iteration, sc, f"{agent} · iteration {iteration} · eval score {sc:.3f}"))
    budget = _budget_points(run)
    loss: dict[str, list[Point]] = defaultdict(list)
    for seq, iteration, _, value, alt in _newest(run, "metric.loss", "payload->'loss', payload->'value'"):
        y = _number(value) if _number(value) is not None else _number(alt)
        x = iteration if iteration is not None else seq
        if y is not None:
            loss["loss"].append(Point(x, y, f"{step} {x} · loss {y:.4g}"))
    confidence, oldest = _keep_newest(confidence, MAX_ITERATIONS)
    score, _ = _keep_newest(score, MAX_ITERATIONS)
    budget, _ = _keep_newest(budget, MAX_ITERATIONS)

    def series(points: dict[str, list[Point]]) -> list[Series]:
        return [Series(name, tuple(ps)) for name, ps in sorted(points.items())]

    shown = len({p.x for ps in confidence.values() for p in ps} | {p.x for ps in budget.values() for p in ps})
    return RunSeries(series(confidence), series(score), [Series(n, tuple(ps)) for n, ps in budget.items()], series(loss), is_dag, shown, oldest)


def _redacted(run: Run, values: RunSeries) -> RunSeries:
    """The series with worker names redacted, in their names and in the tooltips that name them."""
    from state.services_redaction import redact_text_for

    agents = sorted({s.name for s in values.confidence} | {s.name for s in values.score})
    safe = dict(zip(agents, redact_text_for(run.experiment, "\n".join(agents)).split("\n"), strict=False)) if agents else {}

    def series(named: list[Series]) -> list[Series]:
        out = []
        for s in named:
            shown = safe.get(s.name, s.name)
            if shown == s.name:
                out.append(s)
                continue
            out.append(Series(shown, tuple(Point(p.x, p.y, p.label.replace(s.name, shown, 1), p.mark, p.css) for p in s.points)))
        return out

    return RunSeries(series(values.confidence), series(values.score), list(values.budget), series(values.loss), values.is_dag, values.iterations_shown, values.oldest_shown)


def charts_of(values: RunSeries, *, prefix: str = "") -> RunCharts:
    """The four run charts from series (prefix: a title prefix for the compare view)."""
    step = "DAG step" if values.is_dag else "iteration"
    return RunCharts(
        confidence=line_chart(values.confidence, title=f"{prefix}Confidence per {step} and worker", x_label=step, y_label="confidence (0–1)", y_range=(0.0, 1.0), integer_x=True),
        score=line_chart(values.score, title=f"{prefix}Eval score per {step} and worker", x_label=step, y_label="eval score (0–1)", y_range=(0.0, 1.0), integer_x=True),
        budget=line_chart(values.budget, title=f"{prefix}Budget use against its limits", x_label="iteration", y_label="% of limit", y_range=(0.0, 100.0), integer_x=True),
        loss=line_chart(values.loss, title=f"{prefix}Loss reported by the runtime", x_label=step, y_label="loss", integer_x=True),
        is_dag=values.is_dag,
        iterations_shown=values.iterations_shown,
        oldest_shown=values.oldest_shown,
    )


def run_charts(run: Run) -> RunCharts:
    """The run page's charts."""
    return charts_of(run_series(run))


def _budget_points(run: Run) -> dict[str, list[Point]]:
    """% of each limit used, per iteration: budget_snapshot.json (iteration.budget), else metric.budget lines."""
    points: dict[str, list[Point]] = {label: [] for _, _, _, label in BUDGET_DIMENSIONS}
    for _, iteration, _, payload in _newest(run, "iteration.budget", "payload"):
        if iteration is None or not isinstance(payload, dict):
            continue
        for key, used_key, max_key, label in BUDGET_DIMENSIONS:
            entry = payload.get(key) if isinstance(payload.get(key), dict) else {}
            _add_budget(points[label], iteration, label, _number(entry.get(used_key)), _number(entry.get(max_key)))
    if not any(points.values()):
        for _, iteration, _, payload in _newest(run, "metric.budget", "payload"):
            if iteration is None or not isinstance(payload, dict):
                continue
            for key, _, _, label in BUDGET_DIMENSIONS:
                used_key, max_key = FLAT_BUDGET[key]
                _add_budget(points[label], iteration, label, _number(payload.get(used_key)), _number(payload.get(max_key)))
    if not any(points.values()):
        points["tokens"] = _token_burn_up(run)
    return {label: ps for label, ps in points.items() if ps}


def _token_burn_up(run: Run) -> list[Point]:
    """An OTel run has no limits: its tokens so far, per model call, as % of all the run's tokens (a burn-up)."""
    calls = _newest(run, "metric.model_call", "payload->'input_tokens', payload->'output_tokens'")
    spent = [(_number(i) or 0.0) + (_number(o) or 0.0) for _, _, _, i, o in calls]
    total = sum(spent)
    points, so_far = [], 0.0
    for number, tokens in enumerate(spent, start=1):
        so_far += tokens
        pct = 100.0 * so_far / total if total else 0.0
        points.append(Point(number, round(pct, 2), f"tokens · model call {number} · {fmt_number(so_far)} of {fmt_number(total)} ({pct:.1f}%)"))
    return points


def _add_budget(points: list[Point], iteration: int, label: str, used: float | None, limit: float | None) -> None:
    if used is None or not limit:
        return
    pct = 100.0 * used / limit
    unit = " s" if label == "wall time" else ""
    points[:] = [p for p in points if p.x != iteration]  # a rewritten snapshot replaces the earlier one
    points.append(Point(iteration, round(pct, 2), f"{label} · iteration {iteration} · {fmt_number(used)}{unit} of {fmt_number(limit)}{unit} ({pct:.1f}%)"))


# Experiment charts ------------------------------------------------------------------------------------


def _epoch(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment else None


def _date(value: float) -> str:
    return datetime.fromtimestamp(value, tz=UTC).strftime("%m-%d %H:%M")


def _day(value: float) -> str:
    return datetime.fromtimestamp(value, tz=UTC).strftime("%Y-%m-%d")


@dataclass
class ExperimentCharts:
    runs: Chart
    loss: Chart
    review: Chart
    run_count: int


def experiment_charts(experiment: Experiment, limit: int = 2000, *, best: set[int] | None = None) -> ExperimentCharts:
    """Runs over time (duration, status, BEST per task), loss per task, and the review queue's flow per day.

    The newest `limit` runs: an experiment with years of runs charts its recent ones (the Runs tab lists them all).
    `best`: the tasks' best run ids, when the caller has read them.
    """
    from experiments.humanize import human_duration
    from state.services_redaction import redact_text_for

    runs = list(experiment.runs.select_related("task").order_by("-created_at", "-pk")[:limit])[::-1]  # the newest, oldest first
    if best is None:
        best = set(experiment.tasks.exclude(best_run=None).values_list("best_run_id", flat=True))
    durations: dict[str, list[Point]] = defaultdict(list)
    losses: dict[str, list[Point]] = defaultdict(list)
    run_names = redact_text_for(experiment, "\n".join(r.run_id for r in runs)).split("\n") if runs else []
    for run, name in zip(runs, run_names, strict=False):
        task = f"task {run.task.number}" if run.task else "no task"
        when = _epoch(run.started_at) or _epoch(run.created_at) or 0.0
        seconds = run.duration_seconds
        mark = "best" if run.pk in best else ""
        shown = human_duration(seconds) if seconds is not None else "running"
        label = f"{name} · {task} · {run.status} · {shown}" + (f" · loss {run.loss:.4g}" if run.loss is not None else "") + (" · BEST" if mark else "")
        durations[task].append(Point(when, seconds if seconds is not None else 0.0, label, mark, f"status-{run.status}"))
        if run.loss is not None:
            losses[task].append(Point(when, run.loss, label, mark, f"status-{run.status}"))
    runs_chart = line_chart(
        [Series(t, tuple(ps)) for t, ps in sorted(durations.items())],
        title="Runs over time: duration by start, coloured by status (BEST marked)", x_label="started (UTC)", y_label="duration (s)", x_format=_date, x_time=True, show_lines=False, x_pad=3600,
    )
    loss_chart = line_chart([Series(t, tuple(ps)) for t, ps in sorted(losses.items())], title="Loss per task (BEST marked)", x_label="started (UTC)", y_label="loss", x_format=_date, x_time=True, x_pad=3600)
    return ExperimentCharts(runs_chart, loss_chart, review_flow(experiment), len(runs))


def review_flow(experiment: Experiment, days: int = 60) -> Chart:
    """Proposed, approved and rejected review items per day (the newest `days` days with any activity)."""
    from memory.curation.models import Decision, Proposal

    per_day: dict[str, dict[Any, int]] = {"proposed": {}, "approved": {}, "rejected": {}}
    # One statement for both counts, days as TruncDate cuts them (the current time zone): every Runs tab draws this.
    proposals, decisions = Proposal._meta.db_table, Decision._meta.db_table
    zone = timezone.get_current_timezone_name()
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 'proposed', (first_seen_at AT TIME ZONE %s)::date, count(*) FROM {proposals} WHERE experiment_id = %s GROUP BY 2"
            f" UNION ALL SELECT d.outcome, (d.created_at AT TIME ZONE %s)::date, count(*) FROM {decisions} d"
            f" JOIN {proposals} p ON p.id = d.proposal_id WHERE p.experiment_id = %s AND d.outcome IN ('approved', 'rejected')"
            " GROUP BY 1, 2",
            [zone, experiment.pk, zone, experiment.pk],
        )
        for outcome, day, n in cursor.fetchall():
            per_day[outcome][day] = n
    all_days = sorted({d for counts in per_day.values() for d in counts})[-days:]
    x_of = {d: datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp() for d in all_days}
    series = [
        Series(name, tuple(Point(x_of[d], float(counts.get(d, 0)), f"{d.isoformat()} · {counts.get(d, 0)} {name}") for d in all_days))
        for name, counts in per_day.items()
    ]
    return line_chart(series if all_days else [], title="Review queue flow per day", x_label="day (UTC)", y_label="items per day", x_format=_day, x_time=True, x_pad=86400)


# The run as a graph ------------------------------------------------------------------------------------

GRAPH_ITERATIONS = 12  # the newest iterations per run drawn as a tree (the list says when older ones are left out)


def run_graph(run: Run) -> list[Any]:
    """Nodes of the run's graph: the DAG of workflow.awp.yaml, or the delegation tree with sub-managers nested."""
    from experiments import graph
    from state.services_redaction import redact_text_for, redactor_for

    if run.engine == "dag":
        facts = ledger_cache.cached(run, "dag_facts", _dag_facts)
        steps = graph.dag_steps(run.experiment.protocol or {})
        nodes = graph.dag_graph(steps, facts, run_pk=run.pk, run_started=run.started_at, run_status=run.status)
    elif run.engine == "otel":
        spans = ledger_cache.cached(run, "otel_spans", _span_rows)
        nodes = graph.span_agent_tree(graph.RunInfo(run.pk, run.run_id, run.status, run.duration_seconds), spans)
    else:
        runs = {run.pk: run}
        frontier = [run.pk]
        for _ in range(8):
            children = list(Run.objects.filter(parent_id__in=frontier))
            frontier = [c.pk for c in children if c.pk not in runs]
            runs.update({c.pk: c for c in children})
            if not frontier:
                break
        by_run_id = {r.run_id: r.pk for r in runs.values()}
        child_of = {(r.parent_id, r.parent_worker): r.pk for r in runs.values() if r.parent_id}
        rows = []
        for pk in runs:
            seen_rows: dict[tuple[int, str], graph.WorkerRow] = {}
            fetched = ledger_cache.cached(runs[pk], "graph_workers", _worker_events)
            newest = sorted({r[0] for r in fetched if r[0] is not None})[-GRAPH_ITERATIONS:]
            spawned_at: dict[tuple[int, str], Any] = {}
            for iteration, agent, kind, confidence, sub_run_id, occurred in reversed(fetched):
                if iteration not in newest or not agent:
                    continue
                key = (iteration, agent)
                if kind == "worker.spawn":
                    spawned_at[key] = occurred
                    seen_rows.setdefault(key, graph.WorkerRow(pk, iteration, agent, "running" if runs[pk].status == "running" else "no result"))
                    continue
                began = spawned_at.get(key)
                duration = (occurred - began).total_seconds() if occurred and began else None
                child = by_run_id.get(sub_run_id) if sub_run_id else child_of.get((pk, agent))
                seen_rows[key] = graph.WorkerRow(pk, iteration, agent, "complete", _number(confidence), duration, child)
            rows.extend(seen_rows.values())
        infos = {pk: graph.RunInfo(pk, r.run_id, r.status, r.duration_seconds) for pk, r in runs.items()}
        nodes = graph.delegation_tree(infos[run.pk], infos, rows)
    labels = redact_text_for(run.experiment, "\n".join(n.label.replace("\n", " ") for n in nodes)).split("\n") if nodes else []
    timelines = {pk: reverse("experiments:run-detail", args=[run.experiment.slug, pk]) for pk in {n.run_pk for n in nodes if n.run_pk}}
    # Node ids, edges and the worker filter are derived from agent ids: masked before they are derived into
    # attributes (data-node, data-parent, data-deps, a URL-quoted href) the last-line net would not recognise.
    redactor = redactor_for(run.experiment)
    names = {name: redactor.text(name) for n in nodes for name in (n.id, n.parent, n.agent, *n.depends_on) if name}
    for node, label in zip(nodes, labels, strict=False):
        node.label = label
        node.id, node.parent, node.agent = names.get(node.id, node.id), names.get(node.parent, node.parent), names.get(node.agent, node.agent)
        node.depends_on = [names.get(d, d) for d in node.depends_on]
        if node.agent and node.run_pk:
            node.href = f"{timelines[node.run_pk]}?worker={quote(node.agent)}"
    return nodes


def _dag_facts(run: Run) -> dict[str, Any]:
    """Each DAG agent's state snapshot (when written, its confidence), up to the run's head."""
    from experiments import graph
    from experiments.awp.events import parse_time

    facts = {}
    for _, _, agent, stamp, confidence, occurred in _newest(run, "state.snapshot", "payload->>'timestamp', payload->'state'->agent_id->'confidence', occurred_at"):
        if agent and agent != "final":
            facts[agent] = graph.AgentFacts(parse_time(stamp) or occurred, _number(confidence))
    return facts


SPAN_ROWS = 5000  # the newest spans read per OTel run for its agent tree


def _span_rows(run: Run) -> list[Any]:
    """(seq, span id, parent span id, agent, status, duration) of the newest SPAN_ROWS spans up to the run's head."""
    from experiments import graph

    rows = _rows(
        """SELECT seq, kind, agent_id, payload->>'span_id', payload->>'parent_span_id', payload->>'status', payload->'duration_ms'
           FROM experiments_event WHERE run_id = %s AND ts_source = 'span' AND seq <= %s ORDER BY seq DESC LIMIT %s""",
        [run.pk, run.last_seq, SPAN_ROWS],
    )
    out = []
    for seq, kind, agent, span_id, parent, status, duration in rows:
        if not span_id:
            continue
        ms = _number(_json(duration))
        is_agent = kind == "worker.complete"
        out.append(graph.SpanRow(seq, span_id, parent or "", (agent or "agent") if is_agent else "", status or "", ms / 1000 if is_agent and ms is not None else None))
    return out


GRAPH_ROWS = 400  # the newest worker spawns and results read per run for its tree


def _worker_events(run: Run) -> list[tuple[Any, ...]]:
    """(iteration, agent, kind, confidence, sub-manager run id, occurred_at) of the newest GRAPH_ROWS worker
    spawns and results up to the run's head, newest first."""
    # One index-ordered scan per kind, merged: `kind IN (…) ORDER BY seq` cannot use the (run, kind, seq)
    # index's order, so it read and sorted every worker event of the run (8,000 rows at 100k events).
    one_kind = """(SELECT seq, iteration, agent_id, kind, payload->'confidence', payload->>'_submanager_run_id', occurred_at
                   FROM experiments_event WHERE run_id = %s AND kind = %s AND seq <= %s ORDER BY seq DESC LIMIT %s)"""
    rows = _rows(
        f"SELECT * FROM ({one_kind} UNION ALL {one_kind}) AS worker_events ORDER BY seq DESC LIMIT %s",
        [run.pk, "worker.spawn", run.last_seq, GRAPH_ROWS, run.pk, "worker.complete", run.last_seq, GRAPH_ROWS, GRAPH_ROWS],
    )
    return [(iteration, agent, kind, _json(confidence), sub_run_id, occurred) for _, iteration, agent, kind, confidence, sub_run_id, occurred in rows]
