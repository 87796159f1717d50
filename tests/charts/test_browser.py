"""Charts, the run graph and the compare view in a real Chromium, over runs made by the real AWP runtime.

Screenshots land in a temporary folder; `AWP_SCREENSHOTS=docs/screenshots` refreshes the README's (run page, compare).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
import requests
from playwright.sync_api import expect

from experiments.models import Event, Run
from tests.charts.conftest import awp_import
from tests.conftest import ROOT, login
from tests.factories import make_experiment, make_member, make_token

pytestmark = [pytest.mark.browser, pytest.mark.interop]
# The README's screenshots are refreshed on purpose (`AWP_SCREENSHOTS=docs/screenshots make test`), never as a side
# effect: by default they land in a temporary folder, so a test run leaves the checkout clean.
SHOTS = Path(os.environ.get("AWP_SCREENSHOTS") or Path(tempfile.gettempdir()) / "awp-screenshots")
if not SHOTS.is_absolute():
    SHOTS = ROOT / SHOTS


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=False)


def loop_points(page) -> int:  # type: ignore[no-untyped-def]
    return page.locator('#chart-budget g[data-series="loops"] circle.point').count()


def test_loop_chart_has_a_point_per_iteration_and_gains_one_live(asgi_server, page, real_trees):
    experiment = make_experiment(slug="live-chart", name="Live chart")
    owner = make_member(experiment, "owner")
    awp_import(real_trees["loop"], experiment.slug)
    run = Run.objects.get(experiment=experiment, parent=None)
    assert run.iterations == 3
    login(page, asgi_server, owner.username)
    page.goto(f"{asgi_server.url}{run.get_absolute_url()}")
    page.wait_for_selector("#live-indicator[data-state=live]")
    assert loop_points(page) == run.iterations
    assert page.locator("#chart-confidence circle.point").count() == 2  # fact_collector's two results

    # A fourth iteration arrives through the ingest API while the page is open.
    token = make_token(experiment, ["ingest"])
    events = [
        {"kind": "iteration.budget", "iteration": 4, "idempotency_key": "b4", "payload": {"loops": {"used": 4, "max": 6}, "tokens": {"consumed": 1200, "max": 10_000_000}}},
        {"kind": "worker.complete", "agent_id": "fact_collector", "iteration": 4, "idempotency_key": "w4", "payload": {"summary": "Checked again.", "confidence": 0.7}},
    ]
    answer = requests.post(f"{asgi_server.url}/api/v1/ingest", json={"run_id": run.run_id, "events": events}, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert answer.status_code == 200, answer.text
    expect(page.locator('#chart-budget g[data-series="loops"] circle.point')).to_have_count(4)
    assert page.locator("#chart-confidence circle.point").count() == 3
    # The delegation tree, replaced by the same frame, is drawn again with the new iteration's worker.
    expect(page.locator('.graph-svg g.graph-node[data-node$="-i4-fact_collector"]')).to_have_count(1)
    assert page.locator("#timeline-rows tr.kind-workercomplete").last.inner_text().find("Checked again. · confidence 0.7") >= 0

    shot(page, "run-page.png")

    # The full JSON is one click away (indented in the browser, not on the server).
    row = page.locator("#timeline-rows tr.kind-workercomplete").first
    row.locator("summary").click()
    # The browser fires `toggle` as a task after the click: wait for the handler to have indented the payload.
    expect(row.locator("pre.payload:not([data-json])")).to_have_count(1)
    pretty = row.locator("pre.payload").inner_text()
    assert '\n  "confidence": 0.95' in pretty


def test_dag_graph_draws_every_agent_and_a_node_filters_the_timeline(asgi_server, page, real_trees):
    experiment = make_experiment(slug="dag-graph", name="DAG graph")
    owner = make_member(experiment, "owner")
    awp_import(real_trees["dag"], experiment.slug)
    run = Run.objects.get(experiment=experiment)
    login(page, asgi_server, owner.username)
    page.goto(f"{asgi_server.url}{run.get_absolute_url()}")
    page.wait_for_selector(".graph-svg")
    drawn = set(page.locator(".graph-svg g.graph-node").evaluate_all("nodes => nodes.map(n => n.getAttribute('data-node'))"))
    assert drawn == {"researcher", "analyst"}
    assert page.locator(".graph-svg polyline.graph-edge").count() == 1
    assert page.locator('.graph-svg g.graph-node[data-node="analyst"]').get_attribute("class").find("status-complete") >= 0
    shot(page, "run-graph-dag.png")
    page.locator('.graph-svg a.graph-link[data-node="researcher"]').click()
    page.wait_for_url("**worker=researcher**")
    expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling")).to_have_count(0)
    rows = page.locator("#timeline-rows tr.event")
    expect(rows).not_to_have_count(0)
    workers = set(page.locator("#timeline-rows tr.event td:nth-child(3)").all_inner_texts())
    assert workers == {"researcher"}


def test_submanager_tree_nests_child_runs(asgi_server, page, real_trees):
    experiment = make_experiment(slug="sub-graph", name="Sub-managers")
    owner = make_member(experiment, "owner")
    awp_import(real_trees["subs"], experiment.slug)
    root = Run.objects.get(experiment=experiment, parent=None)
    login(page, asgi_server, owner.username)
    page.goto(f"{asgi_server.url}{root.get_absolute_url()}")
    page.wait_for_selector(".graph-svg")
    managers = page.locator(".graph-svg g.node-manager").count()
    assert managers == Run.objects.filter(experiment=experiment).count() == 3
    shot(page, "run-graph-delegation.png")


def test_runs_chart_lists_every_run_and_two_selected_runs_compare(asgi_server, page, real_trees):
    experiment = make_experiment(slug="compare", name="Compare")
    owner = make_member(experiment, "owner")
    awp_import(real_trees["loop"], experiment.slug)
    awp_import(real_trees["loop2"], experiment.slug)
    awp_import(real_trees["subs"], experiment.slug)
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))
    login(page, asgi_server, owner.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/runs/")
    assert page.locator("#chart-runs circle.point").count() == len(runs) == 5
    titles = page.locator("#chart-runs circle.point title").all_text_contents()
    assert all(any(run.run_id in t for t in titles) for run in runs)
    shot(page, "experiment-runs.png")

    a, b = runs[0], runs[1]
    page.check(f'input[name=run][value="{a.pk}"]')
    page.check(f'input[name=run][value="{b.pk}"]')
    page.click("#compare-form button")
    page.wait_for_url(f"**/compare/?a={a.pk}&b={b.pk}")
    assert a.run_id in page.locator("#compare-a").inner_text() and b.run_id in page.locator("#compare-b").inner_text()
    diff = page.locator("#compare-diff")
    assert "$.fact_collector.confidence" in diff.inner_text()
    assert page.locator("#compare-workers").inner_text().count("fact_collector") == 1
    series = page.locator("#compare-chart-confidence g.series").evaluate_all("gs => gs.map(g => g.getAttribute('data-series'))")
    assert series == ["A · fact_collector", "B · fact_collector"]
    shot(page, "compare.png")
    results = Event.objects.filter(run__in=[a, b], kind="worker.complete").count()
    assert results >= 3 and json.loads(page.locator("#compare-chart-confidence").get_attribute("data-points")) == results
