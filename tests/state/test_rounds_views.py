"""Stable paths and rounds through Django: the push API refuses identity changes (redacted), runs from disk are
flagged, the rounds endpoint and the Rounds view (page and htmx partial), the Protocol tab and its form."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from experiments.protocol import parse_protocol
from state.models import RuleViolation, StateDelta, StateHead
from tests.factories import PASSWORD, make_experiment, make_member, make_run, make_token
from tests.state.helpers import d, push

pytestmark = pytest.mark.django_db

PROTOCOL = """
state:
  stable_paths: ["$.bindings.*", "$.vault.*"]
  convergence: {epsilon: 0.05}
  conflict_resolution: highest-weight
  sharing:
    strategy: full
    sensitive_fields: [internal_notes]
"""


@pytest.fixture
def experiment():
    return make_experiment(protocol_yaml=PROTOCOL, protocol=parse_protocol(PROTOCOL))


def ingest(client, token, *deltas, key):
    events = [{"kind": "run.start", "idempotency_key": "start", "payload": {"task": "t"}}]
    events += [{"kind": "state.delta", "idempotency_key": f"{key}{i}", "agent_id": p["agent_id"], "payload": p} for i, p in enumerate(deltas)]
    return client.post("/api/v1/ingest", {"run_id": "run-1", "events": events}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_push_refuses_identity_changes_naming_path_and_values_redacted(experiment):
    client, token = Client(), make_token(experiment, scopes=["ingest", "memory:read"])
    first = ingest(client, token, d("mapper", "add", "$.bindings", {"customer": "sea:customer:001"}), d("mapper", "add", "$.vault", {"api_key": "sk-SECRET-1"}), key="a")
    assert first.status_code == 200
    stored = StateDelta.objects.count()
    refused = ingest(client, token, d("fixer", "modify", "$.bindings.customer", "sea:customer:002", round=2), key="b")
    body = refused.json()
    assert refused.status_code == 422 and body["code"] == "identity_changed"
    assert "$.bindings.customer" in body["message"] and "sea:customer:001" in body["message"] and "sea:customer:002" in body["message"]
    secret = ingest(client, token, d("fixer", "modify", "$.vault.api_key", "sk-SECRET-2", round=2), key="c")
    assert secret.status_code == 422 and secret.json()["code"] == "identity_changed"
    assert "$.vault.api_key" in secret.json()["message"] and "SECRET" not in secret.content.decode()
    removed = ingest(client, token, d("fixer", "remove", "$.bindings", round=2), key="e")
    assert removed.status_code == 422 and "(removed)" in removed.json()["message"]
    assert StateDelta.objects.count() == stored and RuleViolation.objects.count() == 0
    state = client.get("/api/v1/runs/run-1/state", HTTP_AUTHORIZATION=f"Bearer {token}").json()["state"]
    assert state["bindings"] == {"customer": "sea:customer:001"}
    same = ingest(client, token, d("fixer", "modify", "$.bindings.customer", "sea:customer:001", round=2), key="f")
    assert same.status_code == 200


def test_runs_read_from_disk_apply_the_change_and_flag_it(experiment, client):
    run = make_run(experiment)
    push(run, d("mapper", "add", "$.bindings", {"customer": "c1"}), strict=False)
    push(run, d("fixer", "modify", "$.bindings.customer", "c2", round=2), strict=False)
    assert StateHead.objects.get(run=run).state == {"bindings": {"customer": "c2"}}
    violation = RuleViolation.objects.get(run=run)
    assert violation.rule == "identity_changed" and violation.agent_id == "fixer" and '"c1"' in violation.message and '"c2"' in violation.message
    assert StateDelta.objects.get(run=run, agent_id="fixer").outcome == "applied"
    viewer = make_member(experiment, "viewer")
    client.login(username=viewer.username, password=PASSWORD)
    problems = client.get(reverse("experiments:run-problems", args=[experiment.slug, run.pk])).content.decode()
    assert "identity_changed" in problems and "$.bindings.customer" in problems


def _conflicted_run(experiment):
    run = make_run(experiment)
    push(run, d("solver", "add", "$.answer", "42", weight=0.9), d("guesser", "add", "$.answer", "41", weight=0.2))
    push(run, d("solver", "add", "$.vault", {"api_key": "sk-SECRET-9"}), d("solver", "add", "$.score", 0.5))
    push(run, d("solver", "modify", "$.score", 0.52, round=2))
    push(run, d("solver", "modify", "$.score", 0.53, round=3), d("guesser", "modify", "$.answer", "42", round=3))
    return run


def test_rounds_endpoint_lists_rounds_redacted(experiment):
    run = _conflicted_run(experiment)
    token = make_token(experiment, scopes=["memory:read"])
    response = Client().get(f"/api/v1/runs/{run.run_id}/state/rounds", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200 and "SECRET" not in response.content.decode()
    rounds = response.json()
    assert [r["round"] for r in rounds] == [1, 2, 3]
    first = rounds[0]
    assert first["agents"] == ["guesser", "solver"] and first["changed_paths"] == ["$.answer", "$.vault", "$.score"]
    assert first["conflicts"] == [
        {
            "path": "$.answer",
            "strategy": "highest-weight",
            "winner": {**first["conflicts"][0]["winner"], "agent_id": "solver", "value": "42", "outcome": "applied"},
            "losers": [{**first["conflicts"][0]["losers"][0], "agent_id": "guesser", "value": "41", "outcome": "lost"}],
        }
    ]
    assert next(x for x in first["deltas"] if x["path"] == "$.vault")["value"] == {"api_key": "[redacted]"}
    assert "identity_changed" in first["rules_checked"] and not first["converged"]
    assert [r["converged"] for r in rounds] == [False, True, True]  # score moves by < 0.05, answer rewritten equal
    other = make_token(make_experiment(), scopes=["memory:read"])
    assert Client().get(f"/api/v1/runs/{run.run_id}/state/rounds", HTTP_AUTHORIZATION=f"Bearer {other}").status_code == 404


def test_rounds_view_page_partial_and_access(experiment, client):
    run = _conflicted_run(experiment)
    url = reverse("state:run-rounds", args=[experiment.slug, run.pk])
    assert client.get(url).status_code == 302  # login first
    outsider = make_member(make_experiment(), "owner")
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get(url).status_code == 404
    viewer = make_member(experiment, "viewer")
    client.login(username=viewer.username, password=PASSWORD)
    page = client.get(url).content.decode()
    assert "<html" in page and 'id="rounds-chart"' in page and 'id="rounds-table"' in page and "SECRET" not in page
    assert "Converged</strong> since round 2" in page and "<code>$.bindings.*</code>" in page
    fragment = client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-tab").content.decode()
    assert "<html" not in fragment and "winner <strong>solver</strong>" in fragment and "guesser (weight 0.2, lost" in fragment
    tree = client.get(reverse("state:run-state", args=[experiment.slug, run.pk])).content.decode()
    assert f'href="{url}"' in tree


def test_protocol_tab_shows_stable_paths_and_the_form_refuses_bad_ones(experiment, client):
    owner = make_member(experiment, "owner")
    client.login(username=owner.username, password=PASSWORD)
    url = reverse("experiments:protocol", args=[experiment.slug])
    page = client.get(url).content.decode()
    assert "<code>$.bindings.*</code>" in page and "numeric changes below 0.05" in page
    bad = "state:\n  stable_paths: [\"bindings.*\"]\n"
    response = client.post(url, {"goal": "g2", "status": "running", "review_quorum": 1, "protocol_yaml": bad})
    assert response.status_code == 200 and "Stable path" in response.content.decode()
    experiment.refresh_from_db()
    assert experiment.goal != "g2" and experiment.protocol["state"]["stable_paths"] == ["$.bindings.*", "$.vault.*"]


def test_rounds_view_details_the_last_rounds_and_any_round_on_request(experiment, client, monkeypatch):
    from state import views

    monkeypatch.setattr(views, "DETAIL_ROUNDS", 2)
    run = _conflicted_run(experiment)
    client.force_login(make_member(experiment, "viewer"))
    url = reverse("state:run-rounds", args=[experiment.slug, run.pk])
    page = client.get(url).content.decode()
    assert 'id="round-1"' not in page and 'id="round-2"' in page and 'id="round-3"' in page
    assert 'href="?round=1#round-1"' in page and 'href="#round-3"' in page and 'id="rounds-detail-note"' in page
    assert page.count('<g class="bar') == 3 and page.count('<tr data-round=') == 3
    one = client.get(url + "?round=1").content.decode()
    assert 'id="round-1"' in one and 'id="round-2"' not in one and "winner <strong>solver</strong>" in one
