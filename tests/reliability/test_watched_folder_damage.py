"""A watched folder damaged under a running `awp_watch`: truncated JSONL, JSON rewritten in place or garbled →
problem records shown on the run page; the watcher keeps running and still ingests the next real run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from experiments.models import Event, IngestProblem, Run
from tests.awp_runtime import run_delegation_loop
from tests.conftest import ROOT, subprocess_env
from tests.factories import make_experiment, make_member
from tests.proofkit import wait_until

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]


def start_watcher(folder: Path, slug: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "awp_watch", str(folder), "--experiment", slug, "--interval", "0.2"],
            cwd=ROOT,
            env=subprocess_env(AWP_EMBEDDER="none"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def problem_codes(slug: str) -> set[str]:
    return set(IngestProblem.objects.filter(experiment__slug=slug).values_list("code", flat=True))


def test_truncated_and_rewritten_files_become_problems_and_the_watcher_goes_on(tmp_path, fake_llm):
    experiment = make_experiment(slug="damaged")
    viewer = make_member(experiment, "viewer")
    folder = tmp_path / "wf"
    run_delegation_loop(folder, fake_llm)
    watcher = start_watcher(folder, experiment.slug, tmp_path / "watch.log")
    try:
        wait_until(lambda: Event.objects.filter(run__experiment=experiment, kind="run.complete").exists(), timeout=60, what="first run imported")
        first = Run.objects.get(experiment=experiment)
        before = Event.objects.filter(run=first).count()

        board = next((folder / "workspace" / "blackboard").glob("*.jsonl"))
        with board.open("r+b") as handle:  # truncated in place (same inode), shorter than what was read
            handle.truncate(max(1, board.stat().st_size // 3))
        completion = next((folder / "workspace" / "runs").glob("*/run_completion.json"))
        completion.write_text(completion.read_text().replace('"complete"', '"rewritten-status"'))  # in place
        decision = next((folder / "workspace" / "runs").glob("*/iterations/001/manager_decision.json"))
        decision.write_text('{"decision": "delegate", "reasoning": ')  # garbled, half a JSON document

        wait_until(lambda: {"file_truncated", "file_rewritten"} <= problem_codes(experiment.slug), timeout=30, what="problems recorded")
        assert watcher.poll() is None, (tmp_path / "watch.log").read_text()[-3000:]
        # The ledger keeps what it had: no event was deleted or changed by the damage.
        assert Event.objects.filter(run=first).count() >= before
        assert Run.objects.get(pk=first.pk).status != "rewritten-status"

        # The watcher is still useful: the next real run in the same folder goes in completely.
        run_delegation_loop(folder, fake_llm)
        wait_until(lambda: Event.objects.filter(run__experiment=experiment, kind="run.complete").count() == 2, timeout=60, what="second run")
        assert watcher.poll() is None

        browser = Client()
        browser.force_login(viewer)
        page = browser.get(f"{first.get_absolute_url()}problems/").content.decode()
        assert "file_truncated" in page or "shrank" in page
        assert "file_rewritten" in page or "changed after it was ingested" in page
    finally:
        watcher.terminate()
        try:
            watcher.wait(timeout=10)
        except subprocess.TimeoutExpired:
            watcher.kill()
