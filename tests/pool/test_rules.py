"""The pool's pure rules: envelope checks, quorum, fact versions, subscriptions (property tests, no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pool import rules
from pool.rules import Refusal

BASE = {
    "schemaVersion": 1,
    "type": "vote",
    "traceId": "t-1",
    "timestamp": "2026-11-23T10:00:00Z",
    "idempotencyKey": "k-1",
    "clawId": "claw-1",
    "instanceId": "claw-1@1",
    "payload": {"proposal_id": "p-1", "vote": "yes"},
}


@pytest.mark.parametrize("field", ["schemaVersion", "type", "traceId", "timestamp", "idempotencyKey", "clawId", "instanceId", "payload"])
def test_each_missing_required_field_is_named(field):
    raw = {k: v for k, v in BASE.items() if k != field}
    with pytest.raises(Refusal) as refused:
        rules.parse_envelope(raw)
    assert refused.value.code == "invalid_envelope" and field in refused.value.message


@pytest.mark.parametrize(
    "change, words",
    [
        ({"schemaVersion": 2}, "schemaVersion"),
        ({"type": "gossip"}, "type must be"),
        ({"traceId": ""}, "traceId"),
        ({"timestamp": "yesterday"}, "ISO-8601"),
        ({"timestamp": "2026-11-23T10:00:00"}, "time zone"),
        ({"clawId": 7}, "clawId"),
        ({"payload": []}, "payload must be an object"),
        ({"payload": {"proposal_id": "p-1", "vote": "perhaps"}}, "payload.vote"),
        ({"type": "proposal", "payload": {"proposal_id": "p", "statement": "  "}}, "payload.statement"),
        ({"type": "proposal", "payload": {"proposal_id": "p", "statement": "s", "confidence": 1.5}}, "payload.confidence"),
        ({"type": "fact", "payload": {"fact_id": "f", "version": 0, "statement": "s", "proposal_id": "p"}}, "payload.version"),
        ({"type": "capabilities", "payload": {"capabilities": "logs.read"}}, "payload.capabilities"),
    ],
)
def test_malformed_fields_are_refused_specifically(change, words):
    with pytest.raises(Refusal) as refused:
        rules.parse_envelope({**BASE, **change})
    assert refused.value.status == 400 and words in refused.value.message


def test_a_well_formed_envelope_parses_to_typed_values():
    envelope = rules.parse_envelope(BASE)
    assert envelope.timestamp == datetime(2026, 11, 23, 10, tzinfo=UTC)
    assert envelope.body == rules.VoteBody(proposal_id="p-1", vote="yes", reason="")
    assert envelope.is_governed


@given(kind=st.sampled_from(rules.TYPES), enabled=st.booleans())
def test_governance_gate_refuses_exactly_the_governed_types_when_off(kind, enabled):
    envelope = rules.Envelope(kind, "t", datetime.now(UTC), "k", "c", "i", None, {})
    if kind in rules.GOVERNED_TYPES and not enabled:
        with pytest.raises(Refusal) as refused:
            rules.gate(envelope, governance_enabled=enabled)
        assert refused.value.code == "governance_disabled"
    else:
        rules.gate(envelope, governance_enabled=enabled)


def test_self_loop_only_for_bus_envelopes_claiming_the_local_claw():
    envelope = rules.parse_envelope({**BASE, "clawId": "deploy-a"})
    assert rules.is_self_loop(envelope, local_claw_id="deploy-a", from_bus=True)
    assert not rules.is_self_loop(envelope, local_claw_id="deploy-a", from_bus=False)
    assert not rules.is_self_loop(envelope, local_claw_id="deploy-b", from_bus=True)


@given(active=st.integers(0, 50), yes=st.integers(0, 50), no=st.integers(0, 50))
def test_decide_needs_three_active_and_a_strict_majority(active, yes, no):
    outcome = rules.decide(active=active, yes=yes, no=no)
    if active < 3:
        assert outcome is None
    elif outcome == "accepted":
        assert yes * 2 > active
    elif outcome == "rejected":
        assert no * 2 > active and yes * 2 <= active
    else:
        assert yes * 2 <= active and no * 2 <= active


def test_majority_examples_from_the_reference():
    assert (rules.majority(3), rules.majority(4), rules.majority(5)) == (2, 3, 3)
    assert rules.decide(active=2, yes=2, no=0) is None  # two active participants: the proposal waits
    assert rules.decide(active=3, yes=2, no=0) == "accepted"
    assert rules.votes_still_needed(active=2, yes=1) == 1


@given(current=st.integers(0, 1000), version=st.integers(1, 1005))
def test_only_the_next_version_follows(current, version):
    if version == current + 1:
        rules.check_next_version(current=current, version=version)
        return
    with pytest.raises(Refusal) as refused:
        rules.check_next_version(current=current, version=version)
    assert refused.value.code == ("stale" if version <= current else "conflict")


@given(seconds=st.floats(0, 1000, allow_nan=False), ttl=st.floats(1, 500, allow_nan=False))
def test_active_and_expired_are_complements_at_the_ttl(seconds, ttl):
    now = datetime(2026, 11, 23, tzinfo=UTC)
    then = now - timedelta(seconds=seconds)
    assert rules.is_active(then, now=now, ttl_seconds=ttl) != rules.is_expired(then, now=now, ttl_seconds=ttl)
    assert not rules.is_active(None, now=now, ttl_seconds=ttl)


@given(fact_tags=st.lists(st.sampled_from(["a", "B", "c"])), tags=st.lists(st.sampled_from(["A", "b", "d"])))
def test_subscription_by_tags_is_case_insensitive_overlap(fact_tags, tags):
    expected = bool({t.lower() for t in fact_tags} & {t.lower() for t in tags})
    assert rules.matches_subscription(fact_tags, all_facts=False, tags=tags) == expected
    assert rules.matches_subscription(fact_tags, all_facts=True, tags=tags)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded shared machine, not slow code
@given(st.dictionaries(st.sampled_from(list(BASE)), st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=2))))
def test_arbitrary_input_parses_or_is_refused_never_crashes(overrides):
    try:
        rules.parse_envelope({**BASE, **overrides})
    except Refusal as refusal:
        assert refusal.code == "invalid_envelope"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"payload": {"proposal_id": "p-1", "vote": "yes", "reason": "a\x00b"}}, "payload.reason"),
        ({"payload": {"proposal_id": "p-1", "vote": "yes", "reason": "\ud800"}}, "payload.reason"),
        ({"payload": {"proposal_id": "p-1", "vote": "yes", "extra": float("nan")}}, "payload.extra"),
        ({"payload": {"proposal_id": "p-1", "vote": "yes", "extra": [float("-inf")]}}, "payload.extra[0]"),
        ({"timestamp": "9999-12-31T23:59:59-05:00"}, "timestamp"),
        ({"traceId": "t\x00"}, "traceId"),
    ],
)
def test_what_no_store_can_hold_is_refused_naming_the_field(change, field):
    with pytest.raises(Refusal) as refused:
        rules.parse_envelope({**BASE, **change})
    assert (refused.value.status, refused.value.code, refused.value.field) == (400, "invalid_envelope", field)


def test_nesting_past_the_limit_is_refused():
    deep: object = 1
    for _ in range(rules.MAX_DEPTH + 1):
        deep = {"a": deep}
    with pytest.raises(Refusal) as refused:
        rules.parse_envelope({**BASE, "payload": {"proposal_id": "p-1", "vote": "yes", "source": deep}})
    assert refused.value.field.startswith("payload.source.a")


@given(proposal_id=st.text(min_size=1, max_size=rules.MAX_ID))
def test_coordinator_keys_are_reserved_bounded_and_distinct(proposal_id):
    key = rules.coordinator_key("decision", proposal_id)
    assert rules.is_reserved_key(key) and len(key) <= rules.MAX_ID
    assert key != rules.coordinator_key("decision", proposal_id + "x")
    assert len(rules.new_fact_id(proposal_id)) <= rules.MAX_ID
