"""Round 8's detector classes, both ways: credentials in bar tables, lists under a label, dumps, device configs,
mail and file-transfer logins, WIFI: codes, wrapped labels; and what is no credential though a credential word
stands near it (a block of settings under `auth:`, a reference to a secret, a placeholder, a credential's name,
a signature's armor), which must not become a known secret masked everywhere.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.redaction import KnownSecrets, redact_text, sensitive_set
from state.secrets import event_secrets
from state.sensitive import is_maskable

SENSITIVE = sensitive_set(
    "api_key,password,passwd,passphrase,pwd,pass,pw,pin,otp,totp,secret,token,authorization,auth,credential,"
    "credentials,private_key,secret_key,recovery_code,recovery_codes,backup_codes,mot_de_passe".split(",")
)

FOUND = {
    "bar table": (
        "# Shared accounts\n\n| Service | Login | Pass | Owner |\n| --- | --- | --- | --- |\n"
        "| Canva | team@example.org | Qk_7rzLw | @jo |\n| Figma | design@example.org | 4v_M2pXq9 | @li |\n",
        ("Qk_7rzLw", "4v_M2pXq9"),
    ),
    "php var_dump": (
        'array(2) {\n  ["host"]=>\n  string(11) "redis.local"\n  ["password"]=>\n  string(22) "Tundra/ember/kettle/41"\n}\n',
        ("Tundra/ember/kettle/41",),
    ),
    "device config": (
        "username ops privilege 15 password 0 Lm3!qz8Rw\ntacacs server T1\n address ipv4 10.0.0.2\n key 0 pV4nX8tQ2mL7kR9w\n",
        ("Lm3!qz8Rw", "pV4nX8tQ2mL7kR9w"),
    ),
    "xml element with attributes": (
        '<Server>\n  <User>static</User>\n  <Pass encoding="base64">Rk9YLXRyb3QtOTE=</Pass>\n</Server>\n',
        ("Rk9YLXRyb3QtOTE=",),
    ),
    "codes under a label": (
        "If the account locks us out, these are the recovery codes I have left (each works\nonce):\n\n"
        "    3f9a1-c07e2\n    - 81d4b-9e3a0\n\nThe others are crossed off.\n",
        ("3f9a1-c07e2", "81d4b-9e3a0"),
    ),
    "wrapped label": (
        "Votre compte a été créé avec l'identifiant claire.martin et le mot de passe\n"
        "provisoire : saffron-harbor-quartz-318 (à modifier).\n",
        ("saffron-harbor-quartz-318",),
    ),
    "a plural label": (
        "Temporary passwords for the workshop:\n  - Xk9(qz2Lm!\n  - Yq2#Lm8Zw\n",
        ("Xk9(qz2Lm!", "Yq2#Lm8Zw"),
    ),
    "a password with a parenthesis": ("PASSWORD=Vr7(kq2Lmx9\n", ("Vr7(kq2Lmx9",)),
    "imap login": (
        "* OK Dovecot ready.\na1 LOGIN billing@example.org tQ-83kLmzW\na1 OK Logged in\n",
        ("tQ-83kLmzW",),
    ),
    "pop3 pass": ("+OK POP3 ready\nUSER billing\n+OK\nPASS Vr7kq2Lmx9\n+OK logged in\n", ("Vr7kq2Lmx9",)),
    "smtp auth plain": (
        "220 mail ready\nEHLO me\nAUTH PLAIN AGJpbGxpbmcAVnI3a3EyTG14OQ==\n235 ok\n",
        ("AGJpbGxpbmcAVnI3a3EyTG14OQ==",),
    ),
    "wifi code with spaces": (
        "$ zbarimg --raw poster.png\nWIFI:T:WPA;S:Cafe-5G;P:velvet quartz lantern 42;H:false;;\n",
        ("velvet quartz lantern 42",),
    ),
    "json member after an id": (
        '{"description":"search-only key","expires_at":64723363199,"id":31,"value":"hT3kW9qZmB2xLr7NvC4pYs8dJf6gUa5e"}',
        ("hT3kW9qZmB2xLr7NvC4pYs8dJf6gUa5e",),
    ),
    "hex of no digest's length beside a hash": (
        '"bcryptHash": {"ciphertext": "x"},\n"result": {"plaintext": "\\"9c41d0e7a2b84f3c6d15e08a7b9f2c4d3e6a1b5c8d7e0f92\\""}\n',
        ("9c41d0e7a2b84f3c6d15e08a7b9f2c4d3e6a1b5c8d7e0f92",),
    ),
    "totp column": (
        "name,login_uri,login_username,login_password,login_totp\nCloudflare,https://dash.example,ops@example.org,,JBSWY3DPEHPK3PXQ\n",
        ("JBSWY3DPEHPK3PXQ",),
    ),
}


@pytest.mark.parametrize("case", FOUND, ids=list(FOUND))
def test_found_learnt_and_masked(case):
    text, secrets = FOUND[case]
    learnt = detect_secrets(text, SENSITIVE, fail_closed=True)
    masked = redact_text(text, SENSITIVE, KnownSecrets.of(learnt))  # as every way out shows it once learnt
    for secret in secrets:
        assert secret in learnt, (case, secret, learnt)
        assert secret not in masked, (case, masked)


CLEAN = {
    "settings block under auth": "auth:\n  enabled: true\n  existingSecret: redis-auth\n  existingSecretPasswordKey: redis-password\n  usePasswordFiles: true\n",
    "secret references": (
        "env:\n  - name: STRIPE_SECRET_KEY\n    valueFrom:\n      secretKeyRef: { name: payments-stripe, key: secret_key }\n"
        "  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef: { name: payments-db, key: password }\n"
    ),
    "env example": "DATABASE_URL=postgres://USER:PASSWORD@localhost:5432/app\nREDIS_PASSWORD=\nOPENAI_API_KEY=\nSTRIPE_WEBHOOK_SECRET=whsec_...\nTTL_SECONDS=600\n",
    "terraform plan": (
        '  ~ password = (sensitive value)\n  + resource "random_password" "orders_db" {\n      + result = (sensitive value)\n    }\n'
        'locals {\n  db_password = data.vault_kv_secret_v2.db.data["password"]\n}\n'
    ),
    "compose references": (
        "    environment:\n      DATABASE_URL: postgres://shop:${DB_PASSWORD:?set DB_PASSWORD}@db:5432/shop\n"
        "      STRIPE_SECRET_KEY: ${STRIPE_SECRET_KEY}\n    secrets: [session_secret]\nsecrets:\n  session_secret:\n"
        "    file: ./secrets/session_secret.txt\n"
    ),
    "systemd credentials": (
        "[Service]\nLoadCredential=db-password:/etc/credstore/shop-db-password\n"
        "LoadCredentialEncrypted=stripe-key:/etc/credstore.encrypted/stripe-key.cred\nEnvironment=DB_PASSWORD_FILE=%d/db-password\n"
    ),
    "signature armor": (
        "gpgsig -----BEGIN SSH SIGNATURE-----\n U1NIU0lHAAAAAQAAADMAAAALc3NoLWVkMjU1MTkAAAAgx7Pq2LmWv9Rk3TzQ8NcY5bHf\n"
        " -----END SSH SIGNATURE-----\n"
    ),
    "placeholders in a readme": (
        'Pass it in code: `Client(api_key="YOUR_API_KEY")`, `password: "changeme"` in `config.sample.yml` and\n'
        '`password: "example-password"` are placeholders. Use `curl -H "Authorization: Bearer $SHOP_API_KEY" https://api.example.org`.\n'
    ),
    "a key named after a credential, then another key": "data:\n  - secretKey: password\n    remoteRef:\n      property: password\n      version: uuid-7891fdc2-ce69-467a-b7ac-b83bc3ce069c\n",
    "a list under a credential word that holds no credential": "Files that hold the token:\n  config/settings.py\n  deploy/values.yaml\n  README.md\n",
    "a table without a credential column": "| Service | Login | Owner |\n| --- | --- | --- |\n| Canva | team@example.org | @jo |\n",
    "a password column of dashes": "| Service | Password |\n|---|---|\n| SSO app | — |\n| Google Ads | via SSO |\n",
    "code": (
        "        self._session_key = self._get_new_session_key()\n        try:\n            self.save(must_create=True)\n"
        "        except KeyboardInterrupt:\n            sys.exit(1)\n"
        '    r.headers["Authorization"] = _basic_auth_str(self.username)\n    session[BACKEND_SESSION_KEY] = backend\n'
        '    """This default behavior is to\n    allow login by active users, and reject login by inactive users.\n'
        "    independent of end-user authentication (a.k.a., mTLS).\n    :rtype:\n        urllib3.HTTPConnectionPool\n"
    ),
    "go.sum": "golang.org/x/crypto v0.21.0 h1:X31++rzVUdKhX5sWmSOFZxx8UW/ldWx55cbf08iNAMA=\ngolang.org/x/crypto v0.21.0/go.mod h1:0BP0Qx5Jo+UzOJZ37ldGs6w1gi1E/ZgKyHQDMDAmq+w=\n",
}


@pytest.mark.parametrize("case", CLEAN, ids=list(CLEAN))
def test_no_credential_is_learnt(case):
    learnt = {
        value for value in detect_secrets(CLEAN[case], SENSITIVE, fail_closed=True) if len(value.strip()) >= 6
    }
    assert learnt == set(), (case, learnt)


def test_a_mapping_under_a_sensitive_key_teaches_only_its_credentials():
    payload = {
        "auth": {
            "enabled": True,
            "existingSecret": "redis-auth",
            "password": "Lk2!vq8Rz",
            "note": "hunter2-ab9",
        }
    }
    assert event_secrets("log", "worker", payload, SENSITIVE) >= {"Lk2!vq8Rz", "hunter2-ab9"}
    assert "redis-auth" not in event_secrets("log", "worker", payload, SENSITIVE)


@pytest.mark.parametrize(
    ("value", "harmless"),
    [
        ("changeme", True), ("example-password", True), ("whsec_", True), ("${DB_PASSWORD}", True), ("$SHOP_API_KEY", True),
        ("redis-password", True), ("SECRET_KEY", True), ("data.vault_kv_secret_v2.db.data", True), ("%d/db-password", True),
        ("(sensitive value)", True),
        ("MyPassword", False), ("password123", False), ("Tundra/ember/kettle/41", False), ("hunter2hunter", False),
    ],
)  # fmt: skip
def test_placeholders_references_and_names_are_harmless(value, harmless):
    assert harmless_value(value, SENSITIVE) is harmless


_CELL = st.text(
    alphabet=string.ascii_letters + string.digits + "!#$%&*+-./=?@^_~", min_size=8, max_size=30
).filter(
    lambda v: (
        v[0].isalnum() and not v.startswith("http") and len(set(v)) > 3 and is_maskable(v)
    )  # a path, a number or `null` is no secret
)


@settings(max_examples=150, deadline=None)
@given(password=_CELL, login=st.from_regex(r"[a-z]{3,8}@example\.org", fullmatch=True))
def test_any_cell_of_a_password_column_is_masked_and_the_rest_stays(password, login):
    text = f"| Service | Login | Password |\n|---|---|---|\n| Vault | {login} | {password} |\n"
    masked = redact_text(text, SENSITIVE)
    assert password not in masked
    assert login in masked
    assert "| Service | Login | Password |" in masked


def _count_calls(monkeypatch, owner, name, method=None):
    """Put a recorder in place of `owner.name` (of its `method`, for a compiled pattern); the list of its calls."""
    calls = []
    original = getattr(owner, name)
    call = original if method is None else getattr(original, method)

    def counting(*args):
        calls.append(args)
        return call(*args)

    monkeypatch.setattr(
        owner, name, counting if method is None else type("Counting", (), {method: staticmethod(counting)})()
    )
    return calls


@pytest.mark.parametrize(
    ("unit", "reader", "per_line"),
    [
        ("a,password,b\n", "_column_spans", "is_sensitive"),
        ("| x | password |\n|---|---|\n", "_bar_table_spans", "_bar_cells"),
        ("| password |\n| --- |\n| Zq8!Lr2Wv9 |\n", "_bar_table_spans", "_bar_cells"),
    ],
    ids=["csv rows", "bar tables", "bar tables with a row"],
)
def test_a_table_is_read_once_whatever_its_rows_repeat(monkeypatch, unit, reader, per_line):
    """A row shaped like its header was read again as the header of a table running to the end of the text: 50 KB
    of `a,password,b` lines took 13 s, of `| password |` tables 11 s (quadratic, and an ingest token can send
    them). Each line is now looked at a bounded number of times."""
    from state import freetext

    calls = _count_calls(monkeypatch, freetext, per_line)
    text = unit * 2000
    spans = list(getattr(freetext, reader)(text, SENSITIVE))
    assert len(calls) <= 2 * text.count("\n") + 12, len(calls)  # linear: was about lines² / 2
    # The rows' cells are still found (a header is no row).
    assert bool(spans) == ("Zq8" in unit or "," in unit)


def test_a_run_of_names_is_read_once(monkeypatch):
    """From every `password` of `passwordpassword…` the name ran to both ends of the run (10 KB: 1.5 s, 200 KB: about
    ten minutes). A name reaches NAME_REACH characters each way, and a hint inside the last name is skipped."""
    from state import freetext

    calls = _count_calls(monkeypatch, freetext, "_NAME_CHARS", "match")
    text = "password" * 1250
    list(freetext.value_spans(text, SENSITIVE))
    # Linear: it was 12.5 million (a name per hint, each one the whole run).
    assert len(calls) <= 4 * len(text), len(calls)


def test_public_blocks_are_found_by_bisection(monkeypatch):
    from state import failclosed

    text = (
        "-----BEGIN CERTIFICATE-----\nMIIBkTCB\n-----END CERTIFICATE-----\n"
        "-----BEGIN PGP SIGNATURE-----\niQEzBAAB\n-----END CERTIFICATE-----\n"  # another kind's END: no block
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIB\n-----END PRIVATE KEY-----\n"
    )
    blocks = failclosed.public_blocks(text)
    assert [text[a:b].split("\n")[0] for a, b in blocks] == ["-----BEGIN CERTIFICATE-----"]
    ends = _count_calls(monkeypatch, failclosed, "_BLOCK_END", "finditer")
    failclosed.public_blocks("-----BEGIN SSH SIGNATURE----- " * 5000)
    assert len(ends) == 1  # the END markers are read once, not once per BEGIN
