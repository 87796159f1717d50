"""The Memory tab in a real Chromium: sub-tabs over htmx, an inert script in MEMORY.md, search with highlights."""

from __future__ import annotations

import pytest

from memory.longterm import write_long_term_version
from tests.conftest import login
from tests.factories import make_member
from tests.memory.conftest import seed_memory

pytestmark = pytest.mark.browser


def test_memory_tab_in_a_browser(asgi_server, page, experiment) -> None:
    seed_memory(experiment)
    write_long_term_version(
        experiment=experiment, reason="xss probe",
        content="# Facts\n<script>window.__pwned = 1</script>\n<img src=x onerror=\"window.__pwned = 2\">\n- safe fact\n",
    )  # fmt: skip
    curator = make_member(experiment, "curator")
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    login(page, asgi_server, curator.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/memory/")
    assert page.locator("#memory-rendered").get_by_text("safe fact").is_visible()
    assert page.evaluate("window.__pwned === undefined")

    page.click("nav.memory-subtabs >> text=Working")
    page.wait_for_url("**/memory/working/")
    assert page.locator("#memory-calendar").is_visible()

    page.click("nav.memory-subtabs >> text=Search")
    page.wait_for_url("**/memory/search/")
    page.fill("input[name=q]", "potassium")
    page.select_option("select[name=mode]", "keyword")
    page.click("#memory-search-form button[type=submit]")
    page.wait_for_selector("#memory-results mark")
    assert page.locator("#memory-results mark").first.inner_text().lower() == "potassium"
    # Choosing a mode picks its tiers (memory.js).
    page.select_option("select[name=mode]", "agent_filter")
    assert page.locator("input[name=tiers][value=episodic]").is_checked()
    assert not page.locator("input[name=tiers][value=working]").is_checked()
    page.go_back()
    page.wait_for_url("**/memory/search/")
    page.go_back()
    page.wait_for_url("**/memory/working/")
    assert not errors
