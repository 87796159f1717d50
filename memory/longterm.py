"""Services for the long-term tier: every change is a new MEMORY.md version."""

from __future__ import annotations

import copy
from typing import Any

from django.db import transaction

from experiments.models import Experiment
from memory.chunks import sync_long_term_chunks
from memory.documents import DiffLine, diff_lines
from memory.models import MemoryDocument


def current_long_term(experiment: Experiment, *, run_id: str = "", agent_id: str = "", channel: str = "read") -> MemoryDocument | None:
    """The newest MEMORY.md version of the experiment, or None before the first.

    With `run_id`, the version as that run is given it (an unsaved copy without the facts its trial arm
    withholds), recorded as the run's exposure through `channel` (read, or mcp for the MCP tools)."""
    document = experiment.memory_documents.order_by("-version").first()
    if document is None or not run_id:
        return document
    shown = copy.copy(document)  # never saved: one run's view of this version
    shown.content = long_term_for_run(experiment, document, run_id=run_id, agent_id=agent_id, channel=channel)
    return shown


@transaction.atomic
def write_long_term_version(
    *,
    experiment: Experiment,
    content: str,
    reason: str,
    source: str = MemoryDocument.Source.EDIT,
    author: Any = None,
    author_label: str = "",
) -> MemoryDocument:
    """Add a new MEMORY.md version (versions are numbered 1, 2, … per experiment without gaps)."""
    # Lock the experiment row so two writers never pick the same version number.
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    latest = current_long_term(experiment)
    version = (latest.version if latest else 0) + 1
    document = MemoryDocument.objects.create(
        experiment=experiment,
        version=version,
        content=content,
        reason=reason,
        source=source,
        author=author if getattr(author, "is_authenticated", False) else None,
        author_label=author_label or (author.get_username() if getattr(author, "is_authenticated", False) else ""),
    )
    sync_long_term_chunks(experiment=experiment, document=document)
    return document


def long_term_for_run(experiment: Experiment, document: MemoryDocument, *, run_id: str = "", agent_id: str = "", channel: str = "read") -> str:
    """MEMORY.md as run `run_id` is given it: without the facts its trial arm withholds; recorded as its exposure."""
    if not run_id:
        return document.content
    from memory import exposure
    from memory.curation.render import remove_promoted

    run = exposure.run_named(experiment, run_id)
    content = document.content
    for proposal_id in exposure.withheld_for_run(experiment, run):
        content = remove_promoted(content, proposal_id)
    exposure.record_served(experiment=experiment, run=run, channel=channel, agent_id=agent_id, text=content, memory_version=document.version)
    return content


def long_term_history(experiment: Experiment) -> list[MemoryDocument]:
    """Every version, newest first."""
    return list(experiment.memory_documents.select_related("author").order_by("-version"))


def get_long_term_version(experiment: Experiment, version: int) -> MemoryDocument | None:
    return experiment.memory_documents.filter(version=version).first()


def diff_long_term(experiment: Experiment, old: int, new: int) -> list[DiffLine] | None:
    """The line diff from version `old` to version `new`, or None when either does not exist."""
    documents = {d.version: d for d in experiment.memory_documents.filter(version__in=[old, new])}
    if old not in documents or new not in documents:
        return None
    return diff_lines(documents[old].content, documents[new].content)


@transaction.atomic
def restore_long_term_version(*, experiment: Experiment, version: int, author: Any = None) -> MemoryDocument:
    """Bring back an old version's text as a new version (history is never rewritten)."""
    old = get_long_term_version(experiment, version)
    if old is None:
        raise LookupError(f"MEMORY.md has no version {version}.")
    return write_long_term_version(
        experiment=experiment,
        content=old.content,
        reason=f"restore of v{version}",
        source=MemoryDocument.Source.RESTORE,
        author=author,
    )


def _written_back(experiment: Experiment, content: str) -> bool:
    from memory.curation.models import WritebackAttempt

    recent = experiment.writeback_attempts.filter(status=WritebackAttempt.Status.OK).order_by("-updated_at", "-pk")
    return any(text == content for text in recent.values_list("memory_content", flat=True)[:50])


@transaction.atomic
def import_long_term(*, experiment: Experiment, content: str, relpath: str = "workspace/MEMORY.md") -> MemoryDocument | None:
    """Import a workspace MEMORY.md: a new version only when the text differs from the current one."""
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    current = current_long_term(experiment)
    if current is not None and current.content == content:
        return None
    if _written_back(experiment, content):
        return None  # our own write-back coming back (a trial arm's MEMORY.md differs from the current version)
    return write_long_term_version(
        experiment=experiment,
        content=content,
        reason=f"import of {relpath}",
        source=MemoryDocument.Source.IMPORT,
        author_label="importer",
    )
