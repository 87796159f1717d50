"""Stable paths and rounds through the real server: an experiment imported from a workflow folder whose
workflow.awp.yaml names `state.stable_paths`, deltas pushed over HTTP to daphne, the rounds endpoint."""

from __future__ import annotations

import io
import os
from pathlib import Path

import requests
from django.core.management import call_command

from experiments.models import Experiment, Run
from state.models import RuleViolation, StateHead
from tests.experiments.awp_trees import write_json
from tests.factories import make_token
from tests.proofkit import push

WORKFLOW = """
name: bindings
state:
  stable_paths: ["$.bindings.*"]
"""


def delta(agent: str, op: str, path: str, value=None, *, round: int) -> dict:
    payload = {"agent_id": agent, "round": round, "op": op, "path": path, "provenance": f"{agent} in round {round}", "weight": 0.5}
    if op != "remove":
        payload["value"] = value
    return payload


def events(key: str, *deltas: dict, start: bool = False) -> list[dict]:
    out = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "bind terms"}}] if start else []
    return out + [{"kind": "state.delta", "idempotency_key": f"{key}-{i}", "payload": d} for i, d in enumerate(deltas)]


def make_folder(root: Path) -> Path:
    (root / "workflow.awp.yaml").write_text(WORKFLOW, encoding="utf-8")
    # A DAG run on disk whose second agent rebinds a term: it happened, so it is applied and flagged.
    state_dir = root / "data" / "state" / "dag-run-1"
    write_json(state_dir / "mapper.json", {"agent_id": "mapper", "timestamp": "2026-11-21T10:00:00+00:00", "state": {"task": "bind", "bindings": {"customer": "sea:customer:001"}}})
    write_json(state_dir / "fixer.json", {"agent_id": "fixer", "timestamp": "2026-11-21T10:01:00+00:00", "state": {"task": "bind", "bindings": {"customer": "sea:customer:999"}}})
    os.utime(state_dir / "mapper.json", (1_700_000_000, 1_700_000_000))
    os.utime(state_dir / "fixer.json", (1_700_000_100, 1_700_000_100))
    return root


def test_pushed_identity_change_is_refused_and_rounds_converge(live_server_factory, tmp_path):
    call_command("awp_import", str(make_folder(tmp_path)), "--experiment", "bindings", stdout=io.StringIO(), stderr=io.StringIO())
    experiment = Experiment.objects.get(slug="bindings")
    assert experiment.protocol["state"]["stable_paths"] == ["$.bindings.*"]
    dag_run = Run.objects.get(experiment=experiment, run_id="dag-run-1")
    flagged = RuleViolation.objects.get(run=dag_run)
    assert flagged.rule == "identity_changed" and "sea:customer:001" in flagged.message and StateHead.objects.get(run=dag_run).state["bindings"] == {"customer": "sea:customer:999"}

    token = make_token(experiment, scopes=["ingest", "memory:read"])
    server = live_server_factory()
    auth = {"Authorization": f"Bearer {token}"}

    def state() -> dict:
        response = requests.get(f"{server.url}/api/v1/runs/pushed-1/state", headers=auth, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["state"]

    assert push(server.url, token, "pushed-1", events("r1", delta("mapper", "add", "$.bindings.customer", "sea:customer:001", round=1), start=True)).status_code == 200
    before = state()

    refused = push(server.url, token, "pushed-1", events("r2-bad", delta("fixer", "modify", "$.bindings.customer", "sea:customer:002", round=2)))
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["code"] == "identity_changed"
    assert all(part in body["message"] for part in ("$.bindings.customer", "sea:customer:001", "sea:customer:002"))
    assert state() == before == {"bindings": {"customer": "sea:customer:001"}}

    accepted = push(server.url, token, "pushed-1", events("r2", delta("mapper", "add", "$.bindings.order", "sea:order:042", round=2)))
    assert accepted.status_code == 200, accepted.text
    assert state() == {"bindings": {"customer": "sea:customer:001", "order": "sea:order:042"}}

    rounds = requests.get(f"{server.url}/api/v1/runs/pushed-1/state/rounds", headers=auth, timeout=30).json()
    assert [(r["round"], r["changed_paths"], r["converged"]) for r in rounds] == [
        (1, ["$.bindings.customer"], False),
        (2, ["$.bindings.order"], False),
    ]
    assert rounds[0]["agents"] == ["mapper"] and rounds[0]["deltas"][0]["provenance"] == "mapper in round 1"

    # Round 3 writes what is already there: nothing changes, so the run has converged.
    same = push(server.url, token, "pushed-1", events("r3", delta("checker", "modify", "$.bindings.customer", "sea:customer:001", round=3)))
    assert same.status_code == 200, same.text
    rounds = requests.get(f"{server.url}/api/v1/runs/pushed-1/state/rounds", headers=auth, timeout=30).json()
    assert [(r["round"], r["changed_paths"], r["converged"]) for r in rounds][-1] == (3, [], True)
    assert [r["round"] for r in rounds] == [1, 2, 3]
