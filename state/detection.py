"""Secret detection at the door: every text that enters is scanned once, and what is found is learnt.

This is the one function both halves of the design call: ingest (what it finds becomes a known secret of the
experiment) and every outbound text (a credential quoted in prose before it was ever keyed is found at send
time). Pure: no Django, no I/O (the fail-closed switch is read from the settings when Django is configured).

Two passes: what is announced (a credential word as key, label or flag near the value) or in a known vendor
form (`state.redaction.text_secrets`), and, fail-closed (`AWP_SECRETS_FAIL_CLOSED`, on by default), every
random-looking token in no harmless form (`state.failclosed`).
"""

from __future__ import annotations

from state.failclosed import fail_closed_enabled, fail_closed_secrets, harmless_value
from state.redaction import text_secrets


def detect_secrets(text: str, sensitive: frozenset[str], *, fail_closed: bool | None = None) -> set[str]:
    """Values in `text` that are credentials: under a sensitive name in any shape, in a known token format, and
    (fail-closed) any random-looking token that is in no harmless form."""
    found = text_secrets(text, sensitive)
    if fail_closed if fail_closed is not None else fail_closed_enabled():
        found |= fail_closed_secrets(text, sensitive, found)
        found = {value for value in found if not harmless_value(value)}
    return found
