"""Review pages and the curation API: permissions, CSRF, filters, htmx fragments, tokens with the review scope."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from memory.curation.models import Proposal
from memory.curation.services import curate_run
from tests.curation.builders import two_iteration_run
from tests.factories import PASSWORD, make_member, make_token, make_user

pytestmark = pytest.mark.django_db
FACT = "fact_collector: FACT_ALPHA: 42 is even."


def _client(user, **kwargs) -> Client:
    client = Client(**kwargs)
    assert client.login(username=user.username, password=PASSWORD)
    return client


@pytest.fixture
def proposal(experiment):
    run, _ = two_iteration_run(experiment, FACT)
    curate_run(run=run)
    return Proposal.objects.get()


def test_review_tab_lists_pending_with_evidence_count(experiment, viewer, proposal):
    response = _client(viewer).get(f"/experiments/{experiment.slug}/review/")
    body = response.content.decode()
    assert response.status_code == 200
    assert f'id="proposal-{proposal.pk}"' in body and FACT in body
    assert 'class="num">2</td>' in body  # two digests confirm it
    assert "vote-approve" not in body  # a viewer gets no vote buttons


def test_filters_by_kind_and_status(experiment, viewer, proposal):
    client = _client(viewer)
    assert FACT not in client.get(f"/experiments/{experiment.slug}/review/?kind=tool").content.decode()
    assert FACT not in client.get(f"/experiments/{experiment.slug}/review/?status=approved").content.decode()
    assert FACT in client.get(f"/experiments/{experiment.slug}/review/?kind=fact&status=pending").content.decode()


def test_detail_shows_evidence_with_links_into_digests_tab(experiment, viewer, proposal):
    evidence = proposal.evidence.first()
    response = _client(viewer).get(f"/experiments/{experiment.slug}/review/{proposal.pk}/", HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert f"/experiments/{experiment.slug}/runs/{evidence.run_id}/digests/" in body
    assert 'class="match"' in body and "Confidence trend" in body


def test_viewer_vote_is_refused_with_403(experiment, viewer, proposal):
    response = _client(viewer).post(f"/experiments/{experiment.slug}/review/{proposal.pk}/vote", {"verdict": "approve"})
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.status == "pending" and not proposal.votes.exists()


def test_curator_votes_through_htmx_and_gets_queue_with_badges(experiment, curator, proposal):
    response = _client(curator).post(
        f"/experiments/{experiment.slug}/review/{proposal.pk}/vote", {"verdict": "approve", "status": "pending"}, HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'id="review-queue"' in body and f'id="proposal-{proposal.pk}"' not in body
    assert f'id="pending-badge-{experiment.pk}" hx-swap-oob="true"' in body
    proposal.refresh_from_db()
    assert proposal.status == "approved"


def test_session_post_without_csrf_is_refused(experiment, curator, proposal):
    client = _client(curator, enforce_csrf_checks=True)
    response = client.post(f"/experiments/{experiment.slug}/review/{proposal.pk}/vote", {"verdict": "approve"})
    assert response.status_code == 403
    api = client.post(f"/api/v1/proposals/{proposal.pk}/review", json.dumps({"verdict": "approve"}), content_type="application/json")
    assert api.status_code in (401, 403)
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_bulk_reject_with_reason(experiment, curator):
    run, _ = two_iteration_run(experiment, FACT, "w: another fact")
    curate_run(run=run)
    ids = list(Proposal.objects.values_list("pk", flat=True))
    response = _client(curator).post(f"/experiments/{experiment.slug}/review/bulk", {"ids": ids, "verdict": "reject", "reason": "noise"})
    assert response.status_code == 302
    assert set(Proposal.objects.values_list("status", flat=True)) == {"rejected"}
    assert set(Proposal.objects.values_list("decisions__reason", flat=True)) == {"noise"}


def test_non_member_gets_404(experiment, proposal):
    outsider = make_user()
    assert _client(outsider).get(f"/experiments/{experiment.slug}/review/").status_code == 404


def test_api_lists_proposals_with_evidence(experiment, viewer, proposal):
    response = _client(viewer).get(f"/api/v1/experiments/{experiment.slug}/proposals?status=pending&kind=fact")
    data = response.json()
    assert response.status_code == 200
    assert [p["id"] for p in data] == [proposal.pk]
    assert {"id", "kind", "text", "status", "origin", "evidence"} <= set(data[0])
    assert sorted(e["iteration"] for e in data[0]["evidence"]) == [1, 2]
    bad = _client(viewer).get(f"/api/v1/experiments/{experiment.slug}/proposals?status=bogus")
    assert bad.status_code == 422


def test_api_review_with_token_issued_to_a_curator(experiment, curator, proposal):
    secret = make_token(experiment, scopes=["review"], user=curator)
    client = Client()
    response = client.post(
        f"/api/v1/proposals/{proposal.pk}/review",
        json.dumps({"verdict": "approve", "text": "42 is even."}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {secret}",
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "approved" and response.json()["edited_text"] == "42 is even."
    again = client.post(
        f"/api/v1/proposals/{proposal.pk}/review", json.dumps({"verdict": "reject"}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
    )
    assert again.status_code == 409 and again.json()["code"] == "already_decided"


def test_api_review_refuses_tokens_without_scope_or_user_and_viewers(experiment, viewer, proposal):
    client = Client()
    no_scope = make_token(experiment, scopes=["memory:read"], user=make_member(experiment, "curator"))
    no_user = make_token(experiment, scopes=["review"])
    viewer_token = make_token(experiment, scopes=["review"], user=viewer)
    for secret, code in [(no_scope, "missing_scope"), (no_user, "token_without_user"), (viewer_token, "forbidden")]:
        response = client.post(
            f"/api/v1/proposals/{proposal.pk}/review", json.dumps({"verdict": "approve"}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {secret}"
        )
        assert (response.status_code, response.json()["code"]) == (403, code)
    missing = client.post("/api/v1/proposals/999999/review", json.dumps({"verdict": "approve"}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {no_user}")
    assert missing.status_code == 404
    proposal.refresh_from_db()
    assert proposal.status == "pending"


def test_curated_panel_and_retract(experiment, curator, viewer, proposal):
    client = _client(curator)
    client.post(f"/experiments/{experiment.slug}/review/{proposal.pk}/vote", {"verdict": "approve"})
    panel = _client(viewer).get(f"/experiments/{experiment.slug}/curated/").content.decode()
    assert FACT in panel and "Retract</button>" not in panel
    assert _client(viewer).post(f"/experiments/{experiment.slug}/curated/{proposal.pk}/retract").status_code == 403
    response = client.post(f"/experiments/{experiment.slug}/curated/{proposal.pk}/retract", {"reason": "stale"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "retracted" in response.content.decode()
    proposal.refresh_from_db()
    assert proposal.status == "retracted"


def test_experiments_list_shows_pending_badge(experiment, viewer, proposal):
    body = _client(viewer).get("/").content.decode()
    assert f'id="pending-badge-{experiment.pk}">1</span>' in body


def test_memory_tab_curated_subtab_includes_the_panel(experiment, curator, proposal):
    from django.urls import reverse

    client = _client(curator)
    client.post(f"/experiments/{experiment.slug}/review/{proposal.pk}/vote", {"verdict": "approve"})
    body = client.get(reverse("memory:curated", args=[experiment.slug])).content.decode()
    assert 'id="curated-panel"' in body and FACT in body and "Retract</button>" in body and "v1" in body
