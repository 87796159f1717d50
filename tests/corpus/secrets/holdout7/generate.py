"""The HOLDOUT7 part of the secret corpus: a seventh blind part, written after HOLDOUT to HOLDOUT6.

Written blind: its author never read the detector, its rules, its docs, its tests or its figures, and no
document was run through a detector or changed after one. Every document copies what a real tool, config
file, log, agent, person or trace writes, with tools, vendors, formats and languages the earlier parts do
not use:

- provisioning and infrastructure: SaltStack `pillar.item` (nested outputter), `knife data bag show
  --secret-file`, `eyaml decrypt` (a `DEC(n)::PKCS7[...]!` block), a Bicep .bicepparam, a Terragrunt
  `generate` block with an HCL heredoc, a Vagrantfile, a k3s config.yaml join token, `pveum user token add`
  (Proxmox box table), OpenStack clouds.yaml, Kamal's .kamal/secrets, Traefik with OVH DNS credentials, a
  Caddyfile (tabs) with Porkbun keys, certbot's Linode ini, an nginx `proxy_set_header Authorization
  "Basic ..."`, Apache `SetEnv`, a govc env file, `ipmitool -P`;
- network gear and operating systems: MikroTik `/export show-sensitive`, EdgeOS `show configuration
  commands`, a FortiGate CLI session, pfSense config.xml, OpenWrt `uci show wireless`, a NetworkManager
  .nmconnection, a Windows .reg export (Winlogon DefaultPassword), macOS `security find-generic-password
  -w`, ppp chap-secrets, a batch file writing an ftp script, smbclient `-U 'DOM\\user%password'`, xfreerdp
  `/p:`, Aruba Instant, FreeSWITCH directory XML, `echo ... | kinit`, open-iscsi CHAP, squid `cache_peer
  login=`, a Dovecot passwd-file `{PLAIN}`, slapd.conf `rootpw`, FreeRADIUS clients.conf, keepalived
  `auth_pass`, DRBD `shared-secret`, `tsig-keygen` (BIND);
- databases: cqlshrc (with cqlsh's warning), `cockroach sql --url`, DuckDB `CREATE SECRET`, CouchDB
  `[admins]`, `surreal start --pass`, arangosh, Firebird isql, `couchbase-cli cluster-init`, alembic.ini,
  liquibase.properties, a JetBrains dataSources.local.xml JDBC URL, Hasura CLI config, Meilisearch
  `--master-key`, a Podman Quadlet unit (OpenSearch admin password);
- developer tools, registries and CI: `go env -w GOPROXY=` with userinfo, `conan remote login -p`, `swift
  package-registry login --token`, a .bazelrc.user BuildBuddy header, sbt .credentials, DENO_AUTH_TOKENS,
  bunfig.toml (a TOML inline table), cypress.env.json, a Playwright storage state, Sourcegraph `src`,
  .travis.yml (Transifex), a Drone runner env, `railway variables`, a `git config --list` with the
  actions/checkout extraheader, `podman login -p` (Quay robot), a gsutil .boto, a TeamCity service message
  (Octopus Deploy key), `docker history --no-trunc` leaking a build arg;
- chat, notifications, mail and SMS: `mmctl token generate`, .zuliprc, Rocket.Chat (Python), Pushover
  (http.client), ntfy client.yml, a Teams/Power Automate workflow URL `sig=` in PowerShell, Mailjet (Node),
  SparkPost (REPL), Brevo (PHP), `vonage auth set`, MessageBird from Perl LWP (`AccessKey` scheme), Plivo
  from Scala sttp;
- payments and commerce: WooCommerce (Python), BigCommerce from Julia, Checkout.com from Haskell wreq, a
  Kraken key file, Lemon Squeezy (a JWT in a SvelteKit .env), Paddle Billing (Python);
- AI vendors, notebooks and agents: `wandb login` then ~/.netrc, Langfuse, Cerebras, Jina (fetch),
  SerpAPI, `modal token set`, Streamlit secrets.toml, a marimo notebook (a fal.ai key pair), Zed
  `context_servers` env (Brave Search), OpenHands config.toml (DeepInfra), a SWE-agent trajectory whose
  observation prints an .env (Upstash), Claude Code settings.json env (a gateway token), AssemblyAI,
  Logfire credentials;
- observability: Promtail basic_auth (Grafana Cloud `glc_`), Django settings with ELASTIC_APM, Fluentd
  with Logz.io, Vector with Better Stack, Python http.client debug output (Opsgenie `GenieKey` scheme),
  a Dynatrace installer download with an `Api-Token` header;
- self-hosted apps and home automation: Sonarr config.xml, Transmission settings.json, Vaultwarden,
  Authelia, Authentik, Ghost (Zoho SMTP), Discourse app.yml, Zigbee2MQTT, ESPHome secrets.yaml, a Tasmota
  console `Backlog`, Frigate RTSP, Node-RED `credentialSecret`, Syncthing, OctoPrint;
- people: Greek (Viber, "κωδικός"), Ukrainian (Signal, "Пароль"), Finnish (e-mail, "Salasana"), Romanian
  ("parola este"), Hungarian (ticket, "Jelszó"), Danish (SMS, "adgangskode"), Indonesian (Google Chat, "kata
  sandi"), Arabic (e-mail, "كلمة المرور"), Hebrew (Skype, "הסיסמה היא"), Thai (LINE export, "รหัสผ่าน"),
  Croatian ("lozinka"), Norwegian ("Passord"), a WebVTT call transcript ("it's ..."), a sticky note through
  tesseract, a password inside parentheses, "Use ... to log in" in a support chat, a passphrase in curly
  quotes, a BitLocker recovery password (`manage-bde`), a FileVault personal recovery key, a 1Password
  Secret Key from an Emergency Kit (pdftotext);
- layouts and languages: AsciiDoc attributes, an org-mode property drawer, LaTeX `\\newcommand`, a Pandoc
  definition list, WildFly XML CDATA, himalaya TOML, offlineimaprc (`key : value`), a Chrome passwords CSV,
  a VS Code launch.json with an escaped quote, VBScript, Lua (Hammerspoon, Pushbullet), Groovy (Grails),
  Erlang sys.config, Objective-C, F#, a mitmproxy WebSocket handshake (JWT in Sec-WebSocket-Protocol),
  ngrep (`Authorization: Token token="..."`), a requests HTTPError URL with `apikey=`.

Each document plants one or two values; every value appears verbatim in its text and is 8 characters or
more. Value forms: vendor prefixes none of the earlier parts use (pk1_/sk1_, sgp_, tk_, xkeysib-, ck_/cs_,
sk-lf-, csk-, as-, BSA, jina_, glc_, pylf_v1_eu_, o., sk_sbox_, pdl_live_apikey_, dt0c01., API- (Octopus),
1/ (Transifex), gw-), hex (lower and upper case, 8 to 64 digits), base64 (TSIG, ESPHome, Kraken, Vaultwarden,
Authentik, gsutil, the nginx Basic pair, the git extraheader), base64url (Authelia, Rocket.Chat, Meilisearch,
Playwright cookie), base32 (iSCSI CHAP), UUIDs (Proxmox, Opsgenie, Langfuse), JWTs (RS256 Lemon Squeezy
key, HS256 WebSocket token), people's passwords (a word, digits and a mark, or two words and digits),
generated passwords with symbols (also `&` and `<` inside CDATA, a comma inside a quoted CSV field),
short passwords of 8 to 12 characters (an 8-character VRRP `auth_pass`, an upper-case BMC password),
passphrases (spaces, dashes), a BitLocker 48-digit recovery password, dashed recovery and Secret Keys, and
values with a backslash or quote as the text writes them (a .reg `\\\\`, a JSON `\\"`; planted as written).

Decisions: usernames, e-mail addresses, client and app ids, account, project, store and tenant ids, key
ids (an OVH application key, a Wasabi KEY_ID, a gsutil GOOG1E id, a Modal `ak-` token id, a fal.ai key id,
a Plivo auth id, a Vonage api key, a Mailjet public API key, a Rocket.Chat user id, a Pushover user key),
public keys by design (Langfuse `pk-lf-`, a Paddle.js client-side token, a PostHog `phc_` key, minisign
and SSH public keys), a k3s CA hash (the planted value is the password after `::server:`), password hashes
(bcrypt, yescrypt, `$6$` crypt and Junos `$9$`), ciphertexts (eyaml ENC blocks, a Chef encrypted
data bag, a SealedSecret, a PGP message), image digests, commit and changeset ids, request ids, nonces,
OAuth `state` and PKCE challenges, WebSocket keys, BitLocker protector ids and Syncthing device ids are
not credentials; for a `user:password` pair, a URL with userinfo or a `user%password` argument the planted
value is the password; a base64 `user:password` pair in a header is planted as the base64 text; no
document holds a credential value beside the one or two it plants (masked echoes such as `****` are not
values).

The clean documents hold no credential but plenty of look-alikes: Junos hashes, `mysql_config_editor
print` masks, a Chef encrypted data bag, a Salt GPG pillar, eyaml ENC blocks, a Winlogon export without a
password, `nmcli` `<hidden>`, a MikroTik default export, a pfSense bcrypt hash, a reset e-mail with a
plain link (no token), a Finnish password policy, Kamal secret names, a SealedSecret, shadow lines, an LLM
cost CSV with token columns, prose with "secretary", "passed", "keyboard" and "tokens", an e-mail with an
inline base64 PNG, crane digests, Package.resolved revisions, Proxmox UUIDs, an OAuth authorize URL with
PKCE, a WebAuthn registration, minisign keys, a Paddle.js client token, a PostHog key, klist, a gopass tree,
`wpa_cli status`, hg changesets, a how-to with prompts only, a Greek notice, a Django technical 500 page
with masked settings, a placeholder config, Syncthing ids and BitLocker protector ids.

SEED = 662607 (271828 was asked for, but HOLDOUT2 already uses it). `documents(seed)` gives one document
per credential shape (values drawn with `seed`), then the clean ones.
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

SEED = 662607

_LETTERS_DIGITS = string.ascii_letters + string.digits
_LOWER_DIGITS = string.ascii_lowercase + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_B64_ALPHABET = _LETTERS_DIGITS + "+/"
_URL_ALPHABET = _LETTERS_DIGITS + "-_"
# Crockford's base32, as ULIDs spell it.
_ULID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"

_VOCAB = tuple(
    """
    anvil bobcat caramel dynamo egret fresco gazebo hammock igloo jukebox kayak larkspur mandolin noodle
    origami paprika quokka radish sprocket trellis ukulele vortex wombat xylem yodel zucchini archway
    biscotti cobbler dumpling espresso foxglove gondola hemlock inkwell juggler kumquat lobster macaron
    nautilus oregano pelican quince rosemary sundial tortoise uplands veranda waffle
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
    value = _pick(rng, "0123456789abcdef", length)
    return value.upper() if upper else value


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


def _human(rng: random.Random, marks: str = "!.?$") -> str:
    """What a person picks: a word with a capital, a year or a number, sometimes a mark."""
    word = rng.choice(_VOCAB)
    word = word[0].upper() + word[1:]
    return (
        word
        + str(rng.randint(1960, 2026) if rng.random() < 0.5 else rng.randint(10, 999))
        + rng.choice(marks)
    )


def _human_plain(rng: random.Random) -> str:
    """A person's password with no mark: a word and digits, or two words and digits."""
    first = rng.choice(_VOCAB)
    if rng.random() < 0.5:
        return first + rng.choice(_VOCAB) + str(rng.randint(1, 99))
    return first.capitalize() + str(rng.randint(1000, 99999))


def _strong(rng: random.Random, length: int, marks: str = "!#$%*+-=?@_~^") -> str:
    """A generator's password: letters, digits and marks (each kind at least once), no leading mark."""
    while True:
        value = rng.choice(string.ascii_letters) + _pick(rng, _LETTERS_DIGITS + marks + marks, length - 1)
        if (
            any(c in marks for c in value)
            and any(c.isdigit() for c in value)
            and any(c.isupper() for c in value)
        ):
            return value


def _brief(rng: random.Random) -> str:
    """A short generated password, 8 to 12 letters and digits with both kinds."""
    while True:
        value = _pick(rng, _LETTERS_DIGITS, rng.randint(8, 12))
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def _passphrase(rng: random.Random, words: int, sep: str = " ") -> str:
    return sep.join(rng.sample(_VOCAB, words))


def _segment(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _jwt(rng: random.Random, header: dict, claims: dict, signature_bytes: int = 32) -> str:
    return f"{_segment(header)}.{_segment(claims)}.{_b64u(rng, signature_bytes)}"


def _epoch(rng: random.Random) -> int:
    return rng.randint(1_767_300_000, 1_797_000_000)


# --------------------------------------------------------------------------------------------------------
# Provisioning and infrastructure tools
# --------------------------------------------------------------------------------------------------------


@_shape("salt-pillar-item-nested-outputter")
def _salt_pillar(rng: random.Random) -> Built:
    password = _strong(rng, 22)
    text = _fill(
        """
        root@salt-master:~# salt 'pg-primary*' pillar.item postgres
        pg-primary-01.lab.internal:
            ----------
            postgres:
                ----------
                listen_addresses:
                    *
                max_connections:
                    300
                replication_password:
                    ‹pw›
                replication_user:
                    replicator
                version:
                    16
        root@salt-master:~# salt 'pg-primary*' state.apply postgres.replication test=True | tail -n 4
        Summary for pg-primary-01.lab.internal
        ------------
        Succeeded: 9 (changed=1)
        Failed:    0
        """,
        pw=password,
    )
    return text, (password,)


@_shape("chef-knife-data-bag-show-decrypted")
def _chef_knife(rng: random.Random) -> Built:
    password = _b64u(rng, 18)
    text = _fill(
        """
        $ knife data bag show credentials smtp_relay --secret-file ~/.chef/encrypted_data_bag_secret
        Encrypted data bag detected, decrypting with provided secret.
        host:     smtp-relay.internal.example.net
        id:       smtp_relay
        password: ‹pw›
        port:     587
        username: postfix-relay@internal.example.net
        $ knife node show web-‹n›.internal.example.net -a chef_environment
        web-‹n›.internal.example.net:
          chef_environment: production
        """,
        pw=password,
        n=f"{rng.randint(1, 40):02d}",
    )
    return text, (password,)


@_shape("hiera-eyaml-decrypt-file-dec-block")
def _eyaml(rng: random.Random) -> Built:
    password = _human(rng)
    enc = "".join(_b64s(rng, 45) for _ in range(3))
    text = _fill(
        """
        $ eyaml decrypt -f data/nodes/erp-db01.corp.example.eyaml
        ---
        classes:
          - role::erp_database
        profile::mssql::instance_name: ERPPROD
        profile::mssql::sa_password: DEC(‹i›)::PKCS7[‹pw›]!
        profile::mssql::collation: Latin1_General_CI_AS
        $ git diff --stat data/nodes/erp-db01.corp.example.eyaml
         data/nodes/erp-db01.corp.example.eyaml | 2 +-
         1 file changed, 1 insertion(+), 1 deletion(-)
        $ head -c 120 data/nodes/erp-db01.corp.example.eyaml | tail -c 60
        ‹enc›
        """,
        pw=password,
        i=str(rng.randint(1, 9)),
        enc=enc[:60],
    )
    return text, (password,)


@_shape("bicepparam-file-sql-admin-password")
def _bicepparam(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%*+-=?@_")
    text = _fill(
        """
        // infra/orders/main.bicepparam
        using './main.bicep'

        param location = 'westeurope'
        param sqlServerName = 'sql-orders-prod-weu-‹n›'
        param sqlAdministratorLogin = 'orders_sqladmin'
        param sqlAdministratorLoginPassword = '‹pw›'
        param databaseSkuName = 'GP_S_Gen5_2'
        param tags = {
          costCenter: 'CC-‹cc›'
          owner: 'team-orders'
        }

        // az deployment group create -g rg-orders-prod -f infra/orders/main.bicep -p infra/orders/main.bicepparam
        """,
        pw=password,
        n=f"{rng.randint(1, 9):03d}",
        cc=str(rng.randint(1000, 9999)),
    )
    return text, (password,)


@_shape("terragrunt-generate-block-heredoc-provider")
def _terragrunt(rng: random.Random) -> Built:
    password = _brief(rng) + _pick(rng, "!*-_", 1) + _pick(rng, string.digits, 2)
    text = _fill(
        """
        # live/prod/eu-west-1/mysql-grants/terragrunt.hcl
        include "root" {
          path = find_in_parent_folders("root.hcl")
        }

        terraform {
          source = "git::ssh://git@git.corp.example/infra/modules.git//mysql-grants?ref=v‹v›"
        }

        generate "provider" {
          path      = "provider_override.tf"
          if_exists = "overwrite_terragrunt"
          contents  = <<EOF
        provider "mysql" {
          endpoint = "orders-prod.cluster-c8xk2.eu-west-1.rds.amazonaws.com:3306"
          username = "tf_grants"
          password = "‹pw›"
          tls      = true
        }
        EOF
        }

        inputs = {
          databases = ["orders", "orders_archive"]
          readers   = ["bi_reader", "support_ro"]
        }
        """,
        pw=password,
        v=f"1.{rng.randint(0, 30)}.{rng.randint(0, 9)}",
    )
    return text, (password,)


@_shape("vagrantfile-ruby-winrm-password")
def _vagrantfile(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        # -*- mode: ruby -*-
        # vi: set ft=ruby :
        Vagrant.configure("2") do |config|
          config.vm.box = "gusztavvargadr/windows-server-2022-standard"
          config.vm.hostname = "build-win‹n›"
          config.vm.communicator = "winrm"
          config.winrm.username = "builder"
          config.winrm.password = "‹pw›"
          config.winrm.transport = :plaintext
          config.winrm.basic_auth_only = true

          config.vm.provider "virtualbox" do |vb|
            vb.cpus = 4
            vb.memory = 8192
          end

          config.vm.provision "shell", path: "scripts/install-buildtools.ps1", privileged: true
        end
        """,
        pw=password,
        n=f"{rng.randint(1, 9):02d}",
    )
    return text, (password,)


@_shape("k3s-config-yaml-join-token-server-password")
def _k3s(rng: random.Random) -> Built:
    password = _hexs(rng, 32)
    text = _fill(
        """
        root@k3s-node-2:~# cat /etc/rancher/k3s/config.yaml
        server: https://10.20.0.11:6443
        token: K10‹ca›::server:‹pw›
        node-label:
          - "topology.kubernetes.io/zone=rack-b"
        tls-san:
          - k3s.home.arpa
        disable:
          - traefik
        root@k3s-node-2:~# systemctl restart k3s && k3s kubectl get nodes
        NAME         STATUS   ROLES                       AGE   VERSION
        k3s-node-1   Ready    control-plane,etcd,master   41d   v1.31.4+k3s1
        k3s-node-2   Ready    control-plane,etcd,master   12s   v1.31.4+k3s1
        """,
        ca=_hexs(rng, 64),
        pw=password,
    )
    return text, (password,)


@_shape("proxmox-pveum-token-add-box-table")
def _proxmox(rng: random.Random) -> Built:
    value = _guid(rng)
    text = _fill(
        """
        root@pve1:~# pveum user token add terraform@pve provider --privsep 0 --comment "opentofu runs"
        ┌──────────────┬──────────────────────────────────────┐
        │ key          │ value                                │
        ╞══════════════╪══════════════════════════════════════╡
        │ full-tokenid │ terraform@pve!provider               │
        ├──────────────┼──────────────────────────────────────┤
        │ info         │ {"privsep":"0"}                      │
        ├──────────────┼──────────────────────────────────────┤
        │ value        │ ‹v› │
        └──────────────┴──────────────────────────────────────┘
        """,
        v=value,
    )
    return text, (value,)


@_shape("openstack-clouds-yaml-auth-password")
def _clouds_yaml(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!%+-=_")
    project = "PCP-" + _pick(rng, _UPPER_DIGITS, 6)
    text = _fill(
        """
        $ cat ~/.config/openstack/clouds.yaml
        clouds:
          infomaniak-dc3:
            auth:
              auth_url: https://api.pub1.infomaniak.cloud/identity/v3
              username: "PCU-‹u›"
              password: "‹pw›"
              project_name: "‹p›"
              user_domain_name: "Default"
              project_domain_name: "Default"
            region_name: "dc3-a"
            interface: "public"
            identity_api_version: 3
        $ openstack --os-cloud infomaniak-dc3 server list -f value -c Name -c Status
        web-a RUNNING
        web-b ACTIVE
        """,
        u=_pick(rng, _UPPER_DIGITS, 6),
        pw=password,
        p=project,
    )
    return text, (password,)


@_shape("kamal-dotkamal-secrets-raw-values")
def _kamal(rng: random.Random) -> Built:
    registry, master = _b64u(rng, 24), _hexs(rng, 32)
    text = _fill(
        """
        $ cat .kamal/secrets
        # Secrets defined here are available for reference under registry/password, env/secret in config/deploy.yml.
        # All secrets should be pulled from either password manager, ENV, or a file. DO NOT ENTER RAW CREDENTIALS HERE!
        # This file needs to be safe for git.

        KAMAL_REGISTRY_PASSWORD=‹reg›
        RAILS_MASTER_KEY=‹mk›
        $ kamal deploy
          INFO [‹id›] Running docker login registry.corp.example -u deploy -p [REDACTED] on 10.0.4.21
          INFO [‹id›] Finished in 0.912 seconds with exit status 0 (successful).
        """,
        reg=registry,
        mk=master,
        id=_hexs(rng, 8),
    )
    return text, (registry, master)


@_shape("traefik-ovh-dns-challenge-env-file")
def _traefik_ovh(rng: random.Random) -> Built:
    app_secret, consumer = _pick(rng, _LETTERS_DIGITS, 32), _pick(rng, _LETTERS_DIGITS, 32)
    text = _fill(
        """
        $ cat /opt/traefik/traefik.yml | sed -n '/certificatesResolvers/,$p'
        certificatesResolvers:
          ovhdns:
            acme:
              email: hostmaster@atelier-example.fr
              storage: /letsencrypt/acme.json
              dnsChallenge:
                provider: ovh
                delayBeforeCheck: 10
        $ cat /opt/traefik/ovh.env
        OVH_ENDPOINT=ovh-eu
        OVH_APPLICATION_KEY=‹ak›
        OVH_APPLICATION_SECRET=‹as›
        OVH_CONSUMER_KEY=‹ck›
        """,
        ak=_pick(rng, _LETTERS_DIGITS, 16),
        **{"as": app_secret},
        ck=consumer,
    )
    return text, (app_secret, consumer)


@_shape("caddyfile-acme-dns-porkbun-tabs")
def _caddy_porkbun(rng: random.Random) -> Built:
    key, secret = "pk1_" + _hexs(rng, 64), "sk1_" + _hexs(rng, 64)
    text = _fill(
        """
        {
        \temail admin@backstube-example.de
        \tacme_dns porkbun {
        \t\tapi_key ‹k›
        \t\tapi_secret_key ‹s›
        \t}
        }

        *.backstube-example.de {
        \t@shop host shop.backstube-example.de
        \thandle @shop {
        \t\treverse_proxy 127.0.0.1:8080
        \t}
        }
        """,
        k=key,
        s=secret,
    )
    return text, (key, secret)


@_shape("certbot-dns-linode-credentials-ini")
def _certbot_linode(rng: random.Random) -> Built:
    key = _hexs(rng, 64)
    text = _fill(
        """
        $ sudo cat /etc/letsencrypt/linode.ini
        # Linode API credentials used by Certbot
        dns_linode_key = ‹k›
        dns_linode_version = 4
        $ sudo certbot certonly --dns-linode --dns-linode-credentials /etc/letsencrypt/linode.ini \\
            --dns-linode-propagation-seconds 120 -d 'example-club.org' -d '*.example-club.org'
        Saving debug log to /var/log/letsencrypt/letsencrypt.log
        Requesting a certificate for example-club.org and *.example-club.org
        Waiting 120 seconds for DNS changes to propagate

        Successfully received certificate.
        Certificate is saved at: /etc/letsencrypt/live/example-club.org/fullchain.pem
        """,
        k=key,
    )
    return text, (key,)


@_shape("nginx-location-proxy-set-header-basic")
def _nginx_basic(rng: random.Random) -> Built:
    raw = "viewer:" + _brief(rng) + _pick(rng, "!*#", 1)
    encoded = base64.b64encode(raw.encode()).decode()
    text = _fill(
        """
        # /etc/nginx/conf.d/status.conf
        server {
            listen 443 ssl;
            server_name status.lab.example;

            location /grafana/ {
                proxy_pass http://127.0.0.1:3000/;
                proxy_set_header Host $host;
                proxy_set_header X-Real-IP $remote_addr;
                # auto-login the wall display as the read-only user
                proxy_set_header Authorization "Basic ‹b›";
            }
        }
        """,
        b=encoded,
    )
    return text, (encoded,)


@_shape("apache-vhost-setenv-app-password")
def _apache_setenv(rng: random.Random) -> Built:
    password = _human_plain(rng) + _pick(rng, "!?", 1)
    text = _fill(
        """
        <VirtualHost *:443>
            ServerName intranet.stadtwerke-example.de
            DocumentRoot /var/www/intranet/public

            SetEnv APP_ENV production
            SetEnv APP_DB_HOST db02.stadtwerke-example.local
            SetEnv APP_DB_USER intranet
            SetEnv APP_DB_PASSWORD "‹pw›"

            <Directory /var/www/intranet/public>
                AllowOverride All
                Require all granted
            </Directory>
            ErrorLog ${APACHE_LOG_DIR}/intranet_error.log
        </VirtualHost>
        """,
        pw=password,
    )
    return text, (password,)


@_shape("govc-env-file-vsphere-password")
def _govc(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%+-=?@_")
    text = _fill(
        """
        $ cat ~/.govc/lab.env
        export GOVC_URL=https://vcsa01.dc1.example.local/sdk
        export GOVC_USERNAME=administrator@vsphere.local
        export GOVC_PASSWORD='‹pw›'
        export GOVC_INSECURE=1
        export GOVC_DATACENTER=DC1
        $ source ~/.govc/lab.env && govc about
        FullName:     VMware vCenter Server 8.0.3 build-24022515
        Name:         VMware vCenter Server
        Vendor:       VMware, Inc.
        Version:      8.0.3
        Build:        24022515
        API type:     VirtualCenter
        """,
        pw=password,
    )
    return text, (password,)


@_shape("ipmitool-lanplus-bmc-password-flag")
def _ipmitool(rng: random.Random) -> Built:
    password = _pick(rng, string.ascii_uppercase, 10)
    text = _fill(
        """
        [root@jump01 ~]# ipmitool -I lanplus -H 10.40.1.‹h› -U ADMIN -P ‹pw› chassis power status
        Chassis Power is off
        [root@jump01 ~]# ipmitool -I lanplus -H 10.40.1.‹h› -U ADMIN -P ‹pw› chassis power on
        Chassis Power Control: Up/On
        [root@jump01 ~]# ipmitool -I lanplus -H 10.40.1.‹h› -U ADMIN -P ‹pw› sel list | tail -n 2
          7a | ‹d› | 03:12:44 | Power Supply PS2 Status | Failure detected () | Asserted
          7b | ‹d› | 03:13:02 | Power Supply PS2 Status | Failure detected () | Deasserted
        """,
        pw=password,
        h=str(rng.randint(10, 250)),
        d=_date(rng).replace("-", "/"),
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# Network gear and operating systems
# --------------------------------------------------------------------------------------------------------


@_shape("mikrotik-export-show-sensitive-psk-and-ppp-secret")
def _mikrotik(rng: random.Random) -> Built:
    psk, ppp = _passphrase(rng, 2, "") + str(rng.randint(100, 9999)), _brief(rng)
    text = _fill(
        """
        [admin@MikroTik-Buero] > /export show-sensitive
        # ‹d› 09:41:07 by RouterOS 7.16.2
        # software id = ‹sid›
        #
        # model = RB5009UG+S+
        # serial number = HF‹sn›
        /interface bridge
        add admin-mac=48:A9:8A:‹mac› auto-mac=no comment=defconf name=bridge
        /interface wireless security-profiles
        set [ find default=yes ] supplicant-identity=MikroTik
        add authentication-types=wpa2-psk mode=dynamic-keys name=buero supplicant-identity="" wpa2-pre-shared-key=‹psk›
        /ppp secret
        add local-address=10.99.0.1 name=vpn-hkrause password=‹ppp› profile=default-encryption remote-address=10.99.0.12 service=l2tp
        /ip address
        add address=192.168.88.1/24 comment=defconf interface=bridge network=192.168.88.0
        """,
        d=_date(rng),
        sid=_pick(rng, _UPPER_DIGITS, 4) + "-" + _pick(rng, _UPPER_DIGITS, 4),
        sn=_pick(rng, _UPPER_DIGITS, 8),
        mac=":".join(_hexs(rng, 2, upper=True) for _ in range(3)),
        psk=psk,
        ppp=ppp,
    )
    return text, (psk, ppp)


@_shape("edgeos-show-configuration-commands-pppoe")
def _edgeos(rng: random.Random) -> Built:
    password = _pick(rng, _LOWER_DIGITS, 10)
    text = _fill(
        """
        ubnt@ER-X:~$ show configuration commands | match pppoe
        set interfaces ethernet eth0 pppoe 0 default-route auto
        set interfaces ethernet eth0 pppoe 0 firewall in name WAN_IN
        set interfaces ethernet eth0 pppoe 0 mtu 1492
        set interfaces ethernet eth0 pppoe 0 name-server auto
        set interfaces ethernet eth0 pppoe 0 password ‹pw›
        set interfaces ethernet eth0 pppoe 0 user-id ‹uid›@dsl.isp-example.nl
        set service nat rule 5010 outbound-interface pppoe0
        """,
        pw=password,
        uid=_digits(rng, 10),
    )
    return text, (password,)


@_shape("fortigate-cli-phase1-psksecret-plain")
def _fortigate(rng: random.Random) -> Built:
    psk = _strong(rng, 24, marks="!#%+-=@_")
    text = _fill(
        """
        FGT60F-HQ # config vpn ipsec phase1-interface
        FGT60F-HQ (phase1-interface) # edit "to-branch-lyon"
        new entry 'to-branch-lyon' added
        FGT60F-HQ (to-branch-lyon) # set interface "wan1"
        FGT60F-HQ (to-branch-lyon) # set ike-version 2
        FGT60F-HQ (to-branch-lyon) # set peertype any
        FGT60F-HQ (to-branch-lyon) # set net-device disable
        FGT60F-HQ (to-branch-lyon) # set proposal aes256-sha256
        FGT60F-HQ (to-branch-lyon) # set remote-gw 198.51.100.‹ip›
        FGT60F-HQ (to-branch-lyon) # set psksecret ‹psk›
        FGT60F-HQ (to-branch-lyon) # next
        FGT60F-HQ (phase1-interface) # end
        """,
        ip=str(rng.randint(2, 250)),
        psk=psk,
    )
    return text, (psk,)


@_shape("pfsense-config-xml-ipsec-pre-shared-key")
def _pfsense(rng: random.Random) -> Built:
    psk = _pick(rng, _LETTERS_DIGITS, 40)
    text = _fill(
        """
        \t<ipsec>
        \t\t<client></client>
        \t\t<phase1>
        \t\t\t<ikeid>1</ikeid>
        \t\t\t<iketype>ikev2</iketype>
        \t\t\t<interface>wan</interface>
        \t\t\t<remote-gateway>203.0.113.‹ip›</remote-gateway>
        \t\t\t<protocol>inet</protocol>
        \t\t\t<myid_type>myaddress</myid_type>
        \t\t\t<peerid_type>peeraddress</peerid_type>
        \t\t\t<authentication_method>pre_shared_key</authentication_method>
        \t\t\t<pre-shared-key>‹psk›</pre-shared-key>
        \t\t\t<descr><![CDATA[Hamburg office]]></descr>
        \t\t\t<nat_traversal>on</nat_traversal>
        \t\t\t<dpd_delay>10</dpd_delay>
        \t\t</phase1>
        \t</ipsec>
        """,
        ip=str(rng.randint(2, 250)),
        psk=psk,
    )
    return text, (psk,)


@_shape("openwrt-uci-show-wireless-key")
def _openwrt(rng: random.Random) -> Built:
    key = _passphrase(rng, 4, " ")
    text = _fill(
        """
        root@OpenWrt:~# uci show wireless
        wireless.radio0=wifi-device
        wireless.radio0.type='mac80211'
        wireless.radio0.path='platform/soc/18000000.wifi'
        wireless.radio0.channel='6'
        wireless.radio0.band='2g'
        wireless.radio0.htmode='HE20'
        wireless.radio0.country='PL'
        wireless.default_radio0=wifi-iface
        wireless.default_radio0.device='radio0'
        wireless.default_radio0.network='lan'
        wireless.default_radio0.mode='ap'
        wireless.default_radio0.ssid='Kowalscy_Dom'
        wireless.default_radio0.encryption='sae-mixed'
        wireless.default_radio0.key='‹k›'
        """,
        k=key,
    )
    return text, (key,)


@_shape("networkmanager-nmconnection-wifi-psk")
def _nmconnection(rng: random.Random) -> Built:
    psk = _human_plain(rng) + _pick(rng, string.digits, 2)
    text = _fill(
        """
        $ sudo cat /etc/NetworkManager/system-connections/Cafe-Lumen.nmconnection
        [connection]
        id=Cafe-Lumen
        uuid=‹u›
        type=wifi
        interface-name=wlp2s0
        timestamp=‹ts›

        [wifi]
        mode=infrastructure
        ssid=Cafe-Lumen

        [wifi-security]
        auth-alg=open
        key-mgmt=wpa-psk
        psk=‹psk›

        [ipv4]
        method=auto

        [ipv6]
        addr-gen-mode=stable-privacy
        method=auto
        """,
        u=_guid(rng),
        ts=str(_epoch(rng)),
        psk=psk,
    )
    return text, (psk,)


@_shape("windows-reg-export-winlogon-defaultpassword-escaped")
def _reg_winlogon(rng: random.Random) -> Built:
    # The password holds a backslash; a .reg file doubles it, and the value is planted as the file writes it.
    written = rng.choice(_VOCAB).capitalize() + "\\\\" + str(rng.randint(100, 9999)) + rng.choice("!#")
    text = _fill(
        """
        Windows Registry Editor Version 5.00

        [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon]
        "AutoAdminLogon"="1"
        "DefaultUserName"="kiosk"
        "DefaultDomainName"="LOBBY-KIOSK-‹n›"
        "DefaultPassword"="‹pw›"
        "ForceAutoLogon"=dword:00000001
        "Shell"="C:\\\\Kiosk\\\\LobbyScreen.exe"
        """,
        n=f"{rng.randint(1, 20):02d}",
        pw=written,
    )
    return text, (written,)


@_shape("macos-security-find-generic-password-w")
def _macos_security(rng: random.Random) -> Built:
    password = _strong(rng, 24, marks="-_.")
    text = _fill(
        """
        ~ % security find-generic-password -a "$USER" -s "mysql-reporting-ro" -w
        ‹pw›
        ~ % mysql -h reporting.db.internal -u reporting_ro -p"$(security find-generic-password -a "$USER" -s mysql-reporting-ro -w)" -e 'select 1'
        mysql: [Warning] Using a password on the command line interface can be insecure.
        +---+
        | 1 |
        +---+
        | 1 |
        +---+
        """,
        pw=password,
    )
    return text, (password,)


@_shape("ppp-chap-secrets-quoted-columns")
def _chap_secrets(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 12)
    text = _fill(
        """
        $ sudo cat /etc/ppp/chap-secrets
        # Secrets for authentication using CHAP
        # client\t\t\t\tserver\tsecret\t\t\tIP addresses
        "‹uid›@adsl.provider-example.it"\t*\t"‹pw›"\t*
        """,
        uid=_digits(rng, 9),
        pw=password,
    )
    return text, (password,)


@_shape("windows-batch-ftp-script-set-password")
def _ftp_batch(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        @echo off
        rem nightly_upload.bat -- pushes the EDI exports to the partner (scheduled 02:30)
        set FTPHOST=ftp.edi-partner.example
        set FTPUSER=acme_edi
        set FTPPASS=‹pw›
        set CMDS=%TEMP%\\ftpcmd.txt

        > "%CMDS%" echo open %FTPHOST%
        >>"%CMDS%" echo user %FTPUSER% %FTPPASS%
        >>"%CMDS%" echo binary
        >>"%CMDS%" echo cd /inbound
        >>"%CMDS%" echo mput D:\\EDI\\out\\*.edi
        >>"%CMDS%" echo bye
        ftp -n -i -s:"%CMDS%"
        del "%CMDS%"
        """,
        pw=password,
    )
    return text, (password,)


@_shape("smbclient-user-domain-percent-password")
def _smbclient(rng: random.Random) -> Built:
    password = _human(rng, marks="!#")
    text = _fill(
        """
        $ smbclient //fs01.corp.example/scans -U 'CORP\\svc_scanner%‹pw›' -c 'ls' | head -n 4
          .                                   D        0  Mon Mar  2 08:14:10 2026
          ..                                  D        0  Thu Jan 15 11:02:37 2026
          scan_20260302_081402.pdf            A   482113  Mon Mar  2 08:14:02 2026
          scan_20260302_080955.pdf            A   219775  Mon Mar  2 08:09:55 2026
        """,
        pw=password,
    )
    return text, (password,)


@_shape("xfreerdp-command-line-slash-p")
def _xfreerdp(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%+=?@")
    text = _fill(
        """
        $ xfreerdp /v:ts01.corp.example /u:jdoe /d:CORP /p:'‹pw›' /size:1920x1080 /cert:ignore +clipboard /drive:home,/home/jdoe
        [10:14:22:391] [48211:48212] [INFO][com.freerdp.client.x11] - No user name set. - Using login name: jdoe
        [10:14:23:018] [48211:48212] [INFO][com.freerdp.core.connection] - Client Security: NLA:1 TLS:1 RDP:0
        [10:14:23:611] [48211:48212] [INFO][com.freerdp.gdi] - Local framebuffer format  PIXEL_FORMAT_BGRX32
        """,
        pw=password,
    )
    return text, (password,)


@_shape("aruba-instant-ssid-profile-wpa-passphrase")
def _aruba(rng: random.Random) -> Built:
    passphrase = _passphrase(rng, 2, "-") + "-" + str(rng.randint(10, 99))
    text = _fill(
        """
        (Instant AP)# configure terminal
        (Instant AP)(config) # wlan ssid-profile Guest-Lobby
        (Instant AP)(SSID Profile "Guest-Lobby") # enable
        (Instant AP)(SSID Profile "Guest-Lobby") # type guest
        (Instant AP)(SSID Profile "Guest-Lobby") # essid Guest-Lobby
        (Instant AP)(SSID Profile "Guest-Lobby") # opmode wpa2-psk-aes
        (Instant AP)(SSID Profile "Guest-Lobby") # wpa-passphrase ‹p›
        (Instant AP)(SSID Profile "Guest-Lobby") # vlan guest
        (Instant AP)(SSID Profile "Guest-Lobby") # exit
        (Instant AP)(config) # end
        (Instant AP)# commit apply
        committing configuration...
        configuration committed.
        """,
        p=passphrase,
    )
    return text, (passphrase,)


@_shape("freeswitch-directory-user-xml-param")
def _freeswitch(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 16)
    ext = str(rng.randint(1001, 1099))
    text = _fill(
        """
        <!-- /etc/freeswitch/directory/default/‹ext›.xml -->
        <include>
          <user id="‹ext›">
            <params>
              <param name="password" value="‹pw›"/>
            </params>
            <variables>
              <variable name="toll_allow" value="domestic,local"/>
              <variable name="accountcode" value="‹ext›"/>
              <variable name="user_context" value="default"/>
              <variable name="effective_caller_id_name" value="Reception"/>
              <variable name="effective_caller_id_number" value="‹ext›"/>
            </variables>
          </user>
        </include>
        """,
        ext=ext,
        pw=password,
    )
    return text, (password,)


@_shape("kinit-echo-password-pipe")
def _kinit(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!%+=?@_")
    text = _fill(
        """
        etl@airflow-worker-3:~$ echo '‹pw›' | kinit svc_etl@CORP.EXAMPLE.COM
        Password for svc_etl@CORP.EXAMPLE.COM:
        etl@airflow-worker-3:~$ klist
        Ticket cache: FILE:/tmp/krb5cc_1001
        Default principal: svc_etl@CORP.EXAMPLE.COM

        Valid starting       Expires              Service principal
        03/02/2026 06:00:11  03/02/2026 16:00:11  krbtgt/CORP.EXAMPLE.COM@CORP.EXAMPLE.COM
        \trenew until 03/09/2026 06:00:05
        """,
        pw=password,
    )
    return text, (password,)


@_shape("open-iscsi-iscsid-conf-chap-password")
def _iscsi(rng: random.Random) -> Built:
    secret = _b32s(rng, 10)
    text = _fill(
        """
        # /etc/iscsi/iscsid.conf (excerpt, comments stripped)
        iscsid.startup = /bin/systemctl start iscsid.socket
        node.startup = automatic
        node.leading_login = No
        node.session.auth.authmethod = CHAP
        node.session.auth.username = iqn.2026-01.lab.pve1:initiator
        node.session.auth.password = ‹s›
        node.session.timeo.replacement_timeout = 120
        node.conn[0].timeo.login_timeout = 15
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("squid-cache-peer-login-user-password")
def _squid(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        # /etc/squid/conf.d/upstream.conf -- branch 07 goes out through HQ
        cache_peer proxy.hq.example.net parent 3128 0 no-query no-digest default login=branch07:‹pw›
        never_direct allow all
        acl localnet src 10.7.0.0/16
        http_access allow localnet
        """,
        pw=password,
    )
    return text, (password,)


@_shape("dovecot-passwd-file-plain-scheme")
def _dovecot(rng: random.Random) -> Built:
    password = _human_plain(rng)
    bcrypt = "$2y$05$" + _pick(rng, _LETTERS_DIGITS + "./", 53)
    text = _fill(
        """
        # cat /etc/dovecot/users
        ops@mail.verein-example.org:‹bc›:5000:5000::/var/vmail/verein-example.org/ops
        shared-inbox@mail.verein-example.org:{PLAIN}‹pw›:5000:5000::/var/vmail/verein-example.org/shared-inbox
        # doveadm auth test shared-inbox@mail.verein-example.org
        Password:
        passdb: shared-inbox@mail.verein-example.org auth succeeded
        """,
        bc=bcrypt,
        pw=password,
    )
    return text, (password,)


@_shape("slapd-conf-rootpw-cleartext")
def _slapd(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        # /etc/openldap/slapd.conf (legacy static config, school lab)
        include\t\t/etc/openldap/schema/core.schema
        include\t\t/etc/openldap/schema/cosine.schema
        include\t\t/etc/openldap/schema/inetorgperson.schema

        database\tmdb
        maxsize\t\t1073741824
        suffix\t\t"dc=schule-example,dc=de"
        rootdn\t\t"cn=admin,dc=schule-example,dc=de"
        rootpw\t\t‹pw›
        directory\t/var/lib/openldap/openldap-data
        index\tobjectClass\teq
        """,
        pw=password,
    )
    return text, (password,)


@_shape("freeradius-clients-conf-shared-secret")
def _freeradius(rng: random.Random) -> Built:
    secret = _pick(rng, _LETTERS_DIGITS, 24)
    text = _fill(
        """
        # /etc/freeradius/3.0/clients.conf
        client wlc-campus {
        \tipaddr = 10.8.0.10
        \tsecret = ‹s›
        \tshortname = wlc
        \tnas_type = other
        \trequire_message_authenticator = yes
        }
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("keepalived-vrrp-auth-pass-eight")
def _keepalived(rng: random.Random) -> Built:
    secret = _pick(rng, _LETTERS_DIGITS, 8)
    text = _fill(
        """
        vrrp_instance VI_INGRESS {
            state MASTER
            interface ens192
            virtual_router_id 51
            priority 150
            advert_int 1
            authentication {
                auth_type PASS
                auth_pass ‹s›
            }
            virtual_ipaddress {
                10.30.0.100/24 dev ens192 label ens192:vip
            }
            track_script {
                chk_haproxy
            }
        }
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("drbd-resource-net-shared-secret")
def _drbd(rng: random.Random) -> Built:
    secret = _b64u(rng, 15)
    text = _fill(
        """
        # /etc/drbd.d/r0.res
        resource r0 {
          protocol C;
          net {
            cram-hmac-alg sha256;
            shared-secret "‹s›";
            after-sb-0pri discard-zero-changes;
          }
          on nfs-a { device /dev/drbd0; disk /dev/sdb1; address 10.50.0.1:7789; meta-disk internal; }
          on nfs-b { device /dev/drbd0; disk /dev/sdb1; address 10.50.0.2:7789; meta-disk internal; }
        }
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("bind-tsig-keygen-output-secret")
def _bind_tsig(rng: random.Random) -> Built:
    secret = _b64s(rng, 32)
    text = _fill(
        """
        root@ns1:~# tsig-keygen -a hmac-sha256 xfer-ns2 | tee /etc/bind/xfer-ns2.key
        key "xfer-ns2" {
        \talgorithm hmac-sha256;
        \tsecret "‹s›";
        };
        root@ns1:~# grep -n xfer-ns2 /etc/bind/named.conf.local
        3:include "/etc/bind/xfer-ns2.key";
        14:\tallow-transfer { key "xfer-ns2"; };
        """,
        s=secret,
    )
    return text, (secret,)


# --------------------------------------------------------------------------------------------------------
# Databases and data tools
# --------------------------------------------------------------------------------------------------------


@_shape("cqlshrc-authentication-section-with-warning")
def _cqlshrc(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%+-=_")
    text = _fill(
        """
        $ cat ~/.cassandra/cqlshrc
        ; cqlsh settings for the analytics cluster
        [authentication]
        username = analytics_ro
        password = ‹pw›

        [connection]
        hostname = cass-seed-1.dc1.internal
        port = 9042
        ssl = true
        $ cqlsh
        Warning: Password is found in an insecure cqlshrc file. The file is owned or readable by other users on the system.
        Connected to analytics-dc1 at cass-seed-1.dc1.internal:9042
        [cqlsh 6.1.0 | Cassandra 4.1.7 | CQL spec 3.4.6 | Native protocol v5]
        Use HELP for help.
        analytics_ro@cqlsh>
        """,
        pw=password,
    )
    return text, (password,)


@_shape("cockroach-sql-url-flag-cloud-cluster")
def _cockroach(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 22)
    text = _fill(
        """
        $ cockroach sql --url "postgresql://maxroach:‹pw›@swift-lynx-‹n›.j77.aws-eu-central-1.cockroachlabs.cloud:26257/bank?sslmode=verify-full"
        #
        # Welcome to the CockroachDB SQL shell.
        # All statements must be terminated by a semicolon.
        # To exit, type: \\q.
        #
        # Server version: CockroachDB CCL v24.3.1 (x86_64-pc-linux-gnu, built 2024/12/11 21:41:08, go1.22.8 X:nocoverageredesign) (same version as client)
        # Cluster ID: ‹cid›
        #
        maxroach@swift-lynx-‹n›.j77.aws-eu-central-1.cockroachlabs.cloud:26257/bank> SELECT count(*) FROM accounts;
          count
        ---------
           ‹c›
        (1 row)
        """,
        pw=password,
        n=str(rng.randint(1000, 9999)),
        cid=_guid(rng),
        c=str(rng.randint(100, 9999)),
    )
    return text, (password,)


@_shape("duckdb-create-secret-s3-wasabi")
def _duckdb(rng: random.Random) -> Built:
    secret = _pick(rng, _LETTERS_DIGITS, 40)
    text = _fill(
        """
        $ duckdb analytics.duckdb
        v1.1.3 19864453f7
        Enter ".help" for usage hints.
        D CREATE PERSISTENT SECRET wasabi_exports (
              TYPE s3,
              KEY_ID '‹kid›',
              SECRET '‹s›',
              REGION 'eu-central-2',
              ENDPOINT 's3.eu-central-2.wasabisys.com'
          );
        ┌─────────┐
        │ Success │
        │ boolean │
        ├─────────┤
        │ true    │
        └─────────┘
        D SELECT count(*) FROM read_parquet('s3://exports-2026/orders/*.parquet');
        """,
        kid=_pick(rng, _UPPER_DIGITS, 20),
        s=secret,
    )
    return text, (secret,)


@_shape("couchdb-local-d-ini-admins-before-hash")
def _couchdb(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        # cat /opt/couchdb/etc/local.d/10-admins.ini
        ; written by the provisioning script; CouchDB replaces the value with a -pbkdf2- hash on first start
        [admins]
        admin = ‹pw›

        [couchdb]
        uuid = ‹u›
        single_node = true
        """,
        pw=password,
        u=_hexs(rng, 32),
    )
    return text, (password,)


@_shape("surreal-start-user-pass-flags-log")
def _surreal(rng: random.Random) -> Built:
    password = _b64u(rng, 21)
    day = _date(rng)
    text = _fill(
        """
        $ surreal start --log info --user root --pass ‹pw› --bind 0.0.0.0:8000 rocksdb:/var/lib/surrealdb/data.db
        ‹t1›  INFO surreal::env: Running 2.1.4 for linux on x86_64
        ‹t1›  INFO surrealdb::core::kvs::ds: Starting kvs store at rocksdb:/var/lib/surrealdb/data.db
        ‹t2›  INFO surrealdb::core::kvs::ds: Started kvs store at rocksdb:/var/lib/surrealdb/data.db
        ‹t2›  INFO surreal::dbs: Credentials were provided, and no root users were found. The root user 'root' will be created
        ‹t2›  INFO surrealdb::net: Started web server on 0.0.0.0:8000
        """,
        pw=password,
        t1=day + "T06:14:02.118Z",
        t2=day + "T06:14:02.530Z",
    )
    return text, (password,)


@_shape("arangosh-server-password-flag-session")
def _arangosh(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%+-=?_")
    text = _fill(
        """
        $ arangosh --server.endpoint ssl://arango.internal:8529 --server.username root --server.password '‹pw›' --server.database inventory
        arangosh (ArangoDB 3.11.12 [linux] 64bit, using jemalloc, build tags/v3.11.12-0, VPack 0.2.1, RocksDB 7.2.0, ICU 64.2, V8 7.9.317, OpenSSL 3.0.15)
        Copyright (c) ArangoDB GmbH

        Command-line history will be persisted when the shell is exited. You can use `--console.history false` to turn this off
        Connected to ArangoDB 'http+ssl://arango.internal:8529, version: 3.11.12 [SINGLE, server], database: 'inventory', username: 'root'

        127.0.0.1:8529@inventory> db._collections().length
        ‹n›
        """,
        pw=password,
        n=str(rng.randint(5, 60)),
    )
    return text, (password,)


@_shape("firebird-isql-user-password-flags")
def _firebird(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        C:\\Program Files\\Firebird\\Firebird_4_0> isql -user SYSDBA -password ‹pw› fb01.erp.local:C:\\Data\\ERP.FDB
        Database: fb01.erp.local:C:\\Data\\ERP.FDB, User: SYSDBA
        SQL> SELECT COUNT(*) FROM INVOICES WHERE INVOICE_DATE >= '2026-01-01';

                       COUNT
        =====================
                        ‹n›

        SQL> QUIT;
        """,
        pw=password,
        n=str(rng.randint(1000, 90000)),
    )
    return text, (password,)


@_shape("couchbase-cli-cluster-init-password")
def _couchbase(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%+=_")
    text = _fill(
        """
        $ /opt/couchbase/bin/couchbase-cli cluster-init -c 127.0.0.1 \\
            --cluster-username Administrator \\
            --cluster-password ‹pw› \\
            --services data,index,query \\
            --cluster-ramsize 4096 --cluster-index-ramsize 512 \\
            --index-storage-setting default
        SUCCESS: Cluster initialized
        """,
        pw=password,
    )
    return text, (password,)


@_shape("alembic-ini-sqlalchemy-url-password")
def _alembic(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS + "-_~", 20)
    text = _fill(
        """
        # alembic.ini
        [alembic]
        script_location = migrations
        prepend_sys_path = .
        version_path_separator = os
        sqlalchemy.url = mysql+pymysql://ledger_app:‹pw›@db-ledger.internal:3306/ledger?charset=utf8mb4

        [loggers]
        keys = root,sqlalchemy,alembic

        [logger_alembic]
        level = INFO
        handlers =
        qualname = alembic
        """,
        pw=password,
    )
    return text, (password,)


@_shape("liquibase-properties-colon-password")
def _liquibase(rng: random.Random) -> Built:
    password = _human(rng, marks="!#$")
    text = _fill(
        """
        # liquibase.properties (inventory service)
        changeLogFile: db/changelog/db.changelog-master.yaml
        url: jdbc:postgresql://pg-inventory.internal:5432/inventory
        username: liquibase
        password: ‹pw›
        liquibase.hub.mode: off
        liquibase.command.logLevel: info
        """,
        pw=password,
    )
    return text, (password,)


@_shape("jetbrains-datasources-local-xml-jdbc-url")
def _jetbrains(rng: random.Random) -> Built:
    password = _strong(rng, 18, marks="!#%+-=?@_")
    text = _fill(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <project version="4">
          <component name="DataSourceManagerImpl" format="xml" multifile-model="true">
            <data-source source="LOCAL" name="reporting@sql-prod" uuid="‹u›">
              <driver-ref>sqlserver.jb</driver-ref>
              <synchronize>true</synchronize>
              <jdbc-driver>com.microsoft.sqlserver.jdbc.SQLServerDriver</jdbc-driver>
              <jdbc-url>jdbc:sqlserver://sql-prod.corp.example:1433;database=reporting;user=report_reader;password=‹pw›;encrypt=true;trustServerCertificate=true</jdbc-url>
              <working-dir>$ProjectFileDir$</working-dir>
            </data-source>
          </component>
        </project>
        """,
        u=_guid(rng),
        pw=password,
    )
    return text, (password,)


@_shape("hasura-cli-config-yaml-admin-secret")
def _hasura(rng: random.Random) -> Built:
    secret = _pick(rng, _LETTERS_DIGITS, 32)
    text = _fill(
        """
        # hasura/config.yaml
        version: 3
        endpoint: https://hasura.shop-example.com
        admin_secret: ‹s›
        metadata_directory: metadata
        actions:
          kind: synchronous
          handler_webhook_baseurl: http://localhost:3000
        """,
        s=secret,
    )
    return text, (secret,)


@_shape("meilisearch-master-key-flag-startup")
def _meilisearch(rng: random.Random) -> Built:
    key = _b64u(rng, 24)
    text = _fill(
        """
        $ ./meilisearch --env production --master-key ‹k› --db-path /var/lib/meilisearch/data.ms

        Config file path:\t"none"
        Database path:\t\t"/var/lib/meilisearch/data.ms"
        Server listening on:\t"http://localhost:7700"
        Environment:\t\t"production"
        Commit SHA:\t\t"‹sha›"
        Commit date:\t\t"‹d›T10:21:44Z"
        Package version:\t"1.12.3"

        A master key has been set. Requests to Meilisearch won't be authorized unless you provide an authentication key.
        """,
        k=key,
        sha=_hexs(rng, 40),
        d=_date(rng),
    )
    return text, (key,)


@_shape("podman-quadlet-container-opensearch-admin")
def _quadlet(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%+-=?_")
    text = _fill(
        """
        # ~/.config/containers/systemd/opensearch.container
        [Unit]
        Description=OpenSearch single node

        [Container]
        Image=docker.io/opensearchproject/opensearch:2.18.0
        ContainerName=opensearch
        Environment=discovery.type=single-node
        Environment=OPENSEARCH_INITIAL_ADMIN_PASSWORD=‹pw›
        Environment=OPENSEARCH_JAVA_OPTS=-Xms1g -Xmx1g
        Volume=opensearch-data:/usr/share/opensearch/data
        PublishPort=9200:9200

        [Install]
        WantedBy=default.target
        """,
        pw=password,
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# Developer tools, package registries and CI
# --------------------------------------------------------------------------------------------------------


@_shape("go-env-w-goproxy-userinfo-token")
def _go_env(rng: random.Random) -> Built:
    token = _hexs(rng, 40)
    text = _fill(
        """
        $ go env -w GOPROXY=https://gomod:‹t›@athens.corp.example,https://proxy.golang.org,direct
        $ go env -w GONOSUMDB=git.corp.example
        $ go env GOPROXY GONOSUMDB
        https://gomod:‹t›@athens.corp.example,https://proxy.golang.org,direct
        git.corp.example
        $ go mod download -x git.corp.example/platform/authz@v0.14.2
        # get https://athens.corp.example/git.corp.example/platform/authz/@v/v0.14.2.info
        # get https://athens.corp.example/git.corp.example/platform/authz/@v/v0.14.2.info: 200 OK (0.081s)
        """,
        t=token,
    )
    return text, (token,)


@_shape("conan-remote-login-p-flag")
def _conan(rng: random.Random) -> Built:
    password = _b64u(rng, 18)
    text = _fill(
        """
        $ conan remote add conan-internal https://artifacts.embedded-example.com/conan/api/conan/conan-local
        $ conan remote login conan-internal ci-builder -p ‹pw›
        Changed user of remote 'conan-internal' from 'None' (anonymous) to 'ci-builder' (authenticated)
        $ conan upload "fwcore/*" -r conan-internal -c
        ======== Uploading to remote conan-internal ========
        """,
        pw=password,
    )
    return text, (password,)


@_shape("swift-package-registry-login-token")
def _swift_registry(rng: random.Random) -> Built:
    token = _pick(rng, _LETTERS_DIGITS, 36)
    text = _fill(
        """
        $ swift package-registry set https://swift.pkg.mobile-example.com
        $ swift package-registry login https://swift.pkg.mobile-example.com --token ‹t›
        Registry login successful.
        $ swift package resolve
        Fetching https://swift.pkg.mobile-example.com/mobile.DesignSystem/4.2.0.zip
        Fetched https://swift.pkg.mobile-example.com/mobile.DesignSystem/4.2.0.zip from cache (0.41s)
        """,
        t=token,
    )
    return text, (token,)


@_shape("bazelrc-user-remote-header-buildbuddy")
def _bazelrc(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS, 20)
    text = _fill(
        """
        # .bazelrc.user -- personal overrides, try-imported from .bazelrc
        build --bes_results_url=https://app.buildbuddy.io/invocation/
        build --bes_backend=grpcs://remote.buildbuddy.io
        build --remote_cache=grpcs://remote.buildbuddy.io
        build --remote_timeout=3600
        build --remote_header=x-buildbuddy-api-key=‹k›
        build --jobs=16
        """,
        k=key,
    )
    return text, (key,)


@_shape("sbt-dot-credentials-realm-file")
def _sbt(rng: random.Random) -> Built:
    password = _brief(rng) + _pick(rng, "!#", 1)
    text = _fill(
        """
        $ cat ~/.sbt/.credentials
        realm=Sonatype Nexus Repository Manager
        host=nexus.data-example.io
        user=deployer
        password=‹pw›
        $ grep -n credentials build.sbt
        17:credentials += Credentials(Path.userHome / ".sbt" / ".credentials")
        """,
        pw=password,
    )
    return text, (password,)


@_shape("deno-auth-tokens-env-bearer-and-basic")
def _deno(rng: random.Random) -> Built:
    bearer, password = _b64u(rng, 24), _brief(rng)
    text = _fill(
        """
        $ export DENO_AUTH_TOKENS="‹b›@deno-modules.corp.example;builder:‹pw›@git.corp.example"
        $ deno cache --reload main.ts
        Download https://deno-modules.corp.example/std-ext/0.9.1/mod.ts
        Download https://git.corp.example/raw/platform/deno-shared/main/http.ts
        """,
        b=bearer,
        pw=password,
    )
    return text, (bearer, password)


@_shape("bunfig-toml-install-scopes-inline-table")
def _bunfig(rng: random.Random) -> Built:
    token = _b64s(rng, 27)
    text = _fill(
        """
        # bunfig.toml
        [install]
        exact = true

        [install.scopes]
        "@acme" = { token = "‹t›", url = "https://npm.pkg.acme-example.dev/" }
        """,
        t=token,
    )
    return text, (token,)


@_shape("cypress-env-json-admin-password")
def _cypress(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        {
          "apiUrl": "https://staging-api.bookings-example.com",
          "adminEmail": "qa-admin@bookings-example.com",
          "adminPassword": "‹pw›",
          "retries": 2
        }
        """,
        pw=password,
    )
    return "// cypress.env.json (not in .gitignore yet)\n" + text, (password,)


@_shape("playwright-auth-storage-state-cookie")
def _playwright(rng: random.Random) -> Built:
    session = _b64u(rng, 32)
    state = {
        "cookies": [
            {
                "name": "__Host-ledgerly_session",
                "value": session,
                "domain": "app.ledgerly-example.com",
                "path": "/",
                "expires": _epoch(rng),
                "httpOnly": True,
                "secure": True,
                "sameSite": "Lax",
            },
            {
                "name": "ledgerly_locale",
                "value": "en-GB",
                "domain": "app.ledgerly-example.com",
                "path": "/",
                "expires": -1,
                "httpOnly": False,
                "secure": True,
                "sameSite": "Lax",
            },
        ],
        "origins": [],
    }
    text = "$ cat playwright/.auth/admin.json\n" + json.dumps(state, indent=2) + "\n"
    return text, (session,)


@_shape("sourcegraph-src-access-token-login")
def _sourcegraph(rng: random.Random) -> Built:
    token = "sgp_" + _hexs(rng, 16) + "_" + _hexs(rng, 40)
    text = _fill(
        """
        $ export SRC_ENDPOINT=https://sourcegraph.corp.example
        $ export SRC_ACCESS_TOKEN=‹t›
        $ src login
        ✔️  Authenticated as mhoffmann on https://sourcegraph.corp.example
        $ src search 'repo:^git.corp.example/billing/ lang:go context.WithoutCancel count:5'
        """,
        t=token,
    )
    return text, (token,)


@_shape("travis-yml-env-global-plain-transifex")
def _travis(rng: random.Random) -> Built:
    token = "1/" + _hexs(rng, 40)
    text = _fill(
        """
        language: python
        python: "3.12"
        env:
          global:
            - DJANGO_SETTINGS_MODULE=config.settings.ci
            - TX_TOKEN=‹t›
        install:
          - pip install -r requirements/ci.txt transifex-client
        script:
          - python manage.py makemessages -a
          - tx push -s
        """,
        t=token,
    )
    return text, (token,)


@_shape("drone-runner-env-rpc-secret")
def _drone(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    text = _fill(
        """
        $ sudo cat /etc/drone-runner-docker.env
        DRONE_RPC_PROTO=https
        DRONE_RPC_HOST=drone.corp.example
        DRONE_RPC_SECRET=‹s›
        DRONE_RUNNER_CAPACITY=4
        DRONE_RUNNER_NAME=builder-02
        $ docker logs --tail 2 drone-runner
        time="‹d›T07:12:03Z" level=info msg="starting the server" addr=":3000"
        time="‹d›T07:12:03Z" level=info msg="successfully pinged the remote server"
        """,
        s=secret,
        d=_date(rng),
    )
    return text, (secret,)


@_shape("railway-variables-box-table-database-url")
def _railway(rng: random.Random) -> Built:
    password = _pick(rng, string.ascii_letters, 32)
    text = _fill(
        """
        $ railway variables
        ╔═════════════════════════════ Variables for api ══════════════════════════════╗
        ║ DATABASE_URL        │ postgresql://postgres:‹pw›@postgres.railway.internal:5432/railway ║
        ║──────────────────────────────────────────────────────────────────────────────║
        ║ NODE_ENV            │ production                                               ║
        ║──────────────────────────────────────────────────────────────────────────────║
        ║ RAILWAY_ENVIRONMENT │ production                                               ║
        ╚══════════════════════════════════════════════════════════════════════════════╝
        """,
        pw=password,
    )
    return text, (password,)


@_shape("git-config-list-http-extraheader-basic")
def _extraheader(rng: random.Random) -> Built:
    inner = "x-access-token:ghs_" + _pick(rng, _LETTERS_DIGITS, 36)
    encoded = base64.b64encode(inner.encode()).decode()
    text = _fill(
        """
        ##[group]Run git config --local --list
        git config --local --list
        shell: /usr/bin/bash -e {0}
        ##[endgroup]
        core.repositoryformatversion=0
        core.filemode=true
        core.bare=false
        remote.origin.url=https://github.com/acme-example/ledger
        remote.origin.fetch=+refs/heads/*:refs/remotes/origin/*
        gc.auto=0
        http.https://github.com/.extraheader=AUTHORIZATION: basic ‹b›
        branch.main.remote=origin
        """,
        b=encoded,
    )
    return text, (encoded,)


@_shape("podman-login-quay-robot-p-flag")
def _podman_login(rng: random.Random) -> Built:
    token = _pick(rng, _UPPER_DIGITS, 64)
    text = _fill(
        """
        $ podman login quay.io -u 'acme_example+ci_pusher' -p ‹t›
        Login Succeeded!
        $ podman push quay.io/acme_example/worker:‹v›
        Getting image source signatures
        Copying blob sha256:‹dg›
        Writing manifest to image destination
        """,
        t=token,
        v=f"2026.{rng.randint(1, 12)}.{rng.randint(0, 30)}",
        dg=_hexs(rng, 64),
    )
    return text, (token,)


@_shape("gsutil-boto-hmac-secret-access-key")
def _boto(rng: random.Random) -> Built:
    secret = _pick(rng, _B64_ALPHABET, 40)
    text = _fill(
        """
        $ cat ~/.boto
        [Credentials]
        gs_access_key_id = GOOG1E‹kid›
        gs_secret_access_key = ‹s›

        [Boto]
        https_validate_certificates = True

        [GSUtil]
        default_project_id = media-archive-‹n›
        $ gsutil ls gs://media-archive-‹n›-raw/ | head -n 2
        gs://media-archive-‹n›-raw/2025/
        gs://media-archive-‹n›-raw/2026/
        """,
        kid=_pick(rng, _UPPER_DIGITS, 55),
        s=secret,
        n=str(rng.randint(100000, 999999)),
    )
    return text, (secret,)


@_shape("teamcity-service-message-set-parameter")
def _teamcity(rng: random.Random) -> Built:
    key = "API-" + _pick(rng, _UPPER_DIGITS, 28)
    text = _fill(
        """
        [08:41:02] :\t [Step 2/5] Fetch deploy settings (Command Line)
        [08:41:02] :\t\t [Step 2/5] Starting: /opt/buildagent/temp/agentTmp/custom_script‹n›
        [08:41:02] :\t\t [Step 2/5] in directory: /opt/buildagent/work/‹w›
        [08:41:03] :\t\t [Step 2/5] ##teamcity[setParameter name='env.OCTOPUS_API_KEY' value='‹k›']
        [08:41:03] :\t\t [Step 2/5] Process exited with code 0
        [08:41:03] :\t [Step 3/5] Create Octopus release (OctopusDeploy: Create release)
        """,
        n=str(rng.randint(10**17, 10**18)),
        w=_hexs(rng, 16),
        k=key,
    )
    return text, (key,)


@_shape("docker-history-no-trunc-build-arg-index-url")
def _docker_history(rng: random.Random) -> Built:
    token = _pick(rng, _LETTERS_DIGITS, 26)
    text = _fill(
        """
        $ docker history --no-trunc --format '{{.CreatedBy}}' registry.corp.example/billing/api:2.14.0 | head -n 5
        CMD ["gunicorn" "config.wsgi:application" "--bind" "0.0.0.0:8000" "--workers" "4"]
        COPY . /app # buildkit
        RUN |1 PIP_EXTRA_INDEX_URL=https://__token__:‹t›@pypi.corp.example/simple/ /bin/sh -c pip install --no-cache-dir -r requirements.txt # buildkit
        ARG PIP_EXTRA_INDEX_URL
        WORKDIR /app
        """,
        t=token,
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Chat, notifications, e-mail and SMS vendors
# --------------------------------------------------------------------------------------------------------


@_shape("mmctl-token-generate-output")
def _mmctl(rng: random.Random) -> Built:
    token = _pick(rng, _LOWER_DIGITS, 26)
    text = _fill(
        """
        $ mmctl --local user create --email alertbot@chat.example.org --username alertbot --password-file /dev/stdin --disable-welcome-email < /run/secrets/alertbot_pw
        User alertbot created successfully
        $ mmctl --local token generate alertbot "grafana alerts"
        ‹t›: grafana alerts
        $ mmctl --local token list alertbot
        ‹tid›: grafana alerts
        """,
        t=token,
        tid=_pick(rng, _LOWER_DIGITS, 26),
    )
    return text, (token,)


@_shape("zuliprc-api-section-key")
def _zuliprc(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS, 32)
    text = _fill(
        """
        $ cat ~/.zuliprc
        [api]
        email=standup-bot@verein-example.zulipchat.com
        key=‹k›
        site=https://verein-example.zulipchat.com
        $ zulip-send --stream general --subject standup --message 'Standup in 5 minutes' --config-file ~/.zuliprc
        Message sent.
        """,
        k=key,
    )
    return text, (key,)


@_shape("rocketchat-api-python-auth-token-kwarg")
def _rocketchat(rng: random.Random) -> Built:
    token = _b64u(rng, 32)
    text = _fill(
        """
        from requests import sessions
        from rocketchat_API.rocketchat import RocketChat

        with sessions.Session() as session:
            rocket = RocketChat(
                user_id="‹uid›",
                auth_token="‹t›",
                server_url="https://chat.pfadfinder-example.de",
                session=session,
            )
            rocket.chat_post_message("Kassenbericht ist online.", channel="vorstand")
        """,
        uid=_pick(rng, _LETTERS_DIGITS, 17),
        t=token,
    )
    return text, (token,)


@_shape("pushover-http-client-urlencode-token")
def _pushover(rng: random.Random) -> Built:
    token = "a" + _pick(rng, _LOWER_DIGITS, 29)
    text = _fill(
        """
        import http.client
        import urllib.parse

        conn = http.client.HTTPSConnection("api.pushover.net:443")
        conn.request(
            "POST",
            "/1/messages.json",
            urllib.parse.urlencode(
                {
                    "token": "‹t›",
                    "user": "u‹u›",
                    "title": "NAS",
                    "message": "Nightly rsync to the offsite box finished",
                }
            ),
            {"Content-type": "application/x-www-form-urlencoded"},
        )
        print(conn.getresponse().read())
        """,
        t=token,
        u=_pick(rng, _LOWER_DIGITS, 29),
    )
    return text, (token,)


@_shape("ntfy-client-yml-default-token")
def _ntfy(rng: random.Random) -> Built:
    token = "tk_" + _pick(rng, _LOWER_DIGITS, 29)
    text = _fill(
        """
        # ~/.config/ntfy/client.yml
        default-host: https://ntfy.home-example.net
        default-token: ‹t›

        subscribe:
          - topic: backups
            command: 'notify-send "$title" "$message"'
          - topic: doorbell
        """,
        t=token,
    )
    return text, (token,)


@_shape("powershell-teams-workflow-url-sig")
def _workflow_sig(rng: random.Random) -> Built:
    sig = _b64u(rng, 32)
    text = _fill(
        """
        $webhook = 'https://prod-‹p›.westeurope.logic.azure.com:443/workflows/‹wf›/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig=‹s›'
        $body = @{
            type        = 'message'
            attachments = @(@{
                contentType = 'application/vnd.microsoft.card.adaptive'
                content     = @{ type = 'AdaptiveCard'; version = '1.4'; body = @(@{ type = 'TextBlock'; text = "Backup $env:COMPUTERNAME OK" }) }
            })
        } | ConvertTo-Json -Depth 8
        Invoke-RestMethod -Method Post -Uri $webhook -ContentType 'application/json' -Body $body
        """,
        p=str(rng.randint(10, 99)),
        wf=_hexs(rng, 32),
        s=sig,
    )
    return text, (sig,)


@_shape("mailjet-node-apiconnect-secret")
def _mailjet(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    text = _fill(
        """
        // src/mail/mailjet.js
        const Mailjet = require('node-mailjet');

        const mailjet = Mailjet.apiConnect(
          '‹k›',
          '‹s›',
        );

        module.exports = (to, subject, html) =>
          mailjet.post('send', { version: 'v3.1' }).request({
            Messages: [{ From: { Email: 'news@cafe-example.fr', Name: 'Café' }, To: [{ Email: to }], Subject: subject, HTMLPart: html }],
          });
        """,
        k=_hexs(rng, 32),
        s=secret,
    )
    return text, (secret,)


@_shape("sparkpost-python-client-positional-key")
def _sparkpost(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    text = _fill(
        """
        >>> from sparkpost import SparkPost
        >>> sp = SparkPost('‹k›', base_uri='https://api.eu.sparkpost.com/api/v1')
        >>> sp.transmissions.send(recipients=['qa@shop-example.eu'], html='<p>test</p>', from_email='noreply@shop-example.eu', subject='smoke test')
        {'total_rejected_recipients': 0, 'total_accepted_recipients': 1, 'id': '‹id›'}
        """,
        k=key,
        id=_digits(rng, 17),
    )
    return text, (key,)


@_shape("brevo-php-configuration-set-api-key")
def _brevo(rng: random.Random) -> Built:
    key = "xkeysib-" + _hexs(rng, 64) + "-" + _pick(rng, _LETTERS_DIGITS, 16)
    text = _fill(
        """
        <?php
        require_once __DIR__ . '/vendor/autoload.php';

        $config = Brevo\\Client\\Configuration::getDefaultConfiguration()
            ->setApiKey('api-key', '‹k›');

        $api = new Brevo\\Client\\Api\\TransactionalEmailsApi(new GuzzleHttp\\Client(), $config);
        $email = new \\Brevo\\Client\\Model\\SendSmtpEmail([
            'templateId' => 12,
            'to' => [['email' => $argv[1]]],
        ]);
        $api->sendTransacEmail($email);
        """,
        k=key,
    )
    return text, (key,)


@_shape("vonage-cli-auth-set-api-secret")
def _vonage(rng: random.Random) -> Built:
    secret = _pick(rng, _LETTERS_DIGITS, 16)
    text = _fill(
        """
        $ vonage auth set --api-key=‹k› --api-secret=‹s›
        ✅ Checking API Key Secret
        ✅ Saving credentials to /home/dev/.vonage/config.json
        API Key: ‹k›
        API Secret: ‹mask›
        """,
        k=_hexs(rng, 8),
        s=secret,
        mask=secret[:2] + "*" * 14,
    )
    return text, (secret,)


@_shape("perl-lwp-messagebird-accesskey-header")
def _messagebird(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS, 25)
    text = _fill(
        """
        #!/usr/bin/perl
        use strict;
        use warnings;
        use LWP::UserAgent;

        my $text = shift @ARGV or die "usage: $0 <text>\\n";
        my $ua   = LWP::UserAgent->new(timeout => 10);
        my $res  = $ua->post(
            'https://rest.messagebird.com/messages',
            Authorization => 'AccessKey ‹k›',
            Content       => { originator => 'Praxis', recipients => '31612345678', body => $text },
        );
        die $res->status_line unless $res->is_success;
        """,
        k=key,
    )
    return text, (key,)


@_shape("scala-sttp-plivo-basic-auth")
def _plivo(rng: random.Random) -> Built:
    token = _pick(rng, _LETTERS_DIGITS, 40)
    text = _fill(
        """
        import sttp.client3._

        object SmsAlert extends App {
          val authId    = "MA‹id›"
          val authToken = "‹t›"
          val backend   = HttpClientSyncBackend()

          val response = basicRequest
            .auth.basic(authId, authToken)
            .body(Map("src" -> "+14155550100", "dst" -> args(0), "text" -> args(1)))
            .post(uri"https://api.plivo.com/v1/Account/$authId/Message/")
            .send(backend)

          println(response.code)
        }
        """,
        id=_pick(rng, _UPPER_DIGITS, 18),
        t=token,
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Payments and commerce
# --------------------------------------------------------------------------------------------------------


@_shape("woocommerce-python-api-consumer-pair")
def _woocommerce(rng: random.Random) -> Built:
    key, secret = "ck_" + _hexs(rng, 40), "cs_" + _hexs(rng, 40)
    text = _fill(
        """
        from woocommerce import API

        wcapi = API(
            url="https://shop.baeckerei-example.de",
            consumer_key="‹k›",
            consumer_secret="‹s›",
            version="wc/v3",
            timeout=30,
        )
        print(wcapi.get("orders", params={"status": "processing", "per_page": 20}).json()[0]["id"])
        """,
        k=key,
        s=secret,
    )
    return text, (key, secret)


@_shape("julia-http-bigcommerce-x-auth-token")
def _bigcommerce(rng: random.Random) -> Built:
    token = _pick(rng, _LOWER_DIGITS, 31)
    text = _fill(
        """
        using HTTP, JSON3

        const STORE_HASH = "‹h›"
        const HEADERS = ["X-Auth-Token" => "‹t›", "Accept" => "application/json"]

        resp = HTTP.get("https://api.bigcommerce.com/stores/$STORE_HASH/v3/catalog/products?limit=5", HEADERS)
        for p in JSON3.read(resp.body).data
            println(p.id, "\\t", p.name, "\\t", p.price)
        end
        """,
        h=_pick(rng, _LOWER_DIGITS, 10),
        t=token,
    )
    return text, (token,)


@_shape("haskell-wreq-checkout-com-secret-key")
def _checkout(rng: random.Random) -> Built:
    key = "sk_sbox_" + _pick(rng, "abcdefghijklmnopqrstuvwxyz234567", 26)
    text = _fill(
        """
        {-# LANGUAGE OverloadedStrings #-}
        module Payments.Checkout (capture) where

        import Control.Lens ((&), (.~))
        import Data.Aeson (object, (.=))
        import Network.Wreq

        checkoutKey :: ByteString
        checkoutKey = "‹k›"

        capture :: String -> Int -> IO (Response LByteString)
        capture paymentId amount =
          let opts = defaults & header "Authorization" .~ ["Bearer " <> checkoutKey]
           in postWith opts ("https://api.sandbox.checkout.com/payments/" <> paymentId <> "/captures") (object ["amount" .= amount])
        """,
        k=key,
    )
    return text, (key,)


@_shape("kraken-key-file-two-lines-krakenex")
def _kraken(rng: random.Random) -> Built:
    key, private = _b64s(rng, 42), _b64s(rng, 64)
    text = _fill(
        """
        $ cat kraken.key
        ‹k›
        ‹p›
        $ python -c "import krakenex; k = krakenex.API(); k.load_key('kraken.key'); print(k.query_private('Balance'))"
        {'error': [], 'result': {'ZEUR': '‹eur›', 'XXBT': '0.0124000000'}}
        """,
        k=key,
        p=private,
        eur=f"{rng.randint(100, 9999)}.{rng.randint(1000, 9999)}",
    )
    return text, (key, private)


@_shape("sveltekit-env-lemon-squeezy-jwt")
def _lemonsqueezy(rng: random.Random) -> Built:
    now = _epoch(rng)
    token = _jwt(
        rng,
        {"typ": "JWT", "alg": "RS256"},
        {
            "aud": "94d59cef-dbb8-4ea5-b178-d2540fcd6919",
            "jti": _hexs(rng, 80),
            "iat": now,
            "nbf": now,
            "exp": now + 31_536_000,
            "sub": str(rng.randint(1_000_000, 9_999_999)),
            "scopes": [],
        },
        256,
    )
    text = _fill(
        """
        # .env (SvelteKit, read through $env/static/private)
        PUBLIC_STORE_URL=https://fonts-example.lemonsqueezy.com
        LEMONSQUEEZY_STORE_ID=‹sid›
        LEMONSQUEEZY_API_KEY=‹t›
        """,
        sid=str(rng.randint(10000, 99999)),
        t=token,
    )
    return text, (token,)


@_shape("paddle-billing-python-sdk-api-key")
def _paddle(rng: random.Random) -> Built:
    key = (
        "pdl_live_apikey_01"
        + _pick(rng, _ULID_ALPHABET, 24)
        + "_"
        + _pick(rng, _LETTERS_DIGITS, 22)
        + "_"
        + _pick(rng, _UPPER_DIGITS, 3)
    )
    text = _fill(
        """
        from paddle_billing import Client, Environment, Options

        paddle = Client("‹k›", options=Options(Environment.PRODUCTION))

        for subscription in paddle.subscriptions.list():
            print(subscription.id, subscription.status, subscription.next_billed_at)
        """,
        k=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# AI vendors, notebooks and agents
# --------------------------------------------------------------------------------------------------------


@_shape("wandb-login-then-netrc-tail")
def _wandb(rng: random.Random) -> Built:
    key = _hexs(rng, 40)
    text = _fill(
        """
        (venv) ml@gpu-03:~/detector$ wandb login
        wandb: Logging into wandb.ai. (Learn how to deploy a W&B server locally: https://wandb.me/wandb-server)
        wandb: You can find your API key in your browser here: https://wandb.ai/authorize?ref=models
        wandb: Paste an API key from your profile and hit enter, or press ctrl+c to quit:
        wandb: Appending key for api.wandb.ai to your netrc file: /home/ml/.netrc
        (venv) ml@gpu-03:~/detector$ tail -n 3 ~/.netrc
        machine api.wandb.ai
          login user
          password ‹k›
        """,
        k=key,
    )
    return text, (key,)


@_shape("langfuse-dotenv-secret-beside-public")
def _langfuse(rng: random.Random) -> Built:
    secret = "sk-lf-" + _guid(rng)
    text = _fill(
        """
        # .env.local -- tracing for the support-bot
        LANGFUSE_SECRET_KEY="‹s›"
        LANGFUSE_PUBLIC_KEY="pk-lf-‹p›"
        LANGFUSE_HOST="https://cloud.langfuse.com"
        LANGFUSE_SAMPLE_RATE=0.25
        """,
        s=secret,
        p=_guid(rng),
    )
    return text, (secret,)


@_shape("cerebras-sdk-client-literal-key")
def _cerebras(rng: random.Random) -> Built:
    key = "csk-" + _pick(rng, _LOWER_DIGITS, 48)
    text = _fill(
        """
        import os

        from cerebras.cloud.sdk import Cerebras

        client = Cerebras(api_key=os.environ.get("CEREBRAS_API_KEY", "‹k›"))

        completion = client.chat.completions.create(
            model="llama3.1-8b",
            messages=[{"role": "user", "content": "Summarise the ticket in one sentence."}],
            max_completion_tokens=128,
        )
        print(completion.choices[0].message.content)
        """,
        k=key,
    )
    return text, (key,)


@_shape("jina-embeddings-node-fetch-bearer")
def _jina(rng: random.Random) -> Built:
    key = "jina_" + _hexs(rng, 32) + _pick(rng, _LETTERS_DIGITS, 28)
    text = _fill(
        """
        // scripts/embed-docs.mjs
        const res = await fetch('https://api.jina.ai/v1/embeddings', {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Authorization: 'Bearer ‹k›',
          },
          body: JSON.stringify({ model: 'jina-embeddings-v3', task: 'retrieval.passage', input: chunks }),
        });
        const { data, usage } = await res.json();
        console.log(`embedded ${data.length} chunks, ${usage.total_tokens} tokens`);
        """,
        k=key,
    )
    return text, (key,)


@_shape("serpapi-google-search-params-dict")
def _serpapi(rng: random.Random) -> Built:
    key = _hexs(rng, 64)
    text = _fill(
        """
        from serpapi import GoogleSearch

        params = {
            "engine": "google",
            "q": "site:docs.djangoproject.com async views",
            "hl": "en",
            "num": 10,
            "api_key": "‹k›",
        }
        results = GoogleSearch(params).get_dict()
        for r in results.get("organic_results", []):
            print(r["position"], r["link"])
        """,
        k=key,
    )
    return text, (key,)


@_shape("modal-token-set-id-and-secret")
def _modal(rng: random.Random) -> Built:
    secret = "as-" + _pick(rng, _LETTERS_DIGITS, 22)
    text = _fill(
        """
        $ modal token set --token-id ak-‹id› --token-secret ‹s› --profile=acme-ml
        Verifying token against https://api.modal.com
        Token verified successfully!
        Token written to /home/ml/.modal.toml in profile acme-ml.
        """,
        id=_pick(rng, _LETTERS_DIGITS, 22),
        s=secret,
    )
    return text, (secret,)


@_shape("streamlit-secrets-toml-connection-password")
def _streamlit(rng: random.Random) -> Built:
    password = _strong(rng, 20, marks="!#%*+-=?_")
    text = _fill(
        """
        # .streamlit/secrets.toml
        [connections.warehouse]
        dialect = "postgresql"
        host = "warehouse.analytics-example.internal"
        port = "5432"
        database = "analytics"
        username = "streamlit_ro"
        password = "‹pw›"
        """,
        pw=password,
    )
    return text, (password,)


@_shape("marimo-notebook-cell-fal-key-pair")
def _marimo(rng: random.Random) -> Built:
    secret = _hexs(rng, 32)
    text = _fill(
        """
        import marimo

        __generated_with = "0.10.6"
        app = marimo.App(width="medium")


        @app.cell
        def _():
            import os

            import fal_client

            os.environ["FAL_KEY"] = "‹id›:‹s›"
            return fal_client, os


        @app.cell
        def _(fal_client):
            result = fal_client.subscribe("fal-ai/flux/schnell", arguments={"prompt": "a lighthouse at dusk, linocut"})
            result["images"][0]["url"]
            return (result,)
        """,
        id=_guid(rng),
        s=secret,
    )
    return text, (secret,)


@_shape("zed-settings-context-servers-env")
def _zed(rng: random.Random) -> Built:
    key = "BSA" + _pick(rng, _LETTERS_DIGITS, 27)
    text = _fill(
        """
        // ~/.config/zed/settings.json
        {
          "theme": "One Dark",
          "buffer_font_size": 14,
          "context_servers": {
            "mcp-server-brave-search": {
              "command": {
                "path": "npx",
                "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                "env": { "BRAVE_API_KEY": "‹k›" }
              },
              "settings": {}
            }
          }
        }
        """,
        k=key,
    )
    return text, (key,)


@_shape("openhands-config-toml-llm-api-key")
def _openhands(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS, 32)
    text = _fill(
        """
        # config.toml for OpenHands
        [core]
        workspace_base = "./workspace"
        max_iterations = 60

        [llm]
        model = "openai/meta-llama/Llama-3.3-70B-Instruct"
        base_url = "https://api.deepinfra.com/v1/openai"
        api_key = "‹k›"
        temperature = 0.0
        """,
        k=key,
    )
    return text, (key,)


@_shape("swe-agent-trajectory-observation-env")
def _swe_agent(rng: random.Random) -> Built:
    token = "A" + _pick(rng, _LETTERS_DIGITS, 3) + "AAIjcDE" + _pick(rng, _LETTERS_DIGITS, 50)
    step = {
        "action": "cat .env",
        "observation": (
            "NODE_ENV=development\n"
            f"UPSTASH_REDIS_REST_URL=https://{rng.choice(_VOCAB)}-{rng.randint(10000, 99999)}.upstash.io\n"
            f"UPSTASH_REDIS_REST_TOKEN={token}\n"
            "RATE_LIMIT_PER_MINUTE=60\n"
        ),
        "response": "Let me check which environment variables the rate limiter reads.\n\n```\ncat .env\n```",
        "thought": "Let me check which environment variables the rate limiter reads.",
        "execution_time": round(rng.uniform(0.05, 0.4), 3),
        "state": {"open_file": "/repo/src/ratelimit.ts", "working_dir": "/repo"},
    }
    text = '{"trajectory": [\n  ' + json.dumps(step, indent=2).replace("\n", "\n  ") + "\n],\n...\n"
    return text, (token,)


@_shape("claude-code-settings-json-env-gateway-token")
def _claude_code(rng: random.Random) -> Built:
    token = "gw-" + _b64u(rng, 30)
    settings = {
        "env": {
            "ANTHROPIC_BASE_URL": "https://llm-gateway.corp.example",
            "ANTHROPIC_AUTH_TOKEN": token,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
        "permissions": {"allow": ["Bash(npm run test:*)", "Bash(git diff:*)"], "deny": ["Read(./.env)"]},
    }
    text = "$ cat ~/.claude/settings.json\n" + json.dumps(settings, indent=2) + "\n"
    return text, (token,)


@_shape("assemblyai-settings-api-key-assignment")
def _assemblyai(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        import assemblyai as aai

        aai.settings.api_key = "‹k›"

        config = aai.TranscriptionConfig(speaker_labels=True, language_code="de")
        transcript = aai.Transcriber(config=config).transcribe("recordings/vorstand-2026-03.m4a")
        for utterance in transcript.utterances:
            print(f"Speaker {utterance.speaker}: {utterance.text}")
        """,
        k=key,
    )
    return text, (key,)


@_shape("logfire-credentials-json-write-token")
def _logfire(rng: random.Random) -> Built:
    token = "pylf_v1_eu_" + _pick(rng, _LETTERS_DIGITS, 48)
    creds = {
        "token": token,
        "project_name": "invoice-parser",
        "project_url": "https://logfire-eu.pydantic.dev/acme-example/invoice-parser",
        "logfire_api_url": "https://logfire-api-eu.pydantic.dev",
    }
    text = "$ cat .logfire/logfire_credentials.json\n" + json.dumps(creds, indent=2) + "\n"
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Observability
# --------------------------------------------------------------------------------------------------------


@_shape("promtail-clients-basic-auth-grafana-cloud")
def _promtail(rng: random.Random) -> Built:
    inner = {
        "o": str(rng.randint(100000, 999999)),
        "n": "promtail-write-" + _pick(rng, _LOWER_DIGITS, 6),
        "k": _pick(rng, _LETTERS_DIGITS, 24),
        "m": {"r": "prod-eu-west-2"},
    }
    token = "glc_" + base64.b64encode(json.dumps(inner, separators=(",", ":")).encode()).decode()
    text = _fill(
        """
        # /etc/promtail/config.yml
        server:
          http_listen_port: 9080
        positions:
          filename: /var/lib/promtail/positions.yaml
        clients:
          - url: https://logs-prod-012.grafana.net/loki/api/v1/push
            basic_auth:
              username: ‹u›
              password: ‹t›
        scrape_configs:
          - job_name: journal
            journal:
              max_age: 12h
              labels: { job: systemd-journal }
        """,
        u=str(rng.randint(100000, 999999)),
        t=token,
    )
    return text, (token,)


@_shape("django-settings-elastic-apm-secret-token")
def _elastic_apm(rng: random.Random) -> Built:
    token = _pick(rng, _LETTERS_DIGITS, 24)
    text = _fill(
        """
        # config/settings/production.py
        INSTALLED_APPS += ["elasticapm.contrib.django"]

        ELASTIC_APM = {
            "SERVICE_NAME": "billing-api",
            "SECRET_TOKEN": "‹t›",
            "SERVER_URL": "https://‹d›.apm.europe-west3.gcp.cloud.es.io:443",
            "ENVIRONMENT": "production",
            "TRANSACTION_SAMPLE_RATE": 0.2,
        }
        """,
        t=token,
        d=_hexs(rng, 32),
    )
    return text, (token,)


@_shape("fluentd-logzio-endpoint-url-token")
def _fluentd(rng: random.Random) -> Built:
    token = _pick(rng, string.ascii_letters, 32)
    text = _fill(
        """
        # /etc/fluent/fluent.conf
        <source>
          @type tail
          path /var/log/app/*.json
          pos_file /var/log/td-agent/app.pos
          tag app.django
          <parse>
            @type json
          </parse>
        </source>

        <match app.**>
          @type logzio_buffered
          endpoint_url https://listener-eu.logz.io:8071?token=‹t›&type=django
          output_include_time true
          output_include_tags true
          http_idle_timeout 10
        </match>
        """,
        t=token,
    )
    return text, (token,)


@_shape("vector-toml-http-sink-bearer-token")
def _vector(rng: random.Random) -> Built:
    token = _pick(rng, _LETTERS_DIGITS, 24)
    text = _fill(
        """
        # /etc/vector/vector.toml
        [sources.app_logs]
        type = "file"
        include = ["/var/log/app/*.log"]

        [sinks.better_stack]
        type = "http"
        inputs = ["app_logs"]
        uri = "https://in.logs.betterstack.com/"
        encoding.codec = "json"
        compression = "gzip"
        auth.strategy = "bearer"
        auth.token = "‹t›"
        """,
        t=token,
    )
    return text, (token,)


@_shape("http-client-debuglevel-opsgenie-geniekey")
def _opsgenie(rng: random.Random) -> Built:
    key = _guid(rng)
    body = json.dumps({"message": "disk /var above 90% on db-02", "priority": "P2"})
    text = _fill(
        """
        >>> import http.client, json
        >>> conn = http.client.HTTPSConnection("api.eu.opsgenie.com")
        >>> conn.set_debuglevel(1)
        >>> conn.request("POST", "/v2/alerts", body=payload, headers=headers)
        send: b'POST /v2/alerts HTTP/1.1\\r\\nHost: api.eu.opsgenie.com\\r\\nAccept-Encoding: identity\\r\\nContent-Length: ‹n›\\r\\nContent-Type: application/json\\r\\nAuthorization: GenieKey ‹k›\\r\\n\\r\\n'
        send: b'‹b›'
        >>> r = conn.getresponse()
        reply: 'HTTP/1.1 202 Accepted\\r\\n'
        header: Content-Type: application/json
        header: X-Request-Id: ‹rid›
        """,
        n=str(len(body)),
        k=key,
        b=body,
        rid=_guid(rng),
    )
    return text, (key,)


@_shape("powershell-dynatrace-installer-api-token-header")
def _dynatrace(rng: random.Random) -> Built:
    token = "dt0c01." + _pick(rng, _UPPER_DIGITS, 24) + "." + _pick(rng, _UPPER_DIGITS, 64)
    text = _fill(
        """
        PS C:\\Temp> Invoke-WebRequest -Uri "https://‹env›.live.dynatrace.com/api/v1/deployment/installer/agent/windows/default/latest?arch=x86&flavor=default" -Headers @{ 'Authorization' = 'Api-Token ‹t›' } -OutFile Dynatrace-OneAgent-Windows.exe
        PS C:\\Temp> .\\Dynatrace-OneAgent-Windows.exe --set-host-group=retail-pos --quiet
        """,
        env=_pick(rng, string.ascii_lowercase, 3) + _digits(rng, 5),
        t=token,
    )
    return text, (token,)


# --------------------------------------------------------------------------------------------------------
# Self-hosted apps and home automation
# --------------------------------------------------------------------------------------------------------


@_shape("sonarr-config-xml-apikey-element")
def _sonarr(rng: random.Random) -> Built:
    key = _hexs(rng, 32)
    text = _fill(
        """
        $ docker exec sonarr cat /config/config.xml
        <Config>
          <BindAddress>*</BindAddress>
          <Port>8989</Port>
          <SslPort>9898</SslPort>
          <EnableSsl>False</EnableSsl>
          <LaunchBrowser>True</LaunchBrowser>
          <ApiKey>‹k›</ApiKey>
          <AuthenticationMethod>Forms</AuthenticationMethod>
          <AuthenticationRequired>Enabled</AuthenticationRequired>
          <Branch>main</Branch>
          <LogLevel>info</LogLevel>
          <UrlBase></UrlBase>
          <InstanceName>Sonarr</InstanceName>
        </Config>
        """,
        k=key,
    )
    return text, (key,)


@_shape("transmission-settings-json-rpc-password")
def _transmission(rng: random.Random) -> Built:
    password = _human_plain(rng)
    text = _fill(
        """
        $ sudo systemctl stop transmission-daemon
        $ sudo grep -n rpc- /etc/transmission-daemon/settings.json
        52:    "rpc-authentication-required": true,
        53:    "rpc-bind-address": "0.0.0.0",
        54:    "rpc-enabled": true,
        56:    "rpc-password": "‹pw›",
        57:    "rpc-port": 9091,
        60:    "rpc-username": "seedbox",
        61:    "rpc-whitelist": "127.0.0.1,192.168.1.*",
        $ sudo systemctl start transmission-daemon
        """,
        pw=password,
    )
    return text, (password,)


@_shape("vaultwarden-env-admin-token-plain")
def _vaultwarden(rng: random.Random) -> Built:
    token = _b64s(rng, 48)
    text = _fill(
        """
        # /opt/vaultwarden/.env
        DOMAIN=https://vault.familie-example.de
        SIGNUPS_ALLOWED=false
        INVITATIONS_ALLOWED=true
        ## openssl rand -base64 48  (TODO: replace with `vaultwarden hash` output)
        ADMIN_TOKEN=‹t›
        SMTP_HOST=mail.familie-example.de
        SMTP_FROM=vault@familie-example.de
        """,
        t=token,
    )
    return text, (token,)


@_shape("authelia-configuration-yml-jwt-and-session")
def _authelia(rng: random.Random) -> Built:
    jwt_secret, session = _b64u(rng, 48), _b64u(rng, 48)
    text = _fill(
        """
        # /config/configuration.yml (Authelia 4.38)
        theme: auto
        identity_validation:
          reset_password:
            jwt_secret: '‹j›'
        authentication_backend:
          file:
            path: /config/users_database.yml
        session:
          secret: '‹s›'
          cookies:
            - domain: 'home-example.net'
              authelia_url: 'https://auth.home-example.net'
        storage:
          # encryption_key comes from AUTHELIA_STORAGE_ENCRYPTION_KEY_FILE
          local:
            path: /config/db.sqlite3
        """,
        j=jwt_secret,
        s=session,
    )
    return text, (jwt_secret, session)


@_shape("authentik-dotenv-pg-pass-and-secret-key")
def _authentik(rng: random.Random) -> Built:
    pg_pass, secret = _b64u(rng, 27), _b64s(rng, 45)
    text = _fill(
        """
        $ echo "PG_PASS=$(openssl rand -base64 36 | tr -d '\\n')" >> .env
        $ echo "AUTHENTIK_SECRET_KEY=$(openssl rand -base64 60 | tr -d '\\n')" >> .env
        $ cat .env
        PG_PASS=‹pg›
        AUTHENTIK_SECRET_KEY=‹sk›
        AUTHENTIK_ERROR_REPORTING__ENABLED=true
        COMPOSE_PORT_HTTPS=9443
        """,
        pg=pg_pass,
        sk=secret,
    )
    return text, (pg_pass, secret)


@_shape("ghost-config-production-json-smtp-pass")
def _ghost(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 12)
    config = {
        "url": "https://blog.kletterhalle-example.de",
        "server": {"port": 2368, "host": "127.0.0.1"},
        "database": {"client": "mysql", "connection": {"socketPath": "/var/run/mysqld/mysqld.sock"}},
        "mail": {
            "transport": "SMTP",
            "options": {
                "host": "smtp.zoho.eu",
                "port": 465,
                "secure": True,
                "auth": {"user": "hallo@kletterhalle-example.de", "pass": password},
            },
        },
        "logging": {"transports": ["file", "stdout"]},
    }
    text = "$ cat /var/www/ghost/config.production.json\n" + json.dumps(config, indent=2) + "\n"
    return text, (password,)


@_shape("discourse-app-yml-smtp-password")
def _discourse(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 20)
    text = _fill(
        """
        ## /var/discourse/containers/app.yml (excerpt)
        env:
          LC_ALL: en_US.UTF-8
          DISCOURSE_HOSTNAME: forum.makerspace-example.org
          DISCOURSE_DEVELOPER_EMAILS: 'admin@makerspace-example.org'
          DISCOURSE_SMTP_ADDRESS: smtp.mailersend.net
          DISCOURSE_SMTP_PORT: 587
          DISCOURSE_SMTP_USER_NAME: MS_‹u›@makerspace-example.org
          DISCOURSE_SMTP_PASSWORD: "‹pw›"
          DISCOURSE_SMTP_ENABLE_START_TLS: true
        """,
        u=_pick(rng, _LETTERS_DIGITS, 6),
        pw=password,
    )
    return text, (password,)


@_shape("zigbee2mqtt-configuration-mqtt-password")
def _zigbee2mqtt(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        # /opt/zigbee2mqtt/data/configuration.yaml
        homeassistant:
          enabled: true
        frontend:
          enabled: true
          port: 8080
        mqtt:
          base_topic: zigbee2mqtt
          server: mqtt://192.168.1.20:1883
          user: z2m
          password: ‹pw›
        serial:
          port: /dev/serial/by-id/usb-Itead_Sonoff_Zigbee_3.0_USB_Dongle_Plus_V2_‹sn›-if00-port0
          adapter: ember
        advanced:
          network_key: GENERATE
          pan_id: GENERATE
          ext_pan_id: GENERATE
        """,
        pw=password,
        sn=_hexs(rng, 32),
    )
    return text, (password,)


@_shape("esphome-secrets-yaml-wifi-and-api-key")
def _esphome(rng: random.Random) -> Built:
    wifi, api_key = _human_plain(rng) + "!", _b64s(rng, 32)
    text = _fill(
        """
        # esphome/secrets.yaml
        wifi_ssid: "Garten-IoT"
        wifi_password: "‹w›"
        api_encryption_key: "‹k›"
        """,
        w=wifi,
        k=api_key,
    )
    return text, (wifi, api_key)


@_shape("tasmota-console-backlog-wifi-and-mqtt")
def _tasmota(rng: random.Random) -> Built:
    wifi, mqtt = _passphrase(rng, 2, "") + str(rng.randint(10, 99)), _brief(rng)
    text = _fill(
        """
        12:03:44.118 CMD: Backlog SSID1 Werkstatt; Password1 ‹w›; MqttHost 192.168.1.20; MqttUser tasmota; MqttPassword ‹m›
        12:03:44.130 RSL: RESULT = {"SSId1":"Werkstatt"}
        12:03:44.385 RSL: RESULT = {"Password1":"****"}
        12:03:44.640 RSL: RESULT = {"MqttHost":"192.168.1.20"}
        12:03:44.893 RSL: RESULT = {"MqttUser":"tasmota"}
        12:03:45.150 RSL: RESULT = {"MqttPassword":"****"}
        12:03:45.402 APP: Restarting
        """,
        w=wifi,
        m=mqtt,
    )
    return text, (wifi, mqtt)


@_shape("frigate-config-rtsp-userinfo-password")
def _frigate(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        # frigate/config.yml
        mqtt:
          enabled: false
        cameras:
          einfahrt:
            ffmpeg:
              inputs:
                - path: rtsp://frigate:‹pw›@192.168.1.64:554/Streaming/Channels/101
                  roles:
                    - detect
                    - record
            detect:
              width: 1280
              height: 720
        """,
        pw=password,
    )
    return text, (password,)


@_shape("node-red-settings-js-credential-secret")
def _node_red(rng: random.Random) -> Built:
    secret = _hexs(rng, 48)
    bcrypt = "$2b$08$" + _pick(rng, _LETTERS_DIGITS + "./", 53)
    text = _fill(
        """
        module.exports = {
            flowFile: 'flows.json',
            credentialSecret: "‹s›",
            flowFilePretty: true,
            adminAuth: {
                type: "credentials",
                users: [{
                    username: "admin",
                    password: "‹bc›",
                    permissions: "*"
                }]
            },
            uiPort: process.env.PORT || 1880,
        }
        """,
        s=secret,
        bc=bcrypt,
    )
    return "// ~/.node-red/settings.js\n" + text, (secret,)


@_shape("syncthing-config-xml-gui-apikey")
def _syncthing(rng: random.Random) -> Built:
    key = _pick(rng, _LETTERS_DIGITS, 32)
    device = "-".join(_pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 7) for _ in range(8))
    bcrypt = "$2a$10$" + _pick(rng, _LETTERS_DIGITS + "./", 53)
    text = _fill(
        """
        <configuration version="37">
            <device id="‹dev›" name="nas" compression="metadata" introducer="false">
                <address>dynamic</address>
            </device>
            <gui enabled="true" tls="false" debugging="false" sendBasicAuthPrompt="false">
                <address>0.0.0.0:8384</address>
                <user>admin</user>
                <password>‹bc›</password>
                <apikey>‹k›</apikey>
                <theme>default</theme>
            </gui>
        </configuration>
        """,
        dev=device,
        bc=bcrypt,
        k=key,
    )
    return text, (key,)


@_shape("octoprint-config-yaml-api-key")
def _octoprint(rng: random.Random) -> Built:
    key = _pick(rng, _UPPER_DIGITS, 32)
    text = _fill(
        """
        $ grep -A2 '^api:' ~/.octoprint/config.yaml
        api:
          key: ‹k›
        $ curl -s -o /dev/null -w '%{http_code}\\n' http://octopi.local/api/version
        403
        """,
        k=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# People: messages, e-mails, transcripts and notes
# --------------------------------------------------------------------------------------------------------


@_shape("greek-viber-message-kodikos")
def _greek(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        [‹d› 09:14] Νίκος Παπαδόπουλος: Καλημέρα! Άλλαξα το Wi-Fi του γραφείου χθες το βράδυ.
        [‹d› 09:14] Νίκος Παπαδόπουλος: Δίκτυο: Grafeio-5G
        [‹d› 09:15] Νίκος Παπαδόπουλος: Ο νέος κωδικός είναι ‹pw›
        [‹d› 09:21] Ελένη Γεωργίου: Ευχαριστώ, συνδέθηκα 👍
        """,
        d=_date(rng).replace("-", "/")[2:],
        pw=password,
    )
    return text, (password,)


@_shape("ukrainian-signal-export-parol")
def _ukrainian(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#%+=?_")
    text = _fill(
        """
        [‹d›, 18:02] Олена Коваленко: Привіт! Я створила тобі обліковий запис в адмінці магазину.
        [‹d›, 18:02] Олена Коваленко: Логін: andrii.shevchenko
        [‹d›, 18:03] Олена Коваленко: Пароль: ‹pw›
        [‹d›, 18:03] Олена Коваленко: Після першого входу зміни його, будь ласка.
        [‹d›, 18:40] Андрій: Дякую, зайшов 🙂
        """,
        d=_date(rng),
        pw=password,
    )
    return text, (password,)


@_shape("finnish-email-salasana-label")
def _finnish(rng: random.Random) -> Built:
    password = _human(rng, marks="!?#")
    text = _fill(
        """
        Lähettäjä: IT-tuki <tuki@kunta-example.fi>
        Vastaanottaja: Mikko Virtanen <mikko.virtanen@kunta-example.fi>
        Aihe: Uusi käyttäjätunnus – etätyöyhteys

        Hei Mikko,

        etätyöyhteytesi (VPN) on nyt valmis.

        Käyttäjätunnus: mvirtanen
        Salasana: ‹pw›

        Vaihda salasana ensimmäisen kirjautumisen jälkeen osoitteessa https://salasana.kunta-example.fi.

        Ystävällisin terveisin
        IT-tuki
        """,
        pw=password,
    )
    return text, (password,)


@_shape("romanian-email-parola-este")
def _romanian(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        De la: Andreea Popescu <andreea.popescu@firma-example.ro>
        Către: contabilitate@firma-example.ro
        Subiect: Acces portal ANAF - cont de test

        Bună ziua,

        Contul de test pentru portalul de facturare a fost creat. Utilizatorul este „contabil.test”, iar parola este ‹pw› (valabilă până la sfârșitul lunii).

        Mulțumesc,
        Andreea
        """,
        pw=password,
    )
    return text, (password,)


@_shape("hungarian-ticket-jelszo-field")
def _hungarian(rng: random.Random) -> Built:
    password = _human(rng, marks="!.")
    text = _fill(
        """
        Jegy #‹n› – Új munkatárs belépése (Kiss Réka)
        Állapot: Megoldva
        Prioritás: Normál

        Kedves Réka!

        Létrehoztuk a fiókodat a belső rendszerben.
        Felhasználónév: kiss.reka
        Jelszó: ‹pw›

        Első bejelentkezéskor a rendszer kérni fogja a jelszó megváltoztatását.
        Üdv,
        Informatika
        """,
        n=str(rng.randint(10000, 99999)),
        pw=password,
    )
    return text, (password,)


@_shape("danish-sms-adgangskode-midlertidig")
def _danish(rng: random.Random) -> Built:
    password = _pick(rng, _LETTERS_DIGITS, 10)
    text = _fill(
        """
        Fra: Kommunen IT
        ‹d› 07:58

        Hej Søren. Din midlertidige adgangskode til medarbejderportalen er: ‹pw›
        Den udløber om 24 timer. Svar ikke på denne SMS.
        """,
        d=_date(rng),
        pw=password,
    )
    return text, (password,)


@_shape("indonesian-google-chat-kata-sandi")
def _indonesian(rng: random.Random) -> Built:
    password = _human_plain(rng) + "#"
    text = _fill(
        """
        Rina Wulandari, ‹t›
        Mas, akun dashboard server staging sudah aku buat ya

        Rina Wulandari, ‹t›
        username: budi.santoso
        kata sandi: ‹pw›

        Budi Santoso, ‹t›
        oke makasih, langsung aku ganti nanti
        """,
        t=f"{rng.randint(1, 12)}:{rng.randint(10, 59)} PM",
        pw=password,
    )
    return text, (password,)


@_shape("arabic-email-kalimat-almurur")
def _arabic(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#%+=?@")
    text = _fill(
        """
        من: قسم تقنية المعلومات <it@company-example.ae>
        إلى: أحمد المنصوري
        الموضوع: بيانات الدخول إلى نظام الموارد البشرية

        مرحباً أحمد،

        تم إنشاء حسابك في نظام الموارد البشرية.
        اسم المستخدم: ahmed.almansoori
        كلمة المرور: ‹pw›

        يرجى تغيير كلمة المرور بعد أول تسجيل دخول.
        مع التحية،
        قسم تقنية المعلومات
        """,
        pw=password,
    )
    return text, (password,)


@_shape("hebrew-skype-message-hasisma-hi")
def _hebrew(rng: random.Random) -> Built:
    password = _human(rng, marks="!")
    text = _fill(
        """
        [‹t›] Yossi Levi: היי, פתחתי לך משתמש במערכת החשבוניות
        [‹t›] Yossi Levi: שם משתמש: noa.cohen
        [‹t›] Yossi Levi: הסיסמה היא ‹pw›
        [‹t›] Noa Cohen: תודה! נכנסתי
        """,
        t=f"{_date(rng)} {rng.randint(8, 18):02d}:{rng.randint(0, 59):02d}",
        pw=password,
    )
    return text, (password,)


@_shape("thai-line-chat-export-rahat-phan")
def _thai(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        [LINE] Chat history with ทีมบัญชี
        Saved on: ‹d› 16:20

        ‹d›
        14:02\tสมชาย\tส่งบัญชีระบบสต็อกให้นะครับ
        14:02\tสมชาย\tชื่อผู้ใช้: stock.admin
        14:03\tสมชาย\tรหัสผ่าน: ‹pw›
        14:10\tวิภา\tได้แล้วค่ะ ขอบคุณค่ะ
        """,
        d=_date(rng).replace("-", "/"),
        pw=password,
    )
    return text, (password,)


@_shape("croatian-email-lozinka-inline")
def _croatian(rng: random.Random) -> Built:
    password = _human_plain(rng)
    text = _fill(
        """
        Od: Ivana Horvat <ivana.horvat@ured-example.hr>
        Za: Marko Babić <marko.babic@ured-example.hr>
        Predmet: Pristup zajedničkom disku

        Bok Marko,

        napravila sam ti račun za zajednički disk. Korisničko ime ti je mbabic, a lozinka: ‹pw›
        Molim te promijeni je nakon prve prijave.

        Lp,
        Ivana
        """,
        pw=password,
    )
    return text, (password,)


@_shape("norwegian-intranet-note-passord")
def _norwegian(rng: random.Random) -> Built:
    password = _passphrase(rng, 3, "-")
    text = _fill(
        """
        Notat fra møtet ‹d› – Gjestenett i kantina

        * SSID: Kantina-Gjest
        * Passord: ‹pw›
        * Byttes hver måned (ansvar: Kari N.)
        """,
        d=_date(rng),
        pw=password,
    )
    return text, (password,)


@_shape("zoom-transcript-vtt-its-password")
def _vtt(rng: random.Random) -> Built:
    password = _human_plain(rng)
    text = _fill(
        """
        WEBVTT

        41
        00:03:12.040 --> 00:03:15.880
        Priya Raman: Okay, can you read me the password for the staging bastion?

        42
        00:03:16.120 --> 00:03:21.300
        Tom Becker: Yeah, it's ‹pw›, all one word.

        43
        00:03:21.900 --> 00:03:24.010
        Priya Raman: Got it, I'm in. Thanks.
        """,
        pw=password,
    )
    return text, (password,)


@_shape("sticky-note-tesseract-ocr-output")
def _sticky(rng: random.Random) -> Built:
    password = _human(rng, marks="!")
    text = _fill(
        """
        $ tesseract IMG_‹n›.jpg - --psm 6
        GUEST WIFI
        network: DentalCare-Guest
        pass: ‹pw›
        (not for patients!!)
        — Front desk
        """,
        n=str(rng.randint(1000, 9999)),
        pw=password,
    )
    return text, (password,)


@_shape("email-password-in-parentheses")
def _parentheses(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        From: Martin Ochs <martin@printshop-example.com>
        To: Sarah Lindqvist <sarah@printshop-example.com>
        Subject: print server account

        Hi Sarah,

        I set up your account on the print server (user sarah, password ‹pw›) so you can
        release the big plotter jobs yourself from now on. The queue is "A0-Plotter".

        Cheers,
        Martin
        """,
        pw=password,
    )
    return text, (password,)


@_shape("intercom-transcript-use-to-log-in")
def _intercom(rng: random.Random) -> Built:
    password = _strong(rng, 12, marks="!#%+=?")
    text = _fill(
        """
        Conversation with Dana (support) · ‹d›

        Customer (10:41): I'm locked out of the reseller portal again, the reset e-mail never arrives.
        Dana (10:44): Sorry about that! I've set a temporary password on your account.
        Dana (10:44): Use ‹pw› to log in, then change it under Settings → Security.
        Customer (10:46): That worked, thank you!
        """,
        d=_date(rng),
        pw=password,
    )
    return text, (password,)


@_shape("email-passphrase-in-curly-quotes")
def _curly(rng: random.Random) -> Built:
    phrase = _passphrase(rng, 4, " ")
    text = _fill(
        """
        From: Ruth Adeyemi <ruth@lab-example.ac.uk>
        To: Sam Okafor <sam@lab-example.ac.uk>
        Subject: Re: encrypted drive for the field trip

        Sam,

        The external drive is encrypted with VeraCrypt. The passphrase is “‹p›” (all lower case, single spaces).
        Please don't write it on the drive this time.

        Ruth
        """,
        p=phrase,
    )
    return text, (phrase,)


@_shape("manage-bde-protectors-get-recovery-password")
def _bitlocker(rng: random.Random) -> Built:
    recovery = "-".join(f"{rng.randint(0, 65535) * 11:06d}" for _ in range(8))
    text = _fill(
        """
        PS C:\\WINDOWS\\system32> manage-bde -protectors -get C:
        BitLocker Drive Encryption: Configuration Tool version 10.0.22631
        Copyright (C) 2013 Microsoft Corporation. All rights reserved.

        Volume C: [OS]
        All Key Protectors

            TPM:
              ID: {‹tpm›}
              PCR Validation Profile:
                7, 11
                (Uses Secure Boot for integrity validation)

            Numerical Password:
              ID: {‹id›}
              Password:
                ‹rk›
        """,
        tpm=_guid(rng).upper(),
        id=_guid(rng).upper(),
        rk=recovery,
    )
    return text, (recovery,)


@_shape("fdesetup-changerecovery-personal-key")
def _filevault(rng: random.Random) -> Built:
    key = "-".join(_pick(rng, "ABCDEFGHJKLMNPQRSTUVWXYZ23456789", 4) for _ in range(6))
    text = _fill(
        """
        admin@Studio-Mac ~ % sudo fdesetup changerecovery -personal
        Enter the user name:ladmin
        Enter the password for user 'ladmin':
        New personal recovery key = '‹k›'
        admin@Studio-Mac ~ % sudo fdesetup status
        FileVault is On.
        """,
        k=key,
    )
    return text, (key,)


@_shape("onepassword-emergency-kit-secret-key-ocr")
def _emergency_kit(rng: random.Random) -> Built:
    alphabet = "ABCDEFGHJKLMNPQRSTVWXYZ23456789"
    key = "A3-" + "-".join(_pick(rng, alphabet, n) for n in (6, 6, 5, 5, 5, 5))
    text = _fill(
        """
        $ pdftotext -layout "1Password Emergency Kit - jana.novak.pdf" - | sed -n '8,20p'
        Sign-in address
            https://my.1password.eu

        Email address
            jana.novak@agentur-example.at

        Secret Key
            ‹k›

        Master Password
            ______________________________________
        """,
        k=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# Markup layouts and source literals in languages the earlier parts do not write
# --------------------------------------------------------------------------------------------------------


@_shape("asciidoc-document-attributes-runbook")
def _asciidoc(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%+-=?_")
    text = _fill(
        """
        = Restore drill: ledger database
        :toc:
        :db-host: pg-ledger-replica.internal
        :db-user: restore_drill
        :db-password: ‹pw›
        :bucket: s3://backups-ledger-eu/wal-g

        == Steps

        . Connect with `psql -h {db-host} -U {db-user}` and enter `{db-password}` when asked.
        . Fetch the latest base backup from `{bucket}`.
        """,
        pw=password,
    )
    return text, (password,)


@_shape("org-mode-properties-drawer-password")
def _org_mode(rng: random.Random) -> Built:
    password = _human(rng)
    text = _fill(
        """
        * Accounts
        ** Router (parents' house)
           :PROPERTIES:
           :URL:      http://192.168.178.1
           :USERNAME: admin
           :PASSWORD: ‹pw›
           :LAST_CHANGED: [‹d›]
           :END:
           Fritz!Box 7590, firmware updates are automatic.
        ** NAS
           :PROPERTIES:
           :URL:      https://nas.local:5001
           :USERNAME: papa
           :PASSWORD_SOURCE: keepassxc
           :END:
        """,
        pw=password,
        d=_date(rng) + " Sat",
    )
    return text, (password,)


@_shape("latex-handout-newcommand-lab-password")
def _latex(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        \\documentclass[11pt]{article}
        \\usepackage[a4paper,margin=2cm]{geometry}
        \\newcommand{\\labuser}{student}
        \\newcommand{\\labpass}{‹pw›}
        \\begin{document}
        \\section*{Lab 3: Networking basics}
        Log in to the lab machines as \\texttt{\\labuser} with the password \\texttt{\\labpass}.
        Do not change the password; the machines are reset every night.
        \\end{document}
        """,
        pw=password,
    )
    return text, (password,)


@_shape("pandoc-markdown-definition-list")
def _definition_list(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%+=?@")
    text = _fill(
        """
        ## Staging mail catcher

        URL
        :   https://mail.staging.shop-example.io

        User
        :   qa

        Password
        :   ‹pw›

        Retention
        :   messages are purged after 72 hours
        """,
        pw=password,
    )
    return text, (password,)


@_shape("wildfly-standalone-xml-datasource-cdata")
def _wildfly(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="&<>!#%") + _pick(rng, "&<", 1) + str(rng.randint(1, 9))
    text = _fill(
        """
        <datasource jndi-name="java:jboss/datasources/ErpDS" pool-name="ErpDS" enabled="true" use-java-context="true">
            <connection-url>jdbc:oracle:thin:@//erp-db.corp.example:1521/ERPPDB</connection-url>
            <driver>oracle</driver>
            <pool>
                <min-pool-size>5</min-pool-size>
                <max-pool-size>40</max-pool-size>
            </pool>
            <security>
                <user-name>ERP_APP</user-name>
                <password><![CDATA[‹pw›]]></password>
            </security>
        </datasource>
        """,
        pw=password,
    )
    return text, (password,)


@_shape("himalaya-config-toml-inline-auth-table")
def _himalaya(rng: random.Random) -> Built:
    password = _b64u(rng, 16)
    text = _fill(
        """
        # ~/.config/himalaya/config.toml
        [accounts.proton]
        default = true
        email = "lena@proton-example.me"
        display-name = "Lena"
        backend.type = "imap"
        backend.host = "127.0.0.1"
        backend.port = 1143
        backend.encryption.type = "none"
        backend.login = "lena@proton-example.me"
        backend.auth = { type = "password", raw = "‹pw›" }
        message.send.backend.type = "smtp"
        message.send.backend.host = "127.0.0.1"
        message.send.backend.port = 1025
        """,
        pw=password,
    )
    return text, (password,)


@_shape("offlineimaprc-colon-separated-remotepass")
def _offlineimap(rng: random.Random) -> Built:
    password = _pick(rng, string.ascii_lowercase, 16)
    text = _fill(
        """
        [general]
        accounts : Work
        maxsyncaccounts : 1

        [Account Work]
        localrepository : WorkLocal
        remoterepository : WorkRemote

        [Repository WorkRemote]
        type : IMAP
        remotehost : outlook.office365.com
        remoteuser : j.meyer@firma-example.de
        remotepass : ‹pw›
        sslcacertfile : /etc/ssl/certs/ca-certificates.crt
        """,
        pw=password,
    )
    return text, (password,)


@_shape("chrome-passwords-csv-quoted-fields")
def _chrome_csv(rng: random.Random) -> Built:
    password = _strong(rng, 15, marks="!#%+-=?_,")
    text = _fill(
        """
        name,url,username,password,note
        "portal.stadtbibliothek-example.de","https://portal.stadtbibliothek-example.de/login","lesekarte-‹card›","‹pw›",""
        "github.com","https://github.com/session","lena-dev","",""
        """,
        card=_digits(rng, 8),
        pw=password,
    )
    return text, (password,)


@_shape("vscode-launch-json-escaped-quote-in-password")
def _launch_json(rng: random.Random) -> Built:
    raw = _brief(rng) + '"' + _pick(rng, _LETTERS_DIGITS, 4)
    written = raw.replace('"', '\\"')
    env = {
        "version": "0.2.0",
        "configurations": [
            {
                "name": "Django: runserver (staging db)",
                "type": "debugpy",
                "request": "launch",
                "program": "${workspaceFolder}/manage.py",
                "args": ["runserver", "8001"],
                "env": {"DATABASE_HOST": "staging-db.internal", "DATABASE_PASSWORD": raw},
                "django": True,
            }
        ],
    }
    text = "// .vscode/launch.json\n" + json.dumps(env, indent=2) + "\n"
    assert written in text
    return text, (written,)


@_shape("vbscript-adodb-connection-string")
def _vbscript(rng: random.Random) -> Built:
    password = _brief(rng)
    text = _fill(
        """
        ' export_orders.vbs -- run nightly by Task Scheduler on APP01
        Option Explicit
        Dim conn, rs
        Set conn = CreateObject("ADODB.Connection")
        conn.Open "Provider=SQLOLEDB;Data Source=SQL01\\ERP;Initial Catalog=Orders;User ID=export_job;Password=‹pw›;"
        Set rs = conn.Execute("SELECT OrderNo, Total FROM dbo.Orders WHERE OrderDate = CAST(GETDATE()-1 AS date)")
        Do Until rs.EOF
            WScript.Echo rs("OrderNo") & ";" & rs("Total")
            rs.MoveNext
        Loop
        conn.Close
        """,
        pw=password,
    )
    return text, (password,)


@_shape("hammerspoon-init-lua-pushbullet-token")
def _hammerspoon(rng: random.Random) -> Built:
    token = "o." + _pick(rng, _LETTERS_DIGITS, 32)
    text = _fill(
        """
        -- ~/.hammerspoon/init.lua
        local PUSHBULLET_TOKEN = "‹t›"

        local function push(title, body)
          hs.http.asyncPost(
            "https://api.pushbullet.com/v2/pushes",
            hs.json.encode({ type = "note", title = title, body = body }),
            { ["Access-Token"] = PUSHBULLET_TOKEN, ["Content-Type"] = "application/json" },
            function(status) if status ~= 200 then hs.alert.show("push failed: " .. status) end end
          )
        end

        hs.hotkey.bind({ "cmd", "alt" }, "P", function() push("Mac", "Build finished") end)
        """,
        t=token,
    )
    return text, (token,)


@_shape("grails-application-groovy-datasource")
def _grails(rng: random.Random) -> Built:
    password = _human_plain(rng) + _pick(rng, "!#", 1)
    text = _fill(
        """
        // grails-app/conf/application.groovy
        environments {
            production {
                dataSource {
                    dbCreate = 'none'
                    url = 'jdbc:mysql://db-lager.intern:3306/lager?useSSL=true'
                    driverClassName = 'com.mysql.cj.jdbc.Driver'
                    username = 'lager_app'
                    password = '‹pw›'
                    properties {
                        maxActive = 50
                        validationQuery = 'SELECT 1'
                    }
                }
            }
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("erlang-sys-config-epgsql-password")
def _erlang(rng: random.Random) -> Built:
    password = _b64u(rng, 15)
    text = _fill(
        """
        %% config/sys.config
        [
         {kernel, [{logger_level, info}]},
         {billing, [
           {pg, [{host, "pg-billing.internal"},
                 {port, 5432},
                 {database, "billing"},
                 {username, "billing_svc"},
                 {password, "‹pw›"},
                 {pool_size, 20}]}
         ]}
        ].
        """,
        pw=password,
    )
    return text, (password,)


@_shape("objc-nsurlcredential-literal-password")
def _objc(rng: random.Random) -> Built:
    password = _strong(rng, 14, marks="!#%+-=?_")
    text = _fill(
        """
        - (void)URLSession:(NSURLSession *)session
                      task:(NSURLSessionTask *)task
        didReceiveChallenge:(NSURLAuthenticationChallenge *)challenge
         completionHandler:(void (^)(NSURLSessionAuthChallengeDisposition, NSURLCredential *))completionHandler {
            if ([challenge.protectionSpace.authenticationMethod isEqualToString:NSURLAuthenticationMethodHTTPBasic]) {
                NSURLCredential *credential = [NSURLCredential credentialWithUser:@"kiosk-sync"
                                                                         password:@"‹pw›"
                                                                      persistence:NSURLCredentialPersistenceForSession];
                completionHandler(NSURLSessionAuthChallengeUseCredential, credential);
                return;
            }
            completionHandler(NSURLSessionAuthChallengePerformDefaultHandling, nil);
        }
        """,
        pw=password,
    )
    return text, (password,)


@_shape("fsharp-script-connection-string-literal")
def _fsharp(rng: random.Random) -> Built:
    password = _strong(rng, 16, marks="!#%+-?_")
    text = _fill(
        """
        // scripts/monthly-report.fsx
        #r "nuget: Npgsql, 8.0.5"
        open Npgsql

        let connString = "Host=pg-reports.internal;Port=5432;Database=reports;Username=fsi_reader;Password=‹pw›;SSL Mode=Require"

        use conn = new NpgsqlConnection(connString)
        conn.Open()
        use cmd = new NpgsqlCommand("select count(*) from invoices where issued_at >= date_trunc('month', now())", conn)
        printfn "invoices this month: %d" (cmd.ExecuteScalar() :?> int64)
        """,
        pw=password,
    )
    return text, (password,)


# --------------------------------------------------------------------------------------------------------
# HTTP and wire traces
# --------------------------------------------------------------------------------------------------------


@_shape("mitmproxy-websocket-handshake-protocol-jwt")
def _websocket(rng: random.Random) -> Built:
    now = _epoch(rng)
    token = _jwt(
        rng,
        {"alg": "HS256", "typ": "JWT"},
        {"sub": str(rng.randint(10000, 99999)), "room": "support", "iat": now, "exp": now + 900},
    )
    text = _fill(
        """
        GET wss://live.helpdesk-example.com/socket HTTP/1.1
            Host:                  live.helpdesk-example.com
            Upgrade:               websocket
            Connection:            Upgrade
            Sec-WebSocket-Version: 13
            Sec-WebSocket-Key:     ‹wk›
            Sec-WebSocket-Protocol: access_token, ‹t›
            Origin:                https://helpdesk-example.com

        << 101 Switching Protocols 0b
            Upgrade:                websocket
            Connection:             Upgrade
            Sec-WebSocket-Accept:   ‹acc›
            Sec-WebSocket-Protocol: access_token
        """,
        wk=_b64s(rng, 16),
        t=token,
        acc=_b64s(rng, 20),
    )
    return text, (token,)


@_shape("ngrep-http-authorization-token-token-equals")
def _ngrep(rng: random.Random) -> Built:
    token = _hexs(rng, 32)
    text = _fill(
        """
        # ngrep -q -W byline -d eth0 'Authorization' tcp port 3000
        interface: eth0 (10.0.3.0/255.255.255.0)
        filter: ( tcp port 3000 ) and ((ip || ip6) || (vlan && (ip || ip6)))
        match: Authorization

        T 10.0.3.17:51844 -> 10.0.3.5:3000 [AP] #14
        GET /api/v2/tickets?status=open HTTP/1.1.
        Host: helpdesk.internal:3000.
        Authorization: Token token="‹t›", email="sync@helpdesk.internal".
        Accept: application/json.
        User-Agent: Faraday v2.12.2.
        .
        """,
        t=token,
    )
    return text, (token,)


@_shape("requests-httperror-url-apikey-query")
def _omdb(rng: random.Random) -> Built:
    key = _hexs(rng, 8)
    text = _fill(
        """
        Traceback (most recent call last):
          File "/app/movies/tasks.py", line 41, in enrich_movie
            resp.raise_for_status()
          File "/usr/local/lib/python3.12/site-packages/requests/models.py", line 1024, in raise_for_status
            raise HTTPError(http_error_msg, response=self)
        requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://www.omdbapi.com/?i=tt‹imdb›&plot=short&apikey=‹k›
        """,
        imdb=_digits(rng, 7),
        k=key,
    )
    return text, (key,)


# --------------------------------------------------------------------------------------------------------
# Clean documents: no credential, plenty of look-alikes
# --------------------------------------------------------------------------------------------------------


@_clean_shape("clean-junos-set-commands-encrypted-and-9-hashes")
def _clean_junos(rng: random.Random) -> str:
    salt = _pick(rng, _LETTERS_DIGITS + "./", 16)
    return _fill(
        """
        admin@srx300-hq> show configuration system login | display set
        set system login class noc permissions view
        set system login user noc-ro uid 2001
        set system login user noc-ro class read-only
        set system login user noc-ro authentication encrypted-password "$6$‹salt›$‹h›"
        set system login user noc-ro authentication ssh-ed25519 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI‹pub› noc@jump01"
        admin@srx300-hq> show configuration security ike policy ike-pol-branch | display set
        set security ike policy ike-pol-branch mode main
        set security ike policy ike-pol-branch proposals ike-prop-aes256
        set security ike policy ike-pol-branch pre-shared-key ascii-text "$9$‹nine›"
        """,
        salt=salt,
        h=_pick(rng, _LETTERS_DIGITS + "./", 86),
        pub=_pick(rng, _LETTERS_DIGITS + "+/", 43),
        nine=_pick(rng, _LETTERS_DIGITS + ".-", 38),
    )


@_clean_shape("clean-mysql-config-editor-print-masked")
def _clean_mysql_editor(rng: random.Random) -> str:
    return _fill(
        """
        $ mysql_config_editor set --login-path=reporting --host=reporting.db.internal --user=reporting_ro --password
        Enter password:
        $ mysql_config_editor print --all
        [client]
        user = "root"
        password = *****
        host = "localhost"
        [reporting]
        user = "reporting_ro"
        password = *****
        host = "reporting.db.internal"
        $ ls -l ~/.mylogin.cnf
        -rw------- 1 lena lena ‹n› Mar  4 09:12 /home/lena/.mylogin.cnf
        """,
        n=str(rng.randint(200, 400)),
    )


@_clean_shape("clean-chef-encrypted-data-bag-item-json")
def _clean_chef_bag(rng: random.Random) -> str:
    item = {
        "id": "smtp_relay",
        "password": {
            "encrypted_data": _b64s(rng, 48),
            "iv": _b64s(rng, 12),
            "auth_tag": _b64s(rng, 16),
            "version": 3,
            "cipher": "aes-256-gcm",
        },
    }
    return (
        "$ knife data bag show credentials smtp_relay -F json   # no --secret-file: shown encrypted\n"
        "WARNING: Encrypted data bag detected, but no secret provided for decoding. Displaying encrypted data.\n"
        + json.dumps(item, indent=2)
        + "\n"
    )


@_clean_shape("clean-salt-gpg-renderer-pillar-message")
def _clean_salt_gpg(rng: random.Random) -> str:
    body = _b64s(rng, 190)
    lines = "\n".join("    " + body[i : i + 64] for i in range(0, len(body), 64))
    return _fill(
        """
        #!yaml|gpg
        # /srv/pillar/postgres/secrets.sls -- decrypted on the master with its own key
        postgres:
          replication_password: |
            -----BEGIN PGP MESSAGE-----

        ‹body›
            =‹crc›
            -----END PGP MESSAGE-----
        """,
        body=lines,
        crc=_b64s(rng, 3),
    )


@_clean_shape("clean-hiera-eyaml-enc-pkcs7-blocks")
def _clean_eyaml(rng: random.Random) -> str:
    block = "".join(_b64s(rng, 48) for _ in range(5))
    return _fill(
        """
        ---
        profile::mssql::instance_name: ERPPROD
        profile::mssql::sa_password: >
            ENC[PKCS7,‹a›
            ‹b›
            ‹c›]
        profile::mssql::collation: Latin1_General_CI_AS
        """,
        a=block[:64],
        b=block[64:128],
        c=block[128:180],
    )


@_clean_shape("clean-reg-export-winlogon-autologon-off")
def _clean_reg(rng: random.Random) -> str:
    return _fill(
        """
        Windows Registry Editor Version 5.00

        [HKEY_LOCAL_MACHINE\\SOFTWARE\\Microsoft\\Windows NT\\CurrentVersion\\Winlogon]
        "AutoAdminLogon"="0"
        "DefaultUserName"="kiosk"
        "DefaultDomainName"="LOBBY-KIOSK-‹n›"
        "LastUsedUsername"="kiosk"
        "PasswordExpiryWarning"=dword:00000005
        "Shell"="explorer.exe"
        "AutoLogonSID"="S-1-5-21-‹a›-‹b›-‹c›-1001"
        """,
        n=f"{rng.randint(1, 20):02d}",
        a=str(rng.randint(10**9, 4 * 10**9)),
        b=str(rng.randint(10**9, 4 * 10**9)),
        c=str(rng.randint(10**9, 4 * 10**9)),
    )


@_clean_shape("clean-nmcli-show-psk-flags-hidden")
def _clean_nmcli(rng: random.Random) -> str:
    return _fill(
        """
        $ nmcli -f connection.id,connection.uuid,802-11-wireless.ssid,802-11-wireless-security connection show Cafe-Lumen
        connection.id:                          Cafe-Lumen
        connection.uuid:                        ‹u›
        802-11-wireless.ssid:                   Cafe-Lumen
        802-11-wireless-security.key-mgmt:      wpa-psk
        802-11-wireless-security.auth-alg:      open
        802-11-wireless-security.psk:           <hidden>
        802-11-wireless-security.psk-flags:     1 (agent-owned)
        802-11-wireless-security.pmf:           0 (default)
        """,
        u=_guid(rng),
    )


@_clean_shape("clean-mikrotik-export-default-hides-sensitive")
def _clean_mikrotik(rng: random.Random) -> str:
    return _fill(
        """
        [admin@MikroTik-Buero] > /export
        # ‹d› 10:02:55 by RouterOS 7.16.2
        # software id = ‹sid›
        #
        # model = RB5009UG+S+
        /interface wireless security-profiles
        set [ find default=yes ] supplicant-identity=MikroTik
        add authentication-types=wpa2-psk mode=dynamic-keys name=buero supplicant-identity=""
        /ppp secret
        add local-address=10.99.0.1 name=vpn-hkrause profile=default-encryption remote-address=10.99.0.12 service=l2tp
        /system identity
        set name=MikroTik-Buero
        """,
        d=_date(rng),
        sid=_pick(rng, _UPPER_DIGITS, 4) + "-" + _pick(rng, _UPPER_DIGITS, 4),
    )


@_clean_shape("clean-pfsense-user-bcrypt-hash")
def _clean_pfsense(rng: random.Random) -> str:
    return _fill(
        """
        \t\t<user>
        \t\t\t<name>admin</name>
        \t\t\t<descr><![CDATA[System Administrator]]></descr>
        \t\t\t<scope>system</scope>
        \t\t\t<groupname>admins</groupname>
        \t\t\t<bcrypt-hash>$2y$10$‹h›</bcrypt-hash>
        \t\t\t<uid>0</uid>
        \t\t\t<priv>user-shell-access</priv>
        \t\t\t<expires></expires>
        \t\t\t<authorizedkeys></authorizedkeys>
        \t\t\t<ipsecpsk></ipsecpsk>
        \t\t</user>
        """,
        h=_pick(rng, _LETTERS_DIGITS + "./", 53),
    )


@_clean_shape("clean-password-reset-email-link-only")
def _clean_reset_mail(rng: random.Random) -> str:
    return _fill(
        """
        From: Ledgerly <no-reply@ledgerly-example.com>
        To: sarah@printshop-example.com
        Subject: Reset your Ledgerly password
        Message-ID: <‹mid›@mail.ledgerly-example.com>

        Hi Sarah,

        Someone (hopefully you) asked to reset the password for your Ledgerly account.
        Go to https://app.ledgerly-example.com/account/password and choose "Forgot password"
        from a signed-in device, or contact your workspace owner.

        If you did not ask for this, you can ignore this e-mail; your password has not changed.

        — The Ledgerly team
        """,
        mid=_hexs(rng, 24),
    )


@_clean_shape("clean-finnish-password-policy-salasana")
def _clean_finnish_policy(rng: random.Random) -> str:
    return _fill(
        """
        Salasanakäytäntö (voimassa ‹d› alkaen)

        - Salasanan vähimmäispituus on 14 merkkiä.
        - Älä käytä samaa salasanaa muissa palveluissa.
        - Salasanaa ei koskaan kysytä sähköpostitse tai puhelimitse.
        - Salasana vaihdetaan osoitteessa https://salasana.kunta-example.fi.
        - Esimerkki hyvästä rakenteesta: neljä satunnaista sanaa ja väliviivat (älä käytä tätä esimerkkiä).
        """,
        d=_date(rng),
    )


@_clean_shape("clean-kamal-deploy-yml-secret-names-only")
def _clean_kamal(rng: random.Random) -> str:
    return _fill(
        """
        # config/deploy.yml
        service: ledger
        image: acme-example/ledger
        servers:
          web:
            - 10.0.4.21
            - 10.0.4.22
        registry:
          server: registry.corp.example
          username: deploy
          password:
            - KAMAL_REGISTRY_PASSWORD
        env:
          clear:
            DB_HOST: 10.0.4.30
            WEB_CONCURRENCY: ‹wc›
          secret:
            - RAILS_MASTER_KEY
            - DB_PASSWORD
        builder:
          arch: amd64
          args:
            BUNDLE_TOKEN: <%= ENV["BUNDLE_TOKEN"] %>
        """,
        wc=str(rng.randint(2, 8)),
    )


@_clean_shape("clean-sealed-secret-encrypted-data")
def _clean_sealed(rng: random.Random) -> str:
    return _fill(
        """
        apiVersion: bitnami.com/v1alpha1
        kind: SealedSecret
        metadata:
          name: ledger-db
          namespace: ledger
        spec:
          encryptedData:
            DB_PASSWORD: ‹a›
            SMTP_PASSWORD: ‹b›
          template:
            metadata:
              name: ledger-db
              namespace: ledger
        """,
        a="AgB" + _b64s(rng, 180),
        b="AgC" + _b64s(rng, 180),
    )


@_clean_shape("clean-getent-shadow-yescrypt-lines")
def _clean_shadow(rng: random.Random) -> str:
    def yes() -> str:
        return (
            "$y$j9T$" + _pick(rng, _LETTERS_DIGITS + "./", 22) + "$" + _pick(rng, _LETTERS_DIGITS + "./", 43)
        )

    return _fill(
        """
        $ sudo getent shadow root deploy backup
        root:‹a›:20120:0:99999:7:::
        deploy:‹b›:20151:0:99999:7:::
        backup:*:19800:0:99999:7:::
        """,
        a=yes(),
        b=yes(),
    )


@_clean_shape("clean-llm-cost-report-csv-token-columns")
def _clean_llm_csv(rng: random.Random) -> str:
    rows = []
    for day in range(1, 6):
        inp, out = rng.randint(100_000, 900_000), rng.randint(10_000, 90_000)
        rows.append(
            f"2026-03-{day:02d},claude-sonnet-4,{inp},{out},{rng.randint(0, 400_000)},{rng.randint(0, 20_000)},"
            f"{(inp * 3 + out * 15) / 1_000_000:.2f}"
        )
    return (
        "date,model,input_tokens,output_tokens,cache_read_input_tokens,cache_creation_input_tokens,cost_usd\n"
        + "\n".join(rows)
        + "\n# max_tokens per request: 8192; tokens_used counts input + output\n"
    )


@_clean_shape("clean-prose-keyboard-passed-secretary")
def _clean_prose(rng: random.Random) -> str:
    return _fill(
        """
        Minutes, club committee, ‹d›

        The secretary passed around the new keyboard rota for the Sunday service. Tokens for the
        coffee machine are now sold at the desk (2 € each). The passport photos for the youth trip
        must be handed in by Friday. Key holders: the treasurer and the caretaker; the spare key
        stays in the office safe. The motion passed 9 to 2.
        """,
        d=_date(rng),
    )


@_clean_shape("clean-eml-inline-base64-png-logo")
def _clean_eml(rng: random.Random) -> str:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(150)).decode()
    body = "\n".join(png[i : i + 76] for i in range(0, len(png), 76))
    return _fill(
        """
        MIME-Version: 1.0
        Content-Type: multipart/related; boundary="b1_‹bd›"

        --b1_‹bd›
        Content-Type: text/html; charset=utf-8

        <p><img src="cid:logo@newsletter"> Our spring newsletter is here.</p>
        --b1_‹bd›
        Content-Type: image/png; name="logo.png"
        Content-Transfer-Encoding: base64
        Content-ID: <logo@newsletter>

        ‹body›
        --b1_‹bd›--
        """,
        bd=_hexs(rng, 32),
        body=body,
    )


@_clean_shape("clean-crane-digest-and-config-digest")
def _clean_crane(rng: random.Random) -> str:
    return _fill(
        """
        $ crane digest ghcr.io/acme-example/worker:2026.3.1
        sha256:‹a›
        $ crane manifest ghcr.io/acme-example/worker:2026.3.1 | jq -r '.config.digest, .layers[].digest'
        sha256:‹b›
        sha256:‹c›
        sha256:‹d›
        """,
        a=_hexs(rng, 64),
        b=_hexs(rng, 64),
        c=_hexs(rng, 64),
        d=_hexs(rng, 64),
    )


@_clean_shape("clean-swiftpm-package-resolved-revisions")
def _clean_package_resolved(rng: random.Random) -> str:
    pins = [
        {
            "identity": name,
            "kind": "remoteSourceControl",
            "location": f"https://github.com/{owner}/{name}",
            "state": {"revision": _hexs(rng, 40), "version": version},
        }
        for owner, name, version in (
            ("apple", "swift-collections", "1.1.4"),
            ("pointfreeco", "swift-snapshot-testing", "1.17.6"),
            ("kean", "nuke", "12.8.0"),
        )
    ]
    resolved = {"originHash": _hexs(rng, 64), "pins": pins, "version": 3}
    return (
        "$ cat App.xcworkspace/xcshareddata/swiftpm/Package.resolved\n"
        + json.dumps(resolved, indent=2)
        + "\n"
    )


@_clean_shape("clean-proxmox-qm-list-and-vm-uuids")
def _clean_proxmox(rng: random.Random) -> str:
    rows = "\n".join(
        f"      {100 + i} {name:<16} {state:<10} {mem:>6}  {disk:>10}.00 {rng.randint(1000, 99999):>7}"
        for i, (name, state, mem, disk) in enumerate(
            (
                ("dns-01", "running", 1024, 8),
                ("gitea", "running", 4096, 64),
                ("win-build", "stopped", 8192, 120),
            )
        )
    )
    return (
        "root@pve1:~# qm list\n"
        "      VMID NAME             STATUS     MEM(MB)    BOOTDISK(GB) PID\n"
        + rows
        + "\nroot@pve1:~# grep -h smbios1 /etc/pve/qemu-server/10*.conf\n"
        + "\n".join(f"smbios1: uuid={_guid(rng)}" for _ in range(3))
        + "\n"
    )


@_clean_shape("clean-oauth-authorize-url-pkce-challenge")
def _clean_pkce(rng: random.Random) -> str:
    return _fill(
        """
        [auth] redirecting to https://login.id-example.com/oauth2/authorize?response_type=code&client_id=‹cid›&redirect_uri=https%3A%2F%2Fapp.ledgerly-example.com%2Fcallback&scope=openid%20profile%20email&state=‹state›&code_challenge=‹ch›&code_challenge_method=S256&nonce=‹nonce›
        [auth] waiting for callback on /callback (timeout 300s)
        """,
        cid=_guid(rng),
        state=_b64u(rng, 16),
        ch=_b64u(rng, 32),
        nonce=_b64u(rng, 16),
    )


@_clean_shape("clean-webauthn-registration-public-key-json")
def _clean_webauthn(rng: random.Random) -> str:
    cred = {
        "id": _b64u(rng, 32),
        "type": "public-key",
        "response": {
            "clientDataJSON": _b64u(rng, 120),
            "attestationObject": _b64u(rng, 180),
            "transports": ["internal", "hybrid"],
            "publicKeyAlgorithm": -7,
        },
        "authenticatorAttachment": "platform",
        "clientExtensionResults": {"credProps": {"rk": True}},
    }
    return (
        "// navigator.credentials.create() result, POSTed to /webauthn/register/finish\n"
        + json.dumps(cred, indent=2)
        + "\n"
    )


@_clean_shape("clean-minisign-public-key-and-signature")
def _clean_minisign(rng: random.Random) -> str:
    return _fill(
        """
        $ cat minisign.pub
        untrusted comment: minisign public key ‹kid›
        ‹pub›
        $ cat ledger-cli-2.4.0-linux-amd64.tar.gz.minisig
        untrusted comment: signature from minisign secret key
        ‹sig›
        trusted comment: timestamp:‹ts›\tfile:ledger-cli-2.4.0-linux-amd64.tar.gz\thashed
        ‹gsig›
        $ minisign -Vm ledger-cli-2.4.0-linux-amd64.tar.gz -p minisign.pub
        Signature and comment signature verified
        """,
        kid=_hexs(rng, 16).upper(),
        pub="RW" + _b64s(rng, 40)[2:],
        sig="RU" + _b64s(rng, 72)[2:],
        ts=str(_epoch(rng)),
        gsig=_b64s(rng, 64),
    )


@_clean_shape("clean-paddle-js-client-side-token")
def _clean_paddle_js(rng: random.Random) -> str:
    return _fill(
        """
        <!-- pricing.html: Paddle.js takes a client-side token, which is meant for the browser -->
        <script src="https://cdn.paddle.com/paddle/v2/paddle.js"></script>
        <script>
          Paddle.Initialize({ token: "live_‹t›" });
          document.querySelector("#buy").addEventListener("click", () =>
            Paddle.Checkout.open({ items: [{ priceId: "pri_01‹price›", quantity: 1 }] })
          );
        </script>
        """,
        t=_hexs(rng, 27),
        price=_pick(rng, _ULID_ALPHABET, 24),
    )


@_clean_shape("clean-posthog-project-api-key-snippet")
def _clean_posthog(rng: random.Random) -> str:
    return _fill(
        """
        // src/analytics.ts -- the project API key is write-only and public by design
        import posthog from "posthog-js";

        posthog.init("phc_‹k›", {
          api_host: "https://eu.i.posthog.com",
          person_profiles: "identified_only",
        });
        posthog.register({ release: "web@‹sha›" });
        """,
        k=_pick(rng, _LETTERS_DIGITS, 43),
        sha=_hexs(rng, 40),
    )


@_clean_shape("clean-klist-kerberos-ticket-cache")
def _clean_klist(rng: random.Random) -> str:
    return _fill(
        """
        $ klist -e
        Ticket cache: KCM:1001:‹n›
        Default principal: lena@CORP.EXAMPLE.COM

        Valid starting       Expires              Service principal
        03/04/2026 08:02:11  03/04/2026 18:02:11  krbtgt/CORP.EXAMPLE.COM@CORP.EXAMPLE.COM
        \trenew until 03/11/2026 08:02:07, Etype (skey, tkt): aes256-cts-hmac-sha1-96, aes256-cts-hmac-sha1-96
        03/04/2026 08:02:40  03/04/2026 18:02:11  HTTP/intranet.corp.example@CORP.EXAMPLE.COM
        \tEtype (skey, tkt): aes256-cts-hmac-sha1-96, aes256-cts-hmac-sha1-96
        """,
        n=str(rng.randint(10000, 99999)),
    )


@_clean_shape("clean-gopass-ls-tree-names-only")
def _clean_gopass(rng: random.Random) -> str:
    return _fill(
        """
        $ gopass ls infra
        infra/
        ├── backup/
        │   └── svc_backup
        ├── db/
        │   ├── ledger-prod
        │   └── ledger-staging
        └── wifi/
            └── kantina-gjest
        $ gopass ls --flat infra/db
        infra/db/ledger-prod
        infra/db/ledger-staging
        $ gopass audit | tail -n 1
        Audited ‹n› secrets: no weak or duplicate passwords found.
        """,
        n=str(rng.randint(20, 300)),
    )


@_clean_shape("clean-wpa-cli-status-no-psk")
def _clean_wpa_cli(rng: random.Random) -> str:
    mac = ":".join(_hexs(rng, 2) for _ in range(6))
    return _fill(
        """
        $ wpa_cli -i wlan0 status
        bssid=‹mac›
        freq=5180
        ssid=Kantina-Gjest
        id=0
        mode=station
        pairwise_cipher=CCMP
        group_cipher=CCMP
        key_mgmt=WPA2-PSK
        wpa_state=COMPLETED
        ip_address=10.44.‹a›.‹b›
        address=‹mac2›
        uuid=‹u›
        """,
        mac=mac,
        a=str(rng.randint(0, 255)),
        b=str(rng.randint(2, 254)),
        mac2=":".join(_hexs(rng, 2) for _ in range(6)),
        u=_guid(rng),
    )


@_clean_shape("clean-hg-log-changeset-nodes")
def _clean_hg(rng: random.Random) -> str:
    entries = []
    for rev, summary in (
        (412, "billing: round VAT per line"),
        (411, "ci: pin python 3.12"),
        (410, "docs: key rotation"),
    ):
        entries.append(
            f"changeset:   {rev}:{_hexs(rng, 12)}\n"
            f"user:        Lena Meyer <lena@acme-example.de>\n"
            f"date:        Tue Mar 03 1{rev % 10}:0{rev % 7}:44 2026 +0100\n"
            f"summary:     {summary}\n"
        )
    return "$ hg log -l 3 | grep -E '^(changeset|user|date|summary)'\n" + "\n".join(entries)


@_clean_shape("clean-howto-set-password-prompts-only")
def _clean_howto(rng: random.Random) -> str:
    return _fill(
        """
        ## Changing the service account password

        1. Run `sudo passwd svc_backup` on the backup host. You will be asked twice:

               New password:
               Retype new password:
               passwd: password updated successfully

        2. Store the new password in the team vault under `infra/backup/svc_backup` (never in this wiki).
        3. Run `ansible-playbook rotate.yml --ask-vault-pass` so the clients pick it up.

        Passwords must be at least 16 characters; the vault's generator does this for you.
        Last reviewed: ‹d›
        """,
        d=_date(rng),
    )


@_clean_shape("clean-greek-security-notice-kodikos")
def _clean_greek(rng: random.Random) -> str:
    return _fill(
        """
        Ανακοίνωση ασφαλείας – ‹d›

        Το τμήμα πληροφορικής δεν θα σας ζητήσει ποτέ τον κωδικό πρόσβασής σας μέσω email ή τηλεφώνου.
        Αν λάβετε τέτοιο μήνυμα, προωθήστε το στο security@grafeio-example.gr και διαγράψτε το.
        Για αλλαγή κωδικού: https://id.grafeio-example.gr/password
        """,
        d=_date(rng),
    )


@_clean_shape("clean-django-technical-500-settings-masked")
def _clean_masked(rng: random.Random) -> str:
    return _fill(
        """
        Settings
        Using settings module config.settings.staging

        Setting                     Value
        ALLOWED_HOSTS               ['staging.ledgerly-example.com']
        AUTH_PASSWORD_VALIDATORS    '********************'
        DATABASES                   {'default': {'ENGINE': 'django.db.backends.postgresql',
                                                 'HOST': 'staging-db.internal',
                                                 'NAME': 'ledger',
                                                 'PASSWORD': '********************',
                                                 'PORT': '5432',
                                                 'USER': 'ledger'}}
        EMAIL_HOST_PASSWORD         '********************'
        SECRET_KEY                  '********************'
        SECRET_KEY_FALLBACKS        '********************'
        SESSION_COOKIE_AGE          1209600
        STRIPE_API_KEY              '********************'
        WEB_CONCURRENCY             ‹wc›
        [‹ts›] WARNING django.request: Internal Server Error: /billing/export/ (payload=<redacted>)
        """,
        wc=str(rng.randint(2, 8)),
        ts=_stamp(rng),
    )


@_clean_shape("clean-placeholder-config-example")
def _clean_placeholder(rng: random.Random) -> str:
    return _fill(
        """
        # config.example.toml -- copy to config.toml and fill in
        [llm]
        provider = "cerebras"
        api_key = "your-api-key-here"

        [database]
        url = "postgresql://USER:PASSWORD@HOST:5432/DBNAME"

        [notifications]
        ntfy_token = "<paste token>"
        pushover_token = "${PUSHOVER_TOKEN}"
        # schema version ‹v›
        """,
        v=str(rng.randint(2, 9)),
    )


@_clean_shape("clean-syncthing-device-ids-and-folder-ids")
def _clean_syncthing(rng: random.Random) -> str:
    def device() -> str:
        return "-".join(_pick(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 7) for _ in range(8))

    return _fill(
        """
        $ syncthing cli show system | jq -r '.myID'
        ‹a›
        $ syncthing cli config folders list
        ‹f1›
        ‹f2›
        $ syncthing cli config devices list
        ‹a›
        ‹b›
        """,
        a=device(),
        b=device(),
        f1=_pick(rng, _LOWER_DIGITS, 5) + "-" + _pick(rng, _LOWER_DIGITS, 5),
        f2=_pick(rng, _LOWER_DIGITS, 5) + "-" + _pick(rng, _LOWER_DIGITS, 5),
    )


@_clean_shape("clean-bitlocker-status-protector-ids-only")
def _clean_bitlocker(rng: random.Random) -> str:
    return _fill(
        """
        PS C:\\> Get-BitLockerVolume -MountPoint C: | Select-Object -ExpandProperty KeyProtector

        KeyProtectorId      : {‹a›}
        AutoUnlockProtector :
        KeyProtectorType    : Tpm
        KeyFileName         :
        RecoveryPassword    :
        KeyCertificateType  :
        Thumbprint          :

        KeyProtectorId      : {‹b›}
        AutoUnlockProtector :
        KeyProtectorType    : RecoveryPassword
        KeyFileName         :
        RecoveryPassword    : (escrowed to Entra ID, not shown)
        KeyCertificateType  :
        Thumbprint          :
        """,
        a=_guid(rng).upper(),
        b=_guid(rng).upper(),
    )


SHAPES = tuple(name for name, _ in _WITH_SECRET)
CLEAN_SHAPES = tuple(name for name, _ in _WITHOUT_SECRET)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape, its values drawn with `seed`, then the documents without a secret."""
    rng = random.Random(seed)
    credential = [Document(name, *make(rng)) for name, make in _WITH_SECRET]
    clean = [Document(name, make(rng)) for name, make in _WITHOUT_SECRET]
    return credential + clean
