"""Write promoted memory back into the AWP workflow folder, so the next real run is primed with it.

Runs after the promotion's transaction committed (on_commit), so a failing disk never loses a promotion;
a failure is recorded on a WritebackAttempt and retried (next promotion, or `awp_curate --retry-writeback`).
Each write-back is a full sync of the current state, so a retry needs nothing but the experiment.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from awp_site.live import announce_experiment_changed
from experiments.models import Experiment
from memory.curation.models import Proposal, WritebackAttempt
from memory.curation.render import merge_memory_md, one_line, remove_promoted, sync_facts_files
from memory.longterm import current_long_term

FACTS_WINDOW_DAYS = 7  # the runtime's PRIOR RUN MEMORY only reads facts files this recent
RETRY_BASE_SECONDS = 30
RETRY_MAX_SECONDS = 3600


class WritebackError(Exception):
    """The workflow folder cannot be written (gone, not a directory, no permission, disk full)."""


def atomic_write(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file in the same folder and os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _promoted_facts(experiment: Experiment, withheld: frozenset[int] = frozenset()) -> tuple[list[tuple[str, str]], set[str], list[int | str]]:
    """Facts files: (run_id, text) to have, texts to take out (those the reviewers rejected, retracted
    or replaced by an edit (or a newer pool version), and those a trial withholds from the next run), and the
    ids of the promoted facts written."""
    promoted: list[tuple[str, str]] = []
    removed: set[str] = set()
    carried: list[int | str] = []  # promoted fact ids, then the labels of the pool facts written
    proposals = experiment.proposals.filter(kind=Proposal.Kind.FACT).exclude(status=Proposal.Status.PENDING)
    for proposal in proposals.prefetch_related("evidence", "facts").order_by("decided_at", "pk"):
        if proposal.status == Proposal.Status.APPROVED and proposal.pk not in withheld:
            first = next((e.run_ref for e in proposal.evidence.all() if e.run_ref), "dashboard")
            promoted.append((first, proposal.promoted_text))
            carried.append(proposal.pk)
            removed.add(one_line(proposal.text))
            removed |= {one_line(fact.text) for fact in proposal.facts.all()}
        elif proposal.origin == Proposal.Origin.RUNTIME or proposal.status == Proposal.Status.RETRACTED or proposal.pk in withheld:
            removed |= {one_line(proposal.text)} | {one_line(fact.text) for fact in proposal.facts.all()}
    from pool.shared import pool_statements, subscribed_facts

    # Subscribed pool facts reach the runtime's PRIOR RUN MEMORY through the facts files too (newest version only).
    shared = subscribed_facts(experiment)
    promoted += [(fact.label, fact.statement) for fact in shared]
    carried += [fact.label for fact in shared]
    removed |= {one_line(text) for text in pool_statements(experiment)}
    removed -= {one_line(text) for _, text in promoted}
    return promoted, removed, carried


@dataclass(frozen=True)
class Synced:
    """What one sync wrote: the files, the MEMORY.md text, its version and the promoted facts it carries."""

    written: list[str]
    memory_text: str
    memory_version: int | None
    carried: list[int | str]


def sync_workspace(experiment: Experiment, *, previously_written: str, withheld: frozenset[int] = frozenset()) -> Synced:
    """Write workspace/MEMORY.md and memory/facts/*.md, leaving out the facts a trial withholds from the next run."""
    root = Path(experiment.workspace_path)
    if not root.is_dir():
        raise WritebackError(f"The workflow folder {root} does not exist (or is not a folder).")
    written: list[str] = []
    document = current_long_term(experiment)
    ours = document.content if document else ""
    for proposal_id in withheld:
        ours = remove_promoted(ours, proposal_id)
    memory_path = root / "workspace" / "MEMORY.md"
    disk = memory_path.read_text(encoding="utf-8", errors="replace") if memory_path.exists() else None
    memory_text = merge_memory_md(disk, ours, previously_written)
    if disk != memory_text:
        atomic_write(memory_path, memory_text)
        written.append("workspace/MEMORY.md")
    facts_dir = root / "memory" / "facts"
    files = {p.stem: p.read_text(encoding="utf-8", errors="replace") for p in facts_dir.glob("*.md")} if facts_dir.is_dir() else {}
    today = timezone.now().date()
    window = [(today - timedelta(days=n)).isoformat() for n in range(FACTS_WINDOW_DAYS)]
    promoted, removed, carried = _promoted_facts(experiment, withheld)
    for day, text in sync_facts_files(files, today=today.isoformat(), window=window, promoted=promoted, removed=removed).items():
        atomic_write(facts_dir / f"{day}.md", text)
        written.append(f"memory/facts/{day}.md")
    return Synced(written, memory_text, document.version if document else None, carried)


def _last_written(experiment: Experiment) -> str:
    last = experiment.writeback_attempts.filter(status=WritebackAttempt.Status.OK).order_by("-updated_at", "-pk").first()
    return last.memory_content if last else ""


def _attempt(attempt: WritebackAttempt) -> WritebackAttempt:
    experiment = attempt.experiment
    attempt.attempts += 1
    try:
        from memory.exposure import withheld_for_next_run

        withheld = frozenset(withheld_for_next_run(experiment))
        synced = sync_workspace(experiment, previously_written=_last_written(experiment), withheld=withheld)
    except (OSError, WritebackError) as exc:
        delay = min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** (attempt.attempts - 1))
        attempt.status = WritebackAttempt.Status.FAILED
        attempt.error = f"{type(exc).__name__}: {exc}"[:2000]
        attempt.next_retry_at = timezone.now() + timedelta(seconds=delay)
        attempt.save()
    else:
        attempt.status = WritebackAttempt.Status.OK
        attempt.error = ""
        attempt.next_retry_at = None
        attempt.written_files = synced.written
        attempt.memory_content = synced.memory_text
        attempt.memory_version = synced.memory_version
        attempt.carried = synced.carried
        attempt.save()
        # A successful full sync also carries whatever earlier failed attempts meant to write.
        experiment.writeback_attempts.filter(status=WritebackAttempt.Status.FAILED).exclude(pk=attempt.pk).update(
            status=WritebackAttempt.Status.SUPERSEDED, next_retry_at=None
        )
    transaction.on_commit(lambda: announce_experiment_changed(experiment_id=experiment.pk, what="review"))
    return attempt


@transaction.atomic
def write_back(*, experiment_id: int, trigger: str) -> WritebackAttempt | None:
    """Sync the experiment's promoted memory into its workflow folder now; the outcome is recorded."""
    experiment = Experiment.objects.select_for_update().filter(pk=experiment_id).first()
    if experiment is None or not (experiment.writeback_enabled and experiment.workspace_path):
        return None
    attempt = WritebackAttempt.objects.create(experiment=experiment, trigger=trigger[:32])
    return _attempt(attempt)


def latest_failure(experiment: Experiment) -> WritebackAttempt | None:
    """The write-back failure to show on the experiment (None when the last write-back succeeded)."""
    latest = experiment.writeback_attempts.exclude(status=WritebackAttempt.Status.SUPERSEDED).first()
    return latest if latest is not None and latest.status == WritebackAttempt.Status.FAILED else None


def retry_due(*, now: object = None, force: bool = False) -> list[WritebackAttempt]:
    """Retry every failed write-back whose next retry time has come (all of them with `force`)."""
    due = WritebackAttempt.objects.filter(status=WritebackAttempt.Status.FAILED)
    if not force:
        due = due.filter(next_retry_at__lte=now or timezone.now())
    results: list[WritebackAttempt] = []
    for attempt_id in due.order_by("experiment_id", "-created_at").values_list("pk", flat=True):
        with transaction.atomic():
            attempt = WritebackAttempt.objects.select_for_update().select_related("experiment").filter(pk=attempt_id).first()
            if attempt is None or attempt.status != WritebackAttempt.Status.FAILED:
                continue
            experiment = attempt.experiment
            if not (experiment.writeback_enabled and experiment.workspace_path):
                continue
            results.append(_attempt(attempt))
    return results
