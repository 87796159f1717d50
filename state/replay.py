"""Replay and diff (pure): state at a seq from the nearest snapshot plus the tail, and what changed.

A recorded change is a `Change(seq, index, op, path, value)` whose value is what was actually written
(after clipping or merging); only changes whose delta was applied or clipped are replayed.

The three Layer-4 state models each produce a state at any seq from the same recorded changes:
- `shared_dict`: changes are applied to one dictionary;
- `event_sourced`: changes become events `{event_id, timestamp, agent_id, type, payload}` that a reducer
  folds into state;
- `cqrs`: changes are commands on a write model (one encoded document per top-level key); queries read a
  projection that is refreshed from the write model for the keys a command touched.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from state.deltas import apply_op, copy_json
from state.paths import Path, format_path, parse_path

MODELS = ("shared_dict", "event_sourced", "cqrs")


@dataclass(frozen=True)
class Change:
    """One applied change, in replay order (seq, index)."""

    seq: int
    index: int
    op: str
    path: str
    value: Any = None
    agent_id: str = ""


@dataclass(frozen=True)
class Snapshot:
    """The state after every change with seq ≤ `seq`."""

    seq: int
    state: dict[str, Any]


class StateModel(Protocol):
    name: str

    def replay(self, state: dict[str, Any], changes: Iterable[Change], *, owned: bool = False) -> dict[str, Any]: ...


class SharedDict:
    """Changes applied to one dictionary."""

    name = "shared_dict"

    def replay(self, state: dict[str, Any], changes: Iterable[Change], *, owned: bool = False) -> dict[str, Any]:
        """Apply `changes` to a copy of `state` (to `state` itself when the caller owns state and changes)."""
        out = state if owned else copy_json(state)
        for change in changes:
            apply_op(out, change.op, parse_path(change.path), change.value, copy=not owned)
        return out


class EventSourced:
    """Changes as events in an append-only log; state is the fold of the log."""

    name = "event_sourced"

    @staticmethod
    def to_event(change: Change) -> dict[str, Any]:
        """The Layer-4 event record of a change."""
        return {
            "event_id": f"{change.seq}.{change.index}",
            "timestamp": change.seq,
            "agent_id": change.agent_id,
            "type": f"state.{change.op}",
            "payload": {"path": change.path, "value": change.value},
        }

    @staticmethod
    def reduce(state: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
        """Fold one event into the state (in place)."""
        payload = event["payload"]
        apply_op(state, event["type"].removeprefix("state."), parse_path(payload["path"]), payload["value"])
        return state

    def replay(self, state: dict[str, Any], changes: Iterable[Change], *, owned: bool = False) -> dict[str, Any]:
        """Reduce the events of `changes` onto a copy of `state`."""
        out = state if owned else copy_json(state)
        for event in map(self.to_event, changes):
            self.reduce(out, event)
        return out


class Cqrs:
    """Commands update a write model of encoded top-level documents; the query side is a projection of it."""

    name = "cqrs"

    def replay(self, state: dict[str, Any], changes: Iterable[Change], *, owned: bool = False) -> dict[str, Any]:
        """Run the changes as commands, then answer the query 'whole state'."""
        write_model = {key: json.dumps(value) for key, value in state.items()}
        projection = state if owned else copy_json(state)
        for change in changes:
            path = parse_path(change.path)
            top = path[0]
            document = {top: json.loads(write_model[top])} if top in write_model else {}
            apply_op(document, change.op, path, change.value)
            if top in document:
                write_model[top] = json.dumps(document[top])
                projection[top] = document[top]
            else:
                write_model.pop(top, None)
                projection.pop(top, None)
        return projection


def state_model(name: str) -> StateModel:
    """The state model named in the protocol's `state.model` (shared_dict when unknown)."""
    return {"event_sourced": EventSourced, "cqrs": Cqrs}.get(name, SharedDict)()


def state_at(snapshot: Snapshot | None, tail: Iterable[Change], seq: int, model: StateModel | None = None) -> dict[str, Any]:
    """State at `seq`: the snapshot (seq ≤ `seq`, or the empty state) plus the tail changes up to `seq`."""
    base = snapshot.state if snapshot is not None else {}
    after = snapshot.seq if snapshot is not None else 0
    changes = [c for c in tail if after < c.seq <= seq]
    return (model or SharedDict()).replay(base, changes)


def nearest_snapshot(snapshots: Iterable[Snapshot], seq: int) -> Snapshot | None:
    """The latest snapshot at or before `seq`."""
    best = None
    for snapshot in snapshots:
        if snapshot.seq <= seq and (best is None or snapshot.seq > best.seq):
            best = snapshot
    return best


def take_snapshots(changes: list[Change], every: int) -> list[Snapshot]:
    """Snapshots after each seq at which `every` more changes have accumulated (for rebuilds and tests)."""
    snapshots: list[Snapshot] = []
    state: dict[str, Any] = {}
    since = 0
    for position, change in enumerate(changes):
        apply_op(state, change.op, parse_path(change.path), change.value)
        since += 1
        last_of_seq = position + 1 == len(changes) or changes[position + 1].seq != change.seq
        if since >= every and last_of_seq:
            snapshots.append(Snapshot(seq=change.seq, state=copy_json(state)))
            since = 0
    return snapshots


@dataclass(frozen=True)
class DiffEntry:
    """One difference between two states: op added|changed|removed at a path, with both values."""

    op: str
    path: str
    old: Any = None
    new: Any = None


def _same(a: Any, b: Any) -> bool:
    # 1, 1.0 and True are equal in Python but not in JSON.
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[DiffEntry]:
    """Added, changed and removed paths from `a` to `b` (objects recursed into; lists compared whole)."""
    out: list[DiffEntry] = []
    _diff_into(a, b, (), out)
    return out


def _diff_into(a: dict[str, Any], b: dict[str, Any], prefix: Path, out: list[DiffEntry]) -> None:
    for key in a:
        if key not in b:
            out.append(DiffEntry("removed", format_path((*prefix, key)), old=a[key]))
    for key, new in b.items():
        path = (*prefix, key)
        if key not in a:
            out.append(DiffEntry("added", format_path(path), new=new))
        elif isinstance(a[key], dict) and isinstance(new, dict):
            _diff_into(a[key], new, path, out)
        elif not _same(a[key], new):
            out.append(DiffEntry("changed", format_path(path), old=a[key], new=new))


DIFF_OPS = {"added": "add", "changed": "modify", "removed": "remove"}


def apply_diff(state: dict[str, Any], entries: Iterable[DiffEntry]) -> dict[str, Any]:
    """Apply a diff to a copy of `state` (diff(a, b) applied to a gives b)."""
    out = copy_json(state)
    for entry in entries:
        apply_op(out, DIFF_OPS[entry.op], parse_path(entry.path), entry.new)
    return out
