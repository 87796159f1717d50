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


def test_the_driver_lists_a_workspace_whose_files_are_being_staged_and_renamed(tmp_path, monkeypatch):
    """The runtime's own workspace listing races its background writer (tests/awp_driver.settle_directory_walks):
    while a writer stages and renames files as the runtime does, the driver's listing never fails."""
    import threading

    from awp.runtime.delegation_loop_runner import DelegationLoopRunner

    from tests import awp_driver

    monkeypatch.setattr(DelegationLoopRunner, "_build_directory_tree", DelegationLoopRunner.__dict__["_build_directory_tree"])
    awp_driver.settle_directory_walks()
    workspace, output = tmp_path / "workspace", tmp_path / "output"
    folders = [workspace / "runs" / f"r{n}" / "iterations" / "001" for n in range(4)]
    for folder in folders:
        folder.mkdir(parents=True)
    output.mkdir()
    stop = threading.Event()

    def write_as_the_runtime_does() -> None:  # its _bg_writer: <name>.tmp, then os.replace
        n = 0
        while not stop.is_set():
            target = folders[n % len(folders)] / f"file_{n % 7}.json"
            staged = target.with_suffix(target.suffix + ".tmp")
            staged.write_text("{}")
            staged.replace(target)
            n += 1

    writer = threading.Thread(target=write_as_the_runtime_does)
    writer.start()
    try:
        listings = [DelegationLoopRunner._build_directory_tree(workspace, output, 200) for _ in range(500)]  # unsettled, about 1 in 15 fails
    finally:
        stop.set()
        writer.join()
    assert all("runs/" in listing for listing in listings)
