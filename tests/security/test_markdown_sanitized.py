"""Markdown is sanitized wherever people read it: MEMORY.md versions, their history and diff, daily logs, notes."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from memory.longterm import write_long_term_version
from tests.factories import make_experiment, make_member
from tests.security.crawl import crawl

pytestmark = pytest.mark.django_db

PAYLOADS = [
    "<script>window.PWNED=1</script>",
    '<img src="x" onerror="window.PWNED=2">',
    "[click me](javascript:window.PWNED=3)",
    '<a href="javascript:window.PWNED=4">raw link</a>',
    '<iframe src="https://evil.example/"></iframe>',
    '<svg><script>window.PWNED=5</script></svg>',
    '<div style="background:url(javascript:window.PWNED=6)">styled</div>',
    '<form action="https://evil.example/"><input name="q"></form>',
]
DANGEROUS = re.compile(r"<script(?![^>]*\bsrc=\"/static/)|\son\w+\s*=|javascript:|<iframe|<object|<embed|action=\"https://evil", re.I)


def test_hostile_markdown_in_memory_is_inert_on_every_memory_page():
    experiment = make_experiment()
    curator = make_member(experiment, "curator")
    write_long_term_version(experiment=experiment, content="# Memory\n\n- a safe fact\n", reason="seed", source="test", author=curator)
    hostile = "# Memory\n\n" + "\n\n".join(PAYLOADS) + "\n\n- a safe fact\n"
    write_long_term_version(experiment=experiment, content=hostile, reason="hostile edit", source="test", author=curator)
    browser = Client()
    browser.force_login(curator)
    seen = crawl(browser, [f"/experiments/{experiment.slug}/memory/", f"/experiments/{experiment.slug}/memory/long-term/"])
    memory_pages = {url: body for url, body in seen.bodies.items() if "/memory/" in url and body}
    assert any("a safe fact" in body for body in memory_pages.values()), sorted(memory_pages)
    hits = {}
    for url, body in memory_pages.items():
        # Editing forms show the raw Markdown inside a <textarea>, escaped: that is text, not markup.
        visible = re.sub(r"<textarea[^>]*>.*?</textarea>", "", body, flags=re.S | re.I)
        found = DANGEROUS.findall(visible)
        if found:
            hits[url] = found
    assert hits == {}, hits
