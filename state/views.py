"""The run page's State tab: the state at a seq (time travel), as an agent sees it, a diff, and a path's blame."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from experiments.access import experiment_view
from experiments.models import Experiment, Membership, Run, role_at_least
from state.config import state_settings
from state.paths import PathError, format_path, parse_path
from state.replay import diff
from state.rounds import settled_from
from state.rounds_chart import changes_chart
from state.services import (
    agents_of,
    head_seq,
    path_history,
    round_reports,
    state_at_seq,
    state_changes_around,
    view_as,
)
from state.services_redaction import redact_for, redactor_for
from state.viewing import audit_reveal, event_at, redact_diff, rounds_out, tree


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw not in (None, "") else None  # type: ignore[arg-type]
    except ValueError:
        return None


@require_GET
@experiment_view()
def run_state(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    run = get_object_or_404(experiment.runs, pk=pk)
    is_owner = role_at_least(request.experiment_role, Membership.Role.OWNER)  # type: ignore[attr-defined]
    reveal = is_owner and request.GET.get("reveal") == "1"
    agent = request.GET.get("as", "").strip()
    seq, state = state_at_seq(run=run, seq=_int(request.GET.get("seq")))
    context = state_context(run, seq=seq, state=state, agent=agent, reveal=reveal)
    context.update(compare_context(run, request.GET.get("from"), seq=seq, state=context["raw_view"], agent=agent, reveal=reveal))
    context.update(history_context(run, request.GET.get("path", ""), reveal=reveal))
    if reveal:
        audit_reveal(user=request.user, run=run, seq=seq, where="page", request=request)
    context.update({"experiment": experiment, "run": run, "run_tab": "state", "is_owner": is_owner})
    context.update(links(request, context))
    if request.htmx and request.htmx.target in ("run-tab", "state-tab"):
        return render(request, "state/run_state.html#run_tab", context)
    return render(request, "state/run_state.html", context)


def links(request: HttpRequest, context: dict[str, Any]) -> dict[str, str]:
    """URLs of the step buttons, the head, reveal/hide and blame, keeping the other choices."""
    base = request.path
    keep = {"seq": context["seq"], "as": context["agent"], "from": context["compare_from"], "reveal": "1" if context["reveal"] else ""}

    def link(**changes: Any) -> str:
        params = {k: v for k, v in {**keep, **changes}.items() if v not in (None, "")}
        return f"{base}?{urlencode(params)}" if params else base

    return {
        "tab_url": base,
        "previous_url": link(seq=context["previous_seq"]) if context["previous_seq"] is not None else "",
        "next_url": link(seq=context["next_seq"]) if context["next_seq"] is not None else "",
        "head_url": link(seq=None, reveal=""),
        "reveal_url": link(reveal="1"),
        "hide_url": link(reveal=""),
        "blame_base": link() + ("&" if "?" in link() else "?") + "path=",
    }


def state_context(run: Run, *, seq: int, state: dict[str, Any], agent: str, reveal: bool) -> dict[str, Any]:
    """What the tree and the time-travel controls show (redacted unless an owner reveals)."""
    head = head_seq(run)
    seen = view_as(run=run, state=state, agent=agent or None)
    shown = seen if reveal else redact_for(run.experiment, seen)
    previous, following = state_changes_around(run=run, seq=seq)
    event = event_at(run, seq)
    return {
        "seq": seq,
        "head": head,
        "is_head_view": seq >= head and not agent and not reveal,
        "raw_view": seen,
        "root": tree(shown),
        "is_empty": not shown,
        "hidden_from_agent": bool(agent) and not shown and bool(state),
        "agent": agent,
        "agents": agents_of(run),
        "reveal": reveal,
        "previous_seq": previous,
        "next_seq": following,
        "event": event,
        "event_payload": None if event is None else (event.payload if reveal else redact_for(run.experiment, event.payload)),
    }


def compare_context(run: Run, raw_from: str | None, *, seq: int, state: dict[str, Any], agent: str, reveal: bool) -> dict[str, Any]:
    """The colored diff from seq `from` to the current seq, in the same view."""
    base_seq = _int(raw_from)
    if base_seq is None:
        return {"compare_from": None, "changes": []}
    base_seq, base = state_at_seq(run=run, seq=base_seq)
    base = view_as(run=run, state=base, agent=agent or None)
    return {"compare_from": base_seq, "changes": redact_diff(run.experiment, diff(base, state), reveal=reveal)}


def history_context(run: Run, raw_path: str, *, reveal: bool) -> dict[str, Any]:
    """Blame for one path: every delta that touched it or the objects above and below it."""
    if not raw_path:
        return {"history_path": "", "history": [], "history_error": ""}
    try:
        path = format_path(parse_path(raw_path))
    except PathError as exc:
        return {"history_path": raw_path, "history": [], "history_error": str(exc)}
    redactor = redactor_for(run.experiment)
    rows = path_history(run=run, path=path)
    for row in rows:
        row.shown_value = row.written_value if reveal else redactor.at(parse_path(row.path), row.written_value)
        if not reveal:
            row.provenance = redactor.value(row.provenance)  # display copy only: never saved
    return {"history_path": path, "history": rows, "history_error": ""}


DETAIL_ROUNDS = 30  # round cards on one page; the chart and the table always cover every round
DETAIL_DELTAS = 200  # delta rows per round card


@require_GET
@experiment_view()
def run_rounds(request: HttpRequest, experiment: Experiment, pk: int) -> HttpResponse:
    """State tab → Rounds: each round's deltas, conflicts, validation and changes, and how the run settles."""
    run = get_object_or_404(experiment.runs, pk=pk)
    context = rounds_context(experiment, run, chosen=_int(request.GET.get("round")))
    context.update({"experiment": experiment, "run": run, "run_tab": "state"})
    if request.htmx and request.htmx.target in ("run-tab", "state-tab"):
        return render(request, "state/run_rounds.html#run_tab", context)
    return render(request, "state/run_rounds.html", context)


def rounds_context(experiment: Experiment, run: Run, *, chosen: int | None) -> dict[str, Any]:
    """The chart and table of every round, and cards for the last rounds (or the one `?round=` names), redacted."""
    reports = round_reports(run=run)
    rounds = rounds_out(experiment, reports)
    detailed = [r for r in rounds if r["round"] == chosen] if chosen is not None else rounds[-DETAIL_ROUNDS:]
    config = state_settings(experiment.protocol)
    return {
        "rounds": rounds,
        "detailed": detailed,
        "detailed_rounds": [r["round"] for r in detailed],
        "detail_deltas": DETAIL_DELTAS,
        "detail_slice": f":{DETAIL_DELTAS}",
        "chart": changes_chart([(r["round"], len(r["changed_paths"]), r["converged"], bool(r["oscillating"])) for r in rounds]),
        "settled_from": settled_from(reports),
        "oscillating_rounds": [r["round"] for r in rounds if r["oscillating"]],
        "stable_paths": config.stable_paths.texts,
        "epsilon": config.convergence_epsilon,
        "strategy": config.conflict.strategy,
    }
