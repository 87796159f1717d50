"""Rounds of a run's state (pure): who proposed what in each round, who won, what changed, whether it settled.

Input: a run's recorded deltas in ledger order (with their outcome and the value actually written) and the
rule violations flagged on it. For each round (in ascending order; rounds never decrease among written
deltas) a RoundReport holds
- the deltas of every agent (weight, op, path, provenance, outcome);
- conflicts: the deltas of one path that lost or were merged, and the one written (the winner);
- the violations flagged at the round's deltas (a violation belongs to the round of the deltas at its seq, or
  of the last delta before it);
- changed paths: the paths the round wrote whose value differs after the round from before it (writing the
  same value again is no change);
- converged: no path changed, or (with an epsilon) every change is numeric → numeric by less than epsilon;
- oscillating: changed paths whose new value is the one they had at the end of the round two rounds back.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from state.deltas import apply_op, copy_json
from state.paths import PathError, get_path, parse_path
from state.stable import ABSENT, same_json

WRITTEN = ("applied", "clipped")
BEATEN = ("lost", "merged")


@dataclass(frozen=True)
class DeltaRecord:
    """One recorded delta; `written` is the value the state received (merged or clipped), else the proposal."""

    seq: int
    index: int
    agent_id: str
    round: int
    weight: float
    op: str
    path: str
    value: Any
    provenance: str
    outcome: str
    code: str = ""
    written: Any = None


@dataclass(frozen=True)
class ViolationRecord:
    """A rule flagged on the run at a seq."""

    seq: int
    rule: str
    message: str
    agent_id: str = ""
    path: str = ""


@dataclass(frozen=True)
class Conflict:
    """Several agents wrote one path in one round: the delta written and the ones beaten (lost or merged)."""

    path: str
    strategy: str
    winner: DeltaRecord | None
    losers: tuple[DeltaRecord, ...]


@dataclass(frozen=True)
class PathChange:
    """A path whose value differs after the round (`old`/`new` are ABSENT when missing)."""

    path: str
    old: Any
    new: Any


@dataclass
class RoundReport:
    round: int
    deltas: list[DeltaRecord] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    violations: list[ViolationRecord] = field(default_factory=list)
    changes: list[PathChange] = field(default_factory=list)
    oscillating: list[str] = field(default_factory=list)
    converged: bool = True

    @property
    def agents(self) -> list[str]:
        return sorted({delta.agent_id for delta in self.deltas})

    @property
    def changed_paths(self) -> list[str]:
        return [change.path for change in self.changes]


def analyse_rounds(
    deltas: list[DeltaRecord], violations: list[ViolationRecord], *, strategy: str = "weighted", epsilon: float | None = None
) -> list[RoundReport]:
    """One report per round, oldest first (deltas in ledger order)."""
    deltas = sorted(deltas, key=lambda d: (d.seq, d.index))
    by_round: dict[int, list[DeltaRecord]] = defaultdict(list)
    for delta in deltas:
        by_round[delta.round].append(delta)
    flagged = _violations_by_round(deltas, violations)
    rounds = sorted(set(by_round) | set(flagged))
    reports = [RoundReport(round=r, deltas=by_round.get(r, []), violations=flagged.get(r, [])) for r in rounds]
    touched = [_touched(report.deltas) for report in reports]
    state: dict[str, Any] = {}
    ends: list[dict[str, Any]] = []
    start = _values(state, _union(touched, 0, 2))
    for i, report in enumerate(reports):
        written = [d for d in report.deltas if d.outcome in WRITTEN]
        # Written deltas of one round sit between those of the rounds around them (rounds never decrease).
        for delta in sorted(written, key=lambda d: (d.seq, d.index)):
            try:
                apply_op(state, delta.op, parse_path(delta.path), delta.written)
            except PathError:
                continue  # a recorded outcome the state cannot take: the projection's rows are the truth to show
        ends.append(_values(state, _union(touched, i, 3)))
        before = ends[i - 1] if i else start
        report.changes = [PathChange(p, before[p], ends[i][p]) for p in touched[i] if not same_json(before[p], ends[i][p])]
        report.oscillating = [c.path for c in report.changes if i >= 2 and same_json(c.new, ends[i - 2][c.path])]
        report.converged = all(_small(change, epsilon) for change in report.changes)
        report.conflicts = _conflicts(report.deltas, strategy)
        if i >= 3:
            ends[i - 3] = {}  # no later round looks further back than two rounds
    return reports


def settled_from(reports: list[RoundReport]) -> int | None:
    """The first round from which every round is converged (None when the last round is not)."""
    settled = None
    for report in reports:
        settled = (settled if settled is not None else report.round) if report.converged else None
    return settled


def _touched(deltas: list[DeltaRecord]) -> list[str]:
    return list(dict.fromkeys(d.path for d in deltas if d.outcome in WRITTEN))


def _union(touched: list[list[str]], start: int, count: int) -> list[str]:
    """Paths written in rounds start .. start+count-1: the values a round's end must remember for later rounds."""
    return list(dict.fromkeys(p for paths in touched[start : start + count] for p in paths))


def _values(state: dict[str, Any], paths: list[str]) -> dict[str, Any]:
    return {p: copy_json(get_path(state, parse_path(p), default=ABSENT)) for p in paths}


def _small(change: PathChange, epsilon: float | None) -> bool:
    if epsilon is None or not (_is_number(change.old) and _is_number(change.new)):
        return False
    return bool(abs(change.new - change.old) < epsilon)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _conflicts(deltas: list[DeltaRecord], strategy: str) -> list[Conflict]:
    by_path: dict[str, list[DeltaRecord]] = defaultdict(list)
    for delta in deltas:
        by_path[delta.path].append(delta)
    out = []
    for path, members in by_path.items():
        losers = tuple(d for d in members if d.outcome in BEATEN)
        if not losers:
            continue
        # The last value written at the path in the round is what the conflict resolved to.
        winners = [d for d in members if d.outcome in WRITTEN]
        out.append(Conflict(path=path, strategy=strategy, winner=winners[-1] if winners else None, losers=losers))
    return out


def _violations_by_round(deltas: list[DeltaRecord], violations: list[ViolationRecord]) -> dict[int, list[ViolationRecord]]:
    round_at: dict[int, int] = {}
    for delta in deltas:
        round_at.setdefault(delta.seq, delta.round)
    seqs = sorted(round_at)
    out: dict[int, list[ViolationRecord]] = defaultdict(list)
    for violation in sorted(violations, key=lambda v: v.seq):
        if violation.seq in round_at:
            out[round_at[violation.seq]].append(violation)
            continue
        before = bisect_left(seqs, violation.seq)
        out[round_at[seqs[before - 1]] if before else (round_at[seqs[0]] if seqs else 0)].append(violation)
    return out
