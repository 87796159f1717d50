"""The experiments API router, mounted under /api/v1/ by awp_site.api."""

from __future__ import annotations

from django.db.models import Count
from django.http import HttpRequest
from ninja import Router, Schema

from awp_site.apierrors import ApiError
from awp_site.auth import api_auth
from experiments.models import Experiment

router = Router(tags=["experiments"], auth=api_auth)


class ExperimentOut(Schema):
    slug: str
    name: str
    status: str
    runs: int


@router.get("/experiments", response=list[ExperimentOut], summary="Experiments the caller can see")
def list_experiments(request: HttpRequest) -> list[dict[str, object]]:
    caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None:
        if not caller.token.has_scope("memory:read"):
            raise ApiError(403, "missing_scope", "This token lacks the 'memory:read' scope.")
        experiments = Experiment.objects.filter(pk=caller.token.experiment_id)
    else:
        experiments = Experiment.objects.visible_to(caller.user)
    rows = experiments.annotate(run_count=Count("runs")).order_by("slug")
    return [{"slug": e.slug, "name": e.name, "status": e.status, "runs": e.run_count} for e in rows]
