"""The HOLDOUT8 part of the secret corpus: an eighth blind part, written after HOLDOUT to HOLDOUT7.

Written blind: its author never read the detector, its rules, its docs, its tests, its state or its figures, and
no document was run through a detector or changed after one. Every document copies what a real tool, config
file, log, agent, terminal session, person or trace writes, with tools, vendors, formats and languages the
earlier parts do not use; it leans on what everyday agents and developers produce:

- agent traces and tool calls: a Codex CLI rollout JSONL (`shell` function call exporting a Cloudsmith key), a
  Cline task export (`replace_in_file` SEARCH/REPLACE adding a Plausible key), a Gemini CLI chat checkpoint
  (`write_file` of a config holding a Sumo Logic source URL), a LiteLLM debug request whose Anthropic
  `tool_result` carries an env file, an OpenAI Responses `function_call` (Telnyx), a Claude Desktop MCP server
  log (`tools/call` result row, Mux token secret), a LangGraph `stream_mode="updates"` repr, LlamaIndex
  `=== Calling Function ===` (Zendesk), Haystack `Secret.from_token` (NVIDIA NIM), a Semantic Kernel trace log
  (Trello), DSPy (SambaNova), an Agno debug log (Bluesky app password), PydanticAI `all_messages()` (Wise), a
  Playwright codegen test, Claude Code's rendering of a Playwright MCP `browser_type` call, a Selenium script an
  agent wrote, a browser-use log (`input_text`), an AutoGPT thoughts JSON, a Letta `core_memory_append` call,
  an asciinema cast of `bash -x` (lftp), an OpenAI Agents SDK function span (Klaviyo), a Bedrock agent trace
  (Freshdesk), `n8n export:credentials --decrypted`, a Langflow flow (Astra DB), a Vercel AI SDK step log
  (MotherDuck), an Open Interpreter conversation (Firecrawl), a mem0 search result;
- everyday developer output: a PHP PDOException trace with constructor arguments, a jsonschema ValidationError
  printing the instance, a Faraday logger (Honeybadger), PowerShell `Get-ChildItem Env:` (Codecov), cmd `set`
  (Vultr), `docker compose config` (Metabase), `kubectl describe pod` (Outline), a `kubectl get secret -o
  go-template` with `base64decode`, `git log -p` removing a Fastly token, CI of other systems (an Azure
  Pipelines log with `set -x` and a Netlify token, a Bitbucket Pipelines SonarQube pipe, `argo get`, `tkn
  pipelinerun describe` with a Codeberg token, `fly get-pipeline` with Cloudflare R2), IDE files (a JetBrains
  run configuration with a Yandex Cloud key, ASP.NET launchSettings.json, an Xcode scheme with RevenueCat, an
  Eclipse .launch with IBM MQ), test fixtures and seeds (a VCR cassette with an Intercom token, a Jest
  snapshot with a Typeform token, Rails seeds.rb, a Knex seed), HTTP clients and captures (Bruno .bru with an
  Asana PAT, Hurl `[BasicAuth]`, a JetBrains http-client.private.env.json with Xata, `curl --trace-ascii`
  with Render, Wireshark "Follow HTTP stream", Chrome "Copy as cURL (cmd)" with `^"` escapes, Chrome "Copy as
  PowerShell" with a Django sessionid, a bug-bounty report with a Bunny Storage key), bash `(set -o posix;
  set)` (Alibaba Cloud), a Go `url.Parse` panic, `strace` of ftplib's `PASS`, a journalctl line with a Valkey URL;
- config formats and languages: CUE, KDL, Pkl, a Nix flake `shellHook`, Perl DBI, Magento env.php, Joomla
  configuration.php, MediaWiki LocalSettings.php, Moodle config.php, Zig (OpenAQ), Nim (football-data), Crystal,
  Dart mailer, R .Renviron (Census), MATLAB weboptions, SAS `libname` (with the masked log), a JCL job card,
  COBOL WORKING-STORAGE, a compiled PowerShell DSC MOF, an Ansible INI inventory, a Jenkinsfile `environment`
  (Dependency-Track), Quarkus profile properties, Micronaut TOML, Phoenix prod.secret.exs, Deno KV, `wrangler
  secret put` (Mercado Pago) and .dev.vars (Polar), `netlify env:list --plain` (Sanity), `firebase
  functions:config:get` (Paystack), Appwrite, PocketBase, Convex in a Vercel build log, `turso db tokens
  create`, `pscale password create`, Supabase config.toml (a GitHub OAuth secret), the influx CLI configs,
  Pulsar client.conf, ActiveMQ jetty-realm.properties, `ceph auth get`, `radosgw-admin user create`, Exoscale,
  Tencent Cloud tccli, `yc config list`, Checkly, Infisical, a 1Password service-account token in .envrc,
  Bitwarden Secrets Manager `bws`, a GitLab pipeline trigger token, the GitLab agent Helm command, `dotnet
  nuget push`, Flutterwave, Midtrans, Xendit, Africa's Talking, Mailchimp Transactional, xh with Infobip;
- people: Catalan ("Contrasenya provisional"), Slovenian ("Geslo"), Serbian (a Messenger JSON export with its
  latin-1 mojibake, "Лозинка"), Bulgarian ("Парола"), Lithuanian (`adb` SMS query, "slaptažodis"), Latvian
  (Element export, "parole"), Estonian (DiscordChatExporter, "parool"), Icelandic ("Lykilorð"), Swahili
  (`termux-sms-list`, "Nenosiri"), Tagalog (imessage-exporter), Malay ("Kata laluan sementara"), Urdu and
  Bengali (WhatsApp iOS and Android exports), Tamil (Telegram JSON export), Persian ("رمز عبور موقت"), Afrikaans
  (Zoom saved chat, "wagwoord"), Basque (Zammad, "Pasahitza"), Welsh ("cyfrinair dros dro"), Albanian (Threema,
  "Fjalëkalimi"), Georgian ("პაროლი"), Armenian (Telegram HTML export), Kazakh ("құпия сөз"); a password dictated
  with "as in" spelling and read back, a password split across two IRC messages (both halves planted), EasyOCR
  output of a router screenshot, a Confluence storage-format table of shared logins, an Obsidian handover note,
  a macOS `AuthenticationHint` that is the password, a voicemail transcript with a spaced passphrase.

Each document plants one or two values; every value appears verbatim on one line of its text and is 8
characters or more. Value forms: vendor prefixes none of the earlier parts use (nvapi-, ATTA, KEY…_ (Telnyx),
pk_ (Klaviyo private key), AstraCS:, fc-, hbp_, nfp_, sqp_, rnd_, xau_, tfp_, AQVN, y0_, odt_, ddp_, APP_USR-,
polar_oat_, sk_live_ (Paystack), standard_, pscale_pw_, cu_, st. (Infisical), ops_, 0.<uuid>. (bws), glptt-,
glagent-, oy2, FLWSECK-, Mid-server-, xnd_production_, atsk_, md-, sk (Sanity), prod:…| (Convex), `App` keys
(Infobip)), hex (Cloudsmith, Outline, R2, Magento, MediaWiki, OpenAQ, Census, Codeberg), base64 (Sumo Logic and
InfluxDB in base64url with padding, a Ceph `AQ…==` key, Metabase, Mux, Phoenix, an Intercom `tok:` token,
bws), base64url (Plausible, Fastly, Exoscale, Yandex), UUIDs (SambaNova, Wise, Codecov, a Bunny key with a
tail), JWTs (HS256 MotherDuck and dispatch tokens, EdDSA Turso, RS256 Pulsar), people's passwords (a word,
digits and a mark; two words and digits), generated passwords with symbols, short passwords of 8 to 12
characters (an 8-character RACF password), passphrases (spaces, dashes), a Bluesky app password in dashed
groups, a Django session id, and values with quotes as the text writes them (a Perl `\'` and a MATLAB `''`,
planted as written).

Decisions: usernames, e-mail addresses, client ids (a GitHub OAuth `Ov23li…` id, a Quarkus OIDC client id),
account, folder, project, org and tenant ids, key ids (an Alibaba `LTAI5t…` id, a Tencent `AKID…` SecretId,
an Exoscale `EXO…` key, an R2 access key id, a radosgw `access_key`, a Mux token id, a Yandex folder id), keys
public by design (a Flutterwave `FLWPUBK-` key, a Midtrans client key, a Stripe `pk_live_` publishable key,
age recipients, SSH, Tailscale node keys) and a Trello API key beside its token (the token is planted) are not
credentials; password hashes and digests (Jetty `MD5:`, mem0 memory hashes, ShadowHash
lists, integrity and narHash values, image digests), ciphertexts (SOPS `ENC[...]`, an Ansible Vault block,
Pulumi `secure:` values, an n8n export without `--decrypted`), commit SHAs, request, trace, span, message,
checkpoint and tool-call ids, token accessors and a UserSecretsId are not credentials; for a `user:password`
pair, a URL with userinfo, an `-u user,password` or a `[BasicAuth]` line the planted value is the password; an
Erlang cookie, a Joomla `$secret`, a Magento crypt key, an Outline `UTILS_SECRET` and a Django session id are
credentials; a password split in two messages plants both halves; no document holds a credential value
beside the one or two it plants (masked echoes such as `***`, `****` and `XXXXXXXX` are not values).

The clean documents hold no credential but plenty of look-alikes: an agent trace that exports a key from `op
read`, an MCP `tools/list` schema with a password parameter, a Playwright setup that fills from
`process.env`, pip's `****` index URL, `kubectl describe secret` byte counts, an Azure Pipelines log with
`***`, pnpm-lock integrity hashes, reflog SHAs, LangGraph checkpoint ids, Anthropic SSE ids and token usage,
image digests, a masked `wrangler secret put` prompt, "secretary/passed/keyboard/tokens/passkeys" prose, base64
favicons, traceparent and request ids, an SSH fingerprint with randomart, age recipients, Tailscale node keys,
a UserSecretsId, a Stripe publishable key, Vault token accessors, SOPS and Ansible Vault ciphertexts, flake.lock
hashes, `go version -m` hashes, a Catalan password notice, a NATO alphabet card, a `dscl` read with an empty
hint, a sanitized HAR, a decoded JWT header and claims, Bruno `vars:secret` names, Pulumi secure values, a
Sentry event with `[Filtered]`, `keepassxc-cli` PROTECTED, an apt InRelease listing, a Swahili warning SMS, an
Agno trace that reads a secret by name, an encrypted n8n export and a `read -s` transcript.

SEED = 1618033. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
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

SEED = 1618033

_LETTERS_DIGITS = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_URL_ALPHABET = _LETTERS_DIGITS + "-_"
_HEX = "0123456789abcdef"

_VOCAB = tuple(
    """
    marigold walrus tangerine pumpkin lantern harbor meadow pebble saffron thistle cinnamon falcon
    glacier juniper kettle lagoon mango nectar orchid parsnip quartz raven sequoia tamarind umber
    violet willow yarrow zephyr almond badger cactus daisy emerald ferret ginger heron iris jasmine
    koala lemur magpie nutmeg otter panther quail rhubarb salmon tulip velvet wasabi
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


def _fill(template: str, **parts: str) -> str:
    """Dedent `template`, then write each part where its `‹name›` mark stands."""
    text = textwrap.dedent(template).strip("\n") + "\n"
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
    """Letters and digits, with at least one of each kind."""
    while True:
        value = _pick(rng, _LETTERS_DIGITS, length)
        if (
            any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
            and any(c.islower() for c in value)
        ):
            return value


def _b64s(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _b64u(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _b32s(rng: random.Random, nbytes: int) -> str:
    return base64.b32encode(rng.randbytes(nbytes)).decode().rstrip("=")


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


def _human(rng: random.Random, marks: str = "!.?$#") -> str:
    """What a person picks: a capitalised word, a year or a number, a mark."""
    word = rng.choice(_VOCAB)
    number = rng.randint(1970, 2026) if rng.random() < 0.5 else rng.randint(10, 999)
    return word[0].upper() + word[1:] + str(number) + rng.choice(marks)


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
        ):
            return value


def _brief(rng: random.Random, low: int = 8, high: int = 12) -> str:
    """A short generated password, 8 to 12 letters and digits with both kinds."""
    return _alnum(rng, rng.randint(low, high))


def _passphrase(rng: random.Random, words: int, sep: str = " ") -> str:
    return sep.join(rng.sample(_VOCAB, words))


def _segment(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt(rng: random.Random, header: dict, claims: dict, signature_bytes: int = 32) -> str:
    return f"{_segment(header)}.{_segment(claims)}.{_b64u(rng, signature_bytes)}"


def _epoch(rng: random.Random) -> int:
    return rng.randint(1_767_300_000, 1_797_000_000)


def _call_id(rng: random.Random, prefix: str = "call_") -> str:
    return prefix + _pick(rng, _LETTERS_DIGITS, 24)


def _as_json(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


# --------------------------------------------------------------------------------------------------------
# Agent traces, tool calls and what agents capture
# --------------------------------------------------------------------------------------------------------


@_shape("codex-cli-rollout-jsonl-shell-function-call-export")
def _codex_rollout(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    call = _call_id(rng)
    stamp = f"{_date(rng)}T{_time(rng)}"
    workdir = "/home/rui/src/fleet-agent"
    command = (
        f"export CLOUDSMITH_API_KEY={key} && cloudsmith push deb acme/fleet/debian/bookworm "
        "dist/fleet-agent_2.4.1_amd64.deb"
    )
    arguments = json.dumps({"command": ["bash", "-lc", command], "workdir": workdir, "timeout_ms": 120000})
    output = json.dumps(
        {
            "output": "Checking deb package upload parameters ... OK\n"
            "Uploading fleet-agent_2.4.1_amd64.deb: 100% (4.1 MiB)\n"
            "Creating a new deb package ... OK\n",
            "metadata": {"exit_code": 0, "duration_seconds": 6.4},
        }
    )
    lines = [
        {
            "timestamp": f"{stamp}.101Z",
            "type": "session_meta",
            "payload": {
                "id": _guid(rng),
                "cwd": workdir,
                "originator": "codex_cli_rs",
                "cli_version": "0.46.0",
                "instructions": None,
            },
        },
        {
            "timestamp": f"{stamp}.233Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "push the new .deb to cloudsmith, the key is in 1password"}
                ],
            },
        },
        {
            "timestamp": f"{stamp}.902Z",
            "type": "response_item",
            "payload": {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call},
        },
        {
            "timestamp": f"{stamp}.977Z",
            "type": "response_item",
            "payload": {"type": "function_call_output", "call_id": call, "output": output},
        },
    ]
    text = "$ tail -n 4 ~/.codex/sessions/2026/03/11/rollout-2026-03-11T09-14-52-" + _guid(rng) + ".jsonl\n"
    text += "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"
    return text, (key,)


@_shape("cline-task-export-replace-in-file-search-replace")
def _cline_replace(rng: random.Random) -> Built:
    key = _pick(rng, _URL_ALPHABET, 64)
    text = _fill(
        """
        **User:**

        <task>
        the weekly traffic report fails with 401 from plausible, add the stats api key I just made: ‹k›
        </task>

        ---

        **Assistant:**

        The report script calls the Plausible Stats API with a bearer key, but none is configured. I'll add it next
        to the host setting.

        <replace_in_file>
        <path>jobs/traffic_report.py</path>
        <diff>
        ------- SEARCH
        PLAUSIBLE_HOST = "https://plausible.io"
        SITE_ID = "‹site›"
        =======
        PLAUSIBLE_HOST = "https://plausible.io"
        SITE_ID = "‹site›"
        PLAUSIBLE_API_KEY = "‹k›"
        +++++++ REPLACE
        </diff>
        </replace_in_file>

        ---

        **User:**

        [replace_in_file for 'jobs/traffic_report.py'] Result:
        The content was successfully saved to jobs/traffic_report.py.
        """,
        k=key,
        site=rng.choice(["padaria-example.pt", "yogastudio-example.ie", "imkerei-example.at"]),
    )
    return text, (key,)


@_shape("gemini-cli-chat-checkpoint-write-file-function-call")
def _gemini_write_file(rng: random.Random) -> Built:
    token = base64.urlsafe_b64encode(rng.randbytes(72)).decode()
    path = "/home/amara/work/ledger-sync/config/production.yaml"
    content = (
        "logging:\n"
        "  level: info\n"
        "  sinks:\n"
        "    - type: sumologic\n"
        f"      url: https://endpoint4.collection.us2.sumologic.com/receiver/v1/http/{token}\n"
        "      category: prod/ledger-sync\n"
        "    - type: stdout\n"
    )
    history = [
        {"role": "user", "parts": [{"text": "ship the logs to sumo too, same HTTP source as billing-api"}]},
        {
            "role": "model",
            "parts": [
                {"text": "I'll add a Sumo Logic sink next to stdout in the production config."},
                {"functionCall": {"name": "write_file", "args": {"file_path": path, "content": content}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "write_file",
                        "response": {"output": f"Successfully overwrote file: {path}."},
                    }
                }
            ],
        },
    ]
    text = (
        "$ cat ~/.gemini/tmp/"
        + _hexs(rng, 64)
        + "/checkpoint-sumo.json\n"
        + json.dumps(history, indent=2)
        + "\n"
    )
    return text, (token,)


@_shape("litellm-debug-anthropic-request-tool-result-env")
def _litellm_tool_result(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="-_~.")
    tool_id = "toolu_01" + _pick(rng, _LETTERS_DIGITS, 22)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "why does the worker crash on boot?"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "read_file",
                        "input": {"path": "deploy/worker.env"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": "QUEUE=reports\nCONCURRENCY=8\n"
                        f"DATABASE_URL=postgresql://reports_rw:{password}@pg-reports.internal:5432/reports\n",
                    }
                ],
            },
        ],
    }
    text = _fill(
        """
        ‹t› - LiteLLM:DEBUG: litellm_logging.py:459 -

        POST Request Sent from LiteLLM:
        curl -X POST \\
        https://api.anthropic.com/v1/messages \\
        -H 'anthropic-version: 2023-06-01' -H 'x-api-key: sk-ant-api03-r5********************************************' \\
        -d '‹body›'
        """,
        t=f"{_date(rng)} {_time(rng)},{rng.randint(100, 999)}",
        body=json.dumps(body),
    )
    return text, (password,)


@_shape("openai-responses-api-output-function-call-arguments")
def _responses_function_call(rng: random.Random) -> Built:
    key = "KEY" + _hexs(rng, 32, upper=True) + "_" + _alnum(rng, 22)
    args = json.dumps(
        {
            "telnyx_api_key": key,
            "from_number": "+1312555" + _digits(rng, 4),
            "to_number": "+1773555" + _digits(rng, 4),
            "text": "Your technician is on the way.",
        }
    )
    output = {
        "id": "resp_" + _hexs(rng, 48),
        "object": "response",
        "created_at": _epoch(rng),
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "output": [
            {
                "type": "function_call",
                "id": "fc_" + _hexs(rng, 48),
                "call_id": _call_id(rng),
                "name": "send_sms",
                "arguments": args,
                "status": "completed",
            }
        ],
        "usage": {"input_tokens": 812, "output_tokens": 96, "total_tokens": 908},
    }
    text = ">>> print(response.model_dump_json(indent=2))\n" + json.dumps(output, indent=2) + "\n"
    return text, (key,)


@_shape("claude-desktop-mcp-server-log-tools-call-result-row")
def _mcp_log(rng: random.Random) -> Built:
    token = _b64s(rng, 56).rstrip("=")
    token_id = _guid(rng)
    stamp = f"{_date(rng)}T{_time(rng)}"
    request = {
        "method": "tools/call",
        "params": {
            "name": "query",
            "arguments": {
                "sql": "SELECT id, provider, token_id, token_secret, created_at FROM video_integrations"
            },
        },
        "jsonrpc": "2.0",
        "id": 14,
    }
    rows = [
        {
            "id": 3,
            "provider": "mux",
            "token_id": token_id,
            "token_secret": token,
            "created_at": "2025-11-02T08:41:12.000Z",
        },
    ]
    result = {
        "jsonrpc": "2.0",
        "id": 14,
        "result": {"content": [{"type": "text", "text": json.dumps(rows, indent=2)}], "isError": False},
    }
    text = _fill(
        """
        ==> ~/Library/Logs/Claude/mcp-server-postgres.log <==
        ‹s›.410Z [postgres] [info] Message from client: ‹req›
        ‹s›.538Z [postgres] [info] Message from server: ‹res›
        """,
        s=stamp,
        req=json.dumps(request, separators=(",", ":")),
        res=json.dumps(result, separators=(",", ":")),
    )
    return text, (token,)


@_shape("langgraph-stream-updates-aimessage-tool-calls-repr")
def _langgraph_stream(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="#%+-=@^_")
    text = _fill(
        """
        >>> for chunk in graph.stream({"messages": [("user", prompt)]}, config, stream_mode="updates"):
        ...     print(chunk)
        ...
        {'agent': {'messages': [AIMessage(content='', additional_kwargs={'tool_calls': [{'index': 0, 'id': '‹c›', 'function': {'arguments': '', 'name': 'sftp_upload'}, 'type': 'function'}]}, response_metadata={'finish_reason': 'tool_calls', 'model_name': 'gpt-4o-2024-08-06'}, id='run-‹run›', tool_calls=[{'name': 'sftp_upload', 'args': {'host': 'sftp.partner-logistics.example', 'username': 'acme_inbound', 'password': '‹pw›', 'local_path': 'out/manifest-‹d›.csv'}, 'id': '‹c›', 'type': 'tool_call'}], usage_metadata={'input_tokens': 1204, 'output_tokens': 71, 'total_tokens': 1275})]}}
        {'tools': {'messages': [ToolMessage(content='uploaded 1 file (18.2 KiB) to /inbound', name='sftp_upload', id='‹tm›', tool_call_id='‹c›')]}}
        """,
        c=_call_id(rng),
        run=_guid(rng),
        pw=password,
        d=_date(rng),
        tm=_guid(rng),
    )
    return text, (password,)


@_shape("llamaindex-function-agent-verbose-calling-function-args")
def _llamaindex_verbose(rng: random.Random) -> Built:
    token = _alnum(rng, 40)
    text = _fill(
        """
        Added user message to memory: Open a ticket for the broken SSO on the staff portal. Use our Zendesk (subdomain acme-support, agent it-bot@acme-support.example, token ‹t›).
        === Calling Function ===
        Calling function: zendesk_create_ticket with args: {"subdomain": "acme-support", "email": "it-bot@acme-support.example", "api_token": "‹t›", "subject": "Staff portal SSO loop", "priority": "high"}
        === Function Output ===
        {'ticket': {'id': ‹id›, 'status': 'new', 'url': 'https://acme-support.zendesk.com/api/v2/tickets/‹id›.json'}}
        === LLM Response ===
        I opened ticket #‹id› (priority high) for the SSO loop on the staff portal.
        """,
        t=token,
        id=str(rng.randint(40000, 99999)),
    )
    return text, (token,)


@_shape("haystack-pipeline-secret-from-token-nvidia-nim")
def _haystack(rng: random.Random) -> Built:
    key = "nvapi-" + _b64u(rng, 48)
    text = _fill(
        """
        # rag/pipeline.py
        from haystack import Pipeline
        from haystack.components.builders import ChatPromptBuilder
        from haystack.components.generators.chat import OpenAIChatGenerator
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
        from haystack.utils import Secret

        from rag.store import document_store

        generator = OpenAIChatGenerator(
            api_key=Secret.from_token("‹k›"),
            api_base_url="https://integrate.api.nvidia.com/v1",
            model="meta/llama-3.3-70b-instruct",
            generation_kwargs={"temperature": 0.2, "max_tokens": 512},
        )

        pipe = Pipeline()
        pipe.add_component("retriever", InMemoryBM25Retriever(document_store=document_store, top_k=5))
        pipe.add_component("prompt", ChatPromptBuilder(template=TEMPLATE, required_variables=["question"]))
        pipe.add_component("llm", generator)
        pipe.connect("retriever.documents", "prompt.documents")
        pipe.connect("prompt.prompt", "llm.messages")
        """,
        k=key,
    )
    return text, (key,)


@_shape("semantic-kernel-trace-log-function-arguments-json")
def _semantic_kernel(rng: random.Random) -> Built:
    token = "ATTA" + _hexs(rng, 64) + _hexs(rng, 8, upper=True)
    text = _fill(
        """
        info: Microsoft.SemanticKernel.KernelFunction[0]
              Function TrelloPlugin-AddCard invoking.
        trce: Microsoft.SemanticKernel.KernelFunction[0]
              Function TrelloPlugin-AddCard arguments: {"boardId":"‹b›","listName":"Backlog","title":"Rotate VPN certificates","apiKey":"‹kid›","token":"‹t›"}
        info: Microsoft.SemanticKernel.KernelFunction[0]
              Function TrelloPlugin-AddCard succeeded.
        trce: Microsoft.SemanticKernel.KernelFunction[0]
              Function TrelloPlugin-AddCard result: {"id":"‹card›","shortUrl":"https://trello.com/c/‹short›"}
        info: Microsoft.SemanticKernel.KernelFunction[0]
              Function TrelloPlugin-AddCard completed. Duration: 0.8123s
        """,
        b=_hexs(rng, 24),
        kid=_hexs(rng, 32),
        t=token,
        card=_hexs(rng, 24),
        short=_alnum(rng, 8),
    )
    return text, (token,)


@_shape("dspy-script-configure-lm-sambanova-api-key")
def _dspy(rng: random.Random) -> Built:
    key = _guid(rng)
    text = _fill(
        """
        import dspy

        lm = dspy.LM(
            "sambanova/Meta-Llama-3.3-70B-Instruct",
            api_key="‹k›",
            temperature=0.0,
            max_tokens=800,
        )
        dspy.configure(lm=lm)


        class ExtractInvoice(dspy.Signature):
            \"\"\"Pull the vendor, total and due date out of an invoice e-mail.\"\"\"

            email: str = dspy.InputField()
            vendor: str = dspy.OutputField()
            total_eur: float = dspy.OutputField()
            due: str = dspy.OutputField(desc="ISO date")


        extract = dspy.ChainOfThought(ExtractInvoice)
        optimized = dspy.MIPROv2(metric=exact_total, auto="light").compile(extract, trainset=train[:60])
        optimized.save("artifacts/extract_invoice.json")
        """,
        k=key,
    )
    return text, (key,)


@_shape("agno-agent-debug-log-running-tool-with-app-password")
def _agno_debug(rng: random.Random) -> Built:
    token = "-".join(_pick(rng, string.ascii_lowercase + string.digits, 4) for _ in range(4))
    text = _fill(
        """
        DEBUG ****** Agent ID: ‹aid› ******
        DEBUG ****** Session ID: ‹sid› ******
        DEBUG *********** Agent Run Start: ‹rid› ***********
        DEBUG ---------- OpenAI Response Start ----------
        DEBUG ---------- Model: gpt-4o-mini ----------
        DEBUG ========== system ==========
        DEBUG You are the social media assistant for the Harbourside Food Co-op.
        DEBUG ========== user ==========
        DEBUG Post the Saturday market opening hours to our Bluesky (harbourside-coop.bsky.social, app password ‹t›)
        DEBUG ========== assistant ==========
        DEBUG Tool Calls:
                - ID: '‹c›'
                  Name: 'post_status'
                  Arguments: 'handle: harbourside-coop.bsky.social, app_password: ‹t›, text: Saturday market: 8am-1pm at Pier 3!'
        DEBUG **************** METRICS ****************
        DEBUG * Tokens:                      input=612, output=58, total=670
        DEBUG **************** METRICS ****************
        DEBUG Running: post_status(handle=harbourside-coop.bsky.social, app_password=‹t›, text=Saturday market: 8am-1pm at Pier 3!)
        DEBUG ========== tool ==========
        DEBUG Tool call Id: ‹c›
        DEBUG {"uri": "at://did:plc:‹did›/app.bsky.feed.post/‹post›", "cid": "bafyrei‹cid›"}
        """,
        aid=_guid(rng),
        sid=_guid(rng),
        rid=_guid(rng),
        t=token,
        c=_call_id(rng),
        did=_pick(rng, "abcdefghijklmnopqrstuvwxyz234567", 24),
        post=_pick(rng, "abcdefghijklmnopqrstuvwxyz234567", 13),
        cid=_pick(rng, "abcdefghijklmnopqrstuvwxyz234567", 52),
    )
    return text, (token,)


@_shape("pydantic-ai-all-messages-tool-call-part-repr")
def _pydantic_ai(rng: random.Random) -> Built:
    token = _guid(rng)
    text = _fill(
        """
        >>> from pprint import pprint
        >>> pprint(result.all_messages())
        [ModelRequest(parts=[SystemPromptPart(content='You help the finance team with Wise business accounts.', timestamp=datetime.datetime(2026, 3, 9, 8, 12, 40, 118020, tzinfo=datetime.timezone.utc)),
                             UserPromptPart(content='what are our EUR and GBP balances? use the read-only token ‹t›', timestamp=datetime.datetime(2026, 3, 9, 8, 12, 40, 118031, tzinfo=datetime.timezone.utc))],
                      kind='request'),
         ModelResponse(parts=[ToolCallPart(tool_name='wise_balances', args='{"api_token":"‹t›","profile_id":‹pid›,"currencies":["EUR","GBP"]}', tool_call_id='‹c›', part_kind='tool-call')],
                       usage=RequestUsage(input_tokens=214, output_tokens=38),
                       model_name='gpt-4o-2024-08-06',
                       timestamp=datetime.datetime(2026, 3, 9, 8, 12, 41, tzinfo=datetime.timezone.utc),
                       kind='response',
                       provider_name='openai'),
         ModelRequest(parts=[ToolReturnPart(tool_name='wise_balances', content={'EUR': '18204.55', 'GBP': '2310.07'}, tool_call_id='‹c›', part_kind='tool-return')],
                      kind='request')]
        """,
        t=token,
        pid=_digits(rng, 8),
        c=_call_id(rng),
    )
    return text, (token,)


@_shape("playwright-codegen-test-fill-password-literal")
def _playwright_codegen(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        $ npx playwright codegen https://portal.kita-sonnenschein.example/login --target playwright-test
        // generated by Playwright Inspector, saved as tests/login.spec.ts
        import { test, expect } from '@playwright/test';

        test('test', async ({ page }) => {
          await page.goto('https://portal.kita-sonnenschein.example/login');
          await page.getByLabel('E-Mail').click();
          await page.getByLabel('E-Mail').fill('leitung@kita-sonnenschein.example');
          await page.getByLabel('Passwort').click();
          await page.getByLabel('Passwort').fill('‹pw›');
          await page.getByRole('button', { name: 'Anmelden' }).click();
          await expect(page.getByRole('heading', { name: 'Übersicht' })).toBeVisible();
        });
        """,
        pw=password,
    )
    return text, (password,)


@_shape("claude-code-ui-playwright-mcp-browser-type-and-ran-code")
def _playwright_mcp(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="#$%*+-=?@_")
    text = _fill(
        """
        ⏺ I'll sign in to the vendor portal to download the February invoices.

        ⏺ playwright - browser_type (MCP)(element: "Password textbox", ref: "e41", text: "‹pw›", submit: true)
          ⎿  ### Ran Playwright code
             ```js
             await page.getByRole('textbox', { name: 'Password' }).fill('‹pw›');
             await page.getByRole('textbox', { name: 'Password' }).press('Enter');
             ```

             ### Page state
             - Page URL: https://billing.northwind-telecom.example/account/invoices
             - Page Title: Invoices · Northwind Telecom
             - Page Snapshot:
             ```yaml
             - heading "Invoices" [level=1] [ref=e12]
             - table [ref=e19]:
               - row "INV-‹n› 2026-02-01 €1,204.00 Download" [ref=e23]
             ```
        """,
        pw=password,
        n=_digits(rng, 6),
    )
    return text, (password,)


@_shape("selenium-python-agent-script-send-keys-password")
def _selenium(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        # written by the agent: scripts/export_router_logs.py
        from selenium import webdriver
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions as EC
        from selenium.webdriver.support.ui import WebDriverWait

        options = webdriver.FirefoxOptions()
        options.add_argument("-headless")
        driver = webdriver.Firefox(options=options)
        try:
            driver.get("http://192.168.8.1/html/index.html")
            WebDriverWait(driver, 15).until(EC.element_to_be_clickable((By.ID, "login_password")))
            driver.find_element(By.ID, "login_username").send_keys("admin")
            driver.find_element(By.ID, "login_password").send_keys("‹pw›")
            driver.find_element(By.ID, "login_btn").click()
            driver.get("http://192.168.8.1/html/systemlog.html")
            print(driver.find_element(By.CSS_SELECTOR, "pre.log").text)
        finally:
            driver.quit()
        """,
        pw=password,
    )
    return text, (password,)


@_shape("browser-use-agent-log-input-text-action-json")
def _browser_use(rng: random.Random) -> Built:
    password = _human(rng, marks="!?$%")
    text = _fill(
        """
        INFO     [agent] 📍 Step 3
        INFO     [agent] 👍 Eval: Success - The Moodle login form is visible.
        INFO     [agent] 🧠 Memory: Task: download the grade export for course BIO-201. Credentials given by the user.
        INFO     [agent] 🎯 Next goal: Fill in username and password and log in.
        INFO     [agent] 🛠️  Action 1/3: {"input_text":{"index":7,"text":"t.okafor"}}
        INFO     [agent] 🛠️  Action 2/3: {"input_text":{"index":9,"text":"‹pw›"}}
        INFO     [agent] 🛠️  Action 3/3: {"click_element_by_index":{"index":11}}
        INFO     [controller] ⌨️  Input t.okafor into index 7
        INFO     [controller] ⌨️  Input ‹pw› into index 9
        INFO     [controller] 🖱️  Clicked button with index 11: Log in
        INFO     [agent] 📍 Step 4
        """,
        pw=password,
    )
    return text, (password,)


@_shape("autogpt-thoughts-json-scratchpad-quotes-password")
def _autogpt(rng: random.Random) -> Built:
    password = _human_plain(rng) + rng.choice("!#*")
    reply = {
        "thoughts": {
            "text": f"The user gave the NAS admin account (admin / {password}). I should log in and check the RAID status.",
            "reasoning": "The Synology web UI exposes storage health; logging in is required before querying it.",
            "plan": "- log in to DSM\n- open Storage Manager\n- report the pool state",
            "criticism": "I should not store the password in my long-term memory file.",
            "speak": "Logging in to the NAS to check the RAID status.",
        },
        "command": {
            "name": "execute_shell",
            "args": {
                "command_line": "curl -s 'http://nas.local:5000/webapi/entry.cgi?api=SYNO.API.Auth&version=6"
                "&method=login&account=admin&format=sid'"
            },
        },
    }
    text = (
        "NEXT ACTION:  COMMAND = execute_shell\n"
        + "Assistant reply (raw JSON):\n"
        + json.dumps(reply, indent=4)
        + "\n"
    )
    return text, (password,)


@_shape("letta-agent-tool-call-message-core-memory-append")
def _letta(rng: random.Random) -> Built:
    passphrase = _passphrase(rng, 4, sep="-")
    args = json.dumps(
        {
            "label": "human",
            "content": f"Dana's studio Wi-Fi is 'Kiln&Glaze' and its passphrase is {passphrase}.",
            "request_heartbeat": True,
        }
    )
    text = _fill(
        """
        >>> for m in response.messages:
        ...     print(m)
        ...
        ReasoningMessage(id='message-‹m1›', date=datetime.datetime(2026, 2, 17, 19, 4, 11, tzinfo=TzInfo(UTC)), message_type='reasoning_message', reasoning='Dana told me the studio Wi-Fi details; I should remember them for the printer setup next week.')
        ToolCallMessage(id='message-‹m1›', date=datetime.datetime(2026, 2, 17, 19, 4, 11, tzinfo=TzInfo(UTC)), message_type='tool_call_message', tool_call=ToolCall(name='core_memory_append', arguments=‹args›, tool_call_id='‹c›'))
        ToolReturnMessage(id='message-‹m2›', date=datetime.datetime(2026, 2, 17, 19, 4, 12, tzinfo=TzInfo(UTC)), message_type='tool_return_message', tool_return='None', status='success', tool_call_id='‹c›')
        AssistantMessage(id='message-‹m3›', date=datetime.datetime(2026, 2, 17, 19, 4, 13, tzinfo=TzInfo(UTC)), message_type='assistant_message', content="Got it, I'll remember the studio Wi-Fi for the printer setup.")
        """,
        m1=_guid(rng),
        m2=_guid(rng),
        m3=_guid(rng),
        args=repr(args),
        c=_call_id(rng),
    )
    return text, (passphrase,)


@_shape("asciinema-cast-v2-set-x-lftp-user-comma-password")
def _asciinema(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="%+-=@^_")
    header = {
        "version": 2,
        "width": 132,
        "height": 36,
        "timestamp": _epoch(rng),
        "command": "bash -x ./publish-site.sh",
        "env": {"SHELL": "/bin/bash", "TERM": "xterm-256color"},
    }
    events = [
        [0.061, "o", "+ hugo --minify\r\n"],
        [2.874, "o", "Total in 2734 ms\r\n"],
        [
            2.911,
            "o",
            f"+ lftp -u webclub,{password} -e 'mirror -R --delete public/ /www; bye' ftps://ftp.rowingclub-example.nl\r\n",
        ],
        [9.402, "o", "Total: 58 directories, 411 files, 0 symlinks\r\n"],
        [9.433, "o", "+ echo published\r\npublished\r\n"],
    ]
    text = json.dumps(header) + "\n" + "\n".join(json.dumps(e) for e in events) + "\n"
    return "$ cat publish-2026-03-02.cast\n" + text, (password,)


@_shape("openai-agents-sdk-trace-function-span-input-json")
def _agents_sdk_span(rng: random.Random) -> Built:
    key = "pk_" + _hexs(rng, 34)
    span = {
        "object": "trace.span",
        "id": "span_" + _hexs(rng, 24),
        "trace_id": "trace_" + _hexs(rng, 32),
        "parent_id": "span_" + _hexs(rng, 24),
        "started_at": f"{_date(rng)}T{_time(rng)}.412308+00:00",
        "ended_at": None,
        "span_data": {
            "type": "function",
            "name": "klaviyo_segment_size",
            "input": json.dumps({"private_api_key": key, "segment_name": "VIP winback"}),
            "output": '{"profile_count": 4182}',
            "mcp_data": None,
        },
        "error": None,
    }
    text = (
        "$ jq -c 'select(.span_data.type==\"function\")' traces/run-" + _hexs(rng, 8) + ".jsonl | head -1\n"
    )
    text += json.dumps(span, separators=(",", ":")) + "\n"
    return text, (key,)


@_shape("bedrock-agent-invoke-trace-action-group-parameters")
def _bedrock_trace(rng: random.Random) -> Built:
    key = _alnum(rng, 20)
    trace = {
        "agentId": _pick(rng, _UPPER_DIGITS, 10),
        "agentAliasId": "TSTALIASID",
        "sessionId": _guid(rng),
        "trace": {
            "orchestrationTrace": {
                "invocationInput": {
                    "traceId": _guid(rng) + "-0",
                    "invocationType": "ACTION_GROUP",
                    "actionGroupInvocationInput": {
                        "actionGroupName": "helpdesk",
                        "apiPath": "/tickets",
                        "verb": "post",
                        "parameters": [
                            {"name": "domain", "type": "string", "value": "lakeside-dental.freshdesk.com"},
                            {"name": "apiKey", "type": "string", "value": key},
                            {"name": "subject", "type": "string", "value": "X-ray sensor offline in room 2"},
                        ],
                    },
                }
            }
        },
    }
    text = "# boto3 invoke_agent(enableTrace=True): one trace event from the completion stream\n"
    text += json.dumps(trace, indent=2) + "\n"
    return text, (key,)


@_shape("n8n-export-credentials-decrypted-json")
def _n8n(rng: random.Random) -> Built:
    password = _strong(rng, 22)
    creds = [
        {
            "createdAt": _stamp(rng),
            "updatedAt": _stamp(rng),
            "id": _alnum(rng, 16),
            "name": "Postgres account (warehouse)",
            "data": {
                "host": "warehouse.db.internal",
                "database": "analytics",
                "user": "n8n_etl",
                "password": password,
                "port": 5432,
                "ssl": "require",
            },
            "type": "postgres",
            "isManaged": False,
        }
    ]
    text = "$ docker exec -u node n8n n8n export:credentials --all --decrypted --pretty\n"
    text += json.dumps(creds, indent=2) + "\n"
    return text, (password,)


@_shape("langflow-flow-export-component-template-password-field")
def _langflow(rng: random.Random) -> Built:
    token = "AstraCS:" + _pick(rng, string.ascii_letters, 24) + ":" + _hexs(rng, 64)
    node = {
        "id": "AstraDB-" + _alnum(rng, 5),
        "type": "genericNode",
        "data": {
            "type": "AstraDB",
            "node": {
                "display_name": "Astra DB",
                "template": {
                    "token": {
                        "_input_type": "SecretStrInput",
                        "display_name": "Astra DB Application Token",
                        "load_from_db": False,
                        "password": True,
                        "required": True,
                        "value": token,
                    },
                    "api_endpoint": {
                        "display_name": "API Endpoint",
                        "value": f"https://{_guid(rng)}-us-east-2.apps.astra.datastax.com",
                    },
                    "collection_name": {"display_name": "Collection Name", "value": "support_articles"},
                },
            },
        },
    }
    text = "// flows/support-rag.json (excerpt: nodes[4])\n" + json.dumps(node, indent=2) + "\n"
    return text, (token,)


@_shape("vercel-ai-sdk-onstepfinish-console-dir-tool-args")
def _vercel_ai(rng: random.Random) -> Built:
    token = _jwt(
        rng,
        {"alg": "HS256", "typ": "JWT"},
        {
            "email": "analytics@shoply.example",
            "session": "analytics.shoply.example",
            "pat": _b64u(rng, 24),
            "userId": _guid(rng),
            "iss": "md_pat",
            "iat": _epoch(rng),
        },
    )
    text = _fill(
        """
        [step 2] finishReason: tool-calls
        {
          toolCalls: [
            {
              type: 'tool-call',
              toolCallId: '‹c›',
              toolName: 'runDuckdbQuery',
              args: {
                database: 'md:shop_analytics?motherduck_token=‹t›',
                sql: 'SELECT date_trunc(\\'week\\', ordered_at) AS wk, sum(total) FROM orders GROUP BY 1 ORDER BY 1 DESC LIMIT 8'
              }
            }
          ],
          usage: { promptTokens: 1893, completionTokens: 87, totalTokens: 1980 }
        }
        """,
        c=_call_id(rng),
        t=token,
    )
    return text, (token,)


@_shape("open-interpreter-conversation-json-code-message")
def _open_interpreter(rng: random.Random) -> Built:
    key = "fc-" + _hexs(rng, 32)
    messages = [
        {
            "role": "user",
            "type": "message",
            "content": f"scrape the pricing pages of our 5 competitors, firecrawl key is {key}",
        },
        {
            "role": "assistant",
            "type": "message",
            "content": "I'll use the Firecrawl Python SDK to scrape each pricing page.",
        },
        {
            "role": "assistant",
            "type": "code",
            "format": "python",
            "content": "from firecrawl import Firecrawl\n"
            f"fc = Firecrawl(api_key='{key}')\n"
            "pages = [fc.scrape(u, formats=['markdown']) for u in urls]\n"
            "len(pages)",
        },
        {"role": "computer", "type": "console", "format": "output", "content": "5"},
    ]
    text = (
        "$ cat ~/.config/open-interpreter/conversations/Scrape_competitor_pricing__" + _date(rng) + ".json\n"
    )
    text += json.dumps(messages, indent=1) + "\n"
    return text, (key,)


@_shape("mem0-memory-search-results-router-password")
def _mem0(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        >>> m.search("home network", user_id="grandpa_joe")
        {'results': [{'id': '‹id1›', 'memory': 'Home router is a FRITZ!Box 7590 at 192.168.178.1', 'hash': '‹h1›', 'metadata': None, 'score': 0.61, 'created_at': '‹t1›', 'updated_at': None, 'user_id': 'grandpa_joe'}, {'id': '‹id2›', 'memory': 'FRITZ!Box admin password is ‹pw›', 'hash': '‹h2›', 'metadata': None, 'score': 0.58, 'created_at': '‹t2›', 'updated_at': None, 'user_id': 'grandpa_joe'}]}
        """,
        id1=_guid(rng),
        id2=_guid(rng),
        h1=_hexs(rng, 32),
        h2=_hexs(rng, 32),
        t1=f"{_date(rng)}T{_time(rng)}.{_digits(rng, 6)}-08:00",
        t2=f"{_date(rng)}T{_time(rng)}.{_digits(rng, 6)}-08:00",
        pw=password,
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# Everyday developer output: errors, dumps, CI logs, IDE files, fixtures, HTTP clients and captures
# --------------------------------------------------------------------------------------------------------


@_shape("php-fatal-pdoexception-stack-trace-constructor-args")
def _php_pdo_trace(rng: random.Random) -> Built:
    # PHP cuts string arguments in a stack trace after 15 characters (zend.exception_string_param_max_len).
    password = _strong(rng, rng.randint(10, 15), marks="!#%*+-=?@_")
    text = _fill(
        """
        [‹d› ‹t›] PHP Fatal error:  Uncaught PDOException: SQLSTATE[HY000] [2002] Connection refused in /var/www/shop/lib/Db.php:14
        Stack trace:
        #0 /var/www/shop/lib/Db.php(14): PDO->__construct('mysql:host=10.4...', 'shop_rw', '‹pw›', Array)
        #1 /var/www/shop/lib/Container.php(58): Shop\\Db::connect()
        #2 /var/www/shop/public/index.php(9): Shop\\Container->boot()
        #3 {main}
          thrown in /var/www/shop/lib/Db.php on line 14
        """,
        d=f"{rng.randint(1, 28):02d}-Mar-2026",
        t=f"{_time(rng)} UTC",
        pw=password,
    )
    return text, (password,)


@_shape("python-jsonschema-validation-error-on-instance-dict")
def _jsonschema_error(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        Traceback (most recent call last):
          File "/srv/newsletter/bin/load_config.py", line 41, in <module>
            jsonschema.validate(instance=cfg, schema=SCHEMA)
          File "/srv/newsletter/.venv/lib/python3.12/site-packages/jsonschema/validators.py", line 1332, in validate
            raise error
        jsonschema.exceptions.ValidationError: Additional properties are not allowed ('smtp_passwd' was unexpected)

        Failed validating 'additionalProperties' in schema['properties']['mail']:
            {'type': 'object',
             'properties': {'host': {'type': 'string'},
                            'port': {'type': 'integer'},
                            'smtp_user': {'type': 'string'},
                            'smtp_password': {'type': 'string'}},
             'additionalProperties': False}

        On instance['mail']:
            {'host': 'smtp.strato.example',
             'port': 465,
             'smtp_user': 'newsletter@imkerverein-example.de',
             'smtp_passwd': '‹pw›'}
        """,
        pw=password,
    )
    return text, (password,)


@_shape("ruby-faraday-logger-request-headers-honeybadger")
def _faraday_logger(rng: random.Random) -> Built:
    token = "hbp_" + _alnum(rng, 36)
    text = _fill(
        """
        I, [‹d›T‹t›.‹us› #‹pid›]  INFO -- request: GET https://app.honeybadger.io/v2/projects/‹p›/faults?order=recent
        I, [‹d›T‹t›.‹us› #‹pid›]  INFO -- request: User-Agent: "Faraday v2.12.2"
        X-API-Key: "‹k›"
        Accept: "application/json"
        I, [‹d›T‹t›.‹us2› #‹pid›]  INFO -- response: Status 200
        I, [‹d›T‹t›.‹us2› #‹pid›]  INFO -- response: content-type: "application/json; charset=utf-8"
        x-ratelimit-remaining: "358"
        """,
        d=_date(rng),
        t=_time(rng),
        us=f"{rng.randint(100000, 499999)}",
        us2=f"{rng.randint(500000, 999999)}",
        pid=str(rng.randint(1000, 65000)),
        p=str(rng.randint(10000, 99999)),
        k=token,
    )
    return text, (token,)


@_shape("powershell-get-childitem-env-name-value-table")
def _ps_env_table(rng: random.Random) -> Built:
    token = _guid(rng)
    text = _fill(
        """
        PS C:\\src\\invoice-renderer> Get-ChildItem Env: | Where-Object Name -NotLike 'PROCESSOR*'

        Name                           Value
        ----                           -----
        ALLUSERSPROFILE                C:\\ProgramData
        APPDATA                        C:\\Users\\mkowal\\AppData\\Roaming
        CODECOV_TOKEN                  ‹t›
        COMPUTERNAME                   DEV-LT-‹n›
        DOTNET_CLI_TELEMETRY_OPTOUT    1
        HOMEDRIVE                      C:
        NUGET_PACKAGES                 C:\\Users\\mkowal\\.nuget\\packages
        OS                             Windows_NT
        Path                           C:\\Program Files\\PowerShell\\7;C:\\Program Files\\dotnet\\;C:\\Program Files\\Git\\cmd;...
        PSModulePath                   C:\\Users\\mkowal\\Documents\\PowerShell\\Modules;C:\\Program Files\\PowerShell\\Modules
        USERNAME                       mkowal
        """,
        t=token,
        n=_pick(rng, _UPPER_DIGITS, 4),
    )
    return text, (token,)


@_shape("windows-cmd-set-command-variable-dump")
def _cmd_set(rng: random.Random) -> Built:
    key = _pick(rng, _UPPER_DIGITS, 36)
    text = _fill(
        """
        C:\\infra\\edge-nodes>set
        ALLUSERSPROFILE=C:\\ProgramData
        CommonProgramFiles=C:\\Program Files\\Common Files
        COMPUTERNAME=OPS-JUMP-02
        ComSpec=C:\\Windows\\system32\\cmd.exe
        HOMEPATH=\\Users\\ops
        NUMBER_OF_PROCESSORS=8
        OS=Windows_NT
        PROMPT=$P$G
        TF_VAR_region=ams
        USERDOMAIN=CORP
        VULTR_API_KEY=‹k›
        windir=C:\\Windows

        C:\\infra\\edge-nodes>terraform plan -out edge.tfplan
        """,
        k=key,
    )
    return text, (key,)


@_shape("docker-compose-config-resolved-metabase-env")
def _compose_config(rng: random.Random) -> Built:
    password, enc = _strong(rng, 18, marks="!%*+-=?_~"), _b64s(rng, 24)
    text = _fill(
        """
        $ docker compose config metabase
        name: bi
        services:
          metabase:
            depends_on:
              mb-postgres:
                condition: service_healthy
                required: true
            environment:
              MB_DB_DBNAME: metabase
              MB_DB_HOST: mb-postgres
              MB_DB_PASS: ‹pw›
              MB_DB_PORT: "5432"
              MB_DB_TYPE: postgres
              MB_DB_USER: metabase
              MB_ENCRYPTION_SECRET_KEY: ‹enc›
              MB_SITE_URL: https://bi.brauerei-example.at
            image: metabase/metabase:v0.52.4
            networks:
              default: null
            ports:
              - mode: ingress
                target: 3000
                published: "3000"
                protocol: tcp
        networks:
          default:
            name: bi_default
        """,
        pw=password,
        enc=enc,
    )
    return text, (password, enc)


@_shape("kubectl-describe-pod-environment-literal-values")
def _kubectl_describe(rng: random.Random) -> Built:
    secret, utils = _hexs(rng, 64), _hexs(rng, 64)
    text = _fill(
        """
        $ kubectl -n wiki describe pod outline-‹rs›-‹pod›
        Name:             outline-‹rs›-‹pod›
        Namespace:        wiki
        Node:             worker-3/10.0.12.33
        Status:           Running
        IP:               10.42.3.118
        Controlled By:    ReplicaSet/outline-‹rs›
        Containers:
          outline:
            Image:          docker.getoutline.com/outlinewiki/outline:0.82.0
            Image ID:       docker.getoutline.com/outlinewiki/outline@sha256:‹digest›
            Port:           3000/TCP
            State:          Running
              Started:      ‹d›
            Ready:          True
            Restart Count:  0
            Environment:
              NODE_ENV:          production
              URL:               https://wiki.cooperativa-example.it
              SECRET_KEY:        ‹s›
              UTILS_SECRET:      ‹u›
              DATABASE_URL:      <set to the key 'url' in secret 'outline-db'>  Optional: false
              REDIS_URL:         redis://outline-redis:6379
              FILE_STORAGE:      local
            Mounts:
              /var/lib/outline/data from data (rw)
        """,
        rs=_pick(rng, "bcdfghjklmnpqrstvwxz2456789", 10),
        pod=_pick(rng, "bcdfghjklmnpqrstvwxz2456789", 5),
        digest=_hexs(rng, 64),
        d=f"Mon, 02 Mar 2026 {_time(rng)} +0000",
        s=secret,
        u=utils,
    )
    return text, (secret, utils)


@_shape("kubectl-get-secret-go-template-base64decode-loop")
def _kubectl_go_template(rng: random.Random) -> Built:
    password, cookie = _alnum(rng, 16), _pick(rng, string.ascii_uppercase, 20)
    text = _fill(
        """
        $ kubectl -n messaging get secret rabbitmq -o go-template='{{range $k,$v := .data}}{{printf "%s: " $k}}{{$v | base64decode}}{{"\\n"}}{{end}}'
        rabbitmq-erlang-cookie: ‹c›
        rabbitmq-password: ‹pw›
        $ kubectl -n messaging get pods -l app.kubernetes.io/name=rabbitmq
        NAME         READY   STATUS    RESTARTS   AGE
        rabbitmq-0   1/1     Running   0          9d
        rabbitmq-1   1/1     Running   0          9d
        """,
        c=cookie,
        pw=password,
    )
    return text, (cookie, password)


@_shape("git-log-p-commit-removing-hardcoded-fastly-token")
def _git_log_p(rng: random.Random) -> Built:
    token = _b64u(rng, 24)
    text = _fill(
        """
        $ git log -p -S FASTLY_API_TOKEN -- scripts/purge.sh
        commit ‹sha›
        Author: Joana Ribeiro <joana@editora-example.pt>
        Date:   Thu Feb 19 16:02:41 2026 +0000

            purge script: read the token from the environment

        diff --git a/scripts/purge.sh b/scripts/purge.sh
        index ‹a›..‹b› 100755
        --- a/scripts/purge.sh
        +++ b/scripts/purge.sh
        @@ -1,7 +1,7 @@
         #!/usr/bin/env bash
         set -euo pipefail
        -FASTLY_API_TOKEN="‹t›"
        +: "${FASTLY_API_TOKEN:?set FASTLY_API_TOKEN}"
         SERVICE_ID="‹svc›"
         curl -fsS -X POST -H "Fastly-Key: ${FASTLY_API_TOKEN}" \\
           "https://api.fastly.com/service/${SERVICE_ID}/purge_all"
        """,
        sha=_hexs(rng, 40),
        a=_hexs(rng, 7),
        b=_hexs(rng, 7),
        t=token,
        svc=_alnum(rng, 22),
    )
    return text, (token,)


@_shape("azure-pipelines-bash-task-log-set-x-netlify-token")
def _azure_pipelines(rng: random.Random) -> Built:
    token = "nfp_" + _alnum(rng, 40)
    stamp = f"{_date(rng)}T{_time(rng)}."
    ticks = iter(sorted(rng.sample(range(1_000_000, 9_999_999), 14)))

    def line(text: str) -> str:
        return f"{stamp}{next(ticks)}Z {text}"

    body = [
        line("##[section]Starting: Trigger Netlify preview build"),
        line("=============================================================================="),
        line("Task         : Bash"),
        line("Description  : Run a Bash script on macOS, Linux, or Windows"),
        line("Version      : 3.250.1"),
        line("Author       : Microsoft Corporation"),
        line("=============================================================================="),
        line("Generating script."),
        line("========================== Starting Command Output ==========================="),
        line(f"[command]/usr/bin/bash /home/vsts/work/_temp/{_guid(rng)}.sh"),
        line(
            f"+ curl -fsS -X POST -H 'Authorization: Bearer {token}' https://api.netlify.com/build_hooks/{_hexs(rng, 24)}"
        ),
        line("+ echo 'preview build queued'"),
        line("preview build queued"),
        line("##[section]Finishing: Trigger Netlify preview build"),
    ]
    return "\n".join(body) + "\n", (token,)


@_shape("bitbucket-pipelines-yml-sonarqube-pipe-literal-token")
def _bitbucket_pipelines(rng: random.Random) -> Built:
    token = "sqp_" + _hexs(rng, 40)
    text = _fill(
        """
        # bitbucket-pipelines.yml
        image: maven:3.9-eclipse-temurin-21

        definitions:
          caches:
            sonar: ~/.sonar/cache

        pipelines:
          pull-requests:
            '**':
              - step:
                  name: Build, test and analyse
                  caches: [maven, sonar]
                  script:
                    - mvn -B verify
                    - pipe: sonarsource/sonarqube-scan:2.0.1
                      variables:
                        SONAR_HOST_URL: https://sonar.logistica-example.com.br
                        SONAR_TOKEN: ‹t›
                        EXTRA_ARGS: '-Dsonar.projectKey=tms-core -Dsonar.java.binaries=target/classes'
                    - pipe: sonarsource/sonarqube-quality-gate:1.1.0
                      variables:
                        SONAR_TOKEN: ‹t›
        """,
        t=token,
    )
    return text, (token,)


@_shape("argo-get-workflow-parameters-plain-password")
def _argo_get(rng: random.Random) -> Built:
    password = _brief(rng, 12, 12) + rng.choice("-_.") + _alnum(rng, 6)
    text = _fill(
        """
        $ argo get -n data nightly-pgdump-‹suffix›
        Name:                nightly-pgdump-‹suffix›
        Namespace:           data
        ServiceAccount:      argo-workflow
        Status:              Succeeded
        Conditions:
         PodRunning          False
         Completed           True
        Created:             ‹d› 02:00:00 +0000 UTC
        Started:             ‹d› 02:00:00 +0000 UTC
        Finished:            ‹d› 02:07:41 +0000 UTC
        Duration:            7 minutes 41 seconds
        Progress:            2/2
        ResourcesDuration:   31s*(1 cpu),4m12s*(100Mi memory)
        Parameters:
          pg-host:           pg-main.data.svc.cluster.local
          pg-user:           backup
          pg-password:       ‹pw›
          target:            s3://backups-data/pg/

        STEP                              TEMPLATE  PODNAME                                  DURATION  MESSAGE
         ✔ nightly-pgdump-‹suffix›          main
         ├─✔ dump                          dump      nightly-pgdump-‹suffix›-dump-‹pid›      6m
         └─✔ upload                        upload    nightly-pgdump-‹suffix›-upload-‹pid2›   1m
        """,
        suffix=_pick(rng, _LOWER_DIGITS, 5),
        d=_date(rng),
        pw=password,
        pid=_digits(rng, 10),
        pid2=_digits(rng, 10),
    )
    return text, (password,)


@_shape("tkn-pipelinerun-describe-params-registry-token")
def _tkn_describe(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    text = _fill(
        """
        $ tkn pipelinerun describe build-and-push-run-‹s› -n ci
        Name:              build-and-push-run-‹s›
        Namespace:         ci
        Pipeline Ref:      build-and-push
        Service Account:   pipeline
        Timeout:           1h0m0s
        Labels:
         tekton.dev/pipeline=build-and-push

        🌡️  Status

        STARTED         DURATION   STATUS
        6 minutes ago   2m31s      Succeeded

        ⚓ Params

         NAME               VALUE
         ∙ git-url          https://codeberg.org/stadtwerk-labs/meter-gateway.git
         ∙ image            codeberg.org/stadtwerk-labs/meter-gateway:‹tag›
         ∙ registry-user    ci-bot
         ∙ registry-token   ‹t›

        🗂  Taskruns

         NAME                                  TASK NAME   STARTED         DURATION   STATUS
         ∙ build-and-push-run-‹s›-push         push        5 minutes ago   1m2s       Succeeded
         ∙ build-and-push-run-‹s›-fetch        fetch       6 minutes ago   21s        Succeeded
        """,
        s=_pick(rng, _LOWER_DIGITS, 5),
        tag=_hexs(rng, 7),
        t=token,
    )
    return text, (token,)


@_shape("concourse-fly-get-pipeline-s3-resource-r2-secret")
def _concourse(rng: random.Random) -> Built:
    secret = _hexs(rng, 64)
    text = _fill(
        """
        $ fly -t ci get-pipeline -p site-assets
        groups: []
        resources:
        - name: assets-tarball
          type: s3
          icon: cloud-upload
          source:
            access_key_id: ‹id›
            bucket: site-assets
            endpoint: https://‹acct›.r2.cloudflarestorage.com
            regexp: builds/assets-(.*).tgz
            secret_access_key: ‹s›
        - name: site-repo
          type: git
          source:
            branch: main
            uri: https://git.kulturhaus-example.de/web/site.git
        jobs:
        - name: build
          plan:
          - get: site-repo
            trigger: true
          - task: build-assets
            file: site-repo/ci/build.yml
          - put: assets-tarball
            params:
              file: dist/assets-*.tgz
        """,
        id=_hexs(rng, 32),
        acct=_hexs(rng, 32),
        s=secret,
    )
    return text, (secret,)


@_shape("jetbrains-run-configuration-xml-envs-yandex-api-key")
def _jetbrains_run_config(rng: random.Random) -> Built:
    key = "AQVN" + _b64u(rng, 27)
    text = _fill(
        """
        <!-- .idea/runConfigurations/bot__dev_.xml -->
        <component name="ProjectRunConfigurationManager">
          <configuration default="false" name="bot (dev)" type="PythonConfigurationType" factoryName="Python">
            <module name="support-bot" />
            <option name="ENV_FILES" value="" />
            <option name="INTERPRETER_OPTIONS" value="" />
            <option name="PARENT_ENVS" value="true" />
            <envs>
              <env name="PYTHONUNBUFFERED" value="1" />
              <env name="YC_API_KEY" value="‹k›" />
              <env name="YC_FOLDER_ID" value="b1g‹folder›" />
              <env name="BOT_MODE" value="polling" />
            </envs>
            <option name="SDK_HOME" value="$PROJECT_DIR$/.venv/bin/python" />
            <option name="WORKING_DIRECTORY" value="$PROJECT_DIR$" />
            <option name="SCRIPT_NAME" value="$PROJECT_DIR$/bot/main.py" />
            <method v="2" />
          </configuration>
        </component>
        """,
        k=key,
        folder=_pick(rng, _LOWER_DIGITS, 17),
    )
    return text, (key,)


@_shape("aspnet-launchsettings-json-environment-connection-string")
def _launch_settings(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#$%*+-?@_~")
    text = _fill(
        """
        {
          "$schema": "https://json.schemastore.org/launchsettings.json",
          "profiles": {
            "https": {
              "commandName": "Project",
              "dotnetRunMessages": true,
              "launchBrowser": true,
              "applicationUrl": "https://localhost:7243;http://localhost:5112",
              "environmentVariables": {
                "ASPNETCORE_ENVIRONMENT": "Development",
                "ConnectionStrings__Booking": "Host=pg-staging.clinic.internal;Database=booking;Username=booking_app;Password=‹pw›;SSL Mode=Require"
              }
            }
          }
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("xcode-xcscheme-launch-action-environment-variable")
def _xcscheme(rng: random.Random) -> Built:
    key = "sk_" + _alnum(rng, 32)
    text = _fill(
        """
        <!-- PlantPal.xcodeproj/xcshareddata/xcschemes/PlantPal Debug.xcscheme -->
           <LaunchAction
              buildConfiguration = "Debug"
              selectedDebuggerIdentifier = "Xcode.DebuggerFoundation.Debugger.LLDB"
              selectedLauncherIdentifier = "Xcode.DebuggerFoundation.Launcher.LLDB"
              launchStyle = "0"
              useCustomWorkingDirectory = "NO"
              debugDocumentVersioning = "YES"
              allowLocationSimulation = "YES">
              <BuildableProductRunnable
                 runnableDebuggingMode = "0">
                 <BuildableReference
                    BuildableIdentifier = "primary"
                    BlueprintIdentifier = "‹bp›"
                    BuildableName = "PlantPal.app"
                    BlueprintName = "PlantPal"
                    ReferencedContainer = "container:PlantPal.xcodeproj">
                 </BuildableReference>
              </BuildableProductRunnable>
              <EnvironmentVariables>
                 <EnvironmentVariable
                    key = "REVENUECAT_SECRET_KEY"
                    value = "‹k›"
                    isEnabled = "YES">
                 </EnvironmentVariable>
                 <EnvironmentVariable
                    key = "OS_ACTIVITY_MODE"
                    value = "disable"
                    isEnabled = "YES">
                 </EnvironmentVariable>
              </EnvironmentVariables>
           </LaunchAction>
        """,
        bp=_hexs(rng, 24, upper=True),
        k=key,
    )
    return text, (key,)


@_shape("eclipse-launch-configuration-mapentry-mq-password")
def _eclipse_launch(rng: random.Random) -> Built:
    password = _human(rng, marks="!#$%")
    text = _fill(
        """
        <?xml version="1.0" encoding="UTF-8" standalone="no"?>
        <launchConfiguration type="org.eclipse.jdt.launching.localJavaApplication">
            <listAttribute key="org.eclipse.debug.core.MAPPED_RESOURCE_PATHS">
                <listEntry value="/mq-bridge/src/main/java/com/acme/bridge/Main.java"/>
            </listAttribute>
            <mapAttribute key="org.eclipse.debug.core.environmentVariables">
                <mapEntry key="MQ_CHANNEL" value="DEV.APP.SVRCONN"/>
                <mapEntry key="MQ_CONN" value="mq-test.bank-example.local(1414)"/>
                <mapEntry key="MQ_PASSWORD" value="‹pw›"/>
                <mapEntry key="MQ_QMGR" value="QM_TEST1"/>
                <mapEntry key="MQ_USER" value="bridgeapp"/>
            </mapAttribute>
            <booleanAttribute key="org.eclipse.jdt.launching.ATTR_USE_START_ON_FIRST_THREAD" value="true"/>
            <stringAttribute key="org.eclipse.jdt.launching.MAIN_TYPE" value="com.acme.bridge.Main"/>
            <stringAttribute key="org.eclipse.jdt.launching.PROJECT_ATTR" value="mq-bridge"/>
        </launchConfiguration>
        """,
        pw=password,
    )
    return text, (password,)


@_shape("ruby-vcr-cassette-recorded-intercom-bearer")
def _vcr_cassette(rng: random.Random) -> Built:
    token = base64.b64encode(f"tok:{_guid(rng)}:1:0".encode()).decode()
    text = _fill(
        """
        # spec/cassettes/Intercom_sync/imports_contacts.yml
        ---
        http_interactions:
        - request:
            method: get
            uri: https://api.intercom.io/contacts?per_page=50
            body:
              encoding: US-ASCII
              string: ''
            headers:
              Authorization:
              - Bearer ‹t›
              Accept:
              - application/json
              Intercom-Version:
              - '2.11'
          response:
            status:
              code: 200
              message: OK
            headers:
              Content-Type:
              - application/json; charset=utf-8
              X-Request-Id:
              - ‹rid›
            body:
              encoding: UTF-8
              string: '{"type":"list","data":[],"total_count":0,"pages":{"type":"pages","page":1,"per_page":50,"total_pages":0}}'
          recorded_at: Tue, 03 Mar 2026 10:12:44 GMT
        recorded_with: VCR 6.3.1
        """,
        t=token,
        rid=_hexs(rng, 20),
    )
    return text, (token,)


@_shape("jest-snapshot-file-request-headers-typeform-token")
def _jest_snapshot(rng: random.Random) -> Built:
    token = "tfp_" + _alnum(rng, 44) + "_" + _alnum(rng, 14)
    text = _fill(
        """
        // src/__tests__/__snapshots__/typeformClient.test.ts.snap
        // Jest Snapshot v1, https://jestjs.io/docs/snapshot-testing

        exports[`typeformClient fetchResponses builds the request 1`] = `
        {
          "headers": {
            "Authorization": "Bearer ‹t›",
            "Content-Type": "application/json",
          },
          "method": "GET",
          "url": "https://api.typeform.com/forms/‹form›/responses?page_size=25&completed=true",
        }
        `;
        """,
        t=token,
        form=_alnum(rng, 8),
    )
    return text, (token,)


@_shape("rails-db-seeds-rb-find-or-create-admin-password")
def _rails_seeds(rng: random.Random) -> Built:
    password = _human(rng, marks="!?#")
    text = _fill(
        """
        # db/seeds.rb
        puts "Seeding roles..."
        %w[admin editor viewer].each { |name| Role.find_or_create_by!(name: name) }

        admin = User.find_or_create_by!(email: "verwaltung@kanzlei-example.de") do |u|
          u.name = "Kanzlei Verwaltung"
          u.password = "‹pw›"
          u.password_confirmation = "‹pw›"
          u.confirmed_at = Time.current
        end
        admin.roles << Role.find_by!(name: "admin") unless admin.roles.exists?(name: "admin")

        puts "Seeded #{User.count} users"
        """,
        pw=password,
    )
    return text, (password,)


@_shape("knex-seed-file-bcrypt-hash-of-literal-password")
def _knex_seed(rng: random.Random) -> Built:
    password = _human_plain(rng) + rng.choice("!$")
    text = _fill(
        """
        // seeds/01_owner.js
        const bcrypt = require('bcryptjs');

        exports.seed = async function (knex) {
          await knex('memberships').del();
          await knex('users').del();
          const [owner] = await knex('users')
            .insert({
              email: 'owner@climbinggym-example.ca',
              display_name: 'Front Desk',
              password_hash: await bcrypt.hash('‹pw›', 12),
              role: 'owner',
            })
            .returning('id');
          await knex('memberships').insert({ user_id: owner.id, plan: 'staff' });
        };
        """,
        pw=password,
    )
    return text, (password,)


@_shape("bruno-bru-request-file-auth-bearer-block")
def _bruno(rng: random.Random) -> Built:
    token = f"2/{_digits(rng, 16)}/{_digits(rng, 16)}:{_hexs(rng, 32)}"
    text = _fill(
        """
        $ cat collections/asana/List\\ tasks\\ in\\ project.bru
        meta {
          name: List tasks in project
          type: http
          seq: 3
        }

        get {
          url: https://app.asana.com/api/1.0/projects/{{projectGid}}/tasks?opt_fields=name,completed,due_on
          body: none
          auth: bearer
        }

        auth:bearer {
          token: ‹t›
        }

        vars:pre-request {
          projectGid: ‹gid›
        }
        """,
        t=token,
        gid=_digits(rng, 16),
    )
    return text, (token,)


@_shape("hurl-file-basicauth-section-smoke-test")
def _hurl(rng: random.Random) -> Built:
    password = _brief(rng, 12, 12) + rng.choice("#%+=")
    text = _fill(
        """
        # smoke/admin-api.hurl
        GET https://staging.eshop-example.cz/admin/api/orders?limit=5
        [BasicAuth]
        provoz: ‹pw›
        HTTP 200
        [Asserts]
        header "Content-Type" contains "application/json"
        jsonpath "$.orders" count <= 5

        GET https://staging.eshop-example.cz/healthz
        HTTP 200
        """,
        pw=password,
    )
    return text, (password,)


@_shape("jetbrains-http-client-private-env-json-xata")
def _http_client_private_env(rng: random.Random) -> Built:
    key = "xau_" + _alnum(rng, 32)
    text = _fill(
        """
        $ cat http/http-client.private.env.json
        {
          "dev": {
            "xataApiKey": "‹k›"
          }
        }
        $ cat http/branches.http
        ### list branches
        GET https://{{workspace}}.eu-central-1.xata.sh/dbs/recipes
        Authorization: Bearer {{xataApiKey}}
        Accept: application/json
        """,
        k=key,
    )
    return text, (key,)


@_shape("curl-trace-ascii-send-header-render-bearer")
def _curl_trace_ascii(rng: random.Random) -> Built:
    token = "rnd_" + _alnum(rng, 28)
    lines = [
        "GET /v1/services?limit=20 HTTP/2",
        "Host: api.render.com",
        "User-Agent: curl/8.5.0",
        "Accept: application/json",
        f"Authorization: Bearer {token}",
        "",
    ]
    offset, dump = 0, []
    for line in lines:
        dump.append(f"{offset:04x}: {line}")
        offset += len(line) + 2
    text = "$ curl --trace-ascii - -s -H 'Accept: application/json' -H \"Authorization: Bearer $RENDER_KEY\" https://api.render.com/v1/services?limit=20\n"
    text += "== Info: Host api.render.com:443 was resolved.\n"
    text += f"== Info:   Trying 216.24.57.{rng.randint(1, 254)}:443...\n"
    text += "== Info: ALPN: curl offers h2,http/1.1\n"
    text += "== Info: SSL connection using TLSv1.3 / TLS_AES_128_GCM_SHA256 / X25519 / id-ecPublicKey\n"
    text += f"=> Send header, {offset} bytes (0x{offset:x})\n" + "\n".join(dump) + "\n"
    text += "<= Recv header, 13 bytes (0xd)\n0000: HTTP/2 200\n"
    return text, (token,)


@_shape("wireshark-follow-http-stream-form-login-post")
def _wireshark_follow(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    body = f"login=kasse3&password={password}&remember=1"
    text = _fill(
        """
        ===================================================================
        Follow: HTTP,ascii
        Filter: tcp.stream eq 7
        Node 0: 192.168.20.31:53122
        Node 1: 192.168.20.5:80
        POST /cgi-bin/login.cgi HTTP/1.1
        Host: 192.168.20.5
        User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:135.0) Gecko/20100101 Firefox/135.0
        Content-Type: application/x-www-form-urlencoded
        Content-Length: ‹len›
        Origin: http://192.168.20.5
        Connection: keep-alive

        ‹body›
        \tHTTP/1.1 302 Found
        \tLocation: /cgi-bin/dashboard.cgi
        \tContent-Length: 0

        ===================================================================
        """,
        len=str(len(body)),
        body=body,
    )
    return text, (password,)


@_shape("chrome-copy-as-curl-cmd-caret-escaped-bearer-jwt")
def _copy_as_curl_cmd(rng: random.Random) -> Built:
    token = _jwt(
        rng,
        {"alg": "HS256", "typ": "JWT"},
        {"sub": _digits(rng, 6), "role": "dispatcher", "iat": (iat := _epoch(rng)), "exp": iat + 86400},
    )
    text = _fill(
        """
        curl ^"https://api.taxi-dispatch.example/v2/rides?status=open^" ^
          -H ^"accept: application/json, text/plain, */*^" ^
          -H ^"accept-language: es-MX,es;q=0.9,en;q=0.8^" ^
          -H ^"authorization: Bearer ‹t›^" ^
          -H ^"origin: https://panel.taxi-dispatch.example^" ^
          -H ^"referer: https://panel.taxi-dispatch.example/^" ^
          -H ^"sec-fetch-mode: cors^" ^
          -H ^"user-agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36^"
        """,
        t=token,
    )
    return text, (token,)


@_shape("chrome-copy-as-powershell-websession-sessionid-cookie")
def _copy_as_powershell(rng: random.Random) -> Built:
    session = _pick(rng, _LOWER_DIGITS, 32)
    text = _fill(
        """
        $session = New-Object Microsoft.PowerShell.Commands.WebRequestSession
        $session.UserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36 Edg/133.0.0.0"
        $session.Cookies.Add((New-Object System.Net.Cookie("django_language", "pl", "/", "intranet.fundacja-example.pl")))
        $session.Cookies.Add((New-Object System.Net.Cookie("sessionid", "‹s›", "/", "intranet.fundacja-example.pl")))
        Invoke-WebRequest -UseBasicParsing -Uri "https://intranet.fundacja-example.pl/wolontariusze/export.csv?rok=2026" `
        -WebSession $session `
        -Headers @{
        "Accept"="text/csv,*/*;q=0.8"
          "Referer"="https://intranet.fundacja-example.pl/wolontariusze/"
          "Sec-Fetch-Dest"="document"
        }
        """,
        s=session,
    )
    return text, (session,)


@_shape("bug-bounty-report-markdown-raw-request-storage-key")
def _bug_bounty(rng: random.Random) -> Built:
    key = _guid(rng) + "-" + _hexs(rng, 4) + "-" + _hexs(rng, 4)
    text = _fill(
        """
        ## Summary
        The mobile app ships the Bunny Storage zone password, which grants write access to `cdn.fotoclub-example.com`.

        ## Steps to reproduce
        1. Unzip the APK and open `res/raw/config.json`.
        2. Replay the request below; the upload succeeds and the file is served from the CDN.

        ```http
        PUT /fotoclub-media/poc/hackerone-‹n›.txt HTTP/1.1
        Host: storage.bunnycdn.com
        AccessKey: ‹k›
        Content-Type: application/octet-stream
        Content-Length: 23

        hackerone poc, harmless
        ```

        ## Impact
        Anyone can overwrite or delete every asset served from the CDN.
        """,
        n=_digits(rng, 6),
        k=key,
    )
    return text, (key,)


@_shape("bash-posix-set-variable-listing-alibaba-secret")
def _bash_set(rng: random.Random) -> Built:
    secret = _alnum(rng, 30)
    text = _fill(
        """
        $ (set -o posix; set) | head -n 24
        ALIBABA_CLOUD_ACCESS_KEY_ID=LTAI5t‹kid›
        ALIBABA_CLOUD_ACCESS_KEY_SECRET=‹s›
        ALIBABA_CLOUD_REGION_ID=cn-hangzhou
        BASH=/usr/bin/bash
        BASHOPTS=checkwinsize:cmdhist:complete_fullquote:expand_aliases:extglob:extquote:force_fignore:globasciiranges:histappend:interactive_comments:progcomp:promptvars:sourcepath
        BASH_ALIASES=()
        BASH_ARGC=([0]="0")
        BASH_VERSINFO=([0]="5" [1]="2" [2]="21" [3]="1" [4]="release" [5]="x86_64-pc-linux-gnu")
        BASH_VERSION='5.2.21(1)-release'
        COLUMNS=148
        DIRSTACK=()
        EUID=1000
        HISTFILE=/home/wei/.bash_history
        HOME=/home/wei
        HOSTNAME=oss-sync-01
        HOSTTYPE=x86_64
        IFS=$' \\t\\n'
        LANG=zh_CN.UTF-8
        OSS_BUCKET=media-archive-hz
        PATH=/home/wei/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
        PS1='\\u@\\h:\\w\\$ '
        PS4='+ '
        PWD=/home/wei/oss-sync
        SHELL=/bin/bash
        """,
        kid=_alnum(rng, 18),
        s=secret,
    )
    return text, (secret,)


@_shape("go-panic-url-parse-invalid-port-userinfo-password")
def _go_url_parse(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        $ go run ./cmd/migrate up
        panic: parse "postgres://migrator:‹pw›@db.internal:5432:5432/inventory?sslmode=disable": invalid port ":5432" after host

        goroutine 1 [running]:
        main.mustOpen({0xc000020120, 0x63})
        \t/home/ci/inventory/cmd/migrate/main.go:38 +0x1c5
        main.main()
        \t/home/ci/inventory/cmd/migrate/main.go:21 +0x4a
        exit status 2
        """,
        pw=password,
    )
    return text, (password,)


@_shape("strace-sendto-ftplib-pass-command")
def _strace_ftp(rng: random.Random) -> Built:
    password = _human_plain(rng)
    user_cmd, pass_cmd = "USER scanner\\r\\n", f"PASS {password}\\r\\n"
    text = _fill(
        """
        $ strace -f -s 128 -e trace=sendto,recvfrom python3 push_scans.py 2>&1 | grep -v EAGAIN | head -n 8
        recvfrom(3, "220 FRITZ!Box FTP server ready.\\r\\n", 8192, 0, NULL, NULL) = 33
        sendto(3, "‹uc›", ‹ul›, 0, NULL, 0) = ‹ul›
        recvfrom(3, "331 User scanner ok, password required.\\r\\n", 8192, 0, NULL, NULL) = 42
        sendto(3, "‹pc›", ‹pl›, 0, NULL, 0) = ‹pl›
        recvfrom(3, "230 User scanner logged in.\\r\\n", 8192, 0, NULL, NULL) = 29
        sendto(3, "TYPE I\\r\\n", 8, 0, NULL, 0) = 8
        """,
        uc=user_cmd,
        ul=str(len("USER scanner") + 2),
        pc=pass_cmd,
        pl=str(len(f"PASS {password}") + 2),
    )
    return text, (password,)


@_shape("journalctl-worker-log-redis-url-on-startup")
def _journalctl_redis(rng: random.Random) -> Built:
    password = _alnum(rng, 24)
    text = _fill(
        """
        $ journalctl -u thumbnailer.service -n 6 --no-pager
        Mar 02 07:14:09 media-2 systemd[1]: Started thumbnailer.service - Thumbnail worker.
        Mar 02 07:14:10 media-2 thumbnailer[‹pid›]: 2026-03-02 07:14:10,118 INFO worker: using queue thumbs on rediss://default:‹pw›@valkey-media.internal:6380/2
        Mar 02 07:14:10 media-2 thumbnailer[‹pid›]: 2026-03-02 07:14:10,402 INFO worker: connected, 4 threads, prefetch 8
        Mar 02 07:19:51 media-2 thumbnailer[‹pid›]: 2026-03-02 07:19:51,733 INFO worker: job ‹job› done in 1.84s
        """,
        pid=str(rng.randint(1000, 60000)),
        pw=password,
        job=_guid(rng),
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# Config formats and languages
# --------------------------------------------------------------------------------------------------------


@_shape("cue-service-definition-env-struct-password")
def _cue(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%*+-=?@^_~")
    text = _fill(
        """
        // deploy/prod/ledger.cue
        package prod

        import "platform.acme.dev/schema"

        ledger: schema.#Service & {
        \tname:     "ledger-api"
        \treplicas: 3
        \timage:    "registry.acme.dev/ledger-api:1.19.2"
        \tenv: {
        \t\tDB_HOST:     "pg-ledger.prod.internal"
        \t\tDB_USER:     "ledger"
        \t\tDB_PASSWORD: "‹pw›"
        \t\tLOG_LEVEL:   "info"
        \t}
        \tresources: limits: memory: "512Mi"
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("kdl-relay-config-upstream-node-password")
def _kdl(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        // /etc/mailrelay/relay.kdl
        relay "office-relay" {
            listen "0.0.0.0:2525"
            allow-from "10.12.0.0/16"
            upstream "mail.infomaniak.com" port=587 starttls=#true {
                username "scanner@architekten-example.ch"
                password "‹pw›"
            }
            queue dir="/var/spool/mailrelay" max-age="3d"
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("pkl-module-amends-database-password")
def _pkl(rng: random.Random) -> Built:
    password = _alnum(rng, 24)
    text = _fill(
        """
        // config/prod.pkl
        amends "AppConfig.pkl"

        port = 8080
        database {
          host = "orders-db.prod.internal"
          port = 5432
          name = "orders"
          username = "orders_app"
          password = "‹pw›"
          pool { maxSize = 20; idleTimeout = 30.s }
        }
        features { newCheckout = true }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("nix-flake-devshell-shellhook-export-pgpassword")
def _nix_flake(rng: random.Random) -> Built:
    password = _brief(rng, 12, 12) + rng.choice("-_.") + _pick(rng, string.digits, 2)
    text = _fill(
        """
        # flake.nix
        {
          description = "tiles: vector tile server dev shell";
          inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-24.11";

          outputs = { self, nixpkgs }:
            let pkgs = nixpkgs.legacyPackages.x86_64-linux;
            in {
              devShells.x86_64-linux.default = pkgs.mkShell {
                packages = with pkgs; [ go_1_23 postgresql_16 tippecanoe ];
                shellHook = ''
                  export PGHOST=gis-db.lab.internal
                  export PGUSER=tiles
                  export PGPASSWORD='‹pw›'
                  echo "tiles dev shell: $(go version)"
                '';
              };
            };
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("perl-dbi-connect-single-quoted-escaped-apostrophe")
def _perl_dbi(rng: random.Random) -> Built:
    word = rng.choice(_VOCAB)
    password = f"{word.capitalize()}\\'s-{rng.choice(_VOCAB)}-{rng.randint(1970, 2026)}"
    text = _fill(
        """
        #!/usr/bin/perl
        # opac/bin/overdue_report.pl
        use strict;
        use warnings;
        use DBI;

        my $dbh = DBI->connect(
            'dbi:Pg:dbname=library;host=pg.bibliothek.internal;port=5432',
            'opac_report',
            '‹pw›',
            { RaiseError => 1, AutoCommit => 1, pg_enable_utf8 => 1 },
        ) or die $DBI::errstr;

        my $sth = $dbh->prepare(q{SELECT barcode, due_date FROM loans WHERE due_date < now() - interval '14 days'});
        $sth->execute;
        """,
        pw=password,
    )
    return text, (password,)


@_shape("magento-app-etc-env-php-db-password-and-crypt-key")
def _magento_env(rng: random.Random) -> Built:
    password, crypt = _strong(rng, 18, marks="!#%*+-=?@_"), _hexs(rng, 32)
    text = _fill(
        """
        <?php
        // app/etc/env.php
        return [
            'backend' => [
                'frontName' => 'admin_‹front›'
            ],
            'crypt' => [
                'key' => '‹crypt›'
            ],
            'db' => [
                'table_prefix' => '',
                'connection' => [
                    'default' => [
                        'host' => 'mysql-shop.internal',
                        'dbname' => 'magento',
                        'username' => 'magento',
                        'password' => '‹pw›',
                        'model' => 'mysql4',
                        'engine' => 'innodb',
                        'initStatements' => 'SET NAMES utf8;',
                        'active' => '1',
                        'driver_options' => [
                            1014 => false
                        ]
                    ]
                ]
            ],
            'MAGE_MODE' => 'production',
            'session' => [
                'save' => 'redis'
            ],
        ];
        """,
        front=_pick(rng, _LOWER_DIGITS, 6),
        crypt=crypt,
        pw=password,
    )
    return text, (password, crypt)


@_shape("joomla-configuration-php-jconfig-password-and-secret")
def _joomla(rng: random.Random) -> Built:
    password, secret = _human(rng), _alnum(rng, 16)
    text = _fill(
        """
        <?php
        class JConfig {
        \tpublic $offline = false;
        \tpublic $sitename = 'Sokolský klub Vrchlabí';
        \tpublic $editor = 'tinymce';
        \tpublic $list_limit = 20;
        \tpublic $dbtype = 'mysqli';
        \tpublic $host = 'localhost';
        \tpublic $user = 'joomla_sk';
        \tpublic $password = '‹pw›';
        \tpublic $db = 'joomla_sk';
        \tpublic $dbprefix = '‹prefix›_';
        \tpublic $secret = '‹secret›';
        \tpublic $gzip = false;
        \tpublic $error_reporting = 'default';
        \tpublic $mailer = 'mail';
        \tpublic $mailfrom = 'web@sokol-example.cz';
        \tpublic $smtpauth = false;
        \tpublic $smtppass = '';
        \tpublic $log_path = '/var/www/sokol/administrator/logs';
        \tpublic $tmp_path = '/var/www/sokol/tmp';
        \tpublic $lifetime = 15;
        }
        """,
        pw=password,
        prefix=_pick(rng, string.ascii_lowercase, 5),
        secret=secret,
    )
    return text, (password, secret)


@_shape("mediawiki-localsettings-wgdbpassword-wgsecretkey")
def _mediawiki(rng: random.Random) -> Built:
    password, secret = _alnum(rng, 20), _hexs(rng, 64)
    text = _fill(
        """
        ## Database settings
        $wgDBtype = "mysql";
        $wgDBserver = "localhost";
        $wgDBname = "heimatwiki";
        $wgDBuser = "wikiuser";
        $wgDBpassword = "‹pw›";

        # MySQL specific settings
        $wgDBprefix = "";
        $wgDBTableOptions = "ENGINE=InnoDB, DEFAULT CHARSET=binary";

        ## Shared memory settings
        $wgMainCacheType = CACHE_ACCEL;
        $wgMemCachedServers = [];

        $wgLanguageCode = "de";
        $wgLocaltimezone = "Europe/Berlin";

        $wgSecretKey = "‹secret›";

        # Changing this will log out all existing sessions.
        $wgAuthenticationTokenVersion = "1";
        """,
        pw=password,
        secret=secret,
    )
    return text, (password, secret)


@_shape("moodle-config-php-cfg-dbpass")
def _moodle(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%*+-=?_")
    text = _fill(
        """
        <?php  // Moodle configuration file

        unset($CFG);
        global $CFG;
        $CFG = new stdClass();

        $CFG->dbtype    = 'pgsql';
        $CFG->dblibrary = 'native';
        $CFG->dbhost    = 'db.campus.internal';
        $CFG->dbname    = 'moodle';
        $CFG->dbuser    = 'moodleuser';
        $CFG->dbpass    = '‹pw›';
        $CFG->prefix    = 'mdl_';
        $CFG->dboptions = array (
          'dbpersist' => 0,
          'dbport' => 5432,
          'dbsocket' => '',
        );

        $CFG->wwwroot   = 'https://aula.instituto-example.edu.ar';
        $CFG->dataroot  = '/var/moodledata';
        $CFG->admin     = 'admin';

        $CFG->directorypermissions = 0777;

        require_once(__DIR__ . '/lib/setup.php');
        """,
        pw=password,
    )
    return text, (password,)


@_shape("zig-std-http-client-fetch-extra-headers-api-key")
def _zig(rng: random.Random) -> Built:
    key = _hexs(rng, 64)
    text = _fill(
        """
        // src/main.zig
        const std = @import("std");

        pub fn main() !void {
            var gpa = std.heap.GeneralPurposeAllocator(.{}){};
            defer _ = gpa.deinit();
            const allocator = gpa.allocator();

            var client = std.http.Client{ .allocator = allocator };
            defer client.deinit();

            var body = std.ArrayList(u8).init(allocator);
            defer body.deinit();

            const res = try client.fetch(.{
                .location = .{ .url = "https://api.openaq.org/v3/locations?coordinates=50.06,19.94&radius=10000" },
                .extra_headers = &.{
                    .{ .name = "X-API-Key", .value = "‹k›" },
                },
                .response_storage = .{ .dynamic = &body },
            });
            std.debug.print("status={d} bytes={d}\\n", .{ @intFromEnum(res.status), body.items.len });
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("nim-httpclient-newhttpheaders-auth-token")
def _nim(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        # src/fixtures.nim
        import std/[httpclient, json]

        let client = newHttpClient(headers = newHttpHeaders({
          "X-Auth-Token": "‹t›",
          "Accept": "application/json"
        }))

        let data = parseJson(client.getContent("https://api.football-data.org/v4/competitions/PL/matches?matchday=27"))
        for m in data["matches"]:
          echo m["homeTeam"]["shortName"].getStr, " - ", m["awayTeam"]["shortName"].getStr
        """,
        t=token,
    )
    return text, (token,)


@_shape("crystal-db-open-postgres-uri-password")
def _crystal(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        # src/crawler/store.cr
        require "db"
        require "pg"

        module Crawler
          DB_URL = "postgres://crawler:‹pw›@pg.crawl.internal:5432/crawl?max_pool_size=10"

          def self.save(page : Page)
            DB.open DB_URL do |db|
              db.exec "INSERT INTO pages (url, status, fetched_at) VALUES ($1, $2, now()) ON CONFLICT (url) DO UPDATE SET status = $2",
                page.url, page.status
            end
          end
        end
        """,
        pw=password,
    )
    return text, (password,)


@_shape("dart-mailer-smtpserver-named-password")
def _dart_mailer(rng: random.Random) -> Built:
    password = _human(rng, marks="!.#")
    text = _fill(
        """
        // bin/send_confirmations.dart
        import 'package:mailer/mailer.dart';
        import 'package:mailer/smtp_server.dart';

        Future<void> main() async {
          final smtpServer = SmtpServer(
            'smtp.seznam.cz',
            port: 465,
            ssl: true,
            username: 'rezervace@penzion-example.cz',
            password: '‹pw›',
          );
          final message = Message()
            ..from = const Address('rezervace@penzion-example.cz', 'Penzion U Lípy')
            ..recipients.add('host@example.org')
            ..subject = 'Potvrzení rezervace'
            ..text = 'Děkujeme za rezervaci.';
          final report = await send(message, smtpServer);
          print('Message sent: $report');
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("r-renviron-file-census-api-key")
def _renviron(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    text = _fill(
        """
        > usethis::edit_r_environ()
        ☐ Edit '/Users/lucia/.Renviron'.
        ☐ Restart R for changes to take effect.
        > cat(readLines("~/.Renviron"), sep = "\\n")
        R_LIBS_USER=~/Library/R/arm64/4.4/library
        CENSUS_API_KEY=‹k›
        R_MAX_VSIZE=32Gb
        > tidycensus::get_acs(geography = "county", variables = "B19013_001", state = "NM", year = 2023)
        Getting data from the 2019-2023 5-year ACS
        """,
        k=key,
    )
    return text, (key,)


@_shape("matlab-weboptions-doubled-single-quote-password")
def _matlab(rng: random.Random) -> Built:
    password = f"{rng.choice(_VOCAB).capitalize()}''s#{rng.choice(_VOCAB).capitalize()}{rng.randint(10, 99)}"
    text = _fill(
        """
        % fetch_station_data.m
        base = "https://datalogger.fieldlab-example.edu/api/v1/stations/";
        opts = weboptions('Username', 'fieldlab', 'Password', '‹pw›', ...
                          'Timeout', 30, 'ContentType', 'json');
        for id = ["ST01" "ST02" "ST07"]
            data = webread(base + id + "/readings?from=2026-02-01", opts);
            writetable(struct2table(data.readings), "raw/" + id + ".csv");
        end
        """,
        pw=password,
    )
    return text, (password,)


@_shape("sas-program-libname-oracle-password-with-masked-log")
def _sas(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        /* monthly_claims.sas */
        libname ora oracle user=sasread password="‹pw›" path=ORAPRD schema=CLAIMS;

        proc sql;
          create table work.claims_feb as
          select claim_id, member_id, paid_amt
          from ora.claim_lines
          where service_dt between '01FEB2026'd and '28FEB2026'd;
        quit;

        /* from the log of the last run */
        /* 1          libname ora oracle user=sasread password=XXXXXXXXXXXX path=ORAPRD schema=CLAIMS; */
        /* NOTE: Libref ORA was successfully assigned as follows:                                   */
        /*       Engine:        ORACLE                                                              */
        """,
        pw=password,
    )
    return text, (password,)


@_shape("jcl-job-card-user-password-parameter")
def _jcl(rng: random.Random) -> Built:
    while True:
        password = rng.choice(string.ascii_uppercase) + _pick(rng, _UPPER_DIGITS + "#@$", 7)
        if any(c.isdigit() for c in password):
            break
    text = _fill(
        """
        //PAYEXTR  JOB (ACCT0412),'PAYROLL EXTRACT',CLASS=A,MSGCLASS=X,
        //             NOTIFY=&SYSUID,USER=PAYBATCH,PASSWORD=‹pw›
        //*-------------------------------------------------------------*
        //* NIGHTLY PAYROLL EXTRACT TO SFTP STAGING                     *
        //*-------------------------------------------------------------*
        //STEP01   EXEC PGM=IKJEFT01,DYNAMNBR=20
        //SYSTSPRT DD SYSOUT=*
        //SYSTSIN  DD *
          DSN SYSTEM(DB2P)
          RUN PROGRAM(PAYEXT01) PLAN(PAYEXT01)
          END
        /*
        //STEP02   EXEC PGM=BPXBATCH
        //STDPARM  DD *
        SH /u/paybatch/bin/push_extract.sh
        /*
        """,
        pw=password,
    )
    return text, (password,)


@_shape("cobol-working-storage-value-clause-db-password")
def _cobol(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
               IDENTIFICATION DIVISION.
               PROGRAM-ID. CUSTLOAD.
               DATA DIVISION.
               WORKING-STORAGE SECTION.
               01  WS-DB-NAME         PIC X(8)  VALUE 'CUSTPRD'.
               01  WS-DB-USER         PIC X(8)  VALUE 'BATCHUSR'.
               01  WS-DB-PASSWORD     PIC X(16) VALUE '‹pw›'.
                   EXEC SQL INCLUDE SQLCA END-EXEC.
               PROCEDURE DIVISION.
               0000-MAIN.
                   EXEC SQL
                       CONNECT TO :WS-DB-NAME
                       USER :WS-DB-USER USING :WS-DB-PASSWORD
                   END-EXEC.
                   IF SQLCODE NOT = 0
                       DISPLAY 'CONNECT FAILED, SQLCODE=' SQLCODE
                       STOP RUN
                   END-IF.
        """,
        pw=password,
    )
    # fixed-format COBOL: the sequence area takes columns 1-6, the indicator column 7
    text = "".join("       " + line if line.strip() else line for line in text.splitlines(keepends=True))
    return text, (password,)


@_shape("powershell-dsc-compiled-mof-msft-credential-instance")
def _dsc_mof(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-=?@_")
    text = _fill(
        """
        PS C:\\dsc> Get-Content .\\WebServer\\web01.mof -TotalCount 30
        /*
        @TargetNode='web01'
        @GeneratedBy=svc_build
        @GenerationDate=03/02/2026 10:14:22
        @GenerationHost=BUILD01
        */

        instance of MSFT_Credential as $MSFT_Credential1ref
        {
        Password = "‹pw›";
         UserName = "CORP\\\\svc_iis";

        };

        instance of MSFT_UserResource as $MSFT_UserResource1ref
        {
        ResourceID = "[User]SvcIis";
         UserName = "svc_iis";
         Ensure = "Present";
         Password = $MSFT_Credential1ref;
         SourceInfo = "C:\\\\dsc\\\\WebServer.ps1::14::9::User";
         ModuleName = "PSDesiredStateConfiguration";
         ModuleVersion = "1.1";
         ConfigurationName = "WebServer";
        };
        """,
        pw=password,
    )
    return text, (password,)


@_shape("ansible-inventory-ini-group-vars-winrm-password")
def _ansible_ini(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%*+-=?@_")
    text = _fill(
        """
        # inventories/branch-offices/hosts.ini
        [fileservers]
        fs-graz.corp.example     ansible_host=10.31.2.21
        fs-linz.corp.example     ansible_host=10.32.2.21

        [fileservers:vars]
        ansible_user=CORP\\svc_ansible
        ansible_password=‹pw›
        ansible_connection=winrm
        ansible_winrm_transport=ntlm
        ansible_winrm_server_cert_validation=ignore

        [linux]
        backup-graz.corp.example ansible_host=10.31.2.40 ansible_user=deploy
        """,
        pw=password,
    )
    return text, (password,)


@_shape("jenkinsfile-declarative-environment-literal-api-key")
def _jenkinsfile(rng: random.Random) -> Built:
    key = "odt_" + _alnum(rng, 32)
    text = _fill(
        """
        // Jenkinsfile
        pipeline {
            agent { label 'docker' }
            environment {
                REGISTRY = 'registry.versicherung-example.de'
                SNYK_TOKEN = credentials('snyk-token')
                DTRACK_URL = 'https://dtrack.versicherung-example.de'
                DTRACK_API_KEY = '‹k›'
            }
            stages {
                stage('SBOM') {
                    steps {
                        sh 'syft packages dir:. -o cyclonedx-json > bom.json'
                        sh '''
                          curl -fsS -X POST "$DTRACK_URL/api/v1/bom" \\
                            -H "X-Api-Key: $DTRACK_API_KEY" \\
                            -F "autoCreate=true" -F "projectName=tarifrechner" -F "projectVersion=$BUILD_NUMBER" \\
                            -F "bom=@bom.json"
                        '''
                    }
                }
            }
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("quarkus-application-properties-prod-profile-prefix")
def _quarkus(rng: random.Random) -> Built:
    password, secret = _alnum(rng, 22), _alnum(rng, 32)
    text = _fill(
        """
        # src/main/resources/application.properties
        quarkus.application.name=claims-backend
        quarkus.datasource.db-kind=postgresql
        %dev.quarkus.datasource.devservices.enabled=true
        %prod.quarkus.datasource.username=claims
        %prod.quarkus.datasource.password=‹pw›
        %prod.quarkus.datasource.jdbc.url=jdbc:postgresql://pg-claims.prod.internal:5432/claims
        quarkus.hibernate-orm.database.generation=validate

        quarkus.oidc.auth-server-url=https://sso.seguros-example.com.co/realms/claims
        quarkus.oidc.client-id=claims-backend
        %prod.quarkus.oidc.credentials.secret=‹s›
        quarkus.http.auth.permission.authenticated.paths=/api/*
        quarkus.http.auth.permission.authenticated.policy=authenticated
        """,
        pw=password,
        s=secret,
    )
    return text, (password, secret)


@_shape("micronaut-application-toml-datasources-default")
def _micronaut(rng: random.Random) -> Built:
    password = _human_plain(rng) + rng.choice("#%")
    text = _fill(
        """
        # src/main/resources/application-prod.toml
        [micronaut.application]
        name = "fleet-tracker"

        [datasources.default]
        url = "jdbc:mysql://mysql-fleet.prod.internal:3306/fleet?useSSL=true"
        username = "fleet"
        password = "‹pw›"
        dialect = "MYSQL"
        maximum-pool-size = 15

        [micronaut.server]
        port = 8080
        """,
        pw=password,
    )
    return text, (password,)


@_shape("phoenix-config-prod-secret-exs-secret-key-base")
def _phoenix(rng: random.Random) -> Built:
    secret = _b64s(rng, 48)
    text = _fill(
        """
        # config/prod.secret.exs
        use Mix.Config

        config :kiosk, KioskWeb.Endpoint,
          http: [port: String.to_integer(System.get_env("PORT") || "4000")],
          secret_key_base: "‹s›"

        config :kiosk, Kiosk.Repo,
          url: System.get_env("DATABASE_URL"),
          pool_size: String.to_integer(System.get_env("POOL_SIZE") || "10")
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("deno-run-kv-access-token-ddp-env-prefix")
def _deno_kv(rng: random.Random) -> Built:
    token = "ddp_" + _alnum(rng, 36)
    text = _fill(
        """
        $ DENO_KV_ACCESS_TOKEN=‹t› deno run --unstable-kv -A scripts/backfill_counters.ts
        Opening KV at https://api.deno.com/databases/‹db›/connect
        scanned 18204 entries under ["views"]
        backfilled 1204 counters in 9.8s
        """,
        t=token,
        db=_guid(rng),
    )
    return text, (token,)


@_shape("wrangler-secret-put-echo-pipe-mercadopago-token")
def _wrangler_secret_put(rng: random.Random) -> Built:
    token = f"APP_USR-{_digits(rng, 16)}-{_digits(rng, 6)}-{_hexs(rng, 32)}-{_digits(rng, 9)}"
    text = _fill(
        """
        $ echo "‹t›" | npx wrangler secret put MP_ACCESS_TOKEN --env production

         ⛅️ wrangler 3.109.2
        --------------------

        🌀 Creating the secret for the Worker "checkout-mx-production"
        ✨ Success! Uploaded secret MP_ACCESS_TOKEN
        """,
        t=token,
    )
    return text, (token,)


@_shape("wrangler-dev-vars-file-then-dev-bindings-table")
def _wrangler_dev_vars(rng: random.Random) -> Built:
    token = "polar_oat_" + _alnum(rng, 43)
    text = _fill(
        """
        $ cat .dev.vars
        POLAR_ACCESS_TOKEN=‹t›
        POLAR_ORGANIZATION_ID=‹org›
        $ npx wrangler dev
        Using vars defined in .dev.vars
        Your Worker has access to the following bindings:
        Binding                                    Resource                  Mode
        env.POLAR_ACCESS_TOKEN ("(hidden)")        Environment Variable      local
        env.POLAR_ORGANIZATION_ID ("(hidden)")     Environment Variable      local

        ⎔ Starting local server...
        [wrangler:info] Ready on http://localhost:8787
        """,
        t=token,
        org=_guid(rng),
    )
    return text, (token,)


@_shape("netlify-env-list-plain-production-context")
def _netlify_env(rng: random.Random) -> Built:
    token = "sk" + _alnum(rng, 88)
    text = _fill(
        """
        $ netlify env:list --plain --context production
        NODE_VERSION=22
        SANITY_API_READ_TOKEN=‹t›
        SANITY_DATASET=production
        SANITY_PROJECT_ID=‹pid›
        SITE_URL=https://www.keramik-atelier-example.de
        """,
        t=token,
        pid=_pick(rng, _LOWER_DIGITS, 8),
    )
    return text, (token,)


@_shape("firebase-functions-config-get-json-paystack-secret")
def _firebase_config(rng: random.Random) -> Built:
    key = "sk_live_" + _hexs(rng, 40)
    text = _fill(
        """
        $ firebase functions:config:get --project shoprite-ng-prod
        ⚠  DEPRECATION NOTICE: Action required before March 2026
        The functions.config() API and the Cloud Runtime Config service are deprecated.
        {
          "paystack": {
            "secret": "‹k›",
            "callback_url": "https://shop-example.com.ng/paystack/callback"
          },
          "app": {
            "env": "production"
          }
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("appwrite-node-server-sdk-client-set-key")
def _appwrite(rng: random.Random) -> Built:
    key = "standard_" + _hexs(rng, 256)
    text = _fill(
        """
        // functions/nightly-cleanup/src/main.js
        import { Client, Databases, Query } from 'node-appwrite';

        const client = new Client()
          .setEndpoint('https://fra.cloud.appwrite.io/v1')
          .setProject('‹project›')
          .setKey('‹k›');

        const databases = new Databases(client);

        export default async ({ log }) => {
          const stale = await databases.listDocuments('main', 'carts', [Query.lessThan('$updatedAt', cutoff())]);
          for (const doc of stale.documents) await databases.deleteDocument('main', 'carts', doc.$id);
          log(`removed ${stale.total} stale carts`);
        };
        """,
        project=_hexs(rng, 20),
        k=key,
    )
    return text, (key,)


@_shape("pocketbase-superuser-upsert-positional-password")
def _pocketbase(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%*+-=?@_")
    text = _fill(
        """
        root@pb:/opt/pocketbase# ./pocketbase superuser upsert admin@fietsenmaker-example.nl '‹pw›'
        Successfully saved superuser "admin@fietsenmaker-example.nl"!
        root@pb:/opt/pocketbase# systemctl restart pocketbase && journalctl -u pocketbase -n 2 --no-pager
        Mar 03 08:41:17 pb pocketbase[‹pid›]: ├─ REST API:  https://pb.fietsenmaker-example.nl/api/
        Mar 03 08:41:17 pb pocketbase[‹pid›]: └─ Dashboard: https://pb.fietsenmaker-example.nl/_/
        """,
        pw=password,
        pid=str(rng.randint(1000, 60000)),
    )
    return text, (password,)


@_shape("vercel-build-log-convex-deploy-key-inline")
def _convex(rng: random.Random) -> Built:
    name = f"{rng.choice(['quiet', 'brave', 'famous', 'little', 'tidy'])}-{rng.choice(['otter', 'heron', 'lynx', 'moose'])}-{rng.randint(100, 999)}"
    key = f"prod:{name}|" + base64.b64encode(json.dumps({"v2": _hexs(rng, 32)}).encode()).decode().rstrip("=")
    text = _fill(
        """
        [‹t1›] Running build in Washington, D.C., USA (East) – iad1
        [‹t1›] Cloning github.com/lernplattform-example/app (Branch: main, Commit: ‹sha›)
        [‹t2›] Running "vercel build"
        [‹t2›] Vercel CLI 41.2.2
        [‹t2›] Running "build" command: `CONVEX_DEPLOY_KEY='‹k›' npx convex deploy --cmd 'npm run build'`...
        [‹t3›] ✔ Deployed Convex functions to https://‹name›.convex.cloud
        """,
        t1="13:02:11.482",
        t2="13:02:19.007",
        t3="13:03:02.911",
        sha=_hexs(rng, 7),
        k=key,
        name=name,
    )
    return text, (key,)


@_shape("turso-db-tokens-create-eddsa-jwt-output")
def _turso(rng: random.Random) -> Built:
    token = _jwt(rng, {"alg": "EdDSA", "typ": "JWT"}, {"a": "rw", "iat": _epoch(rng), "id": _guid(rng)}, 64)
    text = _fill(
        """
        $ turso db tokens create recipes-prod --expiration none
        ‹t›
        $ turso db show recipes-prod --url
        libsql://recipes-prod-‹org›.aws-eu-west-1.turso.io
        """,
        t=token,
        org=_pick(rng, string.ascii_lowercase, 7),
    )
    return text, (token,)


@_shape("planetscale-pscale-password-create-wide-table")
def _pscale(rng: random.Random) -> Built:
    password = "pscale_pw_" + _alnum(rng, 43)
    text = _fill(
        """
        $ pscale password create shopdb main app-prod --role readwriter
        Password app-prod was successfully created in shopdb/main.
        Please save the values below as they will not be shown again

          NAME       BRANCH   ID             USERNAME               ACCESS HOST URL          ROLE         PASSWORD
         ---------- -------- -------------- ---------------------- ------------------------ ------------ --------------------------------------------------------
          app-prod   main     ‹id›   ‹user›   aws.connect.psdb.cloud   readwriter   ‹pw›
        """,
        id=_pick(rng, _LOWER_DIGITS, 12),
        user=_pick(rng, _LOWER_DIGITS, 20),
        pw=password,
    )
    return text, (password,)


@_shape("supabase-config-toml-auth-external-github-secret")
def _supabase_config(rng: random.Random) -> Built:
    secret = _hexs(rng, 40)
    text = _fill(
        """
        # supabase/config.toml
        project_id = "tutoring-app"

        [auth]
        enabled = true
        site_url = "http://127.0.0.1:3000"
        additional_redirect_urls = ["https://tutoring-example.com.au/auth/callback"]
        jwt_expiry = 3600

        [auth.external.github]
        enabled = true
        client_id = "Ov23li‹cid›"
        secret = "‹s›"
        redirect_uri = ""
        """,
        cid=_alnum(rng, 14),
        s=secret,
    )
    return text, (secret,)


@_shape("influx-cli-configs-toml-active-token")
def _influx_configs(rng: random.Random) -> Built:
    token = base64.urlsafe_b64encode(rng.randbytes(64)).decode()
    text = _fill(
        """
        $ cat ~/.influxdbv2/configs
        [greenhouse]
          url = "https://eu-central-1-1.aws.cloud2.influxdata.com"
          token = "‹t›"
          org = "greenhouse"
          active = true
        $ influx bucket list
        ID                      Name            Retention       Shard group duration    Organization ID         Schema Type
        ‹b1›        sensors         720h0m0s        n/a                     ‹org›        implicit
        ‹b2›        _monitoring     168h0m0s        n/a                     ‹org›        implicit
        """,
        t=token,
        b1=_hexs(rng, 16),
        b2=_hexs(rng, 16),
        org=_hexs(rng, 16),
    )
    return text, (token,)


@_shape("pulsar-client-conf-authparams-token-jwt")
def _pulsar(rng: random.Random) -> Built:
    token = _jwt(rng, {"alg": "RS256"}, {"sub": "orders-service"}, 256)
    text = _fill(
        """
        # conf/client.conf
        webServiceUrl=https://pulsar.streaming.internal:8443/
        brokerServiceUrl=pulsar+ssl://pulsar.streaming.internal:6651/
        authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
        authParams=token:‹t›
        tlsAllowInsecureConnection=false
        tlsEnableHostnameVerification=true
        tlsTrustCertsFilePath=/etc/pulsar/ca.cert.pem
        """,
        t=token,
    )
    return text, (token,)


@_shape("activemq-jetty-realm-properties-admin-line")
def _activemq(rng: random.Random) -> Built:
    password = _human(rng, marks="!#$")
    text = _fill(
        """
        $ cat /opt/activemq/conf/jetty-realm.properties
        ## ---------------------------------------------------------------------------
        ## Licensed to the Apache Software Foundation (ASF) under one or more
        ## contributor license agreements.
        ## ---------------------------------------------------------------------------

        # Defines users that can access the web (console, demo, etc.)
        # username: password [,rolename ...]
        admin: ‹pw›, admin
        monitor: MD5:‹md5›, user
        """,
        pw=password,
        md5=_hexs(rng, 32),
    )
    return text, (password,)


@_shape("ceph-auth-get-client-keyring-export")
def _ceph(rng: random.Random) -> Built:
    raw = struct.pack("<HIIH", 1, _epoch(rng), rng.getrandbits(32), 16) + rng.randbytes(16)
    key = base64.b64encode(raw).decode()
    text = _fill(
        """
        [ceph: root@mon-1 /]# ceph auth get client.k8s-rbd
        [client.k8s-rbd]
        \tkey = ‹k›
        \tcaps mgr = "profile rbd pool=kube"
        \tcaps mon = "profile rbd"
        \tcaps osd = "profile rbd pool=kube"
        exported keyring for client.k8s-rbd
        """,
        k=key,
    )
    return text, (key,)


@_shape("radosgw-admin-user-create-json-keys-array")
def _radosgw(rng: random.Random) -> Built:
    secret = _alnum(rng, 40)
    text = _fill(
        """
        $ radosgw-admin user create --uid=backup-bot --display-name="Backup bot"
        {
            "user_id": "backup-bot",
            "display_name": "Backup bot",
            "email": "",
            "suspended": 0,
            "max_buckets": 1000,
            "subusers": [],
            "keys": [
                {
                    "user": "backup-bot",
                    "access_key": "‹ak›",
                    "secret_key": "‹s›",
                    "active": true,
                    "create_date": "‹d›"
                }
            ],
            "swift_keys": [],
            "caps": [],
            "op_mask": "read, write, delete",
            "default_placement": "",
            "placement_tags": [],
            "type": "rgw",
            "mfa_ids": []
        }
        """,
        ak=_pick(rng, _UPPER_DIGITS, 20),
        s=secret,
        d=_stamp(rng),
    )
    return text, (secret,)


@_shape("exoscale-cli-toml-accounts-array-secret")
def _exoscale(rng: random.Random) -> Built:
    secret = _b64u(rng, 32)
    text = _fill(
        """
        $ cat ~/.config/exoscale/exoscale.toml
        defaultaccount = "lab"

        [[accounts]]
          account = "lab"
          defaultZone = "ch-gva-2"
          environment = ""
          key = "EXO‹kid›"
          name = "lab"
          secret = "‹s›"
        """,
        kid=_hexs(rng, 24),
        s=secret,
    )
    return text, (secret,)


@_shape("tencent-tccli-default-credential-json")
def _tccli(rng: random.Random) -> Built:
    secret = _alnum(rng, 32)
    text = _fill(
        """
        $ cat ~/.tccli/default.credential
        {
            "secretId": "AKID‹sid›",
            "secretKey": "‹s›"
        }
        $ tccli cvm DescribeRegions --output table | head -n 5
        -----------------------------------------------------
        |                  DescribeRegions                  |
        +------------+------------------+-------------------+
        | Region     | RegionName       | RegionState       |
        +------------+------------------+-------------------+
        """,
        sid=_alnum(rng, 32),
        s=secret,
    )
    return text, (secret,)


@_shape("yc-config-list-oauth-token-line")
def _yc_config(rng: random.Random) -> Built:
    token = "y0_" + _b64u(rng, 42)
    text = _fill(
        """
        $ yc config list
        token: ‹t›
        cloud-id: b1g‹c›
        folder-id: b1g‹f›
        compute-default-zone: ru-central1-a
        $ yc compute instance list --format yaml | grep -c '^- id:'
        7
        """,
        t=token,
        c=_pick(rng, _LOWER_DIGITS, 17),
        f=_pick(rng, _LOWER_DIGITS, 17),
    )
    return text, (token,)


@_shape("checkly-cli-deploy-inline-env-api-key")
def _checkly(rng: random.Random) -> Built:
    key = "cu_" + _hexs(rng, 32)
    text = _fill(
        """
        $ CHECKLY_API_KEY=‹k› CHECKLY_ACCOUNT_ID=‹acct› npx checkly deploy --force
        Parsing your project... ✅
        Validating project resources... ✅
        Bundling project resources... ✅
        Successfully deployed project "shop-monitoring" to account "Bäckerei Example".
        Create: ApiCheck: checkout-api-health, BrowserCheck: homepage-renders
        """,
        k=key,
        acct=_guid(rng),
    )
    return text, (key,)


@_shape("infisical-run-token-flag-service-token")
def _infisical(rng: random.Random) -> Built:
    token = f"st.{_guid(rng)}.{_hexs(rng, 32)}.{_hexs(rng, 32)}"
    text = _fill(
        """
        # Procfile.prod
        web: infisical run --token=‹t› --env=prod --path=/api -- node dist/server.js
        worker: infisical run --env=prod --path=/worker -- node dist/worker.js
        """,
        t=token,
    )
    return text, (token,)


@_shape("direnv-envrc-op-service-account-token-ops")
def _op_service_account(rng: random.Random) -> Built:
    payload = {
        "signInAddress": "my.1password.eu",
        "userAuth": {
            "method": "SRPg-4096",
            "alg": "PBES2g-HS256",
            "iterations": 650000,
            "salt": _b64u(rng, 16),
        },
        "email": _pick(rng, string.ascii_lowercase, 13) + "@1passwordserviceaccounts.eu",
        "srpX": _hexs(rng, 64),
        "muk": {
            "alg": "A256GCM",
            "ext": False,
            "k": _b64u(rng, 32),
            "key_ops": ["decrypt", "encrypt"],
            "kty": "oct",
            "kid": "mp",
        },
        "secretKey": "A3-"
        + "-".join(_pick(rng, _UPPER_DIGITS, 6) for _ in range(2))
        + "-"
        + "-".join(_pick(rng, _UPPER_DIGITS, 5) for _ in range(4)),
        "throttleSecret": {"seed": _hexs(rng, 64), "uuid": _pick(rng, _UPPER_DIGITS, 26)},
        "deviceUuid": _pick(rng, _LOWER_DIGITS, 26),
    }
    token = "ops_" + base64.urlsafe_b64encode(
        json.dumps(payload, separators=(",", ":")).encode()
    ).decode().rstrip("=")
    text = _fill(
        """
        $ cat .envrc
        export OP_SERVICE_ACCOUNT_TOKEN=‹t›
        export OPENAI_API_KEY="op://Engineering/OpenAI staging/credential"
        $ direnv allow
        direnv: loading ~/src/support-bot/.envrc
        direnv: export +OPENAI_API_KEY +OP_SERVICE_ACCOUNT_TOKEN
        """,
        t=token,
    )
    return text, (token,)


@_shape("bws-access-token-export-then-project-list")
def _bws(rng: random.Random) -> Built:
    token = f"0.{_guid(rng)}.{_alnum(rng, 30)}:{_b64s(rng, 16)}"
    text = _fill(
        """
        $ export BWS_ACCESS_TOKEN=‹t›
        $ bws project list --output table
        ID                                     Name            Creation Date
        ‹p1›   kiosk-prod      ‹d1›
        ‹p2›   kiosk-staging   ‹d2›
        """,
        t=token,
        p1=_guid(rng),
        p2=_guid(rng),
        d1=_stamp(rng),
        d2=_stamp(rng),
    )
    return text, (token,)


@_shape("gitlab-trigger-pipeline-curl-form-glptt-token")
def _glptt(rng: random.Random) -> Built:
    token = "glptt-" + _alnum(rng, 20)
    text = _fill(
        """
        $ curl -X POST --fail -F token=‹t› -F ref=main -F "variables[DEPLOY_ENV]=staging" \\
            https://gitlab.stadtverwaltung-example.de/api/v4/projects/‹pid›/trigger/pipeline
        {"id":‹id›,"iid":‹iid›,"project_id":‹pid›,"sha":"‹sha›","ref":"main","status":"created","source":"trigger","web_url":"https://gitlab.stadtverwaltung-example.de/buergerportal/api/-/pipelines/‹id›"}
        """,
        t=token,
        pid=str(rng.randint(10, 999)),
        id=_digits(rng, 6),
        iid=str(rng.randint(100, 999)),
        sha=_hexs(rng, 40),
    )
    return text, (token,)


@_shape("helm-upgrade-install-gitlab-agent-config-token-set")
def _glagent(rng: random.Random) -> Built:
    token = "glagent-" + _b64u(rng, 37)
    text = _fill(
        """
        $ helm repo add gitlab https://charts.gitlab.io
        $ helm repo update
        $ helm upgrade --install k8s-agent gitlab/gitlab-agent \\
            --namespace gitlab-agent-k8s-agent \\
            --create-namespace \\
            --set image.tag=v17.9.1 \\
            --set config.token=‹t› \\
            --set config.kasAddress=wss://kas.gitlab.com
        Release "k8s-agent" does not exist. Installing it now.
        NAME: k8s-agent
        LAST DEPLOYED: Tue Mar  3 09:12:44 2026
        NAMESPACE: gitlab-agent-k8s-agent
        STATUS: deployed
        REVISION: 1
        TEST SUITE: None
        """,
        t=token,
    )
    return text, (token,)


@_shape("dotnet-nuget-push-api-key-flag-output")
def _nuget_push(rng: random.Random) -> Built:
    key = "oy2" + _pick(rng, _LOWER_DIGITS, 43)
    text = _fill(
        """
        PS C:\\src\\Acme.Money> dotnet nuget push .\\bin\\Release\\Acme.Money.3.2.0.nupkg --api-key ‹k› --source https://api.nuget.org/v3/index.json
        Pushing Acme.Money.3.2.0.nupkg to 'https://www.nuget.org/api/v2/package'...
          PUT https://www.nuget.org/api/v2/package/
          Created https://www.nuget.org/api/v2/package/ 1204ms
        Your package was pushed.
        """,
        k=key,
    )
    return text, (key,)


@_shape("flutterwave-python-rave-constructor-secret-key")
def _flutterwave(rng: random.Random) -> Built:
    secret = f"FLWSECK-{_hexs(rng, 32)}-X"
    text = _fill(
        """
        # payments/flutterwave.py
        from rave_python import Rave, RaveExceptions

        rave = Rave("FLWPUBK-‹pub›-X", "‹s›", production=True, usingEnv=False)


        def charge_card(order, card):
            payload = {
                "cardno": card.number,
                "cvv": card.cvv,
                "expirymonth": card.exp_month,
                "expiryyear": card.exp_year,
                "amount": str(order.total_ngn),
                "email": order.email,
                "txRef": f"ORD-{order.id}",
            }
            try:
                return rave.Card.charge(payload)
            except RaveExceptions.CardChargeError as e:
                raise PaymentFailed(e.err["errMsg"]) from e
        """,
        pub=_hexs(rng, 32),
        s=secret,
    )
    return text, (secret,)


@_shape("midtrans-node-snap-constructor-server-key")
def _midtrans(rng: random.Random) -> Built:
    key = "Mid-server-" + _b64u(rng, 18)
    text = _fill(
        """
        // server/payments.js
        const midtransClient = require('midtrans-client');

        const snap = new midtransClient.Snap({
          isProduction: true,
          serverKey: '‹k›',
          clientKey: 'Mid-client-‹ck›',
        });

        async function createTransaction(order) {
          return snap.createTransaction({
            transaction_details: { order_id: order.id, gross_amount: order.totalIdr },
            customer_details: { first_name: order.name, email: order.email },
          });
        }
        module.exports = { createTransaction };
        """,
        k=key,
        ck=_b64u(rng, 12),
    )
    return text, (key,)


@_shape("xendit-curl-basic-user-secret-key-colon")
def _xendit(rng: random.Random) -> Built:
    key = "xnd_production_" + _alnum(rng, 64)
    text = _fill(
        """
        $ curl https://api.xendit.co/v2/invoices -X POST \\
            -u ‹k›: \\
            -H 'Content-Type: application/json' \\
            --data-raw '{"external_id":"inv-‹n›","amount":250000,"payer_email":"pelanggan@example.co.id","description":"Kelas yoga Maret"}'
        {"id":"‹id›","external_id":"inv-‹n›","status":"PENDING","amount":250000,"invoice_url":"https://checkout.xendit.co/web/‹id›"}
        """,
        k=key,
        n=_digits(rng, 6),
        id=_hexs(rng, 24),
    )
    return text, (key,)


@_shape("africastalking-python-initialize-api-key-kwarg")
def _africastalking(rng: random.Random) -> Built:
    key = "atsk_" + _hexs(rng, 64)
    text = _fill(
        """
        # duka/notify.py
        import africastalking

        africastalking.initialize(username="duka_la_mama", api_key="‹k›")
        sms = africastalking.SMS


        def notify_order(phone: str, order_id: int) -> None:
            response = sms.send(f"Agizo lako #{order_id} limepokelewa. Asante!", [phone], sender_id="DUKA")
            print(response["SMSMessageData"]["Message"])
        """,
        k=key,
    )
    return text, (key,)


@_shape("mailchimp-transactional-php-set-api-key-md")
def _mandrill(rng: random.Random) -> Built:
    key = "md-" + _alnum(rng, 22)
    text = _fill(
        """
        <?php
        // src/Mail/ReceiptMailer.php
        require_once __DIR__ . '/../../vendor/autoload.php';

        $mailchimp = new \\MailchimpTransactional\\ApiClient();
        $mailchimp->setApiKey('‹k›');

        $response = $mailchimp->messages->sendTemplate([
            'template_name' => 'receipt-ptbr',
            'template_content' => [],
            'message' => [
                'to' => [['email' => $order->email, 'type' => 'to']],
                'global_merge_vars' => [['name' => 'TOTAL', 'content' => $order->total]],
            ],
        ]);
        """,
        k=key,
    )
    return text, (key,)


@_shape("xh-post-infobip-app-authorization-header")
def _xh_infobip(rng: random.Random) -> Built:
    key = f"{_hexs(rng, 32)}-{_guid(rng)}"
    text = _fill(
        """
        $ xh POST https://‹sub›.api.infobip.com/sms/2/text/advanced \\
            Authorization:'App ‹k›' \\
            'messages[0][from]=Ljekarna' \\
            'messages[0][destinations][0][to]=385‹num›' \\
            'messages[0][text]=Vaš recept je spreman za preuzimanje.'
        HTTP/1.1 200 OK
        Content-Type: application/json

        {
            "bulkId": "‹bulk›",
            "messages": [
                {
                    "messageId": "‹mid›",
                    "status": { "groupId": 1, "groupName": "PENDING", "id": 26, "name": "PENDING_ACCEPTED" },
                    "to": "385‹num›"
                }
            ]
        }
        """,
        sub=_pick(rng, _LOWER_DIGITS, 6),
        k=key,
        num=_digits(rng, 9),
        bulk=_digits(rng, 20),
        mid=_digits(rng, 20),
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# People: messages, e-mails, tickets and notes in languages the earlier parts do not use, and how people
# pass a password along (dictated, split, photographed, shared, handed over, hinted)
# --------------------------------------------------------------------------------------------------------


@_shape("catalan-school-email-contrasenya-provisional")
def _catalan(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        De: Secretaria Escola Sant Jordi <secretaria@escolasantjordi-example.cat>
        Per a: Núria Puig <nuria.puig@example.cat>
        Data: dl., 2 de març 2026 9:12
        Assumpte: Accés a la plataforma de l'escola

        Bon dia, Núria,

        Ja tens creat el compte a la plataforma de gestió de l'escola.
        Usuari: nuria.puig
        Contrasenya provisional: ‹pw›

        Et demanarà que la canviïs el primer cop que hi entris.

        Salutacions,
        Secretaria — Escola Sant Jordi
        """,
        pw=password,
    )
    return text, (password,)


@_shape("slovenian-osticket-reply-geslo-line")
def _slovenian(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        Zadeva: Re: [#‹n›] Dostop do VPN za novo sodelavko
        Od: IT podpora <podpora@obcina-example.si>

        Pozdravljeni,

        uporabniški račun za VPN je pripravljen.
        Uporabniško ime: m.kranjc
        Geslo: ‹pw›

        Geslo boste morali spremeniti ob prvi prijavi v portal.

        Lep pozdrav,
        Tadej, IT podpora
        --
        Za odgovor na ta zahtevek odgovorite nad to vrstico.
        """,
        n=_digits(rng, 6),
        pw=password,
    )
    return text, (password,)


@_shape("serbian-facebook-messenger-json-export-mojibake")
def _serbian_messenger(rng: random.Random) -> Built:
    password = _human_plain(rng)

    def mojibake(value: str) -> str:
        return value.encode("utf-8").decode("latin-1")

    export = {
        "participants": [{"name": mojibake("Милица Јовановић")}, {"name": "Nikola Petrovic"}],
        "messages": [
            {
                "sender_name": "Nikola Petrovic",
                "timestamp_ms": _epoch(rng) * 1000 + 95_000,
                "content": mojibake("Хвала!"),
                "is_geoblocked_for_viewer": False,
            },
            {
                "sender_name": mojibake("Милица Јовановић"),
                "timestamp_ms": _epoch(rng) * 1000,
                "content": mojibake(f"Лозинка за вај-фај у канцеларији је {password} (мрежа Kancelarija-5G)"),
                "is_geoblocked_for_viewer": False,
            },
        ],
        "title": mojibake("Милица Јовановић"),
        "is_still_participant": True,
        "thread_path": "inbox/milicajovanovic_" + _digits(rng, 16),
    }
    text = (
        "$ cat messages/inbox/milicajovanovic_"
        + _digits(rng, 16)
        + "/message_1.json\n"
        + json.dumps(export, indent=2)
        + "\n"
    )
    return text, (password,)


@_shape("bulgarian-email-parola-accounting-software")
def _bulgarian(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#%*+-=?@_")
    text = _fill(
        """
        От: Счетоводна къща „Балкан“ <office@balkan-smetki-example.bg>
        До: Георги Петров <g.petrov@example.bg>
        Тема: Достъп до счетоводната програма

        Здравейте, г-н Петров,

        Създадохме Ви достъп до онлайн счетоводната програма.
        Потребител: petrov.g
        Парола: ‹pw›

        Моля, сменете паролата след първото влизане.

        Поздрави,
        Десислава Иванова
        """,
        pw=password,
    )
    return text, (password,)


@_shape("lithuanian-adb-content-query-sms-slaptazodis")
def _lithuanian(rng: random.Random) -> Built:
    password = _brief(rng, 9, 11)
    text = _fill(
        """
        $ adb shell content query --uri content://sms/inbox --projection address:date:body --where "address='BIBLIOTEKA'"
        Row: 0 address=BIBLIOTEKA, date=‹ms›, body=Jūsų laikinas slaptažodis prisijungti prie e. bibliotekos: ‹pw› Pakeiskite jį po pirmo prisijungimo.
        """,
        ms=str(_epoch(rng) * 1000 + rng.randint(0, 999)),
        pw=password,
    )
    return text, (password,)


@_shape("latvian-element-json-export-parole-message")
def _latvian(rng: random.Random) -> Built:
    password = _human(rng, marks="!?")
    events = {
        "room_name": "Infrastruktūra",
        "room_creator": "@janis:matrix.birojs-example.lv",
        "topic": "",
        "export_date": _date(rng),
        "exported_by": "@laura:matrix.birojs-example.lv",
        "messages": [
            {
                "type": "m.room.message",
                "sender": "@janis:matrix.birojs-example.lv",
                "content": {
                    "msgtype": "m.text",
                    "body": f"Jaunā rūtera admin parole ir {password} — lūdzu, ieliec to KeePass.",
                },
                "origin_server_ts": _epoch(rng) * 1000,
                "event_id": "$" + _b64u(rng, 32),
            },
            {
                "type": "m.room.message",
                "sender": "@laura:matrix.birojs-example.lv",
                "content": {"msgtype": "m.text", "body": "Paldies, ielikšu."},
                "origin_server_ts": _epoch(rng) * 1000,
                "event_id": "$" + _b64u(rng, 32),
            },
        ],
    }
    return json.dumps(events, indent=2, ensure_ascii=False) + "\n", (password,)


@_shape("estonian-discordchatexporter-plaintext-parool")
def _estonian(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="#%+-=@_")
    text = _fill(
        """
        ==============================================================
        Guild: Tartu Häkkerikoda
        Channel: infra / server
        ==============================================================

        [05.03.2026 21:14] kaarel
        uue Proxmoxi root parool on ‹pw›, vahetan nädala pärast ära

        [05.03.2026 21:15] liis
        aitäh! panen Bitwardeni

        ==============================================================
        Exported 2 message(s)
        ==============================================================
        """,
        pw=password,
    )
    return text, (password,)


@_shape("icelandic-email-lykilord-label")
def _icelandic(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        Frá: Tölvuþjónusta <hjalp@sveitarfelag-example.is>
        Til: Guðrún Sigurðardóttir <gudrun@sveitarfelag-example.is>
        Efni: Aðgangur að launakerfinu

        Sæl Guðrún,

        Aðgangurinn þinn að launakerfinu er tilbúinn.
        Notandanafn: gudrun.s
        Lykilorð: ‹pw›

        Vinsamlegast breyttu lykilorðinu við fyrstu innskráningu.

        Kær kveðja,
        Tölvuþjónustan
        """,
        pw=password,
    )
    return text, (password,)


@_shape("swahili-termux-sms-list-json-nenosiri")
def _swahili(rng: random.Random) -> Built:
    password = _brief(rng, 10, 10)
    messages = [
        {
            "threadid": rng.randint(10, 99),
            "type": "inbox",
            "read": True,
            "number": "SACCO-YETU",
            "received": f"{_date(rng)} {_time(rng)[:5]}",
            "body": f"SACCO YETU: Nenosiri lako la muda ni {password}. Usimpe mtu yeyote. Libadilishe baada ya kuingia.",
            "_id": rng.randint(1000, 9999),
        }
    ]
    text = "~ $ termux-sms-list -l 1 -t inbox\n" + json.dumps(messages, indent=2, ensure_ascii=False) + "\n"
    return text, (password,)


@_shape("tagalog-imessage-exporter-txt-password-ng-wifi")
def _tagalog(rng: random.Random) -> Built:
    password = _human_plain(rng)
    text = _fill(
        """
        Mar 05, 2026  9:14:22 PM
        +63917‹num›
        Ate, yung password ng wifi sa bahay ay ‹pw› ha, wag mo ipamigay 😅

        Mar 05, 2026  9:15:01 PM (Read by you after 2 minutes)
        Me
        Sige, salamat! Papalitan ko na lang pagbalik ko.
        """,
        num=_digits(rng, 7),
        pw=password,
    )
    return text, (password,)


@_shape("malay-university-email-kata-laluan-sementara")
def _malay(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#$%*@")
    text = _fill(
        """
        Daripada: Pusat Teknologi Maklumat <ptm@universiti-example.edu.my>
        Kepada: Nur Aisyah binti Rahman <aisyah.rahman@siswa.universiti-example.edu.my>
        Tajuk: Akaun e-Pembelajaran anda

        Assalamualaikum dan salam sejahtera,

        Akaun e-Pembelajaran anda telah diaktifkan.
        ID Pengguna: A23CS0412
        Kata laluan sementara: ‹pw›

        Sila tukar kata laluan anda selepas log masuk kali pertama.

        Sekian, terima kasih.
        Pusat Teknologi Maklumat
        """,
        pw=password,
    )
    return text, (password,)


@_shape("urdu-whatsapp-ios-export-office-wifi-password")
def _urdu(rng: random.Random) -> Built:
    password = _human_plain(rng) + rng.choice("@#")
    text = _fill(
        """
        [05/03/2026, 9:14:22 PM] Bilal Ahmed: السلام علیکم، دفتر کے نئے وائی فائی کا پاس ورڈ ‹pw› ہے
        [05/03/2026, 9:14:40 PM] Bilal Ahmed: نیٹ ورک کا نام Office-2nd-Floor ہے
        [05/03/2026, 9:16:03 PM] Sana: شکریہ بھائی 👍
        """,
        pw=password,
    )
    return text, (password,)


@_shape("bengali-whatsapp-android-export-password")
def _bengali(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        05/03/26, 9:14 pm - Rahim Uddin: ভাই, দোকানের POS সফটওয়্যারের নতুন পাসওয়ার্ড ‹pw›
        05/03/26, 9:14 pm - Rahim Uddin: ইউজার নেম আগের মতোই admin
        05/03/26, 9:17 pm - Karim: ঠিক আছে, পেয়েছি
        """,
        pw=password,
    )
    return text, (password,)


@_shape("tamil-telegram-desktop-json-export-kadavuchol")
def _tamil(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    export = {
        "name": "Kumar Textiles — Accounts",
        "type": "private_group",
        "id": rng.randint(10**9, 10**10),
        "messages": [
            {
                "id": rng.randint(1000, 9999),
                "type": "message",
                "date": f"{_date(rng)}T21:14:22",
                "date_unixtime": str(_epoch(rng)),
                "from": "Senthil Kumar",
                "from_id": "user" + _digits(rng, 9),
                "text": f"Tally சர்வர் கடவுச்சொல்: {password} — யாருக்கும் அனுப்ப வேண்டாம்",
                "text_entities": [
                    {"type": "plain", "text": f"Tally சர்வர் கடவுச்சொல்: {password} — யாருக்கும் அனுப்ப வேண்டாம்"}
                ],
            }
        ],
    }
    return json.dumps(export, indent=1, ensure_ascii=False) + "\n", (password,)


@_shape("persian-email-ramz-obur-movaghat")
def _persian(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#$%*@")
    text = _fill(
        """
        از: پشتیبانی فناوری اطلاعات <it@sherkat-example.ir>
        به: مریم احمدی <m.ahmadi@sherkat-example.ir>
        موضوع: حساب کاربری سامانه حضور و غیاب

        سلام خانم احمدی،

        حساب کاربری شما در سامانه حضور و غیاب ایجاد شد.
        نام کاربری: m.ahmadi
        رمز عبور موقت: ‹pw›

        لطفاً پس از اولین ورود، رمز عبور خود را تغییر دهید.

        با احترام،
        واحد فناوری اطلاعات
        """,
        pw=password,
    )
    return text, (password,)


@_shape("afrikaans-zoom-saved-chat-wagwoord")
def _afrikaans(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        21:02:17 From Pieter van der Merwe to Everyone:
        \tGoeienaand almal, dankie dat julle ingeskakel het
        21:14:05 From Pieter van der Merwe to Everyone:
        \tDie wagwoord vir die kerkraad se gedeelde Dropbox is ‹pw›
        21:14:31 From Annelie Botha to Everyone:
        \tDankie Pieter!
        """,
        pw=password,
    )
    return text, (password,)


@_shape("basque-zammad-ticket-pasahitza")
def _basque(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        Txartela #‹n› — Posta elektronikoko kontu berria
        Egoera: itxita · Taldea: Informatika

        Kaixo Miren,

        Zure posta kontua prest dago.
        Erabiltzailea: miren.etxeberria@udala-example.eus
        Pasahitza: ‹pw›

        Mesedez, aldatu pasahitza lehen aldiz sartzean.

        Ondo izan,
        Iñaki — Informatika zerbitzua
        """,
        n=_digits(rng, 5),
        pw=password,
    )
    return text, (password,)


@_shape("welsh-council-email-cyfrinair-dros-dro")
def _welsh(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        Oddi wrth: Desg Gymorth TG <cymorth@cyngor-example.cymru>
        At: Rhys Jones <rhys.jones@cyngor-example.cymru>
        Pwnc: Eich cyfrif newydd

        Annwyl Rhys,

        Mae eich cyfrif ar y system archebu ystafelloedd yn barod.
        Enw defnyddiwr: rhys.jones
        Eich cyfrinair dros dro yw: ‹pw›

        Newidiwch eich cyfrinair y tro cyntaf y byddwch yn mewngofnodi.

        Diolch,
        Y Ddesg Gymorth TG
        """,
        pw=password,
    )
    return text, (password,)


@_shape("albanian-threema-chat-export-fjalekalimi")
def _albanian(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#$%*@")
    text = _fill(
        """
        [05.03.26, 21:14] Arben: Fjalëkalimi i ri për kamerat e dyqanit është ‹pw›
        [05.03.26, 21:14] Arben: përdoruesi mbetet admin
        [05.03.26, 21:20] Elira: Faleminderit, e ndryshova edhe në aplikacion 👍
        """,
        pw=password,
    )
    return text, (password,)


@_shape("georgian-email-paroli-portal-access")
def _georgian(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        From: IT მხარდაჭერა <it@kompania-example.ge>
        To: ნინო ბერიძე <nino.beridze@kompania-example.ge>
        Subject: პორტალზე წვდომა

        გამარჯობა ნინო,

        თქვენი ანგარიში პორტალზე შექმნილია.
        მომხმარებელი: nino.beridze
        პაროლი: ‹pw›

        გთხოვთ, პირველი შესვლისას შეცვალოთ პაროლი.

        პატივისცემით,
        IT მხარდაჭერა
        """,
        pw=password,
    )
    return text, (password,)


@_shape("armenian-telegram-html-export-gaghtnabar")
def _armenian(rng: random.Random) -> Built:
    password = _brief(rng, 10, 12)
    text = _fill(
        """
        <div class="message default clearfix" id="message‹id›">
         <div class="pull_left userpic_wrap">
          <div class="userpic userpic2" style="width: 42px; height: 42px">
           <div class="initials" style="line-height: 42px">ԱՍ</div>
          </div>
         </div>
         <div class="body">
          <div class="pull_right date details" title="05.03.2026 21:14:22 UTC+04:00">21:14</div>
          <div class="from_name">Արամ Սարգսյան</div>
          <div class="text">Գրասենյակի Wi-Fi-ի գաղտնաբառը՝ ‹pw›</div>
         </div>
        </div>
        """,
        id=str(rng.randint(1000, 99999)),
        pw=password,
    )
    return text, (password,)


@_shape("kazakh-email-kupiya-soz-cyrillic")
def _kazakh(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#$%*@")
    text = _fill(
        """
        Кімнен: АТ қызметі <it@mektep-example.kz>
        Кімге: Айгерім Серікқызы <aigerim@mektep-example.kz>
        Тақырып: Электрондық журналға кіру

        Сәлеметсіз бе, Айгерім!

        Электрондық журналдағы есептік жазбаңыз дайын.
        Логин: aigerim.s
        Уақытша құпия сөз: ‹pw›

        Алғаш кіргенде құпия сөзді ауыстыруды сұраймыз.

        Құрметпен,
        АТ қызметі
        """,
        pw=password,
    )
    return text, (password,)


_NATO = {
    **{
        c: w
        for c, w in zip(
            string.ascii_lowercase,
            "alfa bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey x-ray yankee zulu".split(),
            strict=True,
        )
    },
}


@_shape("support-call-notes-nato-as-in-dictation-then-confirmed")
def _nato_dictation(rng: random.Random) -> Built:
    password = _brief(rng, 9, 10)
    spoken = []
    for c in password:
        if c.isdigit():
            spoken.append(f"the number {c}")
        elif c.isupper():
            spoken.append(f"capital {c} as in {_NATO[c.lower()].capitalize()}")
        else:
            spoken.append(f"lower-case {c} as in {_NATO[c].capitalize()}")
    text = _fill(
        """
        Call notes — ticket ‹n› (Westbrook Dental, front desk PC)
        14:02 Caller: Priya (office manager). Printer share stopped working after the reset.
        14:06 Read the new scanner account password to her over the phone, one character at a time:
              ‹spoken›.
        14:07 She typed it back into the scan-to-folder settings and read it back to me: ‹pw›
        14:09 Test scan landed in \\\\fileserver\\scans. Closing.
        """,
        n=_digits(rng, 6),
        spoken=", ".join(spoken),
        pw=password,
    )
    return text, (password,)


@_shape("weechat-irc-log-password-split-across-two-messages")
def _split_messages(rng: random.Random) -> Built:
    first, second = _alnum(rng, 9), _alnum(rng, 9)
    d = _date(rng)
    text = _fill(
        """
        ‹d› 22:41:07\t@ramona\tok the new bouncer password, I'll split it so it's not in one line of the logs
        ‹d› 22:41:19\t@ramona\tfirst half: ‹a›
        ‹d› 22:41:52\t@ramona\tsecond half (no space between): ‹b›
        ‹d› 22:42:10\ttobi\tgot it, thanks. znc reconnecting now
        ‹d› 22:42:31\t--\ttobi_ (~tobi@user/tobi) has joined #hackspace-infra
        """,
        d=d,
        a=first,
        b=second,
    )
    return text, (first, second)


@_shape("easyocr-readtext-screenshot-router-wpa-key")
def _easyocr(rng: random.Random) -> Built:
    key = _human_plain(rng) + rng.choice("!#$")

    def box(x: int, y: int, w: int) -> str:
        return f"[[{x}, {y}], [{x + w}, {y}], [{x + w}, {y + 22}], [{x}, {y + 22}]]"

    rows = [
        (box(42, 18, 188), "Wireless Settings", 0.9981),
        (box(42, 76, 96), "SSID", 0.9994),
        (box(262, 76, 170), "Casa-Ferreira-5G", 0.9602),
        (box(42, 118, 150), "Security Mode", 0.9917),
        (box(262, 118, 160), "WPA2-PSK (AES)", 0.9145),
        (box(42, 160, 140), "WPA Key", 0.9872),
        (box(262, 160, 180), key, 0.8876),
        (box(42, 214, 60), "Save", 0.9998),
    ]
    text = ">>> reader = easyocr.Reader(['pt', 'en'])\n>>> reader.readtext('Screenshot 2026-03-05 at 21.14.22.png')\n["
    text += ",\n ".join(f"({b}, '{t}', {c})" for b, t, c in rows) + "]\n"
    return text, (key,)


@_shape("confluence-storage-format-shared-accounts-table")
def _confluence(rng: random.Random) -> Built:
    first, second = _strong(rng, 14, marks="!#$%*+-=?@_"), _human(rng)
    text = _fill(
        """
        <h2>Marketing tools — shared logins</h2>
        <ac:structured-macro ac:name="info" ac:schema-version="1"><ac:rich-text-body><p>Ask Ana before changing any of these, the agency uses them too.</p></ac:rich-text-body></ac:structured-macro>
        <table data-layout="default" ac:local-id="‹lid›"><colgroup><col style="width: 180.0px;" /><col style="width: 260.0px;" /><col style="width: 200.0px;" /><col style="width: 120.0px;" /></colgroup><tbody>
        <tr><th><p><strong>Tool</strong></p></th><th><p><strong>Login</strong></p></th><th><p><strong>Password</strong></p></th><th><p><strong>Owner</strong></p></th></tr>
        <tr><td><p>Canva Teams</p></td><td><p>marketing@vinhos-example.pt</p></td><td><p>‹a›</p></td><td><p>Ana</p></td></tr>
        <tr><td><p>Later (Instagram scheduling)</p></td><td><p>social@vinhos-example.pt</p></td><td><p>‹b›</p></td><td><p>Duarte</p></td></tr>
        <tr><td><p>Google Ads</p></td><td><p>ads@vinhos-example.pt</p></td><td><p><em>SSO, no password</em></p></td><td><p>Ana</p></td></tr>
        </tbody></table>
        """,
        lid=_guid(rng),
        a=first,
        b=second,
    )
    return text, (first, second)


@_shape("obsidian-handover-note-callout-and-inline-code")
def _obsidian_handover(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%*+-=?@_")
    text = _fill(
        """
        ---
        tags: [handover, office-it]
        created: ‹d›
        ---
        # Handover — office IT (Tomás → Sinéad)

        > [!warning] Temporary
        > Move everything below into [[Vaultwarden]] and delete this note after the handover call.

        ## NAS (Synology DS920+)
        - URL: https://nas.local:5001
        - Admin: `tomas-admin` / `‹pw›`
        - Hyper Backup to Backblaze runs 02:00, report mails go to it@ (see [[Backups]])

        ## Printers
        - Brother MFC in reception: web UI has the factory password on the sticker under the tray
        - [ ] Sinéad: change it this week
        """,
        d=_date(rng),
        pw=password,
    )
    return text, (password,)


@_shape("macos-dscl-read-authentication-hint-is-the-password")
def _dscl_hint(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        $ dscl . -read /Users/reception AuthenticationHint RealName UniqueID
        AuthenticationHint: ‹pw›
        RealName:
         Reception Mac
        UniqueID: 502
        $ # hint was set by the previous office manager: "it's just the password, so the temps can log in"
        """,
        pw=password,
    )
    return text, (password,)


@_shape("voicemail-transcription-email-guest-wifi-passphrase")
def _voicemail(rng: random.Random) -> Built:
    passphrase = _passphrase(rng, 3)
    text = _fill(
        """
        From: Google Voice <voice-noreply@google.com>
        Subject: New voicemail from (503) 555-‹n›

        Hi, this is Marco from the front desk at the Alder Street studio. The new guest Wi-Fi went in today, the network is Alder-Guest and the password is ‹pw›, all lower case with spaces, just like that. Can you update the sign by the door? Thanks, bye.

        Play message: https://voice.google.com/u/0/voicemail
        YOUR ACCOUNT  HELP CENTER  HELP FORUM
        To change how you receive voicemails, go to your voicemail settings.
        """,
        n=_digits(rng, 4),
        pw=passphrase,
    )
    return text, (passphrase,)


# --------------------------------------------------------------------------------------------------------
# Clean documents: no credential, plenty of look-alikes
# --------------------------------------------------------------------------------------------------------


@_clean_shape("clean-codex-rollout-shell-call-secret-by-reference")
def _clean_codex(rng: random.Random) -> str:
    call = _call_id(rng)
    command = (
        'export CLOUDSMITH_API_KEY="$(op read op://Release/cloudsmith/credential)" && '
        "cloudsmith push deb acme/fleet/debian/bookworm dist/fleet-agent_2.4.2_amd64.deb"
    )
    lines = [
        {
            "timestamp": _stamp(rng),
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "shell",
                "arguments": json.dumps(
                    {"command": ["bash", "-lc", command], "workdir": "/home/rui/src/fleet-agent"}
                ),
                "call_id": call,
            },
        },
        {
            "timestamp": _stamp(rng),
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": call,
                "output": json.dumps(
                    {
                        "output": "Creating a new deb package ... OK\n",
                        "metadata": {"exit_code": 0, "duration_seconds": 5.1},
                    }
                ),
            },
        },
        {
            "timestamp": _stamp(rng),
            "type": "event_msg",
            "payload": {
                "type": "token_count",
                "info": {
                    "total_token_usage": {
                        "input_tokens": 18211,
                        "cached_input_tokens": 16000,
                        "output_tokens": 412,
                    }
                },
            },
        },
    ]
    return "\n".join(json.dumps(line, separators=(",", ":")) for line in lines) + "\n"


@_clean_shape("clean-mcp-tools-list-schema-with-password-parameter")
def _clean_mcp_tools_list(rng: random.Random) -> str:
    result = {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "tools": [
                {
                    "name": "connect_database",
                    "description": "Open a connection. The password is read from the DB_PASSWORD environment variable of the server; never pass it as an argument.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "host": {"type": "string"},
                            "user": {"type": "string"},
                            "password_env": {
                                "type": "string",
                                "default": "DB_PASSWORD",
                                "description": "name of the env var holding the password",
                            },
                        },
                        "required": ["host", "user"],
                    },
                },
                {
                    "name": "rotate_api_key",
                    "description": "Create a new key in the vendor console and store it in the secrets manager; returns only the key id and last four characters.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"vendor": {"type": "string"}},
                        "required": ["vendor"],
                    },
                },
            ]
        },
    }
    return (
        f"{_stamp(rng)} [db-tools] [info] Message from server: "
        + json.dumps(result, separators=(",", ":"))
        + "\n"
    )


@_clean_shape("clean-playwright-test-fill-from-process-env")
def _clean_playwright_env(rng: random.Random) -> str:
    return _fill(
        """
        // tests/auth.setup.ts
        import { test as setup, expect } from '@playwright/test';

        const authFile = 'playwright/.auth/user.json';

        setup('authenticate', async ({ page }) => {
          await page.goto('/login');
          await page.getByLabel('Email').fill(process.env.E2E_USER_EMAIL!);
          await page.getByLabel('Password').fill(process.env.E2E_USER_PASSWORD!);
          await page.getByRole('button', { name: 'Sign in' }).click();
          await expect(page.getByRole('navigation')).toContainText('Dashboard');
          await page.context().storageState({ path: authFile });
        });
        """
    )


@_clean_shape("clean-pip-install-verbose-redacted-index-url")
def _clean_pip_redacted(rng: random.Random) -> str:
    return _fill(
        """
        $ pip install -v --index-url "$PIP_INDEX_URL" acme-billing==4.2.0
        Using pip 25.0.1 from /opt/venv/lib/python3.12/site-packages/pip (python 3.12)
        Looking in indexes: https://__token__:****@gitlab.example.com/api/v4/projects/‹pid›/packages/pypi/simple
        Collecting acme-billing==4.2.0
          Downloading https://gitlab.example.com/api/v4/projects/‹pid›/packages/pypi/files/‹sha›/acme_billing-4.2.0-py3-none-any.whl (88 kB)
        Successfully installed acme-billing-4.2.0
        """,
        pid=str(rng.randint(100, 999)),
        sha=_hexs(rng, 64),
    )


@_clean_shape("clean-kubectl-describe-secret-byte-counts-only")
def _clean_describe_secret(rng: random.Random) -> str:
    return _fill(
        """
        $ kubectl -n messaging describe secret rabbitmq
        Name:         rabbitmq
        Namespace:    messaging
        Labels:       app.kubernetes.io/instance=rabbitmq
                      app.kubernetes.io/managed-by=Helm
        Annotations:  meta.helm.sh/release-name: rabbitmq

        Type:  Opaque

        Data
        ====
        rabbitmq-erlang-cookie:  32 bytes
        rabbitmq-password:       24 bytes
        """
    )


@_clean_shape("clean-azure-pipelines-log-masked-asterisks")
def _clean_azure_masked(rng: random.Random) -> str:
    stamp = f"{_date(rng)}T{_time(rng)}."
    lines = [
        "##[section]Starting: Deploy function app",
        "Generating script.",
        "========================== Starting Command Output ===========================",
        f"[command]/usr/bin/bash /home/vsts/work/_temp/{_guid(rng)}.sh",
        f"+ az login --service-principal -u {_guid(rng)} -p *** --tenant ***",
        f"+ func azure functionapp publish fa-invoices-prod-{_pick(rng, _LOWER_DIGITS, 4)} --python",
        "Uploading 14.2 MB [###############################################################################]",
        "Remote build succeeded!",
        "##[section]Finishing: Deploy function app",
    ]
    ticks = sorted(rng.sample(range(1_000_000, 9_999_999), len(lines)))
    return "\n".join(f"{stamp}{tick}Z {line}" for tick, line in zip(ticks, lines, strict=True)) + "\n"


@_clean_shape("clean-pnpm-lock-yaml-integrity-hashes")
def _clean_pnpm_lock(rng: random.Random) -> str:
    def integrity() -> str:
        return "sha512-" + _b64s(rng, 64)

    return _fill(
        """
        lockfileVersion: '9.0'

        settings:
          autoInstallPeers: true
          excludeLinksFromLockfile: false

        packages:

          '@hono/node-server@1.13.8':
            resolution: {integrity: ‹a›}
            engines: {node: '>=18.14.1'}
            peerDependencies:
              hono: ^4

          hono@4.7.2:
            resolution: {integrity: ‹b›}
            engines: {node: '>=16.9.0'}

          jose@5.9.6:
            resolution: {integrity: ‹c›}
        """,
        a=integrity(),
        b=integrity(),
        c=integrity(),
    )


@_clean_shape("clean-git-reflog-and-rev-parse-shas")
def _clean_reflog(rng: random.Random) -> str:
    shas = [_hexs(rng, 40) for _ in range(4)]
    return _fill(
        """
        $ git reflog -n 4
        ‹s0› (HEAD -> main, origin/main) HEAD@{0}: pull --rebase: Fast-forward
        ‹s1› HEAD@{1}: commit: purge script: read the token from the environment
        ‹s2› HEAD@{2}: checkout: moving from fix/purge to main
        ‹s3› HEAD@{3}: commit (amend): bump fastly provider to 5.17
        $ git rev-parse HEAD HEAD~1
        ‹f0›
        ‹f1›
        """,
        s0=shas[0][:7],
        s1=shas[1][:7],
        s2=shas[2][:7],
        s3=shas[3][:7],
        f0=shas[0],
        f1=shas[1],
    )


@_clean_shape("clean-langgraph-checkpointer-thread-and-checkpoint-ids")
def _clean_langgraph_checkpoints(rng: random.Random) -> str:
    thread = _guid(rng)
    rows = []
    for step in range(3):
        rows.append(
            f"StateSnapshot(values={{'messages': [...{step + 2} messages]}}, next=('agent',), config={{'configurable': "
            f"{{'thread_id': '{thread}', 'checkpoint_ns': '', 'checkpoint_id': '1f0{_hexs(rng, 5)}-{_hexs(rng, 4)}-6{_hexs(rng, 3)}-{_hexs(rng, 4)}-{_hexs(rng, 12)}'}}}}, "
            f"metadata={{'source': 'loop', 'step': {step}, 'parents': {{}}}}, created_at='{_stamp(rng)}')"
        )
    return ">>> for s in graph.get_state_history(config):\n...     print(s)\n...\n" + "\n".join(rows) + "\n"


@_clean_shape("clean-anthropic-sse-stream-message-ids-and-usage")
def _clean_anthropic_sse(rng: random.Random) -> str:
    msg, tool = "msg_01" + _alnum(rng, 22), "toolu_01" + _alnum(rng, 22)
    return _fill(
        """
        event: message_start
        data: {"type":"message_start","message":{"id":"‹msg›","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":2381,"cache_read_input_tokens":1920,"output_tokens":1}}}

        event: content_block_start
        data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"‹tool›","name":"read_file","input":{}}}

        event: content_block_delta
        data: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"path\\": \\"deploy/worker.env.example\\"}"}}

        event: message_delta
        data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":58}}

        event: message_stop
        data: {"type":"message_stop"}
        """,
        msg=msg,
        tool=tool,
    )


@_clean_shape("clean-docker-buildx-imagetools-inspect-digests")
def _clean_imagetools(rng: random.Random) -> str:
    return _fill(
        """
        $ docker buildx imagetools inspect ghcr.io/kiosk-example/api:2026.03.1
        Name:      ghcr.io/kiosk-example/api:2026.03.1
        MediaType: application/vnd.oci.image.index.v1+json
        Digest:    sha256:‹d0›

        Manifests:
          Name:        ghcr.io/kiosk-example/api:2026.03.1@sha256:‹d1›
          MediaType:   application/vnd.oci.image.manifest.v1+json
          Platform:    linux/amd64

          Name:        ghcr.io/kiosk-example/api:2026.03.1@sha256:‹d2›
          MediaType:   application/vnd.oci.image.manifest.v1+json
          Platform:    linux/arm64
        """,
        d0=_hexs(rng, 64),
        d1=_hexs(rng, 64),
        d2=_hexs(rng, 64),
    )


@_clean_shape("clean-wrangler-secret-put-interactive-masked-prompt")
def _clean_wrangler_prompt(rng: random.Random) -> str:
    return _fill(
        """
        $ npx wrangler secret put MP_ACCESS_TOKEN --env production

         ⛅️ wrangler 3.109.2
        --------------------

        ✔ Enter a secret value: … ****************************************************************************
        🌀 Creating the secret for the Worker "checkout-mx-production"
        ✨ Success! Uploaded secret MP_ACCESS_TOKEN
        $ npx wrangler secret list --env production
        [
          {
            "name": "MP_ACCESS_TOKEN",
            "type": "secret_text"
          }
        ]
        """
    )


@_clean_shape("clean-prose-tokenizer-passkey-keyboard-secretary")
def _clean_prose(rng: random.Random) -> str:
    return _fill(
        """
        Minutes of the volunteer meeting, ‹d›

        The secretary passed the keyboard to Ines, who showed how the new tokenizer splits Portuguese place names
        into tokens: "Vila Nova de Gaia" becomes seven tokens, which is why the summaries ran over budget last month.
        Ramon asked whether passkeys would replace passwords on the member portal; the answer is "yes, for those who
        want it", and everyone else keeps signing in as before. The key to the storage room is now with the caretaker.
        Action: Ines to write a one-page guide on choosing a passphrase (no examples that could be reused).
        """,
        d=_date(rng),
    )


@_clean_shape("clean-html-favicon-svg-base64-data-url")
def _clean_favicon(rng: random.Random) -> str:
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><circle cx="16" cy="16" r="{rng.randint(10, 15)}" fill="#2f6f4f"/></svg>'
    data = base64.b64encode(svg.encode()).decode()
    png = _b64s(rng, 180)
    return _fill(
        """
        <!doctype html>
        <html lang="pt">
          <head>
            <meta charset="utf-8">
            <link rel="icon" type="image/svg+xml" href="data:image/svg+xml;base64,‹svg›">
            <link rel="apple-touch-icon" href="data:image/png;base64,‹png›">
            <title>Cooperativa Agrícola</title>
          </head>
          <body><main id="app"></main></body>
        </html>
        """,
        svg=data,
        png=png,
    )


@_clean_shape("clean-w3c-traceparent-and-request-id-headers")
def _clean_traceparent(rng: random.Random) -> str:
    return _fill(
        """
        < HTTP/2 200
        < content-type: application/json
        < traceparent: 00-‹trace›-‹span›-01
        < tracestate: rojo=‹state›,congo=t61rcWkgMzE
        < x-request-id: ‹rid›
        < x-amzn-trace-id: Root=1-‹root1›-‹root2›
        < cf-ray: ‹ray›-FRA
        < etag: W/"‹etag›"
        """,
        trace=_hexs(rng, 32),
        span=_hexs(rng, 16),
        state=_hexs(rng, 16),
        rid=_guid(rng),
        root1=_hexs(rng, 8),
        root2=_hexs(rng, 24),
        ray=_hexs(rng, 16),
        etag=_hexs(rng, 27),
    )


@_clean_shape("clean-ssh-keygen-fingerprint-and-randomart")
def _clean_randomart(rng: random.Random) -> str:
    cells = rng.choices(" .o+=*BOX@%&#/^", weights=[60, 12, 8, 6, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1], k=17 * 9)
    art = "\n".join("|" + "".join(cells[row * 17 : row * 17 + 17]) + "|" for row in range(9))
    return (
        "$ ssh-keygen -lv -f ~/.ssh/id_ed25519.pub\n"
        f"256 SHA256:{_b64s(rng, 32).rstrip('=')} rui@fleet-dev (ED25519)\n"
        "+--[ED25519 256]--+\n" + art + "\n+----[SHA256]-----+\n"
    )


@_clean_shape("clean-age-recipients-file-public-keys")
def _clean_age_recipients(rng: random.Random) -> str:
    bech = "023456789acdefghjklmnpqrstuvwxyz"
    lines = [f"age1{_pick(rng, bech, 58)}" for _ in range(3)]
    return _fill(
        """
        $ cat .sops/recipients.txt
        # ops laptop (Ana)
        ‹a›
        # ops laptop (Duarte)
        ‹b›
        # CI (public key only; the identity lives in the CI secret store)
        ‹c›
        $ sops --encrypt --age "$(paste -sd, .sops/recipients.txt | sed 's/#[^,]*,//g')" secrets.yaml > secrets.enc.yaml
        """,
        a=lines[0],
        b=lines[1],
        c=lines[2],
    )


@_clean_shape("clean-tailscale-status-json-node-public-keys")
def _clean_tailscale(rng: random.Random) -> str:
    tailnet = "tail" + _hexs(rng, 4)
    status = {
        "Version": "1.80.2-t" + _hexs(rng, 9),
        "BackendState": "Running",
        "Self": {
            "ID": "n" + _alnum(rng, 12) + "CNTRL",
            "PublicKey": "nodekey:" + _hexs(rng, 64),
            "HostName": "fleet-dev",
            "DNSName": f"fleet-dev.{tailnet}.ts.net.",
            "TailscaleIPs": ["100.101.12.7", "fd7a:115c:a1e0::1b01:c07"],
            "Online": True,
        },
        "MagicDNSSuffix": f"{tailnet}.ts.net",
        "CurrentTailnet": {"Name": "acme.example", "MagicDNSEnabled": True},
    }
    return (
        "$ tailscale status --json | jq '{Version, BackendState, Self, MagicDNSSuffix, CurrentTailnet}'\n"
        + json.dumps(status, indent=2)
        + "\n"
    )


@_clean_shape("clean-csproj-user-secrets-id-guid")
def _clean_csproj(rng: random.Random) -> str:
    return _fill(
        """
        <Project Sdk="Microsoft.NET.Sdk.Web">

          <PropertyGroup>
            <TargetFramework>net9.0</TargetFramework>
            <Nullable>enable</Nullable>
            <ImplicitUsings>enable</ImplicitUsings>
            <UserSecretsId>‹g›</UserSecretsId>
          </PropertyGroup>

          <ItemGroup>
            <PackageReference Include="Npgsql.EntityFrameworkCore.PostgreSQL" Version="9.0.4" />
            <PackageReference Include="Microsoft.Identity.Web" Version="3.8.2" />
          </ItemGroup>

        </Project>
        """,
        g=_guid(rng),
    )


@_clean_shape("clean-stripe-js-publishable-key-checkout-page")
def _clean_stripe_pk(rng: random.Random) -> str:
    return _fill(
        """
        <script src="https://js.stripe.com/v3/"></script>
        <script>
          // Publishable key: meant for the browser. The secret key lives only on the server.
          const stripe = Stripe('pk_live_‹pk›');
          const elements = stripe.elements({ clientSecret: window.__CHECKOUT__.clientSecret });
          elements.create('payment').mount('#payment-element');
        </script>
        """,
        pk=_alnum(rng, 99),
    )


@_clean_shape("clean-vault-list-token-accessors")
def _clean_vault_accessors(rng: random.Random) -> str:
    accessors = "\n".join(_alnum(rng, 24) for _ in range(4))
    return (
        "$ vault list auth/token/accessors\nKeys\n----\n"
        + accessors
        + "\n"
        + _fill(
            """
        $ vault token lookup -accessor ‹a›
        Key                 Value
        ---                 -----
        accessor            ‹a›
        creation_time       1772433104
        display_name        approle-ci
        entity_id           ‹e›
        expire_time         2026-03-04T10:11:44.118212Z
        id                  n/a
        policies            [ci-deploy default]
        ttl                 23h58m12s
        """,
            a=_alnum(rng, 24),
            e=_guid(rng),
        )
    )


@_clean_shape("clean-sops-encrypted-yaml-enc-values")
def _clean_sops(rng: random.Random) -> str:
    def enc(n: int) -> str:
        return f"ENC[AES256_GCM,data:{_b64s(rng, n)},iv:{_b64s(rng, 32)},tag:{_b64s(rng, 16)},type:str]"

    return _fill(
        """
        database:
            user: ‹u›
            password: ‹p›
        smtp:
            password: ‹s›
        sops:
            age:
                - recipient: age1‹r›
                  enc: |
                    -----BEGIN AGE ENCRYPTED FILE-----
                    ‹blob›
                    -----END AGE ENCRYPTED FILE-----
            lastmodified: "‹d›"
            mac: ‹mac›
            version: 3.9.4
        """,
        u=enc(6),
        p=enc(18),
        s=enc(16),
        r=_pick(rng, "023456789acdefghjklmnpqrstuvwxyz", 58),
        blob=_b64s(rng, 48),
        d=f"{_date(rng)}T{_time(rng)}Z",
        mac=enc(32),
    )


@_clean_shape("clean-ansible-vault-encrypted-string-block")
def _clean_ansible_vault(rng: random.Random) -> str:
    body = "\n".join("          " + _hexs(rng, 80) for _ in range(5))
    return (
        "# group_vars/fileservers/vault.yml\n"
        "ansible_password: !vault |\n"
        "          $ANSIBLE_VAULT;1.1;AES256\n" + body + "\n"
        "ansible_user: CORP\\svc_ansible\n"
    )


@_clean_shape("clean-flake-lock-narhash-and-revs")
def _clean_flake_lock(rng: random.Random) -> str:
    lock = {
        "nodes": {
            "nixpkgs": {
                "locked": {
                    "lastModified": _epoch(rng),
                    "narHash": "sha256-" + _b64s(rng, 32),
                    "owner": "NixOS",
                    "repo": "nixpkgs",
                    "rev": _hexs(rng, 40),
                    "type": "github",
                },
                "original": {"owner": "NixOS", "ref": "nixos-24.11", "repo": "nixpkgs", "type": "github"},
            },
            "root": {"inputs": {"nixpkgs": "nixpkgs"}},
        },
        "root": "root",
        "version": 7,
    }
    return json.dumps(lock, indent=2) + "\n"


@_clean_shape("clean-go-version-m-build-info-module-hashes")
def _clean_go_version_m(rng: random.Random) -> str:
    def h1() -> str:
        return "h1:" + _b64s(rng, 32)

    return _fill(
        """
        $ go version -m ./bin/migrate
        ./bin/migrate: go1.23.6
        \tpath\tinventory/cmd/migrate
        \tmod\tinventory\t(devel)
        \tdep\tgithub.com/golang-migrate/migrate/v4\tv4.18.2\t‹a›
        \tdep\tgithub.com/jackc/pgx/v5\tv5.7.2\t‹b›
        \tdep\tgithub.com/lib/pq\tv1.10.9\t‹c›
        \tbuild\t-buildmode=exe
        \tbuild\tCGO_ENABLED=0
        \tbuild\tvcs=git
        \tbuild\tvcs.revision=‹rev›
        \tbuild\tvcs.time=‹t›
        \tbuild\tvcs.modified=false
        """,
        a=h1(),
        b=h1(),
        c=h1(),
        rev=_hexs(rng, 40),
        t=f"{_date(rng)}T{_time(rng)}Z",
    )


@_clean_shape("clean-catalan-password-reset-notice-no-value")
def _clean_catalan(rng: random.Random) -> str:
    return _fill(
        """
        Benvolgudes famílies,

        A partir del ‹d› la plataforma de l'escola demanarà una contrasenya nova a tothom.
        Quan hi entreu, us apareixerà un formulari: escriviu la contrasenya actual i després la nova dues vegades.
        La contrasenya ha de tenir com a mínim 12 caràcters. No la compartiu per correu ni per WhatsApp:
        la secretaria mai no us la demanarà.

        Gràcies,
        Secretaria — Escola Sant Jordi
        """,
        d=_date(rng),
    )


@_clean_shape("clean-nato-phonetic-alphabet-reference-card")
def _clean_nato_card(rng: random.Random) -> str:
    rows = [f"{c.upper()}  {w.capitalize()}" for c, w in _NATO.items()]
    return (
        "Helpdesk reference card: spelling over the phone\n"
        "(Use this to confirm names and ticket numbers. Never read a password aloud; send a reset link.)\n\n"
        + "\n".join(rows)
        + "\n"
    )


@_clean_shape("clean-macos-dscl-read-no-hint-shadowhash-authority")
def _clean_dscl(rng: random.Random) -> str:
    return _fill(
        """
        $ dscl . -read /Users/reception AuthenticationAuthority GeneratedUID AuthenticationHint
        AuthenticationAuthority: ;ShadowHash;HASHLIST:<SALTED-SHA512-PBKDF2,SRP-RFC5054-4096-SHA512-PBKDF2> ;Kerberosv5;;reception@LKDC:SHA1.‹lkdc›;LKDC:SHA1.‹lkdc›; ;SecureToken;
        GeneratedUID: ‹g›
        AuthenticationHint:
        """,
        lkdc=_hexs(rng, 40, upper=True),
        g=_guid(rng).upper(),
    )


@_clean_shape("clean-chrome-sanitized-har-export-no-auth")
def _clean_har(rng: random.Random) -> str:
    entry = {
        "startedDateTime": _stamp(rng),
        "time": 84.2,
        "request": {
            "method": "GET",
            "url": "https://api.taxi-dispatch.example/v2/rides?status=open",
            "httpVersion": "http/2.0",
            "headers": [
                {"name": ":authority", "value": "api.taxi-dispatch.example"},
                {"name": "accept", "value": "application/json, text/plain, */*"},
                {"name": "x-request-id", "value": _guid(rng)},
            ],
            "cookies": [],
            "queryString": [{"name": "status", "value": "open"}],
        },
        "response": {
            "status": 200,
            "statusText": "",
            "content": {"size": 1824, "mimeType": "application/json"},
        },
        "_initiator": {"type": "script"},
    }
    return (
        '// Exported with Chrome "Export HAR (sanitized)": cookies and Authorization headers are left out\n'
        + json.dumps({"log": {"version": "1.2", "entries": [entry]}}, indent=2)
        + "\n"
    )


@_clean_shape("clean-jwt-cli-decode-header-and-claims-only")
def _clean_jwt_decode(rng: random.Random) -> str:
    return _fill(
        """
        $ jwt decode "$(pbpaste)"

        Token header
        ------------
        {
          "typ": "JWT",
          "alg": "RS256",
          "kid": "‹kid›"
        }

        Token claims
        ------------
        {
          "aud": "api://dispatch",
          "exp": ‹exp›,
          "iat": ‹iat›,
          "iss": "https://login.taxi-dispatch.example/",
          "role": "dispatcher",
          "sub": "‹sub›"
        }
        """,
        kid=_b64u(rng, 24),
        exp=str(_epoch(rng) + 3600),
        iat=str(_epoch(rng)),
        sub=_guid(rng),
    )


@_clean_shape("clean-bruno-environment-file-secret-var-names")
def _clean_bruno_env(rng: random.Random) -> str:
    return _fill(
        """
        $ cat collections/asana/environments/Production.bru
        vars {
          baseUrl: https://app.asana.com/api/1.0
          workspaceGid: ‹gid›
        }
        vars:secret [
          asanaToken
        ]
        $ git check-ignore -v collections/asana/.env
        .gitignore:3:.env\tcollections/asana/.env
        """,
        gid=_digits(rng, 16),
    )


@_clean_shape("clean-pulumi-stack-config-secure-ciphertexts")
def _clean_pulumi_secure(rng: random.Random) -> str:
    return _fill(
        """
        # Pulumi.prod.yaml
        encryptionsalt: v1:‹salt›:v1:‹iv›:‹tag›
        config:
          aws:region: eu-central-1
          shop:dbPassword:
            secure: v1:‹a›
          shop:stripeSecretKey:
            secure: v1:‹b›
          shop:instanceCount: "3"
        """,
        salt=_b64s(rng, 8),
        iv=_b64s(rng, 12),
        tag=_b64s(rng, 16),
        a=_b64s(rng, 48),
        b=_b64s(rng, 72),
    )


@_clean_shape("clean-sentry-event-json-filtered-values")
def _clean_sentry_event(rng: random.Random) -> str:
    event = {
        "event_id": _hexs(rng, 32),
        "timestamp": _stamp(rng),
        "platform": "python",
        "level": "error",
        "exception": {
            "values": [
                {
                    "type": "OperationalError",
                    "value": 'connection to server at "10.4.0.12", port 5432 failed: FATAL:  password authentication failed for user "reports_rw"',
                }
            ]
        },
        "request": {
            "url": "https://reports.example.org/export",
            "headers": {
                "Authorization": "[Filtered]",
                "Cookie": "[Filtered]",
                "User-Agent": "python-requests/2.32.3",
            },
        },
        "extra": {"database_url": "[Filtered]", "retry": 3},
        "contexts": {"trace": {"trace_id": _hexs(rng, 32), "span_id": _hexs(rng, 16), "op": "http.server"}},
    }
    return json.dumps(event, indent=2) + "\n"


@_clean_shape("clean-keepassxc-cli-show-protected-password")
def _clean_keepassxc(rng: random.Random) -> str:
    return _fill(
        """
        $ keepassxc-cli show -a Title -a UserName -a Password -a URL ~/office.kdbx "Network/NAS admin"
        Enter password to unlock /home/sinead/office.kdbx:
        NAS admin
        tomas-admin
        PROTECTED
        https://nas.local:5001
        $ keepassxc-cli show ~/office.kdbx "Network/NAS admin" | grep -i uuid
        Uuid: {‹g›}
        """,
        g=_guid(rng),
    )


@_clean_shape("clean-apt-inrelease-sha256-listing")
def _clean_inrelease(rng: random.Random) -> str:
    lines = []
    for name, size in (
        ("main/binary-amd64/Packages", 8_412_883),
        ("main/binary-amd64/Packages.gz", 2_120_119),
        ("main/i18n/Translation-en", 6_012_442),
    ):
        lines.append(f" {_hexs(rng, 64)} {size:>9} {name}")
    return (
        "Origin: Debian\nLabel: Debian\nSuite: stable\nCodename: bookworm\nDate: Sat, 08 Mar 2026 09:12:41 UTC\n"
        "Acquire-By-Hash: yes\nSHA256:\n" + "\n".join(lines) + "\n"
    )


@_clean_shape("clean-swahili-security-awareness-sms-no-value")
def _clean_swahili(rng: random.Random) -> str:
    messages = [
        {
            "threadid": rng.randint(10, 99),
            "type": "inbox",
            "read": True,
            "number": "SACCO-YETU",
            "received": f"{_date(rng)} {_time(rng)[:5]}",
            "body": "SACCO YETU: Kamwe hatutakuomba nenosiri lako wala PIN kwa simu au SMS. Ukipigiwa simu ya namna hiyo, ripoti kwa 0800 720 000.",
            "_id": rng.randint(1000, 9999),
        }
    ]
    return "~ $ termux-sms-list -l 1 -t inbox\n" + json.dumps(messages, indent=2, ensure_ascii=False) + "\n"


@_clean_shape("clean-agno-debug-log-tool-reads-secret-by-name")
def _clean_agno(rng: random.Random) -> str:
    return _fill(
        """
        DEBUG *********** Agent Run Start: ‹rid› ***********
        DEBUG ========== user ==========
        DEBUG Post the Saturday market opening hours to our Bluesky
        DEBUG ========== assistant ==========
        DEBUG Tool Calls:
                - ID: '‹c›'
                  Name: 'post_status'
                  Arguments: 'handle: harbourside-coop.bsky.social, text: Saturday market: 8am-1pm at Pier 3!'
        DEBUG Running: post_status(handle=harbourside-coop.bsky.social, text=Saturday market: 8am-1pm at Pier 3!)
        DEBUG post_status: using app password from env BLUESKY_APP_PASSWORD (set: yes, length: 19)
        DEBUG * Tokens:                      input=598, output=41, total=639
        """,
        rid=_guid(rng),
        c=_call_id(rng),
    )


@_clean_shape("clean-n8n-export-credentials-encrypted-data")
def _clean_n8n(rng: random.Random) -> str:
    creds = [
        {
            "createdAt": _stamp(rng),
            "updatedAt": _stamp(rng),
            "id": _alnum(rng, 16),
            "name": "Postgres account (warehouse)",
            "data": "U2FsdGVkX1" + _b64s(rng, 120),
            "type": "postgres",
            "isManaged": False,
        }
    ]
    return (
        "$ docker exec -u node n8n n8n export:credentials --all --pretty\n"
        + json.dumps(creds, indent=2)
        + "\n"
    )


@_clean_shape("clean-bash-read-silent-prompt-transcript")
def _clean_read_s(rng: random.Random) -> str:
    return _fill(
        """
        $ read -rs -p "Cloudsmith API key: " CLOUDSMITH_API_KEY; echo
        Cloudsmith API key:
        $ export CLOUDSMITH_API_KEY
        $ echo "${#CLOUDSMITH_API_KEY} characters, ends in ${CLOUDSMITH_API_KEY: -4}" | sed 's/ends in .*/ends in ****/'
        40 characters, ends in ****
        $ cloudsmith whoami
        User: Rui Almeida (slug: rui-almeida-‹s›)
        """,
        s=_hexs(rng, 4),
    )


SHAPES = tuple(name for name, _ in _WITH_SECRET)
CLEAN_SHAPES = tuple(name for name, _ in _WITHOUT_SECRET)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape, its values drawn with `seed`, then the documents without a secret."""
    rng = random.Random(seed)
    credential = [Document(name, *make(rng)) for name, make in _WITH_SECRET]
    clean = [Document(name, make(rng)) for name, make in _WITHOUT_SECRET]
    return credential + clean
