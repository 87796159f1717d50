"""A database error answers by what it means, in whatever layer it happens: down → JSON 503
`database_unavailable` (also when it escapes after the view, e.g. in the redaction net, the cause of the
restart test's HTML 500), data Postgres refuses → 400 `input_not_storable`, anything else → JSON 500."""

from __future__ import annotations

import psycopg
import pytest
from asgiref.sync import async_to_sync
from django.db import DataError, OperationalError
from django.test import AsyncClient, Client

from awp_site import dberrors
from tests.factories import make_experiment, make_run, make_token

pytestmark = pytest.mark.django_db(transaction=True)


def django_error(kind: type[Exception], cause: BaseException) -> Exception:
    """A Django database error as the backend raises it: wrapping the driver's error."""
    try:
        raise kind(str(cause)) from cause
    except kind as exc:
        return exc


def with_sqlstate(sqlstate: str) -> psycopg.Error:
    error_class = psycopg.errors.lookup(sqlstate)
    return error_class("simulated")


@pytest.mark.parametrize(
    "exc, down",
    [
        (django_error(OperationalError, psycopg.OperationalError("connection refused")), True),  # no SQLSTATE: the connection failed
        (django_error(OperationalError, with_sqlstate("57P01")), True),  # admin shutdown (pg_ctl stop)
        (django_error(OperationalError, with_sqlstate("57P03")), True),  # the server is starting up
        (django_error(OperationalError, with_sqlstate("08006")), True),  # connection failure
        (django_error(OperationalError, with_sqlstate("54000")), False),  # program limit exceeded: the input is too big
        (django_error(OperationalError, with_sqlstate("54001")), False),  # statement too complex
        (django_error(OperationalError, with_sqlstate("57014")), False),  # query cancelled
        (django_error(DataError, with_sqlstate("22P05")), False),  # untranslatable character (NUL)
    ],
)
def test_only_a_database_that_is_down_is_a_retryable_503(exc, down):
    assert dberrors.is_database_down(exc) is down
    answer = dberrors.answer_for(exc)
    assert (answer is not None and answer[0] == 503) is down
    if not down and str(getattr(exc.__cause__, "sqlstate", "")).startswith(("22", "54")):
        assert answer == (400, {"code": "input_not_storable", "message": answer[1]["message"]})


@pytest.fixture
def scoped_read():
    experiment = make_experiment(slug="dberr")
    make_run(experiment, run_id="r1")
    return "/api/v1/runs/r1/events", {"HTTP_AUTHORIZATION": f"Bearer {make_token(experiment, ['memory:read'])}"}


def fail_after_the_view(monkeypatch, exc: Exception) -> None:
    """The redaction net's known-secrets lookup runs after the API view, outside ninja's error handlers."""

    def broken(request):  # type: ignore[no-untyped-def]
        raise exc

    monkeypatch.setattr("state.services_redaction.net_known_secrets", broken)


CASES = [
    (django_error(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")), 503, "database_unavailable"),
    (django_error(OperationalError, with_sqlstate("54000")), 400, "input_not_storable"),
    (RuntimeError("a bug"), 500, "server_error"),
]


@pytest.mark.parametrize("exc, status, code", CASES)
def test_an_error_after_the_api_view_answers_json_through_wsgi(scoped_read, monkeypatch, exc, status, code):
    fail_after_the_view(monkeypatch, exc)
    url, headers = scoped_read
    response = Client(raise_request_exception=False).get(url, **headers)
    assert response.status_code == status and response["Content-Type"] == "application/json", response.content[:200]
    assert response.json()["code"] == code
    assert (response.get("Retry-After") == "2") is (status == 503)


@pytest.mark.parametrize("exc, status, code", CASES)
def test_an_error_after_the_api_view_answers_json_through_asgi(scoped_read, monkeypatch, exc, status, code):
    fail_after_the_view(monkeypatch, exc)
    url, headers = scoped_read
    response = async_to_sync(AsyncClient(raise_request_exception=False).get)(url, headers={"Authorization": headers["HTTP_AUTHORIZATION"]})
    assert response.status_code == status and response["Content-Type"] == "application/json", response.content[:200]
    assert response.json()["code"] == code


def test_a_page_whose_database_is_down_says_so_with_a_503(client, monkeypatch):
    exc = django_error(OperationalError, psycopg.OperationalError("connection refused"))

    def broken(request):  # type: ignore[no-untyped-def]
        raise exc

    monkeypatch.setattr("django.contrib.auth.get_user", broken)
    response = Client(raise_request_exception=False).get("/experiments/", HTTP_COOKIE="sessionid=whatever")
    assert response.status_code == 503 and b"database is unavailable" in response.content
