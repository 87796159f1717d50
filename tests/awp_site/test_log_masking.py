"""Logs are a way out (issue 23): tracebacks, database error context and access lines hold no secret.

A request to a view that fails the way real bugs do (tests/awp_site/log_urls.py): the payload carries a secret
under `api_key`, the database refuses it and quotes it back, the error's message quotes it again, and the URL's
query carries one more. Neither the in-process log (caplog) nor a daphne subprocess's log file holds any of them.
"""

from __future__ import annotations

import json
import logging

import pytest
import requests
from django.test import Client

from awp_site.logging import mask_log_parts
from experiments.ingest import EventIn, append_events
from tests.factories import make_experiment, make_run
from tests.proofkit import wait_until

KEYED = "Zx81-plain-credential-q7"  # no known token format: only its key (or the experiment) says it is secret
KNOWN = "Wq52-learnt-earlier-m3"  # a known secret of the experiment (learnt from an event), in the query
QUERY = "Pt44-query-value-k9"  # keyed in the URL's query string


def experiment_with_known_secret():  # type: ignore[no-untyped-def]
    experiment = make_experiment()
    append_events(make_run(experiment), [EventIn(kind="log", dedupe_key="l", payload={"msg": "login", "password": KNOWN})])
    return experiment


def failing_request(post, slug: str):  # type: ignore[no-untyped-def]
    body = json.dumps({"api_key": KEYED, "note": f"also {KNOWN}"})
    return post(f"/api/boom/{slug}/?api_key={QUERY}&q={KNOWN}", body)


@pytest.mark.django_db(transaction=True)
def test_a_failing_request_leaves_no_secret_in_the_captured_log(settings, caplog) -> None:
    settings.ROOT_URLCONF = "tests.awp_site.log_urls"
    experiment = experiment_with_known_secret()
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.WARNING):
        response = failing_request(lambda url, body: client.post(url, body, content_type="application/json"), experiment.slug)
    assert response.status_code == 500
    text = caplog.text + "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    # The error was logged with its traceback and the database's context...
    assert "Internal Server Error" in text and "invalid input syntax for type integer" in text and "RuntimeError" in text
    # ...and holds none of the secrets.
    for secret in (KEYED, KNOWN, QUERY):
        assert secret not in text, secret


@pytest.mark.django_db(transaction=True)
def test_a_daphne_process_logs_no_secret_of_a_failing_request(live_server_factory) -> None:
    experiment = experiment_with_known_secret()
    server = live_server_factory(DJANGO_SETTINGS_MODULE="tests.awp_site.log_settings", AWP_EMBEDDER="none")
    before = server.log.read_text() if server.log.exists() else ""
    response = failing_request(lambda url, body: requests.post(server.url + url, data=body, headers={"Content-Type": "application/json"}, timeout=30), experiment.slug)
    assert response.status_code == 500
    # Daphne writes the access line when the answer is complete: wait for it, then stop (closing the log).
    wait_until(lambda: '"POST /api/boom/' in server.log.read_text()[len(before) :], timeout=30, what="the access line")
    server.stop()
    log = server.log.read_text()[len(before) :]
    assert "invalid input syntax for type integer" in log and "RuntimeError" in log  # the traceback is there
    assert '"POST /api/boom/' in log  # and the access line
    for secret in (KEYED, KNOWN, QUERY):
        assert secret not in log, secret


def test_a_value_keyed_in_the_message_is_masked_where_the_traceback_repeats_it() -> None:
    message, trace = mask_log_parts(["login failed for {'password': 'Hj31-repeated-v8'}", 'DETAIL:  Key (name)=(Hj31-repeated-v8) already exists.'])
    assert "Hj31-repeated-v8" not in message + trace and "DETAIL" in trace
