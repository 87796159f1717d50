"""Two runs side by side (/experiments/<slug>/compare/?a=<run pk>&b=<run pk>) and a run's exports."""

from __future__ import annotations

from statistics import fmean
from typing import Any

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from experiments import exports, presenters, run_charts
from experiments.access import experiment_view
from experiments.charts import Series
from experiments.models import Experiment, Run
from state.replay import diff
from state.services import state_at_seq
from state.services_redaction import redact_for, redactor_for
from state.viewing import redact_diff

MAX_DIFF = 500


def _int(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def run_facts(run: Run) -> dict[str, Any]:
    """What both headers show: status, reason, iterations, duration, tokens, models."""
    tokens = (run.budget_used or {}).get("tokens")
    return {
        "run": run,
        "tokens": tokens.get("consumed") if isinstance(tokens, dict) else None,
        "duration": run.duration_seconds,
    }


def overlay(a: run_charts.RunSeries, b: run_charts.RunSeries) -> run_charts.RunCharts:
    """One set of charts with each run's series named A · … and B · …."""

    def both(left: list[Series], right: list[Series]) -> list[Series]:
        return [Series(f"A · {s.name}", s.points) for s in left] + [Series(f"B · {s.name}", s.points) for s in right]

    def main_budget(series: list[Series]) -> list[Series]:  # loops and tokens: ten budget lines would be unreadable
        return [s for s in series if s.name in {"loops", "tokens"}]

    merged = run_charts.RunSeries(both(a.confidence, b.confidence), both(a.score, b.score), both(main_budget(a.budget), main_budget(b.budget)), both(a.loss, b.loss), a.is_dag and b.is_dag, 0, None)
    return run_charts.charts_of(merged)


def worker_confidence(a: run_charts.RunSeries, b: run_charts.RunSeries) -> list[dict[str, Any]]:
    """Per worker: mean and last confidence in A and in B (None where the run has no such worker)."""

    def stats(series: list[Series]) -> dict[str, tuple[float, float, int]]:
        return {s.name: (fmean(p.y for p in s.points), s.points[-1].y, len(s.points)) for s in series if s.points}

    left, right = stats(a.confidence), stats(b.confidence)
    return [{"worker": name, "a": left.get(name), "b": right.get(name)} for name in sorted({*left, *right})]


def digest_facts(experiment: Experiment, run: Run) -> list[str]:
    """Key facts of the run's final digest (redacted)."""
    final = run.digests.order_by("-iteration", "-seq").first()
    facts = final.key_facts if final and isinstance(final.key_facts, list) else []
    return [str(f) for f in redact_for(experiment, facts)]


def state_diff(experiment: Experiment, a: Run, b: Run, seq_a: int | None, seq_b: int | None) -> dict[str, Any]:
    """The redacted diff from A's state (at seq_a, default its head) to B's (at seq_b)."""
    at_a, state_a = state_at_seq(run=a, seq=seq_a)
    at_b, state_b = state_at_seq(run=b, seq=seq_b)
    entries = redact_diff(experiment, diff(state_a, state_b), reveal=False)
    rows = [{"op": e.op, "path": e.path, "old": presenters.compact_json(e.old, 400), "new": presenters.compact_json(e.new, 400)} for e in entries[:MAX_DIFF]]
    return {"seq_a": at_a, "seq_b": at_b, "rows": rows, "total": len(entries), "same": not entries and (bool(state_a) or bool(state_b))}


@require_GET
@experiment_view()
def compare_runs(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    # A is the earlier run, B the later, whatever order the Runs tab lists them in (newest first).
    picked = sorted(pk for pk in map(_int, request.GET.getlist("run")) if pk is not None)
    if picked and not request.GET.get("a"):  # the Runs tab's "select two → Compare" form
        if len(picked) != 2:
            return render(request, "experiments/compare.html", {"experiment": experiment, "error": f"Select exactly two runs to compare ({len(picked)} selected)."}, status=400)
        return redirect(f"{reverse('experiments:compare', args=[experiment.slug])}?a={picked[0]}&b={picked[1]}")
    a_pk, b_pk = _int(request.GET.get("a")), _int(request.GET.get("b"))
    if a_pk is None or b_pk is None:
        return render(request, "experiments/compare.html", {"experiment": experiment, "error": "Pick two runs: ?a=<run id>&b=<run id> (or select two on the Runs tab)."}, status=400)
    a = get_object_or_404(experiment.runs.select_related("task"), pk=a_pk)
    b = get_object_or_404(experiment.runs.select_related("task"), pk=b_pk)
    series_a, series_b = run_charts.run_series(a), run_charts.run_series(b)
    facts_a, facts_b = set(digest_facts(experiment, a)), set(digest_facts(experiment, b))
    context = {
        "experiment": experiment,
        "a": run_facts(a),
        "b": run_facts(b),
        "charts": overlay(series_a, series_b),
        "workers": worker_confidence(series_a, series_b),
        "diff": state_diff(experiment, a, b, _int(request.GET.get("seq_a")), _int(request.GET.get("seq_b"))),
        "facts_only_a": sorted(facts_a - facts_b),
        "facts_only_b": sorted(facts_b - facts_a),
        "facts_shared": len(facts_a & facts_b),
    }
    return render(request, "experiments/compare.html", context)


@require_GET
@experiment_view()
def run_export(request: HttpRequest, experiment: Experiment, pk: int, what: str, fmt: str) -> HttpResponse:
    """A run's events or metrics as CSV or JSON, streamed and redacted."""
    if what not in {"events", "metrics"} or fmt not in {"csv", "json"}:
        return HttpResponse("Exports are events or metrics, as csv or json.", status=404, content_type="text/plain")
    run = get_object_or_404(experiment.runs, pk=pk)
    content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/json"
    response = StreamingHttpResponse(exports.stream_export(run, what, fmt), content_type=content_type)
    # The file name is derived from the run id: masked first (a derived spelling is not what the net looks for).
    shown = redactor_for(experiment).text(run.run_id)
    safe_name = "".join(c if c.isalnum() or c in "-_" else "_" for c in shown)[:80] or str(run.pk)
    response["Content-Disposition"] = f'attachment; filename="{safe_name}-{what}.{fmt}"'
    return response
