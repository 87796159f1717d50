"""20 writers pushing to one run through a real daphne at once leave a gap-free ledger."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from experiments.models import Event, Run
from tests.factories import make_experiment, make_token


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_writers_leave_gap_free_seqs(asgi_server):
    experiment = make_experiment()
    token = make_token(experiment)
    headers = {"Authorization": f"Bearer {token}"}

    def push(writer: int) -> list[int]:
        events = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}}]
        events += [{"kind": "log", "idempotency_key": f"w{writer}-{i}", "payload": {"msg": i}} for i in range(10)]
        response = requests.post(f"{asgi_server.url}/api/v1/ingest", json={"run_id": "shared", "events": events}, headers=headers, timeout=60)
        assert response.status_code == 200, response.text
        return response.json()["seqs"]

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(push, range(20)))
    run = Run.objects.get(experiment=experiment, run_id="shared")
    seqs = list(Event.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, 202)) and run.last_seq == 201
    assert sorted(s for answer in answers for s in answer[1:]) == list(range(2, 202))
    assert {answer[0] for answer in answers} == {1}


@pytest.mark.django_db(transaction=True)
def test_push_client_batches_and_replays_safely(asgi_server):
    from awp_site.client import IngestClient, IngestError

    experiment = make_experiment()
    token = make_token(experiment)
    with IngestClient(asgi_server.url, token=token, run_id="client-run", batch_size=4) as client:
        client.send("run.start", {"task": "t"})
        for i in range(9):
            client.send("log", {"msg": i}, iteration=1)
    assert client.seqs == list(range(1, 11))
    again = IngestClient(asgi_server.url, token=token, run_id="client-run")
    again._buffer = [{"kind": "log", "idempotency_key": f"{client._prefix}-2", "payload": {"msg": 0}}]
    assert again.flush() == [2]
    again.send("no.such.kind", {})
    with pytest.raises(IngestError) as refused:
        again.close()
    assert refused.value.status == 422 and refused.value.body["errors"][0]["index"] == 0
    assert Event.objects.filter(run__run_id="client-run").count() == 10
