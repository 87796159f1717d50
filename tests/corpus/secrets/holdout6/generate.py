"""The HOLDOUT6 part of the secret corpus: a sixth blind part, written in round 8 after HOLDOUT to HOLDOUT5.

Written blind: its author never read the detector, its rules, its docs, its tests or its figures, and no
document was run through a detector or changed after one. Every document copies what a real tool, config
file, log, agent, terminal session, person or trace writes, with tools, vendors and formats the earlier
parts do not use:

- cloud CLIs: an interactive `aws configure` session, `az login --service-principal -p` (an Entra client
  secret, `Q~` form), doctl's config.yaml with `auth-contexts`, Scaleway's scw config, `ibmcloud login
  --apikey` in a CI log, an OCI config `pass_phrase`;
- database clients and SQL: pg_service.conf, `clickhouse-client --password`, `cypher-shell -p` (Neo4j),
  Oracle SQL*Plus `IDENTIFIED BY`, an SSMS `CREATE LOGIN ... WITH PASSWORD=N'...'` (with a doubled quote),
  `psql -a` echoing `ALTER ROLE ... PASSWORD`, a pgbouncer userlist.txt, zabbix_server.conf;
- registries, CI and containers: ~/.gem/credentials, NuGet.config `ClearTextPassword`, `poetry config
  pypi-token.pypi`, .yarnrc.yml `npmAuthIdent`, `helm repo add --password`, a gitlab-runner config.toml,
  `skopeo copy --dest-creds`, a Harbor robot-account response, `kubectl config set-credentials` with a
  Rancher token;
- messaging, mail and Windows: a NATS .creds file, `mosquitto_pub -P`, .msmtprc (a spaced Gmail app
  password), .fetchmailrc, `cmdkey /pass:`, `schtasks /RP`, unattend.xml, an ASP.NET `<machineKey>`;
- protocols and network: LDIF `userPassword::` (base64) fed to ldapadd, a SoapUI WS-Security
  UsernameToken, a pino log of a GraphQL SignIn's variables, a Go gRPC metadata map with an ES256 JWT,
  Asterisk pjsip.conf, strongSwan ipsec.secrets, HAProxy `insecure-password`;
- observability and payments: Splunk HEC, Rollbar, Fluent Bit `HTTP_Passwd`, Razorpay (Node), PayPal
  (Python), Mollie (PHP), Plaid (a VS Code REST Client .http file), Adyen (C#);
- AI vendors and agents: OpenRouter through the OpenAI SDK, the `llm` CLI keys.json (Perplexity), Voyage,
  a Cursor mcp.json `env` block (Tavily), a LangChain AgentExecutor verbose trace (DeepSeek), an aider chat
  history (xAI), a smolagents step log (Deepgram), a Continue config.yaml (Fireworks), an R Markdown chunk;
- SaaS: Jira (an Atlassian API token), HubSpot from PowerShell, `contentful space export`, a Dropbox REPL,
  a Mapbox secret token beside its public one, `snyk config set api=`;
- self-hosted apps and provisioning: Symfony .env.local, Drupal settings.php, Mastodon .env.production,
  gitlab.rb (an SES SMTP password), Nextcloud config.php, Home Assistant secrets.yaml, Synapse
  homeserver.yaml, code-server, PowerDNS, kickstart `rootpw --plaintext`, cloud-init `chpasswd`, a Packer
  HCL `winrm_password`, an s3cmd .s3cfg (DigitalOcean Spaces);
- archives and signing: `7z -p`, `gpg --passphrase`, `BORG_PASSPHRASE`, `keytool -storepass -keypass`,
  `xcrun altool -p` (an app-specific password);
- people: prose in Russian (Telegram, "Пароль"), Turkish (e-mail, "Geçici şifre"), Vietnamese (Zalo,
  "Mật khẩu"), Hindi (WhatsApp export, "पासवर्ड"), Swedish (Slack, "Lösenord") and Czech (a ticket, "Heslo:"
  with the value on the next line), a wallet's twelve-word recovery seed phrase, "The passphrase is ..."
  in an e-mail, a reStructuredText grid table cell, a TSV paste from a spreadsheet, a shell heredoc
  writing an env file (Axiom), a `+DB_PASSWORD=` line in a git diff, a Firefox logins.csv export, a Gerrit
  HTTP password in a `git config url.insteadOf`.

Each document plants one or two values; every value appears verbatim in its text and is 8 characters or
more. Value forms: vendor prefixes none of the earlier parts use (dop_v1_, rubygems_, pypi-AgEI, glrt-,
SUA NKEY seeds, sk-or-v1-, pplx-, pa-, tvly-dev-, xai-, fw_, ATATT3xFfGF0, pat-eu1-, CFPAT-, sl.B, sk.eyJ,
live_, AQE, xaat-, an SES SMTP password starting with B, an Entra secret with `Q~`), hex (lower and upper
case: Rollbar, Deepgram, Plaid, Symfony APP_SECRET, Mastodon SECRET_KEY_BASE, machineKey, code-server),
base64 (an AWS secret key, an IPsec PSK, a Borg passphrase, Nextcloud's secret, the LDIF password),
base64url (IBM Cloud, Drupal hash_salt, VAPID private key, a PayPal secret), base32 (the NKEY seed), UUIDs
(Scaleway, Splunk, Snyk), a JWT (ES256), people's passwords (a word, digits, a mark; or two words and
digits), generated passwords with symbols, short passwords of 8 to 12 letters and digits, passphrases of
words (spaces, dots, dashes, underscores), a twelve-word seed phrase, a Gmail app password in four spaced
groups and an Apple app-specific password in four dashed groups, and values with quotes as written: a
T-SQL `''` and a CSV `""` (planted with the doubled quote, as the text has it).

Decisions: usernames, e-mail addresses, client ids and app ids (PayPal client id, Azure appId, Plaid
client_id, Razorpay `rzp_live_` key_id), account and tenant ids, AWS access key ids (also as an SES SMTP
user name), Scaleway and DigitalOcean Spaces access keys, OCI OCIDs and key fingerprints, a Rancher token's
name part (the planted value is the secret after the colon), Contentful space ids and NATS public nkeys
are identifiers, not credentials; a NATS user JWT is not a secret (the NKEY seed beside it is, and is
planted); a Mapbox `pk.` token and a VAPID public key are public by design; password hashes (md5 and
SCRAM in pgbouncer and pg_authid, `$6$` crypt in HAProxy and kickstart, mosquitto `$7$`) are not
credentials; a WS-Security nonce, a `publicKeyToken`, an SSH public key and a bitcoin receive address are
public; for a URL or a `user:password` pair the planted value is the password; a base64 encoding of a
password (LDIF `::`) is planted as written; a wallet seed phrase is a credential; no document holds a
credential value beside the one or two it plants.

The clean documents hold no credential but plenty of look-alikes: AWS access key ids and ARNs, Azure app
ids and a client-secret hint, SCRAM verifiers, NuGet content hashes, image digests, NATS public nkeys, a
`$6$` hash with `rootpw --lock`, `machineKey` AutoGenerate, an LDIF export with a base64 photo, LangChain
token counters, an mcp.json with `${input:...}` references, Razorpay payment and order ids, a Mapbox public
token, a diff moving a masked `********` password to a `_FILE` reference, a Turkish password policy with a
marked example, a diceware word list, mosquitto hashes, GPG key ids and keygrips, HAProxy counters, a
T-SQL Windows login with a `<new password here>` template, Synapse `*_path` settings, Splunk event ids and
a CycloneDX SBOM with hashes.

SEED = 314159. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then
the clean ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 314159

_ALNUM = string.ascii_letters + string.digits
_LOWER_NUM = string.ascii_lowercase + string.digits
_UPPER_NUM = string.ascii_uppercase + string.digits
_HEXDIGITS = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_URLSAFE = _ALNUM + "-_"
_B64CHARS = _ALNUM + "+/"

_WORDS = tuple(
    """
    acorn bramble chestnut driftwood eclipse fjord gravel hazel islet jasper kelp lichen magpie nectar
    oxbow parsnip quill rhubarb sorrel tamarind umber vellum wicker yarrow zinnia almond beacon cinder
    dormouse estuary flint garnet heron indigo jackdaw kestrel linden mortar nettle osprey pumice
    quarry rowan shingle thimble upland vesper wren
    """.split()
)
# A few everyday words a wallet's word list also has; a seed phrase draws twelve of them.
_SEED_WORDS = tuple(
    """
    abandon absorb acoustic adjust afraid agent alley amused ancient angle ankle armor arrow
    autumn awkward bacon badge barrel basket bench bicycle blanket bounce brave bronze bubble
    cabin cactus canal carbon casual cereal chalk cherry circle clever cluster coconut comic
    coral cotton cradle crater crisp cruise cushion dawn deposit desert devote dinner dolphin
    drama eager elbow ember enrich equip estate evolve exotic fabric fancy fatigue feather fiber
    glimpse goose gospel harvest hobby hollow humble insect island ivory jungle kidney kitten
    ladder lemon liquid lobster lumber marble meadow mimic muffin napkin noble oyster paddle
    pepper pioneer plunge pudding quantum rabbit ranch revive ribbon saddle salmon scatter
    """.split()
)

CredentialBuilder = Callable[[random.Random], tuple[str, tuple[str, ...]]]
CleanBuilder = Callable[[random.Random], str]
_CREDENTIAL: list[tuple[str, CredentialBuilder]] = []
_CLEAN: list[tuple[str, CleanBuilder]] = []


def _credential(name: str) -> Callable[[CredentialBuilder], CredentialBuilder]:
    def register(fn: CredentialBuilder) -> CredentialBuilder:
        _CREDENTIAL.append((name, fn))
        return fn

    return register


def _clean(name: str) -> Callable[[CleanBuilder], CleanBuilder]:
    def register(fn: CleanBuilder) -> CleanBuilder:
        _CLEAN.append((name, fn))
        return fn

    return register


def _t(template: str, **values: str) -> str:
    """Dedent a template and put each value in place of its `⟨name⟩` marker."""
    text = textwrap.dedent(template).strip("\n") + "\n"
    for key, value in values.items():
        text = text.replace(f"⟨{key}⟩", value)
    assert "⟨" not in text, text
    return text


def _draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _hx(rng: random.Random, n: int) -> str:
    return _draw(rng, _HEXDIGITS, n)


def _b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _b64url(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _num(rng: random.Random, lo: int, hi: int) -> str:
    return str(rng.randint(lo, hi))


def _day(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}"


def _clock(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def _when(rng: random.Random) -> str:
    return f"{_day(rng)}T{_clock(rng)}"


def _person(rng: random.Random, marks: str = "!?#*") -> str:
    """A person's password: a capitalised word, a few digits and a mark."""
    return rng.choice(_WORDS).capitalize() + _num(rng, 10, 9999) + rng.choice(marks)


def _plain_person(rng: random.Random) -> str:
    """A person's password without a mark: two words and digits."""
    return rng.choice(_WORDS) + rng.choice(_WORDS).capitalize() + _num(rng, 10, 999)


def _generated(rng: random.Random, n: int, symbols: str = "!#%*+-=?@^_~") -> str:
    """A password manager's password: letters, digits and symbols, at least one of each kind."""
    while True:
        value = _draw(rng, _ALNUM + symbols * 2, n)
        if any(c in symbols for c in value) and any(c.isdigit() for c in value) and value[0] not in "-#":
            return value


def _short(rng: random.Random) -> str:
    """A short generated password, 8 to 12 letters and digits, at least one digit."""
    while True:
        value = _draw(rng, _ALNUM, rng.randint(8, 12))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _phrase(rng: random.Random, k: int, sep: str) -> str:
    return sep.join(rng.sample(_WORDS, k))


def _jwt(rng: random.Random, header: dict, payload: dict, sig_bytes: int = 32) -> str:
    def part(obj: dict) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return f"{part(header)}.{part(payload)}.{_b64url(rng, sig_bytes)}"


def _epoch(rng: random.Random) -> int:
    return rng.randint(1_767_225_600, 1_795_000_000)


# --------------------------------------------------------------------------------------------------------
# Cloud CLIs
# --------------------------------------------------------------------------------------------------------


@_credential("aws-configure-interactive-prompts")
def _aws_configure(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _B64CHARS, 40)
    acct = _num(rng, 100000000000, 999999999999)
    text = _t(
        """
        $ aws configure --profile billing-prod
        AWS Access Key ID [None]: AKIA⟨kid⟩
        AWS Secret Access Key [None]: ⟨secret⟩
        Default region name [None]: eu-central-1
        Default output format [None]: json
        $ aws sts get-caller-identity --profile billing-prod
        {
            "UserId": "AIDA⟨uid⟩",
            "Account": "⟨acct⟩",
            "Arn": "arn:aws:iam::⟨acct⟩:user/svc/billing-exporter"
        }
        """,
        kid=_draw(rng, _UPPER_NUM, 16),
        secret=secret,
        uid=_draw(rng, _UPPER_NUM, 17),
        acct=acct,
    )
    return text, (secret,)


@_credential("az-login-service-principal-secret-flag")
def _az_login(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    alphabet = _ALNUM + "_~.-"
    secret = _draw(rng, _ALNUM, 3) + _num(rng, 0, 9) + "Q~" + _draw(rng, alphabet, 34)
    app, tenant, sub = _uid(rng), _uid(rng), _uid(rng)
    text = _t(
        """
        PS C:\\src\\platform-infra> az login --service-principal -u ⟨app⟩ -p ⟨secret⟩ --tenant ⟨tenant⟩
        [
          {
            "cloudName": "AzureCloud",
            "homeTenantId": "⟨tenant⟩",
            "id": "⟨sub⟩",
            "isDefault": true,
            "managedByTenants": [],
            "name": "Contoso-Platform-Prod",
            "state": "Enabled",
            "tenantId": "⟨tenant⟩",
            "user": {
              "name": "⟨app⟩",
              "type": "servicePrincipal"
            }
          }
        ]
        PS C:\\src\\platform-infra> terraform -chdir=envs/prod plan -out tfplan
        """,
        app=app,
        secret=secret,
        tenant=tenant,
        sub=sub,
    )
    return text, (secret,)


@_credential("doctl-config-yaml-auth-contexts")
def _doctl(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    main, staging = "dop_v1_" + _hx(rng, 64), "dop_v1_" + _hx(rng, 64)
    text = _t(
        """
        $ cat ~/.config/doctl/config.yaml
        access-token: ⟨main⟩
        auth-contexts:
          staging: ⟨staging⟩
        context: default
        output: text
        $ doctl auth switch --context staging
        Now using context [staging] by default
        $ doctl kubernetes cluster list
        ID                                      Name           Region    Version        Auto Upgrade    Status     Node Pools
        ⟨cid⟩    shop-staging   fra1      1.31.1-do.5    false           running    pool-std-4vcpu
        """,
        main=main,
        staging=staging,
        cid=_uid(rng),
    )
    return text, (main, staging)


@_credential("scaleway-scw-config-yaml-secret-key")
def _scaleway(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _uid(rng)
    text = _t(
        """
        $ scw init
        ...
        Config saved at /home/lea/.config/scw/config.yaml
        $ cat /home/lea/.config/scw/config.yaml
        access_key: SCW⟨ak⟩
        secret_key: ⟨secret⟩
        default_organization_id: ⟨org⟩
        default_project_id: ⟨proj⟩
        default_region: fr-par
        default_zone: fr-par-2
        send_telemetry: false
        """,
        ak=_draw(rng, _UPPER_NUM, 17),
        secret=secret,
        org=_uid(rng),
        proj=_uid(rng),
    )
    return text, (secret,)


@_credential("ibmcloud-login-apikey-ci-log")
def _ibmcloud(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _draw(rng, _URLSAFE, 44)
    text = _t(
        """
        [2026-03-⟨d⟩ 06:14:02] Step 3/7 : Log in to IBM Cloud
        + ibmcloud login --apikey ⟨key⟩ -r us-south -g default
        API endpoint: https://cloud.ibm.com
        Authenticating...
        OK

        Targeted account Acme Analytics (⟨acct⟩) <-> ⟨num⟩


        Targeted resource group default

        Targeted region us-south

        API endpoint:      https://cloud.ibm.com
        Region:            us-south
        User:              ServiceId-⟨sid⟩
        Account:           Acme Analytics (⟨acct⟩) <-> ⟨num⟩
        Resource group:    default
        + ibmcloud cr region-set us-south
        """,
        d=f"{rng.randint(1, 28):02d}",
        key=key,
        acct=_hx(rng, 32),
        num=_num(rng, 1000000, 2999999),
        sid=_uid(rng),
    )
    return text, (key,)


@_credential("oci-cli-config-pass-phrase")
def _oci(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    passphrase = _phrase(rng, 3, " ") + " " + _num(rng, 10, 99)
    fp = ":".join(_hx(rng, 2) for _ in range(16))
    text = _t(
        """
        $ cat ~/.oci/config
        [DEFAULT]
        user=ocid1.user.oc1..aaaaaaaa⟨u⟩
        fingerprint=⟨fp⟩
        tenancy=ocid1.tenancy.oc1..aaaaaaaa⟨t⟩
        region=eu-frankfurt-1
        key_file=~/.oci/oci_api_key.pem
        pass_phrase=⟨pp⟩
        $ oci os ns get
        {
          "data": "⟨ns⟩"
        }
        """,
        u=_draw(rng, _LOWER_NUM, 52),
        fp=fp,
        t=_draw(rng, _LOWER_NUM, 52),
        pp=passphrase,
        ns=_draw(rng, _LOWER_NUM, 12),
    )
    return text, (passphrase,)


# --------------------------------------------------------------------------------------------------------
# Database clients and SQL
# --------------------------------------------------------------------------------------------------------


@_credential("pg-service-conf-section")
def _pg_service(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 22, "!%*+-=?@^_~")
    text = _t(
        """
        # ~/.pg_service.conf   (use: psql "service=reporting")
        [reporting]
        host=pg-ro.analytics.internal
        port=5432
        dbname=warehouse
        user=metabase_ro
        password=⟨pw⟩
        sslmode=verify-full
        sslrootcert=/etc/ssl/certs/rds-global-bundle.pem

        [reporting-local]
        host=localhost
        port=5433
        dbname=warehouse
        user=postgres
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("clickhouse-client-interactive-session")
def _clickhouse(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _short(rng)
    text = _t(
        """
        $ clickhouse-client --host ch-01.olap.internal --port 9440 --secure --user etl_loader --password ⟨pw⟩
        ClickHouse client version 24.3.2.23 (official build).
        Connecting to ch-01.olap.internal:9440 as user etl_loader.
        Connected to ClickHouse server version 24.3.2.

        ch-01 :) SELECT count() FROM events WHERE event_date = today()

        SELECT count()
        FROM events
        WHERE event_date = today()

        Query id: ⟨qid⟩

           ┌───count()─┐
        1. │ ⟨n⟩ │
           └───────────┘

        1 row in set. Elapsed: 0.012 sec.
        """,
        pw=pw,
        qid=_uid(rng),
        n=_num(rng, 100000000, 999999999),
    )
    return text, (pw,)


@_credential("neo4j-cypher-shell-session")
def _neo4j(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, ".") + "." + _num(rng, 10, 99)
    text = _t(
        """
        $ cypher-shell -a neo4j+s://graph.kb.internal:7687 -u neo4j -p '⟨pw⟩' -d knowledge
        Connected to Neo4j using Bolt protocol version 5.4 at neo4j+s://graph.kb.internal:7687 as user neo4j.
        Type :help for a list of available commands or :exit to exit the shell.
        Note that Cypher queries must end with a semicolon.
        neo4j@knowledge> MATCH (n:Article) RETURN count(n);
        +----------+
        | count(n) |
        +----------+
        | ⟨n⟩    |
        +----------+

        1 row
        ready to start consuming query after 23 ms, results consumed after another 2 ms
        neo4j@knowledge> :exit

        Bye!
        """,
        pw=pw,
        n=_num(rng, 10000, 99999),
    )
    return text, (pw,)


@_credential("oracle-sqlplus-create-user-identified-by")
def _oracle(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 16, "#_$")
    text = _t(
        """
        SQL*Plus: Release 19.0.0.0.0 - Production on Tue Mar 10 09:14:22 2026
        Version 19.21.0.0.0

        Copyright (c) 1982, 2023, Oracle.  All rights reserved.

        Last Successful login time: Mon Mar 09 2026 17:02:51 +01:00

        Connected to:
        Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
        Version 19.21.0.0.0

        SQL> CREATE USER app_reader IDENTIFIED BY "⟨pw⟩" DEFAULT TABLESPACE users QUOTA 100M ON users;

        User created.

        SQL> GRANT CREATE SESSION TO app_reader;

        Grant succeeded.

        SQL> GRANT SELECT ON sales.orders TO app_reader;

        Grant succeeded.
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("tsql-ssms-create-login-doubled-quote")
def _tsql(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = rng.choice(_WORDS).capitalize() + "''" + rng.choice(_WORDS) + _num(rng, 10, 999) + rng.choice("!#*")
    text = _t(
        """
        /****** Object:  Login [svc_reporting]    Script Date: 3/10/2026 9:14:22 AM ******/
        USE [master]
        GO
        CREATE LOGIN [svc_reporting] WITH PASSWORD=N'⟨pw⟩', DEFAULT_DATABASE=[Reporting], DEFAULT_LANGUAGE=[us_english], CHECK_EXPIRATION=OFF, CHECK_POLICY=ON
        GO
        USE [Reporting]
        GO
        CREATE USER [svc_reporting] FOR LOGIN [svc_reporting] WITH DEFAULT_SCHEMA=[dbo]
        GO
        ALTER ROLE [db_datareader] ADD MEMBER [svc_reporting]
        GO
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("psql-echo-all-alter-role-password")
def _psql_alter_role(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 4, " ")
    text = _t(
        """
        $ psql -v ON_ERROR_STOP=1 -a -f migrations/0042_reporting_role.sql "service=prod-admin"
        BEGIN;
        BEGIN
        ALTER ROLE reporting WITH LOGIN PASSWORD '⟨pw⟩' VALID UNTIL '2026-12-31';
        ALTER ROLE
        GRANT pg_read_all_data TO reporting;
        GRANT ROLE
        COMMIT;
        COMMIT
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("pgbouncer-userlist-plain-beside-hashes")
def _pgbouncer(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 20, "!%*+-=?@^_~")
    text = _t(
        """
        $ sudo cat /etc/pgbouncer/userlist.txt
        "pgbouncer_admin" "md5⟨md5⟩"
        "stats_collector" "SCRAM-SHA-256$4096:⟨salt⟩$⟨stored⟩:⟨server⟩"
        "orders_app" "⟨pw⟩"
        $ sudo systemctl reload pgbouncer
        """,
        md5=_hx(rng, 32),
        salt=_b64(rng, 16),
        stored=_b64(rng, 32),
        server=_b64(rng, 32),
        pw=pw,
    )
    return text, (pw,)


@_credential("zabbix-server-conf-grep-dbpassword")
def _zabbix(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _short(rng)
    text = _t(
        """
        # grep -v '^#' /etc/zabbix/zabbix_server.conf | grep -v '^$'
        LogFile=/var/log/zabbix/zabbix_server.log
        LogFileSize=0
        PidFile=/run/zabbix/zabbix_server.pid
        SocketDir=/run/zabbix
        DBHost=zbx-db.mon.internal
        DBName=zabbix
        DBUser=zabbix
        DBPassword=⟨pw⟩
        SNMPTrapperFile=/var/log/snmptrap/snmptrap.log
        Timeout=4
        FpingLocation=/usr/bin/fping
        Fping6Location=/usr/bin/fping6
        LogSlowQueries=3000
        StatsAllowedIP=127.0.0.1
        """,
        pw=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Package managers, registries and CI runners
# --------------------------------------------------------------------------------------------------------


@_credential("rubygems-gem-credentials-then-push")
def _gem(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "rubygems_" + _hx(rng, 48)
    text = _t(
        """
        $ cat ~/.gem/credentials
        ---
        :rubygems_api_key: ⟨key⟩
        $ gem build fluent-plugin-acme.gemspec
          Successfully built RubyGem
          Name: fluent-plugin-acme
          Version: 0.4.⟨p⟩
          File: fluent-plugin-acme-0.4.⟨p⟩.gem
        $ gem push fluent-plugin-acme-0.4.⟨p⟩.gem
        Pushing gem to https://rubygems.org...
        Successfully registered gem: fluent-plugin-acme (0.4.⟨p⟩)
        """,
        key=key,
        p=_num(rng, 0, 9),
    )
    return text, (key,)


@_credential("nuget-config-cleartextpassword")
def _nuget(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!#%*+-=?@^_~")
    text = _t(
        """
        <?xml version="1.0" encoding="utf-8"?>
        <configuration>
          <packageSources>
            <clear />
            <add key="nuget.org" value="https://api.nuget.org/v3/index.json" protocolVersion="3" />
            <add key="acme-internal" value="https://nexus.acme.internal/repository/nuget-hosted/index.json" />
          </packageSources>
          <packageSourceCredentials>
            <acme-internal>
              <add key="Username" value="build-agent" />
              <add key="ClearTextPassword" value="⟨pw⟩" />
            </acme-internal>
          </packageSourceCredentials>
          <packageSourceMapping>
            <packageSource key="acme-internal">
              <package pattern="Acme.*" />
            </packageSource>
            <packageSource key="nuget.org">
              <package pattern="*" />
            </packageSource>
          </packageSourceMapping>
        </configuration>
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("poetry-config-pypi-token-publish")
def _poetry(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "pypi-AgEIcHlwaS5vcmc" + _b64url(rng, 120)
    text = _t(
        """
        $ poetry config pypi-token.pypi ⟨token⟩
        $ poetry publish --build
        Building acme-tracing (1.8.⟨p⟩)
        Building sdist
          - Building sdist
          - Built acme_tracing-1.8.⟨p⟩.tar.gz
        Building wheel
          - Building wheel
          - Built acme_tracing-1.8.⟨p⟩-py3-none-any.whl

        Publishing acme-tracing (1.8.⟨p⟩) to PyPI
         - Uploading acme_tracing-1.8.⟨p⟩-py3-none-any.whl 100%
         - Uploading acme_tracing-1.8.⟨p⟩.tar.gz 100%
        """,
        token=token,
        p=_num(rng, 0, 9),
    )
    return text, (token,)


@_credential("yarnrc-yml-npm-auth-ident")
def _yarnrc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!*#")
    text = _t(
        """
        # .yarnrc.yml
        nodeLinker: node-modules
        yarnPath: .yarn/releases/yarn-4.⟨m⟩.1.cjs
        enableTelemetry: false

        npmScopes:
          acme:
            npmRegistryServer: "https://verdaccio.acme.internal"
            npmAlwaysAuth: true
            npmAuthIdent: "frontend-ci:⟨pw⟩"
        """,
        m=_num(rng, 1, 6),
        pw=pw,
    )
    return text, (pw,)


@_credential("helm-repo-add-password-flag")
def _helm_repo(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 16, "%+-=_~.")
    text = _t(
        """
        $ helm repo add acme-charts https://charts.acme.internal --username chart-reader --password '⟨pw⟩'
        "acme-charts" has been added to your repositories
        $ helm search repo acme-charts/
        NAME                        CHART VERSION   APP VERSION   DESCRIPTION
        acme-charts/billing-api     2.14.⟨a⟩          1.31.2        Billing HTTP API
        acme-charts/ledger-worker   0.9.⟨b⟩           0.9.3         Ledger event consumer
        """,
        pw=pw,
        a=_num(rng, 0, 9),
        b=_num(rng, 0, 9),
    )
    return text, (pw,)


@_credential("gitlab-runner-config-toml-glrt")
def _gitlab_runner(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "glrt-" + _draw(rng, _URLSAFE, 20)
    text = _t(
        """
        $ sudo cat /etc/gitlab-runner/config.toml
        concurrent = 4
        check_interval = 0
        shutdown_timeout = 0

        [session_server]
          session_timeout = 1800

        [[runners]]
          name = "build-03-docker"
          url = "https://gitlab.acme.internal"
          id = ⟨id⟩
          token = "⟨token⟩"
          token_obtained_at = ⟨ts⟩Z
          token_expires_at = 0001-01-01T00:00:00Z
          executor = "docker"
          [runners.cache]
            MaxUploadedArchiveSize = 0
          [runners.docker]
            tls_verify = false
            image = "alpine:3.19"
            privileged = true
            disable_cache = false
            volumes = ["/cache", "/var/run/docker.sock:/var/run/docker.sock"]
            shm_size = 0
        """,
        id=_num(rng, 100, 999),
        token=token,
        ts=_when(rng),
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Containers and clusters
# --------------------------------------------------------------------------------------------------------


@_credential("skopeo-copy-dest-creds")
def _skopeo(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 20, "_-.+=~")
    blobs = "\n".join(f"Copying blob sha256:{_hx(rng, 64)}" for _ in range(3))
    text = _t(
        """
        $ skopeo copy --dest-creds ci-mirror:⟨pw⟩ docker://docker.io/library/nginx:1.27-alpine docker://registry.acme.internal/mirror/nginx:1.27-alpine
        Getting image source signatures
        ⟨blobs⟩
        Copying config sha256:⟨cfg⟩
        Writing manifest to image destination
        """,
        pw=pw,
        blobs=blobs,
        cfg=_hx(rng, 64),
    )
    return text, (pw,)


@_credential("harbor-robot-account-create-response")
def _harbor(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _ALNUM, 32)
    text = _t(
        """
        $ curl -s -u admin -X POST https://harbor.acme.internal/api/v2.0/robots \\
            -H 'Content-Type: application/json' -d @robot-ci-push.json | jq
        Enter host password for user 'admin':
        {
          "creation_time": "⟨ts⟩.⟨ms⟩Z",
          "expires_at": -1,
          "id": ⟨id⟩,
          "name": "robot$ci-push",
          "secret": "⟨secret⟩"
        }
        """,
        ts=_when(rng),
        ms=_num(rng, 100, 999),
        id=_num(rng, 2, 60),
        secret=secret,
    )
    return text, (secret,)


@_credential("kubectl-set-credentials-rancher-token")
def _rancher(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    name = "kubeconfig-u-" + _draw(rng, _LOWER_NUM, 12)
    secret = _draw(rng, _LOWER_NUM, 54)
    text = _t(
        """
        $ kubectl config set-cluster rancher-prod --server=https://rancher.acme.internal/k8s/clusters/c-m-⟨c⟩
        Cluster "rancher-prod" set.
        $ kubectl config set-credentials rancher-prod --token=⟨name⟩:⟨secret⟩
        User "rancher-prod" set.
        $ kubectl config set-context prod --cluster=rancher-prod --user=rancher-prod
        Context "prod" created.
        $ kubectl --context prod get nodes
        NAME            STATUS   ROLES                       AGE    VERSION
        prod-cp-1       Ready    control-plane,etcd,master   212d   v1.30.6+rke2r1
        prod-worker-1   Ready    worker                      212d   v1.30.6+rke2r1
        """,
        c=_draw(rng, _LOWER_NUM, 8),
        name=name,
        secret=secret,
    )
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# Messaging and mail
# --------------------------------------------------------------------------------------------------------


@_credential("nats-user-creds-file-nkey-seed")
def _nats(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    seed = "SUA" + _draw(rng, _B32, 55)
    issuer, subject = "A" + _draw(rng, _B32, 55), "U" + _draw(rng, _B32, 55)
    jwt = _jwt(
        rng,
        {"typ": "JWT", "alg": "ed25519-nkey"},
        {
            "jti": _draw(rng, _B32, 52),
            "iat": _epoch(rng),
            "iss": issuer,
            "name": "orders-svc",
            "sub": subject,
            "nats": {
                "pub": {},
                "sub": {},
                "subs": -1,
                "data": -1,
                "payload": -1,
                "type": "user",
                "version": 2,
            },
        },
        64,
    )
    text = _t(
        """
        $ cat ~/.local/share/nats/nsc/keys/creds/ACME/orders/orders-svc.creds
        -----BEGIN NATS USER JWT-----
        ⟨jwt⟩
        ------END NATS USER JWT------

        ************************* IMPORTANT *************************
        NKEY Seed printed below can be used to sign and prove identity.
        NKEYs are sensitive and should be treated as secrets.

        -----BEGIN USER NKEY SEED-----
        ⟨seed⟩
        ------END USER NKEY SEED------

        *************************************************************
        """,
        jwt=jwt,
        seed=seed,
    )
    return text, (seed,)


@_credential("mosquitto-pub-debug-session")
def _mosquitto(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _short(rng)
    text = _t(
        """
        $ mosquitto_pub -h mqtt.plant4.internal -p 8883 --cafile /etc/ssl/certs/plant-ca.pem \\
            -u line3-plc-gw -P ⟨pw⟩ -t 'plant4/line3/status' -m '{"state":"running","rpm":⟨rpm⟩}' -d
        Client null sending CONNECT
        Client null received CONNACK (0)
        Client null sending PUBLISH (d0, q0, r0, m1, 'plant4/line3/status', ... (⟨len⟩ bytes))
        Client null sending DISCONNECT
        """,
        pw=pw,
        rpm=_num(rng, 1000, 1999),
        len="30",
    )
    return text, (pw,)


@_credential("msmtprc-gmail-app-password-spaced")
def _msmtprc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = " ".join(_draw(rng, string.ascii_lowercase, 4) for _ in range(4))
    text = _t(
        """
        # ~/.msmtprc
        defaults
        auth           on
        tls            on
        tls_trust_file /etc/ssl/certs/ca-certificates.crt
        logfile        ~/.msmtp.log

        account        gmail
        host           smtp.gmail.com
        port           587
        from           jonas.berg.dev@gmail.com
        user           jonas.berg.dev@gmail.com
        password       ⟨pw⟩

        account default : gmail
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("fetchmailrc-poll-with-password")
def _fetchmail(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 14, "!#%*+-=?@^_~")
    text = _t(
        """
        # ~/.fetchmailrc  (chmod 600)
        set daemon 300
        set logfile ~/.fetchmail.log
        set no bouncemail

        poll imap.mailbox.org with proto IMAP
            user 'ines.kraus@mailbox.org' there with password '⟨pw⟩' is 'ines' here
            options ssl sslcertck keep fetchall
            folder INBOX
            mda "/usr/bin/procmail -d %T"
        """,
        pw=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Windows
# --------------------------------------------------------------------------------------------------------


@_credential("cmdkey-add-domain-credential")
def _cmdkey(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 16, "#$@_-.")
    text = _t(
        """
        C:\\Users\\build>cmdkey /add:fileserver02.corp.acme.local /user:CORP\\svc_backup /pass:⟨pw⟩

        CMDKEY: Credential added successfully.

        C:\\Users\\build>cmdkey /list:fileserver02.corp.acme.local

        Currently stored credentials for fileserver02.corp.acme.local:

            Target: fileserver02.corp.acme.local
            Type: Domain Password
            User: CORP\\svc_backup

        C:\\Users\\build>robocopy D:\\exports \\\\fileserver02.corp.acme.local\\exports$ /MIR /R:2 /W:5
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("schtasks-create-run-as-password")
def _schtasks(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!#?")
    text = _t(
        """
        C:\\Windows\\system32> schtasks /Create /TN "Nightly\\ExportInvoices" /TR "C:\\Tools\\export-invoices.cmd" /SC DAILY /ST 02:30 /RU ACME\\svc_export /RP ⟨pw⟩ /RL HIGHEST /F
        SUCCESS: The scheduled task "Nightly\\ExportInvoices" has successfully been created.

        C:\\Windows\\system32> schtasks /Query /TN "Nightly\\ExportInvoices"

        Folder: \\Nightly
        TaskName                                 Next Run Time          Status
        ======================================== ====================== ===============
        ExportInvoices                           3/⟨d⟩/2026 2:30:00 AM    Ready
        """,
        pw=pw,
        d=_num(rng, 11, 28),
    )
    return text, (pw,)


@_credential("unattend-xml-administrator-plaintext")
def _unattend(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 15, "!#%*+-=?@^_~")
    text = _t(
        """
        <?xml version="1.0" encoding="utf-8"?>
        <unattend xmlns="urn:schemas-microsoft-com:unattend">
          <settings pass="oobeSystem">
            <component name="Microsoft-Windows-Shell-Setup" processorArchitecture="amd64" publicKeyToken="31bf3856ad364e35" language="neutral" versionScope="nonSxS" xmlns:wcm="http://schemas.microsoft.com/WMIConfig/2002/State">
              <UserAccounts>
                <AdministratorPassword>
                  <Value>⟨pw⟩</Value>
                  <PlainText>true</PlainText>
                </AdministratorPassword>
              </UserAccounts>
              <OOBE>
                <HideEULAPage>true</HideEULAPage>
                <HideOnlineAccountScreens>true</HideOnlineAccountScreens>
                <ProtectYourPC>3</ProtectYourPC>
              </OOBE>
              <TimeZone>W. Europe Standard Time</TimeZone>
            </component>
          </settings>
        </unattend>
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("aspnet-web-config-machinekey")
def _machinekey(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    validation, decryption = _hx(rng, 128).upper(), _hx(rng, 64).upper()
    text = _t(
        """
        <?xml version="1.0" encoding="utf-8"?>
        <configuration>
          <appSettings>
            <add key="webpages:Version" value="3.0.0.0" />
            <add key="ClientValidationEnabled" value="true" />
          </appSettings>
          <system.web>
            <compilation debug="false" targetFramework="4.8" />
            <httpRuntime targetFramework="4.8" maxRequestLength="20480" />
            <machineKey validationKey="⟨v⟩" decryptionKey="⟨d⟩" validation="HMACSHA256" decryption="AES" />
            <authentication mode="Forms">
              <forms loginUrl="~/Account/Login" timeout="2880" requireSSL="true" />
            </authentication>
          </system.web>
        </configuration>
        """,
        v=validation,
        d=decryption,
    )
    return text, (validation, decryption)


# --------------------------------------------------------------------------------------------------------
# Directories, protocols and network gear
# --------------------------------------------------------------------------------------------------------


@_credential("ldif-userpassword-base64-ldapadd")
def _ldif(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    plain = _person(rng, "!?#*")
    encoded = base64.b64encode(plain.encode()).decode()
    uid_number = _num(rng, 10000, 19999)
    text = _t(
        """
        $ cat new-hire.ldif
        dn: uid=mkowalczyk,ou=people,dc=acme,dc=internal
        objectClass: inetOrgPerson
        objectClass: posixAccount
        uid: mkowalczyk
        cn: Marta Kowalczyk
        sn: Kowalczyk
        mail: marta.kowalczyk@acme.example
        uidNumber: ⟨n⟩
        gidNumber: 10000
        homeDirectory: /home/mkowalczyk
        loginShell: /bin/bash
        userPassword:: ⟨enc⟩

        $ ldapadd -x -H ldaps://ldap.acme.internal -D cn=admin,dc=acme,dc=internal -W -f new-hire.ldif
        Enter LDAP Password:
        adding new entry "uid=mkowalczyk,ou=people,dc=acme,dc=internal"
        """,
        n=uid_number,
        enc=encoded,
    )
    return text, (encoded,)


@_credential("soapui-wsse-usernametoken-request")
def _wsse(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 16)
    text = _t(
        """
        POST https://ws.carrier.example.com/tracking/v2 HTTP/1.1
        Accept-Encoding: gzip,deflate
        Content-Type: text/xml;charset=UTF-8
        SOAPAction: "urn:track"
        Host: ws.carrier.example.com
        User-Agent: Apache-HttpClient/4.5.5 (Java/17.0.10)

        <soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ws="http://ws.carrier.example.com/tracking/v2">
           <soapenv:Header>
              <wsse:Security soapenv:mustUnderstand="1" xmlns:wsse="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd" xmlns:wsu="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd">
                 <wsse:UsernameToken wsu:Id="UsernameToken-⟨tid⟩">
                    <wsse:Username>ACME_SHIPPING_API</wsse:Username>
                    <wsse:Password Type="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordText">⟨pw⟩</wsse:Password>
                    <wsse:Nonce EncodingType="http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary">⟨nonce⟩</wsse:Nonce>
                    <wsu:Created>⟨ts⟩.⟨ms⟩Z</wsu:Created>
                 </wsse:UsernameToken>
              </wsse:Security>
           </soapenv:Header>
           <soapenv:Body>
              <ws:TrackRequest>
                 <ws:TrackingNumber>1Z⟨trk⟩</ws:TrackingNumber>
              </ws:TrackRequest>
           </soapenv:Body>
        </soapenv:Envelope>
        """,
        tid=_hx(rng, 32).upper(),
        pw=pw,
        nonce=_b64(rng, 16),
        ts=_when(rng),
        ms=_num(rng, 100, 999),
        trk=_draw(rng, _UPPER_NUM, 16),
    )
    return text, (pw,)


@_credential("graphql-signin-variables-pino-log")
def _graphql(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    host = "api-" + _hx(rng, 10) + "-" + _draw(rng, _LOWER_NUM, 5)
    t0 = rng.randint(1_767_225_600_000, 1_795_000_000_000)
    lines = [
        {"level": 30, "time": t0, "pid": 7, "hostname": host, "reqId": "req-1k", "req": {"method": "POST", "url": "/graphql"}, "msg": "incoming request"},
        {"level": 20, "time": t0 + 3, "pid": 7, "hostname": host, "reqId": "req-1k", "operationName": "SignIn",
         "query": "mutation SignIn($email: String!, $password: String!, $rememberMe: Boolean) { signIn(email: $email, password: $password, rememberMe: $rememberMe) { user { id } } }",
         "variables": {"email": "t.nguyen@example.net", "password": pw, "rememberMe": True}, "msg": "graphql operation"},
        {"level": 30, "time": t0 + 41, "pid": 7, "hostname": host, "reqId": "req-1k", "res": {"statusCode": 200}, "responseTime": 38.2, "msg": "request completed"},
    ]  # fmt: skip
    text = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    return text, (pw,)


@_credential("grpc-go-outgoing-metadata-map")
def _grpc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _jwt(
        rng,
        {"alg": "ES256", "kid": _hx(rng, 16), "typ": "JWT"},
        {
            "iss": "https://auth.acme.internal",
            "sub": "svc:inventory-cli",
            "aud": "inventory.grpc.internal",
            "exp": _epoch(rng),
            "scope": "inventory:reserve",
        },
        64,
    )
    text = _t(
        """
        2026/03/⟨d⟩ 09:14:22 INFO: [core] [Channel #1] Channel created
        2026/03/⟨d⟩ 09:14:22 INFO: [core] [Channel #1] original dial target is: "dns:///inventory.grpc.internal:443"
        2026/03/⟨d⟩ 09:14:22 INFO: [core] [Channel #1] Channel authority set to "inventory.grpc.internal:443"
        2026/03/⟨d⟩ 09:14:22 DEBUG outgoing call /inventory.v1.InventoryService/ReserveStock md=map[authorization:[Bearer ⟨tok⟩] user-agent:[inventory-cli/0.7.1] x-request-id:[⟨rid⟩]]
        2026/03/⟨d⟩ 09:14:23 DEBUG call /inventory.v1.InventoryService/ReserveStock returned code=OK in 212ms
        """,
        d=f"{rng.randint(1, 28):02d}",
        tok=token,
        rid=_uid(rng),
    )
    return text, (token,)


@_credential("asterisk-pjsip-conf-auth-section")
def _pjsip(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 14)
    ext = _num(rng, 6001, 6099)
    text = _t(
        """
        ; /etc/asterisk/pjsip.conf  -- desk phone, 2nd floor reception
        [⟨ext⟩]
        type=endpoint
        context=from-internal
        disallow=all
        allow=ulaw,alaw,opus
        auth=⟨ext⟩-auth
        aors=⟨ext⟩
        callerid="Reception" <⟨ext⟩>

        [⟨ext⟩-auth]
        type=auth
        auth_type=userpass
        username=⟨ext⟩
        password=⟨pw⟩

        [⟨ext⟩]
        type=aor
        max_contacts=2
        qualify_frequency=60
        """,
        ext=ext,
        pw=pw,
    )
    return text, (pw,)


@_credential("strongswan-ipsec-secrets-psk")
def _ipsec(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    psk = _b64(rng, 32)
    text = _t(
        """
        # /etc/ipsec.secrets - strongSwan IPsec secrets file
        # This file holds shared secrets or RSA private keys for authentication.

        : RSA "vpn-gw01.key.pem"

        # site-to-site tunnel to the Lyon branch (PSK generated with `openssl rand -base64 32`)
        203.0.113.⟨a⟩ 198.51.100.⟨b⟩ : PSK "⟨psk⟩"
        """,
        a=_num(rng, 2, 250),
        b=_num(rng, 2, 250),
        psk=psk,
    )
    return text, (psk,)


@_credential("haproxy-userlist-insecure-password")
def _haproxy(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _short(rng)
    text = _t(
        """
        # /etc/haproxy/haproxy.cfg (excerpt)
        userlist stats-users
            user admin insecure-password ⟨pw⟩
            user grafana password $6$⟨salt⟩$⟨hash⟩

        listen stats
            bind :8404
            mode http
            stats enable
            stats uri /stats
            stats refresh 10s
            acl auth_ok http_auth(stats-users)
            http-request auth realm haproxy-stats unless auth_ok
        """,
        pw=pw,
        salt=_draw(rng, _ALNUM + "./", 16),
        hash=_draw(rng, _ALNUM + "./", 86),
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Observability
# --------------------------------------------------------------------------------------------------------


@_credential("splunk-hec-curl-event")
def _splunk(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _uid(rng).upper()
    text = _t(
        """
        $ curl -sk https://splunk-hec.acme.internal:8088/services/collector/event \\
            -H "Authorization: Splunk ⟨tok⟩" \\
            -d '{"event": "deploy finished", "sourcetype": "_json", "index": "ci", "fields": {"service": "billing", "sha": "⟨sha⟩"}}'
        {"text":"Success","code":0}
        """,
        tok=token,
        sha=_hx(rng, 40),
    )
    return text, (token,)


@_credential("rollbar-python-init-post-server-item")
def _rollbar(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _hx(rng, 32)
    text = _t(
        """
        # app/observability.py
        import os

        import rollbar
        import rollbar.contrib.flask
        from flask import got_request_exception


        def init_rollbar(app):
            rollbar.init(
                "⟨tok⟩",  # post_server_item
                environment=os.getenv("APP_ENV", "production"),
                root=os.path.dirname(os.path.realpath(__file__)),
                allow_logging_basic_config=False,
                code_version="⟨sha⟩",
            )
            got_request_exception.connect(rollbar.contrib.flask.report_exception, app)
        """,
        tok=token,
        sha=_hx(rng, 40),
    )
    return text, (token,)


@_credential("fluent-bit-es-output-http-passwd")
def _fluentbit(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 20, "!%*+-=?@^_~")
    text = _t(
        """
        [SERVICE]
            Flush         5
            Log_Level     info
            Parsers_File  parsers.conf

        [INPUT]
            Name              tail
            Path              /var/log/containers/*.log
            multiline.parser  docker, cri
            Tag               kube.*
            Mem_Buf_Limit     50MB

        [OUTPUT]
            Name                es
            Match               kube.*
            Host                search-logs.acme.internal
            Port                9200
            HTTP_User           fluentbit_writer
            HTTP_Passwd         ⟨pw⟩
            tls                 On
            tls.verify          On
            Logstash_Format     On
            Logstash_Prefix     kube
            Suppress_Type_Name  On
        """,
        pw=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Payments
# --------------------------------------------------------------------------------------------------------


@_credential("razorpay-node-key-secret")
def _razorpay(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _ALNUM, 24)
    text = _t(
        """
        // server/payments/razorpay.js
        const Razorpay = require('razorpay');

        const instance = new Razorpay({
          key_id: 'rzp_live_⟨kid⟩',
          key_secret: '⟨secret⟩',
        });

        async function createOrder(amountPaise, receipt) {
          return instance.orders.create({
            amount: amountPaise,
            currency: 'INR',
            receipt,
            notes: { channel: 'web' },
          });
        }

        module.exports = { createOrder };
        """,
        kid=_draw(rng, _ALNUM, 14),
        secret=secret,
    )
    return text, (secret,)


@_credential("paypal-python-oauth2-client-credentials")
def _paypal(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    client_id = "A" + _draw(rng, _URLSAFE, 79)
    secret = "E" + _draw(rng, _URLSAFE, 79)
    text = _t(
        """
        import requests

        resp = requests.post(
            "https://api-m.paypal.com/v1/oauth2/token",
            auth=("⟨cid⟩", "⟨secret⟩"),
            data={"grant_type": "client_credentials"},
            headers={"Accept": "application/json", "Accept-Language": "en_US"},
            timeout=10,
        )
        resp.raise_for_status()
        access_token = resp.json()["access_token"]
        """,
        cid=client_id,
        secret=secret,
    )
    return text, (secret,)


@_credential("mollie-php-set-api-key")
def _mollie(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "live_" + _draw(rng, _ALNUM, 30)
    text = _t(
        """
        <?php
        require_once __DIR__ . '/vendor/autoload.php';

        $mollie = new \\Mollie\\Api\\MollieApiClient();
        $mollie->setApiKey("⟨key⟩");

        $payment = $mollie->payments->create([
            "amount" => ["currency" => "EUR", "value" => "⟨eur⟩.95"],
            "description" => "Bestelling #⟨order⟩",
            "redirectUrl" => "https://winkel.example.nl/bedankt",
            "webhookUrl"  => "https://winkel.example.nl/mollie-webhook",
            "metadata" => ["order_id" => "⟨order⟩"],
        ]);

        header("Location: " . $payment->getCheckoutUrl(), true, 303);
        """,
        key=key,
        eur=_num(rng, 10, 99),
        order=_num(rng, 10000, 99999),
    )
    return text, (key,)


@_credential("plaid-rest-client-http-file")
def _plaid(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _hx(rng, 30)
    text = _t(
        """
        ### plaid.http  (VS Code REST Client)
        POST https://production.plaid.com/link/token/create
        Content-Type: application/json

        {
          "client_id": "⟨cid⟩",
          "secret": "⟨secret⟩",
          "client_name": "Ledgerly",
          "user": { "client_user_id": "usr_⟨uid⟩" },
          "products": ["transactions"],
          "country_codes": ["US"],
          "language": "en",
          "webhook": "https://api.ledgerly.example/webhooks/plaid"
        }
        """,
        cid=_hx(rng, 24),
        secret=secret,
        uid=_draw(rng, _LOWER_NUM, 12),
    )
    return text, (secret,)


@_credential("adyen-dotnet-config-xapikey")
def _adyen(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "AQE" + _b64(rng, 63) + "-" + _b64url(rng, 32) + "-" + _draw(rng, _ALNUM + "<>+=&", 16)
    text = _t(
        """
        // Startup/PaymentsModule.cs
        using Adyen;
        using Adyen.Service.Checkout;
        using Environment = Adyen.Model.Environment;

        public static class PaymentsModule
        {
            public static IServiceCollection AddAdyen(this IServiceCollection services)
            {
                var config = new Config
                {
                    XApiKey = "⟨key⟩",
                    Environment = Environment.Live,
                    LiveEndpointUrlPrefix = "⟨prefix⟩-AcmeStore"
                };
                services.AddSingleton(new Client(config));
                services.AddSingleton<IPaymentsService, PaymentsService>();
                return services;
            }
        }
        """,
        key=key,
        prefix=_hx(rng, 16),
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# AI vendors, agents and their traces
# --------------------------------------------------------------------------------------------------------


@_credential("openrouter-openai-sdk-base-url")
def _openrouter(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "sk-or-v1-" + _hx(rng, 64)
    text = _t(
        """
        // src/lib/llm.ts
        import OpenAI from "openai";

        export const openai = new OpenAI({
          baseURL: "https://openrouter.ai/api/v1",
          apiKey: "⟨key⟩",
          defaultHeaders: {
            "HTTP-Referer": "https://notes.example.dev",
            "X-Title": "Notes Summariser",
          },
        });

        export async function summarise(text: string) {
          const completion = await openai.chat.completions.create({
            model: "meta-llama/llama-3.3-70b-instruct",
            messages: [{ role: "user", content: `Summarise:\\n${text}` }],
          });
          return completion.choices[0].message.content;
        }
        """,
        key=key,
    )
    return text, (key,)


@_credential("llm-cli-keys-json-perplexity")
def _llm_keys(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "pplx-" + _draw(rng, _ALNUM, 48)
    text = _t(
        """
        $ llm keys set perplexity
        Enter key:
        $ cat "$(llm keys path)"
        {
          "// Note": "This file stores secret API credentials. Do not share!",
          "perplexity": "⟨key⟩"
        }
        $ llm -m sonar-pro "Which Debian release ships Python 3.13?"
        Debian 13 "Trixie" ships Python 3.13 as its default python3.
        """,
        key=key,
    )
    return text, (key,)


@_credential("voyage-python-embed-script")
def _voyage(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "pa-" + _draw(rng, _URLSAFE, 43)
    text = _t(
        """
        # scripts/embed_docs.py
        import json
        import pathlib

        import voyageai

        vo = voyageai.Client(api_key="⟨key⟩")

        docs = [p.read_text() for p in pathlib.Path("docs").rglob("*.md")]
        for start in range(0, len(docs), 128):
            batch = docs[start : start + 128]
            result = vo.embed(batch, model="voyage-3", input_type="document")
            print(start, len(result.embeddings), result.total_tokens)
        """,
        key=key,
    )
    return text, (key,)


@_credential("cursor-mcp-json-tavily-env")
def _cursor_mcp(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "tvly-dev-" + _draw(rng, _ALNUM, 32)
    text = _t(
        """
        $ cat .cursor/mcp.json
        {
          "mcpServers": {
            "tavily-mcp": {
              "command": "npx",
              "args": ["-y", "tavily-mcp@0.2.⟨p⟩"],
              "env": {
                "TAVILY_API_KEY": "⟨key⟩"
              }
            },
            "filesystem": {
              "command": "npx",
              "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/maria/src/research-notes"]
            }
          }
        }
        """,
        p=_num(rng, 0, 9),
        key=key,
    )
    return text, (key,)


@_credential("langchain-agent-executor-deepseek-write-file")
def _langchain(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "sk-" + _hx(rng, 32)
    text = _t(
        """
        > Entering new AgentExecutor chain...
        Thought: The user wants the project switched to DeepSeek and gave me their key. I should write it into the .env file.
        Action: write_file
        Action Input: {"file_path": ".env", "text": "DEEPSEEK_API_KEY=⟨key⟩\\nDEEPSEEK_BASE_URL=https://api.deepseek.com\\n", "append": false}
        Observation: File written successfully to .env.
        Thought: I now know the final answer
        Final Answer: I wrote your DeepSeek key and base URL to .env; restart the dev server to pick them up.

        > Finished chain.
        """,
        key=key,
    )
    return text, (key,)


@_credential("aider-chat-history-xai-key")
def _aider(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "xai-" + _draw(rng, _ALNUM, 80)
    text = _t(
        """
        # aider chat started at ⟨day⟩ ⟨clock⟩

        > /home/li/src/grok-bot $ aider --model xai/grok-3-beta
        > Aider v0.82.1
        > Model: xai/grok-3-beta with diff edit format
        > Git repo: .git with 42 files
        > Repo-map: using 4096 tokens, auto refresh

        #### the bot fails with 401 when XAI_API_KEY isn't exported. just hardcode my key as the fallback in config.py: ⟨key⟩

        I'll add the key as the default when the environment variable is missing.

        config.py
        ```python
        <<<<<<< SEARCH
        XAI_API_KEY = os.environ["XAI_API_KEY"]
        =======
        XAI_API_KEY = os.environ.get("XAI_API_KEY", "⟨key⟩")
        >>>>>>> REPLACE
        ```

        > Tokens: 3.1k sent, 96 received. Cost: $0.01 message, $0.01 session.
        > Applied edit to config.py
        > Commit ⟨sha⟩ feat: Fall back to hardcoded xAI API key in config
        """,
        day=_day(rng),
        clock=_clock(rng),
        key=key,
        sha=_hx(rng, 7),
    )
    return text, (key,)


@_credential("smolagents-step-log-deepgram")
def _smolagents(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _hx(rng, 40)
    text = _t(
        """
        ╭──────────────────────────────────── New run ────────────────────────────────────╮
        │                                                                                 │
        │ Transcribe meeting.wav with Deepgram and give me the three action items.        │
        │                                                                                 │
        ╰─ LiteLLMModel - anthropic/claude-3-5-sonnet-latest ─────────────────────────────╯
        ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ Step 1 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
         ─ Executing parsed code: ─────────────────────────────────────────────────────────
          import requests
          DEEPGRAM_API_KEY = "⟨key⟩"
          with open("meeting.wav", "rb") as f:
              r = requests.post(
                  "https://api.deepgram.com/v1/listen?model=nova-2&smart_format=true",
                  headers={"Authorization": f"Token {DEEPGRAM_API_KEY}", "Content-Type": "audio/wav"},
                  data=f,
              )
          transcript = r.json()["results"]["channels"][0]["alternatives"][0]["transcript"]
          print(transcript[:200])
         ──────────────────────────────────────────────────────────────────────────────────
        Execution logs:
        Okay, so for next week: Priya owns the vendor review, Tom sends the revised budget, and

        Out: None
        [Step 1: Duration 4.12 seconds| Input tokens: 2,114 | Output tokens: 187]
        """,
        key=key,
    )
    return text, (key,)


@_credential("continue-config-yaml-fireworks")
def _continue(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "fw_" + _draw(rng, _ALNUM, 24)
    text = _t(
        """
        # ~/.continue/config.yaml
        name: Local Assistant
        version: 1.0.0
        schema: v1
        models:
          - name: Llama 3.1 405B (Fireworks)
            provider: fireworks
            model: accounts/fireworks/models/llama-v3p1-405b-instruct
            apiKey: ⟨key⟩
            roles:
              - chat
              - edit
          - name: Qwen2.5 Coder 1.5B
            provider: ollama
            model: qwen2.5-coder:1.5b
            roles:
              - autocomplete
        context:
          - provider: code
          - provider: diff
          - provider: terminal
        """,
        key=key,
    )
    return text, (key,)


@_credential("rmarkdown-setup-chunk-dbconnect")
def _rmarkdown(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _plain_person(rng)
    text = _t(
        """
        ---
        title: "Churn model: weekly refresh"
        author: "Analytics"
        output: html_document
        ---

        ```{r setup, include=FALSE}
        knitr::opts_chunk$set(echo = TRUE, warning = FALSE)
        library(DBI)
        library(dplyr)
        con <- dbConnect(
          RPostgres::Postgres(),
          host = "pg-ro.analytics.internal",
          dbname = "warehouse",
          user = "analyst_rw",
          password = "⟨pw⟩"
        )
        ```

        ## Active customers

        ```{r active}
        tbl(con, "customers") %>% filter(status == "active") %>% count()
        ```
        """,
        pw=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# SaaS APIs
# --------------------------------------------------------------------------------------------------------


@_credential("jira-python-atlassian-api-token")
def _jira(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "ATATT3xFfGF0" + _draw(rng, _URLSAFE, 171) + "=" + _hx(rng, 8).upper()
    text = _t(
        """
        # tools/release_notes.py
        from jira import JIRA

        jira = JIRA(
            server="https://acme-eng.atlassian.net",
            basic_auth=("release-bot@acme.example", "⟨tok⟩"),
        )

        issues = jira.search_issues('fixVersion = "2026.⟨v⟩" AND statusCategory = Done ORDER BY key', maxResults=200)
        for issue in issues:
            print(f"- {issue.key}: {issue.fields.summary}")
        """,
        tok=token,
        v=_num(rng, 1, 12),
    )
    return text, (token,)


@_credential("powershell-hubspot-private-app-token")
def _hubspot(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "pat-eu1-" + _uid(rng)
    text = _t(
        """
        PS C:\\scripts> $headers = @{ Authorization = "Bearer ⟨tok⟩"; "Content-Type" = "application/json" }
        PS C:\\scripts> $body = @{ properties = @{ email = "j.moreau@example.fr"; firstname = "Julie"; lastname = "Moreau" } } | ConvertTo-Json
        PS C:\\scripts> Invoke-RestMethod -Method Post -Uri "https://api.hubapi.com/crm/v3/objects/contacts" -Headers $headers -Body $body

        id         : ⟨id⟩
        properties : @{createdate=⟨ts⟩Z; email=j.moreau@example.fr; firstname=Julie; hs_object_id=⟨id⟩; lastname=Moreau}
        createdAt  : ⟨ts⟩Z
        archived   : False
        """,
        tok=token,
        id=_num(rng, 10000000000, 99999999999),
        ts=_when(rng),
    )
    return text, (token,)


@_credential("contentful-space-export-management-token")
def _contentful(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "CFPAT-" + _draw(rng, _URLSAFE, 43)
    space = _draw(rng, _LOWER_NUM, 12)
    text = _t(
        """
        $ contentful space export --space-id ⟨space⟩ --environment-id master --management-token ⟨tok⟩ --export-dir ./backups
        ┌──────────────────────────────────────────────────┐
        │ The following entities are going to be exported: │
        ├─────────────────────────────────┬────────────────┤
        │ Content Types                   │ 38             │
        │ Entries                         │ ⟨entries⟩           │
        │ Assets                          │ ⟨assets⟩            │
        │ Locales                         │ 3              │
        └─────────────────────────────────┴────────────────┘
        ✔ Initialize client (1s)
        ✔ Fetching data from space
          ✔ Connecting to space (1s)
          ✔ Fetching content types data (1s)
          ✔ Fetching entries data (4s)
          ✔ Fetching assets data (2s)
        ✔ Write export log file
        Stored space data to json file at: backups/contentful-export-⟨space⟩-master-⟨day⟩.json
        """,
        space=space,
        tok=token,
        entries=_num(rng, 1000, 9999),
        assets=_num(rng, 100, 999),
        day=_day(rng),
    )
    return text, (token,)


@_credential("dropbox-python-repl-short-lived-token")
def _dropbox(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "sl.B" + _draw(rng, _URLSAFE, 134)
    text = _t(
        """
        >>> import dropbox
        >>> dbx = dropbox.Dropbox("⟨tok⟩")
        >>> dbx.users_get_current_account().name.display_name
        'Camille Laurent'
        >>> for entry in dbx.files_list_folder("/Factures").entries[:3]:
        ...     print(entry.name)
        ...
        facture-2026-01.pdf
        facture-2026-02.pdf
        facture-2026-03.pdf
        """,
        tok=token,
    )
    return text, (token,)


@_credential("mapbox-tilesets-secret-beside-public")
def _mapbox(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    def token(prefix: str) -> str:
        claims = json.dumps({"u": "acme-maps", "a": "cl" + _draw(rng, _LOWER_NUM, 23)}, separators=(",", ":"))
        middle = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
        return f"{prefix}.{middle}.{_draw(rng, _URLSAFE, 22)}"

    secret, public = token("sk"), token("pk")
    text = _t(
        """
        $ export MAPBOX_ACCESS_TOKEN=⟨secret⟩
        $ tilesets upload-source acme-maps parcels-2026 parcels.geojson.ld
        upload progress  [####################################]  100%
        {"id": "mapbox://tileset-source/acme-maps/parcels-2026", "files": 1, "source_size": ⟨size⟩, "file_size": ⟨size⟩}
        $ grep -n accessToken web/src/map.js
        12:mapboxgl.accessToken = '⟨public⟩';
        """,
        secret=secret,
        size=_num(rng, 10_000_000, 90_000_000),
        public=public,
    )
    return text, (secret,)


@_credential("snyk-config-set-api-then-test")
def _snyk(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _uid(rng)
    text = _t(
        """
        $ snyk config set api=⟨tok⟩
        api updated
        $ snyk test --file=requirements.txt --package-manager=pip

        Testing /home/ci/work/billing-api...

        Organization:      acme-platform
        Package manager:   pip
        Target file:       requirements.txt
        Project name:      billing-api
        Open source:       no
        Project path:      /home/ci/work/billing-api
        Licenses:          enabled

        ✔ Tested ⟨n⟩ dependencies for known issues, no vulnerable paths found.
        """,
        tok=token,
        n=_num(rng, 20, 90),
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Self-hosted applications
# --------------------------------------------------------------------------------------------------------


@_credential("symfony-env-local-app-secret-mailer-dsn")
def _symfony(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    app_secret, mail_pw = _hx(rng, 32), _generated(rng, 18, "-_.~")
    text = _t(
        """
        # .env.local (not committed)
        ###> symfony/framework-bundle ###
        APP_ENV=prod
        APP_SECRET=⟨secret⟩
        ###< symfony/framework-bundle ###

        ###> doctrine/doctrine-bundle ###
        DATABASE_URL="postgresql://shop@127.0.0.1:5432/shop?serverVersion=16&charset=utf8"
        ###< doctrine/doctrine-bundle ###

        ###> symfony/mailer ###
        MAILER_DSN=smtp://no-reply%40boutique.example.fr:⟨mail⟩@smtp.ovh.net:465
        ###< symfony/mailer ###
        """,
        secret=app_secret,
        mail=mail_pw,
    )
    return text, (app_secret, mail_pw)


@_credential("drupal-settings-php-database-hash-salt")
def _drupal(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw, salt = _person(rng, "!?#*"), _b64url(rng, 55)
    text = _t(
        """
        <?php
        // web/sites/default/settings.php (bottom of file)

        $databases['default']['default'] = [
          'database' => 'drupal_prod',
          'username' => 'drupal',
          'password' => '⟨pw⟩',
          'prefix' => '',
          'host' => 'mariadb.cms.internal',
          'port' => '3306',
          'namespace' => 'Drupal\\mysql\\Driver\\Database\\mysql',
          'driver' => 'mysql',
          'autoload' => 'core/modules/mysql/src/Driver/Database/mysql/',
        ];
        $settings['hash_salt'] = '⟨salt⟩';
        $settings['config_sync_directory'] = '../config/sync';
        $settings['trusted_host_patterns'] = ['^www\\.musee-example\\.fr$'];
        """,
        pw=pw,
        salt=salt,
    )
    return text, (pw, salt)


@_credential("mastodon-env-production-grep")
def _mastodon(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    skb = _hx(rng, 128)
    vapid_private = base64.urlsafe_b64encode(rng.randbytes(32)).decode()
    vapid_public = base64.urlsafe_b64encode(b"\x04" + rng.randbytes(64)).decode()
    text = _t(
        """
        mastodon@social:~/live$ grep -E '^(LOCAL_DOMAIN|SECRET_KEY_BASE|VAPID_|DB_|REDIS_)' .env.production
        LOCAL_DOMAIN=social.example.eu
        REDIS_HOST=localhost
        REDIS_PORT=6379
        DB_HOST=/var/run/postgresql
        DB_USER=mastodon
        DB_NAME=mastodon_production
        DB_PASS=
        DB_PORT=5432
        SECRET_KEY_BASE=⟨skb⟩
        VAPID_PRIVATE_KEY=⟨priv⟩
        VAPID_PUBLIC_KEY=⟨pub⟩
        """,
        skb=skb,
        priv=vapid_private,
        pub=vapid_public,
    )
    return text, (skb, vapid_private)


@_credential("gitlab-rb-ses-smtp-password")
def _gitlab_rb(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = "B" + _draw(rng, _B64CHARS, 43)
    text = _t(
        """
        ### GitLab email server settings
        ###! Docs: https://docs.gitlab.com/omnibus/settings/smtp.html
        gitlab_rails['smtp_enable'] = true
        gitlab_rails['smtp_address'] = "email-smtp.eu-west-1.amazonaws.com"
        gitlab_rails['smtp_port'] = 587
        gitlab_rails['smtp_user_name'] = "AKIA⟨uid⟩"
        gitlab_rails['smtp_password'] = "⟨pw⟩"
        gitlab_rails['smtp_domain'] = "git.acme.example"
        gitlab_rails['smtp_authentication'] = "login"
        gitlab_rails['smtp_enable_starttls_auto'] = true
        gitlab_rails['gitlab_email_from'] = 'gitlab@acme.example'
        gitlab_rails['gitlab_email_reply_to'] = 'noreply@acme.example'
        """,
        uid=_draw(rng, _UPPER_NUM, 16),
        pw=pw,
    )
    return text, (pw,)


@_credential("nextcloud-config-php-secret-dbpassword")
def _nextcloud(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret, dbpw = _draw(rng, _B64CHARS, 48), _generated(rng, 24, "!%*+-=?@^_~")
    text = _t(
        """
        <?php
        $CONFIG = array (
          'instanceid' => 'oc⟨iid⟩',
          'secret' => '⟨secret⟩',
          'trusted_domains' =>
          array (
            0 => 'cloud.familie-example.de',
          ),
          'datadirectory' => '/var/www/nextcloud/data',
          'dbtype' => 'mysql',
          'version' => '29.0.⟨v⟩.1',
          'overwrite.cli.url' => 'https://cloud.familie-example.de',
          'dbname' => 'nextcloud',
          'dbhost' => 'localhost',
          'dbport' => '',
          'dbtableprefix' => 'oc_',
          'mysql.utf8mb4' => true,
          'dbuser' => 'nextcloud',
          'dbpassword' => '⟨dbpw⟩',
          'installed' => true,
          'maintenance' => false,
        );
        """,
        iid=_draw(rng, _LOWER_NUM, 10),
        secret=secret,
        v=_num(rng, 1, 9),
        dbpw=dbpw,
    )
    return text, (secret, dbpw)


@_credential("home-assistant-secrets-yaml")
def _home_assistant(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    mqtt, owm = _short(rng), _hx(rng, 32)
    text = _t(
        """
        # /config/secrets.yaml
        # Use this file to store secrets like usernames and passwords.
        # Learn more at https://www.home-assistant.io/docs/configuration/secrets/
        home_latitude: 52.⟨lat⟩
        home_longitude: 13.⟨lon⟩
        mqtt_username: homeassistant
        mqtt_password: ⟨mqtt⟩
        openweathermap_api_key: ⟨owm⟩
        external_url: https://ha.wohnung-example.de
        """,
        lat=_num(rng, 1000, 9999),
        lon=_num(rng, 1000, 9999),
        mqtt=mqtt,
        owm=owm,
    )
    return text, (mqtt, owm)


@_credential("synapse-homeserver-shared-secrets")
def _synapse(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    symbols = ".,;:^&*-_+=#~@"
    reg, macaroon = _draw(rng, _ALNUM + symbols, 50), _draw(rng, _ALNUM + symbols, 50)
    text = _t(
        """
        # homeserver.yaml (the parts I changed, secrets left as generated)
        server_name: "chat.verein-example.org"
        pid_file: /data/homeserver.pid
        listeners:
          - port: 8008
            tls: false
            type: http
            x_forwarded: true
            resources:
              - names: [client, federation]
                compress: false
        database:
          name: psycopg2
          args:
            user: synapse
            database: synapse
            host: /run/postgresql
        log_config: "/data/chat.verein-example.org.log.config"
        media_store_path: /data/media_store
        registration_shared_secret: "⟨reg⟩"
        report_stats: false
        macaroon_secret_key: "⟨mac⟩"
        signing_key_path: "/data/chat.verein-example.org.signing.key"
        trusted_key_servers:
          - server_name: "matrix.org"
        """,
        reg=reg,
        mac=macaroon,
    )
    return text, (reg, macaroon)


@_credential("code-server-config-yaml-password")
def _code_server(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _hx(rng, 24)
    text = _t(
        """
        $ code-server
        [⟨ts⟩.⟨ms⟩Z] info  Wrote default config file to /home/dev/.config/code-server/config.yaml
        [⟨ts⟩.⟨ms⟩Z] info  code-server 4.96.⟨p⟩ ⟨sha⟩
        [⟨ts⟩.⟨ms⟩Z] info  Using config file /home/dev/.config/code-server/config.yaml
        [⟨ts⟩.⟨ms⟩Z] info  HTTP server listening on http://127.0.0.1:8080/
        [⟨ts⟩.⟨ms⟩Z] info    - Authentication is enabled
        [⟨ts⟩.⟨ms⟩Z] info      - Using password from /home/dev/.config/code-server/config.yaml
        ^C
        $ cat ~/.config/code-server/config.yaml
        bind-addr: 127.0.0.1:8080
        auth: password
        password: ⟨pw⟩
        cert: false
        """,
        ts=_when(rng),
        ms=_num(rng, 100, 999),
        p=_num(rng, 1, 4),
        sha=_hx(rng, 40),
        pw=pw,
    )
    return text, (pw,)


@_credential("powerdns-pdns-conf-api-key-gmysql")
def _powerdns(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    api, db = _draw(rng, _ALNUM, 32), _generated(rng, 18, "%+-=_~.")
    text = _t(
        """
        # /etc/powerdns/pdns.conf
        launch=gmysql
        gmysql-host=127.0.0.1
        gmysql-port=3306
        gmysql-dbname=pdns
        gmysql-user=pdns
        gmysql-password=⟨db⟩
        gmysql-dnssec=yes

        api=yes
        api-key=⟨api⟩
        webserver=yes
        webserver-address=127.0.0.1
        webserver-port=8081
        webserver-allow-from=127.0.0.1,::1
        local-address=0.0.0.0, ::
        default-soa-content=ns1.dns-example.net hostmaster.@ 0 10800 3600 604800 3600
        """,
        db=db,
        api=api,
    )
    return text, (db, api)


# --------------------------------------------------------------------------------------------------------
# Provisioning and images
# --------------------------------------------------------------------------------------------------------


@_credential("kickstart-rootpw-plaintext")
def _kickstart(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 14, "!%*+-=?@^_~")
    text = _t(
        """
        # ks.cfg -- Rocky Linux 9 build hosts
        text
        lang en_US.UTF-8
        keyboard --xlayouts='de'
        timezone Europe/Berlin --utc
        network --bootproto=dhcp --device=link --activate --hostname=build-⟨n⟩.lab.internal
        rootpw --plaintext ⟨pw⟩
        user --name=ansible --groups=wheel --iscrypted --password=$6$⟨salt⟩$⟨hash⟩
        selinux --enforcing
        firewall --enabled --ssh
        bootloader --location=mbr --append="crashkernel=auto"
        clearpart --all --initlabel
        autopart --type=lvm
        reboot

        %packages
        @^minimal-environment
        tmux
        %end
        """,
        n=_num(rng, 10, 99),
        pw=pw,
        salt=_draw(rng, _ALNUM + "./", 16),
        hash=_draw(rng, _ALNUM + "./", 86),
    )
    return text, (pw,)


@_credential("cloud-init-chpasswd-users-text")
def _cloud_init(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    text = _t(
        """
        #cloud-config
        hostname: edge-gw-⟨n⟩
        package_update: true
        packages: [wireguard-tools, nftables, htop]
        chpasswd:
          expire: false
          users:
            - name: ubuntu
              password: ⟨pw⟩
              type: text
        ssh_pwauth: true
        ssh_authorized_keys:
          - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI⟨pub⟩ noc@acme
        runcmd:
          - [systemctl, enable, --now, nftables]
        """,
        n=_num(rng, 10, 99),
        pw=pw,
        pub=_draw(rng, _B64CHARS, 43),
    )
    return text, (pw,)


@_credential("packer-hcl-winrm-password")
def _packer(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!#%*+-=?@^_~")
    text = _t(
        """
        # windows-2022.pkr.hcl
        packer {
          required_plugins {
            amazon = {
              version = ">= 1.3.0"
              source  = "github.com/hashicorp/amazon"
            }
          }
        }

        source "amazon-ebs" "win2022" {
          ami_name       = "win2022-base-{{timestamp}}"
          instance_type  = "t3.large"
          region         = "eu-west-1"
          source_ami_filter {
            filters = {
              name = "Windows_Server-2022-English-Full-Base-*"
            }
            owners      = ["amazon"]
            most_recent = true
          }
          communicator   = "winrm"
          winrm_username = "Administrator"
          winrm_password = "⟨pw⟩"
          winrm_use_ssl  = true
          winrm_insecure = true
          user_data_file = "./scripts/bootstrap_win.txt"
        }

        build {
          sources = ["source.amazon-ebs.win2022"]
          provisioner "powershell" {
            script = "./scripts/install-agents.ps1"
          }
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("s3cmd-s3cfg-do-spaces")
def _s3cfg(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _B64CHARS, 43)
    text = _t(
        """
        $ cat ~/.s3cfg
        [default]
        access_key = DO00⟨ak⟩
        secret_key = ⟨secret⟩
        host_base = fra1.digitaloceanspaces.com
        host_bucket = %(bucket)s.fra1.digitaloceanspaces.com
        bucket_location = fra1
        use_https = True
        signature_v2 = False
        $ s3cmd ls s3://acme-backups/db/ | tail -2
        ⟨day⟩ 02:14   ⟨size⟩   s3://acme-backups/db/orders-⟨day⟩.sql.zst
        """,
        ak=_draw(rng, _UPPER_NUM, 16),
        secret=secret,
        day=_day(rng),
        size=_num(rng, 100000000, 999999999),
    )
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# Archives, keys and signing tools
# --------------------------------------------------------------------------------------------------------


@_credential("7z-backup-script-p-flag")
def _sevenzip(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, "_") + _num(rng, 10, 99)
    text = _t(
        """
        #!/usr/bin/env bash
        # nightly-crm-export.sh -- the archive goes to the NAS share, encrypted (headers too)
        set -euo pipefail
        STAMP=$(date +%F)
        SRC=/var/lib/crm/exports
        DEST=/mnt/nas/exports

        7z a -t7z -mhe=on -mx=7 -p'⟨pw⟩' "$DEST/crm-$STAMP.7z" "$SRC"/
        find "$DEST" -name 'crm-*.7z' -mtime +30 -delete
        logger -t crm-export "archived $(du -sh "$DEST/crm-$STAMP.7z" | cut -f1)"
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("gpg-symmetric-batch-passphrase")
def _gpg(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 5, " ")
    text = _t(
        """
        $ gpg --batch --yes --pinentry-mode loopback --passphrase '⟨pw⟩' --symmetric --cipher-algo AES256 -o payroll-2026-02.csv.gpg payroll-2026-02.csv
        $ ls -l payroll-2026-02.csv.gpg
        -rw-r--r-- 1 hr hr ⟨size⟩ Mar  ⟨d⟩ 09:14 payroll-2026-02.csv.gpg
        $ shred -u payroll-2026-02.csv
        """,
        pw=pw,
        size=_num(rng, 20000, 90000),
        d=_num(rng, 1, 9),
    )
    return text, (pw,)


@_credential("borg-create-passphrase-env")
def _borg(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _b64(rng, 24)
    box = _num(rng, 100000, 999999)
    text = _t(
        """
        # /usr/local/sbin/backup-web01.sh
        export BORG_REPO='ssh://u⟨box⟩@u⟨box⟩.your-storagebox.de:23/./backups/web01'
        export BORG_PASSPHRASE='⟨pw⟩'

        borg create --stats --compression zstd,6 ::'{hostname}-{now:%Y-%m-%dT%H:%M}' /etc /srv /var/www
        borg prune --keep-daily 7 --keep-weekly 4 --keep-monthly 6
        borg compact
        """,
        box=box,
        pw=pw,
    )
    return text, (pw,)


@_credential("keytool-genkeypair-storepass-keypass")
def _keytool(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    store, key = _generated(rng, 16, "_-.+="), _generated(rng, 16, "_-.+=")
    text = _t(
        """
        $ keytool -genkeypair -v -keystore release.jks -alias upload -keyalg RSA -keysize 2048 -validity 10000 -storepass ⟨store⟩ -keypass ⟨key⟩ -dname "CN=Acme Mobile, OU=Apps, O=Acme GmbH, L=Berlin, C=DE"
        Generating 2,048 bit RSA key pair and self-signed certificate (SHA256withRSA) with a validity of 10,000 days
        \tfor: CN=Acme Mobile, OU=Apps, O=Acme GmbH, L=Berlin, C=DE
        [Storing release.jks]
        """,
        store=store,
        key=key,
    )
    return text, (store, key)


@_credential("xcrun-altool-app-specific-password")
def _altool(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = "-".join(_draw(rng, string.ascii_lowercase, 4) for _ in range(4))
    text = _t(
        """
        $ xcrun altool --upload-app -f build/AcmeWallet.ipa -t ios -u ios-release@acme.example -p "⟨pw⟩"
        ⟨day⟩ ⟨clock⟩.⟨ms⟩ *** Warning: altool has been deprecated for uploading apps to App Store Connect. Use Transporter instead.
        No errors uploading 'build/AcmeWallet.ipa'
        """,
        pw=pw,
        day=_day(rng),
        clock=_clock(rng),
        ms=_num(rng, 100, 999),
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# People: chats, e-mails, tickets, notes and tables
# --------------------------------------------------------------------------------------------------------


@_credential("russian-telegram-parol")
def _russian(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    d = f"{rng.randint(1, 28):02d}.0{rng.randint(1, 9)}.2026"
    text = _t(
        """
        Дмитрий Соколов, [⟨d⟩ 10:12]
        Привет! Завёл тебе учётку в Jira, логин a.petrova

        Дмитрий Соколов, [⟨d⟩ 10:13]
        Пароль: ⟨pw⟩
        Поменяй его после первого входа, пожалуйста

        Анна Петрова, [⟨d⟩ 10:15]
        Спасибо, зашла 👍
        """,
        d=d,
        pw=pw,
    )
    return text, (pw,)


@_credential("turkish-email-gecici-sifre")
def _turkish(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 12, "!#%*+=?@")
    text = _t(
        """
        From: BT Destek <destek@firma-ornek.com.tr>
        To: Elif Yılmaz <elif.yilmaz@firma-ornek.com.tr>
        Subject: VPN hesabınız oluşturuldu
        Date: ⟨day⟩ 09:41 +0300

        Merhaba Elif Hanım,

        Uzaktan erişim (VPN) hesabınız tanımlanmıştır. Giriş bilgileriniz aşağıdadır:

        Kullanıcı adı: elif.yilmaz
        Geçici şifre: ⟨pw⟩

        İlk girişte şifrenizi değiştirmeniz istenecektir. Şifrenizi kimseyle paylaşmayınız.

        Saygılarımızla,
        BT Destek Ekibi
        """,
        day=_day(rng),
        pw=pw,
    )
    return text, (pw,)


@_credential("vietnamese-zalo-mat-khau")
def _vietnamese(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _plain_person(rng)
    text = _t(
        """
        Minh Tuấn  09:12
        Chị Lan ơi, em gửi tài khoản quản trị đầu ghi camera kho Bình Dương nha

        Minh Tuấn  09:12
        Địa chỉ: http://192.168.10.⟨ip⟩
        Tài khoản: admin
        Mật khẩu: ⟨pw⟩

        Ngọc Lan  09:20
        Ok em, chị vào được rồi. Cảm ơn em nhé!
        """,
        ip=_num(rng, 20, 250),
        pw=pw,
    )
    return text, (pw,)


@_credential("hindi-whatsapp-export-password")
def _hindi(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "@#!")
    d = f"{rng.randint(1, 28):02d}/0{rng.randint(1, 9)}/26"
    text = _t(
        """
        ⟨d⟩, 9:41 am - Rahul Sharma: सर, स्टेजिंग सर्वर का लॉगिन भेज रहा हूँ
        ⟨d⟩, 9:41 am - Rahul Sharma: होस्ट: staging-03.internal
        ⟨d⟩, 9:41 am - Rahul Sharma: यूज़रनेम: deploy
        ⟨d⟩, 9:42 am - Rahul Sharma: पासवर्ड: ⟨pw⟩
        ⟨d⟩, 9:45 am - Amit Verma: ठीक है, मिल गया। धन्यवाद 🙏
        """,
        d=d,
        pw=pw,
    )
    return text, (pw,)


@_credential("swedish-slack-losenord")
def _swedish(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, "-") + _num(rng, 1, 9)
    text = _t(
        """
        Karin Lindqvist  10:42
        Hej! Jag har satt upp det delade kontot för Figma nu.
        Användarnamn: design@studio-exempel.se
        Lösenord: ⟨pw⟩
        Byt inte lösenordet utan att säga till i #design-team 🙏
        Oskar Nyström  10:44
        Tack! Funkar fint 👍
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("czech-ticket-heslo-next-line")
def _czech(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 13, "!%*+-=?@_")
    text = _t(
        """
        Předmět: Re: [HD-⟨t⟩] Přístup na SFTP pro účetní

        Dobrý den paní Dvořáková,

        zřídili jsme Vám přístup na SFTP server sftp.firma-priklad.cz (port 22).

        Uživatelské jméno: dvorakova.ucetni
        Heslo:
        ⟨pw⟩

        Heslo si prosím po prvním přihlášení změňte (příkaz passwd).

        S pozdravem
        Tomáš Novák
        IT oddělení
        """,
        t=_num(rng, 10000, 99999),
        pw=pw,
    )
    return text, (pw,)


@_credential("wallet-seed-phrase-handover-note")
def _seed_phrase(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    phrase = " ".join(rng.sample(_SEED_WORDS, 12))
    text = _t(
        """
        Treasury handover -- Ledger Nano X (cold wallet, safe #2)

        - Device PIN: held by the CFO, not written here.
        - Receive address (public, fine to share): bc1q⟨addr⟩
        - Recovery seed phrase: ⟨phrase⟩

        Once you have copied the seed phrase onto the steel plate, delete this note and empty the trash.
        """,
        addr=_draw(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
        phrase=phrase,
    )
    return text, (phrase,)


@_credential("luks-passphrase-prose-email")
def _luks(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 5, " ")
    text = _t(
        """
        Hi Jonas,

        your new ThinkPad is ready at the front desk. The disk is encrypted (LUKS2), so it asks for a passphrase
        before it boots. The passphrase is ⟨pw⟩ -- all lower case, single spaces between the words.

        After your first login, please add your own passphrase with `sudo cryptsetup luksAddKey /dev/nvme0n1p3`
        and tell me, so I can remove this one.

        Cheers,
        Ruth (IT)
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("rst-grid-table-service-accounts")
def _rst_table(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!#%*+-=?@^_~")
    rows = [
        ("Grafana", "admin", "see Vault: ops/grafana"),
        ("RabbitMQ management", "ops", pw),
        ("Kibana", "SSO (Okta)", "n/a"),
    ]
    widths = [max(len(r[i]) for r in rows + [("System", "Login", "Password")]) + 2 for i in range(3)]

    def line(ch: str) -> str:
        return "+" + "+".join(ch * w for w in widths) + "+"

    def row(cells: tuple[str, str, str]) -> str:
        return "|" + "|".join((" " + c).ljust(w) for c, w in zip(cells, widths, strict=True)) + "|"

    table = [line("-"), row(("System", "Login", "Password")), line("=")]
    for r in rows:
        table += [row(r), line("-")]
    text = (
        "Staging service accounts\n========================\n\n"
        "Rotated every quarter. Production accounts live in Vault only.\n\n" + "\n".join(table) + "\n"
    )
    return text, (pw,)


@_credential("tsv-spreadsheet-paste-shared-logins")
def _tsv(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    rows = [
        ("Tool", "URL", "Login", "Password", "Owner"),
        ("Canva", "https://www.canva.com", "marketing@laden-beispiel.de", "SSO", "Jana"),
        ("Shopware admin", "https://shop.laden-beispiel.de/admin", "redaktion", pw, "Jana"),
        ("Google Ads", "https://ads.google.com", "marketing@laden-beispiel.de", "SSO", "Felix"),
    ]
    text = "\n".join("\t".join(r) for r in rows) + "\n"
    return text, (pw,)


@_credential("shell-heredoc-writes-env-file")
def _heredoc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "xaat-" + _uid(rng)
    text = _t(
        """
        $ sudo tee /etc/default/vector >/dev/null <<'EOF'
        AXIOM_DATASET=edge-logs
        AXIOM_TOKEN=⟨tok⟩
        VECTOR_LOG=info
        EOF
        $ sudo systemctl restart vector
        $ systemctl is-active vector
        active
        """,
        tok=token,
    )
    return text, (token,)


@_credential("git-diff-plus-password-line")
def _git_diff(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 20, "!%*+-=?@^_~")
    text = _t(
        """
        diff --git a/deploy/staging.env b/deploy/staging.env
        index ⟨a⟩..⟨b⟩ 100644
        --- a/deploy/staging.env
        +++ b/deploy/staging.env
        @@ -4,7 +4,7 @@ APP_ENV=staging
         LOG_LEVEL=debug
         DB_HOST=pg-staging.internal
         DB_USER=orders
        -DB_PASSWORD=${DB_PASSWORD}
        +DB_PASSWORD=⟨pw⟩
         REDIS_URL=redis://redis-staging.internal:6379/0
         FEATURE_FLAGS=checkout_v2,fast_refunds
        """,
        a=_hx(rng, 7),
        b=_hx(rng, 7),
        pw=pw,
    )
    return text, (pw,)


@_credential("firefox-logins-csv-export")
def _firefox(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    quoted = rng.choice(_WORDS).capitalize() + '""' + rng.choice(_WORDS) + _num(rng, 10, 99)
    plain = _generated(rng, 16, "!#%*+-=?@^_~")
    t1, t2 = (
        rng.randint(1_700_000_000_000, 1_760_000_000_000),
        rng.randint(1_700_000_000_000, 1_760_000_000_000),
    )
    text = _t(
        """
        "url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"
        "https://login.stadtwerke-beispiel.de","k.hoffmann","⟨q⟩",,"https://login.stadtwerke-beispiel.de","{⟨g1⟩}","⟨t1⟩","⟨t1b⟩","⟨t1⟩"
        "https://forum.fotografie-beispiel.de","khoff","⟨p⟩",,"https://forum.fotografie-beispiel.de","{⟨g2⟩}","⟨t2⟩","⟨t2b⟩","⟨t2⟩"
        """,
        q=quoted,
        p=plain,
        g1=_uid(rng),
        g2=_uid(rng),
        t1=str(t1),
        t1b=str(t1 + rng.randint(10_000_000, 900_000_000)),
        t2=str(t2),
        t2b=str(t2 + rng.randint(10_000_000, 900_000_000)),
    )
    return text, (quoted, plain)


@_credential("gerrit-http-password-git-insteadof")
def _gerrit(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 42)
    text = _t(
        """
        $ git config --global url."https://jdoe:⟨pw⟩@review.acme.internal/a/".insteadOf "https://review.acme.internal/"
        $ git config --global --get-regexp '^url\\.'
        url.https://jdoe:⟨pw⟩@review.acme.internal/a/.insteadof https://review.acme.internal/
        $ git clone https://review.acme.internal/platform/build-tools
        Cloning into 'build-tools'...
        remote: Counting objects: ⟨n⟩, done
        Receiving objects: 100% (⟨n⟩/⟨n⟩), done.
        """,
        pw=pw,
        n=_num(rng, 1000, 9999),
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Clean documents: no credential, plenty of look-alikes
# --------------------------------------------------------------------------------------------------------


@_clean("clean-aws-iam-list-access-keys-ids-only")
def _clean_aws_keys(rng: random.Random) -> str:
    acct = _num(rng, 100000000000, 999999999999)
    return _t(
        """
        $ aws iam list-access-keys --user-name billing-exporter
        {
            "AccessKeyMetadata": [
                {
                    "UserName": "billing-exporter",
                    "AccessKeyId": "AKIA⟨k1⟩",
                    "Status": "Active",
                    "CreateDate": "⟨d1⟩Z"
                },
                {
                    "UserName": "billing-exporter",
                    "AccessKeyId": "AKIA⟨k2⟩",
                    "Status": "Inactive",
                    "CreateDate": "⟨d2⟩Z"
                }
            ]
        }
        $ aws sts get-caller-identity
        {
            "UserId": "AROA⟨role⟩:ci-session",
            "Account": "⟨acct⟩",
            "Arn": "arn:aws:sts::⟨acct⟩:assumed-role/ci-deployer/ci-session"
        }
        """,
        k1=_draw(rng, _UPPER_NUM, 16),
        k2=_draw(rng, _UPPER_NUM, 16),
        d1=_when(rng),
        d2=_when(rng),
        role=_draw(rng, _UPPER_NUM, 17),
        acct=acct,
    )


@_clean("clean-az-ad-sp-list-app-ids")
def _clean_az_sp(rng: random.Random) -> str:
    rows = "\n".join(
        f"{name:<26}{_uid(rng)}  {_uid(rng)}  {_day(rng)}"
        for name in ("platform-terraform", "github-actions-deployer", "grafana-azure-monitor")
    )
    return (
        "$ az ad sp list --filter \"startswith(displayName,'platform')\" "
        '--query "[].{name:displayName, appId:appId, id:id}" -o table\n'
        "Name                      AppId                                 Id                                    Created\n"
        "------------------------  ------------------------------------  ------------------------------------  ----------\n"
        + rows
        + "\n$ az ad app credential list --id "
        + _uid(rng)
        + ' --query "[].{hint:hint, end:endDateTime}" -o table\nHint    End\n------  --------------------\n'
        + f"{_draw(rng, _ALNUM, 3)}     {_when(rng)}Z\n"
    )


@_clean("clean-pg-authid-scram-verifiers")
def _clean_pg_authid(rng: random.Random) -> str:
    def scram() -> str:
        return f"SCRAM-SHA-256$4096:{_b64(rng, 16)}${_b64(rng, 32)}:{_b64(rng, 32)}"

    return _t(
        """
        postgres=# SELECT rolname, rolcanlogin, rolpassword FROM pg_authid WHERE rolname IN ('orders_app', 'reporting', 'replicator');
          rolname   | rolcanlogin |                                                              rolpassword
        ------------+-------------+---------------------------------------------------------------------------------------------------------------------------------------
         orders_app | t           | ⟨a⟩
         reporting  | t           | ⟨b⟩
         replicator | t           | ⟨c⟩
        (3 rows)
        """,
        a=scram(),
        b=scram(),
        c=scram(),
    )


@_clean("clean-nuget-packages-lock-content-hash")
def _clean_nuget_lock(rng: random.Random) -> str:
    def entry(name: str, version: str) -> str:
        return (
            f'      "{name}": {{\n        "type": "Direct",\n        "requested": "[{version}, )",\n'
            f'        "resolved": "{version}",\n        "contentHash": "{_b64(rng, 64)}"\n      }}'
        )

    body = ",\n".join(
        [
            entry("Adyen", "28.1.0"),
            entry("Microsoft.Extensions.Http", "8.0.1"),
            entry("Serilog.AspNetCore", "8.0.3"),
        ]
    )
    return '{\n  "version": 1,\n  "dependencies": {\n    "net8.0": {\n' + body + "\n    }\n  }\n}\n"


@_clean("clean-harbor-artifact-digests-table")
def _clean_harbor(rng: random.Random) -> str:
    rows = "\n".join(
        f"| {tag:<10} | sha256:{_hx(rng, 64)} | {rng.randint(20, 400)} MiB | {_when(rng)} |"
        for tag in ("1.31.2", "1.31.1", "1.30.9")
    )
    return (
        "Artifacts in library/billing-api (pulled from the Harbor UI)\n\n"
        "| Tag        | Digest                                                                  | Size    | Pushed              |\n"
        "|------------|-------------------------------------------------------------------------|---------|---------------------|\n"
        + rows
        + "\n\nRobot accounts: `robot$ci-push` (push), `robot$k8s-pull` (pull). Secrets are in Vault under `ci/harbor/*`.\n"
    )


@_clean("clean-nats-server-conf-public-nkeys")
def _clean_nats(rng: random.Random) -> str:
    return _t(
        """
        # nats-server.conf (operator mode, public keys only)
        port: 4222
        http_port: 8222
        operator: /etc/nats/ACME.jwt
        system_account: A⟨sys⟩
        resolver: {
          type: full
          dir: '/data/nats/jwt'
          allow_delete: false
          interval: "2m"
        }
        resolver_preload: {
          # account ORDERS (public nkey -> account JWT lives in the resolver dir)
          A⟨acc⟩: "see /data/nats/jwt"
        }
        authorization {
          # users are listed by public nkey; their seeds never leave the client hosts
          users: [
            { nkey: U⟨u1⟩ }
            { nkey: U⟨u2⟩ }
          ]
        }
        """,
        sys=_draw(rng, _B32, 55),
        acc=_draw(rng, _B32, 55),
        u1=_draw(rng, _B32, 55),
        u2=_draw(rng, _B32, 55),
    )


@_clean("clean-kickstart-rootpw-iscrypted-lock")
def _clean_kickstart(rng: random.Random) -> str:
    return _t(
        """
        # ks.cfg -- hardened image, no plaintext passwords allowed in this repo
        lang en_US.UTF-8
        keyboard us
        timezone UTC --utc
        rootpw --lock
        user --name=ops --groups=wheel --iscrypted --password=$6$⟨s1⟩$⟨h1⟩
        sshkey --username=ops "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI⟨pub⟩ ops@bastion"
        services --enabled=sshd,chronyd
        selinux --enforcing
        reboot
        """,
        s1=_draw(rng, _ALNUM + "./", 16),
        h1=_draw(rng, _ALNUM + "./", 86),
        pub=_draw(rng, _B64CHARS, 43),
    )


@_clean("clean-web-config-machinekey-autogenerate")
def _clean_machinekey(rng: random.Random) -> str:
    return _t(
        """
        <configuration>
          <system.web>
            <compilation debug="false" targetFramework="4.8" />
            <machineKey validationKey="AutoGenerate,IsolateApps" decryptionKey="AutoGenerate,IsolateApps" validation="HMACSHA256" decryption="AES" />
            <sessionState mode="InProc" timeout="20" />
          </system.web>
          <runtime>
            <assemblyBinding xmlns="urn:schemas-microsoft-com:asm.v1">
              <dependentAssembly>
                <assemblyIdentity name="Newtonsoft.Json" publicKeyToken="30ad4fe6b2a6aeed" culture="neutral" />
                <bindingRedirect oldVersion="0.0.0.0-13.0.0.0" newVersion="13.0.0.0" />
              </dependentAssembly>
            </assemblyBinding>
          </runtime>
          <!-- build ⟨build⟩, commit ⟨sha⟩ -->
        </configuration>
        """,
        build=_num(rng, 1000, 9999),
        sha=_hx(rng, 40),
    )


@_clean("clean-ldif-export-without-passwords")
def _clean_ldif(rng: random.Random) -> str:
    return _t(
        """
        # extended LDIF, attributes: * +  (userPassword filtered by ACL)
        dn: uid=mkowalczyk,ou=people,dc=acme,dc=internal
        objectClass: inetOrgPerson
        objectClass: posixAccount
        uid: mkowalczyk
        cn: Marta Kowalczyk
        uidNumber: ⟨n⟩
        gidNumber: 10000
        entryUUID: ⟨uuid⟩
        entryCSN: ⟨csn⟩#000000#000#000000
        createTimestamp: 2026⟨ts⟩Z
        jpegPhoto:: /9j/4AAQSkZJRgABAQAAAQABAAD⟨photo⟩
        """,
        n=_num(rng, 10000, 19999),
        uuid=_uid(rng),
        csn=_day(rng).replace("-", "") + _clock(rng).replace(":", "") + "." + _num(rng, 100000, 999999) + "Z",
        ts=_day(rng).replace("-", "")[4:] + _clock(rng).replace(":", ""),
        photo=_b64(rng, 48),
    )


@_clean("clean-langchain-callback-token-usage")
def _clean_langchain(rng: random.Random) -> str:
    prompt, completion = rng.randint(800, 4000), rng.randint(50, 900)
    return _t(
        """
        > Finished chain.
        Tokens Used: ⟨total⟩
        \tPrompt Tokens: ⟨p⟩
        \t\tPrompt Tokens Cached: 0
        \tCompletion Tokens: ⟨c⟩
        \t\tReasoning Tokens: 0
        Successful Requests: 2
        Total Cost (USD): $0.00⟨cost⟩
        run_id=⟨run⟩ parent_run_id=None tags=['agent', 'docs-qa'] max_tokens=1024 token_budget=50000
        """,
        total=str(prompt + completion),
        p=str(prompt),
        c=str(completion),
        cost=_num(rng, 1000, 9999),
        run=_uid(rng),
    )


@_clean("clean-mcp-json-input-variable-references")
def _clean_mcp(rng: random.Random) -> str:
    return _t(
        """
        // .vscode/mcp.json -- keys are prompted once and stored by VS Code, never in this file
        {
          "inputs": [
            { "type": "promptString", "id": "tavily-key", "description": "Tavily API key", "password": true },
            { "type": "promptString", "id": "gh-token", "description": "GitHub token (repo scope)", "password": true }
          ],
          "servers": {
            "tavily": {
              "command": "npx",
              "args": ["-y", "tavily-mcp@0.2.⟨p⟩"],
              "env": { "TAVILY_API_KEY": "${input:tavily-key}" }
            },
            "github": {
              "command": "docker",
              "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server@sha256:⟨digest⟩"],
              "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${input:gh-token}" }
            }
          }
        }
        """,
        p=_num(rng, 0, 9),
        digest=_hx(rng, 64),
    )


@_clean("clean-razorpay-payment-webhook-ids")
def _clean_razorpay(rng: random.Random) -> str:
    payload = {
        "entity": "event",
        "account_id": "acc_" + _draw(rng, _ALNUM, 14),
        "event": "payment.captured",
        "contains": ["payment"],
        "payload": {
            "payment": {
                "entity": {
                    "id": "pay_" + _draw(rng, _ALNUM, 14),
                    "entity": "payment",
                    "amount": rng.randint(10000, 900000),
                    "currency": "INR",
                    "status": "captured",
                    "order_id": "order_" + _draw(rng, _ALNUM, 14),
                    "method": "upi",
                    "vpa": "customer@okexample",
                    "acquirer_data": {"rrn": _num(rng, 100000000000, 999999999999)},
                    "created_at": _epoch(rng),
                }
            }
        },
        "created_at": _epoch(rng),
    }
    return (
        "POST /webhooks/razorpay (payload as logged, headers dropped)\n"
        + json.dumps(payload, indent=2)
        + "\n"
    )


@_clean("clean-mapbox-public-token-page")
def _clean_mapbox(rng: random.Random) -> str:
    claims = json.dumps({"u": "acme-maps", "a": "cl" + _draw(rng, _LOWER_NUM, 23)}, separators=(",", ":"))
    middle = base64.urlsafe_b64encode(claims.encode()).decode().rstrip("=")
    public = f"pk.{middle}.{_draw(rng, _URLSAFE, 22)}"
    return _t(
        """
        <!doctype html>
        <html lang="de">
        <head>
          <meta charset="utf-8">
          <link href="https://api.mapbox.com/mapbox-gl-js/v3.9.0/mapbox-gl.css" rel="stylesheet">
          <script src="https://api.mapbox.com/mapbox-gl-js/v3.9.0/mapbox-gl.js"></script>
        </head>
        <body>
          <div id="map" style="height: 480px"></div>
          <script>
            // public token, URL-restricted to parcels.acme-maps.example
            mapboxgl.accessToken = '⟨pk⟩';
            new mapboxgl.Map({ container: 'map', style: 'mapbox://styles/acme-maps/cl⟨style⟩', center: [13.40, 52.52], zoom: 11 });
          </script>
        </body>
        </html>
        """,
        pk=public,
        style=_draw(rng, _LOWER_NUM, 23),
    )


@_clean("clean-git-diff-moves-password-to-secret-file")
def _clean_git_diff(rng: random.Random) -> str:
    return _t(
        """
        commit ⟨sha⟩
        Author: Priya Raman <priya.raman@acme.example>
        Date:   Tue Mar 10 09:14:22 2026 +0100

            staging: read the DB password from a Docker secret instead of the env file

        diff --git a/deploy/staging.env b/deploy/staging.env
        index ⟨a⟩..⟨b⟩ 100644
        --- a/deploy/staging.env
        +++ b/deploy/staging.env
        @@ -4,7 +4,7 @@ APP_ENV=staging
         DB_HOST=pg-staging.internal
         DB_USER=orders
        -DB_PASSWORD=********
        +DB_PASSWORD_FILE=/run/secrets/orders_db_password
         REDIS_URL=redis://redis-staging.internal:6379/0
        """,
        sha=_hx(rng, 40),
        a=_hx(rng, 7),
        b=_hx(rng, 7),
    )


@_clean("clean-turkish-password-policy-notice")
def _clean_turkish(rng: random.Random) -> str:
    return _t(
        """
        Konu: Şifre politikası güncellemesi (⟨day⟩)

        Değerli çalışma arkadaşlarımız,

        ⟨day⟩ tarihinden itibaren tüm şifreler en az 14 karakter olmalı ve 180 günde bir değiştirilmelidir.
        Şifrenizi e-posta, WhatsApp veya Teams üzerinden kimseyle paylaşmayınız; BT ekibi sizden asla şifrenizi istemez.
        Örnek biçim: <kelime>-<kelime>-<kelime>-<rakam> (bu bir örnektir, kullanmayınız).

        Sorularınız için: destek@firma-ornek.com.tr, dahili ⟨ext⟩
        """,
        day=_day(rng),
        ext=_num(rng, 1000, 9999),
    )


@_clean("clean-diceware-wordlist-excerpt")
def _clean_diceware(rng: random.Random) -> str:
    start = rng.randint(0, len(_SEED_WORDS) - 12)
    lines = []
    for i, word in enumerate(_SEED_WORDS[start : start + 12]):
        lines.append(f"1111{i // 6 + 1}{i % 6 + 1}\t{word}")
    return (
        "# eff_large_wordlist.txt (excerpt) -- roll five dice per word; this is the list, not a passphrase\n"
        + "\n".join(lines)
        + f"\n# sha256 of the full list: {_hx(rng, 64)}\n"
    )


@_clean("clean-mosquitto-passwd-file-hashes")
def _clean_mosquitto(rng: random.Random) -> str:
    def entry(user: str) -> str:
        return f"{user}:$7$101${_b64(rng, 12)}${_b64(rng, 64)}"

    return (
        "$ sudo cat /etc/mosquitto/passwd\n"
        + "\n".join(entry(u) for u in ("line3-plc-gw", "homeassistant", "telegraf"))
        + "\n$ grep -E '^(password_file|allow_anonymous|listener)' /etc/mosquitto/conf.d/default.conf\n"
        "listener 8883\npassword_file /etc/mosquitto/passwd\nallow_anonymous false\n"
    )


@_clean("clean-gpg-list-secret-keys")
def _clean_gpg(rng: random.Random) -> str:
    fpr = _hx(rng, 40).upper()
    return _t(
        """
        $ gpg --list-secret-keys --with-keygrip --keyid-format long
        /home/hr/.gnupg/pubring.kbx
        ---------------------------
        sec   ed25519/⟨kid⟩ 2025-09-01 [SC] [expires: 2027-09-01]
              ⟨fpr⟩
              Keygrip = ⟨grip1⟩
        uid                 [ultimate] HR Payroll <payroll@acme.example>
        ssb   cv25519/⟨sub⟩ 2025-09-01 [E] [expires: 2027-09-01]
              Keygrip = ⟨grip2⟩
        """,
        kid=fpr[-16:],
        fpr=fpr,
        grip1=_hx(rng, 40).upper(),
        sub=_hx(rng, 16).upper(),
        grip2=_hx(rng, 40).upper(),
    )


@_clean("clean-haproxy-show-stat-csv")
def _clean_haproxy(rng: random.Random) -> str:
    header = "# pxname,svname,qcur,qmax,scur,smax,slim,stot,bin,bout,dreq,dresp,ereq,econ,eresp,wretr,wredis,status"
    rows = []
    for px, sv in (("stats", "FRONTEND"), ("be_api", "api-1"), ("be_api", "api-2"), ("be_api", "BACKEND")):
        nums = ["0", "0", str(rng.randint(0, 40)), str(rng.randint(40, 400)), "3000", str(rng.randint(10_000, 900_000)),
                str(rng.randint(10**6, 10**9)), str(rng.randint(10**6, 10**9)), "0", "0", str(rng.randint(0, 30)),
                str(rng.randint(0, 9)), str(rng.randint(0, 9)), "0", "0"]  # fmt: skip
        rows.append(",".join([px, sv, *nums, "UP" if sv != "FRONTEND" else "OPEN"]))
    return (
        "$ echo 'show stat' | socat stdio /run/haproxy/admin.sock\n" + header + "\n" + "\n".join(rows) + "\n"
    )


@_clean("clean-tsql-create-login-from-windows")
def _clean_tsql(rng: random.Random) -> str:
    return _t(
        """
        -- Reporting access is Windows-authenticated only; SQL logins are disabled on this instance.
        USE [master]
        GO
        CREATE LOGIN [CORP\\svc_reporting] FROM WINDOWS WITH DEFAULT_DATABASE=[Reporting]
        GO
        -- ALTER LOGIN ... WITH PASSWORD = N'<new password here>'  -- template only, not used
        SELECT name, type_desc, is_disabled, create_date, sid FROM sys.server_principals WHERE name LIKE 'CORP\\svc%';
        -- name                 type_desc       is_disabled  create_date              sid
        -- CORP\\svc_reporting   WINDOWS_LOGIN   0            ⟨day⟩ 09:14:22.183  0x010500000000000515000000⟨sid⟩
        """,
        day=_day(rng),
        sid=_hx(rng, 32).upper(),
    )


@_clean("clean-synapse-config-secret-paths")
def _clean_synapse(rng: random.Random) -> str:
    return _t(
        """
        # homeserver.yaml -- secrets are read from files mounted by the orchestrator
        server_name: "chat.verein-example.org"
        registration_shared_secret_path: /run/secrets/synapse_registration_shared_secret
        macaroon_secret_key_path: /run/secrets/synapse_macaroon_secret_key
        form_secret_path: /run/secrets/synapse_form_secret
        signing_key_path: "/data/chat.verein-example.org.signing.key"
        enable_registration: false
        max_upload_size: 50M
        # deployed from commit ⟨sha⟩
        """,
        sha=_hx(rng, 40),
    )


@_clean("clean-splunk-search-results-ids")
def _clean_splunk(rng: random.Random) -> str:
    rows = "\n".join(
        f"{_when(rng).replace('T', ' ')}.{_num(rng, 100, 999)}  ci     deploy finished  billing  {_hx(rng, 40)}  {_uid(rng)}"
        for _ in range(3)
    )
    return (
        'index=ci sourcetype=_json "deploy finished" | table _time index event fields.service fields.sha event_id\n'
        "_time                    index  event            service  sha                                       event_id\n"
        + rows
        + f"\n3 events  (search id: {_num(rng, 1700000000, 1799999999)}.{_num(rng, 1000, 99999)})\n"
    )


@_clean("clean-snyk-sbom-purl-hashes")
def _clean_snyk(rng: random.Random) -> str:
    comps = []
    for name, ver in (("requests", "2.32.3"), ("urllib3", "2.2.3"), ("certifi", "2024.8.30")):
        comps.append(
            {
                "bom-ref": f"{name}@{ver}",
                "type": "library",
                "name": name,
                "version": ver,
                "purl": f"pkg:pypi/{name}@{ver}",
                "hashes": [{"alg": "SHA-256", "content": _hx(rng, 64)}],
            }
        )
    doc = {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": "urn:uuid:" + _uid(rng),
        "components": comps,
    }
    return (
        "$ snyk sbom --format=cyclonedx1.5+json --file=requirements.txt | jq\n"
        + json.dumps(doc, indent=2)
        + "\n"
    )


SHAPES = tuple(name for name, _ in _CREDENTIAL)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape with fresh values (seeded), then the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(name, *build(rng)) for name, build in _CREDENTIAL]
    return docs + [Document(name, build(rng)) for name, build in _CLEAN]
