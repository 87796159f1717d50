"""A worker gives back the heap a large API body left behind (glibc malloc_trim), and only after large ones."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.factories import make_experiment, make_token

pytestmark = pytest.mark.django_db


def test_a_large_ingest_body_is_followed_by_a_trim_and_a_small_one_is_not(monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr("awp_site.middleware.release_freed_memory", lambda: trims.append(1))
    experiment = make_experiment()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment)}")
    start = [{"kind": "run.start", "idempotency_key": "start", "payload": {}}]
    assert client.post("/api/v1/ingest", data=json.dumps({"run_id": "r", "events": start}), content_type="application/json").status_code == 200
    assert trims == []
    big = [{"kind": "log", "idempotency_key": f"e{i}", "payload": {"msg": "x" * 1000}} for i in range(1200)]
    body = json.dumps({"run_id": "r", "events": big})
    assert len(body) > 1_000_000
    assert client.post("/api/v1/ingest", data=body, content_type="application/json").status_code == 200
    assert trims == [1]
