"""A read's view checks each experiment's known secrets once; the response net checks again after it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client

from state.secrets import learn_secrets
from state.services_redaction import (
    known_secrets_checked_once,
    mask_output_for,
    redact_text_for,
    redactor_for,
)
from tests.factories import make_experiment, make_member, make_run

pytestmark = pytest.mark.django_db


class SecretChecks:
    """Counts the freshness queries of the known secrets."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        self.count += "FROM state_knownsecret" in sql
        return execute(sql, params, many, context)


def test_inside_a_read_the_secrets_are_checked_once_and_the_net_still_sees_a_secret_learnt_meanwhile():
    experiment = make_experiment()
    learn_secrets(experiment_id=experiment.pk, values=["first-secret-value"])
    checks = SecretChecks()
    with connection.execute_wrapper(checks), known_secrets_checked_once():
        assert "first-secret-value" not in redact_text_for(experiment, "a first-secret-value here")
        learn_secrets(experiment_id=experiment.pk, values=["later-secret-value"])  # a concurrent ingest, say
        assert redactor_for(experiment).text("x first-secret-value") != "x first-secret-value"
        assert "later-secret-value" in redact_text_for(experiment, "later-secret-value")  # the view's snapshot
        assert checks.count == 1
        assert "later-secret-value" not in mask_output_for(experiment, "<p>later-secret-value</p>")  # the net: fresh
    assert checks.count == 2
    with connection.execute_wrapper(checks):  # outside a read: every call checks
        redact_text_for(experiment, "a")
        redact_text_for(experiment, "b")
    assert checks.count == 4


def test_a_run_page_checks_the_known_secrets_once_in_the_view_and_once_in_the_net():
    experiment = make_experiment()
    user = make_member(experiment, "viewer")
    run = make_run(experiment)
    client = Client()
    client.force_login(user)
    path = f"/experiments/{experiment.slug}/runs/{run.pk}/"
    assert client.get(path).status_code == 200
    checks = SecretChecks()
    with connection.execute_wrapper(checks):
        assert client.get(path).status_code == 200
    assert checks.count == 2
