"""Rate limits are settings (AWP_RATE_LIMIT_*), answered with Retry-After, per token (issue 27)."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client

from tests.factories import make_experiment, make_token

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_windows():  # type: ignore[no-untyped-def]
    cache.clear()
    yield
    cache.clear()


def runs(client: Client, token: str, address: str = "127.0.0.1") -> int:
    """429, or 0 for any other answer (the token may not list experiments: what counts is the limit)."""
    status = client.get("/api/v1/experiments", HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR=address).status_code
    return 429 if status == 429 else 0


def test_the_token_limit_is_a_setting_and_429_carries_retry_after(settings):
    settings.AWP_RATE_LIMIT_TOKEN_PER_MINUTE = 5
    token = make_token(make_experiment())
    client = Client()
    assert [runs(client, token) for _ in range(6)] == [0] * 5 + [429]
    response = client.get("/api/v1/experiments", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 429 and 1 <= int(response["Retry-After"]) <= 60
    body = response.json()
    assert body["code"] == "rate_limited" and body["retry_after"] == int(response["Retry-After"])
    assert "AWP_RATE_LIMIT_TOKEN_PER_MINUTE" in body["message"]


def test_clients_sharing_an_address_each_have_their_own_token_limit(settings):
    settings.AWP_RATE_LIMIT_TOKEN_PER_MINUTE = 5
    experiment = make_experiment()
    first, second = make_token(experiment), make_token(experiment)
    client = Client()
    assert [runs(client, first) for _ in range(5)] == [0] * 5
    assert runs(client, second) == 0  # same address, another token: not the first one's budget


def test_zero_turns_a_limit_off(settings):
    settings.AWP_RATE_LIMIT_TOKEN_PER_MINUTE = 0
    settings.AWP_RATE_LIMIT_ADDRESS_PER_MINUTE = 0
    token = make_token(make_experiment())
    client = Client()
    assert {runs(client, token) for _ in range(40)} == {0}


def test_a_full_ingest_batch_429_is_retried_by_the_client_after_retry_after(settings, live_server_factory):
    from awp_memory_client import IngestClient

    settings.AWP_RATE_LIMIT_TOKEN_PER_MINUTE = 2
    server = live_server_factory(AWP_RATE_LIMIT_TOKEN_PER_MINUTE="2")
    experiment = make_experiment()
    token = make_token(experiment)
    slept: list[float] = []
    client = IngestClient(server.url, token=token, run_id="limited", batch_size=1, sleep=slept.append, retries=0)
    client.send("run.start", {"task": "t"})
    client.send("log", {"msg": 1})
    with pytest.raises(Exception) as refused:
        client.send("log", {"msg": 2})  # the third request in the minute: 429, and no retries allowed here
    assert getattr(refused.value, "status", None) == 429
    assert json.dumps(refused.value.body).count("retry_after") == 1
