"""Fail-closed secret detection, pure: any random-looking token is a credential unless it stands in a harmless form.

The announced detector (`state.redaction.text_secrets`) finds what a credential word or a vendor form points at;
a credential nobody labelled (an IRC line, a table cell, a `base64 -d` output, a URL path) it misses. This pass
finds the rest the other way round: every token whose kind of character switches like random text does
(`state.freetext.class_switches`) is taken, unless its form or its label says what it is:

- a harmless form: a UUID, a hash named by its algorithm (`sha256:…`, `sha512-…`, `SHA256:…`), a password hash
  (`$2b$…`, `$argon2id$…`, `pbkdf2_sha256$…`), a `data:` URI, a hashed known_hosts entry, a colon-separated hex
  fingerprint, a W3C traceparent, a content id (`bafy…`, `Qm…`), a file name with its extension, an ARN, a
  placeholder (`<…>`, `${…}`, `{{ … }}`, `xxxx`, `your-…-here`);
- inside a public block (`-----BEGIN CERTIFICATE-----`, `PUBLIC KEY`, `PGP PUBLIC KEY BLOCK`, not PRIVATE);
- after an SSH public key type (`ssh-ed25519 AAAA…`), or in a JWK without private members;
- labelled by an identifier word (sha, hash, digest, commit, checksum, etag, id, uuid, trace, span, version,
  build, integrity, fingerprint, nonce, serial, blob, oid, cursor, public …) nearer than any credential word; a
  hex string also when such a word stands anywhere in the lines around it (git logs, checksum lists);
- mostly words (camelCase, snake_case: an identifier), or code, markup or a regular expression.

A token of a URL, a path or an image reference is judged piece by piece; `name=`/`host:port:` prefixes are
peeled off first. Figures: bench/secrets_detect.py (`AWP_SECRETS_FAIL_CLOSED=0` for the announced pass alone).
A text whose tokens never switch kind often enough costs one translate and one regex pass (C speed).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import ipaddress
import json
import re
from collections.abc import Iterator

from state.freetext import UUID_FORM, class_switches, under_encrypted_block, under_identifier_header
from state.sensitive import ANNOUNCING_NAMES, SECRET_ARMOR, is_maskable, is_sensitive, name_hits

# Each character as its kind (a, A, 0, symbol kept as is), separators `_-.:/` as `-`, whitespace and quotes as
# a space: a stretch is a run of non-spaces, and a token with at least MIN_RUNS runs of one kind is a candidate.
_SEPARATORS = "_-.:/"
_TABLE = {
    **{ord(c): "a" for c in "abcdefghijklmnopqrstuvwxyz"},
    **{ord(c): "A" for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
    **{ord(c): "0" for c in "0123456789"},
    **{ord(c): "-" for c in _SEPARATORS},
    **{ord(c): " " for c in " \t\n\r\f\v\"'`"},
}
MIN_RUNS = 6
_RUN = r"(?:a[a\-]*+|A[A\-]*+|0[0\-]*+|[^aA0 \-][^aA0 ]*+)"
MIN_LENGTH = 12
# A stretch with MIN_RUNS runs, matched with the space before it (the text is read with a space in front), only
# where MIN_LENGTH non-spaces follow: shorter stretches are never candidates, and a literal first character with
# that look-ahead lets the engine pass over prose at a few ns per character (5× a look-behind at every position).
_STRETCH = re.compile(r" (?=[^ ]{" + str(MIN_LENGTH) + r"})-*+" + _RUN + "{" + str(MIN_RUNS) + r",}[^ ]*")
# Around a token, what wraps it rather than belongs to it.
_LEAD = "([{<,;*"
_TRAIL = ")]}>,;.:*\\"
# Where a URL, a path or a key=value token is cut into the pieces judged one by one.
_CUT = re.compile(r"[/?&#=@,;|()\[\]{}<>\\]+|:(?!\d)")
_PREFIX = re.compile(r"[\w.\-*]{1,40}[:=]")
# A name may hold a short segment with a digit between separators (`x-b3-traceid`, `s3_bucket`, `ec2-host`).
# A name's parts may be joined by a backslash too (a Qt or registry key: `WebUI\Password_PBKDF2`).
_NAME = re.compile(r"[\d.]+|\*|-*[A-Za-z][A-Za-z_.\-]*\d*|-*(?:[A-Za-z]+\d*[_.\-\\])+[A-Za-z]+\d*")

# Harmless forms, whole value.
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
# Forms that say what a value is whatever labels it: a hash (named by its algorithm, or a password hash), a
# data: URI, a hashed known_hosts entry. A value a credential word announces in one of them is still no secret.
_HASH_FORMS = re.compile(
    r"""(?xi)
    (?:sha(?:1|224|256|384|512)?|sha3-\d+|md5|blake2[bs]?|crc32c?|xxh\d*|murmur\d*)[:\-=]   # hash named by its algorithm
    | \$(?:2[abxy]?|argon2(?:id|i|d)?|[156y]|scrypt|pbkdf2[\w-]*)\$                        # crypt(3)-style hashes
    | \$[a-z][\w-]{1,31}\$(?:v=\d+\$)?[a-z]{1,3}=\d+[,$]                                 # a PHC string's parameters ($balloon-sha256$v=1$s=…)
    | (?:pbkdf2_\w+|argon2|bcrypt(?:_sha256)?|scrypt|sha1|md5)\$                          # framework password hashes
    | \{S?SHA\d*\}
    | SCRAM-SHA-(?:1|256)\$\d+                                                           # SCRAM verifiers
    | data:[\w.+-]+/[\w.+-]+;base64,                                                    # data: URI
    | \|1\|[A-Za-z0-9+/]+=*\|                                                           # hashed known_hosts
    """
)
# A hash named by its algorithm right before a token the pass cut at the `:` (go.sum's `h1:…=`).
_HASH_NAMED_BEFORE = re.compile(r"(?i)(?:\bh1|sha(?:1|224|256|384|512)?|md5)[:=]$")
# Forms of identifiers: harmless when nothing labels them a credential (the fail-closed pass), but a password
# that happens to look like a pod name is still a password after `PASSWORD:`.
_ID_FORMS = re.compile(
    r"""(?xi)
    nonce-
    | arn:aws[\w-]*:
    | [0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$                                # traceparent
    | [a-z]{2,}(?:[_\-][a-z]{2,})*-(?=[a-f]*\d)(?=\d*[a-f])[0-9a-f]{7,16}$             # a name with a short hex id (`tfplan-6cae8c18c2dd`)
    | (?:[0-9A-F]{2}:){15,}                                                             # colon-hex fingerprint
    | [a-z0-9]+(?:-[a-z0-9]+)*-[a-z0-9]{8,10}-[a-z0-9]{5}$                                # Kubernetes pod name
    | (?:cus|ch|pi|pm|py|in|ii|sub|si|prod|price|evt|txn|acct|re|req|po|tr|src|card|ba|seti|cs|plink|we)_[A-Za-z0-9]{8,}$  # Stripe object ids (round 17: we_)
    | (?:AC|SM|MM|MG|PN|CA|CH|IS|SK)[0-9a-f]{32}$                                        # round 15: Twilio's object ids (SIDs)
    | chatcmpl-[A-Za-z0-9]{16,}$ | (?:resp|msg|run|thread|asst|call|batch|ftjob)_[A-Za-z0-9]{16,}$       # round 15: an LLM API's object ids
    | [UANOCX][A-Z2-7]{55}$                                                             # a NATS public nkey
    | age1[02-9ac-hj-np-z]{58}$                                                         # an age recipient (public key)
    | pk_(?:live|test)_[A-Za-z0-9]{24,}$                                                # a Stripe publishable key
    | baf[a-z2-7]{40,}$ | Qm[1-9A-HJ-NP-Za-km-z]{44}$ | k51qzi5uqu5[a-z0-9]{40,}$          # content ids
    | 0x[0-9a-fA-F]{40}$                                                                # an EVM account address (public; a key is 64)
    """
)


def _in_form(value: str) -> bool:
    """A hash's or an identifier's form (what the fail-closed pass leaves alone when nothing labels it)."""
    return _HASH_FORMS.match(value) is not None or _ID_FORMS.match(value) is not None
_COLON_HEX = re.compile(r"(?:[0-9A-Fa-f]{2}:){7,}[0-9A-Fa-f]{2}")  # a fingerprint, a MAC address, an IPv6 address
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+;base64,")
_FILE = re.compile(r".*[\w\-]\.(?:[a-z][a-z0-9]{0,7})(?:\.[a-z][a-z0-9]{0,7})?$")
# A placeholder: `<your-token>`, `${{ secrets.X }}`, `%TOKEN%`, `xxxx`, `****`, `...`, `your-…`, `…-here`, an
# example's value (`changeme`, `example-password`), a vendor's prefix alone (`whsec_`, `sk-`), the mark a tool
# leaves where it dropped a value (Sentry's `[Filtered]`, `[REDACTED]`, CloudTrail's `HIDDEN_DUE_TO_SECURITY_REASONS`:
# a mark word among capitals), a vendor's prefix of words cut where its stars began (`sk-proxy-****`).
_PLACEHOLDER = re.compile(
    # Round 17: a run of bullets shows a value masked as a run of stars does (a dashboard's `sk_live_••••HcQf`).
    r"(?i)^(?:<[^<>]*>|\$\{\{?[^}]*\}\}?|\{\{[^}]*\}\}|%[\w.]+%|.*(?:x{4,}|\*{4,}|•{4,}|●{4,}).*|your[-_].*|.*[-_]here"
    # An ellipsis where a value was cut or left out (`sk_test_...`, `AKIA…MPLE`); round 15: not inside a long value, whose
    # sides are no shown ends (Adyen's key holds `...` between two runs of 40 characters and more).
    r"|(?!.{24}[^.…]*(?:\.{3,}|…).{24}).*(?:\.{3,}|…).*"
    r"|\[(?:filtered|redacted|masked|hidden|removed|sensitive|secret|scrubbed)\]"
    r"|(?-i:(?:[A-Z]+_)*(?:HIDDEN|REDACTED|MASKED|REMOVED|FILTERED|OMITTED|SCRUBBED|WITHHELD)(?:_[A-Z]+)*)"
    # Round 17: a redaction's mark in capitals after a value's real-looking start, joined by dashes too
    # (`django-insecure-REDACTED-BY-GIT-FILTER`); a template's part named in angle brackets (a JWT written
    # `eyJ….<payload>.<signature>`) or a JWT's parts named (`header.payload.signature`); a dashboard's button where
    # the value is concealed (`Reveal`).
    r"|(?-i:[\w.\-]+[-_](?:HIDDEN|REDACTED|MASKED|REMOVED|FILTERED|OMITTED|SCRUBBED|WITHHELD)(?:[-_][A-Z]+)*)"
    r"|.*<[a-z][a-z_\- ]{2,30}>.*|header\.payload\.signature|reveal|click[ \t]+to[ \t]+reveal"
    r"|change[-_]?me\w{0,3}|(?:example|sample|dummy|placeholder)[-_]\w+|\w+[-_](?:example|sample|dummy|placeholder)"
    r"|[a-z]{2,8}(?:[-_][a-z]{2,12}){0,2}[_-]"  # round 15: `_` joins a prefix's words too (`sk_test_`)
    # Class (round 12): a placeholder word at a value's end, after its real-looking start (`a7c4d0ad-…-YOUR-TOKEN`,
    # `…_REPLACE_ME`).
    r"|.*[-_.](?:your|my)[-_][a-z]+(?:[-_][a-z]+)*|.*[-_.](?:replace|change|insert)[-_]?(?:me|this|here)|.*[-_.]here)$"
)
# A public block: its body is no secret.
_BLOCK_BEGIN = re.compile(r"-----BEGIN (?![^-\n]*(?:" + "|".join(SECRET_ARMOR) + r"))([A-Z0-9 ]+)-----")
_BLOCK_END = re.compile(r"-----END ([A-Z0-9 ]+)-----")


def public_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-private `BEGIN … END` block, in order: a BEGIN ends at the next END marker, when it
    names the same kind (found by bisection: a lazy `.*?` to the END scanned on from every BEGIN, quadratic on a
    text of BEGIN lines)."""
    ends = list(_BLOCK_END.finditer(text))
    end_starts = [end.start() for end in ends]
    blocks: list[tuple[int, int]] = []
    for begin in _BLOCK_BEGIN.finditer(text):
        if blocks and begin.start() < blocks[-1][1]:
            continue
        i = bisect.bisect_left(end_starts, begin.end())
        if i < len(ends) and ends[i].group(1) == begin.group(1):
            blocks.append((begin.start(), ends[i].end()))
    return blocks


_VAULT_HEADER = "$ANSIBLE_VAULT;"
_VAULT_LINES = re.compile(r"(?:\r?\n[ \t]*[0-9a-f]{16,}[ \t]*)+")


def vault_blocks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each Ansible vault (`$ANSIBLE_VAULT;1.1;AES256` and the lines of hex under it): ciphertext,
    whose key is elsewhere."""
    blocks: list[tuple[int, int]] = []
    at = text.find(_VAULT_HEADER)
    while at != -1:
        line_end = text.find("\n", at)
        body = _VAULT_LINES.match(text, line_end) if line_end != -1 else None
        end = body.end() if body is not None else len(text) if line_end == -1 else line_end
        if not blocks or at >= blocks[-1][1]:
            blocks.append((at, end))
        at = text.find(_VAULT_HEADER, end)
    return blocks


def _in_blocks(blocks: list[tuple[int, int]], starts: list[int], pos: int) -> bool:
    i = bisect.bisect_right(starts, pos) - 1
    return i >= 0 and pos < blocks[i][1]
_SIGNATURE_HEADER = re.compile(r"[ \t]*(?:[A-Za-z0-9]+-)+(?i:signature)(?:-\d+)?[ \t]*:[ \t]*(?:t=)?\Z")
_SSH_PUBLIC = re.compile(r"(?:ssh-(?:ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-(?:ssh|ecdsa)-[\w@.-]+)[ \t]+$")
_JWK_PRIVATE = re.compile(r"""["'](?:d|p|q|dp|dq|qi|k)["'][ \t]*:""")

# Words that label an identifier, a digest or a public value (by word, after splitting camelCase and snake_case).
IDENTIFIER_WORDS = frozenset({
    "sha", "sha1", "sha256", "sha384", "sha512", "md5", "hash", "hashes", "digest", "commit", "checksum", "checksums",
    "sum", "sums", "sha256sums", "sha256sum", "etag", "id", "ids", "uuid", "guid", "ulid", "trace", "traceparent",
    "span", "request", "correlation", "version", "versionid", "build", "integrity", "fingerprint", "nonce", "serial",
    "blob", "tree", "oid", "cursor", "kid", "rev", "revision", "ref", "parent", "head", "merge", "public", "pub",
    "pubkey", "peer", "cid", "ipfs", "ipns", "etags", "crc", "crc32", "object", "image", "layer", "container",
    "tag", "git", "fp", "thumbprint", "salt", "mac", "avatar", "gravatar", "cache", "blurhash", "tracestate", "accessor", "accessors",
    # Round 12: a serial number's abbreviation (`APP_CERT_SN`), the algorithms a password's hash is named by
    # (`Password_PBKDF2`, `pw_bcrypt`).
    "sn", "pbkdf2", "bcrypt", "scrypt", "argon2", "hashed",
    # Round 16: Cloudflare's request id (`cf-ray: …`), the recipients a value is encrypted to (public keys).
    "ray", "recipient", "recipients",
    # Round 17: a device's EUI (LoRaWAN's `dev_eui`, `join_eui`), a calendar entry's `UID`, a payment's reference
    # (`pspReference`), a vault named where a secret is kept (`Vault: Infra (<its id>)`).
    "eui", "uid", "reference", "vault",
    # Round 17 (second): an authorization request's public parameters (OAuth's `state`, PKCE's `code_challenge`, the
    # `redirect_uri`): what the browser carries in the open; the verifier and the code stay credentials.
    "state", "challenge", "redirect",
})  # fmt: skip
# Words that label bytes of a file or a picture (a long base64 value after them is content, not a key).
# Round 12: ciphertext under its own name (a payment notification's `"ciphertext": …`) is content only its key opens.
BINARY_WORDS = frozenset({"data", "bytes", "image", "thumbnail", "png", "jpeg", "webp", "content", "body", "blob", "file", "ciphertext", "encrypted", "cipher"})
# Nouns an identifier is named by when glued to `id` (`keyid`, `traceid`, `requestid`).
_ID_NOUNS = "key|trace|span|request|parent|message|event|transaction|correlation|object|node|device|tenant"
# Hex of a hash's length, in a text that speaks of hashes anywhere around it.
_HEX_CONTEXT = re.compile(
    r"(?i)sha\d*|md5|hash|digest|commit|checksum|\bsum|fingerprint|\bblob\b|\btree\b|\boid\b|\bgit\b|\bbuild\b|"
    r"\betag|[_\- ]id\b|\bid\b|(?-i:[a-z]ID)\b|\bref\b|\brev|"
    # Class: an identifier noun glued to `id` (`keyid`, `traceid`, `spanid`, `requestid`, `messageid`).
    rf"(?:{_ID_NOUNS})_?ids?\b"
)
_WORD = re.compile(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*(?![a-z])|\d+")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


# The key of a JSON, query-string or inline member right before a value (`,"value":"`, `&appid=`, `{ key: `).
_MEMBER_KEY = re.compile(r"""(?<=[,{;&?])[ \t]*["']?[\w.\-]+["']?[ \t]*[:=][ \t]*["']?$""")


def _label(text: str, start: int, sensitive: frozenset[str]) -> str | None:
    """'credential', 'identifier' or None: what the nearest naming word before text[start] says (on the token's
    line, or on the line before when the token starts its line)."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 80) : start]
    if not re.search(r"[A-Za-z]{2}", before):
        prev_start = text.rfind("\n", 0, max(0, line_start - 1)) + 1
        before = text[max(prev_start, line_start - 120) : line_start].rstrip()
        if not before.endswith(":") and len(before.split()) > 4:
            return None  # a line of its own, not a label: no word names the token
    member = _MEMBER_KEY.search(before)
    if member is not None:
        before = before[member.start() :]  # a structure's value is named by its own key, not by the members before it
    every = _words(before)
    words = every[-5:]
    skipped = len(every) - len(words)
    for i in range(len(words) - 1, max(-1, len(words) - 5), -1):
        word = words[i]
        if word in BINARY_WORDS:
            return "binary"
        if word in IDENTIFIER_WORDS or _ID_NOUN_ID.fullmatch(word) and not is_sensitive(word, sensitive):
            return "identifier"
        if len(word) > 2 and (is_sensitive(word, sensitive) or word in ANNOUNCING_NAMES):
            # The word before the name, inside the window or before it (`public-key = "…"` cut into pieces).
            previous = every[skipped + i - 1] if skipped + i else ""
            if previous in ("public", "pub"):
                return "identifier"
            # Class: a key named by what it identifies (`paymentKey`, `idempotency_key`, `partitionKey`, `orderKey`).
            if word in ANNOUNCING_NAMES and previous in _IDENTIFYING_NOUNS:
                return "identifier"
            # Round 17: a message's HMAC signature (a webhook payload's `hmacSignature`): a MAC of that one message.
            return "identifier" if word in ("signature", "sig") and previous == "hmac" else "credential"
    return None


_RULE_AFTER = re.compile(r"(?:[ \t]*,[ \t]*[.#][\w-]+)*[ \t]*\{")
# A Matrix room's id (`!<opaque>:matrix.org`): an identifier its server names, as an event's `$…` is.
_MATRIX_ROOM = re.compile(r"![A-Za-z0-9]{8,64}:[A-Za-z0-9.\-]+\.[A-Za-z]{2,}")
_PUBLIC_LABEL = re.compile(r"""(?i)\bpub(?:lic)?[-_ ]?key["']?[ \t]*[:=][ \t]*["']?$""")
# An identifier noun glued to `id` (`traceid`, `requestid`, `keyid`): an identifier's label.
_ID_NOUN_ID = re.compile(rf"(?:{_ID_NOUNS}|order|payment)ids?")
# What a key identifies when it is a record's key, not a credential.
_IDENTIFYING_NOUNS = frozenset(
    "payment order idempotency partition sort primary foreign routing dedup dedupe deduplication lookup row record "
    "message item entity index cache object composite unique natural surrogate".split()
)
# Class: a key written with its kind glued before it (`nodekey:…`, `mkey:…`, `discokey:…`): a public key's typed
# form; a private one says so (`privkey:`, `nodeprivkey:`, `secretkey:`).
_TYPED_KEY_PREFIX = re.compile(r"(?i)(?<![\w-])(?!\w*(?:priv|secret|sk))[a-z]{1,12}key:$")


_WORDISH = re.compile(r"[A-Z][a-z]{2,}|[a-z]{3,}")
_LETTERS = re.compile(r"[A-Za-z]")
_CONSONANTS = re.compile(r"(?<!^)(?<!^.)[^aeiou]{3}")
# Markup, templates, regular expressions and code: a closing tag, `{{`/`{%`, an escape class, a group's opening, a bracket's repetition.
_CODE = re.compile(r"\)\{|\}\)|\);|\};|===|!==|&&|\|\||=>|\(\w,\w,|[a-z]{2}\([A-Za-z_]|</\w|><|\{\{|\{%|%\}|\}\}|\(\?[:P=!<]|\[\^|\\[bdswBDSW]|\][{*+?]|\{\d+,\d*\}|\w\(\w*[(\[]|\w\[\w*\[")


def _word(word: str) -> bool:
    lower = word.lower()
    if lower.endswith("y"):
        lower = lower[:-1] + "i"
    vowels = sum(lower.count(v) for v in "aeiou")
    return vowels >= 0.2 * len(lower) and _CONSONANTS.search(lower) is None


def _wordy(value: str) -> bool:
    """Mostly words (camelCase, snake_case, kebab-case, a call in code) or a regular expression: an identifier, a
    name or code, however its kinds switch."""
    if _CODE.search(value):
        return True
    letters = len(_LETTERS.findall(value))
    covered = sum(len(w) for w in _WORDISH.findall(value) if _word(w))
    return letters > 0 and covered >= 0.5 * letters


_LOWER = re.compile(r"[a-z]")
_UPPER = re.compile(r"[A-Z]")
_DIGIT = re.compile(r"[0-9]")
_SYMBOL = re.compile(r"[^A-Za-z0-9_\-.:/]")


# Class (round 15): hex in dash-joined groups that are no UUID, 48 digits or more (Mailgun's private key, `<32>-<8>-<8>`):
# one case of hex switches kind too seldom to read as random, and no hash or id is written so.
_HEX_GROUPS = re.compile(r"[0-9a-f]{32}(?:-[0-9a-f]{8}){2,}|[0-9A-F]{32}(?:-[0-9A-F]{8}){2,}")


def _random(value: str) -> bool:
    """Random-looking: 16+ characters switching kind at least every third, or 12+ with a symbol every so often;
    never mostly words (`_wordy`)."""
    n = len(value)
    if n < MIN_LENGTH or n > 4096:
        return False
    if _HEX_GROUPS.fullmatch(value):
        return True
    switches = class_switches(value)
    if switches < (max(6, 0.3 * n) if n >= 16 else max(5, 0.4 * n)):
        return False
    letters = (_LOWER.search(value) is not None) + (_UPPER.search(value) is not None) + (_DIGIT.search(value) is not None)
    if n >= 16:
        ok = letters + (_SYMBOL.search(value) is not None) >= 2
    else:
        ok = letters >= 2 and _SYMBOL.search(value) is not None
    return ok and (not _wordy(value) or _scattered(value))


_DIGIT_RUN = re.compile(r"\d+")


# Round 17 (second): a vendor's short prefix before the body (`hcaik_…`, `xkt-…`) is no separator inside it.
_VENDOR_PREFIX = re.compile(r"[a-z]{2,8}[_-](?=[a-z0-9]{24})")


def _scattered(value: str) -> bool:
    """Digits scattered through letters, five runs of them or more, no separator: no word or identifier is written
    so (`gxgra11k0x6j8gmsah6j1mcm9v`, a Mattermost token, whose letter runs read like syllables); after a vendor's
    short prefix too (round 17 (second): `abcd_<body>`)."""
    prefix = _VENDOR_PREFIX.match(value)
    body = value[prefix.end() :] if prefix is not None else value
    return len(_DIGIT_RUN.findall(body)) >= 5 and not any(char in body for char in "_-.")


def _ip_address(value: str) -> bool:
    """An IPv6 address (`fd7a:115c:a1e0::1b01:c07`), whose hex groups switch kind like a token's."""
    if ":" not in value:
        return False
    try:
        ipaddress.ip_address(value.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _harmless_form(value: str) -> bool:
    return bool(
        UUID_FORM.fullmatch(value)
        or _ip_address(value)
        or _in_form(value)
        or _PLACEHOLDER.match(value)
        or (_FILE.match(value) and not _HEX.fullmatch(value.rsplit(".", 1)[0]))
        or len(set(value)) <= 3
    )


# Hex digits in a digest or an id: 64-bit ids and hashes, ObjectIds, MD5, SHA-1, SHA-224/256/384/512 (a short
# commit SHA is 7 to 12).
DIGEST_LENGTHS = frozenset({16, 24, 32, 40, 56, 64, 96, 128})


def _hex_in_context(text: str, start: int, end: int, value: str) -> bool:
    """A hex string (one case) with hashes, commits or ids spoken of in the lines around it."""
    digits = value.replace("-", "")
    if not _HEX.fullmatch(digits) or not (7 <= len(digits) <= 12 or len(digits) in DIGEST_LENGTHS):
        return False  # a hash is as long as its algorithm makes it: 48 hex digits are no digest's
    return _HEX_CONTEXT.search(text, max(0, start - 300), min(len(text), end + 200)) is not None


_BRACED_BASE64 = re.compile(r"\{[A-Za-z0-9+/]{22,}={0,2}\}")
_FILE_AFTER = re.compile(r"(?: \*| {1,2})[\w.~/-][^\s]*[ \t]*(?:\r?\n|\Z)")


def _sealed_around(text: str, start: int, end: int) -> bool:
    """Round 16: a piece of ciphertext in braces (Maven's `{…}`, cut at its `/`): sealed as the whole value is."""
    opening = text.rfind("{", max(0, start - 200), start + 1)
    closing = text.find("}", end - 1, end + 200)
    return opening != -1 and closing != -1 and _BRACED_BASE64.fullmatch(text, opening, closing + 1) is not None


def _digest_of_file(text: str, end: int, value: str) -> bool:
    """Round 16: hex of a digest's length starting its line, then a file's name, as `sha256sum`/`md5sum` print
    (`<hex>  model.bin`)."""
    start = end - len(value)
    return (
        len(value) in DIGEST_LENGTHS
        and (start == 0 or text[start - 1] == "\n")
        and _HEX.fullmatch(value) is not None
        and _FILE_AFTER.match(text, end) is not None
    )


def _harmless(text: str, start: int, end: int, sensitive: frozenset[str]) -> bool:
    value = text[start:end]
    if _harmless_form(value) or _HASH_NAMED_BEFORE.search(text, max(0, start - 12), start):
        return True
    # A piece of a token in a hash's form (`p=8$…` inside `argon2$argon2id$v=19$m=…,t=2,p=8$salt$hash`).
    token_start = max(text.rfind(mark, max(0, start - 200), start) for mark in (" ", "\t", "\n", '"', "'")) + 1
    if token_start < start and _HASH_FORMS.match(text, token_start):
        return True
    # Class: a piece of a value a public key's name labels (a Z85 or base85 key cut at its `:`, `=`, `{`): public
    # as the whole value is.
    if _PUBLIC_LABEL.search(text, max(0, token_start - 40), token_start):
        return True
    if _sealed_around(text, start, end) or _digest_of_file(text, end, value):
        return True
    if _TYPED_KEY_PREFIX.search(text, max(0, start - 16), start):
        return True
    # Round 15: a request's signature header (`Stripe-Signature: t=…,v1=…`, `X-Twilio-Signature: …`): a MAC of that one
    # request, no key.
    if _SIGNATURE_HEADER.match(text, text.rfind("\n", max(0, token_start - 80), token_start) + 1, token_start):
        return True
    if value.startswith("!") and _MATRIX_ROOM.match(text, start):
        return True
    if value[:1] in ".#" and _RULE_AFTER.match(text, end):
        return True  # round 17 (second): a style sheet's selector (a CSS module's hashed class name `.card_<hash> {`)
    if "-Signature:" in text or "-Seal:" in text or "-signature:" in text:
        if _in_mail_signature(text, token_start):
            return True
    if _comment_names_credential(text, end, sensitive):
        return False
    if under_identifier_header(text, start) or under_encrypted_block(text, start):
        return True
    label = _label(text, start, sensitive)
    if label == "identifier":
        return True
    if label == "credential":
        return False
    if _hex_in_context(text, start, end, value) or (start and text[start - 1] == "@" and _HEX.fullmatch(value)):
        return True  # a hash spoken of around it, or a version pinned by its commit (`actions/checkout@<sha>`)
    if _content_addressed(text, start, end, value):
        return True
    if label == "binary" and len(value) >= 64:
        return True
    line_start = text.rfind("\n", max(0, start - 40), start) + 1
    if _SSH_PUBLIC.search(text, max(line_start, start - 40), start):
        return True
    # Round 15: a piece of a public key the type labels, cut at a `/` of its base64 (`ecdsa-sha2-nistp256 AAAA…/…`).
    if token_start < start and _SSH_PUBLIC.search(text, max(line_start, token_start - 40), token_start):
        return True
    # A JWK on the token's line, within JWK_REACH of it (a minified document is one line: copying and scanning it
    # whole for every token was quadratic).
    line_start = max(text.rfind("\n", max(0, start - JWK_REACH), start) + 1, start - JWK_REACH)
    line_end = text.find("\n", end, end + JWK_REACH)
    line = text[line_start : min(len(text), end + JWK_REACH) if line_end == -1 else line_end]
    if '"kty"' in line and not _JWK_PRIVATE.search(line):
        return True
    # Round 15: a JWK written a member a line (a JWKS endpoint's pretty JSON): its members between its braces.
    opening, closing = text.rfind("{", max(0, start - JWK_REACH), start), text.find("}", end, end + JWK_REACH)
    if opening == -1 or closing == -1:
        return False
    return text.find('"kty"', opening, closing) != -1 and not _JWK_PRIVATE.search(text, opening, closing)


# Class (round 17): a mail's signature headers (DKIM's, ARC's), their continued lines too: the body's hash (`bh=`) and
# the signature (`b=`) of that one message, public in every copy of it.
_MAIL_SIGNATURE = re.compile(r"(?i)(?:X-Google-)?(?:DKIM-Signature|ARC-Seal|ARC-Message-Signature):")
HEADER_LINES = 12  # continued lines read up to a header's name


def _in_mail_signature(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    for _ in range(HEADER_LINES):
        if _MAIL_SIGNATURE.match(text, line_start):
            return True
        if line_start == 0 or text[line_start : line_start + 1] not in (" ", "\t"):
            return False  # a header's own line, not a signature's: no continued line above it
        line_start = text.rfind("\n", 0, line_start - 1) + 1
    return False


# A comment after a statement on its line (`…; // clave secreta del comercio`, `x = '…'  # signing secret`).
# Only the value's closing quote and the statement's end between them.
_TRAILING_COMMENT = re.compile(r"""["'`]?[ \t]*[;,)\]]?[ \t]*[ \t](?://|#|--|/\*|<!--)[ \t]+(?P<comment>[^\n]{1,160})""")
_NOT_SECRET_COMMENT = re.compile(r"(?i)\bpublic\b|\bnot[ \t]+(?:a[ \t]+)?secret|\bno[ \t]+secret|\bnon-?secret")


def _comment_names_credential(text: str, end: int, sensitive: frozenset[str]) -> bool:
    """Class (round 12): a comment on the value's line that names a credential (`$claveSHA256 = '…'; // clave secreta`)
    says what the value is, over an identifier word in the variable's name (`SHA256`)."""
    line_end = text.find("\n", end, end + 240)
    comment = _TRAILING_COMMENT.match(text, end, end + 240 if line_end == -1 else line_end)
    if comment is None or _NOT_SECRET_COMMENT.search(comment.group("comment")):
        return False
    words = comment.group("comment")
    return any(is_sensitive(words[a:b], sensitive) for a, b in name_hits(words, sensitive, announcing=False))


JWK_REACH = 4096  # a JWK's members around a key's value, on one line

_PATH_FILE = re.compile(r"/[\w.\-+%]+\.[a-z][a-z0-9]{0,7}(?=[\s?#\"')]|$)")


def _content_addressed(text: str, start: int, end: int, value: str) -> bool:
    """A digest as a URL path's folder, a file's name under it (a package index's `/files/<sha256>/pkg-1.0.whl`,
    a CDN's `/<md5>/app.js`, the digest fanned out into folders: `/d3/32/<60 hex>/pkg.whl`), or a store path's
    hash before its name (Nix's and Guix's `/nix/store/<32 base32>-openssl-3.3.2`): content addressed by its
    hash, no credential."""
    if text[start - 1 : start] != "/":
        return False
    if _STORE_PATH.fullmatch(value) and text.endswith("/store/", 0, start):
        return True
    if len(value) < 32 or _HEX.fullmatch(value) is None or _PATH_FILE.match(text, end) is None:
        return False
    fanned = _FAN_OUT.search(text, max(0, start - 24), start)
    return len(value) + (len(fanned.group().replace("/", "")) if fanned else 0) in DIGEST_LENGTHS


_STORE_PATH = re.compile(r"[0-9a-df-np-sv-z]{32}-[\w.+\-]+")
_FAN_OUT = re.compile(r"(?:/[0-9a-f]{2}){1,3}/$")


_HEX_JOINED = re.compile(r"[0-9a-fA-F]{16,}(?::[0-9a-fA-F]{16,})+")
_PATH_WORD = re.compile(r"(?:^|[/@])[A-Za-z][a-z]{2,}(?:[.\-][a-z0-9]+)*(?=[/@]|$)")


def _path_like(value: str) -> bool:
    """A URL, a path or an image reference (`registry.example.org/web/app@sha256:…`): judged piece by piece."""
    return "://" in value or value.startswith(("/", "~/", "./")) or _PATH_WORD.search(value) is not None and bool(set("/@") & set(value))


def _pieces(text: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the values a token holds: the token itself when it is one value, else its pieces."""
    token = text[start:end]
    if token[-1] in ":=" and _NAME.fullmatch(token, 0, len(token) - 1):
        return  # Class (round 12): a key alone with its join (`WebUI\Password_PBKDF2=` before its quoted value)
    if _in_form(token) or UUID_FORM.fullmatch(token) or _DATA_URI.search(token) or _COLON_HEX.search(token) or _SEALED.match(token):
        return
    if ">" in token and _SEALED.match(token, token.index(">") + 1):
        return  # ciphertext as an element's text (`<encryptedValue>AES:…</encryptedValue>`)
    # `name=value`, `host:port:db:user:value`: the value after the names.
    at = start
    while True:
        prefix = _PREFIX.match(text, at, end)
        if prefix is None or end - prefix.end() < 8 or "//" in text[prefix.end() : prefix.end() + 2]:
            break
        if not _NAME.fullmatch(text, at, prefix.end() - 1):
            break  # `V61ZA:D.5Cr%{t`: what stands before the colon is no name but part of the value
        at = prefix.end()
    whole = text[at:end]
    if _HEX_JOINED.fullmatch(whole):
        # Class (round 12): digests joined by colons (pwdump's `lmhash:nthash`, `salt:hash`), each judged on its own.
        for part in whole.split(":"):
            yield at, at + len(part)
            at += len(part) + 1
        return
    if not _path_like(whole) and not _FORM_PAIRS.search(whole) and _random(whole):  # round 15: a form body's pairs apart
        yield at, end
        return
    offset = at
    for part in _CUT.split(whole):
        if len(part) >= MIN_LENGTH:
            piece_start = text.find(part, offset, end)
            yield piece_start, piece_start + len(part)
            offset = piece_start + len(part)


# Class (round 12): characters written as escapes that are no part of a token: RTF's `\uN?` (a document saved as RTF
# writes every character beyond Latin-1 so: `\u4675?\u4616?` is a word of Tigrinya) and HTML's quotes (`&#x27;`,
# `&quot;`: a Django debug page's `{&#x27;PASSWORD&#x27;: …}`), blanked as the line breaks are.
# Round 16: `cat -v`'s caret notation of a NUL (`^@`), which joins /proc/<pid>/environ's entries, ends a token too.
_ESCAPED_CHARACTER = re.compile(r"\^@|\\[nrt]|\\{1,2}u-?\d{1,5}\?|&(?:#[xX]0*(?:27|22)|#0*(?:39|34)|quot|apos);")


def fail_closed_spans(text: str, sensitive: frozenset[str], found: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[int, int]]:
    """Where random-looking values in no harmless form stand (a token among `found`, already learnt, skipped)."""
    # A line break written as an escape (`\n` in iCalendar, a JSON string inside text, a log's repr) ends a token
    # as the break itself does: two spaces, so offsets stay. Read through, it glued the next word to a value (the
    # document learnt `value\nNext`, which masks nothing once the text is an event's JSON).
    breaks = _ESCAPED_CHARACTER.sub(_blank, text) if "\\" in text or "&" in text or "^@" in text else text
    translated = " " + breaks.translate(_TABLE)  # offsets in `translated` are one more than in `text`
    blocks = public_blocks(text) if "-----BEGIN" in text else []
    if _VAULT_HEADER in text:
        blocks = sorted(blocks + vault_blocks(text))
    block_starts = [b0 for b0, _ in blocks]
    for stretch in _STRETCH.finditer(translated):
        start, end = stretch.start(), stretch.end() - 1  # the space before it is not part of it
        while start < end and text[start] in _LEAD:
            start += 1
        while end > start and text[end - 1] in _TRAIL:
            end -= 1
        if end - start < MIN_LENGTH or text[start:end] in found or (blocks and _in_blocks(blocks, block_starts, start)):
            continue
        for piece_start, piece_end in _pieces(text, start, end):
            while piece_end > piece_start and text[piece_end - 1] in _TRAIL:
                piece_end -= 1
            if _random(text[piece_start:piece_end]) and not _harmless(text, piece_start, piece_end, sensitive):
                yield piece_start, piece_end
    yield from typed_password_spans(breaks, sensitive, found)


def _blank(match: re.Match[str]) -> str:
    return " " * len(match.group())


# A password a person typed (`Sunflower#2931`, `P@ssw0rd!24`, `q8#Lp!x2@Vm`): 8 to 40 characters without a space,
# letters and digits with a mark inside. Too short for the pass above; unannounced, it stands as a positional
# argument (`htpasswd -b file user 'Gr8!Pass#77'`), after a slash (`admin / Sunflower#2931`) or in a WIFI: code.
# Tokens end at spaces, quotes, brackets and `,;|<>`, and at `=`, `:` (`P:Blue$Tiger!88`, `user:pw`).
# Round 16: in any alphabet (`știucăPădure365#`, `розаСлънце7953#`, `ดาวแมว9629*`): a letter of any script may start it.
_TYPED = re.compile(r"(?<![^\s'\"`=:;,|<>()\[\]{}])[^\W_][^\s'\"`=:;,|<>()\[\]{}]{6,38}[^\s'\"`=:;,|<>()\[\]{}.]")
_TYPED_MARKS = "!#$&*?@^~"
_TYPED_HINT = re.compile(r"[^\W_][!#$&*?@^~]")
# What such a token is when it is no password: an address or a host (`deploy@web-01`, `ops@example.org`), a
# package pinned by version (`lodash@4.17.21`), an issue or a line (`PR#4521`, `page.html#part2`), code (`a!=b`,
# `x&&y`, `Outer$Inner1.run`), a query string (`?page=2&limit=50`).
_ADDRESS = re.compile(r"[A-Za-z0-9_.+\-]{2,}@(?:[a-z0-9\-]+|[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)+)")
_REF = re.compile(r"(?i)(?:issue|issues|pr|prs|mr|bug|bugs|ticket|item|no|nr|num|step|line|l|task|story|case|build|run|job|order|id|gh|cve|rfc|ref|page|comment|note|fig|table|section|sec|part|chapter|ch|vol|rev|v|version|release|round|batch|shard|node|pod|replica|worker|agent|port|room|seat|gate|row|col|sheet|slide|episode|ep)#\d+")
_TYPED_CODE = re.compile(
    r"!=|==|&&|\|\||->|=>|::|\*\*|\?\.|\?\?|\.[a-z]{1,5}#|^[\w.]+\$[\w.$]+$|\$\{|\$\(|&[a-z_]+|\?[a-z_]+$|![rsa]$"
    r"|^[a-z][a-z0-9_.\-]*#\d+$|^[A-Za-z_]+#\d{1,2}$|^\d+#|[a-zA-Z0-9]-[zZ9]|abcdefgh|0123456789"
    # Class: a spreadsheet's cell or range (`Sheet1!A1`, `Bálvalusat!B2:C9`) and a distribution's package version
    # (`3.0.15-1~deb12u1`, `1:2.3-4ubuntu1~22.04`, `5.2.1-1+b2`).
    r"|![A-Z]{1,3}\d+$|^(?:\d+:)?\d+(?:\.\d+)+(?:[-+~][0-9A-Za-z.]+)+$"
)  # also `repo#1234` (an issue), `WORKER#2` (an ordinal), `a-z0-9` (a character class), an alphabet


_FORM_PAIRS = re.compile(r"&[A-Za-z_][\w.\[\]-]{0,40}=")


def typed_password_spans(text: str, sensitive: frozenset[str], found: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[int, int]]:
    """Where passwords a person typed stand (see _TYPED), unless a label or a form says what they are."""
    if not any(mark in text for mark in _TYPED_MARKS) or _TYPED_HINT.search(text) is None:
        return  # a substring test per mark first: the regex alone cost as much as the rest of the pass
    for match in _TYPED.finditer(text):
        value = match.group()
        marks = [i for i, char in enumerate(value) if char in _TYPED_MARKS]
        if not marks or value in found:
            continue
        if all(value[i] == "?" for i in marks) and not _quoted_argument(text, match.start(), match.end(), value):
            continue  # a question's mark, unless the token is a whole quoted argument (`register … 'Harbor42?'`)
        if _DIGIT.search(value) is None or _ANY_LETTER.search(value) is None or "/" in value or "\\" in value:
            continue
        if marks == [len(value) - 1] and not _two_cases_or_caseless(value):
            continue  # `team2024!` closes a sentence; `Winter2024!` is a password
        if _ADDRESS.fullmatch(value) or _REF.fullmatch(value) or _TYPED_CODE.search(value) or _VERSION_PIN.fullmatch(value):
            continue
        if _FORM_PAIRS.search(text, match.start(), min(len(text), match.end() + 64)):
            continue  # round 15: a form-encoded body's pairs (`To=US&SmsSid=SM…&Body=STOP`), `&` joins them
        if _harmless(text, match.start(), match.end(), sensitive):
            continue
        yield match.span()


_ANY_LETTER = re.compile(r"[^\W\d_]")
_CLOSING_MARKS = "!?"


def _two_cases_or_caseless(value: str) -> bool:
    """Whether a value with its one mark at the end is a password, not a sentence's last word: lower and upper case
    in any alphabet (`Winter2024!`, `зимаМедведь7014#`), or (round 16) letters of a script without case (Thai, kana,
    Han, Hangul) then a mark that closes no sentence (`ดาวแมว9629*`, `ほしうみ2187#`)."""
    letters = [char for char in value if char.isalpha()]
    if any(char.islower() for char in letters) and any(char.isupper() for char in letters):
        return True
    return value[-1] not in _CLOSING_MARKS and bool(letters) and all(char.lower() == char.upper() for char in letters)


def _quoted_argument(text: str, start: int, end: int, value: str) -> bool:
    """Class (round 12): a whole quoted argument (`'Lantern42?'`) is no sentence, so its last `?` ends none: a typed
    password when it holds lower and upper case and a digit."""
    quote = text[start - 1 : start]
    return (
        quote in ("'", '"')
        and text[end : end + 1] == quote
        and _LOWER.search(value) is not None
        and _UPPER.search(value) is not None
        and _DIGIT.search(value) is not None
    )


_VERSION_PIN = re.compile(r"[@\w.\-]+@[\^~]?\d+(?:\.\d+)*(?:[-+][\w.]+)?")


# A version or a version range (`^3.2.2`, `~1.4`, `>=2.0.1`, `v1.2.3-rc.1`): a dependency's, not a credential.
_VERSION = re.compile(r"(?:[\^~<>=]=?|v)?\d+(?:\.\d+){1,3}(?:[-+][0-9A-Za-z.]+)?")


def harmless_value(value: str, sensitive: frozenset[str] = frozenset()) -> bool:
    """A value no pass should learn, whatever announced it: a placeholder, a hash named by its algorithm, a version
    (not an identifier's form: a password shaped like a pod name is announced all the same), a reference to where
    a credential is (`${VAR}`, `?set DB_PASSWORD`, `data.vault_kv_secret_v2.db.data`, `%d/db-password`,
    `stripe-key:/etc/credstore/stripe-key`), or a credential's name (`password`, `redis-password`, `SECRET_KEY`:
    what a reference or an example names, in one case and without a digit)."""
    if _VERSION.fullmatch(value) or _REFERENCE.match(value) or _RECORD.fullmatch(value) or _EXPRESSION.match(value):
        return True
    if _SEALED.match(value) or _SETTING.fullmatch(value) or _STATUS.fullmatch(value) or _STATUS.fullmatch(value[:1].lower() + value[1:]):
        return True  # also a status in a sentence's case (`cat: …/admin.password: No such file or directory`)
    if _CRYPT_HASH.fullmatch(value) or _PUBLIC_FORM.fullmatch(value):
        return True
    if value.count(",") >= _ROW_COMMAS:
        return True
    if _MASK_RUN.fullmatch(value):
        return True  # what a prompt echoes for each character typed (`········`, `••••••••`), not what was typed
    if _CLOSING_TAG.match(value):
        return True  # the markup after a label (`Password:</b> …`): the value, if any, follows it
    if (_SENTENCE.search(value) and not _WORD_THEN_NUMBER.fullmatch(value)) or _BLOCK_KEY.fullmatch(value):
        return True  # a sentence in a script written without spaces (`…に設定してください。`), a key opening a block
    if sensitive and _NAME_ONLY.fullmatch(value) and is_sensitive(value, sensitive):
        return True
    if _ALGORITHM_NAME.fullmatch(value) or _COMMAND_LINE.search(value) or _COMMENT.match(value) or _jwt_header(value):
        return True  # round 17: what a value is computed or hashed with, a command, a comment after an empty value
    if _PASSWORD_MANAGER.fullmatch(value) or _DIGEST_NAMED.fullmatch(value):
        return True  # round 17 (second): where a secret is kept, a name holding its content's digest
    scheme = _SCHEME.match(value)
    if scheme is not None and (_PLACEHOLDER.match(rest := value[scheme.end() :]) or _REFERENCE.match(rest)):
        return True  # round 17 (second): an authorization's scheme before a reference (`Bearer ${{ secrets.X }}`)
    return bool(_PLACEHOLDER.match(value) or _HASH_FORMS.match(value) and not value.startswith(("$", "sha1$", "md5$")))


# Class (round 14): forms that are a name by design: a GnuPG key id after its algorithm (`ed25519/C00F100B49D2C0B4`), a
# dotted import path to a class (`django.contrib.auth.hashers.Argon2PasswordHasher`), a scrubbing rule's `@name`
# (Sentry's `@password`); round 15: or public by design.
_PUBLIC_FORM = re.compile(
    r"(?:rsa|dsa|elg|ed|cv|nistp|brainpoolP)\d{3,5}(?:r1)?/(?:[0-9A-F]{8,16}|[0-9a-f]{8,16})"  # round 17 (second): either case
    r"|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,}\.[A-Z][a-z]+(?:[A-Z0-9][a-z0-9]*)+"
    r"|@[a-z]+(?:[_:][a-z]+)*"
    # Round 15: an error tracker's DSN with its public key alone (Sentry's `https://<32 hex>@o1.ingest.sentry.io/42`, set
    # in a browser's code by design); a DSN with `:secret@` still holds a secret.
    r"|https?://[0-9a-f]{32}@[\w.-]+(?::\d+)?/\d+"
    # Round 17 (second): a .NET type's name where a value would be (PowerShell shows a SecureString's as `System.Security.SecureString`).
    r"|(?:System|Microsoft)(?:\.[A-Z][A-Za-z0-9]+)+"
    # Round 16: an age recipient (`age1…`, bech32): the public half, what sops and age encrypt to.
    r"|age1[02-9ac-hj-np-z]{50,70}|age1[0-9a-z]{58}"
    # Round 17 (second): a wallet's public side: an extended public key (BIP-32's `xpub…`, `ypub`, `zpub`, testnet's `tpub`,
    # `upub`, `vpub`; a private one is `xprv`) and a bech32 address (`bc1…`, `tb1…`, `ltc1…`): what is shared to be paid.
    r"|[xyztuvYZUV]pub[0-9A-Za-z]{100,112}|(?:bc|tb|bcrt|ltc|tltc)1[02-9ac-hj-np-z]{25,87}"
)


# Where a credential is kept, not the credential: a shell or compose variable and its messages, a Terraform
# expression, a systemd credential (`%d/name`, `id:/path`), a path's id prefix, a command whose output it is
# (`$(op read op://…)`), code reading it at run time (`process.env.DB_PASSWORD!`, `window.__APP__.clientSecret`,
# `ENV['TOKEN']`, `System.getenv("TOKEN")`), a YAML tag that says where or how it is kept (`!vault |`, `!secret x`).
_REFERENCE = re.compile(
    r"""(?x)
    (?i:(?:bearer|basic|token)[ \t]+)?\$\{?[A-Za-z_]\w*(?:[:?\-+=][^}\s]*)?\}?$               # $VAR, ${VAR}, ${VAR:-x}
    | \?(?:set|required|missing)\b.*                                                  # compose's ${VAR:?set VAR}
    | (?:data|var|local|module|each|self)\.[A-Za-z_][\w.\-]*(?:\[["'][\w.\-]+["']\])?$   # Terraform
    | %[a-zA-Z]/[\w.\-/]+$                                                             # systemd %d/name
    | (?:[\w.\-]+=)?[\w.@\-]+:(?:/[\w.\-]+)+$                                              # id:/path
    | [a-z][a-z_\-]*(?:/[a-z][a-z_\-]*){1,}$                                             # a store's path of words (round 17: two, `apps/checkout`)
    | \((?:sensitive(?:\ value)?|known\ after\ apply)\)$                                # Terraform's plan
    | _[a-z][a-z0-9]*(?:_[a-z0-9]+)*$                                                   # a private name in code
    | \$\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)$ | `[^`\n]+`$ | \$\([\w.\-/]*$             # a command's output: $(op read …)
    | (?:process\.env|import\.meta\.env|window|globalThis|Deno\.env)(?:\.[\w$]+|\[[^\]\n]+\])+!?[;,]?$    # read at run time
    | os\.environ/[A-Za-z_]\w*$ | \$__(?:env|file|vault)\{[^{}\n]+\}$                     # round 15: LiteLLM's and Grafana's references
    | @Microsoft\.(?:KeyVault|AppConfiguration)\([^()\n]+\)$                                # round 16: Azure's app settings' references
    | (?:ENV|os\.environ|\$_ENV|\$_SERVER)\[[^\]\n]+\][;,]?$ | (?:System\.getenv|Environment\.GetEnvironmentVariable|getenv)\([^()\n]+\)[;,]?$
    | (?:std::)?env::var(?:_os)?\b.*$ | (?:ENV|System)\.(?:fetch|get_env|fetch_env)!?(?:\(.*)?$                 # round 17 (second): Rust's, Ruby's, Elixir's
    | (?:op|ref\+[a-z0-9]+|akv|gcpsm|awssm|sm|bws|infisical|doppler)://[^\n]+$              # round 17 (second): a secret manager's reference
    | ![a-z][A-Za-z_-]*(?:[ \t]+[|>][-+]?|[ \t]+[\w.\-]+)?$                               # a YAML tag, a word (`!vault |`, `!secret db_pw`; not `!a2222…`)
    | (?:Read|Get|New|Import|Invoke|ConvertFrom|Select|Unprotect)-[A-Z]\w+(?:[ \t].*)?$       # a PowerShell cmdlet computes it (`Read-Host -AsSecureString`)
    | <set\ to\ the\ key\ '[^'\n]*'\ (?:of|in)\ secret\ '[^'\n]*'>.*                   # round 17: kubectl describe's env from a Secret
    """
)
# A record of when or which, never a credential: a timestamp (ISO 8601, or packed as LDAP's CSN writes it:
# `20260818071914.736071Z#000000#000#000000`), a range of commits (`7d51d45..e6562c9`).
_RECORD = re.compile(
    r"(?:19|20)\d\d-?(?:0[1-9]|1[0-2])-?(?:0[1-9]|[12]\d|3[01])(?:[T ]?[0-2]\d:?[0-5]\d(?::?[0-5]\d(?:[.,]\d+)?)?)?"
    r"(?:Z|[+-]\d\d:?\d\d)?(?:#\d+)*"
    r"|[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}"
)
# Code that computes a value, not a literal: a call or a subscript of a lower-case name (`base64.b64decode(b64salt)`,
# `data[:22],`, `_cookie_signer_salt(cookie_name`), a call's opening alone (a repr's `SecretStr('**********')`).
# Round 13: a member of any case after the lower-case name (`prefs.getString("password", "")`, `cfg.GetValue(…)`),
# and a comment after the code (`os.getenv("DB_PASSWORD")  # set by the operator`).
_EXPRESSION = re.compile(
    r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*[(\[](?:.*[)\],;:]|[^)\]]*)(?:[ \t]+(?://|#)[ \t][^\n]*)?$|[A-Za-z_][\w.]*\(b?[\"']?$"
)
_CLOSING_TAG = re.compile(r"</[A-Za-z][\w:.\-]*>")
# Class (round 13): a sentence where a value was looked for: a CJK full stop or comma, or kana particles in a row
# (`パスワードは12文字以上に設定してください。`: the rule, not a password).
_SENTENCE = re.compile(r"[。、]|[\u3040-\u309f]{3}")
# Round 16: no sentence is a word then a number and a mark, glued (`ほしうみ2187#`: a password typed in kana).
_WORD_THEN_NUMBER = re.compile(r"[^\W\d_]{2,}\d{2,}[!#$%&*?@^~._-]?")
# Class (round 13): a YAML or INI key that opens a block (`secretKeys:` under `auth:`), no value of its own.
_BLOCK_KEY = re.compile(r"[A-Za-z][A-Za-z_\-]*:")
# Class: one masking character repeated (a masked echo: `getpass`'s dots, a form's bullets, stars).
_MASK_RUN = re.compile(r"([*•·●∙⋅◦○■□▪⁕✱xX#])\1{3,}")
_ROW_COMMAS = 3  # a value holding three commas or more is a row of fields or a list (`be_api,BACKEND,0,0,13,…`)
# Ciphertext a tool keeps in place of a secret (only its key opens it): hiera-eyaml's and sops's `ENC[…]`, an
# Ansible vault, Vault transit's `vault:v1:`, a PGP message's armor, a Bitnami sealed secret (`AgB…`, long),
# Pulumi's `secure: v1:…` (standard base64 after the version: `+`, `/` or `=` in it), and the marks other tools
# put before their ciphertext: dotenvx's `encrypted:…`, EJSON's `EJ[1:…]`, Cirrus CI's `ENCRYPTED[…]`, GoCD's
# `AES:<iv>:<ciphertext>` (base64 both).
_SEALED = re.compile(
    r"ENC\[|\$ANSIBLE_VAULT;|vault:v\d+:|-----(?:BEGIN|END) PGP MESSAGE-----"
    r"|(?i:encrypted)(?::[A-Za-z0-9+/]{16}|\[)|EJ\[\d+:|AES:[A-Za-z0-9+/]{16,}={0,2}:[A-Za-z0-9+/]{16}"
    r"|v1:(?=[A-Za-z0-9+/=:]*[+/=])[A-Za-z0-9+/]{8,}={0,2}(?::(?:v1:)?[A-Za-z0-9+/]{8,}={0,2})*$"
    # Round 16: a sealed secret whatever its third character (`AgQ…`, `Agz…`); Maven's and Jenkins' encrypted password,
    # base64 in braces (`{gM/…=}`, `{AQAAABAAAAAQ…}`); Rails' encrypted credentials (`<ciphertext>--<iv>--<tag>`);
    # Bitwarden's cipher string (`2.<iv>|<ciphertext>|<mac>`).
    r"|Ag[A-Za-z0-9+/]{300}|\{[A-Za-z0-9+/]{22,}={0,2}\}$"
    r"|[A-Za-z0-9+/]{16,}={0,2}--[A-Za-z0-9+/]{12,}={0,2}--[A-Za-z0-9+/]{12,}={0,2}$"
    r"|\d\.[A-Za-z0-9+/]{16,}={0,2}\|[A-Za-z0-9+/]{16,}={0,2}(?:\|[A-Za-z0-9+/]{16,}={0,2})?$"
    # Round 17 (second): a cloud KMS's ciphertext blob (AWS KMS's `AQICAH…`, `AQIBAH…`, `AQEDAH…`: its version and format bytes).
    r"|AQ[EI][BCD]AH[A-Za-z0-9+/]{60,}={0,2}$"
)
# Class (round 12): a password's hash in the whole shape of its crypt(3) scheme (bcrypt, md5-crypt, sha-crypt,
# yescrypt, argon2), whatever key holds it (AdGuard's `users: - password: $2y$10$…`): no typed password has it.
_CRYPT_HASH = re.compile(
    r"\$2[abxy]?\$\d\d\$[./A-Za-z0-9]{53}"
    r"|\$(?:1|5|6|apr1)\$(?:rounds=\d+\$)?[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,86}"
    r"|\$y\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{1,86}\$[./A-Za-z0-9]{43}"
    r"|\$argon2(?:id|i|d)\$v=\d+\$m=\d+,t=\d+,p=\d+\$[A-Za-z0-9+/]{8,}\$[A-Za-z0-9+/]{16,}"
    # Round 16: Cisco's type 8 (PBKDF2) and type 9 (scrypt) secrets (`enable secret 9 $9$<salt>$<hash>`).
    r"|\$[89]\$[./A-Za-z0-9_\-]{8,16}\$[./A-Za-z0-9_\-]{40,46}"
    # Round 16: Mosquitto's PBKDF2-SHA512 (`$7$<iterations>$<salt>$<hash>`, base64 both), a password file's lines.
    r"|\$7\$\d{1,7}\$[A-Za-z0-9+/]{12,24}={0,2}\$[A-Za-z0-9+/]{40,}={0,2}"
    # Round 17: Redis' ACL rule for a password given by its SHA-256 (`#<64 hex>`, what `ACL LIST` prints).
    r"|#[0-9a-f]{64}"
    # Round 17 (second): any PHC string (`$<id>[$v=<n>][$<param>=<value>,…]$<salt>$<hash>`), its base64 padded too (Authelia's
    # `$argon2id$…$…==$…=`, passlib's `$pbkdf2-sha256$…`).
    r"|\$[a-z][a-z0-9-]{1,31}(?:\$v=\d+)?(?:\$[a-z0-9-]{1,16}=[\w/+.-]+(?:,[a-z0-9-]{1,16}=[\w/+.-]+)*)?"
    r"\$[A-Za-z0-9+/.]{8,}={0,2}\$[A-Za-z0-9+/.]{16,}={0,2}"
)
# A setting's value, not a secret: a registry type (`dword:00000005`), a word assigned to a word (`mode=dynamic-keys`),
# a list item naming a variable (`- DB_PASSWORD`).
# Round 13: a setting to a number (`max_tokens=1024`, `timeout=30s`) after a credential word in prose.
_SETTING = re.compile(
    r"(?:dword|qword|hex(?:\(\d\))?):[0-9a-fA-F,]+|[a-z][a-z\-]*=[a-z][a-z\-]*|- [A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
    r"|[a-z][a-z_\-]*=\d+(?:\.\d+)?[a-z%]{0,3}"
)
# What a tool prints about a password, not a password: `password updated successfully`, `not yet set`, its size
# (`kubectl describe secret`'s `24 bytes`).
_STATUS = re.compile(
    r"(?:not|never|no|none|unset|empty|missing)(?: [a-z]+){1,5}|[a-z]+(?: [a-z]+){1,5} [a-z]+(?:ly|ed)"
    r"|\d+(?:[.,]\d+)? ?(?:bytes?|[KMGT]i?B|chars?|characters)"
    # Round 12: an operating system's error where a value would be (`cat: …/admin.password: Permission denied`).
    r"|(?:permission|access) denied|operation not permitted|(?:is|not) a directory|file exists|read-only file system"
)
# Class (round 17): the name of an algorithm or an encoding (`password_hash_algo,…,argon2id`, `… | base64 -d`), never
# what it hashes or encodes.
_ALGORITHM_NAME = re.compile(
    r"(?i)base(?:16|32|58|64)(?:url)?|bcrypt|scrypt|yescrypt|argon2(?:id|i|d)?|pbkdf2(?:[-_]sha\d+)?|sha-?(?:1|224|256|384|512)|md5"
)
# Class (round 17): a command line, not a value: a shell's `&&`, `||` or pipe between words (`VAULT_TOKEN && export
# VAULT_TOKEN`), a history's line (`  311  vault login …`), words then a long option (`op item get … --reveal`);
# round 17 (second): a variable's name then `;` and the next command (`read -s -p "Password: " PW; echo`).
_COMMAND_LINE = re.compile(r"\S[ \t]+(?:&&|\|\||\|)[ \t]+\S|^[ \t]*[A-Za-z_]\w*;[ \t]+[a-z][\w-]*(?:[ \t]|$)|^[ \t]*\d{1,6}[ \t]{2}[a-z]|^[a-z][\w.-]*(?:[ \t]+[^\s-]\S*)+[ \t]+--[a-z][\w-]+(?:[= \t]|$)")
# Class (round 17): a JWT's header alone (a token written `eyJ….<claims>.<signature>` in a document, cut at its `.`):
# it names the algorithm and the key, public in every token signed.
_JWT_HEADER_MEMBERS = frozenset({"alg", "typ", "kid", "cty", "x5t", "jku", "enc", "zip", "crit", "b64"})


def _jwt_header(value: str) -> bool:
    if not value.startswith("eyJ") or "." in value or len(value) > 400:
        return False
    try:
        header = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (ValueError, binascii.Error):
        return False
    return isinstance(header, dict) and bool(header) and set(header) <= _JWT_HEADER_MEMBERS


# Class (round 17, second): a password manager's name where a value would be (`1Password "Infra"`), in any language.
_PASSWORD_MANAGER = re.compile(r"(?i)1password|bitwarden|vaultwarden|keepass(?:xc|dx)?|lastpass|dashlane")
# Class (round 17, second): a name that ends in its content's digest (a CI cache's `deps-v3-linux-<sha256>`, an artifact's
# `node-modules-lock-<sha1>`): three words or more joined by dashes, then a whole SHA-1 or SHA-256 in hex (a vendor's
# prefix is shorter or joined by `_`: DigitalOcean's `dop_v1_<64 hex>` is a token).
_DIGEST_NAMED = re.compile(r"[a-z][a-z0-9]{2,}(?:-[a-z0-9]+){2,6}-(?:[0-9a-f]{40}|[0-9a-f]{64})")
# An authorization's scheme before its value (`Bearer …`, `Basic …`, `Token …`, `Bot …`).
_SCHEME = re.compile(r"(?i)(?:bearer|basic|token|bot)[ \t]+")
# Class (round 17): an empty value and the comment after it (`OPENAI_API_KEY=    # https://…/api-keys`).
_COMMENT = re.compile(r"(?:#|//)[ \t]")
# One case, letters and separators only: a name (`db-password`, `SECRET_KEY`), not a password (`MyPassw0rd`).
_NAME_ONLY = re.compile(r"[a-z]+(?:[_\-.][a-z]+)*|[A-Z]+(?:[_\-.][A-Z]+)*")


def fail_closed_secrets(text: str, sensitive: frozenset[str], found: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The random-looking values of a text that stand in no harmless form (see the module's docstring); `found`:
    values already learnt from it (a token that is one of them is not looked at again)."""
    values = {v for s, e in fail_closed_spans(text, sensitive, found) if is_maskable(v := text[s:e]) and v not in found}
    if values and "(" in text:
        values |= {v for v in _siblings(text, values) if v not in found and is_maskable(v)}
    return values


# Class (round 12): a key and its secret given side by side to a call (`Airship("<app key>", "<master secret>")`,
# `Client("<id>", "<secret>")`): when one literal argument is learnt, another of the same length and alphabet beside it
# is a credential of the same pair, even when its letters happen to read like syllables.
# (A quote may be escaped, or read as two spaces: the call inside an event's JSON.)
_QUOTE = r"""(?:\\?["']|  )"""
_ARGUMENTS = re.compile(
    r"\((?P<args>[ \t]*" + _QUOTE + r"[A-Za-z0-9_\-+/=]{16,128}" + _QUOTE
    + r"(?:[ \t]*,[ \t]*" + _QUOTE + r"[A-Za-z0-9_\-+/=]{16,128}" + _QUOTE + r"){1,3})[ \t]*[,)]"
)
_ARGUMENT = re.compile(r"[A-Za-z0-9_\-+/=]{16,128}")


def _siblings(text: str, values: set[str]) -> Iterator[str]:
    for call in _ARGUMENTS.finditer(text):
        arguments = _ARGUMENT.findall(call.group("args"))
        learnt = [a for a in arguments if a in values]
        for argument in arguments:
            if argument in values or _harmless_form(argument) or class_switches(argument) < MIN_RUNS:
                continue
            if any(len(a) == len(argument) and _alphabet(a) == _alphabet(argument) for a in learnt):
                yield argument


def _alphabet(value: str) -> tuple[bool, ...]:
    """Which of base64's extra characters a value uses (`-_` of the URL alphabet, `+/=` of the standard one)."""
    return tuple(char in value for char in "-_+/=")


def may_fail_closed(text: str, sensitive: frozenset[str]) -> bool:
    """The gate's part: whether the pass finds anything in the text (a text without a stretch that switches kind
    often enough costs one translate and one regex pass)."""
    return next(fail_closed_spans(text, sensitive), None) is not None
