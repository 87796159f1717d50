"""Experiment → Task → Run, the append-only ledger of events, and who may see what."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils import timezone
from django.utils.functional import cached_property

from experiments.awp.timing import TS_SOURCES


class ExperimentQuerySet(models.QuerySet["Experiment"]):
    def visible_to(self, user: Any) -> ExperimentQuerySet:
        """Experiments the user is a member of (staff see all)."""
        if not user.is_authenticated:
            return self.none()
        if user.is_staff:
            return self
        return self.filter(memberships__user=user).distinct()


class Experiment(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft"
        RUNNING = "running"
        COMPLETE = "complete"
        PARTIAL = "partial"
        FAILED = "failed"
        ARCHIVED = "archived"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    external_id = models.CharField(max_length=64, blank=True, help_text="AWP experiment id (exp_…) when imported")
    goal = models.TextField(blank=True)
    hypothesis = models.TextField(blank=True)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    tags = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    protocol_yaml = models.TextField(blank=True, help_text="workflow.awp.yaml text")
    protocol = models.JSONField(default=dict, blank=True, help_text="parsed protocol_yaml")
    workspace_path = models.CharField(max_length=1000, blank=True, help_text="AWP workflow dir for write-back")
    writeback_enabled = models.BooleanField(default=False)
    review_quorum = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ExperimentQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["status"])]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("experiments:detail", args=[self.slug])

    @cached_property
    def running_run_count(self) -> int:
        """Runs still running: the experiment's own status is what its protocol says, not what its runs do."""
        return self.runs.filter(status=Run.Status.RUNNING).count()

    def role_of(self, user: Any) -> str | None:
        """The user's role here: owner for staff, else their membership role, else None."""
        if not user.is_authenticated:
            return None
        if user.is_staff:
            return Membership.Role.OWNER
        membership = self.memberships.filter(user=user).only("role").first()
        return membership.role if membership else None

    @property
    def state_config(self) -> dict[str, Any]:
        return dict(self.protocol.get("state") or {})

    @property
    def memory_config(self) -> dict[str, Any]:
        return dict(self.protocol.get("memory") or {})


class Task(models.Model):
    class Mode(models.TextChoices):
        SEED = "seed"
        CONTINUATION = "continuation"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="tasks")
    number = models.PositiveIntegerField()
    slug = models.CharField(max_length=200)
    external_id = models.CharField(max_length=200, blank=True, help_text="AWP task id NNN-slug")
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.SEED)
    prompt = models.TextField(blank=True)
    feedback = models.TextField(blank=True)
    inputs = models.JSONField(default=list, blank=True)
    best_run = models.ForeignKey("Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    best_reason = models.CharField(max_length=32, blank=True)
    best_loss = models.FloatField(null=True, blank=True)
    best_manifest = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["experiment", "number"]
        constraints = [models.UniqueConstraint(fields=["experiment", "number"], name="task_number_unique")]

    def __str__(self) -> str:
        return f"{self.number:03d}-{self.slug}"


class RunQuerySet(models.QuerySet["Run"]):
    def live(self) -> RunQuerySet:
        return self.filter(status=Run.Status.RUNNING)

    def roots(self) -> RunQuerySet:
        return self.filter(parent__isnull=True)


class Run(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETE = "complete"
        PARTIAL = "partial"
        FAILED = "failed"
        ABORTED = "aborted"
        ERROR = "error"
        STOPPED = "stopped"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    run_id = models.CharField(max_length=200, help_text="the runtime's run id")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    depth = models.PositiveSmallIntegerField(default=0)
    parent_worker = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=32, blank=True, help_text="seed | refine_iter | optimize_epoch_run | submanager")
    engine = models.CharField(max_length=32, blank=True, help_text="delegation_loop | dag | api")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    reason = models.CharField(max_length=200, blank=True)
    task_text = models.TextField(blank=True)
    models_used = models.JSONField(default=dict, blank=True)
    budget = models.JSONField(default=dict, blank=True, help_text="max budget from run_manifest")
    budget_used = models.JSONField(default=dict, blank=True, help_text="latest budget snapshot")
    loss = models.FloatField(null=True, blank=True)
    iterations = models.PositiveIntegerField(default=0)
    source_path = models.CharField(max_length=1000, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    last_seq = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["experiment", "run_id"], name="run_id_unique_per_experiment")]
        indexes = [
            models.Index(fields=["experiment", "status"]),
            models.Index(fields=["run_id"]),
            # The Runs tab's default order (experiments/run_list.py): a keyset page reads its 50 rows from here.
            models.Index(F("experiment"), Coalesce("started_at", "created_at"), F("id"), name="run_list_started", condition=Q(parent__isnull=True)),
        ]

    def __str__(self) -> str:
        return self.run_id

    def get_absolute_url(self) -> str:
        return reverse("experiments:run-detail", args=[self.experiment.slug, self.pk])

    @property
    def is_terminal(self) -> bool:
        return self.status != Run.Status.RUNNING

    @property
    def tokens_consumed(self) -> int | float | None:
        """Tokens used so far, from the latest budget snapshot (None when the runtime reports none)."""
        tokens = (self.budget_used or {}).get("tokens")
        value = tokens.get("consumed") if isinstance(tokens, dict) else None
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None

    @cached_property
    def shown_duration(self) -> float | None:
        """Start to end; while running, start to its latest event's time, not to now: a replayed recording's run
        started days ago by its own clock, and "now minus then" counted the days in between."""
        if not self.started_at:
            return None
        if self.ended_at:
            return (self.ended_at - self.started_at).total_seconds()
        latest = self.events.filter(seq__lte=self.last_seq, occurred_at__isnull=False).order_by("-seq").values_list("occurred_at", flat=True).first()
        return max(0.0, ((latest or self.started_at) - self.started_at).total_seconds())

    @property
    def duration_seconds(self) -> float | None:
        if not self.started_at:
            return None
        end = self.ended_at or timezone.now()
        return (end - self.started_at).total_seconds()


class Event(models.Model):
    """One row of the append-only ledger; UPDATE and DELETE are refused by a database trigger."""

    # No foreign-key constraint: its per-row check cost ~40 % of a batch's COPY (bench/README.md, issue 28). A run
    # with events cannot be deleted (a trigger, migration 0007), and ingest writes only under the run's row lock.
    # No run-only index either: the (run, seq) and (run, dedupe_key) unique indexes lead with the run.
    run = models.ForeignKey(Run, on_delete=models.DO_NOTHING, related_name="events", db_constraint=False, db_index=False)
    seq = models.BigIntegerField()
    kind = models.CharField(max_length=64)
    agent_id = models.CharField(max_length=200, blank=True)
    iteration = models.IntegerField(null=True, blank=True)
    depth = models.SmallIntegerField(default=0)
    occurred_at = models.DateTimeField(null=True, blank=True, help_text="when it happened (see ts_source); the event's ts")
    recorded_at = models.DateTimeField(default=timezone.now)
    payload = models.JSONField(default=dict)
    dedupe_key = models.CharField(max_length=300)
    ts_source = models.CharField(
        max_length=8,
        blank=True,
        db_default="",  # writers that do not know the column (raw COPY) still insert rows
        choices=[(source, source) for source in TS_SOURCES],
        help_text="where occurred_at came from: record | parent (the record it belongs to) | mtime (the file's) | received | span (an OTel span's start)",
    )

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="event_run_seq_unique"),
            models.UniqueConstraint(fields=["run", "dedupe_key"], name="event_run_dedupe_unique"),
        ]
        indexes = [models.Index(fields=["run", "kind", "seq"])]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq} {self.kind}"

    @property
    def ts(self) -> datetime:
        """When it happened: its time (from where ts_from says), or when it was received."""
        return self.occurred_at or self.recorded_at

    @property
    def ts_from(self) -> str:
        """Where ts came from; rows older than the ts_source column took occurred_at only from their record."""
        return self.ts_source or ("record" if self.occurred_at else "received")


class Membership(models.Model):
    class Role(models.TextChoices):
        VIEWER = "viewer"
        CURATOR = "curator"
        OWNER = "owner"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "experiment"], name="membership_unique")]

    def __str__(self) -> str:
        return f"{self.user} {self.role} of {self.experiment}"


ROLE_RANK = {Membership.Role.VIEWER: 1, Membership.Role.CURATOR: 2, Membership.Role.OWNER: 3}


def role_at_least(role: str | None, needed: str) -> bool:
    """Whether role grants what needed grants (owner ⊇ curator ⊇ viewer)."""
    return role is not None and ROLE_RANK.get(role, 0) >= ROLE_RANK[needed]


def hash_secret(secret: str) -> str:
    """The stored form of a bearer secret (experiment tokens and pool participants alike)."""
    # Secrets are 256 random bits, so a plain SHA-256 is enough (no password stretching needed).
    return hashlib.sha256(secret.encode()).hexdigest()


def issue_secret(prefix: str) -> tuple[str, str, str]:
    """A new bearer secret: (secret shown once, recognisable prefix, hash to store)."""
    secret = prefix + secrets.token_urlsafe(32)
    return secret, secret[:10], hash_secret(secret)


class ApiToken(models.Model):
    """A bearer token for one experiment; only a SHA-256 of the secret is stored."""

    SCOPES = ("ingest", "memory:read", "memory:write", "review")
    PREFIX = "awp_"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE)
    name = models.CharField(max_length=100)
    key_prefix = models.CharField(max_length=16, help_text="first characters, to recognise a token")
    hashed_secret = models.CharField(max_length=64, unique=True)
    scopes = ArrayField(models.CharField(max_length=32), default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @staticmethod
    def hash_secret(secret: str) -> str:
        return hash_secret(secret)

    @classmethod
    def issue(cls, *, experiment: Experiment, name: str, scopes: list[str], user: Any = None) -> tuple[ApiToken, str]:
        """Create a token and return it with its secret, which is never stored."""
        unknown = sorted(set(scopes) - set(cls.SCOPES))
        if unknown:
            raise ValueError(f"unknown scope(s): {', '.join(unknown)}; choose from {', '.join(cls.SCOPES)}")
        secret, key_prefix, hashed = issue_secret(cls.PREFIX)
        token = cls.objects.create(
            experiment=experiment, user=user, name=name, key_prefix=key_prefix, hashed_secret=hashed, scopes=sorted(set(scopes))
        )
        return token, secret

    @classmethod
    def find_active(cls, secret: str) -> ApiToken | None:
        """The unrevoked token with this secret, its experiment loaded (one query, no ORM compilation: hot path)."""
        token_fields = cls._meta.concrete_fields
        experiment_fields = Experiment._meta.concrete_fields
        columns = [f't."{f.column}"' for f in token_fields] + [f'e."{f.column}"' for f in experiment_fields]
        sql = (
            f"SELECT {', '.join(columns)} FROM {cls._meta.db_table} t JOIN {Experiment._meta.db_table} e ON e.id = t.experiment_id"
            " WHERE t.hashed_secret = %s AND t.revoked_at IS NULL"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [cls.hash_secret(secret)])
            row = cursor.fetchone()
        if row is None:
            return None
        token = from_row(cls, token_fields, row[: len(token_fields)])
        token.experiment = from_row(Experiment, experiment_fields, row[len(token_fields) :])
        return token

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


class BoardPost(models.Model):
    """A blackboard entry (projection of a board.post event); one board per manager run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="board_posts")
    seq = models.BigIntegerField(help_text="ledger seq of the board.post event")
    entry_id = models.CharField(max_length=200, help_text="the runtime's entry id")
    ts = models.FloatField(help_text="epoch seconds as the runtime wrote them")
    posted_at = models.DateTimeField()
    topic = models.CharField(max_length=300)
    worker_id = models.CharField(max_length=200, blank=True)
    payload = models.JSONField(default=dict)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "entry_id"], name="board_entry_unique_per_run")]
        indexes = [models.Index(fields=["run", "topic"]), models.Index(fields=["run", "ts"])]

    def __str__(self) -> str:
        return f"[{self.topic}] {self.worker_id}"


class Digest(models.Model):
    """A hierarchical context digest, content-addressed; children resolve by SHA across the experiment's runs."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="digests")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="digests")
    sha = models.CharField(max_length=64)
    run_ref = models.CharField(max_length=200, help_text="run_id inside the record")
    iteration = models.IntegerField(default=0)
    goal = models.TextField(blank=True)
    key_facts = models.JSONField(default=list)
    open_questions = models.JSONField(default=list)
    confidence_trend = models.JSONField(default=list)
    child_digest_hashes = models.JSONField(default=list)
    record = models.JSONField(default=dict, help_text="the record exactly as hashed")
    seq = models.BigIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "iteration"]
        constraints = [models.UniqueConstraint(fields=["experiment", "sha"], name="digest_sha_unique_per_experiment")]
        indexes = [models.Index(fields=["sha"]), models.Index(fields=["experiment", "run_ref"])]

    def __str__(self) -> str:
        return self.sha[:12]


class IngestProblem(models.Model):
    """Something in an AWP folder or a pushed batch that could not be ingested; the rest still went in."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="ingest_problems")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.CASCADE, related_name="ingest_problems")
    path = models.CharField(max_length=1000, help_text="file path relative to the imported folder")
    line = models.IntegerField(null=True, blank=True)
    offset = models.BigIntegerField(null=True, blank=True, help_text="byte offset of the line in a JSONL file")
    code = models.CharField(max_length=64)
    message = models.TextField()
    dedupe_key = models.CharField(max_length=1200, help_text="so a re-import records a problem once")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["experiment", "dedupe_key"], name="ingest_problem_unique")]
        indexes = [models.Index(fields=["run", "created_at"]), models.Index(fields=["code"])]

    def __str__(self) -> str:
        return f"{self.code}: {self.path}"


class IngestCursor(models.Model):
    """How far a file has been ingested: byte offset for JSONL, content SHA for JSON; a restart resumes here."""

    # Per experiment: the same folder imported into two experiments is read twice, once for each.
    experiment = models.ForeignKey(Experiment, null=True, on_delete=models.CASCADE, related_name="+")
    path = models.CharField(max_length=1500, help_text="absolute file path")
    folder = models.CharField(max_length=1000, help_text="the watched/imported folder")
    offset = models.BigIntegerField(default=0)
    generation = models.IntegerField(default=0, help_text="bumped when a JSONL file was truncated in place")
    content_sha = models.CharField(max_length=64, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["experiment", "path"], name="ingest_cursor_unique")]
        indexes = [models.Index(fields=["experiment", "folder"])]

    def __str__(self) -> str:
        return f"{self.path} @{self.offset}"


class WorkspaceFile(models.Model):
    """A workspace memory file stored raw (one row per distinct content), before the memory app interprets it."""

    class Kind(models.TextChoices):
        LONG_TERM = "long_term"
        DAILY = "daily"
        TOOL = "tool"
        FACT = "fact"
        ANTIPATTERN = "antipattern"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="workspace_files")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    relpath = models.CharField(max_length=1000)
    sha256 = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content = models.TextField()
    workflow_dir = models.CharField(max_length=1000, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["relpath", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["experiment", "relpath", "sha256"], name="workspace_file_unique")]
        indexes = [models.Index(fields=["experiment", "kind"])]

    def __str__(self) -> str:
        return self.relpath


def from_row(model: Any, fields: Any, values: tuple[Any, ...]) -> Any:
    """A model instance from a raw row in `fields` order, with each field's database converter applied (JSON…).

    For hot paths where building the query through the ORM costs more than running it.
    """
    converted = [field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value for field, value in zip(fields, values, strict=True)]
    return model.from_db(connection.alias, [field.attname for field in fields], converted)


class AcceptedBatch(models.Model):
    """A pushed batch accepted for the ledger and not yet in it (`Prefer: respond-async`), then its receipt.

    The body is kept exactly as received until a drainer (experiments.inbox) applies it through the one ingest
    path: validated, scanned for secrets and projected in the transaction that appends it, so nothing of it is
    served before that. The body is dropped when the batch settles; the receipt (seqs or the refusal) stays.
    """

    PENDING, APPLIED, REFUSED = "pending", "applied", "refused"

    id = models.BigAutoField(primary_key=True)
    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="+")
    token = models.ForeignKey("ApiToken", null=True, on_delete=models.SET_NULL, related_name="+")
    run_id = models.CharField(max_length=200)
    body = models.BinaryField(null=True, help_text="the request body as received, zlib-compressed; dropped once settled")
    events = models.IntegerField()
    bytes = models.IntegerField()
    state = models.CharField(max_length=8, default=PENDING)
    result = models.JSONField(null=True, help_text="{run_id, seqs, new, last_seq}, or {code, message, errors}")
    accepted_at = models.DateTimeField(default=timezone.now)
    settled_at = models.DateTimeField(null=True)

    class Meta:
        indexes = [
            # The drainer's claim (oldest pending batch whose run has no older one) and the inbox's size.
            models.Index(fields=["experiment", "run_id", "id"], name="acceptedbatch_pending", condition=Q(state="pending")),
            models.Index(fields=["settled_at"], name="acceptedbatch_settled", condition=~Q(state="pending")),
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.state})"
