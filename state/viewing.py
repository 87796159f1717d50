"""What state looks like on the way out: redaction for the viewer, audited reveals, the page's view model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest

from experiments.models import Event, Experiment, Run
from state.config import state_settings
from state.deltas import rules_checked
from state.models import RevealAudit
from state.paths import Segment, format_path, parse_path
from state.redaction import REDACTED
from state.replay import DiffEntry
from state.rounds import DeltaRecord, RoundReport
from state.services_redaction import (
    mark_revealed,
    redact_for,
    redact_text_for,
    redactor_for,
)


def redact_state(experiment: Experiment, state: dict[str, Any]) -> dict[str, Any]:
    """The state with every sensitive field masked (R14)."""
    return redact_for(experiment, state)


def audit_reveal(*, user: Any, run: Run, seq: int, where: str, request: HttpRequest | None = None, path: str = "") -> RevealAudit:
    """Record that an owner saw sensitive values unredacted."""
    addr = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    if request is not None:
        mark_revealed(request)  # the owner's audited reveal passes the response net unmasked
    return RevealAudit.objects.create(user=user, run=run, seq=seq, where=where, path=path, remote_addr=addr[:64])


@dataclass
class Node:
    """One line of the state tree: its path, label, and either a scalar or children."""

    path: str
    label: str
    kind: str  # object | array | scalar
    scalar: str = ""
    children: list[Node] | None = None
    is_redacted: bool = False

    @property
    def size(self) -> int:
        return len(self.children or [])


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def tree(value: Any, path: tuple[Segment, ...] = (), label: str = "$") -> Node:
    """A tree of nodes for a (redacted) state, for the collapsible view."""
    here = format_path(path)
    if isinstance(value, dict):
        children = [tree(v, (*path, k), str(k)) for k, v in value.items()]
        return Node(here, label, "object", children=children)
    if isinstance(value, list):
        children = [tree(v, (*path, i), f"[{i}]") for i, v in enumerate(value)]
        return Node(here, label, "array", children=children)
    return Node(here, label, "scalar", scalar=_scalar(value), is_redacted=value == REDACTED)


def redact_diff(experiment: Experiment, entries: list[DiffEntry], *, reveal: bool) -> list[DiffEntry]:
    """Diff entries with sensitive values masked (the whole value when the path itself is sensitive)."""
    if reveal:
        return entries
    redactor = redactor_for(experiment)
    out = []
    for entry in entries:
        segments = parse_path(entry.path)
        out.append(DiffEntry(entry.op, entry.path, redactor.at(segments, entry.old), redactor.at(segments, entry.new)))
    return out


def event_at(run: Run, seq: int) -> Event | None:
    """The ledger event at `seq` (shown beside the time-travel slider)."""
    return Event.objects.filter(run=run, seq=seq).first()


def _delta_out(delta: DeltaRecord, value: Any) -> dict[str, Any]:
    return {
        "seq": delta.seq,
        "agent_id": delta.agent_id,
        "weight": delta.weight,
        "op": delta.op,
        "path": delta.path,
        "value": value,
        "provenance": delta.provenance,
        "outcome": delta.outcome,
        "code": delta.code,
    }


def rounds_out(experiment: Experiment, reports: list[RoundReport]) -> list[dict[str, Any]]:
    """The rounds as JSON-like values, redacted for everyone (values by path and key, messages as text)."""
    rules = rules_checked(stable=bool(state_settings(experiment.protocol).stable_paths))
    out = []
    for report in reports:
        conflicts = [
            {
                "path": conflict.path,
                "strategy": conflict.strategy,
                "winner": None if conflict.winner is None else _delta_out(conflict.winner, conflict.winner.written),
                "losers": [_delta_out(loser, loser.value) for loser in conflict.losers],
            }
            for conflict in report.conflicts
        ]
        violations = [
            {"seq": v.seq, "rule": v.rule, "message": redact_text_for(experiment, v.message), "agent_id": v.agent_id, "path": v.path}
            for v in report.violations
        ]
        out.append(
            {
                "round": report.round,
                "agents": report.agents,
                "deltas": [_delta_out(delta, delta.value) for delta in report.deltas],
                "changed_paths": report.changed_paths,
                "conflicts": conflicts,
                "violations": violations,
                "rules_checked": rules,
                "oscillating": report.oscillating,
                "converged": report.converged,
            }
        )
    # Each delta-shaped item carries {path, value}, so a value under a sensitive path is masked as a whole.
    return list(redact_for(experiment, out))
