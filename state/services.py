"""State use cases: project ledger events into deltas and snapshots, read state at a seq, history, rebuilds."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from experiments.awp.timing import RECORD, graph_rank
from experiments.models import Event, Run
from experiments.projections import IngestRefused, ProjectionContext
from state.blame import file_changes
from state.config import RUNTIME_KEYS, StateSettings, state_settings
from state.deltas import Delta, DeltaError, IdentityChanged, StateBook, copy_json, delta_from_payload
from state.merge import Resolution, conflict_groups, resolve
from state.models import RuleViolation, Snapshot, StateDelta, StateHead
from state.paths import format_path, has_path, parse_path
from state.replay import DIFF_OPS, Change, state_model, take_snapshots
from state.rounds import DeltaRecord, RoundReport, ViolationRecord, analyse_rounds
from state.services_redaction import redact_for, redact_text_for
from state.sharing import view_for
from state.stable import ABSENT

STATE_EVENT_KINDS = ("state.delta", "state.snapshot", "worker.complete", "run.complete")


def snapshot_every() -> int:
    return max(1, int(getattr(settings, "AWP_SNAPSHOT_EVERY", 1000)))


@dataclass
class _Proposal:
    """A delta extracted from an event (or the error that made it unusable)."""

    event: Event
    index: int
    delta: Delta | None
    error: DeltaError | None = None
    raw_path: str = ""


class _Projection:
    """One batch's worth of state projection for one run."""

    def __init__(self, run: Run, ctx: ProjectionContext) -> None:
        self.run, self.ctx = run, ctx
        self.settings: StateSettings = state_settings(run.experiment.protocol)
        self.head = StateHead.objects.filter(run=run).first() or StateHead(run=run)
        self.book = StateBook(state=self.head.state, round=self.head.round)
        self.rows: list[StateDelta] = []
        self.violations: list[RuleViolation] = []
        self.snapshots: list[Snapshot] = []
        self.since = self.head.since_snapshot
        self.every = snapshot_every()
        self._state_files: list[tuple[int, str, datetime | None]] | None = None

    def state_files(self) -> list[tuple[int, str, datetime | None]]:
        """(seq, agent, own timestamp) of every state file in this run's ledger, this batch's included (cached)."""
        if self._state_files is None:
            rows = Event.objects.filter(run=self.run, kind="state.snapshot").order_by("seq")
            self._state_files = [
                (seq, agent, when if source in ("", RECORD) else None)
                for seq, agent, when, source in rows.values_list("seq", "agent_id", "occurred_at", "ts_source")
            ]
        return self._state_files

    def dag_agents(self) -> frozenset[str]:
        """Agents of this run's DAG: the protocol's graph and every agent that wrote a state file."""
        wrote = {agent for _, agent, _ in self.state_files()} - {"final"}
        return frozenset(graph_rank(self.run.experiment.protocol)) | wrote

    def is_late(self, event: Event) -> bool:
        """Whether a state file older (by its own timestamp) than one applied before it arrived after it."""
        when = event.occurred_at if event.ts_source in ("", RECORD) else None
        return when is not None and any(seq < event.seq and other is not None and other > when for seq, _, other in self.state_files())

    def refuse_or_flag(self, event: Event, error: DeltaError, *, agent_id: str = "", path: str = "") -> None:
        if self.ctx.strict:
            raise IngestRefused(error.code, error.message, dedupe_key=event.dedupe_key)
        self.violations.append(
            RuleViolation(run=self.run, seq=event.seq, rule=error.code, message=error.message, agent_id=agent_id, path=path, source=self.ctx.source)
        )

    def record(self, proposal: _Proposal, outcome: str, *, value: Any = None, applied_value: Any = None, code: str = "") -> None:
        delta = proposal.delta
        assert delta is not None
        self.rows.append(
            StateDelta(
                run=self.run,
                seq=proposal.event.seq,
                index=proposal.index,
                agent_id=delta.agent_id,
                round=delta.round,
                weight=delta.weight,
                op=delta.op,
                path=delta.path,
                value=value,
                applied_value=applied_value,
                provenance=delta.provenance,
                outcome=outcome,
                code=code,
            )
        )

    def apply(self, proposal: _Proposal, delta: Delta) -> tuple[str, Any, str] | None:
        """Evaluate and apply one delta; returns (outcome, written value, code) or None when refused (non-strict)."""
        try:
            decision = self.book.evaluate(delta, self.settings.limits, stable=self.settings.stable_paths, flag_identity=not self.ctx.strict)
        except DeltaError as error:
            self.refuse_or_flag(proposal.event, self.shown(error), agent_id=delta.agent_id, path=delta.path)
            kept = None if error.code == "state_limit" else delta.value
            self.record(proposal, "refused", value=kept, code=error.code)
            return None
        for flag in decision.flags:  # applied as it happened (a run read from disk), flagged on the run
            self.refuse_or_flag(proposal.event, self.shown(flag), agent_id=delta.agent_id, path=delta.path)
        code = "state_limit" if decision.outcome == "clipped" else decision.flags[0].code if decision.flags else ""
        return decision.outcome, decision.value, code

    def shown(self, error: DeltaError) -> DeltaError:
        """The error as it may leave the server: an identity change names its values, redacted."""
        if isinstance(error, IdentityChanged):
            return DeltaError(error.code, identity_message(self.run.experiment, error))
        return error

    def apply_single(self, proposal: _Proposal) -> None:
        assert proposal.delta is not None
        result = self.apply(proposal, proposal.delta)
        if result is not None:
            outcome, value, code = result
            self.record(proposal, outcome, value=value, code=code)

    def apply_group(self, members: list[_Proposal], resolution: Resolution) -> None:
        winner = members[resolution.winner]
        assert winner.delta is not None
        op = "modify" if has_path(self.book.state, winner.delta.segments) else "add"
        written = replace(winner.delta, op=op, value=resolution.value)
        result = self.apply(winner, written)
        for position, member in enumerate(members):
            assert member.delta is not None
            if member is winner:
                if result is not None:
                    outcome, value, code = result
                    merged = value if value != member.delta.value or outcome == "clipped" else None
                    self.rows.append(_winner_row(self.run, member, op, outcome, merged, code))
            else:
                self.record(member, resolution.outcomes[position] if result is not None else "refused", value=member.delta.value)

    def after_event(self, event: Event, *, force: str = "") -> None:
        """Take a snapshot when K deltas have accumulated since the last one (or at run end)."""
        has_state = self.head.delta_count + len(self.rows) > 0
        if has_state and (self.since >= self.every or force) and not any(s.seq == event.seq for s in self.snapshots):
            count = self.head.delta_count + len(self.rows)
            reason = Snapshot.Reason.RUN_END if force else Snapshot.Reason.EVERY
            self.snapshots.append(Snapshot(run=self.run, seq=event.seq, delta_count=count, state=copy_json(self.book.state), reason=reason))
            self.since = 0

    def save(self, last_seq: int) -> None:
        if self.rows:
            StateDelta.objects.bulk_create(self.rows, batch_size=2000)
        if self.violations:
            RuleViolation.objects.bulk_create(self.violations)
        if self.snapshots:
            Snapshot.objects.bulk_create(self.snapshots, ignore_conflicts=True)
        if self.rows or self.snapshots:
            head = self.head
            head.seq = max(head.seq, last_seq)
            head.round, head.state = self.book.round, self.book.state
            head.delta_count += len(self.rows)
            head.since_snapshot = self.since
            head.save()


def identity_message(experiment: Any, error: IdentityChanged) -> str:
    """The 422 / Problems-tab sentence for an identity change: path, old and new value, redacted for everyone."""

    def shown(path: str, value: Any) -> str:
        if value is ABSENT:
            return "(removed)"
        # The delta shape {path, value} lets the redaction step mask a value whose path names a sensitive key.
        return json.dumps(redact_for(experiment, {"path": path, "value": value})["value"], ensure_ascii=False)[:200]

    parts = [f"{change.path} from {shown(change.path, change.old)} to {shown(change.path, change.new)}" for change in error.changes]
    text = f"{error.path} would change an identity (state.stable_paths: set values never change): " + "; ".join(parts) + "."
    return redact_text_for(experiment, text)


def _winner_row(run: Run, proposal: _Proposal, op: str, outcome: str, merged: Any, code: str) -> StateDelta:
    delta = proposal.delta
    assert delta is not None
    return StateDelta(
        run=run,
        seq=proposal.event.seq,
        index=proposal.index,
        agent_id=delta.agent_id,
        round=delta.round,
        weight=delta.weight,
        op=op,
        path=delta.path,
        value=delta.value,
        applied_value=merged,
        provenance=delta.provenance,
        outcome=outcome,
        code=code,
    )


def _pushed(event: Event) -> Iterator[_Proposal]:
    """Deltas of a `state.delta` event: the payload is one delta, or {"deltas": [...]}."""
    payload = event.payload
    items = payload.get("deltas") if isinstance(payload, dict) and isinstance(payload.get("deltas"), list) else [payload]
    for index, item in enumerate(items):
        if isinstance(item, dict) and not item.get("agent_id") and event.agent_id:
            item = {**item, "agent_id": event.agent_id}
        try:
            yield _Proposal(event, index, delta_from_payload(item))
        except DeltaError as error:
            yield _Proposal(event, index, None, error, raw_path=str(item.get("path", "")) if isinstance(item, dict) else "")


def _snapshot_deltas(event: Event, projection: _Projection) -> list[_Proposal]:
    """A DAG state file diffed against the current state: each delta blamed on the agent that made it (state.blame)."""
    book, run = projection.book, projection.run
    payload = event.payload if isinstance(event.payload, dict) else {}
    agent = str(payload.get("agent_id") or event.agent_id or "runtime")
    if agent == "final":
        agent = "runtime"
    state = payload.get("state") if isinstance(payload.get("state"), dict) else {}
    target = {key: value for key, value in state.items() if key not in RUNTIME_KEYS}
    where = payload.get("file") or f"data/state/{run.run_id}/{payload.get('agent_id') or agent}.json"
    round_ = book.round if agent == "runtime" else book.round + 1
    found = file_changes(book.state, target, agent=agent, agents=projection.dag_agents(), late=projection.is_late(event))
    proposals = []
    for index, blamed in enumerate(found.changes):
        entry = blamed.entry
        delta = Delta(agent_id=blamed.agent_id, round=round_, op=DIFF_OPS[entry.op], path=entry.path, provenance=f"state file {where}", value=entry.new)
        proposals.append(_Proposal(event, index, delta))
    for entry in found.dropped:
        message = f"{where} no longer holds {entry.path}, which {agent} never owned; kept, not removed."
        projection.refuse_or_flag(event, DeltaError("snapshot_dropped_key", message), agent_id=agent, path=entry.path)
    return proposals


def _worker_delta(event: Event, book: StateBook) -> list[_Proposal]:
    """shared_dict semantics for delegation loops: the worker's result becomes state[worker_id]."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    worker = event.agent_id or str(payload.get("worker_id") or "")
    if not worker:
        return []
    path = format_path((worker,))
    iteration = event.iteration if event.iteration is not None else book.round
    op = "modify" if worker in book.state else "add"
    where = f"iterations/{iteration:03d}/delegations/{worker}/result.json" if event.iteration is not None else "result.json"
    provenance = f"iteration {iteration}, worker {worker}: result ({where})"
    delta = Delta(agent_id=worker, round=max(iteration, book.round), op=op, path=path, provenance=provenance, value=payload)
    return [_Proposal(event, 0, delta)]


def project_state_events(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """The state projector: turns state.delta, state.snapshot, worker.complete and run.complete into state rows."""
    events = [event for event in events if event.kind in STATE_EVENT_KINDS]
    if not events:
        return
    projection = _Projection(run, ctx)
    pushed = {event.seq: list(_pushed(event)) for event in events if event.kind == "state.delta"}
    valid = [p for proposals in pushed.values() for p in proposals if p.delta is not None]
    groups = conflict_groups([p.delta for p in valid])  # type: ignore[misc]
    group_of: dict[int, list[_Proposal]] = {}
    for indices in groups:
        members = [valid[i] for i in indices]
        for member in members:
            group_of[id(member)] = members
    resolved: set[int] = set()
    for event in events:
        if event.kind == "run.complete":
            projection.after_event(event, force="run_end")
            continue
        before = len(projection.rows)
        if event.kind == "state.delta":
            proposals = pushed[event.seq]
        elif event.kind == "state.snapshot":
            proposals = _snapshot_deltas(event, projection)
        else:
            proposals = _worker_delta(event, projection.book)
        for proposal in proposals:
            _project_one(projection, proposal, group_of, resolved)
        projection.since += len(projection.rows) - before
        projection.after_event(event)
    projection.save(events[-1].seq)


def _project_one(projection: _Projection, proposal: _Proposal, group_of: dict[int, list[_Proposal]], resolved: set[int]) -> None:
    if proposal.delta is None:
        assert proposal.error is not None
        projection.refuse_or_flag(proposal.event, proposal.error, agent_id=proposal.event.agent_id, path=proposal.raw_path)
        return
    members = group_of.get(id(proposal))
    if members is None:
        projection.apply_single(proposal)
        return
    if id(members[0]) in resolved:
        return
    deltas = [m.delta for m in members]
    # Members share one path, so R13 and the limits are checked once, on the winner.
    resolution = resolve(deltas, projection.settings.conflict)  # type: ignore[arg-type]
    if members[resolution.winner] is not proposal:
        return  # the group is written at its winner's position, so replay order equals evaluation order
    resolved.add(id(members[0]))
    projection.apply_group(members, resolution)


# Reading ---------------------------------------------------------------------------------------------


def head_seq(run: Run) -> int:
    """The newest seq of the run's ledger (the state head is the state there)."""
    return int(Run.objects.values_list("last_seq", flat=True).get(pk=run.pk))


def state_at_seq(*, run: Run, seq: int | None = None) -> tuple[int, dict[str, Any]]:
    """(seq, state after every event ≤ seq): the nearest snapshot plus at most K deltas of tail."""
    last = head_seq(run)
    seq = last if seq is None else max(0, min(int(seq), last))
    with connection.cursor() as cursor:
        cursor.execute("SELECT seq, state::text FROM state_statehead WHERE run_id = %s", [run.pk])
        head = cursor.fetchone()
        if head is None:
            return seq, {}
        if seq >= head[0]:
            return seq, json.loads(head[1])
        cursor.execute(
            "SELECT seq, state::text FROM state_snapshot WHERE run_id = %s AND seq <= %s ORDER BY seq DESC LIMIT 1", [run.pk, seq]
        )
        snapshot = cursor.fetchone()
        after, base = (snapshot[0], json.loads(snapshot[1])) if snapshot else (0, {})
        # One JSON array decoded in C instead of a converter call per row and column: the tail is up to K rows.
        cursor.execute(
            """SELECT coalesce(json_agg(json_build_array(seq, index, op, path, coalesce(applied_value, value), agent_id)
                                        ORDER BY seq, index), '[]')::text
               FROM state_statedelta WHERE run_id = %s AND seq > %s AND seq <= %s AND outcome IN ('applied', 'clipped')""",
            [run.pk, after, seq],
        )
        tail = json.loads(cursor.fetchone()[0])
    model = state_model(state_settings(run.experiment.protocol).model)
    return seq, model.replay(base, [Change(*row) for row in tail], owned=True)


def agents_of(run: Run) -> list[str]:
    """Agents that took part in this run (wrote state, or were spawned as workers): the 'as seen by' choices.
    Agents the sharing policy names but that never ran here are not offered: their view would say nothing."""
    # A loose index scan: one index probe per distinct agent instead of reading every delta of a long run.
    with connection.cursor() as cursor:
        cursor.execute(
            """WITH RECURSIVE agents(id) AS (
                   SELECT min(agent_id) FROM state_statedelta WHERE run_id = %s
                   UNION ALL
                   SELECT (SELECT min(agent_id) FROM state_statedelta WHERE run_id = %s AND agent_id > agents.id)
                   FROM agents WHERE agents.id IS NOT NULL)
               SELECT id FROM agents WHERE id IS NOT NULL""",
            [run.pk, run.pk],
        )
        wrote = {row[0] for row in cursor.fetchall()}
    workers = set(run.events.filter(kind__in=["worker.spawn", "worker.complete"]).exclude(agent_id="").values_list("agent_id", flat=True).distinct()[:200])
    return sorted((wrote | workers) - {"runtime", ""})


def output_agents(run: Run) -> set[str]:
    """Ids whose top-level state keys are agent outputs: the run's agents and those the sharing policy names."""
    return set(agents_of(run)) | state_settings(run.experiment.protocol).sharing.agents()


def view_as(*, run: Run, state: dict[str, Any], agent: str | None) -> dict[str, Any]:
    """The state as `agent` may read it under the protocol's sharing rules (whole when no agent)."""
    if not agent:
        return state
    policy = state_settings(run.experiment.protocol).sharing
    return view_for(state, agent, policy, output_agents(run) | {agent})


def path_history(*, run: Run, path: str) -> list[StateDelta]:
    """Every delta at `path`, at the objects above it and below it, oldest first (blame)."""
    segments = parse_path(path)
    normalized = format_path(segments)
    ancestors = [format_path(segments[:n]) for n in range(1, len(segments))]
    exact_or_above = StateDelta.objects.filter(run=run, path__in=[normalized, *ancestors])
    below = StateDelta.objects.filter(run=run, path__startswith=normalized + ".") | StateDelta.objects.filter(
        run=run, path__startswith=normalized + "["
    )
    return list((exact_or_above | below).order_by("seq", "index"))


def state_changes_around(*, run: Run, seq: int) -> tuple[int | None, int | None]:
    """The previous and next seqs at which the state changed (for the step buttons)."""
    rows = StateDelta.objects.filter(run=run)
    previous = rows.filter(seq__lt=seq).order_by("-seq").values_list("seq", flat=True).first()
    following = rows.filter(seq__gt=seq).order_by("seq").values_list("seq", flat=True).first()
    return previous, following


def round_reports(*, run: Run) -> list[RoundReport]:
    """The run's rounds (state/rounds.py): deltas per agent, conflicts, violations, changed paths, convergence."""
    config = state_settings(run.experiment.protocol)
    rows = StateDelta.objects.filter(run=run).order_by("seq", "index").values_list(
        "seq", "index", "agent_id", "round", "weight", "op", "path", "value", "applied_value", "provenance", "outcome", "code"
    )
    deltas = [
        DeltaRecord(seq, index, agent, round_, weight, op, path, value, provenance, outcome, code, value if applied is None else applied)
        for seq, index, agent, round_, weight, op, path, value, applied, provenance, outcome, code in rows.iterator(chunk_size=5000)
    ]
    violations = [
        ViolationRecord(seq, rule, message, agent, path)
        for seq, rule, message, agent, path in RuleViolation.objects.filter(run=run).values_list("seq", "rule", "message", "agent_id", "path")
    ]
    return analyse_rounds(deltas, violations, strategy=config.conflict.strategy, epsilon=config.convergence_epsilon)


# Rebuilding ------------------------------------------------------------------------------------------


@transaction.atomic
def rebuild_snapshots(*, run: Run) -> int:
    """Recompute a run's snapshots from its applied deltas (every K, plus one at the head); returns how many."""
    rows = (
        StateDelta.objects.applied()
        .filter(run=run)
        .order_by("seq", "index")
        .values_list("seq", "index", "op", "path", "value", "applied_value", "agent_id")
    )
    changes = [Change(s, i, op, path, applied if applied is not None else value, agent) for s, i, op, path, value, applied, agent in rows]
    every_seq = list(StateDelta.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    Snapshot.objects.filter(run=run).delete()
    snapshots = take_snapshots(changes, snapshot_every())
    Snapshot.objects.bulk_create(
        [
            Snapshot(run=run, seq=s.seq, state=s.state, delta_count=bisect_right(every_seq, s.seq), reason=Snapshot.Reason.REBUILD)
            for s in snapshots
        ],
        batch_size=100,
    )
    head = StateHead.objects.filter(run=run).first()
    if head is not None:
        last_snapshot = snapshots[-1].seq if snapshots else 0
        head.since_snapshot = StateDelta.objects.filter(run=run, seq__gt=last_snapshot).count()
        head.save(update_fields=["since_snapshot", "updated_at"])
    return len(snapshots)


@transaction.atomic
def rebuild_state(*, run: Run) -> int:
    """Throw away a run's state projection and project its ledger again (non-strict); returns the delta count."""
    for model in (StateDelta, Snapshot, RuleViolation, StateHead):
        model.objects.filter(run=run).delete()
    events = list(Event.objects.filter(run=run, kind__in=STATE_EVENT_KINDS).order_by("seq"))
    for start in range(0, len(events), 5000):
        project_state_events(run, events[start : start + 5000], ProjectionContext(strict=False, source="rebuild"))
    return StateDelta.objects.filter(run=run).count()
