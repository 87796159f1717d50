"""One settings module; every knob is an environment variable with a working local default."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from awp_site.db import data_dir, parse_database_url, start_embedded_server

BASE_DIR = Path(__file__).resolve().parent.parent
AWP_DATA_DIR = data_dir()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("AWP_DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    # A stable per-installation key kept beside the embedded data, so sessions survive restarts.
    key_file = AWP_DATA_DIR / "secret_key"
    if not key_file.exists():
        import secrets

        AWP_DATA_DIR.mkdir(parents=True, exist_ok=True)
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    SECRET_KEY = key_file.read_text().strip()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    # daphne's app only gives `runserver` its ASGI server, and loads Twisted and OpenSSL (~27 MB) into every process
    # that sets Django up: awp_serve's workers load daphne themselves (awp_site.daphne_worker), the rest need none.
    *(["daphne"] if sys.argv[1:2] == ["runserver"] else []),
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "channels",
    "django_htmx",
    "template_partials",
    "ninja",  # /api/v1/docs from the Swagger UI files in django-ninja's wheel (served here: offline, under the CSP)
    "experiments",
    "state",
    "memory",
    "memory.curation",
    "pool",
    "otel",
    "memory_mcp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "awp_site.middleware.UrlGuard",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "awp_site.middleware.ApiBodyGuard",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "awp_site.middleware.LoginRequiredEverywhere",
    "awp_site.middleware.SecurityHeaders",
    "awp_site.middleware.RedactionNet",
]

ROOT_URLCONF = "awp_site.urls"
ASGI_APPLICATION = "awp_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# Database: DATABASE_URL, else the embedded Postgres 16 + pgvector under AWP_DATA_DIR.
if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": parse_database_url(os.environ["DATABASE_URL"])}
    AWP_DATABASE_MODE = "external"
else:
    DATABASES = {"default": start_embedded_server(AWP_DATA_DIR)}
    AWP_DATABASE_MODE = "embedded"
# Our backend: Django's PostgreSQL backend whose pool answers at once when Postgres is down (awp_site/backends/postgresql).
DATABASES["default"]["ENGINE"] = "awp_site.backends.postgresql"
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A psycopg connection pool per process, on by default (AWP_DB_POOL_MAX=0 turns it off): connections are
# reused instead of opened per request (a new Postgres backend per request cost more than most pages), and
# under ASGI, where every concurrent request runs in its own thread, N concurrent page loads share
# AWP_DB_POOL_MAX connections and queue instead of opening N ("too many clients", tests/load).
AWP_DB_POOL_MAX = int(os.environ.get("AWP_DB_POOL_MAX", "8"))
# How long a request waits for a busy pool; a dead server is noticed within ~2 s (a 503, not this wait).
AWP_DB_POOL_WAIT = float(os.environ.get("AWP_DB_POOL_TIMEOUT", "60"))
if AWP_DB_POOL_MAX > 0:
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps connections; Django must hand them back per request
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        "pool": {"min_size": 1, "max_size": AWP_DB_POOL_MAX, "timeout": 2.0},
    }
    # With a pool, Django turns CONN_HEALTH_CHECKS into the pool's check on checkout: after a Postgres restart
    # the dead connections are replaced instead of failing the next requests.
else:
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("CONN_MAX_AGE", "0"))
# Concurrent test processes (helpers, CI retries) must never share a test database.
DATABASES["default"]["TEST"] = {"NAME": f"test_awp_{os.getpid()}"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The hot statements that prepare themselves on the server (awp_site.db.prepared_cursor: the one-event push); 0 for
# a pooler that cannot hold prepared statements (PgBouncer in transaction mode before 1.21).
AWP_PREPARED_STATEMENTS = os.environ.get("AWP_PREPARED_STATEMENTS", "1") != "0"
# A one-event push is answered on the worker's event loop, on one connection of its own per worker (one more than
# AWP_DB_POOL_MAX, opened at the first such push), instead of through a request thread and Django's stack
# (experiments.push_edge); AWP_PUSH_EDGE=0 sends every push through Django.
AWP_PUSH_EDGE = os.environ.get("AWP_PUSH_EDGE", "1") != "0"

# Channel layer: Redis when REDIS_URL is set, else the Postgres LISTEN/NOTIFY layer (crosses processes).
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": os.environ.get("AWP_CHANNEL_LAYER", "awp_site.channel_layer.PostgresNotifyLayer")}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "experiments:list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = AWP_DATA_DIR / "staticfiles"

# Security: the production posture is the default; AWP_DEBUG / AWP_INSECURE_HTTP relax it for local use.
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
_https = env_bool("AWP_HTTPS", False)
SESSION_COOKIE_SECURE = _https
CSRF_COOKIE_SECURE = _https
SECURE_SSL_REDIRECT = _https and env_bool("AWP_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = int(os.environ.get("AWP_HSTS_SECONDS", "31536000" if _https else "0"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _https
SECURE_HSTS_PRELOAD = _https
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("AWP_BEHIND_PROXY", False) else None
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("AWP_MAX_BODY_BYTES", str(32 * 1024 * 1024)))
# A body is read whole (request.body) anyway: spooling one over 2.5 MB to a temporary file first (Django's default
# under ASGI) only added a disk write and read to a 4.4 MB push (bench/ingest.py, agent-sized batches).
FILE_UPLOAD_MAX_MEMORY_SIZE = DATA_UPLOAD_MAX_MEMORY_SIZE

# Product knobs.
AWP_INGEST_MAX_BATCH = int(os.environ.get("AWP_INGEST_MAX_BATCH", "5000"))
# Bodies of batches accepted with `Prefer: respond-async` and not yet in the ledger (experiments.inbox), all
# experiments together; past it an accept answers 429 inbox_full with Retry-After.
AWP_INGEST_INBOX_BYTES = int(os.environ.get("AWP_INGEST_INBOX_BYTES", str(256 * 1024 * 1024)))
# OTLP exports handled at once per process; more answer 503 with Retry-After (exporters retry those).
AWP_OTEL_MAX_INFLIGHT = int(os.environ.get("AWP_OTEL_MAX_INFLIGHT", "16"))
# Memory work out as gen_ai.memory spans (otel/send.py): only when an OTLP endpoint is set, unless AWP_OTEL_SEND=off.
AWP_OTEL_SEND = os.environ.get("AWP_OTEL_SEND", "auto").lower() != "off" and bool(
    os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
)
AWP_OTEL_SERVICE_NAME = os.environ.get("OTEL_SERVICE_NAME", "awp-memory")
# Rate limits, per minute (0 turns one off); over a limit the answer is 429 with Retry-After (README, Rate limits).
AWP_RATE_LIMIT_TOKEN_PER_MINUTE = int(os.environ.get("AWP_RATE_LIMIT_TOKEN_PER_MINUTE", "3000"))  # requests of one token
AWP_RATE_LIMIT_ADDRESS_PER_MINUTE = int(os.environ.get("AWP_RATE_LIMIT_ADDRESS_PER_MINUTE", "6000"))  # bearer requests of one address
AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE = int(os.environ.get("AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE", "30"))  # bad tokens, one address
AWP_RATE_LIMIT_LOGIN_ADDRESS_PER_MINUTE = int(os.environ.get("AWP_RATE_LIMIT_LOGIN_ADDRESS_PER_MINUTE", "20"))
AWP_RATE_LIMIT_LOGIN_USER_PER_MINUTE = int(os.environ.get("AWP_RATE_LIMIT_LOGIN_USER_PER_MINUTE", "10"))
AWP_EMBEDDER = os.environ.get("AWP_EMBEDDER", "minilm")  # "minilm" | "none"
# "required" when an embedding worker (awp_embed --loop) serves this deployment (awp_serve sets it): a worker
# that stops is then reported by /healthz and semantic search answers 503 embedding_worker_down, rather than
# loading the model into a web process. "optional" (default): with no worker, a process loads the model itself.
AWP_EMBED_WORKER = os.environ.get("AWP_EMBED_WORKER", "optional")
# The model's weights: "int8" (default; 50 MB less in the model's process and a third faster, same recall@10 on the
# labelled set) or "float32" (the vectors of sentence-transformers). A change re-embeds every chunk.
AWP_EMBED_WEIGHTS = os.environ.get("AWP_EMBED_WEIGHTS", "int8")
# The worker starts the model's process when vectors are asked for and stops it after this many seconds without a
# request (0: keeps it): an install at rest does not hold the model (~155 MB); the next search waits ~2 s for it.
AWP_EMBED_IDLE_SECONDS = float(os.environ.get("AWP_EMBED_IDLE_SECONDS", "60"))
AWP_MEMORY_EXACT_THRESHOLD = int(os.environ.get("AWP_MEMORY_EXACT_THRESHOLD", "20000"))  # vectors per experiment
AWP_SNAPSHOT_EVERY = int(os.environ.get("AWP_SNAPSHOT_EVERY", "1000"))
# Credential nouns and their short forms; pass, pw, auth, session, cookie, otp, totp, pin, bearer and psk count only as a
# key's whole last word (state.sensitive.LAST_WORD_NAMES), so bypass, author and session_count stay readable.
AWP_SENSITIVE_FIELDS = env_list(
    "AWP_SENSITIVE_FIELDS",
    "api_key,apikey,password,passwd,passphrase,pwd,pass,pw,pin,otp,totp,secret,token,authorization,auth,bearer,"
    # Round 17 (second): password's other abbreviations (PeopleSoft's `UserPswd`, `ConnectPswd`; `psw`, `pword`).
    "pswd,psw,pword,"
    "credential,credentials,private_key,secret_key,access_key,signing_key,session_key,master_key,encryption_key,"
    "cookie,session,sessionid,dsn,conn_str,connection_string,"
    # A site's secret salt (Drupal's hash_salt, WordPress's AUTH_SALT): only as a key's whole last word.
    "salt,"
    # A credential's short form (`--auth-cred`, `db_creds`): only as a key's whole last word (not `credit`, `credo`).
    "cred,creds,"
    # What unlocks a wallet, a vault or an account when everything else is lost.
    "psk,pre_shared_key,preshared_key,mnemonic,pass_phrase,seed_phrase,recovery_phrase,recovery_key,unseal_phrase,unseal_key,"
    "recovery_code,recovery_codes,backup_code,backup_codes,"
    # The root password directive of slapd.conf and kickstart.
    "rootpw,"
    # The word for password in other languages (a label an agent copies from a foreign UI, chat or doc).
    "passwort,kennwort,contraseña,contrasena,senha,wachtwoord,mot_de_passe,motdepasse,hasło,haslo,heslo,salasana,"
    "lösenord,losenord,adgangskode,passord,jelszó,jelszo,şifre,parolă,пароль,密码,密碼,口令,パスワード,비밀번호,"
    "mật_khẩu,mat_khau,पासवर्ड,كلمة_المرور,كلمة_السر,סיסמה,รหัสผ่าน,kata_sandi,kata_laluan,رمز_عبور,পাসওয়ার্ড,"
    "parola,lozinka,лозинка,парола,geslo,κωδικός,κωδικός_πρόσβασης,slaptažodis,slaptazodis,parole,parool,lykilorð,"
    "fjalëkalimi,contrasenya,pasahitza,contrasinal,cyfrinair,nenosiri,wagwoord,şifrə,sifre,пароль_доступу,"
    "salasõna,jelszavad,hesla,pasvorto,பாஸ்வேர்ட்,கடவுச்சொல்,پاس_ورڈ,ពាក្យសម្ងាត់,ລະຫັດຜ່ານ,စကားဝှက်,პაროლი,գաղտնաբառ,"
    "құпия_сөз,нууц_үг,"
    "pasfhocal,facal_faire,ger_tremen,wachtwurd,teny_miafina,የይለፍ_ቃል,ਪਾਸਵਰਡ,పాస్‌వర్డ్,పాస్వర్డ్,මුරපදය,وشەی_نهێنی,پټنوم,"
    "сырсөз,рамз,"
    # Round 11: more languages' words, each as people write it (marks and joiners are read either way:
    # state.sensitive.unmarked) — Kannada, Marathi, Gujarati, Malayalam, Odia, Assamese, Tibetan, Dhivehi, Yiddish,
    # Uyghur/Uzbek/Turkmen, Persian, Sindhi, Somali, Yoruba, Igbo, Hausa, Zulu, Xhosa, Shona, Sesotho, Oromo,
    # Kinyarwanda, Occitan, Javanese, Sundanese, Hmong, Kurmanji, Luxembourgish, Faroese, Haitian, Maori, Greek,
    # Hebrew's and Arabic's other spellings, Korean's and Japanese's everyday words, French chat's `mdp`.
    "ಪಾಸ್ವರ್ಡ್,ಗುಪ್ತಪದ,संकेतशब्द,परवलीचा_शब्द,પાસવર્ડ,പാസ്വേഡ്,ପାସୱାର୍ଡ,পাছৱৰ্ড,གསང་ཚིག,ޕާސްވޯޑް,פאראל,"
    "پارول,parol,گذرواژه,کلمه_عبور,پاسورڊ,erayga_sirta,ereyga_sirta,furaha_sirta,oro_asina,oro_igbaniwole,"
    "okwuntughe,kalmar_sirri,kalmar_wucewa,iphasiwedi,igama_lokugqitha,pasiwedhi,phasewete,jecha_darbii,ijambobanga,"
    "senhal,tembung_sandhi,tembung_sandi,kecap_sandi,lo_lus_zais,şîfre,passwuert,loyniorð,modpas,kupuhipa,"
    "συνθηματικό,סיסמא,كلمة_مرور,باسورد,비번,暗証番号,合言葉,パスコード,mdp,"
    # Round 12: Chichewa, Tongan, Hawaiian, Guarani, Bashkir and Tatar, Tok Pisin, Kabyle (Latin and Tifinagh),
    # Cebuano, Tigrinya.
    "mawu_achinsinsi,lea_fakapulipuli,ʻōlelo_huna,ñe'ẽñemi,серһүҙ,серсүз,paswot,awal_uffir,ⴰⵡⴰⵍ_ⵓⴼⴼⵉⵔ,tago_nga_pulong,"
    "ቃለ_ምስጢር,"
    # Round 13: Swahili's words as written apart (`neno la siri`, beside `nenosiri`).
    "neno_la_siri,"
    # Round 14: European Portuguese `palavra-passe`, Irish `focal faire`, the definite forms of Norwegian's and
    # Danish's words (`passordet`, `adgangskoden`: an ASCII name takes no inflection) and Amharic's (`የይለፍ ቃሉ`).
    "palavra_passe,focal_faire,passordet,adgangskoden,የይለፍ_ቃሉ,"
    # Round 15: `passcode` (a one-time code read out, a phone's lock), Finnish's possessive forms (`salasanasi`: your
    # password; an ASCII name takes no inflection).
    "passcode,salasanasi,salasanani,salasananne,"
    # Round 17: Uzbek's possessive and object forms (`paroli`: its password, `parolingiz`, `parolni`), Haitian Creole's
    # `modpas`.
    "paroli,parolingiz,parolni,modpas,"
    # Round 15: Japanese chat's short `パス` (`パスは …です`).
    "パス,"
    # Round 12: "secret key" and "private key" in other languages (a comment or a label beside a signing key).
    "clave_secreta,clave_privada,chave_secreta,chave_privada,clé_secrète,clé_privée,chiave_segreta,chiave_privata,"
    "geheimer_schlüssel,privater_schlüssel,geheime_sleutel,secretsleutel,klucz_prywatny,tajny_klucz,gizli_anahtar,"
    "секретный_ключ,закрытый_ключ,秘密鍵,私钥,비밀키",
)
# Fail-closed secret detection (state/failclosed.py): besides what a credential word announces, every random-looking
# token in no harmless form (hash, id, UUID, public key, placeholder, …) is learnt as a secret at ingest.
AWP_SECRETS_FAIL_CLOSED = env_bool("AWP_SECRETS_FAIL_CLOSED", True)
AWP_DEMO_DIR = AWP_DATA_DIR / "demo"
# The shared knowledge pool (pool/): this deployment's own clawId must differ between bridged deployments.
AWP_POOL_CLAW_ID = os.environ.get("AWP_POOL_CLAW_ID") or f"deployment:{socket.gethostname()}"
AWP_POOL_GOVERNANCE = env_bool("AWP_POOL_GOVERNANCE", True)
AWP_POOL_PRESENCE_TTL = float(os.environ.get("AWP_POOL_PRESENCE_TTL", "120"))  # seconds
AWP_POOL_PROPOSAL_TTL = float(os.environ.get("AWP_POOL_PROPOSAL_TTL", str(7 * 24 * 3600)))  # seconds
AWP_POOL_NATS_URL = os.environ.get("AWP_POOL_NATS_URL", "nats://127.0.0.1:4222")
AWP_POOL_STREAM = os.environ.get("AWP_POOL_STREAM", "AWP_POOL")
AWP_POOL_SUBJECT = os.environ.get("AWP_POOL_SUBJECT", "awp.pool.envelopes")
# Reflections: an OpenAI-compatible chat endpoint, named as the AWP runtime names it; unset → reflection off.
LLM_BASE_URL = os.environ.get("LLM_BASE_URL", "").strip()
LLM_API_KEY = os.environ.get("LLM_API_KEY", "")
AWP_REFLECTION_MODEL = os.environ.get("AWP_REFLECTION_MODEL", "gpt-4o-mini")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"redact": {"()": "awp_site.logging.RedactingFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "stream": sys.stderr, "filters": ["redact"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("AWP_LOG_LEVEL", "WARNING")},
}
