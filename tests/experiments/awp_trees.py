"""Tiny hand-written AWP trees for tests that do not need the real runtime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.awp.digests import digest_sha

RUN_ID = "2026-11-21_22-39-06_ad4c609a"


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")


def write_jsonl(path: Path, rows: list[Any], tail: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows) + tail, encoding="utf-8")


def digest_record(run_id: str = RUN_ID, iteration: int = 1, facts: list[str] | None = None, children: list[str] | None = None) -> dict[str, Any]:
    return {
        "child_digest_hashes": children or [],
        "confidence_trend": [0.9, 0.95][:iteration],
        "goal": "Collect facts about 42 — ünïcode kept",
        "iteration": iteration,
        "key_facts": facts or ["fact_collector: 42 is even"],
        "open_questions": ["fact_collector: Is 42 pronic?"],
        "run_id": run_id,
    }


def make_workflow(root: Path, run_id: str = RUN_ID, iterations: int = 2) -> Path:
    """A finished delegation-loop run: manifest, iterations with one worker each, metrics, board, digests, completion."""
    run = root / "workspace" / "runs" / run_id
    write_json(run / "run_manifest.json", {"run_id": run_id, "task": "Collect facts", "started": "2026-11-21T22:39:06+00:00", "models": {"manager": "m", "worker": "w"}, "budget": {"max_loops": 10}})
    for n in range(1, iterations + 1):
        it = run / "iterations" / f"{n:03d}"
        write_json(it / "manager_decision.json", {"decision": "delegate" if n < iterations else "complete", "reasoning": f"step {n}", "confidence": 0.5, "delegations": [{"worker_id": "fact_collector", "instructions": "collect"}]})
        write_json(it / "budget_snapshot.json", {"loops": {"used": n, "max": 10}, "budget_remaining_pct": 90.0})
        write_json(it / "delegations" / "fact_collector" / "envelope.json", {"worker_id": "fact_collector", "instructions": "collect", "api_key": "sk-SECRET"})
        write_json(it / "delegations" / "fact_collector" / "result.json", {"summary": f"fact {n}", "confidence": 0.9})
        (it / "delegations" / "fact_collector" / "result.json.tmp").write_text("{half")
        record = digest_record(run_id, n)
        write_json(run / "digest" / f"{digest_sha(record)}.json", record)
    write_jsonl(run / "metrics.jsonl", [{"ts": "2026-11-21T22:39:07+00:00", "kind": "metric.confidence", "iteration": n, "mean": 0.9} for n in range(1, iterations + 1)])
    write_jsonl(root / "logs" / run_id / "events.jsonl", [{"ts": "2026-11-21T22:39:07+00:00", "level": "INFO", "category": "run", "msg": "started", "fields": {"iteration": 1}}])
    write_jsonl(root / "workspace" / "blackboard" / f"{run_id}.jsonl", [
        {"id": f"1795300746.49783{i}-{i}-1", "ts": 1795300746.49783 + i, "topic": "auto:worker_result:fact_collector", "worker_id": "fact_collector", "payload": {"confidence": 0.9, "summary": f"s{i}"}}
        for i in range(3)
    ])
    write_json(run / "run_completion.json", {"run_id": run_id, "status": "complete", "reason": "complete", "total_iterations": iterations, "completed": "2026-11-21T22:39:09+00:00", "final_budget": {"loops": {"used": iterations, "max": 10}}})
    (root / "workspace" / "MEMORY.md").write_text("# Memory\n- 42 is even\n")
    (root / "memory" / "antipatterns").mkdir(parents=True)
    (root / "memory" / "antipatterns" / "10c24e180074a0f2.md").write_text("# Antipattern 10c24e180074a0f2\n- reason: low_confidence\n")
    return root
