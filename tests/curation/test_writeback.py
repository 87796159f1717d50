"""Write-back into the AWP workflow folder: atomic files, merge with runtime lines, failures recorded and retried."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memory.curation import writeback
from memory.curation.models import Proposal, WritebackAttempt
from memory.curation.services import curate_run, retract_proposal, review_proposal
from tests.curation.builders import complete, two_iteration_run

pytestmark = pytest.mark.django_db
FACT = "fact_collector: FACT_ALPHA: 42 is even."
OTHER = "fact_collector: FACT_BETA: 42 is odd."


@pytest.fixture
def workflow(tmp_path, experiment):
    folder = tmp_path / "wf"
    (folder / "workspace").mkdir(parents=True)
    experiment.workspace_path = str(folder)
    experiment.writeback_enabled = True
    experiment.save()
    return folder


def _facts_text(folder) -> str:
    return "".join(p.read_text() for p in sorted((folder / "memory" / "facts").glob("*.md")))


def test_promotion_writes_memory_md_and_facts_file_keeping_runtime_lines(experiment, curator, workflow, django_capture_on_commit_callbacks):
    today = timezone.now().date().isoformat()
    (workflow / "memory" / "facts").mkdir(parents=True)
    (workflow / "memory" / "facts" / f"{today}.md").write_text(f"# Facts ({today})\n- [r0] the runtime wrote this\n")
    (workflow / "workspace" / "MEMORY.md").write_text("# Memory\n- agent note from a run\n")
    run, _ = two_iteration_run(experiment, FACT, OTHER)
    curate_run(run=run)
    fact, other = Proposal.objects.order_by("text")
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=other, reviewer=curator, verdict="reject")
    facts = _facts_text(workflow)
    assert f"# Facts ({today})" in facts and "- [r0] the runtime wrote this" in facts
    assert f"- [{run.run_id}] {FACT}" in facts and OTHER not in facts
    memory = (workflow / "workspace" / "MEMORY.md").read_text()
    assert FACT in memory and "- agent note from a run" in memory
    assert not list(workflow.rglob("*.tmp"))
    assert WritebackAttempt.objects.get(trigger="promotion").status == "ok"


def test_retraction_removes_the_fact_from_the_workspace(experiment, curator, workflow, django_capture_on_commit_callbacks):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    proposal = Proposal.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=proposal, reviewer=curator, verdict="approve")
    assert FACT in _facts_text(workflow)
    with django_capture_on_commit_callbacks(execute=True):
        retract_proposal(proposal=proposal, actor=curator)
    assert FACT not in _facts_text(workflow)
    assert FACT not in (workflow / "workspace" / "MEMORY.md").read_text()


def test_failure_is_recorded_never_loses_the_promotion_and_is_retried(experiment, curator, workflow, django_capture_on_commit_callbacks):
    # A directory where MEMORY.md should be makes every write fail, even for root (who ignores permissions).
    blocker = workflow / "workspace" / "MEMORY.md"
    blocker.mkdir()
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=Proposal.objects.get(), reviewer=curator, verdict="approve")
    attempt = WritebackAttempt.objects.get()
    assert attempt.status == "failed" and "IsADirectoryError" in attempt.error and attempt.next_retry_at
    assert Proposal.objects.get().status == "approved"
    assert writeback.latest_failure(experiment) == attempt
    assert writeback.retry_due() == []  # not due yet
    blocker.rmdir()
    writeback.retry_due(now=timezone.now() + timedelta(hours=2))
    attempt.refresh_from_db()
    assert attempt.status == "ok" and attempt.attempts == 2
    assert writeback.latest_failure(experiment) is None
    assert FACT in _facts_text(workflow) and FACT in blocker.read_text()


def test_missing_folder_is_a_recorded_failure_shown_on_the_review_tab(experiment, curator, tmp_path, django_capture_on_commit_callbacks, client):
    experiment.workspace_path = str(tmp_path / "gone")
    experiment.writeback_enabled = True
    experiment.save()
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=Proposal.objects.get(), reviewer=curator, verdict="approve")
    attempt = WritebackAttempt.objects.get()
    assert attempt.status == "failed" and "does not exist" in attempt.error
    client.force_login(curator)
    body = client.get(f"/experiments/{experiment.slug}/review/").content.decode()
    assert 'id="writeback-failure"' in body and "does not exist" in body


def test_awp_curate_command_prints_json_summary(experiment, capsys):
    run, _ = two_iteration_run(experiment, FACT)
    complete(run)
    call_command("awp_curate", "--experiment", experiment.slug)
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    call_command("awp_curate", "--experiment", experiment.slug, "--all")
    second = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (first["proposed"], first["already_known"]) == (1, 0)
    assert (second["proposed"], second["already_known"]) == (0, 1)


def test_run_complete_projector_curates_after_commit(experiment, django_capture_on_commit_callbacks):
    run, _ = two_iteration_run(experiment, FACT)
    with django_capture_on_commit_callbacks(execute=True):
        complete(run)
    assert Proposal.objects.filter(kind="fact").count() == 1
    assert run.curation.proposed == 1
