"""The HOLDOUT9 part of the secret corpus: a ninth blind part, written after HOLDOUT to HOLDOUT8.

Written blind: its author read only the `Document` type and the earlier generators (to copy their structure and
to keep away from their tools, vendors, formats, languages, shapes and values); never the detector, its rules,
its docs, its tests, its state or its figures, and no document was run through a detector or changed after one.
Every document copies what a real tool, config file, log, agent, terminal session, person or trace writes, with
tools, vendors, formats and languages the earlier parts do not use:

- agents, IDE agents and MCP: a Goose session JSONL (`developer__shell` toolRequest, Together AI), opencode.json
  provider options (Zhipu GLM), a Windsurf mcp_config.json (Browserbase), a Kiro `.kiro/settings/mcp.json` (E2B),
  a VS Code mcp.json running `mcp-remote` with an `Authorization` env (Sentry user token), the MCP Inspector's
  session token and URL, `docker mcp secret set` with a Postgres URL, a Mastra pino log (MailerSend), a Google ADK
  `/run` event list (Shippo), a Strands Agents debug log (Cal.com), a LangChain4j `ToolExecutionRequest` with
  escaped JSON, a Genkit trace span (Riot Games), Flowise `docker run`, a Dify DSL http-request node (Coralogix),
  LibreChat `.env`, `chainlit create-secret`, Gradio `launch(auth=...)`, `vllm serve --api-key` echoed in
  "non-default args", Charm Crush providers (DashScope), a Claude Agent SDK `ToolUseBlock` repr (Exa), an Amazon
  Q Developer CLI `execute_bash` (Alpaca), an Arize Phoenix span (turbopuffer), a Helicone gateway curl (an OpenAI
  service-account key and a Helicone key), OpenAI and Anthropic admin keys, a Claude Code PreToolUse hook log
  (Fauna);
- shells and CLIs: zsh extended history (kopia to IDrive e2), fish_history (LlamaCloud), PSReadLine history
  (Prefect), numbered `history` (svn), `ps auxww` (x11vnc), `/proc/<pid>/environ` (Tigris), `openssl enc -pass`,
  `openssl pkcs12 -passout`, `zip -P`, `qpdf --password=`, VeraCrypt, `.p4config`, rsyncd.secrets, `ldappasswd -w
  -s`, `sysadminctl`, `networksetup`, PsExec, `sc.exe config`, `appcmd`, `openconnect --passwd-on-stdin`, `pass
  show`, `lpass show`, `chamber read` (EasyPost), AWS Secrets Manager and SSM (Stytch), `az keyvault secret show`
  (Sendbird), `gcloud secrets versions access` (Statsig), `gcloud sql users set-password`, `aws ecr
  get-login-password`, Huawei KooCLI, Qiniu qshell, Baidu Qianfan, `oc login --token=sha256~`, usql, sqlcipher
  `PRAGMA key`, zkCli `addauth digest`, rpk.yaml, Temporal Cloud, `act -s` (Surge), kaggle.json, `%env`
  (Neptune);
- CI systems: Woodpecker, Semaphore (Rootly), Codemagic (Expo), Bitrise, AppVeyor (Coveralls beside a `secure:`
  blob), CodeBuild, Cloud Build (Directus), GoCD cruise-config and autoregister.properties, Cirrus CI (Cachix
  beside `ENCRYPTED[...]`), a Bamboo log, Earthly (hex.pm), `forgejo-runner register`;
- servers and apps: launchd plist (Immich), supervisord, PM2 (Strapi), aerc, mbsync (Fastmail app password),
  nullmailer (SMTP2GO), irssi SASL, TeamSpeak 3 first start, CS2 server.cfg, Palworld settings, Deluge auth, Plex
  Preferences.xml, Paperless-ngx, Pterodactyl Wings, Guacamole user-mapping, lighttpd plain userfile, WebLogic
  boot.properties, GlassFish passwordfile, Roundcube, TYPO3, PrestaShop (a forum paste with other keys masked),
  Odoo, ERPNext, Matomo, OTRS, Superset, Trino, Spark s3a (IONOS), hive-site.xml, a Debezium connector, NiFi,
  Logstash, Graylog, Icinga 2, Rocket.toml, Pyramid, CodeIgniter 4, dotenvx `.env.keys`, an EJSON keydir,
  Cloudinary, ImageKit;
- code and SDKs: Godot export credentials, a Delphi DFM (FireDAC), AutoHotkey v2, a Fortran namelist, OCaml
  (Polygon.io), ABAP, IBM i CL, a Tiltfile (Tinybird), renovate.json5, PubNub, Ably, LaunchDarkly (Go), Unleash,
  Gcore (`APIKey` scheme), Coolify (a Sanctum `id|token`), Matrix login, Webex, Twitch, tweepy (an X bearer
  token), a reqwest error URL (Steam), OKX (secret and passphrase), a Coinbase CDP key JSON, `cast wallet new`,
  a Solana keypair array, a Nostr nsec;
- HTTP and wire captures: Jellyfin, Portainer, `curl --oauth2-bearer` (ZITADEL), a Burp Repeater request
  (Rundeck), a Fiddler request (Azure API Management), an XML-RPC capture (Odoo), a Prosody SASL PLAIN log,
  `tcpdump -A`, `tshark -T fields` (LaunchDarkly), Java HttpClient header logging (monday.com);
- debuggers and audit trails: ipdb `pp self.__dict__` (Mixedbread), pry (Recurly), gdb, `dotnet-dump dumpobj`,
  `jcmd VM.system_properties`, better-exceptions (Pipedrive), Delve (Sinch), a Windows 4688 event, an auditd
  EXECVE record, a Kubernetes RequestResponse audit event;
- OCR, transcripts, sheets and notes: Google Cloud Vision, AWS Textract, Whisper JSON, SRT subtitles, a pandas
  DataFrame print, csvlook, Excel 2003 SpreadsheetML, Logseq properties, an Evernote ENEX export;
- people in languages and scripts the earlier parts do not use, each through a carrier they do not use: Slovak
  (.eml, "Dočasné heslo"), Galician (Thunderbird mbox, "contrasinal"), Irish (Graph API message, "Pasfhocal"),
  Luxembourgish (Pidgin HTML log, "Passwuert"), Macedonian (Gmail API snippet, "лозинка"), Belarusian (VK export,
  "Пароль"), Mongolian (GitLab notes API, "нууц үг"), Uzbek (Proton export, "parol"), Azerbaijani (Sinch inbound
  SMS, "şifrə"), Amharic (Telegram Bot API, "የይለፍ ቃል"), Hausa (WhatsApp Cloud API webhook, "kalmar sirri"), Zulu
  (Apple Mail .emlx, "Iphasiwedi"), Nepali (Facebook Page API, "पासवर्ड"), Punjabi (notmuch JSON, "ਪਾਸਵਰਡ"),
  Gujarati (Help Scout thread, "પાસવર્ડ"), Telugu (`dumpsys notification --noredact`, "పాస్‌వర్డ్"), Malayalam
  (sigtop, "പാസ്‌വേഡ്"), Sinhala (docx document.xml, "මුරපදය"), Burmese (Telethon repr, "စကားဝှက်"), Khmer (mmcli
  SMS, "ពាក្យសម្ងាត់"), Lao (Keybase chat, "ລະຫັດຜ່ານ"), Esperanto (Matrix messages API, "pasvorto"), Sorani Kurdish
  (Google Meet chat, "وشەی نهێنی"), Pashto (Google Voice takeout, "پټنوم"), Faroese (a quoted reply, "loyniorð"),
  West Frisian (Nextcloud Talk API, "wachtwurd"), Kyrgyz (Huawei LTE router SMS XML, "сырсөз"), Tajik (gammu,
  "Рамз"), Haitian Creole (X archive DMs, "modpas"), Kinyarwanda (LinkedIn messages.csv, "ijambo ry'ibanga"),
  Malagasy (Instagram DM export, "teny miafina"), Scottish Gaelic (quoted-printable e-mail, "Facal-faire"), Breton
  (a folded iCalendar DESCRIPTION, "Ger-tremen"), Tatar (a vCard NOTE, "серсүз").

Each document plants one or two values; every value appears verbatim on one line of its text and is 8
characters or more. Value forms: vendor prefixes none of the earlier parts use (tgp_v1_, bb_live_, e2b_,
sntryu_, mlsn., shippo_live_, cal_live_, RGAPI-, cxtp_, tpuf_, sk-svcacct-, sk-helicone-, sk-admin-,
sk-ant-admin01-, fnA, llx-, pnu_, tsec_, EZAK, secret-live-, secret- (Statsig), bce-v3/ALTAK-, sha256~, rootly_,
ptr_, sec-c-, sdk-, api- (LaunchDarkly), default:production., p. (Tinybird), mxb_, syt_, _PF84_, nsec1,
private_, an `id$hex` Gcore token, an `id|token` Sanctum token, an `id.secret` Zhipu key), hex (LibreChat, MCP
Inspector, Deluge, TYPO3, dotenvx, EJSON, Jellyfin, Odoo, Surge, hex.pm, Kaggle, Recurly, Pipedrive, Steam in
upper case, an OKX secret in upper case, an Ethereum private key), base64 (Strapi, Superset, Rocket, Spark, a
PubNub secret, an ECR token, a Neptune token of base64 JSON, an XMPP SASL PLAIN blob), base64url (ERPNext Fernet
key, Ably, ZITADEL, vLLM), UUID-shaped keys (Exa, GoCD, LaunchDarkly), JWTs (ES256 Temporal, HS256 Cachix and
monday.com), a Solana byte array, a PEM body line inside an escaped JSON string, people's passwords (a word,
digits and a mark), generated passwords with symbols (also `{}[]<>|` and a backtick), short
passwords of 8 to 12 characters (an 8-character x11vnc and TeamSpeak password, a 10-character upper-case IBM i
password), passphrases (spaces, dashes; one spoken in a transcript), a Fastmail app password, Chainlit's
punctuation-heavy secret, and values inside URLs, escaped JSON, Python reprs, XML, INI, PHP, Perl, YAML, CSV and
quoted-printable text as those formats write them.

Decisions: usernames, e-mail addresses, client ids (Twitch), key ids and access-key ids (IDrive, Tigris `tid_`,
Huawei, Qiniu, IONOS, Alpaca `PK…`, Sinch, OKX API key, Ably key name, Pterodactyl `token_id`, Coinbase key name),
project, account, room, device, app and machine ids (Browserbase project, Plex machine ids, Webex room ids, Matrix
device ids, Nextcloud Talk room tokens), keys public by design (PubNub pub/sub keys, ImageKit `public_`, dotenvx
and EJSON public keys, npub, Ethereum and Solana addresses, Bitcoin pubkeys), hashes and digests (ZooKeeper
digest ACLs, Graylog `root_password_sha2`, TYPO3 argon2, Pi-hole balloon hashes, SIP digest responses, ZNC
sha256), ciphertexts (AppVeyor `secure:`, GoCD `AES:`, Cirrus `ENCRYPTED[...]`, WebLogic `{AES256}`, dotenvx
`encrypted:`, EJSON boxes, KMS and Vault transit ciphertexts), transaction and event hashes, request, trace,
span, tool-call and invocation ids are not credentials; for a `user:password` pair, a URL with userinfo, a
`--proxy-user` argument or an Ably `name:secret` key the planted value is the password or secret; a base64 SASL
PLAIN blob is planted as the base64 text; a PEM key is planted as its first body line; a password a person
dictates is planted as the transcript spells it; no document holds a credential value beside the one or two it
plants (masked echoes such as `***`, `****`, `*` and `SecretStr('**********')` are not values).

The clean documents hold no credential but plenty of look-alikes: an OpenAI 401 with a masked key, .NET 8
HttpClient logs with `Authorization: *`, a CloudTrail `HIDDEN_DUE_TO_SECURITY_REASONS`, ZNC and Pi-hole hashes,
a SIP digest, dotenvx and EJSON files without their private keys, browser PubNub keys, a `cast receipt`, Solana
signatures, a signed Nostr event, `getaddressinfo`, GoCD and Cirrus ciphertexts, Dependabot secret references, a
pydantic `SecretStr` repr, a Metadata-level audit event, the MCP Inspector with auth disabled, a Goose call that
reads the keychain, a gettext file translating "Password" into the new languages, prose with "passed",
"keyboard", "tokenizer" and "passport", a security-training transcript, DataFrames of hashes and UUIDs, a
Textract receipt, SteamCMD manifests, Plex GUIDs, a bisect log, Nix store paths, uv.lock hashes, an SSH
certificate listing, TPM PCRs, KMS and Vault transit ciphertexts, an onion hostname, an Odoo pbkdf2 hash, Webex
room ids, Matrix sync ids, an asset inventory, a Sinhala bank warning, Mastra and ADK logs without secrets, a
Helicone log with masked keys and a Kinyarwanda password policy.

SEED = 2718281. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
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

SEED = 2718281

_LETTERS_DIGITS = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_URL_ALPHABET = _LETTERS_DIGITS + "-_"
_HEX = "0123456789abcdef"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"

_VOCAB = tuple(
    """
    anchovy biscuit compass dolphin eclipse fjord gondola hazelnut igloo jigsaw kayak lychee mosaic nebula
    oregano pelican quokka rosemary sardine trombone ukulele vanilla waffle yogurt zucchini acorn bramble
    cobalt dune ember fennel garnet hickory indigo jackal kelp lilac nougat opal pistachio quince ripple
    sorrel tundra starling puffin mackerel cardamom
    """.split()
)

_NUMBER_WORDS = (
    "twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty "
    "seventy eighty ninety"
).split()

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


def _fill(template: str, **parts: str) -> str:
    """Dedent `template`, write a tab for each `‹tab›`, then write each part where its `‹name›` mark stands."""
    text = textwrap.dedent(template).strip("\n") + "\n"
    text = text.replace("‹tab›", "\t")
    for name, part in parts.items():
        text = text.replace(f"‹{name}›", part)
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


def _b58(rng: random.Random, length: int) -> str:
    return _pick(rng, _BASE58, length)


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


def _human(rng: random.Random, marks: str = "!.?$#") -> str:
    """What a person picks: a capitalised word, a year or a number, a mark."""
    word = rng.choice(_VOCAB)
    number = rng.randint(1971, 2026) if rng.random() < 0.5 else rng.randint(10, 999)
    value = word[0].upper() + word[1:] + str(number) + rng.choice(marks)
    # A short word and two digits: the number padded as people pad it (every value is 8 characters or more).
    return value if len(value) >= 8 else word[0].upper() + word[1:] + str(number).zfill(4) + value[-1]


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


def _toolu(rng: random.Random) -> str:
    return "toolu_01" + _pick(rng, _LETTERS_DIGITS, 22)


def _pem_lines(body: str) -> list[str]:
    return [body[i : i + 64] for i in range(0, len(body), 64)]


# --------------------------------------------------------------------------------------------------------
# Agent frameworks, IDE agents and MCP
# --------------------------------------------------------------------------------------------------------


@_shape("goose-session-jsonl-developer-shell-tool-request")
def _goose_session(rng: random.Random) -> Built:
    key = "tgp_v1_" + _b64u(rng, 32)
    created = _epoch(rng)
    call = _toolu(rng)
    command = (
        f"export TOGETHER_API_KEY={key} && python scripts/bench_together.py "
        "--model meta-llama/Llama-3.3-70B-Instruct-Turbo --n 50"
    )
    lines = [
        {
            "working_dir": "/home/ines/src/eval-harness",
            "description": "Benchmark Together models",
            "message_count": 4,
            "total_tokens": 18342,
            "input_tokens": 17020,
            "output_tokens": 1322,
        },
        {
            "id": None,
            "role": "user",
            "created": created,
            "content": [{"type": "text", "text": "run the together bench again with my new key"}],
        },
        {
            "id": None,
            "role": "assistant",
            "created": created + 4,
            "content": [
                {"type": "text", "text": "I'll export the key for this shell and run the benchmark."},
                {
                    "type": "toolRequest",
                    "id": call,
                    "toolCall": {
                        "status": "success",
                        "value": {"name": "developer__shell", "arguments": {"command": command}},
                    },
                },
            ],
        },
        {
            "id": None,
            "role": "user",
            "created": created + 61,
            "content": [
                {
                    "type": "toolResponse",
                    "id": call,
                    "toolResult": {
                        "status": "success",
                        "value": [
                            {"type": "text", "text": "50/50 done, p50 latency 412 ms, mean score 0.781\n"}
                        ],
                    },
                }
            ],
        },
    ]
    session = _lower_alnum(rng, 8)
    text = f"$ tail -n 4 ~/.local/share/goose/sessions/20260302_{session}.jsonl\n"
    text += "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    return text, (key,)


@_shape("opencode-json-provider-options-zhipu-api-key")
def _opencode_json(rng: random.Random) -> Built:
    key = _hexs(rng, 32) + "." + _alnum(rng, 16)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "theme": "tokyonight",
        "model": "zhipuai/glm-4.6",
        "provider": {
            "zhipuai": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Zhipu GLM",
                "options": {"baseURL": "https://open.bigmodel.cn/api/paas/v4", "apiKey": key},
                "models": {"glm-4.6": {"name": "GLM-4.6"}, "glm-4.5-air": {"name": "GLM-4.5 Air"}},
            }
        },
        "permission": {"edit": "ask", "bash": "ask"},
    }
    text = "$ cat opencode.json\n" + json.dumps(config, indent=2) + "\n$ opencode\n"
    return text, (key,)


@_shape("windsurf-mcp-config-json-browserbase-env")
def _windsurf_mcp(rng: random.Random) -> Built:
    key = "bb_live_" + _pick(rng, _URL_ALPHABET, 27)
    config = {
        "mcpServers": {
            "browserbase": {
                "command": "npx",
                "args": ["-y", "@browserbasehq/mcp-server-browserbase"],
                "env": {"BROWSERBASE_API_KEY": key, "BROWSERBASE_PROJECT_ID": _guid(rng)},
            },
            "git": {
                "command": "uvx",
                "args": ["mcp-server-git", "--repository", "/Users/kwame/src/storefront"],
            },
        }
    }
    text = "kwame@mbp ~ % cat ~/.codeium/windsurf/mcp_config.json\n" + json.dumps(config, indent=2) + "\n"
    return text, (key,)


@_shape("kiro-settings-mcp-json-e2b-env-auto-approve")
def _kiro_mcp(rng: random.Random) -> Built:
    key = "e2b_" + _hexs(rng, 40)
    config = {
        "mcpServers": {
            "e2b": {
                "command": "uvx",
                "args": ["e2b-mcp-server"],
                "env": {"E2B_API_KEY": key},
                "disabled": False,
                "autoApprove": ["run_code"],
            },
            "fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "disabled": False, "autoApprove": []},
        }
    }
    text = "// .kiro/settings/mcp.json (workspace)\n" + json.dumps(config, indent=2) + "\n"
    return text, (key,)


@_shape("vscode-mcp-json-mcp-remote-auth-header-env-literal")
def _vscode_mcp_remote(rng: random.Random) -> Built:
    token = "sntryu_" + _hexs(rng, 64)
    config = {
        "servers": {
            "sentry": {
                "type": "stdio",
                "command": "npx",
                "args": [
                    "-y",
                    "mcp-remote@latest",
                    "https://mcp.sentry.dev/mcp",
                    "--header",
                    "Authorization:${AUTH_HEADER}",
                ],
                "env": {"AUTH_HEADER": f"Bearer {token}"},
            }
        },
        "inputs": [],
    }
    text = _fill(
        """
        ### .vscode/mcp.json

        ```json
        ‹json›
        ```

        Copilot agent mode picks this up after "MCP: List Servers" -> sentry -> Start Server.
        """,
        json=json.dumps(config, indent=2),
    )
    return text, (token,)


@_shape("mcp-inspector-startup-session-token-and-url")
def _mcp_inspector(rng: random.Random) -> Built:
    token = _hexs(rng, 64)
    text = _fill(
        """
        $ npx @modelcontextprotocol/inspector node build/index.js
        Starting MCP inspector...
        ⚙️ Proxy server listening on localhost:6277
        🔑 Session token: ‹t›
           Use this token to authenticate requests or set DANGEROUSLY_OMIT_AUTH=true to disable auth

        🚀 MCP Inspector is up and running at:
           http://localhost:6274/?MCP_PROXY_AUTH_TOKEN=‹t›

        🌐 Opening browser...
        New STDIO connection request
        Query parameters: {"command":"node","args":"build/index.js","env":"{\\"HOME\\":\\"/home/dara\\"}","transportType":"stdio"}
        STDIO transport: command=/usr/bin/node, args=build/index.js
        Created server transport
        """,
        t=token,
    )
    return text, (token,)


@_shape("docker-mcp-secret-set-postgres-url-password")
def _docker_mcp_secret(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="-_.~!*")
    text = _fill(
        """
        $ docker mcp server enable postgres
        Tip: ✓ Server enabled. To view all enabled servers, use docker mcp server ls
        $ docker mcp secret set 'postgres.url=postgresql://reporting:‹p›@host.docker.internal:5432/analytics'
        $ docker mcp secret ls
        NAME            PROVIDER
        postgres.url    docker-desktop-store
        $ docker mcp gateway run --servers postgres
        - Reading configuration...
          - Reading registry from registry.yaml
          - Reading catalog from [docker-mcp.yaml]
          - Reading config from config.yaml
          - Reading secrets [postgres.url]
        - Configuration read in 41.2ms
        - Listing MCP tools...
          > postgres: (1 tools)
        > 1 tools listed in 1.08s
        > Start stdio server
        """,
        p=password,
    )
    return text, (password,)


@_shape("mastra-pino-log-tool-call-args-mailersend-token")
def _mastra_log(rng: random.Random) -> Built:
    token = "mlsn." + _hexs(rng, 64)
    run = _guid(rng)
    base = _epoch(rng) * 1000
    args = {
        "from": "receipts@kaffeebar-example.de",
        "to": "order-7731@customers.example",
        "templateId": _lower_alnum(rng, 12),
        "apiToken": token,
    }
    lines = [
        {
            "level": 30,
            "time": base,
            "pid": 4121,
            "hostname": "agents-1",
            "name": "Mastra",
            "msg": "[Agent:receipt-agent] - Starting generation",
            "runId": run,
        },
        {
            "level": 20,
            "time": base + 2210,
            "pid": 4121,
            "hostname": "agents-1",
            "name": "Mastra",
            "msg": f"[Agent:receipt-agent] - Executing tool sendReceiptEmail with args: {json.dumps(args)}",
            "runId": run,
        },
        {
            "level": 30,
            "time": base + 3105,
            "pid": 4121,
            "hostname": "agents-1",
            "name": "Mastra",
            "msg": "[Agent:receipt-agent] - Tool sendReceiptEmail finished",
            "runId": run,
            "durationMs": 895,
        },
    ]
    text = "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    return text, (token,)


@_shape("google-adk-api-server-run-events-function-call-args")
def _adk_events(rng: random.Random) -> Built:
    token = "shippo_live_" + _hexs(rng, 40)
    invocation = "e-" + _guid(rng)
    events = [
        {
            "content": {
                "parts": [
                    {
                        "functionCall": {
                            "id": "adk-" + _guid(rng),
                            "args": {
                                "carrier": "dhl_express",
                                "parcel_weight_kg": 1.4,
                                "api_token": token,
                            },
                            "name": "create_shipping_label",
                        }
                    }
                ],
                "role": "model",
            },
            "invocationId": invocation,
            "author": "shipping_agent",
            "actions": {"stateDelta": {}, "artifactDelta": {}, "requestedAuthConfigs": {}},
            "longRunningToolIds": [],
            "id": _alnum(rng, 8),
            "timestamp": _epoch(rng) + rng.random(),
        },
        {
            "content": {
                "parts": [
                    {
                        "functionResponse": {
                            "name": "create_shipping_label",
                            "response": {"status": "SUCCESS", "tracking_number": _digits(rng, 10)},
                        }
                    }
                ],
                "role": "user",
            },
            "invocationId": invocation,
            "author": "shipping_agent",
            "id": _alnum(rng, 8),
        },
    ]
    text = (
        "$ curl -s -X POST http://localhost:8000/run -H 'Content-Type: application/json' -d @req.json | jq .\n"
        + json.dumps(events, indent=2)
        + "\n"
    )
    return text, (token,)


@_shape("strands-agents-debug-log-tool-use-http-request-header")
def _strands_log(rng: random.Random) -> Built:
    key = "cal_live_" + _hexs(rng, 32)
    tool_id = "tooluse_" + _pick(rng, _URL_ALPHABET, 22)
    tool_use = {
        "toolUseId": tool_id,
        "name": "http_request",
        "input": {
            "method": "GET",
            "url": "https://api.cal.com/v2/bookings?status=upcoming",
            "headers": {"Authorization": f"Bearer {key}", "cal-api-version": "2024-08-13"},
        },
    }
    text = _fill(
        """
        DEBUG | strands.event_loop.event_loop | tool_use=<‹use›> | streaming
        DEBUG | strands.tools.registry | tool_name=<http_request> | loaded tool config
        DEBUG | strands.tools.executors._executor | tool_use=<‹use›> | executing
        DEBUG | strands_tools.http_request | status_code=<200> | response received
        DEBUG | strands.tools.executors._executor | tool_use_id=<‹id›>, tool_name=<http_request> | tool execution complete
        """,
        use=repr(tool_use),
        id=tool_id,
    )
    return text, (key,)


@_shape("langchain4j-tool-execution-request-tostring-escaped-json")
def _langchain4j_log(rng: random.Random) -> Built:
    password = _human(rng, marks="!?$%")
    call = "call_" + _alnum(rng, 24)
    arguments = json.dumps(
        {"username": "mkowal", "newPassword": password, "notify": True}, separators=(",", ":")
    )
    escaped = arguments.replace('"', '\\"')
    stamp = f"{_date(rng)} {_time(rng)}.{rng.randint(100, 999)}"
    text = _fill(
        """
        ‹s› DEBUG 1 --- [nio-8080-exec-4] d.l.service.tool.DefaultToolExecutor    : About to execute ToolExecutionRequest { id = "‹c›", name = "resetUserPassword", arguments = "‹a›" } for memoryId default
        ‹s› INFO 1 --- [nio-8080-exec-4] c.a.helpdesk.tools.AccountTools          : password reset for mkowal done
        ‹s› DEBUG 1 --- [nio-8080-exec-4] d.l.service.tool.DefaultToolExecutor    : Tool execution result: Password for mkowal was reset.
        """,
        s=stamp,
        c=call,
        a=escaped,
    )
    return text, (password,)


@_shape("genkit-dev-ui-trace-span-attributes-input-json")
def _genkit_trace(rng: random.Random) -> Built:
    key = "RGAPI-" + _guid(rng)
    trace = _hexs(rng, 32)
    span = _hexs(rng, 16)
    trace_doc = {
        "traceId": trace,
        "displayName": "lookupSummonerFlow",
        "spans": {
            span: {
                "spanId": span,
                "traceId": trace,
                "startTime": _epoch(rng) * 1000,
                "displayName": "fetchSummoner",
                "attributes": {
                    "genkit:type": "action",
                    "genkit:metadata:subtype": "tool",
                    "genkit:name": "fetchSummoner",
                    "genkit:path": "/{lookupSummonerFlow,t:flow}/{fetchSummoner,t:action,s:tool}",
                    "genkit:input": json.dumps({"riotId": "Tomato#EUW", "region": "europe", "apiKey": key}),
                    "genkit:state": "success",
                },
                "status": {"code": 0},
            }
        },
    }
    text = json.dumps(trace_doc, indent=2) + "\n"
    return text, (key,)


@_shape("flowise-docker-run-env-username-password-flags")
def _flowise_run(rng: random.Random) -> Built:
    password = _human(rng, marks="!#%")
    text = _fill(
        """
        $ docker run -d --name flowise -p 3000:3000 \\
            -e FLOWISE_USERNAME=admin \\
            -e FLOWISE_PASSWORD='‹p›' \\
            -e DATABASE_PATH=/root/.flowise \\
            -v ~/.flowise:/root/.flowise \\
            flowiseai/flowise:2.2.8
        ‹cid›
        $ docker logs flowise | tail -n 3
        2026-03-02 10:14:03 [INFO]: Starting Flowise...
        2026-03-02 10:14:05 [INFO]: 📦 [server]: Data Source has been initialized!
        2026-03-02 10:14:06 [INFO]: ⚡️ [server]: Flowise Server is listening at :3000
        """,
        p=password,
        cid=_hexs(rng, 64),
    )
    return text, (password,)


@_shape("dify-dsl-yaml-http-request-node-bearer-api-key")
def _dify_dsl(rng: random.Random) -> Built:
    key = "cxtp_" + _alnum(rng, 30)
    text = _fill(
        """
        app:
          description: Triage incoming tickets and push a log line per decision
          icon: 🤖
          mode: workflow
          name: ticket-triage
        kind: app
        version: 0.3.0
        workflow:
          graph:
            edges:
            - source: '1740000000001'
              target: '1740000000002'
            nodes:
            - data:
                authorization:
                  config:
                    api_key: ‹k›
                    header: ''
                    type: bearer
                  type: api-key
                body:
                  data: '{"applicationName": "dify", "subsystemName": "triage", "text": "{{#1740000000001.category#}}"}'
                  type: json
                headers: Content-Type:application/json
                method: post
                timeout:
                  max_connect_timeout: 0
                title: Push to Coralogix
                type: http-request
                url: https://ingress.eu2.coralogix.com/logs/v1/singles
              id: '1740000000002'
              type: custom
        """,
        k=key,
    )
    return text, (key,)


@_shape("librechat-dotenv-creds-key-and-jwt-secret")
def _librechat_env(rng: random.Random) -> Built:
    creds = _hexs(rng, 64)
    jwt_secret = _hexs(rng, 64)
    text = _fill(
        """
        #=====================================================================#
        #                       LibreChat Configuration                       #
        #=====================================================================#
        HOST=0.0.0.0
        PORT=3080
        MONGO_URI=mongodb://mongodb:27017/LibreChat
        DOMAIN_CLIENT=https://chat.atelier-example.fr
        DOMAIN_SERVER=https://chat.atelier-example.fr

        #==================================================#
        #                   Credentials                    #
        #==================================================#
        # Use https://www.librechat.ai/toolkit/creds_generator to replace these
        CREDS_KEY=‹c›
        JWT_SECRET=‹j›

        ALLOW_REGISTRATION=false
        ALLOW_SOCIAL_LOGIN=false
        """,
        c=creds,
        j=jwt_secret,
    )
    return text, (creds, jwt_secret)


@_shape("chainlit-create-secret-output-punctuation")
def _chainlit_secret(rng: random.Random) -> Built:
    alphabet = _LETTERS_DIGITS + "$%*,-./:=>?@^_~"
    secret = _strong(rng, 64, marks="$%*,-./:=>?@^_~")
    assert all(c in alphabet for c in secret)
    text = _fill(
        """
        (.venv) PS C:\\Users\\amaka\\src\\support-bot> chainlit create-secret
        Copy the following secret into your .env file. Once it is set, changing it will logout all users with active sessions.
        CHAINLIT_AUTH_SECRET="‹s›"
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("gradio-launch-auth-tuple-share-link")
def _gradio_launch(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        $ cat app.py | tail -n 4
        with gr.Blocks(title="Contract clause finder") as demo:
            build_ui()

        demo.launch(auth=("reviewer", "‹p›"), share=True)
        $ python app.py
        * Running on local URL:  http://127.0.0.1:7860
        * Running on public URL: https://‹h›.gradio.live

        This share link expires in 1 week. For free permanent hosting and GPU upgrades, run `gradio deploy` from the terminal in the working directory to deploy to Hugging Face Spaces (https://huggingface.co/spaces)
        """,
        p=password,
        h=_hexs(rng, 18),
    )
    return text, (password,)


@_shape("vllm-serve-non-default-args-api-key-list")
def _vllm_args(rng: random.Random) -> Built:
    key = _pick(rng, _URL_ALPHABET, 40)
    stamp = f"{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d} {_time(rng)}"
    text = _fill(
        """
        $ vllm serve Qwen/Qwen3-8B --api-key ‹k› --max-model-len 16384 --port 8000
        INFO ‹s› [__init__.py:241] Automatically detected platform cuda.
        (APIServer pid=2207) INFO ‹s› [api_server.py:1805] vLLM API server version 0.10.1.1
        (APIServer pid=2207) INFO ‹s› [utils.py:326] non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'api_key': ['‹k›'], 'model': 'Qwen/Qwen3-8B', 'max_model_len': 16384}
        (APIServer pid=2207) INFO ‹s› [config.py:726] Resolved architecture: Qwen3ForCausalLM
        """,
        k=key,
        s=stamp,
    )
    return text, (key,)


@_shape("crush-json-providers-openai-compatible-dashscope-key")
def _crush_json(rng: random.Random) -> Built:
    key = "sk-" + _hexs(rng, 32)
    config = {
        "$schema": "https://charm.land/crush.json",
        "providers": {
            "dashscope": {
                "type": "openai",
                "base_url": "https://dashscope-intl.aliyuncs.com/compatible-mode/v1",
                "api_key": key,
                "models": [
                    {
                        "id": "qwen3-coder-plus",
                        "name": "Qwen3 Coder Plus",
                        "context_window": 1000000,
                        "default_max_tokens": 65536,
                    }
                ],
            }
        },
        "lsp": {"go": {"command": "gopls"}},
    }
    text = "❯ cat ~/.config/crush/crush.json\n" + json.dumps(config, indent=2) + "\n"
    return text, (key,)


@_shape("claude-agent-sdk-python-tooluseblock-repr-curl-header")
def _claude_agent_sdk(rng: random.Random) -> Built:
    key = _guid(rng)
    command = (
        f'curl -s https://api.exa.ai/search -H "x-api-key: {key}" -H "Content-Type: application/json" '
        '-d \'{"query": "retrieval augmented generation evaluation 2026", "numResults": 5}\''
    )
    tool_input = {"command": command, "description": "Search Exa for recent papers"}
    message = (
        'AssistantMessage(content=[TextBlock(text="I\'ll search Exa for recent papers."), '
        f"ToolUseBlock(id='{_toolu(rng)}', name='Bash', input={tool_input!r})], "
        "model='claude-sonnet-4-5-20250929', parent_tool_use_id=None)"
    )
    text = _fill(
        """
        $ python research_agent.py
        SystemMessage(subtype='init', data={'type': 'system', 'subtype': 'init', 'cwd': '/home/lena/research', 'tools': ['Task', 'Bash', 'Read', 'Write'], 'model': 'claude-sonnet-4-5-20250929', 'permissionMode': 'acceptEdits'})
        ‹m›
        """,
        m=message,
    )
    return text, (key,)


@_shape("amazon-q-cli-chat-execute-bash-inline-env")
def _amazon_q_chat(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    key_id = "PK" + _pick(rng, _UPPER_DIGITS, 18)
    text = _fill(
        """
        > set up the alpaca paper trading client and check the account, key id ‹i› secret ‹s›

        I'll write a small script and run it against the paper endpoint.

        🛠️  Using tool: execute_bash
         ⋮
         ● I will run the following shell command:
        APCA_API_BASE_URL=https://paper-api.alpaca.markets APCA_API_KEY_ID=‹i› APCA_API_SECRET_KEY=‹s› python3 check_account.py
         ⋮
         ↳ Purpose: Check the Alpaca paper trading account


        Allow this action? Use 't' to trust (always allow) this tool for the session. [y/n/t]:

        > y

        account status: ACTIVE  buying_power: 200000.00  currency: USD

         ⋮
         ● Completed in 1.214s
        """,
        i=key_id,
        s=secret,
    )
    return text, (secret,)


@_shape("arize-phoenix-span-json-tool-call-arguments")
def _phoenix_span(rng: random.Random) -> Built:
    key = "tpuf_" + _alnum(rng, 32)
    span = {
        "name": "ChatCompletion",
        "context": {"trace_id": _hexs(rng, 32), "span_id": _hexs(rng, 16)},
        "span_kind": "LLM",
        "parent_id": _hexs(rng, 16),
        "start_time": _stamp(rng),
        "status_code": "OK",
        "attributes": {
            "llm.model_name": "gpt-4.1-mini",
            "llm.token_count.prompt": 2211,
            "llm.token_count.completion": 96,
            "llm.output_messages": [
                {
                    "message.role": "assistant",
                    "message.tool_calls": [
                        {
                            "tool_call.id": "call_" + _alnum(rng, 24),
                            "tool_call.function.name": "upsert_vectors",
                            "tool_call.function.arguments": json.dumps(
                                {"namespace": "docs-v2", "region": "gcp-europe-west3", "api_key": key}
                            ),
                        }
                    ],
                }
            ],
        },
    }
    text = "phoenix › Traces › span details › JSON\n" + json.dumps(span, indent=2) + "\n"
    return text, (key,)


@_shape("helicone-gateway-curl-provider-and-helicone-keys")
def _helicone_curl(rng: random.Random) -> Built:
    provider = "sk-svcacct-" + _pick(rng, _URL_ALPHABET, 74) + "T3BlbkFJ" + _pick(rng, _URL_ALPHABET, 74)
    helicone = "sk-helicone-" + "-".join(_lower_alnum(rng, 7) for _ in range(4))
    text = _fill(
        """
        curl https://oai.helicone.ai/v1/chat/completions \\
          -H "Content-Type: application/json" \\
          -H "Authorization: Bearer ‹p›" \\
          -H "Helicone-Auth: Bearer ‹h›" \\
          -H "Helicone-Property-Environment: staging" \\
          -d '{"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "ping"}]}'
        """,
        p=provider,
        h=helicone,
    )
    return text, (provider, helicone)


@_shape("openai-admin-key-curl-organization-users-listing")
def _openai_admin(rng: random.Random) -> Built:
    key = "sk-admin-" + _pick(rng, _URL_ALPHABET, 58) + "T3BlbkFJ" + _pick(rng, _URL_ALPHABET, 58)
    users = {
        "object": "list",
        "data": [
            {
                "object": "organization.user",
                "id": "user-" + _alnum(rng, 24),
                "name": "Priya Raman",
                "email": "priya@lakeview-labs.example",
                "role": "owner",
                "added_at": _epoch(rng),
            }
        ],
        "first_id": "user-" + _alnum(rng, 24),
        "last_id": "user-" + _alnum(rng, 24),
        "has_more": False,
    }
    text = (
        f'$ curl -s "https://api.openai.com/v1/organization/users?limit=20" -H "Authorization: Bearer {key}" '
        '-H "Content-Type: application/json"\n' + json.dumps(users, indent=2) + "\n"
    )
    return text, (key,)


@_shape("anthropic-admin-key-curl-workspaces-response")
def _anthropic_admin(rng: random.Random) -> Built:
    key = "sk-ant-admin01-" + _pick(rng, _URL_ALPHABET, 93) + "AA"
    body = {
        "data": [
            {
                "id": "wrkspc_01" + _alnum(rng, 22),
                "type": "workspace",
                "name": "Default",
                "created_at": f"{_date(rng)}T{_time(rng)}Z",
                "archived_at": None,
                "display_color": "#6C5BB9",
            }
        ],
        "has_more": False,
        "first_id": None,
        "last_id": None,
    }
    text = _fill(
        """
        $ curl "https://api.anthropic.com/v1/organizations/workspaces" \\
            --header "anthropic-version: 2023-06-01" \\
            --header "x-api-key: ‹k›"
        ‹b›
        """,
        k=key,
        b=json.dumps(body),
    )
    return text, (key,)


@_shape("claude-code-pretooluse-hook-audit-jsonl-bash-command")
def _claude_hook_log(rng: random.Random) -> Built:
    secret = "fnA" + _pick(rng, _URL_ALPHABET, 37)
    session = _guid(rng)
    entries = [
        {
            "session_id": session,
            "transcript_path": f"/Users/tomas/.claude/projects/-Users-tomas-src-menu-api/{session}.jsonl",
            "cwd": "/Users/tomas/src/menu-api",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status --short", "description": "Show working tree status"},
        },
        {
            "session_id": session,
            "transcript_path": f"/Users/tomas/.claude/projects/-Users-tomas-src-menu-api/{session}.jsonl",
            "cwd": "/Users/tomas/src/menu-api",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {
                "command": f"FAUNA_SECRET={secret} npx fauna-shell eval --query 'Dish.all().count()'",
                "description": "Count dishes in Fauna",
            },
        },
    ]
    text = "$ tail -n 2 ~/.claude/hooks/bash-audit.jsonl\n"
    text += "\n".join(json.dumps(e, separators=(",", ":")) for e in entries) + "\n"
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# Shell histories, terminal sessions and command lines
# --------------------------------------------------------------------------------------------------------


@_shape("zsh-extended-history-kopia-connect-s3-secret-and-password")
def _zsh_history_kopia(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    password = _passphrase(rng, 4, "-")
    access = _upper_alnum(rng, 20)
    t = _epoch(rng)
    text = _fill(
        """
        $ tail -n 5 ~/.zsh_history
        : ‹t0›:0;cd ~/infra/backup
        : ‹t1›:0;kopia repository connect s3 --bucket=nas-snapshots --endpoint=e2.idrivee2-23.com --access-key=‹a› --secret-access-key=‹s› --password='‹p›'
        : ‹t2›:0;kopia snapshot list /volume1/photos
        : ‹t3›:2;kopia snapshot create /volume1/photos
        : ‹t4›:0;kopia repository status
        """,
        t0=str(t),
        t1=str(t + 19),
        t2=str(t + 44),
        t3=str(t + 61),
        t4=str(t + 391),
        a=access,
        s=secret,
        p=password,
    )
    return text, (secret, password)


@_shape("fish-history-yaml-set-universal-llamacloud-key")
def _fish_history(rng: random.Random) -> Built:
    key = "llx-" + _alnum(rng, 48)
    t = _epoch(rng)
    text = _fill(
        """
        ~> tail -n 9 ~/.local/share/fish/fish_history
        - cmd: cd ~/Downloads/invoices
          when: ‹t0›
        - cmd: set -Ux LLAMA_CLOUD_API_KEY ‹k›
          when: ‹t1›
        - cmd: python ~/bin/parse_invoices.py --dir ~/Downloads/invoices --out invoices.jsonl
          when: ‹t2›
          paths:
            - ~/bin/parse_invoices.py
            - ~/Downloads/invoices
        """,
        t0=str(t),
        t1=str(t + 37),
        t2=str(t + 52),
        k=key,
    )
    return text, (key,)


@_shape("psreadline-consolehost-history-prefect-cloud-login-k")
def _psreadline_history(rng: random.Random) -> Built:
    key = "pnu_" + _alnum(rng, 36)
    text = _fill(
        """
        PS C:\\Users\\hkaya> Get-Content (Get-PSReadLineOption).HistorySavePath | Select-Object -Last 5
        cd C:\\src\\etl-flows
        .\\.venv\\Scripts\\Activate.ps1
        prefect cloud login -k ‹k› -w hkaya/production
        prefect deploy --all
        prefect deployment run 'nightly-ingest/prod'
        """,
        k=key,
    )
    return text, (key,)


@_shape("bash-history-numbered-svn-checkout-password-flag")
def _bash_history_svn(rng: random.Random) -> Built:
    password = _human(rng, marks="!.#")
    n = rng.randint(1200, 4800)
    text = _fill(
        """
        kpetrov@build-03:~$ history | tail -n 5
         ‹n0›  cd ~/work/legacy-cms
         ‹n1›  svn info https://svn.acme-intra.net/repos/cms/trunk
         ‹n2›  svn checkout https://svn.acme-intra.net/repos/cms/trunk cms --username kpetrov --password '‹p›' --non-interactive
         ‹n3›  cd cms && ant dist
         ‹n4›  history | tail -n 5
        """,
        n0=str(n),
        n1=str(n + 1),
        n2=str(n + 2),
        n3=str(n + 3),
        n4=str(n + 4),
        p=password,
    )
    return text, (password,)


@_shape("ps-auxww-x11vnc-passwd-argument")
def _ps_x11vnc(rng: random.Random) -> Built:
    password = _alnum(rng, 8)
    text = _fill(
        """
        pi@kiosk-lobby:~ $ ps auxww | grep -v grep | grep -E 'vnc|Xorg'
        root       612  1.9  2.1 212884 40120 tty7     Ssl+ 08:02   9:14 /usr/lib/xorg/Xorg :0 -seat seat0 -auth /var/run/lightdm/root/:0 -nolisten tcp vt7 -novtswitch
        pi        1533  0.4  0.9  61220 17432 ?        S    08:03   2:01 x11vnc -display :0 -forever -shared -rfbport 5900 -passwd ‹p›
        """,
        p=password,
    )
    return text, (password,)


@_shape("proc-pid-environ-tr-nul-tigris-secret")
def _proc_environ(rng: random.Random) -> Built:
    secret = "tsec_" + _pick(rng, _URL_ALPHABET, 56)
    key_id = "tid_" + _pick(rng, _LETTERS_DIGITS, 30)
    text = _fill(
        """
        root@web-2:~# cat /proc/$(pgrep -f 'gunicorn: master')/environ | tr '\\0' '\\n' | sort
        AWS_ACCESS_KEY_ID=‹i›
        AWS_ENDPOINT_URL_S3=https://fly.storage.tigris.dev
        AWS_REGION=auto
        AWS_SECRET_ACCESS_KEY=‹s›
        BUCKET_NAME=menu-photos
        DJANGO_SETTINGS_MODULE=menus.settings.production
        HOME=/home/app
        LANG=C.UTF-8
        PATH=/app/.venv/bin:/usr/local/bin:/usr/bin:/bin
        PYTHONUNBUFFERED=1
        WEB_CONCURRENCY=3
        """,
        i=key_id,
        s=secret,
    )
    return text, (secret,)


@_shape("openssl-enc-aes-pbkdf2-pass-pass-pipeline")
def _openssl_enc(rng: random.Random) -> Built:
    password = _strong(rng, 22, marks="!#%*+-=?@^_~,.")
    text = _fill(
        """
        + tar czf - /srv/exports
        + openssl enc -aes-256-cbc -pbkdf2 -iter 200000 -salt -pass 'pass:‹p›' -out /mnt/offsite/exports-‹d›.tgz.enc
        tar: Removing leading `/' from member names
        + sha256sum /mnt/offsite/exports-‹d›.tgz.enc
        ‹h›  /mnt/offsite/exports-‹d›.tgz.enc
        """,
        p=password,
        d=_date(rng),
        h=_hexs(rng, 64),
    )
    return text, (password,)


@_shape("openssl-pkcs12-export-passout-pass")
def _openssl_pkcs12(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="-_.@%+=")
    text = _fill(
        """
        $ openssl pkcs12 -export -inkey intranet.key -in intranet.crt -certfile chain.pem -name "intranet" -passout pass:‹p› -out intranet.pfx
        $ openssl pkcs12 -in intranet.pfx -noout -info -passin env:PFX_PASS
        MAC: sha256, Iteration 2048
        MAC length: 32, salt length: 8
        PKCS7 Encrypted data: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256
        Certificate bag
        Certificate bag
        PKCS7 Data
        Shrouded Keybag: PBES2, PBKDF2, AES-256-CBC, Iteration 2048, PRF hmacWithSHA256
        """,
        p=password,
    )
    return text, (password,)


@_shape("zip-encrypt-capital-p-quoted-password")
def _zip_p(rng: random.Random) -> Built:
    password = _human(rng, marks="!?#")
    text = _fill(
        """
        $ zip -P '‹p›' -r lohn-2026-02.zip lohn/
          adding: lohn/ (stored 0%)
          adding: lohn/abrechnung_2026_02.pdf (deflated 11%)
          adding: lohn/sv-meldungen.csv (deflated 64%)
        $ ls -l lohn-2026-02.zip
        -rw-r--r-- 1 gabi staff 418233 Mar  2 10:11 lohn-2026-02.zip
        """,
        p=password,
    )
    return text, (password,)


@_shape("qpdf-decrypt-password-equals-flag")
def _qpdf(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        $ qpdf --password=‹p› --decrypt Kontoauszug_2026_02.pdf statement-unlocked.pdf
        $ qpdf --show-encryption statement-unlocked.pdf
        File is not encrypted
        """,
        p=password,
    )
    return text, (password,)


@_shape("veracrypt-text-mount-password-with-spaces")
def _veracrypt(rng: random.Random) -> Built:
    password = _passphrase(rng, 4, " ") + " " + str(rng.randint(10, 99))
    text = _fill(
        """
        $ veracrypt --text --mount ~/vault.hc /media/vault --password='‹p›' --pim=0 --keyfiles='' --protect-hidden=no
        $ veracrypt --text --list
        1: /home/oskar/vault.hc /dev/mapper/veracrypt1 /media/vault
        """,
        p=password,
    )
    return text, (password,)


@_shape("perforce-p4config-file-p4passwd")
def _p4config(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        $ cat .p4config
        P4PORT=ssl:perforce.studio-nord.example:1666
        P4USER=lgarnier
        P4CLIENT=lgarnier_ws_main
        P4PASSWD=‹p›
        P4IGNORE=.p4ignore
        $ p4 info | head -n 4
        User name: lgarnier
        Client name: lgarnier_ws_main
        Client host: ws-lgarnier
        Client root: D:\\p4\\main
        """,
        p=password,
    )
    return text, (password,)


@_shape("rsyncd-secrets-file-and-rsync-password-cron")
def _rsyncd(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    text = _fill(
        """
        root@nas:~# cat /etc/rsyncd.secrets
        nasbackup:‹p›
        root@nas:~# crontab -l -u backup | grep rsync
        15 2 * * * RSYNC_PASSWORD='‹p›' rsync -az --delete /srv/www/ rsync://nasbackup@nas.lan/www-mirror/ >> /var/log/rsync-www.log 2>&1
        """,
        p=password,
    )
    return text, (password,)


@_shape("ldappasswd-admin-bind-w-and-new-s")
def _ldappasswd(rng: random.Random) -> Built:
    admin = _strong(rng, 16, marks="!#%*+-=?@^_")
    new = _human(rng, marks="!?#.")
    text = _fill(
        """
        $ ldappasswd -H ldaps://ldap.acme-intra.net -x -D "cn=admin,dc=acme-intra,dc=net" -w '‹a›' -s '‹n›' "uid=jtanaka,ou=people,dc=acme-intra,dc=net"
        $ ldapwhoami -H ldaps://ldap.acme-intra.net -x -D "uid=jtanaka,ou=people,dc=acme-intra,dc=net" -W
        Enter LDAP Password:
        dn:uid=jtanaka,ou=people,dc=acme-intra,dc=net
        """,
        a=admin,
        n=new,
    )
    return text, (admin, new)


@_shape("macos-sysadminctl-adduser-password-flag")
def _sysadminctl(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        admin@Lobby-iMac ~ % sudo sysadminctl -addUser kiosk -fullName "Lobby Kiosk" -password '‹p›' -home /Users/kiosk
        2026-03-02 10:11:12.345 sysadminctl[4312:59321] ----------------------------
        2026-03-02 10:11:12.345 sysadminctl[4312:59321] No clear text password or interactive option was specified (adduser, change/reset password will not allow user to use FDE) !
        2026-03-02 10:11:12.346 sysadminctl[4312:59321] ----------------------------
        2026-03-02 10:11:13.102 sysadminctl[4312:59321] Creating user record…
        2026-03-02 10:11:13.411 sysadminctl[4312:59321] Assigning UID: 502 GID: 20
        2026-03-02 10:11:13.488 sysadminctl[4312:59321] Creating home directory at /Users/kiosk
        """,
        p=password,
    )
    return text, (password,)


@_shape("macos-networksetup-setairportnetwork-positional-password")
def _networksetup(rng: random.Random) -> Built:
    password = _passphrase(rng, 3, "-") + "-" + str(rng.randint(100, 999))
    text = _fill(
        """
        admin@Studio-Mini ~ % networksetup -listallhardwareports | grep -A1 Wi-Fi
        Hardware Port: Wi-Fi
        Device: en1
        admin@Studio-Mini ~ % networksetup -setairportnetwork en1 "Atelier-5G" '‹p›'
        admin@Studio-Mini ~ % networksetup -getairportnetwork en1
        Current Wi-Fi Network: Atelier-5G
        """,
        p=password,
    )
    return text, (password,)


@_shape("psexec-remote-user-p-flag-output")
def _psexec(rng: random.Random) -> Built:
    password = _strong(rng, 15, marks="!#$%*+-=?@_~")
    text = _fill(
        """
        C:\\Tools\\Sysinternals> PsExec64.exe \\\\SRV-APP02 -u CORP\\svc_deploy -p ‹p› -h cmd /c "C:\\deploy\\install.cmd /quiet"

        PsExec v2.43 - Execute processes remotely
        Copyright (C) 2001-2023 Mark Russinovich
        Sysinternals - www.sysinternals.com

        Installing build 2026.3.2.114 ... done
        cmd exited on SRV-APP02 with error code 0.
        """,
        p=password,
    )
    return text, (password,)


@_shape("sc-exe-config-service-obj-password")
def _sc_config(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#$%*+-=?@_~")
    text = _fill(
        """
        C:\\Windows\\system32>sc.exe config "AcmeSyncAgent" obj= "CORP\\svc_sync" password= "‹p›"
        [SC] ChangeServiceConfig SUCCESS

        C:\\Windows\\system32>sc.exe qc AcmeSyncAgent
        [SC] QueryServiceConfig SUCCESS

        SERVICE_NAME: AcmeSyncAgent
                TYPE               : 10  WIN32_OWN_PROCESS
                START_TYPE         : 2   AUTO_START
                BINARY_PATH_NAME   : "C:\\Program Files\\Acme\\Sync\\AcmeSync.exe" --service
                SERVICE_START_NAME : CORP\\svc_sync
        """,
        p=password,
    )
    return text, (password,)


@_shape("iis-appcmd-set-apppool-processmodel-password")
def _appcmd(rng: random.Random) -> Built:
    password = _strong(rng, 17, marks="!#$%*+-=?@_~")
    text = _fill(
        """
        C:\\>%windir%\\system32\\inetsrv\\appcmd.exe set apppool /apppool.name:"IntranetPool" /processModel.identityType:SpecificUser /processModel.userName:CORP\\svc_iis /processModel.password:‹p›
        APPPOOL object "IntranetPool" changed

        C:\\>%windir%\\system32\\inetsrv\\appcmd.exe recycle apppool /apppool.name:"IntranetPool"
        "IntranetPool" successfully recycled
        """,
        p=password,
    )
    return text, (password,)


@_shape("openconnect-echo-pipe-passwd-on-stdin")
def _openconnect(rng: random.Random) -> Built:
    password = _human(rng, marks="!#.")
    text = _fill(
        """
        $ echo '‹p›' | sudo openconnect --protocol=gp gp.acme-corp.example -u mlindqvist --passwd-on-stdin --background
        POST https://gp.acme-corp.example/global-protect/prelogin.esp?tmp=tmp&clientVer=4100&clientos=Linux
        Connected to ‹ip›:443
        SSL negotiation with gp.acme-corp.example
        Connected to HTTPS on gp.acme-corp.example with ciphersuite (TLS1.3)-(ECDHE-SECP256R1)-(RSA-PSS-RSAE-SHA256)-(AES-256-GCM)
        Enter login credentials
        POST https://gp.acme-corp.example/global-protect/getconfig.esp
        Tunnel timeout (rekey interval) is 180 minutes.
        Connected as 10.250.14.77, using SSL, with ESP in progress
        Continuing in background; pid 48213
        """,
        p=password,
        ip=f"203.0.113.{rng.randint(2, 250)}",
    )
    return text, (password,)


@_shape("pass-show-entry-first-line-password")
def _pass_show(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#$%&*+-=?@^_~()[]{}<>,.;:")
    text = _fill(
        """
        $ pass show infra/opnsense/fw01
        ‹p›
        login: root
        url: https://fw01.mgmt.acme-intra.net
        note: console on ttyS0 115200
        """,
        p=password,
    )
    return text, (password,)


@_shape("lastpass-cli-lpass-show-password-field")
def _lpass_show(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#$%^&*")
    text = _fill(
        """
        $ lpass show "Shared-IT/Printer admin"
        Shared-IT/Printer admin [id: ‹id›]
        Username: admin
        Password: ‹p›
        URL: https://10.20.1.40
        Notes: Kyocera TASKalfa, 2nd floor, next to the kitchen
        """,
        id=_digits(rng, 19),
        p=password,
    )
    return text, (password,)


@_shape("chamber-read-table-easypost-api-key")
def _chamber_read(rng: random.Random) -> Built:
    key = "EZAK" + _hexs(rng, 54)
    text = _fill(
        """
        $ chamber read shipping easypost_api_key
        Key                     Value                                                               Version         LastModified    User
        easypost_api_key        ‹k›      3               02-11 09:14:02  arn:aws:sts::‹acct›:assumed-role/platform-admin/rhea
        """,
        k=key,
        acct=_digits(rng, 12),
    )
    return text, (key,)


@_shape("aws-secretsmanager-get-secret-value-escaped-secretstring")
def _secretsmanager(rng: random.Random) -> Built:
    password = _strong(rng, 32, marks="!#$%&()*+,-.:;<=>?[]^_`{|}~")
    secret_string = json.dumps(
        {
            "username": "orders_app",
            "password": password,
            "engine": "postgres",
            "host": "orders-prod.cluster-c8xk2mv4s1pq.eu-west-1.rds.amazonaws.com",
            "port": 5432,
            "dbname": "orders",
        },
        separators=(",", ":"),
    )
    acct = _digits(rng, 12)
    out = {
        "ARN": f"arn:aws:secretsmanager:eu-west-1:{acct}:secret:prod/orders/db-{_alnum(rng, 6)}",
        "Name": "prod/orders/db",
        "VersionId": _guid(rng),
        "SecretString": secret_string,
        "VersionStages": ["AWSCURRENT"],
        "CreatedDate": f"{_date(rng)}T{_time(rng)}.118000+00:00",
    }
    text = (
        "$ aws secretsmanager get-secret-value --secret-id prod/orders/db\n"
        + json.dumps(out, indent=4)
        + "\n"
    )
    return text, (password,)


@_shape("aws-ssm-get-parameter-with-decryption-stytch-secret")
def _ssm_parameter(rng: random.Random) -> Built:
    secret = "secret-live-" + _b64u(rng, 27)
    acct = _digits(rng, 12)
    out = {
        "Parameter": {
            "Name": "/auth/stytch/secret",
            "Type": "SecureString",
            "Value": secret,
            "Version": 4,
            "LastModifiedDate": f"{_date(rng)}T{_time(rng)}.412000+01:00",
            "ARN": f"arn:aws:ssm:eu-central-1:{acct}:parameter/auth/stytch/secret",
            "DataType": "text",
        }
    }
    text = (
        "$ aws ssm get-parameter --name /auth/stytch/secret --with-decryption\n"
        + json.dumps(out, indent=4)
        + "\n"
    )
    return text, (secret,)


@_shape("az-keyvault-secret-show-json-value-beside-version-id")
def _az_keyvault(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    version = _hexs(rng, 32)
    out = {
        "attributes": {
            "created": f"{_date(rng)}T{_time(rng)}+00:00",
            "enabled": True,
            "expires": None,
            "notBefore": None,
            "recoverableDays": 90,
            "recoveryLevel": "Recoverable+Purgeable",
            "updated": f"{_date(rng)}T{_time(rng)}+00:00",
        },
        "contentType": None,
        "id": f"https://kv-chat-prod.vault.azure.net/secrets/sendbird-master-api-token/{version}",
        "kid": None,
        "managed": None,
        "name": "sendbird-master-api-token",
        "tags": {"owner": "chat-platform"},
        "value": token,
    }
    text = (
        "$ az keyvault secret show --vault-name kv-chat-prod --name sendbird-master-api-token\n"
        + json.dumps(out, indent=2)
        + "\n"
    )
    return text, (token,)


@_shape("gcloud-secrets-versions-access-raw-statsig-secret")
def _gcloud_secret_access(rng: random.Random) -> Built:
    secret = "secret-" + _alnum(rng, 43)
    text = _fill(
        """
        $ gcloud secrets versions list statsig-server-secret --project=feature-flags-prod
        NAME  STATE    CREATED              DESTROYED
        2     enabled  2026-02-11T09:14:02  -
        1     disabled 2025-10-02T16:40:51  -
        $ gcloud secrets versions access latest --secret=statsig-server-secret --project=feature-flags-prod
        ‹s›
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("gcloud-sql-users-set-password-flag")
def _gcloud_sql_password(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="-_.!*+=")
    text = _fill(
        """
        $ gcloud sql users set-password reporting --instance=analytics-pg-16 --password='‹p›'
        Updating Cloud SQL user...done.
        $ gcloud sql users list --instance=analytics-pg-16
        NAME       HOST  TYPE      PASSWORD_POLICY
        postgres         BUILT_IN
        reporting        BUILT_IN
        """,
        p=password,
    )
    return text, (password,)


@_shape("aws-ecr-get-login-password-printed-token")
def _ecr_token(rng: random.Random) -> Built:
    payload = {
        "payload": _b64s(rng, 420),
        "datakey": _b64s(rng, 180),
        "version": "2",
        "type": "DATA_KEY",
        "expiration": _epoch(rng),
    }
    token = base64.b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode()
    text = _fill(
        """
        $ aws ecr get-login-password --region eu-central-1
        ‹t›
        $ aws ecr get-login-password --region eu-central-1 | docker login --username AWS --password-stdin ‹acct›.dkr.ecr.eu-central-1.amazonaws.com
        Login Succeeded
        """,
        t=token,
        acct=_digits(rng, 12),
    )
    return text, (token,)


@_shape("huawei-koocli-hcloud-configure-set-cli-secret-key")
def _koocli(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    text = _fill(
        """
        PS C:\\> hcloud configure set --cli-profile=default --cli-mode=AKSK --cli-region=ap-southeast-3 --cli-access-key=‹a› --cli-secret-key=‹s›
        Saved successfully
        PS C:\\> hcloud ECS ListServersDetails --cli-region=ap-southeast-3 --limit=1 --cli-query="servers[0].name"
        "erp-app-01"
        """,
        a=_upper_alnum(rng, 20),
        s=secret,
    )
    return text, (secret,)


@_shape("qiniu-qshell-account-positional-ak-sk")
def _qshell(rng: random.Random) -> Built:
    secret = _pick(rng, _URL_ALPHABET, 40)
    access = _pick(rng, _URL_ALPHABET, 40)
    text = _fill(
        """
        $ qshell account ‹a› ‹s› ops-admin
        $ qshell user ls
        Name: ops-admin
        AccessKey: ‹a›
        SecretKey: ****************************************
        $ qshell listbucket2 media-cdn --prefix 2026/03/ | head -n 2
        2026/03/banner-spring.webp	48211	FhqkL0mx4wM3YhSEs8cCEq9HrnIS	17407211019918262	image/webp	0
        2026/03/banner-spring@2x.webp	131402	Fn7l9xOQeSCv1fAnRs8m3b0WqkTZ	17407211021433510	image/webp	0
        """,
        a=access,
        s=secret,
    )
    return text, (secret,)


@_shape("baidu-qianfan-bce-v3-api-key-export")
def _qianfan(rng: random.Random) -> Built:
    key = f"bce-v3/ALTAK-{_alnum(rng, 21)}/{_hexs(rng, 40)}"
    text = _fill(
        """
        $ export QIANFAN_API_KEY="‹k›"
        $ python chat_ernie.py --model ernie-4.5-turbo-128k --prompt "用三句话总结这份合同"
        [INFO] [03-02 10:11:12] oauth.py:228 [t:140229] trying to refresh access_token for ak `ALTAK-***`
        [INFO] [03-02 10:11:13] base.py:91 [t:140229] requesting llm api endpoint: /chat/completions
        """,
        k=key,
    )
    return text, (key,)


@_shape("openshift-oc-login-token-sha256-tilde")
def _oc_login(rng: random.Random) -> Built:
    token = "sha256~" + _b64u(rng, 32)
    text = _fill(
        """
        $ oc login --token=‹t› --server=https://api.ocp-prod.acme-intra.net:6443
        Logged into "https://api.ocp-prod.acme-intra.net:6443" as "kbalogun" using the token provided.

        You have access to 61 projects, the list has been suppressed. You can list all projects with 'oc projects'

        Using project "payments".
        """,
        t=token,
    )
    return text, (token,)


@_shape("usql-sqlserver-url-sa-password")
def _usql(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="-_.~!*")
    text = _fill(
        """
        $ usql 'sqlserver://sa:‹p›@localhost:1433/master?encrypt=disable'
        Connected with driver sqlserver (Microsoft SQL Server 16.0.4135.4, RTM, Developer Edition (64-bit))
        Type "help" for help.

        ms:sa@localhost/master=> select name from sys.databases;
           name
        ----------
          master
          tempdb
          model
          msdb
          Inventory
        (5 rows)
        """,
        p=password,
    )
    return text, (password,)


@_shape("sqlcipher-shell-pragma-key-passphrase")
def _sqlcipher(rng: random.Random) -> Built:
    passphrase = _passphrase(rng, 5, " ")
    text = _fill(
        """
        $ sqlcipher ~/Library/Application\\ Support/Ledgerly/ledger.db
        SQLite version 3.46.1 2024-08-13 09:16:08 (SQLCipher 4.6.1 community)
        Enter ".help" for usage hints.
        sqlite> PRAGMA key = '‹p›';
        ok
        sqlite> SELECT count(*) FROM transactions;
        18214
        """,
        p=passphrase,
    )
    return text, (passphrase,)


@_shape("zookeeper-zkcli-addauth-digest-user-password")
def _zkcli(rng: random.Random) -> Built:
    password = _alnum(rng, 14)
    digest = _b64s(rng, 20)
    text = _fill(
        """
        [zk: zk-1.internal:2181(CONNECTED) 0] addauth digest ops-admin:‹p›
        [zk: zk-1.internal:2181(CONNECTED) 1] getAcl /kafka/config
        'digest,'ops-admin:‹d›
        : cdrwa
        'world,'anyone
        : r
        [zk: zk-1.internal:2181(CONNECTED) 2] ls /kafka/config
        [brokers, changes, clients, topics, users]
        """,
        p=password,
        d=digest,
    )
    return text, (password,)


@_shape("redpanda-rpk-yaml-profile-sasl-password")
def _rpk_yaml(rng: random.Random) -> Built:
    password = _strong(rng, 24, marks="-_.!+=")
    text = _fill(
        """
        $ cat ~/.config/rpk/rpk.yaml
        version: 7
        globals:
            prompt: ""
            no_default_cluster: false
        current_profile: prod
        current_cloud_auth_org_id: ""
        current_cloud_auth_kind: ""
        profiles:
            - name: prod
              description: on-prem cluster in fra1
              prompt: hi-red, "[%n]"
              from_cloud: false
              kafka_api:
                brokers:
                    - seed-0.redpanda.acme-intra.net:9092
                    - seed-1.redpanda.acme-intra.net:9092
                tls: {}
                sasl:
                    user: ingest-svc
                    password: ‹p›
                    mechanism: SCRAM-SHA-512
              admin_api:
                addresses:
                    - seed-0.redpanda.acme-intra.net:9644
        """,
        p=password,
    )
    return text, (password,)


@_shape("temporal-cli-workflow-list-api-key-jwt")
def _temporal_cli(rng: random.Random) -> Built:
    account = _lower_alnum(rng, 5)
    token = _jwt(
        rng,
        {"alg": "ES256", "kid": _alnum(rng, 8)},
        {
            "account_id": account,
            "aud": ["temporal.io"],
            "exp": _epoch(rng),
            "iss": "temporal.io",
            "jti": _alnum(rng, 32),
            "key_id": _alnum(rng, 32),
            "sub": _hexs(rng, 32),
        },
        64,
    )
    text = _fill(
        """
        $ temporal workflow list --address payments.‹a›.tmprl.cloud:7233 --namespace payments.‹a› --api-key ‹t› --limit 3
          Status   WorkflowId                      Type                   StartTime
          Running  invoice-run-2026-03-02          InvoiceRunWorkflow     2 minutes ago
          Completed  refund-88172                  RefundWorkflow         14 minutes ago
          Completed  refund-88169                  RefundWorkflow         31 minutes ago
        """,
        a=account,
        t=token,
    )
    return text, (token,)


@_shape("nektos-act-secret-flag-surge-token-masked-later")
def _act_secret(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        $ act -j deploy-preview -s SURGE_TOKEN=‹t›
        INFO[0000] Using docker host 'unix:///var/run/docker.sock', and daemon socket 'unix:///var/run/docker.sock'
        [Preview/deploy-preview] ⭐ Run Set up job
        [Preview/deploy-preview] 🚀  Start image=catthehacker/ubuntu:act-latest
        [Preview/deploy-preview] ⭐ Run Main npx surge ./dist pr-412.acme-docs.surge.sh
        [Preview/deploy-preview]   🐳  docker exec cmd=[bash -e /var/run/act/workflow/2] user= workdir=
        | env SURGE_TOKEN=***
        |    Running as deploy@acme-docs.example (Student)
        |    Success! - Published to pr-412.acme-docs.surge.sh
        [Preview/deploy-preview]   ✅  Success - Main npx surge ./dist pr-412.acme-docs.surge.sh
        """,
        t=token,
    )
    return text, (token,)


@_shape("kaggle-json-cat-username-and-key")
def _kaggle_json(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        (kaggle) noor@gpu-box:~$ cat ~/.kaggle/kaggle.json
        {"username":"noorhalabi","key":"‹k›"}
        (kaggle) noor@gpu-box:~$ kaggle competitions download -c playground-series-s6e3
        Downloading playground-series-s6e3.zip to /home/noor
        100%|██████████████████████████████████████| 9.41M/9.41M [00:01<00:00, 7.02MB/s]
        """,
        k=key,
    )
    return text, (key,)


@_shape("jupyter-env-magic-neptune-api-token-base64-json")
def _neptune_env(rng: random.Random) -> Built:
    inner = {
        "api_address": "https://app.neptune.ai",
        "api_url": "https://app.neptune.ai",
        "api_key": _guid(rng),
    }
    token = base64.b64encode(json.dumps(inner, separators=(",", ":")).encode()).decode()
    text = _fill(
        """
        In [3]: %env NEPTUNE_API_TOKEN=‹t›
        env: NEPTUNE_API_TOKEN=‹t›

        In [4]: run = neptune.init_run(project="vision-lab/defect-seg", tags=["unet", "fold-2"])
        [neptune] [info   ] Neptune initialized. Open in the app: https://app.neptune.ai/vision-lab/defect-seg/e/DEF-412
        """,
        t=token,
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# CI systems the earlier parts do not use
# --------------------------------------------------------------------------------------------------------


@_shape("woodpecker-yml-plugin-settings-literal-registry-password")
def _woodpecker(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#$%*+-=?@^_~")
    text = _fill(
        """
        # .woodpecker/publish.yaml
        when:
          - event: tag

        steps:
          - name: test
            image: golang:1.23
            commands:
              - go test ./...

          - name: publish
            image: woodpeckerci/plugin-docker-buildx
            settings:
              registry: cr.acme-intra.net
              repo: cr.acme-intra.net/tools/ledgerd
              tags: ${CI_COMMIT_TAG}
              username: robot-ci
              password: "‹p›"
        """,
        p=password,
    )
    return text, (password,)


@_shape("semaphore-ci-yml-env-vars-rootly-token")
def _semaphore(rng: random.Random) -> Built:
    token = "rootly_" + _hexs(rng, 64)
    text = _fill(
        """
        version: v1.0
        name: Deploy
        agent:
          machine:
            type: e1-standard-2
            os_image: ubuntu2204
        blocks:
          - name: Release
            task:
              env_vars:
                - name: ROOTLY_API_TOKEN
                  value: ‹t›
                - name: SERVICE
                  value: checkout-api
              jobs:
                - name: mark deploy
                  commands:
                    - checkout
                    - ./scripts/rootly-deploy-event.sh "$SEMAPHORE_GIT_SHA"
        """,
        t=token,
    )
    return text, (token,)


@_shape("codemagic-yaml-environment-vars-expo-token")
def _codemagic(rng: random.Random) -> Built:
    token = _pick(rng, _URL_ALPHABET, 40)
    text = _fill(
        """
        workflows:
          expo-android:
            name: Expo Android release
            max_build_duration: 60
            environment:
              vars:
                EXPO_TOKEN: ‹t›
                NODE_ENV: production
              node: 20.11.1
            scripts:
              - name: Install
                script: npm ci
              - name: Build on EAS
                script: npx eas-cli build --platform android --profile production --non-interactive
        """,
        t=token,
    )
    return text, (token,)


@_shape("bitrise-yml-app-envs-fastlane-password")
def _bitrise(rng: random.Random) -> Built:
    password = _human(rng, marks="!#?")
    text = _fill(
        """
        format_version: "13"
        default_step_lib_source: https://github.com/bitrise-io/bitrise-steplib.git
        project_type: ios
        app:
          envs:
          - BITRISE_PROJECT_PATH: ios/Runner.xcworkspace
          - BITRISE_SCHEME: Runner
          - FASTLANE_USER: release@acme-apps.example
          - FASTLANE_PASSWORD: "‹p›"
        workflows:
          deploy:
            steps:
            - git-clone@8: {}
            - fastlane@3:
                inputs:
                - lane: ios beta
        """,
        p=password,
    )
    return text, (password,)


@_shape("appveyor-yml-plain-coveralls-token-beside-secure-blob")
def _appveyor(rng: random.Random) -> Built:
    token = _alnum(rng, 32)
    text = _fill(
        """
        version: 1.4.{build}
        image: Visual Studio 2022
        environment:
          NUGET_API_KEY:
            secure: ‹sec›
          COVERALLS_REPO_TOKEN: ‹t›
        build_script:
          - dotnet build -c Release
        test_script:
          - dotnet test -c Release /p:CollectCoverage=true /p:CoverletOutputFormat=opencover
          - dotnet tool run csmacnz.Coveralls --opencover -i tests/coverage.opencover.xml
        """,
        sec=_b64s(rng, 48),
        t=token,
    )
    return text, (token,)


@_shape("aws-codebuild-buildspec-plaintext-variable-beside-parameter-store")
def _codebuild(rng: random.Random) -> Built:
    password = _human(rng, marks="!#.")
    text = _fill(
        """
        version: 0.2
        env:
          variables:
            DJANGO_SETTINGS_MODULE: config.settings.ci
            TEST_DB_USER: ci
            TEST_DB_PASSWORD: "‹p›"
          parameter-store:
            SENTRY_AUTH_TOKEN: /ci/sentry/auth-token
        phases:
          install:
            runtime-versions:
              python: 3.12
          build:
            commands:
              - pip install -r requirements/ci.txt
              - pytest -q
        """,
        p=password,
    )
    return text, (password,)


@_shape("google-cloud-build-yaml-substitutions-directus-token")
def _cloudbuild(rng: random.Random) -> Built:
    token = _pick(rng, _URL_ALPHABET, 32)
    text = _fill(
        """
        steps:
          - name: node:20
            entrypoint: npm
            args: ["ci"]
          - name: node:20
            entrypoint: npm
            args: ["run", "build"]
            env:
              - DIRECTUS_URL=https://cms.weingut-example.at
              - DIRECTUS_STATIC_TOKEN=${_DIRECTUS_STATIC_TOKEN}
          - name: gcr.io/google.com/cloudsdktool/cloud-sdk
            args: ["gsutil", "-m", "rsync", "-r", "-d", "dist", "gs://www-weingut-example"]
        substitutions:
          _DIRECTUS_STATIC_TOKEN: '‹t›'
        options:
          logging: CLOUD_LOGGING_ONLY
        """,
        t=token,
    )
    return text, (token,)


@_shape("gocd-cruise-config-xml-plain-variable-beside-encrypted")
def _gocd_config(rng: random.Random) -> Built:
    password = _human(rng, marks="!#?")
    text = _fill(
        """
        <pipeline name="deploy-billing" group="payments">
          <environmentvariables>
            <variable name="HELM_RELEASE">
              <value>billing</value>
            </variable>
            <variable name="ARTIFACT_STORE_PASSWORD">
              <value>‹p›</value>
            </variable>
            <variable name="REGISTRY_PASSWORD" secure="true">
              <encryptedValue>AES:‹iv›:‹ct›</encryptedValue>
            </variable>
          </environmentvariables>
          <materials>
            <git url="https://git.acme-intra.net/payments/billing.git" branch="main" />
          </materials>
        </pipeline>
        """,
        p=password,
        iv=_b64s(rng, 16),
        ct=_b64s(rng, 32),
    )
    return text, (password,)


@_shape("gocd-agent-autoregister-properties-uuid-key")
def _gocd_autoregister(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        $ cat /var/lib/go-agent/config/autoregister.properties
        agent.auto.register.key=‹k›
        agent.auto.register.resources=linux,docker
        agent.auto.register.environments=staging
        agent.auto.register.hostname=gocd-agent-07
        """,
        k=key,
    )
    return text, (key,)


@_shape("cirrus-ci-yml-plain-cachix-jwt-beside-encrypted")
def _cirrus(rng: random.Random) -> Built:
    token = _jwt(
        rng,
        {"alg": "HS256"},
        {"jti": _guid(rng), "scopes": "cache", "sub": _digits(rng, 5), "ver": 1},
    )
    text = _fill(
        """
        env:
          CIRRUS_CLONE_DEPTH: 1
          CODECOV_TOKEN: ENCRYPTED[‹enc›]
          CACHIX_AUTH_TOKEN: ‹t›

        nix_task:
          container:
            image: nixos/nix:2.24.10
          build_script:
            - nix-env -iA cachix -f https://cachix.org/api/v1/install
            - cachix use acme-tools
            - nix build .#default --print-build-logs | cachix push acme-tools
        """,
        enc=_hexs(rng, 96),
        t=token,
    )
    return text, (token,)


@_shape("bamboo-build-log-unmasked-creds-variable")
def _bamboo(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%*+-=?@_")
    text = _fill(
        """
        simple	02-Mar-2026 10:14:01	Build ACME-WEB-DEPLOY-214 started building on agent bamboo-agent-03
        build	02-Mar-2026 10:14:02	Substituting variable: ${bamboo.deploy.password} with ********
        build	02-Mar-2026 10:14:02	Substituting variable: ${bamboo.sftp.creds} with ‹p›
        build	02-Mar-2026 10:14:02	Substituting variable: ${bamboo.buildNumber} with 214
        build	02-Mar-2026 10:14:04	sftp> put -r dist/* /var/www/shop/
        simple	02-Mar-2026 10:14:19	Finished task 'Upload to web01' with result: Success
        """,
        p=password,
    )
    return text, (password,)


@_shape("earthly-secret-flag-hex-pm-api-key")
def _earthly(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        $ earthly --secret HEX_API_KEY=‹k› +publish
         Init 🚀
        ————————————————————————————————————————————————————————————————————————————————
                   buildkitd | Found buildkit daemon as docker container (earthly-buildkitd)
        +publish | --> RUN --secret HEX_API_KEY mix hex.publish --yes
        +publish | Building tidewater 0.9.2
        +publish | Publishing package to public repository hexpm.
        +publish | Package published to https://hex.pm/packages/tidewater/0.9.2
        """,
        k=key,
    )
    return text, (key,)


@_shape("forgejo-runner-register-no-interactive-token-flag")
def _forgejo_runner(rng: random.Random) -> Built:
    token = _alnum(rng, 40)
    text = _fill(
        """
        $ forgejo-runner register --no-interactive --instance https://git.acme-intra.net --token ‹t› --name build-02 --labels docker:docker://node:20-bookworm
        INFO Registering runner, arch=amd64, os=linux, version=v6.3.1.
        WARN Runner in user-mode.
        DEBU Successfully pinged the Forgejo instance server
        INFO Runner registered successfully.
        """,
        t=token,
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Service managers, mail and chat clients, game and home servers
# --------------------------------------------------------------------------------------------------------


@_shape("launchd-plist-environmentvariables-immich-api-key")
def _launchd_plist(rng: random.Random) -> Built:
    key = _alnum(rng, 43)
    text = _fill(
        """
        $ cat ~/Library/LaunchAgents/net.fotobox.immich-upload.plist
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
            <key>Label</key>
            <string>net.fotobox.immich-upload</string>
            <key>ProgramArguments</key>
            <array>
                <string>/opt/homebrew/bin/immich</string>
                <string>upload</string>
                <string>--recursive</string>
                <string>/Users/ayla/Pictures/Export</string>
            </array>
            <key>EnvironmentVariables</key>
            <dict>
                <key>IMMICH_INSTANCE_URL</key>
                <string>https://photos.fotobox-example.net/api</string>
                <key>IMMICH_API_KEY</key>
                <string>‹k›</string>
            </dict>
            <key>StartInterval</key>
            <integer>3600</integer>
        </dict>
        </plist>
        """,
        k=key,
    )
    return text, (key,)


@_shape("supervisord-conf-environment-line-amqp-url-password")
def _supervisord(rng: random.Random) -> Built:
    password = _alnum(rng, 20)
    text = _fill(
        """
        [program:celery-worker]
        command=/srv/orders/.venv/bin/celery -A orders worker -l info -Q default,emails
        directory=/srv/orders
        user=orders
        autostart=true
        autorestart=true
        stopwaitsecs=600
        environment=DJANGO_SETTINGS_MODULE="orders.settings.production",CELERY_BROKER_URL="amqp://orders:‹p›@mq.internal:5672/orders"
        stdout_logfile=/var/log/supervisor/celery-worker.log
        redirect_stderr=true
        """,
        p=password,
    )
    return text, (password,)


@_shape("pm2-ecosystem-config-js-env-production-strapi-secrets")
def _pm2_ecosystem(rng: random.Random) -> Built:
    jwt_secret = _b64s(rng, 16)
    salt = _b64s(rng, 16)
    text = _fill(
        """
        module.exports = {
          apps: [
            {
              name: 'cms',
              cwd: '/srv/cms',
              script: 'npm',
              args: 'start',
              env_production: {
                NODE_ENV: 'production',
                HOST: '127.0.0.1',
                PORT: 1337,
                ADMIN_JWT_SECRET: '‹j›',
                API_TOKEN_SALT: '‹s›',
                DATABASE_CLIENT: 'postgres',
                DATABASE_HOST: 'localhost',
              },
            },
          ],
        };
        """,
        j=jwt_secret,
        s=salt,
    )
    return text, (jwt_secret, salt)


@_shape("aerc-accounts-conf-source-url-userinfo-password")
def _aerc(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="-_.~!*")
    text = _fill(
        """
        [Work]
        source        = imaps://lea%40kanzlei-example.de:‹p›@imap.migadu.com
        outgoing      = smtps://lea%40kanzlei-example.de@smtp.migadu.com
        outgoing-cred-cmd = pass show mail/migadu
        default       = INBOX
        from          = Lea Brandt <lea@kanzlei-example.de>
        copy-to       = Sent
        """,
        p=password,
    )
    return text, (password,)


@_shape("mbsyncrc-imapaccount-pass-fastmail-app-password")
def _mbsyncrc(rng: random.Random) -> Built:
    password = _lower_alnum(rng, 16)
    text = _fill(
        """
        IMAPAccount fastmail
        Host imap.fastmail.com
        Port 993
        User noor@fastmail.example
        Pass ‹p›
        TLSType IMAPS
        CertificateFile /etc/ssl/certs/ca-certificates.crt

        IMAPStore fastmail-remote
        Account fastmail

        MaildirStore fastmail-local
        Path ~/Mail/fastmail/
        Inbox ~/Mail/fastmail/INBOX
        SubFolders Verbatim

        Channel fastmail
        Far :fastmail-remote:
        Near :fastmail-local:
        Patterns *
        Create Both
        SyncState *
        """,
        p=password,
    )
    return text, (password,)


@_shape("nullmailer-remotes-smtp2go-user-pass-flags")
def _nullmailer(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    text = _fill(
        """
        root@pve:~# cat /etc/nullmailer/remotes
        mail.smtp2go.com smtp --port=2525 --starttls --user=pve-alerts --pass=‹p›
        root@pve:~# echo "test" | mail -s "nullmailer test" ops@acme-example.com && tail -n 2 /var/log/mail.log
        Mar  2 10:11:12 pve nullmailer[2211]: Starting delivery: host: mail.smtp2go.com protocol: smtp files: 1
        Mar  2 10:11:13 pve nullmailer[2211]: Sent file.
        """,
        p=password,
    )
    return text, (password,)


@_shape("irssi-config-chatnets-sasl-password")
def _irssi(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#$%*+-=?@_~")
    text = _fill(
        """
        chatnets = {
          liberachat = {
            type = "IRC";
            sasl_mechanism = "PLAIN";
            sasl_username = "kestrel";
            sasl_password = "‹p›";
          };
        };

        servers = (
          {
            address = "irc.libera.chat";
            chatnet = "liberachat";
            port = "6697";
            use_tls = "yes";
            tls_verify = "yes";
            autoconnect = "yes";
          }
        );
        """,
        p=password,
    )
    return text, (password,)


@_shape("teamspeak3-first-start-log-serveradmin-password-and-privilege-token")
def _teamspeak(rng: random.Random) -> Built:
    password = _alnum(rng, 8)
    token = _pick(rng, _LETTERS_DIGITS + "+", 40)
    text = _fill(
        """
        $ docker logs teamspeak 2>&1 | head -n 22
        2026-03-02 10:11:12.481004|INFO    |ServerLibPriv |   |TeamSpeak 3 Server 3.13.7 (2022-06-20 12:21:53)
        2026-03-02 10:11:12.481163|INFO    |ServerLibPriv |   |SystemInformation: Linux 6.8.0-52-generic #53-Ubuntu SMP x86_64 Binary: 64bit
        2026-03-02 10:11:12.524921|INFO    |DatabaseQuery |   |dbPlugin name:    SQLite3 plugin, Version 3, (c)TeamSpeak Systems GmbH

        ------------------------------------------------------------------
                              I M P O R T A N T
        ------------------------------------------------------------------
                       Server Query Admin Account created
                 loginname= "serveradmin", password= "‹p›"
        ------------------------------------------------------------------

        2026-03-02 10:11:13.118341|INFO    |VirtualServer |1  |listening on 0.0.0.0:9987, [::]:9987

        ------------------------------------------------------------------
                              I M P O R T A N T
        ------------------------------------------------------------------
              ServerAdmin privilege key created, please use it to gain
              serveradmin rights for your virtualserver. please
              also check the doc/privilegekey_guide.txt for details.

               token=‹t›
        ------------------------------------------------------------------
        """,
        p=password,
        t=token,
    )
    return text, (password, token)


@_shape("cs2-server-cfg-rcon-and-sv-password-quoted")
def _cs2_cfg(rng: random.Random) -> Built:
    rcon = _strong(rng, 16, marks="!#$%*+-=?@_~")
    join = _brief(rng)
    text = _fill(
        """
        // game/csgo/cfg/server.cfg
        hostname "ACME LAN Night #7"
        sv_password "‹j›"
        rcon_password "‹r›"
        sv_lan 0
        sv_cheats 0
        mp_autoteambalance 1
        mp_limitteams 1
        tv_enable 1
        exec banned_user.cfg
        """,
        j=join,
        r=rcon,
    )
    return text, (join, rcon)


@_shape("palworld-settings-ini-option-settings-admin-password")
def _palworld(rng: random.Random) -> Built:
    password = _alnum(rng, 14)
    text = _fill(
        """
        [/Script/Pal.PalGameWorldSettings]
        OptionSettings=(Difficulty=None,DayTimeSpeedRate=1.000000,NightTimeSpeedRate=1.000000,ExpRate=1.500000,PalCaptureRate=1.000000,PalSpawnNumRate=1.000000,bEnableInvaderEnemy=True,DeathPenalty=Item,bEnableFastTravel=True,ServerPlayerMaxNum=16,ServerName="Pals of the Fjord",ServerDescription="Friends only",AdminPassword="‹p›",ServerPassword="",PublicPort=8211,PublicIP="",RCONEnabled=True,RCONPort=25575,Region="",bUseAuth=True,BanListURL="https://api.palworldgame.com/api/banlist.txt",RESTAPIEnabled=False,RESTAPIPort=8212)
        """,
        p=password,
    )
    return text, (password,)


@_shape("deluge-auth-file-localclient-hex")
def _deluge_auth(rng: random.Random) -> Built:
    secret = _hexs(rng, 40)
    text = _fill(
        """
        debian-deluged@seedbox:~$ cat ~/.config/deluge/auth
        localclient:‹s›:10
        debian-deluged@seedbox:~$ deluge-console "connect 127.0.0.1:58846 localclient ‹s›; info -s downloading"
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("plex-preferences-xml-online-token-attribute")
def _plex_prefs(rng: random.Random) -> Built:
    token = _pick(rng, _URL_ALPHABET, 20)
    text = _fill(
        """
        $ cat "/var/lib/plexmediaserver/Library/Application Support/Plex Media Server/Preferences.xml"
        <?xml version="1.0" encoding="utf-8"?>
        <Preferences OldestPreviousVersion="1.41.3.9314" MachineIdentifier="‹m›" ProcessedMachineIdentifier="‹pm›" AnonymousMachineIdentifier="‹am›" MetricsEpoch="1" AcceptedEULA="1" FriendlyName="nas" PublishServerOnPlexOnlineKey="1" PlexOnlineHome="1" PlexOnlineToken="‹t›" PlexOnlineUsername="jonas.berg" PlexOnlineMail="jonas.berg@mail.example" CertificateUUID="‹c›" LastAutomaticMappedPort="32400" ManualPortMappingMode="1" TranscoderTempDirectory="/transcode"/>
        """,
        m=_guid(rng),
        pm=_hexs(rng, 40),
        am=_guid(rng),
        t=token,
        c=_hexs(rng, 32),
    )
    return text, (token,)


@_shape("paperless-ngx-compose-secret-key-and-admin-password")
def _paperless(rng: random.Random) -> Built:
    secret = _strong(rng, 50, marks="!@#%^&*(-_=+)")
    password = _human(rng, marks="!?")
    text = _fill(
        """
        services:
          broker:
            image: docker.io/library/redis:7
            restart: unless-stopped
          webserver:
            image: ghcr.io/paperless-ngx/paperless-ngx:2.14
            restart: unless-stopped
            depends_on: [broker]
            ports:
              - "8000:8000"
            volumes:
              - ./data:/usr/src/paperless/data
              - ./consume:/usr/src/paperless/consume
            environment:
              PAPERLESS_REDIS: redis://broker:6379
              PAPERLESS_URL: https://docs.familie-example.de
              PAPERLESS_SECRET_KEY: "‹s›"
              PAPERLESS_ADMIN_USER: admin
              PAPERLESS_ADMIN_PASSWORD: "‹p›"
              PAPERLESS_OCR_LANGUAGE: deu+eng
              PAPERLESS_TIME_ZONE: Europe/Berlin
        """,
        s=secret,
        p=password,
    )
    return text, (secret, password)


@_shape("pterodactyl-wings-config-yml-node-token")
def _wings_config(rng: random.Random) -> Built:
    token = _alnum(rng, 64)
    text = _fill(
        """
        root@node1:~# cat /etc/pterodactyl/config.yml
        debug: false
        app_name: Pterodactyl
        uuid: ‹u›
        token_id: ‹ti›
        token: ‹t›
        api:
          host: 0.0.0.0
          port: 8080
          ssl:
            enabled: true
            cert: /etc/letsencrypt/live/node1.acme-games.example/fullchain.pem
            key: /etc/letsencrypt/live/node1.acme-games.example/privkey.pem
          upload_limit: 100
        system:
          data: /var/lib/pterodactyl/volumes
          sftp:
            bind_port: 2022
        allowed_mounts: []
        remote: 'https://panel.acme-games.example'
        """,
        u=_guid(rng),
        ti=_alnum(rng, 16),
        t=token,
    )
    return text, (token,)


@_shape("guacamole-user-mapping-xml-login-and-rdp-passwords")
def _guacamole(rng: random.Random) -> Built:
    login = _human(rng, marks="!#?")
    rdp = _strong(rng, 16, marks="!#$%*+-=?@_~")
    text = _fill(
        """
        <user-mapping>
            <authorize username="helpdesk" password="‹l›">
                <connection name="RDP - accounting-pc">
                    <protocol>rdp</protocol>
                    <param name="hostname">10.40.2.15</param>
                    <param name="port">3389</param>
                    <param name="username">ACME\\helpdesk</param>
                    <param name="password">‹r›</param>
                    <param name="ignore-cert">true</param>
                </connection>
            </authorize>
        </user-mapping>
        """,
        l=login,
        r=rdp,
    )
    return text, (login, rdp)


@_shape("lighttpd-plain-backend-userfile-cat")
def _lighttpd(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    text = _fill(
        """
        $ grep -h auth.backend /etc/lighttpd/conf-enabled/05-auth.conf
        auth.backend = "plain"
        auth.backend.plain.userfile = "/etc/lighttpd/.lighttpdpassword"
        $ sudo cat /etc/lighttpd/.lighttpdpassword
        octo:‹p›
        """,
        p=password,
    )
    return text, (password,)


@_shape("weblogic-boot-properties-plain-beside-aes256-encrypted")
def _weblogic_boot(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#$%*+-=?@_")
    text = _fill(
        """
        $ cat $DOMAIN_HOME/servers/AdminServer/security/boot.properties
        username=weblogic
        password=‹p›
        $ cat $DOMAIN_HOME/servers/ms1/security/boot.properties
        #Mon Mar 02 10:11:12 CET 2026
        password={AES256}‹e1›
        username={AES256}‹e2›
        """,
        p=password,
        e1=_b64s(rng, 48),
        e2=_b64s(rng, 32),
    )
    return text, (password,)


@_shape("glassfish-asadmin-passwordfile-old-and-new")
def _glassfish(rng: random.Random) -> Built:
    old = _brief(rng)
    new = _strong(rng, 16, marks="!#%*+-=?@_")
    text = _fill(
        """
        $ cat /tmp/gfpass
        AS_ADMIN_PASSWORD=‹o›
        AS_ADMIN_NEWPASSWORD=‹n›
        $ asadmin --user admin --passwordfile /tmp/gfpass change-admin-password
        Command change-admin-password executed successfully.
        $ asadmin --user admin --passwordfile /tmp/gfpass enable-secure-admin
        You must restart all running servers for the change in secure admin to take effect.
        Command enable-secure-admin executed successfully.
        """,
        o=old,
        n=new,
    )
    return text, (old, new)


# --------------------------------------------------------------------------------------------------------
# Web applications, CMSs, ERPs and data platforms
# --------------------------------------------------------------------------------------------------------


@_shape("roundcube-config-inc-php-des-key-and-db-dsnw")
def _roundcube(rng: random.Random) -> Built:
    password = _alnum(rng, 18)
    des_key = _strong(rng, 24, marks="-_!*.")
    text = _fill(
        """
        <?php

        $config = [];
        $config['db_dsnw'] = 'mysql://roundcube:‹p›@localhost/roundcubemail';
        $config['imap_host'] = 'ssl://mail.acme-intra.net:993';
        $config['smtp_host'] = 'tls://mail.acme-intra.net:587';
        $config['support_url'] = '';
        $config['product_name'] = 'ACME Webmail';
        $config['des_key'] = '‹d›';
        $config['plugins'] = ['archive', 'zipdownload', 'managesieve'];
        $config['skin'] = 'elastic';
        """,
        p=password,
        d=des_key,
    )
    return text, (password, des_key)


@_shape("typo3-system-settings-php-encryption-key-beside-argon-hash")
def _typo3(rng: random.Random) -> Built:
    key = _hexs(rng, 96)
    text = _fill(
        """
        <?php
        return [
            'BE' => [
                'debug' => false,
                'installToolPassword' => '$argon2i$v=19$m=65536,t=16,p=1$‹salt›$‹hash›',
                'passwordHashing' => [
                    'className' => 'TYPO3\\\\CMS\\\\Core\\\\Crypto\\\\PasswordHashing\\\\Argon2iPasswordHash',
                    'options' => [],
                ],
            ],
            // DB credentials are set in config/system/additional.php from the environment
            'SYS' => [
                'encryptionKey' => '‹k›',
                'sitename' => 'Stadtbibliothek',
                'systemMaintainers' => [1],
                'trustedHostsPattern' => '.*\\\\.stadtbibliothek-example\\\\.de',
            ],
        ];
        """,
        salt=_b64s(rng, 16).rstrip("="),
        hash=_b64s(rng, 32).rstrip("="),
        k=key,
    )
    return text, (key,)


@_shape("prestashop-parameters-php-partially-masked-forum-paste")
def _prestashop(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    cookie_key = _alnum(rng, 64)
    text = _fill(
        """
        Bonjour, après la migration vers PHP 8.1 j'ai une page blanche. Voici mon app/config/parameters.php
        (j'ai masqué les autres clés) :

        <?php return array (
          'parameters' =>
          array (
            'database_host' => '127.0.0.1',
            'database_port' => '',
            'database_name' => 'boutique',
            'database_user' => 'ps_boutique',
            'database_password' => '‹p›',
            'database_prefix' => 'ps_',
            'database_engine' => 'InnoDB',
            'mailer_transport' => 'smtp',
            'mailer_host' => '127.0.0.1',
            'mailer_user' => NULL,
            'mailer_password' => NULL,
            'secret' => '***',
            'ps_caching' => 'CacheMemcache',
            'ps_cache_enable' => false,
            'ps_creation_date' => '2021-05-17',
            'locale' => 'fr-FR',
            'cookie_key' => '‹c›',
            'cookie_iv' => '***',
            'new_cookie_key' => '***',
          ),
        );

        Merci d'avance !
        """,
        p=password,
        c=cookie_key,
    )
    return text, (password, cookie_key)


@_shape("odoo-conf-admin-passwd-and-db-password")
def _odoo_conf(rng: random.Random) -> Built:
    admin = _strong(rng, 20, marks="-_.!+=")
    db = _human(rng, marks="!#")
    text = _fill(
        """
        [options]
        addons_path = /usr/lib/python3/dist-packages/odoo/addons,/opt/odoo/custom-addons
        admin_passwd = ‹a›
        db_host = localhost
        db_port = 5432
        db_user = odoo
        db_password = ‹d›
        dbfilter = ^acme.*$
        http_port = 8069
        proxy_mode = True
        workers = 4
        limit_time_cpu = 600
        limit_time_real = 1200
        """,
        a=admin,
        d=db,
    )
    return text, (admin, db)


@_shape("erpnext-site-config-json-db-password-and-encryption-key")
def _erpnext(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    key = base64.urlsafe_b64encode(rng.randbytes(32)).decode()
    config = {
        "db_name": "_" + _hexs(rng, 16),
        "db_password": password,
        "db_type": "mariadb",
        "encryption_key": key,
        "host_name": "https://erp.textil-example.pt",
        "maintenance_mode": 0,
    }
    text = (
        "frappe@erp:~/frappe-bench$ cat sites/erp.textil-example.pt/site_config.json\n"
        + json.dumps(config, indent=1)
        + "\n"
    )
    return text, (password, key)


@_shape("matomo-config-ini-php-db-password-and-salt")
def _matomo(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-=?@_")
    salt = _hexs(rng, 32)
    text = _fill(
        """
        ; <?php exit; ?> DO NOT REMOVE THIS LINE
        ; file automatically generated or modified by Matomo; you can manually override the default values in global.ini.php by redefining them in this file.
        [database]
        host = "127.0.0.1"
        username = "matomo"
        password = "‹p›"
        dbname = "matomo"
        tables_prefix = "matomo_"
        charset = "utf8mb4"
        collation = "utf8mb4_general_ci"

        [General]
        salt = "‹s›"
        trusted_hosts[] = "stats.museum-example.org"
        enable_browser_archiving_triggering = 0
        """,
        p=password,
        s=salt,
    )
    return text, (password, salt)


@_shape("otrs-kernel-config-pm-databasepw")
def _otrs(rng: random.Random) -> Built:
    password = _alnum(rng, 14)
    text = _fill(
        """
        package Kernel::Config;

        use strict;
        use warnings;
        use utf8;

        sub Load {
            my $Self = shift;

            # ---------------------------------------------------- #
            # database settings                                    #
            # ---------------------------------------------------- #

            # The database host
            $Self->{DatabaseHost} = '127.0.0.1';

            # The database name
            $Self->{Database} = "otrs";

            # The database user
            $Self->{DatabaseUser} = "otrs";

            # The password of database user. You also can use bin/otrs.Console.pl Maint::Database::PasswordCrypt
            # for crypted passwords
            $Self->{DatabasePw} = '‹p›';

            $Self->{DatabaseDSN} = "DBI:mysql:database=$Self->{Database};host=$Self->{DatabaseHost};";
        """,
        p=password,
    )
    return text, (password,)


@_shape("superset-config-py-secret-key-and-metadata-uri")
def _superset(rng: random.Random) -> Built:
    secret = _b64s(rng, 42)
    password = _alnum(rng, 18)
    text = _fill(
        """
        # superset_config.py
        ROW_LIMIT = 5000
        SECRET_KEY = '‹s›'
        SQLALCHEMY_DATABASE_URI = 'postgresql+psycopg2://superset:‹p›@pg-meta.internal:5432/superset'
        WTF_CSRF_ENABLED = True
        FEATURE_FLAGS = {"ALERT_REPORTS": True, "DASHBOARD_RBAC": True}
        MAPBOX_API_KEY = ''
        """,
        s=secret,
        p=password,
    )
    return text, (secret, password)


@_shape("trino-catalog-properties-connection-password")
def _trino_catalog(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-?@_")
    text = _fill(
        """
        $ cat etc/catalog/warehouse.properties
        connector.name=postgresql
        connection-url=jdbc:postgresql://pg-dw.internal:5432/warehouse
        connection-user=trino_ro
        connection-password=‹p›
        case-insensitive-name-matching=true
        postgresql.array-mapping=AS_ARRAY
        """,
        p=password,
    )
    return text, (password,)


@_shape("spark-defaults-conf-s3a-secret-key-ionos")
def _spark_defaults(rng: random.Random) -> Built:
    secret = _b64s(rng, 30)
    text = _fill(
        """
        spark.master                            k8s://https://k8s-api.internal:6443
        spark.hadoop.fs.s3a.endpoint            https://s3.eu-central-1.ionoscloud.com
        spark.hadoop.fs.s3a.access.key          ‹a›
        spark.hadoop.fs.s3a.secret.key          ‹s›
        spark.hadoop.fs.s3a.path.style.access   true
        spark.hadoop.fs.s3a.impl                org.apache.hadoop.fs.s3a.S3AFileSystem
        spark.eventLog.enabled                  true
        spark.eventLog.dir                      s3a://spark-history/events
        """,
        a=_hexs(rng, 20, upper=True),
        s=secret,
    )
    return text, (secret,)


@_shape("hive-site-xml-connection-password-name-value-lines")
def _hive_site(rng: random.Random) -> Built:
    password = _human(rng, marks="!#?")
    text = _fill(
        """
        <configuration>
          <property>
            <name>javax.jdo.option.ConnectionURL</name>
            <value>jdbc:mysql://metastore-db.internal:3306/hive?createDatabaseIfNotExist=true</value>
          </property>
          <property>
            <name>javax.jdo.option.ConnectionUserName</name>
            <value>hive</value>
          </property>
          <property>
            <name>javax.jdo.option.ConnectionPassword</name>
            <value>‹p›</value>
          </property>
          <property>
            <name>hive.metastore.warehouse.dir</name>
            <value>s3a://lake/warehouse</value>
          </property>
        </configuration>
        """,
        p=password,
    )
    return text, (password,)


@_shape("debezium-connector-post-heredoc-database-password")
def _debezium(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%*+-=?@_~")
    config = {
        "name": "orders-cdc",
        "config": {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "database.hostname": "orders-db",
            "database.port": "5432",
            "database.user": "debezium",
            "database.password": password,
            "database.dbname": "orders",
            "topic.prefix": "orders",
            "plugin.name": "pgoutput",
            "table.include.list": "public.orders,public.order_lines",
        },
    }
    text = (
        "$ curl -s -X POST -H 'Content-Type: application/json' http://connect:8083/connectors -d @- <<'EOF'\n"
        + json.dumps(config, indent=2)
        + "\nEOF\n"
        + json.dumps({**config, "tasks": [], "type": "source"})
        + "\n"
    )
    return text, (password,)


@_shape("nifi-properties-sensitive-props-key-and-keystore-passwd")
def _nifi(rng: random.Random) -> Built:
    props_key = _alnum(rng, 24)
    keystore = _alnum(rng, 32)
    text = _fill(
        """
        # security properties #
        nifi.sensitive.props.key=‹k›
        nifi.sensitive.props.key.protected=
        nifi.sensitive.props.algorithm=NIFI_PBKDF2_AES_GCM_256
        nifi.sensitive.props.additional.keys=

        nifi.security.autoreload.enabled=false
        nifi.security.autoreload.interval=10 secs
        nifi.security.keystore=./conf/keystore.p12
        nifi.security.keystoreType=PKCS12
        nifi.security.keystorePasswd=‹s›
        nifi.security.keyPasswd=‹s›
        nifi.security.user.authorizer=single-user-authorizer
        nifi.security.user.login.identity.provider=single-user-provider
        """,
        k=props_key,
        s=keystore,
    )
    return text, (props_key, keystore)


@_shape("logstash-pipeline-opensearch-output-password-arrow")
def _logstash(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-=?@_~")
    text = _fill(
        """
        input {
          beats { port => 5044 }
        }
        filter {
          grok { match => { "message" => "%{COMBINEDAPACHELOG}" } }
        }
        output {
          opensearch {
            hosts => ["https://os-node1.internal:9200"]
            index => "nginx-%{+YYYY.MM.dd}"
            user => "logstash_writer"
            password => "‹p›"
            ssl_certificate_verification => true
          }
        }
        """,
        p=password,
    )
    return text, (password,)


@_shape("graylog-server-conf-password-secret-beside-root-sha2")
def _graylog(rng: random.Random) -> Built:
    secret = _alnum(rng, 96)
    text = _fill(
        """
        is_leader = true
        node_id_file = /etc/graylog/server/node-id
        password_secret = ‹s›
        root_username = admin
        root_password_sha2 = ‹h›
        root_timezone = Europe/Vienna
        bin_dir = /usr/share/graylog-server/bin
        data_dir = /var/lib/graylog-server
        http_bind_address = 0.0.0.0:9000
        elasticsearch_hosts = http://opensearch:9200
        mongodb_uri = mongodb://mongo/graylog
        """,
        s=secret,
        h=_hexs(rng, 64),
    )
    return text, (secret,)


@_shape("icinga2-api-users-conf-object-password")
def _icinga(rng: random.Random) -> Built:
    password = _hexs(rng, 16)
    text = _fill(
        """
        # cat /etc/icinga2/conf.d/api-users.conf
        /**
         * The ApiUser objects are used for authentication against the API.
         */
        object ApiUser "root" {
          password = "‹p›"
          // client_cn = ""

          permissions = [ "*" ]
        }
        """,
        p=password,
    )
    return text, (password,)


@_shape("rocket-toml-release-profile-secret-key")
def _rocket_toml(rng: random.Random) -> Built:
    key = _b64s(rng, 32)
    text = _fill(
        """
        ## Rocket.toml
        [default]
        address = "0.0.0.0"
        port = 8000
        limits = { form = "64 kB", json = "1 MiB" }

        [release]
        secret_key = "‹k›"
        log_level = "critical"
        """,
        k=key,
    )
    return text, (key,)


@_shape("pyramid-production-ini-sqlalchemy-url-and-session-secret")
def _pyramid_ini(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    secret = _hexs(rng, 64)
    text = _fill(
        """
        ###
        # app configuration
        # https://docs.pylonsproject.org/projects/pyramid/en/latest/narr/environment.html
        ###

        [app:main]
        use = egg:tasklist

        pyramid.reload_templates = false
        pyramid.debug_authorization = false
        pyramid.default_locale_name = en

        sqlalchemy.url = postgresql://tasklist:‹p›@db.internal/tasklist
        session.secret = ‹s›

        [server:main]
        use = egg:waitress#main
        listen = *:6543
        """,
        p=password,
        s=secret,
    )
    return text, (password, secret)


@_shape("codeigniter4-env-hex2bin-encryption-key-and-db-password")
def _codeigniter(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    key = _hexs(rng, 64)
    text = _fill(
        """
        #--------------------------------------------------------------------
        # ENVIRONMENT
        #--------------------------------------------------------------------

        CI_ENVIRONMENT = production

        #--------------------------------------------------------------------
        # APP
        #--------------------------------------------------------------------

        app.baseURL = 'https://portal.kooperative-example.es/'

        #--------------------------------------------------------------------
        # DATABASE
        #--------------------------------------------------------------------

        database.default.hostname = localhost
        database.default.database = portal
        database.default.username = portal
        database.default.password = ‹p›
        database.default.DBDriver = MySQLi

        #--------------------------------------------------------------------
        # ENCRYPTION
        #--------------------------------------------------------------------

        encryption.key = hex2bin:‹k›
        """,
        p=password,
        k=key,
    )
    return text, (password, key)


@_shape("dotenvx-env-keys-private-key-beside-public-and-encrypted")
def _dotenvx(rng: random.Random) -> Built:
    private = _hexs(rng, 64)
    text = _fill(
        """
        $ cat .env
        #/-------------------[DOTENV_PUBLIC_KEY]--------------------/
        #/            public-key encryption for .env files          /
        #/       [how it works](https://dotenvx.com/encryption)     /
        #/----------------------------------------------------------/
        DOTENV_PUBLIC_KEY="‹pub›"

        # .env
        DATABASE_URL="encrypted:‹e1›"
        RESEND_API_KEY="encrypted:‹e2›"
        $ cat .env.keys
        #/------------------!DOTENV_PRIVATE_KEYS!-------------------/
        #/ private decryption keys. DO NOT commit to source control /
        #/     [how it works](https://dotenvx.com/encryption)       /
        #/----------------------------------------------------------/

        # .env
        DOTENV_PRIVATE_KEY="‹k›"
        """,
        pub=rng.choice(["02", "03"]) + _hexs(rng, 64),
        e1=_b64s(rng, 120),
        e2=_b64s(rng, 96),
        k=private,
    )
    return text, (private,)


@_shape("ejson-keydir-private-key-beside-public-and-boxes")
def _ejson(rng: random.Random) -> Built:
    public = _hexs(rng, 64)
    private = _hexs(rng, 64)

    def box() -> str:
        return f"EJ[1:{_b64s(rng, 32)}:{_b64s(rng, 24)}:{_b64s(rng, 36)}]"

    text = _fill(
        """
        deploy@app-3:~$ cat config/secrets.production.ejson
        {
          "_public_key": "‹pub›",
          "database_password": "‹b1›",
          "smtp_password": "‹b2›"
        }
        deploy@app-3:~$ ls /opt/ejson/keys/
        ‹pub›
        deploy@app-3:~$ cat /opt/ejson/keys/‹pub›
        ‹k›
        """,
        pub=public,
        b1=box(),
        b2=box(),
        k=private,
    )
    return text, (private,)


@_shape("cloudinary-url-env-api-secret-in-userinfo")
def _cloudinary(rng: random.Random) -> Built:
    secret = _pick(rng, _URL_ALPHABET, 27)
    text = _fill(
        """
        # .env.local
        NEXT_PUBLIC_CLOUDINARY_CLOUD_NAME=ateliermoda
        CLOUDINARY_URL=cloudinary://‹k›:‹s›@ateliermoda
        NEXT_PUBLIC_SITE_URL=https://ateliermoda-example.it
        """,
        k=_digits(rng, 15),
        s=secret,
    )
    return text, (secret,)


@_shape("imagekit-node-constructor-private-key-beside-public")
def _imagekit(rng: random.Random) -> Built:
    private = "private_" + _b64s(rng, 20)
    text = _fill(
        """
        const ImageKit = require("imagekit");

        const imagekit = new ImageKit({
          publicKey: "public_‹pub›",
          privateKey: "‹k›",
          urlEndpoint: "https://ik.imagekit.io/kinderbuch",
        });

        module.exports = imagekit;
        """,
        pub=_b64s(rng, 20),
        k=private,
    )
    return text, (private,)


# --------------------------------------------------------------------------------------------------------
# Code in other languages, SDK clients, realtime, feature flags, wallets
# --------------------------------------------------------------------------------------------------------


@_shape("godot-export-credentials-cfg-keystore-release-password")
def _godot(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    text = _fill(
        """
        $ cat .godot/export_credentials.cfg
        [preset.0]

        script_encryption_key=""

        [preset.0.options]

        keystore/debug_user=""
        keystore/debug_password=""
        keystore/release="/home/mira/keys/tinyfox-release.keystore"
        keystore/release_user="tinyfox"
        keystore/release_password="‹p›"
        """,
        p=password,
    )
    return text, (password,)


@_shape("delphi-dfm-firedac-params-strings-password")
def _delphi_dfm(rng: random.Random) -> Built:
    password = _human(rng, marks="!#$")
    text = _fill(
        """
        object dmPrincipal: TdmPrincipal
          OldCreateOrder = False
          Height = 240
          Width = 320
          object FDConnection1: TFDConnection
            Params.Strings = (
              'Database=C:\\Dados\\ESTOQUE.FDB'
              'User_Name=SYSDBA'
              'Password=‹p›'
              'Server=192.168.0.10'
              'CharacterSet=WIN1252'
              'DriverID=FB')
            LoginPrompt = False
            Left = 48
            Top = 32
          end
        end
        """,
        p=password,
    )
    return text, (password,)


@_shape("autohotkey-v2-hotkey-sendtext-password")
def _autohotkey(rng: random.Random) -> Built:
    password = _human(rng, marks="?$.")
    text = _fill(
        """
        #Requires AutoHotkey v2.0
        #SingleInstance Force

        ; Ctrl+Alt+L fills the SAP GUI logon screen
        ^!l:: {
            SendText "j.moreau"
            Send "{Tab}"
            SendText "‹p›"
            Send "{Enter}"
        }
        """,
        p=password,
    )
    return text, (password,)


@_shape("fortran-namelist-db-config-password")
def _fortran_namelist(rng: random.Random) -> Built:
    password = _alnum(rng, 14)
    text = _fill(
        """
        $ cat run/ingest.nml
        &db_config
          db_host     = 'obs-db.meteo.internal',
          db_port     = 5432,
          db_user     = 'wrf_ingest',
          db_password = '‹p›',
          db_name     = 'observations'
        /
        &run_config
          start_date = '2026-03-01_00:00:00',
          interval_s = 10800
        /
        $ grep -n "nml=db_config" src/ingest.f90
        41:    read(unit=10, nml=db_config, iostat=ios)
        """,
        p=password,
    )
    return text, (password,)


@_shape("ocaml-cohttp-bearer-header-polygon-key")
def _ocaml_polygon(rng: random.Random) -> Built:
    key = _alnum(rng, 32)
    text = _fill(
        """
        open Lwt.Infix

        let api_key = "‹k›"

        let fetch_prev_close ticker =
          let uri =
            Uri.of_string
              (Printf.sprintf "https://api.polygon.io/v2/aggs/ticker/%s/prev?adjusted=true" ticker)
          in
          let headers = Cohttp.Header.init_with "Authorization" ("Bearer " ^ api_key) in
          Cohttp_lwt_unix.Client.get ~headers uri >>= fun (_resp, body) ->
          Cohttp_lwt.Body.to_string body
        """,
        k=key,
    )
    return text, (key,)


@_shape("abap-http-client-authenticate-password")
def _abap(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#$%*+-=?@_")
    text = _fill(
        """
        DATA: lo_client TYPE REF TO if_http_client,
              lv_json   TYPE string.

        cl_http_client=>create_by_url(
          EXPORTING url    = 'https://api.spedition-example.de/v2/shipments'
          IMPORTING client = lo_client ).

        lo_client->authenticate( username = 'RFC_SHIPPING' password = '‹p›' ).
        lo_client->request->set_method( if_http_request=>co_request_method_get ).
        lo_client->send( ).
        lo_client->receive( ).
        lv_json = lo_client->response->get_cdata( ).
        """,
        p=password,
    )
    return text, (password,)


@_shape("ibm-i-cl-chgusrprf-password-parameter")
def _ibm_i(rng: random.Random) -> Built:
    password = _upper_alnum(rng, 10)
    text = _fill(
        """
        /* QGPL/QCLSRC(SETBATCH) - reset the batch profile after the quarterly rotation */
                     PGM
                     CHGUSRPRF  USRPRF(BATCHUSR) PASSWORD(‹p›) PWDEXP(*NO) +
                                  STATUS(*ENABLED)
                     SNDPGMMSG  MSG('BATCHUSR reset') TOPGMQ(*EXT)
                     ENDPGM
        """,
        p=password,
    )
    return text, (password,)


@_shape("tiltfile-local-resource-env-tinybird-token")
def _tiltfile(rng: random.Random) -> Built:
    claims = {"u": _guid(rng), "id": _guid(rng), "host": "gcp-europe-west2"}
    token = "p." + _segment(claims) + "." + _b64u(rng, 32)
    text = _fill(
        """
        # Tiltfile
        docker_compose('docker-compose.yml')

        local_resource(
            'seed-events',
            cmd='python scripts/seed_tinybird.py --days 7',
            env={'TB_TOKEN': '‹t›', 'TB_HOST': 'https://api.europe-west2.gcp.tinybird.co'},
            resource_deps=['api'],
            auto_init=False,
        )
        """,
        t=token,
    )
    return text, (token,)


@_shape("renovate-json5-host-rules-registry-password")
def _renovate(rng: random.Random) -> Built:
    password = _human(rng, marks="!#?")
    text = _fill(
        """
        // renovate.json5
        {
          $schema: 'https://docs.renovatebot.com/renovate-schema.json',
          extends: ['config:recommended', ':semanticCommits'],
          timezone: 'Europe/Prague',
          // private registry for our base images
          hostRules: [
            {
              matchHost: 'registry.acme-intra.net',
              username: 'renovate-bot',
              password: '‹p›',
            },
          ],
          packageRules: [
            { matchDatasources: ['docker'], pinDigests: true },
          ],
        }
        """,
        p=password,
    )
    return text, (password,)


@_shape("pubnub-python-pnconfiguration-secret-key-beside-pub-sub")
def _pubnub(rng: random.Random) -> Built:
    secret = "sec-c-" + _b64s(rng, 36)
    text = _fill(
        """
        from pubnub.pnconfiguration import PNConfiguration
        from pubnub.pubnub import PubNub

        pnconfig = PNConfiguration()
        pnconfig.publish_key = "pub-c-‹pub›"
        pnconfig.subscribe_key = "sub-c-‹sub›"
        pnconfig.secret_key = "‹s›"
        pnconfig.user_id = "billing-worker-1"
        pubnub = PubNub(pnconfig)
        """,
        pub=_guid(rng),
        sub=_guid(rng),
        s=secret,
    )
    return text, (secret,)


@_shape("ably-rest-client-key-colon-secret")
def _ably(rng: random.Random) -> Built:
    secret = _b64u(rng, 32)
    text = _fill(
        """
        import * as Ably from "ably";

        const ably = new Ably.Rest({ key: "‹app›.‹kid›:‹s›" });
        const channel = ably.channels.get("orders:status");
        await channel.publish("updated", { orderId: 18231, status: "packed" });
        """,
        app=_pick(rng, _LETTERS_DIGITS, 6),
        kid=_pick(rng, _LETTERS_DIGITS + "_-", 6),
        s=secret,
    )
    return text, (secret,)


@_shape("launchdarkly-go-server-sdk-key-make-client")
def _launchdarkly_go(rng: random.Random) -> Built:
    key = "sdk-" + _guid(rng)
    text = _fill(
        """
        package flags

        import (
        ‹tab›"time"

        ‹tab›ld "github.com/launchdarkly/go-server-sdk/v7"
        )

        func NewClient() (*ld.LDClient, error) {
        ‹tab›return ld.MakeClient("‹k›", 5*time.Second)
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("unleash-node-client-custom-headers-authorization-token")
def _unleash(rng: random.Random) -> Built:
    token = f"default:production.{_hexs(rng, 64)}"
    text = _fill(
        """
        import { initialize } from 'unleash-client';

        export const unleash = initialize({
          url: 'https://unleash.acme-intra.net/api/',
          appName: 'checkout',
          environment: 'production',
          customHeaders: { Authorization: '‹t›' },
        });
        """,
        t=token,
    )
    return text, (token,)


@_shape("gcore-curl-apikey-scheme-permanent-token")
def _gcore(rng: random.Random) -> Built:
    token = f"{_digits(rng, 5)}${_hexs(rng, 96)}"
    text = _fill(
        """
        $ curl -s 'https://api.gcore.com/cdn/resources?limit=2' -H 'Authorization: APIKey ‹t›' | jq '.[].cname'
        "static.fahrrad-example.cz"
        "img.fahrrad-example.cz"
        """,
        t=token,
    )
    return text, (token,)


@_shape("coolify-api-curl-sanctum-pipe-token")
def _coolify(rng: random.Random) -> Built:
    token = f"{rng.randint(2, 48)}|{_alnum(rng, 40)}"
    text = _fill(
        """
        $ curl -s https://coolify.werkstatt-example.de/api/v1/applications -H "Authorization: Bearer ‹t›" | jq '.[] | {name, status}'
        {
          "name": "shop-frontend",
          "status": "running:healthy"
        }
        """,
        t=token,
    )
    return text, (token,)


@_shape("matrix-login-curl-password-and-syt-access-token")
def _matrix_login(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-=?@_~")
    user = "alertbot"
    token = f"syt_{base64.b64encode(user.encode()).decode().rstrip('=')}_{_alnum(rng, 20)}_{_alnum(rng, 6)}"
    body = json.dumps(
        {"type": "m.login.password", "identifier": {"type": "m.id.user", "user": user}, "password": password}
    )
    response = json.dumps(
        {
            "user_id": f"@{user}:chat.acme-example.org",
            "access_token": token,
            "home_server": "chat.acme-example.org",
            "device_id": _pick(rng, string.ascii_uppercase, 10),
        },
        separators=(",", ":"),
    )
    text = f"$ curl -s -XPOST -d '{body}' https://chat.acme-example.org/_matrix/client/v3/login\n{response}\n"
    return text, (password, token)


@_shape("webex-teams-sdk-bot-access-token-beside-room-id")
def _webex(rng: random.Random) -> Built:
    token = f"{_alnum(rng, 64)}_PF84_{_guid(rng)}"
    room = base64.b64encode(f"ciscospark://us/ROOM/{_guid(rng)}".encode()).decode().rstrip("=")
    text = _fill(
        """
        from webexteamssdk import WebexTeamsAPI

        api = WebexTeamsAPI(access_token="‹t›")
        api.messages.create(roomId="‹r›", markdown="**Deploy finished** for `checkout-api` 4.12.0")
        """,
        t=token,
        r=room,
    )
    return text, (token,)


@_shape("twitch-dotenv-client-secret-beside-client-id")
def _twitch(rng: random.Random) -> Built:
    secret = _lower_alnum(rng, 30)
    text = _fill(
        """
        # .env (stream overlay bot)
        TWITCH_CLIENT_ID=‹i›
        TWITCH_CLIENT_SECRET=‹s›
        TWITCH_BROADCASTER_ID=‹b›
        OVERLAY_PORT=4455
        """,
        i=_lower_alnum(rng, 30),
        s=secret,
        b=_digits(rng, 9),
    )
    return text, (secret,)


@_shape("tweepy-client-bearer-token-url-encoded-tail")
def _tweepy(rng: random.Random) -> Built:
    tail = base64.b64encode(rng.randbytes(36)).decode()
    tail = tail.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    token = "A" * 22 + _alnum(rng, 9) + "A" * 7 + tail + _alnum(rng, 50)
    text = _fill(
        """
        import tweepy

        client = tweepy.Client(bearer_token="‹t›")
        resp = client.search_recent_tweets("from:berlinwasser -is:retweet", max_results=10)
        for tweet in resp.data or []:
            print(tweet.id, tweet.text[:80])
        """,
        t=token,
    )
    return text, (token,)


@_shape("rust-reqwest-error-for-url-steam-key-query")
def _steam_reqwest(rng: random.Random) -> Built:
    key = _hexs(rng, 32, upper=True)
    steamid = "7656119" + _pick(rng, string.digits, 10)
    text = _fill(
        """
        $ cargo run --release -- library --steamid ‹id›
            Finished `release` profile [optimized] target(s) in 0.21s
             Running `target/release/backlog library --steamid ‹id›`
        Error: HTTP status client error (403 Forbidden) for url (https://api.steampowered.com/IPlayerService/GetOwnedGames/v1/?key=‹k›&steamid=‹id›&include_appinfo=1&format=json)
        """,
        id=steamid,
        k=key,
    )
    return text, (key,)


@_shape("okx-python-sdk-secret-key-and-passphrase")
def _okx(rng: random.Random) -> Built:
    secret = _hexs(rng, 32, upper=True)
    passphrase = _human(rng, marks="!#$")
    text = _fill(
        """
        import okx.Account as Account

        api_key = "‹i›"
        secret_key = "‹s›"
        passphrase = "‹p›"
        flag = "0"  # live trading: 0, demo trading: 1

        accountAPI = Account.AccountAPI(api_key, secret_key, passphrase, False, flag)
        print(accountAPI.get_account_balance())
        """,
        i=_guid(rng),
        s=secret,
        p=passphrase,
    )
    return text, (secret, passphrase)


@_shape("coinbase-cdp-api-key-json-ec-private-key-escaped")
def _coinbase_cdp(rng: random.Random) -> Built:
    der = (
        bytes.fromhex("30770201010420")
        + rng.randbytes(32)
        + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
        + b"\x04"
        + rng.randbytes(64)
    )
    lines = _pem_lines(base64.b64encode(der).decode())
    pem = "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END EC PRIVATE KEY-----\n"
    doc = {"name": f"organizations/{_guid(rng)}/apiKeys/{_guid(rng)}", "privateKey": pem}
    text = "$ cat ~/Downloads/cdp_api_key.json\n" + json.dumps(doc, indent=2) + "\n"
    return text, (lines[0],)


@_shape("foundry-cast-wallet-new-private-key")
def _cast_wallet(rng: random.Random) -> Built:
    key = _hexs(rng, 64)
    address = "0x" + "".join(c.upper() if rng.random() < 0.5 else c for c in _hexs(rng, 40))
    text = _fill(
        """
        $ cast wallet new
        Successfully created new keypair.
        Address:     ‹a›
        Private key: 0x‹k›
        """,
        a=address,
        k=key,
    )
    return text, (key,)


@_shape("solana-id-json-byte-array-keypair")
def _solana(rng: random.Random) -> Built:
    array = "[" + ",".join(str(b) for b in rng.randbytes(64)) + "]"
    text = _fill(
        """
        $ solana-keygen pubkey ~/.config/solana/devnet-deployer.json
        ‹pk›
        $ cat ~/.config/solana/devnet-deployer.json
        ‹a›
        """,
        pk=_b58(rng, 44),
        a=array,
    )
    return text, (array,)


@_shape("nostr-bot-config-toml-nsec-beside-npub")
def _nostr(rng: random.Random) -> Built:
    nsec = "nsec1" + _pick(rng, _BECH32, 58)
    text = _fill(
        """
        # bot.toml
        [nostr]
        private_key = "‹k›"
        # npub for the profile: npub1‹pub›
        relays = ["wss://relay.damus.io", "wss://nos.lol", "wss://relay.nostr.band"]

        [schedule]
        post_at = "07:30"
        """,
        k=nsec,
        pub=_pick(rng, _BECH32, 58),
    )
    return text, (nsec,)


# --------------------------------------------------------------------------------------------------------
# HTTP clients, captures and wire protocols
# --------------------------------------------------------------------------------------------------------


@_shape("jellyfin-curl-x-emby-token-items-with-hex-ids")
def _jellyfin(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    server = _hexs(rng, 32)
    items = {
        "Items": [
            {
                "Name": "Der Himmel über Berlin",
                "ServerId": server,
                "Id": _hexs(rng, 32),
                "ProductionYear": 1987,
                "Type": "Movie",
            },
            {
                "Name": "Lola rennt",
                "ServerId": server,
                "Id": _hexs(rng, 32),
                "ProductionYear": 1998,
                "Type": "Movie",
            },
        ],
        "TotalRecordCount": 412,
        "StartIndex": 0,
    }
    text = (
        f"$ curl -s -H 'X-Emby-Token: {token}' "
        "'http://jellyfin.lan:8096/Items?Recursive=true&IncludeItemTypes=Movie&Limit=2' | jq -c .\n"
        + json.dumps(items, ensure_ascii=False, separators=(",", ":"))
        + "\n"
    )
    return text, (token,)


@_shape("portainer-api-curl-x-api-key-ptr")
def _portainer(rng: random.Random) -> Built:
    key = "ptr_" + _b64s(rng, 33)
    text = _fill(
        """
        $ curl -s -H "X-API-Key: ‹k›" https://portainer.lan:9443/api/endpoints | jq '.[] | {Id, Name, Status}'
        {
          "Id": 2,
          "Name": "local",
          "Status": 1
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("curl-oauth2-bearer-flag-zitadel-pat")
def _zitadel(rng: random.Random) -> Built:
    token = _pick(rng, _URL_ALPHABET, 71)
    text = _fill(
        """
        $ curl -s -X POST --oauth2-bearer ‹t› \\
            https://acme-‹i›.zitadel.cloud/management/v1/users/_search \\
            -H 'Content-Type: application/json' -d '{"query": {"limit": 2}}' | jq '.result[].userName'
        "ops-bot"
        "s.okafor"
        """,
        t=token,
        i=_lower_alnum(rng, 6),
    )
    return text, (token,)


@_shape("burp-repeater-raw-request-x-rundeck-auth-token")
def _burp_rundeck(rng: random.Random) -> Built:
    token = _alnum(rng, 32)
    job = _guid(rng)
    text = _fill(
        """
        POST /api/47/job/‹j›/run HTTP/2
        Host: rundeck.acme-intra.net
        X-Rundeck-Auth-Token: ‹t›
        Accept: application/json
        Content-Type: application/json
        User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:135.0) Gecko/20100101 Firefox/135.0
        Content-Length: 46

        {"argString":"-env staging -version 4.12.0"}

        HTTP/2 200 OK
        Date: Mon, 02 Mar 2026 10:11:12 GMT
        Content-Type: application/json;charset=utf-8
        X-Rundeck-Api-Version: 47

        {"id":18231,"href":"https://rundeck.acme-intra.net/api/47/execution/18231","permalink":"https://rundeck.acme-intra.net/project/ops/execution/show/18231","status":"running","project":"ops"}
        """,
        j=job,
        t=token,
    )
    return text, (token,)


@_shape("fiddler-raw-request-ocp-apim-subscription-key")
def _fiddler_apim(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        GET https://apim-acme-prod.azure-api.net/orders/v1/orders?status=open HTTP/1.1
        Host: apim-acme-prod.azure-api.net
        Ocp-Apim-Subscription-Key: ‹k›
        Accept: application/json
        Accept-Encoding: gzip, deflate
        Connection: keep-alive

        HTTP/1.1 200 OK
        Content-Type: application/json; charset=utf-8
        Request-Context: appId=cid-v1:‹app›
        x-ms-request-id: ‹req›
        Date: Mon, 02 Mar 2026 10:11:12 GMT
        Content-Length: 512
        """,
        k=key,
        app=_guid(rng),
        req=_guid(rng),
    )
    return text, (key,)


@_shape("odoo-xmlrpc-common-authenticate-capture-api-key")
def _odoo_xmlrpc(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    body = (
        "<?xml version='1.0'?>\n<methodCall>\n<methodName>authenticate</methodName>\n<params>\n"
        "<param>\n<value><string>acme-prod</string></value>\n</param>\n"
        "<param>\n<value><string>integration@acme-example.com</string></value>\n</param>\n"
        f"<param>\n<value><string>{key}</string></value>\n</param>\n"
        "<param>\n<value><struct>\n</struct></value>\n</param>\n</params>\n</methodCall>\n"
    )
    text = (
        "POST /xmlrpc/2/common HTTP/1.1\nHost: erp.acme-example.com\nAccept-Encoding: gzip\n"
        "Content-Type: text/xml\nUser-Agent: Python-xmlrpc/3.12\n"
        f"Content-Length: {len(body)}\n\n" + body
    )
    return text, (key,)


@_shape("prosody-debug-log-sasl-plain-auth-base64")
def _prosody(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    blob = base64.b64encode(f"\0alertbot\0{password}".encode()).decode()
    session = "c2s" + _hexs(rng, 12)
    text = _fill(
        """
        Mar 02 10:11:12 ‹s›	debug	Client sent opening <stream:stream> to chat.acme-example.org
        Mar 02 10:11:12 ‹s›	debug	Sending[c2s_unauthed]: <stream:features>
        Mar 02 10:11:12 ‹s›	debug	Received[c2s_unauthed]: <auth xmlns='urn:ietf:params:xml:ns:xmpp-sasl' mechanism='PLAIN'>‹b›</auth>
        Mar 02 10:11:12 ‹s›	info	Authenticated as alertbot@chat.acme-example.org
        """,
        s=session,
        b=blob,
    )
    return text, (blob,)


@_shape("tcpdump-ascii-form-login-post-password")
def _tcpdump(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="-_.")
    body = f"username=admin&password={password}&lang=en"
    text = _fill(
        """
        $ sudo tcpdump -i eth0 -A -s0 'tcp port 80 and host 10.1.4.20'
        tcpdump: verbose output suppressed, use -v[v]... for full protocol decode
        listening on eth0, link-type EN10MB (Ethernet), snapshot length 262144 bytes
        10:11:12.345678 IP 10.1.8.33.51422 > 10.1.4.20.http: Flags [P.], seq 1:‹n›, ack 1, win 502, length ‹n›
        E..3..@.@.....
        ...P....
        POST /cgi-bin/login.cgi HTTP/1.1
        Host: 10.1.4.20
        Content-Type: application/x-www-form-urlencoded
        Content-Length: ‹l›

        ‹b›
        """,
        n=str(230 + len(body)),
        l=str(len(body)),
        b=body,
    )
    return text, (password,)


@_shape("tshark-fields-http-authorization-launchdarkly-api-token")
def _tshark(rng: random.Random) -> Built:
    token = "api-" + _guid(rng)
    text = _fill(
        """
        $ tshark -r mobile-app.pcapng -Y 'http.authorization' -T fields -e frame.time_relative -e ip.dst -e http.request.uri -e http.authorization
        3.214551000	104.18.‹a›.‹b›	/api/v2/flags/mobile-app	‹t›
        """,
        a=str(rng.randint(1, 254)),
        b=str(rng.randint(1, 254)),
        t=token,
    )
    return text, (token,)


@_shape("java-httpclient-log-headers-monday-jwt")
def _java_httpclient(rng: random.Random) -> Built:
    token = _jwt(
        rng,
        {"alg": "HS256"},
        {
            "tid": int(_digits(rng, 9)),
            "aai": 11,
            "uid": int(_digits(rng, 8)),
            "iad": f"{_date(rng)}T{_time(rng)}.000Z",
            "per": "me:write",
            "actid": int(_digits(rng, 8)),
            "rgn": "euc1",
        },
    )
    text = _fill(
        """
        $ java -Djdk.httpclient.HttpClient.log=requests,headers -jar board-sync.jar
        Mar 02, 2026 10:11:12 AM jdk.internal.net.http.MultiExchange requestSent
        INFO: REQUEST: https://api.monday.com/v2 POST
        Mar 02, 2026 10:11:12 AM jdk.internal.net.http.Http1Request logHeaders
        INFO: HEADERS: REQUEST HEADERS:
        POST /v2 HTTP/1.1
        Content-Length: 71
        Host: api.monday.com
        User-Agent: Java-http-client/21.0.2
        API-Version: 2025-04
        Authorization: ‹t›
        Content-Type: application/json

        Mar 02, 2026 10:11:13 AM jdk.internal.net.http.Http1Response$HeadersReader handle
        INFO: HEADERS: RESPONSE HEADERS:
            content-type: application/json; charset=utf-8
            x-request-id: ‹r›
        """,
        t=token,
        r=_guid(rng),
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Debuggers, dumps, audit trails
# --------------------------------------------------------------------------------------------------------


@_shape("ipdb-post-mortem-pp-self-dict-mixedbread-key")
def _ipdb(rng: random.Random) -> Built:
    key = "mxb_" + _alnum(rng, 40)
    state = {
        "_api_key": key,
        "_base_url": "https://api.mixedbread.com",
        "_model": "mixedbread-ai/mxbai-embed-large-v1",
        "_timeout": 30.0,
        "_max_retries": 2,
    }
    text = _fill(
        """
        > /home/rafa/src/search/embed.py(58)embed_batch()
             56         resp = self._session.post(url, json=payload, timeout=self._timeout)
             57         resp.raise_for_status()
        ---> 58         return [d["embedding"] for d in resp.json()["data"]]

        ipdb> pp self.__dict__
        ‹d›
        ipdb> p resp.status_code
        401
        """,
        d=repr(state).replace(", '", ",\n '"),
    )
    return text, (key,)


@_shape("pry-binding-ruby-struct-inspect-recurly-key")
def _pry(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        From: /app/lib/billing/recurly_sync.rb:42 Billing::RecurlySync#call:

            40: def call
            41:   binding.pry
         => 42:   client = Recurly::Client.new(api_key: @config.api_key)
            43:   client.list_accounts(params: { limit: 200 }).each do |account|

        [1] pry(#<Billing::RecurlySync>)> @config
        => #<struct Billing::Config subdomain="abo-kiste", api_key="‹k›", region="eu">
        """,
        k=key,
    )
    return text, (key,)


@_shape("gdb-print-struct-char-pointer-password")
def _gdb(rng: random.Random) -> Built:
    password = _human(rng, marks="!#?")
    text = _fill(
        """
        (gdb) bt
        #0  db_connect (cfg=0x5555555592a0) at src/db.c:48
        #1  0x0000555555555a3c in main (argc=2, argv=0x7fffffffe3b8) at src/main.c:117
        (gdb) p *cfg
        $1 = {host = 0x5555555596b0 "pg-ledger.internal", port = 5432, user = 0x5555555596d0 "ledger_rw", password = 0x5555555596f0 "‹p›", sslmode = 0x555555559710 "verify-full", timeout_ms = 5000}
        """,
        p=password,
    )
    return text, (password,)


@_shape("dotnet-dump-analyze-dumpobj-connection-string")
def _dotnet_dump(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#$%*+-?@_~")
    addr = _hexs(rng, 12)
    conn = (
        "Server=tcp:sql-billing.internal,1433;Database=Billing;User Id=billing_app;"
        f"Password={password};Encrypt=True;TrustServerCertificate=False"
    )
    text = _fill(
        """
        > dumpobj 0000‹a›
        Name:        System.String
        MethodTable: 00007f3a5e4c1d80
        EEClass:     00007f3a5e4a8f18
        Tracked Type: false
        Size:        ‹sz›(0x‹szh›) bytes
        File:        /usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.8/System.Private.CoreLib.dll
        String:      ‹c›
        Fields:
                      MT    Field   Offset                 Type VT     Attr            Value Name
        00007f3a5e4b2b08  400032e        8         System.Int32  1 instance              ‹n› _stringLength
        00007f3a5e4b5f40  400032f        c          System.Char  1 instance               53 _firstChar
        00007f3a5e4c1d80  400032d       c8        System.String  0   static 00007f3a1c000228 Empty
        """,
        a=addr,
        sz=str(22 + 2 * len(conn)),
        szh=format(22 + 2 * len(conn), "x"),
        c=conn,
        n=str(len(conn)),
    )
    return text, (password,)


@_shape("jcmd-vm-system-properties-keystore-password")
def _jcmd(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="-_.@%+*")
    text = _fill(
        """
        $ jcmd 28117 VM.system_properties | grep -i -E 'ssl|store'
        javax.net.ssl.keyStore=/opt/gateway/conf/gateway.p12
        javax.net.ssl.keyStorePassword=‹p›
        javax.net.ssl.keyStoreType=PKCS12
        javax.net.ssl.trustStore=/opt/gateway/conf/cacerts
        jdk.tls.client.protocols=TLSv1.3,TLSv1.2
        """,
        p=password,
    )
    return text, (password,)


@_shape("better-exceptions-annotated-traceback-pipedrive-token")
def _better_exceptions(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    text = _fill(
        """
        Traceback (most recent call last):
          File "sync_deals.py", line 31, in <module>
            deals = fetch_deals(API_TOKEN, since)
                    │           │          └ '2026-02-01'
                    │           └ '‹t›'
                    └ <function fetch_deals at 0x7f2b1c3d5e50>
          File "sync_deals.py", line 18, in fetch_deals
            resp.raise_for_status()
            └ <Response [401]>
        requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://api.pipedrive.com/v1/deals?start=0&limit=100
        """,
        t=token,
    )
    return text, (token,)


@_shape("delve-print-config-struct-sinch-key-secret")
def _delve(rng: random.Random) -> Built:
    secret = _pick(rng, _URL_ALPHABET + "~", 26)
    text = _fill(
        """
        > main.main() ./cmd/notifier/main.go:44 (PC: 0x7b4e2a)
            43:		cfg := loadConfig()
        =>  44:		client := sinch.New(cfg.SinchKeyID, cfg.SinchKeySecret)
        (dlv) print cfg
        main.Config {
        ‹tab›ListenAddr: ":8080",
        ‹tab›SinchProjectID: "‹p›",
        ‹tab›SinchKeyID: "‹k›",
        ‹tab›SinchKeySecret: "‹s›",
        ‹tab›Sender: "+4915199990000",}
        """,
        p=_guid(rng),
        k=_guid(rng),
        s=secret,
    )
    return text, (secret,)


@_shape("windows-security-4688-commandline-net-user-add")
def _event_4688(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        <Event xmlns="http://schemas.microsoft.com/win/2004/08/events/event">
          <System>
            <Provider Name="Microsoft-Windows-Security-Auditing" Guid="{54849625-5478-4994-a5ba-3e3b0328c30d}" />
            <EventID>4688</EventID>
            <Version>2</Version>
            <Level>0</Level>
            <Task>13312</Task>
            <TimeCreated SystemTime="‹d›T‹t›.4418210Z" />
            <EventRecordID>‹rid›</EventRecordID>
            <Computer>PRINT-SRV01.corp.acme-example.com</Computer>
          </System>
          <EventData>
            <Data Name="SubjectUserName">helpdesk07</Data>
            <Data Name="SubjectDomainName">CORP</Data>
            <Data Name="NewProcessName">C:\\Windows\\System32\\net.exe</Data>
            <Data Name="TokenElevationType">%%1937</Data>
            <Data Name="CommandLine">net  user svc_scanner ‹p› /add /comment:"MFP scan-to-folder"</Data>
            <Data Name="ParentProcessName">C:\\Windows\\System32\\cmd.exe</Data>
          </EventData>
        </Event>
        """,
        d=_date(rng),
        t=_time(rng),
        rid=_digits(rng, 7),
        p=password,
    )
    return text, (password,)


@_shape("auditd-execve-record-curl-proxy-user")
def _auditd(rng: random.Random) -> Built:
    password = _alnum(rng, 13)
    serial = f"{_epoch(rng)}.{rng.randint(100, 999)}:{rng.randint(10000, 99999)}"
    text = _fill(
        """
        # ausearch -k exec -i --start recent | tail -n 4
        type=PROCTITLE msg=audit(‹s›) : proctitle=curl -sS --proxy http://proxy.acme-intra.net:3128 --proxy-user jdoe:‹p› https://updates.vendor-example.com/feed.xml
        type=EXECVE msg=audit(‹s›) : argc=7 a0=curl a1=-sS a2=--proxy a3=http://proxy.acme-intra.net:3128 a4=--proxy-user a5=jdoe:‹p› a6=https://updates.vendor-example.com/feed.xml
        type=SYSCALL msg=audit(‹s›) : arch=x86_64 syscall=execve success=yes exit=0 ppid=2201 pid=2288 auid=jdoe uid=jdoe gid=jdoe comm=curl exe=/usr/bin/curl key=exec
        """,
        s=serial,
        p=password,
    )
    return text, (password,)


@_shape("kubernetes-audit-log-request-response-secret-stringdata")
def _k8s_audit(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%*+-=?@_~")
    event = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "RequestResponse",
        "auditID": _guid(rng),
        "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/monitoring/secrets?fieldManager=kubectl-client-side-apply",
        "verb": "create",
        "user": {
            "username": "oidc:vkumar@acme-example.com",
            "groups": ["oidc:platform", "system:authenticated"],
        },
        "sourceIPs": ["10.8.0.14"],
        "userAgent": "kubectl/v1.31.4 (linux/amd64) kubernetes/a78aa47",
        "objectRef": {
            "resource": "secrets",
            "namespace": "monitoring",
            "name": "grafana-admin",
            "apiVersion": "v1",
        },
        "responseStatus": {"metadata": {}, "code": 201},
        "requestObject": {
            "kind": "Secret",
            "apiVersion": "v1",
            "metadata": {"name": "grafana-admin", "namespace": "monitoring"},
            "stringData": {"admin-user": "admin", "admin-password": password},
            "type": "Opaque",
        },
        "requestReceivedTimestamp": _stamp(rng),
    }
    text = '$ jq -c \'select(.objectRef.resource=="secrets" and .verb=="create")\' /var/log/kubernetes/audit/audit.log | tail -n 1\n'
    text += json.dumps(event, separators=(",", ":")) + "\n"
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# OCR, transcripts, spreadsheets and notes
# --------------------------------------------------------------------------------------------------------


@_shape("gcp-vision-text-annotations-whiteboard-wifi")
def _gcp_vision(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    full = f"MEETING ROOM 4\nGuest Wi-Fi: ACME-Guest\nPassword: {password}\nIT helpdesk ext. 4410\n"

    def poly() -> dict:
        x, y = rng.randint(10, 900), rng.randint(10, 600)
        return {
            "vertices": [
                {"x": x, "y": y},
                {"x": x + 120, "y": y},
                {"x": x + 120, "y": y + 30},
                {"x": x, "y": y + 30},
            ]
        }

    doc = {
        "responses": [
            {
                "textAnnotations": [
                    {"locale": "en", "description": full, "boundingPoly": poly()},
                    {"description": "Password:", "boundingPoly": poly()},
                    {"description": password, "boundingPoly": poly()},
                ]
            }
        ]
    }
    text = "$ gcloud ml vision detect-text whiteboard.jpg\n" + json.dumps(doc, indent=2) + "\n"
    return text, (password,)


@_shape("aws-textract-detect-document-text-line-blocks")
def _textract(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    lines = [
        "DS920+",
        "Serial: 2380R" + _digits(rng, 6),
        "Admin login: admin",
        f"Password: {password}",
        "Set up: 14.02.2026",
    ]
    blocks = [
        {
            "BlockType": "PAGE",
            "Geometry": {"BoundingBox": {"Width": 1.0, "Height": 1.0, "Left": 0.0, "Top": 0.0}},
            "Id": _guid(rng),
        }
    ]
    for i, line in enumerate(lines):
        blocks.append(
            {
                "BlockType": "LINE",
                "Confidence": round(rng.uniform(93, 99.9), 4),
                "Text": line,
                "Geometry": {
                    "BoundingBox": {
                        "Width": 0.41,
                        "Height": 0.05,
                        "Left": 0.12,
                        "Top": round(0.1 + i * 0.08, 3),
                    }
                },
                "Id": _guid(rng),
            }
        )
    doc = {"DocumentMetadata": {"Pages": 1}, "Blocks": blocks, "DetectDocumentTextModelVersion": "1.0"}
    text = (
        '$ aws textract detect-document-text --document \'{"S3Object":{"Bucket":"it-scans","Name":"nas-label.jpg"}}\'\n'
        + json.dumps(doc, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("whisper-json-segments-spoken-passphrase")
def _whisper(rng: random.Random) -> Built:
    words = rng.sample(_VOCAB, 3)
    number = rng.choice(_NUMBER_WORDS)
    passphrase = f"{words[0]} {words[1]} {number} {words[2]}"
    sentence = (
        f" and the guest network password is {passphrase}, all lower case, with a space between the words."
    )
    doc = {
        "text": " Hi, it's Carmen from the front desk. Your room is 214 on the second floor" + sentence,
        "segments": [
            {
                "id": 0,
                "seek": 0,
                "start": 0.0,
                "end": 5.12,
                "text": " Hi, it's Carmen from the front desk. Your room is 214 on the second floor",
                "tokens": [50364, 2421, 11, 309, 311, 35789],
                "temperature": 0.0,
                "avg_logprob": -0.2214,
                "compression_ratio": 1.31,
                "no_speech_prob": 0.0121,
            },
            {
                "id": 1,
                "seek": 0,
                "start": 5.12,
                "end": 10.48,
                "text": sentence,
                "tokens": [50620, 293, 264, 8341, 3209, 11524],
                "temperature": 0.0,
                "avg_logprob": -0.2807,
                "compression_ratio": 1.31,
                "no_speech_prob": 0.0121,
            },
        ],
        "language": "en",
    }
    text = "$ whisper voicemail-0302.m4a --model small --output_format json && cat voicemail-0302.json\n"
    text += json.dumps(doc) + "\n"
    return text, (passphrase,)


@_shape("srt-subtitles-tutorial-demo-password-own-cue-line")
def _srt(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        14
        00:01:02,480 --> 00:01:05,900
        so log in with the demo account,
        the user is demo@kassensystem-example.de

        15
        00:01:05,900 --> 00:01:08,320
        and the password is

        16
        00:01:08,320 --> 00:01:10,010
        ‹p›

        17
        00:01:10,010 --> 00:01:13,640
        then click on "Filiale wechseln" at the top.
        """,
        p=password,
    )
    return text, (password,)


@_shape("pandas-dataframe-print-shared-accounts-password-column")
def _pandas_print(rng: random.Random) -> Built:
    first = _human(rng, marks="!#")
    second = _strong(rng, 14, marks="!#$%*+-=?@_")
    rows = [
        ("Canva Teams", "marketing@acme-example.com", first, "shared w/ agency"),
        ("Later", "social@acme-example.com", second, ""),
        ("Figma", "design@acme-example.com", "NaN", "SSO only"),
    ]
    header = ("service", "login", "password", "note")
    widths = [max(len(header[c]), *(len(r[c]) for r in rows)) for c in range(4)]
    lines = ["   " + "  ".join(header[c].rjust(widths[c]) for c in range(4))]
    for i, r in enumerate(rows):
        lines.append(f"{i}  " + "  ".join(r[c].rjust(widths[c]) for c in range(4)))
    text = ">>> df = pd.read_excel('shared_accounts.xlsx')\n>>> df\n" + "\n".join(lines) + "\n"
    return text, (first, second)


@_shape("csvlook-table-two-device-passwords")
def _csvlook(rng: random.Random) -> Built:
    first = _alnum(rng, 14)
    second = _human(rng, marks="!?")
    rows = [("Synology DSM", "admin", first, "Oskar"), ("UniFi Network", "ubnt-ops", second, "Oskar")]
    header = ("system", "user", "password", "owner")
    widths = [max(len(header[c]), *(len(r[c]) for r in rows)) for c in range(4)]

    def row(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(cells[c].ljust(widths[c]) for c in range(4)) + " |"

    lines = [row(header), "| " + " | ".join("-" * widths[c] for c in range(4)) + " |"] + [
        row(r) for r in rows
    ]
    text = "$ csvlook shared-logins.csv\n" + "\n".join(lines) + "\n"
    return text, (first, second)


@_shape("excel-2003-spreadsheetml-row-cells-password")
def _spreadsheetml(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#$%*+-=?@_")
    text = _fill(
        """
        <?xml version="1.0"?>
        <?mso-application progid="Excel.Sheet"?>
        <Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet"
         xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet">
         <Worksheet ss:Name="Zugänge">
          <Table>
           <Row>
            <Cell><Data ss:Type="String">System</Data></Cell>
            <Cell><Data ss:Type="String">Benutzer</Data></Cell>
            <Cell><Data ss:Type="String">Kennwort</Data></Cell>
           </Row>
           <Row>
            <Cell><Data ss:Type="String">DATEV Arbeitsplatz</Data></Cell>
            <Cell><Data ss:Type="String">buchhaltung2</Data></Cell>
            <Cell><Data ss:Type="String">‹p›</Data></Cell>
           </Row>
          </Table>
         </Worksheet>
        </Workbook>
        """,
        p=password,
    )
    return text, (password,)


@_shape("logseq-page-block-properties-password")
def _logseq(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        - [[Home Assistant]] setup #homelab
          collapsed:: true
        ‹tab›- url:: http://ha.lan:8123
        ‹tab›  user:: papa
        ‹tab›  password:: ‹p›
        ‹tab›- TODO rotate after the birthday party
        ‹tab›- zigbee stick on /dev/ttyUSB0
        """,
        p=password,
    )
    return text, (password,)


@_shape("evernote-enex-export-cdata-enml-router-password")
def _enex(rng: random.Random) -> Built:
    password = _alnum(rng, 20)
    text = _fill(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE en-export SYSTEM "http://xml.evernote.com/pub/evernote-export4.dtd">
        <en-export export-date="20260302T101112Z" application="Evernote" version="10.98.2">
          <note>
            <title>Router &amp; NAS</title>
            <created>20240513T081122Z</created>
            <updated>20260211T193011Z</updated>
            <note-attributes>
              <author>Marta</author>
            </note-attributes>
            <content>
              <![CDATA[<?xml version="1.0" encoding="UTF-8" standalone="no"?><!DOCTYPE en-note SYSTEM "http://xml.evernote.com/pub/enml2.dtd"><en-note><div>FRITZ!Box admin: <b>‹p›</b></div><div>NAS: see 1Password</div></en-note>]]>
            </content>
          </note>
        </en-export>
        """,
        p=password,
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# People writing in languages and scripts the earlier parts do not use, through carriers they do not use
# --------------------------------------------------------------------------------------------------------


@_shape("slovak-outlook-eml-docasne-heslo")
def _slovak(rng: random.Random) -> Built:
    password = _human(rng, marks="!?#")
    text = _fill(
        """
        From: IT podpora <podpora@stavby-example.sk>
        To: Martin Kováč <martin.kovac@stavby-example.sk>
        Subject: Váš nový účet
        Date: Mon, 2 Mar 2026 08:14:02 +0100
        Message-ID: <‹m›@stavby-example.sk>
        MIME-Version: 1.0
        Content-Type: text/plain; charset="utf-8"
        Content-Transfer-Encoding: 8bit

        Dobrý deň, Martin,

        Váš účet do systému bol vytvorený.
        Používateľské meno: mkovac
        Dočasné heslo: ‹p›

        Pri prvom prihlásení si heslo zmeňte.

        S pozdravom
        IT podpora
        """,
        m=_hexs(rng, 24),
        p=password,
    )
    return text, (password,)


@_shape("galician-thunderbird-mbox-contrasinal-provisional")
def _galician(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        From - Mon Mar  2 09:12:44 2026
        X-Mozilla-Status: 0001
        X-Mozilla-Status2: 00000000
        Return-Path: <secretaria@ies-example.gal>
        From: Secretaría IES <secretaria@ies-example.gal>
        To: Uxía Fernández <uxia.fernandez@ies-example.gal>
        Subject: Acceso á aula virtual
        Date: Mon, 2 Mar 2026 09:12:40 +0100
        Content-Type: text/plain; charset=UTF-8
        Content-Transfer-Encoding: 8bit

        Ola Uxía:

        Xa tes activada a conta na aula virtual.
        Usuario: ufernandez
        O teu contrasinal provisional é ‹p›

        Cámbiao despois de entrar por primeira vez.

        Un saúdo,
        Secretaría
        """,
        p=password,
    )
    return text, (password,)


@_shape("irish-graph-api-message-json-pasfhocal-sealadach")
def _irish(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    content = (
        "A Sheáin,\r\n\r\nTá do chuntas réidh.\r\nAinm úsáideora: sdebarra\r\n"
        f"Pasfhocal sealadach: {password}\r\n\r\nAthraigh é nuair a logálann tú isteach den chéad uair.\r\n\r\n"
        "Le meas,\r\nAn Deasc Chabhrach"
    )
    message = {
        "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users('sean.debarra%40comhairle-example.ie')/messages/$entity",
        "id": "AAMkAG" + _b64u(rng, 90),
        "receivedDateTime": f"{_date(rng)}T{_time(rng)}Z",
        "subject": "Do chuntas nua",
        "importance": "normal",
        "isRead": False,
        "body": {"contentType": "text", "content": content},
        "from": {"emailAddress": {"name": "An Deasc Chabhrach", "address": "cabhair@comhairle-example.ie"}},
    }
    text = (
        "GET https://graph.microsoft.com/v1.0/me/messages/{id}\n"
        + json.dumps(message, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("luxembourgish-pidgin-html-log-passwuert")
def _luxembourgish(rng: random.Random) -> Built:
    password = _alnum(rng, 16)
    text = _fill(
        """
        <html><head><meta http-equiv="content-type" content="text/html; charset=UTF-8"><title>Conversation with jang@jabber.example.lu at Mon 02 Mar 2026 10:02:11 CET on mett@jabber.example.lu/Home (jabber)</title></head><body><h3>Conversation with jang@jabber.example.lu at Mon 02 Mar 2026 10:02:11 CET on mett@jabber.example.lu/Home (jabber)</h3>
        <font color="#A82F2F"><font size="2">(10:02:11)</font> <b>jang:</b></font> Moien! Hues de d'Passwuert fir de Router vum Veräin nach?<br/>
        <font color="#16569E"><font size="2">(10:03:40)</font> <b>mett:</b></font> Jo, d'Passwuert ass ‹p›<br/>
        <font color="#A82F2F"><font size="2">(10:04:02)</font> <b>jang:</b></font> Merci villmools!<br/>
        </body></html>
        """,
        p=password,
    )
    return text, (password,)


@_shape("macedonian-gmail-api-metadata-snippet-lozinka")
def _macedonian(rng: random.Random) -> Built:
    password = _human(rng, marks="!?")
    message = {
        "id": _hexs(rng, 16),
        "threadId": _hexs(rng, 16),
        "labelIds": ["UNREAD", "IMPORTANT", "CATEGORY_PERSONAL", "INBOX"],
        "snippet": f"Здраво Ана, твојата лозинка за порталот е {password} Најави се и смени ја веднаш. Поздрав, Марко",
        "payload": {
            "mimeType": "multipart/alternative",
            "headers": [
                {"name": "From", "value": "Марко Стојанов <marko@zadruga-example.mk>"},
                {"name": "Subject", "value": "Пристап до порталот"},
                {"name": "Date", "value": "Mon, 2 Mar 2026 09:41:17 +0100"},
            ],
        },
        "sizeEstimate": rng.randint(4000, 9000),
        "historyId": _digits(rng, 7),
        "internalDate": str(_epoch(rng) * 1000),
    }
    text = (
        "GET https://gmail.googleapis.com/gmail/v1/users/me/messages/{id}?format=metadata\n"
        + json.dumps(message, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("belarusian-vk-takeout-html-message-parol")
def _belarusian(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    text = _fill(
        """
        <div class="item">
          <div class="item__main">
            <div class="message" data-id="‹id›">
              <div class="message__header"><a href="https://vk.com/id‹uid›">Алесь Каваль</a>, 2 сак 2026 в 10:14:22</div>
              <div>Пароль ад wi-fi на лецішчы: ‹p›<div class="kludges"></div></div>
            </div>
          </div>
        </div>
        """,
        id=_digits(rng, 5),
        uid=_digits(rng, 9),
        p=password,
    )
    return text, (password,)


@_shape("mongolian-gitlab-issue-notes-api-nuuts-ug")
def _mongolian(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%*+-=?@_")
    notes = [
        {
            "id": int(_digits(rng, 9)),
            "type": None,
            "body": f"Сервер бэлэн боллоо. Нэвтрэх нэр: deploy, нууц үг: {password}",
            "author": {"id": int(_digits(rng, 6)), "username": "bbat", "name": "Батбаяр"},
            "created_at": _stamp(rng),
            "system": False,
            "noteable_id": int(_digits(rng, 6)),
            "noteable_type": "Issue",
            "noteable_iid": 42,
            "resolvable": False,
            "confidential": False,
            "internal": False,
        }
    ]
    text = (
        "$ glab api projects/ops%2Finfra/issues/42/notes\n"
        + json.dumps(notes, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("uzbek-proton-mail-export-eml-vaqtinchalik-parol")
def _uzbek(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    message_id = _b64u(rng, 48) + "=="
    text = _fill(
        """
        $ ls ~/Proton\\ Export/mail_20260302_101112/
        ‹mid›.eml  ‹mid›.metadata.json
        $ cat ~/Proton\\ Export/mail_20260302_101112/‹mid›.eml
        Subject: Hisobingiz tayyor
        From: "Buxgalteriya" <buxgalteriya@savdo-example.uz>
        To: dilnoza.r@proton.example
        Date: Mon, 02 Mar 2026 10:02:31 +0500
        Content-Type: text/plain; charset=utf-8

        Assalomu alaykum, Dilnoza!

        1C tizimiga kirish uchun ma'lumotlar:
        Login: dilnoza.r
        Vaqtinchalik parol: ‹p›

        Birinchi kirishda parolni o'zgartiring.
        """,
        mid=message_id,
        p=password,
    )
    return text, (password,)


@_shape("azerbaijani-sinch-inbound-sms-json-sifre")
def _azerbaijani(rng: random.Random) -> Built:
    password = _brief(rng)
    event = {
        "id": "01J" + _pick(rng, "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23),
        "from": "+99450" + _digits(rng, 7),
        "to": "4477",
        "body": f"Kabinetə giriş üçün müvəqqəti şifrəniz: {password} . Daxil olduqdan sonra dəyişin.",
        "type": "mo_text",
        "operator_id": "40001",
        "received_at": _stamp(rng),
    }
    text = (
        "POST /webhooks/sinch/inbound HTTP/1.1\nContent-Type: application/json\n\n"
        + json.dumps(event, ensure_ascii=False)
        + "\n"
    )
    return text, (password,)


@_shape("amharic-telegram-bot-api-getupdates-yeyilef-qal")
def _amharic(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    user = int(_digits(rng, 10))
    updates = {
        "ok": True,
        "result": [
            {
                "update_id": int(_digits(rng, 9)),
                "message": {
                    "message_id": rng.randint(100, 999),
                    "from": {"id": user, "is_bot": False, "first_name": "ሰላማዊት", "language_code": "am"},
                    "chat": {"id": user, "first_name": "ሰላማዊት", "type": "private"},
                    "date": _epoch(rng),
                    "text": f"የቢሮው ዋይፋይ የይለፍ ቃል: {password}",
                },
            }
        ],
    }
    text = (
        "$ curl -s https://api.telegram.org/bot$BOT_TOKEN/getUpdates | jq .\n"
        + json.dumps(updates, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("hausa-whatsapp-cloud-api-webhook-kalmar-sirri")
def _hausa(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    wa = "234" + _digits(rng, 10)
    payload = {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": _digits(rng, 15),
                "changes": [
                    {
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {
                                "display_phone_number": "2348000000000",
                                "phone_number_id": _digits(rng, 15),
                            },
                            "contacts": [{"profile": {"name": "Aminu"}, "wa_id": wa}],
                            "messages": [
                                {
                                    "from": wa,
                                    "id": "wamid." + _b64s(rng, 36),
                                    "timestamp": str(_epoch(rng)),
                                    "text": {
                                        "body": f"Kalmar sirri ta sabon asusun: {password} . Ka canza ta bayan ka shiga."
                                    },
                                    "type": "text",
                                }
                            ],
                        },
                        "field": "messages",
                    }
                ],
            }
        ],
    }
    text = json.dumps(payload, ensure_ascii=False) + "\n"
    return text, (password,)


@_shape("zulu-apple-mail-emlx-iphasiwedi")
def _zulu(rng: random.Random) -> Built:
    password = _human(rng, marks="!?")
    body = _fill(
        """
        Return-Path: <usizo@ikolishi-example.co.za>
        From: Usizo lwe-IT <usizo@ikolishi-example.co.za>
        To: Thandi Ndlovu <thandi.ndlovu@ikolishi-example.co.za>
        Subject: I-akhawunti yakho entsha
        Date: Mon, 2 Mar 2026 08:02:11 +0200
        Content-Type: text/plain; charset=utf-8

        Sawubona Thandi,

        I-akhawunti yakho isilungile.
        Igama lomsebenzisi: tndlovu
        Iphasiwedi yesikhashana: ‹p›

        Sicela uyishintshe uma ungena okokuqala.

        Ngiyabonga,
        Usizo lwe-IT
        """,
        p=password,
    )
    plist = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" '
        '"http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n'
        f"\t<key>date-last-viewed</key>\n\t<integer>{_epoch(rng)}</integer>\n"
        "\t<key>flags</key>\n\t<integer>8590195713</integer>\n</dict>\n</plist>\n"
    )
    text = f"{len(body.encode())}\n{body}{plist}"
    return text, (password,)


@_shape("nepali-facebook-page-conversations-json-password")
def _nepali(rng: random.Random) -> Built:
    password = _alnum(rng, 10)
    data = {
        "data": [
            {
                "messages": {
                    "data": [
                        {
                            "message": f"नमस्ते दाइ, होटलको वाइफाइ पासवर्ड {password} हो।",
                            "from": {"name": "Hotel Himal View", "id": _digits(rng, 15)},
                            "created_time": f"{_date(rng)}T{_time(rng)}+0000",
                            "id": "m_" + _b64u(rng, 54),
                        }
                    ]
                },
                "id": "t_" + _digits(rng, 15),
            }
        ]
    }
    text = (
        "GET /v21.0/me/conversations?fields=messages{message,from,created_time}\n"
        + json.dumps(data, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("punjabi-notmuch-show-format-json-password")
def _punjabi(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    content = f"ਸਤ ਸ੍ਰੀ ਅਕਾਲ ਜੀ,\n\nਤੁਹਾਡਾ ਖਾਤਾ ਤਿਆਰ ਹੈ।\nਯੂਜ਼ਰਨੇਮ: hsingh\nਪਾਸਵਰਡ: {password}\n\nਪਹਿਲੀ ਵਾਰ ਲੌਗਇਨ ਕਰਨ ਤੋਂ ਬਾਅਦ ਪਾਸਵਰਡ ਬਦਲ ਲਓ।\n"
    msg_id = f"{_hexs(rng, 16)}@mail.gurdwara-example.org"
    data = [
        [
            [
                {
                    "id": msg_id,
                    "match": True,
                    "excluded": False,
                    "filename": [
                        f"/home/harpreet/mail/INBOX/cur/{_epoch(rng)}.M{_digits(rng, 6)}P1234.box:2,"
                    ],
                    "timestamp": _epoch(rng),
                    "date_relative": "Today 10:11",
                    "tags": ["inbox", "unread"],
                    "body": [{"id": 1, "content-type": "text/plain", "content": content}],
                    "crypto": {},
                    "headers": {
                        "Subject": "ਨਵਾਂ ਖਾਤਾ",
                        "From": "ਦਫ਼ਤਰ <office@gurdwara-example.org>",
                        "To": "harpreet@mail.example",
                        "Date": "Mon, 02 Mar 2026 10:11:02 +0530",
                    },
                },
                [],
            ]
        ]
    ]
    text = f"$ notmuch show --format=json id:{msg_id}\n" + json.dumps(data, ensure_ascii=False) + "\n"
    return text, (password,)


@_shape("gujarati-help-scout-thread-json-html-body")
def _gujarati(rng: random.Random) -> Built:
    password = _human(rng, marks="@!")
    data = {
        "_embedded": {
            "threads": [
                {
                    "id": int(_digits(rng, 10)),
                    "type": "customer",
                    "status": "active",
                    "state": "published",
                    "body": f"<p>નમસ્તે,</p><p>મારું યુઝરનેમ kpatel છે અને પાસવર્ડ {password} છે, પણ લોગિન થતું નથી. કૃપા કરીને મદદ કરો.</p>",
                    "createdBy": {
                        "id": int(_digits(rng, 9)),
                        "type": "customer",
                        "first": "Kiran",
                        "last": "Patel",
                    },
                    "createdAt": f"{_date(rng)}T{_time(rng)}Z",
                }
            ]
        }
    }
    text = (
        "GET https://api.helpscout.net/v2/conversations/{id}/threads\n"
        + json.dumps(data, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("telugu-adb-dumpsys-notification-noredact-extras")
def _telugu(rng: random.Random) -> Built:
    password = _alnum(rng, 11)
    text = _fill(
        """
        $ adb shell dumpsys notification --noredact | grep -A14 'pkg=com.whatsapp'
            NotificationRecord(0x‹a›: pkg=com.whatsapp user=UserHandle{0} id=1 tag=null importance=4 key=0|com.whatsapp|1|null|10211: Notification(channel=individual_chat_defaults_5 shortcut=‹s›@s.whatsapp.net contentView=null vibrate=null sound=null defaults=0x0 flags=0x8 color=0xff25d366 category=msg groupKey=group_key_messages vis=PRIVATE))
              uid=10211 userId=0
              opPkg=com.whatsapp
              icon=Icon(typ=RESOURCE pkg=com.whatsapp id=0x7f0809d5)
              when=‹w›
              extras={
                android.title=String (రవి అన్నయ్య)
                android.text=String (ఆఫీస్ వైఫై పాస్‌వర్డ్: ‹p›)
                android.subText=null
                android.showWhen=Boolean (true)
                android.template=String (android.app.Notification$MessagingStyle)
              }
        """,
        a=_hexs(rng, 8),
        s="91" + _digits(rng, 10),
        w=str(_epoch(rng) * 1000),
        p=password,
    )
    return text, (password,)


@_shape("malayalam-sigtop-export-messages-text")
def _malayalam(rng: random.Random) -> Built:
    password = _human(rng, marks="#!")
    text = _fill(
        """
        $ sigtop export-messages -f text ~/signal-export && cat ~/signal-export/അമ്മ*.txt | tail -n 8
        Conversation: അമ്മ (+9198‹n›)

        From: അമ്മ (+9198‹n›)
        Sent: Mon, 02 Mar 2026 10:14:02 +0530
        Received: Mon, 02 Mar 2026 10:14:05 +0530

        മോനേ, ബാങ്ക് ആപ്പിന്റെ പാസ്‌വേഡ് ‹p› ആണ്, മറക്കരുത്
        """,
        n=_digits(rng, 8),
        p=password,
    )
    return text, (password,)


@_shape("sinhala-docx-document-xml-runs-murapadaya")
def _sinhala(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#$%*+-=?@_")
    text = _fill(
        """
        $ unzip -p onboarding.docx word/document.xml
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>පද්ධතියට ඇතුළු වීමේ විස්තර</w:t></w:r></w:p><w:p><w:r><w:t xml:space="preserve">පරිශීලක නාමය: </w:t></w:r><w:r><w:t>nperera</w:t></w:r></w:p><w:p><w:r><w:t xml:space="preserve">මුරපදය: </w:t></w:r><w:r><w:rPr><w:b/></w:rPr><w:t>‹p›</w:t></w:r></w:p><w:sectPr><w:pgSz w:w="11906" w:h="16838"/></w:sectPr></w:body></w:document>
        """,
        p=password,
    )
    return text, (password,)


@_shape("burmese-telethon-message-repr-sakar-hwet")
def _burmese(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    uid = _digits(rng, 10)
    message = f"ရုံး Wi-Fi စကားဝှက်က {password} ပါ"
    text = (
        ">>> print(msg)\n"
        f"Message(id={rng.randint(1000, 9999)}, peer_id=PeerUser(user_id={uid}), "
        f"date=datetime.datetime(2026, 3, 2, 3, 44, 12, tzinfo=datetime.timezone.utc), message={message!r}, "
        "out=False, mentioned=False, media_unread=False, silent=False, post=False, from_scheduled=False, "
        "legacy=False, edit_hide=False, pinned=False, noforwards=False, invert_media=False, offline=False, "
        f"from_id=PeerUser(user_id={uid}), fwd_from=None, via_bot_id=None, reply_to=None, media=None, "
        "reply_markup=None, entities=[], views=None, forwards=None, replies=None, edit_date=None, post_author=None, "
        "grouped_id=None, reactions=None, restriction_reason=[], ttl_period=None)\n"
    )
    return text, (password,)


@_shape("khmer-mmcli-received-sms-text-field")
def _khmer(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        $ mmcli -m 0 --messaging-list-sms
            /org/freedesktop/ModemManager1/SMS/3 (received)
        $ mmcli -s 3
          -----------------------------------
          General    |                  path: /org/freedesktop/ModemManager1/SMS/3
          -----------------------------------
          Content    |                number: +855‹n›
                     |                  text: ពាក្យសម្ងាត់ Wi-Fi ហាង: ‹p›
          -----------------------------------
          Properties |              pdu type: deliver
                     |                 state: received
                     |               storage: me
                     |                  smsc: +85512000013
                     |             timestamp: 2026-03-02T10:14:02+07:00
        """,
        n=_digits(rng, 8),
        p=password,
    )
    return text, (password,)


@_shape("lao-keybase-chat-read-lahat-phan")
def _lao(rng: random.Random) -> Built:
    password = _alnum(rng, 10)
    text = _fill(
        """
        $ keybase chat read somsak_v --max-unread 0
        [somsak_v 2 hours ago] ສະບາຍດີ! ລະຫັດຜ່ານ wifi ຫ້ອງການແມ່ນ ‹p›
        [noy_k 2 hours ago] ຂອບໃຈຫຼາຍໆ
        """,
        p=password,
    )
    return text, (password,)


@_shape("esperanto-matrix-client-messages-json-pasvorto")
def _esperanto(rng: random.Random) -> Built:
    password = _passphrase(rng, 3, "-")
    room = "!" + _pick(rng, _LETTERS_DIGITS, 18) + ":matrix.org"
    data = {
        "chunk": [
            {
                "type": "m.room.message",
                "room_id": room,
                "sender": "@lidia:matrix.org",
                "content": {
                    "msgtype": "m.text",
                    "body": f"La pasvorto por la komuna konto de la klubo estas {password}",
                },
                "origin_server_ts": _epoch(rng) * 1000,
                "unsigned": {"age": rng.randint(1000, 90000)},
                "event_id": "$" + _b64u(rng, 32),
            }
        ],
        "start": "t" + _digits(rng, 6) + "-" + _digits(rng, 8),
        "end": "t" + _digits(rng, 6) + "-" + _digits(rng, 8),
    }
    text = (
        "GET /_matrix/client/v3/rooms/{roomId}/messages?dir=b&limit=1\n"
        + json.dumps(data, ensure_ascii=False, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("kurdish-sorani-google-meet-chat-transcript-wshay-nheni")
def _kurdish(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%*+-=?@_")
    text = _fill(
        """
        00:03:58.102,00:03:58.102
        هێمن : ئایا هەمووان دەتوانن بچنە ژوورەوە؟

        00:04:12.431,00:04:12.431
        ئاریان : وشەی نهێنی سێرڤەرەکە: ‹p›

        00:04:30.007,00:04:30.007
        هێمن : سوپاس
        """,
        p=password,
    )
    return text, (password,)


@_shape("pashto-google-voice-takeout-html-patnom")
def _pashto(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    text = _fill(
        """
        <div class="hChatLog hfeed">
        <div class="message"><abbr class="dt" title="2026-03-02T10:14:02.000+04:30">Mar 2, 2026, 10:14:02 AM GMT+04:30</abbr>:
        <cite class="sender vcard"><a class="tel" href="tel:+9370‹n›"><span class="fn">Zalmai</span></a></cite>:
        <q>د دفتر د وای فای پټنوم: ‹p›</q>
        </div>
        <div class="message"><abbr class="dt" title="2026-03-02T10:15:40.000+04:30">Mar 2, 2026, 10:15:40 AM GMT+04:30</abbr>:
        <cite class="sender vcard"><a class="tel" href="tel:+1617‹m›"><abbr class="fn" title="">Me</abbr></a></cite>:
        <q>مننه</q>
        </div>
        </div>
        """,
        n=_digits(rng, 7),
        m=_digits(rng, 7),
        p=password,
    )
    return text, (password,)


@_shape("faroese-email-quoted-reply-loyniord")
def _faroese(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        Subject: Re: Prentarin á skrivstovuni
        From: Rógvi Joensen <rogvi@skuli-example.fo>
        To: Jóanis Poulsen <joanis@skuli-example.fo>

        Loyniorðið er ‹p›

        Vh.
        Rógvi

        Tann 2. mars 2026 kl. 09:12 skrivaði Jóanis Poulsen <joanis@skuli-example.fo>:
        > Hey Rógvi,
        > hvat er loyniorðið til prentaran á skrivstovuni?
        > Takk!
        """,
        p=password,
    )
    return text, (password,)


@_shape("west-frisian-nextcloud-talk-chat-api-wachtwurd")
def _frisian(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    data = {
        "ocs": {
            "meta": {"status": "ok", "statuscode": 200, "message": "OK"},
            "data": [
                {
                    "id": rng.randint(500, 9000),
                    "token": _lower_alnum(rng, 8),
                    "actorType": "users",
                    "actorId": "sjoukje",
                    "actorDisplayName": "Sjoukje",
                    "timestamp": _epoch(rng),
                    "message": f"It wachtwurd fan it gasten-wifi is {password}",
                    "messageParameters": [],
                    "systemMessage": "",
                    "messageType": "comment",
                    "isReplyable": True,
                    "referenceId": _hexs(rng, 64),
                }
            ],
        }
    }
    text = (
        "GET /ocs/v2.php/apps/spreed/api/v1/chat/{token}?lookIntoFuture=0&limit=1\n"
        + json.dumps(data, ensure_ascii=False, indent=1)
        + "\n"
    )
    return text, (password,)


@_shape("kyrgyz-huawei-lte-router-sms-list-xml-syrsoz")
def _kyrgyz(rng: random.Random) -> Built:
    password = _alnum(rng, 10)
    text = _fill(
        """
        POST /api/sms/sms-list -> 200
        <?xml version="1.0" encoding="UTF-8"?>
        <response>
        <Count>1</Count>
        <Messages>
        <Message>
        <Smstat>0</Smstat>
        <Index>40001</Index>
        <Phone>+996555‹n›</Phone>
        <Content>Сиздин убактылуу сырсөзүңүз: ‹p›. Аны эч кимге айтпаңыз.</Content>
        <Date>2026-03-02 10:14:02</Date>
        <Sca></Sca>
        <SaveType>0</SaveType>
        <Priority>0</Priority>
        <SmsType>1</SmsType>
        </Message>
        </Messages>
        </response>
        """,
        n=_digits(rng, 6),
        p=password,
    )
    return text, (password,)


@_shape("tajik-gammu-getallsms-ramz")
def _tajik(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        $ gammu getallsms
        Location 3, folder "Inbox", SIM memory, Inbox folder
        SMS message
        SMSC number          : "+992935999999"
        Sent                 : Mon 02 Mar 2026 10:14:02 AM  +0500
        Coding               : Unicode (UCS-2)
        Remote number        : "+99290‹n›"
        Status               : UnRead

        Рамзи нави шумо: ‹p›. Онро ба касе нагӯед.

        1 SMS parts in 1 SMS sequences
        """,
        n=_digits(rng, 7),
        p=password,
    )
    return text, (password,)


@_shape("haitian-creole-x-archive-direct-messages-js-modpas")
def _haitian(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    a, b = _digits(rng, 18), _digits(rng, 10)
    data = [
        {
            "dmConversation": {
                "conversationId": f"{a}-{b}",
                "messages": [
                    {
                        "messageCreate": {
                            "recipientId": b,
                            "reactions": [],
                            "urls": [],
                            "text": f"Modpas wifi lakay la se {password} wi, pa bay pèsonn li",
                            "mediaUrls": [],
                            "senderId": a,
                            "id": _digits(rng, 19),
                            "createdAt": _stamp(rng),
                        }
                    }
                ],
            }
        }
    ]
    body = json.dumps(data, ensure_ascii=False, indent=2).replace('": ', '" : ')
    text = "window.YTD.direct_messages.part0 = " + body + "\n"
    return text, (password,)


@_shape("kinyarwanda-linkedin-messages-csv-ijambo-ryibanga")
def _kinyarwanda(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    conversation = "2-" + _b64s(rng, 30)
    text = _fill(
        """
        CONVERSATION ID,CONVERSATION TITLE,FROM,SENDER PROFILE URL,TO,RECIPIENT PROFILE URLS,DATE,SUBJECT,CONTENT,FOLDER
        ‹c›,,Eric Habimana,https://www.linkedin.com/in/eric-habimana,Aline Uwase,https://www.linkedin.com/in/aline-uwase,2026-03-02 10:14:02 UTC,,"Muraho Aline, ijambo ry'ibanga rya konti ya CRM ni ‹p› . Urihindure umaze kwinjira.",INBOX
        ‹c›,,Aline Uwase,https://www.linkedin.com/in/aline-uwase,Eric Habimana,https://www.linkedin.com/in/eric-habimana,2026-03-02 10:20:45 UTC,,Murakoze cyane!,INBOX
        """,
        c=conversation,
        p=password,
    )
    return text, (password,)


@_shape("malagasy-instagram-dm-export-json-teny-miafina")
def _malagasy(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    data = {
        "participants": [{"name": "Hery"}, {"name": "Voahangy"}],
        "messages": [
            {
                "sender_name": "Voahangy",
                "timestamp_ms": _epoch(rng) * 1000 + 5000,
                "content": "Misaotra!",
                "is_geoblocked_for_viewer": False,
            },
            {
                "sender_name": "Hery",
                "timestamp_ms": _epoch(rng) * 1000,
                "content": f"Ny teny miafina an'ny Wi-Fi dia {password}",
                "is_geoblocked_for_viewer": False,
            },
        ],
        "title": "Hery",
        "is_still_participant": True,
        "thread_path": "inbox/hery_" + _digits(rng, 16),
        "magic_words": [],
    }
    text = (
        "$ cat your_instagram_activity/messages/inbox/hery_*/message_1.json\n"
        + json.dumps(data, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("scottish-gaelic-quoted-printable-email-facal-faire")
def _gaelic(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        From: Deasg-taice <taic@comhairle-example.scot>
        To: Calum MacLeòid <calum.macleoid@comhairle-example.scot>
        Subject: =?UTF-8?Q?An_cunntas_=C3=B9r_agad?=
        MIME-Version: 1.0
        Content-Type: text/plain; charset="utf-8"
        Content-Transfer-Encoding: quoted-printable

        Hal=C3=B2 a Chalum,

        Tha an cunntas agad deiseil.
        Ainm-cleachdaiche: cmacleoid
        Facal-faire sealach: ‹p›

        Atharraich e nuair a chl=C3=A0raicheas tu a-steach an toiseach.

        Le deagh dh=C3=B9rachd,
        An Deasg-taice
        """,
        p=password,
    )
    return text, (password,)


@_shape("breton-icalendar-description-folded-ger-tremen")
def _breton(rng: random.Random) -> Built:
    password = _alnum(rng, 12)
    text = _fill(
        """
        BEGIN:VCALENDAR
        VERSION:2.0
        PRODID:-//IDN nextcloud.com//Calendar app 5.0.9//EN
        BEGIN:VEVENT
        UID:‹u›
        DTSTAMP:20260302T091244Z
        DTSTART;TZID=Europe/Paris:20260305T140000
        DTEND;TZID=Europe/Paris:20260305T150000
        SUMMARY:Emvod ar skipailh
        LOCATION:https://visio.skol-example.bzh/emvod-skipailh
        DESCRIPTION:Demat d'an holl\\,\\nAn emvod a vo war ar webgaoz.\\nGer-tremen
          ar sal: ‹p›\\nKenavo
        END:VEVENT
        END:VCALENDAR
        """,
        u=_guid(rng),
        p=password,
    )
    return text, (password,)


@_shape("tatar-vcard-note-field-sersuz")
def _tatar(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        BEGIN:VCARD
        VERSION:3.0
        FN:Рәшит Гарипов
        N:Гарипов;Рәшит;;;
        TEL;TYPE=CELL:+7 917 ‹n›
        NOTE:Дачадагы роутер серсүзе: ‹p›
        END:VCARD
        """,
        n=f"{_digits(rng, 3)}-{rng.randint(10, 99)}-{rng.randint(10, 99)}",
        p=password,
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# Documents without a credential
# --------------------------------------------------------------------------------------------------------


@_clean_shape("clean-openai-authentication-error-masked-key-echo")
def _clean_openai_error(rng: random.Random) -> str:
    masked = "sk-svcac" + "*" * 150 + _alnum(rng, 4)
    error = {
        "error": {
            "message": f"Incorrect API key provided: {masked}. You can find your API key at https://platform.openai.com/account/api-keys.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    return _fill(
        """
        Traceback (most recent call last):
          File "/srv/evals/run.py", line 88, in <module>
            main()
          File "/srv/evals/run.py", line 61, in main
            resp = client.chat.completions.create(model="gpt-4.1-mini", messages=msgs)
        openai.AuthenticationError: Error code: 401 - ‹e›
        x-request-id: req_‹r›
        """,
        e=repr(error),
        r=_hexs(rng, 32),
    )


@_clean_shape("clean-dotnet8-httpclient-log-authorization-redacted-star")
def _clean_dotnet_log(rng: random.Random) -> str:
    trace, span = _hexs(rng, 32), _hexs(rng, 16)
    return _fill(
        """
        info: System.Net.Http.HttpClient.billing.LogicalHandler[100]
              Start processing HTTP request POST https://api.billing-example.com/v1/invoices
        trce: System.Net.Http.HttpClient.billing.LogicalHandler[102]
              Request Headers:
              Authorization: *
              traceparent: 00-‹t›-‹s›-01
              Content-Type: application/json; charset=utf-8
        info: System.Net.Http.HttpClient.billing.ClientHandler[101]
              Received HTTP response headers after 212.4411ms - 201
        trce: System.Net.Http.HttpClient.billing.ClientHandler[103]
              Response Headers:
              Set-Cookie: *
              X-Request-Id: ‹r›
        """,
        t=trace,
        s=span,
        r=_guid(rng),
    )


@_clean_shape("clean-cloudtrail-create-login-profile-hidden-password")
def _clean_cloudtrail(rng: random.Random) -> str:
    acct = _digits(rng, 12)
    event = {
        "eventVersion": "1.10",
        "userIdentity": {
            "type": "AssumedRole",
            "principalId": "AROA" + _upper_alnum(rng, 17) + ":vkumar",
            "arn": f"arn:aws:sts::{acct}:assumed-role/platform-admin/vkumar",
            "accountId": acct,
            "accessKeyId": "ASIA" + _upper_alnum(rng, 16),
        },
        "eventTime": f"{_date(rng)}T{_time(rng)}Z",
        "eventSource": "iam.amazonaws.com",
        "eventName": "CreateLoginProfile",
        "awsRegion": "us-east-1",
        "sourceIPAddress": "198.51.100.24",
        "requestParameters": {
            "userName": "contractor-jlee",
            "password": "HIDDEN_DUE_TO_SECURITY_REASONS",
            "passwordResetRequired": True,
        },
        "responseElements": {
            "loginProfile": {
                "userName": "contractor-jlee",
                "createDate": "Mar 2, 2026, 10:11:12 AM",
                "passwordResetRequired": True,
            }
        },
        "requestID": _guid(rng),
        "eventID": _guid(rng),
        "readOnly": False,
        "eventType": "AwsApiCall",
    }
    return json.dumps(event, indent=2) + "\n"


@_clean_shape("clean-znc-conf-pass-block-sha256-hash-and-salt")
def _clean_znc(rng: random.Random) -> str:
    return _fill(
        """
        <User admin>
        ‹tab›<Pass password>
        ‹tab›‹tab›Method = sha256
        ‹tab›‹tab›Hash = ‹h›
        ‹tab›‹tab›Salt = ‹s›
        ‹tab›</Pass>
        ‹tab›Admin      = true
        ‹tab›Nick       = kestrel
        ‹tab›AltNick    = kestrel_
        ‹tab›Ident      = kestrel
        ‹tab›LoadModule = chansaver
        ‹tab›LoadModule = controlpanel
        </User>
        """,
        h=_hexs(rng, 64),
        s=_pick(rng, _LETTERS_DIGITS + "!?.,:;/*-+_()", 20),
    )


@_clean_shape("clean-pihole-toml-webserver-balloon-pwhash")
def _clean_pihole(rng: random.Random) -> str:
    return _fill(
        """
        [webserver.api]
          # Pi-hole web interface and API password hash. Set via `pihole setpassword`
          pwhash = "$BALLOON-SHA256$v=1$s=1024,t=32$‹s›$‹h›"
          # Application passwords are stored as hashes, too
          app_pwhash = ""
          # TOTP secret for two-factor authentication (empty = disabled)
          totp_secret = ""
          app_sudo = false
          max_sessions = 16
        """,
        s=_b64s(rng, 16),
        h=_b64s(rng, 32),
    )


@_clean_shape("clean-sip-register-digest-authorization-response-hash")
def _clean_sip(rng: random.Random) -> str:
    return _fill(
        """
        REGISTER sip:pbx.praxis-example.at SIP/2.0
        Via: SIP/2.0/UDP 192.168.10.41:5060;branch=z9hG4bK‹b›;rport
        Max-Forwards: 70
        From: <sip:2001@pbx.praxis-example.at>;tag=‹tag›
        To: <sip:2001@pbx.praxis-example.at>
        Call-ID: ‹cid›
        CSeq: 2 REGISTER
        Contact: <sip:2001@192.168.10.41:5060>
        Authorization: Digest username="2001", realm="asterisk", nonce="‹n›", uri="sip:pbx.praxis-example.at", response="‹r›", algorithm=MD5
        Expires: 3600
        User-Agent: Yealink SIP-T46U 108.86.0.45
        Content-Length: 0
        """,
        b=_hexs(rng, 10),
        tag=_hexs(rng, 10),
        cid=_guid(rng),
        n=_hexs(rng, 8) + "/" + _hexs(rng, 32),
        r=_hexs(rng, 32),
    )


@_clean_shape("clean-dotenvx-env-public-key-and-encrypted-values-only")
def _clean_dotenvx(rng: random.Random) -> str:
    return _fill(
        """
        #/-------------------[DOTENV_PUBLIC_KEY]--------------------/
        #/            public-key encryption for .env files          /
        #/       [how it works](https://dotenvx.com/encryption)     /
        #/----------------------------------------------------------/
        DOTENV_PUBLIC_KEY_PRODUCTION="‹p›"

        # .env.production
        DATABASE_URL="encrypted:‹a›"
        STRIPE_SECRET_KEY="encrypted:‹b›"
        LOG_LEVEL="info"
        """,
        p="03" + _hexs(rng, 64),
        a=_b64s(rng, 118),
        b=_b64s(rng, 100),
    )


@_clean_shape("clean-ejson-file-public-key-and-encrypted-boxes")
def _clean_ejson(rng: random.Random) -> str:
    def box() -> str:
        return f"EJ[1:{_b64s(rng, 32)}:{_b64s(rng, 24)}:{_b64s(rng, 40)}]"

    doc = {
        "_public_key": _hexs(rng, 64),
        "database_password": box(),
        "api": {"_comment": "rotated 2026-02", "token": box()},
    }
    return "$ cat config/secrets.staging.ejson\n" + json.dumps(doc, indent=2) + "\n"


@_clean_shape("clean-pubnub-browser-client-publish-subscribe-keys")
def _clean_pubnub(rng: random.Random) -> str:
    return _fill(
        """
        <script src="https://cdn.pubnub.com/sdk/javascript/pubnub.8.9.0.min.js"></script>
        <script>
          const pubnub = new PubNub({
            publishKey: "pub-c-‹p›",
            subscribeKey: "sub-c-‹s›",
            userId: "guest-‹u›",
          });
          pubnub.subscribe({ channels: ["scoreboard"] });
        </script>
        """,
        p=_guid(rng),
        s=_guid(rng),
        u=_hexs(rng, 8),
    )


@_clean_shape("clean-foundry-cast-receipt-hashes-and-topics")
def _clean_cast_receipt(rng: random.Random) -> str:
    def h() -> str:
        return "0x" + _hexs(rng, 64)

    return _fill(
        """
        $ cast receipt ‹tx› --rpc-url $SEPOLIA_RPC_URL

        blockHash               ‹bh›
        blockNumber             7421188
        contractAddress
        cumulativeGasUsed       9214411
        effectiveGasPrice       1210441772
        from                    0x‹f›
        gasUsed                 51234
        logs                    [{"address":"0x‹c›","topics":["‹t1›","‹t2›","‹t3›"],"data":"‹d›","blockHash":"‹bh›","blockNumber":"0x713d04","transactionHash":"‹tx›","transactionIndex":"0x2a","logIndex":"0x41","removed":false}]
        status                  1 (success)
        transactionHash         ‹tx›
        transactionIndex        42
        type                    2
        to                      0x‹c›
        """,
        tx=h(),
        bh=h(),
        f=_hexs(rng, 40),
        c=_hexs(rng, 40),
        t1=h(),
        t2=h(),
        t3=h(),
        d=h(),
    )


@_clean_shape("clean-solana-transfer-signature-and-pubkeys")
def _clean_solana(rng: random.Random) -> str:
    return _fill(
        """
        $ solana address
        ‹a›
        $ solana transfer ‹b› 0.25 --allow-unfunded-recipient --url devnet

        Signature: ‹s›

        $ solana balance ‹b› --url devnet
        0.25 SOL
        """,
        a=_b58(rng, 44),
        b=_b58(rng, 43),
        s=_b58(rng, 88),
    )


@_clean_shape("clean-nostr-signed-event-id-pubkey-sig")
def _clean_nostr(rng: random.Random) -> str:
    event = {
        "id": _hexs(rng, 64),
        "pubkey": _hexs(rng, 64),
        "created_at": _epoch(rng),
        "kind": 1,
        "tags": [["t", "bitcoin"], ["p", _hexs(rng, 64)]],
        "content": "gm nostr, the relay migration is done",
        "sig": _hexs(rng, 128),
    }
    return "$ nak req -k 1 -l 1 wss://nos.lol\n" + json.dumps(event, separators=(",", ":")) + "\n"


@_clean_shape("clean-bitcoin-cli-getaddressinfo-pubkey-and-script")
def _clean_bitcoin(rng: random.Random) -> str:
    info = {
        "address": "bc1q" + _pick(rng, _BECH32, 38),
        "scriptPubKey": "0014" + _hexs(rng, 40),
        "ismine": True,
        "solvable": True,
        "desc": f"wpkh([{_hexs(rng, 8)}/84h/0h/0h/0/12]02{_hexs(rng, 64)})#{_pick(rng, _BECH32, 8)}",
        "parent_desc": f"wpkh([{_hexs(rng, 8)}/84h/0h/0h]xpub6C{_b58(rng, 105)}/0/*)#{_pick(rng, _BECH32, 8)}",
        "iswatchonly": False,
        "isscript": False,
        "iswitness": True,
        "witness_version": 0,
        "witness_program": _hexs(rng, 40),
        "pubkey": "02" + _hexs(rng, 64),
        "iscompressed": True,
        "ischange": False,
        "timestamp": _epoch(rng),
        "hdkeypath": "m/84h/0h/0h/0/12",
        "hdseedid": "0000000000000000000000000000000000000000",
        "hdmasterfingerprint": _hexs(rng, 8),
        "labels": ["donations"],
    }
    return (
        "$ bitcoin-cli -rpcwallet=hot getaddressinfo "
        + info["address"]
        + "\n"
        + json.dumps(info, indent=2)
        + "\n"
    )


@_clean_shape("clean-gocd-secure-variables-aes-only")
def _clean_gocd(rng: random.Random) -> str:
    return _fill(
        """
        <environments>
          <environment name="production">
            <environmentvariables>
              <variable name="DB_PASSWORD" secure="true">
                <encryptedValue>AES:‹a›:‹b›</encryptedValue>
              </variable>
              <variable name="DEPLOY_TOKEN" secure="true">
                <encryptedValue>AES:‹c›:‹d›</encryptedValue>
              </variable>
              <variable name="REGION">
                <value>eu-west-1</value>
              </variable>
            </environmentvariables>
            <agents>
              <physical uuid="‹u›" />
            </agents>
          </environment>
        </environments>
        """,
        a=_b64s(rng, 16),
        b=_b64s(rng, 32),
        c=_b64s(rng, 16),
        d=_b64s(rng, 48),
        u=_guid(rng),
    )


@_clean_shape("clean-cirrus-yml-encrypted-variables-only")
def _clean_cirrus(rng: random.Random) -> str:
    return _fill(
        """
        env:
          CIRRUS_CLONE_DEPTH: 1
          CODECOV_TOKEN: ENCRYPTED[‹a›]
          CACHIX_AUTH_TOKEN: ENCRYPTED[‹b›]

        test_task:
          container:
            image: rust:1.84
          test_script: cargo test --all-features
        """,
        a=_hexs(rng, 96),
        b=_hexs(rng, 96),
    )


@_clean_shape("clean-dependabot-yml-registries-secret-references")
def _clean_dependabot(rng: random.Random) -> str:
    return _fill(
        """
        version: 2
        registries:
          harbor:
            type: docker-registry
            url: registry.acme-intra.net
            username: dependabot
            password: ${{secrets.HARBOR_ROBOT_PASSWORD}}
          npm-github:
            type: npm-registry
            url: https://npm.pkg.github.com
            token: ${{secrets.DEPENDABOT_PACKAGES_TOKEN}}
        updates:
          - package-ecosystem: docker
            directory: /
            registries: [harbor]
            schedule:
              interval: weekly
        """
    )


@_clean_shape("clean-pydantic-settings-secretstr-repr-masked")
def _clean_pydantic(rng: random.Random) -> str:
    return _fill(
        """
        >>> from app.config import Settings
        >>> Settings()
        Settings(app_name='menu-api', debug=False, database_url=MultiHostUrl('postgresql+asyncpg://menu@db.internal:5432/menu'), database_password=SecretStr('**********'), stripe_api_key=SecretStr('**********'), jwt_secret=SecretBytes(b'**********'), cors_origins=['https://menu-example.com'], request_id_header='X-Request-Id')
        >>> Settings().stripe_api_key
        SecretStr('**********')
        """
    )


@_clean_shape("clean-kubernetes-audit-log-metadata-level-secret-get")
def _clean_k8s_audit(rng: random.Random) -> str:
    event = {
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": _guid(rng),
        "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/monitoring/secrets/grafana-admin",
        "verb": "get",
        "user": {"username": "system:serviceaccount:monitoring:grafana", "uid": _guid(rng)},
        "sourceIPs": ["10.244.3.17"],
        "objectRef": {
            "resource": "secrets",
            "namespace": "monitoring",
            "name": "grafana-admin",
            "apiVersion": "v1",
        },
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": _stamp(rng),
        "annotations": {
            "authorization.k8s.io/decision": "allow",
            "authorization.k8s.io/reason": 'RBAC: allowed by RoleBinding "grafana/monitoring"',
        },
    }
    return json.dumps(event, separators=(",", ":")) + "\n"


@_clean_shape("clean-mcp-inspector-auth-disabled-warning")
def _clean_mcp_inspector(rng: random.Random) -> str:
    return _fill(
        """
        $ DANGEROUSLY_OMIT_AUTH=true npx @modelcontextprotocol/inspector uv run server.py
        Starting MCP inspector...
        ⚙️ Proxy server listening on localhost:6277
        ⚠️  WARNING: Authentication is disabled. This is not recommended.

        🚀 MCP Inspector is up and running at:
           http://localhost:6274

        New StreamableHttp connection request
        Received POST message for sessionId ‹s›
        """,
        s=_guid(rng),
    )


@_clean_shape("clean-goose-session-tool-call-reads-keychain")
def _clean_goose(rng: random.Random) -> str:
    created = _epoch(rng)
    call = _toolu(rng)
    command = 'export TOGETHER_API_KEY="$(security find-generic-password -s together-api -w)" && python scripts/bench_together.py --n 50'
    lines = [
        {
            "id": None,
            "role": "assistant",
            "created": created,
            "content": [
                {
                    "type": "toolRequest",
                    "id": call,
                    "toolCall": {
                        "status": "success",
                        "value": {"name": "developer__shell", "arguments": {"command": command}},
                    },
                }
            ],
        },
        {
            "id": None,
            "role": "user",
            "created": created + 58,
            "content": [
                {
                    "type": "toolResponse",
                    "id": call,
                    "toolResult": {
                        "status": "success",
                        "value": [
                            {"type": "text", "text": "50/50 done, p50 latency 398 ms, mean score 0.784\n"}
                        ],
                    },
                }
            ],
        },
    ]
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"


@_clean_shape("clean-gettext-po-translations-of-password-and-token")
def _clean_po(rng: random.Random) -> str:
    entries = [
        ("sk", "Heslo"),
        ("gl", "Contrasinal"),
        ("ga", "Pasfhocal"),
        ("lb", "Passwuert"),
        ("mk", "Лозинка"),
        ("be", "Пароль"),
        ("mn", "Нууц үг"),
        ("uz", "Parol"),
        ("az", "Şifrə"),
        ("am", "የይለፍ ቃል"),
        ("ha", "Kalmar sirri"),
        ("zu", "Iphasiwedi"),
        ("ne", "पासवर्ड"),
        ("pa", "ਪਾਸਵਰਡ"),
        ("gu", "પાસવર્ડ"),
        ("te", "పాస్‌వర్డ్"),
        ("ml", "പാസ്‌വേഡ്"),
        ("si", "මුරපදය"),
        ("my", "စကားဝှက်"),
        ("km", "ពាក្យសម្ងាត់"),
        ("lo", "ລະຫັດຜ່ານ"),
        ("eo", "Pasvorto"),
        ("fo", "Loyniorð"),
        ("fy", "Wachtwurd"),
        ("ky", "Сырсөз"),
    ]
    lines = [
        "# Translations of the login dialog, collected from the .po files",
        'msgid ""',
        'msgstr ""',
        '"Content-Type: text/plain; charset=UTF-8\\n"',
        "",
    ]
    for lang, word in entries:
        lines += [f"#: src/login.py:42 lang={lang}", 'msgid "Password"', f'msgstr "{word}"', ""]
    lines += [
        "#: src/settings.py:88",
        'msgid "API token"',
        'msgstr "API-token"',
        "",
        "#: src/settings.py:91",
        'msgid "Forgot your password?"',
        'msgstr "Heslo ste zabudli?"',
        "",
    ]
    return "\n".join(lines)


@_clean_shape("clean-prose-passed-keyboard-tokenizer-passport")
def _clean_prose(rng: random.Random) -> str:
    return _fill(
        """
        Notes from Tuesday's retro

        - The tokenizer change passed review; the key insight was that the old vocabulary split "passport" and
          "keyboard" into three tokens each. Average prompt length dropped by 11%.
        - Nobody remembers the password for the old wiki and that is fine, it is read-only now. Password resets
          go through the self-service portal; never send a password by chat.
        - Marta passed the secretary role for the guild to Jonas.
        - Token budget for the nightly evals: 40M input tokens, 4M output tokens. The key metric stays pass@1.
        - Keynote for the offsite: "Secrets management without secrets in chat".
        """
    )


@_clean_shape("clean-whisper-transcript-security-training-no-value")
def _clean_whisper(rng: random.Random) -> str:
    text = (
        " Welcome to this year's security refresher. Please never read your password out loud on a call, and never"
        " paste an API token into a chat. If someone asks for your one-time code, hang up and call the helpdesk."
    )
    doc = {
        "text": text,
        "segments": [
            {
                "id": 0,
                "seek": 0,
                "start": 0.0,
                "end": 11.2,
                "text": text,
                "tokens": [50364, 3696, 281, 341],
                "temperature": 0.0,
                "avg_logprob": -0.18,
                "compression_ratio": 1.4,
                "no_speech_prob": 0.004,
            }
        ],
        "language": "en",
    }
    return json.dumps(doc) + "\n"


@_clean_shape("clean-pandas-dataframe-file-hashes-and-uuids")
def _clean_pandas(rng: random.Random) -> str:
    rows = [(f"scan_{i:03d}.tif", _hexs(rng, 12), _guid(rng)) for i in range(3)]
    lines = ["         file      sha256_prefix                             batch_id"]
    for i, (f, h, g) in enumerate(rows):
        lines.append(f"{i}  {f}  {h}  {g}")
    return ">>> df[['file', 'sha256_prefix', 'batch_id']]\n" + "\n".join(lines) + "\n"


@_clean_shape("clean-textract-receipt-line-blocks-invoice-ids")
def _clean_textract(rng: random.Random) -> str:
    lines = [
        "Bäckerei Sonnenkorn",
        f"Beleg-Nr. {_digits(rng, 8)}",
        f"TSE-Signatur: {_b64s(rng, 24)}",
        "Summe EUR 14,80",
        f"Transaktion {_guid(rng)}",
    ]
    blocks = [
        {"BlockType": "LINE", "Confidence": round(rng.uniform(90, 99.9), 3), "Text": line, "Id": _guid(rng)}
        for line in lines
    ]
    return (
        json.dumps({"DocumentMetadata": {"Pages": 1}, "Blocks": blocks}, ensure_ascii=False, indent=2) + "\n"
    )


@_clean_shape("clean-steamcmd-app-status-depot-manifests")
def _clean_steamcmd(rng: random.Random) -> str:
    return _fill(
        """
        Steam>app_status 2394010
        AppID 2394010 (Palworld Dedicated Server):
         - release state: Installed (Subscribed,Permanent,)
         - owner AccountID 0
         - install dir: "/home/steam/palworld"
         - mounted depots:
          2394012 : manifest ‹m1›, size 3.82 GB
          1006 : manifest ‹m2›, size 71.2 MB
         - size on disk: 3.89 GB, BuildID ‹b›
         - update started : Mon Mar  2 09:01:12 2026, staged 0 B, downloaded 0 B
        Steam>app_info_print 2394010 | grep -m1 sha
            "sha"		"‹s›"
        """,
        m1=_digits(rng, 19),
        m2=_digits(rng, 19),
        b=_digits(rng, 8),
        s=_hexs(rng, 40),
    )


@_clean_shape("clean-plex-library-metadata-guids-and-rating-keys")
def _clean_plex(rng: random.Random) -> str:
    return _fill(
        """
        <MediaContainer size="1" allowSync="1" librarySectionID="1" librarySectionTitle="Filme" librarySectionUUID="‹u›">
          <Video ratingKey="‹rk›" key="/library/metadata/‹rk›" guid="plex://movie/‹g›" type="movie" title="Lola rennt" year="1998" thumb="/library/metadata/‹rk›/thumb/‹t›">
            <Media id="‹mid›" duration="4841000" bitrate="8112" videoCodec="h264">
              <Part id="‹pid›" key="/library/parts/‹pid›/‹t›/file.mkv" file="/media/filme/Lola rennt (1998).mkv" size="4921822011" />
            </Media>
            <Guid id="imdb://tt0130827" />
            <Guid id="tmdb://104" />
          </Video>
        </MediaContainer>
        """,
        u=_guid(rng),
        rk=_digits(rng, 5),
        g=_hexs(rng, 24),
        t=str(_epoch(rng)),
        mid=_digits(rng, 5),
        pid=_digits(rng, 5),
    )


@_clean_shape("clean-git-bisect-log-commit-shas")
def _clean_bisect(rng: random.Random) -> str:
    lines = ["$ git bisect log", "git bisect start", f"# bad: [{_hexs(rng, 40)}] Bump tokio to 1.43"]
    for msg in (
        "Refactor session store",
        "Rotate key ids in JWKS cache",
        "Add password strength meter",
        "Fix keyboard shortcuts on login form",
    ):
        sha = _hexs(rng, 40)
        verdict = rng.choice(["good", "bad"])
        lines += [f"# {verdict}: [{sha}] {msg}", f"git bisect {verdict} {sha}"]
    lines.append(f"# first bad commit: [{_hexs(rng, 40)}] Rotate key ids in JWKS cache")
    return "\n".join(lines) + "\n"


@_clean_shape("clean-nix-store-query-requisites-paths")
def _clean_nix_store(rng: random.Random) -> str:
    alphabet = "0123456789abcdfghijklmnpqrsvwxyz"
    names = [
        "glibc-2.40-36",
        "openssl-3.3.2",
        "zlib-1.3.1",
        "libsecret-0.21.4",
        "gnupg-2.4.5",
        "password-store-1.7.4",
    ]
    lines = ["$ nix-store -qR $(which pass)"] + [f"/nix/store/{_pick(rng, alphabet, 32)}-{n}" for n in names]
    return "\n".join(lines) + "\n"


@_clean_shape("clean-uv-lock-package-wheel-sha256-hashes")
def _clean_uv_lock(rng: random.Random) -> str:
    return _fill(
        """
        [[package]]
        name = "keyring"
        version = "25.6.0"
        source = { registry = "https://pypi.org/simple" }
        dependencies = [
            { name = "jaraco-classes" },
            { name = "secretstorage", marker = "sys_platform == 'linux'" },
        ]
        sdist = { url = "https://files.pythonhosted.org/packages/70/09/‹p1›/keyring-25.6.0.tar.gz", hash = "sha256:‹h1›", size = 62750 }
        wheels = [
            { url = "https://files.pythonhosted.org/packages/d3/32/‹p2›/keyring-25.6.0-py3-none-any.whl", hash = "sha256:‹h2›", size = 39085 },
        ]
        """,
        p1=_hexs(rng, 60),
        h1=_hexs(rng, 64),
        p2=_hexs(rng, 60),
        h2=_hexs(rng, 64),
    )


@_clean_shape("clean-ssh-keygen-list-certificate-details")
def _clean_ssh_cert(rng: random.Random) -> str:
    return _fill(
        """
        $ ssh-keygen -L -f ~/.ssh/id_ed25519-cert.pub
        /home/dara/.ssh/id_ed25519-cert.pub:
                Type: ssh-ed25519-cert-v01@openssh.com user certificate
                Public key: ED25519-CERT SHA256:‹a›
                Signing CA: ED25519 SHA256:‹b› (using ssh-ed25519)
                Key ID: "dara@acme-intra.net"
                Serial: ‹s›
                Valid: from 2026-03-02T09:00:00 to 2026-03-02T21:00:00
                Principals:
                        dara
                        deploy
                Critical Options: (none)
                Extensions:
                        permit-agent-forwarding
                        permit-pty
        """,
        a=_b64s(rng, 32).rstrip("="),
        b=_b64s(rng, 32).rstrip("="),
        s=_digits(rng, 19),
    )


@_clean_shape("clean-tpm2-pcrread-sha256-bank")
def _clean_tpm(rng: random.Random) -> str:
    lines = ["$ tpm2_pcrread sha256:0,1,2,3,4,7", "  sha256:"]
    for i in (0, 1, 2, 3, 4, 7):
        lines.append(f"    {i} : 0x{_hexs(rng, 64, upper=True)}")
    return "\n".join(lines) + "\n"


@_clean_shape("clean-aws-kms-encrypt-ciphertext-blob")
def _clean_kms(rng: random.Random) -> str:
    acct = _digits(rng, 12)
    out = {
        "CiphertextBlob": _b64s(rng, 184),
        "KeyId": f"arn:aws:kms:eu-west-1:{acct}:key/{_guid(rng)}",
        "EncryptionAlgorithm": "SYMMETRIC_DEFAULT",
    }
    return (
        "$ aws kms encrypt --key-id alias/app-config --plaintext fileb://config.json\n"
        + json.dumps(out, indent=4)
        + "\n"
    )


@_clean_shape("clean-vault-transit-encrypt-ciphertext-vault-v1")
def _clean_transit(rng: random.Random) -> str:
    return _fill(
        """
        $ vault write transit/encrypt/orders plaintext=$(base64 <<< "order 18231 shipped to Graz")
        Key            Value
        ---            -----
        ciphertext     vault:v1:‹c›
        key_version    1
        """,
        c=_b64s(rng, 56),
    )


@_clean_shape("clean-tor-onion-service-hostname-v3")
def _clean_onion(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    onion = _pick(rng, alphabet, 55) + "d"
    return _fill(
        """
        $ sudo ls -l /var/lib/tor/hidden_service/
        -rw------- 1 debian-tor debian-tor   63 Mar  2 10:11 hostname
        -rw------- 1 debian-tor debian-tor   64 Mar  2 10:11 hs_ed25519_public_key
        -rw------- 1 debian-tor debian-tor   96 Mar  2 10:11 hs_ed25519_secret_key
        $ sudo cat /var/lib/tor/hidden_service/hostname
        ‹o›.onion
        """,
        o=onion,
    )


@_clean_shape("clean-odoo-conf-admin-passwd-pbkdf2-hash")
def _clean_odoo(rng: random.Random) -> str:
    return _fill(
        """
        [options]
        addons_path = /usr/lib/python3/dist-packages/odoo/addons
        admin_passwd = $pbkdf2-sha512$600000$‹s›$‹h›
        db_host = False
        db_port = False
        db_user = odoo
        db_password = False
        list_db = False
        proxy_mode = True
        """,
        s=_b64s(rng, 16).rstrip("=").replace("+", "."),
        h=_b64s(rng, 64).rstrip("=").replace("+", "."),
    )


@_clean_shape("clean-webex-rooms-list-base64-ids-token-from-env")
def _clean_webex(rng: random.Random) -> str:
    def room() -> str:
        return base64.b64encode(f"ciscospark://us/ROOM/{_guid(rng)}".encode()).decode().rstrip("=")

    return _fill(
        """
        >>> import os
        >>> from webexteamssdk import WebexTeamsAPI
        >>> api = WebexTeamsAPI()  # reads WEBEX_TEAMS_ACCESS_TOKEN
        >>> for r in api.rooms.list(max=2):
        ...     print(r.id, r.title)
        ...
        ‹a› Deployments
        ‹b› Platform on-call
        """,
        a=room(),
        b=room(),
    )


@_clean_shape("clean-matrix-sync-room-event-ids-and-batch")
def _clean_matrix(rng: random.Random) -> str:
    room = "!" + _pick(rng, _LETTERS_DIGITS, 18) + ":chat.acme-example.org"
    data = {
        "next_batch": "s" + _digits(rng, 6) + "_" + _digits(rng, 7) + "_0_1_1_1_1_" + _digits(rng, 5),
        "rooms": {
            "join": {
                room: {
                    "timeline": {
                        "events": [
                            {
                                "type": "m.room.message",
                                "sender": "@alertbot:chat.acme-example.org",
                                "content": {
                                    "msgtype": "m.notice",
                                    "body": "Backup finished: 412 GB, checksum " + _hexs(rng, 16),
                                },
                                "event_id": "$" + _b64u(rng, 32),
                                "origin_server_ts": _epoch(rng) * 1000,
                            }
                        ],
                        "prev_batch": "t" + _digits(rng, 5) + "-" + _digits(rng, 7),
                        "limited": False,
                    }
                }
            }
        },
    }
    return json.dumps(data, indent=2) + "\n"


@_clean_shape("clean-spreadsheetml-asset-inventory-serials-macs")
def _clean_assets(rng: random.Random) -> str:
    def mac() -> str:
        return ":".join(_hexs(rng, 2, upper=True) for _ in range(6))

    rows = "".join(
        f'   <Row><Cell><Data ss:Type="String">{name}</Data></Cell><Cell><Data ss:Type="String">{_upper_alnum(rng, 12)}</Data></Cell><Cell><Data ss:Type="String">{mac()}</Data></Cell></Row>\n'
        for name in ("Laptop Empfang", "Drucker 2. OG", "Switch Keller")
    )
    return (
        '<?xml version="1.0"?>\n<Workbook xmlns="urn:schemas-microsoft-com:office:spreadsheet" '
        'xmlns:ss="urn:schemas-microsoft-com:office:spreadsheet">\n <Worksheet ss:Name="Inventar">\n  <Table>\n'
        '   <Row><Cell><Data ss:Type="String">Gerät</Data></Cell><Cell><Data ss:Type="String">Seriennummer</Data></Cell>'
        '<Cell><Data ss:Type="String">MAC</Data></Cell></Row>\n'
        + rows
        + "  </Table>\n </Worksheet>\n</Workbook>\n"
    )


@_clean_shape("clean-sinhala-bank-sms-warning-no-value")
def _clean_sinhala(rng: random.Random) -> str:
    return _fill(
        """
        $ mmcli -s 7 | grep text
                     |                  text: ඔබගේ මුරපදය හෝ OTP අංකය කිසිවෙකුට ලබා නොදෙන්න. බැංකුව කිසි විටෙක ඔබගේ මුරපදය ඉල්ලා නොසිටී.
        """
    )


@_clean_shape("clean-mastra-log-tool-call-without-secret")
def _clean_mastra(rng: random.Random) -> str:
    run = _guid(rng)
    base = _epoch(rng) * 1000
    args = {
        "to": "order-7732@customers.example",
        "templateId": _lower_alnum(rng, 12),
        "orderId": _digits(rng, 6),
    }
    lines = [
        {
            "level": 20,
            "time": base,
            "pid": 4121,
            "hostname": "agents-1",
            "name": "Mastra",
            "msg": f"[Agent:receipt-agent] - Executing tool sendReceiptEmail with args: {json.dumps(args)}",
            "runId": run,
        },
        {
            "level": 30,
            "time": base + 880,
            "pid": 4121,
            "hostname": "agents-1",
            "name": "Mastra",
            "msg": "[Agent:receipt-agent] - Tool sendReceiptEmail finished",
            "runId": run,
            "durationMs": 880,
        },
    ]
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"


@_clean_shape("clean-adk-session-state-ids-and-invocations")
def _clean_adk(rng: random.Random) -> str:
    session = {
        "id": _guid(rng),
        "appName": "shipping_agent",
        "userId": "u_" + _digits(rng, 6),
        "state": {"last_tracking_number": _digits(rng, 10), "carrier": "dhl_express"},
        "events": [
            {"invocationId": "e-" + _guid(rng), "author": "user", "id": _alnum(rng, 8)},
            {"invocationId": "e-" + _guid(rng), "author": "shipping_agent", "id": _alnum(rng, 8)},
        ],
        "lastUpdateTime": _epoch(rng) + 0.5,
    }
    return (
        "$ curl -s http://localhost:8000/apps/shipping_agent/users/u_1/sessions/s_1\n"
        + json.dumps(session, indent=2)
        + "\n"
    )


@_clean_shape("clean-helicone-request-log-masked-provider-key")
def _clean_helicone(rng: random.Random) -> str:
    row = {
        "request_id": _guid(rng),
        "request_created_at": _stamp(rng),
        "request_path": "/v1/chat/completions",
        "request_user_id": "staging",
        "provider": "OPENAI",
        "model": "gpt-4.1-mini",
        "prompt_tokens": 812,
        "completion_tokens": 64,
        "request_headers": {
            "authorization": "Bearer sk-svca...****",
            "helicone-auth": "Bearer sk-helicone-****",
            "helicone-property-environment": "staging",
        },
        "response_status": 200,
    }
    return json.dumps(row, indent=2) + "\n"


@_clean_shape("clean-kinyarwanda-password-policy-notice")
def _clean_kinyarwanda(rng: random.Random) -> str:
    return _fill(
        """
        Itangazo ry'umutekano

        Ijambo ry'ibanga rigomba kugira nibura inyuguti 12, harimo imibare n'ibimenyetso.
        Ntuzigere usangiza ijambo ry'ibanga ryawe n'undi muntu, kabone n'iyo yaba yiyita umukozi wa IT.
        Hindura ijambo ry'ibanga buri mezi atatu: Igenamiterere → Umutekano → Hindura.
        """
    )


SHAPES = tuple(name for name, _ in _WITH_SECRET)
CLEAN_SHAPES = tuple(name for name, _ in _WITHOUT_SECRET)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape, its values drawn with `seed`, then the documents without a secret."""
    rng = random.Random(seed)
    credential = [Document(name, *make(rng)) for name, make in _WITH_SECRET]
    clean = [Document(name, make(rng)) for name, make in _WITHOUT_SECRET]
    return credential + clean
