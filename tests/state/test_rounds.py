"""Round analysis (pure) on hand-made round sequences: changed paths, conflicts, convergence, oscillation."""

from __future__ import annotations

from itertools import count

from hypothesis import given, settings
from hypothesis import strategies as st

from state.deltas import apply_op, copy_json
from state.paths import get_path, parse_path
from state.rounds import DeltaRecord, ViolationRecord, analyse_rounds, settled_from
from state.stable import ABSENT, same_json
from tests.state.strategies import evaluate_all, raw_deltas

_seq = count(1)


def rec(round_: int, op: str, path: str, value=None, *, agent="a", weight=1.0, outcome="applied", seq=None, written=None) -> DeltaRecord:
    value_written = value if written is None else written
    return DeltaRecord(
        seq=seq or next(_seq), index=0, agent_id=agent, round=round_, weight=weight, op=op, path=path, value=value,
        provenance="test", outcome=outcome, written=value_written,
    )


def test_changed_paths_and_a_round_that_changes_nothing_is_converged():
    reports = analyse_rounds(
        [
            rec(1, "add", "$.bindings.customer", "c1", agent="mapper"),
            rec(2, "add", "$.bindings.order", "o1", agent="mapper"),
            rec(2, "modify", "$.bindings.customer", "c1", agent="checker"),  # same value again: no change
            rec(3, "modify", "$.bindings.order", "o1", agent="checker"),
        ],
        [],
    )
    assert [r.round for r in reports] == [1, 2, 3]
    assert [r.changed_paths for r in reports] == [["$.bindings.customer"], ["$.bindings.order"], []]
    assert [r.converged for r in reports] == [False, False, True]
    assert reports[1].agents == ["checker", "mapper"] and len(reports[1].deltas) == 2
    assert reports[0].changes[0].old is ABSENT and reports[0].changes[0].new == "c1"
    assert settled_from(reports) == 3


def test_epsilon_converges_small_numeric_changes_only():
    rounds = [
        rec(1, "add", "$.score", 0.5),
        rec(2, "modify", "$.score", 0.55),
        rec(3, "modify", "$.score", 0.551),
        rec(4, "modify", "$.score", 0.552),
        rec(4, "add", "$.note", "x"),
        rec(5, "modify", "$.score", True),
    ]
    exact = analyse_rounds(rounds, [])
    assert [r.converged for r in exact] == [False] * 5
    loose = analyse_rounds(rounds, [], epsilon=0.01)
    assert [r.converged for r in loose] == [False, False, True, False, False]  # round 4 added a key; round 5 is not numeric
    assert settled_from(loose) is None


def test_oscillation_is_a_return_to_the_value_of_two_rounds_before():
    reports = analyse_rounds(
        [
            rec(1, "add", "$.plan", "A"),
            rec(2, "modify", "$.plan", "B"),
            rec(3, "modify", "$.plan", "A"),
            rec(4, "modify", "$.plan", "B"),
            rec(5, "modify", "$.plan", "C"),
            rec(6, "modify", "$.other", 1, outcome="refused"),
        ],
        [],
    )
    assert [r.oscillating for r in reports] == [[], [], ["$.plan"], ["$.plan"], [], []]
    assert reports[-1].converged and reports[-1].changed_paths == []


def test_oscillation_through_an_object_written_above_the_path():
    reports = analyse_rounds(
        [
            rec(1, "add", "$.cfg", {"mode": "fast"}),
            rec(2, "modify", "$.cfg.mode", "slow"),
            rec(3, "modify", "$.cfg", {"mode": "fast"}),
            rec(4, "modify", "$.cfg.mode", "slow"),
        ],
        [],
    )
    assert [r.oscillating for r in reports] == [[], [], ["$.cfg"], ["$.cfg.mode"]]


def test_removal_and_readding_is_oscillation():
    reports = analyse_rounds([rec(1, "add", "$.x", 1), rec(2, "remove", "$.x"), rec(3, "add", "$.x", 1)], [])
    assert [r.changed_paths for r in reports] == [["$.x"], ["$.x"], ["$.x"]]
    assert reports[1].changes[0].new is ABSENT and reports[2].oscillating == ["$.x"]


def test_conflicts_name_winner_and_losers_and_violations_land_in_their_round():
    reports = analyse_rounds(
        [
            rec(1, "add", "$.answer", "42", agent="solver", weight=0.9, seq=10),
            rec(1, "add", "$.answer", "41", agent="guesser", weight=0.2, outcome="lost", seq=10),
            rec(1, "add", "$.tags", ["x", "y"], agent="t1", seq=11, written=["x", "y", "z"]),
            rec(1, "add", "$.tags", ["z"], agent="t2", outcome="merged", seq=11),
            rec(2, "add", "$._meta", 1, outcome="refused", seq=12),
        ],
        [ViolationRecord(seq=12, rule="R13", message="reserved"), ViolationRecord(seq=13, rule="identity_changed", message="m")],
        strategy="highest-weight",
    )
    first, second = reports
    assert [(c.path, c.winner.agent_id, [loser.agent_id for loser in c.losers]) for c in first.conflicts] == [
        ("$.answer", "solver", ["guesser"]),
        ("$.tags", "t1", ["t2"]),
    ]
    assert first.conflicts[0].strategy == "highest-weight"
    assert first.changes[1].new == ["x", "y", "z"]  # the merged value is what the round wrote
    assert [v.rule for v in second.violations] == ["R13", "identity_changed"] and first.violations == []


def test_violations_without_deltas_still_make_a_round():
    reports = analyse_rounds([], [ViolationRecord(seq=3, rule="invalid_delta", message="no provenance")])
    assert [(r.round, r.converged, len(r.violations)) for r in reports] == [(0, True, 1)]


@given(st.lists(raw_deltas, max_size=30))
@settings(max_examples=150, deadline=None)
def test_changed_paths_are_the_written_paths_whose_value_differs_across_the_round(payloads):
    # Deltas evaluated as the projection does (refused ones skipped) become written records; an independent
    # replay, round by round, says which written paths hold another value after the round than before it.
    changes, final = evaluate_all(payloads)
    records = [
        DeltaRecord(seq=c.seq, index=0, agent_id=c.agent_id, round=payloads[c.seq - 1]["round"], weight=1.0, op=c.op, path=c.path,
                    value=c.value, provenance="p", outcome="applied", written=c.value)
        for c in changes
    ]
    reports = analyse_rounds(records, [])
    state: dict = {}
    for report in reports:
        before = copy_json(state)
        for record in report.deltas:
            apply_op(state, record.op, parse_path(record.path), record.written)
        written = dict.fromkeys(r.path for r in report.deltas)
        expected = [p for p in written if not same_json(get_path(before, parse_path(p), ABSENT), get_path(state, parse_path(p), ABSENT))]
        assert report.changed_paths == expected
        assert report.converged == (not expected)
    assert state == final and sum(len(r.deltas) for r in reports) == len(records)
