"""Sharing views (R16, pure): the state as one agent may read it under the protocol's sharing rules.

Top-level keys named after an agent are that agent's output (shared_dict: `state[agent_id]`); other keys
(task, context, bindings, …) are common state. For an agent X:
- its own output is visible whole (including its never_share and unshareable fields);
- another agent A's output is visible under `full` whole; under `selective` only the fields of rules
  `from: A, to: X` plus A's `share_output` fields; under `isolated` only what X's `share_input` names
  (`A` for everything, `A.field` for one field);
- `never_share` fields are removed at any depth from everything X did not produce;
- fields of A's output contract marked `x-awp-shareable: false` are never shown to anyone but A;
- common keys are visible under every strategy, minus never_share fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STRATEGIES = ("full", "selective", "isolated")


@dataclass(frozen=True)
class SharingPolicy:
    """The protocol's `state.sharing` with what the orchestration graph and contracts add."""

    strategy: str = "full"
    rules: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = ()  # (from, to, fields)
    never_share: frozenset[str] = frozenset()
    share_output: dict[str, frozenset[str]] = field(default_factory=dict)
    share_input: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unshareable: dict[str, frozenset[str]] = field(default_factory=dict)

    def agents(self) -> set[str]:
        """Agents the policy names (rules, share_output, share_input, contracts)."""
        names = {source for source, _, _ in self.rules}
        for _, targets, _ in self.rules:
            names |= targets
        names |= set(self.share_output) | set(self.share_input) | set(self.unshareable)
        return {name for name in names if name != "*"}

    def visible_fields(self, producer: str, reader: str) -> frozenset[str] | None:
        """Fields of `producer`'s output that `reader` may see; None means all of them."""
        if self.strategy == "full":
            return None
        if self.strategy == "selective":
            fields: set[str] = set(self.share_output.get(producer, ()))
            for source, targets, rule_fields in self.rules:
                if source == producer and (reader in targets or "*" in targets):
                    if not rule_fields:
                        return None
                    fields |= rule_fields
            return frozenset(fields)
        fields = set()
        for entry in self.share_input.get(reader, ()):
            name, _, sub = entry.partition(".")
            if name == producer:
                if not sub:
                    return None
                fields.add(sub)
        return frozenset(fields)


def _drop_keys(value: Any, names: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, names) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_drop_keys(item, names) for item in value]
    return value


def view_for(state: dict[str, Any], reader: str, policy: SharingPolicy, agents: set[str] | frozenset[str]) -> dict[str, Any]:
    """The part of `state` that agent `reader` may read; `agents` are the ids whose top-level keys are outputs."""
    out: dict[str, Any] = {}
    for key, value in state.items():
        if key == reader:
            out[key] = value
            continue
        if key not in agents:
            if key not in policy.never_share:
                out[key] = _drop_keys(value, policy.never_share)
            continue
        allowed = policy.visible_fields(key, reader)
        hidden = policy.never_share | policy.unshareable.get(key, frozenset())
        if allowed is None:
            if isinstance(value, dict):
                out[key] = _drop_keys(value, hidden)
            else:
                out[key] = value
        elif isinstance(value, dict):
            kept = {k: _drop_keys(v, hidden) for k, v in value.items() if k in allowed and k not in hidden}
            if kept:
                out[key] = kept
    return out


def policy_from_protocol(protocol: dict[str, Any]) -> SharingPolicy:
    """Build the policy from a parsed protocol (rules already normalised to {from, to, fields})."""
    sharing = (protocol.get("state") or {}).get("sharing") or {}
    if not isinstance(sharing, dict):
        sharing = {}
    strategy = str(sharing.get("strategy", "full"))
    rules = tuple(
        (str(rule.get("from")), frozenset(str(t) for t in rule.get("to") or []), frozenset(str(f) for f in rule.get("fields") or []))
        for rule in sharing.get("rules") or []
        if isinstance(rule, dict) and rule.get("from")
    )
    share_output = {k: frozenset(v) for k, v in (sharing.get("share_output") or {}).items()}
    share_input = {k: tuple(v) for k, v in (sharing.get("share_input") or {}).items()}
    for node in _graph_nodes(protocol):
        agent = str(node.get("agent") or node.get("id") or "")
        if agent and node.get("share_output"):
            share_output[agent] = share_output.get(agent, frozenset()) | frozenset(node["share_output"])
        if agent and node.get("share_input"):
            share_input[agent] = share_input.get(agent, ()) + tuple(node["share_input"])
    return SharingPolicy(
        strategy=strategy if strategy in STRATEGIES else "full",
        rules=rules,
        never_share=frozenset(str(f) for f in sharing.get("never_share") or []),
        share_output=share_output,
        share_input=share_input,
        unshareable=_unshareable(protocol),
    )


def _graph_nodes(protocol: dict[str, Any]) -> list[dict[str, Any]]:
    graph = (protocol.get("orchestration") or {}).get("graph") or {}
    nodes = graph.get("nodes") if isinstance(graph, dict) else graph
    if isinstance(nodes, dict):
        nodes = [{"id": key, **(value or {})} for key, value in nodes.items()]
    return [node for node in nodes or [] if isinstance(node, dict)]


def _unshareable(protocol: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Fields whose output-contract schema says `x-awp-shareable: false`, per agent."""
    agents = protocol.get("agents") or {}
    if isinstance(agents, list):
        agents = {str(a.get("id")): a for a in agents if isinstance(a, dict) and a.get("id")}
    out: dict[str, frozenset[str]] = {}
    for agent_id, spec in agents.items() if isinstance(agents, dict) else []:
        if not isinstance(spec, dict):
            continue
        contract = spec.get("output_contract") or spec.get("contract") or spec.get("output") or {}
        properties = contract.get("properties", contract) if isinstance(contract, dict) else {}
        hidden = {name for name, schema in properties.items() if isinstance(schema, dict) and schema.get("x-awp-shareable") is False}
        if hidden:
            out[str(agent_id)] = frozenset(hidden)
    return out
