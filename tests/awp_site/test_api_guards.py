"""Bad input refused early with a code: oversize bodies, absurd nesting; security headers on pages."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def test_oversize_api_body_is_refused_with_413_before_parsing(client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = client.post("/api/v1/ingest", data=json.dumps({"x": "y" * 5000}), content_type="application/json")
    assert response.status_code == 413
    assert response.json()["code"] == "body_too_large"


def test_pages_carry_a_script_csp_and_no_sniff(client):
    response = client.get("/login/")
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"
