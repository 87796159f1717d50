"""When things happened, and in which order a run's events are appended (pure).

Every event gets a time (`ts`, stored as Event.occurred_at) and says where it came from:
- RECORD: the record's own time (a log line's `ts`, a state file's `timestamp`, `started`, `completed`);
- PARENT: the record it belongs to: many runtime files carry no time (manager_decision.json, envelope.json,
  result.json, digests…), but the run's timed records of the same iteration (and worker) do;
- MTIME: the file's modification time, the last resort (a copy changes it);
- RECEIVED: when the server received it (pushed events without a `ts`).

A one-shot import of a finished run appends its events in `ts` order with a tie-break that does not depend on
the order files were listed in; a watched live run keeps arrival order. In both, DAG state files are applied in
the runtime's order (their own `timestamp`, then the workflow graph), never by mtime or name: each state file is
diffed against the state the files before it built (state.blame), so that order decides what changed when.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from experiments.awp.events import EventSpec

RECORD, PARENT, MTIME, RECEIVED, SPAN = "record", "parent", "mtime", "received", "span"
TS_SOURCES = (RECORD, PARENT, MTIME, RECEIVED, SPAN)  # span: an OpenTelemetry span's own start (otel/)

# Files the runtime writes as an iteration (or a worker in it) begins; the other untimed files are written as
# it ends, so they take the last time of what they belong to.
OPENING_KINDS = frozenset({"iteration.decision", "worker.spawn"})
FINAL_AGENT = "final"


@dataclass(frozen=True)
class Read:
    """An event as read from disk: `order` places its file and line in the layout (the tie-break), `mtime` is the file's."""

    spec: EventSpec
    order: tuple[Any, ...]
    mtime: datetime | None = None


def stamp(reads: list[Read]) -> list[Read]:
    """Every read with a time: its record's, else its iteration's (and worker's) timed records', else its file's mtime."""
    first: dict[tuple[int, str], datetime] = {}
    last: dict[tuple[int, str], datetime] = {}
    for read in reads:
        spec = read.spec
        if spec.occurred_at is None or spec.iteration is None:
            continue
        for key in ((spec.iteration, spec.agent_id), (spec.iteration, "")):
            if key not in first or spec.occurred_at < first[key]:
                first[key] = spec.occurred_at
            if key not in last or spec.occurred_at > last[key]:
                last[key] = spec.occurred_at
    out = []
    for read in reads:
        spec = read.spec
        if spec.occurred_at is not None:
            spec = spec if spec.ts_source else replace(spec, ts_source=RECORD)
        elif (parent := _parent_time(spec, first, last)) is not None:
            spec = replace(spec, occurred_at=parent, ts_source=PARENT)
        elif read.mtime is not None:
            spec = replace(spec, occurred_at=read.mtime, ts_source=MTIME)
        out.append(read if spec is read.spec else replace(read, spec=spec))
    return out


def _parent_time(spec: EventSpec, first: Mapping[tuple[int, str], datetime], last: Mapping[tuple[int, str], datetime]) -> datetime | None:
    if spec.iteration is None:
        return None
    times = first if spec.kind in OPENING_KINDS else last
    return times.get((spec.iteration, spec.agent_id)) or times.get((spec.iteration, ""))


def graph_rank(protocol: Mapping[str, Any] | None) -> dict[str, int]:
    """Each agent of a workflow's DAG (orchestration.graph) → its place in dependency order (ties: listing order)."""
    orchestration = protocol.get("orchestration") if isinstance(protocol, Mapping) else None
    graph = orchestration.get("graph") if isinstance(orchestration, Mapping) else None
    if not isinstance(graph, list):
        return {}
    nodes: list[tuple[str, str, set[str]]] = []
    for node in graph:
        if not isinstance(node, Mapping):
            continue
        node_id = str(node.get("id") or node.get("agent") or "")
        depends = node.get("depends_on")
        if node_id:
            nodes.append((node_id, str(node.get("agent") or node_id), {str(d) for d in depends} if isinstance(depends, list) else set()))
    known = {node_id for node_id, _, _ in nodes}
    done: list[tuple[str, str]] = []
    placed: set[str] = set()
    pending = list(nodes)
    while pending:
        ready = [n for n in pending if (n[2] & known) <= placed]
        # A cycle (not a DAG): keep the rest in listing order rather than lose them.
        for node_id, agent, _ in ready or pending:
            done.append((node_id, agent))
            placed.add(node_id)
        pending = [n for n in pending if n[0] not in placed]
    rank: dict[str, int] = {}
    for position, (node_id, agent) in enumerate(done):
        rank.setdefault(node_id, position)
        rank.setdefault(agent, position)
    return rank


def runtime_key(read: Read, rank: Mapping[str, int]) -> tuple[Any, ...]:
    """Where a DAG state file stands in the runtime's order: its own timestamp, then the graph; final.json last."""
    spec = read.spec
    payload = spec.payload if isinstance(spec.payload, dict) else {}
    agent = str(payload.get("agent_id") or spec.agent_id)
    own = spec.occurred_at if spec.ts_source == RECORD else None
    return (agent == FINAL_AGENT, own is None, own or datetime.min, rank.get(agent, len(rank)), agent, read.order, spec.dedupe_key)


# Within one millisecond the run opens before anything else and closes after everything else.
_PHASE = {"run.start": 0, "run.complete": 2}


def time_key(read: Read) -> tuple[Any, ...]:
    """Order of a finished run's events: ts, then where they sit in the layout (never the order they were listed in).

    Times compare at the millisecond: the runtime's JSONL lines keep milliseconds only while its JSON files keep
    microseconds, so a log line written just after run_manifest.json's `started` reads as a little earlier.
    """
    spec = read.spec
    when = spec.occurred_at.replace(microsecond=spec.occurred_at.microsecond // 1000 * 1000) if spec.occurred_at else datetime.min
    return (spec.occurred_at is None, when, _PHASE.get(spec.kind, 1), read.order, spec.dedupe_key)


def append_order(reads: Iterable[Read], rank: Mapping[str, int], *, finished: bool) -> list[Read]:
    """The order to append a run's events in: `ts` order for a finished run, arrival order for a live one.

    Either way DAG state files take, among their own places, the runtime's order (runtime_key).
    """
    ordered = sorted(reads, key=time_key) if finished else list(reads)
    places = [index for index, read in enumerate(ordered) if read.spec.kind == "state.snapshot"]
    snapshots = sorted((ordered[index] for index in places), key=lambda read: runtime_key(read, rank))
    for index, read in zip(places, snapshots, strict=True):
        ordered[index] = read
    return ordered
