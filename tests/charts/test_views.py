"""Run page charts and graph, the compare view, the experiment charts and the exports, over real imported runs."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.test import Client

from experiments.models import Run
from tests.charts.conftest import awp_import
from tests.factories import PASSWORD, make_experiment, make_member
from tests.security.crawl import body_of

pytestmark = [pytest.mark.interop, pytest.mark.django_db]


def client_for(experiment, role="viewer"):  # type: ignore[no-untyped-def]
    user = make_member(experiment, role)
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def points(html: str, chart_id: str) -> int:
    found = re.search(rf'<figure class="chart" id="{chart_id}" data-points="(\d+)"', html)
    assert found, f"no {chart_id}"
    return int(found.group(1))


def test_loop_run_page_charts_one_budget_point_per_iteration_and_confidence_per_worker(real_trees):
    experiment = make_experiment(slug="loop")
    awp_import(real_trees["loop"], experiment.slug)
    run = Run.objects.get(experiment=experiment, parent=None)
    html = client_for(experiment).get(run.get_absolute_url()).content.decode()
    budget = re.search(r'id="chart-budget".*?</figure>', html, re.S).group(0)
    loops = re.search(r'data-series="loops">(.*?)</g>', budget, re.S).group(1)
    assert loops.count('<circle class="point') == run.iterations == 3
    assert points(html, "chart-confidence") >= 2  # one per worker result; the last iteration only decides
    assert "confidence 0.95" in html and "<title>" in html  # tooltips
    assert "Numbers (" in html  # the text fallback


def test_timeline_rows_are_one_line_summaries_with_compact_json(real_trees):
    experiment = make_experiment(slug="timeline")
    awp_import(real_trees["loop"], experiment.slug)
    run = Run.objects.get(experiment=experiment, parent=None)
    html = client_for(experiment).get(run.get_absolute_url(), {"kind": "worker."}).content.decode()
    row = re.search(r'<tr id="event-\d+" class="event kind-workercomplete">.*?</tr>', html, re.S).group(0)
    summary = re.search(r"<summary>(.*?)</summary>", row, re.S).group(1)
    assert "confidence 0.95" in summary and "\n" not in summary
    payload = re.search(r"<pre class=\"payload\" data-json[^>]*>(.*?)</pre>", row, re.S).group(1)
    assert "\n" not in payload and payload.startswith("{")  # compact, indented only in the browser when opened


def test_dag_graph_lists_every_agent_of_the_workflow_with_status_and_confidence(real_trees):
    experiment = make_experiment(slug="dag")
    awp_import(real_trees["dag"], experiment.slug)
    run = Run.objects.get(experiment=experiment)
    html = client_for(experiment).get(run.get_absolute_url()).content.decode()
    nodes = dict(re.findall(r'data-node="([^"]+)" data-parent="[^"]*" data-deps="[^"]*" data-status="([^"]*)"', html))
    assert nodes == {"researcher": "complete", "analyst": "complete"}
    assert 'data-node="analyst" data-parent="" data-deps="researcher"' in html
    assert "confidence 0.90" in html and "confidence 0.85" in html
    assert f"{run.get_absolute_url()}?worker=researcher" in html


def test_submanagers_nest_under_their_worker_in_the_delegation_tree(real_trees):
    experiment = make_experiment(slug="subs")
    awp_import(real_trees["subs"], experiment.slug)
    root = Run.objects.get(experiment=experiment, parent=None)
    html = client_for(experiment).get(root.get_absolute_url()).content.decode()
    children = list(Run.objects.filter(parent=root))
    assert len(children) == 2
    for child in children:
        parent = re.search(rf'data-node="r{child.pk}" data-parent="([^"]+)"', html).group(1)
        assert parent.endswith(f"-{child.parent_worker}")


def test_compare_view_shows_both_runs_their_state_diff_and_worker_confidence(real_trees):
    experiment = make_experiment(slug="cmp")
    awp_import(real_trees["loop"], experiment.slug)
    awp_import(real_trees["loop2"], experiment.slug)
    a, b = Run.objects.filter(experiment=experiment, parent=None).order_by("pk")
    client = client_for(experiment)
    response = client.get(f"/experiments/{experiment.slug}/compare/", {"a": a.pk, "b": b.pk})
    assert response.status_code == 200
    html = response.content.decode()
    assert a.run_id in html and b.run_id in html
    assert 'id="compare-diff"' in html and "<code>$." in html  # state paths that differ
    assert 'id="compare-workers"' in html
    assert "A · fact_collector" in html or "A · " in html
    # Selecting two on the Runs tab leads here; one or three is a clear 400.
    picked = client.get(f"/experiments/{experiment.slug}/compare/", {"run": [a.pk, b.pk]})
    assert picked.status_code == 302 and picked["Location"].endswith(f"?a={a.pk}&b={b.pk}")
    assert client.get(f"/experiments/{experiment.slug}/compare/", {"run": [a.pk]}).status_code == 400
    assert client.get(f"/experiments/{experiment.slug}/compare/", {"a": a.pk, "b": 999999}).status_code == 404
    other = make_experiment(slug="other")
    assert client.get(f"/experiments/{other.slug}/compare/", {"a": a.pk, "b": b.pk}).status_code == 404


def test_runs_tab_chart_has_a_point_for_every_run_and_marks_best(real_trees):
    experiment = make_experiment(slug="runs")
    awp_import(real_trees["loop"], experiment.slug)
    awp_import(real_trees["subs"], experiment.slug)
    html = client_for(experiment).get(f"/experiments/{experiment.slug}/runs/").content.decode()
    assert points(html, "chart-runs") == Run.objects.filter(experiment=experiment).count() == 4
    assert 'id="chart-review"' in html and 'form="compare-form"' in html


def test_exports_stream_events_and_metrics_as_csv_and_json(real_trees):
    experiment = make_experiment(slug="exports")
    awp_import(real_trees["loop"], experiment.slug)
    run = Run.objects.get(experiment=experiment, parent=None)
    client = client_for(experiment)
    base = f"{run.get_absolute_url()}export/"
    events = client.get(base + "events.json")
    assert events.streaming and events["Content-Type"] == "application/json"
    body = json.loads(body_of(events))
    assert [e["seq"] for e in body["events"]] == list(range(1, run.last_seq + 1))
    rows = list(csv.DictReader(io.StringIO(body_of(client.get(base + "events.csv")).decode())))
    assert len(rows) == run.last_seq and rows[0]["seq"] == "1"
    metrics = list(csv.DictReader(io.StringIO(body_of(client.get(base + "metrics.csv")).decode())))
    assert metrics and {m["kind"] for m in metrics} <= {e.kind for e in run.events.filter(kind__startswith="metric.")}
    assert any(m["field"] == "score" for m in metrics)
    assert json.loads(body_of(client.get(base + "metrics.json")))["metrics"]
    assert client.get(base + "secrets.csv").status_code == 404
