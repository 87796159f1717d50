"""Who changed what between two DAG state files (pure).

The runtime's shared_dict gives every agent one top-level key, its own id: `state[<agent>] = result`. A key
named after an agent of the run is that agent's, whichever agent's file shows it first (in a parallel level
every checkpoint already holds its siblings' results); other keys are blamed on the file's agent. A file may
only take away what its agent owns: anything else that disappears is reported, never applied as a remove.
Files are meant to be applied in the runtime's order (experiments.awp.timing.runtime_key).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from state.paths import parse_path
from state.replay import DiffEntry, diff


@dataclass(frozen=True)
class Blamed:
    """One change of a state file and the agent that made it."""

    agent_id: str
    entry: DiffEntry


@dataclass(frozen=True)
class FileChanges:
    changes: list[Blamed] = field(default_factory=list)
    dropped: list[DiffEntry] = field(default_factory=list)  # disappeared, but not the file's agent's to remove


def owner_of(key: str, *, agent: str, agents: Collection[str]) -> str:
    """The agent a top-level state key belongs to: the agent of that name, else the file's agent."""
    return key if key in agents else agent


def file_changes(before: dict[str, Any], after: dict[str, Any], *, agent: str, agents: Collection[str], late: bool = False) -> FileChanges:
    """The diff from `before` to the state file `after` of `agent`, each change blamed on the agent that made it.

    `late`: the file is older than one applied before it (a live folder where files arrived out of order); it may
    only add what is still missing, and what it lacks is expected, not dropped.
    """
    changes, dropped = [], []
    for entry in diff(before, after):
        key = str(parse_path(entry.path)[0])
        if late and entry.op != "added":
            continue
        if entry.op == "removed" and key != agent:
            dropped.append(entry)
        else:
            changes.append(Blamed(owner_of(key, agent=agent, agents=agents), entry))
    return FileChanges(changes, dropped)
