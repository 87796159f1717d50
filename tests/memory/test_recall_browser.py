"""'What will this agent remember?' in a real Chromium: scores shown, the block follows the query, Reflect now."""

from __future__ import annotations

import pytest

from experiments.ingest import EventIn, append_events
from experiments.protocol import parse_protocol
from memory.curation.models import Proposal
from tests.awp_runtime import FakeLLM
from tests.conftest import login
from tests.factories import make_experiment, make_member, make_run

pytestmark = pytest.mark.browser

PROTOCOL = "state:\n  sharing: {strategy: full}\nmemory:\n  salience: {top_k: 2}\n"


def test_recall_view_shows_scores_and_follows_the_query(live_server_factory, page) -> None:
    llm = FakeLLM().start()
    try:
        server = live_server_factory(LLM_BASE_URL=llm.url)
        experiment = make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))
        run = make_run(experiment)
        append_events(run, [
            EventIn("worker.complete", f"key:{n}", {"summary": text}, agent_id="writer", iteration=n)
            for n, text in enumerate(["Invoices are printed on A4 paper.", "Bananas ripen in three days.",
                                      "The garden needs water.", "Pytest fixtures keep the suite fast."], 1)
        ])  # fmt: skip
        curator = make_member(experiment, "curator")
        login(page, server, curator.username)
        page.goto(f"{server.url}/experiments/{experiment.slug}/memory/")
        page.click("nav.memory-subtabs >> text=Recall")
        page.wait_for_url("**/memory/recall/")
        page.click("#recall-form button[type=submit]")
        page.wait_for_selector("#recall-items td[data-score=salience]")
        rows = page.locator("#recall-items tr:has(td)")
        assert rows.count() == 2 and page.locator("#recall-below tr:has(td)").count() == 2
        assert "Invoices" not in page.locator("#recall-items").inner_text()  # the oldest falls below the cut
        assert {cell.inner_text() for cell in page.locator("#recall-items td[data-score=relevance]").all()} == {"0.000"}

        # Typing a query re-ranks through htmx: the relevant old episode climbs into the block.
        page.locator("#id_q").press_sequentially("invoices A4 paper", delay=20)
        page.locator("#recall-items", has_text="Invoices").wait_for()
        assert page.locator("#recall-items td[data-score=relevance]").first.inner_text() != "0.000"
        assert "q=invoices" in page.url
        assert "invoices A4 paper" in page.locator("#recall-result h3").first.inner_text()

        # Keyboard: Reflect now is reachable and works; the belief shows up and waits for review.
        button = page.get_by_role("button", name="Reflect now")
        button.focus()
        page.keyboard.press("Enter")
        page.wait_for_selector("#recall-reflections >> text=BELIEF: writer")
        assert Proposal.objects.filter(experiment=experiment, kind="reflection", status="pending").count() == 1
        assert page.locator("#reflection-off").count() == 0
    finally:
        llm.stop()
