"""The pure AWP readers: digest SHAs as the runtime computes them, JSONL tailing, folder detection and scans."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from experiments.awp import layout
from experiments.awp.digests import check_digest, digest_sha
from experiments.awp.tail import parse_lines, tail_jsonl
from tests.experiments.awp_trees import digest_record, make_workflow, write_json


def test_digest_sha_uses_sorted_keys_and_default_separators():
    record = digest_record()
    expected = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    compact = hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
    assert digest_sha(record) == expected != compact
    assert check_digest(record, expected) == (expected, None)
    assert check_digest(record, "0" * 64)[1] is not None


def test_digest_sha_matches_a_file_the_real_runtime_wrote():
    demo = Path(__file__).resolve().parents[2] / "experiments" / "demo_data"
    files = list(demo.glob("**/digest/*.json"))
    for path in files:
        assert digest_sha(json.loads(path.read_text())) == path.stem


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8), lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3), max_leaves=8)


@given(st.lists(json_values, max_size=8), st.lists(st.integers(min_value=1, max_value=40), max_size=20))
def test_tailing_in_any_chunks_yields_each_line_once(values, cuts):
    data = b"".join(json.dumps(v, ensure_ascii=False).encode() + b"\n" for v in values)
    offset, seen, position = 0, [], 0
    for cut in [*cuts, len(data)]:
        position = min(len(data), position + cut)
        lines, consumed = parse_lines(data[offset:position], offset)
        seen.extend(line.value for line in lines)
        offset += consumed
    assert seen == values and offset == len(data)


def test_tail_stops_at_last_newline_and_reports_truncation(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c":')
    first = tail_jsonl(path, 0)
    assert [line.value for line in first.lines] == [{"a": 1}, {"b": 2}] and first.pending_bytes == 5
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": 3}\nnot json\n')
    second = tail_jsonl(path, first.next_offset)
    assert second.lines[0].value == {"c": 3} and second.lines[1].error
    path.write_bytes(b"{}\n")
    assert tail_jsonl(path, second.next_offset).truncated


def test_detect_kind_and_scan_of_a_workflow(tmp_path):
    root = make_workflow(tmp_path / "wf")
    assert layout.detect_kind(root) == layout.WORKFLOW
    scan = layout.scan_workflow(root)
    kinds = sorted(f.kind for f in scan.files)
    assert kinds.count("worker.complete") == 2 and kinds.count("digest") == 2
    assert not any(f.relpath.endswith(".tmp") for f in scan.files)
    assert {m.kind for m in scan.memory} == {"long_term", "antipattern"}
    write_json(tmp_path / "dag" / "data" / "state" / "abc123def456" / "final.json", {"state": {}})
    assert layout.detect_kind(tmp_path / "dag") == layout.DAG
    write_json(tmp_path / "root" / "exp_1234abcd" / "experiment.json", {"experiment_id": "exp_1234abcd"})
    assert layout.detect_kind(tmp_path / "root") == layout.EXPERIMENTS_ROOT
    assert layout.detect_kind(tmp_path / "nothing") is None
