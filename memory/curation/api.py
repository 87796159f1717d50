"""The curation API router (proposals, reviews), mounted under /api/v1/."""

from __future__ import annotations

from ninja import Router

from awp_site.auth import api_auth

router = Router(tags=["curation"], auth=api_auth)
