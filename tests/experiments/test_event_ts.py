"""Every event in GET /api/v1/runs/{run_id}/events has `ts` (ISO 8601, UTC) and says where it came from."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from experiments.ingest import EventIn, append_events
from experiments.models import Event
from tests.factories import make_run, make_token

pytestmark = pytest.mark.django_db


def test_pushed_events_carry_their_ts_or_the_time_they_were_received(experiment):
    token = make_token(experiment, scopes=["ingest", "memory:read"])
    events = [
        {"kind": "run.start", "idempotency_key": "s", "ts": "2026-11-22T01:29:15+01:00", "payload": {"task": "t"}},
        {"kind": "log", "idempotency_key": "l", "ts": 1795307355.5, "payload": {"msg": "epoch seconds"}},
        {"kind": "log", "idempotency_key": "n", "payload": {"msg": "no ts"}},
    ]
    client = Client()
    pushed = client.post("/api/v1/ingest", {"run_id": "r1", "events": events}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert pushed.status_code == 200, pushed.content
    listed = client.get("/api/v1/runs/r1/events", HTTP_AUTHORIZATION=f"Bearer {token}").json()["events"]
    assert [e["ts_source"] for e in listed] == ["record", "record", "received"]
    assert listed[0]["ts"] in ("2026-11-22T00:29:15Z", "2026-11-22T00:29:15+00:00")
    assert datetime.fromisoformat(listed[1]["ts"]) == datetime.fromtimestamp(1795307355.5, UTC)
    received = Event.objects.get(run__run_id="r1", seq=3)
    # The API's JSON keeps milliseconds.
    assert abs(datetime.fromisoformat(listed[2]["ts"]) - received.recorded_at) < timedelta(milliseconds=1)
    assert all(e["ts"].endswith(("Z", "+00:00")) for e in listed)


def test_rows_from_before_the_ts_source_column_say_where_their_time_came_from(experiment):
    run = make_run(experiment)
    append_events(run, [EventIn(kind="log", dedupe_key="a", occurred_at=datetime(2026, 1, 1, tzinfo=UTC)), EventIn(kind="log", dedupe_key="b")])
    timed, untimed = Event.objects.filter(run=run).order_by("seq")
    assert (timed.ts_from, timed.ts) == ("record", datetime(2026, 1, 1, tzinfo=UTC))
    assert (untimed.ts_from, untimed.ts) == ("received", untimed.recorded_at)
