"""The HOLDOUT16 part of the secret corpus: a sixteenth blind part, written after HOLDOUT to HOLDOUT15.

Written blind: its author read only the `Document` type and the corpus docstring, the structure test of the blind
parts, the HOLDOUT15 generator's interface and the shape names of every earlier part (only to avoid reusing
them); never the detector, its rules, docs, tests, state or figures, and no document was run through a detector
or a redactor. Each document imitates what a real tool, agent, config file, log, terminal session, trace,
notebook, ticket or person writes in 2026:

- infrastructure as code: Terraform plan JSON and state, Terragrunt, OpenTofu, Pulumi, CDK, Crossplane, Packer,
  Nomad, Consul, Ansible, Chef, Salt, Puppet and cloud-init;
- Kubernetes, Helm, Argo CD, Flux, Kustomize, `kubectl describe`, operators' custom resources and audit events;
- database clients' transcripts and configs: psql, mysql, mongosh, redis-cli, cqlsh, clickhouse-client, sqlcmd,
  sqlplus, DuckDB, CockroachDB, InfluxDB, Neo4j, SurrealDB, etcdctl, Trino and more;
- message queues and streaming: Kafka, Redpanda, Pulsar, NATS, MQTT, RabbitMQ, Event Hubs, Solace, ZeroMQ;
- IoT and embedded: Zephyr, ESP-IDF, PlatformIO, MicroPython, LoRaWAN, Azure IoT, Tuya, Shelly, Klipper;
- game servers and mods, mobile build configs (fastlane, Xcode, Expo, Flutter, Info.plist, Capacitor);
- payment and fintech SDK snippets; notebooks (.ipynb cells and outputs, Databricks, Zeppelin, marimo);
- LLM agent frameworks' traces: LangChain, LangGraph, CrewAI, AutoGen, OpenAI Agents SDK, MCP JSON-RPC,
  Semantic Kernel, LlamaIndex, Haystack, DSPy, Pydantic AI, smolagents, Letta, Vercel AI SDK, Google ADK,
  Strands, Dify, Flowise, Langflow and OpenTelemetry span attributes holding escaped JSON;
- e-mail headers and MIME parts, calendar invites, support tickets, wiki exports, CSV/TSV sheets, diffs,
  commit messages, review comments, stack traces with locals, HAR and curl -v traces, cookies, OAuth device
  flows, SSH/GPG/age/sops, password-manager CLIs, shell history, PowerShell, registry exports, systemd, cron,
  web servers and proxies, VPNs and router CLIs, voice transcripts;
- people writing credentials in chat, e-mail and tickets in many languages and scripts (right-to-left, CJK,
  Indic, South-East Asian, African, Caucasian, European), some mixing two languages in one message.

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more,
drawn from the seeded `random.Random` and shaped as the vendor's published format where there is one. Every
credential a document holds is planted; usernames, ids, public keys, hashes and masked echoes are not. A
base64-wrapped or URL-encoded secret is planted as the text that appears.

Clean documents hold no credential but look-alikes: hashes, ids, UUIDs, commit SHAs, placeholders, env
references, token counts, public keys, ciphertexts and prose about passwords.

SEED = 2026120616. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones: 448 credential shapes planting 481 values, and 66 clean documents.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import string
import textwrap
import urllib.parse
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 2026120616

Made = tuple[str, tuple[str, ...]]
Maker = Callable[[random.Random], str]
_CRED: list[tuple[str, Callable[[random.Random], Made]]] = []
_CLEAN: list[tuple[str, Callable[[random.Random], str]]] = []

# ---- value makers -----------------------------------------------------------------------------------------

_AN = string.ascii_letters + string.digits
_LO = string.ascii_lowercase + string.digits
_UPA = string.ascii_uppercase + string.digits
_HEXS = "0123456789abcdef"
_B32S = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_BECH = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
_URL = _AN + "-_"
_VOCAB = tuple(
    """
    amber basalt cobalt dune ember fjord garnet harbor indigo juniper kestrel lagoon marble nimbus onyx
    pumice quartz raven saffron timber umber violet walnut yarrow zephyr acorn beacon canyon delta falcon
    glacier heron island jetty kelp lantern meadow nectar orchid prairie quill ridge spruce thistle tulip
    valley willow copper feather lotus mosaic pebble rocket summit tiger velvet wren ginger hollow maple
    """.split()
)


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _all(v: str, *tests: Callable[[str], bool]) -> bool:
    return all(any(t(c) for c in v) for t in tests)


def an(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _AN, n)
        if _all(v, str.isdigit, str.islower, str.isupper):
            return v


def lo(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _LO, n)
        if _all(v, str.isdigit, str.isalpha):
            return v


def up(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _UPA, n)
        if _all(v, str.isdigit, str.isalpha):
            return v


def hx(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _HEXS, n)
        if _all(v, str.isdigit, str.isalpha):
            return v


def ul(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _URL, n)
        if _all(v, str.isdigit, str.islower, str.isupper):
            return v


def b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64u(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def sym(rng: random.Random, n: int, marks: str = "!#$%*+-=?@^_~.") -> str:
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if _all(v, lambda c: c in marks, str.isdigit, str.isupper, str.islower):
            return v


def safe(rng: random.Random, n: int) -> str:
    """A generated password whose marks survive URLs, XML, JSON, YAML and shell quoting unescaped."""
    return sym(rng, n, "-_.~")


def human(rng: random.Random) -> str:
    """What a person picks: a word or two, a year or a number, maybe a mark."""
    w = rng.choice(_VOCAB).capitalize()
    if rng.random() < 0.55 or len(w) < 6:
        w += rng.choice(["", "_", "."]) + rng.choice(_VOCAB)
    return (
        w
        + str(rng.choice([rng.randint(10, 99), rng.randint(1970, 2026), rng.randint(100, 9999)]))
        + rng.choice(["", "!", "#", "$", "*", "?", "&", "@"])
    )


def words(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    return sep.join(rng.sample(_VOCAB, n)) + sep + str(rng.randint(2, 99))


def rng_word_num(rng: random.Random) -> str:
    """A spoken password: two lower-case words and a number, as a transcript writes it."""
    return rng.choice(_VOCAB) + rng.choice(_VOCAB) + str(rng.randint(10, 9999))


def pin_like(rng: random.Random) -> str:
    """A short code with letters, as a device or a bank letter prints it (8 to 10 characters)."""
    return up(rng, rng.randint(8, 10))


def apple_pw(rng: random.Random) -> str:
    return "-".join(chars(rng, string.ascii_lowercase, 4) for _ in range(4))


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def dg(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + chars(rng, string.digits, n - 1)


def seg(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict, alg: str = "HS256") -> str:
    size = 32 if alg.startswith("HS") else 64 if alg in ("EdDSA", "ES256") else 256
    return f"{seg({'alg': alg, 'typ': 'JWT'})}.{seg(claims)}.{b64u(rng, size)}"


def pem_body(rng: random.Random, first: str, kind: str = "PRIVATE KEY", lines: int = 5) -> str:
    body = [first] + [b64(rng, 48) for _ in range(lines - 1)] + [b64(rng, 21)]
    return "\n".join([f"-----BEGIN {kind}-----", *body, f"-----END {kind}-----"])


def pem_first(rng: random.Random, head: str) -> str:
    return (head + b64(rng, 64))[:64]


EC_HEAD = "MHcCAQEEI"
RSA_HEAD = "MIIEowIBAAKCAQEA"
P8_HEAD = "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg"


def basic(u: str, p: str) -> str:
    return base64.b64encode(f"{u}:{p}".encode()).decode()


def pct(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False)


def jc(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ---- maker factories (for the template shapes) --------------------------------------------------------------


def cat(*parts: str | Maker) -> Maker:
    return lambda rng: "".join(p if isinstance(p, str) else p(rng) for p in parts)


def AN(n: int) -> Maker:
    return lambda rng: an(rng, n)


def LO(n: int) -> Maker:
    return lambda rng: lo(rng, n)


def UP(n: int) -> Maker:
    return lambda rng: up(rng, n)


def HX(n: int) -> Maker:
    return lambda rng: hx(rng, n)


def HXU(n: int) -> Maker:
    return lambda rng: hx(rng, n).upper()


def UL(n: int) -> Maker:
    return lambda rng: ul(rng, n)


def B64(n: int) -> Maker:
    return lambda rng: b64(rng, n)


def B64U(n: int) -> Maker:
    return lambda rng: b64u(rng, n)


def SYM(n: int) -> Maker:
    return lambda rng: sym(rng, n)


def SAFE(n: int) -> Maker:
    return lambda rng: safe(rng, n)


def DG(n: int) -> Maker:
    return lambda rng: dg(rng, n)


HUMAN: Maker = human
WORDS: Maker = words
PIN: Maker = pin_like
UUID: Maker = uid


def WORDS_SEP(sep: str, n: int = 4) -> Maker:
    return lambda rng: words(rng, n, sep)


# ---- vendor formats (published prefixes and lengths) ---------------------------------------------------------

OPENAI = cat("sk-proj-", UL(74), "T3BlbkFJ", UL(74))
OPENAI_SVC = cat("sk-svcacct-", UL(74), "T3BlbkFJ", UL(74))
ANTHROPIC = cat("sk-ant-api03-", UL(93), "AA")
GHP = cat("ghp_", AN(36))
GHS = cat("ghs_", AN(36))
GHO = cat("gho_", AN(36))
GH_FINE = cat("github_pat_11", UP(20), "_", AN(59))
GLPAT = cat("glpat-", UL(20))


def AWS_SECRET(rng: random.Random) -> str:
    while True:
        v = chars(rng, _AN + "/+", 40)
        if _all(v, str.isdigit, str.islower, str.isupper):
            return v


AKIA = cat("AKIA", lambda r: chars(r, _B32S, 16))
HF = cat("hf_", lambda r: chars(r, string.ascii_letters, 34))
SLACK_BOT = cat("xoxb-", DG(12), "-", DG(13), "-", AN(24))
STRIPE_SK = cat("sk_live_51", AN(97))
STRIPE_RK = cat("rk_live_51", AN(97))
STRIPE_WH = cat("whsec_", AN(32))
GOOGLE = cat("AIza", UL(35))
GOCSPX = cat("GOCSPX-", UL(28))
SENDGRID = cat("SG.", UL(22), ".", UL(43))
TWILIO_TOKEN = HX(32)


def DISCORD_BOT(rng: random.Random) -> str:
    snowflake = str(rng.randint(10**17, 10**18))
    return base64.b64encode(snowflake.encode()).decode().rstrip("=") + "." + ul(rng, 6) + "." + ul(rng, 38)


TELEGRAM_BOT = cat(DG(10), ":AA", UL(33))
AGE_KEY = cat("AGE-SECRET-KEY-1", lambda r: chars(r, _BECH, 58))


def WG_KEY(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(32)).decode()


NKEY_SEED = cat("SUA", lambda r: chars(r, _B32S, 55))
VAULT = cat("hvs.", UL(24))
DOCKER_PAT = cat("dckr_pat_", UL(27))
DO_TOKEN = cat("dop_v1_", HX(64))
NPM = cat("npm_", AN(36))
GROQ = cat("gsk_", AN(52))
TAILSCALE = cat("tskey-auth-k", AN(10), "CNTRL-", AN(33))

# ---- noise ---------------------------------------------------------------------------------------------------

_FIRST = (
    "adaeze bjorn chidi dagny eitan farah goran hana idris jelena kenji leilani mateus noor olusegun priya "
    "quentin rasmus sunita tomasz ulla vikram wanjiru ximena yusuf zofia"
).split()
_HOSTS = (
    "db-primary.internal pg-eu1.prod.lan orders-db.svc.cluster.local mq01.corp.example ledger.acme-fin.net "
    "edge-gw.lab.home analytics.rds.amazonaws.com kafka-b2.stream.local cache-01.internal build.ci.example"
).split()


def _user(rng: random.Random) -> str:
    return (
        rng.choice(_FIRST)
        + rng.choice(["", ".", "_"])
        + rng.choice(["ops", "dev", "svc", "admin", str(rng.randint(2, 99))])
    )


def _when(rng: random.Random) -> str:
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


_NOISE: dict[str, Maker] = {
    "user": _user,
    "first": lambda r: r.choice(_FIRST).capitalize(),
    "host": lambda r: r.choice(_HOSTS),
    "ip": lambda r: f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
    "lan": lambda r: f"192.168.{r.randint(0, 9)}.{r.randint(2, 254)}",
    "pub": lambda r: f"203.0.113.{r.randint(2, 254)}",
    "uuid": uid,
    "uuid2": uid,
    "sha": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest(),
    "sha2": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest(),
    "short": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest()[:7],
    "sha256": lambda r: hashlib.sha256(r.randbytes(12)).hexdigest(),
    "ts": _when,
    "ts2": _when,
    "day": lambda r: f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "hms": lambda r: f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}",
    "port": lambda r: str(r.randint(1025, 65000)),
    "n": lambda r: str(r.randint(2, 99)),
    "n2": lambda r: str(r.randint(100, 999)),
    "n3": lambda r: str(r.randint(1000, 99999)),
    "pid": lambda r: str(r.randint(1200, 65000)),
    "trace": lambda r: r.randbytes(16).hex(),
    "span": lambda r: r.randbytes(8).hex(),
    "span2": lambda r: r.randbytes(8).hex(),
    "acct": lambda r: dg(r, 12),
    "ticket": lambda r: str(r.randint(10000, 99999)),
    "email": lambda r: (
        _user(r).replace("_", ".") + "@" + r.choice(["example.com", "acme.test", "corp.example"])
    ),
    "ver": lambda r: f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 20)}",
    "hex8": lambda r: r.randbytes(4).hex(),
    "hex12": lambda r: r.randbytes(6).hex(),
    "ms": lambda r: str(r.randint(3, 2500)),
    "tok": lambda r: str(r.randint(50, 4000)),
}
_MARK = re.compile(r"§([A-Za-z_][A-Za-z0-9_]*)§")


def _fill(rng: random.Random, text: str, makers: dict[str, Maker | str]) -> tuple[str, dict[str, str]]:
    body = textwrap.dedent(text).strip("\n")
    vals: dict[str, str] = {}
    for key in _MARK.findall(body):
        if key not in vals:
            mk = makers[key] if key in makers else _NOISE[key]
            vals[key] = mk if isinstance(mk, str) else mk(rng)
    return _MARK.sub(lambda m: vals[m.group(1)], body) + "\n", vals


def shape(name: str, text: str, **makers: Maker | str) -> None:
    """A credential shape from a template: `§KEY§` marks; keys starting upper-case are planted, others noise."""

    def fn(rng: random.Random) -> Made:
        body, vals = _fill(rng, text, makers)
        return body, tuple(v for k, v in vals.items() if k[0].isupper())

    _CRED.append((name, fn))


def cshape(name: str, text: str, **makers: Maker | str) -> None:
    """A clean shape from a template: every mark is noise."""
    assert not any(k[0].isupper() for k in makers), name
    _CLEAN.append((name, lambda rng: _fill(rng, text, makers)[0]))


def cred(name: str):
    def register(fn):
        _CRED.append((name, fn))
        return fn

    return register


def clean(name: str):
    def register(fn):
        _CLEAN.append((name, fn))
        return fn

    return register


def out(text: str, *values: str) -> Made:
    body = textwrap.dedent(text).strip("\n") + "\n"
    return body, tuple(values)


# =============================================================================================================
# credential documents
# =============================================================================================================

# ---- infrastructure as code ------------------------------------------------------------------------------------

shape(
    "terraform-show-json-plan-resource-changes-after-password",
    """
    $ terraform show -json tfplan | jq '.resource_changes[] | select(.type=="azurerm_mssql_server") | .change.after'
    {
      "administrator_login": "sqladmin",
      "administrator_login_password": "§P§",
      "location": "westeurope",
      "minimum_tls_version": "1.2",
      "name": "sql-ledger-§hex8§",
      "version": "12.0"
    }
    """,
    P=SAFE(22),
)
shape(
    "terraform-state-pull-jq-google-sql-user-password",
    """
    $ terraform state pull | jq -r '.resources[] | select(.type=="google_sql_user") | .instances[0].attributes'
    {
      "deletion_policy": null,
      "host": "",
      "id": "reporting//orders-§hex8§",
      "instance": "orders-§hex8§",
      "name": "reporting",
      "password": "§P§",
      "project": "acme-data-§n2§",
      "type": "BUILT_IN"
    }
    """,
    P=SYM(20),
)
shape(
    "terragrunt-hcl-inputs-block-literal-db-password",
    """
    # live/prod/eu-west-1/rds/terragrunt.hcl
    include "root" {
      path = find_in_parent_folders()
    }
    terraform {
      source = "git::git@github.com:acme/infra-modules.git//rds?ref=v§ver§"
    }
    inputs = {
      identifier        = "billing-prod"
      instance_class    = "db.r6g.large"
      master_username   = "billing"
      master_password   = "§P§"   # TODO move to SSM before go-live
      allocated_storage = 200
    }
    """,
    P=HUMAN,
)
shape(
    "opentofu-tfvars-json-cloudflare-and-hcloud-tokens",
    """
    // prod.auto.tfvars.json  (tofu 1.9)
    {
      "cloudflare_api_token": "§P§",
      "hcloud_token": "§Q§",
      "zone": "acme.example",
      "server_type": "cax21"
    }
    """,
    P=UL(40),
    Q=AN(64),
)
shape(
    "terraform-plan-text-helm-release-set-sensitive-leaked-in-values",
    """
      # helm_release.keycloak will be created
      + resource "helm_release" "keycloak" {
          + chart     = "keycloak"
          + name      = "keycloak"
          + namespace = "identity"
          + values    = [
              + <<-EOT
                    auth:
                      adminUser: admin
                      adminPassword: §P§
                    production: true
                EOT,
            ]
          + version   = "24.§n§.0"
        }

    Plan: 1 to add, 0 to change, 0 to destroy.
    """,
    P=SAFE(18),
)
shape(
    "pulumi-up-diff-details-plaintext-config-env",
    """
    Previewing update (prod)

         Type                           Name              Plan       Info
         pulumi:pulumi:Stack            checkout-prod
     ~   └─ aws:lambda:Function          payments          update     [diff: ~environment]

    Resources:
        ~ 1 to update
    Diagnostics:
      aws:lambda:Function (payments):
        ~ environment: {
            ~ variables: {
                ~ ADYEN_HMAC_KEY: "§hex8§" => "§P§"
              }
          }
    """,
    P=HXU(64),
)
shape(
    "pulumi-typescript-new-random-password-replaced-by-literal",
    """
    // index.ts
    import * as pulumi from "@pulumi/pulumi";
    import * as azure from "@pulumi/azure-native";

    // const pw = new random.RandomPassword("pg", { length: 24 });  // too slow in CI, hardcode for now
    const server = new azure.dbforpostgresql.Server("pg", {
        resourceGroupName: rg.name,
        administratorLogin: "pgadmin",
        administratorLoginPassword: "§P§",
        version: "16",
    });
    """,
    P=SYM(24),
)
shape(
    "aws-cdk-python-secretvalue-unsafe-plain-text",
    """
    from aws_cdk import SecretValue, aws_rds as rds

    creds = rds.Credentials.from_password(
        "analytics",
        SecretValue.unsafe_plain_text("§P§"),
    )
    cluster = rds.DatabaseCluster(self, "Warehouse", engine=engine, credentials=creds, vpc=vpc)
    """,
    P=HUMAN,
)
shape(
    "crossplane-claim-connection-secret-decoded-stringdata",
    """
    $ kubectl get secret orders-db-conn -n team-orders -o json | jq '.data | map_values(@base64d)'
    {
      "endpoint": "orders-db.cluster-c§hex8§.eu-central-1.rds.amazonaws.com",
      "password": "§P§",
      "port": "5432",
      "username": "orders"
    }
    """,
    P=AN(32),
)
shape(
    "packer-pkr-hcl-winrm-password-and-vsphere",
    """
    source "vsphere-iso" "win2025" {
      vcenter_server      = "vcsa.lab.home"
      username            = "packer@vsphere.local"
      password            = "§P§"
      communicator        = "winrm"
      winrm_username      = "Administrator"
      winrm_password      = "§Q§"
      iso_paths           = ["[datastore1] iso/SERVER_EVAL_x64FRE_en-us.iso"]
    }
    """,
    P=SAFE(16),
    Q=HUMAN,
)
shape(
    "nomad-job-hcl-template-inline-env-secret",
    """
    job "invoice-worker" {
      group "workers" {
        task "worker" {
          driver = "docker"
          template {
            destination = "secrets/app.env"
            env         = true
            data        = <<EOH
    POSTGRES_DSN=postgres://invoice:§P§@§host§:5432/invoice
    SIDEKIQ_CONCURRENCY=8
    EOH
          }
        }
      }
    }
    """,
    P=SAFE(20),
)
shape(
    "consul-acl-bootstrap-output-secretid",
    """
    $ consul acl bootstrap
    AccessorID:       §uuid§
    SecretID:         §P§
    Description:      Bootstrap Token (Global Management)
    Local:            false
    Create Time:      §ts§
    Policies:
       00000000-0000-0000-0000-000000000001 - global-management
    """,
    P=UUID,
)
shape(
    "nomad-acl-bootstrap-output-secret-id",
    """
    root@nomad-1:~# nomad acl bootstrap
    Accessor ID  = §uuid§
    Secret ID    = §P§
    Name         = Bootstrap Token
    Type         = management
    Global       = true
    Create Time  = §ts§
    Expiry Time  = <none>
    Policies     = n/a
    """,
    P=UUID,
)
shape(
    "ansible-vars-prompt-answered-in-extra-vars-json-file",
    """
    # extra_vars.json, passed with -e @extra_vars.json  (not vaulted yet, sorry)
    {
      "ansible_become_password": "§P§",
      "mariadb_root_password": "§Q§",
      "target_hosts": "db_servers"
    }
    """,
    P=HUMAN,
    Q=SAFE(20),
)
shape(
    "ansible-playbook-vvv-module-args-invocation-password",
    """
    TASK [Create application user] ******************************************************
    changed: [db1.internal] => {
        "changed": true,
        "invocation": {
            "module_args": {
                "encrypted": false,
                "login_host": "localhost",
                "login_password": null,
                "name": "app_rw",
                "password": "§P§",
                "priv": "appdb.*:ALL",
                "state": "present"
            }
        },
        "user": "app_rw"
    }
    """,
    P=SAFE(18),
)
shape(
    "chef-attributes-default-rb-plain-password",
    """
    # cookbooks/acme_app/attributes/default.rb
    default['acme_app']['db']['host'] = '§host§'
    default['acme_app']['db']['user'] = 'acme'
    default['acme_app']['db']['password'] = '§P§'
    default['acme_app']['workers'] = 4
    """,
    P=HUMAN,
)
shape(
    "salt-pillar-sls-jinja-set-password",
    """
    {# /srv/pillar/postgres/init.sls #}
    {% set pg_repl_password = '§P§' %}
    postgres:
      users:
        replicator:
          password: {{ pg_repl_password }}
          replication: True
    """,
    P=AN(26),
)
shape(
    "puppet-hiera-common-yaml-plain-secret",
    """
    ---
    # data/common.yaml
    profile::grafana::admin_user: 'admin'
    profile::grafana::admin_password: '§P§'
    profile::grafana::version: '11.§n§.0'
    """,
    P=SAFE(16),
)
shape(
    "cloud-init-user-data-chpasswd-list",
    """
    #cloud-config
    ssh_pwauth: true
    chpasswd:
      expire: false
      users:
        - name: ubuntu
          password: §P§
          type: text
    packages: [qemu-guest-agent]
    """,
    P=HUMAN,
)
shape(
    "cloudformation-parameters-json-cli-overrides",
    """
    $ aws cloudformation deploy --stack-name wiki-prod --template-file wiki.yaml \\
        --parameter-overrides DBUser=wiki DBPassword='§P§' InstanceType=t4g.medium
    Waiting for changeset to be created..
    Waiting for stack create/update to complete
    Successfully created/updated stack - wiki-prod
    """,
    P=SYM(18),
)
shape(
    "bicep-deployment-what-if-output-secure-param-echoed",
    """
    $ az deployment group create -g rg-crm -f main.bicep -p adminPassword='§P§' --what-if
    Note: The result may contain false positive predictions (noise).
    Resource and property changes are indicated with these symbols:
      + Create
    The deployment will update the following scope:
    Scope: /subscriptions/§uuid§/resourceGroups/rg-crm
      + Microsoft.Compute/virtualMachines/vm-crm-01
    """,
    P=SAFE(20),
)
shape(
    "terraform-cloud-run-log-var-file-echo",
    """
    Terraform v1.§n§.2
    on linux_amd64
    Initializing plugins and modules...
    data.external.print_env: Reading...
    data.external.print_env: Read complete after 0s [id=-]
    ╷
    │ Warning: debug output
    │   with data.external.print_env,
    │   on debug.tf line 3:
    │   "TF_VAR_datadog_api_key" = "§P§"
    ╵
    """,
    P=HX(32),
)
shape(
    "kamal-secrets-file-literal-registry-password",
    """
    # .kamal/secrets  (the team forgot to switch to $(op read ...))
    KAMAL_REGISTRY_PASSWORD=§P§
    RAILS_MASTER_KEY=§Q§
    """,
    P=DOCKER_PAT,
    Q=HX(32),
)
shape(
    "spacelift-stack-environment-export-plaintext",
    """
    $ spacectl stack environment list --id billing-prod
    NAME                      TYPE                 VALUE                 SECRET
    TF_VAR_region             environment variable eu-west-1             false
    TF_VAR_snowflake_password environment variable §P§    false
    AWS_REGION                environment variable eu-west-1             false
    """,
    P=SAFE(18),
)

# ---- Kubernetes, Helm, GitOps ----------------------------------------------------------------------------------

shape(
    "kubectl-describe-deployment-env-literal-redis-password",
    """
    $ kubectl describe deploy/checkout -n shop
    Name:                   checkout
    Namespace:              shop
    Selector:               app=checkout
    Pod Template:
      Containers:
       checkout:
        Image:      ghcr.io/acme/checkout:§short§
        Port:       8080/TCP
        Environment:
          REDIS_HOST:      redis-master.shop.svc
          REDIS_PASSWORD:  §P§
          LOG_LEVEL:       info
        Mounts:           <none>
    """,
    P=AN(24),
)
shape(
    "kubectl-get-secret-yaml-data-base64-single-key",
    """
    $ kubectl get secret smtp-relay -o yaml
    apiVersion: v1
    data:
      SMTP_PASSWORD: §P§
      SMTP_USER: bm90aWZpY2F0aW9ucw==
    kind: Secret
    metadata:
      name: smtp-relay
      namespace: notify
    type: Opaque
    """,
    P=lambda r: base64.b64encode(safe(r, 20).encode()).decode(),
)
shape(
    "kustomize-overlay-secret-generator-literal-jwt-signing-key",
    """
    # overlays/prod/kustomization.yaml
    resources:
      - ../../base
    secretGenerator:
      - name: api-secrets
        literals:
          - JWT_SIGNING_KEY=§P§
          - SENTRY_ENVIRONMENT=prod
    generatorOptions:
      disableNameSuffixHash: true
    """,
    P=B64(48),
)
shape(
    "argocd-application-helm-parameters-inline-password",
    """
    apiVersion: argoproj.io/v1alpha1
    kind: Application
    metadata:
      name: minio
      namespace: argocd
    spec:
      source:
        repoURL: https://charts.min.io/
        chart: minio
        targetRevision: 5.§n§.0
        helm:
          parameters:
            - name: rootUser
              value: minio-admin
            - name: rootPassword
              value: "§P§"
      destination:
        server: https://kubernetes.default.svc
        namespace: storage
    """,
    P=SAFE(24),
)
shape(
    "flux-helmrelease-values-inline-smtp-password",
    """
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: gitea
      namespace: git
    spec:
      interval: 30m
      chart:
        spec:
          chart: gitea
          sourceRef: {kind: HelmRepository, name: gitea-charts}
      values:
        gitea:
          config:
            mailer:
              ENABLED: true
              SMTP_ADDR: smtp.postmarkapp.com
              USER: §uuid§
              PASSWD: §P§
    """,
    P=UUID,
)
shape(
    "helm-template-rendered-secret-stringdata-debug",
    """
    $ helm template rel ./charts/api --debug 2>&1 | sed -n '/kind: Secret/,/---/p'
    kind: Secret
    metadata:
      name: rel-api
      labels:
        helm.sh/chart: api-0.§n§.1
    type: Opaque
    stringData:
      STRIPE_API_KEY: "§P§"
    ---
    """,
    P=STRIPE_RK,
)
shape(
    "kubectl-create-secret-docker-registry-dry-run-dockerconfigjson",
    """
    $ kubectl create secret docker-registry regcred --docker-server=registry.gitlab.com \\
        --docker-username=deploy-bot --docker-password=§P§ --dry-run=client -o yaml
    apiVersion: v1
    kind: Secret
    metadata:
      name: regcred
    type: kubernetes.io/dockerconfigjson
    """,
    P=GLPAT,
)
shape(
    "kubernetes-audit-event-request-object-secret-stringdata",
    """
    {"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"§uuid§","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/pay/secrets","verb":"create","user":{"username":"system:serviceaccount:ci:deployer"},"objectRef":{"resource":"secrets","namespace":"pay","name":"psp-creds"},"requestObject":{"kind":"Secret","apiVersion":"v1","metadata":{"name":"psp-creds"},"stringData":{"api_key":"§P§"},"type":"Opaque"}}
    """,
    P=cat("sk_live_", AN(24)),
)
shape(
    "sealed-secrets-kubeseal-input-file-left-beside-output",
    """
    $ ls k8s/secrets/
    db-secret.raw.yaml  db-sealed.yaml
    $ cat k8s/secrets/db-secret.raw.yaml
    apiVersion: v1
    kind: Secret
    metadata: {name: db, namespace: crm}
    stringData:
      DATABASE_URL: mysql://crm:§P§@mysql.crm.svc:3306/crm
    """,
    P=SAFE(18),
)
shape(
    "external-secrets-fake-provider-store-data-value",
    """
    apiVersion: external-secrets.io/v1beta1
    kind: ClusterSecretStore
    metadata:
      name: fake-for-e2e
    spec:
      provider:
        fake:
          data:
            - key: /prod/payments/webhook
              value: "§P§"
              version: v1
    """,
    P=STRIPE_WH,
)
shape(
    "kubeconfig-user-token-oidc-refresh",
    """
    users:
    - name: oidc-alice
      user:
        auth-provider:
          name: oidc
          config:
            client-id: kubernetes
            idp-issuer-url: https://dex.k8s.acme.example
            refresh-token: §P§
    """,
    P=cat("ChlvZ", LO(18), "ZmZ", LO(4)),
)
shape(
    "k9s-screen-dump-secret-decoded-view",
    """
     Context: prod-eu │ Cluster: prod-eu │ User: ops │ K9s Rev: v0.§n§.4
    ┌──────────────────────────── Secret Decoder(payments/psp-live) ───────────────────────────┐
    │ ADYEN_API_KEY: §P§                                                                        │
    │ ADYEN_MERCHANT: AcmeShopECOM                                                              │
    └──────────────────────────────────────────────────────────────────────────────────────────┘
    """,
    P=cat("AQE", UL(20), "Y", UL(40), "=-", UL(30)),
)
shape(
    "openshift-oc-login-token-history",
    """
      512  oc project platform-tools
      513  oc login --token=§P§ --server=https://api.ocp4.acme.example:6443
      514  oc get pods -w
    """,
    P=cat("sha256~", UL(43)),
)
shape(
    "rancher-cluster-registration-command-token",
    """
    Run this command on each node to register it:
    curl --insecure -fL https://rancher.lab.home/system-agent-install.sh | sudo sh -s - \\
      --server https://rancher.lab.home --label 'cattle.io/os=linux' \\
      --token §P§ --ca-checksum §sha256§ --etcd --controlplane --worker
    """,
    P=LO(54),
)
shape(
    "k3s-server-token-file-cat",
    """
    root@k3s-a:~# cat /var/lib/rancher/k3s/server/node-token
    §P§
    root@k3s-a:~# curl -sfL https://get.k3s.io | K3S_URL=https://§lan§:6443 K3S_TOKEN=... sh -
    """,
    P=cat("K10", HX(64), "::server:", HX(32)),
)
shape(
    "kubeadm-token-create-print-join-command",
    """
    $ kubeadm token create --print-join-command
    kubeadm join §ip§:6443 --token §P§ --discovery-token-ca-cert-hash sha256:§sha256§
    """,
    P=cat(LO(6), ".", LO(16)),
)
shape(
    "velero-backup-storage-location-credentials-file",
    """
    # credentials-velero (for velero install --secret-file)
    [default]
    aws_access_key_id = minio
    aws_secret_access_key = §P§
    """,
    P=AN(40),
)
shape(
    "cert-manager-cloudflare-issuer-secret-stringdata-token",
    """
    apiVersion: v1
    kind: Secret
    metadata:
      name: cloudflare-api-token-secret
      namespace: cert-manager
    type: Opaque
    stringData:
      api-token: §P§
    ---
    apiVersion: cert-manager.io/v1
    kind: ClusterIssuer
    metadata: {name: letsencrypt-dns}
    """,
    P=UL(40),
)
shape(
    "strimzi-kafkauser-secret-password-decoded",
    """
    $ kubectl get secret orders-consumer -n kafka -o jsonpath='{.data.password}' | base64 -d; echo
    §P§
    $ kubectl get secret orders-consumer -n kafka -o jsonpath='{.data.sasl\\.jaas\\.config}' | base64 -d | cut -c1-60
    org.apache.kafka.common.security.scram.ScramLoginModule required
    """,
    P=AN(32),
)
shape(
    "cloudnativepg-app-secret-uri-decoded",
    """
    $ kubectl cnpg status pg-main | head -3
    Cluster Summary
    Name: pg-main   Namespace: apps
    $ kubectl get secret pg-main-app -o jsonpath='{.data.uri}' | base64 -d
    postgresql://app:§P§@pg-main-rw.apps:5432/app
    """,
    P=AN(64),
)
shape(
    "tekton-pipelinerun-params-literal-token",
    """
    apiVersion: tekton.dev/v1
    kind: PipelineRun
    metadata:
      generateName: publish-
    spec:
      pipelineRef: {name: npm-publish}
      params:
        - name: registry
          value: https://registry.npmjs.org/
        - name: npm-token
          value: §P§
    """,
    P=NPM,
)
shape(
    "kubectl-port-forward-then-curl-grafana-basic",
    """
    $ kubectl -n monitoring port-forward svc/grafana 3000:80 &
    Forwarding from 127.0.0.1:3000 -> 3000
    $ curl -s -u admin:§P§ localhost:3000/api/health
    {"commit":"§short§","database":"ok","version":"11.§n§.0"}
    """,
    P=AN(40),
)

# ---- database clients -------------------------------------------------------------------------------------------

shape(
    "psql-backslash-password-then-alter-log-statement",
    """
    orders=# \\password reporting
    Enter new password for user "reporting":
    Enter it again:
    orders=# -- log_statement=all shows what the GUI sent earlier:
    2026-§n§-03 09:12:44 UTC [§pid§] LOG:  statement: CREATE ROLE etl LOGIN PASSWORD '§P§';
    """,
    P=HUMAN,
)
shape(
    "pgbouncer-userlist-txt-plain-password",
    """
    ; /etc/pgbouncer/userlist.txt
    "pgbouncer" "md5§hex12§§hex12§§hex8§"
    "billing_app" "§P§"
    """,
    P=SAFE(20),
)
shape(
    "pg-service-conf-section-password",
    """
    # ~/.pg_service.conf
    [warehouse]
    host=§host§
    port=5432
    dbname=dw
    user=analyst
    password=§P§
    sslmode=verify-full
    """,
    P=HUMAN,
)
shape(
    "mysql-shell-js-connect-uri-transcript",
    """
    MySQL Shell 8.§n§.0
    Type '\\help' or '\\?' for help; '\\quit' to exit.
     MySQL  JS > \\connect clusteradmin:§P§@mysql-1.internal:3306
    Creating a session to 'clusteradmin@mysql-1.internal:3306'
    Fetching schema names for auto-completion... Press ^C to stop.
     MySQL  mysql-1.internal:3306 ssl  JS > dba.getCluster().status()
    """,
    P=SAFE(16),
)
shape(
    "mariadb-my-cnf-client-section-quoted",
    """
    # /root/.my.cnf  (mode 600, but committed to the ops repo by mistake)
    [client]
    user     = root
    password = "§P§"
    socket   = /run/mysqld/mysqld.sock
    """,
    P=SYM(18),
)
shape(
    "mongosh-db-auth-interactive-passwordprompt-bypassed",
    """
    test> use admin
    switched to db admin
    admin> db.auth("siteRootAdmin", "§P§")
    { ok: 1 }
    admin> db.getUsers().users.length
    7
    """,
    P=HUMAN,
)
shape(
    "mongodb-compass-connection-favorites-json",
    """
    {
      "connectionInfo": {
        "id": "§uuid§",
        "connectionOptions": {
          "connectionString": "mongodb+srv://analytics:§P§@cluster0.§hex8§.mongodb.net/?retryWrites=true&w=majority&appName=Compass"
        },
        "favorite": {"name": "Atlas prod (read-only)", "color": "color3"}
      }
    }
    """,
    P=AN(16),
)
shape(
    "redis-conf-requirepass-and-masterauth",
    """
    # redis.conf (replica)
    replicaof §ip§ 6379
    masterauth §P§
    requirepass §P§
    maxmemory 2gb
    """,
    P=HX(40),
)
shape(
    "redis-acl-setuser-transcript",
    """
    127.0.0.1:6379> ACL SETUSER worker on >§P§ ~jobs:* +@list +@connection
    OK
    127.0.0.1:6379> ACL LIST
    1) "user default on nopass ~* &* +@all"
    2) "user worker on #§sha256§ ~jobs:* resetchannels -@all +@list +@connection"
    """,
    P=SAFE(22),
)
shape(
    "cqlsh-login-command-inside-session",
    """
    Connected to Prod Cluster at 10.0.4.11:9042
    [cqlsh 6.2.0 | Cassandra 5.0.§n§ | CQL spec 3.4.7 | Native protocol v5]
    cassandra@cqlsh> LOGIN reporting '§P§';
    reporting@cqlsh> SELECT count(*) FROM shop.orders;
    """,
    P=HUMAN,
)
shape(
    "clickhouse-client-xml-config-connection",
    """
    <!-- ~/.clickhouse-client/config.xml -->
    <config>
        <connections_credentials>
            <connection>
                <name>prod</name>
                <hostname>ch.prod.lan</hostname>
                <user>readonly_bi</user>
                <password>§P§</password>
                <secure>1</secure>
            </connection>
        </connections_credentials>
    </config>
    """,
    P=AN(20),
)
shape(
    "sqlcmd-windows-minus-p-transcript",
    """
    C:\\> sqlcmd -S tcp:sql-erp.corp.example,1433 -U erp_report -P "§P§" -d ERP -Q "SELECT @@VERSION"
    Microsoft SQL Server 2022 (RTM-CU§n§) - 16.0.4§n2§.1 (X64)
    (1 rows affected)
    """,
    P=SYM(16),
)
shape(
    "sqlplus-connect-string-slash-at",
    """
    [oracle@ora19 ~]$ sqlplus hr/§P§@//ora19.corp.example:1521/PDBHR

    SQL*Plus: Release 19.0.0.0.0 - Production on Tue Mar 3 10:22:41 2026
    Connected to:
    Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
    SQL>
    """,
    P=lambda r: human(r).rstrip("!#$*?&@") + "_x",
)
shape(
    "oracle-wallet-mkstore-create-credential",
    """
    $ mkstore -wrl /u01/app/wallet -createCredential ORCLPDB1 batch_user §P§
    Oracle Secret Store Tool Release 19.0.0.0.0 - Production
    Enter wallet password:
    """,
    P=AN(18),
)
shape(
    "duckdb-create-secret-s3-sql",
    """
    D CREATE SECRET lake (
        TYPE s3,
        KEY_ID 'AKIA§akid§',
        SECRET '§P§',
        REGION 'eu-west-1'
      );
    ┌─────────┐
    │ Success │
    ├─────────┤
    │ true    │
    └─────────┘
    """,
    akid=lambda r: chars(r, _B32S, 16),
    P=AWS_SECRET,
)
shape(
    "cockroach-sql-url-flag-history",
    """
    $ cockroach sql --url "postgresql://maxroach:§P§@crdb-lb.internal:26257/bank?sslmode=verify-full&sslrootcert=certs/ca.crt"
    #
    # Welcome to the CockroachDB SQL shell.
    """,
    P=SAFE(16),
)
shape(
    "influx-config-create-token-flag",
    """
    $ influx config create --config-name prod --host-url https://influx.iot.lan:8086 \\
        --org plant-7 --token §P§ --active
    Active  Name  URL                           Org
    *       prod  https://influx.iot.lan:8086   plant-7
    """,
    P=lambda r: b64u(r, 64) + "==",
)
shape(
    "cypher-shell-neo4j-auth-env-inline",
    """
    $ NEO4J_USERNAME=neo4j NEO4J_PASSWORD='§P§' cypher-shell -a neo4j+s://§hex8§.databases.neo4j.io
    Connected to Neo4j using Bolt protocol version 5.4 at neo4j+s://§hex8§.databases.neo4j.io:7687 as user neo4j.
    neo4j@neo4j> MATCH (n) RETURN count(n);
    """,
    P=UL(43),
)
shape(
    "surreal-sql-cli-user-pass-flags",
    """
    $ surreal sql --endpoint ws://localhost:8000 --namespace app --database main --username root --password §P§ --pretty
    #
    app/main> SELECT * FROM user LIMIT 1;
    """,
    P=HUMAN,
)
shape(
    "etcdctl-user-flag-colon-password",
    """
    # ETCDCTL_API=3 etcdctl --endpoints=https://§ip§:2379 --cacert=/etc/etcd/ca.pem \\
        --user root:§P§ get /registry --prefix --keys-only | head
    /registry/apiregistration.k8s.io/apiservices/v1.
    """,
    P=SAFE(20),
)
shape(
    "trino-cli-password-env-and-catalog-properties",
    """
    # etc/catalog/postgres.properties
    connector.name=postgresql
    connection-url=jdbc:postgresql://§host§:5432/dw
    connection-user=trino_ro
    connection-password=§P§
    """,
    P=AN(24),
)
shape(
    "snowsql-config-connections-section",
    """
    # ~/.snowsql/config
    [connections.reporting]
    accountname = xy§n2§34.eu-central-1
    username = REPORTING_SVC
    password = §P§
    warehousename = BI_WH
    rolename = REPORTER
    """,
    P=SYM(20),
)
shape(
    "dbeaver-data-sources-json-credentials-plain",
    """
    // .dbeaver/data-sources.json (credentials saved unencrypted by the portable build)
    "postgres-jdbc-§hex12§": {
      "provider": "postgresql",
      "driver": "postgres-jdbc",
      "name": "billing-replica",
      "save-password": true,
      "configuration": {
        "host": "§host§", "port": "5432", "database": "billing",
        "user": "bi_reader", "password": "§P§"
      }
    }
    """,
    P=HUMAN,
)
shape(
    "liquibase-properties-changelog-password",
    """
    # liquibase.properties
    changeLogFile: db/changelog/db.changelog-master.yaml
    url: jdbc:postgresql://§host§:5432/inventory
    username: liquibase
    password: §P§
    liquibase.hub.mode: off
    """,
    P=SAFE(18),
)
shape(
    "flyway-conf-url-and-password",
    """
    flyway.url=jdbc:sqlserver://sql-01.corp.example:1433;databaseName=Crm;encrypt=true
    flyway.user=flyway_migrator
    flyway.password=§P§
    flyway.locations=filesystem:sql/migrations
    """,
    P=SYM(16),
)
shape(
    "pgadmin-servers-json-passfile-and-password-export",
    """
    {
      "Servers": {
        "1": {
          "Name": "Staging",
          "Group": "Servers",
          "Host": "§host§",
          "Port": 5432,
          "MaintenanceDB": "postgres",
          "Username": "postgres",
          "Password": "§P§",
          "SSLMode": "prefer"
        }
      }
    }
    """,
    P=HUMAN,
)

# ---- messaging and streaming -------------------------------------------------------------------------------------

shape(
    "confluent-cloud-client-properties-download",
    """
    # Required connection configs for Kafka producer, consumer, and admin
    bootstrap.servers=pkc-§hex8§.europe-west3.gcp.confluent.cloud:9092
    security.protocol=SASL_SSL
    sasl.mechanisms=PLAIN
    sasl.username=§api§
    sasl.password=§P§
    # Best practice for higher availability in librdkafka clients prior to 1.7
    session.timeout.ms=45000
    """,
    api=UP(16),
    P=lambda r: chars(r, _AN + "+/", 64),
)
shape(
    "rpk-profile-yaml-sasl-password",
    """
    # ~/.config/rpk/rpk.yaml
    version: 6
    current_profile: prod
    profiles:
      - name: prod
        kafka_api:
          brokers: [seed-§hex8§.any.eu-central-1.mpx.prd.cloud.redpanda.com:9092]
          tls: {}
          sasl:
            user: ingest-svc
            password: §P§
            mechanism: SCRAM-SHA-256
    """,
    P=AN(30),
)
shape(
    "kcat-command-sasl-password-x-flag",
    """
    $ kcat -b §host§:9093 -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 \\
        -X sasl.username=audit-reader -X sasl.password='§P§' -C -t audit.events -o -5 -e
    % Reached end of topic audit.events [0] at offset 88123
    """,
    P=SYM(20),
)
shape(
    "pulsar-conf-client-conf-authparams-token-colon-jwt",
    """
    # conf/client.conf
    webServiceUrl=https://pulsar.stream.local:8443/
    brokerServiceUrl=pulsar+ssl://pulsar.stream.local:6651/
    authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
    authParams=token:§P§
    """,
    P=lambda r: jwt(r, {"sub": "ingest-service"}),
)
shape(
    "nats-cli-context-json-password",
    """
    // ~/.config/nats/context/edge.json
    {
      "description": "edge cluster",
      "url": "nats://edge-nats.iot.lan:4222",
      "user": "telemetry",
      "password": "§P§",
      "creds": "",
      "nkey": ""
    }
    """,
    P=SAFE(24),
)
shape(
    "nats-server-conf-accounts-users-password",
    """
    accounts: {
      SENSORS: {
        users: [
          {user: gateway, password: "§P§"}
          {user: grafana, password: "$2a$11$§hex12§§hex12§§hex12§§hex12§§hex8§abcdef"}
        ]
        jetstream: enabled
      }
    }
    """,
    P=AN(22),
)
shape(
    "nsc-generate-nkey-user-seed-output",
    """
    $ nsc generate nkey --user
    §P§
    UD§pubtail§
    """,
    P=NKEY_SEED,
    pubtail=lambda r: chars(r, _B32S, 54),
)
shape(
    "mosquitto-bridge-conf-remote-password",
    """
    # /etc/mosquitto/conf.d/bridge.conf
    connection cloud-bridge
    address §hex8§.iot.eu-west-1.amazonaws.com:8883
    remote_clientid plant7-bridge
    remote_username plant7
    remote_password §P§
    topic telemetry/# out 1
    """,
    P=HUMAN,
)
shape(
    "paho-mqtt-python-username-pw-set",
    """
    import paho.mqtt.client as mqtt

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="greenhouse-§n§")
    client.username_pw_set("greenhouse", "§P§")
    client.tls_set()
    client.connect("§hex8§.s1.eu.hivemq.cloud", 8883)
    """,
    P=SAFE(16),
)
shape(
    "emqx-dashboard-api-key-and-secret-curl",
    """
    curl -s -u §keyid§:§P§ \\
      "http://emqx.iot.lan:18083/api/v5/clients?limit=10" | jq '.meta'
    """,
    keyid=lambda r: hx(r, 16),
    P=cat(AN(28), "9B", AN(24)),
)
shape(
    "rabbitmqadmin-conf-section-password",
    """
    # ~/.rabbitmqadmin.conf
    [prod]
    hostname = rmq.prod.lan
    port = 15671
    ssl = True
    username = ops
    password = §P§
    """,
    P=HUMAN,
)
shape(
    "rabbitmqctl-add-user-history",
    """
    sudo rabbitmqctl add_user invoicing '§P§'
    sudo rabbitmqctl set_permissions -p /billing invoicing '^invoice\\..*' '.*' '.*'
    sudo rabbitmqctl set_user_tags invoicing monitoring
    """,
    P=SYM(18),
)
shape(
    "azure-event-hubs-kafka-jaas-connection-string",
    """
    bootstrap.servers=telemetry-ns.servicebus.windows.net:9093
    security.protocol=SASL_SSL
    sasl.mechanism=PLAIN
    sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="$ConnectionString" password="Endpoint=sb://telemetry-ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=§P§";
    """,
    P=B64(32),
)
shape(
    "solace-pubsub-sdkperf-args",
    """
    ./sdkperf_java.sh -cip=tcps://mr-§hex8§.messaging.solace.cloud:55443 -cu=solace-cloud-client@prod-vpn \\
        -cp=§P§ -ptl=orders/created -mn=1000 -mr=100
    """,
    P=LO(26),
)
shape(
    "zeromq-curve-secret-key-z85-python",
    """
    # generated once with zmq.curve_keypair(); the server secret must stay on the broker
    SERVER_PUBLIC = b"§pubz§"
    SERVER_SECRET = b"§P§"
    server.curve_secretkey = SERVER_SECRET
    server.curve_publickey = SERVER_PUBLIC
    server.curve_server = True
    """,
    pubz=lambda r: chars(r, _AN + ".-:+=^!/*?&<>()[]{}@%$#", 40).replace("\\", "x"),
    P=lambda r: an(r, 20) + chars(r, _AN + ".-:+=^!/*?&()[]@%$#", 20),
)
shape(
    "google-pubsub-emulator-no-but-sa-key-inline-env",
    """
    $ env | grep -i google
    GOOGLE_CLOUD_PROJECT=events-prod-§n2§
    GOOGLE_APPLICATION_CREDENTIALS_JSON={"type":"service_account","project_id":"events-prod-§n2§","private_key_id":"§hex12§","private_key":"-----BEGIN PRIVATE KEY-----\\n§P§\\n...\\n-----END PRIVATE KEY-----\\n","client_email":"pub@events-prod-§n2§.iam.gserviceaccount.com"}
    """,
    P=lambda r: pem_first(r, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ"),
)
shape(
    "aws-sqs-boto3-client-inline-keys",
    """
    sqs = boto3.client(
        "sqs",
        region_name="ap-southeast-2",
        aws_access_key_id="AKIA§akid§",
        aws_secret_access_key="§P§",
    )
    sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=json.dumps(evt))
    """,
    akid=lambda r: chars(r, _B32S, 16),
    P=AWS_SECRET,
)
shape(
    "nsq-nsqd-auth-secret-query",
    """
    nsq_tail --nsqd-tcp-address=nsq.internal:4150 --topic=clicks \\
      --consumer-opt=auth_secret,§P§ -n 5
    """,
    P=HX(40),
)

# ---- IoT and embedded ----------------------------------------------------------------------------------------------

shape(
    "zephyr-prj-conf-wifi-psk-kconfig",
    """
    # prj.conf
    CONFIG_WIFI=y
    CONFIG_NET_L2_WIFI_MGMT=y
    CONFIG_WIFI_CREDENTIALS_STATIC=y
    CONFIG_WIFI_CREDENTIALS_STATIC_SSID="PlantFloor-IoT"
    CONFIG_WIFI_CREDENTIALS_STATIC_PASSWORD="§P§"
    """,
    P=HUMAN,
)
shape(
    "esp-idf-sdkconfig-example-wifi-password",
    """
    #
    # Example Connection Configuration
    #
    CONFIG_EXAMPLE_WIFI_SSID="Lab-2.4G"
    CONFIG_EXAMPLE_WIFI_PASSWORD="§P§"
    CONFIG_EXAMPLE_WIFI_CONN_MAX_RETRY=5
    """,
    P=SAFE(14),
)
shape(
    "platformio-ini-build-flags-define-api-token",
    """
    [env:esp32-s3-devkitc-1]
    platform = espressif32
    board = esp32-s3-devkitc-1
    framework = arduino
    build_flags =
        -D WIFI_SSID=\\"Workshop\\"
        -D BLYNK_AUTH_TOKEN=\\"§P§\\"
    monitor_speed = 115200
    """,
    P=UL(32),
)
shape(
    "micropython-boot-py-wlan-connect",
    """
    # boot.py -- run on boot-up
    import network, time
    wlan = network.WLAN(network.STA_IF)
    wlan.active(True)
    wlan.connect("Attic-AP", "§P§")
    while not wlan.isconnected():
        time.sleep(0.5)
    print("ip", wlan.ifconfig()[0])
    """,
    P=HUMAN,
)
shape(
    "circuitpython-settings-toml-adafruit-io-key",
    """
    # settings.toml on CIRCUITPY
    CIRCUITPY_WIFI_SSID = "Greenhouse"
    CIRCUITPY_WIFI_PASSWORD = "§P§"
    ADAFRUIT_AIO_USERNAME = "plantbot"
    ADAFRUIT_AIO_KEY = "§Q§"
    """,
    P=HUMAN,
    Q=cat("aio_", AN(28)),
)
shape(
    "ttn-lorawan-end-device-otaa-app-key",
    """
    $ ttn-lw-cli end-devices create soil-app soil-node-§n§ --dev-eui 70B3D57ED00§hex8§ \\
        --join-eui 0000000000000000 --frequency-plan-id EU_863_870_TTN --lorawan-version 1.0.3 \\
        --lorawan-phy-version PHY_V1_0_3_REV_A --root-keys.app-key.key §P§
    """,
    P=HXU(32),
)
shape(
    "arduino-lmic-appkey-byte-array",
    """
    // This key should be in big endian format
    static const u1_t PROGMEM APPKEY[16] = { §P§ };
    void os_getDevKey (u1_t* buf) {  memcpy_P(buf, APPKEY, 16);}
    """,
    P=lambda r: ", ".join("0x" + r.randbytes(1).hex().upper() for _ in range(16)),
)
shape(
    "azure-iot-hub-device-connection-string-c-define",
    """
    /* main.c */
    static const char* connectionString =
        "HostName=plant7-hub.azure-devices.net;DeviceId=press-0§n§;SharedAccessKey=§P§";
    """,
    P=B64(32),
)
shape(
    "aws-iot-greengrass-config-yaml-private-key-path-and-inline",
    """
    system:
      certificateFilePath: "/greengrass/v2/device.pem.crt"
      privateKeyPath: "/greengrass/v2/private.pem.key"
      thingName: "press-line-§n§"
    # private.pem.key pasted here so the installer can write it:
    # -----BEGIN RSA PRIVATE KEY-----
    # §P§
    # -----END RSA PRIVATE KEY-----
    """,
    P=lambda r: pem_first(r, RSA_HEAD),
)
shape(
    "tuya-tinytuya-devices-json-local-key",
    """
    [
      {
        "name": "Hall Plug",
        "id": "bf§hex12§§hex8§",
        "key": "§P§",
        "mac": "a4:cf:12:§n§:4e:9a",
        "ip": "§lan§",
        "version": "3.4"
      }
    ]
    """,
    P=lambda r: chars(r, _AN + "!@#$^&*()<>[]{}", 16),
)
shape(
    "shelly-gen2-rpc-sys-set-auth",
    """
    $ curl -s -X POST http://§lan§/rpc/Shelly.SetAuth \\
        -d '{"user":"admin","realm":"shellyplus1pm-§hex12§","ha1":null,"password":"§P§"}'
    null
    """,
    P=HUMAN,
)
shape(
    "klipper-moonraker-conf-api-key-and-mqtt",
    """
    # moonraker.conf
    [mqtt]
    address: §lan§
    username: voron
    password: §P§
    enable_moonraker_api: True
    """,
    P=SAFE(14),
)
shape(
    "openhab-services-cfg-mqtt-password",
    """
    # services/mqtt.cfg (legacy 1.x binding still in use)
    mosquitto.url=tcp://§lan§:1883
    mosquitto.clientId=openhab
    mosquitto.user=openhab
    mosquitto.pwd=§P§
    """,
    P=HUMAN,
)
shape(
    "hubitat-maker-api-url-access-token",
    """
    Get All Devices:
    http://§lan§/apps/api/§n2§/devices?access_token=§P§
    Send Device Command:
    http://§lan§/apps/api/§n2§/devices/[Device ID]/[Command]/[Secondary value]?access_token=§P§
    """,
    P=UUID,
)
shape(
    "balena-device-env-var-list-output",
    """
    $ balena env list --device §hex8§
    ID      NAME              VALUE                            DEVICE
    §n3§  TZ                Europe/Oslo                      §hex8§
    §n3§  INFLUX_TOKEN      §P§   §hex8§
    """,
    P=lambda r: b64u(r, 48) + "==",
)
shape(
    "particle-cli-token-create-output",
    """
    $ particle token create --expires-in 0
    ? Please enter your password: [hidden]
    New access token never expires
        §P§
    """,
    P=HX(40),
)
shape(
    "unifi-protect-rtsps-url-with-token",
    """
    frigate:
      cameras:
        driveway:
          ffmpeg:
            inputs:
              - path: rtsps://§lan§:7441/§P§?enableSrtp
                roles: [detect, record]
    """,
    P=AN(16),
)
shape(
    "reolink-rtsp-url-password-in-go2rtc-yaml",
    """
    # go2rtc.yaml
    streams:
      garden: rtsp://admin:§P§@§lan§:554/h264Preview_01_main
      garden_sub: rtsp://admin:§P§@§lan§:554/h264Preview_01_sub
    """,
    P=HUMAN,
)
shape(
    "victron-venus-mqtt-vrm-portal-token",
    """
    # node-red flow exported from Venus OS (vrm-api node)
    [{"id":"§hex8§§hex8§","type":"config-vrm-api","name":"VRM","token":"§P§"}]
    """,
    P=HX(64),
)

# ---- game servers, mods and game platforms ---------------------------------------------------------------------------

shape(
    "cs2-server-cfg-rcon-and-sv-password",
    """
    // cfg/server.cfg
    hostname "Acme LAN Friday"
    rcon_password "§P§"
    sv_password "§Q§"
    sv_lan 0
    game_type 0
    game_mode 1
    """,
    P=SAFE(16),
    Q=HUMAN,
)
shape(
    "valheim-start-server-sh-password-arg",
    """
    export templdpath=$LD_LIBRARY_PATH
    export LD_LIBRARY_PATH=./linux64:$LD_LIBRARY_PATH
    export SteamAppId=892970
    ./valheim_server.x86_64 -name "Viking Dads" -port 2456 -world "Dedicated" -password "§P§" -crossplay
    export LD_LIBRARY_PATH=$templdpath
    """,
    P=HUMAN,
)
shape(
    "palworld-settings-ini-admin-password",
    """
    [/Script/Pal.PalGameWorldSettings]
    OptionSettings=(Difficulty=None,DayTimeSpeedRate=1.000000,ServerName="Pal Hollow",ServerDescription="",AdminPassword="§P§",ServerPassword="",PublicPort=8211,RCONEnabled=True,RCONPort=25575)
    """,
    P=SAFE(16),
)
shape(
    "terraria-dedicated-serverconfig-password-line-with-motd",
    """
    #Terraria dedicated server config
    world=/home/terraria/.local/share/Terraria/Worlds/Calamity.wld
    maxplayers=8
    port=7777
    password=§P§
    motd=Please don't dig under spawn
    """,
    P=HUMAN,
)
shape(
    "seven-days-to-die-serveradmin-xml-and-telnet",
    """
    <ServerSettings>
      <property name="ServerName" value="Zed Island"/>
      <property name="ServerPassword" value=""/>
      <property name="TelnetEnabled" value="true"/>
      <property name="TelnetPassword" value="§P§"/>
      <property name="WebDashboardEnabled" value="false"/>
    </ServerSettings>
    """,
    P=SAFE(14),
)
shape(
    "minecraft-velocity-forwarding-secret-file",
    """
    $ cat velocity/forwarding.secret
    §P§
    $ grep -n secret paper-1/config/paper-global.yml
    112:    secret: '§P§'
    """,
    P=AN(12),
)
shape(
    "rust-oxide-rcon-websocket-url",
    """
    # webrcon client bookmark
    ws://§pub§:28016/§P§
    """,
    P=SAFE(18),
)
shape(
    "satisfactory-server-api-bearer-curl",
    """
    curl -k https://§pub§:7777/api/v1 -H "Content-Type: application/json" \\
      -H "Authorization: Bearer §P§" \\
      -d '{"function":"QueryServerState"}'
    """,
    P=cat("ewoJInBsIjogIkFQSVRva2VuIgp9.", HXU(128)),
)
shape(
    "steam-web-api-key-curl-getplayersummaries",
    """
    curl "https://api.steampowered.com/ISteamUser/GetPlayerSummaries/v2/?key=§P§&steamids=7656119§n3§§n3§"
    """,
    P=HXU(32),
)
shape(
    "steamcmd-login-runscript-password",
    """
    // update_server.txt -- steamcmd +runscript update_server.txt
    @ShutdownOnFailedCommand 1
    force_install_dir /srv/arma-reforger
    login acme_builds §P§
    app_update 1874900 validate
    quit
    """,
    P=HUMAN,
)
shape(
    "playfab-title-secret-key-unity-editor-prefs",
    """
    // Assets/PlayFabSdk/Shared/Public/Resources/PlayFabSharedSettings.asset
    TitleId: 9A§n2§F
    DeveloperSecretKey: §P§
    RequestType: 0
    RequestTimeout: 2000
    """,
    P=UP(52),
)
shape(
    "epic-online-services-client-secret-defaultengine-ini",
    """
    [/Script/OnlineSubsystemEOS.EOSSettings]
    +Artifacts=(ArtifactName="Live",ClientId="xyza7891§hex12§",ClientSecret="§P§",ProductId="§hex12§§hex8§",SandboxId="§hex12§§hex8§",DeploymentId="§hex12§§hex8§")
    bUseEAS=True
    """,
    P=UL(43),
)
shape(
    "photon-pun-app-id-and-custom-auth-secret",
    """
    // PhotonServerSettings.asset
    AppIdRealtime: §uuid§
    FixedRegion: eu
    // Custom auth webhook shared secret (server side, copied here "temporarily")
    customAuthSecret: §P§
    """,
    P=AN(32),
)
shape(
    "gmod-server-cfg-sv-setsteamaccount",
    """
    // garrysmod/cfg/server.cfg
    hostname "Sandbox | Acme"
    sv_setsteamaccount §P§
    rcon_password "§Q§"
    """,
    P=HXU(32),
    Q=SAFE(14),
)
shape(
    "factorio-server-settings-json-token-field",
    """
    {
      "name": "Belt Enjoyers",
      "visibility": {"public": true, "lan": true},
      "username": "acme_factory",
      "password": "",
      "token": "§P§",
      "game_password": "",
      "max_players": 12
    }
    """,
    P=HX(30),
)
shape(
    "discord-bot-mod-config-json-token",
    """
    // DiscordIntegration-Mod config/Discord-Integration.toml (rendered as JSON by the panel)
    {"general": {"botToken": "§P§", "botChannel": "§n3§§n3§§n3§"}, "messages": {"serverStarted": "Server up!"}}
    """,
    P=DISCORD_BOT,
)
shape(
    "unity-cloud-build-service-account-secret-env",
    """
    # Unity Cloud Build -> Advanced settings -> Environment variables
    UNITY_SERVICE_ACCOUNT_KEY_ID=§uuid§
    UNITY_SERVICE_ACCOUNT_SECRET=§P§
    """,
    P=UL(32),
)
shape(
    "pterodactyl-panel-client-api-key-curl",
    """
    curl "https://panel.games.example/api/client/servers/§hex8§/command" \\
      -H "Authorization: Bearer §P§" -H "Accept: Application/vnd.pterodactyl.v1+json" \\
      -X POST -d '{"command":"say restart in 5 min"}'
    """,
    P=cat("ptlc_", AN(43)),
)

# ---- mobile builds -----------------------------------------------------------------------------------------------------

shape(
    "fastlane-matchfile-and-env-match-password",
    """
    # fastlane/.env.default
    MATCH_GIT_URL=git@github.com:acme/ios-certificates.git
    MATCH_PASSWORD=§P§
    FASTLANE_USER=ios-ci@acme.example
    FASTLANE_APPLE_APPLICATION_SPECIFIC_PASSWORD=§Q§
    """,
    P=HUMAN,
    Q=apple_pw,
)
shape(
    "fastlane-fastfile-upload-to-play-json-key-data-inline",
    """
    lane :beta do
      gradle(task: "bundle", build_type: "Release")
      upload_to_play_store(
        track: "beta",
        json_key_data: '{"type":"service_account","project_id":"api-§n3§","private_key":"-----BEGIN PRIVATE KEY-----\\n§P§\\n..."}'
      )
    end
    """,
    P=lambda r: pem_first(r, "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC"),
)
shape(
    "xcode-scheme-xml-environment-variable-api-key",
    """
    <LaunchAction buildConfiguration = "Debug" launchStyle = "0">
       <EnvironmentVariables>
          <EnvironmentVariable
             key = "REVENUECAT_SECRET_KEY"
             value = "§P§"
             isEnabled = "YES">
          </EnvironmentVariable>
       </EnvironmentVariables>
    </LaunchAction>
    """,
    P=cat("sk_", AN(32)),
)
shape(
    "info-plist-key-string-pair-secret",
    """
    <key>CFBundleShortVersionString</key>
    <string>4.§n§.0</string>
    <key>AlgoliaAdminAPIKey</key>
    <string>§P§</string>
    <key>UIApplicationSceneManifest</key>
    """,
    P=HX(32),
)
shape(
    "xcconfig-secret-with-slash-escape",
    """
    // Config/Release.xcconfig
    API_BASE_URL = https:/$()/api.acme.example
    MIXPANEL_API_SECRET = §P§
    """,
    P=HX(32),
)
shape(
    "expo-eas-json-build-env-literal-secret",
    """
    {
      "build": {
        "production": {
          "env": {
            "EXPO_PUBLIC_API_URL": "https://api.acme.example",
            "SENTRY_AUTH_TOKEN": "§P§"
          }
        }
      }
    }
    """,
    P=cat("sntrys_", B64U(96)),
)
shape(
    "flutter-run-dart-define-history",
    """
    flutter run --flavor prod --dart-define=SUPABASE_URL=https://§hex8§xyzab.supabase.co \\
      --dart-define=SUPABASE_SERVICE_ROLE=§P§
    """,
    P=lambda r: jwt(r, {"iss": "supabase", "role": "service_role", "iat": 1767225600, "exp": 2082758400}),
)
shape(
    "capacitor-config-ts-server-auth-header",
    """
    const config: CapacitorConfig = {
      appId: 'com.acme.field',
      appName: 'Field',
      plugins: {
        CapacitorHttp: { enabled: true },
      },
      server: { headers: { 'X-Api-Key': '§P§' } },
    };
    """,
    P=AN(40),
)
shape(
    "android-local-properties-signing-and-maps-key",
    """
    ## This file must *NOT* be checked into Version Control Systems,
    sdk.dir=/Users/ci/Library/Android/sdk
    RELEASE_STORE_PASSWORD=§P§
    RELEASE_KEY_ALIAS=upload
    """,
    P=HUMAN,
)
shape(
    "sentry-properties-auth-token-mobile",
    """
    # ios/sentry.properties
    defaults.url=https://sentry.io/
    defaults.org=acme
    defaults.project=field-ios
    auth.token=§P§
    cli.executable=node_modules/@sentry/cli/bin/sentry-cli
    """,
    P=cat("sntryu_", HX(64)),
)
shape(
    "codepush-appcenter-deployment-key-strings-xml",
    """
    <resources>
        <string name="app_name">Field</string>
        <string moduleConfig="true" name="CodePushDeploymentKey">§dep§</string>
        <string name="appcenter_api_token">§P§</string>
    </resources>
    """,
    dep=lambda r: ul(r, 32) + "-" + uid(r)[:8],
    P=HX(40),
)
shape(
    "agconnect-services-json-client-secret",
    """
    {
      "agcgw": {"url": "connect-dre.dbankcloud.cn"},
      "client": {
        "cp_id": "§n3§§n3§",
        "product_id": "§n3§§n3§",
        "client_id": "§n3§§n3§§n3§",
        "client_secret": "§P§",
        "app_id": "§n3§§n3§",
        "package_name": "com.acme.field"
      }
    }
    """,
    P=HXU(64),
)
shape(
    "app-store-connect-api-key-json-for-fastlane",
    """
    {
      "key_id": "§kid§",
      "issuer_id": "§uuid§",
      "key": "-----BEGIN PRIVATE KEY-----\\n§P§\\nAgEGCCqGSM49AwEHBHkwdwIBAQQg\\n-----END PRIVATE KEY-----",
      "in_house": false
    }
    """,
    kid=UP(10),
    P=lambda r: pem_first(r, P8_HEAD),
)
shape(
    "gradle-init-script-artifactory-credentials",
    """
    // ~/.gradle/init.d/artifactory.gradle
    allprojects {
        repositories {
            maven {
                url "https://acme.jfrog.io/artifactory/libs-release"
                credentials {
                    username = "android-ci"
                    password = "§P§"
                }
            }
        }
    }
    """,
    P=cat("cmVmdGtuOjAxOjE3", AN(48)),
)
shape(
    "firebase-appdistribution-cli-token-flag-ci-log",
    """
    + firebase appdistribution:distribute app-release.apk --app 1:§n3§§n3§:android:§hex12§ \\
        --groups qa --token "§P§"
    i  uploading binary...
    ✔  uploaded new release 4.§n§.0 (§n3§) successfully!
    """,
    P=cat("1//0", UL(99)),
)
shape(
    "react-native-config-env-production-file",
    """
    # .env.production (react-native-config)
    API_URL=https://api.acme.example
    ONESIGNAL_APP_ID=§uuid§
    ONESIGNAL_REST_API_KEY=§P§
    """,
    P=cat("os_v2_app_", LO(90)),
)

# ---- payments and fintech ----------------------------------------------------------------------------------------------

shape(
    "stripe-go-client-new-restricted-key",
    """
    sc := &client.API{}
    sc.Init("§P§", nil) // restricted key: charges read, refunds write
    params := &stripe.RefundParams{Charge: stripe.String(chargeID)}
    """,
    P=STRIPE_RK,
)
shape(
    "stripe-cli-listen-forward-output-webhook-secret",
    """
    $ stripe listen --forward-to localhost:4242/webhook
    > Ready! You are using Stripe API Version [2026-01-28.clover]. Your webhook signing secret is §P§ (^C to quit)
    2026-03-02 10:11:09   --> checkout.session.completed [evt_§an24§]
    """,
    P=STRIPE_WH,
    an24=AN(24),
)
shape(
    "square-python-client-access-token-kwarg",
    """
    from square import Square
    from square.environment import SquareEnvironment

    client = Square(environment=SquareEnvironment.PRODUCTION, token="§P§")
    result = client.locations.list()
    """,
    P=cat("EAAA", UL(60)),
)
shape(
    "plaid-node-configuration-headers-secret",
    """
    const configuration = new Configuration({
      basePath: PlaidEnvironments.production,
      baseOptions: {
        headers: {
          'PLAID-CLIENT-ID': '§cid§',
          'PLAID-SECRET': '§P§',
        },
      },
    });
    """,
    cid=HX(24),
    P=HX(30),
)
shape(
    "mollie-php-set-api-key-live",
    """
    <?php
    $mollie = new \\Mollie\\Api\\MollieApiClient();
    $mollie->setApiKey("§P§");
    $payment = $mollie->payments->create(["amount" => ["currency" => "EUR", "value" => "24.95"]]);
    """,
    P=cat("live_", AN(30)),
)
shape(
    "checkout-com-dotnet-sdk-builder-secret-key",
    """
    ICheckoutApi api = CheckoutSdk.Builder().StaticKeys()
        .PublicKey("pk_sbox_§pk§")
        .SecretKey("§P§")
        .Environment(Environment.Sandbox)
        .Build();
    """,
    pk=LO(26),
    P=cat("sk_sbox_", LO(26)),
)
shape(
    "paypal-rest-oauth-curl-client-credentials-basic",
    """
    curl -v https://api-m.paypal.com/v1/oauth2/token \\
      -H "Content-Type: application/x-www-form-urlencoded" \\
      -u "§cid§:§P§" \\
      -d "grant_type=client_credentials"
    """,
    cid=cat("A", UL(79)),
    P=cat("E", UL(79)),
)
shape(
    "razorpay-ruby-setup-key-secret",
    """
    require "razorpay"
    Razorpay.setup("rzp_live_§kid§", "§P§")
    order = Razorpay::Order.create(amount: 50000, currency: "INR", receipt: "rcpt_§n3§")
    """,
    kid=AN(14),
    P=AN(24),
)
shape(
    "paystack-flask-config-secret-key",
    """
    class ProdConfig(BaseConfig):
        PAYSTACK_SECRET_KEY = "§P§"
        PAYSTACK_PUBLIC_KEY = "pk_live_§pk§"
        CALLBACK_URL = "https://shop.acme.ng/paystack/callback"
    """,
    pk=HX(40),
    P=cat("sk_live_", HX(40)),
)
shape(
    "flutterwave-v3-env-secret-and-encryption-key",
    """
    FLW_PUBLIC_KEY=FLWPUBK-§pk§-X
    FLW_SECRET_KEY=§P§
    FLW_ENCRYPTION_KEY=§Q§
    """,
    pk=HX(32),
    P=cat("FLWSECK-", HX(32), "-X"),
    Q=HX(24),
)
shape(
    "mercadopago-java-access-token-set",
    """
    MercadoPagoConfig.setAccessToken("§P§");
    PreferenceClient client = new PreferenceClient();
    """,
    P=cat("APP_USR-", DG(16), "-", DG(6), "-", HX(32), "-", DG(9)),
)
shape(
    "gocardless-pro-python-client-access-token",
    """
    import gocardless_pro
    client = gocardless_pro.Client(access_token="§P§", environment="live")
    mandates = client.mandates.list(params={"customer": "CU§cu§"}).records
    """,
    P=cat("live_", UL(40)),
    cu=UP(12),
)
shape(
    "wise-api-token-personal-curl-profiles",
    """
    $ curl -s https://api.wise.com/v2/profiles -H "Authorization: Bearer §P§" | jq '.[].type'
    "PERSONAL"
    "BUSINESS"
    """,
    P=UUID,
)
shape(
    "coinbase-cdp-api-key-json-file",
    """
    {
      "name": "organizations/§uuid§/apiKeys/§uuid2§",
      "privateKey": "-----BEGIN EC PRIVATE KEY-----\\n§P§\\nAwEHoUQDQgAE\\n-----END EC PRIVATE KEY-----\\n"
    }
    """,
    P=lambda r: pem_first(r, EC_HEAD),
)
shape(
    "lemonsqueezy-laravel-config-api-key-jwt",
    """
    // config/lemon-squeezy.php
    return [
        'api_key' => env('LEMON_SQUEEZY_API_KEY', '§P§'),
        'store' => env('LEMON_SQUEEZY_STORE', '§n3§'),
    ];
    """,
    P=lambda r: jwt(
        r,
        {
            "aud": "94d59cef-dbb8-4ea5-b178-d2540fcd6919",
            "jti": hx(r, 64),
            "sub": str(r.randint(10000, 99999)),
        },
        "RS256",
    ),
)
shape(
    "xendit-node-sdk-secret-key",
    """
    import { Xendit } from 'xendit-node';
    const xenditClient = new Xendit({ secretKey: '§P§' });
    const { Invoice } = xenditClient;
    """,
    P=cat("xnd_production_", AN(60)),
)
shape(
    "midtrans-snap-python-server-key",
    """
    snap = midtransclient.Snap(
        is_production=True,
        server_key='§P§',
        client_key='Mid-client-§ck§',
    )
    """,
    ck=AN(16),
    P=cat("Mid-server-", UL(24)),
)
shape(
    "iyzipay-options-api-secret-key",
    """
    Options options = new Options();
    options.setApiKey("§kid§");
    options.setSecretKey("§P§");
    options.setBaseUrl("https://api.iyzipay.com");
    """,
    kid=AN(32),
    P=AN(32),
)
shape(
    "yookassa-configuration-account-secret-key",
    """
    from yookassa import Configuration, Payment
    Configuration.account_id = '§n3§§n§'
    Configuration.secret_key = '§P§'
    """,
    P=cat("live_", UL(43)),
)
shape(
    "truelayer-client-secret-appsettings",
    """
    "TrueLayer": {
      "ClientId": "acme-§hex8§",
      "ClientSecret": "§P§",
      "UseSandbox": false,
      "Payments": { "SigningKey": { "KeyId": "§uuid§" } }
    }
    """,
    P=UUID,
)
shape(
    "adyen-webhook-hmac-key-node-validator",
    """
    const { hmacValidator } = require('@adyen/api-library');
    const validator = new hmacValidator();
    const HMAC_KEY = "§P§";
    if (!validator.validateHMAC(notificationRequestItem, HMAC_KEY)) throw new Error("bad hmac");
    """,
    P=HXU(64),
)
shape(
    "braintree-php-configuration-private-key",
    """
    $gateway = new Braintree\\Gateway([
        'environment' => 'production',
        'merchantId' => '§mid§',
        'publicKey' => '§pk§',
        'privateKey' => '§P§'
    ]);
    """,
    mid=LO(16),
    pk=LO(16),
    P=HX(32),
)
shape(
    "chargebee-ruby-configure-api-key",
    """
    ChargeBee.configure(site: "acme", api_key: "§P§")
    result = ChargeBee::Subscription.list(limit: 5)
    """,
    P=cat("live_", AN(34)),
)
shape(
    "recurly-client-api-key-java",
    """
    final String apiKey = "§P§";
    final Client client = new Client(apiKey);
    Pager<Account> accounts = client.listAccounts(new QueryParams());
    """,
    P=HX(32),
)
shape(
    "marqeta-jit-gateway-basic-auth-yaml",
    """
    jit_funding:
      endpoint: https://gateway.acme-card.example/jit
      basic_auth_username: marqeta_jit
      basic_auth_password: §P§
    """,
    P=SAFE(24),
)
shape(
    "lithic-python-client-api-key-argument",
    """
    from lithic import Lithic
    client = Lithic(api_key="§P§", environment="production")
    card = client.cards.create(type="VIRTUAL")
    """,
    P=UUID,
)
shape(
    "dwolla-client-key-secret-ruby",
    """
    $dwolla = DwollaV2::Client.new(
      key: "§kid§",
      secret: "§P§",
      environment: :production
    )
    """,
    kid=AN(50),
    P=AN(50),
)
shape(
    "modern-treasury-basic-org-id-api-key",
    """
    curl --request GET \\
      -u §uuid§:§P§ \\
      --url https://app.moderntreasury.com/api/payment_orders?per_page=5
    """,
    P=cat("live-", AN(64)),
)
shape(
    "ccxt-exchange-kraken-secret-base64",
    """
    exchange = ccxt.kraken({
        "apiKey": "§kid§",
        "secret": "§P§",
        "enableRateLimit": True,
    })
    """,
    kid=lambda r: b64(r, 42),
    P=lambda r: b64(r, 64),
)
shape(
    "alpaca-trade-api-env-secret",
    """
    # .env for the trading bot
    APCA_API_BASE_URL=https://api.alpaca.markets
    APCA_API_KEY_ID=AK§akid§
    APCA_API_SECRET_KEY=§P§
    """,
    akid=UP(18),
    P=AN(40),
)
shape(
    "swift-fin-mt-sftp-transfer-password-bank-onboarding",
    """
    Host:      sftp.h2h.bank.example
    Port:      22
    Username:  ACMECORP_H2H
    Password:  §P§
    Directory: /in/pain001
    """,
    P=SYM(16),
)

# ---- notebooks -------------------------------------------------------------------------------------------------------


@cred("ipynb-json-code-cell-source-lines-os-environ-assignment")
def _nb_cell(rng):
    v = cat("sk-or-v1-", HX(64))(rng)
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": 3,
                "id": hx(rng, 8),
                "metadata": {},
                "outputs": [],
                "source": [
                    "import os\n",
                    f'os.environ["OPENROUTER_API_KEY"] = "{v}"\n',
                    'llm = ChatOpenAI(model="anthropic/claude-sonnet-4.5", base_url="https://openrouter.ai/api/v1")',
                ],
            }
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return out(json.dumps(nb, indent=1), v)


@cred("ipynb-stream-output-printed-connection-string")
def _nb_stream(rng):
    pw = safe(rng, 18)
    cell = {
        "cell_type": "code",
        "execution_count": 7,
        "metadata": {},
        "outputs": [
            {
                "name": "stdout",
                "output_type": "stream",
                "text": [
                    "engine created\n",
                    f"mssql+pyodbc://ds_team:{pw}@sql-dw.corp.example:1433/Sales?driver=ODBC+Driver+18+for+SQL+Server\n",
                ],
            }
        ],
        "source": ["engine = create_engine(conn_str)\n", "print('engine created'); print(conn_str)"],
    }
    return out(json.dumps(cell, indent=1), pw)


@cred("ipynb-execute-result-dataframe-html-with-api-key-column")
def _nb_html(rng):
    v = cat("tvly-", AN(32))(rng)
    html = (
        '<table border="1" class="dataframe">\n<thead><tr><th></th><th>provider</th><th>key</th></tr></thead>\n'
        f"<tbody><tr><th>0</th><td>tavily</td><td>{v}</td></tr></tbody>\n</table>"
    )
    cell = {
        "output_type": "execute_result",
        "execution_count": 12,
        "data": {
            "text/html": html.splitlines(keepends=True),
            "text/plain": ["  provider  key\n", f"0   tavily  {v}"],
        },
        "metadata": {},
    }
    return out(json.dumps(cell, indent=1), v)


shape(
    "databricks-notebook-source-py-magic-and-token",
    """
    # Databricks notebook source
    # MAGIC %md
    # MAGIC ## Pull from the vendor API

    # COMMAND ----------

    api_token = "§P§"  # TODO: dbutils.secrets.get("vendor", "token")
    resp = requests.get("https://api.vendor.example/v2/export", headers={"X-Auth": api_token})

    # COMMAND ----------
    """,
    P=cat("dapi", HX(32)),
)
shape(
    "zeppelin-note-json-paragraph-jdbc-password",
    """
    {"paragraphs":[{"text":"%jdbc(postgres)\\nSELECT 1","config":{}},{"text":"%sh\\nexport PGPASSWORD=§P§\\npsql -h §host§ -U zeppelin -c '\\\\dt'","status":"FINISHED","id":"paragraph_§n3§§n3§_§n3§"}],"name":"ops/db-check","id":"2K§up§"}
    """,
    P=HUMAN,
    up=UP(7),
)
shape(
    "marimo-notebook-py-cell-literal-token",
    """
    import marimo

    app = marimo.App(width="medium")

    @app.cell
    def _():
        NOTION_TOKEN = "§P§"
        return (NOTION_TOKEN,)
    """,
    P=cat("ntn_", AN(46)),
)
shape(
    "quarto-qmd-python-chunk-secret",
    """
    ---
    title: "Weekly churn"
    format: html
    ---

    ```{python}
    #| echo: false
    import mixpanel
    mp = mixpanel.Mixpanel(token="§tok§")
    SERVICE_ACCOUNT_SECRET = "§P§"
    ```
    """,
    tok=HX(32),
    P=AN(32),
)
shape(
    "colab-cell-output-getpass-echoed-by-print",
    """
    [ ] from getpass import getpass
        hf = getpass("HF token: ")
        print(f"using {hf}")

    HF token: ··········
    using §P§
    """,
    P=HF,
)
shape(
    "rmarkdown-chunk-sys-setenv-key",
    """
    ```{r setup, include=FALSE}
    knitr::opts_chunk$set(echo = TRUE)
    Sys.setenv(OPENAI_API_KEY = "§P§")
    library(ellmer)
    ```
    """,
    P=OPENAI,
)
shape(
    "hex-project-yaml-export-cell-with-secret",
    """
    cells:
      - cellType: CODE
        cellId: §uuid§
        config:
          source: |-
            import requests
            r = requests.get(url, auth=("analytics", "§P§"))
            df = pd.DataFrame(r.json())
    """,
    P=SAFE(20),
)
shape(
    "jupyter-server-config-py-token-and-password",
    """
    # ~/.jupyter/jupyter_server_config.py
    c.ServerApp.ip = '0.0.0.0'
    c.ServerApp.open_browser = False
    c.IdentityProvider.token = '§P§'
    c.ServerApp.port = 8888
    """,
    P=HX(48),
)

# ---- agent frameworks and traces ----------------------------------------------------------------------------------------


@cred("otel-span-attributes-gen-ai-tool-call-arguments-escaped-json")
def _otel_tool_args(rng):
    pw = safe(rng, 20)
    args = jc({"host": "db.internal", "user": "etl", "password": pw, "query": "select 1"})
    span = {
        "traceId": rng.randbytes(16).hex(),
        "spanId": rng.randbytes(8).hex(),
        "name": "execute_tool run_sql",
        "kind": "SPAN_KIND_INTERNAL",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "run_sql"}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
        ],
    }
    return out(jd(span), pw)


@cred("otel-collector-debug-exporter-span-attribute-input-messages")
def _otel_debug(rng):
    key = GROQ(rng)
    msg = jc(
        [{"role": "user", "parts": [{"type": "text", "content": f"set GROQ_API_KEY={key} in the worker"}]}]
    )
    text = f"""
    Span #0
        Trace ID       : {rng.randbytes(16).hex()}
        Parent ID      :
        ID             : {rng.randbytes(8).hex()}
        Name           : chat llama-3.3-70b
        Kind           : Client
    Attributes:
         -> gen_ai.system: Str(groq)
         -> gen_ai.input.messages: Str({msg})
         -> gen_ai.usage.input_tokens: Int({rng.randint(30, 900)})
    """
    return out(text, key)


@cred("langchain-astream-events-on-tool-start-input")
def _lc_events(rng):
    v = cat("lin_api_", AN(40))(rng)
    ev = {
        "event": "on_tool_start",
        "name": "linear_create_issue",
        "run_id": uid(rng),
        "data": {"input": {"title": "Rotate keys", "api_key": v, "team": "OPS"}},
        "metadata": {"langgraph_node": "tools", "langgraph_step": 3},
    }
    return out(repr(ev), v)


@cred("langgraph-checkpoint-channel-values-messages-tool-message")
def _lg_ckpt(rng):
    pw = human(rng)
    text = f"""
    StateSnapshot(values={{'messages': [HumanMessage(content='connect to the nas and list shares', id='{uid(rng)}'), AIMessage(content='', tool_calls=[{{'name': 'smb_list', 'args': {{'host': 'nas.lan', 'username': 'backup', 'password': '{pw}'}}, 'id': 'call_{an(rng, 24)}', 'type': 'tool_call'}}])]}}, next=('tools',), config={{'configurable': {{'thread_id': '{uid(rng)}', 'checkpoint_ns': '', 'checkpoint_id': '{uid(rng)}'}}}})
    """
    return out(text, pw)


@cred("crewai-verbose-agent-tool-input-block")
def _crew(rng):
    v = cat("fc-", HX(32))(rng)
    text = f"""
    # Agent: Senior Research Analyst
    ## Thought: I need to crawl the competitor's pricing page.
    ## Using tool: FirecrawlScrapeWebsiteTool
    ## Tool Input:
    "{{\\"url\\": \\"https://competitor.example/pricing\\", \\"api_key\\": \\"{v}\\"}}"
    ## Tool Output:
    # Pricing  Starter $19 ...
    """
    return out(text, v)


@cred("autogen-agentchat-function-call-event-arguments-string")
def _autogen(rng):
    v = cat("xai-", AN(80))(rng)
    args = jc({"provider": "xai", "api_key": v})
    text = (
        "---------- ToolCallRequestEvent (assistant) ----------\n"
        f"[FunctionCall(id='call_{an(rng, 24)}', arguments='{args}', name='configure_provider')]\n"
        "---------- ToolCallExecutionEvent (assistant) ----------\n"
        "[FunctionExecutionResult(content='ok', name='configure_provider', call_id='call_x', is_error=False)]\n"
    )
    return text, (v,)


@cred("openai-agents-sdk-trace-function-span-input")
def _oa_agents(rng):
    pw = safe(rng, 16)
    span = {
        "object": "trace.span",
        "id": "span_" + hx(rng, 24),
        "trace_id": "trace_" + hx(rng, 32),
        "span_data": {
            "type": "function",
            "name": "ssh_exec",
            "input": jc({"host": "10.2.0.9", "user": "root", "password": pw, "cmd": "uptime"}),
            "output": " 10:11:02 up 41 days,  load average: 0.08",
        },
    }
    return out(jd(span), pw)


@cred("mcp-jsonrpc-tools-call-result-content-text-env-file")
def _mcp_result(rng):
    key = cat("pplx-", AN(48))(rng)
    msg = {
        "jsonrpc": "2.0",
        "id": rng.randint(2, 90),
        "result": {
            "content": [
                {"type": "text", "text": f"NODE_ENV=production\nPERPLEXITY_API_KEY={key}\nPORT=3000\n"}
            ],
            "isError": False,
        },
    }
    return out(jc(msg), key)


@cred("mcp-streamable-http-sse-data-line-initialize-with-auth-echo")
def _mcp_sse(rng):
    tok = GHO(rng)
    data = jc(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": "2025-06-18",
                "serverInfo": {"name": "gh-proxy", "version": "0.4.1"},
                "instructions": f"Authenticated as octo-bot using {tok}",
            },
        }
    )
    text = f"""
    HTTP/1.1 200 OK
    Content-Type: text/event-stream
    Mcp-Session-Id: {uid(rng)}

    event: message
    data: {data}

    """
    return out(text, tok)


shape(
    "semantic-kernel-csharp-add-azure-openai-chat-completion",
    """
    var builder = Kernel.CreateBuilder();
    builder.AddAzureOpenAIChatCompletion(
        deploymentName: "gpt-4.1",
        endpoint: "https://acme-oai-eastus2.openai.azure.com/",
        apiKey: "§P§");
    Kernel kernel = builder.Build();
    """,
    P=HX(32),
)
shape(
    "llamaindex-settings-llm-and-embed-keys",
    """
    from llama_index.core import Settings
    from llama_index.llms.mistralai import MistralAI
    from llama_index.embeddings.voyageai import VoyageEmbedding

    Settings.llm = MistralAI(model="mistral-large-latest", api_key="§P§")
    Settings.embed_model = VoyageEmbedding(model_name="voyage-3", voyage_api_key="§Q§")
    """,
    P=AN(32),
    Q=cat("pa-", UL(43)),
)
shape(
    "haystack-pipeline-yaml-secret-token-type-token",
    """
    components:
      generator:
        type: haystack.components.generators.chat.openai.OpenAIChatGenerator
        init_parameters:
          model: gpt-4o-mini
          api_key:
            type: token
            token: §P§
            strict: true
    """,
    P=OPENAI_SVC,
)
shape(
    "dspy-configure-lm-api-key-kwarg",
    """
    import dspy
    lm = dspy.LM("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", api_key="§P§")
    dspy.configure(lm=lm)
    """,
    P=cat("tgp_v1_", UL(43)),
)
shape(
    "pydantic-ai-agent-provider-api-key",
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.deepseek import DeepSeekProvider

    model = OpenAIChatModel("deepseek-chat", provider=DeepSeekProvider(api_key="§P§"))
    agent = Agent(model, instructions="Be terse.")
    """,
    P=cat("sk-", HX(32)),
)
shape(
    "smolagents-code-agent-step-log-python-code",
    """
    ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ Step 2 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
     ─ Executing parsed code: ──────────────────────────────────────────────────────
      import requests
      resp = requests.get("https://serpapi.com/search.json", params={"q": "acme layoffs", "api_key": "§P§"})
      print(resp.status_code)
     ──────────────────────────────────────────────────────────────────────────────
    Execution logs:
    200
    """,
    P=HX(64),
)
shape(
    "letta-agent-core-memory-block-human-with-password",
    """
    Core memory block "human" (limit 5000):
    Name: Ravi. Works in finance ops. Prefers short answers.
    Told me his Xero login is ravi@acme.example / §P§ and asked me to remember it for the month-end script.
    """,
    P=HUMAN,
)
shape(
    "vercel-ai-sdk-create-openai-compatible-api-key",
    """
    import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

    const fireworks = createOpenAICompatible({
      name: 'fireworks',
      apiKey: '§P§',
      baseURL: 'https://api.fireworks.ai/inference/v1',
    });
    """,
    P=cat("fw_", AN(24)),
)
shape(
    "google-adk-agent-env-and-session-event-state",
    """
    Event(author='billing_agent', invocation_id='e-§uuid§', actions=EventActions(state_delta={'stripe_key': '§P§', 'step': 'refund'}), id='§hex8§')
    """,
    P=STRIPE_SK,
)
shape(
    "strands-agents-bedrock-model-boto-session-keys",
    """
    session = boto3.Session(
        aws_access_key_id="AKIA§akid§",
        aws_secret_access_key="§P§",
        region_name="us-west-2",
    )
    agent = Agent(model=BedrockModel(model_id="us.anthropic.claude-sonnet-4-5", boto_session=session))
    """,
    akid=lambda r: chars(r, _B32S, 16),
    P=AWS_SECRET,
)
shape(
    "dify-dsl-yaml-environment-variables-secret-value",
    """
    app:
      mode: workflow
      name: ticket-triage
    workflow:
      environment_variables:
        - name: zendesk_token
          value_type: secret
          value: §P§
          id: §uuid§
    """,
    P=AN(40),
)
shape(
    "flowise-chatflow-export-credential-inline-data",
    """
    {"nodes":[{"id":"chatAnthropic_0","data":{"name":"chatAnthropic","inputs":{"modelName":"claude-sonnet-4-5","temperature":0.3},"credential":"","inputParams":[],"anthropicApiKey":"§P§"}}],"edges":[]}
    """,
    P=ANTHROPIC,
)
shape(
    "langflow-flow-json-node-template-api-key-value",
    """
    "template": {
      "api_key": {
        "display_name": "Cohere API Key",
        "password": true,
        "load_from_db": false,
        "value": "§P§",
        "type": "str"
      },
      "model": {"value": "command-r-plus"}
    }
    """,
    P=AN(40),
)
shape(
    "n8n-workflow-http-request-node-header-parameters",
    """
    {
      "parameters": {
        "url": "https://api.hubapi.com/crm/v3/objects/contacts",
        "sendHeaders": true,
        "headerParameters": {"parameters": [{"name": "Authorization", "value": "Bearer §P§"}]}
      },
      "name": "HubSpot contacts",
      "type": "n8n-nodes-base.httpRequest",
      "typeVersion": 4.2
    }
    """,
    P=cat("pat-eu1-", UUID),
)
shape(
    "promptflow-connection-yaml-api-key",
    """
    $schema: https://azuremlschemas.azureedge.net/promptflow/latest/AzureOpenAIConnection.schema.json
    name: aoai_prod
    type: azure_open_ai
    api_key: "§P§"
    api_base: "https://acme-aoai.openai.azure.com/"
    api_type: azure
    """,
    P=HX(32),
)
shape(
    "logfire-console-span-with-attributes-token",
    """
    10:42:07.118 Calling tool fetch_invoices
                 │ args={'account': 'ACME-§n3§', 'token': '§P§'}
    10:42:07.904   GET api.xero.com/api.xro/2.0/Invoices
    """,
    P=lambda r: jwt(
        r,
        {
            "nbf": 1767225600,
            "exp": 1767227400,
            "iss": "https://identity.xero.com",
            "client_id": hx(r, 32).upper(),
        },
        "RS256",
    ),
)
shape(
    "langfuse-trace-observation-input-json-credentials",
    """
    {"id":"§uuid§","type":"SPAN","name":"sftp_upload","traceId":"§trace§","input":{"host":"sftp.partner.example","username":"acme_drop","password":"§P§","path":"/in/"},"output":{"uploaded":3},"startTime":"§ts§"}
    """,
    P=SAFE(18),
)
shape(
    "weave-call-inputs-printed-repr",
    """
    >>> call = client.get_call("§uuid§")
    >>> call.inputs
    {'self': <weave.Object ...>, 'query': 'rotate the elastic password', 'es_password': '§P§'}
    """,
    P=AN(20),
)
shape(
    "mastra-agent-tool-execute-console-log",
    """
    [Mastra] tool-call sendEmail {"to":"cfo@acme.example","smtp":{"host":"smtp.sendgrid.net","user":"apikey","pass":"§P§"}}
    [Mastra] tool-result sendEmail {"messageId":"<§hex12§@acme.example>"}
    """,
    P=SENDGRID,
)
shape(
    "goose-recipe-yaml-extension-env-literal",
    """
    version: 1.0.0
    title: triage-sentry
    extensions:
      - type: stdio
        name: sentry
        cmd: uvx
        args: [mcp-server-sentry, --auth-token, §P§]
        timeout: 300
    """,
    P=cat("sntryu_", HX(64)),
)
shape(
    "cline-task-ui-messages-json-command-ask",
    """
    [{"ts":1767§n3§000,"type":"ask","ask":"command","text":"export TWILIO_AUTH_TOKEN=§P§ && node scripts/send-test-sms.js"},{"ts":1767§n3§900,"type":"say","say":"command_output","text":"queued SM§hex12§"}]
    """,
    P=TWILIO_TOKEN,
)
shape(
    "cursor-agent-terminal-block-in-chat-export",
    """
    **Cursor Agent** ran a terminal command:

    ```
    $ curl -X POST https://api.resend.com/emails -H 'Authorization: Bearer §P§' -H 'Content-Type: application/json' -d @mail.json
    {"id":"§uuid§"}
    ```
    """,
    P=cat("re_", AN(8), "_", AN(24)),
)
shape(
    "aider-chat-history-md-run-output",
    """
    > /run cat .env.local

    DATABASE_URL=postgres://postgres.§lo§:§P§@aws-0-eu-central-1.pooler.supabase.com:6543/postgres
    NEXT_PUBLIC_SITE_URL=http://localhost:3000

    > Add the output to the chat? (Y)es/(N)o [Yes]: n
    """,
    lo=LO(20),
    P=SAFE(20),
)
shape(
    "openhands-event-stream-cmd-run-action",
    """
    {"id": §n§, "source": "agent", "action": "run", "args": {"command": "git remote set-url origin https://x-access-token:§P§@github.com/acme/site.git && git push", "is_input": false, "thought": "push the fix"}}
    """,
    P=GHS,
)
shape(
    "copilot-chat-agent-mode-tool-invocation-log",
    """
    2026-02-11 14:22:09.411 [info] [ToolCallingLoop] run_in_terminal {"command":"az storage blob upload --account-name acmelogs --account-key §P§ -c raw -f out.parquet","explanation":"upload","isBackground":false}
    """,
    P=lambda r: b64(r, 64),
)
shape(
    "gemini-cli-session-checkpoint-shell-tool",
    """
    {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"HEROKU_API_KEY=§P§ heroku config -a acme-api","description":"list config"}}}]}
    """,
    P=cat("HRKU-AA", UL(58)),
)

# ---- mail, calendars, tickets, wikis, sheets -------------------------------------------------------------------------------


@cred("mime-multipart-alternative-base64-text-part-password")
def _mime_b64(rng):
    pw = human(rng)
    enc = base64.b64encode(f"VPN login: lena.k / {pw}\r\n".encode()).decode()
    boundary = "b1_" + hx(rng, 16)
    text = (
        "From: IT Service Desk <servicedesk@acme.example>\nTo: lena.k@acme.example\nSubject: VPN access\n"
        f'MIME-Version: 1.0\nContent-Type: multipart/alternative; boundary="{boundary}"\n\n'
        f"--{boundary}\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n{enc}\n"
        f"--{boundary}--\n"
    )
    return text, (enc,)


shape(
    "email-header-x-original-authorization-relay-log",
    """
    Received: from app-7.internal (app-7.internal [§ip§])
            by relay.acme.example (Postfix) with ESMTPSA id 4X§up§
            for <alerts@acme.example>; Tue,  3 Mar 2026 08:01:22 +0000 (UTC)
    X-Debug-SMTP-Auth: PLAIN user=alerts@acme.example pass=§P§
    Subject: [cron] nightly export finished
    """,
    up=UP(8),
    P=SAFE(16),
)
shape(
    "mime-quoted-printable-html-password-line",
    """
    Content-Type: text/html; charset="utf-8"
    Content-Transfer-Encoding: quoted-printable

    <p>Ihr neues Passwort f=C3=BCr das Kundenportal:</p>
    <p style=3D"font-family:monospace">§P§</p>
    <p>Bitte nach der ersten Anmeldung =C3=A4ndern.</p>
    """,
    P=lambda r: an(r, 14),
)
shape(
    "icalendar-vevent-description-dial-in-and-host-key",
    """
    BEGIN:VEVENT
    UID:§uuid§@calendar.acme.example
    DTSTART:20260310T140000Z
    SUMMARY:Quarterly board prep
    LOCATION:https://acme.zoom.us/j/8§n3§§n3§?pwd=§P§
    DESCRIPTION:Join Zoom: https://acme.zoom.us/j/8§n3§§n3§\\nHost key: 4§n3§\\nPasscode below in the link
    END:VEVENT
    """,
    P=AN(32),
)
shape(
    "outlook-meeting-body-teams-passcode-and-shared-wifi",
    """
    ________________________________________________________________________________
    Microsoft Teams Need help?
    Join the meeting now
    Meeting ID: 3§n2§ §n2§4 §n2§1 §n3§
    Passcode: xH7nQ2
    ________________________________________________________________________________
    Guest Wi-Fi for the offsite: AcmeGuest / §P§
    """,
    P=HUMAN,
)
shape(
    "zendesk-ticket-comment-json-body",
    """
    {"ticket":{"id":§ticket§,"subject":"Can't log into the SFTP","comments":[{"id":§n3§§n3§,"author_id":§n3§§n3§,"public":true,"body":"Still failing. I'm using user acme_upload and password §P§ exactly as you sent it.","created_at":"§ts§"}]}}
    """,
    P=SYM(14),
)
shape(
    "freshdesk-ticket-email-reply-quoted-history",
    """
    Hi team, works now, thanks!

    On Mon, 2 Mar 2026 at 16:04, Support <support@vendor.example> wrote:
    > Please try again with the reset credentials:
    > Login: acme-ops
    > Temporary password: §P§
    > It expires in 24 hours.
    """,
    P=SAFE(12),
)
shape(
    "jira-issue-description-wiki-markup-panel",
    """
    h3. Staging access
    {panel:title=Credentials (do not share outside the team)}
    *URL:* https://staging.crm.acme.example
    *User:* qa-lead
    *Pass:* {{§P§}}
    {panel}
    """,
    P=HUMAN,
)
shape(
    "confluence-storage-format-table-cell",
    """
    <table><tbody>
    <tr><th>System</th><th>Account</th><th>Secret</th></tr>
    <tr><td>Kibana</td><td>elastic</td><td><code>§P§</code></td></tr>
    </tbody></table>
    """,
    P=AN(20),
)
shape(
    "notion-export-markdown-toggle-with-key",
    """
    # Vendor logins

    - Mapbox
        - Secret token (server only): `§P§`
        - Owner: growth team
    - Figma
        - SSO only
    """,
    P=lambda r: "sk." + seg({"u": "acme-maps", "a": lo(r, 24)}) + "." + b64u(r, 16),
)
shape(
    "csv-sheet-odd-headers-semicolon-decimal-comma",
    """
    Nr.;Anwendung;Benutzerkennung;Kennwort (geheim!);Kosten/Monat
    1;DATEV Unternehmen online;buchhaltung01;§P§;39,90
    2;Telekom Kundencenter;acme-gmbh;—;0,00
    """,
    P=HUMAN,
)
shape(
    "tsv-export-service-accounts-with-notes-column",
    """
    service\towner\tsecret_value\tlast_rotated\tnotes
    sendgrid-marketing\tgrowth\t§P§\t§day§\tscoped: mail.send
    sentry-relay\tplatform\t(in vault)\t§day§\t
    """,
    P=SENDGRID,
)
shape(
    "google-sheets-api-values-response-row",
    """
    {
      "range": "Access!A1:D3",
      "majorDimension": "ROWS",
      "values": [
        ["Tool", "Login", "Password", "MFA"],
        ["Hootsuite", "social@acme.example", "§P§", "SMS to Maria"],
        ["Canva", "design@acme.example", "SSO", "n/a"]
      ]
    }
    """,
    P=HUMAN,
)
shape(
    "markdown-table-handover-doc-pipe-cells",
    """
    ## Handover — Marcus leaving 31 March

    | System | URL | User | Password | Notes |
    |---|---|---|---|---|
    | Unifi controller | https://§lan§:8443 | admin | §P§ | local account |
    | NAS | https://nas.local:5001 | marcus | (SSO) | |
    """,
    P=SAFE(14),
)
shape(
    "slack-export-channel-json-message-text",
    """
    [
      {"type": "message", "user": "U0§up§", "text": "here's the temp pw for the ledger box: §P§ — change it after", "ts": "1767§n3§.§n3§"},
      {"type": "message", "user": "U0§up§", "text": ":+1:", "ts": "1767§n3§.§n3§"}
    ]
    """,
    up=UP(9),
    P=HUMAN,
)
shape(
    "teams-chat-export-html-message-div",
    """
    <div class="message-body" data-author="Priya Raman" data-ts="§ts§">
      <p>Adding the Azure DevOps PAT for the build agents so you don't have to wait:</p>
      <p><span style="font-family:Consolas">§P§</span></p>
    </div>
    """,
    P=cat(AN(52), "AZDO", AN(28)),
)
shape(
    "servicenow-incident-work-notes-export",
    """
    INC00§n3§§n2§ | Priority 2 | Assignment group: DB Operations
    Work notes (internal):
    §ts§ - Tomasz Wr. (Work notes)
    Reset the sa account on SQLPRD03 to §P§ per change CHG00§n3§§n2§. Will rotate again after cutover.
    """,
    P=SYM(16),
)
shape(
    "github-issue-comment-markdown-details-block",
    """
    <details>
    <summary>my config (click to expand)</summary>

    ```toml
    [provider.openai]
    api_key = "§P§"
    model = "gpt-4.1-mini"
    ```
    </details>

    Still getting `429 insufficient_quota`, any idea?
    """,
    P=OPENAI,
)
shape(
    "linear-issue-markdown-env-block-staging",
    """
    **Repro**
    1. set env:
       ```
       CLERK_SECRET_KEY=§P§
       ```
    2. `pnpm dev` and sign in with a magic link
    """,
    P=cat("sk_live_", AN(40)),
)
shape(
    "pagerduty-incident-note-with-db-password",
    """
    Incident #§ticket§ (P1) — checkout latency
    Note by Jonas B. at §hms§:
      failed over to replica, promoted it. New primary creds are repl_admin / §P§ until Monday's rotation.
    """,
    P=HUMAN,
)
shape(
    "postmortem-google-doc-export-timeline-row",
    """
    14:02  Alert fired (p99 > 2s)
    14:09  Yusuf shares the root password in #inc-4112: "§P§" so Dagny can get on the box
    14:15  Disk freed, latency back to normal
    14:40  Password rotated (action item AI-3)
    """,
    P=SAFE(14),
)

# ---- diffs, commits, reviews, stack traces ------------------------------------------------------------------------------

shape(
    "unified-diff-plus-line-docker-compose-env",
    """
    diff --git a/docker-compose.yml b/docker-compose.yml
    index §short§..§short§ 100644
    --- a/docker-compose.yml
    +++ b/docker-compose.yml
    @@ -14,6 +14,7 @@ services:
       keycloak:
         image: quay.io/keycloak/keycloak:26.§n§
         environment:
           KC_DB: postgres
    +      KC_DB_PASSWORD: §P§
           KC_HOSTNAME: sso.acme.example
    """,
    P=SAFE(20),
)
shape(
    "git-format-patch-email-adds-token-to-config",
    """
    From §sha§ Mon Sep 17 00:00:00 2001
    From: Kenji Sato <kenji@acme.example>
    Date: Wed, 4 Mar 2026 11:20:31 +0900
    Subject: [PATCH 2/3] ci: add codecov upload

    ---
     .github/workflows/test.yml | 2 ++
     1 file changed, 2 insertions(+)

    @@ -40,3 +40,5 @@ jobs:
           - run: pytest --cov
    +      - run: codecov upload-process -t §P§
    +        if: always()
    """,
    P=UUID,
)
shape(
    "git-commit-message-body-mentions-new-password",
    """
    commit §sha§
    Author: Farah N. <farah@acme.example>
    Date:   Thu Mar 5 17:44:02 2026 +0100

        Fix staging login loop

        The seed user had an expired password; reset it to §P§ so QA can log in.
        Remember to rotate before the demo.
    """,
    P=HUMAN,
)
shape(
    "github-pr-review-comment-suggestion-block",
    """
    **gael-b** commented on `config/settings/prod.py` line 88:

    > ```suggestion
    > ALGOLIA_ADMIN_KEY = os.environ["ALGOLIA_ADMIN_KEY"]
    > ```
    > Please don't hardcode `§P§` here, it's the admin key.
    """,
    P=HX(32),
)
shape(
    "gerrit-change-comment-json-with-line-and-secret",
    """
    )]}'
    {"deploy/values-prod.yaml":[{"id":"§hex8§_§hex8§","line":23,"message":"This leaks the LDAP bind password (§P§). Please use the sealed secret.","author":{"name":"Ulla Berg"},"updated":"2026-03-06 09:01:44.000000000"}]}
    """,
    P=SYM(16),
)
shape(
    "git-diff-word-diff-env-file-change",
    """
    $ git diff --word-diff .env.staging
    diff --git a/.env.staging b/.env.staging
    @@ -3 +3 @@ APP_ENV=staging
    MAILGUN_API_KEY=[-key-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-]{+§P§+}
    """,
    P=cat("key-", HX(32)),
)
shape(
    "svn-diff-added-property-password",
    """
    Index: conf/app.properties
    ===================================================================
    --- conf/app.properties\t(revision §n3§)
    +++ conf/app.properties\t(working copy)
    @@ -7,3 +7,4 @@
     ldap.url=ldaps://dc01.corp.example:636
     ldap.bindDn=CN=svc-app,OU=Service,DC=corp,DC=example
    +ldap.bindPassword=§P§
    """,
    P=SAFE(18),
)
shape(
    "gitleaks-json-report-finding-secret-field",
    """
    [
     {
      "Description": "Generic API Key",
      "StartLine": 12,
      "Match": "api_key = §P§",
      "Secret": "§P§",
      "File": "scripts/sync_hubspot.py",
      "Commit": "§sha§",
      "RuleID": "generic-api-key",
      "Fingerprint": "§sha§:scripts/sync_hubspot.py:generic-api-key:12"
     }
    ]
    """,
    P=cat("pat-na1-", UUID),
)
shape(
    "python-rich-traceback-locals-panel",
    """
    ╭─────────────────────────────── Traceback (most recent call last) ───────────────────────────────╮
    │ /app/sync/okta.py:41 in fetch_users                                                                │
    │                                                                                                    │
    │   38 │   headers = {"Authorization": f"SSWS {token}"}                                              │
    │ ❱ 41 │   r = httpx.get(f"{base}/api/v1/users", headers=headers, timeout=10)                        │
    │                                                                                                    │
    │ ╭──────────────────────────────── locals ────────────────────────────────╮                         │
    │ │    base = 'https://acme.okta.com'                                       │                         │
    │ │ headers = {'Authorization': 'SSWS §P§'}                                 │                         │
    │ │   token = '§P§'                                                         │                         │
    │ ╰─────────────────────────────────────────────────────────────────────────╯                         │
    ╰────────────────────────────────────────────────────────────────────────────────────────────────────╯
    ReadTimeout: timed out
    """,
    P=cat("00", UL(40)),
)
shape(
    "sentry-event-json-frame-vars-password",
    """
    "frames": [
      {
        "filename": "app/billing/charge.py",
        "function": "charge_card",
        "lineno": 77,
        "vars": {
          "amount": "4999",
          "gateway_user": "'acme_api'",
          "gateway_pass": "'§P§'",
          "self": "<ChargeService at 0x7f3a1c2b9d50>"
        }
      }
    ]
    """,
    P=SAFE(16),
)
shape(
    "node-unhandled-rejection-axios-error-config-headers",
    """
    AxiosError: Request failed with status code 401
        at settle (/srv/app/node_modules/axios/lib/core/settle.js:19:12) {
      code: 'ERR_BAD_REQUEST',
      config: {
        method: 'post',
        url: 'https://api.pagerduty.com/incidents',
        headers: Object [AxiosHeaders] {
          Accept: 'application/vnd.pagerduty+json;version=2',
          Authorization: 'Token token=§P§',
          'Content-Type': 'application/json'
        }
      }
    }
    """,
    P=cat("u+", UL(18)),
)
shape(
    "go-panic-with-struct-dump-percent-plus-v",
    """
    panic: dial tcp 10.4.0.12:5432: connect: connection refused

    goroutine 1 [running]:
    main.mustConnect(...)
    \t/src/cmd/api/main.go:58
    config loaded: &{Addr::8080 DB:{Host:10.4.0.12 Port:5432 User:api Password:§P§ Name:api SSLMode:require} Debug:false}
    """,
    P=SAFE(18),
)
shape(
    "java-exception-jdbc-url-in-message",
    """
    org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection
    Caused by: java.sql.SQLException: Access denied for url jdbc:mysql://mysql-prod:3306/shop?user=shop&password=§P§&useSSL=true
    \tat com.mysql.cj.jdbc.exceptions.SQLError.createSQLException(SQLError.java:130)
    \tat com.zaxxer.hikari.pool.PoolBase.newConnection(PoolBase.java:359)
    """,
    P=SAFE(14),
)
shape(
    "dotnet-exception-tostring-connection-string",
    """
    Unhandled exception. System.ArgumentException: Format of the initialization string does not conform to specification starting at index 87.
       at Microsoft.Data.SqlClient.SqlConnectionString..ctor(String connectionString)
    ConnectionString: Server=tcp:acme-sql.database.windows.net,1433;User ID=appuser;Password=§P§;Encrypt=True;TrustServerCertificate=False
    """,
    P=SYM(18),
)
shape(
    "php-whoops-page-server-environment-table",
    """
    Environment & details:
    Server/Request Data
      DOCUMENT_ROOT     /var/www/html/public
      APP_KEY           base64:§P§
      DB_CONNECTION     mysql
      DB_HOST           127.0.0.1
    """,
    P=B64(32),
)
shape(
    "ruby-better-errors-local-variables-dump",
    """
    NoMethodError at /admin/integrations
    undefined method `fetch' for nil
    Local Variables
      integration   #<Integration id: 14, kind: "shopify">
      access_token  "§P§"
      shop_domain   "acme-store.myshopify.com"
    """,
    P=cat("shpat_", HX(32)),
)
shape(
    "rust-debug-print-config-struct-pretty",
    """
    [2026-03-07T08:12:41Z DEBUG relay] loaded config: Config {
        listen: 0.0.0.0:9000,
        upstream: "https://ingest.acme.example",
        api_token: "§P§",
        retries: 5,
    }
    """,
    P=UL(40),
)
shape(
    "elixir-crash-report-ecto-repo-config-keyword",
    """
    ** (DBConnection.ConnectionError) connection not available
    [error] GenServer #PID<0.§n2§.0> terminating
    Last message: {:connect, :init}
    State: [hostname: "pg.internal", username: "phoenix", password: "§P§", database: "shop_prod", pool_size: 10]
    """,
    P=SAFE(16),
)
shape(
    "swift-crash-log-fatal-error-message-with-token",
    """
    Thread 0 Crashed:: Dispatch queue: com.apple.main-thread
    0   libswiftCore.dylib   0x19a1f2c3c _assertionFailure(_:_:file:line:flags:) + 244
    Application Specific Information:
    Fatal error: Unexpected 401 for request with token §P§: file Field/APIClient.swift, line 212
    """,
    P=lambda r: jwt(r, {"sub": uid(r), "scope": "field:write", "exp": 1893456000}, "ES256"),
)
shape(
    "kotlin-coroutine-exception-data-class-tostring",
    """
    kotlinx.coroutines.JobCancellationException: Job was cancelled
    Caused by: retrofit2.HttpException: HTTP 403
    context: SyncRequest(account=acme-field, apiKey=§P§, since=§ts§)
    \tat com.acme.field.sync.SyncWorker.doWork(SyncWorker.kt:64)
    """,
    P=AN(40),
)
shape(
    "core-dump-strings-grep-password-gdb",
    """
    (gdb) x/s *(char **)($rbp-0x48)
    0x5581c2a3e2b0:\t"host=pg.internal user=ledger password=§P§ dbname=ledger"
    (gdb) bt 3
    #0  PQconnectdb () from /lib/x86_64-linux-gnu/libpq.so.5
    """,
    P=SAFE(20),
)
shape(
    "pytest-failure-assert-diff-with-env-dict",
    """
    E       AssertionError: assert {'DB_PASS': '§P§', 'DB_USER': 'test'} == {'DB_USER': 'test'}
    E         Left contains 1 more item:
    E         {'DB_PASS': '§P§'}
    tests/test_env.py:22: AssertionError
    """,
    P=HUMAN,
)

# ---- HTTP traces, cookies, OAuth -----------------------------------------------------------------------------------------


@cred("har-entry-request-postdata-params-password")
def _har_post(rng):
    pw = human(rng)
    entry = {
        "startedDateTime": _when(rng),
        "request": {
            "method": "POST",
            "url": "https://portal.vendor.example/login",
            "headers": [{"name": "Content-Type", "value": "application/x-www-form-urlencoded"}],
            "postData": {
                "mimeType": "application/x-www-form-urlencoded",
                "params": [{"name": "username", "value": "acme-ap"}, {"name": "password", "value": pw}],
                "text": f"username=acme-ap&password={pct(pw)}",
            },
        },
        "response": {"status": 302, "headers": [{"name": "Location", "value": "/dashboard"}]},
    }
    return out(jd(entry), pw)


@cred("har-entry-response-set-cookie-session-value")
def _har_cookie(rng):
    v = ul(rng, 48)
    entry = {
        "response": {
            "status": 200,
            "cookies": [{"name": "__Host-sess", "value": v, "path": "/", "httpOnly": True, "secure": True}],
            "headers": [
                {"name": "set-cookie", "value": f"__Host-sess={v}; Path=/; Secure; HttpOnly; SameSite=Lax"}
            ],
        }
    }
    return out(jd(entry), v)


shape(
    "curl-verbose-request-header-x-api-key",
    """
    *   Trying 104.18.§n§.7:443...
    * Connected to api.vendor.example (104.18.§n§.7) port 443
    * ALPN: server accepted h2
    > GET /v3/reports?from=2026-03-01 HTTP/2
    > Host: api.vendor.example
    > user-agent: curl/8.§n§.0
    > x-api-key: §P§
    > accept: */*
    >
    < HTTP/2 200
    < content-type: application/json
    """,
    P=UL(40),
)
shape(
    "httpie-verbose-output-bearer-request",
    """
    $ http -v POST https://api.airtable.com/v0/app§an14§/Leads "Authorization:Bearer §P§" fields:='{"Name":"x"}'
    POST /v0/app§an14§/Leads HTTP/1.1
    Accept: application/json, */*;q=0.5
    Authorization: Bearer §P§
    Content-Type: application/json
    Host: api.airtable.com
    User-Agent: HTTPie/3.2.4
    """,
    an14=AN(14),
    P=cat("pat", AN(14), ".", HX(64)),
)
shape(
    "wget-debug-output-authorization-basic",
    """
    ---request begin---
    GET /artifacts/build-§n3§.tar.gz HTTP/1.1
    User-Agent: Wget/1.24.5
    Accept: */*
    Host: nexus.corp.example
    Authorization: Basic §P§
    Connection: Keep-Alive

    ---request end---
    """,
    P=lambda r: basic("deploy", safe(r, 16)),
)
shape(
    "set-cookie-response-headers-remember-token",
    """
    HTTP/1.1 200 OK
    Date: Sun, 08 Mar 2026 10:01:12 GMT
    Set-Cookie: remember_user_token=§P§; path=/; expires=Sun, 22 Mar 2026 10:01:12 GMT; secure; HttpOnly; SameSite=Lax
    Set-Cookie: locale=de; path=/
    """,
    P=lambda r: b64u(r, 40) + "--" + hx(r, 40),
)
shape(
    "netscape-cookies-txt-session-line",
    """
    # Netscape HTTP Cookie File
    # https://curl.se/docs/http-cookies.html
    #HttpOnly_.app.acme.example\tTRUE\t/\tTRUE\t1798761599\tsession_id\t§P§
    .app.acme.example\tTRUE\t/\tFALSE\t1798761599\ttheme\tdark
    """,
    P=HX(64),
)
shape(
    "cookie-header-in-bug-report-copy",
    """
    Request headers (copied from devtools):
    :authority: admin.acme.example
    cookie: _ga=GA1.1.§n3§§n3§.1767§n3§; admin_session=§P§; csrftoken=§hex12§
    referer: https://admin.acme.example/orders
    """,
    P=LO(32),
)
shape(
    "oauth-device-flow-token-response-access-and-refresh",
    """
    $ curl -s -X POST https://oauth2.googleapis.com/token -d client_id=§n3§-x.apps.googleusercontent.com \\
        -d device_code=AH-1Ng§hex12§ -d grant_type=urn:ietf:params:oauth:grant-type:device_code
    {
      "access_token": "§P§",
      "expires_in": 3599,
      "refresh_token": "§Q§",
      "scope": "https://www.googleapis.com/auth/drive.readonly",
      "token_type": "Bearer"
    }
    """,
    P=cat("ya29.a0", UL(150)),
    Q=cat("1//03", UL(98)),
)
shape(
    "oauth-authorization-code-callback-url-and-token-exchange",
    """
    GET /callback?code=§code§&state=§hex12§ HTTP/1.1
    ...
    POST /oauth/token HTTP/1.1
    Host: login.salesforce.com
    grant_type=authorization_code&code=§code§&client_id=3MVG9§cid§&client_secret=§P§&redirect_uri=https%3A%2F%2Fapp.acme.example%2Fcallback
    """,
    code=lambda r: "aPrx" + ul(r, 60),
    cid=UL(80),
    P=HXU(64),
)
shape(
    "mitmproxy-dump-flow-request-headers",
    """
    192.168.1.44:53122: GET https://api.notion.com/v1/databases/§hex12§§hex12§§hex8§/query
        Authorization: Bearer §P§
        Notion-Version: 2022-06-28
     << 200 OK 14.2k
    """,
    P=cat("secret_", AN(43)),
)
shape(
    "fiddler-raw-request-proxy-authorization",
    """
    CONNECT api.openai.com:443 HTTP/1.1
    Host: api.openai.com:443
    Proxy-Authorization: Basic §P§
    User-Agent: python-httpx/0.28.1
    """,
    P=lambda r: basic("CORP\\svc-ai", human(r)),
)
shape(
    "http-request-query-string-url-encoded-password",
    """
    10.2.3.4 - - [08/Mar/2026:11:12:13 +0000] "GET /api/login?user=kiosk-3&pass=§P§ HTTP/1.1" 200 512 "-" "kiosk/2.1"
    """,
    P=lambda r: pct(sym(r, 14, "!#$%&+=@")),
)
shape(
    "grpcurl-metadata-header-flag-token",
    """
    grpcurl -H 'authorization: Bearer §P§' -d '{"limit": 5}' \\
      payments.internal:443 acme.payments.v1.Ledger/ListEntries
    """,
    P=lambda r: jwt(r, {"sub": "svc:reconciler", "aud": "ledger", "exp": 1893456000}),
)
shape(
    "websocket-upgrade-url-token-query-devtools",
    """
    Request URL: wss://realtime.acme.example/socket/websocket?token=§P§&vsn=2.0.0
    Request Method: GET
    Status Code: 101 Switching Protocols
    """,
    P=lambda r: "SFMyNTY." + b64u(r, 60) + "." + b64u(r, 32),
)
shape(
    "postman-console-log-request-headers-block",
    """
    POST https://api.box.com/oauth2/token
    Request Headers
      Content-Type: application/x-www-form-urlencoded
    Request Body
      grant_type: client_credentials
      client_id: §cid§
      client_secret: §P§
      box_subject_type: enterprise
    """,
    cid=LO(32),
    P=AN(32),
)

# ---- keys, encryption tools, password managers ------------------------------------------------------------------------------

shape(
    "ssh-keygen-then-cat-ed25519-private-key",
    """
    $ ssh-keygen -t ed25519 -N '' -f ./deploy_key -C deploy@ci
    Your identification has been saved in ./deploy_key
    $ cat deploy_key
    -----BEGIN OPENSSH PRIVATE KEY-----
    b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
    QyNTUxOQAAACD§l2§
    §P§
    §l4§
    -----END OPENSSH PRIVATE KEY-----
    """,
    l2=lambda r: b64(r, 45)[:57],
    P=lambda r: b64(r, 54)[:70],
    l4=lambda r: b64(r, 30)[:38] + "==",
)
shape(
    "ssh-add-askpass-script-echo-passphrase",
    """
    #!/bin/sh
    # ~/bin/askpass-deploy.sh  (SSH_ASKPASS=~/bin/askpass-deploy.sh ssh-add ~/.ssh/id_deploy < /dev/null)
    echo "§P§"
    """,
    P=WORDS_SEP(" ", 5),
)
shape(
    "gpg-batch-gen-key-params-passphrase",
    """
    %echo Generating release signing key
    Key-Type: EDDSA
    Key-Curve: ed25519
    Name-Real: Acme Release Bot
    Name-Email: release@acme.example
    Expire-Date: 2y
    Passphrase: §P§
    %commit
    """,
    P=WORDS,
)
shape(
    "gpg-export-secret-key-armor-first-line",
    """
    $ gpg --armor --export-secret-keys release@acme.example
    -----BEGIN PGP PRIVATE KEY BLOCK-----

    §P§
    §b1§
    =§b2§
    -----END PGP PRIVATE KEY BLOCK-----
    """,
    P=lambda r: ("lFgEZ" + b64(r, 60))[:64],
    b1=lambda r: b64(r, 45),
    b2=lambda r: b64(r, 3),
)
shape(
    "age-keygen-stdout-to-terminal-then-recipient",
    """
    $ age-keygen
    # created: 2026-03-08T09:12:00+01:00
    # public key: age1§pubk§
    §P§
    """,
    pubk=lambda r: chars(r, _BECH.lower(), 58),
    P=AGE_KEY,
)
shape(
    "sops-decrypt-output-yaml-plain",
    """
    $ sops -d secrets/prod.enc.yaml
    postgres:
        password: §P§
    smtp:
        host: email-smtp.eu-west-1.amazonaws.com
    """,
    P=AN(32),
)
shape(
    "op-item-get-reveal-fields-output",
    """
    $ op item get "Prod RDS" --vault Infra --fields label=username,label=password --reveal
    rds_admin,§P§
    """,
    P=SAFE(24),
)
shape(
    "op-inject-rendered-template-output",
    """
    $ op inject -i config.tpl.yml -o config.yml && cat config.yml
    database:
      user: app
      password: §P§
    redis_url: redis://cache-01.internal:6379/0
    """,
    P=SAFE(28),
)
shape(
    "bw-get-item-json-login-password",
    """
    $ bw get item "Mailcow admin" | jq '.login'
    {
      "uris": [{"match": null, "uri": "https://mail.acme.example"}],
      "username": "admin",
      "password": "§P§",
      "totp": null,
      "passwordRevisionDate": null
    }
    """,
    P=SYM(20),
)
shape(
    "pass-show-multiline-entry",
    """
    $ pass show work/vpn/fortigate
    §P§
    user: tomasz.w
    url: https://vpn.acme.example:10443
    otp: (on phone)
    """,
    P=SYM(18),
)
shape(
    "gopass-show-password-only-flag",
    """
    $ gopass show -o infra/hetzner/robot
    §P§
    $ gopass show infra/hetzner/robot | tail -2
    login: #ws+§hex8§
    note: robot webservice user
    """,
    P=SAFE(22),
)
shape(
    "keepassxc-cli-show-show-protected",
    """
    $ keepassxc-cli show -s ~/Vault.kdbx "Banking/Sparkasse"
    Enter password to unlock /home/ines/Vault.kdbx:
    Title: Sparkasse
    UserName: 4§n3§§n3§
    Password: §P§
    URL: https://www.sparkasse.de
    Notes:
    """,
    P=HUMAN,
)
shape(
    "lpass-show-password-pipe-history",
    """
      901  lpass login ines@acme.example
      902  lpass show --password "Shared-Ops/unifi" | cat
      903  # §P§  <- pasted it here so I can copy on the jump host
    """,
    P=SYM(16),
)
shape(
    "proton-pass-cli-item-view-output",
    """
    $ pass-cli item view --vault-name Work --item-title "Grafana Cloud"
    Title:     Grafana Cloud
    Username:  ops@acme.example
    Password:  §P§
    URLs:      https://acme.grafana.net
    """,
    P=SAFE(20),
)
shape(
    "vault-kv-get-table-output-data-section",
    """
    $ vault kv get -mount=secret apps/checkout
    ======= Secret Path =======
    secret/data/apps/checkout
    ======= Metadata =======
    Key                Value
    ---                -----
    created_time       §ts§
    version            7
    ====== Data ======
    Key                Value
    ---                -----
    braintree_key      §P§
    """,
    P=HX(32),
)
shape(
    "vault-token-create-output-token-field",
    """
    $ vault token create -policy=ci -ttl=24h
    Key                  Value
    ---                  -----
    token                §P§
    token_accessor       §acc§
    token_duration       24h
    token_renewable      true
    token_policies       ["ci" "default"]
    """,
    P=VAULT,
    acc=AN(24),
)
shape(
    "infisical-export-dotenv-output",
    """
    $ infisical export --env=prod --path=/payments
    PAYMENTS_MODE='live'
    ADYEN_API_KEY='§P§'
    """,
    P=cat("AQE", UL(30), "=-", UL(40)),
)
shape(
    "doppler-secrets-download-no-file-json",
    """
    $ doppler secrets download --no-file --format json -p api -c prd | jq '{DATABASE_URL, DOPPLER_ENVIRONMENT}'
    {
      "DATABASE_URL": "postgresql://api:§P§@db.prd.acme.internal:5432/api",
      "DOPPLER_ENVIRONMENT": "prd"
    }
    """,
    P=AN(32),
)
shape(
    "age-plugin-yubikey-identity-file-not-secret-but-age-key-file-is",
    """
    $ cat ~/.config/sops/age/keys.txt
    # created: 2026-01-14T10:01:33Z
    # public key: age1§pubk§
    §P§
    """,
    pubk=lambda r: chars(r, _BECH.lower(), 58),
    P=AGE_KEY,
)

# ---- shells, Windows, services, schedulers -------------------------------------------------------------------------------------

shape(
    "bash-heredoc-into-netrc-file-history",
    """
      77  cat > ~/.netrc <<'EOF'
      78  machine git.acme.example login ci-bot password §P§
      79  EOF
      80  chmod 600 ~/.netrc
    """,
    P=GLPAT,
)
shape(
    "zsh-extended-history-timestamped-export",
    """
    : 1767§n3§12:0;cd ~/src/ledger
    : 1767§n3§40:0;export SENTRY_AUTH_TOKEN=§P§
    : 1767§n3§51:0;npx @sentry/wizard@latest -i sourcemaps
    """,
    P=cat("sntrys_", B64U(90)),
)
shape(
    "fish-history-file-set-gx-cloudflare-token-with-when",
    """
    - cmd: set -gx CLOUDFLARE_API_TOKEN §P§
      when: 1767§n3§§n2§
    - cmd: wrangler deploy
      when: 1767§n3§§n2§
    """,
    P=UL(40),
)
shape(
    "bash-read-s-then-echo-into-file-script",
    """
    #!/usr/bin/env bash
    # provision.sh -- original version read it interactively:
    #   read -rsp "DB password: " DB_PASS
    DB_PASS='§P§'   # hardcoded for the unattended run, remove after
    printf '%s' "$DB_PASS" > /etc/app/db.pass
    """,
    P=SYM(18),
)
shape(
    "powershell-pscredential-from-plaintext-securestring-invoke-command",
    """
    $pw = ConvertTo-SecureString '§P§' -AsPlainText -Force
    $cred = New-Object System.Management.Automation.PSCredential ('CORP\\svc-backup', $pw)
    Invoke-Command -ComputerName FS01 -Credential $cred -ScriptBlock { wbadmin get versions }
    """,
    P=HUMAN,
)
shape(
    "powershell-psreadline-history-file",
    """
    # %APPDATA%\\Microsoft\\Windows\\PowerShell\\PSReadLine\\ConsoleHost_history.txt
    Connect-ExchangeOnline -UserPrincipalName admin@acme.onmicrosoft.com
    $env:GRAPH_CLIENT_SECRET = "§P§"
    .\\Sync-Users.ps1 -TenantId §uuid§
    """,
    P=cat(AN(3), "8Q~", UL(34)),
)
shape(
    "windows-cmdkey-add-generic-pass",
    """
    C:\\Users\\build> cmdkey /generic:git:https://dev.azure.com /user:build /pass:§P§
    CMDKEY: Credential added successfully.
    """,
    P=cat(AN(52), "AZDO", AN(28)),
)
shape(
    "reg-export-putty-session-proxy-password",
    """
    Windows Registry Editor Version 5.00

    [HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions\\jump-eu]
    "HostName"="jump-eu.acme.example"
    "ProxyMethod"=dword:00000003
    "ProxyUsername"="svc-proxy"
    "ProxyPassword"="§P§"
    """,
    P=SYM(14),
)
shape(
    "reg-export-vnc-server-password-hex",
    """
    [HKEY_LOCAL_MACHINE\\SOFTWARE\\TightVNC\\Server]
    "Password"=hex:§P§
    "UseVncAuthentication"=dword:00000001
    """,
    P=lambda r: ",".join(r.randbytes(1).hex() for _ in range(8)),
)
shape(
    "unattend-xml-autologon-password-plaintext",
    """
    <AutoLogon>
        <Password>
            <Value>§P§</Value>
            <PlainText>true</PlainText>
        </Password>
        <Enabled>true</Enabled>
        <Username>kiosk</Username>
    </AutoLogon>
    """,
    P=HUMAN,
)
shape(
    "systemd-dropin-override-conf-environment",
    """
    # /etc/systemd/system/grafana-agent.service.d/override.conf
    [Service]
    Environment="GCLOUD_RW_API_KEY=§P§"
    Environment="GCLOUD_HOSTED_METRICS_ID=§n3§§n3§"
    """,
    P=lambda r: "glc_" + b64(r, 96).rstrip("="),
)
shape(
    "systemctl-cat-unit-execstart-token-flag",
    """
    $ systemctl cat cloudflared
    # /etc/systemd/system/cloudflared.service
    [Unit]
    Description=cloudflared
    After=network-online.target
    [Service]
    ExecStart=/usr/bin/cloudflared --no-autoupdate tunnel run --token §P§
    Restart=on-failure
    """,
    P=lambda r: "eyJhIjoi" + b64(r, 150).rstrip("="),
)
shape(
    "systemd-creds-encrypt-input-left-in-shell",
    """
    root@app:~# echo -n '§P§' | systemd-creds encrypt --name=db-pass - /etc/credstore.encrypted/db-pass
    root@app:~# ls -l /etc/credstore.encrypted/
    -rw------- 1 root root 1146 Mar  8 10:11 db-pass
    """,
    P=SAFE(20),
)
shape(
    "crontab-l-line-with-inline-password",
    """
    $ crontab -l
    # m h  dom mon dow   command
    15 2 * * * PGPASSWORD='§P§' pg_dump -h §host§ -U backup shop | gzip > /backup/shop-$(date +\\%F).sql.gz
    0 5 * * 0 /usr/local/bin/rotate-logs
    """,
    P=HUMAN,
)
shape(
    "kubernetes-cronjob-args-curl-webhook-token",
    """
    apiVersion: batch/v1
    kind: CronJob
    metadata: {name: heartbeat}
    spec:
      schedule: "*/5 * * * *"
      jobTemplate:
        spec:
          template:
            spec:
              containers:
                - name: ping
                  image: curlimages/curl:8.§n§.0
                  args: ["-fsS", "-H", "Authorization: Bearer §P§", "https://hc.acme.example/ping/ingest"]
    """,
    P=UL(32),
)
shape(
    "launchd-plist-environment-variables-dict",
    """
    <key>EnvironmentVariables</key>
    <dict>
        <key>RESTIC_REPOSITORY</key>
        <string>s3:s3.eu-central-003.backblazeb2.com/acme-mac-backups</string>
        <key>RESTIC_PASSWORD</key>
        <string>§P§</string>
    </dict>
    """,
    P=WORDS,
)
shape(
    "windows-task-scheduler-xml-arguments-password",
    """
    <Actions Context="Author">
      <Exec>
        <Command>C:\\Tools\\rclone.exe</Command>
        <Arguments>sync D:\\Scans sftp:scans --sftp-user scanner --sftp-pass §P§</Arguments>
      </Exec>
    </Actions>
    """,
    P=lambda r: ul(r, 30),
)
shape(
    "supervisord-conf-program-environment",
    """
    [program:worker]
    command=/srv/venv/bin/celery -A app worker -l info
    environment=CELERY_BROKER_URL="redis://:§P§@cache-01.internal:6379/2",DJANGO_SETTINGS_MODULE="app.settings.prod"
    autorestart=true
    """,
    P=AN(32),
)
shape(
    "docker-run-history-e-flag-with-password",
    """
    $ history | grep 'docker run'
      233  docker run -d --name pg -e POSTGRES_PASSWORD=§P§ -p 5432:5432 postgres:17
    """,
    P=HUMAN,
)
shape(
    "podman-secret-create-from-stdin-printf",
    """
    $ printf '%s' '§P§' | podman secret create nextcloud_admin_pw -
    §hex12§§hex12§
    """,
    P=SAFE(20),
)

# ---- web servers and proxies -------------------------------------------------------------------------------------------------

shape(
    "nginx-proxy-set-header-authorization-basic-literal",
    """
    location /metrics-upstream/ {
        proxy_pass https://prometheus.internal:9090/;
        proxy_set_header Authorization "Basic §P§";
        proxy_set_header Host $host;
    }
    """,
    P=lambda r: basic("scraper", safe(r, 18)),
)
shape(
    "nginx-map-api-key-allowlist",
    """
    map $http_x_api_key $api_client {
        default         "";
        "§P§"  "partner-a";
    }
    """,
    P=AN(40),
)
shape(
    "apache-proxy-pass-reverse-with-requestheader-set",
    """
    <Location /erp>
        ProxyPass        http://erp.internal:8069/
        ProxyPassReverse http://erp.internal:8069/
        RequestHeader set X-Odoo-Api-Key "§P§"
    </Location>
    """,
    P=HX(40),
)
shape(
    "caddyfile-forward-auth-copy-headers-and-secret-header",
    """
    api.acme.example {
        reverse_proxy localhost:8080 {
            header_up X-Internal-Secret {$INTERNAL_SECRET:§P§}
        }
    }
    """,
    P=AN(32),
)
shape(
    "haproxy-cfg-userlist-insecure-password",
    """
    userlist stats_users
        user admin insecure-password §P§

    listen stats
        bind :8404
        stats enable
        stats uri /
        acl auth_ok http_auth(stats_users)
        http-request auth unless auth_ok
    """,
    P=HUMAN,
)
shape(
    "traefik-dynamic-yaml-basicauth-users-plain-and-headers",
    """
    http:
      middlewares:
        upstream-auth:
          headers:
            customRequestHeaders:
              X-Upstream-Token: "§P§"
    """,
    P=UL(36),
)
shape(
    "envoy-yaml-request-headers-to-add-api-key",
    """
    route_config:
      virtual_hosts:
        - name: partner
          domains: ["*"]
          request_headers_to_add:
            - header: {key: "x-partner-key", value: "§P§"}
              append_action: OVERWRITE_IF_EXISTS_OR_ADD
    """,
    P=AN(48),
)
shape(
    "kong-declarative-consumer-key-auth-credential",
    """
    _format_version: "3.0"
    consumers:
      - username: mobile-app
        keyauth_credentials:
          - key: §P§
        basicauth_credentials:
          - username: mobile-admin
            password: §Q§
    """,
    P=AN(32),
    Q=SAFE(16),
)
shape(
    "varnish-vcl-set-req-http-authorization",
    """
    sub vcl_recv {
        if (req.url ~ "^/private/") {
            set req.http.Authorization = "Bearer §P§";
        }
    }
    """,
    P=UL(40),
)
shape(
    "apisix-route-plugin-proxy-rewrite-headers-key",
    """
    curl http://127.0.0.1:9180/apisix/admin/routes/1 -H 'X-API-KEY: §P§' -X PUT -d '
    {"uri": "/anything", "upstream": {"type": "roundrobin", "nodes": {"httpbin.org:80": 1}}}'
    """,
    P=HX(32),
)
shape(
    "oauth2-proxy-cfg-client-and-cookie-secret",
    """
    # /etc/oauth2-proxy.cfg
    provider = "oidc"
    oidc_issuer_url = "https://sso.acme.example/realms/staff"
    client_id = "oauth2-proxy"
    client_secret = "§P§"
    cookie_secret = "§Q§"
    email_domains = ["acme.example"]
    """,
    P=AN(32),
    Q=B64U(32),
)
shape(
    "pomerium-config-yaml-shared-secret",
    """
    authenticate_service_url: https://authenticate.acme.example
    shared_secret: §P§
    cookie_secret: §Q§
    idp_provider: google
    """,
    P=B64(32),
    Q=B64(32),
)

# ---- VPNs and network devices ------------------------------------------------------------------------------------------------

shape(
    "wg-quick-showconf-interface-private-key",
    """
    $ sudo wg showconf wg0
    [Interface]
    ListenPort = 51820
    PrivateKey = §P§

    [Peer]
    PublicKey = §pubk§
    AllowedIPs = 10.66.0.2/32
    """,
    P=WG_KEY,
    pubk=WG_KEY,
)
shape(
    "wireguard-peer-preshared-key-in-mobile-qr-text",
    """
    [Interface]
    Address = 10.66.0.7/32
    PrivateKey = §P§
    DNS = 10.66.0.1
    [Peer]
    PublicKey = §pubk§
    PresharedKey = §Q§
    Endpoint = vpn.acme.example:51820
    """,
    P=WG_KEY,
    pubk=WG_KEY,
    Q=WG_KEY,
)
shape(
    "openvpn-auth-user-pass-file-two-lines",
    """
    $ sudo cat /etc/openvpn/client/auth.txt
    nordvpn-svc-§n3§
    §P§
    """,
    P=AN(24),
)
shape(
    "openvpn-inline-tls-crypt-v2-client-key",
    """
    <tls-crypt-v2>
    -----BEGIN OpenVPN tls-crypt-v2 client key-----
    §P§
    §b1§
    -----END OpenVPN tls-crypt-v2 client key-----
    </tls-crypt-v2>
    """,
    P=lambda r: b64(r, 48),
    b1=lambda r: b64(r, 48),
)
shape(
    "libreswan-ipsec-secrets-psk-line",
    """
    # /etc/ipsec.d/branch-office.secrets
    §pub§ 198.51.100.23 : PSK "§P§"
    """,
    P=SAFE(28),
)
shape(
    "fortigate-config-vpn-ipsec-phase1-psksecret",
    """
    config vpn ipsec phase1-interface
        edit "to-branch"
            set interface "wan1"
            set peertype any
            set proposal aes256-sha256
            set remote-gw 198.51.100.23
            set psksecret §P§
        next
    end
    """,
    P=SAFE(24),
)
shape(
    "paloalto-set-command-ike-gateway-pre-shared-key",
    """
    set network ike gateway gw-aws authentication pre-shared-key key §P§
    set network ike gateway gw-aws protocol ikev2 ike-crypto-profile aws-ike
    set network ike gateway gw-aws peer-address ip 52.§n§.§n2§.10
    """,
    P=lambda r: lo(r, 8) + "." + lo(r, 8) + "_" + lo(r, 8),
)
shape(
    "huawei-vrp-local-user-password-irreversible-cipher-and-snmp",
    """
    [HUAWEI] aaa
    [HUAWEI-aaa] local-user netops password irreversible-cipher §P§
    [HUAWEI-aaa] local-user netops service-type ssh
    [HUAWEI-aaa] quit
    """,
    P=SYM(16),
)
shape(
    "arista-eos-username-secret-0-and-tacacs",
    """
    username ops privilege 15 role network-admin secret 0 §P§
    tacacs-server host 10.9.0.5 key 0 §Q§
    """,
    P=HUMAN,
    Q=AN(20),
)
shape(
    "vyos-set-vpn-ipsec-authentication-psk",
    """
    set vpn ipsec authentication psk AWS id '§pub§'
    set vpn ipsec authentication psk AWS id '52.§n§.1.9'
    set vpn ipsec authentication psk AWS secret '§P§'
    set vpn ipsec site-to-site peer aws1 authentication mode 'pre-shared-secret'
    """,
    P=lambda r: ul(r, 32).replace("-", "_"),
)
shape(
    "openwrt-uci-show-grep-wireless-sae-mixed-key",
    """
    root@OpenWrt:~# uci show wireless | grep -E 'ssid|key|encryption'
    wireless.default_radio0.ssid='Loft5G'
    wireless.default_radio0.encryption='sae-mixed'
    wireless.default_radio0.key='§P§'
    """,
    P=HUMAN,
)
shape(
    "edgeos-show-configuration-pppoe-password",
    """
    ubnt@ER-X# show interfaces ethernet eth0 pppoe 0
     default-route auto
     mtu 1492
     name-server auto
     password §P§
     user-id acme§n3§@isp.example
    """,
    P=AN(12),
)
shape(
    "nokia-sros-md-cli-radius-secret-plain",
    """
    [ex:/configure system security aaa remote-servers radius]
    A:admin@pe1# server 1 address 10.20.0.8 secret "§P§"
    """,
    P=SAFE(20),
)
shape(
    "zerotier-central-members-curl-authorization-token-scheme",
    """
    curl -s -H "Authorization: token §P§" https://api.zerotier.com/api/v1/network/§hex8§§hex8§/member | jq length
    14
    """,
    P=AN(32),
)
shape(
    "tailscale-up-authkey-history",
    """
    sudo tailscale up --authkey=§P§ --advertise-tags=tag:server --ssh
    """,
    P=TAILSCALE,
)
shape(
    "netbird-up-setup-key-flag",
    """
    netbird up --management-url https://netbird.acme.example:443 --setup-key §P§
    """,
    P=lambda r: uid(r).upper(),
)

# ---- voice and meeting transcripts -------------------------------------------------------------------------------------------

shape(
    "srt-subtitle-file-training-video-password-on-screen",
    """
    41
    00:03:12,400 --> 00:03:15,900
    and for the demo tenant we log in as trainer

    42
    00:03:15,900 --> 00:03:19,200
    with the password §P§, which you can see on the slide
    """,
    P=HUMAN,
)
shape(
    "whisper-json-segments-text-field",
    """
    {"text": " ...", "segments": [
      {"id": 17, "start": 84.2, "end": 89.6, "text": " The router admin password is §P§, all one word."},
      {"id": 18, "start": 89.6, "end": 92.0, "text": " Okay, got it, thanks."}
    ], "language": "en"}
    """,
    P=HUMAN,
)
shape(
    "amazon-transcribe-json-transcripts-with-speaker-labels",
    """
    {"jobName":"call-§n3§","results":{"transcripts":[{"transcript":"Hi it's Bruno from IT. Your temporary password is §P§ and you'll be asked to change it."}],"speaker_labels":{"speakers":2}},"status":"COMPLETED"}
    """,
    P=lambda r: rng_word_num(r),
)
shape(
    "otter-ai-export-speaker-timestamps",
    """
    Wanjiru Kamau  12:41
    So the shared mailbox, the password is, uh, §P§. Capital first letter.

    Rasmus Holm  12:49
    Got it. I'll put it in the vault after the call.
    """,
    P=HUMAN,
)
_NATO = dict(
    zip(
        string.ascii_uppercase,
        "Alfa Bravo Charlie Delta Echo Foxtrot Golf Hotel India Juliett Kilo Lima Mike November Oscar Papa Quebec "
        "Romeo Sierra Tango Uniform Victor Whiskey X-ray Yankee Zulu".split(),
        strict=True,
    )
)
_SPOKEN = dict(zip(string.digits, "zero one two three four five six seven eight nine".split(), strict=True))


@cred("voice-nato-spelled-then-confirmed-verbatim")
def _nato(rng):
    v = up(rng, 10)
    spelled = ", ".join(_NATO.get(c) or _SPOKEN[c] for c in v)
    return out(
        f"""
        [00:07:02] Caller: OK so it's {spelled}.
        [00:07:10] Agent: Let me read that back: {v}.
        [00:07:12] Caller: Correct.
        """,
        v,
    )


shape(
    "teams-meeting-transcript-vtt-voice-tags",
    """
    WEBVTT

    §uuid§/12-0
    00:14:03.120 --> 00:14:08.480
    <v Dagny Solberg>The vendor portal password is §P§ until they fix SSO.</v>

    §uuid2§/13-0
    00:14:08.480 --> 00:14:10.010
    <v Idris Okafor>Thanks.</v>
    """,
    P=HUMAN,
)
shape(
    "ivr-call-log-dtmf-and-speech-recognition-result",
    """
    2026-03-09 11:02:14 call=§n3§§n3§ node=verify_caller asr_result="my pin is §P§" confidence=0.91
    2026-03-09 11:02:15 call=§n3§§n3§ node=verify_caller match=true
    """,
    P=PIN,
)
shape(
    "google-speech-to-text-response-alternatives",
    """
    {
      "results": [
        {"alternatives": [{"transcript": "the wi-fi password for the guest network is §P§", "confidence": 0.87}],
         "resultEndTime": "14.320s", "languageCode": "en-us"}
      ]
    }
    """,
    P=lambda r: rng_word_num(r),
)

# ---- people, in many languages and scripts --------------------------------------------------------------------------------

_PEOPLE: list[tuple[str, str, Maker]] = [
    (
        "arabic-rtl-slack-message-with-rlm-marks-server-password",
        "§first§  §hms§\nصباح الخير، كلمة المرور الجديدة لحساب الخادم هي: \u200f§P§\u200f\nيرجى تغييرها بعد أول تسجيل دخول.",
        HUMAN,
    ),
    (
        "hebrew-email-sisma-lemaarekhet-hanhalat-heshbonot",
        "שלום §first§,\nהסיסמה למערכת הנהלת החשבונות: §P§\nנא לא להעביר הלאה.\nבברכה, מחלקת IT",
        SAFE(14),
    ),
    (
        "persian-telegram-ramz-obur-modem-office",
        "رمز عبور مودم دفتر عوض شد ✅\nنام شبکه: Office-5G\nرمز عبور: §P§",
        HUMAN,
    ),
    (
        "urdu-whatsapp-web-export-password-yeh-hai",
        "[§day§, §hms§] §first§: سرور کا پاس ورڈ یہ ہے §P§ کسی کو مت بتانا",
        SYM(14),
    ),
    (
        "kurdish-kurmanji-latin-chat-sifre-ya-wifi",
        "§first§: Şîfreya wifi ya nû ev e: §P§ — ji kesî re nebêje",
        HUMAN,
    ),
    (
        "dhivehi-thaana-viber-message-password",
        "§first§: ސާވަރުގެ ޕާސްވޯޑް: §P§",
        SAFE(16),
    ),
    (
        "chinese-dingtalk-group-message-fuwuqi-mima-shi",
        "【运维群】§first§：测试服务器的 root 密码是 §P§ ，别外传，周五统一改。",
        SYM(16),
    ),
    (
        "japanese-chatwork-message-honban-db-pasuwado-kagikakko",
        "[To:§n3§]§first§さん\n本番DBのパスワードは「§P§」です。\n共有後は必ずこのメッセージを削除してください。",
        SAFE(18),
    ),
    (
        "korean-kakaowork-message-bimilbeonho-imnida",
        "§first§님, 관리자 계정 비밀번호는 §P§ 입니다. 로그인 후 꼭 변경해 주세요 🙏",
        HUMAN,
    ),
    (
        "chinese-feishu-doc-comment-api-miyao",
        "评论 · §first§ · §day§\nAPI 密钥：§P§（仅限内部使用，请勿提交到代码库）",
        cat("sk-", AN(48)),
    ),
    (
        "japanese-backlog-ticket-comment-api-kii-zenkaku-colon",
        "#§ticket§ 決済APIの接続設定\n本番用のAPIキー：§P§\nステージングは別途お送りします。",
        HX(40),
    ),
    (
        "hindi-devanagari-email-passvard-niche-diya-hai",
        "नमस्ते §first§ जी,\nआपके नए खाते का पासवर्ड नीचे दिया गया है:\n§P§\nकृपया पहली बार लॉगिन के बाद बदल दें।",
        HUMAN,
    ),
    (
        "tamil-whatsapp-kadavuchol-office-wifi",
        "அலுவலக வைஃபை கடவுச்சொல்: §P§ 👍",
        HUMAN,
    ),
    (
        "telugu-telegram-password-idhi",
        "§first§ గారు, సర్వర్ పాస్‌వర్డ్ ఇది: §P§ ఎవరికీ చెప్పకండి",
        SYM(14),
    ),
    (
        "marathi-email-sanketshabd",
        "नमस्कार,\nपोर्टलसाठी आपला तात्पुरता संकेतशब्द: §P§\nधन्यवाद",
        SAFE(12),
    ),
    (
        "gujarati-whatsapp-password-aa-che",
        "ભાઈ, એકાઉન્ટનો પાસવર્ડ આ છે: §P§",
        HUMAN,
    ),
    (
        "punjabi-gurmukhi-sms-password",
        "ਤੁਹਾਡਾ ਨਵਾਂ ਪਾਸਵਰਡ: §P§ — ਕਿਸੇ ਨਾਲ ਸਾਂਝਾ ਨਾ ਕਰੋ",
        SAFE(12),
    ),
    (
        "malayalam-email-password-thazhe",
        "പ്രിയ §first§,\nനിങ്ങളുടെ പാസ്‌വേഡ്: §P§\nആദ്യ ലോഗിൻ കഴിഞ്ഞ് മാറ്റുക.",
        HUMAN,
    ),
    (
        "kannada-team-chat-password",
        "ಸರ್ವರ್ ಪಾಸ್‌ವರ್ಡ್ §P§ ಆಗಿದೆ, ದಯವಿಟ್ಟು ಹಂಚಿಕೊಳ್ಳಬೇಡಿ",
        SYM(16),
    ),
    (
        "odia-message-password",
        "ଆପଣଙ୍କ ପାସୱାର୍ଡ: §P§",
        HUMAN,
    ),
    (
        "nepali-viber-password-yo-ho",
        "दाइ, राउटरको पासवर्ड यो हो: §P§",
        HUMAN,
    ),
    (
        "sinhala-imo-message-muradapadaya",
        "§first§, නව මුරපදය: §P§ කාටවත් කියන්න එපා",
        SAFE(14),
    ),
    (
        "thai-line-works-rahat-phan-wifi-hong-prachum",
        "รหัสผ่าน wifi ห้องประชุมชั้น 3: §P§ ค่ะ",
        HUMAN,
    ),
    (
        "lao-whatsapp-lahat-phan-khao-labop",
        "ລະຫັດຜ່ານເຂົ້າລະບົບ: §P§",
        SAFE(12),
    ),
    (
        "khmer-telegram-peakyasamngat",
        "ពាក្យសម្ងាត់ថ្មី៖ §P§ សូមកុំចែករំលែក",
        HUMAN,
    ),
    (
        "vietnamese-zalo-mat-khau-email-cong-ty-nha",
        "§first§ ơi, mật khẩu email công ty mới là §P§ nha, đổi sau khi đăng nhập nhé",
        HUMAN,
    ),
    (
        "indonesian-whatsapp-kata-sandi-server-staging",
        "Mas §first§, kata sandi server staging: §P§ jangan disebar ya 🙏",
        SYM(14),
    ),
    (
        "tagalog-taglish-messenger-eto-yung-password",
        "eto yung password ng admin panel: §P§ wag mo i-share ha, papalitan ko bukas",
        HUMAN,
    ),
    (
        "swahili-email-nenosiri-la-mfumo",
        "Habari §first§,\nNenosiri la mfumo wa uhasibu ni §P§\nTafadhali libadilishe baada ya kuingia.",
        HUMAN,
    ),
    (
        "yoruba-chat-oro-igbaniwole",
        "Ọ̀rọ̀ ìgbaniwọlé tuntun: §P§",
        SAFE(12),
    ),
    (
        "hausa-whatsapp-kalmar-sirri-ta-asusun",
        "Ga kalmar sirri ta asusun: §P§ kar ka ba kowa",
        HUMAN,
    ),
    (
        "zulu-sms-iphasiwedi-yakho-entsha",
        "Iphasiwedi yakho entsha ithi §P§. Ungayabelani nomuntu.",
        SAFE(12),
    ),
    (
        "georgian-email-paroli-sistemistvis",
        "გამარჯობა §first§,\nსისტემის პაროლი: §P§\nგთხოვთ შეცვალოთ პირველი შესვლისას.",
        HUMAN,
    ),
    (
        "mongolian-cyrillic-chat-nuuts-ug",
        "Серверийн нууц үг: §P§ хэнд ч битгий хэлээрэй",
        SYM(14),
    ),
    (
        "kazakh-telegram-zhuiege-kiru-qupiya-soz",
        "Жүйеге кіру үшін құпия сөз: §P§",
        HUMAN,
    ),
    (
        "uzbek-latin-telegram-parol-quyidagicha",
        "Serverga kirish paroli quyidagicha: §P§",
        SAFE(14),
    ),
    (
        "turkish-teams-sunucu-sifresi-degisti",
        "Arkadaşlar sunucu şifresi değişti, yenisi: §P§ (Cuma tekrar değişecek)",
        HUMAN,
    ),
    (
        "greek-viber-o-kodikos-prosvasis-einai",
        "Ο κωδικός πρόσβασης για το λογιστικό είναι §P§ — μην τον στείλεις σε κανέναν.",
        HUMAN,
    ),
    (
        "polish-email-haslo-do-panelu-klienta",
        "Dzień dobry,\nhasło do panelu klienta: §P§\nProszę je zmienić po pierwszym logowaniu.\nPozdrawiam",
        SAFE(14),
    ),
    (
        "czech-helpdesk-ticket-heslo-pro-vpn",
        "Požadavek #§ticket§ vyřízen. Uživatel: novak.j, heslo pro VPN: §P§",
        HUMAN,
    ),
    (
        "hungarian-email-a-jelszo",
        "Szia §first§!\nA jelszó a könyvelő programhoz: §P§\nÜdv",
        HUMAN,
    ),
    (
        "romanian-whatsapp-parola-cont-test",
        "Parola pentru contul de test e §P§, o schimbăm după demo",
        SYM(14),
    ),
    (
        "ukrainian-viber-parol-do-adminky",
        "Пароль до адмінки: §P§ (нікому не пересилай)",
        HUMAN,
    ),
    (
        "serbian-cyrillic-email-lozinka-za-server",
        "Поштовани,\nлозинка за сервер је §P§\nПоздрав",
        SAFE(16),
    ),
    (
        "croatian-slack-lozinka-za-bazu",
        "lozinka za bazu na stagingu: §P§",
        HUMAN,
    ),
    (
        "lithuanian-email-slaptazodis",
        "Laba diena,\nJūsų laikinas slaptažodis: §P§",
        SAFE(12),
    ),
    (
        "latvian-chat-parole-ir",
        "Wi-Fi parole ir §P§",
        HUMAN,
    ),
    (
        "estonian-email-uus-parool-on",
        "Tere §first§!\nUus parool on §P§\nPalun muuda see ära.",
        HUMAN,
    ),
    (
        "finnish-teams-salasana-on-tassa",
        "Tässä palvelimen salasana: §P§ — vaihdetaan maanantaina",
        SYM(14),
    ),
    (
        "swedish-email-losenordet-ar",
        "Hej!\nLösenordet är §P§ och användarnamnet är ekonomi.\nMvh §first§",
        HUMAN,
    ),
    (
        "norwegian-slack-passordet-til-ruteren",
        "passordet til ruteren: §P§",
        HUMAN,
    ),
    (
        "danish-sms-din-adgangskode",
        "Din midlertidige adgangskode er: §P§",
        SAFE(12),
    ),
    (
        "icelandic-email-lykilord",
        "Sæll §first§,\nLykilorðið þitt: §P§",
        HUMAN,
    ),
    (
        "dutch-teams-het-wachtwoord-is",
        "Het wachtwoord van de gedeelde mailbox is §P§, graag niet doorsturen.",
        HUMAN,
    ),
    (
        "french-email-mot-de-passe-guillemets-francais",
        "Bonjour §first§,\nVoici le mot de passe provisoire : « §P§ »\nMerci de le modifier dès votre première connexion.",
        SAFE(14),
    ),
    (
        "italian-whatsapp-la-password-e",
        "La password del gestionale è §P§ 😉 non girarla a nessuno",
        HUMAN,
    ),
    (
        "spanish-latam-whatsapp-la-clave-del-wifi-es",
        "la clave del wifi del depa es §P§ 👌",
        HUMAN,
    ),
    (
        "portuguese-european-email-palavra-passe",
        "Caro §first§,\nA sua palavra-passe temporária é: §P§\nCumprimentos",
        SAFE(14),
    ),
    (
        "swiss-german-teams-kennwort-fuers-vpn",
        "Grüezi, s Kennwort fürs VPN isch §P§ – bitte nöd wiitergä.",
        HUMAN,
    ),
    (
        "irish-gaelic-email-pasfhocal",
        "A §first§, a chara,\nIs é do phasfhocal nua: §P§",
        HUMAN,
    ),
    (
        "welsh-email-cyfrinair-newydd",
        "Dyma eich cyfrinair newydd: §P§",
        SAFE(12),
    ),
    (
        "maltese-chat-il-password-hija",
        "Il-password tal-wifi hija §P§",
        HUMAN,
    ),
    (
        "esperanto-forum-pm-pasvorto",
        "Saluton! La pasvorto por la servilo estas §P§",
        HUMAN,
    ),
    (
        "haitian-creole-sms-modpas-ou",
        "Modpas ou se §P§. Pa bay pesonn li.",
        SAFE(12),
    ),
    (
        "tibetan-chat-gsang-tshig",
        "གསང་ཚིག: §P§",
        HUMAN,
    ),
    (
        "javanese-whatsapp-tembung-sandhi",
        "Mas, tembung sandhi server: §P§ ojo disebar yo",
        SYM(14),
    ),
    (
        "somali-email-erayga-sirta",
        "Salaan §first§,\nErayga sirta ah ee nidaamka waa: §P§",
        HUMAN,
    ),
    (
        "hinglish-whatsapp-bhai-password-ye-hai",
        "bhai prod ka password ye hai §P§ , kisi ko mat batana warna boss gussa karega",
        HUMAN,
    ),
    (
        "spanglish-slack-el-password-del-staging",
        "el password del staging is §P§, don't share porfa 🙏",
        SYM(14),
    ),
    (
        "japanese-english-slack-staging-api-key-wa-desu",
        "staging の API key は §P§ です (rotate next week)",
        cat("sk_test_", AN(40)),
    ),
    (
        "arabic-english-teams-token-please-update-pipeline",
        "الـ token الجديد: §P§ please update the pipeline قبل الساعة ٥",
        GHP,
    ),
    (
        "korean-english-slack-prod-db-password-bakkwosseoyo",
        "prod DB password 바꿨어요: §P§ — 1Password에도 업데이트했어요",
        SAFE(20),
    ),
    (
        "chinese-english-wecom-access-token-jide-gengxin-ci",
        "新的 access token 是 §P§ ，记得更新 CI 里的 secret",
        GLPAT,
    ),
    (
        "quebec-french-english-teams-mot-de-passe-btw",
        "le mot de passe du wifi c'est §P§ btw, le vieux marche pu",
        HUMAN,
    ),
    (
        "russian-english-telegram-parol-ot-jenkins",
        "пароль от jenkins admin: §P§ , не забудь поменять after release",
        SYM(16),
    ),
]
for _name, _text, _maker in _PEOPLE:
    shape(_name, _text, P=_maker)

# ---- two values a document: pairs people and tools write together -------------------------------------------------------------

shape(
    "minio-mc-alias-set-access-and-secret-history",
    """
    mc alias set lake https://s3.lake.internal §P§ §Q§ --api S3v4
    mc ls lake/raw | head
    """,
    P=UP(20),
    Q=AN(40),
)
shape(
    "twilio-env-api-key-secret-and-auth-token",
    """
    TWILIO_ACCOUNT_SID=AC§hx§
    TWILIO_API_KEY=SK§hx2§
    TWILIO_API_SECRET=§P§
    TWILIO_AUTH_TOKEN=§Q§
    """,
    hx=HX(32),
    hx2=HX(32),
    P=AN(32),
    Q=TWILIO_TOKEN,
)
shape(
    "keycloak-realm-export-client-secret-and-smtp-password",
    """
    {
      "realm": "staff",
      "smtpServer": {"host": "smtp.office365.com", "port": "587", "auth": "true", "user": "sso@acme.example", "password": "§P§", "starttls": "true"},
      "clients": [{"clientId": "grafana", "secret": "§Q§", "redirectUris": ["https://grafana.acme.example/*"]}]
    }
    """,
    P=HUMAN,
    Q=AN(32),
)
shape(
    "gitea-app-ini-security-secret-key-and-internal-token",
    """
    [security]
    INSTALL_LOCK   = true
    SECRET_KEY     = §P§
    INTERNAL_TOKEN = §Q§
    PASSWORD_HASH_ALGO = pbkdf2
    """,
    P=AN(64),
    Q=lambda r: jwt(r, {"nbf": 1767225600}),
)
shape(
    "harbor-yml-admin-and-database-password",
    """
    hostname: registry.acme.example
    harbor_admin_password: §P§
    database:
      password: §Q§
      max_idle_conns: 100
    data_volume: /data
    """,
    P=HUMAN,
    Q=SAFE(20),
)
shape(
    "mattermost-config-json-sql-datasource-and-at-rest-key",
    """
    "SqlSettings": {
      "DriverName": "postgres",
      "DataSource": "postgres://mmuser:§P§@§host§:5432/mattermost?sslmode=require&connect_timeout=10",
      "AtRestEncryptKey": "§Q§"
    }
    """,
    P=SAFE(18),
    Q=AN(32),
)
shape(
    "sentry-self-hosted-config-yml-secret-key-and-mail-password",
    """
    system.secret-key: '§P§'
    mail.backend: 'smtp'
    mail.host: 'smtp.mailgun.org'
    mail.username: 'postmaster@mg.acme.example'
    mail.password: '§Q§'
    """,
    P=lambda r: chars(r, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)", 50),
    Q=cat(HX(32), "-", HX(8), "-", HX(8)),
)
shape(
    "nextcloud-config-php-secret-and-dbpassword",
    """
    <?php
    $CONFIG = array (
      'instanceid' => 'oc§lo§',
      'passwordsalt' => '§P§',
      'secret' => '§Q§',
      'dbtype' => 'pgsql',
    );
    """,
    lo=LO(10),
    P=lambda r: chars(r, _AN + "+/", 30),
    Q=lambda r: chars(r, _AN + "+/", 48),
)
shape(
    "rundeck-framework-properties-and-realm-properties",
    """
    # framework.properties
    framework.server.password = §P§
    # realm.properties
    admin:§Q§,user,admin
    """,
    P=HUMAN,
    Q=SAFE(16),
)
shape(
    "odoo-conf-admin-passwd-plain-and-db-password",
    """
    [options]
    admin_passwd = §P§
    db_host = §host§
    db_user = odoo
    db_password = §Q§
    """,
    P=SYM(16),
    Q=SAFE(18),
)
shape(
    "authelia-users-database-yaml-plain-and-notifier-smtp",
    """
    notifier:
      smtp:
        address: submission://smtp.fastmail.com:587
        username: auth@acme.example
        password: §P§
    identity_validation:
      reset_password:
        jwt_secret: §Q§
    """,
    P=LO(16),
    Q=AN(64),
)
shape(
    "synapse-homeserver-yaml-registration-and-macaroon-secret",
    """
    registration_shared_secret: "§P§"
    macaroon_secret_key: "§Q§"
    form_secret: null
    signing_key_path: "/data/matrix.acme.example.signing.key"
    """,
    P=lambda r: chars(r, _AN + "~.;:=^&,#@", 50),
    Q=lambda r: chars(r, _AN + "~.;:=^&,#@", 50),
)
shape(
    "jitsi-env-jicofo-and-jvb-auth-passwords",
    """
    # .env (docker-jitsi-meet)
    JICOFO_AUTH_PASSWORD=§P§
    JVB_AUTH_PASSWORD=§Q§
    PUBLIC_URL=https://meet.acme.example
    """,
    P=HX(32),
    Q=HX(32),
)
shape(
    "wordpress-wp-cli-config-create-dbpass-and-user-create",
    """
    $ wp config create --dbname=wp_shop --dbuser=wp_shop --dbpass='§P§' --dbhost=§host§
    Success: Generated 'wp-config.php' file.
    $ wp user create editor2 editor2@acme.example --role=editor --user_pass='§Q§'
    Success: Created user 12.
    """,
    P=SAFE(20),
    Q=HUMAN,
)
shape(
    "elasticsearch-reset-password-output-and-enrollment-token",
    """
    $ bin/elasticsearch-reset-password -u elastic -a -b
    Password for the [elastic] user successfully reset.
    New value: §P§
    $ bin/elasticsearch-create-enrollment-token -s kibana
    §Q§
    """,
    P=lambda r: chars(r, _AN + "*_-=+", 20),
    Q=lambda r: base64.b64encode(
        jc(
            {"ver": "8.17.0", "adr": ["10.0.0.5:9200"], "fgr": hx(r, 64), "key": an(r, 20) + ":" + an(r, 22)}
        ).encode()
    ).decode(),
)
shape(
    "opensearch-dashboards-yml-and-internal-users-plain",
    """
    opensearch.username: "kibanaserver"
    opensearch.password: "§P§"
    opensearch_security.cookie.secure: true
    opensearch_security.cookie.password: "§Q§"
    """,
    P=SAFE(18),
    Q=AN(40),
)
shape(
    "pgbackrest-conf-repo1-s3-key-secret-and-cipher-pass",
    """
    [global]
    repo1-type=s3
    repo1-s3-bucket=acme-pg-backups
    repo1-s3-endpoint=s3.eu-central-1.amazonaws.com
    repo1-s3-key=AKIA§akid§
    repo1-s3-key-secret=§P§
    repo1-cipher-type=aes-256-cbc
    repo1-cipher-pass=§Q§
    """,
    akid=lambda r: chars(r, _B32S, 16),
    P=AWS_SECRET,
    Q=B64(36),
)
shape(
    "zabbix-agent2-conf-psk-identity-and-psk-file-content",
    """
    # zabbix_agentd.conf
    TLSConnect=psk
    TLSAccept=psk
    TLSPSKIdentity=PSK-db01
    TLSPSKFile=/etc/zabbix/zabbix_agentd.psk
    $ cat /etc/zabbix/zabbix_agentd.psk
    §P§
    """,
    P=HX(64),
)
shape(
    "graylog-server-conf-password-secret-and-root-sha2",
    """
    password_secret = §P§
    root_username = admin
    root_password_sha2 = §sha256§
    http_bind_address = 0.0.0.0:9000
    """,
    P=AN(96),
)


# =============================================================================================================
# clean documents: look-alikes, no secret
# =============================================================================================================

cshape(
    "clean-terraform-show-json-sensitive-values-true-markers",
    """
    $ terraform show -json tfplan | jq '.resource_changes[0].change | {after_sensitive, after_unknown}'
    {
      "after_sensitive": {"administrator_login_password": true, "tags": {}},
      "after_unknown": {"id": true, "fully_qualified_domain_name": true}
    }
    """,
)
cshape(
    "clean-tfstate-outputs-with-sensitive-flag-and-lineage",
    """
    {
      "version": 4,
      "terraform_version": "1.§n§.3",
      "serial": §n2§,
      "lineage": "§uuid§",
      "outputs": {
        "db_endpoint": {"value": "billing.c§hex8§.eu-west-1.rds.amazonaws.com:5432", "type": "string"},
        "db_password_secret_arn": {"value": "arn:aws:secretsmanager:eu-west-1:§acct§:secret:billing/db-AbCdEf", "type": "string"}
      }
    }
    """,
)
cshape(
    "clean-kubectl-describe-pod-env-from-secret-refs",
    """
    Environment:
      DATABASE_URL:     <set to the key 'uri' in secret 'pg-main-app'>          Optional: false
      REDIS_PASSWORD:   <set to the key 'redis-password' of secret 'redis'>     Optional: false
      OTEL_SERVICE_NAME: checkout
    Mounts:
      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-§hex8§ (ro)
    """,
)
cshape(
    "clean-helm-status-notes-get-password-command",
    """
    NOTES:
    ** Please be patient while the chart is being deployed **
    To get the password for "postgres" run:

        export POSTGRES_PASSWORD=$(kubectl get secret --namespace db pg-postgresql -o jsonpath="{.data.postgres-password}" | base64 -d)

    To connect to your database run the following command:
        kubectl run pg-client --rm --tty -i --restart='Never' --image docker.io/bitnami/postgresql:17.§n§.0 \\
          --env="PGPASSWORD=$POSTGRES_PASSWORD" --command -- psql --host pg-postgresql -U postgres
    """,
)
cshape(
    "clean-argocd-app-get-sync-status-revisions",
    """
    Name:               argocd/minio
    Project:            default
    Sync Policy:        Automated (Prune)
    Sync Status:        Synced to 5.§n§.0
    Health Status:      Healthy
    Revision:           §sha§
    GROUP  KIND    NAMESPACE  NAME   STATUS  HEALTH
           Secret  storage    minio  Synced
    """,
)
cshape(
    "clean-psql-session-scram-verifier-select",
    """
    postgres=# SELECT rolname, left(rolpassword, 14) || '…' AS verifier FROM pg_authid WHERE rolcanlogin;
     rolname  |    verifier
    ----------+-----------------
     app      | SCRAM-SHA-256$4…
     reporting| SCRAM-SHA-256$4…
    (2 rows)
    postgres=# \\conninfo
    You are connected to database "postgres" as user "postgres" via socket in "/var/run/postgresql" at port "5432".
    """,
)
cshape(
    "clean-mongosh-connection-string-without-credentials",
    """
    $ mongosh "mongodb+srv://cluster0.§hex8§.mongodb.net/" --apiVersion 1 --authenticationMechanism MONGODB-X509 \\
        --tls --tlsCertificateKeyFile ~/certs/X509-cert-§n3§.pem
    Current Mongosh Log ID: §hex12§§hex12§
    Atlas atlas-§hex8§-shard-0 [primary] test>
    """,
)
cshape(
    "clean-redis-cli-acl-list-hashed-passwords",
    """
    127.0.0.1:6379> ACL LIST
    1) "user default off nopass sanitize-payload resetchannels -@all"
    2) "user worker on sanitize-payload #§sha256§ ~jobs:* resetchannels -@all +@list"
    127.0.0.1:6379> ACL WHOAMI
    "worker"
    """,
)
cshape(
    "clean-kafka-client-properties-oauthbearer-env-references",
    """
    security.protocol=SASL_SSL
    sasl.mechanism=OAUTHBEARER
    sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler
    sasl.oauthbearer.token.endpoint.url=https://login.microsoftonline.com/§uuid§/oauth2/v2.0/token
    sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="${KAFKA_CLIENT_ID}" clientSecret="${KAFKA_CLIENT_SECRET}";
    """,
)
cshape(
    "clean-nats-account-jwt-describe-public-only",
    """
    $ nsc describe account SENSORS
    ╭──────────────────────────────────────────────────────────────────────────────────────╮
    │                                   Account Details                                    │
    ├───────────────────────────┬──────────────────────────────────────────────────────────┤
    │ Name                      │ SENSORS                                                  │
    │ Account ID                │ AD§pubk§ │
    │ Issuer ID                 │ OD§pubk2§ │
    │ Issued                    │ §ts§                                     │
    │ Max Connections           │ Unlimited                                                │
    ╰───────────────────────────┴──────────────────────────────────────────────────────────╯
    """,
    pubk=lambda r: chars(r, _B32S, 54),
    pubk2=lambda r: chars(r, _B32S, 54),
)
cshape(
    "clean-mqtt-topic-dump-device-serials-and-macs",
    """
    $ mosquitto_sub -h §lan§ -t 'tele/+/STATE' -v -C 2
    tele/plug-§hex8§/STATE {"Time":"§ts§","Uptime":"3T02:11:09","Heap":24,"Wifi":{"AP":1,"SSId":"IoT","BSSId":"A4:CF:12:§n§:9E:01","RSSI":78}}
    tele/plug-§hex8§/STATE {"Time":"§ts2§","Uptime":"0T04:55:10","Heap":25,"Wifi":{"AP":1,"SSId":"IoT","BSSId":"A4:CF:12:§n§:9E:01","RSSI":64}}
    """,
)
cshape(
    "clean-esp32-boot-log-chip-id-and-sha256-app",
    """
    rst:0x1 (POWERON_RESET),boot:0x13 (SPI_FAST_FLASH_BOOT)
    I (31) boot: ESP-IDF v5.§n§ 2nd stage bootloader
    I (412) esp_image: segment 0: paddr=00010020 vaddr=3c0a0020 size=2f5ach
    I (612) app_init: ELF file SHA256:  §sha256§
    I (619) wifi:mode : sta (84:f7:03:§n§:1a:2c)
    I (655) example_connect: Connecting to Lab-2.4G...
    """,
)
cshape(
    "clean-minecraft-server-properties-rcon-disabled-no-password",
    """
    #Minecraft server properties
    enable-rcon=false
    rcon.password=
    rcon.port=25575
    server-port=25565
    level-seed=-§n3§§n3§§n3§
    white-list=true
    """,
)
cshape(
    "clean-steam-game-server-log-steam-ids-and-app-ticket-size",
    """
    [S_API] SteamAPI_Init(): Loaded '/home/steam/.steam/sdk64/steamclient.so' OK.
    Server logged on to Steam, assigned identity steamid:9008§n3§§n3§§n3§§n2§
    Connection to Steam servers successful. Public IP is §pub§.
    Client 7656119§n3§§n3§§n2§ auth ticket validated (ticket length 240 bytes)
    """,
)
cshape(
    "clean-fastlane-match-readme-instructions-env-names",
    """
    ## Code signing
    We use fastlane match. Before running `fastlane ios beta` set:

    - `MATCH_PASSWORD` – ask in #mobile-release, it lives in 1Password ("iOS match")
    - `FASTLANE_APPLE_APPLICATION_SPECIFIC_PASSWORD` – create yours at appleid.apple.com (format xxxx-xxxx-xxxx-xxxx)
    - `APP_STORE_CONNECT_API_KEY_PATH` – path to the JSON with key_id / issuer_id / key
    """,
)
cshape(
    "clean-info-plist-public-ids-and-url-schemes",
    """
    <key>GIDClientID</key>
    <string>§n3§§n3§-§lo§.apps.googleusercontent.com</string>
    <key>CFBundleURLSchemes</key>
    <array><string>com.googleusercontent.apps.§n3§§n3§-§lo§</string></array>
    <key>FacebookAppID</key>
    <string>§n3§§n3§§n3§</string>
    <key>FacebookClientToken</key>
    <string>$(FACEBOOK_CLIENT_TOKEN)</string>
    """,
    lo=LO(32),
)
cshape(
    "clean-stripe-dashboard-copy-publishable-key-and-ids",
    """
    Publishable key   pk_live_51§an24§...
    Secret key        sk_live_••••••••••••••••••••••••••••HcQf    [Reveal live key]
    Webhook endpoint  we_1Q§an14§ → https://api.acme.example/stripe  (signing secret: Reveal)
    Last event        evt_3Q§an14§  checkout.session.completed
    """,
    an24=AN(24),
    an14=AN(14),
)
cshape(
    "clean-payment-webhook-payload-ids-and-signature-header",
    """
    POST /webhooks/adyen HTTP/1.1
    Content-Type: application/json
    {"live":"true","notificationItems":[{"NotificationRequestItem":{"pspReference":"§up§","merchantReference":"ORD-§n3§§n3§","eventCode":"AUTHORISATION","success":"true","additionalData":{"hmacSignature":"§sig§"}}}]}
    """,
    up=UP(16),
    sig=lambda r: b64(r, 32),
)
cshape(
    "clean-ipynb-getpass-cell-with-masked-output",
    """
    {
     "cell_type": "code",
     "execution_count": 2,
     "metadata": {},
     "outputs": [{"name": "stdin", "output_type": "stream", "text": ["OpenAI API key: ········\\n"]}],
     "source": ["import getpass, os\\n", "os.environ['OPENAI_API_KEY'] = getpass.getpass('OpenAI API key: ')"]
    }
    """,
)
cshape(
    "clean-databricks-notebook-dbutils-secrets-redacted-output",
    """
    # COMMAND ----------
    token = dbutils.secrets.get(scope="vendor", key="api-token")
    print(token)

    # OUTPUT:
    # [REDACTED]
    # COMMAND ----------
    """,
)
cshape(
    "clean-langsmith-run-json-token-usage-and-ids",
    """
    {"id":"§uuid§","name":"ChatOpenAI","run_type":"llm","trace_id":"§uuid2§","dotted_order":"20260308T101112000000Z§uuid§","extra":{"invocation_params":{"model":"gpt-4.1","max_tokens":1024,"temperature":0.2}},"outputs":{"llm_output":{"token_usage":{"prompt_tokens":§tok§,"completion_tokens":§n2§,"total_tokens":§n3§}}}}
    """,
)
cshape(
    "clean-mcp-initialize-capabilities-and-session-id",
    """
    {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":false}},"serverInfo":{"name":"vault-mcp","version":"0.§n§.1"},"instructions":"Secrets are read by path; values are never returned to the model, only their version and last rotation date."}}
    Mcp-Session-Id: §uuid§
    """,
)
cshape(
    "clean-otel-span-tool-call-arguments-without-secrets",
    """
    {"traceId":"§trace§","spanId":"§span§","parentSpanId":"§span2§","name":"execute_tool get_weather","attributes":[{"key":"gen_ai.tool.name","value":{"stringValue":"get_weather"}},{"key":"gen_ai.tool.call.id","value":{"stringValue":"call_§hex12§"}},{"key":"gen_ai.tool.call.arguments","value":{"stringValue":"{\\"city\\":\\"Tromsø\\",\\"units\\":\\"metric\\"}"}},{"key":"gen_ai.usage.output_tokens","value":{"intValue":"§tok§"}}]}
    """,
)
cshape(
    "clean-crewai-task-output-about-rotating-keys",
    """
    # Agent: Security Reviewer
    ## Final Answer:
    1. The repository reads `STRIPE_SECRET_KEY` from the environment; no literal key was found.
    2. `settings.py` sets `PASSWORD_HASHERS` to Argon2 first, which is fine.
    3. Rotate the webhook signing secret after the contractor leaves (owner: payments team).
    """,
)
cshape(
    "clean-agent-trace-secret-referenced-by-name-only",
    """
    Thought: I need the database password to run the migration. I must not print it.
    Action: vault_read
    Action Input: {"path": "secret/data/apps/billing", "field": "db_password", "return": "env:BILLING_DB_PASSWORD"}
    Observation: ok — exported to the sandbox as BILLING_DB_PASSWORD (32 chars, version 7)
    """,
)
cshape(
    "clean-email-headers-dkim-signature-and-message-id",
    """
    DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=acme.example; s=mail2026; t=1767§n3§11;
        bh=§bh§;
        h=From:To:Subject:Date:Message-ID;
        b=§b1§
    Message-ID: <§hex12§.§n3§@mail.acme.example>
    ARC-Seal: i=1; a=rsa-sha256; t=1767§n3§12; cv=none; d=google.com; s=arc-20240605; b=§b2§
    """,
    bh=lambda r: b64(r, 32),
    b1=lambda r: b64(r, 96),
    b2=lambda r: b64(r, 64),
)
cshape(
    "clean-icalendar-invite-with-meeting-ids-no-passcode",
    """
    BEGIN:VEVENT
    UID:040000008200E00074C5B7101A82E008000000§hex12§§hex12§
    DTSTART;TZID=Europe/Berlin:20260312T100000
    SUMMARY:Password manager rollout – Q&A
    DESCRIPTION:Agenda: how to reset your master password\\, how recovery kits work\\, passkeys.
    X-MICROSOFT-SKYPETEAMSMEETINGURL:https://teams.microsoft.com/l/meetup-join/19%3ameeting_§an§%40thread.v2/0
    END:VEVENT
    """,
    an=AN(48),
)
cshape(
    "clean-support-ticket-password-reset-instructions-no-value",
    """
    Ticket #§ticket§ — "Locked out of the portal"
    Agent reply: For security we never send passwords by e-mail. Please use "Forgot password" on the
    login page; the reset link is valid for 30 minutes. If you don't receive it, check that
    noreply@acme.example isn't in your spam folder. Your case reference is §uuid§.
    """,
)
cshape(
    "clean-confluence-page-credential-location-table",
    """
    | System | Where is the secret? | Owner | Rotation |
    |---|---|---|---|
    | Kibana `elastic` user | Vault `secret/observability/elastic` | SRE | 90 days |
    | SFTP partner drop | 1Password "Partner SFTP" | Finance Ops | on staff change |
    | Stripe | Doppler `payments/prd` → `STRIPE_SECRET_KEY` | Payments | yearly |
    """,
)
cshape(
    "clean-csv-user-export-with-password-last-changed-column",
    """
    user_id,email,password_last_changed,mfa_enabled,password_hash_algo
    §n3§,§email§,§day§,true,argon2id
    §n3§,§email§,§day§,false,bcrypt
    """,
)
cshape(
    "clean-diff-replaces-literal-with-env-lookup-redacted",
    """
    diff --git a/app/settings.py b/app/settings.py
    @@ -12,7 +12,7 @@
    -SECRET_KEY = "django-insecure-REDACTED-BY-GIT-FILTER"
    +SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
    -DATABASES["default"]["PASSWORD"] = "changeme"
    +DATABASES["default"]["PASSWORD"] = os.environ["DB_PASSWORD"]
    """,
)
cshape(
    "clean-git-commit-message-rotate-credentials-no-values",
    """
    commit §sha§
    Author: Teodor I. <teodor@acme.example>
    Date:   Mon Mar 9 08:30:11 2026 +0100

        chore(secrets): rotate SMTP and Sentry tokens

        Old tokens were revoked at §hms§ UTC. New values are in Vault (kv v2, version 12).
        Refs: SEC-§n3§, §short§
    """,
)
cshape(
    "clean-python-traceback-locals-secretstr-masked",
    """
    Traceback (most recent call last):
      File "/app/sync.py", line 33, in run
        client = Client(api_key=settings.api_key)
    locals:
      settings = Settings(api_key=SecretStr('**********'), base_url='https://api.vendor.example', timeout=10)
    httpx.ConnectError: [Errno 111] Connection refused
    """,
)
cshape(
    "clean-curl-verbose-tls-handshake-and-cert-fingerprints",
    """
    * SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / RSASSA-PSS
    * Server certificate:
    *  subject: CN=api.acme.example
    *  start date: Jan  4 00:00:00 2026 GMT
    *  SHA256 fingerprint: §fp§
    *  subjectAltName: host "api.acme.example" matched cert's "api.acme.example"
    > GET /healthz HTTP/2
    < HTTP/2 200
    < x-request-id: §uuid§
    """,
    fp=lambda r: ":".join(r.randbytes(1).hex().upper() for _ in range(32)),
)
cshape(
    "clean-set-cookie-consent-and-csrf-names-only",
    """
    HTTP/2 200
    set-cookie: cookie_consent=necessary%2Canalytics; Path=/; Max-Age=31536000; SameSite=Lax
    set-cookie: lang=nb-NO; Path=/
    set-cookie: __cf_bm=deleted; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=/
    vary: Cookie, Accept-Encoding
    """,
)
cshape(
    "clean-oauth-device-flow-user-code-prompt",
    """
    $ gh auth login --web
    ! First copy your one-time code: §uc§
    Press Enter to open https://github.com/login/device in your browser...
    ✓ Authentication complete.
    - gh config set -h github.com git_protocol https
    ✓ Logged in as octo-ops
    """,
    uc=lambda r: up(r, 4) + "-" + up(r, 4),
)
cshape(
    "clean-ssh-keygen-fingerprint-randomart-and-pubkey",
    """
    Your public key has been saved in ./deploy_key.pub
    The key fingerprint is:
    SHA256:§fp§ deploy@ci
    The key's randomart image is:
    +--[ED25519 256]--+
    |    .o+=*B=..    |
    |     .o*+o*o     |
    +----[SHA256]-----+
    $ cat deploy_key.pub
    ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI§pk§ deploy@ci
    """,
    fp=lambda r: b64(r, 32).rstrip("="),
    pk=lambda r: b64(r, 32).rstrip("="),
)
cshape(
    "clean-gpg-sign-output-and-detached-signature",
    """
    $ gpg --detach-sign --armor release-§ver§.tar.gz
    $ cat release-§ver§.tar.gz.asc
    -----BEGIN PGP SIGNATURE-----

    iHUEABYKAB0WIQ§b1§
    §b2§
    =§b3§
    -----END PGP SIGNATURE-----
    """,
    b1=lambda r: b64(r, 45),
    b2=lambda r: b64(r, 30),
    b3=lambda r: b64(r, 3),
)
cshape(
    "clean-sops-file-metadata-mac-and-age-recipients",
    """
    sops:
        age:
            - recipient: age1§r1§
              enc: |
                -----BEGIN AGE ENCRYPTED FILE-----
                YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSB§b1§
                -----END AGE ENCRYPTED FILE-----
        lastmodified: "§ts§"
        mac: ENC[AES256_GCM,data:§b2§,iv:§b3§,tag:§b4§,type:str]
        version: 3.9.4
    """,
    r1=lambda r: chars(r, _BECH.lower(), 58),
    b1=lambda r: b64(r, 60),
    b2=lambda r: b64(r, 48),
    b3=lambda r: b64(r, 24),
    b4=lambda r: b64(r, 16),
)
cshape(
    "clean-op-item-get-concealed-without-reveal",
    """
    $ op item get "Prod RDS" --vault Infra
    ID:          §lo§
    Title:       Prod RDS
    Vault:       Infra (§lo2§)
    Created:     3 months ago
    Updated:     2 days ago by Ines M.
    Fields:
      username:    rds_admin
      password:    [use 'op item get §lo§ --reveal' to reveal]
    """,
    lo=LO(26),
    lo2=LO(26),
)
cshape(
    "clean-vault-kv-metadata-get-versions",
    """
    $ vault kv metadata get -mount=secret apps/checkout
    ======= Metadata Path =======
    secret/metadata/apps/checkout
    ========== Metadata ==========
    Key                     Value
    ---                     -----
    cas_required            false
    current_version         7
    max_versions            10
    ====== Version 7 ======
    created_time     §ts§
    deletion_time    n/a
    destroyed        false
    """,
)
cshape(
    "clean-bash-history-read-s-prompt-and-env-reference",
    """
      310  read -rs -p "Vault token: " VAULT_TOKEN && export VAULT_TOKEN
      311  vault login -method=oidc role=dev
      312  export PGPASSWORD="$(vault kv get -field=password secret/db/dev)"
      313  psql -h localhost -U dev dev
    """,
)
cshape(
    "clean-powershell-get-secret-from-secretmanagement",
    """
    PS> $cred = Get-Secret -Name 'svc-backup' -Vault 'CorpVault'
    PS> $cred
    UserName                     Password
    --------                     --------
    CORP\\svc-backup System.Security.SecureString
    PS> Invoke-Command -ComputerName FS01 -Credential $cred -ScriptBlock { hostname }
    FS01
    """,
)
cshape(
    "clean-reg-export-product-ids-and-guids",
    """
    [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion]
    "ProductId"="00331-§n3§0-§n3§00-AA§n2§"
    "InstallDate"=dword:6§hex8§
    "BuildGUID"="§uuid§"
    [HKEY_LOCAL_MACHINE\\SOFTWARE\\Policies\\Microsoft\\Windows\\WindowsUpdate]
    "WUServer"="https://wsus.corp.example:8531"
    """,
)
cshape(
    "clean-systemd-unit-load-credential-encrypted",
    """
    [Service]
    ExecStart=/usr/local/bin/app --db-password-file=${CREDENTIALS_DIRECTORY}/db-pass
    LoadCredentialEncrypted=db-pass:/etc/credstore.encrypted/db-pass
    DynamicUser=yes
    ProtectSystem=strict
    """,
)
cshape(
    "clean-crontab-backup-reads-pgpass-file",
    """
    # m h dom mon dow command
    15 2 * * * PGPASSFILE=/etc/backup/.pgpass pg_dump -h §host§ -U backup shop | gzip > /backup/shop.sql.gz
    30 3 * * 0 restic -r /mnt/backup --password-file /etc/restic/pw forget --keep-weekly 8 --prune
    """,
)
cshape(
    "clean-nginx-auth-basic-user-file-and-hash-line",
    """
    location /admin/ {
        auth_basic           "Admin";
        auth_basic_user_file /etc/nginx/.htpasswd;
    }
    # /etc/nginx/.htpasswd
    ops:$apr1$§s§$§h§
    """,
    s=LO(8),
    h=lambda r: chars(r, _AN + "./", 22),
)
cshape(
    "clean-wireguard-show-public-keys-and-handshakes",
    """
    $ sudo wg show
    interface: wg0
      public key: §k1§
      private key: (hidden)
      listening port: 51820

    peer: §k2§
      endpoint: §pub§:41922
      allowed ips: 10.66.0.2/32
      latest handshake: 1 minute, 12 seconds ago
      transfer: 1.21 GiB received, 388.04 MiB sent
    """,
    k1=WG_KEY,
    k2=WG_KEY,
)
cshape(
    "clean-cisco-show-run-encrypted-type8-and-type9",
    """
    username netops privilege 15 secret 9 $9$§s1§$§h1§
    enable algorithm-type scrypt secret $9$§s2§$§h2§
    snmp-server group RO v3 priv read V3READ
    service password-encryption
    """,
    s1=lambda r: chars(r, _AN + "./", 14),
    h1=lambda r: chars(r, _AN + "./", 43),
    s2=lambda r: chars(r, _AN + "./", 14),
    h2=lambda r: chars(r, _AN + "./", 43),
)
cshape(
    "clean-openvpn-client-config-auth-user-pass-prompt",
    """
    client
    dev tun
    proto udp
    remote vpn.acme.example 1194
    auth-user-pass
    auth-nocache
    remote-cert-tls server
    cipher AES-256-GCM
    verb 3
    """,
)
cshape(
    "clean-meeting-transcript-about-password-policy",
    """
    00:12:04 Maria: So the new policy is fourteen characters minimum, no forced rotation, and we check against breached lists.
    00:12:15 Rasmus: And passphrases are fine? Like four random words?
    00:12:19 Maria: Yes, that's actually what we recommend. Nobody should say theirs out loud though, including here.
    """,
)
cshape(
    "clean-multilingual-it-notice-never-share-password",
    """
    🇩🇪 Wir fragen niemals nach Ihrem Passwort.
    🇫🇷 Nous ne vous demanderons jamais votre mot de passe.
    🇯🇵 当社がパスワードを尋ねることはありません。
    🇸🇦 لن نطلب منك كلمة المرور أبدًا.
    🇮🇳 हम कभी भी आपका पासवर्ड नहीं पूछेंगे।
    🇰🇷 당사는 절대 비밀번호를 묻지 않습니다.
    🇮🇱 לעולם לא נבקש את הסיסמה שלך.
    """,
)
cshape(
    "clean-chinese-japanese-chat-password-sent-via-vault-link",
    """
    §first§：数据库密码我已经放到 Vault 里了，路径是 secret/db/prod，有权限的同学自己取。
    §first§：了解です。パスワードはチャットに貼らないでくださいね。1Password の共有リンク（24時間有効）で送ります。
    """,
)
cshape(
    "clean-hindi-arabic-chat-otp-warning",
    """
    बैंक कभी भी OTP या पासवर्ड नहीं मांगता। किसी के साथ साझा न करें।
    البنك لا يطلب أبدًا رمز التحقق أو كلمة المرور. لا تشاركها مع أي شخص.
    """,
)
cshape(
    "clean-game-server-cfg-password-empty-and-hashes",
    """
    // server.cfg
    hostname "Acme Community"
    sv_password ""
    rcon_password ""   // rcon disabled, use the web panel (SSO)
    sv_downloadurl "https://fastdl.acme.example/cstrike/"
    // map hashes
    // de_dust2.bsp  sha1 §sha§
    """,
)
cshape(
    "clean-expo-eas-json-secrets-by-reference",
    """
    {
      "cli": {"version": ">= 13.0.0", "appVersionSource": "remote"},
      "build": {
        "production": {
          "env": {"EXPO_PUBLIC_API_URL": "https://api.acme.example"},
          "channel": "production"
        }
      },
      "submit": {"production": {"ios": {"ascAppId": "§n3§§n3§§n3§", "appleTeamId": "§up§"}}}
    }
    """,
    up=UP(10),
)
cshape(
    "clean-payment-sdk-config-from-environment",
    """
    const stripe = new Stripe(process.env.STRIPE_SECRET_KEY!, { apiVersion: '2026-01-28.clover' });
    const adyen = new Client({ apiKey: process.env.ADYEN_API_KEY!, environment: 'LIVE', liveEndpointUrlPrefix: '§hex8§-AcmeShop' });
    const paypal = new PayPalClient({ clientId: process.env.PAYPAL_CLIENT_ID!, clientSecret: process.env.PAYPAL_CLIENT_SECRET! });
    """,
)
cshape(
    "clean-iot-device-provisioning-report-serials-and-fingerprints",
    """
    device        serial           cert_sha1                                  fw
    press-01      PX§up§          §sha§   2.§n§.1
    press-02      PX§up2§          §sha2§   2.§n§.1
    status: 2/2 provisioned via DPS enrollment group 'plant7' (X.509, no symmetric keys)
    """,
    up=UP(10),
    up2=UP(10),
)
cshape(
    "clean-lorawan-device-registration-eui-only",
    """
    $ ttn-lw-cli end-devices get soil-app soil-node-§n§ --dev-eui --join-eui --name
    {
      "ids": {"device_id": "soil-node-§n§", "application_ids": {"application_id": "soil-app"},
              "dev_eui": "70B3D57ED00§hex8§", "join_eui": "0000000000000000"},
      "name": "Soil sensor §n§",
      "root_keys": "<stored in Join Server, not readable>"
    }
    """,
)
cshape(
    "clean-har-entry-authorization-header-removed-by-export",
    """
    {"request": {"method": "GET", "url": "https://api.acme.example/v2/me",
      "headers": [{"name": "accept", "value": "application/json"}, {"name": "x-request-id", "value": "§uuid§"}],
      "cookies": [], "headersSize": -1},
     "response": {"status": 200, "headers": [{"name": "etag", "value": "W/\\"§hex12§\\""}]},
     "_comment": "Sensitive headers (Authorization, Cookie) were stripped on export"}
    """,
)
cshape(
    "clean-dotenv-vault-example-and-keys-placeholders",
    """
    # .env.example — copy to .env
    DATABASE_URL=postgres://<user>:<password>@localhost:5432/app
    REDIS_URL=redis://localhost:6379/0
    OPENAI_API_KEY=           # https://platform.openai.com/api-keys
    STRIPE_SECRET_KEY=sk_test_<your-test-key>
    JWT_SECRET=<generate with: openssl rand -base64 48>
    """,
)
cshape(
    "clean-token-budget-and-max-tokens-config",
    """
    model:
      name: claude-sonnet-4-5
      max_tokens: 8192
      max_input_tokens: 200000
      thinking: {type: enabled, budget_tokens: 4096}
    tokenizer:
      vocab_size: 200064
      bos_token: "<|begin_of_text|>"
      pad_token_id: §n3§
    """,
)
cshape(
    "clean-jwt-in-docs-with-example-signature-placeholder",
    """
    The access token is a JWT with three parts: header.payload.signature, e.g.

        eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.<payload>.<signature>

    Decode the payload with `jq -R 'split(".") | .[1] | @base64d | fromjson'`. The `exp` claim is in
    seconds since the epoch; refresh when fewer than 60 remain.
    """,
)
cshape(
    "clean-k8s-secret-with-empty-and-placeholder-stringdata",
    """
    apiVersion: v1
    kind: Secret
    metadata:
      name: api-secrets
      annotations:
        avp.kubernetes.io/path: "secret/data/api"
    type: Opaque
    stringData:
      STRIPE_API_KEY: <stripe-api-key>
      SENTRY_DSN: <sentry-dsn>
    """,
)
cshape(
    "clean-checksum-manifest-and-commit-shas-release-notes",
    """
    ## v§ver§ (§day§)
    - fix: retry on 429 (§short§)
    - feat: passkeys for admin users (§short§)

    SHA256SUMS
    §sha256§  acme-cli_linux_amd64.tar.gz
    §sha256§  acme-cli_darwin_arm64.tar.gz
    """,
)
cshape(
    "clean-uuid-heavy-api-response-ids-and-etags",
    """
    {"data":[{"id":"§uuid§","type":"api_key","attributes":{"name":"ci-deploy","prefix":"ak_live_","last_four":"9QfX","created_at":"§ts§","scopes":["deploy:write"]}},{"id":"§uuid2§","type":"api_key","attributes":{"name":"grafana","prefix":"ak_live_","last_four":"Lm2c","revoked_at":"§ts2§"}}],"meta":{"etag":"\\"§hex12§§hex8§\\""}}
    """,
)


SHAPES = tuple(name for name, _ in _CRED)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape (values drawn from `seed`), then the clean documents."""
    rng = random.Random(seed)
    made = [Document(name, *fn(rng)) for name, fn in _CRED]
    return made + [Document(name, fn(rng)) for name, fn in _CLEAN]


def generate(seed: int = SEED) -> list[Document]:
    """The same documents as `documents`."""
    return documents(seed)
