"""Keep MemoryChunk rows (the search corpus of every tier) in step with the memory they were cut from.

Chunks are written without a vector in the same transaction as their source; `awp_embed` fills vectors
later, off the request path.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from experiments.models import Experiment
from memory.documents import split_sections
from memory.models import MemoryChunk, MemoryDocument
from state.secrets import learn_from_text
from state.services_redaction import redact_text_for


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
    """Create or refresh one chunk; changed content drops the stale vector so it is embedded again.

    The chunk is the searchable, embeddable derivative of memory: its text is learnt from (known secrets) and
    masked before it is stored, so no snippet, highlight or vector is ever made from a secret.
    """
    learn_from_text(experiment=experiment, text=content)
    content = redact_text_for(experiment, content)
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
        assert document is not None
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


def remask_chunks(experiment_id: int, values: list[str]) -> int:
    """Mask newly learnt secrets in chunks stored before they were known (their vectors are made again)."""
    stale = MemoryChunk.objects.filter(experiment_id=experiment_id)
    matching = MemoryChunk.objects.none()
    for value in values:
        matching = matching | stale.filter(content__contains=value)
    count = 0
    for chunk in matching.select_related("experiment"):
        content = redact_text_for(chunk.experiment, chunk.content)
        if content != chunk.content:
            MemoryChunk.objects.filter(pk=chunk.pk).update(content=content, embedding=None, model_name="", embedded_at=None)
            count += 1
    return count


def embed_pending_chunks(
    *, experiment: Experiment | None = None, batch_size: int = 64, on_batch: Callable[[int], None] | None = None
) -> int:
    """Embed every chunk lacking a vector of the current model, batch by batch; returns how many were embedded.

    A chunk embedded by another model counts as pending, so a model change re-embeds everything and search
    (which filters on the current model name) never compares two vector spaces.
    """
    from memory import embeddings

    model = embeddings.current_model_name()
    pending = MemoryChunk.objects.pending(model)
    if experiment is not None:
        pending = pending.filter(experiment=experiment)
    done = 0
    last_pk = 0
    while True:
        batch = list(pending.filter(pk__gt=last_pk).order_by("pk").only("pk", "content")[:batch_size])
        if not batch:
            return done
        vectors = embeddings.embed_texts([chunk.content for chunk in batch])
        now = timezone.now()
        for chunk, vector in zip(batch, vectors, strict=True):
            # Guarded by content: a chunk edited while we embedded keeps its NULL vector for the next pass.
            MemoryChunk.objects.filter(pk=chunk.pk, content=chunk.content).update(
                embedding=vector, model_name=model, embedded_at=now
            )
        done += len(batch)
        last_pk = batch[-1].pk
        if on_batch:
            on_batch(len(batch))


def pending_count(*, experiment: Experiment | None = None) -> int:
    """Chunks still waiting for a vector of the current model."""
    from memory import embeddings

    pending = MemoryChunk.objects.pending(embeddings.current_model_name())
    return (pending.filter(experiment=experiment) if experiment is not None else pending).count()
