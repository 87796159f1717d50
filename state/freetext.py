"""Credentials in free text where a name and its value are not joined by `:` or `=`, pure.

What tools and agents write besides `key: value`: command-line flags (`--db-password x`, `mysql -px`,
`curl -u user:pw`, `redis-cli -a x`), markup (`<password>x</password>`, `<input name="token" value="x">`,
`<meta name="csrf-token" content="x">`, `<add key="ClientSecret" value="x"/>`), table rows (`| db_pass | x |`,
columns), a name on one line and its value on the next, prose (`the password is x`), netrc's `password x`, and
cookie headers. `value_spans` finds where such values stand; the redaction engine masks them in place and the
detector learns them.

A value after a name joined only by spaces, a line break, a table bar or `is` must look like a credential (two
kinds of characters at least: `policy` after `password` is a word, `hX9!…` is not); after a flag, a markup
attribute or a tag any value counts. Each name is found through the one key-hint regex, so a text that names no
credential costs one regex pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from state.sensitive import REDACTED, is_maskable, is_sensitive, key_hint

# What may stand between a sensitive name and its value (the name's closing decoration already skipped).
_JOIN = re.compile(
    r"""(?P<attr>(?:[ \t]+[\w\-:]+[ \t]*=[ \t]*(?:"[^"<>]*"|'[^'<>]*'))*?[ \t]+(?:value|content)[ \t]*=[ \t]*)"""
    r"""|(?P<tag>>)"""
    r"""|(?P<eq>[ \t]*=>?[ \t]*(?=\S))"""
    r"""|(?P<cell>[ \t]*\|[ \t]*)"""
    r"""|(?P<is>[ \t]+(?:is|was|are|=)[ \t]+|[ \t]*:[ \t]+)"""
    r"""|(?P<next>[ \t]*:?[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*)"""
    r"""|(?P<space>[ \t]+)"""
)
_QUOTED_VALUE = re.compile(r"""(["'`])([^"'`\n]+?)\1""")
_BARE_VALUE = re.compile(r"""[^\s"'`<>|,;&(){}\[\]]+""")
_TRAILING = ".,;:!?"
# Command lines whose credential follows a short flag: mysql -pX / -p X, redis-cli -a X, sshpass -p X,
# curl -u user:pw / --user user:pw, openssl -passin/-passout pass:X, htpasswd -b file user X.
_CLI = (
    re.compile(r"\bmysql(?:dump|admin|import|sh)?\b[^\n]*?[ \t]-p(?P<secret>[^\s'\"-][^\s'\"]*)"),
    re.compile(r"\bmysql(?:dump|admin|import|sh)?\b[^\n]*?[ \t]--password[ \t]+(?P<secret>[^\s'\"-][^\s'\"]*)"),
    re.compile(r"\b(?:redis-cli|sshpass)\b[^\n]*?[ \t]-[ap][ \t]*(?P<secret>[^\s'\"-][^\s'\"]*)"),
    re.compile(r"\bcurl\b[^\n]*?[ \t](?:-u|--user)[ \t]*['\"]?[^\s:'\"]+:(?P<secret>[^\s'\"]+)"),
    re.compile(r"[ \t]-pass(?:in|out)?[ \t]+pass:(?P<secret>\S+)"),
    re.compile(r"::add-mask::(?P<secret>\S+)"),
)
CLI_HINT = re.compile(r"mysql|redis-cli|sshpass|curl|pass:|::add-mask::")
_COOKIE = re.compile(r"(?im)^[ \t]*(?P<set>set-)?cookie[ \t]*:[ \t]*(?P<pairs>[^\n]+)$")
_NAME_CHARS = re.compile(r"[\w.\-]")


def _looks_secret(value: str) -> bool:
    """Two kinds of characters at least (lower, upper, digit, symbol other than `_-.`): a credential, not a word
    of prose or an identifier (`policy`, `api_key`, `Berlin`)."""
    kinds = (
        any(c.islower() for c in value),
        any(c.isupper() for c in value[1:]),
        any(c.isdigit() for c in value),
        any(not c.isalnum() and c not in "_-." for c in value),
    )
    return sum(kinds) >= 2 and not value.startswith(("http://", "https://", "/", "$", "{", "%"))


def _name_at(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole name (word characters, `-` and `.`) around a hint match."""
    while start > 0 and _NAME_CHARS.match(text, start - 1):
        start -= 1
    while end < len(text) and _NAME_CHARS.match(text, end):
        end += 1
    return start, end


def _value_after(text: str, pos: int) -> tuple[int, int, bool] | None:
    """(start, end, strong) of the value after a name ending at pos; strong when the join says it is a value."""
    while pos < len(text) and text[pos] in "\"'`*_":
        pos += 1
    join = _JOIN.match(text, pos)
    if join is None:
        return None
    kind, at = join.lastgroup, join.end()
    if at >= len(text):
        return None
    if kind == "tag":
        end = text.find("<", at)
        end = len(text) if end == -1 else end
        return (at, end, True) if end > at and "\n" not in text[at:end] else None
    quoted = _QUOTED_VALUE.match(text, at)
    if quoted:
        return quoted.start(2), quoted.end(2), True
    bare = _BARE_VALUE.match(text, at)
    if bare is None:
        return None
    start, end = bare.span()
    while end > start and text[end - 1] in _TRAILING:
        end -= 1
    if kind == "next":
        # A name on its own line: the value is the whole next line, one token.
        line_end = text.find("\n", at)
        line_end = len(text) if line_end == -1 else line_end
        if text[end:line_end].strip():
            return None
    return start, end, kind in ("attr", "eq")


def value_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    """Where credentials stand in free text after a name without `:`/`=`, on a command line or in a cookie."""
    hint = key_hint(sensitive)
    if hint is not None:
        checked = -1
        for match in hint.finditer(text):
            start, end = _name_at(text, *match.span())
            if end <= checked:
                continue
            checked = end
            if not is_sensitive(text[start:end].strip(".-_"), sensitive):
                continue
            found = _value_after(text, end)
            if found is None:
                continue
            value_start, value_end, strong = found
            value = text[value_start:value_end]
            if value.startswith(("-", "/", "~/", "./")) or REDACTED in value or not is_maskable(value):
                continue
            # After a flag (`--db-password x`, `-password x`) the next word is its value, whatever it looks like.
            if strong or text[start] == "-" or _looks_secret(value):
                yield value_start, value_end
        yield from _cookie_spans(text)
    if CLI_HINT.search(text):
        for pattern in _CLI:
            for match in pattern.finditer(text):
                yield match.span("secret")


def _cookie_spans(text: str) -> Iterator[tuple[int, int]]:
    """Every cookie value of a Cookie header, the first pair's of a Set-Cookie header (whatever their names)."""
    for match in _COOKIE.finditer(text):
        offset = match.start("pairs")
        pairs = match.group("pairs").split(";")
        for pair in pairs[:1] if match.group("set") else pairs:
            name, sep, value = pair.partition("=")
            if sep and value.strip():
                value_start = offset + len(name) + 1 + (len(value) - len(value.lstrip()))
                yield value_start, value_start + len(value.strip())
            offset += len(pair) + 1
