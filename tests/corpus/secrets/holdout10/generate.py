"""The HOLDOUT10 part of the secret corpus: a tenth blind part, written after HOLDOUT to HOLDOUT9.

Written blind: its author read only the `Document` type and the earlier generators (to copy their structure and
to keep away from their tools, vendors, formats, languages, shapes and values); never the detector, its rules,
its docs, its tests, its state or its figures, and no document was run through a detector or changed after one.
Every document copies what a real tool, config file, log, agent, terminal session, person or trace writes, with
tools, vendors, formats and languages the earlier parts do not use:

- agents, MCP and LLM tooling: a Roo Code `api_conversation_history.json` (`<execute_command>` inside an escaped
  JSON string, Apify), a Kilo Code mcp.json (Context7), `cursor-agent --output-format stream-json` (a Smithery
  key), an elizaOS character file (Venice), a Daytona SDK debug log, a Skyvern task payload, a W&B Weave call
  (a Nebius JWT), an Opik span (ScrapingBee key in a URL query), Portkey from a notebook cell, Braintrust,
  Laminar, an Instructor retry exception printing messages, a Zapier MCP URL with the secret in its path, LM
  Studio mcp.json (Linkup), an Open WebUI tool export with valves (NewsAPI), AnythingLLM `.env`, SillyTavern
  secrets.json (NovelAI), MetaGPT config2.yaml (SiliconFlow), promptfoo (AI21), a Colab notebook, a Livebook
  `.livemd` (Mailtrap), a Pluto.jl notebook, IPython `%history -g` (Cartesia), bolt.diy (Moonshot), LocalAI
  compose, an MCP streamable-HTTP server log with `?apiKey=`;
- shells, terminals and secret stores: nushell and xonsh histories, tcsh history with `#+` stamps, `doskey
  /history` (`net user /add`), `sudo -S` in a `set -x` deploy log, plink `-pw`, WinSCP `open sftp://`, `rar
  -hp` in `ps`, pdftk `user_pw`/`owner_pw`, aria2c, `ab -A`, ltrace `getenv`, bpftrace execve, osquery, a Falco
  alert, hydra, NetExec, `hashcat --show`, mimikatz wdigest, Akeyless, Conjur, Keeper Commander, berglas,
  OpenBao, `tctl tokens add`, headscale pre-auth keys, NetBird setup keys, ZeroTier Central, a cloudflared
  tunnel token, an OpenVPN `<tls-crypt>` static key, `talosctl gen secrets`, `microk8s add-node`, Butane inline
  files, `kanidmd recover-account`, a Salesforce sfdx auth URL, `dokku config:show`;
- CI, quality and test clouds: a Harness delegate, Codefresh, Atlantis (Gitea token and webhook secret), a
  Halyard config, `flux create secret git --export`, Nx Cloud, Turborepo, App Center in a Fastfile, Chromatic,
  Percy, BrowserStack, Sauce Labs, a DeepSource DSN, Semgrep, ggshield, Socket, Veracode;
- clouds and data stores: Akamai `.edgerc`, cloudflare-ddns, Volcengine `ve`, upctl, Civo, Koyeb, a Storj access
  grant, usacloud, ncloud, Timeweb `twc`, EdgeDB credentials, TiDB Cloud in Streamlit secrets, Aiven, MongoDB
  Atlas CLI, Redis Cloud, ZeroMQ CURVE keys (Z85), EMQX, HiveMQ Cloud, QuestDB, Sqitch, Atlas (ariga),
  RethinkDB, SingleStore, Momento;
- messaging, payments, observability and identity: LiveKit, Agora, Daily, SignalWire, DingTalk, WeCom, the LINE
  Messaging API, MSG91, Gotify, Apprise, M-Pesa Daraja, Omise, Toss Payments, iyzico, Authorize.Net XML, Binance
  through ccxt, Infura, Hardhat with Etherscan, Helius, Mixpanel, Loggly through rsyslog, Mezmo, SigNoz,
  Uptrace, Instana, AppSignal, FusionAuth kickstart, SuperTokens, Logto, Kong, Tyk;
- game servers, home and self-hosted apps: Minecraft, Factorio, Valheim, ARK, Mumble, V Rising, DayZ, a Bambu
  Lab access code, Moonraker, Homebridge (Tuya), openHAB, SABnzbd, NZBGet, Overseerr, Rspamd, mailcow,
  MeshCentral, RustDesk, Appsmith, Payload CMS, GLPI, Dolibarr, Lemmy (Hjson), BigBlueButton, Shadowsocks, an
  Xray VLESS share link, mihomo (Hysteria2), 3proxy;
- debug dumps and captures: py-spy `--locals`, .NET `GetDebugView()`, Spring Actuator `/env` with values shown,
  Laravel Tinker, IEx, go-spew, a Node REPL `pg` client, Flutter dio logs, an IIS W3C log, an OAuth implicit
  `#access_token=` in browser history, a quoted diff hunk in a review e-mail;
- people in languages and scripts the earlier parts do not use, each through a carrier they do not use:
  Kannada (Mastodon ActivityPub Note, "ಪಾಸ್‌ವರ್ಡ್"), Marathi (Bluesky chat API, "संकेतशब्द"), Odia (Bear note,
  "ପାସୱାର୍ଡ"), Tibetan (Google Keep takeout, "གསང་ཚིག"), Divehi (Joplin note, "ޕާސްވޯޑް"), Yiddish (Redmine
  journal, "פּאַראָל"), Uyghur (QQ message log, "پارولى"), Somali (Front API, "Erayga sirta"), Yoruba (Crisp
  webhook, "ọ̀rọ̀ aṣínà"), Māori (YouTrack comment, "kupuhipa"), Maltese (an MHT snapshot, "Il-password"),
  Occitan (mutt pager, "senhal"), Javanese (Minecraft chat log, "tembung sandhi"), Sundanese (Reddit chat CSV,
  "Kecap sandi"), Hmong (Snapchat takeout, "lo lus zais"), Oromo (a Delta Chat e-mail, "Jecha darbii"),
  Northern Sami (Google Sheets `values.get`, "Beassansátni"), Kurmanji (Discourse PM, "şîfre"), Cantonese
  (Mattermost bulk export, "密碼係"), Romansh (extract_msg of an Outlook .msg, "pled-clav").

Each document plants one or two values; every value appears verbatim on one line of its text and is 8
characters or more. Value forms: vendor prefixes none of the earlier parts use (apify_api_, ctx7sk-, dtn_,
sk_car_, pst-, chpt_, web_ (Percy), sktsec_, akab-, AVNS_, PT (SignalWire), SEC (DingTalk), skey_, live_sk_,
5Aep861 (Salesforce refresh token), AKLT beside a Volcengine secret), hex (Codacy, Semgrep, Veracode, a
Teleport token, headscale keys, Agora certificate, Daily, DingTalk, Factorio, SABnzbd, Moonraker, an OpenVPN
static key line), base64 (Conjur, berglas, Talos, Harness, Nx Cloud, Akamai, Shadowsocks, Overseerr, a
cloudflared token of base64 JSON, a Volcengine secret of base64 text), base64url (Zapier path, FusionAuth,
an implicit-flow access token, WeCom), base58 (a Storj access grant), Z85 (a ZeroMQ CURVE secret key), UUIDs
(Context7, Smithery, Linkup, Sauce Labs, NetBird, Loggly, Helius, AppSignal, an Xray VLESS id), JWTs (RS256
Nebius and Timeweb, HS256, HS512 Momento), people's passwords (a word, digits and a mark; two words and
digits), generated passwords with symbols, short passwords of 8 to 12 characters (an 8-digit Bambu access
code), passphrases (dashes), and values inside URLs (userinfo, query, path, fragment), escaped JSON, Python and
Node reprs, PHP, XML, INI, TOML, Hjson, YAML, CSV and HTML as those formats write them.

Decisions: usernames, e-mail addresses, client ids (Logto, a Daraja consumer key), key ids and access-key ids
(Veracode `api_key_id`, a Volcengine AKLT id, an ncloud access key, a Tuya accessId, an Iyzico and a Binance API
key, an Infura project id, a LiveKit `API…` key, usacloud's AccessToken), account, app, project, zone and team
ids (Harness account, Agora app id, a Cloudflare zone id, SignalWire project), public and publishable keys
(Omise `pkey_`, a Toss `live_ck_` client key, ZeroMQ and NetBird public keys, Reality `pbk`), hashes and
digests (NTLM hashes beside a cracked plaintext, NetNTLMv2, CDHash, Rekor and TUF values, lockfile checksums),
commit SHAs, request, trace, session and tool-call ids are not credentials; for a `user:password` pair or a
URL with userinfo the planted value is the password; an OpenVPN static key is planted as its first hex line;
no document holds a credential value beside the one or two it plants (masked echoes such as `***`, `********`,
`<masked>`, `········` and notes like "(moved to vault)" are not values).

The clean documents hold no credential but plenty of look-alikes: py-spy and osquery without secrets, a
Responder NetNTLMv2 capture, ZeroMQ public keys, `tsh status`, headscale machine and node keys, NetBird public
keys, Storj and Kanidm listings, Daraja, Toss and Binance responses, Etherscan hashes, Minecraft player UUIDs, a
Factorio game id, a Kannada and a Marathi warning, IIS and Envoy logs with request and trace ids, a sanitized
Actuator `/env`, HikariCP `<masked>`, Laravel Telescope `********`, a Semgrep finding reading an env var, a
ggshield masked finding, post-mortem prose with "token", "passed", "keyboard" and "password", Podfile.lock and
composer.lock hashes, a ConfigMap, a Rekor entry, a TUF root, `codesign -dvvv`, a Jupyter `getpass` prompt,
Colab `userdata.get`, Open WebUI empty valves, a Roo Code masked echo, a Nuclei scan, a Trivy report, an Agora
app id, LiveKit rooms, cloudflared tunnels, a Sami sheet pointing to a vault and a Daraja passkey placeholder.

SEED = 1414213. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
clean ones.
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

SEED = 1414213

_LETTERS_DIGITS = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_URL_ALPHABET = _LETTERS_DIGITS + "-_"
_HEX = "0123456789abcdef"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_Z85 = string.digits + string.ascii_lowercase + string.ascii_uppercase + ".-:+=^!/*?&<>()[]{}@%$#"

_VOCAB = tuple(
    """
    almond badger caravel dahlia egret falafel gazebo harpoon iguana juniper kestrel lantern marmot nectarine
    ocelot paprika quartz raccoon saffron tamarind umber verbena walrus xylem yarrow zephyr abacus beacon
    cinder drizzle emerald foxglove granite heron inkwell jasmine kumquat lagoon meadow nutmeg orchard parsnip
    quiver radish sequoia thistle urchin velvet wombat cypress mandolin porcupine tangerine
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
    value = _pick(rng, _HEX, length)
    return value.upper() if upper else value


def _alnum(rng: random.Random, length: int) -> str:
    """Letters and digits, with at least one digit, one upper and one lower case letter."""
    while True:
        value = _pick(rng, _LETTERS_DIGITS, length)
        if (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
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
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def _human(rng: random.Random, marks: str = "!.?$#") -> str:
    """What a person picks: a capitalised word, a year or a number, a mark."""
    word = rng.choice(_VOCAB)
    number = rng.randint(1968, 2026) if rng.random() < 0.5 else rng.randint(10, 999)
    value = word[0].upper() + word[1:] + str(number) + rng.choice(marks)
    return value if len(value) >= 8 else word.capitalize() + str(number).zfill(4) + value[-1]


def _human_plain(rng: random.Random) -> str:
    """A person's password without a mark: two words and a number, or a word and four digits."""
    first = rng.choice(_VOCAB)
    if rng.random() < 0.5:
        return first + rng.choice(_VOCAB).capitalize() + str(rng.randint(10, 99))
    return first.capitalize() + str(rng.randint(1000, 9999))


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


def _as_json(obj: object, indent: int | None = None) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent)


def _name(rng: random.Random) -> str:
    return rng.choice(["amara", "bilal", "chidi", "dorcas", "emeka", "farida", "goran", "hana", "ikaika", "jonas",
                       "keoni", "lerato", "mateus", "nilufar", "oskar", "priya", "quentin", "rangi", "sione"])


# --------------------------------------------------------------------------------------------------------
# Agents, coding agents, MCP and LLM tooling
# --------------------------------------------------------------------------------------------------------


@_shape("roo-code-api-conversation-history-execute-command-apify")
def _roo_code(rng: random.Random) -> Built:
    token = "apify_api_" + _alnum(rng, 36)
    ts = _epoch(rng) * 1000
    command = f"APIFY_TOKEN={token} npx apify-cli call apify/website-content-crawler --input-file crawl.json"
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\ncrawl the docs site with apify again\n</task>"}],
         "ts": ts},
        {"role": "assistant", "content": [{"type": "text", "text": (
            "<thinking>The crawler needs the token inline; the user pasted it earlier.</thinking>\n"
            f"<execute_command>\n<command>{command}</command>\n</execute_command>")}], "ts": ts + 5210},
        {"role": "user", "content": [{"type": "text", "text": (
            "[execute_command for 'APIFY_TOKEN=… npx apify-cli call'] Result:\n"
            "Command executed in terminal within working directory '/home/dev/docs-rag'. Exit code: 0\n"
            "Output:\nRun: Started actor run (id: " + _alnum(rng, 17) + ")\nRun: Status SUCCEEDED")}],
         "ts": ts + 74022},
    ]
    task = _guid(rng)
    text = (f"$ cat ~/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks/{task}/"
            "api_conversation_history.json\n" + json.dumps(history) + "\n")
    return text, (token,)


@_shape("kilo-code-mcp-settings-json-context7-api-key")
def _kilo_mcp(rng: random.Random) -> Built:
    key = "ctx7sk-" + _guid(rng)
    config = {
        "mcpServers": {
            "context7": {
                "command": "npx",
                "args": ["-y", "@upstash/context7-mcp", "--api-key", key],
                "alwaysAllow": ["resolve-library-id", "get-library-docs"],
                "disabled": False,
            },
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/app"]},
        }
    }
    text = "// .kilocode/mcp.json (project)\n" + json.dumps(config, indent=2) + "\n"
    return text, (key,)


@_shape("cursor-agent-stream-json-shell-tool-call-smithery-key")
def _cursor_agent(rng: random.Random) -> Built:
    key = _guid(rng)
    session = _guid(rng)
    call = "toolu_vrtx_01" + _alnum(rng, 21)
    events = [
        {"type": "system", "subtype": "init", "apiKeySource": "login", "cwd": "/Users/hana/mcp-lab",
         "session_id": session, "model": "Claude 4.5 Sonnet", "permissionMode": "default"},
        {"type": "tool_call", "subtype": "started", "call_id": call, "tool_call": {"shellToolCall": {"args": {
            "command": f"npx -y @smithery/cli@latest install @smithery-ai/github --client cursor --key {key}",
            "workingDirectory": "", "timeout": 30000}}}, "session_id": session},
        {"type": "tool_call", "subtype": "completed", "call_id": call, "tool_call": {"shellToolCall": {"result": {
            "success": {"exitCode": 0, "stdout": "✔ Successfully installed @smithery-ai/github for cursor\n"}}}},
         "session_id": session},
    ]
    text = "$ cursor-agent -p 'add the github mcp server' --output-format stream-json\n"
    text += "\n".join(json.dumps(e, ensure_ascii=False) for e in events) + "\n"
    return text, (key,)


@_shape("elizaos-character-json-settings-secrets-venice")
def _eliza(rng: random.Random) -> Built:
    key = _alnum(rng, 44)
    character = {
        "name": "Harbormaster",
        "plugins": ["@elizaos/plugin-bootstrap", "@elizaos/plugin-venice"],
        "settings": {"secrets": {"VENICE_API_KEY": key}, "voice": {"model": "en_US-hfc_female-medium"}},
        "bio": ["Answers questions about tide tables and berth schedules."],
        "style": {"all": ["short answers", "no emojis"]},
    }
    return "$ cat characters/harbormaster.character.json\n" + json.dumps(character, indent=2) + "\n", (key,)


@_shape("daytona-sdk-create-sandbox-env-vars-debug-log")
def _daytona(rng: random.Random) -> Built:
    key = "dtn_" + _hexs(rng, 64)
    pw = _strong(rng, 18, "!#%*+-=?@^_")
    stamp = _stamp(rng)
    text = _fill(
        """
        ‹stamp› DEBUG daytona.sandbox create request: CreateSandboxFromImageParams(image='python:3.12-slim', language='python', env_vars={'PGPASSWORD': '‹pw›', 'PGHOST': 'db.internal', 'PGUSER': 'etl'}, labels={'job': 'nightly-etl'}, auto_stop_interval=15)
        ‹stamp› DEBUG urllib3.connectionpool https://app.daytona.io:443 "POST /api/sandbox HTTP/1.1" 200 1391
        ‹stamp› INFO  daytona.sandbox sandbox ‹sid› started (state=started, cpu=1, memory=1GiB)
        # env for this worker: DAYTONA_API_KEY=‹key›
        """,
        stamp=stamp, pw=pw, key=key, sid=_guid(rng),
    )
    return text, (pw, key)


@_shape("skyvern-task-request-navigation-payload-password")
def _skyvern(rng: random.Random) -> Built:
    pw = _human(rng)
    body = {
        "url": "https://portal.vendor-example.com/login",
        "navigation_goal": "Log in, open Invoices, download the latest PDF. COMPLETE when the download starts.",
        "data_extraction_goal": None,
        "navigation_payload": {"username": "ap@harbor-foods.example", "password": pw},
        "proxy_location": "RESIDENTIAL",
        "max_steps_override": 12,
    }
    text = ("POST /api/v1/tasks HTTP/1.1\nHost: api.skyvern.com\nx-api-key: ****************\n"
            "Content-Type: application/json\n\n" + json.dumps(body, indent=2) + "\n")
    return text, (pw,)


@_shape("weave-call-json-inputs-nebius-jwt-api-key")
def _weave(rng: random.Random) -> Built:
    key = _jwt(rng, {"alg": "RS256", "kid": _lower_alnum(rng, 16), "typ": "JWT"},
               {"sub": "google-oauth2|" + _digits(rng, 21), "iss": "api_key_issuer", "aud": ["wss://ws.ai.nebius.cloud"],
                "exp": _epoch(rng), "uuid": _guid(rng)}, 256)
    call = {
        "id": "019a" + _hexs(rng, 28),
        "op_name": "weave:///team-rag/eval/op/ChatNebius.invoke:" + _alnum(rng, 43),
        "trace_id": "019a" + _hexs(rng, 28),
        "inputs": {"self": {"model": "meta-llama/Llama-3.3-70B-Instruct", "temperature": 0.2,
                            "api_key": key, "base_url": "https://api.studio.nebius.com/v1/"},
                   "input": "Summarise the incident report in three bullets."},
        "output": {"content": "- Disk filled on db-2\n- Failover took 4 min\n- Alert threshold raised"},
        "summary": {"usage": {"prompt_tokens": 1022, "completion_tokens": 41}},
    }
    return "# weave client.get_call(...).to_dict()\n" + json.dumps(call, indent=1) + "\n", (key,)


@_shape("opik-span-input-scrapingbee-api-key-in-url")
def _opik(rng: random.Random) -> Built:
    key = _upper_alnum(rng, 80)
    url = f"https://app.scrapingbee.com/api/v1/?api_key={key}&url=https%3A%2F%2Fexample.org%2Fpricing&render_js=false"
    span = {
        "id": "0199" + _hexs(rng, 28),
        "trace_id": "0199" + _hexs(rng, 28),
        "name": "fetch_page",
        "type": "tool",
        "input": {"url": url, "timeout": 30},
        "output": {"status": 200, "bytes": 48210},
        "project_name": "pricing-agent",
    }
    return "opik> span detail (Copy JSON)\n" + json.dumps(span, indent=2) + "\n", (key,)


@_shape("portkey-gateway-curl-in-notebook-cell-output")
def _portkey(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS + "+/", 32)
    while not (any(c.isdigit() for c in key) and any(c.isupper() for c in key)):
        key = _pick(rng, _LETTERS_DIGITS + "+/", 32)
    text = _fill(
        """
        In [7]: !curl -s https://api.portkey.ai/v1/chat/completions \\
           ...:   -H "Content-Type: application/json" \\
           ...:   -H "x-portkey-api-key: ‹key›" \\
           ...:   -H "x-portkey-provider: @openai-prod" \\
           ...:   -d '{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"ping"}]}' | jq .usage
        {
          "prompt_tokens": 8,
          "completion_tokens": 2,
          "total_tokens": 10
        }
        """,
        key=key,
    )
    return text, (key,)


@_shape("braintrust-eval-dotenv-and-run-output")
def _braintrust(rng: random.Random) -> Built:
    key = "sk-" + _alnum(rng, 48)
    text = _fill(
        """
        $ cat .env.local
        BRAINTRUST_API_KEY=‹key›
        BRAINTRUST_PROJECT=support-bot
        $ npx braintrust eval evals/tone.eval.ts
        Processing 1 evaluators...
        =========================SUMMARY=========================
        tone-v3 compared to tone-v2:
        82.50% (+4.10%) 'Factuality' score      (11 improvements, 3 regressions)
        See results for tone-v3 at https://www.braintrust.dev/app/harbor/p/support-bot/experiments/tone-v3
        """,
        key=key,
    )
    return text, (key,)


@_shape("lmnr-laminar-project-api-key-python-init")
def _laminar(rng: random.Random) -> Built:
    key = _alnum(rng, 64)
    text = _fill(
        """
        # agent/tracing.py
        from lmnr import Laminar, observe

        Laminar.initialize(
            project_api_key="‹key›",
            instruments={"openai", "anthropic"},
        )


        @observe(name="plan_step")
        def plan(query: str) -> str:
            ...
        """,
        key=key,
    )
    return text, (key,)


@_shape("instructor-retry-exception-messages-with-user-password")
def _instructor(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        Traceback (most recent call last):
          File "/srv/intake/extract.py", line 58, in extract_account
            return client.chat.completions.create(response_model=AccountRequest, messages=messages, max_retries=2)
          File "/srv/intake/.venv/lib/python3.12/site-packages/instructor/core/retry.py", line 222, in retry_sync
            raise InstructorRetryException(
        instructor.core.exceptions.InstructorRetryException: 1 validation error for AccountRequest
        department
          Input should be 'finance', 'ops' or 'sales' [type=literal_error, input_value='warehouse', input_type=str]
        last_completion: ChatCompletion(id='chatcmpl-‹cid›', model='gpt-4o-mini-2024-07-18', ...)
        messages: [{'role': 'system', 'content': 'Extract the account request.'}, {'role': 'user', 'content': 'hi, new starter in the warehouse, please set me up as j.okafor, temp password ‹pw› is what HR gave me'}]
        n_attempts: 2
        total_usage: CompletionUsage(completion_tokens=88, prompt_tokens=402, total_tokens=490)
        """,
        pw=pw, cid=_alnum(rng, 29),
    )
    return text, (pw,)


@_shape("zapier-mcp-server-url-secret-in-path-claude-config")
def _zapier_mcp(rng: random.Random) -> Built:
    secret = _b64u(rng, 48)
    config = {"mcpServers": {"zapier": {"command": "npx", "args": [
        "mcp-remote", f"https://mcp.zapier.com/api/mcp/s/{secret}/mcp"]}}}
    text = "Here's my config, the zapier one won't connect, any idea?\n\n```json\n"
    text += json.dumps(config, indent=2) + "\n```\n"
    return text, (secret,)


@_shape("lm-studio-mcp-json-linkup-env")
def _lm_studio(rng: random.Random) -> Built:
    key = _guid(rng)
    config = {"mcpServers": {"linkup": {"command": "uvx", "args": ["mcp-search-linkup"],
                                        "env": {"LINKUP_API_KEY": key}}}}
    return "~/.lmstudio/mcp.json\n" + json.dumps(config, indent=2) + "\n", (key,)


@_shape("open-webui-tool-export-valves-newsapi-key")
def _open_webui(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    tool = [{
        "id": "news_search",
        "user_id": _guid(rng),
        "name": "News Search",
        "content": "class Tools:\n    class Valves(BaseModel):\n        NEWSAPI_KEY: str = Field(default=\"\")\n",
        "specs": [{"name": "search_news", "description": "Search recent headlines",
                   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}],
        "meta": {"description": "Headlines from newsapi.org", "manifest": {}},
        "valves": {"NEWSAPI_KEY": key},
        "updated_at": _epoch(rng),
    }]
    return "tool-export-" + _date(rng) + ".json\n" + json.dumps(tool) + "\n", (key,)


@_shape("anythingllm-server-env-jwt-secret")
def _anythingllm(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    text = _fill(
        """
        SERVER_PORT=3001
        STORAGE_DIR="/app/server/storage"
        UID='1000'
        GID='1000'
        JWT_SECRET="‹secret›"
        LLM_PROVIDER='ollama'
        OLLAMA_BASE_PATH='http://host.docker.internal:11434'
        OLLAMA_MODEL_PREF='qwen3:14b'
        EMBEDDING_ENGINE='native'
        VECTOR_DB="lancedb"
        DISABLE_TELEMETRY="true"
        """,
        secret=secret,
    )
    return text, (secret,)


@_shape("sillytavern-secrets-json-novelai-persistent-token")
def _sillytavern(rng: random.Random) -> Built:
    token = "pst-" + _alnum(rng, 64)
    secrets = {"api_key_novel": token, "api_key_horde": "0000000000"}
    return "$ cat data/default-user/secrets.json\n" + json.dumps(secrets, indent=4) + "\n", (token,)


@_shape("metagpt-config2-yaml-siliconflow-key")
def _metagpt(rng: random.Random) -> Built:
    key = "sk-" + _pick(rng, string.ascii_lowercase, 48)
    text = _fill(
        """
        # ~/.metagpt/config2.yaml
        llm:
          api_type: "openai"
          model: "deepseek-ai/DeepSeek-V3"
          base_url: "https://api.siliconflow.cn/v1"
          api_key: "‹key›"
        repair_llm_output: true
        workspace:
          path: "./workspace"
        """,
        key=key,
    )
    return text, (key,)


@_shape("promptfoo-config-yaml-ai21-provider-apikey")
def _promptfoo(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    text = _fill(
        """
        # promptfooconfig.yaml
        description: "Refund policy answers"
        prompts:
          - file://prompts/refund.txt
        providers:
          - id: ai21:jamba-1.5-mini
            config:
              apiKey: ‹key›
              temperature: 0
          - id: openai:gpt-4.1-mini
        tests:
          - vars: { question: "Can I return opened items?" }
            assert:
              - type: contains
                value: "30 days"
        """,
        key=key,
    )
    return text, (key,)


@_shape("colab-notebook-cell-os-environ-with-output-hyperbolic")
def _colab(rng: random.Random) -> Built:
    key = _jwt(rng, {"alg": "HS256", "typ": "JWT"}, {"sub": _name(rng) + "@gmail.com", "iat": _epoch(rng)})
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": 3, "metadata": {"id": _alnum(rng, 12)},
             "source": ["import os\n", f"os.environ['HYPERBOLIC_API_KEY'] = '{key}'\n",
                        "!pip -q install openai"],
             "outputs": []},
            {"cell_type": "code", "execution_count": 4, "metadata": {"id": _alnum(rng, 12)},
             "source": ["print(client.models.list().data[0].id)"],
             "outputs": [{"name": "stdout", "output_type": "stream", "text": ["deepseek-ai/DeepSeek-R1\n"]}]},
        ],
        "metadata": {"colab": {"provenance": []}, "kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 0,
    }
    return json.dumps(nb, indent=1) + "\n", (key,)


@_shape("livebook-livemd-req-mailtrap-bearer")
def _livebook(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        # Transactional mail smoke test

        ```elixir
        Mix.install([{:req, "~> 0.5"}])
        ```

        ## Send

        ```elixir
        Req.post!("https://send.api.mailtrap.io/api/send",
          auth: {:bearer, "‹token›"},
          json: %{from: %{email: "noreply@harbor.example"}, to: [%{email: "qa@harbor.example"}],
                  subject: "smoke", text: "hello"}
        ).status
        ```

        <!-- livebook:{"output":true} -->

        ```
        200
        ```
        """,
        token=token,
    )
    return text, (token,)


@_shape("pluto-jl-notebook-env-assignment-cell")
def _pluto(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#%*+-=?@^_")
    a, b = _guid(rng), _guid(rng)
    text = _fill(
        """
        ### A Pluto.jl notebook ###
        # v0.20.4

        using Markdown
        using InteractiveUtils

        # ╔═╡ ‹a›
        using LibPQ, DataFrames

        # ╔═╡ ‹b›
        conn = LibPQ.Connection("host=warehouse.internal dbname=sales user=analyst password=‹pw›")

        # ╔═╡ Cell order:
        # ╠═‹a›
        # ╠═‹b›
        """,
        a=a, b=b, pw=pw,
    )
    return text, (pw,)


@_shape("ipython-history-g-grep-output")
def _ipython_history(rng: random.Random) -> Built:
    key = "sk_car_" + _alnum(rng, 22)
    text = _fill(
        """
        In [1]: %history -g cartesia
          12/3: from cartesia import Cartesia
          12/4: client = Cartesia(api_key="‹key›")
          12/9: client.tts.bytes(model_id="sonic-2", transcript="Bonjour", voice={"mode": "id", "id": "‹vid›"})
          15/1: import cartesia; cartesia.__version__
        """,
        key=key, vid=_guid(rng),
    )
    return text, (key,)


@_shape("bolt-diy-env-local-moonshot-key")
def _bolt_diy(rng: random.Random) -> Built:
    key = _alnum(rng, 40)
    text = _fill(
        """
        # Rename this file to .env.local once you have set your keys
        # Get your Moonshot API Key: https://platform.moonshot.ai/console/api-keys
        MOONSHOT_API_KEY=sk-‹key›
        MOONSHOT_API_BASE_URL=https://api.moonshot.ai/v1
        # Get your Together API Key
        TOGETHER_API_KEY=
        VITE_LOG_LEVEL=debug
        DEFAULT_NUM_CTX=32768
        """,
        key=key,
    )
    return text, ("sk-" + key,)


@_shape("localai-compose-api-key-env-list")
def _localai(rng: random.Random) -> Built:
    key = _alnum(rng, 24)
    text = _fill(
        """
        services:
          localai:
            image: localai/localai:latest-aio-gpu-nvidia-cuda-12
            ports: ["8080:8080"]
            environment:
              - DEBUG=false
              - API_KEY=‹key›
              - MODELS_PATH=/models
            volumes:
              - ./models:/models:cached
        """,
        key=key,
    )
    return text, (key,)


@_shape("mcp-streamable-http-server-log-query-api-key")
def _mcp_http_log(rng: random.Random) -> Built:
    key = _lower_alnum(rng, 32)
    stamp = _stamp(rng)
    sess = _guid(rng)
    text = _fill(
        """
        [‹stamp›] INFO  mcp.server.streamable_http: POST /mcp?apiKey=‹key›&profile=ops 200 (initialize) mcp-session-id=‹sess›
        [‹stamp›] INFO  mcp.server.streamable_http: POST /mcp 202 (notifications/initialized) mcp-session-id=‹sess›
        [‹stamp›] INFO  mcp.server.lowlevel: Processing request of type ListToolsRequest
        """,
        stamp=stamp, key=key, sess=sess,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# Shells, terminals, CLIs and secret stores
# --------------------------------------------------------------------------------------------------------


@_shape("nushell-history-txt-env-assignment")
def _nushell(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    text = _fill(
        """
        $ tail -n 5 ~/.config/nushell/history.txt
        ls | where size > 10mb | sort-by modified
        $env.CODACY_PROJECT_TOKEN = "‹key›"
        ^bash <(curl -Ls https://coverage.codacy.com/get.sh) report -r coverage/lcov.info
        http get https://api.github.com/repos/harbor/app/releases | first 3 | select tag_name
        exit
        """,
        key=key,
    )
    return text, (key,)


@_shape("xonsh-history-json-cmds")
def _xonsh(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    ts = float(_epoch(rng))
    hist = {"data": {"cmds": [
        {"inp": "cd ~/src/shop\n", "rtn": 0, "ts": [ts, ts + 0.01]},
        {"inp": f"$PGPASSWORD = '{pw}'\n", "rtn": 0, "ts": [ts + 9.2, ts + 9.21]},
        {"inp": "psql -h 127.0.0.1 -U shop -c 'select count(*) from orders'\n", "rtn": 0, "ts": [ts + 14.0, ts + 14.6]},
    ], "env": {"XONSH_VERSION": "0.19.1"}, "sessionid": _guid(rng), "ts": [ts, ts + 40.0]}, "locs": [69, 2014, 2398, 3001]}
    return f"$ cat ~/.local/share/xonsh/xonsh-{_guid(rng)}.json\n" + json.dumps(hist) + "\n", (pw,)


@_shape("tcsh-history-timestamps-setenv")
def _tcsh(rng: random.Random) -> Built:
    pw = _brief(rng)
    e = _epoch(rng)
    text = _fill(
        """
        #+‹e1›
        cd /export/home/oper/batch
        #+‹e2›
        setenv ORA_PWD ‹pw›
        #+‹e3›
        ./nightly_extract.csh >& extract.log &
        """,
        e1=e, e2=e + 31, e3=e + 47, pw=pw,
    )
    return text, (pw,)


@_shape("cmd-doskey-history-net-user-add")
def _doskey(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "!#*+-=?@_")
    text = _fill(
        """
        C:\\Windows\\system32>doskey /history
        hostname
        net user svc_backup ‹pw› /add /expires:never
        net localgroup "Backup Operators" svc_backup /add
        wmic useraccount where name='svc_backup' set PasswordExpires=false
        doskey /history
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("sudo-s-echo-pipe-in-deploy-script-log")
def _sudo_s(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        + ssh deploy@‹ip› 'echo ‹pw› | sudo -S systemctl restart harbor-api'
        [sudo] password for deploy: + ssh deploy@‹ip› 'systemctl is-active harbor-api'
        active
        + echo 'deploy finished'
        deploy finished
        """,
        ip=_ip(rng), pw=pw,
    )
    return text, (pw,)


@_shape("plink-pw-batch-file")
def _plink(rng: random.Random) -> Built:
    pw = _brief(rng, 10, 12)
    text = _fill(
        """
        @echo off
        REM rotate logs on the appliance every night (Task Scheduler)
        "C:\\Program Files\\PuTTY\\plink.exe" -batch -ssh admin@‹ip› -pw ‹pw› -hostkey "ssh-ed25519 255 SHA256:‹fp›" "logrotate -f /etc/logrotate.conf"
        if errorlevel 1 echo rotate failed >> C:\\ops\\rotate.log
        """,
        ip=_ip(rng), pw=pw, fp=_b64s(rng, 32).rstrip("="),
    )
    return text, (pw,)


@_shape("winscp-com-script-open-sftp-url-password")
def _winscp(rng: random.Random) -> Built:
    pw = _strong(rng, 15, "!*-_~")
    text = _fill(
        """
        winscp.com /ini=nul /log=C:\\ops\\upload.log /command ^
            "open sftp://edi_partner:‹pw›@sftp.partner-example.net/ -hostkey=""ssh-rsa 2048 ‹fp›‹q›" ^
            "put C:\\edi\\out\\*.x12 /inbound/" ^
            "exit"
        """,
        pw=pw, fp=_b64s(rng, 32).rstrip("="), q='""',
    )
    return text, (pw,)


@_shape("rar-a-hp-archive-command-in-ps-output")
def _rar(rng: random.Random) -> Built:
    pw = _passphrase(rng, 3, "-") + str(rng.randint(10, 99))
    text = _fill(
        """
        $ ps -eo pid,etime,args | grep [r]ar
         ‹pid›    00:42 rar a -hp‹pw› -m5 -v2g /backup/finance-2026Q1.rar /srv/finance/2026Q1
        """,
        pid=rng.randint(3000, 90000), pw=pw,
    )
    return text, (pw,)


@_shape("pdftk-encrypt-user-pw-owner-pw")
def _pdftk(rng: random.Random) -> Built:
    user_pw = _brief(rng, 8, 10)
    owner_pw = _strong(rng, 16, "#%+=@_")
    text = _fill(
        """
        for f in payslips/*.pdf; do
          pdftk "$f" output "out/$(basename "$f")" encrypt_128bit user_pw ‹u› owner_pw ‹o› allow printing
        done
        """,
        u=user_pw, o=owner_pw,
    )
    return text, (user_pw, owner_pw)


@_shape("aria2c-http-passwd-command-line")
def _aria2(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        $ aria2c -x8 -s8 --http-user=mirror --http-passwd=‹pw› https://dl.partner-example.net/datasets/ais-2025.parquet
        [#‹gid› 412MiB/2.1GiB(19%) CN:8 DL:38MiB ETA:44s]
        """,
        pw=pw, gid=_hexs(rng, 6),
    )
    return text, (pw,)


@_shape("apache-bench-ab-basic-auth-argument")
def _ab(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        $ ab -n 2000 -c 50 -A loadtest:‹pw› https://staging.harbor.example/api/health
        This is ApacheBench, Version 2.3 <$Revision: 1913912 $>
        Benchmarking staging.harbor.example (be patient)
        Requests per second:    812.44 [#/sec] (mean)
        Time per request:       61.543 [ms] (mean)
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("ltrace-getenv-return-value")
def _ltrace(rng: random.Random) -> Built:
    pw = _strong(rng, 20, "#%+=@_-")
    text = _fill(
        """
        $ ltrace -e getenv ./report-gen --month 2026-03
        report-gen->getenv("REPORT_DB_HOST")             = "db-ro.internal"
        report-gen->getenv("REPORT_DB_USER")             = "reporter"
        report-gen->getenv("REPORT_DB_PASS")             = "‹pw›"
        report-gen->getenv("TZ")                         = nil
        +++ exited (status 0) +++
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("bpftrace-execve-args-printf")
def _bpftrace(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "!#+=@_")
    text = _fill(
        """
        # bpftrace -e 'tracepoint:syscalls:sys_enter_execve { printf("%d %s ", pid, comm); join(args->argv); }'
        Attaching 1 probe...
        ‹p1› cron /bin/sh -c /opt/etl/run.sh
        ‹p2› run.sh mysql -h db1 -u etl -p‹pw› warehouse -e source /opt/etl/load.sql
        ‹p3› run.sh logger etl finished
        """,
        p1=rng.randint(1000, 9000), p2=rng.randint(9000, 20000), p3=rng.randint(20000, 30000), pw=pw,
    )
    return text, (pw,)


@_shape("osquery-processes-cmdline-json")
def _osquery(rng: random.Random) -> Built:
    pw = _alnum(rng, 18)
    rows = [
        {"pid": str(rng.randint(100, 999)), "name": "sshd", "cmdline": "sshd: /usr/sbin/sshd -D [listener]"},
        {"pid": str(rng.randint(1000, 9999)), "name": "java",
         "cmdline": f"java -Dspring.datasource.password={pw} -jar /opt/billing/billing.jar"},
    ]
    text = "osquery> .mode json\nosquery> SELECT pid, name, cmdline FROM processes WHERE name IN ('sshd','java');\n"
    return text + json.dumps(rows, indent=2) + "\n", (pw,)


@_shape("falco-alert-json-proc-cmdline-password")
def _falco(rng: random.Random) -> Built:
    pw = _human(rng)
    alert = {
        "hostname": "node-" + _lower_alnum(rng, 5),
        "output": f"{_time(rng)}.000000000: Notice Redirect stdout/stdin to network connection ... "
                  f"cmdline=sh -c mysql -uroot -p{pw} -h 127.0.0.1",
        "priority": "Notice",
        "rule": "Terminal shell in container",
        "time": _stamp(rng),
        "output_fields": {"container.name": "inventory-db-0", "proc.cmdline": f"sh -c mysql -uroot -p{pw} -h 127.0.0.1",
                          "user.name": "root", "k8s.ns.name": "inventory"},
        "tags": ["container", "shell", "mitre_execution"],
    }
    return json.dumps(alert) + "\n", (pw,)


@_shape("hydra-found-login-password-line")
def _hydra(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        Hydra v9.5 (c) 2023 by van Hauser/THC & David Maciejak - Please do not use in military or secret service organizations, or for illegal purposes.
        [DATA] max 4 tasks per 1 server, overall 4 tasks, 1200 login tries (l:1/p:1200), ~300 tries per task
        [DATA] attacking ssh://‹ip›:22/
        [22][ssh] host: ‹ip›   login: pentest   password: ‹pw›
        1 of 1 target successfully completed, 1 valid password found
        """,
        ip=_ip(rng), pw=pw,
    )
    return text, (pw,)


@_shape("netexec-smb-pwn3d-domain-user-password")
def _netexec(rng: random.Random) -> Built:
    pw = _human(rng, "!$")
    text = _fill(
        """
        $ nxc smb 10.20.0.0/24 -u svc_sql -p passwords.txt --continue-on-success
        SMB   10.20.0.14   445   FS01   [*] Windows Server 2022 Build 20348 x64 (name:FS01) (domain:corp.local) (signing:True)
        SMB   10.20.0.14   445   FS01   [-] corp.local\\svc_sql:Summer2025! STATUS_LOGON_FAILURE
        SMB   10.20.0.14   445   FS01   [+] corp.local\\svc_sql:‹pw› (Pwn3d!)
        """,
        pw=pw,
    )
    return text.replace("Summer2025!", "[redacted in report]"), (pw,)


@_shape("hashcat-show-hash-colon-plaintext")
def _hashcat(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    h = _hexs(rng, 32)
    text = _fill(
        """
        $ hashcat -m 1000 ntlm.txt --show
        ‹h›:‹pw›
        """,
        h=h, pw=pw,
    )
    return text, (pw,)


@_shape("mimikatz-logonpasswords-wdigest-password")
def _mimikatz(rng: random.Random) -> Built:
    pw = _strong(rng, 13, "!#@_")
    text = _fill(
        """
        Authentication Id : 0 ; ‹luid› (00000000:000‹hx›)
        Session           : Interactive from 1
        User Name         : jdoe
        Domain            : CORP
        Logon Server      : DC01
        ‹tab›msv :
        ‹tab› [00000003] Primary
        ‹tab› * Username : jdoe
        ‹tab› * Domain   : CORP
        ‹tab› * NTLM     : (hash omitted in report)
        ‹tab›wdigest :
        ‹tab› * Username : jdoe
        ‹tab› * Domain   : CORP
        ‹tab› * Password : ‹pw›
        """,
        luid=rng.randint(100000, 999999), hx=_hexs(rng, 5), pw=pw,
    )
    return text, (pw,)


@_shape("akeyless-get-secret-value-output")
def _akeyless(rng: random.Random) -> Built:
    pw = _strong(rng, 24, "#%+=@_-")
    text = _fill(
        """
        $ akeyless get-secret-value --name /prod/payments/db-password
        ‹pw›
        $ akeyless get-secret-value --name /prod/payments/db-user
        payments_rw
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("conjur-variable-set-value-history")
def _conjur(rng: random.Random) -> Built:
    key = _b64s(rng, 30)
    text = _fill(
        """
        $ conjur variable set -i prod/billing/stripe-webhook -v '‹key›'
        Value added
        $ conjur variable get -i prod/billing/stripe-webhook | wc -c
        41
        """,
        key=key,
    )
    return text, (key,)


@_shape("keeper-commander-get-record-json")
def _keeper(rng: random.Random) -> Built:
    pw = _strong(rng, 20)
    rec = {"record_uid": _b64u(rng, 16), "title": "Router admin (branch 3)", "type": "login",
           "fields": [{"type": "login", "value": ["admin"]}, {"type": "password", "value": [pw]},
                      {"type": "url", "value": ["https://192.168.30.1"]}],
           "custom": [], "notes": "reset after visit"}
    return "My Vault> get Router --format json\n" + json.dumps(rec, indent=2) + "\n", (pw,)


@_shape("berglas-access-secret-manager-ref")
def _berglas(rng: random.Random) -> Built:
    key = _b64s(rng, 32)
    text = _fill(
        """
        $ berglas access sm://harbor-prod/session-signing-key
        ‹key›
        $ gcloud run services describe api --format='value(spec.template.spec.containers[0].env)'
        {'name': 'SESSION_KEY', 'value': 'sm://harbor-prod/session-signing-key'}
        """,
        key=key,
    )
    return text, (key,)


@_shape("openbao-kv-get-field-password")
def _openbao(rng: random.Random) -> Built:
    pw = _strong(rng, 22, "#+=@_-")
    text = _fill(
        """
        $ bao kv get -mount=secret -field=password apps/ledger/postgres
        ‹pw›
        $ bao kv metadata get -mount=secret apps/ledger/postgres | grep current_version
        current_version         4
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("teleport-tctl-tokens-add-node-join-token")
def _teleport(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        $ tctl tokens add --type=node --ttl=1h
        The invite token: ‹token›
        This token will expire in 60 minutes.

        Run this on the new node to join the cluster:

        > teleport start \\
           --roles=node \\
           --token=‹token› \\
           --ca-pin=sha256:‹pin› \\
           --auth-server=teleport.harbor.example:443
        """,
        token=token, pin=_hexs(rng, 64),
    )
    return text, (token,)


@_shape("headscale-preauthkeys-create-output")
def _headscale(rng: random.Random) -> Built:
    key = _hexs(rng, 48)
    text = _fill(
        """
        $ headscale preauthkeys create --user homelab --reusable --expiration 24h
        ‹key›
        $ tailscale up --login-server https://hs.home.example --authkey ‹key›
        """,
        key=key,
    )
    return text, (key,)


@_shape("netbird-up-setup-key-cloud-init")
def _netbird(rng: random.Random) -> Built:
    key = _guid(rng).upper()
    text = _fill(
        """
        #cloud-config
        runcmd:
          - curl -fsSL https://pkgs.netbird.io/install.sh | sh
          - netbird up --management-url https://nb.harbor.example:443 --setup-key ‹key›
        """,
        key=key,
    )
    return text, (key,)


@_shape("zerotier-central-api-token-curl")
def _zerotier(rng: random.Random) -> Built:
    token = _alnum(rng, 32)
    text = _fill(
        """
        $ curl -s -H "Authorization: token ‹token›" https://api.zerotier.com/api/v1/network/‹net›/member | jq '.[].name'
        "nas"
        "laptop-hana"
        """,
        token=token, net=_hexs(rng, 16),
    )
    return text, (token,)


@_shape("cloudflared-service-install-tunnel-token")
def _cloudflared(rng: random.Random) -> Built:
    token = base64.b64encode(json.dumps(
        {"a": _hexs(rng, 32), "t": _guid(rng), "s": _b64s(rng, 32)}, separators=(",", ":")).encode()).decode()
    text = _fill(
        """
        PS C:\\Users\\admin> cloudflared.exe service install ‹token›
        2026-03-02T10:14:22Z INF Installing cloudflared Windows service
        2026-03-02T10:14:23Z INF cloudflared agent service is installed windowsServiceName=Cloudflared
        """,
        token=token,
    )
    return text, (token,)


@_shape("openvpn-inline-tls-crypt-static-key-line")
def _ovpn_tls_crypt(rng: random.Random) -> Built:
    lines = [_hexs(rng, 32) for _ in range(16)]
    text = "client\ndev tun\nproto udp\nremote vpn.harbor.example 1194\nremote-cert-tls server\n"
    text += "<tls-crypt>\n#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n"
    text += "\n".join(lines) + "\n-----END OpenVPN Static key V1-----\n</tls-crypt>\n"
    return text, (lines[0],)


@_shape("talosctl-gen-secrets-yaml-cluster-secret")
def _talos(rng: random.Random) -> Built:
    secret = _b64s(rng, 32)
    text = _fill(
        """
        $ talosctl gen secrets -o secrets.yaml && sed -n '1,12p' secrets.yaml
        cluster:
            id: ‹cid›
            secret: ‹secret›
        secrets:
            bootstraptoken: (moved to vault, see OPS-2291)
            secretboxencryptionsecret: (moved to vault, see OPS-2291)
        trustdinfo:
            token: (moved to vault, see OPS-2291)
        """,
        cid=_b64s(rng, 32), secret=secret,
    )
    return text, (secret,)


@_shape("microk8s-add-node-join-command")
def _microk8s(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    ip = _ip(rng)
    text = _fill(
        """
        $ microk8s add-node
        From the node you wish to join to this cluster, run the following:
        microk8s join ‹ip›:25000/‹token›/‹tail›

        Use the '--worker' flag to join a node as a worker not running the control plane, eg:
        microk8s join ‹ip›:25000/‹token›/‹tail› --worker
        """,
        ip=ip, token=token, tail=_hexs(rng, 12),
    )
    return text, (token,)


@_shape("butane-storage-file-inline-env-contents")
def _butane(rng: random.Random) -> Built:
    pw = _strong(rng, 18, "#%+=@_")
    text = _fill(
        """
        variant: fcos
        version: 1.6.0
        storage:
          files:
            - path: /etc/pgbackup/env
              mode: 0600
              contents:
                inline: |
                  PGHOST=db.internal
                  PGUSER=backup
                  PGPASSWORD=‹pw›
        systemd:
          units:
            - name: pgbackup.timer
              enabled: true
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("kanidm-recover-account-new-password")
def _kanidm(rng: random.Random) -> Built:
    pw = _alnum(rng, 48)
    text = _fill(
        """
        $ docker exec -i -t kanidmd kanidmd recover-account idm_admin
        00000000-0000-0000-0000-000000000000 INFO     ｉ [info]: Running account recovery ...
        00000000-0000-0000-0000-000000000000 INFO     ｉ [info]: Be sure to use the new password: ‹pw›
        new_password: "‹pw›"
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("salesforce-sfdx-auth-url-file")
def _sfdx(rng: random.Random) -> Built:
    refresh = "5Aep861" + _pick(rng, _LETTERS_DIGITS + "._", 80)
    text = _fill(
        """
        $ sf org display --target-org prod --verbose --json | jq -r .result.sfdxAuthUrl > authurl.txt
        $ cat authurl.txt
        force://PlatformCLI::‹r›@harbor.my.salesforce.com
        $ sf org login sfdx-url --sfdx-url-file authurl.txt --alias prod-ci
        """,
        r=refresh,
    )
    return text, (refresh,)


@_shape("dokku-config-show-output")
def _dokku(rng: random.Random) -> Built:
    secret = _hexs(rng, 64)
    text = _fill(
        """
        $ dokku config:show shop
        =====> shop env vars
        DATABASE_URL:       (linked: postgres shop-db)
        DOKKU_APP_TYPE:     herokuish
        DOKKU_PROXY_PORT:   80
        SECRET_KEY_BASE:    ‹secret›
        WEB_CONCURRENCY:    2
        """,
        secret=secret,
    )
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# CI, code quality, testing clouds and deploy
# --------------------------------------------------------------------------------------------------------


@_shape("harness-delegate-docker-run-token")
def _harness(rng: random.Random) -> Built:
    token = _b64s(rng, 33)
    text = _fill(
        """
        docker run --cpus=1 --memory=2g \\
          -e DELEGATE_NAME=docker-delegate \\
          -e NEXT_GEN="true" \\
          -e DELEGATE_TYPE="DOCKER" \\
          -e ACCOUNT_ID=‹acct› \\
          -e DELEGATE_TOKEN=‹token› \\
          -e MANAGER_HOST_AND_PORT=https://app.harness.io us-docker.pkg.dev/gar-prod-setup/harness-public/harness/delegate:25.02.85300
        """,
        acct=_alnum(rng, 22), token=token,
    )
    return text, (token,)


@_shape("codefresh-auth-create-context-api-key")
def _codefresh(rng: random.Random) -> Built:
    key = _hexs(rng, 24) + "." + _hexs(rng, 32)
    text = _fill(
        """
        $ codefresh auth create-context --api-key ‹key›
        Context: default created for user harbor-ci
        $ codefresh get pipelines --limit 2
        NAME                 UPDATED       LAST EXECUTED
        harbor/api-build     2 days ago    3 hours ago
        """,
        key=key,
    )
    return text, (key,)


@_shape("atlantis-server-flags-gitea-token-webhook-secret")
def _atlantis(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    whs = _alnum(rng, 32)
    text = _fill(
        """
        ExecStart=/usr/local/bin/atlantis server \\
            --atlantis-url=https://atlantis.harbor.example \\
            --gitea-base-url=https://git.harbor.example \\
            --gitea-user=atlantis-bot \\
            --gitea-token=‹token› \\
            --gitea-webhook-secret=‹whs› \\
            --repo-allowlist='git.harbor.example/infra/*'
        """,
        token=token, whs=whs,
    )
    return text, (token, whs)


@_shape("halyard-config-docker-registry-account-password")
def _halyard(rng: random.Random) -> Built:
    pw = _strong(rng, 20, "#+=@_-")
    text = _fill(
        """
        # ~/.hal/config (excerpt)
        providers:
          dockerRegistry:
            enabled: true
            accounts:
            - name: harbor-registry
              requiredGroupMembership: []
              address: https://registry.harbor.example
              username: spinnaker
              password: ‹pw›
              repositories:
              - platform/api
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("flux-create-secret-git-export-yaml")
def _flux(rng: random.Random) -> Built:
    pw = _alnum(rng, 40)
    text = _fill(
        """
        $ flux create secret git infra-repo --url=https://git.harbor.example/infra/fleet --username=flux --password=‹pw› --export
        ---
        apiVersion: v1
        kind: Secret
        metadata:
          name: infra-repo
          namespace: flux-system
        stringData:
          password: ‹pw›
          username: flux
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("nx-json-nx-cloud-access-token")
def _nx_cloud(rng: random.Random) -> Built:
    token = _b64s(rng, 45)
    config = {"$schema": "./node_modules/nx/schemas/nx-schema.json", "nxCloudAccessToken": token,
              "targetDefaults": {"build": {"cache": True, "dependsOn": ["^build"]}},
              "defaultBase": "main"}
    return "nx.json\n" + json.dumps(config, indent=2) + "\n", (token,)


@_shape("turborepo-dot-turbo-config-json-token")
def _turbo(rng: random.Random) -> Built:
    token = _alnum(rng, 24)
    text = "$ cat .turbo/config.json\n" + json.dumps({"teamid": "team_" + _alnum(rng, 24), "token": token,
                                                   "apiurl": "https://cache.harbor.example"}) + "\n"
    return text, (token,)


@_shape("appcenter-cli-login-token-in-fastfile-lane")
def _appcenter(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    text = _fill(
        """
        lane :beta do
          gradle(task: "assembleRelease")
          sh("appcenter login --token ‹token› && appcenter distribute release -f ../app/build/outputs/apk/release/app-release.apk -g Testers --app harbor/android")
        end
        """,
        token=token,
    )
    return text, (token,)


@_shape("chromatic-cli-project-token-package-json-script")
def _chromatic(rng: random.Random) -> Built:
    token = "chpt_" + _hexs(rng, 15)
    pkg = {"name": "harbor-ui", "scripts": {"storybook": "storybook dev -p 6006",
                                            "chromatic": f"npx chromatic --project-token={token} --exit-zero-on-changes"}}
    return json.dumps(pkg, indent=2) + "\n", (token,)


@_shape("percy-token-github-workflow-env-plain")
def _percy(rng: random.Random) -> Built:
    token = "web_" + _hexs(rng, 64)
    text = _fill(
        """
        jobs:
          visual:
            runs-on: ubuntu-24.04
            env:
              PERCY_TOKEN: ‹token›
            steps:
              - uses: actions/checkout@v4
              - run: npx percy exec -- npx playwright test --project=visual
        """,
        token=token,
    )
    return text, (token,)


@_shape("browserstack-yml-access-key")
def _browserstack(rng: random.Random) -> Built:
    key = _alnum(rng, 20)
    text = _fill(
        """
        userName: harbor_qa9Xk2
        accessKey: ‹key›
        platforms:
          - os: Windows
            osVersion: 11
            browserName: Chrome
            browserVersion: latest
        parallelsPerPlatform: 2
        browserstackLocal: true
        """,
        key=key,
    )
    return text, (key,)


@_shape("saucelabs-wdio-conf-access-key")
def _sauce(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        export const config = {
            user: process.env.SAUCE_USERNAME || 'harbor-qa',
            key: process.env.SAUCE_ACCESS_KEY || '‹key›',
            region: 'eu',
            services: ['sauce'],
            capabilities: [{ browserName: 'safari', platformName: 'macOS 14', browserVersion: 'latest' }],
        }
        """,
        key=key,
    )
    return text, (key,)


@_shape("deepsource-dsn-userinfo-token")
def _deepsource(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        - name: Report test coverage to DeepSource
          run: |
            curl https://deepsource.io/cli | sh
            DEEPSOURCE_DSN=https://‹token›@app.deepsource.com ./bin/deepsource report --analyzer test-coverage --key python --value-file ./coverage.xml
        """,
        token=token,
    )
    return text, (token,)


@_shape("semgrep-app-token-gitlab-ci-variables")
def _semgrep(rng: random.Random) -> Built:
    token = _hexs(rng, 64)
    text = _fill(
        """
        semgrep:
          image: semgrep/semgrep
          script: semgrep ci
          variables:
            SEMGREP_APP_TOKEN: "‹token›"
          rules:
            - if: $CI_PIPELINE_SOURCE == "merge_request_event"
        """,
        token=token,
    )
    return text, (token,)


@_shape("ggshield-gitguardian-api-key-pre-commit-env")
def _ggshield(rng: random.Random) -> Built:
    key = _alnum(rng, 69)
    text = _fill(
        """
        $ cat .envrc
        export GITGUARDIAN_API_KEY=‹key›
        export GITGUARDIAN_INSTANCE=https://dashboard.gitguardian.com
        $ pre-commit run ggshield --all-files
        ggshield (GitGuardian Shield)...........................................Passed
        """,
        key=key,
    )
    return text, (key,)


@_shape("socket-dev-cli-api-key-sktsec")
def _socket(rng: random.Random) -> Built:
    key = "sktsec_" + _alnum(rng, 40) + "_api"
    text = _fill(
        """
        $ SOCKET_SECURITY_API_KEY=‹key› socket scan create --repo harbor-web --branch main .
        ✔ Found 1 local package manifest
        ✔ Scan created: https://socket.dev/dashboard/org/harbor/sbom/‹sid›
        """,
        key=key, sid=_guid(rng),
    )
    return text, (key,)


@_shape("veracode-credentials-ini-api-key-secret")
def _veracode(rng: random.Random) -> Built:
    secret = _hexs(rng, 128)
    text = _fill(
        """
        $ cat ~/.veracode/credentials
        [default]
        veracode_api_key_id = ‹kid›
        veracode_api_key_secret = ‹secret›
        """,
        kid=_hexs(rng, 32), secret=secret,
    )
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# Clouds, edge, storage and data stores
# --------------------------------------------------------------------------------------------------------


@_shape("akamai-edgerc-client-secret-access-token")
def _akamai(rng: random.Random) -> Built:
    secret = _b64s(rng, 32)
    access = "akab-" + _lower_alnum(rng, 16) + "-" + _lower_alnum(rng, 16)
    text = _fill(
        """
        [default]
        client_secret = ‹secret›
        host = akab-‹h1›-‹h2›.luna.akamaiapis.net
        access_token = ‹access›
        client_token = akab-‹c1›-‹c2›
        """,
        secret=secret, h1=_lower_alnum(rng, 16), h2=_lower_alnum(rng, 16), access=access,
        c1=_lower_alnum(rng, 16), c2=_lower_alnum(rng, 16),
    )
    return text, (secret, access)


@_shape("cloudflare-ddns-config-json-api-token")
def _cf_ddns(rng: random.Random) -> Built:
    token = _pick(rng, _URL_ALPHABET, 40)
    config = {"cloudflare": [{"authentication": {"api_token": token}, "zone_id": _hexs(rng, 32),
                              "subdomains": [{"name": "home", "proxied": False}]}],
              "a": True, "aaaa": False, "purgeUnknownRecords": False, "ttl": 300}
    return json.dumps(config, indent=2) + "\n", (token,)


@_shape("volcengine-ve-configure-set-secret-key")
def _volcengine(rng: random.Random) -> Built:
    sk = base64.b64encode(_hexs(rng, 32).encode()).decode()
    text = _fill(
        """
        $ ve configure set --profile prod --region cn-beijing --access-key AKLT‹ak› --secret-key ‹sk›
        $ ve ark ListEndpoints --profile prod | jq '.Result.Items[].Name'
        "doubao-seed-1-6-prod"
        """,
        ak=_alnum(rng, 44), sk=sk,
    )
    return text, (sk,)


@_shape("upctl-config-yaml-password")
def _upctl(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#+=?@")
    text = _fill(
        """
        $ cat ~/.config/upctl.yaml
        username: harbor-api
        password: "‹pw›"
        $ upctl server list
         UUID                                   Hostname   Plan        Zone      State
        ────────────────────────────────────── ────────── ─────────── ───────── ─────────
         ‹u›   web-1      2xCPU-4GB   fi-hel2   started
        """,
        pw=pw, u=_guid(rng),
    )
    return text, (pw,)


@_shape("civo-apikey-add-and-current")
def _civo(rng: random.Random) -> Built:
    key = _alnum(rng, 50)
    text = _fill(
        """
        $ civo apikey add harbor ‹key›
        Saved the API Key ‹key› as harbor
        $ civo apikey current harbor
        Set the default API Key to be harbor
        """,
        key=key,
    )
    return text, (key,)


@_shape("koyeb-cli-config-yaml-token")
def _koyeb(rng: random.Random) -> Built:
    token = _alnum(rng, 64)
    text = "$ cat ~/.koyeb.yaml\norganization: \"\"\ntoken: " + token + "\n"
    return text, (token,)


@_shape("storj-uplink-access-import-grant")
def _storj(rng: random.Random) -> Built:
    grant = "1" + _pick(rng, _BASE58, 230)
    text = _fill(
        """
        $ uplink access import main ‹grant›
        Imported access "main" to "/home/hana/.config/storj/uplink/access.json"
        $ uplink ls sj://backups
        PRE photos/
        """,
        grant=grant,
    )
    return text, (grant,)


@_shape("usacloud-profile-json-access-token-secret")
def _usacloud(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    profile = {"Name": "default", "AccessToken": _guid(rng), "AccessTokenSecret": secret,
               "Zone": "is1a", "DefaultOutputType": "table"}
    return "$ cat ~/.usacloud/default/config.json\n" + json.dumps(profile, indent=2) + "\n", (secret,)


@_shape("ncloud-configure-secret-key-prompt-transcript")
def _ncloud(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    text = _fill(
        """
        $ ncloud configure
        set [DEFAULT]'s configuration.
        Ncloud Access Key ID []: ncp_iam_BPAMK‹ak›
        Ncloud Secret Access Key []: ‹secret›
        Ncloud API URL (default:https://ncloud.apigw.ntruss.com) []:
        """,
        ak=_upper_alnum(rng, 15), secret=secret,
    )
    return text, (secret,)


@_shape("timeweb-cloud-twc-config-toml-jwt")
def _timeweb(rng: random.Random) -> Built:
    token = _jwt(rng, {"alg": "RS512", "typ": "JWT", "kid": _b64u(rng, 32)},
                 {"login": "ab" + _digits(rng, 5), "jti": _guid(rng)}, 256)
    text = "$ cat ~/.twcrc\n[default]\ntoken = \"" + token + "\"\n"
    return text, (token,)


@_shape("edgedb-instance-credentials-json-password")
def _edgedb(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    creds = {"host": "localhost", "port": 10701, "user": "edgedb", "password": pw, "database": "edgedb",
             "branch": "main", "tls_cert_data": "-----BEGIN CERTIFICATE-----\n(omitted)\n-----END CERTIFICATE-----\n",
             "tls_security": "default"}
    return "$ cat ~/.config/edgedb/credentials/harbor_dev.json\n" + json.dumps(creds, indent=2) + "\n", (pw,)


@_shape("tidb-cloud-mysql-uri-in-streamlit-secrets-toml")
def _tidb(rng: random.Random) -> Built:
    pw = _alnum(rng, 16)
    text = _fill(
        """
        [connections.tidb]
        dialect = "mysql"
        url = "mysql+pymysql://‹u›.root:‹pw›@gateway01.eu-central-1.prod.aws.tidbcloud.com:4000/test?ssl_verify_cert=true"
        """,
        u=_alnum(rng, 15), pw=pw,
    )
    return text, (pw,)


@_shape("aiven-avn-service-get-json-service-uri")
def _aiven(rng: random.Random) -> Built:
    pw = "AVNS_" + _pick(rng, _LETTERS_DIGITS + "-_", 19)
    text = _fill(
        """
        $ avn service get pg-harbor --json | jq '{state, service_uri}'
        {
          "state": "RUNNING",
          "service_uri": "postgres://avnadmin:‹pw›@pg-harbor-harbor.e.aivencloud.com:21334/defaultdb?sslmode=require"
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("atlas-cli-dbusers-create-password-flag")
def _atlas_cli(rng: random.Random) -> Built:
    pw = _alnum(rng, 20)
    text = _fill(
        """
        $ atlas dbusers create readWriteAnyDatabase --username svc-orders --password ‹pw› --projectId ‹pid›
        Database user 'svc-orders' successfully created.
        """,
        pw=pw, pid=_hexs(rng, 24),
    )
    return text, (pw,)


@_shape("redis-cloud-cli-uri-with-default-user")
def _redis_cloud(rng: random.Random) -> Built:
    pw = _alnum(rng, 32)
    port = rng.randint(10000, 19999)
    text = _fill(
        """
        $ redis-cli -u redis://default:‹pw›@redis-‹port›.c‹n›.eu-west-1-2.ec2.redns.redis-cloud.com:‹port›
        Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.
        redis-‹port›.c‹n›.eu-west-1-2.ec2.redns.redis-cloud.com:‹port›> DBSIZE
        (integer) 1842
        """,
        pw=pw, port=port, n=rng.randint(1, 300),
    )
    return text, (pw,)


@_shape("zeromq-curve-keypair-z85-secret-printed")
def _zmq(rng: random.Random) -> Built:
    public = _pick(rng, _Z85.replace("&", "").replace("<", "").replace(">", ""), 40)
    secret = _pick(rng, _Z85.replace("&", "").replace("<", "").replace(">", ""), 40)
    text = _fill(
        """
        >>> import zmq
        >>> public, secret = zmq.curve_keypair()
        >>> print(public.decode(), secret.decode(), sep="\\n")
        ‹public›
        ‹secret›
        >>> server.curve_secretkey = secret
        """,
        public=public, secret=secret,
    )
    return text, (secret,)


@_shape("emqx-conf-dashboard-default-password")
def _emqx(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "#+=@_")
    text = _fill(
        """
        ## etc/emqx.conf
        node {
          name = "emqx@127.0.0.1"
          cookie = "(set via EMQX_NODE__COOKIE)"
          data_dir = "data"
        }
        dashboard {
          listeners.http.bind = 18083
          default_username = "admin"
          default_password = "‹pw›"
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("hivemq-cloud-paho-username-pw-set")
def _hivemq(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#+=@_")
    text = _fill(
        """
        import paho.mqtt.client as paho

        client = paho.Client(callback_api_version=paho.CallbackAPIVersion.VERSION2, client_id="greenhouse-7")
        client.tls_set(tls_version=paho.ssl.PROTOCOL_TLS)
        client.username_pw_set("greenhouse", "‹pw›")
        client.connect("‹host›.s1.eu.hivemq.cloud", 8883)
        """,
        pw=pw, host=_hexs(rng, 32),
    )
    return text, (pw,)


@_shape("questdb-server-conf-pg-password")
def _questdb(rng: random.Random) -> Built:
    pw = _brief(rng, 10, 12)
    text = _fill(
        """
        # conf/server.conf
        http.bind.to=0.0.0.0:9000
        pg.enabled=true
        pg.net.bind.to=0.0.0.0:8812
        pg.user=admin
        pg.password=‹pw›
        pg.readonly.user.enabled=true
        pg.readonly.user=reader
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("sqitch-conf-target-uri-password")
def _sqitch(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        [core]
        ‹tab›engine = pg
        [engine "pg"]
        ‹tab›target = prod
        [target "prod"]
        ‹tab›uri = db:pg://sqitch:‹pw›@pg-prod.internal/ledger
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("atlas-schema-apply-url-in-makefile")
def _ariga_atlas(rng: random.Random) -> Built:
    pw = _alnum(rng, 22)
    text = _fill(
        """
        migrate-prod:
        ‹tab›atlas schema apply \\
        ‹tab›  --url "postgres://migrator:‹pw›@db.prod.internal:5432/app?sslmode=require" \\
        ‹tab›  --to file://schema.hcl \\
        ‹tab›  --dev-url "docker://postgres/16/dev"
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("rethinkdb-python-connect-password-kwarg")
def _rethinkdb(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        from rethinkdb import r

        conn = r.connect(host="rdb.internal", port=28015, db="telemetry", user="ingest", password="‹pw›")
        r.table("events").insert(batch).run(conn)
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("singlestore-notebook-connection-url")
def _singlestore(rng: random.Random) -> Built:
    pw = _alnum(rng, 32)
    text = _fill(
        """
        In [2]: import singlestoredb as s2
        In [3]: conn = s2.connect("admin:‹pw›@svc-‹sid›-dml.aws-virginia-6.svc.singlestore.com:3306/analytics")
        In [4]: conn.is_connected()
        Out[4]: True
        """,
        pw=pw, sid=_guid(rng),
    )
    return text, (pw,)


@_shape("momento-cli-configure-api-key")
def _momento(rng: random.Random) -> Built:
    key = _jwt(rng, {"alg": "HS512"}, {"sub": "hana@harbor.example", "ver": 1, "p": _b64s(rng, 24)}, 64)
    text = _fill(
        """
        $ cat ~/.momento/credentials
        [default]
        token=‹key›
        """,
        key=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# Messaging, payments, observability, identity, apps and devices
# --------------------------------------------------------------------------------------------------------


@_shape("livekit-env-local-api-secret")
def _livekit(rng: random.Random) -> Built:
    secret = _alnum(rng, 43)
    text = _fill(
        """
        LIVEKIT_URL=wss://harbor-voice-‹p›.livekit.cloud
        LIVEKIT_API_KEY=API‹k›
        LIVEKIT_API_SECRET=‹secret›
        DEEPGRAM_API_KEY=
        """,
        p=_lower_alnum(rng, 8), k=_alnum(rng, 12), secret=secret,
    )
    return text, (secret,)


@_shape("agora-token-server-app-certificate-env")
def _agora(rng: random.Random) -> Built:
    cert = _hexs(rng, 32)
    text = _fill(
        """
        $ docker run -d -p 8080:8080 -e APP_ID=‹app› -e APP_CERTIFICATE=‹cert› agoraio/tokenserver
        ‹cid›
        """,
        app=_hexs(rng, 32), cert=cert, cid=_hexs(rng, 64),
    )
    return text, (cert,)


@_shape("daily-co-rest-api-curl-bearer")
def _daily(rng: random.Random) -> Built:
    key = _hexs(rng, 64)
    text = _fill(
        """
        curl -H "Content-Type: application/json" \\
             -H "Authorization: Bearer ‹key›" \\
             -XPOST -d '{"properties":{"exp":‹exp›,"enable_chat":true}}' \\
             https://api.daily.co/v1/rooms/
        """,
        key=key, exp=_epoch(rng),
    )
    return text, (key,)


@_shape("signalwire-compatibility-api-token-python")
def _signalwire(rng: random.Random) -> Built:
    token = "PT" + _hexs(rng, 48)
    text = _fill(
        """
        from signalwire.rest import Client as signalwire_client

        client = signalwire_client("‹proj›", "‹token›", signalwire_space_url="harbor.signalwire.com")
        message = client.messages.create(from_="+15550100", to="+15550199", body="Pickup ready")
        """,
        proj=_guid(rng), token=token,
    )
    return text, (token,)


@_shape("dingtalk-robot-webhook-access-token-and-sign-secret")
def _dingtalk(rng: random.Random) -> Built:
    token = _hexs(rng, 64)
    secret = "SEC" + _hexs(rng, 64)
    text = _fill(
        """
        # alertmanager-dingtalk config.yml
        targets:
          ops:
            url: https://oapi.dingtalk.com/robot/send?access_token=‹token›
            secret: ‹secret›
            mention:
              all: false
        """,
        token=token, secret=secret,
    )
    return text, (token, secret)


@_shape("wecom-gettoken-url-corpsecret-in-log")
def _wecom(rng: random.Random) -> Built:
    secret = _pick(rng, _URL_ALPHABET, 43)
    text = _fill(
        """
        ‹stamp› DEBUG requests GET https://qyapi.weixin.qq.com/cgi-bin/gettoken?corpid=ww‹corp›&corpsecret=‹secret›
        ‹stamp› DEBUG requests "GET /cgi-bin/gettoken HTTP/1.1" 200 277
        """,
        stamp=_stamp(rng), corp=_hexs(rng, 16), secret=secret,
    )
    return text, (secret,)


@_shape("line-messaging-api-channel-secret-and-access-token-env")
def _line_api(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    token = _pick(rng, _LETTERS_DIGITS + "+/", 171) + "="
    text = _fill(
        """
        # fly secrets import < line.env
        LINE_CHANNEL_ID=‹cid›
        LINE_CHANNEL_SECRET=‹secret›
        LINE_CHANNEL_ACCESS_TOKEN=‹token›
        """,
        cid=_digits(rng, 10), secret=secret, token=token,
    )
    return text, (secret, token)


@_shape("msg91-authkey-php-curl")
def _msg91(rng: random.Random) -> Built:
    key = _digits(rng, 6) + "A" + _alnum(rng, 17)
    text = _fill(
        """
        curl_setopt_array($curl, [
          CURLOPT_URL => "https://control.msg91.com/api/v5/flow",
          CURLOPT_CUSTOMREQUEST => "POST",
          CURLOPT_HTTPHEADER => [
            "accept: application/json",
            "authkey: ‹key›",
            "content-type: application/json"
          ],
        ]);
        """,
        key=key,
    )
    return text, (key,)


@_shape("gotify-push-curl-app-token-query")
def _gotify(rng: random.Random) -> Built:
    token = "A" + _pick(rng, _LETTERS_DIGITS + ".-_", 14)
    text = (f'0 3 * * * /usr/local/bin/backup.sh || curl -s "https://push.home.example/message?token={token}" '
            '-F "title=backup failed" -F "priority=8"\n')
    return text, (token,)


@_shape("apprise-yaml-mailto-userinfo-password")
def _apprise(rng: random.Random) -> Built:
    pw = _alnum(rng, 16).lower()
    text = _fill(
        """
        # ~/.config/apprise/apprise.yml
        version: 1
        urls:
          - mailto://alerts.harbor:‹pw›@gmail.com?to=oncall@harbor.example:
              tag: mail
          - ntfys://ntfy.sh/harbor-alerts:
              tag: push
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("mpesa-daraja-consumer-secret-and-passkey-env")
def _daraja(rng: random.Random) -> Built:
    secret = _alnum(rng, 64)
    passkey = _hexs(rng, 64)
    text = _fill(
        """
        MPESA_ENV=production
        MPESA_CONSUMER_KEY=‹ck›
        MPESA_CONSUMER_SECRET=‹secret›
        MPESA_SHORTCODE=‹sc›
        MPESA_PASSKEY=‹passkey›
        MPESA_CALLBACK_URL=https://api.duka.example/mpesa/callback
        """,
        ck=_alnum(rng, 48), secret=secret, sc=_digits(rng, 6), passkey=passkey,
    )
    return text, (secret, passkey)


@_shape("omise-ruby-secret-key-initializer")
def _omise(rng: random.Random) -> Built:
    key = "skey_" + _lower_alnum(rng, 19)
    text = _fill(
        """
        # config/initializers/omise.rb
        Omise.public_api_key = "pkey_‹pk›"
        Omise.secret_api_key = "‹key›"
        Omise.api_version = "2019-05-29"
        """,
        pk=_lower_alnum(rng, 19), key=key,
    )
    return text, (key,)


@_shape("toss-payments-secret-key-java-properties")
def _toss(rng: random.Random) -> Built:
    key = "live_sk_" + _alnum(rng, 28)
    text = _fill(
        """
        # application-prod.properties
        toss.client-key=live_ck_‹ck›
        toss.secret-key=‹key›
        toss.confirm-url=https://api.tosspayments.com/v1/payments/confirm
        """,
        ck=_alnum(rng, 28), key=key,
    )
    return text, (key,)


@_shape("iyzico-php-options-secret-key")
def _iyzico(rng: random.Random) -> Built:
    secret = "sandbox-" + _alnum(rng, 32) if rng.random() < 0.3 else _alnum(rng, 32)
    text = _fill(
        """
        $options = new \\Iyzipay\\Options();
        $options->setApiKey("‹ak›");
        $options->setSecretKey("‹secret›");
        $options->setBaseUrl("https://api.iyzipay.com");
        """,
        ak=_alnum(rng, 32), secret=secret,
    )
    return text, (secret,)


@_shape("authorize-net-xml-merchant-transaction-key")
def _authnet(rng: random.Random) -> Built:
    key = _alnum(rng, 16)
    text = _fill(
        """
        <?xml version="1.0" encoding="utf-8"?>
        <getTransactionListRequest xmlns="AnetApi/xml/v1/schema/AnetApiSchema.xsd">
          <merchantAuthentication>
            <name>‹login›</name>
            <transactionKey>‹key›</transactionKey>
          </merchantAuthentication>
          <batchId>‹batch›</batchId>
        </getTransactionListRequest>
        """,
        login=_alnum(rng, 10), key=key, batch=_digits(rng, 8),
    )
    return text, (key,)


@_shape("binance-ccxt-config-secret")
def _binance(rng: random.Random) -> Built:
    secret = _alnum(rng, 64)
    text = _fill(
        """
        exchange = ccxt.binance({
            "apiKey": "‹ak›",
            "secret": "‹secret›",
            "enableRateLimit": True,
            "options": {"defaultType": "future"},
        })
        """,
        ak=_alnum(rng, 64), secret=secret,
    )
    return text, (secret,)


@_shape("infura-web3-provider-url-basic-auth-secret")
def _infura(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    text = (f"const provider = new ethers.JsonRpcProvider(\"https://{_hexs(rng, 32)}:{secret}"
            "@mainnet.infura.io/v3/\");\n")
    return text, (secret,)


@_shape("hardhat-config-etherscan-api-key")
def _etherscan(rng: random.Random) -> Built:
    key = _upper_alnum(rng, 34)
    text = _fill(
        """
        module.exports = {
          solidity: "0.8.28",
          networks: { sepolia: { url: process.env.SEPOLIA_RPC ?? "", accounts: [] } },
          etherscan: { apiKey: "‹key›" },
        };
        """,
        key=key,
    )
    return text, (key,)


@_shape("helius-rpc-url-api-key-query")
def _helius(rng: random.Random) -> Built:
    key = _guid(rng)
    text = f"RPC_URL=https://mainnet.helius-rpc.com/?api-key={key}\nCOMMITMENT=confirmed\n"
    return text, (key,)


@_shape("mixpanel-service-account-secret-export-curl")
def _mixpanel(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    text = _fill(
        """
        curl --request GET \\
          --url 'https://data.mixpanel.com/api/2.0/export?project_id=‹pid›&from_date=2026-02-01&to_date=2026-02-28' \\
          -u 'export-bot.‹sa›.mp-service-account:‹secret›'
        """,
        pid=_digits(rng, 7), sa=_digits(rng, 6), secret=secret,
    )
    return text, (secret,)


@_shape("rsyslog-loggly-template-customer-token")
def _loggly(rng: random.Random) -> Built:
    token = _guid(rng)
    text = (f'$template LogglyFormat,"<%pri%>%protocol-version% %timestamp:::date-rfc3339% %HOSTNAME% '
            f'%app-name% %procid% %msgid% [{token}@41058 tag=\\"harbor\\"] %msg%\\n"\n'
            "*.* @@logs-01.loggly.com:514;LogglyFormat\n")
    return text, (token,)


@_shape("mezmo-logdna-agent-yaml-ingestion-key")
def _mezmo(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        http:
          host: logs.mezmo.com
          endpoint: /logs/agent
          use_ssl: true
          ingestion_key: ‹key›
        log:
          dirs:
            - /var/log/
        """,
        key=key,
    )
    return text, (key,)


@_shape("signoz-otel-collector-ingestion-key-header")
def _signoz(rng: random.Random) -> Built:
    key = _alnum(rng, 36)
    text = _fill(
        """
        exporters:
          otlp:
            endpoint: "ingest.eu.signoz.cloud:443"
            tls:
              insecure: false
            headers:
              "signoz-ingestion-key": "‹key›"
        """,
        key=key,
    )
    return text, (key,)


@_shape("uptrace-dsn-token-userinfo-go")
def _uptrace(rng: random.Random) -> Built:
    token = _alnum(rng, 22)
    text = (f'uptrace.ConfigureOpentelemetry(\n\tuptrace.WithDSN("https://{token}@api.uptrace.dev?grpc=4317"),\n'
            '\tuptrace.WithServiceName("ledger"),\n)\n')
    return text, (token,)


@_shape("instana-agent-helm-install-key")
def _instana(rng: random.Random) -> Built:
    key = _pick(rng, _URL_ALPHABET, 22)
    text = _fill(
        """
        helm install instana-agent --namespace instana-agent --create-namespace \\
          --repo https://agents.instana.io/helm \\
          --set agent.key=‹key› \\
          --set agent.endpointHost=ingress-red-saas.instana.io \\
          --set cluster.name=prod-eu instana-agent
        """,
        key=key,
    )
    return text, (key,)


@_shape("appsignal-yml-push-api-key")
def _appsignal(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        default: &defaults
          push_api_key: "‹key›"
          name: "Harbor"
        production:
          <<: *defaults
          active: true
        """,
        key=key,
    )
    return text, (key,)


@_shape("fusionauth-kickstart-json-api-key")
def _fusionauth(rng: random.Random) -> Built:
    key = _b64u(rng, 48)
    kick = {"variables": {"defaultTenantId": _guid(rng), "adminEmail": "admin@harbor.example"},
            "apiKeys": [{"key": key, "description": "Kickstart API key"}],
            "requests": [{"method": "POST", "url": "/api/user/registration", "body": {"user": {
                "email": "#{adminEmail}", "password": "#{ENV.FA_ADMIN_PASSWORD}"}}}]}
    return json.dumps(kick, indent=2) + "\n", (key,)


@_shape("supertokens-node-init-api-key")
def _supertokens(rng: random.Random) -> Built:
    key = _alnum(rng, 30)
    text = _fill(
        """
        supertokens.init({
          framework: "express",
          supertokens: {
            connectionURI: "https://st-prod-‹id›.aws.supertokens.io",
            apiKey: "‹key›",
          },
          appInfo: { appName: "Harbor", apiDomain: "https://api.harbor.example", websiteDomain: "https://harbor.example" },
          recipeList: [EmailPassword.init(), Session.init()],
        });
        """,
        id=_guid(rng), key=key,
    )
    return text, (key,)


@_shape("logto-client-credentials-form-body")
def _logto(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    text = _fill(
        """
        POST /oidc/token HTTP/1.1
        Host: auth.harbor.example
        Content-Type: application/x-www-form-urlencoded

        grant_type=client_credentials&client_id=‹cid›&client_secret=‹secret›&resource=https%3A%2F%2Fdefault.logto.app%2Fapi&scope=all
        """,
        cid=_lower_alnum(rng, 21), secret=secret,
    )
    return text, (secret,)


@_shape("kong-admin-api-key-auth-create-response")
def _kong(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    resp = {"consumer": {"id": _guid(rng)}, "created_at": _epoch(rng), "id": _guid(rng), "key": key,
            "tags": None, "ttl": None}
    text = "$ http POST :8001/consumers/partner-acme/key-auth\nHTTP/1.1 201 Created\n\n" + json.dumps(resp, indent=4)
    return text + "\n", (key,)


@_shape("tyk-conf-json-secret")
def _tyk(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    conf = {"listen_port": 8080, "secret": secret, "template_path": "/opt/tyk-gateway/templates",
            "use_db_app_configs": False, "app_path": "/opt/tyk-gateway/apps",
            "storage": {"type": "redis", "host": "tyk-redis", "port": 6379}}
    return json.dumps(conf, indent=2) + "\n", (secret,)


@_shape("minecraft-server-properties-rcon-password")
def _minecraft(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        #Minecraft server properties
        enable-rcon=true
        motd=Harbor SMP
        rcon.password=‹pw›
        rcon.port=25575
        white-list=true
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("factorio-server-settings-json-token-and-game-password")
def _factorio(rng: random.Random) -> Built:
    token = _hexs(rng, 30)
    pw = _human_plain(rng)
    conf = {"name": "Harbor megabase", "visibility": {"public": True, "lan": True}, "username": "harborops",
            "password": "", "token": token, "game_password": pw, "require_user_verification": True,
            "max_upload_in_kilobytes_per_second": 0, "autosave_interval": 10}
    return json.dumps(conf, indent=2) + "\n", (token, pw)


@_shape("valheim-start-server-sh-password")
def _valheim(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        export templdpath=$LD_LIBRARY_PATH
        export LD_LIBRARY_PATH=./linux64:$LD_LIBRARY_PATH
        export SteamAppId=892970
        ./valheim_server.x86_64 -name "Harbor Vikings" -port 2456 -world "Fjordheim" -password "‹pw›" -crossplay
        export LD_LIBRARY_PATH=$templdpath
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("ark-gameusersettings-ini-server-admin-password")
def _ark(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        [ServerSettings]
        ServerAdminPassword=‹pw›
        DifficultyOffset=1.000000
        RCONEnabled=True
        RCONPort=27020
        [SessionSettings]
        SessionName=Harbor Ark PvE
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("murmur-ini-serverpassword")
def _murmur(rng: random.Random) -> Built:
    pw = _passphrase(rng, 2, "-") + str(rng.randint(100, 999))
    text = _fill(
        """
        database=/var/lib/mumble-server/mumble-server.sqlite
        ice="tcp -h 127.0.0.1 -p 6502"
        welcometext="<br />Welcome to the Harbor guild server.<br />"
        port=64738
        serverpassword=‹pw›
        bandwidth=72000
        users=50
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("vrising-serverhostsettings-json-password")
def _vrising(rng: random.Random) -> Built:
    pw = _brief(rng)
    conf = {"Name": "Harbor Castles", "Description": "PvE, weekly wipes", "Port": 9876, "QueryPort": 9877,
            "MaxConnectedUsers": 40, "Password": pw, "Secure": True, "ListOnSteam": True,
            "Rcon": {"Enabled": False, "Port": 25575, "Password": ""}}
    return json.dumps(conf, indent=2) + "\n", (pw,)


@_shape("dayz-serverdz-cfg-password-admin")
def _dayz(rng: random.Random) -> Built:
    pw = _strong(rng, 12, "!#+=@_")
    text = _fill(
        """
        hostname = "Harbor DayZ | Namalsk | PvE";
        password = "";
        passwordAdmin = "‹pw›";
        maxPlayers = 60;
        verifySignatures = 2;
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("bambulab-api-printer-access-code-script")
def _bambu(rng: random.Random) -> Built:
    code = _digits(rng, 8)
    text = _fill(
        """
        import bambulabs_api as bl

        printer = bl.Printer("192.168.1.‹o›", "‹code›", "01P00A‹serial›")
        printer.connect()
        print(printer.get_state(), printer.get_percentage())
        """,
        o=rng.randint(10, 250), code=code, serial=_upper_alnum(rng, 9),
    )
    return text, (code,)


@_shape("moonraker-access-api-key-response")
def _moonraker(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = f'$ curl -s http://voron.local/access/api_key -H "Authorization: Bearer (jwt)"\n{{"result": "{key}"}}\n'
    return text, (key,)


@_shape("homebridge-config-json-tuya-access-key")
def _homebridge(rng: random.Random) -> Built:
    key = _lower_alnum(rng, 32)
    conf = {"bridge": {"name": "Homebridge 5A1C", "username": "0E:21:5A:1C:7B:90", "port": 51826, "pin": "031-45-154"},
            "platforms": [{"platform": "TuyaPlatform", "options": {"projectType": "2", "endpoint": "https://openapi.tuyaeu.com",
                                                                   "accessId": _lower_alnum(rng, 20), "accessKey": key,
                                                                   "countryCode": 44, "appSchema": "smartlife"}}]}
    return json.dumps(conf, indent=4) + "\n", (key,)


@_shape("openhab-things-mqtt-broker-password")
def _openhab(rng: random.Random) -> Built:
    pw = _human(rng)
    text = (f'Bridge mqtt:broker:mosquitto "Mosquitto" [ host="192.168.1.5", secure=false, '
            f'username="openhab", password="{pw}", clientID="openhab4" ]\n')
    return text, (pw,)


@_shape("sabnzbd-ini-api-key-and-server-password")
def _sabnzbd(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    pw = _alnum(rng, 14)
    text = _fill(
        """
        [misc]
        api_key = ‹key›
        nzb_key = (regenerated)
        host = 0.0.0.0
        port = 8080
        [servers]
        [[news.eweka.nl]]
        name = news.eweka.nl
        host = news.eweka.nl
        username = harbor2291
        password = ‹pw›
        connections = 20
        ssl = 1
        """,
        key=key, pw=pw,
    )
    return text, (key, pw)


@_shape("nzbget-conf-control-password")
def _nzbget(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = "ControlIP=0.0.0.0\nControlPort=6789\nControlUsername=nzbget\nControlPassword=" + pw + "\nSecureControl=no\n"
    return text, (pw,)


@_shape("overseerr-settings-json-main-api-key")
def _overseerr(rng: random.Random) -> Built:
    key = _b64s(rng, 48)
    conf = {"clientId": _guid(rng), "vapidPrivate": "(see vapid.json)", "main": {"apiKey": key, "applicationTitle": "Harbor Requests",
                                                                                "applicationUrl": "", "csrfProtection": False}}
    return json.dumps(conf, indent=1) + "\n", (key,)


@_shape("rspamd-worker-controller-inc-plain-password")
def _rspamd(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#+=@_")
    text = f'# local.d/worker-controller.inc\npassword = "{pw}";\nenable_password = "$2$(see vault)";\n'
    return text, (pw,)


@_shape("mailcow-conf-dbpass")
def _mailcow(rng: random.Random) -> Built:
    pw = _alnum(rng, 28)
    text = f"MAILCOW_HOSTNAME=mail.harbor.example\nMAILCOW_PASS_SCHEME=BLF-CRYPT\nDBNAME=mailcow\nDBUSER=mailcow\nDBPASS={pw}\nDBROOT=(rotated, see vault)\n"
    return text, (pw,)


@_shape("meshcentral-config-json-session-key")
def _meshcentral(rng: random.Random) -> Built:
    key = _alnum(rng, 40)
    conf = {"$schema": "https://raw.githubusercontent.com/Ylianst/MeshCentral/master/meshcentral-config-schema.json",
            "settings": {"cert": "mesh.harbor.example", "WANonly": True, "sessionKey": key, "port": 443}}
    return json.dumps(conf, indent=2) + "\n", (key,)


@_shape("rustdesk-install-script-permanent-password")
def _rustdesk(rng: random.Random) -> Built:
    pw = _alnum(rng, 12)
    text = _fill(
        """
        $ErrorActionPreference = 'Stop'
        Start-Process -Wait .\\rustdesk-1.4.1-x86_64.exe -ArgumentList '--silent-install'
        & "C:\\Program Files\\RustDesk\\rustdesk.exe" --password ‹pw›
        & "C:\\Program Files\\RustDesk\\rustdesk.exe" --get-id
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("appsmith-docker-env-encryption-password-salt")
def _appsmith(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    salt = _alnum(rng, 24)
    text = f"APPSMITH_ENCRYPTION_PASSWORD={pw}\nAPPSMITH_ENCRYPTION_SALT={salt}\nAPPSMITH_DISABLE_TELEMETRY=true\n"
    return text, (pw, salt)


@_shape("payload-cms-env-payload-secret")
def _payload(rng: random.Random) -> Built:
    secret = _hexs(rng, 24)
    text = f"DATABASE_URI=mongodb://127.0.0.1/harbor-cms\nPAYLOAD_SECRET={secret}\nNEXT_PUBLIC_SERVER_URL=http://localhost:3000\n"
    return text, (secret,)


@_shape("glpi-config-db-php-dbpassword")
def _glpi(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "#+=@_-")
    text = _fill(
        """
        <?php
        class DB extends DBmysql {
           public $dbhost = 'localhost';
           public $dbuser = 'glpi';
           public $dbpassword = '‹pw›';
           public $dbdefault = 'glpi';
           public $use_utf8mb4 = true;
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("dolibarr-conf-php-db-pass")
def _dolibarr(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = f"<?php\n$dolibarr_main_db_host='localhost';\n$dolibarr_main_db_name='dolibarr';\n$dolibarr_main_db_user='dolibarr';\n$dolibarr_main_db_pass='{pw}';\n$dolibarr_main_db_type='mysqli';\n"
    return text, (pw,)


@_shape("lemmy-hjson-database-password")
def _lemmy(rng: random.Random) -> Built:
    pw = _alnum(rng, 20)
    text = _fill(
        """
        {
          # for more info about the config, check out the documentation
          hostname: "lemmy.harbor.example"
          database: {
            host: postgres
            password: "‹pw›"
          }
          pictrs: {
            url: "http://pictrs:8080/"
            api_key: "(see pictrs env)"
          }
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("bigbluebutton-bbb-conf-secret-output")
def _bbb(rng: random.Random) -> Built:
    secret = _alnum(rng, 42)
    text = _fill(
        """
        $ sudo bbb-conf --secret

            URL: https://bbb.harbor.example/bigbluebutton/
            Secret: ‹secret›

            Link to the API-Mate:
            https://mconf.github.io/api-mate/#server=https://bbb.harbor.example/bigbluebutton/&sharedSecret=‹secret›
        """,
        secret=secret,
    )
    return text, (secret,)


@_shape("shadowsocks-libev-config-json-password")
def _shadowsocks(rng: random.Random) -> Built:
    pw = _b64s(rng, 16)
    conf = {"server": ["::0", "0.0.0.0"], "server_port": 8388, "password": pw, "timeout": 300,
            "method": "chacha20-ietf-poly1305", "mode": "tcp_and_udp"}
    return "/etc/shadowsocks-libev/config.json\n" + json.dumps(conf, indent=4) + "\n", (pw,)


@_shape("xray-vless-share-link-uuid-userinfo")
def _vless(rng: random.Random) -> Built:
    uid = _guid(rng)
    text = (f"vless://{uid}@edge.harbor.example:443?encryption=none&flow=xtls-rprx-vision&security=reality"
            f"&sni=www.microsoft.com&fp=chrome&pbk={_b64u(rng, 32)}&sid={_hexs(rng, 8)}&type=tcp#harbor-fi\n")
    return text, (uid,)


@_shape("mihomo-config-yaml-hysteria2-password")
def _mihomo(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    text = _fill(
        """
        proxies:
          - name: "hy2-sg"
            type: hysteria2
            server: sg.harbor.example
            port: 443
            password: ‹pw›
            sni: sg.harbor.example
            skip-cert-verify: false
        proxy-groups:
          - { name: Proxy, type: select, proxies: [hy2-sg, DIRECT] }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("three-proxy-cfg-users-cl-cleartext")
def _3proxy(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = f"nserver 1.1.1.1\nnscache 65536\nusers scraper:CL:{pw}\nauth strong\nallow scraper\nproxy -p3128\n"
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Debug dumps and people, in languages and carriers the earlier parts do not use
# --------------------------------------------------------------------------------------------------------


@_shape("py-spy-dump-locals-password")
def _pyspy(rng: random.Random) -> Built:
    pw = _strong(rng, 18, "#+=@_-")
    text = _fill(
        """
        $ py-spy dump --pid ‹pid› --locals
        Process ‹pid›: /srv/sync/.venv/bin/python -m sync.worker
        Thread ‹tid› (active): "MainThread"
            connect (sync/db.py:41)
                Arguments:
                    host: "ledger-db.internal"
                    user: "sync"
                    password: "‹pw›"
                Locals:
                    attempt: 3
        """,
        pid=rng.randint(1000, 60000), tid=hex(rng.getrandbits(44)), pw=pw,
    )
    return text, (pw,)


@_shape("dotnet-iconfiguration-getdebugview-connection-string")
def _debugview(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#+=@_-")
    text = _fill(
        """
        AllowedHosts=* (JsonConfigurationProvider for 'appsettings.json' (Optional))
        ConnectionStrings:
          Default=Server=sql-prod.internal;Database=Harbor;User Id=harbor_app;Password=‹pw›;TrustServerCertificate=True (EnvironmentVariablesConfigurationProvider Prefix: '')
        Logging:
          LogLevel:
            Default=Information (JsonConfigurationProvider for 'appsettings.json' (Optional))
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("spring-actuator-env-show-values-always")
def _actuator(rng: random.Random) -> Built:
    pw = _alnum(rng, 20)
    body = {"activeProfiles": ["prod"], "propertySources": [{"name": "systemEnvironment", "properties": {
        "SPRING_DATASOURCE_PASSWORD": {"value": pw, "origin": "System Environment Property \"SPRING_DATASOURCE_PASSWORD\""},
        "SPRING_DATASOURCE_USERNAME": {"value": "orders", "origin": "System Environment Property \"SPRING_DATASOURCE_USERNAME\""},
    }}]}
    return "GET /actuator/env HTTP/1.1 -> 200\n" + json.dumps(body, indent=2) + "\n", (pw,)


@_shape("laravel-tinker-config-services-array")
def _tinker(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    text = _fill(
        """
        > config('services.postal')
        = [
            "url" => "https://postal.harbor.example",
            "key" => "‹secret›",
          ]
        """,
        secret=secret,
    )
    return text, (secret,)


@_shape("iex-application-get-env-repo-keyword-list")
def _iex(rng: random.Random) -> Built:
    pw = _alnum(rng, 24)
    text = _fill(
        """
        iex(harbor@10.0.4.7)1> Application.get_env(:harbor, Harbor.Repo)
        [
          username: "harbor",
          password: "‹pw›",
          hostname: "pg-primary.internal",
          database: "harbor_prod",
          pool_size: 10
        ]
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("go-spew-sdump-config-struct")
def _spew(rng: random.Random) -> Built:
    pw = _strong(rng, 15, "#+=@_")
    text = _fill(
        """
        (*config.SMTP)(0xc0001a2f00)({
         Host: (string) (len=19) "smtp.postmarkapp.eu",
         Port: (int) 587,
         User: (string) (len=8) "harbor01",
         Password: (string) (len=15) "‹pw›"
        })
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("node-repl-pg-client-inspect")
def _node_pg(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        > client.connectionParameters
        ConnectionParameters {
          user: 'reporting',
          database: 'analytics',
          port: 5432,
          host: 'pg-replica.internal',
          password: '‹pw›',
          binary: false,
          options: undefined,
          ssl: false,
          client_encoding: '',
          application_name: undefined
        }
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("flutter-dio-log-interceptor-headers")
def _dio(rng: random.Random) -> Built:
    token = _jwt(rng, {"alg": "HS256", "typ": "JWT"}, {"uid": _digits(rng, 6), "exp": _epoch(rng)})
    text = _fill(
        """
        I/flutter (‹pid›): *** Request ***
        I/flutter (‹pid›): uri: https://api.harbor.example/v2/orders?page=1
        I/flutter (‹pid›): method: GET
        I/flutter (‹pid›): headers:
        I/flutter (‹pid›):  authorization: Bearer ‹token›
        I/flutter (‹pid›):  accept: application/json
        """,
        pid=rng.randint(2000, 30000), token=token,
    )
    return text, (token,)


@_shape("iis-w3c-log-cs-uri-query-apikey")
def _iis(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        #Software: Microsoft Internet Information Services 10.0
        #Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) sc-status sc-substatus sc-win32-status time-taken
        ‹d› ‹t› 10.1.2.10 GET /export/orders.csv apikey=‹key›&from=2026-01-01 443 - 203.0.113.44 python-requests/2.32.3 200 0 0 812
        """,
        d=_date(rng), t=_time(rng), key=key,
    )
    return text, (key,)


@_shape("oauth-implicit-fragment-access-token-browser-history")
def _implicit(rng: random.Random) -> Built:
    token = _b64u(rng, 36)
    text = _fill(
        """
        sqlite> SELECT datetime(last_visit_time/1000000-11644473600,'unixepoch'), url FROM urls ORDER BY last_visit_time DESC LIMIT 2;
        ‹d› ‹t›|https://legacy-portal.harbor.example/callback#access_token=‹token›&token_type=Bearer&expires_in=3600&state=‹state›
        ‹d› ‹t›|https://legacy-portal.harbor.example/login
        """,
        d=_date(rng), t=_time(rng), token=token, state=_hexs(rng, 16),
    )
    return text, (token,)


@_shape("review-email-quoted-diff-hunk-added-password")
def _review_diff(rng: random.Random) -> Built:
    pw = _strong(rng, 16, "!#+=@_-")
    text = _fill(
        """
        On Tue, Mar 3, 2026 at 09:12, Goran <goran@harbor.example> wrote:
        > diff --git a/deploy/docker-compose.prod.yml b/deploy/docker-compose.prod.yml
        > @@ -14,6 +14,7 @@ services:
        >      environment:
        >        MARIADB_DATABASE: shop
        > +      MARIADB_ROOT_PASSWORD: ‹pw›
        >        MARIADB_USER: shop

        Please don't merge this, the root password must come from the secrets file. Rotating it now.
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("kannada-mastodon-activitypub-note-password")
def _kannada(rng: random.Random) -> Built:
    pw = _human(rng)
    note = {"@context": "https://www.w3.org/ns/activitystreams", "type": "Note",
            "id": f"https://social.harbor.example/users/priya/statuses/{_digits(rng, 18)}",
            "attributedTo": "https://social.harbor.example/users/priya", "to": ["https://social.harbor.example/users/ravi"],
            "content": f"<p><span class=\"h-card\">@ravi</span> ಲ್ಯಾಬ್ ವೈಫೈ ಪಾಸ್‌ವರ್ಡ್: {pw} ಯಾರಿಗೂ ಹಂಚಬೇಡಿ</p>",
            "published": _stamp(rng)}
    return json.dumps(note, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("marathi-bluesky-chat-get-messages-json")
def _marathi(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    resp = {"messages": [{"$type": "chat.bsky.convo.defs#messageView", "id": _lower_alnum(rng, 13), "rev": _lower_alnum(rng, 13),
                          "text": f"सर्व्हरचा संकेतशब्द {pw} आहे, उद्या बदलू.",
                          "sender": {"did": "did:plc:" + _lower_alnum(rng, 24)}, "sentAt": _stamp(rng)}]}
    return json.dumps(resp, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("odia-bear-note-markdown-export")
def _odia(rng: random.Random) -> Built:
    pw = _brief(rng)
    text = _fill(
        """
        # ଅଫିସ ପ୍ରିଣ୍ଟର
        #work/it

        ପ୍ରିଣ୍ଟର ଆଡମିନ ପାସୱାର୍ଡ: ‹pw›
        IP: 192.168.10.40
        """,
        pw=pw,
    )
    return text, (pw,)


@_shape("tibetan-google-keep-takeout-json")
def _tibetan(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    note = {"color": "DEFAULT", "isTrashed": False, "isPinned": True, "isArchived": False,
            "textContent": f"དྲ་བའི་གསང་ཚིག  {pw}\nWi-Fi: Harbor-Guest",
            "title": "གསང་ཚིག", "userEditedTimestampUsec": _epoch(rng) * 1000000}
    return json.dumps(note, ensure_ascii=False) + "\n", (pw,)


@_shape("divehi-joplin-note-markdown-metadata")
def _divehi(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        ރިސެޕްޝަން ކޮމްޕިއުޓަރު

        ޕާސްވޯޑް: ‹pw›

        id: ‹id›
        parent_id: ‹pid›
        created_time: ‹stamp›
        is_todo: 0
        type_: 1
        """,
        pw=pw, id=_hexs(rng, 32), pid=_hexs(rng, 32), stamp=_stamp(rng),
    )
    return text, (pw,)


@_shape("yiddish-redmine-issue-journal-json")
def _yiddish(rng: random.Random) -> Built:
    pw = _brief(rng)
    issue = {"issue": {"id": rng.randint(1000, 9999), "subject": "נײַער באַניצער פֿאַר דער ביבליאָטעק",
                       "journals": [{"id": rng.randint(10000, 99999), "user": {"id": 7, "name": "Chana R."},
                                     "notes": f"דאָס צײַטווײַליקע פּאַראָל איז {pw} — ביטע טוישט עס.",
                                     "created_on": _stamp(rng)}]}}
    return json.dumps(issue, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("uyghur-qq-message-log-txt")
def _uyghur(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        消息记录（此消息记录为文本格式，不支持重新导入）
        ================================================================
        ‹d› ‹t› ئالىم(‹qq›)
        ھېساباتنىڭ پارولى: ‹pw›

        ‹d› ‹t› ئايگۈل(‹qq2›)
        رەھمەت
        """,
        d=_date(rng), t=_time(rng), qq=_digits(rng, 9), qq2=_digits(rng, 10), pw=pw,
    )
    return text, (pw,)


@_shape("somali-front-api-message-body")
def _somali(rng: random.Random) -> Built:
    pw = _human(rng)
    msg = {"_links": {"self": f"https://api2.frontapp.com/messages/msg_{_lower_alnum(rng, 8)}"},
           "type": "email", "is_inbound": False, "created_at": float(_epoch(rng)),
           "blurb": "Akoonkaaga cusub waa diyaar.",
           "body": f"<p>Salaan Xamdi,</p><p>Erayga sirta ah ee ku meel gaarka ah: <b>{pw}</b></p><p>Fadlan beddel.</p>"}
    return json.dumps(msg, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("yoruba-crisp-webhook-message-send")
def _yoruba(rng: random.Random) -> Built:
    pw = _brief(rng)
    event = {"website_id": _guid(rng), "event": "message:send",
             "data": {"type": "text", "origin": "chat", "from": "user", "session_id": "session_" + _guid(rng),
                      "content": f"Ẹ jọ̀ọ́, ọ̀rọ̀ aṣínà mi ni {pw}, kò ṣiṣẹ́ mọ́", "timestamp": _epoch(rng) * 1000}}
    return json.dumps(event, ensure_ascii=False) + "\n", (pw,)


@_shape("maori-youtrack-issue-comment-api")
def _maori(rng: random.Random) -> Built:
    pw = _human(rng)
    comment = {"id": f"4-{rng.randint(100, 999)}", "author": {"login": "rangi"},
               "text": f"Kia ora, ko te kupuhipa hou mō te pūnaha rārangi: `{pw}`", "$type": "IssueComment"}
    return json.dumps(comment, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("maltese-mht-mime-html-email-saved")
def _maltese(rng: random.Random) -> Built:
    pw = _human(rng)
    boundary = "----=_NextPart_" + _hexs(rng, 16)
    text = _fill(
        """
        From: <Saved by Blink>
        Snapshot-Content-Location: https://webmail.harbor.example/?_task=mail&_uid=‹uid›
        Subject: Il-kont il-gdid tiegħek
        MIME-Version: 1.0
        Content-Type: multipart/related; type="text/html"; boundary="‹b›"

        --‹b›
        Content-Type: text/html
        Content-Transfer-Encoding: 8bit

        <html><body><p>Bongu Marija,</p><p>Il-password temporanja tiegħek hija: ‹pw›</p><p>Jekk jogħġbok biddilha malli tidħol.</p></body></html>
        --‹b›--
        """,
        uid=rng.randint(100, 9999), b=boundary, pw=pw,
    )
    return text, (pw,)


@_shape("occitan-mutt-pager-view-senhal")
def _occitan(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        Date: ‹d›
        From: Ostal Comun <secretariat@ostal.example>
        To: Joan Bernat <joan@ostal.example>
        Subject: Accès al servidor

        Adieu Joan,

        Lo senhal provisòri es : ‹pw›
        Cambiatz-lo a la primièra connexion.

        -O:-- 1/1: Ostal Comun        Accès al servidor                     -- (all)
        """,
        d=_date(rng), pw=pw,
    )
    return text, (pw,)


@_shape("javanese-minecraft-server-log-chat")
def _javanese(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    text = _fill(
        """
        [‹t›] [Server thread/INFO]: Sekar joined the game
        [‹t›] [Server thread/INFO]: <Bagus> Sekar, tembung sandhi panel web: ‹pw›
        [‹t›] [Server thread/INFO]: <Sekar> matur nuwun mas
        """,
        t=_time(rng), pw=pw,
    )
    return text, (pw,)


@_shape("sundanese-reddit-chat-history-csv")
def _sundanese(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        message_id,created_at,updated_at,username,message,thread_parent_message_id,channel_url,subreddit,channel_name,conversation_type
        ‹mid›,‹d› ‹t› UTC,,asep_sunda,"Kecap sandi akun server: ‹pw›",,sendbird_group_channel_‹c›,,,direct
        """,
        mid=_digits(rng, 10), d=_date(rng), t=_time(rng), pw=pw, c=_digits(rng, 9),
    )
    return text, (pw,)


@_shape("hmong-snapchat-takeout-chat-history-json")
def _hmong(rng: random.Random) -> Built:
    pw = _brief(rng)
    chat = {"Received Saved Chat History": [], "Sent Saved Chat History": [
        {"To": "paj_yang", "Media Type": "TEXT", "Created": f"{_date(rng)} {_time(rng)} UTC",
         "Text": f"lo lus zais rau lub Wi-Fi: {pw}"}]}
    return json.dumps(chat, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("oromo-delta-chat-eml-chat-version")
def _oromo(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        Return-Path: <caalaa@chat.example>
        Chat-Version: 1.0
        Autocrypt: addr=caalaa@chat.example; prefer-encrypt=mutual; keydata=(omitted)
        Message-ID: <Mr.‹mid›@chat.example>
        Subject: Message from caalaa@chat.example
        Content-Type: text/plain; charset=utf-8

        Jecha darbii kompiitara biiroo: ‹pw›
        """,
        mid=_alnum(rng, 22), pw=pw,
    )
    return text, (pw,)


@_shape("northern-sami-google-sheets-values-get")
def _sami(rng: random.Random) -> Built:
    pw = _strong(rng, 14, "!#+=@_")
    resp = {"range": "Beassansánit!A1:C3", "majorDimension": "ROWS",
            "values": [["Bálvalus", "Geavaheaddji", "Beassansátni"], ["Printer", "admin", pw],
                       ["Wi-Fi", "kantuvra", "(Ánte dieđiha)"]]}
    return json.dumps(resp, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("kurmanji-discourse-private-message-post-json")
def _kurmanji(rng: random.Random) -> Built:
    pw = _human(rng)
    post = {"id": rng.randint(1000, 99999), "username": "rojda", "created_at": _stamp(rng),
            "raw": f"Silav Baran, şîfreya demkî ya hesabê te: {pw}", "topic_id": rng.randint(100, 9999),
            "post_type": 1, "archetype": "private_message"}
    return json.dumps(post, ensure_ascii=False, indent=2) + "\n", (pw,)


@_shape("cantonese-mattermost-bulk-export-jsonl")
def _cantonese(rng: random.Random) -> Built:
    pw = _human_plain(rng)
    line = {"type": "direct_post", "direct_post": {"channel_members": ["kaman", "wingsze"], "user": "kaman",
                                                   "message": f"部NAS嘅密碼係 {pw}，用完記得登出呀",
                                                   "create_at": _epoch(rng) * 1000}}
    return '{"type":"version","version":1}\n' + json.dumps(line, ensure_ascii=False) + "\n", (pw,)


@_shape("romansh-extract-msg-outlook-output")
def _romansh(rng: random.Random) -> Built:
    pw = _human(rng)
    text = _fill(
        """
        $ python -m extract_msg --dump-stdout "Access nov.msg"
        From: Administraziun <admin@vischnanca.example>
        To: Flurina Caviezel <flurina@vischnanca.example>
        Subject: Access nov
        -----------------
        Chara Flurina,
        Tes pled-clav provisoric è: ‹pw›
        Midai el p.pl. suenter l'emprima annunzia.
        """,
        pw=pw,
    )
    return text, (pw,)


# --------------------------------------------------------------------------------------------------------
# Documents without a credential
# --------------------------------------------------------------------------------------------------------


@_clean_shape("clean-py-spy-dump-counters-only")
def _c_pyspy(rng: random.Random) -> str:
    return _fill(
        """
        $ py-spy dump --pid ‹pid› --locals
        Thread ‹tid› (idle): "MainThread"
            poll (sync/worker.py:88)
                Locals:
                    batch_id: "‹bid›"
                    processed: 4210
                    token_budget: 120000
        """,
        pid=rng.randint(1000, 60000), tid=hex(rng.getrandbits(44)), bid=_guid(rng),
    )


@_clean_shape("clean-osquery-processes-ordinary")
def _c_osquery(rng: random.Random) -> str:
    rows = [{"pid": str(rng.randint(100, 9999)), "name": "nginx", "cmdline": "nginx: master process /usr/sbin/nginx -g daemon off;"},
            {"pid": str(rng.randint(100, 9999)), "name": "java", "cmdline": "java -Xmx2g -Dspring.profiles.active=prod -jar app.jar"}]
    return "osquery> SELECT pid, name, cmdline FROM processes;\n" + json.dumps(rows, indent=2) + "\n"


@_clean_shape("clean-responder-netntlmv2-hash-capture")
def _c_responder(rng: random.Random) -> str:
    return (f"[SMB] NTLMv2-SSP Client   : {_ip(rng)}\n[SMB] NTLMv2-SSP Username : CORP\\jdoe\n"
            f"[SMB] NTLMv2-SSP Hash     : jdoe::CORP:{_hexs(rng, 16)}:{_hexs(rng, 32).upper()}:0101000000000000{_hexs(rng, 64).upper()}\n")


@_clean_shape("clean-zeromq-public-keys-only")
def _c_zmq(rng: random.Random) -> str:
    alphabet = _Z85.replace("&", "").replace("<", "").replace(">", "")
    return (f'# certificates/server.key (public part, shareable)\ncurve\n    public-key = "{_pick(rng, alphabet, 40)}"\n'
            "metadata\n    name = \"ingest-broker\"\n")


@_clean_shape("clean-tsh-status-certificate")
def _c_tsh(rng: random.Random) -> str:
    return _fill(
        """
        > Profile URL:        https://teleport.harbor.example:443
          Logged in as:       hana@harbor.example
          Cluster:            teleport.harbor.example
          Roles:              access, editor
          Logins:             ubuntu, hana
          Valid until:        ‹d› 21:14:09 +0000 UTC [valid for 11h58m0s]
          Extensions:         login-ip, permit-port-forwarding, private-key-policy
          Key ID:             ‹kid›
        """,
        d=_date(rng), kid=_guid(rng),
    )


@_clean_shape("clean-headscale-nodes-list-machine-keys")
def _c_headscale(rng: random.Random) -> str:
    rows = "\n".join(f"{i} | {n} | mkey:{_hexs(rng, 64)} | nodekey:{_hexs(rng, 64)} | homelab | 100.64.0.{i}"
                     for i, n in enumerate(["nas", "pi-hole", "laptop"], 1))
    return "$ headscale nodes list\nID | Hostname | MachineKey | NodeKey | User | IP addresses\n" + rows + "\n"


@_clean_shape("clean-netbird-status-detail-public-keys")
def _c_netbird(rng: random.Random) -> str:
    return _fill(
        """
        Peers detail:
         nas.netbird.cloud:
          NetBird IP: 100.92.‹a›.‹b›
          Public key: ‹pk›
          Status: Connected
          Connection type: P2P
        Daemon version: 0.36.5
        Management: Connected to https://api.netbird.io:443
        """,
        a=rng.randint(1, 254), b=rng.randint(1, 254), pk=_b64s(rng, 32),
    )


@_clean_shape("clean-storj-uplink-ls-objects")
def _c_storj(rng: random.Random) -> str:
    return "$ uplink ls sj://backups/photos/\n" + "\n".join(
        f"OBJ {_date(rng)} {_time(rng)} {rng.randint(10**5, 10**8):>10} IMG_{_digits(rng, 4)}.HEIC" for _ in range(4)) + "\n"


@_clean_shape("clean-kanidm-person-get-attributes")
def _c_kanidm(rng: random.Random) -> str:
    return _fill(
        """
        $ kanidm person get hana
        class: account
        class: person
        displayname: Hana Sato
        memberof: idm_all_persons@idm.harbor.example
        name: hana
        spn: hana@idm.harbor.example
        uuid: ‹u›
        """,
        u=_guid(rng),
    )


@_clean_shape("clean-daraja-stk-callback-receipt")
def _c_daraja(rng: random.Random) -> str:
    body = {"Body": {"stkCallback": {"MerchantRequestID": f"{_digits(rng, 5)}-{_digits(rng, 8)}-1",
                                      "CheckoutRequestID": "ws_CO_" + _digits(rng, 20), "ResultCode": 0,
                                      "ResultDesc": "The service request is processed successfully.",
                                      "CallbackMetadata": {"Item": [{"Name": "Amount", "Value": 1.0},
                                                                    {"Name": "MpesaReceiptNumber", "Value": _upper_alnum(rng, 10)},
                                                                    {"Name": "PhoneNumber", "Value": int("2547" + _digits(rng, 8))}]}}}}
    return json.dumps(body, indent=2) + "\n"


@_clean_shape("clean-toss-payment-confirm-response")
def _c_toss(rng: random.Random) -> str:
    body = {"mId": "tvivarepublica", "paymentKey": "tviva" + _alnum(rng, 30), "orderId": "ORD-" + _digits(rng, 10),
            "status": "DONE", "method": "카드", "totalAmount": 15000, "approvedAt": _stamp(rng),
            "receipt": {"url": "https://dashboard.tosspayments.com/receipt/redirection?transactionId=" + _alnum(rng, 32)}}
    return json.dumps(body, ensure_ascii=False, indent=2) + "\n"


@_clean_shape("clean-binance-order-response")
def _c_binance(rng: random.Random) -> str:
    body = {"symbol": "BTCUSDT", "orderId": int(_digits(rng, 11)), "clientOrderId": _alnum(rng, 22),
            "transactTime": _epoch(rng) * 1000, "price": "0.00000000", "origQty": "0.00100000", "status": "FILLED",
            "type": "MARKET", "side": "BUY"}
    return json.dumps(body) + "\n"


@_clean_shape("clean-etherscan-txlist-hashes")
def _c_etherscan(rng: random.Random) -> str:
    txs = [{"blockNumber": _digits(rng, 8), "hash": "0x" + _hexs(rng, 64), "from": "0x" + _hexs(rng, 40),
            "to": "0x" + _hexs(rng, 40), "value": _digits(rng, 17), "input": "0x"} for _ in range(2)]
    return json.dumps({"status": "1", "message": "OK", "result": txs}, indent=1) + "\n"


@_clean_shape("clean-minecraft-server-log-player-uuids")
def _c_minecraft(rng: random.Random) -> str:
    return "".join(f"[{_time(rng)}] [User Authenticator #{i}/INFO]: UUID of player {n} is {_guid(rng)}\n"
                   for i, n in enumerate(["Sekar", "Bagus", "Rangi"], 1))


@_clean_shape("clean-factorio-log-matching-server-game-id")
def _c_factorio(rng: random.Random) -> str:
    return (f"  12.401 Info ServerMultiplayerManager.cpp:795: Matching server connection resumed\n"
            f"  13.022 Info MatchingServer.cpp:137: Matching server game `{rng.randint(10**7, 10**8)}` has been created.\n"
            f"  13.050 Info ServerRouter.cpp:620: Own address is IP ADDR:({{{_ip(rng)}:34197}})\n")


@_clean_shape("clean-kannada-password-policy-notice")
def _c_kannada(rng: random.Random) -> str:
    return ("ಸೂಚನೆ: ನಿಮ್ಮ ಪಾಸ್‌ವರ್ಡ್ ಅನ್ನು ಯಾರೊಂದಿಗೂ ಹಂಚಿಕೊಳ್ಳಬೇಡಿ. ಐಟಿ ತಂಡ ಎಂದಿಗೂ ಪಾಸ್‌ವರ್ಡ್ ಕೇಳುವುದಿಲ್ಲ.\n"
            f"ಟಿಕೆಟ್ ಸಂಖ್ಯೆ: INC{_digits(rng, 7)}\n")


@_clean_shape("clean-iis-log-utm-query-strings")
def _c_iis(rng: random.Random) -> str:
    return ("#Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port c-ip sc-status time-taken\n"
            f"{_date(rng)} {_time(rng)} 10.1.2.10 GET /products/42 utm_source=newsletter&utm_campaign=spring&sessionref={_hexs(rng, 12)} 443 198.51.100.7 200 31\n")


@_clean_shape("clean-envoy-access-log-request-ids")
def _c_envoy(rng: random.Random) -> str:
    return (f'[{_stamp(rng)}] "GET /v1/orders?page=2 HTTP/2" 200 - 0 5121 18 17 "-" "okhttp/4.12.0" '
            f'"{_guid(rng)}" "api.harbor.example" "10.0.3.4:8080" x-b3-traceid={_hexs(rng, 32)}\n')


@_clean_shape("clean-actuator-env-sanitized-values")
def _c_actuator(rng: random.Random) -> str:
    body = {"activeProfiles": ["prod"], "propertySources": [{"name": "systemEnvironment", "properties": {
        "SPRING_DATASOURCE_PASSWORD": {"value": "******"}, "SPRING_DATASOURCE_URL": {"value": "******"},
        "HOSTNAME": {"value": "orders-" + _lower_alnum(rng, 10)}}}]}
    return json.dumps(body, indent=2) + "\n"


@_clean_shape("clean-hikaricp-debug-config-masked")
def _c_hikari(rng: random.Random) -> str:
    return _fill(
        """
        DEBUG c.z.h.HikariConfig - HikariPool-1 - configuration:
        DEBUG c.z.h.HikariConfig - jdbcUrl.........................jdbc:postgresql://pg.internal:5432/orders
        DEBUG c.z.h.HikariConfig - maximumPoolSize.................‹n›
        DEBUG c.z.h.HikariConfig - password........................<masked>
        DEBUG c.z.h.HikariConfig - username........................"orders"
        """,
        n=rng.randint(5, 40),
    )


@_clean_shape("clean-laravel-telescope-request-hidden-headers")
def _c_telescope(rng: random.Random) -> str:
    entry = {"uuid": _guid(rng), "type": "request", "content": {"method": "POST", "uri": "/api/login",
             "headers": {"authorization": "********", "cookie": "********", "user-agent": "Mozilla/5.0"},
             "payload": {"email": "farida@harbor.example", "password": "********"}, "response_status": 200,
             "duration": rng.randint(20, 300)}}
    return json.dumps(entry, indent=2) + "\n"


@_clean_shape("clean-semgrep-finding-hardcoded-password-rule-env-read")
def _c_semgrep(rng: random.Random) -> str:
    return _fill(
        """
        ┌─────────────────┐
        │ 1 Code Finding  │
        └─────────────────┘
            app/settings.py
            ❱ python.django.security.audit.django-rest-framework.missing-throttle-config
                  ‹n›┆ DB_PASSWORD = os.environ["DB_PASSWORD"]
        Ran 1021 rules on 212 files: 1 finding.
        """,
        n=rng.randint(10, 99),
    )


@_clean_shape("clean-ggshield-scan-masked-secret")
def _c_ggshield(rng: random.Random) -> str:
    return _fill(
        """
        secrets-engine-version: 2.131.0
        🛡️  ⚔️  🛡️  1 incident has been found in file .env
        >>> Incident 1(Secrets detection): Generic Password (Ignore with SHA: ‹sha›) (1 occurrence)
          3 | DB_PASSWORD=********************
                          |_____password_____|
        """,
        sha=_hexs(rng, 64),
    )


@_clean_shape("clean-post-mortem-prose-tokens-passed-keyboard")
def _c_prose(rng: random.Random) -> str:
    return ("Post-mortem INC-" + _digits(rng, 4) + ": the agent exhausted its token budget (128k tokens) while the "
            "integration tests passed; the on-call engineer's keyboard layout swapped, so the password prompt was "
            "retried three times and the account locked. No credential was exposed; the key id "
            + _upper_alnum(rng, 20) + " was rotated out of caution.\n")


@_clean_shape("clean-podfile-lock-spec-checksums")
def _c_podfile(rng: random.Random) -> str:
    pods = ["Alamofire", "Firebase", "GoogleUtilities", "SDWebImage"]
    return ("SPEC CHECKSUMS:\n" + "".join(f"  {p}: {_hexs(rng, 40)}\n" for p in pods)
            + f"\nPODFILE CHECKSUM: {_hexs(rng, 40)}\n\nCOCOAPODS: 1.16.2\n")


@_clean_shape("clean-composer-lock-dist-shasum")
def _c_composer(rng: random.Random) -> str:
    pkg = {"name": "guzzlehttp/guzzle", "version": "7.9.2",
           "dist": {"type": "zip", "url": "https://api.github.com/repos/guzzle/guzzle/zipball/" + _hexs(rng, 40),
                    "reference": _hexs(rng, 40), "shasum": ""}}
    return json.dumps({"content-hash": _hexs(rng, 32), "packages": [pkg]}, indent=4) + "\n"


@_clean_shape("clean-kubernetes-configmap-feature-flags")
def _c_configmap(rng: random.Random) -> str:
    return _fill(
        """
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: web-config
          uid: ‹u›
          resourceVersion: "‹rv›"
        data:
          FEATURE_NEW_CHECKOUT: "true"
          PASSWORD_MIN_LENGTH: "14"
          TOKEN_TTL_SECONDS: "900"
          BUILD_SHA: ‹sha›
        """,
        u=_guid(rng), rv=_digits(rng, 8), sha=_hexs(rng, 40),
    )


@_clean_shape("clean-rekor-log-entry")
def _c_rekor(rng: random.Random) -> str:
    return _fill(
        """
        $ rekor-cli get --log-index ‹idx›
        LogID: ‹lid›
        Index: ‹idx›
        IntegratedTime: ‹d›T‹t›Z
        UUID: 108e9186e8c5677a‹uuid›
        Body: {
          "HashedRekordObj": {
            "data": {"hash": {"algorithm": "sha256", "value": "‹h›"}},
            "signature": {"content": "‹sig›"}
          }
        }
        """,
        idx=_digits(rng, 9), lid=_hexs(rng, 64), d=_date(rng), t=_time(rng), uuid=_hexs(rng, 64),
        h=_hexs(rng, 64), sig=_b64s(rng, 72),
    )


@_clean_shape("clean-tuf-root-json-keyids")
def _c_tuf(rng: random.Random) -> str:
    kid = _hexs(rng, 64)
    root = {"signed": {"_type": "root", "spec_version": "1.0.31", "version": 7, "expires": _stamp(rng),
                       "keys": {kid: {"keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": _hexs(rng, 64)}}},
                       "roles": {"root": {"keyids": [kid], "threshold": 1}}},
            "signatures": [{"keyid": kid, "sig": _hexs(rng, 128)}]}
    return json.dumps(root, indent=1) + "\n"


@_clean_shape("clean-codesign-dvvv-cdhash")
def _c_codesign(rng: random.Random) -> str:
    return _fill(
        """
        Executable=/Applications/Harbor.app/Contents/MacOS/Harbor
        Identifier=com.harbor.desktop
        Format=app bundle with Mach-O universal (x86_64 arm64)
        CodeDirectory v=20500 size=‹s› flags=0x10000(runtime) hashes=‹h›+7 location=embedded
        CDHash=‹cd›
        Authority=Developer ID Application: Harbor Labs Ltd (‹team›)
        TeamIdentifier=‹team›
        """,
        s=rng.randint(10000, 99999), h=rng.randint(100, 900), cd=_hexs(rng, 40), team=_upper_alnum(rng, 10),
    )


@_clean_shape("clean-jupyter-getpass-masked-prompt")
def _c_getpass(rng: random.Random) -> str:
    cell = {"cell_type": "code", "execution_count": rng.randint(1, 9),
            "source": ["from getpass import getpass\n", "os.environ['PGPASSWORD'] = getpass('Postgres password: ')"],
            "outputs": [{"name": "stdin", "output_type": "stream", "text": ["Postgres password:  ········\n"]}]}
    return json.dumps(cell, ensure_ascii=False, indent=1) + "\n"


@_clean_shape("clean-colab-userdata-get-reference")
def _c_colab(rng: random.Random) -> str:
    return _fill(
        """
        from google.colab import userdata
        client = OpenAI(api_key=userdata.get('OPENAI_API_KEY'))
        # run id ‹rid›
        """,
        rid=_guid(rng),
    )


@_clean_shape("clean-open-webui-valves-empty-key")
def _c_openwebui(rng: random.Random) -> str:
    return json.dumps([{"id": "weather", "user_id": _guid(rng), "valves": {"OPENWEATHER_API_KEY": ""},
                        "updated_at": _epoch(rng)}]) + "\n"


@_clean_shape("clean-roo-code-task-masked-key-echo")
def _c_roo(rng: random.Random) -> str:
    history = [{"role": "assistant", "content": [{"type": "text", "text": (
        "<execute_command>\n<command>printenv APIFY_TOKEN | sed 's/./*/g' | cut -c1-12</command>\n</execute_command>")}],
        "ts": _epoch(rng) * 1000},
        {"role": "user", "content": [{"type": "text", "text": "Output:\n************"}], "ts": _epoch(rng) * 1000}]
    return json.dumps(history) + "\n"


@_clean_shape("clean-marathi-otp-warning-sms")
def _c_marathi(rng: random.Random) -> str:
    return (f"तुमचा संकेतशब्द किंवा OTP कोणालाही सांगू नका. बँक कधीही फोनवर विचारत नाही. संदर्भ: {_upper_alnum(rng, 12)}\n")


@_clean_shape("clean-nuclei-scan-output")
def _c_nuclei(rng: random.Random) -> str:
    return "".join(f"[{t}] [http] [{s}] https://{h}.harbor.example/{p}\n" for t, s, h, p in [
        ("tech-detect:nginx", "info", "www", ""), ("http-missing-security-headers", "info", "api", "v1"),
        ("exposed-gitignore", "low", "legacy", ".gitignore")]) + f"scan id {_guid(rng)}\n"


@_clean_shape("clean-trivy-report-cves-digests")
def _c_trivy(rng: random.Random) -> str:
    return _fill(
        """
        harbor/api:2.4.1 (debian 12.9)
        Digest: sha256:‹d›
        ┌──────────────┬────────────────┬──────────┬───────────────────┬───────────────┐
        │   Library    │ Vulnerability  │ Severity │ Installed Version │ Fixed Version │
        ├──────────────┼────────────────┼──────────┼───────────────────┼───────────────┤
        │ libssl3      │ CVE-2025-‹n›    │ HIGH     │ 3.0.15-1~deb12u1  │ 3.0.16-1      │
        └──────────────┴────────────────┴──────────┴───────────────────┴───────────────┘
        """,
        d=_hexs(rng, 64), n=_digits(rng, 4),
    )


@_clean_shape("clean-agora-web-client-app-id-only")
def _c_agora(rng: random.Random) -> str:
    return (f'const client = AgoraRTC.createClient({{ mode: "rtc", codec: "vp8" }});\n'
            f'await client.join("{_hexs(rng, 32)}", "standup", await fetchToken("standup"), null);\n')


@_clean_shape("clean-livekit-room-list")
def _c_livekit(rng: random.Random) -> str:
    return "$ lk room list\n" + "".join(f"RM_{_alnum(rng, 12)}  standup-{i}  participants={rng.randint(0, 9)}\n" for i in range(3))


@_clean_shape("clean-cloudflared-tunnel-list")
def _c_cloudflared(rng: random.Random) -> str:
    return ("$ cloudflared tunnel list\nID                                   NAME      CREATED              CONNECTIONS\n"
            f"{_guid(rng)} home-lab  {_date(rng)}T{_time(rng)}Z 2xAMS, 2xFRA\n")


@_clean_shape("clean-sami-sheet-without-passwords")
def _c_sami(rng: random.Random) -> str:
    resp = {"range": "Bálvalusat!A1:C3", "majorDimension": "ROWS",
            "values": [["Bálvalus", "IP", "Beassansátni"], ["Printer", "192.168.10.40", "(Bitwarden)"],
                       ["NAS", "192.168.10.41", "(Bitwarden)"]], "spreadsheetId": _b64u(rng, 33)}
    return json.dumps(resp, ensure_ascii=False, indent=2) + "\n"


@_clean_shape("clean-mpesa-passkey-doc-with-placeholder")
def _c_daraja_doc(rng: random.Random) -> str:
    return ("Password = base64(Shortcode + Passkey + Timestamp)\n"
            "Example: Password = base64(\"174379\" + \"<your passkey>\" + \"20260302101522\")\n"
            f"Request reference: {_guid(rng)}\n")


SHAPES = tuple(name for name, _ in _WITH_SECRET)
CLEAN_SHAPES = tuple(name for name, _ in _WITHOUT_SECRET)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape, its values drawn with `seed`, then the documents without a secret."""
    rng = random.Random(seed)
    credential = [Document(name, *make(rng)) for name, make in _WITH_SECRET]
    clean = [Document(name, make(rng)) for name, make in _WITHOUT_SECRET]
    return credential + clean
