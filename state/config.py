"""An experiment protocol's `state:` section as the typed settings the state layer uses (pure).

```yaml
state:
  model: shared_dict            # | event_sourced | cqrs
  limits: {max_state_size_mb: 10, max_field_size_mb: 1, max_fields: 1000, on_violation: reject}  # | clip
  conflict_resolution: {strategy: weighted, expert: reviewer}   # weighted | highest-weight | majority-vote | union | expert-override
  sharing: {strategy: selective, rules: [{from: a, to: [b], fields: [x]}], never_share: [...], sensitive_fields: [...]}
```
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from state.deltas import Limits
from state.merge import ConflictPolicy
from state.replay import MODELS
from state.sharing import SharingPolicy, policy_from_protocol

# Keys the AWP runtime writes into DAG state files itself: not agent writes, not part of the state we show.
RUNTIME_KEYS = frozenset({"task", "_run_budget", "_phases", "_evaluation", "fan_out_item", "_fan_out_index", "_delegation_history"})


@dataclass(frozen=True)
class StateSettings:
    model: str
    limits: Limits
    conflict: ConflictPolicy
    sharing: SharingPolicy


def state_settings(protocol: dict[str, Any] | None) -> StateSettings:
    """Typed state settings from a parsed protocol (defaults for anything missing or malformed)."""
    protocol = protocol or {}
    section = protocol.get("state") if isinstance(protocol.get("state"), dict) else {}
    model = str(section.get("model", "shared_dict"))
    limits = section.get("limits") if isinstance(section.get("limits"), dict) else {}
    return StateSettings(
        model=model if model in MODELS else "shared_dict",
        limits=Limits.from_config(limits),
        conflict=ConflictPolicy.from_config(section.get("conflict_resolution")),
        sharing=policy_from_protocol(protocol),
    )
