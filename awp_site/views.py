"""Site-level views: health check and a rate-limited login."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from awp_site.ratelimit import hit


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and readiness: the database answers, pgvector is there, the channel layer is configured."""
    body: dict[str, object] = {"ok": True}
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
    return JsonResponse(body, status=200 if body["ok"] else 503)


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
        waits = [hit(f"login-ip:{client}", limit=20, per_seconds=60), hit(f"login-user:{username}", limit=10, per_seconds=60)]
        wait = max((w for w in waits if w is not None), default=None)
        if wait is not None:
            response = self.render_to_response(
                self.get_context_data(form=self.get_form(), rate_limited=wait), status=429
            )
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
