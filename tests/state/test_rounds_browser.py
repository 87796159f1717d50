"""State tab → Rounds in Chromium: winner and losers of a conflict, the paths-changed chart, convergence and oscillation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from experiments.protocol import parse_protocol
from tests.conftest import login
from tests.factories import make_experiment, make_member, make_run
from tests.state.helpers import d, push

pytestmark = pytest.mark.browser

PROTOCOL = """
state:
  conflict_resolution: highest-weight
  stable_paths: ["$.bindings.*"]
"""


def test_rounds_view_shows_winner_losers_chart_and_convergence(asgi_server, page):
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    viewer = make_member(experiment, "viewer")
    run = make_run(experiment)
    push(
        run,
        d("planner", "add", "$.plan", "A", weight=0.8),
        d("critic", "add", "$.plan", "Z", weight=0.3),
        d("skeptic", "add", "$.plan", "Y", weight=0.1),
        d("mapper", "add", "$.bindings", {"customer": "c1", "token": "tok-SECRET-5"}),
    )
    push(run, d("planner", "modify", "$.plan", "B", round=2))
    push(run, d("planner", "modify", "$.plan", "A", round=3))  # back to round 1's value: oscillation
    push(run, d("planner", "modify", "$.plan", "A", round=4))  # nothing changes: converged

    login(page, asgi_server, viewer.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/runs/{run.pk}/state/")
    page.click("#state-rounds-link")
    page.wait_for_url("**/state/rounds/")
    expect(page.locator("#rounds-chart svg")).to_be_visible()

    conflict = page.locator('#round-1 .round-conflict[data-path="$.plan"]')
    expect(conflict.locator(".winner")).to_contain_text("winner planner (weight 0.8)")
    expect(conflict.locator(".loser")).to_have_count(2)
    assert [text.split(" (")[0] for text in conflict.locator(".loser").all_inner_texts()] == ["critic", "skeptic"]
    expect(conflict.locator(".losers")).to_contain_text("lost")

    bars = page.locator("#rounds-chart g.bar")
    expect(bars).to_have_count(4)
    assert [bars.nth(i).get_attribute("data-count") for i in range(4)] == ["2", "1", "1", "0"]
    assert "converged" in (bars.nth(3).get_attribute("class") or "")
    assert "oscillating" in (bars.nth(2).get_attribute("class") or "")
    assert page.locator("#rounds-chart svg > title").text_content() == "Paths changed per round"
    expect(page.locator("#rounds-verdict")).to_contain_text("Converged since round 4")
    expect(page.locator("#rounds-verdict")).to_contain_text("oscillation in round 3")
    expect(page.locator('#rounds-table tr[data-round="3"]')).to_contain_text("↻ $.plan")
    expect(page.locator('#rounds-table tr[data-round="4"]')).to_contain_text("✓ converged")
    assert "tok-SECRET-5" not in page.content()

    # Its own URL: a reload (no htmx) shows the same view, and the tree is one click back.
    page.reload()
    expect(page.locator("#rounds-chart svg")).to_be_visible()
    page.get_by_role("link", name="State tree").click()
    page.wait_for_url("**/state/")
    expect(page.locator("#state-head")).to_have_count(1)
