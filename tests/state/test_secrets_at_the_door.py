"""Learnt at the door, masked by value everywhere: what the detector finds in any part of an event or memory
text becomes a known secret, and a known secret is masked in dict keys, kinds and agent ids too."""

from __future__ import annotations

import json
import random
from datetime import date

import pytest

from experiments.ingest import EventIn, append_events
from memory.models import MemoryChunk
from memory.services import append_daily_entry
from state.models import KnownSecret
from state.services_redaction import redact_for, redact_text_for, redactor_for
from tests.corpus.secrets.tune import generate as tune
from tests.factories import make_experiment, make_run

pytestmark = pytest.mark.django_db

TOKEN = "tok-DOOR-7731x"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _push(run, kind, payload, key, agent="researcher"):  # type: ignore[no-untyped-def]
    return append_events(run, [EventIn(kind=kind, dedupe_key=key, agent_id=agent, payload=payload)])


def _known(experiment) -> set[str]:  # type: ignore[no-untyped-def]
    return set(KnownSecret.objects.filter(experiment=experiment).values_list("value", flat=True))


@pytest.mark.parametrize(
    ("payload", "secret"),
    [
        ({"log": "$ mysql -uroot -pS3cr3tPassW9 shop"}, "S3cr3tPassW9"),
        ({"output": "deploy-tool push --db-password Xq7-Lm2pR9zK --verbose"}, "Xq7-Lm2pR9zK"),
        ({"html": '<input type="password" name="pw" value="Vv8!kQ2mZp1x">'}, "Vv8!kQ2mZp1x"),
        ({"notes": "| name | value |\n|---|---|\n| db_pass | Hh3kLm9QwErT |"}, "Hh3kLm9QwErT"),
        ({"trace": "GET / HTTP/1.1\nCookie: theme=dark; sid=Cc4Rr7Tt1Yy0"}, "Cc4Rr7Tt1Yy0"),
        ({"reply": "Here is the api_key:\n\nKk2Jj5Hh8Gg1Ff"}, "Kk2Jj5Hh8Gg1Ff"),
        ({GITHUB: 1}, GITHUB),  # a token used as a key
    ],
)
def test_every_text_of_an_event_is_scanned_at_ingest_and_what_is_found_is_learnt(payload, secret):  # type: ignore[no-untyped-def]
    experiment = make_experiment()
    _push(make_run(experiment), "tool.result", payload, "e1")
    assert secret in _known(experiment)
    assert secret not in json.dumps(redact_for(experiment, {"later": f"quoted again: {secret}"}))


def test_a_token_in_an_event_kind_or_agent_id_is_learnt():
    experiment = make_experiment()
    run = make_run(experiment)
    _push(run, f"metric.{GITHUB}", {"value": 1}, "e1")
    _push(run, "log", {"line": "ok"}, "e2", agent=f"bot-{GITHUB}")
    assert GITHUB in _known(experiment)


def test_a_known_secret_used_as_a_key_a_kind_or_an_agent_id_is_masked_like_a_value():
    experiment = make_experiment()
    run = make_run(experiment)
    _push(run, "worker.complete", {"summary": "logged in", "access_token": TOKEN}, "e1")
    event = {"kind": f"metric.{TOKEN}", "agent_id": TOKEN, "payload": {TOKEN: {"nested": {f"by-{TOKEN}": 2}}, "ok": TOKEN}}
    for shown in (redact_for(experiment, event), redactor_for(experiment).value(event)):
        text = json.dumps(shown)
        assert TOKEN not in text
        assert shown["payload"]["ok"] == "[redacted]" and "[redacted]" in shown["payload"]
    # Two keys masked alike stay two keys.
    shown = redact_for(experiment, {TOKEN: 1, f"{TOKEN}x": 2})
    assert sorted(shown.values()) == [1, 2] and TOKEN not in json.dumps(shown)
    assert TOKEN not in redact_text_for(experiment, f"metric.{TOKEN}")


def test_memory_text_is_scanned_by_the_detector_before_its_chunk_is_stored():
    experiment = make_experiment()
    entry, _ = append_daily_entry(experiment=experiment, content="ran: curl -u deploy:Pp9Oo8Ii7Uu6 https://x.example", day=date(2026, 11, 1), dedupe_key="d1")
    assert "Pp9Oo8Ii7Uu6" in _known(experiment)
    assert "Pp9Oo8Ii7Uu6" not in MemoryChunk.objects.get(ref_key=f"entry:{entry.pk}").content


def test_a_pool_envelope_is_scanned_and_its_credentials_are_masked_on_every_pool_way_out():
    from pool.redaction import redact_pool, redact_pool_text
    from pool.services import apply_envelope, create_claw, new_envelope

    create_claw(claw_id="claw-a", capabilities=[])
    statement = "Deploy with `deploy-tool push --db-password Zz8Yy7Xx6Ww5` tonight."
    applied = apply_envelope(new_envelope("proposal", {"proposal_id": "p-door", "statement": statement}, claw_id="claw-a"),
                             origin="api", caller_claw_id="claw-a")  # fmt: skip
    assert applied.status == 200, applied.body
    assert KnownSecret.objects.filter(experiment=None, value="Zz8Yy7Xx6Ww5").exists()
    # Quoted later without any credential word, in another envelope's text: masked by value.
    assert "Zz8Yy7Xx6Ww5" not in redact_pool_text("I voted yes; Zz8Yy7Xx6Ww5 works.")
    assert "Zz8Yy7Xx6Ww5" not in json.dumps(redact_pool({"Zz8Yy7Xx6Ww5": {"reason": "Zz8Yy7Xx6Ww5"}}))
    # A secret of the pool is no secret of an experiment, and the other way round.
    experiment = make_experiment()
    assert redact_text_for(experiment, "Zz8Yy7Xx6Ww5") == "Zz8Yy7Xx6Ww5"


@pytest.mark.parametrize(("shape", "template", "spelling"), tune.SHAPES, ids=[s for s, _, _ in tune.SHAPES])
def test_every_corpus_shape_through_the_facade_of_an_experiment(shape, template, spelling):  # type: ignore[no-untyped-def]
    experiment = make_experiment()
    value = tune.random_value(random.Random(shape))
    text = tune.render(template, spelling, "client_secret", value)
    _push(make_run(experiment), "log", {"msg": text}, "e1")
    assert value in _known(experiment)
    for shown in (redact_text_for(experiment, text), redact_text_for(experiment, f"again {value}"),
                  json.dumps(redact_for(experiment, {"text": text, value: 1}))):  # fmt: skip
        assert value not in shown, shown
    harmless = tune.render(template, spelling, "max_tokens", "eu-west-1")
    if shape not in tune.CREDENTIAL_CARRIERS:  # a cookie header's values are credentials whatever their names
        assert redact_text_for(experiment, harmless) == harmless
