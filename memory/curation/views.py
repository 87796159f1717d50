"""The Review tab (the curation capability fills it)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from experiments.access import experiment_view
from experiments.models import Experiment
from experiments.views import render_tab


@require_GET
@experiment_view()
def review_tab(request: HttpRequest, experiment: Experiment) -> HttpResponse:
    return render_tab(request, "curation/review_tab.html", {"experiment": experiment, "tab": "review"})
