"""Site-level views: health check and a rate-limited login."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from awp_site.ratelimit import hit, per_minute
from experiments.watch_health import watcher_reports


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and readiness: the database answers, pgvector is there, the channel layer is configured.

    Also what runs beside the web processes: the embedding worker (model loaded, socket answering, chunks
    waiting for vectors) and each folder watcher (last pass, lag). They make the answer `degraded`, never a
    503: the dashboard still serves pages and ingest without them.
    """
    body = health_report()
    return JsonResponse(body, status=200 if body["ok"] else 503)


def health_report() -> dict[str, Any]:
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
