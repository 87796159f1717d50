"""Round 10's second part of detector classes (HOLDOUT9 spent), both ways: the word for password in more languages
(a name in another script inflected, what it is for before its colon, Esperanto's and Malagasy's `is`), a label's
colon then markup before its value (Word runs, HTML), `<name>`/`<key>` then `<value>`/`<string>`, a Perl hash
subscript, and command lines (curl's proxy user, ldappasswd, ZooKeeper's addauth, SQLCipher's key pragma, what
`pass show` prints first, a login's key flag, macOS's wireless join); and look-alikes never learnt (ciphertext
under its tool's mark, a PHC hash, a mark word among capitals, a vendor prefix cut at its stars, a call's opening,
a digest fanned out into URL folders, a store path's hash, a domain-prefixed annotation key). Each class is read
the same alone and inside an event (a shell tool call's command, a log's message).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.redaction import sensitive_set
from state.sensitive import is_sensitive
from tests.state.helpers import learnt_and_masked

SENSITIVE = sensitive_set(
    "api_key,password,passwd,passphrase,pwd,pass,pw,secret,token,auth,authorization,session,credential,private_key,"
    "şifre,şifrə,pasvorto,pasfhocal,facal_faire,ger_tremen,wachtwurd,teny_miafina,የይለፍ_ቃል,ਪਾਸਵਰਡ,పాస్‌వర్డ్,"
    "මුරපදය,وشەی_نهێنی,پټنوم,сырсөз,рамз".split(",")
)


FOUND = {
    "Irish, what it is before the colon": ("Pasfhocal sealadach: Curach41#x\n", ("Curach41#x",)),
    "Gaelic, hyphenated name": ("Facal-faire sealach: Bata7Qz2wm\n", ("Bata7Qz2wm",)),
    "Breton, hyphenated name": ("Ger-tremen ar sal: Kastell8Vq2\n", ("Kastell8Vq2",)),
    "Frisian, what it is for, then is": ("It wachtwurd fan it kantoar-wifi is Mar9kTq2Lw\n", ("Mar9kTq2Lw",)),
    "Malagasy dia": ("Ny teny miafina an'ny Wi-Fi dia Rano4Vx8Qp\n", ("Rano4Vx8Qp",)),
    "Azerbaijani possessive": ("Müvəqqəti şifrəniz: 7qLm2ZxR . Dəyişin.\n", ("7qLm2ZxR",)),
    "Turkish possessive": ("Yeni şifreniz: Kx82mQzLp\n", ("Kx82mQzLp",)),
    "Kyrgyz possessive": ("Сиздин убактылуу сырсөзүңүз: Tq4Wz8Lm2R. Эч кимге айтпаңыз.\n", ("Tq4Wz8Lm2R",)),
    "Tajik, what it is before the colon": ("Рамзи нави шумо: vQ8mLz2Kx4. Онро нагӯед.\n", ("vQ8mLz2Kx4",)),
    "Amharic": ("የቢሮው ዋይፋይ የይለፍ ቃል: Hq7ZmR2xLw\n", ("Hq7ZmR2xLw",)),
    "Punjabi": ("ਯੂਜ਼ਰਨੇਮ: ravi\nਪਾਸਵਰਡ: Tulip2288#\n", ("Tulip2288#",)),
    "Telugu with a zero-width non-joiner": ("ఆఫీస్ వైఫై పాస్‌వర్డ్: Zk4mQ8xTr2\n", ("Zk4mQ8xTr2",)),
    "Sorani": ("وشەی نهێنی سێرڤەرەکە: Lq8=Zm-2Kx\n", ("Lq8=Zm-2Kx",)),
    "Pashto": ("د وای فای پټنوم: Wq2Zx8mLt4\n", ("Wq2Zx8mLt4",)),
    "Word runs": (
        '<w:p><w:r><w:t xml:space="preserve">Password: </w:t></w:r><w:r><w:rPr><w:b/></w:rPr>'
        "<w:t>Qm8!zR2%Lx</w:t></w:r></w:p>\n",
        ("Qm8!zR2%Lx",),
    ),
    "Sinhala Word runs": (
        '<w:t xml:space="preserve">මුරපදය: </w:t></w:r><w:r><w:t>Rv7#kQ2mZx</w:t></w:r>\n',
        ("Rv7#kQ2mZx",),
    ),
    "HTML bold label": ("<p><b>Password:</b> Fennel83!q</p>\n", ("Fennel83!q",)),
    "HTML table cells": ("<tr><td>Password:</td><td>Wz4#Lq8mKt</td></tr>\n", ("Wz4#Lq8mKt",)),
    "Hadoop name then value": (
        "<property>\n  <name>javax.jdo.option.ConnectionPassword</name>\n  <value>Otter552?</value>\n</property>\n",
        ("Otter552?",),
    ),
    "property list key then string": ("<key>Password</key>\n<string>Mk2#vQ9zLr</string>\n", ("Mk2#vQ9zLr",)),
    "Perl hash subscript": ("$Self->{DatabasePw} = 'kR7mQ2zXw4Lp';\n", ("kR7mQ2zXw4Lp",)),
    "curl proxy user": (
        "curl -sS --proxy http://proxy:3128 --proxy-user jo:Vb8Qz2LmXw https://example.org/\n",
        ("Vb8Qz2LmXw",),
    ),
    "curl -U": ("curl -U ops:Hq2Zx7mLwR -x proxy:3128 https://example.org/\n", ("Hq2Zx7mLwR",)),
    "ldappasswd new and bind": (
        "ldappasswd -H ldaps://ldap -x -D cn=admin -w 'Qz8!mLx2Rt' -s 'Birch604.' uid=jo\n",
        ("Qz8!mLx2Rt", "Birch604."),
    ),
    "ZooKeeper addauth": ("[zk: zk-1:2181(CONNECTED) 0] addauth digest ops:Lm7Kq2ZxW9r\n", ("Lm7Kq2ZxW9r",)),
    "SQLCipher key of words": (
        "sqlite> PRAGMA key = 'basil walrus copper tundra';\n",
        ("basil walrus copper tundra",),
    ),
    "SQLCipher rekey": ('PRAGMA main.rekey = "Zq8mK2xLw7";\n', ("Zq8mK2xLw7",)),
    "pass show's first line": ("$ pass show infra/fw01\nQ%}=V.k_>~(8rTz\nlogin: root\n", ("Q%}=V.k_>~(8rTz",)),
    "gopass show": ("gopass show -o web/db\nHx7-Lq2mZ-Wr9\n", ("Hx7-Lq2mZ-Wr9",)),
    "a login's key flag": (
        "prefect cloud login -k pnu_Zq8mK2xLw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0Ep2U -w team/prod\n",
        ("pnu_Zq8mK2xLw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0Ep2U",),
    ),
    "macOS wireless join": (
        "networksetup -setairportnetwork en0 \"Studio 5G\" 'mango-heron-basalt-731'\n",
        ("mango-heron-basalt-731",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_ten_second_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "Turkish passwordless": "Şifresiz giriş: etkin\n",
    "a label then markup then a word": "<p><b>Password:</b> required</p>\n",
    "a label then an input": '<label>Password:</label><input type="password" name="pw">\n',
    "Hadoop name of no credential": "<name>dfs.replication</name>\n<value>3</value>\n",
    "a plist key of no credential": "<key>CFBundleName</key>\n<string>Notes</string>\n",
    "curl proxy without a user": "curl -x http://proxy:3128 https://example.org/\n",
    "ldapsearch scope": "ldapsearch -x -H ldap://ldap -b dc=example,dc=org -s sub -a never '(uid=jo)'\n",
    "PRAGMA of no key": "PRAGMA journal_mode = 'wal';\n",
    "pass ls": "$ pass ls\nPassword Store\n└── infra\n",
    "login without a key": "wandb login --relogin\n",
    "dotenvx ciphertext": 'DB_PASSWORD="encrypted:BPl0mRz9QwLx2Kt7Vb4Nc8Jd3Fh6Gs1Ay5Ep0Uo"\n',
    "EJSON box": '"password": "EJ[1:Qk2mZx8Lw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0Ep2=:Zq8mK2xLw7Rt4Vb9:Lq2mZ8xKw4Rt7Vb1Nc5Jd9=]"\n',
    "Cirrus ciphertext": "CODECOV_TOKEN: ENCRYPTED[9f2c4e8a1b7d3f6e0c5a9b2d8e4f1a7c3b6d0e9f2a5c8b1d4e7f0a3c6b9d2e5f8a1b]\n",
    "GoCD ciphertext": "<encryptedValue>AES:Qk2mZx8Lw7Rt4Vb9Nc3J==:Zq8mK2xLw7Rt4Vb9/Nc3Jd6Fh1Gs5A+y0Ep2U=</encryptedValue>\n",
    "a PHC hash": 'pwhash = "$balloon-sha256$v=1$s=1024,t=32$Qk2mZx8Lw7Rt4Vb9Nc3J==$Zq8mK2xLw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0Ep2UoX="\n',
    "a mark among capitals": '"password": "HIDDEN_DUE_TO_SECURITY_REASONS",\n',
    "a vendor prefix cut at its stars": '"helicone-auth": "Bearer sk-proxy-****",\n',
    "a repr's call opening": "Settings(db_password=SecretStr('**********'), jwt_secret=SecretBytes(b'**********'))\n",
    "a digest fanned out in a URL": (
        'url = "https://files.example.org/packages/d3/32/'
        '0f158a885fff6321d630eb9108391d06a9480a4c9020e950559e82aa4d9e/keyring-25.6.0-py3-none-any.whl"\n'
    ),
    "a Nix store path": "/nix/store/7af3g82fjnlwj4i1cc4wg8nrysm5fx6a-password-store-1.7.4\n",
    "a Kubernetes annotation": '{"annotations":{"authorization.k8s.io/reason":"RBAC: allowed by RoleBinding \\"a/b\\""}}\n',
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_ten_second_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


@pytest.mark.parametrize(
    "value",
    [
        "encrypted:BPl0mRz9QwLx2Kt7Vb4Nc8Jd3Fh6Gs1",
        "ENCRYPTED[9f2c4e8a1b7d3f6e0c5a]",
        "EJ[1:Qk2mZx8Lw7Rt4Vb9Nc3Jd6Fh1Gs5Ay0Ep2=:Zq8m]",
        "AES:Qk2mZx8Lw7Rt4Vb9Nc3J==:Zq8mK2xLw7Rt4Vb9/Nc3J=",
        "REDACTED_BY_SERVER",
        "sk-proxy-",
        "SecretStr(",
    ],
)
def test_ciphertext_and_marks_are_harmless(value):
    assert harmless_value(value, SENSITIVE)


@pytest.mark.parametrize("value", ["Encrypted-Qz8mK2", "HIDDEN_9fQ2", "sk-Zq8mK2xLw7Rt", "Summer(2024)x", "AES:short"])
def test_credentials_that_resemble_them_are_still_learnable(value):
    assert not harmless_value(value, SENSITIVE)


def test_a_domain_prefix_is_a_group_and_the_name_after_it_decides():
    assert not is_sensitive("authorization.k8s.io/reason", SENSITIVE)
    assert is_sensitive("vault.hashicorp.com/agent-inject-token", SENSITIVE)
    assert is_sensitive("Authorization", SENSITIVE)


def test_a_hex_folder_of_no_digest_length_is_still_random():
    text = "https://example.org/api/0f158a885fff6321d630eb9108391d06a9480a4c9020e950/data.json\n"
    assert detect_secrets(text, SENSITIVE, fail_closed=True)


_VALUE = st.text(alphabet="abcdefghkmnpqrstuvwxyzABCDEFGHKLMNPQRSTUVWXYZ23456789", min_size=4, max_size=12).map(
    lambda s: f"Q{s}7z#"
)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["pasfhocal", "wachtwurd", "ਪਾਸਵਰਡ", "پټنوم", "Password", "şifre"]),
    qualifier=st.sampled_from(["", " sealadach", " nua"]),
    value=_VALUE,
)
def test_a_name_then_what_it_is_then_a_colon_then_its_value(name, qualifier, value):
    learnt_and_masked(f"{name}{qualifier}: {value}\n", (value,), SENSITIVE)


@settings(max_examples=60, deadline=None)
@given(
    label=st.sampled_from(["Password", "Pasfhocal", "Token"]),
    markup=st.sampled_from(["</b> ", "</td><td>", " </w:t></w:r><w:r><w:t>", "</span> <code>"]),
    value=_VALUE,
)
def test_a_label_then_markup_then_its_value(label, markup, value):
    learnt_and_masked(f"<p>{label}:{markup}{value}</p>\n", (value,), SENSITIVE)


@settings(max_examples=60, deadline=None)
@given(
    command=st.sampled_from(
        [
            "curl --proxy-user ops:{v} https://example.org/",
            "ldappasswd -x -D cn=admin -w {v} uid=jo",
            "addauth digest ops:{v}",
            "PRAGMA key = '{v}';",
            "$ pass show infra/db\n{v}",
            "networksetup -setairportnetwork en0 Office '{v}'",
        ]
    ),
    value=_VALUE,
)
def test_command_lines_that_carry_a_password(command, value):
    learnt_and_masked(command.format(v=value) + "\n", (value,), SENSITIVE)
