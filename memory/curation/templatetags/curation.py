"""Template tags of the curation part: the Curated panel, includable from any experiment page."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.inclusion_tag("curation/_curated_panel_body.html", takes_context=True)
def curated_panel(context: template.Context) -> dict[str, Any]:
    """Promoted items with versions and (for curators) Retract; needs `experiment` and `request` in the context."""
    from memory.curation.views import curated_context

    experiment = context["experiment"]
    request = context.get("request")
    role = experiment.role_of(request.user) if request is not None else context.get("role")
    return {**curated_context(experiment, role), "note": context.get("note", ""), "csrf_token": context.get("csrf_token")}
