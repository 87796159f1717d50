"""The HOLDOUT17 part of the secret corpus: a seventeenth blind part, written after HOLDOUT to HOLDOUT16.

Written blind: its author read only the `Document` type and the corpus docstring, the structure test of the blind
parts, the HOLDOUT16 generator (as the model of the interface) and the shape names of every earlier part (only to
avoid reusing them); never the detector, its rules, docs, tests, state or figures, and no document was run
through a detector, a redactor or a secret scanner. It is weighted like the world an agent works in, in 2026:
about two thirds everyday developer and ops text in forms the earlier shape names have not used, one third long
tail:

- shell sessions and histories (bash, zsh, fish, nushell, PowerShell, cmd, tmux captures, `ps`/`/proc` output,
  `env`/`printenv`/`declare -x` dumps, heredocs, sudo/sshpass/expect one-liners);
- CI logs of many systems (GitHub Actions, GitLab, Jenkins, CircleCI, Buildkite, Azure Pipelines, Bitbucket,
  Drone, Woodpecker, TeamCity, Travis, Semaphore, Harness, Dagger, Earthly, Cloud Build, CodeBuild, Render,
  Netlify, Railway) with `set -x` echoes, env dumps and build-arg leaks;
- configs of many real tools in .env, INI, TOML, YAML, JSON, HCL, XML and properties: data pipelines (dbt,
  Meltano, Singer, Airbyte, Kafka Connect, Flink SQL, Spark, Hadoop, dlt, Dagster, Prefect, Kedro), observability
  (OTel collector, Telegraf, Promtail, Gatus, Uptime Kuma, Nagios), CMS and shops, MCP client configs;
- docker, compose, Kubernetes, KEDA, Dapr, Argo Events and operators' manifests;
- curl, httpie, wget, xh and hurl invocations; HTTP traces from curl -v, mitmproxy, Charles, Python http.client
  debug, Go DumpRequest, undici and .NET logging;
- SDK snippets in Python, TypeScript, Go, Rust, Java, Kotlin, C#, Ruby, PHP, Swift, Dart, Elixir, Scala, R,
  Julia, Lua, Perl, Clojure, Haskell, OCaml, Nim, Crystal and Apps Script setting a client's key;
- connection strings and DSNs of many databases and brokers;
- tool-call JSON and agent traces (OpenAI Responses, Anthropic tool_use, MCP, Claude Code and Codex transcripts,
  OpenHands, SWE-agent, smolagents, Mastra, n8n, Node-RED, A2A), error messages and stack traces quoting
  configs, Markdown/HTML/tables, READMEs and runbooks;
- tickets and chat where a person pastes or tells a password, in many languages and scripts;
- the long tail: routers, NAS, BMCs, printers, cameras, VoIP phones, game and streaming servers, smart-home
  hubs and energy meters, crypto nodes, scientific and statistics tools, mainframe and ERP niches.

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more,
drawn from the seeded `random.Random` and shaped as the vendor's published format where there is one. Every
credential a document holds is planted; usernames, ids, public keys, hashes and masked echoes are not. A
base64-wrapped or URL-encoded secret is planted as the text that appears.

Clean documents hold no credential but look-alikes: hashes, ids, UUIDs, commit SHAs, placeholders, env
references, token counts, public keys, ciphertexts, prose about passwords and configs of non-secret settings.

SEED = 2026120617. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones: 451 credential shapes planting 512 values, and 71 clean documents.
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

SEED = 2026120617

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
_BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_URL = _AN + "-_"
_WORDS = tuple(
    """
    anvil bramble cinder drizzle estuary fennel gossamer hazel icicle jasper kiln lichen mistral nettle oxbow
    parsnip quarry rhubarb sorrel tundra upland vetch wicker yonder zinnia alder bluff cairn dormouse egret
    flint grotto heather inlet jackdaw knoll larch moor nutmeg otter pylon quince rook shale thrush umbra
    vole weir yew zither badger clover dapple ember fable gravel hamlet ivory jigsaw kettle loft mallow
    """.split()
)


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _has(v: str, *tests: Callable[[str], bool]) -> bool:
    return all(any(t(c) for c in v) for t in tests)


def an(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _AN, n)
        if _has(v, str.isdigit, str.islower, str.isupper):
            return v


def lo(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _LO, n)
        if _has(v, str.isdigit, str.isalpha):
            return v


def up(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _UPA, n)
        if _has(v, str.isdigit, str.isalpha):
            return v


def hx(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _HEXS, n)
        if _has(v, str.isdigit, str.isalpha):
            return v


def ul(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _URL, n)
        if _has(v, str.isdigit, str.islower, str.isupper):
            return v


def b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64u(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def sym(rng: random.Random, n: int, marks: str = "!#%*+-=?@^_~.") -> str:
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if _has(v, lambda c: c in marks, str.isdigit, str.isupper, str.islower):
            return v


def safe(rng: random.Random, n: int) -> str:
    """A generated password whose marks survive URLs, XML, JSON, YAML and shell quoting unescaped."""
    return sym(rng, n, "-_.~")


def person(rng: random.Random) -> str:
    """What a person picks: a capitalised word, maybe another, a number or a year, maybe a mark."""
    while True:
        w = rng.choice(_WORDS).capitalize()
        if rng.random() < 0.5:
            w += rng.choice(["", "-", "."]) + rng.choice(_WORDS)
        v = w + str(rng.choice([rng.randint(10, 99), rng.randint(1975, 2026), rng.randint(100, 9999)]))
        v += rng.choice(["", "!", "#", "*", "?", "@", "+"])
        if len(v) >= 9:
            return v


def phrase(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    """A generated passphrase: n words, one capitalised, with a digit, as Bitwarden and 1Password make them."""
    ws = rng.sample(_WORDS, n)
    i = rng.randrange(n)
    ws[i] = ws[i].capitalize()
    j = rng.randrange(n)
    ws[j] = ws[j] + str(rng.randint(0, 9))
    return sep.join(ws)


def apple(rng: random.Random) -> str:
    """Safari's strong password: three groups of six, one capital and one digit."""
    while True:
        v = "-".join(chars(rng, string.ascii_lowercase + string.digits, 6) for _ in range(3))
        i = rng.choice([k for k, c in enumerate(v) if c.isalpha()])
        v = v[:i] + v[i].upper() + v[i + 1 :]
        if _has(v, str.isdigit):
            return v


def pwgen(rng: random.Random, n: int = 10) -> str:
    """pwgen's pronounceable style: consonant-vowel runs with a capital and a digit."""
    cons, vows = "bcdfghjkmnprstvwxz", "aeiou"
    while True:
        s = "".join(rng.choice(cons if k % 2 == 0 else vows) for k in range(n - 1))
        i = rng.randrange(n - 1)
        s = s[:i] + s[i].upper() + s[i + 1 :]
        k = rng.randrange(n)
        v = s[:k] + str(rng.randint(0, 9)) + s[k:]
        if _has(v, str.isupper):
            return v


def temp_pw(rng: random.Random) -> str:
    """A helpdesk temporary password: Capital, lower letters, digits, sometimes a mark (Entra style)."""
    return (
        rng.choice(string.ascii_uppercase)
        + chars(rng, string.ascii_lowercase, 2)
        + chars(rng, string.digits, 5)
        + rng.choice(["", "!", "$"])
    )


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def dg(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + chars(rng, string.digits, n - 1)


def seg(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict, alg: str = "HS256") -> str:
    size = 32 if alg.startswith("HS") else 64 if alg in ("EdDSA", "ES256") else 256
    return f"{seg({'alg': alg, 'typ': 'JWT'})}.{seg(claims)}.{b64u(rng, size)}"


def pem(
    rng: random.Random, kind: str = "PRIVATE KEY", head: str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", n: int = 6
) -> str:
    lines = [(head + b64(rng, 60))[:64]] + [b64(rng, 48) for _ in range(n - 1)] + [b64(rng, 19)]
    return "\n".join([f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"])


def openssh_key(rng: random.Random) -> str:
    head = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    lines = [head, b64(rng, 51), b64(rng, 51), b64(rng, 51), b64(rng, 30)]
    return "\n".join(["-----BEGIN OPENSSH PRIVATE KEY-----", *lines, "-----END OPENSSH PRIVATE KEY-----"])


def basic(u: str, p: str) -> str:
    return base64.b64encode(f"{u}:{p}".encode()).decode()


def pct(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False)


def jc(obj: object) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ---- maker factories ----------------------------------------------------------------------------------------


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


def SYM(n: int, marks: str = "!#%*+-=?@^_~.") -> Maker:
    return lambda rng: sym(rng, n, marks)


def SAFE(n: int) -> Maker:
    return lambda rng: safe(rng, n)


def DG(n: int) -> Maker:
    return lambda rng: dg(rng, n)


def PHRASE(n: int = 4, sep: str = "-") -> Maker:
    return lambda rng: phrase(rng, n, sep)


def PWGEN(n: int = 10) -> Maker:
    return lambda rng: pwgen(rng, n)


def JWT(claims: dict, alg: str = "HS256") -> Maker:
    return lambda rng: jwt(rng, claims, alg)


PERSON: Maker = person
APPLE: Maker = apple
TEMP: Maker = temp_pw
UUID: Maker = uid
PEM: Maker = pem
RSA_PEM: Maker = lambda rng: pem(rng, "RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 7)  # noqa: E731
EC_PEM: Maker = lambda rng: pem(rng, "EC PRIVATE KEY", "MHcCAQEEI", 2)  # noqa: E731
OSSH: Maker = openssh_key

# ---- vendor formats (published prefixes and lengths) ---------------------------------------------------------

OPENAI = cat("sk-proj-", UL(74), "T3BlbkFJ", UL(74))
OPENAI_ADMIN = cat("sk-admin-", UL(74), "T3BlbkFJ", UL(74))
ANTHROPIC = cat("sk-ant-api03-", UL(93), "AA")
ANTHROPIC_ADMIN = cat("sk-ant-admin01-", UL(93), "AA")
OPENROUTER = cat("sk-or-v1-", HX(64))
GROQ = cat("gsk_", AN(52))
XAI = cat("xai-", AN(80))
PPLX = cat("pplx-", AN(48))
MISTRAL = AN(32)
COHERE = AN(40)
TOGETHER = cat("tgp_v1_", UL(43))
FIREWORKS = cat("fw_", AN(24))
DEEPSEEK = cat("sk-", HX(32))
REPLICATE = cat("r8_", AN(37))
HF = cat("hf_", lambda r: chars(r, string.ascii_letters, 34))
GOOGLE = cat("AIza", UL(35))
LANGSMITH = cat("lsv2_pt_", HX(32), "_", HX(10))
LANGFUSE_SK = cat("sk-lf-", UUID)
PINECONE = cat("pcsk_", AN(6), "_", AN(63))
TAVILY = cat("tvly-dev-", AN(32))
FIRECRAWL = cat("fc-", HX(32))
ELEVEN = cat("sk_", HX(48))
CEREBRAS = cat("csk-", LO(48))
GHP = cat("ghp_", AN(36))
GHO = cat("gho_", AN(36))
GHU = cat("ghu_", AN(36))
GHS = cat("ghs_", AN(36))
GH_FINE = cat("github_pat_11", UP(22), "_", AN(59))
GLPAT = cat("glpat-", UL(20))
GLDT = cat("gldt-", UL(20))
ATLASSIAN = cat("ATATT3xFfGF0", UL(170), "=", HXU(8))
BB_APP = cat("ATBB", AN(28), HXU(8))
LINEAR = cat("lin_api_", AN(40))
NOTION = cat("ntn_", DG(11), AN(35))
AIRTABLE = cat("pat", AN(14), ".", HX(64))
SLACK_BOT = cat("xoxb-", DG(12), "-", DG(13), "-", AN(24))
SLACK_USER = cat("xoxp-", DG(12), "-", DG(12), "-", DG(13), "-", HX(32))
SLACK_APP = cat("xapp-1-A", UP(10), "-", DG(13), "-", HX(64))
SLACK_HOOK = cat("https://hooks.slack.com/services/T", UP(10), "/B", UP(10), "/", AN(24))
DISCORD_HOOK = cat("https://discord.com/api/webhooks/", DG(19), "/", UL(68))
STRIPE_SK = cat("sk_live_51", AN(97))
STRIPE_RK = cat("rk_live_51", AN(97))
STRIPE_WH = cat("whsec_", AN(32))
TWILIO_TOKEN = HX(32)
SENDGRID = cat("SG.", UL(22), ".", UL(43))
MAILGUN = cat(HX(32), "-", HX(8), "-", HX(8))
RESEND = cat("re_", AN(8), "_", AN(24))
MAILCHIMP = lambda r: hx(r, 32) + "-us" + str(r.randint(2, 21))  # noqa: E731
BREVO = cat("xkeysib-", HX(64), "-", AN(16))
SHOPIFY = cat("shpat_", HX(32))
SHOPIFY_SS = cat("shpss_", HX(32))
SQUARE = cat("EAAA", UL(60))
PAYPAL_SECRET = cat("E", UL(79))
PAYSTACK = cat("sk_live_", HX(40))
MOLLIE = cat("live_", AN(30))
DD_API = HX(32)
DD_APP = HX(40)
NEWRELIC = cat("NRAK-", UP(27))
NR_LICENSE = cat(HX(36), "NRAL")
SENTRY_USER = cat("sntryu_", HX(64))
GRAFANA_SA = cat("glsa_", AN(32), "_", HX(8))
GRAFANA_CLOUD = cat("glc_", B64(72))
PD_ROUTING = HX(32)
CF_TOKEN = UL(40)
NETLIFY = cat("nfp_", AN(36))
VERCEL = AN(24)
RENDER = cat("rnd_", AN(32))
HEROKU = cat("HRKU-AA", UL(58))
FLY = cat("FlyV1 fm2_", B64(180))
DO_TOKEN = cat("dop_v1_", HX(64))
LINODE = HX(64)
VULTR = UP(36)
HCLOUD = AN(64)
SCW_SECRET = UUID
AKIA = cat("AKIA", lambda r: chars(r, _B32S, 16))
ASIA = cat("ASIA", lambda r: chars(r, _B32S, 16))


def AWS_SECRET(rng: random.Random) -> str:
    while True:
        v = chars(rng, _AN + "/+", 40)
        if _has(v, str.isdigit, str.islower, str.isupper):
            return v


AWS_SESSION = cat("IQoJb3JpZ2luX2VjE", B64(280))
AZ_SECRET = cat(AN(3), "8Q~", UL(37))
AZ_STORAGE = B64(64)
ALI_ID = cat("LTAI5t", AN(18))
ALI_SECRET = AN(30)
TENCENT_ID = cat("AKID", AN(32))
TENCENT_SECRET = AN(32)
DOPPLER_ST = cat("dp.st.prd.", AN(43))
OP_SA = cat("ops_eyJ", B64U(300))
INFISICAL_ST = lambda r: f"st.{uid(r)}.{hx(r, 32)}.{hx(r, 32)}"  # noqa: E731
VAULT = cat("hvs.", UL(92))
PULUMI = cat("pul-", HX(40))
TFC = cat(AN(14), ".atlasv1.", AN(67))
NPM = cat("npm_", AN(36))
PYPI = cat("pypi-AgEIcHlwaS5vcmc", UL(150))
RUBYGEMS = cat("rubygems_", HX(48))
NUGET = cat("oy2", LO(43))
DOCKER_PAT = cat("dckr_pat_", UL(27))
POSTMAN = cat("PMAK-", HX(24), "-", HX(34))
SONAR = cat("squ_", HX(40))
MAPBOX_SK = cat("sk.eyJ1IjoiYWNtZS1tYXBzIiwiYSI6I", AN(22), "J9.", UL(22))
SUPABASE_PAT = cat("sbp_", HX(40))
SUPABASE_SECRET = cat("sb_secret_", UL(31))
CLERK = cat("sk_live_", AN(40))
OKTA = cat("00", UL(40))
FIGMA = cat("figd_", UL(40))
CONTENTFUL = cat("CFPAT-", UL(43))
HUBSPOT = lambda r: "pat-na1-" + uid(r)  # noqa: E731
POSTHOG_PERSONAL = cat("phx_", AN(43))
LD_SDK = lambda r: "sdk-" + uid(r)  # noqa: E731
STATSIG = cat("secret-", AN(43))
NEON = cat("napi_", LO(64))
PSCALE_PW = cat("pscale_pw_", UL(43))
TS_API = cat("tskey-api-k", AN(11), "CNTRL-", AN(33))
TS_AUTH = cat("tskey-auth-k", AN(11), "CNTRL-", AN(33))
NGROK = cat("2", AN(26), "_", AN(21))
BUILDKITE = cat("bkua_", HX(40))
CIRCLE = cat("CCIPAT_", AN(22), "_", HX(40))
MATRIX = cat("syt_", B64U(9), "_", AN(20), "_", AN(6))
BSKY_APP = lambda r: "-".join(chars(r, string.ascii_lowercase + string.digits, 4) for _ in range(4))  # noqa: E731
NSEC = cat("nsec1", lambda r: chars(r, _BECH, 58))
TWITCH_STREAM = cat("live_", DG(9), "_", AN(30))
YT_STREAM = lambda r: "-".join(chars(r, _LO, 4) for _ in range(5))  # noqa: E731
TELEGRAM_BOT = cat(DG(10), ":AA", UL(33))
AGE_KEY = cat("AGE-SECRET-KEY-1", lambda r: chars(r, _BECH.upper(), 58))
WG_KEY = B64(32)
DISCORD_BOT = lambda r: (  # noqa: E731
    base64.b64encode(str(r.randint(10**17, 10**18)).encode()).decode().rstrip("=")
    + "."
    + ul(r, 6)
    + "."
    + ul(r, 38)
)
JFROG = cat("cmVmdGtuOjAxOjE3", AN(48))
SNYK = UUID
CODECOV = UUID
PLANETSCALE_TKN = cat("pscale_tkn_", UL(43))
UPSTASH = cat("AX", UL(60), "=")
TURSO = JWT({"a": "rw", "iat": 1767225600, "id": "3f2c1e9a-db"}, "EdDSA")
MODAL_ID = cat("ak-", AN(22))
MODAL_SECRET = cat("as-", AN(22))
E2B = cat("e2b_", HX(40))
BROWSERBASE = cat("bb_live_", UL(27))
EXA = UUID
QDRANT = cat(UL(32), "|", UL(32))
WEAVIATE = AN(40)
SQUARE_SECRET = cat("sq0csp-", UL(43))
RAZORPAY_SECRET = AN(24)
PLAID_SECRET = HX(30)
BRAINTREE_PRIV = HX(32)
ADYEN = cat("AQE", UL(40), "=-", UL(44), "=-", UL(12))
OCTOPUS = cat("sk_live_", AN(24))
STEAM = HXU(32)
RIOT = lambda r: "RGAPI-" + uid(r)  # noqa: E731
PLEX = UL(20)
ARR = HX(32)
XIAOMI = HX(32)
HUE = UL(40)
RAPIDAPI = cat(HX(10), "msh", HX(15), "p", HX(6), "jsn", HX(12))
OPENAI_SVC = cat("sk-svcacct-", UL(74), "T3BlbkFJ", UL(74))
GITEA = HX(40)
BITWARDEN_SM = lambda r: f"0.{uid(r)}.{an(r, 30)}:{b64(r, 16)}"  # noqa: E731
DATABRICKS = cat("dapi", HX(32))
SNOWFLAKE_PAT = JWT({"p": "6:1203", "r": "ANALYST", "iss": "SF"}, "ES256")
CONFLUENT_SECRET = cat(AN(40), "+", AN(23))
ASANA = lambda r: f"2/{dg(r, 16)}/{dg(r, 16)}:{hx(r, 32)}"  # noqa: E731
DROPBOX = cat("sl.u.", UL(140))
ZOOM_SECRET = AN(32)
AUTH0_SECRET = UL(64)
TWITTER_BEARER = cat("AAAAAAAAAAAAAAAAAAAAA", AN(30), "%3D", AN(50))
SHOPIFY_CA = cat("shpca_", HX(32))

# ---- noise ---------------------------------------------------------------------------------------------------

_FIRST = (
    "abena bogdan cyrus dilnoza elif fiona gustavo hyejin ines jomo kalani lukas marisol nneka oskar pallavi "
    "radu saoirse tarek uma valeria wen xolani yara zeynep"
).split()
_HOSTS = (
    "pg-main.internal db02.prod.lan warehouse.svc.cluster.local mq-a.corp.example api.int.example "
    "reports-db.eu.example cache-2.internal broker-1.stream.lan runner-07.ci.example nas.home.arpa"
).split()


def _user(rng: random.Random) -> str:
    return (
        rng.choice(_FIRST)
        + rng.choice(["", ".", "_"])
        + rng.choice(["ops", "dev", "svc", "app", str(rng.randint(2, 99))])
    )


def _when(rng: random.Random) -> str:
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
    )


_NOISE: dict[str, Maker] = {
    "user": _user,
    "first": lambda r: r.choice(_FIRST).capitalize(),
    "first2": lambda r: r.choice(_FIRST).capitalize(),
    "host": lambda r: r.choice(_HOSTS),
    "ip": lambda r: f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
    "ip2": lambda r: f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 254)}",
    "lan": lambda r: f"192.168.{r.randint(0, 9)}.{r.randint(2, 254)}",
    "pub": lambda r: f"198.51.100.{r.randint(2, 254)}",
    "uuid": uid,
    "uuid2": uid,
    "sha": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest(),
    "sha2": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest(),
    "short": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest()[:7],
    "short2": lambda r: hashlib.sha1(r.randbytes(12)).hexdigest()[:7],
    "sha256": lambda r: hashlib.sha256(r.randbytes(12)).hexdigest(),
    "sha256b": lambda r: hashlib.sha256(r.randbytes(12)).hexdigest(),
    "md5": lambda r: hashlib.md5(r.randbytes(12)).hexdigest(),
    "ts": _when,
    "ts2": _when,
    "day": lambda r: f"2026-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}",
    "hms": lambda r: f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}",
    "hms2": lambda r: f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}",
    "port": lambda r: str(r.randint(1025, 65000)),
    "n": lambda r: str(r.randint(2, 99)),
    "n2": lambda r: str(r.randint(100, 999)),
    "n3": lambda r: str(r.randint(1000, 99999)),
    "pid": lambda r: str(r.randint(1200, 65000)),
    "trace": lambda r: r.randbytes(16).hex(),
    "span": lambda r: r.randbytes(8).hex(),
    "acct": lambda r: dg(r, 12),
    "ticket": lambda r: str(r.randint(10000, 99999)),
    "email": lambda r: (
        _user(r).replace("_", ".") + "@" + r.choice(["example.com", "example.org", "corp.example"])
    ),
    "ver": lambda r: f"{r.randint(0, 9)}.{r.randint(0, 40)}.{r.randint(0, 20)}",
    "hex8": lambda r: r.randbytes(4).hex(),
    "hex12": lambda r: r.randbytes(6).hex(),
    "ms": lambda r: str(r.randint(3, 2500)),
    "tok": lambda r: str(r.randint(50, 4000)),
    "callid": lambda r: "call_" + "".join(r.choice(_AN) for _ in range(24)),
    "toolu": lambda r: "toolu_01" + "".join(r.choice(_AN) for _ in range(22)),
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

# ---- shell sessions and histories ------------------------------------------------------------------------------

shape(
    "bash-session-pg-dump-pgpassword-prefix-then-gzip-to-s3",
    """
    §user§@bastion:~$ PGPASSWORD='§P§' pg_dump -h §host§ -U reporting -Fc orders > orders-§day§.dump
    §user§@bastion:~$ ls -lh orders-§day§.dump
    -rw-rw-r-- 1 §user§ §user§ 412M §day§ §hms§ orders-§day§.dump
    §user§@bastion:~$ gzip -9 orders-§day§.dump && aws s3 cp orders-§day§.dump.gz s3://acme-db-dumps/orders/
    upload: ./orders-§day§.dump.gz to s3://acme-db-dumps/orders/orders-§day§.dump.gz
    """,
    P=SAFE(20),
)
shape(
    "zsh-session-sshpass-p-rsync-to-nas",
    """
    ➜  photos git:(main) sshpass -p "§P§" rsync -avz --progress ./2026/ admin@§lan§:/volume1/photo/2026/
    sending incremental file list
    2026/03/IMG_§n3§.HEIC
          2,418,112 100%   11.02MB/s    0:00:00 (xfr#1, to-chk=311/340)
    sent 612,004,211 bytes  received 6,402 bytes  9,882,310.21 bytes/sec
    """,
    P=PERSON,
)
shape(
    "bash-history-redis-cli-no-auth-warning-a-flag",
    """
     1012  kubectl -n cache port-forward svc/redis-master 6379:6379 &
     1013  redis-cli -h 127.0.0.1 -p 6379 -a '§P§' --no-auth-warning INFO keyspace
     1014  redis-cli -h 127.0.0.1 -p 6379 -a '§P§' --no-auth-warning --scan --pattern 'sess:*' | wc -l
     1015  fg
    """,
    P=AN(32),
)
shape(
    "nushell-history-txt-let-env-anthropic-key",
    """
    # ~/.config/nushell/history.txt
    ls | where size > 10mb
    $env.ANTHROPIC_API_KEY = "§K§"
    claude -p "summarise the failing tests in ci.log" | save summary.md
    open summary.md | lines | first 20
    """,
    K=ANTHROPIC,
)
shape(
    "powershell-psreadline-consolehost-history-connect-mggraph-secret",
    """
    # %APPDATA%\\Microsoft\\Windows\\PowerShell\\PSReadLine\\ConsoleHost_history.txt
    Install-Module Microsoft.Graph -Scope CurrentUser
    $sec = ConvertTo-SecureString '§S§' -AsPlainText -Force
    $cred = New-Object System.Management.Automation.PSCredential('§uuid§', $sec)
    Connect-MgGraph -TenantId '§uuid2§' -ClientSecretCredential $cred
    Get-MgUser -Top 5 | Select-Object DisplayName,UserPrincipalName
    """,
    S=AZ_SECRET,
)
shape(
    "cmd-exe-session-net-use-mapped-drive-password-positional",
    """
    Microsoft Windows [Version 10.0.26100.3476]
    (c) Microsoft Corporation. All rights reserved.

    C:\\Users\\§first§>net use Z: \\\\fs01.corp.example\\finance §P§ /user:CORP\\svc-finance /persistent:no
    The command completed successfully.

    C:\\Users\\§first§>dir Z:\\close\\2026-Q1
    """,
    P=PERSON,
)
shape(
    "ps-auxww-output-java-process-dspring-datasource-password",
    """
    $ ps auxww | grep [j]ava
    app       §pid§  4.2 12.8 8123456 2104532 ?    Ssl  §hms§  41:07 /usr/lib/jvm/java-21/bin/java -Xms2g -Xmx4g -Dspring.profiles.active=prod -Dspring.datasource.url=jdbc:postgresql://§host§:5432/ledger -Dspring.datasource.username=ledger_app -Dspring.datasource.password=§P§ -jar /opt/ledger/ledger-§ver§.jar
    """,
    P=SYM(18, "!%*+-=?@^_~."),
)
shape(
    "proc-pid-cmdline-tr-nul-mongodump-uri",
    """
    root@db-tools:~# cat /proc/§pid§/cmdline | tr '\\0' ' '; echo
    mongodump --uri=mongodb+srv://backup:§P§@cluster0.§hex8§.mongodb.net/ --gzip --archive=/backups/mongo-§day§.gz --readPreference=secondary
    """,
    P=SAFE(24),
)
shape(
    "declare-x-listing-in-container-shell-sentry-auth-token",
    """
    / # declare -x
    declare -x HOME="/root"
    declare -x HOSTNAME="web-§hex8§-§hex12§"
    declare -x NODE_ENV="production"
    declare -x PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    declare -x SENTRY_AUTH_TOKEN="§T§"
    declare -x SENTRY_ORG="acme"
    declare -x SHLVL="1"
    """,
    T=SENTRY_USER,
)
shape(
    "printenv-sorted-in-ci-debug-step-replicate-and-hf",
    """
    + printenv | sort | grep -E '^(HF_|REPLICATE_|CI_|RUNNER_)'
    CI_COMMIT_SHA=§sha§
    CI_JOB_ID=§n3§
    HF_HOME=/cache/hf
    HF_TOKEN=§H§
    REPLICATE_API_TOKEN=§R§
    RUNNER_OS=Linux
    """,
    H=HF,
    R=REPLICATE,
)
shape(
    "bash-heredoc-cat-into-pgpass-then-chmod",
    """
    $ cat > ~/.pgpass <<'EOF'
    §host§:5432:analytics:metabase:§P§
    EOF
    $ chmod 600 ~/.pgpass
    $ psql -h §host§ -U metabase analytics -c 'select now()'
                  now
    -------------------------------
     §day§ §hms§.41207+00
    (1 row)
    """,
    P=SAFE(22),
)
shape(
    "sudo-s-echo-pipe-in-deploy-script",
    """
    #!/usr/bin/env bash
    # deploy.sh — quick and dirty, runs from the jump host
    set -euo pipefail
    HOST=deploy@§ip§
    ssh "$HOST" "echo '§P§' | sudo -S systemctl restart api.service"
    ssh "$HOST" "echo '§P§' | sudo -S journalctl -u api.service -n 20 --no-pager"
    """,
    P=PERSON,
)
shape(
    "expect-spawn-ssh-copy-id-send-password-script",
    """
    #!/usr/bin/expect -f
    set timeout 20
    spawn ssh-copy-id -i /home/§user§/.ssh/id_ed25519.pub pi@§lan§
    expect {
        "yes/no" { send "yes\\r"; exp_continue }
        "password:" { send "§P§\\r" }
    }
    expect eof
    """,
    P=PWGEN(10),
)
shape(
    "fish-session-set-x-openrouter-key-then-curl-models",
    """
    ~/src/agent (main)> set -x OPENROUTER_API_KEY §K§
    ~/src/agent (main)> curl -s https://openrouter.ai/api/v1/key -H "Authorization: Bearer $OPENROUTER_API_KEY" | jq .data.label
    "agent-dev"
    """,
    K=OPENROUTER,
)
shape(
    "tmux-capture-pane-mysql-shell-identified-by-alter-user",
    """
    $ tmux capture-pane -pt db:0 -S -30
    mysql> ALTER USER 'grafana'@'%' IDENTIFIED BY '§P§';
    Query OK, 0 rows affected (0.02 sec)

    mysql> FLUSH PRIVILEGES;
    Query OK, 0 rows affected (0.01 sec)
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "bash-set-x-trace-curl-user-colon-token-artifact-upload",
    """
    + VERSION=§ver§
    + curl -sSf -u ci-publisher:§T§ -T dist/acme-agent-§ver§.tar.gz https://nexus.corp.example/repository/raw-releases/acme-agent/§ver§/
    + echo 'uploaded'
    uploaded
    """,
    T=AN(40),
)
shape(
    "zsh-history-extended-export-groq-and-ollama-host",
    """
    : 1767§n3§:0;export OLLAMA_HOST=http://§lan§:11434
    : 1767§n3§:0;export GROQ_API_KEY=§K§
    : 1767§n3§:0;uv run python bench.py --provider groq --model llama-3.3-70b-versatile
    """,
    K=GROQ,
)
shape(
    "bash-session-openssl-rand-output-used-as-jwt-secret",
    """
    $ openssl rand -base64 48
    §S§
    $ fly secrets set JWT_SIGNING_SECRET='§S§' -a acme-api
    Secrets are staged for the first deployment
    """,
    S=B64(48),
)
shape(
    "powershell-session-invoke-restmethod-headers-hashtable-bearer",
    """
    PS C:\\work> $h = @{ Authorization = "Bearer §T§"; Accept = "application/json" }
    PS C:\\work> Invoke-RestMethod -Uri https://api.linear.app/graphql -Method Post -Headers $h -Body '{"query":"{ viewer { id name } }"}' -ContentType application/json

    data
    ----
    @{viewer=}
    """,
    T=LINEAR,
)
shape(
    "cmd-setx-persist-user-env-var-output",
    """
    C:\\dev>setx DEEPSEEK_API_KEY "§K§"

    SUCCESS: Specified value was saved.

    C:\\dev>echo %DEEPSEEK_API_KEY%
    %DEEPSEEK_API_KEY%
    """,
    K=DEEPSEEK,
)
shape(
    "bash-read-prompt-transcript-password-echoed-by-typo",
    """
    $ read -p "vault unseal key: " KEY
    vault unseal key: §K§
    $ vault operator unseal "$KEY"
    Key                Value
    ---                -----
    Seal Type          shamir
    Sealed             false
    """,
    K=B64(33),
)
shape(
    "bash-session-htpasswd-nbb-stdout-then-nginx-reload",
    """
    $ htpasswd -nbB grafana '§P§' | sudo tee /etc/nginx/.htpasswd-grafana
    grafana:$2y$05$§hex12§§hex12§§hex12§§hex8§.
    $ sudo nginx -t && sudo systemctl reload nginx
    nginx: configuration file /etc/nginx/nginx.conf test is successful
    """,
    P=PWGEN(12),
)
shape(
    "docker-exec-it-psql-connection-uri-argument",
    """
    $ docker exec -it pg16 psql "postgresql://app:§P§@localhost:5432/app?sslmode=disable" -c '\\dt'
                List of relations
     Schema |     Name      | Type  | Owner
    --------+---------------+-------+-------
     public | invoices      | table | app
     public | schema_migrations | table | app
    """,
    P=SAFE(18),
)
shape(
    "bash-alias-in-bashrc-mysql-login-glued-p",
    """
    # ~/.bashrc (excerpt)
    alias ll='ls -alF'
    alias k='kubectl'
    alias proddb='mysql -h §host§ -u readonly -p§P§ shop_prod'
    export EDITOR=nvim
    """,
    P=PWGEN(11),
)
shape(
    "ssh-config-localcommand-with-token-and-proxyjump",
    """
    # ~/.ssh/config
    Host gpu-box
        HostName §pub§
        User ubuntu
        ProxyJump bastion
        PermitLocalCommand yes
        LocalCommand curl -s -X POST "https://ntfy.sh/acme-logins" -H "Authorization: Bearer §T§" -d "login to %n"
    """,
    T=cat("tk_", LO(29)),
)
shape(
    "bash-session-wget-user-password-flags-backup-download",
    """
    $ wget --user=backup --password='§P§' https://files.corp.example/backups/wiki-§day§.tar.zst
    --§day§ §hms§--  https://files.corp.example/backups/wiki-§day§.tar.zst
    Resolving files.corp.example (files.corp.example)... §ip§
    HTTP request sent, awaiting response... 401 Unauthorized
    Authentication selected: Basic realm="backups"
    HTTP request sent, awaiting response... 200 OK
    Length: 1288302211 (1.2G) [application/zstd]
    """,
    P=SYM(20, "!#%*+-=?@^_~."),
)
shape(
    "fish-universal-variables-file-fish-variables",
    """
    # This file contains fish universal variable definitions.
    # VERSION: 3.0
    SETUVAR --export MISTRAL_API_KEY:§K§
    SETUVAR __fish_initialized:3800
    SETUVAR fish_greeting:\\x1d
    """,
    K=MISTRAL,
)
shape(
    "bash-session-gh-secret-set-body-flag",
    """
    $ gh secret set NPM_TOKEN --body "§T§" --repo acme/web-sdk
    ✓ Set Actions secret NPM_TOKEN for acme/web-sdk
    $ gh secret list --repo acme/web-sdk
    NPM_TOKEN   Updated §day§
    """,
    T=NPM,
)
shape(
    "zsh-session-op-read-output-pasted-back-into-export",
    """
    ➜ op read "op://Engineering/Stripe live/credential"
    §K§
    ➜ export STRIPE_API_KEY=§K§
    ➜ stripe balance retrieve --live | jq .available
    """,
    K=STRIPE_RK,
)
shape(
    "bash-session-ldapwhoami-x-w-flag",
    """
    $ ldapwhoami -x -H ldaps://ldap.corp.example -D "uid=svc-gitlab,ou=services,dc=corp,dc=example" -w '§P§'
    dn:uid=svc-gitlab,ou=services,dc=corp,dc=example
    """,
    P=SYM(22, "!#%*+-=?@^_~."),
)
shape(
    "bash-session-rclone-config-create-b2-key-positional",
    """
    $ rclone config create b2-archive b2 account §acct§ key §K§
    [b2-archive]
    type = b2
    account = §acct§
    key = §K§
    """,
    K=cat("K00", AN(28)),
)
shape(
    "bash-session-smbclient-u-user-percent-password",
    """
    $ smbclient //§lan§/scans -U 'scanner%§P§' -c 'ls'
      .                                   D        0  Mon §day§
      ..                                  D        0  Mon §day§
      scan_§n3§.pdf                       A   482113  Mon §day§
    """,
    P=PERSON,
)
shape(
    "bash-session-mosquitto-pub-u-p-flags",
    """
    $ mosquitto_pub -h mqtt.home.arpa -p 8883 --cafile /etc/ssl/certs/ca.pem -u nodered -P '§P§' -t 'home/garage/door' -m 'close' -d
    Client null sending CONNECT
    Client null received CONNACK (0)
    Client null sending PUBLISH (d0, q0, r0, m1, 'home/garage/door', ... (5 bytes))
    """,
    P=SAFE(16),
)
shape(
    "bash-session-sqlcmd-sa-password-flag-docker",
    """
    $ docker exec -it mssql /opt/mssql-tools18/bin/sqlcmd -S localhost -U sa -P '§P§' -C -Q "SELECT name FROM sys.databases"
    name
    --------------------------------------------------------------------------------------------------------------------------------
    master
    tempdb
    model
    msdb
    Inventory
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "bash-session-curl-netrc-file-inline-creation",
    """
    $ printf 'machine api.bitbucket.org login acme-ci password %s\\n' '§T§' > ~/.netrc
    $ curl -sn https://api.bitbucket.org/2.0/repositories/acme | jq '.values | length'
    10
    """,
    T=BB_APP,
)
shape(
    "bash-session-kafka-console-producer-command-config-inline-cat",
    """
    $ cat client.properties
    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="orders-producer" password="§P§";
    $ kafka-console-producer.sh --bootstrap-server broker-1.stream.lan:9094 --topic orders --producer.config client.properties
    >
    """,
    P=SAFE(28),
)
shape(
    "powershell-history-new-localuser-convertto-securestring",
    """
    PS> $pw = ConvertTo-SecureString "§P§" -AsPlainText -Force
    PS> New-LocalUser -Name "kiosk" -Password $pw -FullName "Lobby kiosk" -PasswordNeverExpires
    Name  Enabled Description
    ----  ------- -----------
    kiosk True
    """,
    P=PERSON,
)
shape(
    "bash-session-vault-login-userpass-password-arg",
    """
    $ vault login -method=userpass username=§user§ password='§P§'
    Success! You are now authenticated.
    Key                    Value
    ---                    -----
    token_accessor         §hex12§§hex12§
    token_duration         768h
    token_policies         ["default" "dev-read"]
    """,
    P=PERSON,
)

# ---- CI logs of many systems ------------------------------------------------------------------------------------

shape(
    "github-actions-log-composite-action-input-echo-group",
    """
    2026-03-§n§T§hms§.1234567Z ##[group]Run ./.github/actions/deploy
    2026-03-§n§T§hms§.1236011Z with:
    2026-03-§n§T§hms§.1236110Z   environment: production
    2026-03-§n§T§hms§.1236201Z   render-api-key: §K§
    2026-03-§n§T§hms§.1236300Z   service-id: srv-§hex12§
    2026-03-§n§T§hms§.1236402Z ##[endgroup]
    """,
    K=RENDER,
)
shape(
    "gitlab-ci-job-log-before-script-echo-config-json",
    """
    $ echo "{\\"auths\\":{\\"registry.corp.example\\":{\\"username\\":\\"ci\\",\\"password\\":\\"§P§\\"}}}" > /kaniko/.docker/config.json
    $ /kaniko/executor --context $CI_PROJECT_DIR --dockerfile Dockerfile --destination registry.corp.example/web:$CI_COMMIT_SHORT_SHA
    INFO[0000] Retrieving image manifest node:22-alpine
    """,
    P=SAFE(24),
)
shape(
    "jenkins-console-log-sh-step-masked-then-unmasked-by-base64",
    """
    [Pipeline] withCredentials
    Masking supported pattern matches of $DEPLOY_PW
    [Pipeline] sh
    + echo ****
    ****
    + echo -n **** | base64
    §B§
    [Pipeline] }
    """,
    B=lambda r: base64.b64encode(safe(r, 18).encode()).decode(),
)
shape(
    "circleci-step-output-env-printed-by-npm-config-list",
    """
    #!/bin/bash -eo pipefail
    npm config list
    ; "user" config from /home/circleci/.npmrc

    //registry.npmjs.org/:_authToken = "§T§"
    ; node bin location = /usr/local/bin/node
    ; node version = v22.§n§.0
    ; npm version = 10.§n§.1
    """,
    T=NPM,
)
shape(
    "buildkite-job-log-docker-build-arg-echoed-by-buildx",
    """
    ~~~ :docker: Building image
    $ docker buildx build --build-arg SENTRY_AUTH_TOKEN=§T§ --build-arg GIT_SHA=§sha§ -t acme/web:§short§ .
    #0 building with "default" instance using docker driver
    #1 [internal] load build definition from Dockerfile
    #1 transferring dockerfile: 1.12kB done
    """,
    T=SENTRY_USER,
)
shape(
    "azure-pipelines-log-script-task-generated-script-with-literal",
    """
    ========================== Starting Command Output ===========================
    /usr/bin/bash --noprofile --norc /home/vsts/work/_temp/§uuid§.sh
    ##[debug]Generated script contents:
    az storage blob upload-batch --account-name acmeassets --account-key "§K§" -d '$web' -s ./dist
    Finished: 412 files uploaded
    """,
    K=AZ_STORAGE,
)
shape(
    "bitbucket-pipelines-log-pipe-variables-block",
    """
    + pipe: atlassian/aws-s3-deploy:1.6.1
    Pipe variables:
      AWS_ACCESS_KEY_ID: §A§
      AWS_SECRET_ACCESS_KEY: §S§
      AWS_DEFAULT_REGION: eu-central-1
      S3_BUCKET: acme-static-prod
    INFO: Starting deployment to S3...
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "drone-build-log-plugin-docker-settings-env-echo",
    """
    + PLUGIN_REGISTRY=ghcr.io
    + PLUGIN_USERNAME=acme-bot
    + PLUGIN_PASSWORD=§T§
    + PLUGIN_REPO=ghcr.io/acme/worker
    + docker login -u acme-bot -p ******** ghcr.io
    WARNING! Using --password via the CLI is insecure. Use --password-stdin.
    """,
    T=GHP,
)
shape(
    "woodpecker-pipeline-log-step-commands-with-token-in-url",
    """
    + git clone https://oauth2:§T§@codeberg.org/acme/docs.git /woodpecker/src/docs
    Cloning into '/woodpecker/src/docs'...
    + cd docs && hugo --minify
    Start building sites …
    Total in 812 ms
    """,
    T=GITEA,
)
shape(
    "teamcity-build-log-step-parameters-reference-resolved",
    """
    [§hms§]i: Step 2/4: Publish (Command Line)
    [§hms§] : \t[Step 2/4] Starting: /opt/buildagent/temp/agentTmp/custom_script§n3§.sh
    [§hms§] : \t[Step 2/4] + dotnet nuget push ./out/*.nupkg --api-key §K§ --source https://api.nuget.org/v3/index.json
    [§hms§] : \t[Step 2/4] Pushing Acme.Client.§ver§.nupkg to 'https://www.nuget.org/api/v2/package'...
    """,
    K=NUGET,
)
shape(
    "travis-ci-log-setting-environment-variables-display-value",
    """
    Setting environment variables from repository settings
    $ export CODECOV_TOKEN=[secure]
    $ export COVERALLS_REPO_TOKEN=§T§
    $ export NODE_ENV=test
    """,
    T=AN(33),
)
shape(
    "semaphore-ci-job-log-secret-file-cat-for-debug",
    """
    $ cat ~/.aws/credentials
    [default]
    aws_access_key_id = §A§
    aws_secret_access_key = §S§
    $ aws sts get-caller-identity --query Arn --output text
    arn:aws:iam::§acct§:user/semaphore-deployer
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "harness-ci-step-log-run-step-env-echo",
    """
    §ts§ [run_integration_tests] + env | grep -i snow
    §ts§ [run_integration_tests] SNOWFLAKE_ACCOUNT=acme-eu1
    §ts§ [run_integration_tests] SNOWFLAKE_USER=CI_RUNNER
    §ts§ [run_integration_tests] SNOWFLAKE_PASSWORD=§P§
    §ts§ [run_integration_tests] SNOWFLAKE_WAREHOUSE=CI_WH
    """,
    P=SYM(24, "!#%*+-=?@^_~."),
)
shape(
    "dagger-call-log-with-secret-plaintext-env-misuse",
    """
    $ dagger call publish --registry-password=env:REG_PW --source=. --tag=§short§
    ✔ connect 0.4s
    ✔ ModuleSource.asModule 1.9s
    ✔ Publish.publish(source: Directory, tag: "§short§", registryPassword: "§P§"): String! 38.2s
    ghcr.io/acme/api:§short§@sha256:§sha256§
    """,
    P=GHP,
)
shape(
    "earthly-build-log-run-with-arg-token-printed",
    """
    +deps | --> RUN --no-cache pip install --index-url https://__token__:§T§@pypi.corp.example/simple -r requirements.txt
    +deps | Looking in indexes: https://__token__:****@pypi.corp.example/simple
    +deps | Collecting fastapi==0.115.§n§
    """,
    T=cat("pypi-corp-", AN(32)),
)
shape(
    "cloud-build-log-step-args-gcloud-run-deploy-set-env-vars",
    """
    Step #2 - "deploy": Already have image (with digest): gcr.io/google.com/cloudsdktool/cloud-sdk
    Step #2 - "deploy": + gcloud run deploy billing --image=europe-docker.pkg.dev/acme/app/billing:§short§ --region=europe-west1 --set-env-vars=ENV=prod,PADDLE_API_KEY=§K§
    Step #2 - "deploy": Deploying container to Cloud Run service [billing] in project [acme-prod] region [europe-west1]
    """,
    K=cat("pdl_live_apikey_", LO(26), "_", AN(22), "_", AN(3)),
)
shape(
    "codebuild-log-phase-build-echo-pypirc",
    """
    [Container] §day§ §hms§.482311 Running command cat > ~/.pypirc <<EOF
    [pypi]
    username = __token__
    password = §T§
    EOF
    [Container] §day§ §hms§.501244 Running command twine upload dist/*
    Uploading distributions to https://upload.pypi.org/legacy/
    """,
    T=PYPI,
)
shape(
    "render-deploy-log-build-command-echo-env-file",
    """
    ==> Running build command 'echo "DATABASE_URL=$DATABASE_URL" >> .env && npm run build'...
    ==> DATABASE_URL=postgresql://acme_web:§P§@dpg-§hex12§-a.frankfurt-postgres.render.com/acme_web
    > acme-web@1.0.0 build
    > next build
    """,
    P=AN(32),
)
shape(
    "netlify-build-log-plugin-prints-context-env",
    """
    12:01:§n§ PM: ❯ Loading plugins
    12:01:§n§ PM:    - netlify-plugin-debug-env@1.0.2 from netlify.toml
    12:01:§n§ PM: debug-env: CONTENTFUL_SPACE_ID=§hex12§
    12:01:§n§ PM: debug-env: CONTENTFUL_MANAGEMENT_TOKEN=§T§
    12:01:§n§ PM: debug-env: NODE_VERSION=22
    """,
    T=CONTENTFUL,
)
shape(
    "railway-deploy-log-nixpacks-env-setup-line",
    """
    ╔═════════════ Nixpacks v1.§n§.0 ════════════╗
    ║ setup      │ python312, gcc                ║
    ║ install    │ pip install -r requirements.txt ║
    ║ start      │ uvicorn app:app --host 0.0.0.0 ║
    ╚════════════════════════════════════════════╝
    #9 [stage-0  5/10] RUN printf '\\nRESEND_API_KEY=§K§' >> /app/.env
    #9 DONE 0.1s
    """,
    K=RESEND,
)
shape(
    "github-actions-log-docker-login-action-debug-registry-password",
    """
    ##[debug]Evaluating: secrets.QUAY_ROBOT_TOKEN
    ##[debug]Result: '***'
    Run docker/login-action@v3
    ##[debug]registry: quay.io
    ##[debug]username: acme+ci_robot
    ##[debug]password (unmasked by fromJSON): §T§
    Logging into quay.io...
    Login Succeeded!
    """,
    T=UP(64),
)
shape(
    "gitlab-ci-log-terraform-init-backend-config-flag",
    """
    $ terraform init -backend-config="access_key=§A§" -backend-config="secret_key=§S§" -backend-config="bucket=acme-tfstate"
    Initializing the backend...
    Successfully configured the backend "s3"! Terraform will automatically
    use this backend unless the backend configuration changes.
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "jenkins-log-groovy-sandbox-echo-credentials-map",
    """
    [Pipeline] echo
    creds: [url:https://sonar.corp.example, token:§T§, projectKey:acme-api]
    [Pipeline] withSonarQubeEnv
    Injecting SonarQube environment variables using the configuration: sonar-prod
    """,
    T=SONAR,
)
shape(
    "circleci-rerun-with-ssh-session-cat-env-file",
    """
    circleci@ip-§ip§:~/project$ cat .env.ci
    NODE_ENV=test
    PLAYWRIGHT_BASE_URL=http://localhost:3000
    CHECKLY_API_KEY=§K§
    CHECKLY_ACCOUNT_ID=§uuid§
    circleci@ip-§ip§:~/project$
    """,
    K=cat("cu_", HX(32)),
)
shape(
    "buildkite-agent-env-dump-artifact-env-txt",
    """
    # artifact: env.txt (uploaded by debug hook)
    BUILDKITE_BRANCH=main
    BUILDKITE_BUILD_NUMBER=§n3§
    BUILDKITE_AGENT_ACCESS_TOKEN=§T§
    BUILDKITE_PIPELINE_SLUG=api
    """,
    T=AN(40),
)
shape(
    "github-actions-log-gradle-publish-property-p-flag",
    """
    Run ./gradlew publish -PsonatypeUsername=acme-ci -PsonatypePassword=§P§ -Psigning.password=§Q§
    Downloading https://services.gradle.org/distributions/gradle-8.§n§-bin.zip
    > Task :client:publishMavenPublicationToSonatypeRepository
    BUILD SUCCESSFUL in 1m 12s
    """,
    P=AN(40),
    Q=PERSON,
)
shape(
    "concourse-build-log-task-params-printed-by-env",
    """
    initializing
    running bash -c env | sort
    BUILD_ID=§n3§
    DOCKERHUB_PASSWORD=§T§
    DOCKERHUB_USERNAME=acmeci
    HOME=/root
    """,
    T=DOCKER_PAT,
)
shape(
    "gocd-console-log-environment-variables-overrides",
    """
    [go] Start to prepare deploy-api/§n§/deploy/1/deploy on gocd-agent-§n§ [/var/lib/go-agent]
    [go] setting environment variable 'GO_PIPELINE_COUNTER' to value '§n§'
    [go] setting environment variable 'HEROKU_API_KEY' to value '§K§'
    [go] Task: heroku container:release web -a acme-api
    """,
    K=HEROKU,
)
shape(
    "tekton-taskrun-logs-step-git-clone-with-basic-url",
    """
    [fetch-source : clone] + git config --global --add safe.directory /workspace/output
    [fetch-source : clone] + /ko-app/git-init -url=https://tekton-bot:§T§@git.corp.example/platform/gateway.git -revision=main -path=/workspace/output
    [fetch-source : clone] {"level":"info","ts":1767§n3§.1,"caller":"git/git.go:176","msg":"Successfully cloned"}
    """,
    T=GLPAT,
)
shape(
    "argo-workflows-pod-log-main-container-curl-header",
    """
    deploy-§hex8§-notify-§n3§: + curl -fsS -X POST https://api.pagerduty.com/incidents -H 'Authorization: Token token=§T§' -H 'From: oncall@corp.example' -d @incident.json
    deploy-§hex8§-notify-§n3§: {"incident":{"id":"Q§n3§","status":"triggered"}}
    """,
    T=cat("u+", UL(18)),
)
shape(
    "spinnaker-pipeline-execution-json-context-secret-leaked",
    """
    {
      "type": "webhook",
      "name": "Smoke test",
      "context": {
        "url": "https://smoke.corp.example/run",
        "customHeaders": {"X-Api-Key": "§K§"},
        "method": "POST",
        "statusUrlResolution": "getMethod"
      },
      "status": "SUCCEEDED"
    }
    """,
    K=AN(36),
)
shape(
    "appveyor-build-log-environment-block-echo",
    """
    Build started
    git clone -q --branch=main https://github.com/acme/win-agent.git C:\\projects\\win-agent
    Running Install scripts
    echo CHOCO_API_KEY=%CHOCO_API_KEY%
    CHOCO_API_KEY=§K§
    choco pack acme-agent.nuspec
    """,
    K=UUID,
)
shape(
    "xcode-cloud-ci-post-clone-script-log-echo",
    """
    ci_post_clone.sh
    + echo 'Writing Secrets.xcconfig'
    + echo 'REVENUECAT_API_KEY = §K§'
    + echo 'SENTRY_ORG = acme-mobile'
    ** ARCHIVE SUCCEEDED **
    """,
    K=cat("sk_", AN(28)),
)
shape(
    "codemagic-build-log-scripts-step-keystore-password",
    """
    == Set up keystore ==
    + echo $CM_KEYSTORE | base64 --decode > /tmp/keystore.jks
    + cat >> android/key.properties <<EOF
    storePassword=§P§
    keyPassword=§P§
    keyAlias=upload
    storeFile=/tmp/keystore.jks
    EOF
    """,
    P=SYM(20, "!#%*+-=?@^_~."),
)
shape(
    "github-actions-job-summary-markdown-table-with-preview-credentials",
    """
    ### Preview environment ready 🚀
    | Key | Value |
    | --- | --- |
    | URL | https://pr-§n3§.preview.acme.dev |
    | Admin user | `admin@preview.acme.dev` |
    | Admin password | `§P§` |
    | Commit | `§short§` |
    """,
    P=APPLE,
)
shape(
    "gitlab-ci-job-log-helm-upgrade-debug-rendered-values",
    """
    $ helm upgrade --install api ./chart --debug --set image.tag=$CI_COMMIT_SHORT_SHA -f values-prod.yaml
    history.go:56: [debug] getting history for release api
    upgrade.go:164: [debug] preparing upgrade for api
    USER-SUPPLIED VALUES:
    externalDatabase:
      host: §host§
      password: §P§
      user: api
    """,
    P=SAFE(26),
)
shape(
    "jenkins-blue-ocean-step-log-ansible-extra-vars-json",
    """
    ansible-playbook -i inventories/prod site.yml --extra-vars '{"pg_replication_password":"§P§","deploy_version":"§ver§"}'
    PLAY [databases] ***************************************************************
    TASK [Gathering Facts] *********************************************************
    ok: [pg-a]
    """,
    P=SAFE(22),
)

# ---- configs of many tools ------------------------------------------------------------------------------------

shape(
    "dbt-profiles-yml-snowflake-password-target-prod",
    """
    # ~/.dbt/profiles.yml
    acme_analytics:
      target: prod
      outputs:
        prod:
          type: snowflake
          account: acme-eu1
          user: DBT_PROD
          password: "§P§"
          role: TRANSFORMER
          warehouse: TRANSFORMING
          database: ANALYTICS
          schema: marts
          threads: 8
    """,
    P=SYM(22, "!#%*+-=?@^_~."),
)
shape(
    "meltano-yml-extractor-config-inline-password",
    """
    plugins:
      extractors:
      - name: tap-postgres
        variant: meltanolabs
        config:
          host: §host§
          port: 5432
          user: meltano
          password: §P§
          database: app
          filter_schemas: [public]
      loaders:
      - name: target-duckdb
    """,
    P=SAFE(20),
)
shape(
    "singer-tap-config-json-hubspot-private-app",
    """
    {
      "start_date": "2025-01-01T00:00:00Z",
      "access_token": "§T§",
      "request_timeout": 300,
      "disable_collection": true
    }
    """,
    T=HUBSPOT,
)
shape(
    "kafka-connect-rest-put-debezium-mysql-config-json",
    """
    $ curl -s -X PUT http://connect:8083/connectors/inventory-cdc/config -H 'Content-Type: application/json' -d @- <<'JSON'
    {
      "connector.class": "io.debezium.connector.mysql.MySqlConnector",
      "database.hostname": "§host§",
      "database.port": "3306",
      "database.user": "debezium",
      "database.password": "§P§",
      "database.server.id": "§n3§",
      "topic.prefix": "inventory",
      "schema.history.internal.kafka.topic": "schema-changes.inventory"
    }
    JSON
    """,
    P=SAFE(22),
)
shape(
    "flink-sql-create-table-with-jdbc-password-option",
    """
    Flink SQL> CREATE TABLE orders_sink (
    >   order_id BIGINT,
    >   total DECIMAL(12,2),
    >   PRIMARY KEY (order_id) NOT ENFORCED
    > ) WITH (
    >   'connector' = 'jdbc',
    >   'url' = 'jdbc:postgresql://§host§:5432/dw',
    >   'table-name' = 'orders',
    >   'username' = 'flink',
    >   'password' = '§P§'
    > );
    [INFO] Execute statement succeed.
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
)
shape(
    "spark-defaults-conf-s3a-access-and-secret-key",
    """
    # $SPARK_HOME/conf/spark-defaults.conf
    spark.master                              k8s://https://kubernetes.default.svc
    spark.hadoop.fs.s3a.endpoint              https://minio.data.lan
    spark.hadoop.fs.s3a.access.key            §A§
    spark.hadoop.fs.s3a.secret.key            §S§
    spark.hadoop.fs.s3a.path.style.access     true
    spark.sql.shuffle.partitions              400
    """,
    A=UP(20),
    S=AN(40),
)
shape(
    "hadoop-core-site-xml-abfs-account-key-property",
    """
    <configuration>
      <property>
        <name>fs.defaultFS</name>
        <value>abfss://lake@acmelake.dfs.core.windows.net/</value>
      </property>
      <property>
        <name>fs.azure.account.key.acmelake.dfs.core.windows.net</name>
        <value>§K§</value>
      </property>
    </configuration>
    """,
    K=AZ_STORAGE,
)
shape(
    "dlt-secrets-toml-destination-credentials-table",
    """
    # .dlt/secrets.toml
    [sources.github]
    access_token = "§T§"

    [destination.postgres.credentials]
    database = "dlt_data"
    username = "loader"
    password = "§P§"
    host = "§host§"
    """,
    T=GH_FINE,
    P=SAFE(18),
)
shape(
    "dagster-yaml-run-storage-postgres-inline-password",
    """
    # $DAGSTER_HOME/dagster.yaml
    storage:
      postgres:
        postgres_db:
          username: dagster
          password: "§P§"
          hostname: §host§
          db_name: dagster
          port: 5432
    run_coordinator:
      module: dagster.core.run_coordinator
      class: QueuedRunCoordinator
    """,
    P=SAFE(24),
)
shape(
    "prefect-profiles-toml-api-key-cloud",
    """
    # ~/.prefect/profiles.toml
    active = "cloud"

    [profiles.cloud]
    PREFECT_API_URL = "https://api.prefect.cloud/api/accounts/§uuid§/workspaces/§uuid2§"
    PREFECT_API_KEY = "§K§"
    """,
    K=cat("pnu_", AN(36)),
)
shape(
    "kedro-conf-local-credentials-yml-s3-and-db",
    """
    # conf/local/credentials.yml
    dev_s3:
      client_kwargs:
        aws_access_key_id: §A§
        aws_secret_access_key: §S§
    warehouse:
      con: ${oc.env:WAREHOUSE_URL}
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "otel-collector-config-exporter-headers-honeycomb",
    """
    exporters:
      otlp/honeycomb:
        endpoint: api.honeycomb.io:443
        headers:
          x-honeycomb-team: §K§
          x-honeycomb-dataset: gateway
    service:
      pipelines:
        traces:
          receivers: [otlp]
          processors: [batch]
          exporters: [otlp/honeycomb]
    """,
    K=cat("hcaik_01", LO(50)),
)
shape(
    "telegraf-conf-outputs-influxdb-v2-token",
    """
    [agent]
      interval = "10s"
      hostname = "edge-§n§"

    [[outputs.influxdb_v2]]
      urls = ["https://influx.corp.example"]
      token = "§T§"
      organization = "acme"
      bucket = "edge"
    """,
    T=cat(UL(86), "=="),
)
shape(
    "promtail-config-clients-basic-auth-grafana-cloud",
    """
    clients:
      - url: https://logs-prod-012.grafana.net/loki/api/v1/push
        basic_auth:
          username: §n3§§n3§
          password: §T§
    scrape_configs:
      - job_name: journal
        journal:
          max_age: 12h
    """,
    T=GRAFANA_CLOUD,
)
shape(
    "gatus-config-yaml-alerting-telegram-token-and-endpoint-header",
    """
    alerting:
      telegram:
        token: "§T§"
        id: "-100§n3§§n3§"
    endpoints:
      - name: api
        url: https://api.acme.example/healthz
        headers:
          Authorization: "Bearer §B§"
        conditions:
          - "[STATUS] == 200"
    """,
    T=TELEGRAM_BOT,
    B=AN(40),
)
shape(
    "nagios-resource-cfg-user-macros-password",
    """
    # /usr/local/nagios/etc/resource.cfg
    $USER1$=/usr/local/nagios/libexec
    $USER2$=public
    # SNMPv3 auth and the DB check account
    $USER3$=§P§
    $USER4$=§Q§
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
    Q=PERSON,
)
shape(
    "uptime-kuma-monitor-export-json-basic-auth-pass",
    """
    {"version":"1.23.§n§","monitorList":[{"id":§n§,"name":"Router admin","url":"https://§lan§/","type":"http","method":"GET","interval":60,"authMethod":"basic","basic_auth_user":"admin","basic_auth_pass":"§P§","accepted_statuscodes":["200-299"]}]}
    """,
    P=PERSON,
)
shape(
    "strapi-env-app-keys-and-admin-jwt-secret",
    """
    HOST=0.0.0.0
    PORT=1337
    APP_KEYS=§K1§,§K2§
    DATABASE_CLIENT=sqlite
    DATABASE_FILENAME=.tmp/data.db
    """,
    K1=B64(16),
    K2=B64(16),
)
shape(
    "directus-env-secret-and-admin-password",
    """
    SECRET="§S§"
    DB_CLIENT="pg"
    DB_HOST="§host§"
    DB_USER="directus"
    ADMIN_EMAIL="admin@acme.example"
    ADMIN_PASSWORD="§P§"
    PUBLIC_URL="https://cms.acme.example"
    """,
    S=UL(43),
    P=PERSON,
)
shape(
    "payload-cms-env-payload-secret-and-mongodb-uri",
    """
    # apps/cms/.env
    DATABASE_URI=mongodb://payload:§P§@localhost:27017/payload?authSource=admin
    PAYLOAD_SECRET=§S§
    NEXT_PUBLIC_SERVER_URL=http://localhost:3000
    """,
    P=SAFE(18),
    S=HX(48),
)
shape(
    "prestashop-parameters-php-database-password-and-secret",
    """
    <?php return array (
      'parameters' =>
      array (
        'database_host' => '§host§',
        'database_port' => '',
        'database_name' => 'prestashop',
        'database_user' => 'ps_user',
        'database_password' => '§P§',
        'database_prefix' => 'ps_',
        'secret' => '§S§',
        'locale' => 'fr-FR',
      ),
    );
    """,
    P=SAFE(16),
    S=AN(56),
)
shape(
    "shopware-env-local-app-secret-and-database-url",
    """
    APP_ENV=prod
    APP_SECRET=§S§
    APP_URL=https://shop.acme.example
    DATABASE_URL=mysql://shopware:§P§@§host§:3306/shopware
    """,
    S=HX(64),
    P=SAFE(20),
)
shape(
    "claude-desktop-config-json-mcp-servers-github-env",
    """
    {
      "mcpServers": {
        "github": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-github"],
          "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "§T§"}
        },
        "filesystem": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/§first§/notes"]
        }
      }
    }
    """,
    T=GH_FINE,
)
shape(
    "cursor-mcp-json-project-postgres-connection-arg",
    """
    // .cursor/mcp.json
    {
      "mcpServers": {
        "pg": {
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-postgres", "postgresql://cursor_ro:§P§@§host§:5432/product"]
        }
      }
    }
    """,
    P=SAFE(20),
)
shape(
    "opencode-json-provider-options-api-key",
    """
    {
      "$schema": "https://opencode.ai/config.json",
      "model": "together/moonshotai/Kimi-K2-Instruct",
      "provider": {
        "together": {
          "options": {"apiKey": "§K§"}
        }
      }
    }
    """,
    K=TOGETHER,
)
shape(
    "supervisord-conf-program-environment-inline-secret",
    """
    [program:worker]
    command=/srv/app/.venv/bin/celery -A app worker -l info
    directory=/srv/app
    user=app
    environment=DJANGO_SETTINGS_MODULE="app.settings.prod",CELERY_BROKER_URL="amqp://worker:§P§@§host§:5672/prod",SENTRY_ENVIRONMENT="prod"
    autorestart=true
    """,
    P=SAFE(20),
)
shape(
    "odbc-ini-dsn-section-pwd-key",
    """
    ; /etc/odbc.ini
    [ReportingDW]
    Driver      = ODBC Driver 18 for SQL Server
    Server      = tcp:sql-dw.corp.example,1433
    Database    = Reporting
    UID         = powerbi_gw
    PWD         = §P§
    Encrypt     = yes
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
)
shape(
    "mysql-my-cnf-client-section-password-quoted",
    """
    # ~/.my.cnf
    [client]
    user = backup
    password = "§P§"
    host = §host§

    [mysqldump]
    single-transaction
    quick
    """,
    P=SYM(20, "!#%*+-=?@^_~."),
)
shape(
    "pip-conf-global-index-url-with-userinfo-token",
    """
    # /etc/pip.conf
    [global]
    index-url = https://aws:§T§@acme-§acct§.d.codeartifact.eu-west-1.amazonaws.com/pypi/internal/simple/
    timeout = 60
    """,
    T=JWT({"ver": 1, "isi": False, "enc": "A128GCM", "tag": "ca"}, "HS256"),
)
shape(
    "npmrc-project-scoped-registry-auth-token-github-packages",
    """
    # .npmrc
    @acme:registry=https://npm.pkg.github.com
    //npm.pkg.github.com/:_authToken=§T§
    engine-strict=true
    save-exact=true
    """,
    T=GHP,
)
shape(
    "tox-ini-setenv-with-literal-key",
    """
    [tox]
    envlist = py311, py312, py313

    [testenv]
    deps = -r requirements-dev.txt
    setenv =
        COHERE_API_KEY = §K§
        PYTHONHASHSEED = 0
    commands = pytest -q tests/integration
    """,
    K=COHERE,
)
shape(
    "pyproject-toml-pytest-ini-options-env-plugin-key",
    """
    [tool.pytest.ini_options]
    addopts = "-q --strict-markers"
    env = [
        "APP_ENV=test",
        "PINECONE_API_KEY=§K§",
        "D:PINECONE_INDEX=test-embeddings",
    ]
    """,
    K=PINECONE,
)
shape(
    "netlify-toml-context-production-environment-literal",
    """
    [build]
      command = "pnpm build"
      publish = "dist"

    [context.production.environment]
      ALGOLIA_APP_ID = "§up§"
      ALGOLIA_ADMIN_KEY = "§K§"
    """,
    K=HX(32),
    up=UP(10),
)
shape(
    "serverless-yml-provider-environment-literal-secret",
    """
    service: acme-webhooks
    provider:
      name: aws
      runtime: nodejs22.x
      region: eu-west-1
      environment:
        STAGE: ${sls:stage}
        SHOPIFY_WEBHOOK_SECRET: §S§
        TABLE: ${self:service}-${sls:stage}
    functions:
      orders:
        handler: src/orders.handler
    """,
    S=SHOPIFY_SS,
)
shape(
    "spring-application-yml-mail-password-and-oauth-client-secret",
    """
    spring:
      mail:
        host: smtp.office365.com
        port: 587
        username: noreply@acme.example
        password: §P§
      security:
        oauth2:
          client:
            registration:
              azure:
                client-id: §uuid§
                client-secret: §S§
    """,
    P=PERSON,
    S=AZ_SECRET,
)
shape(
    "quarkus-application-properties-datasource-and-oidc-secret",
    """
    quarkus.datasource.db-kind=postgresql
    quarkus.datasource.username=quarkus
    quarkus.datasource.password=§P§
    quarkus.datasource.jdbc.url=jdbc:postgresql://§host§:5432/orders
    quarkus.oidc.auth-server-url=https://sso.corp.example/realms/acme
    quarkus.oidc.client-id=orders
    quarkus.oidc.credentials.secret=§S§
    """,
    P=SAFE(18),
    S=AN(32),
)
shape(
    "micronaut-application-yml-r2dbc-password-and-jwt-secret",
    """
    micronaut:
      security:
        token:
          jwt:
            signatures:
              secret:
                generator:
                  secret: "§S§"
    r2dbc:
      datasources:
        default:
          url: r2dbc:postgresql://§host§:5432/catalog
          username: catalog
          password: §P§
    """,
    S=B64(36),
    P=SAFE(20),
)
shape(
    "maven-settings-xml-server-password-and-proxy-password",
    """
    <settings>
      <servers>
        <server>
          <id>acme-releases</id>
          <username>deployer</username>
          <password>§P§</password>
        </server>
      </servers>
      <proxies>
        <proxy>
          <id>corp</id><active>true</active><protocol>https</protocol>
          <host>proxy.corp.example</host><port>3128</port>
          <username>§user§</username><password>§Q§</password>
        </proxy>
      </proxies>
    </settings>
    """,
    P=AN(32),
    Q=PERSON,
)
shape(
    "nuget-config-azure-artifacts-feed-cleartextpassword-pat",
    """
    <?xml version="1.0" encoding="utf-8"?>
    <configuration>
      <packageSources>
        <add key="acme" value="https://pkgs.dev.azure.com/acme/_packaging/internal/nuget/v3/index.json" />
      </packageSources>
      <packageSourceCredentials>
        <acme>
          <add key="Username" value="ci" />
          <add key="ClearTextPassword" value="§T§" />
        </acme>
      </packageSourceCredentials>
    </configuration>
    """,
    T=LO(52),
)
shape(
    "log4j2-xml-smtp-appender-smtppassword-attribute",
    """
    <Configuration status="WARN">
      <Appenders>
        <SMTP name="Mail" subject="[prod] error in billing" to="oncall@corp.example" from="billing@corp.example"
              smtpHost="smtp.sendgrid.net" smtpPort="587" smtpUsername="apikey" smtpPassword="§K§" bufferSize="50">
          <ThresholdFilter level="ERROR"/>
        </SMTP>
      </Appenders>
    </Configuration>
    """,
    K=SENDGRID,
)
shape(
    "tomcat-context-xml-resource-datasource-password-attr",
    """
    <Context>
      <Resource name="jdbc/Orders" auth="Container" type="javax.sql.DataSource"
                maxTotal="40" maxIdle="10" maxWaitMillis="10000"
                username="orders" password="§P§"
                driverClassName="oracle.jdbc.OracleDriver"
                url="jdbc:oracle:thin:@//ora-prod.corp.example:1521/ORDERS"/>
    </Context>
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "hcl-nomad-job-template-data-inline-secret",
    """
    job "api" {
      datacenters = ["dc1"]
      group "api" {
        task "server" {
          driver = "docker"
          template {
            destination = "secrets/app.env"
            env         = true
            data        = <<EOH
    DATABASE_PASSWORD=§P§
    LOG_LEVEL=info
    EOH
          }
        }
      }
    }
    """,
    P=SAFE(24),
)
shape(
    "hcl-vault-agent-config-auto-auth-approle-inline-secret-id",
    """
    auto_auth {
      method "approle" {
        config = {
          role_id_file_path   = "/etc/vault/role_id"
          secret_id           = "§S§"
          remove_secret_id_file_after_reading = false
        }
      }
      sink "file" { config = { path = "/run/vault/token" } }
    }
    """,
    S=UUID,
)
shape(
    "packer-pkrvars-hcl-vsphere-password-and-ssh-password",
    """
    # vsphere.auto.pkrvars.hcl
    vsphere_server   = "vcsa.lab.lan"
    vsphere_user     = "packer@vsphere.local"
    vsphere_password = "§P§"
    ssh_username     = "ubuntu"
    ssh_password     = "§Q§"
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
    Q=PWGEN(10),
)
shape(
    "terraform-provider-block-datadog-api-and-app-key-literal",
    """
    provider "datadog" {
      api_key = "§A§"
      app_key = "§B§"
      api_url = "https://api.datadoghq.eu/"
    }
    """,
    A=DD_API,
    B=DD_APP,
)
shape(
    "terraform-provider-block-proxmox-api-token-literal",
    """
    provider "proxmox" {
      endpoint  = "https://pve.lab.lan:8006/"
      api_token = "terraform@pve!provider=§T§"
      insecure  = true
    }
    """,
    T=UUID,
)
shape(
    "docker-compose-yml-x-common-env-anchor-minio-root-password",
    """
    x-minio-env: &minio-env
      MINIO_ROOT_USER: minioadmin-§hex8§
      MINIO_ROOT_PASSWORD: §P§
    services:
      minio:
        image: quay.io/minio/minio:RELEASE.2026-01-§n§T00-00-00Z
        command: server /data --console-address ":9001"
        environment: *minio-env
        ports: ["9000:9000", "9001:9001"]
    """,
    P=SAFE(24),
)
shape(
    "docker-compose-healthcheck-test-with-password-cli",
    """
    services:
      db:
        image: mariadb:11.4
        environment:
          MARIADB_ROOT_PASSWORD_HASH: "*§hex12§§hex12§§hex12§§hex12§"
        healthcheck:
          test: ["CMD", "mariadb-admin", "ping", "-h", "localhost", "-uhealth", "-p§P§"]
          interval: 10s
    """,
    P=PWGEN(12),
)
shape(
    "k8s-deployment-env-value-literal-in-container-spec",
    """
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: notifier, namespace: comms}
    spec:
      template:
        spec:
          containers:
            - name: notifier
              image: ghcr.io/acme/notifier:§ver§
              env:
                - name: TWILIO_ACCOUNT_SID
                  value: AC§hex12§§hex12§§hex8§
                - name: TWILIO_AUTH_TOKEN
                  value: "§T§"
    """,
    T=TWILIO_TOKEN,
)
shape(
    "keda-triggerauthentication-secret-inline-via-configmap-misuse",
    """
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: rabbit-scaler, namespace: workers}
    data:
      host: amqp://keda:§P§@rabbitmq.workers.svc:5672/
    ---
    apiVersion: keda.sh/v1alpha1
    kind: ScaledObject
    metadata: {name: worker}
    spec:
      scaleTargetRef: {name: worker}
      triggers:
        - type: rabbitmq
          metadata: {queueName: jobs, mode: QueueLength, value: "20", hostFromEnv: RABBIT_HOST}
    """,
    P=SAFE(20),
)
shape(
    "dapr-component-yaml-state-redis-password-metadata",
    """
    apiVersion: dapr.io/v1alpha1
    kind: Component
    metadata:
      name: statestore
    spec:
      type: state.redis
      version: v1
      metadata:
        - name: redisHost
          value: redis-master.dapr.svc:6379
        - name: redisPassword
          value: "§P§"
    """,
    P=AN(28),
)
shape(
    "argo-events-eventsource-webhook-github-with-inline-secret",
    """
    apiVersion: argoproj.io/v1alpha1
    kind: EventSource
    metadata: {name: github}
    spec:
      github:
        acme:
          repositories: [{owner: acme, names: [api]}]
          webhook: {endpoint: /push, port: "12000", method: POST}
          events: ["push"]
          # TODO: move to secret ref, inline for the demo
          webhookSecretInline: "§S§"
          apiTokenInline: "§T§"
    """,
    S=HX(40),
    T=GHP,
)
shape(
    "cnpg-cluster-manifest-bootstrap-secret-stringdata-pair",
    """
    apiVersion: v1
    kind: Secret
    metadata: {name: app-db-owner}
    type: kubernetes.io/basic-auth
    stringData:
      username: app
      password: §P§
    ---
    apiVersion: postgresql.cnpg.io/v1
    kind: Cluster
    metadata: {name: app-db}
    spec:
      instances: 3
      bootstrap: {initdb: {database: app, owner: app, secret: {name: app-db-owner}}}
    """,
    P=SAFE(26),
)
shape(
    "devcontainer-json-remoteenv-literal-key",
    """
    {
      "name": "agent-sandbox",
      "image": "mcr.microsoft.com/devcontainers/python:3.12",
      "remoteEnv": {
        "FIREWORKS_API_KEY": "§K§",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1"
      },
      "postCreateCommand": "uv sync"
    }
    """,
    K=FIREWORKS,
)
shape(
    "vscode-settings-json-extension-api-key-setting",
    """
    {
      "editor.formatOnSave": true,
      "continue.telemetryEnabled": false,
      "codestral.apiKey": "§K§",
      "files.exclude": {"**/.venv": true}
    }
    """,
    K=MISTRAL,
)
shape(
    "renovate-json-host-rules-token-literal",
    """
    {
      "$schema": "https://docs.renovatebot.com/renovate-schema.json",
      "extends": ["config:recommended"],
      "hostRules": [
        {"matchHost": "gitlab.corp.example", "token": "§T§"},
        {"matchHost": "registry.corp.example", "username": "renovate", "password": "§P§"}
      ]
    }
    """,
    T=GLPAT,
    P=SAFE(20),
)

# ---- curl, httpie, wget, xh, hurl and HTTP traces --------------------------------------------------------------

shape(
    "curl-v-trace-request-headers-x-api-key-anthropic",
    """
    $ curl -v https://api.anthropic.com/v1/models -H "x-api-key: §K§" -H "anthropic-version: 2023-06-01"
    *   Trying 160.79.104.10:443...
    * Connected to api.anthropic.com (160.79.104.10) port 443
    > GET /v1/models HTTP/2
    > Host: api.anthropic.com
    > user-agent: curl/8.§n§.0
    > x-api-key: §K§
    > anthropic-version: 2023-06-01
    >
    < HTTP/2 200
    < request-id: req_§hex12§§hex12§
    """,
    K=ANTHROPIC,
)
shape(
    "curl-form-data-upload-with-token-field",
    """
    curl -F "file=@build/app-release.aab" -F "token=§T§" -F "notes=nightly §day§" https://upload.diawi.com/
    {"job":"§hex12§"}
    """,
    T=AN(42),
)
shape(
    "curl-data-urlencode-client-credentials-grant",
    """
    curl -s https://login.microsoftonline.com/§uuid§/oauth2/v2.0/token \\
      --data-urlencode "client_id=§uuid2§" \\
      --data-urlencode "client_secret=§S§" \\
      --data-urlencode "scope=https://graph.microsoft.com/.default" \\
      --data-urlencode "grant_type=client_credentials"
    """,
    S=AZ_SECRET,
)
shape(
    "curl-aws-sigv4-flag-user-access-secret",
    """
    curl --aws-sigv4 "aws:amz:eu-west-1:execute-api" --user "§A§:§S§" \\
      https://§hex8§.execute-api.eu-west-1.amazonaws.com/prod/reports?month=2026-02
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "httpie-bearer-auth-type-flag-notion",
    """
    $ http --auth-type=bearer --auth="§T§" POST https://api.notion.com/v1/search Notion-Version:2022-06-28 query=runbook
    HTTP/1.1 200 OK
    Content-Type: application/json; charset=utf-8
    {"object": "list", "results": [...], "has_more": false}
    """,
    T=NOTION,
)
shape(
    "xh-session-file-json-headers-authorization",
    """
    // ~/.config/xh/sessions/api.acme.example/prod.json
    {
      "__meta__": {"about": "xh session file", "xh": "0.2§n§.0"},
      "auth": {"type": null, "raw_auth": null},
      "cookies": [],
      "headers": [{"name": "authorization", "value": "Bearer §T§"}]
    }
    """,
    T=JWT({"sub": "svc-reports", "aud": "api.acme.example", "exp": 1798761600}, "RS256"),
)
shape(
    "wget-header-flag-private-token-gitlab-artifact",
    """
    wget --header="PRIVATE-TOKEN: §T§" -O artifacts.zip "https://gitlab.corp.example/api/v4/projects/§n3§/jobs/artifacts/main/download?job=build"
    --§day§ §hms§--  https://gitlab.corp.example/api/v4/projects/§n3§/jobs/artifacts/main/download?job=build
    HTTP request sent, awaiting response... 200 OK
    """,
    T=GLPAT,
)
shape(
    "hurl-file-header-and-captured-token-assert",
    """
    # smoke.hurl
    POST https://api.acme.example/v1/sessions
    Content-Type: application/json
    {"email": "smoke@acme.example", "password": "§P§"}
    HTTP 201
    [Captures]
    session: jsonpath "$.token"

    GET https://api.acme.example/v1/me
    Authorization: Bearer {{session}}
    HTTP 200
    """,
    P=SAFE(18),
)
shape(
    "mitmproxy-dump-flow-request-cookie-and-bearer",
    """
    $ mitmdump -nr flows.mitm --flow-detail 2 '~d api.acme.example'
    192.168.1.§n§:5§n3§: GET https://api.acme.example/v2/cart
        Host: api.acme.example
        Authorization: Bearer §T§
        Cookie: sid=§C§; theme=dark
     << 200 OK 1.2k
    """,
    T=UL(48),
    C=HX(40),
)
shape(
    "charles-proxy-overview-tab-url-access-token",
    """
    URL\thttps://api.mapbox.com/directions/v5/mapbox/driving/13.40,52.52;13.45,52.50?access_token=§T§
    Status\tComplete
    Response Code\t200 OK
    Protocol\tHTTP/2.0
    Method\tGET
    Kept Alive\tYes
    """,
    T=MAPBOX_SK,
)
shape(
    "python-http-client-debuglevel-send-bytes-authorization",
    """
    send: b'POST /v1/chat/completions HTTP/1.1\\r\\nHost: api.perplexity.ai\\r\\nUser-Agent: python-requests/2.32.3\\r\\nAccept-Encoding: gzip, deflate\\r\\nAccept: */*\\r\\nConnection: keep-alive\\r\\nAuthorization: Bearer §K§\\r\\nContent-Type: application/json\\r\\nContent-Length: 214\\r\\n\\r\\n'
    reply: 'HTTP/1.1 200 OK\\r\\n'
    header: Content-Type: application/json
    """,
    K=PPLX,
)
shape(
    "go-httputil-dumprequestout-log-basic-authorization",
    """
    2026/03/§n§ §hms§ DEBUG outgoing request:
    POST /api/v2/write?org=acme&bucket=edge HTTP/1.1
    Host: influx.corp.example
    User-Agent: edge-agent/§ver§
    Content-Length: 4182
    Authorization: Basic §B§
    Content-Type: text/plain; charset=utf-8
    Accept-Encoding: gzip
    """,
    B=lambda r: basic("edge-writer", safe(r, 20)),
)
shape(
    "node-undici-debug-request-headers-array",
    """
    UNDICI §pid§: connecting to api.resend.com using https:undefined
    UNDICI §pid§: sending request to POST https://api.resend.com//emails
    UNDICI §pid§: request headers: [ 'authorization', 'Bearer §K§', 'content-type', 'application/json', 'user-agent', 'resend-node:4.§n§.0' ]
    UNDICI §pid§: received response to POST https://api.resend.com//emails - HTTP 200
    """,
    K=RESEND,
)
shape(
    "dotnet-httpclient-logging-request-headers-trace",
    """
    trce: System.Net.Http.HttpClient.Shopify.ClientHandler[102]
          Request Headers:
          X-Shopify-Access-Token: §T§
          Accept: application/json
    info: System.Net.Http.HttpClient.Shopify.ClientHandler[101]
          Received HTTP response headers after 212.4ms - 200
    """,
    T=SHOPIFY,
)
shape(
    "nginx-access-log-query-string-api-key-param",
    """
    §ip§ - - [§day§:§hms§ +0000] "GET /v1/geocode?q=Berlin&key=§K§ HTTP/1.1" 200 812 "-" "okhttp/4.12.0" rt=0.041
    §ip2§ - - [§day§:§hms2§ +0000] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.31"
    """,
    K=GOOGLE,
)
shape(
    "aws-alb-access-log-line-request-url-with-token",
    """
    h2 §ts§ app/prod-alb/§hex12§ §ip§:5§n3§ §ip2§:8080 0.001 0.034 0.000 200 200 412 1830 "GET https://hooks.acme.example:443/ingest?token=§T§ HTTP/2.0" "Go-http-client/2.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2
    """,
    T=HX(48),
)
shape(
    "insomnia-curl-export-with-cookie-header",
    """
    curl --request GET \\
      --url https://admin.acme.example/api/orders?status=open \\
      --header 'Cookie: __Host-session=§C§; locale=en' \\
      --header 'User-Agent: insomnia/11.§n§.0'
    """,
    C=UL(64),
)
shape(
    "postman-console-expanded-request-headers-twilio-basic",
    """
    POST https://api.twilio.com/2010-04-01/Accounts/AC§hex12§§hex12§§hex8§/Messages.json
    Request Headers
      Authorization: Basic §B§
      User-Agent: PostmanRuntime/7.§n§.0
      Accept: */*
    Response Headers
      Content-Type: application/json
    """,
    B=lambda r: basic("AC" + hx(r, 32), hx(r, 32)),
)
shape(
    "http-raw-request-proxy-authorization-basic-squid",
    """
    CONNECT api.openai.com:443 HTTP/1.1
    Host: api.openai.com:443
    Proxy-Authorization: Basic §B§
    User-Agent: OpenAI/Python 1.§n§.0
    Proxy-Connection: Keep-Alive
    """,
    B=lambda r: basic("build-agent", person(r)),
)
shape(
    "websocket-connect-url-with-auth-query-in-browser-console",
    """
    WebSocket connection to 'wss://realtime.acme.example/socket/websocket?vsn=2.0.0&apikey=§K§' failed:
    (anonymous) @ realtime-js.mjs:412
    """,
    K=SUPABASE_SECRET,
)
shape(
    "curl-s3-presigned-url-get-with-signature",
    """
    curl -o report.pdf "https://acme-reports.s3.eu-west-1.amazonaws.com/2026/03/board.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=§A§%2F2026031§n§%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=2026031§n§T120000Z&X-Amz-Expires=604800&X-Amz-Security-Token=§T§&X-Amz-SignedHeaders=host&X-Amz-Signature=§hex12§§hex12§§hex12§§hex12§§hex12§§hex12§§hex8§"
    """,
    A=ASIA,
    T=lambda r: pct(AWS_SESSION(r)),
)
shape(
    "gcs-signed-url-in-slack-message-with-goog-signature",
    """
    here's the export link (valid 7 days): https://storage.googleapis.com/acme-exports/customers-§day§.csv?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=exporter%40acme-prod.iam.gserviceaccount.com%2F20260301%2Fauto%2Fstorage%2Fgoog4_request&X-Goog-Date=20260301T101500Z&X-Goog-Expires=604800&X-Goog-SignedHeaders=host&X-Goog-Signature=§S§
    """,
    S=HX(512),
)
shape(
    "azure-blob-sas-url-in-readme-download-section",
    """
    ## Test fixtures

    Download the fixtures (read-only SAS, expires end of quarter):

        azcopy copy "https://acmefixtures.blob.core.windows.net/fixtures?sv=2024-11-04&ss=b&srt=co&sp=rl&se=2026-06-30T23:59:59Z&st=2026-03-01T00:00:00Z&spr=https&sig=§S§" ./fixtures --recursive
    """,
    S=lambda r: pct(b64(r, 32)),
)

# ---- SDK snippets in many languages ---------------------------------------------------------------------------

shape(
    "python-openai-client-base-url-openrouter-literal",
    """
    from openai import OpenAI

    client = OpenAI(
        base_url="https://openrouter.ai/api/v1",
        api_key="§K§",
    )
    resp = client.chat.completions.create(model="anthropic/claude-sonnet-4.5", messages=[{"role": "user", "content": "hi"}])
    """,
    K=OPENROUTER,
)
shape(
    "typescript-anthropic-sdk-constructor-literal-key",
    """
    import Anthropic from "@anthropic-ai/sdk";

    const anthropic = new Anthropic({
      apiKey: "§K§", // FIXME remove before commit
      maxRetries: 3,
    });
    """,
    K=ANTHROPIC,
)
shape(
    "go-stripe-key-assignment-in-main",
    """
    package main

    import (
    \t"github.com/stripe/stripe-go/v82"
    \t"github.com/stripe/stripe-go/v82/customer"
    )

    func main() {
    \tstripe.Key = "§K§"
    \tc, _ := customer.Get("cus_§up§", nil)
    \tprintln(c.Email)
    }
    """,
    K=STRIPE_SK,
    up=UP(14),
)
shape(
    "rust-reqwest-bearer-auth-literal",
    """
    let client = reqwest::Client::new();
    let res = client
        .get("https://api.cloudflare.com/client/v4/user/tokens/verify")
        .bearer_auth("§T§")
        .send()
        .await?;
    println!("{}", res.status());
    """,
    T=CF_TOKEN,
)
shape(
    "java-sendgrid-constructor-literal-key",
    """
    public class Mailer {
        private final SendGrid sg = new SendGrid("§K§");

        public void send(Mail mail) throws IOException {
            Request request = new Request();
            request.setMethod(Method.POST);
            request.setEndpoint("mail/send");
            request.setBody(mail.build());
            sg.api(request);
        }
    }
    """,
    K=SENDGRID,
)
shape(
    "kotlin-ktor-client-default-request-header-api-key",
    """
    val client = HttpClient(CIO) {
        defaultRequest {
            url("https://api.elevenlabs.io/v1/")
            header("xi-api-key", "§K§")
        }
        install(ContentNegotiation) { json() }
    }
    """,
    K=ELEVEN,
)
shape(
    "csharp-azure-openai-client-azurekeycredential-literal",
    """
    var client = new AzureOpenAIClient(
        new Uri("https://acme-oai-swe.openai.azure.com/"),
        new AzureKeyCredential("§K§"));
    var chat = client.GetChatClient("gpt-4.1-mini");
    """,
    K=HX(32),
)
shape(
    "ruby-octokit-client-access-token-literal",
    """
    require "octokit"

    client = Octokit::Client.new(access_token: "§T§")
    client.auto_paginate = true
    client.org_repos("acme").each { |r| puts r.full_name }
    """,
    T=GHO,
)
shape(
    "php-guzzle-client-default-headers-authorization",
    """
    $client = new \\GuzzleHttp\\Client([
        'base_uri' => 'https://api.mollie.com/v2/',
        'headers'  => [
            'Authorization' => 'Bearer §K§',
            'Accept'        => 'application/json',
        ],
    ]);
    """,
    K=MOLLIE,
)
shape(
    "swift-urlrequest-setvalue-authorization-header",
    """
    var request = URLRequest(url: URL(string: "https://api.revenuecat.com/v1/subscribers/\\(userID)")!)
    request.setValue("Bearer §K§", forHTTPHeaderField: "Authorization")
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    let (data, _) = try await URLSession.shared.data(for: request)
    """,
    K=cat("sk_", AN(32)),
)
shape(
    "dart-dio-options-headers-api-key",
    """
    final dio = Dio(BaseOptions(
      baseUrl: 'https://api.openweathermap.org/data/3.0/',
      queryParameters: {'appid': '§K§', 'units': 'metric'},
      connectTimeout: const Duration(seconds: 5),
    ));
    """,
    K=HX(32),
)
shape(
    "elixir-req-new-auth-bearer-literal",
    """
    req =
      Req.new(
        base_url: "https://api.linear.app",
        auth: {:bearer, "§T§"},
        headers: [{"content-type", "application/json"}]
      )

    Req.post!(req, url: "/graphql", json: %{query: "{ viewer { id } }"})
    """,
    T=LINEAR,
)
shape(
    "scala-sttp-basic-auth-literal-credentials",
    """
    val request = basicRequest
      .auth.basic("jira-bot@acme.example", "§T§")
      .get(uri"https://acme.atlassian.net/rest/api/3/search?jql=project=OPS")
    val response = request.send(backend)
    """,
    T=ATLASSIAN,
)
shape(
    "r-httr2-req-auth-bearer-token-literal",
    """
    library(httr2)

    resp <- request("https://api.github.com/repos/acme/models/releases") |>
      req_auth_bearer_token("§T§") |>
      req_perform()
    resp_body_json(resp)[[1]]$tag_name
    """,
    T=GHP,
)
shape(
    "julia-http-get-headers-vector-api-key",
    """
    using HTTP, JSON3

    headers = ["Authorization" => "Token §T§", "Accept" => "application/json"]
    r = HTTP.get("https://api.replicate.com/v1/models/stability-ai/sdxl", headers)
    JSON3.read(r.body).latest_version.id
    """,
    T=REPLICATE,
)
shape(
    "lua-neovim-plugin-setup-api-key-literal",
    """
    -- ~/.config/nvim/lua/plugins/ai.lua
    return {
      "olimorris/codecompanion.nvim",
      opts = {
        adapters = {
          anthropic = function()
            return require("codecompanion.adapters").extend("anthropic", {
              env = { api_key = "§K§" },
            })
          end,
        },
      },
    }
    """,
    K=ANTHROPIC,
)
shape(
    "perl-lwp-useragent-credentials-method",
    """
    use LWP::UserAgent;
    my $ua = LWP::UserAgent->new(timeout => 30);
    $ua->credentials('intranet.corp.example:443', 'Restricted', 'reportbot', '§P§');
    my $res = $ua->get('https://intranet.corp.example/reports/daily.csv');
    die $res->status_line unless $res->is_success;
    """,
    P=PERSON,
)
shape(
    "clojure-clj-http-request-map-headers",
    """
    (require '[clj-http.client :as http])

    (http/post "https://api.airtable.com/v0/app§up§/Leads"
               {:headers {"Authorization" "Bearer §T§"}
                :content-type :json
                :form-params {:records [{:fields {:Name "Acme"}}]}})
    """,
    T=AIRTABLE,
    up=AN(14),
)
shape(
    "haskell-http-conduit-setrequestheader-bearer",
    """
    main :: IO ()
    main = do
      req0 <- parseRequest "https://api.groq.com/openai/v1/models"
      let req = setRequestHeader "Authorization" ["Bearer §K§"] req0
      resp <- httpLBS req
      print (getResponseStatusCode resp)
    """,
    K=GROQ,
)
shape(
    "ocaml-cohttp-header-add-authorization",
    """
    let headers =
      Cohttp.Header.init ()
      |> fun h -> Cohttp.Header.add h "Authorization" "Bearer §K§"
      |> fun h -> Cohttp.Header.add h "Content-Type" "application/json"
    in
    Cohttp_lwt_unix.Client.post ~headers ~body (Uri.of_string "https://api.mistral.ai/v1/chat/completions")
    """,
    K=MISTRAL,
)
shape(
    "nim-httpclient-headers-newhttpheaders",
    """
    import std/[httpclient, json]

    let client = newHttpClient()
    client.headers = newHttpHeaders({"Authorization": "Bearer §K§", "Content-Type": "application/json"})
    echo client.postContent("https://api.deepseek.com/chat/completions", body = $(%*{"model": "deepseek-chat"}))
    """,
    K=DEEPSEEK,
)
shape(
    "crystal-http-client-basic-auth-call",
    """
    require "http/client"

    client = HTTP::Client.new("api.mailgun.net", tls: true)
    client.basic_auth("api", "§K§")
    response = client.post("/v3/mg.acme.example/messages", form: {"from" => "ops@acme.example", "to" => "oncall@acme.example", "subject" => "disk"})
    """,
    K=MAILGUN,
)
shape(
    "google-apps-script-urlfetchapp-headers-literal",
    """
    function syncLeads() {
      const res = UrlFetchApp.fetch('https://api.hubapi.com/crm/v3/objects/contacts?limit=100', {
        method: 'get',
        headers: { Authorization: 'Bearer §T§' },
        muteHttpExceptions: true,
      });
      const rows = JSON.parse(res.getContentText()).results;
      SpreadsheetApp.getActive().getSheetByName('Leads').getRange(2, 1, rows.length, 1).setValues(rows.map(r => [r.id]));
    }
    """,
    T=HUBSPOT,
)
shape(
    "power-query-m-web-contents-headers-record",
    """
    let
        Source = Json.Document(Web.Contents("https://api.harvestapp.com/v2/time_entries",
            [Headers = [#"Harvest-Account-Id" = "§n3§§n3§", Authorization = "Bearer §T§", #"User-Agent" = "PowerBI"]])),
        entries = Source[time_entries],
        tbl = Table.FromList(entries, Splitter.SplitByNothing())
    in
        tbl
    """,
    T=cat(DG(7), ".pt.", UL(86)),
)
shape(
    "vba-excel-macro-msxml2-setrequestheader",
    """
    Sub PullRates()
        Dim http As Object
        Set http = CreateObject("MSXML2.XMLHTTP")
        http.Open "GET", "https://openexchangerates.org/api/latest.json", False
        http.setRequestHeader "Authorization", "Token §K§"
        http.send
        Sheets("Rates").Range("A1").Value = http.responseText
    End Sub
    """,
    K=HX(32),
)
shape(
    "fsharp-fsi-script-httpclient-default-request-headers",
    """
    #r "nuget: FSharp.Data"
    open System.Net.Http
    let http = new HttpClient()
    http.DefaultRequestHeaders.Add("X-Api-Key", "§K§")
    let body = http.GetStringAsync("https://api.exa.ai/websets/v0/websets").Result
    printfn "%s" body
    """,
    K=EXA,
)
shape(
    "zig-build-zon-private-dependency-url-token",
    """
    .{
        .name = .acme_fw,
        .version = "0.§n§.0",
        .dependencies = .{
            .crypto = .{
                .url = "https://oauth2:§T§@git.corp.example/fw/crypto/archive/v1.4.tar.gz",
                .hash = "1220§sha256§",
            },
        },
    }
    """,
    T=GLPAT,
)
shape(
    "python-boto3-session-explicit-keys-in-lambda-layer",
    """
    import boto3

    session = boto3.Session(
        aws_access_key_id="§A§",
        aws_secret_access_key="§S§",
        region_name="eu-central-1",
    )
    s3 = session.client("s3")
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "typescript-drizzle-neon-http-connection-string-literal",
    """
    import { neon } from "@neondatabase/serverless";
    import { drizzle } from "drizzle-orm/neon-http";

    const sql = neon("postgresql://neondb_owner:§P§@ep-§hex8§-pooler.eu-central-1.aws.neon.tech/neondb?sslmode=require");
    export const db = drizzle(sql);
    """,
    P=cat("npg_", AN(12)),
)
shape(
    "python-google-genai-client-api-key-kwarg",
    """
    from google import genai

    client = genai.Client(api_key="§K§")
    resp = client.models.generate_content(model="gemini-2.5-flash", contents="Translate to French: good morning")
    print(resp.text)
    """,
    K=GOOGLE,
)
shape(
    "go-slack-new-client-literal-bot-token",
    """
    api := slack.New("§T§", slack.OptionDebug(false))
    _, _, err := api.PostMessage("C§up§", slack.MsgOptionText("deploy finished", false))
    if err != nil {
    \tlog.Fatal(err)
    }
    """,
    T=SLACK_BOT,
    up=UP(10),
)
shape(
    "java-jedis-pool-constructor-password-argument",
    """
    JedisPoolConfig cfg = new JedisPoolConfig();
    cfg.setMaxTotal(64);
    JedisPool pool = new JedisPool(cfg, "cache-2.internal", 6379, 2000, "§P§", 0);
    try (Jedis j = pool.getResource()) {
        j.setex("health", 30, "ok");
    }
    """,
    P=AN(32),
)
shape(
    "python-psycopg-connect-keyword-password",
    """
    import psycopg

    with psycopg.connect(host="§host§", dbname="billing", user="billing_rw", password="§P§", sslmode="require") as conn:
        with conn.cursor() as cur:
            cur.execute("select count(*) from invoices where status = 'open'")
            print(cur.fetchone())
    """,
    P=SAFE(22),
)
shape(
    "ruby-rails-credentials-edit-decrypted-buffer",
    """
    # rails credentials:edit --environment production   (decrypted buffer, saved in /tmp by the editor)
    aws:
      access_key_id: §A§
      secret_access_key: §S§
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "php-laravel-config-services-array-literal-secret",
    """
    <?php
    return [
        'postmark' => [
            'token' => '§T§',
        ],
        'ses' => [
            'key' => env('AWS_ACCESS_KEY_ID'),
            'secret' => env('AWS_SECRET_ACCESS_KEY'),
            'region' => 'eu-west-1',
        ],
    ];
    """,
    T=UUID,
)

# ---- connection strings and DSNs ------------------------------------------------------------------------------

shape(
    "sqlalchemy-url-mssql-pyodbc-odbc-connect-encoded",
    """
    DATABASE_URL = "mssql+pyodbc:///?odbc_connect=DRIVER%3D%7BODBC+Driver+18+for+SQL+Server%7D%3BSERVER%3Dsql01.corp.example%3BDATABASE%3DCRM%3BUID%3Dcrm_app%3BPWD%3D§P§%3BEncrypt%3Dyes"
    engine = create_engine(DATABASE_URL, pool_pre_ping=True)
    """,
    P=AN(20),
)
shape(
    "oracle-easy-connect-sqlplus-user-slash-password-at",
    """
    $ sqlplus -L hr_app/§P§@//ora-prod.corp.example:1521/HRPDB

    SQL*Plus: Release 23.0.0.0.0 - Production on Tue Mar §n§ §hms§ 2026
    Connected to:
    Oracle Database 23ai Enterprise Edition Release 23.0.0.0.0 - Production
    SQL>
    """,
    P=AN(16),
)
shape(
    "mongodb-srv-uri-in-node-config-js-export",
    """
    // config/production.js
    module.exports = {
      port: 8080,
      mongo: {
        uri: 'mongodb+srv://orders-api:§P§@orders.§hex8§.mongodb.net/orders?retryWrites=true&w=majority&appName=orders-api',
      },
    };
    """,
    P=AN(16),
)
shape(
    "rediss-url-upstash-in-celery-config",
    """
    # celeryconfig.py
    broker_url = "rediss://default:§P§@eu1-lasting-§hex8§.upstash.io:6379?ssl_cert_reqs=required"
    result_backend = broker_url
    task_acks_late = True
    """,
    P=cat("A", AN(33)),
)
shape(
    "valkey-sentinel-url-with-password-in-go-config",
    """
    cache:
      addr: "redis-sentinel://:§P§@sentinel-0.cache.svc:26379,sentinel-1.cache.svc:26379/0?master_name=mymaster"
      pool_size: 50
      read_timeout: 500ms
    """,
    P=AN(24),
)
shape(
    "neo4j-bolt-uri-env-and-password-python-driver",
    """
    from neo4j import GraphDatabase

    driver = GraphDatabase.driver("neo4j+s://§hex8§.databases.neo4j.io", auth=("neo4j", "§P§"))
    with driver.session(database="neo4j") as s:
        print(s.run("MATCH (n) RETURN count(n)").single()[0])
    """,
    P=UL(43),
)
shape(
    "clickhouse-http-url-basic-in-grafana-datasource-yaml",
    """
    apiVersion: 1
    datasources:
      - name: ClickHouse
        type: grafana-clickhouse-datasource
        jsonData:
          host: clickhouse.data.lan
          port: 9440
          username: grafana_ro
          protocol: native
          secure: true
        secureJsonData:
          password: §P§
    """,
    P=SAFE(20),
)
shape(
    "snowflake-connector-python-connect-kwargs",
    """
    import snowflake.connector

    ctx = snowflake.connector.connect(
        user="ETL_SVC",
        password="§P§",
        account="acme-eu1",
        warehouse="LOAD_WH",
        database="RAW",
        schema="SHOPIFY",
    )
    """,
    P=SYM(20, "!#%*+-=?@^_~."),
)
shape(
    "db2-connection-string-cli-db2cli-validate",
    """
    $ db2cli validate -connstring "DATABASE=SAMPLE;HOSTNAME=db2.corp.example;PORT=50001;PROTOCOL=TCPIP;UID=db2inst1;PWD=§P§;SECURITY=SSL" -connect
    ===============================================================================
    Connection attempt for data source name or connection string:
    ===============================================================================
    [SUCCESS]
    """,
    P=PWGEN(10),
)
shape(
    "sap-hana-hdbuserstore-set-key-password",
    """
    $ hdbuserstore SET BACKUPKEY hana01.corp.example:30015 BACKUP_OPERATOR §P§
    $ hdbuserstore LIST BACKUPKEY
    KEY BACKUPKEY
      ENV : hana01.corp.example:30015
      USER: BACKUP_OPERATOR
    """,
    P=SYM(14, "!#%*+-=?@^_~."),
)
shape(
    "couchbase-connection-string-and-password-authenticator-java",
    """
    Cluster cluster = Cluster.connect(
        "couchbases://cb.§hex8§.cloud.couchbase.com",
        ClusterOptions.clusterOptions(PasswordAuthenticator.create("app_user", "§P§")));
    Bucket bucket = cluster.bucket("sessions");
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
)
shape(
    "elasticsearch-url-userinfo-in-logstash-like-vector-sink",
    """
    [sinks.es]
    type = "elasticsearch"
    inputs = ["parse_logs"]
    endpoints = ["https://vector:§P§@es.logs.lan:9200"]
    bulk.index = "app-logs-%Y.%m.%d"
    """,
    P=AN(24),
)
shape(
    "influxdb-v1-url-u-p-query-params-in-grafana-dashboard-link",
    """
    Raw query (copied from the panel inspector):
    https://influx.iot.lan:8086/query?db=telegraf&u=grafana&p=§P§&q=SELECT+mean(%22usage_idle%22)+FROM+%22cpu%22+WHERE+time+%3E+now()-1h
    """,
    P=AN(18),
)
shape(
    "questdb-pg-wire-psql-uri-in-makefile",
    """
    QDB_URL := postgresql://admin:§P§@questdb.data.lan:8812/qdb

    ingest-check:
    \tpsql "$(QDB_URL)" -c "SELECT count() FROM trades WHERE timestamp > dateadd('h', -1, now());"
    """,
    P=SAFE(16),
)
shape(
    "yugabyte-ysql-jdbc-url-with-password-param",
    """
    spring.datasource.url=jdbc:yugabytedb://yb-tserver-0.yb.svc:5433/orders?user=orders&password=§P§&load-balance=true
    spring.datasource.driver-class-name=com.yugabyte.Driver
    """,
    P=AN(20),
)
shape(
    "tidb-mysql-uri-in-prisma-env",
    """
    DATABASE_URL="mysql://§up§.root:§P§@gateway01.eu-central-1.prod.aws.tidbcloud.com:4000/shop?sslaccept=strict"
    """,
    P=AN(16),
    up=AN(15),
)
shape(
    "surrealdb-sql-cli-conn-user-pass-flags",
    """
    $ surreal sql --endpoint wss://surreal.data.lan --username root --password '§P§' --namespace acme --database app --pretty
    acme/app> INFO FOR DB;
    """,
    P=SAFE(22),
)
shape(
    "amqps-url-cloudamqp-in-dotnet-appsettings",
    """
    {
      "RabbitMq": {
        "Uri": "amqps://§lo§:§P§@rat.rmq2.cloudamqp.com/§lo§",
        "Prefetch": 20
      },
      "Logging": {"LogLevel": {"Default": "Information"}}
    }
    """,
    P=UL(32),
    lo=LO(8),
)
shape(
    "nats-creds-file-jwt-and-nkey-seed",
    """
    -----BEGIN NATS USER JWT-----
    §J§
    ------END NATS USER JWT------

    ************************* IMPORTANT *************************
    NKEY Seed printed below can be used to sign and prove identity.
    NKEYs are sensitive and should be treated as secrets.

    -----BEGIN USER NKEY SEED-----
    §S§
    ------END USER NKEY SEED------
    """,
    J=JWT(
        {
            "jti": "X7Q2",
            "iat": 1767225600,
            "iss": "ACZ",
            "name": "orders",
            "sub": "UDX",
            "nats": {"type": "user"},
        },
        "ed25519-nkey",
    ),
    S=cat("SUA", lambda r: chars(r, _B32S, 55)),
)
shape(
    "activemq-artemis-broker-url-in-spring-properties",
    """
    spring.artemis.mode=native
    spring.artemis.broker-url=tcp://artemis.mq.lan:61616?sslEnabled=true
    spring.artemis.user=orders
    spring.artemis.password=§P§
    """,
    P=SAFE(18),
)
shape(
    "ibm-mq-mqsc-ccdt-json-with-password-in-app-properties",
    """
    ibm.mq.queueManager=QM1
    ibm.mq.channel=APP.SVRCONN
    ibm.mq.connName=mq01.corp.example(1414)
    ibm.mq.user=app
    ibm.mq.password=§P§
    """,
    P=PWGEN(12),
)
shape(
    "pulsar-client-conf-auth-token-param",
    """
    # conf/client.conf
    webServiceUrl=https://pulsar.stream.lan:8443/
    brokerServiceUrl=pulsar+ssl://pulsar.stream.lan:6651/
    authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
    authParams=token:§T§
    """,
    T=JWT({"sub": "orders-consumer"}, "HS256"),
)
shape(
    "ftp-url-with-userinfo-in-lftp-bookmarks",
    """
    # ~/.local/share/lftp/bookmarks
    supplier-feed\tftp://feeds:§P§@ftp.supplier.example/outgoing/
    mirror-old\tsftp://mirror@files.corp.example/srv/mirror
    """,
    P=PWGEN(10),
)
shape(
    "smtp-url-userinfo-in-django-anymail-env",
    """
    EMAIL_URL=smtp+tls://postmaster%40mg.acme.example:§P§@smtp.eu.mailgun.org:587
    DEFAULT_FROM_EMAIL=Acme <no-reply@acme.example>
    """,
    P=MAILGUN,
)
shape(
    "imap-url-with-password-in-n8n-like-env-for-mail-trigger",
    """
    MAIL_TRIGGER_URL=imaps://invoices%40acme.example:§P§@imap.fastmail.com:993/INBOX
    MAIL_TRIGGER_INTERVAL=60
    """,
    P=cat(LO(16)),
)
shape(
    "cassandra-cql-python-plain-text-auth-provider",
    """
    from cassandra.cluster import Cluster
    from cassandra.auth import PlainTextAuthProvider

    auth = PlainTextAuthProvider(username="telemetry", password="§P§")
    cluster = Cluster(["scylla-0.data.lan", "scylla-1.data.lan"], auth_provider=auth)
    session = cluster.connect("telemetry")
    """,
    P=SAFE(20),
)
shape(
    "libsql-url-with-auth-token-query-param",
    """
    const client = createClient({
      url: "libsql://acme-app-§lo§.aws-eu-west-1.turso.io?authToken=§T§",
    });
    """,
    T=TURSO,
    lo=LO(6),
)
shape(
    "ado-net-connection-string-npgsql-in-csx-script",
    """
    var cs = "Host=§host§;Port=5432;Database=inventory;Username=inv_app;Password=§P§;SSL Mode=Require;Trust Server Certificate=true";
    await using var conn = new NpgsqlConnection(cs);
    await conn.OpenAsync();
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
)
shape(
    "memcached-sasl-pylibmc-binary-username-password",
    """
    import pylibmc
    mc = pylibmc.Client(["mc1.cache.lan:11211"], binary=True, username="app", password="§P§",
                        behaviors={"tcp_nodelay": True, "ketama": True})
    """,
    P=AN(24),
)
shape(
    "ldap-bind-url-in-sssd-conf-default-authtok",
    """
    [domain/corp.example]
    id_provider = ldap
    ldap_uri = ldaps://ldap.corp.example
    ldap_search_base = dc=corp,dc=example
    ldap_default_bind_dn = cn=sssd,ou=services,dc=corp,dc=example
    ldap_default_authtok_type = password
    ldap_default_authtok = §P§
    """,
    P=SYM(20, "!#%*+-=?@^_~."),
)

# ---- tool-call JSON and agent traces ---------------------------------------------------------------------------

shape(
    "openai-responses-output-function-call-arguments-string",
    """
    {
      "id": "resp_§hex12§§hex12§",
      "object": "response",
      "output": [
        {
          "type": "function_call",
          "id": "fc_§hex12§",
          "call_id": "§callid§",
          "name": "run_sql",
          "arguments": "{\\"dsn\\":\\"postgresql://agent:§P§@§host§:5432/crm\\",\\"query\\":\\"select count(*) from accounts\\"}"
        }
      ],
      "usage": {"input_tokens": §tok§, "output_tokens": §n2§}
    }
    """,
    P=SAFE(20),
)
shape(
    "anthropic-messages-tool-use-block-input-set-secret",
    """
    {
      "role": "assistant",
      "content": [
        {"type": "text", "text": "I'll store the key in the project's secret manager."},
        {"type": "tool_use", "id": "§toolu§", "name": "set_secret",
         "input": {"project": "web", "name": "POSTHOG_PERSONAL_API_KEY", "value": "§K§"}}
      ],
      "stop_reason": "tool_use"
    }
    """,
    K=POSTHOG_PERSONAL,
)
shape(
    "mcp-jsonrpc-tools-call-request-arguments-connection-string",
    """
    {"jsonrpc":"2.0","id":§n§,"method":"tools/call","params":{"name":"query","arguments":{"connectionString":"Server=sql01.corp.example;Database=Sales;User Id=mcp_reader;Password=§P§;TrustServerCertificate=True","sql":"SELECT TOP 5 * FROM Orders"}}}
    """,
    P=SAFE(18),
)
shape(
    "mcp-jsonrpc-read-file-result-dotenv-clerk-secret",
    """
    {"jsonrpc":"2.0","id":§n§,"result":{"content":[{"type":"text","text":"NODE_ENV=production\\nPORT=3000\\nCLERK_SECRET_KEY=§K§\\nNEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_§hex12§"}],"isError":false}}
    """,
    K=CLERK,
)
shape(
    "claude-code-transcript-jsonl-bash-tool-use-input-command",
    """
    {"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"§toolu§","name":"Bash","input":{"command":"curl -s -H 'Authorization: Bearer §T§' https://api.vercel.com/v9/projects | jq '.projects[].name'","description":"List Vercel projects"}}]},"uuid":"§uuid§","timestamp":"§ts§"}
    """,
    T=VERCEL,
)
shape(
    "claude-code-transcript-jsonl-tool-result-cat-dotenv",
    """
    {"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"§toolu§","content":"     1\\tAPP_URL=http://localhost:3000\\n     2\\tOPENAI_API_KEY=§K§\\n     3\\tLOG_LEVEL=debug\\n"}]},"uuid":"§uuid§","timestamp":"§ts§"}
    """,
    K=OPENAI,
)
shape(
    "codex-exec-json-event-exec-command-begin-with-env",
    """
    {"id":"§n§","msg":{"type":"exec_command_begin","call_id":"§callid§","command":["bash","-lc","HCLOUD_TOKEN=§T§ hcloud server list -o columns=name,status"],"cwd":"/work/infra"}}
    {"id":"§n§","msg":{"type":"exec_command_end","call_id":"§callid§","exit_code":0,"stdout":"NAME      STATUS\\nweb-1     running\\n"}}
    """,
    T=HCLOUD,
)
shape(
    "openhands-event-stream-cmdrunaction-json",
    """
    {"id": §n2§, "timestamp": "§ts§", "source": "agent", "action": "run",
     "args": {"command": "git remote set-url origin https://x-access-token:§T§@github.com/acme/site.git && git push origin HEAD", "is_input": false, "thought": "Push the fix"},
     "message": "Running command: git remote set-url origin ..."}
    """,
    T=GHS,
)
shape(
    "swe-agent-trajectory-json-action-and-observation",
    """
    {
      "trajectory": [
        {
          "action": "export SENTRY_AUTH_TOKEN=§T§ && sentry-cli releases list --org acme | head",
          "observation": "+--------------+------------+\\n| Released     | Version    |\\n+--------------+------------+",
          "thought": "Check which releases exist before bisecting."
        }
      ]
    }
    """,
    T=SENTRY_USER,
)
shape(
    "smolagents-step-log-code-action-python-block",
    """
    ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ Step 3 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
     ─ Executing parsed code: ─────────────────────────────────────────────────────
      import requests
      r = requests.get("https://api.tavily.com/usage", headers={"Authorization": "Bearer §K§"})
      print(r.json())
     ──────────────────────────────────────────────────────────────────────────────
    Execution logs:
    {'key': {'usage': 412, 'limit': 1000}}
    """,
    K=TAVILY,
)
shape(
    "mastra-agent-trace-tool-call-args-object",
    """
    [mastra] §ts§ DEBUG agent=ops-assistant step=2 toolCall {
      toolName: 'httpRequest',
      args: {
        url: 'https://api.pagerduty.com/oncalls',
        headers: { Authorization: 'Token token=§T§', Accept: 'application/vnd.pagerduty+json;version=2' }
      }
    }
    """,
    T=cat("u+", UL(18)),
)
shape(
    "n8n-workflow-export-http-request-node-header-parameters",
    """
    {
      "name": "Sync invoices",
      "nodes": [
        {
          "parameters": {
            "url": "https://api.lemonsqueezy.com/v1/orders",
            "sendHeaders": true,
            "headerParameters": {"parameters": [{"name": "Authorization", "value": "Bearer §T§"}]}
          },
          "type": "n8n-nodes-base.httpRequest",
          "typeVersion": 4.2,
          "name": "Get orders"
        }
      ]
    }
    """,
    T=JWT({"aud": "1", "jti": "a81f", "sub": "§n3§", "scopes": []}, "RS256"),
)
shape(
    "node-red-flows-json-function-node-with-inline-token",
    """
    [{"id":"§hex8§§hex8§","type":"function","z":"§hex8§","name":"build request","func":"msg.headers = {\\n  'Authorization': 'Bearer §T§'\\n};\\nmsg.url = 'http://homeassistant.local:8123/api/states/sensor.power';\\nreturn msg;","outputs":1,"x":340,"y":120,"wires":[["§hex8§"]]}]
    """,
    T=JWT({"iss": "§hex12§", "iat": 1767225600, "exp": 2082585600}, "HS256"),
)
shape(
    "a2a-protocol-message-send-parts-text-credentials",
    """
    {"jsonrpc":"2.0","id":"§uuid§","method":"message/send","params":{"message":{"role":"user","messageId":"§uuid2§","parts":[{"kind":"text","text":"Use the staging SFTP account to fetch the feed: user feeds-stg, password §P§"}]}}}
    """,
    P=PERSON,
)
shape(
    "openai-agents-sdk-function-span-slack-webhook-input",
    """
    {"object":"trace.span","id":"span_§hex12§","trace_id":"trace_§trace§","span_data":{"type":"function","name":"send_slack_message","input":"{\\"webhook_url\\":\\"§W§\\",\\"text\\":\\"Nightly ETL finished\\"}","output":"ok"}}
    """,
    W=SLACK_HOOK,
)
shape(
    "pydantic-ai-agent-run-messages-tool-call-part-args",
    """
    ModelResponse(parts=[ToolCallPart(tool_name='create_db_user', args={'username': 'metrics_ro', 'password': '§P§', 'grants': ['SELECT']}, tool_call_id='§callid§')], usage=RequestUsage(input_tokens=§tok§, output_tokens=§n2§), model_name='gpt-4.1')
    """,
    P=APPLE,
)
shape(
    "langgraph-studio-thread-state-json-tool-message-content",
    """
    {"values":{"messages":[{"type":"human","content":"check the stripe balance"},{"type":"tool","name":"shell","tool_call_id":"§callid§","content":"$ stripe balance retrieve --api-key §K§\\n{\\n  \\"object\\": \\"balance\\",\\n  \\"livemode\\": true\\n}"}]},"next":[]}
    """,
    K=STRIPE_RK,
)
shape(
    "crewai-task-output-json-raw-with-credentials",
    """
    {"description":"Provision the analytics read replica","name":"provision","expected_output":"connection details","raw":"Replica ready. host=replica-1.§host§ port=5432 user=analyst password=§P§ sslmode=require","agent":"DBA"}
    """,
    P=SAFE(20),
)
shape(
    "autogen-tool-call-execution-event-content-repr",
    """
    ---------- ToolCallExecutionEvent (assistant) ----------
    [FunctionExecutionResult(content='{"status":"created","api_key":"§K§","name":"ci-reader"}', name='create_api_key', call_id='§callid§', is_error=False)]
    """,
    K=cat("ak_live_", AN(32)),
)
shape(
    "semantic-kernel-function-invocation-log-arguments",
    """
    info: Microsoft.SemanticKernel.KernelFunction[0]
          Function MailPlugin-SendMail invoking.
    trce: Microsoft.SemanticKernel.KernelFunction[0]
          Function arguments: {"smtpHost":"smtp.office365.com","smtpUser":"reports@acme.example","smtpPassword":"§P§","to":"cfo@acme.example"}
    """,
    P=PERSON,
)
shape(
    "agent-memory-jsonl-remembered-fact-with-password",
    """
    {"id":"mem_§hex12§","created_at":"§ts§","user_id":"§user§","memory":"User's home NAS admin login is admin / §P§ (Synology at §lan§)","categories":["devices"]}
    """,
    P=PERSON,
)
shape(
    "cursor-agent-terminal-tool-output-in-chat-export-markdown",
    """
    **Terminal** `kubectl get secret stripe -o jsonpath='{.data.key}' | base64 -d`

    ```
    §K§
    ```

    The key is present and looks like a live restricted key. I'll reference it via `secretKeyRef` rather than inlining it.
    """,
    K=STRIPE_RK,
)
shape(
    "gemini-cli-session-json-function-response-output",
    """
    {"role":"user","parts":[{"functionResponse":{"id":"run_shell_command-§n3§","name":"run_shell_command","response":{"output":"Command: gcloud auth print-access-token\\nStdout: §T§\\nExit Code: 0"}}}]}
    """,
    T=cat("ya29.a0", UL(180)),
)
shape(
    "llm-tool-call-xml-style-parameters-in-agent-log",
    """
    <function_calls>
    <invoke name="write_file">
    <parameter name="path">deploy/.env.production</parameter>
    <parameter name="content">DATABASE_URL=postgres://web:§P§@§host§:5432/web
    REDIS_URL=redis://cache-2.internal:6379/0
    </parameter>
    </invoke>
    </function_calls>
    """,
    P=SAFE(22),
)
shape(
    "agent-trace-otel-span-attributes-gen-ai-tool-call-arguments",
    """
    {"name":"execute_tool run_command","attributes":{"gen_ai.operation.name":"execute_tool","gen_ai.tool.name":"run_command","gen_ai.tool.call.id":"§callid§","gen_ai.tool.call.arguments":"{\\"cmd\\":\\"docker login -u acme -p §T§ registry.gitlab.com\\"}"},"trace_id":"§trace§","span_id":"§span§"}
    """,
    T=GLDT,
)
shape(
    "mcp-server-stderr-startup-log-config-dump",
    """
    [§ts§] [info] mcp-server-jira starting (stdio)
    [§ts§] [debug] config: { baseUrl: 'https://acme.atlassian.net', email: 'bot@acme.example', apiToken: '§T§', projects: [ 'OPS', 'WEB' ] }
    [§ts§] [info] listening on stdio
    """,
    T=ATLASSIAN,
)
shape(
    "aider-input-history-file-pasted-key",
    """
    # ~/.aider.input.history
    # 2026-03-§n§ §hms§.482
    +/run export TOGETHER_API_KEY=§K§ && python eval.py --model together
    # 2026-03-§n§ §hms§.918
    +fix the failing assertion in tests/test_eval.py
    """,
    K=TOGETHER,
)
shape(
    "goose-session-jsonl-tool-response-text",
    """
    {"role":"user","created":1767§n3§,"content":[{"type":"toolResponse","id":"§callid§","toolResult":{"status":"success","value":[{"type":"text","text":"$ cat ~/.config/gh/hosts.yml\\ngithub.com:\\n    oauth_token: §T§\\n    user: §user§\\n    git_protocol: https\\n"}]}}]}
    """,
    T=GHO,
)
shape(
    "vercel-ai-sdk-tool-result-stream-part-json",
    """
    data: {"type":"tool-result","toolCallId":"§callid§","toolName":"createApiKey","result":{"id":"key_§hex12§","secret":"§K§","scopes":["read"]}}
    """,
    K=cat("sk_live_", UL(40)),
)
shape(
    "browser-agent-fill-action-log-password-field",
    """
    [agent] step 7: fill(selector="#password", value="§P§")
    [agent] step 8: click(selector="button[type=submit]")
    [agent] page title: "Dashboard – Acme Billing"
    """,
    P=PERSON,
)

# ---- error messages and stack traces quoting a config ----------------------------------------------------------

shape(
    "sqlalchemy-operationalerror-traceback-with-url-in-engine-repr",
    """
    Traceback (most recent call last):
      File "/app/worker.py", line 41, in <module>
        with engine.connect() as conn:
    sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: FATAL:  too many connections for role "etl"
    (Background on this error at: https://sqlalche.me/e/20/e3q8)
    engine = Engine(postgresql+psycopg://etl:§P§@§host§:5432/warehouse)
    """,
    P=SAFE(18),
)
shape(
    "node-unhandled-rejection-mongoserverselectionerror-uri",
    """
    node:internal/process/promises:394
        triggerUncaughtException(err, true /* fromPromise */);
        ^

    MongoServerSelectionError: connection <monitor> to 10.0.3.12:27017 closed
        at Topology.selectServer (/app/node_modules/mongodb/lib/sdam/topology.js:326:38) {
      reason: TopologyDescription { type: 'ReplicaSetNoPrimary' },
      connectionString: 'mongodb://api:§P§@mongo-0.db:27017,mongo-1.db:27017/app?replicaSet=rs0'
    }
    """,
    P=AN(22),
)
shape(
    "java-spring-boot-failed-to-bind-properties-origin-value",
    """
    ***************************
    APPLICATION FAILED TO START
    ***************************

    Description:

    Failed to bind properties under 'app.payments.adyen' to com.acme.payments.AdyenProperties:

        Property: app.payments.adyen.api-key
        Value: "§K§"
        Origin: class path resource [application-prod.yml] - 14:16
        Reason: must match "AQE.*"
    """,
    K=ADYEN,
)
shape(
    "go-error-wrapped-with-dsn-in-log-line",
    """
    {"level":"fatal","ts":"§ts§","caller":"cmd/api/main.go:88","msg":"open database","error":"failed to connect to `user=api database=api`: dial tcp 10.0.4.7:5432: i/o timeout","dsn":"host=§host§ user=api password=§P§ dbname=api sslmode=verify-full"}
    """,
    P=SAFE(20),
)
shape(
    "rust-anyhow-error-debug-config-struct",
    """
    Error: failed to start ingest

    Caused by:
        0: loading config from /etc/ingest/config.toml
        1: Config { listen: 0.0.0.0:9000, s3: S3Config { bucket: "ingest-raw", access_key: "§A§", secret_key: "§S§", region: "auto" }, batch: 512 }
           missing field `endpoint`
    """,
    A=HX(32),
    S=HX(64),
)
shape(
    "php-pdoexception-stack-trace-with-constructor-args",
    """
    PHP Fatal error:  Uncaught PDOException: SQLSTATE[HY000] [1045] Access denied for user 'shop'@'10.0.2.14' (using password: YES) in /var/www/shop/lib/Db.php:22
    Stack trace:
    #0 /var/www/shop/lib/Db.php(22): PDO->__construct('mysql:host=db02...', 'shop', '§P§', Array)
    #1 /var/www/shop/public/index.php(9): Db::connect()
    #2 {main}
      thrown in /var/www/shop/lib/Db.php on line 22
    """,
    P=PERSON,
)
shape(
    "rails-log-started-post-parameters-unfiltered",
    """
    Started POST "/api/v1/integrations" for §ip§ at §day§ §hms§ +0000
    Processing by Api::V1::IntegrationsController#create as JSON
      Parameters: {"integration"=>{"kind"=>"shopify", "shop"=>"acme-store.myshopify.com", "access_token"=>"§T§"}}
    Completed 201 Created in 84ms (Views: 0.4ms | ActiveRecord: 12.1ms)
    """,
    T=SHOPIFY,
)
shape(
    "python-requests-httperror-url-with-api-key-query",
    """
    Traceback (most recent call last):
      File "/opt/etl/fetch_weather.py", line 27, in fetch
        r.raise_for_status()
      File "/opt/etl/.venv/lib/python3.12/site-packages/requests/models.py", line 1024, in raise_for_status
        raise HTTPError(http_error_msg, response=self)
    requests.exceptions.HTTPError: 429 Client Error: Too Many Requests for url: https://api.tomorrow.io/v4/weather/forecast?location=52.52,13.40&apikey=§K§
    """,
    K=AN(32),
)
shape(
    "dotnet-sqlexception-login-failed-with-connection-string-log",
    """
    fail: Microsoft.EntityFrameworkCore.Database.Connection[20004]
          An error occurred using the connection to database 'Billing' on server 'sql01.corp.example'.
    fail: Billing.Api.Startup[0]
          Startup check failed for ConnectionString="Server=sql01.corp.example;Database=Billing;User ID=billing_api;Password=§P§;Encrypt=True"
          Microsoft.Data.SqlClient.SqlException (0x80131904): Login failed for user 'billing_api'.
    """,
    P=SYM(18, "!#%*+-=?@^_~."),
)
shape(
    "kotlin-exception-message-with-okhttp-request-tostring",
    """
    java.io.IOException: Unexpected code Response{protocol=h2, code=401, message=, url=https://api.openai.com/v1/embeddings}
    \tat com.acme.search.Embedder.embed(Embedder.kt:58)
    Request{method=POST, url=https://api.openai.com/v1/embeddings, headers=[Authorization:Bearer §K§, Content-Type:application/json]}
    """,
    K=OPENAI_SVC,
)
shape(
    "python-pydantic-validationerror-input-value-shows-secret",
    """
    pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings
    webhook_url
      Input should be a valid URL, relative URL without a base [type=url_parsing, input_value='§W§ ', input_type=str]
        For further information visit https://errors.pydantic.dev/2.11/v/url_parsing
    """,
    W=DISCORD_HOOK,
)
shape(
    "elixir-dbconnection-error-with-keyword-opts-inspect",
    """
    ** (DBConnection.ConnectionError) tcp connect (db02.prod.lan:5432): connection refused - :econnrefused
    [hostname: "db02.prod.lan", username: "phoenix", password: "§P§", database: "app_prod", pool_size: 10, port: 5432]
        (db_connection 2.7.0) lib/db_connection/connection.ex:104: DBConnection.Connection.connect/2
    """,
    P=SAFE(20),
)

# ---- Markdown, HTML, tables, READMEs and runbooks ---------------------------------------------------------------

shape(
    "readme-quickstart-code-block-export-with-real-key",
    """
    ## Quick start

    ```bash
    git clone https://github.com/acme/voice-bot && cd voice-bot
    export DEEPGRAM_API_KEY=§K§
    npm install && npm start
    ```

    Then call the number in `config/phone.json`.
    """,
    K=HX(40),
)
shape(
    "runbook-markdown-break-glass-section-credentials",
    """
    # Runbook: payments DB failover

    ## Break-glass access
    If Vault is down, use the local superuser on the standby:

    - host: `pg-standby.payments.lan`
    - user: `postgres`
    - password: `§P§`

    Rotate it right after the incident (ticket template PAY-ROT).
    """,
    P=SYM(24, "!#%*+-=?@^_~."),
)
shape(
    "markdown-table-environments-urls-and-admin-tokens",
    """
    | Env | URL | Admin token |
    |-----|-----|-------------|
    | dev | https://dev.acme.example | `dev-only-not-secret` |
    | staging | https://stg.acme.example | `§T§` |
    | prod | https://acme.example | see 1Password |
    """,
    T=UL(40),
)
shape(
    "html-admin-page-input-type-hidden-api-key-value",
    """
    <form method="post" action="/admin/integrations/save">
      <input type="hidden" name="csrfmiddlewaretoken" value="§hex12§">
      <label for="k">Mapbox secret token</label>
      <input id="k" type="text" name="mapbox_secret" value="§K§" readonly>
      <button type="submit">Save</button>
    </form>
    """,
    K=MAPBOX_SK,
)
shape(
    "confluence-page-html-export-code-macro-with-credentials",
    """
    <div class="code panel pdl"><div class="codeContent panelContent pdl">
    <pre class="syntaxhighlighter-pre" data-syntaxhighlighter-params="brush: bash; gutter: false">mysql -h reporting-db.eu.example -u looker -p'§P§' looker_pdt</pre>
    </div></div>
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "notion-export-markdown-toggle-with-service-account-table",
    """
    # Vendors – shared logins

    <aside>⚠️ migrate to 1Password by end of Q2</aside>

    | Vendor | Login | Password | Notes |
    | --- | --- | --- | --- |
    | Printful | ops@acme.example | §P§ | 2FA on Tarek's phone |
    """,
    P=PERSON,
)
shape(
    "obsidian-note-frontmatter-and-inline-api-key",
    """
    ---
    tags: [homelab, api]
    created: §day§
    ---
    # Home Assistant tokens

    Long-lived token for the Grafana dashboard (made on §day§):
    `§T§`

    Revoke from Profile → Security if the dashboard box is retired.
    """,
    T=JWT({"iss": "§hex12§§hex12§", "iat": 1767225600, "exp": 2082585600}, "HS256"),
)
shape(
    "github-pr-description-testing-section-with-staging-login",
    """
    ## What
    Adds SAML login for the admin panel.

    ## Testing
    1. Go to https://pr-§n3§.preview.acme.dev/admin
    2. Log in as `qa-admin` / `§P§`
    3. Click *Sign in with Okta* and check the redirect.

    Closes #§n3§
    """,
    P=APPLE,
)
shape(
    "asciidoc-runbook-table-cell-password",
    """
    == Console access

    [cols="1,1,2"]
    |===
    |Device |User |Password

    |core-sw-01
    |netadmin
    |§P§
    |===
    """,
    P=SYM(14, "!#%*+-=?@^_~."),
)
shape(
    "rst-sphinx-doc-code-block-with-token",
    """
    Publishing
    ----------

    .. code-block:: console

       $ uv publish --token §T§

    The token is scoped to ``acme-sdk`` only.
    """,
    T=PYPI,
)
shape(
    "html-email-onboarding-body-temporary-password-strong",
    """
    <html><body style="font-family:Arial">
    <p>Hi §first§,</p>
    <p>Your account on the Acme expense portal is ready. Sign in at <a href="https://expenses.acme.example">expenses.acme.example</a> with:</p>
    <p>Username: <strong>§user§</strong><br>Temporary password: <strong>§P§</strong></p>
    <p>You'll be asked to choose a new password on first login.</p>
    </body></html>
    """,
    P=TEMP,
)
shape(
    "csv-export-api-keys-inventory-with-secret-column",
    """
    service,owner,key_id,secret,rotated
    exchange-rates,finance,er-§n3§,§K§,§day§
    geocoder,web,,managed-by-vault,§day§
    """,
    K=HX(32),
)

# ---- tickets and chat, many languages ---------------------------------------------------------------------------

shape(
    "polish-mattermost-haslo-do-bazy-testowej",
    """
    §first§ 10:42
    Hej, hasło do bazy testowej to §P§ — użytkownik qa_tester. Nie wrzucajcie go do repo 🙏
    """,
    P=PERSON,
)
shape(
    "czech-email-heslo-k-vpn-docasne",
    """
    Dobrý den,

    posílám přístup do VPN pro nového kolegu:
    uživatel: §user§
    dočasné heslo: §P§

    Při prvním přihlášení bude vyzván ke změně.
    S pozdravem, IT podpora
    """,
    P=TEMP,
)
shape(
    "slovak-teams-heslo-je-wifi-sklad",
    """
    [§hms§] §first§: heslo na wifi v sklade je §P§ (sieť ACME-Sklad)
    [§hms2§] §first2§: ďakujem!
    """,
    P=PERSON,
)
shape(
    "romanian-whatsapp-parola-contului-de-test",
    """
    [§day§, §hms§] §first§: parola pentru contul de test e §P§
    [§day§, §hms2§] §first2§: merge, mulțumesc
    """,
    P=PERSON,
)
shape(
    "serbian-cyrillic-viber-lozinka-server",
    """
    §first§: Лозинка за сервер: §P§
    §first2§: Хвала, улазим сада.
    """,
    P=PERSON,
)
shape(
    "swedish-slack-losenordet-till-admin-panelen",
    """
    §first§  9:14
    Lösenordet till adminpanelen är «§P§», byt det efter demon!
    """,
    P=APPLE,
)
shape(
    "norwegian-email-passord-til-ruteren",
    """
    Hei §first§,

    Passordet til ruteren på hytta er:
    §P§

    Brukernavn er admin. Mvh §first2§
    """,
    P=PERSON,
)
shape(
    "danish-teams-adgangskode-til-printeren",
    """
    §first§ (§hms§): adgangskoden til printerens webside er §P§
    §first2§ (§hms2§): perfekt, tak
    """,
    P=PWGEN(10),
)
shape(
    "persian-telegram-ramz-obur-server-rtl",
    """
    §first§: سلام، رمز عبور سرور تست: §P§
    §first2§: ممنون 🙏 وصل شدم
    """,
    P=PERSON,
)
shape(
    "pashto-whatsapp-pasward-da-dafter",
    """
    §first§: د دفتر وای فای پاسورډ دا دی: §P§
    """,
    P=PERSON,
)
shape(
    "mongolian-messenger-nuuts-ug-cyrillic",
    """
    §first§: Системийн нууц үг: §P§ — нэвтрэх нэр нь admin.
    """,
    P=PERSON,
)
shape(
    "nepali-viber-sarbhar-ko-password-yo-ho",
    """
    §first§: सर्भरको पासवर्ड यो हो: §P§
    §first2§: धन्यवाद दाइ
    """,
    P=PERSON,
)
shape(
    "marathi-whatsapp-password-ahe",
    """
    [§day§, §hms§] §first§: ऑफिस लॅपटॉपचा पासवर्ड §P§ आहे
    """,
    P=PERSON,
)
shape(
    "punjabi-gurmukhi-chat-password-hai",
    """
    §first§: ਦਫ਼ਤਰ ਦੇ ਕੰਪਿਊਟਰ ਦਾ ਪਾਸਵਰਡ §P§ ਹੈ
    """,
    P=PERSON,
)
shape(
    "sinhala-chat-murapadaya-wifi",
    """
    §first§: Office WiFi මුරපදය: §P§
    §first2§: ස්තූතියි!
    """,
    P=PERSON,
)
shape(
    "somali-whatsapp-furaha-sirta-ah",
    """
    §first§: Furaha sirta ee nidaamka waa §P§ — ha la wadaagin.
    """,
    P=PERSON,
)
shape(
    "swahili-ticket-nenosiri-la-muda",
    """
    Tiketi #§ticket§ — Akaunti mpya
    Habari §first§, akaunti yako imeundwa.
    Jina la mtumiaji: §user§
    Nenosiri la muda: §P§
    Tafadhali libadilishe unapoingia kwa mara ya kwanza.
    """,
    P=TEMP,
)
shape(
    "portuguese-pt-email-palavra-passe-provisoria",
    """
    Olá §first§,

    A sua palavra-passe provisória para o portal de faturação é: §P§
    Deverá alterá-la no primeiro acesso.

    Cumprimentos,
    Apoio Informático
    """,
    P=TEMP,
)
shape(
    "spanish-mexico-whatsapp-contrasena-del-modem",
    """
    [§day§ §hms§] §first§: la contraseña del módem es §P§ (la red es Totalplay-§hex8§)
    [§day§ §hms2§] §first2§: ya quedó, gracias
    """,
    P=UP(10),
)
shape(
    "italian-slack-thread-credenziali-staging-code-span",
    """
    §first§: per lo staging usate `admin` / `§P§`, domani la cambio
    §first2§: 👍
    """,
    P=APPLE,
)
shape(
    "german-swiss-email-passwort-fuer-das-kundenportal",
    """
    Grüezi §first§

    Hier die Zugangsdaten fürs Kundenportal:
    Benutzer: §user§
    Passwort: §P§

    Freundliche Grüsse
    """,
    P=PERSON,
)
shape(
    "russian-telegram-parol-ot-bd-code-span",
    """
    §first§: пароль от прод БД `§P§`, логин app_rw. после релиза сменим
    """,
    P=SAFE(18),
)
shape(
    "ukrainian-slack-token-dlia-api",
    """
    §first§: ось токен для API доставки: §T§
    §first2§: дякую, підключаю
    """,
    T=HX(40),
)
shape(
    "turkish-slack-api-anahtari-paylasim",
    """
    §first§: Canlı ortam için API anahtarı şu: §K§
    §first2§: tamamdır, .env'ye ekledim
    """,
    K=STRIPE_SK,
)
shape(
    "vietnamese-teams-mat-khau-wifi-van-phong",
    """
    §first§: Mật khẩu wifi văn phòng tầng 3: §P§
    """,
    P=PERSON,
)
shape(
    "indonesian-slack-token-bot-telegram",
    """
    §first§: token bot telegram buat notifikasi: §T§
    §first2§: siap, udah aku pasang di server
    """,
    T=TELEGRAM_BOT,
)
shape(
    "korean-slack-api-key-jeondal",
    """
    §first§: 스테이징 OpenAI 키 전달드려요: §K§
    §first2§: 감사합니다! 바로 적용할게요
    """,
    K=OPENAI,
)
shape(
    "japanese-teams-api-kii-haritsuke",
    """
    §first§: 本番のAnthropicキーです。共有後は削除してください → §K§
    """,
    K=ANTHROPIC,
)
shape(
    "chinese-feishu-message-shujuku-mima",
    """
    §first§：测试库账号 test_rw，密码：§P§，用完记得改回去。
    """,
    P=SAFE(16),
)
shape(
    "english-jira-comment-service-desk-customer-shares-password",
    """
    *Customer comment* (§ts§):
    Hi, I still can't get the integration working. Our SFTP login is acme_upload and the password is §P§ — can you check on your side?
    """,
    P=PERSON,
)
shape(
    "english-zendesk-macro-reply-with-reset-password-filled",
    """
    Hi §first§,

    I've reset your password as requested. You can now log in with:

        §P§

    Please change it under Settings → Security after signing in.
    """,
    P=TEMP,
)
shape(
    "english-discord-dm-bot-token-paste",
    """
    §user§ — Today at §hms§
    here's the bot token so you can test locally: §T§
    don't commit it lol
    """,
    T=DISCORD_BOT,
)
shape(
    "english-sms-bank-style-new-online-banking-password",
    """
    ACME BANK: Your new online banking password is §P§. We will never ask you for it. If you didn't request this, call 0800 §n3§ §n3§.
    """,
    P=TEMP,
)

# ---- long tail: network gear, NAS, BMCs, printers, cameras, VoIP ------------------------------------------------

shape(
    "mikrotik-routeros-export-show-sensitive-wireguard-and-ppp-secret",
    """
    # 2026-03-§n§ §hms§ by RouterOS 7.1§n§
    # software id = §up§
    /interface wireguard
    add listen-port=13231 mtu=1420 name=wg-home private-key="§K§"
    /ppp secret
    add name=roadwarrior password=§P§ profile=default-encryption service=l2tp
    """,
    K=WG_KEY,
    P=PWGEN(12),
    up=UP(9),
)
shape(
    "openwrt-uci-show-wireless-key-and-sae",
    """
    root@OpenWrt:~# uci show wireless | grep -E 'ssid|encryption|key'
    wireless.default_radio0.ssid='Hofmann-5G'
    wireless.default_radio0.encryption='sae-mixed'
    wireless.default_radio0.key='§P§'
    wireless.default_radio1.ssid='Hofmann-Guest'
    wireless.default_radio1.encryption='none'
    """,
    P=PERSON,
)
shape(
    "pfsense-config-xml-openvpn-shared-key-and-ipsec-psk",
    """
    <ipsec>
      <phase1>
        <ikeid>1</ikeid>
        <remote-gateway>§pub§</remote-gateway>
        <authentication_method>pre_shared_key</authentication_method>
        <pre-shared-key>§P§</pre-shared-key>
      </phase1>
    </ipsec>
    """,
    P=AN(40),
)
shape(
    "opnsense-config-xml-unbound-dot-and-ddclient-password",
    """
    <OPNsense>
      <DynDNS>
        <accounts>
          <account uuid="§uuid§">
            <enabled>1</enabled>
            <service>cloudflare</service>
            <username>token</username>
            <password>§T§</password>
            <hostnames>home.acme.example</hostnames>
          </account>
        </accounts>
      </DynDNS>
    </OPNsense>
    """,
    T=CF_TOKEN,
)
shape(
    "cisco-ios-running-config-username-password-0-and-snmp-community",
    """
    !
    hostname branch-rtr-§n§
    !
    username netops privilege 15 password 0 §P§
    !
    snmp-server community §C§ RW 10
    snmp-server location Branch §n§ comms room
    !
    """,
    P=PWGEN(12),
    C=AN(16),
)
shape(
    "cisco-asa-tunnel-group-ipsec-attributes-pre-shared-key",
    """
    tunnel-group §pub§ type ipsec-l2l
    tunnel-group §pub§ ipsec-attributes
     ikev2 remote-authentication pre-shared-key §P§
     ikev2 local-authentication pre-shared-key §P§
    """,
    P=AN(32),
)
shape(
    "juniper-srx-ike-gateway-pre-shared-key-ascii-text-set",
    """
    set security ike policy ike-pol-aws mode main
    set security ike policy ike-pol-aws proposals ike-prop-aws
    set security ike policy ike-pol-aws pre-shared-key ascii-text "§P§"
    set security ike gateway gw-aws ike-policy ike-pol-aws
    """,
    P=cat(lambda r: chars(r, string.ascii_letters + "._", 32)),
)
shape(
    "ubiquiti-unifi-os-backup-json-radius-secret",
    """
    {"_id":"§hex12§§hex12§","name":"Corp-8021X","auth_servers":[{"ip":"§ip§","port":1812,"x_secret":"§S§"}],"acct_servers":[],"site_id":"§hex12§§hex12§"}
    """,
    S=AN(24),
)
shape(
    "synology-dsm-task-scheduler-user-script-with-password",
    """
    # Control Panel > Task Scheduler > "offsite sync" > Run command
    /usr/bin/rsync -az --delete /volume1/homes/ rsync://backup@§pub§:873/homes --password-file=<(echo '§P§')
    """,
    P=PWGEN(12),
)
shape(
    "qnap-hbs-job-json-remote-account-password",
    """
    {"job_name":"Photos to B2","type":"cloud","provider":"backblaze_b2","account":{"key_id":"§kid§","application_key":"§K§"},"schedule":"daily 02:00"}
    """,
    K=cat("K00", AN(28)),
    kid=cat("00", HX(22)),
)
shape(
    "truenas-midclt-call-cloudsync-credentials-create-output",
    """
    # midclt call cloudsync.credentials.create '{"name":"wasabi","provider":"S3","attributes":{"access_key_id":"§A§","secret_access_key":"§S§","endpoint":"s3.eu-central-2.wasabisys.com"}}'
    {"id": §n§, "name": "wasabi", "provider": "S3"}
    """,
    A=UP(20),
    S=AN(40),
)
shape(
    "proxmox-pveum-user-token-add-output-table",
    """
    root@pve:~# pveum user token add terraform@pve provider --privsep 0
    ┌──────────────┬──────────────────────────────────────┐
    │ key          │ value                                │
    ╞══════════════╪══════════════════════════════════════╡
    │ full-tokenid │ terraform@pve!provider               │
    ├──────────────┼──────────────────────────────────────┤
    │ info         │ {"privsep":"0"}                      │
    ├──────────────┼──────────────────────────────────────┤
    │ value        │ §T§ │
    └──────────────┴──────────────────────────────────────┘
    """,
    T=UUID,
)
shape(
    "idrac-racadm-set-idrac-users-password",
    """
    $ racadm -r §ip§ -u root -p calvin set iDRAC.Users.2.Password §P§
    [Key=iDRAC.Embedded.1#Users.2]
    Object value modified successfully
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "hpe-ilo-redfish-curl-patch-account-password",
    """
    curl -k -u Administrator:§P§ -X PATCH https://ilo-§n§.mgmt.lan/redfish/v1/AccountService/Accounts/1 \\
      -H 'Content-Type: application/json' -d '{"Password":"§Q§"}'
    """,
    P=UP(8),
    Q=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "supermicro-ipmicfg-user-setpwd",
    """
    [root@gpu-07 ~]# ipmicfg -user setpwd 2 §P§
    Done.
    [root@gpu-07 ~]# ipmicfg -user list
     User ID | User Name       | Privilege Level
           2 | ADMIN           | Administrator
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "ricoh-mfp-address-book-export-csv-smb-folder-password",
    """
    "Index","Name","Set General Settings","Folder: Protocol","Folder: Path","Folder: User Name","Folder: Password"
    "00003","Accounts scans","1","SMB","\\\\\\\\fs01\\\\scans\\\\accounts","scanner","§P§"
    """,
    P=PERSON,
)
shape(
    "hikvision-camera-rtsp-url-in-blue-iris-config-export",
    """
    [Cameras\\Garage]
    ip=rtsp://admin:§P§@§lan§:554/Streaming/Channels/101
    type=Hikvision
    fps=15
    """,
    P=PERSON,
)
shape(
    "onvif-device-manager-profile-xml-user-password",
    """
    <Device>
      <Name>Reolink-Door</Name>
      <Address>http://§lan§:8000/onvif/device_service</Address>
      <Credentials><Username>onvif</Username><Password>§P§</Password></Credentials>
    </Device>
    """,
    P=PWGEN(10),
)
shape(
    "yealink-provisioning-cfg-sip-account-password",
    """
    #!version:1.0.0.1
    account.1.enable = 1
    account.1.label = Reception
    account.1.auth_name = 2001
    account.1.user_name = 2001
    account.1.password = §P§
    account.1.sip_server.1.address = pbx.corp.example
    """,
    P=AN(16),
)
shape(
    "polycom-phone-xml-reg-auth-password-attribute",
    """
    <PHONE_CONFIG>
      <reg reg.1.address="2002" reg.1.auth.userId="2002" reg.1.auth.password="§P§" reg.1.label="Sales"/>
      <voIpProt voIpProt.server.1.address="pbx.corp.example"/>
    </PHONE_CONFIG>
    """,
    P=AN(16),
)
shape(
    "kamailio-subscriber-table-insert-ha1-and-plain",
    """
    kamctl add 3005@voip.corp.example §P§
    MySQL password for user 'kamailio@localhost':
    new user '3005@voip.corp.example' added
    """,
    P=AN(14),
)
shape(
    "freepbx-fwconsole-trunk-export-secret-column",
    """
    trunkid,name,tech,username,secret,host
    2,provider-main,pjsip,§n3§§n3§,§S§,sip.provider.example
    """,
    S=AN(20),
)

# ---- long tail: game, streaming and media servers ---------------------------------------------------------------

shape(
    "minecraft-java-server-properties-enable-rcon-block",
    """
    #Minecraft server properties
    enable-rcon=true
    rcon.port=25575
    rcon.password=§P§
    motd=Family SMP
    online-mode=true
    """,
    P=PWGEN(12),
)
shape(
    "palworld-settings-ini-admin-and-server-password",
    """
    [/Script/Pal.PalGameWorldSettings]
    OptionSettings=(Difficulty=None,ServerName="Friends Pal",ServerPassword="§P§",AdminPassword="§Q§",PublicPort=8211,RCONEnabled=True,RCONPort=25575)
    """,
    P=PERSON,
    Q=AN(20),
)
shape(
    "rust-dedicated-server-startup-rcon-password-arg",
    """
    ./RustDedicated -batchmode +server.port 28015 +server.hostname "EU Weekly" +rcon.port 28016 +rcon.password "§P§" +rcon.web 1 +server.maxplayers 150
    """,
    P=AN(20),
)
shape(
    "satisfactory-server-api-bearer-admin-token-curl",
    """
    curl -k https://§pub§:7777/api/v1 -H "Authorization: Bearer §T§" -H 'Content-Type: application/json' -d '{"function":"QueryServerState"}'
    """,
    T=cat("ewoJInBsIjogIkFQSVRva2VuIgp9.", HXU(128)),
)
shape(
    "mumble-murmur-ini-serverpassword-and-ice-secret",
    """
    ; /etc/mumble-server.ini
    database=/var/lib/mumble-server/mumble-server.sqlite
    icesecretwrite=§S§
    serverpassword=§P§
    bandwidth=72000
    users=50
    """,
    S=AN(24),
    P=PERSON,
)
shape(
    "icecast-xml-authentication-source-and-admin-password",
    """
    <authentication>
        <source-password>§P§</source-password>
        <admin-user>admin</admin-user>
        <admin-password>§Q§</admin-password>
    </authentication>
    """,
    P=AN(16),
    Q=AN(16),
)
shape(
    "obs-studio-service-json-stream-key-twitch",
    """
    {
        "settings": {
            "bwtest": false,
            "key": "§K§",
            "server": "auto",
            "service": "Twitch"
        },
        "type": "rtmp_common"
    }
    """,
    K=TWITCH_STREAM,
)
shape(
    "ffmpeg-command-rtmp-youtube-stream-key-in-url",
    """
    ffmpeg -re -i loop.mp4 -c:v libx264 -preset veryfast -b:v 4500k -c:a aac -f flv "rtmp://a.rtmp.youtube.com/live2/§K§"
    """,
    K=YT_STREAM,
)
shape(
    "srt-caller-url-passphrase-in-vmix-notes",
    """
    SRT output for the venue encoder:
    srt://ingest.acme-live.example:9000?mode=caller&latency=400000&passphrase=§P§&pbkeylen=32
    """,
    P=AN(24),
)
shape(
    "plex-preferences-xml-plex-online-token",
    """
    <?xml version="1.0" encoding="utf-8"?>
    <Preferences MachineIdentifier="§uuid§" ProcessedMachineIdentifier="§sha§" FriendlyName="basement" PlexOnlineToken="§T§" PlexOnlineUsername="§user§" AcceptedEULA="1"/>
    """,
    T=PLEX,
)
shape(
    "sonarr-v4-config-xml-apikey-with-forms-auth",
    """
    <Config>
      <BindAddress>*</BindAddress>
      <Port>8989</Port>
      <ApiKey>§K§</ApiKey>
      <AuthenticationMethod>Forms</AuthenticationMethod>
      <Branch>main</Branch>
    </Config>
    """,
    K=ARR,
)
shape(
    "sabnzbd-ini-misc-api-key-and-nzb-key",
    """
    [misc]
    api_key = §K§
    nzb_key = §N§
    [servers]
    [[news.provider.example]]
    username = §user§
    """,
    K=HX(32),
    N=HX(32),
)
shape(
    "qbittorrent-webui-api-login-curl-password-form",
    """
    curl -i --data "username=admin&password=§P§" http://§lan§:8080/api/v2/auth/login
    HTTP/1.1 200 OK
    set-cookie: SID=§hex12§§hex12§; HttpOnly; path=/
    Ok.
    """,
    P=PWGEN(12),
)
shape(
    "jellyfin-api-key-in-jellyseerr-settings-json",
    """
    {"jellyfin":{"name":"Jellyfin","hostname":"§lan§","port":8096,"useSsl":false,"apiKey":"§K§","serverId":"§hex12§§hex12§"}}
    """,
    K=HX(32),
)
shape(
    "navidrome-toml-lastfm-secret-and-spotify-secret",
    """
    MusicFolder = "/music"
    LastFM.ApiKey = "§hex12§§hex12§§hex8§"
    LastFM.Secret = "§S§"
    Spotify.ID = "§hex12§§hex12§§hex8§"
    Spotify.Secret = "§T§"
    """,
    S=HX(32),
    T=HX(32),
)

# ---- long tail: smart home, energy, vehicles ---------------------------------------------------------------------

shape(
    "homebridge-hue-bridge-username-api-key-in-config",
    """
    {
      "platform": "Hue",
      "name": "Hue",
      "hosts": ["§lan§"],
      "users": {"ECB5FAFFFE§up§": "§K§"}
    }
    """,
    K=HUE,
    up=HXU(6),
)
shape(
    "xiaomi-miio-device-token-in-home-assistant-yaml",
    """
    vacuum:
      - platform: xiaomi_miio
        host: §lan§
        token: §T§
        name: Roborock S8
    """,
    T=XIAOMI,
)
shape(
    "switchbot-api-token-and-secret-python-sign",
    """
    token = "§T§"
    secret = "§S§"
    t = str(int(time.time() * 1000))
    sign = base64.b64encode(hmac.new(secret.encode(), f"{token}{t}{nonce}".encode(), hashlib.sha256).digest())
    """,
    T=HX(96),
    S=HX(32),
)
shape(
    "enphase-envoy-local-jwt-curl-production-json",
    """
    curl -sk -H "Authorization: Bearer §T§" https://envoy.local/production.json?details=1 | jq '.production[1].wNow'
    2412.7
    """,
    T=JWT({"aud": "12233§n3§", "iss": "Entrez", "enphaseUser": "owner", "exp": 1798761600}, "ES256"),
)
shape(
    "octopus-energy-api-key-in-python-consumption-script",
    """
    API_KEY = "§K§"
    MPAN = "§n3§§n3§§n3§§n3§"
    r = requests.get(f"https://api.octopus.energy/v1/electricity-meter-points/{MPAN}/meters/§up§/consumption/", auth=(API_KEY, ""))
    """,
    K=OCTOPUS,
    up=UP(10),
)
shape(
    "tibber-graphql-token-curl-home-price",
    """
    curl -s https://api.tibber.com/v1-beta/gql -H "Authorization: Bearer §T§" -H 'Content-Type: application/json' \\
      -d '{"query":"{viewer{homes{currentSubscription{priceInfo{current{total}}}}}}"}'
    """,
    T=UL(43),
)
shape(
    "solaredge-monitoring-api-key-url-in-grafana-json-datasource",
    """
    "url": "https://monitoringapi.solaredge.com/site/§n3§§n3§/overview.json?api_key=§K§"
    """,
    K=UP(32),
)
shape(
    "netatmo-client-secret-and-refresh-token-env",
    """
    NETATMO_CLIENT_ID=§hex12§§hex12§
    NETATMO_CLIENT_SECRET=§S§
    NETATMO_REFRESH_TOKEN=§R§
    """,
    S=AN(40),
    R=cat(HX(24), "|", HX(32)),
)
shape(
    "knx-keyring-password-in-xknx-yaml",
    """
    knx:
      connection_type: tunneling_tcp_secure
      host: §lan§
      knxkeys_file_path: /config/.storage/knx/knx.knxkeys
      knxkeys_password: "§P§"
    """,
    P=PERSON,
)
shape(
    "loxone-miniserver-url-with-credentials-in-node-red",
    """
    msg.url = "http://admin:§P§@§lan§/jdev/sps/io/Garagentor/pulse";
    return msg;
    """,
    P=PWGEN(10),
)
shape(
    "shelly-gen2-rpc-sys-setconfig-auth-curl",
    """
    curl -s --digest -u admin:§P§ http://§lan§/rpc/Shelly.GetStatus | jq .switch:0.apower
    """,
    P=PWGEN(12),
)
shape(
    "tesla-owner-api-refresh-token-in-teslamate-like-json",
    """
    {"access_token":"§hex8§.redacted-by-ui","refresh_token":"§R§","expires_in":28800,"token_type":"Bearer"}
    """,
    R=JWT({"iss": "https://auth.tesla.com/oauth2/v3", "scp": ["openid", "offline_access"]}, "RS256"),
)
shape(
    "victron-vrm-api-token-header-curl-installations",
    """
    curl -s -H "X-Authorization: Token §T§" https://vrmapi.victronenergy.com/v2/users/§n3§§n3§/installations
    """,
    T=HX(64),
)
shape(
    "octoprint-config-yaml-api-key-and-plugin-secret",
    """
    api:
      key: §K§
    plugins:
      discovery:
        upnpUuid: §uuid§
    """,
    K=HXU(32),
)
shape(
    "prusa-link-api-key-in-slicer-physical-printer-ini",
    """
    [physical_printer:MK4 Workshop]
    host_type = prusalink
    print_host = §lan§
    printhost_apikey = §K§
    printhost_user = maker
    """,
    K=AN(16),
)
shape(
    "esp32-arduino-sketch-const-char-wifi-and-mqtt",
    """
    const char* WIFI_SSID = "Workshop-IoT";
    const char* WIFI_PASS = "§P§";
    const char* MQTT_HOST = "§lan§";
    const char* MQTT_PASS = "§Q§";
    """,
    P=PERSON,
    Q=AN(20),
)
shape(
    "lorawan-chirpstack-device-keys-nwk-key-json",
    """
    {"deviceKeys":{"devEui":"a84041§hex8§§n§","nwkKey":"§K§","appKey":"00000000000000000000000000000000"}}
    """,
    K=HXU(32),
)

# ---- long tail: crypto nodes and wallets ------------------------------------------------------------------------

shape(
    "bitcoin-conf-rpcuser-rpcpassword-plain",
    """
    # ~/.bitcoin/bitcoin.conf
    server=1
    txindex=1
    rpcuser=electrs
    rpcpassword=§P§
    rpcallowip=§lan§/24
    """,
    P=AN(32),
)
shape(
    "monero-wallet-rpc-systemd-execstart-rpc-login",
    """
    [Service]
    ExecStart=/usr/local/bin/monero-wallet-rpc --wallet-file /srv/xmr/shop --password-file /srv/xmr/pw --rpc-bind-port 18083 --rpc-login shop:§P§ --daemon-address §lan§:18081
    """,
    P=AN(24),
)
shape(
    "geth-keystore-unlock-password-file-cat-then-run",
    """
    $ cat /etc/geth/password.txt
    §P§
    $ geth --datadir /data/geth --unlock 0x§hex12§§hex12§§hex12§§hex12§ --password /etc/geth/password.txt --http
    """,
    P=PHRASE(5, " "),
)
shape(
    "solana-cli-keypair-json-array-bytes",
    """
    $ cat ~/.config/solana/deployer.json
    §K§
    $ solana address -k ~/.config/solana/deployer.json
    §hex12§§hex8§
    """,
    K=lambda r: "[" + ",".join(str(b) for b in r.randbytes(64)) + "]",
)
shape(
    "hardhat-config-ts-accounts-private-key-literal",
    """
    const config: HardhatUserConfig = {
      solidity: "0.8.28",
      networks: {
        base: {
          url: "https://mainnet.base.org",
          accounts: ["0x§K§"],
        },
      },
    };
    """,
    K=HX(64),
)
shape(
    "foundry-env-private-key-and-rpc-url-with-alchemy-key",
    """
    PRIVATE_KEY=0x§K§
    RPC_URL=https://eth-mainnet.g.alchemy.com/v2/§A§
    """,
    K=HX(64),
    A=UL(32),
)
shape(
    "nostr-client-export-nsec-in-notes-app",
    """
    Nostr keys (backup, §day§)
    npub1§lo§
    §K§
    """,
    K=NSEC,
    lo=lambda r: chars(r, _BECH, 58),
)
shape(
    "lnbits-extension-admin-key-curl-create-invoice",
    """
    curl -X POST https://lnbits.home.arpa/api/v1/payments -d '{"out": false, "amount": 2100, "memo": "coffee"}' -H "X-Api-Key: §K§" -H "Content-type: application/json"
    """,
    K=HX(32),
)

# ---- long tail: science, statistics, notebooks, HPC --------------------------------------------------------------

shape(
    "r-renviron-file-api-keys",
    """
    # ~/.Renviron
    R_LIBS_USER=~/R/library
    CENSUS_API_KEY=§K§
    GITHUB_PAT=§T§
    """,
    K=HX(40),
    T=GHP,
)
shape(
    "sas-libname-odbc-password-option",
    """
    libname dw odbc datasrc="DW_PROD" user="sas_etl" password="§P§" schema=marts;
    proc sql;
      select count(*) from dw.fact_sales;
    quit;
    """,
    P=SYM(14, "!#%*+-=?@^_~."),
)
shape(
    "stata-do-file-odbc-load-connectionstring-pwd",
    """
    odbc load, exec("SELECT * FROM survey_responses WHERE wave = 3") ///
        connectionstring("DRIVER={PostgreSQL Unicode};SERVER=§host§;DATABASE=survey;UID=stata;PWD=§P§") clear
    """,
    P=AN(16),
)
shape(
    "matlab-database-connection-call-with-password",
    """
    conn = database('lab_results', 'matlab_ro', '§P§', ...
        'Vendor', 'PostgreSQL', 'Server', 'pg-main.internal', 'PortNumber', 5432);
    data = fetch(conn, 'SELECT * FROM assays WHERE run_id = 418');
    """,
    P=PERSON,
)
shape(
    "mathematica-urlexecute-headers-bearer",
    """
    resp = URLExecute[
      HTTPRequest["https://api.wolframalpha.com/v2/query",
        <|"Query" -> <|"input" -> "population of Nairobi", "appid" -> "§K§"|>|>],
      "RawJSON"]
    """,
    K=cat(UP(6), "-", UP(10)),
)
shape(
    "slurm-sbatch-script-export-wandb-and-hf",
    """
    #!/bin/bash
    #SBATCH --job-name=ft-llama
    #SBATCH --gres=gpu:8
    #SBATCH --time=24:00:00
    export HF_TOKEN=§H§
    export WANDB_API_KEY=§W§
    srun torchrun --nproc_per_node=8 train.py --config configs/ft.yaml
    """,
    H=HF,
    W=HX(40),
)
shape(
    "mlflow-tracking-env-basic-auth-password",
    """
    export MLFLOW_TRACKING_URI=https://mlflow.ml.lan
    export MLFLOW_TRACKING_USERNAME=trainer
    export MLFLOW_TRACKING_PASSWORD=§P§
    python train.py --epochs 20
    """,
    P=SAFE(20),
)
shape(
    "ray-job-submit-runtime-env-json-aws-keys-for-batch-infer",
    """
    ray job submit --address http://ray-head:8265 --runtime-env-json='{"env_vars": {"AWS_ACCESS_KEY_ID": "§A§", "AWS_SECRET_ACCESS_KEY": "§S§"}, "pip": ["boto3"]}' -- python batch_infer.py
    """,
    A=AKIA,
    S=AWS_SECRET,
)
shape(
    "modal-toml-named-profile-token-id-and-token-secret",
    """
    # ~/.modal.toml
    [acme]
    token_id = "§I§"
    token_secret = "§S§"
    active = true
    """,
    I=MODAL_ID,
    S=MODAL_SECRET,
)
shape(
    "databricks-cfg-profile-token",
    """
    # ~/.databrickscfg
    [DEFAULT]
    host  = https://adb-§n3§§n3§§n3§.§n§.azuredatabricks.net
    token = §T§
    """,
    T=DATABRICKS,
)
shape(
    "qgis-auth-config-export-xml-basic-password",
    """
    <qgis_authentication>
      <configuration id="§hex8§" name="GeoServer prod" method="Basic" version="2">
        <config username="qgis_editor" password="§P§" realm=""/>
      </configuration>
    </qgis_authentication>
    """,
    P=PERSON,
)
shape(
    "geoserver-rest-curl-u-admin-workspace",
    """
    curl -u admin:§P§ -XPOST -H "Content-type: text/xml" -d "<workspace><name>flood</name></workspace>" https://gis.corp.example/geoserver/rest/workspaces
    """,
    P=PERSON,
)
shape(
    "labview-ini-like-instrument-config-with-ftp-password",
    """
    [Data Upload]
    Server = ftp.lab.example
    User = daq_upload
    Password = §P§
    Interval_s = 300
    """,
    P=PWGEN(10),
)

# ---- long tail: mainframe, ERP and enterprise niches --------------------------------------------------------------

shape(
    "sap-rfc-pyrfc-connection-dict-passwd",
    """
    from pyrfc import Connection

    conn = Connection(ashost="sapprd.corp.example", sysnr="00", client="100", user="RFC_BI", passwd="§P§", lang="EN")
    result = conn.call("STFC_CONNECTION", REQUTEXT="ping")
    """,
    P=SYM(12, "!#%*+-=?@^_~."),
)
shape(
    "sap-btp-service-key-json-clientsecret",
    """
    {
      "uaa": {
        "clientid": "sb-§uuid§!b§n3§|xsuaa!b§n2§",
        "clientsecret": "§S§",
        "url": "https://acme-prod.authentication.eu10.hana.ondemand.com"
      },
      "url": "https://api.cf.eu10.hana.ondemand.com"
    }
    """,
    S=cat(UUID, "$", UL(43), "="),
)
shape(
    "oracle-ebs-wallet-less-dbc-file-apps-password",
    """
    # $FND_SECURE/PROD.dbc
    APPS_JDBC_URL=jdbc\\:oracle\\:thin\\:@(DESCRIPTION=(ADDRESS=(PROTOCOL=tcp)(HOST=ebsdb.corp.example)(PORT=1521))(CONNECT_DATA=(SERVICE_NAME=PROD)))
    GWYUID=APPLSYSPUB/PUB
    APPS_PASSWORD=§P§
    """,
    P=AN(12),
)
shape(
    "dynamics-365-connection-string-clientsecret-authtype",
    """
    "Dataverse": "AuthType=ClientSecret;Url=https://acme.crm4.dynamics.com;ClientId=§uuid§;ClientSecret=§S§"
    """,
    S=AZ_SECRET,
)
shape(
    "salesforce-sfdx-auth-url-force-refresh-token",
    """
    $ sf org display --target-org prod --verbose --json | jq -r .result.sfdxAuthUrl
    force://PlatformCLI::§R§@acme.my.salesforce.com
    """,
    R=cat("5Aep861", UL(80)),
)
shape(
    "netsuite-tba-credentials-python-oauth1",
    """
    auth = OAuth1(
        client_key="§hex12§§hex12§§hex12§§hex12§§hex12§§hex8§",
        client_secret="§C§",
        resource_owner_key="§hex12§§hex12§§hex12§§hex12§§hex12§§hex8§",
        resource_owner_secret="§R§",
        realm="§n3§§n3§",
        signature_method="HMAC-SHA256",
    )
    """,
    C=HX(64),
    R=HX(64),
)
shape(
    "zos-ftp-netrc-mainframe-tso-password",
    """
    machine mvs1.corp.example login TSOU01 password §P§
    macdef init
    quote site recfm=fb lrecl=80
    """,
    P=lambda r: chars(r, string.ascii_uppercase, 2) + chars(r, string.digits + string.ascii_uppercase, 6),
)
shape(
    "cics-transaction-gateway-ctg-ini-password",
    """
    SECTION IPICSERVER = CICSPROD
       HOSTNAME=cics.corp.example
       PORT=1435
       USERID=CTGUSER
       PASSWORD=§P§
    ENDSECTION
    """,
    P=lambda r: up(r, 8),
)
shape(
    "sap-hana-xs-advanced-xs-login-password-flag",
    """
    xs login -a https://hxehost:39030 -u XSA_ADMIN -p §P§ -o HANAExpress -s development
    """,
    P=SYM(14, "!#%*+-=?@^_~."),
)
shape(
    "peoplesoft-psappsrv-cfg-userpswd-connectpswd",
    """
    [Startup]
    DBName=HRPRD
    DBType=ORACLE
    UserId=PS
    UserPswd=§P§
    ConnectId=people
    ConnectPswd=§Q§
    """,
    P=AN(10),
    Q=AN(10),
)
shape(
    "informatica-infacmd-password-flag",
    """
    infacmd.sh isp ListServices -dn Domain_Prod -un Administrator -pd '§P§' -st DIS
    """,
    P=SYM(14, "!#%*+-=?@^_~."),
)
shape(
    "tableau-server-tsm-login-password-flag",
    """
    tsm login -s https://tableau.corp.example:8850 -u tabadmin -p '§P§'
    tsm status -v
    """,
    P=SYM(16, "!#%*+-=?@^_~."),
)
shape(
    "boomi-atom-container-properties-shared-secret",
    """
    com.boomi.container.cloudlet.clusterConfigSecret=§S§
    com.boomi.container.sharedServer.http.port=9090
    """,
    S=B64(24),
)
shape(
    "mulesoft-secure-properties-plain-left-in-yaml",
    """
    salesforce:
      username: "integration@acme.example"
      password: "§P§"
      securityToken: "§T§"
    """,
    P=PERSON,
    T=AN(24),
)

# ---- long tail: unusual layouts and odd tools ---------------------------------------------------------------------

shape(
    "fixed-width-legacy-report-columns-with-password",
    """
    ACCOUNT   SYSTEM        USERID      PASSWORD            EXPIRES
    --------- ------------- ----------- ------------------- ----------
    §n3§      GL-LEDGER     GLBATCH     §P§            2026-12-31
    """,
    P=AN(12),
)
shape(
    "yaml-flow-mapping-one-line-credentials",
    """
    smtp: {host: smtp.gmail.com, port: 587, user: alerts@acme.example, pass: §P§, tls: true}
    """,
    P=lambda r: " ".join(chars(r, string.ascii_lowercase, 4) for _ in range(4)),
)
shape(
    "toml-inline-table-registry-auth",
    """
    registries = { corp = { index = "sparse+https://cargo.corp.example/index/", token = "Bearer §T§" } }
    """,
    T=AN(40),
)
shape(
    "ini-value-on-continuation-line-after-key",
    """
    [upload]
    endpoint = https://uploads.corp.example
    token =
        §T§
    retries = 3
    """,
    T=UL(48),
)
shape(
    "windows-reg-file-putty-proxy-password",
    """
    Windows Registry Editor Version 5.00

    [HKEY_CURRENT_USER\\Software\\SimonTatham\\PuTTY\\Sessions\\jump-host]
    "HostName"="jump.corp.example"
    "ProxyMethod"=dword:00000003
    "ProxyUsername"="§user§"
    "ProxyPassword"="§P§"
    """,
    P=PERSON,
)
shape(
    "macos-plist-defaults-read-app-api-token",
    """
    $ defaults read com.acme.menubar-monitor
    {
        APIToken = "§T§";
        LaunchAtLogin = 1;
        PollInterval = 60;
    }
    """,
    T=AN(40),
)
shape(
    "keytool-importpass-storepass-and-keypass-flags",
    """
    keytool -importkeystore -srckeystore wildcard.p12 -srcstoretype PKCS12 -srcstorepass '§P§' \\
      -destkeystore /opt/app/keystore.jks -deststorepass '§Q§' -alias wildcard
    """,
    P=PERSON,
    Q=SAFE(20),
)
shape(
    "openssl-pkcs12-export-passout-pass-arg",
    """
    openssl pkcs12 -export -in cert.pem -inkey key.pem -out client.p12 -name "acme-client" -passout pass:§P§
    """,
    P=SAFE(18),
)
shape(
    "openssl-enc-aes-pass-arg-backup-script",
    """
    tar czf - /etc /srv/app | openssl enc -aes-256-cbc -pbkdf2 -salt -pass pass:'§P§' -out /backups/etc-$(date +%F).tgz.enc
    """,
    P=PHRASE(4, "-"),
)
shape(
    "gpg-batch-passphrase-decrypt-in-cron",
    """
    15 3 * * * gpg --batch --yes --pinentry-mode loopback --passphrase '§P§' -d /srv/feeds/in/*.pgp > /srv/feeds/in/latest.csv
    """,
    P=PHRASE(5, " "),
)
shape(
    "putty-ppk-v3-unencrypted-private-lines",
    """
    PuTTY-User-Key-File-3: ssh-ed25519
    Encryption: none
    Comment: deploy@ci
    Public-Lines: 2
    AAAAC3NzaC1lZDI1NTE5AAAAI§hex12§§hex12§§hex8§
    §hex12§
    Private-Lines: 1
    §K§
    Private-MAC: §sha256§
    """,
    K=cat("AAAAI", B64(27)),
)
shape(
    "openssh-private-key-in-gitlab-ci-variable-echo",
    """
    $ echo "$SSH_DEPLOY_KEY"
    §K§
    $ ssh-add - <<< "$SSH_DEPLOY_KEY"
    Identity added: (stdin) (deploy@gitlab)
    """,
    K=OSSH,
)
shape(
    "pem-rsa-private-key-inside-json-escaped-newlines",
    """
    {"name":"github-app","app_id":§n3§,"private_key":"§K§"}
    """,
    K=lambda r: pem(r, "RSA PRIVATE KEY", "MIIEpAIBAAKCAQEA", 5).replace("\n", "\\n"),
)
shape(
    "ec-private-key-pem-in-helm-values-block-scalar",
    """
    jwt:
      issuer: https://auth.acme.example
      signingKey: |
    §K§
    """,
    K=lambda r: textwrap.indent(pem(r, "EC PRIVATE KEY", "MHcCAQEEI", 2), "    "),
)
shape(
    "age-identity-in-sops-keys-txt",
    """
    # created: §ts§
    # public key: age1§lo§
    §K§
    """,
    K=AGE_KEY,
    lo=lambda r: chars(r, _BECH, 58),
)
shape(
    "minisign-unencrypted-secret-key-file",
    """
    untrusted comment: minisign secret key (unencrypted)
    §K§
    """,
    K=cat("RWQAAEIyAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", B64(72)),
)
shape(
    "wireguard-peer-config-in-qr-text-note",
    """
    [Interface]
    PrivateKey = §K§
    Address = 10.8.0.§n§/32
    DNS = 10.8.0.1

    [Peer]
    PublicKey = §pubk§
    Endpoint = vpn.home.arpa:51820
    AllowedIPs = 0.0.0.0/0
    """,
    K=WG_KEY,
    pubk=B64(32),
)
shape(
    "openvpn-client-auth-file-sudo-cat-then-systemctl-start",
    """
    $ sudo cat /etc/openvpn/client/corp.auth
    §user§
    §P§
    $ sudo systemctl start openvpn-client@corp
    """,
    P=PERSON,
)
shape(
    "strongswan-swanctl-conf-secrets-eap-and-ike",
    """
    secrets {
      ike-branch {
        id = branch.corp.example
        secret = "§S§"
      }
      eap-alice {
        id = alice
        secret = "§P§"
      }
    }
    """,
    S=B64(32),
    P=PERSON,
)
shape(
    "tor-onion-client-auth-private-key-file",
    """
    # /var/lib/tor/onion_auth/admin.auth_private
    §lo§:descriptor:x25519:§K§
    """,
    K=lambda r: chars(r, _B32S, 52),
    lo=lambda r: chars(r, "abcdefghijklmnopqrstuvwxyz234567", 56),
)


@cred("base64-wrapped-k8s-secret-data-with-decoded-review-comment")
def _k8s_b64_review(rng: random.Random) -> Made:
    p = safe(rng, 20)
    b = base64.b64encode(p.encode()).decode()
    return out(
        f"""
        # decoded for review (do not commit!): echo {b} | base64 -d
        # -> {p}
        apiVersion: v1
        kind: Secret
        metadata: {{name: smtp}}
        data:
          password: {b}
        """,
        p,
        b,
    )


# ---- long tail: social, media APIs, hobby and niche services -----------------------------------------------------

shape(
    "bluesky-app-password-in-python-atproto-login",
    """
    from atproto import Client

    client = Client()
    client.login("acme-status.bsky.social", "§P§")
    client.send_post("Scheduled maintenance tonight 22:00–23:00 UTC")
    """,
    P=BSKY_APP,
)
shape(
    "mastodon-py-access-token-constructor",
    """
    from mastodon import Mastodon

    m = Mastodon(access_token="§T§", api_base_url="https://fosstodon.org")
    m.status_post("New release v§ver§ is out!")
    """,
    T=UL(43),
)
shape(
    "matrix-nio-client-access-token-attribute",
    """
    client = AsyncClient("https://matrix.corp.example", "@alertbot:corp.example")
    client.access_token = "§T§"
    client.device_id = "§up§"
    await client.room_send(room_id, "m.room.message", {"msgtype": "m.text", "body": "disk 92%"})
    """,
    T=MATRIX,
    up=UP(10),
)
shape(
    "reddit-praw-ini-script-app-password-and-secret",
    """
    [modbot]
    client_id=§lo§
    client_secret=§S§
    username=acme_modbot
    password=§P§
    user_agent=acme-modbot/1.0
    """,
    S=UL(30),
    P=PERSON,
    lo=UL(22),
)
shape(
    "steam-web-api-key-in-discord-bot-config-json",
    """
    {"prefix": "!", "steamApiKey": "§K§", "guildId": "§n3§§n3§§n3§§n3§"}
    """,
    K=STEAM,
)
shape(
    "riot-api-key-in-league-stats-script-header",
    """
    HEADERS = {"X-Riot-Token": "§K§"}
    r = requests.get(f"https://europe.api.riotgames.com/riot/account/v1/accounts/by-riot-id/{name}/{tag}", headers=HEADERS)
    """,
    K=RIOT,
)
shape(
    "spotify-client-credentials-env-in-raycast-extension",
    """
    SPOTIFY_CLIENT_ID=§hex12§§hex12§§hex8§
    SPOTIFY_CLIENT_SECRET=§S§
    SPOTIFY_REDIRECT_URI=http://127.0.0.1:8888/callback
    """,
    S=HX(32),
)
shape(
    "strava-refresh-token-in-garmin-sync-config-yaml",
    """
    strava:
      client_id: §n3§§n2§
      client_secret: §S§
      refresh_token: §R§
    """,
    S=HX(40),
    R=HX(40),
)
shape(
    "tmdb-v4-read-access-token-in-jellyfin-plugin-xml",
    """
    <PluginConfiguration>
      <TmdbApiKey>§K§</TmdbApiKey>
      <IncludeAdult>false</IncludeAdult>
    </PluginConfiguration>
    """,
    K=JWT(
        {"aud": "§hex12§", "nbf": 1767225600, "sub": "§hex12§", "scopes": ["api_read"], "version": 1}, "HS256"
    ),
)
shape(
    "discogs-user-token-in-beets-config-yaml",
    """
    plugins: discogs fetchart lyrics
    discogs:
      user_token: §T§
    fetchart:
      auto: yes
    """,
    T=AN(40),
)
shape(
    "lastfm-session-key-in-scrobbler-ini",
    """
    [lastfm]
    api_key = §hex12§§hex12§§hex8§
    api_secret = §S§
    session_key = §K§
    """,
    S=HX(32),
    K=AN(32),
)
shape(
    "todoist-api-token-in-alfred-workflow-plist",
    """
    <key>variables</key>
    <dict>
        <key>TODOIST_TOKEN</key>
        <string>§T§</string>
        <key>DEFAULT_PROJECT</key>
        <string>Inbox</string>
    </dict>
    """,
    T=HX(40),
)
shape(
    "ynab-personal-access-token-in-budget-export-script",
    """
    #!/usr/bin/env bash
    YNAB_TOKEN="§T§"
    curl -s -H "Authorization: Bearer $YNAB_TOKEN" https://api.ynab.com/v1/budgets/last-used/transactions?since_date=$(date -d '-30 days' +%F) > tx.json
    """,
    T=UL(43),
)
shape(
    "pushover-app-token-and-user-key-curl",
    """
    curl -s --form-string "token=§T§" --form-string "user=§U§" --form-string "message=Backup finished on nas" https://api.pushover.net/1/messages.json
    """,
    T=LO(30),
    U=LO(30),
)
shape(
    "healthchecks-io-ping-url-with-uuid-in-crontab",
    """
    0 2 * * * /usr/local/bin/backup.sh && curl -fsS -m 10 --retry 5 -o /dev/null https://hc-ping.com/§U§
    """,
    U=UUID,
)
shape(
    "ntfy-server-yml-auth-default-and-user-token",
    """
    # /etc/ntfy/server.yml
    base-url: https://ntfy.home.arpa
    auth-file: /var/lib/ntfy/user.db
    auth-default-access: deny-all
    # token for the backup script: §T§
    """,
    T=cat("tk_", LO(29)),
)
shape(
    "gotify-client-token-in-android-tasker-http-action",
    """
    Task: Notify Gotify
    A1: HTTP Request [ Method:POST URL:https://push.home.arpa/message?token=§T§ Headers:Content-Type:application/json Body:{"title":"Phone","message":"%BATT% battery"} ]
    """,
    T=cat("A", UL(14)),
)
shape(
    "apprise-url-telegram-bot-token-in-changedetection-notification",
    """
    Notification URL list:
    tgram://§T§/-100§n3§§n3§/
    mailto://alerts:§P§@smtp.fastmail.com?to=me@example.org
    """,
    T=TELEGRAM_BOT,
    P=LO(16),
)
shape(
    "immich-api-key-in-cli-upload-command",
    """
    immich login https://photos.home.arpa/api §K§
    immich upload --recursive /mnt/phone-backup/DCIM
    """,
    K=AN(43),
)
shape(
    "paperless-ngx-api-token-curl-documents",
    """
    curl -s -H "Authorization: Token §T§" "https://paperless.home.arpa/api/documents/?query=invoice+2026" | jq '.count'
    """,
    T=HX(40),
)
shape(
    "vaultwarden-admin-panel-token-in-compose-env",
    """
    services:
      vaultwarden:
        image: vaultwarden/server:latest
        environment:
          DOMAIN: https://vault.home.arpa
          SIGNUPS_ALLOWED: "false"
          ADMIN_TOKEN: §T§
    """,
    T=B64(48),
)
shape(
    "nextcloud-config-php-dbpassword-and-secret",
    """
    <?php
    $CONFIG = array (
      'instanceid' => 'oc§lo§',
      'passwordsalt' => '§S§',
      'secret' => '§T§',
      'dbtype' => 'pgsql',
      'dbuser' => 'oc_admin',
    );
    """,
    S=UL(30),
    T=UL(48),
    lo=LO(10),
)
shape(
    "gitea-runner-config-yaml-registration-file-token",
    """
    # .runner (written by act_runner register)
    {
      "WARNING": "This file is automatically generated by act-runner. Do not edit it manually unless you know what you are doing.",
      "id": §n§,
      "uuid": "§uuid§",
      "name": "runner-§n§",
      "token": "§T§",
      "address": "https://git.home.arpa"
    }
    """,
    T=HX(40),
)
shape(
    "adguard-home-yaml-users-plain-password-mistake",
    """
    users:
      - name: admin
        password: §P§   # TODO: replace with bcrypt from htpasswd
    http:
      address: 0.0.0.0:3000
    """,
    P=PERSON,
)
shape(
    "pihole-cli-setpassword-command-history",
    """
      214  pihole setpassword '§P§'
      215  pihole -g
      216  pihole status
    """,
    P=PERSON,
)
shape(
    "home-assistant-configuration-yaml-rest-sensor-inline-header",
    """
    sensor:
      - platform: rest
        name: Octopus tariff
        resource: https://api.octopus.energy/v1/products/AGILE-24-10-01/
        headers:
          Authorization: Basic §B§
        value_template: "{{ value_json.display_name }}"
    """,
    B=lambda r: basic(OCTOPUS(r), ""),
)
shape(
    "zwave-js-ui-settings-json-s2-keys",
    """
    {"zwave": {"port": "/dev/ttyUSB0", "securityKeys": {"S2_Unauthenticated": "§K§", "S0_Legacy": "§L§"}}}
    """,
    K=HXU(32),
    L=HXU(32),
)
shape(
    "traccar-xml-config-database-password-entry",
    """
    <entry key='database.driver'>org.postgresql.Driver</entry>
    <entry key='database.url'>jdbc:postgresql://localhost/traccar</entry>
    <entry key='database.user'>traccar</entry>
    <entry key='database.password'>§P§</entry>
    """,
    P=SAFE(18),
)
shape(
    "fr24feed-ini-adsb-sharing-key-beside-receiver-settings",
    """
    receiver="beast-tcp"
    fr24key="§K§"
    host="127.0.0.1:30005"
    bs="no"
    raw="no"
    mlat="yes"
    mlat-without-gps="yes"
    """,
    K=HX(16),
)
shape(
    "weewx-conf-stdrestful-wunderground-password",
    """
    [StdRESTful]
        [[Wunderground]]
            enable = true
            station = IBERLIN§n3§
            password = §P§
            rapidfire = False
    """,
    P=AN(8),
)
shape(
    "ham-echolink-proxy-conf-password",
    """
    # EchoLink proxy (ELProxy.conf)
    Password=§P§
    RegistrationName=Club proxy §n§
    RegistrationComment=Berlin
    """,
    P=PWGEN(10),
)
shape(
    "kodi-advancedsettings-mysql-videodatabase-pass",
    """
    <advancedsettings>
      <videodatabase>
        <type>mysql</type>
        <host>§lan§</host>
        <port>3306</port>
        <user>kodi</user>
        <pass>§P§</pass>
      </videodatabase>
    </advancedsettings>
    """,
    P=PWGEN(10),
)
shape(
    "retroarch-cfg-cheevos-password-and-netplay",
    """
    cheevos_enable = "true"
    cheevos_username = "§user§"
    cheevos_password = "§P§"
    netplay_password = "§Q§"
    """,
    P=PERSON,
    Q=PWGEN(10),
)
shape(
    "garmin-connect-python-login-email-password-literal",
    """
    from garminconnect import Garmin

    api = Garmin("§email§", "§P§")
    api.login()
    print(api.get_stats("2026-03-§n§")["totalSteps"])
    """,
    P=PERSON,
)
shape(
    "ifttt-maker-webhook-key-url-in-shortcut-export",
    """
    Get Contents of URL
      URL: https://maker.ifttt.com/trigger/door_opened/with/key/§K§
      Method: POST
    """,
    K=UL(43),
)

# =============================================================================================================
# clean documents: look-alikes without a credential
# =============================================================================================================

cshape(
    "clean-bash-read-s-hidden-prompt-then-pgpassfile",
    """
    $ read -rs -p "DB password: " PGPASSWORD; echo
    DB password:
    $ export PGPASSWORD
    $ PGPASSFILE=/dev/null psql -h §host§ -U reporting -d orders -c 'select 1'
     ?column?
    ----------
            1
    (1 row)
    """,
)
cshape(
    "clean-github-actions-log-all-secrets-masked-stars",
    """
    Run ./scripts/deploy.sh
      ./scripts/deploy.sh
      shell: /usr/bin/bash -e {0}
      env:
        RENDER_API_KEY: ***
        DATABASE_URL: ***
        GIT_SHA: §sha§
    Deploying §short§ to production...
    """,
)
cshape(
    "clean-workflow-yaml-secrets-context-references-only",
    """
    jobs:
      publish:
        runs-on: ubuntu-latest
        permissions: {id-token: write, contents: read}
        steps:
          - uses: actions/checkout@v4
          - run: npm publish --provenance
            env:
              NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}
          - run: curl -fsS -H "Authorization: Bearer ${{ secrets.SLACK_BOT_TOKEN }}" https://slack.com/api/auth.test
    """,
)
cshape(
    "clean-dotenv-example-your-key-here-placeholders",
    """
    # Copy to .env and fill in
    ANTHROPIC_API_KEY=your-anthropic-key-here
    OPENAI_API_KEY=sk-...
    DATABASE_URL=postgresql://USER:PASSWORD@localhost:5432/DBNAME
    SESSION_SECRET=   # generate with `openssl rand -hex 32`
    """,
)
cshape(
    "clean-compose-required-variable-interpolation",
    """
    services:
      db:
        image: postgres:17
        environment:
          POSTGRES_USER: app
          POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}
      api:
        env_file: [.env]
        environment:
          DATABASE_URL: postgresql://app:${POSTGRES_PASSWORD}@db:5432/app
    """,
)
cshape(
    "clean-k8s-statefulset-env-valuefrom-secretkeyref",
    """
    env:
      - name: POSTGRES_PASSWORD
        valueFrom:
          secretKeyRef: {name: pg-app, key: password}
      - name: REDIS_URL
        valueFrom:
          configMapKeyRef: {name: app-config, key: redis_url}
      - name: POD_IP
        valueFrom:
          fieldRef: {fieldPath: status.podIP}
    """,
)
cshape(
    "clean-terraform-random-password-reference-and-sensitive-output",
    """
    resource "random_password" "db" {
      length  = 32
      special = true
    }

    resource "aws_db_instance" "main" {
      identifier = "orders-§hex8§"
      username   = "orders"
      password   = random_password.db.result
    }

    output "db_password" {
      value     = random_password.db.result
      sensitive = true
    }
    """,
)
cshape(
    "clean-curl-bearer-from-shell-variable-and-jq",
    """
    $ TOKEN=$(gcloud auth print-identity-token)
    $ curl -s -H "Authorization: Bearer $TOKEN" https://reports-§hex8§-ew.a.run.app/healthz
    {"status":"ok","version":"§ver§","commit":"§short§"}
    """,
)
cshape(
    "clean-sdk-snippets-read-keys-from-environment-many-languages",
    """
    # Python
    client = OpenAI(api_key=os.environ["OPENAI_API_KEY"])
    // TypeScript
    const anthropic = new Anthropic({ apiKey: process.env.ANTHROPIC_API_KEY });
    // Go
    stripe.Key = os.Getenv("STRIPE_SECRET_KEY")
    // Rust
    let token = std::env::var("CLOUDFLARE_API_TOKEN")?;
    # Ruby
    Octokit::Client.new(access_token: ENV.fetch("GITHUB_TOKEN"))
    """,
)
cshape(
    "clean-java-spring-value-placeholder-annotations",
    """
    @Configuration
    public class PaymentsConfig {
        @Value("${payments.adyen.api-key}")
        private String apiKey;

        @Value("${payments.adyen.hmac-key:#{null}}")
        private String hmacKey;
    }
    """,
)
cshape(
    "clean-git-log-oneline-and-merge-shas",
    """
    $ git log --oneline -6
    §short§ (HEAD -> main, origin/main) fix(auth): rotate refresh tokens on reuse
    §short2§ Merge pull request #§n3§ from acme/token-budget
    §short§ feat: cap max_tokens per tenant
    $ git rev-parse HEAD
    §sha§
    """,
)
cshape(
    "clean-docker-images-digests-listing",
    """
    $ docker images --digests acme/api
    REPOSITORY   TAG       DIGEST                                                                    IMAGE ID       CREATED        SIZE
    acme/api     §short§   sha256:§sha256§   §hex12§   2 hours ago    182MB
    acme/api     latest    sha256:§sha256b§   §hex12§   2 days ago     181MB
    """,
)
cshape(
    "clean-go-sum-module-hashes",
    """
    github.com/jackc/pgx/v5 v5.7.2 h1:§hex12§§hex12§§hex12§/§hex8§=
    github.com/jackc/pgx/v5 v5.7.2/go.mod h1:§hex12§§hex12§§hex8§+§hex8§=
    golang.org/x/crypto v0.36.0 h1:§hex12§§hex12§§hex12§§hex8§=
    """,
)
cshape(
    "clean-cargo-lock-reqwest-and-ring-checksums",
    """
    [[package]]
    name = "reqwest"
    version = "0.12.15"
    source = "registry+https://github.com/rust-lang/crates.io-index"
    checksum = "§sha256§"

    [[package]]
    name = "ring"
    version = "0.17.14"
    checksum = "§sha256b§"
    """,
)
cshape(
    "clean-llm-usage-json-token-counts-and-cache",
    """
    {"id":"msg_01§hex12§§hex8§","model":"claude-sonnet-4-5","stop_reason":"end_turn","usage":{"input_tokens":§tok§,"cache_creation_input_tokens":§n3§,"cache_read_input_tokens":§n3§,"output_tokens":§tok§}}
    """,
)
cshape(
    "clean-tokenizer-encode-output-token-ids",
    """
    >>> tok = AutoTokenizer.from_pretrained("Qwen/Qwen3-8B")
    >>> tok("password reset token expired").input_ids
    [3833, 7585, 3950, §n3§, 26391]
    >>> tok.convert_ids_to_tokens([3833, 7585])
    ['password', 'Ġreset']
    """,
)
cshape(
    "clean-otel-span-json-trace-and-span-ids",
    """
    {"traceId":"§trace§","spanId":"§span§","parentSpanId":"","name":"POST /v1/login","kind":2,"startTimeUnixNano":"17672256§n3§000000","attributes":[{"key":"http.response.status_code","value":{"intValue":"401"}},{"key":"enduser.id","value":{"stringValue":"§uuid§"}},{"key":"auth.failure_reason","value":{"stringValue":"invalid_password"}}]}
    """,
)
cshape(
    "clean-ssh-keyscan-output-host-public-keys",
    """
    $ ssh-keyscan -t ed25519,rsa git.corp.example 2>/dev/null
    git.corp.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI§b64a§
    git.corp.example ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ§b64b§
    """,
    b64a=B64(24),
    b64b=B64(90),
)
cshape(
    "clean-gpg-list-keys-fingerprints-and-uids",
    """
    $ gpg --list-keys --keyid-format long releases@acme.example
    pub   ed25519/§hex8§§hex8§ 2025-11-02 [SC] [expires: 2027-11-02]
          §hex12§§hex12§§hex8§§hex8§
    uid                 [ultimate] Acme Releases <releases@acme.example>
    sub   cv25519/§hex8§§hex8§ 2025-11-02 [E] [expires: 2027-11-02]
    """,
)
cshape(
    "clean-openssl-x509-fingerprint-and-subject",
    """
    $ openssl x509 -in server.crt -noout -subject -issuer -fingerprint -sha256 -enddate
    subject=CN=api.acme.example
    issuer=C=US, O=Let's Encrypt, CN=R11
    sha256 Fingerprint=§fp§
    notAfter=Jun §n§ 12:00:00 2026 GMT
    """,
    fp=lambda r: ":".join(r.randbytes(32).hex().upper()[i : i + 2] for i in range(0, 64, 2)),
)
cshape(
    "clean-age-recipients-file-public-keys-only",
    """
    # .sops recipients (public keys — safe to commit)
    # ops laptop
    age1§a§
    # CI
    age1§b§
    """,
    a=lambda r: chars(r, _BECH, 58),
    b=lambda r: chars(r, _BECH, 58),
)
cshape(
    "clean-ansible-vault-encrypted-variable-block",
    """
    db_password: !vault |
              $ANSIBLE_VAULT;1.1;AES256
              §h1§
              §h2§
              §h3§
    db_user: app
    """,
    h1=lambda r: r.randbytes(40).hex(),
    h2=lambda r: r.randbytes(40).hex(),
    h3=lambda r: r.randbytes(20).hex(),
)
cshape(
    "clean-aws-kms-encrypt-output-ciphertext-blob",
    """
    $ aws kms encrypt --key-id alias/app --plaintext fileb://payload.json --query CiphertextBlob --output text
    AQICAHh§c§
    $ # store the blob in SSM; only the app role can decrypt it
    """,
    c=B64(180),
)
cshape(
    "clean-shadow-yescrypt-and-sql-dump-bcrypt-hashes",
    """
    # /etc/shadow (excerpt)
    deploy:$y$j9T$§s1§$§s2§:20100:0:99999:7:::
    -- users.sql
    INSERT INTO users (id, email, password_hash) VALUES (§n3§, 'qa@acme.example', '$2b$12$§s3§');
    """,
    s1=lambda r: chars(r, _AN + "./", 22),
    s2=lambda r: chars(r, _AN + "./", 43),
    s3=lambda r: chars(r, _AN + "./", 53),
)
cshape(
    "clean-authelia-users-file-argon2id-digests",
    """
    users:
      §user§:
        displayname: "§first§"
        password: "$argon2id$v=19$m=65536,t=3,p=4$§s1§$§s2§"
        email: §email§
        groups: [admins]
    """,
    s1=B64(16),
    s2=B64(32),
)
cshape(
    "clean-masked-key-echoes-in-cli-listings",
    """
    $ llm keys list
    anthropic    sk-ant-...§hex8§
    openai       sk-proj-...Xq2f
    $ gh auth status
    github.com
      ✓ Logged in to github.com account §user§ (keyring)
      - Token: gho_************************************
    """,
)
cshape(
    "clean-stripe-ids-objects-and-publishable-key",
    """
    {"id":"pi_3§up§","object":"payment_intent","customer":"cus_§cu§","latest_charge":"ch_3§up2§","status":"succeeded"}
    // checkout.js
    const stripe = Stripe('pk_live_51§pk§');
    """,
    up=AN(24),
    up2=AN(24),
    cu=AN(14),
    pk=AN(97),
)
cshape(
    "clean-aws-iam-list-access-keys-metadata-ci-deployer",
    """
    $ aws iam list-access-keys --user-name ci-deployer
    {
        "AccessKeyMetadata": [
            {"UserName": "ci-deployer", "AccessKeyId": "AKIA§k§", "Status": "Active", "CreateDate": "§ts§"}
        ]
    }
    """,
    k=lambda r: chars(r, _B32S, 16),
)
cshape(
    "clean-webhook-request-with-hmac-signature-header-only",
    """
    POST /webhooks/github HTTP/1.1
    Host: ci.acme.example
    X-GitHub-Event: push
    X-GitHub-Delivery: §uuid§
    X-Hub-Signature-256: sha256=§sha256§
    Content-Type: application/json

    {"ref":"refs/heads/main","after":"§sha§"}
    """,
)
cshape(
    "clean-nmcli-connection-show-psk-hidden",
    """
    $ nmcli -s connection show "Office-5G" | grep -E 'ssid|key-mgmt|psk'
    802-11-wireless.ssid:                   Office-5G
    802-11-wireless-security.key-mgmt:      sae
    802-11-wireless-security.psk:           <hidden>
    802-11-wireless-security.psk-flags:     1 (agent-owned)
    """,
)
cshape(
    "clean-op-run-env-file-with-secret-references",
    """
    # .env.tpl — resolved at runtime by `op run --env-file=.env.tpl -- npm start`
    DATABASE_URL="op://Production/orders-db/connection string"
    STRIPE_SECRET_KEY="op://Production/Stripe/secret key"
    SENTRY_DSN="op://Production/Sentry/dsn"
    """,
)
cshape(
    "clean-mcp-json-input-prompt-references",
    """
    {
      "inputs": [{"type": "promptString", "id": "gh-token", "description": "GitHub PAT", "password": true}],
      "servers": {
        "github": {
          "type": "http",
          "url": "https://api.githubcopilot.com/mcp/",
          "headers": {"Authorization": "Bearer ${input:gh-token}"}
        }
      }
    }
    """,
)
cshape(
    "clean-claude-code-settings-json-deny-reading-env-files",
    """
    {
      "permissions": {
        "deny": ["Read(./.env)", "Read(./.env.*)", "Read(./secrets/**)", "Bash(cat:*.pem)"],
        "allow": ["Bash(npm run test:*)", "Bash(git diff:*)"]
      },
      "env": {"BASH_DEFAULT_TIMEOUT_MS": "120000"}
    }
    """,
)
cshape(
    "clean-agent-trace-printenv-names-only",
    """
    {"type":"tool_use","name":"Bash","input":{"command":"printenv | cut -d= -f1 | sort | grep -E 'KEY|TOKEN|SECRET'"}}
    {"type":"tool_result","content":"ANTHROPIC_API_KEY\\nGITHUB_TOKEN\\nSENTRY_AUTH_TOKEN\\nSTRIPE_SECRET_KEY"}
    {"type":"text","text":"The four variables are set; I won't print their values."}
    """,
)
cshape(
    "clean-python-traceback-password-masked-in-url",
    """
    sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection to server at "§host§" (§ip§), port 5432 failed: FATAL:  password authentication failed for user "etl"
    [SQL: select 1]
    engine url: postgresql+psycopg://etl:***@§host§:5432/warehouse
    """,
)
cshape(
    "clean-auth-failed-log-lines-no-values",
    """
    §ts§ sshd[§pid§]: Failed password for invalid user admin from §pub§ port 5§n3§ ssh2
    §ts2§ postgres[§pid§]: FATAL:  password authentication failed for user "grafana"
    §ts§ dovecot: imap-login: Disconnected (auth failed, 1 attempts in 2 secs): user=<§email§>, method=PLAIN
    """,
)
cshape(
    "clean-accounts-table-roles-and-mfa-no-passwords",
    """
    | user | role | MFA | last login |
    | --- | --- | --- | --- |
    | §user§ | admin | WebAuthn | §day§ |
    | §email§ | viewer | TOTP | §day§ |
    | ci-bot | deployer | n/a (OIDC) | §day§ |
    """,
)
cshape(
    "clean-password-policy-readme-section",
    """
    ## Password rules

    - At least 14 characters; passphrases welcome.
    - Checked against known-breached lists at sign-up and on change.
    - No forced periodic rotation; rotate on suspicion of compromise.
    - API tokens are shown once on creation and stored only as SHA-256 digests.
    """,
)
cshape(
    "clean-chat-password-shared-via-one-time-link",
    """
    §first§: can you send me the staging DB password?
    §first2§: sent you a 1Password share link, expires in 1h — won't paste it here
    §first§: got it, thanks 🙏
    """,
)
cshape(
    "clean-ticket-reset-link-sent-no-value",
    """
    Ticket #§ticket§ — Password reset
    Status: Solved
    Agent note: Verified identity via callback to number on file. Sent self-service reset link to §email§ (valid 30 min). No credentials shared in this ticket.
    """,
)
cshape(
    "clean-spanish-french-german-password-change-notices",
    """
    ES: Su contraseña se cambió correctamente el §day§. Si no fue usted, contacte con soporte.
    FR : Votre mot de passe a été modifié le §day§. Si ce n'est pas vous, contactez le support.
    DE: Ihr Passwort wurde am §day§ geändert. Falls Sie das nicht waren, kontaktieren Sie den Support.
    """,
)
cshape(
    "clean-japanese-doc-api-key-rotation-procedure",
    """
    ## APIキーのローテーション手順
    1. 管理画面で新しいキーを発行する（値は一度しか表示されません）。
    2. Secret Manager の `projects/acme/secrets/api-key` に新しいバージョンとして登録する。
    3. 旧キーを24時間後に無効化する。
    ※ キーの値をチャットやチケットに貼り付けないでください。
    """,
)
cshape(
    "clean-arabic-hebrew-security-notice-no-value",
    """
    تنبيه: لن يطلب منك فريق الدعم كلمة المرور أو رمز التحقق عبر الهاتف أو البريد.
    שימו לב: צוות התמיכה לעולם לא יבקש את הסיסמה או קוד האימות שלכם.
    """,
)
cshape(
    "clean-release-sha512sums-and-cosign-signature-ref",
    """
    §h1§  acme-cli_§ver§_linux_amd64.tar.gz
    §h2§  acme-cli_§ver§_darwin_arm64.tar.gz
    # verify: cosign verify-blob --certificate acme-cli.pem --signature acme-cli.sig checksums.txt
    """,
    h1=lambda r: r.randbytes(64).hex(),
    h2=lambda r: r.randbytes(64).hex(),
)
cshape(
    "clean-ethereum-address-and-tx-hash-receipt",
    """
    Transaction submitted
      from:   0x§a§
      to:     0x§b§
      hash:   0x§h§
      status: 1 (success), gasUsed 21000, block §n3§§n3§
    """,
    a=lambda r: r.randbytes(20).hex(),
    b=lambda r: r.randbytes(20).hex(),
    h=lambda r: r.randbytes(32).hex(),
)
cshape(
    "clean-bitcoin-xpub-and-address-watch-only",
    """
    Watch-only wallet (no private keys):
    xpub6C§x§
    first receive address: bc1q§addr§
    """,
    x=lambda r: chars(r, _AN, 105),
    addr=lambda r: chars(r, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 38),
)
cshape(
    "clean-twilio-slack-discord-ids-in-config",
    """
    twilio:
      account_sid_env: TWILIO_ACCOUNT_SID
      messaging_service: MG§h1§
    slack:
      channel: C§up§
      team: T§up2§
    discord:
      guild_id: "§n3§§n3§§n3§§n3§§n3§"
    """,
    h1=HX(32),
    up=UP(10),
    up2=UP(10),
)
cshape(
    "clean-terraform-plan-output-sensitive-markers",
    """
      # aws_secretsmanager_secret_version.api will be updated in-place
      ~ resource "aws_secretsmanager_secret_version" "api" {
            id            = "arn:aws:secretsmanager:eu-west-1:§acct§:secret:api-§hex8§|§uuid§"
          ~ secret_string = (sensitive value)
            # (3 unchanged attributes hidden)
        }
    Plan: 0 to add, 1 to change, 0 to destroy.
    """,
)
cshape(
    "clean-helm-values-existing-secret-names",
    """
    postgresql:
      auth:
        existingSecret: pg-credentials
        secretKeys:
          adminPasswordKey: postgres-password
          userPasswordKey: password
    redis:
      auth:
        enabled: true
        existingSecret: redis-auth
        existingSecretPasswordKey: redis-password
    """,
)
cshape(
    "clean-vault-kv-metadata-get-versions-table",
    """
    $ vault kv metadata get secret/payments/stripe
    ======== Metadata Path ========
    secret/metadata/payments/stripe
    ========== Metadata ==========
    Key                     Value
    ---                     -----
    cas_required            false
    created_time            §ts§
    current_version         §n§
    max_versions            10
    """,
)
cshape(
    "clean-bitwarden-cli-list-items-names-and-ids",
    """
    $ bw list items --search stripe | jq -r '.[] | [.id, .name, .login.username] | @tsv'
    §uuid§\tStripe dashboard\tfinance@acme.example
    §uuid2§\tStripe (restricted key)\tnull
    """,
)
cshape(
    "clean-macos-security-find-generic-password-attributes-only",
    """
    $ security find-generic-password -s "acme-cli"
    keychain: "/Users/§first§/Library/Keychains/login.keychain-db"
    version: 512
    class: "genp"
    attributes:
        "acct"<blob>="§user§"
        "svce"<blob>="acme-cli"
        "mdat"<timedate>=0x32303236303331§hex8§  "2026031§n§"
    """,
)
cshape(
    "clean-nginx-conf-tls-settings-no-secrets",
    """
    server {
        listen 443 ssl;
        server_name api.acme.example;
        ssl_certificate     /etc/letsencrypt/live/api.acme.example/fullchain.pem;
        ssl_certificate_key /etc/letsencrypt/live/api.acme.example/privkey.pem;
        ssl_session_tickets off;
        add_header Strict-Transport-Security "max-age=63072000" always;
        location / { proxy_pass http://127.0.0.1:8080; }
    }
    """,
)
cshape(
    "clean-postgresql-conf-and-pg-hba-scram-method",
    """
    # postgresql.conf
    password_encryption = scram-sha-256
    ssl = on
    max_connections = 200
    # pg_hba.conf
    hostssl all all 10.0.0.0/8 scram-sha-256
    """,
)
cshape(
    "clean-redis-conf-acl-file-reference",
    """
    # redis.conf
    bind 0.0.0.0
    protected-mode yes
    aclfile /etc/redis/users.acl
    maxmemory 2gb
    maxmemory-policy allkeys-lru
    """,
)
cshape(
    "clean-prometheus-yml-basic-auth-password-file",
    """
    scrape_configs:
      - job_name: node
        basic_auth:
          username: prometheus
          password_file: /etc/prometheus/node_pw
        static_configs:
          - targets: ['§ip§:9100', '§ip2§:9100']
    """,
)
cshape(
    "clean-oauth-authorize-url-with-pkce-challenge",
    """
    https://auth.acme.example/oauth2/authorize?response_type=code&client_id=§cid§&redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2Fcallback&scope=openid%20profile%20offline_access&state=§st§&code_challenge=§cc§&code_challenge_method=S256
    """,
    cid=LO(20),
    st=UL(22),
    cc=B64U(32),
)
cshape(
    "clean-jwt-decoded-claims-without-token",
    """
    Decoded claims of the failing request's token (signature not shown):
    {
      "iss": "https://auth.acme.example/",
      "sub": "§uuid§",
      "aud": "api.acme.example",
      "exp": 1767§n3§,
      "scope": "orders:read"
    }
    -> rejected: token expired §n2§ seconds before the request
    """,
)
cshape(
    "clean-password-generator-settings-json",
    """
    {"generator": {"type": "passphrase", "numWords": 5, "wordSeparator": "-", "capitalize": true, "includeNumber": true},
     "password": {"length": 24, "uppercase": true, "lowercase": true, "numbers": true, "special": true, "minSpecial": 2}}
    """,
)
cshape(
    "clean-infisical-doppler-references-in-compose",
    """
    services:
      api:
        command: infisical run --env=prod --path=/api -- node server.js
      worker:
        command: doppler run --project billing --config prd -- python worker.py
    """,
)
cshape(
    "clean-kubeseal-sealedsecret-encrypted-data",
    """
    apiVersion: bitnami.com/v1alpha1
    kind: SealedSecret
    metadata: {name: smtp, namespace: comms}
    spec:
      encryptedData:
        password: AgB§c1§
        username: AgC§c2§
    """,
    c1=B64(200),
    c2=B64(120),
)
cshape(
    "clean-webauthn-passkey-credential-public-key-json",
    """
    {"id":"§id§","rawId":"§id§","type":"public-key","response":{"clientDataJSON":"§cd§","attestationObject":"o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YV§ao§"},"authenticatorAttachment":"platform"}
    """,
    id=B64U(32),
    cd=B64U(120),
    ao=B64U(150),
)
cshape(
    "clean-uuid-request-ids-error-response",
    """
    HTTP/1.1 401 Unauthorized
    x-request-id: §uuid§
    cf-ray: §hex8§§hex8§-FRA
    content-type: application/json

    {"error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_§hex12§§hex12§"}
    """,
)
cshape(
    "clean-cookie-consent-and-csrf-cookie-names",
    """
    Set-Cookie: cookie_consent=analytics%3Dfalse%2Cmarketing%3Dfalse; Path=/; Max-Age=31536000; SameSite=Lax
    Set-Cookie: lang=de-CH; Path=/; SameSite=Lax
    Set-Cookie: theme=dark; Path=/
    """,
)
cshape(
    "clean-wifi-guest-network-open-captive-portal-config",
    """
    wifi:
      - ssid: Acme-Guest
        security: open
        captive_portal: https://portal.acme.example/accept
        vlan: 40
      - ssid: Acme-Corp
        security: wpa3-enterprise
        radius: radius.corp.example
    """,
)
cshape(
    "clean-git-config-list-no-credentials",
    """
    $ git config --list --show-origin | grep -v alias
    file:/home/§user§/.gitconfig\tuser.name=§first§
    file:/home/§user§/.gitconfig\tuser.email=§email§
    file:/home/§user§/.gitconfig\tcredential.helper=libsecret
    file:.git/config\tremote.origin.url=git@github.com:acme/api.git
    """,
)
cshape(
    "clean-ci-build-log-cache-keys-and-hashes",
    """
    Restoring cache with key: deps-v3-linux-§sha256§
    Cache restored from key: deps-v3-linux-§sha256b§
    Received §n3§ of §n3§ (100.0%), 48.2 MBs/sec
    Cache Size: ~312 MB (327155712 B)
    """,
)
cshape(
    "clean-hex-colour-and-css-hash-classnames",
    """
    .btn-primary_§hex8§ { background: #§hex8§; }
    .card_§hex12§ { box-shadow: 0 1px 2px #0000001a; }
    /*# sourceMappingURL=app.§hex8§.css.map */
    """,
)
cshape(
    "clean-korean-chinese-chat-password-in-manager",
    """
    §first§: 서버 비밀번호 어디 있어요?
    §first2§: 1Password "Infra" 볼트에 있어요. 채팅에는 안 올릴게요.
    §first§：生产库的密码在哪？
    §first2§：在 Vault 里，路径 secret/db/prod，有权限就能看。
    """,
)
cshape(
    "clean-agent-summary-prose-about-rotated-keys",
    """
    Summary of the incident follow-up:
    - The leaked GitHub token (prefix `ghp_`, last four `Q7xZ`) was revoked at §hms§ UTC.
    - All CI secrets were re-issued and now come from OIDC; no long-lived keys remain in the repo.
    - The secret scanner found 0 new matches on the re-run (commit §short§).
    """,
)
cshape(
    "clean-systemd-unit-loadcredentialencrypted-and-env-names",
    """
    [Service]
    ExecStart=/usr/local/bin/api --config /etc/api/config.toml
    LoadCredentialEncrypted=db-password:/etc/credstore.encrypted/db-password
    Environment=DB_PASSWORD_FILE=%d/db-password
    Environment=LOG_LEVEL=info
    """,
)

# >>> END OF SHAPES


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
