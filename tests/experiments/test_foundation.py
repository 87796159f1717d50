"""Foundation: the ledger is append-only in Postgres, pages need login, roles are enforced."""

from __future__ import annotations

import pytest
from django.db import connection, transaction
from django.db.utils import DatabaseError
from django.urls import reverse

from experiments.models import ApiToken, Event
from tests.factories import PASSWORD, make_experiment, make_member, make_run

pytestmark = pytest.mark.django_db


def make_event(run, seq=1):  # type: ignore[no-untyped-def]
    return Event.objects.create(run=run, seq=seq, kind="log", payload={"msg": "hi"}, dedupe_key=f"k{seq}")


def test_updating_an_event_fails_in_the_database():
    event = make_event(make_run())
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        Event.objects.filter(pk=event.pk).update(kind="changed")
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE experiments_event SET payload = '{}'::jsonb WHERE id = %s", [event.pk])
    event.refresh_from_db()
    assert event.kind == "log"


def test_deleting_an_event_fails_in_the_database():
    event = make_event(make_run())
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM experiments_event WHERE id = %s", [event.pk])
    assert Event.objects.filter(pk=event.pk).exists()


def test_seq_and_dedupe_key_are_unique_per_run():
    run = make_run()
    make_event(run, 1)
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.create(run=run, seq=1, kind="log", dedupe_key="other")
    with pytest.raises(DatabaseError), transaction.atomic():
        Event.objects.create(run=run, seq=2, kind="log", dedupe_key="k1")


@pytest.mark.parametrize("name", ["experiments:list"])
def test_anonymous_request_to_a_page_redirects_to_login(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_anonymous_request_to_an_experiment_tab_redirects_to_login(client, experiment):
    for name in ["experiments:protocol", "experiments:runs", "memory:tab", "curation:review"]:
        response = client.get(reverse(name, args=[experiment.slug]))
        assert response.status_code == 302, name
        assert response["Location"].startswith("/login/"), name


def test_viewer_cannot_edit_the_protocol(client, experiment, viewer):
    client.login(username=viewer.username, password=PASSWORD)
    url = reverse("experiments:protocol", args=[experiment.slug])
    assert client.get(url).status_code == 200
    response = client.post(url, {"goal": "hijacked", "status": "draft", "review_quorum": 1})
    assert response.status_code == 403
    experiment.refresh_from_db()
    assert experiment.goal != "hijacked"


def test_owner_edits_the_protocol_and_yaml_errors_show_the_line(client, experiment, owner):
    client.login(username=owner.username, password=PASSWORD)
    url = reverse("experiments:protocol", args=[experiment.slug])
    bad = "state:\n  model: shared_dict\n  sharing: [unclosed\n"
    response = client.post(url, {"goal": "g2", "status": "running", "review_quorum": 1, "protocol_yaml": bad})
    assert response.status_code == 200
    assert "YAML error at line" in response.content.decode()
    experiment.refresh_from_db()
    assert experiment.goal != "g2"
    good = "state:\n  sharing:\n    strategy: selective\n    rules:\n      - from_agent: a\n        to_agents: [b]\n        fields: [x]\n"
    response = client.post(url, {"goal": "g2", "status": "running", "review_quorum": 1, "protocol_yaml": good, "tags": "a, b"})
    assert response.status_code == 302
    experiment.refresh_from_db()
    assert experiment.goal == "g2" and experiment.tags == ["a", "b"]
    assert experiment.protocol["state"]["sharing"]["rules"] == [{"from": "a", "to": ["b"], "fields": ["x"]}]


def test_member_of_one_experiment_gets_404_for_another(client, experiment, owner):
    other = make_experiment()
    client.login(username=owner.username, password=PASSWORD)
    for name in ["experiments:protocol", "experiments:runs", "memory:tab", "curation:review"]:
        assert client.get(reverse(name, args=[other.slug])).status_code == 404, name


def test_experiment_list_shows_only_member_experiments(client, experiment, viewer):
    hidden = make_experiment(name="Hidden one")
    client.login(username=viewer.username, password=PASSWORD)
    body = client.get(reverse("experiments:list")).content.decode()
    assert experiment.name in body
    assert hidden.name not in body


def test_htmx_tab_request_returns_only_the_fragment(client, experiment, viewer):
    client.login(username=viewer.username, password=PASSWORD)
    url = reverse("experiments:protocol", args=[experiment.slug])
    fragment = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="tab").content.decode()
    assert "<html" not in fragment and "Configuration" in fragment
    full = client.get(url).content.decode()
    assert "<html" in full and "Configuration" in full


def test_healthz_reports_database_pgvector_and_channel_layer(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["database"] == "ok"
    assert body["pgvector"].startswith("0.")
    assert body["channel_layer"]


def test_tokens_are_stored_hashed():
    experiment = make_experiment()
    token, secret = ApiToken.issue(experiment=experiment, name="ci", scopes=["ingest"])
    assert secret not in token.hashed_secret and token.hashed_secret == ApiToken.hash_secret(secret)
    with pytest.raises(ValueError, match="unknown scope"):
        ApiToken.issue(experiment=experiment, name="bad", scopes=["root"])


def test_login_is_rate_limited(client):
    make_member(make_experiment(), user=None)
    statuses = [client.post("/login/", {"username": "nobody", "password": "wrong"}).status_code for _ in range(12)]
    assert statuses[0] == 200 and statuses[-1] == 429


def test_run_page_renders_with_its_tabs(client, experiment, viewer):
    run = make_run(experiment)
    client.login(username=viewer.username, password=PASSWORD)
    body = client.get(run.get_absolute_url()).content.decode()
    assert run.run_id in body and "Blackboard" in body and "State" in body
