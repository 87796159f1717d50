"""Round 9's detector classes, both ways: a login line of any tool (a user flag, then a short password flag),
values of words under a phrase's name (a passphrase, a seed or recovery phrase), app passwords in four groups,
SQL string literals (`N'…'`, a doubled quote), armored blocks whose label says the body is secret (NATS's `USER
NKEY SEED`) and NKEY seeds anywhere, a site's salt; and what is never learnt whatever names it (a timestamp, a
range of commits, a row of fields, code that computes a value, a SCRAM verifier).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.redaction import KnownSecrets, redact_text, sensitive_set
from state.secrets import event_secrets
from state.sensitive import is_sensitive

SENSITIVE = sensitive_set(
    "api_key,password,passwd,passphrase,pass_phrase,pwd,pass,pw,pin,secret,token,auth,credential,private_key,"
    "mnemonic,seed_phrase,recovery_phrase,salt".split(",")
)

FOUND = {
    "docker login": (
        "$ docker login -u ci-bot -p Xq7vLm2Rt9Kw registry.example.org\nLogin Succeeded\n",
        ("Xq7vLm2Rt9Kw",),
    ),
    "az service principal": (
        "az login --service-principal -u 3c9d4a01-f25f-479e-9cd6-fee94ac7d82b -p Vb8Q~kLmz2TtR9wPq~x_Y4c.Nn --tenant t1\n",
        ("Vb8Q~kLmz2TtR9wPq~x_Y4c.Nn",),
    ),
    "quoted after the user": (
        "cypher-shell -a bolt://db:7687 -u neo4j -p 'maple.cobalt.river.44' -d graph\n",
        ("maple.cobalt.river.44",),
    ),
    "a port first, the password later": (
        "mosquitto_pub -h mqtt.local -p 8883 \\\n  -u gw-7 -P Rk4nT8qLw2Zx -t plant/status -m up\n",
        ("Rk4nT8qLw2Zx",),
    ),
    "long user flag": (
        "helm repo add charts https://charts.example.org --username=robot -p=Yt6Lm9Qw2Rz\n",
        ("Yt6Lm9Qw2Rz",),
    ),
    "pass_phrase in an INI file": (
        "[DEFAULT]\nuser=ocid1.user.oc1..aaaa\nregion=eu-frankfurt-1\npass_phrase=willow gravel lantern 82\n",
        ("willow gravel lantern 82",),
    ),
    "seed phrase after a label": (
        "- Recovery seed phrase: orbit canyon velvet rapid mango tulip silver harbor quiet ember frost lagoon\n",
        ("orbit canyon velvet rapid mango tulip silver harbor quiet ember frost lagoon",),
    ),
    "passphrase in prose": (
        "The disk asks for a passphrase at boot. The passphrase is cedar pebble walrus ember -- lower case.\n",
        ("cedar pebble walrus ember",),
    ),
    "spaced app password": (
        "account gmail\nuser me@example.org\npassword       qwhz mvbk trlx ponf\n",
        ("qwhz mvbk trlx ponf",),
    ),
    "dashed app password": (
        '{"apple_id": "dev@example.org", "password": "kbfx-wqzt-hmlr-jvpd"}',
        ("kbfx-wqzt-hmlr-jvpd",),
    ),
    "national SQL literal with a doubled quote": (
        "CREATE LOGIN [svc] WITH PASSWORD=N'Heron''s-Crest-417', CHECK_POLICY=ON\nGO\n",
        ("Heron''s-Crest-417",),
    ),
    "NKEY seed block": (
        "-----BEGIN USER NKEY SEED-----\nSUAHQ3KQDMN5ZJ2EVW4UYFGPRXQ7TLCB6SKOJ2M3NVZ4RW5YEHLAGXTQPA\n------END USER NKEY SEED------\n",
        ("SUAHQ3KQDMN5ZJ2EVW4UYFGPRXQ7TLCB6SKOJ2M3NVZ4RW5YEHLAGXTQPA",),
    ),
    "NKEY seed alone": (
        "nkey: SAAKZT5QJ2X3VXHRP4LMWN7CYD6E2UBFOIG5SKR3JTQ7VHLX4MZAYBCDEF\n",
        ("SAAKZT5QJ2X3VXHRP4LMWN7CYD6E2UBFOIG5SKR3JTQ7VHLX4MZAYBCDEF",),
    ),
    "a site's salt": (
        "$settings['hash_salt'] = 'pL3xQ9_vN2kR7tW4zY8mB1cD5fG6hJ0aSe';\n",
        ("pL3xQ9_vN2kR7tW4zY8mB1cD5fG6hJ0aSe",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_credentials_are_learnt_and_masked(text, values):
    found = detect_secrets(text, SENSITIVE)
    masked = redact_text(text, SENSITIVE, KnownSecrets.of(found))
    for value in values:
        assert value in found, (value, found)
        assert value not in masked


NOT_FOUND = {
    "a database name after -p": "mysql -u root -p orders\n",
    "a port mapping": "docker run -u 1000 -p 8080:80 nginx:1.27\n",
    "a port alone": "psql -u app -p 5432 -h db.internal\n",
    "password from stdin": 'echo "$TOKEN" | docker login -u ci --password-stdin ghcr.io\n',
    "a variable": 'docker login -u ci -p "$REGISTRY_PASSWORD" registry.example.org\n',
    "passphrase in prose, no value": "The passphrase is stored in the vault and rotated by the ops team.\n",
    "recovery phrase instructions": "Your recovery phrase: write down these twelve words and keep them offline.\n",
    "prose after is": "The passphrase is not yet set for this laptop.\n",
    "two groups are no app password": "password policy: abcd efgh are examples of weak ones\n",
    "an SQL placeholder": "CREATE LOGIN [x] WITH PASSWORD=N'<new password here>'\n",
    "a public key block": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE4xTq1r5pVn0mK2\n-----END PUBLIC KEY-----\n",
    "a NATS public user key": "authorization { users = [ { nkey: UBCKMNNC222A2VZ5KFW5RBB42HV4SKY5YDON5Y7AHPQZH3IURZJYXN76 } ] }\n",
    "salt rounds": "BCRYPT_SALT_ROUNDS=12\nsalt_rounds: 12\nbasalt quarry map\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE) if len(v) >= 6} == set()


@pytest.mark.parametrize(
    "value",
    [
        "2026-07-24T10:54:38Z",
        "2026-07-24 10:54:38.123+02:00",
        "20260818071914.736071Z#000000#000#000000",
        "7d51d45..e6562c9",
        "be_api,BACKEND,0,0,13,41,3000,774811,UP",
        "base64.b64decode(b64salt).decode('latin1')",
        "data[:22],",
        "SCRAM-SHA-256$4096:NkkYUv0q+mHVh9fU/G2qOA==$kKw1ZrTd",
    ],
)
def test_records_rows_and_code_are_never_learnt(value):
    assert harmless_value(value, SENSITIVE)


@pytest.mark.parametrize(
    "value", ["Zq8,Lm2!Rt9", "Summer(2024)!", "qwerty[12]Z", "2026-Secret-Kw9!", "d41d8cd9..x"]
)
def test_credentials_that_resemble_them_are_still_learnt(value):
    assert not harmless_value(value, SENSITIVE)
    assert value in detect_secrets(f"password: {value}\n", SENSITIVE)


def test_records_under_a_credential_key_are_masked_in_place_not_learnt():
    text = '{"AccessKeyMetadata": [{"Status": "Active", "CreateDate": "2026-07-24T10:54:38Z"}], "secret": "2026-07-24T10:54:38Z"}'
    assert "2026-07-24T10:54:38Z" not in detect_secrets(text, SENSITIVE)
    assert "2026-07-24T10:54:38Z" not in event_secrets(
        "log", "w1", {"secret": "2026-07-24T10:54:38Z"}, SENSITIVE
    )


def test_salt_is_a_last_word_name():
    assert (
        is_sensitive("hash_salt", SENSITIVE)
        and is_sensitive("AUTH_SALT", SENSITIVE)
        and is_sensitive("secureAuthSalt", SENSITIVE)
    )
    assert not is_sensitive("salt_rounds", SENSITIVE) and not is_sensitive("basalt", SENSITIVE)


# Not a placeholder's mark (`xxxx`: a phrase holding one is a template, never learnt; a random run drew it).
_PHRASE_WORD = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=4, max_size=9).filter(lambda word: "xxxx" not in word)


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(_PHRASE_WORD, min_size=4, max_size=24, unique=True),
    label=st.sampled_from(["passphrase", "Seed phrase", "recovery_phrase", "mnemonic"]),
)
# A seed's twelve words, then one longer than a seed's list has: the phrase is all thirteen (a random run found it cut).
@example(words=["bbbb", "bbbc", "bbbd", "bbbf", "bbbg", "bbbh", "bbbj", "bbbk", "bbcb", "bbbbb", "bbbbbb", "bbbbbbb", "bbbbbbbbb"], label="Seed phrase")
def test_every_phrase_under_a_phrase_name_is_learnt_whole(words, label):
    phrase = " ".join(words)
    text = f"{label}: {phrase}\nnext line\n"
    found = detect_secrets(text, SENSITIVE)
    assert phrase in found
    assert phrase not in redact_text(text, SENSITIVE, KnownSecrets.of(found))


@settings(max_examples=60, deadline=None)
@given(
    user=st.text(alphabet="abcdefghijklmnopqrstuvwxyz-0123456789", min_size=2, max_size=12).filter(
        lambda u: not u.startswith("-")
    ),
    password=st.text(
        alphabet="abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%+", min_size=10, max_size=24
    ).filter(lambda p: any(c.isdigit() for c in p) and any(c.isalpha() for c in p) and not p.isdigit()),
    tool=st.sampled_from(
        ["docker login", "podman login", "az login --service-principal", "cypher-shell", "some-cli auth"]
    ),
    flag=st.sampled_from(["-p", "-P", "-p="]),
)
@example(user="ab", password="%22222222a", tool="docker login", flag="-p")  # a leading % is no reference by itself
@example(user="ab", password="!a22222222", tool="docker login", flag="-p")  # nor a leading ! (a YAML tag is a word)
def test_any_tool_with_a_user_flag_then_a_password_flag(user, password, tool, flag):
    joined = flag if flag.endswith("=") else flag + " "
    text = f"$ {tool} -u {user} {joined}{password} --verbose\n"
    found = detect_secrets(text, SENSITIVE)
    assert password in found
    assert password not in redact_text(text, SENSITIVE, KnownSecrets.of(found))


def test_a_long_line_of_user_flags_is_read_in_bounded_steps():
    """The form's reach from each user flag to its password flag is bounded (LINE_REACH), so a line of 20,000 user
    flags costs each flag a bounded look, and every login on it is still found."""
    from state import freetext

    line = " ".join(f"-u u{i} -p Pw{i:05d}xZ!" for i in range(2000)) + "\n"
    spans = list(freetext._cli_spans(line))
    assert len(spans) == 2000
    flood = "x -u " * 20000 + "\n"
    assert list(freetext._cli_spans(flood)) == []


# The names the second classes add to the defaults.
SECOND_SENSITIVE = SENSITIVE | sensitive_set(
    ["pre_shared_key", "recovery_key", "rootpw", "lozinka", "parola"]
)

SECOND = {
    "ipmitool's upper-case flags": (
        "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P QWZRTPLMXV chassis status\n",
        ("QWZRTPLMXV",),
    ),
    "a glued env var": ("set FTPUSER=edi\nset FTPPASS=kT7mWq2ZrX9v\n", ("kT7mWq2ZrX9v",)),
    "a glued option, letters only": (
        "remoteuser : me@example.org\nremotepass : qzvxkbwtrnhlpcmd\n",
        ("qzvxkbwtrnhlpcmd",),
    ),
    "a numbered name": (
        "Backlog SSID1 Shop; Password1 otterlantern57; MqttHost 10.0.0.2\n",
        ("otterlantern57",),
    ),
    "a wireless section's key": (
        "wireless.default_radio0.ssid='Home'\nwireless.default_radio0.key='violet anchor pepper mist'\n",
        ("violet anchor pepper mist",),
    ),
    "a pre-shared key spelt out": (
        "add authentication-types=wpa2-psk name=office wpa2-pre-shared-key=harborzebra731\n",
        ("harborzebra731",),
    ),
    "a login's user and password": (
        "cache_peer hq.example.net parent 3128 0 no-query login=branch7:Vw8nQ2rLx5\n",
        ("Vw8nQ2rLx5",),
    ),
    "a password kept in clear": (
        "ops@mail.example.org:{PLAIN}tundrabasket92:5000:5000::/var/vmail/ops\n",
        ("tundrabasket92",),
    ),
    "a recovery key": (
        "New personal recovery key = 'QWRT-7KLM-ZXCV-9BNM-ASDF-4GHJ'\n",
        ("QWRT-7KLM-ZXCV-9BNM-ASDF-4GHJ",),
    ),
    "slapd's rootpw": ('suffix\t"dc=example,dc=org"\nrootpw\t\tmq47Lzx9\n', ("mq47Lzx9",)),
    "a vendor's sk_ key": (
        'checkoutKey = "sk_sbox_q3vmt7xk2pl9wz4hrn6yc8bd1f"\n',
        ("sk_sbox_q3vmt7xk2pl9wz4hrn6yc8bd1f",),
    ),
    "a token as a line's label": (
        '$ mmctl token generate bot "alerts"\nq8wza31m0x6j4kvtpe2n7yc5rh: alerts\n',
        ("q8wza31m0x6j4kvtpe2n7yc5rh",),
    ),
    "a tab-aligned table": (
        '# client\t\t\tserver\tsecret\t\tIP addresses\n"user@isp.example"\t*\t"Nq7RvX2mLp4W"\t*\n',
        ("Nq7RvX2mLp4W",),
    ),
    "a seed whose words are also prose": (
        "seed phrase: also about that then absorb acoustic adjust afraid agent alley amused ancient\n",
        ("also about that then absorb acoustic adjust afraid agent alley amused ancient",),
    ),
    "other languages": (
        "Korisničko ime je mbabic, a lozinka: Otter18381\nparola este kB4vQ9zLm\n",
        ("Otter18381", "kB4vQ9zLm"),
    ),
}


@pytest.mark.parametrize(("text", "values"), SECOND.values(), ids=SECOND.keys())
def test_round_nine_second_classes_are_learnt_and_masked(text, values):
    found = detect_secrets(text, SECOND_SENSITIVE)
    for value in values:
        assert value in found, (value, found)


SECOND_NOT = {
    "prose words glued to pass": "bypass = northwestern\ncompass: southwesterly\n",
    "an option after -P": "psql -U app -P format=html -d reports\n",
    "a wireless keyboard": "the wireless keyboard pairs over wlan0 keys\n",
    "an identifier with a few digits": "handler2request3 profile7settings_v2 Worker12Queue4\n",
    "ciphertext under a key": "secret: ENC[PKCS7,MIIBiQYJKoZIhvcNAQcDoIIBejCCAXYCAQAxggEhMIIBHQIBADAFMAACAQ]\n",
    "a status": "passwd: password updated successfully\n",
    "a registry type": '"DefaultPassword"=dword:00000005\n',
}


@pytest.mark.parametrize("text", SECOND_NOT.values(), ids=SECOND_NOT.keys())
def test_round_nine_second_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE) if len(v) >= 6} == set()


def test_the_gate_opens_for_each_second_class():
    """Events go through the one-pass gate first: it must open wherever the rules would find something."""
    for text, values in SECOND.values():
        found = event_secrets("log", "w1", {"msg": text}, SECOND_SENSITIVE)
        assert set(values) <= found, (text, found)


def test_a_serialized_event_keeps_its_lines_for_the_fail_closed_pass():
    """JSON escapes were read as two spaces, so a document pushed inside an event became one line, and a label of
    the line above (`UserID`) made the typed password below it an identifier: found in the document alone, missed
    in the event (the crawler's blind part showed it). A `\\n` escape is read as a line break now."""
    text = "$ dscl . -read /Users/desk Hint RealName UserID\nHint: Fjord42#x\nRealName:\n Front Desk\n"
    assert "Fjord42#x" in detect_secrets(text, SENSITIVE)
    assert "Fjord42#x" in event_secrets("log", "w1", {"msg": text}, SENSITIVE)
    assert "Fjord42#x" in event_secrets("tool.call", "w1", {"result": {"stdout": text}}, SENSITIVE)


_TOKEN = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=12, max_size=40)


@settings(max_examples=60, deadline=None)
@given(token=_TOKEN, word=st.sampled_from(["Kenavo", "Thanks", "see you", "next", "END:VEVENT", "- Ops"]), escape=st.sampled_from(["\\n", "\\r\\n", "\\t"]))
def test_a_line_break_written_as_an_escape_ends_a_value_in_the_document_and_in_the_event(token, word, escape):
    """iCalendar, a JSON string inside text or a log's repr write a line break as `\\n`. Read through, the document
    learnt `token\\nNext` (it masked the token there by containing it), while the event's JSON doubles the
    backslash and the token stood alone: masked in the document, shown as an event (the crawler's new blind part
    showed it). The escape ends the token in both readings now, so both learn the same."""
    text = f"DESCRIPTION:Code {token}{escape}{word}\nSUMMARY:Visit\n"
    alone = detect_secrets(text, SENSITIVE)
    assert not any(escape in value or value.endswith("\\") for value in alone)
    shown = {
        "document": redact_text(text, SENSITIVE, KnownSecrets.of(alone)),
        "event": redact_text(text, SENSITIVE, KnownSecrets.of(event_secrets("log", "w1", {"msg": text}, SENSITIVE))),
    }
    assert (token in shown["document"]) == (token in shown["event"]), shown


@pytest.mark.parametrize("value", ["!vault |", "!secret db_password", "!include_dir_named"])
def test_a_yaml_tag_is_a_word_and_a_password_after_a_bang_is_no_tag(value):
    assert harmless_value(value, SENSITIVE)
    assert not harmless_value("!a22222222", SENSITIVE) and not harmless_value("!Qx7mK2pL9vR4", SENSITIVE)


def test_a_matrix_room_id_is_an_identifier():
    text = '{"rooms": {"join": {"!xmeBJ0b1oiyzEcWkqP:matrix.org": {"timeline": {"limited": false}}}}}\n'
    assert not {value for value in detect_secrets(text, SENSITIVE) if "xmeBJ0b1" in value}
    # Without a server after it, the same token is judged as any other.
    assert any("xmeBJ0b1" in value for value in detect_secrets("password: !xmeBJ0b1oiyzEcWkqP\n", SENSITIVE))
