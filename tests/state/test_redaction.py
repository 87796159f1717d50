"""Redaction never leaves a sensitive value anywhere in the output, at any depth (property test)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from state.redaction import REDACTED, is_sensitive, redact, redact_at, sensitive_set

SENSITIVE = sensitive_set(["api_key", "password", "secret", "token", "authorization", "credentials", "internal_notes"])
_plain_keys = st.sampled_from(["summary", "findings", "max_tokens", "score", "nested", "items", "tokenizer_name"])
_sensitive_keys = st.sampled_from(["api_key", "OPENAI_API_KEY", "apiKey", "password", "db-password", "client_secret", "Authorization", "internal_notes", "credentials"])


def _documents():
    secrets = st.builds(lambda n: f"SECRET-{n}-VALUE", st.integers(0, 10**9))
    leaf = st.one_of(st.integers(), st.text(alphabet="abc xyz", max_size=8), st.booleans(), st.none())
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.dictionaries(_plain_keys, inner, max_size=3),
            st.dictionaries(_sensitive_keys, st.one_of(secrets, st.dictionaries(_plain_keys, secrets, max_size=2), st.lists(secrets, max_size=2)), min_size=1, max_size=2),
            st.builds(lambda a, b: {**a, **b}, st.dictionaries(_plain_keys, inner, max_size=2), st.dictionaries(_sensitive_keys, secrets, max_size=2)),
        ),
        max_leaves=12,
    )


@settings(max_examples=300)
@given(_documents())
def test_no_sensitive_value_survives_redaction(document):
    out = json.dumps(redact(document, SENSITIVE))
    assert "SECRET-" not in out


def test_key_matching_is_by_words():
    assert is_sensitive("openai_api_key", SENSITIVE) and is_sensitive("apiKey", SENSITIVE)
    assert not is_sensitive("max_tokens", SENSITIVE) and not is_sensitive("tokenizer_name", SENSITIVE)


def test_values_at_sensitive_paths_are_redacted_whole():
    assert redact_at(("researcher", "api_key"), {"a": 1}, SENSITIVE) == REDACTED
    assert redact_at(("researcher",), {"password": "p", "x": 1}, SENSITIVE) == {"password": REDACTED, "x": 1}


def test_contract_fields_marked_sensitive_join_the_list():
    from state.services_redaction import contract_sensitive_fields

    protocol = {"agents": {"researcher": {"output_contract": {"properties": {"raw_prompt": {"x-awp-sensitive": True}, "summary": {}}}}}}
    assert contract_sensitive_fields(protocol) == ["raw_prompt"]
