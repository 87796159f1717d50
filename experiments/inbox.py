"""Accept a pushed batch now, append it beside the request: `Prefer: respond-async` on POST /api/v1/ingest.

A client that sends `Prefer: respond-async` with a token asks for the batch to be *accepted* rather than
appended before the answer. Accepting is what an agent waits for, and it costs what the request must cost
anyway: the body's reading (the same refusals, at the edge: not JSON, too deep, NUL, NaN → 400/422, without
building the value: experiments.pushed.quick_batch), the batch limit and the kinds, then one statement that
stores the body as received (zstd level 1, `pack`) and wakes a drainer. The answer is
`202` with a receipt, durable at commit (synchronous_commit as configured). Without a drainer alive, or with a
session instead of a token, the preference is not applied and the batch is appended at once (200 with seqs).

A drainer (`drain_one`, run by `Drainer` in `awp_serve` or `manage.py awp_drain`) takes the oldest pending batch
whose run has no older pending batch, so the batches of a run go into its ledger in the order they were
accepted, while several drainers share different runs. It applies the batch through the one ingest path
(`experiments.ingest.append_locked`: per-item validation, dedupe, gap-free seqs, secret learning, projections)
and settles the receipt in the same transaction: applied with the seqs, or refused with the same codes and
per-item errors a synchronous push gets, nothing of it stored. Until then nothing of the body is served
anywhere: the ledger, the projections and every way out see a batch only once it was scanned and projected.

`GET /api/v1/ingest/batches/{id}` reads a receipt (`experiments.api`).
"""

from __future__ import annotations

import logging
import os
import threading
import zlib
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import orjson
import psutil
import psycopg
import zstandard
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from psycopg.types.numeric import Int8

from awp_site.apierrors import ApiError
from awp_site.db import dedicated_params, prepared_cursor
from awp_site.jsonbody import parse_json_body
from awp_site.logging import request_scope, reset_scope
from awp_site.middleware import TRIM_AFTER_BYTES, release_freed_memory
from experiments.models import AcceptedBatch
from experiments.push import (
    TOKEN_ROW,
    bearer_secret,
    forget_token,
    ingest_token,
    token_row_params,
    token_use_allowed,
)
from experiments.pushed import quick_batch
from state.secrets import stamp_sql
from state.services_redaction import mark_in_scope

log = logging.getLogger(__name__)

# A live drainer holds this advisory lock (shared, on its own connection): Postgres frees it if the drainer dies,
# so the accept statement knows whether anyone will apply what it accepts. Two int4 keys: 'AWPD', 1.
DRAINER_LOCK = (0x41575044, 1)
CHANNEL = "awp_inbox"
RECEIPT_DAYS = 7


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_codecs = threading.local()


def pack(body: bytes) -> bytes:
    """A body as the inbox stores it: zstd level 1. On 4.3 MB of agent-sized events, 2-15 ms (zlib level 1, before:
    10-56 ms) and a write of a half to a fortieth of it; raw, the write alone took 25-34 ms (bench/README)."""
    compressor = getattr(_codecs, "compressor", None)
    if compressor is None:  # one per thread: a compressor is not shared between threads
        compressor = _codecs.compressor = zstandard.ZstdCompressor(level=1)
    return compressor.compress(body)


def unpack(stored: bytes) -> bytes:
    """A stored body (zstd; zlib for a batch accepted by an earlier version, still pending at the upgrade)."""
    stored = bytes(stored)
    if stored[:4] == _ZSTD_MAGIC:
        return zstandard.ZstdDecompressor().decompress(stored)
    return zlib.decompress(stored)


def prefers_async(request: HttpRequest) -> bool:
    """Whether the request asks for `Prefer: respond-async` (RFC 7240; several preferences may share the header)."""
    header = request.META.get("HTTP_PREFER", "")
    return any(part.split(";")[0].strip().lower() == "respond-async" for part in header.split(","))


def accept(request: HttpRequest) -> HttpResponse | None:
    """The ingest view's first answer (experiments.push.view): 202 and a receipt for a batch that asks for it and
    may have it; None hands the request on, untouched, to the one-statement push and the general path (which
    answer it as they always have: 200, or the refusal)."""
    secret = bearer_secret(request) if prefers_async(request) else None
    if secret is None:
        return None
    body = request.body
    checked = quick_batch(body, max_events=settings.AWP_INGEST_MAX_BATCH)
    if checked is None:
        return None
    run_id, slug, count = checked
    named = ingest_token(request, secret, slug)
    if named is None or not token_use_allowed(request, named[0]):
        return None
    token, hashed = named
    experiment_id, now = Int8(token.experiment.pk), timezone.now()
    params = [
        *token_row_params(token, hashed, now), *DRAINER_LOCK,
        experiment_id, Int8(token.id), run_id, pack(body), count, len(body), now, len(body), settings.AWP_INGEST_INBOX_BYTES,
        experiment_id,
    ]  # fmt: skip
    with prepared_cursor() as cursor:
        cursor.execute(_ACCEPT, params)
        valid, drained, batch_id, _notified, stamp = cursor.fetchone()
    if not valid:
        forget_token(hashed)  # revoked, rescoped, or its experiment changed: the general path knows
        return None
    if not drained:
        return None  # nobody would apply it: appended at once instead
    if batch_id is None:
        raise ApiError(
            429, "inbox_full", "Accepted batches waiting for the ledger exceed AWP_INGEST_INBOX_BYTES; retry shortly.", retry_after=1
        )
    mark_in_scope(request, token.experiment, known_stamp=(int(stamp[0]), int(stamp[1])))
    status_url = f"/api/v1/ingest/batches/{batch_id}"
    receipt = {"batch": batch_id, "state": AcceptedBatch.PENDING, "run_id": run_id, "events": count, "status_url": status_url}
    response = HttpResponse(orjson.dumps(receipt), status=202, content_type="application/json; charset=utf-8")
    response["Location"] = status_url
    response["Preference-Applied"] = "respond-async"
    return response


# A drainer's shared lock, held (its two keys are the parameters).
# Advisory locks are per database, pg_locks shows the whole server's: a drainer of another database on the same
# Postgres (another test process, a bench database) is not this one's.
_DRAINER_LOCK_HELD = (
    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = %s::oid AND objid = %s::oid AND objsubid = 2 AND granted"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)


def drainer_alive() -> bool:
    """Whether a drainer holds its lock now (what an accept checks in its statement)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS ({_DRAINER_LOCK_HELD})", list(DRAINER_LOCK))
        return bool(cursor.fetchone()[0])


# One statement in the request's autocommit: the token as the process saw it (hash, not revoked, scope ingest,
# experiment unchanged; its use noted), a drainer alive, room in the inbox; then store the body, wake a drainer,
# and read the known-secret stamp for the response net.
_ACCEPT = f"""
    WITH {TOKEN_ROW},
    drainer AS ({_DRAINER_LOCK_HELD} LIMIT 1),
    ins AS (
        INSERT INTO experiments_acceptedbatch (experiment_id, token_id, run_id, body, events, bytes, state, accepted_at)
        SELECT %s::bigint, %s::bigint, %s::varchar, %s::bytea, %s::integer, %s::integer, 'pending', %s::timestamptz
        WHERE EXISTS (SELECT 1 FROM tok) AND EXISTS (SELECT 1 FROM drainer)
          AND (SELECT coalesce(sum(bytes), 0) FROM experiments_acceptedbatch WHERE state = 'pending') + %s::bigint <= %s::bigint
        RETURNING id
    )
    SELECT EXISTS (SELECT 1 FROM tok), EXISTS (SELECT 1 FROM drainer), (SELECT id FROM ins),
           (SELECT pg_notify('{CHANNEL}', '') FROM ins), ({stamp_sql("%s::bigint")})
"""

# The oldest pending batch whose run has no older pending batch (taken by another drainer: locked, still pending).
_CLAIM = """
    SELECT b.id FROM experiments_acceptedbatch b
    WHERE b.state = 'pending' AND NOT EXISTS (
        SELECT 1 FROM experiments_acceptedbatch o
        WHERE o.state = 'pending' AND o.experiment_id = b.experiment_id AND o.run_id = b.run_id AND o.id < b.id
    )
    ORDER BY b.id LIMIT 1 FOR UPDATE SKIP LOCKED
"""


def drain_one() -> int | None:
    """Apply (or refuse) one pending batch and settle its receipt; its id, or None when none is waiting."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_CLAIM)
            row = cursor.fetchone()
        if row is None:
            return None
        batch = AcceptedBatch.objects.select_related("experiment").get(pk=row[0])
        body = unpack(batch.body)
        # What is logged while the batch is applied is masked as for the request that pushed it (awp_site.logging):
        # the experiment's known secrets and what the body holds under a credential's name.
        scope = request_scope(SimpleNamespace(awp_redaction_scope={batch.experiment_id: batch.experiment}, body=body))
        try:
            with transaction.atomic():
                result = _apply(batch, body)
            batch.state = AcceptedBatch.APPLIED
        except ApiError as refused:
            result = refused.body()
            batch.state = AcceptedBatch.REFUSED
        except (OperationalError, InterfaceError):
            raise  # the database is away: the batch stays pending for the next try
        except Exception:
            # Anything else would fail the same way on every try: refuse the batch (nothing of it stored) rather
            # than hold the runs behind it. The traceback goes to the server log, through its masks.
            log.exception("ingest drainer: batch %s could not be applied", batch.pk)
            result = {"code": "apply_failed", "message": "The server could not apply this batch; nothing was stored. The server log says why."}
            batch.state = AcceptedBatch.REFUSED
        finally:
            reset_scope(scope)
        batch.result, batch.body, batch.settled_at = result, None, timezone.now()
        batch.save(update_fields=["state", "result", "body", "settled_at"])
    if batch.bytes > TRIM_AFTER_BYTES:
        release_freed_memory()  # as after a large request: the batch's parse would stay this process's peak
    return batch.pk


def drain_pending() -> int:
    """Apply every batch waiting now (tests, `awp_drain --once`); how many were settled."""
    settled = 0
    while drain_one() is not None:
        settled += 1
    return settled


def _apply(batch: AcceptedBatch, body: bytes) -> dict[str, Any]:
    """The batch through the one ingest path, as a synchronous push of it would go; ApiError as that push's refusal."""
    from experiments.api import append_batch  # the router module (and ninja) only once a batch is applied

    value = parse_json_body(body)
    events = value.get("events") if type(value) is dict else None
    if type(events) is not list:  # the edge's parser read a duplicated key the other way: refuse, never guess
        raise ApiError(422, "invalid_request", "The batch's events are not a list.", field="events")
    # The run the receipt names (the edge's reading, should the body repeat a key).
    return append_batch(batch.experiment, batch.run_id, events)


def forget_old_receipts() -> int:
    """Delete receipts settled more than RECEIPT_DAYS ago."""
    cutoff = timezone.now() - timedelta(days=RECEIPT_DAYS)
    deleted, _ = AcceptedBatch.objects.filter(settled_at__lt=cutoff).exclude(state=AcceptedBatch.PENDING).delete()
    return deleted


DRAINER_NICE = 10
APPLICATION_NAME = "awp ingest drainer"


def _yield_to_requests() -> None:
    """Run this thread at a lower CPU priority: on a busy machine the requests (accepts, pages, sockets) go first
    and the drainer takes the time they leave, as a background job should. Linux sets it per thread."""
    _lower_priority(threading.get_native_id())


def _lower_priority(pid: int) -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, pid, DRAINER_NICE)
    except (AttributeError, OSError):
        pass  # another system, or not allowed: it runs at the priority it had


def _own_connection() -> None:
    """This thread's database connection as its own, outside the requests' pool: the drainer keeps it, so its
    server process can be lowered as the thread is (`_yield_backend`) without a request ever inheriting it."""
    connection.close()  # one this thread took from the pool before (awp_drain's checks) goes back to it
    options = {name: value for name, value in connection.settings_dict["OPTIONS"].items() if name != "pool"}
    options["application_name"] = APPLICATION_NAME  # pg_stat_activity names it
    connection.settings_dict = {**connection.settings_dict, "OPTIONS": options}


def _yield_backend(reniced: int | None) -> int | None:
    """Lower the CPU priority of this thread's Postgres server process, when that process runs on this machine
    (a Unix socket or a loopback address, and the pid is a postgres process here): half an apply's CPU is the
    server's (the ledger's COPY, the projections' statements), and a background job's half should yield to the
    requests' as its Python half does. The pid of the backend last lowered comes back, so a reconnect is lowered
    once too."""
    connection.ensure_connection()
    pid = connection.connection.info.backend_pid
    if pid == reniced:
        return reniced
    host = connection.settings_dict.get("HOST") or ""
    if host and not host.startswith("/") and host not in {"localhost", "127.0.0.1", "::1"}:
        return pid  # another machine's process: not ours to touch
    try:
        if not psutil.Process(pid).name().startswith("postgres"):
            return pid  # a server in another pid namespace (a container): this pid is not it
    except psutil.Error:
        return pid
    _lower_priority(pid)
    return pid


class Drainer:
    """Drain the inbox until `stop` is set: at once when an accept notifies, and every `poll` seconds anyway.

    Holds DRAINER_LOCK (shared) on its listening connection while it runs, so accepts know it is there."""

    def __init__(self, *, poll: float = 1.0) -> None:
        self.poll = poll

    def run(self, stop: threading.Event) -> None:
        _yield_to_requests()
        _own_connection()
        listener: psycopg.Connection[Any] | None = None
        reniced: int | None = None
        swept = 0.0
        while not stop.is_set():
            try:
                if listener is None or listener.closed:
                    listener = self._listen()
                reniced = _yield_backend(reniced)
                while not stop.is_set() and drain_one() is not None:
                    pass
                now = timezone.now().timestamp()
                if now - swept > 3600:
                    forget_old_receipts()
                    swept = now
                for _notice in listener.notifies(timeout=self.poll, stop_after=1):
                    pass
            except (DatabaseError, psycopg.Error) as exc:
                log.warning("ingest drainer: the database is unavailable (%s); retrying", type(exc).__name__)
                connection.close()
                if listener is not None:
                    listener.close()
                listener = None
                stop.wait(self.poll)
        if listener is not None:
            listener.close()
        connection.close()  # this thread's own

    def _listen(self) -> psycopg.Connection[Any]:
        params = {**dedicated_params(), "application_name": f"{APPLICATION_NAME} (listens)"}
        listener = psycopg.connect(**params, autocommit=True)
        listener.execute("SELECT pg_advisory_lock_shared(%s, %s)", DRAINER_LOCK)
        listener.execute(f"LISTEN {CHANNEL}")
        return listener
