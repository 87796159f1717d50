"""Which runs carried which promoted memory, trial arms, and whether the runs that carried a fact did better.

Exposure is recorded where memory leaves the server: inside the services that build the prior-run block,
the recall block and the MEMORY.md read (keyed by the caller's `run_id`, marked *served* with the agent), and
for AWP folders from the write-back that preceded a run's start (marked *inferred*). Trials decide, per run,
whether their fact is withheld; every way out asks `withheld_for_run` (API) or `withheld_for_next_run`
(write-back), so an arm never leaks into the other.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import connection, transaction

from experiments.models import Experiment, Run
from memory import impact
from memory.curation.models import Exposure, FactTrial, Proposal, TrialArm, WritebackAttempt
from memory.curation.render import marked_proposals, one_line

MIN_MATCH_CHARS = 12


def run_named(experiment: Experiment, run_id: str) -> Run | None:
    """The experiment's run with the runtime's id `run_id` (None for an unknown or empty id)."""
    return Run.objects.filter(experiment=experiment, run_id=run_id).first() if run_id else None


# ---------------------------------------------------------------- trials


def _arm_for(trial: FactTrial, run: Run | None) -> TrialArm:
    """The arm of `run` in `trial` (None: the next AWP-folder run), decided once and kept."""
    if run is not None:
        found = trial.arms.filter(run=run).first()
        if found is not None:
            return found
    else:
        found = trial.arms.filter(run__isnull=True).first()
        if found is not None:
            return found
    index = trial.arms.count()
    carried = impact.trial_arm(index=index, seed=trial.seed, assignment=trial.assignment)
    return TrialArm.objects.create(trial=trial, run=run, index=index, carried=carried)


def _running_trials(experiment: Experiment, *, measured: bool = False) -> list[FactTrial]:
    # Locked: two requests of the same run (prior and recall at once) must not each open an arm.
    statuses = [FactTrial.Status.RUNNING] + ([FactTrial.Status.MEASURED] if measured else [])
    return list(
        FactTrial.objects.select_for_update()
        .filter(proposal__experiment=experiment, status__in=statuses)
        .order_by("pk")
    )


@transaction.atomic
def withheld_for_run(experiment: Experiment, run: Run | None) -> set[int]:
    """Proposal ids of facts on trial that this run's arm withholds (a run without id gets every fact)."""
    if run is None:
        return set()
    while run.parent_id is not None:  # one arm per run tree: a sub-manager gets its root's arm
        run = Run.objects.get(pk=run.parent_id)
    withheld = set()
    for trial in _running_trials(experiment, measured=True):
        if trial.status == FactTrial.Status.MEASURED:
            # Measured, waiting for the decision: a run of the trial keeps its arm, any later run gets the fact.
            arm = trial.arms.filter(run=run).first()
            if arm is not None and not arm.carried:
                withheld.add(trial.proposal_id)
            continue
        if not _arm_for(trial, run).carried:
            withheld.add(trial.proposal_id)
        _close_measured(trial)
    return withheld


@transaction.atomic
def withheld_for_next_run(experiment: Experiment) -> set[int]:
    """Proposal ids the next write-back leaves out: the next AWP-folder run's arm of each running trial."""
    return {trial.proposal_id for trial in _running_trials(experiment) if not _arm_for(trial, None).carried}


def _close_measured(trial: FactTrial) -> None:
    if trial.status == FactTrial.Status.RUNNING and trial.arms.filter(run__isnull=False).count() >= trial.runs_planned:
        trial.arms.filter(run__isnull=True).delete()  # the arm prepared for a run that is no longer in the trial
        trial.status = FactTrial.Status.MEASURED
        trial.save(update_fields=["status"])


# ---------------------------------------------------------------- recording


def items_in(experiment: Experiment, text: str) -> list[tuple[str, int | None]]:
    """The promoted facts and pool facts a served text carries, as (item, proposal id)."""
    if not text:
        return []
    flat = one_line(text)
    marked = marked_proposals(text)
    found: list[tuple[str, int | None]] = []
    facts = Proposal.objects.filter(experiment=experiment, kind=Proposal.Kind.FACT).exclude(status=Proposal.Status.PENDING)
    for pk, original, edited in facts.values_list("pk", "text", "edited_text"):
        text = one_line(edited or original)
        # A MEMORY.md line names its proposal; elsewhere the fact's text must stand whole (and not be a mere word).
        if pk in marked or (len(text) >= MIN_MATCH_CHARS and text in flat):
            found.append((f"proposal:{pk}", pk))
    from pool.shared import subscribed_facts

    found += [(fact.label, None) for fact in subscribed_facts(experiment) if one_line(fact.statement) in flat]
    return found


def record_served(
    *, experiment: Experiment, run: Run | None, channel: str, agent_id: str, text: str, memory_version: int | None = None
) -> int:
    """Record what a served text gave `run` (nothing without a run); returns how many items it carried."""
    if run is None:
        return 0
    rows = [
        Exposure(run=run, proposal_id=pk, item=item[:300], channel=channel, mode=Exposure.Mode.SERVED,
                 agent_id=agent_id[:200], memory_version=memory_version)
        for item, pk in items_in(experiment, text)
    ]  # fmt: skip
    Exposure.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def writeback_before(run: Run) -> WritebackAttempt | None:
    """The last successful write-back before the run started (what its folder held when it began)."""
    started = run.started_at or run.created_at
    return (
        WritebackAttempt.objects.filter(experiment_id=run.experiment_id, status=WritebackAttempt.Status.OK, updated_at__lte=started)
        .order_by("-updated_at", "-pk")
        .first()
    )


@transaction.atomic
def infer_from_writeback(run: Run) -> WritebackAttempt | None:
    """Record an AWP-folder root run's inferred exposure, and give it the trial arm its write-back prepared."""
    attempt = writeback_before(run)
    if attempt is None:
        return None
    carried = {pk for pk in attempt.carried if isinstance(pk, int)}
    pool_labels = sorted(str(label) for label in attempt.carried if isinstance(label, str))
    existing = set(Proposal.objects.filter(pk__in=carried).values_list("pk", flat=True))
    items = [(f"proposal:{pk}", pk) for pk in sorted(existing)] + [(label[:300], None) for label in pool_labels]
    Exposure.objects.bulk_create(
        [
            Exposure(run=run, proposal_id=pk, item=item, channel=Exposure.Channel.WRITEBACK,
                     mode=Exposure.Mode.INFERRED, memory_version=attempt.memory_version)
            for item, pk in items
        ],
        ignore_conflicts=True,
    )  # fmt: skip
    for trial in _running_trials(run.experiment):
        if trial.arms.filter(run=run).exists():
            continue
        pending = trial.arms.filter(run__isnull=True).first()
        if pending is not None and pending.created_at <= attempt.updated_at:
            pending.run = run
            pending.carried = trial.proposal_id in carried  # what was written is the truth of the arm
            pending.save(update_fields=["run", "carried"])
        _close_measured(trial)
    return attempt


def on_root_run_finished(run: Run) -> None:
    """After a root run of an AWP folder finished: its inferred exposure; a running trial gets the next arm written."""
    infer_from_writeback(run)
    experiment = run.experiment
    if FactTrial.objects.filter(proposal__experiment=experiment, status__in=[FactTrial.Status.RUNNING, FactTrial.Status.MEASURED]).exists():
        if experiment.writeback_enabled and experiment.workspace_path:
            from memory.curation.writeback import write_back

            write_back(experiment_id=experiment.pk, trigger="trial")


# ---------------------------------------------------------------- outcomes and impact

_OUTCOME_SQL = """
SELECT run_id,
       avg(CASE WHEN jsonb_typeof(payload->'confidence') = 'number' THEN (payload->>'confidence')::float END),
       avg(CASE WHEN jsonb_typeof(payload->'_eval_score') = 'number' THEN (payload->>'_eval_score')::float
                WHEN kind = 'metric.eval' AND jsonb_typeof(payload->'score') = 'number' THEN (payload->>'score')::float END)
FROM experiments_event WHERE run_id = ANY(%s) AND kind IN ('worker.complete', 'metric.eval') GROUP BY run_id
"""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def run_outcomes(runs: Iterable[Run]) -> dict[int, dict[str, float | None]]:
    """What each finished run reports: eval score, worker confidence, completion, iterations, tokens, duration."""
    runs = [run for run in runs if run.is_terminal]
    out: dict[int, dict[str, float | None]] = {}
    for run in runs:
        tokens = (run.budget_used or {}).get("tokens")
        out[run.pk] = {
            "eval_score": None,
            "confidence": None,
            "completed": 1.0 if run.status == Run.Status.COMPLETE else 0.0,
            "iterations": float(run.iterations) if run.iterations else None,
            "tokens": _number(tokens.get("consumed") if isinstance(tokens, dict) else tokens),
            "duration_s": run.duration_seconds if run.ended_at else None,
        }
    if out:
        with connection.cursor() as cursor:
            cursor.execute(_OUTCOME_SQL, [list(out)])
            for run_pk, confidence, score in cursor.fetchall():
                out[run_pk]["confidence"] = confidence
                out[run_pk]["eval_score"] = score
    return out


def _root_runs(experiment: Experiment) -> list[Run]:
    return list(experiment.runs.filter(parent__isnull=True).exclude(status=Run.Status.RUNNING))


def _root_of(experiment: Experiment) -> Any:
    """run id → the id of its root run (a sub-manager's exposure counts for the tree it belongs to)."""
    parents = dict(experiment.runs.values_list("pk", "parent_id"))

    def root(run_id: int) -> int:
        seen = 0
        while parents.get(run_id) is not None and seen < 100:
            run_id, seen = parents[run_id], seen + 1
        return run_id

    return root


def exposed_runs(experiment: Experiment) -> dict[int, set[int]]:
    """Proposal id → the ids of the root runs whose tree carried it."""
    rows = list(Exposure.objects.filter(run__experiment=experiment, proposal__isnull=False).values_list("proposal_id", "run_id"))
    root = _root_of(experiment) if rows else None
    carried: dict[int, set[int]] = defaultdict(set)
    for proposal_id, run_id in rows:
        carried[proposal_id].add(root(run_id))  # type: ignore[misc]
    return carried


def _split(runs: list[Run], carried: set[int], outcomes: dict[int, dict[str, float | None]]) -> tuple[list[Any], list[Any]]:
    with_runs = [run for run in runs if run.pk in carried]
    tasks = {run.task_id for run in with_runs}
    # Same task where known: when every run that carried the fact worked on one task, compare within it.
    same_task = len(tasks) == 1 and None not in tasks
    without = [run for run in runs if run.pk not in carried and (not same_task or run.task_id in tasks)]
    return [outcomes[r.pk] for r in with_runs if r.pk in outcomes], [outcomes[r.pk] for r in without if r.pk in outcomes]


def fact_impacts(experiment: Experiment, *, only: list[int] | None = None, headline_only: bool = False) -> dict[int, list[impact.Comparison]]:
    """Facts' comparisons (all facts, or `only` these), from one read of runs, outcomes and exposures."""
    carried = exposed_runs(experiment)
    if only is not None:
        carried = {pk: runs for pk, runs in carried.items() if pk in only}
    if not carried:
        return {}
    runs = _root_runs(experiment)
    outcomes = run_outcomes(runs)
    result = {}
    for proposal_id, run_ids in carried.items():
        with_values, without_values = _split(runs, run_ids, outcomes)
        result[proposal_id] = impact.compare_all(with_values, without_values, seed=proposal_id, first_only=headline_only)
    return result


def pool_impacts(experiment: Experiment) -> dict[str, tuple[int, list[impact.Comparison]]]:
    """Each shared pool fact served to this experiment's runs (by its label): runs that carried it and impact."""
    rows = list(Exposure.objects.filter(run__experiment=experiment, item__startswith="pool:").values_list("item", "run_id"))
    if not rows:
        return {}
    root = _root_of(experiment)
    carried: dict[str, set[int]] = defaultdict(set)
    for item, run_id in rows:
        carried[item].add(root(run_id))
    runs = _root_runs(experiment)
    outcomes = run_outcomes(runs)
    result = {}
    for label, run_ids in sorted(carried.items()):
        with_values, without_values = _split(runs, run_ids, outcomes)
        result[label] = (len(run_ids), impact.compare_all(with_values, without_values, seed=len(label)))
    return result


def trial_impact(trial: FactTrial) -> list[impact.Comparison]:
    """The trial's own comparison: its runs given the fact against its runs that were not."""
    arms = list(trial.arms.filter(run__isnull=False).select_related("run"))
    outcomes = run_outcomes([arm.run for arm in arms if arm.run is not None])
    with_values = [outcomes[a.run_id] for a in arms if a.carried and a.run_id in outcomes]
    without_values = [outcomes[a.run_id] for a in arms if not a.carried and a.run_id in outcomes]
    return impact.compare_all(with_values, without_values, seed=trial.seed)


def run_exposures(run: Run) -> list[Exposure]:
    """What one run carried, oldest first (the run page's list)."""
    return list(Exposure.objects.filter(run=run).select_related("proposal").order_by("created_at", "pk"))
