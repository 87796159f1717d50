"""State projections of the ledger: deltas with provenance and outcome, snapshots, the head, violations, reveals.

All of it can be rebuilt from the ledger (`state.services.rebuild_state`), so none of it is append-only.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from experiments.models import Run


class StateDeltaQuerySet(models.QuerySet["StateDelta"]):
    def applied(self) -> StateDeltaQuerySet:
        """Deltas that changed the state (replay reads only these)."""
        return self.filter(outcome__in=StateDelta.WRITTEN)

    def for_path(self, run: Run, path: str) -> StateDeltaQuerySet:
        """Every delta of a run at `path` (normalized), oldest first: blame for one path."""
        return self.filter(run=run, path=path).order_by("seq", "index")


class StateDelta(models.Model):
    """One change to a run's state, as proposed by an agent, and what became of it."""

    class Outcome(models.TextChoices):
        APPLIED = "applied"
        CLIPPED = "clipped"
        MERGED = "merged"
        LOST = "lost"
        REFUSED = "refused"

    WRITTEN = (Outcome.APPLIED, Outcome.CLIPPED)

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="state_deltas")
    seq = models.BigIntegerField(help_text="ledger seq of the event that carried the delta")
    index = models.PositiveIntegerField(default=0, help_text="position within that event")
    agent_id = models.CharField(max_length=200)
    round = models.IntegerField(default=0)
    weight = models.FloatField(default=1.0)
    op = models.CharField(max_length=8)
    path = models.TextField(help_text="normalized JSONPath")
    value = models.JSONField(null=True, blank=True, help_text="the value proposed (clipped when clipped)")
    applied_value = models.JSONField(null=True, blank=True, help_text="the value written when a merge changed it")
    provenance = models.TextField()
    outcome = models.CharField(max_length=8, choices=Outcome.choices, default=Outcome.APPLIED)
    code = models.CharField(max_length=32, blank=True, help_text="rule id when refused or clipped")

    objects = StateDeltaQuerySet.as_manager()

    class Meta:
        ordering = ["run", "seq", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "seq", "index"], name="state_delta_position_unique")]
        indexes = [
            models.Index(fields=["run", "path", "seq"], name="state_delta_path_history"),
            models.Index(fields=["run", "agent_id"], name="state_delta_agents"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq}.{self.index} {self.op} {self.path} ({self.outcome})"

    @property
    def written_value(self) -> Any:
        return self.applied_value if self.applied_value is not None else self.value


class Snapshot(models.Model):
    """The full state of a run after every delta with seq ≤ `seq`."""

    class Reason(models.TextChoices):
        EVERY = "every", "every K deltas"
        RUN_END = "run_end", "run end"
        REBUILD = "rebuild", "rebuild"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="state_snapshots")
    seq = models.BigIntegerField()
    delta_count = models.PositiveIntegerField(default=0, help_text="state deltas with seq ≤ this seq")
    state = models.JSONField(default=dict)
    reason = models.CharField(max_length=8, choices=Reason.choices, default=Reason.EVERY)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="state_snapshot_seq_unique")]

    def __str__(self) -> str:
        return f"{self.run_id}@{self.seq}"


class StateHead(models.Model):
    """The current state of a run and the bookkeeping for the next batch (highest round, deltas since snapshot)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, primary_key=True, related_name="state_head")
    seq = models.BigIntegerField(default=0, help_text="last ledger seq that touched state")
    round = models.IntegerField(default=0)
    delta_count = models.PositiveIntegerField(default=0)
    since_snapshot = models.PositiveIntegerField(default=0)
    state = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"head of {self.run_id} @{self.seq}"


class RuleViolation(models.Model):
    """A Layer-4 rule broken by an ingested run (which already happened, so it is flagged, not refused)."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rule_violations")
    seq = models.BigIntegerField()
    rule = models.CharField(max_length=32, help_text="R13, state_limit, path_missing, …")
    message = models.TextField()
    agent_id = models.CharField(max_length=200, blank=True)
    path = models.TextField(blank=True)
    source = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq", "pk"]
        indexes = [models.Index(fields=["run", "rule"])]

    def __str__(self) -> str:
        return f"{self.rule} in {self.run_id}#{self.seq}"


class RevealAudit(models.Model):
    """An owner looked at sensitive state values unredacted."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    seq = models.BigIntegerField()
    where = models.CharField(max_length=32, help_text="page | api | history")
    path = models.TextField(blank=True)
    remote_addr = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.user} revealed {self.run_id}@{self.seq}"


class KnownSecret(models.Model):
    """A value seen under a sensitive key in an experiment: masked wherever it appears on the way out.

    The raw ledger already holds these values; this table only lets redaction find them without reading the
    ledger. It is deliberately unreachable: no view, API, admin page or export reads it except
    `state.secrets`, which turns it into a matcher. Rows are learnt at ingest (projector and memory text),
    never updated; an experiment's rows go with it.
    """

    experiment = models.ForeignKey(
        "experiments.Experiment", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
        help_text="empty: a secret of the shared pool (learnt from pool envelopes), masked on the Pool's ways out",
    )  # fmt: skip
    digest = models.CharField(max_length=64, help_text="sha256 of the value (uniqueness without a text index)")
    value = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "digest"], name="state_known_secret_unique"),
            models.UniqueConstraint(fields=["digest"], condition=models.Q(experiment__isnull=True), name="state_known_secret_pool_unique"),
        ]

    def __str__(self) -> str:
        return f"known secret #{self.pk} of {f'experiment {self.experiment_id}' if self.experiment_id else 'the pool'}"  # never the value
