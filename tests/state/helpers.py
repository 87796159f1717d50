"""Builders for state tests: runs with a protocol, pushed deltas through the ingest core; the detector classes' check."""

from __future__ import annotations

import json
from typing import Any

from experiments.ingest import EventIn, append_events
from experiments.projections import ProjectionContext
from experiments.protocol import parse_protocol
from state.detection import detect_secrets
from state.redaction import KnownSecrets, redact_text
from state.secrets import event_secrets
from tests.factories import make_experiment, make_run

_counter = iter(range(1, 10**9))


def run_with_protocol(yaml_text: str = "", experiment: Any = None) -> Any:
    experiment = experiment or make_experiment()
    if yaml_text:
        experiment.protocol_yaml = yaml_text
        experiment.protocol = parse_protocol(yaml_text)
        experiment.save()
    return make_run(experiment)


def d(agent: str, op: str, path: str, value: Any = None, *, round: int = 1, weight: float = 1.0, provenance: str = "test") -> dict[str, Any]:
    payload = {"agent_id": agent, "round": round, "weight": weight, "op": op, "path": path, "provenance": provenance}
    if op != "remove":
        payload["value"] = value
    return payload


def push(run: Any, *payloads: dict[str, Any], strict: bool = True) -> list[int]:
    events = [EventIn(kind="state.delta", dedupe_key=f"key:{next(_counter)}", payload=p, agent_id=p.get("agent_id", "")) for p in payloads]
    return append_events(run, events, ctx=ProjectionContext(strict=strict, source="api" if strict else "import")).seqs


def learnt_and_masked(text: str, values: tuple[str, ...], sensitive: frozenset[str]) -> None:
    """Every value is learnt from `text` and masked; and the same text inside an event (a shell tool call's
    command, a log's message): what the document alone masks, the event masks in its JSON."""
    found = detect_secrets(text, sensitive, fail_closed=True)
    masked = redact_text(text, sensitive, KnownSecrets.of(found))
    for value in values:
        assert value not in masked, (value, found)
    for kind, payload in [("tool.call", {"tool": "shell", "args": {"command": text}}), ("log", {"msg": text})]:
        serialized = json.dumps(payload, ensure_ascii=False)
        shown = redact_text(serialized, sensitive, KnownSecrets.of(event_secrets(kind, "agent-1", payload, sensitive)))
        for value in values:
            assert json.dumps(value, ensure_ascii=False)[1:-1] not in shown, (kind, value)
