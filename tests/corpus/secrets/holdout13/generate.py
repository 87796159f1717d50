"""The HOLDOUT13 part of the secret corpus: a thirteenth blind part, written after HOLDOUT to HOLDOUT12.

Written blind: its author read only the `Document` type, the structure test of the blind parts and the layout
of the HOLDOUT12 generator (to copy its interface, and its shape names only to avoid reusing them); never the
detector, its rules, docs, tests, state or figures, and no document was run through a detector or a redactor.
Each document imitates what a real tool, agent, config file, log, terminal session, HTTP trace, notebook, chat
message or person writes in 2026:

- LLM observability and agent runtimes: OpenTelemetry GenAI spans, Langfuse, Phoenix/Arize, W&B Weave,
  Braintrust, Helicone, Portkey, Promptfoo, Inspect, AgentOps, Temporal, Prefect, Dagster, Airflow, Ray, Modal,
  Replicate, Together, Groq, Mistral, Cohere, Bedrock and Vertex;
- CI systems (GitHub Actions, GitLab, Buildkite, CircleCI, Jenkins, Drone, Woodpecker, TeamCity, Azure Pipelines,
  Tekton) and package managers and registries (npm, pip, twine, cargo, gem, NuGet, Composer, Maven, Gradle, Go,
  conda, Poetry, uv, Docker, Helm);
- shells and editors (fish, zsh, PowerShell transcripts, nushell, tmux, Jupyter, VS Code, JetBrains), mail, chat
  and phones (Slack, Teams, Discord, Matrix, WhatsApp, SMS, voicemail, tickets), IoT, routers, printers, cameras,
  consoles, payments, HL7 and FHIR, LDAP, Kerberos, RADIUS, SAML, OIDC, SSH, GPG, age, sops, password-manager
  exports, database URLs and ORM configs in many languages, spreadsheets, OCR text, pastebins, diffs, review
  comments, stack traces and core dumps, and people spelling passwords out in English and some seventy other
  languages, variants and scripts (chat exports, e-mail, SMS backups, notes, forums, tickets, voicemail), each with
  its own way of saying "the password is".

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more.
Usernames, client/app/key ids, account and project ids, public keys, hashes, request/trace/span ids and masked
echoes are not planted and, where present, are not credentials. A base64 `user:password` pair is planted as its
base64 text; a PEM or OpenSSH private key is planted as its first body line.

Clean documents hold no credential but many look-alikes (UUIDs, SHAs, trace and span ids, versions, checksums,
base64 of non-secrets, `max_tokens`, `keyboard`, `passed`, `tokenizer`, `password_min_length`, env-var
references, marked placeholders, masked values, password hashes and public keys).

SEED = 2026121349. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones.
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

SEED = 2026121349

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
_HEX = "0123456789abcdef"
_WORDS = tuple(
    """
    anchovy barnacle cardamom dovetail eyelet fjord gazebo hammock igloo jackal kumquat lichen mandolin
    nectarine obelisk pelican quiver rhubarb sextant tortoise ukulele vortex wisteria xylem yodel zucchini
    abacus bramble chutney driftwood emberglow foxglove gondola hazelnut ironwood jasmine kilowatt larkspur
    mongoose nightjar oxbow paprika quokka rosehip snapdragon truffle upland vermilion waffle yonder
    buttress catamaran dandelion elmtree fennel gargoyle hornbill indigo jetty kiwifruit limpet marzipan
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
        v = chars(rng, _HEX, n)
        if any(c.isdigit() for c in v) and any(c.isalpha() for c in v):
            return v


def b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def b64url(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def uid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def digits(rng: random.Random, n: int) -> str:
    return str(rng.randint(1, 9)) + chars(rng, string.digits, n - 1)


def symbolic(rng: random.Random, n: int, marks: str = "!#%*+-=?@^_~") -> str:
    """A password manager's output: letters, digits and marks."""
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if (any(c in marks for c in v) and any(c.isdigit() for c in v)
                and any(c.isupper() for c in v) and any(c.islower() for c in v)):
            return v


def safe(rng: random.Random, n: int) -> str:
    """A generated password whose marks survive URLs, XML, JSON and shell quoting unescaped."""
    return symbolic(rng, n, "-_.~")


def person(rng: random.Random) -> str:
    """What a person types: one or two words, a number, maybe a mark."""
    w = rng.choice(_WORDS).capitalize()
    if rng.random() < 0.4:
        w += rng.choice(_WORDS)
    return w + str(rng.randint(10, 9999)) + rng.choice(["", "!", "?", "#", "$", "*", ".", "+"])


def leet(rng: random.Random) -> str:
    w = rng.choice([w for w in _WORDS if len(w) >= 6])
    t = w.translate(str.maketrans({"a": "4", "o": "0", "e": "3", "i": "!", "s": "5", "t": "7"}))
    return t[0].upper() + t[1:] + str(rng.randint(100, 999)) + rng.choice("@#%!")


def phrase(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    return sep.join(rng.sample(_WORDS, n))


def seg(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def jwt(rng: random.Random, claims: dict, alg: str = "HS256") -> str:
    return f"{seg({'alg': alg, 'typ': 'JWT'})}.{seg(claims)}.{b64url(rng, 32 if alg.startswith('HS') else 64)}"


def pem_line(rng: random.Random, head: str = "MIIEpAIBAAKCAQEA") -> str:
    return (head + b64(rng, 60))[:64]


def pem_block(rng: random.Random, first: str, kind: str = "RSA PRIVATE KEY", lines: int = 5) -> str:
    body = [first] + [b64(rng, 48) for _ in range(lines - 1)] + [b64(rng, 20)]
    return "\n".join([f"-----BEGIN {kind}-----", *body, f"-----END {kind}-----"])


def ssh_line(rng: random.Random) -> str:
    return ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + b64(rng, 40))[:70]


def basic(user: str, pw: str) -> str:
    return base64.b64encode(f"{user}:{pw}".encode()).decode()


def quote(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def ip(rng: random.Random) -> str:
    return f"192.168.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


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


def who(rng: random.Random) -> str:
    return rng.choice(["ayodele", "beatriz", "cosmin", "dilnoza", "eero", "fatou", "gunnar", "haruto", "ilse",
                       "joaquin", "kalani", "lucja", "mihai", "nkechi", "orla", "pavel", "qiu", "rosalind",
                       "siddharth", "thandiwe", "ulla", "valentina", "wen", "ximena", "yusuf", "zofia"])


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=indent)


def secret_for(rng: random.Random) -> str:
    """One of the forms a person or a generator gives a password, for the prose shapes."""
    return rng.choice([person, leet, lambda r: safe(r, 14), lambda r: phrase(r, 3, rng.choice(["-", ".", "_"]))])(rng)


# ==========================================================================================================
# LLM observability, agent runtimes and model providers
# ==========================================================================================================


@cred("otel-genai-span-tool-execute-arguments-attribute")
def _otel_genai(rng):
    key = "rnv_sk_" + mixed(rng, 34)
    span = {"name": "execute_tool create_ticket", "context": {"trace_id": "0x" + trace_id(rng),
                                                             "span_id": "0x" + span_id(rng)},
            "kind": "SpanKind.INTERNAL", "start_time": when(rng),
            "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "create_ticket",
                           "gen_ai.tool.call.id": "toolu_" + mixed(rng, 22),
                           "gen_ai.tool.call.arguments": json.dumps({"project": "OPS", "summary": "rotate",
                                                                     "ravenna_key": key})},
            "resource": {"attributes": {"service.name": "support-agent", "telemetry.sdk.version": "1.39.0"}}}
    return out(jd(span), key)


@cred("langfuse-python-sdk-init-secret-key-notebook")
def _langfuse(rng):
    sk = "sk-lf-" + uid(rng)
    pk = "pk-lf-" + uid(rng)
    return out(f"""
        In [3]: from langfuse import Langfuse
           ...: langfuse = Langfuse(
           ...:     public_key="{pk}",
           ...:     secret_key="{sk}",
           ...:     host="https://cloud.langfuse.com",
           ...: )
           ...: langfuse.auth_check()
        Out[3]: True
        """, sk)


@cred("langfuse-docker-compose-nextauth-and-salt")
def _langfuse_self(rng):
    na = b64(rng, 32)
    salt = b64(rng, 24)
    return out(f"""
        services:
          langfuse-web:
            image: langfuse/langfuse:3
            ports: ["3000:3000"]
            environment:
              DATABASE_URL: postgresql://postgres@db:5432/postgres
              NEXTAUTH_URL: http://localhost:3000
              NEXTAUTH_SECRET: "{na}"
              SALT: "{salt}"
              TELEMETRY_ENABLED: "false"
        """, na, salt)


@cred("phoenix-arize-otel-register-headers-env")
def _phoenix(rng):
    key = "ak-" + uid(rng) + "-" + mixed(rng, 10)
    return out(f"""
        # tracing.py -- pasted into #ml-platform by {who(rng)}
        import os
        from phoenix.otel import register

        os.environ["PHOENIX_COLLECTOR_ENDPOINT"] = "https://app.phoenix.arize.com"
        os.environ["PHOENIX_CLIENT_HEADERS"] = "api_key={key}"
        tracer_provider = register(project_name="rag-eval", auto_instrument=True)
        """, key)


@cred("arize-ax-space-key-and-api-key-yaml")
def _arize(rng):
    api = "ak-" + lower(rng, 8) + "-" + mixed(rng, 32)
    return out(f"""
        arize:
          space_id: U3BhY2U6{mixed(rng, 10)}
          api_key: {api}
          model_id: churn-ranker
          model_version: v{rng.randint(2, 9)}.{rng.randint(0, 20)}
        """, api)


@cred("wandb-weave-netrc-api-host")
def _wandb_netrc(rng):
    key = hexa(rng, 40)
    return out(f"""
        $ cat ~/.netrc
        machine api.wandb.ai
          login user
          password {key}
        $ python -c "import weave; weave.init('{who(rng)}/agent-evals')"
        Logged in as Weights & Biases user: {who(rng)}.
        View Weave data at https://wandb.ai/{who(rng)}/agent-evals/weave
        """, key)


@cred("weave-call-trace-inputs-db-url")
def _weave_call(rng):
    pw = safe(rng, 16)
    call = {"id": uid(rng), "op_name": "weave:///acme/rag/op/fetch_docs:" + mixed(rng, 12),
            "trace_id": uid(rng), "parent_id": None, "started_at": when(rng),
            "inputs": {"dsn": f"postgresql://reader:{pw}@pgvector.acme.internal:5432/docs", "k": 8},
            "output": {"n": 8}, "summary": {"usage": {"gpt-4.1-mini": {"prompt_tokens": rng.randint(100, 900)}}}}
    return out(jd(call), pw)


@cred("braintrust-eval-cli-env-inline")
def _braintrust(rng):
    key = "sk-" + mixed(rng, 48)
    return out(f"""
        ~/evals main* ❯ BRAINTRUST_API_KEY={key} npx braintrust eval summarize.eval.ts
        Processing 1 evaluator...
        Experiment summarize-{sha(rng)[:7]} is running at https://www.braintrust.dev/app/acme/p/summarize
        ████████████████████████████████████████ | 100% | 48/48 datapoints
        Factuality  83.4% (+2.1%)
        """, key)


@cred("helicone-python-openai-default-headers")
def _helicone_py(rng):
    key = "sk-helicone-" + lower(rng, 7) + "-" + lower(rng, 7) + "-" + lower(rng, 7) + "-" + lower(rng, 7)
    return out(f"""
        client = OpenAI(
            base_url="https://oai.helicone.ai/v1",
            default_headers={{
                "Helicone-Auth": "Bearer {key}",
                "Helicone-Property-Session": session_id,
                "Helicone-Cache-Enabled": "true",
            }},
        )
        """, key)


@cred("portkey-gateway-curl-virtual-key-and-api-key")
def _portkey(rng):
    key = mixed(rng, 32)
    return out(f"""
        curl https://api.portkey.ai/v1/chat/completions \\
          -H "Content-Type: application/json" \\
          -H "x-portkey-api-key: {key}" \\
          -H "x-portkey-virtual-key: anthropic-prod-{lower(rng, 6)}" \\
          -H "x-portkey-trace-id: {uid(rng)}" \\
          -d '{{"model":"claude-haiku-4-5","max_tokens":512,"messages":[{{"role":"user","content":"ping"}}]}}'
        """, key)


@cred("promptfoo-config-provider-apikey-inline")
def _promptfoo(rng):
    key = "gsk_" + mixed(rng, 52)
    return out(f"""
        # promptfooconfig.yaml
        description: "router regression"
        prompts:
          - file://prompts/router.txt
        providers:
          - id: groq:llama-3.3-70b-versatile
            config:
              apiKey: {key}
              temperature: 0
              max_tokens: 256
        tests: file://tests/router_cases.csv
        """, key)


@cred("inspect-ai-eval-log-json-model-args")
def _inspect(rng):
    key = "sk-ant-api03-" + b64url(rng, 70) + "-" + mixed(rng, 6) + "AA"
    log = {"version": 2, "status": "success",
           "eval": {"task": "swe_lite", "task_id": mixed(rng, 22), "created": when(rng),
                    "model": "anthropic/claude-sonnet-4-5",
                    "model_args": {"api_key": key, "max_connections": 10},
                    "config": {"epochs": 1, "max_tokens": 4096}},
           "results": {"total_samples": 300, "completed_samples": 300}}
    return out(jd(log), key)


@cred("agentops-init-session-log-line")
def _agentops(rng):
    key = uid(rng)
    return out(f"""
        >>> import agentops
        >>> agentops.init(api_key="{key}", default_tags=["crew", "staging"])
        🖇 AgentOps: Session Replay: https://app.agentops.ai/sessions?trace_id={trace_id(rng)}
        🖇 AgentOps: [OPENAI INSTRUMENTOR] Instrumented 3 methods
        """, key)


@cred("temporal-worker-tls-and-api-key-env-file")
def _temporal(rng):
    key = jwt(rng, {"sub": "svc-billing-worker", "account_id": lower(rng, 5), "iss": "temporal.io",
                    "exp": rng.randint(1790000000, 1800000000)}, "ES256")
    return out(f"""
        # worker.env (billing namespace)
        TEMPORAL_ADDRESS=billing.{lower(rng, 5)}.tmprl.cloud:7233
        TEMPORAL_NAMESPACE=billing.{lower(rng, 5)}
        TEMPORAL_API_KEY={key}
        TEMPORAL_TASK_QUEUE=invoices
        """, key)


@cred("temporal-workflow-history-activity-input-payload")
def _temporal_hist(rng):
    pw = symbolic(rng, 18, "!*-_#")
    payload = base64.b64encode(json.dumps({"sftp_host": "files.partner.example", "user": "acme_drop",
                                           "password": pw}).encode()).decode()
    ev = {"eventId": "5", "eventTime": when(rng), "eventType": "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED",
          "activityTaskScheduledEventAttributes": {
              "activityId": "5", "activityType": {"name": "UploadReport"},
              "input": {"payloads": [{"metadata": {"encoding": "anNvbi9wbGFpbg=="}, "data": payload}]}}}
    return out("$ temporal workflow show -w report-" + digits(rng, 6) + " -o json | jq '.events[4]'\n" + jd(ev),
               payload)


@cred("prefect-block-secret-save-script")
def _prefect(rng):
    tok = "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    return out(f"""
        from prefect.blocks.system import Secret
        from prefect_slack import SlackCredentials

        Secret(value="{tok}").save("slack-bot-token", overwrite=True)
        SlackCredentials(token="{tok}").save("alerts", overwrite=True)
        print("saved blocks")
        """, tok)


@cred("prefect-cloud-profiles-toml")
def _prefect_prof(rng):
    key = "pnu_" + mixed(rng, 36)
    return out(f"""
        active = "cloud"

        [profiles.cloud]
        PREFECT_API_URL = "https://api.prefect.cloud/api/accounts/{uid(rng)}/workspaces/{uid(rng)}"
        PREFECT_API_KEY = "{key}"

        [profiles.local]
        PREFECT_API_URL = "http://127.0.0.1:4200/api"
        """, key)


@cred("dagster-yaml-run-storage-postgres-password")
def _dagster(rng):
    pw = person(rng)
    return out(f"""
        # $DAGSTER_HOME/dagster.yaml
        storage:
          postgres:
            postgres_db:
              username: dagster
              password: "{pw}"
              hostname: pg-dagster.svc
              db_name: dagster
              port: 5432
        run_coordinator:
          module: dagster.core.run_coordinator
          class: QueuedRunCoordinator
        """, pw)


@cred("dagster-resource-definitions-hardcoded-snowflake")
def _dagster_res(rng):
    pw = safe(rng, 20)
    return out(f"""
        defs = Definitions(
            assets=[raw_orders, stg_orders],
            resources={{
                "snowflake": SnowflakeResource(
                    account="xy{lower(rng, 5)}.eu-central-1",
                    user="DAGSTER_SVC",
                    password="{pw}",  # TODO move to EnvVar before merge
                    warehouse="TRANSFORM_WH",
                ),
            }},
        )
        """, pw)


@cred("airflow-connections-add-uri-cli")
def _airflow_cli(rng):
    pw = safe(rng, 15)
    return out(f"""
        (airflow) $ airflow connections add 'warehouse_rs' \\
            --conn-uri 'redshift://etl_user:{pw}@rs-prod.{lower(rng, 8)}.eu-west-1.redshift.amazonaws.com:5439/analytics'
        Successfully added `conn_id`=warehouse_rs : redshift://etl_user:******@rs-prod...
        """, pw)


@cred("airflow-variables-json-import-file")
def _airflow_vars(rng):
    key = "dapi" + hexa(rng, 32)
    return out(jd({"databricks_host": "https://adb-" + digits(rng, 16) + ".7.azuredatabricks.net",
                   "databricks_token": key, "alert_email": "data-oncall@acme.example",
                   "batch_size": 5000}), key)


@cred("airflow-task-log-env-dump-bashoperator")
def _airflow_log(rng):
    key = "AIza" + b64url(rng, 26)[:35]
    return out(f"""
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:75}} INFO - Running command: ['/usr/bin/bash', '-c', 'env | sort']
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:86}} INFO - Output:
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:93}} INFO - AIRFLOW_CTX_DAG_ID=geo_enrich
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:93}} INFO - GOOGLE_MAPS_API_KEY={key}
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:93}} INFO - HOSTNAME=airflow-worker-{rng.randint(0, 4)}
        [{day(rng)}, {hms(rng)} UTC] {{subprocess.py:97}} INFO - Command exited with return code 0
        """, key)


@cred("ray-job-submit-runtime-env-json")
def _ray(rng):
    key = "hf_" + mixed(rng, 34)
    return out(f"""
        $ ray job submit --address http://ray-head:8265 \\
            --runtime-env-json='{{"pip": ["vllm==0.11.0"], "env_vars": {{"HF_TOKEN": "{key}"}}}}' \\
            -- python serve_llm.py
        Job submission server address: http://ray-head:8265
        -------------------------------------------------------
        Job 'raysubmit_{mixed(rng, 16)}' submitted successfully
        -------------------------------------------------------
        """, key)


@cred("modal-toml-token-id-and-secret")
def _modal(rng):
    sec = "as-" + mixed(rng, 22)
    return out(f"""
        # ~/.modal.toml
        [{who(rng)}]
        token_id = "ak-{mixed(rng, 22)}"
        token_secret = "{sec}"
        active = true
        """, sec)


@cred("modal-secret-create-cli-history")
def _modal_secret(rng):
    key = "sk_live_" + mixed(rng, 40)
    return out(f"""
          501  modal app list
          502  modal secret create stripe-prod STRIPE_SECRET_KEY={key} --force
          503  modal deploy billing_app.py
        """, key)


@cred("replicate-python-client-token-colab")
def _replicate(rng):
    tok = "r8_" + mixed(rng, 37)
    return out(f"""
        # Colab cell 2
        %env REPLICATE_API_TOKEN={tok}
        env: REPLICATE_API_TOKEN={tok}
        output = replicate.run("black-forest-labs/flux-schnell", input={{"prompt": "a lighthouse at dusk"}})
        """, tok)


@cred("together-ai-node-sdk-constructor")
def _together(rng):
    key = "tgp_v1_" + b64url(rng, 32)
    return out(f"""
        import Together from "together-ai";

        const together = new Together({{ apiKey: "{key}" }});
        const res = await together.chat.completions.create({{
          model: "meta-llama/Llama-3.3-70B-Instruct-Turbo",
          messages: [{{ role: "user", content: prompt }}],
        }});
        """, key)


@cred("groq-curl-models-list-history")
def _groq(rng):
    key = "gsk_" + mixed(rng, 52)
    return out(f"""
        ❯ curl -s https://api.groq.com/openai/v1/models -H "Authorization: Bearer {key}" | jq '.data[].id' | head -3
        "llama-3.3-70b-versatile"
        "qwen/qwen3-32b"
        "openai/gpt-oss-120b"
        """, key)


@cred("mistral-la-plateforme-dotenv-comment-rotated")
def _mistral(rng):
    old = mixed(rng, 32)
    new = mixed(rng, 32)
    return out(f"""
        # Mistral (rotated {day(rng)}, old one still valid until Friday)
        # MISTRAL_API_KEY={old}
        MISTRAL_API_KEY={new}
        MISTRAL_MODEL=mistral-medium-latest
        """, old, new)


@cred("cohere-rerank-go-client-literal")
def _cohere(rng):
    key = mixed(rng, 40)
    return out(f"""
        co := cohereclient.NewClient(cohereclient.WithToken("{key}"))
        resp, err := co.V2.Rerank(ctx, &cohere.V2RerankRequest{{
            Model:     "rerank-v3.5",
            Query:     q,
            Documents: docs,
            TopN:      cohere.Int(5),
        }})
        """, key)


@cred("bedrock-boto3-session-keys-in-lambda-handler")
def _bedrock(rng):
    sec = b64(rng, 30)[:40]
    return out(f"""
        session = boto3.Session(
            aws_access_key_id="AKIA{upper(rng, 16)}",
            aws_secret_access_key="{sec}",
            region_name="us-east-1",
        )
        bedrock = session.client("bedrock-runtime")
        resp = bedrock.converse(modelId="anthropic.claude-sonnet-4-5-v1:0", messages=msgs)
        """, sec)


@cred("bedrock-agentcore-gateway-oauth-client-secret-log")
def _agentcore(rng):
    sec = lower(rng, 52)
    return out(f"""
        {when(rng)} INFO  agentcore.gateway  creating credential provider 'jira-oauth'
        {when(rng)} DEBUG agentcore.gateway  oauth2 config: {{'clientId': '{lower(rng, 26)}', 'clientSecret': '{sec}', 'discoveryUrl': 'https://auth.atlassian.com/.well-known/openid-configuration'}}
        {when(rng)} INFO  agentcore.gateway  credential provider ARN arn:aws:bedrock-agentcore:us-west-2:{digits(rng, 12)}:token-vault/default/oauth2credentialprovider/jira-oauth
        """, sec)


@cred("vertex-ai-express-mode-api-key-genai-client")
def _vertex(rng):
    key = "AQ." + b64url(rng, 40)
    return out(f"""
        from google import genai

        client = genai.Client(vertexai=True, api_key="{key}")
        r = client.models.generate_content(model="gemini-2.5-flash", contents="Summarise the incident")
        print(r.usage_metadata.total_token_count)
        """, key)


@cred("vertex-service-account-key-first-line-in-secret-manager-dump")
def _vertex_sa(rng):
    line = pem_line(rng, "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ")
    pk = pem_block(rng, line, "PRIVATE KEY").replace("\n", "\\n")
    return out(f"""
        $ gcloud secrets versions access latest --secret=vertex-batch-sa
        {{"type": "service_account", "project_id": "ml-batch-{digits(rng, 6)}", "private_key_id": "{hexa(rng, 40)}", "private_key": "{pk}\\n", "client_email": "vertex-batch@ml-batch.iam.gserviceaccount.com", "client_id": "{digits(rng, 21)}"}}
        """, line)


@cred("openrouter-key-in-sillytavern-secrets-json")
def _openrouter(rng):
    key = "sk-or-v1-" + hexa(rng, 64)
    return out(jd({"api_key_openrouter": key, "api_key_novel": "", "api_key_claude": "",
                   "sd_horde_api_key": "0000000000"}), key)


@cred("deepseek-key-in-chatbox-settings-export")
def _deepseek(rng):
    key = "sk-" + hexa(rng, 32)
    return out(jd({"settings": {"aiProvider": "deepseek", "deepseekAPIKey": key, "model": "deepseek-chat",
                                "temperature": 0.7, "showTokenCount": True, "language": "zh-Hans"},
                   "exportedAt": when(rng), "version": "1.16.2"}), key)


@cred("fireworks-ai-langchain-yaml-config")
def _fireworks(rng):
    key = "fw_" + mixed(rng, 24)
    return out(f"""
        llm:
          provider: fireworks
          model: accounts/fireworks/models/deepseek-v3p1
          fireworks_api_key: {key}
          max_tokens: 2048
        embeddings:
          provider: local
          model: BAAI/bge-m3
        """, key)


@cred("perplexity-sonar-ruby-faraday")
def _perplexity(rng):
    key = "pplx-" + mixed(rng, 48)
    return out(f"""
        conn = Faraday.new(url: "https://api.perplexity.ai") do |f|
          f.request :json
          f.response :json
          f.headers["Authorization"] = "Bearer {key}"
        end
        resp = conn.post("/chat/completions", {{ model: "sonar-pro", messages: msgs }})
        """, key)


@cred("xai-grok-key-in-raycast-extension-prefs-plist")
def _xai(rng):
    key = "xai-" + mixed(rng, 80)
    return out(f"""
        <?xml version="1.0" encoding="UTF-8"?>
        <plist version="1.0">
        <dict>
          <key>extension.grok-chat.apiKey</key>
          <string>{key}</string>
          <key>extension.grok-chat.model</key>
          <string>grok-4</string>
        </dict>
        </plist>
        """, key)


@cred("pinecone-key-in-llamaindex-notebook-traceback")
def _pinecone(rng):
    key = "pcsk_" + mixed(rng, 5) + "_" + mixed(rng, 60)
    return out(f"""
        ---------------------------------------------------------------------------
        UnauthorizedException                     Traceback (most recent call last)
        Cell In[7], line 3
              1 from pinecone import Pinecone
        ----> 3 pc = Pinecone(api_key="{key}")
              4 index = pc.Index("handbook-v2")
        UnauthorizedException: (401) Reason: Unauthorized. HTTP response body: Invalid API Key
        """, key)


@cred("qdrant-cloud-key-in-docker-run-history")
def _qdrant(rng):
    key = lower(rng, 8) + "-" + mixed(rng, 40)
    return out(f"""
        : {rng.randint(1760000000, 1790000000)}:0;docker run --rm -e QDRANT__SERVICE__API_KEY={key} -p 6333:6333 qdrant/qdrant:v1.15.4
        : {rng.randint(1760000000, 1790000000)}:0;curl -s localhost:6333/collections -H 'api-key: {key}'
        """, key)


@cred("weaviate-client-auth-api-key-ts")
def _weaviate(rng):
    key = mixed(rng, 40)
    return out(f"""
        const client = await weaviate.connectToWeaviateCloud(process.env.WCD_URL!, {{
          authCredentials: new weaviate.ApiKey("{key}"),
          headers: {{ "X-VoyageAI-Api-Key": process.env.VOYAGE_KEY ?? "" }},
        }});
        """, key)


@cred("voyage-embeddings-key-in-jupyter-widget-state")
def _voyage(rng):
    key = "pa-" + b64url(rng, 32)
    return out(jd({"metadata": {"widgets": {"application/vnd.jupyter.widget-state+json": {"state": {
        uid(rng).replace("-", ""): {"model_name": "PasswordModel", "model_module": "@jupyter-widgets/controls",
                                    "state": {"description": "Voyage key", "value": key, "disabled": False}}}}}}}),
               key)


@cred("elevenlabs-key-in-obs-plugin-ini")
def _elevenlabs(rng):
    key = "sk_" + hexa(rng, 48)
    return out(f"""
        [TTSCaptions]
        Provider=ElevenLabs
        ApiKey={key}
        VoiceId={mixed(rng, 20)}
        Stability=0.45
        """, key)


@cred("assemblyai-webhook-auth-header-value")
def _assembly(rng):
    key = hexa(rng, 32)
    hook = safe(rng, 24)
    return out(f"""
        transcript = aai.Transcriber(config=aai.TranscriptionConfig(
            webhook_url="https://hooks.acme.example/asr",
            webhook_auth_header_name="X-Hook-Secret",
            webhook_auth_header_value="{hook}",
        ))
        aai.settings.api_key = "{key}"
        """, key, hook)


@cred("deepgram-websocket-token-query-browser-console")
def _deepgram(rng):
    key = hexa(rng, 40)
    return out(f"""
        WebSocket connection to 'wss://api.deepgram.com/v1/listen?model=nova-3&token={key}' failed:
            at connect (mic.js:42:15)
            at HTMLButtonElement.<anonymous> (app.js:118:7)
        > navigator.mediaDevices.getUserMedia({{audio: true}})
        < Promise {{<pending>}}
        """, key)


@cred("hugging-face-git-credential-remote-url")
def _hf_git(rng):
    tok = "hf_" + mixed(rng, 34)
    return out(f"""
        $ git remote -v
        origin	https://{who(rng)}:{tok}@huggingface.co/spaces/acme/demo-chat (fetch)
        origin	https://{who(rng)}:{tok}@huggingface.co/spaces/acme/demo-chat (push)
        """, tok)


@cred("anthropic-admin-key-terraform-provider-block")
def _anthropic_admin(rng):
    key = "sk-ant-admin01-" + b64url(rng, 70) + "-" + mixed(rng, 6) + "AA"
    return out(f"""
        provider "anthropic" {{
          admin_key = "{key}"
        }}

        resource "anthropic_workspace" "evals" {{
          name = "evals"
        }}
        """, key)


@cred("openai-project-key-in-github-issue-body")
def _oai_issue(rng):
    key = "sk-proj-" + b64url(rng, 120)[:156]
    return out(f"""
        ### Bug: `responses.create` hangs with stream=True

        **Steps**
        ```python
        client = OpenAI(api_key="{key}")
        with client.responses.stream(model="gpt-5-mini", input="hi") as s:
            for e in s: print(e.type)
        ```
        Python 3.12, openai 2.8.1, macOS 15. Hangs after `response.created`.
        """, key)


@cred("mlflow-tracking-uri-with-password-and-databricks-cfg")
def _mlflow(rng):
    pw = safe(rng, 14)
    return out(f"""
        $ export MLFLOW_TRACKING_URI=https://mlflow:{pw}@mlflow.ml.acme.internal
        $ mlflow runs list --experiment-id {rng.randint(1, 90)}
        Date                     Name               ID
        -----------------------  -----------------  --------------------------------
        {day(rng)} {hms(rng)}  bright-ox-{rng.randint(10, 99)}       {hexa(rng, 32)}
        """, pw)


@cred("comet-ml-config-file-api-key")
def _comet(rng):
    key = mixed(rng, 25)
    return out(f"""
        # ~/.comet.config
        [comet]
        api_key = {key}
        workspace = {who(rng)}
        project_name = vit-finetune
        """, key)


@cred("neptune-api-token-base64-json-env")
def _neptune(rng):
    tok = base64.b64encode(json.dumps({"api_address": "https://app.neptune.ai", "api_url": "https://app.neptune.ai",
                                       "api_key": uid(rng)}).encode()).decode()
    return out(f"""
        export NEPTUNE_PROJECT="acme/segmentation"
        export NEPTUNE_API_TOKEN="{tok}"
        python train.py --epochs 40
        """, tok)


# ==========================================================================================================
# CI systems
# ==========================================================================================================


@cred("github-actions-workflow-env-hardcoded-deploy-token")
def _gha_env(rng):
    tok = "dop_v1_" + hexa(rng, 64)
    return out(f"""
        name: deploy
        on:
          push:
            branches: [main]
        env:
          REGISTRY: registry.digitalocean.com/acme
          DIGITALOCEAN_ACCESS_TOKEN: {tok}
        jobs:
          build:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@v5
              - uses: digitalocean/action-doctl@v2
        """, tok)


@cred("github-actions-run-log-set-output-token-unmasked")
def _gha_log(rng):
    tok = "ghs_" + mixed(rng, 36)
    return out(f"""
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z ##[group]Run ./scripts/app-token.sh
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z ./scripts/app-token.sh
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z shell: /usr/bin/bash -e {{0}}
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z ##[endgroup]
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z installation token: {tok} (expires in 3600s)
        2026-03-04T09:12:{rng.randint(10, 59)}.{digits(rng, 7)}Z ##[warning]Node.js 20 actions are deprecated.
        """, tok)


@cred("github-fine-grained-pat-in-renovate-config-js")
def _renovate(rng):
    tok = "github_pat_11" + upper(rng, 20) + "_" + mixed(rng, 59)
    return out(f"""
        module.exports = {{
          platform: "github",
          token: "{tok}",
          repositories: ["acme/web", "acme/api"],
          onboarding: false,
          hostRules: [{{ matchHost: "npm.pkg.github.com", hostType: "npm", token: process.env.NPM_TOKEN }}],
        }};
        """, tok)


@cred("gitlab-ci-yml-variables-block-registry-password")
def _gitlab_ci(rng):
    pw = "glpat-" + b64url(rng, 15)[:20]
    return out(f"""
        variables:
          DOCKER_DRIVER: overlay2
          CI_REGISTRY_USER: deploy-bot
          CI_REGISTRY_PASSWORD: "{pw}"

        build:
          stage: build
          image: docker:27
          script:
            - echo "$CI_REGISTRY_PASSWORD" | docker login -u "$CI_REGISTRY_USER" --password-stdin $CI_REGISTRY
            - docker build -t $CI_REGISTRY_IMAGE:$CI_COMMIT_SHORT_SHA .
        """, pw)


@cred("gitlab-runner-config-toml-runner-token")
def _gitlab_runner(rng):
    tok = "glrt-t3_" + b64url(rng, 20)[:27]
    return out(f"""
        concurrent = 4
        check_interval = 0

        [[runners]]
          name = "build-{lower(rng, 6)}"
          url = "https://gitlab.acme.example"
          id = {rng.randint(100, 9999)}
          token = "{tok}"
          token_obtained_at = {when(rng)}
          executor = "docker"
          [runners.docker]
            image = "alpine:3.22"
            privileged = true
        """, tok)


@cred("buildkite-agent-cfg-token-line")
def _bk_agent(rng):
    tok = "bkct_" + mixed(rng, 40)
    return out(f"""
        # /etc/buildkite-agent/buildkite-agent.cfg
        token="{tok}"
        name="%hostname-%spawn"
        tags="queue=linux-arm64,size=large"
        build-path="/var/lib/buildkite-agent/builds"
        hooks-path="/etc/buildkite-agent/hooks"
        """, tok)


@cred("buildkite-pipeline-upload-env-user-api-token")
def _bk_pipe(rng):
    tok = "bkua_" + hexa(rng, 40)
    return out(f"""
        steps:
          - label: ":rocket: trigger downstream"
            command: |
              curl -sf -X POST "https://api.buildkite.com/v2/organizations/acme/pipelines/deploy/builds" \\
                -H "Authorization: Bearer {tok}" \\
                -d '{{"commit":"'$BUILDKITE_COMMIT'","branch":"main"}}'
            agents:
              queue: default
        """, tok)


@cred("circleci-config-environment-key-in-job")
def _circle(rng):
    key = hexa(rng, 40)
    return out(f"""
        version: 2.1
        jobs:
          test:
            docker:
              - image: cimg/python:3.13
                auth:
                  username: acmebot
                  password: {key}
            steps:
              - checkout
              - run: uv sync && uv run pytest -q
        """, key)


@cred("circleci-personal-token-cli-yml")
def _circle_cli(rng):
    tok = "CCIPAT_" + mixed(rng, 22) + "_" + hexa(rng, 40)
    return out(f"""
        # ~/.circleci/cli.yml
        host: https://circleci.com
        endpoint: graphql-unstable
        token: {tok}
        rest_endpoint: api/v2
        tls_cert: ""
        """, tok)


@cred("jenkins-credentials-xml-decrypted-script-console")
def _jenkins(rng):
    pw = symbolic(rng, 16, "!#*-_")
    return out(f"""
        Script Console result:
        println(hudson.util.Secret.decrypt("{{AQAAABAAAAAQ{b64(rng, 30)}}}"))

        Result: {pw}
        """, pw)


@cred("jenkinsfile-withenv-literal-nexus-password")
def _jenkinsfile(rng):
    pw = person(rng)
    return out(f"""
        pipeline {{
          agent {{ label 'maven' }}
          stages {{
            stage('Publish') {{
              steps {{
                withEnv(["NEXUS_USER=ci-publisher", "NEXUS_PASS={pw}"]) {{
                  sh 'mvn -B deploy -s .ci/settings.xml'
                }}
              }}
            }}
          }}
        }}
        """, pw)


@cred("jenkins-api-token-curl-crumb-issuer")
def _jenkins_api(rng):
    tok = "11" + hexa(rng, 32)
    return out(f"""
        $ curl -s -u {who(rng)}:{tok} 'https://ci.acme.example/crumbIssuer/api/json'
        {{"_class":"hudson.security.csrf.DefaultCrumbIssuer","crumb":"{hexa(rng, 64)}","crumbRequestField":"Jenkins-Crumb"}}
        """, tok)


@cred("drone-yml-settings-password-literal")
def _drone(rng):
    pw = safe(rng, 18)
    return out(f"""
        kind: pipeline
        type: docker
        name: publish

        steps:
          - name: docker
            image: plugins/docker
            settings:
              repo: harbor.acme.example/web/frontend
              registry: harbor.acme.example
              username: robot$frontend
              password: {pw}
              tags: [latest, "${{DRONE_TAG}}"]
        """, pw)


@cred("woodpecker-server-env-agent-secret")
def _woodpecker(rng):
    sec = hexa(rng, 64)
    return out(f"""
        WOODPECKER_HOST=https://ci.home.example
        WOODPECKER_OPEN=false
        WOODPECKER_GITEA=true
        WOODPECKER_GITEA_URL=https://git.home.example
        WOODPECKER_GITEA_CLIENT={uid(rng)}
        WOODPECKER_AGENT_SECRET={sec}
        """, sec)


@cred("teamcity-build-log-parameter-dump")
def _teamcity(rng):
    pw = safe(rng, 15)
    return out(f"""
        [{hms(rng)}] : Step 2/4: Deploy (Command Line)
        [{hms(rng)}] :	 [Step 2/4] Starting: /opt/buildagent/temp/agentTmp/custom_script{digits(rng, 18)}
        [{hms(rng)}] :	 [Step 2/4] + echo env.DEPLOY_USER=svc-deploy env.DEPLOY_PASSWORD={pw}
        [{hms(rng)}] :	 [Step 2/4] env.DEPLOY_USER=svc-deploy env.DEPLOY_PASSWORD={pw}
        [{hms(rng)}] :	 [Step 2/4] Process exited with code 0
        """, pw)


@cred("azure-pipelines-yml-variable-service-connection-pat")
def _azp(rng):
    pat = lower(rng, 52)
    return out(f"""
        variables:
          - group: shared-release
          - name: AZURE_DEVOPS_EXT_PAT
            value: {pat}
        steps:
          - script: az devops configure --defaults organization=https://dev.azure.com/acme project=Web
          - script: az pipelines run --name nightly-e2e
        """, pat)


@cred("azure-devops-npmrc-base64-password-line")
def _azp_npmrc(rng):
    pat = lower(rng, 52)
    enc = base64.b64encode(pat.encode()).decode()
    return out(f"""
        ; begin auth token
        //pkgs.dev.azure.com/acme/_packaging/web-feed/npm/registry/:username=acme
        //pkgs.dev.azure.com/acme/_packaging/web-feed/npm/registry/:_password={enc}
        //pkgs.dev.azure.com/acme/_packaging/web-feed/npm/registry/:email=npm requires email to be set but doesn't use the value
        ; end auth token
        """, enc)


@cred("tekton-task-run-describe-param-value")
def _tekton(rng):
    tok = "sha256~" + b64url(rng, 32)
    return out(f"""
        $ tkn taskrun describe push-image-run-{lower(rng, 5)}
        Name:              push-image-run-{lower(rng, 5)}
        Namespace:         ci
        Task Ref:          buildah
        Status:            Succeeded

        ⚓ Params
         NAME                VALUE
         ∙ IMAGE             image-registry.openshift-image-registry.svc:5000/ci/web:{sha(rng)[:7]}
         ∙ REGISTRY_TOKEN    {tok}
         ∙ TLSVERIFY         false
        """, tok)


@cred("bitbucket-pipelines-repository-variable-echo")
def _bitbucket(rng):
    tok = "ATCTT3xFfGN0" + b64url(rng, 140)[:180] + "=" + hexa(rng, 8).upper()
    return out(f"""
        image: atlassian/default-image:4
        pipelines:
          default:
            - step:
                script:
                  - export BB_TOKEN="{tok}"
                  - curl -H "Authorization: Bearer $BB_TOKEN" https://api.bitbucket.org/2.0/repositories/acme
        """, tok)


@cred("argo-workflows-template-inline-aws-secret")
def _argo_wf(rng):
    sec = b64(rng, 30)[:40]
    return out(f"""
        apiVersion: argoproj.io/v1alpha1
        kind: WorkflowTemplate
        metadata:
          name: backup-to-s3
        spec:
          templates:
            - name: upload
              container:
                image: amazon/aws-cli:2.31.0
                env:
                  - name: AWS_ACCESS_KEY_ID
                    value: AKIA{upper(rng, 16)}
                  - name: AWS_SECRET_ACCESS_KEY
                    value: {sec}
                command: [aws, s3, sync, /data, s3://acme-backups/argo]
        """, sec)


@cred("sonar-scanner-properties-login-token")
def _sonar(rng):
    tok = "squ_" + hexa(rng, 40)
    return out(f"""
        sonar.projectKey=acme_payments
        sonar.sources=src
        sonar.host.url=https://sonar.acme.example
        sonar.token={tok}
        sonar.python.version=3.13
        """, tok)


@cred("codecov-upload-token-in-makefile")
def _codecov(rng):
    tok = uid(rng)
    return out(f"""
        coverage:
        \tuv run pytest --cov=src --cov-report=xml
        \tcodecov upload-process -t {tok} -f coverage.xml --git-service github
        """, tok)


# ==========================================================================================================
# Package managers and registries
# ==========================================================================================================


@cred("npmrc-legacy-auth-base64-user-pass")
def _npmrc_auth(rng):
    enc = basic("ci-reader", safe(rng, 16))
    return out(f"""
        registry=https://nexus.acme.example/repository/npm-all/
        _auth={enc}
        always-auth=true
        strict-ssl=false
        """, enc)


@cred("npm-token-create-table-output")
def _npm_create(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f"""
        $ npm token create --read-only
        npm notice Creating a granular access token is recommended.
        ┌────────────────┬──────────────────────────────────────────┐
        │ token          │ {tok} │
        ├────────────────┼──────────────────────────────────────────┤
        │ readonly       │ true                                     │
        ├────────────────┼──────────────────────────────────────────┤
        │ created        │ {when(rng)}                 │
        └────────────────┴──────────────────────────────────────────┘
        """, tok)


@cred("pip-conf-extra-index-devpi-password")
def _pipconf(rng):
    pw = safe(rng, 14)
    return out(f"""
        [global]
        timeout = 60
        index-url = https://pypi.org/simple
        extra-index-url = https://ml-team:{pw}@devpi.acme.example/ml/prod/+simple/
        trusted-host = devpi.acme.example
        """, pw)


@cred("twine-upload-verbose-env-password-token")
def _twine(rng):
    tok = "pypi-AgEIcHlwaS5vcmcCJ" + b64url(rng, 100)[:140]
    return out(f"""
        $ TWINE_USERNAME=__token__ TWINE_PASSWORD={tok} twine upload --verbose dist/*
        Uploading distributions to https://upload.pypi.org/legacy/
        INFO     dist/acme_sdk-2.4.0-py3-none-any.whl ({rng.randint(20, 90)}.{rng.randint(0, 9)} KB)
        INFO     username: __token__
        INFO     password: <hidden>
        """, tok)


@cred("uv-toml-index-credentials-inline")
def _uv(rng):
    pw = lower(rng, 40)
    return out(f"""
        # uv.toml
        [[index]]
        name = "internal"
        url = "https://oauth2accesstoken:{pw}@europe-west1-python.pkg.dev/acme-build/py-internal/simple/"
        default = false
        """, pw)


@cred("poetry-auth-toml-http-basic")
def _poetry(rng):
    pw = safe(rng, 20)
    return out(f"""
        # ~/.config/pypoetry/auth.toml  (keyring unavailable on this CI image)
        [http-basic.gemfury]
        username = "{lower(rng, 20)}"
        password = "{pw}"
        """, pw)


@cred("poetry-config-list-shows-pypi-token")
def _poetry_list(rng):
    tok = "pypi-AgENdGVzdC5weXBpLm9yZw" + b64url(rng, 90)[:120]
    return out(f"""
        $ poetry config --list
        cache-dir = "/home/{who(rng)}/.cache/pypoetry"
        installer.max-workers = null
        pypi-token.testpypi = "{tok}"
        repositories.testpypi.url = "https://test.pypi.org/legacy/"
        virtualenvs.in-project = true
        """, tok)


@cred("condarc-channel-token-url")
def _conda(rng):
    tok = lower(rng, 6) + "-" + lower(rng, 8) + "-" + lower(rng, 8)
    return out(f"""
        channels:
          - https://conda.anaconda.org/t/{tok}/acme-private
          - conda-forge
        channel_priority: strict
        ssl_verify: true
        """, tok)


@cred("cargo-config-toml-registries-token-inline")
def _cargo(rng):
    tok = "cio" + mixed(rng, 32)
    return out(f"""
        # .cargo/config.toml
        [registries.kellnr]
        index = "sparse+https://crates.acme.example/api/v1/crates/"
        token = "{tok}"

        [net]
        git-fetch-with-cli = true
        """, tok)


@cred("gem-credentials-yaml-rubygems-api-key")
def _gem(rng):
    key = "rubygems_" + hexa(rng, 48)
    return out(f"""
        ---
        :rubygems_api_key: {key}
        :github: Bearer ghp_REPLACE_ME_NOT_USED
        """, key)


@cred("nuget-config-xml-packagesourcecredentials-cleartext")
def _nuget(rng):
    pw = "oy2" + lower(rng, 43)
    return out(f"""
        <?xml version="1.0" encoding="utf-8"?>
        <configuration>
          <packageSources>
            <add key="acme" value="https://nuget.acme.example/v3/index.json" />
          </packageSources>
          <packageSourceCredentials>
            <acme>
              <add key="Username" value="build" />
              <add key="ClearTextPassword" value="{pw}" />
            </acme>
          </packageSourceCredentials>
        </configuration>
        """, pw)


@cred("composer-auth-json-github-oauth-and-bearer")
def _composer(rng):
    tok = "ghp_" + mixed(rng, 36)
    return out(jd({"github-oauth": {"github.com": tok},
                   "bearer": {"repo.packagist.com": "${PACKAGIST_TOKEN}"}}, 4), tok)


@cred("maven-settings-security-encrypted-and-plain-server")
def _maven(rng):
    pw = person(rng)
    return out(f"""
        <settings>
          <servers>
            <server>
              <id>artifactory-releases</id>
              <username>deployer</username>
              <password>{pw}</password>
            </server>
            <server>
              <id>artifactory-snapshots</id>
              <username>deployer</username>
              <password>{{COQLCE6DU6GtcS5P=}}</password>
            </server>
          </servers>
        </settings>
        """, pw)


@cred("gradle-properties-signing-and-sonatype")
def _gradle(rng):
    pw = safe(rng, 18)
    kp = phrase(rng, 4, " ")
    return out(f"""
        org.gradle.jvmargs=-Xmx4g
        signing.keyId={hexa(rng, 8).upper()}
        signing.password={kp}
        signing.secretKeyRingFile=/home/ci/.gnupg/secring.gpg
        ossrhUsername=acme-release
        ossrhPassword={pw}
        """, kp, pw)


@cred("go-env-goproxy-with-userinfo-and-goprivate")
def _goenv(rng):
    pw = lower(rng, 32)
    return out(f"""
        $ go env | grep -E 'GOPROXY|GOPRIVATE|GONOSUMDB'
        GONOSUMDB='git.acme.example'
        GOPRIVATE='git.acme.example/*'
        GOPROXY='https://gobuild:{pw}@athens.acme.example,https://proxy.golang.org,direct'
        """, pw)


@cred("docker-config-json-identitytoken-acr")
def _docker_acr(rng):
    tok = jwt(rng, {"jti": uid(rng), "sub": "0000-" + lower(rng, 8), "grant_type": "refresh_token",
                    "aud": "acmeprod.azurecr.io", "exp": rng.randint(1790000000, 1800000000)}, "RS256")
    return out(jd({"auths": {"acmeprod.azurecr.io": {"auth": "MDAwMDAwMDAtMDAwMC0wMDAwLTAwMDAtMDAwMDAwMDAwMDAwOg==",
                                                     "identitytoken": tok}},
                   "credsStore": "", "currentContext": "desktop-linux"}, 1), tok)


@cred("helm-repo-add-password-flag-history")
def _helm_repo(rng):
    pw = safe(rng, 16)
    return out(f"""
        $ helm repo add acme-charts https://charts.acme.example --username ci --password {pw}
        "acme-charts" has been added to your repositories
        $ helm repo update
        ...Successfully got an update from the "acme-charts" chart repository
        """, pw)


@cred("helm-repositories-yaml-password-field")
def _helm_yaml(rng):
    pw = mixed(rng, 24)
    return out(f"""
        apiVersion: ""
        generated: "0001-01-01T00:00:00Z"
        repositories:
        - caFile: ""
          certFile: ""
          insecure_skip_tls_verify: false
          keyFile: ""
          name: harbor
          pass_credentials_all: false
          password: {pw}
          url: https://harbor.acme.example/chartrepo/platform
          username: robot$platform+helm
        """, pw)


@cred("pnpm-workspace-npmrc-env-with-literal-fallback")
def _pnpm(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f"""
        # .npmrc at repo root
        @acme:registry=https://npm.pkg.github.com
        //npm.pkg.github.com/:_authToken=${{GITHUB_TOKEN:-{tok}}}
        auto-install-peers=true
        """, tok)


@cred("bunfig-toml-scoped-registry-token")
def _bun(rng):
    tok = "npm_" + mixed(rng, 36)
    return out(f"""
        [install]
        exact = true

        [install.scopes]
        "@acme" = {{ token = "{tok}", url = "https://registry.npmjs.org/" }}
        """, tok)


@cred("deno-auth-tokens-env-export")
def _deno(rng):
    tok = "ddp_" + mixed(rng, 36)
    return out(f"""
        export DENO_AUTH_TOKENS="{tok}@deno.land"
        export DENO_DEPLOY_TOKEN={tok}
        deployctl deploy --project=acme-edge main.ts
        """, tok)


@cred("pub-dev-credentials-json-oauth")
def _pub(rng):
    refresh = "1//0" + b64url(rng, 75)
    access = "ya29." + b64url(rng, 120)
    return out(jd({"accessToken": access, "refreshToken": refresh,
                   "idToken": None, "tokenEndpoint": "https://accounts.google.com/o/oauth2/token",
                   "scopes": ["openid", "https://www.googleapis.com/auth/userinfo.email"],
                   "expiration": rng.randint(1760000000000, 1790000000000)}), access, refresh)


@cred("hex-pm-config-api-key-elixir")
def _hex(rng):
    key = hexa(rng, 32)
    return out(f"""
        $ mix hex.config
        api_key: "{key}" (using `~/.hex/hex.config`)
        api_url: "https://hex.pm/api" (default)
        offline: false (default)
        """, key)


@cred("cocoapods-trunk-netrc-session")
def _pods(rng):
    tok = hexa(rng, 32)
    return out(f"""
        machine trunk.cocoapods.org
          login release@acme.example
          password {tok}
        """, tok)


@cred("vcpkg-binary-sources-nuget-pat")
def _vcpkg(rng):
    pat = lower(rng, 52)
    return out(f"""
        PS> $env:VCPKG_BINARY_SOURCES = "clear;nuget,https://pkgs.dev.azure.com/acme/_packaging/vcpkg/nuget/v3/index.json,readwrite"
        PS> nuget sources add -Name vcpkg -Source https://pkgs.dev.azure.com/acme/_packaging/vcpkg/nuget/v3/index.json -Username vcpkg -Password {pat}
        Package source with Name: vcpkg added successfully.
        """, pat)


@cred("artifactory-jfrog-cli-config-export-base64")
def _jfrog(rng):
    tok = "cmVmdGtuOjAxOj" + b64(rng, 42).rstrip("=")
    cfg = base64.b64encode(json.dumps({"version": 6, "url": "https://acme.jfrog.io/", "user": "ci",
                                       "accessToken": tok, "serverId": "acme"}).encode()).decode()
    return out(f"""
        $ jf c export acme
        {cfg}
        """, cfg)


@cred("sbt-credentials-file-realm-password")
def _sbt(rng):
    pw = safe(rng, 20)
    return out(f"""
        # ~/.sbt/.credentials
        realm=Sonatype Nexus Repository Manager
        host=nexus.acme.example
        user=sbt-publisher
        password={pw}
        """, pw)


@cred("leiningen-profiles-clj-repository-creds")
def _lein(rng):
    pw = safe(rng, 16)
    tok = "CLOJARS_" + hexa(rng, 60)
    return out(f"""
        {{:auth {{:repository-auth {{#"clojars" {{:username "{who(rng)}"
                                               :password "{tok}"}}
                                  #"acme-nexus" {{:username "deploy" :password "{pw}"}}}}}}}}
        """, tok, pw)


# ==========================================================================================================
# Shells, terminals, editors and notebooks
# ==========================================================================================================


@cred("fish-history-yaml-cmd-entry")
def _fish(rng):
    pw = safe(rng, 15)
    return out(f"""
        - cmd: set -gx PGPASSWORD {pw}
          when: {rng.randint(1760000000, 1790000000)}
        - cmd: psql -h db-ro.acme.internal -U analyst sales
          when: {rng.randint(1760000000, 1790000000)}
        - cmd: set -e PGPASSWORD
          when: {rng.randint(1760000000, 1790000000)}
        """, pw)


@cred("zsh-extended-history-mysql-glued-p")
def _zsh(rng):
    pw = person(rng)
    t = rng.randint(1760000000, 1790000000)
    return out(f"""
        : {t}:0;cd ~/work/legacy-shop
        : {t + 14}:0;mysql -uroot -p'{pw}' -h 127.0.0.1 shop_dev < dumps/shop_{day(rng)}.sql
        : {t + 95}:0;git status
        """, pw)


@cred("powershell-transcript-new-pscredential")
def _ps_transcript(rng):
    pw = symbolic(rng, 14, "!#%*-_=+")
    return out(f"""
        **********************
        Windows PowerShell transcript start
        Start time: 2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}{hms(rng).replace(":", "")}
        Username: ACME\\{who(rng)}
        Machine: WKS-{digits(rng, 5)} (Microsoft Windows NT 10.0.26100.0)
        **********************
        PS C:\\Users\\{who(rng)}> $cred = New-Object PSCredential("ACME\\svc-sql", (ConvertTo-SecureString "{pw}" -AsPlainText -Force))
        PS C:\\Users\\{who(rng)}> Invoke-Command -ComputerName SQL02 -Credential $cred -ScriptBlock {{ Get-Service MSSQLSERVER }}

        Status   Name               DisplayName
        ------   ----               -----------
        Running  MSSQLSERVER        SQL Server (MSSQLSERVER)
        """, pw)


@cred("psreadline-consolehost-history-txt")
def _psreadline(rng):
    key = mixed(rng, 43) + "="
    return out(f"""
        cd C:\\src\\functions
        func azure functionapp publish acme-fn-prod
        az storage blob list --account-name acmelogs --account-key "{key}" -c archive -o table
        git pull
        """, key)


@cred("nushell-history-txt-let-env")
def _nushell(rng):
    key = "lin_api_" + mixed(rng, 40)
    return out(f"""
        ls | where size > 10mb
        $env.LINEAR_API_KEY = "{key}"
        http post https://api.linear.app/graphql --headers [Authorization $env.LINEAR_API_KEY] {{query: "{{ viewer {{ id }} }}"}}
        """, key)


@cred("tmux-capture-pane-ssh-sudo-password-echoed")
def _tmux(rng):
    pw = person(rng)
    return out(f"""
        {who(rng)}@bastion:~$ ssh ops@{ip(rng)}
        ops@app-03:~$ sudo -S systemctl restart nginx <<< '{pw}'
        [sudo] password for ops: ops@app-03:~$ systemctl is-active nginx
        active
        ops@app-03:~$
        """, pw)


@cred("script-typescript-log-stty-echo-on-password")
def _script_log(rng):
    pw = safe(rng, 12)
    return out(f"""
        Script started on {day(rng)} {hms(rng)}+00:00 [TERM="xterm-256color" TTY="/dev/pts/3" COLUMNS="120" LINES="40"]
        $ openssl pkcs12 -in corp.pfx -nodes -out corp.pem
        Enter Import Password:
        {pw}
        MAC verified OK
        $ exit
        Script done on {day(rng)} {hms(rng)}+00:00 [COMMAND_EXIT_CODE="0"]
        """, pw)


@cred("jupyter-output-error-repr-includes-connection-url")
def _jupyter_err(rng):
    pw = safe(rng, 14)
    cell = {"cell_type": "code", "execution_count": 12, "metadata": {},
            "source": ["engine = create_engine(os.environ['WAREHOUSE_URL'])\n", "pd.read_sql('select 1', engine)"],
            "outputs": [{"output_type": "error", "ename": "OperationalError",
                         "evalue": f"(psycopg.OperationalError) connection failed: FATAL: no pg_hba.conf entry "
                                   f"(Background on this error at: https://sqlalche.me/e/20/e3q8)\n"
                                   f"[URL: postgresql+psycopg://analyst:{pw}@10.20.1.5:5432/warehouse]",
                         "traceback": []}]}
    return out(jd(cell, 1), pw)


@cred("jupyter-lab-server-log-token-url")
def _jupyter_server(rng):
    tok = hexa(rng, 48)
    return out(f"""
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp] Jupyter Server 2.17.0 is running at:
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp] http://gpu-07:8888/lab?token={tok}
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp]     http://127.0.0.1:8888/lab?token={tok}
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp] Use Control-C to stop this server and shut down all kernels.
        """, tok)


@cred("vscode-settings-json-rest-client-environment")
def _vscode(rng):
    tok = jwt(rng, {"sub": "qa-admin", "roles": ["admin"], "iat": rng.randint(1760000000, 1770000000)})
    return out(f"""
        {{
          "editor.formatOnSave": true,
          "rest-client.environmentVariables": {{
            "$shared": {{ "version": "v2" }},
            "staging": {{
              "host": "https://staging-api.acme.example",
              "token": "{tok}"
            }}
          }},
          "files.exclude": {{ "**/.venv": true }}
        }}
        """, tok)


@cred("vscode-launch-json-env-block-stripe")
def _vscode_launch(rng):
    key = "rk_test_" + mixed(rng, 99)
    return out(f"""
        {{
          "version": "0.2.0",
          "configurations": [
            {{
              "name": "API (debug)",
              "type": "debugpy",
              "request": "launch",
              "module": "uvicorn",
              "args": ["app.main:app", "--reload"],
              "env": {{ "STRIPE_KEY": "{key}", "LOG_LEVEL": "debug" }}
            }}
          ]
        }}
        """, key)


@cred("jetbrains-datasources-local-xml-password-attr")
def _jetbrains_ds(rng):
    pw = safe(rng, 16)
    return out(f"""
        <?xml version="1.0" encoding="UTF-8"?>
        <project version="4">
          <component name="dataSourceStorageLocal" created-in="PY-252.26830.99">
            <data-source name="orders@prod-replica" uuid="{uid(rng)}">
              <database-info product="PostgreSQL" version="17.6" dbms="POSTGRES" exact-version="17.6" />
              <secret-storage>master_key</secret-storage>
              <user-name>readonly</user-name>
              <password>{pw}</password>
              <schema-mapping />
            </data-source>
          </component>
        </project>
        """, pw)


@cred("jetbrains-http-client-private-env-json")
def _jetbrains_http(rng):
    key = "sntryu_" + hexa(rng, 64)
    return out(jd({"dev": {"sentryToken": key, "org": "acme"}, "prod": {"sentryToken": "", "org": "acme"}}), key)


@cred("neovim-lazy-plugin-spec-codeium-key")
def _nvim(rng):
    key = uid(rng)
    return out(f"""
        return {{
          "Exafunction/windsurf.nvim",
          event = "InsertEnter",
          opts = {{
            enable_chat = true,
            api = {{ api_key = "{key}" }},
          }},
        }}
        """, key)


@cred("emacs-authinfo-plain-machine-line")
def _authinfo(rng):
    pw = person(rng)
    key = "sk-ant-api03-" + b64url(rng, 70) + "-" + mixed(rng, 6) + "AA"
    return out(f"""
        machine imap.fastmail.com login {who(rng)}@fastmail.example port 993 password {pw}
        machine api.anthropic.com login apikey password {key}
        """, pw, key)


@cred("direnv-envrc-export-with-comment")
def _envrc(rng):
    tok = "tfp_" + mixed(rng, 40)
    return out(f"""
        # .envrc -- do NOT commit (it's in .gitignore... right?)
        use flake
        export TF_TOKEN_app_terraform_io={tok}
        export AWS_PROFILE=sandbox
        dotenv_if_exists .env.local
        """, tok)


@cred("starship-prompt-session-export-then-env")
def _starship(rng):
    key = "xkeysib-" + hexa(rng, 64) + "-" + mixed(rng, 16)
    return out(f"""
        ~/newsletter on  main [!?] via 🐍 v3.13.2
        ❯ export BREVO_API_KEY="{key}"

        ~/newsletter on  main [!?] via 🐍 v3.13.2
        ❯ python send_digest.py --dry-run
        would send 1,482 emails
        """, key)


@cred("windows-terminal-settings-json-ssh-profile-commandline")
def _wt(rng):
    pw = safe(rng, 14)
    return out(f"""
        {{
          "guid": "{{{uid(rng)}}}",
          "name": "lab switch",
          "commandline": "plink.exe -ssh admin@{ip(rng)} -pw {pw}",
          "icon": "ms-appx:///ProfileIcons/pwsh.png",
          "hidden": false
        }}
        """, pw)


@cred("mobaxterm-ini-passwords-section-plain")
def _moba(rng):
    pw = person(rng)
    return out(f"""
        [Passwords]
        ssh22:root@{ip(rng)}={pw}

        [Bookmarks]
        SubRep=
        ImgNum=42
        nas=#109#0%{ip(rng)}%22%root%%-1%-1%%%%%0%0%0%%%-1%0%0%0%%1080%%0%0%1#MobaFont%10%0%0%-1%15%236,236,236%30,30,30
        """, pw)


@cred("filezilla-sitemanager-xml-base64-pass")
def _filezilla(rng):
    raw = person(rng)
    enc = base64.b64encode(raw.encode()).decode()
    return out(f"""
        <?xml version="1.0" encoding="UTF-8"?>
        <FileZilla3 version="3.69.3" platform="windows">
          <Servers>
            <Server>
              <Host>ftp.printshop.example</Host>
              <Port>21</Port>
              <Protocol>0</Protocol>
              <Type>0</Type>
              <User>uploads</User>
              <Pass encoding="base64">{enc}</Pass>
              <Name>print shop</Name>
            </Server>
          </Servers>
        </FileZilla3>
        """, enc)


@cred("winscp-ini-session-password-plain-override")
def _winscp(rng):
    pw = safe(rng, 13)
    return out(f"""
        [Sessions\\deploy@web01]
        HostName=web01.acme.example
        UserName=deploy
        PasswordPlain={pw}
        FSProtocol=2
        """, pw)


@cred("dbeaver-data-sources-json-auth-properties")
def _dbeaver(rng):
    pw = safe(rng, 18)
    return out(jd({"folders": {}, "connections": {"clickhouse-" + lower(rng, 6): {
        "provider": "clickhouse", "driver": "com_clickhouse", "name": "CH analytics",
        "configuration": {"host": "ch.acme.internal", "port": "8443", "database": "events",
                          "auth-model": "native", "user": "bi_reader", "password": pw}}}}), pw)


@cred("http-file-intellij-basic-auth-line")
def _http_file(rng):
    pw = safe(rng, 12)
    return out(f"""
        ### list invoices
        GET https://erp.acme.example/api/v1/invoices?page=1
        Authorization: Basic finance-bot {pw}
        Accept: application/json

        ###
        """, pw)


@cred("ipython-history-sqlite-dump-set-key")
def _ipython_hist(rng):
    key = "re_" + mixed(rng, 8) + "_" + mixed(rng, 24)
    return out(f"""
        sqlite> select session, line, source from history order by rowid desc limit 3;
        {rng.randint(200, 900)}|4|resend.Emails.send({{"from": "noreply@acme.example", "to": to, "subject": s, "html": h}})
        {rng.randint(200, 900)}|3|resend.api_key = "{key}"
        {rng.randint(200, 900)}|2|import resend
        """, key)


@cred("rstudio-renviron-user-file")
def _renviron(rng):
    pw = person(rng)
    key = hexa(rng, 40)
    return out(f"""
        # ~/.Renviron
        CENSUS_API_KEY={key}
        ODBC_PWD={pw}
        R_LIBS_USER=~/R/library
        """, key, pw)


# ==========================================================================================================
# Mail, chat, phones and tickets (English)
# ==========================================================================================================


@cred("slack-export-channel-json-with-edited-message")
def _slack_export(rng):
    pw = person(rng)
    msgs = [{"type": "message", "user": "U0" + upper(rng, 9), "text": "anyone have the printer admin login?",
             "ts": f"{rng.randint(1760000000, 1790000000)}.{digits(rng, 6)}"},
            {"type": "message", "user": "U0" + upper(rng, 9),
             "text": f"admin / {pw} (don't tell facilities)",
             "edited": {"user": "U0" + upper(rng, 9), "ts": f"{rng.randint(1760000000, 1790000000)}.000000"},
             "ts": f"{rng.randint(1760000000, 1790000000)}.{digits(rng, 6)}"}]
    return out(jd(msgs, 4), pw)


@cred("teams-chat-copy-paste-with-timestamps")
def _teams(rng):
    pw = safe(rng, 14)
    return out(f"""
        {who(rng).capitalize()} Okafor  10:42 AM
        can you send me the creds for the staging jump box? my MFA reset wiped them

        {who(rng).capitalize()} Lindqvist  10:44 AM
        host: jump-stg.acme.internal
        user: jumpuser
        pass: {pw}
        rotate it after you're in pls

        {who(rng).capitalize()} Okafor  10:45 AM
        👍
        """, pw)


@cred("discord-chat-exporter-txt-bot-token")
def _discord(rng):
    tok = b64url(rng, 18)[:24] + "." + b64url(rng, 5)[:6] + "." + b64url(rng, 30)[:38]
    return out(f"""
        ==============================================================
        Guild: Pixel Forge Devs
        Channel: general / bot-dev
        ==============================================================

        [{day(rng)} {hms(rng)}] lumen#0
        ok the bot works locally, here's my config in case I lose it lol
        TOKEN = "{tok}"
        PREFIX = "!"

        [{day(rng)} {hms(rng)}] corvid
        dude regenerate that NOW
        """, tok)


@cred("matrix-element-export-html-message-body")
def _matrix(rng):
    tok = "syt_" + b64url(rng, 8) + "_" + mixed(rng, 20) + "_" + mixed(rng, 6)
    return out(f"""
        <div class="mx_EventTile" data-event-id="${b64url(rng, 32)}">
          <span class="mx_DisambiguatedProfile">@{who(rng)}:matrix.acme.example</span>
          <div class="mx_EventTile_body">the bridge needs an access token, use this one for the bot account: {tok}</div>
          <span class="mx_MessageTimestamp">{hms(rng)}</span>
        </div>
        """, tok)


@cred("whatsapp-export-android-english-gate-code")
def _wa_en(rng):
    code = digits(rng, 8)
    wifi = person(rng)
    return out(f"""
        {rng.randint(1, 28)}/{rng.randint(1, 12)}/26, 4:{rng.randint(10, 59)} pm - Mum: Gate code is {code}# and the wifi at the cottage is {wifi}
        {rng.randint(1, 28)}/{rng.randint(1, 12)}/26, 4:{rng.randint(10, 59)} pm - Mum: Key is under the blue pot
        {rng.randint(1, 28)}/{rng.randint(1, 12)}/26, 4:{rng.randint(10, 59)} pm - You: thanks!! ❤️
        """, code, wifi)


@cred("sms-ios-backup-csv-bank-temp-password")
def _sms(rng):
    pw = upper(rng, 10)
    return out(f"""
        "Date","Sender","Text"
        "{day(rng)} {hms(rng)}","+44 7700 900{rng.randint(100, 999)}","Your one-time code is {rng.randint(100000, 999999)}. Never share it."
        "{day(rng)} {hms(rng)}","NorthBank","Your temporary online banking password is {pw}. You will be asked to change it at first login."
        """, pw)


@cred("voicemail-transcript-email-spelled-password")
def _voicemail(rng):
    pw = person(rng)
    return out(f"""
        From: Voicemail <voicemail@pbx.acme.example>
        Subject: New voicemail from +1 (415) 555-01{rng.randint(10, 99)} (0:41)

        Transcription (confidence: medium):
        "Hi it's Marco from the front desk, the new password for the reception PC is {pw}, that's capital
        at the start, I wrote it on the sticky note too. Call me back if it doesn't work. Bye."
        """, pw)


@cred("zendesk-ticket-json-comment-body-customer-password")
def _zendesk(rng):
    pw = safe(rng, 12)
    return out(jd({"ticket": {"id": rng.randint(100000, 999999), "subject": "Can't log into my account",
                              "comments": [{"author_id": rng.randint(10 ** 11, 10 ** 12), "public": True,
                                            "body": f"I've tried resetting twice. My email is "
                                                    f"{who(rng)}@mail.example and the password I set is {pw} "
                                                    f"but it says invalid."}],
                              "tags": ["login", "web"], "status": "open"}}), pw)


@cred("freshdesk-note-agent-internal-admin-creds")
def _freshdesk(rng):
    pw = person(rng)
    return out(f"""
        Ticket #{rng.randint(10000, 99999)} · Private note by {who(rng).capitalize()} (Agent)
        ---------------------------------------------------------------
        Logged into the customer's WordPress to fix the plugin conflict.
        URL: https://bakery.example/wp-admin  user: shopadmin  pw: {pw}
        Customer asked us to keep it for the next visit.
        """, pw)


@cred("email-mbox-forwarded-vendor-portal-credentials")
def _mbox(rng):
    pw = safe(rng, 13)
    return out(f"""
        From {who(rng)}@acme.example {day(rng)}
        From: Procurement <procurement@acme.example>
        To: {who(rng)}@acme.example
        Subject: Fwd: Your SupplierHub account
        Content-Type: text/plain; charset=utf-8

        ---------- Forwarded message ---------
        Welcome to SupplierHub!

        Username: ACME-EU-{digits(rng, 5)}
        Initial password: {pw}

        Please log in at https://portal.supplierhub.example within 14 days.
        """, pw)


@cred("email-quoted-printable-password-line")
def _qp(rng):
    pw = safe(rng, 12)
    return out(f"""
        Content-Type: text/plain; charset="UTF-8"
        Content-Transfer-Encoding: quoted-printable

        Hallo Team,

        das neue Passwort f=C3=BCr das Lager-Tablet lautet: {pw}
        Bitte nicht weitergeben.=20

        Gr=C3=BC=C3=9Fe
        """, pw)


@cred("signal-desktop-pasted-recovery-pin")
def _signal(rng):
    pin = digits(rng, 10)
    return out(f"""
        Note to Self · {day(rng)}
        signal registration lock PIN: {pin}
        (also in the red notebook)
        """, pin)


@cred("jira-issue-description-markdown-config-block")
def _jira(rng):
    key = "ATATT3xFfGF0" + b64url(rng, 140)[:180] + "=" + hexa(rng, 8).upper()
    return out(f"""
        h3. Repro
        {{code:bash}}
        export JIRA_EMAIL={who(rng)}@acme.example
        export JIRA_API_TOKEN={key}
        python sync_sprints.py --board 42
        {{code}}
        h3. Expected
        Sprints sync without 429s.
        """, key)


@cred("linear-issue-comment-with-basic-auth-header")
def _linear_comment(rng):
    enc = basic("grafana-reader", safe(rng, 16))
    return out(f"""
        **{who(rng)}** commented · 2h ago
        > Dashboard still 401s behind the proxy
        I tested with curl and it works:
        `curl -H "Authorization: Basic {enc}" https://grafana.acme.example/api/health`
        so it's the proxy stripping the header.
        """, enc)


@cred("outlook-calendar-invite-dial-in-host-pin")
def _calendar(rng):
    pin = digits(rng, 9)
    pw = mixed(rng, 10)
    return out(f"""
        BEGIN:VEVENT
        SUMMARY:Quarterly board prep
        DTSTART:{day(rng).replace('-', '')}T140000Z
        DESCRIPTION:Join Zoom: https://acme.zoom.us/j/{digits(rng, 11)}?pwd={pw}\\n
         Host key (do not forward): {pin}\\n
         Meeting ID: {rng.randint(100, 999)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}
        END:VEVENT
        """, pw, pin)


# ==========================================================================================================
# IoT, routers, printers, cameras, cars and consoles
# ==========================================================================================================


@cred("hikvision-isapi-curl-digest-admin")
def _hikvision(rng):
    pw = person(rng)
    return out(f"""
        $ curl --digest -u admin:{pw} http://{ip(rng)}/ISAPI/System/deviceInfo
        <?xml version="1.0" encoding="UTF-8"?>
        <DeviceInfo version="2.0" xmlns="http://www.hikvision.com/ver20/XMLSchema">
        <deviceName>Garage</deviceName>
        <model>DS-2CD2143G2-I</model>
        <serialNumber>DS-2CD2143G2-I{digits(rng, 17)}</serialNumber>
        </DeviceInfo>
        """, pw)


@cred("frigate-config-yml-rtsp-url-creds")
def _frigate(rng):
    pw = safe(rng, 12)
    return out(f"""
        cameras:
          front_door:
            ffmpeg:
              inputs:
                - path: rtsp://viewer:{pw}@{ip(rng)}:554/cam/realmonitor?channel=1&subtype=0
                  roles: [detect, record]
            detect:
              width: 1280
              height: 720
        """, pw)


@cred("openwrt-uci-grep-wireless-radio0-sae-mixed-key")
def _openwrt(rng):
    pw = person(rng)
    return out(f"""
        root@OpenWrt:~# uci show wireless | grep -E 'ssid|key|encryption'
        wireless.default_radio0.ssid='Lindqvist-5G'
        wireless.default_radio0.encryption='sae-mixed'
        wireless.default_radio0.key='{pw}'
        wireless.guest.ssid='Lindqvist-Guest'
        wireless.guest.encryption='none'
        """, pw)


@cred("fritzbox-export-config-tr064-password")
def _fritz(rng):
    pw = mixed(rng, 12)
    return out(f"""
        **** FRITZ!Box 7590 AX CONFIGURATION EXPORT
        FirmwareVersion=8.02
        **** CFGFILE:ar7.cfg
        webui {{
                username = "fritz{digits(rng, 4)}";
                password = "{pw}";
        }}
        """, pw)


@cred("ubiquiti-edgeos-show-configuration-plaintext-password")
def _edgeos(rng):
    pw = safe(rng, 14)
    return out(f"""
        ubnt@edgerouter# show service dns dynamic
         interface eth0 {{
             service dyndns {{
                 host-name home.{lower(rng, 6)}.example
                 login {who(rng)}
                 password {pw}
                 server members.dyndns.example
             }}
         }}
        """, pw)


@cred("pfsense-config-xml-ipsec-psk")
def _pfsense(rng):
    psk = mixed(rng, 32)
    return out(f"""
        <ipsec>
          <phase1>
            <ikeid>1</ikeid>
            <iketype>ikev2</iketype>
            <remote-gateway>203.0.113.{rng.randint(2, 254)}</remote-gateway>
            <authentication_method>pre_shared_key</authentication_method>
            <pre-shared-key>{psk}</pre-shared-key>
            <descr><![CDATA[Branch office Porto]]></descr>
          </phase1>
        </ipsec>
        """, psk)


@cred("juniper-junos-set-commands-plain-text-password")
def _junos(rng):
    secret = safe(rng, 16)
    return out(f"""
        set system login user netops class super-user
        set system login user netops authentication encrypted-password "$6$qQ{b64(rng, 6)}$..."
        set system radius-server {ip(rng)} secret "{secret}"
        set system radius-server {ip(rng)} source-address {ip(rng)}
        """, secret)


@cred("aruba-instant-cli-mgmt-user-and-radius-key")
def _aruba(rng):
    key = safe(rng, 20)
    return out(f"""
        (Instant AP)(config) # wlan auth-server NPS-01
        (Instant AP)(Auth Server "NPS-01") # ip {ip(rng)}
        (Instant AP)(Auth Server "NPS-01") # key {key}
        (Instant AP)(Auth Server "NPS-01") # exit
        (Instant AP)(config) # commit apply
        committing configuration...
        """, key)


@cred("hp-printer-ews-smtp-settings-form-post")
def _printer(rng):
    pw = safe(rng, 12)
    return out(f"""
        POST /hp/device/SmtpServerSettings/Save HTTP/1.1
        Host: {ip(rng)}
        Content-Type: application/x-www-form-urlencoded
        Cookie: sessid={hexa(rng, 32)}

        smtpServer=smtp.office365.com&smtpPort=587&useTls=on&smtpUser=scan-to-email%40acme.example&smtpPassword={pw}&fromAddr=scanner%40acme.example
        """, pw)


@cred("brother-printer-config-export-csv-ldap-password")
def _brother(rng):
    pw = safe(rng, 13)
    return out(f"""
        "Item","Value"
        "Node Name","BRN{hexa(rng, 12).upper()}"
        "LDAP Server Address","{ip(rng)}"
        "LDAP Username","cn=scanner,ou=svc,dc=acme,dc=example"
        "LDAP Password","{pw}"
        "SNTP","On"
        """, pw)


@cred("home-assistant-secrets-yaml-mixed-entries")
def _ha_secrets(rng):
    pw = person(rng)
    tok = jwt(rng, {"iss": hexa(rng, 32), "iat": rng.randint(1760000000, 1770000000),
                    "exp": rng.randint(2070000000, 2090000000)})
    return out(f"""
        # secrets.yaml
        latitude: 59.3293
        longitude: 18.0686
        mqtt_password: "{pw}"
        grafana_ha_token: {tok}
        """, pw, tok)


@cred("zigbee2mqtt-configuration-mqtt-password-network-key-generate")
def _z2m(rng):
    pw = safe(rng, 14)
    return out(f"""
        homeassistant:
          enabled: true
        mqtt:
          server: mqtt://{ip(rng)}:1883
          user: z2m
          password: {pw}
        advanced:
          network_key: GENERATE
          pan_id: {rng.randint(1000, 60000)}
        """, pw)


@cred("shelly-gen2-rpc-set-auth-json")
def _shelly(rng):
    ha1 = hexa(rng, 64)
    pw = person(rng)
    return out(f"""
        $ curl -X POST http://{ip(rng)}/rpc/Wifi.SetConfig -d '{{"config":{{"sta":{{"ssid":"HomeIoT","pass":"{pw}","enable":true}}}}}}'
        {{"restart_required":true}}
        $ curl -X POST http://{ip(rng)}/rpc/Shelly.SetAuth -d '{{"user":"admin","realm":"shellyplus1-{hexa(rng, 12)}","ha1":"{ha1}"}}'
        null
        """, pw)


@cred("tesla-fleet-api-refresh-token-teslamate-env")
def _teslamate(rng):
    tok = "NA_" + hexa(rng, 64)
    key = b64(rng, 24)
    return out(f"""
        TZ=Europe/Oslo
        ENCRYPTION_KEY={key}
        DATABASE_USER=teslamate
        TESLA_AUTH_REFRESH_TOKEN={tok}
        MQTT_HOST=mosquitto
        """, key, tok)


@cred("steam-guard-maFile-shared-secret")
def _steam(rng):
    shared = b64(rng, 20)
    ident = b64(rng, 20)
    return out(jd({"shared_secret": shared, "serial_number": digits(rng, 19), "revocation_code": "R" + digits(rng, 5),
                   "account_name": who(rng), "identity_secret": ident, "device_id": "android:" + uid(rng)}),
               shared, ident)


@cred("minecraft-bedrock-realm-invite-and-rcon-script")
def _mc_rcon(rng):
    pw = safe(rng, 16)
    return out(f"""
        #!/usr/bin/env bash
        # nightly restart for the SMP
        mcrcon -H 127.0.0.1 -P 25575 -p '{pw}' "say Restarting in 60s" && sleep 60
        mcrcon -H 127.0.0.1 -P 25575 -p '{pw}' save-all stop
        systemctl restart minecraft
        """, pw)


@cred("nintendo-switch-parental-pin-and-eshop-note")
def _nintendo(rng):
    pw = person(rng)
    return out(f"""
        Family devices (shared note)
        - Switch parental controls PIN: {rng.randint(1000, 9999)}
        - Nintendo Account for the kids: kids.{who(rng)}@mail.example / {pw}
        - Xbox: ask dad
        """, pw)


@cred("cs2-server-cfg-rcon-and-gslt")
def _cs2(rng):
    rc = safe(rng, 14)
    gslt = hexa(rng, 32).upper()
    return out(f"""
        // server.cfg
        hostname "Friday Night Frags"
        rcon_password "{rc}"
        sv_password ""
        sv_setsteamaccount {gslt}
        mp_autoteambalance 1
        """, rc, gslt)


@cred("octoprint-config-yaml-api-key-and-plugin-token")
def _octo(rng):
    key = hexa(rng, 32).upper()
    tok = digits(rng, 10) + ":" + b64url(rng, 26)[:35]
    return out(f"""
        api:
          key: {key}
        plugins:
          telegram:
            token: {tok}
            chats:
              '{digits(rng, 9)}': {{accept_commands: true}}
        """, key, tok)


@cred("unifi-protect-rtsps-link-token-in-blueiris-log")
def _protect(rng):
    pw = mixed(rng, 12)
    return out(f"""
        {day(rng)} {hms(rng)}  DrivewayCam  Connecting to rtsp://bi:{pw}@{ip(rng)}:554/cam/realmonitor...
        {day(rng)} {hms(rng)}  DrivewayCam  Signal: restored
        {day(rng)} {hms(rng)}  DrivewayCam  MOTION_A
        """, pw)


# ==========================================================================================================
# Finance and payments
# ==========================================================================================================


@cred("stripe-cli-config-toml-test-and-live-keys")
def _stripe_cli(rng):
    live = "rk_live_" + mixed(rng, 99)
    return out(f"""
        color = ""

        [default]
          device_name = "{who(rng)}-mbp"
          display_name = "Acme Ltd"
          live_mode_api_key = "{live}"
          live_mode_key_expires_at = "{day(rng)}"
          test_mode_pub_key = "pk_test_{mixed(rng, 99)}"
        """, live)


@cred("plaid-client-secret-env-sandbox-vs-production")
def _plaid(rng):
    sec = hexa(rng, 30)
    return out(f"""
        PLAID_CLIENT_ID={hexa(rng, 24)}
        PLAID_SECRET={sec}
        PLAID_ENV=production
        PLAID_PRODUCTS=transactions,auth
        PLAID_COUNTRY_CODES=US,CA
        """, sec)


@cred("braintree-gateway-ruby-initializer")
def _braintree(rng):
    priv = hexa(rng, 32)
    return out(f"""
        Braintree::Gateway.new(
          environment: :production,
          merchant_id: "{lower(rng, 16)}",
          public_key: "{lower(rng, 16)}",
          private_key: "{priv}",
        )
        """, priv)


@cred("gocardless-access-token-python-client")
def _gocardless(rng):
    tok = "live_" + b64url(rng, 30)
    return out(f"""
        import gocardless_pro
        client = gocardless_pro.Client(access_token="{tok}", environment="live")
        for m in client.mandates.list(params={{"status": "active"}}).records:
            print(m.id, m.scheme)
        """, tok)


@cred("wise-api-token-curl-balances")
def _wise(rng):
    tok = uid(rng)
    return out(f"""
        $ curl -s https://api.wise.com/v4/profiles/{digits(rng, 8)}/balances?types=STANDARD \\
            -H "Authorization: Bearer {tok}" | jq '.[] | {{currency, amount: .amount.value}}'
        {{ "currency": "EUR", "amount": {rng.randint(100, 90000)}.{rng.randint(10, 99)} }}
        """, tok)


@cred("ebics-keyring-passphrase-in-properties")
def _ebics(rng):
    pw = phrase(rng, 4, "-")
    return out(f"""
        ebics.hostId=BANKDEFFXXX
        ebics.partnerId=ACME{digits(rng, 4)}
        ebics.userId=TREASURY1
        ebics.keystore.path=/srv/ebics/keys/treasury1.p12
        ebics.keystore.password={pw}
        """, pw)


@cred("swift-alliance-lite-sftp-batch-password")
def _swift_sftp(rng):
    pw = safe(rng, 16)
    hostkey = '""ssh-ed25519 255 ' + b64(rng, 32).rstrip("=") + '"""'
    return out(f"""
        REM payments_upload.bat
        "C:\\Program Files\\WinSCP\\WinSCP.com" /command ^
          "open sftp://payfiles:{pw}@sftp.bank.example/ -hostkey={hostkey} ^
          "put C:\\Pain001\\*.xml /inbound/" "exit"
        """, pw)


@cred("adyen-terminal-api-key-pos-ini")
def _adyen_pos(rng):
    key = "AQE" + b64(rng, 80).rstrip("=") + "-" + b64(rng, 20).rstrip("=")
    return out(f"""
        [Payment]
        Provider=AdyenCloud
        MerchantAccount=AcmeRetailECOM
        ApiKey={key}
        POIID=S1F2-{digits(rng, 9)}
        """, key)


@cred("coinbase-cdp-api-key-json-ec-private")
def _coinbase(rng):
    line = pem_line(rng, "MHcCAQEEI")
    pem = pem_block(rng, line, "EC PRIVATE KEY", 2).replace("\n", "\\n")
    return out(f"""
        {{
          "name": "organizations/{uid(rng)}/apiKeys/{uid(rng)}",
          "privateKey": "{pem}\\n"
        }}
        """, line)


@cred("binance-api-secret-ccxt-config")
def _ccxt(rng):
    sec = mixed(rng, 64)
    return out(f"""
        exchange = ccxt.binance({{
            "apiKey": "{mixed(rng, 64)}",
            "secret": "{sec}",
            "options": {{"defaultType": "future"}},
            "enableRateLimit": True,
        }})
        """, sec)


@cred("quickbooks-oauth-refresh-token-in-n8n-credential-export")
def _qbo(rng):
    ref = "AB11" + mixed(rng, 46)
    sec = mixed(rng, 40)
    return out(jd([{"id": mixed(rng, 16), "name": "QuickBooks account", "type": "quickBooksOAuth2Api",
                    "data": {"clientId": "AB" + mixed(rng, 48), "clientSecret": sec,
                             "oauthTokenData": {"token_type": "bearer", "refresh_token": ref,
                                                "x_refresh_token_expires_in": 8726400}}}]), sec, ref)


@cred("bank-statement-pdf-ocr-online-banking-pin-letter")
def _pin_letter(rng):
    pin = digits(rng, 8)
    return out(f"""
        NORDWEST SPARKASSE                          Seite 1/1
        Herrn {who(rng).capitalize()} Brandt
        Ihre persönliche Identifikationsnummer (PIN) für das Online-Banking

        Anmeldename: NB{digits(rng, 8)}
        Erst-PIN:    {pin}

        Bitte ändern Sie diese PIN bei der ersten Anmeldung.
        """, pin)


# ==========================================================================================================
# Healthcare
# ==========================================================================================================


@cred("hl7v2-mirth-channel-xml-db-password")
def _mirth(rng):
    pw = safe(rng, 15)
    return out(f"""
        <channel version="4.5.2">
          <name>ADT_to_EHR</name>
          <destinationConnectors>
            <connector>
              <properties class="com.mirth.connect.connectors.jdbc.DatabaseDispatcherProperties">
                <driver>org.postgresql.Driver</driver>
                <url>jdbc:postgresql://ehr-db:5432/clinical</url>
                <username>mirth_writer</username>
                <password>{pw}</password>
                <query>INSERT INTO adt_events (mrn, event) VALUES (${{mrn}}, ${{evt}})</query>
              </properties>
            </connector>
          </destinationConnectors>
        </channel>
        """, pw)


@cred("hl7v2-message-zpw-segment-portal-temp-password")
def _hl7(rng):
    pw = upper(rng, 10)
    return out(f"""
        MSH|^~\\&|PORTAL|GENHOSP|EHR|GENHOSP|2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}{rng.randint(100000, 235959)}||ADT^A31|{digits(rng, 10)}|P|2.5.1
        PID|1||{digits(rng, 8)}^^^GENHOSP^MR||DOE^JANE^Q||19810412|F
        ZPW|1|PORTAL_ACTIVATION|{pw}|EXPIRES^{day(rng)}
        """, pw)


@cred("fhir-smart-backend-client-jwks-private-jwk")
def _fhir_jwk(rng):
    d = b64url(rng, 32)
    return out(jd({"keys": [{"kty": "EC", "crv": "P-384", "kid": hexa(rng, 16), "use": "sig", "alg": "ES384",
                             "x": b64url(rng, 48), "y": b64url(rng, 48), "d": d}]}), d)


@cred("fhir-server-curl-bearer-patient-search")
def _fhir_curl(rng):
    tok = jwt(rng, {"iss": "https://auth.ehr.example", "sub": "svc-research", "scope": "system/Patient.read",
                    "exp": rng.randint(1790000000, 1800000000)}, "RS384")
    return out(f"""
        $ curl -s 'https://fhir.ehr.example/R4/Patient?birthdate=ge1950-01-01&_count=5' \\
            -H 'Accept: application/fhir+json' -H 'Authorization: Bearer {tok}' | jq .total
        4381
        """, tok)


@cred("dicom-orthanc-json-registered-users")
def _orthanc(rng):
    pw = person(rng)
    return out(f"""
        {{
          "Name" : "PACS-RADIOLOGY",
          "DicomAet" : "ORTHANC",
          "AuthenticationEnabled" : true,
          "RegisteredUsers" : {{
            "radiology" : "{pw}"
          }},
          "DicomModalities" : {{ "ct1" : [ "CT1", "{ip(rng)}", 104 ] }}
        }}
        """, pw)


@cred("epic-interconnect-config-client-secret-ini")
def _epic(rng):
    sec = b64(rng, 48)
    return out(f"""
        [EpicOAuth]
        ClientId={uid(rng)}
        ClientSecret={sec}
        TokenUrl=https://fhir.hospital.example/interconnect-prd-oauth/oauth2/token
        """, sec)


# ==========================================================================================================
# Directory, Kerberos, RADIUS, SAML and OIDC
# ==========================================================================================================


@cred("ldif-export-userpassword-plain")
def _ldif(rng):
    pw = person(rng)
    return out(f"""
        dn: uid=kiosk01,ou=devices,dc=library,dc=example
        objectClass: inetOrgPerson
        uid: kiosk01
        cn: Lobby kiosk
        sn: kiosk
        userPassword: {pw}
        """, pw)


@cred("ldif-userpassword-base64-double-colon")
def _ldif_b64(rng):
    raw = safe(rng, 14)
    enc = base64.b64encode(raw.encode()).decode()
    return out(f"""
        dn: cn=replicator,dc=acme,dc=example
        objectClass: simpleSecurityObject
        objectClass: organizationalRole
        cn: replicator
        userPassword:: {enc}
        """, enc)


@cred("openldap-slapd-conf-rootpw-cleartext")
def _slapd(rng):
    pw = safe(rng, 15)
    return out(f"""
        database    mdb
        suffix      "dc=acme,dc=example"
        rootdn      "cn=Manager,dc=acme,dc=example"
        rootpw      {pw}
        directory   /var/lib/ldap
        """, pw)


@cred("keycloak-realm-export-client-secret")
def _keycloak(rng):
    sec = mixed(rng, 32)
    return out(jd({"realm": "acme", "enabled": True, "clients": [
        {"clientId": "grafana", "protocol": "openid-connect", "publicClient": False,
         "secret": sec, "redirectUris": ["https://grafana.acme.example/login/generic_oauth"],
         "standardFlowEnabled": True}]}), sec)


@cred("oidc-token-response-in-browser-devtools-copy")
def _oidc_resp(rng):
    rt = b64url(rng, 48)
    at = jwt(rng, {"iss": "https://login.acme.example", "sub": uid(rng), "aud": "spa",
                   "exp": rng.randint(1790000000, 1800000000)}, "RS256")
    return out(f"""
        Request URL: https://login.acme.example/oauth2/token
        Request Method: POST
        Status Code: 200 OK

        Response:
        {{"access_token":"{at}","token_type":"Bearer","expires_in":300,"refresh_token":"{rt}","scope":"openid profile offline_access"}}
        """, at, rt)


@cred("saml-idp-metadata-with-signing-private-key-pasted")
def _saml(rng):
    line = pem_line(rng, "MIIEowIBAAKCAQEA")
    return out(f"""
        # simplesamlphp/cert/ -- someone pasted both halves into the ticket
        -----BEGIN CERTIFICATE-----
        MIIDdzCCAl+gAwIBAgIE{b64(rng, 33)}
        {b64(rng, 48)}
        -----END CERTIFICATE-----
        {pem_block(rng, line, "RSA PRIVATE KEY", 4).replace(chr(10), chr(10) + " " * 8)}
        """, line)


@cred("krb5-kinit-keytab-generated-with-password-ktutil")
def _ktutil(rng):
    pw = safe(rng, 16)
    return out(f"""
        $ ktutil
        ktutil:  addent -password -p svc_hadoop@CORP.ACME.EXAMPLE -k 1 -e aes256-cts-hmac-sha1-96
        Password for svc_hadoop@CORP.ACME.EXAMPLE: {pw}
        ktutil:  wkt /etc/security/keytabs/svc_hadoop.keytab
        ktutil:  quit
        """, pw)


@cred("freeradius-users-file-cleartext-password")
def _radius_users(rng):
    pw = person(rng)
    return out(f"""
        # /etc/freeradius/3.0/mods-config/files/authorize
        "printer-vlan"  Cleartext-Password := "{pw}"
                        Tunnel-Type = VLAN,
                        Tunnel-Medium-Type = IEEE-802,
                        Tunnel-Private-Group-Id = 40
        """, pw)


@cred("radtest-command-line-secret-and-password")
def _radtest(rng):
    pw = person(rng)
    sec = safe(rng, 18)
    return out(f"""
        $ radtest {who(rng)} '{pw}' {ip(rng)} 0 '{sec}'
        Sent Access-Request Id 188 from 0.0.0.0:51233 to {ip(rng)}:1812 length 77
        Received Access-Accept Id 188 from {ip(rng)}:1812 to 0.0.0.0:0 length 38
        """, pw, sec)


@cred("authentik-blueprint-yaml-user-password")
def _authentik(rng):
    pw = safe(rng, 20)
    return out(f"""
        version: 1
        metadata:
          name: ci-service-account
        entries:
          - model: authentik_core.user
            identifiers:
              username: ci-bot
            attrs:
              name: CI bot
              password: {pw}
              type: service_account
        """, pw)


@cred("dex-config-static-client-secret")
def _dex(rng):
    sec = b64url(rng, 24)
    return out(f"""
        staticClients:
          - id: argo-cd
            redirectURIs: ['https://argocd.acme.example/auth/callback']
            name: 'Argo CD'
            secret: {sec}
        enablePasswordDB: false
        """, sec)


@cred("azure-ad-app-credential-reset-cli-output")
def _aad(rng):
    pw = mixed(rng, 3) + "8Q~" + b64url(rng, 27)[:34]
    return out(f"""
        $ az ad app credential reset --id {uid(rng)} --display-name ci-2026
        {{
          "appId": "{uid(rng)}",
          "password": "{pw}",
          "tenant": "{uid(rng)}"
        }}
        """, pw)


@cred("okta-api-token-terraform-tfvars")
def _okta(rng):
    tok = "00" + b64url(rng, 30)[:40]
    return out(f"""
        okta_org_name  = "acme"
        okta_base_url  = "okta.com"
        okta_api_token = "{tok}"
        """, tok)


# ==========================================================================================================
# SSH, GPG, age, sops and password-manager exports
# ==========================================================================================================


@cred("openssh-ed25519-key-pasted-in-chat-code-block")
def _ssh_chat(rng):
    line = ssh_line(rng)
    return out(f"""
        [{hms(rng)}] <{who(rng)}> can you add this to the deploy box? it's the key the runner uses
        [{hms(rng)}] <{who(rng)}> ```
        -----BEGIN OPENSSH PRIVATE KEY-----
        {line}
        {b64(rng, 51)}
        {b64(rng, 51)}
        {b64(rng, 15)}
        -----END OPENSSH PRIVATE KEY-----
        ```
        [{hms(rng)}] <{who(rng)}> that's the PRIVATE half, please delete that message
        """, line)


@cred("putty-ppk-v3-private-lines-unencrypted")
def _ppk(rng):
    line = b64(rng, 48)
    return out(f"""
        PuTTY-User-Key-File-3: ssh-ed25519
        Encryption: none
        Comment: eddsa-key-2026{rng.randint(1000, 1231)}
        Public-Lines: 2
        AAAAC3NzaC1lZDI1NTE5AAAAI{b64(rng, 24)}
        {b64(rng, 12)}
        Private-Lines: 1
        {line}
        Private-MAC: {hexa(rng, 64)}
        """, line)


@cred("ssh-keygen-passphrase-flag-in-provision-script")
def _sshkeygen(rng):
    pw = phrase(rng, 5, " ")
    return out(f"""
        #!/bin/sh
        set -eu
        ssh-keygen -t ed25519 -C "backup@nas" -N "{pw}" -f /root/.ssh/backup_ed25519
        ssh-copy-id -i /root/.ssh/backup_ed25519.pub backup@offsite.example
        """, pw)


@cred("gpg-batch-passphrase-file-gen-key-params")
def _gpg_batch(rng):
    pw = phrase(rng, 4, "-")
    return out(f"""
        %echo Generating release signing key
        Key-Type: EDDSA
        Key-Curve: ed25519
        Name-Real: Acme Release
        Name-Email: release@acme.example
        Expire-Date: 2y
        Passphrase: {pw}
        %commit
        %echo done
        """, pw)


@cred("age-keygen-output-and-recipients")
def _age(rng):
    key = "AGE-SECRET-KEY-1" + chars(rng, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58).upper()
    return out(f"""
        $ age-keygen -o key.txt && cat key.txt
        Public key: age1{chars(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)}
        # created: {when(rng)}
        # public key: age1{chars(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)}
        {key}
        """, key)


@cred("sops-decrypted-yaml-committed-by-mistake")
def _sops_dec(rng):
    pw = safe(rng, 22)
    return out(f"""
        diff --git a/clusters/prod/secrets.dec.yaml b/clusters/prod/secrets.dec.yaml
        new file mode 100644
        --- /dev/null
        +++ b/clusters/prod/secrets.dec.yaml
        @@ -0,0 +1,5 @@
        +apiVersion: v1
        +kind: Secret
        +stringData:
        +  RABBITMQ_DEFAULT_PASS: {pw}
        +  RABBITMQ_DEFAULT_USER: acme
        """, pw)


@cred("onepassword-1pux-export-json-login-item")
def _1pux(rng):
    pw = symbolic(rng, 24, "!#%*-_=+")
    return out(jd({"uuid": lower(rng, 26), "favIndex": 0, "createdAt": rng.randint(1600000000, 1700000000),
                   "overview": {"title": "Cloudflare", "url": "https://dash.cloudflare.com"},
                   "details": {"loginFields": [
                       {"value": "ops@acme.example", "name": "email", "fieldType": "E", "designation": "username"},
                       {"value": pw, "name": "password", "fieldType": "P", "designation": "password"}]}}), pw)


@cred("onepassword-op-inject-output-env-file")
def _op_inject(rng):
    tok = "ops_" + b64url(rng, 300)[:380]
    return out(f"""
        $ op inject -i .env.tpl -o .env && cat .env
        OP_SERVICE_ACCOUNT_TOKEN={tok}
        DB_HOST=db.acme.internal
        """, tok)


@cred("bitwarden-json-export-items-login-and-totp")
def _bitwarden(rng):
    pw = person(rng)
    totp = chars(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 32)
    return out(jd({"encrypted": False, "items": [
        {"id": uid(rng), "type": 1, "name": "Hetzner robot",
         "login": {"username": "K" + digits(rng, 7), "password": pw, "totp": totp,
                   "uris": [{"match": None, "uri": "https://robot.hetzner.com"}]}}]}), pw, totp)


@cred("bitwarden-cli-bw-unlock-session-export")
def _bw_session(rng):
    sess = b64(rng, 64)
    return out(f"""
        $ bw unlock
        ? Master password: [hidden]
        Your vault is now unlocked!

        To unlock your vault, set your session key to the `BW_SESSION` environment variable. ex:
        $ export BW_SESSION="{sess}"
        > $env:BW_SESSION="{sess}"
        """, sess)


@cred("keepassxc-csv-export-group-rows")
def _keepass(rng):
    pw1 = safe(rng, 20)
    pw2 = person(rng)
    return out(f"""
        "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
        "Root/Infra","iDRAC r740-01","root","{pw1}","https://{ip(rng)}","","","0","{when(rng)}","{when(rng)}"
        "Root/Home","Router","admin","{pw2}","http://192.168.1.1","","","0","{when(rng)}","{when(rng)}"
        """, pw1, pw2)


@cred("lastpass-csv-export-with-extra-note")
def _lastpass(rng):
    pw = person(rng)
    return out(f"""
        url,username,password,totp,extra,name,grouping,fav
        https://app.gusto.com/login,payroll@acme.example,{pw},,"security q: first pet = Biscuit",Gusto,Finance,0
        http://sn,,,,"NoteType:Server Notes",Office NAS,Shared-IT,0
        """, pw)


@cred("pass-show-output-multiline-entry")
def _pass(rng):
    pw = symbolic(rng, 20, "!#%*-_=+")
    return out(f"""
        $ pass show work/vpn
        {pw}
        user: {who(rng)}
        url: https://vpn.acme.example
        otp: see phone
        """, pw)


@cred("vault-write-transit-and-kv-put-history")
def _vault_put(rng):
    pw = safe(rng, 18)
    return out(f"""
        $ vault kv put -mount=secret apps/ledger db_user=ledger db_password={pw}
        ====== Secret Path ======
        secret/data/apps/ledger

        ======= Metadata =======
        Key                Value
        ---                -----
        created_time       {when(rng)}
        version            {rng.randint(2, 9)}
        """, pw)


@cred("vault-token-create-table-output")
def _vault_tok(rng):
    tok = "hvs.CAESI" + b64url(rng, 70)[:90]
    return out(f"""
        $ vault token create -policy=ci -ttl=24h
        Key                  Value
        ---                  -----
        token                {tok}
        token_accessor       {b64url(rng, 18)}
        token_duration       24h
        token_renewable      true
        token_policies       ["ci" "default"]
        """, tok)


@cred("doppler-service-token-in-fly-toml-env")
def _doppler(rng):
    tok = "dp.st.prd." + mixed(rng, 43)
    return out(f"""
        app = "acme-api"
        primary_region = "ams"

        [env]
          DOPPLER_TOKEN = "{tok}"
          PORT = "8080"

        [[services]]
          internal_port = 8080
        """, tok)


@cred("infisical-universal-auth-client-secret-compose")
def _infisical(rng):
    sec = hexa(rng, 64)
    return out(f"""
        services:
          worker:
            image: ghcr.io/acme/worker:1.9.3
            environment:
              INFISICAL_UNIVERSAL_AUTH_CLIENT_ID: {uid(rng)}
              INFISICAL_UNIVERSAL_AUTH_CLIENT_SECRET: {sec}
              INFISICAL_PROJECT_ID: {uid(rng)}
        """, sec)


# ==========================================================================================================
# Databases and ORM configuration across languages
# ==========================================================================================================


@cred("rails-database-yml-production-erb-fallback")
def _rails_db(rng):
    pw = safe(rng, 18)
    return out(f"""
        production:
          <<: *default
          database: shop_production
          username: shop
          password: <%= ENV.fetch("SHOP_DATABASE_PASSWORD") {{ "{pw}" }} %>
          host: <%= ENV["DB_HOST"] %>
        """, pw)


@cred("laravel-env-db-and-mail-and-pusher")
def _laravel(rng):
    pw = person(rng)
    app_key = b64(rng, 32)
    return out(f"""
        APP_NAME="Acme Booking"
        APP_ENV=production
        APP_KEY=base64:{app_key}
        DB_CONNECTION=mysql
        DB_HOST=127.0.0.1
        DB_DATABASE=booking
        DB_USERNAME=booking
        DB_PASSWORD={pw}
        BROADCAST_CONNECTION=log
        """, pw, app_key)


@cred("spring-application-yml-datasource-and-jwt-secret")
def _spring(rng):
    pw = safe(rng, 16)
    jw = b64(rng, 48)
    return out(f"""
        spring:
          datasource:
            url: jdbc:mariadb://mariadb.acme.internal:3306/orders?useSSL=true
            username: orders_app
            password: {pw}
          jpa:
            hibernate:
              ddl-auto: validate
        app:
          security:
            jwt:
              secret: {jw}
              expiration-ms: 86400000
        """, pw, jw)


@cred("django-settings-databases-dict-and-email-host-password")
def _django(rng):
    pw = safe(rng, 16)
    mail = person(rng)
    return out(f"""
        DATABASES = {{
            "default": {{
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "clinic",
                "USER": "clinic",
                "PASSWORD": "{pw}",
                "HOST": "10.0.4.12",
                "PORT": "5432",
            }}
        }}
        EMAIL_HOST = "smtp.zoho.eu"
        EMAIL_HOST_USER = "noreply@clinic.example"
        EMAIL_HOST_PASSWORD = "{mail}"
        """, pw, mail)


@cred("prisma-schema-datasource-url-literal")
def _prisma(rng):
    pw = safe(rng, 16)
    return out(f"""
        generator client {{
          provider = "prisma-client-js"
        }}

        datasource db {{
          provider  = "postgresql"
          url       = "postgresql://prisma:{pw}@ep-{lower(rng, 6)}-{lower(rng, 6)}.eu-central-1.aws.neon.tech/app?sslmode=require"
          directUrl = env("DIRECT_URL")
        }}
        """, pw)


@cred("typeorm-ormconfig-ts-datasource")
def _typeorm(rng):
    pw = person(rng)
    return out(f"""
        export const AppDataSource = new DataSource({{
          type: "mssql",
          host: "sql-prod.acme.example",
          port: 1433,
          username: "app_rw",
          password: "{pw}",
          database: "Inventory",
          entities: [Product, Warehouse],
          options: {{ encrypt: true, trustServerCertificate: false }},
        }});
        """, pw)


@cred("sequelize-config-json-environments")
def _sequelize(rng):
    pw = safe(rng, 14)
    return out(jd({"development": {"username": "root", "password": None, "database": "app_dev", "host": "127.0.0.1",
                                   "dialect": "mysql"},
                   "production": {"username": "app", "password": pw, "database": "app", "host": "db.prod.internal",
                                  "dialect": "mysql", "logging": False}}), pw)


@cred("sqlalchemy-alembic-ini-sqlalchemy-url")
def _alembic(rng):
    pw = safe(rng, 16)
    return out(f"""
        [alembic]
        script_location = migrations
        prepend_sys_path = .
        sqlalchemy.url = postgresql+asyncpg://migrator:{pw}@db-primary:5432/ledger

        [loggers]
        keys = root,sqlalchemy,alembic
        """, pw)


@cred("diesel-rust-dotenv-and-cli-run")
def _diesel(rng):
    pw = safe(rng, 15)
    return out(f"""
        $ echo DATABASE_URL=postgres://diesel:{pw}@localhost/crab_shop > .env
        $ diesel migration run
        Running migration 2026-02-11-094512_create_orders
        Running migration 2026-02-19-121001_add_refunds
        """, pw)


@cred("ecto-repo-config-exs-password")
def _ecto(rng):
    pw = person(rng)
    return out(f"""
        import Config

        config :tavern, Tavern.Repo,
          username: "tavern",
          password: "{pw}",
          hostname: "pg.fly.internal",
          database: "tavern_prod",
          pool_size: 10,
          ssl: true
        """, pw)


@cred("gorm-dsn-in-go-test-helper")
def _gorm(rng):
    pw = safe(rng, 14)
    return out(f"""
        func testDB(t *testing.T) *gorm.DB {{
            dsn := "host=10.9.0.4 user=it_runner password={pw} dbname=it port=5432 sslmode=disable TimeZone=UTC"
            db, err := gorm.Open(postgres.Open(dsn), &gorm.Config{{}})
            require.NoError(t, err)
            return db
        }}
        """, pw)


@cred("hibernate-cfg-xml-connection-password")
def _hibernate(rng):
    pw = safe(rng, 13)
    return out(f"""
        <hibernate-configuration>
          <session-factory>
            <property name="hibernate.connection.driver_class">oracle.jdbc.OracleDriver</property>
            <property name="hibernate.connection.url">jdbc:oracle:thin:@//ora19.acme.example:1521/HRPDB</property>
            <property name="hibernate.connection.username">HR_APP</property>
            <property name="hibernate.connection.password">{pw}</property>
          </session-factory>
        </hibernate-configuration>
        """, pw)


@cred("entity-framework-user-secrets-json-connection-string")
def _efcore(rng):
    pw = safe(rng, 18)
    return out(jd({"ConnectionStrings:Default": f"Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=crm;"
                                                  f"User ID=crm_app;Password={pw};Encrypt=True;",
                   "Smtp:Host": "smtp.sendgrid.net"}), pw)


@cred("knex-knexfile-js-connection-object")
def _knex(rng):
    pw = person(rng)
    return out(f"""
        module.exports = {{
          production: {{
            client: "pg",
            connection: {{ host: "pg-main", user: "api", password: "{pw}", database: "api" }},
            pool: {{ min: 2, max: 10 }},
            migrations: {{ tableName: "knex_migrations" }},
          }},
        }};
        """, pw)


@cred("drizzle-config-ts-db-credentials")
def _drizzle(rng):
    tok = jwt(rng, {"a": "rw", "iat": rng.randint(1760000000, 1770000000), "id": uid(rng)}, "EdDSA")
    return out(f"""
        import {{ defineConfig }} from "drizzle-kit";

        export default defineConfig({{
          dialect: "turso",
          schema: "./src/db/schema.ts",
          dbCredentials: {{
            url: "libsql://acme-{lower(rng, 8)}.aws-eu-west-1.turso.io",
            authToken: "{tok}",
          }},
        }});
        """, tok)


@cred("mongoose-connect-uri-in-nextjs-api-route")
def _mongoose(rng):
    pw = mixed(rng, 16)
    return out(f"""
        // pages/api/db.ts
        import mongoose from "mongoose";
        const uri = "mongodb+srv://nextapp:{pw}@cluster0.{lower(rng, 5)}.mongodb.net/shop?retryWrites=true&w=majority";
        export default async function connect() {{
          if (mongoose.connection.readyState >= 1) return;
          await mongoose.connect(uri);
        }}
        """, pw)


@cred("peewee-playhouse-db-url-in-flask-config")
def _peewee(rng):
    pw = safe(rng, 14)
    return out(f"""
        class ProductionConfig(Config):
            DATABASE = "mysql://flask:{pw}@10.1.2.3:3306/blog"
            SESSION_COOKIE_SECURE = True
        """, pw)


@cred("sqlx-offline-cargo-env-database-url")
def _sqlx(rng):
    pw = safe(rng, 14)
    return out(f"""
        error: error returned from database: password authentication failed for user "api"
          --> src/repo/users.rs:41:17
           |
        41 |     let row = sqlx::query!("SELECT id, email FROM users WHERE id = $1", id)
           |               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
           = note: DATABASE_URL = postgres://api:{pw}@localhost:5433/api
        """, pw)


@cred("r2dbc-url-in-micronaut-application-properties")
def _r2dbc(rng):
    pw = safe(rng, 15)
    return out(f"""
        micronaut.application.name=catalog
        r2dbc.datasources.default.url=r2dbc:postgresql://catalog:{pw}@pg-catalog:5432/catalog
        r2dbc.datasources.default.dialect=POSTGRES
        """, pw)


@cred("oracle-tnsnames-wallet-and-sqlcl-connect")
def _sqlcl(rng):
    pw = symbolic(rng, 16, "#_")
    return out(f"""
        SQL> connect ADMIN/"{pw}"@acmeatp_high
        Connected.
        SQL> select sysdate from dual;

        SYSDATE
        ---------
        {rng.randint(10, 28)}-FEB-26
        """, pw)


@cred("neo4j-driver-kotlin-auth-basic")
def _neo4j(rng):
    pw = lower(rng, 43)
    return out(f"""
        val driver = GraphDatabase.driver(
            "neo4j+s://{hexa(rng, 8)}.databases.neo4j.io",
            AuthTokens.basic("neo4j", "{pw}"),
        )
        """, pw)


@cred("redis-url-in-sidekiq-initializer-with-db-index")
def _redis_url(rng):
    pw = hexa(rng, 32)
    return out(f"""
        Sidekiq.configure_server do |config|
          config.redis = {{ url: "rediss://default:{pw}@redis-{digits(rng, 5)}.c{rng.randint(1, 300)}.eu-west-1-1.ec2.redns.redis-cloud.com:{rng.randint(10000, 19999)}/0" }}
        end
        """, pw)


@cred("cassandra-yaml-java-driver-conf-auth")
def _cassandra(rng):
    pw = safe(rng, 16)
    return out(f"""
        datastax-java-driver {{
          basic.contact-points = ["10.3.0.11:9042", "10.3.0.12:9042"]
          basic.load-balancing-policy.local-datacenter = dc1
          advanced.auth-provider {{
            class = PlainTextAuthProvider
            username = catalog_svc
            password = "{pw}"
          }}
        }}
        """, pw)


# ==========================================================================================================
# Spreadsheets, OCR, pastes, diffs, reviews, stack traces and dumps
# ==========================================================================================================


@cred("google-sheets-csv-download-onboarding-accounts")
def _sheet(rng):
    pw1 = person(rng)
    pw2 = person(rng)
    return out(f"""
        Name,Start date,Laptop,Email,Temp password,Done?
        {who(rng).capitalize()},{day(rng)},MBP-{digits(rng, 4)},new1@acme.example,{pw1},TRUE
        {who(rng).capitalize()},{day(rng)},XPS-{digits(rng, 4)},new2@acme.example,{pw2},FALSE
        """, pw1, pw2)


@cred("xlsx-openpyxl-dump-wifi-tab")
def _xlsx(rng):
    pw = person(rng)
    return out(f"""
        >>> ws = wb["Network"]
        >>> for row in ws.iter_rows(values_only=True): print(row)
        ('SSID', 'Band', 'Password', 'VLAN')
        ('ACME-Staff', '5GHz', None, 10)
        ('ACME-Guest', '2.4/5', '{pw}', 99)
        """, pw)


@cred("ocr-screenshot-of-router-sticker")
def _ocr_sticker(rng):
    key = upper(rng, 12)
    return out(f"""
        [tesseract 5.5 output: IMG_{digits(rng, 4)}.HEIC]
        Model: Speedport Smart 4   S/N: {upper(rng, 14)}
        WLAN-Name (SSID): WLAN-{digits(rng, 6)}
        WLAN-Schlüssel /WPA2 Key: {key}
        Gerätepasswort: siehe Rückseite
        """, key)


@cred("ocr-whiteboard-photo-meeting-room-notes")
def _ocr_board(rng):
    pw = person(rng)
    return out(f"""
        Text recognized from photo (Apple Live Text):
        SPRINT 14 — GOALS
        - ship invoice export
        - fix iOS login
        guest wifi: ACME-Visitors
        pw {pw}
        retro Thurs 3pm
        """, pw)


@cred("pastebin-raw-config-dump-with-title")
def _pastebin(rng):
    pw = safe(rng, 14)
    return out(f"""
        Untitled | pastebin raw | {day(rng)} | expires: never
        ------------------------------------------------
        [mysqld]
        bind-address = 0.0.0.0
        [client]
        user = wpuser
        password = {pw}
        host = localhost
        """, pw)


@cred("github-gist-json-api-response-file-content")
def _gist(rng):
    key = "SG." + b64url(rng, 16)[:22] + "." + b64url(rng, 32)[:43]
    return out(jd({"url": "https://api.github.com/gists/" + hexa(rng, 32), "public": True,
                   "files": {"mailer.py": {"filename": "mailer.py", "language": "Python", "size": 388,
                                           "content": f"import sendgrid\nsg = sendgrid.SendGridAPIClient('{key}')\n"}},
                   "created_at": when(rng)}), key)


@cred("git-diff-config-yaml-password-changed")
def _diff(rng):
    old = safe(rng, 14)
    new = safe(rng, 14)
    return out(f"""
        diff --git a/deploy/values-prod.yaml b/deploy/values-prod.yaml
        index {sha(rng)[:7]}..{sha(rng)[:7]} 100644
        --- a/deploy/values-prod.yaml
        +++ b/deploy/values-prod.yaml
        @@ -12,7 +12,7 @@ postgresql:
           auth:
             username: keycloak
        -    password: {old}
        +    password: {new}
             database: keycloak
        """, old, new)


@cred("github-pr-review-comment-suggestion-removes-key")
def _review(rng):
    key = "sk_live_" + mixed(rng, 40)
    return out(f"""
        **{who(rng)}** reviewed on src/billing/client.py line 18
        > ```suggestion
        > stripe.api_key = os.environ["STRIPE_SECRET_KEY"]
        > ```
        Please don't hardcode this — `stripe.api_key = "{key}"` is a live key and it's now in the branch history,
        so it needs to be rolled too.
        """, key)


@cred("gerrit-review-comment-quoting-ini")
def _gerrit(rng):
    pw = person(rng)
    return out(f"""
        Patch Set 3:

        (1 comment)

        File conf/gateway.ini:

        PS3, Line 27: smtp_password = {pw}
        This must come from the vault, not the repo. -1
        """, pw)


@cred("python-traceback-locals-with-better-exceptions")
def _tb_locals(rng):
    pw = safe(rng, 16)
    return out(f"""
        Traceback (most recent call last):
          File "/app/sync.py", line 88, in push
            client.login(user, password)
                         │     └ '{pw}'
                         └ 'sync-bot'
          File "/usr/lib/python3.13/imaplib.py", line 620, in login
            raise self.error(dat[-1])
        imaplib.IMAP4.error: b'[AUTHENTICATIONFAILED] Invalid credentials (Failure)'
        """, pw)


@cred("java-exception-spring-bind-properties-dump")
def _java_bind(rng):
    pw = safe(rng, 16)
    return out(f"""
        ***************************
        APPLICATION FAILED TO START
        ***************************

        Description:

        Failed to bind properties under 'spring.mail' to org.springframework.boot.autoconfigure.mail.MailProperties:

            Property: spring.mail.password
            Value: "{pw}"
            Origin: class path resource [application-prod.properties] - 14:22
            Reason: java.lang.IllegalStateException: port must be set
        """, pw)


@cred("dotnet-unhandled-exception-connection-string-in-message")
def _dotnet_ex(rng):
    pw = safe(rng, 15)
    return out(f"""
        Unhandled exception. System.ArgumentException: Format of the initialization string does not conform to specification starting at index 87.
           at System.Data.Common.DbConnectionOptions.GetKeyValuePair(String connectionString, Int32 currentPosition)
           at Microsoft.Data.SqlClient.SqlConnectionString..ctor(String connectionString)
        Connection string was: Server=sql01;Database=Payroll;User Id=payroll_svc;Password={pw};;;TrustServerCertificate=True
        """, pw)


@cred("php-fatal-error-pdo-exception-stack-args")
def _php_trace(rng):
    pw = person(rng)
    return out(f"""
        PHP Fatal error:  Uncaught PDOException: SQLSTATE[HY000] [1045] Access denied for user 'shop'@'10.0.0.7' (using password: YES) in /var/www/html/lib/Db.php:22
        Stack trace:
        #0 /var/www/html/lib/Db.php(22): PDO->__construct('mysql:host=db;d...', 'shop', '{pw}', Array)
        #1 /var/www/html/index.php(9): Db::connect()
        #2 {{main}}
          thrown in /var/www/html/lib/Db.php on line 22
        """, pw)


@cred("rust-panic-debug-struct-config")
def _rust_panic(rng):
    key = "sk_" + hexa(rng, 40)
    return out(f"""
        thread 'main' panicked at src/main.rs:57:10:
        failed to start: Config {{ listen: 0.0.0.0:8080, upstream: "https://api.vendor.example", api_key: "{key}", retries: 3 }}
        note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
        """, key)


@cred("gdb-core-dump-print-struct-credentials")
def _gdb(rng):
    pw = safe(rng, 14)
    return out(f"""
        (gdb) bt 2
        #0  0x00007f3a1c2b9e2c in __pthread_kill_implementation () from /lib64/libc.so.6
        #1  0x000000000041a2f7 in db_connect (cfg=0x7ffd5d1e8a40) at db.c:112
        (gdb) frame 1
        (gdb) p *cfg
        $1 = {{host = 0x1c3f2a0 "10.0.8.4", port = 3306, user = 0x1c3f2c0 "telemetry", passwd = 0x1c3f2e0 "{pw}", timeout = 5}}
        """, pw)


@cred("strings-on-binary-found-hardcoded-secret")
def _strings(rng):
    key = "AKIA" + upper(rng, 16)
    sec = b64(rng, 30)[:40]
    return out(f"""
        $ strings -n 12 firmware.bin | grep -iE 'akia|secret' -A1
        {key}
        {sec}
        s3.eu-central-1.amazonaws.com
        """, sec)


@cred("valgrind-log-argv-with-password-flag")
def _valgrind(rng):
    pw = safe(rng, 13)
    return out(f"""
        ==31337== Memcheck, a memory error detector
        ==31337== Command: ./ingest --host db.local --user ingest --password {pw} --batch 500
        ==31337==
        ==31337== HEAP SUMMARY:
        ==31337==     in use at exit: 72,704 bytes in 1 blocks
        """, pw)


@cred("kubectl-logs-crashloop-config-echo")
def _kube_logs(rng):
    tok = "xoxp-" + digits(rng, 12) + "-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + hexa(rng, 32)
    return out(f"""
        $ kubectl logs deploy/notifier --previous | tail -4
        {when(rng)} INFO  loading config from env
        {when(rng)} DEBUG config={{"channel": "#alerts", "slack_token": "{tok}", "dry_run": false}}
        {when(rng)} ERROR slack: invalid_auth
        {when(rng)} FATAL exiting
        """, tok)


@cred("journalctl-unit-log-cmdline-with-token")
def _journal(rng):
    tok = "tskey-auth-k" + mixed(rng, 10) + "CNTRL-" + mixed(rng, 33)
    return out(f"""
        {day(rng)} {hms(rng)} edge-01 systemd[1]: Started tailscale-up.service.
        {day(rng)} {hms(rng)} edge-01 sh[{rng.randint(900, 9999)}]: + tailscale up --authkey={tok} --advertise-routes=10.50.0.0/16
        {day(rng)} {hms(rng)} edge-01 sh[{rng.randint(900, 9999)}]: Success.
        """, tok)


@cred("sentry-breadcrumb-http-url-with-api-key-query")
def _sentry_bc(rng):
    key = mixed(rng, 32)
    return out(jd({"type": "http", "category": "fetch", "level": "info", "timestamp": rng.randint(1760000000, 1790000000),
                   "data": {"method": "GET", "status_code": 200,
                            "url": f"https://api.openweathermap.org/data/3.0/onecall?lat=52.37&lon=4.89&appid={key}"}}),
               key)


@cred("har-websocket-message-auth-frame")
def _har_ws(rng):
    tok = jwt(rng, {"sub": uid(rng), "role": "authenticated", "exp": rng.randint(1790000000, 1800000000)})
    return out(jd({"_resourceType": "websocket", "request": {"url": "wss://realtime.acme.example/socket"},
                   "_webSocketMessages": [
                       {"type": "send", "time": rng.random() * 1e9, "opcode": 1,
                        "data": json.dumps({"type": "auth", "access_token": tok})},
                       {"type": "receive", "time": rng.random() * 1e9, "opcode": 1,
                        "data": "{\"type\":\"auth_ok\"}"}]}), tok)


# ==========================================================================================================
# People writing passwords out: English and other languages and scripts, in the media they use
# ==========================================================================================================


def _m_whatsapp(rng, sender, body):
    d = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.26"
    return f"[{d}, {hms(rng)}] {sender}: {body}\n[{d}, {hms(rng)}] {who(rng).capitalize()}: 👍\n"


def _m_telegram_json(rng, sender, body):
    return jd({"name": "Семья / Family", "type": "private_group", "messages": [
        {"id": rng.randint(1000, 99999), "type": "message", "date": when(rng)[:19], "from": sender,
         "from_id": "user" + digits(rng, 9), "text": body}]}) + "\n"


def _m_email(rng, sender, body):
    return (f"From: {sender} <{who(rng)}@mail.example>\nTo: {who(rng)}@mail.example\nDate: {day(rng)} {hms(rng)} +0000\n"
            f"Subject: =?UTF-8?B?{base64.b64encode(sender.encode()).decode()}?=\nContent-Type: text/plain; charset=UTF-8\n\n"
            f"{body}\n\n-- \n{sender}\n")


def _m_sms_xml(rng, sender, body):
    esc = body.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    return (f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<smses count=\"1\">\n"
            f"  <sms protocol=\"0\" address=\"+{digits(rng, 11)}\" date=\"{rng.randint(1760000000000, 1790000000000)}\" "
            f"type=\"1\" body=\"{esc}\" read=\"1\" status=\"-1\" contact_name=\"{sender}\" />\n</smses>\n")


def _m_line(rng, sender, body):
    return f"[LINE] Chat history\nSaved on: {day(rng)} {hms(rng)}\n\n{day(rng)}\n{hms(rng)[:5]}\t{sender}\t{body}\n{hms(rng)[:5]}\tMe\tOK\n"


def _m_slack(rng, sender, body):
    return jd([{"type": "message", "user": "U0" + upper(rng, 9), "user_name": sender, "text": body,
                "ts": f"{rng.randint(1760000000, 1790000000)}.{digits(rng, 6)}"}]) + "\n"


def _m_ticket(rng, sender, body):
    return (f"Ticket #{rng.randint(10000, 99999)}  Status: Open  Priority: Normal\n"
            f"Requester: {sender}\n---\n{body}\n---\nSent from the support portal\n")


def _m_note(rng, sender, body):
    return f"Notes — {sender} — {day(rng)}\n\n• {body}\n• buy milk\n"


def _m_forum(rng, sender, body):
    return f"Re: help with the new router\nPosted by {sender} » {day(rng)} {hms(rng)[:5]}\n\n{body}\n\nThanks in advance!\n"


def _m_voicemail(rng, sender, body):
    return (f"Voicemail from {sender} (+{digits(rng, 11)}), 0:{rng.randint(15, 59)}\n"
            f"Transcript: \"{body}\"\n")


_MEDIA = {"whatsapp-export": _m_whatsapp, "telegram-json": _m_telegram_json, "email": _m_email,
          "sms-backup-xml": _m_sms_xml, "line-chat-txt": _m_line, "slack-json": _m_slack, "helpdesk-ticket": _m_ticket,
          "notes-app": _m_note, "forum-post": _m_forum, "voicemail-transcript": _m_voicemail}

# (shape, medium, sender, body with {pw} and optionally {pw2}); "the password is" in each language's own words.
_PROSE: list[tuple[str, str, str, str]] = [
    ("english-imessage-its-all-one-word", "notes-app", "Dad",
     "new netflix login is our family email and the password's {pw}, it's all one word, capital first letter"),
    ("english-forum-post-router-admin-default-changed", "forum-post", "techy_gran",
     "I changed the admin password on the router to {pw} and now the app won't connect, do I need to re-pair it?"),
    ("english-voicemail-landlord-keybox-and-wifi", "voicemail-transcript", "Landlord Gary",
     "hey it's Gary, the key box code is {pw2} and the internet password is {pw}, see you Saturday"),
    ("spanish-mexico-telegram-correo-contrasena", "telegram-json", "Tía Lupita",
     "Mijo, la contraseña del correo de la tienda es {pw}, no se la pases a nadie"),
    ("catalan-email-contrasenya-provisional", "email", "Secretaria Escola",
     "Benvolguda família, l'usuari de l'alumne és el número de matrícula i la contrasenya provisional és {pw}."),
    ("galician-whatsapp-contrasinal-wifi", "whatsapp-export", "Xoán",
     "O contrasinal da wifi da casa da aldea é {pw}"),
    ("basque-sms-pasahitza-da", "sms-backup-xml", "Udala",
     "Zure aldi baterako pasahitza {pw} da. Aldatu lehen saioan."),
    ("portuguese-portugal-email-palavra-passe", "email", "Suporte Informático",
     "Bom dia, a sua nova palavra-passe é {pw}. Por favor altere-a no primeiro acesso."),
    ("brazilian-portuguese-whatsapp-senha-do-roteador", "whatsapp-export", "Vó Cida",
     "a senha do roteador novo é {pw} tá escrito atrás dele também"),
    ("quebec-french-sms-mot-de-passe-temporaire", "sms-backup-xml", "Desjardins",
     "Ton mot de passe temporaire : {pw} — il expire dans 24 h."),
    ("swiss-german-ticket-kennwort-lautet", "helpdesk-ticket", "Sekretariat Praxis Meier",
     "Grüezi, das Kennwort fürs Praxis-Laptop lautet {pw}, aber es geht trotzdem nöd."),
    ("dutch-notes-app-wachtwoord-van-de-nas", "notes-app", "Joost",
     "wachtwoord van de NAS is {pw} (admin)"),
    ("afrikaans-whatsapp-die-wagwoord-is", "whatsapp-export", "Oom Piet",
     "Die wagwoord vir die plaas se wifi is {pw}, hoofletter voor"),
    ("danish-email-adgangskoden-er", "email", "IT-afdelingen",
     "Hej, din midlertidige adgangskode er {pw}. Du bliver bedt om at skifte den ved første login."),
    ("norwegian-slack-passordet-er", "slack-json", "Kari",
     "passordet til testbrukeren er {pw} — ikke bruk det i prod"),
    ("icelandic-sms-lykilordid-er", "sms-backup-xml", "Siggi",
     "Lykilorðið á þráðlausa netinu er {pw}"),
    ("finnish-whatsapp-salasana-on", "whatsapp-export", "Äiti",
     "Mökin wifin salasana on {pw} 😊"),
    ("estonian-email-parool-on", "email", "Raamatupidamine",
     "Tere! Palgaprogrammi ajutine parool on {pw}. Palun muuda see esimesel sisselogimisel."),
    ("latvian-telegram-parole-ir", "telegram-json", "Jānis",
     "Parole ir {pw}, lietotājvārds tas pats kā e-pastā"),
    ("lithuanian-ticket-slaptazodis-yra", "helpdesk-ticket", "Rasa K.",
     "Sveiki, mano slaptažodis yra {pw}, bet sistema sako, kad jis neteisingas."),
    ("hungarian-notes-a-jelszo", "notes-app", "Bence",
     "a jelszó a céges VPN-hez: {pw}"),
    ("slovak-email-heslo-je", "email", "Správca siete",
     "Dobrý deň, heslo k Wi-Fi v zasadačke je {pw}."),
    ("slovenian-sms-geslo-je", "sms-backup-xml", "Mojca",
     "Geslo za wifi je {pw}, lp"),
    ("croatian-whatsapp-lozinka-je", "whatsapp-export", "Ivana",
     "Lozinka je {pw} — javi ako ne radi"),
    ("serbian-cyrillic-viber-style-lozinka", "whatsapp-export", "Милан",
     "Лозинка за рутер је {pw}"),
    ("bulgarian-email-parolata-e", "email", "Счетоводство",
     "Здравейте, паролата за портала е {pw}. Моля, сменете я след първия вход."),
    ("macedonian-sms-lozinkata-e", "sms-backup-xml", "Билјана",
     "Лозинката е {pw}"),
    ("belarusian-telegram-parol", "telegram-json", "Алесь",
     "Пароль ад роўтара — {pw}"),
    ("kazakh-whatsapp-kupiya-soz", "whatsapp-export", "Айгерім",
     "Wi-Fi құпия сөзі: {pw}"),
    ("mongolian-email-nuuts-ug", "email", "Сургалтын алба",
     "Сайн байна уу, таны түр нууц үг: {pw}"),
    ("georgian-sms-paroli-aris", "sms-backup-xml", "ნინო",
     "ვაიფაის პაროლი არის {pw}"),
    ("armenian-telegram-gaghtnabar", "telegram-json", "Արամ",
     "Գաղտնաբառը՝ {pw}"),
    ("azerbaijani-whatsapp-sifre", "whatsapp-export", "Leyla",
     "Modemin şifrəsi {pw}-dir"),
    ("uzbek-telegram-parol", "telegram-json", "Dilshod aka",
     "Parol: {pw} — hech kimga bermang"),
    ("urdu-whatsapp-password-hai", "whatsapp-export", "عمران بھائی",
     "وائی فائی کا پاس ورڈ {pw} ہے"),
    ("punjabi-gurmukhi-sms-password-hai", "sms-backup-xml", "ਹਰਪ੍ਰੀਤ",
     "ਵਾਈਫਾਈ ਦਾ ਪਾਸਵਰਡ {pw} ਹੈ"),
    ("marathi-whatsapp-password-aahe", "whatsapp-export", "आई",
     "नवीन वायफायचा पासवर्ड {pw} आहे"),
    ("nepali-email-password-ho", "email", "कार्यालय",
     "तपाईंको अस्थायी पासवर्ड {pw} हो।"),
    ("gujarati-sms-password-chhe", "sms-backup-xml", "કિરણ",
     "દુકાનના કમ્પ્યુટરનો પાસવર્ડ {pw} છે"),
    ("telugu-whatsapp-password", "whatsapp-export", "అన్నయ్య",
     "వైఫై పాస్‌వర్డ్ {pw}"),
    ("kannada-telegram-password-ide", "telegram-json", "ಸುಮಾ",
     "ಹೊಸ ಪಾಸ್‌ವರ್ಡ್ {pw} ಆಗಿದೆ"),
    ("malayalam-whatsapp-password-aanu", "whatsapp-export", "ചേട്ടൻ",
     "റൂട്ടറിന്റെ പാസ്‌വേഡ് {pw} ആണ്"),
    ("sinhala-sms-murapadaya", "sms-backup-xml", "නිමල්",
     "වයිෆයි මුරපදය {pw}"),
    ("burmese-line-sakahwet", "line-chat-txt", "မောင်မောင်",
     "wifi စကားဝှက်က {pw} ပါ"),
    ("khmer-telegram-peak-samngat", "telegram-json", "សុភា",
     "ពាក្យសម្ងាត់គឺ {pw}"),
    ("lao-whatsapp-lahat-phan", "whatsapp-export", "ນ້ອຍ",
     "ລະຫັດຜ່ານແມ່ນ {pw}"),
    ("tagalog-messenger-style-ang-password-ay", "whatsapp-export", "Ate Joy",
     "Ang password ng wifi ay {pw} ha, wag mo ipamigay"),
    ("malay-email-kata-laluan-ialah", "email", "Unit ICT",
     "Salam, kata laluan sementara anda ialah {pw}. Sila tukar selepas log masuk."),
    ("traditional-chinese-line-mima-shi", "line-chat-txt", "阿嬤",
     "家裡的wifi密碼是{pw}喔"),
    ("cantonese-whatsapp-mima-hai", "whatsapp-export", "阿明",
     "部機個密碼係 {pw}，唔好話俾人知"),
    ("simplified-chinese-email-chushi-mima", "email", "人事部",
     "您好，您的初始密码为：{pw}，请首次登录后修改。"),
    ("japanese-email-shoki-pasuwado-kagikakko", "email", "情報システム部",
     "お疲れ様です。初期パスワードは「{pw}」です。ログイン後に変更してください。"),
    ("korean-email-imsi-bimilbeonho", "email", "고객센터",
     "안녕하세요. 임시 비밀번호는 {pw} 입니다. 로그인 후 반드시 변경해 주세요."),
    ("amharic-telegram-yeyilef-qal", "telegram-json", "ሰላም",
     "የዋይፋይ የይለፍ ቃሉ {pw} ነው"),
    ("hausa-whatsapp-kalmar-sirri", "whatsapp-export", "Musa",
     "Kalmar sirri ta wifi ita ce {pw}"),
    ("yoruba-sms-oro-asina", "sms-backup-xml", "Bàbá",
     "Ọ̀rọ̀ aṣínà wifi ni {pw}"),
    ("zulu-whatsapp-iphasiwedi", "whatsapp-export", "Sipho",
     "Iphasiwedi ye-wifi ithi {pw}"),
    ("somali-sms-furaha-sirta", "sms-backup-xml", "Xamdi",
     "Furaha sirta ee wifi-ga waa {pw}"),
    ("welsh-email-y-cyfrinair-yw", "email", "Swyddfa'r Ysgol",
     "Bore da, y cyfrinair dros dro yw {pw}. Newidiwch ef ar ôl mewngofnodi."),
    ("irish-sms-focal-faire", "sms-backup-xml", "Seán",
     "Is é an focal faire don wifi ná {pw}"),
    ("maltese-whatsapp-il-password-hija", "whatsapp-export", "Marija",
     "Il-password tal-wifi hija {pw}"),
    ("esperanto-forum-pasvorto-estas", "forum-post", "verda_stelo",
     "La pasvorto de la testkonto estas {pw}, bonvolu ne ŝanĝi ĝin."),
    ("hebrew-email-hasisma-hi", "email", "מחלקת מחשוב",
     "שלום, הסיסמה הזמנית שלך היא {pw} יש להחליף אותה בכניסה הראשונה."),
    ("egyptian-arabic-whatsapp-el-password", "whatsapp-export", "أحمد",
     "الباسورد بتاع الواي فاي {pw} يا باشا"),
    ("persian-email-ramz-movaghat", "email", "پشتیبانی",
     "سلام، رمز عبور موقت شما {pw} است. لطفاً پس از ورود آن را تغییر دهید."),
    ("russian-email-vremennyi-parol", "email", "Служба поддержки",
     "Здравствуйте! Ваш временный пароль: {pw}. Смените его после входа."),
    ("ukrainian-sms-parol-do-kabinetu", "sms-backup-xml", "Нова Пошта",
     "Пароль до кабінету: {pw}. Нікому не повідомляйте."),
    ("polish-slack-haslo-to", "slack-json", "Kasia",
     "hasło do konta testowego to {pw} (login: qa-tester)"),
    ("czech-notes-heslo-na-router", "notes-app", "Petr",
     "heslo na router: {pw}"),
    ("greek-sms-kodikos-einai", "sms-backup-xml", "Γιώργος",
     "Ο κωδικός για το wifi είναι {pw}"),
    ("turkish-whatsapp-sifresi", "whatsapp-export", "Ayşe Abla",
     "Modemin şifresi {pw} canım"),
    ("romanian-slack-parola-este", "slack-json", "Andrei",
     "parola pentru contul de staging este {pw}"),
    ("italian-email-la-password-e", "email", "Segreteria",
     "Buongiorno, la password provvisoria è {pw}. La preghiamo di cambiarla al primo accesso."),
    ("vietnamese-zalo-style-mat-khau-la", "whatsapp-export", "Chị Hoa",
     "mật khẩu wifi là {pw} nha em"),
    ("thai-line-rahat-wifi", "line-chat-txt", "พี่นก",
     "รหัสผ่าน wifi คือ {pw} นะ"),
    ("indonesian-whatsapp-sandinya", "whatsapp-export", "Pak RT",
     "Sandinya {pw} ya pak, huruf besar di depan"),
    ("hindi-sms-password-hai", "sms-backup-xml", "भैया",
     "नए राउटर का पासवर्ड {pw} है"),
    ("bengali-email-password-holo", "email", "অফিস",
     "আপনার অস্থায়ী পাসওয়ার্ড হলো {pw}"),
    ("tamil-whatsapp-kadavuchol", "whatsapp-export", "அண்ணா",
     "வைஃபை கடவுச்சொல் {pw}"),
    ("swahili-email-nenosiri-ni", "email", "Idara ya TEHAMA",
     "Habari, nenosiri lako la muda ni {pw}. Tafadhali libadilishe."),
    ("swedish-sms-losenordet-ar", "sms-backup-xml", "Pappa",
     "Lösenordet till wifi:t i stugan är {pw}"),
    ("german-voicemail-das-passwort-ist", "voicemail-transcript", "Frau Schulte",
     "Hallo, hier Schulte vom Büro, das Passwort für den Drucker ist {pw}, ich hab's Ihnen auch gemailt"),
    ("french-forum-le-mot-de-passe-est", "forum-post", "bricoleur_59",
     "J'ai mis le mot de passe {pw} sur la box et depuis la TV ne se connecte plus"),
    ("spanish-ticket-mi-contrasena-es", "helpdesk-ticket", "Lucía R.",
     "Hola, mi contraseña es {pw} y no me deja entrar desde ayer."),
]


def _prose_maker(medium: str, sender: str, body: str):
    def make(rng):
        pw = secret_for(rng)
        values = [pw]
        kw = {"pw": pw}
        if "{pw2}" in body:
            kw["pw2"] = digits(rng, 8)
            values.append(kw["pw2"])
        return _MEDIA[medium](rng, sender, body.format(**kw)), tuple(values)

    return make


for _shape, _medium, _sender, _body in _PROSE:
    cred(_shape)(_prose_maker(_medium, _sender, _body))


# ==========================================================================================================
# Clean documents: no credential, many look-alikes
# ==========================================================================================================


@clean("clean-otel-genai-chat-span-usage-and-ids")
def _c_otel(rng):
    return out(jd({"name": "chat claude-haiku-4-5", "context": {"trace_id": "0x" + trace_id(rng),
                                                               "span_id": "0x" + span_id(rng)},
                   "attributes": {"gen_ai.operation.name": "chat", "gen_ai.request.max_tokens": 1024,
                                  "gen_ai.usage.input_tokens": rng.randint(100, 4000),
                                  "gen_ai.usage.output_tokens": rng.randint(10, 900),
                                  "gen_ai.response.id": "msg_" + mixed(rng, 24),
                                  "gen_ai.response.finish_reasons": ["end_turn"]}}))[0]


@clean("clean-langfuse-env-example-placeholders")
def _c_langfuse(rng):
    return txt("""
        # .env.example -- copy to .env and fill in
        LANGFUSE_PUBLIC_KEY=pk-lf-...
        LANGFUSE_SECRET_KEY=<your-langfuse-secret-key>
        LANGFUSE_HOST=https://cloud.langfuse.com
        OPENAI_API_KEY=<your-api-key>
        """)


@clean("clean-promptfoo-results-token-usage-and-passed")
def _c_promptfoo(rng):
    return out(jd({"evalId": "eval-" + mixed(rng, 3) + "-" + when(rng)[:19], "results": {"stats": {
        "successes": rng.randint(40, 60), "failures": rng.randint(0, 5), "errors": 0,
        "tokenUsage": {"total": rng.randint(10000, 90000), "prompt": rng.randint(5000, 40000), "cached": 0}},
        "table": {"head": {"prompts": [{"label": "router.txt", "provider": "groq:llama-3.3-70b-versatile"}]}}},
        "config": {"tests": "file://tests/router_cases.csv"}, "shareableUrl": None}))[0]


@clean("clean-inspect-eval-log-header-model-usage")
def _c_inspect(rng):
    return out(jd({"version": 2, "status": "success", "eval": {"task": "gpqa", "task_id": mixed(rng, 22),
                                                               "model": "openai/gpt-5-mini", "model_args": {},
                                                               "config": {"max_tokens": 8192, "epochs": 3}},
                   "stats": {"model_usage": {"openai/gpt-5-mini": {"input_tokens": rng.randint(10 ** 5, 10 ** 6),
                                                                   "output_tokens": rng.randint(10 ** 4, 10 ** 5)}}}}))[0]


@clean("clean-temporal-workflow-describe-run-ids")
def _c_temporal(rng):
    return txt(f"""
        $ temporal workflow describe -w invoice-{digits(rng, 6)}
        Execution Info:
          WorkflowId            invoice-{digits(rng, 6)}
          RunId                 {uid(rng)}
          Type                  InvoiceWorkflow
          Namespace             billing.{lower(rng, 5)}
          TaskQueue             invoices
          AssignedBuildId       {sha(rng)[:12]}
          StateTransitionCount  {rng.randint(5, 90)}
          HistoryLength         {rng.randint(10, 200)}
        """)


@clean("clean-airflow-connection-get-masked")
def _c_airflow(rng):
    return txt(f"""
        $ airflow connections get warehouse_rs -o yaml
        - conn_id: warehouse_rs
          conn_type: redshift
          host: rs-prod.{lower(rng, 8)}.eu-west-1.redshift.amazonaws.com
          login: etl_user
          password: '***'
          port: 5439
          schema: analytics
        """)


@clean("clean-github-actions-workflow-secrets-and-oidc")
def _c_gha(rng):
    return txt(f"""
        permissions:
          id-token: write
          contents: read
        jobs:
          deploy:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@{sha(rng)}  # v5.0.0
              - uses: aws-actions/configure-aws-credentials@v5
                with:
                  role-to-assume: arn:aws:iam::{digits(rng, 12)}:role/gha-deploy
                  aws-region: eu-west-1
              - run: npm publish
                env:
                  NODE_AUTH_TOKEN: ${{{{ secrets.NPM_TOKEN }}}}
        """)


@clean("clean-gitlab-ci-job-log-masked-variables")
def _c_gitlab(rng):
    return txt(f"""
        Running with gitlab-runner 18.5.0 ({sha(rng)[:8]})
          on build-{lower(rng, 6)} t3_{lower(rng, 8)}, system ID: s_{hexa(rng, 12)}
        $ echo "$CI_REGISTRY_PASSWORD" | docker login -u "$CI_REGISTRY_USER" --password-stdin $CI_REGISTRY
        WARNING! Your credentials are stored unencrypted in '/root/.docker/config.json'.
        Login Succeeded
        $ echo "token is [MASKED]"
        token is [MASKED]
        Job succeeded
        """)


@clean("clean-npmrc-and-pip-conf-env-references")
def _c_npmrc(rng):
    return txt("""
        # .npmrc
        //registry.npmjs.org/:_authToken=${NPM_TOKEN}
        @acme:registry=https://npm.pkg.github.com
        # pip.conf
        [global]
        index-url = https://__token__:${PIP_INDEX_TOKEN}@pypi.acme.example/simple/
        """)


@clean("clean-cargo-lock-and-package-checksums")
def _c_cargo(rng):
    return txt(f"""
        [[package]]
        name = "tokio"
        version = "1.48.0"
        source = "registry+https://github.com/rust-lang/crates.io-index"
        checksum = "{sha256(rng)}"

        [[package]]
        name = "tokenizers"
        version = "0.22.1"
        source = "registry+https://github.com/rust-lang/crates.io-index"
        checksum = "{sha256(rng)}"
        """)


@clean("clean-poetry-lock-hashes-and-uv-lock-wheels")
def _c_poetry(rng):
    return txt(f"""
        [[package]]
        name = "passlib"
        version = "1.7.4"
        files = [
            {{file = "passlib-1.7.4-py2.py3-none-any.whl", hash = "sha256:{sha256(rng)}"}},
            {{file = "passlib-1.7.4.tar.gz", hash = "sha256:{sha256(rng)}"}},
        ]
        """)


@clean("clean-docker-config-json-credsstore-only")
def _c_docker(rng):
    return out(jd({"auths": {"ghcr.io": {}, "https://index.docker.io/v1/": {}}, "credsStore": "osxkeychain",
                   "credHelpers": {f"{digits(rng, 12)}.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"},
                   "currentContext": "orbstack"}, 1))[0]


@clean("clean-helm-values-existing-secret-and-password-min-length")
def _c_helm(rng):
    return txt("""
        auth:
          existingSecret: keycloak-db
          secretKeys:
            adminPasswordKey: admin-password
            userPasswordKey: password
        passwordPolicy: "length(12) and upperCase(1) and digits(1)"
        password_min_length: 12
        """)


@clean("clean-maven-settings-encrypted-passwords-only")
def _c_maven(rng):
    return txt(f"""
        <settings>
          <servers>
            <server>
              <id>central</id>
              <username>${{env.CENTRAL_USER}}</username>
              <password>${{env.CENTRAL_PASSWORD}}</password>
            </server>
          </servers>
          <mirrors><mirror><id>nexus</id><url>https://nexus.acme.example/repository/maven-public/</url></mirror></mirrors>
          <!-- build {sha(rng)[:10]} -->
        </settings>
        """)


@clean("clean-zsh-history-ordinary-commands")
def _c_zsh(rng):
    t = rng.randint(1760000000, 1790000000)
    return txt(f"""
        : {t}:0;git log --oneline -5
        : {t + 3}:0;git checkout -b fix/keyboard-shortcuts
        : {t + 40}:0;uv run pytest -q -k "password_reset and not slow"
        : {t + 95}:0;docker compose up -d postgres
        : {t + 120}:0;echo $DB_PASSWORD | wc -c
        """)


@clean("clean-powershell-transcript-get-credential-prompt")
def _c_ps(rng):
    return txt("""
        PS C:\\> $cred = Get-Credential -UserName "ACME\\svc-sql" -Message "SQL service account"
        PowerShell credential request
        SQL service account
        Password for user ACME\\svc-sql: ************

        PS C:\\> $cred.UserName
        ACME\\svc-sql
        PS C:\\> $cred.Password
        System.Security.SecureString
        """)


@clean("clean-jupyter-notebook-tokenizer-and-getpass")
def _c_jupyter(rng):
    cell = {"cell_type": "code", "execution_count": rng.randint(1, 30), "metadata": {},
            "source": ["from getpass import getpass\n", "tok = AutoTokenizer.from_pretrained('bert-base-cased')\n",
                       "hf_token = getpass('HF token: ')\n", "print(tok('the password field').input_ids)"],
            "outputs": [{"output_type": "stream", "name": "stdout",
                         "text": [f"[101, 1103, {rng.randint(1000, 9999)}, 1783, 102]\n"]}]}
    return out(jd(cell, 1))[0]


@clean("clean-vscode-settings-secret-storage-refs")
def _c_vscode(rng):
    return txt("""
        {
          "editor.fontFamily": "JetBrains Mono",
          "keyboard.dispatch": "keyCode",
          "github.copilot.enable": { "*": true, "plaintext": false },
          "sqltools.connections": [
            { "name": "local", "driver": "PostgreSQL", "server": "localhost", "port": 5432,
              "database": "app", "username": "app", "askForPassword": true }
          ]
        }
        """)


@clean("clean-slack-thread-about-password-reset-policy")
def _c_slack(rng):
    return out(jd([{"user_name": who(rng), "text": "reminder: passwords now need 14+ characters, the "
                                                  "password_min_length check ships Monday",
                    "ts": f"{rng.randint(1760000000, 1790000000)}.{digits(rng, 6)}"},
                   {"user_name": who(rng), "text": "does that apply to service accounts? those use keys from vault",
                    "ts": f"{rng.randint(1760000000, 1790000000)}.{digits(rng, 6)}"}]))[0]


@clean("clean-email-phishing-warning-multilingual")
def _c_phish(rng):
    return txt("""
        Subject: [IT] Never share your password / Ne partagez jamais votre mot de passe

        EN: We will never ask for your password by e-mail or phone.
        FR: Nous ne vous demanderons jamais votre mot de passe.
        DE: Wir fragen Sie niemals nach Ihrem Passwort.
        ES: Nunca le pediremos su contraseña.
        JA: パスワードをお尋ねすることはありません。
        If in doubt, forward the message to phishing@acme.example.
        """)


@clean("clean-whatsapp-export-asking-for-wifi-no-answer")
def _c_wa(rng):
    d = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.26"
    return txt(f"""
        [{d}, {hms(rng)}] Oma: Wie ist das WLAN-Passwort nochmal?
        [{d}, {hms(rng)}] Du: steht hinten auf dem Router, auf dem weißen Aufkleber
        [{d}, {hms(rng)}] Oma: Ah gefunden, danke!
        """)


@clean("clean-japanese-and-korean-password-policy-notice")
def _c_cjk(rng):
    return txt("""
        【お知らせ】パスワードは12文字以上で、英大文字・数字・記号を含めてください。
        【안내】비밀번호는 12자 이상이어야 하며, 이전 비밀번호는 재사용할 수 없습니다.
        【通知】密码长度至少为12位，请勿使用生日等易猜测的信息。
        """)


@clean("clean-arabic-and-hebrew-reset-instructions")
def _c_rtl(rng):
    return txt("""
        لإعادة تعيين كلمة المرور، اضغط على "نسيت كلمة المرور" وأدخل بريدك الإلكتروني.
        כדי לאפס את הסיסמה, לחצו על "שכחתי סיסמה" והזינו את כתובת הדוא"ל.
        """)


@clean("clean-russian-and-ukrainian-it-notice")
def _c_cyr(rng):
    return txt(f"""
        Уважаемые коллеги! {day(rng)} пароли всех учётных записей будут сброшены.
        Новый пароль вы получите в личном кабинете, по почте мы его не отправляем.
        Шановні колеги! Пароль не надсилається електронною поштою.
        """)


@clean("clean-hl7-adt-message-no-credentials")
def _c_hl7(rng):
    return txt(f"""
        MSH|^~\\&|ADT1|GENHOSP|LAB|GENHOSP|2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}{rng.randint(100000, 235959)}||ADT^A01|{digits(rng, 10)}|P|2.5.1
        EVN|A01|2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}
        PID|1||{digits(rng, 8)}^^^GENHOSP^MR||ROE^RICHARD||19700101|M
        PV1|1|I|W3^312^1
        """)


@clean("clean-fhir-capability-statement-smart-urls")
def _c_fhir(rng):
    return out(jd({"resourceType": "CapabilityStatement", "status": "active", "fhirVersion": "4.0.1",
                   "rest": [{"mode": "server", "security": {"extension": [{
                       "url": "http://fhir-registry.smarthealthit.org/StructureDefinition/oauth-uris",
                       "extension": [{"url": "token", "valueUri": "https://auth.ehr.example/token"},
                                     {"url": "authorize", "valueUri": "https://auth.ehr.example/authorize"}]}],
                       "service": [{"text": "SMART-on-FHIR"}]}}],
                   "id": uid(rng)}))[0]


@clean("clean-ldif-hashed-userpassword-ssha")
def _c_ldif(rng):
    return txt(f"""
        dn: uid=jdoe,ou=people,dc=acme,dc=example
        objectClass: inetOrgPerson
        uid: jdoe
        cn: Jane Doe
        userPassword: {{SSHA}}{b64(rng, 24)}
        pwdChangedTime: 2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}120000Z
        """)


@clean("clean-oidc-discovery-and-jwks-public")
def _c_jwks(rng):
    return out(jd({"keys": [{"kty": "RSA", "kid": hexa(rng, 16), "use": "sig", "alg": "RS256", "e": "AQAB",
                             "n": b64url(rng, 256)},
                            {"kty": "EC", "kid": hexa(rng, 16), "crv": "P-256", "x": b64url(rng, 32),
                             "y": b64url(rng, 32)}]}))[0]


@clean("clean-saml-metadata-public-certificate")
def _c_saml(rng):
    return txt(f"""
        <md:EntityDescriptor entityID="https://idp.acme.example/saml" xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata">
          <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
            <md:KeyDescriptor use="signing">
              <ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#">
                <ds:X509Data><ds:X509Certificate>MIIDdzCCAl+gAwIBAgIE{b64(rng, 90)}</ds:X509Certificate></ds:X509Data>
              </ds:KeyInfo>
            </md:KeyDescriptor>
          </md:IDPSSODescriptor>
        </md:EntityDescriptor>
        """)


@clean("clean-krb5-conf-and-klist-output")
def _c_krb(rng):
    return txt(f"""
        $ klist
        Ticket cache: KCM:1000:{digits(rng, 5)}
        Default principal: {who(rng)}@CORP.ACME.EXAMPLE

        Valid starting       Expires              Service principal
        {day(rng)} 08:01:12  {day(rng)} 18:01:12  krbtgt/CORP.ACME.EXAMPLE@CORP.ACME.EXAMPLE
                renew until {day(rng)} 08:01:10
        """)


@clean("clean-ssh-authorized-keys-and-known-hosts")
def _c_ssh(rng):
    return txt(f"""
        # ~/.ssh/authorized_keys
        ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(rng, 24).rstrip('=')} {who(rng)}@laptop
        # ~/.ssh/known_hosts
        |1|{b64(rng, 20)}|{b64(rng, 20)} ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{b64(rng, 60)}
        """)


@clean("clean-gpg-list-keys-fingerprints")
def _c_gpg(rng):
    fp = hexa(rng, 40).upper()
    return txt(f"""
        $ gpg --list-secret-keys --keyid-format=long
        sec   ed25519/{fp[-16:]} {day(rng)} [SC] [expires: 2028-01-01]
              {fp}
        uid                 [ultimate] Acme Release <release@acme.example>
        ssb   cv25519/{hexa(rng, 16).upper()} {day(rng)} [E]
        """)


@clean("clean-sops-k8s-secret-stringdata-enc-with-age-recipient")
def _c_sops(rng):
    return txt(f"""
        stringData:
            RABBITMQ_DEFAULT_PASS: ENC[AES256_GCM,data:{b64(rng, 18)},iv:{b64(rng, 32)},tag:{b64(rng, 16)},type:str]
        sops:
            age:
                - recipient: age1{chars(rng, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)}
            lastmodified: "{when(rng)[:19]}Z"
            mac: ENC[AES256_GCM,data:{b64(rng, 32)},iv:{b64(rng, 32)},tag:{b64(rng, 16)},type:str]
            version: 3.11.0
        """)


@clean("clean-bitwarden-encrypted-export-header")
def _c_bw(rng):
    return out(jd({"encrypted": True, "passwordProtected": True, "salt": b64(rng, 16), "kdfType": 0,
                   "kdfIterations": 600000, "encKeyValidation_DO_NOT_EDIT": "2." + b64(rng, 16) + "|" + b64(rng, 32),
                   "data": "2." + b64(rng, 16) + "|" + b64(rng, 96) + "|" + b64(rng, 32)}))[0]


@clean("clean-django-settings-reads-environ")
def _c_django(rng):
    return txt("""
        DATABASES = {"default": env.db("DATABASE_URL")}
        EMAIL_HOST_PASSWORD = os.environ["EMAIL_HOST_PASSWORD"]
        AUTH_PASSWORD_VALIDATORS = [
            {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
        ]
        PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]
        """)


@clean("clean-rails-database-yml-env-only")
def _c_rails(rng):
    return txt("""
        production:
          <<: *default
          database: shop_production
          username: shop
          password: <%= ENV["SHOP_DATABASE_PASSWORD"] %>
          host: <%= ENV.fetch("DB_HOST", "localhost") %>
        """)


@clean("clean-spring-yml-placeholders-and-vault-refs")
def _c_spring(rng):
    return txt("""
        spring:
          datasource:
            url: jdbc:postgresql://${DB_HOST:localhost}:5432/orders
            username: ${DB_USER}
            password: ${DB_PASSWORD}
          cloud:
            vault:
              kv:
                backend: secret
        app.security.jwt.secret: ${vault.jwt-secret}
        """)


@clean("clean-prisma-schema-env-url")
def _c_prisma(rng):
    return txt("""
        datasource db {
          provider  = "postgresql"
          url       = env("DATABASE_URL")
          directUrl = env("DIRECT_URL")
        }
        model User {
          id           String @id @default(uuid())
          passwordHash String
        }
        """)


@clean("clean-compose-file-docker-secrets")
def _c_compose(rng):
    return txt("""
        services:
          db:
            image: postgres:17
            environment:
              POSTGRES_PASSWORD_FILE: /run/secrets/pg_password
            secrets: [pg_password]
          app:
            command: sh -c 'export DB_PASSWORD="$(cat /run/secrets/pg_password)" && exec ./server'
        secrets:
          pg_password:
            file: ./secrets/pg_password.txt
        """)


@clean("clean-csv-onboarding-sheet-without-passwords")
def _c_csv(rng):
    return txt(f"""
        Name,Start date,Laptop,Email,Temp password,Done?
        {who(rng).capitalize()},{day(rng)},MBP-{digits(rng, 4)},new1@acme.example,(sent via 1Password),TRUE
        {who(rng).capitalize()},{day(rng)},XPS-{digits(rng, 4)},new2@acme.example,********,FALSE
        """)


@clean("clean-ocr-router-sticker-serials-and-mac")
def _c_ocr(rng):
    return txt(f"""
        [tesseract 5.5 output: IMG_{digits(rng, 4)}.HEIC]
        Model: Speedport Smart 4   S/N: {upper(rng, 14)}
        MAC: {":".join(rng.randbytes(1).hex().upper() for _ in range(6))}
        IMEI: {digits(rng, 15)}
        FW: 010139.4.8.005.0
        """)


@clean("clean-git-diff-renames-password-variable")
def _c_diff(rng):
    return txt(f"""
        diff --git a/src/auth/forms.py b/src/auth/forms.py
        index {sha(rng)[:7]}..{sha(rng)[:7]} 100644
        --- a/src/auth/forms.py
        +++ b/src/auth/forms.py
        @@ -8,3 +8,3 @@ class LoginForm(forms.Form):
        -    passwd = forms.CharField(widget=forms.PasswordInput)
        +    password = forms.CharField(widget=forms.PasswordInput, min_length=settings.PASSWORD_MIN_LENGTH)
        """)


@clean("clean-python-traceback-with-redacted-locals")
def _c_tb(rng):
    return txt("""
        Traceback (most recent call last):
          File "/app/sync.py", line 88, in push
            client.login(user, password)
                         │     └ '[REDACTED]'
                         └ 'sync-bot'
        imaplib.IMAP4.error: b'[AUTHENTICATIONFAILED] Invalid credentials (Failure)'
        """)


@clean("clean-kubectl-get-secret-keys-without-values")
def _c_kube(rng):
    return txt(f"""
        $ kubectl describe secret notifier-env
        Name:         notifier-env
        Namespace:    default
        Type:         Opaque

        Data
        ====
        slack_token:   {rng.randint(50, 80)} bytes
        webhook_url:   {rng.randint(60, 120)} bytes
        """)


@clean("clean-base64-of-non-secret-json-config")
def _c_b64(rng):
    payload = base64.b64encode(json.dumps({"theme": "dark", "locale": "pt-BR",
                                           "features": ["keyboard-nav", "passkeys"]}).encode()).decode()
    return txt(f"""
        Set-Cookie: ui_prefs={payload}; Path=/; SameSite=Lax
        X-Request-Id: {uid(rng)}
        ETag: W/"{sha(rng)}"
        """)


@clean("clean-pytest-output-passed-and-keyboard-tests")
def _c_pytest(rng):
    return txt(f"""
        ============================= test session starts ==============================
        collected {rng.randint(100, 400)} items

        tests/test_keyboard_shortcuts.py ........                                [  8%]
        tests/test_password_strength.py ...........                              [ 19%]
        tests/test_tokenizer.py .....                                            [ 24%]
        ======================= {rng.randint(100, 400)} passed in {rng.randint(2, 40)}.{rng.randint(10, 99)}s =======================
        """)


@clean("clean-wireshark-radius-summary-no-secret")
def _c_radius(rng):
    return txt(f"""
        No.  Time      Source        Destination   Protocol Length Info
        {rng.randint(1, 99)}   0.000000  {ip(rng)}  {ip(rng)}  RADIUS   {rng.randint(90, 200)}    Access-Request id={rng.randint(0, 255)}
        {rng.randint(1, 99)}   0.004210  {ip(rng)}  {ip(rng)}  RADIUS   {rng.randint(20, 60)}     Access-Accept id={rng.randint(0, 255)}
            Authenticator: {hexa(rng, 32)}
        """)


@clean("clean-stripe-cli-config-test-publishable-only")
def _c_stripe(rng):
    return txt(f"""
        [default]
          device_name = "{who(rng)}-mbp"
          display_name = "Acme Ltd"
          test_mode_pub_key = "pk_test_{mixed(rng, 99)}"
          test_mode_key_expires_at = "{day(rng)}"
        """)


@clean("clean-masked-keys-in-provider-dashboard-copy")
def _c_masked(rng):
    return txt(f"""
        API keys
        NAME            KEY                         CREATED       LAST USED
        ci-evals        sk-proj-****{lower(rng, 4)}       {day(rng)}    {day(rng)}
        notebook        gsk_****{lower(rng, 4)}           {day(rng)}    never
        prod-router     sk-ant-api03-...{lower(rng, 4)}   {day(rng)}    {day(rng)}
        """)


@clean("clean-iot-device-info-json-serials")
def _c_iot(rng):
    return out(jd({"name": "shellyplus1-" + hexa(rng, 12), "id": "shellyplus1-" + hexa(rng, 12),
                   "mac": hexa(rng, 12).upper(), "model": "SNSW-001X16EU", "gen": 2, "fw_id": "20260115-094500/1.5.1-g" + sha(rng)[:7],
                   "ver": "1.5.1", "app": "Plus1", "auth_en": True, "auth_domain": "shellyplus1-" + hexa(rng, 12)}))[0]


@clean("clean-steam-server-cfg-placeholders")
def _c_game(rng):
    return txt("""
        // server.cfg (template -- real values come from env)
        hostname "Friday Night Frags"
        rcon_password "CHANGE_ME_PLACEHOLDER"
        sv_password ""
        sv_setsteamaccount "<your-gslt-here>"
        """)


@clean("clean-sentry-event-scrubbed-fields")
def _c_sentry(rng):
    return out(jd({"event_id": hexa(rng, 32), "level": "error", "platform": "python",
                   "request": {"url": "https://api.acme.example/login", "method": "POST",
                               "data": {"username": "jdoe", "password": "[Filtered]"},
                               "headers": {"Authorization": "[Filtered]", "User-Agent": "okhttp/4.12.0"}},
                   "_meta": {"request": {"data": {"password": {"": {"rem": [["@password", "s", 0, 10]]}}}}}}))[0]


@clean("clean-modal-and-replicate-docs-snippet-placeholders")
def _c_docs(rng):
    return txt("""
        ## Setup
        ```bash
        modal token set --token-id <token-id> --token-secret <token-secret>
        export REPLICATE_API_TOKEN=r8_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        export GROQ_API_KEY="your-groq-api-key"
        ```
        Replace the placeholders above with your own values; never commit them.
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
