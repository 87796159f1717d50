"""Site-wide middleware: login for every page, security headers on every response."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from experiments.jsonb import holds_nul

# The API authenticates itself (session or bearer token); admin has its own login; the rest needs a user.
PUBLIC_PREFIXES = ("/login/", "/healthz", "/static/", "/api/", "/admin/", "/favicon.ico")

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
        if not request.path.startswith("/api/v1/docs"):
            response.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response


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
    """A chunked body (no Content-Length) over the limit, or JSON holding U+0000 (Postgres cannot store it)."""
    from django.core.exceptions import RequestDataTooBig
    from django.http import JsonResponse

    try:
        body = request.body
    except RequestDataTooBig:
        return JsonResponse({"code": "body_too_large", "message": f"The request body is over the limit of {limit} bytes."}, status=413)
    if b"\\u0000" in body and "json" in request.META.get("CONTENT_TYPE", ""):
        import json

        try:
            has_nul = holds_nul(json.loads(body))
        except (ValueError, RecursionError):
            return None  # the API's parser answers malformed or too-deep JSON with its own code
        if has_nul:
            return JsonResponse(
                {"code": "json_nul_character", "message": "JSON strings may not contain the NUL character (\\u0000)."}, status=400
            )
    return None


class RedactionNet:
    """The last line of R14: every answer about an experiment is value-masked with its known secrets.

    Views redact what they render (redact_for / redact_text_for); this net catches what a view forgot, in the
    forms a value takes in HTML, JSON and URLs. An owner's audited reveal is let through as it is.
    """

    MASKED_TYPES = ("text/html", "application/json", "text/plain", "text/csv", "text/markdown")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from state.services_redaction import known_secrets_checked_once

        if request.method in ("GET", "HEAD"):
            with known_secrets_checked_once():  # a read: the view checks each experiment's secrets once, the net again
                response = self.get_response(request)
        else:
            response = self.get_response(request)
        if not getattr(request, "awp_redaction_scope", None) or response.streaming:
            return response
        if not response.get("Content-Type", "").startswith(self.MASKED_TYPES):
            return response
        from state.services_redaction import mask_response_text

        charset = response.charset or "utf-8"
        body = response.content.decode(charset, errors="surrogateescape")
        masked = mask_response_text(request, body)
        if masked != body:
            response.content = masked.encode(charset, errors="surrogateescape")
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
