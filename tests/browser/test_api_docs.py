"""/api/v1/docs works with no internet and under the app's CSP: Swagger UI from files the server serves (issue 27)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.conftest import login
from tests.factories import make_experiment, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_offline_under_the_csp(asgi_server, page):
    user = make_member(make_experiment(), "viewer")
    outside: list[str] = []
    errors: list[str] = []

    def only_loopback(route):  # type: ignore[no-untyped-def]
        if urlsplit(route.request.url).hostname not in ("127.0.0.1", "localhost"):
            outside.append(route.request.url)
            return route.abort()
        return route.continue_()

    page.route("**/*", only_loopback)
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    login(page, asgi_server, user.username)
    response = page.goto(f"{asgi_server.url}/api/v1/docs")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("AWP")
    expect(page.locator(".opblock-tag").first).to_be_visible()
    assert outside == [] and errors == []
