"""The HOLDOUT2 part of the secret corpus: a second blind part, in shapes and value forms neither earlier part has.

Written blind: its author never read the detector, its rules or its figures, and no document was changed after
running a detector on it. Every document is copied from what a real tool, config file, CI log, agent or HTTP
trace prints (a `.pgpass`, an ODBC connection string, an azcopy SAS URL, `terraform output -json`, pytest's
`--showlocals`, a curl -v HTTP/2 trace, a HAR entry, an expect transcript, a chat message pasting a key...),
with one (sometimes two) credential values planted in it. Value forms go beyond the earlier parts: base32,
url-safe base64, long hex, word chains with every separator (a space too), vendor-prefixed tokens, JWTs and
values full of punctuation; each value appears verbatim in its text and is at least 8 characters long.

The clean documents hold no credential but plenty of text that looks like one: commit SHAs, image digests,
lockfile integrity hashes, request and trace ids, a PNG in a data: URL, checksums and key fingerprints, public
keys, token counts, masked CI values, a runbook about keys without a key, and a CSP nonce (a nonce is public
and single-use: not a credential).

`documents(seed)` gives one document per credential shape (values drawn with `seed`), then the clean ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import textwrap
import urllib.parse
import uuid
import zlib
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 271828

_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"
_BASE32 = string.ascii_uppercase + "234567"
_PUNCT = "!#$%&()*+,-./:;<=>?@[]^_{|}~"
_WORDS = (
    "glacier", "mosaic", "thimble", "saffron", "vortex", "pebble", "juniper", "falcon",
    "tundra", "ember", "nimbus", "quill", "bramble", "kestrel", "obsidian", "marlin",
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


def _base32(rng: random.Random, n: int = 32) -> str:
    return _chars(rng, _BASE32, n)


def _urlsafe(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _hex(rng: random.Random, nbytes: int) -> str:
    return rng.randbytes(nbytes).hex()


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def _words(rng: random.Random, sep: str) -> str:
    """A word chain and a number: `ember.quill.tundra.4821`, `EmberQuillTundra4821`, `ember quill tundra 4821`."""
    words = rng.sample(_WORDS, rng.randint(3, 4))
    if not sep:
        words = [w.capitalize() for w in words]
    return sep.join([*words, str(rng.randint(100, 9999))])


def _punct(rng: random.Random, n: int = 0, *, exclude: str = "") -> str:
    """A password full of punctuation (without the characters the shape cannot hold)."""
    punct = "".join(c for c in _PUNCT if c not in exclude)
    n = n or rng.randint(14, 28)
    while True:
        value = _chars(rng, _ALNUM + punct, n)
        if value[0].isalnum() and sum(c in punct for c in value) >= 2 and any(c.isdigit() for c in value):
            return value


def _jwt(rng: random.Random) -> str:
    def segment(obj: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")

    iat = 1772600000 + rng.randrange(86400)
    claims = {
        "sub": _uuid(rng),
        "iss": "https://auth.example.org/",
        "aud": "storefront",
        "iat": iat,
        "exp": iat + 3600,
    }
    return f"{segment({'alg': 'HS256', 'typ': 'JWT'})}.{segment(claims)}.{_urlsafe(rng, 32)}"


# Documents with credentials.


@_shape("pgpass-file")
def _pgpass(rng: random.Random) -> Built:
    a, b = _punct(rng, exclude=":\\"), _words(rng, "_")
    text = _fill(
        """
        $ ls -l ~/.pgpass
        -rw------- 1 deploy deploy 118 Mar  3 09:12 /home/deploy/.pgpass
        $ cat ~/.pgpass
        # hostname:port:database:username:password
        127.0.0.1:5432:orders:orders_rw:«a»
        127.0.0.1:6432:*:replicator:«b»
        $ psql -h 127.0.0.1 -U orders_rw orders -c 'select 1'
         ?column?
        ----------
                1
        (1 row)
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("git-credential-fill")
def _git_credential_fill(rng: random.Random) -> Built:
    v = _urlsafe(rng, 24)
    text = _fill(
        """
        $ printf 'protocol=https\\nhost=git.example.org\\n\\n' | git credential fill
        protocol=https
        host=git.example.org
        username=release-bot
        password=«v»
        $ git push origin v2.14.0
        To https://git.example.org/platform/ledger.git
         * [new tag]         v2.14.0 -> v2.14.0
        """,
        v=v,
    )
    return text, (v,)


@_shape("odbc-connstring-repl")
def _odbc(rng: random.Random) -> Built:
    v = _punct(rng, exclude=";{}=\"'")
    text = _fill(
        """
        Traceback (most recent call last):
          File "/srv/etl/load.py", line 41, in <module>
            conn = pyodbc.connect(CONN)
        pyodbc.InterfaceError: ('28000', "[28000] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Login failed for user 'etl_loader'. (18456) (SQLDriverConnect)")
        >>> print(CONN)
        Driver={ODBC Driver 18 for SQL Server};Server=tcp:127.0.0.1,1433;Database=Warehouse;Uid=etl_loader;Pwd=«v»;Encrypt=yes;TrustServerCertificate=yes;
        >>>
        """,
        v=v,
    )
    return text, (v,)


@_shape("adonet-appsettings-json")
def _adonet(rng: random.Random) -> Built:
    v = _words(rng, "")
    text = _fill(
        """
        $ cat appsettings.Production.json
        {
          "Logging": { "LogLevel": { "Default": "Warning", "Microsoft.AspNetCore": "Warning" } },
          "ConnectionStrings": {
            "Ledger": "Server=127.0.0.1,1433;Database=Ledger;User Id=ledger_app;Password=«v»;TrustServerCertificate=True;MultipleActiveResultSets=true"
          },
          "AllowedHosts": "*"
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("jdbc-url-hikari-log")
def _jdbc(rng: random.Random) -> Built:
    v = _base32(rng, 20)
    text = _fill(
        """
        2026-03-04 10:22:31.118  INFO 1 --- [           main] com.zaxxer.hikari.HikariDataSource       : HikariPool-1 - Starting...
        2026-03-04 10:22:31.904 ERROR 1 --- [           main] com.zaxxer.hikari.pool.HikariPool        : HikariPool-1 - Exception during pool initialization.
        java.sql.SQLException: Access denied for user 'inventory'@'127.0.0.1' (using password: YES)
        \tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:129)
        \tat com.mysql.cj.jdbc.ConnectionImpl.createNewIO(ConnectionImpl.java:825)
        2026-03-04 10:22:31.907  WARN 1 --- [           main] o.s.b.a.jdbc.DataSourceProperties        : jdbcUrl=jdbc:mysql://127.0.0.1:3306/inventory?user=inventory&password=«v»&useSSL=false&serverTimezone=UTC
        """,
        v=v,
    )
    return text, (v,)


@_shape("azure-storage-connection-string")
def _azure_conn(rng: random.Random) -> Built:
    v = _b64(rng, 64)
    text = _fill(
        """
        $ az storage account show-connection-string --resource-group rg-data --name stdataexports01
        {
          "connectionString": "DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;AccountName=stdataexports01;AccountKey=«v»"
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("azcopy-sas-url")
def _azcopy_sas(rng: random.Random) -> Built:
    sig = urllib.parse.quote(_b64(rng, 32), safe="")
    job = _uuid(rng)
    text = _fill(
        """
        $ azcopy copy "https://stdataexports01.blob.core.windows.net/backups/pg/2026-03-04.dump?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-03-05T18:00:00Z&st=2026-03-04T10:00:00Z&spr=https&sig=«sig»" ./restore/
        INFO: Scanning...
        INFO: Any empty folders will not be processed, because source and/or destination doesn't have full folder support

        Job «job» has started
        Log file is located at: /home/ops/.azcopy/«job».log

        100.0 %, 1 Done, 0 Failed, 0 Pending, 0 Skipped, 1 Total, 2-sec Throughput (Mb/s): 412.7

        Job «job» summary
        Final Job Status: Completed
        """,
        sig=sig,
        job=job,
    )
    return text, (sig,)


@_shape("slack-webhook-script")
def _slack(rng: random.Random) -> Built:
    team, channel, v = "T0" + _chars(rng, _BASE32, 9), "B0" + _chars(rng, _BASE32, 9), _chars(rng, _ALNUM, 24)
    text = _fill(
        """
        #!/usr/bin/env bash
        # notify.sh: post the nightly backup report to #ops-alerts
        set -euo pipefail
        HOOK="https://hooks.slack.com/services/«team»/«channel»/«v»"
        size=$(du -sh /backups | cut -f1)
        curl -sS -X POST -H 'Content-type: application/json' \\
          --data "{\\"text\\": \\"nightly backup finished: ${size}\\"}" \\
          "$HOOK"
        """,
        team=team,
        channel=channel,
        v=v,
    )
    return text, (v,)


@_shape("alertmanager-discord-webhook")
def _discord(rng: random.Random) -> Built:
    hook_id, v = str(rng.randint(10**17, 10**18 - 1)), _urlsafe(rng, 51)
    text = _fill(
        """
        route:
          receiver: build-status
          group_by: [alertname, job]
          repeat_interval: 4h
        receivers:
          - name: build-status
            discord_configs:
              - webhook_url: https://discord.com/api/webhooks/«id»/«v»
                title: '{{ template "discord.default.title" . }}'
        """,
        id=hook_id,
        v=v,
    )
    return text, (v,)


@_shape("wp-config-sendgrid-define")
def _sendgrid(rng: random.Random) -> Built:
    v = f"SG.{_chars(rng, _URLSAFE, 22)}.{_chars(rng, _URLSAFE, 43)}"
    text = _fill(
        """
        <?php
        /** WP Mail SMTP settings */
        define( 'WPMS_ON', true );
        define( 'WPMS_MAIL_FROM', 'noreply@example.org' );
        define( 'WPMS_MAIL_FROM_NAME', 'Example Shop' );
        define( 'WPMS_MAILER', 'sendgrid' );
        define( 'WPMS_SENDGRID_API_KEY', '«v»' );
        define( 'WPMS_SENDGRID_DOMAIN', 'mail.example.org' );

        /** For developers: WordPress debugging mode. */
        define( 'WP_DEBUG', false );
        """,
        v=v,
    )
    return text, (v,)


@_shape("npm-token-create-table")
def _npm_token(rng: random.Random) -> Built:
    v = "npm_" + _chars(rng, _ALNUM, 36)

    def row(key: str, value: str) -> str:
        return f"│ {key.ljust(14)} │ {value.ljust(40)} │"

    rule = "─" * 16, "─" * 42
    text = "\n".join(
        [
            "$ npm token create --read-only=false",
            "npm notice Creating a new token",
            f"┌{rule[0]}┬{rule[1]}┐",
            row("token", v),
            f"├{rule[0]}┼{rule[1]}┤",
            row("readonly", "false"),
            f"├{rule[0]}┼{rule[1]}┤",
            row("cidr_whitelist", ""),
            f"├{rule[0]}┼{rule[1]}┤",
            row("created", "2026-03-04T10:31:07.214Z"),
            f"└{rule[0]}┴{rule[1]}┘",
        ]
    )
    return text + "\n", (v,)


@_shape("chat-paste-gitlab-token")
def _chat_glpat(rng: random.Random) -> Built:
    v = "glpat-" + _chars(rng, _URLSAFE, 20)
    text = _fill(
        """
        [10:42] priya: deploy to staging is blocked, the runner can't pull the chart repo
        [10:42] priya: @marco do you still have the deploy token from last sprint?
        [10:43] marco: here's the key for staging: «v» (read_api + read_registry only, expires end of month)
        [10:43] priya: thx, adding it to the runner now
        [10:44] marco: pls delete this message once you've copied it 🙏
        [10:51] priya: pipeline green ✅
        """,
        v=v,
    )
    return text, (v,)


@_shape("docker-config-json-auths")
def _docker_config(rng: random.Random) -> Built:
    v = base64.b64encode(f"robot$ci-push:{_urlsafe(rng, 24)}".encode()).decode()
    text = _fill(
        """
        $ cat ~/.docker/config.json
        {
        \t"auths": {
        \t\t"registry.example.org:5000": {
        \t\t\t"auth": "«v»"
        \t\t},
        \t\t"https://index.docker.io/v1/": {}
        \t},
        \t"currentContext": "default"
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("wpa-passphrase-output")
def _wpa(rng: random.Random) -> Built:
    passphrase, psk = _words(rng, "-"), _hex(rng, 32)
    text = _fill(
        """
        $ wpa_passphrase "Lab-5G" '«pass»' | sudo tee -a /etc/wpa_supplicant/wpa_supplicant.conf
        network={
        \tssid="Lab-5G"
        \t#psk="«pass»"
        \tpsk=«psk»
        }
        $ sudo wpa_cli -i wlan0 reconfigure
        OK
        """,
        **{"pass": passphrase, "psk": psk},
    )
    return text, (passphrase, psk)


@_shape("systemctl-cat-environment")
def _systemd(rng: random.Random) -> Built:
    v = _hex(rng, 24)
    text = _fill(
        """
        $ systemctl cat ledger-api.service
        # /etc/systemd/system/ledger-api.service
        [Unit]
        Description=Ledger API
        After=network-online.target postgresql.service

        [Service]
        User=ledger
        WorkingDirectory=/opt/ledger
        Environment=LEDGER_ENV=production
        Environment="LEDGER_HMAC_KEY=«v»"
        ExecStart=/opt/ledger/venv/bin/gunicorn ledger.wsgi -b 127.0.0.1:8001 -w 4
        Restart=on-failure

        [Install]
        WantedBy=multi-user.target
        """,
        v=v,
    )
    return text, (v,)


@_shape("terraform-output-json")
def _tf_output(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM + "!#$%&*()-_=+[]<>:?", 24)
    text = _fill(
        """
        $ terraform output -json
        {
          "db_admin_password": {
            "sensitive": true,
            "type": "string",
            "value": "«v»"
          },
          "db_endpoint": {
            "sensitive": false,
            "type": "string",
            "value": "orders.c9akciq32xyz.eu-west-1.rds.amazonaws.com:5432"
          }
        }
        """,
        v=v,
    )
    return text, (v,)


@_shape("terraform-plan-lambda-env")
def _tf_plan(rng: random.Random) -> Built:
    old, new = "sk_live_" + _chars(rng, _ALNUM, 24), "sk_live_" + _chars(rng, _ALNUM, 24)
    text = _fill(
        """
        Terraform will perform the following actions:

          # aws_lambda_function.checkout will be updated in-place
          ~ resource "aws_lambda_function" "checkout" {
                id                             = "checkout"
                # (18 unchanged attributes hidden)

              ~ environment {
                  ~ variables = {
                      ~ "PAYMENTS_PROVIDER_KEY" = "«old»" -> "«new»"
                        "STAGE"                 = "prod"
                    }
                }
            }

        Plan: 0 to add, 1 to change, 0 to destroy.
        """,
        old=old,
        new=new,
    )
    return text, (old, new)


@_shape("helm-get-values")
def _helm_values(rng: random.Random) -> Built:
    a, b = _words(rng, "_"), _base32(rng, 24).lower()
    text = _fill(
        """
        $ helm get values orders-db -n data
        USER-SUPPLIED VALUES:
        architecture: replication
        auth:
          database: orders
          password: «a»
          replicationPassword: «b»
          username: orders
        primary:
          persistence:
            size: 50Gi
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("ansible-playbook-extra-vars")
def _ansible_extra(rng: random.Random) -> Built:
    v = _punct(rng, exclude="\"'\\ =$`")

    def banner(title: str) -> str:
        return f"{title} {'*' * (79 - len(title))}"

    text = _fill(
        """
        $ ansible-playbook -i inventories/prod site.yml --limit db --extra-vars "pg_superuser=postgres pg_superuser_pass=«v» pg_version=16"

        «play»

        «facts»
        ok: [db01]

        «task»
        changed: [db01]

        «recap»
        db01                       : ok=2    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0
        """,
        v=v,
        play=banner("PLAY [db]"),
        facts=banner("TASK [Gathering Facts]"),
        task=banner("TASK [postgres : set superuser password]"),
        recap=banner("PLAY RECAP"),
    )
    return text, (v,)


@_shape("ansible-debug-msg")
def _ansible_debug(rng: random.Random) -> Built:
    v = _words(rng, ".")
    text = _fill(
        """
        TASK [mail : show relay settings] **********************************************
        ok: [mx01] => {
            "msg": "Relay login for smtp.example.org:587 is relay@example.org / «v»"
        }

        TASK [mail : render main.cf] ***************************************************
        ok: [mx01]
        """,
        v=v,
    )
    return text, (v,)


@_shape("ipython-environ-out")
def _ipython(rng: random.Random) -> Built:
    v = "hf_" + _chars(rng, string.ascii_letters, 34)
    text = _fill(
        """
        In [1]: import os

        In [2]: os.environ["HF_TOKEN"]
        Out[2]: '«v»'

        In [3]: from huggingface_hub import whoami; whoami()["name"]
        Out[3]: 'ml-platform-bot'
        """,
        v=v,
    )
    return text, (v,)


@_shape("pytest-showlocals")
def _pytest_locals(rng: random.Random) -> Built:
    v = _urlsafe(rng, 30)
    text = _fill(
        """
            def fetch_invoices(self, since):
                headers = {"Accept": "application/json", "X-Partner-Secret": self.partner_secret}
        >       resp = self.session.get(f"{self.base}/invoices", params={"since": since}, headers=headers, timeout=10)
        E       requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='127.0.0.1', port=8443): Max retries exceeded with url: /invoices?since=2026-03-01

        headers    = {'Accept': 'application/json', 'X-Partner-Secret': '«v»'}
        self       = <billing.client.InvoiceClient object at 0x7f3a2c1d9e50>
        since      = '2026-03-01'

        billing/client.py:58: ConnectTimeout
        """,
        v=v,
    )
    return text, (v,)


@_shape("printenv-sorted-dump")
def _printenv(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        $ printenv | sort
        HOME=/home/runner
        HOSTNAME=ci-runner-7f9c
        LANG=C.UTF-8
        NODE_VERSION=20.11.1
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        PWD=/builds/web/storefront
        SHLVL=1
        TERM=xterm
        VKT_SMS_AUTH_TOKEN=«v»
        YARN_VERSION=1.22.19
        _=/usr/bin/printenv
        """,
        v=v,
    )
    return text, (v,)


@_shape("set-x-mc-alias")
def _mc_alias(rng: random.Random) -> Built:
    v = _b64(rng, 30)
    text = _fill(
        """
        + BACKUP_BUCKET=nightly
        + mc alias set backup http://127.0.0.1:9000 backup-writer «v»
        Added `backup` successfully.
        + mc mirror --overwrite /var/backups backup/nightly
        `/var/backups/pg-2026-03-04.dump` -> `backup/nightly/pg-2026-03-04.dump`
        Total: 1.21 GiB, Transferred: 1.21 GiB, Speed: 96.4 MiB/s
        """,
        v=v,
    )
    return text, (v,)


@_shape("curl-verbose-http2")
def _curl_h2(rng: random.Random) -> Built:
    v = _base32(rng, 40).lower()
    text = _fill(
        """
        $ curl -v https://127.0.0.1:8443/v2/ingest -H "x-auth-token: «v»" --data-binary @batch.ndjson
        *   Trying 127.0.0.1:8443...
        * Connected to 127.0.0.1 (127.0.0.1) port 8443
        * ALPN: curl offers h2,http/1.1
        * SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / RSASSA-PSS
        * ALPN: server accepted h2
        * using HTTP/2
        * [HTTP/2] [1] OPENED stream for https://127.0.0.1:8443/v2/ingest
        * [HTTP/2] [1] [:method: POST]
        * [HTTP/2] [1] [:path: /v2/ingest]
        * [HTTP/2] [1] [x-auth-token: «v»]
        > POST /v2/ingest HTTP/2
        > Host: 127.0.0.1:8443
        > User-Agent: curl/8.5.0
        > Accept: */*
        > x-auth-token: «v»
        > Content-Length: 5120
        >
        < HTTP/2 202
        < content-type: application/json
        """,
        v=v,
    )
    return text, (v,)


@_shape("har-entry-jwt")
def _har(rng: random.Random) -> Built:
    v = _jwt(rng)
    text = _fill(
        """
              "request": {
                "method": "GET",
                "url": "https://app.example.org/api/me",
                "httpVersion": "HTTP/2",
                "headers": [
                  { "name": ":authority", "value": "app.example.org" },
                  { "name": "accept", "value": "application/json" },
                  { "name": "authorization", "value": "Bearer «v»" },
                  { "name": "sec-fetch-mode", "value": "cors" }
                ],
                "queryString": [],
                "cookies": [],
                "headersSize": -1,
                "bodySize": 0
              },
        """,
        v=v,
    )
    return text, (v,)


@_shape("postman-environment-export")
def _postman(rng: random.Random) -> Built:
    v = _hex(rng, 28)
    text = _fill(
        """
        {
        \t"id": "«id»",
        \t"name": "payments-staging",
        \t"values": [
        \t\t{ "key": "baseUrl", "value": "https://staging.example.org", "type": "default", "enabled": true },
        \t\t{ "key": "merchantSecret", "value": "«v»", "type": "secret", "enabled": true }
        \t],
        \t"_postman_variable_scope": "environment",
        \t"_postman_exported_at": "2026-03-04T10:12:44.512Z",
        \t"_postman_exported_using": "Postman/10.24.3"
        }
        """,
        id=_uuid(rng),
        v=v,
    )
    return text, (v,)


@_shape("ldapsearch-simple-bind")
def _ldapsearch(rng: random.Random) -> Built:
    v = _punct(rng, exclude="'\\")
    text = _fill(
        """
        $ ldapsearch -x -H ldap://127.0.0.1:389 -D "cn=readonly,dc=example,dc=org" -w '«v»' -b "ou=people,dc=example,dc=org" "(uid=jdoe)" mail
        # extended LDIF
        #
        # LDAPv3
        # base <ou=people,dc=example,dc=org> with scope subtree
        # filter: (uid=jdoe)
        # requesting: mail
        #

        # jdoe, people, example.org
        dn: uid=jdoe,ou=people,dc=example,dc=org
        mail: jdoe@example.org

        # search result
        search: 2
        result: 0 Success
        """,
        v=v,
    )
    return text, (v,)


@_shape("expect-debug-ssh-keygen")
def _expect(rng: random.Random) -> Built:
    v = _words(rng, " ")
    text = _fill(
        """
        spawn ssh-keygen -t ed25519 -f /home/ci/.ssh/deploy_ed25519 -C deploy@ci
        Generating public/private ed25519 key pair.
        Enter passphrase (empty for no passphrase):
        expect: does "Generating public/private ed25519 key pair.\\r\\nEnter passphrase (empty for no passphrase): " (spawn_id exp4) match glob pattern "passphrase*:"? yes
        expect: set expect_out(0,string) "passphrase (empty for no passphrase): "
        send: sending "«v»\\r" to { exp4 }
        Enter same passphrase again:
        send: sending "«v»\\r" to { exp4 }
        Your identification has been saved in /home/ci/.ssh/deploy_ed25519
        Your public key has been saved in /home/ci/.ssh/deploy_ed25519.pub
        """,
        v=v,
    )
    return text, (v,)


@_shape("agent-tool-result-table")
def _agent_table(rng: random.Random) -> Built:
    a, b = _urlsafe(rng, 27), _punct(rng, 18, exclude="|")
    rows = [
        ("PATH", "KEY", "VALUE", "VERSION"),
        ("kv/staging/payments", "merchant_key", a, "3"),
        ("kv/staging/mail", "smtp_relay_pass", b, "1"),
        ("kv/staging/feature", "rollout_percent", "25", "9"),
    ]
    table = "\n".join(f"{p.ljust(24)}{k.ljust(18)}{v.ljust(40)}{n}" for p, k, v, n in rows)
    text = (
        'Tool call: secrets.list(path="kv/staging", reveal=true)\n'
        f"Result:\n{table}\n"
        "Assistant: I found two credentials under kv/staging; the payments merchant key is on version 3.\n"
    )
    return text, (a, b)


@_shape("email-temporary-password")
def _email(rng: random.Random) -> Built:
    v = _punct(rng, 12)
    text = _fill(
        """
        From: IT Service Desk <servicedesk@example.org>
        To: Dana Kim <dana.kim@example.org>
        Date: Wed, 4 Mar 2026 08:15:02 +0000
        Subject: Your new account

        Hi Dana,

        Your account for the Example network has been created.

          Username:           dkim
          Temporary password: «v»

        You will be asked to choose a new password when you first sign in at https://sso.example.org.
        This temporary password expires in 72 hours.

        IT Service Desk
        """,
        v=v,
    )
    return text, (v,)


@_shape("secret-two-lines-after-label")
def _two_lines_after(rng: random.Random) -> Built:
    v = _urlsafe(rng, 32)
    rule = "─" * 46
    text = _fill(
        """
        $ acmectl keys create --name ci-uploader --scope artifacts:write
        Key created.

        Secret (shown only once, store it now):
          «rule»
          «v»
          «rule»
        ID:      key_«id»
        Scope:   artifacts:write
        Expires: never
        """,
        rule=rule,
        v=v,
        id=_chars(rng, string.ascii_uppercase + string.digits, 26),
    )
    return text, (v,)


@_shape("yaml-folded-block-scalar")
def _yaml_folded(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, 32)
    text = _fill(
        """
        # .woodpecker.yml
        steps:
          publish:
            image: woodpeckerci/plugin-docker-buildx
            settings:
              repo: registry.example.org/web/storefront
              tags: [latest, "${CI_COMMIT_SHA:0:8}"]
            environment:
              HARBOR_ROBOT_SECRET: >-
                «v»
            when:
              branch: main
        """,
        v=v,
    )
    return text, (v,)


@_shape("docker-inspect-env-array")
def _docker_inspect(rng: random.Random) -> Built:
    v = _words(rng, "")
    text = _fill(
        """
        $ docker inspect --format '{{json .Config.Env}}' storefront-web-1 | jq .
        [
          "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          "NODE_ENV=production",
          "QOREBI_INGEST_PASS=«v»",
          "PORT=3000",
          "NODE_VERSION=20.11.1",
          "YARN_VERSION=1.22.19"
        ]
        """,
        v=v,
    )
    return text, (v,)


@_shape("otpauth-qr-decode")
def _otpauth(rng: random.Random) -> Built:
    v = _base32(rng, 32)
    text = _fill(
        """
        $ zbarimg --raw mfa-qr.png
        otpauth://totp/Example%20VPN:ops-oncall?secret=«v»&issuer=Example%20VPN&algorithm=SHA1&digits=6&period=30
        scanned 1 barcode symbols from 1 images in 0.04 seconds

        $ oathtool --totp -b «v»
        492817
        """,
        v=v,
    )
    return text, (v,)


@_shape("gcp-service-account-key-json")
def _gcp_sa(rng: random.Random) -> Built:
    first = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _chars(rng, _ALNUM + "+/", 32)
    last = _chars(rng, _ALNUM + "+/", 60)
    body = "\\n".join([first, _chars(rng, _ALNUM + "+/", 64), _chars(rng, _ALNUM + "+/", 64), last])
    text = _fill(
        """
        $ cat ci-deployer.json
        {
          "type": "service_account",
          "project_id": "storefront-prod-4821",
          "private_key_id": "«kid»",
          "private_key": "-----BEGIN PRIVATE KEY-----\\n«body»\\n-----END PRIVATE KEY-----\\n",
          "client_email": "ci-deployer@storefront-prod-4821.iam.gserviceaccount.com",
          "client_id": "«cid»",
          "auth_uri": "https://accounts.google.com/o/oauth2/auth",
          "token_uri": "https://oauth2.googleapis.com/token",
          "universe_domain": "googleapis.com"
        }
        """,
        kid=_hex(rng, 20),
        body=body,
        cid=str(rng.randint(10**20, 10**21 - 1)),
    )
    return text, (first, last)


@_shape("kafka-client-jaas-config")
def _kafka(rng: random.Random) -> Built:
    v = _punct(rng, exclude='"\\;')
    text = _fill(
        """
        $ cat client.properties
        bootstrap.servers=127.0.0.1:9093
        security.protocol=SASL_SSL
        sasl.mechanism=SCRAM-SHA-512
        sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="orders-consumer" password="«v»";
        ssl.truststore.location=/etc/kafka/truststore.jks
        $ kafka-console-consumer.sh --bootstrap-server 127.0.0.1:9093 --consumer.config client.properties --topic orders --from-beginning
        """,
        v=v,
    )
    return text, (v,)


@_shape("node-mongodb-srv-error")
def _mongo(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, 16)
    text = _fill(
        """
        $ node server.js
        [dotenv@16.4.5] injecting env (6) from .env
        Connecting to mongodb+srv://storefront:«v»@cluster0.x1y2z.mongodb.net/shop?retryWrites=true&w=majority
        MongoServerError: bad auth : authentication failed
            at Connection.onMessage (/app/node_modules/mongodb/lib/cmap/connection.js:207:30)
            at MessageStream.<anonymous> (/app/node_modules/mongodb/lib/cmap/connection.js:62:60) {
          ok: 0,
          code: 8000,
          codeName: 'AtlasError'
        }
        Node.js v20.11.1
        """,
        v=v,
    )
    return text, (v,)


@_shape("vault-login-token-table")
def _vault(rng: random.Random) -> Built:
    v = "hvs.CAESI" + _chars(rng, _URLSAFE, 86)
    text = _fill(
        """
        $ vault login -method=userpass username=ci
        Password (will be hidden):
        Success! You are now authenticated. The token information displayed below
        is already stored in the token helper. You do NOT need to run "vault login"
        again. Future Vault requests will automatically use this token.

        Key                    Value
        ---                    -----
        token                  «v»
        token_accessor         «accessor»
        token_duration         768h
        token_renewable        true
        token_policies         ["ci" "default"]
        identity_policies      []
        policies               ["ci" "default"]
        token_meta_username    ci
        """,
        v=v,
        accessor=_chars(rng, _ALNUM, 24),
    )
    return text, (v,)


@_shape("wireguard-wg0-conf")
def _wireguard(rng: random.Random) -> Built:
    private, public, preshared = _b64(rng, 32), _b64(rng, 32), _b64(rng, 32)
    text = _fill(
        """
        $ sudo cat /etc/wireguard/wg0.conf
        [Interface]
        Address = 10.66.0.2/32
        PrivateKey = «private»
        DNS = 10.66.0.1

        [Peer]
        PublicKey = «public»
        PresharedKey = «preshared»
        Endpoint = 127.0.0.1:51820
        AllowedIPs = 10.66.0.0/24
        PersistentKeepalive = 25
        """,
        private=private,
        public=public,
        preshared=preshared,
    )
    return text, (private, preshared)


@_shape("stripe-cli-listen")
def _stripe_listen(rng: random.Random) -> Built:
    v = "whsec_" + _hex(rng, 32)
    evt = "evt_3Oq" + _chars(rng, _ALNUM, 21)
    text = _fill(
        """
        $ stripe listen --forward-to 127.0.0.1:8000/webhooks/stripe
        > Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing secret is «v» (^C to quit)
        2026-03-04 11:02:17   --> charge.succeeded [«evt»]
        2026-03-04 11:02:17  <--  [200] POST http://127.0.0.1:8000/webhooks/stripe [«evt»]
        """,
        v=v,
        evt=evt,
    )
    return text, (v,)


@_shape("gh-auth-status-show-token")
def _gh_status(rng: random.Random) -> Built:
    v = "gho_" + _chars(rng, _ALNUM, 36)
    text = _fill(
        """
        $ gh auth status --show-token
        github.com
          ✓ Logged in to github.com account octo-ops (keyring)
          - Active account: true
          - Git operations protocol: https
          - Token: «v»
          - Token scopes: 'gist', 'read:org', 'repo', 'workflow'
        """,
        v=v,
    )
    return text, (v,)


@_shape("go-struct-dump-log")
def _go_struct(rng: random.Random) -> Built:
    v = _words(rng, ".")
    text = _fill(
        """
        2026/03/04 11:15:09 config loaded: {Listen::8080 DB:{Host:127.0.0.1 Port:5432 User:ledger Password:«v» SSLMode:disable} Cache:{Addr:127.0.0.1:6379 DB:0}}
        2026/03/04 11:15:09 migrate: dial tcp 127.0.0.1:5432: connect: connection refused
        exit status 1
        """,
        v=v,
    )
    return text, (v,)


@_shape("django-diffsettings")
def _diffsettings(rng: random.Random) -> Built:
    v = "django-insecure-" + _chars(rng, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)
    text = _fill(
        """
        $ python manage.py diffsettings
        ALLOWED_HOSTS = ['shop.example.org']
        BASE_DIR = PosixPath('/srv/shop')  ###
        DEBUG = False
        DEFAULT_AUTO_FIELD = 'django.db.models.BigAutoField'
        INSTALLED_APPS = ['django.contrib.admin', 'django.contrib.auth', 'shop.orders']
        ROOT_URLCONF = 'shop.urls'
        SECRET_KEY = '«v»'
        SETTINGS_MODULE = 'shop.settings.production'  ###
        TIME_ZONE = 'Europe/Warsaw'
        """,
        v=v,
    )
    return text, (v,)


@_shape("swaks-auth-plain")
def _swaks(rng: random.Random) -> Built:
    password = _punct(rng, 16, exclude="'\\")
    plain = base64.b64encode(f"\0alerts@example.org\0{password}".encode()).decode()
    text = _fill(
        """
        $ swaks --to ops@example.org --server 127.0.0.1:587 --auth PLAIN --auth-user alerts@example.org --auth-password '«password»' --tls
        === Trying 127.0.0.1:587...
        === Connected to 127.0.0.1.
        <-  220 mx.example.org ESMTP Postfix
         -> EHLO build01
        <-  250-mx.example.org
        <-  250-STARTTLS
        <-  250 AUTH PLAIN LOGIN
         -> STARTTLS
        <-  220 2.0.0 Ready to start TLS
        === TLS started with cipher TLSv1.3:TLS_AES_256_GCM_SHA384:256
         ~> EHLO build01
        <~  250 AUTH PLAIN LOGIN
         ~> AUTH PLAIN «plain»
        <~  235 2.7.0 Authentication successful
        """,
        password=password,
        plain=plain,
    )
    return text, (password, plain)


@_shape("powershell-securestring")
def _powershell(rng: random.Random) -> Built:
    v = _punct(rng, 20, exclude='"$`')
    text = _fill(
        """
        PS C:\\deploy> $SecurePassword = ConvertTo-SecureString "«v»" -AsPlainText -Force
        PS C:\\deploy> $Cred = New-Object System.Management.Automation.PSCredential ("CORP\\svc-deploy", $SecurePassword)
        PS C:\\deploy> Invoke-Command -ComputerName app01 -Credential $Cred -ScriptBlock { Restart-Service W3SVC }
        PS C:\\deploy>
        """,
        v=v,
    )
    return text, (v,)


# Documents without a credential, full of text that looks like one.


@_clean("clean-git-log-shas")
def _clean_git_log(rng: random.Random) -> str:
    a, b, c = _hex(rng, 20), _hex(rng, 20), _hex(rng, 20)
    return _fill(
        """
        $ git log -3 --format='%H %an  %s'
        «a» Ada Kowalski  Move webhook signing-key handling into its own module
        «b» Jun Tanaka  Bump PBKDF2 iterations for password hashing to 600000
        «c» Ada Kowalski  Merge pull request #412 from example/token-refresh
        $ git show --no-patch HEAD~1
        commit «b»
        Author: Jun Tanaka <jun@example.org>
        Date:   Tue Mar 3 17:20:41 2026 +0000

            Bump PBKDF2 iterations for password hashing to 600000
        """,
        a=a,
        b=b,
        c=c,
    )


@_clean("clean-docker-pull-digest")
def _clean_docker_pull(rng: random.Random) -> str:
    layers = "\n".join(
        f"{_hex(rng, 6)}: {status}"
        for status in ("Already exists", "Pull complete", "Pull complete", "Pull complete")
    )
    return _fill(
        """
        $ docker pull registry.example.org/web/storefront:2026.03.04
        2026.03.04: Pulling from web/storefront
        «layers»
        Digest: sha256:«digest»
        Status: Downloaded newer image for registry.example.org/web/storefront:2026.03.04
        registry.example.org/web/storefront:2026.03.04
        """,
        layers=layers,
        digest=_hex(rng, 32),
    )


@_clean("clean-package-lock-integrity")
def _clean_package_lock(rng: random.Random) -> str:
    return _fill(
        """
            "node_modules/jsonwebtoken": {
              "version": "9.0.2",
              "resolved": "https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz",
              "integrity": "sha512-«a»",
              "dependencies": {
                "jws": "^3.2.2",
                "lodash.includes": "^4.3.0",
                "semver": "^7.5.4"
              }
            },
            "node_modules/safe-buffer": {
              "version": "5.2.1",
              "resolved": "https://registry.npmjs.org/safe-buffer/-/safe-buffer-5.2.1.tgz",
              "integrity": "sha512-«b»"
            },
        """,
        a=_b64(rng, 64),
        b=_b64(rng, 64),
    )


@_clean("clean-response-trace-headers")
def _clean_trace_headers(rng: random.Random) -> str:
    return _fill(
        """
        < HTTP/2 200
        < date: Wed, 04 Mar 2026 11:20:31 GMT
        < content-type: application/json
        < x-request-id: «rid»
        < traceparent: 00-«trace»-«span»-01
        < x-amzn-trace-id: Root=1-«epoch»-«root»
        < etag: W/"«etag»"
        < x-ratelimit-remaining: 4987
        <
        {"id": "«order»", "status": "paid", "total_cents": 12900}
        """,
        rid=_uuid(rng),
        trace=_hex(rng, 16),
        span=_hex(rng, 8),
        epoch=_hex(rng, 4),
        root=_hex(rng, 12),
        etag=_hex(rng, 10),
        order=_uuid(rng),
    )


def _png(rng: random.Random, side: int = 6) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + rng.randbytes(side * 3) for _ in range(side))
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


@_clean("clean-png-data-url")
def _clean_png(rng: random.Random) -> str:
    return _fill(
        """
        The status badge is inlined so the README renders offline:

        ![build passing](data:image/png;base64,«png»)

        Regenerate it with `make badge` after changing the colours.
        """,
        png=base64.b64encode(_png(rng)).decode(),
    )


@_clean("clean-sha256sums-gpg")
def _clean_sums(rng: random.Random) -> str:
    names = ("darwin_arm64.tar.gz", "darwin_amd64.tar.gz", "linux_amd64.tar.gz", "windows_amd64.zip")
    sums = "\n".join(f"{_hex(rng, 32)}  awp-cli_1.8.2_{name}" for name in names)
    return _fill(
        """
        $ cat SHA256SUMS
        «sums»
        $ sha256sum -c SHA256SUMS --ignore-missing
        awp-cli_1.8.2_linux_amd64.tar.gz: OK
        $ gpg --verify SHA256SUMS.sig SHA256SUMS
        gpg: Signature made Tue 03 Mar 2026 16:02:11 UTC
        gpg:                using EDDSA key «fpr»
        gpg: Good signature from "AWP Release Signing <release@example.org>" [full]
        """,
        sums=sums,
        fpr=_hex(rng, 20).upper(),
    )


@_clean("clean-key-rotation-runbook")
def _clean_runbook(rng: random.Random) -> str:
    hours = rng.choice(["12", "24", "48"])
    return _fill(
        """
        ## Rotating the payments API key

        1. In the provider dashboard open Settings → API keys and click **Roll key**. The old secret keeps
           working for «hours» hours, so nothing breaks while you roll out.
        2. Paste the new key into the vault path `kv/prod/payments` (field `api_key`), never into a ticket,
           a chat message or a commit. The webhook signing secret is rotated separately.
        3. Restart the workers: `kubectl -n payments rollout restart deploy/workers`.
        4. Check that no request failed with `401 invalid token` in the last 15 minutes.

        If the password manager asks for your master password during step 2, that is expected.
        """,
        hours=hours,
    )


@_clean("clean-llm-usage-metrics")
def _clean_llm_usage(rng: random.Random) -> str:
    prompt, completion = rng.randint(800, 4000), rng.randint(100, 900)
    return _fill(
        """
        {
          "id": "chatcmpl-«cid»",
          "object": "chat.completion",
          "model": "gpt-4o-2024-08-06",
          "system_fingerprint": "fp_«fp»",
          "usage": {"prompt_tokens": «p», "completion_tokens": «c», "total_tokens": «t», "completion_tokens_details": {"reasoning_tokens": 0}},
          "request": {"max_tokens": 4096, "temperature": 0.2}
        }
        step 7 done: token_count=«t» cache_read_input_tokens=1536 tokens_per_second=61.4
        """,
        cid=_chars(rng, _ALNUM, 29),
        fp=_hex(rng, 5),
        p=str(prompt),
        c=str(completion),
        t=str(prompt + completion),
    )


def _ssh_blob(*parts: bytes) -> str:
    return base64.b64encode(b"".join(struct.pack(">I", len(p)) + p for p in parts)).decode()


@_clean("clean-authorized-keys-fingerprints")
def _clean_authorized_keys(rng: random.Random) -> str:
    ed = _ssh_blob(b"ssh-ed25519", rng.randbytes(32))
    rsa = _ssh_blob(
        b"ssh-rsa", b"\x01\x00\x01", b"\x00" + bytes([rng.randint(128, 255)]) + rng.randbytes(383)
    )
    return _fill(
        """
        $ cat ~/.ssh/authorized_keys
        ssh-ed25519 «ed» ada@laptop
        ssh-rsa «rsa» deploy@ci
        $ ssh-keygen -lf ~/.ssh/authorized_keys
        256 SHA256:«fp1» ada@laptop (ED25519)
        3072 SHA256:«fp2» deploy@ci (RSA)
        """,
        ed=ed,
        rsa=rsa,
        fp1=_b64(rng, 32).rstrip("="),
        fp2=_b64(rng, 32).rstrip("="),
    )


@_clean("clean-csp-nonce-page")
def _clean_csp(rng: random.Random) -> str:
    nonce = _b64(rng, 16)
    return _fill(
        """
        HTTP/1.1 200 OK
        Content-Type: text/html; charset=utf-8
        Content-Security-Policy: default-src 'self'; script-src 'nonce-«nonce»' 'strict-dynamic' 'sha256-«h»'; object-src 'none'; base-uri 'none'
        Strict-Transport-Security: max-age=63072000; includeSubDomains

        <!doctype html>
        <script nonce="«nonce»" src="/static/app.«short».js" integrity="sha384-«sri»" crossorigin="anonymous"></script>
        """,
        nonce=nonce,
        h=_b64(rng, 32),
        short=_hex(rng, 3),
        sri=_b64(rng, 48),
    )


@_clean("clean-kubectl-container-ids")
def _clean_kubectl(rng: random.Random) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    rs = _chars(rng, alphabet, 10)
    pods = [f"webhooks-{rs}-{_chars(rng, alphabet, 5)}" for _ in range(2)]
    return _fill(
        """
        $ kubectl -n payments get pods
        NAME                        READY   STATUS    RESTARTS   AGE
        «p0»   1/1     Running   0          3h12m
        «p1»   1/1     Running   0          3h12m
        $ kubectl -n payments get pod «p0» -o jsonpath='{.status.containerStatuses[0].containerID}{"\\n"}{.status.containerStatuses[0].imageID}'
        containerd://«cid»
        registry.example.org/payments/webhooks@sha256:«digest»
        """,
        p0=pods[0],
        p1=pods[1],
        cid=_hex(rng, 32),
        digest=_hex(rng, 32),
    )


@_clean("clean-terraform-apply-sensitive")
def _clean_tf_apply(rng: random.Random) -> str:
    db = "db-" + _chars(rng, string.ascii_uppercase + string.digits, 26)
    return _fill(
        """
        aws_db_instance.orders: Modifying... [id=«db»]
        aws_db_instance.orders: Still modifying... [id=«db», 10s elapsed]
        aws_db_instance.orders: Modifications complete after 41s [id=«db»]
        aws_secretsmanager_secret_version.orders_password: Creation complete after 1s [id=arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders/db-password-«suffix»|«version»]

        Apply complete! Resources: 1 added, 1 changed, 0 destroyed.

        Outputs:

        db_endpoint = "orders.c9akciq32xyz.eu-west-1.rds.amazonaws.com:5432"
        db_password = <sensitive>
        """,
        db=db,
        suffix=_chars(rng, _ALNUM, 6),
        version=_uuid(rng),
    )


@_clean("clean-ci-masked-env")
def _clean_ci_masked(rng: random.Random) -> str:
    return _fill(
        """
        2026-03-04T11:31:02.1184420Z ##[group]Run ./scripts/deploy.sh
        2026-03-04T11:31:02.1185010Z ./scripts/deploy.sh
        2026-03-04T11:31:02.1190110Z shell: /usr/bin/bash -e {0}
        2026-03-04T11:31:02.1190540Z env:
        2026-03-04T11:31:02.1191100Z   REGISTRY_PASSWORD: ***
        2026-03-04T11:31:02.1191600Z   DEPLOY_TOKEN: ***
        2026-03-04T11:31:02.1192010Z   GIT_SHA: «sha»
        2026-03-04T11:31:02.1192400Z ##[endgroup]
        2026-03-04T11:31:05.8821330Z Login Succeeded
        2026-03-04T11:31:19.2201780Z pushed registry.example.org/web/storefront@sha256:«digest»
        """,
        sha=_hex(rng, 20),
        digest=_hex(rng, 32),
    )


@_clean("clean-wg-show-public-keys")
def _clean_wg_show(rng: random.Random) -> str:
    return _fill(
        """
        $ sudo wg show
        interface: wg0
          public key: «own»
          private key: (hidden)
          listening port: 51820

        peer: «peer»
          preshared key: (hidden)
          endpoint: 127.0.0.1:41922
          allowed ips: 10.66.0.2/32
          latest handshake: 1 minute, 12 seconds ago
          transfer: 18.42 MiB received, 3.10 MiB sent
        """,
        own=_b64(rng, 32),
        peer=_b64(rng, 32),
    )


SHAPES = tuple(name for name, _ in _CREDENTIAL_SHAPES)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN_SHAPES)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape with fresh values (seeded), then the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(name, *build(rng)) for name, build in _CREDENTIAL_SHAPES]
    return docs + [Document(name, build(rng)) for name, build in _CLEAN_SHAPES]
