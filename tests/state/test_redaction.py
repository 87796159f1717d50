"""Redaction never leaves a sensitive value anywhere in the output, at any depth (property test)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from state.redaction import (
    REDACTED,
    is_sensitive,
    may_hold_key_secrets,
    may_hold_key_secrets_rows,
    redact,
    redact_at,
    secrets_in,
    sensitive_set,
)

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


_deltas = st.builds(lambda path, value: {"path": path, "value": value},
                    st.sampled_from(["$.vault.api_key", "$.config.dbPassword", "$.summary", "$.Σ.token"]),
                    st.builds(lambda n: f"SECRET-{n}-VALUE", st.integers(0, 10**9)))  # fmt: skip


@settings(max_examples=300)
@given(st.one_of(_documents(), _deltas, st.lists(st.one_of(_documents(), _deltas), max_size=3)))
def test_may_hold_key_secrets_is_false_only_when_no_key_holds_one(document):
    found = secrets_in(document, SENSITIVE, parse_text=False)
    serialized = json.dumps(document, ensure_ascii=False)
    assert may_hold_key_secrets(serialized, SENSITIVE) or not found


@given(st.lists(st.one_of(_documents().map(json.dumps), st.text(max_size=12),
                         st.sampled_from(["İİİİİİİİİİİİtoken", "ΣΑΣ", '{"apiKey": 1}', ""])), max_size=6))  # fmt: skip
def test_may_hold_key_secrets_rows_is_may_hold_key_secrets_of_each(documents):
    expected = [may_hold_key_secrets(document, SENSITIVE) for document in documents]
    assert may_hold_key_secrets_rows(documents, SENSITIVE) == expected


def test_may_hold_key_secrets_reads_every_spelling_of_a_name():
    for key in ("apiKey", "OPENAI-API-KEY", "db password", "client.SECRET", "Authorization"):
        assert may_hold_key_secrets(json.dumps({key: "x"}), SENSITIVE), key
    assert not may_hold_key_secrets(json.dumps({"summary": "bananas", "score": 3}), SENSITIVE)
    assert not may_hold_key_secrets('{"password": 1}', frozenset())


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
