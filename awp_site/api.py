"""The NinjaAPI root: mounts each app's router under /api/v1/ and renders errors with a code and a message."""

from __future__ import annotations

import orjson
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from awp_site.apierrors import ApiError


class GuardedJsonParser(Parser):
    """orjson first (5× faster on a 5,000-event batch); what it refuses goes through ninja's json parser, so
    edge cases (lone surrogates, NaN, deep nesting) keep their answers; absurd nesting is a 400, not a 500."""

    def parse_body(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        try:
            return orjson.loads(request.body)
        except orjson.JSONDecodeError:
            pass
        try:
            return super().parse_body(request)
        except RecursionError:
            raise ApiError(400, "json_too_deep", "The JSON body nests too deeply to be accepted.") from None


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


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def on_database_unavailable(request: HttpRequest, exc: Exception) -> HttpResponse:
    # Postgres restarting or unreachable: a retryable 503 with a code, not an HTML 500 (clients retry on it).
    body = {"code": "database_unavailable", "message": "The database is unavailable right now; retry shortly.", "retry_after": 2}
    response = api.create_response(request, body, status=503)
    response["Retry-After"] = "2"
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
