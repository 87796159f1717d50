"""The Timeline (issue 27): first / previous / next / newest, jump to a seq or a time, dates with times, payload search."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from experiments.ingest import EventIn, append_events
from tests.factories import make_run

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 20, 23, 0, tzinfo=UTC)


@pytest.fixture
def run(experiment):  # type: ignore[no-untyped-def]
    run = make_run(experiment)
    events = [
        EventIn(kind="log", dedupe_key=f"k{i}", payload={"msg": f"line {i}" + (" needle" if i % 100 == 7 else ""), "api_key": "sk-HIDDEN-1234567890"},
                occurred_at=T0 + timedelta(minutes=i), ts_source="record")
        for i in range(1, 451)
    ]  # fmt: skip
    append_events(run, events)
    run.refresh_from_db()
    return run


@pytest.fixture
def client(viewer) -> Client:  # type: ignore[no-untyped-def]
    c = Client()
    c.force_login(viewer)
    return c


def seqs(client: Client, run, **params) -> tuple[list[int], str]:  # type: ignore[no-untyped-def]
    response = client.get(run.get_absolute_url(), params)
    assert response.status_code == 200
    body = response.content.decode()
    return [int(s) for s in re.findall(r'<tr id="event-(\d+)"', body)], body


def test_newest_previous_and_first_page_backwards(client, run):
    newest, body = seqs(client, run, before=str(run.last_seq + 1))
    assert newest == list(range(251, 451)) and 'rel="next"' not in body and "Newest" not in body
    prev = re.search(r'rel="prev" href="[^"]*before=(\d+)', body).group(1)
    older, body = seqs(client, run, before=prev)
    assert older == list(range(51, 251)) and "Newest" in body and "after=250" in body
    oldest, body = seqs(client, run, before="51")
    assert oldest == list(range(1, 51)) and 'rel="prev"' not in body
    first, body = seqs(client, run)
    assert first[0] == 1 and "Newest" in body and f"before={run.last_seq + 1}" in body and 'rel="prev"' not in body


def test_jump_to_a_seq_or_a_time(client, run):
    at_seq, _ = seqs(client, run, seq="300")
    assert at_seq[0] == 300
    at_time, _ = seqs(client, run, at="2026-11-21 01:00")  # 120 minutes after T0: seq 120
    assert at_time[0] == 120
    past_end, body = seqs(client, run, seq="9999")
    assert past_end[-1] == 450 and "showing the newest" in body
    _, body = seqs(client, run, at="next tuesday")
    assert 'id="jump-error"' in body


def test_rows_show_the_date_with_the_time(client, run):
    _, body = seqs(client, run)
    assert ">2026-11-20 23:01:00<" in body and ">2026-11-21 00:00:00<" in body


def test_search_in_payloads_is_server_side_and_redacted(client, run):
    found, body = seqs(client, run, text="NEEDLE")
    assert found == [7, 107, 207, 307, 407]
    # The masked value is in every stored payload, but nobody finds events by searching for it.
    hidden, body = seqs(client, run, text="sk-HIDDEN")
    assert hidden == [] and "No events" in body
    paged, body = seqs(client, run, text="line", after="440")
    assert paged == list(range(441, 451)) and 'rel="prev"' in body
