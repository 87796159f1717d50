"""Security tests share one rule: rate-limit counters from other tests never leak into these."""

from __future__ import annotations

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> None:
    cache.clear()
