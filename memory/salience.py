"""Salience ranking for recall: a weighted blend of relevance, recency and importance by kind. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

# How much a kind of memory matters by itself, before relevance and recency.
IMPORTANCE = {
    "long_term": 0.9,
    "fact": 1.0,
    "decision": 0.85,
    "finding": 0.8,
    "episodic": 0.6,
    "observation": 0.6,
    "working": 0.5,
    "note": 0.5,
    "notes": 0.5,
}


@dataclass(frozen=True)
class Weights:
    relevance: float = 0.6
    recency: float = 0.25
    importance: float = 0.15
    half_life_days: float = 7.0


@dataclass(frozen=True)
class Candidate:
    """Something recallable: its search relevance in [0, 1], when it happened, and its kind."""

    key: str
    relevance: float
    timestamp: datetime | None
    kind: str


def recency(timestamp: datetime | None, now: datetime, half_life_days: float) -> float:
    """Exponential decay in [0, 1]: 1 now, 0.5 after one half-life; unknown times count as old."""
    if timestamp is None:
        return 0.0
    age_days = max(0.0, (now - timestamp).total_seconds() / 86400)
    return math.pow(0.5, age_days / half_life_days) if half_life_days > 0 else 0.0


def salience(candidate: Candidate, now: datetime, weights: Weights = Weights()) -> float:
    """The weighted score in [0, 1] (weights are normalised so they need not sum to 1)."""
    total = weights.relevance + weights.recency + weights.importance
    if total <= 0:
        return 0.0
    score = (
        weights.relevance * min(1.0, max(0.0, candidate.relevance))
        + weights.recency * recency(candidate.timestamp, now, weights.half_life_days)
        + weights.importance * IMPORTANCE.get(candidate.kind, 0.5)
    )
    return score / total


def rank(candidates: list[Candidate], now: datetime, weights: Weights = Weights(), k: int = 10) -> list[Candidate]:
    """The top-k candidates by salience, ties broken by key for a deterministic order."""
    return sorted(candidates, key=lambda c: (-salience(c, now, weights), c.key))[:k]
