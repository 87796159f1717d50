from django.contrib import admin

from experiments.models import ApiToken, Event, Experiment, Membership, Run, Task


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
