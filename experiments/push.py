"""The one-event push in one round trip: POST /api/v1/ingest answered by one statement in autocommit.

The statement checks the token (its hash, not revoked, scope ingest, its experiment unchanged), locks the run,
dedupes, inserts, moves the head, announces it (NOTIFY, delivered at commit), notes the token's use and reads
the freshness stamp of the experiment's known secrets for the response net. A single statement is its own
transaction: all or nothing, committed before the answer with synchronous_commit as configured (on), and
Postgres holds no transaction open between round trips. No BEGIN, no COMMIT, no token look-up, no freshness
query: the request pays its pool checkout and this one statement, as /healthz pays its checkout and one query.

What this path takes: a bearer token this process has seen (its id, experiment and scopes are kept per
process; the statement checks them against the rows every time, so a revoked token, a removed scope or an
experiment whose protocol changed writes nothing here), one valid event into an existing run, and an event no
projector applies to (`experiments.projections.needs_projection`: log lines, metrics, tool calls without a
secret to learn). Everything else — a session, a batch, an event a projector reads, a new run, an unknown or
rejected token — goes on, untouched, to the general path (`experiments.api.ingest`), which answers exactly as
it always has, rate limits counted once (`awp_site.auth.CountedRates`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from psycopg.types.numeric import Int8

from awp_site.apierrors import ApiError
from awp_site.auth import CountedRates, check_address_rate, hit_token_rate
from awp_site.db import prepared_cursor
from awp_site.jsonbody import request_json
from awp_site.live import run_advanced_expression
from experiments.ingest import LEDGER_COLUMNS, _existing_seqs
from experiments.models import Experiment, from_row, hash_secret
from experiments.projections import needs_projection
from experiments.pushed import BATCH_FIELDS, batch_head_ok, validate_item
from state.secrets import STAMP_SQL
from state.services_redaction import mark_in_scope

TOKEN_USE_EVERY_SECONDS = 30  # as awp_site.auth.BearerToken: last_used_at is written at most this often


@dataclass(frozen=True)
class KnownToken:
    """A token as this process saw it; the statement checks every field against the rows before it writes."""

    id: int
    scopes: tuple[str, ...]
    experiment: Experiment
    protocol_md5: str  # md5 of the experiment's protocol as Postgres prints it (what needs_projection read)


COUNTED_RATES = "awp.counted_rates"  # the ASGI scope's key for what experiments.push_edge counted before handing on

_tokens: dict[str, KnownToken] = {}  # hashed secret -> token
_lock = threading.Lock()
MAX_TOKENS = 1000


def view(
    general: Callable[[HttpRequest], HttpResponse], *, first: Callable[[HttpRequest], HttpResponse | None] | None = None
) -> Callable[[HttpRequest], HttpResponse]:
    """The view of POST /api/v1/ingest: `first`'s answer when it gives one (the inbox's accept), else the
    one-statement push when it applies, else `general` (ninja's view)."""

    @csrf_exempt  # as ninja's own views: a bearer token needs no CSRF token; the general path checks a session's
    def ingest(request: HttpRequest) -> HttpResponse:
        counted = getattr(request, "scope", {}).get(COUNTED_RATES)
        if counted is not None:  # experiments.push_edge counted this attempt and handed it on: the general path's
            request.awp_counted_rates = counted  # type: ignore[attr-defined]
            return general(request)
        if request.method == "POST":
            try:
                answer = (first(request) if first is not None else None) or one_statement_push(request)
            except ApiError as refused:
                from awp_site.api import on_api_error

                return on_api_error(request, refused)
            except DatabaseError as exc:
                from awp_site.api import on_database_error

                return on_database_error(request, exc)
            if answer is not None:
                return answer
        return general(request)

    return ingest


def one_statement_push(request: HttpRequest) -> HttpResponse | None:
    """The answer to a push this path takes; None hands the request to the general path."""
    secret = bearer_secret(request)
    if secret is None:
        return None
    event, run_id, slug = _one_event(request)
    if event is None:
        return None
    named = ingest_token(request, secret, slug)
    if named is None:
        return None
    token, hashed = named
    experiment = token.experiment
    notify = notify_expression()
    if notify is None or needs_projection(event, experiment):
        return None
    if not token_use_allowed(request, token):
        return None  # the general path says 429, or 401 if the token was revoked meanwhile
    row = _write(token, hashed, run_id, event, notify)
    valid, run_pk, head, known, seq, stamp = row
    if not valid:
        forget_token(hashed)  # revoked, rescoped, or its experiment changed: the general path knows
        return None
    if run_pk is None:
        return None  # no such run: the general path answers 404 (or finds it created meanwhile)
    if seq is None and known is None:
        # A concurrent writer stored this key while the statement waited for the run lock (its snapshot is older).
        known = _existing_seqs(run_pk, [event.dedupe_key])[event.dedupe_key]
    mark_in_scope(request, experiment, known_stamp=(int(stamp[0]), int(stamp[1])))
    return HttpResponse(answer_json(run_id, seq=seq, known=known, head=head), content_type="application/json; charset=utf-8")


def answer_json(run_id: str, *, seq: int | None, known: int | None, head: int) -> str:
    """A one-event push's answer: the new seq, or the seq the same key already has (then nothing new)."""
    return json.dumps({
        "run_id": run_id,
        "seqs": [seq if seq is not None else known],
        "new": 0 if seq is None else 1,
        "last_seq": seq if seq is not None else head,
    })  # fmt: skip


def notify_expression() -> tuple[str, list[Any]] | None:
    """The statement's live NOTIFY (awp_site.live), the same text for every push; None for another channel layer."""
    return run_advanced_expression(run_sql="r.id", seq_sql="ins.seq", experiment_sql="r.experiment_id")


def _one_event(request: HttpRequest) -> tuple[Any, str, str | None]:
    """(the event, run id, experiment slug) of a body holding one valid event; (None, "", None) for any other.
    The body is read once: the general path's parser takes the value (or the refusal) from the request."""
    try:
        value = request_json(request)
    except ApiError:
        return None, "", None
    return one_event_of(value)


def one_event_of(value: Any) -> tuple[Any, str, str | None]:
    """(the event, run id, experiment slug) of a parsed body holding one valid event; (None, "", None) for any other."""
    nothing = None, "", None
    if type(value) is not dict or not value.keys() <= BATCH_FIELDS:
        return nothing
    run_id, events, slug = value.get("run_id"), value.get("events"), value.get("experiment")
    if not batch_head_ok(run_id, slug) or type(events) is not list or len(events) != 1 or settings.AWP_INGEST_MAX_BATCH < 1:
        return nothing
    event, error = validate_item(0, events[0])
    return (event, run_id, slug) if error is None else nothing


def bearer_secret(request: HttpRequest) -> str | None:
    """The secret of the request's `Authorization: Bearer …` header, or None."""
    return bearer_of(request.META.get("HTTP_AUTHORIZATION", ""))


def bearer_of(authorization: str) -> str | None:
    """The secret of an `Authorization` header's value `Bearer …`, or None."""
    scheme, _, secret = authorization.partition(" ")
    return secret if scheme.lower() == "bearer" and secret else None


def may_push(token: KnownToken, slug: str | None) -> bool:
    """Whether this token (as this process saw it) may push to the experiment `slug` names (None: its own)."""
    return "ingest" in token.scopes and not (slug and slug != token.experiment.slug)


def ingest_token(request: HttpRequest, secret: str, slug: str | None) -> tuple[KnownToken, str] | None:
    """(the token, its hash) when it may push to the experiment `slug` names (or its own), as this process saw it;
    None hands the request on. From here the attempt counts against the address, once: the general path is told."""
    check_address_rate(request.META.get("REMOTE_ADDR", "?"))
    request.awp_counted_rates = CountedRates()  # type: ignore[attr-defined]
    hashed = hash_secret(secret)
    token = known_token(hashed)
    if token is None or not may_push(token, slug):
        return None
    return token, hashed


def token_use_allowed(request: HttpRequest, token: KnownToken) -> bool:
    """Count one use of the token (the general path is told); False when it is over its rate."""
    wait = hit_token_rate(token.id)
    request.awp_counted_rates = CountedRates(token_id=token.id, token_wait=wait)  # type: ignore[attr-defined]
    return wait is None


# The first CTEs of a statement that writes for a known token: `tok`, its row as the process saw it (hash, not
# revoked, scope ingest, its experiment unchanged), and its use noted (last_used_at, at most every
# TOKEN_USE_EVERY_SECONDS, as awp_site.auth does). Their parameters are token_row_params().
TOKEN_ROW = """tok AS (
            SELECT t.id FROM experiments_apitoken t JOIN experiments_experiment e ON e.id = t.experiment_id
            WHERE t.id = %s AND t.hashed_secret = %s AND t.revoked_at IS NULL AND 'ingest' = ANY(t.scopes)
              AND e.id = %s AND e.slug = %s AND md5(e.protocol::text) = %s
        ),
        used AS (
            UPDATE experiments_apitoken SET last_used_at = %s WHERE id IN (
                SELECT id FROM experiments_apitoken WHERE id = (SELECT id FROM tok) AND (last_used_at IS NULL OR last_used_at < %s)
                FOR UPDATE SKIP LOCKED
            )
        )"""


def token_row_params(token: KnownToken, hashed: str, now: datetime) -> list[Any]:
    return [
        Int8(token.id), hashed, Int8(token.experiment.pk), token.experiment.slug, token.protocol_md5,
        now, now - timedelta(seconds=TOKEN_USE_EVERY_SECONDS),
    ]  # fmt: skip


def known_token(hashed: str) -> KnownToken | None:
    """The token with this hash as this process last saw it (loaded once); the caller's statement re-checks it."""
    return _tokens.get(hashed) or _load_token(hashed)


def loaded_token(hashed: str) -> KnownToken | None:
    """The token with this hash if this process has loaded it (never a query: experiments.push_edge's look-up)."""
    return _tokens.get(hashed)


def forget_token(hashed: str) -> None:
    """Drop a token the rows said is no longer what this process saw (revoked, rescoped, experiment changed)."""
    with _lock:
        _tokens.pop(hashed, None)


def _load_token(hashed: str) -> KnownToken | None:
    """The unrevoked token with this hash and its experiment (one query), kept for the next pushes."""
    fields = Experiment._meta.concrete_fields
    columns = ", ".join(f'e."{field.column}"' for field in fields)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.id, t.scopes, md5(e.protocol::text), {columns} FROM experiments_apitoken t"
            " JOIN experiments_experiment e ON e.id = t.experiment_id WHERE t.hashed_secret = %s AND t.revoked_at IS NULL",
            [hashed],
        )
        row = cursor.fetchone()
    if row is None:
        return None
    token = KnownToken(
        id=row[0], scopes=tuple(row[1]), protocol_md5=row[2], experiment=from_row(Experiment, fields, row[3:])
    )
    with _lock:
        if len(_tokens) >= MAX_TOKENS:
            _tokens.clear()
        _tokens[hashed] = token
    return token


def _write(
    token: KnownToken, hashed: str, run_id: str, event: Any, notify: tuple[str, list[Any]]
) -> tuple[Any, ...]:
    """The one statement: (token valid, run id or None, run head, seq of a duplicate, new seq, known-secret stamp)."""
    with prepared_cursor() as cursor:
        cursor.execute(*write_statement(token, hashed, run_id, event, notify))
        valid, run_pk, head, known, seq, _notified, stamp = cursor.fetchone()
    return valid, run_pk, head, known, seq, stamp


def write_statement(token: KnownToken, hashed: str, run_id: str, event: Any, notify: tuple[str, list[Any]]) -> tuple[str, list[Any]]:
    """The one statement's text and parameters (the same text for every push: each connection prepares it once)."""
    now = timezone.now()
    notify_sql, notify_params = notify
    experiment_id = Int8(token.experiment.pk)
    params = [
        *token_row_params(token, hashed, now),
        experiment_id, run_id, event.dedupe_key,
        event.kind, event.agent_id, event.iteration, event.depth, event.occurred_at, now, event.payload_bytes.decode(), event.dedupe_key, event.ts_source,
        now, *notify_params, experiment_id,
    ]  # fmt: skip
    return _statement(notify_sql), params


@lru_cache(maxsize=4)
def _statement(notify_sql: str) -> str:
    """The statement's text: the same for every push (parameters only), so each pooled connection prepares it once.

    Every parameter in a select list carries its type: a prepared statement gets no type from a literal's context.
    """
    return f"""
        WITH {TOKEN_ROW},
        r AS (
            SELECT id, last_seq, experiment_id FROM experiments_run
            WHERE experiment_id = %s AND run_id = %s AND EXISTS (SELECT 1 FROM tok) FOR UPDATE
        ),
        dup AS (SELECT e.seq FROM experiments_event e JOIN r ON e.run_id = r.id WHERE e.dedupe_key = %s),
        ins AS (
            INSERT INTO experiments_event ({", ".join(LEDGER_COLUMNS)})
            SELECT r.id, r.last_seq + 1, %s::varchar, %s::varchar, %s::integer, %s::smallint, %s::timestamptz, %s::timestamptz,
                   %s::jsonb, %s::varchar, %s::varchar
            FROM r WHERE NOT EXISTS (SELECT 1 FROM dup)
            ON CONFLICT (run_id, dedupe_key) DO NOTHING
            RETURNING seq
        ),
        head AS (UPDATE experiments_run SET last_seq = ins.seq, updated_at = %s FROM ins, r WHERE experiments_run.id = r.id)
        SELECT EXISTS (SELECT 1 FROM tok), r.id, r.last_seq, (SELECT seq FROM dup), (SELECT seq FROM ins), (SELECT {notify_sql} FROM ins),
               ({STAMP_SQL})
        FROM (VALUES (1)) AS one LEFT JOIN r ON true
    """
