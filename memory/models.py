"""Memory models: long-term MEMORY.md versions, working entries, notes, searchable chunks, the access audit."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from experiments.models import Experiment


class MemoryDocument(models.Model):
    """One version of an experiment's long-term MEMORY.md; versions are only ever added."""

    class Source(models.TextChoices):
        EDIT = "edit"
        PROMOTION = "promotion"
        RETRACTION = "retraction"
        IMPORT = "import"
        RESTORE = "restore"
        AGENT = "agent"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memory_documents")
    version = models.PositiveIntegerField()
    content = models.TextField(blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    author_label = models.CharField(max_length=200, blank=True, help_text="agent id or importer when no user")
    reason = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.EDIT)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["experiment", "-version"]
        constraints = [models.UniqueConstraint(fields=["experiment", "version"], name="memory_document_version_unique")]

    def __str__(self) -> str:
        return f"{self.experiment.slug} MEMORY.md v{self.version}"


class MemoryEntryQuerySet(models.QuerySet["MemoryEntry"]):
    def visible(self, *, include_archived: bool = False) -> MemoryEntryQuerySet:
        """Entries shown by default: archived ones (past retention) are kept but hidden."""
        return self if include_archived else self.filter(is_archived=False)


class MemoryEntry(models.Model):
    """One entry of the working tier (a daily log `workspace/memory/YYYY-MM-DD.md`); entries are only appended."""

    class Source(models.TextChoices):
        IMPORT = "import"  # read from a workspace daily log file
        API = "api"  # memory.write target=daily through the memory API
        AUTO = "auto"  # auto-logged from an ingested worker result
        EVENT = "event"  # a pushed memory.write event

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memory_entries")
    day = models.DateField()
    time = models.TimeField(null=True, blank=True)
    agent_id = models.CharField(max_length=200, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    content = models.TextField()
    run = models.ForeignKey("experiments.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    source_ref = models.CharField(max_length=500, blank=True, help_text="file path or event reference")
    dedupe_key = models.CharField(max_length=300)
    is_archived = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MemoryEntryQuerySet.as_manager()

    class Meta:
        ordering = ["experiment", "day", "time", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "dedupe_key"], name="memory_entry_dedupe_unique"),
        ]
        indexes = [models.Index(fields=["experiment", "day"]), models.Index(fields=["experiment", "agent_id"])]
        verbose_name_plural = "memory entries"

    def __str__(self) -> str:
        return f"{self.day} {self.time or ''} {self.agent_id}".strip()


class Note(models.Model):
    """A short-term note by a person; only its author edits it."""

    class Kind(models.TextChoices):
        NOTE = "note"
        OBSERVATION = "observation"
        FINDING = "finding"
        DECISION = "decision"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memory_notes")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_notes")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.NOTE)
    content = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["experiment", "-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} by {self.author_id}"

    def is_editable_by(self, user: object) -> bool:
        return getattr(user, "pk", None) == self.author_id


EMBEDDING_DIMENSIONS = 384


class MemoryChunkQuerySet(models.QuerySet["MemoryChunk"]):
    def pending(self, model_name: str) -> MemoryChunkQuerySet:
        """Chunks without a vector of `model_name` (never embedded, or embedded by another model)."""
        return self.filter(models.Q(embedding__isnull=True) | ~models.Q(model_name=model_name))

    def of_model(self, model_name: str) -> MemoryChunkQuerySet:
        """Only vectors of one model: two models' vector spaces are never compared."""
        return self.filter(model_name=model_name, embedding__isnull=False)


class MemoryChunk(models.Model):
    """A searchable piece of one experiment's memory (any tier), with its embedding once embedded."""

    class Tier(models.TextChoices):
        LONG_TERM = "long_term"
        WORKING = "working"
        EPISODIC = "episodic"
        NOTES = "notes"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memory_chunks")
    tier = models.CharField(max_length=16, choices=Tier.choices)
    ref_key = models.CharField(max_length=300, help_text="what the chunk was cut from, unique per experiment")
    source = models.CharField(max_length=500, help_text="where a reader finds it (file, version, run)")
    content = models.TextField()
    agent_id = models.CharField(max_length=200, blank=True)
    occurred_at = models.DateTimeField(null=True, blank=True)
    is_archived = models.BooleanField(default=False)
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS, null=True, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    embedded_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = MemoryChunkQuerySet.as_manager()

    class Meta:
        ordering = ["experiment", "pk"]
        constraints = [models.UniqueConstraint(fields=["experiment", "ref_key"], name="memory_chunk_ref_unique")]
        indexes = [
            models.Index(fields=["experiment", "tier"]),
            models.Index(fields=["model_name"]),
            HnswIndex(
                name="memory_chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tier}:{self.ref_key}"


class AccessAudit(models.Model):
    """Every memory write and every denied memory call, for the Memory tab's audit list."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memory_audits")
    agent_id = models.CharField(max_length=200, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    token = models.ForeignKey("experiments.ApiToken", null=True, blank=True, on_delete=models.SET_NULL)
    tier = models.CharField(max_length=16)
    action = models.CharField(max_length=16, help_text="read | write | search")
    allowed = models.BooleanField()
    detail = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["experiment", "-created_at"]
        indexes = [models.Index(fields=["experiment", "-created_at"])]

    def __str__(self) -> str:
        verdict = "allowed" if self.allowed else "denied"
        return f"{self.action} {self.tier} by {self.agent_id or self.user_id}: {verdict}"


class Episode(models.Model):
    """One recallable episode of an experiment's agents, projected from the ledger (or a finished reflection)."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="episodes")
    # No index of its own: (run, turn) below serves every look-up by run, and alone it tempted the planner into
    # reading a whole run where recall wants its last turns.
    run = models.ForeignKey("experiments.Run", null=True, blank=True, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=100, help_text="ev:<run pk>:<seq> for ledger events, refl:<id> for reflections")
    agent_id = models.CharField(max_length=200, blank=True, help_text="the producer; empty for run-level events")
    kind = models.CharField(max_length=64)
    turn = models.IntegerField(default=0, help_text="iteration (delegation loop) or DAG step within the run")
    is_public = models.BooleanField(default=False, help_text="part of the public record every agent sees")
    fields = models.JSONField(null=True, blank=True, help_text="the structured output, as stored in the ledger")
    text = models.TextField(help_text="the content its producer recalls (key-redacted when projected)")
    words = ArrayField(models.TextField(), default=list, blank=True, help_text="the word set of text (keyword relevance in SQL)")
    reflection = models.ForeignKey("Reflection", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    occurred_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment", "run", "turn", "pk"]
        constraints = [models.UniqueConstraint(fields=["experiment", "key"], name="episode_key_unique")]
        indexes = [
            models.Index(fields=["experiment", "agent_id", "kind"]),
            models.Index(fields=["experiment", "is_public"]),
            models.Index(fields=["run", "turn"]),
            # Recall reads only what can still rank: the latest turns of each run through (run, turn), older
            # episodes sharing a query word through the word sets; the agent list is a skip scan over the
            # producers of private episodes.
            GinIndex(fields=["words"], name="episode_words_gin"),
            models.Index(fields=["experiment", "agent_id"], condition=models.Q(is_public=False), name="episode_private_agent"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} by {self.agent_id or 'run'} ({self.key})"


class Reflection(models.Model):
    """One request to compact an agent's recent episodes into a belief, with its provenance and outcome."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="reflections")
    agent_id = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    trigger = models.CharField(max_length=16, help_text="every | manual | command")
    seen = models.PositiveIntegerField(default=0, help_text="episodes the agent had seen when this was asked")
    episode_keys = models.JSONField(default=list, help_text="the episodes compacted (provenance)")
    model = models.CharField(max_length=200, blank=True)
    prompt = models.JSONField(default=list, help_text="the chat messages sent, masked")
    answer = models.TextField(blank=True, help_text="the endpoint's raw answer, masked")
    belief = models.TextField(blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    proposal = models.ForeignKey("curation.Proposal", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["experiment", "-created_at", "-pk"]
        indexes = [models.Index(fields=["experiment", "agent_id", "status"])]

    def __str__(self) -> str:
        return f"reflection of {self.agent_id} ({self.status})"
