"""The HOLDOUT12 part of the secret corpus: a twelfth blind part, written after HOLDOUT to HOLDOUT11.

Written blind: its author read only the `Document` type, the structure test of the blind parts and the layout
of the HOLDOUT11 generator (to copy its interface); never the detector, its rules, docs, tests, state or figures,
and no document was run through a detector. Each document imitates what a real tool, agent, config file, log,
terminal session, HTTP trace or person writes in 2026:

- agent frameworks and MCP: LangGraph checkpoints, LangSmith runs, CrewAI verbose logs, AutoGen console
  streams, OpenAI Agents SDK spans, Pydantic AI / Logfire attributes, smolagents steps, LlamaIndex, Haystack,
  Semantic Kernel, DSPy, Mastra, Letta, Agno, LiteLLM, MCP client configs (Claude Desktop, Cursor, VS Code,
  Windsurf, Zed, Continue, Goose, OpenHands, Cline) and JSON-RPC `tools/call` transcripts;
- infrastructure as code and service managers: Terraform (tfvars, state, plan), Pulumi, Helm, Ansible, NixOS,
  Bazel, Earthly, just, Task, Kustomize, Kubernetes Secrets, Compose, Dockerfiles, Packer, CUE, Jsonnet, Argo CD,
  Vault, CloudFormation, Bicep, systemd, cron, supervisord, launchd, OpenRC, schtasks;
- databases, brokers and clouds: psql, mysql, mongosh, redis-cli, clickhouse-client, cqlsh, sqlplus,
  cypher-shell, influx, cockroach, surreal, snowsql, DuckDB, Kafka, NATS, Pulsar, MQTT, AMQP, Service Bus, aws,
  gcloud, az, doctl, flyctl, wrangler, vercel, netlify, railway, supabase, linode-cli, scw, oci, aliyun, ibmcloud;
- devices, payments, networks, HTTP, notebooks, dotfiles, source code, crash dumps, Windows and macOS, OTP and
  key material, terminal prompts, and people writing passwords in chat and e-mail in English and twenty-seven other
  languages and scripts.

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more.
Usernames, client/app/key ids, account and project ids, public keys, hashes, request/trace/span ids and masked
echoes are not planted and, where present, are not credentials. A base64 `user:password` pair in a header or a
Kubernetes Secret is planted as its base64 text; a PEM or OpenSSH key is planted as its first body line.

Clean documents hold no credential but many look-alikes (UUIDs, SHAs, trace ids, versions, hashes, base64 of
non-secrets, `max_tokens`, `keyboard`, `passed`, env-var references, placeholders and masked values).

SEED = 1733060. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean ones.
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

SEED = 1733060

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
    """Dedent a document body and pair it with the planted values."""
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
_B32A = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_WORDS = tuple(
    """
    saffron lantern orchard pebble thimble harbor ginger marble falcon meadow copper velvet juniper canyon
    biscuit walrus tangerine puffin granite comet lagoon cedar mosaic parsnip otter quartz ripple saddle
    tinsel umber walnut yarrow zephyr almond beacon cobble dahlia ferret gravel heron inkwell kettle lilac
    nutmeg oyster pepper raven spruce teapot violin wombat badger crimson dragonfly
    """.split()
)


def chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(rng: random.Random, n: int) -> str:
    """Letters and digits with every kind present."""
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
        v = chars(rng, "0123456789abcdef", n)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64url(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def b32(rng: random.Random, n: int) -> str:
    while True:
        v = chars(rng, _B32A, n)
        if any(c.isdigit() for c in v):
            return v


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + chars(rng, string.digits, n - 1)


def symbolic(rng: random.Random, n: int, marks: str = "!#%&*+-=?@^_~") -> str:
    """A password manager's output: letters, digits and marks."""
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if (any(c in marks for c in v) and any(c.isdigit() for c in v)
                and any(c.isupper() for c in v) and any(c.islower() for c in v)):
            return v


def person(rng: random.Random) -> str:
    """What a person types: a capitalised word, a number, maybe a mark."""
    w = rng.choice(_WORDS)
    v = w.capitalize() + str(rng.randint(1, 2026)) + rng.choice(["", "!", "?", "#", "$", "*", "."])
    return v if len(v) >= 8 else v + str(rng.randint(10, 99))


def leet(rng: random.Random) -> str:
    w = rng.choice([w for w in _WORDS if len(w) >= 6])
    t = w.translate(str.maketrans({"a": "@", "o": "0", "e": "3", "i": "1", "s": "$"}))
    return t[0].upper() + t[1:] + str(rng.randint(1, 99)) + rng.choice("!#&")


def phrase(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    return sep.join(rng.sample(_WORDS, n))


def short(rng: random.Random) -> str:
    return mixed(rng, rng.randint(8, 11))


def seg(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict, alg: str = "HS256") -> str:
    return f"{seg({'alg': alg, 'typ': 'JWT'})}.{seg(claims)}.{b64url(rng, 32 if alg.startswith('HS') else 64)}"


def pem_line(rng: random.Random, head: str = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC") -> str:
    return (head + b64(rng, 60))[:64]


def ssh_line(rng: random.Random) -> str:
    return ("b3BlbnNzaC1rZXktdjEAAAAA" + b64(rng, 48))[:70]


def wgkey(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(32)).decode()


def basic(user: str, pw: str) -> str:
    return base64.b64encode(f"{user}:{pw}".encode()).decode()


def quote(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def when(rng: random.Random) -> str:
    return (f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z")


def hms(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


def sha(rng: random.Random) -> str:
    return hashlib.sha1(rng.randbytes(16)).hexdigest()


def trace_id(rng: random.Random) -> str:
    return rng.randbytes(16).hex()


def span_id(rng: random.Random) -> str:
    return rng.randbytes(8).hex()


def who(rng: random.Random) -> str:
    return rng.choice(["amara", "bjorn", "chidi", "dagny", "emeka", "farida", "goran", "hyejin", "ines", "jarrah",
                       "kenji", "leilani", "mateus", "nadia", "oskar", "priya", "quang", "rania", "sven", "tomasz"])


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent)


# ==========================================================================================================
# Agent frameworks, LLM tooling and MCP
# ==========================================================================================================


@cred("langgraph-sqlite-checkpoint-tool-message-echoes-key")
def _langgraph_ckpt(rng):
    key = "qmk_live_" + mixed(rng, 32)
    state = {"v": 1, "ts": when(rng), "id": uid(rng), "channel_values": {"messages": [
        {"type": "human", "content": "set up the Quillmark client for the newsletter job"},
        {"type": "ai", "content": "", "tool_calls": [{"name": "write_env", "id": "call_" + mixed(rng, 24),
                                                      "args": {"QUILLMARK_API_KEY": key}}]},
        {"type": "tool", "name": "write_env", "content": f"wrote .env (QUILLMARK_API_KEY={key})"}]},
        "channel_versions": {"messages": f"00000000000000000000000000000004.{rng.random()}"}}
    return out(f"""
        sqlite> SELECT thread_id, checkpoint_id, json(checkpoint) FROM checkpoints ORDER BY rowid DESC LIMIT 1;
        newsletter-{digits(rng, 4)}|{uid(rng)}|{jd(state, None)}
        """, key)


@cred("langsmith-run-json-inputs-headers-bearer")
def _langsmith_run(rng):
    tok = "fbk_" + b64url(rng, 30)
    run = {"id": uid(rng), "name": "fetch_invoice", "run_type": "tool", "start_time": when(rng),
           "inputs": {"url": "https://api.ledgerfox.io/v2/invoices?status=open",
                      "headers": {"Authorization": f"Bearer {tok}", "Accept": "application/json"}},
           "outputs": {"status": 200, "count": rng.randint(3, 40)}, "trace_id": uid(rng),
           "dotted_order": f"20260311T101500000000Z{uid(rng)}", "tags": ["prod", "billing-agent"]}
    return out(jd(run), tok)


@cred("crewai-verbose-action-input-dict")
def _crewai(rng):
    pw = symbolic(rng, 18)
    return out(f"""
        # Agent: Database Migration Specialist
        ## Thought: I need to connect to the staging replica to check row counts before the cutover.
        ## Using tool: Postgres Query Tool
        ## Tool Input:
        "{{\\"host\\": \\"pg-staging.internal\\", \\"user\\": \\"migrator\\", \\"password\\": \\"{pw}\\", \\"query\\": \\"SELECT count(*) FROM orders\\"}}"
        ## Tool Output:
        [(1843221,)]
        """, pw)


@cred("autogen-agentchat-console-code-block-export")
def _autogen(rng):
    key = "vxa-" + lower(rng, 40)
    return out(f"""
        ---------- user_proxy ----------
        Please plot the weekly signups from the Vexa analytics API.
        ---------- assistant ----------
        ```bash
        export VEXA_TOKEN="{key}"
        python fetch_signups.py --weeks 12 --out signups.png
        ```
        [Prompt tokens: {rng.randint(900, 3000)}, Completion tokens: {rng.randint(60, 400)}]
        ---------- code_executor ----------
        saved signups.png (12 points)
        """, key)


@cred("openai-agents-sdk-function-span-input")
def _oai_agents(rng):
    secret = "sk_gh_" + mixed(rng, 36)
    span = {"object": "trace.span", "id": "span_" + hexa(rng, 24), "trace_id": "trace_" + hexa(rng, 32),
            "span_data": {"type": "function", "name": "create_deploy_hook",
                          "input": json.dumps({"project": "docs-site", "deploy_token": secret}),
                          "output": "{\"hook_id\": \"dh_" + digits(rng, 9) + "\"}"},
            "started_at": when(rng), "ended_at": when(rng)}
    return out(jd(span), secret)


@cred("pydantic-ai-logfire-span-attributes-messages")
def _pydantic_ai(rng):
    pw = person(rng)
    attrs = {"gen_ai.system": "anthropic", "gen_ai.request.model": "claude-sonnet-4-5",
             "gen_ai.usage.input_tokens": rng.randint(400, 4000), "logfire.msg": "chat claude-sonnet-4-5",
             "all_messages_events": json.dumps([{"role": "user", "content": f"my wifi password is {pw}, can you "
                                                 "write the netplan file for the pi?"}])}
    return out(f"""
        {when(rng)} span agent run  trace_id={trace_id(rng)} span_id={span_id(rng)}
        attributes: {jd(attrs, None)}
        """, pw)


@cred("smolagents-step-log-python-headers")
def _smol(rng):
    key = "gw-" + hexa(rng, 40)
    return out(f"""
        ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ Step 2 ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━
         ─ Executing parsed code: ─────────────────────────────────────────────
          import requests
          r = requests.get("https://api.geowarden.dev/v1/lookup",
                           params={{"q": "Lisbon"}},
                           headers={{"X-Api-Key": "{key}"}})
          print(r.json()["results"][0]["lat"])
         ──────────────────────────────────────────────────────────────────────
        Execution logs:
        38.7223
        Out: None
        [Step 2: Duration 1.{rng.randint(10, 99)} seconds| Input tokens: {rng.randint(2000, 9000):,} | Output tokens: {rng.randint(40, 300)}]
        """, key)


@cred("otlp-json-span-http-request-header-authorization")
def _otlp_http(rng):
    tok = "nxp_" + b64url(rng, 27)
    span = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout-agent"}}]},
            "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.httpx"}, "spans": [{
                "traceId": trace_id(rng), "spanId": span_id(rng), "name": "POST", "kind": 3,
                "attributes": [{"key": "http.request.method", "value": {"stringValue": "POST"}},
                               {"key": "url.full", "value": {"stringValue": "https://api.nexapay.cloud/v3/charges"}},
                               {"key": "http.request.header.authorization", "value": {"arrayValue": {"values": [{"stringValue": f"Bearer {tok}"}]}}},
                               {"key": "http.response.status_code", "value": {"intValue": "201"}}]}]}]}]}
    return out(jd(span), tok)


@cred("llamaindex-callback-debug-function-call-payload")
def _llamaindex(rng):
    pw = symbolic(rng, 16)
    return out(f"""
        **********
        Trace: query
            |_CBEventType.QUERY -> 4.21 seconds
              |_CBEventType.FUNCTION_CALL -> 0.83 seconds
        **********
        DEBUG:llama_index.core.callbacks:FUNCTION_CALL payload={{'function_call': '{{"dsn": "mysql://reporter:{pw}@analytics-db:3306/kpi"}}', 'tool': ToolMetadata(name='sql_lookup')}}
        """, pw)


@cred("haystack-pipeline-yaml-secret-from-token")
def _haystack(rng):
    key = "cohr_" + mixed(rng, 40)
    return out(f"""
        components:
          embedder:
            type: haystack_integrations.components.embedders.cohere.text_embedder.CohereTextEmbedder
            init_parameters:
              api_key:
                type: token
                token: {key}
                strict: false
              model: embed-multilingual-v3.0
        connections: []
        max_runs_per_component: 100
        """, key)


@cred("semantic-kernel-csharp-builder-hardcoded")
def _sk_cs(rng):
    key = hexa(rng, 32)
    return out(f"""
        var builder = Kernel.CreateBuilder();
        builder.AddAzureOpenAIChatCompletion(
            deploymentName: "gpt-4o-mini",
            endpoint: "https://contoso-aoai-weu.openai.azure.com/",
            apiKey: "{key}");
        builder.Plugins.AddFromType<TimePlugin>();
        var kernel = builder.Build();
        """, key)


@cred("dspy-lm-configure-notebook-line")
def _dspy(rng):
    key = "tgp_v1_" + b64url(rng, 32)
    return out(f"""
        import dspy
        lm = dspy.LM("together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo", api_key="{key}", max_tokens=2048)
        dspy.configure(lm=lm)
        qa = dspy.ChainOfThought("question -> answer")
        """, key)


@cred("mastra-agent-ts-provider-apikey")
def _mastra(rng):
    key = "fw_" + mixed(rng, 28)
    return out(f"""
        import {{ Agent }} from "@mastra/core/agent";
        import {{ createOpenAICompatible }} from "@ai-sdk/openai-compatible";

        const fireworks = createOpenAICompatible({{
          name: "fireworks",
          baseURL: "https://api.fireworks.ai/inference/v1",
          apiKey: "{key}",
        }});

        export const triageAgent = new Agent({{
          name: "triage",
          instructions: "Label incoming support tickets.",
          model: fireworks("accounts/fireworks/models/qwen3-235b-a22b"),
        }});
        """, key)


@cred("letta-core-memory-block-persona-credential")
def _letta(rng):
    pw = leet(rng)
    block = {"id": "block-" + uid(rng), "label": "human", "limit": 5000,
             "value": f"Name: Rui. Works nights. Asked me to remember the NAS admin login: admin / {pw}. Prefers short answers."}
    return out(f"$ curl -s localhost:8283/v1/agents/agent-{uid(rng)}/core-memory/blocks/human\n{jd(block)}", pw)


@cred("agno-agent-tools-init-python")
def _agno(rng):
    tok = "ghp_" + mixed(rng, 36)
    return out(f"""
        from agno.agent import Agent
        from agno.tools.github import GithubTools

        agent = Agent(
            tools=[GithubTools(access_token="{tok}")],
            show_tool_calls=True,
            markdown=True,
        )
        agent.print_response("List open PRs on acme/webshop older than a week")
        """, tok)


@cred("litellm-proxy-config-master-key-and-upstream")
def _litellm(rng):
    master = "sk-" + mixed(rng, 22)
    upstream = "dsk-" + hexa(rng, 32)
    return out(f"""
        model_list:
          - model_name: reasoning
            litellm_params:
              model: deepseek/deepseek-reasoner
              api_key: {upstream}
        general_settings:
          master_key: {master}
          database_url: os.environ/DATABASE_URL
        litellm_settings:
          drop_params: true
          max_budget: 250
        """, master, upstream)


@cred("helicone-auth-header-in-node-fetch")
def _helicone(rng):
    key = "sk-helicone-" + lower(rng, 7) + "-" + lower(rng, 7) + "-" + lower(rng, 7) + "-" + lower(rng, 7)
    return out(f"""
        const res = await fetch("https://oai.helicone.ai/v1/chat/completions", {{
          method: "POST",
          headers: {{
            "Content-Type": "application/json",
            "Authorization": `Bearer ${{process.env.OPENAI_API_KEY}}`,
            "Helicone-Auth": "Bearer {key}",
            "Helicone-Property-Session": sessionId,
          }},
          body: JSON.stringify(payload),
        }});
        """, key)


@cred("claude-desktop-config-mcp-postgres-url-arg")
def _claude_desktop(rng):
    pw = short(rng)
    cfg = {"mcpServers": {"postgres": {"command": "npx", "args": [
        "-y", "@modelcontextprotocol/server-postgres", f"postgresql://readonly:{pw}@db.lan:5432/inventory"]},
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/kenji/Projects"]}}}
    return out(jd(cfg), pw)


@cred("cursor-mcp-json-remote-server-headers")
def _cursor_mcp(rng):
    tok = "lnr_" + mixed(rng, 40)
    cfg = {"mcpServers": {"tracker": {"url": "https://mcp.plankboard.app/sse",
                                      "headers": {"Authorization": f"Bearer {tok}"}}}}
    return out(jd(cfg), tok)


@cred("mcp-jsonrpc-tools-call-transcript-arguments")
def _mcp_call(rng):
    pw = symbolic(rng, 20)
    req = {"jsonrpc": "2.0", "id": rng.randint(2, 90), "method": "tools/call",
           "params": {"name": "ssh_exec", "arguments": {"host": "build-07.ci.lan", "username": "deploy",
                                                        "password": pw, "command": "systemctl restart runner"}}}
    resp = {"jsonrpc": "2.0", "id": req["id"], "result": {"content": [{"type": "text", "text": "exit 0"}], "isError": False}}
    return out(f"--> {jd(req, None)}\n<-- {jd(resp, None)}", pw)


@cred("vscode-mcp-json-inputs-hardcoded-env")
def _vscode_mcp(rng):
    key = "brv_" + mixed(rng, 30)
    cfg = {"servers": {"web-search": {"type": "stdio", "command": "npx",
                                      "args": ["-y", "@brave-ish/mcp-web-search"],
                                      "env": {"SEARCH_API_KEY": key}}}, "inputs": []}
    return out("// .vscode/mcp.json\n" + jd(cfg, 4), key)


@cred("windsurf-mcp-config-serverurl-query-key")
def _windsurf(rng):
    key = lower(rng, 32)
    cfg = {"mcpServers": {"maps": {"serverUrl": f"https://mcp.routewise.io/mcp?apiKey={key}&profile=driving"}}}
    return out(jd(cfg), key)


@cred("roo-code-mcp-settings-json-env-alwaysallow")
def _roo(rng):
    tok = "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    cfg = {"mcpServers": {"slack": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-slack"],
                                    "env": {"SLACK_BOT_TOKEN": tok, "SLACK_TEAM_ID": "T" + upper(rng, 10)},
                                    "alwaysAllow": ["slack_list_channels"], "disabled": False}}}
    return out("// mcp_settings.json (Roo Code)\n" + jd(cfg), tok)


@cred("continue-config-yaml-model-apikey")
def _continue(rng):
    key = "mst-" + mixed(rng, 32)
    return out(f"""
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
        """, key)


@cred("goose-config-yaml-extension-envs")
def _goose(rng):
    tok = "ntn_" + digits(rng, 11) + mixed(rng, 35)
    return out(f"""
        GOOSE_PROVIDER: anthropic
        GOOSE_MODEL: claude-sonnet-4-5
        extensions:
          notion:
            enabled: true
            type: stdio
            cmd: npx
            args: ["-y", "@notionhq/notion-mcp-server"]
            envs:
              NOTION_TOKEN: {tok}
            timeout: 300
        """, tok)


@cred("openhands-config-toml-llm-section")
def _openhands(rng):
    key = "gsk_" + mixed(rng, 52)
    return out(f"""
        [core]
        workspace_base = "./workspace"
        max_iterations = 80

        [llm]
        model = "groq/llama-3.3-70b-versatile"
        api_key = "{key}"
        temperature = 0.0
        """, key)


@cred("cline-task-history-say-text")
def _cline(rng):
    pw = phrase(rng, 3, ".")
    msgs = [{"ts": rng.randint(1767300000000, 1790000000000), "type": "say", "say": "user_feedback",
             "text": f"the sftp login is ftpuser / {pw} , upload dist/ to /var/www/html"},
            {"ts": rng.randint(1767300000000, 1790000000000), "type": "ask", "ask": "command",
             "text": "lftp -u ftpuser sftp://files.example.net -e 'mirror -R dist /var/www/html; quit'"}]
    return out(jd(msgs), pw)


@cred("aider-conf-yml-api-key-list")
def _aider(rng):
    key = "sk-or-v1-" + hexa(rng, 64)
    return out(f"""
        # ~/.aider.conf.yml
        model: openrouter/anthropic/claude-sonnet-4.5
        api-key:
          - openrouter={key}
        auto-commits: false
        dark-mode: true
        """, key)


@cred("mcp-server-stderr-startup-config-dump")
def _mcp_stderr(rng):
    key = "mg_" + hexa(rng, 48)
    return out(f"""
        2026-02-0{rng.randint(1, 9)} {hms(rng)} [mcp-mailgrid] starting stdio transport
        2026-02-0{rng.randint(1, 9)} {hms(rng)} [mcp-mailgrid] config loaded: {{ region: 'eu', apiKey: '{key}', defaultFrom: 'noreply@shop.example' }}
        2026-02-0{rng.randint(1, 9)} {hms(rng)} [mcp-mailgrid] registered 4 tools: send_email, list_templates, get_stats, suppress
        """, key)


@cred("langchain-verbose-agent-executor-action-input")
def _lc_verbose(rng):
    tok = "pat" + mixed(rng, 14) + "." + hexa(rng, 64)
    return out(f"""
        > Entering new AgentExecutor chain...
        I should create the record in the CRM base.
        Action: http_post
        Action Input: {{"url": "https://api.airtable.com/v0/app{mixed(rng, 14)}/Leads", "headers": {{"Authorization": "Bearer {tok}"}}, "body": {{"fields": {{"Name": "Acme GmbH"}}}}}}
        Observation: {{"id": "rec{mixed(rng, 14)}", "createdTime": "{when(rng)}"}}
        > Finished chain.
        """, tok)


# ==========================================================================================================
# Infrastructure as code, containers and service managers
# ==========================================================================================================


@cred("terraform-tfvars-rds-master-password")
def _tfvars(rng):
    pw = symbolic(rng, 24, "!#%*-_=+")
    return out(f"""
        region              = "eu-central-1"
        environment         = "prod"
        db_instance_class   = "db.r7g.large"
        db_master_username  = "app_admin"
        db_master_password  = "{pw}"
        allowed_cidr_blocks = ["10.40.0.0/16"]
        """, pw)


@cred("terraform-state-json-random-password-result")
def _tfstate(rng):
    pw = symbolic(rng, 32, "!#$%&*()-_=+[]{}<>:?")
    state = {"version": 4, "terraform_version": "1.10.3", "serial": rng.randint(10, 400), "lineage": uid(rng),
             "resources": [{"mode": "managed", "type": "random_password", "name": "grafana_admin",
                            "provider": "provider[\"registry.terraform.io/hashicorp/random\"]",
                            "instances": [{"schema_version": 3, "attributes": {
                                "id": "none", "length": 32, "special": True, "result": pw,
                                "bcrypt_hash": "$2a$10$" + chars(rng, _AN + "./", 53)},
                                "sensitive_attributes": [[{"type": "get_attr", "value": "result"}]]}]}]}
    return out(jd(state), pw)


@cred("terraform-plan-output-connection-string-attribute")
def _tfplan(rng):
    pw = mixed(rng, 20)
    return out(f"""
          # azurerm_linux_web_app.api will be updated in-place
          ~ resource "azurerm_linux_web_app" "api" {{
                id   = "/subscriptions/{uid(rng)}/resourceGroups/rg-api/providers/Microsoft.Web/sites/api-prod"
                name = "api-prod"

              ~ app_settings = {{
                  ~ "SQL_CONN" = "Server=tcp:sql-prod.database.windows.net;Database=api;User ID=apiuser;Password=oldvalue-redacted;" -> "Server=tcp:sql-prod.database.windows.net;Database=api;User ID=apiuser;Password={pw};"
                }}
            }}

        Plan: 0 to add, 1 to change, 0 to destroy.
        """, pw)


@cred("pulumi-stack-yaml-plaintext-config-value")
def _pulumi_yaml(rng):
    tok = "dop_v1_" + hexa(rng, 64)
    return out(f"""
        # Pulumi.staging.yaml
        config:
          digitalocean:token: {tok}
          app:region: fra1
          app:dropletSize: s-2vcpu-4gb
        """, tok)


@cred("pulumi-stack-output-show-secrets")
def _pulumi_out(rng):
    pw = b64url(rng, 18)
    return out(f"""
        $ pulumi stack output --show-secrets
        Current stack outputs (4):
            OUTPUT          VALUE
            bucketName      assets-{lower(rng, 8)}
            dbEndpoint      pg-main.c{lower(rng, 10)}.eu-west-1.rds.amazonaws.com
            dbPassword      {pw}
            url             https://app.example.org
        """, pw)


@cred("helm-values-yaml-auth-root-password")
def _helm_values(rng):
    pw = mixed(rng, 16)
    return out(f"""
        architecture: replication
        auth:
          enabled: true
          rootPassword: "{pw}"
          usernames: [catalog]
          databases: [catalog]
        persistence:
          size: 20Gi
        metrics:
          enabled: true
        """, pw)


@cred("helm-upgrade-set-flag-shell-history")
def _helm_set(rng):
    pw = person(rng)
    return out(f"""
         1012  kubectl config use-context prod-euw1
         1013  helm repo update
         1014  helm upgrade --install keycloak oci://registry-1.docker.io/bitnamicharts/keycloak -n iam --set auth.adminUser=admin --set auth.adminPassword='{pw}' --version 24.4.1
         1015  kubectl -n iam get pods -w
        """, pw)


@cred("ansible-inventory-ini-become-pass")
def _ansible_inv(rng):
    pw = person(rng)
    return out(f"""
        [webservers]
        web1.lan ansible_host=10.0.5.11
        web2.lan ansible_host=10.0.5.12

        [webservers:vars]
        ansible_user=ops
        ansible_become=true
        ansible_become_pass={pw}
        """, pw)


@cred("ansible-group-vars-unvaulted-smtp")
def _ansible_vars(rng):
    pw = short(rng)
    return out(f"""
        ---
        # group_vars/mailrelay.yml
        postfix_relayhost: "[smtp.eu.sparkpost.com]:587"
        postfix_sasl_user: SMTP_Injection
        postfix_sasl_password: {pw}
        postfix_inet_protocols: ipv4
        """, pw)


@cred("ansible-playbook-extra-vars-cli")
def _ansible_cli(rng):
    pw = leet(rng)
    return out(f"""
        ops@bastion:~/infra$ ansible-playbook -i prod site.yml --tags mariadb -e "mariadb_root_password={pw}" --limit db
        PLAY [db] **********************************************************************
        TASK [Gathering Facts] *********************************************************
        ok: [db1.lan]
        """, pw)


@cred("nixos-configuration-grafana-admin-password")
def _nixos(rng):
    pw = phrase(rng, 3, "-") + str(rng.randint(10, 99))
    return out(f"""
        {{ config, pkgs, ... }}:
        {{
          services.grafana = {{
            enable = true;
            settings = {{
              server.http_port = 3000;
              security.admin_user = "admin";
              security.admin_password = "{pw}";
            }};
          }};
          networking.firewall.allowedTCPPorts = [ 3000 ];
        }}
        """, pw)


@cred("bazelrc-remote-header-api-key")
def _bazelrc(rng):
    key = mixed(rng, 20)
    return out(f"""
        build --bes_results_url=https://app.buildbuddy.io/invocation/
        build --bes_backend=grpcs://remote.buildbuddy.io
        build --remote_cache=grpcs://remote.buildbuddy.io
        build --remote_header=x-buildbuddy-api-key={key}
        build --remote_timeout=3600
        """, key)


@cred("earthfile-env-npm-token-baked")
def _earthfile(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f"""
        VERSION 0.8
        FROM node:22-bookworm-slim
        WORKDIR /app

        deps:
            COPY package.json package-lock.json ./
            ENV NPM_TOKEN={tok}
            RUN echo "//registry.npmjs.org/:_authToken=${{NPM_TOKEN}}" > .npmrc && npm ci
            SAVE ARTIFACT node_modules
        """, tok)


@cred("justfile-exported-variable")
def _justfile(rng):
    key = "rk_" + lower(rng, 30)
    return out(f"""
        set dotenv-load := false
        export RESEND_KEY := "{key}"

        dev:
            bun run dev

        send-test:
            curl -s -X POST https://api.mailer.example/emails -H "Authorization: Bearer $RESEND_KEY" -d @fixtures/test.json
        """, key)


@cred("taskfile-yml-env-block")
def _taskfile(rng):
    pw = mixed(rng, 14)
    return out(f"""
        version: '3'
        env:
          MINIO_ROOT_USER: minioadmin
          MINIO_ROOT_PASSWORD: {pw}
        tasks:
          up:
            cmds:
              - docker compose up -d minio
        """, pw)


@cred("kustomize-secret-generator-literals")
def _kustomize(rng):
    pw = symbolic(rng, 16, "#%+-=_")
    return out(f"""
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: payments
        resources:
          - deployment.yaml
        secretGenerator:
          - name: ledger-db
            literals:
              - username=ledger
              - password={pw}
        """, pw)


@cred("k8s-secret-data-base64-opaque")
def _k8s_secret(rng):
    raw = symbolic(rng, 20, "!#%&*-_")
    enc = base64.b64encode(raw.encode()).decode()
    user = base64.b64encode(b"svc-reporting").decode()
    return out(f"""
        apiVersion: v1
        kind: Secret
        metadata:
          name: reporting-db
          namespace: analytics
          uid: {uid(rng)}
          resourceVersion: "{digits(rng, 8)}"
        type: Opaque
        data:
          DB_USER: {user}
          DB_PASSWORD: {enc}
        """, enc)


@cred("k8s-secret-dockerconfigjson-base64")
def _k8s_dockercfg(rng):
    pw = "glpat-" + b64url(rng, 15)
    auth = basic("ci-bot", pw)
    inner = json.dumps({"auths": {"registry.gitlab.example.com": {"username": "ci-bot", "password": pw, "auth": auth}}})
    enc = base64.b64encode(inner.encode()).decode()
    return out(f"""
        apiVersion: v1
        kind: Secret
        metadata:
          name: regcred
        type: kubernetes.io/dockerconfigjson
        data:
          .dockerconfigjson: {enc}
        """, enc)


@cred("compose-yaml-environment-list-form")
def _compose(rng):
    pw = mixed(rng, 18)
    return out(f"""
        services:
          db:
            image: postgres:17-alpine
            environment:
              - POSTGRES_USER=umami
              - POSTGRES_PASSWORD={pw}
              - POSTGRES_DB=umami
            volumes:
              - pgdata:/var/lib/postgresql/data
        volumes:
          pgdata:
        """, pw)


@cred("dockerfile-arg-default-token")
def _dockerfile(rng):
    tok = "cr_pat_" + mixed(rng, 30)
    return out(f"""
        FROM golang:1.24 AS build
        ARG PRIVATE_MODULE_TOKEN={tok}
        RUN git config --global url."https://oauth2:${{PRIVATE_MODULE_TOKEN}}@git.corp.example/".insteadOf "https://git.corp.example/"
        WORKDIR /src
        COPY . .
        RUN CGO_ENABLED=0 go build -o /out/api ./cmd/api
        """, tok)


@cred("packer-hcl-variable-default-winrm")
def _packer(rng):
    pw = symbolic(rng, 15, "!@#")
    return out(f"""
        variable "winrm_password" {{
          type    = string
          default = "{pw}"
        }}

        source "vsphere-iso" "win2022" {{
          communicator   = "winrm"
          winrm_username = "Administrator"
          winrm_password = var.winrm_password
        }}
        """, pw)


@cred("cue-file-service-credentials")
def _cue(rng):
    key = "sk_ops_" + lower(rng, 28)
    return out(f"""
        package deploy

        services: notifier: {{
        \timage:    "ghcr.io/acme/notifier:2.3.1"
        \treplicas: 2
        \tenv: {{
        \t\tPAGER_ROUTING_KEY: "{key}"
        \t\tLOG_LEVEL:         "info"
        \t}}
        }}
        """, key)


@cred("jsonnet-local-object-password")
def _jsonnet(rng):
    pw = mixed(rng, 22)
    return out(f"""
        local creds = {{
          user: 'grafana_reader',
          password: '{pw}',
        }};

        {{
          datasources: [{{
            name: 'Metrics',
            type: 'postgres',
            url: 'pg-metrics:5432',
            user: creds.user,
            secureJsonData: {{ password: creds.password }},
          }}],
        }}
        """, pw)


@cred("argocd-repository-secret-stringdata")
def _argocd(rng):
    tok = "gho_" + mixed(rng, 36)
    return out(f"""
        apiVersion: v1
        kind: Secret
        metadata:
          name: repo-platform-charts
          namespace: argocd
          labels:
            argocd.argoproj.io/secret-type: repository
        stringData:
          type: git
          url: https://github.com/acme/platform-charts
          username: argocd
          password: {tok}
        """, tok)


@cred("vault-kv-get-format-json-data")
def _vault_kv(rng):
    pw = symbolic(rng, 26, "-_.~")
    body = {"request_id": uid(rng), "lease_id": "", "lease_duration": 0, "renewable": False,
            "data": {"data": {"password": pw, "username": "billing_rw"},
                     "metadata": {"created_time": when(rng), "version": rng.randint(2, 19)}}}
    return out("$ vault kv get -format=json -mount=secret apps/billing/db\n" + jd(body), pw)


@cred("cloudformation-parameters-json-file")
def _cfn(rng):
    pw = mixed(rng, 16)
    params = [{"ParameterKey": "Environment", "ParameterValue": "prod"},
              {"ParameterKey": "DBUsername", "ParameterValue": "wpadmin"},
              {"ParameterKey": "DBPassword", "ParameterValue": pw},
              {"ParameterKey": "InstanceType", "ParameterValue": "t4g.medium"}]
    return out(jd(params), pw)


@cred("bicep-parameters-file-secure-value")
def _bicep(rng):
    pw = symbolic(rng, 20, "!$%&*")
    return out(f"""
        using './main.bicep'

        param location = 'westeurope'
        param sqlAdministratorLogin = 'sqladmin'
        param sqlAdministratorLoginPassword = '{pw}'
        param skuName = 'GP_S_Gen5_2'
        """, pw)


@cred("nomad-job-hcl-template-env")
def _nomad(rng):
    tok = "hvs." + b64url(rng, 70)[:91]
    return out(f"""
        job "ingest" {{
          group "workers" {{
            task "consumer" {{
              driver = "docker"
              config {{ image = "registry.lan/ingest:5.2" }}
              env {{
                VAULT_TOKEN = "{tok}"
                KAFKA_BROKERS = "kafka-1:9092,kafka-2:9092"
              }}
            }}
          }}
        }}
        """, tok)


@cred("systemd-unit-environment-line")
def _systemd(rng):
    key = "dd" + hexa(rng, 30)
    return out(f"""
        [Unit]
        Description=Metrics shipper
        After=network-online.target

        [Service]
        Type=simple
        User=shipper
        Environment="SHIP_API_KEY={key}" "SHIP_SITE=eu1"
        ExecStart=/usr/local/bin/shipper --config /etc/shipper/shipper.yaml
        Restart=on-failure

        [Install]
        WantedBy=multi-user.target
        """, key)


@cred("systemd-dropin-override-conf")
def _systemd_dropin(rng):
    pw = person(rng)
    return out(f"""
        $ sudo systemctl cat nextcloud-cron.service
        # /etc/systemd/system/nextcloud-cron.service
        [Service]
        ExecStart=/usr/bin/php -f /var/www/nextcloud/cron.php

        # /etc/systemd/system/nextcloud-cron.service.d/override.conf
        [Service]
        Environment=NC_REDIS_PASSWORD={pw}
        """, pw)


@cred("crontab-mysqldump-inline-password")
def _cron(rng):
    pw = short(rng)
    return out(f"""
        # m h  dom mon dow   command
        15 2 * * * /usr/bin/mysqldump -u backup -p{pw} --single-transaction --all-databases | gzip > /srv/backup/mysql-$(date +\\%F).sql.gz
        0 4 * * 0 find /srv/backup -name '*.sql.gz' -mtime +30 -delete
        """, pw)


@cred("supervisord-program-environment")
def _supervisord(rng):
    key = "whsec_" + b64(rng, 24)
    return out(f"""
        [program:webhook-worker]
        command=/opt/venv/bin/python -m worker --queue webhooks
        directory=/opt/app
        user=app
        autostart=true
        autorestart=true
        environment=DJANGO_SETTINGS_MODULE="app.settings.prod",WEBHOOK_SIGNING_SECRET="{key}"
        stdout_logfile=/var/log/app/webhook-worker.log
        """, key)


@cred("launchd-plist-environment-variables")
def _launchd(rng):
    tok = "tskey-auth-k" + mixed(rng, 10) + "CNTRL-" + mixed(rng, 33)
    return out(f"""
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">
        <dict>
        \t<key>Label</key>
        \t<string>com.example.tailscale-up</string>
        \t<key>ProgramArguments</key>
        \t<array>
        \t\t<string>/usr/local/bin/tailscale</string>
        \t\t<string>up</string>
        \t</array>
        \t<key>EnvironmentVariables</key>
        \t<dict>
        \t\t<key>TS_AUTHKEY</key>
        \t\t<string>{tok}</string>
        \t</dict>
        \t<key>RunAtLoad</key>
        \t<true/>
        </dict>
        </plist>
        """, tok)


@cred("openrc-conf-d-options")
def _openrc(rng):
    pw = mixed(rng, 12)
    return out(f"""
        # /etc/conf.d/transmission-daemon
        runas_user=transmission
        TRANSMISSION_OPTIONS="--encryption-preferred --auth --username admin --password {pw} --allowed 192.168.1.*"
        """, pw)


@cred("schtasks-create-ru-rp-cmdline")
def _schtasks(rng):
    pw = person(rng)
    return out(f"""
        C:\\Users\\admin> schtasks /Create /TN "Nightly Export" /TR "C:\\tools\\export.cmd" /SC DAILY /ST 02:30 /RU CORP\\svc_export /RP {pw}
        SUCCESS: The scheduled task "Nightly Export" has successfully been created.
        """, pw)


# ==========================================================================================================
# Database shells, connection strings, brokers
# ==========================================================================================================


@cred("psql-uri-argument-terminal")
def _psql_uri(rng):
    pw = mixed(rng, 24)
    return out(f"""
        ~ ❯ psql "postgresql://analyst:{pw}@ep-quiet-river-{lower(rng, 6)}.eu-central-1.aws.neon.tech/warehouse?sslmode=require"
        psql (17.2, server 16.6)
        SSL connection (protocol: TLSv1.3, cipher: TLS_AES_256_GCM_SHA384, compression: off, ALPN: postgresql)
        Type "help" for help.

        warehouse=> \\dt
        """, pw)


@cred("pgpassword-env-prefix-pg-dump")
def _pgpassword(rng):
    pw = symbolic(rng, 14, "#%+=")
    return out(f"""
        root@backup-01:~# PGPASSWORD='{pw}' pg_dump -h 10.20.0.5 -U odoo -Fc odoo_prod > /backup/odoo_$(date +%F).dump
        root@backup-01:~# ls -lh /backup | tail -1
        -rw-r--r-- 1 root root 2.3G Mar  4 02:11 odoo_2026-03-04.dump
        """, pw)


@cred("mysql-client-dash-p-glued")
def _mysql(rng):
    pw = person(rng)
    return out(f"""
        $ mysql -h 127.0.0.1 -P 3307 -u shopware -p'{pw}' shopware -e 'SELECT COUNT(*) FROM product;'
        mysql: [Warning] Using a password on the command line interface can be insecure.
        +----------+
        | COUNT(*) |
        +----------+
        |    48213 |
        +----------+
        """, pw)


@cred("mongosh-srv-uri-connect")
def _mongosh(rng):
    pw = mixed(rng, 16)
    return out(f"""
        $ mongosh "mongodb+srv://appUser:{pw}@cluster0.{lower(rng, 5)}.mongodb.net/catalog?retryWrites=true&w=majority"
        Current Mongosh Log ID:\t{hexa(rng, 24)}
        Connecting to:\t\tmongodb+srv://<credentials>@cluster0.{lower(rng, 5)}.mongodb.net/catalog
        Using MongoDB:\t\t8.0.4
        Using Mongosh:\t\t2.3.8
        Atlas atlas-{lower(rng, 6)}-shard-0 [primary] catalog>
        """, pw)


@cred("redis-cli-dash-a-warning")
def _redis_a(rng):
    pw = hexa(rng, 40)
    return out(f"""
        $ redis-cli -h cache-2.lan -p 6379 -a {pw} INFO keyspace
        Warning: Using a password with '-a' or '-u' option on the command line interface may not be safe.
        # Keyspace
        db0:keys=182311,expires=90233,avg_ttl=3412987
        """, pw)


@cred("redis-cli-interactive-auth-acl-user")
def _redis_auth(rng):
    pw = phrase(rng, 4, "_")
    return out(f"""
        127.0.0.1:6379> AUTH worker {pw}
        OK
        127.0.0.1:6379> XLEN jobs:email
        (integer) 42
        """, pw)


@cred("clickhouse-client-password-flag")
def _clickhouse(rng):
    pw = mixed(rng, 20)
    return out(f"""
        $ clickhouse-client --host ch-01.lan --secure --user etl --password {pw} --query "SELECT count() FROM events WHERE date = today()"
        93822147
        """, pw)


@cred("cqlsh-u-p-flags")
def _cqlsh(rng):
    pw = short(rng)
    return out(f"""
        $ cqlsh cass-seed-1.lan 9042 -u cassandra_app -p {pw} --ssl
        Connected to Prod Cluster at cass-seed-1.lan:9042
        [cqlsh 6.2.0 | Cassandra 5.0.2 | CQL spec 3.4.7 | Native protocol v5]
        cassandra_app@cqlsh> DESCRIBE KEYSPACES;
        """, pw)


@cred("pgpass-file-line")
def _pgpass(rng):
    pw = symbolic(rng, 18, "#%&")
    return out(f"""
        # ~/.pgpass  (chmod 0600)
        localhost:5432:*:postgres:postgres
        db-replica.lan:5432:reports:reporter:{pw}
        """, pw)


@cred("my-cnf-client-section")
def _mycnf(rng):
    pw = mixed(rng, 15)
    return out(f"""
        [client]
        user=backup
        password="{pw}"
        host=db-primary.lan

        [mysqldump]
        single-transaction
        quick
        """, pw)


@cred("jdbc-url-password-param-properties")
def _jdbc(rng):
    pw = short(rng)
    return out(f"""
        quarkus.datasource.db-kind=mssql
        quarkus.datasource.jdbc.url=jdbc:sqlserver://sql01.corp.lan:1433;databaseName=HR;user=hr_app;password={pw};encrypt=true;trustServerCertificate=true
        quarkus.hibernate-orm.database.generation=none
        """, pw)


@cred("odbc-ini-dsn-pwd")
def _odbc(rng):
    pw = person(rng)
    return out(f"""
        [WarehouseDSN]
        Driver      = /opt/snowflake/snowflakeodbc/lib/universal/libSnowflake.dylib
        Server      = xy{lower(rng, 5)}.eu-west-1.snowflakecomputing.com
        Database    = ANALYTICS
        Warehouse   = REPORTING_WH
        UID         = TABLEAU_SVC
        PWD         = {pw}
        """, pw)


@cred("appsettings-json-ado-connection-string")
def _appsettings(rng):
    pw = symbolic(rng, 18, "!#$%*")
    cfg = {"Logging": {"LogLevel": {"Default": "Information"}}, "ConnectionStrings": {
        "Default": f"Server=sql-prod,1433;Database=Orders;User Id=orders_app;Password={pw};TrustServerCertificate=True;"},
        "AllowedHosts": "*"}
    return out(jd(cfg), pw)


@cred("sqlplus-user-slash-pass-at-tns")
def _sqlplus(rng):
    pw = upper(rng, 12)
    return out(f"""
        [oracle@erpdb ~]$ sqlplus apps/{pw}@ERPPROD @/home/oracle/scripts/close_period.sql

        SQL*Plus: Release 19.0.0.0.0 - Production on Tue Mar 3 22:14:09 2026
        Version 19.24.0.0.0

        Connected to:
        Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production
        """, pw)


@cred("cypher-shell-password-flag")
def _cypher(rng):
    pw = mixed(rng, 13)
    return out(f"""
        $ cypher-shell -a neo4j+s://{hexa(rng, 8)}.databases.neo4j.io -u neo4j -p {pw} "MATCH (n:Person) RETURN count(n);"
        count(n)
        21877
        """, pw)


@cred("influx-cli-config-create-token")
def _influx(rng):
    tok = b64url(rng, 64) + "=="
    return out(f"""
        $ influx config create --config-name prod --host-url https://eu-central-1-1.aws.cloud2.influxdata.com --org sensors --token {tok} --active
        Active\tName\tURL\t\t\t\t\t\t\tOrg
        *\tprod\thttps://eu-central-1-1.aws.cloud2.influxdata.com\tsensors
        """, tok)


@cred("cockroach-sql-url-flag")
def _cockroach(rng):
    pw = b64url(rng, 16)
    return out(f"""
        $ cockroach sql --url "postgresql://maxroach:{pw}@free-tier.gcp-us-central1.cockroachlabs.cloud:26257/bank?sslmode=verify-full"
        #
        # Welcome to the CockroachDB SQL shell.
        """, pw)


@cred("surreal-sql-pass-flag")
def _surreal(rng):
    pw = phrase(rng, 3, "-")
    return out(f"""
        $ surreal sql --endpoint http://localhost:8000 --namespace shop --database main --username root --password {pw}
        shop/main> SELECT count() FROM order GROUP ALL;
        """, pw)


@cred("snowsql-config-connections")
def _snowsql(rng):
    pw = mixed(rng, 19)
    return out(f"""
        [connections.prod]
        accountname = acme-eu1
        username = DBT_RUNNER
        password = {pw}
        warehousename = TRANSFORM_WH
        rolename = TRANSFORMER
        """, pw)


@cred("duckdb-create-secret-s3")
def _duckdb(rng):
    secret = b64(rng, 30)[:40]
    return out(f"""
        D CREATE SECRET lake (
              TYPE s3,
              KEY_ID 'AKIA{upper(rng, 16)}',
              SECRET '{secret}',
              REGION 'eu-west-1'
          );
        ┌─────────┐
        │ Success │
        ├─────────┤
        │ true    │
        └─────────┘
        """, secret)


@cred("elasticsearch-curl-u-basic")
def _es_curl(rng):
    pw = mixed(rng, 20)
    return out(f"""
        $ curl -s -u elastic:{pw} "https://es01.lan:9200/_cat/indices?v&s=index" --cacert ca.crt
        health status index              uuid                   pri rep docs.count
        green  open   logs-app-2026.03   {b64url(rng, 16)[:22]}   1   1    8822101
        """, pw)


@cred("couchbase-cbq-password")
def _cbq(rng):
    pw = short(rng)
    return out(f"""
        $ /opt/couchbase/bin/cbq -e couchbase://cb1.lan -u Administrator -p {pw}
         Connected to : http://cb1.lan:8091/. Type Ctrl-D or \\QUIT to exit.
        cbq> SELECT COUNT(*) FROM `travel-sample`;
        """, pw)


@cred("kafka-client-properties-sasl-jaas")
def _kafka(rng):
    secret = b64(rng, 48)
    return out(f"""
        bootstrap.servers=pkc-{lower(rng, 5)}.europe-west3.gcp.confluent.cloud:9092
        security.protocol=SASL_SSL
        sasl.mechanism=PLAIN
        sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="{upper(rng, 16)}" password="{secret}";
        client.dns.lookup=use_all_dns_ips
        """, secret)


@cred("nats-creds-file-nkey-seed")
def _nats(rng):
    seed = "SUA" + b32(rng, 55)
    jwt_part = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ." + b64url(rng, 180) + "." + b64url(rng, 64)
    return out(f"""
        -----BEGIN NATS USER JWT-----
        {jwt_part}
        ------END NATS USER JWT------

        ************************* IMPORTANT *************************
        NKEY Seed printed below can be used to sign and prove identity.
        NKEYs are sensitive and should be treated as secrets.

        -----BEGIN USER NKEY SEED-----
        {seed}
        ------END USER NKEY SEED------
        """, seed)


@cred("pulsar-client-conf-auth-params-token")
def _pulsar(rng):
    tok = jwt(rng, {"sub": "ingest-svc"}, "RS256")
    return out(f"""
        webServiceUrl=https://pulsar.lan:8443/
        brokerServiceUrl=pulsar+ssl://pulsar.lan:6651/
        authPlugin=org.apache.pulsar.client.impl.auth.AuthenticationToken
        authParams=token:{tok}
        tlsAllowInsecureConnection=false
        """, tok)


@cred("mosquitto-pub-capital-p-password")
def _mosq(rng):
    pw = mixed(rng, 14)
    return out(f"""
        pi@sensor-hub:~ $ mosquitto_pub -h mqtt.home.lan -p 8883 --cafile /etc/ssl/certs/home-ca.pem -u sensorhub -P {pw} -t home/garage/door -m open -r
        """, pw)


@cred("celery-broker-url-amqp-settings")
def _celery(rng):
    pw = lower(rng, 24)
    return out(f"""
        # settings/production.py
        CELERY_BROKER_URL = "amqp://celery:{pw}@rabbitmq.internal:5672/prod"
        CELERY_RESULT_BACKEND = "django-db"
        CELERY_TASK_ACKS_LATE = True
        """, pw)


@cred("azure-service-bus-connection-string-env")
def _servicebus(rng):
    key = b64(rng, 32)
    return out(f"""
        SERVICEBUS_CONNECTION="Endpoint=sb://orders-prod.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}"
        SERVICEBUS_QUEUE=order-events
        """, key)


@cred("nsq-style-redis-url-sidekiq-yml")
def _sidekiq_redis(rng):
    pw = hexa(rng, 32)
    return out(f"""
        :concurrency: 10
        :queues:
          - critical
          - default
        :redis:
          :url: rediss://default:{pw}@redis-{digits(rng, 5)}.c{digits(rng, 3)}.eu-west-1-2.ec2.redns.redis-cloud.com:{rng.randint(10000, 19999)}/0
        """, pw)


# ==========================================================================================================
# Cloud CLIs and hosting
# ==========================================================================================================


@cred("aws-credentials-file-profile")
def _aws_creds(rng):
    secret = b64(rng, 30)[:40].replace("+", "/")
    return out(f"""
        [default]
        aws_access_key_id = AKIA{upper(rng, 16)}
        aws_secret_access_key = {secret}

        [sandbox]
        sso_session = corp
        sso_account_id = {digits(rng, 12)}
        sso_role_name = Developer
        """, secret)


@cred("aws-configure-interactive-transcript")
def _aws_configure(rng):
    secret = b64(rng, 30)[:40]
    return out(f"""
        $ aws configure --profile ci
        AWS Access Key ID [None]: AKIA{upper(rng, 16)}
        AWS Secret Access Key [None]: {secret}
        Default region name [None]: us-east-2
        Default output format [None]: json
        """, secret)


@cred("gcloud-service-account-json-private-key")
def _gcp_sa(rng):
    line = pem_line(rng)
    key = {"type": "service_account", "project_id": "acme-data-" + digits(rng, 6),
           "private_key_id": hexa(rng, 40),
           "private_key": f"-----BEGIN PRIVATE KEY-----\n{line}\n{b64(rng, 48)}\n-----END PRIVATE KEY-----\n",
           "client_email": "etl-runner@acme-data.iam.gserviceaccount.com", "client_id": digits(rng, 21),
           "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token"}
    return out(jd(key), line)


@cred("az-login-service-principal-dash-p")
def _az(rng):
    secret = mixed(rng, 3) + "8Q~" + chars(rng, _AN + "~._-", 34)
    return out(f"""
        $ az login --service-principal -u {uid(rng)} -p '{secret}' --tenant {uid(rng)}
        [
          {{
            "cloudName": "AzureCloud",
            "id": "{uid(rng)}",
            "isDefault": true,
            "name": "Pay-As-You-Go",
            "state": "Enabled",
            "user": {{ "type": "servicePrincipal" }}
          }}
        ]
        """, secret)


@cred("doctl-auth-init-access-token-flag")
def _doctl(rng):
    tok = "dop_v1_" + hexa(rng, 64)
    return out(f"""
        $ doctl auth init --context personal --access-token {tok}
        Validating token... ✔
        $ doctl compute droplet list --format Name,PublicIPv4
        Name        Public IPv4
        web-1       {ip(rng)}
        """, tok)


@cred("flyctl-secrets-set-cmdline")
def _fly(rng):
    key = b64url(rng, 48)
    return out(f"""
        $ fly secrets set SECRET_KEY_BASE={key} -a acme-phoenix
        Updating existing machines in 'acme-phoenix' with rolling strategy
        -------
         ✔ Machine {hexa(rng, 14)} [app] update succeeded
        -------
        """, key)


@cred("wrangler-toml-vars-plain")
def _wrangler(rng):
    tok = "tur_" + mixed(rng, 32)
    return out(f"""
        name = "edge-api"
        main = "src/index.ts"
        compatibility_date = "2026-01-15"

        [vars]
        TURSO_URL = "libsql://edge-acme.turso.io"
        TURSO_AUTH_TOKEN = "{tok}"

        [[kv_namespaces]]
        binding = "CACHE"
        id = "{hexa(rng, 32)}"
        """, tok)


@cred("vercel-env-pull-dotenv-local")
def _vercel(rng):
    secret = b64(rng, 32)
    return out(f"""
        # Created by Vercel CLI
        NEXTAUTH_SECRET="{secret}"
        NEXTAUTH_URL="http://localhost:3000"
        VERCEL="1"
        VERCEL_ENV="development"
        VERCEL_GIT_COMMIT_SHA=""
        """, secret)


@cred("netlify-env-set-cli")
def _netlify(rng):
    key = "sk_live_" + mixed(rng, 24)
    return out(f"""
        $ netlify env:set SNIPCART_SECRET_KEY {key} --context production
        Set environment variable SNIPCART_SECRET_KEY={key} in the production context
        """, key)


@cred("railway-variables-kv-output")
def _railway(rng):
    pw = lower(rng, 32)
    return out(f"""
        $ railway variables --kv
        PGDATABASE=railway
        PGHOST=postgres.railway.internal
        PGPASSWORD={pw}
        PGPORT=5432
        PGUSER=postgres
        RAILWAY_ENVIRONMENT=production
        """, pw)


@cred("supabase-env-service-role-jwt")
def _supabase(rng):
    ref = lower(rng, 20)
    tok = jwt(rng, {"iss": "supabase", "ref": ref, "role": "service_role", "iat": 1767300000, "exp": 2082876000})
    return out(f"""
        NEXT_PUBLIC_SUPABASE_URL=https://{ref}.supabase.co
        SUPABASE_SERVICE_ROLE_KEY={tok}
        """, tok)


@cred("linode-cli-config-token")
def _linode(rng):
    tok = hexa(rng, 64)
    return out(f"""
        [DEFAULT]
        default-user = ops-team

        [ops-team]
        token = {tok}
        region = eu-central
        type = g6-standard-2
        image = linode/debian12
        """, tok)


@cred("scaleway-config-yaml-secret-key")
def _scw(rng):
    secret = uid(rng)
    return out(f"""
        # ~/.config/scw/config.yaml
        access_key: SCW{upper(rng, 17)}
        secret_key: {secret}
        default_organization_id: {uid(rng)}
        default_project_id: {uid(rng)}
        default_region: fr-par
        default_zone: fr-par-2
        """, secret)


@cred("oci-config-pass-phrase")
def _oci(rng):
    pw = phrase(rng, 4, " ")
    return out(f"""
        [DEFAULT]
        user=ocid1.user.oc1..aaaaaaaa{lower(rng, 52)}
        fingerprint={":".join(rng.randbytes(1).hex() for _ in range(16))}
        tenancy=ocid1.tenancy.oc1..aaaaaaaa{lower(rng, 52)}
        region=eu-frankfurt-1
        key_file=~/.oci/oci_api_key.pem
        pass_phrase={pw}
        """, pw)


@cred("aliyun-cli-config-json-access-secret")
def _aliyun(rng):
    secret = mixed(rng, 30)
    cfg = {"current": "default", "profiles": [{"name": "default", "mode": "AK", "access_key_id": "LTAI5t" + mixed(rng, 18),
                                               "access_key_secret": secret, "region_id": "cn-hangzhou", "output_format": "json",
                                               "language": "zh"}]}
    return out(jd(cfg), secret)


@cred("ibmcloud-login-apikey-flag")
def _ibm(rng):
    key = b64url(rng, 33)[:44]
    return out(f"""
        $ ibmcloud login --apikey {key} -r eu-de -g default
        API endpoint: https://cloud.ibm.com
        Authenticating...
        OK
        """, key)


@cred("render-yaml-envvars-value")
def _render(rng):
    secret = hexa(rng, 64)
    return out(f"""
        services:
          - type: web
            name: rails-api
            runtime: ruby
            buildCommand: bundle install && bundle exec rails assets:precompile
            startCommand: bundle exec puma -C config/puma.rb
            envVars:
              - key: RAILS_MASTER_KEY
                value: {secret[:32]}
              - key: WEB_CONCURRENCY
                value: 2
        """, secret[:32])


@cred("cloudflare-api-token-curl-verify")
def _cf(rng):
    tok = mixed(rng, 40)
    return out(f"""
        $ curl "https://api.cloudflare.com/client/v4/user/tokens/verify" -H "Authorization: Bearer {tok}"
        {{"result":{{"id":"{hexa(rng, 32)}","status":"active"}},"success":true,"errors":[],"messages":[{{"code":10000,"message":"This API Token is valid and active","type":null}}]}}
        """, tok)


@cred("exoscale-cli-toml-account-secret")
def _exo(rng):
    secret = b64url(rng, 32)
    return out(f"""
        defaultaccount = "lab"

        [[accounts]]
          account = "acme-lab"
          defaultZone = "ch-gva-2"
          key = "EXO{hexa(rng, 24)}"
          name = "lab"
          secret = "{secret}"
        """, secret)


# ==========================================================================================================
# Devices, IoT, mobile and game servers
# ==========================================================================================================


@cred("arduino-sketch-wifi-define")
def _arduino(rng):
    pw = person(rng)
    return out(f"""
        #include <WiFiNINA.h>
        #include <ArduinoMqttClient.h>

        #define WIFI_SSID     "Zuhause-5G"
        #define WIFI_PASSWORD "{pw}"
        #define MQTT_BROKER   "192.168.178.40"

        WiFiClient wifi;
        MqttClient mqtt(wifi);

        void setup() {{
          Serial.begin(115200);
          while (WiFi.begin(WIFI_SSID, WIFI_PASSWORD) != WL_CONNECTED) delay(5000);
        }}
        """, pw)


@cred("esp-idf-sdkconfig-wifi-password")
def _sdkconfig(rng):
    pw = mixed(rng, 16)
    return out(f"""
        #
        # Example Connection Configuration
        #
        CONFIG_EXAMPLE_CONNECT_WIFI=y
        CONFIG_EXAMPLE_WIFI_SSID="lab-iot"
        CONFIG_EXAMPLE_WIFI_PASSWORD="{pw}"
        CONFIG_EXAMPLE_WIFI_CONN_MAX_RETRY=6
        # CONFIG_EXAMPLE_WIFI_SCAN_METHOD_FAST is not set
        """, pw)


@cred("esphome-yaml-wifi-and-api-encryption-key")
def _esphome(rng):
    pw = phrase(rng, 3, "")
    key = b64(rng, 32)
    return out(f"""
        esphome:
          name: porch-light
        esp32:
          board: esp32-c3-devkitm-1
        wifi:
          ssid: "Casa"
          password: "{pw}"
        api:
          encryption:
            key: "{key}"
        ota:
          - platform: esphome
        """, pw, key)


@cred("tasmota-console-backlog-mqtt")
def _tasmota(rng):
    pw = short(rng)
    return out(f"""
        12:04:31.118 CMD: Backlog MqttHost 192.168.1.20; MqttUser tasmota; MqttPassword {pw}; Topic plug_office
        12:04:31.140 RSL: RESULT = {{"MqttHost":"192.168.1.20"}}
        12:04:31.152 RSL: RESULT = {{"MqttUser":"tasmota"}}
        12:04:31.163 RSL: RESULT = {{"MqttPassword":"****"}}
        """, pw)


@cred("home-assistant-rest-command-inline-bearer")
def _ha_rest(rng):
    tok = jwt(rng, {"iss": hexa(rng, 32), "iat": 1767300000, "exp": 2082660000})
    return out(f"""
        rest_command:
          garage_sync:
            url: "http://192.168.1.60:8123/api/services/cover/close_cover"
            method: post
            headers:
              authorization: "Bearer {tok}"
              content-type: "application/json"
            payload: '{{"entity_id": "cover.garage"}}'
        """, tok)


@cred("zwave-js-ui-settings-security-keys")
def _zwave(rng):
    s2 = hexa(rng, 32).upper()
    s0 = hexa(rng, 32).upper()
    cfg = {"zwave": {"port": "/dev/serial/by-id/usb-Zooz_800_Z-Wave_Stick-if00", "securityKeys": {
        "S0_Legacy": s0, "S2_Unauthenticated": s2}, "logEnabled": True}}
    return out(jd(cfg), s2, s0)


@cred("wpa-supplicant-conf-psk-quoted")
def _wpa(rng):
    pw = phrase(rng, 3, " ")
    return out(f"""
        ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev
        update_config=1
        country=NL

        network={{
        \tssid="Vodafone-8A2F"
        \tpsk="{pw}"
        \tkey_mgmt=WPA-PSK
        }}
        """, pw)


@cred("networkmanager-nmconnection-psk")
def _nm(rng):
    pw = mixed(rng, 20)
    return out(f"""
        [connection]
        id=Office-WiFi
        uuid={uid(rng)}
        type=wifi

        [wifi]
        mode=infrastructure
        ssid=Office-WiFi

        [wifi-security]
        key-mgmt=wpa-psk
        psk={pw}
        """, pw)


@cred("android-gradle-signing-config-kts")
def _gradle_sign(rng):
    pw = symbolic(rng, 16, "!#_")
    return out(f"""
        android {{
            signingConfigs {{
                create("release") {{
                    storeFile = file("../keystore/release.jks")
                    storePassword = "{pw}"
                    keyAlias = "upload"
                    keyPassword = "{pw}"
                }}
            }}
        }}
        """, pw)


@cred("xcconfig-secrets-build-setting")
def _xcconfig(rng):
    key = "rc_" + mixed(rng, 32)
    return out(f"""
        // Secrets.xcconfig
        REVENUECAT_SECRET_KEY = {key}
        SENTRY_DSN_HOST = o{digits(rng, 6)}.ingest.us.sentry.io
        PRODUCT_BUNDLE_IDENTIFIER = com.example.habits
        """, key)


@cred("flutter-dart-define-from-file-json")
def _flutter(rng):
    key = "sb_secret_" + b64url(rng, 24)
    cfg = {"SUPABASE_URL": f"https://{lower(rng, 20)}.supabase.co", "SUPABASE_SECRET": key, "FLAVOR": "prod"}
    return out(f"""
        $ cat config/prod.json
        {jd(cfg, None)}
        $ flutter build appbundle --release --dart-define-from-file=config/prod.json
        Running Gradle task 'bundleRelease'...
        """, key)


@cred("minecraft-server-properties-rcon")
def _minecraft(rng):
    pw = mixed(rng, 12)
    return out(f"""
        #Minecraft server properties
        enable-rcon=true
        rcon.password={pw}
        rcon.port=25575
        motd=\\u00A7aFriday Night Survival
        max-players=20
        online-mode=true
        """, pw)


@cred("valheim-start-script-password-arg")
def _valheim(rng):
    pw = person(rng)
    return out(f"""
        export templdpath=$LD_LIBRARY_PATH
        export LD_LIBRARY_PATH=./linux64:$LD_LIBRARY_PATH
        export SteamAppId=892970
        ./valheim_server.x86_64 -name "Vikings of Utrecht" -port 2456 -world "Midgard" -password "{pw}" -crossplay
        export LD_LIBRARY_PATH=$templdpath
        """, pw)


@cred("factorio-server-settings-token")
def _factorio(rng):
    tok = hexa(rng, 30)
    cfg = {"name": "Megabase co-op", "visibility": {"public": True, "lan": True},
           "username": "engineer42", "token": tok, "game_password": "", "max_players": 8}
    return out(jd(cfg), tok)


@cred("arma3-server-cfg-admin-password")
def _arma(rng):
    pw = short(rng)
    return out(f"""
        hostname = "[EU] Tactical Sunday";
        password = "";
        passwordAdmin = "{pw}";
        serverCommandPassword = "";
        maxPlayers = 48;
        """, pw)


@cred("platformio-ini-build-flags-define")
def _pio(rng):
    pw = short(rng)
    return out(f"""
        [env:esp32dev]
        platform = espressif32
        board = esp32dev
        framework = arduino
        monitor_speed = 115200
        build_flags =
            -DWIFI_SSID=\\"greenhouse\\"
            -DWIFI_PASS=\\"{pw}\\"
        lib_deps = knolleary/PubSubClient@^2.8
        """, pw)


@cred("lorawan-otaa-appkey-arduino-array")
def _lorawan(rng):
    key = hexa(rng, 32).upper()
    return out(f"""
        // The Things Stack: OTAA keys, copied from the console (msb)
        static const char *appEui = "0000000000000000";
        static const char *devEui = "70B3D57ED00{upper(rng, 5)}";
        static const char *appKey = "{key}";
        """, key)


@cred("octoprint-curl-upload-x-api-key")
def _octoprint(rng):
    key = upper(rng, 32)
    return out(f"""
        $ curl -k -H "X-Api-Key: {key}" -F "select=true" -F "print=false" -F "file=@benchy_0.2mm_PLA.gcode" http://octopi.local/api/files/local
        {{"done": true, "files": {{"local": {{"name": "benchy_0.2mm_PLA.gcode", "origin": "local"}}}}}}
        """, key)


# ==========================================================================================================
# Payments, SaaS and webhooks
# ==========================================================================================================


@cred("paddle-notification-secret-env")
def _paddle(rng):
    key = "pdl_ntfset_" + lower(rng, 26) + "_" + mixed(rng, 32)
    return out(f"""
        PADDLE_ENVIRONMENT=production
        PADDLE_CLIENT_TOKEN=live_{hexa(rng, 27)}
        PADDLE_NOTIFICATION_SECRET={key}
        """, key)


@cred("mollie-api-key-php-client")
def _mollie(rng):
    key = "live_" + mixed(rng, 30)
    return out(f"""
        <?php
        require __DIR__ . '/vendor/autoload.php';

        $mollie = new \\Mollie\\Api\\MollieApiClient();
        $mollie->setApiKey('{key}');
        $payment = $mollie->payments->create([
            'amount' => ['currency' => 'EUR', 'value' => '24.95'],
            'description' => 'Order #' . $orderId,
            'redirectUrl' => 'https://shop.example.nl/return',
        ]);
        """, key)


@cred("adyen-application-yml-api-and-hmac")
def _adyen(rng):
    api = "AQE" + mixed(rng, 60)
    hmac_key = hexa(rng, 64).upper()
    return out(f"""
        adyen:
          merchant-account: AcmeECOM
          environment: LIVE
          api-key: {api}
          hmac-key: {hmac_key}
          client-key: live_{upper(rng, 32)}
        """, api, hmac_key)


@cred("square-access-token-ruby-client")
def _square(rng):
    tok = "EAAA" + b64url(rng, 45)[:60]
    return out(f"""
        require "square"

        client = Square::Client.new(
          access_token: "{tok}",
          environment: "production"
        )
        result = client.locations.list_locations
        """, tok)


@cred("razorpay-key-secret-python")
def _razorpay(rng):
    secret = mixed(rng, 24)
    return out(f"""
        import razorpay

        client = razorpay.Client(auth=("rzp_live_{mixed(rng, 14)}", "{secret}"))
        order = client.order.create({{"amount": 49900, "currency": "INR", "receipt": "rcpt_{digits(rng, 6)}"}})
        """, secret)


@cred("shopify-app-toml-and-admin-token")
def _shopify(rng):
    secret = hexa(rng, 32)
    tok = "shpat_" + hexa(rng, 32)
    return out(f"""
        # .env (shopify app dev)
        SHOPIFY_API_KEY={hexa(rng, 32)}
        SHOPIFY_API_SECRET={secret}
        SHOPIFY_ADMIN_TOKEN={tok}
        SCOPES=read_products,write_orders
        """, secret, tok)


@cred("svix-webhook-verify-node-constant")
def _svix(rng):
    secret = "whsec_" + b64(rng, 24)
    return out(f"""
        import {{ Webhook }} from "svix";

        const wh = new Webhook("{secret}");

        export async function POST(req: Request) {{
          const payload = await req.text();
          const evt = wh.verify(payload, Object.fromEntries(req.headers));
          return Response.json({{ ok: true, type: (evt as any).type }});
        }}
        """, secret)


@cred("twilio-auth-token-python-client")
def _twilio(rng):
    tok = hexa(rng, 32)
    return out(f"""
        from twilio.rest import Client

        account_sid = "AC{hexa(rng, 32)}"
        auth_token = "{tok}"
        client = Client(account_sid, auth_token)
        client.messages.create(to="+31612345678", from_="+3197010254321", body="Your table is ready")
        """, tok)


@cred("slack-bolt-signing-secret-js")
def _slack_bolt(rng):
    secret = hexa(rng, 32)
    return out(f"""
        const {{ App }} = require("@slack/bolt");

        const app = new App({{
          token: process.env.SLACK_BOT_TOKEN,
          signingSecret: "{secret}",
        }});

        app.command("/standup", async ({{ ack, respond }}) => {{ await ack(); await respond("noted"); }});
        """, secret)


@cred("discord-bot-token-dotenv")
def _discord(rng):
    tok = b64url(rng, 19)[:26] + "." + b64url(rng, 5)[:6] + "." + b64url(rng, 30)[:38]
    return out(f"""
        DISCORD_TOKEN={tok}
        DISCORD_GUILD_ID={digits(rng, 19)}
        DISCORD_CLIENT_ID={digits(rng, 19)}
        """, tok)


@cred("telegram-bot-token-curl-getupdates")
def _telegram(rng):
    tok = digits(rng, 10) + ":AA" + b64url(rng, 25)[:33]
    return out(f"""
        $ curl -s https://api.telegram.org/bot{tok}/getUpdates | jq '.result[-1].message.chat.id'
        -100{digits(rng, 10)}
        """, tok)


@cred("postmark-server-token-header-curl")
def _postmark(rng):
    tok = uid(rng)
    return out(f"""
        curl "https://api.postmarkapp.com/email" \\
          -X POST \\
          -H "Accept: application/json" \\
          -H "Content-Type: application/json" \\
          -H "X-Postmark-Server-Token: {tok}" \\
          -d '{{"From": "ops@acme.example", "To": "oncall@acme.example", "Subject": "Disk 91%", "TextBody": "db-2"}}'
        """, tok)


@cred("paypal-oauth-client-credentials-curl")
def _paypal(rng):
    secret = "E" + b64url(rng, 60)[:79]
    return out(f"""
        curl -v -X POST "https://api-m.paypal.com/v1/oauth2/token" \\
         -u "A{b64url(rng, 60)[:79]}:{secret}" \\
         -H "Content-Type: application/x-www-form-urlencoded" \\
         -d "grant_type=client_credentials"
        """, secret)


@cred("lemonsqueezy-webhook-signing-secret-laravel-config")
def _lemon(rng):
    secret = mixed(rng, 20)
    return out(f"""
        <?php

        return [
            'api_key' => env('LEMON_SQUEEZY_API_KEY'),
            'signing_secret' => '{secret}',
            'store' => env('LEMON_SQUEEZY_STORE'),
            'path' => 'lemon-squeezy',
        ];
        """, secret)


@cred("github-webhook-secret-in-probot-env")
def _probot(rng):
    secret = hexa(rng, 40)
    return out(f"""
        APP_ID={digits(rng, 7)}
        WEBHOOK_SECRET={secret}
        PRIVATE_KEY_PATH=./keys/app.private-key.pem
        LOG_LEVEL=debug
        """, secret)


@cred("sendgrid-like-mailjet-api-pair-json")
def _mailjet(rng):
    secret = hexa(rng, 32)
    cfg = {"mailer": {"provider": "mailjet", "apiKey": hexa(rng, 32), "apiSecret": secret,
                      "from": "Acme <hello@acme.example>"}}
    return out(jd(cfg), secret)


@cred("intercom-access-token-rails-credentials-decrypted")
def _rails_creds(rng):
    tok = "dG9rOj" + b64(rng, 45)[:54] + "=="
    base = hexa(rng, 128)
    return out(f"""
        $ bin/rails credentials:show
        secret_key_base: {base}
        intercom:
          access_token: {tok}
        """, base, tok)


# ==========================================================================================================
# Mail, directory, network access and VPN
# ==========================================================================================================


@cred("postfix-sasl-passwd-map")
def _postfix(rng):
    pw = mixed(rng, 16)
    return out(f"""
        # /etc/postfix/sasl_passwd   (postmap after editing)
        [smtp.office365.com]:587    scanner@contoso.example:{pw}
        """, pw)


@cred("msmtprc-account-password")
def _msmtp(rng):
    pw = lower(rng, 16)
    return out(f"""
        defaults
        auth           on
        tls            on
        tls_trust_file /etc/ssl/certs/ca-certificates.crt

        account        fastmail
        host           smtp.fastmail.com
        port           465
        tls_starttls   off
        from           me@fastmail.example
        user           me@fastmail.example
        password       {pw}

        account default : fastmail
        """, pw)


@cred("mbsyncrc-imap-pass")
def _mbsync(rng):
    pw = person(rng)
    return out(f"""
        IMAPAccount work
        Host imap.work.example
        User j.kowalski@work.example
        Pass "{pw}"
        SSLType IMAPS

        IMAPStore work-remote
        Account work
        """, pw)


@cred("ldapsearch-bind-w-flag")
def _ldapsearch(rng):
    pw = symbolic(rng, 14, "!#%")
    return out(f"""
        $ ldapsearch -x -H ldaps://dc01.corp.example -D "CN=svc-ldap,OU=Service,DC=corp,DC=example" -w '{pw}' -b "DC=corp,DC=example" "(sAMAccountName=jdoe)" mail
        # jdoe, Users, corp.example
        dn: CN=Jane Doe,OU=Users,DC=corp,DC=example
        mail: jane.doe@corp.example
        """, pw)


@cred("sssd-conf-ldap-default-authtok")
def _sssd(rng):
    pw = mixed(rng, 18)
    return out(f"""
        [domain/corp.example]
        id_provider = ldap
        auth_provider = ldap
        ldap_uri = ldaps://ldap.corp.example
        ldap_search_base = dc=corp,dc=example
        ldap_default_bind_dn = cn=sssd,ou=apps,dc=corp,dc=example
        ldap_default_authtok_type = password
        ldap_default_authtok = {pw}
        """, pw)


@cred("freeradius-clients-conf-secret")
def _radius(rng):
    secret = mixed(rng, 22)
    return out(f"""
        client unifi-ap-floor2 {{
        \tipaddr = 10.10.2.0/24
        \tsecret = {secret}
        \tshortname = ap-floor2
        \tnas_type = other
        }}
        """, secret)


@cred("snmpd-conf-rocommunity")
def _snmpd(rng):
    comm = lower(rng, 14)
    return out(f"""
        agentAddress udp:161
        sysLocation    Rack B4, DC Amsterdam
        sysContact     noc@example.net
        rocommunity {comm} 10.0.0.0/8
        includeAllDisks 10%
        """, comm)


@cred("snmpwalk-v3-auth-and-priv-pass")
def _snmpv3(rng):
    auth = mixed(rng, 16)
    priv = mixed(rng, 16)
    return out(f"""
        $ snmpwalk -v3 -l authPriv -u monitor -a SHA-256 -A '{auth}' -x AES -X '{priv}' core-sw-01 1.3.6.1.2.1.1
        SNMPv2-MIB::sysDescr.0 = STRING: Cisco IOS XE Software, Version 17.09.04a
        SNMPv2-MIB::sysUpTime.0 = Timeticks: (418812200) 48 days, 11:22:02.00
        """, auth, priv)


@cred("wireguard-conf-private-and-preshared")
def _wg(rng):
    priv = wgkey(rng)
    psk = wgkey(rng)
    return out(f"""
        [Interface]
        PrivateKey = {priv}
        Address = 10.8.0.3/32
        DNS = 10.8.0.1

        [Peer]
        PublicKey = {wgkey(rng)}
        PresharedKey = {psk}
        Endpoint = vpn.example.org:51820
        AllowedIPs = 0.0.0.0/0, ::/0
        PersistentKeepalive = 25
        """, priv, psk)


@cred("openvpn-management-interface-password-reply")
def _ovpn_auth(rng):
    pw = short(rng)
    return out(f"""
        $ nc -U /run/openvpn/mgmt.sock
        >INFO:OpenVPN Management Interface Version 5 -- type 'help' for more info
        >PASSWORD:Need 'Auth' username/password
        username "Auth" p{digits(rng, 7)}
        SUCCESS: 'Auth' username entered, but not yet verified
        password "Auth" "{pw}"
        SUCCESS: 'Auth' password entered, but not yet verified
        """, pw)


@cred("openvpn-inline-tls-crypt-static-key")
def _ovpn_tls(rng):
    line = hexa(rng, 32)
    body = "\n        ".join(hexa(rng, 32) for _ in range(4))
    return out(f"""
        client
        dev tun
        proto udp
        remote vpn.acme.example 1194
        <tls-crypt>
        #
        # 2048 bit OpenVPN static key
        #
        -----BEGIN OpenVPN Static key V1-----
        {line}
        {body}
        -----END OpenVPN Static key V1-----
        </tls-crypt>
        """, line)


@cred("swanctl-conf-secrets-ike-0s-base64")
def _ipsec(rng):
    psk = "0s" + b64(rng, 24)
    return out(f"""
        secrets {{
            ike-branch-hamburg {{
                id-1 = gw.acme.example
                id-2 = 198.51.100.7
                secret = {psk}
            }}
        }}
        """, psk)


@cred("cisco-ios-isakmp-key-and-enable")
def _cisco(rng):
    key = mixed(rng, 18)
    return out(f"""
        !
        crypto isakmp policy 10
         encr aes 256
         hash sha256
         authentication pre-share
         group 14
        crypto isakmp key {key} address 198.51.100.22
        !
        """, key)


@cred("mikrotik-export-ppp-secret")
def _mikrotik(rng):
    pw = mixed(rng, 12)
    return out(f"""
        # 2026-03-02 10:11:44 by RouterOS 7.17
        # software id = {upper(rng, 4)}-{upper(rng, 4)}
        /ppp secret
        add name=branch-koeln password={pw} profile=vpn-branch remote-address=10.99.0.12 service=l2tp
        /interface l2tp-server server
        set enabled=yes use-ipsec=required
        """, pw)


@cred("tacacs-server-key-nxos")
def _tacacs(rng):
    key = mixed(rng, 20)
    return out(f"""
        feature tacacs+
        tacacs-server host 10.1.1.50 key 0 "{key}"
        aaa group server tacacs+ ISE
          server 10.1.1.50
          use-vrf management
        """, key)


@cred("kinit-password-piped-ci-script")
def _kinit(rng):
    pw = symbolic(rng, 15, "#%+")
    return out(f"""
        #!/bin/bash
        set -euo pipefail
        echo '{pw}' | kinit svc_hadoop@CORP.EXAMPLE
        hdfs dfs -ls /data/landing
        """, pw)


@cred("unifi-controller-ssh-device-auth-api-json")
def _unifi(rng):
    pw = mixed(rng, 20)
    body = {"mgmt": {"x_ssh_username": "ubnt-admin", "x_ssh_password": pw, "x_ssh_enabled": True,
                     "led_enabled": True}, "site_id": hexa(rng, 24)}
    return out("PUT /api/s/default/set/setting/mgmt\n" + jd(body), pw)


# ==========================================================================================================
# HTTP traces, API clients, notebooks and spreadsheets
# ==========================================================================================================


@cred("har-entry-request-cookie-session")
def _har_cookie(rng):
    sess = b64url(rng, 36)
    entry = {"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "134.0"}, "entries": [{
        "startedDateTime": when(rng), "time": rng.randint(40, 900),
        "request": {"method": "GET", "url": "https://app.timesheet.example/api/me", "httpVersion": "HTTP/2",
                    "headers": [{"name": "Accept", "value": "application/json"},
                                {"name": "Cookie", "value": f"_ga=GA1.1.{digits(rng, 9)}.{digits(rng, 10)}; ts_session={sess}"}],
                    "cookies": [{"name": "ts_session", "value": sess}]},
        "response": {"status": 200, "statusText": "OK", "content": {"size": 412, "mimeType": "application/json"}}}]}}
    return out(jd(entry), sess)


@cred("har-postdata-login-form-password")
def _har_post(rng):
    pw = person(rng)
    entry = {"request": {"method": "POST", "url": "https://portal.insurer.example/login",
                         "postData": {"mimeType": "application/x-www-form-urlencoded",
                                      "text": f"username=m.rossi&password={quote(pw)}&remember=on",
                                      "params": [{"name": "username", "value": "m.rossi"},
                                                 {"name": "password", "value": pw}]}}}
    return out(jd(entry), pw)


@cred("curl-verbose-request-header-bearer")
def _curl_v(rng):
    tok = "pk_" + lower(rng, 8) + "_" + mixed(rng, 40)
    return out(f"""
        *   Trying 104.18.{rng.randint(0, 255)}.{rng.randint(1, 254)}:443...
        * Connected to api.quotaflow.io (104.18.3.7) port 443
        * ALPN: server accepted h2
        * using HTTP/2
        > GET /v1/usage?month=2026-02 HTTP/2
        > Host: api.quotaflow.io
        > User-Agent: curl/8.11.1
        > Accept: */*
        > Authorization: Bearer {tok}
        >
        < HTTP/2 200
        < content-type: application/json
        < x-request-id: {uid(rng)}
        """, tok)


@cred("postman-collection-auth-bearer-value")
def _postman(rng):
    api = jwt(rng, {"sub": "qa-bot", "scope": "orders:write", "exp": 2082876000})
    coll = {"info": {"_postman_id": uid(rng), "name": "Orders API",
                     "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},
            "auth": {"type": "bearer", "bearer": [{"key": "token", "value": api, "type": "string"}]},
            "item": [{"name": "Create order", "request": {"method": "POST", "url": "{{baseUrl}}/orders"}}]}
    return out(jd(coll, 2), api)


@cred("insomnia-export-environment-data")
def _insomnia(rng):
    key = "ik_" + mixed(rng, 30)
    exp = {"_type": "export", "__export_format": 4, "__export_source": "insomnia.desktop.app:v10.3.0",
           "resources": [{"_id": "env_" + hexa(rng, 32), "_type": "environment", "name": "Staging",
                          "data": {"base_url": "https://staging.api.example", "api_key": key}}]}
    return out(jd(exp), key)


@cred("bruno-bru-file-auth-bearer")
def _bruno(rng):
    tok = "glsa_" + mixed(rng, 32) + "_" + hexa(rng, 8)
    return out(f"""
        meta {{
          name: list dashboards
          type: http
          seq: 3
        }}

        get {{
          url: https://grafana.lan/api/search?type=dash-db
          body: none
          auth: bearer
        }}

        auth:bearer {{
          token: {tok}
        }}
        """, tok)


@cred("httpie-auth-flag-user-colon-pass")
def _httpie(rng):
    pw = mixed(rng, 14)
    return out(f"""
        $ http --auth jenkins-bot:{pw} POST https://ci.lan/job/release/buildWithParameters TAG==v4.2.0
        HTTP/1.1 201 Created
        Location: https://ci.lan/queue/item/{digits(rng, 5)}/
        """, pw)


@cred("vscode-rest-client-http-file-variable")
def _rest_client(rng):
    key = "xkeysib-" + hexa(rng, 64) + "-" + mixed(rng, 16)
    return out(f"""
        @baseUrl = https://api.brevo.com/v3
        @apiKey = {key}

        ### list contacts
        GET {{{{baseUrl}}}}/contacts?limit=10
        api-key: {{{{apiKey}}}}
        accept: application/json
        """, key)


@cred("wget-header-private-token")
def _wget(rng):
    tok = "glpat-" + b64url(rng, 15)
    return out(f"""
        $ wget --header="PRIVATE-TOKEN: {tok}" "https://gitlab.corp.example/api/v4/projects/412/jobs/artifacts/main/download?job=build" -O artifacts.zip
        --2026-03-05 09:12:44--  https://gitlab.corp.example/api/v4/projects/412/jobs/artifacts/main/download?job=build
        HTTP request sent, awaiting response... 200 OK
        """, tok)


@cred("nginx-access-log-access-token-query")
def _nginx_log(rng):
    tok = b64url(rng, 30)
    return out(f"""
        {ip(rng)} - - [04/Mar/2026:14:02:11 +0000] "GET /ws/notifications?access_token={tok}&v=3 HTTP/1.1" 101 0 "-" "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15"
        {ip(rng)} - - [04/Mar/2026:14:02:12 +0000] "GET /static/app.{hexa(rng, 8)}.js HTTP/1.1" 200 18231 "-" "Mozilla/5.0"
        """, tok)


@cred("mitmproxy-flow-dump-x-api-key")
def _mitm(rng):
    key = "ak_" + hexa(rng, 40)
    return out(f"""
        192.168.1.33:51822: POST https://telemetry.smartvac.example/v2/ingest
            content-type: application/json
            x-api-key: {key}
            user-agent: SmartVac/4.1.7 (Android 15)
         << 204 No Content 0b
        """, key)


@cred("jupyter-ipynb-cell-os-environ-assignment")
def _ipynb_env(rng):
    key = "hf_" + mixed(rng, 34)
    nb = {"cells": [{"cell_type": "code", "execution_count": 3, "id": hexa(rng, 8), "metadata": {},
                     "outputs": [], "source": ["import os\n", f"os.environ[\"HF_TOKEN\"] = \"{key}\"\n",
                                               "from datasets import load_dataset\n",
                                               "ds = load_dataset(\"acme/internal-tickets\", split=\"train\")"]}],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    return out(jd(nb, 1), key)


@cred("jupyter-ipynb-output-stream-printed-token")
def _ipynb_out(rng):
    tok = "eyJrIjoi" + b64(rng, 48).rstrip("=")
    nb = {"cell_type": "code", "execution_count": 7, "metadata": {},
          "outputs": [{"name": "stdout", "output_type": "stream",
                       "text": ["login ok\n", f"session token: {tok}\n", "expires in 3600s\n"]}],
          "source": ["resp = client.login(user, pw)\n", "print('login ok')\n", "print('session token:', resp.token)"]}
    return out(jd(nb, 1), tok)


@cred("csv-export-shared-accounts-password-column")
def _csv(rng):
    pw1 = person(rng)
    pw2 = symbolic(rng, 14, "!#%")
    return out(f"""
        service,url,username,password,owner,last_rotated
        Router admin,http://192.168.0.1,admin,{pw1},IT,2025-11-02
        Label printer,https://printer.lan,manager,{pw2},Warehouse,2026-01-18
        """, pw1, pw2)


@cred("tsv-vault-export-login-row")
def _tsv(rng):
    pw = symbolic(rng, 22)
    return out(f"""
        folder\tfavorite\ttype\tname\tnotes\tfields\treprompt\tlogin_uri\tlogin_username\tlogin_password\tlogin_totp
        Work\t\tlogin\tJira Cloud\t\t\t0\thttps://acme.atlassian.net\tp.nowak@acme.example\t{pw}\t
        """, pw)


@cred("xlsx2csv-sheet-wifi-guest-codes")
def _xlsx(rng):
    pw = phrase(rng, 2, "-") + "-" + digits(rng, 3)
    return out(f"""
        $ xlsx2csv -s 2 office-it.xlsx
        Location,SSID,Passphrase,VLAN
        HQ 3rd floor,ACME-Staff,{pw},30
        HQ lobby,ACME-Guest,(portal),99
        """, pw)


# ==========================================================================================================
# Dotfiles and package-manager credentials
# ==========================================================================================================


@cred("npmrc-scoped-registry-authtoken")
def _npmrc(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f"""
        @acme:registry=https://npm.pkg.github.com
        //registry.npmjs.org/:_authToken={tok}
        fund=false
        audit-level=high
        """, tok)


@cred("pypirc-testpypi-password")
def _pypirc(rng):
    tok = "pypi-AgEIcHlwaS5vcmc" + b64url(rng, 60)
    return out(f"""
        [distutils]
        index-servers =
            pypi
            testpypi

        [pypi]
        username = __token__
        password = {tok}
        """, tok)


@cred("netrc-machine-login-password")
def _netrc(rng):
    pw = mixed(rng, 26)
    return out(f"""
        machine api.heroku.com
          login ops@example.com
          password {pw}
        machine git.heroku.com
          login ops@example.com
          password {pw}
        """, pw)


@cred("git-credentials-store-line")
def _gitcreds(rng):
    tok = "ghp_" + mixed(rng, 36)
    return out(f"""
        $ cat ~/.git-credentials
        https://jwalker:{tok}@github.com
        """, tok)


@cred("docker-config-json-auths-auth-base64")
def _docker_cfg(rng):
    pw = mixed(rng, 20)
    auth = basic("deploy", pw)
    cfg = {"auths": {"harbor.corp.example": {"auth": auth}}, "credsStore": "", "currentContext": "default"}
    return out(jd(cfg, 1), auth)


@cred("yarnrc-yml-npm-auth-token")
def _yarnrc(rng):
    tok = uid(rng)
    return out(f"""
        nodeLinker: node-modules
        npmScopes:
          acme:
            npmRegistryServer: "https://acme.jfrog.io/artifactory/api/npm/npm-local/"
            npmAuthToken: "{tok}"
            npmAlwaysAuth: true
        """, tok)


@cred("bundle-config-gem-source-credentials")
def _bundle(rng):
    tok = hexa(rng, 32)
    return out(f"""
        ---
        BUNDLE_PATH: "vendor/bundle"
        BUNDLE_GEMS__CONTRIBSYS__COM: "ab12cd34:{tok}"
        BUNDLE_JOBS: "4"
        """, tok)


@cred("composer-auth-json-http-basic")
def _composer(rng):
    pw = hexa(rng, 40)
    cfg = {"http-basic": {"repo.magento.com": {"username": hexa(rng, 32), "password": pw}},
           "github-oauth": {}}
    return out(jd(cfg, 4), pw)


@cred("cargo-credentials-toml-registry-token")
def _cargo(rng):
    tok = "cio" + mixed(rng, 32)
    return out(f"""
        # ~/.cargo/credentials.toml
        [registry]
        token = "{tok}"
        """, tok)


@cred("dotnet-nuget-add-source-password-clear-text")
def _nuget(rng):
    pw = lower(rng, 52)
    return out(f"""
        PS> dotnet nuget add source "https://pkgs.dev.azure.com/acme/_packaging/acme-feed/nuget/v3/index.json" --name acme-feed --username build --password {pw} --store-password-in-clear-text
        Package source with Name: acme-feed added successfully.
        """, pw)


@cred("maven-settings-xml-server-httpheaders-private-token")
def _maven(rng):
    tok = "glpat-" + b64url(rng, 15)
    return out(f"""
        <settings>
          <servers>
            <server>
              <id>gitlab-maven</id>
              <configuration>
                <httpHeaders>
                  <property>
                    <name>Private-Token</name>
                    <value>{tok}</value>
                  </property>
                </httpHeaders>
              </configuration>
            </server>
          </servers>
        </settings>
        """, tok)


@cred("gradle-user-properties-repo-password")
def _gradle_props(rng):
    pw = symbolic(rng, 18, "#%_")
    return out(f"""
        org.gradle.jvmargs=-Xmx4g
        org.gradle.parallel=true
        nexusUsername=deployer
        nexusPassword={pw}
        """, pw)


@cred("pip-conf-index-url-userinfo")
def _pipconf(rng):
    pw = mixed(rng, 24)
    return out(f"""
        [global]
        index-url = https://pypi-proxy:{pw}@nexus.corp.example/repository/pypi-all/simple
        timeout = 60
        """, pw)


@cred("s3cfg-secret-key-line")
def _s3cfg(rng):
    secret = b64(rng, 30)[:40]
    return out(f"""
        [default]
        access_key = {upper(rng, 20)}
        host_base = fra1.digitaloceanspaces.com
        host_bucket = %(bucket)s.fra1.digitaloceanspaces.com
        secret_key = {secret}
        use_https = True
        """, secret)


@cred("restic-env-file-repository-password")
def _restic(rng):
    pw = phrase(rng, 5, " ")
    return out(f"""
        export RESTIC_REPOSITORY="s3:https://s3.eu-central-003.backblazeb2.com/acme-backups"
        export RESTIC_PASSWORD="{pw}"
        export AWS_ACCESS_KEY_ID="{hexa(rng, 25)}"
        export AWS_SECRET_ACCESS_KEY="$(pass show b2/restic)"
        """, pw)


@cred("gh-cli-hosts-yml-oauth-token")
def _gh_hosts(rng):
    tok = "gho_" + mixed(rng, 36)
    return out(f"""
        github.com:
            users:
                mkessler:
                    oauth_token: {tok}
            git_protocol: ssh
            user: mkessler
            oauth_token: {tok}
        """, tok)


# ==========================================================================================================
# Source code with hard-coded credentials
# ==========================================================================================================


@cred("php-pdo-constructor-literal-password")
def _php_pdo(rng):
    pw = person(rng)
    return out(f"""
        <?php
        $dsn = 'mysql:host=localhost;dbname=wp_shop;charset=utf8mb4';
        try {{
            $pdo = new PDO($dsn, 'wp_shop', '{pw}', [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
        }} catch (PDOException $e) {{
            error_log($e->getMessage());
        }}
        """, pw)


@cred("ruby-net-smtp-start-args")
def _ruby_smtp(rng):
    pw = mixed(rng, 16)
    return out(f"""
        require 'net/smtp'

        Net::SMTP.start('smtp.mailbox.example', 587, 'app.example', 'alerts@app.example', '{pw}', :login) do |smtp|
          smtp.send_message(message, 'alerts@app.example', ['ops@app.example'])
        end
        """, pw)


@cred("go-sql-open-keyword-dsn")
def _go_dsn(rng):
    pw = mixed(rng, 18)
    return out(f"""
        package store

        import (
        \t"database/sql"

        \t_ "github.com/lib/pq"
        )

        func Open() (*sql.DB, error) {{
        \treturn sql.Open("postgres", "host=pg.internal port=5432 user=ledger password={pw} dbname=ledger sslmode=require")
        }}
        """, pw)


@cred("rust-const-str-api-key")
def _rust(rng):
    key = "ms_" + hexa(rng, 40)
    return out(f"""
        use reqwest::header::{{HeaderMap, HeaderValue, AUTHORIZATION}};

        const MEILI_MASTER_KEY: &str = "{key}";

        pub fn headers() -> HeaderMap {{
            let mut h = HeaderMap::new();
            h.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {{}}", MEILI_MASTER_KEY)).unwrap());
            h
        }}
        """, key)


@cred("java-drivermanager-getconnection-literal")
def _java(rng):
    pw = symbolic(rng, 14, "!#$")
    return out(f"""
        public class LegacyReportJob {{
            public static void main(String[] args) throws Exception {{
                try (Connection c = DriverManager.getConnection(
                        "jdbc:db2://mainframe-gw:50000/PAYROLL", "RPTUSER", "{pw}")) {{
                    new ReportWriter(c).run(LocalDate.now().minusDays(1));
                }}
            }}
        }}
        """, pw)


@cred("kotlin-okhttp-interceptor-header")
def _kotlin(rng):
    key = "sk_" + lower(rng, 10) + "_" + mixed(rng, 30)
    return out(f"""
        class AuthInterceptor : Interceptor {{
            override fun intercept(chain: Interceptor.Chain): Response {{
                val req = chain.request().newBuilder()
                    .addHeader("X-Client-Secret", "{key}")
                    .build()
                return chain.proceed(req)
            }}
        }}
        """, key)


@cred("swift-static-let-secret")
def _swift(rng):
    key = mixed(rng, 40)
    return out(f"""
        enum Config {{
            static let baseURL = URL(string: "https://api.weatherly.example/v2")!
            static let clientSecret = "{key}"
        }}
        """, key)


@cred("csharp-networkcredential-literal")
def _csharp(rng):
    pw = person(rng)
    return out(f"""
        using var client = new SmtpClient("mail.contoso.example", 587)
        {{
            EnableSsl = true,
            Credentials = new NetworkCredential("noreply@contoso.example", "{pw}")
        }};
        await client.SendMailAsync(message);
        """, pw)


@cred("python-boto3-client-literal-keys")
def _boto3(rng):
    secret = b64(rng, 30)[:40]
    return out(f"""
        s3 = boto3.client(
            "s3",
            endpoint_url="https://minio.lab.example:9000",
            aws_access_key_id="{upper(rng, 20)}",
            aws_secret_access_key="{secret}",
        )
        s3.upload_file("report.parquet", "reports", "2026/03/report.parquet")
        """, secret)


@cred("elixir-runtime-exs-secret-key-base")
def _elixir(rng):
    skb = b64(rng, 48)
    return out(f"""
        import Config

        if config_env() == :prod do
          config :shop, ShopWeb.Endpoint,
            http: [ip: {{0, 0, 0, 0}}, port: 4000],
            secret_key_base: "{skb}"
        end
        """, skb)


@cred("c-header-define-mqtt-password")
def _c_header(rng):
    pw = mixed(rng, 15)
    return out(f"""
        #ifndef CREDENTIALS_H
        #define CREDENTIALS_H

        #define MQTT_HOST     "broker.hivemq.example"
        #define MQTT_USER     "meter-0042"
        #define MQTT_PASSWORD "{pw}"

        #endif
        """, pw)


@cred("dart-const-string-api-key")
def _dart(rng):
    key = "AIza" + b64url(rng, 30)[:35]
    return out(f"""
        class Env {{
          static const String placesKey = '{key}';
          static const String apiBase = 'https://maps.googleapis.com/maps/api/place';
        }}
        """, key)


@cred("lua-openresty-redis-auth")
def _lua(rng):
    pw = lower(rng, 20)
    return out(f"""
        local redis = require "resty.redis"
        local red = redis:new()
        red:set_timeouts(1000, 1000, 1000)
        local ok, err = red:connect("127.0.0.1", 6379)
        local res, err = red:auth("{pw}")
        if not res then ngx.log(ngx.ERR, "failed to authenticate: ", err) return end
        """, pw)


@cred("typescript-sdk-constructor-apikey")
def _ts_sdk(rng):
    key = "sk_" + lower(rng, 4) + "_" + b64url(rng, 30)
    return out(f"""
        import {{ Inkwell }} from "@inkwell/sdk";

        export const inkwell = new Inkwell({{
          apiKey: '{key}',
          region: 'eu',
          timeoutMs: 10_000,
        }});
        """, key)


@cred("perl-dbi-connect-literal")
def _perl(rng):
    pw = short(rng)
    return out(f"""
        use DBI;
        my $dbh = DBI->connect("dbi:Pg:dbname=inventory;host=db.lan", "inv", "{pw}", {{ RaiseError => 1, AutoCommit => 0 }})
            or die $DBI::errstr;
        """, pw)


# ==========================================================================================================
# Crash logs and debug dumps that spill configuration
# ==========================================================================================================


@cred("rich-traceback-locals-panel")
def _rich_tb(rng):
    pw = symbolic(rng, 16, "#%&")
    return out(f"""
        ╭───────────────────── Traceback (most recent call last) ─────────────────────╮
        │ /app/sync/ftp.py:41 in push                                                  │
        │                                                                              │
        │   40 │   ftp = FTP_TLS(host)                                                 │
        │ ❱ 41 │   ftp.login(user, password)                                           │
        │                                                                              │
        │ ╭──────────────── locals ─────────────────╮                                  │
        │ │     host = 'files.partner.example'      │                                  │
        {("│ │ password = '" + pw + "'").ljust(44)}│                                  │
        │ │     user = 'acme_upload'                │                                  │
        │ ╰─────────────────────────────────────────╯                                  │
        ╰──────────────────────────────────────────────────────────────────────────────╯
        error_perm: 530 Login incorrect.
        """, pw)


@cred("node-uncaught-exception-process-env-dump")
def _node_env(rng):
    key = "sk_live_" + mixed(rng, 40)
    return out(f"""
        /app/node_modules/pg/lib/client.js:132
              throw err
              ^
        Error: connect ECONNREFUSED 10.0.3.4:5432
        [debug] process.env = {{
          NODE_ENV: 'production',
          PORT: '8080',
          STRIPE_SECRET: '{key}',
          HOSTNAME: 'api-7c9f6d8b4-{lower(rng, 5)}'
        }}
        Node.js v22.12.0
        """, key)


@cred("spring-actuator-env-unsanitized-json")
def _actuator(rng):
    pw = mixed(rng, 20)
    body = {"activeProfiles": ["prod"], "propertySources": [{"name": "Config resource 'class path resource [application-prod.yml]'",
            "properties": {"spring.datasource.url": {"value": "jdbc:postgresql://pg:5432/orders", "origin": "line 3"},
                           "spring.datasource.password": {"value": pw, "origin": "line 5"},
                           "server.port": {"value": 8080}}}]}
    return out("GET /actuator/env HTTP/1.1 -> 200\n" + jd(body), pw)


@cred("go-panic-struct-plus-v-config")
def _go_panic(rng):
    tok = "xoxp-" + digits(rng, 12) + "-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + hexa(rng, 32)
    return out(f"""
        2026/03/02 17:44:01 config: &{{Listen::8080 SlackToken:{tok} Channel:#deploys Debug:true}}
        panic: runtime error: invalid memory address or nil pointer dereference
        [signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6b2f1c]

        goroutine 1 [running]:
        main.(*Notifier).Send(0x0, {{0xc0000a2000, 0x1f}})
        \t/src/notify.go:58 +0x3c
        """, tok)


@cred("kubectl-describe-pod-env-literal")
def _kdescribe(rng):
    pw = lower(rng, 18)
    return out(f"""
        Containers:
          keycloak:
            Image:          quay.io/keycloak/keycloak:26.1
            Port:           8080/TCP
            Environment:
              KC_DB:                  postgres
              KC_DB_URL:              jdbc:postgresql://pg-rw:5432/keycloak
              KC_DB_USERNAME:         keycloak
              KC_DB_PASSWORD:         {pw}
              KC_HOSTNAME:            sso.example.org
        """, pw)


@cred("phpinfo-environment-table-html")
def _phpinfo(rng):
    pw = mixed(rng, 16)
    return out(f"""
        <h2>Environment</h2>
        <table>
        <tr class="h"><th>Variable</th><th>Value</th></tr>
        <tr><td class="e">APP_ENV </td><td class="v">production </td></tr>
        <tr><td class="e">DB_PASSWORD </td><td class="v">{pw} </td></tr>
        <tr><td class="e">PHP_VERSION </td><td class="v">8.3.15 </td></tr>
        </table>
        """, pw)


@cred("sentry-event-json-extra-context")
def _sentry(rng):
    tok = "rt_" + b64url(rng, 32)
    ev = {"event_id": hexa(rng, 32), "level": "error", "platform": "python",
          "exception": {"values": [{"type": "HTTPError", "value": "401 Client Error: Unauthorized"}]},
          "extra": {"refresh_token": tok, "retry": 3}, "tags": {"release": "worker@3.8.1"}}
    return out(jd(ev), tok)


@cred("java-stacktrace-jdbc-url-in-message")
def _java_trace(rng):
    pw = short(rng)
    return out(f"""
        2026-03-01 03:12:55.019 ERROR 1 --- [main] o.s.boot.SpringApplication : Application run failed
        org.springframework.jdbc.CannotGetJdbcConnectionException: Failed to obtain JDBC Connection for url 'jdbc:mysql://db:3306/crm?user=crm&password={pw}&useSSL=true'
        \tat org.springframework.jdbc.datasource.DataSourceUtils.getConnection(DataSourceUtils.java:84)
        \tat org.springframework.jdbc.core.JdbcTemplate.execute(JdbcTemplate.java:376)
        """, pw)


# ==========================================================================================================
# Config formats
# ==========================================================================================================


@cred("yaml-anchor-merge-defaults-password")
def _yaml_anchor(rng):
    pw = mixed(rng, 18)
    return out(f"""
        x-db: &db
          adapter: postgresql
          host: pg.internal
          username: rails
          password: {pw}

        production:
          <<: *db
          database: shop_production
        staging:
          <<: *db
          database: shop_staging
        """, pw)


@cred("toml-nested-table-smtp")
def _toml(rng):
    pw = person(rng)
    return out(f"""
        [server]
        bind = "0.0.0.0:8080"

        [notifications.smtp]
        host = "smtp.zoho.eu"
        port = 465
        username = "alerts@studio.example"
        password = "{pw}"
        """, pw)


@cred("ini-section-mixed-case-key")
def _ini(rng):
    pw = mixed(rng, 14)
    return out(f"""
        [Database]
        Server=10.2.0.14
        Port=1433
        UserName=pos_sync
        PassWord={pw}

        [Sync]
        IntervalMinutes=15
        """, pw)


@cred("web-config-xml-connectionstrings")
def _webconfig(rng):
    pw = symbolic(rng, 16, "!$*")
    return out(f"""
        <configuration>
          <connectionStrings>
            <add name="ErpDb" connectionString="Data Source=SQL02;Initial Catalog=ERP;User ID=erp_web;Password={pw};MultipleActiveResultSets=True" providerName="System.Data.SqlClient" />
          </connectionStrings>
          <appSettings>
            <add key="webpages:Version" value="3.0.0.0" />
          </appSettings>
        </configuration>
        """, pw)


@cred("java-properties-backslash-escaped-equals-value")
def _props(rng):
    tok = mixed(rng, 12) + "\\=" + mixed(rng, 12)
    return out(f"""
        mail.smtp.host=smtp.mailserver.example
        mail.smtp.port=587
        mail.smtp.user=scheduler
        mail.smtp.password={tok}
        """, tok)


@cred("json5-config-comments-trailing-commas")
def _json5(rng):
    key = "sk-proj-" + b64url(rng, 48)
    return out(f"""
        // renovate-bot.json5
        {{
          platform: 'gitea',
          endpoint: 'https://git.home.example/api/v1',
          // token for the bot account, do not share
          token: '{key}',
          onboarding: false,
        }}
        """, key)


@cred("dotenv-double-quoted-escaped-value")
def _dotenv_esc(rng):
    a, b = mixed(rng, 8), mixed(rng, 8)
    raw = f'{a}\\"{b}$'
    return out(f"""
        APP_NAME=Laravel
        MAIL_MAILER=smtp
        MAIL_PASSWORD="{raw}"
        MAIL_FROM_ADDRESS="hello@example.com"
        """, raw)


@cred("hocon-akka-config-password")
def _hocon(rng):
    pw = lower(rng, 22)
    return out(f"""
        slick.dbs.default {{
          profile = "slick.jdbc.PostgresProfile$"
          db {{
            url = "jdbc:postgresql://localhost/events"
            user = "events"
            password = "{pw}"
            numThreads = 10
          }}
        }}
        """, pw)


@cred("xml-spring-bean-property-password")
def _spring_xml(rng):
    pw = mixed(rng, 13)
    return out(f"""
        <bean id="dataSource" class="com.zaxxer.hikari.HikariDataSource" destroy-method="close">
            <property name="jdbcUrl" value="jdbc:oracle:thin:@//ora-prod:1521/FIN"/>
            <property name="username" value="FIN_APP"/>
            <property name="password" value="{pw}"/>
        </bean>
        """, pw)


# ==========================================================================================================
# Windows and macOS
# ==========================================================================================================


@cred("reg-export-winlogon-defaultpassword")
def _reg(rng):
    pw = person(rng)
    return out(f"""
        Windows Registry Editor Version 5.00

        [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon]
        "AutoAdminLogon"="1"
        "DefaultUserName"="kiosk"
        "DefaultDomainName"="LOBBY-PC"
        "DefaultPassword"="{pw}"
        """, pw)


@cred("powershell-convertto-securestring-asplaintext")
def _ps_secure(rng):
    pw = symbolic(rng, 16, "!#%")
    return out(f"""
        PS C:\\deploy> $secpass = ConvertTo-SecureString '{pw}' -AsPlainText -Force
        PS C:\\deploy> $cred = New-Object System.Management.Automation.PSCredential('CORP\\svc_deploy', $secpass)
        PS C:\\deploy> Invoke-Command -ComputerName APP03 -Credential $cred -ScriptBlock {{ Restart-Service W3SVC }}
        """, pw)


@cred("cmdkey-add-pass-flag")
def _cmdkey(rng):
    pw = mixed(rng, 14)
    return out(f"""
        C:\\> cmdkey /add:fileserver01 /user:CORP\\scanner /pass:{pw}

        CMDKEY: Credential added successfully.
        """, pw)


@cred("net-use-drive-mapping-password")
def _netuse(rng):
    pw = person(rng)
    return out(f"""
        @echo off
        net use Z: \\\\nas01\\projects {pw} /user:NAS01\\office /persistent:yes
        robocopy C:\\Exports Z:\\Exports /MIR /R:2 /W:5
        """, pw)


@cred("macos-security-add-generic-password-w")
def _sec_add(rng):
    pw = b64url(rng, 24)
    return out(f"""
        % security add-generic-password -a "$USER" -s "restic-b2" -w '{pw}' -U
        % security find-generic-password -s restic-b2 | head -3
        keychain: "/Users/lena/Library/Keychains/login.keychain-db"
        version: 512
        class: "genp"
        """, pw)


@cred("macos-security-find-generic-password-w-output")
def _sec_find(rng):
    tok = "glc_" + b64(rng, 60).rstrip("=")
    return out(f"""
        % security find-generic-password -s grafana-cloud -w
        {tok}
        """, tok)


@cred("unattend-xml-administrator-password-plaintext")
def _unattend(rng):
    pw = symbolic(rng, 14, "!#")
    return out(f"""
        <UserAccounts>
            <AdministratorPassword>
                <Value>{pw}</Value>
                <PlainText>true</PlainText>
            </AdministratorPassword>
        </UserAccounts>
        <AutoLogon>
            <Enabled>false</Enabled>
        </AutoLogon>
        """, pw)


@cred("psexec-dash-p-remote-command")
def _psexec(rng):
    pw = short(rng)
    return out(f"""
        C:\\Tools\\Sysinternals> PsExec64.exe \\\\POS-017 -u POS-017\\Administrator -p {pw} -s cmd /c "ipconfig /flushdns"

        PsExec v2.43 - Execute processes remotely
        Copyright (C) 2001-2023 Mark Russinovich
        """, pw)


@cred("winget-configure-dsc-yaml-password")
def _dsc(rng):
    pw = mixed(rng, 16)
    return out(f"""
        # yaml-language-server: $schema=https://aka.ms/configuration-dsc-schema/0.2
        properties:
          resources:
            - resource: PSDscResources/User
              id: localAdmin
              settings:
                UserName: labadmin
                Password: {pw}
                Ensure: Present
          configurationVersion: 0.2.0
        """, pw)


# ==========================================================================================================
# OTP, recovery codes and key material
# ==========================================================================================================


@cred("otpauth-uri-totp-secret-param")
def _otpauth(rng):
    secret = b32(rng, 32)
    return out(f"""
        otpauth://totp/Acme%20VPN:r.okafor@acme.example?secret={secret}&issuer=Acme%20VPN&algorithm=SHA1&digits=6&period=30
        """, secret)


@cred("recovery-codes-txt-download")
def _recovery(rng):
    codes = [f"{lower(rng, 5)}-{lower(rng, 5)}" for _ in range(8)]
    body = "\n".join(codes)
    return out(f"""
        GitHub recovery codes
        Keep your recovery codes as safe as your password. We recommend saving them with a password manager.

        {body.replace(chr(10), chr(10) + "        ")}

        (These codes were generated on: {when(rng)[:10]})
        """, codes[0], codes[5])


@cred("openssh-private-key-block")
def _openssh(rng):
    line = ssh_line(rng)
    more = "\n".join(b64(rng, 52)[:70] for _ in range(5))
    return out(f"""
        -----BEGIN OPENSSH PRIVATE KEY-----
        {line}
        {more.replace(chr(10), chr(10) + "        ")}
        -----END OPENSSH PRIVATE KEY-----
        """, line)


@cred("gpg-armored-private-key-block")
def _gpg(rng):
    line = ("lQdGBGX" + b64(rng, 60))[:64]
    more = "\n".join(b64(rng, 48) for _ in range(4))
    return out(f"""
        -----BEGIN PGP PRIVATE KEY BLOCK-----

        {line}
        {more.replace(chr(10), chr(10) + "        ")}
        =Qx{upper(rng, 2)}
        -----END PGP PRIVATE KEY BLOCK-----
        """, line)


@cred("age-secret-key-file")
def _age(rng):
    key = "AGE-SECRET-KEY-1" + chars(rng, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58).upper()
    return out(f"""
        # created: {when(rng)[:19]}+01:00
        # public key: age1{chars(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)}
        {key}
        """, key)


@cred("bip39-seed-phrase-note")
def _bip39(rng):
    words = ("abandon ability able about above absent absorb abstract absurd abuse access accident account "
             "accuse achieve acid acoustic acquire across act action actor actress actual adapt add addict "
             "address adjust admit adult advance advice aerobic affair afford afraid again age agent agree "
             "ahead aim air airport aisle alarm album alcohol alert alien").split()
    seed = " ".join(rng.choice(words) for _ in range(12))
    return out(f"""
        Hardware wallet backup (Trezor Safe 3) - written {when(rng)[:10]}
        {seed}
        passphrase: none
        """, seed)


@cred("email-verification-code-eight-digits")
def _otp_mail(rng):
    code = digits(rng, 8)
    return out(f"""
        From: Northwind Bank <no-reply@northwind-bank.example>
        Subject: Your sign-in code

        Hi Daniel,
        Use this code to finish signing in: {code}
        It expires in 10 minutes. If you did not try to sign in, change your password.
        """, code)


@cred("plink-batch-pw-flag")
def _plink(rng):
    pw = mixed(rng, 14)
    return out(f"""
        C:\\scripts> plink.exe -ssh -batch -pw {pw} backup@10.20.30.40 "tar czf - /etc" > etc-backup.tgz
        Keyboard-interactive authentication prompts from server:
        End of keyboard-interactive prompts from server
        """, pw)


# ==========================================================================================================
# Terminal sessions: prompts, history, scripts
# ==========================================================================================================


@cred("password-typed-at-shell-prompt-command-not-found")
def _typed_prompt(rng):
    pw = person(rng)
    return out(f"""
        deploy@web-3:~$ sudo -k
        deploy@web-3:~$ {pw}
        {pw}: command not found
        deploy@web-3:~$ history -d -2
        """, pw)


@cred("bash-set-x-read-password-trace")
def _set_x(rng):
    pw = mixed(rng, 12)
    return out(f"""
        + read -rsp 'Vault password: ' VAULT_PASS
        + echo
        + export VAULT_PASS={pw}
        + VAULT_PASS={pw}
        + ansible-vault view group_vars/all/vault.yml --vault-password-file=/dev/fd/3
        """, pw)


@cred("expect-script-send-password")
def _expect(rng):
    pw = short(rng)
    return out(f"""
        #!/usr/bin/expect -f
        set timeout 20
        spawn ssh admin@10.0.0.254
        expect "password:"
        send "{pw}\\r"
        expect "#"
        send "copy running-config tftp://10.0.0.5/sw-core.cfg\\r"
        expect eof
        """, pw)


@cred("sshpass-p-rsync-one-liner")
def _sshpass(rng):
    pw = symbolic(rng, 12, "#%")
    return out(f"""
        $ sshpass -p '{pw}' rsync -avz -e ssh ./site/ www@static-01.lan:/var/www/site/
        sending incremental file list
        index.html
        """, pw)


@cred("htpasswd-b-batch-mode")
def _htpasswd(rng):
    pw = person(rng)
    return out(f"""
        # htpasswd -bB /etc/nginx/.htpasswd grafana-viewer '{pw}'
        Adding password for user grafana-viewer
        """, pw)


@cred("docker-login-password-flag-warning")
def _docker_login(rng):
    pw = "dckr_pat_" + b64url(rng, 20)
    return out(f"""
        $ docker login -u acmebuild -p {pw}
        WARNING! Using --password via the CLI is insecure. Use --password-stdin.
        Login Succeeded
        """, pw)


@cred("openssl-pkcs12-passout-pass-argument")
def _openssl(rng):
    pw = mixed(rng, 16)
    return out(f"""
        $ openssl pkcs12 -export -in server.crt -inkey server.key -certfile chain.pem -out server.pfx -passout pass:{pw}
        $ ls -l server.pfx
        -rw------- 1 ops ops 4213 Mar  6 11:20 server.pfx
        """, pw)

# ==========================================================================================================
# People pasting credentials in chat and e-mail, in many languages
# ==========================================================================================================


@cred("english-slack-thread-export-json")
def _en_slack(rng):
    pw = person(rng)
    msgs = [{"type": "message", "user": "U" + upper(rng, 10), "ts": f"{rng.randint(1767300000, 1790000000)}.{digits(rng, 6)}",
             "text": "anyone know the login for the staging WordPress?"},
            {"type": "message", "user": "U" + upper(rng, 10), "ts": f"{rng.randint(1767300000, 1790000000)}.{digits(rng, 6)}",
             "text": f"user is `editor`, pw is `{pw}` - please don't change it, QA uses it too"}]
    return out(jd(msgs), pw)


@cred("english-email-temporary-password-helpdesk")
def _en_mail(rng):
    pw = mixed(rng, 10)
    return out(f"""
        From: IT Service Desk <servicedesk@hospital.example>
        To: n.patel@hospital.example
        Subject: RE: [INC-{digits(rng, 7)}] Locked out of Epic

        Hi Nisha,

        I've reset your account. Your temporary password is {pw} and you'll be asked to change it at first login.

        Kind regards,
        Service Desk (ext. 4400)
        """, pw)


@cred("spanish-whatsapp-export-clave-wifi")
def _es(rng):
    pw = person(rng)
    return out(f"""
        [12/03/26, 19:41:07] Lucía: ¿cuál era la clave del wifi de la casa de la playa?
        [12/03/26, 19:43:22] Andrés: La red es "Casa_Mar" y la contraseña es {pw}
        [12/03/26, 19:43:40] Lucía: gracias!! 🙏
        """, pw)


@cred("portuguese-teams-chat-senha")
def _pt(rng):
    pw = symbolic(rng, 12, "@#!")
    return out(f"""
        Rafael Souza  10:12
        Consegui acesso ao painel do provedor. Usuário: financeiro@loja.example
        Rafael Souza  10:12
        senha: {pw}
        Camila Ferreira  10:15
        Valeu! Vou trocar a senha depois do fechamento.
        """, pw)


@cred("french-email-mot-de-passe-prestataire")
def _fr(rng):
    pw = short(rng)
    return out(f"""
        Objet : Accès au serveur SFTP

        Bonjour Mme Lefèvre,

        Comme convenu, voici les identifiants pour le dépôt des factures :
        - hôte : sftp.compta-partenaire.example
        - identifiant : cabinet_dupont
        - mot de passe : {pw}

        Cordialement,
        Thomas Girard
        """, pw)


@cred("german-mattermost-post-passwort")
def _de(rng):
    pw = phrase(rng, 3, "-")
    post = {"id": lower(rng, 26), "create_at": rng.randint(1767300000000, 1790000000000), "channel_id": lower(rng, 26),
            "message": f"Das neue Passwort für den Drucker-Admin ist {pw} (bitte nicht weitergeben)", "type": ""}
    return out(jd(post), pw)


@cred("italian-telegram-export-json-password")
def _it(rng):
    pw = person(rng)
    msg = {"id": rng.randint(10000, 99999), "type": "message", "date": when(rng)[:19], "from": "Giulia",
           "text": f"Ti giro le credenziali del gestionale: utente magazzino, password {pw}"}
    return out(jd({"name": "Ufficio", "type": "private_group", "messages": [msg]}), pw)


@cred("dutch-discord-message-wachtwoord")
def _nl(rng):
    pw = leet(rng)
    return out(f"""
        Sanne — vandaag om 21:04
        wachtwoord van de gedeelde Minecraft-server is {pw}
        Bram — vandaag om 21:06
        top, ik log zo in
        """, pw)


@cred("polish-sms-backup-xml-haslo")
def _pl(rng):
    pw = short(rng)
    return out(f"""
        <?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
        <smses count="1">
          <sms protocol="0" address="+48600123456" date="{rng.randint(1767300000000, 1790000000000)}" type="1" body="Hasło do konta firmowego: {pw} . Zmień je po zalogowaniu." read="1" status="-1" />
        </smses>
        """, pw)


@cred("turkish-jira-comment-sifre")
def _tr(rng):
    pw = mixed(rng, 12)
    body = {"body": {"type": "doc", "version": 1, "content": [{"type": "paragraph", "content": [
        {"type": "text", "text": f"Test ortamı yönetici şifresi: {pw} — yarın değiştireceğiz."}]}]}}
    return out(f"POST /rest/api/3/issue/OPS-{digits(rng, 4)}/comment\n" + jd(body), pw)


@cred("russian-telegram-chat-parol")
def _ru(rng):
    pw = person(rng)
    return out(f"""
        Дмитрий, [{when(rng)[:10]} 09:17]
        Скинь пароль от роутера на даче
        Ольга, [{when(rng)[:10]} 09:20]
        логин admin, пароль {pw}
        """, pw)


@cred("ukrainian-viber-message-parol")
def _uk(rng):
    pw = mixed(rng, 11)
    return out(f"""
        Оксана 14:02: Пароль до бухгалтерської програми: {pw}
        Оксана 14:02: Не пересилай нікому, будь ласка
        """, pw)


@cred("greek-email-kodikos-prosvasis")
def _el(rng):
    pw = short(rng)
    return out(f"""
        Θέμα: Πρόσβαση στο e-shop

        Καλησπέρα Νίκο,
        ο κωδικός πρόσβασης για το διαχειριστικό είναι: {pw}
        Το όνομα χρήστη είναι το email σου.

        Φιλικά,
        Μαρία
        """, pw)


@cred("arabic-whatsapp-kalimat-al-sir")
def _ar(rng):
    pw = person(rng)
    return out(f"""
        ‏[٣/٣/٢٠٢٦, ٨:١٥ م] أحمد: كلمة السر الجديدة للواي فاي هي {pw}
        ‏[٣/٣/٢٠٢٦, ٨:١٦ م] سارة: شكراً 👍
        """, pw)


@cred("hebrew-google-chat-sisma")
def _he(rng):
    pw = mixed(rng, 10)
    return out(f"""
        יוסי כהן, 11:32
        הסיסמה לחשבון של הספק היא {pw}
        נועה לוי, 11:33
        תודה, מחליפה אותה עכשיו
        """, pw)


@cred("hindi-whatsapp-paasvard")
def _hi(rng):
    pw = person(rng)
    return out(f"""
        [05/03/26, 8:41:12 PM] राहुल: भैया, नेटफ्लिक्स का पासवर्ड क्या है?
        [05/03/26, 8:45:03 PM] अमित: ईमेल वही है, पासवर्ड {pw} है
        """, pw)


@cred("bengali-messenger-passwordti")
def _bn(rng):
    pw = short(rng)
    return out(f"""
        তানভীর: অফিসের ওয়াইফাই পাসওয়ার্ড কি?
        সুমাইয়া: পাসওয়ার্ড হলো {pw}
        """, pw)


@cred("chinese-wecom-message-mima")
def _zh(rng):
    pw = mixed(rng, 12)
    return out(f"""
        【企业微信】张伟 10:05
        测试服务器的root密码是 {pw} ，用完记得改一下
        【企业微信】李娜 10:07
        收到
        """, pw)


@cred("japanese-line-talk-history-pasuwado")
def _ja(rng):
    pw = person(rng)
    return out(f"""
        [LINE] 家族 のトーク履歴
        2026/03/04(水)
        19:22\t母\tWi-Fiのパスワードってなんだっけ？
        19:25\tゆうと\tパスワードは{pw}だよ
        """, pw)


@cred("korean-kakaotalk-export-bimilbeonho")
def _ko(rng):
    pw = leet(rng)
    return out(f"""
        2026년 3월 6일 오후 3:14, 김민준 : 관리자 계정 비밀번호 {pw} 입니다
        2026년 3월 6일 오후 3:15, 이서연 : 감사합니다!
        """, pw)


@cred("vietnamese-messenger-export-json-mat-khau")
def _vi(rng):
    pw = short(rng)
    msgs = {"participants": [{"name": "Minh Anh"}, {"name": "Quốc Bảo"}], "messages": [
        {"sender_name": "Minh Anh", "timestamp_ms": rng.randint(1767300000000, 1790000000000),
         "content": f"Mật khẩu tài khoản kế toán là {pw} nha anh"}]}
    return out(jd(msgs), pw)


@cred("thai-line-group-rahat-phan")
def _th(rng):
    pw = mixed(rng, 11)
    return out(f"""
        สมชาย: รหัสผ่านเข้าเครื่องเซิร์ฟเวอร์คือ {pw} นะครับ
        วิภา: ได้รับแล้วค่ะ
        """, pw)


@cred("indonesian-email-kata-sandi")
def _id(rng):
    pw = person(rng)
    return out(f"""
        Subjek: Akun email karyawan baru

        Halo Budi,
        Akun kamu sudah dibuat: budi.santoso@pt-maju.example
        Kata sandi sementara: {pw}
        Silakan ganti setelah login pertama.

        Salam, Tim IT
        """, pw)


@cred("swahili-sms-neno-la-siri")
def _sw(rng):
    pw = short(rng)
    return out(f"""
        Kutoka: +255 754 000 111
        Habari Juma, neno la siri la akaunti ya duka ni {pw}. Usimpe mtu mwingine.
        """, pw)


@cred("persian-telegram-ramz-obur")
def _fa(rng):
    pw = mixed(rng, 12)
    return out(f"""
        علی: رمز عبور پنل هاست رو می‌فرستی؟
        مریم: رمز عبور: {pw}
        """, pw)


@cred("swedish-teams-losenord")
def _sv(rng):
    pw = phrase(rng, 3, "")
    return out(f"""
        Erik Lindqvist 09:58
        Lösenordet till den delade brevlådan är {pw}
        Anna Berg 10:01
        Tack!
        """, pw)


@cred("czech-email-heslo-k-uctu")
def _cs(rng):
    pw = short(rng)
    return out(f"""
        Předmět: Přístup do administrace

        Dobrý den, pane Nováku,
        heslo k účtu správce e-shopu je {pw}
        S pozdravem, Petra
        """, pw)


@cred("tamil-signal-export-kadavuchol")
def _ta(rng):
    pw = person(rng)
    return out(f"""
        2026-03-02 21:10 கார்த்திக்: வைஃபை கடவுச்சொல் {pw}
        2026-03-02 21:11 பிரியா: நன்றி
        """, pw)


@cred("romanian-rocketchat-parola")
def _ro(rng):
    pw = mixed(rng, 13)
    msg = {"_id": mixed(rng, 17), "rid": "GENERAL", "msg": f"parola pentru contul de test este {pw}",
           "ts": {"$date": when(rng)}, "u": {"_id": mixed(rng, 17), "username": "andrei.pop"}}
    return out(jd(msg), pw)


@cred("english-zendesk-ticket-customer-shares-pin-and-password")
def _en_zendesk(rng):
    pw = person(rng)
    ticket = {"ticket": {"id": rng.randint(100000, 999999), "subject": "can't log in",
                         "description": f"Hi, I can't get into my account. My password is {pw} and I've tried "
                                        "it three times. Please help!", "status": "new"}}
    return out(jd(ticket), pw)


# ==========================================================================================================
# Clean documents: no credential, many look-alikes
# ==========================================================================================================


@clean("clean-langgraph-checkpoint-ids-and-token-usage")
def _c_langgraph(rng):
    return txt(jd({"thread_id": uid(rng), "checkpoint_id": uid(rng), "parent_checkpoint_id": uid(rng),
                   "metadata": {"source": "loop", "step": rng.randint(2, 30), "writes": {"agent": {
                       "usage_metadata": {"input_tokens": rng.randint(100, 9000), "output_tokens": rng.randint(10, 900),
                                          "total_tokens": rng.randint(9000, 10000)}}}}}))


@clean("clean-otel-genai-span-max-tokens-trace-ids")
def _c_otel(rng):
    return txt(jd({"traceId": trace_id(rng), "spanId": span_id(rng), "parentSpanId": span_id(rng), "name": "chat gpt-4.1",
                   "attributes": {"gen_ai.request.max_tokens": 4096, "gen_ai.usage.input_tokens": rng.randint(50, 900),
                                  "gen_ai.response.id": "chatcmpl-" + mixed(rng, 29),
                                  "gen_ai.response.finish_reasons": ["stop"]}}))


@clean("clean-mcp-config-env-var-references")
def _c_mcp(rng):
    return txt(jd({"mcpServers": {"github": {"command": "docker", "args": ["run", "-i", "--rm", "-e",
                   "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${input:github_token}"}}},
                   "inputs": [{"type": "promptString", "id": "github_token", "description": "GitHub PAT", "password": True}]}))


@clean("clean-mcp-tools-list-schema-password-field")
def _c_tools(rng):
    return txt(jd({"jsonrpc": "2.0", "id": rng.randint(1, 9), "result": {"tools": [{"name": "db_connect",
                   "description": "Open a connection. The password is read from the OS keychain.",
                   "inputSchema": {"type": "object", "properties": {"host": {"type": "string"},
                                                                   "password_ref": {"type": "string", "description": "keychain item name"}},
                                   "required": ["host"]}}]}}))


@clean("clean-crewai-log-redacted-tool-input")
def _c_crewai(rng):
    return txt(f"""
        # Agent: Research Analyst
        ## Using tool: Search the internet
        ## Tool Input: "{{\\"search_query\\": \\"token bucket rate limiting keyboard shortcuts\\"}}"
        ## Tool Output: 10 results, top: "Token bucket - Wikipedia"
        # Agent: Research Analyst
        ## Final Answer: The API key is stored in Secret Manager (ref projects/{digits(rng, 12)}/secrets/search-key/versions/3).
        """)


@clean("clean-terraform-plan-sensitive-value")
def _c_tfplan(rng):
    return txt(f"""
          # aws_db_instance.main will be created
          + resource "aws_db_instance" "main" {{
              + allocated_storage = 100
              + engine            = "postgres"
              + engine_version    = "17.2"
              + password          = (sensitive value)
              + username          = "app_admin"
              + id                = (known after apply)
            }}
        Plan: 1 to add, 0 to change, 0 to destroy.
        Saved the plan to: tfplan-{sha(rng)[:12]}
        """)


@clean("clean-helm-values-existing-secret-refs")
def _c_helm(rng):
    return txt(f"""
        auth:
          existingSecret: pg-auth
          secretKeys:
            adminPasswordKey: postgres-password
            userPasswordKey: password
        image:
          tag: 17.2.0-debian-12-r{rng.randint(1, 9)}
          digest: sha256:{hexa(rng, 64)}
        """)


@clean("clean-k8s-configmap-base64-non-secret")
def _c_cm(rng):
    payload = base64.b64encode(b"log_level=info\nfeature_flags=search,checkout\n").decode()
    return txt(f"""
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: app-settings
          uid: {uid(rng)}
          resourceVersion: "{digits(rng, 8)}"
        binaryData:
          settings.conf: {payload}
        """)


@clean("clean-github-actions-secrets-expressions")
def _c_gha(rng):
    return txt(f"""
        jobs:
          deploy:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@{sha(rng)}  # v4.2.2
              - run: ./deploy.sh
                env:
                  API_TOKEN: ${{{{ secrets.API_TOKEN }}}}
                  DB_PASSWORD: ${{{{ secrets.DB_PASSWORD }}}}
        """)


@clean("clean-git-log-oneline-shas")
def _c_gitlog(rng):
    lines = [f"{sha(rng)[:7]} {m}" for m in ("Rotate keys via Vault (no secrets in repo)",
                                             "Fix keyboard navigation in password field",
                                             "Bump tokenizers to 0.21.0", "Tests passed on arm64")]
    return "\n".join(lines) + "\n"


@clean("clean-psql-session-no-credentials")
def _c_psql(rng):
    return txt(f"""
        $ psql service=reports
        psql (17.2)
        reports=> SELECT id, token_count, created_at FROM prompts ORDER BY id DESC LIMIT 2;
          id  | token_count |          created_at
        ------+-------------+-------------------------------
         {digits(rng, 4)} |        {rng.randint(100, 999)} | 2026-03-04 10:11:12.1+00
         {digits(rng, 4)} |        {rng.randint(100, 999)} | 2026-03-04 10:09:58.7+00
        """)


@clean("clean-redis-cli-info-server-run-id")
def _c_redis(rng):
    return txt(f"""
        127.0.0.1:6379> INFO server
        # Server
        redis_version:7.4.2
        redis_git_sha1:00000000
        redis_build_id:{hexa(rng, 16)}
        run_id:{hexa(rng, 40)}
        tcp_port:6379
        """)


@clean("clean-aws-sts-get-caller-identity")
def _c_sts(rng):
    return txt(jd({"UserId": "AROA" + upper(rng, 17) + ":jdoe", "Account": digits(rng, 12),
                   "Arn": f"arn:aws:sts::{digits(rng, 12)}:assumed-role/Developer/jdoe"}))


@clean("clean-gcloud-config-list-no-token")
def _c_gcloud(rng):
    return txt(f"""
        $ gcloud config list
        [core]
        account = jdoe@acme.example
        disable_usage_reporting = True
        project = acme-analytics-{digits(rng, 6)}

        Your active configuration is: [default]
        """)


@clean("clean-wrangler-secret-put-prompt")
def _c_wrangler(rng):
    return txt("""
        $ npx wrangler secret put STRIPE_KEY
        ✔ Enter a secret value: … ************************
        🌀 Creating the secret for the Worker "edge-api"
        ✨ Success! Uploaded secret STRIPE_KEY
        """)


@clean("clean-esphome-secret-references")
def _c_esphome(rng):
    return txt(f"""
        wifi:
          ssid: !secret wifi_ssid
          password: !secret wifi_password
        api:
          encryption:
            key: !secret api_key
        # build {hexa(rng, 8)} compiled in 41.{rng.randint(10, 99)}s
        """)


@clean("clean-arduino-sketch-reads-eeprom-creds")
def _c_arduino(rng):
    return txt(f"""
        #include <Preferences.h>
        Preferences prefs;
        void setup() {{
          prefs.begin("wifi", true);
          String pass = prefs.getString("password", "");
          WiFi.begin(prefs.getString("ssid").c_str(), pass.c_str());
          Serial.printf("fw build %s\\n", "{sha(rng)[:10]}");
        }}
        """)


@clean("clean-wireguard-public-keys-only-wg-show")
def _c_wg(rng):
    return txt(f"""
        interface: wg0
          public key: {wgkey(rng)}
          private key: (hidden)
          listening port: 51820

        peer: {wgkey(rng)}
          endpoint: 198.51.100.{rng.randint(2, 250)}:51820
          allowed ips: 10.8.0.2/32
          latest handshake: 42 seconds ago
        """)


@clean("clean-ssh-public-key-and-fingerprint")
def _c_sshpub(rng):
    return txt(f"""
        $ ssh-keygen -lf ~/.ssh/id_ed25519.pub
        256 SHA256:{b64(rng, 32).rstrip("=")} kenji@laptop (ED25519)
        $ cat ~/.ssh/id_ed25519.pub
        ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(rng, 32)[:43]} kenji@laptop
        """)


@clean("clean-har-entry-no-auth-cache-headers")
def _c_har(rng):
    return txt(jd({"request": {"method": "GET", "url": f"https://cdn.example.com/app.{hexa(rng, 20)}.js",
                               "headers": [{"name": "If-None-Match", "value": f"W/\"{hexa(rng, 32)}\""}]},
                   "response": {"status": 304, "headers": [{"name": "ETag", "value": f"W/\"{hexa(rng, 32)}\""},
                                                           {"name": "X-Request-Id", "value": uid(rng)}]}}))


@clean("clean-curl-verbose-tls-session-ids")
def _c_curl(rng):
    return txt(f"""
        * TLSv1.3 (IN), TLS handshake, Newsession Ticket (4):
        * SSL connection using TLSv1.3 / TLS_AES_128_GCM_SHA256 / X25519 / id-ecPublicKey
        * Server certificate:
        *  subject: CN=api.example.org
        *  serial: {":".join(rng.randbytes(1).hex().upper() for _ in range(16))}
        > GET /healthz HTTP/2
        < HTTP/2 200
        < x-amzn-trace-id: Root=1-{hexa(rng, 8)}-{hexa(rng, 24)}
        """)


@clean("clean-postman-collection-variable-placeholders")
def _c_postman(rng):
    return txt(jd({"info": {"_postman_id": uid(rng), "name": "Billing"},
                   "auth": {"type": "apikey", "apikey": [{"key": "value", "value": "{{apiKey}}"},
                                                         {"key": "key", "value": "X-API-Key"}]},
                   "variable": [{"key": "apiKey", "value": ""}]}))


@clean("clean-jupyter-notebook-getpass-and-hash")
def _c_ipynb(rng):
    return txt(jd({"cell_type": "code", "execution_count": 2, "metadata": {},
                   "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"sha256: {hexa(rng, 64)}\n"]}],
                   "source": ["from getpass import getpass\n", "pw = getpass('Password: ')\n",
                              "print('sha256:', hashlib.sha256(open('data.bin','rb').read()).hexdigest())"]}, 1))


@clean("clean-csv-inventory-serials-and-macs")
def _c_csv(rng):
    rows = [f"{upper(rng, 12)},{':'.join(rng.randbytes(1).hex() for _ in range(6))},{uid(rng)},passed"
            for _ in range(3)]
    return "serial,mac,asset_uuid,burn_in\n" + "\n".join(rows) + "\n"


@clean("clean-npmrc-env-var-token-reference")
def _c_npmrc(rng):
    return txt(f"""
        //registry.npmjs.org/:_authToken=${{NPM_TOKEN}}
        @acme:registry=https://npm.pkg.github.com
        # integrity sha512-{b64(rng, 48)}
        """)


@clean("clean-package-lock-integrity-hashes")
def _c_lock(rng):
    return txt(jd({"node_modules/jsonwebtoken": {"version": "9.0.2",
                   "resolved": "https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz",
                   "integrity": "sha512-" + b64(rng, 64)},
                   "node_modules/keygrip": {"version": "1.1.0", "integrity": "sha512-" + b64(rng, 64)}}))


@clean("clean-python-source-reads-env-getenv")
def _c_pysrc(rng):
    return txt(f"""
        import os

        API_KEY = os.environ["PAYMENTS_API_KEY"]
        DB_PASSWORD = os.getenv("DB_PASSWORD")  # set by the secrets operator
        MAX_TOKENS = {rng.choice([1024, 2048, 4096])}
        SESSION_TTL_SECONDS = {rng.randint(600, 86400)}
        """)


@clean("clean-go-panic-without-config")
def _c_gopanic(rng):
    return txt(f"""
        panic: assignment to entry in nil map

        goroutine {rng.randint(1, 200)} [running]:
        github.com/acme/tokenizer.(*Vocab).Add(0xc000{hexa(rng, 6)}, {{0xc0001b2000, 0x8}})
        \t/go/pkg/mod/github.com/acme/tokenizer@v0.9.3/vocab.go:77 +0x1f4
        exit status 2
        """)


@clean("clean-spring-actuator-env-masked")
def _c_actuator(rng):
    return txt(jd({"propertySources": [{"name": "systemEnvironment", "properties": {
        "DB_PASSWORD": {"value": "******"}, "JWT_SECRET": {"value": "******"},
        "HOSTNAME": {"value": f"orders-{lower(rng, 10)}-{lower(rng, 5)}"}}}]}))


@clean("clean-windows-cmdkey-list-no-passwords")
def _c_cmdkey(rng):
    return txt("""
        C:\\> cmdkey /list

        Currently stored credentials:

            Target: Domain:target=fileserver01
            Type: Domain Password
            User: CORP\\scanner
            Local machine persistence
        """)


@clean("clean-powershell-read-host-assecurestring")
def _c_ps(rng):
    return txt(f"""
        PS C:\\> $pw = Read-Host -AsSecureString "Enter password"
        Enter password: ************
        PS C:\\> $pw
        System.Security.SecureString
        PS C:\\> (Get-FileHash .\\setup.msi).Hash
        {hexa(rng, 64).upper()}
        """)


@clean("clean-macos-security-find-without-w")
def _c_macsec(rng):
    return txt("""
        % security find-generic-password -s "Wi-Fi"
        keychain: "/Library/Keychains/System.keychain"
        class: "genp"
        attributes:
            "acct"<blob>="HomeNet-5G"
            "svce"<blob>="AirPort"
            0x00000007 <blob>="HomeNet-5G"
        """)


@clean("clean-otpauth-docs-example-placeholder")
def _c_otp(rng):
    return txt(f"""
        ## Key URI format
        otpauth://TYPE/LABEL?PARAMETERS
        `secret` is REQUIRED and holds an arbitrary key value encoded in Base32 (RFC 3548); see RFC 4226.
        Example: otpauth://totp/Example:alice@example.com?secret=<BASE32_SECRET>&issuer=Example
        Doc revision {sha(rng)[:8]}
        """)


@clean("clean-english-chat-password-reset-prose")
def _c_chat_en(rng):
    return txt(f"""
        [10:02] maria: reset my password via the portal, the new one passed the strength check 👍
        [10:03] dev: nice. btw the token limit on the summarizer is max_tokens={rng.choice([512, 1024])}, keyboard shortcut is Ctrl+K
        [10:04] maria: got it, ticket #{digits(rng, 6)} can be closed
        """)


@clean("clean-spanish-email-no-compartir-contrasena")
def _c_es(rng):
    return txt(f"""
        Asunto: Recordatorio de seguridad

        Nunca compartas tu contraseña por correo ni por WhatsApp. El equipo de TI jamás te la pedirá.
        Referencia: SEG-{digits(rng, 5)}
        """)


@clean("clean-japanese-notice-pasuwado-policy")
def _c_ja(rng):
    return txt(f"""
        【お知らせ】パスワードは12文字以上に設定してください。トークンの有効期限は30日です。
        管理番号: {upper(rng, 10)}
        """)


@clean("clean-german-it-notice-passwort-ablauf")
def _c_de(rng):
    return txt(f"""
        Hinweis: Ihr Passwort läuft in {rng.randint(3, 14)} Tagen ab. Bitte ändern Sie es über https://passwort.firma.example.
        Ticket-ID: {uid(rng)}
        """)


@clean("clean-arabic-notice-kalimat-al-sir")
def _c_ar(rng):
    return txt(f"""
        تنبيه: لا تشارك كلمة السر مع أي شخص. رقم الطلب {digits(rng, 8)}
        """)


@clean("clean-docker-image-digests-and-versions")
def _c_docker(rng):
    return txt(f"""
        $ docker images --digests
        REPOSITORY          TAG       DIGEST                                                                    IMAGE ID       SIZE
        ghcr.io/acme/api    2.14.0    sha256:{hexa(rng, 64)}   {hexa(rng, 12)}   187MB
        postgres            17.2      sha256:{hexa(rng, 64)}   {hexa(rng, 12)}   438MB
        """)


@clean("clean-jwt-decoded-header-payload-no-signature")
def _c_jwt(rng):
    return txt(f"""
        $ jwt decode --json "$TOKEN" | jq '{{header, payload}}'
        {{
          "header": {{ "alg": "RS256", "kid": "{hexa(rng, 40)}", "typ": "JWT" }},
          "payload": {{ "sub": "{uid(rng)}", "aud": "api://orders", "exp": {rng.randint(1767300000, 1790000000)} }}
        }}
        """)


@clean("clean-vault-token-lookup-accessor-only")
def _c_vault(rng):
    return txt(f"""
        $ vault token lookup -accessor {b64url(rng, 18)}
        Key                 Value
        ---                 -----
        accessor            {b64url(rng, 18)}
        display_name        approle
        policies            [default billing-read]
        ttl                 {rng.randint(100, 3000)}h
        """)


@clean("clean-bcrypt-and-argon2-hashes-in-seed-sql")
def _c_hashes(rng):
    bc = "$2b$12$" + chars(rng, _AN + "./", 53)
    ar = f"$argon2id$v=19$m=65536,t=3,p=4${b64(rng, 16).rstrip('=')}${b64(rng, 32).rstrip('=')}"
    return txt(f"""
        INSERT INTO users (email, password_hash) VALUES
          ('admin@example.test', '{bc}'),
          ('qa@example.test', '{ar}');
        """)


@clean("clean-snmpwalk-public-mib-output")
def _c_snmp(rng):
    return txt(f"""
        IF-MIB::ifDescr.1 = STRING: GigabitEthernet1/0/1
        IF-MIB::ifPhysAddress.1 = STRING: {":".join(rng.randbytes(1).hex() for _ in range(6))}
        IF-MIB::ifInOctets.1 = Counter32: {digits(rng, 9)}
        SNMPv2-MIB::sysObjectID.0 = OID: SNMPv2-SMI::enterprises.9.1.{rng.randint(1000, 3000)}
        """)


@clean("clean-stripe-webhook-event-ids-only")
def _c_stripe(rng):
    return txt(jd({"id": "evt_" + mixed(rng, 24), "object": "event", "type": "invoice.paid",
                   "data": {"object": {"id": "in_" + mixed(rng, 24), "customer": "cus_" + mixed(rng, 14),
                                       "amount_paid": rng.randint(500, 90000), "currency": "eur"}},
                   "request": {"id": "req_" + mixed(rng, 14), "idempotency_key": uid(rng)}}))


@clean("clean-systemd-unit-loadcredential")
def _c_systemd(rng):
    return txt(f"""
        [Service]
        ExecStart=/usr/bin/exporter --web.listen-address=:{rng.randint(9100, 9999)}
        LoadCredential=db-password:/etc/exporter/db-password
        Environment=DB_PASSWORD_FILE=%d/db-password
        DynamicUser=yes
        """)



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
