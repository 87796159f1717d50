"""Dark theme and small screens (issue 27): axe-core finds nothing in both colour schemes and at 390 px, and
at 390 px no page is wider than the screen (the Timeline's payloads stay reachable)."""

from __future__ import annotations

import pytest
from django.db import connections

from experiments.ingest import EventIn, append_events
from memory.curation.models import Proposal
from tests.browser.axe import check, report
from tests.conftest import login
from tests.factories import make_experiment, make_member, make_run

# The elements that make a page wider than the screen: outside every box that scrolls sideways.
WIDEST = """() => [...document.querySelectorAll('body *')].filter(e => {
  if (e.getBoundingClientRect().right <= document.documentElement.clientWidth + 1) return false;
  const parent = e.parentElement;
  return !parent || parent.getBoundingClientRect().right <= document.documentElement.clientWidth + 1;
}).slice(0, 6).map(e => e.tagName + '.' + e.className + '#' + e.id + ':' + Math.round(e.getBoundingClientRect().right))"""

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def seeded():  # type: ignore[no-untyped-def]
    experiment = make_experiment(name="Themes", status="running")
    owner = make_member(experiment, "owner")
    run = make_run(experiment, run_id="2026-11-21_10-00-00_themes01", status="complete", reason="done",
                   budget_used={"tokens": {"consumed": 123456, "max": 500000}})  # fmt: skip
    append_events(run, [
        EventIn(kind="run.start", dedupe_key="s", payload={"task": "Collect facts"}),
        EventIn(kind="worker.spawn", dedupe_key="w", agent_id="fact_collector", iteration=1, payload={"worker_id": "fact_collector"}),
        EventIn(kind="log", dedupe_key="l", payload={"msg": "a long line " * 40, "nested": {"deep": list(range(40))}}),
        EventIn(kind="metric.confidence", dedupe_key="m", iteration=1, payload={"mean": 0.8}),
    ])  # fmt: skip
    make_run(experiment, run_id="2026-11-21_11-00-00_themes02", status="failed")
    Proposal.objects.create(experiment=experiment, kind="fact", key="k1", text="42 is even.")
    base = f"/experiments/{experiment.slug}"
    pages = ["/", f"{base}/", f"{base}/runs/", f"{base}/connect/", f"{base}/runs/{run.pk}/", f"{base}/runs/{run.pk}/iterations/",
             f"{base}/memory/", f"{base}/review/", f"{base}/protocol/", "/help/glossary/", "/status/"]  # fmt: skip
    return owner, pages


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_in_either_colour_scheme(asgi_server, browser, scheme):
    owner, pages = seeded()
    context = browser.new_context(viewport={"width": 1366, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    login(page, asgi_server, owner.username)
    found = {}
    for path in pages:
        page.goto(asgi_server.url + path)
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert background == ("rgb(21, 23, 27)" if scheme == "dark" else "rgb(247, 247, 245)"), (path, background)
        violations = check(page)
        if violations:
            found[path] = violations
    context.close()
    connections.close_all()
    assert not found, report(found)


def test_390px_pages_fit_the_screen_and_pass_axe(asgi_server, browser):
    owner, pages = seeded()
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, color_scheme="dark")
    page = context.new_page()
    login(page, asgi_server, owner.username)
    found, too_wide = {}, {}
    for path in pages:
        page.goto(asgi_server.url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            too_wide[path] = (width, page.evaluate(WIDEST))
        violations = check(page)
        if violations:
            found[path] = violations
    timeline = [p for p in pages if p.endswith(f"/runs/{p.split('/runs/')[-1]}") and p.count("/") == 5]
    page.goto(asgi_server.url + timeline[0])
    page.locator("details.payload-toggle summary").last.click()
    box = page.locator("pre.payload").last.bounding_box()
    context.close()
    connections.close_all()
    assert not too_wide, too_wide
    assert not found, report(found)
    assert box is not None and box["x"] >= 0 and box["x"] < 390
