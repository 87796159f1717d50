"""awp_demo replays the recorded real run into the demo experiment; a second run duplicates nothing."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command

from experiments.demo import DEMO_DATA, RECORDED_RUN, replay_plan
from experiments.models import BoardPost, Digest, Event, Run


def test_demo_data_is_small_and_complete():
    size = sum(p.stat().st_size for p in DEMO_DATA.rglob("*") if p.is_file())
    assert size < 300_000
    plan = replay_plan()
    assert any(p.endswith("run_completion.json") for p in plan) and any("/digest/" in p for p in plan)
    assert all((DEMO_DATA / "workflow" / p).is_file() for p in plan)


@pytest.mark.django_db
def test_demo_replays_into_the_demo_experiment_once(settings, tmp_path):
    settings.AWP_DEMO_DIR = tmp_path / "demo"
    call_command("awp_demo", "--once", "--delay", "0", "--as-recorded")
    run = Run.objects.get(experiment__slug="demo", depth=0)
    count = Event.objects.filter(run=run).count()
    assert run.status == "complete" and run.iterations == 3 and count > 30
    assert BoardPost.objects.filter(run=run).exists() and Digest.objects.filter(run=run).count() >= 2
    lines = sum(1 for p in replay_plan() if p.startswith("workspace/blackboard/") for _ in (DEMO_DATA / "workflow" / p).read_text().splitlines())
    assert BoardPost.objects.filter(run=run).count() == lines
    # One run, one clock: every event's time lies within the recorded run, none is the replay's (or the import's).
    slack = timedelta(seconds=1)
    assert all(run.started_at - slack <= e.ts <= run.ended_at + slack for e in Event.objects.filter(run=run)), sorted(
        {(e.ts.isoformat(), e.ts_from) for e in Event.objects.filter(run=run)}
    )[-3:]
    call_command("awp_demo", "--once", "--delay", "0", "--as-recorded")
    assert Event.objects.filter(run=run).count() == count
    assert json.loads((DEMO_DATA / "replay.json").read_text())["recorded_with"].startswith("awp-agents")


@pytest.mark.django_db
def test_every_start_replays_a_run_to_watch_and_the_first_gives_two_to_compare(settings, tmp_path):
    from django.test import Client

    from experiments.models import Experiment
    from memory.curation.models import Proposal  # noqa: F401 - the demo's pages load with curation installed

    settings.AWP_DEMO_DIR = tmp_path / "demo"
    call_command("awp_demo", "--once", "--delay", "0")
    # The recorded run first, then the new one. The watcher may import both in one pass, in folder-name order, and a
    # new run's random suffix can sort before the recorded one's, so the runs are told apart by id, not by import order.
    runs = sorted(Run.objects.filter(experiment__slug="demo", depth=0), key=lambda r: r.run_id != RECORDED_RUN)
    assert [r.run_id for r in runs][0] == RECORDED_RUN and len(runs) == 2
    assert all(r.status == "complete" and r.iterations == 3 for r in runs)
    assert Digest.objects.filter(run=runs[1]).count() == Digest.objects.filter(run=runs[0]).count() >= 2  # SHAs recomputed, accepted
    assert Event.objects.filter(run=runs[1]).count() == Event.objects.filter(run=runs[0]).count()
    call_command("awp_demo", "--once", "--delay", "0")
    assert Run.objects.filter(experiment__slug="demo", depth=0).count() == 3  # the next start replays again
    demo = Experiment.objects.get(slug="demo")
    client = Client()
    client.force_login(demo.memberships.get().user)
    compare = client.get("/experiments/demo/compare/", {"a": runs[0].pk, "b": runs[1].pk})
    assert compare.status_code == 200


@pytest.mark.django_db
def test_demo_sharing_rules_name_the_demo_runs_agents(settings, tmp_path):
    from experiments.models import Experiment

    call_command("awp_seed_demo")
    rules = Experiment.objects.get(slug="demo").protocol["state"]["sharing"]["rules"]
    recorded = {p.split("/delegations/")[1].split("/")[0] for p in replay_plan() if "/delegations/" in p}
    assert recorded == {"fact_collector", "verifier"}
    assert {rules[0]["from"], *rules[0]["to"]} == recorded
