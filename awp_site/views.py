"""Site-level views: health check, a rate-limited login, and the 404/500 handlers (JSON with a code on /api/)."""

from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views import defaults
from django.views.decorators.http import require_GET

from awp_site.dberrors import RETRY_AFTER_SECONDS, answer_for
from awp_site.ratelimit import hit, per_minute
from experiments.watch_health import watcher_id, watcher_reports


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and readiness: the database answers, pgvector is there, the channel layer is configured.

    Also what runs beside the web processes: the embedding worker (model loaded, socket answering, chunks
    waiting for vectors) and each folder watcher (last pass, lag). They make the answer `degraded`, never a
    503: the dashboard still serves pages and ingest without them.
    """
    body = health_report(paths=False)
    return JsonResponse(body, status=200 if body["ok"] else 503)


def health_report(*, paths: bool = True) -> dict[str, Any]:
    """The health of the deployment; without `paths` (the anonymous /healthz) watchers are named by an id, not
    by the folder they follow."""
    body: dict[str, Any] = {"ok": True}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        body["database"] = "ok"
        body["pgvector"] = row[0] if row else None
        if row is None:
            body.update(ok=False, failing="pgvector")
    except Exception as exc:  # any database failure is a 503 naming the part
        body.update(ok=False, database=f"error: {type(exc).__name__}", failing="database")
    body["channel_layer"] = settings.CHANNEL_LAYERS["default"]["BACKEND"].rsplit(".", 1)[-1]
    body["embedding"] = embedding_health(database_ok=body["database"] == "ok")
    body["watchers"] = watcher_reports()
    degraded = []
    if body["embedding"]["enabled"] and body["embedding"]["required"] and body["embedding"]["socket"] != "answering":
        degraded.append("embedding_worker")
    if not paths:
        for report in body["watchers"]:
            report["folder"] = watcher_id(report["folder"])
            report["error"] = "failed" if report.get("error") else ""
    degraded += [f"watcher:{w['folder']}" for w in body["watchers"] if not w["running"] or w.get("error")]
    body["degraded"] = degraded
    return body


def embedding_health(*, database_ok: bool) -> dict[str, Any]:
    from memory.embeddings import worker_status
    from memory.models import MemoryChunk

    status = worker_status()
    if database_ok and status["enabled"]:
        status["chunks_waiting"] = MemoryChunk.objects.filter(embedding__isnull=True).count()
    return status


@require_GET
def status_page(request: HttpRequest) -> HttpResponse:
    """The same report as /healthz for people: staff and experiment owners."""
    from experiments.models import Membership

    user = request.user
    if not (user.is_staff or user.memberships.filter(role=Membership.Role.OWNER).exists()):  # type: ignore[union-attr]
        raise PermissionDenied("The status page is for owners.")
    return render(request, "help/status.html", {"health": health_report()})


@require_GET
def glossary(request: HttpRequest) -> HttpResponse:
    """The words a newcomer meets (salience, R13, clawId, digest, websearch…), linked from the Help menu."""
    return render(request, "help/glossary.html")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: an API caller learns with a code that no endpoint has this address."""
    if request.path.startswith("/api/"):
        return JsonResponse({"code": "no_such_endpoint", "message": "No API endpoint has this address (see /api/v1/docs)."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: whatever layer failed (a view, a middleware after the view, an auth lookup), an API caller
    gets JSON with a code, and a database that is down is a 503 `database_unavailable`, never an HTML 500."""
    exc = sys.exc_info()[1]
    answer = answer_for(exc) if exc is not None else None
    if request.path.startswith("/api/"):
        status, body = answer or (500, {"code": "server_error", "message": "The server failed to answer this request; the error is logged."})
        response: HttpResponse = JsonResponse(body, status=status)
    elif answer is not None and answer[0] == 503:
        response = HttpResponse("<!doctype html><title>Database unavailable</title><h1>The database is unavailable right now</h1><p>Retry in a moment.</p>", status=503)
    else:
        return defaults.server_error(request)
    if response.status_code == 503:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class RateLimitedLoginView(auth_views.LoginView):
    """Django's login view, slowed after repeated attempts from one address or for one username."""

    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        client = request.META.get("REMOTE_ADDR", "?")
        username = (request.POST.get("username") or "").lower()[:150]
        waits = [
            hit(f"login-ip:{client}", limit=per_minute("AWP_RATE_LIMIT_LOGIN_ADDRESS_PER_MINUTE"), per_seconds=60),
            hit(f"login-user:{username}", limit=per_minute("AWP_RATE_LIMIT_LOGIN_USER_PER_MINUTE"), per_seconds=60),
        ]
        wait = max((w for w in waits if w is not None), default=None)
        if wait is not None:
            response = self.render_to_response(
                self.get_context_data(form=self.get_form(), rate_limited=wait), status=429
            )
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
