"""The shell UI in a real Chromium: log in, list, create an experiment, switch tabs."""

from __future__ import annotations

import pytest

from tests.conftest import login
from tests.factories import make_experiment, make_member

pytestmark = pytest.mark.browser


def test_login_list_create_and_switch_tabs(asgi_server, page):
    experiment = make_experiment(name="Existing experiment")
    owner = make_member(experiment, "owner")
    login(page, asgi_server, owner.username)
    assert page.locator("#experiments-table").get_by_text("Existing experiment").is_visible()

    page.click("details.create summary")
    page.fill("input[name=name]", "Browser made")
    page.fill("textarea[name=goal]", "Made by a real browser.")
    page.click("details.create button[type=submit]")
    page.wait_for_url("**/experiments/browser-made/connect/")
    assert page.locator("h1").inner_text().strip().endswith("Browser made")

    page.click("nav.tabs >> text=Runs")
    page.wait_for_url("**/experiments/browser-made/runs/")
    assert page.locator("#tab[data-tab]").count() == 1
    assert "No runs yet" in page.locator("#tab").inner_text()
    page.click("nav.tabs >> text=Memory")
    page.wait_for_url("**/experiments/browser-made/memory/")
    page.go_back()
    page.wait_for_url("**/experiments/browser-made/runs/")
    page.reload()
    assert "No runs yet" in page.locator("#tab").inner_text()
