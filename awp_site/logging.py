"""Every log record of the process is masked where it is made (R14 on the way out): message, traceback, stack.

A log line is a way out like a page: an error's traceback quotes the request payload, a database error prints
the parameters of the failed statement (`DETAIL: Key (slug)=(…)`, `LINE 1: SELECT 'value'::integer`), an access
line carries the URL's query. So the masks run when the record is created (a LogRecord factory), before any
handler sees it — the console, a file, a test's caplog alike:

- key and pattern masks with the global sensitive list (every text shape of a sensitive key, connection-URL
  passwords, Bearer tokens, private keys, cloud key formats), over message and traceback as one text, so a
  value keyed in the message is also masked where the traceback repeats it;
- value masks when a request is in scope (`request_scope`, set by awp_site.middleware.RedactionNet): the known
  secrets of every experiment the request read, the experiments' own sensitive names, and what the detector
  finds in the request's body (a keyed secret in a payload is masked wherever the error quotes it).

Access lines that daphne writes itself (not through logging) get the key and pattern masks (`mask_access_line`).
"""

from __future__ import annotations

import collections
import contextvars
import logging
import threading
import traceback
from typing import Any
from urllib.parse import quote, unquote

from django.conf import settings

REDACTED = "[redacted]"
MAX_BODY = 1 << 20  # the request body scanned for keyed secrets when an error is logged (its first MB)

_request: contextvars.ContextVar[Any] = contextvars.ContextVar("awp_log_request", default=None)
_busy = threading.local()  # masking may query the database, whose logger must not recurse into masking
_installed = False


def request_scope(request: Any) -> contextvars.Token[Any]:
    """Log records made until `reset_scope` are masked with this request's experiments and payload."""
    return _request.set(request)


def reset_scope(token: contextvars.Token[Any]) -> None:
    _request.reset(token)


def mask_log_parts(parts: list[str], *, scan_body: bool = True) -> list[str]:
    """The parts of one log record (message, traceback, stack), masked together; the one log way out.

    scan_body=False skips the detector over the request's body (a one-line 4xx warning quotes no payload)."""
    from state.detection import detect_secrets
    from state.redaction import KnownSecrets, redact_text, sensitive_set

    names = list(getattr(settings, "AWP_SENSITIVE_FIELDS", ["password", "token"]))
    values: set[str] = set()
    request = _request.get()
    if request is not None:
        extra_names, values = _request_secrets(request, scan_body=scan_body)
        names += extra_names
    sensitive = sensitive_set(names)
    values |= detect_secrets("\n".join(parts), sensitive)
    known = KnownSecrets.of(values, escaped=True) if values else None
    return [redact_text(part, sensitive, known) if part else part for part in parts]


def _request_secrets(request: Any, *, scan_body: bool) -> tuple[list[str], set[str]]:
    """Sensitive names and secrets of the request in scope: its experiments' and its body's (scanned once)."""
    from state.detection import detect_secrets
    from state.redaction import sensitive_set

    names: list[str] = []
    values: set[str] = set()
    if getattr(request, "awp_revealed", False):
        return names, values
    for experiment in getattr(request, "awp_redaction_scope", {}).values():
        try:
            from state.secrets import known_secrets_for
            from state.services_redaction import sensitive_fields_for

            names += list(sensitive_fields_for(experiment))
            values |= known_secrets_for(experiment.pk).values
        except Exception:  # noqa: BLE001 - a broken transaction or an async context: the cached matcher then
            values |= _cached_values(experiment.pk)
    found = getattr(request, "awp_body_secrets", None)
    if found is None and scan_body:
        try:
            body = request.body[:MAX_BODY].decode("utf-8", errors="replace")
        except Exception:  # noqa: BLE001 - a body read as a stream is gone; key and pattern masks remain
            body = ""
        found = detect_secrets(body, sensitive_set([*getattr(settings, "AWP_SENSITIVE_FIELDS", []), *names])) if body else set()
        request.awp_body_secrets = found
    return names, values | (found or set())


def _cached_values(experiment_id: int) -> frozenset[str]:
    from state import secrets

    cached = secrets._cache.get(experiment_id)
    return cached[1].values if cached else frozenset()


def mask_record(record: logging.LogRecord) -> logging.LogRecord:
    """Mask a record's message, traceback and stack in place (idempotent: a masked record is left alone)."""
    if getattr(record, "awp_masked", False) or getattr(_busy, "active", False):
        return record
    _busy.active = True
    try:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is the logger's problem, not ours
            return record
        trace = record.exc_text or ("".join(traceback.format_exception(*record.exc_info)).rstrip("\n") if record.exc_info and record.exc_info[0] else "")
        # The request's body is scanned for an error or a traceback, not for every one-line 4xx warning.
        scan_body = bool(trace) or record.levelno >= logging.ERROR
        masked_message, masked_trace, masked_stack = mask_log_parts([message, trace, record.stack_info or ""], scan_body=scan_body)
        if masked_message != message:
            record.msg, record.args = masked_message, None
        if trace:
            record.exc_text = masked_trace  # formatters print exc_text when it is set (and never format it again)
        if record.stack_info:
            record.stack_info = masked_stack
        record.awp_masked = True
    finally:
        _busy.active = False
    return record


def install_record_factory() -> None:
    """Mask every record where it is made, for every handler of the process (idempotent)."""
    global _installed
    if _installed:
        return
    make = logging.getLogRecordFactory()

    def masked_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        return mask_record(make(*args, **kwargs))

    logging.setLogRecordFactory(masked_record)
    _installed = True


# Known secrets seen in recent request URLs (a search for a secret, a run id in a path): daphne writes its access
# line after the request, outside its scope, so the net notes them here for `mask_access_line` (bounded).
_url_secrets: collections.deque[str] = collections.deque(maxlen=512)
_url_lock = threading.Lock()


def note_url_secrets(request: Any, known: Any) -> None:
    """Remember how the known secrets in this request's URL were spelled, for its access-log line."""
    url = request.get_full_path()
    found = {url[start:end] for start, end in known.spans(url)}
    if not found:
        return
    spellings = {form for text in found for form in (text, unquote(text), quote(unquote(text), safe=""), quote(unquote(text)))}
    with _url_lock:
        _url_secrets.extend(spellings - set(_url_secrets))


def mask_access_line(line: str) -> str:
    """An access-log line (method, URL with its query, status): key and pattern masks, and the known secrets
    the net saw in recent URLs."""
    from state.redaction import KnownSecrets

    masked = mask_log_parts([line])[0]
    with _url_lock:
        recent = list(_url_secrets)
    return KnownSecrets.of(recent).mask(masked) if recent else masked


class RedactingFilter(logging.Filter):
    """The LOGGING config's filter: configuring it installs the record factory, and it masks what it is handed
    (records made before logging was configured, or by a factory installed later)."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        install_record_factory()

    def filter(self, record: logging.LogRecord) -> bool:
        mask_record(record)
        return True


def mask_daphne_access_log() -> None:
    """Daphne writes its access log to a stream, not through logging: its entries get the same masks.

    Called where every daphne process loads the app (awp_site.asgi), before daphne writes its first entry.
    """
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:  # pragma: no cover - served by another ASGI server
        return
    if getattr(AccessLogGenerator, "awp_masked", False):
        return
    write_entry = AccessLogGenerator.write_entry

    def masked_entry(self: Any, host: Any, date: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        return write_entry(self, host, date, mask_access_line(str(request)), *args, **kwargs)

    AccessLogGenerator.write_entry = masked_entry  # type: ignore[method-assign]
    AccessLogGenerator.awp_masked = True  # type: ignore[attr-defined]
