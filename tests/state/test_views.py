"""The State tab over HTTP: membership, the htmx partial, diff, blame, owner-only audited reveal."""

from __future__ import annotations

import pytest
from django.test import Client

from state.models import RevealAudit
from tests.factories import make_member, make_user
from tests.state.helpers import d, push, run_with_protocol

pytestmark = pytest.mark.django_db


@pytest.fixture
def run():
    run = run_with_protocol()
    push(run, d("researcher", "add", "$.researcher", {"summary": "one", "password": "hunter2"}))
    push(run, d("researcher", "modify", "$.researcher.summary", "two", round=2))
    return run


def url(run, query=""):
    return f"/experiments/{run.experiment.slug}/runs/{run.pk}/state/{query}"


def test_non_members_get_404(run):
    client = Client()
    client.force_login(make_user())
    assert client.get(url(run)).status_code == 404


def test_partial_diff_and_blame_are_redacted(run):
    client = Client()
    client.force_login(make_member(run.experiment, "viewer"))
    page = client.get(url(run, "?seq=2&from=1&path=$.researcher.summary"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="run-tab")
    html = page.content.decode()
    assert page.status_code == 200 and '<nav class="tabs"' not in html  # only the tab, not the run page's tabs
    assert 'class="diff-changed"' in html and "$.researcher.summary" in html
    assert 'id="state-history"' in html and "hunter2" not in html
    assert "Reveal sensitive values" not in html
    assert "hunter2" not in client.get(url(run, "?reveal=1")).content.decode()
    assert not RevealAudit.objects.exists()


def test_owner_reveal_is_audited(run):
    client = Client()
    owner = make_member(run.experiment, "owner")
    client.force_login(owner)
    assert "hunter2" not in client.get(url(run)).content.decode()
    assert "hunter2" in client.get(url(run, "?reveal=1")).content.decode()
    assert RevealAudit.objects.filter(user=owner, run=run, where="page").count() == 1


def test_live_fragment_refreshes_the_head_redacted(run):
    from awp_site.live import Viewer
    from experiments.models import Event
    from state.fragments import render_state_head

    html = render_state_head(run, list(Event.objects.filter(run=run)), Viewer(user=None, role="owner", reveal_sensitive=True))
    assert len(html) == 1 and 'id="state-head"' in html[0] and 'hx-swap-oob="true"' in html[0]
    assert "two" in html[0] and "hunter2" not in html[0]
