from django.contrib import admin

from memory.models import AccessAudit, Episode, MemoryChunk, MemoryDocument, MemoryEntry, Note, Reflection


@admin.register(MemoryDocument)
class MemoryDocumentAdmin(admin.ModelAdmin):
    list_display = ("experiment", "version", "source", "author_label", "reason", "created_at")
    list_filter = ("source",)
    search_fields = ("experiment__slug", "reason")
    readonly_fields = ("experiment", "version", "content", "author", "author_label", "reason", "source", "created_at")

    def has_delete_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False  # versions are history: restore instead of deleting


@admin.register(MemoryEntry)
class MemoryEntryAdmin(admin.ModelAdmin):
    list_display = ("experiment", "day", "time", "agent_id", "confidence", "source", "is_archived")
    list_filter = ("source", "is_archived")
    search_fields = ("experiment__slug", "agent_id", "content")
    raw_id_fields = ("run",)


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin):
    list_display = ("experiment", "kind", "author", "created_at")
    list_filter = ("kind",)
    search_fields = ("content",)


@admin.register(MemoryChunk)
class MemoryChunkAdmin(admin.ModelAdmin):
    list_display = ("experiment", "tier", "source", "model_name", "embedded_at", "is_archived")
    list_filter = ("tier", "model_name", "is_archived")
    search_fields = ("experiment__slug", "ref_key", "content")
    exclude = ("embedding",)
    actions = ["drop_vectors"]

    @admin.action(description="Drop vectors (awp_embed re-embeds them)")
    def drop_vectors(self, request, queryset):  # type: ignore[no-untyped-def]
        queryset.update(embedding=None, model_name="", embedded_at=None)


@admin.register(AccessAudit)
class AccessAuditAdmin(admin.ModelAdmin):
    list_display = ("experiment", "created_at", "agent_id", "tier", "action", "allowed")
    list_filter = ("allowed", "tier", "action")
    search_fields = ("agent_id", "detail")

    def has_change_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
    """Read-only: episodes are a projection of the ledger (re-project runs to rebuild them)."""

    list_display = ("experiment", "key", "kind", "agent_id", "turn", "is_public")
    list_filter = ("kind", "is_public")
    search_fields = ("experiment__slug", "agent_id", "key")
    exclude = ("fields", "words")  # the raw output stays in the ledger; `text` is the key-redacted rendering
    readonly_fields = ("experiment", "run", "key", "agent_id", "kind", "turn", "is_public", "text", "reflection", "occurred_at")

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False


@admin.register(Reflection)
class ReflectionAdmin(admin.ModelAdmin):
    list_display = ("experiment", "agent_id", "status", "trigger", "attempts", "model", "created_at", "completed_at")
    list_filter = ("status", "trigger")
    search_fields = ("experiment__slug", "agent_id", "belief")
    readonly_fields = ("experiment", "agent_id", "status", "trigger", "seen", "episode_keys", "model", "prompt", "answer",
                       "belief", "error", "attempts", "next_retry_at", "proposal", "created_at", "completed_at")  # fmt: skip

    def has_add_permission(self, request):  # type: ignore[no-untyped-def]
        return False
