"""The state projector on real Postgres: refusals roll back, violations are flagged, snapshots bound the tail."""

from __future__ import annotations

import pytest
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.ingest import EventIn, append_events
from experiments.models import Event
from experiments.projections import IngestRefused, ProjectionContext
from state.models import RuleViolation, Snapshot, StateDelta, StateHead
from state.replay import Change, SharedDict
from state.services import path_history, rebuild_snapshots, rebuild_state, state_at_seq
from tests.state.helpers import d, push, run_with_protocol
from tests.state.strategies import raw_deltas

pytestmark = pytest.mark.django_db


def test_pushed_deltas_build_state_with_history():
    run = run_with_protocol()
    push(run, d("researcher", "add", "$.findings", ["42 is even"]), d("analyst", "add", "$.analysis.score", 0.8, round=2))
    push(run, d("researcher", "modify", "$.findings", ["42 is even", "42 = 6 x 7"], round=2))
    assert state_at_seq(run=run)[1] == {"findings": ["42 is even", "42 = 6 x 7"], "analysis": {"score": 0.8}}
    assert state_at_seq(run=run, seq=1)[1] == {"findings": ["42 is even"]}
    history = path_history(run=run, path="$['findings']")
    assert [(h.seq, h.agent_id, h.op, h.outcome) for h in history] == [(1, "researcher", "add", "applied"), (3, "researcher", "modify", "applied")]


def test_reserved_key_is_refused_with_r13_and_nothing_is_stored():
    run = run_with_protocol()
    push(run, d("a", "add", "$.x", 1))
    with pytest.raises(IngestRefused) as exc:
        push(run, d("a", "add", "$.y", 2), d("a", "add", "$._meta.owner", "me"))
    assert exc.value.code == "R13" and "_meta" in exc.value.message
    run.refresh_from_db()
    assert run.last_seq == 1 and Event.objects.filter(run=run).count() == 1
    assert state_at_seq(run=run)[1] == {"x": 1} and StateDelta.objects.filter(run=run).count() == 1


def test_state_limit_refused_in_reject_mode_and_state_unchanged():
    run = run_with_protocol("state:\n  limits: {max_state_size_mb: 0.001}\n")
    push(run, d("a", "add", "$.x", "small"))
    with pytest.raises(IngestRefused) as exc:
        push(run, d("a", "add", "$.big", "x" * 5000))
    assert exc.value.code == "state_limit" and "max_state_size_mb" in exc.value.message
    assert state_at_seq(run=run)[1] == {"x": "small"}


def test_state_limit_clipped_when_configured():
    run = run_with_protocol("state:\n  limits: {max_state_size_mb: 0.001, on_violation: clip}\n")
    push(run, d("a", "add", "$.big", "x" * 5000))
    row = StateDelta.objects.get(run=run)
    assert row.outcome == "clipped" and row.code == "state_limit" and len(row.value) < 1100
    assert state_at_seq(run=run)[1]["big"] == row.value


def test_ingested_runs_flag_violations_instead_of_refusing():
    run = run_with_protocol()
    push(run, d("a", "add", "$._trace.id", "t"), d("a", "modify", "$.missing", 1), d("a", "add", "$.ok", True), strict=False)
    assert state_at_seq(run=run)[1] == {"ok": True}
    assert sorted(RuleViolation.objects.filter(run=run).values_list("rule", flat=True)) == ["R13", "path_missing"]
    assert sorted(StateDelta.objects.filter(run=run).values_list("outcome", flat=True)) == ["applied", "refused", "refused"]


def test_invalid_payload_is_refused_with_a_specific_code():
    run = run_with_protocol()
    with pytest.raises(IngestRefused) as exc:
        push(run, {"agent_id": "a", "op": "add", "path": "$.a b", "value": 1, "provenance": "p"})
    assert exc.value.code == "invalid_path"
    with pytest.raises(IngestRefused) as exc:
        push(run, {"agent_id": "a", "op": "add", "path": "$.a", "value": 1})
    assert exc.value.code == "invalid_delta" and "provenance" in exc.value.message


@pytest.mark.parametrize(
    ("strategy", "expected", "outcomes"),
    [
        ("weighted", {"k": 1, "m": 2}, ["merged", "applied"]),
        ("highest-weight", {"m": 2}, ["lost", "applied"]),
        ("expert-override", {"k": 1}, ["applied", "lost"]),
    ],
)
def test_conflicting_deltas_resolve_by_strategy_and_losers_stay_in_history(strategy, expected, outcomes):
    run = run_with_protocol(f"state:\n  conflict_resolution: {{strategy: {strategy}, expert: mapper}}\n")
    push(run, d("mapper", "add", "$.b", {"k": 1}, weight=0.3), d("linker", "add", "$.b", {"m": 2}, weight=0.7))
    assert state_at_seq(run=run)[1] == {"b": expected}
    assert [h.outcome for h in path_history(run=run, path="$.b")] == outcomes


def test_majority_vote_and_union():
    run = run_with_protocol("state:\n  conflict_resolution: majority-vote\n")
    push(run, d("a", "add", "$.v", "x", weight=0.9), d("b", "add", "$.v", "y", weight=0.2), d("c", "add", "$.v", "y", weight=0.1))
    assert state_at_seq(run=run)[1] == {"v": "y"}
    run = run_with_protocol("state:\n  conflict_resolution: union\n")
    push(run, d("a", "add", "$.tags", ["x", "y"]), d("b", "add", "$.tags", ["y", "z"]))
    assert state_at_seq(run=run)[1] == {"tags": ["x", "y", "z"]}


@override_settings(AWP_SNAPSHOT_EVERY=3)
def test_snapshots_every_k_and_at_run_end_and_rebuild():
    run = run_with_protocol()
    for i in range(10):
        push(run, d("a", "add", f"$.k{i}", i))
    assert list(Snapshot.objects.filter(run=run).values_list("seq", flat=True)) == [3, 6, 9]
    append_events(run, [EventIn(kind="run.complete", dedupe_key="file:done", payload={"status": "complete"})])
    assert list(Snapshot.objects.filter(run=run).values_list("seq", "reason")) == [(3, "every"), (6, "every"), (9, "every"), (11, "run_end")]
    assert rebuild_snapshots(run=run) == 3
    head = StateHead.objects.get(run=run).state
    assert rebuild_state(run=run) == 10 and StateHead.objects.get(run=run).state == head
    assert state_at_seq(run=run, seq=5)[1] == {f"k{i}": i for i in range(5)}


@override_settings(AWP_SNAPSHOT_EVERY=4)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(raw_deltas, min_size=1, max_size=25))
def test_state_at_every_seq_equals_full_replay_of_stored_deltas(payloads):
    run = run_with_protocol()
    push(run, *payloads, strict=False)
    rows = list(StateDelta.objects.applied().filter(run=run).order_by("seq", "index"))
    for seq in range(0, len(payloads) + 1):
        full = SharedDict().replay({}, [Change(r.seq, r.index, r.op, r.path, r.written_value) for r in rows if r.seq <= seq])
        assert state_at_seq(run=run, seq=seq)[1] == full


def test_worker_results_become_state_of_the_worker():
    run = run_with_protocol()
    append_events(
        run,
        [
            EventIn(kind="worker.complete", dedupe_key="file:w1", payload={"summary": "s1", "confidence": 0.9}, agent_id="fact_collector", iteration=1),
            EventIn(kind="worker.complete", dedupe_key="file:w2", payload={"summary": "s2", "confidence": 0.5}, agent_id="fact_collector", iteration=2),
        ],
        ctx=ProjectionContext(strict=False, source="import"),
    )
    assert state_at_seq(run=run)[1] == {"fact_collector": {"summary": "s2", "confidence": 0.5}}
    history = path_history(run=run, path="$.fact_collector.summary")
    assert [h.op for h in history] == ["add", "modify"]
    assert "iteration 2" in history[1].provenance and "fact_collector" in history[1].provenance


def test_dag_state_files_are_diffed_into_agent_deltas():
    run = run_with_protocol()
    files = [
        ("researcher", {"task": "t", "researcher": {"summary": "r", "confidence": 0.9}}),
        ("analyst", {"task": "t", "researcher": {"summary": "r", "confidence": 0.9}, "analyst": {"score": 0.8}}),
        ("final", {"task": "t", "researcher": {"summary": "r", "confidence": 0.9}, "analyst": {"score": 0.8}, "_phases": []}),
    ]
    events = [
        EventIn(kind="state.snapshot", dedupe_key=f"file:{name}", payload={"agent_id": name, "state": state, "file": f"data/state/r/{name}.json"})
        for name, state in files
    ]
    append_events(run, events, ctx=ProjectionContext(strict=False, source="import"))
    assert state_at_seq(run=run)[1] == {"researcher": {"summary": "r", "confidence": 0.9}, "analyst": {"score": 0.8}}
    rows = StateDelta.objects.filter(run=run)
    assert {(r.agent_id, r.path) for r in rows} == {("researcher", "$.researcher"), ("analyst", "$.analyst")}
    assert rows.get(agent_id="analyst").provenance == "state file data/state/r/analyst.json"
