"""Round 16's detector classes (HOLDOUT15 spent), both ways, in shapes of their own (none copied from the corpus):
a typed password in any alphabet, command lines and configs (a command continued over lines, redis-cli's quoted `-a`,
a call given a name then its value, a glued name as a directive, NickServ's IDENTIFY, ipsec.secrets' other kinds,
net-snmp's createUser, a file named for secrets, a file named as where a credential is kept), more ways to say it in
prose (a login's clause ending in a colon, a heading over a list, a value before a verb of changing, `the new one is`,
an Indic verb before the dash); and look-alikes never learnt (a sentence's closing mark, one case, a continued command
without a credential, a placeholder, a path, a status, an address or a link after a login's clause, a secrets file's
comments, ciphertext in its tools' forms, Cisco's hashes, an age recipient, a request's id, a file's digest, cat -v's
`^@`, a block of ciphertext, a salt beside its key derivation, a secret's address and an Azure reference). Each found
class is read the same alone and inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import secrets_in, sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships.
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # A typed password in any alphabet.
    "typed, Greek in two cases": ("Ελένη: για το σύστημα βάλε ΘάλασσαΉλιος4471# και μετά άλλαξέ το\n", ("ΘάλασσαΉλιος4471#",)),
    "typed, Hebrew without case": ("דנה: לחשבון של הבנק תשתמש בזה שמשירח5531* תודה\n", ("שמשירח5531*",)),
    "typed, Devanagari with its marks": ("राहुल: पोर्टल के लिए सूरजचाँद5512& डालो\n", ("सूरजचाँद5512&",)),
    # Command lines and configs.
    "a command continued over lines": (
        'curl -sS -X PUT "http://127.0.0.1:8080/job/deploy/build" \\\n'
        "  -d @body.json \\\n  --user deployer:Harbor5521q\n",
        ("Harbor5521q",),
    ),
    "redis-cli's quoted -a": ("$ redis-cli -h 127.0.0.1 -p 6380 -a 'k.vTq.MRwz8Hn' --no-auth-warning PING\nPONG\n", ("k.vTq.MRwz8Hn",)),
    "a call given a name then its value": (
        "<?php\ndefine( 'SMTP_PASSWORD', 'Thistle8823%' );\ndefine( 'SMTP_PORT', '587' );\n"
        'pref("mail.relay.legacy_password", "Ocelot5512.");\n',
        ("Thistle8823%", "Ocelot5512."),
    ),
    "a glued name as a directive": ("$ grep -n masterpass /etc/keydb/keydb.conf\n412:masterpass c.Xw9.PLrtQzv\n", ("c.Xw9.PLrtQzv",)),
    "NickServ's IDENTIFY": ("/quote PRIVMSG NickServ :IDENTIFY ircbot Brambling-7714\n", ("Brambling-7714",)),
    "ipsec.secrets' XAUTH": ('# ipsec.secrets\ncarol@vpn.example : XAUTH "Weaver-Kestrel-2290"\n', ("Weaver-Kestrel-2290",)),
    "net-snmp's createUser": (
        'createUser -e 0x8000000001020304 poller SHA "Tv4.qLm8zRwz" AES "Kp7.xNb3wQsv"\n',
        ("Tv4.qLm8zRwz", "Kp7.xNb3wQsv"),
    ),
    "a file named for secrets": ("$ cat /etc/rsyncd.secrets\nbackup:Rq7wLp2Zx9\nmirror:Tn4vKs8Qm3\n", ("Rq7wLp2Zx9", "Tn4vKs8Qm3")),
    "a file named as where a credential is kept": (
        "client\nremote vpn.example.internal 1194\nauth-user-pass /etc/openvpn/home.creds\n"
        "$ cat /etc/openvpn/home.creds\nmira\nPelican4471\n$ \n",
        ("Pelican4471",),
    ),
    "echo into a credential file": (
        'echo "otter-maple-quartz-91" > /root/.borg-pass\nborg create ::nightly /srv\n',
        ("otter-maple-quartz-91",),
    ),
    # Prose.
    "a login's clause ending in a colon": ("Fürs Kundenportal kannst du dich damit einloggen: Kranich5531\n", ("Kranich5531",)),
    "a login's clause, the value on the next line": (
        "Para acessar o painel da loja usa esta:\nGaivota8842\nobrigado!\n",
        ("Gaivota8842",),
    ),
    "a heading over a list": (
        "Datos para entrar:\n- correo: ana@example.org\n- portal del banco: Tortuga7731\n",
        ("Tortuga7731",),
    ),
    "a value before a verb of changing": ("와이파이 비밀번호 바다별3390 으로 변경했습니다\n", ("바다별3390",)),
    "the new one is": ("邮箱密码改好了，新的是 Lotus7723pq\n", ("Lotus7723pq",)),
    "an Indic verb before the dash": ("बैंक का पासवर्ड भेज रहा हूँ — Marigold5581\n", ("Marigold5581",)),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_sixteen_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "a sentence closed in a script without case": "สวัสดีปีใหม่2026! แล้วเจอกัน\n",
    "one case, a mark at the end": "Итоги за 2026: привет2026# всем\n",
    "a continued command without a credential": 'curl -sS -X GET "http://127.0.0.1:8080/api/status" \\\n  -H "Accept: application/json"\n',
    "a placeholder given to a call": "define( 'AUTH_KEY', 'put your unique phrase here' );\n",
    "a path after a glued directive": "requirepass /run/secrets/redis_pw\n",
    "a status after NickServ": "-NickServ- You are now identified for ircbot.\n",
    "an address or a link after a login's clause": (
        "Sign in with your work account: https://sso.example.org/start\nFürs Portal einloggen mit: anna.berg@example.org\n"
    ),
    "a secrets file's comments": "# /etc/davfs2/secrets\n# server        user    password\n\n",
    "echo into another file": "echo 'release-2026-11' > VERSION\n",
    "a password file of hashes": (
        "password_file /etc/mosquitto/pw\n$ cat /etc/mosquitto/pw\n"
        "plc:$7$101$Qm2vLx8Rt4Nb7Yc1$Hd6Fs0Jg5Tp8Qw2Ez4Ua9Vb3Xc8Zn6Mq1Lw5Rk0Vx7Yp2Ht4Jd9Sg1Fc3Nb8Qm5Zw2==\n"
    ),
    "ciphertext in braces": "<server><id>repo</id><password>{Zq8vLm2Kx9Rt4Nb7/Yc1Hd6Fs0Jg5Tp8Qw2Ez4Ua9Vb=}</password></server>\n",
    "Rails' encrypted credentials": (
        "$ cat config/credentials/production.yml.enc\n"
        "Tq8vLz3Wm9Kx2Rn7Yb4Hc1Fd6Js0Pq5Vw8Ez2Ua7Lm4Nx9Rk3Tb6Yc1Hd8Fs5Jg0Qw2Ez4Ua9Vb3=--Zx8Mq1Lw5Rk0Vx7Yp2Ht4J==--d9Sg1Fc3Nb8Qm5Zw2Ab==\n"
    ),
    "Bitwarden's cipher string": (
        '{"encKeyValidation_DO_NOT_EDIT": "2.Qm2vLx8Rt4Nb7Yc1Hd6Fs0==|Jg5Tp8Qw2Ez4Ua9Vb3Xc8Zn6Mq1Lw5Rk0Vx7Yp2Ht4J=|d9Sg1Fc3Nb8Qm5Zw2Ab7Kx4Rt9Lm2Wq8Ez6Ty3Ui0=",'
        ' "salt": "Rk0Vx7Yp2Ht4Jd9Sg1Fc3Q==", "kdfIterations": 600000}\n'
    ),
    "Cisco's type 9 secret": "username ops privilege 15 secret 9 $9$Xq2Lm8Rt4Nb7Yc$Hd6Fs0Jg5Tp8Qw2Ez4Ua9Vb3Xc8Zn6Mq1Lw5Rk0Vx7Yp2\n",
    "an age recipient": "creation_rules:\n  - age: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n",
    "a request's id": "cf-ray: 8d2f1c9a7b3e4d50-FRA\nx-amz-cf-id: Qm2vLx8Rt4Nb7Yc1Hd6Fs0Jg5Tp8Qw2Ez4Ua9Vb==\n",
    "a file's digest": (
        "9b1d4e7a2c5f8e0b3d6a9c2f5e8b1d4a7c0f3e6b9d2a5c8f1e4b7d0a3c6f9e2b  weights-00001.bin\n"
        "3c6f9e2b5a8d1c4f7e0b3a6d9c2f5e8b1d4a7c0f3e6b9d2a5c8f1e4b7d0a3c6f *weights-00002.bin\n"
    ),
    "cat -v's ^@ between environ entries": "TERM=xterm^@LANG=de_DE.UTF-8^@CREDENTIALS_DIRECTORY=/run/credentials/web.service^@HOME=/srv\n",
    "a block of ciphertext": (
        "spec:\n  encryptedData:\n    SMTP_PASSWORD: AgR" + "Tq8vLz3Wm9Kx2Rn7Yb4Hc1Fd6Js0Pq5Vw8Ez2Ua7Lm4Nx9Rk3Tb6" * 5 + "\n"
    ),
    "a secret's address and an Azure reference": (
        '{"Smtp": {"Password": "@Microsoft.KeyVault(SecretUri=https://kv-mail.vault.azure.net/secrets/smtp/)",'
        ' "SecretUri": "https://kv-mail.vault.azure.net/secrets/smtp/7c1e"}}\n'
    ),
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_sixteen_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


def test_a_salt_alone_stays_a_secret():
    """A salt beside no key derivation's parameters (a signing salt) is still learnt."""
    assert "Wq8Ez6Ty3Ui0Rk2" in secrets_in(json.loads('{"auth_salt": "Wq8Ez6Ty3Ui0Rk2", "debug": false}'), SENSITIVE)


def test_a_key_under_another_block_is_learnt_beside_a_block_of_ciphertext():
    text = "spec:\n  encryptedData:\n    API_TOKEN: AgQ" + "x7" * 150 + "\nenv:\n  API_TOKEN: Lq8vTz3Wm9Kx2Rn7\n"
    assert "Lq8vTz3Wm9Kx2Rn7" in detect_secrets(text, SENSITIVE, fail_closed=True)


def test_a_key_of_a_digest_length_in_a_json_line_is_no_file_digest_inside_an_event():
    """Inside an event the escaped quotes read as spaces (`…  }`): no file's name follows the hex there."""
    text = '$ cat ~/.config/dataset-cli/auth.json\n{"login":"mira","key":"7c41d9e02fa35b8816ce04d7a93b2f5e"}\n$ \n'
    learnt_and_masked(text, ("7c41d9e02fa35b8816ce04d7a93b2f5e",), SENSITIVE)
