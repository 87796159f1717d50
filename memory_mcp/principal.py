"""Who calls a tool: an experiment's API token (and the user it was issued to), the MCP client, the agent header.

The token is looked up for every tool call, in the same thread hop as the tool's own work (one hop per call, as
a Django view has), so a revoked token stops working at once, as it does on the HTTP API.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from awp_site.ratelimit import check_rate
from experiments.models import ApiToken, Experiment

# The header an MCP client names its agent in (an `agent_id` argument wins over it).
AGENT_HEADER = "x-awp-agent"


@dataclass(frozen=True)
class Principal:
    """An authenticated MCP caller: its token (hence experiment and scopes) and what its request said about it."""

    token: ApiToken
    agent_header: str = ""
    base_url: str = ""  # scheme://host the request came to (links in answers); empty on stdio

    @property
    def experiment(self) -> Experiment:
        return self.token.experiment

    def may(self, scope: str) -> bool:
        return self.token.has_scope(scope)


@dataclass(frozen=True)
class Credentials:
    """What a request presents: the bearer secret, the agent header, the URL it came to (and the token when the
    HTTP mount has just looked it up)."""

    secret: str
    agent_header: str = ""
    base_url: str = ""
    client_address: str = "stdio"
    token: ApiToken | None = None

    def resolve(self, *, agent_header: str = "") -> Principal | None:
        """The principal these credentials stand for now (a fresh look-up: revocation applies at once)."""
        token = authenticate(self.secret, client_address=self.client_address)
        if token is None:
            return None
        return Principal(token=token, agent_header=agent_header or self.agent_header, base_url=self.base_url)


def authenticate(secret: str, *, client_address: str = "stdio") -> ApiToken | None:
    """The active token with this secret (rate limited per client address as the API's bearer auth is)."""
    check_rate(f"token-auth:{client_address}", limit=600, per_seconds=60)
    found = ApiToken.find_active(secret) if secret else None
    if found is None:
        check_rate(f"token-auth-fail:{client_address}", limit=30, per_seconds=60)
        return None
    now = timezone.now()
    if found.last_used_at is None or now - found.last_used_at > timedelta(seconds=30):
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return found
