"""Memory models: long-term MEMORY.md versions (more tiers are added by the memory capability)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

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
