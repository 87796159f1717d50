"""Admin for the state projection: deltas, snapshots, violations, reveal audits; rebuild actions on runs' state."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from state.models import RevealAudit, RuleViolation, Snapshot, StateDelta, StateHead
from state.services import rebuild_snapshots, rebuild_state


@admin.register(StateDelta)
class StateDeltaAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "index", "agent_id", "round", "weight", "op", "path", "outcome", "code")
    list_filter = ("outcome", "op")
    search_fields = ("run__run_id", "path", "agent_id", "provenance")
    raw_id_fields = ("run",)
    list_select_related = ("run",)


@admin.register(Snapshot)
class SnapshotAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "delta_count", "reason", "created_at")
    list_filter = ("reason",)
    search_fields = ("run__run_id",)
    raw_id_fields = ("run",)
    actions = ["rebuild_snapshots_action"]

    @admin.action(description="Rebuild the snapshots of these snapshots' runs from their deltas")
    def rebuild_snapshots_action(self, request: HttpRequest, queryset: QuerySet[Snapshot]) -> None:
        runs = {snapshot.run for snapshot in queryset.select_related("run")}
        total = sum(rebuild_snapshots(run=run) for run in runs)
        self.message_user(request, f"Rebuilt {total} snapshot(s) for {len(runs)} run(s).", messages.SUCCESS)


@admin.register(StateHead)
class StateHeadAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "round", "delta_count", "since_snapshot", "updated_at")
    search_fields = ("run__run_id",)
    raw_id_fields = ("run",)
    actions = ["rebuild_snapshots_action", "rebuild_state_action"]

    @admin.action(description="Rebuild snapshots from the stored deltas")
    def rebuild_snapshots_action(self, request: HttpRequest, queryset: QuerySet[StateHead]) -> None:
        total = sum(rebuild_snapshots(run=head.run) for head in queryset.select_related("run"))
        self.message_user(request, f"Rebuilt {total} snapshot(s).", messages.SUCCESS)

    @admin.action(description="Rebuild deltas, snapshots and violations from the ledger")
    def rebuild_state_action(self, request: HttpRequest, queryset: QuerySet[StateHead]) -> None:
        runs = [head.run for head in queryset.select_related("run")]
        total = sum(rebuild_state(run=run) for run in runs)
        self.message_user(request, f"Re-projected {total} delta(s) for {len(runs)} run(s).", messages.SUCCESS)


@admin.register(RuleViolation)
class RuleViolationAdmin(admin.ModelAdmin):
    list_display = ("run", "seq", "rule", "agent_id", "path", "source", "created_at")
    list_filter = ("rule", "source")
    search_fields = ("run__run_id", "message", "path")
    raw_id_fields = ("run",)


@admin.register(RevealAudit)
class RevealAuditAdmin(admin.ModelAdmin):
    list_display = ("created_at", "user", "run", "seq", "where", "remote_addr")
    list_filter = ("where",)
    raw_id_fields = ("run", "user")

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
