"""Experiment pages: the list, creation, and the experiment's tabs (Protocol here; others in their apps)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import connection
from django.db.models import Count, Max, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from experiments.access import experiment_view
from experiments.forms import ExperimentCreateForm, ProtocolForm
from experiments.models import Experiment, Membership, Run, role_at_least
from memory.curation.badge import pending_count, with_pending_counts
from memory.curation.models import Proposal


def render_tab(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """Render an experiment tab: the whole page, or only its #tab partial for an htmx tab switch."""
    experiment = context["experiment"]
    role = getattr(request, "experiment_role", None)
    context.setdefault("role", role)
    context.setdefault("is_curator", role_at_least(role, Membership.Role.CURATOR))
    context.setdefault("is_owner", role_at_least(role, Membership.Role.OWNER))
    if "pending_count" not in context:
        context["pending_count"] = _read_tab_counts(experiment)
    if request.htmx and not request.htmx.boosted and request.htmx.target == "tab":
        return render(request, f"{template}#tab", context)
    return render(request, template, context)


def _read_tab_counts(experiment: Experiment) -> int:
    """The tabs' two counts in one statement: proposals waiting for review (answered) and runs running (kept on the
    experiment as its running_run_count)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM curation_proposal WHERE experiment_id = %s AND status = %s),"
            " (SELECT count(*) FROM experiments_run WHERE experiment_id = %s AND status = %s)",
            [experiment.pk, Proposal.Status.PENDING, experiment.pk, Run.Status.RUNNING],
        )
        pending, running = cursor.fetchone()
    experiment.__dict__["running_run_count"] = running  # the cached_property's value
    return int(pending)


def pending_proposals(experiment: Experiment) -> int:
    """Pending review items for the experiment's Review badge."""
    return pending_count(experiment)


def can_create_experiments(user: Any) -> bool:
    return bool(user.is_staff or user.memberships.filter(role=Membership.Role.OWNER).exists())


@require_GET
def experiment_list(request: HttpRequest) -> HttpResponse:
    experiments = with_pending_counts(
        Experiment.objects.visible_to(request.user)
        .annotate(run_count=Count("runs", distinct=True), last_activity=Max("runs__updated_at"))
        .order_by("-updated_at")
    )
    query = request.GET.get("q", "").strip()
    status = request.GET.get("status", "")
    tag = request.GET.get("tag", "").strip()
    if query:
        experiments = experiments.filter(Q(name__icontains=query) | Q(goal__icontains=query))
    if status:
        experiments = experiments.filter(status=status)
    if tag:
        experiments = experiments.filter(tags__contains=[tag])
    context = {
        "experiments": experiments[:200],
        "q": query,
        "status": status,
        "tag": tag,
        "statuses": Experiment.Status.choices,
        "can_create": can_create_experiments(request.user),
        "form": ExperimentCreateForm(),
    }
    if request.htmx and request.htmx.target == "experiment-rows":
        return render(request, "experiments/experiment_list.html#rows", context)
    return render(request, "experiments/experiment_list.html", context)


@require_http_methods(["POST"])
def experiment_create(request: HttpRequest) -> HttpResponse:
    if not can_create_experiments(request.user):
        return HttpResponse("Only owners can create experiments.", status=403)
    form = ExperimentCreateForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(" ".join(errs) for errs in form.errors.values()))
        return redirect("experiments:list")
    experiment = form.save(commit=False)
    from django.utils.text import slugify

    experiment.slug = slugify(experiment.name)[:80]
    experiment.save()
    Membership.objects.create(user=request.user, experiment=experiment, role=Membership.Role.OWNER)
    messages.success(request, f"Created {experiment.name}. Connect it to your runtime below.")
    return redirect("experiments:connect", slug=experiment.slug)


@require_http_methods(["GET", "POST"])
@experiment_view()
def protocol_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    is_owner = role_at_least(request.experiment_role, Membership.Role.OWNER)  # type: ignore[attr-defined]
    form = ProtocolForm(instance=experiment)
    if request.method == "POST":
        if not is_owner:
            return HttpResponse("Only owners can edit the protocol.", status=403)
        form = ProtocolForm(request.POST, instance=experiment)
        if form.is_valid():
            form.save()
            messages.success(request, "Protocol saved.")
            if not request.htmx:
                return redirect("experiments:protocol", slug=experiment.slug)
            form = ProtocolForm(instance=experiment)
    return render_tab(request, "experiments/protocol_tab.html", {"experiment": experiment, "form": form, "tab": "protocol"})


# The Runs tab and the run pages live in run_views (the ingest part).
from experiments.run_views import run_detail, runs_tab  # noqa: E402,F401
