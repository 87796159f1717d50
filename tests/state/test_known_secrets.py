"""Known secrets: learnt on the one ingest path, kept out of every view, used by the facade and the response net."""

from __future__ import annotations

import io
import json
from datetime import date

import pytest
from django.core.management import call_command
from django.http import HttpResponse, JsonResponse
from django.test import RequestFactory

from awp_site.middleware import RedactionNet
from experiments.ingest import EventIn, append_events
from memory.models import MemoryChunk, MemoryEntry
from memory.services import append_daily_entry
from state.models import KnownSecret
from state.services_redaction import mark_in_scope, mark_revealed, redact_for, redact_text_for
from tests.factories import make_experiment, make_run

pytestmark = pytest.mark.django_db

TOKEN = "tok-PROSE-7731"


def _push(run, payload, key="e1", kind="worker.complete"):  # type: ignore[no-untyped-def]
    return append_events(run, [EventIn(kind=kind, dedupe_key=key, agent_id="researcher", payload=payload)])


def test_a_value_under_a_sensitive_key_is_masked_anywhere_in_the_experiment_and_only_there():
    experiment, other = make_experiment(), make_experiment()
    _push(make_run(experiment), {"summary": "Logged in.", "access_token": TOKEN, "confidence": 0.9})
    assert KnownSecret.objects.filter(experiment=experiment, value=TOKEN).exists()
    later = {"summary": f"the auth header uses {TOKEN} for now"}
    assert TOKEN not in json.dumps(redact_for(experiment, later))
    assert TOKEN not in redact_text_for(experiment, f"prose quoting {TOKEN}.")
    # Another experiment never learnt it: its text is left alone (secrets are per experiment).
    assert redact_text_for(other, f"prose quoting {TOKEN}.") == f"prose quoting {TOKEN}."


def test_chunks_are_masked_before_they_are_stored_and_again_when_a_secret_is_learnt_later():
    experiment = make_experiment()
    entry, _ = append_daily_entry(experiment=experiment, content=f"note: we used {TOKEN} today", day=date(2026, 11, 1), dedupe_key="d1")
    assert TOKEN in MemoryEntry.objects.get(pk=entry.pk).content  # the raw store keeps what arrived
    assert TOKEN in MemoryChunk.objects.get(ref_key=f"entry:{entry.pk}").content  # not yet known as a secret
    _push(make_run(experiment), {"summary": "rotated", "credentials": {"api_key": TOKEN}})
    chunk = MemoryChunk.objects.get(ref_key=f"entry:{entry.pk}")
    assert TOKEN not in chunk.content and "[redacted]" in chunk.content and chunk.embedding is None
    fresh, _ = append_daily_entry(experiment=experiment, content=f"- **password**: hunter2-xyz\n- **summary**: also {TOKEN}", day=date(2026, 11, 2), dedupe_key="d2")
    stored = MemoryChunk.objects.get(ref_key=f"entry:{fresh.pk}").content
    assert "hunter2-xyz" not in stored and TOKEN not in stored
    assert KnownSecret.objects.filter(experiment=experiment, value="hunter2-xyz").exists()


def test_short_values_and_numbers_are_not_learnt():
    experiment = make_experiment()
    _push(make_run(experiment), {"token": "abc", "password": 123456, "secret": "true", "api_key": "0.75"})
    assert not KnownSecret.objects.filter(experiment=experiment).exists()


def test_the_response_net_masks_known_secrets_in_their_escaped_forms_unless_revealed():
    experiment = make_experiment()
    secret = 'pa"ss<w>rd&9'
    _push(make_run(experiment), {"password": secret})
    factory = RequestFactory()

    def answer(response: HttpResponse, *, reveal: bool = False) -> str:
        request = factory.get("/")
        mark_in_scope(request, experiment)
        if reveal:
            mark_revealed(request)
        return RedactionNet(lambda r: response)(request).content.decode()

    html = answer(HttpResponse('<td>pa&quot;ss&lt;w&gt;rd&amp;9</td><a href="?q=pa%22ss%3Cw%3Erd%269">x</a>'))
    assert "pa&quot;ss" not in html and "pa%22ss" not in html and html.count("[redacted]") == 2
    body = answer(JsonResponse({"note": f"forgot to redact {secret}"}))
    assert "pa\\\"ss" not in body and "[redacted]" in body
    assert "pa&quot;ss" in answer(HttpResponse("<td>pa&quot;ss&lt;w&gt;rd&amp;9</td>"), reveal=True)


def test_awp_learn_secrets_learns_what_was_stored_before_value_masking():
    experiment = make_experiment()
    MemoryEntry.objects.create(experiment=experiment, day=date(2026, 1, 1), content="- **db_password**: legacy-pw-42", dedupe_key="old")
    assert not KnownSecret.objects.filter(experiment=experiment).exists()
    out = io.StringIO()
    call_command("awp_learn_secrets", "--experiment", experiment.slug, stdout=out)
    assert KnownSecret.objects.filter(experiment=experiment, value="legacy-pw-42").exists()
    assert "legacy-pw-42" not in out.getvalue() and "1 new" in out.getvalue()
