"""Round 17's detector classes (HOLDOUT16 spent), both ways, in shapes of their own (none copied from the corpus):
more ways to say it in prose (Uzbek's and Haitian Creole's words, the name as `it` in the next clause, a quoted word
after a label's colon with the sentence going on, a label's element closed and the value in the next), labels and
command lines (a spaced `Secret ID`, Codecov's `-t`, MinIO's `mc alias set`, an askpass script's echo, a stream link's
token, a cookie jar's lines); and look-alikes never learnt (a value shown masked, a redaction's mark, a template's
part, a dashboard's button, a reference to a Secret's key, Redis' hashed ACL password, an algorithm's name, a command
line, a comment after an empty value, a store's path, ids and references, a mail's signature headers, where a token
is fetched from, a table column saying where a secret is kept, cookies of words, a stream's name, a prompt). Each
found class is read the same alone and inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships.
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # Prose.
    "Uzbek's possessive, then a colon": ("Wi-Fi paroli mana bu: Qr7.tLx2.wPn\n", ("Qr7.tLx2.wPn",)),
    "Haitian Creole's word and copula": ("Bonjou Jan, modpas mwen se Kw_8Tz.Rvmo pou imel la.\n", ("Kw_8Tz.Rvmo",)),
    "the name as `it` in the next clause": (
        "The kiosk account had a stale password. I changed it to Ambermoss4417 for the pilot.\n",
        ("Ambermoss4417",),
    ),
    "a quoted word after a label's colon, the sentence going on": (
        "09:41  Ravi posts the staging db password in the bridge call: 'Vn4q.Lz-8Ksm' and drops off\n",
        ("Vn4q.Lz-8Ksm",),
    ),
    "a label's element closed, the value in the next": (
        "<tr><td>Ihr Zugang f\u00fcr das Lager-Portal, Passwort:</td>\n<td class=\"mono\">Wq8pTz4nLm2v</td></tr>\n",
        ("Wq8pTz4nLm2v",),
    ),
    # Labels and command lines.
    "a spaced Secret ID": (
        "$ consul acl token create -policy-name ops\nAccessorID:       2f1c7a90-4b3e-4d5f-9a1b-0c2d3e4f5a6b\n"
        "Secret ID    = 7d3e9b21-5c4a-4f8e-b6d2-1a0c9e8f7b6a\nDescription:      ops\n",
        ("7d3e9b21-5c4a-4f8e-b6d2-1a0c9e8f7b6a",),
    ),
    "Codecov's -t": ("  script:\n    - ./codecov -f coverage.xml -t 1b7e4c2a-9d3f-4e8a-b5c6-7f0a1d2e3c4b\n", ("1b7e4c2a-9d3f-4e8a-b5c6-7f0a1d2e3c4b",)),
    "MinIO's mc alias set": (
        "$ mc alias set backup http://10.0.4.2:9000 QWERTY12MINIOKEY77 'Zx9vLq2Wm8Rt4Nb7Yc1Hd6Fs0Jg5Tp8Q' --api s3v4\n",
        ("QWERTY12MINIOKEY77", "Zx9vLq2Wm8Rt4Nb7Yc1Hd6Fs0Jg5Tp8Q"),
    ),
    "an askpass script's echo": (
        "# git-askpass.sh, used as GIT_ASKPASS for the mirror job\n#!/bin/sh\nprintf '%s\\n' 'lantern-orchid-basalt-38'\n",
        ("lantern-orchid-basalt-38",),
    ),
    # A token of syllables the fail-closed pass reads as words.
    "a stream link's token": (
        "ffmpeg -rtsp_transport tcp -i 'rtsps://10.1.1.9:7441/KelVorn8TasPilQu?enableSrtp' -c copy porch.mkv\n",
        ("KelVorn8TasPilQu",),
    ),
    "a cookie jar's line": (
        # A cookie named as an id (the fail-closed pass reads what an id's name labels as an identifier).
        "$ curl -s -c jar.txt -d @login.json https://grafana.example.net/login && cat jar.txt\n"
        ".grafana.example.net\tTRUE\t/\tTRUE\t1893456000\tsso_session_id\tb3c9e1f07a2d4e6b8c0f1a3d5e7b9c2f\n",
        ("b3c9e1f07a2d4e6b8c0f1a3d5e7b9c2f",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_seventeen_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "a value shown masked by bullets, a dashboard's button": (
        "Restricted key    rk_live_••••••••••••••••••••Q7zA   [Reveal]\nSigning secret: Reveal\n"
    ),
    "a redaction's mark after a real-looking start": 'APP_SECRET = "prod-key-REDACTED-BY-CI"\n',
    "a template's part in angle brackets, a JWT's parts named": (
        "A token reads header.payload.signature, e.g. eyJhbGciOiJFUzI1NiJ9.<claims>.<signature> in the docs.\n"
    ),
    "a reference to a Secret's key": "Environment:\n  SMTP_PASSWORD:  <set to the key 'smtp-pass' in secret 'mailer'>  Optional: false\n",
    "Redis' hashed ACL password": (
        '1) "user ingest on #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 ~queue:* +@list"\n'
    ),
    "an algorithm's name, a piped decoder": (
        "user,password_scheme\nana,scrypt\nbo,pbkdf2-sha256\n"
        'export DB_PASSWORD=$(kubectl get secret db -o jsonpath="{.data.password}" | base64 -d)\n'
    ),
    "a command line": '  88  read -s -p "Registry password: " REG_PASS && export REG_PASS\n  89  helm registry login ghcr.io\n',
    "a comment after an empty value": "SENTRY_AUTH_TOKEN=        # create one at https://sentry.example.org/settings/tokens/\n",
    "a store's path of two words": "$ vault kv get -mount=secret payments/gateway\n",
    "ids and references": (
        '{"eventCode": "REFUND", "pspReference": "K8WQ2ZL7N4MVR6TC", "additionalData": {"hmacSignature": "Xr7vQm2Lz8Tn4Wp1Ks9Yb3Hc6Fd0Jg5Ea+/Rt2Nu8Vw="}}\n'
        "Endpoint  we_1PzXcVbNmLkJhGfD\n"
        '"dev_eui": "A84041C3B1875F2E", "app_eui": "0000000000000001"\n'
        "UID:040000008200E00074C5B7101A82E00800000000c3a9f1e2b4d5c6a7\n"
        "Vault:       Shared (q7mzt4xkbw2hvl9rnc3dy6pfea)\n"
    ),
    "a mail's signature headers": (
        "ARC-Message-Signature: i=1; a=rsa-sha256; c=relaxed/relaxed; d=example.net; s=arc-2026;\n"
        "\tbh=Lq8vTz3Wm9Kx2Rn7Yb4Hc1Fd6Js0Pq5Vw8Ez2Ua7Lm4=;\n"
        "\tb=Zx8Mq1Lw5Rk0Vx7Yp2Ht4Jd9Sg1Fc3Nb8Qm5Zw2Ab7Kx4Rt9Lm2Wq8Ez6Ty3Ui0Op5As1Df7Gh2Jk4Lz9Xc6Vb3Nm8Qw==\n"
    ),
    "where a token is fetched from": "oauth.token.endpoint.url=https://idp.example.org/realms/ops/protocol/openid-connect/token\n",
    "a table column saying where a secret is kept": (
        "| Service | Secret location | Owner |\n|---|---|---|\n| Billing DB | Bitwarden \"Billing Prod\" | Data |\n"
    ),
    "a password manager's name before a quoted item": 'The vendor login is in 1Password "Vendor Portal Admin".\n',
    "cookies of words": (
        "set-cookie: consent=ads%2Cstats; Path=/; SameSite=Lax\nset-cookie: locale=pt-BR; Path=/\n"
        "set-cookie: sid=deleted; expires=Thu, 01 Jan 1970 00:00:00 GMT\n"
        ".shop.example\tTRUE\t/\tFALSE\t1893456000\tcolour_scheme\tsolarized-dark\n"
    ),
    "a stream's name": "cameras:\n  yard:\n    ffmpeg:\n      inputs:\n        - path: rtsp://10.1.1.12:554/cam/realmonitor?channel=1\n",
    "an askpass script echoing a variable": '# SSH_ASKPASS helper\n#!/bin/sh\necho "$DEPLOY_KEY_PASSPHRASE"\n',
    "a quoted phrase after a label's colon": 'The password rule in the wiki: "at least twelve characters" so pick a long one\n',
    "`it` set to a setting": "The router password was weak; I reset it to factory defaults.\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_seventeen_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


def test_a_cookie_of_a_session_in_a_set_cookie_header_is_still_learnt():
    """A cookie of words is a setting; a session's value of random characters is still learnt, pair by pair."""
    text = "set-cookie: sid=Qm2vLx8Rt4Nb7Yc1Hd6Fs0Jg; Path=/; HttpOnly; Secure\n"
    assert "Qm2vLx8Rt4Nb7Yc1Hd6Fs0Jg" in detect_secrets(text, SENSITIVE, fail_closed=True)


def test_a_password_of_words_and_a_digit_after_a_command_word_is_still_learnt():
    """A command line is words with `&&`, a pipe or a long option; a passphrase is none of them."""
    text = "password: maple river stone 42\n"
    assert "maple river stone 42" in detect_secrets(text, SENSITIVE, fail_closed=True)
