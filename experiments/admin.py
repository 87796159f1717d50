from django.contrib import admin

from experiments.models import (
    ApiToken,
    BoardPost,
    Digest,
    Event,
    Experiment,
    IngestCursor,
    IngestProblem,
    Membership,
    Run,
    Task,
    WorkspaceFile,
)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "status", "created_at", "updated_at", "writeback_enabled", "review_quorum"]
    list_filter = ["status", "writeback_enabled"]
    search_fields = ["name", "slug", "goal", "external_id"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["__str__", "experiment", "mode", "best_run", "best_loss", "created_at"]
    list_filter = ["mode", "experiment"]
    search_fields = ["slug", "external_id", "prompt"]
    raw_id_fields = ["best_run"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["run_id", "experiment", "status", "reason", "depth", "engine", "iterations", "last_seq", "started_at"]
    list_filter = ["status", "engine", "depth", "experiment"]
    search_fields = ["run_id", "reason", "task_text"]
    raw_id_fields = ["parent", "task"]
    actions = ["rebuild_projections"]

    @admin.action(description="Rebuild projections from the ledger")
    def rebuild_projections(self, request, queryset):  # type: ignore[no-untyped-def]
        from experiments.projectors import rebuild_run_projections

        total = sum(rebuild_run_projections(run=run) for run in queryset)
        self.message_user(request, f"Replayed {total} events through the projectors for {queryset.count()} run(s).")


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    """The ledger is append-only: visible here, never editable."""

    list_display = ["run", "seq", "kind", "agent_id", "iteration", "depth", "occurred_at", "recorded_at"]
    list_filter = ["kind"]
    search_fields = ["run__run_id", "agent_id", "dedupe_key"]
    list_select_related = ["run"]
    show_full_result_count = False

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "experiment", "role", "created_at"]
    list_filter = ["role", "experiment"]
    search_fields = ["user__username", "experiment__name"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "experiment", "key_prefix", "scopes", "user", "created_at", "last_used_at", "revoked_at"]
    list_filter = ["revoked_at", "experiment"]
    search_fields = ["name", "key_prefix"]
    readonly_fields = ["key_prefix", "hashed_secret", "created_at", "last_used_at"]
    actions = ["revoke"]

    @admin.action(description="Revoke selected tokens")
    def revoke(self, request, queryset):  # type: ignore[no-untyped-def]
        from django.utils import timezone

        queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())


# ---- ingest ----------------------------------------------------------------------------------------


@admin.register(IngestProblem)
class IngestProblemAdmin(admin.ModelAdmin):
    list_display = ["code", "experiment", "run", "path", "offset", "created_at"]
    list_filter = ["code", "experiment"]
    search_fields = ["path", "message", "run__run_id"]
    raw_id_fields = ["run"]
    readonly_fields = ["dedupe_key", "created_at"]


@admin.register(BoardPost)
class BoardPostAdmin(admin.ModelAdmin):
    list_display = ["run", "seq", "topic", "worker_id", "posted_at"]
    list_filter = ["topic"]
    search_fields = ["entry_id", "topic", "worker_id", "run__run_id"]
    raw_id_fields = ["run"]


@admin.register(Digest)
class DigestAdmin(admin.ModelAdmin):
    list_display = ["__str__", "experiment", "run", "iteration", "run_ref", "created_at"]
    list_filter = ["experiment"]
    search_fields = ["sha", "run_ref", "goal"]
    raw_id_fields = ["run"]


@admin.register(IngestCursor)
class IngestCursorAdmin(admin.ModelAdmin):
    """Deleting a cursor makes the next pass re-read that file; dedupe keys keep it from adding anything twice."""

    list_display = ["path", "experiment", "offset", "generation", "content_sha", "updated_at"]
    search_fields = ["path", "folder"]
    list_filter = ["experiment"]


@admin.register(WorkspaceFile)
class WorkspaceFileAdmin(admin.ModelAdmin):
    list_display = ["relpath", "kind", "experiment", "sha256", "created_at"]
    list_filter = ["kind", "experiment"]
    search_fields = ["relpath", "content"]
    raw_id_fields = ["run"]
