"""Who changed what between DAG state files (pure): each key's own agent, never a remove of what the file's agent never owned."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiments.ingest import EventIn, append_events
from state.blame import file_changes
from state.models import RuleViolation, StateDelta
from state.replay import apply_diff
from state.services import state_at_seq
from tests.factories import make_run
from tests.state.strategies import json_values

AGENTS = ["zed_scout", "mid_builder", "alpha_judge"]


def test_a_parallel_levels_checkpoint_blames_each_sibling_for_its_own_key():
    # In a parallel level the runtime merges every result before writing each agent's checkpoint.
    after = {"zed_scout": {"summary": "z"}, "mid_builder": {"summary": "m"}}
    found = file_changes({}, after, agent="zed_scout", agents=AGENTS)
    assert {(b.agent_id, b.entry.path) for b in found.changes} == {("zed_scout", "$.zed_scout"), ("mid_builder", "$.mid_builder")}
    assert found.dropped == []


def test_keys_the_file_agent_never_owned_are_reported_not_removed():
    before = {"zed_scout": {"summary": "z"}, "mid_builder": {"summary": "m", "notes": "n"}, "shared": 1}
    after = {"zed_scout": {"summary": "z2"}, "mid_builder": {"summary": "m"}}
    found = file_changes(before, after, agent="zed_scout", agents=AGENTS)
    assert [(b.agent_id, b.entry.op, b.entry.path) for b in found.changes] == [("zed_scout", "changed", "$.zed_scout.summary")]
    assert sorted(e.path for e in found.dropped) == ["$.mid_builder.notes", "$.shared"]


def test_an_agent_may_remove_inside_its_own_key_and_a_late_file_only_adds():
    before = {"zed_scout": {"summary": "z", "draft": "d"}}
    found = file_changes(before, {"zed_scout": {"summary": "z"}}, agent="zed_scout", agents=AGENTS)
    assert [(b.agent_id, b.entry.op) for b in found.changes] == [("zed_scout", "removed")] and not found.dropped
    late = file_changes({"mid_builder": {"summary": "m"}}, {"zed_scout": {"summary": "z"}}, agent="zed_scout", agents=AGENTS, late=True)
    assert [(b.agent_id, b.entry.op) for b in late.changes] == [("zed_scout", "added")] and not late.dropped


@given(st.lists(st.dictionaries(st.sampled_from(["summary", "score", "notes"]), json_values, max_size=3), min_size=3, max_size=3))
def test_cumulative_files_in_runtime_order_blame_each_agent_for_exactly_its_key(results):
    # The runtime's shared_dict: after agent i ran, its file holds every result so far.
    state: dict = {}
    blamed: dict[str, set[str]] = {}
    for agent, result in zip(AGENTS, results, strict=True):
        after = {**state, agent: result}
        found = file_changes(state, after, agent=agent, agents=AGENTS)
        assert not found.dropped and all(b.entry.op != "removed" for b in found.changes)
        for b in found.changes:
            blamed.setdefault(b.agent_id, set()).add(b.entry.path.split(".")[1].split("[")[0])
        state = apply_diff(state, [b.entry for b in found.changes])
        assert state == after
    assert all(keys == {agent} for agent, keys in blamed.items())


@pytest.mark.django_db
def test_a_state_file_that_drops_another_agents_key_is_a_problem_on_the_run_not_a_remove(experiment):
    run = make_run(experiment)

    def state_file(agent: str, second: int, state: dict) -> EventIn:
        when = datetime(2026, 11, 23, 13, 51, second, tzinfo=UTC)
        payload = {"agent_id": agent, "timestamp": when.isoformat(), "state": state, "file": f"data/state/r/{agent}.json"}
        return EventIn(kind="state.snapshot", dedupe_key=f"file:{agent}", payload=payload, agent_id=agent, occurred_at=when, ts_source="record")

    append_events(run, [state_file("zed_scout", 1, {"zed_scout": {"summary": "z"}, "notes": "n"})])
    append_events(run, [state_file("mid_builder", 2, {"mid_builder": {"summary": "m"}})])
    assert not StateDelta.objects.filter(run=run, op="remove").exists()
    problems = RuleViolation.objects.filter(run=run)
    assert sorted((p.rule, p.agent_id, p.path) for p in problems) == [
        ("snapshot_dropped_key", "mid_builder", "$.notes"),
        ("snapshot_dropped_key", "mid_builder", "$.zed_scout"),
    ]
    assert state_at_seq(run=run)[1] == {"zed_scout": {"summary": "z"}, "notes": "n", "mid_builder": {"summary": "m"}}
