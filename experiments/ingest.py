"""The one ingest path: append events to a run's ledger with gap-free seqs, project them, announce the head.

Both sources (the AWP folder watcher/importer and the HTTP push API) end here.

Set-based: one lookup of the batch's dedupe keys (one array parameter), one COPY of the new rows, one UPDATE
of the run's head, and each projector called once with its events. Per event there is only the Python that
builds the COPY line and the in-memory Event the projectors read, both in the same pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from django.db import connection, transaction
from django.db.models.base import ModelState
from django.utils import timezone

from awp_site.live import announce_run_advanced, run_advanced_expression, run_advanced_statement
from experiments.awp.events import EventSpec
from experiments.jsonb import PayloadNotStorable, holds_non_finite, payload_json
from experiments.models import Event, Experiment, Run, from_row
from experiments.projections import IngestRefused, ProjectionContext, prepare, project

# One event type from the folder readers to the ledger: EventSpec is pure (no Django), so the readers can build it.
EventIn = EventSpec

# The ledger columns ingest writes, in COPY order; `_copy_line` emits one field per name, in this order.
LEDGER_COLUMNS = ("run_id", "seq", "kind", "agent_id", "iteration", "depth", "occurred_at", "recorded_at", "payload", "dedupe_key", "ts_source")


@dataclass
class AppendResult:
    """Seqs for every input event in input order (existing seq for a duplicate), and which were new."""

    seqs: list[int]
    new_events: list[Event]

    @property
    def new_count(self) -> int:
        return len(self.new_events)


def append_events(run: Run, events: list[EventIn], *, ctx: ProjectionContext | None = None) -> AppendResult:
    """Append `events` to `run`'s ledger in the caller's transaction (or one of its own).

    Projectors may raise IngestRefused (strict mode): the whole append rolls back.
    """
    with transaction.atomic():
        if events:
            # The run row lock serialises writers of one run, so seqs stay gap-free and never collide.
            with connection.cursor() as cursor:
                cursor.execute("SELECT last_seq FROM experiments_run WHERE id = %s FOR UPDATE", [run.pk])
                run.last_seq = cursor.fetchone()[0]
        return append_locked(run, events, ctx=ctx or ProjectionContext())


def lock_run(experiment_id: int, run_id: str) -> Run | None:
    """The run `run_id` of an experiment, its row locked for this transaction (None when there is none)."""
    # Raw SQL: the ORM's query compilation costs more than the query on the one-event push path.
    fields = Run._meta.concrete_fields
    columns = ", ".join(f'"{field.column}"' for field in fields)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM experiments_run WHERE experiment_id = %s AND run_id = %s FOR UPDATE", [experiment_id, run_id])
        row = cursor.fetchone()
    return None if row is None else from_row(Run, fields, row)


def push_one(experiment: Experiment, run_id: str, event: EventIn, *, ctx: ProjectionContext) -> tuple[Run, AppendResult] | None:
    """The one-event push in one statement: lock the run, dedupe, insert, move the head and announce it.

    Runs in the caller's transaction, which then projects the event and commits (the API's one transaction). None
    when the run does not exist yet or the layer is not Postgres NOTIFY: the caller takes the general path.
    The statement's snapshot may miss a duplicate committed by a writer it waited for on the run lock; the unique
    (run, dedupe key) index catches that one (ON CONFLICT DO NOTHING) and a second read returns its seq.
    """
    assert connection.in_atomic_block, "push_one runs inside the transaction that projects and commits"
    notify = run_advanced_expression(run_sql="r.id", seq_sql="ins.seq", experiment_id=experiment.pk)
    if notify is None:
        return None
    payload, data = _storable(event, ctx)
    now = timezone.now()
    fields = Run._meta.concrete_fields
    columns = ", ".join(f'r."{field.column}"' for field in fields)
    notify_sql, notify_params = notify
    sql = f"""
        WITH r AS (SELECT * FROM experiments_run WHERE experiment_id = %s AND run_id = %s FOR UPDATE),
        dup AS (SELECT e.seq FROM experiments_event e JOIN r ON e.run_id = r.id WHERE e.dedupe_key = %s),
        ins AS (
            INSERT INTO experiments_event ({", ".join(LEDGER_COLUMNS)})
            SELECT r.id, r.last_seq + 1, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s FROM r WHERE NOT EXISTS (SELECT 1 FROM dup)
            ON CONFLICT (run_id, dedupe_key) DO NOTHING
            RETURNING seq
        ),
        head AS (UPDATE experiments_run SET last_seq = ins.seq, updated_at = %s FROM ins, r WHERE experiments_run.id = r.id)
        SELECT {columns}, (SELECT seq FROM dup), (SELECT seq FROM ins), (SELECT {notify_sql} FROM ins) FROM r
    """
    params = [
        experiment.pk, run_id, event.dedupe_key,
        event.kind, event.agent_id, event.iteration, event.depth, event.occurred_at, now, data.decode(), event.dedupe_key, event.ts_source,
        now, *notify_params,
    ]  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run: Run = from_row(Run, fields, row[: len(fields)])
    run.experiment = experiment
    known, seq = row[len(fields)], row[len(fields) + 1]
    if seq is None:
        if known is None:  # a concurrent writer stored it while this statement waited for the run lock
            known = _existing_seqs(run.pk, [event.dedupe_key])[event.dedupe_key]
        return run, AppendResult(seqs=[known], new_events=[])
    run.last_seq, run.updated_at = seq, now
    fresh = _event_row(run.pk, seq, event, payload, now)
    fresh.stored_json = data
    project(run, [fresh], ctx)
    return run, AppendResult(seqs=[seq], new_events=[fresh])


def append_locked(run: Run, events: list[EventIn], *, ctx: ProjectionContext) -> AppendResult:
    """append_events for a caller that holds the run's row lock in its open transaction (run.last_seq is current)."""
    if not events:
        return AppendResult(seqs=[], new_events=[])
    assert connection.in_atomic_block, "append_locked runs inside the transaction that locked the run"
    head = run.last_seq
    seen = _existing_seqs(run.pk, list({event.dedupe_key for event in events}))
    now = timezone.now()
    fresh: list[Event] = []
    payloads: list[bytes] = []
    seqs: list[int] = []
    for event in events:
        known = seen.get(event.dedupe_key)
        if known is not None:
            seqs.append(known)
            continue
        head += 1
        seen[event.dedupe_key] = head
        seqs.append(head)
        payload, data = _storable(event, ctx)
        row = _event_row(run.pk, head, event, payload, now)
        # The payload as payload_json serialised it (the validator's bytes or _storable's): projectors that read its
        # text need not serialise it again.
        row.stored_json = data
        fresh.append(row)
        payloads.append(data)
    if fresh:
        _write(run, fresh, payloads, head, now, during=prepare(run, fresh, ctx))
        run.last_seq = head
        project(run, fresh, ctx)  # after the write: projectors may read the ledger
    return AppendResult(seqs=seqs, new_events=fresh)


SMALL_BATCH = 20  # rows up to which one INSERT … VALUES beats COPY (COPY costs an extra round trip)


COPY_CHUNK = 1000  # rows per write of a COPY: Postgres stores one chunk while the next is built


def _write(run: Run, fresh: list[Event], payloads: list[bytes], head: int, now: Any, *, during: Callable[[], None]) -> None:
    """The new ledger rows, the run's new head and its announcement, in as few round trips as possible.

    Small batches (the one-event push) go as one statement: INSERT and UPDATE as data-modifying CTEs, the
    NOTIFY (delivered at commit) as its SELECT. Large batches COPY first, then the same statement without
    the INSERT. With a layer other than Postgres NOTIFY, the announcement waits for on_commit. `during`: pure
    work (no query) done while Postgres takes a COPY's rows, on the other core.
    """
    notify = run_advanced_statement(run_id=run.pk, experiment_id=run.experiment_id, seq=head)
    columns = ", ".join(LEDGER_COLUMNS)
    ctes: list[str] = []
    params: list[Any] = []
    with connection.cursor() as cursor:
        if len(fresh) <= SMALL_BATCH:
            during()
            row_sql = "(" + ", ".join("%s::jsonb" if column == "payload" else "%s" for column in LEDGER_COLUMNS) + ")"
            ctes.append(f"ledger AS (INSERT INTO experiments_event ({columns}) VALUES {', '.join([row_sql] * len(fresh))})")
            params += [value for row, payload in zip(fresh, payloads, strict=True) for value in _insert_values(row, payload)]
        else:
            recorded, run_field = now.isoformat().encode(), str(run.pk).encode()
            with cursor.cursor.copy(f"COPY experiments_event ({columns}) FROM STDIN") as copy:
                for at in range(0, len(fresh), COPY_CHUNK):
                    rows = zip(fresh[at : at + COPY_CHUNK], payloads[at : at + COPY_CHUNK], strict=True)
                    copy.write(b"".join(_copy_line(run_field, row, recorded, payload) + b"\n" for row, payload in rows))
                during()  # leaving the block waits for Postgres to take the last rows
        ctes.append("head AS (UPDATE experiments_run SET last_seq = %s, updated_at = %s WHERE id = %s)")
        params += [head, now, run.pk]
        final, final_params = notify if notify is not None else ("SELECT 1", [])
        # Data-modifying CTEs always run, whatever the final SELECT reads.
        cursor.execute(f"WITH {', '.join(ctes)} {final}", params + final_params)
    if notify is None:
        experiment_id, run_pk = run.experiment_id, run.pk
        transaction.on_commit(lambda: announce_run_advanced(run_id=run_pk, experiment_id=experiment_id, seq=head))


def _insert_values(row: Event, payload: bytes) -> list[Any]:
    """One row's values in LEDGER_COLUMNS order, for the INSERT of a small batch."""
    return [row.run_id, row.seq, row.kind, row.agent_id, row.iteration, row.depth, row.occurred_at, row.recorded_at, payload.decode(), row.dedupe_key, row.ts_source]


def _storable(event: EventIn, ctx: ProjectionContext) -> tuple[dict[str, Any], bytes]:
    """The payload and its jsonb text; an unstorable payload is refused (pushed) or kept as a marked repr (disk).

    The projectors read the payload returned here, so it is always the one the ledger holds: a NaN or an infinity
    (which jsonb cannot hold, and orjson writes as null) is refused when pushed and read back as null from disk,
    as a rebuild from the ledger would read it.
    """
    if event.payload_bytes is not None:
        return event.payload, event.payload_bytes
    try:
        data = payload_json(event.payload)
    except PayloadNotStorable as exc:
        if ctx.strict:
            raise IngestRefused("invalid_payload", str(exc), dedupe_key=event.dedupe_key) from None
        kept = {"_unstorable": str(exc), "repr": repr(event.payload)[:20000]}
        return kept, payload_json(kept)
    if b"null" in data and holds_non_finite(event.payload):
        if ctx.strict:
            message = "the payload holds NaN or Infinity, which JSON cannot carry; send a finite number or null"
            raise IngestRefused("non_finite_number", message, dedupe_key=event.dedupe_key)
        return orjson.loads(data), data
    return event.payload, data


def _event_row(run_pk: int, seq: int, event: EventIn, payload: dict[str, Any], now: Any) -> Event:
    """An Event instance as if loaded from the database, without Model.__init__'s per-field work (hot path)."""
    row = Event.__new__(Event)
    row.__dict__.update(
        id=None, run_id=run_pk, seq=seq, kind=event.kind, agent_id=event.agent_id, iteration=event.iteration,
        depth=event.depth, occurred_at=event.occurred_at, recorded_at=now, payload=payload, dedupe_key=event.dedupe_key,
        ts_source=event.ts_source,
    )  # fmt: skip
    row._state = ModelState()
    row._state.adding, row._state.db = False, "default"
    return row


def _existing_seqs(run_pk: int, keys: list[str]) -> dict[str, int]:
    """Seqs already stored for these dedupe keys (one array parameter: cheap even for 5,000 keys)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT dedupe_key, seq FROM experiments_event WHERE run_id = %s AND dedupe_key = ANY(%s)", [run_pk, keys])
        return dict(cursor.fetchall())


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NEEDS_ESCAPE = frozenset("\\\t\n\r")
NULL = b"\\N"


def _copy_text(value: str) -> bytes:
    """A text field for COPY's text format (most values need no escaping: skip the translate then)."""
    if _NEEDS_ESCAPE.isdisjoint(value):
        return value.encode()
    return value.translate(_COPY_ESCAPES).encode()


def _copy_line(run_field: bytes, row: Event, recorded: bytes, payload: bytes) -> bytes:
    """One COPY text-format line in LEDGER_COLUMNS order.

    JSON text has no raw tabs or newlines, so a payload only needs its backslashes doubled.
    """
    return b"\t".join(
        (
            run_field,
            str(row.seq).encode(),
            _copy_text(row.kind),
            _copy_text(row.agent_id),
            NULL if row.iteration is None else str(row.iteration).encode(),
            str(row.depth).encode(),
            NULL if row.occurred_at is None else row.occurred_at.isoformat().encode(),
            recorded,
            payload.replace(b"\\", b"\\\\") if b"\\" in payload else payload,
            _copy_text(row.dedupe_key),
            row.ts_source.encode(),
        )
    )


def lock_or_create_run(experiment_id: int, run_id: str, *, engine: str) -> Run:
    """The run `run_id`, created (by `engine`) when it does not exist yet, its row locked for this transaction."""
    run = lock_run(experiment_id, run_id)
    if run is not None:
        return run
    # Concurrent first batches of one run: the unique constraint picks one row, everyone uses it.
    Run.objects.bulk_create([Run(experiment_id=experiment_id, run_id=run_id, engine=engine)], ignore_conflicts=True)
    run = lock_run(experiment_id, run_id)
    assert run is not None
    return run
