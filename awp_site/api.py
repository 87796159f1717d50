"""The NinjaAPI root: mounts each app's router under /api/v1/ and renders errors with a code and a message."""

from __future__ import annotations

from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from awp_site.apierrors import ApiError
from awp_site.dberrors import answer_for
from awp_site.jsonbody import request_json


class GuardedJsonParser(Parser):
    """Every body through the one guarded reader (awp_site.jsonbody): orjson, bounded depth, no NaN/NUL."""

    def parse_body(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        return request_json(request)


api = NinjaAPI(
    parser=GuardedJsonParser(),
    title="AWP Memory & State API",
    version="1",
    description="Ingest AWP events, read runs, state and digests, and use an experiment's memory.",
    docs_url="/docs",
    urls_namespace="api",
)


@api.exception_handler(ApiError)
def on_api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    response = api.create_response(request, exc.body(), status=exc.status)
    if "retry_after" in exc.extra:  # 429 and 503: the header clients and proxies read, not only the body
        response["Retry-After"] = str(int(exc.extra["retry_after"]))
    return response


@api.exception_handler(ValidationError)
def on_validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    body = {"code": "invalid_request", "message": "The request body or parameters are invalid.", "errors": exc.errors}
    return api.create_response(request, body, status=422)


@api.exception_handler(AuthenticationError)
def on_auth_error(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    body = {"code": "unauthorized", "message": "Log in or send a valid bearer token (Authorization: Bearer …)."}
    return api.create_response(request, body, status=401)


@api.exception_handler(HttpError)
def on_http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, ApiError):  # ninja wraps the parser's own refusals (json_too_deep) in a 400
        return on_api_error(request, exc.__cause__)
    body = {"code": f"http_{exc.status_code}", "message": str(exc)}
    return api.create_response(request, body, status=exc.status_code)


@api.exception_handler(DatabaseError)
def on_database_error(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Postgres down or restarting: a retryable 503 with a code; data Postgres refused: a 400 never worth a retry;
    # anything else is a bug, left to the site's JSON 500 (awp_site.views.server_error) with its traceback logged.
    answer = answer_for(exc)
    if answer is None:
        raise exc
    status, body = answer
    response = api.create_response(request, body, status=status)
    if status == 503:
        response["Retry-After"] = str(body["retry_after"])
    return response


def _mount_routers() -> None:
    from experiments.api import router as experiments_router
    from memory.api import router as memory_router
    from memory.curation.api import router as curation_router
    from pool.api import router as pool_router
    from state.api import router as state_router

    api.add_router("", experiments_router)
    api.add_router("", state_router)
    api.add_router("", memory_router)
    api.add_router("", curation_router)
    api.add_router("/pool", pool_router)


_mount_routers()
