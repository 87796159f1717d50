"""Site-level views: health check, status page and a rate-limited login."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from awp_site import health
from awp_site.ratelimit import hit
from experiments.models import Membership


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness and readiness: the database and pgvector (503 when either fails), the channel layer, and how the
    embedding worker and the folder watchers are doing (counts only: no folder names without a login)."""
    body = health.report()
    return JsonResponse(body, status=200 if body["ok"] else 503)


@login_required
@require_GET
def status(request: HttpRequest) -> HttpResponse:
    """The status page: /healthz in words, with each watcher's folder, for staff and experiment owners."""
    owned = set(Membership.objects.filter(user=request.user, role=Membership.Role.OWNER)
                .values_list("experiment__slug", flat=True))  # fmt: skip
    if not (request.user.is_staff or owned):
        raise PermissionDenied("The status page is for experiment owners.")
    body = health.report(folders=True, slugs=None if request.user.is_staff else owned)
    return render(request, "status.html", {"health": body})


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
