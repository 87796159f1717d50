"""The secret detector and the free-text masks on the corpus (tests/corpus/secrets).

For every credential word × every shape of the TUNE generator no secret survives `redact_text` and the
detector finds it; the same shapes with harmless names are left unchanged. The HOLDOUT part (shapes and value
forms never tuned on) is held to the recall it reached when it was first measured.
"""

from __future__ import annotations

import random

import pytest
from django.conf import settings
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.redaction import REDACTED, KnownSecrets, is_sensitive, redact, redact_text, sensitive_set
from tests.corpus.secrets.holdout import generate as holdout
from tests.corpus.secrets.tune import generate as tune

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
SHAPES = {shape: (template, spelling) for shape, template, spelling in tune.SHAPES}
values = st.randoms(use_true_random=False).map(tune.random_value)


@pytest.mark.parametrize(
    ("key", "sensitive"),
    [
        *[(name, True) for name in (
            "password", "PGPASSWORD", "dbPassword", "db_pass", "DB_PASS", "pass", "pwd", "pw", "passwd", "passphrase",
            "pin", "otp", "secret", "client_secret", "clientSecret", "SECRET_KEY", "aws_secret_access_key", "access_key",
            "api_key", "X-Api-Key", "apikey", "token", "githubToken", "refresh_token", "auth", "X-Auth", "basic_auth",
            "Authorization", "bearer", "cookie", "Set-Cookie", "session", "user_session", "sessionid", "session_key",
            "dsn", "SENTRY_DSN", "conn_str", "connection_string", "private_key", "signing_key", "webhook_secret",
            "credential", "credentials", "master_key", "encryption_key",
        )],  # fmt: skip
        *[(name, False) for name in (
            "max_tokens", "keyboard", "passed", "tokenizer", "author", "authored_by", "passenger", "session_count",
            "sessions", "monkey", "keys", "passes", "compass", "bypass_cache", "secretary", "pinned", "spin",
            "tokens_used", "cookie_policy_url", "key_count", "pass_rate", "total_tokens", "surpass", "pinterest",
            "otp_enabled", "dsn_count", "passport", "pwdump_version",
        )],  # fmt: skip
    ],
)
def test_the_default_vocabulary_names_credentials_and_not_their_look_alikes(key: str, sensitive: bool) -> None:
    assert is_sensitive(key, SENSITIVE) is sensitive


@given(word=st.sampled_from(tune.CREDENTIAL_WORDS), shape=st.sampled_from(sorted(SHAPES)), value=values)
@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_secret_survives_any_shape_under_any_credential_word(word: str, shape: str, value: str) -> None:
    template, spelling = SHAPES[shape]
    text = tune.render(template, spelling, word, value)
    assert value in detect_secrets(text, SENSITIVE), text
    masked = redact_text(text, SENSITIVE)
    assert value not in masked and REDACTED in masked, masked
    # Learnt, the value is masked wherever it is quoted again, in JSON too.
    known = KnownSecrets.of(detect_secrets(text, SENSITIVE))
    assert value not in redact_text(f"as said before: {value}.", SENSITIVE, known)
    assert value not in str(redact({"note": f"use {value}"}, SENSITIVE, known))


@given(word=st.sampled_from(tune.HARMLESS_WORDS), shape=st.sampled_from(sorted(set(SHAPES) - tune.CREDENTIAL_CARRIERS)),
       value=st.sampled_from(["billing", "42", "true", "eu-west-1", "Ada Lovelace", "cl100k_base"]))  # fmt: skip
@hsettings(max_examples=300, deadline=None)
def test_a_shape_without_a_secret_is_unchanged(word: str, shape: str, value: str) -> None:
    template, spelling = SHAPES[shape]
    text = tune.render(template, spelling, word, value)
    assert redact_text(text, SENSITIVE) == text
    assert detect_secrets(text, SENSITIVE) == set()


def test_every_tune_document_is_masked_and_every_clean_one_left_alone() -> None:
    for doc in tune.documents():
        masked = redact_text(doc.text, SENSITIVE)
        if doc.secrets:
            assert not [s for s in doc.secrets if s in masked], doc
        else:
            assert masked == doc.text and not detect_secrets(doc.text, SENSITIVE), doc


@pytest.mark.parametrize(
    "text",
    [
        "$ mysql -uroot -pS3cr3tPass9 shop",
        "$ mysqldump --user=app --password S3cr3tPass9 shop > x.sql",
        "curl -u deploy:S3cr3tPass9 https://api.example.org",
        "$ redis-cli -h cache -a S3cr3tPass9 PING",
        "sshpass -p S3cr3tPass9 ssh ops@host",
        "openssl pkcs12 -export -out b.p12 -passout pass:S3cr3tPass9",
        "::add-mask::S3cr3tPass9",
        "Cookie: theme=dark; sid=S3cr3tPass9",
    ],
)
def test_command_lines_and_cookies_give_their_credentials_away_by_position(text: str) -> None:
    assert "S3cr3tPass9" in detect_secrets(text, SENSITIVE)
    assert "S3cr3tPass9" not in redact_text(text, SENSITIVE)


@pytest.mark.parametrize(
    "text",
    [
        "The password policy requires twelve characters; rotate the token every 90 days.",
        "$ psql -h db.internal -p 5432 -U app -d orders",
        "Set the session to expire; auth is handled upstream.",
        "PWD=/home/ada/projects\nOLDPWD=/home/ada",
        "--token-file ./secrets/token.txt",
    ],
)
def test_prose_and_paths_near_credential_words_are_not_taken_for_secrets(text: str) -> None:
    assert detect_secrets(text, SENSITIVE) == set()


def test_the_holdout_recall_does_not_fall_below_its_first_measure() -> None:
    docs = holdout.documents(holdout.SEED) + holdout.documents(random.Random(7).randint(0, 10**6))
    planted = [(doc, secret) for doc in docs for secret in doc.secrets]
    visible = [doc.shape for doc, secret in planted if secret in redact_text(doc.text, SENSITIVE, KnownSecrets.of(detect_secrets(doc.text, SENSITIVE)))]
    clean_changed = [doc.shape for doc in docs if not doc.secrets and redact_text(doc.text, SENSITIVE) != doc.text]
    assert len(visible) <= HOLDOUT_MISSED_AT_MOST, visible
    assert clean_changed == []


# Measured once, untuned (docs/redaction.md): the holdout planted values the detector misses, both seeds.
HOLDOUT_MISSED_AT_MOST = 4
