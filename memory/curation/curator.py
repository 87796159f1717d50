"""The dashboard's curator: deterministic proposals from a whole run tree (pure Python, no Django).

The runtime's own curator only sees the root's final digest in the root's store, so it can neither count
facts across iterations nor resolve sub-manager digests. Here every digest of the tree is an input, found by
SHA across runs, and each distinct key fact counts once per digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

FACT_MIN_DIGESTS = 2
FACT_MAX_CHARS = 280
LOW_CONFIDENCE = 0.3


@dataclass(frozen=True)
class DigestIn:
    """One digest as the curator needs it."""

    sha: str
    run_id: str
    iteration: int
    goal: str = ""
    key_facts: tuple[str, ...] = ()
    confidence_trend: tuple[float, ...] = ()
    child_digest_hashes: tuple[str, ...] = ()


@dataclass(frozen=True)
class LedgerEvent:
    """One ledger event (only decision, spawn and completion events matter here)."""

    run_id: str
    seq: int
    kind: str
    iteration: int | None
    agent_id: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class ToolSighting:
    """A tool spec seen in a run (a worker's tools_created, a run's induced_tools)."""

    name: str
    spec: Mapping[str, Any]
    run_id: str
    iteration: int | None
    ref: str


@dataclass(frozen=True)
class EvidenceRef:
    """Where a proposal was confirmed: a digest, an event or a file; `ref` is unique per proposal."""

    ref: str
    run_id: str
    iteration: int | None = None
    digest_sha: str = ""
    note: str = ""


@dataclass
class Candidate:
    """A proposal the curator would make: kind, stable key, text, and its evidence."""

    kind: str
    key: str
    text: str
    evidence: list[EvidenceRef] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def clean_fact(raw: Any) -> str:
    """A key fact as the runtime writes it to a facts file: stripped, at most 280 characters."""
    text = str(raw if raw is not None else "").strip()
    if len(text) > FACT_MAX_CHARS:
        text = text[: FACT_MAX_CHARS - 3] + "..."
    return text


def fact_key(text: str) -> str:
    """The stable key of a fact: the first 16 hex digits of the SHA-256 of its cleaned text."""
    return hashlib.sha256(clean_fact(text).encode("utf-8")).hexdigest()[:16]


def spec_hash(spec: Mapping[str, Any]) -> str:
    """Content hash of a tool spec (sorted-key JSON, first 16 hex digits), as the runtime computes it."""
    blob = json.dumps(spec, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def antipattern_key(signature: str) -> str:
    """sha256(signature)[:16], the name of the runtime's antipattern file."""
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()[:16]


def missing_children(digests: Iterable[DigestIn]) -> set[str]:
    """Child SHAs the given digests reference but do not include (to be looked up across runs)."""
    items = list(digests)
    have = {digest.sha for digest in items}
    return {child for digest in items for child in digest.child_digest_hashes if child not in have}


def fact_candidates(digests: Iterable[DigestIn], *, min_digests: int = FACT_MIN_DIGESTS) -> list[Candidate]:
    """Facts found in at least `min_digests` distinct digests, each with every digest confirming it."""
    by_key: dict[str, Candidate] = {}
    seen_shas: set[str] = set()
    for digest in sorted(digests, key=lambda d: (d.run_id, d.iteration, d.sha)):
        if digest.sha in seen_shas:
            continue
        seen_shas.add(digest.sha)
        counted_here: set[str] = set()
        for raw in digest.key_facts:
            text = clean_fact(raw)
            key = fact_key(text)
            if not text or key in counted_here:
                continue
            counted_here.add(key)
            candidate = by_key.setdefault(key, Candidate(kind="fact", key=key, text=text))
            candidate.evidence.append(
                EvidenceRef(ref=f"digest:{digest.sha}", run_id=digest.run_id, iteration=digest.iteration, digest_sha=digest.sha)
            )
    confirmed = [c for c in by_key.values() if len(c.evidence) >= min_digests]
    return sorted(confirmed, key=lambda c: c.text)


def tool_candidates(sightings: Iterable[ToolSighting]) -> list[Candidate]:
    """One candidate per (tool name, content hash); a known name with a new hash is a new version."""
    by_key: dict[str, Candidate] = {}
    for sighting in sightings:
        digest = spec_hash(sighting.spec)
        key = f"{sighting.name}#{digest}"
        purpose = str(sighting.spec.get("description") or "").strip()
        candidate = by_key.setdefault(
            key,
            Candidate(
                kind="tool",
                key=key,
                text=f"{sighting.name}: {purpose or '(no description)'}",
                details={"name": sighting.name, "content_hash": digest, "purpose": purpose, "spec": dict(sighting.spec)},
            ),
        )
        if all(e.ref != sighting.ref for e in candidate.evidence):
            candidate.evidence.append(EvidenceRef(ref=sighting.ref, run_id=sighting.run_id, iteration=sighting.iteration))
    return sorted(by_key.values(), key=lambda c: c.key)


def tool_sightings(events: Iterable[LedgerEvent]) -> list[ToolSighting]:
    """Tool specs in worker results (`tools_created`) and run completions (`induced_tools`)."""
    found: list[ToolSighting] = []
    for event in events:
        if event.kind == "worker.complete":
            specs = event.payload.get("tools_created")
        elif event.kind == "run.complete":
            specs = event.payload.get("induced_tools")
        else:
            continue
        for index, spec in enumerate(specs if isinstance(specs, list) else []):
            if not isinstance(spec, dict):
                continue
            name = str(spec.get("name") or spec.get("fqn") or "").strip()
            if name:
                clean = {k: v for k, v in spec.items() if k not in ("created_at", "registered_at")}
                found.append(ToolSighting(name, clean, event.run_id, event.iteration, f"event:{event.run_id}:{event.seq}:{index}"))
    return found


def normalize_instructions(text: Any) -> str:
    """Lower-case, whitespace-collapsed, at most 500 characters (the runtime's signature normal form)."""
    return " ".join(text.lower().split())[:500] if isinstance(text, str) else ""


def envelope_signature(envelope: Mapping[str, Any]) -> str:
    """One envelope's signature: sha256(normalized instructions [+ \\x1f + canonical context])[:16]."""
    instructions = normalize_instructions(envelope.get("instructions", ""))
    context = envelope.get("context")
    if not isinstance(context, dict) or not context:
        context = envelope.get("input_context")
    canonical = ""
    if isinstance(context, dict) and context:
        canonical = json.dumps(context, sort_keys=True, default=str)
    elif isinstance(envelope.get("inherited_state_keys"), (list, tuple)) and envelope["inherited_state_keys"]:
        canonical = json.dumps({"_inherited_keys": sorted(str(k) for k in envelope["inherited_state_keys"])}, sort_keys=True)
    payload = instructions + "\x1f" + canonical if canonical else instructions
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def dispatch_signature(envelopes: Iterable[Mapping[str, Any]]) -> str:
    """A dispatch's signature: the sorted envelope signatures joined with '|'."""
    return "|".join(sorted(envelope_signature(envelope) for envelope in envelopes))


def _failure_reason(result: Mapping[str, Any]) -> str | None:
    if result.get("status") == "error" or "error" in result:
        return "error"
    confidence = result.get("confidence")
    if isinstance(confidence, (int, float)) and not isinstance(confidence, bool) and confidence < LOW_CONFIDENCE:
        return "low_confidence"
    return None


def failed_dispatches(events: Iterable[LedgerEvent]) -> list[dict[str, Any]]:
    """Redundant re-dispatches, worker errors and low-confidence workers, in ledger order per run."""
    by_run: dict[str, list[LedgerEvent]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)
    failures: list[dict[str, Any]] = []
    for run_id in sorted(by_run):
        ordered = sorted(by_run[run_id], key=lambda e: e.seq)
        spawns: dict[tuple[int | None, str], LedgerEvent] = {}
        planned: dict[tuple[int | None, str], Mapping[str, Any]] = {}
        for event in ordered:
            if event.kind == "worker.spawn":
                spawns[(event.iteration, event.agent_id or str(event.payload.get("worker_id", "")))] = event
            elif event.kind == "iteration.decision":
                for delegation in event.payload.get("delegations") or []:
                    if isinstance(delegation, dict):
                        planned[(event.iteration, str(delegation.get("worker_id", "")))] = delegation
        found = _redundant(run_id, ordered, spawns)
        for event in ordered:
            if event.kind != "worker.complete" or not isinstance(event.payload, Mapping):
                continue
            reason = _failure_reason(event.payload)
            if reason is None:
                continue
            slot = (event.iteration, event.agent_id)
            envelope = spawns[slot].payload if slot in spawns else planned.get(slot, {})
            found.append(_failure(run_id, event, reason, [envelope]))
        failures.extend(sorted(found, key=lambda failure: failure["seq"]))
    return failures


def _redundant(run_id: str, ordered: list[LedgerEvent], spawns: dict[tuple[int | None, str], LedgerEvent]) -> list[dict[str, Any]]:
    """Dispatches whose signature an earlier iteration of the same run already used."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for event in ordered:
        if event.kind != "iteration.decision" or event.payload.get("decision") != "delegate":
            continue
        envelopes = [s.payload for (iteration, _), s in sorted(spawns.items(), key=lambda kv: kv[1].seq) if iteration == event.iteration]
        if not envelopes:
            envelopes = [d for d in event.payload.get("delegations") or [] if isinstance(d, dict)]
        if not envelopes:
            continue
        signature = dispatch_signature(envelopes)
        if signature in seen:
            out.append(_failure(run_id, event, "redundant", envelopes))
        seen.add(signature)
    return out


def _failure(run_id: str, event: LedgerEvent, reason: str, envelopes: list[Mapping[str, Any]]) -> dict[str, Any]:
    signature = dispatch_signature(envelopes)
    instructions = str(envelopes[0].get("instructions", "")) if envelopes else ""
    return {
        "run_id": run_id,
        "seq": event.seq,
        "iteration": event.iteration,
        "worker_id": event.agent_id,
        "reason": reason,
        "signature": signature,
        "instructions": instructions[:500],
    }


def antipattern_candidates(events: Iterable[LedgerEvent]) -> list[Candidate]:
    """One candidate per failed signature (sha256(signature)[:16]), with every event that showed it."""
    by_key: dict[str, Candidate] = {}
    for failure in failed_dispatches(events):
        key = antipattern_key(failure["signature"])
        excerpt = " ".join(failure["instructions"].split())[:200] or "(no instructions)"
        candidate = by_key.setdefault(
            key,
            Candidate(
                kind="antipattern",
                key=key,
                text=f"[{failure['reason']}] {excerpt}",
                details={"reason": failure["reason"], "signature": failure["signature"], "instructions": failure["instructions"]},
            ),
        )
        candidate.evidence.append(
            EvidenceRef(
                ref=f"event:{failure['run_id']}:{failure['seq']}",
                run_id=failure["run_id"],
                iteration=failure["iteration"],
                note=f"{failure['reason']} {failure['worker_id']}".strip(),
            )
        )
    return sorted(by_key.values(), key=lambda c: c.key)


def curate(digests: Iterable[DigestIn], events: Iterable[LedgerEvent]) -> list[Candidate]:
    """Every proposal a run tree supports: facts, tool recipes, antipatterns (deterministic order)."""
    event_list = list(events)
    return fact_candidates(digests) + tool_candidates(tool_sightings(event_list)) + antipattern_candidates(event_list)
