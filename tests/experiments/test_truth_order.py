"""Real runs (awp-agents against the fake LLM), copied so that mtimes run against the execution order:
blame names the agent that made each change, and an imported run reads in the order things happened."""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from experiments.importer import FolderImporter
from experiments.models import Event, IngestProblem, Run
from experiments.watch import watch_folders
from state.config import RUNTIME_KEYS
from state.models import RuleViolation, StateDelta
from state.services import state_at_seq
from tests.awp_runtime import FakeLLM, Script, run_dag, run_delegation_loop
from tests.factories import make_member, make_token

pytestmark = [pytest.mark.interop, pytest.mark.django_db]

# Names that sort against the order the DAG runs them in.
EXECUTION = ["zed_scout", "mid_builder", "alpha_judge"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Iterator[dict[str, Path]]:  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("truth-order")
    llm = FakeLLM(Script(iterations=2, workers=["fact_collector", "verifier"])).start()
    try:
        run_dag(base / "dag", llm, agents=EXECUTION)
        run_delegation_loop(base / "loop", llm, trace=True)
    finally:
        llm.stop()
    yield {"dag": base / "dag", "loop": base / "loop"}


def state_files_in_execution_order(folder: Path) -> list[Path]:
    files = list(folder.glob("data/state/*/*.json"))
    return sorted(files, key=lambda p: (p.name == "final.json", json.loads(p.read_text())["timestamp"]))


def copy_against_execution_order(source: Path, target: Path) -> Path:
    """A copy whose state files' mtimes say the last agent ran first (as after a careless copy)."""
    shutil.copytree(source, target)
    newest = time.time()
    for position, path in enumerate(state_files_in_execution_order(target)):
        os.utime(path, (newest - 60 * position, newest - 60 * position))
    return target


def import_folder(folder: Path, slug: str) -> Run:
    call_command("awp_import", str(folder), "--experiment", slug, "--json", stdout=io.StringIO())
    return Run.objects.get(experiment__slug=slug, depth=0)


def history(run: Run, agent: str) -> list[dict]:
    token = make_token(run.experiment, scopes=["memory:read"])
    response = Client().get(
        f"/api/v1/runs/{run.run_id}/state/history", {"path": f"$.{agent}.summary", "experiment": run.experiment.slug}, HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    return response.json()["deltas"]


def assert_blame_follows_the_runtime(run: Run, folder: Path, *, in_order: bool = True) -> None:
    for agent in EXECUTION:
        deltas = history(run, agent)
        assert deltas and {d["agent_id"] for d in deltas} == {agent}, (agent, deltas)
        # Files that arrived out of order still blame the right agent, but the change was first seen in another file.
        assert not in_order or all(d["provenance"].endswith(f"{agent}.json") for d in deltas)
    assert not StateDelta.objects.filter(run=run, op="remove").exists()
    assert not RuleViolation.objects.filter(run=run).exists()
    final = json.loads(next(folder.glob("data/state/*/final.json")).read_text())["state"]
    assert state_at_seq(run=run)[1] == {k: v for k, v in final.items() if k not in RUNTIME_KEYS}


def test_an_imported_dag_blames_each_agent_whatever_the_mtimes(runs, tmp_path):
    folder = copy_against_execution_order(runs["dag"], tmp_path / "copied")
    assert [p.stem for p in sorted(state_files_in_execution_order(folder)[:3], key=lambda p: p.stat().st_mtime)] == EXECUTION[::-1]
    run = import_folder(folder, "dag-copied")
    assert_blame_follows_the_runtime(run, folder)
    snapshots = list(Event.objects.filter(run=run, kind="state.snapshot").order_by("seq").values_list("agent_id", flat=True))
    assert snapshots == [*EXECUTION, "final"]


@pytest.mark.parametrize("arrival", ["execution", "reversed"])
def test_a_watched_dag_blames_each_agent_whichever_order_its_files_arrive_in(runs, tmp_path, arrival):
    source = copy_against_execution_order(runs["dag"], tmp_path / "copied")
    folder = tmp_path / "live"
    shutil.copytree(source, folder, ignore=shutil.ignore_patterns("*.json"))
    (folder / "workflow.awp.yaml").write_text((source / "workflow.awp.yaml").read_text())
    files = state_files_in_execution_order(source)
    agents = files[:3] if arrival == "execution" else files[:3][::-1]
    watcher = FolderImporter(folder, experiment_slug=f"dag-{arrival}", source="watcher", final=False)
    for path in [*agents, files[3]]:  # one file per pass, final.json last
        target = folder / path.relative_to(source)
        shutil.copy2(path, target)
        watcher.sync()
    run = Run.objects.get(experiment__slug=f"dag-{arrival}")
    assert_blame_follows_the_runtime(run, folder, in_order=arrival == "execution")


def test_the_watch_loop_applies_files_seen_in_one_pass_in_the_runtimes_order(runs, tmp_path):
    folder = copy_against_execution_order(runs["dag"], tmp_path / "copied")
    passes: list[int] = []
    watch_folders([folder], experiment_slug="dag-watched", interval=0.05, should_stop=lambda: len(passes) >= 1, on_pass=lambda f, n: passes.append(n))
    run = Run.objects.get(experiment__slug="dag-watched")
    assert_blame_follows_the_runtime(run, folder)


def api_events(run: Run) -> list[dict]:
    user = make_member(run.experiment)
    client = Client()
    client.force_login(user)
    response = client.get(f"/api/v1/runs/{run.run_id}/events", {"limit": 5000, "experiment": run.experiment.slug})
    assert response.status_code == 200, response.content
    return response.json()["events"]


def test_a_finished_loop_run_imported_once_reads_in_time_order(runs, tmp_path):
    folder = tmp_path / "copied"
    shutil.copytree(runs["loop"], folder)
    later = time.time() + 86_400  # a copy made a day later: mtimes say nothing about when things happened
    for path in folder.rglob("*"):
        os.utime(path, (later, later))
    run = import_folder(folder, "loop-once")
    events = api_events(run)
    assert len(events) == run.last_seq > 20
    times = [datetime.fromisoformat(e["ts"]) for e in events]
    assert all(t.utcoffset().total_seconds() == 0 for t in times)  # type: ignore[union-attr]
    assert times == sorted(times), [(e["seq"], e["kind"], e["ts"]) for e in events]
    # Every time comes from the run's own records: none from the copy's mtimes.
    sources = {e["ts_source"] for e in events}
    assert sources <= {"record", "parent"} and "parent" in sources
    # Within the run's own window (log lines keep milliseconds only, hence the slack), nowhere near the copy's day.
    slack = timedelta(seconds=1)
    assert run.started_at - slack <= times[0] and times[-1] <= run.ended_at + slack  # type: ignore[operator]
    assert events[-1]["kind"] in {"run.complete", "log", "metric.budget", "board.post"}
    kinds = [e["kind"] for e in events]
    assert kinds.index("run.start") < kinds.index("iteration.decision") < kinds.index("worker.complete") < kinds.index("run.complete")
    assert max(i for i, k in enumerate(kinds) if k == "board.post") < kinds.index("run.complete")


def test_a_live_loop_run_keeps_arrival_order_and_every_event_has_a_time(tmp_path):
    llm = FakeLLM(Script(iterations=3, delay_s=0.1)).start()
    folder = tmp_path / "live"
    try:
        runtime = run_delegation_loop(folder, llm, background=True)
        watcher = FolderImporter(folder, experiment_slug="loop-live", source="watcher", final=False)
        while runtime.poll() is None:
            if folder.exists():
                watcher.sync()
            time.sleep(0.1)
        assert runtime.returncode == 0
        time.sleep(0.3)
        watcher.sync()
    finally:
        llm.stop()
    run = Run.objects.get(experiment__slug="loop-live", depth=0)
    events = api_events(run)
    assert [e["seq"] for e in events] == list(range(1, run.last_seq + 1)) and run.status != "running"
    assert all(e["ts"] and e["ts_source"] in {"record", "parent", "mtime"} for e in events)
    assert not IngestProblem.objects.filter(run=run).exists()


def test_the_timeline_shows_each_events_time_in_utc(runs, tmp_path, viewer):
    run = import_folder(runs["loop"], "loop-page")
    make_member(run.experiment, user=viewer)
    client = Client()
    client.force_login(viewer)
    html = client.get(run.get_absolute_url()).content.decode()
    first = Event.objects.filter(run=run).order_by("seq").first()
    assert first is not None
    assert "Date and time (UTC)" in html and f'<time datetime="{first.ts.isoformat()}">{first.ts:%Y-%m-%d %H:%M:%S}</time>' in html
    assert "from its iteration" in html

