"""memory.recall (pure): salience as the reference scores it, visibility through the sharing rules, reflections."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from memory import recall
from state.redaction import KnownSecrets, redact, sensitive_set
from state.sharing import SharingPolicy

unit = st.floats(min_value=0, max_value=1, allow_nan=False)
weight = st.floats(min_value=0, max_value=10, allow_nan=False)
weights_st = st.builds(recall.SalienceWeights, relevance=weight, recency=weight, importance=weight,
                       decay_lambda=st.floats(min_value=0, max_value=5, allow_nan=False)).filter(
    lambda w: w.relevance + w.recency + w.importance > 0)  # fmt: skip


@given(weights_st, unit, unit, unit, unit)
def test_salience_is_monotone_in_each_component(weights, a, b, rec, imp) -> None:
    low, high = min(a, b), max(a, b)
    assert recall.salience(low, rec, imp, weights) <= recall.salience(high, rec, imp, weights) + 1e-12
    assert recall.salience(rec, low, imp, weights) <= recall.salience(rec, high, imp, weights) + 1e-12
    assert recall.salience(rec, imp, low, weights) <= recall.salience(rec, imp, high, weights) + 1e-12
    if weights.relevance > 0.01 and high > low + 1e-3:
        assert recall.salience(high, rec, imp, weights) > recall.salience(low, rec, imp, weights)


@given(weights_st, unit, unit, unit, st.floats(min_value=0.01, max_value=100))
def test_weights_are_normalised(weights, rel, rec, imp, factor) -> None:
    score = recall.salience(rel, rec, imp, weights)
    assert 0 <= score <= 1
    scaled = recall.SalienceWeights(weights.relevance * factor, weights.recency * factor, weights.importance * factor)
    assert math.isclose(recall.salience(rel, rec, imp, scaled), score, rel_tol=1e-9, abs_tol=1e-12)


@given(unit, unit, unit)
def test_default_weights_are_the_reference_formula(rel, rec, imp) -> None:
    expected = 0.3 * rel + 0.4 * rec + 0.3 * imp
    assert math.isclose(recall.salience(rel, rec, imp, recall.SalienceWeights()), expected, abs_tol=1e-12)


@given(st.floats(min_value=0, max_value=1e6))
def test_lambda_zero_means_no_decay(delta) -> None:
    assert recall.recency(delta, 0.0) == 1.0


@given(st.floats(min_value=0.001, max_value=5), st.integers(0, 500), st.integers(0, 500))
def test_recency_decays_with_turns(decay, a, b) -> None:
    assert recall.recency(0, decay) == 1.0
    low, high = min(a, b), max(a, b)
    assert recall.recency(low, decay) >= recall.recency(high, decay)
    assert 0 <= recall.recency(high, decay) <= 1


def test_salience_config_overrides_and_refusals() -> None:
    config = {"salience": {"w_relevance": 1, "w_recency": 0, "w_importance": 0, "decay_lambda": 0, "top_k": 3}}
    weights = recall.SalienceWeights.from_config(config)
    assert (weights.relevance, weights.recency, weights.importance, weights.decay_lambda, weights.top_k) == (1, 0, 0, 0, 3)
    assert recall.SalienceWeights.from_config({}) == recall.SalienceWeights(0.3, 0.4, 0.3, 0.1, 8)
    for bad in ({"w_recency": -1}, {"top_k": 0}, {"top_k": True}, {"decay_lambda": "x"},
                {"w_relevance": 0, "w_recency": 0, "w_importance": 0}):  # fmt: skip
        with pytest.raises(recall.RecallConfigError):
            recall.SalienceWeights.from_config({"salience": bad})
    assert recall.reflection_every({}) is None and recall.reflection_every({"reflection": {"every": 4}}) == 4
    with pytest.raises(recall.RecallConfigError):
        recall.reflection_every({"reflection": {"every": -2}})


def test_importance_table_follows_the_reference() -> None:
    assert recall.importance("reflection") == 0.85
    assert recall.importance("run.complete") == 1.0
    assert recall.importance("iteration.decision") == 0.9
    assert recall.importance("something.else") == 0.5


def test_lambda_zero_recall_gives_every_episode_full_recency() -> None:
    episodes = [recall.Episode(f"k{n}", "a", "worker.complete", "r", n, n, f"text {n}") for n in range(12)]
    block = recall.recall(episodes, reader="a", policy=SharingPolicy(),
                          weights=recall.SalienceWeights(decay_lambda=0.0, top_k=4))  # fmt: skip
    assert {item.recency for item in block.items + block.below} == {1.0}


def test_recall_ranks_by_salience_and_reads_in_turn_order() -> None:
    episodes = [
        recall.Episode("old", "a", "worker.complete", "r", 1, 1, "bananas are yellow"),
        recall.Episode("new", "a", "worker.complete", "r", 9, 9, "the sky is blue"),
        recall.Episode("end", "", "run.complete", "r", 10, 10, "status: complete"),
    ]
    weights = recall.SalienceWeights(top_k=2)
    block = recall.recall(episodes, reader="a", policy=SharingPolicy(), weights=weights, query="bananas yellow")
    expected = sorted(episodes, key=lambda e: -recall.salience(
        recall.keyword_relevance(recall.words("bananas yellow"), e.text), math.exp(-0.1 * (10 - e.clock)),
        recall.importance(e.kind), weights))  # fmt: skip
    assert {s.episode.key for s in block.items} == {e.key for e in expected[:2]}
    assert [s.episode.clock for s in block.items] == sorted(s.episode.clock for s in block.items)
    assert [s.episode.key for s in block.below] == [e.key for e in expected[2:]]
    assert block.block.startswith("[turn ")
    # At turn 5 the later episodes have not happened yet.
    assert {s.episode.key for s in recall.recall(episodes, reader="a", policy=SharingPolicy(), weights=weights, turn=5).items} == {"old"}


# -- visibility ------------------------------------------------------------------------------------------

AGENTS = ("alice", "bob", "carol")
FIELDS = ("findings", "summary", "secret_notes", "score")


def _token(producer: str, name: str) -> str:
    return f"V{producer}X{name}V"


policies = st.builds(
    SharingPolicy,
    strategy=st.sampled_from(["full", "selective", "isolated"]),
    rules=st.lists(
        st.tuples(st.sampled_from(AGENTS), st.frozensets(st.sampled_from((*AGENTS, "*")), max_size=2),
                  st.frozensets(st.sampled_from(FIELDS), min_size=1, max_size=3)),  # fmt: skip
        max_size=4,
    ).map(tuple),
    never_share=st.frozensets(st.sampled_from(FIELDS), max_size=2),
    share_input=st.dictionaries(st.sampled_from(AGENTS), st.lists(
        st.sampled_from([*AGENTS, *(f"{a}.{f}" for a in AGENTS for f in FIELDS)]), max_size=3).map(tuple), max_size=2),
    unshareable=st.dictionaries(st.sampled_from(AGENTS), st.frozensets(st.sampled_from(FIELDS), max_size=1), max_size=2),
)  # fmt: skip

episode_specs = st.lists(
    st.tuples(st.sampled_from(AGENTS), st.sampled_from(sorted(recall.EPISODE_KINDS)), st.frozensets(st.sampled_from(FIELDS), min_size=1)),
    min_size=1, max_size=12,
)  # fmt: skip


def _episodes(specs) -> list[recall.Episode]:  # type: ignore[no-untyped-def]
    out = []
    for n, (producer, kind, names) in enumerate(specs):
        fields = {name: _token(producer, name) for name in sorted(names)}
        out.append(recall.Episode(f"e{n}", producer, kind, "r", n, n, recall.render_fields(fields), fields))
    return out


@given(policies, episode_specs, st.sampled_from(AGENTS), st.text(alphabet="abcdefXV ", max_size=12))
def test_an_agent_never_recalls_what_sharing_hides(policy, specs, reader, query) -> None:
    episodes = _episodes(specs)
    block = recall.recall(episodes, reader=reader, policy=policy, weights=recall.SalienceWeights(top_k=100), query=query)
    for item in block.items + block.below:
        producer = item.episode.agent_id
        if producer == reader:
            continue
        for name in FIELDS:
            if _token(producer, name) not in item.content:
                continue
            # A field of another agent that shows up: never a never_share field, never an unshareable one …
            assert name not in policy.never_share
            if item.episode.kind in recall.PUBLIC_KINDS:
                continue
            assert name not in policy.unshareable.get(producer, frozenset())
            # … and under selective / isolated only what the rules give this reader.
            allowed = policy.visible_fields(producer, reader)
            assert allowed is None or name in allowed


@given(policies, episode_specs, st.sampled_from(AGENTS))
def test_own_episodes_are_always_recalled_whole(policy, specs, reader) -> None:
    episodes = _episodes(specs)
    block = recall.recall(episodes, reader=reader, policy=policy, weights=recall.SalienceWeights(top_k=100))
    own = {e.key for e in episodes if e.agent_id == reader}
    recalled = {item.episode.key: item for item in block.items + block.below}
    assert own <= set(recalled)
    for key in own:
        assert recalled[key].content == next(e.text for e in episodes if e.key == key)


def test_selective_rule_shows_only_its_fields() -> None:
    policy = SharingPolicy(strategy="selective", rules=(("alice", frozenset({"bob"}), frozenset({"findings"})),),
                           never_share=frozenset({"secret_notes"}))  # fmt: skip
    fields = {"findings": "42 is even", "secret_notes": "hidden", "score": 3}
    episode = recall.Episode("e", "alice", "worker.complete", "r", 1, 1, recall.render_fields(fields), fields)
    assert recall.visible_content(episode, "bob", policy) == "findings: 42 is even"
    assert recall.visible_content(episode, "carol", policy) is None
    assert "hidden" in (recall.visible_content(episode, "alice", policy) or "")


# -- reflections -----------------------------------------------------------------------------------------


def test_reflection_cadence() -> None:
    assert not recall.reflection_due(3, 0, None)
    assert not recall.reflection_due(3, 0, 4)
    assert recall.reflection_due(4, 0, 4)
    assert not recall.reflection_due(7, 4, 4)
    assert recall.reflection_due(8, 4, 4)


def test_reflection_answers_are_parsed_or_refused() -> None:
    assert recall.parse_reflection('{"belief": " 42 is  even. "}') == "42 is even."
    assert recall.parse_reflection('```json\n{"belief": "x"}\n```') == "x"
    assert recall.parse_reflection("Plain prose belief.") == "Plain prose belief."
    for bad in ("", "   ", "{not json", '{"other": 1}', "x" * 3000):
        with pytest.raises(recall.MalformedReflection):
            recall.parse_reflection(bad)


@given(st.lists(st.text(max_size=40), max_size=5))
def test_reflection_prompt_lists_every_episode(contents) -> None:
    assume(all(" ".join(c.split()) for c in contents))
    messages = recall.reflection_messages("alice", contents)
    assert messages[0]["content"].startswith(recall.REFLECTION_MARK)
    for content in contents:
        assert " ".join(content.split()) in messages[1]["content"]


@given(weights_st.filter(lambda w: w.recency > 0.05 and w.decay_lambda > 0.01), st.integers(0, 500),
       st.floats(min_value=0.3, max_value=1), st.booleans(), st.integers(1, 500), unit)  # fmt: skip
def test_episodes_older_than_the_bound_cannot_reach_the_threshold(weights, now, threshold, has_query, older, imp) -> None:
    oldest = recall.oldest_clock_that_can_rank(weights, now=now, threshold=threshold, has_query=has_query)
    assume(oldest is not None)
    clock = oldest - older
    best = recall.salience(1.0 if has_query else 0.0, recall.recency(now - clock, weights.decay_lambda), imp, weights)
    assert best < threshold


# -- pruning what another agent sees in part ---------------------------------------------------------------------

# Pieces that stress each step between the stored JSON and what a reader sees: escapes, Σ (whose lower case
# depends on what follows), characters whose lower case is longer or ASCII (İ, K), numbers Python spells otherwise,
# strings holding JSON documents (redaction re-serialises them), secrets masked by key, form and value.
_PIECES = st.sampled_from([
    "alpha", "beta", "gamma7", "ΣΑΣ", "σας", "İz", "K", "café", "x_y", "07", "1e", "e", "0", " ", "\n", "\t", "\x1f",
    '"', "\\", "[", "]", "{", "}", "…", ";", ":", ", ", "Bearer abcdefgh123", "postgres://u:pw1234567@h/db",
    "AKIAABCDEFGHIJKLMNOP", "hunter22-SECRET", "ΣΑΣhunter22-SECRET", '[1.5e+300, "alpha"]',
])  # fmt: skip
# Whole strings holding a JSON document, which redaction parses and writes back when it masks something inside.
_DOCUMENTS = st.sampled_from([' {"password": "hunter22-SECRET", "n": 1E5, "w": "caf\\u00e9"} ', '["hunter22-SECRET", 2.50]'])
_strings = st.one_of(st.lists(_PIECES, max_size=6).map("".join), st.text(max_size=8), _DOCUMENTS)
_KEYS = ["summary", "findings", "notes", "output", "password", "apiKey", "API-KEY", "internal_reasoning", "path", "value",
         "_private", "Σκέψη"]  # fmt: skip
_keys = st.one_of(st.sampled_from(_KEYS), st.text(max_size=4))
_leaves = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), _strings,
                    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1e-07, 1.5e300, 0.1 + 0.2, 1e16, -0.0]))  # fmt: skip
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
                       max_leaves=8)  # fmt: skip


def _postgres_text(value: object) -> str:
    """jsonb as Postgres prints it: keys by length then bytes, ", " and ": ", numbers in plain notation."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda item: (len(item[0].encode()), item[0].encode()))
        return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_postgres_text(v)}" for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_postgres_text(item) for item in value) + "]"
    if isinstance(value, float):
        return format(Decimal(repr(value)), "f")  # what numeric keeps of the digits Python wrote
    return json.dumps(value, ensure_ascii=False)


@st.composite
def _seen_in_part(draw):  # type: ignore[no-untyped-def]
    fields = draw(st.dictionaries(_keys, _values, min_size=1, max_size=5))
    stored = _postgres_text(fields)
    names = st.frozensets(st.sampled_from(_KEYS), max_size=3)
    strategy = draw(st.sampled_from(["full", "selective", "isolated"]))
    shared = draw(names)
    policy = SharingPolicy(
        strategy=strategy, rules=(("producer", frozenset({"reader"}), shared),) if draw(st.booleans()) else (),
        never_share=draw(names), share_output={"producer": draw(names)},
        share_input={"reader": tuple(f"producer.{name}" for name in shared)}, unshareable={"producer": draw(names)},
    )  # fmt: skip
    kind = draw(st.sampled_from(sorted(recall.EPISODE_KINDS)))
    assume(kind in recall.OUTPUT_KINDS or policy.never_share)  # else the reader sees the stored text, not the fields
    sensitive = sensitive_set(draw(st.sampled_from([[], ["password", "api_key"], ["secret", "token"]])))
    known = KnownSecrets.of(draw(st.lists(st.sampled_from(["hunter22-SECRET", "pw1234567"]) | _strings, max_size=2)))
    # The reader's fields as load_episodes gives them: Postgres's text decoded, then redacted.
    episode = recall.Episode(key="k", agent_id="producer", kind=kind, run_id="r", turn=1, clock=1, text="",
                             fields=redact(json.loads(stored), sensitive, known))  # fmt: skip
    content = recall.visible_content(episode, "reader", policy)
    assume(content)
    # Query words the reader finds (the case that must never be pruned), first those the stored text does not
    # spell the same way (a mask, a number, a re-serialised document, a final sigma), then any other.
    found = recall.words(content)
    unlike = sorted(word for word in found if word not in stored.lower() or "ς" in word)
    pool = sorted(found | {"alpha", "07", "e", "σας"})
    query = frozenset({draw(st.sampled_from(unlike or pool)), *draw(st.lists(st.sampled_from(pool), max_size=2))})
    return query, stored, content


@settings(max_examples=400)
@given(_seen_in_part())
def test_keyword_may_match_keeps_every_output_a_reader_finds_a_query_word_in(case) -> None:
    query, stored, content = case
    if recall.keyword_relevance(query, content) > 0:
        assert recall.keyword_may_match(query, stored), (query, stored, content)


@given(st.lists(st.one_of(_values.map(_postgres_text), _strings, st.sampled_from(["", "İİİ ΣΑΣ alpha", "İİİİİİx", "x\0y"])), max_size=6),
       st.frozensets(st.sampled_from(["alpha", "beta", "07", "e", "σας", "i̇", "x", "redacted", "null"]), max_size=3))  # fmt: skip
def test_keyword_may_match_rows_is_keyword_may_match_of_each_row(rows, query) -> None:
    assert recall.keyword_may_match_rows(query, rows) == [recall.keyword_may_match(query, row) for row in rows]


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_numbers_python_spells_otherwise_are_recognised(number) -> None:
    stored = _postgres_text(number)
    spelled = json.dumps(json.loads(stored))
    if not recall._SPELLED_OTHERWISE.search(stored):
        assert all(part in stored for part in recall.words(spelled)), (stored, spelled)


def test_keyword_may_match_rejects_outputs_sharing_no_word() -> None:
    stored = '{"notes": "Bananas are yellow", "findings": ["ripe in 3 days"], "confidence": 0.8}'
    assert not recall.keyword_may_match(frozenset({"apples"}), stored)
    assert not recall.keyword_may_match(frozenset({"7"}), stored)
    assert recall.keyword_may_match(frozenset({"bananas"}), stored)
    assert recall.keyword_may_match(frozenset({"3"}), stored)
    assert recall.keyword_may_match(frozenset({"findings"}), stored)  # a key is rendered too
    assert recall.keyword_may_match(frozenset({"act"}), stored)  # part of the mask: any masked text may hold it
    assert recall.keyword_may_match(frozenset({"07"}), '{"n": 0.0000001}')  # Python writes 1e-07
    assert recall.keyword_may_match(frozenset({"x"}), '{"notes": " {\\"a\\": 1}"}')  # redaction may re-serialise it
    assert recall.keyword_may_match(recall.words("ΣΑΣ"), '{"a": "σας"}')  # final sigma, written or lower-cased
    assert recall.keyword_may_match(recall.words("σας"), '{"a": "ΣΑΣhunter22"}')  # … and once a mask follows it
    assert not recall.keyword_may_match(frozenset(), stored)
