"""Replay from the nearest snapshot plus the tail equals replay from the start; diff/apply; the three models."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from state.replay import (
    Cqrs,
    EventSourced,
    SharedDict,
    apply_diff,
    diff,
    nearest_snapshot,
    state_at,
    take_snapshots,
)
from tests.state.strategies import documents, evaluate_all, raw_deltas


@settings(max_examples=200)
@given(st.lists(raw_deltas, max_size=40), st.integers(1, 7))
def test_replay_from_snapshot_plus_tail_equals_full_replay(payloads, every):
    changes, final = evaluate_all(payloads)
    assert SharedDict().replay({}, changes) == final
    snapshots = take_snapshots(changes, every)
    for seq in range(len(payloads) + 1):
        full = SharedDict().replay({}, [c for c in changes if c.seq <= seq])
        snapshot = nearest_snapshot(snapshots, seq)
        tail = [c for c in changes if c.seq > (snapshot.seq if snapshot else 0)]
        assert len([c for c in tail if c.seq <= seq]) <= every  # never more than K deltas read
        assert state_at(snapshot, tail, seq) == full


@given(st.lists(raw_deltas, max_size=30))
def test_the_three_state_models_agree_at_every_seq(payloads):
    changes, _ = evaluate_all(payloads)
    for seq in range(len(payloads) + 1):
        upto = [c for c in changes if c.seq <= seq]
        expected = SharedDict().replay({}, upto)
        assert EventSourced().replay({}, upto) == expected
        assert Cqrs().replay({}, upto) == expected


@settings(max_examples=300)
@given(documents, documents)
def test_diff_applied_gives_the_target(a, b):
    entries = diff(a, b)
    assert apply_diff(a, entries) == b
    assert (entries == []) == (a == b and diff(b, a) == [])


def test_diff_names_added_changed_removed():
    entries = diff({"a": 1, "b": {"x": 1}, "c": True}, {"a": 2, "b": {"x": 1, "y": 2}, "c": 1})
    assert [(e.op, e.path) for e in entries] == [("changed", "$.a"), ("added", "$.b.y"), ("changed", "$.c")]


def test_replay_does_not_alias_recorded_values():
    changes, _ = evaluate_all(
        [
            {"agent_id": "a", "round": 0, "op": "add", "path": "$.a", "value": {"x": 1}, "provenance": "p"},
            {"agent_id": "a", "round": 0, "op": "modify", "path": "$.a.x", "value": 2, "provenance": "p"},
        ]
    )
    assert SharedDict().replay({}, changes) == {"a": {"x": 2}}
    assert SharedDict().replay({}, changes[:1]) == {"a": {"x": 1}}
