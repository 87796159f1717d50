"""Parse and normalise a workflow.awp.yaml protocol (pure: text in, plain dict out)."""

from __future__ import annotations

from typing import Any

import yaml

from state.config import check_state_section


class ProtocolError(ValueError):
    """A protocol that cannot be used, with the line when YAML is at fault."""


def parse_protocol(text: str) -> dict[str, Any]:
    """Parse protocol YAML into a dict, normalising sharing rules to {from, to, fields}."""
    if not text.strip():
        return {}
    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "an unknown place"
        raise ProtocolError(f"YAML error at {where}: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise ProtocolError(f"YAML error: {exc}") from None
    if not isinstance(data, dict):
        raise ProtocolError("The protocol must be a YAML mapping (key: value pairs) at the top level.")
    return normalise_protocol(data)


def normalise_protocol(data: dict[str, Any]) -> dict[str, Any]:
    """Accept both the reference's `from`/`to` and the runtime's `from_agent`/`to_agents` in sharing rules;
    refuse stable paths and a convergence setting the state layer cannot use."""
    state = data.get("state")
    if isinstance(state, dict) and isinstance(state.get("sharing"), dict):
        sharing = state["sharing"]
        rules = []
        for rule in sharing.get("rules") or []:
            if not isinstance(rule, dict):
                raise ProtocolError("Each state.sharing.rules entry must be a mapping with from, to and fields.")
            to = rule.get("to", rule.get("to_agents", []))
            rules.append(
                {
                    "from": rule.get("from", rule.get("from_agent")),
                    "to": [to] if isinstance(to, str) else list(to or []),
                    "fields": list(rule.get("fields") or []),
                    **({"transform": rule["transform"]} if "transform" in rule else {}),
                }
            )
        sharing["rules"] = rules
    try:
        check_state_section(state)
    except ValueError as exc:  # PatternError is a ValueError too
        raise ProtocolError(str(exc)) from None
    return data
