"""Round 11's detector classes (HOLDOUT10 spent), both ways, in shapes of their own (none copied from the corpus):
a credential word read without the marks its writer may add or leave out (tone and accent marks, Hebrew points, a
zero-width joiner inside an Indic word, a soft hyphen), more languages' words and copulas (a copula may take a
colon), markup after an announced label's colon, a value piped into any command that reads a password on stdin,
rar's `-hp`, a UUID given to a key flag, a literal default for a sensitive variable read from the environment; and
look-alikes never learnt (a colon past the name's sentence, a label naming an identifier, a call after a name, a
masked echo, an EVM address, identifier nouns glued to `id`, a key named by what it identifies, a key typed by its
kind's prefix, a piece of a public key, a spreadsheet range, a distribution's package version). Each found class is
read the same alone and inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import pytest

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.redaction import sensitive_set
from state.sensitive import unmarked
from tests.state.helpers import learnt_and_masked

SENSITIVE = sensitive_set(
    "api_key,password,पासवर्ड,passwd,passphrase,pwd,pass,pw,secret,token,auth,authorization,session,credential,private_key,"
    "access_key,סיסמה,ಪಾಸ್ವರ್ಡ್,പാസ്വേഡ്,संकेतशब्द,密碼,senhal,şîfre,erayga_sirta,oro_asina,lo_lus_zais,tembung_sandi,"
    "گذرواژه".split(",")
)


FOUND = {
    # Marks the names do not carry.
    "Hebrew with points": ("סִיסְמָה לַשָּׁרָת: Kt8vmQ2xLw\n", ("Kt8vmQ2xLw",)),
    "Malayalam with a ZWNJ inside": ("പുതിയ പാസ്‌വേഡ്: Rv7kQ2mZx9\n", ("Rv7kQ2mZx9",)),
    "English with a soft hyphen": ("The new pass\u00adword: Zq8mK2xLw7\n", ("Zq8mK2xLw7",)),
    "Yoruba with tone marks, then a colon": ("Ọ̀rọ̀ aṣínà tuntun: Ewe7Qz2mKx\n", ("Ewe7Qz2mKx",)),
    # More languages' words and copulas.
    "Marathi, the verb last": ("वायफायचा संकेतशब्द Lq7mZx2Rt आहे\n", ("Lq7mZx2Rt",)),
    "Cantonese 係": ("屋企 wifi 密碼係 Pq8zLm2Xr，記住\n", ("Pq8zLm2Xr",)),
    "Occitan, a copula then a colon": ("Lo senhal del wifi es : Brug4Qm7xZ\n", ("Brug4Qm7xZ",)),
    "Kurmanji izafe": ("Şîfreya nû: Kx7mQ2zLpw\n", ("Kx7mQ2zLpw",)),
    "Hmong, what it is for, then yog": ("Lo lus zais tshiab yog Tq9mZx2Lp\n", ("Tq9mZx2Lp",)),
    "Javanese label": ("Tembung sandi anyar kanggo router: Wk7mQ2zLx\n", ("Wk7mQ2zLx",)),
    "Persian": ("گذرواژه جدید: Hn4vpQ8zLm\n", ("Hn4vpQ8zLm",)),
    # Markup after an announced label's colon.
    "markup after the label's colon": (
        "<p>Erayga sirta cusub ee xafiiska: <i>Hq8mZx2Lt</i></p>\n",
        ("Hq8mZx2Lt",),
    ),
    # Commands that read a password on stdin.
    "printf piped into sudo -S": ("printf '%s\\n' 'Rv8wkQ2mZx' | sudo -S -k apt-get update\n", ("Rv8wkQ2mZx",)),
    "echo piped into passwd --stdin": ("echo Mq7xZ2Lpw9 | passwd --stdin deploy\n", ("Mq7xZ2Lpw9",)),
    "rar's header password": ("rar a -hpBasalt-Quiver-93 -r site.rar www/\n", ("Basalt-Quiver-93",)),
    "a UUID given to a key flag": (
        "edge-agent enroll --enroll-key 7f3c2a10-9b4e-4d2a-8c1f-5e6d7a8b9c0d --site lab\n",
        ("7f3c2a10-9b4e-4d2a-8c1f-5e6d7a8b9c0d",),
    ),
    # A literal default for a sensitive variable read from the environment.
    "JS nullish default": ('const gl = process.env.GITLAB_TOKEN ?? "glx-Qm8zK2xLw7Rt";\n', ("glx-Qm8zK2xLw7Rt",)),
    "Python getenv default": ('smtp_pw = os.getenv("SMTP_PASSWORD", "Lm7vqZ2xRt")\n', ("Lm7vqZ2xRt",)),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_eleven_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "a colon past the name's sentence": "अपना पासवर्ड किसी को न बताएं। संदर्भ: KX82MDLQ93ZP\n",
    "a key's id": "Deploy key ID: 0b7d1f2e-3c4a-4e5f-9a6b-7c8d9e0f1a2b\n",
    "a digest named between the name and its colon": (
        "Password rotated (audit checksum: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08)\n"
    ),
    "a call after the name": "secret = hmac_sha256(body, signing_material)\n",
    "a masked echo": "Vault password: ●●●●●●●●●●\n",
    "an EVM address": "withdrawal to 0x52908400098527886E0F7030069857D2E4169EE7 confirmed\n",
    "an identifier noun glued to id": "upstream=10.0.0.2 grpc-x2-messageid=4bf92f3577b34da6a3ce929d0e0e4736 status=200\n",
    "a key named by what it identifies": '{"orderKey": "Zq8mK2xLw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0E", "amount": 1200}\n',
    "a key typed by its kind's prefix": (
        "peer lab-nas discokey:9a2c44e1f0b37d8c5a6e9f1b2c3d4e5f60718293a4b5c6d7e8f901a2b3c4d5e6 online\n"
    ),
    "a piece of a public key's value": 'pubkey = "Xq3$kR9!zW:m7Ln{Q2pV+Bt8}Hs4%"\n',
    "a spreadsheet range": "Copy the totals from Budget2026!B2:D40 into the summary tab\n",
    "a distribution's package version": "openssl 3.0.11-1~deb12u2 and libc6 2.36-9+deb12u4 are installed\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_eleven_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


def test_marks_are_read_either_way_and_plain_text_is_left_alone():
    assert unmarked("ọ̀rọ̀ aṣínà") == "oro asina"
    assert unmarked("pass\u00adword") == "password"
    assert unmarked("plain ascii password") is None
    assert unmarked("密码") is None


@pytest.mark.parametrize("value", ["●●●●●●●●", "········", "********"])
def test_a_masked_echo_is_harmless(value):
    assert harmless_value(value, SENSITIVE)


def test_a_private_key_typed_by_its_prefix_is_still_learnt():
    text = "nodeprivkey:9a2c44e1f0b37d8c5a6e9f1b2c3d4e5f60718293a4b5c6d7e8f901a2b3c4d5e6zQ8xK2mL\n"
    assert detect_secrets(text, SENSITIVE, fail_closed=True)

