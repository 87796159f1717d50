"""The Connect page and the Overview (issue 27): tokens made in the browser, audited; snippets; where an experiment opens."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.test import Client

from experiments.models import ApiToken
from experiments.snippets import snippets_for
from tests.factories import make_run

pytestmark = pytest.mark.django_db


def logged_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def test_experiment_opens_on_the_overview_not_the_protocol_form(experiment, viewer):
    make_run(experiment, run_id="run-newest")
    body = logged_in(viewer).get(experiment.get_absolute_url()).content.decode()
    assert "Latest runs" in body and "run-newest" in body and "Review queue" in body and "Memory at a glance" in body
    assert "Save protocol" not in body and 'name="protocol_yaml"' not in body


def test_an_empty_experiment_points_owners_to_connect(experiment, owner, viewer):
    body = logged_in(owner).get(experiment.get_absolute_url()).content.decode()
    assert 'id="overview-empty"' in body and f"/experiments/{experiment.slug}/connect/" in body
    runs = logged_in(owner).get(f"/experiments/{experiment.slug}/runs/").content.decode()
    assert f"/experiments/{experiment.slug}/connect/" in runs
    memory = logged_in(owner).get(f"/experiments/{experiment.slug}/memory/").content.decode()
    assert f"/experiments/{experiment.slug}/connect/" in memory
    # A viewer sees no Connect tab (owners only) and no link to a page they cannot open.
    assert f"/experiments/{experiment.slug}/connect/" not in logged_in(viewer).get(experiment.get_absolute_url()).content.decode()


def test_connect_is_for_owners_only(experiment, viewer, curator):
    for user in (viewer, curator):
        client = logged_in(user)
        assert client.get(f"/experiments/{experiment.slug}/connect/").status_code == 403
        assert client.post(f"/experiments/{experiment.slug}/connect/tokens", {"name": "x", "scopes": ["ingest"]}).status_code == 403
    assert not ApiToken.objects.exists()


def test_owner_creates_a_token_shown_once_and_audited(experiment, owner):
    client = logged_in(owner)
    response = client.post(f"/experiments/{experiment.slug}/connect/tokens", {"name": "laptop", "scopes": ["ingest", "memory:read"]})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    body = response.content.decode()
    secret = re.search(r'id="new-token-secret" class="secret">(awp_[^<]+)<', body).group(1)
    token = ApiToken.objects.get(experiment=experiment, name="laptop")
    assert token.hashed_secret == ApiToken.hash_secret(secret) and token.scopes == ["ingest", "memory:read"]
    assert secret in body.split('id="snippet-push"')[1]  # the snippets carry it this once
    again = client.get(f"/experiments/{experiment.slug}/connect/").content.decode()
    assert secret not in again and token.key_prefix in again
    entry = LogEntry.objects.get(object_id=str(token.pk))
    assert entry.user_id == owner.pk and "issued token 'laptop'" in entry.change_message and "connect page" in entry.change_message


def test_token_refusals_name_the_field_and_store_nothing(experiment, owner):
    client = logged_in(owner)
    url = f"/experiments/{experiment.slug}/connect/tokens"
    for data, field in (({"name": "", "scopes": ["ingest"]}, "name"), ({"name": "a"}, "scopes"), ({"name": "a", "scopes": ["root"]}, "scopes")):
        response = client.post(url, data)
        assert response.status_code == 400
        assert f'data-field="{field}"' in response.content.decode()
    assert not ApiToken.objects.exists() and not LogEntry.objects.exists()


def test_owner_revokes_a_token_and_it_stops_working(experiment, owner):
    token, secret = ApiToken.issue(experiment=experiment, name="old", scopes=["ingest"])
    client = logged_in(owner)
    response = client.post(f"/experiments/{experiment.slug}/connect/tokens/{token.pk}/revoke")
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert "revoked token 'old'" in LogEntry.objects.get(object_id=str(token.pk)).change_message
    api = Client().post("/api/v1/ingest", {"run_id": "r", "events": []}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert api.status_code == 401
    assert client.post(f"/experiments/{experiment.slug}/connect/tokens/{token.pk}/revoke").status_code == 404


def test_the_command_goes_through_the_same_audited_service(experiment, caplog):
    with caplog.at_level("INFO", logger="awp.audit"):
        call_command("awp_token", "create", "--experiment", experiment.slug, "--name", "ci")
    assert any("issued token 'ci'" in r.getMessage() and "awp_token" in r.getMessage() for r in caplog.records)


def test_snippets_are_filled_with_slug_server_and_token():
    filled = {s.key: s.code for s in snippets_for(server="http://127.0.0.1:8000", slug="my-exp", token="awp_abc")}
    assert set(filled) == {"watch", "push", "curl", "memory"}
    assert "--experiment my-exp" in filled["watch"]
    assert "IngestClient('http://127.0.0.1:8000', token='awp_abc'" in filled["push"]
    assert "http://127.0.0.1:8000/api/v1/ingest" in filled["curl"] and "Bearer awp_abc" in filled["curl"]
    assert "/api/v1/experiments/my-exp/memory/search" in filled["memory"]
    placeholder = {s.key: s.code for s in snippets_for(server="http://x", slug="e", token=None)}
    assert 'os.environ["AWP_TOKEN"]' in placeholder["push"] and "$AWP_TOKEN" in placeholder["curl"]
    compile(placeholder["push"], "push.py", "exec")
