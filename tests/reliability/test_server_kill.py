"""SIGKILL the server in the middle of a 5,000-event batch: the push client's retry stores every event exactly once.

The test watches pg_stat_activity and kills daphne while its ingest transaction is open, then starts it
again on the same port; awp_site.client.IngestClient retries the same batch (same idempotency keys).
"""

from __future__ import annotations

import signal
import threading
import time

import pytest
from django.db import connection

from awp_site.client import IngestClient
from experiments.models import Event, Run
from tests.factories import make_experiment, make_token

pytestmark = pytest.mark.django_db(transaction=True)
N = 5000


def server_in_transaction() -> bool:
    """Whether another session on this database has a transaction open (daphne inside the ingest batch)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend' "  # an autovacuum worker of this database is in a transaction too
            "AND xact_start IS NOT NULL AND state IN ('active', 'idle in transaction')"
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.parametrize("when", ["inside-the-transaction", "right-after-the-request"])
def test_sigkill_mid_batch_then_retry_stores_every_event_once(live_server_factory, when):
    server = live_server_factory()
    experiment = make_experiment()
    token = make_token(experiment, ["ingest"])
    client = IngestClient(server.url, token=token, run_id="kill-run", batch_size=N + 1, retries=8, backoff=0.5)
    client.send("run.start", {"task": "survive a kill"}, idempotency_key="start")
    assert client.flush() == [1]
    # batch_size N + 1: the N events below stay buffered until flush() sends them as one batch of N.
    for i in range(N):
        client.send("log", {"msg": f"event {i}", "i": i, "pad": "x" * 150}, idempotency_key=f"k{i}")

    outcome: dict[str, object] = {}

    def flush() -> None:
        try:
            outcome["seqs"] = client.flush()
        except Exception as exc:  # reported by the assertions below
            outcome["error"] = exc

    thread = threading.Thread(target=flush, daemon=True)
    thread.start()
    killed_inside = False
    if when == "inside-the-transaction":
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not killed_inside:
            if server_in_transaction():
                server.stop(sig=signal.SIGKILL)
                killed_inside = True
            time.sleep(0.002)
        assert killed_inside, f"never saw the ingest transaction open: {outcome} {Run.objects.filter(run_id='kill-run').values_list('last_seq', flat=True)}"
    else:
        time.sleep(0.05)
        server.stop(sig=signal.SIGKILL)
    time.sleep(1.0)
    server.start()  # same port: the client's retries find it again
    thread.join(timeout=90)
    assert "error" not in outcome, outcome.get("error")
    seqs = outcome["seqs"]
    assert seqs == list(range(2, N + 2))  # the answer of the (re)tried batch: every event once, in order

    run = Run.objects.get(run_id="kill-run")
    rows = list(Event.objects.filter(run=run).order_by("seq").values_list("seq", "dedupe_key"))
    assert len(rows) == N + 1 and run.last_seq == N + 1
    assert [seq for seq, _ in rows] == list(range(1, N + 2))
    assert len({key for _, key in rows}) == N + 1
    if killed_inside:
        # The killed transaction left nothing behind: no second run row, no orphan events.
        assert Run.objects.filter(experiment=experiment).count() == 1
    client.close()
