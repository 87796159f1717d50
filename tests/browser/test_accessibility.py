"""WCAG 2 A/AA (axe-core 4.14, real Chromium) over every page and htmx fragment a viewer, a curator and an owner reach.

The demo run (recorded from the real runtime) is replayed and curated, so the pages carry real data: a Timeline,
a board, digests, state, working logs, proposals in the Review queue. Pages that differ only by ids or query values
share a template, so one of each shape is checked, for each role (controls differ by role); a fragment is checked on
its own only when no page of the same URL was (the page holds the same partial).
"""

from __future__ import annotations

import io
import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.core.management import call_command
from django.test import Client

from experiments.models import Experiment
from tests.browser.axe import check, check_fragment, report
from tests.conftest import login
from tests.factories import PASSWORD, make_member
from tests.security.crawl import crawl

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ROLES = ("viewer", "curator", "owner")


def demo_experiment(tmp_path, settings) -> Experiment:  # type: ignore[no-untyped-def]
    settings.AWP_DEMO_DIR = tmp_path / "demo"
    call_command("awp_seed_demo", stdout=io.StringIO())
    call_command("awp_demo", "--once", "--delay", "0", stdout=io.StringIO())
    call_command("awp_curate", "--experiment", "demo", stdout=io.StringIO())
    return Experiment.objects.get(slug="demo")


def shape(url: str) -> str:
    """A URL with its numbers blanked and only its query's names kept: one template, one shape."""
    parts = urlsplit(url)
    return re.sub(r"\d+", "N", parts.path) + "?" + "&".join(sorted({k for k, _ in parse_qsl(parts.query)}))


def reachable(username: str, starts: list[str]) -> list[tuple[str, bool]]:
    """(url, is_fragment) for the HTML pages and htmx fragments the user reaches from starts, one per shape."""
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    seen = crawl(client, starts, shape=shape, per_shape=1)
    assert not seen.errors(), seen.errors()
    html = [key for key, status in seen.statuses.items() if status == 200 and "<" in seen.bodies.get(key, "")]
    pages = {key for key in html if not key.endswith(" [htmx]") and not key.startswith("/api/")}
    fragments = {key.removesuffix(" [htmx]") for key in html if key.endswith(" [htmx]")} - pages
    return [(url, False) for url in sorted(pages)] + [(url, True) for url in sorted(fragments)]


def axe_everywhere(experiment: Experiment, asgi_server, browser, **context_options) -> tuple[dict[str, list], int]:  # type: ignore[no-untyped-def]
    """axe-core over every page and fragment each role reaches, in a browser context with `context_options`."""
    found, checked = {}, 0
    for role in ROLES:
        user = make_member(experiment, role)
        urls = reachable(user.username, ["/", experiment.get_absolute_url()])
        assert len(urls) >= 15 and any(is_fragment for _, is_fragment in urls), urls
        context = browser.new_context(**context_options)
        page = context.new_page()
        login(page, asgi_server, user.username)
        for url, is_fragment in urls:
            if is_fragment:
                html = context.request.get(asgi_server.url + url, headers={"HX-Request": "true"}).text()
                found[f"{role} {url} [htmx]"] = check_fragment(page, asgi_server.url, html)
            else:
                response = page.goto(asgi_server.url + url)
                assert response is not None and response.ok, url
                page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
                found[f"{role} {url}"] = check(page)
        checked += len(urls)
        context.close()
    return {url: violations for url, violations in found.items() if violations}, checked


def test_every_page_and_fragment_passes_axe_for_every_role(tmp_path, settings, asgi_server, browser):
    experiment = demo_experiment(tmp_path, settings)
    found, checked = axe_everywhere(experiment, asgi_server, browser, viewport={"width": 1366, "height": 900})
    assert found == {}, f"{len(found)} of {checked} pages/fragments break WCAG rules:\n" + report(found)


def test_every_page_passes_axe_in_the_dark_theme_and_at_390px(tmp_path, settings, asgi_server, browser):
    """The owner reaches every page shape; each is checked in the other colour scheme and on a phone's width
    (one demo and one crawl for the three browser contexts)."""
    experiment = demo_experiment(tmp_path, settings)
    owner = make_member(experiment, "owner")
    urls = [url for url, is_fragment in reachable(owner.username, ["/", experiment.get_absolute_url()]) if not is_fragment]
    assert len(urls) >= 15, urls
    found = {}
    for scheme, width in (("dark", 1366), ("dark", 390), ("light", 390)):
        context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        page = context.new_page()
        login(page, asgi_server, owner.username)
        for url in urls:
            response = page.goto(asgi_server.url + url)
            assert response is not None and response.ok, url
            page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-settling, .htmx-swapping')")
            found[f"{url} ({scheme}, {width} px)"] = check(page)
        context.close()
    found = {url: violations for url, violations in found.items() if violations}
    assert found == {}, f"{len(found)} of {3 * len(urls)} pages break WCAG rules:\n" + report(found)


def test_the_dark_theme_is_dark_and_the_timeline_fits_a_phone(tmp_path, settings, asgi_server, browser):
    experiment = demo_experiment(tmp_path, settings)
    user = make_member(experiment, "viewer")
    run = experiment.runs.order_by("pk").first()
    assert run is not None
    for scheme, dark in (("light", False), ("dark", True)):
        context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
        page = context.new_page()
        login(page, asgi_server, user.username)
        page.goto(asgi_server.url + run.get_absolute_url())
        page.wait_for_selector("#timeline-rows tr")
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        channels = [int(c) for c in re.findall(r"\d+", background)[:3]]
        assert (sum(channels) / 3 < 80) is dark, (scheme, background)
        # Every payload summary starts and ends on the screen (before: the column began past 390 px).
        boxes = page.eval_on_selector_all("#timeline-rows td.event-summary", "cells => cells.map(c => c.getBoundingClientRect().toJSON())")
        assert boxes and all(0 <= box["left"] and box["right"] <= 390 + 0.5 for box in boxes), boxes[:3]
        context.close()
