"""Admin for curation: proposals with their evidence, votes and decisions inline; facts; write-back attempts."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from experiments.models import Experiment
from memory.curation.models import CuratedRun, Decision, Evidence, Fact, Proposal, Vote, WritebackAttempt
from memory.curation.services import CurationSummary, curate_experiment


class EvidenceInline(admin.TabularInline):
    model = Evidence
    extra = 0
    fields = ("ref", "run_ref", "iteration", "digest_sha", "note")
    readonly_fields = fields


class VoteInline(admin.TabularInline):
    model = Vote
    extra = 0
    fields = ("reviewer", "verdict", "text", "reason", "via", "created_at")
    readonly_fields = fields


class DecisionInline(admin.TabularInline):
    model = Decision
    extra = 0
    fields = ("outcome", "decided_by", "text", "reason", "memory_version", "created_at")
    readonly_fields = fields


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    list_display = ("pk", "experiment", "kind", "short_text", "status", "origin", "version", "first_seen_at")
    list_filter = ("kind", "status", "origin")
    search_fields = ("text", "edited_text", "key", "experiment__slug")
    readonly_fields = ("first_seen_at", "updated_at", "decided_at")
    inlines = [EvidenceInline, VoteInline, DecisionInline]
    actions = ["curate_now"]

    @admin.display(description="text")
    def short_text(self, obj: Proposal) -> str:
        return obj.promoted_text[:100]

    @admin.action(description="Curate now (every finished root run of these proposals' experiments)")
    def curate_now(self, request: HttpRequest, queryset: QuerySet[Proposal]) -> None:
        total = CurationSummary()
        for experiment in Experiment.objects.filter(proposals__in=queryset).distinct():
            total.add(curate_experiment(experiment=experiment))
        self.message_user(request, f"Curated {total.runs} runs: {total.proposed} new, {total.already_known} known.", messages.SUCCESS)


@admin.register(Vote)
class VoteAdmin(admin.ModelAdmin):
    list_display = ("proposal", "reviewer", "verdict", "via", "created_at")
    list_filter = ("verdict",)


@admin.register(Fact)
class FactAdmin(admin.ModelAdmin):
    list_display = ("proposal", "version", "state", "memory_version", "author", "created_at")
    list_filter = ("state",)
    search_fields = ("text",)


@admin.register(WritebackAttempt)
class WritebackAttemptAdmin(admin.ModelAdmin):
    list_display = ("experiment", "trigger", "status", "attempts", "next_retry_at", "updated_at")
    list_filter = ("status", "trigger")
    readonly_fields = ("written_files", "memory_content", "error")


@admin.register(CuratedRun)
class CuratedRunAdmin(admin.ModelAdmin):
    list_display = ("run", "curated_at", "proposed", "already_known")


@admin.action(description="Curate now (finished root runs)")
def curate_experiments(modeladmin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet[Experiment]) -> None:
    total = CurationSummary()
    for experiment in queryset:
        total.add(curate_experiment(experiment=experiment))
    modeladmin.message_user(request, f"Curated {total.runs} runs: {total.proposed} new, {total.already_known} known.", messages.SUCCESS)


# The experiments app owns the Experiment admin; the curation action is added to it from here.
_experiment_admin = admin.site._registry.get(Experiment)
if _experiment_admin is not None and curate_experiments not in (_experiment_admin.actions or []):
    _experiment_admin.actions = [*(_experiment_admin.actions or []), curate_experiments]
