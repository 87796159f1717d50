"""Delta invariants: provenance, rounds, add/modify/remove rules, R13 and the size limits (reject or clip)."""

from __future__ import annotations

import pytest

from state.deltas import MB, DeltaError, Limits, StateBook, delta_from_payload, json_size


def delta(**overrides):
    payload = {"agent_id": "a", "round": 1, "op": "add", "path": "$.x", "value": 1, "provenance": "because"}
    payload.update(overrides)
    return delta_from_payload(payload)


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"provenance": ""}, "invalid_delta"),
        ({"agent_id": ""}, "invalid_delta"),
        ({"op": "upsert"}, "invalid_delta"),
        ({"round": -1}, "invalid_delta"),
        ({"weight": "heavy"}, "invalid_delta"),
        ({"path": "x"}, "invalid_path"),
        ({"path": "$"}, "invalid_path"),
    ],
)
def test_bad_payloads_are_named(overrides, code):
    with pytest.raises(DeltaError) as exc:
        delta(**overrides)
    assert exc.value.code == code and exc.value.message


@pytest.mark.parametrize("key", ["_meta", "_errors", "_trace", "_workflow"])
def test_reserved_keys_are_r13(key):
    book = StateBook()
    with pytest.raises(DeltaError) as exc:
        book.evaluate(delta(path=f"$.{key}.x"), Limits())
    assert exc.value.code == "R13" and key in exc.value.message
    assert book.state == {}


def test_add_modify_remove_rules_and_rounds():
    book = StateBook()
    book.evaluate(delta(), Limits())
    with pytest.raises(DeltaError, match="already exists") as exc:
        book.evaluate(delta(value=2), Limits())
    assert exc.value.code == "path_exists"
    with pytest.raises(DeltaError) as exc:
        book.evaluate(delta(op="modify", path="$.y"), Limits())
    assert exc.value.code == "path_missing"
    book.evaluate(delta(op="modify", value=5, round=3), Limits())
    with pytest.raises(DeltaError) as exc:
        book.evaluate(delta(op="remove", round=2), Limits())
    assert exc.value.code == "round_order"
    book.evaluate(delta(op="remove", round=3), Limits())
    assert book.state == {}


def test_state_size_limit_rejects_and_leaves_state_unchanged():
    limits = Limits.from_config({"max_state_size_mb": 0.001, "max_field_size_mb": 1})
    book = StateBook()
    book.evaluate(delta(value="small"), limits)
    with pytest.raises(DeltaError) as exc:
        book.evaluate(delta(path="$.big", value="x" * 2000), limits)
    assert exc.value.code == "state_limit" and "max_state_size_mb" in exc.value.message
    assert book.state == {"x": "small"}


def test_clip_mode_fits_the_value_into_the_limits():
    limits = Limits.from_config({"max_state_size_mb": 0.001, "on_violation": "clip"})
    book = StateBook()
    decision = book.evaluate(delta(path="$.big", value="x" * 5000), limits)
    assert decision.outcome == "clipped" and decision.value.endswith("…")
    assert json_size(book.state) <= int(0.001 * MB) and book.total_bytes == json_size(book.state)
    decision = book.evaluate(delta(path="$.list", value=list(range(1000))), Limits(max_field_bytes=100, on_violation="clip"))
    assert decision.outcome == "clipped" and json_size(book.state["list"]) <= 100


def test_max_fields():
    book = StateBook()
    book.evaluate(delta(path="$.a"), Limits(max_fields=1))
    with pytest.raises(DeltaError, match="max_fields"):
        book.evaluate(delta(path="$.b"), Limits(max_fields=1))
