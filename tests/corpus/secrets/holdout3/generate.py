"""The HOLDOUT3 part of the secret corpus: a third blind part, written after HOLDOUT and HOLDOUT2 were spent.

Written blind: its author never read the detector, its rules, its docs or its figures, and no document was run
through a detector or changed after one. Every document copies what a real tool, config file, CI log, agent,
chat or HTTP trace prints, in shapes and with tools the earlier parts do not use: `aws sts assume-role`,
`gcloud auth print-access-token`, `heroku config`, `vercel env pull`, Firebase and Supabase configs, Twilio,
Mailgun and Postmark clients, a legacy Sentry DSN, rabbitmqctl, a Redis MONITOR dump, mongosh, htpasswd,
`.git-credentials`, `~/.aws/credentials` profiles, Gradle and Android signing files, fastlane match, Rails
credentials, a Laravel `.env`, the Jenkins script console, a GitHub Actions secret leaked through base64,
CircleCI, `.terraformrc`, Consul and etcd, OAuth and simplejwt token responses, a Netscape cookie jar, a
devtools "Copy as fetch", a requests session, a Spring bind failure, a Rust `Debug` config, an agent echoing a
key, chat lines, an SMS backup, unlabeled values after "use this:" / "Here you go:", a password-manager CSV, a
mysqldump INSERT, Kubernetes secret data in base64, pip and kubeconfig, a PuTTY key, age, Elasticsearch,
Jupyter, Argo CD, Docker swarm and kubeadm join tokens, SNMPv3. Each document plants one or two values; every
value appears verbatim in its text and is 8 characters or more. Value forms: hex, base64, base64url, base32,
base36, bech32, UUIDs, JWTs (HS256 and RS256), vendor prefixes (ASIA/AKIA, ya29., AIza, ATBB, ghs_, sk-proj-,
ory_at_, SWMTKN-1-, AGE-SECRET-KEY-1, atlasv1), word chains with new separators and punctuation-heavy
passwords. Most are 8 to 80 characters; a few keep their real, longer length (an STS session token, a Google
access token, a Rails secret_key_base, JWTs).

Decisions: a one-time code shorter than 8 characters (a 6-digit SMS or TOTP code) is out of scope, so no
document holds one; a password hash (bcrypt, argon2, PBKDF2) is not the credential, so hashes appear in a clean
document; identifiers next to a secret (an AWS access key id, a Consul AccessorID, a Twilio account SID, a
Sentry public key and a kubeadm CA-cert hash) are not planted.

The clean documents hold no credential but plenty of text that looks like one: an X.509 certificate, hashed
known_hosts, password hashes, API object ids, a grpcurl dump with base64 bytes, S3 listings with ETags, build
hashes, workflow files that only reference secrets, an `.env.example`, a design note about tokens, a JWKS, a
PGP public key, pip `--hash` pins, git LFS pointers, IPFS CIDs and training-run token metrics.

SEED = 161803. `documents(seed)` gives one document per credential shape (values drawn with `seed`), then the
clean ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import textwrap
import urllib.parse
import uuid
from collections.abc import Callable

from tests.corpus.secrets import Document

SEED = 161803

_ALNUM = string.ascii_letters + string.digits
_LOWER36 = string.ascii_lowercase + string.digits
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"
_BASE32 = string.ascii_uppercase + "234567"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_PUNCT = "!#$%&()*+,-./:;<=>?@[]^_{|}~"
_WORDS = (
    "anchovy", "basalt", "cobalt", "dervish", "fjord", "gazebo", "hemlock", "isotope", "jackal", "krypton",
    "lumen", "mangrove", "nougat", "origami", "paprika", "quasar", "rhubarb", "sequoia", "tamarind", "umber",
)  # fmt: skip

Built = tuple[str, tuple[str, ...]]
_CREDENTIAL_SHAPES: list[tuple[str, Callable[[random.Random], Built]]] = []
_CLEAN_SHAPES: list[tuple[str, Callable[[random.Random], str]]] = []


def _shape(name: str):
    """Register a builder of a document holding credentials."""

    def register(builder: Callable[[random.Random], Built]) -> Callable[[random.Random], Built]:
        _CREDENTIAL_SHAPES.append((name, builder))
        return builder

    return register


def _clean(name: str):
    """Register a builder of a document without a credential."""

    def register(builder: Callable[[random.Random], str]) -> Callable[[random.Random], str]:
        _CLEAN_SHAPES.append((name, builder))
        return builder

    return register


def _fill(template: str, **values: str) -> str:
    """The template, dedented, with each «name» replaced by its value."""
    text = textwrap.dedent(template).strip("\n")
    for name, value in values.items():
        text = text.replace(f"«{name}»", value)
    assert "«" not in text, text
    return text + "\n"


# Value forms.


def _chars(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _hex(rng: random.Random, nbytes: int) -> str:
    return rng.randbytes(nbytes).hex()


def _b64(rng: random.Random, nbytes: int) -> str:
    return base64.b64encode(rng.randbytes(nbytes)).decode()


def _urlsafe(rng: random.Random, nbytes: int) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(nbytes)).decode().rstrip("=")


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(bytes=rng.randbytes(16), version=4))


def _passphrase(rng: random.Random, sep: str) -> str:
    """Words and a number joined by `sep`: `fjord+Umber+quasar+73`, some words capitalised."""
    words = [w.capitalize() if rng.random() < 0.4 else w for w in rng.sample(_WORDS, rng.randint(3, 5))]
    return sep.join([*words, str(rng.randint(10, 999))])


def _punct(rng: random.Random, n: int = 0, *, exclude: str = "") -> str:
    """A password full of punctuation (without the characters the shape cannot hold)."""
    punct = "".join(c for c in _PUNCT if c not in exclude)
    n = n or rng.randint(12, 26)
    while True:
        value = _chars(rng, _ALNUM + punct, n)
        if value[0].isalnum() and sum(c in punct for c in value) >= 2 and any(c.isdigit() for c in value):
            return value


def _segment(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


def _jwt(rng: random.Random, claims: dict, *, alg: str = "HS256") -> str:
    """A signed JWT: HS256 with a 32-byte signature, RS256 with a 256-byte one."""
    header = {"alg": alg, "typ": "JWT"} if alg == "HS256" else {"alg": alg, "kid": _urlsafe(rng, 30)}
    return f"{_segment(header)}.{_segment(claims)}.{_urlsafe(rng, 32 if alg == 'HS256' else 256)}"


def _aws_secret(rng: random.Random) -> str:
    return _chars(rng, _B64, 40)


def _aws_key_id(rng: random.Random, prefix: str) -> str:
    return prefix + _chars(rng, string.ascii_uppercase + "234567", 16)


# Documents with credentials.


@_shape("aws-sts-assume-role-json")
def _sts(rng: random.Random) -> Built:
    secret, token = _aws_secret(rng), "IQoJb3JpZ2luX2VjE" + _b64(rng, 300).rstrip("=")
    text = _fill(
        """
        $ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/ci-deployer --role-session-name gha-run-4821
        {
            "Credentials": {
                "AccessKeyId": "«akid»",
                "SecretAccessKey": "«secret»",
                "SessionToken": "«token»",
                "Expiration": "2026-03-05T12:41:09+00:00"
            },
            "AssumedRoleUser": {
                "AssumedRoleId": "AROA«rid»:gha-run-4821",
                "Arn": "arn:aws:sts::123456789012:assumed-role/ci-deployer/gha-run-4821"
            }
        }
        """,
        akid=_aws_key_id(rng, "ASIA"),
        secret=secret,
        token=token,
        rid=_chars(rng, string.ascii_uppercase + string.digits, 17),
    )
    return text, (secret, token)


@_shape("gcloud-print-access-token")
def _gcloud(rng: random.Random) -> Built:
    v = "ya29.a0A" + _chars(rng, _URLSAFE, rng.randint(140, 180))
    text = _fill(
        """
        $ gcloud auth print-access-token --impersonate-service-account=deployer@shop-prod-4821.iam.gserviceaccount.com
        WARNING: This command is using service account impersonation. All API calls will be executed as [deployer@shop-prod-4821.iam.gserviceaccount.com].
        «v»
        $ gcloud config list --format='value(core.account,core.project)'
        ada@example.org	shop-prod-4821
        """,
        v=v,
    )
    return text, (v,)


@_shape("heroku-config-vars")
def _heroku(rng: random.Random) -> Built:
    v = "p" + _hex(rng, 32)
    text = _fill(
        """
        $ heroku config -a shop-api-prod
        === shop-api-prod Config Vars

        DATABASE_URL:            postgres://u«user»:«v»@c«host».cluster-xyz.eu-west-1.rds.amazonaws.com:5432/d«db»
        LANG:                    en_US.UTF-8
        PAPERTRAIL_API_TOKEN:    (set by add-on, hidden)
        RACK_ENV:                production
        WEB_CONCURRENCY:         3
        """,
        user=_chars(rng, _LOWER36, 13),
        v=v,
        host=_chars(rng, _LOWER36, 10),
        db=_chars(rng, _LOWER36, 13),
    )
    return text, (v,)


@_shape("vercel-env-pull-file")
def _vercel(rng: random.Random) -> Built:
    rw, ro = "AX" + _urlsafe(rng, 45), "Ag" + _urlsafe(rng, 45)
    text = _fill(
        """
        $ vercel env pull .env.development.local
        Vercel CLI 37.4.2
        > Downloading `development` Environment Variables for example/storefront
        ✅  Created .env.development.local file  [312ms]
        $ cat .env.development.local
        # Created by Vercel CLI
        KV_REST_API_READ_ONLY_TOKEN="«ro»"
        KV_REST_API_TOKEN="«rw»"
        KV_REST_API_URL="https://«sub».kv.vercel-storage.com"
        NX_DAEMON="false"
        TURBO_REMOTE_ONLY="true"
        VERCEL="1"
        VERCEL_ENV="development"
        """,
        ro=ro,
        rw=rw,
        sub="-".join(rng.sample(_WORDS, 2)) + "-" + str(rng.randint(10000, 99999)),
    )
    return text, (rw, ro)


@_shape("firebase-web-config-ts")
def _firebase(rng: random.Random) -> Built:
    v = "AIzaSy" + _chars(rng, _URLSAFE, 33)
    sender = str(rng.randint(10**11, 10**12 - 1))
    text = _fill(
        """
        // src/lib/firebase.ts
        import { initializeApp } from "firebase/app";
        import { getAuth } from "firebase/auth";

        const firebaseConfig = {
          apiKey: "«v»",
          authDomain: "shop-prod-4821.firebaseapp.com",
          projectId: "shop-prod-4821",
          storageBucket: "shop-prod-4821.appspot.com",
          messagingSenderId: "«sender»",
          appId: "1:«sender»:web:«app»",
          measurementId: "G-«mid»"
        };

        export const app = initializeApp(firebaseConfig);
        export const auth = getAuth(app);
        """,
        v=v,
        sender=sender,
        app=_hex(rng, 11),
        mid=_chars(rng, string.ascii_uppercase + string.digits, 10),
    )
    return text, (v,)


@_shape("supabase-env-local")
def _supabase(rng: random.Random) -> Built:
    ref = _chars(rng, string.ascii_lowercase, 20)
    iat = 1767225600 + rng.randrange(10**6)
    key = _jwt(
        rng, {"iss": "supabase", "ref": ref, "role": "service_role", "iat": iat, "exp": iat + 315360000}
    )
    pw = _passphrase(rng, "^")
    text = _fill(
        """
        # .env.local -- never commit (see .gitignore)
        NEXT_PUBLIC_SUPABASE_URL=https://«ref».supabase.co
        SUPABASE_SERVICE_ROLE_KEY=«key»
        SUPABASE_DB_URL=postgresql://postgres.«ref»:«pw»@aws-0-eu-central-1.pooler.supabase.com:6543/postgres
        NEXT_PUBLIC_SITE_URL=http://127.0.0.1:3000
        """,
        ref=ref,
        key=key,
        pw=pw,
    )
    return text, (key, pw)


@_shape("cloudflare-token-verify-curl")
def _cloudflare(rng: random.Random) -> Built:
    v = _chars(rng, _URLSAFE, 40)
    text = _fill(
        """
        $ curl "https://api.cloudflare.com/client/v4/user/tokens/verify" \\
             -H "Authorization: Bearer «v»"
        {
          "result": {
            "id": "«id»",
            "status": "active"
          },
          "success": true,
          "errors": [],
          "messages": [
            {
              "code": 10000,
              "message": "This API Token is valid and active",
              "type": null
            }
          ]
        }
        """,
        v=v,
        id=_hex(rng, 16),
    )
    return text, (v,)


@_shape("twilio-python-module")
def _twilio(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        # notify/sms.py
        import os

        from twilio.rest import Client

        ACCOUNT_SID = "AC«sid»"
        AUTH_TOKEN = "«v»"  # TODO: read from the environment before merging

        client = Client(ACCOUNT_SID, AUTH_TOKEN)


        def send_login_link(to: str, body: str) -> str:
            message = client.messages.create(to=to, messaging_service_sid=os.environ["TWILIO_MSG_SID"], body=body)
            return message.sid
        """,
        sid=_hex(rng, 16),
        v=v,
    )
    return text, (v,)


@_shape("mailgun-js-client")
def _mailgun(rng: random.Random) -> Built:
    v = f"{_hex(rng, 16)}-{_hex(rng, 4)}-{_hex(rng, 4)}"
    text = _fill(
        """
        const formData = require("form-data");
        const Mailgun = require("mailgun.js");

        const mailgun = new Mailgun(formData);
        const mg = mailgun.client({
          username: "api",
          key: "«v»",
          url: "https://api.eu.mailgun.net",
        });

        mg.messages
          .create("mg.example.org", { from: "Shop <noreply@mg.example.org>", to: ["ops@example.org"], subject: "Nightly report", text: report })
          .then((msg) => console.log(msg.id))
          .catch((err) => console.error(err));
        """,
        v=v,
    )
    return text, (v,)


@_shape("postmark-rails-environment")
def _postmark(rng: random.Random) -> Built:
    v = _uuid(rng)
    text = _fill(
        """
        # config/environments/production.rb
        Rails.application.configure do
          config.cache_classes = true
          config.action_mailer.delivery_method = :postmark
          config.action_mailer.postmark_settings = { api_token: "«v»" }
          config.action_mailer.default_url_options = { host: "shop.example.org", protocol: "https" }
          config.log_level = :info
        end
        """,
        v=v,
    )
    return text, (v,)


@_shape("sentry-legacy-dsn-secret")
def _sentry(rng: random.Random) -> Built:
    v = _hex(rng, 16)
    text = _fill(
        """
        # shop/settings/production.py
        import sentry_sdk
        from sentry_sdk.integrations.django import DjangoIntegration

        sentry_sdk.init(
            dsn="https://«pub»:«v»@o«org».ingest.sentry.io/«proj»",
            integrations=[DjangoIntegration()],
            traces_sample_rate=0.05,
            send_default_pii=False,
            release="shop@2026.03.05",
        )
        """,
        pub=_hex(rng, 16),
        v=v,
        org=str(rng.randint(100000, 999999)),
        proj=str(rng.randint(1000000, 9999999)),
    )
    return text, (v,)


@_shape("rabbitmqctl-add-user")
def _rabbitmq(rng: random.Random) -> Built:
    v = _punct(rng, exclude="'\\")
    text = _fill(
        """
        $ sudo rabbitmqctl add_user orders-svc '«v»'
        Adding user "orders-svc" ...
        Done. Don't forget to grant the user permissions to some virtual hosts! See 'rabbitmqctl help set_permissions' to learn more.
        $ sudo rabbitmqctl set_permissions -p /shop orders-svc "^orders\\..*" "^orders\\..*" "^orders\\..*"
        Setting permissions for user "orders-svc" in vhost "/shop" ...
        $ sudo rabbitmqctl list_users
        Listing users ...
        user	tags
        orders-svc	[]
        guest	[administrator]
        """,
        v=v,
    )
    return text, (v,)


@_shape("redis-monitor-auth")
def _redis_monitor(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, rng.randint(24, 32))
    t = 1772611204 + rng.randrange(1000)
    text = _fill(
        """
        $ redis-cli -h 127.0.0.1 -p 6379 MONITOR
        OK
        «t».118392 [0 127.0.0.1:51844] "AUTH" "«v»"
        «t».119014 [0 127.0.0.1:51844] "SELECT" "2"
        «t».120551 [2 127.0.0.1:51844] "BRPOP" "celery" "celery\\x06\\x163" "celery\\x06\\x166" "1"
        «t».981407 [0 127.0.0.1:51852] "PING"
        «t».982270 [2 127.0.0.1:51844] "GET" "celery-task-meta-«task»"
        """,
        t=str(t),
        v=v,
        task=_uuid(rng),
    )
    return text, (v,)


@_shape("mongosh-create-user")
def _mongosh(rng: random.Random) -> Built:
    v = _passphrase(rng, "~")
    text = _fill(
        """
        test> use admin
        switched to db admin
        admin> db.createUser({ user: "reporting", pwd: "«v»", roles: [ { role: "read", db: "shop" }, { role: "read", db: "analytics" } ] })
        { ok: 1 }
        admin> db.getUser("reporting").roles.length
        2
        admin> exit
        """,
        v=v,
    )
    return text, (v,)


@_shape("htpasswd-batch-bcrypt")
def _htpasswd(rng: random.Random) -> Built:
    v = _punct(rng, exclude="'\\")
    bcrypt_alphabet = "./" + _ALNUM
    text = _fill(
        """
        $ sudo htpasswd -b -B -C 10 /etc/nginx/.htpasswd grafana '«v»'
        Adding password for user grafana
        $ sudo cat /etc/nginx/.htpasswd
        prometheus:$2y$10$«h1»
        grafana:$2y$10$«h2»
        $ sudo nginx -t && sudo systemctl reload nginx
        nginx: the configuration file /etc/nginx/nginx.conf syntax is ok
        nginx: configuration file /etc/nginx/nginx.conf test is successful
        """,
        v=v,
        h1=_chars(rng, bcrypt_alphabet, 53),
        h2=_chars(rng, bcrypt_alphabet, 53),
    )
    return text, (v,)


@_shape("git-credentials-store-file")
def _git_credentials(rng: random.Random) -> Built:
    a = "ATBB" + _chars(rng, _ALNUM, 28) + _hex(rng, 4).upper()
    b = "ghs_" + _chars(rng, _ALNUM, 36)
    text = _fill(
        """
        $ git config --global --get credential.helper
        store
        $ cat ~/.git-credentials
        https://ci-runner:«a»@bitbucket.org
        https://x-access-token:«b»@github.com
        $ git ls-remote https://github.com/example/storefront.git HEAD
        «sha»	HEAD
        """,
        a=a,
        b=b,
        sha=_hex(rng, 20),
    )
    return text, (a, b)


@_shape("aws-credentials-profiles-file")
def _aws_credentials(rng: random.Random) -> Built:
    a, b = _aws_secret(rng), _aws_secret(rng)
    text = _fill(
        """
        $ cat ~/.aws/credentials
        [default]
        aws_access_key_id = «k1»
        aws_secret_access_key = «a»

        [prod-readonly]
        aws_access_key_id = «k2»
        aws_secret_access_key = «b»
        region = eu-central-1
        $ aws sts get-caller-identity --profile prod-readonly --query Arn --output text
        arn:aws:iam::123456789012:user/ro-auditor
        """,
        k1=_aws_key_id(rng, "AKIA"),
        a=a,
        k2=_aws_key_id(rng, "AKIA"),
        b=b,
    )
    return text, (a, b)


@_shape("gradle-properties-signing")
def _gradle(rng: random.Random) -> Built:
    a, b = _passphrase(rng, " "), _chars(rng, _ALNUM, 44)
    text = _fill(
        """
        # ~/.gradle/gradle.properties
        org.gradle.jvmargs=-Xmx4g -Dfile.encoding=UTF-8
        org.gradle.caching=true
        signing.keyId=«kid»
        signing.password=«a»
        signing.secretKeyRingFile=/home/release/.gnupg/secring.gpg
        mavenCentralUsername=release-bot
        mavenCentralPassword=«b»
        """,
        kid=_hex(rng, 4).upper(),
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("android-keystore-properties")
def _keystore(rng: random.Random) -> Built:
    a, b = _chars(rng, _ALNUM, 12), _punct(rng, 16, exclude="\\")
    text = _fill(
        """
        $ cat android/keystore.properties
        storeFile=../keys/upload-keystore.jks
        storePassword=«a»
        keyAlias=upload
        keyPassword=«b»
        $ ./gradlew :app:bundleRelease
        > Task :app:signReleaseBundle

        BUILD SUCCESSFUL in 1m 42s
        87 actionable tasks: 87 executed
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("fastlane-match-dotenv")
def _fastlane(rng: random.Random) -> Built:
    v = _passphrase(rng, "+")
    text = _fill(
        """
        $ cat fastlane/.env.default
        MATCH_GIT_URL=git@git.example.org:mobile/certificates.git
        MATCH_PASSWORD=«v»
        FASTLANE_USER=ci@example.org
        FASTLANE_TEAM_ID=«team»
        $ bundle exec fastlane match appstore --readonly
        [10:02:14]: Successfully loaded '/Users/ci/app/fastlane/.env.default' 📄
        [10:02:16]: Cloning remote git repo...
        [10:02:19]: 🔓  Successfully decrypted certificates repo
        [10:02:19]: Installing certificate...
        [10:02:21]: All required keys, certificates and provisioning profiles are installed 🙌
        """,
        v=v,
        team=_chars(rng, string.ascii_uppercase + string.digits, 10),
    )
    return text, (v,)


@_shape("rails-credentials-show")
def _rails(rng: random.Random) -> Built:
    base, secret = _hex(rng, 64), _aws_secret(rng)
    text = _fill(
        """
        $ EDITOR=cat bin/rails credentials:show --environment production
        secret_key_base: «base»
        aws:
          access_key_id: «akid»
          secret_access_key: «secret»
          region: eu-west-1
        active_record_encryption:
          primary_key: <%= ENV["AR_PRIMARY_KEY"] %>
        """,
        base=base,
        akid=_aws_key_id(rng, "AKIA"),
        secret=secret,
    )
    return text, (base, secret)


@_shape("laravel-dotenv-app-key")
def _laravel(rng: random.Random) -> Built:
    key, pw = _b64(rng, 32), _punct(rng, 18, exclude="#\"'\\ $`")
    text = _fill(
        """
        APP_NAME=Shop
        APP_ENV=production
        APP_KEY=base64:«key»
        APP_DEBUG=false
        APP_URL=https://shop.example.org

        LOG_CHANNEL=stack

        DB_CONNECTION=mysql
        DB_HOST=127.0.0.1
        DB_PORT=3306
        DB_DATABASE=shop
        DB_USERNAME=shop
        DB_PASSWORD=«pw»
        """,
        key=key,
        pw=pw,
    )
    return text, (key, pw)


@_shape("jenkins-script-console-creds")
def _jenkins(rng: random.Random) -> Built:
    a, b = _punct(rng, 20, exclude=":"), "squ_" + _hex(rng, 20)
    text = _fill(
        """
        Script Console

        def creds = com.cloudbees.plugins.credentials.CredentialsProvider.lookupCredentials(
            com.cloudbees.plugins.credentials.common.StandardUsernamePasswordCredentials.class, Jenkins.instance, null, null)
        creds.each { c -> println("${c.id} : ${c.username} : ${c.password}") }

        Result
        nexus-deploy : deployer : «a»
        sonar-scanner : sonar : «b»
        Result: [com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl@8f2a1c3e, com.cloudbees.plugins.credentials.impl.UsernamePasswordCredentialsImpl@1b7d04ee]
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("gha-secret-leaked-base64")
def _gha_base64(rng: random.Random) -> Built:
    token = "dckr_pat_" + _chars(rng, _URLSAFE, 27)
    v = base64.b64encode(f"{token}\n".encode()).decode()
    text = _fill(
        """
        2026-03-05T09:14:22.5512301Z ##[group]Run echo "$DOCKERHUB_TOKEN" | base64
        2026-03-05T09:14:22.5513002Z echo "$DOCKERHUB_TOKEN" | base64
        2026-03-05T09:14:22.5521780Z shell: /usr/bin/bash -e {0}
        2026-03-05T09:14:22.5522104Z env:
        2026-03-05T09:14:22.5522516Z   DOCKERHUB_TOKEN: ***
        2026-03-05T09:14:22.5522890Z ##[endgroup]
        2026-03-05T09:14:22.5601345Z «v»
        2026-03-05T09:14:22.5688120Z Cleaning up orphan processes
        """,
        v=v,
    )
    return text, (v,)


@_shape("circleci-config-docker-auth")
def _circleci(rng: random.Random) -> Built:
    a, b = _punct(rng, 16, exclude="#'\"\\:{}[]&*!|>%@`, "), _chars(rng, _ALNUM, 33)
    text = _fill(
        """
        version: 2.1
        orbs:
          node: circleci/node@5.2.0
        jobs:
          test:
            docker:
              - image: registry.example.org/ci/node:20.11
                auth:
                  username: shopci
                  password: «a»
            environment:
              COVERALLS_REPO_TOKEN: «b»
            steps:
              - checkout
              - node/install-packages
              - run: npm test -- --coverage
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("terraformrc-credentials-block")
def _terraformrc(rng: random.Random) -> Built:
    v = f"{_chars(rng, _ALNUM, 14)}.atlasv1.{_chars(rng, _ALNUM, 67)}"
    text = _fill(
        """
        $ cat ~/.terraformrc
        plugin_cache_dir = "$HOME/.terraform.d/plugin-cache"

        credentials "app.terraform.io" {
          token = "«v»"
        }
        $ terraform init
        Initializing HCP Terraform...
        Initializing provider plugins...
        - Reusing previous version of hashicorp/aws from the dependency lock file
        - Using hashicorp/aws v5.40.0 from the shared cache directory

        HCP Terraform has been successfully initialized!
        """,
        v=v,
    )
    return text, (v,)


@_shape("consul-acl-token-create")
def _consul(rng: random.Random) -> Built:
    v = _uuid(rng)
    text = _fill(
        """
        $ consul acl token create -description "orders service" -policy-name orders-svc
        AccessorID:       «accessor»
        SecretID:         «v»
        Description:      orders service
        Local:            false
        Create Time:      2026-03-05 09:31:07.118204 +0000 UTC
        Policies:
           «policy» - orders-svc
        """,
        accessor=_uuid(rng),
        v=v,
        policy=_uuid(rng),
    )
    return text, (v,)


@_shape("etcdctl-password-flag")
def _etcd(rng: random.Random) -> Built:
    v = _punct(rng, rng.randint(8, 9), exclude="'\\")
    rule = "+------------------+---------+--------+------------------------+------------------------+------------+"
    text = _fill(
        """
        $ ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 --cacert=/etc/etcd/ca.crt --user=root --password='«v»' member list -w table
        «rule»
        |        ID        | STATUS  |  NAME  |       PEER ADDRS       |      CLIENT ADDRS      | IS LEARNER |
        «rule»
        | «id» | started | etcd-0 | https://127.0.0.1:2380 | https://127.0.0.1:2379 |      false |
        «rule»
        """,
        v=v,
        rule=rule,
        id=_hex(rng, 8),
    )
    return text, (v,)


@_shape("oauth-token-response-repl")
def _oauth(rng: random.Random) -> Built:
    at, rt = _urlsafe(rng, 32), "v1." + _urlsafe(rng, 48)
    text = _fill(
        """
        >>> r = requests.post("https://auth.example.org/oauth/token", data={"grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1:8765/callback", "code_verifier": verifier}, auth=(CLIENT_ID, CLIENT_SECRET))
        >>> r.status_code
        200
        >>> r.json()
        {'access_token': '«at»', 'token_type': 'Bearer', 'expires_in': 3600, 'refresh_token': '«rt»', 'scope': 'read:orders write:orders offline_access'}
        >>> r.headers["cache-control"]
        'no-store'
        """,
        at=at,
        rt=rt,
    )
    return text, (at, rt)


@_shape("httpie-simplejwt-token-pair")
def _httpie_jwt(rng: random.Random) -> Built:
    iat = 1772700000 + rng.randrange(86400)
    user = rng.randint(2, 900)
    access = _jwt(
        rng, {"token_type": "access", "exp": iat + 300, "iat": iat, "jti": _hex(rng, 16), "user_id": user}
    )
    refresh = _jwt(
        rng, {"token_type": "refresh", "exp": iat + 86400, "iat": iat, "jti": _hex(rng, 16), "user_id": user}
    )
    text = _fill(
        """
        $ http -a ada POST 127.0.0.1:8000/api/token/
        http: password for ada@127.0.0.1:8000:
        HTTP/1.1 200 OK
        Allow: POST, OPTIONS
        Content-Type: application/json
        Cross-Origin-Opener-Policy: same-origin
        Vary: Accept
        X-Frame-Options: DENY

        {
            "access": "«access»",
            "refresh": "«refresh»"
        }
        """,
        access=access,
        refresh=refresh,
    )
    return text, (access, refresh)


@_shape("netscape-cookie-jar")
def _cookie_jar(rng: random.Random) -> Built:
    v = "s%3A" + _chars(rng, _URLSAFE, 32) + "." + urllib.parse.quote(_b64(rng, 32).rstrip("="), safe="")
    text = _fill(
        """
        $ cat cookies.txt
        # Netscape HTTP Cookie File
        # https://curl.se/docs/http-cookies.html
        # This file was generated by libcurl! Edit at your own risk.

        #HttpOnly_127.0.0.1	FALSE	/	FALSE	1775203200	connect.sid	«v»
        127.0.0.1	FALSE	/	FALSE	1775203200	theme	dark
        127.0.0.1	FALSE	/	FALSE	1806739200	_ga	GA1.1.«ga».1772611204
        $ curl -b cookies.txt -s http://127.0.0.1:3000/api/me | jq -r .email
        ada@example.org
        """,
        v=v,
        ga=str(rng.randint(10**8, 10**10)),
    )
    return text, (v,)


@_shape("devtools-copy-as-fetch")
def _copy_as_fetch(rng: random.Random) -> Built:
    v = f"ory_at_{_urlsafe(rng, 32)}.{_urlsafe(rng, 32)}"
    text = _fill(
        """
        fetch("https://app.example.org/api/graphql", {
          "headers": {
            "accept": "*/*",
            "accept-language": "en-GB,en;q=0.9",
            "authorization": "Bearer «v»",
            "content-type": "application/json",
            "sec-ch-ua": "\\"Chromium\\";v=\\"122\\", \\"Not(A:Brand\\";v=\\"24\\"",
            "sec-fetch-dest": "empty",
            "sec-fetch-mode": "cors",
            "sec-fetch-site": "same-origin"
          },
          "referrer": "https://app.example.org/orders",
          "referrerPolicy": "strict-origin-when-cross-origin",
          "body": "{\\"operationName\\":\\"Orders\\",\\"variables\\":{\\"first\\":20},\\"query\\":\\"query Orders($first: Int) { orders(first: $first) { id total } }\\"}",
          "method": "POST",
          "mode": "cors",
          "credentials": "include"
        });
        """,
        v=v,
    )
    return text, (v,)


@_shape("requests-session-repl")
def _requests_session(rng: random.Random) -> Built:
    a, b = _chars(rng, _LOWER36, 32), _punct(rng, exclude="'\\")
    text = _fill(
        """
        >>> s = make_session()
        >>> s.headers
        {'User-Agent': 'python-requests/2.32.3', 'Accept-Encoding': 'gzip, deflate', 'Accept': '*/*', 'Connection': 'keep-alive', 'X-Api-Key': '«a»'}
        >>> s.auth
        ('svc-reporting', '«b»')
        >>> s.get("http://127.0.0.1:9200/_cluster/health").json()["status"]
        'green'
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("spring-bind-validation-failure")
def _spring(rng: random.Random) -> Built:
    v = _punct(rng, rng.randint(10, 15), exclude='"\\')
    text = _fill(
        """
        ***************************
        APPLICATION FAILED TO START
        ***************************

        Description:

        Binding to target org.springframework.boot.context.properties.bind.BindException: Failed to bind properties under 'app.mail' to com.example.shop.mail.MailProperties failed:

            Property: app.mail.password
            Value: "«v»"
            Origin: class path resource [application-prod.yml] - 14:15
            Reason: size must be between 16 and 64


        Action:

        Update your application's configuration
        """,
        v=v,
    )
    return text, (v,)


@_shape("rust-debug-config-panic")
def _rust(rng: random.Random) -> Built:
    pw, key = _chars(rng, _ALNUM, 20), "live_" + _hex(rng, 20)
    text = _fill(
        """
        $ RUST_BACKTRACE=0 ./target/release/ingestd --config /etc/ingestd.toml
        [2026-03-05T09:40:02Z INFO  ingestd] loaded config: Config { listen: 127.0.0.1:7070, store: StoreConfig { url: "postgres://ingest:«pw»@127.0.0.1:5432/ingest", pool_size: 16 }, upstream: UpstreamConfig { endpoint: "https://api.example.org", api_key: "«key»", timeout_ms: 5000 } }
        thread 'main' panicked at src/main.rs:58:10:
        called `Result::unwrap()` on an `Err` value: Os { code: 98, kind: AddrInUse, message: "Address already in use" }
        note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace
        """,
        pw=pw,
        key=key,
    )
    return text, (pw, key)


@_shape("agent-echoes-api-key")
def _agent_echo(rng: random.Random) -> Built:
    v = "sk-proj-" + _chars(rng, _URLSAFE, 48) + "T3BlbkFJ" + _chars(rng, _URLSAFE, 48)
    text = _fill(
        """
        [user] Why does `python summarize.py notes.md` fail? It worked yesterday.
        [tool:bash] $ python summarize.py notes.md
        openai.AuthenticationError: Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-proj-********************«tail». You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}
        [tool:bash] $ grep -n OPENAI .env
        3:OPENAI_API_KEY=«v»
        [assistant] Line 3 of `.env` sets the key to «v», and the API answers 401 `invalid_api_key` for it, so it was most likely revoked or rotated. Create a new key in the dashboard, replace line 3 and run the script again.
        """,
        v=v,
        tail=v[-4:],
    )
    return text, (v,)


@_shape("teams-chat-wifi-credentials")
def _teams(rng: random.Random) -> Built:
    v = _passphrase(rng, "/")
    text = _fill(
        """
        [09:14] Sam Lee
        morning! wifi for the offsite, for anyone arriving early:
        Harbor-Guest / «v»
        [09:15] Priya Nair
        👍 thanks
        [09:15] Sam Lee
        the projector PIN is on the sticker under it, not posting that here
        """,
        v=v,
    )
    return text, (v,)


@_shape("sms-backup-magic-link")
def _sms(rng: random.Random) -> Built:
    v = _urlsafe(rng, 24)
    t = 1772611204000 + rng.randrange(10**7)
    text = _fill(
        """
        <?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
        <smses count="2" backup_set="«set»" backup_date="1772700000000" type="full">
          <sms protocol="0" address="ACME" date="«t»" type="1" body="Your Acme sign-in link (valid 15 min): https://acme.example.org/m/«v» Do not forward this message." read="1" status="-1" locked="0" date_sent="«t»" readable_date="5 Mar 2026 09:20:04" contact_name="(Unknown)" />
          <sms protocol="0" address="+15005550006" date="«t2»" type="1" body="Your parcel 4821 is out for delivery today between 10:00 and 12:00." read="1" status="-1" locked="0" date_sent="«t2»" readable_date="5 Mar 2026 10:02:41" contact_name="(Unknown)" />
        </smses>
        """,
        set=_uuid(rng),
        t=str(t),
        t2=str(t + 2_557_000),
        v=v,
    )
    return text, (v,)


@_shape("irc-use-this-unlabeled")
def _use_this(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM, rng.randint(16, 22))
    text = _fill(
        """
        <dana> can someone send me the staging rabbit creds? my vault login is broken again
        <marco> user is orders-stg
        <marco> use this:
        <marco> «v»
        <dana> ty, in
        <marco> rotate it when vault is back pls
        """,
        v=v,
    )
    return text, (v,)


@_shape("issue-comment-here-you-go")
def _here_you_go(rng: random.Random) -> Built:
    v = "-".join(_chars(rng, _BASE32, 5) for _ in range(5))
    text = _fill(
        """
        **jdoe** commented 2 hours ago

        > Could you share the license key for the on-prem installer? The download page asks for one.

        Here you go:

        ```
        «v»
        ```

        It is tied to the staging cluster, please don't reuse it for prod.
        """,
        v=v,
    )
    return text, (v,)


@_shape("password-manager-csv-export")
def _csv(rng: random.Random) -> Built:
    a, b = _punct(rng, exclude=',"'), _passphrase(rng, "=")
    text = _fill(
        """
        name,url,username,password,note
        127.0.0.1,http://127.0.0.1:3000/login,admin@example.org,«a»,
        grafana.example.org,https://grafana.example.org/login,ops,«b»,shared with on-call
        news.example.com,https://news.example.com/,ada.k,,passkey only
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("mysqldump-insert-client-secrets")
def _mysqldump(rng: random.Random) -> Built:
    a, b = _chars(rng, _ALNUM, 40), _hex(rng, 24)
    text = _fill(
        """
        --
        -- Dumping data for table `oauth_clients`
        --

        LOCK TABLES `oauth_clients` WRITE;
        /*!40000 ALTER TABLE `oauth_clients` DISABLE KEYS */;
        INSERT INTO `oauth_clients` VALUES (1,NULL,'storefront-web','«a»','https://shop.example.org/callback',0,1,0,'2026-01-12 09:14:02','2026-01-12 09:14:02'),(2,NULL,'warehouse-sync','«b»','',0,0,0,'2026-02-03 16:40:55','2026-02-03 16:40:55');
        /*!40000 ALTER TABLE `oauth_clients` ENABLE KEYS */;
        UNLOCK TABLES;
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


@_shape("kubectl-secret-data-base64")
def _k8s_secret(rng: random.Random) -> Built:
    plain = _chars(rng, _ALNUM, 24)
    encoded = base64.b64encode(plain.encode()).decode()
    text = _fill(
        """
        $ kubectl -n shop get secret orders-db -o yaml
        apiVersion: v1
        data:
          password: «encoded»
          username: b3JkZXJz
        kind: Secret
        metadata:
          creationTimestamp: "2026-02-11T08:21:40Z"
          name: orders-db
          namespace: shop
          resourceVersion: "4471823"
          uid: «uid»
        type: Opaque
        $ kubectl -n shop get secret orders-db -o jsonpath='{.data.password}' | base64 -d
        «plain»
        """,
        encoded=encoded,
        uid=_uuid(rng),
        plain=plain,
    )
    return text, (encoded, plain)


@_shape("pip-config-list-index-token")
def _pip_config(rng: random.Random) -> Built:
    raw = f"reftkn:01:{1800000000 + rng.randrange(10**8)}:{_chars(rng, _ALNUM, 31)}"
    v = base64.b64encode(raw.encode()).decode().rstrip("=")
    text = _fill(
        """
        $ pip config list
        global.extra-index-url='https://ci-reader:«v»@artifacts.example.org/artifactory/api/pypi/pypi-local/simple'
        global.timeout='60'
        $ pip install shop-internal==3.2.1
        Looking in indexes: https://pypi.org/simple, https://ci-reader:****@artifacts.example.org/artifactory/api/pypi/pypi-local/simple
        Collecting shop-internal==3.2.1
          Downloading https://artifacts.example.org/artifactory/api/pypi/pypi-local/shop-internal/3.2.1/shop_internal-3.2.1-py3-none-any.whl (48 kB)
        Successfully installed shop-internal-3.2.1
        """,
        v=v,
    )
    return text, (v,)


def _ssh_blob(*parts: bytes) -> bytes:
    return b"".join(struct.pack(">I", len(p)) + p for p in parts)


@_shape("putty-ppk-private-lines")
def _putty(rng: random.Random) -> Built:
    public = base64.b64encode(_ssh_blob(b"ssh-ed25519", rng.randbytes(32))).decode()
    private = base64.b64encode(_ssh_blob(rng.randbytes(32))).decode()
    text = _fill(
        """
        PuTTY-User-Key-File-3: ssh-ed25519
        Encryption: none
        Comment: ci@build01
        Public-Lines: 2
        «pub1»
        «pub2»
        Private-Lines: 1
        «private»
        Private-MAC: «mac»
        """,
        pub1=public[:64],
        pub2=public[64:],
        private=private,
        mac=_hex(rng, 32),
    )
    return text, (private,)


@_shape("age-keygen-identity")
def _age(rng: random.Random) -> Built:
    v = "AGE-SECRET-KEY-1" + _chars(rng, _BECH32, 58).upper()
    public = "age1" + _chars(rng, _BECH32, 58)
    text = _fill(
        """
        $ age-keygen -o backup-key.txt
        Public key: «public»
        $ cat backup-key.txt
        # created: 2026-03-05T09:52:11Z
        # public key: «public»
        «v»
        $ tar czf - /srv/shop/media | age -r «public» > media.tar.gz.age
        """,
        public=public,
        v=v,
    )
    return text, (v,)


@_shape("kubeconfig-service-account-token")
def _kubeconfig(rng: random.Random) -> Built:
    iat = 1772600000 + rng.randrange(86400)
    v = _jwt(
        rng,
        {
            "aud": ["https://kubernetes.default.svc.cluster.local"],
            "exp": iat + 31536000,
            "iat": iat,
            "iss": "https://kubernetes.default.svc.cluster.local",
            "kubernetes.io": {"namespace": "ci", "serviceaccount": {"name": "deployer", "uid": _uuid(rng)}},
            "nbf": iat,
            "sub": "system:serviceaccount:ci:deployer",
        },
        alg="RS256",
    )
    text = _fill(
        """
        apiVersion: v1
        kind: Config
        clusters:
        - cluster:
            certificate-authority: /etc/kubernetes/pki/ca.crt
            server: https://127.0.0.1:6443
          name: kind-ci
        contexts:
        - context:
            cluster: kind-ci
            namespace: ci
            user: ci-deployer
          name: ci
        current-context: ci
        users:
        - name: ci-deployer
          user:
            token: «v»
        """,
        v=v,
    )
    return text, (v,)


@_shape("elasticsearch-reset-password")
def _elastic(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM + "*_-=+", 20)
    text = _fill(
        """
        $ sudo /usr/share/elasticsearch/bin/elasticsearch-reset-password -u elastic
        This tool will reset the password of the [elastic] user to an autogenerated value.
        The password will be printed in the console.
        Please confirm that you would like to continue [y/N]y


        Password for the [elastic] user successfully reset.
        New value: «v»
        """,
        v=v,
    )
    return text, (v,)


@_shape("jupyter-server-token-url")
def _jupyter(rng: random.Random) -> Built:
    v = _hex(rng, 24)
    text = _fill(
        """
        [I 2026-03-05 09:58:31.441 ServerApp] Jupyter Server 2.14.2 is running at:
        [I 2026-03-05 09:58:31.441 ServerApp] http://127.0.0.1:8888/lab?token=«v»
        [I 2026-03-05 09:58:31.441 ServerApp]     http://127.0.0.1:8888/lab?token=«v»
        [I 2026-03-05 09:58:31.441 ServerApp] Use Control-C to stop this server and shut down all kernels (twice to skip confirmation).
        [C 2026-03-05 09:58:31.447 ServerApp]

            To access the server, open this file in a browser:
                file:///home/ada/.local/share/jupyter/runtime/jpserver-4121-open.html
            Or copy and paste one of these URLs:
                http://127.0.0.1:8888/lab?token=«v»
        """,
        v=v,
    )
    return text, (v,)


@_shape("argocd-initial-password")
def _argocd(rng: random.Random) -> Built:
    v = _chars(rng, _ALNUM + "-", 16)
    while not v[0].isalnum():
        v = _chars(rng, _ALNUM + "-", 16)
    text = _fill(
        """
        $ argocd admin initial-password -n argocd
        «v»

         This password must be only used for first time login. We strongly recommend you update the password using `argocd account update-password`.
        $ argocd login 127.0.0.1:8080 --username admin --insecure
        Password:
        'admin:login' logged in successfully
        Context '127.0.0.1:8080' updated
        """,
        v=v,
    )
    return text, (v,)


@_shape("docker-swarm-init-join-token")
def _swarm(rng: random.Random) -> Built:
    v = f"SWMTKN-1-{_chars(rng, _LOWER36, 50)}-{_chars(rng, _LOWER36, 25)}"
    text = _fill(
        """
        $ docker swarm init --advertise-addr 127.0.0.1
        Swarm initialized: current node («node») is now a manager.

        To add a worker to this swarm, run the following command:

            docker swarm join --token «v» 127.0.0.1:2377

        To add a manager to this swarm, run 'docker swarm join-token manager' and follow the instructions.
        """,
        node=_chars(rng, _LOWER36, 25),
        v=v,
    )
    return text, (v,)


@_shape("kubeadm-init-join-command")
def _kubeadm(rng: random.Random) -> Built:
    v = f"{_chars(rng, _LOWER36, 6)}.{_chars(rng, _LOWER36, 16)}"
    text = _fill(
        """
        Your Kubernetes control-plane has initialized successfully!

        To start using your cluster, you need to run the following as a regular user:

          mkdir -p $HOME/.kube
          sudo cp -i /etc/kubernetes/admin.conf $HOME/.kube/config
          sudo chown $(id -u):$(id -g) $HOME/.kube/config

        Then you can join any number of worker nodes by running the following on each as root:

        kubeadm join 127.0.0.1:6443 --token «v» \\
        \t--discovery-token-ca-cert-hash sha256:«hash»
        """,
        v=v,
        hash=_hex(rng, 32),
    )
    return text, (v,)


@_shape("snmpwalk-v3-authpriv")
def _snmp(rng: random.Random) -> Built:
    a, b = _passphrase(rng, ":"), _punct(rng, 14, exclude="'\\")
    text = _fill(
        """
        $ snmpwalk -v3 -l authPriv -u monitor -a SHA -A '«a»' -x AES -X '«b»' 127.0.0.1 1.3.6.1.2.1.1
        SNMPv2-MIB::sysDescr.0 = STRING: Linux core-sw01 5.15.0-97-generic #107-Ubuntu SMP x86_64
        SNMPv2-MIB::sysObjectID.0 = OID: NET-SNMP-MIB::netSnmpAgentOIDs.10
        DISMAN-EVENT-MIB::sysUpTimeInstance = Timeticks: (81234567) 9 days, 9:39:05.67
        SNMPv2-MIB::sysContact.0 = STRING: noc@example.org
        SNMPv2-MIB::sysName.0 = STRING: core-sw01
        """,
        a=a,
        b=b,
    )
    return text, (a, b)


# Documents without a credential, full of text that looks like one.


def _pem_body(rng: random.Random, nbytes: int) -> str:
    body = base64.b64encode(rng.randbytes(nbytes)).decode()
    return "\n".join(body[i : i + 64] for i in range(0, len(body), 64))


@_clean("clean-x509-certificate-text")
def _clean_cert(rng: random.Random) -> str:
    serial = ":".join(_hex(rng, 1) for _ in range(16))
    return _fill(
        """
        $ openssl x509 -in shop.example.org.crt -noout -subject -issuer -serial -fingerprint -sha256
        subject=CN = shop.example.org
        issuer=C = US, O = Let's Encrypt, CN = R11
        serial=«serial_flat»
        sha256 Fingerprint=«fpr»
        $ cat shop.example.org.crt
        -----BEGIN CERTIFICATE-----
        MIIFBjCCA+6gAwIBAgIS«start»
        «body»
        -----END CERTIFICATE-----
        """,
        serial_flat=serial.replace(":", "").upper(),
        fpr=":".join(_hex(rng, 1).upper() for _ in range(32)),
        start=_chars(rng, _B64, 44),
        body=_pem_body(rng, 900),
    )


@_clean("clean-hashed-known-hosts")
def _clean_known_hosts(rng: random.Random) -> str:
    def line(kind: bytes, key: bytes, name: str) -> str:
        blob = base64.b64encode(_ssh_blob(kind, key)).decode()
        return f"|1|{_b64(rng, 20)}|{_b64(rng, 20)} {name} {blob}"

    return _fill(
        """
        $ ssh-keygen -H -f ~/.ssh/known_hosts
        /home/ada/.ssh/known_hosts updated.
        Original contents retained as /home/ada/.ssh/known_hosts.old
        WARNING: /home/ada/.ssh/known_hosts.old contains unhashed entries
        Delete this file to ensure privacy of hostnames
        $ cat ~/.ssh/known_hosts
        «l1»
        «l2»
        «l3»
        """,
        l1=line(b"ssh-ed25519", rng.randbytes(32), "ssh-ed25519"),
        l2=line(b"ecdsa-sha2-nistp256", b"\x04" + rng.randbytes(64), "ecdsa-sha2-nistp256"),
        l3=line(b"ssh-ed25519", rng.randbytes(32), "ssh-ed25519"),
    )


@_clean("clean-password-hash-column")
def _clean_hashes(rng: random.Random) -> str:
    bcrypt_alphabet = "./" + _ALNUM
    return _fill(
        """
        shop=> SELECT id, email, password FROM auth_user ORDER BY id LIMIT 3;
         id |        email        |                                          password
        ----+---------------------+---------------------------------------------------------------------------------------------
          1 | admin@example.org   | pbkdf2_sha256$600000$«salt»$«pbkdf2»
          2 | ada@example.org     | argon2$argon2id$v=19$m=102400,t=2,p=8$«asalt»$«argon»
          3 | legacy@example.org  | bcrypt_sha256$$2b$12$«bcrypt»
        (3 rows)
        """,
        salt=_chars(rng, _ALNUM, 22),
        pbkdf2=_b64(rng, 32),
        asalt=_b64(rng, 16).rstrip("="),
        argon=_b64(rng, 16).rstrip("="),
        bcrypt=_chars(rng, bcrypt_alphabet, 53),
    )


@_clean("clean-api-object-ids")
def _clean_ids(rng: random.Random) -> str:
    crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return _fill(
        """
        $ http :8000/api/v1/orders limit==2
        HTTP/1.1 200 OK
        Content-Type: application/json
        X-Request-Id: «rid»

        {
            "data": [
                {"id": "«u1»", "mongo_id": "«o1»", "event_id": "«ulid1»", "customer": "cus_«c1»", "total_cents": 12900},
                {"id": "«u2»", "mongo_id": "«o2»", "event_id": "«ulid2»", "customer": "cus_«c2»", "total_cents": 4500}
            ],
            "next_cursor": "«cursor»"
        }
        """,
        rid=_uuid(rng),
        u1=_uuid(rng),
        o1=_hex(rng, 12),
        ulid1="01J" + _chars(rng, crockford, 23),
        c1=_chars(rng, _ALNUM, 14),
        u2=_uuid(rng),
        o2=_hex(rng, 12),
        ulid2="01J" + _chars(rng, crockford, 23),
        c2=_chars(rng, _ALNUM, 14),
        cursor=base64.urlsafe_b64encode(json.dumps({"after": _uuid(rng)}).encode()).decode(),
    )


@_clean("clean-grpcurl-bytes-fields")
def _clean_grpcurl(rng: random.Random) -> str:
    return _fill(
        """
        $ grpcurl -plaintext -d '{"id": "«id»"}' 127.0.0.1:50051 media.v1.Thumbnails/Get
        {
          "id": "«id»",
          "mimeType": "image/webp",
          "width": 64,
          "height": 64,
          "data": "«data»",
          "blurhash": "L6PZfSi_.AyE_3t7t7R**0o#DgR4",
          "checksum": "«checksum»"
        }
        """,
        id=_uuid(rng),
        data=_b64(rng, 180),
        checksum=_b64(rng, 32),
    )


@_clean("clean-s3-ls-etags")
def _clean_s3(rng: random.Random) -> str:
    files = "\n".join(
        f"2026-03-05 0{i + 1}:12:4{i}   {rng.randint(10**6, 10**8):>10} part-{i:05d}-{_uuid(rng)}-c000.snappy.parquet"
        for i in range(4)
    )
    return _fill(
        """
        $ aws s3 ls s3://shop-datalake/events/dt=2026-03-05/
        «files»
        $ aws s3api head-object --bucket shop-datalake --key events/dt=2026-03-05/_SUCCESS --query '[ETag,VersionId]'
        [
            "\\"«etag»\\"",
            "«version»"
        ]
        """,
        files=files,
        etag=_hex(rng, 16),
        version=_chars(rng, _URLSAFE, 32),
    )


@_clean("clean-vite-build-hashes")
def _clean_vite(rng: random.Random) -> str:
    def asset(name: str, ext: str) -> str:
        return f"{name}-{_chars(rng, _URLSAFE, 8)}.{ext}"

    return _fill(
        """
        $ npm run build
        > storefront@2.14.0 build
        > vite build

        vite v5.1.4 building for production...
        ✓ 412 modules transformed.
        dist/index.html                   0.62 kB │ gzip:  0.38 kB
        dist/assets/«a1»     24.18 kB │ gzip:  5.02 kB
        dist/assets/«a2»    142.77 kB │ gzip: 46.10 kB
        dist/assets/«a3»     88.31 kB │ gzip: 29.54 kB
        ✓ built in 3.41s
        build id: «bid»
        """,
        a1=asset("index", "css"),
        a2=asset("index", "js"),
        a3=asset("vendor", "js"),
        bid=_hex(rng, 20),
    )


@_clean("clean-workflow-secret-references")
def _clean_workflow(rng: random.Random) -> str:
    return _fill(
        """
        name: publish
        on:
          push:
            tags: ["v*"]
        jobs:
          publish:
            runs-on: ubuntu-24.04
            steps:
              - uses: actions/checkout@«sha»
              - uses: docker/login-action@v3
                with:
                  username: ${{ vars.DOCKERHUB_USERNAME }}
                  password: ${{ secrets.DOCKERHUB_TOKEN }}
              - run: npm publish --provenance
                env:
                  NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}
        """,
        sha=_hex(rng, 20),
    )


@_clean("clean-env-example-placeholders")
def _clean_env_example(rng: random.Random) -> str:
    return _fill(
        """
        # .env.example -- copy to .env and fill in; never commit the real file
        APP_ENV=local
        APP_KEY=
        DATABASE_URL=postgres://shop:<password>@127.0.0.1:5432/shop
        STRIPE_SECRET_KEY=
        SENTRY_DSN=
        MAIL_PASSWORD=<redacted>
        OPENAI_API_KEY=your-api-key-here
        SESSION_COOKIE_SECURE=false
        CACHE_TTL_SECONDS=«ttl»
        """,
        ttl=str(rng.choice([60, 300, 900])),
    )


@_clean("clean-design-note-tokens")
def _clean_note(rng: random.Random) -> str:
    days = str(rng.choice([14, 30, 60]))
    return _fill(
        """
        ## ADR 0017: refresh tokens

        Access tokens stay short-lived (five minutes) and are never written to disk. Refresh tokens live «days»
        days; the server stores only their SHA-256 digest, so a database leak does not hand out sessions. A
        refresh token is single-use: presenting it twice revokes the whole family, which is how we notice a
        stolen token. API keys for partners are separate, scoped, and shown once at creation; support staff
        can never read a customer's password or key back, only reset it. Secrets in CI come from the vault
        through OIDC, so no long-lived credential sits in the repository settings.
        """,
        days=days,
    )


@_clean("clean-jwks-public-keys")
def _clean_jwks(rng: random.Random) -> str:
    def rsa_key() -> str:
        n = base64.urlsafe_b64encode(bytes([rng.randint(128, 255)]) + rng.randbytes(255)).decode().rstrip("=")
        return json.dumps(
            {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": _urlsafe(rng, 20), "n": n, "e": "AQAB"}
        )

    return _fill(
        """
        $ curl -s https://auth.example.org/.well-known/jwks.json | jq -c '.keys[]'
        «k1»
        «k2»
        """,
        k1=rsa_key(),
        k2=rsa_key(),
    )


@_clean("clean-pgp-public-key-block")
def _clean_pgp(rng: random.Random) -> str:
    return _fill(
        """
        $ gpg --armor --export release@example.org
        -----BEGIN PGP PUBLIC KEY BLOCK-----

        mDMEZe«start»
        «body»
        =«crc»
        -----END PGP PUBLIC KEY BLOCK-----
        $ gpg --fingerprint release@example.org
        pub   ed25519 2026-01-08 [SC] [expires: 2028-01-08]
              «fpr»
        uid           [ultimate] Example Release Signing <release@example.org>
        """,
        start=_chars(rng, _B64, 58),
        body=_pem_body(rng, 330),
        crc=_chars(rng, _B64, 4),
        fpr=" ".join(_hex(rng, 2).upper() for _ in range(10)),
    )


@_clean("clean-pip-requirements-hashes")
def _clean_requirements(rng: random.Random) -> str:
    return _fill(
        """
        # This file is autogenerated by pip-compile with Python 3.12
        #    pip-compile --generate-hashes requirements.in
        cryptography==42.0.5 \\
            --hash=sha256:«h1» \\
            --hash=sha256:«h2»
            # via pyjwt
        pyjwt[crypto]==2.8.0 \\
            --hash=sha256:«h3»
            # via -r requirements.in
        """,
        h1=_hex(rng, 32),
        h2=_hex(rng, 32),
        h3=_hex(rng, 32),
    )


@_clean("clean-git-lfs-pointers")
def _clean_lfs(rng: random.Random) -> str:
    return _fill(
        """
        $ git ls-tree HEAD assets/
        100644 blob «b1»	assets/hero.psd
        100644 blob «b2»	assets/keys-illustration.png
        $ git cat-file -p «b1»
        version https://git-lfs.github.com/spec/v1
        oid sha256:«oid»
        size «size»
        """,
        b1=_hex(rng, 20),
        b2=_hex(rng, 20),
        oid=_hex(rng, 32),
        size=str(rng.randint(10**6, 10**8)),
    )


@_clean("clean-ipfs-cids")
def _clean_ipfs(rng: random.Random) -> str:
    base32_lower = "abcdefghijklmnopqrstuvwxyz234567"
    root = "bafybei" + _chars(rng, base32_lower, 52)
    return _fill(
        """
        $ ipfs add -r --cid-version=1 site/
        added bafkrei«c1» site/index.html
        added bafkrei«c2» site/app.js
        added «root» site
         1.21 MiB / 1.21 MiB [==========================================] 100.00%
        $ ipfs name publish /ipfs/«root»
        Published to k51qzi5uqu5d«name»: /ipfs/«root»
        """,
        c1=_chars(rng, base32_lower, 52),
        c2=_chars(rng, base32_lower, 52),
        root=root,
        name=_chars(rng, _LOWER36, 50),
    )


@_clean("clean-training-token-metrics")
def _clean_training(rng: random.Random) -> str:
    step = rng.randint(1000, 9000)
    return _fill(
        """
        [rank0] step «step» | loss 2.3184 | lr 2.4e-04 | tokens_seen 1.31B | tokens/s 48211 | grad_norm 0.91
        [rank0] step «step2» | loss 2.3120 | lr 2.4e-04 | tokens_seen 1.31B | tokens/s 48502 | grad_norm 0.88
        [rank0] checkpoint saved: ckpt/run-«run»/step-«step2».safetensors (sha256 «sha»)
        [rank0] tokenizer: o200k_base, vocab 200019, pad_token_id 199999, eos_token_id 199999
        """,
        step=str(step),
        step2=str(step + 10),
        run=_hex(rng, 4),
        sha=_hex(rng, 32),
    )


SHAPES = tuple(name for name, _ in _CREDENTIAL_SHAPES)
CLEAN_SHAPES = tuple(name for name, _ in _CLEAN_SHAPES)


def documents(seed: int = SEED) -> list[Document]:
    """One document per credential shape with fresh values (seeded), then the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(name, *build(rng)) for name, build in _CREDENTIAL_SHAPES]
    return docs + [Document(name, build(rng)) for name, build in _CLEAN_SHAPES]
