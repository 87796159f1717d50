"""The review queue in a real Chromium: keyboard approve/reject, edit-and-approve, bulk actions, viewer refusal."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from memory.curation.models import Proposal
from memory.curation.services import curate_run
from tests.conftest import login
from tests.curation.builders import two_iteration_run
from tests.factories import make_experiment, make_member

pytestmark = pytest.mark.browser

FACTS = ["w: FACT_ONE 42 is even.", "w: FACT_TWO 42 is 6 x 7.", "w: FACT_THREE 42 is pronic.", "w: FACT_FOUR 42 is the answer."]


def _queue_ready(page, count: int) -> None:
    expect(page.locator("#review-queue .proposal-row")).to_have_count(count)


def test_live_badge_then_keyboard_review_and_bulk_actions(asgi_server, page):
    experiment = make_experiment(slug="kbd-review")
    curator = make_member(experiment, "curator")
    runs = [two_iteration_run(experiment, fact)[0] for fact in FACTS]

    # The badges follow curation live: on the experiment page and on the experiments list.
    login(page, asgi_server, curator.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/review/")
    expect(page.locator("#live-indicator")).to_have_attribute("data-state", "live")
    listing = page.context.new_page()
    listing.goto(f"{asgi_server.url}/")
    expect(listing.locator("#live-indicator")).to_have_attribute("data-state", "live")
    for run in runs:
        curate_run(run=run)  # in this process; on commit it announces the change to both pages
    expect(page.locator("#pending-badge")).to_have_text("4")
    expect(listing.locator(f"#pending-badge-{experiment.pk}")).to_have_text("4")
    listing.close()

    page.reload()
    _queue_ready(page, 4)
    rows = page.locator("#review-queue .proposal-row")
    first_id = int(rows.nth(0).get_attribute("data-id"))
    second_id = int(rows.nth(1).get_attribute("data-id"))

    # j/k move the selection; Enter opens the evidence panel.
    page.keyboard.press("j")
    page.keyboard.press("k")
    assert rows.nth(0).get_attribute("aria-selected") == "true"
    page.keyboard.press("Enter")
    page.wait_for_selector(f"#proposal-detail[data-proposal='{first_id}']")
    assert page.locator("#proposal-detail .evidence-item").count() == 2

    # a approves the selected row; the queue re-renders without it and the badge follows.
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("a")
    _queue_ready(page, 3)
    assert page.locator("#pending-badge").inner_text() == "3"

    # r focuses the reject reason; Enter submits the rejection with that reason.
    assert int(rows.nth(0).get_attribute("data-id")) == second_id
    page.keyboard.press("r")
    page.keyboard.type("too vague")
    page.keyboard.press("Enter")
    _queue_ready(page, 2)

    # x selects rows for the bulk toolbar; Reject selected rejects them all.
    page.keyboard.press("x")
    page.keyboard.press("j")
    page.keyboard.press("x")
    page.fill("#bulk-form input[name=reason]", "bulk cleanup")
    page.click("#bulk-reject")
    _queue_ready(page, 0)
    assert page.locator("#pending-badge").inner_text() == ""

    statuses = dict(Proposal.objects.filter(experiment=experiment).values_list("pk", "status"))
    assert statuses[first_id] == "approved" and statuses[second_id] == "rejected"
    assert sorted(statuses.values()) == ["approved", "rejected", "rejected", "rejected"]
    assert Proposal.objects.get(pk=second_id).decisions.get().reason == "too vague"


def test_edit_and_approve_and_viewer_cannot_vote(asgi_server, page):
    experiment = make_experiment(slug="kbd-edit")
    curator = make_member(experiment, "curator")
    viewer = make_member(experiment, "viewer")
    run, _ = two_iteration_run(experiment, FACTS[0])
    curate_run(run=run)
    proposal = Proposal.objects.get(experiment=experiment)

    login(page, asgi_server, curator.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/review/")
    _queue_ready(page, 1)
    page.keyboard.press("e")
    page.wait_for_selector("#edit-text:focus")
    page.fill("#edit-text", "42 is even.")
    page.click("form.vote-edit button[type=submit]")
    _queue_ready(page, 0)
    proposal.refresh_from_db()
    assert (proposal.status, proposal.text, proposal.edited_text) == ("approved", FACTS[0], "42 is even.")

    page.context.clear_cookies()
    login(page, asgi_server, viewer.username)
    page.goto(f"{asgi_server.url}/experiments/{experiment.slug}/review/?status=all")
    _queue_ready(page, 1)
    assert page.locator("form.vote-approve").count() == 0
    status = page.evaluate(
        """async (url) => {
            const token = document.body.getAttribute('hx-headers').match(/"x-csrftoken": "([^"]+)"/)[1];
            const response = await fetch(url, {method: 'POST', headers: {'X-CSRFToken': token}, body: new URLSearchParams({verdict: 'reject'})});
            return response.status;
        }""",
        f"{asgi_server.url}/experiments/{experiment.slug}/review/{proposal.pk}/vote",
    )
    assert status == 403

