"""Round 12's detector classes (HOLDOUT11 spent), both ways, in shapes of their own (none copied from the corpus):
the word for password in more languages with their copulas, markup after a copula (HTML, a forum's BBCode), text
written as RTF's `\\uN?` escapes or with HTML's quote entities read as its characters; command lines by class (a
database client's login clause, a login line's `-w`, the `-p` of a verb that signs in or ships, a login verb's user
and password, the plaintext given to a hashing command, what a command that reads a secret prints, a cracker's
`--show`, ssh-keygen's `-P`/`-N`, a subshell of echos piped into a stdin reader), a webhook URL's path, a
`user:password` pair's password alone, a whole quoted argument ending in `?`, a comment naming a credential after a
value, the sibling of a learnt token in a call; and look-alikes never learnt (escapes of a clean text, a prompt
call, digests joined by colons, a tool's error message, a placeholder word at a value's end, a serial number, a
password's hash under its key or in its crypt shape, a key alone with its join, ciphertext, SQL host variables, the
passwd file, ports and words after `-p`, a comment that says public). Each found class is read the same alone and
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
    # The word for password in more languages, with their copulas (what it is for may stand between).
    "Chichewa, ndi": ("Mawu achinsinsi a rauta ndi Marigold2291\n", ("Marigold2291",)),
    "Tok Pisin, em": ("Paswot bilong wifi em Tundra7714, no ken lusim.\n", ("Tundra7714",)),
    "Cebuano, kay": ("Ang tago nga pulong sa wifi kay Pebble6630\n", ("Pebble6630",)),
    "Xhosa, ngu": ("Igama lokugqitha le-wifi ngu Harbor4417\n", ("Harbor4417",)),
    "Tongan label": ("Ko e lea fakapulipuli ki he wifi: Lagoon3358\n", ("Lagoon3358",)),
    "Guarani label": ("Ñe'ẽñemi wifi-pe g̃uarã: Jacaranda552\n", ("Jacaranda552",)),
    "Bashkir, inflected": ("Wi-Fi серһүҙе: Birch80412\n", ("Birch80412",)),
    "Kabyle label": ("Awal uffir n uselkim: Cedar77419\n", ("Cedar77419",)),
    "Tigrinya label": ("ቃለ-ምስጢር ናይ ራውተር: Walnut6023\n", ("Walnut6023",)),
    "Hawaiian with its okina": ("ʻŌlelo huna hou: Plumeria552\n", ("Plumeria552",)),
    # Markup after a copula.
    "BBCode after ke": ("Phasewete ya router ke [b]Juniper4471[/b]\n", ("Juniper4471",)),
    "HTML after ndi": ("<p>Mawu achinsinsi ndi <b>Sorrel9082</b></p>\n", ("Sorrel9082",)),
    # Text written as escapes, read as its characters.
    "RTF unicode escapes": (
        "{\\rtf1\\ansi\\uc1 \\u1087?\\u1072?\\u1088?\\u1086?\\u1083?\\u1100?: Anchor5518\\par}\n",
        ("Anchor5518",),
    ),
    "HTML quote entities": (
        "<pre>{&quot;db_password&quot;: &quot;Basil40377&quot;, &quot;port&quot;: 5432}</pre>\n",
        ("Basil40377",),
    ),
    # A database client's login clause.
    "USER … USING": ("db2 connect to SALES user etl_load using Quarry3390\n", ("Quarry3390",)),
    "IDENTIFIED BY": ('ALTER USER reporting IDENTIFIED BY "Falcon2284";\n', ("Falcon2284",)),
    "a Teradata logon": (".LOGON tdp1/loader,Heron5512;\n.QUIT;\n", ("Heron5512",)),
    "an Oracle connect string": ("sqlplus system/Oyster7719@XEPDB1 @setup.sql\n", ("Oyster7719",)),
    # A login line's -w after a user or a bind DN.
    "ldapwhoami -D … -w": ("ldapwhoami -x -D uid=ops,ou=people,dc=example -w 'Thistle448'\n", ("Thistle448",)),
    "a client's -U … -w": ("warehouse-sql -h dw1 -U dba -w Kestrel9021 -c 'select 1'\n", ("Kestrel9021",)),
    # The -p of a verb that signs in or ships.
    "deploy -p": ("paas-cli deploy --app web -p 'Meadow55?x' --branch main\n", ("Meadow55?x",)),
    "upload -p with a UUID": (
        "market-cli upload pkg-2.1.0.tgz -p 9f3c2a10-7b4e-4d2a-8c1f-5e6d7a8b9c0d\n",
        ("9f3c2a10-7b4e-4d2a-8c1f-5e6d7a8b9c0d",),
    ),
    # A login verb's user and password.
    "login user password +next": ("gameserver-cli +login builder Quarry33909 +update 740 +quit\n", ("Quarry33909",)),
    # The plaintext given to a hashing command.
    "openssl passwd": ("hash=$(openssl passwd -1 -salt ab 'Clover7730.')\n", ("Clover7730.",)),
    "mkpasswd": ("mkpasswd -m sha-512 Nettle3316\n", ("Nettle3316",)),
    "htpasswd -nbB": ("htpasswd -nbB admin 'Sorrel9082' >> .htpasswd\n", ("Sorrel9082",)),
    "slappasswd -s": ("slappasswd -h {SSHA} -s Spruce8847\n", ("Spruce8847",)),
    # What a command that reads a secret prints on the next line.
    "find-generic-password -w": ("$ security find-generic-password -s smtp-relay -w\nOtter50913\n$ exit\n", ("Otter50913",)),
    "cat of a token file, a prompt glued after": (
        "ops@box:~$ cat ~/.config/relay/api_token\nsaffron6620$ \n",
        ("saffron6620",),
    ),
    # A cracker's shown results.
    "john --show": ("$ john --show --format=crypt shadow.txt\nops:Heather3305:1001:1001::/home/ops:/bin/bash\n", ("Heather3305",)),
    # A webhook URL's path after hook(s).
    "a webhook URL": (
        'curl -X POST "https://open.example.cn/open-apis/bot/v2/hook/9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d" -d @msg.json\n',
        ("9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d",),
    ),
    # ssh-keygen's new and old passphrases.
    "ssh-keygen -N": ("ssh-keygen -t ed25519 -N 'tern.basalt.quiver' -f deploy_key\n", ("tern.basalt.quiver",)),
    # A subshell of echos piped into a command that reads a password on stdin.
    "echos piped into smbpasswd -s": (
        '(echo "Gravel2209"; echo "Gravel2209") | smbpasswd -s -a printer\n',
        ("Gravel2209",),
    ),
    # A user:password pair under a credential name: the password printed alone later is masked too.
    "a pair's password alone": (
        "$ pipeline-cli set --basic-creds svc_ci:Quarry33909\nverified Quarry33909 for svc_ci\n",
        ("Quarry33909",),
    ),
    # A whole quoted argument ending in ?.
    "a quoted argument ending in ?": (
        "remote-admin add https://hv.example.org ops@example.org 'Quartz88?'\n",
        ("Quartz88?",),
    ),
    # A comment naming a credential after the value.
    "a comment after the value": (
        "$llaveSHA1 = 'Kq8ZxR2mLp7VtN4bHs6Jd9FgWc3YaE5u'; // chiave segreta del POS\n",
        ("Kq8ZxR2mLp7VtN4bHs6Jd9FgWc3YaE5u",),
    ),
    # The sibling of a learnt token in a call.
    "the sibling of a learnt token": (
        'client = notify.Client("Rk4Xb9LmQ2vT-8zWc7Ny3P", "Hj4ab-9o2KSUKqzaeuPAxg")\n',
        ("Hj4ab-9o2KSUKqzaeuPAxg",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_twelve_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "RTF escapes of a clean text": (
        "{\\rtf1\\uc1 \\u1087?\\u1072?\\u1088?\\u1086?\\u1083?\\u1100? \\u1085?\\u1077? "
        "\\u1076?\\u1077?\\u1083?\\u1080?\\u1090?\\u1077?\\par}\n"
    ),
    "quote entities around masked values": (
        "<pre>{&#39;API_TOKEN&#39;: &#39;**********&#39;, &#39;HOST&#39;: &#39;db-7x2k.internal&#39;}</pre>\n"
    ),
    "a prompt call": "$cred = Get-Credential -Message 'Admin for backup'\n$pw = Read-Host -AsSecureString\n",
    "digests joined by colons": (
        "# hashes (user:rid:lmhash:nthash)\n"
        "backup:1009:aad3b435b51404eeaad3b435b51404ee:8846f7eaee8fb117ad06bdd830b7586c:::\n"
    ),
    "a tool's error message": "$ cat /srv/app/.db_password\ncat: /srv/app/.db_password: Permission denied\n",
    "a placeholder word at a value's end": "relay --token 3f9a1c2e-77b0-4d1e-9a8b-REPLACE_ME --once\n",
    "a serial number's abbreviation": 'MERCHANT_CERT_SN = "4f2a9c1e7b3d5f6a8c0e2b4d6f8a1c3e"\n',
    "a crypt hash under a password key": (
        "accounts:\n  - user: ops\n    password: $2b$12$" + "Qm7xZ2LkpRt8vQm2LxKp7mQ2zLxWq7mZ2xLpHq8mZx2LtTk7mQ2zL" + "\n"
    ),
    "a password's hash under its key": '{"user": "ops", "password_hash": "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZg=="}\n',
    "a key alone with its join": (
        '[General]\nUI\\Password_SHA512="@ByteArray(Qm7xZ2LkpRt8vQm2==:Kp7mQ2zLxWq7mZ2xLpHq8mZx2LtTk7mQ2zL==)"\n'
    ),
    "ciphertext under its name": (
        '{"algorithm": "AEAD_AES_256_GCM", "ciphertext": "'
        + "Qm7xZ2Lkp/Rt8vQm2LxKp7mQ2z+LxWq7mZ2xLpHq8mZx2LtTk7mQ2zL9aB3cD5eF7gH1iJ3kL5mN7oP9qR1sT3uV5wX7yZ9"
        + '", "nonce": "Zx8qLm2Rt4Vb"}\n'
    ),
    "SQL host variables": "EXEC SQL CONNECT TO :db-name USER :db-user USING :db-password END-EXEC.\n",
    "the passwd file": "$ cat /etc/passwd\nroot:x:0:0:root:/root:/bin/bash\n",
    "a port and a word after -p": "shipit deploy --region eu -p 8443\nbuildctl publish -p release\n",
    "prose around a slash": "Please connect to/from the gateway and sign in with your account.\n",
    "a comment that says public": 'APP_ID_SHA = "Kq8ZxR2mLp7VtN4bHs6Jd9FgWc3YaE5u"  # public app id, not a secret\n',
    "a sibling of another form": 'client = notify.Client("Rk4Xb9LmQ2vT-8zWc7Ny3P", "production-eu-west-1")\n',
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_twelve_look_alikes_teach_nothing(text):
    found = {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6}
    if "notify.Client" in text:
        found.discard("Rk4Xb9LmQ2vT-8zWc7Ny3P")  # the learnt token itself; its sibling is what this is about
    assert found == set()
