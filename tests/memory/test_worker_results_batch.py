"""The batched worker-result projector writes exactly what the one-event-at-a-time path writes (property test)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from experiments.models import Event, Run
from memory.models import MemoryChunk, MemoryEntry
from memory.services import log_worker_result, log_worker_results
from state.models import KnownSecret
from tests.factories import make_experiment

pytestmark = pytest.mark.django_db

# Plain words, text that teaches a secret (a sensitive key in free text, a secret-shaped value), and its echo.
WORDS = ["the", "parser", "fails", "on", "empty", "input", "retry", "loop", "hunter2-swordfish", "ok"]
TEACHING = ["password: hunter2-swordfish", "api_key=sk-live-abcdefghijklmnopqrstuvwx", "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"]

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
summaries = st.one_of(texts, st.sampled_from(TEACHING), st.tuples(texts, st.sampled_from(TEACHING)).map(" ".join))
payloads = st.fixed_dictionaries(
    {},
    optional={
        "summary": summaries,
        "confidence": st.one_of(st.floats(-1, 2, allow_nan=False), st.integers(-1, 2), st.just("high")),
        "worker_id": st.sampled_from(["w1", "w2", ""]),
        "findings": st.lists(texts, max_size=3),
        "password": st.just("hunter2-swordfish"),
    },
)
batches = st.lists(st.tuples(payloads, st.sampled_from(["", "worker_a", "worker_b"]), st.one_of(st.none(), st.integers(0, 5)), st.booleans()), max_size=8)


def _events(run: Run, batch: list[tuple[dict[str, Any], str, int | None, bool]]) -> list[Event]:
    start = datetime(2026, 11, 20, 9, 30, 15, 123456, tzinfo=UTC)
    return [
        Event(run=run, seq=i + 1, kind="worker.complete", agent_id=agent, iteration=iteration, payload=payload,
              occurred_at=start + timedelta(minutes=i) if timed else None, recorded_at=start, dedupe_key=f"k{i}")
        for i, (payload, agent, iteration, timed) in enumerate(batch)
    ]  # fmt: skip


def _stored(run: Run) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], set[str]]:
    """What the projector wrote for `run`, with the run's and the entries' database ids abstracted away."""
    entries = list(MemoryEntry.objects.filter(experiment_id=run.experiment_id).order_by("pk"))
    key_of = {f"entry:{entry.pk}": entry.dedupe_key for entry in entries}

    def plain(text: str) -> str:
        return text.replace(f":{run.pk}:", ":RUN:")

    entry_rows = [
        (plain(e.dedupe_key), e.content, e.day, e.time, e.agent_id, e.confidence, e.source, e.source_ref, e.is_archived, e.run_id == run.pk)
        for e in entries
    ]
    chunk_rows = [
        (c.tier, plain(key_of.get(c.ref_key, c.ref_key)), c.source, c.content, c.agent_id, c.occurred_at, c.is_archived)
        for c in MemoryChunk.objects.filter(experiment_id=run.experiment_id).order_by("pk")
    ]
    secrets = set(KnownSecret.objects.filter(experiment_id=run.experiment_id).values_list("value", flat=True))
    return entry_rows, chunk_rows, secrets


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batches, st.booleans())
def test_batched_worker_results_equal_one_at_a_time(batch, replayed):
    runs = []
    for _ in range(2):
        experiment = make_experiment()
        runs.append(Run.objects.create(experiment=experiment, run_id="run-under-test", started_at=timezone.now()))
    old_run, new_run = runs
    with transaction.atomic():
        for _ in range(2 if replayed else 1):  # a replay of the same events adds nothing (entries keyed by seq)
            for event in _events(old_run, batch):
                log_worker_result(run=old_run, event=event)
    with transaction.atomic():
        for _ in range(2 if replayed else 1):
            log_worker_results(run=new_run, events=_events(new_run, batch))
    assert _stored(new_run) == _stored(old_run)


def test_a_batch_whose_summaries_teach_a_secret_still_equals_the_one_at_a_time_path(monkeypatch):
    # Redaction masks what today's text detector finds before a summary is stored, so a detector that learns more
    # stands in for one: "teach" makes the text's last word a known secret, which must mask the later summaries.
    from state.secrets import learn_secrets

    def teaching_detector(*, experiment: Any, text: str) -> None:
        if text.startswith("teach"):
            learn_secrets(experiment_id=experiment.pk, values=[text.split()[-1]])

    monkeypatch.setattr("state.secrets.learn_from_text", teaching_detector)
    monkeypatch.setattr("memory.chunks.learn_from_text", teaching_detector)
    batch = [({"summary": "first pass"}, "a", 1, True), ({"summary": "teach swordfish-marlin"}, "a", 1, True), ({"summary": "then swordfish-marlin"}, "b", 2, True)]
    runs = [Run.objects.create(experiment=make_experiment(), run_id="teaching", started_at=timezone.now()) for _ in range(2)]
    with transaction.atomic():
        for event in _events(runs[0], batch):
            log_worker_result(run=runs[0], event=event)
    with transaction.atomic():
        log_worker_results(run=runs[1], events=_events(runs[1], batch))
    entries, chunks, secrets = _stored(runs[1])
    assert (entries, chunks, secrets) == _stored(runs[0])
    assert secrets == {"swordfish-marlin"}
    assert "swordfish-marlin" in entries[1][1] and "swordfish-marlin" not in entries[2][1]  # masked after it was learnt
