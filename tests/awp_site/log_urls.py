"""The product's URLs plus one view that fails the way real bugs do (for the log-masking tests only).

It reads an experiment (marking it in scope, as every experiment view does), then hands a value of its JSON
payload to the database, which refuses it and quotes it back (psycopg prints the statement's parameters), and
the error's own message quotes the payload too.
"""

from __future__ import annotations

import json

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from awp_site.urls import urlpatterns as product_urls
from experiments.models import Experiment
from state.services_redaction import mark_in_scope


@csrf_exempt
def failing_view(request: HttpRequest, slug: str) -> HttpResponse:
    mark_in_scope(request, Experiment.objects.get(slug=slug))
    payload = json.loads(request.body or b"{}")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT %s::integer", [payload["api_key"]])
    except Exception as exc:
        raise RuntimeError(f"could not use the caller's key {payload['api_key']!r}") from exc
    return HttpResponse("unreachable")


urlpatterns = [path("api/boom/<slug:slug>/", failing_view), *product_urls]
