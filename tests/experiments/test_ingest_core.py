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


def test_a_payload_jsonb_cannot_hold_is_refused_when_pushed_and_kept_marked_from_disk():
    from experiments.projections import IngestRefused, ProjectionContext

    run = make_run()
    bad = EventIn(kind="log", dedupe_key="nul", payload={"msg": "a\x00b"})
    with pytest.raises(IngestRefused) as refused:
        append_events(run, [EventIn(kind="log", dedupe_key="ok", payload={"msg": "fine"}), bad], ctx=ProjectionContext(strict=True))
    assert refused.value.code == "invalid_payload" and refused.value.dedupe_key == "nul"
    assert not Event.objects.filter(run=run).exists()
    append_events(run, [bad], ctx=ProjectionContext(strict=False, source="import"))
    stored = Event.objects.get(run=run)
    assert "NUL" in stored.payload["_unstorable"] and "a\\x00b" in stored.payload["repr"]


def test_a_non_finite_number_is_refused_when_pushed_and_projected_as_the_ledger_holds_it_from_disk():
    """orjson writes NaN and Infinity as null: what the projectors read must be what the ledger holds (null), or a
    projection the ledger cannot rebuild is written, and Postgres refuses the NaN a projector writes (a 500)."""
    from experiments.projections import IngestRefused, ProjectionContext
    from state.models import StateDelta

    run = make_run()
    result = {"score": float("nan"), "ratio": float("inf"), "ok": 1.5}
    worker = EventIn(kind="worker.complete", dedupe_key="w1", agent_id="scorer", payload={"summary": "done", "result": result})
    with pytest.raises(IngestRefused) as refused:
        append_events(run, [worker], ctx=ProjectionContext(strict=True))
    assert refused.value.code == "non_finite_number" and refused.value.dedupe_key == "w1"
    assert not Event.objects.filter(run=run).exists()
    append_events(run, [worker], ctx=ProjectionContext(strict=False, source="import"))
    stored = Event.objects.get(run=run)
    assert stored.payload["result"] == {"score": None, "ratio": None, "ok": 1.5}
    assert StateDelta.objects.filter(run=run).exists()
    assert "'score': None" in repr(list(StateDelta.objects.filter(run=run).values_list("value", flat=True)))


def test_copy_text_escapes_survive_the_round_trip():
    run = make_run()
    tricky = {"path": "C:\\temp\\new", "tab": "a\tb", "nl": "x\ny", "quote": 'say "hi"', "uni": "für 42 ✓"}
    append_events(run, [EventIn(kind="log", dedupe_key="k\tey\\1", agent_id="w\\1", payload=tricky)])
    stored = Event.objects.get(run=run)
    assert stored.payload == tricky and stored.dedupe_key == "k\tey\\1" and stored.agent_id == "w\\1"


def test_pushed_nul_payload_is_refused_and_nothing_is_stored(client):
    from tests.factories import make_experiment, make_token

    experiment = make_experiment()
    token = make_token(experiment, ["ingest"])
    body = {"run_id": "r1", "events": [{"kind": "run.start", "payload": {}}, {"kind": "log", "payload": {"msg": "a\u0000b"}}]}
    response = client.post("/api/v1/ingest", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400 and response.json()["code"] == "json_nul_character"
    assert not Event.objects.filter(run__experiment=experiment).exists()


def test_rule_violations_of_an_ingested_run_show_on_its_problems_tab(client):
    from experiments.projections import ProjectionContext
    from tests.factories import PASSWORD, make_member

    run = make_run()
    viewer = make_member(run.experiment, "viewer")
    delta = {"agent_id": "rogue", "round": 1, "weight": 1, "op": "add", "path": "$._meta", "value": 1, "provenance": "file x"}
    append_events(run, [EventIn(kind="state.delta", dedupe_key="d1", payload=delta)], ctx=ProjectionContext(strict=False, source="import"))
    client.login(username=viewer.username, password=PASSWORD)
    body = client.get(f"/experiments/{run.experiment.slug}/runs/{run.pk}/problems/").content.decode()
    assert "R13" in body and "rogue" in body


@pytest.mark.parametrize("size", [3, 2500])  # one INSERT, and a COPY in chunks with the detector reading beside it
def test_secrets_in_a_batch_are_learnt_whichever_way_its_rows_are_written(size):
    from experiments.ingest import COPY_CHUNK, SMALL_BATCH
    from state.secrets import known_secrets_for

    assert size <= SMALL_BATCH or size > 2 * COPY_CHUNK
    run = make_run()
    planted = {size // 2: "tok_9fQ2xLm4Zr7TbW1c", size - 1: "Zk3Qp9Lm2Xw8Rt5Yv1Bn"}
    batch = [
        EventIn(kind="log", dedupe_key=f"k{i}", payload={"api_key": planted[i]} if i in planted else {"msg": f"line {i}"})
        for i in range(size)
    ]
    append_events(run, batch)
    known = known_secrets_for(run.experiment_id)
    assert all(value in known.values for value in planted.values())
    assert Event.objects.filter(run=run).count() == size
