"""The HOLDOUT15 part of the secret corpus: a fifteenth blind part, written after HOLDOUT to HOLDOUT14.

Written blind: its author read only the `Document` type and the corpus docstring, the structure test of the blind
parts and the HOLDOUT14 generator's interface and layout (its registration decorators, `documents(seed)` and
`generate`, its value helpers and its docstring's rules) and the shape names of every earlier part (only to avoid
reusing them); never their documents, nor the detector, its rules, docs, tests, state or figures, and no document
was run through a detector or a redactor. Each document imitates what a real tool, agent, config file, log,
terminal session, HTTP trace, notebook, chat message or person writes in 2026:

- package registries and build tools: .npmrc, .yarnrc.yml, bunfig.toml, .pypirc, pip.conf, uv and Poetry,
  .gem/credentials, Bundler, Cargo credentials.toml, NuGet.Config, Maven settings.xml, gradle.properties,
  Composer auth.json, Go netrc and GOPROXY, .condarc, Artifactory, Nexus, the JFrog CLI, Cloudsmith, GitHub
  Packages, Hex, Pub, CocoaPods trunk, Conan, Helm repositories and Terraform registries;
- CI/CD systems: GitHub Actions logs and workflows, GitLab CI, CircleCI, Jenkins (credentials.xml, console logs,
  JCasC), Buildkite, Drone, Woodpecker, TeamCity, Azure Pipelines, Bitrise, Codemagic, Tekton, Spinnaker,
  Octopus, Concourse, Argo Workflows, Semaphore, Harness and AppVeyor;
- web frameworks' config: wp-config.php, Drupal settings.php, Magento env.php, Laravel .env, Rails
  credentials and database.yml, Django settings.py, Symfony .env.local, Spring application.yml and properties,
  ASP.NET appsettings.json and user-secrets, Express and dotenv, Next.js, Nuxt, Phoenix runtime.exs, Play
  application.conf, Quarkus, Strapi, Ghost, Keycloak, Grafana ini and Joomla configuration.php;
- ML and data tooling: Hugging Face, Weights & Biases, MLflow, Comet, Neptune, Kaggle, DVC remotes, the
  Databricks CLI, dbt profiles.yml, Airflow connections, Dagster, Prefect, Great Expectations, Jupyter outputs
  and notebook JSON, Ray, Modal, Replicate, Together, Fireworks, Groq, Mistral, Cohere, Anyscale, OpenRouter,
  Bedrock, Vertex, DeepSeek, Perplexity, xAI, Label Studio, ClearML and Roboflow;
- networks and devices: WireGuard, OpenVPN, strongSwan, Cisco IOS and ASA, Juniper, MikroTik, pfSense and
  OPNsense XML, UniFi, SNMP, RADIUS, Home Assistant, ESPHome, Tasmota, Zigbee2MQTT, Node-RED, OctoPrint,
  Synology, TrueNAS, hostapd, wpa_supplicant, NetworkManager, Pi-hole and Frigate;
- backups and storage: restic, borg, duplicity, rclone, kopia, Velero, s3cmd, s5cmd, mc alias, Duplicati,
  Proxmox Backup Server and davfs2;
- mail clients and chat bots: Thunderbird prefs, mutt, neomutt, offlineimap, fetchmail, isync/mbsync, aerc,
  himalaya, Matrix and Element, Mattermost, Rocket.Chat, Zulip, ZNC, WeeChat, irssi and Errbot;
- password-manager and browser exports: KeePass XML, 1Password CSV, Bitwarden JSON, LastPass CSV, Chrome and
  Firefox password CSVs, Dashlane, Proton Pass, Enpass and pass;
- environment and process dumps: `env`, `printenv`, /proc/<pid>/environ with NULs shown as ^@, `docker
  inspect`, `ps eww`, `systemctl show-environment`, cmd.exe `set`, PowerShell `Get-ChildItem env:`, and crash
  dumps of Java, .NET, Ruby, PHP, Rust, Elixir and Python with environment sections;
- agent traces: OpenAI Chat Completions and Responses logs with tool-call arguments, Anthropic Messages with
  tool_use input, LangChain and LangGraph run trees, MCP JSON-RPC `tools/call` messages, function-calling
  arguments as escaped JSON strings inside JSON, ReAct scratchpads and shell-tool outputs inside agent logs;
- people writing credentials in more than forty languages and scripts (chat messages, e-mails, tickets, meeting
  notes, voice transcripts, tables, bulleted lists, CSV and TSV sheets), some values with non-ASCII characters.

Layouts vary: `=`, `:`, whitespace and a value on the line after its label; table cells; XML attributes and
elements; YAML block scalars; escaped JSON inside strings; URL userinfo and query strings; command-line flags;
`Authorization` and `X-*-Key` headers; cookies; heredocs; base64-wrapped, quoted-printable and URL-encoded
values.

Each credential document plants one or two values that appear verbatim in its text, each 8 characters or more,
drawn from the seeded `random.Random` and shaped as the vendor's published format where there is one. Every
credential a document holds is planted. Usernames, client/app/key ids, account and project ids, publishable
keys, public keys, hashes, request/trace/span ids, ciphertexts and masked echoes are not planted and, where
present, are not credentials. A base64 `user:password` pair (or any base64-wrapped secret) is planted as its
base64 text; a PEM or OpenSSH private key as its first body line; a URL-encoded or quoted-printable value as
the text that appears.

Clean documents hold no credential but many look-alikes (UUIDs, SHAs, digests, trace and span ids, versions,
checksums, base64 of non-secrets, `max_tokens`, `keyboard`, `passed`, `tokenizer`, `password_min_length`,
env-var and file references, marked placeholders, masked values, password hashes, ciphertexts and public keys).

SEED = 2026120515. `documents(seed)` (alias `generate`) gives one document per credential shape, then the clean
ones: 375 credential shapes planting 449 values, and 59 clean documents.
"""

from __future__ import annotations

import base64
import hashlib
import json
import quopri
import random
import string
import textwrap
import urllib.parse
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 2026120515

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


def out(text: str, *values: str, **blocks: str) -> Made:
    """Dedent a document body, put multi-line `blocks` in place of their `@name@` marks, pair it with its values."""
    body = textwrap.dedent(text).lstrip("\n")
    for name, block in blocks.items():
        body = body.replace(f"@{name}@", block)
    if not body.endswith("\n"):
        body += "\n"
    return body, tuple(values)


def txt(text: str, **blocks: str) -> str:
    return out(text, **blocks)[0]


# ---- value makers -----------------------------------------------------------------------------------------

_AN = string.ascii_letters + string.digits
_LOW = string.ascii_lowercase + string.digits
_UP = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_URLSAFE = _AN + "-_"
_WORDS = tuple(
    """
    anchovy bramble cinder drizzle eucalypt foxglove gondola hazelnut iguana jackal kumquat lilac mango
    nettle oboe paprika quokka rhubarb sequoia tamarind ukulele vanilla wasabi xylem yodel zinnia apricot
    biscuit cactus daffodil emu fennel gazebo hamster igloo jasmine kiwi lobster muffin narwhal oyster
    pelican quiver radish sardine teapot unicorn vulture waffle yak zucchini avocado badger cricket dingo
    eggplant flamingo gopher hyena impala jellyfish koi llama mongoose newt octopus panda quail rooster
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


def symbolic(rng: random.Random, n: int, marks: str = "!#$%*+-=?@^_~") -> str:
    """What a password manager generates: letters, digits and marks."""
    while True:
        v = rng.choice(string.ascii_letters) + chars(rng, _AN + marks * 2, n - 1)
        if (
            any(c in marks for c in v)
            and any(c.isdigit() for c in v)
            and any(c.isupper() for c in v)
            and any(c.islower() for c in v)
        ):
            return v


def safe(rng: random.Random, n: int) -> str:
    """A generated password whose marks survive URLs, XML, JSON, YAML and shell quoting unescaped."""
    return symbolic(rng, n, "-_.~")


def person(rng: random.Random) -> str:
    """What a person picks: a word or two, a number, maybe a mark."""
    w = rng.choice(_WORDS).capitalize()
    if rng.random() < 0.6 or len(w) < 6:
        w += rng.choice(_WORDS).capitalize()
    return w + str(rng.randint(10, 99999)) + rng.choice(["", "!", "?", "#", "$", "*", ".", "%", "+"])


def phrase(rng: random.Random, n: int = 4, sep: str = "-") -> str:
    return sep.join(rng.sample(_WORDS, n)) + sep + str(rng.randint(10, 999))


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


RSA_PKCS8 = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
RSA_PKCS1 = "MIIEpAIBAAKCAQEA"


def basic(usr: str, pw: str) -> str:
    return base64.b64encode(f"{usr}:{pw}".encode()).decode()


def quote(v: str) -> str:
    return urllib.parse.quote(v, safe="")


def qp(v: str) -> str:
    return quopri.encodestring(v.encode()).decode()


def ip(rng: random.Random) -> str:
    return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}"


def lan(rng: random.Random) -> str:
    return f"192.168.{rng.randint(0, 9)}.{rng.randint(2, 254)}"


def when(rng: random.Random) -> str:
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
        f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z"
    )


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


def user(rng: random.Random) -> str:
    first = rng.choice(
        [
            "aino",
            "bruno",
            "cyrus",
            "delia",
            "emeka",
            "fumiko",
            "gael",
            "hiro",
            "ines",
            "jonas",
            "kofi",
            "luz",
            "marek",
            "nilufar",
            "oskar",
            "paola",
            "rustam",
            "selin",
            "teodor",
            "yara",
        ]
    )
    return (
        first
        + rng.choice(["", ".", "_", "-"])
        + rng.choice(["b", "ci", "ops", "build", str(rng.randint(1, 99))])
    )


def jd(obj: object, indent: int | None = 2) -> str:
    return json.dumps(obj, indent=indent, ensure_ascii=False)


def jc(obj: object) -> str:
    """Compact JSON, as a log line or a tool-call `arguments` string holds it."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ---- vendor formats (published prefixes and lengths) ---------------------------------------------------------


def openai_key(rng, kind="proj"):
    return f"sk-{kind}-" + urlsafe(rng, 74) + "T3BlbkFJ" + urlsafe(rng, 74)


def anthropic_key(rng, kind="api03"):
    return f"sk-ant-{kind}-" + urlsafe(rng, 93) + "AA"


def gh_token(rng, prefix="ghp"):
    return f"{prefix}_" + mixed(rng, 36)


def gh_fine(rng):
    return "github_pat_11" + upper(rng, 20) + "_" + mixed(rng, 59)


def gl_token(rng, prefix="glpat"):
    return f"{prefix}-" + urlsafe(rng, 20)


def aws_secret(rng):
    while True:
        v = chars(rng, _AN + "/+", 40)
        if any(c.isdigit() for c in v) and any(c.islower() for c in v) and any(c.isupper() for c in v):
            return v


def aws_id(rng, prefix="AKIA"):
    return prefix + chars(rng, _B32, 16)


def hf_token(rng):
    return "hf_" + chars(rng, string.ascii_letters, 34)


def slack_token(rng, prefix="xoxb"):
    return f"{prefix}-{digits(rng, 12)}-{digits(rng, 13)}-{mixed(rng, 24)}"


def npm_token(rng):
    return "npm_" + mixed(rng, 36)


def pypi_token(rng):
    return "pypi-AgEIcHlwaS5vcmcCJG" + b64url(rng, 30) + "AAIqWzMsIm" + b64url(rng, 42)


def google_key(rng):
    return "AIza" + urlsafe(rng, 35)


def azdo_pat(rng):
    return mixed(rng, 52) + "AAASAZDO" + mixed(rng, 24)


def sa_json(rng, project: str, first: str) -> str:
    """A Google service-account key file; its private key's first body line is `first`."""
    key = pem(rng, first, lines=4)
    email = f"{rng.choice(['trainer', 'vertex-runner', 'etl'])}@{project}.iam.gserviceaccount.com"
    return jd(
        {
            "type": "service_account",
            "project_id": project,
            "private_key_id": hexa(rng, 40),
            "private_key": key + "\n",
            "client_email": email,
            "client_id": digits(rng, 21),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
        }
    )


# ---- credential documents -------------------------------------------------------------------------------------

# -- package registries and build tools --


@cred("npmrc-user-home-two-registries-authtoken-and-github-packages")
def _p_npmrc(rng):
    a, g = npm_token(rng), gh_token(rng)
    return out(
        f"""
        # ~/.npmrc — written by `npm login` and by hand
        registry=https://registry.npmjs.org/
        //registry.npmjs.org/:_authToken={a}
        @{rng.choice(["acme", "northwind", "lumen"])}:registry=https://npm.pkg.github.com
        //npm.pkg.github.com/:_authToken={g}
        fund=false
        audit-level=high
        """,
        a,
        g,
    )


@cred("yarnrc-yml-npm-scopes-npmauthtoken-verdaccio")
def _p_yarnrc(rng):
    t = b64(rng, 24)
    return out(
        f'''
        nodeLinker: node-modules
        enableTelemetry: false
        npmScopes:
          internal:
            npmRegistryServer: "https://verdaccio.int.{rng.choice(["kelp", "orbit", "dune"])}.io"
            npmAlwaysAuth: true
            npmAuthToken: "{t}"
        yarnPath: .yarn/releases/yarn-4.6.0.cjs
        ''',
        t,
    )


@cred("bunfig-toml-install-scopes-token-literal")
def _p_bunfig(rng):
    t = npm_token(rng)
    return out(
        f'''
        [install]
        exact = true

        [install.scopes]
        "@fieldwork" = {{ token = "{t}", url = "https://registry.npmjs.org/" }}
        ''',
        t,
    )


@cred("pypirc-three-index-servers-token-and-devpi-password")
def _p_pypirc(rng):
    t, d = pypi_token(rng), safe(rng, 18)
    return out(
        f"""
        [distutils]
        index-servers =
            pypi
            devpi

        [pypi]
        username = __token__
        password = {t}

        [devpi]
        repository = https://devpi.lab.internal/root/dev/
        username = {user(rng)}
        password = {d}
        """,
        t,
        d,
    )


@cred("pip-conf-extra-index-url-userinfo-gitlab-deploy-token")
def _p_pipconf(rng):
    t = gl_token(rng, "gldt")
    return out(
        f"""
        [global]
        timeout = 60
        index-url = https://pypi.org/simple
        extra-index-url = https://gitlab+deploy-token-{rng.randint(100, 9999)}:{t}@gitlab.example.org/api/v4/projects/{rng.randint(10, 900)}/packages/pypi/simple
        trusted-host = gitlab.example.org
        """,
        t,
    )


@cred("uv-toml-index-and-uv-index-password-env-export")
def _p_uv(rng):
    p = safe(rng, 22)
    return out(
        f"""
        $ cat uv.toml
        [[index]]
        name = "private"
        url = "https://pkgs.corp.example/simple/"
        authenticate = "always"
        $ export UV_INDEX_PRIVATE_USERNAME=ci-reader
        $ export UV_INDEX_PRIVATE_PASSWORD='{p}'
        $ uv sync --frozen
        Resolved 143 packages in 612ms
        """,
        p,
    )


@cred("poetry-config-http-basic-cli-and-auth-toml")
def _p_poetry(rng):
    p = safe(rng, 20)
    return out(
        f'''
        $ poetry config repositories.nexus https://nexus.example.net/repository/pypi-internal/
        $ poetry config http-basic.nexus deployer {p}
        $ cat ~/.config/pypoetry/auth.toml
        [http-basic.nexus]
        username = "deployer"
        password = "{p}"
        ''',
        p,
    )


@cred("gem-credentials-yaml-rubygems-and-github-api-keys")
def _p_gem(rng):
    r, g = "rubygems_" + hexa(rng, 48), gh_token(rng)
    return out(
        f"""
        ---
        :rubygems_api_key: {r}
        https://rubygems.pkg.github.com/{rng.choice(["acme", "hollowtree"])}: Bearer {g}
        """,
        r,
        g,
    )


@cred("bundle-config-contribsys-sidekiq-pro-credentials")
def _p_bundler(rng):
    c = hexa(rng, 8) + ":" + hexa(rng, 8)
    return out(
        f'''
        $ bundle config --local gems.contribsys.com {c}
        $ cat .bundle/config
        ---
        BUNDLE_GEMS__CONTRIBSYS__COM: "{c}"
        BUNDLE_PATH: "vendor/bundle"
        ''',
        c,
    )


@cred("cargo-credentials-toml-crates-io-and-alternate-registry")
def _p_cargo(rng):
    c, k = "cio" + mixed(rng, 32), "Bearer " + urlsafe(rng, 40)
    return out(
        f'''
        # ~/.cargo/credentials.toml
        [registry]
        token = "{c}"

        [registries.kellnr]
        token = "{k}"
        ''',
        c,
        k,
    )


@cred("nuget-config-packagesourcecredentials-cleartextpassword")
def _p_nuget(rng):
    p = azdo_pat(rng)
    return out(
        f'''
        <?xml version="1.0" encoding="utf-8"?>
        <configuration>
          <packageSources>
            <add key="nuget.org" value="https://api.nuget.org/v3/index.json" protocolVersion="3" />
            <add key="contoso-feed" value="https://pkgs.dev.azure.com/contoso/_packaging/shared/nuget/v3/index.json" />
          </packageSources>
          <packageSourceCredentials>
            <contoso-feed>
              <add key="Username" value="az" />
              <add key="ClearTextPassword" value="{p}" />
            </contoso-feed>
          </packageSourceCredentials>
        </configuration>
        ''',
        p,
    )


@cred("dotnet-nuget-push-api-key-flag-console")
def _p_nuget_push(rng):
    k = "oy2" + chars(rng, string.ascii_lowercase + string.digits, 43)
    return out(
        f"""
        PS> dotnet pack -c Release -o out
        PS> dotnet nuget push out/Contoso.Telemetry.4.2.0.nupkg --api-key {k} --source https://api.nuget.org/v3/index.json
        Pushing Contoso.Telemetry.4.2.0.nupkg to 'https://www.nuget.org/api/v2/package'...
          PUT https://www.nuget.org/api/v2/package/
          Created https://www.nuget.org/api/v2/package/ 1893ms
        Your package was pushed.
        """,
        k,
    )


@cred("maven-settings-xml-servers-nexus-and-sonatype-central")
def _p_maven(rng):
    a, b = safe(rng, 16), urlsafe(rng, 44)
    return out(
        f"""
        <settings xmlns="http://maven.apache.org/SETTINGS/1.2.0">
          <servers>
            <server>
              <id>nexus-releases</id>
              <username>release-bot</username>
              <password>{a}</password>
            </server>
            <server>
              <id>central</id>
              <username>{mixed(rng, 8)}</username>
              <password>{b}</password>
            </server>
          </servers>
        </settings>
        """,
        a,
        b,
    )


@cred("gradle-properties-home-artifactory-and-signing-password")
def _p_gradle(rng):
    a, s = "AKCp" + mixed(rng, 69), person(rng)
    return out(
        f"""
        org.gradle.jvmargs=-Xmx4g -Dfile.encoding=UTF-8
        org.gradle.caching=true
        artifactoryUser=gradle-publisher
        artifactoryApiKey={a}
        signing.keyId={hexa(rng, 8).upper()}
        signing.password={s}
        signing.secretKeyRingFile=/home/ci/.gnupg/secring.gpg
        """,
        a,
        s,
    )


@cred("gradle-kts-credentials-block-hardcoded-password")
def _p_gradle_kts(rng):
    p = safe(rng, 19)
    return out(
        f'''
        publishing {{
            repositories {{
                maven {{
                    name = "internal"
                    url = uri("https://repo.intra.example/maven-releases/")
                    credentials {{
                        username = "publisher"
                        password = "{p}" // TODO move to gradle.properties
                    }}
                }}
            }}
        }}
        ''',
        p,
    )


@cred("composer-auth-json-http-basic-github-oauth-pair")
def _p_composer(rng):
    g, p = gh_token(rng, "gho"), mixed(rng, 32)
    return out(
        jd(
            {
                "github-oauth": {"github.com": g},
                "http-basic": {"repo.magento.com": {"username": hexa(rng, 32), "password": p}},
            }
        ),
        g,
        p,
    )


@cred("composer-config-global-bearer-cli")
def _p_composer_bearer(rng):
    t = urlsafe(rng, 40)
    return out(
        f"""
        $ composer config --global bearer.packages.satis.internal {t}
        $ composer install --no-dev -o
        Loading composer repositories with package information
        Installing dependencies from lock file
        """,
        t,
    )


@cred("go-netrc-private-module-and-goprivate-env")
def _p_go_netrc(rng):
    t = gh_token(rng)
    return out(
        f"""
        $ go env -w GOPRIVATE=github.com/{rng.choice(["orbitlabs", "quayside"])}/*
        $ cat ~/.netrc
        machine github.com
            login x-oauth-basic
            password {t}
        $ go mod download
        """,
        t,
    )


@cred("goproxy-athens-url-with-basic-userinfo")
def _p_goproxy(rng):
    p = safe(rng, 17)
    return out(
        f"""
        GOFLAGS=-mod=mod
        GOPROXY=https://gomod:{p}@athens.build.internal,https://proxy.golang.org,direct
        GONOSUMDB=git.build.internal
        """,
        p,
    )


@cred("condarc-channel-alias-token-and-custom-channels")
def _p_condarc(rng):
    t = "t/" + lower(rng, 32)
    return out(
        f"""
        channels:
          - conda-forge
          - defaults
        channel_alias: https://conda.anaconda.org/{t}
        custom_channels:
          internal: https://conda.corp.example
        ssl_verify: true
        """,
        t,
    )


@cred("jfrog-cli-config-add-access-token-flag")
def _p_jfrog(rng):
    t = "cmVmdGtuOjAxOjE3" + b64url(rng, 36)
    return out(
        f"""
        $ jf config add rt-prod --url=https://acme.jfrog.io --user=ci-bot --access-token={t} --interactive=false
        $ jf rt ping --server-id=rt-prod
        OK
        """,
        t,
    )


@cred("artifactory-curl-x-jfrog-art-api-header-deploy")
def _p_artifactory_curl(rng):
    k = "AKCp" + mixed(rng, 69)
    return out(
        f'''
        curl -sS -H "X-JFrog-Art-Api: {k}" \\
             -T build/libs/ledger-2.14.0.jar \\
             "https://artifacts.example.com/artifactory/libs-release-local/com/example/ledger/2.14.0/ledger-2.14.0.jar"
        {{"repo":"libs-release-local","path":"/com/example/ledger/2.14.0/ledger-2.14.0.jar","checksums":{{"sha1":"{sha(rng)}"}}}}
        ''',
        k,
    )


@cred("nexus-repository-admin-password-file-and-rest-call")
def _p_nexus(rng):
    p = uid(rng)
    return out(
        f"""
        $ docker exec nexus cat /nexus-data/admin.password
        {p}
        $ curl -u admin:{p} -X PUT http://localhost:8081/service/rest/v1/security/anonymous -H 'Content-Type: application/json' -d '{{"enabled":false}}'
        """,
        p,
    )


@cred("cloudsmith-cli-credentials-ini-api-key")
def _p_cloudsmith(rng):
    k = hexa(rng, 40)
    return out(
        f"""
        ; ~/.config/cloudsmith/credentials.ini
        [default]
        api_key = {k}
        """,
        k,
    )


@cred("github-packages-docker-login-stdin-echo-classic-pat")
def _p_ghcr(rng):
    t = gh_token(rng)
    return out(
        f"""
        $ echo {t} | docker login ghcr.io -u {user(rng)} --password-stdin
        Login Succeeded
        $ docker push ghcr.io/acme/worker:1.9.3
        """,
        t,
    )


@cred("hex-mix-config-api-key-write-access")
def _p_hex(rng):
    k = hexa(rng, 32)
    return out(
        f"""
        $ mix hex.config api_key {k}
        $ mix hex.publish --yes
        Building telemetry_cascade 0.8.1
        """,
        k,
    )


@cred("dart-pub-token-add-env-and-pub-tokens-json")
def _p_pub(rng):
    t = urlsafe(rng, 48)
    return out(
        jd(
            {
                "version": 1,
                "hosted": [{"url": "https://dart.cloudsmith.io/acme/flutter-private/", "token": t}],
            }
        ),
        t,
    )


@cred("cocoapods-trunk-netrc-session-token")
def _p_pods(rng):
    t = hexa(rng, 32)
    return out(
        f"""
        machine trunk.cocoapods.org
          login release@{rng.choice(["mosaic", "brightline"])}.app
          password {t}
        """,
        t,
    )


@cred("conan-remote-login-password-flag")
def _p_conan(rng):
    p = safe(rng, 15)
    return out(
        f"""
        $ conan remote add artifactory https://conan.example.io/artifactory/api/conan/conan-local
        $ conan remote login artifactory ci-uploader -p {p}
        Changed user of remote 'artifactory' from 'None' (anonymous) to 'ci-uploader' (authenticated)
        """,
        p,
    )


@cred("helm-repo-add-chartmuseum-username-password")
def _p_helm_repo(rng):
    p = safe(rng, 20)
    return out(
        f"""
        $ helm repo add internal https://charts.platform.example --username chartbot --password {p}
        "internal" has been added to your repositories
        $ helm repo update
        """,
        p,
    )


@cred("terraformrc-credentials-block-private-registry")
def _p_terraformrc(rng):
    t = mixed(rng, 14) + ".atlasv1." + mixed(rng, 67)
    return out(
        f'''
        # ~/.terraformrc
        plugin_cache_dir = "$HOME/.terraform.d/plugin-cache"
        credentials "app.terraform.io" {{
          token = "{t}"
        }}
        ''',
        t,
    )


@cred("pnpm-publish-npm-config-userconfig-heredoc")
def _p_pnpm_heredoc(rng):
    t = npm_token(rng)
    return out(
        f"""
        cat > "$RUNNER_TEMP/.npmrc" <<EOF
        //registry.npmjs.org/:_authToken={t}
        provenance=true
        EOF
        pnpm -r publish --access public --no-git-checks
        """,
        t,
    )


@cred("sbt-credentials-file-realm-host-password")
def _p_sbt(rng):
    p = safe(rng, 18)
    return out(
        f"""
        realm=Sonatype Nexus Repository Manager
        host=nexus.scala.internal
        user=sbt-release
        password={p}
        """,
        p,
    )


@cred("twine-upload-command-line-password-flag")
def _p_twine(rng):
    t = pypi_token(rng)
    return out(
        f"""
        $ python -m build
        Successfully built quiltlib-0.9.0.tar.gz and quiltlib-0.9.0-py3-none-any.whl
        $ twine upload -u __token__ -p {t} dist/*
        Uploading distributions to https://upload.pypi.org/legacy/
        Uploading quiltlib-0.9.0-py3-none-any.whl
        100% ━━━━━━━━━━━━━━━━━━━━ 21.3/21.3 kB • 00:00
        """,
        t,
    )


@cred("deno-auth-tokens-env-multiple-hosts")
def _p_deno(rng):
    a, b = urlsafe(rng, 32), safe(rng, 14)
    return out(
        f"""
        DENO_AUTH_TOKENS={a}@deno.land.mirror.internal;jsr-reader:{b}@jsr.corp.example
        """,
        a,
        b,
    )


@cred("vcpkg-nuget-binary-cache-sources-env-password")
def _p_vcpkg(rng):
    p = azdo_pat(rng)
    return out(
        f"""
        set VCPKG_BINARY_SOURCES=clear;nuget,https://pkgs.dev.azure.com/fabrikam/_packaging/vcpkg/nuget/v3/index.json,readwrite
        nuget sources add -Name vcpkg -Source https://pkgs.dev.azure.com/fabrikam/_packaging/vcpkg/nuget/v3/index.json -Username vcpkg -Password {p} -StorePasswordInClearText
        """,
        p,
    )


# -- CI/CD systems --


@cred("gha-workflow-env-block-hardcoded-deploy-token")
def _ci_gha_env(rng):
    t = "dp.st.prd." + mixed(rng, 43)
    return out(
        f"""
        name: deploy
        on:
          push:
            branches: [main]
        env:
          DOPPLER_TOKEN: {t}
          NODE_VERSION: "22"
        jobs:
          deploy:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@v4
              - run: doppler run -- npm run deploy
        """,
        t,
    )


@cred("gha-run-log-curl-with-expanded-bearer-token")
def _ci_gha_log(rng):
    t = "sntrys_" + b64url(rng, 60) + "_" + urlsafe(rng, 43)
    return out(
        f'''
        {when(rng)} ##[group]Run curl -sf -X POST https://sentry.io/api/0/organizations/acme/releases/ \\
        {when(rng)}   -H "Authorization: Bearer {t}" \\
        {when(rng)}   -d '{{"version":"{sha(rng)[:12]}","projects":["web"]}}'
        {when(rng)} ##[endgroup]
        {when(rng)} {{"id":{rng.randint(10**8, 10**9)},"version":"{sha(rng)[:12]}","status":"open"}}
        ''',
        t,
    )


@cred("gha-with-inputs-action-password-literal")
def _ci_gha_with(rng):
    p = safe(rng, 21)
    return out(
        f"""
              - name: Upload over SFTP
                uses: wlixcc/SFTP-Deploy-Action@v1.2.5
                with:
                  server: ftp.hostingpro.example
                  username: deploy_web
                  password: '{p}'
                  local_path: './dist/*'
                  remote_path: '/var/www/html'
        """,
        p,
    )


@cred("gha-debug-log-set-output-echo-unmasked")
def _ci_gha_debug(rng):
    t = gh_token(rng, "ghs")
    return out(
        f"""
        ##[debug]Evaluating condition for step: 'Generate app token'
        ##[debug]Set output token = {t}
        ##[debug]Finishing: Generate app token
        """,
        t,
    )


@cred("gitlab-ci-yml-variables-inline-registry-password")
def _ci_gitlab(rng):
    p = gl_token(rng)
    return out(
        f'''
        variables:
          DOCKER_DRIVER: overlay2
          REGISTRY_USER: ci-pusher
          REGISTRY_PASSWORD: "{p}"
        build:
          image: docker:27
          services: [docker:27-dind]
          script:
            - echo "$REGISTRY_PASSWORD" | docker login registry.gitlab.com -u "$REGISTRY_USER" --password-stdin
            - docker build -t registry.gitlab.com/acme/api:$CI_COMMIT_SHORT_SHA .
        ''',
        p,
    )


@cred("gitlab-runner-config-toml-glrt-token-docker-executor")
def _ci_gitlab_runner(rng):
    t = "glrt-" + urlsafe(rng, 26)
    return out(
        f'''
        concurrent = 4
        check_interval = 0

        [[runners]]
          name = "build-{rng.randint(1, 40)}"
          url = "https://gitlab.example.com"
          id = {rng.randint(100, 9999)}
          token = "{t}"
          token_obtained_at = {when(rng)[:19]}Z
          executor = "docker"
          [runners.docker]
            image = "alpine:3.21"
            privileged = true
        ''',
        t,
    )


@cred("gitlab-trigger-pipeline-curl-form-token")
def _ci_gitlab_trigger(rng):
    t = "glptt-" + hexa(rng, 40)
    return out(
        f"""
        curl -X POST --fail -F token={t} -F ref=main -F "variables[DEPLOY_ENV]=staging" \\
          https://gitlab.example.com/api/v4/projects/{rng.randint(10, 999)}/trigger/pipeline
        """,
        t,
    )


@cred("circleci-cli-setup-token-and-context-env")
def _ci_circle(rng):
    t = "CCIPAT_" + mixed(rng, 22) + "_" + hexa(rng, 40)
    return out(
        f"""
        $ circleci setup --no-prompt --host https://circleci.com --token {t}
        Token has been set.
        $ circleci context store-secret github acme deploy SLACK_WEBHOOK < webhook.txt
        """,
        t,
    )


@cred("circleci-config-docker-auth-literal-password")
def _ci_circle_auth(rng):
    p = "dckr_pat_" + urlsafe(rng, 27)
    return out(
        f"""
        version: 2.1
        jobs:
          test:
            docker:
              - image: acme/ci-python:3.13
                auth:
                  username: acmeci
                  password: {p}
            steps:
              - checkout
              - run: pytest -q
        """,
        p,
    )


@cred("jenkins-credentials-xml-usernamepassword-and-string")
def _ci_jenkins_xml(rng):
    a, b = safe(rng, 18), "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    return out(
        f"""
        <?xml version='1.1' encoding='UTF-8'?>
        <com.cloudbees.plugins.credentials.SystemCredentialsProvider plugin="credentials@1389.vd7a_b_f5fa_50a_2">
          <domainCredentialsMap class="hudson.util.CopyOnWriteMap$Hash">
            <entry>
              <com.cloudbees.plugins.credentials.domains.Domain><specifications/></com.cloudbees.plugins.credentials.domains.Domain>
              <java.util.concurrent.CopyOnWriteArrayList>
                <com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>
                  <scope>GLOBAL</scope>
                  <id>nexus-deploy</id>
                  <username>deployer</username>
                  <password>{a}</password>
                </com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>
                <org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>
                  <id>slack-bot</id>
                  <secret>{b}</secret>
                </org.jenkinsci.plugins.plaincredentials.impl.StringCredentialsImpl>
              </java.util.concurrent.CopyOnWriteArrayList>
            </entry>
          </domainCredentialsMap>
        </com.cloudbees.plugins.credentials.SystemCredentialsProvider>
        """,
        a,
        b,
    )


@cred("jenkins-console-output-set-x-leaks-curl-user")
def _ci_jenkins_console(rng):
    p = safe(rng, 16)
    return out(
        f"""
        Started by user release-manager
        Running as SYSTEM
        [Pipeline] sh
        + set -x
        + curl -sf -u deploy:{p} -X POST https://tomcat.int.example/manager/text/deploy?path=/billing&update=true -T target/billing.war
        OK - Deployed application at context path [/billing]
        [Pipeline] }}
        Finished: SUCCESS
        """,
        p,
    )


@cred("jenkins-api-token-remote-build-trigger-url")
def _ci_jenkins_token(rng):
    t = "11" + hexa(rng, 32)
    return out(
        f"""
        curl -X POST "https://ci.example.org/job/nightly-etl/buildWithParameters?DATE=$(date +%F)" \\
             --user svc-scheduler:{t}
        """,
        t,
    )


@cred("jenkins-casc-yaml-credentials-basicssh-private-key")
def _ci_jcasc(rng):
    first = pem_first(rng, RSA_PKCS1)
    key = pem(rng, first, "RSA PRIVATE KEY", 5)
    body = "\n".join("                    " + line for line in key.split("\n"))
    return out(
        """
        credentials:
          system:
            domainCredentials:
              - credentials:
                  - basicSSHUserPrivateKey:
                      scope: GLOBAL
                      id: "git-deploy-key"
                      username: "git"
                      privateKeySource:
                        directEntry:
                          privateKey: |
        @KEY@
        """,
        first,
        KEY=body,
    )


@cred("buildkite-agent-cfg-token-and-pipeline-upload")
def _ci_buildkite(rng):
    t = hexa(rng, 50)
    return out(
        f'''
        # /etc/buildkite-agent/buildkite-agent.cfg
        token="{t}"
        name="%hostname-%spawn"
        tags="queue=default,os=linux"
        build-path="/var/lib/buildkite-agent/builds"
        ''',
        t,
    )


@cred("buildkite-api-access-token-graphql-curl")
def _ci_buildkite_api(rng):
    t = "bkua_" + hexa(rng, 40)
    return out(
        f"""
        curl -H "Authorization: Bearer {t}" https://graphql.buildkite.com/v1 \\
          -d '{{"query":"{{ viewer {{ user {{ name }} }} }}"}}'
        """,
        t,
    )


@cred("drone-cli-env-server-and-token-exports")
def _ci_drone(rng):
    t = mixed(rng, 32)
    return out(
        f"""
        export DRONE_SERVER=https://drone.lab.example
        export DRONE_TOKEN={t}
        drone info
        User: {user(rng)}
        """,
        t,
    )


@cred("woodpecker-server-env-agent-secret-and-forge-secret")
def _ci_woodpecker(rng):
    a, b = hexa(rng, 64), "gto_" + lower(rng, 40)
    return out(
        f"""
        WOODPECKER_HOST=https://ci.homelab.example
        WOODPECKER_AGENT_SECRET={a}
        WOODPECKER_GITEA=true
        WOODPECKER_GITEA_URL=https://git.homelab.example
        WOODPECKER_GITEA_CLIENT={uid(rng)}
        WOODPECKER_GITEA_SECRET={b}
        """,
        a,
        b,
    )


@cred("teamcity-rest-bearer-token-build-queue")
def _ci_teamcity(rng):
    t = "eyJ0eXAiOiAiVENWMiJ9." + urlsafe(rng, 43) + "." + b64url(rng, 48)
    return out(
        f"""
        POST /app/rest/buildQueue HTTP/1.1
        Host: teamcity.example.com
        Authorization: Bearer {t}
        Content-Type: application/xml

        <build><buildType id="Backend_Release"/></build>
        """,
        t,
    )


@cred("teamcity-kotlin-dsl-password-parameter-credentialsjson-miss")
def _ci_teamcity_dsl(rng):
    p = safe(rng, 18)
    return out(
        f'''
        object Deploy : BuildType({{
            name = "Deploy"
            params {{
                password("env.SFTP_PASSWORD", "{p}", display = ParameterDisplay.HIDDEN)
                param("env.SFTP_HOST", "files.example.com")
            }}
        }})
        ''',
        p,
    )


@cred("azure-pipelines-yml-variable-literal-pat")
def _ci_azp(rng):
    p = azdo_pat(rng)
    return out(
        f"""
        trigger: [main]
        pool:
          vmImage: ubuntu-latest
        variables:
          - name: AZDO_PAT
            value: {p}
        steps:
          - script: az devops login --organization https://dev.azure.com/fabrikam <<< "$(AZDO_PAT)"
        """,
        p,
    )


@cred("azure-devops-git-extraheader-basic-base64")
def _ci_azdo_header(rng):
    h = basic("", azdo_pat(rng))
    return out(
        f"""
        ##[command]git -c http.extraheader="AUTHORIZATION: basic {h}" fetch --force --tags --prune --progress --no-recurse-submodules origin
        remote: Azure Repos
        remote: Found 412 objects to send. (24 ms)
        """,
        h,
    )


@cred("bitrise-yml-app-env-literal-and-cli-trigger")
def _ci_bitrise(rng):
    t = urlsafe(rng, 86)
    return out(
        f"""
        $ curl -X POST https://api.bitrise.io/v0.1/apps/{hexa(rng, 16)}/builds \\
            -H "Authorization: {t}" \\
            -d '{{"build_params":{{"branch":"release/5.2"}},"hook_info":{{"type":"bitrise"}}}}'
        """,
        t,
    )


@cred("codemagic-api-x-auth-token-start-build")
def _ci_codemagic(rng):
    t = urlsafe(rng, 43)
    return out(
        f'''
        curl -H "Content-Type: application/json" -H "x-auth-token: {t}" \\
          --data '{{"appId":"{hexa(rng, 24)}","workflowId":"ios-release","branch":"main"}}' \\
          -X POST https://api.codemagic.io/builds
        ''',
        t,
    )


@cred("tekton-secret-basic-auth-annotated-git")
def _ci_tekton(rng):
    p = gh_token(rng)
    return out(
        f"""
        apiVersion: v1
        kind: Secret
        metadata:
          name: git-basic
          annotations:
            tekton.dev/git-0: https://github.com
        type: kubernetes.io/basic-auth
        stringData:
          username: tekton-bot
          password: {p}
        """,
        p,
    )


@cred("spinnaker-halyard-docker-registry-password-command")
def _ci_spinnaker(rng):
    p = safe(rng, 20)
    return out(
        f"""
        $ echo '{p}' | hal config provider docker-registry account add harbor \\
            --address harbor.example.com --username robot$spinnaker --password-stdin
        + Get current deployment
          Success
        + Add the harbor account
          Success
        """,
        p,
    )


@cred("octopus-cli-api-key-create-release")
def _ci_octopus(rng):
    k = "API-" + upper(rng, 27)
    return out(
        f"""
        octo create-release --project "Payments API" --version 3.8.1 \\
          --server https://octopus.example.com --apiKey {k} --deployTo Staging --progress
        """,
        k,
    )


@cred("concourse-fly-vars-file-credentials-yml")
def _ci_concourse(rng):
    a, b = safe(rng, 18), mixed(rng, 40)
    return out(
        f"""
        # credentials.yml  (fly -t main set-pipeline -p app -c pipeline.yml -l credentials.yml)
        registry-username: concourse
        registry-password: {a}
        s3-access-key-id: {aws_id(rng)}
        s3-secret-access-key: {b}
        """,
        a,
        b,
    )


@cred("argo-workflows-argo-token-env-bearer")
def _ci_argo(rng):
    t = jwt(
        rng,
        {
            "iss": "kubernetes/serviceaccount",
            "kubernetes.io/serviceaccount/namespace": "argo",
            "sub": "system:serviceaccount:argo:ci-submitter",
        },
        "RS256",
    )
    return out(
        f"""
        $ export ARGO_SERVER=argo.ci.example:443
        $ export ARGO_TOKEN="Bearer {t}"
        $ argo submit --from workflowtemplate/nightly -n argo
        """,
        t,
    )


@cred("semaphore-sem-connect-token-cli")
def _ci_semaphore(rng):
    t = lower(rng, 20)
    return out(
        f"""
        $ sem connect acme.semaphoreci.com {t}
        connected to acme.semaphoreci.com
        """,
        t,
    )


@cred("harness-delegate-yaml-delegate-token")
def _ci_harness(rng):
    t = b64(rng, 30)
    return out(
        f"""
        env:
          - name: ACCOUNT_ID
            value: {urlsafe(rng, 22)}
          - name: DELEGATE_TOKEN
            value: {t}
          - name: MANAGER_HOST_AND_PORT
            value: https://app.harness.io
        """,
        t,
    )


@cred("appveyor-yml-secure-and-plain-nuget-key")
def _ci_appveyor(rng):
    k = "oy2" + chars(rng, string.ascii_lowercase + string.digits, 43)
    return out(
        f"""
        deploy:
          - provider: NuGet
            api_key: {k}
            skip_symbols: false
            on:
              branch: master
        """,
        k,
    )


@cred("github-actions-runner-config-sh-registration-token")
def _ci_runner_reg(rng):
    t = upper(rng, 29)
    return out(
        f"""
        $ ./config.sh --url https://github.com/acme/infra --token {t} --labels self-hosted,arm64 --unattended
        --------------------------------------------------------------------------------
        |        ____ _ _   _   _       _          _        _   _                      |
        # Authentication
        √ Connected to GitHub
        """,
        t,
    )


@cred("gitea-actions-act-runner-register-token")
def _ci_gitea(rng):
    t = mixed(rng, 40)
    return out(
        f"""
        act_runner register --no-interactive --instance https://gitea.example.net --token {t} --name rpi5-runner
        INFO Registering runner, arch=arm64, os=linux, version=v0.2.11.
        INFO Runner registered successfully.
        """,
        t,
    )


@cred("cloud-build-substitution-literal-sonar-token")
def _ci_cloudbuild(rng):
    t = "squ_" + hexa(rng, 40)
    return out(
        f"""
        steps:
          - name: sonarsource/sonar-scanner-cli
            args:
              - -Dsonar.host.url=https://sonar.example.com
              - -Dsonar.token={t}
              - -Dsonar.projectKey=storefront
        """,
        t,
    )


# -- web frameworks' config --


@cred("wp-config-php-db-password-and-auth-salts-excerpt")
def _w_wp(rng):
    p, k = person(rng), symbolic(rng, 64, "!#%*+-=?@^_~[]<>|:;,.")
    return out(
        f"""
        <?php
        define( 'DB_NAME', 'wp_{rng.choice(["bakery", "clinic", "garage"])}' );
        define( 'DB_USER', 'wp_user' );
        define( 'DB_PASSWORD', '{p}' );
        define( 'DB_HOST', 'localhost' );
        define( 'DB_CHARSET', 'utf8mb4' );
        define( 'AUTH_KEY',         '{k}' );
        $table_prefix = 'wp_';
        """,
        p,
        k,
    )


@cred("drupal-settings-php-databases-array-and-hash-salt")
def _w_drupal(rng):
    p, s = safe(rng, 20), b64url(rng, 55)
    return out(
        f"""
        $databases['default']['default'] = [
          'database' => 'drupal10',
          'username' => 'drupal',
          'password' => '{p}',
          'host' => 'mariadb',
          'port' => '3306',
          'driver' => 'mysql',
          'prefix' => '',
        ];
        $settings['hash_salt'] = '{s}';
        """,
        p,
        s,
    )


@cred("magento-env-php-crypt-key-and-db-connection")
def _w_magento(rng):
    k, p = "base64" + b64(rng, 32), safe(rng, 18)
    return out(
        f"""
        <?php
        return [
            'crypt' => [
                'key' => '{k}'
            ],
            'db' => [
                'connection' => [
                    'default' => [
                        'host' => 'db',
                        'dbname' => 'magento',
                        'username' => 'magento',
                        'password' => '{p}',
                        'active' => '1'
                    ]
                ]
            ],
        ];
        """,
        k,
        p,
    )


@cred("laravel-dotenv-app-key-and-mail-password")
def _w_laravel(rng):
    k, m = "base64:" + b64(rng, 32), mixed(rng, 16)
    return out(
        f"""
        APP_NAME=Ledgerly
        APP_ENV=production
        APP_KEY={k}
        APP_DEBUG=false
        DB_CONNECTION=pgsql
        DB_PASSWORD=${{LEDGERLY_DB_PASSWORD}}
        MAIL_MAILER=smtp
        MAIL_HOST=smtp.mailtrap.io
        MAIL_USERNAME={hexa(rng, 14)}
        MAIL_PASSWORD={m}
        """,
        k,
        m,
    )


@cred("rails-credentials-edit-decrypted-yaml-secret-key-base")
def _w_rails_creds(rng):
    s, a = hexa(rng, 128), "sk_live_51" + mixed(rng, 97)
    return out(
        f"""
        $ EDITOR=cat bin/rails credentials:show
        secret_key_base: {s}
        stripe:
          secret_key: {a}
          publishable_key: pk_live_51{mixed(rng, 97)}
        """,
        s,
        a,
    )


@cred("rails-database-yml-production-password-literal")
def _w_rails_db(rng):
    p = safe(rng, 22)
    return out(
        f"""
        default: &default
          adapter: postgresql
          encoding: unicode
          pool: <%= ENV.fetch("RAILS_MAX_THREADS") {{ 5 }} %>

        production:
          <<: *default
          database: shop_production
          username: shop
          password: {p}
          host: pg-primary.internal
        """,
        p,
    )


@cred("django-settings-py-secret-key-and-email-host-password")
def _w_django(rng):
    s, e = "django-insecure-" + symbolic(rng, 50, "!@#$%^&*(-_=+)"), mixed(rng, 16)
    return out(
        f'''
        from pathlib import Path

        BASE_DIR = Path(__file__).resolve().parent.parent
        SECRET_KEY = "{s}"
        DEBUG = False
        AUTH_PASSWORD_VALIDATORS = [{{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}}]
        EMAIL_HOST = "smtp.gmail.com"
        EMAIL_HOST_USER = "noreply@rosterly.app"
        EMAIL_HOST_PASSWORD = "{e}"
        ''',
        s,
        e,
    )


@cred("django-databases-dict-options-sslmode-password")
def _w_django_db(rng):
    p = person(rng)
    return out(
        f'''
        DATABASES = {{
            "default": {{
                "ENGINE": "django.db.backends.postgresql",
                "NAME": "inventory",
                "USER": "inventory_app",
                "PASSWORD": "{p}",
                "HOST": "10.20.0.15",
                "OPTIONS": {{"sslmode": "require"}},
            }}
        }}
        ''',
        p,
    )


@cred("symfony-env-local-app-secret-and-database-url")
def _w_symfony(rng):
    s, p = hexa(rng, 32), safe(rng, 16)
    return out(
        f"""
        ###> symfony/framework-bundle ###
        APP_ENV=prod
        APP_SECRET={s}
        ###< symfony/framework-bundle ###
        ###> doctrine/doctrine-bundle ###
        DATABASE_URL="mysql://app:{p}@127.0.0.1:3306/app?serverVersion=8.0.37&charset=utf8mb4"
        ###< doctrine/doctrine-bundle ###
        """,
        s,
        p,
    )


@cred("spring-boot-application-yml-datasource-plus-app-jwt-secret")
def _w_spring_yml(rng):
    p, j = safe(rng, 18), b64(rng, 48)
    return out(
        f"""
        spring:
          datasource:
            url: jdbc:postgresql://db.internal:5432/orders
            username: orders_svc
            password: {p}
          jpa:
            hibernate:
              ddl-auto: validate
        app:
          security:
            jwt:
              secret: {j}
              expiration-ms: 3600000
        """,
        p,
        j,
    )


@cred("spring-application-properties-mail-and-oauth-client-secret")
def _w_spring_props(rng):
    m, c = mixed(rng, 16), "GOCSPX-" + urlsafe(rng, 28)
    return out(
        f"""
        spring.mail.host=smtp.office365.com
        spring.mail.port=587
        spring.mail.username=alerts@contoso.example
        spring.mail.password={m}
        spring.security.oauth2.client.registration.google.client-id={digits(rng, 12)}-{lower(rng, 32)}.apps.googleusercontent.com
        spring.security.oauth2.client.registration.google.client-secret={c}
        """,
        m,
        c,
    )


@cred("aspnet-appsettings-json-connectionstrings-and-jwt-key")
def _w_aspnet(rng):
    p, k = safe(rng, 20), b64(rng, 32)
    return out(
        jd(
            {
                "Logging": {"LogLevel": {"Default": "Information"}},
                "ConnectionStrings": {
                    "Default": f"Server=tcp:sql-prod.database.windows.net,1433;Initial Catalog="
                    f"Billing;User ID=billing_app;Password={p};Encrypt=True;"
                },
                "Jwt": {"Issuer": "https://billing.contoso.example", "Key": k},
                "AllowedHosts": "*",
            }
        ),
        p,
        k,
    )


@cred("dotnet-user-secrets-list-output")
def _w_user_secrets(rng):
    a, b = "SG." + urlsafe(rng, 22) + "." + urlsafe(rng, 43), safe(rng, 16)
    return out(
        f"""
        PS C:\\src\\Portal> dotnet user-secrets list
        SendGrid:ApiKey = {a}
        ConnectionStrings:Redis = portal-cache.redis.cache.windows.net:6380,password={b},ssl=True,abortConnect=False
        Features:Beta = true
        """,
        a,
        b,
    )


@cred("express-dotenv-session-secret-and-mongo-uri")
def _w_express(rng):
    s, p = hexa(rng, 64), safe(rng, 16)
    return out(
        f"""
        PORT=3000
        SESSION_SECRET={s}
        MONGODB_URI=mongodb+srv://api:{p}@cluster0.{lower(rng, 5)}.mongodb.net/app?retryWrites=true&w=majority
        CORS_ORIGIN=https://app.example.com
        """,
        s,
        p,
    )


@cred("nextjs-env-local-nextauth-secret-and-github-secret")
def _w_next(rng):
    s, g = b64(rng, 32), hexa(rng, 40)
    return out(
        f"""
        # .env.local
        NEXTAUTH_URL=http://localhost:3000
        NEXTAUTH_SECRET={s}
        AUTH_GITHUB_ID=Ov23li{mixed(rng, 14)}
        AUTH_GITHUB_SECRET={g}
        NEXT_PUBLIC_POSTHOG_KEY=phc_{mixed(rng, 43)}
        """,
        s,
        g,
    )


@cred("nuxt-config-ts-runtimeconfig-private-literal")
def _w_nuxt(rng):
    k = "re_" + urlsafe(rng, 32)
    return out(
        f"""
        export default defineNuxtConfig({{
          runtimeConfig: {{
            resendApiKey: '{k}',
            public: {{ siteUrl: 'https://shop.example' }},
          }},
          modules: ['@nuxt/ui'],
        }})
        """,
        k,
    )


@cred("phoenix-runtime-exs-secret-key-base-and-repo-url")
def _w_phoenix(rng):
    s, p = b64(rng, 48), safe(rng, 18)
    return out(
        f'''
        import Config

        if config_env() == :prod do
          config :chatter, Chatter.Repo,
            url: "ecto://chatter:{p}@db.internal/chatter_prod",
            pool_size: 10

          config :chatter, ChatterWeb.Endpoint,
            secret_key_base: "{s}"
        end
        ''',
        s,
        p,
    )


@cred("play-application-conf-http-secret-and-db-password")
def _w_play(rng):
    s, p = mixed(rng, 64), person(rng)
    return out(
        f'''
        play.http.secret.key = "{s}"
        db.default.driver = org.postgresql.Driver
        db.default.url = "jdbc:postgresql://localhost/catalog"
        db.default.username = catalog
        db.default.password = "{p}"
        ''',
        s,
        p,
    )


@cred("quarkus-application-properties-oidc-credentials-secret")
def _w_quarkus(rng):
    s = mixed(rng, 32)
    return out(
        f"""
        quarkus.oidc.auth-server-url=https://sso.example.com/realms/internal
        quarkus.oidc.client-id=claims-service
        quarkus.oidc.credentials.secret={s}
        quarkus.http.port=8080
        """,
        s,
    )


@cred("strapi-env-admin-jwt-and-api-token-salt")
def _w_strapi(rng):
    a, b = b64(rng, 16), b64(rng, 16)
    return out(
        f"""
        HOST=0.0.0.0
        PORT=1337
        APP_KEYS=toBeModified1,toBeModified2
        ADMIN_JWT_SECRET={a}
        API_TOKEN_SALT={b}
        """,
        a,
        b,
    )


@cred("ghost-config-production-json-mail-auth-pass")
def _w_ghost(rng):
    p = hexa(rng, 32) + "-" + hexa(rng, 8) + "-" + hexa(rng, 8)
    return out(
        jd(
            {
                "url": "https://blog.example.org",
                "server": {"port": 2368, "host": "127.0.0.1"},
                "mail": {
                    "transport": "SMTP",
                    "options": {
                        "service": "Mailgun",
                        "host": "smtp.eu.mailgun.org",
                        "port": 465,
                        "secure": True,
                        "auth": {"user": "postmaster@mg.example.org", "pass": p},
                    },
                },
            }
        ),
        p,
    )


@cred("keycloak-conf-db-password-and-bootstrap-admin")
def _w_keycloak(rng):
    a, b = safe(rng, 20), safe(rng, 16)
    return out(
        f"""
        # conf/keycloak.conf
        db=postgres
        db-username=keycloak
        db-password={a}
        db-url=jdbc:postgresql://pg.internal/keycloak
        hostname=sso.example.com
        # first boot only
        bootstrap-admin-username=admin
        bootstrap-admin-password={b}
        """,
        a,
        b,
    )


@cred("grafana-ini-security-admin-password-and-smtp")
def _w_grafana(rng):
    a, b = person(rng), mixed(rng, 16)
    return out(
        f'''
        [security]
        admin_user = admin
        admin_password = {a}

        [smtp]
        enabled = true
        host = smtp.sendinblue.com:587
        user = grafana@example.org
        password = """{b}"""
        ''',
        a,
        b,
    )


@cred("joomla-configuration-php-class-password-and-secret")
def _w_joomla(rng):
    p, s = safe(rng, 16), mixed(rng, 16)
    return out(
        f"""
        <?php
        class JConfig {{
            public $dbtype = 'mysqli';
            public $host = 'localhost';
            public $user = 'joomla';
            public $password = '{p}';
            public $db = 'joomla5';
            public $dbprefix = 'jos_';
            public $secret = '{s}';
        }}
        """,
        p,
        s,
    )


@cred("flask-instance-config-py-secret-key-bytes")
def _w_flask(rng):
    s = rng.randbytes(16).hex()
    return out(
        f'''
        # instance/config.py
        SECRET_KEY = "{s}"
        SQLALCHEMY_DATABASE_URI = "sqlite:///app.db"
        ''',
        s,
    )


@cred("fastapi-pydantic-settings-default-value-openai")
def _w_fastapi(rng):
    k = openai_key(rng)
    return out(
        f'''
        from pydantic_settings import BaseSettings


        class Settings(BaseSettings):
            openai_api_key: str = "{k}"
            model: str = "gpt-4.1-mini"
            max_tokens: int = 1024
        ''',
        k,
    )


@cred("nestjs-typeorm-config-ts-password-literal")
def _w_nest(rng):
    p = safe(rng, 17)
    return out(
        f"""
        TypeOrmModule.forRoot({{
          type: 'mysql',
          host: 'mysql.internal',
          port: 3306,
          username: 'nest',
          password: '{p}',
          database: 'catalog',
          synchronize: false,
        }}),
        """,
        p,
    )


@cred("spring-cloud-config-server-git-password-bootstrap")
def _w_spring_cfg(rng):
    p = gh_token(rng)
    return out(
        f"""
        spring:
          cloud:
            config:
              server:
                git:
                  uri: https://github.com/acme/config-repo
                  username: config-bot
                  password: {p}
                  default-label: main
        """,
        p,
    )


@cred("tomcat-users-xml-manager-gui-role-password")
def _w_tomcat(rng):
    p = safe(rng, 15)
    return out(
        f'''
        <tomcat-users xmlns="http://tomcat.apache.org/xml" version="1.0">
          <role rolename="manager-gui"/>
          <user username="tcadmin" password="{p}" roles="manager-gui,manager-script"/>
        </tomcat-users>
        ''',
        p,
    )


@cred("sveltekit-env-private-supabase-service-role")
def _w_svelte(rng):
    k = jwt(
        rng,
        {
            "iss": "supabase",
            "ref": lower(rng, 20),
            "role": "service_role",
            "iat": epoch(rng),
            "exp": epoch(rng) + 10**8,
        },
    )
    return out(
        f"""
        PUBLIC_SUPABASE_URL=https://{lower(rng, 20)}.supabase.co
        SUPABASE_SERVICE_ROLE_KEY={k}
        """,
        k,
    )


@cred("remix-shopify-app-toml-and-env-api-secret")
def _w_shopify(rng):
    s = "shpss_" + hexa(rng, 32)
    return out(
        f"""
        SHOPIFY_API_KEY={hexa(rng, 32)}
        SHOPIFY_API_SECRET={s}
        SCOPES=write_products,read_orders
        HOST=https://tunnel.example.dev
        """,
        s,
    )


@cred("adonisjs-env-app-key-and-smtp")
def _w_adonis(rng):
    a, b = urlsafe(rng, 32), safe(rng, 16)
    return out(
        f"""
        TZ=UTC
        PORT=3333
        HOST=localhost
        LOG_LEVEL=info
        APP_KEY={a}
        NODE_ENV=production
        SMTP_HOST=smtp.fastmail.com
        SMTP_USERNAME=app@fastmail.example
        SMTP_PASSWORD={b}
        """,
        a,
        b,
    )


@cred("rocket-toml-secret-key-release-profile")
def _w_rocket(rng):
    s = b64(rng, 32)
    return out(
        f'''
        [release]
        address = "0.0.0.0"
        port = 8000
        secret_key = "{s}"
        ''',
        s,
    )


@cred("craftcms-env-security-key-and-db")
def _w_craft(rng):
    a, b = urlsafe(rng, 32), safe(rng, 16)
    return out(
        f"""
        CRAFT_APP_ID=CraftCMS--{uid(rng)}
        CRAFT_SECURITY_KEY={a}
        CRAFT_DB_DRIVER=mysql
        CRAFT_DB_SERVER=127.0.0.1
        CRAFT_DB_USER=craft
        CRAFT_DB_PASSWORD={b}
        """,
        a,
        b,
    )


# -- ML and data tooling --


@cred("huggingface-cli-login-token-flag-and-git-credential-notice")
def _m_hf_login(rng):
    t = hf_token(rng)
    return out(
        f"""
        $ huggingface-cli login --token {t} --add-to-git-credential
        Token is valid (permission: write).
        Your token has been saved in your configured git credential helpers (store).
        Your token has been saved to /home/ml/.cache/huggingface/token
        Login successful
        """,
        t,
    )


@cred("huggingface-stored-tokens-file-two-names")
def _m_hf_stored(rng):
    a, b = hf_token(rng), hf_token(rng)
    return out(
        f"""
        $ cat ~/.cache/huggingface/stored_tokens
        [research-read]
        hf_token = {a}

        [org-write]
        hf_token = {b}
        """,
        a,
        b,
    )


@cred("transformers-from-pretrained-token-kwarg-notebook")
def _m_hf_kwarg(rng):
    t = hf_token(rng)
    src = jd(
        {
            "cell_type": "code",
            "execution_count": 3,
            "metadata": {},
            "source": [
                "from transformers import AutoTokenizer, AutoModelForCausalLM\n",
                f'tok = AutoTokenizer.from_pretrained("meta-llama/Llama-3.1-8B", token="{t}")\n',
                'model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.1-8B", device_map="auto")',
            ],
            "outputs": [],
        }
    )
    return out(src, t)


@cred("wandb-netrc-api-entry-and-login-relogin")
def _m_wandb(rng):
    k = hexa(rng, 40)
    return out(
        f"""
        $ wandb login --relogin {k}
        wandb: Appending key for api.wandb.ai to your netrc file: /root/.netrc
        $ tail -3 /root/.netrc
        machine api.wandb.ai
          login user
          password {k}
        """,
        k,
    )


@cred("wandb-v1-key-env-in-slurm-script")
def _m_wandb_v1(rng):
    k = "local-" + hexa(rng, 40)
    return out(
        f"""
        #!/bin/bash
        #SBATCH --job-name=sft-7b
        #SBATCH --gres=gpu:8
        #SBATCH --time=48:00:00
        export WANDB_BASE_URL=https://wandb.lab.internal
        export WANDB_API_KEY={k}
        export WANDB_PROJECT=sft-7b
        srun torchrun --nproc_per_node 8 train.py --config configs/sft.yaml
        """,
        k,
    )


@cred("mlflow-tracking-env-basic-auth-credentials-file")
def _m_mlflow(rng):
    p = safe(rng, 18)
    return out(
        f"""
        # ~/.mlflow/credentials
        [mlflow]
        mlflow_tracking_username = trainer
        mlflow_tracking_password = {p}
        """,
        p,
    )


@cred("mlflow-databricks-host-token-python-literal")
def _m_mlflow_db(rng):
    t = "dapi" + hexa(rng, 32)
    return out(
        f'''
        import os, mlflow
        os.environ["DATABRICKS_HOST"] = "https://adb-{digits(rng, 16)}.{rng.randint(1, 19)}.azuredatabricks.net"
        os.environ["DATABRICKS_TOKEN"] = "{t}"
        mlflow.set_tracking_uri("databricks")
        mlflow.set_experiment("/Shared/churn")
        ''',
        t,
    )


@cred("comet-config-ini-api-key")
def _m_comet(rng):
    k = mixed(rng, 25)
    return out(
        f"""
        # ~/.comet.config
        [comet]
        api_key = {k}
        workspace = vision-team
        project_name = detr-finetune
        """,
        k,
    )


@cred("neptune-init-run-api-token-argument")
def _m_neptune(rng):
    tok = base64.b64encode(
        jc(
            {
                "api_address": "https://app.neptune.ai",
                "api_url": "https://app.neptune.ai",
                "api_key": uid(rng),
            }
        ).encode()
    ).decode()
    return out(
        f'''
        import neptune

        run = neptune.init_run(
            project="acme/segmentation",
            api_token="{tok}",
            tags=["unet", "baseline"],
        )
        ''',
        tok,
    )


@cred("kaggle-json-username-key")
def _m_kaggle(rng):
    k = hexa(rng, 32)
    return out(
        f'''
        $ cat ~/.kaggle/kaggle.json
        {{"username":"{user(rng).replace(".", "")}","key":"{k}"}}
        $ kaggle competitions download -c llm-prompt-recovery
        ''',
        k,
    )


@cred("dvc-config-local-s3-remote-secret-key")
def _m_dvc(rng):
    s = aws_secret(rng)
    return out(
        f"""
        # .dvc/config.local
        ['remote "storage"']
            access_key_id = {aws_id(rng)}
            secret_access_key = {s}
        """,
        s,
    )


@cred("dvc-remote-modify-webdav-password-cli")
def _m_dvc_webdav(rng):
    p = safe(rng, 16)
    return out(
        f"""
        $ dvc remote add -d nextcloud webdavs://cloud.lab.example/remote.php/dav/files/ml/dvcstore
        $ dvc remote modify --local nextcloud user ml
        $ dvc remote modify --local nextcloud password {p}
        $ dvc push
        12 files pushed
        """,
        p,
    )


@cred("databrickscfg-two-profiles-pat-and-sp-secret")
def _m_dbcfg(rng):
    a, b = "dapi" + hexa(rng, 32) + "-2", "dose" + hexa(rng, 32)
    return out(
        f"""
        [DEFAULT]
        host  = https://dbc-{hexa(rng, 8)}-{hexa(rng, 4)}.cloud.databricks.com
        token = {a}

        [prod-sp]
        host          = https://dbc-{hexa(rng, 8)}-{hexa(rng, 4)}.cloud.databricks.com
        client_id     = {uid(rng)}
        client_secret = {b}
        """,
        a,
        b,
    )


@cred("dbt-profiles-yml-snowflake-password-and-postgres")
def _m_dbt(rng):
    a, b = safe(rng, 20), person(rng)
    return out(
        f'''
        analytics:
          target: dev
          outputs:
            dev:
              type: snowflake
              account: {lower(rng, 7)}-{lower(rng, 7)}
              user: DBT_DEV
              password: "{a}"
              role: TRANSFORMER
              warehouse: TRANSFORMING
              database: ANALYTICS
              schema: dbt_dev
            local:
              type: postgres
              host: localhost
              user: dbt
              password: {b}
              port: 5432
              dbname: warehouse
              schema: public
        ''',
        a,
        b,
    )


@cred("dbt-bigquery-keyfile-json-inline-private-key")
def _m_dbt_bq(rng):
    first = pem_first(rng, RSA_PKCS8)
    key = pem(rng, first, lines=3).replace("\n", "\\n")
    return out(
        f'''
        bq:
          target: prod
          outputs:
            prod:
              type: bigquery
              method: service-account-json
              project: acme-dw
              dataset: marts
              keyfile_json:
                type: service_account
                project_id: acme-dw
                private_key_id: {hexa(rng, 40)}
                private_key: "{key}\\n"
                client_email: dbt@acme-dw.iam.gserviceaccount.com
        ''',
        first,
    )


@cred("airflow-cli-connections-add-conn-uri-postgres")
def _m_airflow(rng):
    p = safe(rng, 18)
    return out(
        f"""
        $ airflow connections add warehouse_pg --conn-uri 'postgresql://airflow_etl:{p}@warehouse.internal:5432/dw'
        Successfully added `conn_id`=warehouse_pg : postgresql://airflow_etl:******@warehouse.internal:5432/dw
        """,
        p,
    )


@cred("airflow-env-conn-json-extra-token")
def _m_airflow_json(rng):
    t = "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    v = jc({"conn_type": "slack", "password": t, "extra": {"timeout": 30}})
    return out(
        f"""
        AIRFLOW__CORE__EXECUTOR=CeleryExecutor
        AIRFLOW_CONN_SLACK_API_DEFAULT='{v}'
        """,
        t,
    )


@cred("airflow-cfg-fernet-key-and-webserver-secret")
def _m_airflow_cfg(rng):
    f, s = b64url(rng, 32) + "=", hexa(rng, 32)
    return out(
        f"""
        [core]
        dags_folder = /opt/airflow/dags
        fernet_key = {f}

        [webserver]
        secret_key = {s}
        """,
        f,
        s,
    )


@cred("dagster-yaml-storage-postgres-password-literal")
def _m_dagster(rng):
    p = safe(rng, 18)
    return out(
        f'''
        storage:
          postgres:
            postgres_db:
              username: dagster
              password: "{p}"
              hostname: dagster-pg
              db_name: dagster
              port: 5432
        ''',
        p,
    )


@cred("prefect-profiles-toml-cloud-api-key")
def _m_prefect(rng):
    k = "pnu_" + mixed(rng, 36)
    return out(
        f'''
        active = "cloud"

        [profiles.cloud]
        PREFECT_API_URL = "https://api.prefect.cloud/api/accounts/{uid(rng)}/workspaces/{uid(rng)}"
        PREFECT_API_KEY = "{k}"
        ''',
        k,
    )


@cred("great-expectations-config-variables-yml-password")
def _m_gx(rng):
    p = person(rng)
    return out(
        f"""
        # great_expectations/uncommitted/config_variables.yml
        my_postgres_db_yaml_creds:
          drivername: postgresql
          host: warehouse.internal
          port: '5432'
          username: gx_reader
          password: {p}
          database: dw
        """,
        p,
    )


@cred("jupyter-output-print-env-stream-together-key")
def _m_jup_out(rng):
    k = "tgp_v1_" + urlsafe(rng, 43)
    nb = jd(
        {
            "cell_type": "code",
            "execution_count": 7,
            "metadata": {},
            "source": ["!env | grep -i together"],
            "outputs": [
                {
                    "name": "stdout",
                    "output_type": "stream",
                    "text": [f"TOGETHER_API_KEY={k}\n", "TOGETHER_BASE_URL=https://api.together.xyz/v1\n"],
                }
            ],
        }
    )
    return out(nb, k)


@cred("jupyter-server-config-token-and-password-hash")
def _m_jup_server(rng):
    t = hexa(rng, 48)
    return out(
        f"""
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp] Jupyter Server 2.15.0 is running at:
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp] http://gpu-07:8888/lab?token={t}
        [I {day(rng)} {hms(rng)}.{rng.randint(100, 999)} ServerApp]     http://127.0.0.1:8888/lab?token={t}
        """,
        t,
    )


@cred("ray-job-submit-runtime-env-json-env-vars")
def _m_ray(rng):
    k = hf_token(rng)
    env = jc({"env_vars": {"HF_TOKEN": k}, "pip": ["vllm==0.8.4"]})
    return out(
        f"""
        $ ray job submit --address http://ray-head:8265 --runtime-env-json='{env}' -- python serve_eval.py
        Job submission server address: http://ray-head:8265
        """,
        k,
    )


@cred("modal-toml-profile-token-secret-as-prefix")
def _m_modal(rng):
    s = "as-" + mixed(rng, 22)
    return out(
        f'''
        [acme]
        token_id = "ak-{mixed(rng, 22)}"
        token_secret = "{s}"
        active = true
        ''',
        s,
    )


@cred("replicate-python-client-api-token-literal")
def _m_replicate(rng):
    t = "r8_" + mixed(rng, 37)
    return out(
        f'''
        import replicate

        client = replicate.Client(api_token="{t}")
        output = client.run("black-forest-labs/flux-schnell", input={{"prompt": "lighthouse at dusk"}})
        ''',
        t,
    )


@cred("fireworks-curl-chat-completions-bearer")
def _m_fireworks(rng):
    k = "fw_" + mixed(rng, 24)
    return out(
        f"""
        curl https://api.fireworks.ai/inference/v1/chat/completions \\
          -H "Authorization: Bearer {k}" -H "Content-Type: application/json" \\
          -d '{{"model":"accounts/fireworks/models/llama-v3p3-70b-instruct","max_tokens":256,"messages":[{{"role":"user","content":"hi"}}]}}'
        """,
        k,
    )


@cred("groq-python-client-key-in-script")
def _m_groq(rng):
    k = "gsk_" + mixed(rng, 52)
    return out(
        f'''
        from groq import Groq

        client = Groq(api_key="{k}")
        resp = client.chat.completions.create(model="llama-3.3-70b-versatile",
                                              messages=[{{"role": "user", "content": "summarise"}}])
        ''',
        k,
    )


@cred("mistral-env-and-cli-vibe-config")
def _m_mistral(rng):
    k = mixed(rng, 32)
    return out(
        f"""
        $ export MISTRAL_API_KEY={k}
        $ curl -s https://api.mistral.ai/v1/models -H "Authorization: Bearer $MISTRAL_API_KEY" | jq '.data[].id' | head -3
        "mistral-large-latest"
        "codestral-latest"
        "ministral-8b-latest"
        """,
        k,
    )


@cred("cohere-client-v2-positional-key")
def _m_cohere(rng):
    k = mixed(rng, 40)
    return out(
        f'''
        import cohere
        co = cohere.ClientV2("{k}")
        res = co.rerank(model="rerank-v3.5", query="refund policy", documents=docs, top_n=3)
        ''',
        k,
    )


@cred("anyscale-endpoints-esecret-openai-compatible")
def _m_anyscale(rng):
    k = "esecret_" + lower(rng, 26)
    return out(
        f'''
        from openai import OpenAI
        client = OpenAI(base_url="https://api.endpoints.anyscale.com/v1", api_key="{k}")
        ''',
        k,
    )


@cred("openrouter-http-referer-headers-request")
def _m_openrouter(rng):
    k = "sk-or-v1-" + hexa(rng, 64)
    return out(
        f"""
        POST https://openrouter.ai/api/v1/chat/completions
        Authorization: Bearer {k}
        HTTP-Referer: https://notes.example.app
        X-Title: Notes Summariser
        Content-Type: application/json

        {{"model":"anthropic/claude-sonnet-4.5","messages":[{{"role":"user","content":"tl;dr"}}]}}
        """,
        k,
    )


@cred("bedrock-api-key-env-bearer-token")
def _m_bedrock(rng):
    k = "ABSK" + b64(rng, 96)
    return out(
        f"""
        export AWS_REGION=us-east-1
        export AWS_BEARER_TOKEN_BEDROCK={k}
        aws bedrock-runtime converse --model-id anthropic.claude-3-7-sonnet-20250219-v1:0 --messages file://msg.json
        """,
        k,
    )


@cred("bedrock-boto3-client-explicit-keys")
def _m_bedrock_boto(rng):
    s = aws_secret(rng)
    return out(
        f'''
        import boto3
        brt = boto3.client(
            "bedrock-runtime",
            region_name="eu-central-1",
            aws_access_key_id="{aws_id(rng)}",
            aws_secret_access_key="{s}",
        )
        ''',
        s,
    )


@cred("vertex-ai-service-account-json-in-colab-cell")
def _m_vertex(rng):
    first = pem_first(rng, RSA_PKCS8)
    return out(
        """
        %%writefile /content/sa.json
        @KEYFILE@
        """,
        first,
        KEYFILE=sa_json(rng, "vertex-sandbox-" + digits(rng, 6), first),
    )


@cred("deepseek-env-and-openai-sdk-base-url")
def _m_deepseek(rng):
    k = "sk-" + hexa(rng, 32)
    return out(
        f"""
        DEEPSEEK_API_KEY={k}
        DEEPSEEK_BASE_URL=https://api.deepseek.com
        MODEL=deepseek-chat
        """,
        k,
    )


@cred("perplexity-sonar-curl-pplx-key")
def _m_pplx(rng):
    k = "pplx-" + mixed(rng, 48)
    return out(
        f"""
        curl --request POST --url https://api.perplexity.ai/chat/completions \\
          --header 'accept: application/json' \\
          --header 'authorization: Bearer {k}' \\
          --data '{{"model":"sonar-pro","messages":[{{"role":"user","content":"2026 GPU prices"}}]}}'
        """,
        k,
    )


@cred("xai-grok-sdk-env-file")
def _m_xai(rng):
    k = "xai-" + mixed(rng, 80)
    return out(
        f'''
        XAI_API_KEY="{k}"
        XAI_MODEL=grok-4
        ''',
        k,
    )


@cred("label-studio-token-header-import-tasks")
def _m_labelstudio(rng):
    t = hexa(rng, 40)
    return out(
        f"""
        curl -H 'Authorization: Token {t}' -X POST 'http://labelstudio.lab:8080/api/projects/12/import' \\
          -F 'file=@tasks.json'
        {{"task_count": 480, "annotation_count": 0, "prediction_count": 0, "duration": 0.41}}
        """,
        t,
    )


@cred("clearml-conf-api-credentials-block")
def _m_clearml(rng):
    s = mixed(rng, 50)
    return out(
        f'''
        api {{
            web_server: https://app.clear.ml
            api_server: https://api.clear.ml
            files_server: https://files.clear.ml
            credentials {{
                "access_key" = "{upper(rng, 30)}"
                "secret_key" = "{s}"
            }}
        }}
        ''',
        s,
    )


@cred("roboflow-inference-sdk-api-key")
def _m_roboflow(rng):
    k = mixed(rng, 20)
    return out(
        f'''
        from inference_sdk import InferenceHTTPClient
        CLIENT = InferenceHTTPClient(api_url="https://detect.roboflow.com", api_key="{k}")
        result = CLIENT.infer("frame_0412.jpg", model_id="pallets-detect/4")
        ''',
        k,
    )


@cred("openai-batch-jsonl-upload-curl-org-header")
def _m_openai_batch(rng):
    k = openai_key(rng, "svcacct")
    return out(
        f"""
        curl https://api.openai.com/v1/files \\
          -H "Authorization: Bearer {k}" \\
          -H "OpenAI-Organization: org-{mixed(rng, 24)}" \\
          -F purpose="batch" -F file="@requests.jsonl"
        """,
        k,
    )


@cred("vllm-serve-api-key-flag-and-client")
def _m_vllm(rng):
    k = "token-" + lower(rng, 24)
    return out(
        f"""
        $ vllm serve Qwen/Qwen2.5-32B-Instruct --tensor-parallel-size 4 --api-key {k} --port 8000
        INFO 11-04 09:12:44 api_server.py:712] vLLM API server version 0.8.4
        INFO 11-04 09:12:44 api_server.py:713] args: Namespace(host=None, port=8000, api_key='{k}', ...)
        """,
        k,
    )


# -- networks and devices --


def wgkey(rng: random.Random) -> str:
    return b64(rng, 32)


@cred("wireguard-wg0-conf-private-and-preshared-key")
def _n_wg(rng):
    a, b = wgkey(rng), wgkey(rng)
    return out(
        f"""
        [Interface]
        Address = 10.66.0.2/32
        PrivateKey = {a}
        DNS = 1.1.1.1

        [Peer]
        PublicKey = {wgkey(rng)}
        PresharedKey = {b}
        Endpoint = vpn.example.net:51820
        AllowedIPs = 0.0.0.0/0, ::/0
        PersistentKeepalive = 25
        """,
        a,
        b,
    )


@cred("wireguard-wg-showconf-output-root-shell")
def _n_wg_show(rng):
    a = wgkey(rng)
    return out(
        f"""
        root@edge:~# wg showconf wg0
        [Interface]
        ListenPort = 51820
        FwMark = 0xca6c
        PrivateKey = {a}

        [Peer]
        PublicKey = {wgkey(rng)}
        AllowedIPs = 10.66.0.5/32
        Endpoint = 203.0.113.{rng.randint(2, 250)}:{rng.randint(30000, 60000)}
        """,
        a,
    )


@cred("openvpn-auth-user-pass-file-and-ovpn-reference")
def _n_ovpn(rng):
    p = person(rng)
    return out(
        f"""
        $ cat /etc/openvpn/client/office.conf | grep auth
        auth-user-pass /etc/openvpn/client/office.auth
        auth SHA256
        $ cat /etc/openvpn/client/office.auth
        {user(rng)}
        {p}
        """,
        p,
    )


@cred("openvpn-inline-tls-crypt-static-key-block")
def _n_ovpn_tls(rng):
    lines = [hexa(rng, 32) for _ in range(16)]
    body = "\n".join(
        [
            "<tls-crypt>",
            "-----BEGIN OpenVPN Static key V1-----",
            *lines,
            "-----END OpenVPN Static key V1-----",
            "</tls-crypt>",
        ]
    )
    return out(
        """
        client
        dev tun
        proto udp
        remote vpn.example.org 1194
        cipher AES-256-GCM
        @BLOCK@
        """,
        lines[0],
        BLOCK=body,
    )


@cred("strongswan-ipsec-secrets-psk-and-eap")
def _n_swan(rng):
    a, b = safe(rng, 28), person(rng)
    return out(
        f'''
        # /etc/ipsec.secrets
        203.0.113.10 198.51.100.20 : PSK "{a}"
        roadwarrior : EAP "{b}"
        ''',
        a,
        b,
    )


@cred("strongswan-swanctl-conf-secrets-ike-psk")
def _n_swanctl(rng):
    a = "0s" + b64(rng, 32)
    return out(
        f"""
        secrets {{
            ike-branch {{
                id-1 = branch.example.com
                secret = {a}
            }}
        }}
        """,
        a,
    )


@cred("cisco-ios-running-config-secret-0-and-tacacs-key")
def _n_ios(rng):
    a, b = safe(rng, 14), mixed(rng, 18)
    return out(
        f"""
        hostname core-sw01
        !
        enable secret 9 $9${urlsafe(rng, 14)}${urlsafe(rng, 43)}
        username netops privilege 15 secret 0 {a}
        !
        tacacs server ISE
         address ipv4 10.0.50.20
         key 0 {b}
        !
        line vty 0 15
         transport input ssh
        """,
        a,
        b,
    )


@cred("cisco-asa-tunnel-group-ikev2-pre-shared-key")
def _n_asa(rng):
    a = safe(rng, 24)
    return out(
        f"""
        tunnel-group 198.51.100.7 type ipsec-l2l
        tunnel-group 198.51.100.7 ipsec-attributes
         ikev2 remote-authentication pre-shared-key {a}
         ikev2 local-authentication pre-shared-key {a}
        """,
        a,
    )


@cred("juniper-junos-set-commands-plain-text-password-prompt")
def _n_junos(rng):
    a = safe(rng, 16)
    return out(
        f"""
        [edit]
        netops@mx1# set system login user automation class super-user authentication plain-text-password
        New password: {a}
        Retype new password: {a}

        [edit]
        netops@mx1# commit
        commit complete
        """,
        a,
    )


@cred("mikrotik-routeros-export-ppp-secret-and-wifi-passphrase")
def _n_mikrotik(rng):
    a, b = safe(rng, 14), person(rng)
    return out(
        f'''
        # {day(rng)} by RouterOS 7.16.2
        /interface wifi security
        add authentication-types=wpa2-psk,wpa3-psk name=home-sec passphrase="{b}"
        /ppp secret
        add name=branch-2 password={a} profile=default-encryption service=l2tp
        /ip service
        set telnet disabled=yes
        ''',
        a,
        b,
    )


@cred("pfsense-config-xml-ipsec-phase1-pre-shared-key")
def _n_pfsense(rng):
    a = safe(rng, 30)
    return out(
        f"""
        <ipsec>
          <phase1>
            <ikeid>1</ikeid>
            <iketype>ikev2</iketype>
            <interface>wan</interface>
            <remote-gateway>198.51.100.44</remote-gateway>
            <authentication_method>pre_shared_key</authentication_method>
            <pre-shared-key>{a}</pre-shared-key>
            <descr><![CDATA[DC2 tunnel]]></descr>
          </phase1>
        </ipsec>
        """,
        a,
    )


@cred("opnsense-config-xml-api-key-secret-user")
def _n_opnsense(rng):
    s = b64(rng, 60)
    return out(
        f"""
        <user>
          <name>ansible</name>
          <apikeys>
            <item>
              <key>{b64(rng, 60)}</key>
              <secret>$6${hexa(rng, 16)}${b64(rng, 64)[:86]}</secret>
            </item>
          </apikeys>
        </user>
        <!-- exported with the plain secret for the automation host: -->
        <!-- apikey.txt: secret={s} -->
        """,
        s,
    )


@cred("unifi-network-controller-ssh-device-auth-json")
def _n_unifi(rng):
    p = safe(rng, 20)
    return out(
        jd(
            {
                "meta": {"rc": "ok"},
                "data": [
                    {
                        "key": "mgmt",
                        "x_ssh_username": "unifi-admin",
                        "x_ssh_password": p,
                        "advanced_feature_enabled": True,
                        "x_ssh_keys": [],
                    }
                ],
            }
        ),
        p,
    )


@cred("snmpd-conf-rocommunity-and-v3-authpass")
def _n_snmp(rng):
    a, b = lower(rng, 14), safe(rng, 16)
    return out(
        f'''
        # /etc/snmp/snmpd.conf
        agentAddress udp:161
        rocommunity {a} 10.0.0.0/8
        createUser monitor SHA-256 "{b}" AES
        rouser monitor authPriv
        ''',
        a,
        b,
    )


@cred("snmpwalk-v3-command-line-auth-and-priv")
def _n_snmpwalk(rng):
    a, b = safe(rng, 14), safe(rng, 14)
    return out(
        f"""
        $ snmpwalk -v3 -l authPriv -u librenms -a SHA -A '{a}' -x AES -X '{b}' 10.10.1.1 sysDescr
        SNMPv2-MIB::sysDescr.0 = STRING: Cisco IOS Software [Dublin], Catalyst L3 Switch Software
        """,
        a,
        b,
    )


@cred("freeradius-clients-conf-subnet-client-secret")
def _n_radius(rng):
    a = safe(rng, 20)
    return out(
        f"""
        client unifi-aps {{
            ipaddr = 10.40.0.0/24
            secret = {a}
            shortname = aps
            require_message_authenticator = yes
        }}
        """,
        a,
    )


@cred("home-assistant-secrets-yaml-mixed-integrations")
def _n_ha(rng):
    a, b = person(rng), safe(rng, 16)
    return out(
        f'''
        # secrets.yaml
        latitude_home: 52.3731
        longitude_home: 4.8922
        mqtt_password: {a}
        wifi_ssid: Casa-IoT
        wifi_password: "{b}"
        ''',
        a,
        b,
    )


@cred("home-assistant-long-lived-token-rest-call")
def _n_ha_llat(rng):
    t = jwt(rng, {"iss": hexa(rng, 32), "iat": epoch(rng), "exp": epoch(rng) + 315360000})
    return out(
        f"""
        curl -X POST -H "Authorization: Bearer {t}" \\
             -H "Content-Type: application/json" \\
             -d '{{"entity_id": "light.kitchen"}}' \\
             http://homeassistant.local:8123/api/services/light/toggle
        """,
        t,
    )


@cred("esphome-node-yaml-api-encryption-key-and-ota")
def _n_esphome(rng):
    a, b = b64(rng, 32), hexa(rng, 32)
    return out(
        f'''
        esphome:
          name: garage-door
        esp32:
          board: esp32-c3-devkitm-1
        api:
          encryption:
            key: "{a}"
        ota:
          - platform: esphome
            password: "{b}"
        wifi:
          ssid: !secret wifi_ssid
          password: !secret wifi_password
        ''',
        a,
        b,
    )


@cred("tasmota-console-backlog-mqtt-and-wifi")
def _n_tasmota(rng):
    a, b = safe(rng, 16), person(rng)
    return out(
        f"""
        {hms(rng)}.{rng.randint(100, 999)} CMD: Backlog SSID1 Werkstatt; Password1 {b}; MqttHost 192.168.1.20; MqttUser tasmota; MqttPassword {a}
        {hms(rng)}.{rng.randint(100, 999)} RSL: RESULT = {{"SSId1":"Werkstatt"}}
        {hms(rng)}.{rng.randint(100, 999)} RSL: RESULT = {{"Password1":"****"}}
        """,
        a,
        b,
    )


@cred("zigbee2mqtt-configuration-yaml-network-key-list-and-mqtt")
def _n_z2m(rng):
    key = [rng.randint(0, 255) for _ in range(16)]
    p = safe(rng, 16)
    return out(
        f"""
        mqtt:
          base_topic: zigbee2mqtt
          server: mqtt://192.168.1.20
          user: z2m
          password: {p}
        serial:
          port: /dev/ttyUSB0
        advanced:
          network_key: {key}
          pan_id: {rng.randint(1000, 60000)}
        """,
        p,
        str(key),
    )


@cred("node-red-flows-cred-json-decrypted-dump")
def _n_nodered(rng):
    a, b = safe(rng, 16), "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    first, second = hexa(rng, 16), hexa(rng, 16)
    return out(jd({first: {"user": "nodered", "password": a}, second: {"token": b}}), a, b)


@cred("octoprint-config-yaml-global-api-key")
def _n_octoprint(rng):
    a = upper(rng, 32)
    return out(
        f"""
        api:
          key: {a}
        plugins:
          discovery:
            upnpUuid: {uid(rng)}
        server:
          firstRun: false
        """,
        a,
    )


@cred("synology-dsm-hyper-backup-task-log-smb-password")
def _n_synology(rng):
    p = person(rng)
    return out(
        f"""
        admin@DS923:~$ sudo synoshare --enum ALL | head -2
        admin@DS923:~$ sudo mount -t cifs //fileserver/backup /mnt/fs -o username=syno_bk,password={p},vers=3.0
        admin@DS923:~$ ls /mnt/fs
        #recycle  nightly  weekly
        """,
        p,
    )


@cred("truenas-api-key-midclt-and-rest")
def _n_truenas(rng):
    k = f"{rng.randint(1, 40)}-" + mixed(rng, 64)
    return out(
        f"""
        curl -sk -H "Authorization: Bearer {k}" https://truenas.lan/api/v2.0/pool | jq '.[].name'
        "tank"
        "scratch"
        """,
        k,
    )


@cred("hostapd-conf-wpa-passphrase-and-radius-secret")
def _n_hostapd(rng):
    a, b = person(rng), safe(rng, 18)
    return out(
        f"""
        interface=wlan0
        ssid=Atelier-5G
        hw_mode=a
        channel=36
        wpa=2
        wpa_key_mgmt=WPA-PSK SAE
        wpa_passphrase={a}
        auth_server_addr=10.0.0.5
        auth_server_shared_secret={b}
        """,
        a,
        b,
    )


@cred("wpa-supplicant-conf-eap-peap-password")
def _n_wpa(rng):
    p = person(rng)
    return out(
        f'''
        network={{
            ssid="eduroam"
            key_mgmt=WPA-EAP
            eap=PEAP
            identity="{user(rng)}@uni.example.edu"
            password="{p}"
            phase2="auth=MSCHAPV2"
        }}
        ''',
        p,
    )


@cred("networkmanager-nmconnection-psk-and-vpn-secret")
def _n_nm(rng):
    a = person(rng)
    return out(
        f"""
        [connection]
        id=Cafe Lumen
        uuid={uid(rng)}
        type=wifi

        [wifi]
        mode=infrastructure
        ssid=Cafe Lumen

        [wifi-security]
        key-mgmt=wpa-psk
        psk={a}
        """,
        a,
    )


@cred("nmcli-connection-add-wifi-psk-flag")
def _n_nmcli(rng):
    a = safe(rng, 18)
    return out(
        f'''
        $ nmcli dev wifi connect "Lab-Secure" password "{a}" ifname wlp2s0
        Device 'wlp2s0' successfully activated with '{uid(rng)}'.
        ''',
        a,
    )


@cred("pihole-toml-webserver-api-app-password")
def _n_pihole(rng):
    a = b64(rng, 32)
    return out(
        f"""
        $ sudo pihole-FTL --config webserver.api.app_pwhash
        $ sudo grep -A2 "\\[webserver.api\\]" /etc/pihole/pihole.toml
        [webserver.api]
          app_sudo = false
        # app password generated in Settings > Web interface / API: {a}
        """,
        a,
    )


@cred("frigate-config-yml-rtsp-camera-credentials")
def _n_frigate(rng):
    a = safe(rng, 14)
    return out(
        f"""
        cameras:
          driveway:
            ffmpeg:
              inputs:
                - path: rtsp://viewer:{a}@192.168.10.31:554/cam/realmonitor?channel=1&subtype=0
                  roles: [detect, record]
            detect:
              width: 1280
              height: 720
        """,
        a,
    )


@cred("proxmox-pveum-api-token-secret-output")
def _n_proxmox(rng):
    v = uid(rng)
    return out(
        f"""
        root@pve:~# pveum user token add terraform@pve provider --privsep 0
        ┌──────────────┬──────────────────────────────────────┐
        │ key          │ value                                │
        ╞══════════════╪══════════════════════════════════════╡
        │ full-tokenid │ terraform@pve!provider               │
        ├──────────────┼──────────────────────────────────────┤
        │ info         │ {{"privsep":"0"}}                      │
        ├──────────────┼──────────────────────────────────────┤
        │ value        │ {v} │
        └──────────────┴──────────────────────────────────────┘
        """,
        v,
    )


@cred("ipmitool-lan-print-with-password-flag")
def _n_ipmi(rng):
    a = safe(rng, 12)
    return out(
        f"""
        $ ipmitool -I lanplus -H 10.9.0.{rng.randint(2, 250)} -U ADMIN -P '{a}' chassis power status
        Chassis Power is on
        """,
        a,
    )


@cred("fortigate-config-system-admin-set-password-and-psk")
def _n_forti(rng):
    a, b = safe(rng, 16), safe(rng, 22)
    return out(
        f"""
        config system admin
            edit "netadmin"
                set accprofile "super_admin"
                set password {a}
            next
        end
        config vpn ipsec phase1-interface
            edit "to-aws"
                set psksecret {b}
            next
        end
        """,
        a,
        b,
    )


@cred("tailscale-up-authkey-in-cloud-init-runcmd")
def _n_tailscale(rng):
    k = "tskey-auth-" + mixed(rng, 12) + "CNTRL-" + mixed(rng, 33)
    return out(
        f"""
        #cloud-config
        runcmd:
          - curl -fsSL https://tailscale.com/install.sh | sh
          - tailscale up --authkey={k} --ssh --advertise-tags=tag:edge
        """,
        k,
    )


@cred("dd-wrt-nvram-show-grep-passwords")
def _n_ddwrt(rng):
    a, b = person(rng), safe(rng, 14)
    return out(
        f"""
        root@DD-WRT:~# nvram show | grep -E "wpa_psk|pppoe_passwd"
        wl0_wpa_psk={a}
        pppoe_passwd={b}
        size: 38112 bytes (27424 left)
        """,
        a,
        b,
    )


# -- backups and storage --


@cred("restic-password-file-and-b2-keys-cron-wrapper")
def _b_restic(rng):
    p, k = phrase(rng, 5), "K00" + mixed(rng, 28)
    return out(
        f"""
        #!/bin/sh
        # /usr/local/bin/nightly-backup
        export RESTIC_REPOSITORY=b2:homelab-restic:/nas
        export B2_ACCOUNT_ID=00{hexa(rng, 23)}
        export B2_ACCOUNT_KEY={k}
        echo '{p}' > /root/.restic-pass
        restic backup --password-file /root/.restic-pass /srv /etc --exclude-caches
        """,
        p,
        k,
    )


@cred("restic-init-interactive-terminal-echo")
def _b_restic_init(rng):
    p = person(rng)
    return out(
        f"""
        $ restic -r sftp:backup@nas:/restic init
        enter password for new repository: {p}
        enter password again: {p}
        created restic repository 7e1a0b9c4d at sftp:backup@nas:/restic
        """,
        p,
    )


@cred("borg-passphrase-env-in-borgmatic-config")
def _b_borgmatic(rng):
    p = phrase(rng, 4, " ")
    return out(
        f'''
        source_directories:
          - /home
          - /etc
        repositories:
          - path: ssh://u{digits(rng, 6)}@u{digits(rng, 6)}.your-storagebox.de:23/./borg
            label: storagebox
        encryption_passphrase: "{p}"
        keep_daily: 7
        keep_weekly: 4
        ''',
        p,
    )


@cred("borg-key-export-paper-and-repokey-file")
def _b_borg_key(rng):
    first = b64(rng, 48)
    return out(
        f"""
        $ borg key export ::
        BORG_KEY {hexa(rng, 64)}
        {first}
        {b64(rng, 48)}
        {b64(rng, 48)}
        {b64(rng, 30)}
        """,
        first,
    )


@cred("duplicity-env-passphrase-and-s3-secret")
def _b_duplicity(rng):
    p, s = safe(rng, 24), aws_secret(rng)
    return out(
        f'''
        PASSPHRASE="{p}"
        AWS_ACCESS_KEY_ID={aws_id(rng)}
        AWS_SECRET_ACCESS_KEY={s}
        duplicity --full-if-older-than 1M /var/www boto3+s3://acme-dup/www
        ''',
        p,
        s,
    )


@cred("rclone-conf-drive-remote-oauth-token-json")
def _b_rclone(rng):
    t = "ya29." + urlsafe(rng, 150)
    tok = jc(
        {
            "access_token": t,
            "token_type": "Bearer",
            "refresh_token": "1//0" + urlsafe(rng, 96),
            "expiry": when(rng),
        }
    )
    r = tok.split('"refresh_token":"')[1].split('"')[0]
    return out(
        f"""
        [gdrive]
        type = drive
        scope = drive
        token = {tok}
        team_drive =
        """,
        t,
        r,
    )


@cred("rclone-config-create-webdav-pass-plain-cli")
def _b_rclone_cli(rng):
    p = person(rng)
    return out(
        f"""
        $ rclone config create nc webdav url=https://cloud.example.org/remote.php/webdav vendor=nextcloud user=maria pass={p}
        [nc]
        type = webdav
        url = https://cloud.example.org/remote.php/webdav
        vendor = nextcloud
        user = maria
        pass = *** ENCRYPTED ***
        """,
        p,
    )


@cred("kopia-repository-connect-s3-flags")
def _b_kopia(rng):
    s, p = aws_secret(rng), safe(rng, 20)
    return out(
        f"""
        kopia repository connect s3 --bucket=kopia-lab --endpoint=s3.eu-central-2.wasabisys.com \\
          --access-key={aws_id(rng)} --secret-access-key={s} --password='{p}'
        """,
        s,
        p,
    )


@cred("velero-credentials-velero-file-and-install")
def _b_velero(rng):
    s = aws_secret(rng)
    return out(
        f"""
        $ cat credentials-velero
        [default]
        aws_access_key_id = {aws_id(rng)}
        aws_secret_access_key = {s}
        $ velero install --provider aws --plugins velero/velero-plugin-for-aws:v1.11.0 \\
            --bucket velero-backups --secret-file ./credentials-velero --backup-location-config region=minio,s3ForcePathStyle="true",s3Url=http://minio:9000
        """,
        s,
    )


@cred("s3cmd-s3cfg-secret-key-and-gpg-passphrase")
def _b_s3cmd(rng):
    s, g = aws_secret(rng), person(rng)
    return out(
        f"""
        [default]
        access_key = {aws_id(rng)}
        secret_key = {s}
        host_base = s3.amazonaws.com
        host_bucket = %(bucket)s.s3.amazonaws.com
        gpg_passphrase = {g}
        use_https = True
        """,
        s,
        g,
    )


@cred("s5cmd-credentials-file-profile-and-endpoint")
def _b_s5cmd(rng):
    s = aws_secret(rng)
    return out(
        f"""
        $ AWS_SHARED_CREDENTIALS_FILE=./r2.creds s5cmd --endpoint-url https://{hexa(rng, 32)}.r2.cloudflarestorage.com ls s3://media/
        $ cat r2.creds
        [default]
        aws_access_key_id={hexa(rng, 32)}
        aws_secret_access_key={s}
        """,
        s,
    )


@cred("minio-mc-alias-set-positional-keys")
def _b_mc(rng):
    s = mixed(rng, 40)
    return out(
        f"""
        $ mc alias set homelab http://nas.lan:9000 {upper(rng, 20)} {s}
        Added `homelab` successfully.
        $ mc ls homelab/
        [{day(rng)} {hms(rng)} UTC]     0B photos/
        """,
        s,
    )


@cred("minio-mc-config-json-aliases")
def _b_mc_json(rng):
    s = mixed(rng, 40)
    return out(
        jd(
            {
                "version": "10",
                "aliases": {
                    "gcs": {
                        "url": "https://storage.googleapis.com",
                        "accessKey": "GOOG1E" + upper(rng, 55),
                        "secretKey": s,
                        "api": "S3v2",
                        "path": "dns",
                    }
                },
            }
        ),
        s,
    )


@cred("duplicati-commandline-backup-passphrase-and-url")
def _b_duplicati(rng):
    p, a = safe(rng, 20), safe(rng, 14)
    return out(
        f'''
        "C:\\Program Files\\Duplicati 2\\Duplicati.CommandLine.exe" backup "ftp://backup.example.net/duplicati?auth-username=office&auth-password={a}" "C:\\Users\\Public\\Documents\\" --passphrase="{p}" --dblock-size=50mb
        ''',
        p,
        a,
    )


@cred("proxmox-backup-client-pbs-password-env")
def _b_pbs(rng):
    p = uid(rng)
    return out(
        f"""
        export PBS_REPOSITORY='backup@pbs!hostkey@pbs.lan:datastore1'
        export PBS_PASSWORD='{p}'
        export PBS_FINGERPRINT='{":".join(hexa(rng, 2) for _ in range(32))}'
        proxmox-backup-client backup root.pxar:/ --exclude /proc
        """,
        p,
    )


@cred("davfs2-secrets-file-url-user-password")
def _b_davfs(rng):
    p = person(rng)
    return out(
        f'''
        # /etc/davfs2/secrets
        # server / mount point          username  password
        https://dav.mailbox.org/servlet/webdav.infostore /  jan@mailbox.org  "{p}"
        ''',
        p,
    )


@cred("rsync-daemon-secrets-file-and-password-env")
def _b_rsync(rng):
    p = safe(rng, 16)
    return out(
        f"""
        $ cat /etc/rsyncd.secrets
        mirror:{p}
        $ RSYNC_PASSWORD='{p}' rsync -av rsync://mirror@backup.lan/photos/ /mnt/photos/
        """,
        p,
    )


@cred("azcopy-sas-url-sync-command")
def _b_azcopy(rng):
    sig = quote(b64(rng, 32))
    return out(
        f"""
        azcopy sync "/data/exports" "https://acmebk.blob.core.windows.net/exports?sv=2023-11-03&ss=b&srt=co&sp=rwdlac&se=2026-12-31T23:59:59Z&st={day(rng)}T00:00:00Z&spr=https&sig={sig}" --delete-destination=true
        """,
        sig,
    )


# -- mail clients and chat bots --


@cred("thunderbird-prefs-js-smtp-and-signon-note")
def _e_tb(rng):
    p = person(rng)
    return out(
        f'''
        user_pref("mail.smtpserver.smtp1.hostname", "smtp.posteo.de");
        user_pref("mail.smtpserver.smtp1.port", 587);
        user_pref("mail.smtpserver.smtp1.username", "jana.k@posteo.de");
        user_pref("mail.server.server2.hostname", "posteo.de");
        // saved by the migration script (remove after import!)
        user_pref("extensions.importer.legacy_password", "{p}");
        ''',
        p,
    )


@cred("muttrc-imap-and-smtp-pass-settings")
def _e_mutt(rng):
    p = "".join(rng.choice(string.ascii_lowercase) for _ in range(16))
    return out(
        f'''
        set imap_user = "ravi.m@gmail.com"
        set imap_pass = "{p}"
        set folder = "imaps://imap.gmail.com:993"
        set smtp_url = "smtps://ravi.m@smtp.gmail.com:465/"
        set smtp_pass = "{p}"
        set spoolfile = "+INBOX"
        ''',
        p,
    )


@cred("neomutt-account-source-smtp-url-with-password")
def _e_neomutt(rng):
    p = safe(rng, 16)
    return out(
        f"""
        # ~/.config/neomutt/accounts/work
        set from = "l.ortega@firma.example"
        set smtp_url = "smtp://l.ortega:{p}@mail.firma.example:587/"
        set ssl_starttls = yes
        """,
        p,
    )


@cred("offlineimaprc-remotepass-and-remotepasseval-mix")
def _e_offlineimap(rng):
    p = person(rng)
    return out(
        f"""
        [Account Personal]
        localrepository = Local
        remoterepository = Remote

        [Repository Remote]
        type = IMAP
        remotehost = imap.fastmail.com
        remoteuser = me@fastmail.example
        remotepass = {p}
        sslcacertfile = /etc/ssl/certs/ca-certificates.crt
        """,
        p,
    )


@cred("fetchmailrc-poll-user-there-with-password")
def _e_fetchmail(rng):
    p = person(rng)
    return out(
        f'''
        poll pop.gmx.net protocol POP3 port 995
            user "familie.meyer@gmx.de" there with password "{p}" is "meyer" here
            ssl keep
        ''',
        p,
    )


@cred("mbsyncrc-pass-line-imapaccount")
def _e_mbsync(rng):
    p = safe(rng, 18)
    return out(
        f'''
        IMAPAccount uni
        Host outlook.office365.com
        User s.kaya@uni.example.edu
        Pass "{p}"
        TLSType IMAPS
        AuthMechs LOGIN

        IMAPStore uni-remote
        Account uni
        ''',
        p,
    )


@cred("aerc-accounts-conf-source-url-encoded-password")
def _e_aerc(rng):
    raw = symbolic(rng, 16, "@#/:?&")
    enc = quote(raw)
    return out(
        f"""
        [Work]
        source   = imaps://d.novak%40studio.example:{enc}@imap.studio.example:993
        outgoing = smtp+plain://d.novak%40studio.example@smtp.studio.example:587
        default  = INBOX
        from     = Dana Novak <d.novak@studio.example>
        """,
        enc,
    )


@cred("himalaya-config-toml-passwd-raw")
def _e_himalaya(rng):
    p = safe(rng, 16)
    return out(
        f'''
        [accounts.proton]
        default = true
        email = "nomad@proton.me"
        backend.type = "imap"
        backend.host = "127.0.0.1"
        backend.port = 1143
        backend.login = "nomad@proton.me"
        backend.auth.type = "password"
        backend.auth.raw = "{p}"
        ''',
        p,
    )


@cred("matrix-synapse-homeserver-yaml-registration-and-macaroon")
def _e_synapse(rng):
    a, b = symbolic(rng, 50, "~#@;:.,^&*=+-"), symbolic(rng, 50, "~#@;:.,^&*=+-")
    a, b = a.replace("'", ""), b.replace("'", "")
    return out(
        f"""
        server_name: "chat.example.org"
        database:
          name: psycopg2
          args:
            user: synapse
            password: !ENV SYNAPSE_DB_PASSWORD
        registration_shared_secret: '{a}'
        macaroon_secret_key: '{b}'
        """,
        a,
        b,
    )


@cred("element-devtools-access-token-matrix-curl")
def _e_matrix(rng):
    t = "syt_" + b64url(rng, 9) + "_" + mixed(rng, 20) + "_" + mixed(rng, 6)
    return out(
        f"""
        curl -s -X PUT "https://matrix.example.org/_matrix/client/v3/rooms/%21{mixed(rng, 18)}%3Aexample.org/send/m.room.message/txn{rng.randint(100, 999)}" \\
          -H "Authorization: Bearer {t}" -d '{{"msgtype":"m.text","body":"deploy finished"}}'
        """,
        t,
    )


@cred("mattermost-bot-access-token-mmctl-and-webhook")
def _e_mattermost(rng):
    t = lower(rng, 26)
    return out(
        f"""
        $ mmctl token generate ci-bot "ci pipeline"
        {t}: ci pipeline
        $ curl -H "Authorization: Bearer {t}" https://mm.example.com/api/v4/users/me
        """,
        t,
    )


@cred("rocketchat-rest-x-auth-token-headers")
def _e_rocket(rng):
    t = urlsafe(rng, 43)
    return out(
        f"""
        curl -H "X-Auth-Token: {t}" \\
             -H "X-User-Id: {mixed(rng, 17)}" \\
             -H "Content-type:application/json" \\
             https://chat.example.io/api/v1/chat.postMessage -d '{{"channel":"#ops","text":"backup ok"}}'
        """,
        t,
    )


@cred("zuliprc-bot-key-file")
def _e_zulip(rng):
    k = mixed(rng, 32)
    return out(
        f"""
        [api]
        email=standup-bot@zulip.example.com
        key={k}
        site=https://zulip.example.com
        """,
        k,
    )


@cred("znc-conf-user-pass-plain-and-network-server-password")
def _e_znc(rng):
    a = safe(rng, 16)
    return out(
        f"""
        <User nomad>
            Admin = true
            Nick = nomad
            <Network libera>
                Server = irc.libera.chat +6697 {a}
                LoadModule = sasl
            </Network>
        </User>
        """,
        a,
    )


@cred("weechat-secure-set-and-sasl-password-command")
def _e_weechat(rng):
    p = person(rng)
    return out(
        f'''
        /set irc.server.libera.sasl_mechanism plain
        /set irc.server.libera.sasl_username nomad
        /set irc.server.libera.sasl_password "{p}"
        /save
        ''',
        p,
    )


@cred("irssi-config-autosendcmd-nickserv-identify")
def _e_irssi(rng):
    p = person(rng)
    return out(
        f"""
        chatnets = {{
          OFTC = {{
            type = "IRC";
            autosendcmd = "/msg nickserv identify {p}; wait 2000";
          }};
        }};
        """,
        p,
    )


@cred("errbot-config-py-bot-identity-token")
def _e_errbot(rng):
    t = slack_token(rng, "xoxb")
    return out(
        f'''
        BACKEND = "SlackV3"
        BOT_DATA_DIR = "/srv/errbot/data"
        BOT_IDENTITY = {{
            "token": "{t}",
            "signing_secret": "",
        }}
        BOT_ADMINS = ("@oncall",)
        ''',
        t,
    )


@cred("sieve-managesieve-sieveshell-password-flag")
def _e_sieve(rng):
    p = safe(rng, 14)
    return out(
        f"""
        $ sieve-connect -s mail.example.net -u pia --passwordfd 3 3<<<'{p}' --upload --localsieve filters.sieve
        """,
        p,
    )


@cred("dovecot-passwd-file-plain-scheme-entry")
def _e_dovecot(rng):
    p = person(rng)
    return out(
        f"""
        # /etc/dovecot/users
        info@bakery.example:{{PLAIN}}{p}::::::
        orders@bakery.example:{{SHA512-CRYPT}}$6${hexa(rng, 16)}${b64(rng, 64)[:86]}::::::
        """,
        p,
    )


@cred("telegram-bot-python-application-builder-token")
def _e_tg(rng):
    t = f"{digits(rng, 10)}:AA" + urlsafe(rng, 33)
    return out(
        f'''
        from telegram.ext import ApplicationBuilder, CommandHandler

        app = ApplicationBuilder().token("{t}").build()
        app.add_handler(CommandHandler("status", status))
        app.run_polling()
        ''',
        t,
    )


@cred("discord-py-bot-run-token-literal")
def _e_discord(rng):
    t = b64url(rng, 18) + "." + urlsafe(rng, 6) + "." + urlsafe(rng, 38)
    return out(
        f'''
        intents = discord.Intents.default()
        intents.message_content = True
        bot = commands.Bot(command_prefix="!", intents=intents)
        bot.run("{t}")
        ''',
        t,
    )


# -- password-manager and browser exports --


@cred("keepass-xml-export-entry-protected-in-memory")
def _x_keepass(rng):
    p = symbolic(rng, 20, "-_.~!#*")
    return out(
        f"""
        <?xml version="1.0" encoding="utf-8" standalone="yes"?>
        <KeePassFile>
          <Root>
            <Group>
              <Name>Infrastructure</Name>
              <Entry>
                <UUID>{b64(rng, 16)}</UUID>
                <String><Key>Title</Key><Value>iDRAC rack 4</Value></String>
                <String><Key>UserName</Key><Value>root</Value></String>
                <String><Key>Password</Key><Value ProtectInMemory="True">{p}</Value></String>
                <String><Key>URL</Key><Value>https://10.9.4.11</Value></String>
              </Entry>
            </Group>
          </Root>
        </KeePassFile>
        """,
        p,
    )


@cred("onepassword-csv-export-login-with-otpauth")
def _x_1p(rng):
    p, s = safe(rng, 22), b32(rng, 32)
    return out(
        f'''
        Title,Website,Username,Password,OTPAuth,Favorite,Archived,Tags,Notes
        "Namecheap","https://www.namecheap.com","acme-domains","{p}","otpauth://totp/Namecheap:acme-domains?secret={s}&issuer=Namecheap",false,false,"infra",""
        ''',
        p,
        s,
    )


@cred("bitwarden-json-export-login-item")
def _x_bw(rng):
    p = symbolic(rng, 18)
    return out(
        jd(
            {
                "encrypted": False,
                "folders": [{"id": uid(rng), "name": "Finance"}],
                "items": [
                    {
                        "id": uid(rng),
                        "organizationId": None,
                        "folderId": None,
                        "type": 1,
                        "reprompt": 0,
                        "name": "Wise",
                        "notes": None,
                        "favorite": True,
                        "login": {
                            "uris": [{"match": None, "uri": "https://wise.com"}],
                            "username": "household@fastmail.example",
                            "password": p,
                            "totp": None,
                        },
                        "collectionIds": None,
                    }
                ],
            }
        ),
        p,
    )


@cred("lastpass-csv-export-secure-note-and-login")
def _x_lastpass(rng):
    p, n = person(rng), safe(rng, 16)
    return out(
        f"""
        url,username,password,totp,extra,name,grouping,fav
        https://portal.hosting.example/login,office@smallbiz.example,{p},,,Hosting portal,Business,0
        http://sn,,,,"NoteType:Server Name
        Hostname:nas.office.lan
        Username:admin
        Password:{n}",NAS admin,Business,0
        """,
        p,
        n,
    )


@cred("chrome-passwords-csv-export-three-columns-note")
def _x_chrome(rng):
    p = person(rng)
    return out(
        f"""
        name,url,username,password,note
        accounts.spotify.com,https://accounts.spotify.com/en/login,mila.r@gmail.com,{p},
        """,
        p,
    )


@cred("firefox-logins-csv-export-guid-timestamps")
def _x_firefox(rng):
    p = safe(rng, 15)
    return out(
        f'''
        "url","username","password","httpRealm","formActionOrigin","guid","timeCreated","timeLastUsed","timePasswordChanged"
        "https://webmail.uni.example","p.lindqvist","{p}",,"https://webmail.uni.example","{{{uid(rng)}}}","{epoch(rng)}000","{epoch(rng)}000","{epoch(rng)}000"
        ''',
        p,
    )


@cred("dashlane-csv-credentials-export")
def _x_dashlane(rng):
    p = person(rng)
    return out(
        f"""
        username,username2,username3,title,password,note,url,category,otpSecret
        h.yilmaz@outlook.com,,,Booking,{p},,https://booking.com,Travel,
        """,
        p,
    )


@cred("proton-pass-json-export-login-content")
def _x_proton(rng):
    p = symbolic(rng, 20)
    return out(
        jd(
            {
                "version": "1.21.2",
                "userId": mixed(rng, 22),
                "encrypted": False,
                "vaults": {
                    mixed(rng, 22): {
                        "name": "Personal",
                        "items": [
                            {
                                "itemId": mixed(rng, 22),
                                "data": {
                                    "metadata": {"name": "Router admin"},
                                    "type": "login",
                                    "content": {
                                        "itemUsername": "admin",
                                        "password": p,
                                        "urls": ["http://192.168.178.1"],
                                    },
                                },
                            }
                        ],
                    }
                },
            }
        ),
        p,
    )


@cred("enpass-json-export-fields-array")
def _x_enpass(rng):
    p = person(rng)
    return out(
        jd(
            {
                "items": [
                    {
                        "title": "Steuer-Portal",
                        "fields": [
                            {"label": "Benutzername", "type": "username", "value": "familie-k"},
                            {"label": "Passwort", "type": "password", "value": p, "sensitive": 1},
                        ],
                    }
                ]
            }
        ),
        p,
    )


@cred("pass-show-multiline-entry-terminal")
def _x_pass(rng):
    p = symbolic(rng, 24)
    return out(
        f"""
        $ pass show work/vpn-gateway
        {p}
        user: m.tanaka
        url: https://vpn.corp.example
        notes: rotated {day(rng)}
        """,
        p,
    )


@cred("keepassxc-cli-show-with-show-protected-flag")
def _x_kpcli(rng):
    p = safe(rng, 20)
    return out(
        f"""
        $ keepassxc-cli show -s ~/vault.kdbx "Servers/db-prod"
        Enter password to unlock /home/ops/vault.kdbx:
        Title: db-prod
        UserName: postgres
        Password: {p}
        URL: postgres://db-prod.lan
        Notes:
        """,
        p,
    )


@cred("safari-passwords-csv-export-otpauth-column")
def _x_safari(rng):
    p = person(rng)
    return out(
        f"""
        Title,URL,Username,Password,Notes,OTPAuth
        github.com (octo-lina),https://github.com/,octo-lina,{p},,
        """,
        p,
    )


@cred("nordpass-csv-export-folder-row")
def _x_nordpass(rng):
    p = symbolic(rng, 16)
    return out(
        f"""
        name,url,additional_urls,username,password,note,cardholdername,cardnumber,cvc,expirydate,zipcode,folder,full_name,phone_number,email,address1,address2,city,country,state,type
        Shopify Admin,https://admin.shopify.com,,owner@tinyshop.example,{p},,,,,,,Shop,,,,,,,,,password
        """,
        p,
    )


# -- environment and process dumps --


@cred("env-command-output-container-shell-sorted")
def _v_env(rng):
    a, b = "sk_live_51" + mixed(rng, 97), safe(rng, 18)
    return out(
        f"""
        / $ env | sort
        HOME=/root
        HOSTNAME={hexa(rng, 12)}
        NODE_ENV=production
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        PGPASSWORD={b}
        PGUSER=checkout
        SHLVL=1
        STRIPE_SECRET_KEY={a}
        """,
        a,
        b,
    )


@cred("printenv-single-var-terminal")
def _v_printenv(rng):
    t = gl_token(rng)
    return out(
        f"""
        dev@laptop:~/src/infra$ printenv GITLAB_TOKEN
        {t}
        """,
        t,
    )


@cred("proc-environ-caret-at-nul-rendering")
def _v_proc(rng):
    a, b = (
        "xoxp-" + digits(rng, 12) + "-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + hexa(rng, 32),
        hexa(rng, 64),
    )
    return out(
        f"""
        # cat -v /proc/{rng.randint(1000, 99999)}/environ
        PATH=/usr/bin:/bin^@LANG=C.UTF-8^@SLACK_USER_TOKEN={a}^@INVOCATION_ID={hexa(rng, 32)}^@HMAC_SIGNING_KEY={b}^@JOURNAL_STREAM=8:{rng.randint(10000, 99999)}^@
        """,
        a,
        b,
    )


@cred("docker-inspect-config-env-array-json")
def _v_docker(rng):
    a = "dop_v1_" + hexa(rng, 64)
    return out(
        f"""
        $ docker inspect --format '{{{{json .Config.Env}}}}' droplet-agent | jq .
        [
          "DIGITALOCEAN_ACCESS_TOKEN={a}",
          "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
          "AGENT_VERSION=3.16.11"
        ]
        """,
        a,
    )


@cred("ps-eww-process-line-with-env-suffix")
def _v_ps(rng):
    p = safe(rng, 18)
    return out(
        f"""
        $ ps eww -p $(pgrep -f pgbouncer)
            PID TTY      STAT   TIME COMMAND
          {rng.randint(1000, 9999)} ?        Ssl    3:41 /usr/bin/pgbouncer /etc/pgbouncer/pgbouncer.ini LANG=C.UTF-8 PATH=/usr/bin HOME=/var/lib/postgresql PGBOUNCER_AUTH_PASSWORD={p} USER=postgres
        """,
        p,
    )


@cred("systemctl-show-environment-user-manager")
def _v_systemctl(rng):
    t = "ntn_" + digits(rng, 11) + mixed(rng, 35)
    return out(
        f"""
        $ systemctl --user show-environment
        DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus
        HOME=/home/rin
        LANG=ja_JP.UTF-8
        NOTION_TOKEN={t}
        XDG_RUNTIME_DIR=/run/user/1000
        """,
        t,
    )


@cred("cmd-exe-set-command-output-windows")
def _v_cmdset(rng):
    p = "AccountKey=" + b64(rng, 64)
    v = p.split("=", 1)[1]
    return out(
        f"""
        C:\\Users\\build>set
        ALLUSERSPROFILE=C:\\ProgramData
        AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=fabrikamlogs;{p};EndpointSuffix=core.windows.net
        COMPUTERNAME=BUILD-W11-07
        NUMBER_OF_PROCESSORS=16
        OS=Windows_NT
        """,
        v,
    )


@cred("powershell-get-childitem-env-table")
def _v_pwsh(rng):
    k = anthropic_key(rng)
    return out(
        f"""
        PS C:\\> Get-ChildItem env: | Format-Table -AutoSize

        Name                           Value
        ----                           -----
        ANTHROPIC_API_KEY              {k}
        APPDATA                        C:\\Users\\kai\\AppData\\Roaming
        ComSpec                        C:\\WINDOWS\\system32\\cmd.exe
        """,
        k,
    )


@cred("java-hs-err-pid-log-environment-variables-section")
def _v_java(rng):
    p = safe(rng, 18)
    return out(
        f"""
        #
        # A fatal error has been detected by the Java Runtime Environment:
        #
        #  SIGSEGV (0xb) at pc=0x00007f3a2c1e4b10, pid={rng.randint(1000, 99999)}, tid={rng.randint(1000, 99999)}
        #
        ---------------  S Y S T E M  ---------------
        Environment Variables:
        JAVA_HOME=/usr/lib/jvm/temurin-21
        PATH=/usr/lib/jvm/temurin-21/bin:/usr/bin
        KAFKA_SASL_PASSWORD={p}
        SHELL=/bin/bash
        """,
        p,
    )


@cred("dotnet-createdump-triage-env-block")
def _v_dotnet(rng):
    c = f"Server=tcp:db.internal,1433;Database=Orders;User Id=orders;Password={safe(rng, 18)};"
    v = c.split("Password=")[1].rstrip(";")
    return out(
        f"""
        Unhandled exception. System.InvalidOperationException: Timeout expired.
           at Microsoft.Data.SqlClient.SqlConnection.Open()
        --- dotnet-dump analyze: !printenv ---
        DOTNET_RUNNING_IN_CONTAINER=true
        ConnectionStrings__Orders={c}
        ASPNETCORE_URLS=http://+:8080
        """,
        v,
    )


@cred("ruby-sentry-event-extra-env-hash")
def _v_ruby(rng):
    k = "rk_live_" + mixed(rng, 99)
    return out(
        f'''
        NoMethodError: undefined method `amount' for nil
          app/services/refund_service.rb:42:in `call'
        ENV dump (extra.env):
        {{"RAILS_ENV"=>"production", "STRIPE_RESTRICTED_KEY"=>"{k}", "RAILS_LOG_TO_STDOUT"=>"1"}}
        ''',
        k,
    )


@cred("php-fpm-whoops-server-env-table")
def _v_php(rng):
    p = safe(rng, 16)
    return out(
        f"""
        Environment & details:
        $_SERVER
        | Key                 | Value                                   |
        |---------------------|-----------------------------------------|
        | DB_HOST             | mysql                                   |
        | DB_USERNAME         | shop                                    |
        | DB_PASSWORD         | {p}                        |
        | REQUEST_METHOD      | POST                                    |
        """,
        p,
    )


@cred("rust-panic-debug-config-struct-print")
def _v_rust(rng):
    t = "sk_" + hexa(rng, 48)
    return out(
        f'''
        thread 'main' panicked at src/main.rs:57:10:
        called `Result::unwrap()` on an `Err` value: Config {{ listen: 0.0.0.0:8080, elevenlabs_api_key: "{t}", voice: "Rachel", retries: 3 }}
        note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
        ''',
        t,
    )


@cred("elixir-iex-system-get-env-map")
def _v_elixir(rng):
    k = "SG." + urlsafe(rng, 22) + "." + urlsafe(rng, 43)
    return out(
        f'''
        iex(app@10.0.3.4)1> System.get_env() |> Map.take(["MIX_ENV", "SENDGRID_API_KEY"])
        %{{"MIX_ENV" => "prod", "SENDGRID_API_KEY" => "{k}"}}
        ''',
        k,
    )


@cred("python-traceback-locals-os-environ-repr")
def _v_py(rng):
    k = "sk-ant-admin01-" + urlsafe(rng, 93) + "AA"
    return out(
        f"""
        Traceback (most recent call last):
          File "/app/usage_report.py", line 31, in <module>
            resp.raise_for_status()
        requests.exceptions.HTTPError: 429 Client Error: Too Many Requests
        Locals at frame 0:
          environ = environ({{'HOME': '/root', 'ANTHROPIC_ADMIN_KEY': '{k}', 'TZ': 'UTC'}})
        """,
        k,
    )


@cred("kubectl-exec-env-pod-output")
def _v_kexec(rng):
    p = safe(rng, 18)
    return out(
        f"""
        $ kubectl -n payments exec deploy/ledger -- env | grep -i rabbit
        RABBITMQ_URL=amqps://ledger:{p}@rabbitmq.payments.svc:5671/%2F
        RABBITMQ_PREFETCH=50
        """,
        p,
    )


@cred("launchctl-getenv-macos-terminal")
def _v_launchctl(rng):
    t = "lin_api_" + mixed(rng, 40)
    return out(
        f"""
        ~ % launchctl getenv LINEAR_API_KEY
        {t}
        """,
        t,
    )


@cred("node-process-env-console-dir-crash")
def _v_node(rng):
    k = "pat" + mixed(rng, 14) + "." + hexa(rng, 64)
    return out(
        f"""
        node:internal/process/promises:394
            triggerUncaughtException(err, true /* fromPromise */);
        Error: AIRTABLE_BASE not set
        process.env = {{
          NODE_VERSION: '22.12.0',
          AIRTABLE_TOKEN: '{k}',
          HOSTNAME: '{hexa(rng, 12)}'
        }}
        """,
        k,
    )


@cred("go-pprof-cmdline-and-expvar-json-env-flags")
def _v_go(rng):
    p = safe(rng, 18)
    return out(
        f"""
        $ curl -s localhost:6060/debug/vars | jq .cmdline
        [
          "/usr/local/bin/ingestor",
          "--nats-url=nats://ingest:{p}@nats.internal:4222",
          "--workers=16"
        ]
        """,
        p,
    )


@cred("supervisorctl-environment-dump-from-config-get")
def _v_supervisor(rng):
    k = "key-" + hexa(rng, 32)
    return out(
        f'''
        [program:mailer]
        command=/srv/mailer/bin/worker
        environment=MAILGUN_DOMAIN="mg.example.com",MAILGUN_API_KEY="{k}",PYTHONUNBUFFERED="1"
        autorestart=true
        ''',
        k,
    )


@cred("heroku-config-shell-format-output")
def _v_heroku(rng):
    a, b = hexa(rng, 32), safe(rng, 16)
    return out(
        f"""
        $ heroku config --shell -a shop-api
        WEB_CONCURRENCY=2
        DATABASE_URL=postgres://u{lower(rng, 13)}:p{a}@ec2-{rng.randint(1, 99)}-{rng.randint(1, 255)}.compute-1.amazonaws.com:5432/d{lower(rng, 13)}
        REDIS_URL=rediss://:{b}@ec2-redis.compute-1.amazonaws.com:6380
        """,
        "p" + a,
        b,
    )


@cred("gdb-print-environ-running-process")
def _v_gdb(rng):
    t = "xapp-1-" + upper(rng, 11) + "-" + digits(rng, 13) + "-" + hexa(rng, 64)
    return out(
        f"""
        (gdb) x/4s *environ
        0x7ffd5a1e2f41: "LANG=en_US.UTF-8"
        0x7ffd5a1e2f52: "SLACK_APP_TOKEN={t}"
        0x7ffd5a1e2fc9: "HOME=/home/bot"
        0x7ffd5a1e2fd8: "TERM=xterm-256color"
        """,
        t,
    )


# -- agent traces --


def _call_id(rng: random.Random) -> str:
    return "call_" + mixed(rng, 24)


@cred("openai-chat-completion-response-tool-calls-arguments-escaped")
def _t_oa_chat(rng):
    p = safe(rng, 18)
    args = jc(
        {
            "host": "db-replica.internal",
            "user": "analyst",
            "password": p,
            "query": "select count(*) from orders where created_at > now() - interval '1 day'",
        }
    )
    return out(
        jd(
            {
                "id": "chatcmpl-" + mixed(rng, 29),
                "object": "chat.completion",
                "created": epoch(rng),
                "model": "gpt-4.1-2025-04-14",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": _call_id(rng),
                                    "type": "function",
                                    "function": {"name": "run_sql", "arguments": args},
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
                "usage": {"prompt_tokens": 812, "completion_tokens": 61, "total_tokens": 873},
            }
        ),
        p,
    )


@cred("openai-chat-request-messages-tool-role-result-with-key")
def _t_oa_tool_msg(rng):
    k = "sk_" + hexa(rng, 48)
    msgs = [
        {"role": "system", "content": "You are a voice assistant builder."},
        {"role": "user", "content": "what key is the tts service using?"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": _call_id(rng),
                    "type": "function",
                    "function": {"name": "read_file", "arguments": jc({"path": "services/tts/.env"})},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": _call_id(rng),
            "content": f"ELEVENLABS_API_KEY={k}\nELEVENLABS_VOICE_ID={mixed(rng, 20)}\n",
        },
    ]
    return out(jd({"model": "gpt-4o-mini", "messages": msgs, "max_tokens": 400}), k)


@cred("openai-responses-api-function-call-item-arguments")
def _t_oa_resp(rng):
    t = "shpat_" + hexa(rng, 32)
    args = jc({"shop": "tiny-tea.myshopify.com", "access_token": t, "product_id": digits(rng, 13)})
    return out(
        jd(
            {
                "id": "resp_" + hexa(rng, 48),
                "object": "response",
                "status": "completed",
                "model": "gpt-5-mini",
                "output": [
                    {"type": "reasoning", "id": "rs_" + hexa(rng, 48), "summary": []},
                    {
                        "type": "function_call",
                        "id": "fc_" + hexa(rng, 48),
                        "call_id": _call_id(rng),
                        "name": "shopify_update_product",
                        "arguments": args,
                        "status": "completed",
                    },
                ],
            }
        ),
        t,
    )


@cred("openai-responses-stream-sse-function-call-arguments-delta")
def _t_oa_sse(rng):
    k = "re_" + urlsafe(rng, 32)
    half = len(k) // 2
    d1, d2 = '{"api_key":"' + k[:half], k[half:] + '","to":"ops@example.com"}'
    full = jc({"api_key": k, "to": "ops@example.com"})
    return out(
        f"""
        event: response.function_call_arguments.delta
        data: {jc({"type": "response.function_call_arguments.delta", "item_id": "fc_" + hexa(rng, 24), "delta": d1})}

        event: response.function_call_arguments.delta
        data: {jc({"type": "response.function_call_arguments.delta", "item_id": "fc_" + hexa(rng, 24), "delta": d2})}

        event: response.function_call_arguments.done
        data: {jc({"type": "response.function_call_arguments.done", "arguments": full})}
        """,
        k,
    )


@cred("anthropic-messages-response-tool-use-input-object")
def _t_an_tool_use(rng):
    p = safe(rng, 20)
    return out(
        jd(
            {
                "id": "msg_01" + mixed(rng, 22),
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {"type": "text", "text": "I'll create the read-only database user now."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01" + mixed(rng, 22),
                        "name": "bash",
                        "input": {"command": f"psql -c \"CREATE ROLE metabase LOGIN PASSWORD '{p}';\""},
                    },
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 2210, "output_tokens": 88},
            }
        ),
        p,
    )


@cred("anthropic-messages-request-tool-result-content-block")
def _t_an_tool_result(rng):
    k = gh_fine(rng)
    body = {
        "model": "claude-opus-4-1",
        "max_tokens": 2048,
        "messages": [
            {"role": "user", "content": "why does the release job fail?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01" + mixed(rng, 22),
                        "name": "read_file",
                        "input": {"path": ".github/release.env"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01" + mixed(rng, 22),
                        "content": f"GH_RELEASE_TOKEN={k}\nRELEASE_BRANCH=main",
                    }
                ],
            },
        ],
    }
    return out(jd(body), k)


@cred("anthropic-stream-input-json-delta-partial-json")
def _t_an_stream(rng):
    p = person(rng)
    full = jc({"host": "ftp.printshop.example", "user": "orders", "password": p})
    cut = full.index(p) + len(p) // 2
    return out(
        f"""
        event: content_block_start
        data: {jc({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_01" + mixed(rng, 22), "name": "ftp_upload", "input": {}}})}

        event: content_block_delta
        data: {jc({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": full[:cut]}})}

        event: content_block_delta
        data: {jc({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": full[cut:]}})}

        event: content_block_stop
        data: {{"type":"content_block_stop","index":1}}
        # assembled input: {full}
        """,
        p,
    )


@cred("langchain-run-tree-json-tool-run-inputs-outputs")
def _t_lc_run(rng):
    t = "ntn_" + digits(rng, 11) + mixed(rng, 35)
    return out(
        jd(
            {
                "id": uid(rng),
                "name": "notion_search",
                "run_type": "tool",
                "trace_id": uid(rng),
                "dotted_order": f"{day(rng).replace('-', '')}T{hms(rng).replace(':', '')}000000Z{uid(rng)}",
                "inputs": {"input": jc({"query": "Q3 roadmap", "notion_token": t})},
                "outputs": {"output": "3 pages found"},
                "error": None,
                "tags": ["seq:step:2"],
            }
        ),
        t,
    )


@cred("langgraph-checkpoint-state-messages-ai-tool-call-args")
def _t_lg_state(rng):
    k = "sk-" + hexa(rng, 32)
    state = {
        "values": {
            "messages": [
                {"type": "human", "content": "switch the summariser to deepseek, here's the key " + k},
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [
                        {
                            "name": "update_env",
                            "args": {"DEEPSEEK_API_KEY": k},
                            "id": _call_id(rng),
                            "type": "tool_call",
                        }
                    ],
                },
            ]
        },
        "next": ["tools"],
        "config": {"configurable": {"thread_id": uid(rng), "checkpoint_ns": ""}},
    }
    return out(jd(state), k)


@cred("mcp-jsonrpc-tools-call-request-arguments-credentials")
def _t_mcp_call(rng):
    p = safe(rng, 18)
    return out(
        jc(
            {
                "jsonrpc": "2.0",
                "id": rng.randint(2, 99),
                "method": "tools/call",
                "params": {
                    "name": "mysql_query",
                    "arguments": {
                        "connection": f"mysql://report:{p}@10.2.0.14:3306/crm",
                        "sql": "SELECT id, plan FROM accounts LIMIT 20",
                    },
                },
            }
        ),
        p,
    )


@cred("mcp-jsonrpc-tools-call-result-text-content-dotenv")
def _t_mcp_result(rng):
    a, b = "pk_" + digits(rng, 9) + "_" + upper(rng, 32), safe(rng, 16)
    text = f"CLICKUP_API_TOKEN={a}\nSMTP_PASS={b}\n"
    return out(
        jc(
            {
                "jsonrpc": "2.0",
                "id": rng.randint(2, 99),
                "result": {"content": [{"type": "text", "text": text}], "isError": False},
            }
        ),
        a,
        b,
    )


@cred("mcp-stdio-server-log-initialize-env-echo")
def _t_mcp_log(rng):
    k = "lin_api_" + mixed(rng, 40)
    return out(
        f'''
        {when(rng)} [linear-mcp] [info] Initializing server...
        {when(rng)} [linear-mcp] [info] Server started and connected successfully
        {when(rng)} [linear-mcp] [debug] spawn npx -y @tacticlabs/linear-mcp-server env={{"LINEAR_API_KEY":"{k}","PATH":"/usr/local/bin:/usr/bin"}}
        {when(rng)} [linear-mcp] [info] Message from client: {{"method":"initialize","params":{{"protocolVersion":"2025-06-18"}},"jsonrpc":"2.0","id":0}}
        ''',
        k,
    )


@cred("react-scratchpad-thought-action-observation-shell")
def _t_react(rng):
    p = safe(rng, 16)
    return out(
        f"""
        Thought: I need to check whether the redis instance requires auth.
        Action: shell
        Action Input: grep -n requirepass /etc/redis/redis.conf
        Observation: 1043:requirepass {p}
        Thought: Auth is enabled; I'll pass it to redis-cli.
        Action: shell
        Action Input: redis-cli -a '{p}' --no-auth-warning INFO keyspace
        Observation: # Keyspace
        db0:keys=18412,expires=902,avg_ttl=0
        Final Answer: Redis is up with ~18k keys.
        """,
        p,
    )


@cred("coding-agent-shell-tool-output-cat-credentials-json")
def _t_agent_shell(rng):
    t = "ya29." + urlsafe(rng, 140)
    r = "1//0" + urlsafe(rng, 96)
    return out(
        f'''
        ● Bash(cat ~/.config/gcloud/application_default_credentials.json)
          ⎿  {{
               "account": "",
               "client_id": "{digits(rng, 12)}-{lower(rng, 32)}.apps.googleusercontent.com",
               "refresh_token": "{r}",
               "type": "authorized_user",
               "universe_domain": "googleapis.com"
             }}
        ● Bash(gcloud auth print-access-token)
          ⎿  {t}
        ''',
        r,
        t,
    )


@cred("agent-jsonl-transcript-tool-input-command-with-token")
def _t_jsonl(rng):
    t = "hvs." + urlsafe(rng, 24)
    line1 = jc(
        {
            "type": "assistant",
            "uuid": uid(rng),
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_01" + mixed(rng, 22),
                        "name": "Bash",
                        "input": {
                            "command": f"VAULT_TOKEN={t} vault kv get -mount=secret app/prod",
                            "description": "Read prod app secrets",
                        },
                    }
                ],
            },
        }
    )
    line2 = jc(
        {
            "type": "user",
            "uuid": uid(rng),
            "toolUseResult": {
                "stdout": "== Secret Path ==\nsecret/data/app/prod\n(values hidden by policy)",
                "stderr": "",
            },
        }
    )
    return out(line1 + "\n" + line2, t)


@cred("function-calling-double-escaped-arguments-in-log-line")
def _t_double(rng):
    k = "AIza" + urlsafe(rng, 35)
    inner = jc({"name": "geocode", "arguments": jc({"address": "Rua Augusta 120, Lisboa", "key": k})})
    return out(
        f"""
        {when(rng)} INFO  agent.runtime  tool_dispatch payload={json.dumps(inner)}
        {when(rng)} INFO  agent.runtime  tool_result status=200 latency_ms=212
        """,
        k,
    )


@cred("crewai-verbose-log-tool-input-dict")
def _t_crew(rng):
    k = hexa(rng, 40)
    return out(
        f'''
        # Agent: Market Researcher
        ## Thought: I should query the SERP API for competitor pricing.
        ## Using tool: SerpApi Search
        ## Tool Input:
        "{{\\"q\\": \\"standing desk price 2026\\", \\"api_key\\": \\"{k}\\", \\"engine\\": \\"google\\"}}"
        ## Tool Output:
        {{"organic_results": [{{"position": 1, "title": "Best standing desks"}}]}}
        ''',
        k,
    )


@cred("autogen-groupchat-message-code-block-with-literal-key")
def _t_autogen(rng):
    k = hexa(rng, 32)
    return out(
        f'''
        Coder (to chat_manager):

        ```python
        import requests
        r = requests.get("https://api.openweathermap.org/data/2.5/weather",
                         params={{"q": "Nairobi", "appid": "{k}"}})
        print(r.json()["main"])
        ```

        --------------------------------------------------------------------------------
        ''',
        k,
    )


@cred("semantic-kernel-function-invoked-log-arguments")
def _t_sk(rng):
    p = safe(rng, 16)
    return out(
        f'''
        info: Microsoft.SemanticKernel.KernelFunction[0]
              Function Ftp-Upload invoking.
        trce: Microsoft.SemanticKernel.KernelFunction[0]
              Function arguments: {{"host":"ftp.partner.example","username":"edi","password":"{p}","path":"/in/po_812.edi"}}
        info: Microsoft.SemanticKernel.KernelFunction[0]
              Function Ftp-Upload succeeded.
        ''',
        p,
    )


@cred("gemini-generatecontent-function-call-args")
def _t_gemini(rng):
    t = "xoxb-" + digits(rng, 12) + "-" + digits(rng, 13) + "-" + mixed(rng, 24)
    return out(
        jd(
            {
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {
                                    "functionCall": {
                                        "name": "post_slack_message",
                                        "args": {
                                            "channel": "#release",
                                            "text": "v4.2 shipped",
                                            "bot_token": t,
                                        },
                                    }
                                }
                            ],
                        },
                        "finishReason": "STOP",
                    }
                ],
                "modelVersion": "gemini-2.5-pro",
            }
        ),
        t,
    )


@cred("bedrock-converse-tooluse-input-block")
def _t_bedrock_tool(rng):
    p = person(rng)
    return out(
        jd(
            {
                "output": {
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "toolUse": {
                                    "toolUseId": "tooluse_" + urlsafe(rng, 22),
                                    "name": "create_wifi_guest",
                                    "input": {"ssid": "Lobby-Guest", "passphrase": p, "vlan": 30},
                                }
                            }
                        ],
                    }
                },
                "stopReason": "tool_use",
                "usage": {"inputTokens": 311, "outputTokens": 54},
            }
        ),
        p,
    )


@cred("litellm-proxy-spend-log-request-body-escaped")
def _t_litellm(rng):
    k = "gsk_" + mixed(rng, 52)
    body = jc(
        {"model": "groq/llama-3.3-70b", "messages": [{"role": "user", "content": "ping"}], "api_key": k}
    )
    return out(
        jd(
            {
                "request_id": "chatcmpl-" + uid(rng),
                "call_type": "acompletion",
                "spend": 0.000041,
                "model": "groq/llama-3.3-70b",
                "proxy_server_request": body,
                "startTime": when(rng),
                "endTime": when(rng),
            }
        ),
        k,
    )


@cred("agent-memory-note-markdown-remembered-credentials")
def _t_memory(rng):
    p, k = safe(rng, 16), "sk-or-v1-" + hexa(rng, 64)
    return out(
        f"""
        ## Project facts (auto-saved)
        - staging admin login: `admin` / `{p}` (user said it's fine to store)
        - OpenRouter key for evals: {k}
        - deploy target: fly.io app `notes-stg`
        """,
        p,
        k,
    )


@cred("openai-agents-sdk-trace-span-function-input")
def _t_agents_span(rng):
    t = "pat-na1-" + uid(rng)
    return out(
        jd(
            {
                "object": "trace.span",
                "id": "span_" + hexa(rng, 24),
                "trace_id": "trace_" + hexa(rng, 32),
                "span_data": {
                    "type": "function",
                    "name": "hubspot_create_contact",
                    "input": jc({"email": "lead@example.com", "hubspot_token": t}),
                    "output": jc({"id": digits(rng, 11)}),
                },
            }
        ),
        t,
    )


@cred("cursor-agent-terminal-block-export-token")
def _t_cursor(rng):
    t = mixed(rng, 24)
    return out(
        f"""
        Run command: export VERCEL_TOKEN={t} && vercel deploy --prebuilt --prod --token $VERCEL_TOKEN
        Output:
        Vercel CLI 41.6.0
        🔍  Inspect: https://vercel.com/acme/web/{mixed(rng, 9)} [2s]
        ✅  Production: https://web-{lower(rng, 9)}-acme.vercel.app [21s]
        """,
        t,
    )


@cred("agent-plan-yaml-step-with-env-secret")
def _t_plan(rng):
    t = "dckr_pat_" + urlsafe(rng, 27)
    return out(
        f"""
        plan:
          - id: 1
            tool: shell
            run: docker login -u acmebuild --password {t}
          - id: 2
            tool: shell
            run: docker buildx build --platform linux/amd64,linux/arm64 -t acmebuild/api:2.0 --push .
        """,
        t,
    )


@cred("ollama-openwebui-chat-export-json-message-key")
def _t_owui(rng):
    k = "sk_live_" + hexa(rng, 40)
    return out(
        jd(
            {
                "id": uid(rng),
                "title": "Fix webhook",
                "chat": {
                    "messages": [
                        {
                            "role": "user",
                            "content": f"the webhook 401s. our paystack secret is {k} "
                            "— can you check the signature code?",
                        },
                        {"role": "assistant", "content": "Let's look at how you compute the HMAC..."},
                    ]
                },
            }
        ),
        k,
    )


@cred("langsmith-trace-export-csv-row-inputs")
def _t_ls_csv(rng):
    k = "tvly-" + mixed(rng, 32)
    inp = jc({"query": "latest EU AI act guidance", "tavily_api_key": k}).replace('"', '""')
    return out(
        f'''
        id,name,run_type,start_time,inputs,outputs,error
        {uid(rng)},tavily_search,tool,{when(rng)},"{inp}","{{""results"": 5}}",
        ''',
        k,
    )


@cred("haystack-pipeline-yaml-dump-with-resolved-secret")
def _t_haystack(rng):
    k = "pcsk_" + mixed(rng, 5) + "_" + mixed(rng, 63)
    return out(
        f"""
        components:
          retriever:
            type: haystack_integrations.components.retrievers.pinecone.PineconeEmbeddingRetriever
            init_parameters:
              document_store:
                type: haystack_integrations.document_stores.pinecone.PineconeDocumentStore
                init_parameters:
                  api_key:
                    type: token
                    token: {k}
                  index: kb-prod
        """,
        k,
    )


@cred("agent-tool-error-message-echoes-url-with-password")
def _t_err(rng):
    p = safe(rng, 16)
    return out(
        jd(
            {
                "type": "function_call_output",
                "call_id": _call_id(rng),
                "output": jc(
                    {
                        "error": f"ConnectionRefusedError: could not connect to amqp://worker:{p}@mq.internal:5672// "
                        "after 3 retries"
                    }
                ),
            }
        ),
        p,
    )


@cred("claude-code-hooks-settings-json-command-with-token")
def _t_hooks(rng):
    t = "tk_" + lower(rng, 29)
    return out(
        jd(
            {
                "hooks": {
                    "Stop": [
                        {
                            "hooks": [
                                {
                                    "type": "command",
                                    "command": f"curl -s -X POST https://ntfy.sh/agent-done -H 'Authorization: Bearer {t}' -d done",
                                }
                            ]
                        }
                    ]
                }
            }
        ),
        t,
    )


@cred("agent-scratchpad-markdown-table-of-found-secrets")
def _t_audit(rng):
    a, b = mixed(rng, 32), "whsec_" + mixed(rng, 32)
    return out(
        f"""
        ### Findings (repo audit, step 4/7)
        | file | line | kind | value |
        |---|---|---|---|
        | config/twilio.yml | 3 | Twilio API key secret | `{a}` |
        | app/webhooks.rb | 11 | Stripe webhook secret | `{b}` |
        Next: open PRs to move both into the secrets manager.
        """,
        a,
        b,
    )


@cred("mcp-http-transport-request-headers-log")
def _t_mcp_http(rng):
    t = "sntryu_" + hexa(rng, 64)
    return out(
        f"""
        POST /mcp HTTP/1.1
        Host: mcp.sentry.dev
        Accept: application/json, text/event-stream
        Mcp-Session-Id: {uid(rng)}
        Authorization: Bearer {t}
        Content-Type: application/json

        {{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"find_issues","arguments":{{"query":"is:unresolved"}}}}}}
        """,
        t,
    )


@cred("dspy-history-inspect-prompt-with-pasted-key")
def _t_dspy(rng):
    k = "fw_" + mixed(rng, 24)
    return out(
        f"""
        System message:

        Your input fields are:
        1. `question` (str)

        User message:

        [[ ## question ## ]]
        The eval harness keeps failing with 401, I set FIREWORKS_API_KEY={k} in the runner, why?

        Response:

        [[ ## answer ## ]]
        The runner container does not inherit your shell env...
        """,
        k,
    )


@cred("swe-agent-trajectory-json-action-observation")
def _t_swe(rng):
    p = safe(rng, 16)
    return out(
        jd(
            {
                "trajectory": [
                    {
                        "action": "cat docker-compose.override.yml",
                        "observation": f"services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: {p}\n",
                        "thought": "Check the db config.",
                    },
                    {"action": "submit", "observation": "", "thought": "Done."},
                ]
            }
        ),
        p,
    )


# -- people, in many languages and scripts --


def native(rng: random.Random, words: tuple[str, ...]) -> str:
    """A person's password built from words of their own language (often non-ASCII), a number and a mark."""
    while True:
        v = (
            rng.choice(words)
            + rng.choice(words).capitalize()
            + str(rng.randint(10, 9999))
            + rng.choice("!#.*$-_")
        )
        if len(v) >= 8:
            return v


@cred("spanish-whatsapp-wifi-and-router-admin-lines")
def _h_es(rng):
    a, b = native(rng, ("ñandú", "cigüeña", "pingüino", "limón", "corazón")), safe(rng, 12)
    return out(
        f"""
        [{day(rng)} 19:42] Tía Carmen: Nene, ¿cómo entro al wifi de la casa nueva?
        [{day(rng)} 19:44] Pablo: La red es "MOVISTAR_4F21" y para entrar pones {a}
        [{day(rng)} 19:44] Pablo: Y si hay que reiniciar el router, el usuario es 1234 y la clave de admin {b}
        [{day(rng)} 19:45] Tía Carmen: Gracias mi amor 😘
        """,
        a,
        b,
    )


@cred("portuguese-brazil-email-acesso-sistema-credenciais-abaixo")
def _h_pt(rng):
    p = safe(rng, 14)
    return out(
        f"""
        Assunto: Acesso ao ERP — novo colaborador
        Olá Juliana,

        seguem abaixo as credenciais de acesso ao sistema:
        Usuário: juliana.f
        Senha provisória: {p}

        No primeiro login o sistema vai pedir para trocar.
        Abs,
        TI — Filial Campinas
        """,
        p,
    )


@cred("french-teams-message-mot-de-passe-ligne-suivante")
def _h_fr(rng):
    p = native(rng, ("château", "écureuil", "forêt", "crêpe", "noël"))
    return out(
        f"""
        Claire Moreau  {hms(rng)[:5]}
        Pour le compte partagé de la compta (compta@cabinet-moreau.fr), tu te connectes avec :
        {p}
        Merci de ne pas le transférer par mail 🙏
        """,
        p,
    )


@cred("german-ticket-zugangsdaten-tabelle-vpn")
def _h_de(rng):
    a, b = native(rng, ("straße", "grün", "bär", "fuß", "käse")), safe(rng, 16)
    return out(
        f"""
        Ticket #{rng.randint(10000, 99999)} – Einrichtung Homeoffice Fr. Schäfer
        Zugangsdaten wie besprochen:

        | System        | Benutzer   | Kennwort          |
        |---------------|------------|-------------------|
        | Windows-Login | schaefer.k | {a} |
        | VPN (FortiClient) | schaefer.k | {b} |

        Bitte nach der ersten Anmeldung ändern.
        """,
        a,
        b,
    )


@cred("italian-telegram-accedi-con-questa")
def _h_it(rng):
    p = person(rng)
    return out(
        f"""
        Marco, [{hms(rng)[:5]}]
        per il pannello di Aruba accedi con questa: {p}
        l'utente è sempre info@trattoria-dasilvio.it
        """,
        p,
    )


@cred("dutch-slack-inloggegevens-bullets")
def _h_nl(rng):
    p = safe(rng, 15)
    return out(
        f"""
        Hoi Sanne! Inloggegevens voor de testomgeving:
        • url: https://test.boekhoud.nl
        • gebruiker: sanne.devries
        • wachtwoord: {p}
        Succes morgen met de demo!
        """,
        p,
    )


@cred("polish-messenger-haslo-z-polskimi-znakami")
def _h_pl(rng):
    p = native(rng, ("żółw", "źrebię", "gęś", "łódź", "ćma"))
    return out(
        f"""
        Kasia: Hej, jakie jest hasło do Netflixa?
        Tomek: loguj się na tomek.w@wp.pl, hasło: {p}
        Kasia: dzięki!!
        """,
        p,
    )


@cred("czech-email-prihlasovaci-udaje-odrazky")
def _h_cs(rng):
    p = native(rng, ("řeřicha", "žába", "čáp", "ústa", "kůň"))
    return out(
        f"""
        Dobrý den, paní Nováková,
        posílám přihlašovací údaje do e-shopu:
          - jméno: novakova
          - heslo: {p}
        S pozdravem, Jan Dvořák
        """,
        p,
    )


@cred("slovak-sms-heslo-na-wifi")
def _h_sk(rng):
    p = person(rng)
    return out(
        f"""
        SMS od: +421 9{digits(rng, 8)}
        Ahoj, wifi v chate je "Chata_Tatry", heslo {p}. Kľúče sú pod kvetináčom.
        """,
        p,
    )


@cred("hungarian-viber-jelszo-belepeshez")
def _h_hu(rng):
    p = native(rng, ("őszibarack", "tükör", "ünnep", "sün", "fű"))
    return out(
        f"""
        Ildikó: Szia! Az Ügyfélkapuhoz ezzel tudsz belépni: {p}
        Ildikó: a felhasználónév a szokásos
        Bence: köszi, megy!
        """,
        p,
    )


@cred("romanian-whatsapp-parola-contului")
def _h_ro(rng):
    p = native(rng, ("știucă", "țânțar", "mâță", "pădure", "brânză"))
    return out(
        f"""
        {day(rng)}, {hms(rng)[:5]} - Andrei: Pt contul de la ANAF folosește {p}
        {day(rng)}, {hms(rng)[:5]} - Andrei: și nu-l mai schimba, te rog 😅
        """,
        p,
    )


@cred("swedish-teams-losenord-for-skrivaren")
def _h_sv(rng):
    p = native(rng, ("älg", "björk", "smörgås", "åska", "öga"))
    return out(
        f"""
        Erik Lindqvist: Skrivarens webbgränssnitt → admin / {p}
        Erik Lindqvist: (ändra gärna efter mötet)
        """,
        p,
    )


@cred("norwegian-epost-passord-i-egen-linje")
def _h_no(rng):
    p = native(rng, ("blåbær", "fjøs", "ørret", "påske", "hytte"))
    return out(
        f"""
        Hei Ingrid,

        her er det nye passordet til regnskapssystemet (Tripletex):

        {p}

        Mvh
        Ole
        """,
        p,
    )


@cred("danish-chat-kode-til-alarmen-og-app")
def _h_da(rng):
    p = person(rng)
    return out(
        f"""
        Mette 14:03: Appen til alarmen (Verisure) – log ind med mette@familien.dk og koden {p}
        Lars 14:05: super, tak skat
        """,
        p,
    )


@cred("finnish-slack-tunnukset-alla")
def _h_fi(rng):
    p = native(rng, ("äiti", "pöllö", "järvi", "sauna", "mökki"))
    return out(
        f"""
        Tunnukset alla 👇
        käyttäjä: testi.tunnus
        salasana: {p}
        (toimii vain stagingissa)
        """,
        p,
    )


@cred("estonian-email-parool-jargmisel-real")
def _h_et(rng):
    p = native(rng, ("õun", "jäär", "öökull", "küüslauk", "täht"))
    return out(
        f"""
        Tere Kadri!
        Raamatupidamisprogrammi uus parool:
        {p}
        Kasutajanimi jääb samaks.
        """,
        p,
    )


@cred("latvian-chat-parole-ieejai")
def _h_lv(rng):
    p = native(rng, ("ābols", "ķirsis", "ūdens", "žagata", "ģitāra"))
    return out(
        f"""
        Jānis: parole ieejai sistēmā — {p}
        Līga: paldies, strādā!
        """,
        p,
    )


@cred("lithuanian-ticket-slaptazodis")
def _h_lt(rng):
    p = safe(rng, 14)
    return out(
        f"""
        Užklausa Nr. {rng.randint(1000, 9999)}: naujas darbuotojas
        Prisijungimas prie el. pašto: r.petraitis@imone.lt
        Laikinas slaptažodis: {p}
        """,
        p,
    )


@cred("greek-viber-kodikos-me-ellinika")
def _h_el(rng):
    p = native(rng, ("ήλιος", "θάλασσα", "ελιά", "σπίτι", "γάτα"))
    return out(
        f"""
        Νίκος: Ο κωδικός για το Taxisnet είναι αυτός: {p}
        Νίκος: όνομα χρήστη το ΑΦΜ σου
        """,
        p,
    )


@cred("turkish-whatsapp-sifre-ile-giris")
def _h_tr(rng):
    p = native(rng, ("çiçek", "güneş", "ışık", "şeker", "öğretmen"))
    return out(
        f"""
        [{day(rng)} {hms(rng)}] Ayşe: e-Devlet'e bu şifreyle gir: {p}
        [{day(rng)} {hms(rng)}] Mehmet: tamam abla sağ ol
        """,
        p,
    )


@cred("russian-telegram-dannye-dlya-vhoda-bullets")
def _h_ru(rng):
    a, b = native(rng, ("медведь", "берёза", "самовар", "ёжик", "зима")), safe(rng, 14)
    return out(
        f"""
        Сергей, данные для входа:
        — личный кабинет Госуслуг: {a}
        — роутер (admin): {b}
        Не пересылай никому 🙏
        """,
        a,
        b,
    )


@cred("ukrainian-email-oblikovi-dani")
def _h_uk(rng):
    p = person(rng)
    return out(
        f"""
        Доброго дня, Олено!
        Облікові дані до CRM:
        логін: olena.k
        пароль: {p}
        З повагою, відділ ІТ
        """,
        p,
    )


@cred("bulgarian-chat-parola-za-sistemata")
def _h_bg(rng):
    p = native(rng, ("слънце", "ябълка", "щъркел", "мечка", "роза"))
    return out(
        f"""
        Петър: за системата ползвай {p}
        Мария: благодаря!
        """,
        p,
    )


@cred("serbian-cyrillic-viber-lozinka")
def _h_sr(rng):
    p = person(rng)
    return out(
        f"""
        Милош: Лозинка за рачуноводствени програм: {p}
        Милош: корисник је канцеларија
        """,
        p,
    )


@cred("croatian-email-lozinka-za-wifi-ured")
def _h_hr(rng):
    p = native(rng, ("žaba", "čaša", "šuma", "đak", "ćup"))
    return out(
        f"""
        Bok svima,
        nova WiFi mreža u uredu je "Ured-5G", lozinka {p}
        Lp, Ivana
        """,
        p,
    )


@cred("slovenian-chat-geslo-za-banko")
def _h_sl(rng):
    p = safe(rng, 13)
    return out(
        f"""
        Uroš: za spletno banko uporabi to geslo → {p}
        Nina: hvala, sem notri
        """,
        p,
    )


@cred("arabic-whatsapp-kalimat-al-murur")
def _h_ar(rng):
    p = person(rng)
    return out(
        f"""
        أحمد: كلمة المرور للحساب المشترك:
        {p}
        أحمد: اسم المستخدم هو البريد الإلكتروني للشركة
        """,
        p,
    )


@cred("hebrew-slack-sisma-lemaarechet")
def _h_he(rng):
    p = safe(rng, 14)
    return out(
        f"""
        דנה: הסיסמה למערכת השכר היא {p} (שם משתמש: dana.l)
        יוסי: תודה!
        """,
        p,
    )


@cred("persian-telegram-panel-host-login-value")
def _h_fa(rng):
    p = person(rng)
    return out(
        f"""
        رضا: برای ورود به پنل هاست از این استفاده کن: {p}
        رضا: نام کاربری: admin
        """,
        p,
    )


@cred("urdu-sms-password-roman-and-nastaliq")
def _h_ur(rng):
    p = person(rng)
    return out(
        f"""
        بھائی، دفتر کے وائی فائی کا پاس ورڈ یہ ہے:
        {p}
        """,
        p,
    )


@cred("hindi-whatsapp-login-ke-liye-yeh-use-karo")
def _h_hi(rng):
    p = person(rng)
    return out(
        f"""
        [{hms(rng)[:5]}] राहुल: भाई, पोर्टल पर लॉगिन के लिए यह इस्तेमाल करो: {p}
        [{hms(rng)[:5]}] राहुल: यूज़रनेम तुम्हारा कर्मचारी आईडी है
        """,
        p,
    )


@cred("bengali-email-passward-nicher-line")
def _h_bn(rng):
    p = safe(rng, 13)
    return out(
        f"""
        প্রিয় সুমন,
        অফিস ইমেইলের নতুন পাসওয়ার্ড নিচে দিলাম:
        {p}
        ধন্যবাদ
        """,
        p,
    )


@cred("tamil-chat-kadavuchol")
def _h_ta(rng):
    p = person(rng)
    return out(
        f"""
        கார்த்திக்: சர்வர் கடவுச்சொல் {p}
        கார்த்திக்: யாருக்கும் அனுப்ப வேண்டாம்
        """,
        p,
    )


@cred("telugu-sms-password-pampistunna")
def _h_te(rng):
    p = person(rng)
    return out(
        f"""
        శ్రీను: బ్యాంక్ యాప్ పాస్‌వర్డ్ పంపిస్తున్నా — {p}
        """,
        p,
    )


@cred("marathi-chat-pasword-vapar")
def _h_mr(rng):
    p = safe(rng, 12)
    return out(
        f"""
        सचिन: टॅली सर्व्हरसाठी हा पासवर्ड वापर: {p}
        """,
        p,
    )


@cred("gujarati-whatsapp-password-aapyo")
def _h_gu(rng):
    p = person(rng)
    return out(
        f"""
        હેતલ: GST પોર્ટલનો પાસવર્ડ: {p}
        હેતલ: યુઝર આઈડી પહેલાં જેવો જ છે
        """,
        p,
    )


@cred("punjabi-chat-password-gurmukhi")
def _h_pa(rng):
    p = person(rng)
    return out(
        f"""
        ਗੁਰਪ੍ਰੀਤ: ਦੁਕਾਨ ਦੇ ਕੰਪਿਊਟਰ ਦਾ ਪਾਸਵਰਡ {p} ਹੈ
        """,
        p,
    )


@cred("thai-line-message-rahat-phan")
def _h_th(rng):
    p = native(rng, ("แมว", "ช้าง", "ทะเล", "ดาว", "ฝน"))
    return out(
        f"""
        {hms(rng)[:5]} น้องแพร: พี่คะ รหัสผ่านเข้าระบบบัญชีคือ
        {hms(rng)[:5]} น้องแพร: {p}
        {hms(rng)[:5]} พี่ต้น: ขอบคุณครับ
        """,
        p,
    )


@cred("vietnamese-zalo-mat-khau-dang-nhap")
def _h_vi(rng):
    p = native(rng, ("trăng", "hoa", "biển", "mưa", "đường"))
    return out(
        f"""
        Minh Anh: Anh ơi, tài khoản quản trị web: admin — mật khẩu: {p}
        Quang: ok em, anh vào được rồi
        """,
        p,
    )


@cred("indonesian-chat-kata-sandi-untuk-masuk")
def _h_id(rng):
    p = person(rng)
    return out(
        f"""
        Dewi: Mas, buat masuk dashboard Tokopedia Seller pakai ini ya: {p}
        Dewi: email toko.berkah@gmail.com
        """,
        p,
    )


@cred("malay-email-kata-laluan-sementara")
def _h_ms(rng):
    p = safe(rng, 14)
    return out(
        f"""
        Salam Encik Faizal,
        Kata laluan sementara untuk portal HR ialah {p}
        Sila tukar selepas log masuk pertama.
        """,
        p,
    )


@cred("tagalog-messenger-password-pang-login")
def _h_tl(rng):
    p = person(rng)
    return out(
        f"""
        Ate Joy: pang-login sa GCash ng tindahan: {p}
        Ate Joy: wag mo ipakita kay bunso ha
        """,
        p,
    )


@cred("japanese-slack-passu-wado-kaigyou")
def _h_ja(rng):
    p = safe(rng, 14)
    return out(
        f"""
        佐藤 {hms(rng)[:5]}
        検証環境の管理画面、ログイン情報です。
        ID：sato-admin
        パスワード：{p}
        （明日には変更します）
        """,
        p,
    )


@cred("japanese-email-fullwidth-colon-and-kana-password")
def _h_ja2(rng):
    p = native(rng, ("さくら", "ねこ", "やま", "うみ", "ほし"))
    return out(
        f"""
        件名：共有PCのログインについて

        田中さん

        共有PCには下記でログインしてください。
        ユーザー名　kyoyu
        パスワード　{p}

        総務　鈴木
        """,
        p,
    )


@cred("korean-kakaotalk-router-admin-changed-to")
def _h_ko(rng):
    p = native(rng, ("사과", "하늘", "바다", "고양이", "별"))
    return out(
        f"""
        [오후 {rng.randint(1, 11)}:{rng.randint(10, 59)}] 김민수: 공유기 관리자 비밀번호 {p} 로 바꿨어요
        [오후 {rng.randint(1, 11)}:{rng.randint(10, 59)}] 이지은: 넵 확인했습니다
        """,
        p,
    )


@cred("chinese-simplified-wechat-mima-dengluyong")
def _h_zh(rng):
    a, b = native(rng, ("熊猫宝宝", "长城脚下", "月亮湾", "龙井茶", "小笼包")), safe(rng, 16)
    return out(
        f"""
        王磊 {hms(rng)[:5]}
        服务器登录：root / {b}
        财务系统用这个登录：{a}
        别外传哈
        """,
        a,
        b,
    )


@cred("chinese-traditional-line-mima-taiwan")
def _h_zhtw(rng):
    p = person(rng)
    return out(
        f"""
        陳小姐：公司信箱密碼我重設了，新的是 {p}
        陳小姐：登入後請記得改掉喔
        """,
        p,
    )


@cred("cantonese-whatsapp-hong-kong-mat-ma")
def _h_yue(rng):
    p = person(rng)
    return out(
        f"""
        阿明: 部 NAS 個密碼係 {p} 呀，唔該你幫我睇下
        阿芬: 收到👌
        """,
        p,
    )


@cred("swahili-sms-nenosiri-la-akaunti")
def _h_sw(rng):
    p = person(rng)
    return out(
        f"""
        Juma: Nenosiri la akaunti ya M-Pesa Business ni {p}
        Juma: usimwambie mtu yeyote
        """,
        p,
    )


@cred("amharic-telegram-office-wifi-ethiopic")
def _h_am(rng):
    p = person(rng)
    return out(
        f"""
        ሰላም አበበ፣ የቢሮው ዋይፋይ የይለፍ ቃል፦ {p}
        """,
        p,
    )


@cred("yoruba-whatsapp-oro-asina")
def _h_yo(rng):
    p = person(rng)
    return out(
        f"""
        Tunde: Ọ̀rọ̀ aṣínà fún àkọọ́lẹ̀ ilé-iṣẹ́ ni {p}
        Tunde: má ṣe fi han ẹnikẹ́ni
        """,
        p,
    )


@cred("hausa-chat-kalmar-sirri")
def _h_ha(rng):
    p = person(rng)
    return out(
        f"""
        Musa: Kalmar sirri ta kwamfutar ofis: {p}
        """,
        p,
    )


@cred("afrikaans-email-wagwoord-vir-die-stelsel")
def _h_af(rng):
    p = safe(rng, 13)
    return out(
        f"""
        Hallo Pieter,
        Jou tydelike wagwoord vir die stelsel is {p}
        Groete, Annelie
        """,
        p,
    )


@cred("icelandic-chat-lykilord-thorn-eth")
def _h_is(rng):
    p = native(rng, ("þoka", "ðrumur", "æður", "jökull", "hraun"))
    return out(
        f"""
        Sigga: lykilorðið að heimabankanum hjá félaginu er {p}
        """,
        p,
    )


@cred("irish-email-pasfhocal-nua")
def _h_ga(rng):
    p = safe(rng, 14)
    return out(
        f"""
        A Sheáin, a chara,
        Seo an pasfhocal nua don chóras: {p}
        Le meas, Máire
        """,
        p,
    )


@cred("welsh-chat-cyfrinair-y-swyddfa")
def _h_cy(rng):
    p = person(rng)
    return out(
        f"""
        Gareth: cyfrinair wifi y swyddfa ydy {p}
        Ffion: diolch!
        """,
        p,
    )


@cred("catalan-email-contrasenya-acces")
def _h_ca(rng):
    p = native(rng, ("plaça", "gaudí", "castellà", "mongeta", "pa"))
    return out(
        f"""
        Hola Jordi,
        per accedir a la intranet fes servir aquesta contrasenya: {p}
        Salut, Montse
        """,
        p,
    )


@cred("basque-chat-pasahitza")
def _h_eu(rng):
    p = person(rng)
    return out(
        f"""
        Iker: sareko pasahitza: {p}
        Ane: eskerrik asko
        """,
        p,
    )


@cred("georgian-chat-paroli-mkhedruli")
def _h_ka(rng):
    p = person(rng)
    return out(
        f"""
        გიორგი: სისტემაში შესასვლელი პაროლი: {p}
        """,
        p,
    )


@cred("armenian-email-gaghtnabar")
def _h_hy(rng):
    p = safe(rng, 13)
    return out(
        f"""
        Բարև Արամ,
        Նոր գաղտնաբառը՝ {p}
        """,
        p,
    )


@cred("kazakh-telegram-qupiya-soz")
def _h_kk(rng):
    p = person(rng)
    return out(
        f"""
        Айгерім: 1С-ке кіру үшін құпия сөз: {p}
        """,
        p,
    )


@cred("uzbek-telegram-parol-latin")
def _h_uz(rng):
    p = person(rng)
    return out(
        f"""
        Sardor: Kassaga kirish uchun parol — {p}
        Dilnoza: rahmat!
        """,
        p,
    )


@cred("mongolian-chat-nuuts-ug")
def _h_mn(rng):
    p = person(rng)
    return out(
        f"""
        Бат: Системд нэвтрэх нууц үг: {p}
        """,
        p,
    )


@cred("khmer-telegram-paakhsomngat")
def _h_km(rng):
    p = person(rng)
    return out(
        f"""
        សុខា៖ ពាក្យសម្ងាត់ Wi-Fi ហាង៖ {p}
        """,
        p,
    )


@cred("nepali-viber-password-pathaideko")
def _h_ne(rng):
    p = person(rng)
    return out(
        f"""
        सुमन: कार्यालयको इमेलको पासवर्ड पठाइदिएँ: {p}
        """,
        p,
    )


@cred("sinhala-chat-murapadaya")
def _h_si(rng):
    p = person(rng)
    return out(
        f"""
        නිමල්: පද්ධතියට ඇතුළු වීමට මුරපදය: {p}
        """,
        p,
    )


@cred("albanian-email-fjalekalimi")
def _h_sq(rng):
    p = native(rng, ("çelës", "shtëpi", "diell", "mjaltë", "ëndërr"))
    return out(
        f"""
        Përshëndetje Arben,
        fjalëkalimi i ri për llogarinë: {p}
        """,
        p,
    )


@cred("burmese-viber-sakarhwat")
def _h_my(rng):
    p = person(rng)
    return out(
        f"""
        ကိုအောင်: ဆိုင်ရဲ့ Wi-Fi စကားဝှက်က {p} ပါ
        """,
        p,
    )


@cred("spreadsheet-tsv-paste-multilingual-staff-accounts")
def _h_tsv(rng):
    a, b = safe(rng, 14), person(rng)
    return out(
        f"""
        Nom\tService\tIdentifiant\tMot de passe provisoire
        Dupont Élise\tAccueil\tedupont\t{a}
        Nguyễn Văn An\tEntrepôt\tnvan\t{b}
        """,
        a,
        b,
    )


@cred("voice-transcript-spanish-dictated-key-spelled")
def _h_voice(rng):
    w1, w2 = rng.sample(_WORDS, 2)
    n = rng.randint(100, 999)
    p = f"{w1}{n}{w2}"
    return out(
        f'''
        [00:03:12] Soporte: ...y ahora en el campo de contraseña escriba lo que le digo.
        [00:03:15] Soporte: todo junto, en minúsculas: {w1}, luego {n}, luego {w2}.
        [00:03:22] Cliente: ¿o sea "{p}"?
        [00:03:24] Soporte: exacto, eso es.
        ''',
        p,
    )


@cred("meeting-notes-english-action-items-the-key-i-sent")
def _h_notes(rng):
    k = "sk-proj-" + urlsafe(rng, 74) + "T3BlbkFJ" + urlsafe(rng, 74)
    return out(
        f"""
        # Weekly sync — {day(rng)}
        Attendees: Priya, Tom, Lena
        ## Action items
        - Tom: rotate the key I sent you on Friday ({k}) after the demo
        - Lena: move eval runs to the new project
        """,
        k,
    )


# -- assorted layouts: cookies, encodings, headers, heredocs --


@cred("http-request-cookie-header-session-and-remember-token")
def _l_cookie(rng):
    s, r = b64url(rng, 32), hexa(rng, 40)
    return out(
        f"""
        GET /admin/orders?page=2 HTTP/2
        Host: shop-admin.example.com
        User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0
        Cookie: _ga=GA1.1.{digits(rng, 9)}.{epoch(rng)}; sessionid={s}; remember_token={r}; theme=dark
        Accept: text/html
        """,
        s,
        r,
    )


@cred("email-quoted-printable-body-password-soft-break")
def _l_qp(rng):
    p = symbolic(rng, 18, "=?!#")
    enc = qp(p)
    return out(
        f"""
        MIME-Version: 1.0
        Subject: Your new webmail password
        Content-Type: text/plain; charset="utf-8"
        Content-Transfer-Encoding: quoted-printable

        Hi L=C3=A9a,

        your mailbox l.martin@asso.example is ready. Sign in with: {enc}

        =E2=80=94 IT
        """,
        enc.strip(),
    )


@cred("urlencoded-form-post-body-login-request")
def _l_form(rng):
    raw = symbolic(rng, 16, "&+=%#/ ")
    enc = urllib.parse.quote_plus(raw)
    return out(
        f"""
        POST /wp-login.php HTTP/1.1
        Host: blog.example.net
        Content-Type: application/x-www-form-urlencoded
        Content-Length: {40 + len(enc)}

        log=editor&pwd={enc}&wp-submit=Log+In&redirect_to=%2Fwp-admin%2F&testcookie=1
        """,
        enc,
    )


@cred("x-custom-api-key-headers-two-services-httpie")
def _l_headers(rng):
    a, b = mixed(rng, 40), hexa(rng, 32)
    return out(
        f"""
        $ http POST https://api.shipping.example/v2/labels X-Api-Key:{a} X-Partner-Secret:{b} weight:=1.2 carrier=dhl
        HTTP/1.1 201 Created
        Content-Type: application/json
        """,
        a,
        b,
    )


@cred("authorization-apikey-scheme-elastic-base64-id-key")
def _l_apikey(rng):
    v = base64.b64encode(f"{mixed(rng, 20)}:{urlsafe(rng, 22)}".encode()).decode()
    return out(
        f"""
        curl -X GET "https://search.example.es:9243/logs-*/_search?size=1" \\
          -H "Authorization: ApiKey {v}" -H 'Content-Type: application/json'
        """,
        v,
    )


@cred("k8s-secret-data-base64-wrapped-values")
def _l_k8s(rng):
    p, t = safe(rng, 20), "ghp_" + mixed(rng, 36)
    a, b = base64.b64encode(p.encode()).decode(), base64.b64encode(t.encode()).decode()
    return out(
        f"""
        apiVersion: v1
        kind: Secret
        metadata:
          name: renovate-env
          namespace: renovate
        type: Opaque
        data:
          RENOVATE_GIT_AUTHOR: {base64.b64encode(b"Renovate Bot <bot@example.com>").decode()}
          RENOVATE_PASSWORD: {a}
          RENOVATE_TOKEN: {b}
        """,
        a,
        b,
    )


@cred("yaml-block-scalar-folded-service-token")
def _l_block(rng):
    t = b64(rng, 120)
    lines = textwrap.wrap(t, 60)
    body = "\n".join("    " + line for line in lines)
    return out(
        """
        integration:
          name: ledger-sync
          token: >-
        @BODY@
          timeout: 30s
        """,
        lines[0],
        BODY=body,
    )


@cred("shell-heredoc-curl-config-file-user-option")
def _l_heredoc(rng):
    p = safe(rng, 18)
    return out(
        f"""
        cat > ~/.curlrc <<'EOF'
        user = "metrics:{p}"
        silent
        fail
        EOF
        curl https://pushgateway.example.org/metrics/job/backup -d @metrics.txt
        """,
        p,
    )


@cred("xml-attributes-connection-element-password-attr")
def _l_xmlattr(rng):
    p = safe(rng, 16)
    return out(
        f'''
        <dataSource name="Reporting" driver="com.microsoft.sqlserver.jdbc.SQLServerDriver"
                    url="jdbc:sqlserver://sql01:1433;databaseName=Reporting"
                    user="rpt_reader" password="{p}" maxActive="20" />
        ''',
        p,
    )


@cred("mysql-cli-p-flag-no-space-history")
def _l_mysql(rng):
    p = safe(rng, 15)
    return out(
        f"""
        $ history | tail -4
         1012  cd /var/backups
         1013  mysqldump -h 127.0.0.1 -u backup -p{p} --single-transaction shop > shop.sql
         1014  gzip shop.sql
         1015  history | tail -4
        """,
        p,
    )


@cred("curl-u-user-colon-pass-couchdb-replication")
def _l_curl_u(rng):
    p = safe(rng, 16)
    return out(
        f"""
        curl -u admin:{p} -X POST http://127.0.0.1:5984/_replicate \\
          -H "Content-Type: application/json" \\
          -d '{{"source":"orders","target":"http://couch-b:5984/orders","continuous":true}}'
        """,
        p,
    )


@cred("smtp-auth-plain-base64-session-transcript")
def _l_smtp(rng):
    v = base64.b64encode(f"\0alerts@shop.example\0{safe(rng, 16)}".encode()).decode()
    return out(
        f"""
        S: 220 smtp.shop.example ESMTP Postfix
        C: EHLO monitor
        S: 250-AUTH PLAIN LOGIN
        C: AUTH PLAIN {v}
        S: 235 2.7.0 Authentication successful
        C: MAIL FROM:<alerts@shop.example>
        """,
        v,
    )


# ---- clean documents ------------------------------------------------------------------------------------------


@clean("clean-npmrc-env-interpolation-and-yarnrc-placeholder")
def _c_npmrc(rng):
    return txt("""
        //registry.npmjs.org/:_authToken=${NPM_TOKEN}
        @acme:registry=https://npm.pkg.github.com
        //npm.pkg.github.com/:_authToken=${GITHUB_TOKEN}
        # .yarnrc.yml
        npmAuthToken: "${NPM_AUTH_TOKEN:-}"
        """)


@clean("clean-pypirc-keyring-and-pip-conf-index-no-auth")
def _c_pypirc(rng):
    return txt(f"""
        [distutils]
        index-servers = pypi

        [pypi]
        username = __token__
        # password comes from `keyring set https://upload.pypi.org/legacy/ __token__`

        [global]
        index-url = https://pypi.org/simple
        require-hashes = true
        # sha256:{sha256(rng)}
        """)


@clean("clean-maven-settings-security-encrypted-braces")
def _c_maven(rng):
    return txt(f"""
        <settings>
          <servers>
            <server>
              <id>nexus-releases</id>
              <username>release-bot</username>
              <password>{{{b64(rng, 32)}}}</password>
            </server>
          </servers>
        </settings>
        <!-- encrypted with mvn --encrypt-password; master in ~/.m2/settings-security.xml -->
        """)


@clean("clean-cargo-lock-checksums-and-versions")
def _c_cargo(rng):
    rows = "\n".join(
        f'''[[package]]
name = "{n}"
version = "{rng.randint(0, 2)}.{rng.randint(0, 40)}.{rng.randint(0, 20)}"
source = "registry+https://github.com/rust-lang/crates.io-index"
checksum = "{sha256(rng)}"
'''
        for n in ("tokio", "serde", "secrecy", "argon2")
    )
    return "# This file is automatically @generated by Cargo.\nversion = 4\n\n" + rows


@clean("clean-gha-workflow-secrets-context-only")
def _c_gha(rng):
    return txt(f"""
        jobs:
          publish:
            runs-on: ubuntu-24.04
            permissions:
              id-token: write
              contents: read
            steps:
              - uses: actions/checkout@{sha(rng)}  # v4.2.2
              - uses: pypa/gh-action-pypi-publish@release/v1
              - run: ./deploy.sh
                env:
                  API_TOKEN: ${{{{ secrets.API_TOKEN }}}}
                  PASSWORD_MIN_LENGTH: "14"
        """)


@clean("clean-gha-run-log-masked-stars")
def _c_gha_log(rng):
    return txt(f"""
        {when(rng)} ##[group]Run docker/login-action@v3
        {when(rng)} with:
        {when(rng)}   registry: ghcr.io
        {when(rng)}   username: acme-bot
        {when(rng)}   password: ***
        {when(rng)} ##[endgroup]
        {when(rng)} Logging into ghcr.io...
        {when(rng)} Login Succeeded!
        {when(rng)} Post job cleanup.
        """)


@clean("clean-jenkins-credentials-xml-encrypted-braces")
def _c_jenkins(rng):
    return txt(f"""
        <com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>
          <scope>GLOBAL</scope>
          <id>nexus-deploy</id>
          <username>deployer</username>
          <password>{{{b64(rng, 48)}}}</password>
        </com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl>
        """)


@clean("clean-gitlab-ci-masked-variable-references")
def _c_gitlab(rng):
    return txt(f"""
        deploy:
          stage: deploy
          script:
            - echo "$CI_REGISTRY_PASSWORD" | docker login $CI_REGISTRY -u $CI_REGISTRY_USER --password-stdin
            - helm upgrade api ./chart --set image.tag=$CI_COMMIT_SHORT_SHA
          variables:
            GIT_DEPTH: "1"
            KUBE_CONTEXT: acme/agents:prod
        # pipeline {rng.randint(10**8, 10**9)} commit {sha(rng)}
        """)


@clean("clean-wp-config-getenv-and-salt-placeholders")
def _c_wp(rng):
    return txt("""
        define( 'DB_PASSWORD', getenv('WORDPRESS_DB_PASSWORD') );
        define( 'AUTH_KEY',         'put your unique phrase here' );
        define( 'SECURE_AUTH_KEY',  'put your unique phrase here' );
        define( 'WP_DEBUG', false );
        """)


@clean("clean-laravel-env-example-empty-values")
def _c_laravel(rng):
    return txt("""
        APP_NAME=Laravel
        APP_KEY=
        DB_CONNECTION=mysql
        DB_USERNAME=root
        DB_PASSWORD=
        MAIL_PASSWORD=null
        AWS_SECRET_ACCESS_KEY=
        PUSHER_APP_SECRET=
        """)


@clean("clean-django-settings-password-validators-and-env")
def _c_django(rng):
    return txt("""
        SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
        AUTH_PASSWORD_VALIDATORS = [
            {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
             "OPTIONS": {"min_length": 12}},
            {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
        ]
        PASSWORD_HASHERS = ["django.contrib.auth.hashers.Argon2PasswordHasher"]
        SESSION_COOKIE_SECURE = True
        """)


@clean("clean-spring-application-yml-placeholders")
def _c_spring(rng):
    return txt("""
        spring:
          datasource:
            url: jdbc:postgresql://db:5432/orders
            username: ${DB_USER}
            password: ${DB_PASSWORD:}
        app:
          jwt:
            secret: ${JWT_SECRET}
            token-validity-seconds: 3600
        """)


@clean("clean-appsettings-json-key-vault-references")
def _c_aspnet(rng):
    return jd(
        {
            "ConnectionStrings": {
                "Default": "@Microsoft.KeyVault(SecretUri=https://kv-billing.vault.azure.net/"
                "secrets/sql-conn/)"
            },
            "Jwt": {"Issuer": "https://billing.example", "KeyId": uid(rng)},
            "Logging": {"LogLevel": {"Default": "Warning"}},
        }
    )


@clean("clean-rails-credentials-yml-enc-ciphertext")
def _c_rails(rng):
    return txt(f"""
        $ cat config/credentials.yml.enc
        {b64(rng, 96)}--{b64(rng, 12)}--{b64(rng, 16)}
        $ ls -l config/master.key
        ls: cannot access 'config/master.key': No such file or directory
        """)


@clean("clean-hf-model-card-tokenizer-config")
def _c_hf(rng):
    return jd(
        {
            "add_bos_token": True,
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|eot_id|>",
            "model_max_length": 131072,
            "tokenizer_class": "PreTrainedTokenizerFast",
            "pad_token": None,
            "clean_up_tokenization_spaces": True,
            "_commit_hash": sha(rng),
        }
    )


@clean("clean-wandb-run-summary-and-ids")
def _c_wandb(rng):
    return txt(f"""
        wandb: Syncing run dainty-sweep-{rng.randint(1, 90)}
        wandb: ⭐️ View project at https://wandb.ai/acme/sft-7b
        wandb: 🚀 View run at https://wandb.ai/acme/sft-7b/runs/{lower(rng, 8)}
        wandb: Run summary:
        wandb:   max_tokens 4096
        wandb:   train/loss 0.8123
        wandb:   tokens_seen {rng.randint(10**9, 10**10)}
        """)


@clean("clean-notebook-getpass-prompt-output")
def _c_nb(rng):
    return jd(
        {
            "cell_type": "code",
            "execution_count": 2,
            "metadata": {},
            "source": ["import getpass, os\n", 'os.environ["OPENAI_API_KEY"] = getpass.getpass("API key: ")'],
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["API key: ········\n"]}],
        }
    )


@clean("clean-dbt-profiles-env-var-jinja")
def _c_dbt(rng):
    return txt("""
        analytics:
          target: prod
          outputs:
            prod:
              type: snowflake
              account: "{{ env_var('SNOWFLAKE_ACCOUNT') }}"
              user: "{{ env_var('SNOWFLAKE_USER') }}"
              password: "{{ env_var('DBT_SNOWFLAKE_PASSWORD') }}"
              threads: 8
        """)


@clean("clean-airflow-connections-list-masked")
def _c_airflow(rng):
    return txt(f"""
        $ airflow connections get warehouse_pg -o yaml
        - conn_id: warehouse_pg
          conn_type: postgres
          description: null
          extra_dejson: {{}}
          get_uri: postgresql://airflow_etl:***@warehouse.internal:5432/dw
          host: warehouse.internal
          id: '{rng.randint(1, 99)}'
          is_encrypted: 'True'
          password: '***'
        """)


@clean("clean-mlflow-run-params-and-artifact-digests")
def _c_mlflow(rng):
    return jd(
        {
            "run_id": hexa(rng, 32),
            "experiment_id": digits(rng, 15),
            "params": {"learning_rate": "3e-5", "max_tokens": "2048", "tokenizer": "cl100k_base"},
            "artifacts": [{"path": "model.safetensors", "sha256": sha256(rng)}],
        }
    )


@clean("clean-wireguard-public-keys-only-peer-list")
def _c_wg(rng):
    return txt(f"""
        $ sudo wg show wg0
        interface: wg0
          public key: {b64(rng, 32)}
          private key: (hidden)
          listening port: 51820

        peer: {b64(rng, 32)}
          preshared key: (hidden)
          endpoint: 198.51.100.{rng.randint(2, 250)}:{rng.randint(30000, 60000)}
          allowed ips: 10.66.0.2/32
          latest handshake: 41 seconds ago
        """)


@clean("clean-cisco-show-run-type7-removed-and-hashes")
def _c_ios(rng):
    return txt(f"""
        enable secret 9 $9${urlsafe(rng, 14)}${urlsafe(rng, 43)}
        username netops privilege 15 secret 9 $9${urlsafe(rng, 14)}${urlsafe(rng, 43)}
        service password-encryption
        security passwords min-length 12
        snmp-server group NMS v3 priv
        crypto key generate rsa modulus 4096
        """)


@clean("clean-home-assistant-config-secret-references")
def _c_ha(rng):
    return txt("""
        mqtt:
          broker: 192.168.1.20
          username: homeassistant
          password: !secret mqtt_password
        wifi:
          ssid: !secret wifi_ssid
          password: !secret wifi_password
        """)


@clean("clean-openvpn-client-cert-only-public")
def _c_ovpn(rng):
    return "\n".join(
        [
            "client",
            "remote vpn.example.org 1194",
            "auth-user-pass",
            "<ca>",
            "-----BEGIN CERTIFICATE-----",
            *[b64(rng, 48) for _ in range(5)],
            "-----END CERTIFICATE-----",
            "</ca>",
            "",
        ]
    )


@clean("clean-restic-snapshots-listing")
def _c_restic(rng):
    rows = "\n".join(f"{hexa(rng, 8)}  {day(rng)} {hms(rng)}  nas         nightly     /srv" for _ in range(4))
    return txt(
        f"""
        $ restic -r b2:homelab-restic:/nas --password-file /root/.restic-pass snapshots
        repository {hexa(rng, 8)} opened (version 2, compression level auto)
        ID        Time                 Host        Tags        Paths
        ---------------------------------------------------------------
        @ROWS@
        """,
        ROWS=rows,
    )


@clean("clean-rclone-config-show-redacted")
def _c_rclone(rng):
    return txt("""
        $ rclone config redacted gdrive
        [gdrive]
        type = drive
        scope = drive
        token = XXX
        client_secret = XXX
        ### Double check the config for sensitive info before posting publicly
        """)


@clean("clean-muttrc-pass-from-command")
def _c_mutt(rng):
    return txt("""
        set imap_user = "ravi.m@gmail.com"
        set imap_pass = "`pass show mail/gmail-app`"
        set smtp_pass = $imap_pass
        set folder = "imaps://imap.gmail.com:993"
        """)


@clean("clean-mbsync-passcmd-gpg")
def _c_mbsync(rng):
    return txt("""
        IMAPAccount uni
        Host outlook.office365.com
        User s.kaya@uni.example.edu
        PassCmd "gpg -q --for-your-eyes-only --no-tty -d ~/.mbsyncpass.gpg"
        AuthMechs XOAUTH2
        """)


@clean("clean-bitwarden-encrypted-export-json")
def _c_bw(rng):
    return jd(
        {
            "encrypted": True,
            "passwordProtected": True,
            "salt": b64(rng, 16),
            "kdfType": 0,
            "kdfIterations": 600000,
            "encKeyValidation_DO_NOT_EDIT": f"2.{b64(rng, 16)}|{b64(rng, 32)}|{b64(rng, 32)}",
            "data": f"2.{b64(rng, 16)}|{b64(rng, 96)}|{b64(rng, 32)}",
        }
    )


@clean("clean-keepass-csv-template-header-only")
def _c_keepass(rng):
    return txt("""
        "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
        "Root/Templates","Example entry","user@example.com","<generate in app>","https://example.com","","","0","",""
        """)


@clean("clean-env-dump-no-secrets-container")
def _c_env(rng):
    return txt(f"""
        / $ env | sort
        HOME=/root
        HOSTNAME={hexa(rng, 12)}
        KEYBOARD_LAYOUT=us
        LANG=C.UTF-8
        OTEL_TRACES_SAMPLER=parentbased_traceidratio
        PATH=/usr/local/bin:/usr/bin:/bin
        PASSWORD_MIN_LENGTH=12
        TOKENIZERS_PARALLELISM=false
        TRACE_ID={trace_id(rng)}
        """)


@clean("clean-proc-environ-caret-at-harmless")
def _c_proc(rng):
    return txt(f"""
        # cat -v /proc/{rng.randint(1000, 99999)}/environ
        PATH=/usr/bin:/bin^@LANG=C.UTF-8^@INVOCATION_ID={hexa(rng, 32)}^@JOURNAL_STREAM=8:{rng.randint(10000, 99999)}^@CREDENTIALS_DIRECTORY=/run/credentials/api.service^@
        """)


@clean("clean-docker-inspect-secret-file-mounts")
def _c_docker(rng):
    return jd(
        [
            {
                "Id": sha256(rng),
                "Config": {
                    "Env": [
                        "POSTGRES_PASSWORD_FILE=/run/secrets/pg_password",
                        "PGDATA=/var/lib/postgresql/data",
                    ],
                    "Image": f"postgres@sha256:{sha256(rng)}",
                },
                "Mounts": [
                    {
                        "Type": "bind",
                        "Source": "/var/lib/docker/secrets/pg_password",
                        "Destination": "/run/secrets/pg_password",
                        "RW": False,
                    }
                ],
            }
        ]
    )


@clean("clean-powershell-env-table-no-secrets")
def _c_pwsh(rng):
    return txt(f"""
        PS C:\\> Get-ChildItem env: | Where-Object Name -like '*KEY*'

        Name                           Value
        ----                           -----
        KEYBOARD_LAYOUT                00000409
        SSH_AUTH_SOCK                  \\\\.\\pipe\\openssh-ssh-agent
        TOKEN_CACHE_DIR                C:\\Users\\kai\\.cache\\tokens
        WIX_UPGRADE_CODE               {{{uid(rng).upper()}}}
        """)


@clean("clean-java-crash-env-section-harmless")
def _c_java(rng):
    return txt(f"""
        ---------------  S Y S T E M  ---------------
        Environment Variables:
        JAVA_HOME=/usr/lib/jvm/temurin-21
        JAVA_TOOL_OPTIONS=-XX:+UseZGC -Djavax.net.ssl.trustStore=/etc/ssl/certs/java/cacerts
        PATH=/usr/bin
        SHELL=/bin/bash
        Build ID: {sha(rng)}
        """)


@clean("clean-openai-chat-completion-usage-and-ids")
def _c_oa(rng):
    return jd(
        {
            "id": "chatcmpl-" + mixed(rng, 29),
            "object": "chat.completion",
            "model": "gpt-4.1-mini",
            "system_fingerprint": "fp_" + hexa(rng, 10),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "Set `max_tokens` to 512 and keep the key in your env.",
                    },
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 91,
                "completion_tokens": 19,
                "total_tokens": 110,
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
        }
    )


@clean("clean-anthropic-tool-use-env-reference-args")
def _c_an(rng):
    return jd(
        {
            "id": "msg_01" + mixed(rng, 22),
            "type": "message",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_01" + mixed(rng, 22),
                    "name": "bash",
                    "input": {"command": "psql \"$DATABASE_URL\" -c 'select 1'"},
                }
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 400, "output_tokens": 31},
        }
    )


@clean("clean-mcp-tools-list-input-schema")
def _c_mcp(rng):
    return jc(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "tools": [
                    {
                        "name": "create_user",
                        "description": "Create a user; the password is generated server-side.",
                        "inputSchema": {
                            "type": "object",
                            "properties": {
                                "email": {"type": "string"},
                                "password_min_length": {"type": "integer", "default": 14},
                                "api_key": {
                                    "type": "string",
                                    "description": "Leave empty to use the server's configured key",
                                },
                            },
                            "required": ["email"],
                        },
                    }
                ]
            },
        }
    )


@clean("clean-langsmith-run-redacted-inputs")
def _c_ls(rng):
    return jd(
        {
            "id": uid(rng),
            "name": "ChatOpenAI",
            "run_type": "llm",
            "trace_id": uid(rng),
            "inputs": {"messages": [{"role": "user", "content": "[REDACTED]"}], "api_key": "**********"},
            "extra": {"invocation_params": {"model": "gpt-4o", "max_tokens": 256, "temperature": 0}},
        }
    )


@clean("clean-react-scratchpad-with-placeholder-key")
def _c_react(rng):
    return txt("""
        Thought: The user wants a curl example for the weather API.
        Action: respond
        Action Input: curl "https://api.example-weather.com/v1/current?q=Oslo&appid=<your-api-key>"
        Observation: sent
        Final Answer: Replace <your-api-key> with the key from your dashboard; never paste it here.
        """)


@clean("clean-people-chat-password-reset-link-no-value")
def _c_chat(rng):
    return txt(f"""
        [{day(rng)} 09:14] Laura: I forgot my VPN password again 🙈
        [{day(rng)} 09:16] IT-Bot: I've sent a reset link to your phone. It expires in 15 minutes.
        [{day(rng)} 09:20] Laura: done, new one works. It passed the strength check this time!
        """)


@clean("clean-german-email-passwort-wird-separat-gesendet")
def _c_de(rng):
    return txt("""
        Hallo Herr Weber,
        Ihr Benutzername lautet k.weber. Das Kennwort erhalten Sie aus Sicherheitsgründen
        separat per SMS. Bitte ändern Sie es bei der ersten Anmeldung (mind. 12 Zeichen).
        Viele Grüße, IT-Service
        """)


@clean("clean-japanese-chat-password-sent-separately")
def _c_ja(rng):
    return txt("""
        佐藤：パスワードは別途お電話でお伝えします。
        田中：承知しました。IDは tanaka-k で合っていますか？
        佐藤：はい、合っています。
        """)


@clean("clean-spanish-ticket-credentials-in-vault")
def _c_es(rng):
    return txt(f"""
        Ticket #{rng.randint(10000, 99999)}: Acceso al servidor de facturación
        Las credenciales están en el gestor (carpeta "Facturación/Prod"). No las pegues en el ticket.
        Contraseña: ********
        """)


@clean("clean-russian-chat-parol-v-menedzhere")
def _c_ru(rng):
    return txt("""
        Сергей: пароль от роутера лежит в Bitwarden, папка «Дом»
        Ольга: ок, нашла, спасибо
        """)


@clean("clean-arabic-chat-reset-instructions")
def _c_ar(rng):
    return txt("""
        أحمد: لا ترسل كلمة المرور هنا، استخدم رابط إعادة التعيين في البريد.
        سارة: تمام، شكراً
        """)


@clean("clean-hindi-chat-otp-not-to-share")
def _c_hi(rng):
    return txt("""
        राहुल: किसी को भी OTP या पासवर्ड मत बताना, बैंक कभी नहीं पूछता।
        माँ: ठीक है बेटा
        """)


@clean("clean-ssh-public-key-and-known-hosts")
def _c_ssh(rng):
    return txt(f"""
        $ cat ~/.ssh/id_ed25519.pub
        ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(rng, 32)[:43]} deploy@ci
        $ ssh-keygen -lf ~/.ssh/id_ed25519.pub
        256 SHA256:{b64(rng, 32).rstrip("=")} deploy@ci (ED25519)
        """)


@clean("clean-shadow-and-htpasswd-hashes")
def _c_hashes(rng):
    return txt(f"""
        admin:$2y$10${b64(rng, 40)[:53].replace("+", ".")}
        metrics:{{SHA}}{b64(rng, 20)}
        backup:$6${hexa(rng, 16)}${b64(rng, 64)[:86].replace("+", ".")}:19800:0:99999:7:::
        """)


@clean("clean-http-trace-headers-ids-and-etags")
def _c_http(rng):
    return txt(f'''
        HTTP/2 200
        content-type: application/json
        etag: W/"{hexa(rng, 32)}"
        x-request-id: {uid(rng)}
        traceparent: 00-{trace_id(rng)}-{span_id(rng)}-01
        x-ratelimit-remaining-tokens: 148000
        cf-ray: {hexa(rng, 16)}-AMS
        ''')


@clean("clean-git-log-oneline-shas-and-versions")
def _c_git(rng):
    return (
        "\n".join(
            f"{sha(rng)[:12]} {msg}"
            for msg in (
                "chore(deps): bump cryptography from 44.0.0 to 44.0.1",
                "fix: mask tokenizer secrets in debug output",
                "feat: password_min_length setting (default 12)",
                "docs: explain KEYBOARD_INTERACTIVE auth",
                "ci: pin actions to SHAs",
            )
        )
        + "\n"
    )


@clean("clean-sri-integrity-and-lockfile-hashes")
def _c_sri(rng):
    return jd(
        {
            "name": "web",
            "lockfileVersion": 3,
            "packages": {
                "node_modules/jsonwebtoken": {
                    "version": "9.0.2",
                    "resolved": "https://registry.npmjs.org/jsonwebtoken/-/jsonwebtoken-9.0.2.tgz",
                    "integrity": "sha512-" + b64(rng, 64),
                },
                "node_modules/bcryptjs": {"version": "3.0.2", "integrity": "sha512-" + b64(rng, 64)},
            },
        }
    )


@clean("clean-k8s-sealed-secret-ciphertext")
def _c_sealed(rng):
    return txt(f"""
        apiVersion: bitnami.com/v1alpha1
        kind: SealedSecret
        metadata:
          name: api-env
          namespace: prod
        spec:
          encryptedData:
            DATABASE_PASSWORD: Ag{b64(rng, 180)}
            STRIPE_SECRET_KEY: Ag{b64(rng, 180)}
        """)


@clean("clean-sops-age-encrypted-db-password-enc")
def _c_sops(rng):
    return txt(f'''
        db_password: ENC[AES256_GCM,data:{b64(rng, 18)},iv:{b64(rng, 32)},tag:{b64(rng, 16)},type:str]
        sops:
          age:
            - recipient: age1{lower(rng, 58)}
          lastmodified: "{when(rng)[:19]}Z"
          mac: ENC[AES256_GCM,data:{b64(rng, 32)},iv:{b64(rng, 32)},tag:{b64(rng, 16)},type:str]
          version: 3.9.4
        ''')


@clean("clean-terraform-plan-rds-password-sensitive-value")
def _c_tf(rng):
    return txt(f"""
          # aws_db_instance.main will be updated in-place
          ~ resource "aws_db_instance" "main" {{
                id       = "db-{upper(rng, 26)}"
              ~ password = (sensitive value)
                username = "app"
            }}
        Plan: 0 to add, 1 to change, 0 to destroy.
        """)


@clean("clean-otel-span-genai-attributes")
def _c_otel(rng):
    return jd(
        {
            "traceId": trace_id(rng),
            "spanId": span_id(rng),
            "name": "chat gpt-4o",
            "attributes": [
                {"key": "gen_ai.request.max_tokens", "value": {"intValue": "1024"}},
                {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "812"}},
                {"key": "http.request.header.authorization", "value": {"stringValue": "[FILTERED]"}},
            ],
        }
    )


@clean("clean-uuid-and-checksum-manifest")
def _c_manifest(rng):
    return (
        "\n".join(
            f"{sha256(rng)}  {name}"
            for name in (
                "model-00001-of-00004.safetensors",
                "model-00002-of-00004.safetensors",
                "tokenizer.json",
                "generation_config.json",
            )
        )
        + f"\n# release id {uid(rng)}\n"
    )


@clean("clean-env-example-with-marked-placeholders")
def _c_env_example(rng):
    return txt("""
        # Copy to .env and fill in
        OPENAI_API_KEY=sk-...your-key-here
        ANTHROPIC_API_KEY=<your-anthropic-key>
        HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
        DATABASE_URL=postgres://user:password@localhost:5432/app
        STRIPE_SECRET_KEY=${STRIPE_SECRET_KEY}
        """)


@clean("clean-password-policy-json-and-test-output")
def _c_policy(rng):
    return txt(f"""
        {jc({"password_min_length": 14, "require_symbols": True, "max_age_days": 365, "history": 5})}
        $ pytest tests/test_password_policy.py -q
        ........                                                    [100%]
        8 passed in 0.{rng.randint(10, 99)}s
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
