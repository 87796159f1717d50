"""The one ingest path: append events to a run's ledger with gap-free seqs, project them, announce the head.

Both sources (the AWP folder watcher/importer and the HTTP push API) end here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models.base import ModelState
from django.utils import timezone

from awp_site.live import announce_run_advanced
from experiments.models import Event, Run
from experiments.projections import ProjectionContext, project


@dataclass(frozen=True)
class EventIn:
    """One event to append; `dedupe_key` makes a replay a no-op (blackboard id, digest sha, file+offset, client key)."""

    kind: str
    dedupe_key: str
    payload: dict[str, Any] = field(default_factory=dict)
    agent_id: str = ""
    iteration: int | None = None
    depth: int = 0
    occurred_at: datetime | None = None


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
    keys = [event.dedupe_key for event in events]
    existing = dict(Event.objects.filter(run_id=run.pk, dedupe_key__in=set(keys)).values_list("dedupe_key", "seq"))
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
                payload=event.payload,
                dedupe_key=event.dedupe_key,
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


def _event_row(**fields: Any) -> Event:
    """An Event instance as if loaded from the database, without Model.__init__'s per-field work (hot path)."""
    row = Event.__new__(Event)
    row.__dict__.update(fields, id=None)
    row._state = ModelState()
    row._state.adding, row._state.db = False, "default"
    return row


def _bulk_insert(rows: list[Event]) -> None:
    """Insert ledger rows with COPY (the fastest path Postgres has; rows are already deduplicated under the lock)."""
    columns = ["run_id", "seq", "kind", "agent_id", "iteration", "depth", "occurred_at", "recorded_at", "payload", "dedupe_key"]
    with connection.cursor() as cursor:
        raw = cursor.cursor  # psycopg 3 cursor under Django's wrapper
        with raw.copy(f"COPY experiments_event ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(
                    (
                        row.run_id,
                        row.seq,
                        row.kind,
                        row.agent_id,
                        row.iteration,
                        row.depth,
                        row.occurred_at,
                        row.recorded_at,
                        json.dumps(row.payload, ensure_ascii=False),
                        row.dedupe_key,
                    )
                )
