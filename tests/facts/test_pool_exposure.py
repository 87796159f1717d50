"""A shared pool fact served in a run's prior-run block is that run's exposure, measured like a promoted fact."""

from __future__ import annotations

import pytest
from django.test import Client

from experiments.ingest import EventIn, append_events
from memory.curation.models import Exposure
from memory.curation.prior import prior_run_block
from memory.exposure import pool_impacts
from pool import services
from tests.factories import make_experiment, make_member, make_run
from tests.pool.test_experiments import accepted_fact

pytestmark = pytest.mark.django_db(transaction=True)


def _finished(experiment, confidence: float):  # type: ignore[no-untyped-def]
    run = make_run(experiment)
    append_events(run, [EventIn(kind="worker.complete", dedupe_key="w1", agent_id="w", iteration=1, payload={"confidence": confidence}),
                        EventIn(kind="run.complete", dedupe_key="file:run_completion.json", payload={"status": "complete"})])  # fmt: skip
    run.refresh_from_db()
    return run


def test_pool_fact_served_to_runs_is_exposure_with_impact():
    experiment = make_experiment()
    owner = make_member(experiment, "owner")
    services.set_subscription(experiment=experiment, mode="all", tags=[], user=owner)
    accepted_fact("p-fast", "Retry the flaky upstream twice before giving up.")
    served = [_finished(experiment, c) for c in (0.9, 0.85, 0.95)]
    for run in served:
        assert "Retry the flaky upstream" in prior_run_block(experiment, run_id=run.run_id, agent_id="manager")
    for c in (0.4, 0.5, 0.45):
        _finished(experiment, c)
    items = set(Exposure.objects.filter(run__in=served).values_list("item", "mode", "agent_id"))
    assert items == {("pool:fact:p-fast v1", "served", "manager")}
    [(label, (runs, comparisons))] = pool_impacts(experiment).items()
    assert runs == 3 and comparisons[0].metric == "confidence" and comparisons[0].low > 0
    client = Client()
    client.force_login(owner)
    assert label in client.get(f"/experiments/{experiment.slug}/memory/facts/").content.decode()


def test_pool_fact_written_back_is_inferred_exposure_of_the_next_folder_run(tmp_path):
    from django.utils import timezone

    from experiments.models import Experiment
    from memory.curation.writeback import write_back
    from memory.exposure import infer_from_writeback

    experiment = make_experiment()
    owner = make_member(experiment, "owner")
    services.set_subscription(experiment=experiment, mode="all", tags=[], user=owner)
    accepted_fact("p-disk", "Keep the scratch disk under 80 percent.")
    (tmp_path / "wf").mkdir()
    Experiment.objects.filter(pk=experiment.pk).update(workspace_path=str(tmp_path / "wf"), writeback_enabled=True)
    attempt = write_back(experiment_id=experiment.pk, trigger="manual")
    assert attempt is not None and attempt.status == "ok" and attempt.carried == ["pool:fact:p-disk v1"]
    run = make_run(experiment, started_at=timezone.now())
    infer_from_writeback(run)
    assert list(Exposure.objects.filter(run=run).values_list("item", "mode", "channel")) == [("pool:fact:p-disk v1", "inferred", "writeback")]
