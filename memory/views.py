"""The Memory tab: sub-tabs Long-term, Curated, Working, Episodic, Recall, Notes, Search, Audit (each its own URL)."""

from __future__ import annotations

import calendar
from datetime import UTC, date
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import select_template
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from experiments.access import experiment_view
from experiments.models import Experiment, Membership
from experiments.views import render_tab
from memory import reflection as reflections
from memory import search as memory_search
from memory.documents import diff_lines
from memory.episodes import recall_agents, recall_data, recall_for
from memory.forms import LongTermEditForm, NoteForm, RecallForm, SearchForm
from memory.highlight import highlight
from memory.longterm import (
    current_long_term,
    get_long_term_version,
    long_term_history,
    restore_long_term_version,
    write_long_term_version,
)
from memory.markdown import render_markdown
from memory.models import AccessAudit, Episode, MemoryEntry, Note, Reflection
from memory.recall import OUTPUT_KINDS, RecallConfigError
from memory.services import save_note
from memory.working import summarize_result
from state.services_redaction import Redactor, redact_text_for, redactor_for

TEMPLATE = "memory/memory_tab.html"
CURATOR = Membership.Role.CURATOR


def _tab(request: HttpRequest, experiment: Experiment, subtab: str, **context: Any) -> HttpResponse:
    return render_tab(
        request, TEMPLATE,
        {"experiment": experiment, "tab": "memory", "subtab": subtab, "panel": f"memory/_{subtab}.html", **context},
    )  # fmt: skip


@require_GET
@experiment_view()
def memory_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    return _long_term(request, experiment)  # the experiment is loaded and checked once


@require_GET
@experiment_view()
def long_term(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    return _long_term(request, experiment)


def _long_term(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    current = current_long_term(experiment)
    shown = current
    if request.GET.get("v", "").isdigit():
        shown = get_long_term_version(experiment, int(request.GET["v"]))
        if shown is None:
            raise Http404("No such version.")
    redactor = redactor_for(experiment)
    # Masked before rendering (the Markdown is built from the masked text), sanitized by nh3 in render_markdown.
    rendered = mark_safe(render_markdown(redactor.text(shown.content))) if shown else ""
    history = [_with(d, reason=redactor.text(d.reason)) for d in long_term_history(experiment)]
    return _tab(request, experiment, "long_term", current=current, shown=shown, rendered=rendered, history=history)


@require_GET
@experiment_view()
def long_term_diff(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    try:
        old, new = int(request.GET.get("a", "")), int(request.GET.get("b", ""))
    except ValueError:
        raise Http404("Choose two versions to compare.") from None
    documents = {d.version: d for d in experiment.memory_documents.filter(version__in=[old, new])}
    if old not in documents or new not in documents:
        raise Http404("No such version.")
    redactor = redactor_for(experiment)
    lines = diff_lines(redactor.text(documents[old].content), redactor.text(documents[new].content))
    return _tab(request, experiment, "diff", old=old, new=new, lines=lines, history=long_term_history(experiment))


@require_http_methods(["GET", "POST"])
@experiment_view(CURATOR)
def long_term_edit(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    current = current_long_term(experiment)
    version = current.version if current else 0
    # The editor starts from the masked text: a curator never sees a secret, and saving keeps it masked.
    masked = redact_text_for(experiment, current.content) if current else ""
    form = LongTermEditForm(request.POST or None, initial={"content": masked, "base_version": version})
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["base_version"] != version:
            form.add_error(None, f"MEMORY.md changed meanwhile (now v{version}); review the new text and save again.")
        else:
            write_long_term_version(experiment=experiment, content=form.cleaned_data["content"],
                                    reason=form.cleaned_data["reason"], author=request.user)  # fmt: skip
            messages.success(request, "Saved a new version of MEMORY.md.")
            return redirect("memory:long-term", experiment.slug)
    return _tab(request, experiment, "edit", form=form, current=current)


@require_POST
@experiment_view(CURATOR)
def long_term_restore(request: HttpRequest, experiment: Experiment, version: int) -> HttpResponse:
    try:
        document = restore_long_term_version(experiment=experiment, version=version, author=request.user)
    except LookupError:
        raise Http404("No such version.") from None
    messages.success(request, f"Restored v{version} as v{document.version}.")
    return redirect("memory:long-term", experiment.slug)


@require_GET
@experiment_view()
def curated(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    # The curation part owns this panel (template and context); without it a placeholder stands in.
    panel = select_template(["curation/_curated_panel.html", "memory/_curated_placeholder.html"]).template.name
    extra: dict[str, Any] = {}
    try:
        from memory.curation.views import curated_context
    except ImportError:
        pass
    else:
        extra = curated_context(experiment, request.experiment_role)  # type: ignore[attr-defined]
        extra.pop("experiment", None)
    return _tab(request, experiment, "curated", **{**extra, "curated_panel": panel})


@require_GET
@experiment_view()
def working(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    show_archived = request.GET.get("archived") == "1"
    entries = MemoryEntry.objects.filter(experiment=experiment).visible(include_archived=show_archived)
    agent = request.GET.get("agent", "")
    days = sorted(set(entries.values_list("day", flat=True)), reverse=True)
    chosen = _parse_day(request.GET.get("day")) or (days[0] if days else timezone.now().astimezone(UTC).date())
    day_entries = entries.filter(day=chosen).select_related("run")
    if agent:
        day_entries = day_entries.filter(agent_id=agent)
    # The runtime logs results as "- **api_key**: …" lines and reprs: mask every shape on the way out.
    redactor = redactor_for(experiment)
    day_entries = [_with(e, content=redactor.text(e.content)) for e in day_entries]
    agents = sorted(set(entries.exclude(agent_id="").values_list("agent_id", flat=True)))
    return _tab(request, experiment, "working", chosen=chosen, entries=day_entries, agent=agent, agents=agents,
                weeks=_month(chosen, set(days)), show_archived=show_archived,
                archived_count=MemoryEntry.objects.filter(experiment=experiment, is_archived=True).count())  # fmt: skip


def _with(row: Any, **masked: str) -> Any:
    for name, value in masked.items():
        setattr(row, name, value)  # display copy only: never saved
    return row


def _parse_day(value: str | None) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def _month(chosen: date, days_with_entries: set[date]) -> list[list[dict[str, Any]]]:
    weeks = calendar.Calendar(firstweekday=0).monthdatescalendar(chosen.year, chosen.month)
    return [[{"day": d, "in_month": d.month == chosen.month, "has": d in days_with_entries} for d in week] for week in weeks]


@require_GET
@experiment_view()
def episodic(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    # The agent's outputs as recall sees them (worker results, DAG steps, board posts): one list for the tab,
    # `agent_filter` search and the recall block.
    agents = recall_agents(experiment)
    agent = request.GET.get("agent") or (agents[0] if agents else "")
    rows = (Episode.objects.filter(experiment=experiment, agent_id=agent, kind__in=OUTPUT_KINDS)
            .select_related("run").order_by("-occurred_at", "-pk")[:200])  # fmt: skip
    redactor = redactor_for(experiment)
    outputs = []
    for episode in rows:
        fields = redactor.value(episode.fields if isinstance(episode.fields, dict) else {})
        confidence = fields.get("confidence")
        outputs.append({"episode": episode, "summary": redactor.text(summarize_result(fields) or episode.text),
                        "confidence": confidence if isinstance(confidence, int | float) else None,
                        "where": _turn_label(episode)})  # fmt: skip
    return _tab(request, experiment, "episodic", agents=agents, agent=agent, outputs=outputs,
                reflections=_reflections(experiment, agent, done_only=True))  # fmt: skip


def _turn_label(episode: Episode) -> str:
    if episode.kind == "state.snapshot":
        return f"step {episode.turn}"
    if episode.kind == "board.post":
        return f"board post (iteration {episode.turn})"
    return f"iteration {episode.turn}"


def _reflections(experiment: Experiment, agent: str, *, done_only: bool = False) -> list[dict[str, Any]]:
    """An agent's reflections, newest first, with every text through the redaction façade."""
    rows = Reflection.objects.filter(experiment=experiment, agent_id=agent).select_related("proposal")
    if done_only:
        rows = rows.filter(status=Reflection.Status.DONE)
    return [
        {"row": r, "belief": redact_text_for(experiment, r.belief), "error": redact_text_for(experiment, r.error),
         "episodes": len(r.episode_keys), "proposal": r.proposal}
        for r in rows[:50]
    ]  # fmt: skip


@require_GET
@experiment_view()
def recall(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    agents = recall_agents(experiment)
    # With no choice yet, show the first agent's block: the page is useful at once (and crawlable).
    form = RecallForm(request.GET or ({"agent": agents[0]} if agents else None), agents=agents)
    context: dict[str, Any] = {"form": form, "agents": agents, "recall": None, "reflection_on": reflections.is_enabled(),
                               "reflection_off": reflections.OFF_SENTENCE, "is_curator": _may_write_notes(request)}  # fmt: skip
    if form.is_valid() and form.cleaned_data["agent"]:
        data = form.cleaned_data
        try:
            block = recall_for(experiment=experiment, agent_id=data["agent"], query=data["q"], turn=data["turn"], top_k=data["top_k"])
        except RecallConfigError as exc:
            context["recall_error"] = f"The protocol's memory settings cannot be used: {exc}"
        else:
            context["recall"] = recall_data(experiment, block)
            context["reflections"] = _reflections(experiment, data["agent"])
    if request.htmx and request.htmx.target == "recall-result":
        return render(request, "memory/_recall.html#result", {"experiment": experiment, **context})
    return _tab(request, experiment, "recall", **context)


@require_POST
@experiment_view(CURATOR)
def reflect_now(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    agent = request.POST.get("agent", "")
    if agent not in recall_agents(experiment):
        raise Http404("No such agent in this experiment.")
    if not reflections.is_enabled():
        messages.error(request, reflections.OFF_SENTENCE)
    else:
        try:
            summary = reflections.reflect_experiment(experiment=experiment, agent_id=agent, force=True, trigger="manual")
        except RecallConfigError as exc:
            messages.error(request, f"The protocol's memory settings cannot be used: {exc}")
        else:
            if summary.reflections:
                messages.success(request, f"{agent} reflected; the belief waits in the Review queue.")
            else:
                messages.error(request, f"The reflection of {agent} failed; it is recorded below and will be retried.")
    return redirect(reverse("memory:recall", args=[experiment.slug]) + f"?agent={agent}")


@require_http_methods(["GET", "POST"])
@experiment_view()
def notes(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    form = NoteForm(request.POST or None)
    if request.method == "POST":
        if not _may_write_notes(request):
            raise PermissionDenied("Viewers read notes; curators and owners write them.")
        if form.is_valid():
            save_note(experiment=experiment, author=request.user, **form.cleaned_data)
            return redirect("memory:notes", experiment.slug)
    redactor = redactor_for(experiment)
    listing = [_with(n, content=redactor.text(n.content)) for n in Note.objects.filter(experiment=experiment).select_related("author")]
    return _tab(request, experiment, "notes", form=form, notes=listing, may_write=_may_write_notes(request))


def _may_write_notes(request: HttpRequest) -> bool:
    """Curators and owners (notes, Reflect now)."""
    from experiments.access import can

    return can(request, CURATOR)


@require_http_methods(["GET", "POST"])
@experiment_view()
def note_edit(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    note = get_object_or_404(Note, experiment=experiment, pk=pk)
    if not note.is_editable_by(request.user):
        raise PermissionDenied("Only the author of a note edits it.")
    form = NoteForm(request.POST or None, instance=note)
    if request.method == "POST" and form.is_valid():
        save_note(experiment=experiment, author=request.user, note=note, **form.cleaned_data)
        return redirect("memory:notes", experiment.slug)
    return _tab(request, experiment, "note_edit", form=form, note=note)


@require_GET
@experiment_view()
def search(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    form = SearchForm(request.GET or None, initial={"mode": "keyword"})
    context: dict[str, Any] = {"form": form, "hits": None}
    if request.GET and form.is_valid():
        data = form.cleaned_data
        query = memory_search.SearchRequest(
            query=data["q"], mode=data["mode"], tiers=tuple(data["tiers"]), start=data["start"], end=data["end"],
            agent_filter=tuple(a.strip() for a in data["agents"].split(",") if a.strip()),
            max_results=data["max_results"] or 20,
        )  # fmt: skip
        try:
            result = memory_search.search_memory(experiment, query)
        except memory_search.SearchRefused as refused:
            context["search_error"] = refused.message
        else:
            redactor = redactor_for(experiment)
            context["hits"] = _grouped([_hit_view(experiment, hit, data["q"], redactor) for hit in result.hits])
            context["total"], context["strategy"] = result.total, result.strategy
    return _tab(request, experiment, "search", **context)


def _hit_view(experiment: Experiment, hit: memory_search.SearchHit, query: str, redactor: Redactor) -> dict[str, Any]:
    # Masked before highlighting (a secret learnt after its chunk was stored is masked here), escaped first.
    content = redactor.text(hit.content)
    return {"hit": hit, "html": mark_safe(highlight(content, query)), "link": _source_link(experiment, hit)}


def _grouped(views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per text: the same fact found in several tiers (working and episodic) is shown once, at its
    best rank, naming every place it was found."""
    by_text: dict[str, dict[str, Any]] = {}
    for view in views:
        key = " ".join(str(view["hit"].content).split()).casefold()
        first = by_text.get(key)
        if first is None:
            by_text[key] = {**view, "also": []}
        else:
            first["also"].append(view)
    return list(by_text.values())


def _source_link(experiment: Experiment, hit: memory_search.SearchHit) -> str:
    from django.urls import reverse

    kind, _, rest = hit.ref_key.partition(":")
    if kind == "lt":
        return reverse("memory:long-term", args=[experiment.slug])
    if kind == "entry" and hit.timestamp:
        return reverse("memory:working", args=[experiment.slug]) + f"?day={hit.timestamp.date().isoformat()}&archived=1"
    if kind == "ev":
        return reverse("experiments:run-detail", args=[experiment.slug, int(rest.split(":")[0])])
    if kind == "note":
        return reverse("memory:notes", args=[experiment.slug]) + f"#note-{rest}"
    if kind == "pool":
        return reverse("pool:page")
    return reverse("memory:tab", args=[experiment.slug])


@require_GET
@experiment_view()
def audit(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    redactor = redactor_for(experiment)
    rows = [_with(a, detail=redactor.text(a.detail)) for a in AccessAudit.objects.filter(experiment=experiment).select_related("user", "token")[:300]]
    return _tab(request, experiment, "audit", rows=rows)
