"""Every action of the State tab reachable with the keyboard alone: Tab to a control, then Enter, Space or arrows."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from experiments.protocol import parse_protocol
from tests.conftest import login
from tests.factories import make_experiment, make_member, make_run
from tests.state.helpers import d, push
from tests.state.test_browser import PROTOCOL, settled

pytestmark = pytest.mark.browser


def tab_to(page, selector: str, limit: int = 120) -> None:  # type: ignore[no-untyped-def]
    """Press Tab until the element matching selector has the focus (as a keyboard user would)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} is not reachable with Tab within {limit} presses")


def test_state_tab_by_keyboard_only(asgi_server, page):
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    viewer = make_member(experiment, "viewer")
    run = make_run(experiment)
    push(run, d("researcher", "add", "$.researcher", {"findings": ["42 is even"], "draft": "first draft"}))
    push(run, d("researcher", "modify", "$.researcher.draft", "second draft", round=2))
    push(run, d("analyst", "add", "$.analyst", {"score": 0.8}, round=3))
    login(page, asgi_server, viewer.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/runs/{run.pk}/state/")

    tab_to(page, "#state-seq")
    page.keyboard.press("Home")
    page.wait_for_url("**seq=0**")
    settled(page)
    page.keyboard.press("ArrowRight")  # the slider itself steps one seq
    page.wait_for_url("**seq=1**")
    settled(page)
    assert page.locator('[data-path="$.researcher.draft"]').inner_text() == '"first draft"'

    page.locator("body").focus()
    page.keyboard.press("ArrowRight")  # outside a field, arrows jump to the next state change
    page.wait_for_url("**seq=2**")
    settled(page)

    tab_to(page, ".state-toggle")
    page.keyboard.press("Enter")
    toggle = page.locator(".state-toggle").first
    expect(toggle).to_have_attribute("aria-expanded", "false")
    assert not page.locator('[data-path="$.researcher.draft"]').is_visible()
    page.keyboard.press("Space")
    expect(toggle).to_have_attribute("aria-expanded", "true")

    tab_to(page, "#state-as")
    page.keyboard.press("ArrowDown")  # a focused closed select changes its value with the arrows
    page.wait_for_url("**as=**")
    settled(page)

    tab_to(page, 'a.state-key[title="History of $.researcher.findings"]')
    page.keyboard.press("Enter")
    page.locator("#state-history").wait_for()
    assert "researcher" in page.locator("#state-history").inner_text()
