"""The Pool page in a real Chromium: a proposal from a claw arrives live, a curator votes from the page, and
the decision arrives live on another person's open page (no reload)."""

from __future__ import annotations

import pytest

from tests.conftest import login
from tests.factories import make_experiment, make_member
from tests.pool.helpers import PoolClient, create_claw

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_vote_from_the_pool_page_and_see_the_decision_arrive_live(live_server_factory, browser):
    server = live_server_factory(AWP_POOL_CLAW_ID="deploy-browser")
    experiment = make_experiment()
    curator, viewer = make_member(experiment, "curator"), make_member(experiment, "viewer")
    c1, c2 = (PoolClient(server.url, name, create_claw(name, "logs.read:/var/log/app/*")) for name in ("claw-1", "claw-2"))
    for c in (c1, c2):
        c.presence()

    pages = []
    for user in (curator, viewer):
        context = browser.new_context(viewport={"width": 1366, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        login(page, server, user.username)
        page.click("a.topbar-pool")  # reachable from the top bar
        page.wait_for_selector("#pool-proposals")
        page.wait_for_selector("#live-indicator[data-state=live]")
        page.evaluate("window.__notReloaded = true")
        pages.append(page)
    voter, watcher = pages

    # The curator's page view made them present: three active participants. A claw proposes and votes yes.
    c1.propose("p-browser", "Checkout retries hide DB timeouts", tags=["checkout"])
    c1.vote("p-browser", "yes", "seen in logs")
    voter.wait_for_selector('#pool-proposals article[data-proposal-id="p-browser"] .pool-votes li[data-claw-id="claw-1"]')
    assert "1 more yes vote needed (3 active)" in voter.inner_text('article[data-proposal-id="p-browser"]')
    assert watcher.locator('article[data-proposal-id="p-browser"] form.pool-vote').count() == 0  # a viewer watches only

    voter.fill('article[data-proposal-id="p-browser"] input[name=reason]', "rows agree")
    voter.click('article[data-proposal-id="p-browser"] button[value=yes]')

    # The decision and the new fact arrive on the other person's page by themselves.
    watcher.wait_for_selector('tr.pool-decided-row[data-proposal-id="p-browser"][data-status=accepted]')
    watcher.wait_for_selector('tr.pool-fact[data-fact-id="fact:p-browser"][data-version="1"]')
    assert f"user:{curator.username}" in watcher.inner_text('tr.pool-decided-row[data-proposal-id="p-browser"]')
    assert "rows agree" in watcher.inner_text('tr.pool-decided-row[data-proposal-id="p-browser"]')
    voter.wait_for_selector('tr.pool-decided-row[data-proposal-id="p-browser"][data-status=accepted]')
    assert all(page.evaluate("window.__notReloaded === true") for page in pages)

    # The audit filters by traceId.
    voter.fill("#pool-audit input[name=trace]", "trace-p-browser")
    voter.click("#pool-audit button[type=submit]")
    voter.wait_for_selector("#pool-audit h2:has-text('for trace-p-browser')")
    outcomes = voter.locator("#pool-audit tbody tr").all_inner_texts()
    assert len(outcomes) == 5 and all("trace-p-browser" in row for row in outcomes)  # proposal, 2 votes, decision, fact
    for page in pages:
        page.context.close()
