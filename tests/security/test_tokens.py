"""API tokens: hashed at rest, shown once, scoped, revocable at once, last use recorded, guessing slowed."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from experiments.models import ApiToken
from tests.factories import PASSWORD, make_experiment, make_member, make_token

pytestmark = pytest.mark.django_db


def bearer(secret: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {secret}"}


def test_the_secret_is_nowhere_in_the_token_table():
    experiment = make_experiment()
    secret = make_token(experiment, ["memory:read"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(t)::text FROM experiments_apitoken t")
        rows = [row[0] for row in cursor.fetchall()]
    assert rows and all(secret not in row and secret[10:30] not in row for row in rows)
    token = ApiToken.objects.get()
    assert token.hashed_secret == ApiToken.hash_secret(secret) and len(token.key_prefix) <= 16


def test_the_command_shows_the_secret_once_and_never_again():
    experiment = make_experiment()
    out, err = io.StringIO(), io.StringIO()
    call_command("awp_token", "create", "--experiment", experiment.slug, "--name", "ci", "--scopes", "ingest", stdout=out, stderr=err)
    secret = out.getvalue().strip().splitlines()[-1]
    assert secret.startswith(ApiToken.PREFIX) and secret not in err.getvalue()
    listing = io.StringIO()
    call_command("awp_token", "list", "--experiment", experiment.slug, stdout=listing)
    assert "ci" in listing.getvalue() and secret not in listing.getvalue()
    assert secret[:10] in listing.getvalue()  # only the recognisable prefix


def test_admin_token_page_never_shows_a_secret(client):
    from django.contrib.auth import get_user_model

    experiment = make_experiment()
    secret = make_token(experiment, ["ingest"])
    admin = get_user_model().objects.create_superuser("root", "root@example.invalid", PASSWORD)
    client.force_login(admin)
    token = ApiToken.objects.get()
    for url in ("/admin/experiments/apitoken/", f"/admin/experiments/apitoken/{token.pk}/change/"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert secret not in response.content.decode()


def test_a_revoked_token_fails_on_the_very_next_request(client):
    experiment = make_experiment()
    secret = make_token(experiment, ["memory:read"], name="reader")
    assert client.get("/api/v1/experiments", **bearer(secret)).status_code == 200
    call_command("awp_token", "revoke", "--experiment", experiment.slug, "--name", "reader", stdout=io.StringIO())
    response = client.get("/api/v1/experiments", **bearer(secret))
    assert response.status_code == 401
    assert response.json()["code"] and response.json()["message"]


def test_scopes_limit_what_a_token_may_do(client):
    experiment = make_experiment()
    ingest_only = make_token(experiment, ["ingest"])
    response = client.get("/api/v1/experiments", **bearer(ingest_only))
    assert response.status_code == 403 and response.json()["code"] == "missing_scope"
    reader = make_token(experiment, ["memory:read"])
    assert [e["slug"] for e in client.get("/api/v1/experiments", **bearer(reader)).json()] == [experiment.slug]


def test_a_token_sees_only_its_own_experiment(client):
    mine, other = make_experiment(), make_experiment()
    reader = make_token(mine, ["memory:read"])
    slugs = [e["slug"] for e in client.get("/api/v1/experiments", **bearer(reader)).json()]
    assert slugs == [mine.slug] and other.slug not in slugs
    response = client.get(f"/api/v1/experiments/{other.slug}/runs", **bearer(reader))
    assert response.status_code in {403, 404}
    assert response.json()["code"] and other.name not in response.content.decode()


def test_last_used_time_is_recorded():
    from django.test import Client

    experiment = make_experiment()
    secret = make_token(experiment, ["memory:read"])
    assert ApiToken.objects.get().last_used_at is None
    Client().get("/api/v1/experiments", **bearer(secret))
    assert ApiToken.objects.get().last_used_at is not None


def test_an_unknown_or_malformed_token_is_a_401_with_a_code(client):
    for header in ("Bearer awp_not-a-real-token", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer " + "x" * 5000):
        response = client.get("/api/v1/experiments", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401, header[:20]
        assert response.json()["code"] and response.json()["message"]


def test_guessing_tokens_is_rate_limited_per_address(client):
    statuses = [
        client.get("/api/v1/experiments", HTTP_AUTHORIZATION=f"Bearer awp_guess{i}").status_code for i in range(40)
    ]
    assert statuses[0] == 401 and statuses[-1] == 429
    # The limit is per address: another client still gets a plain answer.
    other = client.get("/api/v1/experiments", HTTP_AUTHORIZATION="Bearer awp_guess", REMOTE_ADDR="127.0.0.9")
    assert other.status_code == 401


def test_login_is_slowed_per_user_even_across_addresses(client):
    user = make_member(make_experiment())
    statuses = [
        client.post("/login/", {"username": user.username, "password": "wrong"}, REMOTE_ADDR=f"127.0.1.{i}").status_code
        for i in range(12)
    ]
    assert statuses[0] == 200 and statuses[-1] == 429
    # Even the right password waits while the account is being hammered.
    right = client.post("/login/", {"username": user.username, "password": PASSWORD}, REMOTE_ADDR="127.0.2.1")
    assert right.status_code == 429 and right["Retry-After"]


def test_login_is_slowed_per_address_across_usernames(client):
    statuses = [
        client.post("/login/", {"username": f"ghost{i}", "password": "wrong"}, REMOTE_ADDR="127.0.3.3").status_code
        for i in range(25)
    ]
    assert statuses[0] == 200 and statuses[-1] == 429
