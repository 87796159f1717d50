"""The memory API router, mounted under /api/v1/ by awp_site.api."""

from __future__ import annotations

from ninja import Router

from awp_site.auth import api_auth

router = Router(tags=["memory"], auth=api_auth)
