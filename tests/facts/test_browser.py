"""The Facts pages in a real Chromium: axe finds nothing on the list, a fact's page (with a trial, exposures and a
contradicting candidate) and the Review detail beside it; pinning works from the keyboard."""

from __future__ import annotations

import pytest

from memory.curation import lifecycle
from memory.curation.prior import prior_run_block
from tests.browser.axe import check
from tests.conftest import login
from tests.factories import make_member, make_run
from tests.facts.test_services_api import CONTRA, _proposed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_fact_pages_pass_axe_and_pin_from_the_keyboard(experiment, asgi_server, page):
    curator = make_member(experiment, "curator")
    fact = _proposed(experiment)
    lifecycle.approve_on_trial(proposal=fact, reviewer=curator, runs=4, reason="try it")
    for _ in range(2):
        prior_run_block(experiment, run_id=make_run(experiment).run_id, agent_id="manager")
    candidate = _proposed(experiment, CONTRA)
    login(page, asgi_server, curator.username)
    base = f"{asgi_server.url}/experiments/{experiment.slug}"
    for url in (f"{base}/memory/facts/", f"{base}/memory/facts/{fact.pk}/", f"{base}/review/?selected={candidate.pk}"):
        page.goto(url)
        assert check(page) == [], url
    page.goto(f"{base}/memory/facts/{fact.pk}/")
    assert page.locator(".trial-arms li").count() == 2
    page.get_by_role("button", name="Pin").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector("text=pinned")
    fact.refresh_from_db()
    assert fact.is_pinned and fact.lifecycle.filter(action="pin").exists()
