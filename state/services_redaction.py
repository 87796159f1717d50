"""Which fields are sensitive for an experiment: its protocol's sensitive_fields plus the global list."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from state.redaction import redact, sensitive_set


def sensitive_fields_for(experiment: Any) -> frozenset[str]:
    """The experiment's protocol `state.sharing.sensitive_fields` plus settings.AWP_SENSITIVE_FIELDS."""
    sharing = (experiment.protocol.get("state") or {}).get("sharing") or {}
    names = list(sharing.get("sensitive_fields") or []) + list((experiment.protocol.get("security") or {}).get("sensitive_fields") or [])
    return sensitive_set([*names, *contract_sensitive_fields(experiment.protocol), *settings.AWP_SENSITIVE_FIELDS])


def contract_sensitive_fields(protocol: dict[str, Any]) -> list[str]:
    """Output-contract fields marked `x-awp-sensitive: true` in the protocol's agents."""
    agents = protocol.get("agents") or {}
    specs = agents.values() if isinstance(agents, dict) else agents if isinstance(agents, list) else []
    names = []
    for spec in specs:
        contract = (spec.get("output_contract") or spec.get("contract") or {}) if isinstance(spec, dict) else {}
        properties = contract.get("properties", contract) if isinstance(contract, dict) else {}
        names += [name for name, schema in properties.items() if isinstance(schema, dict) and schema.get("x-awp-sensitive") is True]
    return names


def redact_for(experiment: Any, value: Any) -> Any:
    """Redact `value` with the experiment's sensitive fields (what every way out must call)."""
    return redact(value, sensitive_fields_for(experiment))


def redact_text_for(experiment: Any, text: str) -> str:
    """Redact free text (logs, search content, snippets, prompts) for the experiment: the one text way out."""
    from state.redaction import redact_text

    return redact_text(text, sensitive_fields_for(experiment))
