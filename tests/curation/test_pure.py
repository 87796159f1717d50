"""The pure curation modules: curator rules, runtime-file readers, MEMORY.md and facts-file rendering."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from memory.curation import curator, render, runtime_files
from memory.curation.curator import DigestIn, LedgerEvent

facts = st.lists(st.sampled_from(["a", "b", "c", "d", " a ", "e"]), max_size=6)


@given(st.lists(facts, min_size=1, max_size=6))
def test_a_fact_is_proposed_iff_at_least_two_digests_hold_it(digest_facts):
    digests = [DigestIn(sha=f"s{i}", run_id="r", iteration=i, key_facts=tuple(f)) for i, f in enumerate(digest_facts)]
    proposed = {c.text: len(c.evidence) for c in curator.fact_candidates(digests)}
    for text in {x.strip() for f in digest_facts for x in f}:
        holders = sum(1 for f in digest_facts if text in {x.strip() for x in f})
        assert (text in proposed) == (holders >= 2)
        if holders >= 2:
            assert proposed[text] == holders  # counted once per digest, however often it repeats there


@given(st.lists(facts, min_size=1, max_size=5))
def test_curation_is_deterministic_whatever_the_input_order(digest_facts):
    digests = [DigestIn(sha=f"s{i}", run_id="r", iteration=i, key_facts=tuple(f)) for i, f in enumerate(digest_facts)]
    assert [(c.key, [e.ref for e in c.evidence]) for c in curator.fact_candidates(digests)] == [
        (c.key, [e.ref for e in c.evidence]) for c in curator.fact_candidates(list(reversed(digests)))
    ]


def test_duplicate_sha_counts_once_and_missing_children_are_reported():
    one = DigestIn(sha="x", run_id="r", iteration=1, key_facts=("f",), child_digest_hashes=("child",))
    assert curator.fact_candidates([one, one]) == []
    assert curator.missing_children([one]) == {"child"}


def test_signature_matches_the_runtime_formula():
    envelope = {"instructions": "  Do   THE thing "}
    expected = hashlib.sha256(b"do the thing").hexdigest()[:16]
    assert curator.envelope_signature(envelope) == expected
    assert curator.antipattern_key(expected) == hashlib.sha256(expected.encode()).hexdigest()[:16]


def test_redundant_dispatch_in_the_same_run_only():
    def decision(run, seq, iteration):
        return LedgerEvent(run, seq, "iteration.decision", iteration, "", {"decision": "delegate", "delegations": [{"worker_id": "w", "instructions": "same"}]})

    events = [decision("r1", 1, 1), decision("r1", 2, 2), decision("r2", 1, 1)]
    [candidate] = curator.antipattern_candidates(events)
    assert candidate.details["reason"] == "redundant" and [e.ref for e in candidate.evidence] == ["event:r1:2"]


TOOL = """# Tool Recipe: dyn.sum_it
## v1
- content_hash: aaaa111122223333
- created_by: w1
- created_at: 2026-01-01
- run_id: run-1

### Purpose
Adds numbers.

### Parameters (JSON Schema)
```json
{"type": "object"}
```

### Example Invocation
```
dyn.sum_it(...)
```

## v2
- content_hash: bbbb111122223333
- created_by: (unknown)
- created_at:
- run_id: run-2

### Purpose
(no description)
"""


def test_runtime_tool_recipe_versions():
    versions = runtime_files.parse_tool_recipe("memory/tools/dyn.sum_it.md", TOOL)
    assert [(v.name, v.version, v.content_hash, v.run_id) for v in versions] == [
        ("dyn.sum_it", 1, "aaaa111122223333", "run-1"),
        ("dyn.sum_it", 2, "bbbb111122223333", "run-2"),
    ]
    assert versions[0].purpose == "Adds numbers." and versions[0].parameters == '{"type": "object"}'
    assert versions[1].purpose == ""


def test_runtime_facts_and_antipattern_files():
    facts_file = "# Facts (2026-11-21)\n- [run-1] w: 42 is even.\nnot a fact\n- [run-2] w: 42 = 6 x 7\n"
    lines = runtime_files.parse_facts_file("memory/facts/2026-11-21.md", facts_file)
    assert [(f.day, f.run_id, f.text) for f in lines] == [("2026-11-21", "run-1", "w: 42 is even."), ("2026-11-21", "run-2", "w: 42 = 6 x 7")]
    antipattern = "# Antipattern 10c24e180074a0f2\n- run_id: r\n- iteration: 2\n- reason: low_confidence\n- signature: c865\n\n## Instructions Excerpt\nFAKEWORKER: do it\n"
    parsed = runtime_files.parse_antipattern("memory/antipatterns/10c24e180074a0f2.md", antipattern)
    assert (parsed.sha, parsed.iteration, parsed.reason, parsed.signature, parsed.instructions) == (
        "10c24e180074a0f2", 2, "low_confidence", "c865", "FAKEWORKER: do it"
    )


def test_memory_md_sections_upsert_and_remove_keep_other_text():
    base = "# Notes\nhand written\n"
    one = render.upsert_promoted(base, kind="fact", proposal_id=1, line=render.promoted_line(text="A", proposal_id=1, version=1))
    two = render.upsert_promoted(one, kind="fact", proposal_id=2, line=render.promoted_line(text="B", proposal_id=2, version=1))
    tool = render.upsert_promoted(two, kind="tool", proposal_id=3, line=render.promoted_line(text="t: x", proposal_id=3, version=1))
    assert tool.count("## Facts") == 1 and tool.index("- A") < tool.index("- B") < tool.index("## Tool Recipes")
    edited = render.upsert_promoted(tool, kind="fact", proposal_id=1, line=render.promoted_line(text="A2", proposal_id=1, version=2))
    assert "- A2 <!-- proposal:1 v2 -->" in edited and "- A <!--" not in edited
    removed = render.remove_promoted(edited, 1)
    assert "A2" not in removed and "hand written" in removed and render.marked_proposals(removed) == {2, 3}


@given(st.integers(min_value=40, max_value=4000), st.lists(st.text(min_size=1, max_size=300), max_size=30))
def test_prior_block_never_exceeds_the_cap(cap, texts):
    items = render.PriorItems(tools=[], facts=[("r", t) for t in texts], antipatterns=[])
    block = render.prior_block(items, max_chars=cap)
    assert len(block) <= cap
    assert (block == "") == (not texts)


def test_facts_sync_keeps_runtime_lines_drops_rejected_adds_promoted():
    files = {"2026-11-20": "# Facts (2026-11-20)\n- [r0] runtime fact\n- [r1] rejected fact\n"}
    changed = render.sync_facts_files(files, today="2026-11-21", window=["2026-11-21", "2026-11-20"], promoted=[("r2", "approved fact"), ("r0", "runtime fact")], removed={"rejected fact"})
    assert changed["2026-11-20"] == "# Facts (2026-11-20)\n- [r0] runtime fact\n"
    assert changed["2026-11-21"] == "# Facts (2026-11-21)\n- [r2] approved fact\n"
    again = {**files, **changed}
    assert render.sync_facts_files(again, today="2026-11-21", window=["2026-11-21", "2026-11-20"], promoted=[("r2", "approved fact")], removed={"rejected fact"}) == {}


def test_memory_md_merge_keeps_lines_the_runtime_added():
    ours = "# MEMORY\n\n## Facts\n- A <!-- proposal:1 v1 -->\n"
    disk = ours + "- runtime note\n- B <!-- proposal:2 v1 -->\n"
    merged = render.merge_memory_md(disk, ours, previously_written=ours)
    assert "- runtime note" in merged and "proposal:2" not in merged
    assert render.merge_memory_md(None, ours, "") == ours
