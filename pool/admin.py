"""Admin for the pool: participants (revoke tokens), proposals, votes, subscriptions; the append-only tables read-only."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from pool.models import (
    BridgeCursor,
    Participant,
    PoolAudit,
    PoolEnvelope,
    PoolFactVersion,
    PoolProposal,
    PoolSubscription,
    PoolVote,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows Postgres refuses to change or delete (append-only triggers): view them only."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Participant)
class ParticipantAdmin(admin.ModelAdmin):
    list_display = ("claw_id", "kind", "last_seen_at", "key_prefix", "capabilities")
    list_filter = ("kind",)
    search_fields = ("claw_id",)
    exclude = ("hashed_secret",)
    actions = ["revoke_tokens"]

    @admin.action(description="Revoke the tokens of these participants")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[Participant]) -> None:
        count = queryset.exclude(hashed_secret=None).update(hashed_secret=None, key_prefix="")
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)


@admin.register(PoolProposal)
class PoolProposalAdmin(admin.ModelAdmin):
    list_display = ("proposal_id", "status", "proposer", "coordinator", "created_at", "decided_at")
    list_filter = ("status",)
    search_fields = ("proposal_id", "statement", "trace_id")


@admin.register(PoolVote)
class PoolVoteAdmin(admin.ModelAdmin):
    list_display = ("proposal", "claw_id", "vote", "created_at")
    search_fields = ("proposal__proposal_id", "claw_id")
    raw_id_fields = ("proposal",)


@admin.register(PoolSubscription)
class PoolSubscriptionAdmin(admin.ModelAdmin):
    list_display = ("experiment", "all_facts", "tags", "updated_by", "updated_at")


@admin.register(PoolEnvelope)
class PoolEnvelopeAdmin(ReadOnlyAdmin):
    list_display = ("pk", "type", "claw_id", "origin", "deployment", "trace_id", "applied_at")
    list_filter = ("type", "origin")
    search_fields = ("idempotency_key", "trace_id", "claw_id")


@admin.register(PoolFactVersion)
class PoolFactVersionAdmin(ReadOnlyAdmin):
    list_display = ("fact_id", "version", "proposal_id", "created_at")
    search_fields = ("fact_id", "statement", "proposal_id")


@admin.register(PoolAudit)
class PoolAuditAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "trace_id", "type", "claw_id", "origin", "outcome", "code")
    list_filter = ("outcome", "origin", "type")
    search_fields = ("trace_id", "idempotency_key", "claw_id")


@admin.register(BridgeCursor)
class BridgeCursorAdmin(admin.ModelAdmin):
    list_display = ("name", "last_envelope_pk", "updated_at")
