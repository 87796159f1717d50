"""POST /otel/v1/traces: OTLP/HTTP trace exports (protobuf or JSON, gzip) from any OpenTelemetry agent framework.

Thin: authenticate the ingest token, decode (otel.decode), ingest (otel.services), answer an
ExportTraceServiceResponse in the request's encoding. Exporters retry only 429, 502, 503 and 504, so those
are the answers for "try again later" (with Retry-After) and every refusal of the body is a 4xx they drop.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from awp_site.apierrors import ApiError
from awp_site.auth import BearerToken, Caller
from otel.decode import (
    JSON,
    PROTOBUF,
    BadExport,
    decode_request,
    inflate,
    media_type,
    response_body,
    spans_of,
)
from otel.services import ingest_spans

_inflight = threading.BoundedSemaphore(settings.AWP_OTEL_MAX_INFLIGHT) if settings.AWP_OTEL_MAX_INFLIGHT > 0 else threading.Semaphore(0)
RETRY_AFTER_S = 2


def _error(status: int, code: str, message: str, *, retry_after: int | None = None) -> HttpResponse:
    response = JsonResponse({"code": code, "message": message}, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _caller(request: HttpRequest) -> Caller:
    """The ingest token of the Authorization header (the same check, rate limit and scope as the push API)."""
    header = request.headers.get("Authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ApiError(401, "unauthenticated", "Send an ingest token: Authorization: Bearer <token> (OTEL_EXPORTER_OTLP_HEADERS).")
    caller = BearerToken().authenticate(request, secret.strip())
    if caller is None or caller.token is None:
        raise ApiError(401, "invalid_token", "This token is unknown, revoked or expired.")
    if not caller.token.has_scope("ingest"):
        raise ApiError(403, "missing_scope", "This token lacks the 'ingest' scope.")
    return caller


@csrf_exempt
@require_POST
def export_traces(request: HttpRequest) -> HttpResponse:
    kind = media_type(request.headers.get("Content-Type"))
    if kind not in (PROTOBUF, JSON):
        return _error(415, "unsupported_media_type", f"Content-Type must be {PROTOBUF} or {JSON}, not {kind or 'missing'!r}.")
    try:
        caller = _caller(request)
    except ApiError as refused:
        return _error(refused.status, refused.code, refused.message, retry_after=refused.extra.get("retry_after"))
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if int(request.headers.get("Content-Length") or 0) > limit:
        return _error(413, "body_too_large", f"The body is over the limit of {limit} bytes; export smaller batches.")
    if not _inflight.acquire(blocking=False):
        return _error(503, "overloaded", "Too many exports at once; retry later.", retry_after=RETRY_AFTER_S)
    try:
        decoded = spans_of(decode_request(inflate(request.body, request.headers.get("Content-Encoding"), limit=limit), kind))
        assert caller.token is not None
        ingest_spans(experiment=caller.token.experiment, spans=decoded.spans)
    except BadExport as bad:
        return _error(bad.status, bad.code, bad.message)
    except OperationalError:
        # The database is saturated (pool timeout, lock timeout, failover): the exporter retries after a pause.
        return _error(503, "database_unavailable", "The database is busy; retry later.", retry_after=RETRY_AFTER_S)
    finally:
        _inflight.release()
    message = "; ".join(decoded.messages) if decoded.rejected else ""
    return HttpResponse(response_body(kind, rejected=decoded.rejected, message=message), content_type=kind)
