"""Real AWP runs (awp-agents against the fake LLM) imported and watched: the dashboard's counts equal the disk."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from experiments.models import BoardPost, Digest, Event, Experiment, Run, WorkspaceFile
from tests.awp_runtime import (
    FakeLLM,
    Script,
    run_dag,
    run_delegation_loop,
    run_experiment_cli,
    run_with_submanagers,
)
from tests.conftest import ROOT, subprocess_env

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Iterator[dict[str, Path]]:  # type: ignore[no-untyped-def]
    """One of each real run kind, made once for the module."""
    base = tmp_path_factory.mktemp("awp")
    llm = FakeLLM(Script(iterations=3, confidences=[0.95, 0.2, 0.9])).start()
    try:
        run_delegation_loop(base / "loop", llm)
        llm.reset(Script(iterations=2))
        run_with_submanagers(base / "subs", llm, count=2)
        llm.reset(Script(iterations=2))
        run_experiment_cli(base / "root", llm)
        run_dag(base / "dag", llm)
    finally:
        llm.stop()
    yield {"loop": base / "loop", "subs": base / "subs", "root": base / "root", "dag": base / "dag"}


def awp_import(*args: str) -> dict:
    import io

    out = io.StringIO()
    call_command("awp_import", *args, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def disk_counts(workflow: Path) -> dict[str, int]:
    manifests = list(workflow.glob("workspace/runs/**/run_manifest.json"))
    return {
        "runs": len(manifests),
        "iterations": sum(len(list(m.parent.glob("iterations/[0-9]*"))) for m in manifests),
        "workers": len({p.name for m in manifests for p in m.parent.glob("iterations/*/delegations/*")}),
        "board": sum(1 for f in workflow.glob("workspace/blackboard/*.jsonl") for line in f.read_text().splitlines() if line.strip()),
        "digests": len(list(workflow.glob("workspace/runs/*/digest/*.json"))),
        "antipatterns": len(list(workflow.glob("memory/antipatterns/*.md"))),
    }


def db_counts(experiment: Experiment) -> dict[str, int]:
    runs = Run.objects.filter(experiment=experiment, engine="delegation_loop")
    return {
        "runs": runs.count(),
        "iterations": sum(r.iterations for r in runs),
        "workers": Event.objects.filter(run__in=runs, kind="worker.spawn").values("agent_id").distinct().count(),
        "board": BoardPost.objects.filter(run__in=runs).count(),
        "digests": Digest.objects.filter(experiment=experiment).count(),
        "antipatterns": WorkspaceFile.objects.filter(experiment=experiment, kind="antipattern").count(),
    }


def assert_children_resolve(experiment: Experiment) -> None:
    known = set(Digest.objects.filter(experiment=experiment).values_list("sha", flat=True))
    wanted = {h for d in Digest.objects.filter(experiment=experiment) for h in d.child_digest_hashes}
    assert wanted <= known


@pytest.mark.django_db
def test_delegation_loop_counts_equal_the_disk_and_reimport_adds_nothing(trees):
    summary = awp_import(str(trees["loop"]), "--experiment", "loop")
    experiment = Experiment.objects.get(slug="loop")
    assert db_counts(experiment) == disk_counts(trees["loop"])
    assert disk_counts(trees["loop"])["antipatterns"] >= 1 and summary["problems"] == 0
    assert awp_import(str(trees["loop"]), "--experiment", "loop")["new_events"] == 0


@pytest.mark.django_db
def test_submanager_runs_are_children_of_the_root_and_digests_resolve(trees):
    awp_import(str(trees["subs"]), "--experiment", "subs")
    experiment = Experiment.objects.get(slug="subs")
    assert db_counts(experiment) == disk_counts(trees["subs"])
    root = Run.objects.get(experiment=experiment, depth=0)
    children = Run.objects.filter(experiment=experiment, depth=1)
    assert children.count() == 2 and all(c.parent_id == root.pk and c.parent_worker for c in children)
    assert any(d.child_digest_hashes for d in Digest.objects.filter(run=root))
    assert_children_resolve(experiment)


@pytest.mark.django_db
def test_experiment_hierarchy_from_the_awp_cli(trees):
    awp_import(str(trees["root"]))
    experiment = Experiment.objects.exclude(external_id="").get()
    task = experiment.tasks.get()
    seed = next(trees["root"].glob("*/tasks/*/seed"))
    assert db_counts(experiment) == disk_counts(seed)
    assert task.best_run is not None and task.best_loss is not None and task.best_run.loss == task.best_loss
    assert_children_resolve(experiment)


@pytest.mark.django_db
def test_dag_run_becomes_state_snapshots(trees):
    awp_import(str(trees["dag"]), "--experiment", "dag")
    run = Run.objects.get(experiment__slug="dag")
    snapshots = Event.objects.filter(run=run, kind="state.snapshot")
    assert run.engine == "dag" and snapshots.count() == len(list(trees["dag"].glob("data/state/*/*.json")))
    assert snapshots.order_by("-seq").first().agent_id == "final"
    assert Experiment.objects.get(slug="dag").protocol  # workflow.awp.yaml adopted
    assert WorkspaceFile.objects.filter(experiment__slug="dag", kind="daily").exists()


def ledger(slug: str) -> set[tuple[str, str, str, str]]:
    rows = Event.objects.filter(run__experiment__slug=slug).values_list("run__run_id", "kind", "dedupe_key", "payload")
    return {(r, k, d, json.dumps(p, sort_keys=True)) for r, k, d, p in rows}


def start_watcher(folder: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "manage.py", "awp_watch", str(folder), "--experiment", "watched", "-v", "0"]
    log = (folder.parent / "watcher.log").open("ab")
    return subprocess.Popen(command, cwd=ROOT, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT)


def wait_until(check, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def test_watcher_killed_mid_run_resumes_to_the_same_ledger_as_a_one_shot_import(transactional_db, tmp_path):
    llm = FakeLLM(Script(iterations=4, delay_s=0.15)).start()
    folder = tmp_path / "live"
    folder.mkdir()
    watcher = start_watcher(folder)
    try:
        runtime = run_delegation_loop(folder, llm, background=True)
        wait_until(lambda: Event.objects.filter(run__experiment__slug="watched").count() >= 3)
        watcher.send_signal(signal.SIGKILL)
        watcher.wait()
        watcher = start_watcher(folder)
        runtime.wait(timeout=120)
        assert runtime.returncode == 0
        wait_until(lambda: Run.objects.filter(experiment__slug="watched", depth=0).exclude(status="running").exists())
        # Let the restarted watcher catch up with the last appended lines, then stop it.
        time.sleep(2)
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=20)
        llm.stop()
    awp_import(str(folder), "--experiment", "oneshot")
    watched, oneshot = ledger("watched"), ledger("oneshot")
    assert watched == oneshot, sorted(watched ^ oneshot)[:4]
    assert len(oneshot) > 20
    seqs = list(Event.objects.filter(run__experiment__slug="watched", run__depth=0).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
