"""Sensitive names and maskable values, pure: which keys hold a credential, which values are worth masking.

A key is sensitive when one of its words is or ends in a sensitive name (`openai_api_key`, `PGPASSWORD`,
`dbPassword` yes; `max_tokens`, `tokenizer` no). The short or common nouns in `LAST_WORD_NAMES` (`pass`, `pw`,
`auth`, `session`, `cookie`, `otp`, `totp`, `pin`, `bearer`, `dsn`, `psk`, `salt`, `cred`, `creds`) count only as the key's whole last word: `db_pass`,
`X-Auth`, `user_session` are sensitive, `bypass`, `passed`, `author`, `session_count`, `cookie_policy` are not.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

try:  # Aho-Corasick: one pass over a text whatever the number of needles
    import ahocorasick
except ImportError:  # pragma: no cover - str.find per needle does the same, slower
    ahocorasick = None
try:  # the same in Rust, 2-5x faster per character (the gate reads every text that enters)
    import ahocorasick_rs
except ImportError:  # pragma: no cover - pyahocorasick stands in
    ahocorasick_rs = None


class Needles:
    """Literal strings, each with a value, found in one pass: `iter(text)` yields (index of the last character,
    value) for every occurrence, overlapping ones too, by end (pyahocorasick's `Automaton.iter`). Rust's
    aho-corasick when it is installed (the values kept beside it), else pyahocorasick's automaton."""

    __slots__ = ("_automaton", "_values")

    def __init__(self, items: Iterable[tuple[str, Any]], *, dfa: bool = False) -> None:
        pairs = dict(items)
        if ahocorasick_rs is not None:
            # `dfa`: the fastest search, for a fixed vocabulary of a few hundred needles (the names' spellings, the
            # forms' signs: 150 → 155 ms per 5,000 agent events where the default automaton took 177 once the names
            # grew); not for an experiment's known secrets, whose number has no bound (a DFA's size grows with it).
            implementation = ahocorasick_rs.Implementation.DFA if dfa else None
            automaton = ahocorasick_rs.AhoCorasick(list(pairs), implementation=implementation)
            self._automaton, self._values = automaton, list(pairs.values())
        else:
            self._automaton, self._values = ahocorasick.Automaton(), None
            for word, value in pairs.items():
                self._automaton.add_word(word, value)
            self._automaton.make_automaton()

    def iter(self, text: str) -> Iterable[tuple[int, Any]]:
        values = self._values
        if values is None:
            return self._automaton.iter(text)
        try:
            found = self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:  # a lone surrogate (a file read with surrogateescape): U+FFFD keeps every offset
            found = self._automaton.find_matches_as_indexes(_SURROGATE.sub("\ufffd", text), overlapping=True)
        return [(end - 1, values[index]) for index, _, end in found]


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_needles() -> bool:
    """Whether an Aho-Corasick implementation is installed (without one, substring tests stand in)."""
    return ahocorasick_rs is not None or ahocorasick is not None

REDACTED = "[redacted]"
# What an armored block's label says when its body is a secret (`-----BEGIN … PRIVATE KEY-----`, NATS's `USER NKEY
# SEED`, `… SECRET KEY`); any other block (a certificate, a public key, a signature) holds nothing secret.
SECRET_ARMOR = ("PRIVATE", "SEED", "SECRET")
# Shorter values (and true/false/null/numbers) are never masked by value: a `0` or `true` is not a secret, and
# masking it everywhere would wreck every page. Key and pattern masks still apply to them.
MIN_SECRET_LENGTH = 6
# Longer values are masked by key where they stand, not looked for elsewhere (a whole document is not a secret).
MAX_SECRET_LENGTH = 4096
# Names that are sensitive only as a key's whole last word (as a part of other words they mean something else).
LAST_WORD_NAMES = frozenset(
    {"pass", "pw", "auth", "session", "sessionid", "cookie", "otp", "totp", "pin", "bearer", "dsn", "psk", "salt", "cred", "creds"}
)
# Names that announce a value without making a key sensitive (`DEPLOY_KEY: …`, "the key for staging: …"): what
# they name is a credential only when it looks random (`state.freetext.looks_random`); a cache key, a primary key
# or `key: user.name` is not.
ANNOUNCING_NAMES = frozenset({"key", "sig", "signature"})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@lru_cache(maxsize=8192)
def normalise_key(key: str) -> str:
    """apiKey, Api-Key and API_KEY all become api_key."""
    return _CAMEL.sub("_", key).lower().replace("-", "_").replace(" ", "_").replace(".", "_")


# A name in another script may end in an inflection of up to four letters (the article of Armenian `գաղտնաբառը`,
# Bulgarian `паролата`; the possessive of Azerbaijani `şifrəniz`, Kyrgyz `сырсөзүңүз`).
_INFLECTION = r"[^\W\d_]{0,4}"


# Class (round 13): Hebrew's proclitics, one or two of the letters for `the`, `and`, `to`, `in`, `that`, `from`, `as`.
_HEBREW_PREFIX = "[הוכלבשמ]{0,2}"


def _prefix(name: str) -> str:
    return _HEBREW_PREFIX if name[:1] and "\u05d0" <= name[0] <= "\u05ea" else ""


@lru_cache(maxsize=64)
def _word_matcher(sensitive: frozenset[str]) -> re.Pattern[str] | None:
    if not sensitive:
        return None
    # A word that is or ends in a sensitive name: db_password, PGPASSWORD, githubToken; not max_tokens, tokenizer.
    # A last-word name is the key's whole last word: db_pass, x_auth; not bypass, pass_rate, author.
    ordered = sorted(sensitive, key=len, reverse=True)
    # A name may carry an index of one or two digits (`Password1`, `MqttPassword2`).
    # A name in another script may end in an inflection (`գաղտնաբառը`, `паролата`: the article of Armenian, Bulgarian).
    # A Hebrew name may carry the letters Hebrew writes glued before a word (`הסיסמה`: the; `ולסיסמה`: and to).
    words = [f"[_a-z0-9]{_prefix(w)}{re.escape(w)}{'' if w.isascii() else _INFLECTION}(?:\\d{{1,2}})?_" for w in ordered if w not in LAST_WORD_NAMES]
    words += [f"_{re.escape(w)}(?:\\d{{1,2}})?_$" for w in ordered if w in LAST_WORD_NAMES]
    return re.compile("|".join(words))


@lru_cache(maxsize=16384)
def is_sensitive(key: str, sensitive: frozenset[str]) -> bool:
    """A key is sensitive when one of its words is or ends in a sensitive name: openai_api_key, PGPASSWORD yes, max_tokens no."""
    matcher = _word_matcher(sensitive)
    if matcher is None:
        return False
    # A Kubernetes-style key prefixed by a domain (`authorization.k8s.io/reason`, `vault.hashicorp.com/role`): the
    # domain is a group, the name after it says what the value is.
    prefixed = _DOMAIN_PREFIX.match(key)
    name = key[prefixed.end() :] if prefixed else key
    if matcher.search(f"_{normalise_key(name)}_") is not None:
        return True
    # Class (round 13): a credential word written with a capital inside it (`PassWord`, `PassWd`, `dbPassWord`): the
    # split at a capital cut one word, not two; read once more with the capitals inside words joined (not against
    # the last-word names: `SessionId` stays `session_id`).
    if _INNER_CAPITAL.search(name) is None:
        return False
    joined = _joined_matcher(sensitive)
    return joined is not None and joined.search(f"_{normalise_key(_INNER_CAPITAL.sub(_lowered, name))}_") is not None


_INNER_CAPITAL = re.compile(r"(?<=[a-z])[A-Z](?=[a-z])")


def _lowered(match: re.Match[str]) -> str:
    return match.group().lower()


@lru_cache(maxsize=64)
def _joined_matcher(sensitive: frozenset[str]) -> re.Pattern[str] | None:
    return _word_matcher(sensitive - LAST_WORD_NAMES) if sensitive - LAST_WORD_NAMES else None


# Class (round 12): a key that names a password's hash (`password_hash`, `Password_PBKDF2`, `pwdSha256`, `hashed_password`)
# holds the hash, not the password: masked where it stands, never learnt as a secret.
_HASH_OF_PASSWORD = re.compile(
    r"(?:^|[^a-z0-9])(?:(?:password|passwd|pass|pw|pwd|passphrase)_(?:hash|hashed|digest|pbkdf2\w*|bcrypt|scrypt|argon2\w*|sha\d*|md5|crypt)"
    r"|hashed_(?:password|passwd|pass|pw|pwd|passphrase))$"
)


# Class (round 15): a key that names a property of the credential, or the object that holds it, not the credential: its
# encryption method, policy or requirements (`password_encryption = scram-sha-256`, `password_requirements`), where
# it is kept (git's `credentialStore = secretservice`, `credential_helper`), a Kubernetes Secret's own name (a Helm
# chart's `existingSecret: keycloak-db`, `secretName`, `secretRef`): masked where it stands, never learnt.
_ABOUT_A_CREDENTIAL = re.compile(
    r"(?:^|_)(?:(?:password|passwd|pass|pw|pwd|credential|credentials|secret|token)_(?:encryption|algorithm|method|scheme"
    r"|policy|requirements|store|storage|helper|provider|backend)|existing_secret|secret_name|secret_ref"
    # Round 16: where it is kept, as an address (Azure's `SecretUri`, `secret_url`, AWS's `secret_arn`, `secret_path`).
    r"|secret_(?:uri|url|arn|path|version)|vault_(?:uri|url)"
    # Round 17: where it is fetched from (Kafka's `sasl.oauthbearer.token.endpoint.url`, `token_url`, `token_endpoint`).
    r"|(?:token|credential|credentials|secret)_(?:endpoint|url|uri)(?:_(?:url|uri))?)$"
)


def names_a_hash(key: str) -> bool:
    """Whether a key names the hash of a password (see _HASH_OF_PASSWORD) or a property of a credential, or the object
    holding it (see _ABOUT_A_CREDENTIAL): what stands under it is masked, never learnt."""
    normal = normalise_key(key)
    return _HASH_OF_PASSWORD.search(normal) is not None or _ABOUT_A_CREDENTIAL.search(normal) is not None


_DOMAIN_PREFIX = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)+/(?=[^/]+$)")


# Class: a credential word written with marks its writer may add or leave out — tone and accent marks on Latin letters
# (Yoruba `ọ̀rọ̀ aṣínà`, Kurmanji `şîfre`), Hebrew points (Yiddish `פּאַראָל`), a zero-width joiner or non-joiner inside
# an Indic word (Kannada `ಪಾಸ್‌ವರ್ಡ್`), a soft hyphen, a glottal stop written as a modifier letter (Hawaiian's ʻokina,
# `ʻŌlelo huna`, often left out). The text is read once more without them, against the names without them
# (`unmarked`, `unmarked_names`).
_MARKED = re.compile("[\u00c0-\u024f\u1e00-\u1eff\u0300-\u036f\u0591-\u05c7\u00ad\u200b-\u200d\u2060\ufeff\u02bb\u02bc]")


def _unmark(match: re.Match[str]) -> str:
    char = match.group()
    if "\u00c0" <= char <= "\u024f" or "\u1e00" <= char <= "\u1eff":
        return unicodedata.normalize("NFD", char)[0]  # a precomposed Latin letter: its base letter
    return ""  # a combining mark, a point, a joiner


def unmarked(text: str) -> str | None:
    """The text without the marks a word may carry or not (see _MARKED), or None when it holds none."""
    if text.isascii() or _MARKED.search(text) is None:
        return None
    folded = _MARKED.sub(_unmark, text)
    return folded if folded != text else None


@lru_cache(maxsize=64)
def unmarked_names(sensitive: frozenset[str]) -> frozenset[str]:
    """The sensitive names and the same names without their marks (`şifre` and `sifre`)."""
    return sensitive | frozenset(folded for name in sensitive if (folded := unmarked(name)) is not None)


def sensitive_set(names: Iterable[str]) -> frozenset[str]:
    """Normalise a list of sensitive field names for `redact`."""
    listed = tuple(names)
    try:
        return _normalised(listed)
    except TypeError:  # an unhashable entry: normalised as it comes, not kept
        return frozenset(normalise_key(name) for name in listed if name)


@lru_cache(maxsize=256)
def _normalised(names: tuple[str, ...]) -> frozenset[str]:
    # The same few lists (the settings' names, an experiment's protocol) come back on every log line and page.
    return frozenset(normalise_key(name) for name in names if name)


@lru_cache(maxsize=64)
def key_hint(sensitive: frozenset[str]) -> re.Pattern[str] | None:
    """A case-insensitive test for any spelling of a sensitive name (api_key, apiKey, API-KEY, `api key`)."""
    if not sensitive:
        return None
    words = ("[_\\-. ]?".join(re.escape(part) for part in name.split("_") if part) for name in sorted(sensitive))
    return re.compile("(?i)" + "|".join(words))


_NUMBER = re.compile(r"[-+]?(?:\d[\d_,]*)?\.?\d+(?:[eE][-+]?\d+)?%?")
# A bare filesystem path (PWD=/home/ada, --token-file ./token.txt) names where a secret is, not the secret.
_PATH = re.compile(r"(?:/|~/|\./|\.\./)[\w.\-/]*")
# A file's name or relative path (`config/settings.py`, `server.key`): after a credential word in free text, where
# the credential is kept, not the credential (a value under a key may still be one: `"pw": "Qz7.json"`).
FILE_NAME = re.compile(
    r"[\w.\-]+(?:/[\w.\-]+)*\.(?:py|js|ts|go|rs|rb|java|md|txt|json|ya?ml|toml|ini|cfg|conf|env|html?|css|png|jpe?g|log|sh"
    r"|pem|key|crt|cer|p12|pfx|kdbx|gpg|asc)"
)
_NOT_SECRETS = {"true", "false", "null", "none", "nil", "undefined", "redacted", "********"}


def is_maskable(value: str) -> bool:
    """Whether a value is worth masking wherever it appears (long enough, not a number, boolean, null or path)."""
    text = value.strip()
    return (
        MIN_SECRET_LENGTH <= len(text) <= MAX_SECRET_LENGTH
        and text.lower() not in _NOT_SECRETS
        and REDACTED not in text
        and not _NUMBER.fullmatch(text)
        and not _PATH.fullmatch(text)
    )


@lru_cache(maxsize=64)
def name_needles(sensitive: frozenset[str]) -> tuple[str, ...] | None:
    """Lower-case strings one of which stands in any text naming a sensitive name (None: no such test).

    Every spelling `key_hint` accepts keeps each part of the name unbroken, so the longest part of each name is
    a necessary sign; a needle holding another needle is dropped (`pass` stands for `password`).
    """
    parts = set()
    for name in sensitive:
        longest = max((part for part in name.split("_") if part), key=len, default="")
        if not longest or any(char in '"\\' or char < " " for char in longest):
            return None
        parts.add(longest.replace("ς", "σ"))
    return tuple(sorted(p for p in parts if not any(other != p and other in p for other in parts)))


@lru_cache(maxsize=64)
def needle_matcher(needles: tuple[str, ...]) -> Any:
    """One automaton (or the needles themselves) for `holds_any`."""
    if not has_needles() or not needles:
        return needles
    return Needles(((needle, needle) for needle in needles), dfa=True)


def holds_any(lowered: str, matcher: Any) -> bool:
    """Whether a lower-cased text holds one of the needles of a `needle_matcher` (one C pass)."""
    if isinstance(matcher, tuple):
        return any(needle in lowered for needle in matcher)
    return next(iter(matcher.iter(lowered)), None) is not None


_SPELLING_JOINS = ("", "_", "-", ".", " ")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
# How a spelling counts (`name_spellings`): anywhere as a word's end, only as a whole last word, or announcing.
ENDS_WORD, LAST_WORD, ANNOUNCING = 0, 1, 2


@lru_cache(maxsize=64)
def name_spellings(sensitive: frozenset[str]) -> Any:
    """One automaton of every lower-cased spelling of each sensitive and announcing name (the parts joined as
    `key_hint` joins them), each with its length and how it counts (ENDS_WORD, LAST_WORD, ANNOUNCING); None
    when a name cannot be spelt out (a quote, a control character, more than four parts) or there is no
    Aho-Corasick: then every text may name a credential."""
    if not has_needles():  # pragma: no cover - the substring test of `name_needles` stands in
        return None
    spellings: dict[str, int] = {}
    for name in sensitive | ANNOUNCING_NAMES:
        parts = [part.replace("ς", "σ") for part in name.split("_") if part]
        if not parts or len(parts) > 4 or any(char in '"\\' or char < " " for part in parts for char in part):
            return None
        rule = ENDS_WORD if name in sensitive and name not in LAST_WORD_NAMES else LAST_WORD if name in sensitive else ANNOUNCING
        for joins in itertools.product(_SPELLING_JOINS, repeat=len(parts) - 1):
            spelling = parts[0] + "".join(join + part for join, part in zip(joins, parts[1:], strict=True))
            # Two names spelt alike: the looser rule wins (the test must not miss either).
            spellings[spelling] = min(spellings.get(spelling, rule), rule)
    return Needles(((spelling, (len(spelling), rule)) for spelling, rule in spellings.items()), dfa=True)


_ESCAPE = re.compile(r"\\(?:[nrtbf]|u[0-9a-fA-F]{4})")


def _after_escape(text: str, start: int) -> bool:
    """Whether a JSON escape (`\\n`, `\\u00e9`) ends just before start: in the text it stands for, a word starts here."""
    return _ESCAPE.fullmatch(text, max(0, start - 6), start) is not None or _ESCAPE.fullmatch(text, max(0, start - 2), start) is not None


def name_hits(text: str, sensitive: frozenset[str], *, announcing: bool = True) -> list[tuple[int, int]]:
    """(start, end) of every spelling of a sensitive (and, with `announcing`, an announcing) name in text, in any
    case, by start: the matches `key_hint` finds, from the one automaton of spellings (a regex alternation of a
    hundred names and more cost a detector pass 40 % more than one of forty)."""
    automaton = name_spellings(sensitive)
    lowered = text.lower().replace("ς", "σ")
    if automaton is None or len(lowered) != len(text):  # lower() moved the offsets: the regex
        hint = key_hint(sensitive | ANNOUNCING_NAMES if announcing else sensitive)
        return [] if hint is None else [match.span() for match in hint.finditer(text)]
    return sorted(
        (end - length + 1, end + 1) for end, (length, rule) in automaton.iter(lowered) if announcing or rule != ANNOUNCING
    )


def _indexed(text: str, at: int) -> bool:
    """A name numbered by one or two digits (`Password1`, `token_2` has its own word): the digits end the word."""
    return _INDEX.match(text, at) is not None


_INDEX = re.compile(r"\d{1,2}(?![a-z0-9])")
_INFLECTED = re.compile(r"[^\W\d_]{1,4}(?!\w)")


def _inflected(text: str, start: int, at: int) -> bool:
    """A name in another script with an inflection after it (`şifrəniz`, `сырсөзүңүз`): a few letters end the word."""
    return not text[start:at].isascii() and _INFLECTED.match(text, at) is not None


# A last-word name glued to the word before it and assigned (`remotepass : …`, `FTPPASS=…`, `adminpw=…`): the
# free-text rules read it (`state.freetext.value_spans`) when its value looks like a credential.
GLUED_JOIN = re.compile(r"[\"']?[ \t]*[:=]")


# Round 16: a glued name that starts its line (after grep's line number), then a space and a value: a configuration's
# directive (redis.conf's `requirepass …`, `masterpass …`).
_DIRECTIVE_LINE_START = re.compile(r"(?:(?m:^)|\\n)[ \t]*(?:\d{1,7}[:-])?\Z")
_DIRECTIVE_VALUE = re.compile(r"[ \t]+[^\s]")


def _glued_directive(text: str, start: int, after: int) -> bool:
    if _DIRECTIVE_VALUE.match(text, after) is None:
        return False
    word_start = start
    while word_start > max(0, start - 20) and text[word_start - 1] in _WORD_CHARS:
        word_start -= 1
    return _DIRECTIVE_LINE_START.search(text, max(0, word_start - 12), word_start) is not None


def _plural_label(text: str, at: int, rule: int) -> bool:
    """A name in the plural that labels a list (`Passwords:`, `recovery tokens for the bot:`): an `s` ending the
    word, and a colon later on its line (a plural in prose or a JSON key, `"tokens": 900`, stays closed)."""
    after = text[at + 1 : at + 2]
    if rule == ANNOUNCING or text[at : at + 1] not in ("s", "S") or after in _WORD_CHARS or after in ("\"", "'", "\\"):
        return False
    line_end = text.find("\n", at, at + 240)
    return text.find(":", at + 1, at + 240 if line_end == -1 else line_end) != -1


def names_a_credential(text: str, sensitive: frozenset[str], announced: Callable[[str, int], bool]) -> bool:
    """Whether a word of `text` is, or ends in, a sensitive name, or an announcing name stands where
    `announced(text, end)` says a value may follow: False means no key, free-text or announced-value mask finds
    anything in it (one C pass, then a look at each place a name stands).

    `is_sensitive` needs the name to end its word once normalised: the character after it is not a lower-case
    letter or a digit (`password:`, `PGPASSWORD=`, `passwordHash`, not `tokens`, `pinned`, `passes`); a
    last-word name also starts its word (`db_pass`, `dbPass`, not `bypass`, `spin`). Anything more is the
    masks' own business: this only has to never say False where they would find something.
    """
    automaton = name_spellings(sensitive)
    lowered = text.lower().replace("ς", "σ")
    if automaton is None or len(lowered) != len(text):  # lower() moved the offsets: the plain substring test
        needles = name_needles(sensitive | ANNOUNCING_NAMES)
        return needles is None or holds_any(lowered, needle_matcher(needles))
    for end, (length, rule) in automaton.iter(lowered):
        if (
            text[end + 1 : end + 2] in _WORD_CHARS
            and not _plural_label(text, end + 1, rule)
            and not _indexed(text, end + 1)
            and not _inflected(text, end - length + 1, end + 1)
        ):
            continue
        if rule != ENDS_WORD:
            start = end - length + 1
            if start > 0 and text[start - 1] in _WORD_CHARS and not text[start].isupper() and not _after_escape(text, start):
                if rule == ANNOUNCING or not (GLUED_JOIN.match(text, end + 1) or _glued_directive(text, start, end + 1)):
                    continue
        if rule != ANNOUNCING or announced(text, end + 1):
            return True
    return False
