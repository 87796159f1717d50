"""The HOLDOUT4 part of the secret corpus: a fourth blind part, written after HOLDOUT, HOLDOUT2 and HOLDOUT3.

Written blind: its author never read the detector, its rules, its docs, its tests or its figures, and no
document was run through a detector or changed after one. Every document copies what a real tool, config
file, agent, person or trace writes, with tools, vendors and formats the earlier parts do not use:

- config formats: a notebook (.ipynb) cell, a Dockerfile `ENV`, YAML anchors and merge keys (newrelic.yml,
  compose), Terraform HCL, NixOS and nix.conf, a systemd `SetCredential=`, a crontab, Tomcat (XML attribute)
  and ClickHouse (XML element) users, flyway.conf, rclone (INI), Cargo and hcloud (TOML), CloudFormation,
  a Pulumi state export, kustomize, Gitea's app.ini, sentry.properties, a FileZilla site manager, fstab,
  Cisco IOS, an OpenVPN auth file, VS Code settings with comments;
- shells, CLIs and logs: `op read`, Doppler, `sops -d`, `cat` of an OpenSSH private key, `fly tokens create`,
  `ngrok config add-authtoken` (a positional argument), `tailscale up` in cloud-init, `net use` (a positional
  password), Composer and Bundler credentials, `dotnet user-secrets list`, `az account get-access-token`,
  a Maven `-Dgpg.passphrase=` property, a Buildkite agent log, `flutter run --dart-define`, sqlcmd, psql on Neon;
- HTTP and clients: an OkHttp trace with a Shopify token, wget with an Artifactory key, a Telegram bot token
  in a URL path, httpie with a Grafana service-account token, an urllib3 debug log with an Okta SSWS header,
  a Typesense key-creation response, an nginx access log with an `appid=` query, SMTP `AUTH LOGIN` (base64)
  and IMAP `LOGIN` sessions, a PagerDuty routing key in curl's JSON body;
- SDK code in Go (tab indented), Java, C#, Ruby, PHP, Rust, Kotlin, Swift, Elixir, Python and JavaScript;
- browser, agents and debug dumps: localStorage (Auth0 cache) and `document.cookie` (a next-auth JWE),
  an assistant `tool_use` block, an MCP client config, a JSONL chat log where the user types a password and a
  2FA backup code in prose, an AxiosError dump, a PHP `var_dump`;
- people: a German ticket ("Passwort:" and the value on the next line), a Spanish WhatsApp export
  ("contraseña"), a Chinese WeChat message ("密码："), a French e-mail ("mot de passe provisoire :"),
  forwarded recovery codes, a Jira `{noformat}` block, a Notion table of shared accounts, a chat message that
  is nothing but the value.

Each document plants one or two values; every value appears verbatim in its text and is 8 characters or
more. Value forms: vendor prefixes none of the earlier parts use (sk-ant-api03-, github_pat_, ghp_, shpat_,
AKCp8, EAAA, r8_, glsa_, npg_, cio, K005, rk_live_, dp.st., FlyV1 fm2_, tskey-auth-, sntrys_,
lin_api_, ntn_, figd_, xoxb-/xapp-, pat…., os_v2_app_, re_), hex, base64, base64url, base58, JWTs (HS256
and RS256) and a JWE, word chains (with a space, `-`, `_`, `/`, `#`), people's passwords (a word, digits
and a mark), short generated passwords (8 to 12 characters), punctuation-heavy ones, an OpenSSH key body,
base64 of a password (SMTP, FileZilla) and a `user:password` pair (Bundler).

Decisions: a recovery or backup code of 10 or more characters is a credential (a 6-digit TOTP code is out of
scope and appears only in prose); identifiers next to a secret (an Algolia app id, a Braintree public key, a
Pusher app key, a Composer username, a Stream API key) are not planted; no document holds a credential value
beside the one or two it plants; password hashes (bcrypt inside the Pulumi export, Django's pbkdf2/argon2) are
not credentials.

The clean documents hold no credential but plenty of look-alikes: an SSH-signed commit, SHA512SUMS, trace and
request ids, a notebook PNG output, SSH host public keys, placeholder tokens in a README, a password policy,
an ExternalSecret and a Terraform Vault data source that only reference secrets, LLM token usage, Django
password hashes, systemd `LoadCredential=` paths, compose interpolation, SRI hashes, Cargo.lock checksums,
2FA help text, a base64 font and a cosign public key.

SEED = 141421. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
clean ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import textwrap
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 141421

_ALNUM = string.ascii_letters + string.digits
_LOWER36 = string.ascii_lowercase + string.digits
_UPPER36 = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_PUNCT = "!#$%&()*+,-./:;<=>?@[]^_{|}~"
_WORDS = (
    "abacus", "bonsai", "cactus", "dynamo", "ermine", "fresco", "gondola", "harpoon", "igloo", "jasmine",
    "kayak", "lagoon", "mortar", "nectar", "oyster", "pylon", "quiver", "rampart", "sorbet", "trellis",
    "urchin", "vellum", "walrus", "yonder", "zephyr",
)  # fmt: skip

Built = tuple[str, tuple[str, ...]]
_CREDENTIAL_SHAPES: list[tuple[str, Callable[[random.Random], Built]]] = []
_CLEAN_SHAPES: list[tuple[str, Callable[[random.Random], str]]] = []


def _shape(name: str):
    """Register a builder of a document holding credentials."""

    def register(builder: Callable[[random.Random], Built]) -> Callable[[random.Random], Built]:
        _CREDENTIAL_SHAPES.append((name, builder))
        return builder

    return register


def _clean(name: str):
    """Register a builder of a document without a credential."""

    def register(builder: Callable[[random.Random], str]) -> Callable[[random.Random], str]:
        _CLEAN_SHAPES.append((name, builder))
        return builder

    return register


def _fill(template: str, **values: str) -> str:
    """The template, dedented, with each «name» replaced by its value."""
    text = textwrap.dedent(template).strip("\n")
    for name, value in values.items():
        text = text.replace(f"«{name}»", value)
    assert "«" not in text, text
    return text + "\n"


# Value forms.


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _hex(rng: random.Random, nbytes: int) -> str:
    return rng.randbytes(nbytes).hex()


def _b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _urlsafe(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def _words(rng: random.Random, sep: str, n: int = 0, *, number: bool = True) -> str:
    """A word chain such as `Kayak.lagoon.mortar.58`: some words capitalised, sometimes a number at the end."""
    words = [w.capitalize() if rng.random() < 0.35 else w for w in rng.sample(_WORDS, n or rng.randint(3, 5))]
    return sep.join([*words, str(rng.randint(2, 999))] if number else words)


def _human(rng: random.Random, n: int = 0, *, exclude: str = "") -> str:
    """A password a person picks: a word, digits and one or two marks, 8 to 14 characters (`Sorbet#2291!`)."""
    marks = "".join(c for c in "!#$%&*?@^~+=-." if c not in exclude)
    while True:
        word = rng.choice(_WORDS)
        word = word.capitalize() if rng.random() < 0.7 else word.upper()
        value = word + rng.choice(marks) + str(rng.randint(10, 9999)) + (rng.choice(marks) if rng.random() < 0.5 else "")
        if 8 <= len(value) <= (n or 14):
            return value


def _short(rng: random.Random) -> str:
    """A short generated password, 8 to 12 letters and digits with one mark: `q7Rm.x2Lp`."""
    n = rng.randint(8, 12)
    while True:
        value = list(_chars(rng, _ALNUM, n))
        value[rng.randrange(1, n - 1)] = rng.choice("._-!")
        out = "".join(value)
        if any(c.isdigit() for c in out) and any(c.isupper() for c in out):
            return out


def _punct(rng: random.Random, n: int = 0, *, exclude: str = "") -> str:
    """A generated password full of punctuation (without the characters the shape cannot hold)."""
    punct = "".join(c for c in _PUNCT if c not in exclude)
    n = n or rng.randint(14, 28)
    while True:
        value = _chars(rng, _ALNUM + punct, n)
        if value[0].isalnum() and sum(c in punct for c in value) >= 2 and any(c.isdigit() for c in value):
            return value


def _segment(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(rng: random.Random, claims: dict, *, alg: str = "HS256", kid: str = "") -> str:
    """A signed JWT: HS256 with a 32-byte signature, RS256/ES256 with a 256/64-byte one."""
    header = {"alg": alg, "typ": "JWT"}
    if kid:
        header["kid"] = kid
    size = {"HS256": 32, "RS256": 256, "ES256": 64}[alg]
    return f"{_segment(header)}.{_segment(claims)}.{_urlsafe(rng, size)}"


def _wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def _ssh_string(*parts: bytes) -> bytes:
    return b"".join(struct.pack(">I", len(p)) + p for p in parts)


# Documents with credentials: notebooks, build files and config formats.


@_shape("ipynb-cell-anthropic-key")
def _ipynb(rng: random.Random) -> Built:
    v = "sk-ant-api03-" + _chars(rng, _URLSAFE, 93) + "AA"
    text = _fill(
        """
        {
         "cells": [
          {
           "cell_type": "code",
           "execution_count": 3,
           "id": "«cid»",
           "metadata": {},
           "outputs": [],
           "source": [
            "import os\\n",
            "import anthropic\\n",
            "\\n",
            "os.environ[\\"ANTHROPIC_API_KEY\\"] = \\"«v»\\"\\n",
            "client = anthropic.Anthropic()"
           ]
          },
          {
           "cell_type": "code",
           "execution_count": 4,
           "id": "«cid2»",
           "metadata": {},
           "outputs": [
            {
             "name": "stdout",
             "output_type": "stream",
             "text": [
              "Usage(input_tokens=1841, output_tokens=212)\\n"
             ]
            }
           ],
           "source": [
            "msg = client.messages.create(model=MODEL, max_tokens=1024, messages=[{\\"role\\": \\"user\\", \\"content\\": prompt}])\\n",
            "print(msg.usage)"
           ]
          }
         ],
         "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}},
         "nbformat": 4,
         "nbformat_minor": 5
        }
        """,
        cid=_hex(rng, 4),
        cid2=_hex(rng, 4),
        v=v,
    )
    return text, (v,)


@_shape("dockerfile-env-datadog-keys")
def _dockerfile(rng: random.Random) -> Built:
    api, app = _hex(rng, 16), _hex(rng, 20)
    text = _fill(
        """
        FROM python:3.12-slim AS runtime
        WORKDIR /app
        COPY --from=build /app/.venv /app/.venv
        COPY . .
        ENV DD_SITE datadoghq.eu
        ENV DD_API_KEY «api»
        ENV DD_APP_KEY=«app» \\
            DD_ENV=production \\
            DD_LOGS_INJECTION=true
        RUN pip install --no-cache-dir ddtrace==2.8.1
        EXPOSE 8000
        CMD ["ddtrace-run", "gunicorn", "shop.wsgi", "-b", "0.0.0.0:8000", "-w", "3"]
        """,
        api=api,
        app=app,
    )
    return text, (api, app)


@_shape("newrelic-yml-anchor-license")
def _newrelic(rng: random.Random) -> Built:
    v = "eu01xx" + _hex(rng, 15) + "NRAL"
    text = _fill(
        """
        # newrelic.yml
        common: &default_settings
          license_key: '«v»'
          app_name: Storefront
          distributed_tracing:
            enabled: true
          log_level: info

        development:
          <<: *default_settings
          app_name: Storefront (Development)

        production:
          <<: *default_settings
        """,
        v=v,
    )
    return text, (v,)


@_shape("terraform-github-provider-fine-grained-pat")
def _tf_github(rng: random.Random) -> Built:
    v = "github_pat_11A" + _chars(rng, _UPPER36, 19) + "_" + _chars(rng, _ALNUM, 59)
    text = _fill(
        """
        terraform {
          required_providers {
            github = {
              source  = "integrations/github"
              version = "~> 6.2"
            }
          }
        }

        provider "github" {
          owner = "example-org"
          token = "«v»" # TODO move to TF_VAR before merge
        }

        resource "github_repository" "infra" {
          name       = "infra-modules"
          visibility = "private"
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("nixos-grafana-admin-password")
def _nixos(rng: random.Random) -> Built:
    v = _punct(rng, exclude='"\\$')
    text = _fill(
        """
        # /etc/nixos/monitoring.nix
        { config, pkgs, ... }:
        {
          services.grafana = {
            enable = true;
            settings = {
              server = { http_addr = "127.0.0.1"; http_port = 3000; domain = "grafana.home.arpa"; };
              security = {
                admin_user = "admin";
                admin_password = "«v»";
              };
            };
          };
          services.prometheus.enable = true;
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("nix-conf-access-tokens")
def _nix_conf(rng: random.Random) -> Built:
    v = "ghp_" + _chars(rng, _ALNUM, 36)
    text = _fill(
        """
        $ cat ~/.config/nix/nix.conf
        experimental-features = nix-command flakes
        access-tokens = github.com=«v»
        substituters = https://cache.nixos.org https://example.cachix.org
        trusted-public-keys = cache.nixos.org-1:6NCHdD59X431o0gWypbMrAURkbJ16ZPMQFGspcDShjY= example.cachix.org-1:«pub»
        $ nix flake update
        """,
        v=v,
        pub=_b64(rng, 32),
    )
    return text, (v,)


@_shape("systemd-setcredential-unit")
def _systemd_cred(rng: random.Random) -> Built:
    v = _b64(rng, 24)
    text = _fill(
        """
        $ systemctl cat backup-upload.service
        # /etc/systemd/system/backup-upload.service
        [Unit]
        Description=Upload nightly dumps to object storage
        After=network-online.target

        [Service]
        Type=oneshot
        DynamicUser=yes
        SetCredential=s3-secret:«v»
        ExecStart=/usr/local/bin/upload-dumps --secret-file=${CREDENTIALS_DIRECTORY}/s3-secret
        """,
        v=v,
    )
    return text, (v,)


@_shape("crontab-restic-password")
def _crontab(rng: random.Random) -> Built:
    v = _words(rng, " ", 4, number=False)
    text = _fill(
        """
        $ crontab -l
        MAILTO=ops@example.org
        RESTIC_REPOSITORY=sftp:backup@nas.home.arpa:/srv/restic/web01
        RESTIC_PASSWORD="«v»"
        # m h dom mon dow command
        15 3 * * * /usr/bin/restic backup /srv/shop --exclude-caches --quiet
        45 4 * * 0 /usr/bin/restic forget --keep-daily 7 --keep-weekly 5 --prune
        """,
        v=v,
    )
    return text, (v,)


@_shape("tomcat-users-xml-attribute")
def _tomcat(rng: random.Random) -> Built:
    v = _punct(rng, exclude='"&<>\'')
    text = _fill(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- conf/tomcat-users.xml -->
        <tomcat-users xmlns="http://tomcat.apache.org/xml" version="1.0">
          <role rolename="manager-gui"/>
          <role rolename="manager-script"/>
          <user username="deployer" password="«v»" roles="manager-script"/>
        </tomcat-users>
        """,
        v=v,
    )
    return text, (v,)


@_shape("clickhouse-users-xml-element")
def _clickhouse(rng: random.Random) -> Built:
    v = _short(rng)
    text = _fill(
        """
        <!-- /etc/clickhouse-server/users.d/analytics.xml -->
        <clickhouse>
            <users>
                <analytics>
                    <password>«v»</password>
                    <networks><ip>10.20.0.0/16</ip></networks>
                    <profile>default</profile>
                    <quota>default</quota>
                </analytics>
            </users>
        </clickhouse>
        """,
        v=v,
    )
    return text, (v,)


@_shape("flyway-conf-properties")
def _flyway(rng: random.Random) -> Built:
    v = _human(rng)
    text = _fill(
        """
        # flyway.conf
        flyway.url=jdbc:mariadb://db-primary.internal:3306/billing
        flyway.user=flyway_migrator
        flyway.password=«v»
        flyway.locations=filesystem:sql/migrations
        flyway.baselineOnMigrate=true
        """,
        v=v,
    )
    return text, (v,)


@_shape("rclone-conf-b2-remote")
def _rclone(rng: random.Random) -> Built:
    v = "K005" + _chars(rng, _ALNUM + "+/", 27)
    text = _fill(
        """
        $ rclone config show b2-media
        [b2-media]
        type = b2
        account = 005«acct»0000000003
        key = «v»
        hard_delete = true
        $ rclone sync ./media b2-media:shop-media --progress
        """,
        acct=_hex(rng, 4),
        v=v,
    )
    return text, (v,)


@_shape("cargo-credentials-toml")
def _cargo(rng: random.Random) -> Built:
    v = "cio" + _chars(rng, _ALNUM, 32)
    text = _fill(
        """
        $ cat ~/.cargo/credentials.toml
        [registry]
        token = "«v»"

        [registries.internal]
        credential-provider = "cargo:token-from-stdout op read op://dev/cargo-internal/token"
        $ cargo publish -p shop-client --dry-run
        """,
        v=v,
    )
    return text, (v,)


@_shape("hcloud-cli-toml-contexts")
def _hcloud(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, 64)
    text = _fill(
        """
        # ~/.config/hcloud/cli.toml
        active_context = "prod"

        [[contexts]]
          name = "prod"
          token = "«v»"
        """,
        v=v,
    )
    return text, (v,)


@_shape("compose-yaml-anchor-keycloak")
def _compose_kc(rng: random.Random) -> Built:
    admin, db = _short(rng), _words(rng, "_")
    text = _fill(
        """
        x-kc-db: &kc-db
          KC_DB: postgres
          KC_DB_URL: jdbc:postgresql://kc-db:5432/keycloak
          KC_DB_USERNAME: keycloak
          KC_DB_PASSWORD: «db»

        services:
          keycloak:
            image: quay.io/keycloak/keycloak:25.0
            command: start --optimized
            environment:
              <<: *kc-db
              KEYCLOAK_ADMIN: admin
              KEYCLOAK_ADMIN_PASSWORD: "«admin»"
            ports: ["8443:8443"]
          kc-db:
            image: postgres:16
            environment:
              POSTGRES_DB: keycloak
              POSTGRES_USER: keycloak
              POSTGRES_PASSWORD: «db»
        """,
        admin=admin,
        db=db,
    )
    return text, (admin, db)


@_shape("cloudformation-rds-master-password")
def _cfn(rng: random.Random) -> Built:
    v = _punct(rng, 20, exclude="\"'/@ #:{}[],&*!|>%`")
    text = _fill(
        """
        # stacks/reporting-db.yaml
        Resources:
          ReportingDb:
            Type: AWS::RDS::DBInstance
            DeletionPolicy: Snapshot
            Properties:
              Engine: postgres
              EngineVersion: "16.3"
              DBInstanceClass: db.t4g.medium
              AllocatedStorage: 100
              MasterUsername: reporting_admin
              MasterUserPassword: '«v»'
              VPCSecurityGroups: [!Ref DbSecurityGroup]
              DBSubnetGroupName: !Ref DbSubnetGroup
        """,
        v=v,
    )
    return text, (v,)


@_shape("pulumi-stack-export-show-secrets")
def _pulumi(rng: random.Random) -> Built:
    v = _hex(rng, 24)
    text = _fill(
        """
        $ pulumi stack export --show-secrets | jq '.deployment.resources[] | select(.type == "random:index/randomPassword:RandomPassword")'
        {
          "urn": "urn:pulumi:prod::shop-infra::random:index/randomPassword:RandomPassword::cache-auth",
          "custom": true,
          "id": "none",
          "type": "random:index/randomPassword:RandomPassword",
          "inputs": {"length": 48, "special": false},
          "outputs": {
            "bcryptHash": {
              "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
              "plaintext": "\\"$2a$10$«salt»\\""
            },
            "result": {
              "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
              "plaintext": "\\"«v»\\""
            }
          }
        }
        """,
        salt=_chars(rng, _ALNUM + "./", 53),
        v=v,
    )
    return text, (v,)


# HTTP traces, curl / wget / httpie, database clients.


@_shape("http-request-shopify-admin-token")
def _shopify(rng: random.Random) -> Built:
    v = "shpat_" + _hex(rng, 16)
    text = _fill(
        """
        --> POST https://example-store.myshopify.com/admin/api/2024-07/graphql.json
        Content-Type: application/json
        X-Shopify-Access-Token: «v»
        User-Agent: shop-sync/1.8 (+okhttp/4.12.0)
        Content-Length: 118
        {"query":"{ products(first: 10) { edges { node { id title } } } }"}
        --> END POST (118-byte body)
        <-- 200 OK (412ms)
        x-request-id: «rid»
        """,
        v=v,
        rid=_uuid(rng),
    )
    return text, (v,)


@_shape("wget-artifactory-api-key-header")
def _wget(rng: random.Random) -> Built:
    v = "AKCp8" + _chars(rng, _ALNUM, 68)
    text = _fill(
        """
        + wget -q --header=X-JFrog-Art-Api:«v» https://artifacts.example.org/artifactory/libs-release/com/example/shop-core/3.4.1/shop-core-3.4.1.jar
        + sha1sum shop-core-3.4.1.jar
        «sha»  shop-core-3.4.1.jar
        """,
        v=v,
        sha=_hex(rng, 20),
    )
    return text, (v,)


@_shape("telegram-bot-token-url-path")
def _telegram(rng: random.Random) -> Built:
    v = f"{rng.randint(10**9, 8 * 10**9)}:AA" + _chars(rng, _URLSAFE, 33)
    text = _fill(
        """
        $ curl -s https://api.telegram.org/bot«v»/getMe | jq .
        {
          "ok": true,
          "result": {
            "id": «bid»,
            "is_bot": true,
            "first_name": "Deploy notifier",
            "username": "shop_deploy_bot",
            "can_join_groups": true
          }
        }
        """,
        v=v,
        bid=v.split(":")[0],
    )
    return text, (v,)


@_shape("sqlcmd-sa-password-flag")
def _sqlcmd(rng: random.Random) -> Built:
    v = _human(rng, exclude="$&!")
    text = _fill(
        """
        $ docker exec -it mssql /opt/mssql-tools18/bin/sqlcmd -S localhost -U sa -P '«v»' -C -Q "SELECT name FROM sys.databases"
        name
        --------------------------------------------------------------------------------------------------------------------------------
        master
        tempdb
        model
        msdb
        Inventory

        (5 rows affected)
        """,
        v=v,
    )
    return text, (v,)


@_shape("neon-psql-connection-uri")
def _neon(rng: random.Random) -> Built:
    v = "npg_" + _chars(rng, _ALNUM, 12)
    host = f"ep-{rng.choice(_WORDS)}-{rng.choice(_WORDS)}-a{_chars(rng, _LOWER36, 7)}"
    text = _fill(
        """
        $ psql 'postgresql://neondb_owner:«v»@«host».eu-central-1.aws.neon.tech/neondb?sslmode=require'
        psql (16.4, server 16.3)
        SSL connection (protocol: TLSv1.3, cipher: TLS_AES_256_GCM_SHA384, compression: off)
        Type "help" for help.

        neondb=> \\dt
                    List of relations
         Schema |      Name       | Type  |    Owner
        --------+-----------------+-------+--------------
         public | orders          | table | neondb_owner
         public | order_items     | table | neondb_owner
        (2 rows)
        """,
        v=v,
        host=host,
    )
    return text, (v,)


@_shape("httpie-grafana-service-account")
def _grafana(rng: random.Random) -> Built:
    v = "glsa_" + _chars(rng, _ALNUM, 32) + "_" + _hex(rng, 4)
    text = _fill(
        """
        $ http GET https://grafana.example.org/api/search query==checkout 'Authorization:Bearer «v»'
        HTTP/1.1 200 OK
        Content-Type: application/json
        X-Content-Type-Options: nosniff

        [
            {
                "id": 41,
                "title": "Checkout latency",
                "type": "dash-db",
                "uid": "«uid»",
                "url": "/d/«uid»/checkout-latency"
            }
        ]
        """,
        v=v,
        uid=_chars(rng, _ALNUM, 9),
    )
    return text, (v,)


@_shape("okta-ssws-request-log")
def _okta(rng: random.Random) -> Built:
    v = "00" + _chars(rng, _URLSAFE, 40)
    text = _fill(
        """
        DEBUG:urllib3.connectionpool:https://example.okta.com:443 "GET /api/v1/users?filter=status%20eq%20%22LOCKED_OUT%22 HTTP/1.1" 200 2
        DEBUG:okta.request_executor:request headers={'Accept': 'application/json', 'Content-Type': 'application/json', 'User-Agent': 'okta-sdk-python/2.9.8', 'Authorization': 'SSWS «v»'}
        DEBUG:okta.request_executor:response status=200 x-rate-limit-remaining=599
        """,
        v=v,
    )
    return text, (v,)


@_shape("typesense-create-key-response")
def _typesense(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, 32)
    text = _fill(
        """
        HTTP/1.1 201 Created
        content-type: application/json; charset=utf-8
        content-length: 196

        {"actions":["documents:search"],"collections":["products"],"description":"storefront search-only key","expires_at":64723363199,"id":«kid»,"value":"«v»"}
        """,
        kid=str(rng.randint(2, 90)),
        v=v,
    )
    return text, (v,)


@_shape("nginx-access-log-appid-query")
def _openweather(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        10.0.3.17 - - [05/Mar/2026:09:14:02 +0000] "GET /proxy/weather?q=Lisbon&units=metric&appid=«v» HTTP/1.1" 200 512 "-" "okhttp/4.12.0"
        10.0.3.17 - - [05/Mar/2026:09:14:05 +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.30"
        """,
        v=v,
    )
    return text, (v,)


@_shape("smtp-auth-login-trace")
def _smtp_login(rng: random.Random) -> Built:
    pw = _human(rng)
    v = base64.b64encode(pw.encode()).decode()
    user = base64.b64encode(b"alerts@example.org").decode()
    text = _fill(
        """
        $ openssl s_client -quiet -starttls smtp -connect smtp.example.org:587
        250 SMTPUTF8
        EHLO build01
        250-smtp.example.org
        250-AUTH LOGIN PLAIN
        250 8BITMIME
        AUTH LOGIN
        334 VXNlcm5hbWU6
        «user»
        334 UGFzc3dvcmQ6
        «v»
        235 2.7.0 Authentication successful
        """,
        user=user,
        v=v,
    )
    return text, (v,)


@_shape("openssl-s-client-imap-login")
def _imap(rng: random.Random) -> Built:
    v = _short(rng)
    text = _fill(
        """
        $ openssl s_client -crlf -quiet -connect imap.example.org:993
        depth=2 C = US, O = Internet Security Research Group, CN = ISRG Root X1
        * OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE AUTH=PLAIN] Dovecot ready.
        a1 LOGIN invoices@example.org «v»
        a1 OK [CAPABILITY IMAP4rev1 SORT THREAD=REFERENCES MULTIAPPEND] Logged in
        a2 SELECT INBOX
        * 14 EXISTS
        a2 OK [READ-WRITE] Select completed (0.001 + 0.000 secs).
        """,
        v=v,
    )
    return text, (v,)


# SDK initialisation in several languages.


@_shape("go-algolia-search-client")
def _go_algolia(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        package search

        import (
            "github.com/algolia/algoliasearch-client-go/v3/algolia/search"
        )

        const (
            appID    = "«app»"
            adminKey = "«v»"
        )

        func NewIndex(name string) *search.Index {
            client := search.NewClient(appID, adminKey)
            return client.InitIndex(name)
        }
        """,
        app=_chars(rng, _UPPER36, 10),
        v=v,
    )
    return text.replace("\n    ", "\n\t"), (v,)  # Go indents with tabs


@_shape("java-square-client-builder")
def _java_square(rng: random.Random) -> Built:
    v = "EAAA" + _chars(rng, _URLSAFE, 60)
    text = _fill(
        """
        package com.example.payments;

        import com.squareup.square.Environment;
        import com.squareup.square.SquareClient;

        public final class SquareConfig {
            private SquareConfig() {}

            public static SquareClient client() {
                return new SquareClient.Builder()
                        .environment(Environment.PRODUCTION)
                        .accessToken("«v»")
                        .build();
            }
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("csharp-servicebus-connection-string")
def _csharp_sb(rng: random.Random) -> Built:
    v = _b64(rng, 32)
    text = _fill(
        """
        using Azure.Messaging.ServiceBus;

        namespace Shop.Workers;

        public static class Bus
        {
            private const string ConnectionString =
                "Endpoint=sb://shop-prod.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=«v»";

            public static ServiceBusClient Create() => new(ConnectionString);
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("ruby-braintree-configuration")
def _ruby_braintree(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        # config/initializers/braintree.rb
        Braintree::Configuration.environment = :production
        Braintree::Configuration.merchant_id = "«mid»"
        Braintree::Configuration.public_key  = "«pub»"
        Braintree::Configuration.private_key = "«v»"
        Braintree::Configuration.logger = Rails.logger
        """,
        mid=_chars(rng, _LOWER36, 16),
        pub=_chars(rng, _LOWER36, 16),
        v=v,
    )
    return text, (v,)


@_shape("php-pusher-constructor")
def _php_pusher(rng: random.Random) -> Built:
    v = _hex(rng, 10)
    text = _fill(
        """
        <?php
        // app/Realtime/Broadcaster.php
        require __DIR__ . '/../../vendor/autoload.php';

        $pusher = new Pusher\\Pusher(
            '«key»',
            '«v»',
            '«app»',
            ['cluster' => 'eu', 'useTLS' => true]
        );

        $pusher->trigger('orders', 'order.paid', ['id' => $order->id]);
        """,
        key=_hex(rng, 10),
        v=v,
        app=str(rng.randint(1000000, 1999999)),
    )
    return text, (v,)


@_shape("rust-reqwest-replicate-bearer")
def _rust_replicate(rng: random.Random) -> Built:
    v = "r8_" + _chars(rng, _ALNUM, 37)
    text = _fill(
        """
        use reqwest::Client;
        use serde_json::json;

        #[tokio::main]
        async fn main() -> Result<(), reqwest::Error> {
            let client = Client::new();
            let resp = client
                .post("https://api.replicate.com/v1/predictions")
                .bearer_auth("«v»")
                .json(&json!({"version": "«ver»", "input": {"prompt": "a lighthouse at dusk"}}))
                .send()
                .await?;
            println!("{}", resp.status());
            Ok(())
        }
        """,
        v=v,
        ver=_hex(rng, 32),
    )
    return text, (v,)


@_shape("kotlin-okhttp-rapidapi-interceptor")
def _kotlin(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, 50)
    text = _fill(
        """
        package com.example.flights.net

        import okhttp3.Interceptor
        import okhttp3.OkHttpClient

        object Http {
            private const val RAPIDAPI_KEY = "«v»"

            val client: OkHttpClient = OkHttpClient.Builder()
                .addInterceptor(Interceptor { chain ->
                    chain.proceed(
                        chain.request().newBuilder()
                            .addHeader("x-rapidapi-key", RAPIDAPI_KEY)
                            .addHeader("x-rapidapi-host", "skyscanner44.p.rapidapi.com")
                            .build()
                    )
                })
                .build()
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("swift-streamchat-connect-user-jwt")
def _swift(rng: random.Random) -> Built:
    v = _jwt(rng, {"user_id": "ada-" + _hex(rng, 3)})
    text = _fill(
        """
        import StreamChat
        import UIKit

        final class ChatBootstrap {
            static let shared = ChatBootstrap()
            let client = ChatClient(config: ChatClientConfig(apiKey: .init("«pub»")))

            func connect() {
                client.connectUser(
                    userInfo: UserInfo(id: "ada", name: "Ada"),
                    token: try! Token(rawValue: "«v»")
                ) { error in
                    if let error { print("connect failed: \\(error)") }
                }
            }
        }
        """,
        pub=_chars(rng, _LOWER36, 12),
        v=v,
    )
    return text, (v,)


@_shape("elixir-runtime-exs-repo")
def _elixir(rng: random.Random) -> Built:
    pw, skb = _words(rng, "-"), _b64(rng, 48)
    text = _fill(
        """
        # config/runtime.exs
        import Config

        if config_env() == :prod do
          config :shop, Shop.Repo,
            username: "shop",
            password: "«pw»",
            hostname: "db.internal",
            database: "shop_prod",
            pool_size: 10

          config :shop, ShopWeb.Endpoint,
            url: [host: "shop.example.org", port: 443, scheme: "https"],
            secret_key_base: "«skb»"
        end
        """,
        pw=pw,
        skb=skb,
    )
    return text, (pw, skb)


@_shape("discord-py-bot-run")
def _discord_bot(rng: random.Random) -> Built:
    head = base64.b64encode(str(rng.randint(10**17, 10**18)).encode()).decode().rstrip("=")
    v = f"{head}.{_chars(rng, _URLSAFE, 6)}.{_chars(rng, _URLSAFE, 38)}"
    text = _fill(
        """
        import discord
        from discord.ext import commands

        intents = discord.Intents.default()
        intents.message_content = True
        bot = commands.Bot(command_prefix="!", intents=intents)


        @bot.command()
        async def deploy(ctx, env: str = "staging"):
            await ctx.send(f"Deploying to {env}...")


        bot.run('«v»')
        """,
        v=v,
    )
    return text, (v,)


@_shape("figma-export-node-script")
def _figma(rng: random.Random) -> Built:
    v = "figd_" + _chars(rng, _URLSAFE, 40)
    text = _fill(
        """
        // scripts/export-icons.mjs
        const FILE = "«file»";
        const res = await fetch(`https://api.figma.com/v1/files/${FILE}/nodes?ids=12:3`, {
          headers: { "X-Figma-Token": "«v»" },
        });
        const { nodes } = await res.json();
        console.log(Object.keys(nodes).length, "nodes");
        """,
        file=_chars(rng, _ALNUM, 22),
        v=v,
    )
    return text, (v,)


@_shape("bolt-js-socket-mode-tokens")
def _bolt(rng: random.Random) -> Built:
    bot = f"xoxb-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-{_chars(rng, _ALNUM, 24)}"
    app = f"xapp-1-A{_chars(rng, _UPPER36, 10)}-{rng.randint(10**12, 10**13)}-{_hex(rng, 32)}"
    text = _fill(
        """
        const { App } = require("@slack/bolt");

        const app = new App({
          token: "«bot»",
          appToken: "«app»",
          socketMode: true,
        });

        app.command("/oncall", async ({ ack, respond }) => {
          await ack();
          await respond("Paging the on-call engineer…");
        });

        (async () => {
          await app.start();
          console.log("⚡️ Bolt app is running");
        })();
        """,
        bot=bot,
        app=app,
    )
    return text, (bot, app)


@_shape("mailchimp-marketing-node")
def _mailchimp(rng: random.Random) -> Built:
    v = _hex(rng, 16) + "-us" + str(rng.randint(2, 21))
    text = _fill(
        """
        import mailchimp from "@mailchimp/mailchimp_marketing";

        mailchimp.setConfig({
          apiKey: '«v»',
          server: '«server»',
        });

        const response = await mailchimp.ping.get();
        console.log(response); // { health_status: "Everything's Chimpy!" }
        """,
        v=v,
        server=v.split("-")[1],
    )
    return text, (v,)


@_shape("airtable-pat-fetch")
def _airtable(rng: random.Random) -> Built:
    v = "pat" + _chars(rng, _ALNUM, 14) + "." + _hex(rng, 32)
    text = _fill(
        """
        > await fetch("https://api.airtable.com/v0/app«base»/Inventory?maxRecords=3", { headers: { Authorization: "Bearer «v»" } }).then(r => r.json())
        { records: [ { id: 'rec«r1»', createdTime: '2026-02-11T08:21:44.000Z', fields: [Object] } ], offset: 'itr«off»/rec«r1»' }
        """,
        base=_chars(rng, _ALNUM, 14),
        v=v,
        r1=_chars(rng, _ALNUM, 14),
        off=_chars(rng, _ALNUM, 14),
    )
    return text, (v,)


# Shell sessions with CLIs, system and network configs, CI logs.


@_shape("op-read-stripe-restricted-key")
def _op_read(rng: random.Random) -> Built:
    v = "rk_live_51" + _chars(rng, _ALNUM, 97)
    text = _fill(
        """
        $ op read "op://Shared/Stripe reporting/credential"
        «v»
        $ op item get "Stripe reporting" --fields label=username
        reporting@example.org
        """,
        v=v,
    )
    return text, (v,)


@_shape("doppler-secrets-get-plain")
def _doppler(rng: random.Random) -> Built:
    token = "dp.st.prd." + _chars(rng, _ALNUM, 43)
    pw = _punct(rng, exclude="'\\\"")
    text = _fill(
        """
        $ export DOPPLER_TOKEN=«token»
        $ doppler secrets get REDIS_PASSWORD --plain --project checkout --config prd
        «pw»
        $ doppler run -- ./bin/worker --queue emails
        """,
        token=token,
        pw=pw,
    )
    return text, (token, pw)


@_shape("sops-decrypt-yaml-output")
def _sops(rng: random.Random) -> Built:
    a, b = _b64(rng, 32), _urlsafe(rng, 36)
    text = _fill(
        """
        $ sops -d deploy/secrets/prod.enc.yaml
        app:
            encryption_key: «a»
            oidc:
                client_id: storefront-web
                client_secret: «b»
        smtp:
            host: smtp.eu.example.net
            port: 587
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("openssh-ed25519-private-key-cat")
def _openssh(rng: random.Random) -> Built:
    pub = rng.randbytes(32)
    check = rng.randbytes(4)
    comment = b"deploy@ci-runner-07"
    private = _ssh_string(b"ssh-ed25519", pub, rng.randbytes(32) + pub, comment)
    inner = check + check + private
    inner += bytes(range(1, 1 + (-len(inner) % 8)))
    blob = (
        b"openssh-key-v1\x00"
        + _ssh_string(b"none", b"", b"")
        + struct.pack(">I", 1)
        + _ssh_string(_ssh_string(b"ssh-ed25519", pub))
        + _ssh_string(inner)
    )
    body = _wrap(base64.b64encode(blob).decode(), 70)
    text = _fill(
        """
        ada@laptop:~$ cat ~/.ssh/ci_deploy
        -----BEGIN OPENSSH PRIVATE KEY-----
        «body»
        -----END OPENSSH PRIVATE KEY-----
        ada@laptop:~$ ssh-keygen -lf ~/.ssh/ci_deploy.pub
        256 SHA256:«fp» deploy@ci-runner-07 (ED25519)
        """,
        body=body,
        fp=_b64(rng, 32).rstrip("="),
    )
    return text, (body,)


@_shape("flyctl-auth-token-output")
def _flyctl(rng: random.Random) -> Built:
    v = "FlyV1 fm2_" + _chars(rng, _URLSAFE + "=", 180) + ",fm2_" + _chars(rng, _URLSAFE, 90)
    text = _fill(
        """
        $ fly tokens create deploy -a shop-api -x 720h
        «v»
        $ gh secret list
        FLY_API_TOKEN  Updated 2026-03-05
        """,
        v=v,
    )
    return text, (v,)


@_shape("ngrok-add-authtoken-positional")
def _ngrok(rng: random.Random) -> Built:
    v = "2" + _chars(rng, _ALNUM, 26) + "_" + _chars(rng, _ALNUM, 21)
    text = _fill(
        """
        $ ngrok config add-authtoken «v»
        Authtoken saved to configuration file: /home/ada/.config/ngrok/ngrok.yml
        $ ngrok http 8000 --domain=ada-dev.ngrok.app
        """,
        v=v,
    )
    return text, (v,)


@_shape("tailscale-up-authkey")
def _tailscale(rng: random.Random) -> Built:
    v = "tskey-auth-k" + _chars(rng, _ALNUM, 13) + "CNTRL-" + _chars(rng, _ALNUM, 33)
    text = _fill(
        """
        # cloud-init runcmd
        runcmd:
          - curl -fsSL https://tailscale.com/install.sh | sh
          - ['tailscale', 'up', '--authkey', '«v»', '--ssh', '--advertise-tags=tag:ci']
          - systemctl enable --now docker
        """,
        v=v,
    )
    return text, (v,)


@_shape("net-use-positional-password")
def _net_use(rng: random.Random) -> Built:
    v = _human(rng, exclude="^&%")
    text = _fill(
        """
        C:\\Users\\ci> net use Z: \\\\fs01.corp.example.org\\builds «v» /user:CORP\\svc-build /persistent:no
        The command completed successfully.

        C:\\Users\\ci> robocopy Z:\\nightly C:\\artifacts *.msi /MIR /NJH /NJS
        """,
        v=v,
    )
    return text, (v,)


@_shape("fstab-cifs-password-option")
def _fstab(rng: random.Random) -> Built:
    v = _short(rng)
    text = _fill(
        """
        # /etc/fstab
        UUID=«fsid» /               ext4    errors=remount-ro 0       1
        UUID=«bootid»  /boot/efi       vfat    umask=0077      0       1
        //nas.home.arpa/media  /mnt/media  cifs  username=plex,password=«v»,uid=1000,gid=1000,vers=3.0,_netdev  0  0
        """,
        fsid=_uuid(rng),
        bootid=_hex(rng, 2).upper() + "-" + _hex(rng, 2).upper(),
        v=v,
    )
    return text, (v,)


@_shape("composer-auth-json")
def _composer(rng: random.Random) -> Built:
    user, pw = _uuid(rng).replace("-", "")[:32], _hex(rng, 20)
    text = _fill(
        """
        $ cat auth.json
        {
            "http-basic": {
                "repo.magento.com": {
                    "username": "«user»",
                    "password": "«pw»"
                }
            }
        }
        $ composer install --no-dev --optimize-autoloader
        """,
        user=user,
        pw=pw,
    )
    return text, (pw,)


@_shape("bundler-config-contribsys")
def _bundler(rng: random.Random) -> Built:
    pair = f"{_hex(rng, 4)}:{_hex(rng, 4)}"
    text = _fill(
        """
        $ bundle config
        Settings are listed in order of priority. The top value will be used.
        gems.contribsys.com
        Set for the current user (/home/deploy/.bundle/config): "«pair»"

        path
        Set for your local app (/srv/shop/.bundle/config): "vendor/bundle"
        """,
        pair=pair,
    )
    return text, (pair,)


@_shape("dotnet-user-secrets-list")
def _user_secrets(rng: random.Random) -> Built:
    a, b = f"re_{_chars(rng, _ALNUM, 8)}_{_chars(rng, _ALNUM, 24)}", _b64(rng, 64)
    text = _fill(
        """
        PS C:\\src\\Shop.Api> dotnet user-secrets list
        Resend:ApiKey = «a»
        Jwt:SigningKey = «b»
        Logging:LogLevel:Default = Debug
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("az-account-get-access-token")
def _az_token(rng: random.Random) -> Built:
    iat = 1772700000 + rng.randrange(86400)
    v = _jwt(
        rng,
        {
            "aud": "https://management.azure.com/",
            "iss": f"https://sts.windows.net/{_uuid(rng)}/",
            "iat": iat,
            "nbf": iat,
            "exp": iat + 4460,
            "appid": _uuid(rng),
            "oid": _uuid(rng),
            "scp": "user_impersonation",
            "upn": "ada@example.org",
        },
        alg="RS256",
        kid=_urlsafe(rng, 20),
    )
    text = _fill(
        """
        $ az account get-access-token --output json
        {
          "accessToken": "«v»",
          "expiresOn": "2026-03-05 11:02:17.000000",
          "expires_on": «exp»,
          "subscription": "«sub»",
          "tenant": "«tenant»",
          "tokenType": "Bearer"
        }
        """,
        v=v,
        exp=str(iat + 4460),
        sub=_uuid(rng),
        tenant=_uuid(rng),
    )
    return text, (v,)


@_shape("openvpn-auth-user-pass-file")
def _openvpn(rng: random.Random) -> Built:
    v = _punct(rng, 16, exclude=" ")
    text = _fill(
        """
        $ sudo cat /etc/openvpn/client/office.auth
        ada.lovelace
        «v»
        $ grep auth-user-pass /etc/openvpn/client/office.conf
        auth-user-pass /etc/openvpn/client/office.auth
        """,
        v=v,
    )
    return text, (v,)


@_shape("cisco-ios-running-config")
def _cisco(rng: random.Random) -> Built:
    a, b = _short(rng), _chars(rng, _ALNUM, 16)
    text = _fill(
        """
        sw-core-01#show running-config | section username|tacacs
        username netadmin privilege 15 password 0 «a»
        tacacs server TAC1
         address ipv4 10.10.0.21
         key 0 «b»
        aaa new-model
        aaa authentication login default group tacacs+ local
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("kustomize-secretgenerator-literals")
def _kustomize(rng: random.Random) -> Built:
    v = _urlsafe(rng, 32)
    text = _fill(
        """
        # overlays/prod/kustomization.yaml
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: shop
        resources:
          - ../../base
        secretGenerator:
          - name: session-signing
            literals:
              - SESSION_SECRET=«v»
              - SESSION_TTL=3600
        """,
        v=v,
    )
    return text, (v,)


@_shape("gitea-app-ini-security")
def _gitea(rng: random.Random) -> Built:
    internal = _jwt(rng, {"nbf": 1767225600 + rng.randrange(10**6)})
    lfs = _urlsafe(rng, 32)
    text = _fill(
        """
        ; /etc/gitea/app.ini
        APP_NAME = Example Git
        RUN_MODE = prod

        [server]
        DOMAIN = git.example.org
        LFS_START_SERVER = true
        LFS_JWT_SECRET = «lfs»

        [security]
        INSTALL_LOCK   = true
        INTERNAL_TOKEN = «internal»
        PASSWORD_HASH_ALGO = pbkdf2
        """,
        lfs=lfs,
        internal=internal,
    )
    return text, (lfs, internal)


@_shape("mvn-deploy-gpg-passphrase-property")
def _mvn_gpg(rng: random.Random) -> Built:
    v = _words(rng, "_", 4)
    text = _fill(
        """
        [INFO] + mvn -B -ntp deploy -P release -Dgpg.keyname=«kid» -Dgpg.passphrase=«v» -DskipTests
        [INFO] Scanning for projects...
        [INFO] --- maven-gpg-plugin:3.2.4:sign (sign-artifacts) @ shop-client ---
        [INFO] Signing 4 files with «kid» secret key.
        [INFO] --- maven-deploy-plugin:3.1.2:deploy (default-deploy) @ shop-client ---
        [INFO] BUILD SUCCESS
        """,
        kid=_hex(rng, 8).upper(),
        v=v,
    )
    return text, (v,)


@_shape("filezilla-sitemanager-xml")
def _filezilla(rng: random.Random) -> Built:
    pw = _human(rng)
    v = base64.b64encode(pw.encode()).decode()
    text = _fill(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <FileZilla3 version="3.67.0" platform="windows">
            <Servers>
                <Server>
                    <Host>ftp.example-hosting.net</Host>
                    <Port>21</Port>
                    <Protocol>0</Protocol>
                    <Type>0</Type>
                    <User>shop_static</User>
                    <Pass encoding="base64">«v»</Pass>
                    <Logontype>1</Logontype>
                    <Name>static assets</Name>
                </Server>
            </Servers>
        </FileZilla3>
        """,
        v=v,
    )
    return text, (v,)


@_shape("buildkite-agent-start-log")
def _buildkite(rng: random.Random) -> Built:
    v = _hex(rng, 25)
    text = _fill(
        """
        + buildkite-agent start --token «v» --tags queue=deploy,os=linux --name ci-%spawn
        2026-03-05 09:02:11 NOTICE Starting buildkite-agent v3.76.2 with PID: 1184
        2026-03-05 09:02:11 NOTICE The agent source code can be found here: https://github.com/buildkite/agent
        2026-03-05 09:02:12 INFO   Registering agent with Buildkite...
        2026-03-05 09:02:12 INFO   Successfully registered agent "ci-1" with tags [queue=deploy, os=linux]
        """,
        v=v,
    )
    return text, (v,)


@_shape("react-native-sentry-properties")
def _rn_sentry(rng: random.Random) -> Built:
    v = "sntrys_" + _urlsafe(rng, 90) + "_" + _urlsafe(rng, 32)
    text = _fill(
        """
        # android/sentry.properties
        defaults.url=https://sentry.io/
        defaults.org=example
        defaults.project=shop-mobile
        auth.token=«v»
        cli.executable=node_modules/@sentry/cli/bin/sentry-cli
        """,
        v=v,
    )
    return text, (v,)


# Browser storage, agents and LLM transcripts, debug dumps.


@_shape("devtools-localstorage-auth0-cache")
def _auth0_cache(rng: random.Random) -> Built:
    iat = 1772690000 + rng.randrange(86400)
    access = _jwt(
        rng,
        {
            "iss": "https://example.eu.auth0.com/",
            "sub": "auth0|" + _hex(rng, 12),
            "aud": ["https://api.example.org", "https://example.eu.auth0.com/userinfo"],
            "iat": iat,
            "exp": iat + 86400,
            "scope": "openid profile email offline_access",
        },
        alg="RS256",
        kid=_urlsafe(rng, 16),
    )
    refresh = "v1." + _urlsafe(rng, 60)
    entry = {
        "body": {
            "access_token": access,
            "refresh_token": refresh,
            "scope": "openid profile email offline_access",
            "expires_in": 86400,
            "token_type": "Bearer",
        },
        "expiresAt": iat + 86400,
    }
    text = _fill(
        """
        > Object.entries(localStorage).filter(([k]) => k.startsWith("@@auth0spajs@@"))
        < [Array(2)]
        > copy(localStorage.getItem("@@auth0spajs@@::«cid»::https://api.example.org::openid profile email offline_access"))
        > // pasted:
        «entry»
        """,
        cid=_chars(rng, _ALNUM, 32),
        entry=json.dumps(entry),
    )
    return text, (access, refresh)


@_shape("devtools-document-cookie-next-auth")
def _next_auth(rng: random.Random) -> Built:
    header = _segment({"alg": "dir", "enc": "A256GCM"})
    v = f"{header}..{_urlsafe(rng, 12)}.{_urlsafe(rng, 240)}.{_urlsafe(rng, 16)}"
    text = _fill(
        """
        > document.cookie
        '_ga=GA1.1.«ga1».«ga2»; theme=dark; __Secure-next-auth.callback-url=https%3A%2F%2Fapp.example.org%2Fbilling; __Secure-next-auth.session-token=«v»'
        """,
        ga1=str(rng.randint(10**8, 10**9)),
        ga2=str(rng.randint(10**9, 2 * 10**9)),
        v=v,
    )
    return text, (v,)


@_shape("agent-tool-use-linear-key")
def _agent_tool_use(rng: random.Random) -> Built:
    v = "lin_api_" + _chars(rng, _ALNUM, 40)
    command = f"export LINEAR_API_KEY={v} && npx linear-cli issue list --team OPS --state 'In Progress'"
    block = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "I'll list the in-progress OPS issues with the key you gave me."},
            {"type": "tool_use", "id": "toolu_01" + _chars(rng, _ALNUM, 22), "name": "bash", "input": {"command": command}},
        ],
    }
    text = json.dumps(block, indent=2, ensure_ascii=False) + "\n"
    return text, (v,)


@_shape("claude-desktop-mcp-notion-token")
def _mcp_notion(rng: random.Random) -> Built:
    v = "ntn_" + _chars(rng, _ALNUM, 46)
    headers = json.dumps({"Authorization": f"Bearer {v}", "Notion-Version": "2022-06-28"})
    config = {
        "mcpServers": {
            "notionApi": {
                "command": "npx",
                "args": ["-y", "@notionhq/notion-mcp-server"],
                "env": {"OPENAPI_MCP_HEADERS": headers},
            },
            "filesystem": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/ada/src"],
            },
        }
    }
    text = "// ~/Library/Application Support/Claude/claude_desktop_config.json\n" + json.dumps(config, indent=2) + "\n"
    return text, (v,)


@_shape("llm-jsonl-user-shares-login")
def _llm_jsonl(rng: random.Random) -> Built:
    pw = _human(rng, exclude='"\\')
    code = f"{_chars(rng, _LOWER36, 5)}-{_chars(rng, _LOWER36, 5)}"
    user = (
        f"my login for the staging admin is ada.l@example.org and the password is {pw}, "
        f"if it asks for 2FA the backup code is {code}. can you check why the refund button is greyed out?"
    )
    lines = [
        {"ts": "2026-03-05T10:12:03Z", "role": "system", "content": "You are Ops Copilot. You can browse internal tools."},
        {"ts": "2026-03-05T10:12:41Z", "role": "user", "content": user},
        {"ts": "2026-03-05T10:12:44Z", "role": "assistant", "content": "I'll log in and look at the refund permissions."},
    ]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    return text, (pw, code)


@_shape("node-axios-error-config-dump")
def _axios(rng: random.Random) -> Built:
    v = "sk_" + _hex(rng, 24)
    text = _fill(
        """
        AxiosError: Request failed with status code 429
            at settle (/srv/app/node_modules/axios/dist/node/axios.cjs:2019:12)
            at IncomingMessage.handleStreamEnd (/srv/app/node_modules/axios/dist/node/axios.cjs:3135:11)
            at IncomingMessage.emit (node:events:531:35) {
          code: 'ERR_BAD_REQUEST',
          config: {
            timeout: 10000,
            headers: Object [AxiosHeaders] {
              Accept: 'application/json, text/plain, */*',
              'Content-Type': 'application/json',
              'xi-api-key': '«v»',
              'User-Agent': 'axios/1.7.2'
            },
            method: 'post',
            url: 'https://api.elevenlabs.io/v1/text-to-speech/«voice»',
            data: '{"text":"Your order has shipped","model_id":"eleven_multilingual_v2"}'
          },
          response: { status: 429, statusText: 'Too Many Requests' }
        }
        """,
        v=v,
        voice=_chars(rng, _ALNUM, 20),
    )
    return text, (v,)


@_shape("php-var-dump-config")
def _var_dump(rng: random.Random) -> Built:
    a, b = _b64(rng, 32), _words(rng, "/", 3)
    text = _fill(
        """
        array(3) {
          ["app"]=>
          array(2) {
            ["env"]=>
            string(10) "production"
            ["key"]=>
            string(«alen») "base64:«a»"
          }
          ["redis"]=>
          array(3) {
            ["host"]=>
            string(11) "redis.local"
            ["password"]=>
            string(«blen») "«b»"
            ["port"]=>
            int(6379)
          }
          ["debug"]=>
          bool(false)
        }
        """,
        alen=str(len(a) + 7),
        a=a,
        blen=str(len(b)),
        b=b,
    )
    return text, (a, b)


# People writing to people: chat, mail, tickets, in several languages.


@_shape("german-ticket-passwort-next-line")
def _german(rng: random.Random) -> Built:
    v = _human(rng)
    text = _fill(
        """
        Ticket #48213 – Zugang Buchhaltungs-NAS

        Hallo Jana,

        wie besprochen der neue Zugang für das NAS in der Buchhaltung:

        Benutzer: buchhaltung
        Passwort:
        «v»

        Bitte nach der ersten Anmeldung ändern. Danke!
        Grüße, Timo (IT)
        """,
        v=v,
    )
    return text, (v,)


@_shape("spanish-whatsapp-contrasena")
def _spanish(rng: random.Random) -> Built:
    v = _short(rng)
    text = _fill(
        """
        [05/03/26, 18:42:10] Lucía: oye, ¿me pasas lo del router de la oficina?
        [05/03/26, 18:43:55] Marcos: usuario admin, contraseña «v»
        [05/03/26, 18:44:02] Marcos: no lo compartas, que lo cambio el lunes
        [05/03/26, 18:44:30] Lucía: 👍 gracias
        """,
        v=v,
    )
    return text, (v,)


@_shape("chinese-wechat-wifi-mima")
def _chinese(rng: random.Random) -> Built:
    v = _chars(rng, _LOWER36, 4) + str(rng.randint(1000, 9999)) + _chars(rng, string.ascii_uppercase, 2)
    text = _fill(
        """
        王磊 14:05
        会议室新的无线网络：SSID 是 Office-5G，密码：«v»
        访客网络不要用这个哦
        李娜 14:06
        收到，谢谢
        """,
        v=v,
    )
    return text, (v,)


@_shape("french-email-mot-de-passe")
def _french(rng: random.Random) -> Built:
    v = _words(rng, "-", 4)
    text = _fill(
        """
        De : support@example-compta.fr
        À : claire.martin@example.org
        Objet : Votre accès au portail fournisseurs

        Bonjour Claire,

        Votre compte sur le portail fournisseurs a été créé. Identifiant : claire.martin ; mot de passe
        provisoire : «v» (à modifier à la première connexion).

        Cordialement,
        Le service comptabilité
        """,
        v=v,
    )
    return text, (v,)


@_shape("email-recovery-codes-forward")
def _recovery(rng: random.Random) -> Built:
    codes = [f"{_chars(rng, '0123456789abcdef', 5)}-{_chars(rng, '0123456789abcdef', 5)}" for _ in range(2)]
    text = _fill(
        """
        ---------- Forwarded message ---------
        From: Ada Lovelace <ada@example.org>
        Subject: codes for the shared GitHub bot account

        Hi Sam — if the bot account ever locks us out, these are the two recovery codes I have left (each works
        once):

        «c1»
        «c2»

        I used the other eight already.
        """,
        c1=codes[0],
        c2=codes[1],
    )
    return text, (codes[0], codes[1])


@_shape("jira-wiki-noformat-block")
def _jira(rng: random.Random) -> Built:
    v = _punct(rng, exclude="{}|")
    text = _fill(
        """
        h3. Steps to reproduce
        # SSH to {{batch-02}} as {{svc_etl}}
        # Run the import with the account below:
        {noformat}
        ETL_DB_USER=svc_etl
        ETL_DB_PASS=«v»
        ./run_import.sh --date 2026-03-04
        {noformat}
        h3. Actual result
        {code}psycopg.OperationalError: connection to server at "10.0.8.4", port 5432 failed: timeout expired{code}
        """,
        v=v,
    )
    return text, (v,)


@_shape("notion-shared-accounts-table")
def _notion_table(rng: random.Random) -> Built:
    a, b = _human(rng, exclude="|"), _short(rng)
    text = _fill(
        """
        # Shared accounts (marketing)

        | Service | Login | Pass | Owner |
        | --- | --- | --- | --- |
        | Canva | marketing@example.org | «a» | @jules |
        | Hootsuite | social@example.org | «b» | @mira |
        | Google Ads | via SSO | — | @jules |
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("dm-paste-value-only")
def _dm_paste(rng: random.Random) -> Built:
    v = _chars(rng, _BASE58, 44)
    text = _fill(
        """
        **Priya** 11:02
        can you send me the signer key for the devnet faucet? the one in 1password is the old one
        **Tom** 11:04
        «v»
        **Tom** 11:04
        delete after you've loaded it pls
        """,
        v=v,
    )
    return text, (v,)


@_shape("pagerduty-events-routing-key")
def _pagerduty(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        $ curl -sS -X POST https://events.pagerduty.com/v2/enqueue -H 'Content-Type: application/json' -d '{
            "routing_key": "«v»",
            "event_action": "trigger",
            "dedup_key": "disk-full-db02",
            "payload": {"summary": "Disk 95% full on db02", "source": "db02", "severity": "critical"}
          }'
        {"status":"success","message":"Event processed","dedup_key":"disk-full-db02"}
        """,
        v=v,
    )
    return text, (v,)


@_shape("flutter-run-dart-define")
def _flutter(rng: random.Random) -> Built:
    v = "os_v2_app_" + _chars(rng, string.ascii_lowercase + "234567", 110)
    text = _fill(
        """
        $ flutter run --flavor prod --dart-define=API_BASE=https://api.example.org --dart-define=ONESIGNAL_REST_KEY=«v»
        Launching lib/main_prod.dart on Pixel 8 in debug mode...
        Running Gradle task 'assembleProdDebug'...                        41.2s
        ✓ Built build/app/outputs/flutter-apk/app-prod-debug.apk
        """,
        v=v,
    )
    return text, (v,)


@_shape("vscode-settings-sqltools-connection")
def _vscode(rng: random.Random) -> Built:
    v = _words(rng, "#", 3)
    text = _fill(
        """
        // .vscode/settings.json
        {
          "editor.formatOnSave": true,
          "sqltools.connections": [
            {
              "previewLimit": 50,
              "server": "reporting-db.internal",
              "port": 5432,
              "driver": "PostgreSQL",
              "name": "reporting (ro)",
              "database": "reporting",
              "username": "analyst",
              "password": "«v»"
            }
          ]
        }
        """,
        v=v,
    )
    return text, (v,)


# Documents without a credential: look-alikes only.


@_clean("clean-git-show-ssh-signed-commit")
def _clean_signed_commit(rng: random.Random) -> str:
    sig = _wrap(_b64(rng, 240), 70)
    return _fill(
        """
        $ git cat-file -p HEAD
        tree «tree»
        parent «parent»
        author Ada Lovelace <ada@example.org> 1772701234 +0000
        committer Ada Lovelace <ada@example.org> 1772701234 +0000
        gpgsig -----BEGIN SSH SIGNATURE-----
         «sig»
         -----END SSH SIGNATURE-----

        Rotate the session signing key through the secret manager (no key in the repo)
        """,
        tree=_hex(rng, 20),
        parent=_hex(rng, 20),
        sig=sig.replace("\n", "\n "),
    )


@_clean("clean-sha512sums-release")
def _clean_sha512(rng: random.Random) -> str:
    return _fill(
        """
        $ cat SHA512SUMS
        «a»  shopctl_2.4.0_linux_amd64.tar.gz
        «b»  shopctl_2.4.0_darwin_arm64.tar.gz
        «c»  shopctl_2.4.0_windows_amd64.zip
        $ sha512sum -c SHA512SUMS --ignore-missing
        shopctl_2.4.0_linux_amd64.tar.gz: OK
        """,
        a=_hex(rng, 64),
        b=_hex(rng, 64),
        c=_hex(rng, 64),
    )


@_clean("clean-structured-log-trace-ids")
def _clean_trace_ids(rng: random.Random) -> str:
    lines = []
    for path, status in (("/api/v1/cart", 200), ("/api/v1/checkout", 201), ("/api/v1/session", 204)):
        record = {
            "level": "info",
            "msg": "request finished",
            "path": path,
            "status": status,
            "request_id": _uuid(rng),
            "trace_id": _hex(rng, 16),
            "span_id": _hex(rng, 8),
            "user_id": rng.randint(1000, 99999),
            "duration_ms": round(rng.uniform(3, 400), 1),
        }
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


@_clean("clean-ipynb-png-output")
def _clean_ipynb(rng: random.Random) -> str:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(420)).decode()
    cell = {
        "cell_type": "code",
        "execution_count": 7,
        "metadata": {},
        "outputs": [
            {
                "data": {"image/png": png, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
                "metadata": {},
                "output_type": "display_data",
            }
        ],
        "source": ["df.groupby('day')['tokens'].sum().plot()"],
    }
    return json.dumps(cell, indent=1) + "\n"


@_clean("clean-ssh-host-public-keys")
def _clean_host_keys(rng: random.Random) -> str:
    ed = base64.b64encode(_ssh_string(b"ssh-ed25519", rng.randbytes(32))).decode()
    ecdsa = base64.b64encode(_ssh_string(b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" + rng.randbytes(64))).decode()
    return _fill(
        """
        $ cat /etc/ssh/ssh_host_*_key.pub
        ecdsa-sha2-nistp256 «ecdsa» root@web01
        ssh-ed25519 «ed» root@web01
        $ ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub
        256 SHA256:«fp» root@web01 (ED25519)
        """,
        ecdsa=ecdsa,
        ed=ed,
        fp=_b64(rng, 32).rstrip("="),
    )


@_clean("clean-readme-placeholder-tokens")
def _clean_placeholders(rng: random.Random) -> str:
    return _fill(
        """
        ## Quick start

        1. Create a key in the dashboard (Settings → API keys) and export it:

           ```sh
           export SHOP_API_KEY=<your-api-key-here>
           curl -H "Authorization: Bearer $SHOP_API_KEY" https://api.example.org/v1/ping
           ```

        2. Or pass it in code: `Client(api_key="YOUR_API_KEY")`, `token: "xxxxxxxxxxxxxxxx"`,
           `password: "changeme"` in `config.sample.yml` are placeholders, not working values.

        Keys look like `shk_live_` followed by 32 characters; keys for the sandbox start with `shk_test_`.
        The default port is «port».
        """,
        port=str(rng.choice([8080, 8443, 9000])),
    )


@_clean("clean-password-policy-doc")
def _clean_policy(rng: random.Random) -> str:
    return _fill(
        """
        # Password and secret handling policy (v«ver»)

        - Passwords are at least 14 characters; passphrases of four or more random words are encouraged.
        - Never send a password, API key or recovery code by chat or email: share it through the vault.
        - Service credentials rotate every 90 days; a leaked token is revoked first, investigated second.
        - Passwords are stored only as Argon2id hashes; the plaintext is never logged.
        - Forgotten password? Use the reset link; IT will never ask for your current password.
        """,
        ver=f"{rng.randint(2, 5)}.{rng.randint(0, 9)}",
    )


@_clean("clean-external-secret-manifest")
def _clean_external_secret(rng: random.Random) -> str:
    return _fill(
        """
        apiVersion: external-secrets.io/v1beta1
        kind: ExternalSecret
        metadata:
          name: shop-db
          namespace: shop
        spec:
          refreshInterval: 1h
          secretStoreRef:
            kind: ClusterSecretStore
            name: aws-secrets-manager
          target:
            name: shop-db-credentials
          data:
            - secretKey: password
              remoteRef:
                key: prod/shop/db
                property: password
                version: «ver»
        """,
        ver="uuid-" + _uuid(rng),
    )


@_clean("clean-terraform-vault-data-source")
def _clean_tf_vault(rng: random.Random) -> str:
    return _fill(
        """
        data "vault_kv_secret_v2" "db" {
          mount = "kv"
          name  = "shop/prod/db"
        }

        resource "aws_db_instance" "shop" {
          identifier           = "shop-prod-«n»"
          engine               = "postgres"
          username             = "shop_admin"
          password             = data.vault_kv_secret_v2.db.data["password"]
          manage_master_user_password = null
          skip_final_snapshot  = false
        }
        """,
        n=str(rng.randint(1, 9)),
    )


@_clean("clean-llm-usage-json")
def _clean_usage(rng: random.Random) -> str:
    usage = {
        "id": "msg_01" + _chars(rng, _ALNUM, 22),
        "type": "message",
        "model": "claude-sonnet-4-5",
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": rng.randint(100, 9000),
            "cache_creation_input_tokens": rng.randint(0, 4000),
            "cache_read_input_tokens": rng.randint(0, 40000),
            "output_tokens": rng.randint(10, 4000),
        },
    }
    return json.dumps(usage, indent=2) + "\n"


@_clean("clean-django-dumpdata-user-hashes")
def _clean_dumpdata(rng: random.Random) -> str:
    users = [
        {
            "model": "auth.user",
            "pk": pk,
            "fields": {
                "password": f"pbkdf2_sha256$870000${_chars(rng, _ALNUM, 22)}${_b64(rng, 32)}",
                "username": name,
                "is_superuser": pk == 1,
                "last_login": "2026-03-04T17:22:09.411Z",
            },
        }
        for pk, name in ((1, "admin"), (2, "ada"))
    ]
    users.append(
        {
            "model": "auth.user",
            "pk": 3,
            "fields": {
                "password": f"argon2$argon2id$v=19$m=102400,t=2,p=8${_b64(rng, 16).rstrip('=')}${_b64(rng, 32).rstrip('=')}",
                "username": "grace",
                "is_superuser": False,
                "last_login": None,
            },
        }
    )
    return "$ ./manage.py dumpdata auth.user --indent 2\n" + json.dumps(users, indent=2) + "\n"


@_clean("clean-systemd-loadcredential-unit")
def _clean_loadcredential(rng: random.Random) -> str:
    return _fill(
        """
        # /etc/systemd/system/shop-worker.service
        [Service]
        User=shop
        LoadCredential=db-password:/etc/credstore/shop-db-password
        LoadCredentialEncrypted=stripe-key:/etc/credstore.encrypted/stripe-key.cred
        Environment=DB_PASSWORD_FILE=%d/db-password
        ExecStart=/srv/shop/.venv/bin/shop-worker --concurrency «n»
        """,
        n=str(rng.randint(2, 8)),
    )


@_clean("clean-compose-env-interpolation")
def _clean_compose_env(rng: random.Random) -> str:
    return _fill(
        """
        services:
          api:
            image: ghcr.io/example/shop-api@sha256:«digest»
            environment:
              DATABASE_URL: postgres://shop:${DB_PASSWORD:?set DB_PASSWORD}@db:5432/shop
              STRIPE_SECRET_KEY: ${STRIPE_SECRET_KEY}
              SESSION_SECRET_FILE: /run/secrets/session_secret
            secrets: [session_secret]
        secrets:
          session_secret:
            file: ./secrets/session_secret.txt
        """,
        digest=_hex(rng, 32),
    )


@_clean("clean-html-sri-script-tags")
def _clean_sri(rng: random.Random) -> str:
    return _fill(
        """
        <link rel="stylesheet" href="https://cdn.example.net/ui/4.2.1/ui.min.css" integrity="sha384-«a»" crossorigin="anonymous">
        <script src="https://cdn.example.net/ui/4.2.1/ui.min.js" integrity="sha384-«b»" crossorigin="anonymous"></script>
        <script type="module" src="/assets/index-«build».js"></script>
        """,
        a=_b64(rng, 48),
        b=_b64(rng, 48),
        build=_chars(rng, _URLSAFE, 8),
    )


@_clean("clean-cargo-lock-checksums")
def _clean_cargo_lock(rng: random.Random) -> str:
    return _fill(
        """
        [[package]]
        name = "hmac"
        version = "0.12.1"
        source = "registry+https://github.com/rust-lang/crates.io-index"
        checksum = "«a»"
        dependencies = [
         "digest",
        ]

        [[package]]
        name = "secrecy"
        version = "0.10.3"
        source = "registry+https://github.com/rust-lang/crates.io-index"
        checksum = "«b»"
        """,
        a=_hex(rng, 32),
        b=_hex(rng, 32),
    )


@_clean("clean-mfa-enrolment-help")
def _clean_mfa(rng: random.Random) -> str:
    return _fill(
        """
        ### Setting up two-factor authentication

        Scan the QR code with your authenticator app, then type the 6-digit code it shows. You will then see
        ten recovery codes in the form `xxxxx-xxxxx`. Download them and keep them somewhere safe (a password
        manager is best): each code works once. Support can't see or resend your codes; if you lose them and
        your phone, an organisation owner has to reset your 2FA. Codes generated on «date» replace older ones.
        """,
        date=f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
    )


@_clean("clean-css-font-data-url")
def _clean_font(rng: random.Random) -> str:
    woff = base64.b64encode(b"wOF2\x00\x01\x00\x00" + rng.randbytes(300)).decode()
    return _fill(
        """
        @font-face {
          font-family: "Inter Subset";
          font-display: swap;
          src: url(data:font/woff2;base64,«woff») format("woff2");
        }
        .token-count { font-family: "Inter Subset", sans-serif; }
        """,
        woff=woff,
    )


@_clean("clean-cosign-verify-public-key")
def _clean_cosign(rng: random.Random) -> str:
    der = bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d03010703420004") + rng.randbytes(64)
    return _fill(
        """
        $ cat cosign.pub
        -----BEGIN PUBLIC KEY-----
        «pub»
        -----END PUBLIC KEY-----
        $ cosign verify --key cosign.pub ghcr.io/example/shop-api:2.4.0 | jq -r '.[0].critical.image'
        Verification for ghcr.io/example/shop-api:2.4.0 --
        The following checks were performed on each of these signatures:
          - The cosign claims were validated
          - The signatures were verified against the specified public key
        {"docker-manifest-digest":"sha256:«digest»"}
        """,
        pub=_wrap(base64.b64encode(der).decode(), 64),
        digest=_hex(rng, 32),
    )


SHAPES = tuple(name for name, _ in _CREDENTIAL_SHAPES)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN_SHAPES)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape with fresh values (seeded), then the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(name, *build(rng)) for name, build in _CREDENTIAL_SHAPES]
    return docs + [Document(name, build(rng)) for name, build in _CLEAN_SHAPES]
