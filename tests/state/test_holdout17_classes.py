"""Round 17's second detector classes (HOLDOUT17 spent), both ways, in shapes of their own (none copied from the corpus):
tokens and command lines (a vendor's prefix before a token of syllables, a command written as an exec array,
MariaDB's clients, a credential file given as a process substitution, Java's key store passwords, a SIP or XMPP
server's tool adding a user, a client's login method given literals, a monitoring check's ping link, what a command
creating a token prints in a table), files and tables (what `cat` prints of a file named for a login or given to a
password flag, a passphrase of words too; a fixed-width table's credential column), names and prose (password's
abbreviations, Romanian's `e`); and look-alikes never learnt (a scheme before a reference, code reading the
environment, a secret manager's reference, a PHC string, a cloud KMS's ciphertext, a GnuPG key id, a wallet's public
key and address, a password manager's name, a name ending in a digest, a prompt's variable, a consent cookie, an
ARN's resource type, an authorization request's public parameters, a style sheet's selector, an exec array passing
a variable's name, a .NET type's name). Each found class is read the same alone and inside an event (a shell tool
call's command, a log's message).
"""

from __future__ import annotations

import pytest
from django.conf import settings

from state.detection import detect_secrets
from state.redaction import sensitive_set
from tests.state.helpers import learnt_and_masked

# The vocabulary that ships.
SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)


FOUND = {
    # Tokens and command lines.
    "a vendor's prefix before a token of syllables": (
        "telemetry:\n  headers:\n    x-acme-team: qzk_7mopal3vureni9sowbaxt2lidomu4fe8ravo5kite\n",
        ("qzk_7mopal3vureni9sowbaxt2lidomu4fe8ravo5kite",),
    ),
    "a command written as an exec array": (
        'healthcheck:\n  test: ["CMD", "mysqladmin", "status", "-h", "127.0.0.1", "-uprobe", "-pKr4vTz8mWq"]\n  retries: 3\n',
        ("Kr4vTz8mWq",),
    ),
    "MariaDB's own client": ("$ mariadb -h db.internal -pTovRel9wusk shop < dump.sql\n", ("TovRel9wusk",)),
    "a credential file as a process substitution": (
        "restic -r sftp:nas:/srv/restic backup /etc --password-file <(printf '%s' 'Ulmo7-brisk-Tave')\n",
        ("Ulmo7-brisk-Tave",),
    ),
    "Java's key store passwords": (
        "jarsigner -keystore upload.jks -storepass 'Harbor2291' -keypass Quarry8810 app-release.aab upload\n",
        ("Harbor2291", "Quarry8810"),
    ),
    "a SIP or XMPP server's tool adding a user": (
        "# new desk phones\nopensipsctl add 4410@sip.example.net Vq8mTz2Lkw\nejabberdctl register mika chat.example.org Pl4nk-Rive9\n",
        ("Vq8mTz2Lkw", "Pl4nk-Rive9"),
    ),
    "a client's login method given literals": (
        "ftp = FTP('files.example.org')\nftp.login('deploy', 'Corvid_4417')\nftp.cwd('/incoming')\n",
        ("Corvid_4417",),
    ),
    "a monitoring check's ping link": (
        "*/15 * * * * /opt/sync.sh && curl -fsS https://status.example.net/ping/3f8e2a17-9c4d-4b6e-a1f0-7d25c8e9b4a3 >/dev/null\n",
        ("3f8e2a17-9c4d-4b6e-a1f0-7d25c8e9b4a3",),
    ),
    "what a command creating a token prints in a table": (
        "$ hubctl token add ci-runner\n│ key    │ value                                │\n"
        "│ value  │ 5b7c2e91-8d4f-4a3b-9e6c-1f0a2d3b4c5e │\n",
        ("5b7c2e91-8d4f-4a3b-9e6c-1f0a2d3b4c5e",),
    ),
    # Files and tables.
    "a passphrase of words in a file named for one": (
        "$ cat ~/.config/unlock/passphrase.txt\nheron Basalt quiver tundra4\n$ unlockd --keyfile ~/.config/unlock/passphrase.txt\n",
        ("heron Basalt quiver tundra4",),
    ),
    "a file named for a login, a user then its password": (
        "$ sudo cat /etc/openvpn/home.auth\nnadia\nkestrel.moor.19\n$ sudo systemctl restart openvpn-client@home\n",
        ("kestrel.moor.19",),
    ),
    "a file given to a password flag": (
        "$ cat /run/keys/node.key\nQx7-vault-Plum\n$ validator --password /run/keys/node.key --rpc\n",
        ("Qx7-vault-Plum",),
    ),
    "a fixed-width table's credential column": (
        "LOGIN     HOST          PASSWD        ROLE\n--------  ------------  ------------  ------\n"
        "svc_etl   db-07         Rk8wQz3mTv    batch\nsvc_bi    db-08         Lm2pXc9vNt    read\n",
        ("Rk8wQz3mTv", "Lm2pXc9vNt"),
    ),
    # Names and prose.
    "password's abbreviations": ("[Database]\nDbUserPswd=Mt7zQ2vLr9\nDbUser=etl\n", ("Mt7zQ2vLr9",)),
    "Romanian's copula after its word": ("Andrei: parola de la router e Mesteacan88\n", ("Mesteacan88",)),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_seventeen_second_classes_are_learnt_and_masked_alone_and_in_events(text, values):
    learnt_and_masked(text, values, SENSITIVE)


NOT_FOUND = {
    "a scheme before a reference": 'curl -H "Authorization: Token ${{ secrets.DEPLOY_TOKEN }}" https://api.example.org/deploy\n',
    "code reading the environment": (
        'let key = std::env::var("STRIPE_KEY").expect("set STRIPE_KEY");\n'
        'token = ENV.fetch("API_TOKEN", nil)\nsecret = System.fetch_env!("APP_SECRET")\n'
    ),
    "a secret manager's reference": 'DB_PASSWORD="op://Infra/Postgres main/password"\nci_token: ref+vault://secret/ci#token\n',
    "a PHC string, padded": (
        'password: "$pbkdf2-sha512$i=210000,l=64$Qm9vdHN0cmFwU2FsdA==$Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5eg=="\n'
    ),
    "a cloud KMS's ciphertext": (
        "$ aws kms encrypt --key-id alias/ci --plaintext fileb://k.txt --output text --query CiphertextBlob\n"
        "AQIBAHjRt2x9Lq0Pz4Vb8Nw3Ks7Ym1Hd5Fc2Gj6Tr0Ue9Xa4Qo8Wi3Zl7Mn2Bv5Cx1Sd6Fg9Hj0Kl3Pq8Wz2Er5Ty7Ui1Op4As6Df==\n"
    ),
    "a GnuPG key id in lower case": "sub   rsa4096/5e7a1c9d2b3f4a60 2025-01-01 [E] [expires: 2027-01-01]\n",
    "a wallet's public key and address": (
        "watch-only account:\n"
        "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs\n"
        "deposit to tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx\n"
    ),
    "a password manager's name in another language": 'Ana: el acceso está en Bitwarden "Oficina", no lo pongo aquí.\n',
    "a name ending in its content's digest": (
        "Cache saved with key: gradle-wrapper-linux-4f1c9e7a2b3d5c6e8f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e\n"
    ),
    "a prompt's variable then the next command": '$ read -s -p "Vault token: " VAULT_TOKEN; export VAULT_TOKEN\n',
    "a consent cookie of encoded words": "set-cookie: prefs=functional%3Dtrue%26ads%3Dfalse; Path=/; SameSite=Lax\n",
    "an ARN's resource type": '"ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:billing-Ab12Cd|9b1f0c2e-3d4a-4e5f-8a6b-7c8d9e0f1a2b"\n',
    "an authorization request's public parameters": (
        "https://id.example.com/authorize?client_id=app&state=Zq8vL2mXp4Tn6Rk1Wc9Hy3&code_challenge=Hq3zW8vL1xTn5Rk9Pc2My7Fd4Gs6Bj0Ae8Ui3Oo1Yt5"
        "&code_challenge_method=S256&redirect_uri=https%3A%2F%2Fapp.example.com%2Fcb\n"
    ),
    "a style sheet's selector": ".header_4c8e1f2a9b7d { display: flex; }\n.nav_7b2d9e4f1a3c, .nav_7b2d9e4f1a3c { gap: 4px; }\n",
    "an exec array passing a variable's name": (
        '"args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/acme/tool@sha256:9c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d"]\n'
    ),
    "a .NET type's name in a fixed-width listing": (
        "PS> Get-StoredCredential -Target relay\nUserName         Password\n--------         --------\nsmtp-relay       System.Security.SecureString\n"
    ),
    "a ping link without a key": "curl -fsS https://api.example.org/ping/ && echo up\n",
    "a created token's table row of a name": "$ acmectl token create deploy-bot\n| name   | deploy-bot |\n| scope  | deploy     |\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_seventeen_second_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


def test_a_wallets_private_extended_key_is_still_learnt():
    """The public side (`xpub`, `zpub`) is shared to be paid; the private side (`xprv`) spends."""
    key = "xprv9s21ZrQH143K3QTDL4LXw2F7HEK3wJUD2nW2nRk4stbPy6cq3jPPqjiChkVvvNKmPGJxWUtg6LnF5kejMRNNU3TGtRBeJgk33yuGBxrMPHi"
    assert key in detect_secrets(f"cold storage root: {key}\n", SENSITIVE, fail_closed=True)


def test_a_login_method_given_variables_teaches_nothing():
    """Only literals are a login's values; variables name where they are kept."""
    text = "smtp.login(settings.MAIL_USER, settings.MAIL_PASSWORD)\nftp.login(user, passwd)\n"
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()
