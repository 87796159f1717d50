"""State deltas, their invariants and the Layer-4 state limits (pure: values in, values out).

A delta is `{agent_id, round, weight, op: add|modify|remove, path, value, provenance}`. Rules:
- provenance is a non-empty sentence; rounds never decrease within a run;
- `add` needs the key to be absent (missing parent objects are created), `modify` and `remove` need it present;
- agents never write the reserved top-level keys `_meta _errors _trace _workflow` (R13);
- a write must not change a set value at a stable path (`state.stable_paths`, identity stable): refused with
  code `identity_changed`, or applied and reported in `Decision.flags` when the caller only flags (runs read
  from disk already happened);
- every write is checked against `max_state_size_mb`, `max_field_size_mb` (per top-level key) and `max_fields`
  (top-level keys); with `on_violation: clip` an oversize value is cut down (strings shortened, lists and
  objects truncated) until it fits, otherwise the delta is refused with code `state_limit`.
Sizes are bytes of compact UTF-8 JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from state.paths import (
    Path,
    PathError,
    format_path,
    get_path,
    has_path,
    insert_path,
    parse_path,
    remove_path,
    set_path,
)
from state.stable import IdentityChange, StablePaths

OPS = ("add", "modify", "remove")
RESERVED_KEYS = frozenset({"_meta", "_errors", "_trace", "_workflow"})
MB = 1024 * 1024
CLIP_MARK = "…"


class DeltaError(ValueError):
    """A delta that breaks an invariant: `code` is the rule id (R13, state_limit, invalid_path, …)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class IdentityChanged(DeltaError):
    """A write that would change identities (set values at stable paths).

    The message names the paths only: values may be sensitive, so the edge that shows them (API answer,
    Problems tab) formats `changes` through the redaction step.
    """

    def __init__(self, path: str, changes: list[IdentityChange]) -> None:
        names = ", ".join(change.path for change in changes)
        super().__init__("identity_changed", f"{path} would change the identity at {names} (state.stable_paths: identities never change once set).")
        self.path, self.changes = path, changes


@dataclass(frozen=True)
class Delta:
    """One change to a run's state; `path` is in normalized form."""

    agent_id: str
    round: int
    op: str
    path: str
    provenance: str
    value: Any = None
    weight: float = 1.0

    @property
    def segments(self) -> Path:
        return parse_path(self.path)


def delta_from_payload(payload: Any) -> Delta:
    """Validate a `state.delta` payload and build a Delta; raises DeltaError naming what is wrong."""
    if not isinstance(payload, dict):
        raise DeltaError("invalid_delta", "A delta must be a JSON object with agent_id, round, op, path and provenance.")
    agent_id = payload.get("agent_id", payload.get("agentId"))
    op = payload.get("op", payload.get("operation"))
    round_ = payload.get("round", 0)
    weight = payload.get("weight", 1.0)
    provenance = payload.get("provenance")
    if not isinstance(agent_id, str) or not agent_id.strip():
        raise DeltaError("invalid_delta", "The delta has no agent_id: every change must name the agent that made it.")
    if op not in OPS:
        raise DeltaError("invalid_delta", f"The delta's op must be one of add, modify, remove (got {op!r}).")
    if isinstance(round_, bool) or not isinstance(round_, int) or round_ < 0:
        raise DeltaError("invalid_delta", f"The delta's round must be a non-negative integer (got {round_!r}).")
    if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
        raise DeltaError("invalid_delta", f"The delta's weight must be a finite number (got {weight!r}).")
    if not isinstance(provenance, str) or not provenance.strip():
        raise DeltaError("invalid_delta", "The delta has no provenance: say why the change was made (complete provenance).")
    if op != "remove" and "value" not in payload:
        raise DeltaError("invalid_delta", f"An '{op}' delta needs a value.")
    try:
        path = format_path(parse_path(payload.get("path")))
    except PathError as exc:
        raise DeltaError("invalid_path", str(exc)) from None
    if path == "$":
        raise DeltaError("invalid_path", "A delta must name a key below the root '$'.")
    value = payload.get("value") if op != "remove" else None
    return Delta(agent_id=agent_id, round=round_, op=op, path=path, provenance=provenance, value=value, weight=float(weight))


def rules_checked(*, stable: bool) -> list[str]:
    """The rules every write is checked against (`identity_changed` only where the protocol names stable paths)."""
    rules = ["provenance", "round_order", "path_exists", "path_missing", "R13", "state_limit"]
    return [*rules, "identity_changed"] if stable else rules


def check_reserved(delta: Delta) -> None:
    """R13: agents must not write the reserved top-level keys."""
    top = delta.segments[0]
    if isinstance(top, str) and top in RESERVED_KEYS:
        raise DeltaError("R13", f"{delta.path} writes the reserved key '{top}' (R13: _meta, _errors, _trace and _workflow belong to the runtime).")


@dataclass(frozen=True)
class Limits:
    """The protocol's `state.limits`, in bytes; None means unlimited."""

    max_state_bytes: int | None = 10 * MB
    max_field_bytes: int | None = 1 * MB
    max_fields: int | None = 1000
    on_violation: str = "reject"

    @classmethod
    def from_config(cls, config: dict[str, Any] | None) -> Limits:
        """Read `state.limits` (spec defaults 10 MB state, 1 MB field, 1000 fields, reject)."""
        config = config or {}

        def mb(key: str, default: float) -> int | None:
            raw = config.get(key, default)
            return None if raw is None else int(float(raw) * MB)

        fields = config.get("max_fields", 1000)
        on_violation = str(config.get("on_violation", "reject")).lower()
        return cls(
            max_state_bytes=mb("max_state_size_mb", 10.0),
            max_field_bytes=mb("max_field_size_mb", 1.0),
            max_fields=None if fields is None else int(fields),
            on_violation="clip" if on_violation == "clip" else "reject",
        )


def json_size(value: Any) -> int:
    """Bytes of `value` as compact UTF-8 JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (faster than copy.deepcopy for plain dicts and lists)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


def clip_value(value: Any, budget: int) -> Any:
    """Cut `value` down to at most `budget` JSON bytes (strings shortened with '…', lists/objects truncated).

    Raises DeltaError when nothing of the value fits (a number, or a budget below an empty container).
    """
    if json_size(value) <= budget:
        return value
    if isinstance(value, str):
        fits = lambda n: json_size(value[:n] + CLIP_MARK) <= budget  # noqa: E731
        cut = _largest(len(value) - 1, fits)
        if cut is not None:
            return value[:cut] + CLIP_MARK
    elif isinstance(value, list):
        cut = _largest(len(value) - 1, lambda n: json_size(value[:n]) <= budget)
        if cut is not None:
            return value[:cut]
    elif isinstance(value, dict):
        items = list(value.items())
        cut = _largest(len(items) - 1, lambda n: json_size(dict(items[:n])) <= budget)
        if cut is not None:
            return dict(items[:cut])
    raise DeltaError("state_limit", f"The value cannot be clipped to {budget} bytes.")


def _largest(high: int, fits: Any) -> int | None:
    """Largest n in [0, high] with fits(n) (fits is monotone), or None."""
    if high < 0 or not fits(0):
        return None
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def apply_op(state: dict[str, Any], op: str, path: Path, value: Any, *, copy: bool = True) -> None:
    """Apply one already-accepted change in place (replay trusts the recorded outcome).

    `copy=False` is for values nobody else holds (freshly decoded rows): the state may then own them.
    """
    if op == "add":
        insert_path(state, path, copy_json(value) if copy else value)
    elif op == "modify":
        set_path(state, path, copy_json(value) if copy else value, create=False)
    elif op == "remove":
        remove_path(state, path)
    else:
        raise DeltaError("invalid_delta", f"Unknown op {op!r}.")


@dataclass
class Decision:
    """What happened to a delta: outcome applied|clipped|lost|refused, the value written, and why."""

    outcome: str
    value: Any = None
    code: str = ""
    message: str = ""
    flags: list[DeltaError] = field(default_factory=list)


@dataclass
class StateBook:
    """A state with the bookkeeping the limit checks need (size per top-level key, highest round seen)."""

    state: dict[str, Any] = field(default_factory=dict)
    round: int = 0
    sizes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.sizes:
            self.sizes = {key: json_size(value) for key, value in self.state.items()}

    @property
    def total_bytes(self) -> int:
        return _total(self.sizes)

    def evaluate(self, delta: Delta, limits: Limits, *, stable: StablePaths | None = None, flag_identity: bool = False) -> Decision:
        """Check every invariant and, when the delta is acceptable, apply it; raises DeltaError otherwise.

        `flag_identity`: an identity change is applied and reported in `Decision.flags` instead of refused.
        """
        check_reserved(delta)
        if delta.round < self.round:
            raise DeltaError("round_order", f"Round {delta.round} comes after round {self.round}: rounds never decrease within a run.")
        path = delta.segments
        exists = has_path(self.state, path)
        if delta.op == "add" and exists:
            raise DeltaError("path_exists", f"{delta.path} already exists; use op 'modify' to change it.")
        if delta.op in ("modify", "remove") and not exists:
            raise DeltaError("path_missing", f"{delta.path} does not exist, so it cannot be {delta.op}d.")
        top = path[0]
        if not isinstance(top, str):
            raise DeltaError("invalid_path", "The state is an object: a path must start with a key, not a list index.")
        if top not in self.state and limits.max_fields is not None and len(self.state) + 1 > limits.max_fields:
            raise DeltaError("state_limit", f"{delta.path} would add a top-level key beyond max_fields ({limits.max_fields}).")
        value, outcome = delta.value, "applied"
        new_field, new_size = self._trial(delta.op, path, value)
        excess = self._excess(top, new_size, limits)
        if excess > 0 and delta.op != "remove":
            if limits.on_violation != "clip":
                raise DeltaError("state_limit", self._limit_message(delta, top, new_size, limits))
            try:
                value = clip_value(value, json_size(value) - excess)
            except DeltaError:
                raise DeltaError("state_limit", self._limit_message(delta, top, new_size, limits) + " Clipping cannot make it fit.") from None
            outcome = "clipped"
            new_field, new_size = self._trial(delta.op, path, value)
            if self._excess(top, new_size, limits) > 0:
                raise DeltaError("state_limit", self._limit_message(delta, top, new_size, limits))
        flags: list[DeltaError] = []
        if stable:
            changes = stable.identity_changes(self.state, path, {} if new_size is None else {top: new_field})
            if changes:
                if not flag_identity:
                    raise IdentityChanged(delta.path, changes)
                flags.append(IdentityChanged(delta.path, changes))
        self.commit(top, new_field, new_size)
        self.round = max(self.round, delta.round)
        return Decision(outcome=outcome, value=value, flags=flags)

    def _trial(self, op: str, path: Path, value: Any) -> tuple[Any, int | None]:
        """The top-level field after the change (not yet committed) and its size (None when removed)."""
        top = path[0]
        scratch = {top: copy_json(self.state[top])} if top in self.state else {}
        try:
            apply_op(scratch, op, path, value)
        except PathError as exc:
            raise DeltaError(exc.code, str(exc)) from None
        if top not in scratch:
            return None, None
        return scratch[top], json_size(scratch[top])

    def _excess(self, top: str, new_size: int | None, limits: Limits) -> int:
        if new_size is None:
            return 0
        sizes = dict(self.sizes)
        sizes[top] = new_size
        excess = 0
        if limits.max_field_bytes is not None:
            excess = max(excess, new_size - limits.max_field_bytes)
        if limits.max_state_bytes is not None:
            excess = max(excess, _total(sizes) - limits.max_state_bytes)
        return excess

    def _limit_message(self, delta: Delta, top: str, new_size: int | None, limits: Limits) -> str:
        sizes = dict(self.sizes)
        sizes[top] = new_size or 0
        if limits.max_field_bytes is not None and (new_size or 0) > limits.max_field_bytes:
            return f"{delta.path} would make the field '{top}' {new_size} bytes, over max_field_size_mb ({limits.max_field_bytes} bytes)."
        return f"{delta.path} would make the state {_total(sizes)} bytes, over max_state_size_mb ({limits.max_state_bytes} bytes)."

    def commit(self, top: str, new_field: Any, new_size: int | None) -> None:
        """Store the new value of a top-level field (None size: the field was removed)."""
        if new_size is None:
            self.state.pop(top, None)
            self.sizes.pop(top, None)
        else:
            self.state[top] = new_field
            self.sizes[top] = new_size


def _total(sizes: dict[str, int]) -> int:
    if not sizes:
        return 2
    keys = sum(json_size(key) + 1 for key in sizes)
    return 2 + keys + sum(sizes.values()) + len(sizes) - 1


def value_at(state: dict[str, Any], path: str) -> Any:
    """The value at a textual path, or None when absent (for display)."""
    return get_path(state, parse_path(path), default=None)
