"""The pure parts: chart geometry, Timeline one-line summaries, the run graph (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.charts import Point, Series, line_chart, nice_range
from experiments.graph import AgentFacts, RunInfo, WorkerRow, dag_graph, dag_steps, delegation_tree, edges_of
from experiments.summaries import LIMIT, event_summary

finite = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)
json_values = st.recursive(st.none() | st.booleans() | finite | st.text(max_size=50), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)


@settings(deadline=None)  # a busy shared machine must not turn slow examples into failures
@given(st.lists(st.lists(st.tuples(finite, finite), max_size=30), min_size=1, max_size=5))
def test_every_point_becomes_one_dot_inside_the_plot_box(series_points):
    series = [Series(f"s{i}", tuple(Point(x, y) for x, y in pts)) for i, pts in enumerate(series_points)]
    chart = line_chart(series, title="t", x_label="x", y_label="y")
    assert chart.point_count == sum(len(pts) for pts in series_points)
    left, top, right, bottom = chart.plot
    for line in chart.lines:
        for dot in line.dots:
            assert left - 0.1 <= dot.cx <= right + 0.1 and top - 0.1 <= dot.cy <= bottom + 0.1
    # The text fallback holds every value.
    assert sum(cell.count(";") + 1 for _, cells in chart.rows for cell in cells if cell) == chart.point_count


@settings(deadline=None)  # a busy shared machine must not turn slow examples into failures
@given(finite, finite)
def test_nice_range_covers_its_input_in_whole_steps(a, b):
    low, high, step = nice_range(a, b)
    assert low <= min(a, b) and high >= max(a, b) and step > 0


def test_integer_axis_ticks_are_whole_iterations():
    chart = line_chart([Series("w", (Point(1, 0.5), Point(2, 0.7), Point(3, 0.9)))], title="t", x_label="iteration", y_label="c", y_range=(0, 1), integer_x=True)
    assert [t.label for t in chart.x_ticks] == ["1", "2", "3"]
    assert chart.y_ticks[0].label == "0" and chart.y_ticks[-1].label == "1"


@settings(deadline=None)  # a busy shared machine must not turn slow examples into failures
@given(st.sampled_from(["iteration.decision", "worker.complete", "metric.eval", "metric.x", "tool.call", "board.post", "log", "digest", "state.delta", "iteration.budget", "iteration.validation", "unknown"]), json_values)
def test_a_summary_is_one_short_line_for_any_payload(kind, payload):
    line = event_summary(kind, payload)
    assert "\n" not in line and len(line) <= LIMIT


def test_summaries_say_what_a_person_needs():
    assert event_summary("iteration.decision", {"decision": "delegate", "reasoning": "need facts"}) == "DELEGATE · need facts"
    assert event_summary("worker.complete", {"summary": "found it", "confidence": 0.9}) == "found it · confidence 0.9"
    assert event_summary("metric.eval", {"worker_id": "w", "score": 0.98, "action": "accept"}) == "eval · w · score 0.98 · accept"
    assert event_summary("metric.loss", {"loss": 0.25, "iteration": 3}) == "loss · loss 0.25"


def test_dag_nodes_follow_the_workflow_with_status_duration_and_confidence():
    protocol = {"orchestration": {"graph": [{"id": "researcher", "agent": "researcher", "depends_on": []}, {"id": "analyst", "agent": "analyst", "depends_on": ["researcher"]}]}}
    start = datetime(2026, 1, 1, tzinfo=UTC)
    facts = {"researcher": AgentFacts(start + timedelta(seconds=2), 0.9)}
    nodes = dag_graph(dag_steps(protocol), facts, run_pk=1, run_started=start, run_status="running")
    by_id = {n.id: n for n in nodes}
    assert by_id["researcher"].status == "complete" and by_id["researcher"].duration_s == 2.0 and by_id["researcher"].confidence == 0.9
    assert by_id["analyst"].status == "running"
    assert edges_of(nodes) == [("researcher", "analyst")]


def test_delegation_tree_nests_submanagers_to_any_depth():
    runs = {1: RunInfo(1, "root", "complete", 3.0), 2: RunInfo(2, "sub", "complete", 1.0), 3: RunInfo(3, "subsub", "complete", 0.5)}
    rows = [WorkerRow(1, 1, "sub_a", "complete", 0.5, None, 2), WorkerRow(2, 1, "sub_b", "complete", 0.6, None, 3), WorkerRow(3, 1, "leaf", "complete", 0.9)]
    nodes = delegation_tree(runs[1], runs, rows)
    parents = {n.id: n.parent for n in nodes}
    assert parents["r2"] == "r1-i1-sub_a" and parents["r3"] == "r2-i1-sub_b" and parents["r3-i1-leaf"] == "r3-i1"
    assert [n.depth for n in nodes if n.kind == "manager"] == [0, 1, 2]
