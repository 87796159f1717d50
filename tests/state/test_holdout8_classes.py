"""Round 10's detector classes (HOLDOUT8 spent), both ways: what a credential is for between its name and `is`
(in other languages too, a name inflected in another script), a COBOL VALUE clause, a passphrase of joined words,
a value piped into a command that stores it as a secret, a connection's password as its third argument, what a
browser test types into a credential field, a label written as UTF-8 read as Latin-1, words a speaker says how to
type; and look-alikes never learnt (a tool's mark for a dropped value, a command's output or a run-time read, a
YAML tag, a size, an IPv6 address, age recipients, publishable keys, trace state, an Ansible vault's body, Pulumi
ciphertext, a digest folder in a URL, a schema's description, stars after a name written `__token__`).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.detection import detect_secrets
from state.failclosed import harmless_value
from state.freetext import unmojibaked
from state.redaction import KnownSecrets, may_hold_announced, redact_text, sensitive_set
from state.sensitive import is_sensitive

SENSITIVE = sensitive_set(
    "api_key,password,passwd,passphrase,pwd,pass,pw,secret,token,auth,session,credential,private_key,"
    "parole,nenosiri,lozinka,лозинка,парола,գաղտնաբառ,slaptažodis,geslo,cyfrinair,fjalëkalimi,kata_laluan".split(
        ","
    )
)


def _learnt_and_masked(text: str, values: tuple[str, ...]) -> None:
    found = detect_secrets(text, SENSITIVE, fail_closed=True)
    masked = redact_text(text, SENSITIVE, KnownSecrets.of(found))
    for value in values:
        assert value not in masked, (value, found)


FOUND = {
    "what the password is for, then is": (
        "The password for the office wifi is Heron7731 ok\n",
        ("Heron7731",),
    ),
    "what it is for, quoted": ("the token of the staging bot is 'q7Rt-2mXz-Lp9w'.\n", ("q7Rt-2mXz-Lp9w",)),
    "Latvian ir": ("Servera parole ir Krasts2041! — neaizmirsti.\n", ("Krasts2041!",)),
    "Swahili ni, words between": ("Nenosiri lako jipya ni Mvua88Pwani. Usimwambie mtu.\n", ("Mvua88Pwani",)),
    "Tagalog ay": ("yung password ng router sa opisina ay Kalaw9023 ha\n", ("Kalaw9023",)),
    "Lithuanian yra": ("Naujas slaptažodis yra Ruduo4417 nuo šiandien\n", ("Ruduo4417",)),
    "Welsh yw": ("Y cyfrinair newydd yw Afon5512x heddiw\n", ("Afon5512x",)),
    "Albanian është": ("Fjalëkalimi i ri është Lule7734z sot\n", ("Lule7734z",)),
    "Malay adalah": ("Kata laluan sementara adalah Pantai2290x ya\n", ("Pantai2290x",)),
    "Armenian article and ՝": ("Սերվերի գաղտնաբառը՝ Qw7mR2xK9pLt\n", ("Qw7mR2xK9pLt",)),
    "Bulgarian article and е": ("Паролата е Зора7712x за днес\n", ("Зора7712x",)),
    "Serbian је": ("Лозинка за рутер је Sever8832x хвала\n", ("Sever8832x",)),
    "COBOL VALUE clause": ("       01  WS-API-TOKEN    PIC X(24) VALUE 'Tq9ZmR4xLw2K'.\n", ("Tq9ZmR4xLw2K",)),
    "COBOL PICTURE IS": ('       05  DB-PASSWD  PICTURE X(12) VALUE "Mx7Kq2Rz".\n', ("Mx7Kq2Rz",)),
    "a passphrase of dashed words": (
        "and its passphrase is walnut-otter-saffron-kettle.\n",
        ("walnut-otter-saffron-kettle",),
    ),
    "a passphrase of dotted words": (
        "passphrase: ember.quartz.violet.harbor.fig\n",
        ("ember.quartz.violet.harbor.fig",),
    ),
    "echo into wrangler": (
        'echo "MX_9kQ2-7731-ab44f0c2" | npx wrangler secret put API_TOKEN\n',
        ("MX_9kQ2-7731-ab44f0c2",),
    ),
    "printf into gh": (
        "printf '%s' 'Zr8-Lm2q-Tw9x' | gh secret set DEPLOY_KEY --repo acme/app\n",
        ("Zr8-Lm2q-Tw9x",),
    ),
    "echo -n into fly": ("echo -n Kq7mZ2xR9tLw | fly secrets set --stage SMTP_PASS=-\n", ("Kq7mZ2xR9tLw",)),
    "echo into docker login": (
        "echo 'Pw8-zXq2-mK7r' | docker login ghcr.io -u ci --password-stdin\n",
        ("Pw8-zXq2-mK7r",),
    ),
    "Perl DBI with an escaped quote": (
        "my $dbh = DBI->connect(\n  'dbi:mysql:shop', 'report',\n  'Robin\\'s-nest-2044',\n  { RaiseError => 1 });\n",
        ("Robin\\'s-nest-2044",),
    ),
    "PHP PDO": ("$db = new \\PDO($dsn, 'shop', \"Vx9!mQ2zR\");\n", ("Vx9!mQ2zR",)),
    "PHP mysqli": ("$link = mysqli_connect('db.internal', 'app', 'Lm4#qZ8xT', 'orders');\n", ("Lm4#qZ8xT",)),
    "Selenium send_keys": (
        'driver.find_element(By.NAME, "user_password").send_keys("Tz8mQ2xKp4")\n',
        ("Tz8mQ2xKp4",),
    ),
    "Java sendKeys": ('driver.findElement(By.id("password")).sendKeys("Hq2!vL9m");\n', ("Hq2!vL9m",)),
    "Playwright getByLabel fill": ("await page.getByLabel('Password').fill('Rw7zK2mQx');\n", ("Rw7zK2mQx",)),
    "Playwright fill with a selector": ('await page.fill("#pwd", "Jn5xQ8mZr");\n', ("Jn5xQ8mZr",)),
    "Cypress type": ("cy.get('input[name=password]').type('Bx4mK9qZw')\n", ("Bx4mK9qZw",)),
    "WebdriverIO setValue": ("await $('#api-token').setValue('Pz7qL2mXk9')\n", ("Pz7qL2mXk9",)),
    "mojibake as JSON escapes": (
        '{"content": "\\u00d0\\u009b\\u00d0\\u00be\\u00d0\\u00b7\\u00d0\\u00b8\\u00d0\\u00bd\\u00d0\\u00ba\\u00d0\\u00b0 '
        'je Kq7mZ2xR (ok)"}',
        ("Kq7mZ2xR",),
    ),
    "mojibake as characters": ("Ð\x9bÐ¾Ð·Ð¸Ð½ÐºÐ° je Wn4qX8zL\n", ("Wn4qX8zL",)),
    "spoken words, how to type them": (
        "the password is copper lantern meadow, all lower case with spaces, like that.\n",
        ("copper lantern meadow",),
    ),
    "spoken words, no spaces": (
        "The wifi password is tidal ember — no spaces, lower case.\n",
        ("tidal ember",),
    ),
}


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_round_ten_classes_are_learnt_and_masked(text, values):
    _learnt_and_masked(text, values)


@pytest.mark.parametrize(("text", "values"), FOUND.values(), ids=FOUND.keys())
def test_the_gate_opens_for_each_class(text, values):
    assert may_hold_announced(text, SENSITIVE) or detect_secrets(text, SENSITIVE, fail_closed=False) == set()


NOT_FOUND = {
    "what it is for, then prose": "The password for the admin account is stored in the vault.\n",
    "what it is for, then a word": "the token for this request is invalid\n",
    "SQL session setting": "ALTER SESSION SET NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS'\n",
    "COBOL item without a credential": "       01  WS-CUSTOMER-NAME  PIC X(20) VALUE 'Acme Corp 2024'.\n",
    "two dashed words": "the passphrase is mango-lemur.\n",
    "dashed prose": "the passphrase is stored-in-the-vault.\n",
    "echo of a variable": 'echo "$CF_TOKEN" | npx wrangler secret put CF_TOKEN\n',
    "echo into grep": "echo Xk3jdPud59 | grep secret\n",
    "connect with variables": "my $dbh = DBI->connect($dsn, $user, $password);\n",
    "typing into a search field": "await page.getByLabel('Search').fill('reset password 2fa');\n",
    "typing an env read": "await page.getByLabel('Password').fill(process.env.E2E_PASSWORD!);\n",
    "typing an e-mail": 'driver.find_element(By.ID, "email").send_keys("ana@example.org")\n',
    "a policy about case": "The password policy says: use lower case, upper case and digits\n",
    "the rule's words, no value": "the password is required, all lower case please\n",
    "a command's output": 'export CLOUDSMITH_API_KEY="$(op read op://Release/cloudsmith/credential)"\n',
    "a command's output, unquoted": "export API_TOKEN=$(pass show ci/api-token)\n",
    "process.env": "const client = new Client({ token: process.env.SLACK_BOT_TOKEN! });\n",
    "window global": "stripe.elements({ clientSecret: window.__CHECKOUT__.clientSecret });\n",
    "ENV subscript": "config.api_key = ENV['BILLING_API_KEY']\n",
    "System.getenv": 'String password = System.getenv("DB_PASSWORD");\n',
    "schema description": (
        'log: {"properties":{"password_env":{"type":"string","description":"name of the env var holding the password"}}}\n'
    ),
    "masked URL password": "Looking in indexes: https://__token__:****@gitlab.example.com/api/v4/projects/9/packages/pypi/simple\n",
    "secret sizes": "Data\n====\nrabbitmq-password:  24 bytes\nerlang-cookie:      32 bytes\ntls.key:            1.7 KiB\n",
    "tracestate": "< tracestate: rojo=00f067aa0ba902b7,congo=t61rcWkgMzE4xQ\n",
    "age recipients": "# recipients\nage1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n",
    "IPv6 address": '"TailscaleIPs": ["100.64.0.7", "fd7a:115c:a1e0::ab12:4843"]\n',
    "Stripe publishable key": "const stripe = Stripe('pk_live_51HxQ2kLm9Zr7Tw4Yp8Vb3Nc6Xd1Fg5Hj0Kq2Mz4Rt7Wy9Ua');\n",
    "Sentry filtered": '"headers": {"Authorization": "[Filtered]", "Cookie": "[Filtered]"}\n',
    "Ansible vault body": (
        "db_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n"
        "          3862386339386163396631323633366232306564316461653036653236323865\n"
        "          6232633363653536366233396634643262353762376538640a323361663730\n"
        "db_user: app\n"
    ),
    "Pulumi ciphertext": (
        "encryptionsalt: v1:Ab3dEf9hIj0=:v1:Kl2mNo5pQr8s:Tu1vWx4yZa7bCd0eFg3hIj==\nconfig:\n  shop:apiToken:\n"
        "    secure: v1:Mn8bVc2xZl5kJh7gFd1sAp4oIu9yTr3eWq6/Lk0jHg+Fd2sA\n"
    ),
    "a digest folder in a URL": (
        "  Downloading https://pkgs.example.com/files/3f786850e387550fdab836ed7e6dc881de23001b8a1c2f0e5b7d9c4a6e2f1b0d/"
        "acme_tools-1.2.0-py3-none-any.whl (12 kB)\n"
    ),
    "a Vault accessor": "$ vault token lookup -accessor Hn2bQ8xLm4Kz7Rt1Wp5Yc9Vd\n",
}


@pytest.mark.parametrize("text", NOT_FOUND.values(), ids=NOT_FOUND.keys())
def test_round_ten_look_alikes_teach_nothing(text):
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


@pytest.mark.parametrize(
    "value",
    [
        "$(op read op://Prod/db/password)",
        "`pass show ci/token`",
        "process.env.DB_PASSWORD",
        "import.meta.env.VITE_API_KEY",
        "ENV['API_TOKEN']",
        "os.environ['API_TOKEN']",
        'System.getenv("TOKEN")',
        "!vault |",
        "!secret db_password",
        "24 bytes",
        "1.7 KiB",
        "[Filtered]",
        "[REDACTED]",
        "v1:XedgBFvfP4N7kIP7+j7inUey/hiPYLejRkELMi9PQyPp",
    ],
)
def test_references_marks_and_ciphertext_are_never_learnt(value):
    assert harmless_value(value, SENSITIVE)


@pytest.mark.parametrize(
    "value", ["$(Kq7!mZ2x", "Filtered9!x", "24bytesQz!", "v1:secret-Tw9xLm2", "!Vault2024x", "process-Env9!"]
)
def test_credentials_that_resemble_them_are_still_learnt(value):
    assert not harmless_value(value, SENSITIVE)
    assert value in detect_secrets(f"password: {value}\n", SENSITIVE)


def test_a_name_inflected_in_another_script_is_sensitive():
    assert is_sensitive("գաղտնաբառը", SENSITIVE) and is_sensitive("паролата", SENSITIVE)
    assert not is_sensitive("parolesque", SENSITIVE) and not is_sensitive("passwordless", SENSITIVE)


def test_mojibake_is_read_again_as_utf8_and_plain_text_is_left_alone():
    assert unmojibaked("Ð\x9bÐ¾Ð·Ð¸Ð½ÐºÐ°") == "Лозинка"
    assert unmojibaked("\\u00d0\\u009b\\u00d0\\u00be") == "Ло"
    assert unmojibaked("café, naïve, plain ASCII") is None
    assert unmojibaked("plain") is None


def test_a_stripe_publishable_key_under_a_secret_name_is_still_learnt():
    value = "pk_live_51HxQ2kLm9Zr7Tw4Yp8Vb3Nc6Xd1Fg5Hj0Kq2Mz4Rt7Wy9Ua"
    assert value in detect_secrets(f"STRIPE_SECRET_KEY={value}\n", SENSITIVE)


_LOCATORS = ("#password", "input[name=pwd]", "#login_password", "[data-test=api-token]", "#secret")
_CALLS = (
    'driver.find_element(By.CSS_SELECTOR, "{loc}").send_keys("{value}")',
    "await page.locator('{loc}').fill('{value}')",
    "await page.fill('{loc}', '{value}')",
    "cy.get('{loc}').type('{value}')",
    "await $('{loc}').setValue('{value}')",
    "await page.locator('{loc}').pressSequentially('{value}')",
)
_VALUE = st.text(
    alphabet="abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#", min_size=8, max_size=24
).filter(lambda v: any(c.isdigit() for c in v) and any(c.isalpha() for c in v))


@settings(max_examples=60, deadline=None)
@given(loc=st.sampled_from(_LOCATORS), call=st.sampled_from(_CALLS), value=_VALUE)
def test_anything_typed_into_a_credential_field_is_learnt(loc, call, value):
    _learnt_and_masked(call.format(loc=loc, value=value) + "\n", (value,))


@settings(max_examples=60, deadline=None)
@given(
    loc=st.sampled_from(("#email", "input[name=q]", "#search", "[data-test=username]")),
    call=st.sampled_from(_CALLS),
)
def test_what_is_typed_into_another_field_is_left(loc, call):
    text = call.format(loc=loc, value="ana lima") + "\n"
    assert {v for v in detect_secrets(text, SENSITIVE, fail_closed=True) if len(v) >= 6} == set()


_QUALIFIER = st.lists(
    st.sampled_from(["for", "the", "office", "wifi", "of", "router", "ng", "sa", "bahay", "za", "la"]),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(["password", "Password", "parole", "nenosiri", "лозинка", "geslo"]),
    words=_QUALIFIER,
    copula=st.sampled_from(["is", "ir", "ni", "ay", "је", "je", "yra"]),
    value=_VALUE,
)
def test_what_a_credential_is_for_then_is_then_its_value(name, words, copula, value):
    _learnt_and_masked(f"{name} {' '.join(words)} {copula} {value} ok\n", (value,))


@settings(max_examples=60, deadline=None)
@given(
    command=st.sampled_from(
        [
            "npx wrangler secret put API_TOKEN",
            "gh secret set DEPLOY_KEY",
            "docker login -u ci --password-stdin ghcr.io",
            "vercel env add API_KEY production",
            "fly secrets set KEY=-",
            "docker secret create db_pw -",
        ]
    ),
    quote=st.sampled_from(["", "'", '"']),
    value=_VALUE.filter(lambda v: "!" not in v),
)
def test_a_value_piped_into_a_secret_store_is_learnt(command, quote, value):
    _learnt_and_masked(f"$ echo {quote}{value}{quote} | {command}\n", (value,))
