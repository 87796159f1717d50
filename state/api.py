"""The state API router, mounted under /api/v1/ by awp_site.api: state at a seq, and the history of a path."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Router, Schema

from awp_site.apierrors import ApiError
from awp_site.auth import api_auth, authorize_experiment
from experiments.models import Experiment, Membership, Run, role_at_least
from state.declared import MAX_DECLARED, declare, refusals
from state.paths import PathError, format_path, parse_path
from state.services import path_history, round_reports, state_at_seq, view_as
from state.services_redaction import redactor_for
from state.viewing import audit_reveal, redact_state, rounds_out

router = Router(tags=["state"], auth=api_auth)


class StateOut(Schema):
    seq: int
    state: dict[str, Any]


class DeltaOut(Schema):
    seq: int
    agent_id: str
    round: int
    weight: float
    op: str
    path: str
    value: Any = None
    provenance: str
    outcome: str


class HistoryOut(Schema):
    path: str
    deltas: list[DeltaOut]


class RoundDeltaOut(Schema):
    seq: int
    agent_id: str
    weight: float
    op: str
    path: str
    value: Any = None
    provenance: str
    outcome: str
    code: str


class ConflictOut(Schema):
    path: str
    strategy: str
    winner: RoundDeltaOut | None
    losers: list[RoundDeltaOut]


class ViolationOut(Schema):
    seq: int
    rule: str
    message: str
    agent_id: str
    path: str


class RoundOut(Schema):
    round: int
    agents: list[str]
    deltas: list[RoundDeltaOut]
    changed_paths: list[str]
    conflicts: list[ConflictOut]
    violations: list[ViolationOut]
    rules_checked: list[str]
    oscillating: list[str]
    converged: bool


def run_for(request: HttpRequest, run_id: str, experiment: str | None = None) -> Run:
    """The run named by the runtime's run id (newest, or in `experiment`) or by its number, if the caller may read it."""
    caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None:
        experiments = Experiment.objects.filter(pk=caller.token.experiment_id)
    else:
        experiments = Experiment.objects.visible_to(caller.user)
    if experiment:
        experiments = experiments.filter(slug=experiment)
    runs = Run.objects.filter(experiment__in=experiments).select_related("experiment")
    found = runs.filter(run_id=run_id).order_by("-created_at").first()
    if found is None and run_id.isdigit() and len(run_id) < 18:
        found = runs.filter(pk=int(run_id)).first()
    if found is None:
        raise ApiError(404, "unknown_run", f"No run '{run_id}' that you can see.")
    authorize_experiment(request, found.experiment, scope="memory:read")
    return found


def may_reveal(request: HttpRequest, run: Run, reveal: bool) -> bool:
    """Only a logged-in owner (not a token) may ask for unredacted values."""
    caller = request.auth  # type: ignore[attr-defined]
    if not reveal:
        return False
    if caller.token is not None or not role_at_least(run.experiment.role_of(caller.user), Membership.Role.OWNER):
        raise ApiError(403, "reveal_forbidden", "Only an owner of the experiment, logged in, may reveal sensitive values.")
    return True


@router.get("/runs/{run_id}/state", response=StateOut, summary="A run's state at a seq (as an agent sees it)")
def get_state(
    request: HttpRequest, run_id: str, seq: int | None = None, as_agent: str = "", reveal: bool = False, experiment: str | None = None
) -> dict[str, Any]:
    run = run_for(request, run_id, experiment)
    if seq is not None and seq < 0:
        raise ApiError(422, "invalid_seq", "seq must be zero or a positive ledger position.")
    reveal = may_reveal(request, run, reveal)
    at, state = state_at_seq(run=run, seq=seq)
    state = view_as(run=run, state=state, agent=as_agent or None)
    if reveal:
        audit_reveal(user=request.auth.user, run=run, seq=at, where="api", request=request)  # type: ignore[attr-defined]
        return {"seq": at, "state": state}
    return {"seq": at, "state": redact_state(run.experiment, state)}


@router.get("/runs/{run_id}/state/history", response=HistoryOut, summary="Every delta that touched a path (blame)")
def get_history(request: HttpRequest, run_id: str, path: str, experiment: str | None = None) -> dict[str, Any]:
    run = run_for(request, run_id, experiment)
    try:
        normalized = format_path(parse_path(path))
    except PathError as exc:
        raise ApiError(422, "invalid_path", str(exc)) from None
    redactor = redactor_for(run.experiment)
    deltas = [
        {
            "seq": d.seq,
            "agent_id": d.agent_id,
            "round": d.round,
            "weight": d.weight,
            "op": d.op,
            "path": d.path,
            "value": redactor.at(parse_path(d.path), d.value),
            "provenance": redactor.value(d.provenance),
            "outcome": d.outcome,
        }
        for d in path_history(run=run, path=normalized)
    ]
    return {"path": normalized, "deltas": deltas}


@router.get("/runs/{run_id}/state/rounds", response=list[RoundOut], summary="Round by round: deltas per agent, conflicts, changes, convergence")
def get_rounds(request: HttpRequest, run_id: str, experiment: str | None = None) -> list[dict[str, Any]]:
    run = run_for(request, run_id, experiment)
    return rounds_out(run.experiment, round_reports(run=run))


# ---- declared secrets -----------------------------------------------------------------------------


class SecretsIn(Schema):
    values: list[Any] = Field(
        ..., json_schema_extra={"items": {"type": "string"}},
        description=f"the runtime's secret values (at most {MAX_DECLARED}); masked by value on every way out from now on, never shown",
    )  # fmt: skip
    experiment: str | None = Field(None, description="experiment slug; optional with a token (must be the token's), required with a session")


class SecretsOut(Schema):
    declared: int = Field(..., description="values accepted (all of them: a refused value refuses the request)")
    new: int = Field(..., description="values the experiment did not know yet")


@router.post(
    "/secrets",
    response=SecretsOut,
    summary="Declare secret values to mask by value (the runtime's secrets.yaml or .env values; all or nothing)",
    openapi_extra={"responses": {401: {"description": "no credentials"}, 403: {"description": "token of another experiment or without scope ingest"}, 422: {"description": "per-item errors (index and code, never the value)"}}},
)
def declare_secrets(request: HttpRequest, body: SecretsIn) -> dict[str, int]:
    from experiments.api import ingest_experiment

    experiment = ingest_experiment(request, body.experiment)
    if len(body.values) > MAX_DECLARED:
        raise ApiError(413, "too_many_secrets", f"Declare at most {MAX_DECLARED} values at a time; this request has {len(body.values)}.", max_values=MAX_DECLARED)
    errors = [refused.as_dict() for refused in refusals(body.values)]
    if errors:
        raise ApiError(422, "invalid_secrets", f"{len(errors)} value(s) cannot be masked by value; nothing was learnt.", errors=errors)
    return {"declared": len(body.values), "new": declare(experiment.pk, body.values)}
