"""Round 13's detector classes (HOLDOUT12 spent), both ways, in shapes of their own (none copied from the corpus):
a login a line announces right before its `user / password` pair (a passphrase of words there, the password's own
mark before a sentence's end), a passphrase of words after a copula (joined by a mark or glued into a run longer than
a word), more copulas and joins (Bengali's, Thai's, Lao's and Khmer's glued after what the password is for,
Hebrew's proclitics on the word, Swahili's `neno la siri`), Windows' slash flags (`/U … /P`, `net use`'s and `net
user`'s positional password), a protocol's AUTH verb with a user and MongoDB's `db.auth`, an SNMP community, a
password the shell refused to run, a define flag glued to a key (`-DNAME=\\"…\\"`), a credential word written with a
capital inside it (`PassWd`), recovery codes under a text that names them, a wallet's seed line, the members of a
map named for keys of a secret kind; and look-alikes never learnt (code reading a credential, a comment after it, a
setting to a number after a copula, a sentence in Japanese, a key that opens a block, a listing under a prose label,
a name with a short hex id, base64 of clean text, SNMP's default community, a typo the shell refused, a prompt's `*`,
a public keys' map, prose after a Hebrew or a Thai word for password). Each found class is read the same alone and
inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import base64

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships (the other languages' words are part of the classes under test).
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # A login the line announces right before its pair.
    "login: u / p!. (the password's own mark)": ("Printer web UI, the admin login: root / 5tarling4!. Thanks\n", ("5tarling4!",)),
    "login is u / words": ("the camera's login is viewer / heron.basalt.quiver , stream on :554\n", ("heron.basalt.quiver",)),
    # A passphrase of words after a copula.
    "Dutch is, words joined": ("Het wachtwoord voor de kluis is otter-lantern-quarry\n", ("otter-lantern-quarry",)),
    "German ist, words glued": ("Das WLAN-Passwort für die Garage ist lanternquarrymeadowfig\n", ("lanternquarrymeadowfig",)),
    # Copulas and joins.
    "Bengali হচ্ছে": ("ওয়াইফাই পাসওয়ার্ড হচ্ছে Kx4mRt82q\n", ("Kx4mRt82q",)),
    "Thai คือ glued after what it is for": ("รหัสผ่านวายฟายบ้านคือ Tr8vQm2Lz\n", ("Tr8vQm2Lz",)),
    "Lao ແມ່ນ glued": ("ລະຫັດຜ່ານແມ່ນ Gh5kWq9Rp\n", ("Gh5kWq9Rp",)),
    "Khmer គឺ glued": ("ពាក្យសម្ងាត់គឺ Zp4nVx7Qe\n", ("Zp4nVx7Qe",)),
    "Hebrew proclitics וה": ("והסיסמה החדשה היא Mk3pQz8Rt\n", ("Mk3pQz8Rt",)),
    "Swahili neno la siri": ("Neno la siri jipya ni Wq7zKp3Nx\n", ("Wq7zKp3Nx",)),
    # Windows' slash flags.
    "/U … /P": ("schtasks /Query /S host7 /U CORP\\ops /P Hx3vB7nQ2 /FO LIST\n", ("Hx3vB7nQ2",)),
    "net use, password before /user": ("net use \\\\backup01\\vault Sparrow3318 /user:BACKUP01\\svc\n", ("Sparrow3318",)),
    "net use, password after /user": ("net use \\\\fs03\\media /user:HOME\\kim Pelican5590 /persistent:no\n", ("Pelican5590",)),
    "net user … /add": ("net user kiosk Dv3$pQm7x /add /expires:never\n", ("Dv3$pQm7x",)),
    # A protocol's AUTH verb with a user; MongoDB's db.auth.
    "AUTH user password": ("AUTH reporter Minnow70412\n+OK\n", ("Minnow70412",)),
    "AUTH user, words": ("10.0.0.5:6380> AUTH reporter velvet_badger_nutmeg_comet\nOK\n", ("velvet_badger_nutmeg_comet",)),
    "db.auth": ('test> db.auth("ops", "Vx8qLm3Nz2")\n{ ok: 1 }\n', ("Vx8qLm3Nz2",)),
    # An SNMP community.
    "rwcommunity": ("rwcommunity Fz9kQ2mLx 192.168.0.0/16\n", ("Fz9kQ2mLx",)),
    "snmp-server community": ("snmp-server community Wn4vRt8Qk RW 10\n", ("Wn4vRt8Qk",)),
    # A password the shell refused to run.
    "bash: …: command not found": ("ops@db1:~$ Kestrel4410x\n-bash: Kestrel4410x: command not found\n", ("Kestrel4410x",)),
    "zsh: command not found: …": ("% Lumen77Qx\nzsh: command not found: Lumen77Qx\n", ("Lumen77Qx",)),
    "cmd: '…' is not recognized": (
        "C:\\> Orchid5512\n'Orchid5512' is not recognized as an internal or external command,\noperable program or batch file.\n",
        ("Orchid5512",),
    ),
    # A define flag glued to a key, its value in escaped quotes.
    "-DNAME=\\\"…\\\"": ('CPPFLAGS += -DMQTT_TOKEN=\\"Cobalt8812\\"\n', ("Cobalt8812",)),
    # A credential word written with a capital inside it.
    "PassWd=": ("[Mail]\nUser=reports\nPassWd=Rf7mQz2Lk\n", ("Rf7mQz2Lk",)),
    "dbPassWord:": ("db:\n  host: pg1\n  dbPassWord: Hq4zNm8Vt\n", ("Hq4zNm8Vt",)),
    # Recovery codes under a text that names them, one a line.
    "recovery codes": (
        "Two-factor recovery codes for ops@example.org\nStore these somewhere safe; each works once.\n\n"
        "q7hk2-m9zt4\n3xv8p-kw2nq\nr5tj9-8dm3c\nz2wq6-hn7vb\n7kp4m-ct9xe\n",
        ("q7hk2-m9zt4", "r5tj9-8dm3c", "7kp4m-ct9xe"),
    ),
    # A wallet's seed phrase alone on its line.
    "a seed line": (
        "Ledger wallet - seed, written 2026-03-02\nocean ladder frozen pilot crisp humble velvet orbit sketch mango tribe shadow\n",
        ("ocean ladder frozen pilot crisp humble velvet orbit sketch mango tribe shadow",),
    ),
    # The members of a map named for keys of a secret kind.
    "encryptionKeys' members": (
        '{"radio": {"build": "7.21.3", "node_id": 1, "encryptionKeys": {"current": "9F2C41D7A3B85E06C1D4F7A29B3E8C50", '
        '"next": "4E7A1C9D2B6F3A8E0D5C7B1A9F2E4D63"}}}\n',
        ("9F2C41D7A3B85E06C1D4F7A29B3E8C50", "4E7A1C9D2B6F3A8E0D5C7B1A9F2E4D63"),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_thirteen_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "code reading a credential, a member of any case": 'String token = prefs.getString("api_token", "");\n',
    "code reading a credential, a capital method": 'cfg.Password = config.GetValue("Smtp:Password");\n',
    "code reading a credential, a comment after it": 'APP_SECRET = os.getenv("APP_SECRET")  # injected by the operator\n',
    "a setting to a number after a copula": "summariser note: the token budget is max_output_tokens=2048 per call\n",
    "a sentence in Japanese": "パスワードは8文字以上で、記号を含めてください。\n",
    "a key that opens a block": "auth:\n  existingSecret: redis-auth\n  tokenRefs:\n    apiTokenKey: api-token\n",
    "a listing under a prose label": (
        "C:\\> cmdkey /list\n\nSaved credentials:\n\n    Target: LegacyGeneric:target=git:https://example.org\n    Type: Generic\n    User: ops\n"
    ),
    "a name with a short hex id": "Saved the plan to: plan-3e9d0c7ab41f\nExported to: snapshot-0a9f3c27e1b4\n",
    "base64 of clean text": "data:\n  app.properties: " + base64.b64encode(b"feature.search=on\ncache.ttl=300\n").decode() + "\n",
    "SNMP's default community": "rocommunity public default\n",
    "a typo the shell refused": "bash: gti: command not found\nzsh: command not found: kubeclt\n",
    "a prompt's star": "net user svc_backup * /add\nschtasks /Create /TN Sync /TR sync.cmd /RU SYSTEM /RP *\n",
    "words with a capital inside that name no credential": "[Keyboard]\nKeyBoard=us\nPassEd=true\nSessionId=main\n",
    "a public keys' map": '{"radio": {"build": "7.21.3", "node_id": 1, "publicKeys": {"current": "9F2C41D7A3B85E06C1D4F7A29B3E8C50"}}}\n',
    "prose after a Hebrew word for password": "הסיסמה שונתה אתמול\n",
    "prose after a Thai word for password": "รหัสผ่านต้องมีอย่างน้อย 12 ตัว\n",
    "a word after a copula": "The password for the wiki is case-sensitive\n",
    "a path after a login word": "the login page is at home / index.html\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_thirteen_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()
