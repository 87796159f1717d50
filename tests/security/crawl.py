"""A same-origin crawler over Django's test client: follows links and htmx GETs, collects forms and bodies."""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

# Never followed: logging out ends the crawl's session; admin and static files are not the product's pages.
SKIP_PREFIXES = ("/logout/", "/admin/", "/static/", "/login/", "/api/v1/docs")
UNSAFE = ("post", "put", "patch", "delete")


@dataclass
class Form:
    """A way the page can change something: a <form method=post> or an hx-post/put/patch/delete."""

    page: str
    method: str
    action: str
    fields: dict[str, str]


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.fragments: list[str] = []
        self.forms: list[tuple[str, str, dict[str, str]]] = []
        self.htmx_writes: list[tuple[str, str]] = []
        self._form: tuple[str, str, dict[str, str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v or "") for k, v in attrs}
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if a.get("hx-get"):
            self.fragments.append(a["hx-get"])
        for verb in UNSAFE:
            if a.get(f"hx-{verb}"):
                self.htmx_writes.append((verb, a[f"hx-{verb}"]))
        if tag == "form":
            method = (a.get("method") or "get").lower()
            self._form = (method, a.get("action", ""), {})
            if method == "get" and a.get("action") is not None:
                self.links.append(a.get("action") or "")
        if tag in {"input", "select", "textarea", "button"} and self._form is not None and a.get("name"):
            self._form[2][a["name"]] = a.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self._form is not None:
            self.forms.append(self._form)
            self._form = None


@dataclass
class Crawl:
    """What a crawl saw: every body by URL, every form, and the URLs that answered with an error."""

    bodies: dict[str, str] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    forms: list[Form] = field(default_factory=list)

    def errors(self) -> dict[str, int]:
        return {url: status for url, status in self.statuses.items() if status >= 500}


def local(url: str, base: str) -> str | None:
    """The path?query of url if it is same-origin and worth visiting, else None."""
    if not url or url.startswith(("#", "javascript:", "mailto:", "data:")) or "{" in url:
        return None
    joined = urljoin(base, url)
    parts = urlsplit(joined)
    if parts.scheme not in {"", "http", "https"} or parts.netloc not in {"", "testserver"}:
        return None
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    if path.startswith(SKIP_PREFIXES):
        return None
    return path


def body_of(response: Any) -> bytes:
    """The whole body, streamed responses too (exports stream through an async iterator)."""
    if not getattr(response, "streaming", False):
        return bytes(response.content)
    if getattr(response, "is_async", False):
        import asyncio
        from concurrent.futures import ThreadPoolExecutor

        from asgiref.sync import async_to_sync

        async def collect() -> bytes:
            return b"".join([chunk async for chunk in response.streaming_content])

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return async_to_sync(collect)()
        # A test driving Playwright's sync API has a loop running on this thread: collect on a thread of its own.
        def collect_and_close() -> bytes:
            from django.db import connections

            try:
                return async_to_sync(collect)()
            finally:
                connections.close_all()  # the thread's connection goes back to the pool

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(collect_and_close).result()
    return b"".join(response.streaming_content)


def crawl(
    client: Any, starts: list[str], *, max_pages: int = 400, shape: Callable[[str], str] | None = None, per_shape: int = 0
) -> Crawl:
    """Visit starts and everything reachable from them on the same origin (as pages and as htmx fragments).

    With `shape` and `per_shape`, at most per_shape URLs of one shape (one template) are visited, page and fragment
    counted apart: a sample of every kind of page instead of every page.
    """
    seen: set[tuple[str, bool]] = set()
    shapes: Counter[tuple[str, bool]] = Counter()
    queue: deque[tuple[str, bool]] = deque((s, False) for s in starts)
    out = Crawl()
    while queue and len(seen) < max_pages:
        url, as_fragment = queue.popleft()
        if (url, as_fragment) in seen:
            continue
        if shape is not None and per_shape:
            kind = (shape(url), as_fragment)
            if shapes[kind] >= per_shape:
                continue
            shapes[kind] += 1
        seen.add((url, as_fragment))
        headers = {"HTTP_HX_REQUEST": "true"} if as_fragment else {}
        response = client.get(url, **headers)
        key = f"{url} [htmx]" if as_fragment else url
        out.statuses[key] = response.status_code
        # text/csv: run exports (issue 16) are a way out too.
        if response.get("Content-Type", "").startswith(("text/html", "application/json", "text/plain", "text/csv")):
            body = body_of(response).decode(errors="replace")
        else:
            body = ""
        out.bodies[key] = body
        if response.status_code in {301, 302} and response.get("Location"):
            target = local(response["Location"], url)
            if target:
                queue.append((target, as_fragment))
            continue
        if "html" not in response.get("Content-Type", ""):
            continue
        parser = _PageParser()
        parser.feed(body)
        for href in parser.links:
            target = local(href, url)
            if target:
                queue.append((target, False))
        for frag in parser.fragments:
            target = local(frag, url)
            if target:
                queue.append((target, True))
        for method, action, fields in parser.forms:
            if method in UNSAFE:
                out.forms.append(Form(url, method, urljoin(url, action) if action else url, fields))
        for verb, action in parser.htmx_writes:
            if "{" not in action:
                out.forms.append(Form(url, verb, urljoin(url, action), {}))
    return out


SECRET_SHAPES = re.compile(r"sk-(?:test|live)-[A-Za-z0-9-]+")
