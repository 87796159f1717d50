"""The TUNE part of the secret corpus: every credential word in every shape tools and agents write it.

`SHAPES` are templates with `{key}` (spelled as the shape spells names: `--db-password`, `DB_PASSWORD`,
`dbPassword`) and `{value}`; `CREDENTIAL_WORDS` are the sensitive names, `HARMLESS_WORDS` names that must not
be taken for one. The property tests draw (word, shape, value) from here; `documents(seed)` gives the corpus
the detector's figures are measured on.
"""

from __future__ import annotations

import random
import re
import string

from tests.corpus.secrets import Document

SEED = 1234

# Names an agent or a tool puts before a credential, in the default vocabulary's words.
CREDENTIAL_WORDS = (
    "password", "db_password", "passwd", "pwd", "pass", "passphrase", "pin", "secret", "client_secret",
    "secret_key", "access_key", "api_key", "apikey", "token", "access_token", "refresh_token", "auth_token",
    "auth", "authorization", "bearer", "cookie", "session_token", "session_key", "dsn", "conn_str",
    "connection_string", "private_key", "signing_key", "webhook_secret", "credential", "credentials", "otp",
    "master_key", "encryption_key", "sas_token", "x_api_key",
)  # fmt: skip
# Names that look like one and are not: their values stay readable.
HARMLESS_WORDS = (
    "max_tokens", "keyboard", "passed", "tokenizer", "author", "passenger", "session_count", "monkey", "keys",
    "passes", "compass", "bypass_cache", "secretary", "pinned", "tokens_used", "authored_by", "cookie_policy_url",
    "key_count", "pass_rate", "total_tokens", "surpass",
)  # fmt: skip


def spellings(word: str) -> dict[str, str]:
    """How shapes spell a name: snake, SCREAMING, kebab, camel and dotted."""
    parts = word.split("_")
    return {
        "snake": word, "upper": word.upper(), "kebab": "-".join(parts),
        "camel": parts[0] + "".join(p.capitalize() for p in parts[1:]), "dotted": ".".join(parts),
        "title": "-".join(p.capitalize() for p in parts),
    }  # fmt: skip


# (shape, template, spelling of the name). Values never hold a space, a quote, '<', '|' or '@'.
SHAPES: tuple[tuple[str, str, str], ...] = (
    ("cli-flag-space", "$ deploy-tool push --region eu-west-1 --{key} {value} --verbose\nPushed 3 images.", "kebab"),
    ("cli-flag-equals", "+ ./bin/migrate --{key}={value} --dry-run", "kebab"),
    ("cli-flag-last", "$ client login --user ops --{key} {value}", "kebab"),
    ("export", "$ export {key}={value}\n$ make release", "upper"),
    ("dotenv-quoted", 'APP_ENV=production\n{key}="{value}"\nDEBUG=false', "upper"),
    ("ini", "[main]\nhost = db.internal\n{key} = {value}\nretries = 3", "snake"),
    ("toml", '[tool.client]\nendpoint = "https://api.example.org"\n{key} = "{value}"', "snake"),
    ("yaml-map", "service:\n  name: billing\n  {key}: {value}\n  replicas: 2", "snake"),
    ("yaml-next-line", "service:\n  {key}:\n    {value}\n  replicas: 2", "snake"),
    ("properties", "app.name=billing\napp.{key}={value}", "dotted"),
    ("xml-element", "<config>\n  <name>billing</name>\n  <{key}>{value}</{key}>\n</config>", "camel"),
    ("xml-add-key-value", '<appSettings>\n  <add key="{key}" value="{value}" />\n</appSettings>', "camel"),
    ("html-input", '<form method="post"><input type="hidden" name="{key}" value="{value}"></form>', "snake"),
    ("html-meta", '<meta name="{key}" content="{value}">', "kebab"),
    ("markdown-table", "| name | value |\n|------|-------|\n| region | eu-west-1 |\n| {key} | {value} |", "snake"),
    ("markdown-bold", "Setup done.\n- **{key}**: `{value}`\n- **region**: eu-west-1", "snake"),
    ("http-header", "POST /v1/jobs HTTP/1.1\nHost: api.example.org\n{key}: {value}\nContent-Length: 0", "title"),
    ("query-string", "GET /v1/items?page=2&{key}={value}&sort=asc HTTP/1.1", "snake"),
    ("set-cookie", "HTTP/1.1 200 OK\nSet-Cookie: {key}={value}; Path=/; HttpOnly; Secure", "snake"),
    ("json", '{{"service": "billing", "{key}": "{value}", "retries": 3}}', "camel"),
    ("python-kwarg", "client = Client(host='api.example.org', {key}='{value}')", "snake"),
    ("name-then-value-line", "{key}\n{value}\n", "snake"),
    ("label-colon-next-line", "Here is the {key}:\n\n{value}\n\nKeep it safe.", "snake"),
    ("prose-is", "For the record, the {key} is {value} until Friday.", "snake"),
    ("ci-log", "2026-01-04T10:00:00.000Z ##[group]Run deploy\n2026-01-04T10:00:00.010Z   {key}: {value}\n##[endgroup]", "upper"),
    ("columns", "NAME            VALUE\nregion          eu-west-1\n{key}    {value}", "snake"),
)  # fmt: skip

# Shapes whose every value is a credential whatever its name (a cookie header): they have no harmless variant.
CREDENTIAL_CARRIERS = frozenset({"set-cookie"})
_ALPHABET = string.ascii_letters + string.digits


def random_value(rng: random.Random) -> str:
    """A credential as a generator makes one: letters and digits, sometimes - _ . ! $ inside."""
    n = rng.randint(12, 28)
    value = [rng.choice(_ALPHABET) for _ in range(n)]
    for _ in range(rng.randint(0, 2)):
        value[rng.randrange(1, n - 1)] = rng.choice("-_.!$")
    value[rng.randrange(n)] = rng.choice(string.digits)
    return "".join(value)


def render(template: str, spelling: str, word: str, value: str) -> str:
    """The shape's text for one name and one value."""
    key = spellings(word)[spelling]
    return template.replace("{key}", key).replace("{value}", value).replace("{{", "{").replace("}}", "}")


def clean_text(template: str, spelling: str, word: str) -> str:
    """The shape with a harmless name and a harmless value (a text without a secret)."""
    return render(template, spelling, word, "eu-west-1" if "value" in template else "")


def documents(seed: int = SEED, *, per_shape: int = 8) -> list[Document]:
    """`per_shape` documents per shape (words and values drawn with `seed`), and each shape with harmless names."""
    rng = random.Random(seed)
    docs = []
    for shape, template, spelling in SHAPES:
        for word in rng.sample(CREDENTIAL_WORDS, per_shape):
            value = random_value(rng)
            docs.append(Document(shape, render(template, spelling, word, value), (value,)))
        if shape in CREDENTIAL_CARRIERS:
            continue
        for word in rng.sample(HARMLESS_WORDS, 3):
            docs.append(Document(f"clean:{shape}", render(template, spelling, word, rng.choice(["billing", "42", "true", "eu-west-1"]))))
    return docs


assert all(re.search(r"\{key\}", t) and "{value}" in t for _, t, _ in SHAPES)
