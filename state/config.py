"""An experiment protocol's `state:` section as the typed settings the state layer uses (pure).

```yaml
state:
  model: shared_dict            # | event_sourced | cqrs
  limits: {max_state_size_mb: 10, max_field_size_mb: 1, max_fields: 1000, on_violation: reject}  # | clip
  conflict_resolution: {strategy: weighted, expert: reviewer}   # weighted | highest-weight | majority-vote | union | expert-override
  sharing: {strategy: selective, rules: [{from: a, to: [b], fields: [x]}], never_share: [...], sensitive_fields: [...]}
  stable_paths: ["$.bindings.*"]  # identities once set: `*` one key, `**` any depth, $['a.b'] quoted keys
  convergence: {epsilon: 0.01}   # a round whose changes are all numeric and smaller than epsilon is converged
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from state.deltas import Limits
from state.merge import ConflictPolicy
from state.replay import MODELS
from state.sharing import SharingPolicy, policy_from_protocol
from state.stable import PatternError, StablePaths, parse_pattern

# Keys the AWP runtime writes into DAG state files itself: not agent writes, not part of the state we show.
RUNTIME_KEYS = frozenset({"task", "_run_budget", "_phases", "_evaluation", "fan_out_item", "_fan_out_index", "_delegation_history"})


@dataclass(frozen=True)
class StateSettings:
    model: str
    limits: Limits
    conflict: ConflictPolicy
    sharing: SharingPolicy
    stable_paths: StablePaths = StablePaths()
    convergence_epsilon: float | None = None


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
        stable_paths=_stable_paths(section.get("stable_paths")),
        convergence_epsilon=_epsilon(section.get("convergence")),
    )


def check_state_section(section: Any) -> None:
    """Refuse a `state:` section whose stable paths or convergence cannot be used (PatternError / ValueError)."""
    if not isinstance(section, dict):
        return
    StablePaths.from_config(section.get("stable_paths"))
    convergence = section.get("convergence")
    if convergence is not None and (not isinstance(convergence, dict) or _epsilon(convergence) is None and "epsilon" in convergence):
        raise ValueError("state.convergence must be a mapping like {epsilon: 0.01} with a finite, non-negative epsilon.")


def _stable_paths(raw: Any) -> StablePaths:
    # The protocol form and the importer refuse bad patterns (check_state_section); a protocol that got past
    # them (admin JSON) keeps its usable patterns rather than losing the rule altogether.
    items = raw if isinstance(raw, list) else []
    patterns = []
    for item in items:
        try:
            patterns.append(parse_pattern(item))
        except PatternError:
            continue
    return StablePaths(tuple(patterns))


def _epsilon(raw: Any) -> float | None:
    value = raw.get("epsilon") if isinstance(raw, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)
