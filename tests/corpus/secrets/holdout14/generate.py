"""The HOLDOUT14 part of the secret corpus: a fourteenth blind part, written after HOLDOUT to HOLDOUT13.

Written blind: its author read only the `Document` type and the corpus docstring, the structure test of the blind
parts and the HOLDOUT13 generator's interface and layout (its registration decorators, `documents(seed)` and
`generate`, its docstring's rules) and its shape names (only to avoid reusing them); never its documents, nor the
detector, its rules, docs, tests, state or figures, and no document was run through a detector or a redactor.
Each document imitates what a real tool, agent, config file, log, terminal session, HTTP trace, notebook, chat
message or person writes in 2026:

- agent frameworks and coding agents: LangGraph, LangSmith, CrewAI, AutoGen and AutoGen Studio, the OpenAI Agents
  SDK, Claude Code settings and MCP configs (Claude Desktop, Cursor, mcp-remote, the MCP inspector), Semantic
  Kernel, LlamaIndex and LlamaParse, DSPy, Haystack, smolagents, Pydantic AI and Logfire, Letta, mem0,
  browser-use, Tavily, Firecrawl, E2B, Browserbase, LiteLLM, vLLM, TGI, Open WebUI, Gemini CLI, Codex CLI, Aider,
  Continue, Roo Code, Goose, n8n, Dify, Langflow, Chainlit, Streamlit, Gradio, the Realtime API, OTLP JSON spans
  with GenAI attributes and OpenTelemetry collector and exporter configs;
- vector databases: Pinecone, Weaviate, Qdrant, Milvus and Zilliz, Chroma, LanceDB, turbopuffer, Astra DB,
  Upstash Vector, Meilisearch, Typesense and Elasticsearch;
- cloud CLIs and their files: aws (credentials, STS, IAM, Secrets Manager, SSM, Cognito, ECR), gcloud (ADC,
  access tokens, Cloud SQL, service-account keys), az (service principals, storage keys and SAS, ACR, Cosmos DB,
  publish profiles), doctl, flyctl, wrangler and cloudflared, Vercel, Netlify, Heroku, Railway, Supabase, Neon,
  PlanetScale, Turso, Linode, Hetzner, Scaleway, OVH, OCI, Alibaba, Tencent, Yandex, Backblaze, Wasabi, MinIO,
  rclone, Cloudinary, Render, Deno Deploy, ngrok, Tailscale, IBM Cloud and Exoscale;
- infrastructure as code and runtime config: Terraform (tfvars, state, providers, credentials.tfrc.json,
  outputs), Pulumi, Ansible, cloud-init, Packer, Chef, Hiera, Salt, Vagrant, Kubernetes Secrets, ConfigMaps and
  kubeconfigs, kubectl, Helm, Kustomize, Argo CD, Flux, External Secrets, docker-compose, Dockerfiles, docker
  inspect, systemd units and drop-ins, nginx, HAProxy, Caddy, Traefik, Envoy, Consul, Nomad and Vault Agent;
- observability: Datadog, New Relic, Sentry, Grafana, Honeycomb Refinery, Splunk, Kibana, Logstash, Filebeat,
  Fluent Bit, Vector, Prometheus, Alertmanager, PagerDuty, Opsgenie, Dynatrace, Axiom, Rollbar, PostHog and
  LaunchDarkly;
- messaging and e-mail: Twilio, SendGrid, Mailgun, Postmark, Mailchimp, Resend, Brevo, Mailjet, SES SMTP,
  msmtp, Postfix, sSMTP, Nodemailer, swaks, Spring Mail, Vonage, Plivo, Telnyx, Slack, Discord, Telegram, Teams
  workflows, Pushover, Pusher, Ably and OneSignal;
- payments and SaaS tokens in their published formats: Stripe, PayPal, Square, Adyen, Mollie, Razorpay,
  Paystack, Flutterwave, Paddle, WooCommerce, Shopify, HubSpot, Salesforce, Zendesk, Atlassian, Notion,
  Airtable, Asana, ClickUp, Figma, Okta, Auth0, Clerk, WorkOS, Algolia, Contentful, Mapbox, Postman, Docker Hub,
  Bitbucket, SonarCloud, Snyk and Dropbox;
- mobile apps: google-services.json, Info.plist, keystore and gradle properties, fastlane and App Store Connect
  keys, EAS, react-native-config, Flutter dart-defines and FCM;
- HTTP traces and clients: HAR files, devtools "copy as fetch/PowerShell", HTTPie sessions, wget, Postman
  environments and collections, Insomnia, Bruno, Hurl, k6, raw proxy requests and mitmproxy dumps;
- databases and directories: .pgpass, .my.cnf, SQL statements and dumps, Snowflake, mongosh, redis-cli, sqlcmd,
  JDBC (SQL Server, Oracle, Databricks, Redshift, ClickHouse, Trino), odbc.ini, PgBouncer, pgBackRest,
  ldapsearch, sssd, nslcd and ldap3;
- Windows: registry exports, unattend.xml, cmdkey, net use, PowerShell SecureString misuse, schtasks, Group
  Policy Preferences, IIS, web.config, sc.exe and Security event logs; crash reports and logs (Crashpad,
  logcat, macOS .ips, Node and Go); git credential helpers and URLs with userinfo (AMQP, MQTT, FTP, SMB, RTMP
  stream keys, WebDAV);
- people writing passwords in English and fifty other languages, variants and scripts (WhatsApp, Viber,
  LINE, Zalo, KakaoTalk, WeChat, Telegram, Discord, Slack, Teams, SMS, e-mail, tickets, a voice transcript
  spelled in the NATO alphabet, an OCR'd sticky note), some with non-ASCII passwords.

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more,
drawn from the seeded `random.Random` and shaped as the vendor's published format where there is one. Every
credential a document holds is planted. Usernames, client/app/key ids, account and project ids, publishable
keys, public keys, hashes, request/trace/span ids, ciphertexts and masked echoes are not planted and, where
present, are not credentials. A base64 `user:password` pair (or any base64-wrapped secret) is planted as its
base64 text; a PEM or OpenSSH private key as its first body line.

Clean documents hold no credential but many look-alikes (UUIDs, SHAs, digests, trace and span ids, versions,
checksums, base64 of non-secrets, `max_tokens`, `keyboard`, `passed`, `tokenizer`, `password_min_length`,
env-var and file references, marked placeholders, masked values, password hashes, ciphertexts and public keys).

SEED = 2026120214. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones: 389 credential shapes planting 425 values, and 55 clean documents.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import textwrap
import urllib.parse
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 2026120214

Made = tuple[str, tuple[str, ...]]
_CRED: list[tuple[str, Callable[[random.Random], Made]]] = []
_CLEAN: list[tuple[str, Callable[[random.Random], str]]] = []


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
    """Dedent a document body and pair it with its planted values."""
    body = textwrap.dedent(text).lstrip("\n")
    if not body.endswith("\n"):
        body += "\n"
    return body, tuple(values)


def txt(text: str) -> str:
    return out(text)[0]


# ---- value makers -----------------------------------------------------------------------------------------

_AN = string.ascii_letters + string.digits
_LOW = string.ascii_lowercase + string.digits
_UP = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_URLSAFE = _AN + "-_"
_WORDS = tuple(
    """
    acorn bayou cobalt dormouse egret falafel glacier harbor inkwell juniper kayak lantern marigold nutmeg
    orchard pinecone quartz raven saffron thistle umber velvet walrus yarrow zephyr almond birch canyon
    dulcimer ember fiddle granite heron ivy jigsaw kestrel lagoon meadow nimbus otter pumice quince ripple
    sorrel tundra urchin violet willow basalt comet delta fable garnet hollow island jubilee koala lemur
    mistral noodle opal parsnip riddle spruce tango vellum wombat
    """.split()
)


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng: random.Random, n: int) -> str:
    """Letters and digits, every kind present."""
    while True:
        v = chars(rng, _AN, n)
        if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
            return v


def lower(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _LOW, n)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def upper(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _UP, n)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def hexa(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _HEX, n)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def urlsafe(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _URLSAFE, n)
        if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
            return v


def b32(rng: random.Random, n: int) -> str:
    return chars(rng, _B32, n)


def b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64url(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + chars(rng, string.digits, n - 1)


def symbolic(rng: random.Random, n: int, marks: str = "!#$%&*+-=?@^_~") -> str:
    """What a password manager generates: letters, digits and marks."""
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if (any(c in marks for c in v) and any(c.isdigit() for c in v)
                and any(c.isupper() for c in v) and any(c.islower() for c in v)):
            return v


def safe(rng: random.Random, n: int) -> str:
    """A generated password whose marks survive URLs, XML, JSON, YAML and shell quoting unescaped."""
    return symbolic(rng, n, "-_.~")


def person(rng: random.Random) -> str:
    """What a person picks: a word or two, a number, maybe a mark."""
    w = rng.choice(_WORDS).capitalize()
    if rng.random() < 0.5 or len(w) < 6:
        w += rng.choice(_WORDS).capitalize()
    return w + str(rng.randint(10, 9999)) + rng.choice(["", "!", "?", "#", "$", "*", ".", "&", "%"])


def phrase(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    return sep.join(rng.sample(_WORDS, n))


def seg(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict, alg: str = "HS256") -> str:
    size = 32 if alg.startswith("HS") else 64 if alg in ("EdDSA", "ES256") else 256
    return f"{seg({'alg': alg, 'typ': 'JWT'})}.{seg(claims)}.{b64url(rng, size)}"


def pem_first(rng: random.Random, head: str) -> str:
    return (head + b64(rng, 64))[:64]


def pem(rng: random.Random, first: str, kind: str = "PRIVATE KEY", lines: int = 6) -> str:
    body = [first] + [b64(rng, 48) for _ in range(lines - 1)] + [b64(rng, 16)]
    return "\n".join([f"-----BEGIN {kind}-----", *body, f"-----END {kind}-----"])


RSA_PKCS8 = "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ"
RSA_PKCS1 = "MIIEowIBAAKCAQEA"
EC_P256 = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"
OPENSSH = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"


def basic(user: str, pw: str) -> str:
    return base64.b64encode(f"{user}:{pw}".encode()).decode()


def quote(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def when(rng: random.Random) -> str:
    return (f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z")


def day(rng: random.Random) -> str:
    return f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def hms(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(16)).hexdigest()


def sha256(rng: random.Random) -> str:
    return hashlib.sha256(rng.randbytes(16)).hexdigest()


def trace_id(rng: random.Random) -> str:
    return rng.randbytes(16).hex()


def span_id(rng: random.Random) -> str:
    return rng.randbytes(8).hex()


def epoch(rng: random.Random) -> int:
    return rng.randint(1767225600, 1798761599)


def nano(rng: random.Random) -> str:
    return str(epoch(rng) * 10**9 + rng.randint(0, 10**9 - 1))


def user(rng: random.Random) -> str:
    first = rng.choice(["ana", "bo", "chen", "dara", "eli", "farah", "goran", "hana", "ivo", "jun", "kemal",
                        "lea", "mio", "nadia", "omar", "priya", "quinn", "rafa", "sven", "tomas", "uma"])
    return first + rng.choice(["", ".", "_"]) + rng.choice(["k", "ops", "dev", "admin", str(rng.randint(1, 99))])


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False)


# ---- vendor formats (published prefixes and lengths) ---------------------------------------------------------

def openai_key(rng, kind="proj"):
    return f"sk-{kind}-" + urlsafe(rng, 74) + "T3BlbkFJ" + urlsafe(rng, 74)


def anthropic_key(rng, kind="api03"):
    return f"sk-ant-{kind}-" + urlsafe(rng, 93) + "AA"


def gh_token(rng, prefix="ghp"):
    return f"{prefix}_" + mixed(rng, 36)


def gh_fine(rng):
    return "github_pat_11" + upper(rng, 20) + "_" + mixed(rng, 59)


def aws_secret(rng):
    while True:
        v = chars(rng, _AN + "/+", 40)
        if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
            return v


def aws_id(rng, prefix="AKIA"):
    return prefix + chars(rng, _B32, 16)


def google_key(rng):
    return "AIza" + urlsafe(rng, 35)


def hf_token(rng):
    return "hf_" + chars(rng, string.ascii_letters, 34)


def slack_token(rng, prefix="xoxb"):
    return f"{prefix}-{digits(rng, 12)}-{digits(rng, 13)}-{mixed(rng, 24)}"


def stripe_key(rng, prefix="sk_live"):
    return f"{prefix}_51" + mixed(rng, 14) + mixed(rng, 83)


def azure_secret(rng):
    return mixed(rng, 3) + "8Q~" + urlsafe(rng, 34).replace("-", "~")


# ---- credential documents -------------------------------------------------------------------------------------

# -- agent frameworks, coding agents and MCP configs --

@cred("langgraph-json-env-dict-langsmith-key")
def _a_langgraph_json(rng):
    key = "lsv2_pt_" + hexa(rng, 32) + "_" + hexa(rng, 10)
    return out(jd({"dependencies": ["."], "graphs": {"agent": "./src/agent/graph.py:graph"},
                   "env": {"LANGSMITH_API_KEY": key, "LANGSMITH_PROJECT": "support-bot-staging",
                           "LANGSMITH_TRACING": "true"}, "python_version": "3.12"}), key)


@cred("langgraph-postgres-saver-from-conn-string-literal")
def _a_langgraph_pg(rng):
    pw = safe(rng, 20)
    return out(f'''
        from langgraph.checkpoint.postgres import PostgresSaver

        DB_URI = "postgresql://langgraph:{pw}@pg-checkpoints.internal:5432/graphs?sslmode=require"

        with PostgresSaver.from_conn_string(DB_URI) as checkpointer:
            checkpointer.setup()
            graph = builder.compile(checkpointer=checkpointer)
        ''', pw)


@cred("langsmith-run-export-inputs-with-openai-key")
def _a_langsmith_run(rng):
    key = openai_key(rng)
    return out(jd({"id": uid(rng), "name": "ChatOpenAI", "run_type": "llm", "trace_id": uid(rng),
                   "start_time": when(rng), "inputs": {"messages": [[{"type": "system", "content": "You are a helper."}]],
                   "invocation_params": {"model": "gpt-4.1-mini", "temperature": 0.2, "openai_api_key": key}},
                   "extra": {"metadata": {"ls_provider": "openai", "ls_model_name": "gpt-4.1-mini",
                                          "revision_id": sha(rng)[:7]}}, "outputs": None, "error": None}), key)


@cred("crewai-crew-py-serper-tool-api-key-kwarg")
def _a_crewai_serper(rng):
    key = hexa(rng, 40)
    return out(f'''
        from crewai import Agent, Crew, Task
        from crewai_tools import SerperDevTool, ScrapeWebsiteTool

        search = SerperDevTool(api_key="{key}", n_results=8)

        researcher = Agent(
            role="Market researcher",
            goal="Find 2026 pricing for competing EV chargers",
            tools=[search, ScrapeWebsiteTool()],
            verbose=True,
        )
        ''', key)


@cred("crewai-verbose-log-tool-input-mysql-dsn")
def _a_crewai_log(rng):
    pw = safe(rng, 16)
    return out(f'''
        # Agent: Data Analyst
        ## Thought: I need the churn table to answer this.
        ## Using tool: NL2SQLTool
        ## Tool Input:
        "{{\\"sql_query\\": \\"SELECT plan, count(*) FROM churn GROUP BY plan\\", \\"db_uri\\": \\"mysql+pymysql://analyst:{pw}@10.4.0.12:3306/bi\\"}}"
        ## Tool Output:
        [('pro', 212), ('team', 87), ('free', 1934)]
        ''', pw)


@cred("autogen-oai-config-list-two-endpoints")
def _a_autogen_cfg(rng):
    k1, k2 = openai_key(rng), hexa(rng, 32)
    return out(jd([{"model": "gpt-4o", "api_key": k1},
                   {"model": "gpt-4o-mini", "api_key": k2, "base_url": "https://contoso-eus2.openai.azure.com/",
                    "api_type": "azure", "api_version": "2025-01-01-preview"}]), k1, k2)


@cred("autogen-studio-team-component-model-client-config")
def _a_autogen_studio(rng):
    key = "sk-or-v1-" + hexa(rng, 64)
    return out(jd({"provider": "autogen_agentchat.teams.RoundRobinGroupChat", "component_type": "team",
                   "version": 1, "config": {"participants": [{
                       "provider": "autogen_agentchat.agents.AssistantAgent", "component_type": "agent",
                       "config": {"name": "planner", "model_client": {
                           "provider": "autogen_ext.models.openai.OpenAIChatCompletionClient",
                           "component_type": "model", "config": {"model": "anthropic/claude-sonnet-4.5",
                                                                 "base_url": "https://openrouter.ai/api/v1",
                                                                 "api_key": key,
                                                                 "model_info": {"vision": True,
                                                                                "function_calling": True}}}}}],
                       "termination_condition": {"config": {"max_messages": 12}}}}), key)


@cred("openai-agents-sdk-set-default-key-and-tracing-key")
def _a_agents_sdk(rng):
    key, tkey = openai_key(rng), openai_key(rng, "svcacct")
    return out(f'''
        import asyncio
        from agents import Agent, Runner, set_default_openai_key, set_tracing_export_api_key

        set_default_openai_key("{key}")
        set_tracing_export_api_key("{tkey}")

        triage = Agent(name="Triage", instructions="Route refund questions to billing.")

        async def main():
            result = await Runner.run(triage, "Where is my refund for order 88213?")
            print(result.final_output)

        asyncio.run(main())
        ''', key, tkey)


@cred("openai-agents-sdk-debug-log-trace-ingest-bearer")
def _a_agents_log(rng):
    key = openai_key(rng)
    return out(f'''
        {when(rng)} DEBUG openai.agents: Exporting 14 items
        {when(rng)} DEBUG openai.agents: POST https://api.openai.com/v1/traces/ingest headers={{'Authorization': 'Bearer {key}', 'Content-Type': 'application/json', 'OpenAI-Beta': 'traces=v1'}}
        {when(rng)} DEBUG openai.agents: Exported 14 items
        ''', key)


@cred("claude-code-user-settings-json-env-anthropic-key")
def _a_claude_settings(rng):
    key = anthropic_key(rng)
    return out(jd({"$schema": "https://json.schemastore.org/claude-code-settings.json",
                   "model": "claude-sonnet-4-5", "env": {"ANTHROPIC_API_KEY": key, "DISABLE_TELEMETRY": "1",
                                                         "BASH_DEFAULT_TIMEOUT_MS": "120000"},
                   "permissions": {"allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"],
                                   "deny": ["Read(./.env)", "Read(./secrets/**)"]}}), key)


@cred("claude-code-project-mcp-json-github-server-pat")
def _a_mcp_github(rng):
    pat = gh_fine(rng)
    return out(jd({"mcpServers": {"github": {"type": "stdio", "command": "docker",
                                             "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN",
                                                      "ghcr.io/github/github-mcp-server"],
                                             "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": pat}},
                                  "filesystem": {"command": "npx",
                                                 "args": ["-y", "@modelcontextprotocol/server-filesystem", "./docs"]}}}),
               pat)


@cred("claude-desktop-config-postgres-mcp-args-url")
def _a_mcp_pg(rng):
    pw = safe(rng, 18)
    return out(jd({"mcpServers": {"postgres": {"command": "npx", "args": [
        "-y", "@modelcontextprotocol/server-postgres",
        f"postgresql://readonly_agent:{pw}@db.staging.acme.internal:5432/orders"]}}}), pw)


@cred("mcp-remote-args-header-bearer-linear-key")
def _a_mcp_remote(rng):
    key = "lin_api_" + mixed(rng, 40)
    return out(jd({"mcpServers": {"linear": {"command": "npx", "args": [
        "-y", "mcp-remote", "https://mcp.linear.app/mcp", "--header", f"Authorization: Bearer {key}"]}}}), key)


@cred("mcp-inspector-cli-env-flag-shell-history")
def _a_mcp_inspector(rng):
    key = "BSA" + mixed(rng, 28)
    return out(f'''
        : {epoch(rng)}:0;cd ~/src/mcp-brave && npm run build
        : {epoch(rng)}:0;npx @modelcontextprotocol/inspector -e BRAVE_API_KEY={key} node build/index.js
        : {epoch(rng)}:0;git status
        ''', key)


@cred("cursor-mcp-json-supabase-access-token-arg")
def _a_cursor_supabase(rng):
    tok = "sbp_" + hexa(rng, 40)
    return out(jd({"mcpServers": {"supabase": {"command": "npx", "args": [
        "-y", "@supabase/mcp-server-supabase@latest", "--read-only", "--project-ref=" + lower(rng, 20),
        "--access-token", tok]}}}), tok)


@cred("claude-code-oauth-token-hardcoded-in-workflow-with")
def _a_claude_action(rng):
    tok = "sk-ant-oat01-" + urlsafe(rng, 93) + "AA"
    return out(f'''
        name: Claude review
        on:
          pull_request:
            types: [opened, synchronize]
        jobs:
          review:
            runs-on: ubuntu-latest
            steps:
              - uses: actions/checkout@v4
              - uses: anthropics/claude-code-action@v1
                with:
                  claude_code_oauth_token: {tok}
                  prompt: "Review this PR for security issues."
        ''', tok)


@cred("semantic-kernel-appsettings-development-azure-openai")
def _a_sk_appsettings(rng):
    key = hexa(rng, 32)
    return out(jd({"Logging": {"LogLevel": {"Default": "Information"}},
                   "AzureOpenAI": {"Endpoint": "https://fabrikam-ai.openai.azure.com/",
                                   "ChatDeploymentName": "gpt-4o", "ApiKey": key},
                   "AllowedHosts": "*"}), key)


@cred("semantic-kernel-python-dotenv-global-llm-service")
def _a_sk_env(rng):
    key = openai_key(rng)
    return out(f'''
        GLOBAL_LLM_SERVICE="OpenAI"
        OPENAI_API_KEY="{key}"
        OPENAI_CHAT_MODEL_ID="gpt-4o-mini"
        OPENAI_ORG_ID="org-{mixed(rng, 24)}"
        ''', key)


@cred("llamaindex-notebook-cell-anthropic-llm-settings")
def _a_llamaindex_nb(rng):
    key = anthropic_key(rng)
    src = ["from llama_index.core import Settings\n", "from llama_index.llms.anthropic import Anthropic\n",
           "\n", f'Settings.llm = Anthropic(model="claude-haiku-4-5", api_key="{key}")\n',
           "Settings.chunk_size = 512"]
    return out(jd({"cells": [{"cell_type": "code", "execution_count": 3, "id": lower(rng, 8), "metadata": {},
                              "outputs": [], "source": src}],
                   "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
                   "nbformat": 4, "nbformat_minor": 5}, 1), key)


@cred("llamaparse-llx-key-constructor")
def _a_llamaparse(rng):
    key = "llx-" + mixed(rng, 48)
    return out(f'''
        from llama_cloud_services import LlamaParse

        parser = LlamaParse(
            api_key="{key}",
            result_type="markdown",
            num_workers=4,
            language="en",
        )
        docs = parser.load_data("./contracts/msa_2026.pdf")
        ''', key)


@cred("dspy-lm-constructor-api-key-and-base")
def _a_dspy(rng):
    key = "gsk_" + mixed(rng, 52)
    return out(f'''
        import dspy

        lm = dspy.LM("groq/llama-3.3-70b-versatile", api_key="{key}", max_tokens=2000)
        dspy.configure(lm=lm)

        qa = dspy.ChainOfThought("question -> answer")
        print(qa(question="What is the capital of Bhutan?").answer)
        ''', key)


@cred("haystack-secret-from-token-hf-generator")
def _a_haystack(rng):
    tok = hf_token(rng)
    return out(f'''
        from haystack.components.generators import HuggingFaceAPIGenerator
        from haystack.utils import Secret

        generator = HuggingFaceAPIGenerator(
            api_type="serverless_inference_api",
            api_params={{"model": "mistralai/Mistral-7B-Instruct-v0.3"}},
            token=Secret.from_token("{tok}"),
        )
        ''', tok)


@cred("smolagents-inference-client-model-token")
def _a_smolagents(rng):
    tok = hf_token(rng)
    return out(f'''
        from smolagents import CodeAgent, InferenceClientModel, WebSearchTool

        model = InferenceClientModel(model_id="Qwen/Qwen3-Coder-30B-A3B-Instruct", token="{tok}")
        agent = CodeAgent(tools=[WebSearchTool()], model=model, max_steps=6)
        agent.run("How many seconds would it take a leopard at full speed to run through Pont des Arts?")
        ''', tok)


@cred("logfire-configure-write-token-fastapi-main")
def _a_logfire(rng):
    tok = "pylf_v1_eu_" + mixed(rng, 48)
    return out(f'''
        import logfire
        from fastapi import FastAPI

        app = FastAPI()
        logfire.configure(token="{tok}", service_name="checkout-api", environment="prod")
        logfire.instrument_fastapi(app)
        logfire.instrument_pydantic_ai()
        ''', tok)


@cred("pydantic-ai-openai-provider-openrouter-key")
def _a_pydantic_ai(rng):
    key = "sk-or-v1-" + hexa(rng, 64)
    return out(f'''
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider

        model = OpenAIChatModel(
            "google/gemini-2.5-flash",
            provider=OpenRouterProvider(api_key="{key}"),
        )
        agent = Agent(model, output_type=Invoice, instructions="Extract the invoice fields.")
        ''', key)


@cred("letta-server-compose-password-and-openai")
def _a_letta(rng):
    pw, key = safe(rng, 24), openai_key(rng)
    return out(f'''
        services:
          letta_server:
            image: letta/letta:0.11.7
            ports:
              - "8283:8283"
            environment:
              - SECURE=true
              - LETTA_SERVER_PASSWORD={pw}
              - OPENAI_API_KEY={key}
              - LETTA_PG_URI=postgresql://letta:${{LETTA_PG_PASSWORD}}@letta_db:5432/letta
        ''', pw, key)


@cred("mem0-memory-from-config-qdrant-cloud-key")
def _a_mem0(rng):
    key = urlsafe(rng, 40).replace("-", "_")
    return out(f'''
        from mem0 import Memory

        config = {{
            "vector_store": {{
                "provider": "qdrant",
                "config": {{
                    "collection_name": "agent_memories",
                    "url": "https://{uid(rng)}.eu-central-1-0.aws.cloud.qdrant.io:6333",
                    "api_key": "{key}",
                    "embedding_model_dims": 1536,
                }},
            }},
        }}
        m = Memory.from_config(config)
        ''', key)


@cred("browser-use-agent-sensitive-data-dict-password")
def _a_browser_use(rng):
    pw = person(rng)
    return out(f'''
        from browser_use import Agent, ChatOpenAI

        sensitive_data = {{
            "https://*.supplier-portal.example": {{"x_user": "purchasing@acme.example", "x_password": "{pw}"}},
        }}
        agent = Agent(
            task="Log in with x_user and x_password and download the March invoice PDF",
            llm=ChatOpenAI(model="gpt-4.1"),
            sensitive_data=sensitive_data,
            use_vision=False,
        )
        ''', pw)


@cred("tavily-client-tvly-dev-key-script")
def _a_tavily(rng):
    key = "tvly-dev-" + mixed(rng, 32)
    return out(f'''
        from tavily import TavilyClient

        tavily = TavilyClient(api_key="{key}")
        resp = tavily.search("EU AI Act general-purpose model obligations August 2025", max_results=5)
        for r in resp["results"]:
            print(r["url"], r["score"])
        ''', key)


@cred("firecrawl-app-fc-key-node")
def _a_firecrawl(rng):
    key = "fc-" + hexa(rng, 32)
    return out(f'''
        import Firecrawl from '@mendable/firecrawl-js';

        const app = new Firecrawl({{ apiKey: '{key}' }});
        const doc = await app.scrape('https://docs.stripe.com/api', {{ formats: ['markdown'] }});
        console.log(doc.markdown?.slice(0, 400));
        ''', key)


@cred("e2b-sandbox-terminal-export-and-run")
def _a_e2b(rng):
    key = "e2b_" + hexa(rng, 40)
    return out(f'''
        $ export E2B_API_KEY={key}
        $ python run_sandbox.py
        Sandbox started: i{lower(rng, 19)}
        stdout: Python 3.12.7
        Sandbox killed.
        ''', key)


@cred("browserbase-session-create-curl-header")
def _a_browserbase(rng):
    key = "bb_live_" + urlsafe(rng, 27)
    return out(f'''
        curl --request POST \\
          --url https://api.browserbase.com/v1/sessions \\
          --header 'Content-Type: application/json' \\
          --header 'X-BB-API-Key: {key}' \\
          --data '{{"projectId": "{uid(rng)}", "browserSettings": {{"blockAds": true}}}}'
        ''', key)


@cred("langchain-sql-database-from-uri-mssql-notebook")
def _a_lc_sql(rng):
    pw = safe(rng, 14)
    return out(f'''
        In [4]: from langchain_community.utilities import SQLDatabase
        In [5]: db = SQLDatabase.from_uri("mssql+pyodbc://sa:{pw}@sqlprod02:1433/Northwind?driver=ODBC+Driver+18+for+SQL+Server&TrustServerCertificate=yes")
        In [6]: db.get_usable_table_names()[:5]
        Out[6]: ['Categories', 'CustomerDemographics', 'Customers', 'EmployeeTerritories', 'Employees']
        ''', pw)


@cred("otlp-json-genai-input-messages-pasted-key")
def _a_otlp_msgs(rng):
    key = "xai-" + mixed(rng, 80)
    msgs = json.dumps([{"role": "user", "parts": [{"type": "text", "content":
                        f"my deploy fails with 401, here's the key I'm using: {key} - is it wrong?"}]}])
    return out(jd({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "helpdesk-agent"}}]},
        "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"},
                        "spans": [{"traceId": trace_id(rng), "spanId": span_id(rng), "name": "chat grok-4",
                                   "kind": 3, "startTimeUnixNano": nano(rng), "endTimeUnixNano": nano(rng),
                                   "attributes": [
                                       {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                       {"key": "gen_ai.provider.name", "value": {"stringValue": "x_ai"}},
                                       {"key": "gen_ai.input.messages", "value": {"stringValue": msgs}},
                                       {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "412"}}]}]}]}]}),
               key)


@cred("otel-exporter-otlp-headers-honeycomb-k8s-deployment")
def _a_otel_hny(rng):
    key = "hcaik_01" + lower(rng, 56)
    return out(f'''
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: recommender
        spec:
          template:
            spec:
              containers:
                - name: app
                  image: registry.acme.io/recommender:2.14.0
                  env:
                    - name: OTEL_EXPORTER_OTLP_ENDPOINT
                      value: https://api.honeycomb.io
                    - name: OTEL_EXPORTER_OTLP_HEADERS
                      value: "x-honeycomb-team={key},x-honeycomb-dataset=recommender"
        ''', key)


@cred("otelcol-bearertokenauth-extension-grafana-cloud")
def _a_otelcol(rng):
    tok = "glc_" + b64(rng, 96).rstrip("=")
    return out(f'''
        extensions:
          bearertokenauth/grafana:
            token: "{tok}"
        exporters:
          otlphttp/grafana:
            endpoint: https://otlp-gateway-prod-eu-west-2.grafana.net/otlp
            auth:
              authenticator: bearertokenauth/grafana
        service:
          extensions: [bearertokenauth/grafana]
        ''', tok)


@cred("openlit-init-otlp-headers-basic-base64")
def _a_openlit(rng):
    enc = basic(digits(rng, 7), "glc_" + b64(rng, 60).rstrip("="))
    return out(f'''
        import openlit

        openlit.init(
            otlp_endpoint="https://otlp-gateway-prod-us-east-0.grafana.net/otlp",
            otlp_headers="Authorization=Basic%20{enc}",
            application_name="rag-api",
        )
        ''', enc)


@cred("open-webui-docker-run-secret-and-openai-keys")
def _a_openwebui(rng):
    sec, key = mixed(rng, 32), openai_key(rng)
    return out(f'''
        docker run -d -p 3000:8080 \\
          -e WEBUI_SECRET_KEY={sec} \\
          -e OPENAI_API_KEYS="{key}" \\
          -v open-webui:/app/backend/data \\
          --name open-webui ghcr.io/open-webui/open-webui:main
        ''', sec, key)


@cred("litellm-proxy-config-master-key-and-azure-key")
def _a_litellm_cfg(rng):
    mk, ak = "sk-" + mixed(rng, 22), hexa(rng, 32)
    return out(f'''
        model_list:
          - model_name: gpt-4o
            litellm_params:
              model: azure/gpt-4o-eu
              api_base: https://acme-swc.openai.azure.com/
              api_key: "{ak}"
              api_version: "2025-01-01-preview"
        general_settings:
          master_key: {mk}
          database_url: os.environ/DATABASE_URL
        ''', mk, ak)


@cred("litellm-key-generate-response-virtual-key")
def _a_litellm_gen(rng):
    key = "sk-" + urlsafe(rng, 22)
    return out(f'''
        $ curl -s -X POST http://localhost:4000/key/generate -H "Authorization: Bearer $LITELLM_MASTER_KEY" \\
            -H 'Content-Type: application/json' -d '{{"models": ["gpt-4o"], "max_budget": 25, "user_id": "intern-7"}}' | jq .
        {{
          "key_alias": null,
          "key": "{key}",
          "expires": null,
          "models": ["gpt-4o"],
          "max_budget": 25.0,
          "user_id": "intern-7",
          "token_id": "{sha256(rng)}"
        }}
        ''', key)


@cred("vllm-serve-api-key-flag-systemd-execstart")
def _a_vllm(rng):
    tok = "token-" + lower(rng, 24)
    return out(f'''
        [Unit]
        Description=vLLM OpenAI-compatible server
        After=network-online.target

        [Service]
        User=vllm
        ExecStart=/opt/vllm/.venv/bin/vllm serve Qwen/Qwen3-32B --port 8000 --tensor-parallel-size 2 --api-key {tok}
        Restart=on-failure

        [Install]
        WantedBy=multi-user.target
        ''', tok)


@cred("tgi-docker-run-hf-token-gated-model")
def _a_tgi(rng):
    tok = hf_token(rng)
    return out(f'''
        model=meta-llama/Llama-3.1-8B-Instruct
        docker run --gpus all --shm-size 1g -p 8080:80 -v $PWD/data:/data \\
            -e HF_TOKEN={tok} \\
            ghcr.io/huggingface/text-generation-inference:3.3.4 --model-id $model
        ''', tok)


@cred("gemini-cli-dot-gemini-env-file")
def _a_gemini_cli(rng):
    key = google_key(rng)
    return out(f'''
        # ~/.gemini/.env
        GEMINI_API_KEY={key}
        GEMINI_MODEL=gemini-2.5-pro
        ''', key)


@cred("codex-cli-auth-json-key-and-refresh-token")
def _a_codex_auth(rng):
    key, rt = openai_key(rng), "rt_" + urlsafe(rng, 43) + "." + urlsafe(rng, 43)
    return out(jd({"OPENAI_API_KEY": key, "tokens": {"refresh_token": rt, "account_id": uid(rng)},
                   "last_refresh": when(rng)}), key, rt)


@cred("aider-conf-yml-api-key-anthropic-list-entry")
def _a_aider(rng):
    key = anthropic_key(rng)
    return out(f'''
        ## .aider.conf.yml
        model: sonnet
        api-key:
          - anthropic={key}
        auto-commits: false
        dark-mode: true
        ''', key)


@cred("continue-config-yaml-mistral-codestral-apikey")
def _a_continue(rng):
    key = mixed(rng, 32)
    return out(f'''
        name: Local Assistant
        version: 1.0.0
        schema: v1
        models:
          - name: Codestral
            provider: mistral
            model: codestral-latest
            apiKey: {key}
            roles:
              - autocomplete
        ''', key)


@cred("roo-code-settings-export-openrouter-key")
def _a_roo(rng):
    key = "sk-or-v1-" + hexa(rng, 64)
    return out(jd({"providerProfiles": {"currentApiConfigName": "default", "apiConfigs": {"default": {
        "apiProvider": "openrouter", "openRouterApiKey": key, "openRouterModelId": "anthropic/claude-sonnet-4",
        "id": lower(rng, 10)}}}, "globalSettings": {"autoApprovalEnabled": False, "language": "en"}}), key)


@cred("goose-secrets-yaml-keyring-disabled")
def _a_goose(rng):
    key = openai_key(rng)
    return out(f'''
        # ~/.config/goose/secrets.yaml  (GOOSE_DISABLE_KEYRING=1)
        OPENAI_API_KEY: {key}
        ''', key)


@cred("n8n-workflow-export-http-node-header-literal")
def _a_n8n(rng):
    key = "xai-" + mixed(rng, 80)
    return out(jd({"name": "Summarize tickets", "nodes": [{
        "parameters": {"method": "POST", "url": "https://api.x.ai/v1/chat/completions", "sendHeaders": True,
                       "headerParameters": {"parameters": [{"name": "Authorization", "value": f"Bearer {key}"}]}},
        "id": uid(rng), "name": "HTTP Request", "type": "n8n-nodes-base.httpRequest", "typeVersion": 4.2,
        "position": [520, 300]}], "connections": {}, "active": False, "versionId": uid(rng)}), key)


@cred("dify-docker-env-secret-key-and-db-password")
def _a_dify(rng):
    sk, pw = "sk-" + b64(rng, 36), safe(rng, 20)
    return out(f'''
        # ------------------------------
        # Server Configuration
        # ------------------------------
        CONSOLE_API_URL=https://dify.acme.internal
        SECRET_KEY={sk}
        INIT_PASSWORD=
        DB_USERNAME=postgres
        DB_PASSWORD={pw}
        DB_HOST=db
        DB_PORT=5432
        ''', sk, pw)


@cred("langflow-env-superuser-password")
def _a_langflow(rng):
    pw = symbolic(rng, 16)
    return out(f'''
        LANGFLOW_AUTO_LOGIN=False
        LANGFLOW_SUPERUSER=admin
        LANGFLOW_SUPERUSER_PASSWORD={pw}
        LANGFLOW_NEW_USER_IS_ACTIVE=False
        ''', pw)


@cred("chainlit-env-auth-secret-and-literal-ai-key")
def _a_chainlit(rng):
    sec, key = urlsafe(rng, 64), "lsk_" + mixed(rng, 40)
    return out(f'''
        CHAINLIT_AUTH_SECRET="{sec}"
        LITERAL_API_KEY="{key}"
        OAUTH_GITHUB_CLIENT_ID="Iv23li{mixed(rng, 14)}"
        ''', sec, key)


@cred("streamlit-secrets-toml-snowflake-connection")
def _a_streamlit(rng):
    pw = symbolic(rng, 18, "!#%*+-=?@_")
    return out(f'''
        # .streamlit/secrets.toml
        [connections.snowflake]
        account = "xy12345.eu-central-1"
        user = "STREAMLIT_SVC"
        password = "{pw}"
        role = "ANALYST"
        warehouse = "COMPUTE_WH"
        database = "SALES"
        ''', pw)


@cred("gradio-launch-auth-tuple-share")
def _a_gradio(rng):
    pw = person(rng)
    return out(f'''
        if __name__ == "__main__":
            demo.queue(max_size=20).launch(
                share=True,
                auth=("reviewer", "{pw}"),
                server_name="0.0.0.0",
            )
        ''', pw)


@cred("openai-realtime-client-secret-response-ephemeral")
def _a_realtime(rng):
    ek = "ek_" + hexa(rng, 32)
    return out(jd({"value": ek, "expires_at": epoch(rng), "session": {"type": "realtime", "object":
                                                                      "realtime.session", "id": "sess_" + mixed(rng, 22),
                                                                      "model": "gpt-realtime",
                                                                      "audio": {"output": {"voice": "marin"}}}}), ek)


# -- vector databases --

@cred("pinecone-grpc-client-notebook-upsert")
def _v_pinecone(rng):
    key = "pcsk_" + mixed(rng, 6) + "_" + mixed(rng, 63)
    return out(f'''
        from pinecone.grpc import PineconeGRPC as Pinecone

        pc = Pinecone(api_key="{key}")
        index = pc.Index(host="https://products-{lower(rng, 7)}.svc.aped-4627-b74a.pinecone.io")
        index.upsert(vectors=batch, namespace="catalog-2026")
        ''', key)


@cred("weaviate-compose-apikey-allowed-keys-two")
def _v_weaviate(rng):
    k1, k2 = mixed(rng, 32), mixed(rng, 32)
    return out(f'''
        services:
          weaviate:
            image: cr.weaviate.io/semitechnologies/weaviate:1.32.2
            environment:
              AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED: 'false'
              AUTHENTICATION_APIKEY_ENABLED: 'true'
              AUTHENTICATION_APIKEY_ALLOWED_KEYS: '{k1},{k2}'
              AUTHENTICATION_APIKEY_USERS: 'ingest-svc,readonly-dashboards'
              PERSISTENCE_DATA_PATH: '/var/lib/weaviate'
        ''', k1, k2)


@cred("qdrant-config-yaml-service-api-key")
def _v_qdrant_cfg(rng):
    key = urlsafe(rng, 48)
    return out(f'''
        # /qdrant/config/production.yaml
        service:
          host: 0.0.0.0
          http_port: 6333
          grpc_port: 6334
          enable_tls: true
          api_key: {key}
        storage:
          storage_path: /qdrant/storage
        ''', key)


@cred("pymilvus-connect-token-user-colon-password")
def _v_milvus(rng):
    pw = safe(rng, 16)
    return out(f'''
        from pymilvus import MilvusClient

        client = MilvusClient(uri="http://milvus-standalone.vector.svc:19530", token="root:{pw}")
        client.create_collection("faq", dimension=1024, metric_type="COSINE")
        ''', pw)


@cred("zilliz-cloud-serverless-api-key-env")
def _v_zilliz(rng):
    key = hexa(rng, 104)
    return out(f'''
        ZILLIZ_CLOUD_URI=https://in03-{hexa(rng, 15)}.serverless.gcp-us-west1.cloud.zilliz.com
        ZILLIZ_CLOUD_API_KEY={key}
        ''', key)


@cred("chroma-cloud-client-ck-key")
def _v_chroma_cloud(rng):
    key = "ck-" + mixed(rng, 44)
    return out(f'''
        import chromadb

        client = chromadb.CloudClient(
            api_key="{key}",
            tenant="{uid(rng)}",
            database="support-kb",
        )
        ''', key)


@cred("chroma-server-authn-credentials-env-token")
def _v_chroma_srv(rng):
    tok = "chr-" + urlsafe(rng, 40)
    return out(f'''
        CHROMA_SERVER_AUTHN_PROVIDER=chromadb.auth.token_authn.TokenAuthenticationServerProvider
        CHROMA_SERVER_AUTHN_CREDENTIALS={tok}
        CHROMA_AUTH_TOKEN_TRANSPORT_HEADER=X-Chroma-Token
        ''', tok)


@cred("lancedb-cloud-connect-api-key")
def _v_lancedb(rng):
    key = "sk_" + upper(rng, 52)
    return out(f'''
        import lancedb

        db = lancedb.connect(uri="db://docs-search-{lower(rng, 6)}", api_key="{key}", region="us-east-1")
        tbl = db.open_table("chunks")
        ''', key)


@cred("turbopuffer-namespace-write-curl")
def _v_tpuf(rng):
    key = "tpuf_" + mixed(rng, 32)
    return out(f'''
        curl -X POST https://gcp-us-central1.turbopuffer.com/v2/namespaces/support-docs \\
          -H "Authorization: Bearer {key}" \\
          -H "Content-Type: application/json" \\
          -d '{{"upsert_rows": [{{"id": 1, "vector": [0.1, 0.2], "title": "Refund policy"}}], "distance_metric": "cosine_distance"}}'
        ''', key)


@cred("astra-db-application-token-data-api-client")
def _v_astra(rng):
    tok = "AstraCS:" + chars(rng, string.ascii_letters, 24) + ":" + hexa(rng, 64)
    return out(f'''
        from astrapy import DataAPIClient

        client = DataAPIClient()
        db = client.get_database(
            "https://{uid(rng)}-us-east-2.apps.astra.datastax.com",
            token="{tok}",
        )
        ''', tok)


@cred("upstash-vector-rest-token-env-local")
def _v_upstash(rng):
    tok = "AB" + b64url(rng, 60) + "="
    return out(f'''
        UPSTASH_VECTOR_REST_URL="https://sharp-{rng.choice(_WORDS)}-{rng.randint(10000, 99999)}-us1-vector.upstash.io"
        UPSTASH_VECTOR_REST_TOKEN="{tok}"
        ''', tok)


@cred("meilisearch-master-key-docker-run")
def _v_meili(rng):
    key = urlsafe(rng, 32)
    return out(f'''
        docker run -it --rm -p 7700:7700 \\
          -e MEILI_ENV=production \\
          -e MEILI_MASTER_KEY='{key}' \\
          -v $(pwd)/meili_data:/meili_data getmeili/meilisearch:v1.16
        ''', key)


@cred("typesense-server-ini-api-key")
def _v_typesense(rng):
    key = mixed(rng, 40)
    return out(f'''
        ; /etc/typesense/typesense-server.ini
        [server]
        api-address = 0.0.0.0
        api-port = 8108
        data-dir = /var/lib/typesense
        api-key = {key}
        log-dir = /var/log/typesense
        ''', key)


@cred("elasticsearch-vector-python-client-api-key-encoded")
def _v_es_py(rng):
    enc = base64.b64encode(f"{mixed(rng, 20)}:{urlsafe(rng, 22)}".encode()).decode()
    return out(f'''
        from elasticsearch import Elasticsearch

        es = Elasticsearch(
            "https://search-prod.es.europe-west3.gcp.cloud.es.io:443",
            api_key="{enc}",
        )
        es.search(index="docs", knn={{"field": "embedding", "query_vector": qv, "k": 10, "num_candidates": 100}})
        ''', enc)


# -- cloud CLIs and their config files --

@cred("aws-credentials-file-sso-profile-plus-static-session")
def _k_aws_creds(rng):
    sk, st = aws_secret(rng), "IQoJb3JpZ2luX2VjE" + b64(rng, 300)
    return out(f'''
        [default]
        region = eu-west-1

        [incident-2026-0412]
        aws_access_key_id = {aws_id(rng, "ASIA")}
        aws_secret_access_key = {sk}
        aws_session_token = {st}
        ''', sk, st)


@cred("aws-sts-assume-role-json-output-credentials")
def _k_sts(rng):
    sk, st = aws_secret(rng), "FwoGZXIvYXdzE" + b64(rng, 260)
    return out(jd({"Credentials": {"AccessKeyId": aws_id(rng, "ASIA"), "SecretAccessKey": sk, "SessionToken": st,
                                   "Expiration": when(rng)},
                   "AssumedRoleUser": {"AssumedRoleId": "AROA" + b32(rng, 17) + ":ci-deploy",
                                       "Arn": f"arn:aws:sts::{digits(rng, 12)}:assumed-role/Deployer/ci-deploy"}},
                  4), sk, st)


@cred("aws-iam-create-access-key-text-output")
def _k_iam_key(rng):
    sk = aws_secret(rng)
    return out(f'''
        $ aws iam create-access-key --user-name svc-backup --output text
        ACCESSKEY\t{aws_id(rng)}\t{when(rng)}\t{sk}\tActive\tsvc-backup
        ''', sk)


@cred("aws-secretsmanager-get-secret-value-rds-json")
def _k_sm(rng):
    pw = symbolic(rng, 28, "!#$%&*+-=?^_~")
    inner = json.dumps({"username": "app_rw", "password": pw, "engine": "postgres",
                        "host": "orders.cluster-c9xk2.eu-west-1.rds.amazonaws.com", "port": 5432})
    return out(jd({"ARN": f"arn:aws:secretsmanager:eu-west-1:{digits(rng, 12)}:secret:prod/orders/rds-AbC1d2",
                   "Name": "prod/orders/rds", "VersionId": uid(rng), "SecretString": inner,
                   "VersionStages": ["AWSCURRENT"], "CreatedDate": "2026-02-11T09:14:22.113000+00:00"}, 4), pw)


@cred("aws-ssm-get-parameter-with-decryption-table")
def _k_ssm(rng):
    v = mixed(rng, 32)
    return out(f'''
        $ aws ssm get-parameter --name /payments/prod/webhook-signing-secret --with-decryption --output table
        -------------------------------------------------------------------------------------------
        |                                      GetParameter                                       |
        +-----------------------------------------------------------------------------------------+
        ||                                       Parameter                                       ||
        |+------------------+--------------------------------------------------------------------+|
        ||  DataType        |  text                                                              ||
        ||  Name            |  /payments/prod/webhook-signing-secret                             ||
        ||  Type            |  SecureString                                                      ||
        ||  Value           |  {v}                                  ||
        ||  Version         |  7                                                                 ||
        |+------------------+--------------------------------------------------------------------+|
        ''', v)


@cred("aws-cognito-initiate-auth-cli-password-param")
def _k_cognito(rng):
    pw = person(rng)
    return out(f'''
        aws cognito-idp initiate-auth --region eu-central-1 \\
          --auth-flow USER_PASSWORD_AUTH \\
          --client-id {lower(rng, 26)} \\
          --auth-parameters USERNAME=qa-bot@acme.example,PASSWORD='{pw}'
        ''', pw)


@cred("docker-login-password-stdin-bypassed-ecr-token")
def _k_ecr(rng):
    tok = "eyJwYXlsb2FkIjoi" + b64(rng, 900).replace("\n", "")
    return out(f'''
        + docker login --username AWS --password {tok} {digits(rng, 12)}.dkr.ecr.us-east-1.amazonaws.com
        WARNING! Using --password via the CLI is insecure. Use --password-stdin.
        Login Succeeded
        ''', tok)


@cred("gcloud-adc-authorized-user-json-custom-client")
def _k_adc(rng):
    cs, rt = "GOCSPX-" + urlsafe(rng, 28), "1//0" + urlsafe(rng, 99)
    return out(jd({"account": "", "client_id": f"{digits(rng, 12)}-{lower(rng, 32)}.apps.googleusercontent.com",
                   "client_secret": cs, "quota_project_id": "acme-data-prod", "refresh_token": rt,
                   "type": "authorized_user", "universe_domain": "googleapis.com"}), cs, rt)


@cred("gcloud-auth-print-access-token-pasted-curl")
def _k_gcloud_at(rng):
    tok = "ya29.a0AQQ_BD" + urlsafe(rng, 200)
    return out(f'''
        $ gcloud auth print-access-token
        {tok}
        $ curl -H "Authorization: Bearer {tok}" https://bigquery.googleapis.com/bigquery/v2/projects/acme-data-prod/datasets
        ''', tok)


@cred("gcloud-sql-users-set-password-history")
def _k_gcloud_sql(rng):
    pw = safe(rng, 20)
    return out(f'''
         1021  gcloud config set project acme-billing-prod
         1022  gcloud sql users list --instance=billing-pg16
         1023  gcloud sql users set-password billing_app --instance=billing-pg16 --password={pw}
         1024  gcloud sql connect billing-pg16 --user=billing_app
        ''', pw)


@cred("gcloud-iam-sa-key-json-written-to-repo")
def _k_sa_key(rng):
    first = pem_first(rng, RSA_PKCS8)
    key = pem(rng, first).replace("\n", "\\n") + "\\n"
    text = ('{\n  "type": "service_account",\n  "project_id": "acme-ml-training",\n'
            f'  "private_key_id": "{hexa(rng, 40)}",\n  "private_key": "{key}",\n'
            '  "client_email": "trainer@acme-ml-training.iam.gserviceaccount.com",\n'
            f'  "client_id": "{digits(rng, 21)}",\n  "auth_uri": "https://accounts.google.com/o/oauth2/auth",\n'
            '  "token_uri": "https://oauth2.googleapis.com/token",\n  "universe_domain": "googleapis.com"\n}\n')
    return text, (first,)


@cred("az-ad-sp-create-for-rbac-json-password")
def _k_az_sp(rng):
    pw = azure_secret(rng)
    return out(jd({"appId": uid(rng), "displayName": "gh-actions-deployer", "password": pw, "tenant": uid(rng)}),
               pw)


@cred("az-login-service-principal-password-flag-history")
def _k_az_login(rng):
    pw = azure_secret(rng)
    return out(f'''
        PS C:\\ops> az login --service-principal -u {uid(rng)} -p {pw} --tenant contoso.onmicrosoft.com
        [
          {{
            "cloudName": "AzureCloud",
            "isDefault": true,
            "name": "Contoso Production",
            "state": "Enabled",
            "user": {{ "name": "{uid(rng)}", "type": "servicePrincipal" }}
          }}
        ]
        ''', pw)


@cred("az-storage-account-keys-list-table-two-keys")
def _k_az_keys(rng):
    k1, k2 = b64(rng, 64), b64(rng, 64)
    return out(f'''
        $ az storage account keys list -g rg-data -n stdatalake01 -o table
        CreationTime                      KeyName    Permissions    Value
        --------------------------------  ---------  -------------  ----------------------------------------------------------------------------------------
        {day(rng)}T08:11:04.129311+00:00  key1       FULL           {k1}
        {day(rng)}T08:11:04.129311+00:00  key2       FULL           {k2}
        ''', k1, k2)


@cred("az-storage-generate-sas-output-url-sig")
def _k_az_sas(rng):
    sig = quote(b64(rng, 32))
    return out(f'''
        $ az storage container generate-sas --account-name stexports --name nightly --permissions rl --expiry 2026-12-31 -o tsv
        se=2026-12-31&sp=rl&sv=2022-11-02&sr=c&sig={sig}
        ''', sig)


@cred("az-acr-credential-show-two-passwords")
def _k_acr(rng):
    p1, p2 = urlsafe(rng, 52).replace("-", "+").replace("_", "/"), urlsafe(rng, 52).replace("-", "+").replace("_", "/")
    return out(jd({"passwords": [{"name": "password", "value": p1}, {"name": "password2", "value": p2}],
                   "username": "acmeregistry"}), p1, p2)


@cred("az-cosmosdb-keys-list-primary-master")
def _k_cosmos(rng):
    k = b64(rng, 64)
    return out(jd({"primaryMasterKey": k, "primaryReadonlyMasterKey": "<redacted by script>",
                   "secondaryMasterKey": "<redacted by script>", "secondaryReadonlyMasterKey": "<redacted by script>"}), k)


@cred("azure-publish-settings-userpwd-attribute")
def _k_pubxml(rng):
    pw = mixed(rng, 60)
    return out(f'''
        <publishData>
          <publishProfile profileName="shop-api - Web Deploy" publishMethod="MSDeploy"
            publishUrl="shop-api.scm.azurewebsites.net:443" msdeploySite="shop-api"
            userName="$shop-api" userPWD="{pw}"
            destinationAppUrl="https://shop-api.azurewebsites.net" SQLServerDBConnectionString=""
            hostingProviderForumLink="" controlPanelLink="https://portal.azure.com" webSystem="WebSites">
            <databases />
          </publishProfile>
        </publishData>
        ''', pw)


@cred("doctl-config-yaml-access-token-contexts")
def _k_doctl(rng):
    t1 = "dop_v1_" + hexa(rng, 64)
    return out(f'''
        access-token: {t1}
        auth-contexts:
          staging: {"dop_v1_" + "*" * 8}
        context: default
        output: text
        ''', t1)


@cred("flyctl-config-yml-access-token-fm2")
def _k_fly_cfg(rng):
    tok = "FlyV1 fm2_" + b64(rng, 180).replace("+", "").replace("/", "")
    return out(f'''
        access_token: {tok}
        last_proxy: ""
        metrics_token: ""
        send_metrics: true
        ''', tok.split(" ", 1)[1])


@cred("fly-tokens-create-deploy-output-then-gh-secret")
def _k_fly_deploy(rng):
    tok = "FlyV1 fm2_" + b64(rng, 150).replace("+", "").replace("/", "")
    return out(f'''
        $ fly tokens create deploy -a billing-api -x 8760h
        {tok}
        $ gh secret set FLY_API_TOKEN --body "{tok}"
        ✓ Set Actions secret FLY_API_TOKEN for acme/billing-api
        ''', tok.split(" ", 1)[1])


@cred("wrangler-default-toml-oauth-and-refresh")
def _k_wrangler(rng):
    at, rt = urlsafe(rng, 43) + "." + urlsafe(rng, 43), urlsafe(rng, 43) + "." + urlsafe(rng, 43)
    return out(f'''
        # ~/.wrangler/config/default.toml
        oauth_token = "{at}"
        expiration_time = "{when(rng)}"
        refresh_token = "{rt}"
        scopes = [ "account:read", "user:read", "workers:write", "workers_kv:write", "d1:write", "offline_access" ]
        ''', at, rt)


@cred("wrangler-toml-vars-block-literal-secret")
def _k_wrangler_vars(rng):
    sec = mixed(rng, 40)
    return out(f'''
        name = "edge-auth"
        main = "src/index.ts"
        compatibility_date = "2026-01-15"

        [vars]
        ISSUER = "https://auth.acme.example"
        SESSION_HMAC_SECRET = "{sec}"

        [[d1_databases]]
        binding = "DB"
        database_name = "edge-auth"
        database_id = "{uid(rng)}"
        ''', sec)


@cred("cloudflare-api-token-github-actions-env-literal")
def _k_cf_token(rng):
    tok = urlsafe(rng, 40)
    return out(f'''
              - name: Deploy worker
                uses: cloudflare/wrangler-action@v3
                env:
                  CLOUDFLARE_ACCOUNT_ID: {hexa(rng, 32)}
                with:
                  apiToken: {tok}
                  command: deploy --env production
        ''', tok)


@cred("cloudflare-global-api-key-curl-x-auth-key")
def _k_cf_global(rng):
    key = hexa(rng, 37)
    return out(f'''
        curl -s "https://api.cloudflare.com/client/v4/zones?name=acme.example" \\
             -H "X-Auth-Email: hostmaster@acme.example" \\
             -H "X-Auth-Key: {key}" | jq '.result[0].id'
        ''', key)


@cred("cloudflared-tunnel-run-token-compose")
def _k_cf_tunnel(rng):
    tok = base64.b64encode(json.dumps({"a": hexa(rng, 32), "t": uid(rng), "s": b64(rng, 32)},
                                      separators=(",", ":")).encode()).decode()
    return out(f'''
        services:
          cloudflared:
            image: cloudflare/cloudflared:2026.1.1
            command: tunnel --no-autoupdate run --token {tok}
            restart: unless-stopped
        ''', tok)


@cred("vercel-cli-auth-json-token")
def _k_vercel(rng):
    tok = mixed(rng, 24)
    return out(jd({"// Note": "This is your Vercel credentials file. DO NOT SHARE!",
                   "// Docs": "https://vercel.com/docs/projects/project-configuration/global-configuration#auth.json",
                   "token": tok}), tok)


@cred("vercel-deploy-token-flag-ci-script")
def _k_vercel_ci(rng):
    tok = mixed(rng, 24)
    return out(f'''
        #!/usr/bin/env bash
        set -euo pipefail
        npx vercel pull --yes --environment=production --token={tok}
        npx vercel build --prod --token={tok}
        npx vercel deploy --prebuilt --prod --token={tok}
        ''', tok)


@cred("netlify-cli-config-json-users-auth-token")
def _k_netlify(rng):
    tok = "nfp_" + mixed(rng, 36)
    uid_ = hexa(rng, 24)
    return out(jd({"telemetryDisabled": True, "cliId": uid(rng), "userId": uid_, "users": {
        uid_: {"id": uid_, "name": "Ana K", "email": "ana@acme.example", "auth": {
            "token": tok, "github": {"user": None, "token": None}}}}}), tok)


@cred("heroku-netrc-api-and-git-hrku-token")
def _k_heroku(rng):
    tok = "HRKU-AA" + urlsafe(rng, 58)
    return out(f'''
        machine api.heroku.com
          login ana@acme.example
          password {tok}
        machine git.heroku.com
          login ana@acme.example
          password {tok}
        ''', tok)


@cred("heroku-config-output-database-url-password")
def _k_heroku_config(rng):
    pw = hexa(rng, 64)
    return out(f'''
        $ heroku config -a legacy-crm
        === legacy-crm Config Vars
        DATABASE_URL:           postgres://u{lower(rng, 13)}:{pw}@c{lower(rng, 11)}.cluster-czrs8kj4isg7.us-east-1.rds.amazonaws.com:5432/d{lower(rng, 13)}
        LANG:                   en_US.UTF-8
        RACK_ENV:               production
        WEB_CONCURRENCY:        3
        ''', pw)


@cred("railway-cli-config-json-user-token")
def _k_railway(rng):
    tok = hexa(rng, 32)
    return out(jd({"projects": {"/home/ana/src/shop": {"projectPath": "/home/ana/src/shop",
                                                       "name": "shop", "project": uid(rng), "environment": uid(rng)}},
                   "user": {"token": tok, "accessToken": None}, "linkedFunctions": None}), tok)


@cred("railway-token-uuid-in-gitlab-ci-variables")
def _k_railway_ci(rng):
    tok = uid(rng)
    return out(f'''
        deploy:
          stage: deploy
          image: ghcr.io/railwayapp/cli:latest
          variables:
            SVC_ID: {uid(rng)}
            RAILWAY_TOKEN: {tok}
          script:
            - railway up --service=$SVC_ID
        ''', tok)


@cred("supabase-status-output-service-role-and-db-url")
def _k_supabase_status(rng):
    srk = jwt(rng, {"iss": "supabase", "ref": lower(rng, 20), "role": "service_role", "iat": 1767225600,
                    "exp": 2082758400})
    pw = safe(rng, 22)
    anon = "sb_publishable_" + urlsafe(rng, 31)
    return out(f'''
        $ supabase status --linked
                 API URL: https://{lower(rng, 20)}.supabase.co
                  DB URL: postgresql://postgres.{lower(rng, 20)}:{pw}@aws-0-eu-central-1.pooler.supabase.com:6543/postgres
        publishable key: {anon}
        service_role key: {srk}
        ''', srk, pw)


@cred("supabase-secret-key-sb-secret-edge-function-env")
def _k_supabase_secret(rng):
    key = "sb_secret_" + urlsafe(rng, 31)
    return out(f'''
        SUPABASE_URL=https://{lower(rng, 20)}.supabase.co
        SUPABASE_PUBLISHABLE_KEY=sb_publishable_{urlsafe(rng, 31)}
        SUPABASE_SECRET_KEY={key}
        ''', key)


@cred("neonctl-connection-string-output")
def _k_neon_cs(rng):
    pw = "npg_" + mixed(rng, 12)
    return out(f'''
        $ neonctl connection-string --project-id {rng.choice(_WORDS)}-{rng.choice(_WORDS)}-{digits(rng, 8)} --pooled
        postgresql://neondb_owner:{pw}@ep-{rng.choice(_WORDS)}-{rng.choice(_WORDS)}-a5{lower(rng, 6)}-pooler.eu-central-1.aws.neon.tech/neondb?sslmode=require&channel_binding=require
        ''', pw)


@cred("neon-api-key-terraform-provider-env-export")
def _k_neon_api(rng):
    key = "napi_" + lower(rng, 64)
    return out(f'''
        $ export NEON_API_KEY={key}
        $ terraform plan -out plan.tfplan
        ''', key)


@cred("pscale-password-create-table-output")
def _k_pscale_pw(rng):
    pw = "pscale_pw_" + urlsafe(rng, 43)
    return out(f'''
        $ pscale password create inventory main app-writer --role readwriter
          Password app-writer was successfully created in inventory/main.
          Please save the values below as they will not be shown again

          NAME         BRANCH   ID             USERNAME                 ACCESS HOST URL                   ROLE          PASSWORD
         ------------ -------- -------------- ------------------------ --------------------------------- ------------- ---------------------------------------------------
          app-writer   main     {lower(rng, 12)}   {lower(rng, 20)}     aws.connect.psdb.cloud            readwriter    {pw}
        ''', pw)


@cred("pscale-service-token-ci-env")
def _k_pscale_st(rng):
    tok = "pscale_tkn_" + urlsafe(rng, 43)
    return out(f'''
        PLANETSCALE_SERVICE_TOKEN_ID={lower(rng, 12)}
        PLANETSCALE_SERVICE_TOKEN={tok}
        PLANETSCALE_ORG=acme
        ''', tok)


@cred("turso-db-tokens-create-then-libsql-url")
def _k_turso(rng):
    tok = jwt(rng, {"a": "rw", "iat": epoch(rng), "id": uid(rng)}, "EdDSA")
    return out(f'''
        $ turso db tokens create analytics-edge
        {tok}
        $ export TURSO_DATABASE_URL=libsql://analytics-edge-acme.aws-eu-west-1.turso.io
        $ export TURSO_AUTH_TOKEN={tok}
        ''', tok)


@cred("linode-cli-config-ini-token")
def _k_linode(rng):
    tok = hexa(rng, 64)
    return out(f'''
        [DEFAULT]
        default-user = acme-ops

        [acme-ops]
        token = {tok}
        region = eu-central
        type = g6-standard-2
        image = linode/debian12
        ''', tok)


@cred("hcloud-cli-toml-contexts-token")
def _k_hcloud(rng):
    tok = mixed(rng, 64)
    return out(f'''
        active_context = "prod"

        [[contexts]]
          name = "prod"
          token = "{tok}"
        ''', tok)


@cred("scw-config-yaml-profile-secret-uuid")
def _k_scw(rng):
    sk = uid(rng)
    return out(f'''
        # ~/.config/scw/config.yaml
        access_key: SCW{b32(rng, 17)}
        secret_key: {sk}
        default_organization_id: {uid(rng)}
        default_project_id: {uid(rng)}
        default_region: fr-par
        default_zone: fr-par-2
        ''', sk)


@cred("ovh-conf-application-secret-and-consumer-key")
def _k_ovh(rng):
    sec, ck = mixed(rng, 32), mixed(rng, 32)
    return out(f'''
        [default]
        endpoint=ovh-eu

        [ovh-eu]
        application_key={mixed(rng, 16)}
        application_secret={sec}
        consumer_key={ck}
        ''', sec, ck)


@cred("oci-config-pass-phrase-and-key-file")
def _k_oci(rng):
    pp = person(rng)
    return out(f'''
        [DEFAULT]
        user=ocid1.user.oc1..aaaaaaaa{lower(rng, 52)}
        fingerprint={":".join(hexa(rng, 2) for _ in range(16))}
        tenancy=ocid1.tenancy.oc1..aaaaaaaa{lower(rng, 52)}
        region=eu-frankfurt-1
        key_file=~/.oci/oci_api_key.pem
        pass_phrase={pp}
        ''', pp)


@cred("aliyun-cli-config-json-access-key-secret")
def _k_aliyun(rng):
    sec = mixed(rng, 30)
    return out(jd({"current": "default", "profiles": [{"name": "default", "mode": "AK",
                                                       "access_key_id": "LTAI5t" + mixed(rng, 18),
                                                       "access_key_secret": sec, "region_id": "cn-hangzhou",
                                                       "output_format": "json", "language": "zh"}],
                   "meta_path": ""}), sec)


@cred("tccli-credential-file-secret-key")
def _k_tencent(rng):
    sec = mixed(rng, 32)
    return out(jd({"secretId": "AKID" + mixed(rng, 32), "secretKey": sec}), sec)


@cred("yc-config-list-oauth-token")
def _k_yc(rng):
    tok = "y0_AgAAAAA" + urlsafe(rng, 48)
    return out(f'''
        $ yc config list
        token: {tok}
        cloud-id: b1g{lower(rng, 17)}
        folder-id: b1g{lower(rng, 17)}
        compute-default-zone: ru-central1-a
        ''', tok)


@cred("b2-authorize-account-history-application-key")
def _k_b2(rng):
    key = "K005" + urlsafe(rng, 27).replace("-", "").replace("_", "") + "xq"
    return out(f'''
        ana@nas:~$ b2 account authorize {hexa(rng, 25)} {key}
        ana@nas:~$ b2 sync --keep-days 30 /srv/photos b2://acme-photo-archive/photos
        ''', key)


@cred("s3cmd-s3cfg-secret-key-wasabi")
def _k_s3cfg(rng):
    sk = aws_secret(rng)
    return out(f'''
        [default]
        access_key = {upper(rng, 20)}
        secret_key = {sk}
        host_base = s3.eu-central-2.wasabisys.com
        host_bucket = %(bucket)s.s3.eu-central-2.wasabisys.com
        use_https = True
        ''', sk)


@cred("mc-alias-set-minio-root-history")
def _k_mc(rng):
    sk = mixed(rng, 40)
    return out(f'''
        $ mc alias set homelab https://minio.lab.lan:9000 minioadmin {sk}
        Added `homelab` successfully.
        $ mc admin info homelab
        ''', sk)


@cred("rclone-conf-s3-and-webdav-plain-secrets")
def _k_rclone(rng):
    sk = aws_secret(rng)
    return out(f'''
        [r2]
        type = s3
        provider = Cloudflare
        access_key_id = {hexa(rng, 32)}
        secret_access_key = {sk}
        endpoint = https://{hexa(rng, 32)}.r2.cloudflarestorage.com
        acl = private
        ''', sk)


@cred("cloudinary-url-env-api-secret")
def _k_cloudinary(rng):
    sec = urlsafe(rng, 27)
    return out(f'''
        CLOUDINARY_URL=cloudinary://{digits(rng, 15)}:{sec}@acme-media
        ''', sec)


@cred("render-api-key-curl-deploys")
def _k_render(rng):
    key = "rnd_" + mixed(rng, 32)
    return out(f'''
        curl --request POST \\
             --url https://api.render.com/v1/services/srv-{lower(rng, 20)}/deploys \\
             --header 'accept: application/json' \\
             --header 'authorization: Bearer {key}' \\
             --data '{{"clearCache": "clear"}}'
        ''', key)


@cred("deno-deploy-deployctl-token-flag")
def _k_deployctl(rng):
    tok = "ddp_" + mixed(rng, 36)
    return out(f'''
        deployctl deploy --project=edge-og-images --prod --token={tok} main.ts
        ''', tok)


@cred("ngrok-yml-v3-authtoken-and-api-key")
def _k_ngrok(rng):
    at, ak = mixed(rng, 27) + "_" + mixed(rng, 22), mixed(rng, 27) + "_" + mixed(rng, 22)
    return out(f'''
        version: 3
        agent:
          authtoken: {at}
          api_key: {ak}
        endpoints:
          - name: webhook-dev
            url: https://webhooks-dev.ngrok.app
            upstream:
              url: 3000
        ''', at, ak)


@cred("tailscale-up-authkey-cloud-init")
def _k_tailscale(rng):
    key = "tskey-auth-k" + mixed(rng, 10) + "CNTRL-" + mixed(rng, 33)
    return out(f'''
        #cloud-config
        runcmd:
          - ['sh', '-c', 'curl -fsSL https://tailscale.com/install.sh | sh']
          - ['tailscale', 'up', '--authkey={key}', '--advertise-tags=tag:ci-runner', '--ssh']
        ''', key)


@cred("ibmcloud-login-apikey-flag-script")
def _k_ibm(rng):
    key = urlsafe(rng, 44)
    return out(f'''
        ibmcloud login --apikey {key} -r eu-de -g default
        ibmcloud ks cluster config --cluster payments-eu
        ''', key)


@cred("exoscale-cli-toml-secret")
def _k_exo(rng):
    sec = urlsafe(rng, 43)
    return out(f'''
        defaultaccount = "acme"

        [[accounts]]
          account = "acme"
          defaultZone = "ch-gva-2"
          key = "EXO{hexa(rng, 24)}"
          name = "acme"
          secret = "{sec}"
        ''', sec)


# -- infrastructure as code, Kubernetes, containers and proxies --

@cred("terraform-tfvars-db-and-grafana-admin")
def _i_tfvars(rng):
    p1, p2 = safe(rng, 24), person(rng)
    return out(f'''
        region          = "eu-west-1"
        environment     = "prod"
        db_instance     = "db.r7g.large"
        db_username     = "orders_admin"
        db_password     = "{p1}"
        grafana_admin_password = "{p2}"
        allowed_cidrs   = ["10.20.0.0/16"]
        ''', p1, p2)


@cred("terraform-tfstate-rds-instance-password-attribute")
def _i_tfstate(rng):
    pw = safe(rng, 26)
    return out(jd({"version": 4, "terraform_version": "1.10.5", "serial": 41, "lineage": uid(rng), "outputs": {},
                   "resources": [{"mode": "managed", "type": "aws_db_instance", "name": "orders",
                                  "provider": "provider[\"registry.terraform.io/hashicorp/aws\"]",
                                  "instances": [{"schema_version": 2, "attributes": {
                                      "identifier": "orders-prod", "engine": "postgres", "engine_version": "16.4",
                                      "username": "orders_admin", "password": pw, "port": 5432,
                                      "storage_encrypted": True},
                                      "sensitive_attributes": [[{"type": "get_attr", "value": "password"}]]}]}]}),
               pw)


@cred("terraform-github-provider-token-inline-block")
def _i_tf_gh(rng):
    tok = gh_token(rng)
    return out(f'''
        terraform {{
          required_providers {{
            github = {{
              source  = "integrations/github"
              version = "~> 6.6"
            }}
          }}
        }}

        provider "github" {{
          owner = "acme-platform"
          token = "{tok}"
        }}
        ''', tok)


@cred("terraform-credentials-tfrc-json-atlasv1")
def _i_tfrc(rng):
    tok = mixed(rng, 14) + ".atlasv1." + mixed(rng, 67)
    return out(jd({"credentials": {"app.terraform.io": {"token": tok}}}), tok)


@cred("terraform-output-json-sensitive-shown")
def _i_tf_output(rng):
    pw = mixed(rng, 32)
    return out(f'''
        $ terraform output -json redis
        {{"auth_token":"{pw}","endpoint":"master.sessions-prod.abc123.euw1.cache.amazonaws.com","port":6379}}
        ''', pw)


@cred("pulumi-config-set-plaintext-history")
def _i_pulumi_set(rng):
    v = mixed(rng, 40)
    return out(f'''
        $ pulumi stack select acme/payments/prod
        $ pulumi config set --plaintext stripeWebhookSecret whsec_{v}
        $ pulumi up --yes
        ''', "whsec_" + v)


@cred("pulumi-stack-yaml-plain-value-next-to-secure")
def _i_pulumi_yaml(rng):
    pw = safe(rng, 20)
    return out(f'''
        config:
          aws:region: eu-central-1
          app:dbUser: reporting
          app:dbPassword: {pw}
          app:apiKey:
            secure: v1:{b64(rng, 12)}:{b64(rng, 48)}
        ''', pw)


@cred("pulumi-credentials-json-access-token")
def _i_pulumi_creds(rng):
    tok = "pul-" + hexa(rng, 40)
    return out(jd({"current": "https://api.pulumi.com", "accessTokens": {"https://api.pulumi.com": tok},
                   "accounts": {"https://api.pulumi.com": {"accessToken": tok, "username": "ana-acme",
                                                           "organizations": ["acme"], "lastValidatedAt": when(rng)}}}),
               tok)


@cred("ansible-group-vars-become-and-db-password")
def _i_ansible_vars(rng):
    p1, p2 = person(rng), safe(rng, 20)
    return out(f'''
        ---
        # group_vars/dbservers.yml
        ansible_user: deploy
        ansible_become: true
        ansible_become_password: "{p1}"
        postgresql_users:
          - name: app
            password: "{p2}"
            encrypted: true
        ''', p1, p2)


@cred("ansible-inventory-ini-windows-winrm-password")
def _i_ansible_ini(rng):
    pw = symbolic(rng, 16, "!#%+-=@_")
    return out(f'''
        [windows]
        dc01.corp.acme.lan
        fs02.corp.acme.lan

        [windows:vars]
        ansible_connection=winrm
        ansible_winrm_transport=ntlm
        ansible_user=CORP\\svc_ansible
        ansible_password={pw}
        ansible_port=5986
        ''', pw)


@cred("ansible-playbook-extra-vars-cli-password")
def _i_ansible_e(rng):
    pw = safe(rng, 16)
    return out(f'''
        $ ansible-playbook -i inventories/prod site.yml --tags keycloak -e "keycloak_admin_password={pw}" --diff
        PLAY [keycloak] ****************************************************************
        ''', pw)


@cred("ansible-vault-password-file-content")
def _i_vault_pass(rng):
    pw = phrase(rng, 5)
    return out(f'''
        $ cat .vault_pass
        {pw}
        $ ansible-vault view group_vars/all/vault.yml --vault-password-file .vault_pass
        ''', pw)


@cred("cloud-init-chpasswd-users-list")
def _i_cloudinit(rng):
    pw = person(rng)
    return out(f'''
        #cloud-config
        ssh_pwauth: true
        chpasswd:
          expire: false
          users:
            - name: ubuntu
              password: {pw}
              type: text
        ''', pw)


@cred("packer-pkr-hcl-winrm-password-variable-default")
def _i_packer(rng):
    pw = symbolic(rng, 18, "!#%+-=@_")
    return out(f'''
        variable "winrm_password" {{
          type    = string
          default = "{pw}"
        }}

        source "vsphere-iso" "win2025" {{
          communicator   = "winrm"
          winrm_username = "Administrator"
          winrm_password = var.winrm_password
        }}
        ''', pw)


@cred("chef-data-bag-json-unencrypted-item")
def _i_chef(rng):
    pw = safe(rng, 22)
    return out(jd({"id": "rabbitmq", "admin_user": "rmq_admin", "admin_password": pw, "vhost": "/orders"}), pw)


@cred("hiera-common-yaml-plain-ldap-bind")
def _i_hiera(rng):
    pw = safe(rng, 18)
    return out(f'''
        ---
        profile::sssd::ldap_uri: 'ldaps://ldap.corp.acme.lan'
        profile::sssd::bind_dn: 'cn=sssd,ou=svc,dc=acme,dc=lan'
        profile::sssd::bind_password: '{pw}'
        ''', pw)


@cred("salt-pillar-sls-mysql-root-pass")
def _i_salt(rng):
    pw = mixed(rng, 20)
    return out(f'''
        mysql:
          server:
            root_user: root
            root_password: {pw}
            bind-address: 127.0.0.1
        ''', pw)


@cred("vagrantfile-smb-password-synced-folder")
def _i_vagrant(rng):
    pw = person(rng)
    return out(f'''
        Vagrant.configure("2") do |config|
          config.vm.box = "gusztavvargadr/windows-server-2022-standard"
          config.vm.synced_folder ".", "/vagrant", type: "smb",
            smb_username: "ana", smb_password: "{pw}"
        end
        ''', pw)


@cred("k8s-secret-data-base64-password-field")
def _i_k8s_data(rng):
    enc = base64.b64encode(safe(rng, 20).encode()).decode()
    return out(f'''
        apiVersion: v1
        kind: Secret
        metadata:
          name: orders-db
          namespace: orders
        type: Opaque
        data:
          username: {base64.b64encode(b"orders_app").decode()}
          password: {enc}
        ''', enc)


@cred("k8s-secret-stringdata-smtp-and-jwt")
def _i_k8s_string(rng):
    p1, p2 = mixed(rng, 20), b64(rng, 48)
    return out(f'''
        apiVersion: v1
        kind: Secret
        metadata:
          name: notifier-env
        stringData:
          SMTP_USER: notifier@acme.example
          SMTP_PASS: "{p1}"
          JWT_SIGNING_KEY: "{p2}"
        ''', p1, p2)


@cred("kubeconfig-service-account-token-user")
def _i_kubeconfig_tok(rng):
    tok = jwt(rng, {"aud": ["https://kubernetes.default.svc.cluster.local"], "exp": epoch(rng),
                    "iss": "https://kubernetes.default.svc.cluster.local",
                    "kubernetes.io": {"namespace": "ci", "serviceaccount": {"name": "deployer", "uid": uid(rng)}},
                    "sub": "system:serviceaccount:ci:deployer"}, "RS256")
    return out(f'''
        apiVersion: v1
        kind: Config
        clusters:
          - name: prod-eu
            cluster:
              server: https://10.0.0.1:6443
              certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM1ekNDQWMrZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwK
        users:
          - name: deployer
            user:
              token: {tok}
        contexts:
          - name: deployer@prod-eu
            context: {{cluster: prod-eu, user: deployer, namespace: ci}}
        current-context: deployer@prod-eu
        ''', tok)


@cred("kubeconfig-client-key-data-base64-pem")
def _i_kubeconfig_key(rng):
    key_pem = pem(rng, pem_first(rng, "MHcCAQEEI"), "EC PRIVATE KEY", 2) + "\n"
    enc = base64.b64encode(key_pem.encode()).decode()
    return out(f'''
        users:
        - name: kind-dev
          user:
            client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSURJVENDQWdtZ0F3SUJBZ0lJ
            client-key-data: {enc}
        ''', enc)


@cred("kubectl-create-secret-from-literal-history")
def _i_kubectl_lit(rng):
    pw, tok = safe(rng, 18), "glpat-" + urlsafe(rng, 20)
    return out(f'''
          88  kubectl -n ci create secret generic runner-secrets \\
                --from-literal=redis-password={pw} \\
                --from-literal=gitlab-token={tok}
          89  kubectl -n ci get secret runner-secrets -o yaml | head
        ''', pw, tok)


@cred("kubectl-get-secret-jsonpath-decoded-output")
def _i_kubectl_dec(rng):
    pw = mixed(rng, 24)
    return out(f'''
        $ kubectl get secret argocd-initial-admin-secret -n argocd -o jsonpath="{{.data.password}}" | base64 -d; echo
        {pw}
        ''', pw)


@cred("k8s-configmap-misused-for-api-key")
def _i_cm(rng):
    key = "SG." + urlsafe(rng, 22) + "." + urlsafe(rng, 43)
    return out(f'''
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: mailer-config
        data:
          MAIL_FROM: "no-reply@acme.example"
          SENDGRID_API_KEY: "{key}"
          TEMPLATE_WELCOME: "d-{hexa(rng, 32)}"
        ''', key)


@cred("helm-values-postgresql-auth-password-literal")
def _i_helm_values(rng):
    p1, p2 = safe(rng, 20), safe(rng, 20)
    return out(f'''
        postgresql:
          enabled: true
          auth:
            username: keycloak
            password: "{p1}"
            postgresPassword: "{p2}"
            database: keycloak
          primary:
            persistence:
              size: 20Gi
        ''', p1, p2)


@cred("helm-upgrade-install-set-flags-ci-log")
def _i_helm_set(rng):
    pw = mixed(rng, 22)
    return out(f'''
        $ helm upgrade --install redis oci://registry-1.docker.io/bitnamicharts/redis -n cache \\
            --set auth.password={pw} --set replica.replicaCount=2 --wait
        Release "redis" has been upgraded. Happy Helming!
        NAME: redis
        LAST DEPLOYED: Tue Mar 10 {hms(rng)} 2026
        ''', pw)


@cred("kustomization-secret-generator-literals")
def _i_kustomize(rng):
    pw = safe(rng, 18)
    return out(f'''
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources:
          - ../../base
        secretGenerator:
          - name: api-secrets
            literals:
              - DATABASE_USER=api
              - DATABASE_PASSWORD={pw}
        ''', pw)


@cred("argocd-repository-secret-https-password")
def _i_argocd_repo(rng):
    tok = "glpat-" + urlsafe(rng, 20)
    return out(f'''
        apiVersion: v1
        kind: Secret
        metadata:
          name: repo-platform-manifests
          namespace: argocd
          labels:
            argocd.argoproj.io/secret-type: repository
        stringData:
          type: git
          url: https://gitlab.acme.io/platform/manifests.git
          username: argocd
          password: {tok}
        ''', tok)


@cred("flux-bootstrap-github-token-env-history")
def _i_flux(rng):
    tok = gh_token(rng)
    return out(f'''
        $ GITHUB_TOKEN={tok} flux bootstrap github --owner=acme --repository=fleet --path=clusters/prod --personal=false
        ► connecting to github.com
        ✔ repository "https://github.com/acme/fleet" created
        ''', tok)


@cred("external-secrets-fake-provider-data-values")
def _i_eso_fake(rng):
    v = mixed(rng, 32)
    return out(f'''
        apiVersion: external-secrets.io/v1
        kind: ClusterSecretStore
        metadata:
          name: local-dev-store
        spec:
          provider:
            fake:
              data:
                - key: /payments/stripe
                  value: "{v}"
                  version: v1
        ''', v)


@cred("docker-compose-environment-map-rabbitmq-and-redis")
def _i_compose(rng):
    p1, p2 = safe(rng, 18), mixed(rng, 24)
    return out(f'''
        services:
          rabbitmq:
            image: rabbitmq:4.1-management
            environment:
              RABBITMQ_DEFAULT_USER: orders
              RABBITMQ_DEFAULT_PASS: {p1}
          redis:
            image: redis:8.0-alpine
            command: ["redis-server", "--requirepass", "{p2}", "--appendonly", "yes"]
        ''', p1, p2)


@cred("docker-compose-default-interpolation-literal-fallback")
def _i_compose_default(rng):
    pw = safe(rng, 20)
    return out(f'''
        services:
          db:
            image: mariadb:11.4
            environment:
              MARIADB_ROOT_PASSWORD: ${{MARIADB_ROOT_PASSWORD:-{pw}}}
              MARIADB_DATABASE: wiki
        ''', pw)


@cred("dockerfile-arg-env-npm-token")
def _i_dockerfile(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f'''
        FROM node:22-bookworm-slim AS deps
        WORKDIR /app
        ENV NPM_TOKEN={tok}
        RUN echo "//registry.npmjs.org/:_authToken=${{NPM_TOKEN}}" > .npmrc && npm ci --omit=dev && rm .npmrc
        COPY . .
        ''', tok)


@cred("docker-inspect-config-env-array")
def _i_docker_inspect(rng):
    pw = mixed(rng, 20)
    return out(jd([{"Id": sha256(rng), "Name": "/keycloak", "Config": {
        "Hostname": hexa(rng, 12), "Image": "quay.io/keycloak/keycloak:26.3",
        "Env": ["KC_DB=postgres", "KC_DB_USERNAME=keycloak", f"KC_DB_PASSWORD={pw}",
                "KC_HOSTNAME=sso.acme.example", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"]}}], 4), pw)


@cred("systemd-unit-environment-line-token")
def _i_systemd(rng):
    tok = "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    return out(f'''
        [Unit]
        Description=Deploy notifier
        After=network.target

        [Service]
        Type=simple
        User=notifier
        Environment="SLACK_BOT_TOKEN={tok}" "SLACK_CHANNEL=#deploys"
        ExecStart=/usr/local/bin/deploy-notifier --listen :9099
        ''', tok)


@cred("systemd-dropin-override-conf-db-password")
def _i_systemd_dropin(rng):
    pw = safe(rng, 22)
    return out(f'''
        $ sudo systemctl cat gitea.service
        # /etc/systemd/system/gitea.service
        [Service]
        ExecStart=/usr/local/bin/gitea web --config /etc/gitea/app.ini

        # /etc/systemd/system/gitea.service.d/override.conf
        [Service]
        Environment=GITEA__database__PASSWD={pw}
        ''', pw)


@cred("nginx-proxy-set-header-basic-upstream")
def _i_nginx(rng):
    enc = basic("scraper", safe(rng, 16))
    return out(f'''
        location /metrics-proxy/ {{
            proxy_pass https://metrics.partner.example/;
            proxy_set_header Authorization "Basic {enc}";
            proxy_set_header Host metrics.partner.example;
            proxy_ssl_server_name on;
        }}
        ''', enc)


@cred("nginx-map-api-key-header-allowlist")
def _i_nginx_map(rng):
    k1, k2 = mixed(rng, 32), mixed(rng, 32)
    return out(f'''
        map $http_x_api_key $api_client {{
            default         "";
            "{k1}"  "mobile-app";
            "{k2}"  "partner-feed";
        }}
        ''', k1, k2)


@cred("haproxy-stats-frontend-userlist-insecure-pw")
def _i_haproxy_ul(rng):
    pw = safe(rng, 16)
    return out(f'''
        userlist stats_users
            user admin insecure-password {pw}

        frontend stats
            bind :8404
            http-request auth unless {{ http_auth(stats_users) }}
            stats enable
            stats uri /
        ''', pw)


@cred("haproxy-backend-http-request-set-header-bearer")
def _i_haproxy_hdr(rng):
    tok = mixed(rng, 40)
    return out(f'''
        backend be_search
            mode http
            http-request set-header Authorization "Bearer {tok}"
            server s1 search-1.internal:9200 check ssl verify none
        ''', tok)


@cred("caddyfile-reverse-proxy-header-up-api-key")
def _i_caddy(rng):
    key = "AIza" + urlsafe(rng, 35)
    return out(f'''
        maps.acme.example {{
            reverse_proxy https://maps.googleapis.com {{
                header_up Host maps.googleapis.com
                header_up X-Goog-Api-Key {key}
            }}
        }}
        ''', key)


@cred("traefik-dynamic-middleware-custom-request-header")
def _i_traefik(rng):
    tok = hexa(rng, 48)
    return out(f'''
        http:
          middlewares:
            inject-partner-key:
              headers:
                customRequestHeaders:
                  X-Partner-Token: "{tok}"
          routers:
            partner:
              rule: "Host(`partner.acme.example`)"
              middlewares: [inject-partner-key]
              service: partner-svc
        ''', tok)


@cred("traefik-static-acme-eab-hmac-encoded")
def _i_traefik_eab(rng):
    hmac = b64url(rng, 32)
    return out(f'''
        certificatesResolvers:
          zerossl:
            acme:
              email: hostmaster@acme.example
              caServer: https://acme.zerossl.com/v2/DV90
              eab:
                kid: {urlsafe(rng, 22)}
                hmacEncoded: {hmac}
              storage: /data/acme.json
        ''', hmac)


@cred("envoy-sds-inline-string-generic-secret")
def _i_envoy(rng):
    sec, raw = b64(rng, 32), b64(rng, 32)
    return out(f'''
        static_resources:
          secrets:
            - name: oauth2-client-secret
              generic_secret:
                secret:
                  inline_string: "{sec}"
            - name: hmac
              generic_secret:
                secret:
                  inline_bytes: {raw}
        ''', sec, raw)


@cred("consul-agent-hcl-acl-tokens-block")
def _i_consul(rng):
    t1, gossip = uid(rng), b64(rng, 32)
    return out(f'''
        acl {{
          enabled = true
          default_policy = "deny"
          tokens {{
            agent = "{t1}"
          }}
        }}
        encrypt = "{gossip}"
        ''', t1, gossip)


@cred("nomad-job-template-inline-env-secret")
def _i_nomad(rng):
    pw = safe(rng, 20)
    return out(f'''
        task "api" {{
          driver = "docker"
          template {{
            data = <<EOH
        DB_HOST=pg.service.consul
        DB_PASSWORD={pw}
        EOH
            destination = "secrets/app.env"
            env         = true
          }}
        }}
        ''', pw)


@cred("vault-agent-approle-secret-id-file-cat")
def _i_vault_secretid(rng):
    sid = uid(rng)
    return out(f'''
        $ cat /etc/vault-agent/role-id /etc/vault-agent/secret-id
        {uid(rng)}
        {sid}
        $ vault write auth/approle/login role_id=@/etc/vault-agent/role-id secret_id=@/etc/vault-agent/secret-id
        ''', sid)


# -- observability --

@cred("datadog-agent-yaml-api-key-site")
def _o_dd_yaml(rng):
    key = hexa(rng, 32)
    return out(f'''
        ## /etc/datadog-agent/datadog.yaml
        api_key: {key}
        site: datadoghq.eu
        hostname: web-{rng.randint(1, 40):02d}.fra1
        logs_enabled: true
        apm_config:
          enabled: true
        ''', key)


@cred("datadog-curl-validate-api-and-app-keys")
def _o_dd_curl(rng):
    api, app = hexa(rng, 32), hexa(rng, 40)
    return out(f'''
        curl -X GET "https://api.datadoghq.com/api/v1/monitor?group_states=alert" \\
          -H "Accept: application/json" \\
          -H "DD-API-KEY: {api}" \\
          -H "DD-APPLICATION-KEY: {app}"
        ''', api, app)


@cred("newrelic-yml-license-key-java-agent")
def _o_nr_yml(rng):
    key = hexa(rng, 36) + "NRAL"
    return out(f'''
        common: &default_settings
          license_key: '{key}'
          app_name: Inventory Service (prod)
          distributed_tracing:
            enabled: true
          log_level: info
        production:
          <<: *default_settings
        ''', key)


@cred("newrelic-user-key-nerdgraph-curl")
def _o_nr_user(rng):
    key = "NRAK-" + upper(rng, 27)
    return out(f'''
        curl https://api.eu.newrelic.com/graphql \\
          -H 'Content-Type: application/json' \\
          -H 'API-Key: {key}' \\
          --data-binary '{{"query":"{{ actor {{ user {{ name email }} }} }}"}}'
        ''', key)


@cred("sentryclirc-auth-token-user")
def _o_sentryclirc(rng):
    tok = "sntryu_" + hexa(rng, 64)
    return out(f'''
        [auth]
        token={tok}

        [defaults]
        url=https://sentry.io/
        org=acme
        project=web-frontend
        ''', tok)


@cred("sentry-org-auth-token-next-config-upload")
def _o_sentry_org(rng):
    tok = "sntrys_" + b64(rng, 120).rstrip("=") + "_" + b64url(rng, 32)
    return out(f'''
        // next.config.mjs
        import {{ withSentryConfig }} from "@sentry/nextjs";

        export default withSentryConfig(nextConfig, {{
          org: "acme",
          project: "storefront",
          authToken: "{tok}",
          widenClientFileUpload: true,
        }});
        ''', tok)


@cred("grafana-ini-admin-password-and-secret-key")
def _o_grafana_ini(rng):
    p1, p2 = person(rng), mixed(rng, 24)
    return out(f'''
        [security]
        admin_user = admin
        admin_password = {p1}
        secret_key = {p2}
        cookie_secure = true

        [auth.anonymous]
        enabled = false
        ''', p1, p2)


@cred("grafana-provisioning-datasource-secure-json-data")
def _o_grafana_ds(rng):
    pw = safe(rng, 20)
    return out(f'''
        apiVersion: 1
        datasources:
          - name: Postgres-Orders
            type: grafana-postgresql-datasource
            url: pg-replica.internal:5432
            user: grafana_ro
            jsonData:
              database: orders
              sslmode: require
            secureJsonData:
              password: {pw}
        ''', pw)


@cred("grafana-service-account-token-dashboard-export-curl")
def _o_grafana_sa(rng):
    tok = "glsa_" + mixed(rng, 32) + "_" + hexa(rng, 8)
    return out(f'''
        for uid in $(cat dashboards.txt); do
          curl -s -H "Authorization: Bearer {tok}" "https://grafana.acme.io/api/dashboards/uid/$uid" > "export/$uid.json"
        done
        ''', tok)


@cred("honeycomb-refinery-config-api-keys-list")
def _o_refinery(rng):
    k = mixed(rng, 22)
    return out(f'''
        AccessKeys:
          ReceiveKeys:
            - "{k}"
          AcceptOnlyListedKeys: true
        RefineryTelemetry:
          AddRuleReasonToTrace: true
        ''', k)


@cred("splunk-hec-curl-event-token-header")
def _o_splunk(rng):
    tok = uid(rng)
    return out(f'''
        curl -k "https://splunk-hec.acme.io:8088/services/collector/event" \\
          -H "Authorization: Splunk {tok}" \\
          -d '{{"event": {{"msg": "deploy finished", "service": "orders"}}, "sourcetype": "_json", "index": "ci"}}'
        ''', tok)


@cred("splunk-outputs-conf-forwarder-ssl-password")
def _o_splunk_fwd(rng):
    pw = safe(rng, 18)
    return out(f'''
        [tcpout:primary_indexers]
        server = idx1.acme.lan:9997, idx2.acme.lan:9997
        clientCert = $SPLUNK_HOME/etc/auth/client.pem
        sslPassword = {pw}
        useACK = true
        ''', pw)


@cred("kibana-yml-elasticsearch-password")
def _o_kibana(rng):
    pw = mixed(rng, 20)
    return out(f'''
        server.host: "0.0.0.0"
        elasticsearch.hosts: ["https://es01:9200"]
        elasticsearch.username: "kibana_system"
        elasticsearch.password: "{pw}"
        elasticsearch.ssl.certificateAuthorities: ["/usr/share/kibana/config/certs/ca/ca.crt"]
        ''', pw)


@cred("logstash-pipeline-conf-output-password")
def _o_logstash(rng):
    pw = safe(rng, 18)
    return out(f'''
        output {{
          elasticsearch {{
            hosts => ["https://es-ingest.acme.lan:9200"]
            user => "logstash_writer"
            password => "{pw}"
            index => "app-logs-%{{+YYYY.MM.dd}}"
          }}
        }}
        ''', pw)


@cred("filebeat-yml-cloud-auth-user-colon-pass")
def _o_filebeat(rng):
    pw = mixed(rng, 24)
    return out(f'''
        cloud.id: "acme-prod:{b64(rng, 60)}"
        cloud.auth: "elastic:{pw}"
        filebeat.inputs:
          - type: filestream
            paths: ["/var/log/nginx/*.log"]
        ''', pw)


@cred("fluent-bit-output-http-passwd")
def _o_fluentbit(rng):
    pw = safe(rng, 16)
    return out(f'''
        [OUTPUT]
            Name        http
            Match       kube.*
            Host        logs.partner.example
            Port        443
            URI         /ingest
            tls         On
            HTTP_User   acme
            HTTP_Passwd {pw}
            Format      json_lines
        ''', pw)


@cred("vector-toml-datadog-logs-sink-default-api-key")
def _o_vector(rng):
    key = hexa(rng, 32)
    return out(f'''
        [sinks.dd_logs]
        type = "datadog_logs"
        inputs = ["parse_nginx"]
        default_api_key = "{key}"
        site = "datadoghq.eu"
        compression = "gzip"
        ''', key)


@cred("prometheus-remote-write-basic-auth-password")
def _o_prom(rng):
    pw = "glc_" + b64(rng, 90).rstrip("=")
    return out(f'''
        remote_write:
          - url: https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push
            basic_auth:
              username: "{digits(rng, 7)}"
              password: "{pw}"
        ''', pw)


@cred("alertmanager-yml-slack-webhook-and-smtp-password")
def _o_alertmanager(rng):
    hook = f"https://hooks.slack.com/services/T{upper(rng, 10)}/B{upper(rng, 10)}/{mixed(rng, 24)}"
    pw = safe(rng, 18)
    return out(f'''
        global:
          smtp_smarthost: 'smtp.office365.com:587'
          smtp_from: 'alerts@acme.example'
          smtp_auth_username: 'alerts@acme.example'
          smtp_auth_password: '{pw}'
        receivers:
          - name: oncall-slack
            slack_configs:
              - api_url: '{hook}'
                channel: '#oncall'
        ''', hook, pw)


@cred("alertmanager-pagerduty-routing-key")
def _o_pd(rng):
    key = hexa(rng, 32)
    return out(f'''
        receivers:
          - name: pagerduty-critical
            pagerduty_configs:
              - routing_key: {key}
                severity: critical
                send_resolved: true
        ''', key)


@cred("opsgenie-heartbeat-ping-curl-genie-key")
def _o_opsgenie(rng):
    key = uid(rng)
    return out(f'''
        */5 * * * * curl -s -X GET 'https://api.opsgenie.com/v2/heartbeats/backup-job/ping' --header 'Authorization: GenieKey {key}' >/dev/null
        ''', key)


@cred("dynatrace-oneagent-install-api-token")
def _o_dynatrace(rng):
    tok = "dt0c01." + upper(rng, 24) + "." + upper(rng, 64)
    return out(f'''
        wget -O Dynatrace-OneAgent-Linux.sh "https://abc12345.live.dynatrace.com/api/v1/deployment/installer/agent/unix/default/latest?arch=x86" --header="Authorization: Api-Token {tok}"
        sudo /bin/sh Dynatrace-OneAgent-Linux.sh --set-monitoring-mode=fullstack --set-app-log-content-access=true
        ''', tok)


@cred("axiom-token-env-vercel-log-drain")
def _o_axiom(rng):
    tok = "xaat-" + uid(rng)
    return out(f'''
        AXIOM_DATASET=vercel
        AXIOM_TOKEN={tok}
        AXIOM_ORG_ID=acme-{lower(rng, 6)}
        ''', tok)


@cred("rollbar-post-server-item-access-token-ruby")
def _o_rollbar(rng):
    tok = hexa(rng, 32)
    return out(f'''
        Rollbar.configure do |config|
          config.access_token = '{tok}'
          config.environment = ENV.fetch('RAILS_ENV', 'production')
          config.enabled = true
        end
        ''', tok)


@cred("posthog-personal-api-key-query-curl")
def _o_posthog(rng):
    key = "phx_" + mixed(rng, 47)
    return out(f'''
        curl -X POST "https://eu.posthog.com/api/projects/{digits(rng, 5)}/query/" \\
          -H "Authorization: Bearer {key}" -H "Content-Type: application/json" \\
          -d '{{"query": {{"kind": "HogQLQuery", "query": "select count() from events where event = \\u0027$pageview\\u0027"}}}}'
        ''', key)


@cred("launchdarkly-server-sdk-key-go")
def _o_ld(rng):
    key = "sdk-" + uid(rng)
    return out(f'''
        ldClient, err := ld.MakeClient("{key}", 5*time.Second)
        if err != nil {{
            log.Fatalf("launchdarkly: %v", err)
        }}
        defer ldClient.Close()
        ''', key)


# -- messaging, e-mail, notifications --

@cred("twilio-python-client-account-sid-auth-token")
def _m_twilio(rng):
    tok = hexa(rng, 32)
    return out(f'''
        from twilio.rest import Client

        account_sid = "AC{hexa(rng, 32)}"
        auth_token = "{tok}"
        client = Client(account_sid, auth_token)
        msg = client.messages.create(body="Your code is 481920", from_="+14155550143", to="+4915112345678")
        ''', tok)


@cred("twilio-api-key-secret-env-pair")
def _m_twilio_api(rng):
    sec = mixed(rng, 32)
    return out(f'''
        TWILIO_ACCOUNT_SID=AC{hexa(rng, 32)}
        TWILIO_API_KEY=SK{hexa(rng, 32)}
        TWILIO_API_SECRET={sec}
        TWILIO_VERIFY_SERVICE_SID=VA{hexa(rng, 32)}
        ''', sec)


@cred("sendgrid-curl-mail-send-bearer")
def _m_sendgrid(rng):
    key = "SG." + urlsafe(rng, 22) + "." + urlsafe(rng, 43)
    return out(f'''
        curl --request POST --url https://api.sendgrid.com/v3/mail/send \\
          --header "Authorization: Bearer {key}" --header 'Content-Type: application/json' \\
          --data '{{"personalizations":[{{"to":[{{"email":"qa@acme.example"}}]}}],"from":{{"email":"noreply@acme.example"}},"subject":"test","content":[{{"type":"text/plain","value":"hi"}}]}}'
        ''', key)


@cred("mailgun-node-client-key-and-domain")
def _m_mailgun(rng):
    key = hexa(rng, 32) + "-" + hexa(rng, 8) + "-" + hexa(rng, 8)
    return out(f'''
        const mailgun = new Mailgun(FormData);
        const mg = mailgun.client({{ username: 'api', key: '{key}', url: 'https://api.eu.mailgun.net' }});
        await mg.messages.create('mg.acme.example', {{ from: 'Acme <no-reply@mg.acme.example>', to: [to], subject, html }});
        ''', key)


@cred("postmark-server-token-header-rails-credentials-dump")
def _m_postmark(rng):
    tok = uid(rng)
    return out(f'''
        $ bin/rails credentials:show -e production
        secret_key_base: <%= ENV["SECRET_KEY_BASE"] %>
        postmark:
          api_token: {tok}
        ''', tok)


@cred("mailchimp-marketing-key-with-dc-suffix")
def _m_mailchimp(rng):
    key = hexa(rng, 32) + "-us" + str(rng.randint(2, 21))
    return out(f'''
        import mailchimp_marketing as MailchimpMarketing

        client = MailchimpMarketing.Client()
        client.set_config({{"api_key": "{key}", "server": "{key.split("-")[1]}"}})
        print(client.ping.get())
        ''', key)


@cred("resend-api-key-next-route-handler")
def _m_resend(rng):
    key = "re_" + mixed(rng, 8) + "_" + mixed(rng, 24)
    return out(f'''
        import {{ Resend }} from 'resend';

        const resend = new Resend('{key}');

        export async function POST() {{
          const {{ data, error }} = await resend.emails.send({{
            from: 'Acme <onboarding@acme.example>',
            to: ['delivered@resend.dev'],
            subject: 'Welcome',
            react: WelcomeEmail({{ firstName: 'Ana' }}),
          }});
        }}
        ''', key)


@cred("brevo-xkeysib-api-key-php")
def _m_brevo(rng):
    key = "xkeysib-" + hexa(rng, 64) + "-" + mixed(rng, 16)
    return out(f'''
        <?php
        $config = Brevo\\Client\\Configuration::getDefaultConfiguration()->setApiKey('api-key', '{key}');
        $apiInstance = new Brevo\\Client\\Api\\TransactionalEmailsApi(new GuzzleHttp\\Client(), $config);
        ''', key)


@cred("mailjet-api-key-and-secret-basic-curl")
def _m_mailjet(rng):
    sec = hexa(rng, 32)
    return out(f'''
        curl -s -X POST --user "{hexa(rng, 32)}:{sec}" https://api.mailjet.com/v3.1/send \\
          -H 'Content-Type: application/json' -d @payload.json
        ''', sec)


@cred("ses-smtp-credentials-csv-download")
def _m_ses(rng):
    pw = "B" + b64(rng, 32)[:43]
    return out(f'''
        IAM User Name,Smtp Username,Smtp Password
        ses-smtp-user.20260311-101523,{aws_id(rng)},{pw}
        ''', pw)


@cred("msmtprc-account-password-line")
def _m_msmtp(rng):
    pw = "".join(rng.choice(string.ascii_lowercase) for _ in range(16))
    spaced = " ".join(pw[i:i + 4] for i in range(0, 16, 4))
    return out(f'''
        defaults
        auth on
        tls on
        tls_trust_file /etc/ssl/certs/ca-certificates.crt
        logfile ~/.msmtp.log

        account gmail
        host smtp.gmail.com
        port 587
        from ana.k@gmail.com
        user ana.k@gmail.com
        password {spaced}

        account default : gmail
        ''', spaced)


@cred("postfix-sasl-passwd-relayhost-line")
def _m_postfix(rng):
    pw = safe(rng, 20)
    return out(f'''
        # /etc/postfix/sasl_passwd
        [smtp.mailgun.org]:587    postmaster@mg.acme.example:{pw}
        ''', pw)


@cred("ssmtp-conf-authpass")
def _m_ssmtp(rng):
    pw = person(rng)
    return out(f'''
        root=postmaster
        mailhub=mail.acme.lan:587
        AuthUser=nas@acme.lan
        AuthPass={pw}
        UseSTARTTLS=YES
        FromLineOverride=YES
        ''', pw)


@cred("nodemailer-create-transport-auth-pass")
def _m_nodemailer(rng):
    pw = mixed(rng, 20)
    return out(f'''
        const transporter = nodemailer.createTransport({{
          host: 'smtp.zoho.eu',
          port: 465,
          secure: true,
          auth: {{ user: 'billing@acme.example', pass: '{pw}' }},
        }});
        ''', pw)


@cred("swaks-command-auth-password-history")
def _m_swaks(rng):
    pw = safe(rng, 16)
    return out(f'''
        swaks --to ops@acme.example --from test@acme.example --server smtp.acme.example:587 --tls \\
              --auth LOGIN --auth-user test@acme.example --auth-password '{pw}' --header "Subject: relay test"
        ''', pw)


@cred("spring-mail-properties-password")
def _m_spring_mail(rng):
    pw = mixed(rng, 16)
    return out(f'''
        spring.mail.host=smtp.sendinblue.com
        spring.mail.port=587
        spring.mail.username=notifications@acme.example
        spring.mail.password={pw}
        spring.mail.properties.mail.smtp.starttls.enable=true
        ''', pw)


@cred("vonage-api-secret-sms-curl-form")
def _m_vonage(rng):
    sec = mixed(rng, 16)
    return out(f'''
        curl -X POST https://rest.nexmo.com/sms/json \\
          -d from=AcmeAlerts -d text="Server down" -d to=447700900000 \\
          -d api_key={hexa(rng, 8)} -d api_secret={sec}
        ''', sec)


@cred("plivo-auth-token-env")
def _m_plivo(rng):
    tok = mixed(rng, 40)
    return out(f'''
        PLIVO_AUTH_ID=MA{upper(rng, 18)}
        PLIVO_AUTH_TOKEN={tok}
        ''', tok)


@cred("telnyx-api-key-v2-header")
def _m_telnyx(rng):
    key = "KEY" + hexa(rng, 32).upper() + "_" + mixed(rng, 22)
    return out(f'''
        curl -X POST https://api.telnyx.com/v2/messages \\
          -H "Authorization: Bearer {key}" -H "Content-Type: application/json" \\
          -d '{{"from": "+13125550100", "to": "+13125550123", "text": "hello"}}'
        ''', key)


@cred("slack-app-level-token-socket-mode-env")
def _m_slack_xapp(rng):
    tok = f"xapp-1-A{upper(rng, 10)}-{digits(rng, 13)}-{hexa(rng, 64)}"
    bot = slack_token(rng)
    return out(f'''
        SLACK_APP_TOKEN={tok}
        SLACK_BOT_TOKEN={bot}
        SLACK_SIGNING_SECRET_FILE=/run/secrets/slack_signing
        ''', tok, bot)


@cred("discord-webhook-url-github-actions-notify")
def _m_discord_hook(rng):
    url = f"https://discord.com/api/webhooks/{digits(rng, 19)}/{urlsafe(rng, 68)}"
    return out(f'''
              - name: Notify Discord
                if: failure()
                run: |
                  curl -H "Content-Type: application/json" -d '{{"content": "Build failed on ${{{{ github.ref_name }}}}"}}' \\
                    "{url}"
        ''', url)


@cred("telegram-bot-token-send-message-url")
def _m_telegram(rng):
    tok = f"{digits(rng, 10)}:AA{urlsafe(rng, 33)}"
    return out(f'''
        #!/bin/sh
        # backup-notify.sh
        curl -s "https://api.telegram.org/bot{tok}/sendMessage" \\
             -d chat_id=-100{digits(rng, 10)} -d text="Backup $(date +%F) OK: $(du -sh /backup | cut -f1)"
        ''', tok)


@cred("teams-workflow-webhook-url-sig-param")
def _m_teams(rng):
    sig = urlsafe(rng, 43)
    url = (f"https://prod-{rng.randint(10, 99)}.westeurope.logic.azure.com:443/workflows/{hexa(rng, 32)}"
           f"/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={sig}")
    return out(f'''
        TEAMS_WEBHOOK_URL="{url}"
        ''', sig)


@cred("pushover-app-token-curl")
def _m_pushover(rng):
    tok = lower(rng, 30)
    return out(f'''
        curl -s --form-string "token={tok}" --form-string "user=u{lower(rng, 29)}" \\
             --form-string "message=UPS on battery" https://api.pushover.net/1/messages.json
        ''', tok)


@cred("pusher-channels-app-secret-laravel-env")
def _m_pusher(rng):
    sec = hexa(rng, 20)
    return out(f'''
        BROADCAST_CONNECTION=pusher
        PUSHER_APP_ID={digits(rng, 7)}
        PUSHER_APP_KEY={hexa(rng, 20)}
        PUSHER_APP_SECRET={sec}
        PUSHER_APP_CLUSTER=eu
        ''', sec)


@cred("ably-api-key-realtime-constructor")
def _m_ably(rng):
    sec = urlsafe(rng, 43)
    key = f"{urlsafe(rng, 6)}.{urlsafe(rng, 6)}:{sec}"
    return out(f'''
        const ably = new Ably.Realtime({{ key: '{key}', clientId: 'dashboard' }});
        ''', sec)


@cred("onesignal-rest-api-key-v2-header")
def _m_onesignal(rng):
    key = "os_v2_app_" + chars(rng, "abcdefghijklmnopqrstuvwxyz234567", 112)
    return out(f'''
        POST /notifications?c=push HTTP/1.1
        Host: api.onesignal.com
        Authorization: Key {key}
        Content-Type: application/json

        {{"app_id": "{uid(rng)}", "contents": {{"en": "Your order shipped"}}, "include_aliases": {{"external_id": ["u-1842"]}}}}
        ''', key)


# -- payments and SaaS tokens --

@cred("stripe-restricted-key-python-shell")
def _p_stripe_rk(rng):
    key = stripe_key(rng, "rk_live")
    return out(f'''
        >>> import stripe
        >>> stripe.api_key = "{key}"
        >>> stripe.Charge.list(limit=3)
        <ListObject list at 0x7f3a2c1e8f90> JSON: {{
        ''', key)


@cred("stripe-webhook-signing-secret-express")
def _p_stripe_whsec(rng):
    sec = "whsec_" + mixed(rng, 32)
    return out(f'''
        const endpointSecret = "{sec}";
        app.post('/webhook', express.raw({{type: 'application/json'}}), (req, res) => {{
          const event = stripe.webhooks.constructEvent(req.body, req.headers['stripe-signature'], endpointSecret);
        }});
        ''', sec)


@cred("paypal-client-credentials-curl-basic-user")
def _p_paypal(rng):
    sec = urlsafe(rng, 80)
    return out(f'''
        curl -v -X POST "https://api-m.paypal.com/v1/oauth2/token" \\
          -u "A{urlsafe(rng, 79)}:{sec}" \\
          -H "Content-Type: application/x-www-form-urlencoded" -d "grant_type=client_credentials"
        ''', sec)


@cred("square-access-token-production-env")
def _p_square(rng):
    tok = "EAAA" + urlsafe(rng, 60)
    return out(f'''
        SQUARE_ENVIRONMENT=production
        SQUARE_APPLICATION_ID=sq0idp-{urlsafe(rng, 22)}
        SQUARE_ACCESS_TOKEN={tok}
        ''', tok)


@cred("adyen-api-key-checkout-java-config")
def _p_adyen(rng):
    key = "AQE" + urlsafe(rng, 40) + "..." + urlsafe(rng, 60)
    return out(f'''
        Config config = new Config();
        config.setApiKey("{key}");
        config.setEnvironment(Environment.LIVE);
        config.setLiveEndpointUrlPrefix("{hexa(rng, 16)}-AcmeGmbH");
        Client client = new Client(config);
        ''', key)


@cred("mollie-live-api-key-php-client")
def _p_mollie(rng):
    key = "live_" + mixed(rng, 30)
    return out(f'''
        $mollie = new \\Mollie\\Api\\MollieApiClient();
        $mollie->setApiKey("{key}");
        $payment = $mollie->payments->create(["amount" => ["currency" => "EUR", "value" => "10.00"], "description" => "Order #12345"]);
        ''', key)


@cred("razorpay-key-id-and-secret-node")
def _p_razorpay(rng):
    sec = mixed(rng, 24)
    return out(f'''
        const instance = new Razorpay({{
          key_id: 'rzp_live_{mixed(rng, 14)}',
          key_secret: '{sec}',
        }});
        ''', sec)


@cred("paystack-secret-key-authorization-header")
def _p_paystack(rng):
    key = "sk_live_" + hexa(rng, 40)
    return out(f'''
        curl https://api.paystack.co/transaction/initialize \\
          -H "Authorization: Bearer {key}" -H "Content-Type: application/json" \\
          -d '{{"email": "customer@acme.example", "amount": "500000"}}' -X POST
        ''', key)


@cred("flutterwave-secret-key-env")
def _p_flutterwave(rng):
    key, enc = "FLWSECK-" + hexa(rng, 32) + "-X", hexa(rng, 24)
    return out(f'''
        FLW_PUBLIC_KEY=FLWPUBK-{hexa(rng, 32)}-X
        FLW_SECRET_KEY={key}
        FLW_ENCRYPTION_KEY={enc}
        ''', key, enc)


@cred("paddle-billing-api-key-sdk")
def _p_paddle(rng):
    key = "pdl_live_apikey_" + lower(rng, 26) + "_" + mixed(rng, 22) + "_" + mixed(rng, 3)
    return out(f'''
        import {{ Paddle, Environment }} from '@paddle/paddle-node-sdk';
        const paddle = new Paddle('{key}', {{ environment: Environment.production }});
        ''', key)


@cred("woocommerce-rest-consumer-secret-python")
def _p_woo(rng):
    cs = "cs_" + hexa(rng, 40)
    return out(f'''
        from woocommerce import API

        wcapi = API(
            url="https://shop.acme.example",
            consumer_key="ck_{hexa(rng, 40)}",
            consumer_secret="{cs}",
            version="wc/v3",
        )
        ''', cs)


@cred("shopify-admin-access-token-graphql-curl")
def _p_shopify(rng):
    tok = "shpat_" + hexa(rng, 32)
    return out(f'''
        curl -X POST https://acme-store.myshopify.com/admin/api/2026-01/graphql.json \\
          -H 'Content-Type: application/json' \\
          -H 'X-Shopify-Access-Token: {tok}' \\
          -d '{{"query": "{{ shop {{ name }} }}"}}'
        ''', tok)


@cred("hubspot-private-app-token-python")
def _p_hubspot(rng):
    tok = "pat-eu1-" + uid(rng)
    return out(f'''
        from hubspot import HubSpot
        api_client = HubSpot(access_token="{tok}")
        contacts = api_client.crm.contacts.basic_api.get_page(limit=10, archived=False)
        ''', tok)


@cred("sf-cli-sfdx-url-file-cat-then-login")
def _p_sfdx(rng):
    rt = "5Aep861" + urlsafe(rng, 80).replace("-", ".").replace("_", ".")
    return out(f'''
        $ cat sfdx-auth-url.txt
        force://PlatformCLI::{rt}@acme.my.salesforce.com
        $ sf org login sfdx-url --sfdx-url-file sfdx-auth-url.txt --alias prod
        ''', rt)


@cred("zendesk-api-token-basic-slash-token")
def _p_zendesk(rng):
    tok = mixed(rng, 40)
    return out(f'''
        curl https://acme.zendesk.com/api/v2/tickets.json?page[size]=100 \\
          -u ana@acme.example/token:{tok}
        ''', tok)


@cred("atlassian-api-token-jira-cli-config")
def _p_atlassian(rng):
    tok = "ATATT3xFfGF0" + urlsafe(rng, 170) + "=" + hexa(rng, 8).upper()
    return out(f'''
        # ~/.config/.jira/.config.yml
        installation: Cloud
        server: https://acme.atlassian.net
        login: ana@acme.example
        project:
          key: PLAT
        api_token: {tok}
        ''', tok)


@cred("notion-ntn-integration-token-python")
def _p_notion(rng):
    tok = "ntn_" + digits(rng, 11) + mixed(rng, 35)
    return out(f'''
        from notion_client import Client
        notion = Client(auth="{tok}")
        db = notion.databases.query(database_id="{hexa(rng, 32)}")
        ''', tok)


@cred("airtable-pat-curl-records")
def _p_airtable(rng):
    tok = "pat" + mixed(rng, 14) + "." + hexa(rng, 64)
    return out(f'''
        curl "https://api.airtable.com/v0/app{mixed(rng, 14)}/Inventory?maxRecords=3" \\
          -H "Authorization: Bearer {tok}"
        ''', tok)


@cred("asana-pat-python-client")
def _p_asana(rng):
    tok = f"2/{digits(rng, 16)}/{digits(rng, 16)}:{hexa(rng, 32)}"
    return out(f'''
        configuration = asana.Configuration()
        configuration.access_token = "{tok}"
        api_client = asana.ApiClient(configuration)
        ''', tok)


@cred("clickup-personal-token-header")
def _p_clickup(rng):
    tok = f"pk_{digits(rng, 8)}_{upper(rng, 32)}"
    return out(f'''
        GET https://api.clickup.com/api/v2/team
        Authorization: {tok}
        ''', tok)


@cred("figma-personal-access-token-env-script")
def _p_figma(rng):
    tok = "figd_" + urlsafe(rng, 40)
    return out(f'''
        FIGMA_TOKEN={tok} node scripts/export-icons.mjs --file {mixed(rng, 22)} --page Icons
        ''', tok)


@cred("okta-ssws-token-powershell-header")
def _p_okta(rng):
    tok = "00" + urlsafe(rng, 40)
    return out(f'''
        $headers = @{{ Authorization = "SSWS {tok}"; Accept = "application/json" }}
        Invoke-RestMethod -Uri "https://acme.okta.com/api/v1/users?limit=200" -Headers $headers
        ''', tok)


@cred("auth0-m2m-client-secret-management-token-request")
def _p_auth0(rng):
    sec = urlsafe(rng, 64)
    return out(f'''
        curl --request POST --url https://acme.eu.auth0.com/oauth/token \\
          --header 'content-type: application/json' \\
          --data '{{"client_id":"{mixed(rng, 32)}","client_secret":"{sec}","audience":"https://acme.eu.auth0.com/api/v2/","grant_type":"client_credentials"}}'
        ''', sec)


@cred("clerk-secret-key-env-local")
def _p_clerk(rng):
    key = "sk_live_" + mixed(rng, 40)
    return out(f'''
        NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_{b64url(rng, 30)}
        CLERK_SECRET_KEY={key}
        ''', key)


@cred("workos-api-key-ruby-initializer")
def _p_workos(rng):
    key = "sk_" + mixed(rng, 64)
    return out(f'''
        WorkOS.configure do |config|
          config.key = "{key}"
          config.timeout = 120
        end
        ''', key)


@cred("algolia-admin-api-key-indexing-script")
def _p_algolia(rng):
    key = hexa(rng, 32)
    return out(f'''
        const client = algoliasearch('{upper(rng, 10)}', '{key}');
        await client.saveObjects({{ indexName: 'products', objects: records }});
        ''', key)


@cred("contentful-cma-token-migration-cli")
def _p_contentful(rng):
    tok = "CFPAT-" + urlsafe(rng, 43)
    return out(f'''
        npx contentful-migration --space-id {lower(rng, 12)} --environment-id master \\
          --management-token {tok} migrations/2026-03-add-author.js
        ''', tok)


@cred("mapbox-secret-token-downloads-gradle")
def _p_mapbox(rng):
    tok = "sk.eyJ1IjoiYWNtZS1tb2JpbGUiLCJhIjoi" + mixed(rng, 24) + "In0." + urlsafe(rng, 22)
    return out(f'''
        # ~/.gradle/gradle.properties
        MAPBOX_DOWNLOADS_TOKEN={tok}
        org.gradle.jvmargs=-Xmx4g
        ''', tok)


@cred("postman-api-key-newman-run-collection-url")
def _p_postman(rng):
    key = "PMAK-" + hexa(rng, 24) + "-" + hexa(rng, 34)
    return out(f'''
        newman run "https://api.getpostman.com/collections/{digits(rng, 8)}-{uid(rng)}?apikey={key}" \\
          -e staging.postman_environment.json --reporters cli,junit
        ''', key)


@cred("docker-hub-pat-login-history")
def _p_dockerhub(rng):
    tok = "dckr_pat_" + urlsafe(rng, 27)
    return out(f'''
        $ echo {tok} | docker login -u acmebuild --password-stdin
        Login Succeeded
        ''', tok)


@cred("bitbucket-app-password-git-clone-url")
def _p_bitbucket(rng):
    tok = "ATBB" + mixed(rng, 28) + hexa(rng, 8).upper()
    return out(f'''
        git clone https://ana-k:{tok}@bitbucket.org/acme/legacy-billing.git
        ''', tok)


@cred("sonarcloud-user-token-maven-flag")
def _p_sonar(rng):
    tok = "squ_" + hexa(rng, 40)
    return out(f'''
        mvn -B verify org.sonarsource.scanner.maven:sonar-maven-plugin:sonar \\
          -Dsonar.projectKey=acme_inventory -Dsonar.organization=acme -Dsonar.token={tok}
        ''', tok)


@cred("snyk-auth-token-cli-config-json")
def _p_snyk(rng):
    tok = uid(rng)
    return out(jd({"api": tok, "org": "acme-platform", "disable-analytics": "1"}), tok)


@cred("dropbox-short-lived-token-python")
def _p_dropbox(rng):
    tok = "sl.u." + urlsafe(rng, 140)
    return out(f'''
        dbx = dropbox.Dropbox("{tok}")
        dbx.files_upload(open("report.pdf", "rb").read(), "/Reports/2026-Q1.pdf")
        ''', tok)


# -- mobile app configs --

@cred("google-services-json-current-key")
def _mb_gservices(rng):
    key = google_key(rng)
    return out(jd({"project_info": {"project_number": digits(rng, 12), "project_id": "acme-shop-app",
                                    "storage_bucket": "acme-shop-app.firebasestorage.app"},
                   "client": [{"client_info": {"mobilesdk_app_id": f"1:{digits(rng, 12)}:android:{hexa(rng, 16)}",
                                               "android_client_info": {"package_name": "com.acme.shop"}},
                               "oauth_client": [], "api_key": [{"current_key": key}],
                               "services": {"appinvite_service": {"other_platform_oauth_client": []}}}],
                   "configuration_version": "1"}), key)


@cred("info-plist-custom-backend-secret-key")
def _mb_plist(rng):
    sec = hexa(rng, 48)
    return out(f'''
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
            <key>CFBundleIdentifier</key>
            <string>com.acme.fieldapp</string>
            <key>CFBundleShortVersionString</key>
            <string>4.12.0</string>
            <key>ACMEBackendSharedSecret</key>
            <string>{sec}</string>
            <key>NSCameraUsageDescription</key>
            <string>Scan delivery barcodes</string>
        </dict>
        </plist>
        ''', sec)


@cred("android-keystore-properties-store-and-key-password")
def _mb_keystore(rng):
    p1, p2 = safe(rng, 18), safe(rng, 18)
    return out(f'''
        storeFile=../keys/upload-keystore.jks
        storePassword={p1}
        keyAlias=upload
        keyPassword={p2}
        ''', p1, p2)


@cred("gradle-properties-signing-store-password-and-api")
def _mb_gradle(rng):
    pw = mixed(rng, 20)
    return out(f'''
        org.gradle.jvmargs=-Xmx4096m -Dfile.encoding=UTF-8
        android.useAndroidX=true
        RELEASE_STORE_FILE=release.keystore
        RELEASE_STORE_PASSWORD={pw}
        RELEASE_KEY_ALIAS=acme
        ''', pw)


@cred("fastlane-env-match-password-and-asc-key-content")
def _mb_fastlane(rng):
    pw = phrase(rng, 4)
    first = pem_first(rng, "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg")
    body = pem(rng, first, "PRIVATE KEY", 3).replace("\n", "\\n")
    return out(f'''
        MATCH_PASSWORD="{pw}"
        APP_STORE_CONNECT_API_KEY_KEY_ID="{upper(rng, 10)}"
        APP_STORE_CONNECT_API_KEY_ISSUER_ID="{uid(rng)}"
        APP_STORE_CONNECT_API_KEY_KEY="{body}"
        ''', pw, first)


@cred("asc-authkey-p8-file-in-repo")
def _mb_p8(rng):
    first = pem_first(rng, "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg")
    return "$ cat ios/AuthKey_" + upper(rng, 10) + ".p8\n" + pem(rng, first, "PRIVATE KEY", 4) + "\n", (first,)


@cred("expo-eas-json-env-token-in-build-profile")
def _mb_eas(rng):
    tok = urlsafe(rng, 40)
    return out(jd({"cli": {"version": ">= 16.0.0"}, "build": {"production": {"env": {
        "SENTRY_ORG": "acme", "EXPO_TOKEN": tok},
        "autoIncrement": True}}, "submit": {"production": {}}}), tok)


@cred("react-native-config-env-production-keys")
def _mb_rnconfig(rng):
    key = "sk_" + hexa(rng, 32)
    return out(f'''
        API_URL=https://api.acme.example
        REVENUECAT_SECRET_KEY={key}
        REVENUECAT_IOS_PUBLIC_KEY=appl_{mixed(rng, 27)}
        ''', key)


@cred("flutter-dart-define-from-file-prod-json-deepseek")
def _mb_dart(rng):
    key = "sk-" + hexa(rng, 32)
    return out(jd({"API_BASE": "https://api.acme.example", "DEEPSEEK_API_KEY": key, "FLAVOR": "prod"}), key)


@cred("firebase-fcm-legacy-server-key-php")
def _mb_fcm(rng):
    key = "AAAA" + urlsafe(rng, 7) + ":APA91b" + urlsafe(rng, 134)
    return out(f'''
        $headers = [
            'Authorization: key={key}',
            'Content-Type: application/json',
        ];
        curl_setopt($ch, CURLOPT_URL, 'https://fcm.googleapis.com/fcm/send');
        ''', key)


# -- HTTP traces and client exports --

@cred("har-request-cookie-session-and-csrf")
def _h_har_cookie(rng):
    sess = urlsafe(rng, 48)
    return out(jd({"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "143.0"}, "entries": [{
        "startedDateTime": when(rng), "time": 182,
        "request": {"method": "GET", "url": "https://admin.acme.example/api/users?page=2", "httpVersion": "HTTP/2",
                    "cookies": [{"name": "__Host-session", "value": sess}],
                    "headers": [{"name": "Cookie", "value": f"__Host-session={sess}; theme=dark"},
                                {"name": "X-Request-Id", "value": uid(rng)}],
                    "queryString": [{"name": "page", "value": "2"}], "headersSize": -1, "bodySize": 0},
        "response": {"status": 200, "statusText": "OK", "httpVersion": "HTTP/2", "cookies": [], "headers": [],
                     "content": {"size": 5120, "mimeType": "application/json"}, "redirectURL": "",
                     "headersSize": -1, "bodySize": 5120}, "cache": {}, "timings": {"wait": 170}}]}}), sess)


@cred("har-post-data-json-login-password-field")
def _h_har_post(rng):
    pw = person(rng)
    body = json.dumps({"username": "g.petrov", "password": pw, "remember": True})
    return out(jd({"request": {"method": "POST", "url": "https://intranet.acme.lan/api/session",
                               "httpVersion": "HTTP/1.1",
                               "headers": [{"name": "Content-Type", "value": "application/json"}],
                               "postData": {"mimeType": "application/json", "text": body}},
                   "response": {"status": 201, "statusText": "Created"}}), pw)


@cred("devtools-copy-as-fetch-bearer")
def _h_fetch(rng):
    tok = jwt(rng, {"sub": uid(rng), "scope": "admin:all", "exp": epoch(rng), "iss": "https://auth.acme.example"},
              "RS256")
    return out(f'''
        fetch("https://api.acme.example/v2/admin/export", {{
          "headers": {{
            "accept": "application/json",
            "authorization": "Bearer {tok}",
            "sec-fetch-mode": "cors"
          }},
          "referrer": "https://admin.acme.example/",
          "body": null,
          "method": "GET",
          "mode": "cors",
          "credentials": "include"
        }});
        ''', tok)


@cred("devtools-copy-as-powershell-websession-cookie")
def _h_pwsh(rng):
    sess = hexa(rng, 64)
    return out(f'''
        $session = New-Object Microsoft.PowerShell.Commands.WebRequestSession
        $session.UserAgent = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/141.0.0.0 Safari/537.36"
        $session.Cookies.Add((New-Object System.Net.Cookie("connect.sid", "s%3A{sess}", "/", "crm.acme.example")))
        Invoke-WebRequest -UseBasicParsing -Uri "https://crm.acme.example/api/leads" -WebSession $session
        ''', sess)


@cred("httpie-session-json-auth-and-header")
def _h_httpie(rng):
    pw = safe(rng, 18)
    return out(jd({"__meta__": {"about": "HTTPie session file", "help": "https://httpie.io/docs#sessions",
                                "httpie": "3.2.4"},
                   "auth": {"type": "basic", "username": "ops", "password": pw},
                   "cookies": [], "headers": [{"name": "Accept", "value": "application/json"}]}, 4), pw)


@cred("wget-http-password-flag-mirror")
def _h_wget(rng):
    pw = safe(rng, 14)
    return out(f'''
        wget --mirror --no-parent --http-user=mirror --http-password={pw} https://repo.partner.example/firmware/
        ''', pw)


@cred("postman-environment-export-secret-type-value")
def _h_postman_env(rng):
    key = "sk_test_51" + mixed(rng, 97)
    return out(jd({"id": uid(rng), "name": "Stripe sandbox", "values": [
        {"key": "baseUrl", "value": "https://api.stripe.com", "type": "default", "enabled": True},
        {"key": "secretKey", "value": key, "type": "secret", "enabled": True}],
        "_postman_variable_scope": "environment", "_postman_exported_at": when(rng),
        "_postman_exported_using": "Postman/11.58.0"}), key)


@cred("postman-collection-auth-apikey-inline")
def _h_postman_coll(rng):
    key = hexa(rng, 32)
    return out(jd({"info": {"_postman_id": uid(rng), "name": "Weather",
                            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
                   "auth": {"type": "apikey", "apikey": [{"key": "value", "value": key, "type": "string"},
                                                         {"key": "key", "value": "appid", "type": "string"},
                                                         {"key": "in", "value": "query", "type": "string"}]},
                   "item": [{"name": "Current", "request": {"method": "GET",
                                                            "url": "https://api.openweathermap.org/data/2.5/weather?q=Oslo"}}]}),
               key)


@cred("insomnia-export-yaml-basic-auth")
def _h_insomnia(rng):
    pw = safe(rng, 16)
    return out(f'''
        type: collection.insomnia.rest/5.0
        name: Internal APIs
        collection:
          - url: https://jenkins.acme.lan/api/json
            name: Jenkins jobs
            method: GET
            authentication:
              type: basic
              useISO88591: false
              disabled: false
              username: release-bot
              password: {pw}
        ''', pw)


@cred("bruno-bru-file-auth-bearer-block")
def _h_bruno(rng):
    tok = "glpat-" + urlsafe(rng, 20)
    return out(f'''
        meta {{
          name: List merge requests
          type: http
          seq: 3
        }}

        get {{
          url: https://gitlab.acme.io/api/v4/projects/412/merge_requests?state=opened
          body: none
          auth: bearer
        }}

        auth:bearer {{
          token: {tok}
        }}
        ''', tok)


@cred("hurl-file-basic-auth-section")
def _h_hurl(rng):
    pw = safe(rng, 14)
    return out(f'''
        GET https://nexus.acme.lan/service/rest/v1/status/check
        [BasicAuth]
        admin: {pw}
        HTTP 200
        ''', pw)


@cred("k6-script-login-credentials-const")
def _h_k6(rng):
    pw = person(rng)
    return out(f'''
        import http from 'k6/http';
        import {{ check }} from 'k6';

        const USER = 'loadtest@acme.example';
        const PASS = '{pw}';

        export default function () {{
          const res = http.post('https://staging.acme.example/api/login', JSON.stringify({{ email: USER, password: PASS }}),
            {{ headers: {{ 'Content-Type': 'application/json' }} }});
          check(res, {{ 'logged in': (r) => r.status === 200 }});
        }}
        ''', pw)


@cred("raw-http-request-proxy-authorization-basic")
def _h_proxy_auth(rng):
    enc = basic("svc-crawler", safe(rng, 14))
    return out(f'''
        CONNECT api.openai.com:443 HTTP/1.1
        Host: api.openai.com:443
        Proxy-Authorization: Basic {enc}
        User-Agent: python-httpx/0.28.1
        ''', enc)


@cred("mitmproxy-dump-x-api-key-request")
def _h_mitm(rng):
    key = "pplx-" + mixed(rng, 48)
    return out(f'''
        {hms(rng)} 10.0.2.15:51822: POST https://api.perplexity.ai/chat/completions
            Host: api.perplexity.ai
            Authorization: Bearer {key}
            Content-Type: application/json
         << 200 OK 2.4k
        ''', key)


# -- databases, SQL, JDBC/ODBC, LDAP --

@cred("pgpass-multiple-lines-one-literal")
def _d_pgpass(rng):
    pw = safe(rng, 20)
    return out(f'''
        # hostname:port:database:username:password
        localhost:5432:*:postgres:*
        pg-analytics.internal:5432:warehouse:etl_loader:{pw}
        ''', pw)


@cred("my-cnf-client-section-password")
def _d_mycnf(rng):
    pw = symbolic(rng, 18, "!#%+-=@_")
    return out(f'''
        [client]
        user=backup
        password="{pw}"
        host=127.0.0.1

        [mysqldump]
        single-transaction
        quick
        ''', pw)


@cred("mysql-login-path-print-all-unmasked")
def _d_mysql_create(rng):
    pw = safe(rng, 16)
    return out(f'''
        mysql> CREATE USER 'reporting'@'10.%' IDENTIFIED BY '{pw}';
        Query OK, 0 rows affected (0.02 sec)
        mysql> GRANT SELECT ON shop.* TO 'reporting'@'10.%';
        ''', pw)


@cred("postgres-alter-role-password-psql-history")
def _d_pg_alter(rng):
    pw = safe(rng, 20)
    return out(f'''
        SELECT now();
        \\du
        ALTER ROLE metabase WITH LOGIN PASSWORD '{pw}';
        \\q
        ''', pw)


@cred("sql-dump-users-table-plaintext-password-column")
def _d_dump(rng):
    p1, p2 = person(rng), person(rng)
    return out(f'''
        --
        -- Dumping data for table `tbl_users`
        --

        LOCK TABLES `tbl_users` WRITE;
        INSERT INTO `tbl_users` (`id`, `login`, `pass`, `email`, `role`) VALUES (1,'admin','{p1}','it@acme.example','admin'),(2,'kasse1','{p2}','kasse1@acme.example','pos');
        UNLOCK TABLES;
        ''', p1, p2)


@cred("oracle-create-database-link-identified-by")
def _d_oracle_link(rng):
    pw = upper(rng, 14)
    return out(f'''
        CREATE DATABASE LINK erp_link
          CONNECT TO erp_reader IDENTIFIED BY "{pw}"
          USING '(DESCRIPTION=(ADDRESS=(PROTOCOL=TCP)(HOST=erp-db01)(PORT=1521))(CONNECT_DATA=(SERVICE_NAME=ERPPRD)))';
        ''', pw)


@cred("snowflake-create-user-password-worksheet")
def _d_snowflake(rng):
    pw = safe(rng, 18)
    return out(f'''
        USE ROLE USERADMIN;
        CREATE USER dbt_ci PASSWORD = '{pw}' DEFAULT_ROLE = TRANSFORMER MUST_CHANGE_PASSWORD = FALSE TYPE = LEGACY_SERVICE;
        GRANT ROLE TRANSFORMER TO USER dbt_ci;
        ''', pw)


@cred("mongosh-create-user-pwd-field")
def _d_mongo(rng):
    pw = mixed(rng, 20)
    return out(f'''
        test> use admin
        admin> db.createUser({{ user: "grafana", pwd: "{pw}", roles: [ {{ role: "clusterMonitor", db: "admin" }} ] }})
        {{ ok: 1 }}
        ''', pw)


@cred("redis-cli-a-flag-warning-output")
def _d_redis(rng):
    pw = mixed(rng, 32)
    return out(f'''
        $ redis-cli -h cache-01 -a {pw} INFO keyspace
        Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.
        # Keyspace
        db0:keys=18422,expires=18003,avg_ttl=712333
        ''', pw)


@cred("sqlcmd-p-flag-sql-agent-job-step")
def _d_sqlcmd(rng):
    pw = symbolic(rng, 16, "!#%+-=@_")
    return out(f'''
        sqlcmd -S tcp:sql-rpt01,1433 -U sa -P "{pw}" -d ReportServer -Q "EXEC dbo.usp_RefreshSnapshots" -b
        ''', pw)


@cred("jdbc-sqlserver-url-password-property")
def _d_jdbc_mssql(rng):
    pw = safe(rng, 18)
    return out(f'''
        spring.datasource.url=jdbc:sqlserver://sqlprod.corp.acme.lan:1433;databaseName=HR;user=hr_app;password={pw};encrypt=true;trustServerCertificate=false
        ''', pw)


@cred("jdbc-oracle-thin-user-slash-password-url")
def _d_jdbc_oracle(rng):
    pw = upper(rng, 12)
    return out(f'''
        <Resource name="jdbc/ERP" auth="Container" type="javax.sql.DataSource"
                  driverClassName="oracle.jdbc.OracleDriver"
                  url="jdbc:oracle:thin:erp_app/{pw}@//erp-db01.acme.lan:1521/ERPPRD"
                  maxTotal="20" maxIdle="5"/>
        ''', pw)


@cred("jdbc-databricks-pwd-token-url")
def _d_jdbc_databricks(rng):
    tok = "dapi" + hexa(rng, 32)
    return out(f'''
        jdbc:databricks://adb-{digits(rng, 16)}.7.azuredatabricks.net:443/default;transportMode=http;ssl=1;httpPath=/sql/1.0/warehouses/{hexa(rng, 16)};AuthMech=3;UID=token;PWD={tok}
        ''', tok)


@cred("jdbc-redshift-dbeaver-connection-line")
def _d_jdbc_redshift(rng):
    pw = safe(rng, 16)
    return out(f'''
        jdbc:redshift://analytics.c1xyz2abc.eu-west-1.redshift.amazonaws.com:5439/dev?user=bi_reader&password={pw}&ssl=true
        ''', pw)


@cred("jdbc-clickhouse-and-trino-properties")
def _d_jdbc_ch(rng):
    p1, p2 = safe(rng, 16), safe(rng, 16)
    return out(f'''
        clickhouse.url=jdbc:clickhouse://ch01.acme.lan:8443/events?ssl=true
        clickhouse.user=ingest
        clickhouse.password={p1}
        trino.url=jdbc:trino://trino.acme.lan:443/hive?SSL=true&user=etl&password={p2}
        ''', p1, p2)


@cred("odbc-ini-dsn-pwd-entry")
def _d_odbc(rng):
    pw = safe(rng, 16)
    return out(f'''
        [WAREHOUSE]
        Driver      = /opt/microsoft/msodbcsql18/lib64/libmsodbcsql-18.5.so.1.1
        Server      = tcp:dwh.acme.lan,1433
        Database    = DWH
        UID         = etl_user
        PWD         = {pw}
        Encrypt     = yes
        ''', pw)


@cred("pgbouncer-userlist-txt-plain")
def _d_pgbouncer(rng):
    pw = mixed(rng, 22)
    return out(f'''
        "app" "{pw}"
        "stats" "SCRAM-SHA-256$4096:{b64(rng, 16)}${b64(rng, 32)}:{b64(rng, 32)}"
        ''', pw)


@cred("pgbackrest-conf-repo-s3-key-secret")
def _d_pgbackrest(rng):
    sk = aws_secret(rng)
    return out(f'''
        [global]
        repo1-type=s3
        repo1-s3-bucket=acme-pg-backups
        repo1-s3-endpoint=s3.eu-central-1.amazonaws.com
        repo1-s3-region=eu-central-1
        repo1-s3-key={aws_id(rng)}
        repo1-s3-key-secret={sk}
        repo1-retention-full=4
        ''', sk)


@cred("ldapsearch-w-flag-history-line")
def _d_ldapsearch(rng):
    pw = safe(rng, 16)
    return out(f'''
        ldapsearch -H ldaps://dc01.corp.acme.lan -D "CN=svc_ldapread,OU=Service,DC=corp,DC=acme,DC=lan" -w '{pw}' -b "DC=corp,DC=acme,DC=lan" "(sAMAccountName=ana.k)" memberOf
        ''', pw)


@cred("sssd-domain-section-bind-authtok-password-type")
def _d_sssd(rng):
    pw = safe(rng, 18)
    return out(f'''
        [domain/corp.acme.lan]
        id_provider = ldap
        auth_provider = ldap
        ldap_uri = ldaps://ldap.corp.acme.lan
        ldap_search_base = dc=corp,dc=acme,dc=lan
        ldap_default_bind_dn = cn=sssd-bind,ou=services,dc=corp,dc=acme,dc=lan
        ldap_default_authtok_type = password
        ldap_default_authtok = {pw}
        ''', pw)


@cred("nslcd-conf-bindpw")
def _d_nslcd(rng):
    pw = mixed(rng, 16)
    return out(f'''
        uri ldap://ldap.acme.lan/
        base dc=acme,dc=lan
        binddn cn=nslcd,ou=system,dc=acme,dc=lan
        bindpw {pw}
        ssl start_tls
        ''', pw)


@cred("python-ldap3-connection-simple-bind")
def _d_ldap3(rng):
    pw = safe(rng, 16)
    return out(f'''
        from ldap3 import Server, Connection, ALL
        server = Server("ldaps://ad.acme.lan", get_info=ALL)
        conn = Connection(server, user="ACME\\\\svc_hr_sync", password="{pw}", auto_bind=True)
        conn.search("OU=Staff,DC=acme,DC=lan", "(objectClass=person)", attributes=["mail", "department"])
        ''', pw)


# -- Windows --

@cred("reg-export-winlogon-default-password")
def _w_winlogon(rng):
    pw = person(rng)
    return out(f'''
        Windows Registry Editor Version 5.00

        [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon]
        "AutoAdminLogon"="1"
        "DefaultUserName"="kiosk"
        "DefaultDomainName"="LOBBY-PC01"
        "DefaultPassword"="{pw}"
        ''', pw)


@cred("unattend-xml-autologon-plaintext-password")
def _w_unattend(rng):
    pw = symbolic(rng, 14, "!#%+-=@_")
    return out(f'''
        <AutoLogon>
            <Password>
                <Value>{pw}</Value>
                <PlainText>true</PlainText>
            </Password>
            <Enabled>true</Enabled>
            <LogonCount>1</LogonCount>
            <Username>Administrator</Username>
        </AutoLogon>
        ''', pw)


@cred("cmdkey-add-pass-batch-file")
def _w_cmdkey(rng):
    pw = safe(rng, 14)
    return out(f'''
        @echo off
        cmdkey /add:fileserver.corp.acme.lan /user:CORP\\scan2folder /pass:{pw}
        net use S: \\\\fileserver.corp.acme.lan\\scans /persistent:yes
        ''', pw)


@cred("net-use-inline-password-logon-script")
def _w_netuse(rng):
    pw = person(rng)
    return out(f'''
        REM logon.bat - maps department shares
        net use P: \\\\nas01\\projects {pw} /user:NAS01\\projects /persistent:no
        ''', pw)


@cred("pwsh-securestring-plaintext-exo-credential-object")
def _w_securestring(rng):
    pw = symbolic(rng, 16, "!#%+-=@_")
    return out(f'''
        $secpass = ConvertTo-SecureString '{pw}' -AsPlainText -Force
        $cred = New-Object System.Management.Automation.PSCredential ('CORP\\svc_exchange', $secpass)
        Connect-ExchangeOnline -Credential $cred -ShowBanner:$false
        ''', pw)


@cred("schtasks-create-ru-rp-password")
def _w_schtasks(rng):
    pw = safe(rng, 14)
    return out(f'''
        schtasks /Create /TN "Nightly ERP export" /TR "C:\\jobs\\erp_export.cmd" /SC DAILY /ST 02:30 /RU CORP\\svc_erp /RP {pw}
        ''', pw)


@cred("gpp-groups-xml-cpassword")
def _w_gpp(rng):
    cp = b64(rng, 32).rstrip("=")
    return out(f'''
        <?xml version="1.0" encoding="utf-8"?>
        <Groups clsid="{{3125E937-EB16-4b4c-9934-544FC6D24D26}}">
          <User clsid="{{DF5F1855-51E5-4d24-8B1A-D9BDE98BA1D1}}" name="LocalAdmin" image="2" changed="2019-04-11 09:12:33" uid="{{{uid(rng).upper()}}}">
            <Properties action="U" newName="" fullName="" description="" cpassword="{cp}" changeLogon="0" noChange="1" neverExpires="1" acctDisabled="0" userName="LocalAdmin"/>
          </User>
        </Groups>
        ''', cp)


@cred("iis-applicationhost-processmodel-password")
def _w_iis(rng):
    pw = safe(rng, 16)
    return out(f'''
        <applicationPools>
            <add name="LegacyPortal" managedRuntimeVersion="v4.0">
                <processModel identityType="SpecificUser" userName="CORP\\svc_portal" password="{pw}" />
            </add>
        </applicationPools>
        ''', pw)


@cred("web-config-connectionstrings-user-id-password")
def _w_webconfig(rng):
    pw = safe(rng, 16)
    return out(f'''
        <connectionStrings>
          <add name="DefaultConnection"
               connectionString="Data Source=SQL01\\PROD;Initial Catalog=Portal;User ID=portal_app;Password={pw};MultipleActiveResultSets=True"
               providerName="System.Data.SqlClient" />
        </connectionStrings>
        ''', pw)


@cred("sc-exe-config-service-password")
def _w_sc(rng):
    pw = safe(rng, 16)
    return out(f'''
        C:\\> sc.exe config "AcmeSyncAgent" obj= "CORP\\svc_sync" password= "{pw}"
        [SC] ChangeServiceConfig SUCCESS
        ''', pw)


@cred("windows-event-4688-command-line-password")
def _w_event(rng):
    pw = safe(rng, 14)
    return out(f'''
        Log Name:      Security
        Source:        Microsoft-Windows-Security-Auditing
        Event ID:      4688
        Task Category: Process Creation
        Process Information:
            New Process Name:   C:\\Windows\\System32\\net.exe
            Process Command Line:   net  user helpdesk2 {pw} /add /domain
        ''', pw)


# -- crash reports and logs --

@cred("electron-crashpad-annotation-env-token")
def _x_crashpad(rng):
    tok = gh_token(rng, "gho")
    return out(f'''
        Crash Annotations:
          _productName: Acme Desktop
          _version: 3.8.1
          process_type: renderer
          env_GH_TOKEN: {tok}
          total-discardable-memory-allocated: 0
        ''', tok)


@cred("android-logcat-okhttp-authorization-header")
def _x_logcat(rng):
    tok = "Bearer " + urlsafe(rng, 86)
    return out(f'''
        03-11 {hms(rng)}.412  8123  8190 I okhttp.OkHttpClient: --> GET https://api.acme.example/v3/me
        03-11 {hms(rng)}.412  8123  8190 I okhttp.OkHttpClient: Authorization: {tok}
        03-11 {hms(rng)}.413  8123  8190 I okhttp.OkHttpClient: --> END GET
        ''', tok[7:])


@cred("macos-ips-crash-report-environment-excerpt")
def _x_ips(rng):
    key = anthropic_key(rng)
    return out(f'''
        Process:               node [{rng.randint(1000, 99999)}]
        Path:                  /opt/homebrew/Cellar/node/24.8.0/bin/node
        Exception Type:        EXC_CRASH (SIGABRT)
        Termination Reason:    Namespace SIGNAL, Code 6 Abort trap: 6
        Application Specific Information:
        FATAL ERROR: Reached heap limit Allocation failed
        Environment: ANTHROPIC_API_KEY={key} TERM_PROGRAM=iTerm.app
        ''', key)


@cred("nodejs-unhandled-rejection-axios-config-dump")
def _x_axios(rng):
    key = "sk_live_" + hexa(rng, 48)
    return out(f'''
        AxiosError: Request failed with status code 429
            at settle (/app/node_modules/axios/dist/node/axios.cjs:2053:12)
          config: {{
            url: 'https://api.elevenlabs.io/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM',
            method: 'post',
            headers: Object [AxiosHeaders] {{
              Accept: 'audio/mpeg',
              'Content-Type': 'application/json',
              'xi-api-key': '{key}'
            }},
          }},
        ''', key)


@cred("go-panic-struct-print-dsn")
def _x_go(rng):
    pw = safe(rng, 16)
    return out(f'''
        panic: dial tcp 10.3.1.7:5432: connect: connection refused

        goroutine 1 [running]:
        main.mustDB({{Host:"10.3.1.7" Port:5432 User:"ledger" Password:"{pw}" Name:"ledger" SSLMode:"verify-full"}})
        \t/src/cmd/ledger/main.go:88 +0x1c5
        ''', pw)


# -- git credential helpers and URLs with userinfo --

@cred("git-credential-fill-output")
def _g_fill(rng):
    tok = gh_token(rng)
    return out(f'''
        $ printf "protocol=https\\nhost=github.com\\n\\n" | git credential fill
        protocol=https
        host=github.com
        username=ana-k
        password={tok}
        ''', tok)


@cred("gitconfig-url-insteadof-with-token")
def _g_insteadof(rng):
    tok = "glpat-" + urlsafe(rng, 20)
    return out(f'''
        [user]
            name = Ana K
            email = ana@acme.example
        [url "https://oauth2:{tok}@gitlab.acme.io/"]
            insteadOf = https://gitlab.acme.io/
        ''', tok)


@cred("git-remote-v-output-with-pat")
def _g_remote(rng):
    tok = gh_fine(rng)
    return out(f'''
        $ git remote -v
        origin\thttps://x-access-token:{tok}@github.com/acme/infra.git (fetch)
        origin\thttps://x-access-token:{tok}@github.com/acme/infra.git (push)
        ''', tok)


@cred("gcm-plaintext-credential-store-file")
def _g_gcm(rng):
    tok = mixed(rng, 52).lower()
    return out(f'''
        $ cat ~/.gcm/store/git/https/dev.azure.com/acme/ana@acme.example.credential
        {tok}
        service=https://dev.azure.com/acme
        account=ana@acme.example
        ''', tok)


@cred("amqp-url-celery-broker-settings")
def _u_amqp(rng):
    pw = safe(rng, 18)
    return out(f'''
        CELERY_BROKER_URL = "amqps://worker:{pw}@b-{uid(rng)}.mq.eu-west-1.amazonaws.com:5671/orders"
        CELERY_RESULT_BACKEND = "redis://cache:6379/2"
        ''', pw)


@cred("mqtt-url-zigbee-bridge-flag")
def _u_mqtt(rng):
    pw = mixed(rng, 16)
    return out(f'''
        ./tasmota-bridge --broker mqtts://sensors:{pw}@mqtt.home.lan:8883 --topic tele/+/SENSOR
        ''', pw)


@cred("ftp-url-in-cron-lftp-mirror")
def _u_ftp(rng):
    pw = safe(rng, 14)
    return out(f'''
        15 3 * * * lftp -e "mirror -R /var/www/export /incoming; quit" ftp://acme_upload:{pw}@ftp.wholesaler.example
        ''', pw)


@cred("smb-url-in-fstab-credentials-inline")
def _u_fstab(rng):
    pw = safe(rng, 14)
    return out(f'''
        //nas01/media  /mnt/media  cifs  username=plex,password={pw},uid=1000,gid=1000,vers=3.1.1  0  0
        ''', pw)


@cred("rtmp-stream-key-obs-service-json")
def _u_rtmp(rng):
    key = "-".join(lower(rng, 4) for _ in range(5))
    return out(jd({"settings": {"bwtest": False, "key": key, "server": "rtmp://a.rtmp.youtube.com/live2",
                                "service": "YouTube - RTMPS"}, "type": "rtmp_common"}), key)


@cred("webdav-url-davfs-secrets-line")
def _u_davfs(rng):
    pw = urlsafe(rng, 29)
    return out(f'''
        # /etc/davfs2/secrets
        https://cloud.acme.example/remote.php/dav/files/ana/  ana  {pw}
        ''', pw)


# -- people writing passwords in prose, many languages and scripts --

@cred("prose-spanish-mx-whatsapp-la-contra-del-modem")
def _l_es_mx(rng):
    pw = person(rng)
    return out(f'''
        [{day(rng)} 21:14] Tía Lupe: mijo ya llegó el técnico del internet
        [{day(rng)} 21:15] Tía Lupe: dice que la contra del módem ahora es {pw}
        [{day(rng)} 21:15] Beto: órale, ya quedó, gracias tía
        ''', pw)


@cred("prose-portuguese-pt-email-palavra-passe-provisoria")
def _l_pt_pt(rng):
    pw = mixed(rng, 10)
    return out(f'''
        Assunto: Acesso ao portal de faturação

        Bom dia Sr. Figueiredo,
        Conforme combinado por telefone, segue a palavra-passe provisória para o portal: {pw}
        Ser-lhe-á pedido que a altere no primeiro acesso.
        Com os melhores cumprimentos,
        Serviço de Apoio
        ''', pw)


@cred("prose-french-quebec-texto-mot-de-passe-du-wifi")
def _l_fr_qc(rng):
    pw = person(rng)
    return out(f'''
        Allo! C'est Mélanie du chalet. Le wifi c'est « ChaletLac-5G » pis le mot de passe c'est {pw}. Bonne fin de semaine!
        ''', pw)


@cred("prose-german-swiss-teams-zugangsdaten-fuers-kundenportal")
def _l_de_ch(rng):
    pw = symbolic(rng, 12, "!#%+-=@_")
    return out(f'''
        Grüezi Reto
        Hier die Zugangsdaten fürs Kundenportal, bitte nicht weiterleiten:
        Benutzer: r.ammann
        Kennwort: {pw}
        Merci vielmal und en schöne Tag
        ''', pw)


@cred("prose-dutch-flemish-sms-code-van-de-kluis")
def _l_nl_be(rng):
    pw = digits(rng, 8)
    return out(f'''
        Hoi Lotte, de code van de sleutelkluis aan de voordeur is {pw}, sleutel terug in de kluis bij vertrek aub. Groetjes, Wim
        ''', pw)


@cred("prose-italian-ticket-credenziali-di-accesso")
def _l_it(rng):
    pw = mixed(rng, 12)
    return out(f'''
        Ticket #INC-{digits(rng, 6)} — Stato: In lavorazione
        Nota dell'operatore: l'utente ha ricevuto le nuove credenziali di accesso al gestionale
        (utente: m.rossi, password temporanea: {pw}); si consiglia il cambio al primo login.
        ''', pw)


@cred("prose-catalan-correu-contrasenya-del-campus")
def _l_ca(rng):
    pw = person(rng)
    return out(f'''
        Hola Jordi,
        T'envio la contrasenya del campus virtual perquè puguis entrar mentre estic de baixa: {pw}
        Gràcies per cobrir-me!
        Núria
        ''', pw)


@cred("prose-basque-mezua-pasahitza-da")
def _l_eu(rng):
    pw = person(rng)
    return out(f'''
        Kaixo Ane! Ikastolako wifi-aren pasahitza hau da: {pw} — ez zabaldu, mesedez.
        ''', pw)


@cred("prose-galician-chat-contrasinal")
def _l_gl(rng):
    pw = person(rng)
    return out(f'''
        Xoán: oe, cal era o contrasinal da conta de Netflix da casa?
        Uxía: {pw} (maiúscula ao principio)
        ''', pw)


@cred("prose-polish-discord-haslo-do-serwera")
def _l_pl(rng):
    pw = person(rng)
    return out(f'''
        kuba_dev — dziś o 20:41
        ej ziomki hasło do serwera mc na weekend: {pw} nie wrzucajcie na główny kanał xd
        ''', pw)


@cred("prose-czech-sms-heslo-k-uctu")
def _l_cs(rng):
    pw = mixed(rng, 10)
    return out(f'''
        Ahoj Petře, heslo k účtu na e-shopu jsem změnila na {pw}, tak si ho někam poznač. Jana
        ''', pw)


@cred("prose-hungarian-email-jelszavad")
def _l_hu(rng):
    pw = mixed(rng, 11)
    return out(f'''
        Szia Bence!
        Létrehoztam a fiókodat a számlázó rendszerben. A kezdeti jelszavad: {pw}
        Első belépéskor kérlek változtasd meg.
        Üdv, Eszter
        ''', pw)


@cred("prose-romanian-whatsapp-parola-de-la-router")
def _l_ro(rng):
    pw = person(rng)
    return out(f'''
        {day(rng)}, 19:02 - Mama: parola de la router e pe spatele lui dar e {pw}
        {day(rng)}, 19:03 - Andrei: merge, mersi mami
        ''', pw)


@cred("prose-turkish-telegram-sifre-su")
def _l_tr(rng):
    pw = person(rng)
    return out(f'''
        Emre: abi muhasebe programının şifresi neydi
        Serkan: kullanıcı adı muhasebe, şifre şu: {pw}
        Emre: eyvallah
        ''', pw)


@cred("prose-greek-viber-o-kodikos-einai")
def _l_el(rng):
    pw = person(rng)
    return out(f'''
        Γιώργο, ο κωδικός για το wifi του γραφείου είναι {pw} — μην τον δώσεις σε πελάτες.
        ''', pw)


@cred("prose-russian-telegram-parol-ot-uchetki")
def _l_ru(rng):
    pw = mixed(rng, 12)
    return out(f'''
        Дима, пароль от учётки в 1С: {pw}
        логин тот же — buh3. Поменяй потом, ладно?
        ''', pw)


@cred("prose-ukrainian-viber-parol-vid-poshty")
def _l_uk(rng):
    pw = person(rng)
    return out(f'''
        Оксано, пароль від пошти бухгалтерії — {pw}. Логін: buh@firma.ua
        ''', pw)


@cred("prose-bulgarian-email-parolata-e")
def _l_bg(rng):
    pw = mixed(rng, 10)
    return out(f'''
        Здравей, Ивана,
        Паролата за системата за отпуски е {pw} — смени я при първо влизане.
        Поздрави, ИТ отдел
        ''', pw)


@cred("prose-serbian-cyrillic-sms-lozinka")
def _l_sr(rng):
    pw = person(rng)
    return out(f'''
        Марко, лозинка за рачун на порталу је {pw}. Поздрав, Јелена
        ''', pw)


@cred("prose-croatian-chat-lozinka-za-wifi")
def _l_hr(rng):
    pw = person(rng)
    return out(f'''
        Ivana: koja je lozinka za wifi u apartmanu?
        Domaćin: Apartman_Vila_Mare / {pw}
        ''', pw)


@cred("prose-finnish-email-salasanasi-on")
def _l_fi(rng):
    pw = mixed(rng, 12)
    return out(f'''
        Hei Mikko,
        Tunnuksesi Intraan on luotu. Käyttäjätunnus: mikko.virtanen, salasanasi on {pw}
        Vaihda salasana ensimmäisellä kirjautumiskerralla.
        Terveisin, IT-tuki
        ''', pw)


@cred("prose-estonian-sms-parool-on")
def _l_et(rng):
    pw = person(rng)
    return out(f'''
        Tere Kadri! Suvila wifi parool on {pw} . Head puhkust!
        ''', pw)


@cred("prose-lithuanian-chat-slaptazodis")
def _l_lt(rng):
    pw = person(rng)
    return out(f'''
        Tomas: koks slaptažodis į bendrą Dropbox?
        Rūta: {pw}
        ''', pw)


@cred("prose-swedish-slack-losenordet-till")
def _l_sv(rng):
    pw = phrase(rng, 3, "-")
    return out(f'''
        @linnea lösenordet till testkontot i Fortnox är {pw} – byt gärna efter demon 🙏
        ''', pw)


@cred("prose-norwegian-sms-passordet-er")
def _l_no(rng):
    pw = person(rng)
    return out(f'''
        Hei! Passordet til hytta sitt nett er {pw}. Nøkkelen ligger under trappa. Hilsen Ola
        ''', pw)


@cred("prose-danish-email-adgangskoden")
def _l_da(rng):
    pw = mixed(rng, 10)
    return out(f'''
        Hej Mette
        Adgangskoden til lønsystemet er nulstillet. Din nye midlertidige adgangskode er: {pw}
        Venlig hilsen
        HR-afdelingen
        ''', pw)


@cred("prose-icelandic-chat-lykilordid")
def _l_is(rng):
    pw = person(rng)
    return out(f'''
        Sigga: hvað er lykilorðið á netinu í bústaðnum?
        Jón: það er {pw}
        ''', pw)


@cred("prose-welsh-neges-cyfrinair")
def _l_cy(rng):
    pw = person(rng)
    return out(f'''
        Helo Dafydd, y cyfrinair i'r cyfrifiadur yn y swyddfa ydy {pw}. Diolch!
        ''', pw)


@cred("prose-hebrew-whatsapp-hasisma-hi")
def _l_he(rng):
    pw = person(rng)
    return out(f'''
        נועה: מה הסיסמה לוויי-פיי במשרד החדש?
        איתי: הסיסמה היא {pw}
        ''', pw)


@cred("prose-arabic-gulf-whatsapp-kalimat-al-sir")
def _l_ar(rng):
    pw = person(rng)
    return out(f'''
        خالد: هلا، وش كلمة السر حق الراوتر؟
        فهد: كلمة السر {pw} وحطها صح لأن فيها حروف كبيرة
        ''', pw)


@cred("prose-persian-telegram-ramz-obur")
def _l_fa(rng):
    pw = person(rng)
    return out(f'''
        سلام مریم، رمز عبور اکانت حسابداری: {pw}
        لطفاً بعد از ورود عوضش کن.
        ''', pw)


@cred("prose-urdu-sms-password-yeh-hai")
def _l_ur(rng):
    pw = person(rng)
    return out(f'''
        بھائی دکان کے کمپیوٹر کا پاس ورڈ یہ ہے: {pw}
        ''', pw)


@cred("prose-hindi-whatsapp-password-hai")
def _l_hi(rng):
    pw = person(rng)
    return out(f'''
        [{day(rng)} 10:22] राहुल: भैया, ऑफिस वाई-फाई का पासवर्ड क्या है?
        [{day(rng)} 10:24] सुरेश: पासवर्ड है {pw} — किसी को मत बताना
        ''', pw)


@cred("prose-bengali-messenger-password-holo")
def _l_bn(rng):
    pw = person(rng)
    return out(f'''
        দাদা, নেটফ্লিক্সের পাসওয়ার্ড হলো {pw} — প্রোফাইল "Rimi" টা ব্যবহার কোরো।
        ''', pw)


@cred("prose-tamil-sms-kadavuchol")
def _l_ta(rng):
    pw = person(rng)
    return out(f'''
        அண்ணா, வங்கி போர்டல் கடவுச்சொல்: {pw} — OTP வந்தா எனக்கு அனுப்புங்க.
        ''', pw)


@cred("prose-telugu-chat-password-idi")
def _l_te(rng):
    pw = person(rng)
    return out(f'''
        శ్రీను: కాలేజ్ పోర్టల్ పాస్‌వర్డ్ ఇది: {pw}
        ''', pw)


@cred("prose-marathi-whatsapp-password-aahe")
def _l_mr(rng):
    pw = person(rng)
    return out(f'''
        आई, टीव्हीच्या ॲपचा पासवर्ड {pw} आहे. मी उद्या येऊन सेट करतो.
        ''', pw)


@cred("prose-thai-line-rahat-phan")
def _l_th(rng):
    pw = person(rng)
    return out(f'''
        น้องฝน: พี่คะ รหัสผ่านไวไฟร้านคืออะไรคะ
        พี่เอ: รหัสผ่าน {pw} จ้า
        ''', pw)


@cred("prose-vietnamese-zalo-mat-khau-la")
def _l_vi(rng):
    pw = person(rng)
    return out(f'''
        Anh Tuấn ơi, mật khẩu tài khoản shop trên Shopee là {pw} nha, anh đổi lại giúp em.
        ''', pw)


@cred("prose-indonesian-wa-sandinya")
def _l_id(rng):
    pw = person(rng)
    return out(f'''
        Mas, kata sandi email kantor sudah aku reset ya. Sandinya {pw} — nanti ganti sendiri.
        ''', pw)


@cred("prose-tagalog-messenger-yung-password")
def _l_tl(rng):
    pw = person(rng)
    return out(f'''
        Ate, eto yung password ng wifi sa bahay: {pw} — wag mo ipamigay sa kapitbahay ha hahaha
        ''', pw)


@cred("prose-japanese-slack-pasu-wa")
def _l_ja(rng):
    pw = mixed(rng, 12)
    return out(f'''
        @佐藤さん 検証環境の管理画面、ID は admin でパスは {pw} です。作業が終わったら変更お願いします🙇
        ''', pw)


@cred("prose-korean-kakaotalk-bibeon")
def _l_ko(rng):
    pw = person(rng)
    return out(f'''
        [오후 3:12] 민지: 회사 공유기 비번 뭐였지?
        [오후 3:13] 현우: {pw} 대소문자 구분해
        ''', pw)


@cred("prose-chinese-wechat-mima-fa-ni")
def _l_zh(rng):
    pw = mixed(rng, 12)
    return out(f'''
        王经理：小李，服务器后台账号 root，密码发你了：{pw}
        小李：收到，用完我就改掉
        ''', pw)


@cred("prose-cantonese-whatsapp-password-hai")
def _l_yue(rng):
    pw = person(rng)
    return out(f'''
        阿明：喂，公司部 wifi 個 password 係咩呀？
        阿欣：係 {pw} 呀，記住唔好俾客人
        ''', pw)


@cred("prose-swahili-sms-nenosiri-ni")
def _l_sw(rng):
    pw = person(rng)
    return out(f'''
        Habari Juma, nenosiri la akaunti ya M-Shop ni {pw}. Usimpe mtu mwingine.
        ''', pw)


@cred("prose-amharic-telegram-yeyilef-qal")
def _l_am(rng):
    pw = person(rng)
    return out(f'''
        ሰላም አበበ፣ የቢሮ ዋይፋይ የይለፍ ቃል {pw} ነው።
        ''', pw)


@cred("prose-georgian-chat-paroli")
def _l_ka(rng):
    pw = person(rng)
    return out(f'''
        ნინო: ოფისის wifi-ს პაროლი რა არის?
        გიორგი: პაროლი: {pw}
        ''', pw)


@cred("prose-armenian-sms-gaghtnabar")
def _l_hy(rng):
    pw = person(rng)
    return out(f'''
        Բարև Արամ, համակարգի գաղտնաբառը՝ {pw}
        ''', pw)


@cred("prose-kazakh-telegram-qupiya-soz")
def _l_kk(rng):
    pw = person(rng)
    return out(f'''
        Айгүл, бухгалтерия бағдарламасының құпия сөзі: {pw}
        ''', pw)


@cred("prose-english-voice-transcript-nato-spelled-pin")
def _l_en_nato(rng):
    pw = upper(rng, 8)
    nato = {"A": "alpha", "B": "bravo", "C": "charlie", "D": "delta", "E": "echo", "F": "foxtrot", "G": "golf",
            "H": "hotel", "I": "india", "J": "juliet", "K": "kilo", "L": "lima", "M": "mike", "N": "november",
            "O": "oscar", "P": "papa", "Q": "quebec", "R": "romeo", "S": "sierra", "T": "tango", "U": "uniform",
            "V": "victor", "W": "whiskey", "X": "x-ray", "Y": "yankee", "Z": "zulu"}
    spelled = " ".join(nato.get(c, c) for c in pw)
    return out(f'''
        [00:01:12] Agent: Okay, I've reset it. Your one-time passcode is {pw} — that's {spelled}.
        [00:01:20] Caller: Great, got it, thanks.
        ''', pw)


@cred("prose-english-sticky-note-ocr-monitor-photo")
def _l_en_sticky(rng):
    pw = person(rng)
    return out(f'''
        OCR result (IMG_{digits(rng, 4)}.HEIC, confidence 0.91):
        ---
        FRONT DESK PC
        user: reception
        pw: {pw}
        DO NOT REMOVE
        ---
        ''', pw)


@cred("prose-german-non-ascii-passphrase-with-umlauts")
def _l_de_umlaut(rng):
    pw = rng.choice(["Käsebrötchen", "Grüßgott", "Straßenbahn", "Übermorgen", "Schloßgärtner"]) + str(rng.randint(10, 9999)) + "!"
    return out(f'''
        Liebe Frau Öztürk,
        Ihr Passwort für das Mieterportal lautet: {pw}
        Bitte beachten Sie die Groß- und Kleinschreibung sowie die Umlaute.
        ''', pw)


@cred("prose-polish-non-ascii-haslo-with-diacritics")
def _l_pl_diacr(rng):
    pw = rng.choice(["Żółwik", "Źdźbło", "Gęśla", "Łódeczka", "Pszczółka"]) + str(rng.randint(100, 9999))
    return out(f'''
        Pani Basiu, hasło do konta w e-dzienniku to {pw} (z polskimi znakami!).
        ''', pw)


# @@CRED@@

# ---- clean documents ------------------------------------------------------------------------------------------

@clean("clean-langgraph-json-env-file-reference")
def _c_langgraph(rng):
    return jd({"dependencies": ["."], "graphs": {"agent": "./src/agent/graph.py:graph"}, "env": ".env",
               "python_version": "3.12", "store": {"index": {"embed": "openai:text-embedding-3-small", "dims": 1536}}})


@clean("clean-claude-code-settings-permissions-and-hooks")
def _c_claude(rng):
    return jd({"$schema": "https://json.schemastore.org/claude-code-settings.json", "model": "claude-opus-4-1",
               "permissions": {"allow": ["Bash(pytest:*)", "Bash(ruff check:*)"],
                               "deny": ["Read(./.env)", "Read(./**/credentials.json)", "Bash(curl:*)"]},
               "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                   {"type": "command", "command": "python3 .claude/hooks/block_secrets.py"}]}]},
               "env": {"MAX_THINKING_TOKENS": "16000", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "32000"}})


@clean("clean-mcp-json-env-var-expansion")
def _c_mcp(rng):
    return jd({"mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                                         "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
                              "sentry": {"command": "npx", "args": ["-y", "@sentry/mcp-server@latest"],
                                         "env": {"SENTRY_ACCESS_TOKEN": "${SENTRY_ACCESS_TOKEN}"}}}})


@clean("clean-otlp-json-genai-span-token-usage")
def _c_otlp(rng):
    return jd({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "rag-api"}},
        {"key": "telemetry.sdk.version", "value": {"stringValue": "1.37.0"}}]},
        "scopeSpans": [{"spans": [{"traceId": trace_id(rng), "spanId": span_id(rng), "parentSpanId": span_id(rng),
                                   "name": "chat gpt-4.1", "startTimeUnixNano": nano(rng), "endTimeUnixNano": nano(rng),
                                   "attributes": [
                                       {"key": "gen_ai.request.max_tokens", "value": {"intValue": "1024"}},
                                       {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "8412"}},
                                       {"key": "gen_ai.usage.output_tokens", "value": {"intValue": "388"}},
                                       {"key": "gen_ai.response.id", "value": {"stringValue": "chatcmpl-" + mixed(rng, 29)}},
                                       {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}]}]}]}]})


@clean("clean-crewai-agents-yaml-roles-and-tools")
def _c_crewai(rng):
    return txt('''
        researcher:
          role: >
            Senior password-policy researcher
          goal: >
            Summarise NIST SP 800-63B guidance on password_min_length and rotation
          backstory: >
            You know the difference between a token and a tokenizer.
          llm: anthropic/claude-sonnet-4-5
          max_iter: 15
        ''')


@clean("clean-autogen-config-list-env-lookup")
def _c_autogen(rng):
    return txt('''
        import os
        config_list = [
            {"model": "gpt-4o", "api_key": os.environ["OPENAI_API_KEY"]},
            {"model": "gpt-4o-mini", "api_key": os.getenv("AZURE_OPENAI_API_KEY"), "api_type": "azure"},
        ]
        llm_config = {"config_list": config_list, "cache_seed": 42, "temperature": 0, "max_tokens": 2048}
        ''')


@clean("clean-litellm-config-os-environ-references")
def _c_litellm(rng):
    return txt('''
        model_list:
          - model_name: claude
            litellm_params:
              model: anthropic/claude-sonnet-4-5
              api_key: os.environ/ANTHROPIC_API_KEY
        general_settings:
          master_key: os.environ/LITELLM_MASTER_KEY
          database_url: os.environ/DATABASE_URL
        litellm_settings:
          drop_params: true
          max_budget: 100
        ''')


@clean("clean-pinecone-describe-index-output")
def _c_pinecone(rng):
    return jd({"name": "products", "dimension": 1536, "metric": "cosine",
               "host": f"products-{lower(rng, 7)}.svc.aped-4627-b74a.pinecone.io",
               "spec": {"serverless": {"cloud": "aws", "region": "us-east-1"}},
               "status": {"ready": True, "state": "Ready"}, "deletion_protection": "enabled",
               "tags": {"owner": "search-team"}, "vector_type": "dense"})


@clean("clean-weaviate-compose-oidc-no-keys")
def _c_weaviate(rng):
    return txt('''
        services:
          weaviate:
            image: cr.weaviate.io/semitechnologies/weaviate:1.32.2
            environment:
              AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED: 'false'
              AUTHENTICATION_OIDC_ENABLED: 'true'
              AUTHENTICATION_OIDC_ISSUER: 'https://sso.acme.example/realms/main'
              AUTHENTICATION_OIDC_CLIENT_ID: 'weaviate'
              AUTHENTICATION_OIDC_USERNAME_CLAIM: 'email'
            env_file: [ .env.weaviate ]
        ''')


@clean("clean-aws-credentials-sso-session-only")
def _c_aws_sso(rng):
    return txt(f'''
        [profile prod-admin]
        sso_session = acme
        sso_account_id = {digits(rng, 12)}
        sso_role_name = AdministratorAccess
        region = eu-west-1

        [sso-session acme]
        sso_start_url = https://acme.awsapps.com/start
        sso_region = eu-west-1
        sso_registration_scopes = sso:account:access
        ''')


@clean("clean-aws-configure-list-masked")
def _c_aws_list(rng):
    return txt(f'''
        $ aws configure list
              Name                    Value             Type    Location
              ----                    -----             ----    --------
           profile                  default           manual    --profile
        access_key     ****************{upper(rng, 4)} shared-credentials-file
        secret_key     ****************{mixed(rng, 4)} shared-credentials-file
            region                eu-west-1      config-file    ~/.aws/config
        ''')


@clean("clean-gcloud-config-list-and-auth-list")
def _c_gcloud(rng):
    return txt(f'''
        $ gcloud auth list
                Credentialed Accounts
        ACTIVE  ACCOUNT
        *       ana@acme.example
                deployer@acme-prod.iam.gserviceaccount.com

        $ gcloud config list
        [core]
        account = ana@acme.example
        project = acme-prod-{digits(rng, 6)}
        ''')


@clean("clean-az-account-show-ids")
def _c_az(rng):
    return jd({"environmentName": "AzureCloud", "homeTenantId": uid(rng), "id": uid(rng), "isDefault": True,
               "managedByTenants": [], "name": "Contoso Production", "state": "Enabled", "tenantId": uid(rng),
               "user": {"name": "ana@contoso.com", "type": "user"}})


@clean("clean-fly-toml-secrets-listed-by-name")
def _c_fly(rng):
    return txt(f'''
        $ fly secrets list -a billing-api
        NAME              DIGEST              CREATED AT
        DATABASE_URL      {hexa(rng, 16)}    2026-02-11T10:22:01Z
        STRIPE_API_KEY    {hexa(rng, 16)}    2026-02-11T10:22:01Z
        SENTRY_DSN        {hexa(rng, 16)}    2026-03-01T08:40:13Z
        ''')


@clean("clean-wrangler-toml-secrets-via-cli-comment")
def _c_wrangler(rng):
    return txt(f'''
        name = "edge-auth"
        main = "src/index.ts"
        compatibility_date = "2026-01-15"
        # Secrets are set with: npx wrangler secret put SESSION_HMAC_SECRET
        [vars]
        ISSUER = "https://auth.acme.example"
        TOKEN_TTL_SECONDS = "900"

        [[kv_namespaces]]
        binding = "SESSIONS"
        id = "{hexa(rng, 32)}"
        ''')


@clean("clean-supabase-config-toml-env-functions")
def _c_supabase(rng):
    return txt('''
        [auth]
        site_url = "http://127.0.0.1:3000"
        minimum_password_length = 12
        password_requirements = "lower_upper_letters_digits_symbols"

        [auth.external.github]
        enabled = true
        client_id = "env(SUPABASE_AUTH_GITHUB_CLIENT_ID)"
        secret = "env(SUPABASE_AUTH_GITHUB_SECRET)"
        ''')


@clean("clean-terraform-plan-sensitive-values-hidden")
def _c_tf_plan(rng):
    return txt(f'''
          # aws_db_instance.orders will be updated in-place
          ~ resource "aws_db_instance" "orders" {{
                id                = "db-{upper(rng, 26)}"
              ~ password          = (sensitive value)
              ~ engine_version    = "16.3" -> "16.4"
                # (41 unchanged attributes hidden)
            }}

        Plan: 0 to add, 1 to change, 0 to destroy.
        ''')


@clean("clean-terraform-variables-tf-sensitive-no-default")
def _c_tf_vars(rng):
    return txt('''
        variable "db_password" {
          description = "Master password for the orders database"
          type        = string
          sensitive   = true
          validation {
            condition     = length(var.db_password) >= 16
            error_message = "password_min_length is 16."
          }
        }
        ''')


@clean("clean-pulumi-yaml-secure-ciphertexts")
def _c_pulumi(rng):
    return txt(f'''
        encryptionsalt: v1:{b64(rng, 12)}:v1:{b64(rng, 9)}:{b64(rng, 24)}
        config:
          aws:region: eu-central-1
          app:dbPassword:
            secure: v1:{b64(rng, 12)}:{b64(rng, 40)}
        ''')


@clean("clean-ansible-vault-encrypted-file-header")
def _c_ansible_vault(rng):
    body = "\n".join(hexa(rng, 80) for _ in range(5))
    return "$ANSIBLE_VAULT;1.1;AES256\n" + body + "\n"


@clean("clean-k8s-secret-references-and-external-secret")
def _c_k8s_eso(rng):
    return txt('''
        apiVersion: external-secrets.io/v1
        kind: ExternalSecret
        metadata:
          name: orders-db
        spec:
          refreshInterval: 1h
          secretStoreRef: {name: aws-secrets-manager, kind: ClusterSecretStore}
          target: {name: orders-db}
          data:
            - secretKey: password
              remoteRef: {key: prod/orders/rds, property: password}
        ''')


@clean("clean-kubeconfig-exec-plugin-no-token")
def _c_kubeconfig(rng):
    return txt(f'''
        users:
          - name: arn:aws:eks:eu-west-1:{digits(rng, 12)}:cluster/prod
            user:
              exec:
                apiVersion: client.authentication.k8s.io/v1beta1
                command: aws
                args: [--region, eu-west-1, eks, get-token, --cluster-name, prod, --output, json]
                interactiveMode: IfAvailable
        ''')


@clean("clean-helm-values-existing-secret-keys")
def _c_helm(rng):
    return txt('''
        auth:
          existingSecret: keycloak-db
          secretKeys:
            adminPasswordKey: admin-password
            userPasswordKey: password
        passwordUpdateJob:
          enabled: false
        ''')


@clean("clean-docker-compose-secrets-file-and-env-refs")
def _c_compose(rng):
    return txt('''
        services:
          db:
            image: postgres:17
            environment:
              POSTGRES_PASSWORD_FILE: /run/secrets/pg_password
              POSTGRES_USER: ${POSTGRES_USER:-app}
            secrets: [pg_password]
        secrets:
          pg_password:
            file: ./secrets/pg_password.txt
        ''')


@clean("clean-nginx-htpasswd-bcrypt-and-auth-basic")
def _c_nginx(rng):
    return txt('''
        # /etc/nginx/.htpasswd
        admin:$2y$10$Q9mZ1rW7cJQeYxqB0uE6iOq1Lr8C3m0y9m8qfQ0b6y2h0c7v4y8sS
        metrics:$apr1$8hT3e9Lq$wFh1mW3q5oV2cK8eY7rTz/

        location /admin/ {
            auth_basic "Restricted";
            auth_basic_user_file /etc/nginx/.htpasswd;
        }
        ''')


@clean("clean-caddy-basicauth-hashed")
def _c_caddy(rng):
    return txt('''
        grafana.acme.example {
            basic_auth {
                ops $2a$14$Zkx19XLiW6VYouLHR5NmfOFU0z2GTNmpkT/5qqR7hx4IjWJPDhjvG
            }
            reverse_proxy grafana:3000
        }
        ''')


@clean("clean-datadog-yaml-env-var-api-key-ref")
def _c_dd(rng):
    return txt('''
        api_key: ENC[datadog_api_key]
        secret_backend_command: /usr/local/bin/dd-secret-helper
        site: datadoghq.eu
        logs_enabled: true
        ''')


@clean("clean-sentry-dsn-public-key-frontend-init")
def _c_sentry(rng):
    return txt(f'''
        Sentry.init({{
          dsn: "https://{hexa(rng, 32)}@o{digits(rng, 6)}.ingest.de.sentry.io/{digits(rng, 16)}",
          tracesSampleRate: 0.2,
          release: "storefront@{rng.randint(1, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)}+{sha(rng)[:7]}",
        }});
        ''')


@clean("clean-grafana-ini-file-provider-references")
def _c_grafana(rng):
    return txt('''
        [security]
        admin_user = admin
        admin_password = $__file{/run/secrets/grafana_admin_password}
        secret_key = $__env{GF_SECRET_KEY}
        disable_initial_admin_creation = false
        ''')


@clean("clean-prometheus-basic-auth-password-file")
def _c_prom(rng):
    return txt('''
        remote_write:
          - url: https://prometheus-prod-24-prod-eu-west-2.grafana.net/api/prom/push
            basic_auth:
              username: "1234567"
              password_file: /etc/prometheus/grafana_cloud_token
        ''')


@clean("clean-twilio-webhook-request-signature-and-sids")
def _c_twilio(rng):
    return txt(f'''
        POST /sms/inbound HTTP/1.1
        Host: hooks.acme.example
        X-Twilio-Signature: {b64(rng, 20)}
        Content-Type: application/x-www-form-urlencoded

        ToCountry=US&SmsMessageSid=SM{hexa(rng, 32)}&AccountSid=AC{hexa(rng, 32)}&MessagingServiceSid=MG{hexa(rng, 32)}&Body=STOP&NumMedia=0
        ''')


@clean("clean-stripe-webhook-event-ids-and-signature-header")
def _c_stripe(rng):
    return txt(f'''
        Stripe-Signature: t={epoch(rng)},v1={hexa(rng, 64)}
        {{"id": "evt_{mixed(rng, 24)}", "object": "event", "type": "invoice.paid",
         "data": {{"object": {{"id": "in_{mixed(rng, 24)}", "customer": "cus_{mixed(rng, 14)}", "amount_paid": 4900}}}}}}
        ''')


@clean("clean-google-services-json-placeholder-key")
def _c_gservices(rng):
    return jd({"project_info": {"project_number": "000000000000", "project_id": "your-project-id"},
               "client": [{"client_info": {"mobilesdk_app_id": "1:000000000000:android:0000000000000000"},
                           "api_key": [{"current_key": "<your-firebase-api-key>"}]}]})


@clean("clean-gradle-properties-signing-from-env")
def _c_gradle(rng):
    return txt('''
        org.gradle.jvmargs=-Xmx4096m
        android.useAndroidX=true
        # Release signing reads ANDROID_KEYSTORE_PASSWORD and ANDROID_KEY_PASSWORD from the CI environment
        RELEASE_STORE_FILE=release.keystore
        RELEASE_KEY_ALIAS=acme
        kotlin.code.style=official
        ''')


@clean("clean-har-entry-redacted-authorization")
def _c_har(rng):
    return jd({"request": {"method": "GET", "url": "https://api.acme.example/v2/me",
                           "headers": [{"name": "authorization", "value": "[REDACTED]"},
                                       {"name": "x-request-id", "value": uid(rng)},
                                       {"name": "traceparent", "value": f"00-{trace_id(rng)}-{span_id(rng)}-01"}]},
               "response": {"status": 200, "headers": [{"name": "etag", "value": f'W/"{sha(rng)}"'}]}})


@clean("clean-postman-environment-empty-secret-values")
def _c_postman(rng):
    return jd({"id": uid(rng), "name": "Production", "values": [
        {"key": "baseUrl", "value": "https://api.acme.example", "type": "default", "enabled": True},
        {"key": "apiKey", "value": "", "type": "secret", "enabled": True},
        {"key": "password", "value": "{{vault:prod-password}}", "type": "secret", "enabled": True}],
        "_postman_variable_scope": "environment"})


@clean("clean-bruno-env-secret-vars-list")
def _c_bruno(rng):
    return txt('''
        vars {
          baseUrl: https://gitlab.acme.io/api/v4
          projectId: 412
        }
        vars:secret [
          token,
          password
        ]
        ''')


@clean("clean-pg-hba-and-pgpass-wildcard-only")
def _c_pg(rng):
    return txt('''
        # pg_hba.conf
        hostssl  all  all  10.0.0.0/8  scram-sha-256
        local    all  postgres         peer
        # password_encryption = scram-sha-256 in postgresql.conf
        ''')


@clean("clean-sql-users-table-bcrypt-hashes")
def _c_sql(rng):
    return txt('''
        INSERT INTO users (id, email, password_hash, password_changed_at, failed_logins) VALUES
        (1, 'admin@acme.example', '$2b$12$KIXQJ3bY8x1zWl6v5n0H3e9mUq2cT7pR4sD1fG8hJ0kL2zX5cV7bO', '2026-01-04', 0),
        (2, 'kasse1@acme.example', '$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHRzYWx0$Zm9vYmFyYmF6cXV4cXV1eA', '2026-02-19', 2);
        ''')


@clean("clean-jdbc-url-integrated-security")
def _c_jdbc(rng):
    return txt('''
        spring.datasource.url=jdbc:sqlserver://sqlprod.corp.acme.lan:1433;databaseName=HR;integratedSecurity=true;authenticationScheme=JavaKerberos
        spring.datasource.hikari.maximum-pool-size=12
        spring.datasource.password=${HR_DB_PASSWORD}
        ''')


@clean("clean-ldif-user-entry-ssha-and-public-cert")
def _c_ldif(rng):
    return txt(f'''
        dn: uid=ana.k,ou=people,dc=acme,dc=lan
        objectClass: inetOrgPerson
        uid: ana.k
        mail: ana@acme.example
        userPassword: {{SSHA512}}{b64(rng, 72)}
        pwdChangedTime: 20260211101522Z
        ''')


@clean("clean-windows-reg-export-autologon-disabled")
def _c_reg(rng):
    return txt('''
        Windows Registry Editor Version 5.00

        [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon]
        "AutoAdminLogon"="0"
        "DefaultUserName"="kiosk"
        "PasswordExpiryWarning"=dword:0000000e
        "CachedLogonsCount"="10"
        ''')


@clean("clean-powershell-get-credential-and-secretmanagement")
def _c_pwsh(rng):
    return txt('''
        $cred = Get-Credential -Message "Exchange admin"
        $token = Get-Secret -Name GraphToken -Vault AcmeVault -AsPlainText:$false
        Connect-ExchangeOnline -Credential $cred -ShowBanner:$false
        Write-Host "Password length policy: $((Get-ADDefaultDomainPasswordPolicy).MinPasswordLength)"
        ''')


@clean("clean-git-credential-helper-config-only")
def _c_git(rng):
    return txt(f'''
        [credential]
            helper = manager
            credentialStore = secretservice
        [credential "https://dev.azure.com"]
            useHttpPath = true
        [commit]
            gpgsign = true
        [user]
            signingkey = {hexa(rng, 16).upper()}
        ''')


@clean("clean-ssh-public-keys-and-fingerprints")
def _c_ssh(rng):
    return txt(f'''
        ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(rng, 32)[:43]} ana@laptop
        256 SHA256:{b64(rng, 32).rstrip("=")} ana@laptop (ED25519)
        ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(rng, 64)} ci@runner
        ''')


@clean("clean-pytest-run-keyboard-and-password-policy-tests")
def _c_pytest(rng):
    return txt(f'''
        ============================= test session starts ==============================
        collected 48 items

        tests/test_keyboard_layout.py ........                                   [ 16%]
        tests/test_password_min_length.py .......                                [ 31%]
        tests/test_tokenizer_roundtrip.py ...............                       [ 62%]
        tests/test_token_bucket.py ..................                           [100%]

        ============================== 48 passed in {rng.randint(2, 9)}.{rng.randint(10, 99)}s ==============================
        ''')


@clean("clean-multilingual-password-reset-guidance")
def _c_multi(rng):
    return txt('''
        ES: Nunca te pediremos tu contraseña por WhatsApp.
        PT: Nunca pedimos a sua senha por SMS.
        DE: Wir fragen Sie niemals nach Ihrem Kennwort.
        PL: Nigdy nie prosimy o hasło przez telefon.
        TR: Şifrenizi asla e-posta ile istemeyiz.
        JA: パスワードをメールでお尋ねすることはありません。
        KO: 비밀번호를 전화로 묻지 않습니다.
        ZH: 我们绝不会通过微信索要您的密码。
        HI: हम कभी भी आपका पासवर्ड नहीं मांगते।
        AR: لن نطلب منك كلمة المرور أبداً.
        ''')


@clean("clean-wifi-chat-password-on-the-router-sticker")
def _c_wifi(rng):
    return txt('''
        Lena: what's the wifi password at your place?
        Tom: it's on the sticker under the router, the one labelled WPA key — I never changed it
        Lena: found it, thanks!
        ''')


@clean("clean-password-manager-csv-header-only")
def _c_csv(rng):
    return txt('''
        folder,favorite,type,name,notes,fields,reprompt,login_uri,login_username,login_password,login_totp
        ''')


@clean("clean-vendor-docs-placeholders-mixed")
def _c_docs(rng):
    return txt('''
        ## Configure the SDK
        ```bash
        export PINECONE_API_KEY="<your-pinecone-api-key>"
        export TAVILY_API_KEY=tvly-YOUR_API_KEY
        export NEON_API_KEY=napi_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        export STRIPE_SECRET_KEY=sk_test_...
        ```
        ''')


@clean("clean-dashboard-copy-masked-api-keys")
def _c_masked(rng):
    return txt(f'''
        NAME              KEY                      CREATED       LAST USED
        ci-deploy         sk-proj-...{mixed(rng, 4)}         2026-01-12    2 hours ago
        staging           sk-ant-api03-•••••{mixed(rng, 4)}   2026-02-03    never
        grafana-sync      glsa_************_****   2026-02-28    yesterday
        ''')


@clean("clean-docker-image-digests-and-checksums")
def _c_digests(rng):
    return txt(f'''
        ghcr.io/acme/api@sha256:{sha256(rng)}
        sha256sum  {sha256(rng)}  vllm-0.11.0-cp312-manylinux.whl
        md5        {hexa(rng, 32)}  model.safetensors
        git rev-parse HEAD -> {sha(rng)}
        ''')


@clean("clean-base64-of-feature-flags-json")
def _c_b64(rng):
    flags = base64.b64encode(json.dumps({"newCheckout": True, "darkMode": False, "maxItems": 50}).encode()).decode()
    return txt(f'''
        X-Feature-Flags: {flags}
        X-Request-Id: {uid(rng)}
        X-Amzn-Trace-Id: Root=1-{hexa(rng, 8)}-{hexa(rng, 24)}
        ''')


@clean("clean-jwks-public-keys-endpoint")
def _c_jwks(rng):
    return jd({"keys": [{"kty": "RSA", "use": "sig", "kid": hexa(rng, 16), "alg": "RS256", "e": "AQAB",
                         "n": b64url(rng, 256)},
                        {"kty": "OKP", "crv": "Ed25519", "kid": hexa(rng, 16), "x": b64url(rng, 32)}]})


@clean("clean-ci-log-masked-secrets")
def _c_ci_log(rng):
    return txt(f'''
        {when(rng)} Run docker login -u acmebuild -p *** ghcr.io
        {when(rng)} WARNING! Using --password via the CLI is insecure. Use --password-stdin.
        {when(rng)} Login Succeeded
        {when(rng)} Run ./deploy.sh --token *** --env production
        {when(rng)} deployed revision {sha(rng)[:12]}
        ''')


# @@CLEAN@@


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
