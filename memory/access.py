"""Memory access control from the protocol's memory.access_control: pure, no Django."""

from __future__ import annotations

from typing import Any

TIERS = ("long_term", "working", "episodic", "semantic")
LEVELS = ("none", "read", "read_write")
# memory.write targets name files; access control names tiers.
TARGET_TIER = {"daily": "working", "long_term": "long_term"}


def tier_enabled(memory_config: dict[str, Any], tier: str) -> bool:
    """Whether a tier is on: memory.enabled and tiers.<tier>.enabled default to true here."""
    if memory_config.get("enabled") is False:
        return False
    settings = (memory_config.get("tiers") or {}).get(tier)
    if tier == "semantic":
        # The protocol's semantic block configures the runtime's own index; this service's tier is on
        # unless the embedder is disabled (checked by the caller).
        return True
    return not (isinstance(settings, dict) and settings.get("enabled") is False)


def access_level(memory_config: dict[str, Any], agent_id: str, tier: str) -> str:
    """none | read | read_write for `agent_id` on `tier`; read_write for enabled tiers when not configured."""
    if not tier_enabled(memory_config, tier):
        return "none"
    rules = memory_config.get("access_control") or {}
    agent_rules = rules.get(agent_id) if isinstance(rules, dict) else None
    if not isinstance(agent_rules, dict):
        return "read_write"
    level = agent_rules.get(tier, "read_write")
    # An unknown level is treated as the strictest one: a typo must not widen access.
    return level if level in LEVELS else "none"


def allows(level: str, action: str) -> bool:
    """Whether an access level permits `action` (read | write)."""
    if action == "write":
        return level == "read_write"
    return level in ("read", "read_write")
