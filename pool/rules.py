"""The pool's rules as pure functions: envelope shape, governance gate, quorum, fact versions (no Django).

Everything that enters the pool is an envelope `{schemaVersion, type, traceId, timestamp, idempotencyKey,
clawId, instanceId, payload}`. `parse_envelope` turns untrusted JSON into typed values or raises a
`Refusal` naming the first field that is wrong; the services apply what parses, the database enforces
what it can a second time (unique keys, one vote, +1 versions, append-only audit).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

SCHEMA_VERSION = 1
TYPES = ("proposal", "vote", "decision", "fact", "presence", "capabilities")
GOVERNED_TYPES = frozenset({"proposal", "vote", "decision", "fact"})
DECISION_OUTCOMES = ("accepted", "rejected", "expired")
MIN_ACTIVE = 3  # below three active participants there is no meaningful majority: proposals wait
MAX_ID = 200
MAX_STATEMENT = 5000
MAX_REASON = 2000
MAX_TAGS = 20
MAX_CAPABILITIES = 100
MAX_DEPTH = 32  # how deep `source` and the rest of an envelope may nest
# Idempotency keys the coordinator gives its own decision and fact envelopes; no participant may send one.
COORDINATOR_KEY_PREFIX = "awp-coordinator:"


class Refusal(Exception):
    """An envelope the pool does not apply: HTTP status, machine-readable code, a sentence and the field."""

    def __init__(self, status: int, code: str, message: str, field: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field

    def body(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message, **({"field": self.field} if self.field else {})}


def invalid(message: str, field: str | None = None) -> Refusal:
    """A malformed envelope (400 invalid_envelope); the field is the message's first word unless named."""
    if field is None:
        first = message.split(" ", 1)[0]
        field = first if first.replace(".", "").replace("_", "").isalnum() else "body"
    return Refusal(400, "invalid_envelope", message, field)


@dataclass(frozen=True)
class ProposalBody:
    proposal_id: str
    statement: str
    tags: tuple[str, ...] = ()
    confidence: float | None = None
    source: dict[str, Any] | None = None
    amends_fact_id: str = ""


@dataclass(frozen=True)
class VoteBody:
    proposal_id: str
    vote: str
    reason: str = ""


@dataclass(frozen=True)
class DecisionBody:
    proposal_id: str
    outcome: str
    fact_id: str = ""
    version: int | None = None


@dataclass(frozen=True)
class FactBody:
    fact_id: str
    version: int
    statement: str
    proposal_id: str
    tags: tuple[str, ...] = ()
    confidence: float | None = None
    source: dict[str, Any] | None = None


@dataclass(frozen=True)
class CapabilitiesBody:
    capabilities: tuple[str, ...]


Body = ProposalBody | VoteBody | DecisionBody | FactBody | CapabilitiesBody | None


@dataclass(frozen=True)
class Envelope:
    type: str
    trace_id: str
    timestamp: datetime
    idempotency_key: str
    claw_id: str
    instance_id: str
    body: Body
    raw: dict[str, Any]

    @property
    def is_governed(self) -> bool:
        return self.type in GOVERNED_TYPES


def _identifier(data: dict[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        raise invalid(f"{where}{key} is required.")
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"{where}{key} must be a non-empty string.")
    if len(value) > MAX_ID or any(ord(ch) < 32 for ch in value):
        raise invalid(f"{where}{key} must be at most {MAX_ID} printable characters.")
    return value


def _text(data: dict[str, Any], key: str, limit: int, *, required: bool) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise invalid(f"payload.{key} must be a {'non-empty ' if required else ''}string.")
    if len(value) > limit:
        raise invalid(f"payload.{key} is longer than {limit} characters.")
    return value.strip()


def _tags(data: dict[str, Any]) -> tuple[str, ...]:
    value = data.get("tags")
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TAGS or not all(isinstance(t, str) and 0 < len(t.strip()) <= 100 for t in value):
        raise invalid(f"payload.tags must be a list of at most {MAX_TAGS} non-empty strings (≤100 characters).")
    return tuple(sorted({t.strip().lower() for t in value}))


def _confidence(data: dict[str, Any]) -> float | None:
    value = data.get("confidence")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not 0 <= value <= 1:
        raise invalid("payload.confidence must be a number between 0 and 1.")
    return float(value)


def _source(data: dict[str, Any]) -> dict[str, Any] | None:
    value = data.get("source")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid("payload.source must be an object.")
    return value


def _version(data: dict[str, Any], *, required: bool) -> int | None:
    value = data.get("version")
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid("payload.version must be an integer ≥ 1.")
    return value


def parse_timestamp(value: Any) -> datetime:
    """An ISO-8601 timestamp with a time zone (or epoch seconds), as an aware UTC datetime."""
    if isinstance(value, bool):
        raise invalid("timestamp must be an ISO-8601 string with a time zone, or epoch seconds.")
    if isinstance(value, int | float):
        if not math.isfinite(value) or not 0 <= value < 1e11:
            raise invalid("timestamp in epoch seconds is out of range.")
        return datetime.fromtimestamp(value, tz=UTC)
    if not isinstance(value, str) or len(value) > 64:
        raise invalid("timestamp must be an ISO-8601 string with a time zone, or epoch seconds.")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise invalid(f"timestamp '{value}' is not ISO-8601.", "timestamp") from None
    if parsed.tzinfo is None:
        raise invalid("timestamp needs a time zone (e.g. 2026-11-23T10:00:00Z).")
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise invalid("timestamp is out of range.") from None


def check_storable(raw: dict[str, Any]) -> None:
    """Refuse what no store can hold, naming the field: NUL, lone surrogates, NaN/Infinity, absurd nesting."""
    stack: list[tuple[Any, str, int]] = [(raw, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        where = path or "body"
        if depth > MAX_DEPTH:
            raise invalid(f"{where} nests deeper than {MAX_DEPTH} levels.", where)
        if isinstance(value, str):
            _check_text(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise invalid(f"{where} must be a finite number (NaN and Infinity are not JSON).", where)
        elif isinstance(value, dict):
            for key, child in value.items():
                if not isinstance(key, str):
                    raise invalid(f"{where} has a key that is not a string.", where)
                child_path = f"{path}.{key}" if path else key
                _check_text(key, _printable(child_path))
                stack.append((child, _printable(child_path), depth + 1))
        elif isinstance(value, list):
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(value))
        elif value is not None and not isinstance(value, bool | int | float):
            raise invalid(f"{where} is not a JSON value.", where)


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise invalid(f"{where} contains the NUL character (\\u0000).", where)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise invalid(f"{where} contains a lone surrogate (not valid Unicode).", where) from None


def _printable(path: str) -> str:
    return path.replace("\x00", "\\u0000").encode("utf-8", "replace").decode("utf-8")[:200]


def is_reserved_key(key: str) -> bool:
    """Whether an idempotency key is in the coordinator's own namespace (refused from participants)."""
    return key.startswith(COORDINATOR_KEY_PREFIX)


def coordinator_key(kind: str, *parts: object) -> str:
    """The idempotency key of a coordinator envelope: `awp-coordinator:decision:<proposal_id>`, …"""
    return _bounded_id(f"{COORDINATOR_KEY_PREFIX}{kind}:", ":".join(map(str, parts)))


def _bounded_id(prefix: str, rest: str) -> str:
    """prefix + rest, or prefix + a digest of rest when that would pass MAX_ID (never a truncation: no clashes)."""
    if len(prefix) + len(rest) <= MAX_ID:
        return prefix + rest
    return f"{prefix}sha256:{hashlib.sha256(rest.encode('utf-8', 'surrogatepass')).hexdigest()}"


def parse_body(kind: str, payload: dict[str, Any]) -> Body:
    """The typed payload of an envelope of type `kind`."""
    if kind == "proposal":
        return ProposalBody(
            proposal_id=_identifier(payload, "proposal_id", "payload."),
            statement=_text(payload, "statement", MAX_STATEMENT, required=True),
            tags=_tags(payload),
            confidence=_confidence(payload),
            source=_source(payload),
            amends_fact_id=_identifier(payload, "amends_fact_id", "payload.") if payload.get("amends_fact_id") is not None else "",
        )
    if kind == "vote":
        vote = payload.get("vote")
        if vote not in ("yes", "no"):
            raise invalid('payload.vote must be "yes" or "no".')
        return VoteBody(
            proposal_id=_identifier(payload, "proposal_id", "payload."), vote=vote, reason=_text(payload, "reason", MAX_REASON, required=False)
        )
    if kind == "decision":
        outcome = payload.get("outcome")
        if outcome not in DECISION_OUTCOMES:
            raise invalid(f"payload.outcome must be one of {', '.join(DECISION_OUTCOMES)}.")
        fact_id = _identifier(payload, "fact_id", "payload.") if payload.get("fact_id") is not None else ""
        return DecisionBody(proposal_id=_identifier(payload, "proposal_id", "payload."), outcome=outcome, fact_id=fact_id, version=_version(payload, required=False))
    if kind == "fact":
        return FactBody(
            fact_id=_identifier(payload, "fact_id", "payload."),
            version=_version(payload, required=True) or 1,
            statement=_text(payload, "statement", MAX_STATEMENT, required=True),
            proposal_id=_identifier(payload, "proposal_id", "payload."),
            tags=_tags(payload),
            confidence=_confidence(payload),
            source=_source(payload),
        )
    if kind == "capabilities":
        value = payload.get("capabilities")
        if not isinstance(value, list) or len(value) > MAX_CAPABILITIES or not all(isinstance(c, str) and 0 < len(c.strip()) <= 300 for c in value):
            raise invalid(f"payload.capabilities must be a list of at most {MAX_CAPABILITIES} non-empty strings.")
        return CapabilitiesBody(capabilities=tuple(dict.fromkeys(c.strip() for c in value)))
    return None  # presence carries nothing


def parse_envelope(raw: Any) -> Envelope:
    """Check every required field of an untrusted envelope; raise a Refusal naming the first bad one."""
    if not isinstance(raw, dict):
        raise invalid("An envelope must be a JSON object.", "body")
    check_storable(raw)
    version = raw.get("schemaVersion")
    if version is None:
        raise invalid("schemaVersion is required.")
    if isinstance(version, bool) or version not in (SCHEMA_VERSION, str(SCHEMA_VERSION)):
        raise invalid(f"schemaVersion {version!r} is not supported (this pool speaks {SCHEMA_VERSION}).")
    kind = raw.get("type")
    if kind is None:
        raise invalid("type is required.")
    if kind not in TYPES:
        raise invalid(f"type must be one of {', '.join(TYPES)}.")
    trace_id = _identifier(raw, "traceId", "")
    if raw.get("timestamp") is None:
        raise invalid("timestamp is required.")
    timestamp = parse_timestamp(raw["timestamp"])
    key = _identifier(raw, "idempotencyKey", "")
    claw_id = _identifier(raw, "clawId", "")
    instance_id = _identifier(raw, "instanceId", "")
    payload = raw.get("payload")
    if payload is None:
        raise invalid("payload is required ({} for presence).")
    if not isinstance(payload, dict):
        raise invalid("payload must be an object.")
    return Envelope(kind, trace_id, timestamp, key, claw_id, instance_id, parse_body(kind, payload), raw)


def gate(envelope: Envelope, *, governance_enabled: bool) -> None:
    """Refuse governed types while governance is off."""
    if envelope.is_governed and not governance_enabled:
        raise Refusal(403, "governance_disabled", f"Governance is off on this pool: '{envelope.type}' envelopes are not applied.")


def is_self_loop(envelope: Envelope, *, local_claw_id: str, from_bus: bool) -> bool:
    """Whether a bus envelope claims this deployment's own clawId (it is ignored, never re-applied)."""
    return from_bus and envelope.claw_id == local_claw_id


def majority(active: int) -> int:
    """Votes of distinct participants needed among `active` ones (3 → 2, 4 → 3, 5 → 3)."""
    return active // 2 + 1


def decide(*, active: int, yes: int, no: int) -> str | None:
    """'accepted' / 'rejected' once a side reaches a majority of ≥3 active participants, else None (waits)."""
    if active < MIN_ACTIVE:
        return None
    needed = majority(active)
    if yes >= needed:
        return "accepted"
    if no >= needed:
        return "rejected"
    return None


def votes_still_needed(*, active: int, yes: int) -> int:
    """How many more yes votes would accept (counting the participants missing to reach three)."""
    return max(0, majority(max(active, MIN_ACTIVE)) - yes)


def check_next_version(*, current: int, version: int) -> None:
    """Facts start at v1 and advance by exactly +1: an old version is stale, a gap is a conflict."""
    if version <= current:
        raise Refusal(409, "stale", f"Version {version} is stale: the fact is at v{current} (the next is v{current + 1}).")
    if version != current + 1:
        raise Refusal(409, "conflict", f"Version {version} skips ahead: the fact is at v{current}, only v{current + 1} can follow.")


def is_active(last_seen: datetime | None, *, now: datetime, ttl_seconds: float) -> bool:
    """A participant is active while its last presence is younger than the TTL."""
    return last_seen is not None and now - last_seen < timedelta(seconds=ttl_seconds)


def is_expired(created_at: datetime, *, now: datetime, ttl_seconds: float) -> bool:
    """A proposal not decided within the TTL expires."""
    return now - created_at >= timedelta(seconds=ttl_seconds)


def new_fact_id(proposal_id: str) -> str:
    """The id of the fact a (non-amending) proposal creates: derived, so every deployment names it alike."""
    return _bounded_id("fact:", proposal_id)


def matches_subscription(fact_tags: tuple[str, ...] | list[str], *, all_facts: bool, tags: tuple[str, ...] | list[str]) -> bool:
    """Whether an experiment's subscription takes a fact: everything, or any shared tag."""
    return all_facts or bool({t.lower() for t in fact_tags} & {t.lower() for t in tags})
