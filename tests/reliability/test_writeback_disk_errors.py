"""Disk-full-like errors during write-back: the promotion is kept, nothing half-written is left, a retry completes.

The curation part's own tests cover a missing folder and a directory in MEMORY.md's place; these add the
disk running out of space in the middle of a write (ENOSPC at fsync, after the temp file exists), once on
the first file and once on the second file of the same sync, and the retry through `awp_curate`.
"""

from __future__ import annotations

import errno
import io
import json
import os

import pytest
from django.core.management import call_command

from memory.curation import writeback
from memory.curation.models import Fact, Proposal, WritebackAttempt
from memory.curation.services import review_proposal
from memory.longterm import current_long_term

pytestmark = pytest.mark.django_db
RUNTIME_MEMORY = "# Memory\n- a note the runtime wrote and nobody may clobber\n"


class DiskFills:
    """Stands in for the `os` module inside writeback: fsync fails with ENOSPC for the chosen calls."""

    def __init__(self, fail_on: set[int]) -> None:
        self.calls, self.fail_on = 0, fail_on

    def fsync(self, fd: int) -> None:
        self.calls += 1
        if self.calls in self.fail_on:
            raise OSError(errno.ENOSPC, "No space left on device")
        os.fsync(fd)

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


@pytest.fixture
def workflow(tmp_path, experiment):  # type: ignore[no-untyped-def]
    folder = tmp_path / "wf"
    (folder / "workspace").mkdir(parents=True)
    (folder / "workspace" / "MEMORY.md").write_text(RUNTIME_MEMORY)
    experiment.workspace_path = str(folder)
    experiment.writeback_enabled = True
    experiment.save()
    return folder


def proposal(experiment, text: str) -> Proposal:  # type: ignore[no-untyped-def]
    return Proposal.objects.create(experiment=experiment, kind="fact", key=text[:16], text=text)


def retry_now() -> dict[str, int]:
    out = io.StringIO()
    call_command("awp_curate", "--retry-writeback", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


@pytest.mark.parametrize("failing_write", [1, 2], ids=["first-file", "second-file"])
def test_disk_full_mid_write_keeps_the_promotion_and_the_retry_completes(
    experiment, curator, workflow, monkeypatch, django_capture_on_commit_callbacks, failing_write
):
    fact = "FACT_DISK: 42 survives a full disk."
    item = proposal(experiment, fact)
    disk = DiskFills({failing_write})
    monkeypatch.setattr(writeback, "os", disk)
    with django_capture_on_commit_callbacks(execute=True):
        review_proposal(proposal=item, reviewer=curator, verdict="approve")

    attempt = WritebackAttempt.objects.get()
    assert attempt.status == "failed" and "No space left" in attempt.error and attempt.next_retry_at
    # The promotion is in the database whatever the disk did.
    assert Proposal.objects.get(pk=item.pk).status == "approved"
    assert Fact.objects.filter(proposal=item, version=1).exists()
    document = current_long_term(experiment)
    assert document is not None and fact in document.content
    # Atomic writes: no temp file left, and a file is either untouched or complete, never half-written.
    assert not [p for p in workflow.rglob("*") if p.name.endswith(".tmp")]
    memory = (workflow / "workspace" / "MEMORY.md").read_text()
    assert memory == RUNTIME_MEMORY or (fact in memory and "nobody may clobber" in memory)
    if failing_write == 1:
        assert memory == RUNTIME_MEMORY

    monkeypatch.setattr(writeback, "os", os)  # space freed
    summary = retry_now()
    assert summary["writeback_retried"] == 1 and summary["writeback_failed"] == 0
    attempt.refresh_from_db()
    assert attempt.status == "ok" and attempt.attempts == 2
    memory = (workflow / "workspace" / "MEMORY.md").read_text()
    assert fact in memory and "nobody may clobber" in memory
    facts = "".join(p.read_text() for p in (workflow / "memory" / "facts").glob("*.md"))
    assert fact in facts
    assert writeback.latest_failure(experiment) is None


def test_a_disk_that_stays_full_keeps_failing_with_growing_delays_and_loses_nothing(
    experiment, curator, workflow, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setattr(writeback, "os", DiskFills(set(range(1, 100))))
    first, second = proposal(experiment, "FACT_ONE: first."), proposal(experiment, "FACT_TWO: second.")
    for item in (first, second):
        with django_capture_on_commit_callbacks(execute=True):
            review_proposal(proposal=item, reviewer=curator, verdict="approve")
    delays = []
    for _ in range(3):
        retry_now()
        failed = WritebackAttempt.objects.filter(status="failed").order_by("-attempts").first()
        assert failed is not None
        delays.append((failed.next_retry_at - failed.updated_at).total_seconds())
    assert delays == sorted(delays) and delays[-1] > delays[0], delays  # backoff, not a hot loop
    assert set(Proposal.objects.values_list("status", flat=True)) == {"approved"}
    monkeypatch.setattr(writeback, "os", os)
    retry_now()
    memory = (workflow / "workspace" / "MEMORY.md").read_text()
    assert "FACT_ONE" in memory and "FACT_TWO" in memory and "nobody may clobber" in memory
