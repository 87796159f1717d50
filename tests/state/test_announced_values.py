"""A credential word announces its value; a name/value pair names it; the cheap gate never hides a finding.

The rules of docs/redaction.md "Round 5", both directions: what they must find, and the look-alikes they must
leave readable (a cache key, a public key, `key: user.name`, an identifier, prose about keys). The gate before
the detector (`may_hold_secrets`) is a necessary condition: a property test builds texts from names, joins,
values and escapes and checks that whenever the detector or the masks find something, the gate said yes.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.freetext import looks_random
from state.redaction import REDACTED, may_hold_secrets, redact, redact_text, secrets_in, sensitive_set

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
RANDOM = "aCnmxCiSS8QZArhh2HPiWA8Wo62at9ft"


@pytest.mark.parametrize(
    "text",
    [
        f"Your new personal access token (shown once):\n\n    {RANDOM}\n\nStore it somewhere safe.",
        f"Run ./deploy.sh\n  env:\n    DEPLOY_KEY: {RANDOM}\n    TARGET: prod",
        f"[10:43] marco: here's the key for staging: {RANDOM} (read only)",
        f"export LICENSE_KEY={RANDOM}",
        f"https://files.example.org/export.csv?se=2026-03-05&sig={RANDOM}",
        f'{{ "key": "merchantSecret", "value": "{RANDOM}", "type": "secret" }}',
        f"env:\n  - name: DB_PASSWORD\n    value: {RANDOM}\n  - name: REGION\n    value: eu-west-1",
    ],
)
def test_an_announced_or_paired_value_is_found_and_masked(text: str) -> None:
    assert RANDOM in detect_secrets(text, SENSITIVE), text
    assert RANDOM not in redact_text(text, SENSITIVE)
    assert may_hold_secrets(text, SENSITIVE)


@pytest.mark.parametrize(
    "text",
    [
        "cache_key: user:42:profile",
        "key: user.name",
        "The key insight is that workers_3-step-12 finished early.",
        "public key: ALNA4DqzrT7TINOf/NWAIsTTLB8SGtn4Grg1aFnAebg=",
        "publicKey = MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE",
        "Read the configuration file, list every key under [database], and report which ones the code never reads.",
        "sort key: handler_1(request) then timeout=30",
        "gen_ai.usage.input_tokens: 1800",
    ],
)
def test_look_alikes_stay_readable(text: str) -> None:
    assert detect_secrets(text, SENSITIVE) == set(), text
    assert redact_text(text, SENSITIVE) == text


def test_a_label_with_a_number_beside_it_is_not_a_pair_but_a_delta_value_always_is() -> None:
    chart = {"series": [{"label": "Token usage", "value": 1234}]}
    assert redact(chart, SENSITIVE) == chart
    delta = {"path": "$.vault.api_key", "value": {"nested": "x"}}
    assert redact(delta, SENSITIVE)["value"] == REDACTED
    pair = {"Name": "DB_PASSWORD", "Value": RANDOM}
    assert redact(pair, SENSITIVE)["Value"] == REDACTED and RANDOM in secrets_in(pair, SENSITIVE)


@pytest.mark.parametrize(
    ("value", "random"),
    [(RANDOM, True), ("3f2a9c1e-7b4d-4e21-a9f3-0c1d2e3f4a5b", True), ("Zk8wP2mQ7xR4nT6vB1cY", True),
     ("worker_3-step-12", False), ("user:42:profile", False), ("orbit-walnut-cinder-42", False),
     ("gen_ai.usage.input_tokens", False), ("Hello World 2024 now!", False), ("short1A", False)],
)  # fmt: skip
def test_looks_random_in_both_directions(value: str, random: bool) -> None:
    assert looks_random(value) is random


NAMES = ["password", "token", "api_key", "apiKey", "DB_PASS", "key", "DEPLOY_KEY", "sig", "tokens", "passes", "monkey",
         "keyboard", "bypass", "spin", "PGPASSWORD", "public key", "cookie", "Set-Cookie"]  # fmt: skip
JOINS = [": ", "=", " ", " is ", " (shown once):\n\n  ", " for staging: ", "\n", '": "', " | ", "\t"]
VALUES = st.sampled_from([RANDOM, "hunter2Z!", "policy", "3f2a9c1e-7b4d-4e21-a9f3-0c1d2e3f4a5b", "orbit-walnut-42"])
FILLER = st.sampled_from(["", "Note. ", "x" * 30 + " ", "línea\n", "—\t", '{"a": 1} '])


@given(
    parts=st.lists(st.tuples(FILLER, st.sampled_from(NAMES), st.sampled_from(JOINS), VALUES), min_size=1, max_size=3),
    escape=st.sampled_from(["plain", "json", "json-ascii"]),
)
@hsettings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_gate_says_yes_wherever_the_detector_or_the_masks_find_something(parts, escape) -> None:
    text = "".join(f"{filler}{name}{join}{value}" for filler, name, join, value in parts)
    if escape != "plain":
        text = json.dumps({"msg": text}, ensure_ascii=escape == "json-ascii")
    if not may_hold_secrets(text, SENSITIVE):
        assert detect_secrets(text, SENSITIVE) == set(), text
        assert redact_text(text, SENSITIVE) == text, text
