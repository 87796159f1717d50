"""A small fixed-window rate limiter on Django's cache (per process by default, shared with Redis)."""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache

from awp_site.apierrors import ApiError


class RateLimited(Exception):
    def __init__(self, retry_after: int) -> None:
        super().__init__(f"Too many attempts; try again in {retry_after} s.")
        self.retry_after = retry_after


def hit(key: str, *, limit: int, per_seconds: int) -> int | None:
    """Count one attempt under key; return seconds to wait when over the limit, else None (limit 0: no limit)."""
    if limit <= 0:
        return None
    window = int(time.time() // per_seconds)
    cache_key = f"rl:{key}:{window}"
    if cache.add(cache_key, 1, timeout=per_seconds + 1):
        count = 1
    else:
        try:
            count = cache.incr(cache_key)
        except ValueError:
            cache.set(cache_key, 1, timeout=per_seconds + 1)
            count = 1
    if count > limit:
        return per_seconds - int(time.time() % per_seconds)
    return None


def check_rate(key: str, *, limit: int, per_seconds: int, setting: str = "") -> None:
    """Raise a 429 ApiError (answered with Retry-After) when key is over its limit; `setting` names the knob."""
    wait = hit(key, limit=limit, per_seconds=per_seconds)
    if wait is not None:
        raise refusal(wait, limit=limit, per_seconds=per_seconds, setting=setting)


def refusal(wait: int, *, limit: int, per_seconds: int, setting: str = "") -> ApiError:
    """The 429 check_rate raises, for a caller that counted the attempt with `hit` itself."""
    knob = f" (at most {limit} per {per_seconds} s: {setting})" if setting else ""
    return ApiError(429, "rate_limited", f"Too many requests{knob}; try again in {wait} s.", retry_after=wait)


def per_minute(setting: str) -> int:
    """A rate limit from settings (AWP_RATE_LIMIT_*), read per call so tests and operators can change it."""
    return int(getattr(settings, setting))
