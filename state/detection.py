"""Secret detection at the door: every text that enters is scanned once, and what is found is learnt.

This is the one function both halves of the design call: ingest (what it finds becomes a known secret of the
experiment) and every outbound text (a credential quoted in prose before it was ever keyed is found at send
time). Pure: no Django, no I/O.
"""

from __future__ import annotations

from state.redaction import text_secrets


def detect_secrets(text: str, sensitive: frozenset[str]) -> set[str]:
    """Values in `text` that are credentials: under a sensitive name in any shape, or in a known token format."""
    return text_secrets(text, sensitive)
