"""The one ingest path: append events to a run's ledger with gap-free seqs, project them, announce the head.

Both sources (the AWP folder watcher/importer and the HTTP push API) end here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction
from django.db.models.base import ModelState
from django.utils import timezone

from awp_site.live import announce_run_advanced
from experiments.awp.events import EventSpec
from experiments.jsonb import PayloadNotStorable, payload_json
from experiments.models import Event, Run
from experiments.projections import IngestRefused, ProjectionContext, project

# One event type from the folder readers to the ledger: EventSpec is pure (no Django), so the readers can build it.
EventIn = EventSpec


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
        return _append_locked(run, events, ctx or ProjectionContext())


def _append_locked(run: Run, events: list[EventIn], ctx: ProjectionContext) -> AppendResult:
    if not events:
        return AppendResult(seqs=[], new_events=[])
    # The run row lock serialises writers of one run, so seqs stay gap-free and never collide.
    head = Run.objects.select_for_update().values_list("last_seq", flat=True).get(pk=run.pk)
    existing = _existing_seqs(run.pk, list({event.dedupe_key for event in events}))
    now = timezone.now()
    fresh: list[Event] = []
    seqs: list[int] = []
    seen: dict[str, int] = dict(existing)
    for event in events:
        if event.dedupe_key in seen:
            seqs.append(seen[event.dedupe_key])
            continue
        head += 1
        seen[event.dedupe_key] = head
        seqs.append(head)
        payload, data = _storable(event, ctx)
        fresh.append(
            _event_row(
                run_id=run.pk,
                seq=head,
                kind=event.kind,
                agent_id=event.agent_id,
                iteration=event.iteration,
                depth=event.depth,
                occurred_at=event.occurred_at,
                recorded_at=now,
                payload=payload,
                dedupe_key=event.dedupe_key,
                ts_source=event.ts_source,
                _payload_json=data,
            )
        )
    if fresh:
        _bulk_insert(fresh)
        Run.objects.filter(pk=run.pk).update(last_seq=head, updated_at=now)
        run.last_seq = head
        project(run, fresh, ctx)
        experiment_id, run_pk = run.experiment_id, run.pk
        transaction.on_commit(lambda: announce_run_advanced(run_id=run_pk, experiment_id=experiment_id, seq=head))
    return AppendResult(seqs=seqs, new_events=fresh)


def _storable(event: EventIn, ctx: ProjectionContext) -> tuple[dict[str, Any], bytes]:
    """The payload and its jsonb text; an unstorable payload is refused (pushed) or kept as a marked repr (disk)."""
    if event.payload_bytes is not None:
        return event.payload, event.payload_bytes
    try:
        return event.payload, payload_json(event.payload)
    except PayloadNotStorable as exc:
        if ctx.strict:
            raise IngestRefused("invalid_payload", str(exc), dedupe_key=event.dedupe_key) from None
        kept = {"_unstorable": str(exc), "repr": repr(event.payload)[:20000]}
        return kept, payload_json(kept)


def _event_row(**fields: Any) -> Event:
    """An Event instance as if loaded from the database, without Model.__init__'s per-field work (hot path)."""
    row = Event.__new__(Event)
    row.__dict__.update(fields, id=None)
    row._state = ModelState()
    row._state.adding, row._state.db = False, "default"
    return row


def _existing_seqs(run_pk: int, keys: list[str]) -> dict[str, int]:
    """Seqs already stored for these dedupe keys (one array parameter: cheap even for 5,000 keys)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT dedupe_key, seq FROM experiments_event WHERE run_id = %s AND dedupe_key = ANY(%s)", [run_pk, keys]
        )
        return dict(cursor.fetchall())


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
NULL = b"\\N"


def _copy_text(value: str) -> bytes:
    return value.translate(_COPY_ESCAPES).encode()


def _bulk_insert(rows: list[Event]) -> None:
    """Insert ledger rows with one COPY in text format, built here (the fastest path Postgres has).

    Rows are already deduplicated under the run lock. JSON text has no raw tabs or newlines, so a payload only
    needs its backslashes doubled for COPY's text format.
    """
    lines = []
    for row in rows:
        occurred = row.occurred_at.isoformat().encode() if row.occurred_at else NULL
        iteration = str(row.iteration).encode() if row.iteration is not None else NULL
        payload = row.__dict__.pop("_payload_json")
        lines.append(
            b"\t".join(
                (
                    str(row.run_id).encode(),
                    str(row.seq).encode(),
                    _copy_text(row.kind),
                    _copy_text(row.agent_id),
                    iteration,
                    str(row.depth).encode(),
                    occurred,
                    row.recorded_at.isoformat().encode(),
                    payload.replace(b"\\", b"\\\\"),
                    _copy_text(row.dedupe_key),
                    row.ts_source.encode(),
                )
            )
        )
    columns = "run_id, seq, kind, agent_id, iteration, depth, occurred_at, recorded_at, payload, dedupe_key, ts_source"
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY experiments_event ({columns}) FROM STDIN") as copy:
            copy.write(b"\n".join(lines) + b"\n")
