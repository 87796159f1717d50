"""The real-runtime harness itself: the fake LLM drives awp-agents into the trees the other tests import."""

from __future__ import annotations

import json

import pytest

from tests.awp_runtime import Script, run_dag, run_delegation_loop, run_with_submanagers

pytestmark = pytest.mark.interop


def test_delegation_loop_writes_digests_board_and_completion(tmp_path, fake_llm):
    run_delegation_loop(tmp_path / "wf", fake_llm)
    runs = list((tmp_path / "wf" / "workspace" / "runs").iterdir())
    assert len(runs) == 1
    completion = json.loads((runs[0] / "run_completion.json").read_text())
    assert completion["status"] == "complete"
    digests = [json.loads(p.read_text()) for p in (runs[0] / "digest").glob("*.json")]
    assert sorted(d["iteration"] for d in digests) == [1, 2]
    assert all("fact_collector: FACT_ALPHA" in d["key_facts"][0] for d in digests)
    board = (tmp_path / "wf" / "workspace" / "blackboard" / f"{runs[0].name}.jsonl").read_text().splitlines()
    assert len(board) == 2


def test_low_confidence_primes_the_next_run_with_an_antipattern(tmp_path, fake_llm):
    fake_llm.reset(Script(iterations=1, confidences=[0.2]))
    run_delegation_loop(tmp_path / "wf", fake_llm)
    assert list((tmp_path / "wf" / "memory" / "antipatterns").glob("*.md"))
    fake_llm.requests.clear()
    run_delegation_loop(tmp_path / "wf", fake_llm)
    assert "## PRIOR RUN MEMORY" in fake_llm.manager_prompts()[0]


def test_submanagers_and_dag(tmp_path, fake_llm):
    run_with_submanagers(tmp_path / "sub", fake_llm, count=2)
    assert len(list((tmp_path / "sub").glob("workspace/runs/*/iterations/*/delegations/*/runs/*/run_manifest.json"))) == 2
    run_dag(tmp_path / "dag", fake_llm)
    states = list((tmp_path / "dag" / "data" / "state").glob("*/*.json"))
    assert sorted(p.name for p in states) == ["analyst.json", "final.json", "researcher.json"]
