"""The pool's tables: participants, applied envelopes, proposals, votes, fact versions, audit, subscriptions.

Postgres enforces the rules a second time (migrations 0001, 0002): the idempotency key is unique per clawId, one vote per
(proposal, participant), a fact version is exactly the previous one + 1 (trigger), and envelopes, fact
versions and the audit refuse UPDATE and DELETE like the ledger.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from experiments.models import Experiment, issue_secret


class ParticipantQuerySet(models.QuerySet["Participant"]):
    def active(self, now: datetime | None = None) -> ParticipantQuerySet:
        """Participants whose last presence is younger than AWP_POOL_PRESENCE_TTL."""
        since = (now or timezone.now()) - timedelta(seconds=settings.AWP_POOL_PRESENCE_TTL)
        return self.filter(last_seen_at__gt=since)


class Participant(models.Model):
    """A claw: an agent runtime, a deployment or a person (`user:<username>`), with its capabilities."""

    class Kind(models.TextChoices):
        AGENT = "agent"
        DEPLOYMENT = "deployment"
        PERSON = "person"
        REMOTE = "remote", "known from the bus"

    TOKEN_PREFIX = "awpclaw_"

    claw_id = models.CharField(max_length=200, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.AGENT)
    capabilities = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    instance_ids = ArrayField(models.CharField(max_length=200), default=list, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    key_prefix = models.CharField(max_length=16, blank=True)
    hashed_secret = models.CharField(max_length=64, null=True, blank=True, unique=True)
    created_at = models.DateTimeField(default=timezone.now)

    objects = ParticipantQuerySet.as_manager()

    class Meta:
        ordering = ["claw_id"]

    def __str__(self) -> str:
        return self.claw_id

    def issue_token(self) -> str:
        """A new bearer secret for this participant (the old one stops working); only its hash is kept."""
        secret, self.key_prefix, self.hashed_secret = issue_secret(self.TOKEN_PREFIX)
        self.save(update_fields=["key_prefix", "hashed_secret"])
        return secret

    def is_active(self, now: datetime | None = None) -> bool:
        since = (now or timezone.now()) - timedelta(seconds=settings.AWP_POOL_PRESENCE_TTL)
        return self.last_seen_at is not None and self.last_seen_at > since


class PoolEnvelope(models.Model):
    """An envelope applied to this pool (accepted once per (clawId, idempotency key); append-only).

    Keys are scoped by participant: the same key from two participants is two envelopes, so no participant
    can claim another's key (or the coordinator's, whose keys live in rules.COORDINATOR_KEY_PREFIX)."""

    class Origin(models.TextChoices):
        API = "api"
        PAGE = "page"
        COORDINATOR = "coordinator"
        BUS = "bus"

    idempotency_key = models.CharField(max_length=200)
    type = models.CharField(max_length=16)
    trace_id = models.CharField(max_length=200)
    claw_id = models.CharField(max_length=200)
    instance_id = models.CharField(max_length=200)
    timestamp = models.DateTimeField()
    body = models.JSONField(help_text="the envelope as received")
    origin = models.CharField(max_length=16, choices=Origin.choices)
    deployment = models.CharField(max_length=200, help_text="the deployment that accepted it first")
    answer = models.JSONField(default=dict, help_text="the original outcome, answered again to a replay")
    applied_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["pk"]
        indexes = [models.Index(fields=["trace_id"])]
        constraints = [models.UniqueConstraint(fields=["claw_id", "idempotency_key"], name="pool_envelope_key_per_claw")]

    def __str__(self) -> str:
        return f"{self.type} {self.claw_id}/{self.idempotency_key}"

    @property
    def is_local(self) -> bool:
        return self.origin != self.Origin.BUS


class PoolProposal(models.Model):
    """A statement proposed as shared truth, decided by the votes of active participants."""

    class Status(models.TextChoices):
        OPEN = "open"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        EXPIRED = "expired"

    proposal_id = models.CharField(max_length=200, unique=True)
    statement = models.TextField()
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    source = models.JSONField(null=True, blank=True)
    amends_fact_id = models.CharField(max_length=200, blank=True)
    proposer = models.CharField(max_length=200)
    coordinator = models.CharField(max_length=200, help_text="the deployment that decides it")
    trace_id = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    decision = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=models.Q(status__in=["open", "accepted", "rejected", "expired"]), name="pool_proposal_status"),
        ]

    def __str__(self) -> str:
        return self.proposal_id

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


class PoolVote(models.Model):
    """One participant's yes or no on one proposal (a second one is refused by the unique constraint)."""

    proposal = models.ForeignKey(PoolProposal, on_delete=models.PROTECT, related_name="votes")
    claw_id = models.CharField(max_length=200)
    vote = models.CharField(max_length=3)
    reason = models.TextField(blank=True)
    trace_id = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "claw_id"], name="pool_vote_one_per_participant"),
            models.CheckConstraint(condition=models.Q(vote__in=["yes", "no"]), name="pool_vote_yes_or_no"),
        ]

    def __str__(self) -> str:
        return f"{self.claw_id}: {self.vote}"


class FactVersionQuerySet(models.QuerySet["PoolFactVersion"]):
    def newest(self) -> FactVersionQuerySet:
        """Only the newest version of each fact."""
        return self.order_by("fact_id", "-version").distinct("fact_id")


class PoolFactVersion(models.Model):
    """One version of a shared fact: v1, then exactly +1 (trigger), never changed (append-only)."""

    fact_id = models.CharField(max_length=200)
    version = models.PositiveIntegerField()
    statement = models.TextField()
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    source = models.JSONField(null=True, blank=True)
    proposal_id = models.CharField(max_length=200)
    trace_id = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    objects = FactVersionQuerySet.as_manager()

    class Meta:
        ordering = ["fact_id", "version"]
        constraints = [
            models.UniqueConstraint(fields=["fact_id", "version"], name="pool_fact_version_unique"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="pool_fact_version_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.fact_id} v{self.version}"


class PoolAudit(models.Model):
    """Every apply, accepted or not, with its traceId (append-only)."""

    class Outcome(models.TextChoices):
        ACCEPTED = "accepted"
        DUPLICATE = "duplicate"
        REJECTED = "rejected"
        IGNORED = "ignored"

    trace_id = models.CharField(max_length=200, blank=True)
    idempotency_key = models.CharField(max_length=200, blank=True)
    type = models.CharField(max_length=16, blank=True)
    claw_id = models.CharField(max_length=200, blank=True)
    origin = models.CharField(max_length=16)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    code = models.CharField(max_length=40, blank=True)
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-pk"]
        indexes = [models.Index(fields=["trace_id"])]

    def __str__(self) -> str:
        return f"{self.outcome} {self.type} {self.trace_id}"


class PoolSubscription(models.Model):
    """Whether an experiment takes pool facts into its prior-run block and search: all, or by tags."""

    experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, related_name="pool_subscription")
    all_facts = models.BooleanField(default=True)
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    updated_by = models.CharField(max_length=150, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.experiment.slug}: {'all' if self.all_facts else ','.join(self.tags)}"


class BridgeCursor(models.Model):
    """How far a bridge has published this deployment's envelopes to a broker subject."""

    name = models.CharField(max_length=300, unique=True)
    last_envelope_pk = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.name} @ {self.last_envelope_pk}"
