from __future__ import annotations

from django.urls import path

from otel import views

app_name = "otel"

urlpatterns = [
    # OTEL_EXPORTER_OTLP_ENDPOINT=http://host:8000/otel: exporters append /v1/traces themselves.
    path("otel/v1/traces", views.export_traces, name="traces"),
]
