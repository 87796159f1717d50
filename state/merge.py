"""Conflicting deltas: several agents writing one path in one round, resolved by a strategy (pure).

A conflict group is two or more `add`/`modify` deltas of one batch with the same round and path from at
least two agents. Exactly one member is written (the winner, with the resolved value); the others stay
in the history marked `lost` (outvoted) or `merged` (their value is part of what was written).

Strategies (protocol `state.conflict_resolution.strategy`):
- `weighted` (default): members apply in ascending weight, so the highest weight lands last; object
  values are merged key by key in that order, other values are the highest weight's.
- `highest-weight`: the highest weight's value, nothing merged.
- `majority-vote`: the most common value (ties: larger total weight, then the earlier value).
- `union`: all array items (or scalar values) of all members, first occurrence first, no duplicates.
- `expert-override`: the first listed expert among the members wins; else highest-weight.
Ties on weight go to the later delta.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from state.deltas import Delta

STRATEGIES = ("weighted", "highest-weight", "majority-vote", "union", "expert-override")


@dataclass(frozen=True)
class ConflictPolicy:
    """How a conflict group is resolved."""

    strategy: str = "weighted"
    experts: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: Any) -> ConflictPolicy:
        """Read `state.conflict_resolution`: a strategy name, or {strategy, expert | experts}."""
        if isinstance(config, str):
            config = {"strategy": config}
        if not isinstance(config, dict):
            return cls()
        strategy = str(config.get("strategy", "weighted")).replace("_", "-")
        experts = config.get("experts", config.get("expert", ()))
        experts = (experts,) if isinstance(experts, str) else tuple(str(e) for e in experts or ())
        return cls(strategy=strategy if strategy in STRATEGIES else "weighted", experts=experts)


@dataclass(frozen=True)
class Resolution:
    """The member that is written, the value it writes, and every member's outcome."""

    winner: int
    value: Any
    outcomes: tuple[str, ...]


def conflict_groups(deltas: list[Delta]) -> list[list[int]]:
    """Indices of the deltas that form conflict groups (same round and path, ≥2 agents, only add/modify)."""
    by_key: dict[tuple[int, str], list[int]] = defaultdict(list)
    for index, delta in enumerate(deltas):
        by_key[(delta.round, delta.path)].append(index)
    groups = []
    for members in by_key.values():
        writes = all(deltas[i].op in ("add", "modify") for i in members)
        if len(members) > 1 and writes and len({deltas[i].agent_id for i in members}) > 1:
            groups.append(members)
    return groups


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _by_weight(deltas: list[Delta]) -> list[int]:
    """Member positions in ascending weight; the later member wins a tie."""
    return sorted(range(len(deltas)), key=lambda i: (deltas[i].weight, i))


def resolve(deltas: list[Delta], policy: ConflictPolicy) -> Resolution:
    """Resolve one conflict group (members in arrival order)."""
    order = _by_weight(deltas)
    heaviest = order[-1]
    strategy = policy.strategy
    if strategy == "expert-override":
        for expert in policy.experts:
            found = [i for i, d in enumerate(deltas) if d.agent_id == expert]
            if found:
                return _single(deltas, found[-1])
        return _single(deltas, heaviest)
    if strategy == "highest-weight":
        return _single(deltas, heaviest)
    if strategy == "majority-vote":
        return _majority(deltas)
    if strategy == "union":
        items: list[Any] = []
        seen: set[str] = set()
        for delta in deltas:
            for item in delta.value if isinstance(delta.value, list) else [delta.value]:
                key = _canonical(item)
                if key not in seen:
                    seen.add(key)
                    items.append(item)
        return Resolution(heaviest, items, tuple("applied" if i == heaviest else "merged" for i in range(len(deltas))))
    if all(isinstance(d.value, dict) for d in deltas):
        merged: dict[str, Any] = {}
        for i in order:
            merged.update(deltas[i].value)
        return Resolution(heaviest, merged, tuple("applied" if i == heaviest else "merged" for i in range(len(deltas))))
    return _single(deltas, heaviest)


def _single(deltas: list[Delta], winner: int) -> Resolution:
    return Resolution(winner, deltas[winner].value, tuple("applied" if i == winner else "lost" for i in range(len(deltas))))


def _majority(deltas: list[Delta]) -> Resolution:
    votes: dict[str, list[int]] = defaultdict(list)
    for i, delta in enumerate(deltas):
        votes[_canonical(delta.value)].append(i)
    ranked = sorted(votes.values(), key=lambda ids: (len(ids), sum(deltas[i].weight for i in ids), -ids[0]))
    voters = ranked[-1]
    winner = max(voters, key=lambda i: (deltas[i].weight, i))
    outcomes = tuple("applied" if i == winner else ("merged" if i in voters else "lost") for i in range(len(deltas)))
    return Resolution(winner, deltas[winner].value, outcomes)
