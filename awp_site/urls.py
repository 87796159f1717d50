from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from awp_site import views
from awp_site.api import api
from experiments import inbox, push

api_urls = api.urls
# A batch that prefers it is accepted (experiments.inbox), a one-event push is answered by one statement
# (experiments.push); every other request goes on to ninja's view.
ingest = push.view(next(pattern.callback for pattern in api_urls[0] if str(pattern.pattern) == "ingest"), first=inbox.accept)

handler404 = "awp_site.views.page_not_found"
handler500 = "awp_site.views.server_error"

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("help/glossary/", views.glossary, name="glossary"),
    path("status/", views.status_page, name="status"),
    path("login/", views.RateLimitedLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v1/ingest", ingest),
    path("api/v1/", api_urls),
    path("", include("experiments.urls")),
    path("", include("state.urls")),
    path("", include("memory.urls")),
    path("", include("memory.curation.urls")),
    path("", include("pool.urls")),
    path("", include("otel.urls")),
]
