"""A seeded experiment memory for search and API tests."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from typing import Any

from django.utils import timezone

from experiments.ingest import EventIn, append_events
from experiments.models import Experiment
from memory.longterm import write_long_term_version
from memory.services import append_daily_entry
from tests.factories import make_run

LONG_TERM = """# Coordination
Sibling workers post their findings to the shared blackboard so nobody repeats a dead end.

# Invoices
Invoice PDFs are printed on A4 paper with a 2 cm margin.
"""


def today() -> Any:
    return timezone.now().astimezone(UTC).date()


def seed_memory(experiment: Experiment) -> dict[str, Any]:
    """Long-term sections, daily entries on three days, and episodic results of two agents."""
    write_long_term_version(experiment=experiment, content=LONG_TERM, reason="seed")
    d0, d1, d2 = today() - timedelta(days=3), today() - timedelta(days=2), today() - timedelta(days=1)
    daily = [
        (d0, "researcher", "Bananas are rich in potassium and ripen quickly."),
        (d1, "analyst", "Quarterly revenue grew by twelve percent in the northern region."),
        (d1, "researcher", "The garden needs watering twice a week in summer."),
        (d2, "analyst", "Pytest fixtures with module scope keep the suite fast."),
    ]
    for i, (day, agent, text) in enumerate(daily):
        append_daily_entry(
            experiment=experiment, content=text, day=day, at=time(9, i), agent_id=agent, dedupe_key=f"seed:{i}"
        )
    run = make_run(experiment)
    moment = datetime.combine(d2, time(12, 0), tzinfo=UTC)
    append_events(run, [
        EventIn("worker.complete", "file:r1", {"summary": "Collected five facts about the number 42.", "confidence": 0.9},
                agent_id="fact_collector", iteration=1, occurred_at=moment),
        EventIn("worker.complete", "file:r2", {"summary": "Wrote the final summary paragraph.", "confidence": 0.6},
                agent_id="writer", iteration=2, occurred_at=moment + timedelta(minutes=5)),
    ])  # fmt: skip
    return {"days": (d0, d1, d2), "run": run}
