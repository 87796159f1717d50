"""Secret detection at the door: every text that enters is scanned once, and what is found is learnt.

This is the one function both halves of the design call: ingest (what it finds becomes a known secret of the
experiment) and every outbound text (a credential quoted in prose before it was ever keyed is found at send
time). Pure: no Django, no I/O (the fail-closed switch, `state.detector_switch`, reads the settings once).

Two passes: what is announced (a credential word as key, label or flag near the value) or in a known vendor
form (`state.redaction.text_secrets`), and, fail-closed (`AWP_SECRETS_FAIL_CLOSED`, on by default), every
random-looking token in no harmless form (`state.failclosed`).
"""

from __future__ import annotations

from state.detector_switch import fail_closed_enabled
from state.failclosed import fail_closed_secrets, harmless_value
from state.redaction import text_secrets


def detect_secrets(text: str, sensitive: frozenset[str], *, fail_closed: bool | None = None) -> set[str]:
    """Values in `text` that are credentials: under a sensitive name in any shape, in a known token format, and
    (fail-closed) any random-looking token that is in no harmless form."""
    found = text_secrets(text, sensitive)
    if fail_closed if fail_closed is not None else fail_closed_enabled():
        return with_fail_closed(text, sensitive, found)
    return learnable(found, sensitive)


def with_fail_closed(text: str, sensitive: frozenset[str], found: set[str]) -> set[str]:
    """The fail-closed step after the announced one: `found` (what was announced in `text`, or keyed in the
    document it was serialised from) plus every random-looking token of `text`, less the harmless values."""
    return learnable(found | fail_closed_secrets(text, sensitive, found), sensitive)


def learnable(values: set[str], sensitive: frozenset[str]) -> set[str]:
    """What of the values found becomes a known secret: all but placeholders, references, names and hashes (masked
    in place where they stand, never by value everywhere)."""
    return {value for value in values if not harmless_value(value, sensitive)}
