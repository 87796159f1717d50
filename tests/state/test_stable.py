"""Stable paths (pure): the pattern matcher (`*`, `**`, quoted keys) and the identity rule in the delta rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.deltas import DeltaError, IdentityChanged, Limits, StateBook, delta_from_payload
from state.paths import PathError, parse_path
from state.stable import (
    ABSENT,
    PatternError,
    StablePaths,
    format_pattern,
    matches,
    may_match_below,
    parse_pattern,
    same_json,
)
from tests.state.strategies import raw_deltas


def hits(pattern: str, path: str) -> bool:
    return matches(parse_pattern(pattern), parse_path(path))


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("$.bindings.*", "$.bindings.customer", True),
        ("$.bindings.*", "$.bindings", False),
        ("$.bindings.*", "$.bindings.customer.id", False),
        ("$.bindings.*", "$.other.customer", False),
        ("$.bindings[*]", "$.bindings.customer", True),
        ("$.list[*]", "$.list[3]", True),
        ("$.*.id", "$.a.id", True),
        ("$.*.id", "$.a.b.id", False),
        ("$.**.id", "$.id", True),
        ("$.**.id", "$.a.b[2].id", True),
        ("$.**.id", "$.a.ids", False),
        ("$.bindings.**", "$.bindings", False),
        ("$.bindings.**", "$.bindings.a", True),
        ("$.bindings.**", "$.bindings.a[0].b", True),
        ("$['a.b'].*", "$['a.b'].x", True),
        ("$['a.b'].*", "$.a.b.x", False),
        ("$['*']", "$['*']", True),
        ("$['*']", "$.anything", False),
        ('$["bindings"].customer', "$.bindings.customer", True),
        ("$.list[1]", "$.list[1]", True),
        ("$.list[1]", "$.list['1']", False),
    ],
)
def test_matcher(pattern, path, expected):
    assert hits(pattern, path) is expected


def test_patterns_have_one_spelling_and_bad_ones_are_named():
    assert format_pattern(parse_pattern("$['bindings'][*]")) == "$.bindings.*"
    assert format_pattern(parse_pattern("$['a.b'].**")) == "$['a.b'].**"
    for bad in ("bindings.*", "$.a.*b", "$", "$.a[*", "$['a"):
        with pytest.raises(PatternError):
            parse_pattern(bad)
    with pytest.raises(PathError):  # plain paths stay wildcard-free
        parse_path("$.bindings.*")


def test_may_match_below():
    assert may_match_below(parse_pattern("$.bindings.*"), ("bindings",))
    assert not may_match_below(parse_pattern("$.bindings.*"), ("bindings", "customer"))
    assert may_match_below(parse_pattern("$.**.id"), ("a", "b"))
    assert not may_match_below(parse_pattern("$.x.*"), ("y",))


paths = st.lists(st.one_of(st.sampled_from(["a", "b", "id"]), st.integers(0, 2)), min_size=1, max_size=4).map(tuple)
patterns = st.lists(st.sampled_from(["a", "b", "id", 0, 1, "*", "**"]), min_size=1, max_size=4)


def _pattern_text(items: list) -> str:
    return "$" + "".join(f"[{i}]" if isinstance(i, int) else f".{i}" for i in items)


@given(patterns, paths)
@settings(max_examples=300, deadline=None)
def test_matcher_agrees_with_a_regex_over_segments(items, path):
    import re

    # Reference: each segment as a token `/k`, `*` one token, `**` zero or more (one or more at the end).
    tokens = "".join(f"/{s}" for s in path)
    parts = []
    for n, item in enumerate(items):
        if item == "**":
            parts.append("(/[^/]+)+" if n == len(items) - 1 else "(/[^/]+)*")
        elif item == "*":
            parts.append("/[^/]+")
        else:
            parts.append(re.escape(f"/{item}"))
    assert matches(parse_pattern(_pattern_text(items)), path) is bool(re.fullmatch("".join(parts), tokens))


@given(patterns, paths)
@settings(max_examples=300, deadline=None)
def test_a_match_below_a_prefix_is_foreseen(items, path):
    pattern = parse_pattern(_pattern_text(items))
    for cut in range(len(path)):
        if matches(pattern, path):
            assert may_match_below(pattern, path[:cut])


def test_same_json_is_strict_about_types():
    assert same_json({"a": [1, "x"]}, {"a": [1, "x"]})
    assert not same_json(1, 1.0) and not same_json(1, True) and not same_json(0, None)
    assert not same_json("x", ABSENT)


# The identity rule ------------------------------------------------------------------------------------

STABLE = StablePaths.from_config(["$.bindings.*"])


def delta(op, path, value=None, round=1, agent="mapper"):
    payload = {"agent_id": agent, "round": round, "op": op, "path": path, "provenance": "test"}
    if op != "remove":
        payload["value"] = value
    return delta_from_payload(payload)


def bound() -> StateBook:
    book = StateBook()
    book.evaluate(delta("add", "$.bindings.customer", "sea:customer:001"), Limits(), stable=STABLE)
    return book


@pytest.mark.parametrize(
    ("op", "path", "value", "changed"),
    [
        ("modify", "$.bindings.customer", "sea:customer:002", "$.bindings.customer"),
        ("remove", "$.bindings.customer", None, "$.bindings.customer"),
        ("modify", "$.bindings", {"customer": "other"}, "$.bindings.customer"),
        ("remove", "$.bindings", None, "$.bindings.customer"),
    ],
)
def test_changing_a_set_identity_is_refused_and_nothing_changes(op, path, value, changed):
    book = bound()
    before = book.state
    with pytest.raises(IdentityChanged) as exc:
        book.evaluate(delta(op, path, value, round=2), Limits(), stable=STABLE)
    assert exc.value.code == "identity_changed" and changed in exc.value.message
    assert "sea:customer" not in exc.value.message  # values are formatted at the edge, redacted
    assert [c.path for c in exc.value.changes] == [changed] and exc.value.changes[0].old == "sea:customer:001"
    assert book.state == before == {"bindings": {"customer": "sea:customer:001"}} and book.round == 1


def test_same_value_new_keys_and_unset_values_are_not_changes():
    book = bound()
    book.evaluate(delta("modify", "$.bindings.customer", "sea:customer:001", round=2), Limits(), stable=STABLE)
    book.evaluate(delta("modify", "$.bindings", {"customer": "sea:customer:001", "order": None}, round=2), Limits(), stable=STABLE)
    book.evaluate(delta("modify", "$.bindings.order", "sea:order:7", round=3), Limits(), stable=STABLE)  # null was unset
    book.evaluate(delta("add", "$.bindings.product", "p", round=3), Limits(), stable=STABLE)
    book.evaluate(delta("add", "$.notes", {"x": 1}, round=3), Limits(), stable=STABLE)
    book.evaluate(delta("modify", "$.notes.x", 2, round=3), Limits(), stable=STABLE)
    assert book.state == {"bindings": {"customer": "sea:customer:001", "order": "sea:order:7", "product": "p"}, "notes": {"x": 2}}


def test_a_write_inside_an_identity_changes_it():
    stable = StablePaths.from_config(["$.**.concept"])
    book = StateBook()
    book.evaluate(delta("add", "$.entities", {"e1": {"concept": {"id": "c1"}}}), Limits(), stable=stable)
    with pytest.raises(IdentityChanged) as exc:
        book.evaluate(delta("modify", "$.entities.e1.concept.id", "c2"), Limits(), stable=stable)
    assert [c.path for c in exc.value.changes] == ["$.entities.e1.concept"]


def test_flagging_applies_the_change_and_reports_it():
    book = bound()
    decision = book.evaluate(delta("modify", "$.bindings.customer", "x", round=2), Limits(), stable=STABLE, flag_identity=True)
    assert decision.outcome == "applied" and [f.code for f in decision.flags] == ["identity_changed"]
    assert book.state == {"bindings": {"customer": "x"}} and book.round == 2


def _outcomes(payloads, **rules):
    book, out = StateBook(), []
    for payload in payloads:
        try:
            decision = book.evaluate(delta_from_payload(payload), Limits(), **rules)
            out.append((decision.outcome, decision.value, [f.code for f in decision.flags]))
        except DeltaError as error:
            out.append(("refused", error.code, error.message))
    return out, book.state, book.round


@given(st.lists(raw_deltas, max_size=25))
@settings(max_examples=200, deadline=None)
def test_no_stable_paths_behaves_exactly_as_before(payloads):
    today = _outcomes(payloads)
    assert _outcomes(payloads, stable=StablePaths.from_config(None)) == today
    assert _outcomes(payloads, stable=StablePaths.from_config([]), flag_identity=True) == today
    # Patterns that name no path the run writes change nothing either.
    assert _outcomes(payloads, stable=StablePaths.from_config(["$.bindings.*", "$.**.concept"])) == today


@given(st.lists(raw_deltas, max_size=25))
@settings(max_examples=200, deadline=None)
def test_flagged_identity_changes_leave_the_same_state_as_no_rule(payloads):
    stable = StablePaths.from_config(["$.a.*", "$.**.c"])
    flagged = _outcomes(payloads, stable=stable, flag_identity=True)
    assert flagged[1:] == _outcomes(payloads)[1:]
    assert [o[:2] for o in flagged[0]] == [o[:2] for o in _outcomes(payloads)[0]]
