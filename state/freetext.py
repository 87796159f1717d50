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

import bisect
import itertools
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from state.sensitive import (
    ANNOUNCING_NAMES,
    FILE_NAME,
    GLUED_JOIN,
    REDACTED,
    SECRET_ARMOR,
    holds_any,
    is_maskable,
    is_sensitive,
    name_hits,
    names_a_hash,
    needle_matcher,
    normalise_key,
)

# `is` in the languages of the other-language names (AWP_SENSITIVE_FIELDS): Latvian and Lithuanian `ir`/`yra`,
# Swahili `ni`, Tagalog `ay`, Welsh `yw`/`ydy`, Albanian `është`, Georgian `არის`, Malay `ialah`/`adalah`,
# Catalan `és`, Bulgarian `е`, Serbian `је`, Vietnamese `là`.
_COPULA = (r"(?:is|was|are|=|ist|lautet|war|es|est|este|je|é|è|är|er|wordt|jest|је|ir|yra|ni|ay|yw|ydy|është|eshte|არის|ialah|adalah|és|е|là|estas|dia|—|–"
    # Round 11: Yiddish `איז`, Hebrew `הוא`/`היא`, Arabic `هو`/`هي`, Greek `είναι`, Thai `คือ`, Somali `waa`, Hmong `yog`,
    # Javanese `iku`/`yaiku`, Sundanese `nyaeta`, Igbo `bu`, Hausa `shine`/`itace`.
    r"|איז|הוא|היא|هو|هي|είναι|คือ|waa|yog|iku|yaiku|nyaeta|nyaéta|bu|bụ|shine|itace"
    # Round 12: Xhosa and Zulu `ngu`/`yi`, Sesotho and Setswana `ke`, Chichewa `ndi`, Tok Pisin `em`, Cebuano `kay`.
    r"|ngu|yi|ke|ndi|em|kay"
    # Round 13: Bengali `হলো`/`হল`/`হচ্ছে`, Hindi and Marathi `है`/`आहे`, Tamil `ஆகும்`.
    r"|হলো|হল|হচ্ছে|है|आहे|ஆகும்"
    # Round 14: Maltese `hija`/`huwa`, Irish `ná`, Zulu's `ithi` (it says); Estonian's and Finnish' `on` only right
    # after their words (`parool on …`, `salasana on …`: in English, `auth on node-12` is no copula).
    r"|hija|huwa|ná|ithi|(?:(?<=arool )|(?<=alasana )|(?<=alasõna )|(?<=alasanasi )|(?<=alasanani )|(?<=alasananne ))on"
    # Round 15: French's spoken `c'est` (`le mot de passe c'est …`).
    r"|c['’]est"
    # Round 17: Haitian Creole's `se`, only right after its word or its word and a possessive (`modpas ou se …`: in
    # English, `se` is no word).
    r"|(?:(?<=odpas )|(?<=odpas ou )|(?<=odpas mwen )|(?<=odpas li )|(?<=odpas nou ))se)")
# Round 15: Polish says `is` with `to` (`hasło do konta to …`), a copula only after Polish's word (`_polish_to`): in
# English `password to the server` is no copula.
# Round 17 (second): Romanian's spoken `e` (`parola pentru contul de test e …`), a copula only after Romanian's word: in
# Italian and Portuguese `e` is `and`.
_COPULA_JOIN = _COPULA[:-1] + "|to|e)"
_OWN_COPULA = re.compile(r"[ \t](?P<word>to|e)(?:[ \t]*:)?[ \t]+\Z")
_OWN_COPULA_NAMES = {"to": ("hasło", "haslo", "hasła", "hasla"), "e": ("parola", "parolă", "parolei", "parolele")}


def _polish_to(text: str, name_start: int, name_end: int, join: re.Match[str]) -> bool:
    """Whether a join that ends in a language's own copula (Polish's `to`, Romanian's `e`) follows that language's
    word for password (then it says `is`)."""
    own = _OWN_COPULA.search(join.group())
    return own is None or text[name_start:name_end].rstrip("\"'`*_]}").lower() in _OWN_COPULA_NAMES[own.group("word")]


# What may stand between a sensitive name and its value (the name's closing decoration already skipped).
_JOIN = re.compile(
    r"""(?P<attr>(?:[ \t]+[\w\-:]+[ \t]*=[ \t]*(?:"[^"<>]*"|'[^'<>]*'))*?[ \t]+(?:value|content)[ \t]*=[ \t]*)"""
    # A tag's end, after its attributes when the name opens an element (`<Pass encoding="base64">x</Pass>`).
    r"""|(?P<tag>(?P<attrs>(?:[ \t]+[\w\-:]+[ \t]*=[ \t]*(?:"[^"<>\n]*"|'[^'<>\n]*'))*)>)"""
    r"""|(?P<eq>[ \t]*(?:=>|=(?!>))[ \t]*(?=\S))"""
    # A COBOL data item's picture, then its VALUE clause (`01 WS-DB-PASSWORD PIC X(16) VALUE '…'.`).
    r"""|(?P<pic>[ \t]+(?i:PIC(?:TURE)?)[ \t]+\S+[ \t]+(?i:VALUE)[ \t]+)"""
    # A network device's type of the secret after its name (`password 0 x`, `key 7 0822…`: IOS, NX-OS, EOS).
    r"""|(?P<ios>[ \t]+[07][ \t]+(?=\S))"""
    r"""|(?P<cell>[ \t]*\|[ \t]*)"""
    # Round 14: a two-column table's row, the name quoted then its value quoted last on the line (a device's CSV
    # export, `"LDAP Password","…"`).
    r"""|(?P<csv>[ \t]*[,;\t][ \t]*(?="[^"\n]+"[ \t]*(?:\r?\n|\Z)))"""
    # Round 15: a flag as an element of an argument array, its value the next element (an MCP server's `"args":
    # ["--access-token", "…"]`, Python's `["--password", pw]`), on the same line or the next.
    r"""|(?P<argv>[ \t]*,[ \t]*(?:\r?\n[ \t]*)?(?=["']))"""
    # Round 15: a setter's quoted argument (`config.setApiKey("…")`, `builder.withPassword('…')`).
    r"""|(?P<call>\([ \t]*(?=["']))"""
    # A label's colon, then the markup that closes the label and opens its value (a Word document's runs,
    # `Password: </w:t></w:r><w:r><w:t>…`; HTML's `<b>Password:</b> …`, `<td>Password:</td><td>…`).
    # Round 17: or the label's element closed, and the value's opened on the next line (`<td>Passwort:</td>` then
    # `<td class="mono">…</td>`).
    r"""|(?P<markup>[ \t]*:[ \t]*(?:(?:</?[A-Za-z][\w:.-]*(?:[ \t]+[^<>\n]*)?/?>[ \t]*){1,8}"""
    r"""|(?:</[A-Za-z][\w:.-]*>[ \t]*){1,4}\r?\n[ \t]*(?:<[A-Za-z][\w:.-]*(?:[ \t]+[^<>\n]*)?>[ \t]*){1,4})(?=[^\s<]))"""
    # `is` (_COPULA), a dash, Armenian's `՝`, and the CJK joins that take no spaces (`密码是…`, `密码：…`, `パスワードは…`,
    # `비밀번호는…`).
    r"""|(?P<is>[ \t]+""" + _COPULA_JOIN + r"""(?:[ \t]*:)?[ \t]+|[ \t]*:[ \t]+|[ \t]*՝[ \t]*"""
    # Round 14: English's `is` contracted onto the name (`the password's …`), the apostrophe already skipped.
    r"""|(?<=['’])s[ \t]+"""
    # Round 14: LDIF's `::`, a base64 value (`userPassword:: e2NyeXB0fQ==`).
    r"""|::[ \t]+"""
    r"""|[ \t]*(?:：|是|为|為|係|は|는|은)[ \t]*"""
    # Round 13: Thai's, Lao's and Khmer's `is`, after what the credential is for, glued as those scripts write it
    # (`รหัสผ่านเข้าเครื่องเซิร์ฟเวอร์คือ …`).
    r"""|[\u0e00-\u0e7f]{0,60}?คือ[ \t]*|[\u0e80-\u0eff]{0,60}?(?:ແມ່ນ|ຄື)[ \t]*|[\u1780-\u17ff]{0,60}?(?:គឺ|គឺជា)[ \t]*)"""
    # What the credential is for, then `is` (`the password for the office wifi is …`, `nenosiri lako la muda ni …`,
    # `password ng wifi sa bahay ay …`): words, no digit or mark, before the copula; the value must look like one.
    # Round 16: a word of an Indic script holds its vowel signs and viramas (marks, no word characters to `\w`) and
    # the joiners (`పంపిస్తున్నా`: "I am sending").
    r"""|(?P<qual>(?:[ \t]+[^\W\d_](?:[^\W\d_]|[\u0900-\u0dff\u200c\u200d]){0,19}(?:['-][^\W\d_]{1,20})?){1,6}?[ \t]+""" + _COPULA_JOIN.replace("=|", "") + r"""(?:[ \t]*:)?[ \t]+)"""
    r"""|(?P<next>[ \t]*(?::|=>|->)?[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*)"""
    r"""|(?P<space>[ \t]+)"""
)
_SIGNATURE_HEADER = re.compile(r"(?:[A-Za-z0-9]+-)+(?i:signature)(?:-\d+)?")
_HMAC_SIGNATURE = re.compile(r"(?i)hmac[_-]?signature")
_SETTER = re.compile(r"(?<![A-Za-z0-9])(?:set|with|Set|With)_?[A-Z_]\w*\Z")
_CALL_NAME = re.compile(r"""\w[ \t]*\([ \t]*["'][\w.\-]{0,80}\Z""")
_ARGV_FLAG = re.compile(r"""(?<![\w"'])(["'])-{1,2}[\w.-]+\1\Z""")
_CSV_NAME_CELL = re.compile(r'[ \t]*"[^",\n]{0,40}')
_QUOTED_VALUE = re.compile(r"""(["'`])([^"'`\n]+?)\1""")
# An SQL string literal: a national or escape prefix (`N'…'`, `E'…'`), a quote written twice inside (`'it''s'`).
_SQL_STRING = re.compile(r"[NnEe]?'((?:[^'\n]|''){1,4096})'(?!')")
_LABEL_DECORATION = " \t[\"'`*_#>-"
_TYPED_STRING = re.compile(r"""\w+\(\d+\)[ \t]+(["'])([^"'\n]+)\1[ \t]*,?[ \t]*(?=\r?\n|$)""")
# At most one character past MAX_SECRET_LENGTH (a longer value is no credential either way): from every name in a
# long run (`token=token=…`) an unbounded match scanned to the run's end, quadratic in the run.
_BARE_VALUE = re.compile(r"""[^\s"'`<>|,;&(){}\[\]]{1,4097}""")
_TRAILING = ".,;:!?"
# Commands and protocol lines that carry a credential, in one table: each names the sign the detector's gate
# looks for (lower case; `state.redaction` adds these signs to its form automaton), the test that confirms the
# sign where it stands, and where the credential is. A tool (`word` and `flags`): the flags after the command's
# word on its line (mysql -pX / --password X, redis-cli -a X, sshpass -p X, curl -u user:pw, net-snmp's v3 pass
# phrases -A/-X, zip/unzip -P, 7z/rar -p, openssl -k, Samba's user%password), each line read once (a regex that
# scanned on from every occurrence of the word was quadratic: 50,000 `mysql` on one line took minutes). A form
# (`form`, anchored where it starts): openssl's -passin/-passout pass:X, GitHub's ::add-mask::, wpa_passphrase's
# second argument, a WIFI: QR payload's P: field, and what mail and file-transfer clients send (IMAP `LOGIN user
# pw`, POP3/FTP `PASS pw`, SMTP `AUTH PLAIN`).
# A word starts after a non-word character or after a JSON escape (`\n` in a serialized event).
_AT_WORD = r"(?:(?<![\w-])|(?<=\\[nrt]))"
_VALUE = r"['\"]?(?P<secret>[^\s'\"-][^\s'\"]*)"


@dataclass(frozen=True)
class CredentialCommand:
    sign: str
    # Matched at the sign's offset (the sign lower-cased) in the original text by the gate: true wherever the word
    # or the form would find something (the gate may open for nothing, never stay shut on a credential).
    confirm: re.Pattern[str]
    word: re.Pattern[str] | None = None  # a tool: its word, searched line by line
    flags: tuple[re.Pattern[str], ...] = ()  # a tool: its credential flags, after the word on its line
    form: re.Pattern[str] | None = None  # a form: group `secret` where it stands
    accepts: Callable[[re.Match[str]], bool] | None = None  # a form's test of what it found (None: anything)
    needs: str = ""  # a form's other word (lower case), without which it finds nothing: not read without it


def _tool(sign: str, word: str, *flags: str) -> CredentialCommand:
    pattern = re.compile(_AT_WORD + word + r"(?![\w-])")
    return CredentialCommand(sign, pattern, pattern, tuple(re.compile(flag) for flag in flags))


def _form(sign: str, confirm: str, form: str, accepts: Callable[[re.Match[str]], bool] | None = None, needs: str = "") -> CredentialCommand:
    return CredentialCommand(sign, re.compile(confirm), form=re.compile(form, re.M), accepts=accepts, needs=needs)


# Any tool's login line: a user flag, then (within LINE_REACH on its line) a short password flag with its value
# (`docker login -u ci -p …`, `az login --service-principal -u <app> -p …`, `cypher-shell -u neo4j -p '…'`,
# `mosquitto_pub … -u gw -P …`, `xcrun altool -u … -p "…"`). A port (`-p 8883`, `-p 8080:80`) is skipped; an
# unquoted value must look like a credential (`mysql -u root -p mydb` names a database).
_USER_THEN_PASSWORD = (
    r"(?:^|[ \t])(?:-[uU]|--user(?:name)?)(?:[ \t]+|=)(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"-]\S*)[^\n]{0,200}?[ \t]-[pP](?:[ \t]+|=)?"
    r"(?![\d:.,/]+(?:[\s'\"]|$))(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{6,128}|(?!%[\w.]+%)[^\s'\"$<{-][^\s'\"]{7,127}))(?(q)(?P=q))"
)


def _login_password(match: re.Match[str]) -> bool:
    """Quoted, or no word in lower case (`mysql -u root -p orders` names a database; `-P XPJSFNQQQP` is ipmitool's
    password), and no option of its own (`-P format=html`)."""
    value = match.group("secret")
    return match.group("q") is not None or (credential_shaped(value) or not value.islower()) and "=" not in value


# A value piped into a command that stores it as a secret (`echo "…" | npx wrangler secret put NAME`, `printf %s … |
# gh secret set NAME`, `… | docker login --password-stdin`, `… | vercel env add NAME production`).
_PIPED = re.compile(
    r"""(?:^|(?<=[\s;&('"]))(?:echo|printf)(?:[ \t]+-[neE]{1,3})*[ \t]+(?:['"]?%s(?:\\n)?['"]?[ \t]+)?"""
    r"""(?P<q>['"])?(?P<secret>(?(q)[^'"\n]{6,256}|(?!%[\w.]+%)[^\s'"|$\-][^\s'"|]{5,255}))(?(q)(?P=q))[ \t]*\)?[ \t]*\|[ \t]*[^\n|]{0,120}?"""
    r"""(?i:secrets?[ \t]+(?:put|set|create|add)\b|--password-stdin|env[ \t]+add\b"""
    # Class: any command that reads a password on its standard input (`sudo -S`, `passwd --stdin`, `--passphrase-fd 0`),
    # the pipe inside a quoted remote command too (`ssh host 'echo … | sudo -S …'`).
    r"""|(?-i:sudo(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*S)\b|--stdin\b|--pass(?:word|phrase)-fd[ \t=]+0\b"""
    # Round 12: the last echo of a subshell that types it twice (`(echo x; echo x) | smbpasswd -s -a user`), Samba's
    # `-s` (silent: the password from stdin), chpasswd.
    r"""|(?-i:smbpasswd(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*s)\b|\bchpasswd\b)""",
    re.M,
)
_PIPED_SIGNS = ("secret put", "secret set", "secrets set", "secret create", "password-stdin", "env add", "sudo", "--stdin", "-fd",
                "smbpasswd", "chpasswd")
# A database connection opened in code with the password as its third argument (Perl's `DBI->connect($dsn, $user,
# '…')`, PHP's `new PDO($dsn, 'app', '…')`, `new mysqli('db', 'app', '…')`, `mysqli_connect(…)`), quoted, a quote
# escaped inside (`'it\'s'`).
_ARGUMENT = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|\$\w+)"""
_CONNECT = re.compile(
    r"""(?:->connect(?:_cached)?|\bnew[ \t]+\\?(?:PDO|mysqli)|\bmysqli?_connect)[ \t]*\([ \t\r\n]*(?:""" + _ARGUMENT
    + r"""[ \t\r\n]*,[ \t\r\n]*){2}(?P<q>['"])(?P<secret>(?:(?!(?P=q))[^\\\n]|\\.){1,256})(?P=q)"""
)
_CONNECT_SIGNS = ("->connect", "pdo", "mysqli", "mysql_connect")


# Class (round 12): a database client's login clause, whatever the client: `CONNECT TO db USER u USING pw` (DB2's CLP,
# Informix, embedded SQL), `IDENTIFIED BY pw` (Oracle, MySQL), a Teradata logon (`.LOGON host/user,pw`), Oracle's
# connect string (`sqlplus user/pw@db`, `CONNECT user/pw`, `expdp user/pw`; each word a sign of the gate). Quoted or not.
_SQL_ARGUMENT = r"""(?:'[^'\n]{0,128}'|"[^"\n]{0,128}"|[^\s'";]{1,128})"""
# A host variable (`:WS-DB-PASSWORD`, `@pw`) or a parameter (`?`, `%s`, `$1`) stands for the password, not in it.
_SQL_SECRET = r"""[ \t]+(?P<q>['"]?)(?![:@][\w-]|\?(?!\S)|%s\b|\$\d)(?P<secret>(?(q)[^'"\n]{1,128}|[^\s'";]{1,128}))(?P=q)"""
# (Each form below opens with a look-ahead at its first character: the engine passes over other positions at C speed.)
_USING = re.compile(r"(?=[Uu])(?i:(?<![\w-])USER[ \t]+" + _SQL_ARGUMENT + r"[ \t]+USING)" + _SQL_SECRET)
_IDENTIFIED_BY = re.compile(r"(?=[Ii])(?i:(?<![\w-])IDENTIFIED[ \t]+BY)(?![ \t]+(?i:VALUES|PASSWORD|EXTERNALLY|GLOBALLY)\b)" + _SQL_SECRET)
_LOGON = re.compile(r"(?im)^[ \t]*\.LOGON[ \t]+(?:[^\s/,;]{1,128}/)?[^\s/,;]{1,64},(?P<secret>[^\s;]{1,128})")
_CONNECT_STRING = re.compile(
    r"(?=[SsCcRrEeIiDd])(?i:(?<![\w-])(?:sqlplus|conn(?:ect)?|rman[ \t]+target|expdp|impdp|dgmgrl))(?:[ \t]+-\w+)*[ \t]+"
    r"[\w$#.]{1,64}/(?P<secret>[^\s/@'\"]{1,128})(?=@|[ \t]|$)", re.M
)
# Class (round 12): a login line's password flag `-w` after a user or bind DN flag (`vsql -U u -w …`, `ldapsearch -D
# cn=… -w …`); psql's `-w` takes no value, so a bare value must hold three kinds of character (`-w mydb2` is a database).
_USER_THEN_W = re.compile(
    r"(?=-)(?:^|(?<=[ \t]))(?:-[UD]|--user(?:name)?)(?:[ \t]+|=)(?:'[^'\n]*'|\"[^\"\n]*\"|[^\s'\"-]\S*)[^\n]{0,200}?[ \t]-w(?:[ \t]+|=)"
    r"(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{6,128}|[^\s'\"$<{%-][^\s'\"]{5,127}))(?(q)(?P=q))",
    re.M,
)


def _three_kinds(match: re.Match[str]) -> bool:
    return match.group("q") is not None or sum(char_kinds(match.group("secret"), capital=True)) >= 3


# Class (round 12): the password flag of a command whose verb signs in or ships with an account's credential
# (`caprover deploy … -p '…'`, `ovsx publish … -p <token>`, `… register … -p …`): a port, a path or a word is none.
_VERB_THEN_PASSWORD = re.compile(
    r"(?=[+LlDdPpRrUuSs])(?i:(?<![\w-])\+?(?:log[io]n|deploy|publish|register|upload|sign-?in)(?![\w-]))[^\n|;&]{0,200}?[ \t]-[pP](?:[ \t]+|=)"
    r"(?![\d:.,/]+(?:[\s'\"]|$))(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{6,128}|(?!%[\w.]+%)[^\s'\"$<{/~.-][^\s'\"]{5,127}))(?(q)(?P=q))",
    re.M,
)
_VERB_SIGNS = ("deploy", "publish", "register", "upload", "signin", "sign-in")
_LOGIN_CONFIRM = r"(?i:log[io]n)(?:[^\n]{0,200}?[ \t]-[pP](?:[ \t]|=)|[ \t]+\S+[ \t]+\S)"
# Class (round 12): a login verb's two arguments, the user and then the password (steamcmd's `+login user pw`, a
# console's `login user pw`), the password last on its line or before the next command or flag.
_LOGIN_ARGUMENTS = re.compile(
    r"(?=[+Ll])(?:^|(?<=[ \t])|(?<=[ \t]\+))\+?(?i:log[io]n)[ \t]+[^\s'\"+\-][^\s'\"]{0,63}[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"+\-][^\s'\"]{5,127})(?P=q)"
    r"(?=[ \t]+[+\-]|[ \t]*$)",
    re.M,
)
# Class (round 12): a password given to a command that hashes it (`openssl passwd -6 '…'`, `mkpasswd -m sha-512 …`,
# `htpasswd -nb user …`, `htpasswd -b file user …`, `slappasswd -s …`, `doveadm pw -p …`, `caddy hash-password
# --plaintext …`): the plaintext is the credential the hash is made of.
_HASHED_ARGUMENT = re.compile(
    r"(?=[ohsdmOHSDM])(?:\bopenssl[ \t]+passwd(?:[ \t]+-(?:salt[ \t]+\S+|[\w-]+))*|\bmkpasswd(?:[ \t]+-(?:[mSR][ \t]+\S+|-[\w-]+=\S+|[\w-]+))*"
    r"|\bhtpasswd[ \t]+-[A-Za-z]*n[A-Za-z]*b[A-Za-z]*(?:[ \t]+-\w+)*[ \t]+\S+|\bhtpasswd[ \t]+-[A-Za-z]*b[A-Za-z]*(?:[ \t]+-\w+(?:[ \t]+\d+)?)*[ \t]+\S+[ \t]+\S+"
    r"|\bslappasswd(?:[ \t]+-[^s\s]\S*(?:[ \t]+\{[^}\s]+\})?)*[ \t]+-s|\bdoveadm[ \t]+pw(?:[ \t]+-[^p\s]\S*(?:[ \t]+\S+)?)*[ \t]+-p"
    r"|\bhash-password[ \t]+--plaintext(?:[ \t]*=)?)"
    r"[ \t]+(?P<q>['\"]?)(?P<secret>(?(q)[^'\"\n]{1,128}|[^\s'\"$<{|;&)-][^\s'\"|;&)]{0,127}))(?P=q)"
)
_HASHED_SIGNS = ("passwd ", "passwd\t", "mkpasswd", "htpasswd", "slappasswd", "doveadm", "hash-password")
# Class (round 12): what a command prints when it reads a secret: the token alone on the line after a command line
# that looks a secret up or prints a credential's file (`secret-tool lookup …`, `security find-generic-password -w`,
# `cat /…/admin.password`, `op read op://…`, `bw get password …`); a prompt may follow the token on its line (`cat`
# prints no line break at the end).
_CREDENTIAL_FILE = r"(?i:\S*(?:pass(?:word)?|secret|token|pwd|apikey|api[_-]key))\b"  # not `passwd`: /etc/passwd holds none
_READER = re.compile(
    r"(?im)(?=[SsOoBbKkCcTtGgHh])(?<![\w-])(?P<command>(?:secret-tool[ \t]+lookup|security[ \t]+find-(?:generic|internet)-password|op[ \t]+read|bw[ \t]+get[ \t]+password"
    r"|keyring[ \t]+get|(?:cat|type|Get-Content|head)[ \t]+" + _CREDENTIAL_FILE + r")[^\n]{0,200})\r?\n"
    r"(?P<secret>[^\s]{6,128}?)(?:[$#%>][ \t]+)?\r?$"
)
_READER_SIGNS = (
    *((sign, "") for sign in ("secret-tool", "find-generic-password", "find-internet-password", "op read", "bw get", "keyring get")),
    *((sign, _CREDENTIAL_FILE) for sign in ("cat ", "cat\t", "type ", "get-content ", "head ")),
)
# Class (round 12): a password cracker's shown results (`john --show` prints `user:password:…`, `hashcat --show`
# prints `hash:password`): each line until a blank one.
CRACKED_SIGN = "--show"
_CRACKED = re.compile(r"(?im)^[^\n]*\b(?P<tool>john|hashcat)\b[^\n]*--show\b[^\n]*\r?\n(?P<lines>(?:[^\n:]+:[^\n]+\r?\n?)+)")
# Class (round 12): a webhook's URL holds its credential in the path after `hook(s)`/`webhook(s)` (Feishu's and
# Lark's `/bot/v2/hook/<uuid>`, DingTalk, Teams' `webhookb2/…`, Discord's `webhooks/<id>/<token>`): that path, any form.
_WEBHOOK = re.compile(
    r"://[^\s/'\"<>]+/(?:[^\s/'\"<>?#]+/){0,6}?(?i:(?:web)?hooks?(?:b2)?)/(?P<secret>[A-Za-z0-9_\-@]{16,}(?:/[A-Za-z0-9_\-@]{8,}){0,4})"
)

# Class (round 13): Windows' slash flags: a password flag (`/RP`, `/P`, `/pass`, `/password`, `/pwd`) after a user
# flag (`/RU`, `/U`, `/user`) on a command line (`schtasks … /RU CORP\svc /RP …`, `cmdkey … /user:x /pass:…`,
# `wmic /user:x /password:…`); `*` asks for it at a prompt.
_SLASH_USER_THEN_PASSWORD = re.compile(
    r"(?=/)(?<!\S)/(?i:r?u|user(?:name)?)(?::|[ \t]+)(?:\"[^\"\n]*\"|\S+)[^\n]{0,200}?(?<!\S)/(?i:r?p|pass(?:word)?|pwd|pw)(?::|[ \t]+)"
    r"(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{1,128}|[^\s'\"/*][^\s'\"]{0,127}))(?(q)(?P=q))"
)
# `net use` takes the password as a positional after the share, before or after `/user:`; `net user` after the name.
_NET_USE = re.compile(
    r"(?=[Nn])\b(?i:net[ \t]+use)(?:[ \t]+(?:[A-Za-z]:|\*))?[ \t]+\\\\\S+(?:[ \t]+/(?i:user|u):(?:\"[^\"\n]*\"|\S+))?"
    r"[ \t]+(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{1,128}|[^\s'\"/*][^\s'\"]{0,127}))(?(q)(?P=q))(?=[ \t]|$)",
    re.M,
)
_NET_USER = re.compile(
    r"(?=[Nn])\b(?i:net[ \t]+user)[ \t]+(?:\"[^\"\n]*\"|[^\s/*]\S*)[ \t]+(?P<q>['\"])?(?P<secret>(?(q)[^'\"\n]{1,128}|[^\s'\"/*][^\s'\"]{0,127}))(?(q)(?P=q))"
    r"(?=[ \t]+/|[ \t]*$)",
    re.M,
)
# Class (round 13): a protocol's or a shell's AUTH verb with a user and a password (Redis' `AUTH [user] pw` at its
# prompt or in a transcript, MongoDB's `db.auth("user", "pw")`); an SMTP mechanism's name is none.
_AUTH_VERB = re.compile(
    r"^(?:[^\n>]{0,80}>[ \t]*)?(?i:AUTH)[ \t]+(?!(?i:PLAIN|LOGIN|CRAM-MD5|DIGEST-MD5|XOAUTH2?|OAUTHBEARER|GSSAPI|NTLM|EXTERNAL|ANONYMOUS|SCRAM-\S+)\b)"
    r"(?:[^\s'\"]{1,64}[ \t]+)?(?P<q>['\"]?)(?P<secret>[^\s'\"]{6,128})(?P=q)[ \t]*\r?$",
    re.M,
)
_AUTH_CALL = re.compile(r"\.auth\([ \t]*(['\"])[^'\"\n]{1,64}\1[ \t]*,[ \t]*(['\"])(?P<secret>[^'\"\n]{6,128})\2")
# Class (round 13): an SNMP community is its password (`rocommunity …`, `rwcommunity6 …`, `snmp-server community …`,
# `community …` in an agent's config); the defaults `public`/`private` are no secret (a digit or a credential's shape).
_COMMUNITY = re.compile(r"(?im)^[ \t]*(?:r[ow]community6?|snmp-server[ \t]+community|community)[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"]{6,128})(?P=q)")
# Class (round 13): what the shell says of a word it could not run: a password typed at the prompt by mistake
# (`$ Violin119` then `Violin119: command not found`; zsh's `command not found: …`, cmd's `'…' is not recognized`).
_NOT_A_COMMAND = re.compile(
    r"(?im)^(?:[\w.\-]+:[ \t]+)?(?:line[ \t]+\d+:[ \t]+)?(?P<secret>[^\s:'\"]{8,128}):[ \t]+command[ \t]+not[ \t]+found[ \t]*\r?$"
)
_NOT_A_COMMAND_ZSH = re.compile(r"(?im)command[ \t]+not[ \t]+found:[ \t]+(?P<secret>[^\s'\"]{8,128})[ \t]*\r?$")
_NOT_A_COMMAND_CMD = re.compile(r"(?im)^'(?P<secret>[^\s'\"]{8,128})'[ \t]+is[ \t]+not[ \t]+recognized")
# Class (round 13): a wallet's seed phrase alone on its line (twelve to twenty-four words of three to eight lower-case
# letters, in a BIP-39 count) in a text that speaks of a wallet.
_SEED_LINE = re.compile(r"(?m)^[ \t]*(?:\d{1,2}[.)][ \t]*)?(?P<secret>[a-z]{3,8}(?: [a-z]{3,8}){11,23})[ \t]*\r?$")
_SEED_COUNTS = frozenset({12, 15, 18, 21, 24})


def _seed_line(match: re.Match[str]) -> bool:
    words = match.group("secret").split()
    return len(words) in _SEED_COUNTS and len(_PROSE.intersection(words)) <= 1


def _shaped_or_digit(match: re.Match[str]) -> bool:
    return _credential_match(match) or _has_digit(match)


def _shaped_or_words(match: re.Match[str]) -> bool:
    return _shaped_or_digit(match) or _passphrase_words(match.group("secret"))


def _typed_by_mistake(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return "/" not in value and "\\" not in value and sum(char_kinds(value, capital=True)) >= 3


def _credential_match(match: re.Match[str]) -> bool:
    return credential_shaped(match.group("secret"))


def _read_secret(match: re.Match[str]) -> bool:
    """A token a reading command printed: shaped like a credential or a UUID, no path, file or address."""
    value = match.group("secret")
    return (
        is_maskable(value)
        and not FILE_NAME.fullmatch(value)
        and "://" not in value
        and (credential_shaped(value) or UUID_FORM.fullmatch(value) is not None or _passphrase_words(value))
    )


# Class (round 15): `cat` of several files prints them one after the other; each a one-line file (a role id, a secret
# id), the line at a credential file's place is its content (`cat /etc/agent/role-id /etc/agent/secret-id`).
_CAT_FILES = re.compile(r"(?m)(?<![\w-])cat[ \t]+(?P<files>[^\s|;&<>]+(?:[ \t]+[^\s|;&<>]+){1,7})[ \t]*\r?\n")
_CAT_LINE = re.compile(r"[ \t]*(?P<secret>[^\s]{6,128})[ \t]*(?:\r?\n|\Z)")
_CREDENTIAL_FILE_NAME = re.compile(_CREDENTIAL_FILE + r"(?:[-_.](?:id|txt))?\Z")


# Class (round 16): a file the text names as where a credential is kept (OpenVPN's `auth-user-pass <file>`, restic's
# `--password-file <file>`, `password_file = <file>`), or one named for a credential (`~/.restic-pass`): what `echo`
# or `printf` writes into it, and what `cat` prints of it (a user then a password: the last line).
_FILE_DIRECTIVE = re.compile(
    r"(?i:auth-user-pass|--password-file|--passfile|--passphrase-file|--secret-file|--token-file|password[_-]?file"
    r"|passwordFile|passphrase[_-]?file|secret[_-]?file|token[_-]?file)(?:[ \t]*[=:][ \t]*|[ \t]+)[\"']?(?P<path>[~./\w-][^\s'\";|&]{1,200})"
)
_WRITTEN = re.compile(
    r"(?<![\w-])(?:echo(?:[ \t]+-[nE]{1,2})?|printf(?:[ \t]+['\"]%s(?:\\n)?['\"])?)[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"$`|;&<>]{6,256})(?P=q)"
    r"[ \t]*(?:\|[ \t]*(?:sudo[ \t]+)?tee(?:[ \t]+-a)?|>>?)[ \t]*[\"']?(?P<path>[^\s'\";|&]{1,200})"
)
_CAT_ONE = re.compile(r"(?m)(?<![\w-])cat[ \t]+[\"']?(?P<path>[^\s'\";|&<>]{1,200})[\"']?[ \t]*\r?\n")
_PRINTED_LINE = re.compile(r"[ \t]*(?P<line>[^\s$#>][^\n]{0,127}?)[ \t]*\r?(?:\n|\Z)")


# Round 17 (second): a password flag given a file's path (geth's `--password /etc/geth/pw.txt`), and a file named for a login
# (OpenVPN's `corp.auth`, `creds.txt`, `passphrase.txt`): where a credential is kept too.
_FLAG_GIVEN_FILE = re.compile(r"(?i:(?<![\w-])--?pass(?:word)?)(?:[ \t]+|=)[\"']?(?P<path>(?:/|~/|\./)[^\s'\";|&]{1,200})")
_LOGIN_FILE_NAME = re.compile(r"(?i)[\w.-]+\.(?:auth|creds?|passphrase)|(?:auth|creds?|credentials|login|passphrase)\.txt")
_SPACED_WORDS = re.compile(r"[A-Za-z]{2,12}\d{0,4}(?: [A-Za-z]{2,12}\d{0,4}){2,7}")


def _file_named_for_credential(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return bool(_CREDENTIAL_FILE_NAME.search(name) or _LOGIN_FILE_NAME.fullmatch(name))


def _passphrase_line(line: str) -> bool:
    """Three to eight words a space apart, none of prose, a digit or a capital among them (`lichen Orbit wax7`)."""
    return bool(_SPACED_WORDS.fullmatch(line)) and not _PROSE.intersection(line.lower().split()) and line != line.lower()


def _credential_file_spans(text: str) -> Iterator[tuple[int, int]]:
    named = {match.group("path") for match in _FILE_DIRECTIVE.finditer(text)} if "cat " in text else set()
    if "cat " in text and "pass" in text.lower():
        named |= {match.group("path") for match in _FLAG_GIVEN_FILE.finditer(text)}
    for written in _WRITTEN.finditer(text) if "echo " in text or "printf " in text else ():
        path = written.group("path")
        value = written.group("secret")
        if (path in named or _CREDENTIAL_FILE_NAME.search(path.rsplit("/", 1)[-1])) and is_maskable(value) and not FILE_NAME.fullmatch(value):
            yield written.span("secret")
    if "cat " not in text:
        return
    for cat in _CAT_ONE.finditer(text):
        if cat.group("path") not in named and not _file_named_for_credential(cat.group("path")):
            continue
        at, lines = cat.end(), []
        for _ in range(3):  # a third line: no credential file of that kind
            line = _PRINTED_LINE.match(text, at)
            if line is None:
                break
            lines.append(line.span("line"))
            at = line.end()
        last = text[lines[-1][0] : lines[-1][1]] if lines else ""
        # One or two lines (the password; a user then the password), no `user:hash` lines of a password file.
        if 1 <= len(lines) <= 2 and (not any(char in last for char in " :$") or _passphrase_line(last)) and is_maskable(last):
            yield lines[-1]


def _cat_files_spans(text: str) -> Iterator[tuple[int, int]]:
    """The lines `cat` printed for the credential files among several it was given, one line for each file."""
    for cat in _CAT_FILES.finditer(text):
        files = cat.group("files").split()
        if any(name.startswith("-") for name in files) or not any(_CREDENTIAL_FILE_NAME.match(name) for name in files):
            continue  # a flag changes what cat prints (`-n`)
        at, lines = cat.end(), []
        for _ in files:
            line = _CAT_LINE.match(text, at)
            if line is None:
                break
            lines.append(line)
            at = line.end()
        if len(lines) != len(files):
            continue
        for name, line in zip(files, lines, strict=True):
            if _CREDENTIAL_FILE_NAME.match(name) and _read_secret(line):
                yield line.span("secret")


# Class (round 17, second): a command written as an exec array (Docker's `CMD` and `healthcheck: test: [...]`, Kubernetes'
# `command:`, a subprocess' list): read by the command forms as the line it runs (`["mariadb-admin", "ping", "-p…"]`).
_EXEC_ARRAY = re.compile(r"""\[[ \t]*(["'])[\w./-]{1,64}\1(?:[ \t]*,[ \t]*(["'])[^"'\n\]]{0,256}\2){2,63}[ \t]*\]""")
_ELEMENT = re.compile(r"""(["'])([^"'\n]*)\1""")


def _exec_array_spans(text: str) -> Iterator[tuple[int, int]]:
    for array in _EXEC_ARRAY.finditer(text):
        elements = [(array.start() + m.start(2), m.group(2)) for m in _ELEMENT.finditer(array.group())]
        line = " ".join(element for _, element in elements)
        if " -" not in line:
            continue
        offsets = list(itertools.accumulate((len(element) + 1 for _, element in elements), initial=0))
        for start, end in _cli_spans(line):
            k = bisect.bisect_right(offsets, start) - 1
            if 0 <= k < len(elements) and end <= offsets[k] + len(elements[k][1]):
                yield elements[k][0] + start - offsets[k], elements[k][0] + end - offsets[k]


def _has_digit(match: re.Match[str]) -> bool:
    return any(char.isdigit() for char in match.group("secret"))


def _shared_form(sign: str, form: re.Pattern[str]) -> CredentialCommand:
    """A form several signs point at (read once per text, whichever sign found it)."""
    return CredentialCommand(sign, re.compile("(?i:" + re.escape(sign) + ")"), form=form)


# Class (round 16): what a client sends IRC's NickServ to log in (`/msg NickServ IDENTIFY [nick] …`, `/ns identify …`,
# `PRIVMSG NickServ :IDENTIFY …`, in an autosendcmd or a log): the last argument is the password.
_IDENTIFY = re.compile(
    r"(?i:(?:nickserv|/ns|\bns)[ \t]*:?[ \t]*identify)[ \t]+(?:[^\s;'\"]{1,32}[ \t]+)?(?P<secret>[^\s;'\"]{6,128})(?=[;'\"\s]|\Z)"
)
# Class (round 16): ipsec.secrets' lines other than a PSK's: `selector : EAP "…"`, `XAUTH`, `NTLM`, `PIN`, `PSK` (any
# selector, quoted or bare).
_IPSEC_SIGNS = (": psk", ": eap", ": xauth", ": ntlm", ": pin")
_IPSEC_SECRET = re.compile(r"(?m)[ \t]:[ \t]*(?:PSK|EAP|XAUTH|NTLM|PIN)[ \t]+(?P<q>[\"']?)(?P<secret>(?(q)[^\"'\n]{6,256}|[^\s\"']{6,256}))(?P=q)[ \t]*\r?$")
# Class (round 16): net-snmp's v3 user in snmpd.conf (`createUser name SHA-256 "auth pass" AES "priv pass"`): the
# pass phrase after the authentication protocol, and the one after the privacy protocol.
_SNMP_USER = (
    re.compile(r"(?im)^[ \t]*createUser[ \t]+(?:-e[ \t]+\S+[ \t]+)?\S+[ \t]+(?:MD5|SHA(?:-\d{3})?)[ \t]+(?P<q>[\"']?)(?P<secret>(?(q)[^\"'\n]{6,128}|[^\s\"']{6,128}))(?P=q)"),
    re.compile(r"(?im)^[ \t]*createUser[ \t]+(?:-e[ \t]+\S+[ \t]+)?\S+[ \t]+(?:MD5|SHA(?:-\d{3})?)[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\S+)[ \t]+"
               r"(?:DES|AES(?:-?\d{3}C?)?)[ \t]+(?P<q>[\"']?)(?P<secret>(?(q)[^\"'\n]{6,128}|[^\s\"']{6,128}))(?P=q)"),
)
# Class (round 17, second): a credential file given as a process substitution (`--password-file=<(echo '…')`, `--passfile
# <(printf %s …)`): what it echoes.
_SUBSTITUTED_FILE = re.compile(
    r"(?i:pass(?:word|phrase)?|secret|token|key|cred(?:ential)?s?)[\w-]{0,20}(?:[ \t]*=[ \t]*|[ \t]+)<\([ \t]*"
    r"(?:echo(?:[ \t]+-[nE]{1,2})?|printf(?:[ \t]+['\"]%s(?:\\n)?['\"])?|cat[ \t]+<<<)[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"()$`]{6,256})(?P=q)[ \t]*\)"
)
# Class (round 17, second): Java's key store passwords (keytool's and jarsigner's `-storepass`, `-keypass`, `-srcstorepass`,
# `-deststorepass`, `-srckeypass`, `-destkeypass`; not `-storepass:env NAME` or `:file`, which name where it is).
_STORE_PASS = re.compile(
    r"(?<![\w-])-(?:src|dest)?(?:store|key)pass[ \t]+(?P<q>['\"]?)(?P<secret>(?(q)[^'\"\n]{1,128}|[^\s'\"$-][^\s'\"]{0,127}))(?P=q)(?=\s|\Z)"
)
# Class (round 17, second): a SIP or XMPP server's control tool adding a user or setting a password, the password the last
# argument (`kamctl add <user> <password>`, `opensipsctl passwd …`, `ejabberdctl register <user> <host> <password>`,
# `prosodyctl register …`, `rabbitmqctl add_user <user> <password>`).
_USER_ADDED = re.compile(
    r"(?m)(?<![\w-])(?:(?:kamctl|opensipsctl)[ \t]+(?:add|passwd)|rabbitmqctl[ \t]+(?:add_user|change_password))[ \t]+\S+[ \t]+"
    r"(?P<q>['\"]?)(?P<secret>[^\s'\"]{6,128})(?P=q)[ \t]*\r?$"
)
_USER_AT_HOST_ADDED = re.compile(
    r"(?m)(?<![\w-])(?:ejabberdctl|prosodyctl)[ \t]+(?:register|change_password|passwd)[ \t]+\S+[ \t]+\S+[ \t]+"
    r"(?P<q>['\"]?)(?P<secret>[^\s'\"]{6,128})(?P=q)[ \t]*\r?$"
)
# Class (round 17, second): a client's method that logs in or sets credentials, given literals (Perl's `$ua->credentials('host',
# 'realm', 'user', '…')`, Python's `smtp.login('user', '…')`, `HTTPBasicAuth('user', '…')`): the last literal.
_LOGIN_CALL = re.compile(
    r"(?:->|\.|::|\b)(?:set_?)?(?i:credentials|basic_?auth|login|authenticate)\([ \t]*"
    r"(?:(['\"])[^'\"\n]{0,128}\1[ \t]*,[ \t]*){1,4}(?P<q>['\"])(?P<secret>[^'\"\n]{6,128})(?P=q)[ \t]*\)"
)
LOGIN_CALL_SIGNS = ("credentials(", "login(", "auth(", "authenticate(")
# Class (round 17, second): a monitoring check's ping link, its key in the path (Healthchecks' `hc-ping.com/<uuid>` and a
# self-hosted `/ping/<uuid>`, a heartbeat's `/heartbeat/<token>`, Dead Man's Snitch's `nosnch.in/<token>`): whoever
# holds it reports for the job.
_PING_LINK = re.compile(
    r"://(?:(?i:hc-ping\.com|hchk\.io|nosnch\.in)|[^\s/'\"<>]+/(?:[^\s/'\"<>?#]+/){0,4}?(?i:ping|heartbeats?))/"
    r"(?P<secret>[A-Za-z0-9_-]{16,64})(?=[/?#\s'\"]|\Z)"
)
PING_SIGNS = ("hc-ping.", "hchk.io/", "nosnch.in/", "/ping/", "/heartbeat/", "/heartbeats/")


def _ping_key(match: re.Match[str]) -> bool:
    value = match.group("secret")
    return UUID_FORM.fullmatch(value) is not None or looks_random(value)


# Class (round 17, second): what a command creating a token prints as its value, a table's row (Proxmox's `pveum user token
# add` box-drawn `│ value │ <secret> │`, a `| secret | … |` row), within a few lines after the command.
_CREATED_TOKEN_ROW = re.compile(
    r"(?i:token[ \t]+(?:add|create))[^\n]*\n(?:[^\n]*\n){0,15}?[ \t]*[│┃|][ \t]*(?i:value|secret|token)[ \t]*[│┃|][ \t]*"
    r"(?P<secret>[^\s│┃|]{8,128})[ \t]*[│┃|]"
)


# Class (round 17): MinIO's client given an alias's keys (`mc alias set <name> <url> <access key> <secret key>`, the
# older `mc config host add …`): the third and the fourth argument.
_MC_ALIAS = r"(?<![\w-])mc(?:li)?[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+"
_MC_KEYS = tuple(
    re.compile(_MC_ALIAS + skipped + r"(?P<q>['\"]?)(?P<secret>[^\s'\"]{8,128})(?P=q)(?=\s|\Z)")
    for skipped in ("", r"(?:'[^'\n]*'|\"[^\"\n]*\"|\S+)[ \t]+")
)
# Class (round 17): a script a program runs to ask for a passphrase (`SSH_ASKPASS`, `GIT_ASKPASS`, `SUDO_ASKPASS`): what
# it echoes, a line alone within a few lines after the name.
_ASKPASS_ECHO = re.compile(
    r"(?i:askpass)[^\n]*\n(?:[^\n]*\n){0,5}?[ \t]*(?:echo|printf(?:[ \t]+['\"]%s(?:\\n)?['\"])?)[ \t]+"
    r"(?P<q>['\"]?)(?P<secret>(?(q)[^'\"\n]{6,256}|[^\s'\"$-][^\s'\"]{5,255}))(?P=q)[ \t]*\r?$",
    re.M,
)
# Class (round 17): a camera's stream shared by a link whose path is its token (UniFi Protect's `rtsps://host:7441/<token>
# ?enableSrtp`): one random-looking segment; a stream's name (`/live/ch00_0`, `/stream1`) is none.
_STREAM_TOKEN = re.compile(r"rtsps?://[^\s/@'\"<>]{1,128}/(?P<secret>[A-Za-z0-9_-]{12,64})(?=[?\s'\"]|\Z)")


def _random_segment(match: re.Match[str]) -> bool:
    return looks_random(match.group("secret"))


COMMANDS: tuple[CredentialCommand, ...] = (
    # Round 14: the password glued to `-p` in quotes too (`mysql -uroot -p'…'`).
    _tool("mysql", r"mysql(?:dump|admin|import|sh)?", r"""[ \t]-p(?P<q>['"])?(?P<secret>(?(q)[^'"\n]+|[^\s'"-][^\s'"]*))(?(q)(?P=q))""",
          r"[ \t]--password[ \t]+" + _VALUE),
    # Round 17 (second): MariaDB's own names for the same clients (`mariadb`, `mariadb-admin`, `mariadb-dump`).
    _tool("mariadb", r"mariadb(?:-?(?:dump|admin|import|check|backup|upgrade))?", r"""[ \t]-p(?P<q>['"])?(?P<secret>(?(q)[^'"\n]+|[^\s'"-][^\s'"]*))(?(q)(?P=q))""",
          r"[ \t]--password[ \t]+" + _VALUE),
    # Round 16: the value quoted too (`redis-cli -a '…'`).
    _tool("redis-cli", r"redis-cli", r"""[ \t]-[ap][ \t]*(?P<q>['"])?(?P<secret>(?(q)[^'"\n]+|[^\s'"-][^\s'"]*))(?(q)(?P=q))"""),
    _tool("sshpass", r"sshpass", r"""[ \t]-[ap][ \t]*(?P<q>['"])?(?P<secret>(?(q)[^'"\n]+|[^\s'"-][^\s'"]*))(?(q)(?P=q))"""),
    _tool("curl", r"curl", r"[ \t](?:-u|--user|-U|--proxy-user)[ \t]*['\"]?[^\s:'\"]+:(?P<secret>[^\s'\"]+)"),
    # ldappasswd's bind, new and old passwords (`-w`, `-s`, `-a`; in ldapsearch `-s` is a scope, `-a` a deref).
    _tool("ldappasswd", r"ldappasswd", r"[ \t]-[wsa][ \t]+" + _VALUE),
    _tool("snmp", r"(?i:snmp(?:walk|bulkwalk|get|getnext|bulkget|set|table|trap|inform|delta|df|status|netstat|usm))", r"[ \t]-[AX][ \t]*" + _VALUE),
    *(_tool(sign, sign, r"[ \t]-[Pp][ \t]*" + _VALUE) for sign in ("zip", "unzip")),
    # rar also encrypts the headers with the password glued to `-hp` (`rar a -hpSECRET …`).
    *(_tool(sign, sign, r"[ \t]-(?:[Pp]|hp)[ \t]*" + _VALUE) for sign in ("rar", "unrar")),
    _tool("7z", r"7z[ar]?", r"[ \t]-[Pp][ \t]*" + _VALUE),
    _tool("openssl", r"openssl", r"[ \t]-k[ \t]+" + _VALUE),
    *(_tool(sign, re.escape(sign), r"(?:-U|--user(?:name)?=?)[ \t]*['\"]?[^\s%'\"]+%(?P<secret>[^\s'\"]+)")
      for sign in ("smbclient", "rpcclient", "smbmap", "smbget", "mount.cifs")),
    _form("pass:", r"pass:\S", r"[ \t]-pass(?:in|out)?[ \t]+pass:(?P<secret>\S+)"),
    _form("::add-mask::", r"::add-mask::", r"::add-mask::(?P<secret>\S+)"),
    _form("wpa_passphrase", r"(?:\b|(?<=\\[nrt]))wpa_passphrase[ \t]",
          r"\bwpa_passphrase[ \t]+(?:\"[^\"\n]{0,64}\"|'[^'\n]{0,64}'|\S{1,64})[ \t]+(?P<q>['\"]?)(?P<secret>[^'\"\n]{1,128}?)(?P=q)(?=[ \t]*(?:[|>]|$))"),
    # A QR payload is short: its fields' reach is bounded (on one long line an unbounded one scanned on from each WIFI:).
    _form("wifi:", r"WIFI:", r"WIFI:(?:(?:\\.|[^;\\\n]){0,128};){0,8}?P:(?P<secret>(?:\\.|[^;\\\n]){1,128})"),
    # An IMAP command: a tag (`a1`, `A0001`), LOGIN, the user and the password, each maybe quoted.
    _form(" login ", r"(?i: login )\S+ \S", r"^[ \t]*[A-Za-z]{0,4}\d{1,8} (?i:LOGIN) (?:\"[^\"\n]*\"|\S+) (?P<q>\")?(?P<secret>(?(q)[^\"\n]+|\S+))(?(q)\")[ \t]*$"),
    _form("pass ", r"PASS \S", r"^[ \t]*PASS (?P<secret>\S+)[ \t]*$"),
    _form("auth plain ", r"(?i:auth plain )[A-Za-z0-9+/]", r"^[ \t]*(?i:AUTH PLAIN) (?P<secret>[A-Za-z0-9+/]{8,}={0,2})[ \t]*$"),
    _form(" -u", r" -[uU](?:[ \t]|=)", _USER_THEN_PASSWORD, _login_password),
    # A login's user and password joined by a colon after a key that says so (squid's `cache_peer … login=u:pw`).
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[^\s:'\"]{1,64}:\S",
            r"(?i:(?<![\w-])" + re.escape(sign) + r")['\"]?[^\s:'\"@/]{1,64}:(?P<secret>[^\s'\"@]{6,128})") for sign in ("login=", "userpass=", "userinfo=")),
    # A password store's scheme for a password kept in clear (Dovecot's passwd-file, LDAP): `{PLAIN}pw`, `{CLEARTEXT}pw`.
    # ZooKeeper's digest login (`addauth digest user:pw`), SQLCipher's key (`PRAGMA key = '…'`, `rekey`, `hexkey`).
    _form("addauth", r"(?i:addauth)[ \t]", r"\baddauth[ \t]+digest[ \t]+[^\s:'\"]{1,64}:(?P<secret>[^\s'\"]{6,128})"),
    _form("pragma", r"(?i:pragma)[ \t]", r"(?i:\bPRAGMA[ \t]+(?:\w+\.)?(?:hex)?(?:re)?key[ \t]*=[ \t]*)(?P<q>['\"])(?P<secret>[^'\"\n]{6,256})(?P=q)"),
    # What a password store prints first (`pass show entry`, `gopass show entry`: the password, then other lines).
    _form("pass show", r"(?i:pass show)[ \t]",
          r"(?:^|(?<=[\s$%>]))(?:go)?pass[ \t]+show(?:[ \t]+-\S+)*[ \t]+[\w./@+\-]+[ \t]*\r?\n(?P<secret>\S{6,128})[ \t]*\r?$"),
    # A login's key flag (`prefect cloud login -k …`, `… login --key …`): a value that looks like a credential.
    _form(" login ", r"(?i: login )", r"[ \t]login(?:[ \t][^\n]{0,80}?)?[ \t](?:-k|--key)(?:[ \t]+|=)['\"]?(?P<secret>[^\s'\"\-][^\s'\"]{7,255})",
          lambda match: credential_shaped(match.group("secret"))),
    # macOS's join of a wireless network: the interface, the network's name, then its password.
    _form("-setairportnetwork", r"-setairportnetwork[ \t]",
          r"-setairportnetwork[ \t]+\S+[ \t]+(?:\"[^\"\n]{0,64}\"|'[^'\n]{0,64}'|\S{1,64})[ \t]+(?P<q>['\"]?)(?P<secret>[^'\"\s]{6,128})(?P=q)[ \t]*$"),
    _form("{plain}", r"\{PLAIN\}", r"\{PLAIN\}(?P<secret>[^\s:{}'\"]{6,128})"),
    _form("{clear", r"\{CLEAR(?:TEXT)?\}", r"\{CLEAR(?:TEXT)?\}(?P<secret>[^\s:{}'\"]{6,128})"),
    _form("--user", r"--user(?:name)?(?:[ \t]|=)", _USER_THEN_PASSWORD, _login_password),
    *(_shared_form(sign, _PIPED) for sign in _PIPED_SIGNS),
    *(_shared_form(sign, _CONNECT) for sign in _CONNECT_SIGNS),
    # Round 12's command classes (see above each form).
    _form("user", r"(?i:user)[ \t]+" + _SQL_ARGUMENT + r"[ \t]+(?i:using)[ \t]", _USING.pattern, needs="using"),
    _form("identified", r"(?i:identified[ \t]+by)[ \t]", _IDENTIFIED_BY.pattern),
    _form(".logon", r"\.(?i:logon)[ \t]", _LOGON.pattern),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[ \t]", _CONNECT_STRING.pattern, _credential_match)
      for sign in ("sqlplus", "connect", "conn ", "rman", "expdp", "impdp", "dgmgrl")),
    _form(" -d", r" -D(?:[ \t]|=)", _USER_THEN_W.pattern, _three_kinds),
    _form(" -u", r" -[uU](?:[ \t]|=)", _USER_THEN_W.pattern, _three_kinds),
    _form("--user", r"--user(?:name)?(?:[ \t]|=)", _USER_THEN_W.pattern, _three_kinds),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[^\n]{0,200}?[ \t]-[pP](?:[ \t]|=)", _VERB_THEN_PASSWORD.pattern, _login_password)
      for sign in _VERB_SIGNS),
    # `login`/`logon` sign two forms: one test for both (a sign has one test in the gate).
    *(_form(sign, _LOGIN_CONFIRM, form, accepts) for sign in ("login", "logon")
      for form, accepts in ((_VERB_THEN_PASSWORD.pattern, _login_password), (_LOGIN_ARGUMENTS.pattern, _credential_match))),
    *(_form(sign, r"(?i:" + re.escape(sign) + ")", _HASHED_ARGUMENT.pattern) for sign in _HASHED_SIGNS),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")" + confirm, _READER.pattern, _read_secret) for sign, confirm in _READER_SIGNS),
    *(_form(sign, r"(?i:" + re.escape(sign) + ")", _WEBHOOK.pattern, _has_digit) for sign in ("hook/", "hooks/", "hookb2/")),
    _tool("ssh-keygen", r"ssh-keygen", r"[ \t]-[PN][ \t]*" + _VALUE),
    # Round 13's command classes (see above each form).
    *(_form(sign, r"(?i:" + re.escape(sign) + r")(?::|[ \t])", _SLASH_USER_THEN_PASSWORD.pattern, _login_password)
      for sign in ("/ru", "/user", "/u")),
    _form("net use", r"(?i:net[ \t]+use)[ \t]", _NET_USE.pattern),
    _form("net user", r"(?i:net[ \t]+user)[ \t]", _NET_USER.pattern, _login_password),
    _form("auth ", r"(?i:auth )[^\s]", _AUTH_VERB.pattern, _shaped_or_words),
    _form(".auth(", r"\.auth\(", _AUTH_CALL.pattern),
    _form("community", r"(?i:community)[ \t]", _COMMUNITY.pattern, _shaped_or_digit),
    # `not found` signs two forms: one test for both.
    *(_form("not found", r"(?i:not found)", form.pattern, _typed_by_mistake) for form in (_NOT_A_COMMAND, _NOT_A_COMMAND_ZSH)),
    _form("not recognized", r"(?i:not recognized)", _NOT_A_COMMAND_CMD.pattern, _typed_by_mistake),
    _form("wallet", r"(?i:wallet)", _SEED_LINE.pattern, _seed_line),
    # Round 16's command classes (see above each form).
    _form("identify", r"(?i:identify)[ \t]", _IDENTIFY.pattern, _shaped_or_digit),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[ \t]", _IPSEC_SECRET.pattern) for sign in _IPSEC_SIGNS),
    *(_form("createuser", r"(?i:createuser)[ \t]", form.pattern) for form in _SNMP_USER),
    # Round 17's command classes (see above each form); Codecov's uploader takes its token after `-t`.
    _tool("codecov", r"codecov(?:cli)?", r"[ \t](?:-t|--token)(?:[ \t]+|=)" + _VALUE),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[ \t]", form.pattern) for sign in ("alias set", "host add") for form in _MC_KEYS),
    _form("askpass", r"(?i:askpass)", _ASKPASS_ECHO.pattern),
    _form("rtsp", r"(?i:rtsps?://)", _STREAM_TOKEN.pattern, _random_segment),
    # Round 17's second command classes (see above each form).
    *(_form(sign, re.escape(sign) + r"[ \t]", _SUBSTITUTED_FILE.pattern) for sign in ("<(echo", "<(printf", "<(cat")),
    *(_form(sign, r"(?i:" + sign + r")[ \t]", _STORE_PASS.pattern) for sign in ("storepass", "keypass")),
    *(_form(sign, r"(?i:" + sign + r")[ \t]", _USER_ADDED.pattern) for sign in ("kamctl", "opensipsctl", "rabbitmqctl")),
    *(_form(sign, r"(?i:" + sign + r")[ \t]", _USER_AT_HOST_ADDED.pattern) for sign in ("ejabberdctl", "prosodyctl")),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")[ \t]*['\"]", _LOGIN_CALL.pattern, _shaped_or_digit) for sign in LOGIN_CALL_SIGNS),
    *(_form(sign, r"(?i:" + re.escape(sign) + r")", _PING_LINK.pattern, _ping_key) for sign in PING_SIGNS),
    *(_form(sign, r"(?i:" + sign + r")", _CREATED_TOKEN_ROW.pattern, _ping_key) for sign in ("token add", "token create")),
)  # fmt: skip
# Class (round 16): the lines of a file named for secrets (davfs2's `secrets`, ppp's `chap-secrets`, `ipsec.secrets`,
# rsyncd's `rsyncd.secrets`), under its name in a comment or a `cat`: each line's last quoted field, or the password
# of a line that is `user:password` alone.
SECRETS_FILE_SIGN = "secrets"
_SECRETS_FILE = re.compile(r"(?m)^(?:[ \t]*(?:#|//|;)[ \t]*|[^\n]{0,80}?(?<![\w-])cat[ \t]+)\S*[/.\-]secrets[ \t]*\r?\n")
_LAST_QUOTED = re.compile(r"[ \t](?P<q>[\"'])(?P<secret>[^\"'\n]{6,256})(?P=q)[ \t]*\r?\Z")
_USER_COLON_PASSWORD = re.compile(r"[ \t]*[\w.@+\-]{1,64}:(?P<secret>[^\s:]{6,128})[ \t]*\r?\Z")
SECRETS_FILE_LINES = 40


def _secrets_file_spans(text: str) -> Iterator[tuple[int, int]]:
    for named in _SECRETS_FILE.finditer(text):
        at = named.end()
        for _ in range(SECRETS_FILE_LINES):
            line_end = text.find("\n", at)
            line_end = len(text) if line_end == -1 else line_end
            line = text[at:line_end]
            if not line.strip() or line.lstrip().startswith(("$ ", "# /", "#!")):
                break  # a blank line, a prompt or another file's name ends it
            if not line.lstrip().startswith(("#", ";")):
                field = _LAST_QUOTED.search(line) or _USER_COLON_PASSWORD.fullmatch(line)
                if field is not None and is_maskable(field.group("secret")):
                    yield at + field.start("secret"), at + field.end("secret")
            if line_end == len(text):
                break
            at = line_end + 1


# Class (round 13): the codes a service gives for when the second factor is lost, one a line in a text that names them
# (`GitHub recovery codes`, a sentence, then `5ce47-055zf` …): four lines or more of one shape, a digit in each.
CODES_SIGN = " codes"
_CODES_NAMED = re.compile(r"(?i)\b(?:recovery|backup|scratch|emergency|one-time|2fa|mfa|two-factor)[ -]codes\b")
_CODE_BLOCK = re.compile(r"(?m)(?:^[ \t]*(?:[-*•]|\d{1,2}[.)])?[ \t]*[A-Za-z0-9]{4,10}(?:[- ][A-Za-z0-9]{4,10})?[ \t]*(?:\r?\n|\Z)){4,}")
_CODE_LINE = re.compile(r"[ \t]*(?:[-*•]|\d{1,2}[.)])?[ \t]*(?P<code>[A-Za-z0-9]{4,10}(?:[- ][A-Za-z0-9]{4,10})?)[ \t]*\r?")


def _code_block_spans(text: str) -> Iterator[tuple[int, int]]:
    for block in _CODE_BLOCK.finditer(text):
        at, codes = block.start(), []
        for line in block.group().splitlines(keepends=True):
            code = _CODE_LINE.match(line)
            if code is not None:
                codes.append((at + code.start("code"), at + code.end("code")))
            at += len(line)
        values = [text[start:end] for start, end in codes]
        shapes = {re.sub(r"[A-Za-z0-9]", "a", value) for value in values}
        if len(shapes) == 1 and all(any(char.isdigit() for char in value) and is_maskable(value) for value in values):
            yield from codes


# What expect typed at a prompt that asks for a password, up to four lines later.
EXPECT_SIGN = "send: sending"
_EXPECT_SEND = re.compile(r"send: sending \"(?P<secret>[^\"\\\n]+)\\r\"")
_PROMPT = re.compile(r"(?i)(?:password|passphrase|passcode|pin)[^\n]*:")


CONTINUED_LINES = 12  # how many continued lines one command may take (` \` at a line's end)
_CONTINUED = re.compile(r"[ \t][\\`^][ \t]*\r?\Z")


def _command_end(text: str, pos: int) -> int:
    r"""The end of the command line holding pos: (round 16) a line that ends in ` \` (a shell's; PowerShell's
    backtick, cmd's caret) goes on on the next (`curl -X POST "…" \` then `--user svc:…` under it)."""
    for _ in range(CONTINUED_LINES):
        line_end = text.find("\n", pos)
        if line_end == -1:
            return len(text)
        if _CONTINUED.search(text, max(pos, line_end - 4), line_end) is None:
            return line_end
        pos = line_end + 1
    return line_end


def _cli_spans(text: str) -> Iterator[tuple[int, int]]:
    lowered = text.lower()
    ran: set[re.Pattern[str]] = set()  # a form two signs share (`-u`, `--user`) is read once
    for command in COMMANDS:
        if command.sign not in lowered or command.form in ran or command.needs not in lowered:
            continue
        if command.form is not None:
            ran.add(command.form)
            for match in command.form.finditer(text):
                if command.accepts is None or command.accepts(match):
                    yield match.span("secret")
            continue
        assert command.word is not None
        word = command.word.search(text)
        while word is not None:
            line_end = _command_end(text, word.end())
            for flag in command.flags:
                for match in flag.finditer(text, word.end(), line_end):
                    yield match.span("secret")
            word = command.word.search(text, line_end)  # the next line that holds the word
    if CRACKED_SIGN in lowered:
        for shown in _CRACKED.finditer(text):
            at = shown.start("lines")
            for line in shown.group("lines").splitlines(keepends=True):
                fields = line.rstrip("\r\n").split(":")
                # john: `user:password:uid:…`; hashcat: `hash:password`.
                k = 1 if shown.group("tool").lower() == "john" else len(fields) - 1
                value = fields[k] if len(fields) > k else ""
                if credential_shaped(value) and is_maskable(value):
                    begin = at + len(":".join(fields[:k])) + 1
                    yield begin, begin + len(value)
                at += len(line)
    if SECRETS_FILE_SIGN in lowered:
        yield from _secrets_file_spans(text)
    if CODES_SIGN in lowered and _CODES_NAMED.search(text):
        yield from _code_block_spans(text)
    if EXPECT_SIGN in text:
        for send in _EXPECT_SEND.finditer(text):
            above = send.start()
            for _ in range(5):  # the send's own line start, then up to four lines above it
                above = text.rfind("\n", 0, max(0, above - 1)) + 1 if above else 0
            if _PROMPT.search(text, above, send.start()):
                yield send.span("secret")


# A login written as `user / password` on a line that speaks of logging in or of a network, or under one
# (`Relay login … is relay@example.org / thimble.falcon.bramble.7699`, `wifi for the offsite:` then
# `Harbor-Guest / Basalt/quasar/49`): the value after the slash, when it is no word, number, date, version or path.
LOGIN_WORDS = re.compile(r"(?i)\b(?:log[ -]?ins?|logon|sign[ -]?in|users?(?:name)?|accounts?|wi-?fi|wlan|ssid|creds?|relay)\b")
_LOGIN_PAIR = re.compile(r"(?<![\w/])[\w.+@-]{2,64}[ \t]+/[ \t]+(?P<secret>[^\s'\"<>]{8,128})")
_NOT_A_PASSWORD = re.compile(
    r"(?i)^(?:https?://.*|.*[{}].*|[\d.,:/%-]+|v?\d+(?:\.\d+)+.*|[a-z]+(?:[-_][a-z]+)*"
    r"|.*\.(?:py|js|ts|go|rs|md|txt|json|ya?ml|html?|css|png|jpe?g|log|conf|sh))$"
)


def may_hold_login(text: str) -> bool:
    """The gate's part for `user / password` logins (False: `_login_pairs` finds nothing). The signs of
    `COMMANDS` are in `state.redaction`'s form automaton (one pass for all of them; an alternation regex here cost
    more than the rest of the gate)."""
    return " / " in text and _LOGIN_HINT.search(text) is not None


# LOGIN_WORDS without word boundaries: in a serialized event a word may follow a JSON escape (`\nwifi`).
_LOGIN_HINT = re.compile(r"(?i)log[ -]?in|logon|sign[ -]?in|user|account|wi-?fi|wlan|ssid|cred|relay")


def _login_pairs(text: str) -> Iterator[tuple[int, int]]:
    if LOGIN_WORDS.search(text) is None:
        return
    for pair in _LOGIN_PAIR.finditer(text):
        line_start = text.rfind("\n", 0, pair.start()) + 1
        above = text.rfind("\n", 0, max(0, line_start - 1)) + 1
        line_end = text.find("\n", pair.end())
        if LOGIN_WORDS.search(text, above, len(text) if line_end == -1 else line_end) is None:
            continue
        start, end = pair.span("secret")
        # A sentence's mark after the password's own (`admin / 1nkw3ll53!.`): the last one ends the sentence.
        if end - start > 1 and text[end - 1] in _TRAILING and text[end - 2] in "!?" and text[end - 1] not in "!?":
            end -= 1
        else:
            while end > start and text[end - 1] in _TRAILING:
                end -= 1
        value = text[start:end]
        if len(value) < 8 or _NOT_A_PASSWORD.match(value):
            continue
        # Class (round 13): a login the line announces right before its pair (`the sftp login is u / p`, `login:
        # u / p`) is a user and a password: words joined by a mark are a passphrase there, a number or not.
        if _password_like(value) or _passphrase_words(value) and _ANNOUNCED_LOGIN.search(text, line_start, pair.start()):
            yield start, end


def _passphrase_words(value: str) -> bool:
    """Three words or more joined by one mark, none of prose (`falcon.violin.granite`), and no host name."""
    words = _joined_words(value)
    return words is not None and len(words) >= 3 and not _DOMAIN_END.search(value)


_ANNOUNCED_LOGIN = re.compile(r"(?i)\b(?:log[ -]?in|logon|sign[ -]?in|creds?|credentials)(?:[ \t]+(?:is|was|=))?[ \t]*:?[ \t]*\Z")


# A passphrase of words joined by one separator, with a number (`thimble.falcon.bramble.7699`), not a host name.
_WORD_CHAIN = re.compile(r"[A-Za-z]{3,}(?P<sep>[.\-_/])[A-Za-z]{3,}(?:(?P=sep)[A-Za-z0-9]{2,})+")
_DOMAIN_END = re.compile(r"(?i)\.(?:com|org|net|io|dev|app|local|internal|lan|edu|gov|co|ai|cloud)$")


def _password_like(value: str) -> bool:
    """Three kinds of characters (`Basalt/quasar/Krypton/49`), or a word chain with a number in it."""
    if sum(char_kinds(value, capital=True)) >= 3:
        return True
    return _WORD_CHAIN.fullmatch(value) is not None and char_kinds(value)[2] and not _DOMAIN_END.search(value)


def char_kinds(value: str, *, capital: bool = False) -> tuple[bool, bool, bool, bool]:
    """Which kinds of characters a value holds: lower case, upper case (a capital first letter only with
    `capital`: `Berlin` is a word, `Sunflower2931` after `admin /` a password), digit, symbol (anything but a
    letter, a digit or `_-.`). The one count the free-text rules judge values by."""
    return (
        any(c.islower() for c in value),
        any(c.isupper() for c in (value if capital else value[1:])),
        any(c.isdigit() for c in value),
        any(not c.isalnum() and c not in "_-." for c in value),
    )


_COOKIE = re.compile(r"(?im)^[ \t]*(?P<set>set-)?cookie[ \t]*:[ \t]*(?P<pairs>[^\n]+)$")
# Kana, CJK ideographs and Hangul end a name: those scripts join a label to what follows without a space
# (`密码是…`, `パスワードは…`); so do Thai, Lao and Khmer (round 13: `รหัสผ่านวายฟายคือ…`). Myanmar's particles glued
# to the name are read as its inflection (`စကားဝှက်က`).
_NAME_CHARS = re.compile(r"[.\-]|(?![\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af\uf900-\ufaff\u0e00-\u0eff\u1780-\u17ff])\w")


def _looks_secret(value: str) -> bool:
    """Two kinds of characters at least (lower, upper, digit, symbol other than `_-.`): a credential, not a word
    of prose or an identifier (`policy`, `api_key`, `Berlin`)."""
    return sum(char_kinds(value)) >= 2 and not value.startswith(("http://", "https://", "/", "$", "{")) and not _PERCENT_REFERENCE.match(value)


# A value that starts with `%` and is a reference or a format, not a credential: a Windows variable (`%APPDATA%`), a
# printf or Python format (`%s`, `%-8d`, `%(name)s`), a systemd specifier (`%d/db-password`). Any other `%…` may be
# typed (`%22222222a`, hypothesis found it unlearnt).
_PERCENT_REFERENCE = re.compile(r"%(?:[\w.]+%|\(\w+\)[sdr]|[-+ #0]*\d*(?:\.\d+)?[sdifrxXoeEgGc](?![\w%])|[A-Za-z]/)")


def credential_shaped(value: str) -> bool:
    """Two kinds of characters with a digit or a symbol among them (`hunter2hunter`, `Xk9!`): a value that may be a
    credential whatever names it, not a word, a name or a CamelCase identifier (`redis-auth`, `ClusterSecretStore`)."""
    _, _, digit, symbol = char_kinds(value)
    return (digit or symbol) and _looks_secret(value)


# Each character as its kind: a lower-case letter, an upper-case letter, a digit; separators (`_-.:/`) dropped;
# anything else (symbols, other scripts) one kind of its own.
_KINDS = str.maketrans(
    {**dict.fromkeys(string.ascii_lowercase, "a"), **dict.fromkeys(string.ascii_uppercase, "A"),
     **dict.fromkeys(string.digits, "0"), **dict.fromkeys("_-.:/")}  # fmt: skip
)
_RUNS = re.compile(r"a+|A+|0+|[^aA0]+")


def class_switches(value: str) -> int:
    """How often the kind of character (lower, upper, digit, anything else) changes along a value, separators
    (`_-.:/`) skipped: random text switches at every second or third character, words and names seldom. A
    text holding a value holds at least its switches (inserting a character never removes one)."""
    return max(0, len(_RUNS.findall(value.translate(_KINDS))) - 1)


MIN_SWITCHES = 6


def looks_random(value: str) -> bool:
    """A value nobody types as a word, a name or an identifier: 16 characters or more without a space whose kind
    of character switches at least every third character (`3f2a9c1e-…`, `aCnmxCi8…`, not `worker_3-step-12`,
    `user:42:profile`, `handler_1(request):`)."""
    return (
        len(value) >= 16
        and not any(char.isspace() for char in value)
        and class_switches(value) >= max(MIN_SWITCHES, 0.3 * len(value))
        and _looks_secret(value)
    )


# How far after an announcing name its value may start: the colon within 60 characters, a line break or two and
# indentation (ANNOUNCED_GAP); in the serialized text a gate reads, JSON escapes make it at most 12 times longer.
ANNOUNCED_GAP = 64
ANNOUNCED_REACH = 12 * ANNOUNCED_GAP


# For the gate: whitespace and quotes end a stretch (a space), the rest as for `class_switches`; a stretch with
# MIN_SWITCHES + 1 runs of one kind (possessive: each run takes all of its kind) from a stretch's start is a
# stretch with MIN_SWITCHES (a value inside a stretch has at most the stretch's switches).
_GATE_KINDS = {**_KINDS, **dict.fromkeys(map(ord, " \t\n\r\f\v\"'`"), " ")}
_SWITCHY = re.compile(r"(?<![^ ])(?:a++|A++|0++|[^aA0 ]++){" + str(MIN_SWITCHES + 1) + "}")
_STRETCH_END = re.compile(r"""[\s"'`]""")


def random_token_near(text: str, pos: int) -> bool:
    """Whether a stretch with MIN_SWITCHES starts within reach after pos: the one sign an announced value leaves
    (the value, in any escaping, lies inside such a stretch). Two C passes over the reach."""
    stop = _STRETCH_END.search(text, pos + ANNOUNCED_REACH)
    window = text[pos : stop.start() if stop else len(text)]
    return _SWITCHY.search(window.translate(_GATE_KINDS)) is not None


_PUB_WORD = re.compile(r"(?:^|_)(?:pub|publishable)_?key$|^pubkey$")


def _public(text: str, start: int, name: str) -> bool:
    """A public key, signature or key id (`public_key`, `publicKey`, `public key: …`, the armor of a signature or
    certificate: `-----BEGIN SSH SIGNATURE-----`) announces nothing secret."""
    if "public" in normalise_key(name) or text[max(0, start - 8) : start].rstrip(" \t_-").lower().endswith("public"):
        return True
    # Round 14: its short forms as a word of the name (`test_mode_pub_key`, `publishableKey`, `pubkey`).
    if _PUB_WORD.search(normalise_key(name)):
        return True
    line_start = text.rfind("\n", max(0, start - 80), start) + 1
    label = text[line_start:start]
    return "-----BEGIN " in label and not any(word in label for word in SECRET_ARMOR)


def _announces(name: str) -> bool:
    """A name whose last word announces a value without being a sensitive name (`DEPLOY_KEY`, `key`)."""
    return normalise_key(name).rsplit("_", 1)[-1] in ANNOUNCING_NAMES


# After a name and words that are not a join (`token (shown once):`, `key for staging:`), a colon that ends the
# announcement: its value follows on the line, or alone on the next non-empty line when the colon ends the line.
# Class: a colon past the end of the name's sentence (`OTP कोणालाही सांगू नका. … संदर्भ: X`, `Password reset. Ref: X`)
# belongs to another label: `।`, `。`, or a full stop, `!` or `?` then a space and no lower-case word (an abbreviation
# goes on: `prie e. bibliotekos:`) ends the reach.
# Round 15: up to 90 characters of the clause before the colon (`T'envio la contrasenya del campus virtual perquè
# puguis entrar mentre estic de baixa: …`; 60 cut a sentence of a dozen words short).
_ANNOUNCED = re.compile(r"(?:[^\n:=<>|.!?।。]|[.!?](?=\S|[ \t]+[a-zß-ÿа-я])){1,90}?:(?P<rest>[ \t]*)(?=\S|\r?\n)")
# Class: markup between an announced label's colon and its value (`… ah: <b>Lantern2013?</b>`, `…: <code>x</code>`),
# a forum's BBCode too (`… ke [code]x[/code]`, `[b]`, `[color=red]`), also after `is` (round 12).
_OPENING_TAGS = re.compile(
    r"(?:(?:<[A-Za-z][\w:-]{0,20}(?:[ \t][^<>\n]{0,80})?>|\[(?i:b|i|u|s|code|icode|c|tt|pre|quote|spoiler|color|size|font|mono|noparse)"
    r"(?:=[^\]\n]{0,40})?\])[ \t]*){1,4}"
)


_CLOSED_LABEL = re.compile(r"(?:</[A-Za-z][\w:-]{0,20}>[ \t]*){1,4}(?:\r?\n[ \t]*)?")
_NEXT_LINE = re.compile(r"[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*")
# A label a line break cut after the name, ended by a word or two and a colon on the next line (an e-mail wrapped
# at 72 columns: `mot de passe` / `provisoire : …`, `password` / `(temporary): …`).
_WRAPPED = re.compile(r"[ \t]*\r?\n[ \t]*(?:\(?[^\W\d_][\w'-]*\)?[ \t]+){0,1}\(?[^\W\d_][\w'-]*\)?[ \t]*:(?P<rest>[ \t]+)(?=\S)")


def _bare_value(text: str, at: int) -> tuple[int, int] | None:
    """(start, end) of the unquoted value at `at`, its trailing sentence punctuation left out."""
    bare = _BARE_VALUE.match(text, at)
    if bare is None:
        return None
    start, end = bare.span()
    while end > start and text[end - 1] in _TRAILING:
        end -= 1
    return start, end


LINE_REACH = 200  # how far back the rules read a name's line (bounded: they run for every name)


def _line_before(text: str, pos: int) -> str:
    """What stands on pos's line before it, at most LINE_REACH characters."""
    low = max(0, pos - LINE_REACH)
    return text[text.rfind("\n", low, pos) + 1 or low : pos]


def _in_prose(text: str, pos: int) -> bool:
    """Whether the line ending at pos is a sentence (four words or more), not a key and its value (`property:
    password`)."""
    return len(_line_before(text, pos).split()) >= 4


def _announced_after(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of the value a name announces later on its line (after a colon), or on the next line."""
    match = _ANNOUNCED.match(text, pos)
    if match is None:
        wrapped = _WRAPPED.match(text, pos)
        match = wrapped if wrapped is not None and _in_prose(text, pos) else None
    if match is None:
        return None
    at = match.end()
    if text.startswith("</", at):  # round 17: the label's element closed, the value in the next (on the next line too)
        closed = _CLOSED_LABEL.match(text, at)
        tags = None if closed is None else _OPENING_TAGS.match(text, closed.end())
        bare = None if tags is None else _bare_value(text, tags.end())
        return bare if bare is not None and bare[1] > bare[0] else None
    if at < len(text) and text[at] not in "\r\n":
        if not match.group("rest"):
            return None  # `user:pw`, `http:`: a colon inside a word joins nothing here
        # Round 17: quoted, one word, the sentence going on after it (`…: "…" so Dagny …`); not a structure's member.
        quoted = _QUOTED_VALUE.match(text, at)
        if quoted is not None and not any(mark in match.group() for mark in "\"'`") and " " not in quoted.group(2):
            return quoted.span(2)
        tags = _OPENING_TAGS.match(text, at)
        at = tags.end() if tags is not None else at
        bare = _bare_value(text, at)
        return bare if bare is not None and bare[1] > bare[0] else None
    line = _NEXT_LINE.match(text, at)
    if line is None or line.end() >= len(text):
        return None
    bare = _BARE_VALUE.match(text, line.end())
    if bare is None:
        return None
    start, end = bare.span()
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    return (start, end) if not text[end:line_end].strip() else None


# Class: a label whose words between the name and its colon say the value identifies or describes the credential
# (`Key ID: <uuid>`, `Password (Ignore with SHA: <digest>)`, `token fingerprint:`, `password length: 16`): no credential.
_ID_LABEL_WORDS = frozenset(
    "id ids uuid guid sha sha1 sha256 sha512 md5 hash digest checksum fingerprint thumbprint commit serial kid version "
    "length type expiry expires".split()
)
_LABEL_WORD = re.compile(r"[A-Z]?[a-z]+\d*|[A-Z]+\d*(?![a-z])")


def _identifier_label(label: str) -> bool:
    return any(word.lower() in _ID_LABEL_WORDS for word in _LABEL_WORD.findall(label))


NAME_REACH = 128  # how far a name reaches each way from a hint (a longer run of word characters is no name)


def _name_at(text: str, start: int, end: int) -> tuple[int, int]:
    """The whole name (word characters, `-` and `.`) around a hint match, at most NAME_REACH each way (from every
    `password` of `passwordpassword…` the name ran to both ends of the run: 10 KB took 1.5 s, quadratic)."""
    low, high = max(0, start - NAME_REACH), min(len(text), end + NAME_REACH)
    while start > low and _NAME_CHARS.match(text, start - 1):
        start -= 1
    while end < high and _NAME_CHARS.match(text, end):
        end += 1
    return start, end


# A name/value pair: the name is the value of a name field and a value field follows in the same object or list
# item (`{"key": "merchantSecret", "value": "…"}`, `- name: DB_PASSWORD` / `  value: …`, `Name=api_key,Value=…`).
_NAME_FIELD = re.compile(r"""(?i:(?<![\w-])(?:key|name|variable|parameter|param|label))["'`]?[ \t]*[:=][ \t]*["'`]?$""")
_VALUE_FIELD = re.compile(
    r"""["'`]?[ \t]*(?:,[ \t]*|\r?\n[ \t]*(?:-[ \t]+)?)["'`]?(?i:value|current_?value|val)["'`]?[ \t]*[:=][ \t]*"""
)


# The same in markup: Hadoop's `<name>…password</name>` then `<value>…</value>`, a property list's `<key>Password</key>`
# then `<string>…</string>`.
_NAME_ELEMENT = re.compile(r"<(?:name|key)>[ \t]*$")
_VALUE_ELEMENT = re.compile(r"[ \t]*</(?:name|key)>[ \t\r\n]*(?:<description>[^<]{0,400}</description>[ \t\r\n]*)?<(?:value|string)>")


def _pair_value(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) of the value paired with the name at text[start:end], or None when it stands in no pair."""
    if _NAME_ELEMENT.search(text, max(0, start - 12), start):
        element = _VALUE_ELEMENT.match(text, end)
        if element is not None:
            value_end = text.find("<", element.end())
            if value_end > element.end() and "\n" not in text[element.end() : value_end]:
                return element.end(), value_end
    if not _NAME_FIELD.search(text, max(0, start - 40), start):
        return None
    field = _VALUE_FIELD.match(text, end)
    if field is None:
        return None
    quoted = _QUOTED_VALUE.match(text, field.end())
    if quoted:
        return quoted.span(2)
    bare = _BARE_VALUE.match(text, field.end())
    return bare.span() if bare else None


def _value_after(text: str, name_start: int, pos: int) -> tuple[int, int, bool] | None:
    """(start, end, strong) of the value after a name ending at pos; strong when the join says it is a value."""
    subscript = False
    while pos < len(text) and text[pos] in "\"'`*_]}":
        subscript = subscript or text[pos] in "]}"  # `session[KEY]`, Perl's `$Self->{DatabasePw}`
        pos += 1
    name_end = pos
    join = _JOIN.match(text, pos)
    if join is None:
        return None
    kind, at = join.lastgroup, join.end()
    if kind in ("is", "qual") and not _polish_to(text, name_start, name_end, join):
        return None
    if kind in ("is", "qual") and at < len(text) and text[at] in "<[":
        tags = _OPENING_TAGS.match(text, at)  # markup after `is` (`… ndi <code>x</code>`, `… ke [code]x[/code]`)
        at = tags.end() if tags is not None else at
    if at >= len(text):
        return None
    if kind == "tag":
        if join.group("attrs") and not text[name_start - 1 : name_start] == "<":
            return None  # attributes then `>` end an element's opening tag only
        end = text.find("<", at)
        end = len(text) if end == -1 else end
        return (at, end, True) if end > at and "\n" not in text[at:end] else None
    if kind == "next":
        if join.group(0).strip(" \t\r\n") == "" and _line_before(text, name_start).strip(_LABEL_DECORATION):
            return None  # a name that ends a line it does not start, without a colon (`…/shop-db-password`), labels nothing below
        # A dump's typed string on the line under its key (PHP's `["password"]=>` then `string(25) "…"`).
        typed = _TYPED_STRING.match(text, at)
        if typed:
            return typed.start(2), typed.end(2), False
    if kind == "csv":
        if text[pos - 1] != '"' or not _CSV_NAME_CELL.fullmatch(_line_before(text, name_start)):
            return None
        quoted = _QUOTED_VALUE.match(text, at)
        return (quoted.start(2), quoted.end(2), False) if quoted else None
    if kind == "argv":
        if _ARGV_FLAG.search(text, max(0, name_start - NAME_REACH), pos) is not None:
            quoted = _QUOTED_VALUE.match(text, at)
            return (quoted.start(2), quoted.end(2), True) if quoted else None
        if _CALL_NAME.search(text, max(0, name_start - 40), name_start) is None:
            return None
        # Round 16: a call given a name then its value (PHP's `define('DB_PASSWORD', '…')`, a browser's
        # `user_pref("….password", "…")`): the value a literal of one word, closing the call.
        quoted = _QUOTED_VALUE.match(text, at)
        closed = quoted is not None and re.match(r"[ \t]*[),]", text[quoted.end() : quoted.end() + 8]) is not None
        return (quoted.start(2), quoted.end(2), False) if quoted and closed and not any(c.isspace() for c in quoted.group(2)) else None
    if kind == "call":
        if _SETTER.search(text[name_start:name_end]) is None:
            return None
        quoted = _QUOTED_VALUE.match(text, at)
        closed = quoted is not None and text.startswith((")", ","), quoted.end())
        return (quoted.start(2), quoted.end(2), False) if quoted and closed else None
    if kind == "qual":
        quoted = _QUOTED_VALUE.match(text, at)
        found = quoted.span(2) if quoted else _bare_value(text, at)
        return (*found, False) if found is not None and _qualified_value(text[found[0] : found[1]]) else None
    literal = _SQL_STRING.match(text, at) if text[at] in "'NnEe" else None
    if literal and (literal.start(1) > at + 1 or "''" in literal.group(1)):
        return literal.start(1), literal.end(1), kind != "space"
    quoted = _QUOTED_VALUE.match(text, at)
    if quoted:
        # Quoted after a bare space, it may be a second label (`resource "random_password" "orders_db"`).
        return quoted.start(2), quoted.end(2), kind != "space"
    bare = _bare_value(text, at)
    if bare is None:
        return None
    start, end = bare
    if subscript and kind == "eq":
        return start, end, False  # `session[KEY] = backend`: code assigns a name; a credential must look like one
    if kind == "next":
        # A name on its own line: the value is the whole next line, one token.
        line_end = text.find("\n", at)
        line_end = len(text) if line_end == -1 else line_end
        if text[end:line_end].strip():
            return None
    return start, end, kind in ("attr", "eq", "pic")


_CODE_NAME = re.compile(r"[A-Za-z_][\w.]*")
_DRIVE_PATH = re.compile(r"[A-Za-z]:\\")
UUID_FORM = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")  # also state.failclosed's


# Class (round 16): the members of a YAML block named for ciphertext (a SealedSecret's `encryptedData:`, `encrypted:`):
# each is its key's ciphertext, whatever the key's name says (`DATABASE_PASSWORD: AgB…`): masked, never learnt.
_ENCRYPTED_PARENT = re.compile(r"[ \t]*(?:encryptedData|encrypted_data|encrypted|encryptedSecrets|encrypted_secrets)[ \t]*:[ \t]*\r?\Z")
PARENT_REACH = 40  # lines read up to a key's parent


def under_encrypted_block(text: str, key_start: int) -> bool:
    """Whether the key (or the value) at key_start is a member of a block named for ciphertext."""
    if "ncrypted" not in text:
        return False
    line_start = text.rfind("\n", 0, key_start) + 1
    indent = _indent_at(text, line_start)
    if not indent or (key_start - line_start - indent > 80):
        return False
    pos = line_start
    for _ in range(PARENT_REACH):
        if pos == 0:
            return False
        above = text.rfind("\n", 0, pos - 1) + 1
        line = text[above : pos - 1]
        if line.strip() and _indent_at(text, above) < indent:
            return _ENCRYPTED_PARENT.fullmatch(line) is not None
        pos = above
    return False


def _indent_at(text: str, line_start: int) -> int:
    n = line_start
    while n < len(text) and text[n] in " \t":
        n += 1
    return n - line_start


# Class (round 15): a cell of a command's aligned table under a header naming a digest or an id (`fly secrets list`'s
# `NAME  DIGEST  CREATED AT`, `docker images`' `IMAGE ID`): the column says what it is, not the row's name
# (`STRIPE_API_KEY  f3f0…` is the digest of that secret, listed by name).
_TABLE_HEADER = re.compile(r"[ \t]*[A-Z][A-Z0-9_]*(?: [A-Z][A-Z0-9_]*)?(?:[ \t]{2,}[A-Z][A-Z0-9_]*(?: [A-Z][A-Z0-9_]*)?)+[ \t]*\r?")
_HEADER_WORD = re.compile(r"[A-Z][A-Z0-9_]*(?: [A-Z][A-Z0-9_]*)?")
_IDENTIFIER_HEADERS = frozenset(
    {"DIGEST", "HASH", "SHA", "SHA256", "CHECKSUM", "FINGERPRINT", "ID", "COMMIT", "ETAG", "IMAGE ID", "CONTAINER ID"}
)
TABLE_REACH = 40  # rows of a table read up to its header


def under_identifier_header(text: str, start: int) -> bool:
    """Whether the token at start is a cell of an aligned table whose header above names a digest or an id."""
    if text[start - 2 : start] != "  ":
        return False  # a table's columns are aligned by spaces: a cell follows two at least
    line_start = text.rfind("\n", 0, start) + 1
    column, pos = start - line_start, line_start
    for _ in range(TABLE_REACH):
        if pos == 0:
            return False
        above = text.rfind("\n", 0, pos - 1) + 1
        line = text[above : pos - 1]
        if _TABLE_HEADER.fullmatch(line):
            if column >= len(line) or (column and line[column - 1] != " "):
                return False
            word = _HEADER_WORD.match(line, column)
            return word is not None and word.group() in _IDENTIFIER_HEADERS
        pos = above
    return False


def _credential(text: str, start: int, end: int, found: tuple[int, int, bool], announcing: bool) -> bool:
    """Whether the value found after the name at text[start:end] is a credential."""
    value_start, value_end, strong = found
    value = text[value_start:value_end]
    if value.startswith(("-", "/", "~/", "./", "\\")) or REDACTED in value or not is_maskable(value) or FILE_NAME.fullmatch(value):
        return False
    if not strong and under_identifier_header(text, value_start):
        return False  # round 15: a table's digest column, the row named for the secret it digests
    if _DRIVE_PATH.match(value):
        return False  # round 15: a Windows path names where (`パスは C:\Program Files\…`: `パス` is a path too), not what
    # Class: a call in code after the name (`Password = base64(…)`, `token = sha256(…)`, `pw = hmac_md5(…)`): a
    # lower-case name with digits is a function's, not a literal.
    if text.startswith(("(", "["), value_end) and _CODE_NAME.fullmatch(value) and (not credential_shaped(value) or value.islower()):
        return False  # a call or a subscript in code (`headers["Authorization"] = _basic_auth_str(…)`), no literal
    if announcing:
        # A name that is not sensitive names a credential only when the value could be nothing else.
        # Class: a UUID given to a key flag on a command line (`--setup-key <uuid>`, `-access-key <uuid>`): a UUID is
        # a common credential's form, and its hex digits switch kind too seldom for `looks_random`.
        uuid = text[start] == "-" and UUID_FORM.fullmatch(value) is not None
        return value_start - end <= ANNOUNCED_GAP and (looks_random(value) or uuid)
    # After a flag (`--db-password x`, `-password x`) the next word is its value, whatever it looks like.
    # Class (round 13): after a copula, a passphrase of words, joined by a mark (`Das Passwort ist badger-wombat-walnut`)
    # or glued into a run longer than a word (`Lösenordet … är tangerineoysterwalnut`).
    if strong or text[start] == "-" or _looks_secret(value):
        return True
    # Class (round 14): the same passphrase after a label's colon (`нууц үг: yodel.quokka.waffle`) or Armenian's `՝`.
    return (_passphrase_words(value) or _glued_words(value)) and _AFTER_COPULA.search(text, max(end, value_start - 16), value_start) is not None


_AFTER_COPULA = re.compile(r"(?:[ \t]" + _COPULA + r"(?:[ \t]*:)?|['’]s|[ \t]*[:՝])[ \t]+\Z")
# Class (round 14): a language that says `is` after the value (verb-final: Urdu `ہے`, Hindi `है`, Marathi `आहे`,
# Gujarati `છે`, Persian `است`, Amharic `ነው`/`ናት`, Azerbaijani's and Turkish' `-dir` glued to it): the value between
# the name and that copula, after at most three words in the name's own script (`رمز عبور موقت شما … است`).
_FINAL_COPULA = re.compile(
    r"(?:[ \t]+(?![A-Za-z])[^\W\d_]{1,20}){0,3}[ \t]+(?P<q>['\"«“]?)(?P<secret>[^\s'\"«»“”]{6,128}?)(?P=q)"
    r"(?:[ \t]+(?:ہے|है|आहे|છે|است|ነው|ናት)|-(?:[dt][ıiuü]r))(?![^\W\d_])"
)


def _qualified_value(value: str) -> bool:
    return credential_shaped(value) or _passphrase_words(value) or _glued_words(value)


_GLUED_WORDS = re.compile(r"[a-z]{18,40}")
_WORD_ENDINGS = ("tion", "tions", "ment", "ments", "ness", "ity", "ing", "able", "ible", "ally", "ised", "ized")


def _glued_words(value: str) -> bool:
    return _GLUED_WORDS.fullmatch(value) is not None and not value.endswith(_WORD_ENDINGS)


# A value of words: what a passphrase, a wallet's seed or recovery phrase or a mnemonic names (`pass_phrase=heron
# thimble jackdaw 65`, `The passphrase is umber islet mortar flint garnet -- …`, twelve words after `seed phrase:`),
# four words at least before a word of prose (`The passphrase is stored in the vault` names none).
_PHRASE_NAMES = ("phrase", "mnemonic")
_WORD = re.compile(r"[A-Za-z0-9]{2,24}")
_NEXT_WORD = re.compile(r" [A-Za-z0-9]{2,24}(?![\w'-])")
_PROSE = frozenset(
    """a an the is are was were be been being to of in on at for from by with and or but not no nor this that these
    those it its your you my our their his her we they them there here then than so as if when where which who what
    how why only also just still never always must should can could will would may might shall do does did has
    have had all any each every some same other one two three first last new old below above under over again
    stored kept saved sent set required needed used shown printed written given changed reset rotated""".split()
)
# Names of where a credential comes from: the word after them is no credential.
SOURCE_SUFFIXES = ("_stdin", "_file", "_fd", "_env", "_cmd", "_command", "_helper", "_prompt")
_MIN_PHRASE_WORDS = 4
MAX_PHRASE_WORDS = 24  # a wallet's longest seed phrase
# An app password in four groups of four letters (Google's spaced, Apple's dashed), whatever name announces it.
_APP_PASSWORD = re.compile(r"[a-z]{4}(?P<sep>[ -])[a-z]{4}(?P=sep)[a-z]{4}(?P=sep)[a-z]{4}(?![\w-])")


# Words a speaker says how to type (`the password is rhubarb falcon pumpkin, all lower case with spaces`): two to
# six words in lower case, then, after a comma or a dash, how they are written.
_SPOKEN_WORDS = re.compile(
    r"(?P<secret>[a-z]{2,24}(?: [a-z]{2,24}){1,5})[ \t]*[,;(—–-][ \t]*(?:[a-z']+[ \t]+){0,3}?"
    r"(?:lower[ -]?case|upper[ -]?case|small letters|with (?:the )?spaces|no spaces|all caps|in capitals)"
)
# Words of prose or of the remark itself (`use lower case, upper case and digits` is a policy, not a password).
_NOT_SPOKEN = _PROSE | {"use", "lower", "upper", "case", "caps", "capital", "capitals", "letters", "spaces", "space", "small", "digits"}
# A wallet's seed: twelve to twenty-four words of its word list, lower case (`also`, `that` are words of the list).
_SEED_WORDS = re.compile(r"[a-z]{3,8}(?: [a-z]{3,8}){11,23}(?![\w'-])")
# A name that puts a key in a wireless network's section (`wireless.default_radio0.key`, `wifi_key`, `wlan0.key`);
# for the gate, each sign with the test that a key follows it in the same name.
_WIFI_WORDS = ("wireless", "wifi", "wi-fi", "wlan", "wpa")
_WIFI = re.compile(r"(?i)" + "|".join(map(re.escape, _WIFI_WORDS)))
# Round 14: the word apart from the key (`WPA2 Key:`, `WLAN-Schlüssel /WPA2 Key:`), and the network said for its
# password (`the wifi at the cottage is …`).
WIFI_SIGNS = {
    sign: re.compile(r"(?i)" + re.escape(sign) + r"(?:[\w.\-]{0,40}?key|\d?[ \t]+key\b|(?:[ \t]+[^\W\d_]{1,20}){0,5}[ \t]+(?:is|was)[ \t])")
    for sign in _WIFI_WORDS
}
_WIFI_SPELLINGS = ("wifi", "WiFi", "Wifi", "WIFI", "wi-fi", "Wi-Fi", "Wi-fi", "WI-FI")
_WIFI_BEFORE = re.compile(r"(?i)(?:wireless|wi-?fi|wlan|wpa\d?)[ \t]+\Z")
# Class (round 14): the wireless network said for its password (`the wifi at the cottage is Obeliskfjord9426.`): a
# value of three kinds of characters (`Basalt7`, not `down`, `slow`, `ACME-5G`), not after a word that names the
# network itself (`the wifi network is …`, `wifi name`, `SSID`).
_WIFI_IS = re.compile(
    r"(?i:\bwi-?fi\b)(?:[ \t]+(?!(?i:network|name|ssid|called|named|router|signal)\b)[^\W\d_]{1,20}){0,5}[ \t]+(?:is|was)[ \t]+"
    r"(?P<secret>[^\s'\"<>]{6,128})"
)
# Class (round 14): a password set to its value (`I changed the admin password on the router to …`): a verb of
# setting before the name on its line, then `to` after what it is for; the value must look like a credential.
_SET_VERB = re.compile(r"(?i)\b(?:chang|set|reset|updat|rotat|switch)\w*\b")
_SET_TO = re.compile(r"(?:[ \t]+(?!to\b)[^\W\d_]{1,20}){0,6}[ \t]+to[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"<>]{6,128}?)(?P=q)[.,;:!?]*(?!\S)")
# Class (round 17): the verb after the name, in the next clause, on the name as `it` (`the seed user had an expired
# password; reset it to …`, `… the wifi password. I changed it to …`).
_SET_IT_TO = re.compile(
    r"[;,.:]?[ \t]+(?:(?:I|[Ww]e|[Tt]hey|[Hh]e|[Ss]he)[ \t]+(?:have[ \t]+|had[ \t]+|just[ \t]+)?)?(?i:chang|set|reset|updat|rotat|switch)\w*"
    r"[ \t]+(?:it|this|that)[ \t]+to[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"<>]{6,128}?)(?P=q)[.,;:!?]*(?!\S)"
)
# Class (round 17): a two-word label of the credential itself, `Secret ID` (what Nomad's and Consul's ACL tokens and
# Vault's AppRole call the token), spaced and aligned (`Secret ID    = …`).
_SECRET_ID = re.compile(r"[ \t]+I[Dd][ \t]*[:=][ \t]*(?P<q>['\"]?)(?P<secret>[^\s'\"]{8,128})(?P=q)")
# Class (round 15): the same said after the name, as Czech, Slovak and Polish say it (`heslo k účtu jsem změnila na …`,
# `hasło zmieniłem na …`): a verb of changing or setting, then `na`, after at most eight words.
_SET_NA = re.compile(
    r"(?:[ \t]+[^\W\d_]{1,20}(?:-[^\W\d_]{1,20})?){0,8}?[ \t]+(?i:změn|zmen|nastav|zmieni|ustawi)\w{0,6}[ \t]+na[ \t]+"
    r"(?P<q>['\"]?)(?P<secret>[^\s'\"<>]{6,128}?)(?P=q)[.,;:!?]*(?!\S)"
)
# Class (round 16): a value between the name and a postposition `to` with a verb of changing, as verb-final languages say
# "changed it to" (Korean `비밀번호 … 로 바꿨어요`/`으로 변경`, Japanese `パスワードを … に変更しました`).
_SET_BEFORE = re.compile(
    r"(?:[ \t]*[^\W\d_]{1,12}){0,3}?[ \t]+(?P<q>['\"「]?)(?P<secret>[^\s'\"「」<>]{6,128}?)(?P=q)[ \t]*"
    r"(?:으로|로|に)[ \t]*(?:바꿨|바꾸|바뀌|변경|설정|재설정|変更|設定|再設定)"
)
# Class (round 16): after the name, the clause says it was set anew, then `the new one is` (Chinese `密碼我重設了，新的是
# …`, `密码改了，新密码是 …`; Japanese `新しいのは …`): the value after it, on the name's line.
_NEW_ONE_IS = re.compile(
    r"[^\n。]{0,24}?(?:新的是|新的为|新的為|新密码是|新密碼是|新しいのは|새\s?비밀번호는|새로운\s?건)[ \t]*(?P<q>['\"「]?)(?P<secret>[^\s'\"「」<>，。]{6,128}?)(?P=q)[.,;!?，。]*(?!\S)"
)
def _set_anew(value: str) -> bool:
    """A value a password was set to: shaped as one, or letters of any script with digits (`사과별4185`)."""
    return _password_like(value) or (any(c.isalpha() for c in value) and any(c.isdigit() for c in value) and _CODE_NAME.fullmatch(value) is None)


# Class (round 15): a question for the password answered on the next line, a chat's turn (`Ana: what's the wifi password
# again?` then `Bo: …`): the reply's first word, when it looks like a credential.
_ASKED = re.compile(
    r"[^\n?]{0,80}\?[ \t]*\r?\n[ \t]*(?:\[[^\]\n]{1,30}\][ \t]*)?[^\W\d_][\w.' -]{0,30}:[ \t]+(?P<secret>[^\s'\"<>]{6,128}?)[.,;!]*(?!\S)"
)
# A last-word name glued to the word before it (`FTPPASS`, `remotepass`, `adminpw`): a word of letters, not a word of
# prose (`bypass`, `compass`, `surpass`, `trespass`).
_GLUED = re.compile(r"[A-Za-z]{2,20}?(?:pass|pw|PASS|PW)")
_NOT_GLUED = ("bypass", "compass", "surpass", "trespass", "encompass", "overpass", "underpass", "impass", "boardingpass", "hallpass")


def _glued(name: str, sensitive: frozenset[str]) -> bool:
    return _GLUED.fullmatch(name) is not None and name.lower() not in _NOT_GLUED and ("pass" in sensitive or "pw" in sensitive)


def _glued_value(text: str, end: int) -> tuple[int, int] | None:
    """The value assigned to a glued name, when it looks like a credential: a password shape, or a run of letters
    no word has (twelve or more, a vowel at most in five: `kmwbwxcnrlbnlzcj`)."""
    join = GLUED_JOIN.match(text, end)
    if join is None:
        return _glued_directive(text, end)
    at = join.end()
    while at < len(text) and text[at] in " \t\"'":
        at += 1
    bare = _bare_value(text, at)
    if bare is None:
        return None
    value = text[bare[0] : bare[1]]
    if len(value) < 8 or not is_maskable(value):
        return None
    vowels = sum(char in "aeiouAEIOU" for char in value)
    return bare if credential_shaped(value) or len(value) >= 12 and value.isalpha() and vowels * 5 <= len(value) else None


# Round 16: a configuration's directive, a glued name at a line's start then its value after a space, last on the line
# (redis.conf's `requirepass …`, `masterpass …`; grep's `1043:` before it).
_DIRECTIVE_START = re.compile(r"(?:^|\n)[ \t]*(?:[\w./-]{1,80}:)?(?:\d{1,7}[:-])?[\w-]{0,40}\Z")
_DIRECTIVE_VALUE = re.compile(r"[ \t]+(?P<q>['\"]?)(?P<secret>[^\s'\"]{8,128})(?P=q)[ \t]*(?:\r?\n|\Z)")


def _glued_directive(text: str, end: int) -> tuple[int, int] | None:
    value = _DIRECTIVE_VALUE.match(text, end)
    if value is None or _DIRECTIVE_START.search(text, max(0, end - 200), end) is None:
        return None
    return value.span("secret") if credential_shaped(value.group("secret")) and is_maskable(value.group("secret")) else None


# Words joined by one dash, dot or underscore, as diceware and password managers write a passphrase.
_WORD_JOINED = re.compile(r"[A-Za-z]{2,24}(?P<sep>[-._])[A-Za-z]{2,24}(?:(?P=sep)[A-Za-z]{2,24})+")


def _joined_words(value: str) -> list[str] | None:
    """The words of a value joined by one mark (`mango-lemur-cinnamon`), when it is so joined and none is prose."""
    if _WORD_JOINED.fullmatch(value) is None:
        return None
    words = re.split(r"[-._]", value.lower())
    return None if _PROSE.intersection(words) else words


def _phrase(text: str, start: int, end: int) -> tuple[int, int] | None:
    """(start, end) of the words of a phrase from the value text[start:end] on, when they are words and no prose; a
    wallet's seed (twelve words or more in lower case) whole, whatever its words; the words joined by one mark
    (`mango-lemur-cinnamon-orchid`), four at least."""
    if _WORD_JOINED.fullmatch(text, start, end) is not None:
        words = _joined_words(text[start:end])
        return (start, end) if words is not None and len(words) >= _MIN_PHRASE_WORDS else None
    if not _WORD.fullmatch(text, start, end):
        return None
    seed = _SEED_WORDS.match(text, start)
    if seed is not None:
        # A seed's words whole, whatever they are; the phrase goes on past them while words that are no prose follow
        # (a seed's list has no word over eight letters: `… bbbbbbb bbbbbbbbb` is one phrase, not twelve words of it).
        end, words = seed.end(), seed.group().count(" ") + 1
    elif text[start:end].lower() in _PROSE or text[start:end].endswith(("ed", "ing", "ly")):
        return None
    else:
        words = 1
    while words < MAX_PHRASE_WORDS and (word := _NEXT_WORD.match(text, end)) is not None and text[word.start() + 1 : word.end()].lower() not in _PROSE:
        end, words = word.end(), words + 1
    return (start, end) if words >= _MIN_PHRASE_WORDS else None


COOKIE_HEADER = re.compile(r"[ \t]*:[ \t]*[^\s=;]+=")
_PASSWORD_MANAGER = re.compile(r"(?i)1password")


def value_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    """Where credentials stand in free text after a name without `:`/`=`, after a name that announces them, on a
    command line or in a cookie."""
    checked = -1
    for hit in name_hits(text, sensitive):
        if hit[1] <= checked:
            continue  # inside the name looked at last
        start, end = _name_at(text, *hit)
        if end <= checked:
            continue
        checked = end
        name = text[start:end].strip(".-_")
        if COOKIE_HEADER.match(text, end) and normalise_key(name).endswith("cookie") or _PASSWORD_MANAGER.fullmatch(name):
            continue  # round 17: a cookie header's pairs (read by _cookie_spans); a password manager's name (where, not what)
        if normalise_key(name).endswith(SOURCE_SUFFIXES) or names_a_hash(name) or under_encrypted_block(text, start):
            continue  # where the credential comes from (`--password-stdin`, `password_file`), or its hash, not the credential
        announcing = not is_sensitive(name, sensitive)
        if announcing and _glued(name, sensitive):
            glued = _glued_value(text, end)
            if glued is not None:
                yield glued
            continue
        if announcing and (_WIFI.search(name) or _WIFI_BEFORE.search(text, max(0, start - 12), start)):
            announcing = False  # a wireless section's key is its passphrase (`wireless.radio0.key='…'`)
        if announcing and (not _announces(name) or _public(text, start, name) or _SIGNATURE_HEADER.fullmatch(name) or _HMAC_SIGNATURE.fullmatch(name)):
            continue  # round 15: a request's signature header (`X-Twilio-Signature:`) carries a MAC of it, no key; round 17: a message's `hmacSignature` too
        if not announcing and (final := _FINAL_COPULA.match(text, end)) is not None and _qualified_value(final.group("secret")):
            yield final.span("secret")
        if not announcing and (set_to := _SET_TO.match(text, end)) is not None and _qualified_value(set_to.group("secret")):
            if _SET_VERB.search(_line_before(text, start)[-80:]):
                yield set_to.span("secret")
        if not announcing and (set_it := _SET_IT_TO.match(text, end)) is not None and _qualified_value(set_it.group("secret")):
            yield set_it.span("secret")
        if not announcing and name.lower() == "secret" and (secret_id := _SECRET_ID.match(text, end)) is not None:
            yield secret_id.span("secret")
            continue
        if not announcing and (set_na := _SET_NA.match(text, end)) is not None and _qualified_value(set_na.group("secret")):
            yield set_na.span("secret")
        if not announcing and (before := _SET_BEFORE.match(text, end)) is not None and _set_anew(before.group("secret")):
            yield before.span("secret")
        if not announcing and (new_one := _NEW_ONE_IS.match(text, end)) is not None and _set_anew(new_one.group("secret")):
            yield new_one.span("secret")
        if not announcing and (asked := _ASKED.match(text, end)) is not None and _password_like(asked.group("secret")):
            yield asked.span("secret")
        pair = None if announcing else _pair_value(text, start, end)
        after = _value_after(text, start, end)
        announced = _announced_after(text, end)
        if announced is not None and _identifier_label(text[end : announced[0]]):
            announced = None
        phrased = not announcing and normalise_key(name).endswith(_PHRASE_NAMES)
        # The value after the name's join first; failing that, the one a colon later on the line announces.
        for found in ((*pair, True) if pair else None, after, None if announced is None else (*announced, False)):
            if found is None:
                continue
            words = _phrase(text, found[0], found[1]) if phrased else None
            app = None if announcing else _APP_PASSWORD.match(text, found[0])
            if words is not None or app is not None:
                yield words if words is not None else app.span()  # type: ignore[union-attr]
                break
            spoken = None if announcing else _SPOKEN_WORDS.match(text, found[0])
            if spoken is not None and not _NOT_SPOKEN.intersection(spoken.group("secret").split()):
                yield spoken.span("secret")
                break
            if _credential(text, start, end, found, announcing):
                yield found[0], found[1]
                break
    yield from _cookie_spans(text)
    yield from _column_spans(text, sensitive)
    if "---" in text:
        yield from _fixed_width_spans(text, sensitive)
    if "cat " in text:
        yield from _cat_files_spans(text)
    if "cat " in text or "echo " in text or "printf " in text:
        yield from _credential_file_spans(text)
    if "s {" in text or "s{" in text or "S {" in text or "S{" in text:
        yield from _secret_block_spans(text)
    if any(word in text for word in _PAGERDUTY_WORDS):
        yield from (match.span("secret") for match in _PAGERDUTY_KEY.finditer(text))
    if "INSERT" in text or "insert" in text:
        yield from _insert_spans(text, sensitive)
    if "|" in text:
        yield from _bar_table_spans(text, sensitive)
    yield from _listed_spans(text, sensitive)
    yield from _cli_spans(text)  # each command's sign looked for once
    if '", "' in text or "', '" in text or '","' in text:
        yield from _exec_array_spans(text)
    yield from _typed_into_spans(text, sensitive)
    yield from _login_clause_spans(text)
    if "env" in text or "ENV" in text:
        yield from _env_default_spans(text, sensitive)
    if " / " in text:
        yield from _login_pairs(text)
    if any(spelling in text for spelling in _WIFI_SPELLINGS):
        for said in _WIFI_IS.finditer(text):
            found = _bare_value(text, said.start("secret"))
            if found is not None and _password_like(text[found[0] : found[1]]):
                yield found


# Class (round 16): a clause that says how to log in, ending in a colon, then the value on its line or alone on the next
# (`per il pannello accedi con questa: …`, `ezzel tudsz belépni: …`, `buat masuk … pakai ini ya: …`, `用这个登录：…`,
# `tu te connectes avec :` then the value): a login's verb within the clause, in the languages people write them; the
# value must look like a password (three kinds of characters), no address, link or path. A heading of that kind
# (`данные для входа:`) over a list: each item's value after its own label's colon.
LOGIN_CLAUSE_SIGNS = (
    "log in", "log on", "sign in", "accedi", "accedere", "entra con", "connectes", "connecter", "connectez", "connecte-toi",
    "entrar", "acceder", "accede", "ingresa", "iniciar sesión", "inicia sesión", "acessar", "acesse", "anmelden",
    "einloggen", "inloggen", "logga in", "belép", "masuk", "登录", "登入", "登陆", "ログイン", "로그인", "войти", "входа",
    "вход", "zaloguj", "přihlás", "giriş", "đăng nhập", "conectează", "autentific",
)  # fmt: skip
_LOGIN_CLAUSE = re.compile(
    r"(?i:" + "|".join(re.escape(sign) for sign in LOGIN_CLAUSE_SIGNS) + r")[^\n:：<>]{0,60}?[ \t]*[:：][ \t]*"
    r"(?:(?P<next>\r?\n)[ \t]*)?(?P<secret>[^\s<>]{8,64})[ \t]*(?=\r?\n|\Z)"
)
_LOGIN_HEADING = re.compile(
    r"(?i:" + "|".join(re.escape(sign) for sign in LOGIN_CLAUSE_SIGNS) + r")[^\n:：<>]{0,40}?[ \t]*[:：][ \t]*\r?\n"
)
_LOGIN_ITEM = re.compile(r"[ \t]*[-—–*•][ \t]*[^\n:：]{1,60}[:：][ \t]+(?P<secret>[^\s<>]{8,64})[ \t]*\r?(?:\n|\Z)")
LOGIN_ITEMS = 8


def _login_value(value: str) -> bool:
    return (
        _password_like(value.rstrip(_TRAILING) or value)
        and "://" not in value
        and _ADDRESS_LIKE.search(value) is None
        and not value.startswith(("/", "~", "\\", "$", "%", "{", "("))
    )


_ADDRESS_LIKE = re.compile(r"@[\w-]+\.[\w.]+|^www\.")


_LOGIN_CLAUSE_MATCHER = needle_matcher(LOGIN_CLAUSE_SIGNS)


def _login_clause_spans(text: str) -> Iterator[tuple[int, int]]:
    if not holds_any(text.lower(), _LOGIN_CLAUSE_MATCHER):
        return  # one automaton pass (a substring test per sign cost three times as much)
    for clause in _LOGIN_CLAUSE.finditer(text):
        if _login_value(clause.group("secret")):
            yield clause.span("secret")
    for heading in _LOGIN_HEADING.finditer(text):
        at = heading.end()
        for _ in range(LOGIN_ITEMS):
            item = _LOGIN_ITEM.match(text, at)
            if item is None:
                break
            if _login_value(item.group("secret")):
                yield item.span("secret")
            at = item.end()


# What a browser test or an agent types into a page's field: Selenium's `send_keys`, Playwright's `fill`/`type`/
# `pressSequentially`, Cypress's `type`, WebdriverIO's `setValue`, with a literal; the field is named by the locator
# before the call on its line (`find_element(By.ID, "login_password").send_keys("…")`, `getByLabel('Password')`)
# or by the call's first argument (`page.fill('#password', '…')`).
_TYPE_CALL = re.compile(
    r"""\.(?:send_?[kK]eys|fill|type|setValue|set_value|pressSequentially|press_sequentially)\([ \t]*"""
    r"""(?:(?P<field>['"][^'"\n]{1,120}['"])[ \t]*,[ \t]*)?(?P<q>['"`])(?P<secret>[^'"`\n]{1,256})(?P=q)[ \t]*[,)]"""
)
_LOCATOR_WORD = re.compile(r"[^\W\d_]+")


def _typed_into_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    for call in _TYPE_CALL.finditer(text):
        field = call.group("field") or _line_before(text, call.start())[-160:]
        quoted = "".join(m.group(2) for m in _QUOTED_VALUE.finditer(field)) if call.group("field") is None else field
        if any(is_sensitive(word, sensitive) for word in _LOCATOR_WORD.findall(normalise_key(quoted).replace("_", " "))):
            yield call.span("secret")


# Class: a literal default for a sensitive variable read from the environment (`process.env.SAUCE_ACCESS_KEY ||
# '…'`, `os.getenv("DB_PASSWORD", "…")`, `os.environ.get('API_TOKEN') or '…'`, `ENV.fetch("SECRET", "…")`, `?? '…'`):
# the fallback is the credential itself.
_ENV_DEFAULT = re.compile(
    r"""(?:process\.env\.|import\.meta\.env\.|\bgetenv\(|environ\.get\(|ENV\.fetch\(|Deno\.env\.get\()[ \t]*['"]?"""
    r"""(?P<name>[A-Za-z_]\w{0,80})['"]?(?:[ \t]*\)[ \t]*(?:\|\||\?\?|\bor\b)|[ \t]*(?:\|\||\?\?|,|\bor\b))[ \t]*"""
    r"""(?P<q>['"`])(?P<secret>[^'"`\n]{6,256})(?P=q)"""
)  # round 15: a comma after the call's `)` starts the next argument of what holds it (`"api_type": "azure"`), no default


def _env_default_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    for match in _ENV_DEFAULT.finditer(text):
        if is_sensitive(match.group("name"), sensitive):
            yield match.span("secret")


_HEADER_CELL = re.compile(r"[A-Za-z][\w .\-]{0,40}\??")  # round 14: a question's mark (`Done?`)
_TABLE_DELIMITERS = ",\t;:"


def _column_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    """The cells under a credential column of a delimited table: a header line of names (CSV, TSV, `;`, or `:` as a
    commented `.pgpass` header has), one of them sensitive, then the rows with as many fields (the last column
    takes the rest of its row, so a `:` in a password keeps its row)."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    next_free = 0  # a table's rows are no headers: each line is read once (`a,password,b` repeated was quadratic)
    for i, line in enumerate(lines[:-1]):
        if i < next_free:
            continue
        header = line.lstrip("#/ \t")
        for delimiter in _TABLE_DELIMITERS:
            if header.count(delimiter) < 2:
                continue
            names = [name.strip().strip("\"'") for name in _split_cells(header, delimiter)]
            columns = [k for k, name in enumerate(names) if is_sensitive(name, sensitive)]
            if not columns or not all(_HEADER_CELL.fullmatch(name) for name in names):
                continue
            j = i + 1
            while j < len(lines):
                cells = _split_cells(lines[j], delimiter, len(names) - 1)
                if len(cells) != len(names) or lines[j].lstrip().startswith("#"):
                    break
                at = starts[j]
                for k, cell in enumerate(cells):
                    at = lines[j].index(cell, at - starts[j]) + starts[j] if delimiter == "\t" else at
                    value = cell.strip().strip("\"'")
                    # Round 14: a remark in parentheses where the value would be (`(sent via 1Password)`) holds none.
                    if k in columns and value and not (value[0] == "(" and value[-1] == ")" and " " in value):
                        begin = at + cell.index(value)
                        yield begin, begin + len(value)
                    at += len(cell) + 1
                j += 1
            next_free = j
            break


# Class (round 17, second): a fixed-width table (a report's, SQL*Plus' or a CLI's listing: a header line of names, a rule of
# dash runs under them, then the rows): the cell under a credential column, cut where its run begins and the next
# one begins (the row's fields one for one, when they are as many as the columns).
_RULE_LINE = re.compile(r"(?m)^[ \t]*-{3,}(?:[ \t]+-{3,})+[ \t]*\r?$")
_DASH_RUN = re.compile(r"-{3,}")
_FIELDS = re.compile(r"\S+")


def _fixed_width_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    for rule in _RULE_LINE.finditer(text):
        header_end = rule.start() - 1
        header_start = text.rfind("\n", 0, max(0, header_end)) + 1
        if header_end <= header_start:
            continue
        runs = [(m.start() - rule.start(), m.end() - rule.start()) for m in _DASH_RUN.finditer(rule.group())]
        header = text[header_start:header_end]
        names = [header[a : runs[k + 1][0] if k + 1 < len(runs) else len(header)].strip() for k, (a, _) in enumerate(runs)]
        columns = [k for k, name in enumerate(names) if name and is_sensitive(name, sensitive) and not names_a_hash(name)]
        if not columns:
            continue
        at = rule.end() + 1
        while at < len(text):
            line_end = text.find("\n", at)
            line_end = len(text) if line_end == -1 else line_end
            row = text[at:line_end].rstrip("\r")
            if not row.strip() or _RULE_LINE.match(row):
                break
            fields = list(_FIELDS.finditer(row))
            for k in columns:
                if len(fields) == len(runs):
                    begin, end = at + fields[k].start(), at + fields[k].end()
                else:
                    cut = row[runs[k][0] : runs[k + 1][0] if k + 1 < len(runs) else len(row)]
                    if not cut.strip() or " " in cut.strip():
                        continue
                    begin = at + runs[k][0] + cut.index(cut.strip())
                    end = begin + len(cut.strip())
                if is_maskable(text[begin:end]):
                    yield begin, end
            at = line_end + 1


# Class (round 15): an SQL dump's rows under a credential column (`INSERT INTO users (id, login, pass) VALUES
# (1,'ana','…'),(2,'bo','…');`): each row's string literal at that column's place.
_INSERT = re.compile(
    r"(?i)\binsert[ \t]+(?:ignore[ \t]+)?into[ \t]+[^\s(]{1,128}[ \t]*\((?P<columns>[^()\n]{1,2000})\)[ \t\r\n]*values[ \t\r\n]*(?=\()"
)
_SQL_ITEM = re.compile(r"""[ \t\r\n]*(?:'(?P<literal>(?:[^'\\\n]|''|\\.){0,4096})'|[^,()'\s]{1,128}(?:\([^()\n]{0,256}\))?)[ \t\r\n]*(?P<end>[,)])""")
_NEXT_ROW = re.compile(r"[ \t\r\n]*,[ \t\r\n]*(?=\()")


def _insert_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    """The string literals of an INSERT's rows under a credential column (not a column naming a password's hash)."""
    for insert in _INSERT.finditer(text):
        names = [name.strip(" \t`\"[]") for name in insert.group("columns").split(",")]
        columns = {k for k, name in enumerate(names) if is_sensitive(name, sensitive) and not names_a_hash(name)}
        if not columns:
            continue
        at = insert.end()
        while text.startswith("(", at):
            at += 1
            for k in itertools.count():
                item = _SQL_ITEM.match(text, at)
                if item is None:
                    break
                if k in columns and item.group("literal"):
                    yield item.span("literal")
                at = item.end()
                if item.group("end") == ")":
                    break
            else:  # pragma: no cover - itertools.count never ends
                break
            if item is None or item.group("end") != ")":
                break
            row = _NEXT_ROW.match(text, at)
            if row is None:
                break
            at = row.end()


# Class (round 15): the members of a block named for credentials in the plural (Consul's `acl { tokens { agent = "…" } }`,
# HCL's and nginx-like configs' `secrets { … }`): each member's quoted value, whatever the member's own name.
SECRET_BLOCK_SIGNS = ("tokens", "passwords", "secrets", "credentials")
_SECRET_BLOCK = re.compile(
    r"(?m)^[ \t]*(?i:tokens|passwords|secrets|credentials)[ \t]*\{[ \t]*\r?\n"
    r"(?P<body>(?:[ \t]*[\w.-]{1,64}[ \t]*=[ \t]*\"[^\"\n]*\"[ \t]*\r?\n){1,32})[ \t]*\}"
)
_BLOCK_MEMBER = re.compile(r"(?m)^[ \t]*[\w.-]{1,64}[ \t]*=[ \t]*\"(?P<secret>[^\"\n]+)\"")
# Class (round 15): PagerDuty's integration key, 32 hex digits under `routing_key` (Alertmanager, its Events API v2),
# `service_key` or `integration_key`; an AMQP routing key is words (`orders.created`), never 32 hex digits.
_PAGERDUTY_KEY = re.compile(
    r"(?i)(?<![\w-])[\"']?(?:routing|service|integration)[_-]?key[\"']?[ \t]*[:=][ \t]*[\"']?(?P<secret>[0-9a-f]{32})(?![0-9a-z])"
)


_PAGERDUTY_WORDS = ("routing", "Routing", "ROUTING", "service_key", "serviceKey", "SERVICE_KEY")
_PAGERDUTY_WORDS += ("integration", "Integration", "INTEGRATION")


def _secret_block_spans(text: str) -> Iterator[tuple[int, int]]:
    """The quoted values of the members of a block named for credentials in the plural (see _SECRET_BLOCK)."""
    for block in _SECRET_BLOCK.finditer(text):
        for member in _BLOCK_MEMBER.finditer(text, block.start("body"), block.end("body")):
            if is_maskable(member.group("secret")):
                yield member.span("secret")


_TABS = re.compile(r"\t+")


def _split_cells(line: str, delimiter: str, most: int = -1) -> list[str]:
    """A line's cells; tabs in a run are one delimiter (columns aligned with several tabs: `/etc/ppp/chap-secrets`)."""
    if delimiter == "\t":
        return _TABS.split(line.strip("\t"), maxsplit=max(most, 0))
    return line.split(delimiter, most)


# Class (round 17): a cookie's value of words (a consent's `necessary%2Canalytics`, a language's `nb-NO`, `deleted`
# that clears it) is a setting, no session.
# Round 17 (second): an encoded `=` or `&` joins a consent's words too (`analytics%3Dfalse%2Cads%3Dtrue`).
_WORDS_COOKIE = re.compile(r"[A-Za-z]{1,20}(?:(?:[-_,.:|= ]|%2[Cc]|%20|%7[Cc]|%3[Dd]|%26)[A-Za-z]{1,20})*")


# Class (round 17): a cookie jar in Netscape's format (curl's `-c`, a browser's export): seven fields a line, the value
# last, behind its domain, flags, path, expiry and name.
_COOKIE_FILE_LINE = re.compile(
    r"(?m)^(?:#HttpOnly_)?[^\s#][^\t\n]*\t(?:TRUE|FALSE)\t[^\t\n]*\t(?:TRUE|FALSE)\t\d+\t[^\t\n]+\t(?P<secret>[^\t\r\n]+)\r?$"
)
COOKIE_FILE_SIGNS = ("\ttrue\t", "\tfalse\t")


def _cookie_spans(text: str) -> Iterator[tuple[int, int]]:
    """Every cookie value of a Cookie header, the first pair's of a Set-Cookie header (whatever their names), but
    a value of words."""
    for match in _COOKIE.finditer(text):
        offset = match.start("pairs")
        pairs = match.group("pairs").split(";")
        for pair in pairs[:1] if match.group("set") else pairs:
            name, sep, value = pair.partition("=")
            if sep and value.strip() and not _WORDS_COOKIE.fullmatch(value.strip()):
                value_start = offset + len(name) + 1 + (len(value) - len(value.lstrip()))
                yield value_start, value_start + len(value.strip())
            offset += len(pair) + 1
    if "\tTRUE\t" in text or "\tFALSE\t" in text:
        for line in _COOKIE_FILE_LINE.finditer(text):
            if not _WORDS_COOKIE.fullmatch(line.group("secret")) and is_maskable(line.group("secret")):
                yield line.span("secret")



# A cell of words only (`via SSO`, `see the vault`) says where a password is; a passphrase has a digit or a mark.
_SPOKEN_CELL = re.compile(r"^[^\W\d_]+(?:[ \t]+[^\W\d_]+)*$")
# Class (round 17): a header that says where the credential is kept (`Where is the secret?`, `Password location`): its
# cells name places (`1Password "Partner SFTP"`, `Vault secret/…`), never the value.
_WHERE_HEADER = re.compile(r"(?i)\b(?:where|location|stored|kept)\b")
_BAR_SEPARATOR = re.compile(r"[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*(?::?-{3,}:?[ \t]*)?")


def _bar_cells(line: str) -> tuple[int, list[str]]:
    """A bar table's row: the offset of its first cell in the line, and its cells (outer bars dropped)."""
    lead = len(line) - len(line.lstrip())
    inner = line.strip()
    if inner.startswith("|"):
        inner, lead = inner[1:], lead + 1
    return lead, (inner[:-1] if inner.endswith("|") else inner).split("|")


def _bar_table_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    """The cells under a credential column of a table drawn with bars (Markdown, Notion, Confluence): a header row
    of names, one of them sensitive, a `|---|` row, then the rows with as many cells."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    next_free = 0  # each line is read once: a table ends where the next one's header starts
    for i, line in enumerate(lines[:-2]):
        if i < next_free or line.count("|") < 2 or not _BAR_SEPARATOR.fullmatch(lines[i + 1].rstrip("\r")):
            continue
        names = [cell.strip().strip("*_`") for cell in _bar_cells(line)[1]]
        columns = {k for k, name in enumerate(names) if name and is_sensitive(name, sensitive) and _WHERE_HEADER.search(name) is None}
        if not columns:
            continue
        next_free = len(lines)
        for j in range(i + 2, len(lines)):
            lead, cells = _bar_cells(lines[j])
            if "|" not in lines[j] or len(cells) != len(names) or j + 1 < len(lines) and _BAR_SEPARATOR.fullmatch(lines[j + 1].rstrip("\r")):
                next_free = j
                break
            at = starts[j] + lead
            for k, cell in enumerate(cells):
                value = cell.strip().strip("`")
                if k in columns and value and is_maskable(value) and (" " not in value or _SPOKEN_CELL.search(value) is None):
                    begin = at + cell.index(value)
                    yield begin, begin + len(value)
                at += len(cell) + 1


# A list of values under a label that names them and ends with a colon (`the two recovery codes I have left:`, then
# one code per line): each line one token, bulleted or not, shaped like a password, a code or a random token.
_LIST_LABEL_END = re.compile(r":[ \t]*\r?\n")
_LISTED = re.compile(r"[ \t]*(?:[-*•+]|\d{1,2}[.)])?[ \t]*(?P<value>[^\s\-*•+]\S{7,127})[ \t]*\r?")
# A code in groups (`672d1-b0972`), a digit in its first group.
_CODE_GROUPS = re.compile(r"(?=[^-]*\d)[A-Za-z0-9]{4,}(?:-[A-Za-z0-9]{4,})+")


# A line that opens a block of code: what follows is code, not a list of values.
_BLOCK_OPENER = re.compile(r"[ \t]*(?:try|else|finally|except\b.*|(?:el)?if\b.*|for\b.*|while\b.*|with\b.*|def\b.*|class\b.*|case\b.*|match\b.*):$")
# A call in code (`sys.exit(1)`, `self.save(must_create=True)`), not a generated password that holds a parenthesis.
_CALL = re.compile(_CODE_NAME.pattern + r"\([^()]*\)")


def _listable(value: str) -> bool:
    if _NOT_A_PASSWORD.match(value) or not is_maskable(value) or _CALL.fullmatch(value):
        return False
    codes = _CODE_GROUPS.fullmatch(value) is not None and any(c.isalpha() for c in value)
    return codes or _password_like(value) or looks_random(value)


def _listed_spans(text: str, sensitive: frozenset[str]) -> Iterator[tuple[int, int]]:
    for end in _LIST_LABEL_END.finditer(text):
        colon = end.start()
        line_start = text.rfind("\n", 0, colon) + 1
        above = text.rfind("\n", 0, line_start - 1) + 1 if line_start else 0
        label = text[max(above, colon - 240) : colon]
        if _BLOCK_OPENER.match(text, line_start, colon + 1):
            continue  # a block of code (`try:`, `else:`, `if x:`), not a label
        # Whole words, plurals too (`passwords:`), not `auth` of `authentication`.
        names = (label[slice(*_name_at(label, *hit))] for hit in name_hits(label, sensitive))
        if not any(is_sensitive(name, sensitive) or name[-1:] in "sS" and is_sensitive(name[:-1], sensitive) for name in names):
            continue
        at, listed_any = end.end(), False
        while at < len(text):
            line_end = text.find("\n", at)
            line_end = len(text) if line_end == -1 else line_end
            line = text[at:line_end]
            if not line.strip():
                if listed_any:
                    break  # a blank line after the list ends it
                at = line_end + 1
                continue
            listed = _LISTED.fullmatch(line)
            value = listed.group("value") if listed else ""  # a token alone on its line: no sentence to end
            if value.endswith(":"):
                break  # a key that opens a block, not a value
            if not value or not _listable(value):
                break
            yield at + listed.start("value"), at + listed.start("value") + len(value)
            at, listed_any = line_end + 1, True


# UTF-8 read as Latin-1 (Facebook's and Instagram's exports write every character beyond ASCII so: `Лозинка` as
# `\u00d0\u009b\u00d0\u00be…`): a label in another script is unreadable until the bytes are read as UTF-8 again.
_LATIN1_RUN = re.compile("[\u0080-\u00ff]{2,}")
# The escapes as JSON writes them, or escaped once more (the text serialized inside an event: `\\u00d0`).
_ESCAPED_RUN = re.compile(r"(?:\\{1,2}u00[89a-fA-F][0-9a-fA-F]){2,}")
_ESCAPED_BYTE = re.compile(r"u00([0-9a-fA-F]{2})")


def unmojibaked(text: str) -> str | None:
    """The text with each run of Latin-1 characters (or their JSON escapes) that is UTF-8 read as Latin-1 decoded
    again, or None when it holds none."""
    if text.isascii() and "\\u00" not in text:
        return None
    repaired = _ESCAPED_RUN.sub(_decoded_escapes, text) if "\\u00" in text else text
    if not repaired.isascii():
        repaired = _LATIN1_RUN.sub(_decoded, repaired)
    return repaired if repaired != text else None


def _decoded(run: re.Match[str]) -> str:
    try:
        return run.group().encode("latin-1").decode("utf-8")
    except UnicodeDecodeError:
        return run.group()


def _decoded_escapes(run: re.Match[str]) -> str:
    raw = bytes(int(byte, 16) for byte in _ESCAPED_BYTE.findall(run.group()))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return run.group()


# Class (round 12): characters a format writes as escapes, read again as the characters: RTF's `\uN?` (every character
# beyond its code page: a label in Ge'ez or Cyrillic is `\u4675?\u4616?…` until decoded), HTML's quotes (`&#x27;`,
# `&quot;`: `{&#x27;PASSWORD&#x27;: &#x27;…&#x27;}` on a debug page is a Python dict).
_RTF_ESCAPE = re.compile(r"\\{1,2}u(-?\d{1,5})\?")  # (the backslash doubled inside a JSON string)
_QUOTE_ENTITY = re.compile(r"&(?:#[xX]0*(?:27|22)|#0*(?:39|34)|quot|apos);")


def unescaped(text: str) -> str | None:
    """The text with RTF's unicode escapes and HTML's quote entities read as characters, or None when it holds
    neither."""
    read = text
    if "\\u" in text:
        read = _RTF_ESCAPE.sub(_rtf_character, read)
    if "&" in text:
        read = _QUOTE_ENTITY.sub(_quote_character, read)
    return read if read != text else None


def _rtf_character(match: re.Match[str]) -> str:
    code = int(match.group(1))
    code = code + 65536 if code < 0 else code
    return chr(code) if 0 < code < 0xD800 or 0xE000 <= code < 0x110000 else match.group()


def _quote_character(match: re.Match[str]) -> str:
    entity = match.group()
    return '"' if entity in ("&quot;",) or entity.lstrip("&#xX0").rstrip(";") in ("22", "34") else "'"


# Class (round 12): a `user:password` pair under a credential name (`--credentials solr:…`, `--auth-cred "qa:…"`,
# `userpass: ops:…`): the password is also learnt alone, where a tool prints it without the user.
_ALGORITHM = re.compile(r"(?i)sha\d*|sha3-\d+|md5|blake2\w*|h1|crc32c?|xxh\d*")
_USER_PAIR = re.compile(r"[A-Za-z][\w.@+\-]{0,63}:(?P<password>[^\s:/]{6,128})")


def pair_password(value: str) -> str | None:
    """The password of a `user:password` value, when it is shaped like a credential (not `host:port`, `image:tag`)."""
    pair = _USER_PAIR.fullmatch(value)
    if pair is None or _ALGORITHM.fullmatch(value, 0, pair.start("password") - 1):
        return None  # `sha256:…` names a digest's algorithm, not a user
    password = pair.group("password")
    return password if credential_shaped(password) else None
