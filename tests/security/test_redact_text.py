"""redact_text: free text that names a sensitive field (daily logs written by the runtime) loses the value."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from state.redaction import REDACTED, redact_text, sensitive_set

SENSITIVE = sensitive_set(["api_key", "password", "secret", "token"])
secret_values = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126, blacklist_characters=",}"), min_size=6, max_size=40)


@given(value=secret_values, key=st.sampled_from(["api_key", "apiKey", "API-KEY", "db_password", "client_secret", "token"]),
       shape=st.sampled_from(["- **{k}**: {v}", "{k}: {v}", '"{k}": "{v}"', "{k}={v}", "  * _{k}_ : {v}"]))  # fmt: skip
def test_a_sensitive_value_never_survives(value, key, shape):
    value = f"Z9{value}"  # a marker prefix: the value cannot occur in the surrounding text by chance
    text = "Researched 42.\n" + shape.format(k=key, v=value) + "\nDone."
    out = redact_text(text, SENSITIVE)
    assert value not in out and REDACTED in out and out.startswith("Researched 42.\n") and out.endswith("\nDone.")


@given(text=st.text(alphabet=st.characters(blacklist_characters=":="), max_size=200))
def test_text_without_fields_is_unchanged(text):
    assert redact_text(text, SENSITIVE) == text


def test_ordinary_fields_are_left_alone():
    text = "- **summary**: 42 is even\n- **max_tokens**: 512\n- **confidence**: 0.9"
    assert redact_text(text, SENSITIVE) == text
