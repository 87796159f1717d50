"""Live refresh of the State tab's head view (#state-head) when new state events arrive."""

from __future__ import annotations

from django.template.loader import render_to_string
from django.urls import reverse

from awp_site.live import Viewer, register_run_fragment
from experiments.models import Event, Run
from state.services import STATE_EVENT_KINDS, state_at_seq
from state.services_redaction import redact_for
from state.viewing import tree


def render_state_head(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    """The #state-head fragment at the head, always redacted (reveals are per page view and audited)."""
    if not any(event.kind in STATE_EVENT_KINDS for event in events):
        return []
    seq, state = state_at_seq(run=run)
    shown = redact_for(run.experiment, state)
    url = reverse("state:run-state", args=[run.experiment.slug, run.pk])
    context = {"seq": seq, "root": tree(shown), "is_empty": not shown, "blame_base": f"{url}?path=", "oob": True}
    return [render_to_string("state/_state_head.html", context)]


def register() -> None:
    register_run_fragment("state", render_state_head)
