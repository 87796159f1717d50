"""The HOLDOUT5 part of the secret corpus: a fifth blind part, written after HOLDOUT, HOLDOUT2, HOLDOUT3 and HOLDOUT4.

Written blind: its author never read the detector, its rules, its docs, its tests or its figures, and no
document was run through a detector or changed after one. Every document copies what a real tool, config
file, log, agent, person or trace writes, with formats and vendors the earlier parts do not use:

- config formats: HOCON (Play), EDN (Clojure), Jsonnet, Dhall, a Java .properties file with `\\u` escapes,
  .netrc, pip.conf (an index URL with a token), .npmrc `_auth`, Maven settings.xml, Helm values (a password
  pair and a PEM EC key), Ansible group_vars, a Kubernetes Secret `stringData`, a Nomad job, Spring
  application.yml, Rails database.yml, a Laravel .env, Jenkins configuration-as-code, the CircleCI CLI config,
  an Argo CD repository Secret, an Airflow connection URI, dbt profiles.yml, a Prisma schema, redis.conf,
  RabbitMQ definitions.json, Azure Functions local.settings.json, .databrickscfg, Snowflake connections.toml,
  a Supabase .env, a LiteLLM proxy config, an AutoGen OAI_CONFIG_LIST, a Qdrant/Weaviate compose file,
  prometheus.yml, grafana.ini, an OpenTelemetry env file, postfix sasl_passwd;
- shells, CLIs and logs: `elasticsearch-keystore show`, `vault kv get`, `stripe listen`, `git credential fill`,
  `git remote -v`, `sshpass -p`, `mysqldump -p<password>`, a Makefile `PGPASSWORD=`, `curl -u`, `curl --user`,
  `docker login --password-stdin`, mongosh, the GitLab variables API, a GitHub Actions step with a Discord
  webhook;
- HTTP exports and traces: a HAR file, a Postman collection, an Insomnia export, a `rich` Python traceback
  with locals, a Node.js nodemailer error, a Rust `{:#?}` dump, a Go `%+v` dump, a Java `toString()` log line;
- agents: a CrewAI script, an OpenAI-style `tool_calls` argument string, a LangSmith env shown to an agent;
- people: a runbook with YAML in Markdown, a Slack export, an e-mail with a temporary password, prose in
  Portuguese ("senha"), Italian ("la password è"), Dutch ("wachtwoord"), Polish ("hasło"), Japanese
  ("パスワード") and Korean ("비밀번호"), two unused recovery codes, a TOTP `otpauth://` URI, a WiFi QR string,
  a KeePass CSV export and a Bitwarden CSV export (password and TOTP seed).

Each document plants one or two values; every value appears verbatim in its text and is 8 characters or
more. Value forms: vendor prefixes (gsk_, sk-proj-, lsv2_pt_, pcsk_, hf_, dapi, whsec_, SG., key-,
dckr_pat_, gldt-, CCIPAT_, ATBB, Mailchimp `-usNN`, Discord bot tokens and webhook tokens, Slack webhook
secrets), hex (Twilio, Azure OpenAI, Gitea, Jenkins API tokens), base64 (Azure AccountKey and
SharedAccessKey, Laravel APP_KEY, npm `_auth`), base64url, base32 (TOTP seeds, an Azure DevOps PAT), JWTs
(a Supabase service_role key, an RS256 bearer token), PEM body lines (a PKCS#8 RSA key inside a service
account JSON, a SEC1 EC key in YAML: the planted value is one 64-character body line, which only goes away
if the key is masked), people's passwords (a word, digits, a mark), generated passwords with symbols,
passphrases (spaces, dashes, dots), a password with `\\u00XX` escapes (planted as written) and URL-encoded
passwords inside URIs (planted as written, `%40` and all).

Decisions: a Supabase anon key is public by design and is not planted (it sits beside the planted
service_role key); a GCP `private_key_id`, a Twilio Account SID, an Azure AccountName, usernames, client ids
and e-mail addresses are identifiers, not credentials; RabbitMQ `password_hash` values are hashes, not
credentials; for a URI or webhook URL the planted value is the secret part (password or token), not the
whole URL; recovery codes are credentials (only unused ones, quoted by a person, are planted); a 6-digit TOTP
code never appears as a value; no document holds a credential value beside the one or two it plants.

The clean documents hold no credential but plenty of look-alikes: commit SHAs and Change-Ids, npm lockfile
integrity, docker digests, S3 ETags and version ids, `secretKeyRef`, Vault policy paths, a password policy,
placeholders marked as examples, LLM token counters, OTLP trace ids, SSH public keys, an X.509 certificate,
a base64 PNG, go.sum hashes, pip `--hash=`, an empty .env.example, `${{ secrets.X }}`, Terraform
`(sensitive value)`, key listings showing only a prefix and last four characters, Helm `existingSecret`.

SEED = 577215 (271828 was asked for, but an earlier part already uses it). `documents(seed)` gives one
document per credential shape (values drawn with `seed`), then the clean ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import urllib.parse
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 577215

_ALNUM = string.ascii_letters + string.digits
_UPPER_NUM = string.ascii_uppercase + string.digits
_HEXDIGITS = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_URLSAFE = _ALNUM + "-_"

_WORDS = tuple(
    """
    harbor lantern copper meadow glacier pepper orchid falcon timber velvet saffron canyon quartz
    walnut thistle ember juniper marble cobalt willow biscuit tundra pelican ribbon sparrow nutmeg
    bramble lagoon cricket dynamo kettle mango pistachio rocket summit tornado violin zeppelin
    anchor basil
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


def _when(rng: random.Random) -> str:
    return (
        f"2026-{rng.randint(1, 11):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
    )


def _person(rng: random.Random, marks: str = "!?#*") -> str:
    """A person's password: a capitalised word, a few digits and a mark."""
    return rng.choice(_WORDS).capitalize() + _num(rng, 10, 9999) + rng.choice(marks)


def _generated(rng: random.Random, n: int, symbols: str = "!#%*+-=?@^_~") -> str:
    """A password manager's password: letters, digits and symbols, at least one of each kind."""
    while True:
        value = _draw(rng, _ALNUM + symbols * 2, n)
        if any(c in symbols for c in value) and any(c.isdigit() for c in value) and value[0] not in "-#":
            return value


def _phrase(rng: random.Random, k: int, sep: str) -> str:
    return sep.join(rng.sample(_WORDS, k))


def _jwt(rng: random.Random, header: dict, payload: dict, sig_bytes: int = 32) -> str:
    def part(obj: dict) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    return f"{part(header)}.{part(payload)}.{_b64url(rng, sig_bytes)}"


def _lines(text: str, width: int = 64) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


def _rsa_pkcs8_lines(rng: random.Random) -> list[str]:
    prefix = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7308204a302010002820101")
    der = prefix + b"\x00" + rng.randbytes(1217 - len(prefix) - 1)
    return _lines(base64.b64encode(der).decode())


def _ec_sec1_lines(rng: random.Random) -> list[str]:
    der = (
        bytes.fromhex("307702010104 20".replace(" ", ""))
        + rng.randbytes(32)
        + bytes.fromhex("a00a06082a8648ce3d030107a144034200 04".replace(" ", ""))
        + rng.randbytes(64)
    )
    return _lines(base64.b64encode(der).decode())


def _discord_bot_token(rng: random.Random) -> str:
    snowflake = str(rng.randint(1_000_000_000_000_000_000, 1_399_999_999_999_999_999))
    head = base64.b64encode(snowflake.encode()).decode().rstrip("=")
    return f"{head}.{_draw(rng, _URLSAFE, 6)}.{_draw(rng, _URLSAFE, 38)}"


# --------------------------------------------------------------------------------------------------------
# Config formats
# --------------------------------------------------------------------------------------------------------


@_credential("play-framework-hocon-application-conf")
def _play_hocon(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key, pw = _b64(rng, 48), _generated(rng, 20, "!#%*+-=?_~")
    text = _t(
        """
        # conf/application.conf -- generated by sbt new playframework/play-scala-seed.g8, edited
        include "base.conf"

        play {
          http.secret.key = "⟨key⟩"
          i18n.langs = ["en", "de"]
          filters.hosts.allowed = [".shop.internal", "localhost:9000"]
          server.http.idleTimeout = 75s
        }

        db.default {
          driver = org.postgresql.Driver
          url = "jdbc:postgresql://pg-primary.shop.internal:5432/catalog?ssl=true"
          username = catalog_app
          password = "⟨pw⟩"
          hikaricp.maximumPoolSize = ${?DB_POOL_SIZE}
        }

        akka.actor.default-dispatcher.fork-join-executor.parallelism-max = 24
        """,
        key=key,
        pw=pw,
    )
    return text, (key, pw)


@_credential("clojure-edn-integrant-config")
def _clojure_edn(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?*")
    text = _t(
        """
        ;; resources/config.edn  (read with aero, profile :prod)
        {:duct.profile/base
         {:app.http/server {:port #long #or [#env PORT 3000]
                            :max-threads 48}
          :app.db/pool     {:jdbc-url "jdbc:postgresql://10.20.4.17:5432/ledger"
                            :username "ledger_svc"
                            :password "⟨pw⟩"
                            :maximum-pool-size 12}
          :app.queue/sqs   {:queue-url "https://sqs.eu-west-1.amazonaws.com/⟨acct⟩/ledger-events"
                            :wait-seconds 20}
          :app/build       {:git-sha "⟨sha⟩" :built-at #inst "⟨ts⟩Z"}}}
        """,
        pw=pw,
        acct=_num(rng, 100000000000, 999999999999),
        sha=_hx(rng, 40),
        ts=_when(rng),
    )
    return text, (pw,)


@_credential("jsonnet-grafana-datasource-secure-json")
def _jsonnet(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 24, "!#%*+-=?@^_~")
    text = _t(
        """
        // lib/datasources.libsonnet
        local grafana = import 'grafonnet/grafana.libsonnet';

        {
          influx:: {
            name: 'InfluxDB-telemetry',
            type: 'influxdb',
            access: 'proxy',
            url: 'https://influx.telemetry.internal:8086',
            user: 'grafana_ro',
            jsonData: { dbName: 'telemetry', httpMode: 'POST', timeInterval: '15s' },
            secureJsonData: { password: '⟨pw⟩' },
            version: ⟨ver⟩,
            editable: false,
          },
          datasources: [self.influx],
        }
        """,
        pw=pw,
        ver=_num(rng, 2, 9),
    )
    return text, (pw,)


@_credential("dhall-service-config-record")
def _dhall(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 4, "-")
    text = _t(
        """
        -- ./config/prod.dhall
        let Config = ./Config.dhall sha256:⟨hash⟩

        let smtp =
              { host = "smtp.eu.mailrelay.net"
              , port = 587
              , username = "notifications@invoicing.example.org"
              , password = "⟨pw⟩"
              , startTls = True
              }

        in  Config::{ environment = "prod", replicas = 3, smtp, logLevel = "info" }
        """,
        pw=pw,
        hash=_hx(rng, 64),
    )
    return text, (pw,)


@_credential("java-properties-unicode-escaped-password")
def _properties_unicode(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    word = rng.choice(
        ("Gl\\u00fcck", "K\\u00e4se", "Br\\u00fccke", "M\\u00fchle", "Sch\\u00f6n", "St\\u00e4rke")
    )
    pw = word + rng.choice(("keks", "brot", "wald", "zeit")) + _num(rng, 10, 999) + rng.choice("!?#")
    text = _t(
        """
        # src/main/resources/application-prod.properties
        # Saved by IntelliJ IDEA (native2ascii on), ⟨ts⟩
        spring.application.name=bestellungen
        spring.datasource.url=jdbc:mariadb://db-02.bestell.intern:3306/bestellungen?useUnicode=true
        spring.datasource.username=bestell_app
        spring.datasource.password=⟨pw⟩
        spring.jpa.hibernate.ddl-auto=validate
        server.servlet.context-path=/api
        app.anzeige.begr\\u00fc\\u00dfung=Willkommen zur\\u00fcck
        management.endpoints.web.exposure.include=health,info,prometheus
        """,
        pw=pw,
        ts=_when(rng),
    )
    return text, (pw,)


@_credential("netrc-private-nexus-machine")
def _netrc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!%*+-=?@^_~")
    text = _t(
        """
        $ cat ~/.netrc
        machine nexus.build.internal
          login ci-publisher
          password ⟨pw⟩

        machine api.github.com
          login octo-bot
          password ${GITHUB_TOKEN}
        $ ls -l ~/.netrc
        -rw------- 1 runner runner ⟨size⟩ Nov  3 09:14 /home/runner/.netrc
        """,
        pw=pw,
        size=_num(rng, 120, 180),
    )
    return text, (pw,)


@_credential("pip-conf-azure-artifacts-index-url")
def _pip_conf(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pat = _draw(rng, "abcdefghijklmnopqrstuvwxyz234567", 52)
    text = _t(
        """
        $ pip config debug
        env_var:
        env:
        global:
          /etc/xdg/pip/pip.conf, exists: False
          /etc/pip.conf, exists: False
        site:
          /opt/venvs/etl/pip.conf, exists: False
        user:
          /home/dev/.pip/pip.conf, exists: False
          /home/dev/.config/pip/pip.conf, exists: True
            global.index-url: https://build:⟨pat⟩@pkgs.dev.azure.com/contoso-data/_packaging/etl-feed/pypi/simple/
            global.timeout: 60
        """,
        pat=pat,
    )
    return text, (pat,)


@_credential("npmrc-legacy-underscore-auth")
def _npmrc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!#*")
    auth = base64.b64encode(f"frontend-ci:{pw}".encode()).decode()
    text = _t(
        """
        # ~/.npmrc on the legacy Jenkins agent (npm 6, Verdaccio 4)
        registry=https://npm.registry.corp.example/
        _auth=⟨auth⟩
        always-auth=true
        email=frontend-ci@corp.example
        strict-ssl=true
        cafile=/etc/ssl/certs/corp-root-ca.pem
        save-exact=true
        """,
        auth=auth,
    )
    return text, (auth,)


@_credential("maven-settings-xml-server-password")
def _maven_settings(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 16, "!#%*+-=?@^_~")
    text = _t(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <settings xmlns="http://maven.apache.org/SETTINGS/1.2.0"
                  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
          <localRepository>/var/cache/m2</localRepository>
          <servers>
            <server>
              <id>nexus-releases</id>
              <username>release-bot</username>
              <password>⟨pw⟩</password>
            </server>
          </servers>
          <mirrors>
            <mirror>
              <id>nexus-releases</id>
              <mirrorOf>*</mirrorOf>
              <url>https://nexus.build.internal/repository/maven-public/</url>
            </mirror>
          </mirrors>
        </settings>
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("helm-values-postgresql-auth-pair")
def _helm_pg(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    admin, user = _generated(rng, 22, "!%*+-=?@^_~"), _person(rng, "!?*")
    text = _t(
        """
        # values-staging.yaml for bitnami/postgresql 15.5.⟨patch⟩
        global:
          storageClass: gp3
        auth:
          postgresPassword: "⟨admin⟩"
          username: orders
          password: "⟨user⟩"
          database: orders
        primary:
          resources:
            requests: { cpu: 500m, memory: 1Gi }
          persistence:
            size: 40Gi
        metrics:
          enabled: true
        """,
        admin=admin,
        user=user,
        patch=_num(rng, 0, 20),
    )
    return text, (admin, user)


@_credential("helm-values-ingress-tls-ec-private-key")
def _helm_tls(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    lines = _ec_sec1_lines(rng)
    cert = _lines("MIIB" + _b64(rng, 420))
    body = "\n".join("    " + line for line in lines)
    certbody = "\n".join("    " + line for line in cert)
    text = _t(
        """
        ingress:
          enabled: true
          className: nginx
          hosts:
            - host: grafana.ops.example.net
              paths: [{ path: /, pathType: Prefix }]
          tls:
            - secretName: grafana-tls
              hosts: [grafana.ops.example.net]
        tlsSecret:
          crt: |
            -----BEGIN CERTIFICATE-----
        ⟨cert⟩
            -----END CERTIFICATE-----
          key: |
            -----BEGIN EC PRIVATE KEY-----
        ⟨body⟩
            -----END EC PRIVATE KEY-----
        """,
        cert=certbody,
        body=body,
    )
    return text, (lines[0],)


@_credential("ansible-group-vars-plain-passwords")
def _ansible(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    root, become = _generated(rng, 20, "!%*+-=?@^_~"), _person(rng, "!?#")
    text = _t(
        """
        ---
        # inventories/prod/group_vars/dbservers.yml
        ansible_user: deploy
        ansible_become: true
        ansible_become_password: "⟨become⟩"
        mysql_port: 3306
        mysql_bind_address: "0.0.0.0"
        mysql_root_password: "⟨root⟩"
        mysql_databases:
          - name: wiki
            encoding: utf8mb4
        mysql_users:
          - name: wiki
            host: "10.0.%"
            priv: "wiki.*:ALL"
        """,
        root=root,
        become=become,
    )
    return text, (root, become)


@_credential("kubernetes-secret-stringdata-urlencoded-dsn")
def _k8s_stringdata(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    raw = rng.choice(_WORDS).capitalize() + "@" + _num(rng, 100, 999) + "/" + _draw(rng, _ALNUM, 6)
    enc = urllib.parse.quote(raw, safe="")
    text = _t(
        """
        apiVersion: v1
        kind: Secret
        metadata:
          name: billing-db
          namespace: billing
          labels:
            app.kubernetes.io/part-of: billing
          annotations:
            kubectl.kubernetes.io/last-applied-configuration: ""
        type: Opaque
        stringData:
          DATABASE_URL: "postgresql://billing:⟨enc⟩@billing-pg-rw.billing.svc:5432/billing?sslmode=require"
          DATABASE_POOL: "15"
        """,
        enc=enc,
    )
    return text, (enc,)


@_credential("nomad-job-template-env-block")
def _nomad(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _b64url(rng, 24)
    text = _t(
        """
        job "cache-warmer" {
          datacenters = ["dc1"]
          type        = "batch"

          periodic {
            crons            = ["*/15 * * * *"]
            prohibit_overlap = true
          }

          group "warm" {
            task "run" {
              driver = "docker"
              config {
                image = "registry.internal/cache-warmer@sha256:⟨digest⟩"
              }
              env {
                REDIS_ADDR     = "redis.service.consul:6379"
                REDIS_PASSWORD = "⟨pw⟩"
                WARM_KEYS      = "catalog:*,pricing:*"
              }
              resources {
                cpu    = 200
                memory = 128
              }
            }
          }
        }
        """,
        pw=pw,
        digest=_hx(rng, 64),
    )
    return text, (pw,)


@_credential("spring-boot-application-yml-jwt-secret")
def _spring_yml(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw, secret = _person(rng, "!#*"), _b64(rng, 64)
    text = _t(
        """
        server:
          port: 8443
          ssl:
            enabled: true
            key-store: classpath:keystore.p12
            key-store-type: PKCS12
        spring:
          datasource:
            url: jdbc:postgresql://localhost:5432/hr
            username: hr
            password: "⟨pw⟩"
          jpa:
            open-in-view: false
        app:
          security:
            jwt:
              secret: ⟨secret⟩
              expiration-ms: 3600000
        logging:
          level:
            org.springframework.security: INFO
        """,
        pw=pw,
        secret=secret,
    )
    return text, (pw, secret)


@_credential("rails-database-yml-production")
def _rails_db(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!%*+-=?^_~")
    text = _t(
        """
        default: &default
          adapter: postgresql
          encoding: unicode
          pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>

        development:
          <<: *default
          database: storefront_development

        test:
          <<: *default
          database: storefront_test

        production:
          <<: *default
          database: storefront_production
          username: storefront
          password: "⟨pw⟩"
          host: storefront-db.c9xk2h1lqpz4.eu-central-1.rds.amazonaws.com
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("laravel-dotenv-app-key-and-db")
def _laravel(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key, pw = "base64:" + _b64(rng, 32), _person(rng, "!?#*")
    text = _t(
        """
        APP_NAME="Kantoor Portal"
        APP_ENV=production
        APP_KEY=⟨key⟩
        APP_DEBUG=false
        APP_URL=https://portal.kantoor.example

        LOG_CHANNEL=stack
        LOG_LEVEL=warning

        DB_CONNECTION=mysql
        DB_HOST=127.0.0.1
        DB_PORT=3306
        DB_DATABASE=portal
        DB_USERNAME=portal
        DB_PASSWORD=⟨pw⟩

        BROADCAST_DRIVER=log
        CACHE_DRIVER=redis
        MAIL_MAILER=smtp
        MAIL_PASSWORD=null
        PUSHER_APP_ID=
        PUSHER_APP_KEY=
        VITE_APP_NAME="${APP_NAME}"
        """,
        key=key,
        pw=pw,
    )
    return text, (key, pw)


@_credential("jenkins-casc-string-credential")
def _jenkins_casc(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _hx(rng, 40)
    text = _t(
        """
        # jenkins.yaml (configuration-as-code plugin 1775.v810dc950b_514)
        jenkins:
          systemMessage: "Managed by JCasC -- do not edit in the UI"
          numExecutors: 0
        credentials:
          system:
            domainCredentials:
              - credentials:
                  - string:
                      scope: GLOBAL
                      id: gitea-api-token
                      description: "Gitea token for the multibranch scan"
                      secret: "⟨secret⟩"
                  - usernamePassword:
                      scope: GLOBAL
                      id: nexus-deploy
                      username: deploy
                      password: "${NEXUS_DEPLOY_PASSWORD}"
        """,
        secret=secret,
    )
    return text, (secret,)


@_credential("circleci-cli-yml-personal-token")
def _circleci(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = f"CCIPAT_{_draw(rng, _ALNUM, 22)}_{_hx(rng, 40)}"
    text = _t(
        """
        $ circleci version
        0.1.⟨build⟩+⟨short⟩ (homebrew)
        $ cat ~/.circleci/cli.yml
        host: https://circleci.com
        endpoint: graphql-unstable
        token: ⟨token⟩
        rest_endpoint: api/v2
        tls_cert: ""
        tls_insecure: false
        orb_publishing:
          default_namespace: acme-devex
        """,
        token=token,
        build=_num(rng, 28000, 31999),
        short=_hx(rng, 7),
    )
    return text, (token,)


@_credential("argocd-repository-secret-bitbucket")
def _argocd(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "ATBB" + _draw(rng, _ALNUM, 28) + _draw(rng, "0123456789ABCDEF", 8)
    text = _t(
        """
        apiVersion: v1
        kind: Secret
        metadata:
          name: repo-platform-gitops
          namespace: argocd
          labels:
            argocd.argoproj.io/secret-type: repository
        stringData:
          type: git
          url: https://bitbucket.org/acme-platform/gitops.git
          username: argocd-reader
          password: ⟨token⟩
          project: platform
        """,
        token=token,
    )
    return text, (token,)


@_credential("airflow-connection-env-uri")
def _airflow(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    raw = _generated(rng, 16, "!#%+=?@^")
    enc = urllib.parse.quote(raw, safe="")
    text = _t(
        """
        # docker-compose.override.yml (astro dev start)
        services:
          scheduler:
            environment:
              AIRFLOW__CORE__LOAD_EXAMPLES: "False"
              AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL: "60"
              AIRFLOW_CONN_WAREHOUSE: "postgresql://etl_loader:⟨enc⟩@warehouse.data.internal:5432/dw?sslmode=verify-full"
              AIRFLOW_CONN_S3_RAW: "aws://?region_name=eu-west-1&role_arn=arn%3Aaws%3Aiam%3A%3A⟨acct⟩%3Arole%2Fairflow-raw"
        """,
        enc=enc,
        acct=_num(rng, 100000000000, 999999999999),
    )
    return text, (enc,)


@_credential("dbt-profiles-yml-snowflake-password")
def _dbt(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, ".") + _num(rng, 10, 99)
    text = _t(
        """
        # ~/.dbt/profiles.yml
        analytics:
          target: dev
          outputs:
            dev:
              type: snowflake
              account: xy12345.eu-central-1
              user: DBT_DEV_MARTA
              password: "⟨pw⟩"
              role: TRANSFORMER
              warehouse: TRANSFORMING_XS
              database: ANALYTICS_DEV
              schema: dbt_marta
              threads: 8
              client_session_keep_alive: false
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("prisma-schema-hardcoded-datasource-url")
def _prisma(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 24)
    text = _t(
        """
        // prisma/schema.prisma
        generator client {
          provider = "prisma-client-js"
          previewFeatures = ["fullTextSearch"]
        }

        datasource db {
          provider = "mysql"
          url      = "mysql://app_rw:⟨pw⟩@aws.connect.psdb.cloud:3306/forum?sslaccept=strict"
          relationMode = "prisma"
        }

        model Post {
          id        Int      @id @default(autoincrement())
          title     String   @db.VarChar(255)
          createdAt DateTime @default(now())
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("redis-conf-requirepass-masterauth")
def _redis_conf(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    req, master = _hx(rng, 48), _hx(rng, 48)
    text = _t(
        """
        # /etc/redis/redis.conf (replica, redis 7.2.⟨patch⟩)
        bind 0.0.0.0 -::1
        protected-mode yes
        port 6379
        tcp-keepalive 300
        daemonize no
        supervised systemd
        loglevel notice
        requirepass ⟨req⟩
        replicaof 10.0.12.4 6379
        masterauth ⟨master⟩
        maxmemory 2gb
        maxmemory-policy allkeys-lru
        appendonly yes
        """,
        req=req,
        master=master,
        patch=_num(rng, 0, 9),
    )
    return text, (req, master)


@_credential("rabbitmq-definitions-federation-upstream")
def _rabbitmq(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 20, "-_~")
    text = _t(
        """
        {
          "rabbit_version": "3.13.⟨patch⟩",
          "users": [
            {"name": "orders", "password_hash": "⟨hash⟩", "hashing_algorithm": "rabbit_password_hashing_sha256", "tags": []}
          ],
          "vhosts": [{"name": "/"}],
          "parameters": [
            {
              "component": "federation-upstream",
              "vhost": "/",
              "name": "dc-east",
              "value": {"uri": "amqps://federator:⟨pw⟩@mq-east.internal:5671/%2F", "expires": 3600000}
            }
          ],
          "policies": [
            {"vhost": "/", "name": "federate-orders", "pattern": "^orders\\\\.", "apply-to": "exchanges",
             "definition": {"federation-upstream-set": "all"}, "priority": 0}
          ]
        }
        """,
        pw=pw,
        patch=_num(rng, 0, 7),
        hash=_b64(rng, 36),
    )
    return text, (pw,)


@_credential("azure-functions-local-settings-connection-strings")
def _azure_local_settings(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    account_key, sas_key = _b64(rng, 64), _b64(rng, 32)
    text = _t(
        """
        {
          "IsEncrypted": false,
          "Values": {
            "FUNCTIONS_WORKER_RUNTIME": "dotnet-isolated",
            "AzureWebJobsStorage": "DefaultEndpointsProtocol=https;AccountName=stinvoicesweu01;AccountKey=⟨account_key⟩;EndpointSuffix=core.windows.net",
            "ServiceBusConnection": "Endpoint=sb://sb-invoices-weu.servicebus.windows.net/;SharedAccessKeyName=listen-send;SharedAccessKey=⟨sas_key⟩",
            "InvoiceQueueName": "invoices-inbound",
            "InvoiceBatchSize": "⟨batch⟩"
          }
        }
        """,
        account_key=account_key,
        sas_key=sas_key,
        batch=_num(rng, 10, 200),
    )
    return text, (account_key, sas_key)


@_credential("databrickscfg-profile-token")
def _databricks(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "dapi" + _hx(rng, 32)
    text = _t(
        """
        $ databricks auth profiles
        Name      Host                                              Valid
        DEFAULT   https://adb-⟨ws⟩.7.azuredatabricks.net   YES
        $ cat ~/.databrickscfg
        [DEFAULT]
        host  = https://adb-⟨ws⟩.7.azuredatabricks.net
        token = ⟨token⟩
        jobs-api-version = 2.1
        """,
        token=token,
        ws=_num(rng, 1000000000000000, 9999999999999999),
    )
    return text, (token,)


@_credential("snowflake-connections-toml")
def _snowflake(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 22, "!#%*+-=?@^_~")
    text = _t(
        """
        # ~/.snowflake/connections.toml  (snow CLI 3.⟨minor⟩.0)
        default_connection_name = "reporting"

        [reporting]
        account = "ACMECORP-REPORTING"
        user = "SVC_LOOKER"
        password = "⟨pw⟩"
        warehouse = "REPORTING_WH"
        database = "MARTS"
        role = "LOOKER_READER"
        """,
        pw=pw,
        minor=_num(rng, 0, 9),
    )
    return text, (pw,)


@_credential("supabase-env-service-role-beside-anon")
def _supabase(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    ref = _draw(rng, string.ascii_lowercase, 20)
    iat = rng.randint(1_700_000_000, 1_760_000_000)
    header = {"alg": "HS256", "typ": "JWT"}
    anon = _jwt(
        rng, header, {"iss": "supabase", "ref": ref, "role": "anon", "iat": iat, "exp": iat + 315_360_000}
    )
    service = _jwt(
        rng,
        header,
        {"iss": "supabase", "ref": ref, "role": "service_role", "iat": iat, "exp": iat + 315_360_000},
    )
    text = _t(
        """
        # .env.local
        NEXT_PUBLIC_SUPABASE_URL=https://⟨ref⟩.supabase.co
        NEXT_PUBLIC_SUPABASE_ANON_KEY=⟨anon⟩
        # server only -- never expose to the browser
        SUPABASE_SERVICE_ROLE_KEY=⟨service⟩
        NEXT_PUBLIC_SITE_URL=http://localhost:3000
        """,
        ref=ref,
        anon=anon,
        service=service,
    )
    return text, (service,)


@_credential("litellm-proxy-config-groq-and-master-key")
def _litellm(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    groq, master = "gsk_" + _draw(rng, _ALNUM, 52), "sk-" + _draw(rng, _ALNUM, 32)
    text = _t(
        """
        # litellm_config.yaml  -- litellm --config litellm_config.yaml --port 4000
        model_list:
          - model_name: llama-3.3-70b
            litellm_params:
              model: groq/llama-3.3-70b-versatile
              api_key: ⟨groq⟩
              rpm: 30
          - model_name: gpt-4o-mini
            litellm_params:
              model: openai/gpt-4o-mini
              api_key: os.environ/OPENAI_API_KEY

        litellm_settings:
          drop_params: true
          num_retries: 2

        general_settings:
          master_key: ⟨master⟩
          database_url: os.environ/DATABASE_URL
        """,
        groq=groq,
        master=master,
    )
    return text, (groq, master)


@_credential("autogen-oai-config-list-json")
def _autogen(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    azure, together = _hx(rng, 32), _hx(rng, 64)
    text = _t(
        """
        [
          {
            "model": "gpt-4o",
            "api_key": "⟨azure⟩",
            "base_url": "https://oai-research-swc.openai.azure.com/",
            "api_type": "azure",
            "api_version": "2024-08-01-preview",
            "tags": ["azure", "planner"]
          },
          {
            "model": "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "api_key": "⟨together⟩",
            "base_url": "https://api.together.xyz/v1",
            "price": [0.00088, 0.00088],
            "tags": ["together", "coder"]
          }
        ]
        """,
        azure=azure,
        together=together,
    )
    return text, (azure, together)


@_credential("compose-qdrant-and-weaviate-api-keys")
def _vector_compose(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    qdrant, weaviate = _b64url(rng, 32), _hx(rng, 48)
    text = _t(
        """
        services:
          qdrant:
            image: qdrant/qdrant:v1.12.⟨p⟩
            ports: ["6333:6333", "6334:6334"]
            environment:
              QDRANT__SERVICE__API_KEY: "⟨qdrant⟩"
              QDRANT__TELEMETRY_DISABLED: "true"
            volumes: ["./qdrant_storage:/qdrant/storage:z"]
          weaviate:
            image: cr.weaviate.io/semitechnologies/weaviate:1.27.⟨p⟩
            environment:
              AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED: "false"
              AUTHENTICATION_APIKEY_ENABLED: "true"
              AUTHENTICATION_APIKEY_ALLOWED_KEYS: "⟨weaviate⟩"
              AUTHENTICATION_APIKEY_USERS: "rag-indexer@acme.example"
              PERSISTENCE_DATA_PATH: /var/lib/weaviate
              DEFAULT_VECTORIZER_MODULE: none
        """,
        qdrant=qdrant,
        weaviate=weaviate,
        p=_num(rng, 0, 6),
    )
    return text, (qdrant, weaviate)


@_credential("prometheus-scrape-basic-auth")
def _prometheus(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 24, "!#%*+-=?@^_~")
    text = _t(
        """
        global:
          scrape_interval: 30s
          evaluation_interval: 30s
          external_labels: { cluster: edge-ams-⟨n⟩ }

        scrape_configs:
          - job_name: rabbitmq
            static_configs:
              - targets: ["mq-1.edge:15692", "mq-2.edge:15692"]
          - job_name: federate-core
            honor_labels: true
            metrics_path: /federate
            params:
              "match[]": ['{job="node"}']
            scheme: https
            basic_auth:
              username: edge-federation
              password: "⟨pw⟩"
            static_configs:
              - targets: ["prometheus.core.example.net"]
        """,
        pw=pw,
        n=_num(rng, 1, 9),
    )
    return text, (pw,)


@_credential("grafana-ini-admin-and-secret-key")
def _grafana_ini(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    admin, secret = _person(rng, "!?#*"), _draw(rng, _ALNUM, 32)
    text = _t(
        """
        ; /etc/grafana/grafana.ini  (Grafana v11.⟨m⟩.1)
        [server]
        protocol = http
        http_port = 3000
        root_url = https://dash.ops.example.net/

        [security]
        admin_user = admin
        admin_password = ⟨admin⟩
        secret_key = ⟨secret⟩
        cookie_secure = true
        disable_gravatar = true

        [auth.anonymous]
        enabled = false
        """,
        admin=admin,
        secret=secret,
        m=_num(rng, 0, 4),
    )
    return text, (admin, secret)


@_credential("otel-exporter-otlp-headers-honeycomb-envfile")
def _otel(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _draw(rng, _ALNUM, 22)
    text = _t(
        """
        # /etc/default/checkout-api  (EnvironmentFile= of checkout-api.service)
        OTEL_SERVICE_NAME=checkout-api
        OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,service.version=4.12.⟨p⟩
        OTEL_EXPORTER_OTLP_ENDPOINT=https://api.eu1.honeycomb.io
        OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf
        OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=⟨key⟩
        OTEL_TRACES_SAMPLER=parentbased_traceidratio
        OTEL_TRACES_SAMPLER_ARG=0.2
        """,
        key=key,
        p=_num(rng, 0, 30),
    )
    return text, (key,)


@_credential("postfix-sasl-passwd-sendgrid-relay")
def _postfix(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = f"SG.{_draw(rng, _URLSAFE, 22)}.{_draw(rng, _URLSAFE, 43)}"
    text = _t(
        """
        root@mx-relay:~# cat /etc/postfix/sasl_passwd
        [smtp.sendgrid.net]:587 apikey:⟨key⟩
        root@mx-relay:~# postmap /etc/postfix/sasl_passwd && chmod 600 /etc/postfix/sasl_passwd*
        root@mx-relay:~# postconf relayhost smtp_sasl_auth_enable smtp_tls_security_level
        relayhost = [smtp.sendgrid.net]:587
        smtp_sasl_auth_enable = yes
        smtp_tls_security_level = encrypt
        root@mx-relay:~# systemctl reload postfix
        """,
        key=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# Shells, CLIs and logs
# --------------------------------------------------------------------------------------------------------


@_credential("elasticsearch-keystore-show-slack-url")
def _es_keystore(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _ALNUM, 24)
    team, bot = "T" + _draw(rng, _UPPER_NUM, 10), "B" + _draw(rng, _UPPER_NUM, 10)
    text = _t(
        """
        [elasticsearch@es-master-0 ~]$ bin/elasticsearch-keystore list
        keystore.seed
        xpack.notification.slack.account.monitoring.secure_url
        [elasticsearch@es-master-0 ~]$ bin/elasticsearch-keystore show xpack.notification.slack.account.monitoring.secure_url
        https://hooks.slack.com/services/⟨team⟩/⟨bot⟩/⟨secret⟩
        [elasticsearch@es-master-0 ~]$ curl -s -k -u elastic:$ELASTIC_PASSWORD -X POST https://localhost:9200/_nodes/reload_secure_settings
        {"_nodes":{"total":3,"successful":3,"failed":0},"cluster_name":"logs-prod","nodes":{"⟨node⟩":{"name":"es-master-0"}}}
        """,
        team=team,
        bot=bot,
        secret=secret,
        node=_b64url(rng, 16),
    )
    return text, (secret,)


@_credential("vault-kv-get-table-output")
def _vault_kv(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw, whsec = _generated(rng, 20, "!#%*+-=?@^_~"), "whsec_" + _draw(rng, _ALNUM, 32)
    text = _t(
        """
        $ vault kv get -mount=secret payments/stripe
        ======= Secret Path =======
        secret/data/payments/stripe

        ======= Metadata =======
        Key                Value
        ---                -----
        created_time       ⟨ts⟩.⟨frac⟩Z
        custom_metadata    <nil>
        deletion_time      n/a
        destroyed          false
        version            ⟨ver⟩

        ========= Data =========
        Key                  Value
        ---                  -----
        dashboard_password   ⟨pw⟩
        dashboard_user       payments-oncall@acme.example
        webhook_secret       ⟨whsec⟩
        """,
        pw=pw,
        whsec=whsec,
        ts=_when(rng),
        frac=_num(rng, 100000000, 999999999),
        ver=_num(rng, 2, 17),
    )
    return text, (pw, whsec)


@_credential("stripe-cli-listen-signing-secret")
def _stripe_listen(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    whsec = "whsec_" + _hx(rng, 64)
    text = _t(
        """
        $ stripe listen --forward-to localhost:4242/webhooks/stripe
        > Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing secret is ⟨whsec⟩ (^C to quit)
        ⟨t1⟩   --> payment_intent.created [evt_⟨e1⟩]
        ⟨t1⟩  <--  [200] POST http://localhost:4242/webhooks/stripe [evt_⟨e1⟩]
        ⟨t1⟩   --> charge.succeeded [evt_⟨e2⟩]
        ⟨t1⟩  <--  [200] POST http://localhost:4242/webhooks/stripe [evt_⟨e2⟩]
        """,
        whsec=whsec,
        t1=_when(rng).replace("T", " "),
        e1=_draw(rng, _ALNUM, 24),
        e2=_draw(rng, _ALNUM, 24),
    )
    return text, (whsec,)


@_credential("git-credential-fill-gitea-token")
def _git_credential_fill(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _hx(rng, 40)
    text = _t(
        """
        $ printf 'protocol=https\\nhost=git.lab.example.org\\n\\n' | git credential fill
        protocol=https
        host=git.lab.example.org
        username=renovate-bot
        password=⟨token⟩
        $ git config --global --get credential.helper
        store --file /home/agent/.config/git/credentials
        """,
        token=token,
    )
    return text, (token,)


@_credential("git-remote-v-huggingface-token-in-url")
def _git_remote_hf(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "hf_" + _draw(rng, string.ascii_letters, 34)
    text = _t(
        """
        $ git remote -v
        origin	https://nlp-lab:⟨token⟩@huggingface.co/nlp-lab/intent-classifier-v3 (fetch)
        origin	https://nlp-lab:⟨token⟩@huggingface.co/nlp-lab/intent-classifier-v3 (push)
        $ git log --oneline -3
        ⟨s1⟩ Upload model.safetensors with huggingface_hub
        ⟨s2⟩ Update README.md
        ⟨s3⟩ initial commit
        $ git lfs ls-files | head -2
        ⟨l1⟩ * model.safetensors
        ⟨l2⟩ * tokenizer.json
        """,
        token=token,
        s1=_hx(rng, 7),
        s2=_hx(rng, 7),
        s3=_hx(rng, 7),
        l1=_hx(rng, 10),
        l2=_hx(rng, 10),
    )
    return text, (token,)


@_credential("sshpass-deploy-script")
def _sshpass(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!#%*")
    text = _t(
        """
        #!/usr/bin/env bash
        # deploy_kiosk.sh -- pushes the kiosk build to the shop floor terminals
        set -euo pipefail
        BUILD=dist/kiosk-⟨ver⟩.tar.gz
        for host in kiosk-01 kiosk-02 kiosk-03; do
          sshpass -p '⟨pw⟩' scp -o StrictHostKeyChecking=no "$BUILD" "operator@${host}.floor.lan:/opt/kiosk/"
          sshpass -p '⟨pw⟩' ssh operator@"${host}".floor.lan 'sudo systemctl restart kiosk'
        done
        """,
        pw=pw,
        ver=f"2.{rng.randint(0, 9)}.{rng.randint(0, 40)}",
    )
    return text, (pw,)


@_credential("mysqldump-password-glued-to-flag")
def _mysqldump(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 8) + rng.choice("_.-") + _draw(rng, _ALNUM, 6)
    text = _t(
        """
        # crontab -l (backup host)
        MAILTO=dba@shop.example
        15 2 * * * mysqldump -h db-primary.shop.lan -u backup -p⟨pw⟩ --single-transaction --routines shop | gzip > /srv/backup/shop-$(date +\\%F).sql.gz
        45 3 * * 0 find /srv/backup -name 'shop-*.sql.gz' -mtime +30 -delete
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("makefile-pgpassword-prefix")
def _makefile_pg(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 20)
    text = _t(
        """
        .PHONY: db-reset db-seed migrate

        DB_HOST ?= localhost
        DB_NAME ?= tracker

        db-reset:
        \tPGPASSWORD=⟨pw⟩ psql -h $(DB_HOST) -U tracker -d postgres -c 'DROP DATABASE IF EXISTS $(DB_NAME)'
        \tPGPASSWORD=⟨pw⟩ psql -h $(DB_HOST) -U tracker -d postgres -c 'CREATE DATABASE $(DB_NAME)'

        migrate:
        \tgo run ./cmd/migrate -dir migrations up
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("curl-u-jenkins-api-token")
def _curl_jenkins(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "11" + _hx(rng, 32)
    text = _t(
        """
        $ curl -s -u svc-release:⟨token⟩ -X POST \\
            "https://jenkins.build.example.com/job/platform/job/release/buildWithParameters?VERSION=3.8.⟨p⟩&DRY_RUN=false" -i
        HTTP/2 201
        date: Tue, 03 Nov 2026 10:21:44 GMT
        x-content-type-options: nosniff
        location: https://jenkins.build.example.com/queue/item/⟨q⟩/
        server: Jetty(10.0.20)
        """,
        token=token,
        p=_num(rng, 0, 30),
        q=_num(rng, 10000, 99999),
    )
    return text, (token,)


@_credential("curl-user-mailgun-messages")
def _curl_mailgun(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "key-" + _hx(rng, 32)
    text = _t(
        """
        $ curl -s --user 'api:⟨key⟩' \\
            https://api.eu.mailgun.net/v3/mg.tickets.example.com/messages \\
            -F from='Tickets <noreply@mg.tickets.example.com>' \\
            -F to=qa@example.com -F subject='smoke test' -F text='hello'
        {
          "id": "<⟨mid⟩@mg.tickets.example.com>",
          "message": "Queued. Thank you."
        }
        """,
        key=key,
        mid=f"{_num(rng, 20260101000000, 20261231235959)}.{_hx(rng, 16)}",
    )
    return text, (key,)


@_credential("docker-login-password-stdin-echo")
def _docker_login(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "dckr_pat_" + _draw(rng, _URLSAFE, 27)
    text = _t(
        """
        + echo ⟨token⟩
        + docker login -u acmebuild --password-stdin
        WARNING! Your password will be stored unencrypted in /home/runner/.docker/config.json.
        Configure a credential helper to remove this warning. See
        https://docs.docker.com/engine/reference/commandline/login/#credential-stores

        Login Succeeded
        + docker push acmebuild/report-renderer:1.⟨m⟩.0
        The push refers to repository [docker.io/acmebuild/report-renderer]
        ⟨layer⟩: Pushed
        1.⟨m⟩.0: digest: sha256:⟨digest⟩ size: 1573
        """,
        token=token,
        m=_num(rng, 0, 30),
        layer=_hx(rng, 12),
        digest=_hx(rng, 64),
    )
    return text, (token,)


@_credential("mongosh-srv-uri-connect-log")
def _mongosh(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, _ALNUM, 16)
    cluster = _draw(rng, string.ascii_lowercase + string.digits, 5)
    text = _t(
        """
        $ mongosh "mongodb+srv://reporting:⟨pw⟩@cluster0.⟨cluster⟩.mongodb.net/analytics?retryWrites=true&w=majority"
        Current Mongosh Log ID:	⟨logid⟩
        Connecting to:		mongodb+srv://<credentials>@cluster0.⟨cluster⟩.mongodb.net/analytics?retryWrites=true&w=majority&appName=mongosh+2.3.⟨p⟩
        Using MongoDB:		7.0.⟨p⟩
        Using Mongosh:		2.3.⟨p⟩

        Atlas atlas-⟨shard⟩-shard-0 [primary] analytics>
        """,
        pw=pw,
        cluster=cluster,
        logid=_hx(rng, 24),
        p=_num(rng, 1, 9),
        shard=_draw(rng, string.ascii_lowercase + string.digits, 6),
    )
    return text, (pw,)


@_credential("gitlab-project-variables-api-deploy-token")
def _gitlab_vars(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = "gldt-" + _draw(rng, _URLSAFE.replace("-", ""), 20)
    text = _t(
        """
        $ curl -s --header "PRIVATE-TOKEN: $GL_TOKEN" "https://gitlab.example.com/api/v4/projects/⟨pid⟩/variables" | jq .
        [
          {
            "variable_type": "env_var",
            "key": "REGISTRY_DEPLOY_TOKEN",
            "value": "⟨token⟩",
            "protected": true,
            "masked": false,
            "raw": true,
            "environment_scope": "production",
            "description": null
          },
          {
            "variable_type": "env_var",
            "key": "HELM_CHART_VERSION",
            "value": "0.14.⟨p⟩",
            "protected": false,
            "masked": false,
            "raw": false,
            "environment_scope": "*",
            "description": null
          }
        ]
        """,
        token=token,
        pid=_num(rng, 100, 9999),
        p=_num(rng, 0, 9),
    )
    return text, (token,)


@_credential("github-actions-step-discord-webhook")
def _gha_discord(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _draw(rng, _URLSAFE, 68)
    hook = _num(rng, 1_100_000_000_000_000_000, 1_399_999_999_999_999_999)
    text = _t(
        """
        name: nightly
        on:
          schedule: [{ cron: "0 3 * * *" }]
        jobs:
          e2e:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@⟨sha⟩ # v4
              - run: npm ci && npx playwright test
              - name: Notify Discord
                if: failure()
                run: |
                  curl -sS -H 'Content-Type: application/json' \\
                    -d '{"content":"nightly e2e failed: ${{ github.server_url }}/${{ github.repository }}/actions/runs/${{ github.run_id }}"}' \\
                    https://discord.com/api/webhooks/⟨hook⟩/⟨token⟩
        """,
        token=token,
        hook=hook,
        sha=_hx(rng, 40),
    )
    return text, (token,)


@_credential("discord-py-bot-config-json")
def _discord_bot(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _discord_bot_token(rng)
    text = _t(
        """
        $ cat config.json
        {
          "prefix": "!",
          "owner_ids": [⟨owner⟩],
          "guild_id": ⟨guild⟩,
          "token": "⟨token⟩",
          "log_channel": ⟨chan⟩,
          "cogs": ["cogs.moderation", "cogs.music", "cogs.tickets"]
        }
        $ python bot.py
        2026-11-03 19:02:11 INFO     discord.client logging in using static token
        2026-11-03 19:02:12 INFO     discord.gateway Shard ID None has connected to Gateway (Session ID: ⟨sess⟩).
        """,
        token=token,
        owner=_num(rng, 100_000_000_000_000_000, 999_999_999_999_999_999),
        guild=_num(rng, 100_000_000_000_000_000, 999_999_999_999_999_999),
        chan=_num(rng, 100_000_000_000_000_000, 999_999_999_999_999_999),
        sess=_hx(rng, 32),
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# HTTP exports, traces and debug dumps
# --------------------------------------------------------------------------------------------------------


@_credential("har-export-bearer-jwt-and-session-cookie")
def _har(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    iat = rng.randint(1_780_000_000, 1_790_000_000)
    jwt = _jwt(
        rng,
        {"alg": "RS256", "typ": "JWT", "kid": _b64url(rng, 12)},
        {
            "sub": _uid(rng),
            "aud": "portal-api",
            "scope": "orders:read orders:write",
            "iat": iat,
            "exp": iat + 900,
        },
        sig_bytes=256,
    )
    session = _draw(rng, string.ascii_lowercase + string.digits, 32)
    text = _t(
        """
        {
          "log": {
            "version": "1.2",
            "creator": {"name": "Firefox", "version": "133.0"},
            "entries": [
              {
                "startedDateTime": "⟨ts⟩.412+01:00",
                "request": {
                  "method": "GET",
                  "url": "https://portal.example.com/api/orders?page=2",
                  "httpVersion": "HTTP/2",
                  "headers": [
                    {"name": "Host", "value": "portal.example.com"},
                    {"name": "Accept", "value": "application/json"},
                    {"name": "Authorization", "value": "Bearer ⟨jwt⟩"},
                    {"name": "Cookie", "value": "sessionid=⟨session⟩; theme=dark"}
                  ],
                  "cookies": [{"name": "sessionid", "value": "⟨session⟩"}, {"name": "theme", "value": "dark"}],
                  "queryString": [{"name": "page", "value": "2"}]
                },
                "response": {
                  "status": 200,
                  "headers": [{"name": "x-request-id", "value": "⟨rid⟩"}, {"name": "etag", "value": "W/\\"⟨etag⟩\\""}],
                  "content": {"size": 18211, "mimeType": "application/json"}
                },
                "timings": {"blocked": 0.4, "dns": 0, "connect": 0, "send": 0, "wait": 84, "receive": 3}
              }
            ]
          }
        }
        """,
        jwt=jwt,
        session=session,
        ts=_when(rng),
        rid=_uid(rng),
        etag=_hx(rng, 16),
    )
    return text, (jwt, session)


@_credential("postman-collection-bearer-auth")
def _postman(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _b64url(rng, 40)
    text = _t(
        """
        {
          "info": {
            "_postman_id": "⟨pid⟩",
            "name": "Fleet API v2",
            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
            "_exporter_id": "⟨exp⟩"
          },
          "auth": {
            "type": "bearer",
            "bearer": [{"key": "token", "value": "⟨token⟩", "type": "string"}]
          },
          "item": [
            {
              "name": "List vehicles",
              "request": {"method": "GET", "header": [], "url": {"raw": "{{baseUrl}}/v2/vehicles?limit=50", "host": ["{{baseUrl}}"], "path": ["v2", "vehicles"]}}
            }
          ],
          "variable": [{"key": "baseUrl", "value": "https://fleet-api.example.io"}]
        }
        """,
        token=token,
        pid=_uid(rng),
        exp=_num(rng, 10000000, 39999999),
    )
    return text, (token,)


@_credential("insomnia-export-environment-mailchimp")
def _insomnia(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _hx(rng, 32) + "-us" + _num(rng, 1, 21)
    text = _t(
        """
        {
          "_type": "export",
          "__export_format": 4,
          "__export_date": "⟨ts⟩.118Z",
          "__export_source": "insomnia.desktop.app:v10.1.⟨p⟩",
          "resources": [
            {
              "_id": "env_⟨e1⟩",
              "parentId": "wrk_⟨w1⟩",
              "name": "Base Environment",
              "data": {"dc": "⟨dc⟩", "api_key": "⟨key⟩", "list_id": "⟨list⟩"},
              "_type": "environment"
            },
            {
              "_id": "req_⟨r1⟩",
              "parentId": "wrk_⟨w1⟩",
              "url": "https://{{ _.dc }}.api.mailchimp.com/3.0/lists/{{ _.list_id }}/members",
              "method": "GET",
              "authentication": {"type": "basic", "username": "anystring", "password": "{{ _.api_key }}"},
              "_type": "request"
            }
          ]
        }
        """,
        key=key,
        dc=key.rsplit("-", 1)[1],
        ts=_when(rng),
        p=_num(rng, 0, 9),
        e1=_hx(rng, 32),
        w1=_hx(rng, 32),
        r1=_hx(rng, 32),
        list=_hx(rng, 10),
    )
    return text, (key,)


@_credential("rich-traceback-locals-pinecone-headers")
def _rich_traceback(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = f"pcsk_{_draw(rng, _ALNUM, 6)}_{_draw(rng, _ALNUM, 63)}"
    text = _t(
        """
        ╭───────────────────── Traceback (most recent call last) ─────────────────────╮
        │ /app/ingest/upsert.py:58 in push_batch                                       │
        │                                                                              │
        │   55 │   resp = requests.post(url, headers=headers, json=body, timeout=30)   │
        │   56 │   resp.raise_for_status()                                            │
        │                                                                              │
        │ ╭──────────────────────────────── locals ────────────────────────────────╮ │
        │ │    body = {'vectors': [...], 'namespace': 'kb-2026-11'}                  │ │
        │ │ headers = {                                                              │ │
        │ │           │   'Api-Key': '⟨key⟩',
        │ │           │   'X-Pinecone-API-Version': '2024-10',                       │ │
        │ │           │   'Content-Type': 'application/json'                         │ │
        │ │           }                                                              │ │
        │ │     url = 'https://kb-⟨idx⟩.svc.aped-4627-b74a.pinecone.io/vectors/upsert' │ │
        │ ╰──────────────────────────────────────────────────────────────────────────╯ │
        ╰──────────────────────────────────────────────────────────────────────────────╯
        HTTPError: 400 Client Error: Bad Request for url: https://kb-⟨idx⟩.svc.aped-4627-b74a.pinecone.io/vectors/upsert
        """,
        key=key,
        idx=_hx(rng, 7),
    )
    return text, (key,)


@_credential("node-nodemailer-error-config-object")
def _nodemailer(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _draw(rng, string.ascii_lowercase, 16)
    text = _t(
        """
        [worker] sending receipt failed for order 5f2c⟨oid⟩
        Error: Invalid login: 535-5.7.8 Username and Password not accepted.
            at SMTPConnection._formatError (/srv/app/node_modules/nodemailer/lib/smtp-connection/index.js:798:19)
            at SMTPConnection._actionAUTHComplete (/srv/app/node_modules/nodemailer/lib/smtp-connection/index.js:1577:34)
            at SMTPConnection.<anonymous> (/srv/app/node_modules/nodemailer/lib/smtp-connection/index.js:1531:18) {
          code: 'EAUTH',
          response: '535-5.7.8 Username and Password not accepted.',
          responseCode: 535,
          command: 'AUTH PLAIN'
        }
        transport options: {
          host: 'smtp.gmail.com',
          port: 465,
          secure: true,
          auth: { user: 'receipts@bakery.example', pass: '⟨pw⟩' }
        }
        """,
        pw=pw,
        oid=_hx(rng, 20),
    )
    return text, (pw,)


@_credential("rust-pretty-debug-config-struct")
def _rust_debug(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw, secret = _draw(rng, _ALNUM, 18), _hx(rng, 64)
    text = _t(
        """
        2026-11-03T08:12:55.301Z DEBUG api::config: loaded config = Config {
            bind: 0.0.0.0:8080,
            database_url: "postgres://api:⟨pw⟩@localhost:5432/api",
            jwt_secret: "⟨secret⟩",
            jwt_ttl: 3600s,
            cors_origins: [
                "https://app.example.dev",
            ],
            max_body_bytes: 1048576,
        }
        2026-11-03T08:12:55.318Z INFO  sqlx::postgres::notice: relation "_sqlx_migrations" already exists, skipping
        """,
        pw=pw,
        secret=secret,
    )
    return text, (pw, secret)


@_credential("go-plus-v-redis-options-dump")
def _go_dump(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _b64(rng, 18)
    text = _t(
        """
        2026/11/03 14:07:31 main.go:88: redis opts: &{Network:tcp Addr:redis-master.cache.svc:6379 ClientName: Dialer:<nil> OnConnect:<nil> Protocol:3 Username:default Password:⟨pw⟩ CredentialsProvider:<nil> DB:2 MaxRetries:3 MinRetryBackoff:8ms MaxRetryBackoff:512ms DialTimeout:5s ReadTimeout:3s WriteTimeout:3s PoolFIFO:false PoolSize:40 MinIdleConns:5 TLSConfig:<nil>}
        2026/11/03 14:07:31 main.go:95: dial tcp 10.96.⟨a⟩.⟨b⟩:6379: i/o timeout
        exit status 1
        """,
        pw=pw,
        a=_num(rng, 0, 255),
        b=_num(rng, 1, 254),
    )
    return text, (pw,)


@_credential("java-tostring-datasource-log-line")
def _java_tostring(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    text = _t(
        """
        2026-11-03 09:41:07.553  INFO 1 --- [           main] c.a.ledger.config.DatabaseConfig         : Using DataSourceSettings{url='jdbc:oracle:thin:@//ora-prod-scan.ledger.lan:1521/LEDGERPDB', username='LEDGER_APP', password='⟨pw⟩', poolSize=20, validationQuery='SELECT 1 FROM DUAL'}
        2026-11-03 09:41:08.902  INFO 1 --- [           main] com.zaxxer.hikari.HikariDataSource       : HikariPool-1 - Starting...
        2026-11-03 09:41:09.417  INFO 1 --- [           main] com.zaxxer.hikari.pool.HikariPool        : HikariPool-1 - Added connection oracle.jdbc.driver.T4CConnection@⟨h⟩
        """,
        pw=pw,
        h=_hx(rng, 8),
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Agents
# --------------------------------------------------------------------------------------------------------


@_credential("crewai-script-openai-project-key")
def _crewai(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = "sk-proj-" + _draw(rng, _URLSAFE, 74) + "T3BlbkFJ" + _draw(rng, _URLSAFE, 74)
    text = _t(
        """
        from crewai import Agent, Crew, LLM, Task

        llm = LLM(model="gpt-4o", api_key="⟨key⟩", temperature=0.2)

        researcher = Agent(
            role="Market researcher",
            goal="Summarise competitor pricing pages",
            backstory="You read pricing pages and write terse tables.",
            llm=llm,
            max_iter=8,
        )
        task = Task(description="Compare the pricing of {companies}", expected_output="a markdown table", agent=researcher)
        print(Crew(agents=[researcher], tasks=[task]).kickoff(inputs={"companies": "Acme, Globex"}))
        """,
        key=key,
    )
    return text, (key,)


@_credential("openai-tool-calls-arguments-db-password")
def _tool_calls(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 18, "!#%*+-=?@^_~")
    args = json.dumps(
        {
            "host": "db-replica-2.internal",
            "port": 5432,
            "user": "readonly",
            "password": pw,
            "sql": "SELECT count(*) FROM orders WHERE created_at > now() - interval '1 day'",
        }
    )
    message = {
        "id": "chatcmpl-" + _draw(rng, _ALNUM, 29),
        "object": "chat.completion",
        "created": rng.randint(1_780_000_000, 1_790_000_000),
        "model": "gpt-4.1-2025-04-14",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_" + _draw(rng, _ALNUM, 24),
                            "type": "function",
                            "function": {"name": "run_sql", "arguments": args},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": rng.randint(800, 3000), "completion_tokens": rng.randint(40, 90)},
    }
    message["usage"]["total_tokens"] = (
        message["usage"]["prompt_tokens"] + message["usage"]["completion_tokens"]
    )
    return json.dumps(message, indent=2) + "\n", (pw,)


@_credential("agent-shell-cat-langsmith-env")
def _langsmith(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = f"lsv2_pt_{_hx(rng, 32)}_{_hx(rng, 10)}"
    text = _t(
        """
        Assistant: Let me check how tracing is configured before running the graph.

        Tool call: bash {"command": "cat .env && cat langgraph.json"}
        Tool result:
        LANGSMITH_TRACING=true
        LANGSMITH_ENDPOINT=https://eu.api.smith.langchain.com
        LANGSMITH_API_KEY=⟨key⟩
        LANGSMITH_PROJECT=support-triage
        {
          "dependencies": ["."],
          "graphs": {"triage": "./src/triage/graph.py:graph"},
          "env": ".env",
          "python_version": "3.12"
        }

        Assistant: Tracing is on and points at the EU endpoint; starting `langgraph dev` now.
        """,
        key=key,
    )
    return text, (key,)


@_credential("mistral-curl-chat-completions")
def _mistral(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _draw(rng, _ALNUM, 32)
    text = _t(
        """
        $ curl -s https://api.mistral.ai/v1/chat/completions \\
            -H "Content-Type: application/json" \\
            -H "Authorization: Bearer ⟨key⟩" \\
            -d '{"model": "mistral-small-latest", "messages": [{"role": "user", "content": "Réponds en une phrase."}]}' | jq .usage
        {
          "prompt_tokens": 11,
          "total_tokens": 37,
          "completion_tokens": 26
        }
        """,
        key=key,
    )
    return text, (key,)


@_credential("cohere-python-client-v2-literal")
def _cohere(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    key = _draw(rng, _ALNUM, 40)
    text = _t(
        """
        import cohere

        co = cohere.ClientV2("⟨key⟩")

        docs = [open(p).read() for p in ("faq/returns.md", "faq/shipping.md")]
        resp = co.rerank(model="rerank-v3.5", query="how long do refunds take", documents=docs, top_n=1)
        print(resp.results[0].index, round(resp.results[0].relevance_score, 3))
        """,
        key=key,
    )
    return text, (key,)


@_credential("twilio-python-send-sms-auth-token")
def _twilio(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    token = _hx(rng, 32)
    text = _t(
        """
        # scripts/send_otp_test.py
        from twilio.rest import Client

        account_sid = "AC⟨sid⟩"
        auth_token = "⟨token⟩"
        client = Client(account_sid, auth_token)

        msg = client.messages.create(
            messaging_service_sid="MG⟨mg⟩",
            to="+31600000000",
            body="Test message from the staging notifier",
        )
        print(msg.sid, msg.status)
        """,
        token=token,
        sid=_hx(rng, 32),
        mg=_hx(rng, 32),
    )
    return text, (token,)


@_credential("gcp-service-account-json-key-file")
def _gcp_sa(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    lines = _rsa_pkcs8_lines(rng)
    pem = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(lines) + "\\n-----END PRIVATE KEY-----\\n"
    project = rng.choice(("ml-pipelines", "data-platform", "ads-reporting")) + "-" + _num(rng, 100000, 999999)
    text = _t(
        """
        {
          "type": "service_account",
          "project_id": "⟨project⟩",
          "private_key_id": "⟨kid⟩",
          "private_key": "⟨pem⟩",
          "client_email": "bq-loader@⟨project⟩.iam.gserviceaccount.com",
          "client_id": "⟨cid⟩",
          "auth_uri": "https://accounts.google.com/o/oauth2/auth",
          "token_uri": "https://oauth2.googleapis.com/token",
          "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
          "client_x509_cert_url": "https://www.googleapis.com/robot/v1/metadata/x509/bq-loader%40⟨project⟩.iam.gserviceaccount.com",
          "universe_domain": "googleapis.com"
        }
        """,
        project=project,
        kid=_hx(rng, 40),
        pem=pem,
        cid=_num(rng, 100000000000000000000, 999999999999999999999),
    )
    return text, (lines[7],)


# --------------------------------------------------------------------------------------------------------
# People
# --------------------------------------------------------------------------------------------------------


@_credential("markdown-runbook-yaml-fence-smtp")
def _runbook(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 4, " ")
    text = _t(
        """
        ## Restoring the alert mailer after a node rebuild

        1. Reinstall `alertmanager` 0.27.⟨p⟩ from the role.
        2. Drop this into `/etc/alertmanager/alertmanager.yml` (we never got the vault lookup working):

        ```yaml
        global:
          smtp_smarthost: "mail.ops.example.net:587"
          smtp_from: "alerts@ops.example.net"
          smtp_auth_username: "alerts@ops.example.net"
          smtp_auth_password: "⟨pw⟩"
          smtp_require_tls: true
        route:
          receiver: oncall-mail
          group_wait: 30s
        ```

        3. `amtool check-config /etc/alertmanager/alertmanager.yml`, then `systemctl restart alertmanager`.
        """,
        pw=pw,
        p=_num(rng, 0, 3),
    )
    return text, (pw,)


@_credential("slack-export-message-quoting-password")
def _slack_export(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _person(rng, "!?#*")
    ts = f"{rng.randint(1_780_000_000, 1_790_000_000)}.{_num(rng, 100000, 999999)}"
    msg = [
        {
            "type": "message",
            "user": "U" + _draw(rng, _UPPER_NUM, 10),
            "text": f"the shared login for the printer admin page is facilities / {pw} -- please don't change it again",
            "ts": ts,
            "client_msg_id": _uid(rng),
            "team": "T" + _draw(rng, _UPPER_NUM, 10),
            "reactions": [{"name": "pray", "users": ["U" + _draw(rng, _UPPER_NUM, 10)], "count": 1}],
        }
    ]
    return json.dumps(msg, indent=4, ensure_ascii=False) + "\n", (pw,)


@_credential("email-temporary-password-onboarding")
def _email_temp(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 12, "!#%*+=?@")
    text = _t(
        """
        From: IT Service Desk <servicedesk@northwind.example>
        To: Priya Raman <priya.raman@northwind.example>
        Subject: Your new account is ready
        Date: Mon, 02 Nov 2026 08:03:17 +0000
        Message-ID: <⟨mid⟩@mail.northwind.example>

        Hi Priya,

        Welcome aboard! Your Windows/Office 365 account has been created.

          Username:            priya.raman@northwind.example
          Temporary password:  ⟨pw⟩

        You will be asked to choose a new password at first sign-in. Ticket reference: INC⟨inc⟩.

        Kind regards,
        IT Service Desk
        """,
        pw=pw,
        mid=_hx(rng, 24),
        inc=_num(rng, 1000000, 9999999),
    )
    return text, (pw,)


@_credential("portuguese-whatsapp-senha")
def _pt(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = (
        rng.choice(("Jabuticaba", "Capivara", "Mandioca", "Goiabada", "Cajueiro"))
        + _num(rng, 10, 9999)
        + rng.choice("!@#")
    )
    text = _t(
        """
        [03/11/2026 14:22] Rafael Souza: Lu, consegue entrar no painel da hospedagem?
        [03/11/2026 14:23] Luciana Prado: não lembro o acesso 😅
        [03/11/2026 14:25] Rafael Souza: usuário: financeiro@padaria-estrela.com.br
        [03/11/2026 14:25] Rafael Souza: senha: ⟨pw⟩
        [03/11/2026 14:26] Luciana Prado: entrei, valeu! depois troco
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("italian-ticket-la-password-e")
def _it(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 14, "!#%*+=?@")
    text = _t(
        """
        Ticket #⟨n⟩ — Accesso NAS ufficio di Bologna
        Aperto da: g.ferri@studio-ferri.example — ⟨ts⟩

        Buongiorno, ho reimpostato l'utente amministratore del Synology (DS920+, DSM 7.2).
        L'utente è "admin-studio" e la password è ⟨pw⟩ — cambiatela dopo il primo accesso, grazie.
        Il backup notturno verso Hyper Backup riprenderà stanotte alle 02:00.
        """,
        pw=pw,
        n=_num(rng, 1000, 9999),
        ts=_when(rng).replace("T", " "),
    )
    return text, (pw,)


@_credential("dutch-teams-message-wachtwoord")
def _nl(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, "-") + _num(rng, 1, 99)
    text = _t(
        """
        Jeroen de Vries  10:42
        Kun je even inloggen op de testomgeving van het klantportaal? Je account is aangemaakt.
        Gebruikersnaam: anouk.bakker
        Wachtwoord: ⟨pw⟩
        Het is een tijdelijk wachtwoord, je moet het bij de eerste keer inloggen wijzigen.

        Anouk Bakker  10:47
        Gelukt, dank je!
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("polish-email-haslo-vpn")
def _pl(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = (
        rng.choice(("Pierogi", "Bursztyn", "Wiewiórka", "Żubrówka", "Kasztan"))
        + _num(rng, 10, 999)
        + rng.choice("!?#")
    )
    text = _t(
        """
        Temat: Dostęp do VPN dla nowego pracownika
        Od: Tomasz Wiśniewski <t.wisniewski@biuro-rachunkowe.example>

        Cześć Kasia,

        konto VPN (FortiClient) jest gotowe:
        login: k.nowak
        hasło: ⟨pw⟩
        brama: vpn.biuro-rachunkowe.example:10443

        Pozdrawiam,
        Tomek
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("japanese-handover-note-pasuwado")
def _ja(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _generated(rng, 16, "#%+=@_")
    text = _t(
        """
        【引き継ぎメモ】検証環境 管理画面 (⟨ts⟩)

        ・URL：https://admin.stg.example.jp/
        ・ユーザー名：ops-admin
        ・パスワード：⟨pw⟩
        ・二段階認証は未設定のため、来週中に有効化してください。
        以上、よろしくお願いします。
        """,
        pw=pw,
        ts=_when(rng)[:10],
    )
    return text, (pw,)


@_credential("korean-kakaotalk-bimilbeonho")
def _ko(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 2, "_") + _num(rng, 100, 9999) + rng.choice("!#")
    text = _t(
        """
        2026년 11월 3일 오후 3:12, 김민준 : 서버실 공유기 관리자 페이지 접속 정보입니다
        2026년 11월 3일 오후 3:12, 김민준 : 아이디 admin / 비밀번호 ⟨pw⟩
        2026년 11월 3일 오후 3:14, 이서연 : 확인했습니다! 펌웨어 업데이트 후에 바꿀게요
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("forwarded-unused-recovery-codes")
def _recovery(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    c1, c2 = f"{_hx(rng, 5)}-{_hx(rng, 5)}", f"{_hx(rng, 5)}-{_hx(rng, 5)}"
    text = _t(
        """
        Ahmed, I'm out until Monday and the shared GitHub org-owner account wants 2FA.
        The authenticator is on my phone, so use one of the two recovery codes I haven't burned yet:

            ⟨c1⟩
            ⟨c2⟩

        The others on the printout are crossed off. Tell me which one you used so I can strike it.
        """,
        c1=c1,
        c2=c2,
    )
    return text, (c1, c2)


@_credential("otpauth-totp-uri-in-ticket")
def _otpauth(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    secret = _draw(rng, _B32, 32)
    text = _t(
        """
        Setting up the shared AWS root MFA on the second device. The QR code decodes to:

        otpauth://totp/Amazon%20Web%20Services:root-account@finance.example?secret=⟨secret⟩&issuer=Amazon%20Web%20Services&algorithm=SHA1&digits=6&period=30

        Scan it in 1Password (vault "Break-glass") and confirm with the next two codes.
        """,
        secret=secret,
    )
    return text, (secret,)


@_credential("wifi-qr-payload-wpa-passphrase")
def _wifi(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw = _phrase(rng, 3, " ") + " " + _num(rng, 10, 99)
    text = _t(
        """
        $ zbarimg --raw guest-wifi-poster.png
        WIFI:T:WPA;S:Atelier-Guest-5G;P:⟨pw⟩;H:false;;
        scanned 1 barcode symbols from 1 images in 0.04 seconds
        """,
        pw=pw,
    )
    return text, (pw,)


@_credential("keepass-csv-export-two-rows")
def _keepass(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    p1, p2 = _generated(rng, 20, "!#%*+-=?@^_~"), _person(rng, "!?#*")
    text = _t(
        """
        "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
        "Root/Infra","UniFi controller","ubnt-admin","⟨p1⟩","https://10.0.0.2:8443","","","0","⟨t1⟩Z","2024-03-11T09:02:44Z"
        "Root/Office","Brother printer web UI","admin","⟨p2⟩","http://192.168.1.40","reset 2026","","0","⟨t2⟩Z","2025-01-07T15:20:03Z"
        """,
        p1=p1,
        p2=p2,
        t1=_when(rng),
        t2=_when(rng),
    )
    return text, (p1, p2)


@_credential("bitwarden-csv-export-password-and-totp")
def _bitwarden(rng: random.Random) -> tuple[str, tuple[str, ...]]:
    pw, totp = _generated(rng, 22, "!#%*-=?@^_~"), _draw(rng, _B32, 16)
    text = _t(
        """
        folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp
        Work,1,login,Cloudflare,,,0,https://dash.cloudflare.com,webmaster@bakery.example,⟨pw⟩,⟨totp⟩
        Work,,note,Office alarm,"Code is with Marta, ask her",,0,,,,
        """,
        pw=pw,
        totp=totp,
    )
    return text, (pw, totp)


# --------------------------------------------------------------------------------------------------------
# Clean documents: look-alikes, no credential
# --------------------------------------------------------------------------------------------------------


@_clean("clean-git-log-change-ids")
def _clean_git_log(rng: random.Random) -> str:
    entries = []
    for subject in (
        "Rotate the staging DB password via the vault operator",
        "Bump token budget to max_tokens=4096",
        "Remove hard-coded API key from tests (use fixtures)",
    ):
        entries.append(
            f"commit {_hx(rng, 40)}\nAuthor: Dana Whitfield <dana@example.org>\nDate:   Tue Nov 3 1{rng.randint(0, 9)}:0"
            f"{rng.randint(0, 9)}:12 2026 +0100\n\n    {subject}\n\n    Change-Id: I{_hx(rng, 40)}\n"
            f"    Reviewed-on: https://review.example.org/c/platform/+/{_num(rng, 10000, 99999)}\n"
        )
    return "\n".join(entries)


@_clean("clean-npm-lockfile-v3-auth-deps-integrity")
def _clean_package_lock(rng: random.Random) -> str:
    pkgs = {}
    for name, ver in (
        ("jsonwebtoken", "9.0.2"),
        ("dotenv", "16.4.5"),
        ("bcryptjs", "2.4.3"),
        ("passport-jwt", "4.0.1"),
    ):
        pkgs[f"node_modules/{name}"] = {
            "version": ver,
            "resolved": f"https://registry.npmjs.org/{name}/-/{name}-{ver}.tgz",
            "integrity": "sha512-" + _b64(rng, 64),
            "license": "MIT",
        }
    lock = {
        "name": "auth-service",
        "version": "1.4.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": pkgs,
    }
    return json.dumps(lock, indent=2) + "\n"


@_clean("clean-docker-pull-digests")
def _clean_docker_digests(rng: random.Random) -> str:
    return _t(
        """
        $ docker pull ghcr.io/acme/token-service:2.3.1
        2.3.1: Pulling from acme/token-service
        ⟨l1⟩: Already exists
        ⟨l2⟩: Pull complete
        Digest: sha256:⟨d1⟩
        Status: Downloaded newer image for ghcr.io/acme/token-service:2.3.1
        $ docker images --digests ghcr.io/acme/token-service
        REPOSITORY                   TAG     DIGEST                                                                    IMAGE ID       SIZE
        ghcr.io/acme/token-service   2.3.1   sha256:⟨d1⟩   ⟨img⟩   48.2MB
        """,
        l1=_hx(rng, 12),
        l2=_hx(rng, 12),
        d1=_hx(rng, 64),
        img=_hx(rng, 12),
    )


@_clean("clean-s3api-head-object-etag")
def _clean_s3_head(rng: random.Random) -> str:
    return _t(
        """
        $ aws s3api head-object --bucket acme-backups-eu --key vault/raft-snapshot-⟨d⟩.snap
        {
            "AcceptRanges": "bytes",
            "LastModified": "⟨ts⟩+00:00",
            "ContentLength": 73400320,
            "ETag": "\\"⟨etag⟩-9\\"",
            "VersionId": "⟨vid⟩",
            "ContentType": "application/octet-stream",
            "ServerSideEncryption": "aws:kms",
            "SSEKMSKeyId": "arn:aws:kms:eu-west-1:⟨acct⟩:key/⟨kms⟩",
            "Metadata": {"sha256": "⟨sha⟩"}
        }
        """,
        d=_when(rng)[:10],
        ts=_when(rng),
        etag=_hx(rng, 32),
        vid=_draw(rng, _URLSAFE.replace("-", "."), 32),
        acct=_num(rng, 100000000000, 999999999999),
        kms=_uid(rng),
        sha=_hx(rng, 64),
    )


@_clean("clean-deployment-secretkeyref-only")
def _clean_secretkeyref(rng: random.Random) -> str:
    return _t(
        """
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: payments-api
          annotations:
            checksum/config: ⟨sum⟩
        spec:
          replicas: 3
          template:
            spec:
              containers:
                - name: api
                  image: registry.example.com/payments-api@sha256:⟨digest⟩
                  env:
                    - name: STRIPE_SECRET_KEY
                      valueFrom:
                        secretKeyRef: { name: payments-stripe, key: secret_key }
                    - name: DB_PASSWORD
                      valueFrom:
                        secretKeyRef: { name: payments-db, key: password }
                    - name: JWT_AUDIENCE
                      value: payments-api
        """,
        sum=_hx(rng, 64),
        digest=_hx(rng, 64),
    )


@_clean("clean-vault-policy-paths")
def _clean_vault_policy(rng: random.Random) -> str:
    return _t(
        """
        # policies/ci-deployer.hcl  (vault policy write ci-deployer policies/ci-deployer.hcl)
        path "secret/data/payments/*" {
          capabilities = ["read"]
        }
        path "database/creds/orders-readonly" {
          capabilities = ["read"]
        }
        path "auth/token/renew-self" {
          capabilities = ["update"]
        }
        # last changed in ⟨commit⟩ (change request ⟨ref⟩)
        """,
        commit=_hx(rng, 12),
        ref=_uid(rng),
    )


@_clean("clean-password-policy-page")
def _clean_password_policy(rng: random.Random) -> str:
    return _t(
        """
        # Password and passphrase policy (rev. ⟨rev⟩)

        - Minimum length: 14 characters; passphrases of four or more random words are encouraged.
        - Do not reuse any of your last 12 passwords. Do not use the example "CorrectHorseBatteryStaple" anywhere.
        - Service passwords are generated by the vault (32 characters, all character classes) and rotated every 90 days.
        - Never paste a password, token or private key into tickets, chat or AI assistants; share a vault link instead.
        - Lockout after 10 failed attempts; 2FA (TOTP or WebAuthn) is mandatory for admin accounts.
        """,
        rev=_num(rng, 3, 19),
    )


@_clean("clean-readme-placeholders-marked-examples")
def _clean_readme(rng: random.Random) -> str:
    return _t(
        """
        ## Quick start

        ```bash
        export ACME_API_KEY=<your-api-key>          # from https://console.acme.example/keys
        export ACME_WEBHOOK_SECRET="${WEBHOOK_SECRET}"
        docker run -e DB_PASSWORD=changeme acme/server:⟨ver⟩   # example only -- set a real password in prod
        ```

        Replace `<your-token>` with a token from the console. The example config below uses
        `password: "example-password"` purely for illustration; the server refuses to start with it.
        """,
        ver=f"1.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
    )


@_clean("clean-llm-usage-counters")
def _clean_llm_usage(rng: random.Random) -> str:
    body = {
        "id": "msg_" + _draw(rng, _ALNUM, 24),
        "type": "message",
        "model": "claude-sonnet-4-5",
        "stop_reason": "max_tokens",
        "usage": {
            "input_tokens": rng.randint(1000, 90000),
            "cache_creation_input_tokens": rng.randint(0, 5000),
            "cache_read_input_tokens": rng.randint(0, 80000),
            "output_tokens": 4096,
        },
        "request": {"max_tokens": 4096, "temperature": 0.3, "request_id": "req_" + _draw(rng, _ALNUM, 24)},
    }
    return json.dumps(body, indent=2) + "\n"


@_clean("clean-otlp-json-span")
def _clean_otlp(rng: random.Random) -> str:
    span = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "auth-gateway"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.fastapi", "version": "0.48b0"},
                        "spans": [
                            {
                                "traceId": _hx(rng, 32),
                                "spanId": _hx(rng, 16),
                                "parentSpanId": _hx(rng, 16),
                                "name": "POST /oauth/token",
                                "kind": 2,
                                "startTimeUnixNano": str(rng.randint(1_780_000_000, 1_790_000_000) * 10**9),
                                "attributes": [
                                    {"key": "http.status_code", "value": {"intValue": "200"}},
                                    {"key": "enduser.id", "value": {"stringValue": _uid(rng)}},
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    return json.dumps(span, indent=2) + "\n"


@_clean("clean-authorized-keys-public")
def _clean_authorized_keys(rng: random.Random) -> str:
    ed = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + rng.randbytes(32)).decode()
    rsa = base64.b64encode(
        b"\x00\x00\x00\x07ssh-rsa\x00\x00\x00\x03\x01\x00\x01\x00\x00\x01\x01\x00" + rng.randbytes(256)
    ).decode()
    return _t(
        """
        # ~deploy/.ssh/authorized_keys (managed by ansible, role: users)
        ssh-ed25519 ⟨ed⟩ marta@laptop-2026
        from="10.20.0.0/16",no-agent-forwarding ssh-rsa ⟨rsa⟩ ci-runner@build-07
        """,
        ed=ed,
        rsa=rsa,
    )


@_clean("clean-x509-certificate-chain")
def _clean_cert(rng: random.Random) -> str:
    body = "\n".join(_lines("MIIF" + _b64(rng, 1080)))
    return _t(
        """
        $ openssl s_client -connect api.example.com:443 -showcerts </dev/null 2>/dev/null | sed -n '/BEGIN/,/END/p'
        -----BEGIN CERTIFICATE-----
        ⟨body⟩
        -----END CERTIFICATE-----
        $ openssl x509 -in api.pem -noout -fingerprint -sha256
        sha256 Fingerprint=⟨fp⟩
        """,
        body=body,
        fp=":".join(_draw(rng, "0123456789ABCDEF", 2) for _ in range(32)),
    )


@_clean("clean-html-base64-png-logo")
def _clean_png(rng: random.Random) -> str:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(300)).decode()
    return _t(
        """
        <header class="brand">
          <img alt="Acme" width="96" height="24" src="data:image/png;base64,⟨png⟩">
          <span class="build">build ⟨b⟩</span>
        </header>
        """,
        png=png,
        b=_hx(rng, 7),
    )


@_clean("clean-go-sum-hashes")
def _clean_go_sum(rng: random.Random) -> str:
    mods = (
        "github.com/golang-jwt/jwt/v5 v5.2.1",
        "github.com/redis/go-redis/v9 v9.7.0",
        "golang.org/x/crypto v0.31.0",
        "github.com/hashicorp/vault/api v1.15.0",
    )
    out = []
    for mod in mods:
        out.append(f"{mod} h1:{_b64(rng, 32)}")
        out.append(f"{mod}/go.mod h1:{_b64(rng, 32)}")
    return "\n".join(out) + "\n"


@_clean("clean-requirements-hash-pins")
def _clean_requirements(rng: random.Random) -> str:
    lines = [
        "# This file is autogenerated by pip-compile with Python 3.12",
        "#    pip-compile --generate-hashes",
    ]
    for pkg in ("cryptography==43.0.3", "pyjwt==2.10.1", "python-dotenv==1.0.1", "keyring==25.5.0"):
        lines.append(f"{pkg} \\")
        lines.append(f"    --hash=sha256:{_hx(rng, 64)} \\")
        lines.append(f"    --hash=sha256:{_hx(rng, 64)}")
    return "\n".join(lines) + "\n"


@_clean("clean-dotenv-example-empty-values")
def _clean_env_example(rng: random.Random) -> str:
    return _t(
        """
        # .env.example -- copy to .env and fill in; never commit .env
        DATABASE_URL=postgres://USER:PASSWORD@localhost:5432/app
        REDIS_PASSWORD=
        OPENAI_API_KEY=
        STRIPE_WEBHOOK_SECRET=whsec_...
        SENTRY_DSN=
        SESSION_TTL_SECONDS=⟨ttl⟩
        """,
        ttl=_num(rng, 900, 86400),
    )


@_clean("clean-github-workflow-secrets-context")
def _clean_gha_secrets(rng: random.Random) -> str:
    return _t(
        """
        name: publish
        on: { push: { tags: ["v*"] } }
        permissions: { contents: read, id-token: write }
        jobs:
          npm:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@⟨sha⟩
              - uses: actions/setup-node@⟨sha2⟩
                with: { node-version: 22, registry-url: "https://registry.npmjs.org" }
              - run: npm publish --provenance
                env:
                  NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}
                  SLACK_WEBHOOK: ${{ secrets.RELEASE_SLACK_WEBHOOK }}
        """,
        sha=_hx(rng, 40),
        sha2=_hx(rng, 40),
    )


@_clean("clean-terraform-plan-sensitive-values")
def _clean_tf_plan(rng: random.Random) -> str:
    return _t(
        """
          # aws_db_instance.orders will be updated in-place
          ~ resource "aws_db_instance" "orders" {
                id                      = "db-⟨dbid⟩"
              ~ password                = (sensitive value)
                tags                    = { "team" = "orders" }
                # (52 unchanged attributes hidden)
            }

          # random_password.orders_db will be created
          + resource "random_password" "orders_db" {
              + id      = (known after apply)
              + length  = 32
              + result  = (sensitive value)
              + special = true
            }

        Plan: 1 to add, 1 to change, 0 to destroy.
        """,
        dbid=_draw(rng, _UPPER_NUM, 26),
    )


@_clean("clean-api-key-listing-prefix-last4")
def _clean_key_listing(rng: random.Random) -> str:
    rows = []
    for name in ("ci-pipeline", "grafana-alerts", "local-dev"):
        rows.append(
            f"{_uid(rng)}  {name:<15} sk-...{_draw(rng, _ALNUM, 4)}  created {_when(rng)[:10]}  last used {_when(rng)[:10]}"
        )
    return (
        "$ acme keys list\nID                                    NAME            KEY         CREATED            LAST USED\n"
        + "\n".join(rows)
        + "\n"
    )


@_clean("clean-helm-values-existing-secret")
def _clean_helm_existing(rng: random.Random) -> str:
    return _t(
        """
        # values-prod.yaml for bitnami/redis 20.⟨m⟩.0
        auth:
          enabled: true
          existingSecret: redis-auth
          existingSecretPasswordKey: redis-password
          usePasswordFiles: true
        master:
          podAnnotations:
            vault.hashicorp.com/agent-inject: "true"
            vault.hashicorp.com/agent-inject-secret-redis: "secret/data/prod/redis"
          resources:
            limits: { memory: 2Gi }
        """,
        m=_num(rng, 0, 9),
    )


SHAPES = tuple(name for name, _ in _CREDENTIAL)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape with fresh values (seeded), then the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(name, *build(rng)) for name, build in _CREDENTIAL]
    return docs + [Document(name, build(rng)) for name, build in _CLEAN]
