"""Highlight query words in a search result: escape first, then wrap matches in <mark>. Pure."""

from __future__ import annotations

import html
import re


def highlight(text: str, query: str) -> str:
    """HTML-escaped `text` with every word of `query` (2+ characters, case-insensitive) wrapped in <mark>."""
    words = sorted({w for w in re.findall(r"\w+", query.lower()) if len(w) > 1}, key=len, reverse=True)
    escaped = html.escape(text)
    if not words:
        return escaped
    pattern = re.compile("|".join(re.escape(html.escape(w)) for w in words), re.IGNORECASE)
    return pattern.sub(lambda m: f"<mark>{m.group(0)}</mark>", escaped)
