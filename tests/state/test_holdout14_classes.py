"""Round 15's detector classes (HOLDOUT14 spent), both ways, in shapes of their own (none copied from the corpus):
more ways to say "the password is" (`passcode`, Finnish's possessive `salasanasi on`, French's spoken `c'est`, Polish's
`to`, Japanese chat's `パスは`, a verb of changing then `na`, a long clause before the label's colon, a question answered
on the next line), command lines and configs (a flag in an argument array, a setter's argument, `cat` of several files
or of a passphrase's file, an SQL dump's rows under a credential column, a block of tokens, PagerDuty's routing key),
formats (Supabase's `sbp_`, Oracle's JDBC `user/password@`, dash-joined hex that is no UUID, an ellipsis inside a long
key); and look-alikes never learnt (English's `to`, an AMQP routing key, `cat` of other files, a hash's column, a
getter, references, a key naming a property of the credential, public keys written a member a line or cut at a `/`, a
request's signature header, a form body's ids, an LLM API's ids, a DSN's public key, a table's digest column, a Windows
path, a chat's answer of words). Each found class is read the same alone and inside an event (a shell tool call's
command, a log's message).
"""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships (the new words are part of the classes under test).
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # More ways to say "the password is".
    "passcode": ("Support: your temporary passcode is ZKTR7WQM, it expires in ten minutes.\n", ("ZKTR7WQM",)),
    "Finnish salasanasi on": ("Tunnus: liisa.k, salasanasi on Vt5rPq2Lwz9\n", ("Vt5rPq2Lwz9",)),
    "French c'est": (
        "Salut! Le code du portail c'est pas ça, le mot de passe c'est Cerisier2291.\n",
        ("Cerisier2291",),
    ),
    "Polish to": ("Hasło do panelu sklepu to Żabka7731x (wielka litera na początku).\n", ("Żabka7731x",)),
    "Japanese パスは": (
        "お疲れさまです。ステージングのユーザーは ops でパスは Hq4vRt8Zmw2 です。\n",
        ("Hq4vRt8Zmw2",),
    ),
    "Czech změnil na": (
        "Heslo k routeru v kanceláři jsem změnil na Qm7-Rtx4Lvp, dej vědět.\n",
        ("Qm7-Rtx4Lvp",),
    ),
    "a long clause before the colon": (
        "Te paso la contraseña de la cuenta compartida para que puedas entrar mientras estoy de vacaciones: Pedernal4471\n",
        ("Pedernal4471",),
    ),
    "a question answered on the next line": (
        "Marta: what was the password for the shared drive again?\nLuis: Copperfield92 (capital C)\n",
        ("Copperfield92",),
    ),
    # Command lines and configs.
    "a flag in an argument array": (
        '"command": "uvx",\n"args": ["mcp-server-x", "--api-key",\n  "Glasshouse2026"]\n',
        ("Glasshouse2026",),
    ),
    "a setter's argument": (
        'Client client = new Client();\nclient.setPassword("Tq9-wLz4mVn");\n',
        ("Tq9-wLz4mVn",),
    ),
    "cat of several files": (
        "$ cat /run/agent/app-id /run/agent/secret-id\nb71c0e44-2a9f-4d6b-9c3e-5f08a1d7e2c6\n"
        "c93d1f55-3baf-4e7c-8d4f-6a19b2e8f3d7\n$ \n",
        ("c93d1f55-3baf-4e7c-8d4f-6a19b2e8f3d7",),
    ),
    "cat of a passphrase's file": (
        "$ cat ~/.backup_pass\nmarble-heron-saffron-quiver\n$ restic backup ~/docs\n",
        ("marble-heron-saffron-quiver",),
    ),
    "an SQL dump's rows": (
        "INSERT INTO `members` (`id`, `nick`, `passwd`, `mail`) VALUES (1,'ana','Harbor-5521','a@example.org'),"
        "(2,'bo','Lindenblatt77','b@example.org');\n",
        ("Harbor-5521", "Lindenblatt77"),
    ),
    "a block of tokens": (
        'acl {\n  enabled = true\n  tokens {\n    initial_management = "4a7e2c91-0b3d-4f58-a6c2-9e1d7b3f5a08"\n  }\n}\n',
        ("4a7e2c91-0b3d-4f58-a6c2-9e1d7b3f5a08",),
    ),
    "PagerDuty's routing key": (
        "receivers:\n- name: oncall\n  pagerduty_configs:\n  - routing_key: 52e8109374600bbd4ac1e58293740061\n",
        ("52e8109374600bbd4ac1e58293740061",),
    ),
    # Formats.
    "Supabase sbp_": (
        "supabase login --token sbp_0c4f9e2a7b1d8e6f3a5c0b9d2e7f4a1c6b8d3e05\n",
        ("sbp_0c4f9e2a7b1d8e6f3a5c0b9d2e7f4a1c6b8d3e05",),
    ),
    "Oracle's JDBC user/password@": (
        'spring.datasource.url="jdbc:oracle:thin:ledger/Kw7TZ3QP9XR@//db7.example.internal:1521/LEDGER"\n',
        ("Kw7TZ3QP9XR",),
    ),
    "dash-joined hex that is no UUID": (
        "const mg = client({ user: 'api', key: '40081576293a4b6994182189d5431e70-176000ed-ef4e5350' });\n",
        ("40081576293a4b6994182189d5431e70-176000ed-ef4e5350",),
    ),
    "an ellipsis inside a long key": (
        'cfg.setApiKey("AQEwqP-7Lm2z-Kx9vRt4NqB8sWd3Hy6Jc1Fg...5Tb0Zn8Mq2Lw4Rk7Vx9Yp3Ht6Jd1Sg5Fc8Nb2Qm0Zw");\n',
        ("AQEwqP-7Lm2z-Kx9vRt4NqB8sWd3Hy6Jc1Fg...5Tb0Zn8Mq2Lw4Rk7Vx9Yp3Ht6Jd1Sg5Fc8Nb2Qm0Zw",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_fifteen_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        (
            "2026-11-04 ci: linked the project with sbp_40e81f0937460bbd4ac1e58293740061a5c0b9d2\n",
            "sbp_40e81f0937460bbd4ac1e58293740061a5c0b9d2",
        ),
        ("url=jdbc:oracle:thin:ledger/Kw7TZ3QP9XR@db7:1521:LEDGER\n", "Kw7TZ3QP9XR"),
    ],
    ids=["Supabase sbp_", "Oracle's JDBC user/password@"],
)
def test_round_fifteen_formats_are_announced_without_the_fail_closed_pass(text, value):
    assert value in detect_secrets(text, SENSITIVE, fail_closed=False)


def test_a_flag_in_a_json_argument_array_is_learnt_with_the_next_element():
    text = '{"mcpServers": {"db": {"command": "npx", "args": ["-y", "db-mcp", "--password", "Rq8-vTz3Lmx"]}}}'
    assert "Rq8-vTz3Lmx" in detect_secrets(text, SENSITIVE, fail_closed=True)


NOT_FOUND = {
    "English's to is no copula": "Send the password to the new hire by the vault, never by mail.\n",
    "an AMQP routing key": 'channel.basic_publish(exchange="events", routing_key="invoices.settled.v2", body=payload)\n',
    "cat of other files": "$ cat VERSION BUILD\nrelease-2026-11\nbuild-4471-final\n",
    "a hash's column": "INSERT INTO users (id, login, password_hash) VALUES (1, 'ana', 'pbkdf2_sha256$600000$Xk2$Tb8wq');\n",
    "a getter's argument": 'String pw = vault.getPassword("billing-db-primary");\n',
    "a vendor's prefix before an ellipsis": "export STRIPE_SECRET_KEY=sk_live_...\n",
    "LiteLLM's and Grafana's references": (
        "api_key: os.environ/OPENROUTER_API_KEY\n[security]\nadmin_password = $__file{/run/secrets/gf_admin}\n"
        "secret_key = $__env{GF_SIGNING_SECRET}\n"
    ),
    "a comma after getenv's call": '{"api_key": os.getenv("GROQ_API_KEY"), "api_type": "openai_compat"}\n',
    "a key naming a property of the credential": (
        "password_encryption = md5-legacy-mode\npassword_requirements = letters_digits_symbols\n"
        "[credential]\n    credentialStore = gpgkeyring\nauth:\n  existingSecret: billing-pg-auth\n"
    ),
    "a JWK written a member a line": (
        '{\n  "keys": [\n    {\n      "kty": "OKP",\n      "crv": "Ed25519",\n      "kid": "k-2026-11",\n'
        '      "x": "Zq3Wv8Lm2Kx9Rt4Nb7Yc1Hd6Fs0Jg5Tp8Qw2Ez4Ua"\n    }\n  ]\n}\n'
    ),
    "an SSH public key cut at a slash": (
        "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBK7q/Zm3Wv9Lx2Rt8Nq4Kb6Yc1Hd0Fs5Jg"
        "/Tp7Qw2Ez4Ua9Vb3Xc8Zn6Mq1Lw5Rk0Vx7Yp2Ht4Jd9Sg1Fc3Nb8Qm5Zw2= deploy@ci\n"
    ),
    "a request's signature header": (
        "X-Hub-Signature-256: sha256=9f2c4e6a8b0d1f3e5c7a9b2d4f6e8a0c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d2f\n"
        "X-Shop-Signature: Tq8vLz3Wm9Kx2Rn7Yb4Hc1Fd6Js0=\nPaddle-Signature: ts=1781234567;h1=4e6a8b0d1f3e5c7a9b2d4f6e8a0c2e4b\n"
    ),
    "a form body's ids": (
        "From=%2B15550100&CallSid=CA0b4e8c2d6f1a3e5b7d9c0f2a4e6b8d1c&AccountSid=AC7d1f3b5e9a2c4e6f8b0d1a3c5e7f9b2d&CallStatus=ringing\n"
    ),
    "an LLM API's response id": '{"id": "chatcmpl-Zq8vLm2Kx9Rt4Nb7Yc1Hd6Fs", "object": "chat.completion", "model": "gpt-4.1"}\n',
    "a DSN's public key": 'Sentry.init({ dsn: "https://5e8a1c3f7b9d2e4a6c8f0b1d3e5a7c9f@o918273.ingest.us.sentry.io/4507112233445566" });\n',
    "a table's digest column": (
        "NAME                 DIGEST              CREATED AT\nOPENAI_API_KEY       9c1e5a7f3b2d8e04    2026-10-02T08:00:00Z\n"
        "REDIS_PASSWORD       4f7b2e9a1c6d3e80    2026-10-02T08:00:00Z\n"
    ),
    "a Windows path after パス": "ログの保存先のパスは D:\\Logs\\Agent2026 です\n",
    "a chat's answer of words": "Marta: what was the password for the shared drive again?\nLuis: no idea, ask IT\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_fifteen_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()
