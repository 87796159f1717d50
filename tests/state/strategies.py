"""Hypothesis strategies shared by the state property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from state.deltas import DeltaError, Limits, StateBook, delta_from_payload
from state.replay import Change

# Postgres jsonb cannot hold U+0000 or lone surrogates, so the generated text avoids them.
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)
keys = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False, width=32), texts)
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)), max_leaves=8)
documents = st.dictionaries(keys, json_values, max_size=5)

_keys = st.sampled_from(["a", "b", "c", "_meta"])
_paths = st.lists(_keys, min_size=1, max_size=3).map(lambda keys: "$" + "".join(f".{k}" for k in keys))
raw_deltas = st.fixed_dictionaries(
    {
        "agent_id": st.sampled_from(["researcher", "analyst"]),
        "round": st.integers(0, 3),
        "op": st.sampled_from(["add", "modify", "remove"]),
        "path": _paths,
        "value": json_values,
        "provenance": st.just("test"),
    }
)


def evaluate_all(payloads: list[dict], limits: Limits | None = None) -> tuple[list[Change], dict]:
    """Evaluate raw deltas in order (skipping the refused ones) into recorded changes, one seq each."""
    book, changes = StateBook(), []
    for seq, payload in enumerate(payloads, start=1):
        try:
            delta = delta_from_payload(payload)
            decision = book.evaluate(delta, limits or Limits())
        except DeltaError:
            continue
        changes.append(Change(seq, 0, delta.op, delta.path, decision.value, delta.agent_id))
    return changes, book.state
