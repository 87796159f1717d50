"""axe-core in a real Chromium: run WCAG 2 A/AA rules over a page, or over an htmx fragment inside the site's shell."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).with_name("vendor") / "axe.min.js"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
# A fragment is checked inside a bare document: rules about the document itself belong to the page checks.
DOCUMENT_RULES = ["document-title", "html-has-lang", "landmark-one-main", "page-has-heading-one", "region", "bypass"]


def _ensure_axe(page: Any) -> None:
    # evaluate() runs through the DevTools protocol, so the page's CSP (script-src 'self') does not block it.
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_JS.read_text())


def check(page: Any, *, skip_rules: list[str] | None = None) -> list[dict[str, Any]]:
    """The axe violations of what the page shows now, each with its rule, impact and offending elements."""
    _ensure_axe(page)
    rules = {name: {"enabled": False} for name in (skip_rules or [])}
    result = page.evaluate(
        """async ([tags, rules]) => {
            const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}, rules: rules, resultTypes: ['violations']});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.map(n => ({target: n.target.join(' '), html: n.html.slice(0, 160), summary: n.failureSummary}))}));
        }""",
        [WCAG_TAGS, rules],
    )
    return list(result)


def check_fragment(page: Any, base_url: str, html: str) -> list[dict[str, Any]]:
    """The axe violations of an htmx fragment rendered into a bare document with the site's stylesheet."""
    page.goto(f"{base_url}/healthz")
    css = f'<link rel="stylesheet" href="{base_url}/static/css/app.css">'
    body = re.sub(r"<script\b.*?</script>", "", html, flags=re.S | re.I)
    page.set_content(f'<!doctype html><html lang="en"><head><title>fragment</title>{css}</head><body><main>{body}</main></body></html>')
    page.wait_for_load_state("load")
    return check(page, skip_rules=DOCUMENT_RULES)


def report(found: dict[str, list[dict[str, Any]]]) -> str:
    """One readable line per offending element, grouped by URL."""
    lines = []
    for url, violations in sorted(found.items()):
        for violation in violations:
            for node in violation["nodes"]:
                lines.append(f"{url}: {violation['id']} ({violation['impact']}) {node['target']} :: {node['html']}")
    return "\n".join(lines)
