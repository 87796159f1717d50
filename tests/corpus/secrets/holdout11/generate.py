"""The HOLDOUT11 part of the secret corpus: an eleventh blind part, written after HOLDOUT to HOLDOUT10.

Written blind: its author read only the `Document` type, the structure test of the blind parts and the earlier
generators (to copy their structure and to keep away from their tools, vendors, formats, languages, shapes and
values); never the detector, its rules, its docs, its tests, its state or its figures, and no document was run
through a detector or changed after one. Every document copies what a real tool, config file, log, agent,
terminal session, CI run, HTTP trace or person writes, with tools, vendors, formats and languages the earlier
parts do not use:

- agents, MCP, LLM tooling and ML platforms: an OpenTelemetry Collector `debug` exporter span whose
  `gen_ai.tool.call.arguments` carry a DeepL key, an OpenLLMetry (Traceloop) console span with
  `traceloop.entity.input` (Novita), Codex CLI `config.toml` `[mcp_servers]` env (Neon), Gemini CLI
  settings.json MCP headers (Todoist), Warp MCP JSON (Raindrop), Junie mcp.json (Shortcut), ToolHive `thv run
  -e` (Webflow), supergateway in a systemd unit (Composio), a FastMCP stderr settings repr (Serper), `claude mcp
  add` of DBHub with a DSN, a Claude Code project JSONL where the user pastes a key (Speechmatics), Vapi, Retell,
  Pipecat (Gladia), Hume, PromptLayer in a review comment, a devcontainer.json `containerEnv` (AgentOps),
  Humanloop, pytest-env in pyproject (LangWatch), fly.toml `[env]` (Lunary), OpenPipe, Zep in an agent's Read
  tool output, Arcade, Browserless in Puppeteer, Hyperbrowser, Dust, Relevance AI, Inngest through `helm --set`,
  Trigger.dev, a Dify README, Chroma Cloud, Zilliz, Unstructured, Stability in a Makefile, Runway, SearchApi,
  ClearML, MLflow basic-auth.ini, DVC config.local, Label Studio, Roboflow, Tabby, mods (Lambda), aichat
  (Writer), `llama-server --api-key`, tabbyAPI, a CodeRabbit review quoting a Novu key, Khoj;
- shells, terminals, secret stores and security tools: a PowerShell `Start-Transcript` log, a util-linux
  `script` typescript (mysqladmin), `tmux capture-pane` (rabbitmqadmin), a BuildKit plain-progress log (Sidekiq
  Pro gem credentials), `kcadm.sh` under `set -x`, `bw unlock` (BW_SESSION), `secret-tool lookup`, `tea login
  add`, dart pub-tokens.json, cabal config, .condarc token channels, duplicity in cron, rustic.toml, DB2 CLP,
  hdbsql, Teradata BTEQ, vsql, maxctrl, ProxySQL, asadm, evil-winrm, impacket-psexec, wpscan, shodan, censys,
  nmap `--script-args`, `john --show`, sqlmap, `systemd-creds encrypt`, `ssh-keygen -p -P -N`, `usermod -p
  $(openssl passwd)`, smbpasswd, davfs2 secrets, iwd `.psk`, `docker secret create`;
- CI/CD, deploy and publishing: Dagger `SetSecret`, Skaffold `setValues`, Spacelift in a workflow env, CapRover,
  Capistrano, Fabric, Qodana, Mend unified agent, Gitpod `gp env` (Font Awesome), Buddy.Works, the Laravel Forge
  CLI, Clever Cloud, Scalingo, Qovery, devpi, Nexus `admin.password`, ChartMuseum, Leiningen profiles.clj, Unity
  batchmode, an App Store Connect `.p8` cat in a CI log, electron-builder, Tauri signing, Chocolatey, Snapcraft
  export-login, ovsx, JetBrains Marketplace `perm:` token, itch.io butler, steamcmd;
- clouds, DNS and hosting: Contabo `cntb`, Equinix Metal, a Selectel openrc, Xen Orchestra `xo-cli`, oVirt,
  Nutanix Prism, Hetzner Robot, netcup DNS, lego with Gandi, Namecheap, DuckDNS, GoDaddy `sso-key`, Hurricane
  Electric dyndns;
- databases, warehouses and queues: kcat SASL, `confluent api-key create`, ysqlsh, Dragonfly, ActiveMQ Artemis,
  Solace JNDI, Dremio, Firebolt, Informix, Exasol, Druid, Solr, vmagent, ipython-sql with Timescale, Prisma
  Accelerate, Crunchy Bridge `cb uri`;
- messaging, payments, observability and identity: Feishu bot webhook and sign secret, TextMagic, ClickSend,
  Termii, Loops, Courier, FCM legacy server key, Airship, Braze, Paytm, Cashfree, PhonePe, CCAvenue, BTCPay, LND
  macaroon, Tinkoff, WeChat Pay APIv3, Alipay, Redsys, SumUp, Lightstep in an OTel Collector config, Bugsnag,
  UptimeRobot, Cronitor, Amplitude, Optimizely, GrowthBook, Flagsmith, Dex, Descope, Cognito, Casdoor;
- game servers, home and self-hosted apps: Terraria, Project Zomboid, 7 Days to Die, OpenTTD, Don't Starve
  Together cluster token, Quake III, FHEM, PhotoPrism, Navidrome, Kodi, Radarr, Firefly III importer, BookStack,
  listmonk, NetBox, Checkmk, Wazuh, FreshRSS, wallabag, Stalwart;
- debug dumps and HTTP traces: a Django technical 500 page's local vars, Symfony VarDumper, Perl Data::Dumper,
  `strings` of a heap dump, `podman inspect`, `systemctl show -p Environment`, Swift `dump()`, a Haskell `Show`
  record, Traefik and Caddy JSON access logs, k6, a JMeter .jmx, a Hoppscotch export, websocat, a CloudFront log;
- people in languages and scripts the earlier parts do not use, each through a carrier they do not use: Igbo
  (TikTok DM export, "okwuntughe"), Xhosa (YouTube live chat JSON, "igama lokugqitha"), Sesotho (phpBB BBCode,
  "phasewete"), Shona (a Usenet article, "pasiwedhi"), Chichewa (MediaWiki talk page, "mawu achinsinsi"), Wolof
  (JMAP Email/get, "baatu jàll"), Tigrinya (RTF with `\\u` escapes), Assamese (ODT content.xml, "পাছৱৰ্ড"),
  Sindhi (Simplenote export, "پاسورڊ"), Samoan (GitHub issue_comment webhook, "upu faʻalilolilo"), Tongan
  (Linear comment webhook, "lea fakapulipuli"), Hawaiian (Apple Notes HTML, "ʻŌlelo huna"), Quechua (Basecamp
  comment, "pakasqa simi"), Guarani (ClickUp comment, "Ñe'ẽñemi"), Bashkir (Zoho Cliq, "серһүҙ"), Chuvash
  (Chatwoot, "вӑрттӑн сӑмах"), Tok Pisin (Drive comments.list, "paswot"), Kabyle in Tifinagh and Latin (a Misskey
  note, "awal uffir"), Low German (Jitsi chat, "Passwoort"), Luganda (a Pipermail archive, "ekigambo
  eky'ekyama"), Cebuano (Chatwork, "tago nga pulong").

Each document plants one or two values; every value appears verbatim on one line of its text and is 8
characters or more. Value forms: vendor prefixes none of the earlier parts use (napi_, ak_ (Composio), key_
(Retell, Runway), pl_, hl_sk_, sk-lw-, opk_, z_, arc_, hb_, signkey-prod-, tr_prod_, app- (Dify), ck-, auth_
(Tabby), secret_…_ (Lambda), tk-us-, qov_, perm:, cfsk_ma_prod_, pk_prod_ (Courier), AAAA…:APA91b (FCM), TL
(Termii), sup_sk_, secret_admin_, ser., K2 (Descope), 2: (Optimizely), u…- (UptimeRobot), pds-g^KU_ (Klei), a
DeepL `:fx` key), hex (Todoist, Webflow, Serper, Zilliz, Mend, Spacelift, Clever Cloud, Dragonfly, CCAvenue in
upper case, BTCPay, an LND macaroon, Navidrome, Radarr, NetBox, Amplitude, Casdoor, Cronitor, Loops, Namecheap,
Gandi), base64 (BW_SESSION, Confluent, Dremio, Lightstep, Redsys, a Tauri signing key, Snapcraft credentials,
basic pairs in FHEM and Caddy), base64url (Novita, Dex, Firebolt, Scalingo, dart pub, rustic), upper-case
letters and digits (Checkmk), UUIDs (Raindrop, Shortcut, Gladia, AgentOps, Lunary, Braze, PhonePe, Bugsnag,
Chocolatey, ovsx, Nexus, DuckDNS, a Feishu hook, ClickSend and Font Awesome in upper case), JWTs (RS256 Laravel
Forge and Firefly III, HS256 Prisma Accelerate, a JWT-like Qodana and Zep key), a one-line PKCS#8 Alipay key, a
`.p8` EC key body line, people's passwords (a word, digits and a mark; two words and digits; letters swapped for
digits and marks), generated passwords with symbols, short passwords of 8 to 12 characters, passphrases
(spaces, dashes, dots, underscores), and values inside URLs (userinfo, query, path), DSNs and libpq keyword
strings, escaped JSON, RTF, ODT and HTML (Django's `&#x27;` quoting), TOML, YAML, XML, INI, PHP, Perl, Clojure,
Haskell, Swift and Go as those formats write them.

Decisions: usernames, e-mail addresses, client ids (Cognito, Casdoor, Firebolt, wallabag, Cashfree), key ids and
access-key ids (ClearML access_key, Spacelift key id, Contabo client id, GoDaddy key, Amplitude API key, Airship
app key, BookStack token id, a Sidekiq Pro user name, censys api_id, Navidrome's Last.fm
API key), account, project, tenant, merchant and store ids, public keys by design (a Tauri minisign public key, a Flagsmith
client-side key, an Alipay public key, LND node pubkeys), hashes (NT hashes, bcrypt, PBKDF2), ciphertexts
(WeChat Pay notifications), request, trace, span, tool-call, order and session ids are not credentials; for a
`user:password` pair, a URL with userinfo or a DSN the planted value is the password; a base64 `user:password`
pair in a header or an attribute is planted as the base64 text; a PEM key is planted as its first body line;
the Feishu webhook's hook id is a credential (it alone lets anyone post); no document holds a credential value
beside the one or two it plants (masked echoes such as `****`, `[hidden]`, `REDACTED` and `••••` are not
values).

The clean documents hold no credential but plenty of look-alikes: an OTel span with token usage only, MCP
configs that pass env names or `$VAR` references, a `tools/list` schema with an `auth_key` parameter, an agent
refusing to echo a key, ToolHive's hidden prompt, a PowerShell `Read-Host -AsSecureString`, `bw status`, `john`
with nothing cracked, secretsdump NT hashes, Confluent key listings, Helm `existingSecret`, `${{ secrets.X }}`,
App Store Connect key and issuer ids, a Tauri public key, a removed Nexus password file, a DuckDNS doc
placeholder, GoDaddy records, kcat metadata, LND pubkeys, Cashfree order and session ids, an Alipay public key,
a Cognito client without a secret, a Flagsmith client-side key, a masked Radarr key, AdGuard bcrypt, a
qBittorrent PBKDF2 hash, a Terraria config without a password, RCON docs, a Django 500 page with masked
settings, a Traefik log with `REDACTED`, a k6 summary, a CloudFront log, an Igbo and a Samoan notice, a Tigrinya
RTF policy, "token budget / passkey / bypass_cache / secretary" prose, pip hashes, lego docs, a WeChat Pay
ciphertext and a cron line that reads its key from a file.

SEED = 1732050. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
clean ones."""

from __future__ import annotations

import base64
import json
import random
import string
import textwrap
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 1732050

_LETTERS_DIGITS = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

_VOCAB = tuple(
    """
    anchovy bramble cobalt dormouse ember fennel glacier hickory indigo jackal kelp lupine mistral narwhal
    oregano pelican quince rhubarb sorrel tundra uplift vortex willow yucca zinnia acorn bison cactus dune
    eucalyptus fjord gannet hazel ibis jetty koala larch mango nettle osprey pumice rowan sable trellis
    tulip violet wren basalt clover driftwood fable gecko hemlock ivory kiwi lichen maple
    """.split()
)

Built = tuple[str, tuple[str, ...]]
CredentialMaker = Callable[[random.Random], Built]
CleanMaker = Callable[[random.Random], str]
_WITH_SECRET: list[tuple[str, CredentialMaker]] = []
_WITHOUT_SECRET: list[tuple[str, CleanMaker]] = []


def _shape(name: str) -> Callable[[CredentialMaker], CredentialMaker]:
    """Register a maker of one document that plants one or two values."""

    def keep(maker: CredentialMaker) -> CredentialMaker:
        _WITH_SECRET.append((name, maker))
        return maker

    return keep


def _clean_shape(name: str) -> Callable[[CleanMaker], CleanMaker]:
    """Register a maker of one document without any credential."""

    def keep(maker: CleanMaker) -> CleanMaker:
        _WITHOUT_SECRET.append((name, maker))
        return maker

    return keep


def _fill(template: str, **parts: object) -> str:
    """Dedent `template`, write a tab for each `‹tab›`, then write each part where its `‹name›` mark stands."""
    text = textwrap.dedent(template).strip("\n") + "\n"
    text = text.replace("‹tab›", "\t")
    for name, part in parts.items():
        text = text.replace(f"‹{name}›", str(part))
    if "‹" in text:
        raise ValueError(f"unfilled mark in {text!r}")
    return text


def _pick(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def _hexs(rng: random.Random, length: int, upper: bool = False) -> str:
    while True:
        value = _pick(rng, _HEX, length)
        if any(c.isalpha() for c in value) and any(c.isdigit() for c in value):
            return value.upper() if upper else value


def _alnum(rng: random.Random, length: int) -> str:
    """Letters and digits, with at least one digit, one upper and one lower case letter."""
    while True:
        value = _pick(rng, _LETTERS_DIGITS, length)
        if any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value):
            return value


def _lower_alnum(rng: random.Random, length: int) -> str:
    while True:
        value = _pick(rng, _LOWER_DIGITS, length)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _upper_alnum(rng: random.Random, length: int) -> str:
    while True:
        value = rng.choice(string.ascii_uppercase) + _pick(rng, _UPPER_DIGITS, length - 1)
        if any(c.isdigit() for c in value):
            return value


def _b64s(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _b64u(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _b32(rng: random.Random, length: int) -> str:
    while True:
        value = _pick(rng, _B32, length)
        if any(c.isdigit() for c in value):
            return value


def _b58(rng: random.Random, length: int = 22) -> str:
    return _pick(rng, "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", length)


def _guid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _digits(rng: random.Random, length: int) -> str:
    return str(rng.randint(1, 9)) + _pick(rng, string.digits, length - 1)


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def _stamp(rng: random.Random) -> str:
    return f"{_date(rng)}T{_time(rng)}.{rng.randint(0, 999):03d}Z"


def _epoch(rng: random.Random) -> int:
    return rng.randint(1_767_300_000, 1_797_000_000)


def _ip(rng: random.Random) -> str:
    return f"172.{rng.randint(16, 31)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def _human(rng: random.Random, marks: str = "!.?$#*") -> str:
    """What a person picks: a capitalised word, a year or a number, a mark."""
    word = rng.choice(_VOCAB)
    number = rng.randint(1970, 2026) if rng.random() < 0.5 else rng.randint(10, 999)
    value = word[0].upper() + word[1:] + str(number) + rng.choice(marks)
    return value if len(value) >= 8 else word.capitalize() + str(number).zfill(4) + value[-1]


def _human_plain(rng: random.Random) -> str:
    """A person's password without a mark: two words and a number, or a word and four digits."""
    first = rng.choice(_VOCAB)
    if rng.random() < 0.5:
        return first + rng.choice(_VOCAB).capitalize() + str(rng.randint(10, 99))
    return first.capitalize() + str(rng.randint(1000, 9999))


def _leet(rng: random.Random) -> str:
    """A person's password with letters swapped for digits and marks: `P@ssw0rd`-like, from a word."""
    word = rng.choice([w for w in _VOCAB if len(w) >= 6])
    swapped = word.replace("a", "@").replace("o", "0").replace("e", "3").replace("i", "1").replace("s", "$")
    return swapped[0].upper() + swapped[1:] + str(rng.randint(10, 999))


def _strong(rng: random.Random, length: int, marks: str = "!#$%&*+-=?@^_~") -> str:
    """A generator's password: letters, digits and marks (each kind at least once), no leading mark."""
    while True:
        value = rng.choice(string.ascii_letters) + _pick(rng, _LETTERS_DIGITS + marks + marks, length - 1)
        if (
            any(c in marks for c in value)
            and any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


def _brief(rng: random.Random, low: int = 8, high: int = 12) -> str:
    """A short generated password, 8 to 12 letters and digits with every kind."""
    return _alnum(rng, rng.randint(low, high))


def _passphrase(rng: random.Random, words: int, sep: str = " ") -> str:
    return sep.join(rng.sample(_VOCAB, words))


def _segment(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt(rng: random.Random, header: dict, claims: dict, signature_bytes: int = 32) -> str:
    return f"{_segment(header)}.{_segment(claims)}.{_b64u(rng, signature_bytes)}"


def _pem_line(rng: random.Random) -> str:
    """The first body line of a PKCS#8 private key: 64 base64 characters, `MII…` as such keys begin."""
    return ("MIIEv" + _b64s(rng, 48))[:64]


def _as_json(obj: object, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent)


def _name(rng: random.Random) -> str:
    return rng.choice(["adaeze", "bongani", "chayton", "dilnoza", "esi", "fetu", "gulnara", "haunani", "ilse",
                       "jabu", "kalani", "lwazi", "makoa", "nandi", "otieno", "paora", "rosalind", "sefa", "tiva"])


# --------------------------------------------------------------------------------------------------------
# Agents, MCP, LLM tooling and ML platforms
# --------------------------------------------------------------------------------------------------------


@_shape("otelcol-debug-exporter-gen-ai-tool-call-arguments-deepl")
def _otelcol_debug(rng: random.Random) -> Built:
    key = _guid(rng) + ":fx"
    args = json.dumps({"text": "Bitte bestätigen Sie den Termin.", "target_lang": "EN-GB", "auth_key": key})
    text = _fill(
        """
        ‹stamp›‹tab›info‹tab›Traces‹tab›{"otelcol.component.id": "debug", "resource spans": 1, "spans": 1}
        ResourceSpans #0
        Resource SchemaURL: https://opentelemetry.io/schemas/1.26.0
        Resource attributes:
             -> service.name: Str(translator-agent)
        ScopeSpans #0
        InstrumentationScope opentelemetry.instrumentation.openai_agents 0.4.1
        Span #0
            Trace ID       : ‹trace›
            Parent ID      : ‹parent›
            ID             : ‹span›
            Name           : execute_tool translate
            Kind           : Internal
        Attributes:
             -> gen_ai.operation.name: Str(execute_tool)
             -> gen_ai.tool.name: Str(translate)
             -> gen_ai.tool.call.id: Str(call_‹call›)
             -> gen_ai.tool.call.arguments: Str(‹args›)
        """,
        stamp=_stamp(rng), trace=_hexs(rng, 32), parent=_hexs(rng, 16), span=_hexs(rng, 16), call=_alnum(rng, 24),
        args=args,
    )
    return text, (key,)


@_shape("openllmetry-traceloop-span-entity-input-novita")
def _openllmetry(rng: random.Random) -> Built:
    key = "sk_" + _b64u(rng, 32)
    entity_input = json.dumps({"args": [], "kwargs": {"base_url": "https://api.novita.ai/v3/openai", "api_key": key,
                                                      "model": "meta-llama/llama-3.3-70b-instruct"}})
    span = {"name": "build_client.task", "context": {"trace_id": "0x" + _hexs(rng, 32), "span_id": "0x" + _hexs(rng, 16)},
            "kind": "SpanKind.INTERNAL", "attributes": {"traceloop.span.kind": "task",
                                                        "traceloop.entity.name": "build_client",
                                                        "traceloop.entity.input": entity_input,
                                                        "traceloop.workflow.name": "support_triage"},
            "resource": {"attributes": {"service.name": "triage-worker", "telemetry.sdk.name": "opentelemetry"}}}
    return "# ConsoleSpanExporter (Traceloop.init(exporter=ConsoleSpanExporter()))\n" + _as_json(span, 4) + "\n", (key,)


@_shape("codex-cli-config-toml-mcp-servers-env-neon")
def _codex_toml(rng: random.Random) -> Built:
    key = "napi_" + _lower_alnum(rng, 64)
    text = _fill(
        """
        # ~/.codex/config.toml
        model = "gpt-5-codex"
        approval_policy = "on-request"
        sandbox_mode = "workspace-write"

        [mcp_servers.neon]
        command = "npx"
        args = ["-y", "@neondatabase/mcp-server-neon", "start"]
        env = { "NEON_API_KEY" = "‹key›" }

        [mcp_servers.docs]
        url = "https://docs.internal.example/mcp"
        """,
        key=key,
    )
    return text, (key,)


@_shape("gemini-cli-settings-json-mcp-http-headers-todoist")
def _gemini_settings(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    settings = {"theme": "GitHub", "selectedAuthType": "oauth-personal", "mcpServers": {
        "todoist": {"httpUrl": "https://ai.todoist.net/mcp", "headers": {"Authorization": f"Bearer {token}"},
                    "timeout": 30000, "trust": False}}, "checkpointing": {"enabled": True}}
    return "$ cat ~/.gemini/settings.json\n" + _as_json(settings, 2) + "\n", (token,)


@_shape("warp-mcp-server-json-raindrop-token")
def _warp_mcp(rng: random.Random) -> Built:
    token = _guid(rng)
    cfg = {"raindrop": {"command": "npx", "args": ["-y", "@adeze/raindrop-mcp"],
                        "env": {"RAINDROP_ACCESS_TOKEN": token}, "working_directory": None,
                        "start_on_launch": True}}
    return "Warp › Settings › AI › MCP Servers › Add (JSON):\n" + _as_json(cfg, 2) + "\n", (token,)


@_shape("junie-mcp-json-shortcut-api-token")
def _junie(rng: random.Random) -> Built:
    token = _guid(rng)
    cfg = {"mcpServers": {"shortcut": {"command": "npx", "args": ["-y", "@shortcut/mcp@latest"],
                                       "env": {"SHORTCUT_API_TOKEN": token}}}}
    return "// .junie/mcp/mcp.json\n" + _as_json(cfg, 2) + "\n", (token,)


@_shape("toolhive-thv-run-env-flag-webflow-token")
def _toolhive(rng: random.Random) -> Built:
    token = _hexs(rng, 64)
    text = _fill(
        """
        $ thv run --name webflow --transport stdio -e WEBFLOW_TOKEN=‹t› ghcr.io/stacklok/dockyard/npx/webflow-mcp-server:1.0.2
        ‹d› ‹t2› INF Image ghcr.io/stacklok/dockyard/npx/webflow-mcp-server:1.0.2 has 'latest' tag, pulling
        ‹d› ‹t2› INF MCP server webflow is running in the background (PID: ‹pid›)
        ‹d› ‹t2› INF Use 'thv stop webflow' to stop the server
        """,
        t=token, d=_date(rng), t2=_time(rng), pid=rng.randint(2000, 60000),
    )
    return text, (token,)


@_shape("supergateway-systemd-unit-header-composio")
def _supergateway(rng: random.Random) -> Built:
    key = "ak_" + _alnum(rng, 20)
    text = _fill(
        """
        # /etc/systemd/system/mcp-composio.service
        [Unit]
        Description=Composio MCP over SSE (supergateway)
        After=network-online.target

        [Service]
        User=mcp
        ExecStart=/usr/bin/npx -y supergateway --sse https://mcp.composio.dev/partner/composio/gmail --outputTransport stdio --header "x-api-key: ‹k›"
        Restart=on-failure

        [Install]
        WantedBy=multi-user.target
        """,
        k=key,
    )
    return text, (key,)


@_shape("fastmcp-server-stderr-settings-repr-serper")
def _fastmcp(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    text = _fill(
        """
        [‹d› ‹t›] INFO     Starting MCP server 'web-search' with transport 'stdio'                 server.py:1371
        [‹d› ‹t›] DEBUG    loaded settings: SearchSettings(serper_api_key='‹k›', country='za', num_results=8, timeout=20.0)  main.py:44
        [‹d› ‹t›] INFO     Processing request of type ListToolsRequest                             server.py:624
        """,
        d=_date(rng), t=_time(rng), k=key,
    )
    return text, (key,)


@_shape("claude-mcp-add-dbhub-dsn-with-password")
def _claude_mcp_add(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!*-_.~")
    text = _fill(
        """
        $ claude mcp add dbhub -s project -- npx -y @bytebase/dbhub --transport stdio --dsn "mysql://reporting:‹pw›@mysql-ro.internal:3306/shop?sslmode=disable"
        Added stdio MCP server dbhub with command: npx -y @bytebase/dbhub --transport stdio --dsn mysql://reporting:‹pw›@mysql-ro.internal:3306/shop?sslmode=disable to project config
        File modified: /home/‹u›/shop/.mcp.json
        """,
        pw=pw, u=_name(rng),
    )
    return text, (pw,)


@_shape("claude-code-project-jsonl-user-pastes-speechmatics-key")
def _claude_jsonl(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    sid = _guid(rng)
    lines = [
        {"parentUuid": None, "sessionId": sid, "type": "user", "uuid": _guid(rng), "timestamp": _stamp(rng),
         "message": {"role": "user", "content": f"the speechmatics key is {key} - wire it into the transcriber"}},
        {"parentUuid": _guid(rng), "sessionId": sid, "type": "assistant", "uuid": _guid(rng),
         "timestamp": _stamp(rng), "message": {"role": "assistant", "model": "claude-sonnet-4-5", "content": [
             {"type": "text", "text": "I'll read it from SPEECHMATICS_API_KEY instead of hard-coding it."}]}},
    ]
    path = "~/.claude/projects/-home-dev-transcriber/" + sid + ".jsonl"
    return f"$ tail -n 2 {path}\n" + "\n".join(json.dumps(x) for x in lines) + "\n", (key,)


@_shape("vapi-assistant-json-server-secret")
def _vapi(rng: random.Random) -> Built:
    secret = _strong(rng, 24, "-_.")
    body = {"name": "clinic-booking", "model": {"provider": "openai", "model": "gpt-4o-mini"},
            "server": {"url": "https://hooks.clinic.example/vapi", "secret": secret, "timeoutSeconds": 20},
            "firstMessage": "Hi, this is the clinic. How can I help?", "id": _guid(rng), "orgId": _guid(rng)}
    return "$ curl -s https://api.vapi.ai/assistant/" + body["id"] + " -H 'Authorization: Bearer ••••' | jq\n" + _as_json(body, 2) + "\n", (secret,)


@_shape("retell-python-client-key-underscore-hex")
def _retell(rng: random.Random) -> Built:
    key = "key_" + _hexs(rng, 28)
    text = _fill(
        """
        from retell import Retell

        client = Retell(api_key="‹k›")
        call = client.call.create_phone_call(from_number="+14157774444", to_number=lead.phone)
        """,
        k=key,
    )
    return text, (key,)


@_shape("pipecat-bot-gladia-stt-service-key")
def _pipecat(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        async def run_bot(transport):
            stt = GladiaSTTService(
                api_key="‹k›",
                params=GladiaInputParams(language_config=LanguageConfig(languages=[Language.FR])),
            )
            pipeline = Pipeline([transport.input(), stt, context_aggregator.user(), llm, tts, transport.output()])
        """,
        k=key,
    )
    return text, (key,)


@_shape("hume-client-api-key-and-secret-key")
def _hume(rng: random.Random) -> Built:
    api_key = _alnum(rng, 48)
    secret = _alnum(rng, 64)
    text = _fill(
        """
        >>> from hume import HumeClient
        >>> client = HumeClient(api_key="‹a›")
        >>> token = fetch_access_token(api_key="‹a›", secret_key="‹s›")
        >>> token[:12]
        'ey…'
        """,
        a=api_key, s=secret,
    )
    return text, (api_key, secret)


@_shape("promptlayer-pl-key-review-comment")
def _promptlayer(rng: random.Random) -> Built:
    key = "pl_" + _hexs(rng, 32)
    text = _fill(
        """
        > src/prompts/registry.py, line 9:
        > +promptlayer_client = PromptLayer(api_key="‹k›")
        Can we move this to settings? It is the production workspace key.
        """,
        k=key,
    )
    return text, (key,)


@_shape("devcontainer-json-containerenv-agentops")
def _devcontainer(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        // .devcontainer/devcontainer.json
        {
          "name": "crew-dev",
          "image": "mcr.microsoft.com/devcontainers/python:3.12",
          "containerEnv": {
            "AGENTOPS_API_KEY": "‹k›",
            "CREWAI_TELEMETRY_OPT_OUT": "true"
          },
          "postCreateCommand": "pip install -e .[dev]",
          "customizations": { "vscode": { "extensions": ["ms-python.python"] } }
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("humanloop-typescript-hl-sk-key")
def _humanloop(rng: random.Random) -> Built:
    key = "hl_sk_" + _hexs(rng, 48)
    text = _fill(
        """
        import { HumanloopClient } from "humanloop";

        export const humanloop = new HumanloopClient({ apiKey: "‹k›" });
        """,
        k=key,
    )
    return text, (key,)


@_shape("pyproject-pytest-env-langwatch-key")
def _pytest_env(rng: random.Random) -> Built:
    key = "sk-lw-" + _alnum(rng, 48)
    text = _fill(
        """
        [tool.pytest.ini_options]
        asyncio_mode = "auto"
        env = [
            "LANGWATCH_API_KEY=‹k›",
            "LANGWATCH_ENDPOINT=https://app.langwatch.ai",
            "D:DJANGO_SETTINGS_MODULE=config.settings.test",
        ]
        """,
        k=key,
    )
    return text, (key,)


@_shape("fly-toml-env-section-lunary-private-key")
def _fly_toml(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        app = "chat-widget"
        primary_region = "jnb"

        [env]
          LUNARY_PUBLIC_KEY = "‹pub›"
          LUNARY_PRIVATE_KEY = "‹k›"
          PORT = "8080"

        [http_service]
          internal_port = 8080
          force_https = true
        """,
        k=key, pub=_guid(rng),
    )
    return text, (key,)


@_shape("openpipe-openai-client-opk-key")
def _openpipe(rng: random.Random) -> Built:
    key = "opk_" + _hexs(rng, 40)
    text = _fill(
        """
        from openpipe import OpenAI

        client = OpenAI(openpipe={"api_key": "‹k›", "base_url": "https://api.openpipe.ai/api/v1"})
        """,
        k=key,
    )
    return text, (key,)


@_shape("zep-cloud-client-z-key-in-agent-tool-output")
def _zep(rng: random.Random) -> Built:
    key = "z_" + _segment({"uid": _guid(rng)}) + "." + _b64u(rng, 24)
    text = _fill(
        """
        ● Read(memory/client.py)
          ⎿  1  from zep_cloud.client import AsyncZep
             2
             3  zep = AsyncZep(api_key="‹k›")
             4
        """,
        k=key,
    )
    return text, (key,)


@_shape("arcade-credentials-yaml-arc-key")
def _arcade(rng: random.Random) -> Built:
    key = "arc_" + _alnum(rng, 40)
    text = _fill(
        """
        $ cat ~/.arcade/credentials.yaml
        cloud:
          api:
            key: ‹k›
          user:
            email: ‹u›@studio.example
        """,
        k=key, u=_name(rng),
    )
    return text, (key,)


@_shape("puppeteer-connect-browserless-wss-token")
def _browserless(rng: random.Random) -> Built:
    token = _alnum(rng, 48)
    text = _fill(
        """
        const browser = await puppeteer.connect({
          browserWSEndpoint: "wss://production-sfo.browserless.io?token=‹t›&stealth=true",
        });
        """,
        t=token,
    )
    return text, (token,)


@_shape("hyperbrowser-python-hb-key")
def _hyperbrowser(rng: random.Random) -> Built:
    key = "hb_" + _hexs(rng, 32)
    return f'client = Hyperbrowser(api_key="{key}")\nsession = client.sessions.create()\n', (key,)


@_shape("dust-tt-curl-conversation-sk-hex")
def _dust(rng: random.Random) -> Built:
    key = "sk-" + _hexs(rng, 32)
    text = _fill(
        """
        curl -X POST "https://dust.tt/api/v1/w/‹w›/assistant/conversations" \\
          -H "Authorization: Bearer ‹k›" \\
          -H "Content-Type: application/json" \\
          -d '{"message":{"content":"summarise #incidents","mentions":[{"configurationId":"dust"}]},"blocking":true}'
        """,
        w=_alnum(rng, 10), k=key,
    )
    return text, (key,)


@_shape("relevance-ai-authorization-project-key-region")
def _relevance(rng: random.Random) -> Built:
    key = "sk-" + _b64s(rng, 30)
    project = _guid(rng)
    text = (f'headers = {{"Authorization": "{project}:{key}", "Content-Type": "application/json"}}\n'
            'r = requests.post("https://api-d7b62b.stack.tryrelevance.com/latest/agents/trigger", headers=headers, json=payload)\n')
    return text, (key,)


@_shape("helm-set-inngest-signing-key")
def _inngest(rng: random.Random) -> Built:
    key = "signkey-prod-" + _hexs(rng, 64)
    text = _fill(
        """
        + helm upgrade --install inngest inngest/inngest -n jobs --set inngest.signingKey=‹k› --wait
        Release "inngest" has been upgraded. Happy Helming!
        """,
        k=key,
    )
    return text, (key,)


@_shape("cron-script-trigger-dev-secret-key")
def _trigger(rng: random.Random) -> Built:
    key = "tr_prod_" + _alnum(rng, 24)
    text = _fill(
        """
        #!/bin/sh
        # /etc/cron.daily/sync-invoices
        export TRIGGER_SECRET_KEY=‹k›
        exec /usr/local/bin/node /opt/billing/scripts/trigger-sync.mjs >> /var/log/sync-invoices.log 2>&1
        """,
        k=key,
    )
    return text, (key,)


@_shape("dify-chat-messages-curl-app-key-in-readme")
def _dify(rng: random.Random) -> Built:
    key = "app-" + _alnum(rng, 24)
    text = _fill(
        """
        ## Try the bot

        ```bash
        curl -X POST 'https://api.dify.ai/v1/chat-messages' \\
          --header 'Authorization: Bearer ‹k›' \\
          --header 'Content-Type: application/json' \\
          --data-raw '{"inputs": {}, "query": "What are the opening hours?", "response_mode": "blocking", "user": "readme"}'
        ```
        """,
        k=key,
    )
    return text, (key,)


@_shape("chromadb-cloud-client-ck-key")
def _chroma(rng: random.Random) -> Built:
    key = "ck-" + _alnum(rng, 44)
    return (f'client = chromadb.CloudClient(tenant="{_guid(rng)}", database="support-kb", api_key="{key}")\n',
            (key,))


@_shape("pymilvus-zilliz-client-token")
def _zilliz(rng: random.Random) -> Built:
    token = _hexs(rng, 104)
    text = _fill(
        """
        client = MilvusClient(
            uri="https://in03-‹a›.serverless.gcp-us-west1.cloud.zilliz.com",
            token="‹t›",
        )
        """,
        a=_hexs(rng, 15), t=token,
    )
    return text, (token,)


@_shape("unstructured-ingest-cli-api-key-flag")
def _unstructured(rng: random.Random) -> Built:
    key = _alnum(rng, 30)
    text = (f"$ unstructured-ingest local --input-path ./contracts --output-dir ./out --partition-by-api "
            f"--api-key {key} --partition-endpoint https://api.unstructuredapp.io --strategy hi_res\n"
            "2026-03-04 10:12:44,118 MainProcess INFO     running pipeline: DocFactory -> Partitioner -> Writer\n")
    return text, (key,)


@_shape("makefile-curl-stability-ai-bearer")
def _stability(rng: random.Random) -> Built:
    key = "sk-" + _alnum(rng, 48)
    text = _fill(
        """
        hero.png:
        ‹tab›curl -f -sS "https://api.stability.ai/v2beta/stable-image/generate/core" \\
        ‹tab›  -H "authorization: Bearer ‹k›" -H "accept: image/*" \\
        ‹tab›  -F prompt="lighthouse at dusk, flat illustration" -F output_format=png -o $@
        """,
        k=key,
    )
    return text, (key,)


@_shape("compose-override-environment-list-runway-secret")
def _runway(rng: random.Random) -> Built:
    key = "key_" + _hexs(rng, 128)
    text = _fill(
        """
        # docker-compose.override.yml
        services:
          render-worker:
            environment:
              - RUNWAYML_API_SECRET=‹k›
              - RENDER_QUEUE=video
        """,
        k=key,
    )
    return text, (key,)


@_shape("langchain-searchapi-wrapper-key")
def _searchapi(rng: random.Random) -> Built:
    key = _alnum(rng, 24)
    text = (f'search = SearchApiAPIWrapper(engine="google_news", searchapi_api_key="{key}")\n'
            'tools = [Tool(name="news", func=search.run, description="recent news")]\n')
    return text, (key,)


@_shape("clearml-conf-api-credentials-secret-key")
def _clearml(rng: random.Random) -> Built:
    secret = _alnum(rng, 50)
    text = _fill(
        """
        # ~/clearml.conf
        api {
            web_server: https://app.clear.ml
            api_server: https://api.clear.ml
            files_server: https://files.clear.ml
            credentials {
                "access_key" = "‹a›"
                "secret_key" = "‹s›"
            }
        }
        """,
        a=_upper_alnum(rng, 30), s=secret,
    )
    return text, (secret,)


@_shape("mlflow-basic-auth-ini-admin-password")
def _mlflow(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        # basic_auth.ini  (mlflow server --app-name basic-auth)
        [mlflow]
        default_permission = READ
        database_uri = sqlite:///basic_auth.db
        admin_username = admin
        admin_password = ‹p›
        authorization_function = mlflow.server.auth:authenticate_request_basic_auth
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("dvc-config-local-webdav-password")
def _dvc(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "#%&+=")
    text = _fill(
        """
        $ cat .dvc/config.local
        ['remote "nas"']
            url = webdavs://nas.lab.example/remote.php/dav/files/dvc/datasets
            user = dvc
            password = ‹p›
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("label-studio-api-token-curl-export")
def _label_studio(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    return (f'curl -X GET "http://localhost:8080/api/projects/7/export?exportType=JSON" -H "Authorization: Token {token}" '
            "--output annotations.json\n", (token,))


@_shape("roboflow-python-api-key-notebook-line")
def _roboflow(rng: random.Random) -> Built:
    key = _alnum(rng, 20)
    text = _fill(
        """
        In [3]: rf = Roboflow(api_key="‹k›")
        In [4]: project = rf.workspace("pallets").project("pallet-damage")
        loading Roboflow workspace...
        loading Roboflow project...
        """,
        k=key,
    )
    return text, (key,)


@_shape("tabby-client-agent-config-toml-auth-token")
def _tabby(rng: random.Random) -> Built:
    token = "auth_" + _hexs(rng, 32)
    text = _fill(
        """
        # ~/.tabby-client/agent/config.toml
        [server]
        endpoint = "http://gpu-box.lan:8080"
        token = "‹t›"

        [logs]
        level = "silent"
        """,
        t=token,
    )
    return text, (token,)


@_shape("mods-yml-lambda-labs-api-key")
def _mods(rng: random.Random) -> Built:
    key = "secret_" + rng.choice(["mods", "laptop", "ci"]) + "_" + _hexs(rng, 32) + "." + _alnum(rng, 32)
    text = _fill(
        """
        # ~/.config/mods/mods.yml
        default-model: hermes
        apis:
          lambda:
            base-url: https://api.lambda.ai/v1
            api-key: ‹k›
            models:
              hermes3-405b:
                aliases: ["hermes"]
                max-input-chars: 392000
        """,
        k=key,
    )
    return text, (key,)


@_shape("aichat-config-yaml-writer-client")
def _aichat(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    text = _fill(
        """
        model: writer:palmyra-x5
        clients:
        - type: openai-compatible
          name: writer
          api_base: https://api.writer.com/v1
          api_key: ‹k›
        """,
        k=key,
    )
    return text, (key,)


@_shape("llama-server-systemd-api-key-passphrase")
def _llama_server(rng: random.Random) -> Built:
    key = _passphrase(rng, 4, "-")
    text = _fill(
        """
        $ systemctl cat llama-server | grep ExecStart
        ExecStart=/opt/llama.cpp/build/bin/llama-server -m /models/qwen3-14b-q4_k_m.gguf --host 0.0.0.0 --port 8081 --api-key ‹k› -ngl 99
        """,
        k=key,
    )
    return text, (key,)


@_shape("tabbyapi-api-tokens-yml-admin-key")
def _tabbyapi(rng: random.Random) -> Built:
    api = _hexs(rng, 32)
    admin = _hexs(rng, 32)
    return f"# tabbyAPI/api_tokens.yml\napi_key: {api}\nadmin_key: {admin}\n", (api, admin)


@_shape("coderabbit-review-comment-hardcoded-novu-key")
def _coderabbit(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        **coderabbitai** bot reviewed ‹d›

        _⚠️ Potential issue_

        **Hard-coded Novu API key committed in `notifications/client.ts`.**

        Line 4 sets `new Novu({ secretKey: "‹k›" })`. Rotate this key in the Novu dashboard and read it from
        `process.env.NOVU_SECRET_KEY` instead.
        """,
        d=_date(rng), k=key,
    )
    return text, (key,)


@_shape("khoj-compose-admin-password")
def _khoj(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        services:
          server:
            image: ghcr.io/khoj-ai/khoj:latest
            environment:
              - KHOJ_ADMIN_EMAIL=‹u›@home.example
              - KHOJ_ADMIN_PASSWORD=‹p›
              - KHOJ_DJANGO_SECRET_KEY=${KHOJ_DJANGO_SECRET_KEY}
        """,
        u=_name(rng), p=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Shells, terminals, secret stores, database consoles and security tools
# --------------------------------------------------------------------------------------------------------


@_shape("powershell-start-transcript-new-localuser-securestring")
def _ps_transcript(rng: random.Random) -> Built:
    pw = _strong(rng, 15, "!#$%&*+=?@")
    text = _fill(
        """
        **********************
        Windows PowerShell transcript start
        Start time: 2026‹md›‹hm›
        Username: CORP\\‹u›
        RunAs User: CORP\\‹u›
        Machine: WS-‹n› (Microsoft Windows NT 10.0.26100.0)
        Host Application: C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe
        **********************
        Transcript started, output file is C:\\Users\\‹u›\\Documents\\PowerShell_transcript.WS-‹n›.txt
        PS C:\\> New-LocalUser -Name "kiosk" -Password (ConvertTo-SecureString "‹p›" -AsPlainText -Force) -PasswordNeverExpires

        Name  Enabled Description
        ----  ------- -----------
        kiosk True
        """,
        md=f"{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}", hm=f"{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}{rng.randint(0, 59):02d}",
        u=_name(rng), n=_upper_alnum(rng, 6), p=pw,
    )
    return text, (pw,)


@_shape("util-linux-script-typescript-mysqladmin-password")
def _typescript(rng: random.Random) -> Built:
    pw = _leet(rng)
    text = _fill(
        """
        Script started on ‹d› ‹t›+00:00 [TERM="xterm-256color" TTY="/dev/pts/2" COLUMNS="160" LINES="48"]
        root@db-02:~# mysqladmin -u root password '‹p›'
        mysqladmin: [Warning] Using a password on the command line interface can be insecure.
        Warning: Since password will be sent to server in plain text, use ssl connection to ensure password safety.
        root@db-02:~# exit

        Script done on ‹d› ‹t›+00:00 [COMMAND_EXIT_CODE="0"]
        """,
        d=_date(rng), t=_time(rng), p=pw,
    )
    return text, (pw,)


@_shape("tmux-capture-pane-rabbitmqadmin-password")
def _tmux(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        $ tmux capture-pane -p -t ops:2 -S -20
        ops@mq-1:~$ rabbitmqadmin --host=localhost --username=ops --password=‹p› list queues name messages
        +-------------------+----------+
        |       name        | messages |
        +-------------------+----------+
        | billing.retry     | 0        |
        | emails.outbound   | ‹n›       |
        +-------------------+----------+
        """,
        p=pw, n=rng.randint(10, 99),
    )
    return text, (pw,)


@_shape("buildkit-plain-progress-bundle-gems-contribsys")
def _buildkit(rng: random.Random) -> Built:
    secret = _hexs(rng, 8)
    text = _fill(
        """
        #9 [build 4/7] RUN bundle config set --global gems.contribsys.com ‹u›:‹s› && bundle install --jobs 4
        #9 0.412 Fetching gem metadata from https://gems.contribsys.com/..
        #9 1.903 Fetching sidekiq-pro 7.3.2
        #9 DONE 38.2s
        """,
        u=_hexs(rng, 8), s=secret,
    )
    return text, (secret,)


@_shape("kcadm-config-credentials-password-bash-x")
def _kcadm(rng: random.Random) -> Built:
    pw = _strong(rng, 18, "-_.!")
    text = _fill(
        """
        + /opt/keycloak/bin/kcadm.sh config credentials --server http://localhost:8080 --realm master --user admin --password ‹p›
        Logging into http://localhost:8080 as user admin of realm master
        + /opt/keycloak/bin/kcadm.sh create realms -s realm=shop -s enabled=true
        Created new realm with id 'shop'
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("bw-unlock-export-bw-session")
def _bw_unlock(rng: random.Random) -> Built:
    session = _b64s(rng, 64)
    text = _fill(
        """
        $ bw unlock
        ? Master password: [hidden]
        Your vault is now unlocked!

        To unlock your vault, set your session key to the `BW_SESSION` environment variable. ex:
        $ export BW_SESSION="‹s›"
        > $env:BW_SESSION="‹s›"
        """,
        s=session,
    )
    return text, (session,)


@_shape("secret-tool-lookup-output-smtp")
def _secret_tool(rng: random.Random) -> Built:
    pw = _human(rng)
    return f"$ secret-tool lookup service smtp.fastmail.example user {_name(rng)}\n{pw}$ \n", (pw,)


@_shape("tea-login-add-gitea-cli-token")
def _tea(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    text = (f"$ tea login add --name work --url https://code.corp.example --token {token}\n"
            "Login as ops on https://code.corp.example successful. Added this login as work\n")
    return text, (token,)


@_shape("dart-pub-tokens-json-bearer")
def _pub_tokens(rng: random.Random) -> Built:
    token = _b64u(rng, 36)
    body = {"version": 1, "hosted": [{"url": "https://dart.cloudsmith.io/acme/flutter", "token": token}]}
    return "$ cat ~/.config/dart/pub-tokens.json\n" + _as_json(body, 2) + "\n", (token,)


@_shape("cabal-config-hackage-password")
def _cabal(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        repository hackage.haskell.org
          url: http://hackage.haskell.org/

        -- username:
        username: ‹u›
        password: ‹p›
        remote-repo-cache: /home/‹u›/.cabal/packages
        """,
        u=_name(rng), p=pw,
    )
    return text, (pw,)


@_shape("condarc-channel-alias-token-in-path")
def _condarc(rng: random.Random) -> Built:
    token = _lower_alnum(rng, 2) + "-" + _guid(rng)
    text = _fill(
        """
        # ~/.condarc
        channels:
          - defaults
        channel_alias: https://conda.anaconda.org/t/‹t›
        custom_channels:
          acme-internal: https://conda.anaconda.org/t/‹t›
        """,
        t=token,
    )
    return text, (token,)


@_shape("duplicity-cron-passphrase-env")
def _duplicity(rng: random.Random) -> Built:
    pw = _passphrase(rng, 5, " ")
    text = _fill(
        """
        # m h dom mon dow command
        30 2 * * * PASSPHRASE="‹p›" duplicity --full-if-older-than 1M /srv/www b2://‹id›@backups-www/ >> /var/log/duplicity.log 2>&1
        """,
        p=pw, id=_hexs(rng, 12),
    )
    return text, (pw,)


@_shape("rustic-toml-repository-password")
def _rustic(rng: random.Random) -> Built:
    pw = _b64u(rng, 24)
    text = _fill(
        """
        # /etc/rustic/rustic.toml
        [repository]
        repository = "opendal:s3"
        password = "‹p›"

        [repository.options]
        bucket = "rustic-home"
        endpoint = "https://s3.eu-central-003.backblazeb2.com"
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("db2-clp-connect-using-password")
def _db2(rng: random.Random) -> Built:
    pw = _brief(rng, 8, 8)
    text = _fill(
        """
        db2inst1@hq-db2:~$ db2 connect to LEDGER user db2inst1 using ‹p›

           Database Connection Information

         Database server        = DB2/LINUXX8664 11.5.9.0
         SQL authorization ID   = DB2INST1
         Local database alias   = LEDGER
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("hdbsql-sap-hana-system-password")
def _hdbsql(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "#!")
    text = _fill(
        """
        hxeadm@hxehost:/usr/sap/HXE/HDB90> hdbsql -i 90 -d SYSTEMDB -u SYSTEM -p '‹p›' "SELECT DATABASE_NAME, ACTIVE_STATUS FROM M_DATABASES"
        DATABASE_NAME,ACTIVE_STATUS
        "SYSTEMDB","YES"
        "HXE","YES"
        2 rows selected (overall time 4812 usec; server time 215 usec)
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("teradata-bteq-logon-script")
def _bteq(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        .LOGON tdprod.corp.example/etl_batch,‹p›;
        .SET WIDTH 200;
        SELECT COUNT(*) FROM sales.daily_orders WHERE order_dt = CURRENT_DATE - 1;
        .LOGOFF;
        .QUIT;
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("vertica-vsql-w-password")
def _vsql(rng: random.Random) -> Built:
    pw = _brief(rng, 10, 12)
    text = (f"$ vsql -h vertica-01 -U dbadmin -w {pw} -c \"SELECT node_name, node_state FROM nodes;\"\n"
            " node_name | node_state\n-----------+------------\n v_dw_node0001 | UP\n(1 row)\n")
    return text, (pw,)


@_shape("maxctrl-list-servers-admin-password")
def _maxctrl(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        $ maxctrl -u admin -p '‹p›' list servers
        ┌────────┬─────────────┬──────┬─────────────┬─────────────────┬──────────┐
        │ Server │ Address     │ Port │ Connections │ State           │ GTID     │
        ├────────┼─────────────┼──────┼─────────────┼─────────────────┼──────────┤
        │ db1    │ 10.20.0.11  │ 3306 │ 14          │ Master, Running │ 0-1-‹g› │
        └────────┴─────────────┴──────┴─────────────┴─────────────────┴──────────┘
        """,
        p=pw, g=_digits(rng, 5),
    )
    return text, (pw,)


@_shape("proxysql-admin-credentials-cnf")
def _proxysql(rng: random.Random) -> Built:
    pw = _alnum(rng, 16)
    text = _fill(
        """
        admin_variables=
        {
            admin_credentials="admin:‹p›"
            mysql_ifaces="0.0.0.0:6032"
        }
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("asadm-aerospike-admin-password")
def _asadm(rng: random.Random) -> Built:
    pw = _leet(rng)
    return (f"$ asadm -h aero-1 -U admin -P '{pw}' -e 'show users'\n"
            "Seed:        [('aero-1', 3000, None)]\nConfig_file: /etc/aerospike/astools.conf\n", (pw,))


@_shape("evil-winrm-session-password-flag")
def _evil_winrm(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        ┌──(kali㉿kali)-[~/engagements/acme]
        └─$ evil-winrm -i 10.10.14.21 -u svc_sql -p '‹p›'

        Evil-WinRM shell v3.7

        Info: Establishing connection to remote endpoint
        *Evil-WinRM* PS C:\\Users\\svc_sql\\Documents>
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("impacket-psexec-target-domain-user-password")
def _impacket(rng: random.Random) -> Built:
    pw = _strong(rng, 13, "!@#")
    text = _fill(
        """
        $ impacket-psexec 'corp.local/svc_backup:‹p›@10.0.4.15'
        Impacket v0.12.0 - Copyright Fortra, LLC and its affiliated companies

        [*] Requesting shares on 10.0.4.15.....
        [*] Found writable share ADMIN$
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("wpscan-api-token-flag")
def _wpscan(rng: random.Random) -> Built:
    token = _alnum(rng, 43)
    text = (f"$ wpscan --url https://blog.acme.example --enumerate vp --api-token {token}\n"
            "[+] URL: https://blog.acme.example/ [203.0.113.40]\n[+] WordPress version 6.7.1 identified (Latest)\n")
    return text, (token,)


@_shape("shodan-init-api-key")
def _shodan(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    return f"$ shodan init {key}\nSuccessfully initialized\n$ shodan count 'product:\"MikroTik\" country:NA'\n", (key,)


@_shape("censys-cfg-api-secret")
def _censys(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    text = _fill(
        """
        $ cat ~/.config/censys/censys.cfg
        [DEFAULT]
        api_id = ‹i›
        api_secret = ‹s›
        asm_api_key =
        color = auto
        """,
        i=_guid(rng), s=secret,
    )
    return text, (secret,)


@_shape("nmap-script-args-smbpassword")
def _nmap(rng: random.Random) -> Built:
    pw = _human(rng)
    text = (f"# Nmap 7.95 scan initiated as: nmap -p445 --script smb-enum-shares "
            f"--script-args smbusername=auditor,smbpassword={pw},smbdomain=CORP -oN shares.txt 10.0.8.0/24\n"
            "Nmap scan report for fs01.corp.local (10.0.8.12)\n445/tcp open  microsoft-ds\n")
    return text, (pw,)


@_shape("john-show-cracked-plaintext")
def _john(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        $ john --show --format=NT hashes.txt
        ‹u›:‹p›:1107:::

        1 password hash cracked, 41 left
        """,
        u=_name(rng), p=pw,
    )
    return text, (pw,)


@_shape("sqlmap-auth-cred-basic")
def _sqlmap(rng: random.Random) -> Built:
    pw = _brief(rng)
    return (f'$ sqlmap -u "https://staging.acme.example/report?id=3" --auth-type=Basic --auth-cred="qa:{pw}" --batch --dbs\n'
            "[*] starting @ 11:04:52\n", (pw,))


@_shape("systemd-creds-encrypt-echo-history")
def _systemd_creds(rng: random.Random) -> Built:
    pw = _strong(rng, 20, "-_=+")
    text = _fill(
        """
        $ history | tail -3
          ‹n›  echo -n '‹p›' | systemd-creds encrypt --name=pg-password - /etc/credstore.encrypted/pg-password
          ‹m›  systemctl daemon-reload
          ‹o›  history | tail -3
        """,
        n=rng.randint(100, 900), m=rng.randint(901, 950), o=rng.randint(951, 999), p=pw,
    )
    return text, (pw,)


@_shape("ssh-keygen-change-passphrase-flags")
def _ssh_keygen_p(rng: random.Random) -> Built:
    old = _passphrase(rng, 3, ".")
    new = _passphrase(rng, 4, ".")
    text = (f"$ ssh-keygen -p -f ~/.ssh/id_ed25519 -P '{old}' -N '{new}'\n"
            "Key has comment 'laptop'\nYour identification has been saved with the new passphrase.\n")
    return text, (old, new)


@_shape("usermod-openssl-passwd-plaintext")
def _usermod(rng: random.Random) -> Built:
    pw = _human(rng)
    return f"sudo usermod -p \"$(openssl passwd -6 '{pw}')\" deploy\n", (pw,)


@_shape("smbpasswd-stdin-echo-pair")
def _smbpasswd(rng: random.Random) -> Built:
    pw = _brief(rng)
    return f"(echo '{pw}'; echo '{pw}') | smbpasswd -s -a scanner\nAdded user scanner.\n", (pw,)


@_shape("davfs2-secrets-file")
def _davfs(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "#%+")
    text = _fill(
        """
        # /etc/davfs2/secrets
        # mount point / server URL     username   password
        /mnt/cloud                      ‹u›        "‹p›"
        """,
        u=_name(rng), p=pw,
    )
    return text, (pw,)


@_shape("iwd-psk-file-passphrase")
def _iwd(rng: random.Random) -> Built:
    pw = _passphrase(rng, 3, "-") + str(rng.randint(10, 99))
    text = _fill(
        """
        # /var/lib/iwd/Harbour_5G.psk
        [Security]
        Passphrase=‹p›

        [Settings]
        AutoConnect=true
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("docker-secret-create-printf-stdin")
def _docker_secret(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    text = f"$ printf '%s' '{pw}' | docker secret create grafana_admin_pw -\n{_lower_alnum(rng, 25)}\n"
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# CI/CD, deploy tools, registries and publishing
# --------------------------------------------------------------------------------------------------------


@_shape("dagger-go-module-setsecret-literal")
def _dagger(rng: random.Random) -> Built:
    pw = _strong(rng, 20, "!#%+=")
    text = _fill(
        """
        func (m *Ci) Publish(ctx context.Context, src *dagger.Directory) (string, error) {
        ‹tab›pass := dag.SetSecret("registry-pass", "‹p›")
        ‹tab›return m.Build(src).WithRegistryAuth("registry.acme.example", "ci-bot", pass).Publish(ctx, "registry.acme.example/api:latest")
        }
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("skaffold-yaml-helm-setvalues-password")
def _skaffold(rng: random.Random) -> Built:
    pw = _brief(rng, 12, 12)
    text = _fill(
        """
        apiVersion: skaffold/v4beta11
        kind: Config
        deploy:
          helm:
            releases:
              - name: orders-db
                remoteChart: oci://registry-1.docker.io/bitnamicharts/postgresql
                setValues:
                  auth.username: orders
                  auth.password: ‹p›
                  primary.persistence.size: 2Gi
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("github-workflow-env-spacelift-api-key-secret")
def _spacelift(rng: random.Random) -> Built:
    secret = _hexs(rng, 64)
    text = _fill(
        """
        jobs:
          preview:
            runs-on: ubuntu-latest
            env:
              SPACELIFT_API_KEY_ENDPOINT: https://acme.app.spacelift.io
              SPACELIFT_API_KEY_ID: ‹i›
              SPACELIFT_API_KEY_SECRET: ‹s›
            steps:
              - uses: spacelift-io/setup-spacectl@v1
              - run: spacectl stack local-preview --id networking-prod
        """,
        i=_upper_alnum(rng, 26), s=secret,
    )
    return text, (secret,)


@_shape("caprover-deploy-password-flag")
def _caprover(rng: random.Random) -> Built:
    pw = _human(rng)
    text = (f"$ caprover deploy -h https://captain.apps.acme.example -p '{pw}' -a shop-web -b main\n"
            "Preparing deployment to CapRover...\nBuild started for shop-web\n")
    return text, (pw,)


@_shape("capistrano-deploy-rb-ssh-options-password")
def _capistrano(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        set :application, "intranet"
        set :repo_url, "git@git.acme.example:it/intranet.git"
        server "10.8.0.14", user: "deploy", roles: %w{app db web}
        set :ssh_options, { forward_agent: false, auth_methods: %w(password), password: "‹p›" }
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("fabfile-connection-connect-kwargs-password")
def _fabfile(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "#$%")
    text = _fill(
        """
        from fabric import Connection, task

        @task
        def restart(c):
            conn = Connection("legacy-app.acme.example", user="ops", connect_kwargs={"password": "‹p›"})
            conn.sudo("systemctl restart legacy-app", password="‹p›")
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("docker-run-qodana-token-env")
def _qodana(rng: random.Random) -> Built:
    token = _segment({"organization": _alnum(rng, 5), "project": _alnum(rng, 5), "tenant": _alnum(rng, 5)}) + "." + _b64u(rng, 36)
    text = (f'docker run --rm -v "$PWD":/data/project -e QODANA_TOKEN="{token}" jetbrains/qodana-jvm:2025.2 '
            "--baseline qodana.sarif.json\n")
    return text, (token,)


@_shape("mend-unified-agent-config-user-key")
def _mend(rng: random.Random) -> Built:
    api = _hexs(rng, 64)
    user = _hexs(rng, 64)
    text = _fill(
        """
        # wss-unified-agent.config
        wss.url=https://saas-eu.whitesourcesoftware.com/agent
        apiKey=‹a›
        userKey=‹u›
        productName=Payments
        projectName=payments-api
        checkPolicies=true
        """,
        a=api, u=user,
    )
    return text, (api, user)


@_shape("gitpod-gp-env-fontawesome-token")
def _gitpod(rng: random.Random) -> Built:
    token = _guid(rng).upper()
    return (f"gitpod /workspace/site (main) $ gp env FONTAWESOME_NPM_AUTH_TOKEN={token}\n"
            f"FONTAWESOME_NPM_AUTH_TOKEN={token}\n", (token,))


@_shape("buddy-works-yaml-variables-deploy-pass")
def _buddy(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        - pipeline: "Deploy to production"
          on: "CLICK"
          refs: ["refs/heads/master"]
          variables:
          - key: "DEPLOY_USER"
            value: "www"
          - key: "DEPLOY_PASS"
            value: "‹p›"
            encrypted: false
          actions:
          - action: "Upload files to SFTP"
            type: "SFTP"
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("laravel-forge-cli-config-json-jwt")
def _forge(rng: random.Random) -> Built:
    token = _jwt(rng, {"typ": "JWT", "alg": "RS256"},
                 {"aud": "1", "jti": _hexs(rng, 80), "iat": _epoch(rng), "nbf": _epoch(rng), "sub": _digits(rng, 6),
                  "scopes": []}, 256)
    body = {"token": token, "server": _digits(rng, 6), "ssh": {"key": "id_ed25519"}}
    return "$ cat ~/.laravel-forge/config.json\n" + _as_json(body, 4) + "\n", (token,)


@_shape("clever-cloud-login-token-secret")
def _clever(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    secret = _hexs(rng, 32)
    return (f"$ clever login --token {token} --secret {secret}\nLogin successful as ops@acme.example\n",
            (token, secret))


@_shape("scalingo-login-api-token-tk-us")
def _scalingo(rng: random.Random) -> Built:
    token = "tk-us-" + _b64u(rng, 36)
    return f"$ scalingo login --api-token {token}\n-----> Authenticated as ops\n", (token,)


@_shape("qovery-cli-access-token-env-gitlab")
def _qovery(rng: random.Random) -> Built:
    token = "qov_" + _alnum(rng, 64)
    text = _fill(
        """
        deploy:
          stage: deploy
          image: qoveryrd/qovery-cli:latest
          variables:
            QOVERY_CLI_ACCESS_TOKEN: "‹t›"
          script:
            - qovery application deploy --organization Acme --project Shop --environment prod --application api --watch
        """,
        t=token,
    )
    return text, (token,)


@_shape("devpi-login-password-flag")
def _devpi(rng: random.Random) -> Built:
    pw = _human(rng)
    return (f"$ devpi login root --password '{pw}'\nlogged in 'root' at 'https://pypi.lan/root/dev/', "
            "credentials valid for 10.00 hours\n", (pw,))


@_shape("nexus-admin-password-file-cat")
def _nexus(rng: random.Random) -> Built:
    pw = _guid(rng)
    return f"$ docker exec nexus cat /nexus-data/admin.password\n{pw}$ \n", (pw,)


@_shape("chartmuseum-basic-auth-pass-flag")
def _chartmuseum(rng: random.Random) -> Built:
    pw = _alnum(rng, 20)
    text = (f"ExecStart=/usr/local/bin/chartmuseum --port=8080 --storage=local --storage-local-rootdir=/var/lib/charts "
            f"--basic-auth-user=helm --basic-auth-pass={pw}\n")
    return text, (pw,)


@_shape("leiningen-profiles-clj-repository-password")
def _lein(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        ;; ~/.lein/profiles.clj
        {:user {:plugins [[lein-ancient "1.0.0-RC3"]]
                :repositories [["acme-releases" {:url "https://nexus.acme.example/repository/maven-releases/"
                                                 :username "deployer"
                                                 :password "‹p›"}]]}}
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("unity-batchmode-username-password")
def _unity(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!$%")
    text = (f'"/opt/unity/Editor/Unity" -batchmode -quit -nographics -username "ci@studio.example" '
            f'-password "{pw}" -serial SC-{_upper_alnum(rng, 4)}-XXXX-XXXX-XXXX-XXXX -logFile -\n')
    return text, (pw,)


@_shape("ci-log-cat-app-store-connect-p8")
def _p8(rng: random.Random) -> Built:
    line = "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg" + _b64s(rng, 12)
    text = _fill(
        """
        ‹s› + cat ./private_keys/AuthKey_‹k›.p8
        ‹s› -----BEGIN PRIVATE KEY-----
        ‹s› ‹l›
        ‹s› ‹m›
        ‹s› ‹n›
        ‹s› ‹o›
        ‹s› -----END PRIVATE KEY-----
        """,
        s=_stamp(rng), k=_upper_alnum(rng, 10), l=line, m=_b64s(rng, 48), n=_b64s(rng, 48), o=_b64s(rng, 6),
    )
    return text, (line,)


@_shape("electron-builder-workflow-csc-key-password")
def _electron(rng: random.Random) -> Built:
    pw = _passphrase(rng, 3, "_") + str(rng.randint(100, 999))
    text = _fill(
        """
              - name: Build and sign
                run: npx electron-builder --win --publish never
                env:
                  CSC_LINK: ./build/codesign.pfx
                  CSC_KEY_PASSWORD: ‹p›
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("tauri-env-signing-private-key-and-password")
def _tauri(rng: random.Random) -> Built:
    raw = ("untrusted comment: rsign encrypted secret key\nRWRTY0Iy" + _b64s(rng, 150)).encode()
    key = base64.b64encode(raw).decode()
    pw = _human(rng)
    text = f"# .env.release\nTAURI_SIGNING_PRIVATE_KEY={key}\nTAURI_SIGNING_PRIVATE_KEY_PASSWORD={pw}\n"
    return text, (key, pw)


@_shape("choco-apikey-push-source")
def _choco(rng: random.Random) -> Built:
    key = _guid(rng)
    return (f"PS> choco apikey --key {key} --source https://push.chocolatey.org/\n"
            "Added ApiKey for https://push.chocolatey.org/\n", (key,))


@_shape("snapcraft-store-credentials-export-login")
def _snapcraft(rng: random.Random) -> Built:
    inner = json.dumps({"t": "u", "v": _b64s(rng, 120)})
    blob = base64.b64encode(inner.encode()).decode()
    text = _fill(
        """
        $ snapcraft export-login --snaps=acme-cli --acls package_upload -
        Exported login credentials:
        ‹b›

        These credentials must be used on Snapcraft 7.2 or greater.
        """,
        b=blob,
    )
    return text, (blob,)


@_shape("ovsx-publish-pat-flag")
def _ovsx(rng: random.Random) -> Built:
    token = _guid(rng)
    return f"npx ovsx publish acme-theme-1.4.0.vsix -p {token}\n🚀  Published acme.acme-theme v1.4.0\n", (token,)


@_shape("gradle-publish-plugin-jetbrains-perm-token")
def _perm(rng: random.Random) -> Built:
    token = ("perm:" + base64.b64encode(_name(rng).encode()).decode() + "." + base64.b64encode(b"92-4").decode()
             + "." + _alnum(rng, 30))
    return f"./gradlew publishPlugin -PintellijPlatformPublishingToken={token} --no-daemon\n", (token,)


@_shape("butler-push-api-key-env")
def _butler(rng: random.Random) -> Built:
    key = _alnum(rng, 40)
    return (f"BUTLER_API_KEY={key} butler push build/web studio/lantern-game:html5 --userversion 0.9.3\n"
            "• For channel `html5`: last build is 1422, downloading its signature\n", (key,))


@_shape("steamcmd-login-run-app-build")
def _steamcmd(rng: random.Random) -> Built:
    pw = _leet(rng)
    text = (f"$ steamcmd +login studio_builder '{pw}' +run_app_build ../scripts/app_build_1000.vdf +quit\n"
            "Logging in user 'studio_builder' [U:1:0] to Steam Public...OK\n")
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Clouds, DNS and hosting
# --------------------------------------------------------------------------------------------------------


@_shape("cntb-contabo-set-credentials")
def _contabo(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    pw = _strong(rng, 14, "!#$")
    text = (f"$ cntb config set-credentials --oauth2-clientid=INT-{_digits(rng, 8)} --oauth2-client-secret='{secret}' "
            f"--oauth2-user='ops@acme.example' --oauth2-password='{pw}'\n")
    return text, (secret, pw)


@_shape("equinix-metal-yaml-token")
def _metal(rng: random.Random) -> Built:
    token = _alnum(rng, 32)
    return f"$ cat ~/.config/equinix/metal.yaml\n---\ntoken: {token}\nproject-id: {_guid(rng)}\n", (token,)


@_shape("selectel-openrc-os-password")
def _selectel(rng: random.Random) -> Built:
    pw = _alnum(rng, 20)
    text = _fill(
        """
        # rc-‹a›.sh downloaded from my.selectel.ru
        export OS_AUTH_URL="https://cloud.api.selcloud.ru/identity/v3"
        export OS_IDENTITY_API_VERSION="3"
        export OS_USER_DOMAIN_NAME='‹d›'
        export OS_USERNAME='ci-terraform'
        export OS_PASSWORD='‹p›'
        export OS_REGION_NAME="ru-9"
        """,
        a=_digits(rng, 6), d=_digits(rng, 6), p=pw,
    )
    return text, (pw,)


@_shape("xo-cli-register-password")
def _xo(rng: random.Random) -> Built:
    pw = _human(rng)
    return f"$ xo-cli register --allowUnauthorized https://xo.lab.example admin@admin.net '{pw}'\nSuccessfully logged with admin@admin.net\n", (pw,)


@_shape("ovirt-sdk-connection-password")
def _ovirt(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        connection = sdk.Connection(
            url="https://engine.dc1.example/ovirt-engine/api",
            username="admin@internal",
            password="‹p›",
            ca_file="ca.pem",
        )
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("nutanix-prism-curl-basic-user")
def _prism(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "!@")
    return (f"curl -sk -u 'admin:{pw}' -X POST https://prism.dc1.example:9440/api/nutanix/v3/vms/list "
            "-H 'Content-Type: application/json' -d '{\"kind\":\"vm\",\"length\":50}'\n", (pw,))


@_shape("hetzner-robot-webservice-curl")
def _robot(rng: random.Random) -> Built:
    pw = _alnum(rng, 16)
    return f"curl -u '#ws+{_alnum(rng, 8)}:{pw}' https://robot-ws.your-server.de/server\n", (pw,)


@_shape("netcup-dns-updater-config-apipassword")
def _netcup(rng: random.Random) -> Built:
    key = _alnum(rng, 30)
    pw = _alnum(rng, 34)
    text = _fill(
        """
        <?php
        // netcup-ddns/config.php
        const CUSTOMERNR = '‹c›';
        const APIKEY = '‹k›';
        const APIPASSWORD = '‹p›';
        const DOMAINLIST = 'home.example: @, vpn';
        """,
        c=_digits(rng, 5), k=key, p=pw,
    )
    return text, (key, pw)


@_shape("lego-env-gandi-personal-access-token")
def _lego(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    return (f"GANDIV5_PERSONAL_ACCESS_TOKEN={token} lego --email ops@acme.example --dns gandiv5 "
            "--domains '*.acme.example' run\n", (token,))


@_shape("namecheap-api-query-apikey-url")
def _namecheap(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    return (f"GET https://api.namecheap.com/xml.response?ApiUser=acmeops&ApiKey={key}&UserName=acmeops"
            "&Command=namecheap.domains.dns.getHosts&ClientIp=203.0.113.9&SLD=acme&TLD=example\n", (key,))


@_shape("duckdns-update-url-token-cron")
def _duckdns(rng: random.Random) -> Built:
    token = _guid(rng)
    return (f'*/5 * * * * curl -s "https://www.duckdns.org/update?domains=harbourlab&token={token}&ip=" '
            ">/dev/null\n", (token,))


@_shape("godaddy-sso-key-authorization-header")
def _godaddy(rng: random.Random) -> Built:
    secret = _alnum(rng, 22)
    return (f'curl -X PUT "https://api.godaddy.com/v1/domains/acme.example/records/A/@" '
            f'-H "Authorization: sso-key {_alnum(rng, 34)}:{secret}" -H "Content-Type: application/json" '
            "-d '[{\"data\":\"203.0.113.10\",\"ttl\":600}]'\n", (secret,))


@_shape("he-net-dyndns-password-query")
def _henet(rng: random.Random) -> Built:
    key = _alnum(rng, 16)
    return f"https://dyn.dns.he.net/nic/update?hostname=gw.acme.example&password={key}&myip=203.0.113.77\n", (key,)


# --------------------------------------------------------------------------------------------------------
# Databases, warehouses and queues
# --------------------------------------------------------------------------------------------------------


@_shape("kcat-sasl-password-flag")
def _kcat(rng: random.Random) -> Built:
    pw = _alnum(rng, 32)
    text = (f"$ kcat -b broker.acme.example:9094 -X security.protocol=SASL_SSL -X sasl.mechanisms=SCRAM-SHA-512 "
            f"-X sasl.username=orders-consumer -X sasl.password={pw} -t orders.v1 -C -o -5 -e\n")
    return text, (pw,)


@_shape("confluent-api-key-create-table")
def _confluent(rng: random.Random) -> Built:
    secret = _b64s(rng, 48).replace("/", "A").replace("+", "b")
    text = _fill(
        """
        $ confluent api-key create --resource lkc-‹c›
        It may take a couple of minutes for the API key to be ready.
        Save the API key and secret. The secret is not retrievable later.
        +------------+------------------------------------------------------------------+
        | API Key    | ‹k›                                                 |
        | API Secret | ‹s› |
        +------------+------------------------------------------------------------------+
        """,
        c=_lower_alnum(rng, 6), k=_upper_alnum(rng, 16), s=secret,
    )
    return text, (secret,)


@_shape("ysqlsh-keyword-value-connstring")
def _ysqlsh(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "-_!")
    return (f'$ ysqlsh "host=us-east-1.{_guid(rng)}.aws.yugabyte.cloud port=5433 dbname=yugabyte user=admin '
            f'password={pw} sslmode=verify-full sslrootcert=root.crt"\nysqlsh (15.2-YB-2.25.0.0-b0)\n', (pw,))


@_shape("compose-dragonfly-requirepass-command")
def _dragonfly(rng: random.Random) -> Built:
    pw = _hexs(rng, 32)
    text = _fill(
        """
        services:
          cache:
            image: docker.dragonflydb.io/dragonflydb/dragonfly:v1.25.1
            command: ["--requirepass=‹p›", "--maxmemory=2gb", "--cache_mode=true"]
            ulimits:
              memlock: -1
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("artemis-create-broker-user-password")
def _artemis(rng: random.Random) -> Built:
    pw = _human(rng)
    text = (f"$ ./apache-artemis-2.38.0/bin/artemis create /var/lib/broker1 --user admin --password '{pw}' "
            "--require-login --http-host 0.0.0.0\nCreating ActiveMQ Artemis instance at: /var/lib/broker1\n")
    return text, (pw,)


@_shape("solace-jndi-properties-credentials")
def _solace(rng: random.Random) -> Built:
    pw = _brief(rng, 10, 12)
    text = _fill(
        """
        java.naming.factory.initial=com.solacesystems.jndi.SolJNDIInitialContextFactory
        java.naming.provider.url=tcps://mr-connection-‹h›.messaging.solace.cloud:55443
        java.naming.security.principal=solace-cloud-client@acme-prod
        java.naming.security.credentials=‹p›
        """,
        h=_lower_alnum(rng, 11), p=pw,
    )
    return text, (pw,)


@_shape("dremio-pat-bearer-curl")
def _dremio(rng: random.Random) -> Built:
    token = _b64s(rng, 66)
    return (f'curl -X POST https://dremio.acme.example/api/v3/sql -H "Authorization: Bearer {token}" '
            "-H 'Content-Type: application/json' -d '{\"sql\":\"SELECT 1\"}'\n", (token,))


@_shape("firebolt-client-credentials-python")
def _firebolt(rng: random.Random) -> Built:
    secret = _b64u(rng, 48)
    text = _fill(
        """
        auth = ClientCredentials(client_id="‹i›", client_secret="‹s›")
        connection = connect(auth=auth, account_name="acme", database="events", engine_name="analytics")
        """,
        i=_alnum(rng, 32), s=secret,
    )
    return text, (secret,)


@_shape("informix-dbaccess-connect-using")
def _informix(rng: random.Random) -> Built:
    pw = _brief(rng, 8, 9)
    text = f"CONNECT TO 'stores@ol_prod' USER 'informix' USING '{pw}';\nSELECT FIRST 5 * FROM customer;\n"
    return text, (pw,)


@_shape("exaplus-cli-password-flag")
def _exaplus(rng: random.Random) -> Built:
    pw = _alnum(rng, 14)
    return f"$ exaplus -c exa-cluster.acme.example:8563 -u sys -p {pw} -s RETAIL -sql 'SELECT COUNT(*) FROM sales;'\n", (pw,)


@_shape("druid-common-runtime-escalator-password")
def _druid(rng: random.Random) -> Built:
    pw = _strong(rng, 18, "-_.")
    text = _fill(
        """
        druid.auth.authenticatorChain=["MyBasicMetadataAuthenticator"]
        druid.auth.authenticator.MyBasicMetadataAuthenticator.type=basic
        druid.escalator.type=basic
        druid.escalator.internalClientUsername=druid_system
        druid.escalator.internalClientPassword=‹p›
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("solr-auth-enable-credentials")
def _solr(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    return (f"$ bin/solr auth enable --type basicAuth --credentials solr:{pw} --block-unknown true\n"
            "Successfully enabled basic auth with username [solr] and password [" + pw + "].\n", (pw,))


@_shape("vmagent-remotewrite-basicauth-password-flag")
def _vmagent(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    return (f"/usr/bin/vmagent -promscrape.config=/etc/vmagent/scrape.yml -remoteWrite.url=https://vm.acme.example/api/v1/write "
            f"-remoteWrite.basicAuth.username=edge-01 -remoteWrite.basicAuth.password={pw}\n", (pw,))


@_shape("ipython-sql-magic-timescale-url")
def _ipysql(rng: random.Random) -> Built:
    pw = _lower_alnum(rng, 16)
    text = (f"In [2]: %load_ext sql\nIn [3]: %sql postgresql://tsdbadmin:{pw}@{_lower_alnum(rng, 10)}."
            f"{_lower_alnum(rng, 10)}.tsdb.cloud.timescale.com:3{_digits(rng, 4)}/tsdb?sslmode=require\n")
    return text, (pw,)


@_shape("prisma-accelerate-url-api-key-jwt")
def _accelerate(rng: random.Random) -> Built:
    token = _jwt(rng, {"alg": "HS256", "typ": "JWT"},
                 {"api_key": _guid(rng), "tenant_id": _hexs(rng, 64), "internal_secret": _guid(rng)})
    return f'DATABASE_URL="prisma://accelerate.prisma-data.net/?api_key={token}"\n', (token,)


@_shape("crunchy-bridge-cb-uri-output")
def _crunchy(rng: random.Random) -> Built:
    pw = _alnum(rng, 64)
    return (f"$ cb uri {_lower_alnum(rng, 26)} --role application\n"
            f"postgres://application:{pw}@p.{_lower_alnum(rng, 26)}.db.postgresbridge.com:5432/postgres\n", (pw,))


# --------------------------------------------------------------------------------------------------------
# Messaging, notifications, payments, observability and identity
# --------------------------------------------------------------------------------------------------------


@_shape("feishu-custom-bot-webhook-and-sign-secret")
def _feishu(rng: random.Random) -> Built:
    hook = _guid(rng)
    secret = _alnum(rng, 22)
    text = _fill(
        """
        WEBHOOK = "https://open.feishu.cn/open-apis/bot/v2/hook/‹h›"
        SECRET = "‹s›"

        def sign(ts: int) -> str:
            string_to_sign = f"{ts}\\n{SECRET}"
            return base64.b64encode(hmac.new(string_to_sign.encode(), digestmod=hashlib.sha256).digest()).decode()
        """,
        h=hook, s=secret,
    )
    return text, (hook, secret)


@_shape("textmagic-curl-x-tm-key")
def _textmagic(rng: random.Random) -> Built:
    key = _alnum(rng, 30)
    return (f'curl -X POST https://rest.textmagic.com/api/v2/messages -H "X-TM-Username: acmeops" '
            f'-H "X-TM-Key: {key}" -d "text=Your order has shipped&phones=447700900123"\n', (key,))


@_shape("clicksend-basic-user-api-key-upper-uuid")
def _clicksend(rng: random.Random) -> Built:
    key = _guid(rng).upper()
    return (f"curl -u 'ops@acme.example:{key}' -H 'Content-Type: application/json' "
            "https://rest.clicksend.com/v3/sms/send -d @batch.json\n", (key,))


@_shape("termii-json-body-api-key")
def _termii(rng: random.Random) -> Built:
    key = "TL" + _alnum(rng, 58)
    body = {"to": "2348012345678", "from": "AcmeNG", "sms": "Your code expires in 10 minutes.", "type": "plain",
            "channel": "dnd", "api_key": key}
    return "POST https://api.ng.termii.com/api/sms/send\n" + _as_json(body, 2) + "\n", (key,)


@_shape("loops-so-bearer-hex-node")
def _loops(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    return f'const loops = new LoopsClient("{key}");\nawait loops.sendTransactionalEmail({{ transactionalId, email }});\n', (key,)


@_shape("courier-auth-token-pk-prod-env")
def _courier(rng: random.Random) -> Built:
    token = "pk_prod_" + _upper_alnum(rng, 28)
    return f"# .env.production\nCOURIER_AUTH_TOKEN={token}\nCOURIER_BRAND_ID={_upper_alnum(rng, 28)}\n", (token,)


@_shape("fcm-legacy-server-key-curl-header")
def _fcm(rng: random.Random) -> Built:
    key = "AAAA" + _alnum(rng, 7) + ":APA91b" + _b64u(rng, 100)
    return (f'curl -X POST https://fcm.googleapis.com/fcm/send -H "Authorization: key={key}" '
            '-H "Content-Type: application/json" -d \'{"to":"/topics/news","notification":{"title":"Hi"}}\'\n',
            (key,))


@_shape("airship-python-master-secret")
def _airship(rng: random.Random) -> Built:
    secret = _b64u(rng, 16)
    return f'airship = ua.Airship("{_b64u(rng, 16)}", "{secret}")\npush = airship.create_push()\n', (secret,)


@_shape("braze-rest-key-bearer-uuid")
def _braze(rng: random.Random) -> Built:
    key = _guid(rng)
    return (f"curl -X POST https://rest.fra-02.braze.eu/users/track -H 'Authorization: Bearer {key}' "
            "-H 'Content-Type: application/json' -d @attributes.json\n", (key,))


@_shape("paytm-checksum-merchant-key")
def _paytm(rng: random.Random) -> Built:
    key = _strong(rng, 16, "#&@%")
    text = _fill(
        """
        const checksum = await PaytmChecksum.generateSignature(JSON.stringify(paytmParams.body), "‹k›");
        paytmParams.head = { signature: checksum };
        """,
        k=key,
    )
    return text, (key,)


@_shape("cashfree-x-client-secret-cfsk")
def _cashfree(rng: random.Random) -> Built:
    secret = "cfsk_ma_prod_" + _hexs(rng, 32) + "_" + _hexs(rng, 8)
    return (f"curl --request POST --url https://api.cashfree.com/pg/orders --header 'x-api-version: 2025-01-01' "
            f"--header 'x-client-id: {_digits(rng, 12)}{_hexs(rng, 20)}' --header 'x-client-secret: {secret}'\n",
            (secret,))


@_shape("phonepe-salt-key-python-constants")
def _phonepe(rng: random.Random) -> Built:
    salt = _guid(rng)
    return f'MERCHANT_ID = "ACMEONLINE"\nSALT_KEY = "{salt}"\nSALT_INDEX = 1\n', (salt,)


@_shape("ccavenue-php-working-key")
def _ccavenue(rng: random.Random) -> Built:
    key = _hexs(rng, 32, upper=True)
    return f"<?php\n$workingKey = '{key}';\n$accessCode = 'AVXX{_upper_alnum(rng, 16)}';\n$encrypted = encrypt($merchant_data, $workingKey);\n", (key,)


@_shape("btcpay-greenfield-token-header")
def _btcpay(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    return (f"curl -H 'Authorization: token {key}' "
            f"https://pay.acme.example/api/v1/stores/{_b58(rng)}/invoices\n", (key,))


@_shape("lnd-rest-grpc-metadata-macaroon-hex")
def _lnd(rng: random.Random) -> Built:
    mac = "0201036c6e6402f801030a10" + _hexs(rng, 200)
    return (f'curl --cacert tls.cert -H "Grpc-Metadata-macaroon: {mac}" https://node.lan:8080/v1/balance/channels\n',
            (mac,))


@_shape("tinkoff-terminal-password-python")
def _tinkoff(rng: random.Random) -> Built:
    pw = _lower_alnum(rng, 16)
    return f'TERMINAL_KEY = "{_digits(rng, 13)}DEMO"\nTERMINAL_PASSWORD = "{pw}"\n', (pw,)


@_shape("wechatpay-go-mch-apiv3-key")
def _wechatpay(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    text = _fill(
        """
        opts := []core.ClientOption{
        ‹tab›option.WithWechatPayAutoAuthCipher(mchID, mchCertificateSerialNumber, mchPrivateKey, "‹k›"),
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("alipay-java-single-line-private-key")
def _alipay(rng: random.Random) -> Built:
    key = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _b64s(rng, 900)
    text = f'private static final String APP_PRIVATE_KEY = "{key}";\n'
    return text, (key,)


@_shape("redsys-php-clave-sha256")
def _redsys(rng: random.Random) -> Built:
    key = _b64s(rng, 24)
    return f"$claveSHA256 = '{key}'; // clave secreta del comercio\n$firma = $redsys->createMerchantSignature($claveSHA256);\n", (key,)


@_shape("sumup-sup-sk-key-env")
def _sumup(rng: random.Random) -> Built:
    key = "sup_sk_" + _alnum(rng, 32)
    return f"SUMUP_API_KEY={key}\nSUMUP_MERCHANT_CODE=M{_upper_alnum(rng, 7)}\n", (key,)


@_shape("otelcol-config-lightstep-access-token-header")
def _lightstep(rng: random.Random) -> Built:
    token = _b64s(rng, 63)
    text = _fill(
        """
        exporters:
          otlp/lightstep:
            endpoint: ingest.lightstep.com:443
            headers:
              "lightstep-access-token": "‹t›"
        """,
        t=token,
    )
    return text, (token,)


@_shape("bugsnag-data-access-token-header")
def _bugsnag(rng: random.Random) -> Built:
    token = _guid(rng)
    return f"curl -H 'Authorization: token {token}' -H 'X-Version: 2' https://api.bugsnag.com/user/organizations\n", (token,)


@_shape("uptimerobot-main-api-key-form-body")
def _uptimerobot(rng: random.Random) -> Built:
    key = "u" + _digits(rng, 7) + "-" + _hexs(rng, 24)
    return (f"curl -X POST https://api.uptimerobot.com/v2/getMonitors -d 'api_key={key}&format=json&logs=1'\n",
            (key,))


@_shape("cronitor-cli-config-json")
def _cronitor(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    body = {"CRONITOR_API_KEY": key, "CRONITOR_HOSTNAME": "batch-01", "CRONITOR_LOG": "/var/log/cronitor.log"}
    return "$ cat /etc/cronitor/cronitor.json\n" + _as_json(body, 2) + "\n", (key,)


@_shape("amplitude-export-basic-secret-key")
def _amplitude(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    return (f"curl -u '{_hexs(rng, 32)}:{secret}' 'https://analytics.eu.amplitude.com/api/2/export?start=20260301T00&end=20260301T23' "
            "-o events.zip\n", (secret,))


@_shape("optimizely-personal-token-two-colon")
def _optimizely(rng: random.Random) -> Built:
    token = "2:" + _b64u(rng, 39)
    return f"OPTIMIZELY_TOKEN='{token}'\ncurl -H \"Authorization: Bearer $OPTIMIZELY_TOKEN\" https://api.optimizely.com/v2/projects\n", (token,)


@_shape("growthbook-secret-admin-key")
def _growthbook(rng: random.Random) -> Built:
    key = "secret_admin_" + _alnum(rng, 40)
    return f"curl https://api.growthbook.io/api/v1/features -u {key}:\n", (key,)


@_shape("flagsmith-server-side-ser-key")
def _flagsmith(rng: random.Random) -> Built:
    key = "ser." + _alnum(rng, 22)
    return f'flagsmith = Flagsmith(environment_key="{key}", enable_local_evaluation=True)\n', (key,)


@_shape("dex-config-static-clients-secret")
def _dex(rng: random.Random) -> Built:
    secret = _b64u(rng, 24)
    text = _fill(
        """
        staticClients:
        - id: grafana
          name: Grafana
          redirectURIs:
          - https://grafana.acme.example/login/generic_oauth
          secret: ‹s›
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("descope-management-key-env")
def _descope(rng: random.Random) -> Built:
    key = "K2" + _alnum(rng, 26) + ":" + _b64u(rng, 60)
    return f"DESCOPE_PROJECT_ID=P2{_alnum(rng, 26)}\nDESCOPE_MANAGEMENT_KEY={key}\n", (key,)


@_shape("cognito-describe-user-pool-client-secret")
def _cognito(rng: random.Random) -> Built:
    secret = _lower_alnum(rng, 52)
    body = {"UserPoolClient": {"UserPoolId": "eu-west-1_" + _alnum(rng, 9), "ClientName": "web-backend",
                               "ClientId": _lower_alnum(rng, 26), "ClientSecret": secret,
                               "ExplicitAuthFlows": ["ALLOW_REFRESH_TOKEN_AUTH", "ALLOW_USER_SRP_AUTH"]}}
    return "$ aws cognito-idp describe-user-pool-client --user-pool-id … --client-id …\n" + _as_json(body, 4) + "\n", (secret,)


@_shape("casdoor-app-conf-client-secret")
def _casdoor(rng: random.Random) -> Built:
    secret = _hexs(rng, 40)
    return (f"casdoorEndpoint = https://door.acme.example\nclientId = {_hexs(rng, 20)}\nclientSecret = {secret}\n"
            "casdoorOrganization = acme\ncasdoorApplication = wiki\n", (secret,))


# --------------------------------------------------------------------------------------------------------
# Game servers, home and self-hosted apps
# --------------------------------------------------------------------------------------------------------


@_shape("terraria-serverconfig-txt-password")
def _terraria(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    return f"world=/srv/terraria/Worlds/Lagoon.wld\nmaxplayers=8\nport=7777\npassword={pw}\nmotd=be nice\n", (pw,)


@_shape("project-zomboid-servertest-ini-rcon")
def _zomboid(rng: random.Random) -> Built:
    pw = _brief(rng)
    return f"PVP=false\nPauseEmpty=true\nPassword=\nRCONPort=27015\nRCONPassword={pw}\nMaxPlayers=16\n", (pw,)


@_shape("seven-days-serverconfig-xml-telnet-password")
def _sdtd(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        <ServerSettings>
        ‹tab›<property name="ServerName" value="Wasteland Co-op"/>
        ‹tab›<property name="ServerPassword" value=""/>
        ‹tab›<property name="TelnetEnabled" value="true"/>
        ‹tab›<property name="TelnetPassword" value="‹p›"/>
        </ServerSettings>
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("openttd-secrets-cfg-rcon-password")
def _openttd(rng: random.Random) -> Built:
    pw = _alnum(rng, 12)
    return f"[network]\nserver_password =\nrcon_password = {pw}\nadmin_password =\n", (pw,)


@_shape("dst-cluster-token-txt")
def _dst(rng: random.Random) -> Built:
    token = "pds-g^KU_" + _alnum(rng, 9) + "^" + _b64s(rng, 30)
    return f"$ cat ~/.klei/DoNotStarveTogether/Cluster_1/cluster_token.txt\n{token}\n", (token,)


@_shape("quake3-server-cfg-rconpassword")
def _q3(rng: random.Random) -> Built:
    pw = _brief(rng)
    return f'seta sv_hostname "^1LAN ^7Arena"\nseta g_gametype 0\nseta rconpassword "{pw}"\nmap q3dm17\n', (pw,)


@_shape("fhem-cfg-basicauth-base64")
def _fhem(rng: random.Random) -> Built:
    pair = base64.b64encode(f"fhem:{_human(rng)}".encode()).decode()
    return f"define WEB FHEMWEB 8083 global\nattr WEB basicAuth {pair}\nattr WEB HTTPS 1\n", (pair,)


@_shape("photoprism-compose-admin-password")
def _photoprism(rng: random.Random) -> Built:
    pw = _passphrase(rng, 3, "-")
    return (f'    environment:\n      PHOTOPRISM_ADMIN_USER: "admin"\n      PHOTOPRISM_ADMIN_PASSWORD: "{pw}"\n'
            '      PHOTOPRISM_SITE_URL: "https://photos.home.example/"\n', (pw,))


@_shape("navidrome-toml-lastfm-secret")
def _navidrome(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    return f'MusicFolder = "/music"\nLastFM.Enabled = true\nLastFM.ApiKey = "{_hexs(rng, 32)}"\nLastFM.Secret = "{secret}"\n', (secret,)


@_shape("kodi-sources-xml-smb-userinfo")
def _kodi(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        <sources>
            <video>
                <source>
                    <name>Movies</name>
                    <path pathversion="1">smb://kodi:‹p›@nas.home.example/Movies/</path>
                </source>
            </video>
        </sources>
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("radarr-config-xml-apikey")
def _radarr(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    return f"<Config>\n  <Port>7878</Port>\n  <ApiKey>{key}</ApiKey>\n  <AuthenticationMethod>Forms</AuthenticationMethod>\n</Config>\n", (key,)


@_shape("firefly-importer-env-access-token-jwt")
def _firefly(rng: random.Random) -> Built:
    token = _jwt(rng, {"typ": "JWT", "alg": "RS256"},
                 {"aud": "3", "jti": _hexs(rng, 80), "iat": _epoch(rng), "sub": "1", "scopes": []}, 256)
    return f"FIREFLY_III_URL=http://firefly:8080\nFIREFLY_III_ACCESS_TOKEN={token}\n", (token,)


@_shape("bookstack-token-id-secret-header")
def _bookstack(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    return f"curl -H 'Authorization: Token {_alnum(rng, 32)}:{secret}' https://wiki.acme.example/api/books\n", (secret,)


@_shape("listmonk-config-toml-admin-password")
def _listmonk(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "!-_")
    return f'[app]\naddress = "0.0.0.0:9000"\nadmin_username = "listmonk"\nadmin_password = "{pw}"\n', (pw,)


@_shape("netbox-pynetbox-token")
def _netbox(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    return f'nb = pynetbox.api("https://netbox.acme.example", token="{token}")\n', (token,)


@_shape("checkmk-automation-bearer-secret")
def _checkmk(rng: random.Random) -> Built:
    secret = _upper_alnum(rng, 32)
    return (f"curl -H 'Authorization: Bearer automation {secret}' -H 'Accept: application/json' "
            "'https://monitor.acme.example/prod/check_mk/api/1.0/domain-types/host_config/collections/all'\n", (secret,))


@_shape("wazuh-api-authenticate-basic")
def _wazuh(rng: random.Random) -> Built:
    pw = _strong(rng, 16, ".*+?")
    return f"curl -u 'wazuh-wui:{pw}' -k -X POST 'https://wazuh.acme.example:55000/security/user/authenticate?raw=true'\n", (pw,)


@_shape("freshrss-greader-clientlogin-passwd-query")
def _freshrss(rng: random.Random) -> Built:
    pw = _brief(rng)
    return f"GET /api/greader.php/accounts/ClientLogin?Email={_name(rng)}&Passwd={pw} HTTP/1.1\nHost: rss.home.example\n", (pw,)


@_shape("wallabag-oauth-token-form-body")
def _wallabag(rng: random.Random) -> Built:
    secret = _lower_alnum(rng, 50)
    pw = _human(rng)
    return (f"http --form POST https://bag.home.example/oauth/v2/token grant_type=password client_id=1_{_lower_alnum(rng, 50)} "
            f"client_secret={secret} username=reader password='{pw}'\n", (secret, pw))


@_shape("stalwart-config-fallback-admin-secret")
def _stalwart(rng: random.Random) -> Built:
    pw = _alnum(rng, 16)
    return f'[authentication.fallback-admin]\nuser = "admin"\nsecret = "{pw}"\n', (pw,)


# --------------------------------------------------------------------------------------------------------
# Debug dumps and HTTP traces
# --------------------------------------------------------------------------------------------------------


@_shape("django-technical-500-html-local-vars-password")
def _django500(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        <li class="frame user">
          <code class="fname">/srv/crm/accounts/services.py</code>, line 88, in <code class="function">provision_mailbox</code>
          <table class="vars" id="v‹i›">
            <thead><tr><th>Variable</th><th>Value</th></tr></thead>
            <tbody>
              <tr><td>mailbox</td><td class="code"><pre>&#x27;‹u›@crm.example&#x27;</pre></td></tr>
              <tr><td>password</td><td class="code"><pre>&#x27;‹p›&#x27;</pre></td></tr>
              <tr><td>self</td><td class="code"><pre>&lt;accounts.services.MailProvisioner object at 0x7f3c‹a›&gt;</pre></td></tr>
            </tbody>
          </table>
        </li>
        """,
        i=_digits(rng, 15), u=_name(rng), p=pw, a=_hexs(rng, 8),
    )
    return text, (pw,)


@_shape("symfony-vardumper-cli-array-password")
def _vardumper(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "!#%")
    text = _fill(
        """
        ^ array:3 [
          "host" => "smtp.acme.example"
          "username" => "noreply"
          "password" => "‹p›"
        ]
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("perl-data-dumper-var1-config")
def _dumper(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        $VAR1 = {
                  'dsn' => 'DBI:mysql:database=legacy;host=10.3.0.9',
                  'user' => 'legacy_app',
                  'pass' => '‹p›',
                  'AutoCommit' => 1
                };
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("strings-hprof-grep-datasource-password")
def _hprof(rng: random.Random) -> Built:
    pw = _alnum(rng, 18)
    text = (f"$ strings -n 8 heapdump-{_digits(rng, 10)}.hprof | grep -i 'datasource.pass'\n"
            f"spring.datasource.password={pw}\nspring.datasource.password\n")
    return text, (pw,)


@_shape("podman-inspect-format-config-env")
def _podman_inspect(rng: random.Random) -> Built:
    pw = _b64u(rng, 18)
    return (f"$ podman inspect --format '{{{{.Config.Env}}}}' keycloak\n"
            f"[PATH=/usr/local/sbin:/usr/local/bin:/usr/bin KC_DB=postgres KC_DB_USERNAME=keycloak KC_DB_PASSWORD={pw} "
            "container=oci HOME=/root]\n", (pw,))


@_shape("systemctl-show-environment-property")
def _systemctl_show(rng: random.Random) -> Built:
    token = _b64u(rng, 30)
    return f"$ systemctl show -p Environment invoice-worker\nEnvironment=LOG_LEVEL=info API_TOKEN={token} QUEUE=invoices\n", (token,)


@_shape("swift-dump-struct-api-key")
def _swift_dump(rng: random.Random) -> Built:
    key = _alnum(rng, 40)
    text = _fill(
        """
        ▿ AppConfig
          - baseURL: "https://api.acme.example"
          - apiKey: "‹k›"
          ▿ retry: RetryPolicy
            - maxAttempts: 3
        """,
        k=key,
    )
    return text, (key,)


@_shape("haskell-show-record-db-password")
def _haskell_show(rng: random.Random) -> Built:
    pw = _brief(rng)
    return (f'Config {{dbHost = "pg.internal", dbPort = 5432, dbUser = "ledger", dbPassword = "{pw}", poolSize = 10}}\n',
            (pw,))


@_shape("traefik-json-access-log-request-header-api-key")
def _traefik_log(rng: random.Random) -> Built:
    key = _hexs(rng, 48)
    entry = {"ClientAddr": _ip(rng) + ":51544", "DownstreamStatus": 200, "Duration": rng.randint(100000, 9000000),
             "RequestMethod": "GET", "RequestPath": "/v2/reports", "RouterName": "api@docker",
             "request_X-Api-Key": key, "request_User-Agent": "python-requests/2.32.3", "time": _stamp(rng)}
    return json.dumps(entry) + "\n", (key,)


@_shape("caddy-json-log-credentials-basic-header")
def _caddy_log(rng: random.Random) -> Built:
    pair = base64.b64encode(f"metrics:{_alnum(rng, 16)}".encode()).decode()
    entry = {"level": "info", "ts": _epoch(rng) + 0.123, "logger": "http.log.access.log0", "msg": "handled request",
             "request": {"remote_ip": _ip(rng), "proto": "HTTP/2.0", "method": "GET", "host": "metrics.acme.example",
                         "uri": "/federate", "headers": {"Authorization": [f"Basic {pair}"],
                                                         "User-Agent": ["Prometheus/3.1.0"]}},
             "status": 200}
    return json.dumps(entry) + "\n", (pair,)


@_shape("k6-script-login-password")
def _k6(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        export default function () {
          const res = http.post(`${BASE}/api/login`, JSON.stringify({ email: "loadtest@acme.example", password: "‹p›" }), {
            headers: { "Content-Type": "application/json" },
          });
          check(res, { "logged in": (r) => r.status === 200 });
        }
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("jmeter-jmx-header-manager-bearer")
def _jmeter(rng: random.Random) -> Built:
    token = _b64u(rng, 40)
    text = _fill(
        """
        <HeaderManager guiclass="HeaderPanel" testclass="HeaderManager" testname="HTTP Header Manager">
          <collectionProp name="HeaderManager.headers">
            <elementProp name="" elementType="Header">
              <stringProp name="Header.name">Authorization</stringProp>
              <stringProp name="Header.value">Bearer ‹t›</stringProp>
            </elementProp>
          </collectionProp>
        </HeaderManager>
        """,
        t=token,
    )
    return text, (token,)


@_shape("hoppscotch-collection-export-basic-auth")
def _hoppscotch(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "!@#")
    req = {"v": "11", "name": "List invoices", "method": "GET", "endpoint": "https://erp.acme.example/api/invoices",
           "auth": {"authType": "basic", "authActive": True, "username": "api", "password": pw},
           "headers": [], "params": []}
    coll = {"v": 6, "name": "ERP", "folders": [], "requests": [req], "auth": {"authType": "inherit", "authActive": True}}
    return _as_json(coll, 2) + "\n", (pw,)


@_shape("websocat-header-authorization")
def _websocat(rng: random.Random) -> Built:
    token = _hexs(rng, 64)
    return f"$ websocat -H='Authorization: Bearer {token}' wss://stream.acme.example/v1/events\n{{\"type\":\"hello\"}}\n", (token,)


@_shape("cloudfront-access-log-query-api-key")
def _cloudfront(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    fields = [_date(rng), _time(rng), "FRA56-P3", "2301", _ip(rng), "GET", "d111111abcdef8.cloudfront.net", "/v1/tiles/12/2148/1395.png",
              "200", "-", "Mozilla/5.0", f"api_key={key}&style=dark", "-", "Hit", _b64u(rng, 40)]
    return "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id\n" + "\t".join(fields) + "\n", (key,)


# --------------------------------------------------------------------------------------------------------
# People, in languages and scripts the earlier parts do not use, through carriers they do not use
# --------------------------------------------------------------------------------------------------------


@_shape("igbo-tiktok-dm-export-okwuntughe")
def _igbo(rng: random.Random) -> Built:
    pw = _human(rng)
    chat = {"Direct Messages": {"Chat History": {"ChatHistory with chidinma_k": [
        {"Date": f"{_date(rng)} {_time(rng)}", "From": "obinna.codes", "Content": f"Okwuntughe Wi-Fi ụlọ ahịa bụ {pw}"},
        {"Date": f"{_date(rng)} {_time(rng)}", "From": "chidinma_k", "Content": "Daalụ!"}]}}}
    return _as_json(chat, 2) + "\n", (pw,)


@_shape("xhosa-youtube-live-chat-json-igama-lokugqitha")
def _xhosa(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    item = {"replayChatItemAction": {"actions": [{"addChatItemAction": {"item": {"liveChatTextMessageRenderer": {
        "message": {"runs": [{"text": f"igama lokugqitha le-server ye-Minecraft ngu {pw}"}]},
        "authorName": {"simpleText": "@LwaziPlays"}, "timestampUsec": str(_epoch(rng) * 1_000_000)}}}}]},
        "videoOffsetTimeMsec": str(rng.randint(10000, 900000))}
    return json.dumps(item, ensure_ascii=False) + "\n", (pw,)


@_shape("sesotho-phpbb-bbcode-post-phasewete")
def _sesotho(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        [quote="Mpho"]Ke kopa lintlha tsa ho kena ho router.[/quote]
        Lebitso la mosebedisi ke [b]admin[/b], phasewete ke [code]‹p›[/code]. U se ke ua e arolelana.
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("shona-usenet-article-pasiwedhi")
def _shona(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        Path: news.eternal-september.org!.POSTED!not-for-mail
        From: Tendai M <tendai@harare.example>
        Newsgroups: soc.culture.zimbabwe
        Subject: Re: kirabhu yemakomputa
        Message-ID: <‹m›@news.eternal-september.org>
        Date: Tue, 3 Mar 2026 18:22:10 +0200

        Pasiwedhi yeWi-Fi yekirabhu ndeiyi: ‹p›
        Musaiisa paFacebook.
        """,
        m=_lower_alnum(rng, 12), p=pw,
    )
    return text, (pw,)


@_shape("chichewa-mediawiki-talk-page-mawu-achinsinsi")
def _chichewa(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        == Kulowa mu akaunti ya bot ==
        Ndayesa kulowa ndi mawu achinsinsi akale koma sizikugwira. Mawu achinsinsi atsopano ndi <code>‹p›</code>, chonde musawaike pa tsamba lina. ~~~~
        :Zikomo, ndalowa. [[User:Chikondi|Chikondi]] ([[User talk:Chikondi|talk]]) 09:14, 4 March 2026 (UTC)
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("wolof-jmap-email-get-baatu-jall")
def _wolof(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "!#?")
    resp = {"methodResponses": [["Email/get", {"accountId": "u" + _hexs(rng, 8), "state": _digits(rng, 6), "list": [
        {"id": "M" + _hexs(rng, 24), "subject": "Kaart bi", "from": [{"name": "Awa Ndiaye", "email": "awa@dakar.example"}],
         "bodyValues": {"1": {"value": f"Salaam, baatu jàll bi ngir ordinatëer bu biro bi mooy {pw}\nJàmm ak jàmm.",
                              "isTruncated": False}}, "textBody": [{"partId": "1", "type": "text/plain"}]}],
        "notFound": []}, "c1"]], "sessionState": _hexs(rng, 8)}
    return _as_json(resp, 2) + "\n", (pw,)


@_shape("tigrinya-rtf-unicode-escapes-password")
def _tigrinya(rng: random.Random) -> Built:
    pw = _human(rng)
    words = "ቃለ-ምስጢር ናይ ኢመይል"
    escaped = "".join(f"\\u{ord(c)}?" if ord(c) > 127 else c for c in words)
    text = ("{\\rtf1\\ansi\\ansicpg1252\\deff0{\\fonttbl{\\f0 Nyala;}}\\uc1\n"
            f"\\pard\\f0\\fs24 {escaped}: {pw}\\par\n}}\n")
    return text, (pw,)


@_shape("assamese-odt-content-xml-password")
def _assamese(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        <office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">
         <office:body><office:text>
          <text:p text:style-name="P1">কাৰ্যালয়ৰ প্ৰিণ্টাৰৰ পাছৱৰ্ড: <text:span text:style-name="T1">‹p›</text:span></text:p>
         </office:text></office:body>
        </office:document-content>
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("sindhi-simplenote-export-json-password")
def _sindhi(rng: random.Random) -> Built:
    pw = _leet(rng)
    notes = {"activeNotes": [{"id": _hexs(rng, 32), "content": f"بئنڪ ايپ\nپاسورڊ: {pw}",
                              "creationDate": _stamp(rng), "lastModified": _stamp(rng), "tags": ["ذاتي"]}],
             "trashedNotes": []}
    return _as_json(notes, 2) + "\n", (pw,)


@_shape("samoan-github-issue-comment-webhook")
def _samoan(rng: random.Random) -> Built:
    pw = _human(rng)
    payload = {"action": "created", "issue": {"number": rng.randint(10, 400), "title": "Le mafai ona ulufale i le staging"},
               "comment": {"id": int(_digits(rng, 10)), "user": {"login": "sina-fa"},
                           "body": f"Taumafai i le upu faʻalilolilo lenei: `{pw}` (ia suia pe a uma)",
                           "created_at": _stamp(rng)},
               "repository": {"full_name": "pasefika/booking"}}
    return "X-GitHub-Event: issue_comment\n\n" + _as_json(payload, 2) + "\n", (pw,)


@_shape("tongan-linear-comment-webhook")
def _tongan(rng: random.Random) -> Built:
    pw = _brief(rng)
    payload = {"action": "create", "type": "Comment", "createdAt": _stamp(rng), "data": {
        "id": _guid(rng), "body": f"Ko e lea fakapulipuli ki he VPN: {pw}", "issueId": _guid(rng),
        "user": {"name": "Sione Tupou"}}, "url": "https://linear.app/moana/issue/OPS-" + _digits(rng, 3)}
    return _as_json(payload, 2) + "\n", (pw,)


@_shape("hawaiian-apple-notes-html-olelo-huna")
def _hawaiian(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        <html><head><meta charset="utf-8"></head><body>
        <div><b>Kamepiula o ka hale kula</b></div>
        <div>Inoa mea hoʻohana: kumu</div>
        <div>ʻŌlelo huna: ‹p›</div>
        </body></html>
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("quechua-basecamp-comment-api-pakasqa-simi")
def _quechua(rng: random.Random) -> Built:
    pw = _human(rng)
    body = {"id": int(_digits(rng, 10)), "type": "Comment", "created_at": _stamp(rng),
            "content": f"<div>Kaymi pakasqa simi wasi ukupi antawapaq: <strong>{pw}</strong></div>",
            "creator": {"name": "Killa Quispe"}, "parent": {"title": "Yachay wasi llamk'ay", "type": "Todo"}}
    return _as_json(body, 2) + "\n", (pw,)


@_shape("guarani-clickup-comment-api-neenemi")
def _guarani(rng: random.Random) -> Built:
    pw = _strong(rng, 11, "!$")
    body = {"comments": [{"id": _digits(rng, 11), "comment_text": f"Ñe'ẽñemi pyahu servidor-pe g̃uarã: {pw}\n",
                          "user": {"username": "arami.benitez"}, "date": str(_epoch(rng) * 1000)}]}
    return _as_json(body, 2) + "\n", (pw,)


@_shape("bashkir-zoho-cliq-message-serhuz")
def _bashkir(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    body = {"data": [{"id": f"{_digits(rng, 13)}_{_digits(rng, 12)}", "sender": {"name": "Айгөл"},
                      "content": {"text": f"Бухгалтерия программаһының серһүҙе: {pw}"}, "time": _epoch(rng) * 1000}]}
    return _as_json(body, 2) + "\n", (pw,)


@_shape("chuvash-chatwoot-messages-api-secret-word")
def _chuvash(rng: random.Random) -> Built:
    pw = _human(rng)
    body = {"payload": [{"id": int(_digits(rng, 6)), "content": f"Сайт админкин вӑрттӑн сӑмахӗ: {pw}",
                         "message_type": 1, "created_at": _epoch(rng), "sender": {"name": "Илем", "type": "user"}}]}
    return _as_json(body, 2) + "\n", (pw,)


@_shape("tok-pisin-drive-comments-list-paswot")
def _tok_pisin(rng: random.Random) -> Built:
    pw = _brief(rng)
    body = {"comments": [{"id": "AAAB" + _alnum(rng, 10), "author": {"displayName": "Kila Wari"},
                          "content": f"Paswot bilong printa em {pw} — no ken givim long narapela man.",
                          "quotedFileContent": {"mimeType": "text/html", "value": "Ofis printa"},
                          "createdTime": _stamp(rng)}]}
    return _as_json(body, 2) + "\n", (pw,)


@_shape("kabyle-misskey-note-awal-uffir")
def _kabyle(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    note = {"id": _lower_alnum(rng, 10), "createdAt": _stamp(rng), "user": {"username": "amnay"},
            "text": f"ⴰⵡⴰⵍ ⵓⴼⴼⵉⵔ / awal uffir n Wi-Fi n tmesgida: {pw}", "visibility": "specified"}
    return _as_json(note, 2) + "\n", (pw,)


@_shape("low-german-jitsi-chat-passwoort")
def _low_german(rng: random.Random) -> Built:
    pw = _human(rng)
    return (f"[{_time(rng)}] Hinnerk: Dat Passwoort för den Vereensrechner is {pw}\n"
            f"[{_time(rng)}] Antje: Dank di, dat klappt.\n", (pw,))


@_shape("luganda-pipermail-archive-ekigambo-ekyama")
def _luganda(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "#!")
    text = _fill(
        """
        [Kampala-LUG] ekigambo eky'ekyama ku server
        Nakato Sarah nakato at kla.example
        Wed Mar 4 09:12:33 EAT 2026

        Abooluganda, ekigambo eky'ekyama ekipya ku server y'ekibiina kiri: ‹p›
        Mukikuume.
        """,
        p=pw,
    )
    return text, (pw,)


@_shape("cebuano-chatwork-message-tago-nga-pulong")
def _cebuano(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    body = [{"message_id": _digits(rng, 19), "account": {"name": "Rhea Dela Cruz"},
             "body": f"[To:{_digits(rng, 7)}]Jun, ang tago nga pulong sa POS kay {pw}", "send_time": _epoch(rng)}]
    return _as_json(body, 2) + "\n", (pw,)


# --------------------------------------------------------------------------------------------------------
# Documents without a secret
# --------------------------------------------------------------------------------------------------------


@_clean_shape("clean-otelcol-debug-span-token-usage-only")
def _c_otel(rng: random.Random) -> str:
    return _fill(
        """
        Span #0
            Trace ID       : ‹t›
            ID             : ‹s›
            Name           : chat gpt-4o-mini
        Attributes:
             -> gen_ai.usage.input_tokens: Int(‹i›)
             -> gen_ai.usage.output_tokens: Int(‹o›)
             -> gen_ai.response.id: Str(chatcmpl-‹r›)
        """,
        t=_hexs(rng, 32), s=_hexs(rng, 16), i=rng.randint(100, 9000), o=rng.randint(10, 900), r=_alnum(rng, 29),
    )


@_clean_shape("clean-codex-config-toml-env-vars-passthrough")
def _c_codex(rng: random.Random) -> str:
    return ('[mcp_servers.neon]\ncommand = "npx"\nargs = ["-y", "@neondatabase/mcp-server-neon", "start"]\n'
            'env_vars = ["NEON_API_KEY"]\n# key comes from the login shell, never this file\n'
            f'# last edited {_date(rng)}\n')


@_clean_shape("clean-gemini-settings-mcp-header-env-reference")
def _c_gemini(rng: random.Random) -> str:
    cfg = {"mcpServers": {"todoist": {"httpUrl": "https://ai.todoist.net/mcp",
                                      "headers": {"Authorization": "Bearer $TODOIST_API_TOKEN"}, "timeout": rng.randint(5, 60) * 1000}}}
    return _as_json(cfg, 2) + "\n"


@_clean_shape("clean-mcp-tools-list-schema-api-key-param")
def _c_tools_list(rng: random.Random) -> str:
    resp = {"jsonrpc": "2.0", "id": rng.randint(1, 50), "result": {"tools": [{"name": "translate", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}, "auth_key": {"type": "string",
                                                                                  "description": "DeepL auth key; leave empty to use the server's"}},
        "required": ["text"]}}]}}
    return json.dumps(resp) + "\n"


@_clean_shape("clean-claude-jsonl-assistant-refuses-to-echo-key")
def _c_claude(rng: random.Random) -> str:
    line = {"type": "assistant", "sessionId": _guid(rng), "uuid": _guid(rng), "message": {"role": "assistant", "content": [
        {"type": "text", "text": "I won't print the key. I've set `SPEECHMATICS_API_KEY` in your shell profile; run `source ~/.zshrc`."}]}}
    return json.dumps(line) + "\n"


@_clean_shape("clean-thv-secret-set-prompt-hidden")
def _c_thv(rng: random.Random) -> str:
    return ("$ thv secret set webflow-token\nEnter secret value (input will be hidden): \n"
            f"Secret 'webflow-token' set successfully\n$ thv run --secret webflow-token,target=WEBFLOW_TOKEN webflow  # pid {rng.randint(2000, 9000)}\n")


@_clean_shape("clean-powershell-transcript-read-host-securestring")
def _c_ps(rng: random.Random) -> str:
    return ("PS C:\\> $pw = Read-Host -AsSecureString -Prompt 'Password for kiosk'\nPassword for kiosk: ************\n"
            "PS C:\\> New-LocalUser -Name kiosk -Password $pw\n"
            f"kiosk True  (SID S-1-5-21-{_digits(rng, 10)}-{_digits(rng, 10)}-{_digits(rng, 9)}-1004)\n")


@_clean_shape("clean-bw-status-json-locked")
def _c_bw(rng: random.Random) -> str:
    return json.dumps({"serverUrl": "https://vault.bitwarden.eu", "lastSync": _stamp(rng), "userEmail": "ops@acme.example",
                       "userId": _guid(rng), "status": "locked"}) + "\n"


@_clean_shape("clean-john-show-zero-cracked")
def _c_john(rng: random.Random) -> str:
    return f"$ john --show --format=NT hashes.txt\n0 password hashes cracked, {rng.randint(10, 60)} left\n"


@_clean_shape("clean-impacket-secretsdump-ntlm-hashes")
def _c_secretsdump(rng: random.Random) -> str:
    lines = [f"{u}:{rng.randint(500, 1200)}:aad3b435b51404eeaad3b435b51404ee:{_hexs(rng, 32)}:::"
             for u in ("Administrator", "Guest", "svc_backup")]
    return "[*] Dumping local SAM hashes (uid:rid:lmhash:nthash)\n" + "\n".join(lines) + "\n"


@_clean_shape("clean-confluent-api-key-list-no-secrets")
def _c_confluent(rng: random.Random) -> str:
    return ("$ confluent api-key list\n  Current |       Key        | Description | Owner\n"
            f"----------+------------------+-------------+---------\n          | {_upper_alnum(rng, 16)} | orders      | sa-{_lower_alnum(rng, 6)}\n")


@_clean_shape("clean-skaffold-helm-existing-secret")
def _c_skaffold(rng: random.Random) -> str:
    return ("deploy:\n  helm:\n    releases:\n      - name: orders-db\n        setValues:\n"
            "          auth.existingSecret: orders-db-auth\n          auth.secretKeys.userPasswordKey: password\n"
            f"          primary.persistence.size: {rng.randint(2, 50)}Gi\n")


@_clean_shape("clean-github-workflow-secrets-references-only")
def _c_workflow(rng: random.Random) -> str:
    return ("    env:\n      SPACELIFT_API_KEY_ID: ${{ secrets.SPACELIFT_API_KEY_ID }}\n"
            "      SPACELIFT_API_KEY_SECRET: ${{ secrets.SPACELIFT_API_KEY_SECRET }}\n"
            f"    timeout-minutes: {rng.randint(5, 30)}\n")


@_clean_shape("clean-app-store-connect-key-id-issuer-only")
def _c_asc(rng: random.Random) -> str:
    return (f"app_store_connect_api_key(key_id: \"{_upper_alnum(rng, 10)}\", issuer_id: \"{_guid(rng)}\", "
            "key_filepath: ENV[\"ASC_KEY_PATH\"], in_house: false)\n")


@_clean_shape("clean-tauri-public-key-in-updater-config")
def _c_tauri(rng: random.Random) -> str:
    pub = base64.b64encode(("untrusted comment: minisign public key: " + _hexs(rng, 16, upper=True) + "\nRWQ" + _b64s(rng, 30)).encode()).decode()
    return json.dumps({"plugins": {"updater": {"pubkey": pub, "endpoints": ["https://releases.acme.example/{{target}}/{{current_version}}"]}}}, indent=2) + "\n"


@_clean_shape("clean-nexus-admin-password-file-removed-notice")
def _c_nexus(rng: random.Random) -> str:
    return (f"$ docker exec nexus cat /nexus-data/admin.password\ncat: /nexus-data/admin.password: No such file or directory\n"
            f"# removed after first login on {_date(rng)}; the admin password lives in the team vault\n")


@_clean_shape("clean-duckdns-doc-token-placeholder")
def _c_duckdns(rng: random.Random) -> str:
    return ("echo url=\"https://www.duckdns.org/update?domains=exampledomain&token=a7c4d0ad-114e-40ef-ba1d-YOUR-TOKEN&ip=\" | curl -k -o ~/duckdns/duck.log -K -\n"
            f"# replace YOUR-TOKEN with the token on your account page (doc rev {rng.randint(2, 9)})\n")


@_clean_shape("clean-godaddy-record-list-response")
def _c_godaddy(rng: random.Random) -> str:
    return json.dumps([{"data": f"203.0.113.{rng.randint(2, 250)}", "name": "@", "ttl": 600, "type": "A"},
                       {"data": "acme.example", "name": "www", "ttl": 3600, "type": "CNAME"}]) + "\n"


@_clean_shape("clean-kcat-metadata-listing")
def _c_kcat(rng: random.Random) -> str:
    return (f"Metadata for all topics (from broker 1: sasl_ssl://broker.acme.example:9094/1):\n 3 brokers:\n"
            f"  broker 1 at b1.acme.example:9094 (controller)\n 1 topics:\n  topic \"orders.v1\" with {rng.randint(3, 24)} partitions:\n")


@_clean_shape("clean-lnd-getinfo-pubkeys")
def _c_lnd(rng: random.Random) -> str:
    return json.dumps({"version": "0.18.4-beta", "identity_pubkey": "02" + _hexs(rng, 64), "alias": "harbour-node",
                       "num_active_channels": rng.randint(1, 30), "block_hash": "0000000000000000000" + _hexs(rng, 45),
                       "synced_to_chain": True}, indent=4) + "\n"


@_clean_shape("clean-cashfree-order-response-ids")
def _c_cashfree(rng: random.Random) -> str:
    return json.dumps({"cf_order_id": _digits(rng, 10), "order_id": "order_" + _alnum(rng, 12),
                       "payment_session_id": "session_" + _alnum(rng, 40), "order_status": "ACTIVE",
                       "order_amount": 499.0, "order_currency": "INR"}, indent=2) + "\n"


@_clean_shape("clean-alipay-public-key-certificate-sn")
def _c_alipay(rng: random.Random) -> str:
    return (f'private static final String ALIPAY_PUBLIC_KEY = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{_b64s(rng, 180)}";\n'
            f'private static final String APP_CERT_SN = "{_hexs(rng, 32)}";\n')


@_clean_shape("clean-cognito-client-without-secret")
def _c_cognito(rng: random.Random) -> str:
    return json.dumps({"UserPoolClient": {"UserPoolId": "eu-west-1_" + _alnum(rng, 9), "ClientName": "spa",
                                          "ClientId": _lower_alnum(rng, 26), "GenerateSecret": False,
                                          "AllowedOAuthFlows": ["code"]}}, indent=4) + "\n"


@_clean_shape("clean-flagsmith-client-side-environment-key")
def _c_flagsmith(rng: random.Random) -> str:
    return f'flagsmith.init({{ environmentID: "{_alnum(rng, 22)}", cacheFlags: true }});  // client-side key, public by design\n'


@_clean_shape("clean-radarr-api-key-masked-in-ui-export")
def _c_radarr(rng: random.Random) -> str:
    return f"<Config>\n  <Port>7878</Port>\n  <ApiKey>********************************</ApiKey>\n  <InstanceName>Radarr-{rng.randint(1, 9)}</InstanceName>\n</Config>\n"


@_clean_shape("clean-adguard-home-yaml-bcrypt-user")
def _c_adguard(rng: random.Random) -> str:
    return ("users:\n  - name: admin\n    password: $2y$10$" + _pick(rng, string.ascii_letters + string.digits + "./", 53)
            + "\nhttp:\n  address: 0.0.0.0:3000\n")


@_clean_shape("clean-qbittorrent-conf-pbkdf2-hash")
def _c_qbit(rng: random.Random) -> str:
    return (f'[Preferences]\nWebUI\\Port=8080\nWebUI\\Password_PBKDF2="@ByteArray({_b64s(rng, 16)}:{_b64s(rng, 64)})"\n'
            "WebUI\\Username=admin\n")


@_clean_shape("clean-terraria-serverconfig-no-password")
def _c_terraria(rng: random.Random) -> str:
    return f"world=/srv/terraria/Worlds/Lagoon.wld\nmaxplayers={rng.randint(4, 16)}\n#password=\nsecure=1\n"


@_clean_shape("clean-minecraft-rcon-password-prompt-docs")
def _c_rcon_doc(rng: random.Random) -> str:
    return ("## RCON\nSet `rcon.password` in server.properties to a long random string, then connect with\n"
            "`mcrcon -H host -p <password>`. Never reuse your account password here.\n"
            f"<!-- page {rng.randint(10, 99)} -->\n")


@_clean_shape("clean-django-debug-page-html-vars-settings-stars")
def _c_django(rng: random.Random) -> str:
    return ("<tr><td>DATABASES</td><td class=\"code\"><pre>{&#x27;default&#x27;: {&#x27;PASSWORD&#x27;: &#x27;********************&#x27;,"
            f" &#x27;HOST&#x27;: &#x27;pg-{_lower_alnum(rng, 6)}.internal&#x27;}}}}</pre></td></tr>\n"
            "<tr><td>SECRET_KEY</td><td class=\"code\"><pre>&#x27;********************&#x27;</pre></td></tr>\n")


@_clean_shape("clean-traefik-log-redacted-authorization")
def _c_traefik(rng: random.Random) -> str:
    return json.dumps({"ClientAddr": _ip(rng) + ":40112", "DownstreamStatus": 401, "RequestPath": "/v2/reports",
                       "request_Authorization": "REDACTED", "request_X-Request-Id": _guid(rng), "time": _stamp(rng)}) + "\n"


@_clean_shape("clean-k6-summary-metrics")
def _c_k6(rng: random.Random) -> str:
    return (f"     checks.........................: 100.00% ✓ {rng.randint(100, 9000)} ✗ 0\n"
            f"     http_req_duration..............: avg={rng.randint(20, 300)}ms p(95)={rng.randint(300, 900)}ms\n"
            "     iterations.....................: 4200   69.9/s\n")


@_clean_shape("clean-cloudfront-log-no-query")
def _c_cf(rng: random.Random) -> str:
    return "\t".join([_date(rng), _time(rng), "FRA56-P3", "1870", _ip(rng), "GET", "d111111abcdef8.cloudfront.net",
                      "/assets/app.css", "200", "-", "Mozilla/5.0", "-", "-", "Hit", _b64u(rng, 40)]) + "\n"


@_clean_shape("clean-igbo-security-reminder")
def _c_igbo(rng: random.Random) -> str:
    return ("Ncheta: ekekọrịtala okwuntughe gị na onye ọ bụla. Ndị ọrụ IT agaghị arịọ gị ya.\n"
            f"Nọmba tiketi: SEC-{_digits(rng, 6)}\n")


@_clean_shape("clean-samoan-issue-comment-no-secret")
def _c_samoan(rng: random.Random) -> str:
    return json.dumps({"action": "created", "comment": {"id": int(_digits(rng, 10)),
                                                         "body": "Ua toe setiina le upu faʻalilolilo; siaki lau imeli mo le sootaga."}},
                      ensure_ascii=False) + "\n"


@_clean_shape("clean-tigrinya-rtf-policy-text")
def _c_tigrinya(rng: random.Random) -> str:
    words = "ቃለ-ምስጢር ምስ ካልእ ኣይትካፈል"
    escaped = "".join(f"\\u{ord(c)}?" if ord(c) > 127 else c for c in words)
    return "{\\rtf1\\ansi\\deff0\\uc1\n\\pard " + escaped + f"\\par\n\\pard Ref {_digits(rng, 6)}\\par\n}}\n"


@_clean_shape("clean-prose-token-budget-passkey-bypass")
def _c_prose(rng: random.Random) -> str:
    return ("Retro: the agent hit its 200k token budget twice; the passkey rollout passed QA; the bypass_cache flag "
            f"stays off. Secretary of the board signed the SOC 2 letter. Sprint {rng.randint(10, 99)}.\n")


@_clean_shape("clean-pip-compile-hashes-and-versions")
def _c_pip(rng: random.Random) -> str:
    return "".join(f"{p}==1.{rng.randint(0, 20)}.{rng.randint(0, 9)} \\\n    --hash=sha256:{_hexs(rng, 64)}\n"
                   for p in ("chromadb", "pymilvus", "openpipe"))


@_clean_shape("clean-lego-dns-provider-docs-env-names")
def _c_lego(rng: random.Random) -> str:
    return ("| Environment Variable Name | Description |\n|---|---|\n| `GANDIV5_PERSONAL_ACCESS_TOKEN` | Personal Access Token |\n"
            f"| `GANDIV5_TTL` | The TTL of the TXT record used for the DNS challenge (default {rng.randint(300, 3600)}) |\n")


@_clean_shape("clean-wechatpay-notify-ciphertext")
def _c_wechat(rng: random.Random) -> str:
    return json.dumps({"id": _guid(rng), "event_type": "TRANSACTION.SUCCESS", "resource_type": "encrypt-resource",
                       "resource": {"algorithm": "AEAD_AES_256_GCM", "ciphertext": _b64s(rng, 120),
                                    "associated_data": "transaction", "nonce": _alnum(rng, 12)}}, indent=2) + "\n"


@_clean_shape("clean-cron-dyndns-reads-token-file")
def _c_cron(rng: random.Random) -> str:
    return (f'*/{rng.randint(2, 15)} * * * * curl -s "https://dyn.dns.he.net/nic/update?hostname=gw.acme.example'
            '&password=$(cat /etc/he-ddns.key)" >/dev/null\n')


SHAPES = tuple(name for name, _ in _WITH_SECRET)
CLEAN_SHAPES = tuple(name for name, _ in _WITHOUT_SECRET)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape, its values drawn with `seed`, then the documents without a secret."""
    rng = random.Random(seed)
    credential = [Document(name, *make(rng)) for name, make in _WITH_SECRET]
    clean = [Document(name, make(rng)) for name, make in _WITHOUT_SECRET]
    return credential + clean
