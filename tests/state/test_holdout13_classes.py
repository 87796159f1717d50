"""Round 14's detector classes (HOLDOUT13 spent), both ways, in shapes of their own (none copied from the corpus):
more ways to say "the password is" (Estonian's `on`, Maltese `hija`, Irish `ná`, Zulu `ithi`, English's contracted
`password's`, six words of what it is for, the definite `passordet`, `palavra-passe`), a value before a verb-final
language's copula (Urdu `ہے`, Hindi `है`, Persian `است`, Amharic `ነው`, Turkish `-dir`), a passphrase after a
label's colon, mysql's `-p'…'`, LDIF's `::`, a two-column CSV row, a CSV header with `?`, `WPA2 Key:`, the wifi said
for its password, a password set `to` its value, a quoted-printable mail body; and look-alikes never learnt (prose
after those copulas, a remark in a credential column, a network's name, a setting's schedule, a key named `pub_key`,
a GnuPG key id, a dotted import path, a scrubbing rule's `@name`). Each found class is read the same alone and
inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships (the other languages' words are part of the classes under test).
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # More copulas and names.
    "Estonian on": ("Uus parool on Rk7mWq2Zt, palun muuda.\n", ("Rk7mWq2Zt",)),
    "Maltese hija": ("Il-password tal-printer hija Qz4-vNm8Ltw\n", ("Qz4-vNm8Ltw",)),
    "Irish focal faire … ná": ("Is é an focal faire don ríomhaire ná Pv6_kLx.9Mq\n", ("Pv6_kLx.9Mq",)),
    "Zulu ithi": ("Iphasiwedi yekhompyutha ithi Hn3w-Zq8Rkt\n", ("Hn3w-Zq8Rkt",)),
    "English password's, words": ("ok so the password's walrus.pebble.cactus, all lower case\n", ("walrus.pebble.cactus",)),
    "six words before is": ("Die wagwoord vir ons ou kantoor se netwerk is Brakwater55, onthou\n", ("Brakwater55",)),
    "Norwegian passordet": ("passordet til skriveren er walrus-pebble-cactus — ikke del\n", ("walrus-pebble-cactus",)),
    "Portuguese palavra-passe": ("A palavra-passe do portal é Tm8.vQz-4Kp. Obrigado\n", ("Tm8.vQz-4Kp",)),
    # A verb-final language's copula after the value.
    "Urdu ہے": ("دفتر کا پاس ورڈ walrus_pebble_cactus ہے\n", ("walrus_pebble_cactus",)),
    "Hindi है": ("ऑफिस का पासवर्ड Zq7vKm3Lp है\n", ("Zq7vKm3Lp",)),
    "Persian است after two words": ("رمز عبور جدید شما lantern_moss_quill است.\n", ("lantern_moss_quill",)),
    "Amharic ነው": ("የቢሮ የይለፍ ቃሉ quill.lantern.moss ነው\n", ("quill.lantern.moss",)),
    "Azerbaijani -dir": ("Printerin şifrəsi quill.lantern.moss-dur\n", ("quill.lantern.moss",)),
    # A passphrase after a label's colon.
    "Mongolian label: words": ("Таны шинэ нууц үг: walrus.pebble.cactus\n", ("walrus.pebble.cactus",)),
    "Armenian ՝ words": ("Գաղտնաբառը՝ quill.lantern.moss\n", ("quill.lantern.moss",)),
    # Command lines and tables.
    "mysql -p'…'": ("mysqldump -ubackup -p'Tundra44!x' --all-databases > all.sql\n", ("Tundra44!x",)),
    "LDIF ::": ("dn: uid=svc,ou=people,dc=example\nuserPassword:: UXo3bVdrMnZOcA==\n", ("UXo3bVdrMnZOcA==",)),
    "a two-column CSV row": ('"Setting","Value"\n"SMTP Password","vK8q_Lz.3Wn"\n"Port","587"\n', ("vK8q_Lz.3Wn",)),
    "a CSV header with a question's mark": (
        "User,Initial password,Sent?\nana,Qw3rt-Zx9,yes\nbo,Mn5bv-Lk2,no\n",
        ("Qw3rt-Zx9", "Mn5bv-Lk2"),
    ),
    # Wireless.
    "WPA2 Key:": ("Router label\nSSID: HOME-7731\nWPA2 Key: QMZT4KXR7WNP\n", ("QMZT4KXR7WNP",)),
    "the wifi said for its password": ("btw the wifi upstairs is Marigold8812 if you need it\n", ("Marigold8812",)),
    # A password set to its value.
    "set … to": ("I reset the root password for the NAS to quill.lantern.moss yesterday\n", ("quill.lantern.moss",)),
    # A quoted-printable mail body.
    "quoted-printable": (
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
        "Le mot de passe pour l'=C3=A9quipe est : Vr4k_Tq9Mz\n",
        ("Vr4k_Tq9Mz",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_fourteen_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "prose after Estonian on": "Parool on liiga lühike.\n",
    "prose after a verb-final copula": "पासवर्ड बदलना ज़रूरी है\n",
    "a word before Turkish -dir": "Şifresi gizlidir\n",
    "prose after a label's colon": "нууц үг: see the vault\n",
    "a remark in a credential column": "User,Initial password,Sent?\nana,(given in person),yes\n",
    "a two-column CSV row of a word": '"Setting","Value"\n"Password","Required"\n',
    "the wifi's own name": "the wifi network is Office-5G2 and the guest one is Guest-2G1\n",
    "the wifi said for its state": "the wifi in the kitchen is down again\n",
    "a setting's schedule after set … to": "We set the password policy to rotate every 90 days\n",
    "mysql's -p alone": "mysql -uroot -p -h 127.0.0.1 shop\n",
    "a key named public by its short form": '[live]\n  live_mode_pub_key = "pk_live_9Xq2Lm4Nz7Rt1Vb8Wc3Yd6Kp0Hs5JfW2e"\n',
    "a GnuPG key id": "sec   rsa4096/9A1C22E07F3B5D68 2025-02-11 [SC]\nssb   cv25519/4E7B1D90C2A8F355 2025-02-11 [E]\n",
    "a dotted import path": 'PASSWORD_HASHERS = ["myproject.auth.hashers.Scrypt2PasswordHasher"]\n',
    "a scrubbing rule's @name": '{"_meta": {"token": {"": {"rem": [["@password", "x", 0, 40]]}}}}\n',
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_fourteen_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()
