"""A real DAG run (awp-agents against the fake LLM), imported: deltas per agent, state at the last seq = final.json minus runtime keys."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from experiments.models import Run
from state.config import RUNTIME_KEYS
from state.models import StateDelta
from state.services import path_history, state_at_seq
from tests.awp_runtime import FakeLLM, run_dag

pytestmark = [pytest.mark.interop, pytest.mark.django_db]


@pytest.fixture(scope="module")
def dag_dir(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    llm = FakeLLM().start()
    try:
        workflow = tmp_path_factory.mktemp("state-dag") / "dag"
        run_dag(workflow, llm)
    finally:
        llm.stop()
    return workflow


def test_imported_dag_run_has_agent_deltas_and_final_state(dag_dir):
    out = io.StringIO()
    call_command("awp_import", str(dag_dir), "--experiment", "state-dag", "--json", stdout=out)
    run = Run.objects.get(experiment__slug="state-dag")
    final_file = next(dag_dir.glob("data/state/*/final.json"))
    final = json.loads(final_file.read_text())["state"]
    expected = {key: value for key, value in final.items() if key not in RUNTIME_KEYS}
    assert {"researcher", "analyst"} <= set(expected)
    seq, state = state_at_seq(run=run)
    assert seq == run.last_seq and state == expected
    agents = set(StateDelta.objects.filter(run=run).values_list("agent_id", flat=True))
    assert {"researcher", "analyst"} <= agents
    blame = path_history(run=run, path="$.analyst")
    assert blame and blame[0].agent_id == "analyst" and blame[0].provenance.endswith("analyst.json")
    # Importing again changes nothing.
    count = StateDelta.objects.filter(run=run).count()
    call_command("awp_import", str(dag_dir), "--experiment", "state-dag", "--json", stdout=io.StringIO())
    assert state_at_seq(run=run)[1] == expected and StateDelta.objects.filter(run=run).count() == count
