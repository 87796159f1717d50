"""The word for password in other languages labels a credential as `password` does (AWP_SENSITIVE_FIELDS), with
the joins those languages use (`ist`, `lautet`, `es`, `är`, a dash; `：`, `是`, `は`, `는` without spaces)."""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import KnownSecrets, may_hold_secrets, redact_text, sensitive_set

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
VALUE = "Xy7!kq9Lm2"


@pytest.mark.parametrize(
    "text",
    [
        f"Passwort: {VALUE}", f"Das Kennwort lautet {VALUE}", f"la contraseña es {VALUE}", f"mot de passe : {VALUE}",
        f"senha={VALUE}", f"wachtwoord is {VALUE}", f"hasło: {VALUE}", f"lösenord är {VALUE}", f"пароль — {VALUE}",
        f"密码：{VALUE}", f"密码是{VALUE}", f"パスワードは{VALUE}", f"비밀번호는 {VALUE}", f'{{"passwort": "{VALUE}"}}',
    ],
)  # fmt: skip
def test_a_value_labelled_in_another_language_is_found_and_masked(text):
    assert may_hold_secrets(text, SENSITIVE)
    found = detect_secrets(text, SENSITIVE, fail_closed=False)
    assert VALUE in found, found
    assert VALUE not in redact_text(text, SENSITIVE, KnownSecrets.of(found))


@pytest.mark.parametrize(
    "text",
    [
        "Das Passwort wurde geändert.", "Passwörter werden rotiert", "la contraseña es obligatoria",
        "auth on node-12 ok", "the session on 2024-01-01 failed", "pin är 1234", "the token is invalid",
    ],
)  # fmt: skip
def test_prose_about_passwords_in_any_language_stays_readable(text):
    found = detect_secrets(text, SENSITIVE, fail_closed=False)
    assert redact_text(text, SENSITIVE, KnownSecrets.of(found)) == text, found
