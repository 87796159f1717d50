from __future__ import annotations

from django.apps import AppConfig


class OtelConfig(AppConfig):
    """The OTLP adapter: OpenTelemetry GenAI traces in (POST /otel/v1/traces), through the one ingest service."""

    name = "otel"
    verbose_name = "OpenTelemetry"
    default_auto_field = "django.db.models.BigAutoField"
