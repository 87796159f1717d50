"""Redaction of sensitive data (R14), pure: JSON and free text in, the same shape out with secrets masked.

Three masks, applied together by `redact` (JSON) and `redact_text` (free text):
- by key: the value of every sensitive key, at any depth of JSON and in every free-text shape the runtime and
  common tools write (`key: value`, `**key**: value`, `"key": "value"`, `'key': 'value'` in Python reprs, nested
  and several per line, `key=value`, `export KEY=value`, YAML blocks, JSON serialized inside a string);
- by pattern: secrets that carry no key but a recognisable form (passwords in connection URLs, `Bearer` tokens,
  private-key blocks, common cloud key formats);
- by value: every value ever seen under a sensitive key of the experiment (`KnownSecrets`) wherever it appears,
  in prose too, as CI systems mask their secrets in logs.

`secrets_in` finds the values a document holds under sensitive keys (and by pattern): what becomes a known secret.
"""

from __future__ import annotations

import bisect
import html
import itertools
import json
import quopri
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import quote, quote_plus

from experiments.jsonb import json_document
from state.detector_switch import fail_closed_enabled
from state.failclosed import harmless_value, may_fail_closed
from state.freetext import (
    CODES_SIGN,
    COMMANDS,
    COOKIE_FILE_SIGNS,
    COOKIE_HEADER,
    CRACKED_SIGN,
    EXPECT_SIGN,
    LOGIN_CLAUSE_SIGNS,
    SECRET_BLOCK_SIGNS,
    SECRETS_FILE_SIGN,
    SOURCE_SUFFIXES,
    WIFI_SIGNS,
    credential_shaped,
    may_hold_login,
    pair_password,
    random_token_near,
    under_encrypted_block,
    unescaped,
    unmojibaked,
    value_spans,
)
from state.sensitive import (  # noqa: F401 - the vocabulary, re-exported for the engine's callers
    FILE_NAME,
    MAX_SECRET_LENGTH,
    MIN_SECRET_LENGTH,
    REDACTED,
    SECRET_ARMOR,
    Needles,
    has_needles,
    holds_any,
    is_maskable,
    is_sensitive,
    key_hint,
    name_hits,
    name_needles,
    names_a_credential,
    names_a_hash,
    needle_matcher,
    normalise_key,
    sensitive_set,
    unmarked,
    unmarked_names,
)
from state.token_formats import TOKEN_FORMATS

# -- keyless patterns ----------------------------------------------------------------------------------------

# Each pattern's group "secret" is masked; the rest of the match stays readable.
PATTERNS: tuple[re.Pattern[str], ...] = (
    # scheme://user:password@host (postgres, redis, amqp, https, ...)
    re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]{0,31}://[^\s:/@'\"<>]*:(?P<secret>[^\s@/'\"<>]+)@"),
    # Round 15: Oracle's connect string in a JDBC URL, `user/password@` after the driver (`jdbc:oracle:thin:app/…@//db:1521/SVC`).
    re.compile(r"jdbc:oracle:(?:thin|oci8?|kprb):[^\s/@:'\"<>]{1,128}/(?P<secret>[^\s@/'\"<>]{1,128})@"),
    re.compile(r"(?i)\bbearer[ \t]+(?P<secret>[A-Za-z0-9._~+/\-]{6,}=*)"),
    re.compile(
        r"-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}?(?:PRIVATE KEY|" + "|".join(SECRET_ARMOR[1:]) + r")[A-Z0-9 ]{0,20})-----(?P<secret>.*?)"
        r"(?:-{5,}END (?P=kind)-----|\Z)",
        re.DOTALL,
    ),
    re.compile(r"\b(?P<secret>(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16})\b"),  # AWS access key ids
    re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})\b"),  # GitHub tokens
    re.compile(r"\b(?P<secret>xox[abposr]-[A-Za-z0-9\-]{10,})"),  # Slack tokens
    re.compile(r"\b(?P<secret>AIza[0-9A-Za-z_\-]{35})"),  # Google API keys
    re.compile(r"\b(?P<secret>[sr]k_(?:live|test)_[0-9A-Za-z]{16,})"),  # Stripe secret keys
    # Other vendors' `sk_` secret keys (Checkout.com's `sk_sbox_…`, Clerk, ElevenLabs): long, with digits in them.
    re.compile(r"\b(?P<secret>sk_(?:[a-z]{2,8}_)?(?=[A-Za-z]*\d[A-Za-z]*\d)[A-Za-z0-9]{24,})"),
    re.compile(r"\b(?P<secret>sk-(?:proj-|ant-|live-)?[A-Za-z0-9_\-]{32,})"),  # OpenAI / Anthropic style keys
    re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})"),  # JWTs
    # Self-identifying vendor formats (state/token_formats.py), each at a word start.
    *(re.compile(r"(?<![A-Za-z0-9_])(?P<secret>" + body + ")") for body in dict.fromkeys(body for _, body in TOKEN_FORMATS)),
)


def _literal_prefix(body: str) -> str:
    """The characters every match of a pattern's source starts with, up to its first special character (none when
    the source is alternatives: `gh…|github_pat_…`)."""
    if _top_level_alternatives(body):
        return ""
    prefix: list[str] = []
    i = 0
    while i < len(body):
        char, after = body[i], body[i + 1 : i + 2]
        if char == "\\" and after in (".", "-", "/"):
            char, i = after, i + 1
        elif not (char.isalnum() or char in "_-:/ "):
            break
        if body[i + 1 : i + 2] in ("?", "*", "{"):
            break  # optional or counted: not a sure start
        prefix.append(char)
        i += 1
        if body[i : i + 1] == "+":
            break
    return "".join(prefix)


def _top_level_alternatives(body: str) -> bool:
    depth, escaped, in_class = 0, False, False
    for char in body:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            return True
    return False


# Round 15: each pattern's pass only over a text holding its literal start (`sbp_`, `jdbc:oracle:`): a substring test
# in C, where a pass of each of sixty patterns over every text the hint opened cost more with each format added.
_OPENINGS = ("(?<![A-Za-z0-9_])(?P<secret>", r"\b(?P<secret>")
_PATTERN_PASSES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (pattern, "://" if i == 0 else _literal_prefix(pattern.pattern.removeprefix(_OPENINGS[0]).removeprefix(_OPENINGS[1])))
    for i, pattern in enumerate(PATTERNS)
)
# Signs of a pattern's form or of a credential-taking command, each with the test that confirms it where it
# stands (a case-sensitive match at the sign, or None: the sign alone): a text holding none of them (nor a
# sensitive name) holds nothing the key, free-text and pattern masks could find. Found lower-cased in one pass.
_FORM_SIGNS: dict[str, re.Pattern[str] | None] = {
    "://": re.compile(r"://[^\s:/@'\"<>]*:[^\s@/'\"<>]+@"),
    "bearer": re.compile(r"(?i:bearer)[ \t]"),
    "jdbc:oracle:": re.compile(r"jdbc:oracle:\w+:[^\s/@:'\"<>]+/"),
    "-----begin": re.compile(r"-----BEGIN"),
    **{sign.lower(): re.compile(r"(?<![A-Za-z0-9_])" + re.escape(sign)) for sign in (
        "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "AIza",
        "sk_", "rk_", "sk-", "eyJ",
    )},
    # The credential-taking commands and protocol lines state.freetext reads (its one table).
    **{command.sign: command.confirm for command in COMMANDS},
    EXPECT_SIGN: None,
    CRACKED_SIGN: re.compile(r"--show\b"),
    CODES_SIGN: re.compile(r"(?i) codes\b"),
    **WIFI_SIGNS,
    **dict.fromkeys(LOGIN_CLAUSE_SIGNS),  # round 16: a login's clause (`accedi con questa: …`)
    **{sign: re.compile(r"(?i:" + sign + r")[ \t]*\{[ \t]*\r?\n") for sign in SECRET_BLOCK_SIGNS},
    # Round 16: `secrets` both opens a block of them and ends a secrets file's name (one sign, one test for both).
    SECRETS_FILE_SIGN: re.compile(r"(?i:secrets)[ \t]*(?:\{[ \t]*\r?\n|\r?\n|\\r?\\n)"),
    **{sign: re.compile(r"\t(?:TRUE|FALSE)\t") for sign in COOKIE_FILE_SIGNS},  # round 17: a cookie jar's lines
    **{sign.lower(): re.compile(r"(?<![A-Za-z0-9_])" + re.escape(sign)) for sign, _ in TOKEN_FORMATS},
}  # fmt: skip
_PATTERN_HINT = re.compile(
    r"://|(?i:bearer)[ \t]|-----BEGIN|jdbc:oracle:|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|gh[pousr]_|github_pat_|xox|AIza|[sr]k_|sk-|eyJ)"
    r"|(?<![A-Za-z0-9_])(?:" + "|".join(re.escape(sign) for sign, _ in TOKEN_FORMATS) + ")"
)


def _pattern_spans(text: str) -> Iterator[tuple[int, int]]:
    if not _PATTERN_HINT.search(text):
        return
    for pattern, start in _PATTERN_PASSES:
        if start and start not in text:
            continue
        for match in pattern.finditer(text):
            start, end = match.span("secret")
            if end > start and not text.startswith(REDACTED, start):
                yield start, end


# -- keys in free text ---------------------------------------------------------------------------------------

# A key with its decoration and separator: "key": / 'key': / \"key\": / **key**: / `key`: / key= / KEY = / key =>.
# A key starts a word, or follows a JSON escape, or (round 13) a define flag glued to it (a compiler's, cmake's or
# Java's `-D`: `-DWIFI_PASS=\"…\"`, `-Dspring.datasource.password=…`).
_KEY = re.compile(
    r"""(?:(?<![\w\-])|(?<=\\[nrt]|-D))(?P<lead>\\*["'`]|(?P<bold>\*{1,2})|_{1,2})?(?P<name>[A-Za-z][\w\-.]*?)(?P<trail>\\*["'`]|\*{1,2}|_{1,2})?"""
    # `**key:**`: the stars after the colon close the bold the name opened (else they start the value: `__token__:****@…`)
    r"""(?P<sp>[ \t]*)(?P<sep>:(?(bold)\*{0,2})(?![:/])|=>|=(?![=~]))[ \t]*"""
)
_OPEN = {"{": "}", "[": "]", "(": ")"}
_STOP_IN_STRUCTURE = ",}])\n"
_STOP_BARE_ASSIGNMENT = " \t\n&;,'\"<>)]}"
_TERMINATORS = ",}]);\n\r \t`"


def _line_bounds(text: str, pos: int) -> tuple[int, int]:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return start, len(text) if end == -1 else end


def _indent(text: str, line_start: int) -> int:
    n = line_start
    while n < len(text) and text[n] in " \t":
        n += 1
    return n - line_start


def _in_structure(text: str, line_start: int, pos: int) -> bool:
    """Whether an unclosed bracket precedes pos on its line (then a bare value ends at , } ] or ))."""
    depth, quote_char = 0, ""
    for char in text[line_start:pos]:
        if quote_char:
            if char == quote_char:
                quote_char = ""
        elif char in "\"'":
            quote_char = char
        elif char in "{[(":
            depth += 1
        elif char in "}])" and depth:
            depth -= 1
    return depth > 0


def _quoted_end(text: str, pos: int, quote_mark: str) -> int:
    """End (exclusive) of a quoted value starting at pos; a quote is closing when what follows ends a value."""
    n = pos + len(quote_mark)
    plain = quote_mark in ("'", '"', "`")
    while True:
        found = text.find(quote_mark, n)
        if found == -1:
            return _line_bounds(text, pos)[1]  # unterminated (e.g. a truncated repr): to the end of the line
        if plain and _escaped(text, found):
            n = found + 1
            continue
        after = found + len(quote_mark)
        if after >= len(text) or text[after] in _TERMINATORS or text.startswith(("\\n", "\\\"", "\\'"), after):
            return after
        if text[after] == ":":  # the quote closed a key ("a": ...), so the value ended before it
            return found + len(quote_mark)
        n = after


def _escaped(text: str, index: int) -> bool:
    slashes = 0
    while index - slashes - 1 >= 0 and text[index - slashes - 1] == "\\":
        slashes += 1
    return slashes % 2 == 1


def _bracket_end(text: str, pos: int) -> int:
    """End (exclusive) of the bracketed structure at pos, quote-aware; an unclosed one runs to the end of the text.

    Quotes may be escaped a level deeper (JSON inside a JSON string: \\"key\\"): a quote opened after k
    backslashes is closed by the same quote after k backslashes.
    """
    stack = [_OPEN[text[pos]]]
    n, quote_char, depth = pos + 1, "", 0
    while n < len(text):
        char = text[n]
        if char in "\"'":
            slashes = 0
            while text[n - slashes - 1] == "\\" and n - slashes - 1 > pos:
                slashes += 1
            if not quote_char:
                quote_char, depth = char, slashes
            elif char == quote_char and (slashes == depth if depth else slashes % 2 == 0):
                quote_char = ""
        elif quote_char:
            pass
        elif char in _OPEN:
            stack.append(_OPEN[char])
        elif char == stack[-1]:
            stack.pop()
            if not stack:
                return n + 1
        n += 1
    return len(text)


def _block_end(text: str, line_start: int, line_end: int) -> int:
    """End of the lines after the key's line indented deeper than it (a YAML mapping, list or block scalar)."""
    base = _indent(text, line_start)
    key_is_item = text[line_start:line_end].lstrip().startswith("- ")
    end = n = line_end
    while n < len(text):
        start = n + 1
        stop = text.find("\n", start)
        stop = len(text) if stop == -1 else stop
        line = text[start:stop]
        if line.strip():
            indent = _indent(text, start)
            if not (indent > base or (indent == base and not key_is_item and line.lstrip().startswith("- "))):
                break
            end = stop
        n = stop
    return end


def _value_span(text: str, match: re.Match[str]) -> tuple[int, int] | None:
    """Where the value after a key's separator lies, or None when there is no value to mask."""
    pos = match.end()
    line_start, line_end = _line_bounds(text, match.start())
    if text.startswith(REDACTED, pos):
        return None
    if pos >= line_end or text.startswith(("|", ">"), pos) and text[pos + 1 : line_end].strip("-+ \t") == "":
        end = _block_end(text, line_start, line_end)
        return (line_end, end) if end > line_end else None
    quote_mark = re.match(r"\\*[\"'`]", text[pos : pos + 8])
    if quote_mark and text.startswith(REDACTED + quote_mark.group(0), pos + len(quote_mark.group(0))):
        return None  # already masked
    if quote_mark:
        return pos, _quoted_end(text, pos, quote_mark.group(0))
    if text[pos] in _OPEN:
        return pos, _bracket_end(text, pos)
    lead = match.group("lead") or ""
    if lead[-1:] in ("\"", "'") and not match.group("trail"):
        stops = lead[-1] + "\n"  # a header inside a quoted argument (`-H "Authorization: Bearer x"`) ends with it
    elif match.group("sep") == "=" and not match.group("sp") and text[match.end("sep") : pos] == "":
        stops = _STOP_BARE_ASSIGNMENT
    elif _in_structure(text, line_start, match.start()):
        stops = _STOP_IN_STRUCTURE
    else:
        stops = "\n"
    end = pos
    while end < line_end and text[end] not in stops:
        end += 1
    while end > pos and text[end - 1] in " \t\r":
        end -= 1
    # A literal backslash-n ends a value inside an escaped string (a log line serialized into JSON).
    escaped_newline = text.find("\\n", pos, end)
    if escaped_newline != -1:
        end = escaped_newline
    caret_nul = text.find("^@", pos, end)  # round 16: `cat -v`'s NUL between /proc/<pid>/environ's entries
    if caret_nul != -1:
        end = caret_nul
    return (pos, end) if end > pos else None


def _key_spans(text: str, sensitive: frozenset[str], *, learning: bool = False) -> Iterator[tuple[int, int]]:
    # Every key is looked at, also inside the value of a harmless one ({'notes': {'password': ...}}), so nothing
    # nested is skipped; only a masked value's own inside is passed over. Learning, a password's hash is passed over.
    masked_to = 0
    for match in _KEY.finditer(text):
        if match.start() < masked_to or not is_sensitive(match.group("name"), sensitive):
            continue
        if learning and (names_a_hash(match.group("name")) or under_encrypted_block(text, match.start())):
            continue
        if learning and COOKIE_HEADER.match(text, match.end("name")) and normalise_key(match.group("name")).endswith("cookie"):
            continue  # round 17: a cookie header is learnt pair by pair (state.freetext's cookie rule), not whole
        if learning and text[match.start() - 1 : match.start()] == ":" and _IN_ARN.search(text, max(0, match.start() - 100), match.start()):
            continue  # round 17 (second): an ARN's resource type (`arn:aws:secretsmanager:…:secret:<name>`), no key
        span = _value_span(text, match)
        if span is not None and learning and match.group("sep") == ":" and _prose_label(text, match.start(), span[0]):
            continue
        if span is not None:
            masked_to = span[1]
            yield span


_IN_ARN = re.compile(r"arn:aws[\w-]*:[\w-]+:[\w-]*:\d*:\Z")


# Class (round 13): a name ending a line of prose (`Currently stored credentials:`, then a tool's listing of targets
# and types) labels what follows, it is no YAML key: the block under it is not learnt whole (masked all the same;
# a list of credentials under such a label is read line by line: `state.freetext`'s listed values).
_PROSE_BEFORE = re.compile(r"[^\W\d_]{2,}[ \t]+\Z")


def _prose_label(text: str, key_start: int, value_start: int) -> bool:
    line_start = text.rfind("\n", 0, key_start) + 1
    line_end = text.find("\n", key_start)
    return line_end != -1 and value_start >= line_end and _PROSE_BEFORE.search(text, line_start, key_start) is not None


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching (start, end) spans joined, in order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _spans(text: str, sensitive: frozenset[str], known: KnownSecrets | None, extra: frozenset[str] = frozenset()) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    if may_hold_announced(text, sensitive):
        if name_hits(text, sensitive, announcing=False):
            spans.extend(_key_spans(text, sensitive))
        spans.extend(value_spans(text, sensitive))
        spans.extend(_pattern_spans(text))
    # A value masked by key or form is masked wherever else the same text repeats it (prose quoting it).
    own = {v for start, end in spans for v in _span_values(text[start:end], sensitive) if is_maskable(v)} | extra
    for value in own:
        at = text.find(value)
        while at != -1:
            spans.append((at, at + len(value)))
            at = text.find(value, at + len(value))
    if known is not None:
        spans.extend(known.spans(text))
    return merge_spans(spans)


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        block = text[start:end]
        # A masked block of lines keeps its line breaks (and a YAML block its shape): one marker per line.
        if "\n" in block:
            lines = block.split("\n")
            out.append("\n".join((line[: len(line) - len(line.lstrip())] + REDACTED) if line.strip() else line for line in lines))
        else:
            out.append(REDACTED)
        last = end
    out.append(text[last:])
    return "".join(out)


def redact_text(text: str, sensitive: frozenset[str], known: KnownSecrets | None = None) -> str:
    """Mask sensitive values in free text: by key in every shape, by pattern, and every known secret by value.

    A text that is a JSON document is parsed and redacted as JSON (so YAML or JSON inside its strings is
    masked with real line breaks), then written back; any other text is scanned as it stands.
    """
    return _redact_text(text, sensitive, known, frozenset())


def _redact_text(text: str, sensitive: frozenset[str], known: KnownSecrets | None, extra: frozenset[str]) -> str:
    if not text:
        return text
    as_json = _redact_json_text(text, sensitive, known, extra)
    if as_json is not None:
        return as_json
    return _apply(text, _spans(text, sensitive, known, extra))


def _redact_json_text(text: str, sensitive: frozenset[str], known: KnownSecrets | None, extra: frozenset[str]) -> str | None:
    parsed = json_document(text)
    if parsed is None:
        return None
    stripped = text.strip()
    masked = _redact(parsed, sensitive, known, extra | secrets_in(parsed, sensitive, parse_text=False))
    if masked == parsed:
        return text
    indent = 2 if "\n" in stripped else None
    return text[: len(text) - len(text.lstrip())] + json.dumps(masked, indent=indent, ensure_ascii=False) + text[len(text.rstrip()) :]


# -- JSON ----------------------------------------------------------------------------------------------------

_PATH_WORD = re.compile(r"[A-Za-z_][\w-]*")
# A name/value pair: a field naming what the value fields beside it hold (a delta's path, an env entry's name).
_NAME_FIELDS = frozenset({"path", "key", "name", "variable", "parameter", "param", "label"})
_VALUE_FIELDS = frozenset({"value", "current_value", "initial_value", "val"})


def names_its_value(value: dict[Any, Any], sensitive: frozenset[str]) -> bool:
    """Whether a dict is a name/value pair whose name field names a sensitive field (its value fields are)."""
    for key, item in value.items():
        if isinstance(item, str) and len(item) <= 200 and normalise_key(str(key)) in _NAME_FIELDS:
            if any(is_sensitive(word, sensitive) for word in _PATH_WORD.findall(item)):
                return True
    return False


def redact(value: Any, sensitive: frozenset[str], known: KnownSecrets | None = None) -> Any:
    """A copy of `value` with every sensitive key's value REDACTED and every string leaf masked as free text.

    Values under sensitive keys of `value` itself are masked wherever else they appear in it, even before
    they are known secrets of the experiment (a summary quoting the access token of the same result).
    """
    # The document's own secrets are few: looked for with str.find beside the experiment's matcher.
    return _redact(value, sensitive, known, frozenset(secrets_in(value, sensitive, parse_text=False)))


def _redact(value: Any, sensitive: frozenset[str], known: KnownSecrets | None, own: frozenset[str]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, sensitive, known, own)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            shown = _redact(v, sensitive, known, own) if not is_sensitive(str(k), sensitive) else REDACTED
            out[_unique(_mask_key(k, known, own), out)] = shown
        # A delta names its field in `path`, not as a key: {"path": "$.vault.api_key", "value": "sk-…"}; a
        # name/value pair in a name field: {"key": "merchantSecret", "value": "…"}, {"Name": "DB_PASSWORD", …}.
        if names_its_value(value, sensitive):
            for key in out:
                # A number beside a label ({"label": "Token usage", "value": 1234}) stays; a delta's value never.
                plain = out[key] is None or isinstance(out[key], bool | int | float)
                if normalise_key(str(key)) in _VALUE_FIELDS and ("path" in value or not plain):
                    out[key] = REDACTED
        return out
    if isinstance(value, list | tuple):
        return [_redact(item, sensitive, known, own) for item in value]
    return value


def _mask_key(key: Any, known: KnownSecrets | None, own: frozenset[str]) -> Any:
    """A dict key masked like a value: a known secret, the document's own or a secret's form in it is replaced."""
    if not isinstance(key, str) or len(key) < MIN_SECRET_LENGTH:
        return key
    if own and any(v in key for v in own):
        spans = [*_pattern_spans(key), *(known.spans(key) if known is not None else ())]
        spans.extend((at, at + len(v)) for v in own if (at := key.find(v)) != -1)
        return _apply(key, merge_spans(spans))
    return (known if known is not None else _EMPTY).masked_key(key)


def _unique(key: Any, taken: dict[Any, Any]) -> Any:
    """Two keys masked alike stay two keys: `[redacted]`, `[redacted] (2)`, …"""
    if key not in taken:
        return key
    n = 2
    while f"{key} ({n})" in taken:
        n += 1
    return f"{key} ({n})"


def path_is_sensitive(segments: Iterable[str | int], sensitive: frozenset[str]) -> bool:
    """Whether any key on a path is sensitive (then everything below it is too)."""
    return any(isinstance(segment, str) and is_sensitive(segment, sensitive) for segment in segments)


def redact_at(segments: Iterable[str | int], value: Any, sensitive: frozenset[str], known: KnownSecrets | None = None) -> Any:
    """Redact a value found at a path: whole when the path itself is sensitive, else key by key."""
    if path_is_sensitive(segments, sensitive):
        return REDACTED
    return redact(value, sensitive, known)


# -- finding secrets -----------------------------------------------------------------------------------------

def _held_values(value: Any, sensitive: frozenset[str]) -> Iterator[str]:
    """The secrets a sensitive key's value holds: a string or a list's strings whole; of a mapping, what its sensitive
    keys hold and each leaf shaped like a credential (`{"enabled": true, "existingSecret": "redis-auth"}` under
    `auth` holds none)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _held_values(item, sensitive)
    elif isinstance(value, dict):
        for key, item in value.items():
            if is_sensitive(str(key), sensitive):
                yield from _held_values(item, sensitive)
            elif normalise_key(str(key)) not in _DOC_FIELDS:
                yield from (leaf for leaf in _leaves(item) if credential_shaped(leaf))


# Members that document a field rather than hold its value: a schema's or a form's words about a credential
# (`"password_env": {"type": "string", "description": "name of the env var holding the password"}`).
_DOC_FIELDS = frozenset({"description", "title", "help", "help_text", "summary", "comment", "hint", "placeholder", "doc", "docstring"})


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _leaves(item)


_QUOTED = re.compile(r"""\\*(["'])(.*?)\\*\1""")
_LINE_VALUE = re.compile(r"""^(?:-[ \t]+)?(?:(?P<key>[\w"'.\-]+)[ \t]*[:=]|(?i:bearer|basic|token|digest)[ \t])[ \t]*(?P<value>.+)$""")
# A member of an inline structure (`{ name: payments-db, key: password }`, `{"user": "a", "pw": "b"}`).
_MEMBER = re.compile(r"""\\*["']?(?P<key>[\w.\-]+)\\*["']?[ \t]*[:=][ \t]*(?:\\*(?P<mark>["'])(?P<quoted>.*?)\\*(?P=mark)|(?P<bare>[^\s"'{}\[\](),]+))""")
_BARE = re.compile(r"""[:=][ \t]*([^\s"'{}\[\](),]+)""")
_UNQUOTE = re.compile(r"""^\\*["'`]|\\*["'`]$""")


def _span_values(span: str, sensitive: frozenset[str]) -> Iterator[str]:
    """The values a masked span holds: the span unquoted; in a structure or a block (a sensitive key's members),
    each member under a sensitive key and each shaped like a credential, never a member's whole line (`auth:` over
    `enabled: true` and `existingSecret: redis-auth` names no secret)."""
    stripped = span.strip()
    if stripped[:1] in _OPEN:
        keyed = 0
        for member in _MEMBER.finditer(stripped):
            keyed += 1
            value = member.group("quoted") if member.group("quoted") is not None else member.group("bare")
            key = member.group("key")
            named = is_sensitive(key, sensitive) and not names_a_hash(key)
            if value and (named or credential_shaped(value) and normalise_key(key) not in _DOC_FIELDS):
                yield value
        if not keyed:  # a list: its items are the key's values
            yield from (m.group(2) for m in _QUOTED.finditer(stripped) if m.group(2))
            yield from (m.group(1) for m in _BARE.finditer(stripped))
        return
    unquoted = _UNQUOTE.sub("", stripped)
    if "\n" not in span.strip(" \t"):  # a block starts on the line after its key
        yield unquoted
        part = _LINE_VALUE.match(unquoted)  # `Bearer x` / `Basic x` header values: the value part too
        if part and part.group("key") is None:
            yield _UNQUOTE.sub("", part.group("value").strip())
        return
    for line in unquoted.splitlines():
        line = line.strip()
        part = _LINE_VALUE.match(line)
        if part is None:
            if line and not FILE_NAME.fullmatch(line):
                yield line  # a line of its own in a block: a key's body (a PEM line, a token), not a file's name
            continue
        value = _UNQUOTE.sub("", part.group("value").strip())
        key = part.group("key")
        named = key is not None and is_sensitive(key.strip("\"'"), sensitive) and not names_a_hash(key.strip("\"'"))
        if key is None or named or credential_shaped(value):
            yield value


def _rereadings(text: str, sensitive: frozenset[str]) -> Iterator[tuple[str, frozenset[str]]]:
    """The text read again as its writer meant it, each with the names to read it against (lazily: the second is
    only made when the first found nothing to a caller that stops at the first find)."""
    repaired = unmojibaked(text)  # a label in another script written as UTF-8 read as Latin-1: read again as UTF-8
    if repaired is not None:
        yield repaired, sensitive
    decoded = unescaped(text)  # RTF's `\uN?` escapes, HTML's quote entities: read as the characters they stand for
    if decoded is not None:
        yield decoded, sensitive
        folded = unmarked(decoded)
        if folded is not None:
            yield folded, unmarked_names(sensitive)
    folded = unmarked(text)  # a credential word with marks the names do not carry (`ọ̀rọ̀ aṣínà`, a ZWNJ inside a word)
    if folded is not None:
        yield folded, unmarked_names(sensitive)
    if "uoted-printable" in text and _QUOTED_PRINTABLE.search(text):
        yield _decoded_qp(text), sensitive


# Class (round 14): a mail body in quoted-printable (`das neue Passwort f=C3=BCr das Lager-Tablet lautet: …`): read as
# its reader sees it too; what is found there is learnt where it stands as such in the text.
_QUOTED_PRINTABLE = re.compile(r"(?i)content-transfer-encoding:[ \t]*quoted-printable")


def _decoded_qp(text: str) -> str:
    return quopri.decodestring(text.encode("utf-8", "surrogatepass")).decode("utf-8", "replace")


def _text_secrets(text: str, sensitive: frozenset[str]) -> Iterator[str]:
    yield from _read_secrets(text, sensitive)
    for reading, names in _rereadings(text, sensitive):
        yield from (value for value in _read_secrets(reading, names) if value in text)


def _read_secrets(text: str, sensitive: frozenset[str]) -> Iterator[str]:
    parsed = json_document(text)
    if parsed is not None:
        yield from secrets_in(parsed, sensitive)
        return
    if not may_hold_announced(text, sensitive):
        return
    if name_hits(text, sensitive, announcing=False):
        for start, end in _key_spans(text, sensitive, learning=True):
            yield from _with_pair_password(_span_values(text[start:end], sensitive))
    yield from _with_pair_password(text[start:end] for start, end in value_spans(text, sensitive))
    for start, end in _pattern_spans(text):
        yield text[start:end].strip()


def _with_pair_password(values: Iterable[str]) -> Iterator[str]:
    """Each value, and the password of a `user:password` pair among them (`--credentials solr:…` is learnt whole and
    the tool prints the password alone later)."""
    for value in values:
        yield value
        password = pair_password(value)
        if password is not None and not harmless_value(value):  # not ciphertext under its mark (`encrypted:…`)
            yield password


def secrets_in(value: Any, sensitive: frozenset[str], *, parse_text: bool = True) -> set[str]:
    """Values `value` holds under sensitive keys (JSON keys, delta paths, and with parse_text free-text shapes)."""
    found: set[str] = set()
    _collect(value, sensitive, found, parse_text)
    return {v for v in found if is_maskable(v)}


# Class (round 13): the members of a map named for keys of a secret kind (Z-Wave JS's `securityKeys`, a config's
# `encryptionKeys`, `signingKeys`): each member is a key whatever its own name (`S0_Legacy`, `primary`), when it has a
# key's form (hex or base64, 16 characters or more); not `authorized_keys`, `public_keys`, `ssh_keys`.
_KEY_MAP = re.compile(r"(?:^|_)(?:security|encryption|network|signing|secret|private|master|access|session|shared|symmetric|hmac|aes)_keys$")
_KEY_MAP_NAME = re.compile(r"(?i)(?:security|encryption|network|signing|secret|private|master|access|session|shared|symmetric|hmac|aes)[_-]?keys\b")
_KEY_MEMBER = re.compile(r"[0-9A-Fa-f]{16,512}|(?=[^\s]*\d)[A-Za-z0-9+/_\-]{16,512}={0,2}")


# Class (round 16): a salt in the same object as its key derivation's parameters (a password manager's encrypted export:
# `"salt": …, "kdfType": 0, "kdfIterations": 600000`) is one of them, stored beside the ciphertext by design. A salt
# alone (WordPress's `AUTH_SALT`, a signing salt) stays a secret.
_KDF_PARAMETER = re.compile(r"(?:^|_)(?:kdf(?:_\w+)?|iterations|kdf_iterations|pbkdf2_iterations|scrypt_\w+|argon2_\w+)$")


def _collect(value: Any, sensitive: frozenset[str], found: set[str], parse_text: bool) -> None:
    if isinstance(value, str):
        if parse_text:
            found.update(_text_secrets(value, sensitive))
    elif isinstance(value, dict):
        paired = names_its_value(value, sensitive)
        for key, item in value.items():
            if is_sensitive(str(key), sensitive) and names_a_hash(str(key)):
                continue  # a password's hash, masked by key, never learnt
            if normalise_key(str(key)).endswith("salt") and any(_KDF_PARAMETER.search(normalise_key(str(k))) for k in value):
                continue  # round 16: a key derivation's salt beside its parameters (public as its iterations are)
            if is_sensitive(str(key), sensitive) or (paired and normalise_key(str(key)) in _VALUE_FIELDS):
                found.update(_with_pair_password(leaf.strip() for leaf in _held_values(item, sensitive)))
                if parse_text:
                    for leaf in _leaves(item):
                        found.update(_text_secrets(leaf, sensitive))
            else:
                if isinstance(item, dict) and _KEY_MAP.search(normalise_key(str(key))):
                    found.update(leaf for leaf in item.values() if isinstance(leaf, str) and _KEY_MEMBER.fullmatch(leaf) and not harmless_value(leaf))
                _collect(item, sensitive, found, parse_text)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, sensitive, found, parse_text)
        found.update(_flagged_arguments(value, sensitive))


# Class (round 15): a credential flag as an element of an argument array, its value the next element (an MCP server's
# `"args": ["--access-token", "…"]`); not a flag naming where the credential comes from (`--password-file`).
_FLAG_ELEMENT = re.compile(r"-{1,2}[A-Za-z][\w.-]{0,62}")


def _flagged_arguments(items: list[Any] | tuple[Any, ...], sensitive: frozenset[str]) -> Iterator[str]:
    for flag, item in itertools.pairwise(items):
        if (
            isinstance(flag, str)
            and isinstance(item, str)
            and _FLAG_ELEMENT.fullmatch(flag)
            and not item.startswith("-")
            and is_sensitive(flag.lstrip("-"), sensitive)
            and not names_a_hash(flag)
            and not normalise_key(flag.lstrip("-")).endswith(SOURCE_SUFFIXES)
        ):
            yield item


def text_secrets(text: str, sensitive: frozenset[str]) -> set[str]:
    """Values free text holds under sensitive keys or in a secret's form (what a daily log teaches)."""
    return {v for v in _text_secrets(text, sensitive) if is_maskable(v)}


def may_hold_secrets(serialized: str, sensitive: frozenset[str]) -> bool:
    """A cheap test of a document: False means `secrets_in`, the detector and the key, free-text and pattern
    masks find nothing in it (a word that is or ends in a sensitive or announcing name, or a form's sign, or,
    fail-closed, a random-looking token)."""
    return may_hold_announced(serialized, sensitive) or (fail_closed_enabled() and may_fail_closed(serialized, sensitive))


def may_hold_announced(serialized: str, sensitive: frozenset[str]) -> bool:
    """`may_hold_secrets` for the key, free-text and pattern masks alone (the fail-closed pass aside)."""
    if names_a_credential(serialized, sensitive, random_token_near) or _holds_form(serialized) or may_hold_login(serialized):
        return True
    if ("eys" in serialized or "EYS" in serialized) and _KEY_MAP_NAME.search(serialized):
        return True  # a map whose members are keys whatever their names (_KEY_MAP, in _collect)
    return any(names_a_credential(reading, names, random_token_near) for reading, names in _rereadings(serialized, sensitive))


def _holds_form(text: str) -> bool:
    lowered = text.lower()
    if len(lowered) != len(text):  # lower() moved the offsets: the signs alone
        return holds_any(lowered, _FORM_MATCHER)
    hits = _substring_hits(lowered) if isinstance(_FORM_MATCHER, tuple) else _FORM_MATCHER.iter(lowered)
    for end, sign in hits:
        confirm = _FORM_SIGNS[sign]
        if confirm is None or confirm.match(text, end - len(sign) + 1):
            return True
    return False


def _substring_hits(lowered: str) -> Iterator[tuple[int, str]]:  # pragma: no cover - without pyahocorasick
    for sign in _FORM_SIGNS:
        at = lowered.find(sign)
        while at != -1:
            yield at + len(sign) - 1, sign
            at = lowered.find(sign, at + 1)


_FORM_MATCHER = needle_matcher(tuple(_FORM_SIGNS))


@lru_cache(maxsize=64)
def key_secret_spellings(sensitive: frozenset[str]) -> tuple[str, ...] | None:
    """What `may_hold_key_secrets` looks for in a lower-cased document (None: every document may hold a secret)."""
    parts = []
    for name in sorted(sensitive):
        longest = max((part for part in name.split("_") if part), key=len, default="")
        if not longest or any(char in '"\\' or char < " " for char in longest):
            return None  # a name no spelling test can stand for
        parts.append(longest.replace("ς", "σ"))
    return tuple(parts)


def may_hold_key_secrets(serialized: str, sensitive: frozenset[str]) -> bool:
    """A cheap test of a serialized JSON document: False means `secrets_in(…, parse_text=False)` finds nothing in it.

    A key (or delta path word) `is_sensitive` holds a sensitive name once normalised, so the name's longest part
    stands lower-cased and unbroken in the key's text: looking for it in the lower-cased document (Σ folded, whose
    lower case depends on what follows it) is an order of magnitude cheaper than `may_hold_secrets`.
    """
    return may_hold_key_secrets_rows([serialized], sensitive)[0]


def may_hold_key_secrets_rows(serialized: Sequence[str], sensitive: frozenset[str]) -> list[bool]:
    """`may_hold_key_secrets` of each of many documents: one scan of them all (joined by NUL) per spelling."""
    parts = key_secret_spellings(sensitive) if sensitive else ()
    if parts is None or not serialized:
        return [parts is None] * len(serialized)
    lowered = [document.lower() for document in serialized]
    hit = rows_holding("\0".join(lowered).replace("ς", "σ"), row_starts(lowered), parts)
    return [row in hit for row in range(len(serialized))]


def row_starts(rows: Sequence[str]) -> list[int]:
    """Where each row begins in the rows joined by one separator character."""
    return list(itertools.accumulate((len(row) + 1 for row in rows[:-1]), initial=0))


def rows_holding(haystack: str, starts: list[int], needles: Iterable[str]) -> set[int]:
    """The rows (by their `starts` in `haystack`) holding any of `needles`; a row found is skipped for the next hit."""
    hit: set[int] = set()
    for needle in needles:
        at = haystack.find(needle)
        while at != -1:
            row = bisect.bisect_right(starts, at) - 1
            hit.add(row)
            at = haystack.find(needle, starts[row + 1]) if row + 1 < len(starts) else -1
    return hit


# -- known secrets -------------------------------------------------------------------------------------------



def _trie_regex(words: Iterable[str]) -> str:
    """One alternation regex for many literal strings, as a trie (the fallback without Aho-Corasick)."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def build(node: dict[str, Any]) -> str:
        branches = []
        for char, child in sorted(node.items()):
            if not char:
                continue
            run = re.escape(char)
            while len(child) == 1 and "" not in child:  # a chain without branches: one literal, no recursion
                ((char, child),) = child.items()
                run += re.escape(char)
            branches.append(run + build(child))
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        # Longest match first: a word that is a prefix of another is optional after it.
        return f"(?:{body})?" if "" in node else body

    return build(trie)


@lru_cache(maxsize=256)
def _compile(forms: frozenset[str]) -> Any:
    if has_needles():  # one pass over a text whatever the number of secrets
        return Needles((form, len(form)) for form in forms)
    return re.compile(_trie_regex(forms))  # pragma: no cover - the same, slower with many secrets


def escaped_forms(value: str) -> set[str]:
    """How a value looks once it is in an HTML page, a JSON answer or a URL."""
    forms = {value, html.escape(value), html.escape(value, quote=False), json.dumps(value)[1:-1],
             json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe=""), quote_plus(value)}  # fmt: skip
    forms |= {html.escape(form) for form in list(forms)}
    return {form for form in forms if form}


@dataclass(frozen=True)
class KnownSecrets:
    """The known secrets of one experiment with one precompiled matcher (one pass over each text)."""

    values: frozenset[str] = frozenset()
    escaped: bool = False
    _matcher: Any = field(default=None, compare=False, repr=False)
    # Dict keys repeat across rows (the same few per event kind): each is masked once per matcher.
    _keys: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def empty(cls) -> KnownSecrets:
        return _EMPTY

    @classmethod
    def of(cls, values: Iterable[str], *, escaped: bool = False) -> KnownSecrets:
        """A matcher for `values`; with escaped=True also their HTML/JSON/URL-escaped forms (for rendered output)."""
        kept = frozenset(v.strip() for v in values if is_maskable(v))
        if not kept:
            return _EMPTY
        forms = set().union(*(escaped_forms(v) for v in kept)) if escaped else set(kept)
        return cls(kept, escaped, _compile(frozenset(forms)))

    def __bool__(self) -> bool:
        return bool(self.values)

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where known secrets occur in text (possibly overlapping; callers merge)."""
        if self._matcher is None or not text:
            return
        if isinstance(self._matcher, re.Pattern):
            for match in self._matcher.finditer(text):
                if match.end() > match.start():
                    yield match.span()
            return
        for end, length in self._matcher.iter(text):
            yield end + 1 - length, end + 1

    def masked_key(self, key: str) -> str:
        """A dict key with known secrets and secrets' forms masked (remembered per matcher)."""
        cached = self._keys.get(key)
        if cached is None:
            spans = [*_pattern_spans(key), *self.spans(key)]
            cached = _apply(key, merge_spans(spans)) if spans else key
            if len(self._keys) < 16384:
                self._keys[key] = cached
        return cached

    def mask(self, text: str) -> str:
        """Every occurrence of a known secret replaced by REDACTED (one pass)."""
        if self._matcher is None or not text:
            return text
        spans = merge_spans(self.spans(text))
        if not spans:
            return text
        out, last = [], 0
        for start, end in spans:
            out.append(text[last:start])
            out.append(REDACTED)
            last = end
        out.append(text[last:])
        return "".join(out)


_EMPTY = KnownSecrets()
