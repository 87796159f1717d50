"""Markdown to HTML for memory documents, sanitized with nh3 so no script or active HTML survives."""

from __future__ import annotations

import markdown as md
import nh3

_TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "del", "mark", "span",
}  # fmt: skip
_ATTRIBUTES = {"a": {"href", "title"}, "th": {"align"}, "td": {"align"}}


def render_markdown(text: str) -> str:
    """Render Markdown to HTML that is safe to insert: only an allow-list of inert tags and attributes survives."""
    # Python-Markdown passes raw HTML through; nh3 then drops every tag outside the allow-list, removes
    # <script>/<style> with their content, event-handler attributes and javascript: URLs.
    html = md.markdown(text, extensions=["fenced_code", "tables", "sane_lists"])
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
