"""The HOLDOUT part of the secret corpus: shapes and value forms the detector was not tuned on.

Written before the detector was tuned, with its own generator and seed; the tuning never read its figures.
Each call of `documents(seed)` gives one document per shape (plus documents without a secret).
"""

from __future__ import annotations

import base64
import random
import string

from tests.corpus.secrets import Document

SEED = 90210


def _passphrase(rng: random.Random) -> str:
    words = ["orbit", "walnut", "cinder", "harbor", "velvet", "quartz", "meadow", "signal", "lantern", "copper"]
    return "-".join(rng.sample(words, 3)) + f"-{rng.randint(10, 99)}"


def _b64(rng: random.Random) -> str:
    return base64.b64encode(rng.randbytes(24)).decode()


def _hex(rng: random.Random) -> str:
    return rng.randbytes(20).hex()


def _uuidish(rng: random.Random) -> str:
    h = rng.randbytes(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _symbolic(rng: random.Random) -> str:
    alphabet = string.ascii_letters + string.digits + "!%^*_+~"
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(10, 16)))
        if any(c.isdigit() for c in value) and any(c in "!%^*_+~" for c in value):
            return value


def _alnum(rng: random.Random, n: int = 20) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))


VALUE_FORMS = (_passphrase, _b64, _hex, _uuidish, _symbolic, _alnum)


def _shapes(rng: random.Random) -> list[tuple[str, str, tuple[str, ...]]]:
    v = [form(rng) for form in VALUE_FORMS for _ in range(6)]
    rng.shuffle(v)
    user, host = rng.choice(["deploy", "ci-bot", "svc_app"]), rng.choice(["db.internal", "10.0.4.12", "pg-main"])
    basic_pw = _alnum(rng, 14)
    basic = base64.b64encode(f"{user}:{basic_pw}".encode()).decode()
    return [
        ("libpq-conninfo", f'$ psql "host={host} port=5432 user={user} password={v[0]} dbname=orders"\npsql (16.2)\norders=>', (v[0],)),
        ("docker-login", f"$ docker login --username {user} --password {v[1]} registry.local:5000\nWARNING! Using --password via the CLI is insecure.\nLogin Succeeded", (v[1],)),
        ("mysqldump-p", f"+ mysqldump -u{user} -p{v[2]} --single-transaction shop > /backups/shop.sql", (v[2],)),
        ("curl-basic", f"> curl -sS -u {user}:{v[3]} https://{host}/v1/health\n{{\"ok\": true}}", (v[3],)),
        ("curl-header", f"curl -X POST -H 'X-Api-Key: {v[4]}' -H 'Content-Type: application/json' https://api.example.org/jobs", (v[4],)),
        ("git-remote", f"remote: Enumerating objects: 5, done.\n$ git clone https://oauth2:{v[5]}@gitlab.example.org/team/app.git", (v[5],)),
        ("dotenv-webhook", f"# payments\nSTRIPE_WEBHOOK_SIGNING_SECRET={v[6]}\nLOG_LEVEL=info", (v[6],)),
        ("netrc", f"machine api.example.org\n  login {user}\n  password {v[7]}\n", (v[7],)),
        ("npmrc", f"registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken={v[8]}\nalways-auth=true", (v[8],)),
        ("pypirc", f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {v[9]}\n", (v[9],)),
        ("appconfig-xml", f'<appSettings>\n  <add key="ClientSecret" value="{v[10]}" />\n  <add key="Region" value="eu-west-1" />\n</appSettings>', (v[10],)),
        ("maven-settings", f"<servers>\n  <server>\n    <id>nexus</id>\n    <username>{user}</username>\n    <password>{v[11]}</password>\n  </server>\n</servers>", (v[11],)),
        ("spring-properties", f"spring.datasource.url=jdbc:postgresql://{host}/app\nspring.datasource.username={user}\nspring.datasource.password={v[12]}", (v[12],)),
        ("toml-table", f'[service.auth]\nendpoint = "https://auth.example.org"\nclient_secret = "{v[13]}"\n', (v[13],)),
        ("compose-env-list", f"services:\n  db:\n    image: postgres:16\n    environment:\n      - POSTGRES_USER={user}\n      - POSTGRES_PASSWORD={v[14]}\n", (v[14],)),
        ("k8s-stringdata", f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: app\ntype: Opaque\nstringData:\n  db-password: {v[15]}\n", (v[15],)),
        ("html-password-input", f'<form method="post">\n<input type="text" name="login" value="{user}">\n<input type="password" name="pw" value="{v[16]}">\n</form>', (v[16],)),
        ("html-meta-csrf", f'<head>\n<meta name="csrf-token" content="{v[17]}">\n<title>Admin</title>\n</head>', (v[17],)),
        ("markdown-table-kv", f"| Variable | Value |\n|---|---|\n| REGION | eu-west-1 |\n| DB_PASS | {v[18]} |\n", (v[18],)),
        ("http-cookie", f"GET /dashboard HTTP/1.1\nHost: app.example.org\nCookie: theme=dark; sessionid={v[19]}\nAccept: text/html", (v[19],)),
        ("query-string", f'127.0.0.1 - - "GET /oauth/callback?state=xyz&access_token={v[20]} HTTP/1.1" 302 0', (v[20],)),
        ("nested-json", f'{{"provider": "okta", "credentials": {{"clientId": "app-42", "clientSecret": "{v[21]}"}}}}', (v[21],)),
        ("next-line-key", f"Your new personal access token (shown once):\n\n    {v[22]}\n\nStore it somewhere safe.", (v[22],)),
        ("prose-is", f"I reset it; the new admin password is {v[23]} and it expires in 90 days.", (v[23],)),
        ("basic-auth-header", f"Authorization: Basic {basic}\nUser-Agent: curl/8.5.0", (basic,)),
        ("env-prefix", f"$ PGPASSWORD={v[24]} pg_dump -h {host} -U {user} app > app.sql", (v[24],)),
        ("aws-configure", f"$ aws configure set aws_secret_access_key {v[25]} --profile prod", (v[25],)),
        ("kubectl-literal", f"kubectl create secret generic db-creds --from-literal=username={user} --from-literal=password={v[26]}", (v[26],)),
        ("openssl-pass", f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{v[27]}", (v[27],)),
        ("yaml-quoted-token", f"github:\n  api_token: \"{v[28]}\"\n  org: acme", (v[28],)),
        ("tool-args-repr", f"calling tool http_get(url='https://api.example.org', headers={{'Authorization': 'Token {v[29]}'}})", (v[29],)),
        ("ini-section", f"[database]\nhost = {host}\nuser = {user}\npasswd = {v[30]}\n", (v[30],)),
        ("ci-masked-log", f"Run ./deploy.sh\n  env:\n    DEPLOY_KEY: {v[31]}\n    TARGET: prod\nDeploying to prod...", (v[31],)),
        ("redis-cli", f"$ redis-cli -h {host} -a {v[32]} PING\nWarning: Using a password with '-a' option on the command line interface may not be safe.\nPONG", (v[32],)),
        ("header-bearer-lower", f"authorization: bearer {v[33]}\ncontent-length: 0", (v[33],)),
        ("python-kwargs", f"client = Client(base_url='https://api.example.org', api_secret='{v[34]}', timeout=30)", (v[34],)),
        ("sql-create-user", f"CREATE USER reporting WITH PASSWORD '{v[35]}';\nGRANT SELECT ON ALL TABLES IN SCHEMA public TO reporting;", (v[35],)),
    ]


CLEAN = (
    ("clean-cli", "$ psql -h db.internal -p 5432 -U app -d orders -c 'select count(*) from items'\n count\n-------\n   42"),
    ("clean-config", "[server]\nport = 8080\nworkers = 4\nmax_tokens = 2048\nkeyboard_layout = us\n"),
    ("clean-html", '<form><input type="text" name="author" value="Ada Lovelace"><input name="passenger_count" value="3"></form>'),
    ("clean-markdown", "| metric | value |\n|---|---|\n| tests passed | 118 |\n| session_count | 7 |\n| tokenizer | cl100k_base |"),
    ("clean-log", "2026-01-04T10:00:01Z INFO passed 118 tests in 4.2s (session 7, author=ada)\nGET /api/v1/items?page=2&limit=50 200"),
    ("clean-prose", "The password policy requires twelve characters; rotate the token every 90 days and never share secrets in chat."),
)


def documents(seed: int = SEED) -> list[Document]:
    """One document per shape with fresh values (seeded), and the documents without a secret."""
    rng = random.Random(seed)
    docs = [Document(shape, text, planted) for shape, text, planted in _shapes(rng)]
    return docs + [Document(shape, text) for shape, text in CLEAN]
