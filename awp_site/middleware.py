"""Site-wide middleware: login for every page, security headers on every response."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

# The API and the OTLP receiver authenticate themselves (session or bearer token); admin has its own login; the rest needs a user.
PUBLIC_PREFIXES = ("/login/", "/healthz", "/static/", "/api/", "/otel/", "/admin/", "/favicon.ico")

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "connect-src 'self' ws: wss:",
        "frame-ancestors 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "object-src 'none'",
    ]
)
PERMISSIONS_POLICY = "camera=(), microphone=(), geolocation=()"


class LoginRequiredEverywhere:
    """Redirect anonymous requests for any page to the login form."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.user.is_authenticated and not request.path.startswith(PUBLIC_PREFIXES):
            if getattr(request, "htmx", False):
                # htmx would swap the login page into a fragment; ask it to navigate instead.
                response = HttpResponse(status=401)
                response["HX-Redirect"] = f"{settings.LOGIN_URL and '/login/'}?next={request.path}"
                return response
            return redirect_to_login(request.get_full_path())
        return self.get_response(request)


class SecurityHeaders:
    """A CSP that allows only scripts the app serves itself, plus a few modern isolation headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response


class UrlGuard:
    """Refuse a path, query string or page form field holding U+0000 (no lookup can match it; Postgres text cannot
    hold it): 400 `nul_character` naming the part, as JSON on /api/, as text on pages. Nothing behind it runs.

    Form fields too, because most page actions read request.POST themselves (a token's name, a review's reason, a
    declared secret) and each was a 500 with a NUL in it. Bodies the API and the OTLP receiver read as bytes are
    judged by their own readers (awp_site.jsonbody, otel.decode) and are not parsed here."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        where = _nul_in_url(request)
        if where is None:
            return self.get_response(request)
        message = f"{where} contains the NUL character (%00), which no identifier or text here can hold."
        if request.path.startswith("/api/"):
            from django.http import JsonResponse

            return JsonResponse({"code": "nul_character", "message": message, "field": where}, status=400)
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def _nul_in_url(request: HttpRequest) -> str | None:
    if "\x00" in request.path:
        return "path"
    parts = [("query", request.GET)]
    if request.method == "POST" and not request.path.startswith(_RAW_BODY_PATHS):
        parts.append(("form", request.POST))
    for part, data in parts:
        for key, values in data.lists():
            if "\x00" in key or any("\x00" in value for value in values):
                return f"{part}.{key.replace(chr(0), '%00')[:100]}"
    return None


_RAW_BODY_PATHS = ("/api/", "/otel/")


class ApiBodyGuard:
    """Refuse oversize API bodies before anything reads them (413 with a code)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/") and request.method in {"POST", "PUT", "PATCH"}:
            from django.http import JsonResponse

            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                length = 0
            if limit and length > limit:
                return JsonResponse(
                    {"code": "body_too_large", "message": f"The request body is {length} bytes; the limit is {limit}."},
                    status=413,
                )
            refusal = _refuse_body(request, limit)
            if refusal is not None:
                return refusal
            if length > TRIM_AFTER_BYTES:
                response = self.get_response(request)
                release_freed_memory()
                return response
        return self.get_response(request)


# A request body this large (a 5,000-event agent batch is ~4.5 MB) leaves tens of MB of freed parse and row
# objects in glibc's heap; a worker would otherwise hold its largest batch's peak for good (bench/footprint.py).
TRIM_AFTER_BYTES = 1_000_000


def release_freed_memory() -> None:
    """Give the heap's free pages back to the system (glibc's malloc_trim; a no-op elsewhere)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _refuse_body(request: HttpRequest, limit: int) -> HttpResponse | None:
    """A chunked body (no Content-Length) over the limit. (What the body holds — NUL, NaN, depth — is judged by
    the one JSON reader, awp_site.jsonbody, so each API answers it in its own format.)"""
    from django.core.exceptions import RequestDataTooBig
    from django.http import JsonResponse

    try:
        request.body  # noqa: B018 - reading it is the check
    except RequestDataTooBig:
        return JsonResponse({"code": "body_too_large", "message": f"The request body is over the limit of {limit} bytes."}, status=413)
    return None


class RedactionNet:
    """The last line of R14: every answer about an experiment is value-masked with its known secrets.

    Views redact what they render (redact_for / redact_text_for); this net catches what a view forgot, in the
    forms a value takes in HTML, JSON and URLs, in whole bodies, streamed bodies and the headers that carry data.
    It also puts the request in scope of the log masks while the view runs. An owner's audited reveal is let
    through as it is.
    """

    MASKED_TYPES = ("text/html", "application/json", "text/plain", "text/csv", "text/markdown")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from awp_site.logging import request_scope, reset_scope
        from state.services_redaction import known_secrets_checked_once

        # Log records made while the view runs (an error's traceback, a database error's parameters) are
        # masked with what this request reads and carries (awp_site.logging).
        token = request_scope(request)
        try:
            if request.method in ("GET", "HEAD"):
                with known_secrets_checked_once():  # a read: the view checks each experiment's secrets once, the net again
                    response = self.get_response(request)
            else:
                response = self.get_response(request)
        finally:
            reset_scope(token)
        if not getattr(request, "awp_redaction_scope", None):
            return response
        from awp_site.logging import note_url_secrets
        from state.services_redaction import net_known_secrets

        # One matcher for the answer's body, its headers and its access-log line (empty for an audited reveal).
        known = net_known_secrets(request)
        if not known:
            return response
        note_url_secrets(request, known)  # for the access-log line written after the answer
        for name in MASKED_HEADERS:
            if response.has_header(name):
                response[name] = known.mask(response[name])
        if response.streaming:
            # Every streamed answer (exports, any StreamingHttpResponse, whatever its type) passes the same value
            # masks chunk by chunk, with a carry-over for a secret split across two chunks (state.streams).
            _mask_stream(response, known)
            return response
        if not response.get("Content-Type", "").startswith(self.MASKED_TYPES):
            return response
        charset = response.charset or "utf-8"
        body = response.content.decode(charset, errors="surrogateescape")
        masked = known.mask(body)
        if masked != body:
            response.content = masked.encode(charset, errors="surrogateescape")
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response


# Headers a view derives from the data (an export's file name from the run id, a redirect to a run's page).
MASKED_HEADERS = ("Content-Disposition", "Location", "HX-Redirect", "HX-Location", "HX-Push-Url", "HX-Trigger")


def _mask_stream(response: HttpResponse, known: object) -> None:
    from state.streams import amask_chunks, mask_chunks

    charset = response.charset or "utf-8"
    source = response.streaming_content  # type: ignore[attr-defined]
    if response.is_async:  # type: ignore[attr-defined]
        response.streaming_content = amask_chunks(source, known, charset)  # type: ignore[attr-defined, arg-type]
    else:
        response.streaming_content = mask_chunks(source, known, charset)  # type: ignore[attr-defined, arg-type]
    if response.has_header("Content-Length"):
        del response["Content-Length"]  # masking changes the length
