"""The ledger append path: gap-free seqs, idempotent replays, projectors see only new events."""

from __future__ import annotations

import pytest

from experiments.ingest import EventIn, append_events
from experiments.models import Event
from experiments.projections import register_projector
from tests.factories import make_run

pytestmark = pytest.mark.django_db

SEEN: list[tuple[int, str]] = []


def _record(run, events, ctx):  # type: ignore[no-untyped-def]
    SEEN.extend((event.seq, event.kind) for event in events)


register_projector("test.", _record, name="tests.record")


def test_append_assigns_gap_free_seqs_and_replays_are_no_ops():
    run = make_run()
    SEEN.clear()
    batch = [EventIn(kind="test.a", dedupe_key=f"k{i}", payload={"i": i}) for i in range(5)]
    first = append_events(run, batch)
    assert first.seqs == [1, 2, 3, 4, 5] and first.new_count == 5
    again = append_events(run, batch)
    assert again.seqs == [1, 2, 3, 4, 5] and again.new_count == 0
    assert list(Event.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2, 3, 4, 5]
    assert SEEN == [(i, "test.a") for i in range(1, 6)]
    run.refresh_from_db()
    assert run.last_seq == 5


def test_duplicate_keys_inside_one_batch_store_once():
    run = make_run()
    result = append_events(run, [EventIn(kind="log", dedupe_key="same"), EventIn(kind="log", dedupe_key="same")])
    assert result.seqs == [1, 1]
    assert Event.objects.filter(run=run).count() == 1
