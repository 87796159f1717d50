"""The HOLDOUT18 part of the secret corpus: an eighteenth blind part, written after HOLDOUT to HOLDOUT17.

Written blind: its author read only the `Document` type and the corpus docstring, the structure test of the blind
parts, the HOLDOUT17 generator (as the model of the interface, whose value helpers it borrows) and the shape names
of every earlier part (only to avoid reusing them); never the detector, its rules, docs, tests, state or figures,
and no document was run through a detector, a redactor or a secret scanner. It is weighted like the world an
agent works in, in 2026: about two thirds everyday text in forms the earlier shape names have not used, one third
long tail:

- an agent's own transcript: it reads a file holding a key and quotes it back, summarises a config, writes a
  plan that includes a password, explains an error that contains a token, answers a user by pasting a credential,
  hands a value to a sub-agent, records it in a scratchpad or a memory note;
- developer and ops work: shell sessions (bash, zsh, fish, PowerShell, xonsh, tmux and screen logs, script(1)
  typescripts), CI logs, configs of many real tools in .env, INI, TOML, YAML, JSON, HCL, XML, properties, Lua,
  Nix and Starlark, container and cluster manifests, HTTP clients and traces, SDK code in many languages,
  connection strings, tool-call JSON, stack traces quoting a config, Markdown/HTML/tables, runbooks;
- people pasting or telling a password in chat, e-mail and tickets in English and many other languages and
  scripts;
- the long tail: niche tools, devices, firmware consoles, old protocols, scientific and finance software, odd
  layouts (wrapped lines, escaped JSON inside logs, CSV exports, diff hunks, quoted-printable mail, YAML anchors).

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more,
drawn from the seeded `random.Random` and shaped as the vendor's published format where there is one. Every
credential a document holds is planted; usernames, ids, public keys, hashes and masked echoes are not. A
base64-wrapped or URL-encoded secret is planted as the text that appears.

Clean documents hold no credential but look-alikes: hashes, ids, UUIDs, commit SHAs, placeholders, env
references, token counts, public keys, ciphertexts, prose about passwords, masked echoes and configs of
non-secret settings.

SEED = 2026120618. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones: 468 credential shapes planting 497 values, and 78 clean documents.
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

SEED = 2026120618

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
    acorn basalt cobalt dune eider fjord garnet harbor indigo juniper kestrel lagoon marlin nimbus orchid
    pebble quartz raven saffron tamarind umber velvet walnut yarrow zephyr almond beacon cactus delta ember
    falcon glacier hickory iris jetty kumquat lantern meadow nectar oak papaya quill ripple spruce thistle
    tulip urchin violet willow yucca zodiac bison cedar dahlia egret fig gecko heron ivy jade koala lotus
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

# formats the earlier helpers lack
B32L = lambda n: lambda r: chars(r, "abcdefghijklmnopqrstuvwxyz234567", n)  # noqa: E731
GOCSPX = cat("GOCSPX-", UL(28))
YA29 = cat("ya29.a0A", UL(150))
GOOGLE_REFRESH = cat("1//0", UL(99))
GHR = cat("ghr_", AN(76))
GLRT = cat("glrt-t1_", UL(27))
GLFT = cat("glft-", UL(20))
GLOAS = cat("gloas-", HX(64))
ADO_PAT = B32L(52)
CF_GLOBAL = HX(37)
CF_ORIGIN = cat("v1.0-", HX(24), "-", HX(146))
DO_OAUTH = cat("doo_v1_", HX(64))
SENTRY_ORG = cat("sntrys_eyJpYXQiOjE3", B64U(120), "_", B64U(32))
PD_API = cat("u+", UL(18))
HONEYCOMB = cat("hcaik_01", lambda r: chars(r, "0123456789abcdefghjkmnpqrstvwxyz", 58))
AXIOM = lambda r: "xaat-" + uid(r)  # noqa: E731
DYNATRACE = cat("dt0c01.", UP(24), ".", UP(64))
TWILIO_SK_SECRET = AN(32)
POSTMARK = UUID
ALGOLIA_ADMIN = HX(32)
MEILI = UL(40)
PADDLE = cat("pdl_live_apikey_01", LO(24), "_", AN(22), "_", AN(3))
BINANCE = AN(64)
ALPACA_ID = cat("AK", UP(18))
ALPACA_SECRET = AN(40)
BEDROCK = cat("ABSKQmVkcm9ja0FQSUtleS", B64(96))
VOYAGE = cat("pa-", UL(43))
JINA = cat("jina_", HX(32), AN(28))
DEEPGRAM = HX(40)
ASSEMBLY = HX(32)
WANDB = HX(40)
HELICONE = lambda r: "sk-helicone-" + "-".join(lo(r, 7) for _ in range(4))  # noqa: E731
FIREBASE_SERVER = cat("AAAA", UL(7), ":APA91b", UL(134))
EXPO = UL(40)
SANITY = cat("sk", AN(180))
STYTCH = cat("secret-live-", UL(36), "=")
WORKOS = cat("sk_", AN(61))
KEYCLOAK = AN(32)
ZEROTIER = LO(32)
CF_TUNNEL = cat("eyJhIjoi", B64(150))
MINIO_SECRET = AN(40)
B2_KEY = cat("K005", UL(27))
CLOUDINARY_SECRET = UL(27)
SPOTIFY = HX(32)
REDDIT = UL(30)
ARTIFACTORY = cat("AKCp8", AN(68))
DOCKER_OAT = cat("dckr_oat_", UL(32))
QUAY_ROBOT = UP(64)
RANCHER = lambda r: f"token-{lo(r, 5)}:{lo(r, 54)}"  # noqa: E731
PORTAINER = cat("ptr_", B64(32))
ELASTIC_APIKEY = B64(48)
SPLUNK_HEC = UUID
BETTERSTACK = AN(24)
ROLLBAR = HX(32)
BUGSNAG = HX(32)
UNLEASH = lambda r: "*:production." + hx(r, 64)  # noqa: E731
SEGMENT = AN(32)
MIXPANEL = HX(32)
INTERCOM = lambda r: base64.b64encode(f"tok:{uid(r)}:1:0".encode()).decode()  # noqa: E731
ZENDESK = AN(40)
SF_REFRESH = cat("5Aep861", UL(80))
SF_SECRET = HXU(64)
PIPEDRIVE = HX(40)
ZOHO = lambda r: f"1000.{hx(r, 32)}.{hx(r, 32)}"  # noqa: E731
CLICKUP = lambda r: f"pk_{dg(r, 8)}_{up(r, 32)}"  # noqa: E731
TRELLO_TOKEN = cat("ATTA", HX(64), HXU(8))
TODOIST = HX(40)
META_TOKEN = cat("EAAG", AN(180))
PUSHOVER = LO(30)
PUSHBULLET = cat("o.", AN(32))
NTFY = cat("tk_", LO(29))
GOTIFY = cat("A", UL(14))
FASTLY = UL(32)
AKAMAI_SECRET = B64(32)
AKAMAI_TOKEN = lambda r: f"akab-{lo(r, 16)}-{lo(r, 16)}"  # noqa: E731
BUNNY = lambda r: uid(r) + "-" + uid(r)[:13]  # noqa: E731
OVH_SECRET = AN(32)
IBM_KEY = UL(44)
YANDEX_KEY = cat("AQVN", UL(36))
YANDEX_IAM = cat("t1.9euelZ", UL(160))
CLICKHOUSE = cat("4b1d", AN(38))
TINYBIRD = cat("p.eyJ1IjogI", B64U(150))
DBT_CLOUD = cat("dbtc_", UL(56))
METABASE = cat("mb_", B64(32))
RETOOL = cat("retool_", AN(32))
PUSHER_SECRET = HX(20)
ABLY = lambda r: f"{an(r, 6)}.{an(r, 6)}:{ul(r, 43)}"  # noqa: E731
PUBNUB = cat("sec-c-", B64(36))
LIVEKIT = AN(43)
MUX_SECRET = cat(AN(60), "/", AN(14))
PLIVO = AN(40)
TELNYX = cat("KEY", HXU(32), "_", AN(22))
OPENAI_LEGACY = cat("sk-", AN(20), "T3BlbkFJ", AN(20))
GEMINI = cat("AIzaSy", UL(33))
AZURE_OPENAI = HX(32)
AZ_FUNC = cat(UL(54), "==")
AZ_SAS_SIG = lambda r: pct(b64(r, 32))  # noqa: E731
MONGO_ATLAS_PRIV = UUID

# ---- noise ---------------------------------------------------------------------------------------------------

_FIRST = (
    "adaeze bjorn chiara dmitri emeka farah goran hana idris jelena kofi leilani mateo noor olusegun priya "
    "quentin rashida sven tomasz ulla vikram wanjiru ximena yusuf zainab"
).split()
_HOSTS = (
    "db-primary.internal pg-ledger.prod.lan mysql-3.svc.cluster.local rabbit-1.corp.example api-gw.int.example "
    "analytics-db.us.example redis-sess.internal kafka-2.stream.lan build-14.ci.example fileserver.home.arpa"
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

# ---- an agent's own transcript: reading, quoting, summarising, planning -------------------------------------

shape(
    "agent-reads-dotenv-and-quotes-openai-key-back-to-user",
    """
    I opened `.env.local` to see why the summariser fails. It contains:

    ```
    NEXT_PUBLIC_APP_URL=http://localhost:3000
    OPENAI_API_KEY=§K§
    OPENAI_MODEL=gpt-4.1-mini
    ```

    The key is set, so the 401 is not a missing variable. The model name is valid too; next I'll check whether
    the project on that key has the Responses API enabled.
    """,
    K=OPENAI,
)
shape(
    "agent-summarises-docker-compose-and-lists-db-password-in-bullets",
    """
    Here is what `docker-compose.yml` sets up:

    - **db**: `postgres:17`, volume `pgdata`, user `wiki`, password `§P§`, exposed on 5432 only to the
      compose network.
    - **app**: `requarks/wiki:2`, talks to `db:5432`, listens on 3000.
    - **proxy**: `caddy:2`, terminates TLS for wiki.§host§.

    Nothing else is configured; backups are not set up yet.
    """,
    P=SAFE(22),
)
shape(
    "agent-plan-step-list-includes-temporary-admin-password",
    """
    ## Plan

    1. Create the staging tenant with `./manage.py create_tenant staging-eu`.
    2. Create the first admin: `./manage.py createsuperuser --username ops-admin --email ops@example.com`
       and enter the password `§P§` when prompted (we rotate it after the demo on Friday).
    3. Load fixtures from `fixtures/demo.json`.
    4. Hand the URL and the admin login to §first§.
    """,
    P=TEMP,
)
shape(
    "agent-explains-401-error-quoting-bearer-from-request-log",
    """
    The request fails because the token is expired, not malformed. From the log you pasted:

        > GET /v2/orders?limit=50 HTTP/1.1
        > Authorization: Bearer §T§
        < HTTP/1.1 401 Unauthorized
        < WWW-Authenticate: Bearer error="invalid_token", error_description="The access token expired"

    Decode the middle part of the JWT and you'll see `exp` is in the past. Ask the auth service for a new one
    with the refresh flow rather than reusing this one.
    """,
    T=JWT({"sub": "svc-orders", "aud": "orders-api", "exp": 1767000000, "iat": 1766996400}, "RS256"),
)
shape(
    "agent-answers-user-where-is-stripe-key-pastes-it",
    """
    **User:** what's the stripe key the billing worker uses? I need it for a quick local test

    **Assistant:** The billing worker reads it from `config/billing.yml` under `stripe.secret_key`:

    `§K§`

    It's a live-mode restricted key, so be careful: calls made with it will hit real customers. For local
    testing I'd suggest creating a test-mode key instead.
    """,
    K=STRIPE_RK,
)
shape(
    "agent-scratchpad-notes-file-with-found-credentials",
    """
    # scratchpad.md (agent working notes, task #§ticket§)

    - repo builds with `make all` — ok
    - failing test: tests/test_sync.py::test_upload — needs S3
    - found creds in `~/.aws/credentials` profile `sync-dev`:
        key id     §I§
        secret     §S§
    - TODO: run the test with AWS_PROFILE=sync-dev
    """,
    I=AKIA,
    S=AWS_SECRET,
)
shape(
    "agent-memory-note-json-remembers-db-url-for-next-session",
    """
    {"type": "memory", "scope": "project", "created": "§ts§",
     "content": "Analytics warehouse is reachable from the dev container at postgresql://analyst:§P§@§host§:5432/warehouse — use it for the weekly cohort queries, read-only role."}
    """,
    P=SAFE(18),
)
shape(
    "agent-delegates-to-subagent-with-token-in-instructions",
    """
    → Task(subagent_type="release-notes", description="Draft release notes")
      prompt: |
        Collect merged PRs since tag v§ver§ from github.com/acme/platform and draft release notes.
        Use this token for the GitHub API (the default one lacks repo scope): §T§
        Group by label (feature, fix, chore). Return Markdown only.
    """,
    T=GH_FINE,
)
shape(
    "agent-quotes-kubeconfig-user-token-while-debugging-forbidden",
    """
    The kubeconfig you're using authenticates as a service account with a static token:

    ```yaml
    users:
    - name: ci-deployer
      user:
        token: §T§
    ```

    `kubectl auth can-i create deployments -n payments --as system:serviceaccount:ci:ci-deployer` returns
    `no`, which explains the Forbidden error: the RoleBinding is in namespace `ci`, not `payments`.
    """,
    T=JWT(
        {
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "ci",
            "sub": "system:serviceaccount:ci:ci-deployer",
        },
        "RS256",
    ),
)
shape(
    "agent-diff-review-comment-flags-hardcoded-key-quoting-it",
    """
    Review of PR #§n2§ — `src/integrations/mailer.ts`

    > line 14: `const client = new Resend("§K§");`

    This hardcodes a production Resend key. Please move it to `process.env.RESEND_API_KEY` and rotate it,
    since it's now in the branch history. Everything else in this file looks fine.
    """,
    K=RESEND,
)
shape(
    "agent-tool-result-cat-file-then-assistant-restates-webhook",
    """
    <tool_result tool="read_file" path="infra/alerts/alertmanager.yml">
    receivers:
      - name: oncall-slack
        slack_configs:
          - api_url: §H§
            channel: '#alerts-prod'
    </tool_result>

    Alertmanager posts to Slack through the incoming webhook `§H§` into #alerts-prod.
    There's no PagerDuty receiver configured, which is why nobody got paged last night.
    """,
    H=SLACK_HOOK,
)
shape(
    "agent-step-log-exporting-env-before-running-migration",
    """
    [step 4/7] Running database migrations
    $ export DATABASE_URL='mysql://shop:§P§@§host§:3306/shop'
    $ npx prisma migrate deploy
    Prisma schema loaded from prisma/schema.prisma
    Datasource "db": MySQL database "shop" at "§host§:3306"
    12 migrations found in prisma/migrations
    No pending migrations to apply.
    """,
    P=SAFE(24),
)
shape(
    "agent-chat-reply-translating-error-with-anthropic-key-in-traceback",
    """
    That traceback is from the Anthropic SDK rejecting the key:

    ```
    anthropic.AuthenticationError: Error code: 401 - {'type': 'error', 'error': {'type': 'authentication_error', 'message': 'invalid x-api-key'}}
      (client created with api_key='§K§')
    ```

    The key printed there looks complete, so it was probably revoked in the console. Generate a new one under
    the same workspace and update `ANTHROPIC_API_KEY` in your shell profile.
    """,
    K=ANTHROPIC,
)
shape(
    "agent-writes-handoff-note-markdown-with-vpn-psk",
    """
    ### Handoff — site-to-site VPN (Lisbon office)

    | field            | value                     |
    |------------------|---------------------------|
    | peer             | §pub§                     |
    | IKE              | IKEv2, AES-256, SHA-256   |
    | pre-shared key   | `§P§`                     |
    | local subnet     | 10.40.0.0/16              |

    Tunnel comes up; phase 2 renegotiates every 8h. Nothing left to do except monitoring.
    """,
    P=B64(24),
)
shape(
    "agent-codex-exec-log-reads-netrc-and-echoes-line",
    """
    exec bash -lc 'cat ~/.netrc' in /workspace/app
    machine api.heroku.com
      login §email§
      password §T§
    exec bash -lc 'heroku apps --json | jq length' in /workspace/app
    7
    codex: The Heroku CLI is authenticated via ~/.netrc (token above); 7 apps are visible.
    """,
    T=HEROKU,
)
shape(
    "agent-summary-table-of-service-accounts-with-one-password-column",
    """
    I inventoried the service accounts in `inventory/group_vars/all/vault.yml` (already decrypted in your
    checkout):

    | account      | system        | password               |
    |--------------|---------------|------------------------|
    | svc-backup   | Veeam         | §P§ |
    | svc-monitor  | Zabbix        | (LDAP, no local pw)    |

    Only svc-backup still has a local password; the others authenticate through LDAP.
    """,
    P=SYM(20),
)
shape(
    "agent-inline-json-tool-call-arguments-escaped-in-log-line",
    """
    §ts§ INFO agent.runner tool_call name=http_request args="{\\"method\\":\\"POST\\",\\"url\\":\\"https://api.mailgun.net/v3/mg.example.com/messages\\",\\"auth\\":[\\"api\\",\\"§K§\\"],\\"data\\":{\\"to\\":\\"§email§\\"}}"
    §ts§ INFO agent.runner tool_result status=200 elapsed_ms=§ms§
    """,
    K=MAILGUN,
)
shape(
    "agent-thinking-aloud-prose-mentions-password-found-in-readme",
    """
    Thinking: the README says the seeded admin account is `admin@local` with password §P§ and that
    it's only created when SEED_DEMO=1. The container was started without that flag, so the login page
    rejects it. I'll restart with SEED_DEMO=1 and then try logging in with those credentials.
    """,
    P=PERSON,
)
shape(
    "agent-answers-how-to-connect-redis-pasting-full-uri",
    """
    You can connect from your laptop through the bastion:

    ```sh
    ssh -L 6380:§host§:6379 bastion
    redis-cli -u 'redis://default:§P§@localhost:6380/0' ping
    ```

    That's the same URI the worker uses (from `REDIS_URL` in the `worker` secret).
    """,
    P=AN(32),
)
shape(
    "agent-opens-github-issue-body-accidentally-including-token",
    """
    gh issue create --repo acme/deploy-tools --title "deploy.sh fails on arm64 runners" --body "$(cat <<'BODY'
    ### What happened
    `./deploy.sh staging` exits 1 on the arm64 runner:

        + curl -fsS -H 'PRIVATE-TOKEN: §T§' https://gitlab.example.com/api/v4/projects/§n2§/packages
        curl: (22) The requested URL returned error: 403

    ### Expected
    Package list is fetched as on amd64.
    BODY
    )"
    """,
    T=GLPAT,
)
shape(
    "agent-sql-plan-with-create-user-identified-by",
    """
    Proposed migration for the reporting replica (not yet applied):

    ```sql
    CREATE USER 'metabase_ro'@'10.%' IDENTIFIED BY '§P§';
    GRANT SELECT ON shop.* TO 'metabase_ro'@'10.%';
    FLUSH PRIVILEGES;
    ```

    After applying, put the same credentials into Metabase → Admin → Databases → "Shop (replica)".
    """,
    P=SAFE(20),
)
shape(
    "agent-notebook-cell-output-prints-hf-token-from-login",
    """
    In [3]: from huggingface_hub import whoami, login
            login(token="§T§")
            whoami()["name"]
    Out[3]: '§user§'

    The notebook is authenticated as §user§; the gated Llama weights should download now.
    """,
    T=HF,
)
shape(
    "agent-continues-conversation-user-pasted-mysql-root-password",
    """
    user: ok the root password for the old box is §P§ — can you dump the `crm` db and import it into the new one?

    assistant: Got it. I'll run:

        mysqldump -h old-crm.lan -u root -p --single-transaction crm > crm.sql

    and type the password at the prompt so it doesn't land in the shell history, then import with
    `mysql -h §host§ -u crm_admin -p crm < crm.sql`.
    """,
    P=PERSON,
)
shape(
    "agent-claude-code-bash-tool-output-env-grep",
    """
    ⏺ Bash(env | grep -i -E 'token|key' | sort)
      ⎿  DEEPGRAM_API_KEY=§K§
         GPG_KEY_ID=0x§hex8§
         TOKENIZERS_PARALLELISM=false

    ⏺ The Deepgram key is set in this shell, so the transcription script should authenticate.
    """,
    K=DEEPGRAM,
)
shape(
    "agent-email-draft-to-contractor-with-sftp-credentials",
    """
    Draft (not sent):

    Subject: SFTP access for the product feed

    Hi §first§,

    You can upload the nightly feed to sftp://feeds.example.com:2222/incoming with
    user `partner-§n2§` and password `§P§`. Files older than 14 days are purged.

    Best,
    the integrations team
    """,
    P=SYM(16, "!#%+-=?@_"),
)
shape(
    "agent-yaml-frontmatter-in-generated-report-with-api-key",
    """
    ---
    title: Weekly SEO crawl
    generated_by: crawler-agent
    run: §uuid§
    serpapi_key: §K§
    ---

    # Crawl results

    312 pages crawled, 14 with missing meta descriptions, 3 redirect chains longer than 2 hops.
    """,
    K=HX(64),
)
shape(
    "agent-sub-agent-result-json-includes-discovered-secret-field",
    """
    {
      "agent": "repo-auditor",
      "status": "done",
      "findings": [
        {"file": "scripts/push_metrics.py", "line": 9, "kind": "hardcoded_credential",
         "evidence": "DD_API_KEY = '§K§'"},
        {"file": "Dockerfile", "line": 3, "kind": "unpinned_base_image", "evidence": "FROM python:3"}
      ]
    }
    """,
    K=DD_API,
)
shape(
    "agent-openhands-observation-cat-config-php",
    """
    **CmdOutputObservation** (exit code 0)
    <?php
    $CONFIG = array (
      'instanceid' => 'oc§hex8§',
      'passwordsalt' => '§S§',
      'dbtype' => 'mysql',
      'dbname' => 'nextcloud',
      'dbuser' => 'nextcloud',
      'dbpassword' => '§P§',
    );
    """,
    S=UL(30),
    P=SAFE(20),
)
shape(
    "agent-status-update-slack-message-posting-new-rotated-key",
    """
    🤖 *rotation-bot* — done rotating the Algolia admin key for `prod-search`.
    New key: `§K§`
    Old key revoked at §hms§ UTC. Vercel env var `ALGOLIA_ADMIN_KEY` updated and redeployed (build §short§).
    """,
    K=ALGOLIA_ADMIN,
)
shape(
    "agent-explains-sas-url-from-user-upload-error",
    """
    The upload fails with `AuthenticationFailed` because the SAS in your URL expired at 09:00 UTC:

    https://stacmedia.blob.core.windows.net/uploads/video.mp4?sv=2024-11-04&ss=b&srt=o&sp=rwc&se=2026-03-02T09:00:00Z&st=2026-03-01T09:00:00Z&spr=https&sig=§S§

    Generate a new SAS with a longer `se`, or better, use a user-delegation SAS from the app.
    """,
    S=AZ_SAS_SIG,
)
shape(
    "agent-reads-terraform-tfvars-and-summarises-with-secret",
    """
    `envs/prod/terraform.tfvars` sets:

    - region: `eu-central-1`
    - instance_type: `m7g.large`
    - db_master_password: `§P§`
    - enable_deletion_protection: `true`

    So the RDS password is committed in plain text here; I'd move it to SSM and reference it with a data
    source.
    """,
    P=SAFE(28),
)
shape(
    "agent-mcp-tool-call-with-auth-header-argument",
    """
    {"jsonrpc":"2.0","id":§n§,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"https://api.linear.app/graphql","method":"POST","headers":{"Authorization":"§K§","Content-Type":"application/json"},"body":"{\\"query\\":\\"{ viewer { id name } }\\"}"}}}
    """,
    K=LINEAR,
)
shape(
    "agent-final-answer-lists-credentials-for-new-dev-env",
    """
    Your dev environment is ready:

    * URL: https://dev-§n2§.preview.example.com
    * Admin: `admin` / `§P§`
    * Mailpit (catch-all mail): https://dev-§n2§.preview.example.com/_mail
    * It shuts down automatically after 8 hours of inactivity.
    """,
    P=APPLE,
)
shape(
    "agent-compares-two-env-files-diff-output",
    """
    Differences between `.env.staging` and `.env.production`:

    ```diff
    -SENTRY_ENVIRONMENT=staging
    +SENTRY_ENVIRONMENT=production
    -SENDGRID_API_KEY=<unset>
    +SENDGRID_API_KEY=§K§
     LOG_LEVEL=info
    ```

    Production has SendGrid configured; staging doesn't, which is why password-reset mail never arrives there.
    """,
    K=SENDGRID,
)
shape(
    "agent-debug-print-of-python-settings-object-repr",
    """
    >>> from app.settings import settings
    >>> settings
    Settings(env='prod', debug=False, database_url='postgresql+asyncpg://app@§host§/app', redis_url='redis://§host§:6379/2', jwt_secret='§S§', cors_origins=['https://app.example.com'])

    The settings load correctly; `jwt_secret` is non-empty, so the signing error comes from elsewhere.
    """,
    S=B64U(48),
)
shape(
    "agent-recap-of-phone-call-transcript-with-spoken-code",
    """
    Call summary (auto-transcribed):

    §first§ from the bank said the new online-banking activation password is "§P§" and that it must be
    changed at first login. She'll send the hardware token by post. Next step: log in before Friday.
    """,
    P=lambda r: (
        chars(r, string.ascii_uppercase, 4)
        + "-"
        + chars(r, string.digits, 4)
        + "-"
        + chars(r, string.ascii_uppercase, 4)
    ),
)
shape(
    "agent-jupyter-error-output-shows-connection-string-in-exception",
    """
    ---------------------------------------------------------------------------
    OperationalError                          Traceback (most recent call last)
    Cell In[7], line 2
          1 engine = create_engine("postgresql://ds_team:§P§@§host§:5432/features")
    ----> 2 pd.read_sql("select * from user_features limit 10", engine)

    OperationalError: (psycopg2.OperationalError) connection to server at "§host§" (§ip§), port 5432 failed: timeout expired
    """,
    P=PWGEN(12),
)
shape(
    "agent-writes-github-actions-secret-set-command-in-instructions",
    """
    To finish the setup, run these once from the repo root (they store the values as Actions secrets):

    ```sh
    gh secret set FLY_API_TOKEN --body '§T§'
    gh secret set FLY_APP --body 'acme-api-prod'
    ```

    After that the `deploy.yml` workflow will deploy on every push to main.
    """,
    T=FLY,
)
shape(
    "agent-error-explanation-pypi-upload-token-in-twine-verbose",
    """
    twine's verbose output shows it's sending the token you configured:

        Uploading distributions to https://upload.pypi.org/legacy/
        username: __token__
        password: §T§
        HTTPError: 403 Forbidden from https://upload.pypi.org/legacy/
        Invalid or non-existent authentication information.

    The token is scoped to a different project; create one scoped to `acme-sdk` or use trusted publishing.
    """,
    T=PYPI,
)
shape(
    "agent-gemini-cli-transcript-read-settings-json-with-key",
    """
    ✦ I'll check your Gemini CLI settings.
     ╭──────────────────────────────────────────────╮
     │ ✔  ReadFile ~/.gemini/.env                    │
     ╰──────────────────────────────────────────────╯
    ✦ Your `~/.gemini/.env` has `GEMINI_API_KEY=§K§` and `GOOGLE_CLOUD_PROJECT` unset, so the CLI uses
      the API-key path, not Vertex AI. That's why the 2.5 Pro quota is the free-tier one.
    """,
    K=GEMINI,
)
shape(
    "agent-cursor-chat-explains-firebase-server-key-in-legacy-fcm",
    """
    Your `push.js` still uses the legacy FCM endpoint with a server key:

    ```js
    headers: { Authorization: 'key=§K§' }
    ```

    Google shut that API down, so every send returns 404. Migrate to HTTP v1 with a service account.
    """,
    K=FIREBASE_SERVER,
)
shape(
    "agent-aider-chat-history-md-with-key-in-commit-message",
    """
    #### add the weather widget

    > Applied edit to src/widgets/Weather.tsx
    > Commit §short§ feat: weather widget using openweathermap (appid=§K§)

    The widget fetches current conditions every 10 minutes.
    """,
    K=HX(32),
)
shape(
    "agent-self-correction-after-printing-key-then-masking",
    """
    The token in `.npmrc` is `//registry.npmjs.org/:_authToken=§T§`.

    Correction: I shouldn't have printed that in full. In later messages I'll refer to it as `npm_…` only.
    You may want to rotate it since it's now in this transcript.
    """,
    T=NPM,
)
shape(
    "agent-smolagents-step-code-with-api-key-literal",
    """
    ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ Step 2 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
     ─ Executing parsed code: ──────────────────────────────────────────────────────
      import requests
      r = requests.get("https://api.tavily.com/search", params={"query": "EU AI Act article 50"},
                       headers={"Authorization": "Bearer §K§"})
      print(r.json()["results"][0]["url"])
     ──────────────────────────────────────────────────────────────────────────────
    Execution logs:
    https://artificialintelligenceact.eu/article/50/
    """,
    K=TAVILY,
)
shape(
    "agent-langgraph-state-dump-includes-credentials-dict",
    """
    DEBUG langgraph state after node 'fetch_crm':
    {'messages': [...§n§ items], 'account_id': '§n3§', 'credentials': {'hubspot_token': '§K§'}, 'next': 'summarise'}
    """,
    K=HUBSPOT,
)
shape(
    "agent-crewai-verbose-task-output-quotes-smtp-login",
    """
    # Agent: Email Operations Specialist
    ## Task: Send the monthly report to finance
    ## Using tool: SMTP Sender
    ## Tool Input:
    "{\\"host\\": \\"smtp.office365.com\\", \\"port\\": 587, \\"user\\": \\"reports@example.com\\", \\"password\\": \\"§P§\\", \\"to\\": \\"finance@example.com\\"}"
    ## Tool Output:
    Email sent (message id <§hex12§@example.com>)
    """,
    P=SYM(14, "!#%+=?@_"),
)
shape(
    "agent-autogen-groupchat-user-proxy-message-with-token",
    """
    user_proxy (to chat_manager):

    Use the Notion integration token §T§ to read the "Q3 roadmap" page and summarise the risks.

    --------------------------------------------------------------------------------
    researcher (to chat_manager):

    I'll fetch the page via the Notion API.
    """,
    T=NOTION,
)
shape(
    "agent-goose-session-jsonl-line-with-env-extension",
    """
    {"role":"assistant","created":§n3§,"content":[{"type":"toolRequest","id":"§hex12§","toolCall":{"status":"success","value":{"name":"developer__shell","arguments":{"command":"PERPLEXITY_API_KEY=§K§ python ask.py 'latest postgres release'"}}}}]}
    """,
    K=PPLX,
)
shape(
    "agent-cline-task-report-mentions-db-password-found-in-yaml",
    """
    Task completed.

    I traced the 500s on /api/reports to the Spring profile `prod` reading `spring.datasource.password`
    from `application-prod.yml`, which is `§P§` — that doesn't match the password in the database
    (rotated on §day§ per the runbook). Updating the YAML and restarting fixes it; I've not committed the change.
    """,
    P=SAFE(16),
)
shape(
    "agent-plan-markdown-checklist-with-wifi-password-for-event",
    """
    - [x] Book the room (3rd floor, capacity 40)
    - [x] Order catering
    - [ ] Print badges
    - [ ] Put the guest Wi-Fi on the welcome slide: SSID `Acme-Guest`, password `§P§`
    - [ ] Test the projector with the HDMI-C adapter
    """,
    P=PHRASE(3, "-"),
)
shape(
    "agent-tells-user-vaultwarden-admin-token-from-compose",
    """
    The Vaultwarden admin page is at https://vault.§host§/admin. The admin token is set in your
    `compose.yaml` as `ADMIN_TOKEN=§T§` (plain, not an Argon2 hash), so that's what you paste at the
    login prompt. Consider switching to a hashed token with `vaultwarden hash`.
    """,
    T=B64(48),
)
shape(
    "agent-vscode-copilot-chat-response-with-connection-string-csharp",
    """
    You can keep the connection string in `appsettings.Development.json`; yours currently is:

    ```json
    "ConnectionStrings": {
      "Default": "Server=tcp:sql-acme-dev.database.windows.net,1433;Initial Catalog=acme;User ID=acmeadmin;Password=§P§;Encrypt=True;"
    }
    ```

    and register it with `builder.Services.AddDbContext<AppDb>(o => o.UseSqlServer(builder.Configuration.GetConnectionString("Default")));`.
    """,
    P=SYM(20, "!#%*+-?@^_~"),
)
shape(
    "agent-json-log-of-llm-request-with-api-key-header-captured",
    """
    {"ts":"§ts§","level":"debug","msg":"llm request","provider":"groq","url":"https://api.groq.com/openai/v1/chat/completions","headers":{"authorization":"Bearer §K§","content-type":"application/json"},"model":"llama-3.3-70b-versatile","prompt_tokens":§tok§}
    """,
    K=GROQ,
)
shape(
    "agent-explains-google-oauth-client-secret-from-downloaded-json",
    """
    The file you downloaded (`client_secret_§n3§-§hex8§.apps.googleusercontent.com.json`) contains:

    - client_id: `§n3§-§hex8§.apps.googleusercontent.com`
    - client_secret: `§S§`
    - redirect_uris: `http://localhost:8080/callback`

    Put the client secret in `GOOGLE_CLIENT_SECRET` and the id in `GOOGLE_CLIENT_ID`; the redirect URI
    must match exactly or you'll get `redirect_uri_mismatch`.
    """,
    S=GOCSPX,
)
shape(
    "agent-restates-user-bitlocker-recovery-key-for-confirmation",
    """
    Just to confirm before I enter it in the recovery screen, the BitLocker recovery key you read out is:

    §K§

    Key ID starts with §hex8§. If that matches the label on the screen, I'll continue.
    """,
    K=lambda r: "-".join(f"{r.randint(0, 720895) // 11 * 11:06d}" for _ in range(8)),
)
shape(
    "agent-commit-message-draft-quotes-removed-secret",
    """
    Proposed commit message:

        chore: remove hardcoded Pusher secret from broadcasting config

        The secret ('§S§') is now read from PUSHER_APP_SECRET. The old value
        must be rotated in the Pusher dashboard since it was in history.
    """,
    S=PUSHER_SECRET,
)
shape(
    "agent-ticket-triage-comment-copies-customer-api-key-from-logs",
    """
    Triage (auto): The customer's requests are rejected with 403 `key_disabled`. From the gateway log for
    request §uuid§, the key used is `§K§`, which was disabled on §day§ after the plan downgrade.
    Suggest: reply with the upgrade link; no engineering action needed.
    """,
    K=cat("live_", AN(40)),
)
shape(
    "agent-plan-for-cutover-with-new-ldap-bind-password",
    """
    Cutover plan (Saturday 22:00 CET):

    1. Put Jira in read-only mode.
    2. Update the LDAP connector: bind DN `cn=jira-svc,ou=svc,dc=corp,dc=example`,
       new bind password `§P§` (old one stops working at 23:00).
    3. Run a full directory sync; expect ~2,300 users.
    4. Lift read-only mode and announce in #it-announce.
    """,
    P=SYM(24),
)
shape(
    "agent-explains-ssh-private-key-it-just-generated",
    """
    I generated a deploy key for the `infra-docs` repo. Add the public part as a read-only deploy key on
    GitHub, and store the private part as the `DOCS_DEPLOY_KEY` secret:

    ```
    §K§
    ```

    Public key: `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI§pubk§ docs-deploy`
    """,
    K=OSSH,
    pubk=B64(32),
)
shape(
    "agent-quoted-reply-in-forum-style-with-password",
    """
    > What did you set as the MQTT password on the broker?

    I used `§P§` for the `zigbee2mqtt` user in `/mosquitto/config/passwd` (before hashing it with
    `mosquitto_passwd`). Same value goes into zigbee2mqtt's `configuration.yaml` under `mqtt.password`.
    """,
    P=PWGEN(11),
)
shape(
    "agent-reasoning-trace-with-env-var-value-visible",
    """
    <thinking>
    The failing step sets HCLOUD_TOKEN from the environment. printenv showed HCLOUD_TOKEN=§T§ so it
    is present. The error is "unauthorized", meaning the token belongs to another project. I should ask which
    Hetzner project the cluster lives in.
    </thinking>
    The token is present but seems to belong to a different Hetzner project — which project is the cluster in?
    """,
    T=HCLOUD,
)
shape(
    "agent-openai-responses-output-function-call-arguments-string",
    """
    {
      "type": "function_call",
      "id": "fc_§hex12§",
      "call_id": "§callid§",
      "name": "send_sms",
      "arguments": "{\\"to\\":\\"+4915112345678\\",\\"body\\":\\"Your code is 482913\\",\\"twilio_auth_token\\":\\"§T§\\"}"
    }
    """,
    T=TWILIO_TOKEN,
)
shape(
    "agent-anthropic-tool-use-block-input-with-password",
    """
    {"type": "tool_use", "id": "§toolu§", "name": "ssh_exec",
     "input": {"host": "§ip§", "user": "deploy", "password": "§P§", "command": "systemctl restart nginx"}}
    """,
    P=PERSON,
)
shape(
    "agent-reads-wp-config-and-reports-auth-salts",
    """
    `wp-config.php` is present and readable. Relevant values:

        define( 'DB_NAME', 'wp_shop' );
        define( 'DB_USER', 'wp_shop' );
        define( 'DB_PASSWORD', '§P§' );
        define( 'AUTH_KEY', '§S§' );

    The DB credentials work from the container (I ran `mysql -u wp_shop -p` successfully).
    """,
    P=SAFE(16),
    S=SYM(64, "!#%*+-=?@^_~.,;:[]{}|<>"),
)
shape(
    "agent-notes-in-obsidian-style-daily-note-with-token",
    """
    # §day§

    ## Work
    - Paired with §first§ on the ingestion bug.
    - Created a Todoist API token for the weekly-review script: §T§
    - Read: "Designing Data-Intensive Applications", ch. 7

    ## Personal
    - Call the dentist
    """,
    T=TODOIST,
)
shape(
    "agent-warp-ai-command-suggestion-with-inline-key",
    """
    ▸ Suggested command
      curl https://api.deepseek.com/chat/completions \\
        -H "Authorization: Bearer §K§" \\
        -H "Content-Type: application/json" \\
        -d '{"model":"deepseek-chat","messages":[{"role":"user","content":"ping"}]}'
    ▸ Explanation: sends a minimal chat request to verify the key works.
    """,
    K=DEEPSEEK,
)
shape(
    "agent-voyage-rerank-script-explained-key-on-next-line",
    """
    The script reads the Voyage key from the first line of `~/.config/voyage/key`, which currently holds:

    §K§

    `rerank.py` passes it to `voyageai.Client(api_key=...)`; no env var needed.
    """,
    K=VOYAGE,
)
shape(
    "agent-explains-jira-basic-auth-header-decoded",
    """
    The `Authorization` header in your script is Basic auth with an API token:

        Authorization: Basic §B§

    Decoded, that's `§email§:<token>`. Atlassian Cloud needs exactly that form, so the header itself is fine;
    the 404 is because the issue key is wrong.
    """,
    B=lambda r: basic(_user(r) + "@example.com", ATLASSIAN(r)),
)

# ---- shell sessions in forms not used before ---------------------------------------------------------------------

shape(
    "script-typescript-file-mysql-p-inline-then-show-databases",
    """
    Script started on §day§ §hms§+00:00 [TERM="xterm-256color" TTY="/dev/pts/3" COLUMNS="160" LINES="48"]
    [§user§@§host§ ~]$ mysql -h 127.0.0.1 -u billing -p'§P§' -e 'SHOW DATABASES'
    mysql: [Warning] Using a password on the command line interface can be insecure.
    +--------------------+
    | Database           |
    +--------------------+
    | billing            |
    | information_schema |
    +--------------------+
    [§user§@§host§ ~]$ exit
    Script done on §day§ §hms2§+00:00 [COMMAND_EXIT_CODE="0"]
    """,
    P=SAFE(18),
)
shape(
    "xonsh-session-env-assignment-then-python-call",
    """
    §user§@laptop ~ @ $MISTRAL_API_KEY = '§K§'
    §user§@laptop ~ @ python -c "import os; from mistralai import Mistral; print(Mistral(api_key=os.environ['MISTRAL_API_KEY']).models.list().data[0].id)"
    ministral-3b-latest
    """,
    K=MISTRAL,
)
shape(
    "fish-set-gx-universal-variable-cohere",
    """
    §user§@mbp ~> set -Ux CO_API_KEY §K§
    §user§@mbp ~> set -U | grep CO_
    CO_API_KEY §K§
    §user§@mbp ~> cohere-cli models list | head -3
    """,
    K=COHERE,
)
shape(
    "screen-log-hardcopy-ftp-session-user-pass",
    """
    ftp> open ftp.printshop.example
    Connected to ftp.printshop.example.
    220 ProFTPD Server ready.
    Name (ftp.printshop.example:§user§): orders
    331 Password required for orders
    Password: §P§
    230 User orders logged in
    ftp> put catalogue-2026.pdf
    """,
    P=PERSON,
)
shape(
    "bash-read-p-prompt-echoed-because-no-s-flag",
    """
    $ ./bootstrap-cluster.sh
    Cluster name: edge-§n§
    Admin password for Rancher (will be shown): §P§
    → creating cluster edge-§n§ ... done
    → setting bootstrap password ... done
    """,
    P=SAFE(16),
)
shape(
    "powershell-transcript-start-transcript-header-and-secret",
    """
    **********************
    Windows PowerShell transcript start
    Start time: 2026§n2§§n§093012
    Username: CORP\\§user§
    Machine: WKS-§n3§ (Microsoft Windows NT 10.0.26100.0)
    **********************
    PS C:\\deploy> $env:AZURE_CLIENT_SECRET = "§S§"
    PS C:\\deploy> az login --service-principal -u $env:AZURE_CLIENT_ID -p $env:AZURE_CLIENT_SECRET --tenant corp.onmicrosoft.com
    [ { "cloudName": "AzureCloud", "isDefault": true, "state": "Enabled" } ]
    """,
    S=AZ_SECRET,
)
shape(
    "bash-set-x-trace-plus-lines-from-deploy-script",
    """
    + VERSION=§ver§
    + REGISTRY_USER=robot$ci+push
    + REGISTRY_PASS=§P§
    + echo §P§
    + docker login harbor.§host§ -u 'robot$ci+push' --password-stdin
    Login Succeeded
    + docker push harbor.§host§/apps/web:§ver§
    """,
    P=AN(32),
)
shape(
    "tmux-capture-pane-htop-hidden-but-cmdline-shows-token",
    """
    $ tmux capture-pane -p -t ops:2 | tail -4
      PID USER      PRI  NI  VIRT   RES   SHR S CPU% MEM%   TIME+  Command
     §pid§ runner     20   0 1.2G  180M 40812 S  3.1  1.1  2:14.07 ./actions-runner/bin/Runner.Listener run --token §T§
     §pid§ root       20   0 12208  5120  4096 S  0.0  0.0  0:00.31 sshd: runner [priv]
    """,
    T=UP(29),
)
shape(
    "ssh-command-inline-env-heredoc-remote-export",
    """
    ssh deploy@§ip§ bash -s <<'REMOTE'
    export BACKUP_PASSPHRASE='§P§'
    restic -r s3:s3.eu-west-1.amazonaws.com/acme-restic backup /srv/data
    REMOTE
    """,
    P=PHRASE(5, " "),
)
shape(
    "bash-curl-u-user-colon-pass-to-artifact-repo",
    """
    $ curl -u ci-upload:§P§ -T build/app-§ver§.tar.gz https://nexus.§host§/repository/raw-releases/app/
    $ echo $?
    0
    """,
    P=AN(20),
)
shape(
    "zsh-history-extended-format-with-timestamps-vault-login",
    """
    : 17§n3§81:0;vault status
    : 17§n3§95:0;vault login -method=userpass username=§user§ password='§P§'
    : 17§n3§02:0;vault kv get -field=url secret/apps/reports
    """,
    P=PERSON,
)
shape(
    "powershell-invoke-restmethod-headers-hashtable",
    """
    PS> $h = @{ 'X-Api-Key' = '§K§'; 'Accept' = 'application/json' }
    PS> Invoke-RestMethod -Uri 'https://api.pagerduty.com/incidents?statuses[]=triggered' -Headers $h
    """,
    K=PD_API,
)
shape(
    "bash-docker-run-e-flags-multiple-only-one-secret",
    """
    $ docker run -d --name umami -p 3000:3000 \\
        -e DATABASE_URL=postgresql://umami:§P§@§host§:5432/umami \\
        -e DATABASE_TYPE=postgresql \\
        -e TZ=Europe/Berlin \\
        ghcr.io/umami-software/umami:postgresql-latest
    §sha256§
    """,
    P=SAFE(22),
)
shape(
    "bash-openssl-enc-pass-pass-argument",
    """
    $ tar czf - ./exports | openssl enc -aes-256-cbc -pbkdf2 -salt -pass pass:§P§ -out exports-§day§.tgz.enc
    $ ls -la exports-§day§.tgz.enc
    -rw-r--r-- 1 §user§ staff 88123412 §day§ exports-§day§.tgz.enc
    """,
    P=SYM(22, "#%+-=@^_~."),
)
shape(
    "bash-7z-a-p-flag-archive-password",
    """
    $ 7z a -p§P§ -mhe=on payroll-§day§.7z ./payroll/
    7-Zip [64] 17.05 : Copyright (c) 1999-2021 Igor Pavlov
    Everything is Ok
    """,
    P=AN(18),
)
shape(
    "bash-mongosh-uri-with-credentials-and-authsource",
    """
    $ mongosh "mongodb://admin:§P§@§host§:27017/?authSource=admin&replicaSet=rs0"
    Current Mongosh Log ID: §hex12§§hex12§
    rs0 [direct: primary] test> show dbs
    """,
    P=SAFE(20),
)
shape(
    "bash-lftp-c-open-u-user-pass-mirror",
    """
    lftp -c "open -u webmaster,§P§ sftp://www.§host§; mirror -R --delete ./public /var/www/html"
    """,
    P=PERSON,
)
shape(
    "bash-smbclient-U-user-percent-password",
    """
    $ smbclient //fs01/scans -U 'CORP/scanner%§P§' -c 'ls'
      .                                   D        0  Mon Mar  2 08:11:09 2026
      scan_0001.pdf                       A   412331  Mon Mar  2 08:10:58 2026
    """,
    P=PWGEN(10),
)
shape(
    "bash-psql-connection-uri-with-sslmode-in-makefile-echo",
    """
    $ make db-shell
    psql "postgresql://app_owner:§P§@ep-quiet-dawn-§n3§.eu-central-1.aws.neon.tech/app?sslmode=require"
    psql (17.2, server 17.4)
    SSL connection (protocol: TLSv1.3, cipher: TLS_AES_256_GCM_SHA384, compression: off)
    app=>
    """,
    P=cat("npg_", AN(12)),
)
shape(
    "bash-gh-auth-login-with-token-echo-pipe",
    """
    $ echo §T§ | gh auth login --with-token
    $ gh auth status
    github.com
      ✓ Logged in to github.com account §user§ (keyring)
      - Token: ghp_************************************
    """,
    T=GHP,
)
shape(
    "bash-aws-configure-set-both-keys",
    """
    $ aws configure set aws_access_key_id §I§ --profile media
    $ aws configure set aws_secret_access_key §S§ --profile media
    $ aws s3 ls --profile media
    2025-11-03 12:01:44 acme-media-originals
    """,
    I=AKIA,
    S=AWS_SECRET,
)
shape(
    "bash-wget-http-password-flag-mirror",
    """
    $ wget --user=archive --password='§P§' -r -np -nH --cut-dirs=2 https://files.§host§/pub/archive/2025/
    """,
    P=SYM(12, "!#%+=?@_"),
)
shape(
    "bash-sqlcmd-P-flag-sql-server",
    """
    $ sqlcmd -S tcp:§host§,1433 -U sa -P '§P§' -C -Q "SELECT name FROM sys.databases"
    name
    -----------
    master
    tempdb
    Inventory
    """,
    P=SYM(16, "!#%*+-?@^_"),
)
shape(
    "bash-rclone-config-create-with-pass-obscured-not-obscured",
    """
    $ rclone config create hetzner-box sftp host u§n3§.your-storagebox.de user u§n3§ port 23 pass §P§ --no-obscure
    [hetzner-box]
    type = sftp
    host = u§n3§.your-storagebox.de
    """,
    P=AN(16),
)
shape(
    "bash-ldapsearch-w-bind-password",
    """
    $ ldapsearch -x -H ldaps://dc1.corp.example -D 'CN=svc-ldap,OU=Service,DC=corp,DC=example' -w '§P§' \\
        -b 'OU=Staff,DC=corp,DC=example' '(mail=§email§)' sAMAccountName
    # §user§, Staff, corp.example
    sAMAccountName: §user§
    """,
    P=SYM(20),
)
shape(
    "bash-keytool-storepass-keypass-flags",
    """
    $ keytool -importkeystore -srckeystore server.p12 -srcstoretype PKCS12 -srcstorepass §P§ \\
        -destkeystore server.jks -deststorepass §P§ -noprompt
    Importing keystore server.p12 to server.jks...
    Entry for alias 1 successfully imported.
    """,
    P=AN(14),
)
shape(
    "bash-htpasswd-b-batch-plain-password",
    """
    $ sudo htpasswd -b -c /etc/nginx/.htpasswd grafana-viewer '§P§'
    Adding password for user grafana-viewer
    """,
    P=PERSON,
)
shape(
    "bash-chpasswd-echo-user-colon-password",
    """
    # echo 'kiosk:§P§' | chpasswd
    # passwd -e kiosk
    passwd: password expiry information changed.
    """,
    P=TEMP,
)
shape(
    "bash-cf-login-p-flag-cloud-foundry",
    """
    $ cf login -a https://api.sys.§host§ -u ci-deployer -p '§P§' -o payments -s prod
    API endpoint: https://api.sys.§host§
    Authenticating...
    OK
    """,
    P=SAFE(24),
)
shape(
    "bash-oc-login-token-flag-openshift",
    """
    $ oc login --token=§T§ --server=https://api.ocp.§host§:6443
    Logged into "https://api.ocp.§host§:6443" as "§user§" using the token provided.
    """,
    T=cat("sha256~", UL(43)),
)
shape(
    "bash-helm-repo-add-username-password",
    """
    $ helm repo add internal https://charts.§host§ --username ci --password §P§
    "internal" has been added to your repositories
    """,
    P=AN(24),
)
shape(
    "bash-git-clone-https-with-bitbucket-app-password",
    """
    $ git clone https://§user§:§P§@bitbucket.org/acme/legacy-portal.git
    Cloning into 'legacy-portal'...
    remote: Enumerating objects: 18211, done.
    """,
    P=BB_APP,
)
shape(
    "bash-mc-alias-set-minio-keys",
    """
    $ mc alias set lab http://§lan§:9000 §I§ §S§
    Added `lab` successfully.
    $ mc ls lab
    [2026-01-14 10:02:11 UTC]     0B datasets/
    """,
    I=UP(20),
    S=MINIO_SECRET,
)
shape(
    "bash-b2-authorize-account-positional",
    """
    $ b2 account authorize 005§hex12§§hex8§0000000001 §K§
    {
        "accountId": "§hex12§",
        "allowed": { "bucketName": "acme-backups", "capabilities": ["listFiles", "readFiles", "writeFiles"] }
    }
    """,
    K=B2_KEY,
)
shape(
    "bash-ncftpput-u-p-flags",
    """
    $ ncftpput -u legacyftp -p §P§ ftp.§host§ /incoming ./export.csv
    export.csv:                                            2.11 MB    1.02 MB/s
    """,
    P=PWGEN(9),
)
shape(
    "bash-expect-script-send-password-line",
    """
    #!/usr/bin/expect -f
    set timeout 20
    spawn ssh admin@§lan§
    expect "password:"
    send "§P§\\r"
    expect "#"
    send "show running-config\\r"
    """,
    P=PERSON,
)
shape(
    "bash-docker-exec-env-grep-shows-secret",
    """
    $ docker exec -it n8n env | grep -E 'N8N_|DB_'
    N8N_HOST=n8n.§host§
    N8N_ENCRYPTION_KEY=§K§
    DB_TYPE=postgresdb
    DB_POSTGRESDB_HOST=postgres
    """,
    K=AN(32),
)

# ---- CI logs in forms not used before --------------------------------------------------------------------------

shape(
    "github-actions-debug-log-secret-not-masked-because-base64",
    """
    2026-03-04T11:22:01.4412301Z ##[debug]Evaluating: format('{0}', secrets.REGISTRY_AUTH)
    2026-03-04T11:22:01.4418822Z ##[group]Run echo "auth=$(echo -n "ci:${{ secrets.REGISTRY_PASSWORD }}" | base64)"
    2026-03-04T11:22:01.4420011Z auth=§B§
    2026-03-04T11:22:01.4420502Z ##[endgroup]
    """,
    B=lambda r: basic("ci", safe(r, 20)),
)
shape(
    "gitlab-ci-job-log-section-with-printed-variable",
    """
    section_start:17§n3§:step_script\\r\\e[0K\\e[0K\\e[36;1mExecuting "step_script" stage of the job script\\e[0;m
    $ echo "Using Sonar token $SONAR_TOKEN for analysis"
    Using Sonar token §T§ for analysis
    $ sonar-scanner -Dsonar.projectKey=acme_web
    """,
    T=SONAR,
)
shape(
    "jenkins-console-withcredentials-leak-via-sh-x",
    """
    [Pipeline] withCredentials
    Masking supported pattern matches of $NEXUS_PW
    [Pipeline] sh
    + set -x
    + printf %s §P§
    + base64
    + curl -u deployer:§P§ https://nexus.§host§/service/rest/v1/components?repository=maven-releases
    """,
    P=SAFE(20),
)
shape(
    "azure-devops-pipeline-log-az-cli-sp-secret-in-args",
    """
    2026-02-11T08:41:12.1104431Z ========================== Starting Command Output ===========================
    2026-02-11T08:41:12.1133219Z [command]/usr/bin/bash --noprofile --norc /home/vsts/work/_temp/§uuid§.sh
    2026-02-11T08:41:12.9013382Z + az login --service-principal -u §uuid2§ -p §S§ --tenant contoso.onmicrosoft.com
    """,
    S=AZ_SECRET,
)
shape(
    "circleci-step-output-printenv-sorted",
    """
    #!/bin/bash -eo pipefail
    printenv | sort | grep -v '^_'
    CIRCLE_BRANCH=main
    CIRCLE_BUILD_NUM=§n3§
    CIRCLE_PROJECT_REPONAME=mobile-app
    EXPO_TOKEN=§T§
    HOME=/home/circleci
    """,
    T=EXPO,
)
shape(
    "buildkite-agent-log-meta-data-get-secret",
    """
    ~~~ :key: Fetching secrets
    $ buildkite-agent meta-data get release-token
    §T§
    ~~~ :rocket: Releasing
    $ goreleaser release --clean
    """,
    T=GHP,
)
shape(
    "bitbucket-pipelines-log-pipe-variables-echoed",
    """
    + pipe: atlassian/aws-s3-deploy:1.6.0
      variables:
        AWS_ACCESS_KEY_ID: '§I§'
        AWS_SECRET_ACCESS_KEY: '§S§'
        AWS_DEFAULT_REGION: 'eu-west-1'
        S3_BUCKET: 'acme-www'
        LOCAL_PATH: 'dist'
    """,
    I=AKIA,
    S=AWS_SECRET,
)
shape(
    "teamcity-build-log-service-message-setparameter",
    """
    [11:02:31] : [Step 2/4] ##teamcity[setParameter name='env.OCTOPUS_API_KEY' value='§K§']
    [11:02:31] : [Step 2/4] Parameter env.OCTOPUS_API_KEY set
    [11:02:40] : [Step 3/4] octo create-release --project "Web" --server https://deploy.§host§
    """,
    K=cat("API-", UP(27)),
)
shape(
    "drone-ci-log-plugin-docker-password-in-settings-dump",
    """
    [docker:1] + /usr/local/bin/dockerd --data-root /var/lib/docker --host=unix:///var/run/docker.sock
    [docker:2] settings: {"repo":"registry.§host§/team/api","username":"drone","password":"§P§","tags":["§short§"]}
    [docker:3] Successfully tagged registry.§host§/team/api:§short§
    """,
    P=AN(28),
)
shape(
    "github-actions-run-step-env-block-rendered-in-log",
    """
    Run ./scripts/publish-extension.sh
      ./scripts/publish-extension.sh
      shell: /usr/bin/bash -e {0}
      env:
        VSCE_PAT: §T§
        NODE_VERSION: 22
    Publishing acme.acme-lint@§ver§...
    """,
    T=ADO_PAT,
)
shape(
    "gitlab-runner-register-command-in-ansible-output",
    """
    TASK [gitlab-runner : register runner] *******************************************
    changed: [runner-03] => {"changed": true, "cmd": "gitlab-runner register --non-interactive --url https://gitlab.§host§ --token §T§ --executor docker --docker-image alpine:3.21", "rc": 0}
    """,
    T=GLRT,
)
shape(
    "woodpecker-pipeline-log-netrc-written",
    """
    + cat > ~/.netrc <<EOF
    machine codeberg.org
    login ci-bot
    password §T§
    EOF
    + git push origin HEAD:refs/heads/docs-preview
    """,
    T=HX(40),
)
shape(
    "argo-workflows-pod-log-env-print",
    """
    time="§ts§" level=info msg="capturing logs" argo=true
    OPENSEARCH_URL=https://search.§host§:9200
    OPENSEARCH_PASSWORD=§P§
    indexing 48211 documents into products-v7 ...
    """,
    P=SYM(18, "!#%*+-?@_"),
)
shape(
    "tekton-taskrun-log-step-git-credentials-store",
    """
    [step-clone] + git config --global credential.helper store
    [step-clone] + echo https://x-access-token:§T§@github.com > /root/.git-credentials
    [step-clone] + git clone https://github.com/acme/infra-live.git
    [step-clone] Cloning into 'infra-live'...
    """,
    T=GHS,
)
shape(
    "spinnaker-pipeline-execution-json-with-webhook-stage-header",
    """
    {"type":"webhook","name":"Notify Statuspage","context":{"url":"https://api.statuspage.io/v1/pages/§hex12§/incidents","method":"POST","customHeaders":{"Authorization":"OAuth §K§"},"statusCode":201}}
    """,
    K=UUID,
)
shape(
    "concourse-fly-execute-output-param-echo",
    """
    executing build §n3§ at https://ci.§host§/builds/§n3§
    initializing
    running sh -exc echo "$SLACK_WEBHOOK" && ./notify.sh
    + echo §H§
    §H§
    succeeded
    """,
    H=SLACK_HOOK,
)
shape(
    "github-actions-composite-action-input-warning-unexpected-input",
    """
    Warning: Unexpected input(s) 'api-token', valid inputs are ['token', 'path']
    Run acme/upload-coverage@v2
      with:
        api-token: §T§
        path: coverage/lcov.info
    """,
    T=UUID,
)
shape(
    "earthly-build-output-arg-printed",
    """
    +build | --> RUN --secret NPM_TOKEN npm ci
    +build | npm notice using token from NPM_TOKEN=§T§
    +build | added 1422 packages in 31s
    """,
    T=NPM,
)

# ---- configs of many real tools, formats not used before ---------------------------------------------------------

shape(
    "nix-module-services-nextcloud-adminpass-inline",
    """
    { config, pkgs, ... }: {
      services.nextcloud = {
        enable = true;
        hostName = "cloud.§host§";
        config.adminpassFile = "${pkgs.writeText "adminpass" "§P§"}";
        config.dbtype = "pgsql";
      };
    }
    """,
    P=SAFE(20),
)
shape(
    "starlark-tiltfile-local-resource-env-with-token",
    """
    # Tiltfile
    local_resource(
        'seed-data',
        cmd='python scripts/seed.py',
        env={'STRIPE_API_KEY': '§K§', 'SEED_ROWS': '500'},
        resource_deps=['postgres'],
    )
    """,
    K=STRIPE_SK,
)
shape(
    "lua-neovim-plugin-config-with-openai-key",
    """
    -- ~/.config/nvim/lua/plugins/ai.lua
    return {
      "frankroeder/parrot.nvim",
      opts = {
        providers = {
          anthropic = { api_key = "§K§" },
        },
      },
    }
    """,
    K=ANTHROPIC,
)
shape(
    "hocon-application-conf-akka-persistence-password",
    """
    akka.persistence.r2dbc {
      connection-factory = ${akka.persistence.r2dbc.postgres}
      connection-factory {
        host = "§host§"
        database = "events"
        user = "akka"
        password = "§P§"
      }
    }
    """,
    P=SAFE(20),
)
shape(
    "pkl-config-amends-with-secret-field",
    """
    amends "package://pkg.pkl-lang.org/acme/service@1.4.0#/Service.pkl"

    name = "ledger"
    port = 8443
    database {
      url = "jdbc:postgresql://§host§/ledger"
      password = "§P§"
    }
    """,
    P=SYM(20, "#%+-=@^_~."),
)
shape(
    "cue-config-values-with-api-key",
    """
    package deploy

    services: search: {
        image: "ghcr.io/acme/search:§ver§"
        env: {
            MEILI_MASTER_KEY: "§K§"
            MEILI_ENV:        "production"
        }
    }
    """,
    K=MEILI,
)
shape(
    "dhall-config-record-with-password",
    """
    let Config = ./Config.dhall

    in  Config::{
        , host = "§host§"
        , user = "etl"
        , password = "§P§"
        , batchSize = 5000
        }
    """,
    P=PERSON,
)
shape(
    "kdl-config-zellij-like-plugin-with-token",
    """
    plugins {
        forgejo-status location="file:~/.zellij/forgejo.wasm" {
            url "https://git.§host§"
            token "§T§"
        }
    }
    """,
    T=HX(40),
)
shape(
    "jsonnet-grafana-datasource-secure-json-data",
    """
    {
      datasources: [{
        name: 'Loki',
        type: 'loki',
        url: 'https://logs-prod-eu-west-0.grafana.net',
        basicAuth: true,
        basicAuthUser: '§n3§',
        secureJsonData: { basicAuthPassword: '§T§' },
      }],
    }
    """,
    T=GRAFANA_CLOUD,
)
shape(
    "ron-config-rust-game-server-with-rcon-password",
    """
    (
        server_name: "Friday LAN",
        max_players: 16,
        rcon: (
            enabled: true,
            port: 27020,
            password: "§P§",
        ),
    )
    """,
    P=PWGEN(12),
)
shape(
    "edn-clojure-config-with-db-spec-password",
    """
    {:db {:dbtype "postgresql"
          :host "§host§"
          :dbname "billing"
          :user "billing"
          :password "§P§"}
     :http {:port 3000}}
    """,
    P=SAFE(20),
)
shape(
    "caddyfile-basicauth-plus-cloudflare-dns-token",
    """
    {
        acme_dns cloudflare §T§
    }

    grafana.§host§ {
        reverse_proxy localhost:3000
    }
    """,
    T=CF_TOKEN,
)
shape(
    "traefik-dynamic-toml-with-plugin-api-key",
    """
    [http.middlewares.crowdsec.plugin.bouncer]
      enabled = true
      crowdsecLapiKey = "§K§"
      crowdsecLapiHost = "crowdsec:8080"
    """,
    K=HX(32),
)
shape(
    "haproxy-stats-listen-section-userlist-for-dashboard-login",
    """
    userlist stats_users
        user admin insecure-password §P§

    listen stats
        bind :8404
        stats enable
        stats auth-realm HAProxy
    """,
    P=AN(16),
)
shape(
    "nginx-conf-proxy-set-header-authorization-basic",
    """
    location /upstream-api/ {
        proxy_pass https://partner.example.net/api/;
        proxy_set_header Authorization "Basic §B§";
        proxy_set_header Host partner.example.net;
    }
    """,
    B=lambda r: basic("acme", safe(r, 18)),
)
shape(
    "apache-httpd-conf-proxy-pass-with-credentials-in-url",
    """
    <Location "/reports">
        ProxyPass "http://reporter:§P§@§ip§:8080/reports"
        ProxyPassReverse "http://§ip§:8080/reports"
    </Location>
    """,
    P=SAFE(16),
)
shape(
    "postfix-sasl-passwd-map-sendgrid-apikey-relay-on-port-587",
    """
    # /etc/postfix/sasl_passwd
    [smtp.sendgrid.net]:587 apikey:§K§
    """,
    K=SENDGRID,
)
shape(
    "msmtprc-account-with-password-line",
    """
    account        fastmail
    host           smtp.fastmail.com
    port           465
    tls_starttls   off
    from           §email§
    user           §email§
    password       §P§
    account default : fastmail
    """,
    P=LO(16),
)
shape(
    "mbsyncrc-imapaccount-pass-line",
    """
    IMAPAccount work
    Host outlook.office365.com
    User §email§
    Pass §P§
    SSLType IMAPS
    """,
    P=PERSON,
)
shape(
    "offlineimaprc-remotepass-line",
    """
    [Repository Remote]
    type = IMAP
    remotehost = imap.mailbox.org
    remoteuser = §email§
    remotepass = §P§
    sslcacertfile = /etc/ssl/certs/ca-certificates.crt
    """,
    P=SYM(14),
)
shape(
    "fetchmailrc-poll-with-password-quoted",
    """
    poll pop.gmx.net with proto POP3
      user '§email§' there with password '§P§' is '§user§' here
      options ssl keep
    """,
    P=PERSON,
)
shape(
    "muttrc-set-imap-pass-and-smtp-url",
    """
    set imap_user = "§email§"
    set imap_pass = "§P§"
    set folder = "imaps://imap.gmail.com:993"
    set smtp_url = "smtps://§email§@smtp.gmail.com:465/"
    """,
    P=lambda r: " ".join(chars(r, string.ascii_lowercase, 4) for _ in range(4)),
)
shape(
    "ddclient-conf-password-line",
    """
    daemon=300
    use=web, web=checkip.dyndns.org
    protocol=dyndns2
    server=domains.google.com
    login=§hex12§
    password='§P§'
    home.§host§
    """,
    P=AN(16),
)
shape(
    "chrony-keys-file-with-ntp-key",
    """
    # /etc/chrony/chrony.keys
    1 SHA256 HEX:§K§
    """,
    K=lambda r: hx(r, 64).upper(),
)
shape(
    "snmpd-conf-createuser-auth-and-priv-passphrases",
    """
    createUser monitor SHA-256 "§A§" AES "§X§"
    rouser monitor priv
    sysLocation "Rack B4"
    """,
    A=AN(16),
    X=AN(16),
)
shape(
    "freeradius-client-block-for-office-access-point-shortname",
    """
    client office-ap {
        ipaddr = §lan§
        secret = §S§
        shortname = ap-2f
    }
    """,
    S=AN(20),
)
shape(
    "keepalived-conf-auth-pass",
    """
    vrrp_instance VI_1 {
        state MASTER
        interface eth0
        virtual_router_id 51
        priority 150
        authentication {
            auth_type PASS
            auth_pass §P§
        }
        virtual_ipaddress { §ip§/24 }
    }
    """,
    P=AN(8),
)
shape(
    "pgbouncer-userlist-mixed-plain-and-md5-entries",
    """
    ; /etc/pgbouncer/userlist.txt
    "app" "§P§"
    "stats" "md5§md5§"
    """,
    P=SAFE(20),
)
shape(
    "pgpass-file-line-with-wildcards",
    """
    # ~/.pgpass
    §host§:5432:*:reporting:§P§
    localhost:5432:devdb:dev:dev
    """,
    P=SYM(18, "!#%+-=?@^_~."),
)
shape(
    "my-cnf-client-and-mysqldump-sections-for-backup-user",
    """
    [client]
    user=backup
    password="§P§"
    host=§host§

    [mysqldump]
    single-transaction
    """,
    P=SYM(18, "!#%+-=?@^_~."),
)
shape(
    "odbc-ini-dsn-with-pwd",
    """
    [Warehouse]
    Driver=/opt/snowflake/snowflakeodbc/lib/universal/libSnowflake.dylib
    Server=xy§n3§.eu-central-1.snowflakecomputing.com
    UID=TABLEAU_SVC
    PWD=§P§
    Warehouse=REPORTING_WH
    """,
    P=SAFE(24),
)
shape(
    "tnsnames-and-sqlnet-wallet-password-in-cmd",
    """
    $ mkstore -wrl /u01/app/oracle/wallet -createCredential ORCLPDB1 app_user §P§
    Oracle Secret Store Tool Release 23.0.0.0.0 - Production
    Enter wallet password:
    """,
    P=PWGEN(14),
)
shape(
    "cassandra-cqlshrc-credentials-section",
    """
    [authentication]
    username = cassandra_admin
    password = §P§

    [connection]
    hostname = §host§
    port = 9042
    """,
    P=SAFE(20),
)
shape(
    "rabbitmq-conf-default-user-pass",
    """
    listeners.tcp.default = 5672
    default_user = orders
    default_pass = §P§
    management.tcp.port = 15672
    """,
    P=AN(24),
)
shape(
    "mosquitto-bridge-to-hivemq-cloud-remote-credentials",
    """
    connection cloud-bridge
    address mqtt.eu.hivemq.cloud:8883
    remote_username home-bridge
    remote_password §P§
    topic sensors/# out 1
    bridge_protocol_version mqttv311
    """,
    P=SAFE(16),
)
shape(
    "nats-server-conf-authorization-users",
    """
    authorization {
      users = [
        { user: "ingest", password: "§P§", permissions: { publish: "events.>" } }
        { user: "reader", password: "$2a$11$§hex12§§hex12§§hex12§§hex12§§hex8§", permissions: { subscribe: "events.>" } }
      ]
    }
    """,
    P=AN(22),
)
shape(
    "redis-conf-replica-sharing-one-hex-password-for-both-directives",
    """
    bind 0.0.0.0
    protected-mode yes
    requirepass §P§
    masterauth §P§
    maxmemory 2gb
    """,
    P=HX(48),
)
shape(
    "sentinel-conf-auth-pass-for-master",
    """
    sentinel monitor mymaster §ip§ 6379 2
    sentinel auth-pass mymaster §P§
    sentinel down-after-milliseconds mymaster 5000
    """,
    P=AN(32),
)
shape(
    "clickhouse-users-xml-password-element",
    """
    <clickhouse>
      <users>
        <grafana>
          <password>§P§</password>
          <networks><ip>::/0</ip></networks>
          <profile>readonly</profile>
        </grafana>
      </users>
    </clickhouse>
    """,
    P=AN(20),
)
shape(
    "elasticsearch-keystore-add-stdin-command",
    """
    $ echo '§P§' | bin/elasticsearch-keystore add --stdin xpack.notification.email.account.ops.smtp.secure_password
    $ bin/elasticsearch-keystore list
    keystore.seed
    xpack.notification.email.account.ops.smtp.secure_password
    """,
    P=SAFE(16),
)
shape(
    "logstash-pipeline-conf-output-elasticsearch-password",
    """
    output {
      elasticsearch {
        hosts => ["https://es01.§host§:9200"]
        user => "logstash_writer"
        password => "§P§"
        index => "app-logs-%{+YYYY.MM.dd}"
      }
    }
    """,
    P=SAFE(20),
)
shape(
    "fluent-bit-conf-output-http-header-with-key",
    """
    [OUTPUT]
        Name        http
        Match       *
        Host        in.logs.betterstack.com
        Port        443
        tls         On
        Header      Authorization Bearer §T§
        Format      json
    """,
    T=BETTERSTACK,
)
shape(
    "vector-toml-sink-datadog-logs-default-api-key",
    """
    [sinks.dd]
    type = "datadog_logs"
    inputs = ["parse_nginx"]
    default_api_key = "§K§"
    site = "datadoghq.eu"
    compression = "gzip"
    """,
    K=DD_API,
)
shape(
    "filebeat-yml-output-logstash-and-cloud-auth",
    """
    cloud.id: "prod-logs:ZXUtd2VzdC0xLmF3cy5mb3VuZC5pbyQ§hex12§"
    cloud.auth: "filebeat_writer:§P§"
    filebeat.inputs:
      - type: filestream
        paths: [/var/log/app/*.log]
    """,
    P=SAFE(22),
)
shape(
    "alloy-river-config-prometheus-remote-write-basic-auth",
    """
    prometheus.remote_write "grafana_cloud" {
      endpoint {
        url = "https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push"
        basic_auth {
          username = "§n3§§n3§"
          password = "§T§"
        }
      }
    }
    """,
    T=GRAFANA_CLOUD,
)

# ---- container and cluster manifests -----------------------------------------------------------------------------

shape(
    "k8s-secret-stringdata-multi-key-one-secret",
    """
    apiVersion: v1
    kind: Secret
    metadata:
      name: outline-env
      namespace: wiki
    type: Opaque
    stringData:
      URL: https://wiki.§host§
      SECRET_KEY: §K§
      FORCE_HTTPS: "true"
    """,
    K=HX(64),
)
shape(
    "k8s-deployment-env-value-literal-password",
    """
    spec:
      containers:
        - name: keycloak
          image: quay.io/keycloak/keycloak:26.1
          args: ["start", "--optimized"]
          env:
            - name: KC_DB_USERNAME
              value: keycloak
            - name: KC_DB_PASSWORD
              value: "§P§"
            - name: KC_HOSTNAME
              value: sso.§host§
    """,
    P=SAFE(24),
)
shape(
    "helm-values-override-file-with-smtp-password",
    """
    # values-prod.yaml for mastodon/mastodon
    mastodon:
      local_domain: social.§host§
      smtp:
        server: smtp.eu.mailgun.org
        port: 587
        login: postmaster@mg.§host§
        password: §P§
    """,
    P=MAILGUN,
)
shape(
    "kustomize-secretgenerator-grafana-admin-without-hash-suffix",
    """
    secretGenerator:
      - name: grafana-admin
        literals:
          - admin-user=admin
          - admin-password=§P§
    generatorOptions:
      disableNameSuffixHash: true
    """,
    P=SYM(20, "#%+-=@^_~."),
)
shape(
    "docker-compose-override-yml-environment-list-form",
    """
    services:
      minio:
        image: minio/minio:RELEASE.2025-09-07T16-13-09Z
        command: server /data --console-address ":9001"
        environment:
          - MINIO_ROOT_USER=minioadmin
          - MINIO_ROOT_PASSWORD=§P§
    """,
    P=AN(24),
)
shape(
    "podman-quadlet-container-file-environment",
    """
    # ~/.config/containers/systemd/paperless.container
    [Container]
    Image=ghcr.io/paperless-ngx/paperless-ngx:latest
    Environment=PAPERLESS_SECRET_KEY=§K§
    Environment=PAPERLESS_URL=https://docs.§host§
    PublishPort=8000:8000
    """,
    K=SYM(50, "!#%*+-=?@^_~"),
)
shape(
    "nomad-job-hcl-template-with-inline-password",
    """
    task "grafana" {
      driver = "docker"
      config { image = "grafana/grafana:11.4.0" }
      env {
        GF_SECURITY_ADMIN_PASSWORD = "§P§"
        GF_SERVER_ROOT_URL = "https://grafana.§host§"
      }
    }
    """,
    P=SAFE(18),
)
shape(
    "ecs-task-definition-json-environment-plain",
    """
    {
      "family": "checkout-api",
      "containerDefinitions": [{
        "name": "api",
        "image": "§acct§.dkr.ecr.eu-west-1.amazonaws.com/checkout:§short§",
        "environment": [
          {"name": "ADYEN_API_KEY", "value": "§K§"},
          {"name": "ADYEN_ENV", "value": "live"}
        ]
      }]
    }
    """,
    K=ADYEN,
)
shape(
    "cloud-run-service-yaml-env-value",
    """
    apiVersion: serving.knative.dev/v1
    kind: Service
    metadata:
      name: ocr-worker
    spec:
      template:
        spec:
          containers:
            - image: europe-docker.pkg.dev/acme/ocr/worker:§short§
              env:
                - name: ASSEMBLYAI_API_KEY
                  value: §K§
    """,
    K=ASSEMBLY,
)
shape(
    "fly-toml-env-section-with-secret-that-should-be-fly-secret",
    """
    app = "acme-bot"
    primary_region = "ams"

    [env]
      LOG_LEVEL = "info"
      TELEGRAM_BOT_TOKEN = "§T§"

    [[services]]
      internal_port = 8080
    """,
    T=TELEGRAM_BOT,
)
shape(
    "devcontainer-json-remoteenv-with-key",
    """
    {
      "name": "agents-dev",
      "image": "mcr.microsoft.com/devcontainers/python:3.12",
      "remoteEnv": {
        "OPENROUTER_API_KEY": "§K§",
        "PYTHONUNBUFFERED": "1"
      },
      "postCreateCommand": "uv sync"
    }
    """,
    K=OPENROUTER,
)
shape(
    "dockerfile-arg-default-and-env-copy",
    """
    FROM node:22-alpine
    ARG SENTRY_AUTH_TOKEN=§T§
    ENV SENTRY_ORG=acme SENTRY_PROJECT=web
    RUN npm ci && npm run build && npx @sentry/cli sourcemaps upload ./dist
    """,
    T=SENTRY_ORG,
)
shape(
    "docker-config-json-auths-entry-base64",
    """
    {
      "auths": {
        "registry.gitlab.com": {
          "auth": "§B§"
        }
      },
      "credsStore": ""
    }
    """,
    B=lambda r: basic("deploy-token-" + str(r.randint(100, 999)), GLDT(r)),
)
shape(
    "argocd-repository-secret-yaml-password",
    """
    apiVersion: v1
    kind: Secret
    metadata:
      name: repo-infra
      labels:
        argocd.argoproj.io/secret-type: repository
    stringData:
      url: https://git.§host§/platform/infra.git
      username: argocd
      password: §T§
    """,
    T=GITEA,
)
shape(
    "external-secrets-fake-provider-data-value",
    """
    apiVersion: external-secrets.io/v1beta1
    kind: SecretStore
    metadata: { name: fake-for-tests }
    spec:
      provider:
        fake:
          data:
            - key: /prod/payments/braintree-private-key
              value: "§K§"
    """,
    K=BRAINTREE_PRIV,
)
shape(
    "crossplane-providerconfig-secret-inline-credentials",
    """
    apiVersion: v1
    kind: Secret
    metadata: { name: do-creds, namespace: crossplane-system }
    stringData:
      credentials: '{"token":"§T§"}'
    """,
    T=DO_TOKEN,
)
shape(
    "k8s-configmap-mistakenly-holding-api-key",
    """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: frontend-config
    data:
      API_BASE: https://api.§host§
      MAPS_SERVER_KEY: §K§
      FEATURE_FLAGS: "checkout_v2,search_v3"
    """,
    K=GOOGLE,
)
shape(
    "compose-secrets-file-content-shown-with-cat",
    """
    $ cat secrets/postgres_password.txt
    §P§
    $ grep -A3 '^secrets:' compose.yaml
    secrets:
      postgres_password:
        file: ./secrets/postgres_password.txt
    """,
    P=SAFE(32),
)

# ---- HTTP clients and traces ------------------------------------------------------------------------------------

shape(
    "http-file-vscode-rest-client-variables",
    """
    @baseUrl = https://api.§host§/v1
    @token = §T§

    ### list invoices
    GET {{baseUrl}}/invoices?status=open
    Authorization: Bearer {{token}}
    """,
    T=cat("sk_live_", AN(48)),
)
shape(
    "jetbrains-http-client-env-private-json",
    """
    {
      "prod": {
        "host": "https://api.§host§",
        "client_secret": "§S§"
      }
    }
    """,
    S=KEYCLOAK,
)
shape(
    "bruno-collection-env-bru-file",
    """
    vars {
      baseUrl: https://api.§host§
    }
    vars:secret [
      apiKey
    ]
    # exported with values:
    apiKey: §K§
    """,
    K=AN(40),
)
shape(
    "insomnia-export-json-header-value",
    """
    {"_type":"request","name":"Create payout","method":"POST","url":"https://api.wise.com/v3/profiles/§n3§/transfers","headers":[{"name":"Authorization","value":"Bearer §T§"}]}
    """,
    T=UUID,
)
shape(
    "postman-environment-json-values-array",
    """
    {
      "name": "Shopify prod",
      "values": [
        {"key": "shop", "value": "acme-store.myshopify.com", "enabled": true},
        {"key": "access_token", "value": "§T§", "type": "secret", "enabled": true}
      ]
    }
    """,
    T=SHOPIFY,
)
shape(
    "curl-trace-ascii-dump-authorization-line",
    """
    == Info: Connected to api.openai.com (§pub§) port 443
    => Send header, 214 bytes (0xd6)
    0000: POST /v1/embeddings HTTP/2
    001c: Host: api.openai.com
    0032: authorization: Bearer §K§
    => Send data, 61 bytes (0x3d)
    """,
    K=OPENAI_SVC,
)
shape(
    "har-entry-request-headers-cookie-session",
    """
    {"request": {"method": "GET", "url": "https://admin.§host§/dashboard",
      "headers": [{"name": "Cookie", "value": "_ga=GA1.1.§n3§.§n3§; admin_session=§S§"},
                  {"name": "User-Agent", "value": "Mozilla/5.0"}]}}
    """,
    S=HX(64),
)
shape(
    "wireshark-follow-http-stream-basic-auth",
    """
    GET /cgi-bin/status.cgi HTTP/1.1
    Host: §lan§
    Authorization: Basic §B§
    User-Agent: Wget/1.21.4

    HTTP/1.1 200 OK
    Content-Type: text/html
    """,
    B=lambda r: basic("admin", person(r)),
)
shape(
    "requests-session-debug-output-x-api-key",
    """
    DEBUG:urllib3.connectionpool:Starting new HTTPS connection (1): api.elevenlabs.io:443
    send: b'POST /v1/text-to-speech/§hex12§ HTTP/1.1\\r\\nHost: api.elevenlabs.io\\r\\nxi-api-key: §K§\\r\\nContent-Type: application/json\\r\\n\\r\\n'
    reply: 'HTTP/1.1 200 OK\\r\\n'
    """,
    K=ELEVEN,
)
shape(
    "okhttp-logging-interceptor-android-logcat",
    """
    03-05 14:21:07.311 §pid§ §pid§ I okhttp.OkHttpClient: --> POST https://api.revenuecat.com/v1/receipts
    03-05 14:21:07.311 §pid§ §pid§ I okhttp.OkHttpClient: Authorization: Bearer §K§
    03-05 14:21:07.312 §pid§ §pid§ I okhttp.OkHttpClient: --> END POST (412-byte body)
    """,
    K=cat("sk_", AN(32)),
)
shape(
    "axios-error-tojson-config-headers",
    """
    AxiosError: Request failed with status code 429
      config: {
        url: 'https://api.cerebras.ai/v1/chat/completions',
        method: 'post',
        headers: { Authorization: 'Bearer §K§', 'Content-Type': 'application/json' }
      }
    """,
    K=CEREBRAS,
)
shape(
    "httpx-event-hook-print-request-headers",
    """
    Request event hook: POST https://api.together.xyz/v1/completions - Waiting for response
    Headers({'host': 'api.together.xyz', 'authorization': 'Bearer §K§', 'content-length': '188'})
    Response event hook: POST https://api.together.xyz/v1/completions - Status 200
    """,
    K=TOGETHER,
)
shape(
    "grpcurl-h-metadata-flag",
    """
    $ grpcurl -H 'authorization: Bearer §T§' -d '{"id":"§n3§"}' api.§host§:443 orders.v1.OrderService/GetOrder
    {
      "id": "§n3§",
      "status": "SHIPPED"
    }
    """,
    T=B64U(32),
)
shape(
    "websocat-url-with-token-query",
    """
    $ websocat "wss://stream.§host§/v2/ticks?symbols=AAPL,MSFT&token=§T§"
    {"s":"AAPL","p":212.41,"t":§n3§}
    """,
    T=AN(32),
)
shape(
    "fetch-in-browser-devtools-copy-as-fetch",
    """
    fetch("https://app.§host§/api/graphql", {
      "headers": {
        "accept": "*/*",
        "authorization": "Bearer §T§",
        "content-type": "application/json"
      },
      "body": "{\\"query\\":\\"{me{id}}\\"}",
      "method": "POST"
    });
    """,
    T=JWT({"sub": "user_§n3§", "org": "acme", "exp": 1767311000}, "HS256"),
)
shape(
    "powershell-copy-as-invoke-webrequest-with-session-cookie",
    """
    $session = New-Object Microsoft.PowerShell.Commands.WebRequestSession
    $session.Cookies.Add((New-Object System.Net.Cookie("connect.sid", "§S§", "/", "portal.§host§")))
    Invoke-WebRequest -UseBasicParsing -Uri "https://portal.§host§/api/me" -WebSession $session
    """,
    S=lambda r: "s%3A" + ul(r, 32) + "." + pct(b64(r, 32)).replace("%3D", ""),
)
shape(
    "nginx-access-log-token-in-query-string",
    """
    §ip§ - - [05/Mar/2026:10:14:02 +0000] "GET /export.csv?api_token=§T§&from=2026-01-01 HTTP/1.1" 200 81234 "-" "python-requests/2.32.3"
    """,
    T=HX(40),
)
shape(
    "envoy-access-log-json-with-authorization-header",
    """
    {"start_time":"§ts§","method":"POST","path":"/v1/messages","response_code":200,"x_forwarded_for":"§ip§","req_authorization":"Bearer §K§","upstream_host":"§ip2§:8080"}
    """,
    K=ANTHROPIC,
)

# ---- SDK code in many languages ----------------------------------------------------------------------------------

shape(
    "go-main-with-const-api-key-for-resend",
    """
    package main

    import "github.com/resend/resend-go/v2"

    const apiKey = "§K§"

    func main() {
        client := resend.NewClient(apiKey)
        _, _ = client.Emails.Send(&resend.SendEmailRequest{From: "noreply@§host§", To: []string{"§email§"}, Subject: "hi"})
    }
    """,
    K=RESEND,
)
shape(
    "rust-reqwest-fireworks-models-list-with-inline-bearer",
    """
    let client = reqwest::Client::new();
    let res = client
        .get("https://api.fireworks.ai/inference/v1/models")
        .bearer_auth("§K§")
        .send()
        .await?;
    """,
    K=FIREWORKS,
)
shape(
    "java-spring-value-default-with-secret",
    """
    @Service
    public class FxRates {
        @Value("${fx.api-key:§K§}")
        private String apiKey;
    }
    """,
    K=HX(32),
)
shape(
    "kotlin-build-gradle-kts-maven-credentials",
    """
    repositories {
        maven {
            url = uri("https://maven.pkg.github.com/acme/android-libs")
            credentials {
                username = "ci-bot"
                password = "§T§"
            }
        }
    }
    """,
    T=GHP,
)
shape(
    "csharp-program-cs-new-openai-client-literal",
    """
    using OpenAI.Chat;

    ChatClient client = new(model: "gpt-4.1", apiKey: "§K§");
    ChatCompletion completion = client.CompleteChat("Say 'this is a test.'");
    Console.WriteLine(completion.Content[0].Text);
    """,
    K=OPENAI,
)
shape(
    "ruby-initializer-stripe-api-key-assignment",
    """
    # config/initializers/stripe.rb
    Stripe.api_key = '§K§'
    Stripe.api_version = '2025-09-30.clover'
    """,
    K=STRIPE_SK,
)
shape(
    "php-laravel-config-services-array-literal",
    """
    <?php
    return [
        'postmark' => [
            'token' => '§K§',
        ],
        'ses' => [
            'key' => env('AWS_ACCESS_KEY_ID'),
            'region' => 'eu-west-1',
        ],
    ];
    """,
    K=POSTMARK,
)
shape(
    "swift-app-config-static-let-key",
    """
    enum AppConfig {
        static let supabaseURL = URL(string: "https://§hex12§abcd.supabase.co")!
        static let supabaseServiceKey = "§K§"
    }
    """,
    K=JWT({"iss": "supabase", "role": "service_role", "iat": 1735689600, "exp": 2051222400}, "HS256"),
)
shape(
    "dart-flutter-const-string-maps-key",
    """
    // lib/env.dart
    const String hereApiKey = '§K§';
    const String tileStyle = 'explore.day';
    """,
    K=UL(43),
)
shape(
    "elixir-runtime-exs-config-with-secret-key-base",
    """
    import Config

    config :acme, AcmeWeb.Endpoint,
      url: [host: "app.§host§", port: 443],
      secret_key_base: "§K§"
    """,
    K=B64(48),
)
shape(
    "scala-sbt-credentials-file",
    """
    realm=Sonatype Nexus Repository Manager
    host=nexus.§host§
    user=sbt-publisher
    password=§P§
    """,
    P=AN(20),
)
shape(
    "r-renviron-file-with-keys",
    """
    # ~/.Renviron
    CENSUS_API_KEY=§K§
    R_MAX_VSIZE=16Gb
    """,
    K=HX(40),
)
shape(
    "julia-script-env-assignment-api-key",
    """
    using HTTP, JSON3
    ENV["FRED_API_KEY"] = "§K§"
    r = HTTP.get("https://api.stlouisfed.org/fred/series/observations?series_id=GDP&api_key=$(ENV["FRED_API_KEY"])&file_type=json")
    """,
    K=HX(32),
)
shape(
    "perl-dbi-connect-with-password-arg",
    """
    my $dbh = DBI->connect(
        "DBI:mysql:database=legacy;host=§host§",
        "legacy_rw",
        "§P§",
        { RaiseError => 1, AutoCommit => 1 },
    );
    """,
    P=PERSON,
)
shape(
    "bash-function-in-dotfiles-with-api-key",
    """
    # ~/.bash_functions
    weather() {
      curl -s "https://api.weatherapi.com/v1/current.json?key=§K§&q=${1:-Berlin}" | jq '.current.temp_c'
    }
    """,
    K=HX(31),
)
shape(
    "typescript-vitest-setup-file-env-stub",
    """
    // vitest.setup.ts
    import { vi } from "vitest";

    vi.stubEnv("CLERK_SECRET_KEY", "§K§");
    vi.stubEnv("NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY", "pk_test_Y2xlcmsuZXhhbXBsZS5jb20k");
    """,
    K=CLERK,
)
shape(
    "python-pydantic-settings-default-secret",
    """
    class Settings(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="APP_")

        qdrant_url: str = "https://§hex8§-§hex12§.eu-central.aws.cloud.qdrant.io:6333"
        qdrant_api_key: str = "§K§"
        collection: str = "docs"
    """,
    K=QDRANT,
)
shape(
    "python-boto3-client-with-explicit-keys",
    """
    s3 = boto3.client(
        "s3",
        endpoint_url="https://§hex12§.r2.cloudflarestorage.com",
        aws_access_key_id="§I§",
        aws_secret_access_key="§S§",
    )
    """,
    I=HX(32),
    S=HX(64),
)
shape(
    "deno-ts-env-fallback-literal",
    """
    const token = Deno.env.get("GITHUB_TOKEN") ?? "§T§";
    const res = await fetch("https://api.github.com/user", { headers: { Authorization: `token ${token}` } });
    """,
    T=GHO,
)
shape(
    "zig-build-with-api-key-in-options",
    """
    const opts = b.addOptions();
    opts.addOption([]const u8, "sentry_dsn", "https://§hex12§@o§n3§.ingest.sentry.io/§n3§");
    opts.addOption([]const u8, "telemetry_key", "§K§");
    exe.root_module.addOptions("build_options", opts);
    """,
    K=AN(32),
)
shape(
    "cpp-header-with-static-const-char-secret",
    """
    #pragma once
    // generated by provisioning tool — do not commit
    static const char *DEVICE_ID = "dev-§n3§";
    static const char *DEVICE_SECRET = "§S§";
    """,
    S=B64(32),
)
shape(
    "arduino-sketch-wifi-and-mqtt-password",
    """
    #include <WiFi.h>
    const char* ssid = "Home-§n3§";
    const char* password = "§P§";
    const char* mqtt_server = "§lan§";
    """,
    P=PERSON,
)
shape(
    "vba-macro-connection-string-in-excel",
    """
    Sub RefreshSales()
        Dim cn As Object
        Set cn = CreateObject("ADODB.Connection")
        cn.Open "Provider=SQLOLEDB;Data Source=§host§;Initial Catalog=Sales;User ID=excel_ro;Password=§P§;"
    End Sub
    """,
    P=PERSON,
)
shape(
    "powershell-module-psd1-private-data-with-key",
    """
    @{
        ModuleVersion = '1.2.0'
        PrivateData = @{
            PSData = @{ Tags = @('intune') }
            GraphClientSecret = '§S§'
        }
    }
    """,
    S=AZ_SECRET,
)
shape(
    "terraform-provider-block-with-token",
    """
    provider "cloudflare" {
      api_token = "§T§"
    }

    resource "cloudflare_record" "www" {
      zone_id = "§hex12§§hex12§§hex8§"
      name    = "www"
    }
    """,
    T=CF_TOKEN,
)
shape(
    "pulumi-stack-yaml-config-non-secure-value",
    """
    config:
      aws:region: eu-west-1
      acme-infra:dbPassword: §P§
      acme-infra:apiKey:
        secure: AAABA§hex12§§hex12§==
    """,
    P=SAFE(20),
)
shape(
    "ansible-inventory-ini-ansible-become-pass",
    """
    [web]
    web1 ansible_host=§ip§
    web2 ansible_host=§ip2§

    [web:vars]
    ansible_user=deploy
    ansible_become_pass=§P§
    """,
    P=PERSON,
)
shape(
    "salt-pillar-sls-with-db-password",
    """
    # /srv/pillar/postgres.sls
    postgres:
      users:
        gitea:
          password: '§P§'
          createdb: False
    """,
    P=SAFE(20),
)
shape(
    "chef-data-bag-json-unencrypted",
    """
    {
      "id": "smtp",
      "host": "smtp.§host§",
      "user": "mailer",
      "password": "§P§"
    }
    """,
    P=SYM(16),
)
shape(
    "puppet-hiera-yaml-plain-secret",
    """
    ---
    profile::monitoring::zabbix_db_password: '§P§'
    profile::monitoring::zabbix_server: 'zbx.§host§'
    """,
    P=SAFE(18),
)

# ---- connection strings ------------------------------------------------------------------------------------------

shape(
    "amqps-uri-cloudamqp-in-env",
    """
    CLOUDAMQP_URL=amqps://§user§:§P§@rat.rmq2.cloudamqp.com/§user§
    """,
    P=UL(32),
)
shape(
    "jdbc-sqlserver-url-with-password-property",
    """
    spring.datasource.url=jdbc:sqlserver://§host§:1433;databaseName=erp;user=erp_app;password=§P§;encrypt=true;trustServerCertificate=false
    """,
    P=SYM(16, "!#%*+-?@^_~"),
)
shape(
    "mongodb-srv-uri-atlas-in-python",
    """
    client = MongoClient("mongodb+srv://app-rw:§P§@cluster0.§hex8§.mongodb.net/?retryWrites=true&w=majority&appName=Cluster0")
    """,
    P=AN(16),
)
shape(
    "rediss-upstash-uri-in-dotenv",
    """
    UPSTASH_REDIS_URL=rediss://default:§T§@eu1-§hex8§-§n3§.upstash.io:6379
    """,
    T=UPSTASH,
)
shape(
    "kafka-sasl-jaas-config-property-line",
    """
    sasl.mechanism=PLAIN
    security.protocol=SASL_SSL
    sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="§I§" password="§S§";
    """,
    I=UP(16),
    S=CONFLUENT_SECRET,
)
shape(
    "clickhouse-http-url-with-user-password-params",
    """
    CH_URL="https://§hex8§.eu-central-1.aws.clickhouse.cloud:8443/?user=default&password=§P§"
    """,
    P=cat(AN(12), "~", AN(6)),
)
shape(
    "neo4j-bolt-uri-and-auth-tuple",
    """
    driver = GraphDatabase.driver("neo4j+s://§hex8§.databases.neo4j.io", auth=("neo4j", "§P§"))
    """,
    P=UL(43),
)
shape(
    "influxdb-token-in-telegraf-output",
    """
    [[outputs.influxdb_v2]]
      urls = ["https://eu-central-1-1.aws.cloud2.influxdata.com"]
      token = "§T§"
      organization = "acme"
      bucket = "sensors"
    """,
    T=cat(UL(86), "=="),
)
shape(
    "couchdb-url-with-admin-credentials-in-replication-doc",
    """
    {"_id": "rep-prod-to-dr", "source": "https://admin:§P§@couch1.§host§:6984/orders",
     "target": "https://couch-dr.§host§:6984/orders", "continuous": true}
    """,
    P=SAFE(18),
)
shape(
    "ldap-url-in-gitlab-rb-with-bind-password",
    """
    gitlab_rails['ldap_servers'] = {
      'main' => {
        'host' => 'dc1.corp.example',
        'bind_dn' => 'CN=gitlab,OU=Service,DC=corp,DC=example',
        'password' => '§P§',
        'base' => 'OU=Staff,DC=corp,DC=example'
      }
    }
    """,
    P=SYM(20),
)
shape(
    "sqlalchemy-url-mssql-pyodbc-with-encoded-password",
    """
    engine = create_engine("mssql+pyodbc://etl:§P§@§host§/dw?driver=ODBC+Driver+18+for+SQL+Server")
    """,
    P=lambda r: pct(sym(r, 16, "!#%+=?@")),
)
shape(
    "smtp-url-in-django-email-url-env",
    """
    EMAIL_URL=smtp+tls://§email§:§P§@smtp.gmail.com:587
    """,
    P=lambda r: "".join(chars(r, string.ascii_lowercase, 16)),
)
shape(
    "sftp-url-in-rclone-like-sync-config",
    """
    [sync]
    target = sftp://backup:§P§@§host§:22/srv/backups/laptop
    schedule = daily
    """,
    P=SAFE(16),
)

# ---- stack traces and errors quoting configs ------------------------------------------------------------------------

shape(
    "python-traceback-local-vars-rich-with-password",
    """
    ╭──────────────────── Traceback (most recent call last) ────────────────────╮
    │ /app/sync.py:42 in connect                                                 │
    │ ╭──────────────── locals ────────────────╮                                 │
    │ │     host = '§host§'                     │                                 │
    │ │ password = '§P§'           │                                 │
    │ │     user = 'sync'                       │                                 │
    │ ╰─────────────────────────────────────────╯                                 │
    ╰────────────────────────────────────────────────────────────────────────────╯
    ConnectionRefusedError: [Errno 111] Connection refused
    """,
    P=AN(16),
)
shape(
    "java-exception-message-with-jdbc-url-and-password",
    """
    org.postgresql.util.PSQLException: FATAL: password authentication failed for user "orders"
        at org.postgresql.core.v3.ConnectionFactoryImpl.doAuthentication(ConnectionFactoryImpl.java:693)
    Caused by: configured url=jdbc:postgresql://§host§:5432/orders?user=orders&password=§P§
    """,
    P=SAFE(18),
)
shape(
    "node-unhandled-rejection-with-options-object",
    """
    node:internal/process/promises:394
        triggerUncaughtException(err, true /* fromPromise */);
        ^
    Error: connect ETIMEDOUT §ip§:6379
        at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1615:16) {
      options: { host: '§ip§', port: 6379, password: '§P§', db: 0 }
    }
    """,
    P=HX(32),
)
shape(
    "go-panic-with-struct-dump-including-key",
    """
    panic: runtime error: invalid memory address or nil pointer dereference
    [signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x8c1a2e]
    config: &main.Config{Addr:":8080", JWTSecret:"§S§", DB:(*sql.DB)(nil)}
    goroutine 1 [running]:
    main.main()
        /src/cmd/api/main.go:57 +0x2ae
    """,
    S=AN(48),
)
shape(
    "rails-log-parameters-filter-missed-custom-field",
    """
    Started POST "/integrations/zendesk" for §ip§ at §day§ §hms§ +0000
    Processing by IntegrationsController#create as HTML
      Parameters: {"authenticity_token"=>"[FILTERED]", "integration"=>{"subdomain"=>"acme", "email"=>"§email§", "api_tok"=>"§T§"}}
    """,
    T=ZENDESK,
)
shape(
    "django-debug-page-settings-dump-line",
    """
    Settings
    Using settings module config.settings.staging
    Setting                Value
    ALLOWED_HOSTS          ['staging.§host§']
    AWS_SECRET_ACCESS_KEY  '§S§'
    AWS_STORAGE_BUCKET_NAME 'acme-staging-media'
    """,
    S=AWS_SECRET,
)
shape(
    "php-fatal-error-stack-with-pdo-constructor-args",
    """
    PHP Fatal error:  Uncaught PDOException: SQLSTATE[HY000] [2002] Connection refused in /var/www/app/db.php:8
    Stack trace:
    #0 /var/www/app/db.php(8): PDO->__construct('mysql:host=§host§;dbname=shop', 'shop', '§P§')
    #1 {main}
    """,
    P=PERSON,
)
shape(
    "dotnet-exception-connection-string-in-message",
    """
    Unhandled exception. System.ArgumentException: Format of the initialization string does not conform to specification starting at index 88.
       at System.Data.Common.DbConnectionOptions.GetKeyValuePair(String connectionString, Int32 currentPosition)
    Connection string was: Host=§host§;Database=crm;Username=crm;Password=§P§;;Pooling=true
    """,
    P=SAFE(20),
)
shape(
    "sentry-event-json-extra-context-with-token",
    """
    {"event_id":"§hex12§§hex12§§hex8§","level":"error","message":"Shopify sync failed","extra":{"shop":"acme-store","access_token":"§T§","page":3}}
    """,
    T=SHOPIFY,
)
shape(
    "kubernetes-event-failed-pull-with-auth-in-url",
    """
    Warning  Failed     12s   kubelet  Failed to pull image "registry.§host§/team/api:§short§": failed to resolve reference: pulling from host https://ci:§P§@registry.§host§ failed with status code 401
    """,
    P=AN(20),
)

# ---- Markdown, HTML, tables, runbooks ---------------------------------------------------------------------------

shape(
    "markdown-runbook-restore-step-with-gpg-passphrase",
    """
    ## Restore from cold backup

    1. Fetch the archive: `aws s3 cp s3://acme-cold/pg/latest.sql.gpg .`
    2. Decrypt: `gpg --batch --passphrase '§P§' -d latest.sql.gpg > latest.sql`
    3. Load: `psql -f latest.sql`
    """,
    P=PHRASE(6, " "),
)
shape(
    "html-admin-page-prefilled-input-value",
    """
    <form method="post" action="/settings/integrations">
      <label>Mailjet API secret</label>
      <input type="text" name="mailjet_secret" value="§S§">
      <button>Save</button>
    </form>
    """,
    S=HX(32),
)
shape(
    "confluence-storage-format-table-cell-password",
    """
    <table><tbody>
    <tr><th>System</th><th>User</th><th>Password</th></tr>
    <tr><td>Kiosk PC reception</td><td>kiosk</td><td>§P§</td></tr>
    </tbody></table>
    """,
    P=PERSON,
)
shape(
    "asciidoc-onboarding-doc-with-credentials-block",
    """
    == Test environment

    [source,properties]
    ----
    test.api.url=https://test-api.§host§
    test.api.key=§K§
    ----
    """,
    K=AN(40),
)
shape(
    "rst-docs-code-block-with-token",
    """
    Quickstart
    ==========

    .. code-block:: bash

       export ACME_TOKEN=§T§
       acme projects list
    """,
    T=cat("acme_pat_", AN(36)),
)
shape(
    "notion-export-markdown-property-table",
    """
    # Vendor: Bunny CDN

    | Property | Value |
    | --- | --- |
    | Owner | §first§ |
    | API key | §K§ |
    | Renewal | §day§ |
    """,
    K=BUNNY,
)
shape(
    "jira-wiki-markup-code-block-with-password",
    """
    h3. Reproduction
    {code:bash}
    mysql -h §host§ -u qa -p§P§ qa_db < repro.sql
    {code}
    Result: deadlock after ~30s.
    """,
    P=PWGEN(10),
)
shape(
    "mediawiki-table-server-credentials",
    """
    {| class="wikitable"
    ! Host !! Service !! Login !! Password
    |-
    | §lan§ || iLO || Administrator || §P§
    |}
    """,
    P=UP(8),
)
shape(
    "org-mode-table-with-api-key",
    """
    * Accounts
    | service  | key                                      |
    |----------+------------------------------------------|
    | todoist  | §K§ |
    """,
    K=TODOIST,
)
shape(
    "csv-export-password-manager-row",
    """
    name,url,username,password,note
    Router,http://§lan§,admin,§P§,
    """,
    P=AN(12),
)
shape(
    "html-email-body-with-password-in-strong",
    """
    <p>Hallo §first§,</p>
    <p>Ihr Zugang zum Kundenportal wurde eingerichtet.</p>
    <p>Benutzername: <strong>§user§</strong><br>Passwort: <strong>§P§</strong></p>
    <p>Bitte ändern Sie das Passwort nach der ersten Anmeldung.</p>
    """,
    P=TEMP,
)
shape(
    "latex-appendix-verbatim-with-api-key",
    """
    \\begin{verbatim}
    import openai
    client = openai.OpenAI(api_key="§K§")
    \\end{verbatim}
    """,
    K=OPENAI_LEGACY,
)

# ---- people telling a password in chat, e-mail and tickets, many languages ------------------------------------

shape(
    "teams-chat-english-shared-mailbox-password-quick",
    """
    [§hms§] §first§: can you log into the shared support mailbox and check the bounce?
    [§hms2§] §first2§: sure, what's the pw again
    [§hms2§] §first§: §P§ — don't save it in the browser pls
    """,
    P=PERSON,
)
shape(
    "whatsapp-export-spanish-wifi-clave",
    """
    [§day§, §hms§] §first§: oye cuál es la clave del wifi de la oficina nueva?
    [§day§, §hms2§] §first2§: red "Oficina-5G", clave §P§
    [§day§, §hms2§] §first§: gracias!!
    """,
    P=PERSON,
)
shape(
    "telegram-chat-russian-server-root-password",
    """
    §first§, [§day§ §hms§]
    Пароль от root на новом сервере: §P§
    §first2§, [§day§ §hms2§]
    Принял, сменю после настройки ключей.
    """,
    P=SYM(14, "!#%+=?@_"),
)
shape(
    "email-french-acces-portail-fournisseur",
    """
    Objet : Accès au portail fournisseur

    Bonjour §first§,

    Voici vos identifiants pour le portail : identifiant « §user§ », mot de passe « §P§ ».
    Merci de le modifier lors de votre première connexion.

    Cordialement,
    Service Achats
    """,
    P=TEMP,
)
shape(
    "slack-german-thread-vpn-zugang",
    """
    §first§  §hms§
    Kannst du mir nochmal den VPN-Zugang für den Dienstleister geben?
    §first2§  §hms2§
    Benutzer: ext-wartung, Passwort: §P§ (läuft Ende des Monats ab)
    """,
    P=SAFE(14),
)
shape(
    "line-chat-japanese-admin-password",
    """
    §hms§ §first§ 管理画面のパスワード教えてもらえますか？
    §hms2§ §first2§ ユーザー名は admin、パスワードは「§P§」です。
    §hms2§ §first§ ありがとうございます！ログインできました
    """,
    P=AN(12),
)
shape(
    "kakaotalk-korean-nas-password",
    """
    §first§ : 집 NAS 비밀번호 뭐였지?
    §first2§ : §P§ 이거야. 대문자 주의
    §first§ : ㅇㅋ 고마워
    """,
    P=PERSON,
)
shape(
    "wechat-chinese-database-account",
    """
    §first§：测试库的账号给我一下
    §first2§：地址 §host§:3306，用户 test_rw，密码 §P§
    §first§：收到，谢谢
    """,
    P=SAFE(16),
)
shape(
    "email-portuguese-brazil-senha-provisoria",
    """
    Assunto: Sua conta no sistema de RH

    Olá §first§,

    Sua senha provisória é: §P§
    Ela expira em 48 horas. Acesse https://rh.§host§ e defina uma nova senha.
    """,
    P=TEMP,
)
shape(
    "ticket-italian-helpdesk-reset-password-utente",
    """
    Ticket #§ticket§ — Reset password utente
    Stato: Risolto

    Buongiorno §first§, abbiamo reimpostato la password del suo account di dominio.
    Nuova password temporanea: §P§
    Al primo accesso le verrà chiesto di cambiarla.
    """,
    P=TEMP,
)
shape(
    "signal-dutch-alarm-code-and-app-password",
    """
    §first§: wat is het wachtwoord van de alarm-app ook alweer?
    §first2§: §P§ (de pincode van het paneel zelf weet je)
    """,
    P=PERSON,
)
shape(
    "teams-polish-haslo-do-serwera-plikow",
    """
    §first§: Hej, jakie jest hasło do serwera plików dla nowego stażysty?
    §first2§: login: stazysta01, hasło: §P§ — niech zmieni przy pierwszym logowaniu
    """,
    P=TEMP,
)
shape(
    "email-turkish-sifre-bilgisi",
    """
    Konu: Muhasebe programı erişimi

    Merhaba §first§,
    Kullanıcı adınız: §user§
    Şifreniz: §P§
    İyi çalışmalar.
    """,
    P=PERSON,
)
shape(
    "chat-arabic-wifi-password",
    """
    §first§: ما هي كلمة مرور الواي فاي في الفرع الجديد؟
    §first2§: كلمة المرور: §P§
    §first§: شكرًا
    """,
    P=AN(12),
)
shape(
    "chat-hebrew-system-password",
    """
    §first§: מה הסיסמה למערכת ההזמנות?
    §first2§: שם משתמש orders, סיסמה §P§
    """,
    P=PERSON,
)
shape(
    "chat-hindi-devanagari-portal-password",
    """
    §first§: पोर्टल का पासवर्ड क्या है?
    §first2§: यूज़र: accounts, पासवर्ड: §P§
    §first§: धन्यवाद
    """,
    P=SYM(12, "@#!"),
)
shape(
    "chat-vietnamese-mat-khau-email",
    """
    §first§: Mật khẩu email chung của phòng kế toán là gì vậy?
    §first2§: §P§ nhé, đừng gửi ra ngoài
    """,
    P=PERSON,
)
shape(
    "chat-thai-password-router",
    """
    §first§: รหัสผ่านเราเตอร์คืออะไรครับ
    §first2§: user admin รหัส §P§ ครับ
    """,
    P=AN(10),
)
shape(
    "chat-indonesian-kata-sandi-server",
    """
    §first§: Bang, kata sandi server staging apa ya?
    §first2§: user deploy, sandi §P§
    §first§: Oke makasih bang
    """,
    P=PERSON,
)
shape(
    "chat-greek-kodikos-wifi",
    """
    §first§: Ποιος είναι ο κωδικός του Wi-Fi στο γραφείο;
    §first2§: Ο κωδικός είναι §P§
    """,
    P=PERSON,
)
shape(
    "chat-ukrainian-parol-vid-poshty",
    """
    §first§: Який пароль від спільної пошти?
    §first2§: §P§ — не пересилай нікому, будь ласка
    """,
    P=SAFE(14),
)
shape(
    "email-swedish-losenord-till-kundportal",
    """
    Ämne: Inloggning till kundportalen

    Hej §first§!
    Ditt användarnamn är §email§ och ditt lösenord är §P§.
    Vänliga hälsningar, Support
    """,
    P=TEMP,
)
shape(
    "chat-finnish-salasana-palvelimelle",
    """
    §first§: mikä on testipalvelimen salasana?
    §first2§: tunnus testi, salasana §P§
    """,
    P=PERSON,
)
shape(
    "chat-czech-heslo-k-databazi",
    """
    §first§: Jaké je heslo k databázi na stagingu?
    §first2§: uživatel app, heslo §P§
    """,
    P=SAFE(16),
)
shape(
    "chat-hungarian-jelszo-a-routerhez",
    """
    §first§: Mi a jelszó a routerhez?
    §first2§: admin / §P§
    """,
    P=AN(10),
)
shape(
    "chat-romanian-parola-contului",
    """
    §first§: Care e parola contului de test?
    §first2§: §P§ — o schimbăm vineri
    """,
    P=PERSON,
)
shape(
    "email-danish-adgangskode-midlertidig",
    """
    Emne: Din nye konto

    Hej §first§, din midlertidige adgangskode er §P§. Skift den venligst ved første login.
    """,
    P=TEMP,
)
shape(
    "chat-norwegian-passord-til-skriveren",
    """
    §first§: hva er passordet til skriver-admin?
    §first2§: §P§ (brukernavn admin)
    """,
    P=AN(10),
)
shape(
    "chat-persian-farsi-ramz-obur",
    """
    §first§: رمز عبور سرور چیه؟
    §first2§: نام کاربری root و رمز §P§
    """,
    P=SYM(12, "!@#"),
)
shape(
    "chat-swahili-nenosiri-la-mfumo",
    """
    §first§: Nenosiri la mfumo wa malipo ni lipi?
    §first2§: Mtumiaji: malipo, nenosiri: §P§
    """,
    P=PERSON,
)
shape(
    "chat-tagalog-password-ng-account",
    """
    §first§: Ano ulit password ng shared account natin sa Canva?
    §first2§: §P§ po
    """,
    P=PERSON,
)
shape(
    "chat-catalan-contrasenya-servidor",
    """
    §first§: Quina és la contrasenya del servidor de proves?
    §first2§: usuari proves, contrasenya §P§
    """,
    P=SAFE(14),
)
shape(
    "email-spanish-mexico-credenciales-sat-portal",
    """
    Asunto: Credenciales para el portal de facturación

    Hola §first§, te comparto el acceso:
    Usuario: facturacion@§host§
    Contraseña: §P§
    Saludos.
    """,
    P=PERSON,
)
shape(
    "chat-bengali-password-router",
    """
    §first§: রাউটারের পাসওয়ার্ড কী?
    §first2§: পাসওয়ার্ড: §P§
    """,
    P=AN(12),
)
shape(
    "chat-tamil-kadavuchol",
    """
    §first§: சர்வர் கடவுச்சொல் என்ன?
    §first2§: பயனர் admin, கடவுச்சொல் §P§
    """,
    P=PERSON,
)
shape(
    "chat-german-swiss-passwort-kassensystem",
    """
    §first§: Was isch s'Passwort für s'Kassesystem?
    §first2§: §P§, Benutzer isch "kasse1"
    """,
    P=PERSON,
)
shape(
    "email-english-recovery-codes-forwarded",
    """
    Subject: Fwd: your recovery codes

    ---------- Forwarded message ---------
    Keep these backup codes somewhere safe. Each can be used once.
      §A§
      §B§
    """,
    A=lambda r: chars(r, _LO, 5) + "-" + chars(r, _LO, 5),
    B=lambda r: chars(r, _LO, 5) + "-" + chars(r, _LO, 5),
)
shape(
    "sms-style-english-door-and-wifi",
    """
    Hi! Welcome to the apartment. Keys are in the lockbox by the door. Wi-Fi: Harbor-View, pass §P§. Checkout 11am. Enjoy!
    """,
    P=PERSON,
)
shape(
    "zendesk-ticket-customer-pasted-api-key-asking-why-invalid",
    """
    Requester: §email§
    Subject: API key not working

    Hi, I keep getting 401 with my key §K§ even though I just created it in the dashboard.
    What am I doing wrong?
    """,
    K=cat("sk_live_", AN(32)),
)
shape(
    "github-discussion-comment-pasting-config-with-token",
    """
    @§user§ here's my full config, still getting "bad credentials":

    ```toml
    [github]
    owner = "acme"
    token = "§T§"
    ```
    """,
    T=GHP,
)
shape(
    "reddit-post-homelab-asking-with-cloudflared-token",
    """
    Tunnel won't come up, running:

        docker run cloudflare/cloudflared:latest tunnel --no-autoupdate run --token §T§

    logs say "Unauthorized: Invalid tunnel secret". Any idea? (yes I'll rotate it after lol)
    """,
    T=CF_TUNNEL,
)
shape(
    "discord-message-gaming-server-rcon",
    """
    §user§ — today at §hms§
    rcon pw for the valheim box is §P§ if anyone needs to kick that griefer
    """,
    P=PWGEN(10),
)
shape(
    "mattermost-english-zoom-sdk-secret",
    """
    @§user§: for the webinar integration use client id `§hex12§` and secret `§S§`
    """,
    S=ZOOM_SECRET,
)
shape(
    "irc-log-weechat-password-accidentally-typed-in-channel",
    """
    §hms§ <§user§> /msg NickServ IDENTIFY §P§
    §hms§ <§user§> argh, missing slash, ignore that
    §hms2§ <helper> change it now :)
    """,
    P=PERSON,
)
shape(
    "email-english-it-onboarding-with-laptop-pin-and-password",
    """
    Welcome aboard, §first§!

    Your laptop is on your desk. First login:
      Username: §user§@corp.example
      Temporary password: §P§
    You'll set up MFA with the Authenticator app at first login.
    """,
    P=TEMP,
)
shape(
    "servicenow-incident-work-note-with-service-password",
    """
    Work notes (§ts§) — §first§:
    Reset svc_printspool password to §P§ and updated the service logon on PRINT01/PRINT02.
    Spooler restarted, queue drained.
    """,
    P=SYM(20),
)
shape(
    "freshdesk-reply-agent-gives-ftp-password",
    """
    Hi §first§,

    Your FTP account is ready:
      Host: ftp.§host§
      User: cust§n3§
      Pass: §P§

    Kind regards, Hosting Support
    """,
    P=AN(12),
)
shape(
    "linear-issue-comment-staging-login",
    """
    §first§ commented:
    Staging is back. Login with `qa@§host§` / `§P§` to verify the fix for the export bug.
    """,
    P=PERSON,
)
shape(
    "email-quoted-printable-body-with-password",
    """
    Content-Type: text/plain; charset="utf-8"
    Content-Transfer-Encoding: quoted-printable

    Ihr neues Passwort lautet: §P§
    Bitte =C3=A4ndern Sie es nach der Anmeldung.
    """,
    P=AN(12),
)
shape(
    "chat-english-passphrase-for-shared-1password-vault-export",
    """
    §first§: exported the team vault for the migration, the .1pux is on the share
    §first§: passphrase for the zip is §P§
    §first2§: got it
    """,
    P=PHRASE(4, "."),
)
shape(
    "voice-note-transcript-spelled-out-password",
    """
    [voice message, transcribed] Hey it's §first§, the password for the camera app is §P§, capital at
    the start, I'll text you the username.
    """,
    P=PERSON,
)
shape(
    "chat-japanese-api-key-for-vendor",
    """
    §first§: 翻訳APIのキーを共有します。
    §first§: §K§
    §first2§: 受け取りました。環境変数に入れておきます。
    """,
    K=cat(UUID, ":fx"),
)
shape(
    "chat-korean-aws-keys-for-intern",
    """
    §first§: 인턴용 AWS 키 드릴게요
    액세스 키: §I§
    시크릿 키: §S§
    """,
    I=AKIA,
    S=AWS_SECRET,
)
shape(
    "chat-chinese-traditional-token-share",
    """
    §first§：部署用的 GitLab token 給你：§T§
    §first2§：收到，謝謝
    """,
    T=GLPAT,
)
shape(
    "chat-spanish-spain-token-de-api",
    """
    §first§: ¿Me pasas el token de la API de facturas?
    §first2§: Claro: §T§ (caduca en diciembre)
    """,
    T=HX(40),
)
shape(
    "chat-french-cle-api-meteo",
    """
    §first§ : t'as la clé API pour le service météo ?
    §first2§ : oui, §K§
    """,
    K=HX(32),
)
shape(
    "chat-german-token-fuer-deployment",
    """
    §first§: Für das Deployment brauchst du den Token §T§
    §first2§: Danke, trag ich als CI-Variable ein.
    """,
    T=DO_TOKEN,
)
shape(
    "chat-portuguese-chave-de-api",
    """
    §first§: qual a chave da API do gateway de pagamento?
    §first2§: §K§
    """,
    K=MOLLIE,
)
shape(
    "email-english-vendor-sends-sftp-key-passphrase-separately",
    """
    Subject: SFTP key passphrase (2 of 2)

    As agreed, the key file came in the previous mail. The passphrase is:

        §P§

    Please confirm once you've connected.
    """,
    P=PHRASE(5, "-"),
)

# ---- long tail: devices, firmware consoles, old protocols ---------------------------------------------------------

shape(
    "mikrotik-export-ppp-secret-and-wireless-key",
    """
    # 2026-03-01 10:22:11 by RouterOS 7.17
    /interface wifi security
    add authentication-types=wpa2-psk,wpa3-psk name=home passphrase="§W§"
    /ppp secret
    add name=roadwarrior password=§P§ profile=vpn service=l2tp
    """,
    W=PHRASE(3, "-"),
    P=AN(16),
)
shape(
    "openwrt-shell-uci-show-grep-attic-radio-key",
    """
    root@OpenWrt:~# uci show wireless | grep -E 'ssid|key'
    wireless.default_radio0.ssid='Attic-5G'
    wireless.default_radio0.key='§P§'
    """,
    P=PERSON,
)
shape(
    "pfsense-backup-xml-phase1-block-remote-gateway-and-psk",
    """
    <phase1>
      <ikeid>1</ikeid>
      <remote-gateway>§pub§</remote-gateway>
      <authentication_method>pre_shared_key</authentication_method>
      <pre-shared-key>§P§</pre-shared-key>
    </phase1>
    """,
    P=AN(40),
)
shape(
    "cisco-ios-show-run-username-password-0",
    """
    sw-core-01#show running-config | include username|snmp
    username netops privilege 15 password 0 §P§
    snmp-server community §C§ RW
    """,
    P=PWGEN(12),
    C=AN(12),
)
shape(
    "juniper-junos-plain-text-password-before-commit",
    """
    [edit]
    netops@mx1# set system login user backup authentication plain-text-password-value "§P§"
    netops@mx1# commit check
    configuration check succeeds
    """,
    P=SYM(14, "!#%+=?@_"),
)
shape(
    "fortigate-cli-set-psksecret",
    """
    config vpn ipsec phase1-interface
        edit "to-aws"
            set interface "wan1"
            set remote-gw §pub§
            set psksecret §P§
        next
    end
    """,
    P=UL(32),
)
shape(
    "unifi-controller-device-ssh-credentials-export",
    """
    {"mgmt": {"x_ssh_username": "ubnt-admin", "x_ssh_password": "§P§", "x_ssh_enabled": true}, "site": "default"}
    """,
    P=AN(20),
)
shape(
    "ubiquiti-edgeos-config-boot-plaintext",
    """
    service {
        dns {
            dynamic {
                interface eth0 {
                    service dyndns {
                        host-name home.§host§
                        login ddns
                        password §P§
                    }
                }
            }
        }
    }
    """,
    P=AN(16),
)
shape(
    "ipmitool-lanplus-p-flag",
    """
    $ ipmitool -I lanplus -H §ip§ -U ADMIN -P '§P§' chassis power status
    Chassis Power is on
    """,
    P=UP(10),
)
shape(
    "racadm-remote-p-flag-idrac",
    """
    $ racadm -r §ip§ -u root -p §P§ getsysinfo
    System Information:
    System Model            = PowerEdge R760
    """,
    P=AN(12),
)
shape(
    "supermicro-ipmi-sum-tool-password",
    """
    $ ./sum -i §ip§ -u ADMIN -p §P§ -c GetBiosInfo
    Supermicro Update Manager (for UEFI BIOS) 2.14.0
    """,
    P=UP(10),
)
shape(
    "hp-printer-ews-admin-password-form-post",
    """
    POST /hp/device/SecuritySettings/Save HTTP/1.1
    Host: §lan§
    Content-Type: application/x-www-form-urlencoded

    OldPassword=&NewPassword=§P§&VerifyPassword=§P§&FormButtonSubmit=Apply
    """,
    P=AN(12),
)
shape(
    "hikvision-isapi-curl-digest",
    """
    $ curl --digest -u admin:§P§ http://§lan§/ISAPI/System/deviceInfo
    <DeviceInfo><deviceName>Gate Cam</deviceName><model>DS-2CD2387G2</model></DeviceInfo>
    """,
    P=PERSON,
)
shape(
    "rtsp-url-in-frigate-config",
    """
    cameras:
      driveway:
        ffmpeg:
          inputs:
            - path: rtsp://viewer:§P§@§lan§:554/Streaming/Channels/101
              roles: [detect, record]
    """,
    P=SAFE(14),
)
shape(
    "onvif-device-manager-profile-json",
    """
    {"devices":[{"name":"Porch","xaddr":"http://§lan§/onvif/device_service","username":"onvif","password":"§P§"}]}
    """,
    P=AN(12),
)
shape(
    "asterisk-pjsip-extension-6001-userpass-auth-object",
    """
    [6001-auth]
    type=auth
    auth_type=userpass
    username=6001
    password=§P§
    """,
    P=AN(16),
)
shape(
    "freeswitch-directory-user-xml-password-param",
    """
    <user id="1012">
      <params>
        <param name="password" value="§P§"/>
        <param name="vm-password" value="1012"/>
      </params>
    </user>
    """,
    P=AN(14),
)
shape(
    "yealink-provisioning-cfg-account-password",
    """
    #!version:1.0.0.1
    account.1.enable = 1
    account.1.user_name = 2044
    account.1.auth_name = 2044
    account.1.password = §P§
    account.1.sip_server.1.address = pbx.§host§
    """,
    P=AN(16),
)
shape(
    "home-assistant-secrets-yaml-multiple-one-real",
    """
    # secrets.yaml
    latitude_home: 52.37
    longitude_home: 4.89
    tesla_refresh_token: §T§
    """,
    T=cat("eyJhbGciOiJSUzI1NiJ9.", B64U(120), ".", B64U(64)),
)
shape(
    "esphome-yaml-api-encryption-key-and-ota-password",
    """
    api:
      encryption:
        key: "§K§"
    ota:
      - platform: esphome
        password: "§P§"
    """,
    K=B64(32),
    P=HX(32),
)
shape(
    "tasmota-console-backlog-mqtt-password",
    """
    12:01:33.210 CMD: Backlog MqttHost §lan§; MqttUser tasmota; MqttPassword §P§; Topic plug_kitchen
    12:01:33.224 RSL: RESULT = {"MqttHost":"§lan§","MqttUser":"tasmota","MqttPassword":"****"}
    """,
    P=SAFE(14),
)
shape(
    "octoprint-config-yaml-uppercase-hex-global-key-first-run-done",
    """
    api:
      key: §K§
    server:
      firstRun: false
      onlineCheck: { enabled: true }
    """,
    K=HXU(32),
)
shape(
    "klipper-moonraker-conf-power-device-password",
    """
    [power printer_plug]
    type: tplink_smartplug
    address: §lan§
    [authorization]
    cors_domains: *.local
    [octoprint_compat]
    [notifier telegram]
    url: tgram://§T§/§n3§§n3§
    """,
    T=TELEGRAM_BOT,
)
shape(
    "synology-task-scheduler-script-with-password",
    """
    #!/bin/sh
    # DSM Task Scheduler: nightly offsite
    rsync -a --delete /volume1/photo/ rsync://offsite@§pub§/photo --password-file=<(echo '§P§')
    """,
    P=AN(16),
)
shape(
    "truenas-cloud-sync-credential-json",
    """
    {"name": "B2 offsite", "provider": "B2", "attributes": {"account": "005§hex12§0000000002", "key": "§K§"}}
    """,
    K=B2_KEY,
)
shape(
    "proxmox-api-token-header-in-terraform",
    """
    provider "proxmox" {
      pm_api_url          = "https://§lan§:8006/api2/json"
      pm_api_token_id     = "terraform@pve!ci"
      pm_api_token_secret = "§T§"
    }
    """,
    T=UUID,
)
shape(
    "vmware-govc-env-url-with-password",
    """
    export GOVC_URL='https://administrator@vsphere.local:§P§@vcsa.§host§/sdk'
    export GOVC_INSECURE=1
    govc ls /DC1/vm
    """,
    P=SYM(14, "!#%*+-_"),
)
shape(
    "esxi-kickstart-rootpw-plain",
    """
    vmaccepteula
    install --firstdisk --overwritevmfs
    rootpw §P§
    network --bootproto=static --ip=§ip§ --netmask=255.255.255.0 --gateway=10.0.0.1
    """,
    P=SYM(12, "!#%+=?@_"),
)
shape(
    "preseed-cfg-user-password-crypted-missing",
    """
    d-i passwd/user-fullname string Ops User
    d-i passwd/username string ops
    d-i passwd/user-password password §P§
    d-i passwd/user-password-again password §P§
    """,
    P=PERSON,
)
shape(
    "cloud-init-chpasswd-list",
    """
    #cloud-config
    chpasswd:
      expire: false
      users:
        - name: ubuntu
          password: §P§
          type: text
    """,
    P=SAFE(16),
)
shape(
    "windows-unattend-xml-autologon-password",
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
    P=PERSON,
)
shape(
    "group-policy-preferences-cpassword-style-but-plain-note",
    """
    REM deploy-printer.cmd (pushed via GPO startup script)
    net use \\\\print01\\ipc$ /user:CORP\\svc-print §P§
    rundll32 printui.dll,PrintUIEntry /ga /n\\\\print01\\Floor3
    """,
    P=SYM(16, "!#%+=?@_"),
)
shape(
    "sccm-task-sequence-variable-domain-join-password",
    """
    OSDJoinAccount=CORP\\svc-join
    OSDJoinPassword=§P§
    OSDDomainName=corp.example
    OSDDomainOUName=LDAP://OU=Workstations,DC=corp,DC=example
    """,
    P=SYM(18),
)
shape(
    "ibm-mq-mqsc-channel-authinfo-password",
    """
    DEFINE AUTHINFO(LDAP.AUTH) AUTHTYPE(IDPWLDAP) CONNAME('ldap.corp.example(636)') +
           LDAPUSER('cn=mq,ou=svc,dc=corp,dc=example') LDAPPWD('§P§') SECCOMM(YES)
    """,
    P=SAFE(16),
)
shape(
    "as400-ftp-script-with-user-and-password",
    """
    open §host§
    user QSECOFR §P§
    quote site namefmt 1
    get /QSYS.LIB/PAYROLL.LIB/EMPMAST.FILE/EMPMAST.MBR empmast.txt
    quit
    """,
    P=UP(10),
)
shape(
    "sap-rfc-destination-export-with-password",
    """
    [DEST_ERP_PRD]
    ASHOST=sap-prd.§host§
    SYSNR=00
    CLIENT=100
    USER=RFC_INTEG
    PASSWD=§P§
    LANG=EN
    """,
    P=SYM(12, "!#%+=?@_"),
)
shape(
    "jcl-ftp-step-inline-credentials",
    """
    //FTPSTEP  EXEC PGM=FTP,PARM='(EXIT'
    //INPUT    DD *
    §host§
    batchusr §P§
    PUT 'PROD.DAILY.EXTRACT' daily.txt
    QUIT
    /*
    """,
    P=UP(8),
)
shape(
    "cobol-copybook-comment-with-db2-password",
    """
          * CONNECT TO DB2P USER DB2APP USING §P§
           EXEC SQL CONNECT TO DB2P USER :WS-USER USING :WS-PASS END-EXEC.
    """,
    P=UP(8),
)
shape(
    "tn3270-emulator-session-file-autologon",
    """
    [Session]
    Host=mainframe.§host§
    Port=992
    SSL=1
    AutoLogonUser=TSOU01
    AutoLogonPassword=§P§
    """,
    P=UP(8),
)
shape(
    "dnp3-scada-hmi-config-ini-password",
    """
    [HMI]
    Station=Pumpwerk Nord
    OperatorLevelPassword=§P§
    Historian=\\\\hist01\\data
    """,
    P=AN(10),
)
shape(
    "plc-tia-portal-project-notes-protection-password",
    """
    Project: Line3_Packaging.ap19
    CPU 1515-2 PN — access level: full access with password §P§
    HMI TP1200 — runtime user "operator"
    """,
    P=PERSON,
)
shape(
    "bacnet-building-controller-web-login-note",
    """
    Building automation — Floor 2 AHU controller
    URL: http://§lan§/ (BACnet/IP device 20201)
    Login: operator / §P§
    """,
    P=PERSON,
)

# ---- long tail: games, media, crypto, science -------------------------------------------------------------------

shape(
    "minecraft-properties-friday-build-night-rcon-block",
    """
    enable-rcon=true
    rcon.port=25575
    rcon.password=§P§
    motd=Friday build night
    """,
    P=PWGEN(12),
)
shape(
    "factorio-server-settings-json-game-password-and-token",
    """
    {
      "name": "Factory Fridays",
      "visibility": { "public": true, "lan": true },
      "username": "§user§",
      "token": "§T§",
      "game_password": "§P§"
    }
    """,
    T=HX(30),
    P=PERSON,
)
shape(
    "ark-gameusersettings-ini-admin-password",
    """
    [ServerSettings]
    ServerPassword=
    ServerAdminPassword=§P§
    RCONEnabled=True
    RCONPort=27020
    """,
    P=AN(14),
)
shape(
    "teamspeak-server-first-start-output-serveradmin",
    """
    ------------------------------------------------------------------
                          I M P O R T A N T
    ------------------------------------------------------------------
                   Server Query Admin Account created
             loginname= "serveradmin", password= "§P§"
    ------------------------------------------------------------------
    """,
    P=AN(8),
)
shape(
    "mumble-ini-serverpassword",
    """
    ; murmur.ini
    welcometext="Welcome to the guild server"
    serverpassword=§P§
    port=64738
    """,
    P=PERSON,
)
shape(
    "obs-websocket-config-json-server-password",
    """
    {"alerts_enabled": false, "auth_required": true, "first_load": false, "server_enabled": true, "server_password": "§P§", "server_port": 4455}
    """,
    P=AN(16),
)
shape(
    "icecast-xml-source-and-admin-password",
    """
    <authentication>
      <source-password>§S§</source-password>
      <admin-user>admin</admin-user>
      <admin-password>§A§</admin-password>
    </authentication>
    """,
    S=AN(14),
    A=AN(14),
)
shape(
    "jellyfin-api-key-in-sonarr-connection",
    """
    Settings → Connect → Emby / Jellyfin
      Host: §lan§
      Port: 8096
      API Key: §K§
      Update Library: ✓
    """,
    K=HX(32),
)
shape(
    "qbittorrent-conf-webui-password-plain-old-format",
    """
    [Preferences]
    WebUI\\Port=8080
    WebUI\\Username=admin
    WebUI\\Password_ha1=@ByteArray(§md5§)
    Connection\\Proxy\\Password=§P§
    """,
    P=AN(12),
)
shape(
    "navidrome-toml-lastfm-key-and-shared-secret-pair",
    """
    MusicFolder = "/music"
    LastFM.ApiKey = "§K§"
    LastFM.Secret = "§S§"
    """,
    K=HX(32),
    S=HX(32),
)
shape(
    "bitcoin-conf-rpcpassword",
    """
    server=1
    rpcuser=btcrpc
    rpcpassword=§P§
    rpcallowip=10.0.0.0/8
    txindex=1
    """,
    P=B64U(32),
)
shape(
    "lnd-conf-wallet-unlock-password-file-content",
    """
    $ cat ~/.lnd/wallet_password
    §P§
    $ grep unlock ~/.lnd/lnd.conf
    wallet-unlock-password-file=/home/lnd/.lnd/wallet_password
    """,
    P=PHRASE(4, "-"),
)
shape(
    "ethereum-foundry-env-private-key-hex",
    """
    # .env (foundry)
    RPC_URL=https://eth-sepolia.g.alchemy.com/v2/§A§
    PRIVATE_KEY=0x§K§
    """,
    A=UL(32),
    K=HX(64),
)
shape(
    "solana-keypair-json-array-file",
    """
    $ cat ~/.config/solana/id.json
    §K§
    """,
    K=lambda r: "[" + ",".join(str(b) for b in r.randbytes(64)) + "]",
)
shape(
    "bip39-mnemonic-in-notes-file",
    """
    wallet: hardware backup (test wallet, low funds)
    words: §M§
    """,
    M=lambda r: " ".join(
        r.sample(
            "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse "
            "achieve acid acoustic acquire across act action actor actress actual adapt add addict address adjust "
            "admit adult advance advice aerobic affair afford afraid again age agent agree ahead aim air airport "
            "aisle alarm album alcohol alert alien all alley allow almost alone alpha already also alter always".split(),
            12,
        )
    ),
)
shape(
    "monero-wallet-cli-restore-seed-and-password-flags",
    """
    $ monero-wallet-cli --wallet-file cold --password '§P§' --daemon-address node.§host§:18081
    Monero 'Fluorine Fermi' (v0.18.3.4-release)
    Opened wallet: 4§hex12§...
    """,
    P=SAFE(20),
)
shape(
    "exchange-api-ccxt-python-snippet",
    """
    exchange = ccxt.kraken({
        "apiKey": "§I§",
        "secret": "§S§",
    })
    print(exchange.fetch_balance()["total"]["EUR"])
    """,
    I=B64(42),
    S=B64(64),
)
shape(
    "alpaca-trading-env-keys",
    """
    APCA_API_BASE_URL=https://api.alpaca.markets
    APCA_API_KEY_ID=§I§
    APCA_API_SECRET_KEY=§S§
    """,
    I=ALPACA_ID,
    S=ALPACA_SECRET,
)
shape(
    "binance-api-key-in-freqtrade-config",
    """
    "exchange": {
        "name": "binance",
        "key": "§I§",
        "secret": "§S§",
        "ccxt_config": {},
        "pair_whitelist": ["BTC/USDT", "ETH/USDT"]
    }
    """,
    I=BINANCE,
    S=BINANCE,
)
shape(
    "jupyterhub-config-py-dummy-authenticator-password",
    """
    c.JupyterHub.authenticator_class = "dummy"
    c.DummyAuthenticator.password = "§P§"
    c.Spawner.default_url = "/lab"
    """,
    P=PHRASE(3, "-"),
)
shape(
    "rstudio-connect-publish-rsconnect-api-key",
    """
    rsconnect::connectApiUser(account = "§user§", server = "connect.§host§", apiKey = "§K§")
    rsconnect::deployApp("dashboards/sales")
    """,
    K=AN(32),
)
shape(
    "matlab-script-weboptions-with-password",
    """
    opts = weboptions('Username','labuser','Password','§P§','Timeout',30);
    data = webread('https://data.§host§/api/runs/latest', opts);
    """,
    P=PERSON,
)
shape(
    "slurm-sbatch-script-exports-wandb-key",
    """
    #!/bin/bash
    #SBATCH --job-name=finetune
    #SBATCH --gres=gpu:4
    export WANDB_API_KEY=§K§
    srun python train.py --config configs/llama-8b.yaml
    """,
    K=WANDB,
)
shape(
    "dvc-config-local-remote-credentials",
    """
    ['remote "storage"']
        url = s3://acme-dvc/cache
        access_key_id = §I§
        secret_access_key = §S§
    """,
    I=AKIA,
    S=AWS_SECRET,
)
shape(
    "mlflow-tracking-env-with-password",
    """
    MLFLOW_TRACKING_URI=https://mlflow.§host§
    MLFLOW_TRACKING_USERNAME=research
    MLFLOW_TRACKING_PASSWORD=§P§
    """,
    P=SAFE(20),
)
shape(
    "kaggle-json-file-content",
    """
    $ cat ~/.kaggle/kaggle.json
    {"username":"§user§","key":"§K§"}
    """,
    K=HX(32),
)
shape(
    "stata-odbc-load-with-pwd",
    """
    odbc load, exec("SELECT * FROM survey_wave3") connectionstring("DRIVER={PostgreSQL Unicode};SERVER=§host§;DATABASE=survey;UID=stata;PWD=§P§")
    """,
    P=PERSON,
)
shape(
    "sas-libname-oracle-password-plain",
    """
    libname ora oracle user=sas_reader password="§P§" path="PRODDB" schema=finance;
    proc sql; select count(*) from ora.gl_entries; quit;
    """,
    P=SAFE(14),
)
shape(
    "spss-syntax-get-data-odbc-pwd",
    """
    GET DATA /TYPE=ODBC
      /CONNECT='DSN=Clinic;UID=spss;PWD=§P§;'
      /SQL='SELECT * FROM visits'.
    """,
    P=PERSON,
)
shape(
    "labview-ini-ftp-password",
    """
    [DataUpload]
    FTPServer=§host§
    FTPUser=lab
    FTPPassword=§P§
    """,
    P=AN(12),
)
shape(
    "lims-instrument-config-json-with-api-token",
    """
    {"instrument": "HPLC-02", "lims_url": "https://lims.§host§/api", "lims_token": "§T§", "upload_interval_s": 60}
    """,
    T=HX(48),
)
shape(
    "bloomberg-blpapi-like-config-with-app-secret",
    """
    [session]
    host=§host§
    port=8194
    appName=acme:quant-research
    appSecret=§S§
    """,
    S=B64(24),
)
shape(
    "quickbooks-oauth-refresh-token-in-notes",
    """
    QBO connection (realm §n3§§n3§):
      client_id: AB§hex12§§hex12§
      client_secret: §S§
    """,
    S=AN(40),
)
shape(
    "xero-custom-connection-client-secret-env",
    """
    XERO_CLIENT_ID=§hex12§§hex12§§hex8§
    XERO_CLIENT_SECRET=§S§
    """,
    S=UL(48),
)

# ---- everyday vendor tokens in varied places ---------------------------------------------------------------------

shape(
    "github-app-oauth-refresh-token-in-cli-cache-json",
    """
    $ cat ~/.cache/acme-cli/github.json
    {"access_token_expires_at":"§ts§","refresh_token":"§T§","scope":"","token_type":"bearer"}
    """,
    T=GHR,
)
shape(
    "gitlab-feed-token-in-rss-reader-subscription-url",
    """
    Subscribed: https://gitlab.§host§/platform/api.atom?feed_token=§T§ (updated every 15 min)
    """,
    T=GLFT,
)
shape(
    "gitlab-oauth-app-secret-in-grafana-ini",
    """
    [auth.gitlab]
    enabled = true
    client_id = §hex12§§hex12§§hex12§§hex12§§hex12§
    client_secret = §S§
    allowed_groups = platform
    """,
    S=GLOAS,
)
shape(
    "cloudflare-global-api-key-with-email-in-certbot-ini",
    """
    # /etc/letsencrypt/cloudflare.ini
    dns_cloudflare_email = §email§
    dns_cloudflare_api_key = §K§
    """,
    K=CF_GLOBAL,
)
shape(
    "cloudflare-origin-ca-key-in-terraform-variable-default",
    """
    variable "cf_origin_ca_key" {
      type      = string
      sensitive = true
      default   = "§K§"
    }
    """,
    K=CF_ORIGIN,
)
shape(
    "doctl-config-yaml-access-token-oauth",
    """
    # ~/.config/doctl/config.yaml
    access-token: §T§
    context: default
    output: text
    """,
    T=DO_OAUTH,
)
shape(
    "honeycomb-ingest-key-in-otel-env-headers",
    """
    OTEL_EXPORTER_OTLP_ENDPOINT=https://api.eu1.honeycomb.io
    OTEL_EXPORTER_OTLP_HEADERS=x-honeycomb-team=§K§
    OTEL_SERVICE_NAME=checkout
    """,
    K=HONEYCOMB,
)
shape(
    "axiom-token-in-vercel-log-drain-settings-json",
    """
    {"name":"axiom","type":"json","url":"https://api.axiom.co/v1/integrations/vercel","headers":{"Authorization":"Bearer §T§"},"sources":["lambda","edge"]}
    """,
    T=AXIOM,
)
shape(
    "dynatrace-oneagent-install-command-with-paas-token",
    """
    wget -O Dynatrace-OneAgent.sh "https://§hex8§.live.dynatrace.com/api/v1/deployment/installer/agent/unix/default/latest?arch=x86" \\
      --header="Authorization: Api-Token §T§"
    """,
    T=DYNATRACE,
)
shape(
    "twilio-api-key-secret-pair-in-node-env",
    """
    TWILIO_ACCOUNT_SID=AC§hex12§§hex12§§hex8§
    TWILIO_API_KEY=SK§hex12§§hex12§§hex8§
    TWILIO_API_SECRET=§S§
    """,
    S=TWILIO_SK_SECRET,
)
shape(
    "paddle-billing-api-key-in-laravel-env",
    """
    PADDLE_SELLER_ID=§n3§
    PADDLE_API_KEY=§K§
    PADDLE_SANDBOX=false
    """,
    K=PADDLE,
)
shape(
    "bedrock-api-key-in-claude-code-settings-env",
    """
    {
      "env": {
        "CLAUDE_CODE_USE_BEDROCK": "1",
        "AWS_REGION": "us-east-1",
        "AWS_BEARER_TOKEN_BEDROCK": "§K§"
      }
    }
    """,
    K=BEDROCK,
)
shape(
    "jina-reader-curl-with-bearer",
    """
    curl "https://r.jina.ai/https://example.com/changelog" -H "Authorization: Bearer §K§"
    """,
    K=JINA,
)
shape(
    "helicone-proxy-header-in-litellm-config",
    """
    model_list:
      - model_name: gpt-4.1
        litellm_params:
          model: openai/gpt-4.1
          api_base: https://oai.helicone.ai/v1
          extra_headers:
            Helicone-Auth: Bearer §K§
    """,
    K=HELICONE,
)
shape(
    "sanity-cli-token-in-studio-env-file",
    """
    SANITY_STUDIO_PROJECT_ID=§hex8§
    SANITY_STUDIO_DATASET=production
    SANITY_API_WRITE_TOKEN=§T§
    """,
    T=SANITY,
)
shape(
    "stytch-secret-in-remix-server-env-ts",
    """
    export const stytch = new stytch.Client({
      project_id: "project-live-§uuid§",
      secret: "§S§",
    });
    """,
    S=STYTCH,
)
shape(
    "workos-api-key-in-rails-credentials-decrypted-view",
    """
    $ bin/rails credentials:show
    workos:
      api_key: §K§
      client_id: client_01J§hex12§
    secret_key_base: §B§
    """,
    K=WORKOS,
    B=HX(128),
)
shape(
    "zerotier-central-token-in-ansible-vars",
    """
    zerotier_network_id: §hex12§§hex8§
    zerotier_api_accesstoken: §T§
    zerotier_register_short_hostname: true
    """,
    T=ZEROTIER,
)
shape(
    "cloudinary-url-env-with-key-and-secret",
    """
    CLOUDINARY_URL=cloudinary://§n3§§n3§§n3§:§S§@acme-media
    """,
    S=CLOUDINARY_SECRET,
)
shape(
    "spotify-client-secret-in-spotipy-cache-setup",
    """
    sp = spotipy.Spotify(auth_manager=SpotifyOAuth(
        client_id="§hex12§§hex12§§hex8§",
        client_secret="§S§",
        redirect_uri="http://127.0.0.1:8888/callback",
        scope="user-library-read"))
    """,
    S=SPOTIFY,
)
shape(
    "reddit-praw-ini-site-section",
    """
    [bot1]
    client_id=§hex12§
    client_secret=§S§
    password=§P§
    username=acme_mod_bot
    user_agent=acme-mod-bot/0.3
    """,
    S=REDDIT,
    P=PERSON,
)
shape(
    "artifactory-api-key-in-pip-conf-index-url",
    """
    [global]
    index-url = https://ci:§K§@acme.jfrog.io/artifactory/api/pypi/pypi-virtual/simple
    """,
    K=ARTIFACTORY,
)
shape(
    "docker-org-access-token-in-renovate-host-rules",
    """
    {
      "hostRules": [
        { "hostType": "docker", "matchHost": "docker.io", "username": "acmeorg", "password": "§T§" }
      ]
    }
    """,
    T=DOCKER_OAT,
)
shape(
    "quay-robot-token-in-podman-login-command",
    """
    $ podman login -u='acme+ci_pusher' -p='§T§' quay.io
    Login Succeeded!
    """,
    T=QUAY_ROBOT,
)
shape(
    "rancher-api-token-in-cli2-json",
    """
    {"Servers":{"rancherDefault":{"accessKey":"token-§hex8§","secretKey":"§S§","tokenKey":"§T§","url":"https://rancher.§host§","project":"c-m-§hex8§:p-§hex8§"}}}
    """,
    S=lambda r: lo(r, 54),
    T=RANCHER,
)
shape(
    "portainer-access-token-in-homepage-widget-yaml",
    """
    - Portainer:
        href: https://portainer.§host§
        widget:
          type: portainer
          url: https://portainer.§host§
          env: 2
          key: §K§
    """,
    K=PORTAINER,
)
shape(
    "elastic-api-key-header-in-kibana-dev-tools-copy-as-curl",
    """
    curl -XGET "https://es.§host§:9243/logs-*/_search" -H "kbn-xsrf: reporting" -H "Authorization: ApiKey §K§" -H "Content-Type: application/json" -d '{"size":1}'
    """,
    K=ELASTIC_APIKEY,
)
shape(
    "splunk-hec-token-in-docker-logging-driver-options",
    """
    "log-driver": "splunk",
    "log-opts": {
      "splunk-url": "https://hec.§host§:8088",
      "splunk-token": "§T§",
      "splunk-insecureskipverify": "false"
    }
    """,
    T=SPLUNK_HEC,
)
shape(
    "rollbar-server-token-in-django-settings-dict",
    """
    ROLLBAR = {
        "access_token": "§T§",
        "environment": "production",
        "code_version": "§short§",
    }
    """,
    T=ROLLBAR,
)
shape(
    "bugsnag-upload-api-key-in-gradle-properties",
    """
    org.gradle.jvmargs=-Xmx4g
    bugsnag.apiKey=§K§
    android.useAndroidX=true
    """,
    K=BUGSNAG,
)
shape(
    "unleash-client-token-in-proxy-env",
    """
    UNLEASH_URL=https://unleash.§host§/api
    UNLEASH_API_TOKEN=§T§
    UNLEASH_APP_NAME=web-frontend
    """,
    T=UNLEASH,
)
shape(
    "segment-write-key-in-server-side-go-init",
    """
    client := analytics.New("§K§")
    defer client.Close()
    client.Enqueue(analytics.Track{UserId: "§uuid§", Event: "Signed Up"})
    """,
    K=SEGMENT,
)
shape(
    "mixpanel-api-secret-in-export-script-argv",
    """
    $ python export_events.py --project §n3§§n3§ --api-secret §S§ --from 2026-02-01 --to 2026-02-28
    exported 1,204,331 events to events-feb.jsonl
    """,
    S=MIXPANEL,
)
shape(
    "intercom-access-token-in-zapier-step-debug",
    """
    Step 3: Webhooks by Zapier (POST)
      URL: https://api.intercom.io/conversations/§n3§/reply
      Headers:
        Authorization: Bearer §T§
        Intercom-Version: 2.11
    """,
    T=INTERCOM,
)
shape(
    "salesforce-refresh-token-and-consumer-secret-in-sfdx-auth-file",
    """
    {
      "instanceUrl": "https://acme.my.salesforce.com",
      "clientId": "3MVG9§hex12§§hex12§",
      "clientSecret": "§S§",
      "refreshToken": "§T§"
    }
    """,
    S=SF_SECRET,
    T=SF_REFRESH,
)
shape(
    "pipedrive-api-token-in-google-sheets-apps-script",
    """
    function syncDeals() {
      const token = '§T§';
      const url = 'https://acme.pipedrive.com/api/v1/deals?api_token=' + token;
      const deals = JSON.parse(UrlFetchApp.fetch(url).getContentText()).data;
    }
    """,
    T=PIPEDRIVE,
)
shape(
    "zoho-refresh-token-in-n8n-credential-export",
    """
    {"name":"Zoho CRM","type":"zohoOAuth2Api","data":{"clientId":"1000.§hex12§","clientSecret":"§S§","oauthTokenData":{"refresh_token":"§T§"}}}
    """,
    S=HX(42),
    T=ZOHO,
)
shape(
    "clickup-personal-token-in-raycast-extension-prefs",
    """
    {"extension":"clickup","preferences":{"token":"§T§","teamId":"§n3§§n3§"}}
    """,
    T=CLICKUP,
)
shape(
    "trello-key-and-token-in-bash-alias",
    """
    alias trello-today='curl -s "https://api.trello.com/1/boards/§hex12§/cards?key=§hex12§§hex12§§hex8§&token=§T§" | jq ".[].name"'
    """,
    T=TRELLO_TOKEN,
)
shape(
    "meta-graph-api-page-token-in-python-requests",
    """
    r = requests.post(
        f"https://graph.facebook.com/v21.0/{PAGE_ID}/feed",
        data={"message": "We're hiring!", "access_token": "§T§"},
    )
    """,
    T=META_TOKEN,
)
shape(
    "pushover-app-token-in-uptime-script",
    """
    curl -s --form-string "token=§T§" --form-string "user=u§hex12§§hex12§" \\
         --form-string "message=§host§ is down" https://api.pushover.net/1/messages.json
    """,
    T=PUSHOVER,
)
shape(
    "pushbullet-token-in-crontab-line",
    """
    */30 * * * * /usr/local/bin/check-disk.sh || curl -u §T§: -X POST https://api.pushbullet.com/v2/pushes -d type=note -d title="disk full"
    """,
    T=PUSHBULLET,
)
shape(
    "ntfy-access-token-in-healthchecks-webhook",
    """
    Webhook URL (down): https://ntfy.§host§/backups?auth=§T§
    """,
    T=NTFY,
)
shape(
    "gotify-app-token-in-watchtower-env",
    """
    WATCHTOWER_NOTIFICATION_URL=gotify://gotify.§host§/§T§
    WATCHTOWER_SCHEDULE=0 0 4 * * *
    """,
    T=GOTIFY,
)
shape(
    "fastly-api-token-in-purge-script",
    """
    curl -X POST -H "Fastly-Key: §T§" https://api.fastly.com/service/§hex12§/purge_all
    """,
    T=FASTLY,
)
shape(
    "akamai-edgerc-section",
    """
    [default]
    client_secret = §S§
    host = akab-§hex12§.luna.akamaiapis.net
    access_token = §T§
    client_token = akab-§hex12§-§hex12§
    """,
    S=AKAMAI_SECRET,
    T=AKAMAI_TOKEN,
)
shape(
    "ovh-eu-endpoint-section-in-python-ovh-conf-file",
    """
    [ovh-eu]
    application_key=§hex12§§hex8§
    application_secret=§S§
    consumer_key=§C§
    """,
    S=OVH_SECRET,
    C=AN(32),
)
shape(
    "ibm-cloud-api-key-json-download",
    """
    {
      "name": "ci-deployer",
      "description": "",
      "createdAt": "§ts§",
      "apikey": "§K§"
    }
    """,
    K=IBM_KEY,
)
shape(
    "yandex-cloud-api-key-in-yc-cli-profile",
    """
    $ yc config list
    service-account-key:
      id: aje§hex12§
    token: §T§
    cloud-id: b1g§hex12§
    """,
    T=YANDEX_IAM,
)
shape(
    "clickhouse-cloud-openapi-key-secret-in-terraform",
    """
    provider "clickhouse" {
      organization_id = "§uuid§"
      token_key       = "§hex12§"
      token_secret    = "§S§"
    }
    """,
    S=CLICKHOUSE,
)
shape(
    "tinybird-token-in-tb-cli-tinyb-file",
    """
    {"host": "https://api.europe-west2.gcp.tinybird.co", "id": "§uuid§", "name": "analytics", "token": "§T§"}
    """,
    T=TINYBIRD,
)
shape(
    "dbt-cloud-service-token-in-github-actions-yaml",
    """
    - name: Trigger dbt Cloud job
      run: |
        curl -X POST "https://cloud.getdbt.com/api/v2/accounts/§n3§/jobs/§n3§/run/" \\
          -H "Authorization: Token §T§" -d '{"cause":"merge to main"}'
    """,
    T=DBT_CLOUD,
)
shape(
    "metabase-api-key-in-python-client",
    """
    mb = requests.Session()
    mb.headers["x-api-key"] = "§K§"
    cards = mb.get("https://metabase.§host§/api/card").json()
    """,
    K=METABASE,
)
shape(
    "retool-api-token-in-workflow-trigger",
    """
    POST https://api.retool.com/v1/workflows/§uuid§/startTrigger
    X-Workflow-Api-Key: §K§
    Content-Type: application/json
    """,
    K=RETOOL,
)
shape(
    "ably-root-key-in-react-native-config",
    """
    export const realtime = new Ably.Realtime({ key: "§K§", clientId: "mobile" });
    """,
    K=ABLY,
)
shape(
    "pubnub-secret-key-in-functions-settings",
    """
    pubnub = PubNub(PNConfiguration(
        publish_key="pub-c-§uuid§",
        subscribe_key="sub-c-§uuid2§",
        secret_key="§S§",
        user_id="server"))
    """,
    S=PUBNUB,
)
shape(
    "livekit-api-secret-in-livekit-yaml",
    """
    port: 7880
    rtc:
      tcp_port: 7881
    keys:
      API§hex8§: §S§
    """,
    S=LIVEKIT,
)
shape(
    "mux-token-secret-in-upload-script-env-inline",
    """
    MUX_TOKEN_ID=§uuid§ MUX_TOKEN_SECRET=§S§ node scripts/upload-videos.mjs ./raw
    """,
    S=MUX_SECRET,
)
shape(
    "plivo-auth-token-in-php-client",
    """
    $client = new RestClient("MA§hex12§§hex8§", "§T§");
    $client->messages->create(["src" => "+14155550100", "dst" => "+14155550123", "text" => "hi"]);
    """,
    T=PLIVO,
)
shape(
    "telnyx-api-key-in-sip-trunk-script",
    """
    export TELNYX_API_KEY=§K§
    telnyx-cli phone-numbers list --filter[status]=active
    """,
    K=TELNYX,
)
shape(
    "azure-openai-key-in-semantic-kernel-appsettings",
    """
    {
      "AzureOpenAI": {
        "Endpoint": "https://acme-eastus2.openai.azure.com/",
        "ChatDeploymentName": "gpt-4o",
        "ApiKey": "§K§"
      }
    }
    """,
    K=AZURE_OPENAI,
)
shape(
    "azure-function-key-in-webhook-url-query",
    """
    Webhook: https://acme-ingest.azurewebsites.net/api/github-hook?code=§K§
    Content type: application/json
    """,
    K=AZ_FUNC,
)
shape(
    "google-oauth-access-token-in-gcloud-print-output",
    """
    $ gcloud auth print-access-token
    §T§
    $ curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://bigquery.googleapis.com/bigquery/v2/projects/acme-data/datasets
    """,
    T=YA29,
)
shape(
    "google-refresh-token-in-rclone-drive-section",
    """
    [gdrive]
    type = drive
    scope = drive
    token = {"access_token":"","token_type":"Bearer","refresh_token":"§T§","expiry":"§ts§"}
    """,
    T=GOOGLE_REFRESH,
)

# =============================================================================================================
# clean documents: look-alikes without a credential
# =============================================================================================================

cshape(
    "clean-agent-reads-dotenv-example-with-placeholders",
    """
    I read `.env.example`; it only lists the variables you need to fill in:

    ```
    OPENAI_API_KEY=sk-...your-key-here...
    DATABASE_URL=postgresql://USER:PASSWORD@localhost:5432/app
    SENTRY_DSN=
    ```

    None of them are set to real values, so copy it to `.env` and fill them in.
    """,
)
cshape(
    "clean-agent-summary-of-config-with-secret-refs-only",
    """
    The deployment reads every credential from the secret store; the manifest only references them:

    - `DB_PASSWORD` → `secretKeyRef: {name: api-db, key: password}`
    - `STRIPE_KEY` → `secretKeyRef: {name: stripe, key: secret}`
    - `LOG_LEVEL` → `info` (plain)

    Nothing sensitive is inlined, so the manifest is safe to commit.
    """,
)
cshape(
    "clean-agent-plan-mentions-rotating-password-without-value",
    """
    ## Plan
    1. Generate a new password for `svc-backup` with the password manager (32 chars, symbols on).
    2. Store it in Vault at `secret/infra/svc-backup` — do not paste it into chat.
    3. Update the Veeam job credentials from Vault and run a test backup.
    4. Revoke the old password.
    """,
)
cshape(
    "clean-git-log-oneline-with-shas",
    """
    $ git log --oneline -5
    §short§ fix: retry webhook delivery on 502
    §short2§ chore(deps): bump axios from 1.7.7 to 1.8.2
    §short§ feat: add CSV export for invoices
    §short2§ docs: describe the rotation runbook
    §short§ refactor: move auth middleware
    """,
)
cshape(
    "clean-sha256sums-file-for-release",
    """
    §sha256§  acme-cli_§ver§_linux_amd64.tar.gz
    §sha256b§  acme-cli_§ver§_darwin_arm64.tar.gz
    """,
)
cshape(
    "clean-docker-image-digest-pull-output",
    """
    $ docker pull ghcr.io/acme/api:§ver§
    §ver§: Pulling from acme/api
    Digest: sha256:§sha256§
    Status: Downloaded newer image for ghcr.io/acme/api:§ver§
    """,
)
cshape(
    "clean-ssh-ed25519-public-key-authorized-keys",
    """
    # ~/.ssh/authorized_keys
    ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI§pk§ §email§
    """,
    pk=B64(32),
)
cshape(
    "clean-wireguard-peer-section-public-key-only",
    """
    [Peer]
    # laptop-§first§
    PublicKey = §pk§
    AllowedIPs = 10.8.0.§n§/32
    PersistentKeepalive = 25
    """,
    pk=B64(32),
)
cshape(
    "clean-pem-certificate-not-key",
    """
    -----BEGIN CERTIFICATE-----
    MIIDdzCCAl+gAwIBAgIU§c1§
    §c2§
    §c3§
    -----END CERTIFICATE-----
    """,
    c1=B64(33),
    c2=B64(48),
    c3=B64(30),
)
cshape(
    "clean-age-recipient-public-key-in-sops-yaml",
    """
    creation_rules:
      - path_regex: secrets/.*\\.yaml$
        age: age1§r§
    """,
    r=lambda r: chars(r, _BECH, 58),
)
cshape(
    "clean-sops-encrypted-yaml-ciphertext",
    """
    db_password: ENC[AES256_GCM,data:§c§,iv:§iv§,tag:§tag§,type:str]
    sops:
        age:
            - recipient: age1§r§
        lastmodified: "§ts§"
        version: 3.9.4
    """,
    c=B64(18),
    iv=B64(32),
    tag=B64(16),
    r=lambda r: chars(r, _BECH, 58),
)
cshape(
    "clean-ansible-vault-encrypted-blob",
    """
    smtp_password: !vault |
              $ANSIBLE_VAULT;1.1;AES256
              §h1§
              §h2§
              §h3§
    """,
    h1=lambda r: r.randbytes(40).hex()[:80],
    h2=lambda r: r.randbytes(40).hex()[:80],
    h3=lambda r: r.randbytes(20).hex(),
)
cshape(
    "clean-bcrypt-and-argon2-hashes-in-users-table-dump",
    """
    id | email                 | password_hash
    ---+-----------------------+---------------------------------------------------------------
     1 | §email§ | $2b$12$§s1§
     2 | §email§ | $argon2id$v=19$m=65536,t=3,p=4$§s2§$§s3§
    """,
    s1=lambda r: chars(r, _AN + "./", 53),
    s2=B64U(16),
    s3=B64U(32),
)
cshape(
    "clean-masked-key-echo-in-cli-status",
    """
    $ acme auth status
    Logged in as §email§
    API key: sk-...§hex8§ (created §day§)
    Scopes: read, write
    """,
)
cshape(
    "clean-github-actions-log-with-masked-secrets",
    """
    Run ./deploy.sh
      env:
        DEPLOY_TOKEN: ***
        AWS_REGION: eu-west-1
    + curl -H 'Authorization: Bearer ***' https://deploy.§host§/api/releases
    {"status":"queued","id":"§uuid§"}
    """,
)
cshape(
    "clean-token-usage-counts-from-llm-response",
    """
    {"id":"msg_01§hex12§","model":"claude-sonnet-4-5","usage":{"input_tokens":§tok§,"output_tokens":§tok§,"cache_read_input_tokens":§n3§},"stop_reason":"end_turn"}
    """,
)
cshape(
    "clean-openai-usage-dashboard-export-csv",
    """
    date,model,requests,prompt_tokens,completion_tokens,cost_usd
    §day§,gpt-4.1-mini,§n3§,§n3§,§n3§,1.84
    §day§,text-embedding-3-small,§n3§,§n3§,0,0.12
    """,
)
cshape(
    "clean-uuid-request-ids-in-access-log",
    """
    §ts§ req_id=§uuid§ method=GET path=/api/v1/items status=200 dur_ms=§ms§
    §ts2§ req_id=§uuid2§ method=POST path=/api/v1/items status=201 dur_ms=§ms§
    """,
)
cshape(
    "clean-otel-trace-and-span-ids-in-json-log",
    """
    {"ts":"§ts§","level":"info","msg":"order created","trace_id":"§trace§","span_id":"§span§","order_id":"ord_§hex12§"}
    """,
)
cshape(
    "clean-stripe-publishable-key-in-frontend-env",
    """
    # publishable keys are meant for the browser
    NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_live_§pk§
    NEXT_PUBLIC_APP_NAME=Acme Store
    """,
    pk=AN(99),
)
cshape(
    "clean-sentry-dsn-public-in-browser-sdk-init",
    """
    Sentry.init({
      dsn: "https://§hex12§§hex12§§hex8§@o§n3§.ingest.us.sentry.io/§n3§",
      tracesSampleRate: 0.1,
    });
    """,
)
cshape(
    "clean-firebase-web-config-public-fields",
    """
    // Firebase web config: these identifiers are public by design; access is enforced by security rules.
    const firebaseConfig = {
      authDomain: "acme-app.firebaseapp.com",
      projectId: "acme-app",
      storageBucket: "acme-app.appspot.com",
      messagingSenderId: "§n3§§n3§",
      appId: "1:§n3§§n3§:web:§hex12§",
    };
    """,
)
cshape(
    "clean-k8s-secret-manifest-with-secretkeyref-and-placeholders",
    """
    env:
      - name: POSTGRES_PASSWORD
        valueFrom:
          secretKeyRef:
            name: pg-credentials
            key: password
      - name: POSTGRES_DB
        value: app
    """,
)
cshape(
    "clean-compose-with-env-interpolation",
    """
    services:
      db:
        image: postgres:17
        environment:
          POSTGRES_USER: app
          POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}
          POSTGRES_DB: app
    """,
)
cshape(
    "clean-terraform-variable-sensitive-no-default",
    """
    variable "db_password" {
      type        = string
      sensitive   = true
      description = "Master password for the RDS instance; pass with TF_VAR_db_password."
    }
    """,
)
cshape(
    "clean-github-workflow-using-secrets-context",
    """
    - name: Publish
      run: npm publish --provenance --access public
      env:
        NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}
    """,
)
cshape(
    "clean-prose-password-policy-doc",
    """
    ## Password policy

    Passwords must be at least 14 characters long and must not appear in known breach corpora. We do not
    require special characters; a passphrase of four or more random words is encouraged. Passwords are
    hashed with Argon2id (m=64 MiB, t=3, p=4) and never logged.
    """,
)
cshape(
    "clean-chat-asking-for-password-refused",
    """
    §first§: can you send me the prod db password?
    §first2§: not over chat — request access in the access portal and it'll show up in your vault
    §first§: ok, filed ACCESS-§ticket§
    """,
)
cshape(
    "clean-chat-german-passwort-zuruecksetzen-link",
    """
    §first§: Ich habe mein Passwort vergessen.
    §first2§: Kein Problem, nutze „Passwort vergessen" auf der Login-Seite, der Link ist 30 Minuten gültig.
    """,
)
cshape(
    "clean-chat-spanish-contrasena-por-gestor",
    """
    §first§: ¿me pasas la contraseña del servidor?
    §first2§: Está en Bitwarden, colección "Infra". Te di acceso hace un momento.
    """,
)
cshape(
    "clean-chat-japanese-password-policy-question",
    """
    §first§: パスワードは何文字以上必要ですか？
    §first2§: 12文字以上で、英数字と記号を混ぜてください。チャットには書かないでくださいね。
    """,
)
cshape(
    "clean-email-password-reset-notification",
    """
    Subject: Your password was changed

    Hi §first§,
    The password for your account §email§ was changed on §day§ at §hms§ UTC.
    If this wasn't you, reset it at https://account.§host§/reset and contact support.
    """,
)
cshape(
    "clean-ticket-access-request-no-values",
    """
    ACCESS-§ticket§: Read access to analytics warehouse
    Requester: §email§
    Justification: quarterly churn report
    Approver: §first§ (approved §day§)
    Provisioning: role analyst_ro granted via Okta group; credentials issued through Vault dynamic secrets.
    """,
)
cshape(
    "clean-vault-kv-metadata-output",
    """
    $ vault kv metadata get secret/apps/reports
    ========== Metadata ==========
    Key                     Value
    ---                     -----
    created_time            §ts§
    current_version         7
    max_versions            0
    updated_time            §ts2§
    """,
)
cshape(
    "clean-aws-sts-caller-identity-assumed-developer-role",
    """
    $ aws sts get-caller-identity
    {
        "UserId": "AROA§uid§:§user§",
        "Account": "§acct§",
        "Arn": "arn:aws:sts::§acct§:assumed-role/Developer/§user§"
    }
    """,
    uid=lambda r: chars(r, _UPA, 17),
)
cshape(
    "clean-kubectl-get-secrets-list-no-data",
    """
    $ kubectl get secrets -n payments
    NAME                  TYPE                             DATA   AGE
    stripe                Opaque                           2      41d
    pg-credentials        Opaque                           3      41d
    regcred               kubernetes.io/dockerconfigjson   1      200d
    """,
)
cshape(
    "clean-jwt-header-only-discussion",
    """
    The token's header decodes to `{"alg":"RS256","kid":"§hex12§","typ":"JWT"}`. The `kid` tells you which
    key from https://auth.§host§/.well-known/jwks.json verifies the signature; fetch the JWKS and match it.
    """,
)
cshape(
    "clean-jwks-json-public-keys",
    """
    {"keys":[{"kty":"RSA","use":"sig","kid":"§hex12§","alg":"RS256","e":"AQAB","n":"§n§"}]}
    """,
    n=B64U(256),
)
cshape(
    "clean-gpg-list-keys-output",
    """
    $ gpg --list-keys §email§
    pub   ed25519 2025-06-01 [SC] [expires: 2027-06-01]
          §fp§
    uid           [ultimate] §first§ <§email§>
    sub   cv25519 2025-06-01 [E] [expires: 2027-06-01]
    """,
    fp=lambda r: r.randbytes(20).hex().upper(),
)
cshape(
    "clean-npm-lockfile-integrity-hashes",
    """
    "node_modules/zod": {
      "version": "3.24.1",
      "resolved": "https://registry.npmjs.org/zod/-/zod-3.24.1.tgz",
      "integrity": "sha512-§i§",
      "license": "MIT"
    }
    """,
    i=B64(64),
)
cshape(
    "clean-cargo-lock-serde-package-entry-checksum",
    """
    [[package]]
    name = "serde"
    version = "1.0.217"
    source = "registry+https://github.com/rust-lang/crates.io-index"
    checksum = "§sha256§"
    """,
)
cshape(
    "clean-go-sum-lines",
    """
    github.com/google/uuid v1.6.0 h1:§h§=
    github.com/google/uuid v1.6.0/go.mod h1:§h2§=
    """,
    h=lambda r: b64(r, 32)[:43],
    h2=lambda r: b64(r, 32)[:43],
)
cshape(
    "clean-subresource-integrity-script-tag",
    """
    <script src="https://cdn.jsdelivr.net/npm/htmx.org@2.0.4/dist/htmx.min.js"
            integrity="sha384-§i§" crossorigin="anonymous"></script>
    """,
    i=B64(48),
)
cshape(
    "clean-csp-nonce-header",
    """
    Content-Security-Policy: default-src 'self'; script-src 'self' 'nonce-§n§'; object-src 'none'
    """,
    n=B64(16),
)
cshape(
    "clean-etag-and-cache-headers",
    """
    HTTP/2 200
    etag: W/"§hex12§§hex12§"
    cache-control: public, max-age=31536000, immutable
    x-request-id: §uuid§
    """,
)
cshape(
    "clean-s3-object-listing-with-version-ids",
    """
    {"Key":"exports/§day§/orders.parquet","VersionId":"§v§","ETag":"\\"§md5§\\"","Size":§n3§}
    """,
    v=lambda r: chars(r, _AN + "._", 32),
)
cshape(
    "clean-feature-flag-ids-and-hashes",
    """
    flags:
      checkout_v2: { id: "§uuid§", rollout: 25, salt: "checkout_v2" }
      search_v3:   { id: "§uuid2§", rollout: 100 }
    """,
)
cshape(
    "clean-ci-cache-keys-with-hashes",
    """
    Cache hit for key: pip-Linux-§sha256§
    Cache saved with key: node-modules-§sha256b§
    """,
)
cshape(
    "clean-test-fixture-fake-credentials-explicitly-dummy",
    """
    # tests/fixtures/settings.py — dummy values, never valid anywhere
    DATABASE_URL = "sqlite:///:memory:"
    SECRET_KEY = "x" * 50  # dummy, only for the test settings
    STRIPE_API_KEY = ""
    """,
)
cshape(
    "clean-redacted-incident-timeline",
    """
    §hms§ alert: secret scanner flagged `config/prod.yml` (AWS key `AKIA…[redacted]`)
    §hms2§ key deactivated in IAM; CloudTrail shows no use outside our VPC
    §hms2§ new key issued via role assumption; static keys removed from repo history
    """,
)
cshape(
    "clean-agent-transcript-refuses-to-print-key",
    """
    **User:** print the value of STRIPE_SECRET_KEY from the env

    **Assistant:** I can confirm it's set (it starts with `sk_live_` and is 107 characters long), but I won't
    print the full value into the transcript. If you need it, read it directly from your secret manager.
    """,
)
cshape(
    "clean-agent-tool-call-with-env-var-name-not-value",
    """
    {"type":"function_call","name":"run_shell","call_id":"§callid§","arguments":"{\\"command\\":\\"curl -H \\\\\\"Authorization: Bearer $GITHUB_TOKEN\\\\\\" https://api.github.com/rate_limit\\"}"}
    """,
)
cshape(
    "clean-mcp-config-with-env-references",
    """
    {
      "mcpServers": {
        "github": {
          "command": "github-mcp-server",
          "args": ["stdio"],
          "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}" }
        }
      }
    }
    """,
)
cshape(
    "clean-env-tpl-for-op-run-with-op-uri-references",
    """
    # .env.tpl (resolved by `op run --env-file=.env.tpl -- npm start`)
    DATABASE_URL=op://Engineering/app-db/connection-string
    OPENAI_API_KEY=op://Engineering/openai/credential
    """,
)
cshape(
    "clean-aws-ssm-parameter-arn-references",
    """
    "secrets": [
      {"name": "DB_PASSWORD", "valueFrom": "arn:aws:ssm:eu-west-1:§acct§:parameter/prod/api/db_password"},
      {"name": "JWT_SECRET", "valueFrom": "arn:aws:secretsmanager:eu-west-1:§acct§:secret:prod/jwt-§hex8§"}
    ]
    """,
)
cshape(
    "clean-nginx-config-no-secrets",
    """
    server {
        listen 443 ssl http2;
        server_name app.§host§;
        ssl_certificate     /etc/letsencrypt/live/app/fullchain.pem;
        ssl_certificate_key /etc/letsencrypt/live/app/privkey.pem;
        location / { proxy_pass http://127.0.0.1:§port§; }
    }
    """,
)
cshape(
    "clean-postgres-conf-tuning",
    """
    shared_buffers = 4GB
    effective_cache_size = 12GB
    work_mem = 64MB
    password_encryption = scram-sha-256
    ssl = on
    """,
)
cshape(
    "clean-pg-hba-conf-auth-methods",
    """
    # TYPE  DATABASE  USER      ADDRESS        METHOD
    host    all       all       10.0.0.0/8     scram-sha-256
    hostssl replication replicator §ip§/32  scram-sha-256
    local   all       postgres                 peer
    """,
)
cshape(
    "clean-sshd-config-password-auth-disabled",
    """
    PasswordAuthentication no
    PermitRootLogin prohibit-password
    PubkeyAuthentication yes
    AuthorizedKeysFile .ssh/authorized_keys
    """,
)
cshape(
    "clean-mikrotik-export-hide-sensitive",
    """
    # 2026-03-01 by RouterOS 7.17 (hide-sensitive)
    /interface wifi security
    add authentication-types=wpa2-psk,wpa3-psk name=home
    /ip dhcp-server network
    add address=192.168.88.0/24 gateway=192.168.88.1
    """,
)
cshape(
    "clean-wifi-qr-description-without-key",
    """
    The guest Wi-Fi QR code on the poster encodes the network name "Acme-Guest" and WPA2; scan it with your
    phone camera. The key rotates weekly and is shown on the lobby screen.
    """,
)
cshape(
    "clean-bitcoin-address-and-txid",
    """
    Payment received:
      address: bc1q§a§
      txid: §t§
      confirmations: 6
    """,
    a=lambda r: chars(r, _BECH, 38),
    t=lambda r: r.randbytes(32).hex(),
)
cshape(
    "clean-ethereum-public-address-and-contract",
    """
    Deployer: 0x§a§
    Contract: 0x§c§ (verified on Etherscan)
    Gas used: §n3§
    """,
    a=lambda r: r.randbytes(20).hex(),
    c=lambda r: r.randbytes(20).hex(),
)
cshape(
    "clean-totp-setup-prose-without-seed",
    """
    To enable two-factor authentication, scan the QR code in Settings → Security with an authenticator app,
    then enter the 6-digit code it shows. Save the recovery codes offered afterwards in your password manager.
    """,
)
cshape(
    "clean-license-key-format-description",
    """
    License keys have the form XXXXX-XXXXX-XXXXX-XXXXX-XXXXX (25 characters, Crockford base32). Enter yours
    under Help → Activate. Lost keys can be re-sent from the customer portal.
    """,
)
cshape(
    "clean-base64-image-data-uri",
    """
    <img alt="logo" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ§d§">
    """,
    d=B64(60),
)
cshape(
    "clean-random-session-storage-keys-names-only",
    """
    localStorage keys: ["theme", "sidebar.collapsed", "recent.projects", "onboarding.step"]
    cookies: _ga, _gid, consent (no auth cookies on marketing pages)
    """,
)
cshape(
    "clean-k8s-serviceaccount-projected-token-config",
    """
    volumes:
      - name: vault-token
        projected:
          sources:
            - serviceAccountToken:
                path: token
                expirationSeconds: 3600
                audience: vault
    """,
)
cshape(
    "clean-helm-values-existing-secret-pattern",
    """
    auth:
      existingSecret: redis-auth
      existingSecretPasswordKey: redis-password
    replica:
      replicaCount: 3
    """,
)
cshape(
    "clean-python-code-reading-env-without-defaults",
    """
    import os

    api_key = os.environ["ANTHROPIC_API_KEY"]  # fail fast if unset
    client = anthropic.Anthropic(api_key=api_key)
    """,
)
cshape(
    "clean-go-code-with-flag-for-token-file",
    """
    tokenFile := flag.String("token-file", "/run/secrets/api-token", "path to the API token")
    flag.Parse()
    tok, err := os.ReadFile(*tokenFile)
    """,
)
cshape(
    "clean-password-generator-policy-json-length-24",
    """
    {"length": 24, "uppercase": true, "lowercase": true, "numbers": true, "special": true, "avoidAmbiguous": true, "minNumbers": 2}
    """,
)
cshape(
    "clean-hibp-range-query-response",
    """
    $ curl -s https://api.pwnedpasswords.com/range/§h5§ | head -3
    §h1§:3
    §h2§:1
    §h3§:12
    """,
    h5=lambda r: r.randbytes(3).hex().upper()[:5],
    h1=lambda r: r.randbytes(18).hex().upper()[:35],
    h2=lambda r: r.randbytes(18).hex().upper()[:35],
    h3=lambda r: r.randbytes(18).hex().upper()[:35],
)
cshape(
    "clean-kdf-parameters-and-salt-in-vault-header",
    """
    {"version": 2, "kdf": "scrypt", "n": 32768, "r": 8, "p": 1, "salt": "§s§", "cipher": "xchacha20poly1305", "nonce": "§nn§", "ciphertext": "§c§"}
    """,
    s=B64(16),
    nn=B64(24),
    c=B64(96),
)
cshape(
    "clean-agent-explains-hash-not-password",
    """
    The string in `users.csv` column `pw` (`$2y$10$…`) is a bcrypt hash, not the password itself — you can't
    recover the password from it. To let the user in, trigger a reset instead.
    """,
)
cshape(
    "clean-runbook-rotation-steps-no-values",
    """
    ### Rotate the Postgres app password
    1. `vault write database/rotate-role/app`
    2. Wait for the pods to pick up the new lease (`kubectl rollout restart deploy/api`).
    3. Check `pg_stat_activity` for connections from the old role and terminate them.
    """,
)
cshape(
    "clean-chat-korean-otp-explained-no-code",
    """
    §first§: 인증번호가 안 와요
    §first2§: 문자 수신 차단을 확인해 보세요. 인증번호는 절대 다른 사람에게 알려주시면 안 됩니다.
    """,
)
cshape(
    "clean-email-french-reinitialisation-sans-mot-de-passe",
    """
    Objet : Réinitialisation de votre mot de passe

    Bonjour §first§, cliquez sur le lien ci-dessous pour choisir un nouveau mot de passe. Ce lien expire
    dans une heure. Nous ne vous demanderons jamais votre mot de passe par e-mail.
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
