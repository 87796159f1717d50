"""API authentication: a logged-in session (with CSRF) or a bearer token scoped to one experiment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from ninja.security import APIKeyCookie, HttpBearer

from awp_site.apierrors import ApiError
from awp_site.ratelimit import check_rate, hit, per_minute, refusal
from experiments.models import ApiToken, Experiment, Membership, role_at_least
from state.services_redaction import mark_in_scope

# Which membership role a session user needs for what a token scope allows.
SCOPE_ROLE = {
    "ingest": Membership.Role.OWNER,
    "memory:read": Membership.Role.VIEWER,
    "memory:write": Membership.Role.CURATOR,
    "review": Membership.Role.CURATOR,
}


@dataclass(frozen=True)
class Caller:
    """Who is calling: a user (session, or a token issued to a user) and/or a token."""

    user: Any
    token: ApiToken | None

    @property
    def label(self) -> str:
        if self.token is not None:
            return f"token:{self.token.name}"
        return f"user:{self.user.get_username()}"


@dataclass(frozen=True)
class CountedRates:
    """What the one-statement push (experiments.push) counted before it handed the request to the general path:
    the address (within its limit, or it answered 429 itself) and perhaps one token's attempt, with its result."""

    token_id: int | None = None
    token_wait: int | None = None


class BearerToken(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> Caller | None:
        client = request.META.get("REMOTE_ADDR", "?")
        counted: CountedRates | None = getattr(request, "awp_counted_rates", None)
        # Per address before the lookup (what a guesser pays), per token after it: clients sharing an address
        # (a NAT, one runner with many threads) are each held to their own token's limit. Each attempt counts once.
        if counted is None:
            check_address_rate(client)
        found = ApiToken.find_active(token)
        if found is None:
            check_rate(f"token-auth-fail:{client}", limit=per_minute("AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE"), per_seconds=60,
                       setting="AWP_RATE_LIMIT_TOKEN_FAILURES_PER_MINUTE")  # fmt: skip
            return None
        if counted is not None and counted.token_id == found.pk:
            if counted.token_wait is not None:
                raise token_rate_refusal(counted.token_wait)
        else:
            check_rate(f"token:{found.pk}", limit=per_minute(TOKEN_RATE), per_seconds=60, setting=TOKEN_RATE)
        now = timezone.now()
        if found.last_used_at is None or now - found.last_used_at > timedelta(seconds=30):
            ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
        return Caller(user=found.user, token=found)


class SessionUser(APIKeyCookie):
    """Django's session cookie, with CSRF enforced on unsafe methods (ninja's APIKeyCookie does that)."""

    param_name = "sessionid"

    def _get_key(self, request: HttpRequest) -> str | None:
        # Without a session cookie there is no session to forge a request with: no CSRF check, and a caller whose
        # bearer token was refused (revoked, unknown) hears 401 `unauthorized`, not 403 "CSRF check Failed".
        if self.param_name not in request.COOKIES:
            return None
        return super()._get_key(request)

    def authenticate(self, request: HttpRequest, key: str | None) -> Caller | None:
        if request.user.is_authenticated:
            return Caller(user=request.user, token=None)
        return None


api_auth = [BearerToken(), SessionUser()]

ADDRESS_RATE, TOKEN_RATE = "AWP_RATE_LIMIT_ADDRESS_PER_MINUTE", "AWP_RATE_LIMIT_TOKEN_PER_MINUTE"


def check_address_rate(client: str) -> None:
    """Count a bearer-token attempt from this address (before the look-up); 429 over the limit."""
    check_rate(f"token-auth:{client}", limit=per_minute(ADDRESS_RATE), per_seconds=60, setting=ADDRESS_RATE)


def hit_token_rate(token_id: int) -> int | None:
    """Count one use of a token; the seconds to wait when it is over its limit (then raise token_rate_refusal)."""
    return hit(f"token:{token_id}", limit=per_minute(TOKEN_RATE), per_seconds=60)


def token_rate_refusal(wait: int) -> ApiError:
    return refusal(wait, limit=per_minute(TOKEN_RATE), per_seconds=60, setting=TOKEN_RATE)


def experiment_for(request: HttpRequest, slug: str, *, scope: str) -> Experiment:
    """The experiment `slug` if the caller may use `scope` on it; raise a specific ApiError otherwise."""
    caller: Caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None:
        if caller.token.experiment.slug != slug:
            raise ApiError(403, "token_experiment_mismatch", "This token belongs to another experiment.")
        if not caller.token.has_scope(scope):
            raise ApiError(403, "missing_scope", f"This token lacks the '{scope}' scope.")
        mark_in_scope(request, caller.token.experiment)
        return caller.token.experiment
    experiment = Experiment.objects.visible_to(caller.user).filter(slug=slug).first()
    if experiment is None:
        raise ApiError(404, "experiment_not_found", f"No experiment '{slug}' that you can see.")
    if not role_at_least(experiment.role_of(caller.user), SCOPE_ROLE[scope]):
        raise ApiError(403, "forbidden", f"Your role on '{slug}' does not allow '{scope}'.")
    mark_in_scope(request, experiment)
    return experiment


def authorize_experiment(request: HttpRequest, experiment: Experiment, *, scope: str) -> Experiment:
    """Same check as experiment_for, for an experiment already loaded (e.g. through a run id)."""
    caller: Caller = request.auth  # type: ignore[attr-defined]
    if caller.token is not None and caller.token.experiment_id != experiment.pk:
        # A token for another experiment learns nothing about this one's existence.
        raise ApiError(404, "not_found", "Not found for this token's experiment.")
    return experiment_for(request, experiment.slug, scope=scope)
