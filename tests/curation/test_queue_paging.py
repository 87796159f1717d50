"""The review queue pages by 100, newest first, so a long backlog stays a small page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.curation.models import Proposal
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def test_queue_shows_a_hundred_and_links_to_older(client, experiment, curator):
    now = timezone.now()
    Proposal.objects.bulk_create(
        Proposal(experiment=experiment, kind="fact", key=f"k{i}", text=f"fact number {i}", first_seen_at=now - timedelta(minutes=i))
        for i in range(105)
    )
    client.login(username=curator.username, password=PASSWORD)
    first = client.get(f"/experiments/{experiment.slug}/review/").content.decode()
    assert first.count('class="proposal-row"') == 100
    assert "fact number 0<" in first and "fact number 104<" not in first and "page=2" in first
    second = client.get(f"/experiments/{experiment.slug}/review/?kind=&status=pending&page=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="review-queue").content.decode()
    assert second.count('class="proposal-row"') == 5 and "fact number 104<" in second and "<html" not in second
