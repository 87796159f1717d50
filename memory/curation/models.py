"""Curation models: proposals with their evidence, votes and decisions, versioned promoted facts, write-back."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from experiments.models import Experiment, Run


class ProposalQuerySet(models.QuerySet["Proposal"]):
    def pending(self) -> ProposalQuerySet:
        return self.filter(status=Proposal.Status.PENDING)

    def promoted(self) -> ProposalQuerySet:
        return self.filter(status=Proposal.Status.APPROVED)


class Proposal(models.Model):
    """A curated item: a fact, tool recipe, antipattern or agent reflection proposed for long-term memory."""

    class Kind(models.TextChoices):
        FACT = "fact"
        TOOL = "tool"
        ANTIPATTERN = "antipattern"
        REFLECTION = "reflection"

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        REJECTED = "rejected"
        RETRACTED = "retracted"

    class Origin(models.TextChoices):
        DASHBOARD = "dashboard_curator"
        RUNTIME = "runtime_curator"
        AGENT = "agent", "Agent (proposed through MCP)"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="proposals")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    key = models.CharField(max_length=300, help_text="fact: sha256(text)[:16]; tool: name#content_hash; antipattern: sha16")
    text = models.TextField(help_text="as proposed; never changed")
    edited_text = models.TextField(blank=True, help_text="what a reviewer approved instead, if edited")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    origin = models.CharField(max_length=32, choices=Origin.choices, default=Origin.DASHBOARD)
    version = models.PositiveIntegerField(default=1, help_text="tool recipes: the version of this name")
    details = models.JSONField(default=dict, blank=True)
    is_pinned = models.BooleanField(default=False, help_text="always in the prior-run block; automation never retires it")
    valid_until = models.DateTimeField(null=True, blank=True, help_text="the fact expires (leaves MEMORY.md) after this")
    retired_as = models.CharField(max_length=16, blank=True, help_text="retired | superseded | expired, once out of memory")
    superseded_by = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes")
    first_seen_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    objects = ProposalQuerySet.as_manager()

    class Meta:
        ordering = ["-first_seen_at", "-pk"]
        constraints = [models.UniqueConstraint(fields=["experiment", "kind", "key"], name="proposal_key_unique")]
        indexes = [models.Index(fields=["experiment", "status", "kind"])]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}: {self.text[:60]}"

    @property
    def promoted_text(self) -> str:
        return self.edited_text or self.text

    @property
    def short_id(self) -> str:
        return f"P{self.pk}"


class Evidence(models.Model):
    """One confirmation of a proposal: a digest, a ledger event or a runtime file."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="evidence")
    ref = models.CharField(max_length=400, help_text="digest:<sha> | event:<run>:<seq> | file:<relpath>")
    digest_sha = models.CharField(max_length=64, blank=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    run_ref = models.CharField(max_length=200, blank=True, help_text="the runtime's run id")
    iteration = models.IntegerField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "run_ref", "iteration", "pk"]
        constraints = [models.UniqueConstraint(fields=["proposal", "ref"], name="evidence_ref_unique")]

    def __str__(self) -> str:
        return self.ref


class Vote(models.Model):
    """One reviewer's verdict on one proposal (a second vote by the same reviewer is refused)."""

    class Verdict(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="votes")
    reviewer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="curation_votes")
    verdict = models.CharField(max_length=8, choices=Verdict.choices)
    text = models.TextField(blank=True, help_text="edited text proposed with an approval")
    reason = models.TextField(blank=True)
    via = models.CharField(max_length=120, blank=True, help_text="session, or the API token's name")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "created_at"]
        constraints = [models.UniqueConstraint(fields=["proposal", "reviewer"], name="one_vote_per_reviewer")]

    def __str__(self) -> str:
        return f"{self.reviewer} {self.verdict} #{self.proposal_id}"


class Decision(models.Model):
    """A final outcome: approved or rejected at quorum, or a later retraction or edit."""

    class Outcome(models.TextChoices):
        APPROVED = "approved"
        REJECTED = "rejected"
        RETRACTED = "retracted"
        EDITED = "edited"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="decisions")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    text = models.TextField(blank=True)
    reason = models.TextField(blank=True)
    decided_by = models.CharField(max_length=500, help_text="usernames of the deciding votes, or who retracted")
    memory_version = models.PositiveIntegerField(null=True, blank=True, help_text="MEMORY.md version written")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "created_at"]

    def __str__(self) -> str:
        return f"#{self.proposal_id} {self.outcome}"


class Fact(models.Model):
    """A version of a promoted item: v1 on promotion, then +1 for each edit or retraction."""

    class State(models.TextChoices):
        ACTIVE = "active"
        RETRACTED = "retracted"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="facts")
    version = models.PositiveIntegerField()
    text = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    memory_version = models.PositiveIntegerField(null=True, blank=True)
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "version"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "version"], name="fact_version_unique"),
            models.CheckConstraint(condition=Q(version__gte=1), name="fact_version_positive"),
        ]

    def __str__(self) -> str:
        return f"#{self.proposal_id} v{self.version} {self.state}"


class CuratedRun(models.Model):
    """A root run the dashboard curator has gone through (what `awp_curate` skips)."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="curation")
    curated_at = models.DateTimeField(default=timezone.now)
    proposed = models.PositiveIntegerField(default=0)
    already_known = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"curated {self.run}"


class WritebackAttempt(models.Model):
    """One write-back of promoted memory to the AWP workflow folder; failures are retried."""

    class Status(models.TextChoices):
        PENDING = "pending"
        OK = "ok"
        FAILED = "failed"
        SUPERSEDED = "superseded"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="writeback_attempts")
    trigger = models.CharField(max_length=32, help_text="promotion | retraction | rejection | retry | manual")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    next_retry_at = models.DateTimeField(null=True, blank=True)
    written_files = models.JSONField(default=list, blank=True)
    memory_content = models.TextField(blank=True, help_text="the MEMORY.md text written (to merge the next time)")
    memory_version = models.PositiveIntegerField(null=True, blank=True, help_text="the MEMORY.md version written")
    carried = models.JSONField(default=list, blank=True, help_text="ids of the promoted facts, and labels of the pool facts, the written files carry")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["status", "next_retry_at"])]

    def __str__(self) -> str:
        return f"write-back {self.experiment.slug} {self.status}"


class FactEvent(models.Model):
    """One audited lifecycle step of a promoted item (pin, retire, supersede, trial...); never changed or deleted."""

    class Action(models.TextChoices):
        PROMOTE = "promote"
        PIN = "pin"
        UNPIN = "unpin"
        RETIRE = "retire"
        RESTORE = "restore"
        SUPERSEDE = "supersede"
        EXPIRE = "expire"
        TRIAL_START = "trial_start"
        TRIAL_DECIDE = "trial_decide"
        IMPORT = "import"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="lifecycle")
    action = models.CharField(max_length=16, choices=Action.choices)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_label = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    related = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    memory_version = models.PositiveIntegerField(null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "created_at", "pk"]

    def __str__(self) -> str:
        return f"#{self.proposal_id} {self.action} by {self.actor_label}"


class Exposure(models.Model):
    """One piece of promoted memory a run was given: inferred from a write-back, or served through the API."""

    class Channel(models.TextChoices):
        WRITEBACK = "writeback"  # the workspace MEMORY.md / facts files written before the run started
        PRIOR = "prior"
        RECALL = "recall"
        READ = "read"
        MCP = "mcp"

    class Mode(models.TextChoices):
        INFERRED = "inferred"
        SERVED = "served"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="exposures")
    proposal = models.ForeignKey(Proposal, null=True, blank=True, on_delete=models.CASCADE, related_name="exposures")
    item = models.CharField(max_length=300, help_text="proposal:<id> or pool:<label>")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    mode = models.CharField(max_length=16, choices=Mode.choices)
    agent_id = models.CharField(max_length=200, blank=True)
    memory_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "created_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["run", "item", "channel", "agent_id"], name="exposure_unique"),
        ]
        indexes = [models.Index(fields=["proposal", "run"])]

    def __str__(self) -> str:
        return f"{self.run_id} carried {self.item} ({self.channel}, {self.mode})"


class FactTrial(models.Model):
    """An A/B trial of a promotion: over the next `runs_planned` runs the fact is given to every other run."""

    class Status(models.TextChoices):
        RUNNING = "running"
        MEASURED = "measured"  # every planned run has an arm: waiting for the final decision
        KEPT = "kept"
        RETIRED = "retired"

    class Assignment(models.TextChoices):
        ALTERNATE = "alternate"
        RANDOM = "random"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="trials")
    runs_planned = models.PositiveIntegerField()
    assignment = models.CharField(max_length=16, choices=Assignment.choices, default=Assignment.ALTERNATE)
    seed = models.BigIntegerField(default=0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    started_by = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"trial of #{self.proposal_id} ({self.status})"


class TrialArm(models.Model):
    """Which arm one run of a trial was in (the fact given or withheld), fixed the first time it is decided."""

    trial = models.ForeignKey(FactTrial, on_delete=models.CASCADE, related_name="arms")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="trial_arms")
    index = models.PositiveIntegerField()
    carried = models.BooleanField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["trial", "index"]
        constraints = [
            models.UniqueConstraint(fields=["trial", "index"], name="trial_arm_index_unique"),
            models.UniqueConstraint(fields=["trial", "run"], name="trial_arm_run_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.trial_id}#{self.index} {'with' if self.carried else 'without'}"
