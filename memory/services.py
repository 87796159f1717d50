"""Use cases of the working, episodic and notes tiers, memory writes by agents, and the access audit."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any

from django.db import transaction
from django.utils import timezone

from awp_site.bulk import insert_rows
from experiments.models import Event, Experiment, Run
from memory.access import TARGET_TIER, access_level, allows
from memory.chunks import upsert_chunk
from memory.longterm import current_long_term, write_long_term_version
from memory.models import AccessAudit, MemoryChunk, MemoryDocument, MemoryEntry, Note
from memory.working import archive_cutoff, day_of_path, parse_daily_log, retention_days, summarize_result
from state.services_redaction import redact_for


class MemoryDenied(Exception):
    """An agent asked for something its memory.access_control does not allow (already audited)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Actor:
    """Who touches memory: an agent id (from the request or the token), and the user/token behind it."""

    agent_id: str
    user: Any = None
    token: Any = None


def _entry_moment(day: date, at: time | None) -> datetime:
    return datetime.combine(day, at or time(0, 0), tzinfo=UTC)


def _is_archived(experiment: Experiment, day: date) -> bool:
    return day < archive_cutoff(timezone.now().date(), retention_days(experiment.memory_config))


@transaction.atomic
def append_daily_entry(
    *,
    experiment: Experiment,
    content: str,
    day: date,
    dedupe_key: str,
    at: time | None = None,
    agent_id: str = "",
    confidence: float | None = None,
    run: Run | None = None,
    source: str = MemoryEntry.Source.API,
    source_ref: str = "",
) -> tuple[MemoryEntry, bool]:
    """Append one working-memory entry (a replay of the same dedupe_key returns the existing one)."""
    entry, created = MemoryEntry.objects.get_or_create(
        experiment=experiment,
        dedupe_key=dedupe_key,
        defaults={
            "content": content, "day": day, "time": at, "agent_id": agent_id, "confidence": confidence,
            "run": run, "source": source, "source_ref": source_ref or f"workspace/memory/{day.isoformat()}.md",
            "is_archived": _is_archived(experiment, day),
        },
    )  # fmt: skip
    if created:
        upsert_chunk(
            experiment=experiment,
            tier=MemoryChunk.Tier.WORKING,
            ref_key=f"entry:{entry.pk}",
            source=entry.source_ref,
            content=content,
            agent_id=agent_id,
            occurred_at=_entry_moment(day, at),
            is_archived=entry.is_archived,
        )
    return entry, created


@transaction.atomic
def import_daily_file(*, experiment: Experiment, relpath: str, content: str, run: Run | None = None) -> int:
    """Import a workspace daily log; entries already imported are skipped. Returns how many were new."""
    day = day_of_path(relpath)
    if day is None:
        raise ValueError(f"{relpath} is not named YYYY-MM-DD.md.")
    added = 0
    for parsed in parse_daily_log(content):
        _, created = append_daily_entry(
            experiment=experiment, content=parsed.content, day=day, at=parsed.time, agent_id=parsed.agent_id,
            confidence=parsed.confidence, run=run, source=MemoryEntry.Source.IMPORT, source_ref=relpath,
            dedupe_key=parsed.dedupe_key(relpath),
        )  # fmt: skip
        added += created
    return added


@transaction.atomic
def log_worker_result(*, run: Run, event: Event) -> MemoryEntry | None:
    """Auto-log a worker.complete result to the working tier and index it as an episodic memory."""
    payload = redact_for(run.experiment, event.payload if isinstance(event.payload, dict) else {})
    summary = summarize_result(payload)
    if not summary:
        return None
    moment = event.occurred_at or event.recorded_at
    agent_id = event.agent_id or str(payload.get("worker_id") or "")
    confidence = payload.get("confidence")
    confidence = float(confidence) if isinstance(confidence, int | float) and 0 <= confidence <= 1 else None
    entry, _ = append_daily_entry(
        experiment=run.experiment, content=summary, day=moment.astimezone(UTC).date(),
        at=moment.astimezone(UTC).time().replace(microsecond=0), agent_id=agent_id, confidence=confidence,
        run=run, source=MemoryEntry.Source.AUTO, source_ref=f"run {run.run_id} #{event.seq}",
        dedupe_key=f"event:{run.pk}:{event.seq}",
    )  # fmt: skip
    upsert_chunk(
        experiment=run.experiment,
        tier=MemoryChunk.Tier.EPISODIC,
        ref_key=f"ev:{run.pk}:{event.seq}",
        source=f"run {run.run_id} · iteration {event.iteration if event.iteration is not None else '–'} · {agent_id}",
        content=summary,
        agent_id=agent_id,
        occurred_at=moment,
    )
    return entry


def log_worker_results(*, run: Run, events: list[Event]) -> None:
    """log_worker_result for a batch of worker.complete events, with a constant number of queries.

    The same rows as calling log_worker_result on each event in order. That order matters only when a summary
    teaches a new known secret (upsert_chunk learns from every text it stores), which must then mask the later
    events of the batch; so the summaries are learnt from first, inside a savepoint, and if that taught anything
    the savepoint is rolled back and the batch goes one event at a time.
    """
    from state.secrets import known_secrets_for, learn_from_text
    from state.services_redaction import redactor_for

    experiment = run.experiment
    before = known_secrets_for(experiment.pk)
    redactor = redactor_for(experiment)
    planned: list[tuple[Event, dict[str, Any], str]] = []
    for event in events:
        payload = redactor.value(event.payload if isinstance(event.payload, dict) else {})
        summary = summarize_result(payload)
        if summary:
            planned.append((event, payload, summary))
    if not planned:
        return
    savepoint = transaction.savepoint()
    for _, _, summary in planned:
        learn_from_text(experiment=experiment, text=summary)
    if known_secrets_for(experiment.pk) is not before:
        transaction.savepoint_rollback(savepoint)
        for event in events:
            log_worker_result(run=run, event=event)
        return
    transaction.savepoint_commit(savepoint)
    entries: dict[str, MemoryEntry] = {}
    chunks: list[dict[str, Any]] = []
    for event, payload, summary in planned:
        moment = event.occurred_at or event.recorded_at
        agent_id = event.agent_id or str(payload.get("worker_id") or "")
        confidence = payload.get("confidence")
        confidence = float(confidence) if isinstance(confidence, int | float) and 0 <= confidence <= 1 else None
        day, at = moment.astimezone(UTC).date(), moment.astimezone(UTC).time().replace(microsecond=0)
        key = f"event:{run.pk}:{event.seq}"
        entries.setdefault(key, MemoryEntry(
            experiment=experiment, dedupe_key=key, content=summary, day=day, time=at, agent_id=agent_id,
            confidence=confidence, run=run, source=MemoryEntry.Source.AUTO, source_ref=f"run {run.run_id} #{event.seq}",
            is_archived=_is_archived(experiment, day),
        ))  # fmt: skip
        chunks.append({
            "tier": MemoryChunk.Tier.EPISODIC, "ref_key": f"ev:{run.pk}:{event.seq}",
            "source": f"run {run.run_id} · iteration {event.iteration if event.iteration is not None else '–'} · {agent_id}",
            "content": summary, "agent_id": agent_id, "occurred_at": moment, "is_archived": False, "entry": key,
        })  # fmt: skip
    existing = set(MemoryEntry.objects.filter(experiment=experiment, dedupe_key__in=list(entries)).values_list("dedupe_key", flat=True))
    # Under the run's lock no one else writes entries keyed by this run's seqs: every pk comes back.
    fresh_entries = [e for k, e in entries.items() if k not in existing]
    insert_rows(fresh_entries, returning="id")
    created = {entry.dedupe_key: entry for entry in fresh_entries}
    ordered: list[dict[str, Any]] = []
    for chunk in chunks:
        entry = created.pop(chunk.pop("entry"), None)
        if entry is not None:  # append_daily_entry's chunk, before the episodic one (as the one-by-one path writes them)
            ordered.append({
                "tier": MemoryChunk.Tier.WORKING, "ref_key": f"entry:{entry.pk}", "source": entry.source_ref, "content": entry.content,
                "agent_id": entry.agent_id, "occurred_at": _entry_moment(entry.day, entry.time), "is_archived": entry.is_archived,
            })  # fmt: skip
        ordered.append(chunk)
    _upsert_chunks(experiment, ordered, redactor_for(experiment))


def _upsert_chunks(experiment: Experiment, chunks: list[dict[str, Any]], redactor: Any) -> None:
    """upsert_chunk for many chunks (texts already learnt from): one read, one bulk insert, a save per changed one."""
    by_key: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        by_key[chunk["ref_key"]] = {**chunk, "content": redactor.text(chunk["content"])}
    stored = {chunk.ref_key: chunk for chunk in MemoryChunk.objects.filter(experiment=experiment, ref_key__in=list(by_key))}
    fresh = []
    for key, fields in by_key.items():
        chunk = stored.get(key)
        if chunk is None:
            fresh.append(MemoryChunk(experiment=experiment, **fields))
            continue
        changed = chunk.content != fields["content"]
        for name, value in fields.items():
            setattr(chunk, name, value)
        if changed:
            chunk.embedding, chunk.model_name, chunk.embedded_at = None, "", None
        chunk.save()
    insert_rows(fresh)


@transaction.atomic
def archive_old_entries(*, experiment: Experiment, today: date | None = None) -> int:
    """Archive working entries older than the retention window (kept, hidden by default). Returns the count."""
    cutoff = archive_cutoff(today or timezone.now().date(), retention_days(experiment.memory_config))
    old = MemoryEntry.objects.filter(experiment=experiment, day__lt=cutoff, is_archived=False)
    ids = list(old.values_list("pk", flat=True))
    old.update(is_archived=True)
    MemoryChunk.objects.filter(experiment=experiment, ref_key__in=[f"entry:{pk}" for pk in ids]).update(is_archived=True)
    return len(ids)


def record_audit(
    *, experiment: Experiment, actor: Actor, tier: str, action: str, allowed: bool, detail: str = ""
) -> AccessAudit:
    """One audit row (kept even when the surrounding request fails: callers write it outside their atomic block)."""
    return AccessAudit.objects.create(
        experiment=experiment, agent_id=actor.agent_id[:200], tier=tier, action=action, allowed=allowed,
        detail=detail[:500], user=actor.user if getattr(actor.user, "is_authenticated", False) else None,
        token=actor.token,
    )  # fmt: skip


def check_access(*, experiment: Experiment, actor: Actor, tier: str, action: str) -> None:
    """Raise MemoryDenied (and audit the denial) unless memory.access_control allows `action` on `tier`."""
    level = access_level(experiment.memory_config, actor.agent_id, tier)
    if allows(level, action):
        return
    message = f"Agent '{actor.agent_id}' has '{level}' access to the {tier} tier and may not {action} it."
    record_audit(experiment=experiment, actor=actor, tier=tier, action=action, allowed=False, detail=message)
    raise MemoryDenied(message)


def write_memory(
    *, experiment: Experiment, actor: Actor, target: str, content: str, run: Run | None = None, when: datetime | None = None
) -> dict[str, Any]:
    """memory.write: append to today's daily log or add a MEMORY.md version; access-checked and audited."""
    tier = TARGET_TIER[target]
    check_access(experiment=experiment, actor=actor, tier=tier, action="write")
    moment = (when or timezone.now()).astimezone(UTC)
    with transaction.atomic():
        if target == "long_term":
            current = current_long_term(experiment)
            base = current.content if current else ""
            # As the runtime does: long_term writes append the content on a line of its own.
            document = write_long_term_version(
                experiment=experiment, content=f"{base}\n{content}\n" if base else f"{content}\n",
                reason=f"memory.write by {actor.agent_id}", source=MemoryDocument.Source.AGENT,
                author=actor.user, author_label=actor.agent_id,
            )  # fmt: skip
            result: dict[str, Any] = {"target": "long_term", "path": "workspace/MEMORY.md", "version": document.version}
        else:
            day = moment.date()
            entry, _ = append_daily_entry(
                experiment=experiment, content=content, day=day, at=moment.time().replace(microsecond=0),
                agent_id=actor.agent_id, run=run, source=MemoryEntry.Source.API,
                dedupe_key=f"write:{uuid.uuid4().hex}",
            )  # fmt: skip
            result = {"target": "daily", "date": day.isoformat(), "path": entry.source_ref}
        record_audit(experiment=experiment, actor=actor, tier=tier, action="write", allowed=True, detail=content[:200])
    return result


@transaction.atomic
def save_note(*, experiment: Experiment, author: Any, kind: str, content: str, note: Note | None = None) -> Note:
    """Create a note, or edit one (only its author may); the note is indexed for search."""
    if note is None:
        note = Note.objects.create(experiment=experiment, author=author, kind=kind, content=content)
    else:
        if not note.is_editable_by(author):
            raise PermissionError("Only the author of a note edits it.")
        note.kind, note.content = kind, content
        note.save()
    upsert_chunk(
        experiment=experiment, tier=MemoryChunk.Tier.NOTES, ref_key=f"note:{note.pk}",
        source=f"note #{note.pk} ({note.kind}) by {author.get_username()}", content=content,
        agent_id=author.get_username(), occurred_at=note.created_at,
    )  # fmt: skip
    return note
