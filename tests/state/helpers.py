"""Builders for state tests: runs with a protocol, pushed deltas through the ingest core."""

from __future__ import annotations

from typing import Any

from experiments.ingest import EventIn, append_events
from experiments.projections import ProjectionContext
from experiments.protocol import parse_protocol
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
