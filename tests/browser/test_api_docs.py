"""The API docs render with no internet: Swagger UI is served from this server's own static files, under the CSP."""

from __future__ import annotations

import pytest

from tests.conftest import login
from tests.factories import make_experiment, make_member

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_api_docs_render_offline_under_the_csp(asgi_server, page):
    user = make_member(make_experiment())
    outside: list[str] = []
    errors: list[str] = []

    def only_this_server(route):  # type: ignore[no-untyped-def]
        if route.request.url.startswith(asgi_server.url):
            route.continue_()
        else:  # what a machine without internet (or a CDN outage) does to the request
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_this_server)
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    login(page, asgi_server, user.username)
    response = page.goto(f"{asgi_server.url}/api/v1/docs")
    assert response is not None and "Content-Security-Policy" in {k.title(): v for k, v in response.headers.items()}
    page.wait_for_selector(".opblock-summary-path", timeout=20_000)  # operations listed from the OpenAPI schema
    assert page.locator(".opblock").count() > 10
    assert outside == [] and errors == [], (outside, errors)
