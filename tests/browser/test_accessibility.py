"""WCAG 2 A/AA (axe-core 4.14, real Chromium) over every page and htmx fragment a viewer, a curator and an owner reach.

The demo run (recorded from the real runtime) is replayed and curated, so the pages carry real data: a Timeline,
a board, digests, state, working logs, proposals in the Review queue.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
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

PER_SHAPE = 2  # pages that differ only by ids or numbers share their template: check two of each


def demo_experiment(tmp_path, settings) -> Experiment:  # type: ignore[no-untyped-def]
    settings.AWP_DEMO_DIR = tmp_path / "demo"
    call_command("awp_seed_demo", stdout=io.StringIO())
    call_command("awp_demo", "--once", "--delay", "0", stdout=io.StringIO())
    call_command("awp_curate", "--experiment", "demo", stdout=io.StringIO())
    return Experiment.objects.get(slug="demo")


def shape(url: str) -> str:
    """A URL with its numbers and query values blanked: one template, one shape."""
    parts = urlsplit(url)
    return re.sub(r"\d+", "N", parts.path) + "?" + "&".join(sorted({k for k, _ in parse_qsl(parts.query)}))


def reachable(username: str, starts: list[str]) -> list[tuple[str, bool]]:
    """(url, is_fragment) for every page and htmx fragment the user reaches from starts, a few per shape."""
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    seen = crawl(client, starts, max_pages=400)
    assert not seen.errors(), seen.errors()
    picked: dict[str, list[tuple[str, bool]]] = defaultdict(list)
    for key, status in seen.statuses.items():
        body = seen.bodies.get(key, "")
        if status != 200 or "<" not in body or key.startswith("/api/"):
            continue
        url, is_fragment = key.removesuffix(" [htmx]"), key.endswith(" [htmx]")
        bucket = picked[f"{shape(url)} {is_fragment}"]
        if len(bucket) < PER_SHAPE:
            bucket.append((url, is_fragment))
    return [item for bucket in picked.values() for item in bucket]


@pytest.mark.parametrize("role", ["viewer", "curator", "owner"])
def test_every_page_and_fragment_passes_axe(role, tmp_path, settings, asgi_server, page):
    experiment = demo_experiment(tmp_path, settings)
    user = make_member(experiment, role)
    urls = reachable(user.username, ["/", experiment.get_absolute_url()])
    pages = [url for url, is_fragment in urls if not is_fragment]
    fragments = [url for url, is_fragment in urls if is_fragment]
    assert len(pages) >= 10 and fragments, urls

    login(page, asgi_server, user.username)
    found = {}
    for url in pages:
        response = page.goto(asgi_server.url + url)
        assert response is not None and response.ok, url
        page.wait_for_load_state("networkidle")
        found[url] = check(page)
    fetcher = page.context.request
    for url in fragments:
        html = fetcher.get(asgi_server.url + url, headers={"HX-Request": "true"}).text()
        found[f"{url} [htmx]"] = check_fragment(page, asgi_server.url, html)
    found = {url: violations for url, violations in found.items() if violations}
    assert found == {}, f"{len(found)} of {len(urls)} {role} pages/fragments break WCAG rules:\n" + report(found)
