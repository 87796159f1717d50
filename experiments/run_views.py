"""The Runs tab (Task → Run tree) and the run page tabs: Timeline, Iterations, Blackboard, Digests, Problems."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from experiments import ledger_cache, presenters, run_charts, run_list, timeline_search
from experiments.access import experiment_view
from experiments.models import Event, Experiment, Run

PAGE = 200
CHART_RUNS = 500


def render_run_tab(request: HttpRequest, experiment: Experiment, run: Run, template: str, context: dict[str, Any]) -> HttpResponse:
    """The whole run page, or only its #run-tab partial for an htmx tab switch or filter."""
    context.update(experiment=experiment, run=run, budget_bars=presenters.budget_bars(run), problem_count=run.ingest_problems.count())
    if request.htmx and not request.htmx.boosted and request.htmx.target in ("run-tab", "timeline-rows", "board-rows"):
        return render(request, f"{template}#run_tab", context)
    # Charts and graph only on whole pages (a tab switch keeps the ones on screen; frames keep them current).
    context.update(run_charts=run_charts.run_charts(run), graph_nodes=run_charts.run_graph(run))
    return render(request, template, context)


def _run(experiment: Experiment, pk: int) -> Run:
    # The experiment is the one the access check loaded (no second copy of it, its protocol decoded again).
    run = get_object_or_404(experiment.runs.select_related("parent", "task"), pk=pk)
    run.experiment = experiment
    # Masked before truncation in the header: a cut secret would otherwise escape the output net.
    return presenters.mask_run_text(run)


def _int(value: str | None) -> int | None:
    return int(value) if value and value.lstrip("-").isdigit() else None


@require_GET
@experiment_view()
def runs_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    """Runs newest first in keyset pages, searchable and sortable; the first page follows new runs live."""
    from experiments.views import render_tab

    params = {key: request.GET.get(key, "").strip() for key in ("q", "status", "sort", "dir", "after", "before")}
    sort = params["sort"] if params["sort"] in run_list.SORTS else "started"
    descending = params["dir"] != "asc"
    page = run_list.runs_page(
        experiment, q=params["q"][:200], status=params["status"], sort=sort, descending=descending,
        after=params["after"], before=params["before"],
    )  # fmt: skip
    best = set(experiment.tasks.exclude(best_run=None).values_list("best_run_id", flat=True))
    rows = [(indent, presenters.RunNode(run, is_best=run.pk in best)) for indent, run in page.rows]
    keep = {k: v for k, v in (("q", params["q"]), ("status", params["status"]), ("sort", sort if sort != "started" else ""), ("dir", "asc" if not descending else "")) if v}
    context = {
        "experiment": experiment, "tab": "runs", "rows": rows, "page": page, "filters": params, "sort": sort,
        "descending": descending, "sorts": run_list.SORTS, "statuses": Run.Status.choices, "keep": urlencode(keep),
        # New runs go on top only where they belong: the first page of the default order, unfiltered.
        "follows_new_runs": page.is_first and sort == "started" and descending and not (params["q"] or params["status"]),
    }  # fmt: skip
    if request.htmx and request.htmx.target == "run-list":
        return render(request, "experiments/runs_tab.html#run_list", context)
    # Charts of the newest CHART_RUNS runs: thousands of points make a heavy page and an unreadable chart.
    context["experiment_charts"] = run_charts.experiment_charts(experiment, limit=CHART_RUNS, best=best)
    return render_tab(request, "experiments/runs_tab.html", context)


@require_GET
@experiment_view()
def run_detail(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    """Timeline: events in seq order, filtered by kind / worker / iteration / payload text, in pages of PAGE.

    A page starts after ?after= (forwards) or ends before ?before= (backwards: Previous, Newest); ?seq= and
    ?at= (a date and time) jump to the page that starts there.
    """
    run = _run(experiment, pk)
    kind, worker, iteration = request.GET.get("kind", ""), request.GET.get("worker", ""), _int(request.GET.get("iteration"))
    text = request.GET.get("text", "").strip()[:200]
    events = run.events.all()
    if kind:
        events = events.filter(kind__startswith=kind)
    if worker:
        events = events.filter(agent_id=worker)
    if iteration is not None:
        events = events.filter(iteration=iteration)
    is_filtered = bool(kind or worker or iteration is not None or text)
    after, before, jump_error = _timeline_position(request, run, events)
    if text:
        page, has_older, has_newer = timeline_search.matching_page(experiment, events, text, after=after, before=before, size=PAGE)
    elif before is not None:
        older = list(events.filter(seq__lt=before).order_by("-seq")[: PAGE + 1])
        page, has_older = older[:PAGE][::-1], len(older) > PAGE
        has_newer = bool(page) and events.filter(seq__gt=page[-1].seq).exists()
    elif not is_filtered and after + PAGE <= run.last_seq and (settled := _settled_rows(experiment, run, after)) is not None:
        # A page the head has passed: its rows never change, so their markup is kept (the run page's biggest cost).
        rows, page = settled, None
        first, last, has_older, has_newer = after + 1, after + PAGE, after > 0, after + PAGE < run.last_seq
    else:
        forward = _timeline_page(run, events.filter(seq__gt=after), after, is_filtered=is_filtered)
        page, has_newer = forward[:PAGE], len(forward) > PAGE
        has_older = bool(page) and (page[0].seq > 1 if not is_filtered else events.filter(seq__lt=page[0].seq).exists())
    if page is not None:
        rows = presenters.timeline_rows_markup(presenters.present_events(experiment, page))
        first, last = (page[0].seq, page[-1].seq) if page else (None, None)
    context = {
        "run_tab": "timeline",
        "timeline_rows": mark_safe(rows),  # noqa: S308 - every text in it is escaped by presenters._timeline_row
        "filters": {"kind": kind, "worker": worker, "iteration": "" if iteration is None else iteration, "text": text},
        "next_after": last if last is not None and has_newer else None,
        "prev_before": first if first is not None and has_older else None,
        "newest_before": run.last_seq + 1 if has_newer else None,
        "jump_error": jump_error,
        "last_seq": last if last is not None else after,
        "is_live_tail": not has_newer and not is_filtered,
        "kinds": ["run.", "iteration.", "worker.", "tool.call", "metric.", "board.post", "digest", "state.", "log"],
        "workers": _workers_of(run),
    }
    return render_run_tab(request, experiment, run, "experiments/run_detail.html", context)


def _timeline_position(request: HttpRequest, run: Run, events: QuerySet[Event]) -> tuple[int, int | None, str]:
    """(after, before, error) from ?after= / ?before= / ?seq= / ?at=; a jump past the end shows the newest page."""
    seq, at = request.GET.get("seq", "").strip(), request.GET.get("at", "").strip()
    if seq:
        number = _int(seq)
        if number is None or number < 1:
            return 0, None, "A seq is a whole number from 1."
        return (number - 1, None, "") if number <= run.last_seq else (0, run.last_seq + 1, f"The run has {run.last_seq} events; showing the newest.")
    if at:
        moment = parse_datetime(at) if "T" in at or " " in at else None
        if moment is None:
            day = parse_date(at)
            moment = datetime.combine(day, datetime.min.time()) if day else None
        if moment is None:
            return 0, None, "A time looks like 2026-11-21 14:05 (UTC)."
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment, timezone.get_current_timezone())
        first = events.filter(occurred_at__gte=moment).order_by("seq").values_list("seq", flat=True).first()
        return (first - 1, None, "") if first is not None else (0, run.last_seq + 1, "No event at or after that time; showing the newest.")
    before = _int(request.GET.get("before"))
    if before is not None and before > 0:
        return 0, before, ""
    return max(0, _int(request.GET.get("after")) or 0), None, ""


def _timeline_page(run: Run, events: QuerySet[Event], after: int, *, is_filtered: bool) -> list[Event]:
    """Up to PAGE + 1 events after `after`, in seq order."""
    if not is_filtered:
        # Seqs are gap-free and the ledger append-only (experiments/ingest.py), so an unfiltered page is the
        # seq range after+1 … after+PAGE+1. A closed range keeps Postgres on the (run, seq) index whatever its
        # statistics say; with `ORDER BY seq LIMIT` alone, a table not yet analysed after a big import read
        # and sorted all 100k events of the run for its first page (40 ms).
        page = list(events.filter(seq__lte=after + PAGE + 1).order_by("seq"))
        if len(page) == PAGE + 1 or after + len(page) >= run.last_seq:
            return page
        # Short of the head: a gap the invariant says cannot exist; read the page the general way.
    return list(events.order_by("seq")[: PAGE + 1])


def _settled_rows(experiment: Experiment, run: Run, after: int) -> str | None:
    """The Timeline rows after+1 … after+PAGE of a run whose head has passed them, rendered once per process and
    kept (experiments/ledger_cache.settled): redacted with the experiment's masks of now (a secret learnt later is
    a new matcher, hence a new rendering) in the current time zone. None when the range has a gap (rows written
    around ingest): the page is then read the general way."""
    redactor = presenters.redactor_for(experiment)

    def render() -> str | None:
        page = list(run.events.filter(seq__gt=after, seq__lte=after + PAGE).order_by("seq"))
        if len(page) != PAGE:
            return None
        return presenters.timeline_rows_markup(presenters.present_events(experiment, page, redactor=redactor))

    zone = timezone.get_current_timezone_name()
    return ledger_cache.settled(run, "timeline_rows", after + PAGE, render, redactor.sensitive, zone, made_with=redactor.known)


def _workers_of(run: Run) -> list[str]:
    """Workers of the run for the filter: read from worker events through the (run, kind, seq) index, never a
    DISTINCT over every event of a long run; kept per run head (experiments/ledger_cache.py)."""
    return ledger_cache.cached(run, "timeline_workers", _ledger_workers)


def _ledger_workers(run: Run) -> list[str]:
    workers = run.events.filter(kind__in=["worker.spawn", "worker.complete"], seq__lte=run.last_seq).exclude(agent_id="")
    return list(workers.order_by("agent_id").values_list("agent_id", flat=True).distinct()[:200])


@require_GET
@experiment_view()
def run_iterations(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    run = _run(experiment, pk)
    context = {"run_tab": "iterations", "iterations": presenters.iterations_of(experiment, run), "children": list(run.children.all())}
    return render_run_tab(request, experiment, run, "experiments/run_iterations.html", context)


@require_GET
@experiment_view()
def run_board(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    from state.services_redaction import redact_for

    run = _run(experiment, pk)
    topic, worker = request.GET.get("topic", ""), request.GET.get("worker", "")
    posts = run.board_posts.order_by("seq")
    if topic:
        posts = posts.filter(topic=topic)
    if worker:
        posts = posts.filter(worker_id=worker)
    rows = list(posts[:1000])
    payloads = redact_for(experiment, [p.payload for p in rows])
    context = {
        "run_tab": "board",
        "posts": [(p, presenters.json.dumps(pl, indent=2, ensure_ascii=False, default=str)) for p, pl in zip(rows, payloads, strict=True)],
        "topics": sorted(set(run.board_posts.values_list("topic", flat=True))),
        "board_workers": sorted(set(run.board_posts.values_list("worker_id", flat=True))),
        "filters": {"topic": topic, "worker": worker},
    }
    return render_run_tab(request, experiment, run, "experiments/run_board.html", context)


@require_GET
@experiment_view()
def run_digests(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    run = _run(experiment, pk)
    digests = list(run.digests.order_by("iteration", "seq"))
    final = digests[-1] if digests else None
    context = {"run_tab": "digests", "tree": presenters.digest_tree(experiment, final), "digests": digests}
    return render_run_tab(request, experiment, run, "experiments/run_digests.html", context)


@require_GET
@experiment_view()
def run_problems(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    run = _run(experiment, pk)
    violations = run.rule_violations.all()[:500]  # Layer-4 rules the run broke (flagged by the state projector)
    context = {"run_tab": "problems", "problems": presenters.problems_of(run), "violations": violations}
    return render_run_tab(request, experiment, run, "experiments/run_problems.html", context)
