"""Keep MemoryChunk rows (the search corpus of every tier) in step with the memory they were cut from.

Chunks are written without a vector in the same transaction as their source; `awp_embed` fills vectors
later, off the request path.
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from experiments.models import Experiment
from memory.documents import split_sections
from memory.models import MemoryChunk, MemoryDocument


def upsert_chunk(
    *,
    experiment: Experiment,
    tier: str,
    ref_key: str,
    source: str,
    content: str,
    agent_id: str = "",
    occurred_at: datetime | None = None,
    is_archived: bool = False,
) -> MemoryChunk:
    """Create or refresh one chunk; changed content drops the stale vector so it is embedded again."""
    chunk = MemoryChunk.objects.filter(experiment=experiment, ref_key=ref_key).first()
    if chunk is None:
        return MemoryChunk.objects.create(
            experiment=experiment, tier=tier, ref_key=ref_key, source=source, content=content,
            agent_id=agent_id, occurred_at=occurred_at, is_archived=is_archived,
        )  # fmt: skip
    changed = chunk.content != content
    chunk.tier, chunk.source, chunk.content = tier, source, content
    chunk.agent_id, chunk.occurred_at, chunk.is_archived = agent_id, occurred_at, is_archived
    if changed:
        chunk.embedding, chunk.model_name, chunk.embedded_at = None, "", None
    chunk.save()
    return chunk


@transaction.atomic
def sync_long_term_chunks(*, experiment: Experiment, document: MemoryDocument | None) -> int:
    """Make the long-term chunks mirror the sections of `document` (the current version); returns their count."""
    sections = split_sections(document.content) if document else []
    keys = set()
    for section in sections:
        key = f"lt:{section.key}"
        keys.add(key)
        upsert_chunk(
            experiment=experiment,
            tier=MemoryChunk.Tier.LONG_TERM,
            ref_key=key,
            source=f"MEMORY.md v{document.version}" + (f" § {section.heading}" if section.heading else ""),
            content=section.content,
            agent_id=document.author_label,
            occurred_at=document.created_at,
        )
    stale = MemoryChunk.objects.filter(experiment=experiment, tier=MemoryChunk.Tier.LONG_TERM).exclude(ref_key__in=keys)
    stale.delete()
    return len(keys)
