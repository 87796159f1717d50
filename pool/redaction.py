"""The redaction façade for what belongs to no single experiment (the Pool page, the pool API).

Pool facts already left their experiment redacted (services.propose_curated_fact); this masks the global
sensitive fields again on the way out, through the same two façade functions every other way out uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from state.services_redaction import redact_for, redact_text_for


@dataclass(frozen=True)
class PoolScope:
    """Stands where an experiment would: no protocol of its own, so the global sensitive list applies."""

    pk: None = None
    slug: str = "pool"
    protocol: dict[str, Any] = field(default_factory=dict)


POOL_SCOPE = PoolScope()


def redact_pool(value: Any) -> Any:
    return redact_for(POOL_SCOPE, value)


def redact_pool_text(text: str) -> str:
    return redact_text_for(POOL_SCOPE, text)
