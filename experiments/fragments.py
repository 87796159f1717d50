"""Live fragments of the ingest part: new timeline rows, the run header, board rows, digests, problems,
and re-rendered run rows / experiment rows. Same partials as the pages, redacted the same way."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.db.models import Count, Max
from django.db.models.expressions import RawSQL
from django.template.loader import render_to_string

from awp_site.live import Viewer, register_experiment_fragment, register_run_fragment
from experiments import presenters, run_charts
from experiments.models import Event, Experiment, IngestProblem, Run
from state.secrets import stamp_sql
from state.services_redaction import redact_for


def _oob_tbody(target: str, rows: list[str]) -> list[str]:
    # A <tbody> wrapper: htmx inserts its children, and table rows parse only inside a table section.
    return [f'<tbody hx-swap-oob="beforeend:#{target}">{"".join(rows)}</tbody>'] if rows else []


def timeline_rows(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    views = presenters.present_events(run.experiment, events)
    return _oob_tbody("timeline-rows", [presenters.timeline_rows_markup(views)] if views else [])


def frame_run(run_pk: int) -> Run:
    """The run as a live frame's fragments read it, in one statement: its experiment, its parent and how many
    ingest problems it has (a frame read the run twice and counted its problems apart; most runs have none), and
    the freshness stamp of the experiment's known secrets for the frame's redaction (state.secrets.STAMP_SQL)."""
    runs = Run._meta.db_table
    problems = RawSQL(f"SELECT count(*) FROM {IngestProblem._meta.db_table} WHERE run_id = {runs}.id", ())
    stamp = RawSQL(stamp_sql(f"{runs}.experiment_id"), ())
    return Run.objects.select_related("experiment", "parent").annotate(problem_count=problems, known_stamp=stamp).get(pk=run_pk)


def run_header(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    fresh = run if hasattr(run, "problem_count") else frame_run(run.pk)  # read for this frame, or read now
    shown = presenters.mask_run_text(copy.copy(fresh))  # masked for display; the frame's other fragments keep theirs
    context = {"run": shown, "oob": True, "budget_bars": presenters.budget_bars(shown), "problem_count": fresh.problem_count}
    return [render_to_string("experiments/_run_header.html", context)]


def run_charts_fragment(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    """The run page's charts again when new values arrived (same partial as the page; one point per new iteration)."""
    if not any(e.kind in run_charts.CHART_KINDS for e in events):
        return []
    context = {"run": run, "experiment": run.experiment, "run_charts": run_charts.run_charts(run), "oob": True}
    return [render_to_string("experiments/_run_charts.html", context)]


def run_graph_fragment(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    """The run graph again when an agent started or finished (static/js/graph.js redraws it after the swap)."""
    if not any(e.kind in GRAPH_KINDS for e in events):
        return []
    fresh = Run.objects.select_related("experiment").get(pk=run.pk)
    context = {"run": fresh, "experiment": fresh.experiment, "graph_nodes": run_charts.run_graph(fresh), "oob": True}
    return [render_to_string("experiments/_run_graph.html", context)]


GRAPH_KINDS = frozenset({"worker.spawn", "worker.complete", "state.snapshot", "run.complete"})


def board_rows(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    seqs = [e.seq for e in events if e.kind == "board.post"]
    if not seqs:
        return []
    posts = list(run.board_posts.filter(seq__in=seqs).order_by("seq"))
    payloads = redact_for(run.experiment, [p.payload for p in posts])
    rows = [render_to_string("experiments/_board_row.html", {"post": p, "pretty": json.dumps(pl, indent=2, ensure_ascii=False)}) for p, pl in zip(posts, payloads, strict=True)]
    return _oob_tbody("board-rows", rows)


def digest_items(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    seqs = [e.seq for e in events if e.kind == "digest"]
    if not seqs:
        return []
    items = [render_to_string("experiments/_digest_item.html", {"d": d}) for d in run.digests.filter(seq__in=seqs).order_by("seq")]
    return [f'<ul hx-swap-oob="beforeend:#digest-list">{"".join(items)}</ul>']


def problem_rows(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    # Problems are not ledger events: show those recorded since the first of these events was written.
    since = min(e.recorded_at for e in events) if events else None
    if since is None or getattr(run, "problem_count", None) == 0:  # a run read for this frame with none: no query
        return []
    problems = IngestProblem.objects.filter(run=run, created_at__gte=since).order_by("created_at")[:50]
    return _oob_tbody("problem-rows", [render_to_string("experiments/_problem_row.html", {"p": p}) for p in problems])


def run_rows(experiment: Experiment, viewer: Viewer, changed_run_ids: list[int]) -> list[str]:
    """Changed runs' rows for the Runs tab: static/js/live.js replaces a row the page shows, and puts a new
    top-level run on top when the page follows new runs (its first page, newest first, unfiltered)."""
    runs = Run.objects.filter(experiment=experiment, pk__in=changed_run_ids).select_related("task", "experiment").order_by("created_at", "pk")
    best = set(experiment.tasks.exclude(best_run=None).values_list("best_run_id", flat=True))
    rows = [render_to_string("experiments/_run_row.html", {"node": presenters.RunNode(run, is_best=run.pk in best), "indent": run.depth}) for run in runs]
    return [f'<tbody hx-swap-oob="afterbegin:#run-rows" data-live-upsert>{"".join(rows)}</tbody>'] if rows else []


def experiment_row(experiment: Experiment, viewer: Viewer, changed_run_ids: list[int]) -> list[str]:
    row: Any = Experiment.objects.filter(pk=experiment.pk).annotate(run_count=Count("runs", distinct=True), last_activity=Max("runs__updated_at")).first()
    if row is None:
        return []
    from experiments.views import pending_proposals

    row.pending_count = pending_proposals(row)
    # Wrapped like the run rows: a bare <tr> after another table section parses into an anonymous <tbody>.
    html = render_to_string("experiments/_experiment_row.html", {"e": row})
    return [f'<tbody hx-swap-oob="afterbegin:#experiment-rows" data-live-upsert>{html}</tbody>']


def register() -> None:
    """Called from ExperimentsConfig.ready()."""
    register_run_fragment("experiments.timeline", timeline_rows)
    register_run_fragment("experiments.header", run_header)
    register_run_fragment("experiments.charts", run_charts_fragment)
    register_run_fragment("experiments.graph", run_graph_fragment)
    register_run_fragment("experiments.board", board_rows)
    register_run_fragment("experiments.digests", digest_items)
    register_run_fragment("experiments.problems", problem_rows)
    register_experiment_fragment("experiments.run_rows", run_rows)
    register_experiment_fragment("experiments.experiment_row", experiment_row)
