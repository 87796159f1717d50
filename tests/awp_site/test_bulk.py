"""awp_site.bulk.insert_rows: one statement of constant size writes what bulk_create would, arrays and JSON included."""

from __future__ import annotations

from datetime import UTC, datetime

from awp_site.bulk import bare, insert_rows
from memory.models import Episode

AWKWARD_WORDS = ["plain", 'with"quote', "back\\slash", "comma,inside", "{braces}", "NULL", "", "ünïcode", "two words"]


def _episode(experiment, key: str, words: list[str]) -> Episode:
    return bare(Episode, {
        "experiment_id": experiment.pk, "key": key, "agent_id": "writer", "kind": "worker.complete", "turn": 3,
        "fields": {"summary": 'a "quoted" \\ value', "n": [1, 2.5, None]}, "text": "t", "words": words,
        "occurred_at": datetime(2026, 1, 2, tzinfo=UTC),
    })  # fmt: skip


def test_array_and_json_columns_round_trip_exactly(experiment):
    insert_rows([_episode(experiment, "k1", AWKWARD_WORDS), _episode(experiment, "k2", [])])
    stored = {e.key: e for e in Episode.objects.filter(experiment=experiment)}
    assert stored["k1"].words == AWKWARD_WORDS
    assert stored["k2"].words == []
    assert stored["k1"].fields == {"summary": 'a "quoted" \\ value', "n": [1, 2.5, None]}
    assert stored["k1"].turn == 3 and stored["k1"].is_public is False and stored["k1"].run_id is None


def test_ignore_conflicts_skips_rows_a_unique_constraint_refuses(experiment):
    insert_rows([_episode(experiment, "same", ["first"])])
    insert_rows([_episode(experiment, "same", ["second"]), _episode(experiment, "other", ["third"])], ignore_conflicts=True)
    stored = dict(Episode.objects.filter(experiment=experiment).values_list("key", "words"))
    assert stored == {"same": ["first"], "other": ["third"]}


def test_bare_calls_callable_defaults_for_every_instance(experiment):
    """A default that is a callable (a list, a timestamp) is called per instance, as Model.__init__ does: two bare
    instances never share a mutable default, and a time default is not the first call's time."""
    first = bare(Episode, {"experiment_id": experiment.pk, "key": "a", "kind": "log", "text": "t"})
    second = bare(Episode, {"experiment_id": experiment.pk, "key": "b", "kind": "log", "text": "t"})
    assert first.words == [] and second.words == []
    first.words.append("changed")
    assert second.words == [] and bare(Episode, {"key": "c"}).words == []


def test_rows_travel_as_one_json_document_and_fall_back_to_arrays_for_what_json_cannot_carry(experiment):
    """Dates, times, floats, booleans and JSON go as one jsonb_to_recordset document; a NaN (JSON would make it
    null) takes one array parameter per column and is stored as NaN."""
    import math
    from datetime import date, time

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memory.models import MemoryEntry

    def entry(key: str, confidence: float) -> MemoryEntry:
        return bare(MemoryEntry, {
            "experiment_id": experiment.pk, "day": date(2026, 3, 4), "time": time(9, 15, 2), "agent_id": "w",
            "confidence": confidence, "content": 'say "hi"\n\\ ünï', "dedupe_key": key,
        })  # fmt: skip

    with CaptureQueriesContext(connection) as queries:
        insert_rows([entry("a", 0.25), entry("b", 1.0)], returning="id")
    assert "jsonb_to_recordset" in queries[-1]["sql"]
    with CaptureQueriesContext(connection) as queries:
        insert_rows([entry("c", float("nan"))], returning="id")
    assert "unnest" in queries[-1]["sql"]
    stored = {e.dedupe_key: e for e in MemoryEntry.objects.filter(experiment=experiment)}
    assert stored["a"].confidence == 0.25 and stored["a"].day == date(2026, 3, 4) and stored["a"].time == time(9, 15, 2)
    assert stored["b"].content == 'say "hi"\n\\ ünï'
    assert math.isnan(stored["c"].confidence)
