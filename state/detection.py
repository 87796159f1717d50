"""Secret detection at the door: every text that enters is scanned once, and what is found is learnt.

This is the one function both halves of the design call: ingest (what it finds becomes a known secret of the
experiment) and every outbound text (a credential quoted in prose before it was ever keyed is found at send
time). Pure: no Django, no I/O (the fail-closed switch, `state.detector_switch`, reads the settings once).

Two passes: what is announced (a credential word as key, label or flag near the value) or in a known vendor
form (`state.redaction.text_secrets`), and, fail-closed (`AWP_SECRETS_FAIL_CLOSED`, on by default), every
random-looking token in no harmless form (`state.failclosed`).
"""

from __future__ import annotations

import base64
import binascii
import re

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
    caught = {value for value in fail_closed_secrets(text, sensitive, found) if not encoded_clean_text(value, sensitive)}
    return learnable(found | caught, sensitive)


# Class (round 13): base64 that reads as plain text (a ConfigMap's `binaryData`, a settings file encoded whole): it is
# random-looking only as encoded; what it encodes is read as any text is, and the encoding is learnt only if that
# text holds a credential (a Secret's `.env` or `.dockerconfigjson` does; `log_level=info` does not). A value with no
# space or line break in it (a password, `user:password`) is no such text.
_BASE64 = re.compile(r"[A-Za-z0-9+/]{24,}={0,2}")
_READABLE = re.compile(r"[\x20-\x7e\t\r\n\u00a0-\uffff]+")


def encoded_clean_text(value: str, sensitive: frozenset[str]) -> bool:
    """Whether `value` is base64 of readable text of several words or lines in which nothing is found."""
    if not _BASE64.fullmatch(value) or len(value) % 4:
        return False
    try:
        decoded = base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    if not _READABLE.fullmatch(decoded) or not any(char in decoded.strip() for char in " \n\t"):
        return False
    return not detect_secrets(decoded, sensitive, fail_closed=True)


def learnable(values: set[str], sensitive: frozenset[str]) -> set[str]:
    """What of the values found becomes a known secret: all but placeholders, references, names and hashes (masked
    in place where they stand, never by value everywhere)."""
    return {value for value in values if not harmless_value(value, sensitive)}
