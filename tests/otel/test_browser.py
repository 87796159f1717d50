"""An OTel run page in a real Chromium: the agents drawn as a tree, tokens in the header, the token burn-up."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from playwright.sync_api import expect

from experiments.models import Run
from tests.conftest import login
from tests.factories import make_member, make_token
from tests.otel.spans import SECRET, collected

pytestmark = pytest.mark.browser


def test_run_page_draws_the_agent_tree_tokens_and_burn_up(asgi_server, page, experiment):
    owner = make_member(experiment, "owner")
    exporter = OTLPSpanExporter(endpoint=f"{asgi_server.url}/otel/v1/traces", headers={"Authorization": f"Bearer {make_token(experiment)}"})
    spans = collected(fail_tool=True)
    assert exporter.export(spans) == SpanExportResult.SUCCESS
    run = Run.objects.get(experiment=experiment)
    login(page, asgi_server, owner.username)
    page.goto(f"{asgi_server.url}{run.get_absolute_url()}")
    page.wait_for_selector(".graph-svg")
    planner = next(s for s in spans if s.name == "invoke_agent planner")
    writer = next(s for s in spans if s.name == "invoke_agent writer")
    expect(page.locator(f'.graph-svg g.graph-node[data-node="s{planner.context.span_id:016x}"]')).to_have_count(1)
    expect(page.locator(f'.graph-svg g.graph-node[data-node="s{writer.context.span_id:016x}"]')).to_have_count(1)
    assert page.locator(".graph-svg polyline.graph-edge").count() == 2  # run → planner → writer
    expect(page.locator(".run-tokens")).to_have_text("200 in · 70 out")
    assert page.locator('#chart-budget g[data-series="tokens"] circle.point').count() == 2
    assert SECRET not in page.content()
    page.screenshot(path="/tmp/otel-run-page.png", full_page=True)
