"""Credentials that no `name: value` join announces (state/freetext.py): `user / password` logins, the password
arguments of common tools, what expect typed at a password prompt, and the credential nouns of round 7 (psk,
mnemonic, seed and recovery phrases, recovery and backup codes). Both directions: found and masked, and the
look-alikes (ratios, paths, regions, host names, page trails) stay readable.
"""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import KnownSecrets, redact_text, sensitive_set

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('"msg": "Relay login for smtp.example.org:587 is relay@example.org / Quill.Marsh.Tundra.4471"', "Quill.Marsh.Tundra.4471"),
        ("wifi for the offsite, for anyone early:\nLobby-Guest / Cedar/ember/Orbit/lantern/27\n[09:15] ok", "Cedar/ember/Orbit/lantern/27"),
        ("Sign in to the NAS as backup / hazel-copper-violet-3310 until Friday.", "hazel-copper-violet-3310"),
        ("snmpget -v3 -l authPriv -u mon -a SHA -A 'Fjord:ember:Lark:81' -x AES -X 'Q9.zt:R4%{p' 10.0.0.1 sysName.0", "Fjord:ember:Lark:81"),
        ("snmpget -v3 -l authPriv -u mon -a SHA -A 'Fjord:ember:Lark:81' -x AES -X 'Q9.zt:R4%{p' 10.0.0.1 sysName.0", "Q9.zt:R4%{p"),
        ("$ zip -r -P Kx8vR2qLm backup.zip ./exports", "Kx8vR2qLm"),
        ("$ 7z a -pTq3Lx9Vw2 logs.7z /var/log/app", "Tq3Lx9Vw2"),
        ("$ smbclient //fs01/share -U 'backup%Wq7Lx2Rv9'", "Wq7Lx2Rv9"),
        ("$ wpa_passphrase \"Lab-5G\" 'osprey-lichen-garnet-612' | sudo tee -a /etc/wpa_supplicant.conf", "osprey-lichen-garnet-612"),
        ("network={\n\tssid=\"Lab-5G\"\n\t#psk=\"osprey-lichen-garnet-612\"\n}", "osprey-lichen-garnet-612"),
        ('Enter passphrase (empty for no passphrase):\nsend: sending "walnut ember tulip 5520\\r" to { exp4 }', "walnut ember tulip 5520"),
        ('{"mnemonic": "abandon ability able about above absent absorb abstract"}', "abandon ability able about above absent absorb abstract"),
        ("vault unseal phrase: thicket.harbor.quartz.8812", "thicket.harbor.quartz.8812"),
        ("backup_code=58213-90427", "58213-90427"),
    ],
)
def test_unjoined_credentials_are_learnt_and_masked(text: str, value: str) -> None:
    found = detect_secrets(text, SENSITIVE)
    assert value in found, (text, found)
    assert value not in redact_text(text, SENSITIVE, known=KnownSecrets.of(found))


@pytest.mark.parametrize(
    "text",
    [
        "users / sessions ratio 12 / 2024-10 across accounts / regions",
        "the user count / totals2024 fell after the login page / dashboard2 move",
        "user / api.v2.example.com and accounts / eu-west-1 / us-east-2",
        "login flow: src/auth/views.py / templates/login.html / static/app.js",
        "wifi throughput 480 / 866 Mbps on the 5G / 2.4G bands",
        "Zip the logs with `zip -r logs.zip ./logs` and send them",
        "openssl x509 -in cert.pem -noout -text",
    ],
)
def test_login_and_tool_look_alikes_stay_readable(text: str) -> None:
    assert detect_secrets(text, SENSITIVE) == set(), text


@pytest.mark.parametrize(
    ("payload", "value"),
    [
        ({"stdout": "$ ls\nsnmpwalk -v3 -l authPriv -u mon -A 'Fjord:ember:Lark:81' 10.0.0.1"}, "Fjord:ember:Lark:81"),
        ({"stdout": "$ cd /srv\nzip -r -P Kx8vR2qLm backup.zip ./exports"}, "Kx8vR2qLm"),
        ({"text": "morning!\nwifi for the offsite:\nLobby-Guest / Cedar/ember/Orbit/lantern/27"}, "Cedar/ember/Orbit/lantern/27"),
    ],
)
def test_an_event_whose_command_or_login_follows_a_line_break_is_learnt(payload: dict, value: str) -> None:
    """The gate reads the serialized event, where a line break is the escape `\\n` right before the next word."""
    from state.secrets import event_secrets

    assert value in event_secrets("tool.call", "worker", payload, SENSITIVE)


def test_a_line_of_repeated_command_words_is_read_once_per_line(monkeypatch):
    """50,000 `mysql` on one line used to make the flag regex scan on from each of them (minutes): the command's
    word is now looked for once per line, and a flag after its first occurrence is still found."""
    import dataclasses

    from state import freetext

    searches = []
    mysql = freetext.COMMANDS[0]
    assert mysql.sign == "mysql"

    class Counting:
        def search(self, text, *args):
            searches.append(args)
            return mysql.word.search(text, *args)

    monkeypatch.setattr(freetext, "COMMANDS", (dataclasses.replace(mysql, word=Counting()),))
    text = "mysql " * 50000 + "-pQz8Lr2Wv\nmysql --password Rt5Lq9Xw2 db"
    assert {"Qz8Lr2Wv", "Rt5Lq9Xw2"} <= {text[s:e] for s, e in freetext._cli_spans(text)}
    assert len(searches) == 3  # the first line, the second line, and the end


def test_a_text_with_a_lone_surrogate_is_read_like_any_other():
    """Rust's automaton takes UTF-8 only; a lone surrogate (a file decoded with surrogateescape) keeps its offset."""
    text = "\udcff log: password: Zq8!Lr2Wv9 \ud800"
    assert "Zq8!Lr2Wv9" in detect_secrets(text, SENSITIVE)
    assert "Zq8!Lr2Wv9" not in redact_text(text, SENSITIVE)
