"""Builders for curation tests: run trees with digests and ledger events, through the real ingest path."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from experiments.ingest import EventIn, append_events
from experiments.models import Experiment, Run
from tests.factories import make_run

GOAL = "Collect facts about the number 42."


def digest_record(run: Run, iteration: int, facts: list[str], trend: list[float], children: list[str] | None = None) -> dict[str, Any]:
    return {
        "child_digest_hashes": children or [],
        "confidence_trend": trend,
        "goal": GOAL,
        "iteration": iteration,
        "key_facts": facts,
        "open_questions": [],
        "run_id": run.run_id,
    }


def sha_of(record: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(record, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def add_digest(run: Run, iteration: int, facts: list[str], trend: list[float], children: list[str] | None = None) -> str:
    record = digest_record(run, iteration, facts, trend, children)
    sha = sha_of(record)
    append_events(run, [EventIn(kind="digest", dedupe_key=f"digest:{sha}", payload={"sha": sha, "record": record}, iteration=iteration)])
    return sha


def complete(run: Run, status: str = "complete") -> None:
    append_events(run, [EventIn(kind="run.complete", dedupe_key="file:run_completion.json", payload={"status": status, "run_id": run.run_id})])
    run.refresh_from_db()


def two_iteration_run(experiment: Experiment, fact: str = "fact_collector: FACT_ALPHA: 42 is even.", other: str = "") -> tuple[Run, list[str]]:
    """A root run whose workers report `fact` in both iterations (and `other` in the second one too)."""
    run = make_run(experiment)
    first = add_digest(run, 1, [fact] + ([other] if other else []), [0.9])
    second = add_digest(run, 2, [fact] + ([other] if other else []), [0.9, 0.95])
    return run, [first, second]


def spawn_and_complete(run: Run, iteration: int, worker: str, instructions: str, result: dict[str, Any]) -> None:
    append_events(
        run,
        [
            EventIn(
                kind="iteration.decision",
                dedupe_key=f"decision:{iteration}",
                payload={"decision": "delegate", "delegations": [{"worker_id": worker, "instructions": instructions}]},
                iteration=iteration,
            ),
            EventIn(kind="worker.spawn", dedupe_key=f"spawn:{iteration}:{worker}", payload={"worker_id": worker, "instructions": instructions}, agent_id=worker, iteration=iteration),
            EventIn(kind="worker.complete", dedupe_key=f"complete:{iteration}:{worker}", payload=result, agent_id=worker, iteration=iteration),
        ],
    )
