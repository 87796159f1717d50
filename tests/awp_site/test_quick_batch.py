"""The ingest edge's quick reading (experiments.pushed.quick_batch) against the full one (parse_json_body).

The property: whatever the quick reading takes, the full reading takes too, with the same run, experiment and
number of events; the depth it counts is the depth of the value. It may decline more (those go the full way).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awp_site.apierrors import ApiError
from awp_site.jsonbody import MAX_DEPTH, nesting_depth, parse_json_body
from experiments.pushed import kind_allowed, quick_batch

# Strings made to confuse a bracket counter: quotes, backslashes, brackets, escapes, non-ASCII.
tricky_text = st.text(alphabet=st.sampled_from(list('ab"\\[]{}:,\n\t é€😀') + ["\u2028"]), max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False) | tricky_text
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4), max_leaves=30)


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


@given(values)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_the_counted_depth_is_the_values_depth_however_strings_quote_and_escape(value):
    for body in (orjson.dumps(value), json.dumps(value, ensure_ascii=True).encode(), json.dumps(value, indent=1).encode()):
        assert nesting_depth(body) == depth(value)


def nested(levels: int) -> Any:
    value: Any = "x"
    for level in range(levels):
        value = [value] if level % 2 else {"k": value}
    return value


events = st.lists(
    st.fixed_dictionaries({"kind": st.sampled_from(["log", "metric.loss", "run.start", "no.such", 7])}, optional={"payload": values}),
    min_size=0,
    max_size=6,
)


@given(run_id=st.one_of(st.text(max_size=5), st.integers()), items=events, extra=st.booleans())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_what_the_quick_reading_takes_the_full_reading_takes_alike(run_id, items, extra):
    document: dict[str, Any] = {"run_id": run_id, "events": items}
    if extra:
        document["note"] = 1
    body = json.dumps(document).encode()
    found = quick_batch(body, max_events=5)
    if found is None:
        return
    value = parse_json_body(body)
    assert found == (value["run_id"], value.get("experiment"), len(value["events"]))
    assert not extra and 1 <= len(items) <= 5 and all(isinstance(i["kind"], str) and kind_allowed(i["kind"]) for i in items)


@pytest.mark.parametrize(
    "body",
    [
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": NaN}}]}',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": Infinity}}]}',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": "a\\u0000b"}}]}',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": "\\ud800"}}]}',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": "\xff"}}]}',
        b'{"run_id": "r", "events": [{"kind": "log"}]} trailing',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": 1e999}}]}',
        b'{"run_id": "r", "events": [{"kind": "log", "payload": {"x": 123456789012345678901234567890}}]}',
        json.dumps({"run_id": "r", "events": [{"kind": "log", "payload": nested(MAX_DEPTH)}]}).encode(),
        b'{"run_id": "r", "events": [{"kind": "log"}], "events": "not a list"}',
        b'{"run_id": "", "events": [{"kind": "log"}]}',
        b'{"run_id": "r", "events": []}',
    ],
)
def test_every_body_the_full_reading_refuses_or_reads_otherwise_is_declined(body):
    assert quick_batch(body, max_events=5) is None


def test_a_body_at_the_depth_limit_is_taken_and_one_past_it_refused_by_both():
    at_limit = json.dumps({"run_id": "r", "events": [{"kind": "log", "payload": nested(MAX_DEPTH - 3)}]}).encode()
    assert nesting_depth(at_limit) == MAX_DEPTH
    assert quick_batch(at_limit, max_events=5) == ("r", None, 1)
    parse_json_body(at_limit)
    past = json.dumps({"run_id": "r", "events": [{"kind": "log", "payload": nested(MAX_DEPTH - 2)}]}).encode()
    assert quick_batch(past, max_events=5) is None
    with pytest.raises(ApiError) as refused:
        parse_json_body(past)
    assert refused.value.code == "json_too_deep"


def test_the_parser_is_reused_after_a_declined_or_broken_body():
    good = b'{"run_id": "r", "events": [{"kind": "log"}]}'
    for body in (b"{", b'{"run_id": "r", "events": [{"kind": "nope"}]}', b"[1, 2]", good):
        quick_batch(body, max_events=5)
    assert quick_batch(good, max_events=5) == ("r", None, 1)
