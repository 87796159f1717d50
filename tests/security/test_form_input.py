"""Page forms under hostile input: a NUL character in any field, an impossible date. Most page actions read
request.POST themselves, so each was a 500 (Postgres refuses NUL; parse_datetime raises on month 13); now the
one URL guard refuses a NUL in any form field by name, and the date is refused by the view with a 422."""

from __future__ import annotations

import pytest
from django.test import Client

from experiments.models import ApiToken
from memory.curation.services import review_proposal
from memory.models import MemoryEntry
from state.models import KnownSecret
from tests.factories import make_member
from tests.facts.test_services_api import _proposed

pytestmark = pytest.mark.django_db(transaction=True)
NUL = "a\x00b"

FORMS = [
    ("connect/tokens", {"name": NUL, "scopes": ["ingest"]}, "form.name"),
    ("connect/secrets", {"values": "sk-live-" + "x" * 30 + NUL}, "form.values"),
    ("memory/notes/", {"content": NUL}, "form.content"),
    ("review/bulk", {"ids": ["1"], "verdict": "reject", "reason": NUL}, "form.reason"),
    ("memory/facts/{pk}/pin", {"reason": NUL}, "form.reason"),
    ("memory/facts/{pk}/supersede", {"text": NUL}, "form.text"),
]


@pytest.fixture
def owner_client(experiment):  # type: ignore[no-untyped-def]
    owner = make_member(experiment, "owner")
    proposal = _proposed(experiment)
    review_proposal(proposal=proposal, reviewer=owner, verdict="approve", text="", reason="")
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    return client, experiment, proposal


def stored(experiment) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return ApiToken.objects.count(), MemoryEntry.objects.count(), KnownSecret.objects.filter(experiment=experiment).count()


@pytest.mark.parametrize(("action", "data", "field"), FORMS, ids=[a for a, _, _ in FORMS])
def test_a_nul_in_any_form_field_is_a_400_naming_it_and_nothing_is_stored(owner_client, action, data, field):
    client, experiment, proposal = owner_client
    before = stored(experiment)
    response = client.post(f"/experiments/{experiment.slug}/{action.format(pk=proposal.pk)}", data)
    assert response.status_code == 400, (response.status_code, response.content[:200])
    assert field in response.content.decode()
    assert stored(experiment) == before


@pytest.mark.parametrize("value", ["2026-13-45T00:00:00", "2026-01-01T00:00:00+99:00", "yesterday"])
def test_an_impossible_valid_until_is_refused_not_a_500(owner_client, value):
    client, experiment, proposal = owner_client
    response = client.post(f"/experiments/{experiment.slug}/memory/facts/{proposal.pk}/expire", {"valid_until": value})
    assert response.status_code == 422, (response.status_code, response.content[:200])
    proposal.refresh_from_db()
    assert proposal.valid_until is None
