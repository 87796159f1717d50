"""Free-text redaction in every shape a secret takes (property tests, no database).

Random documents hold secrets under sensitive keys at random depths; each is rendered the ways the runtime and
common tools write text (Markdown bullets with reprs, Python repr, JSON, pretty JSON, YAML, env lines, JSON
serialized inside a JSON string, prose quoting a value). No secret survives masking; text without a secret is
never changed.
"""

from __future__ import annotations

import json
import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from state.redaction import (
    REDACTED,
    KnownSecrets,
    is_sensitive,
    redact,
    redact_text,
    secrets_in,
    sensitive_set,
    text_secrets,
)

SENSITIVE = sensitive_set(["api_key", "password", "secret", "token", "authorization", "credentials", "private_key"])
PLAIN_KEYS = ["summary", "findings", "notes", "host", "port", "max_tokens", "user", "region", "confidence", "items", "build_log"]
SENSITIVE_KEYS = ["api_key", "owner_password", "client_secret", "access_token", "Authorization", "credentials", "dbPassword", "AWS_SECRET_ACCESS_KEY"]
# Secrets as agents produce them: a marker (so a secret cannot occur in the surrounding text by chance) and
# characters of keys, tokens and passwords.
SECRET_ALPHABET = string.ascii_letters + string.digits + "-_.~+/!%^*@#$"
secret_values = st.text(alphabet=SECRET_ALPHABET, min_size=4, max_size=24).map(lambda s: f"Qz7{s}")
plain_values = st.one_of(
    st.text(alphabet=string.ascii_lowercase + " ", min_size=0, max_size=12),
    st.integers(-1000, 10**6),
    st.booleans(),
    st.none(),
)


def documents(with_secrets: bool = True) -> st.SearchStrategy[dict]:
    keys = st.sampled_from(PLAIN_KEYS)
    secret_subtree = st.one_of(
        secret_values,
        st.lists(secret_values, min_size=1, max_size=2),
        st.dictionaries(st.sampled_from(["user", "pass", "value"]), secret_values, min_size=1, max_size=2),
    )

    def nest(inner: st.SearchStrategy) -> st.SearchStrategy:
        options = [st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)]
        if with_secrets:
            options.append(
                st.builds(lambda a, b: {**a, **b}, st.dictionaries(keys, inner, max_size=2),
                          st.dictionaries(st.sampled_from(SENSITIVE_KEYS), secret_subtree, min_size=1, max_size=2))
            )  # fmt: skip
        return st.one_of(*options)

    tree = st.recursive(plain_values, nest, max_leaves=10)
    top = st.dictionaries(keys, tree, min_size=1, max_size=4)
    if not with_secrets:
        return top
    return st.builds(lambda a, b: {**a, **b}, top, st.dictionaries(st.sampled_from(SENSITIVE_KEYS), secret_subtree, min_size=1, max_size=2))


def planted(document: object) -> set[str]:
    """Every secret the generator put in (all of them start with the marker)."""
    return {s for s in _strings(document) if s.startswith("Qz7")}


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def markdown_bullets(document: dict) -> str:
    """The runtime's daily-log shape: `- **key**: value`, nested values as Python reprs."""
    return "\n".join(f"- **{k}**: {v if isinstance(v, str) else repr(v)}" for k, v in document.items())


def _flat(value: object, prefix: str) -> list[tuple[str, str]]:
    """(NAME_OF_PATH, leaf) pairs: how nested configuration becomes environment variables."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _flat(v, f"{prefix}_{k}" if prefix else k)]
    if isinstance(value, list):
        return [pair for v in value for pair in _flat(v, prefix)]
    return [(prefix, value)] if isinstance(value, str) and value else []


def env_lines(document: dict) -> str:
    lines = ["#!/bin/sh", "export AWS_REGION=eu-west-1"]
    for name, leaf in _flat(document, ""):
        prefix = "export " if len(lines) % 2 else ""
        lines.append(f"{prefix}{name.upper()}={leaf.replace(' ', '_')}")
    return "\n".join(lines + ["python collect.py --fast"])


SHAPES = {
    "markdown": markdown_bullets,
    "repr": repr,
    "json": json.dumps,
    "json_pretty": lambda d: json.dumps(d, indent=2),
    "yaml": lambda d: yaml.safe_dump(d, sort_keys=False),
    "yaml_in_string": lambda d: json.dumps({"build_log": "step1 ok\n" + yaml.safe_dump(d) + "step2 ok"}),
    "json_in_string": lambda d: json.dumps({"raw_config": json.dumps(d)}),
    "repr_in_note": lambda d: "Worker note: connected with settings " + repr(d) + " and went on.",
    "env": env_lines,
    "assignment": lambda d: "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items()),
}


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents(), shape=st.sampled_from(sorted(SHAPES)))
def test_no_secret_survives_any_shape(document, shape):
    text = SHAPES[shape](document)
    out = redact_text(text, SENSITIVE)
    leaked = [s for s in planted(document) if s in out]
    assert not leaked, f"{shape}: {leaked} in {out!r}"


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents(), shape=st.sampled_from(sorted(SHAPES)), prose_key=st.sampled_from(PLAIN_KEYS))
def test_a_secret_quoted_in_prose_is_masked_once_learnt(document, shape, prose_key):
    """What the text teaches (secrets_in / text_secrets) masks the same value quoted under a harmless key."""
    learnt = secrets_in(document, SENSITIVE) | text_secrets(SHAPES[shape](document), SENSITIVE)
    known = KnownSecrets.of(learnt)
    for secret in planted(document):
        prose = f"{prose_key}: the auth header uses {secret} for now, as agreed ({secret})."
        out = redact_text(prose, SENSITIVE, known)
        assert secret not in out, (secret, out)
        assert out.startswith(f"{prose_key}: the auth header uses ")


@settings(max_examples=200)
@given(document=documents())
def test_redact_masks_a_value_quoted_inside_the_same_document(document):
    secrets = planted(document)
    quoted = {**document, "prose": "uses " + " and ".join(sorted(secrets)) + " for now"}
    out = json.dumps(redact(quoted, SENSITIVE))
    assert not [s for s in secrets if s in out]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents(with_secrets=False), shape=st.sampled_from(sorted(SHAPES)))
def test_text_without_a_secret_is_never_changed(document, shape):
    assert not any(is_sensitive(k, SENSITIVE) for k in PLAIN_KEYS)
    text = SHAPES[shape](document)
    assert redact_text(text, SENSITIVE) == text


@given(
    text=st.text(max_size=300),
    secrets=st.lists(st.text(alphabet=SECRET_ALPHABET, min_size=6, max_size=20), min_size=1, max_size=5),
)
def test_known_values_change_only_their_occurrences(text, secrets):
    known = KnownSecrets.of(secrets)
    out = known.mask(text)
    if not any(s in text for s in known.values):
        assert out == text
    assert not any(s in out for s in known.values if s not in REDACTED)


def test_the_issue_shapes():
    """The cases seen on real runs (issue 12), one by one."""
    bullets = "- **notes**: {'owner_password': 'hunter2-x1', 'public': 'fine', 'deeper': [{'api_key': 'sk-deep-01'}]}"
    assert "hunter2-x1" not in redact_text(bullets, SENSITIVE) and "sk-deep-01" not in redact_text(bullets, SENSITIVE)
    assert "'public': 'fine'" in redact_text(bullets, SENSITIVE)
    log = json.dumps({"build_log": "step1 ok\nclient_secret = cs-LINE-0042\nstep2 ok"})
    assert "cs-LINE-0042" not in redact_text(log, SENSITIVE) and "step2 ok" in redact_text(log, SENSITIVE)
    state = {"summary": "the auth header uses tok-PROSE-77 for now", "access_token": "tok-PROSE-77"}
    assert "tok-PROSE-77" not in json.dumps(redact(state, SENSITIVE))


def test_keyless_secrets_are_masked_by_form():
    cases = {
        "answered at postgres://svc:dsn-PASS-0e93@warehouse.internal:5432/facts.": "dsn-PASS-0e93",
        "GET /v1\nAuthorization: Bearer bearer-TOK-52aa\nAccept: json": "bearer-TOK-52aa",
        "curl -H 'X-Upstream: Bearer bearer-TOK-52ab' https://x": "bearer-TOK-52ab",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----": "b3BlbnNzaC1rZXktdjE",
        "aws id AKIAIOSFODNN7EXAMPLE in the log": "AKIAIOSFODNN7EXAMPLE",
        "github ghp_abcdefghijklmnopqrstuvwxyz0123456789 used": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    }
    for text, secret in cases.items():
        out = redact_text(text, SENSITIVE)
        assert secret not in out and REDACTED in out, (text, out)
        assert secret in text_secrets(text, SENSITIVE) or any(secret in s for s in text_secrets(text, SENSITIVE))


def test_short_and_trivial_values_are_not_masked_by_value():
    document = {"password": "abc", "token": "true", "secret": 123456, "api_key": "0.75"}
    assert secrets_in(document, SENSITIVE) == set()
    assert KnownSecrets.of(["abc", "true", "123456"]).mask("abc true 123456") == "abc true 123456"


def test_escaped_forms_are_matched_for_rendered_output():
    known = KnownSecrets.of(['pa"ss<wo>rd&1'], escaped=True)
    for rendered in ["pa&quot;ss&lt;wo&gt;rd&amp;1", 'pa\\"ss<wo>rd&1', "pa%22ss%3Cwo%3Erd%261", 'pa"ss<wo>rd&1']:
        assert known.mask(f"<td>{rendered}</td>") == f"<td>{REDACTED}</td>"
