"""Self-identifying vendor formats (state/token_formats.py) and credential columns of delimited tables
(state/freetext._column_spans): found where they stand, labelled or not; their look-alikes stay readable."""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.redaction import KnownSecrets, may_hold_secrets, redact_text, sensitive_set
from state.token_formats import TOKEN_FORMATS

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
AGE = "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGP"


def _found_and_masked(text: str, value: str) -> None:
    assert may_hold_secrets(text, SENSITIVE), "the gate must open for it"
    found = detect_secrets(text, SENSITIVE, fail_closed=False)
    assert value in found, found
    assert value not in redact_text(text, SENSITIVE, KnownSecrets.of(found))


@pytest.mark.parametrize(
    "value",
    [
        AGE,
        "glpat-Xk3vQ9rT2mW8pL5nB7cY",
        "npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm1234567890",
        "dop_v1_" + "0123456789abcdef" * 4,
        "hvs.CAESIJ8vQ2xLm4Zr7TbW1cKd9pQe",
        "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBdzNxR2hTbUJ2ZzlLcE1uWlp0",
    ],
)
def test_a_vendor_format_is_found_unlabelled_even_under_a_public_label(value):
    _found_and_masked(f"# public key: age1qqqqqq\n{value}\n", value)
    _found_and_masked(f"see {value} for details", value)


@pytest.mark.parametrize(
    "text",
    [
        "npm_config_cache=/tmp/npm and hf_model_name=bert-base",
        "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJJakFOQmdrcWhraUc5dzBCQVFFRkFBT0NBUThBTUlJQkNnS0NBUUVB",  # a certificate
        "glpat- is the prefix of GitLab tokens; dapi tokens come from Databricks",
    ],
)
def test_look_alikes_of_vendor_formats_stay_readable(text):
    assert detect_secrets(text, SENSITIVE, fail_closed=False) == set()


def test_every_format_starts_with_its_sign():
    """The gate looks for the signs only: a body's literal start must begin its sign (no token of a form without
    its sign in the text)."""
    import re

    for sign, body in TOKEN_FORMATS:
        literal = re.match(r"[A-Za-z0-9_\-]*", body).group()
        assert literal and (sign.startswith(literal) or literal.startswith(sign)), (sign, body)
        assert re.fullmatch(body, sign) is None, sign  # the sign alone is not a token


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("name,url,username,password,note\nshop,http://127.0.0.1/login,admin,Kq8#vLm2!xR9,\nci,http://127.0.0.1:8080,bot,\"Zt5-pW3q=Ny7\",shared\n",
         ["Kq8#vLm2!xR9", "Zt5-pW3q=Ny7"]),
        ("# hostname:port:database:username:password\n127.0.0.1:5432:orders:rw:mosaic_obsidian_kestrel_5669\n*:6432:*:rep:pa:ss:wo:rd99\n",
         ["mosaic_obsidian_kestrel_5669", "pa:ss:wo:rd99"]),
        ("user\tapi_token\tscope\nalice\tqwertyuiop123456\tread\n", ["qwertyuiop123456"]),
    ],
)
def test_cells_under_a_credential_column_are_found(text, values):
    for value in values:
        _found_and_masked(text, value)


@pytest.mark.parametrize(
    "text",
    [
        "name,url,username,last_login\nshop,http://127.0.0.1,admin,2026-01-02\n",  # not a credential column
        "host,port,database\n127.0.0.1,5432,orders\n",
        "passwords,were,rotated,yesterday,by,ops\nand,this,is,just,a,sentence\n",  # the header is prose
    ],
)
def test_tables_without_a_credential_column_stay_readable(text):
    found = detect_secrets(text, SENSITIVE, fail_closed=False)
    assert redact_text(text, SENSITIVE, KnownSecrets.of(found)) == text, found


@pytest.mark.parametrize("value", ["^3.2.2", "~1.4", ">=2.0.1", "v1.2.3-rc.1", "9.0.2"])
def test_a_version_is_never_learnt(value):
    assert harmless_value(value)
    assert value not in detect_secrets(f'{{"jsonwebtoken": "{value}"}}', SENSITIVE)
