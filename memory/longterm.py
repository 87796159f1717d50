"""Services for the long-term tier: every change is a new MEMORY.md version."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from experiments.models import Experiment
from memory.models import MemoryDocument


def current_long_term(experiment: Experiment) -> MemoryDocument | None:
    """The newest MEMORY.md version of the experiment, or None before the first."""
    return experiment.memory_documents.order_by("-version").first()


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
    return MemoryDocument.objects.create(
        experiment=experiment,
        version=version,
        content=content,
        reason=reason,
        source=source,
        author=author if getattr(author, "is_authenticated", False) else None,
        author_label=author_label or (author.get_username() if getattr(author, "is_authenticated", False) else ""),
    )
