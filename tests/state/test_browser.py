"""The State tab in Chromium: time travel with the slider, 'as seen by' under selective sharing, no secret in the HTML."""

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
  sharing:
    strategy: selective
    rules:
      - {from: researcher, to: [analyst], fields: [findings]}
    sensitive_fields: [internal_notes]
"""



def settled(page) -> None:  # type: ignore[no-untyped-def]
    """Wait until htmx has swapped and processed the new tab: the URL changes before its listeners are bound."""
    expect(page.locator(".htmx-request, .htmx-swapping, .htmx-settling")).to_have_count(0)
    page.wait_for_timeout(50)


def test_state_tab_time_travel_sharing_and_redaction(asgi_server, page):
    experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
    viewer = make_member(experiment, "viewer")
    run = make_run(experiment)
    push(run, d("researcher", "add", "$.researcher", {"findings": ["42 is even"], "draft": "first draft", "api_key": "sk-SECRET-77", "internal_notes": "NOTE-SECRET"}))
    push(run, d("researcher", "modify", "$.researcher.draft", "second draft", round=2))
    push(run, d("analyst", "add", "$.analyst", {"score": 0.8}, round=3))

    login(page, asgi_server, viewer.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/runs/{run.pk}/state/")
    draft = page.locator('[data-path="$.researcher.draft"]')
    assert draft.inner_text() == '"second draft"'
    assert page.locator("#state-head").count() == 1

    page.fill("#state-seq", "1")
    page.wait_for_url("**seq=1**")
    settled(page)
    assert draft.inner_text() == '"first draft"'
    assert page.locator('[data-path="$.analyst.score"]').count() == 0
    assert page.locator("#state-seq-label").inner_text() == "seq 1"

    page.click("#state-next")
    page.wait_for_url("**seq=2**")
    settled(page)
    assert draft.inner_text() == '"second draft"'

    page.select_option("#state-as", "analyst")
    page.wait_for_url("**as=analyst**")
    settled(page)
    page.locator('[data-path="$.researcher.findings[0]"]').wait_for()
    assert draft.count() == 0

    page.click('a.state-key[title="History of $.researcher.findings"]')
    page.locator("#state-history").wait_for()
    assert "researcher" in page.locator("#state-history").inner_text()

    for url in ("?seq=1", "", "?as=researcher"):
        page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/runs/{run.pk}/state/{url}")
        html = page.content()
        assert "sk-SECRET-77" not in html and "NOTE-SECRET" not in html
        assert "[redacted]" in html
