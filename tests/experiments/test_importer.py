"""Folder → ledger: counts equal the disk, a second import adds nothing, bad files become problem records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import call_command

from experiments.awp.digests import digest_sha
from experiments.importer import FolderImporter
from experiments.models import (
    BoardPost,
    Digest,
    Event,
    Experiment,
    IngestCursor,
    IngestProblem,
    Run,
    WorkspaceFile,
)
from experiments.projections import register_file_handler
from tests.experiments.awp_trees import RUN_ID, digest_record, make_workflow, write_json

pytestmark = pytest.mark.django_db

HANDLED: list[str] = []
register_file_handler("antipattern", lambda experiment, file: HANDLED.append(file.relpath))


def run_import(*paths: Path, experiment: str | None = None) -> dict:
    import io

    out = io.StringIO()
    args = [str(p) for p in paths] + (["--experiment", experiment] if experiment else []) + ["--json"]
    call_command("awp_import", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_import_maps_a_workflow_and_a_second_import_adds_nothing(tmp_path):
    root = make_workflow(tmp_path / "wf")
    HANDLED.clear()
    first = run_import(root, experiment="imp")
    assert first["runs"] == 1 and first["board_posts"] == 3 and first["digests"] == 2 and first["problems"] == 0
    assert first["new_events"] == first["events"] > 0
    run = Run.objects.get(run_id=RUN_ID)
    assert (run.status, run.iterations, run.experiment.slug) == ("complete", 2, "imp")
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == list(range(1, run.last_seq + 1))
    assert Event.objects.filter(run=run).order_by("seq").first().kind == "run.start"
    assert Event.objects.filter(run=run).order_by("-seq").first().kind == "run.complete"
    assert WorkspaceFile.objects.filter(experiment=run.experiment).count() == 2
    assert HANDLED == ["memory/antipatterns/10c24e180074a0f2.md"]
    second = run_import(root, experiment="imp")
    assert second["new_events"] == 0 and second["events"] == first["events"]
    # Without cursors the dedupe keys still make it a no-op.
    IngestCursor.objects.all().delete()
    assert run_import(root, experiment="imp")["new_events"] == 0
    assert HANDLED == ["memory/antipatterns/10c24e180074a0f2.md"]


def test_bad_files_become_problems_and_the_rest_is_imported(tmp_path):
    root = make_workflow(tmp_path / "wf")
    run_dir = root / "workspace" / "runs" / RUN_ID
    board = root / "workspace" / "blackboard" / f"{RUN_ID}.jsonl"
    board.write_text(board.read_text() + '{"id": "cut", "ts": 17953\n' + json.dumps({"id": "after", "ts": 1.0, "topic": "t", "worker_id": "w", "payload": {}}) + "\n")
    (run_dir / "iterations" / "002" / "validation.json").write_text("[{not json")
    wrong = digest_record(iteration=3)
    write_json(run_dir / "digest" / f"{'ab' * 32}.json", wrong)
    summary = run_import(root, experiment="bad")
    codes = sorted(IngestProblem.objects.values_list("code", flat=True))
    assert codes == ["digest_sha_mismatch", "invalid_json", "invalid_line"]
    assert summary["problems"] == 3 and summary["digests"] == 2 and summary["board_posts"] == 4
    assert not Digest.objects.filter(sha="ab" * 32).exists()
    assert BoardPost.objects.filter(entry_id="after").exists()
    problem = IngestProblem.objects.get(code="invalid_line")
    assert problem.run.run_id == RUN_ID and problem.offset and problem.path.endswith(".jsonl")
    assert run_import(root, experiment="bad")["problems"] == 3  # recorded once


def test_watch_pass_follows_appends_and_survives_truncation(tmp_path):
    root = make_workflow(tmp_path / "wf")
    importer = FolderImporter(root, experiment_slug="follow", source="watcher", final=False)
    importer.sync()
    board = root / "workspace" / "blackboard" / f"{RUN_ID}.jsonl"
    with board.open("a") as handle:
        handle.write(json.dumps({"id": "late", "ts": 2.0, "topic": "t", "worker_id": "w", "payload": {}}) + "\n" + '{"id": "partial"')
    importer.sync()
    assert BoardPost.objects.filter(entry_id="late").exists() and not IngestProblem.objects.exists()
    board.write_text(json.dumps({"id": "rewritten", "ts": 3.0, "topic": "t", "worker_id": "w", "payload": {}}) + "\n")
    stats = importer.sync()
    assert IngestProblem.objects.filter(code="file_truncated").count() == 1
    assert stats.new_events == 1 and BoardPost.objects.filter(entry_id="rewritten").exists()


def test_stub_digest_dirs_of_submanagers_belong_to_the_nested_child_run(tmp_path):
    root = make_workflow(tmp_path / "wf")
    sub_id = "2026-11-21_22-39-07_11111111"
    nested = root / "workspace" / "runs" / RUN_ID / "iterations" / "001" / "delegations" / "sub_research" / "runs" / sub_id
    write_json(nested / "run_manifest.json", {"run_id": sub_id, "task": "sub", "started": "2026-11-21T22:39:07+00:00"})
    record = digest_record(sub_id)
    write_json(root / "workspace" / "runs" / sub_id / "digest" / f"{digest_sha(record)}.json", record)
    run_import(root, experiment="subs")
    child = Run.objects.get(run_id=sub_id)
    assert child.parent.run_id == RUN_ID and child.depth == 1 and child.parent_worker == "sub_research"
    assert Digest.objects.get(sha=digest_sha(record)).run == child


def test_experiments_root_maps_experiment_task_and_best(tmp_path):
    exp = tmp_path / "root" / "exp_1234abcd"
    write_json(exp / "experiment.json", {"experiment_id": "exp_1234abcd", "name": "facts 42", "goal": "Learn", "task_order": ["001-first"]})
    write_json(exp / "tasks" / "001-first" / "task.json", {"task_id": "001-first", "task_number": 1, "mode": "seed", "user_prompt": "go"})
    make_workflow(exp / "tasks" / "001-first" / "seed")
    write_json(exp / "tasks" / "001-first" / "BEST" / "manifest.json", {"winner_run_id": RUN_ID, "reason": "auto_loss", "loss": 0.35})
    (exp / "tasks" / "001-first" / "seed" / "workflow.awp.yaml").write_text("state:\n  sharing:\n    rules:\n      - from_agent: a\n        to_agents: [b]\n        fields: [x]\n")
    summary = run_import(tmp_path / "root")
    experiment = Experiment.objects.get(external_id="exp_1234abcd")
    task = experiment.tasks.get()
    assert summary["runs"] == 1 and task.best_run.run_id == RUN_ID and task.best_loss == 0.35
    assert task.best_run.loss == 0.35 and task.best_run.task == task
    assert experiment.protocol["state"]["sharing"]["rules"][0] == {"from": "a", "to": ["b"], "fields": ["x"]}


def test_dag_snapshots_become_state_snapshot_events(tmp_path):
    state = tmp_path / "dag" / "data" / "state" / "abc123def456"
    write_json(state / "researcher.json", {"agent_id": "researcher", "timestamp": "2026-11-21T22:40:13+00:00", "state": {"task": "x", "researcher": {"confidence": 0.9}}})
    write_json(state / "final.json", {"timestamp": "2026-11-21T22:40:14+00:00", "state": {"task": "x"}})
    run_import(tmp_path / "dag", experiment="dag")
    run = Run.objects.get(run_id="abc123def456")
    assert run.engine == "dag"
    assert list(Event.objects.filter(run=run).values_list("kind", "agent_id")) == [("state.snapshot", "researcher"), ("state.snapshot", "final")]
