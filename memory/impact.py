"""Did the runs that carried a fact do better? Pure statistics over what runs report (no Django).

The difference is `mean(with) - mean(without)` and its uncertainty a seeded percentile bootstrap interval
(resampling each side with replacement, `RESAMPLES` times, at `LEVEL`): it makes no assumption about the shape
of scores, confidences or 0/1 completion, and the same runs with the same seed always give the same interval.
Fewer than `MIN_RUNS` runs on either side is "too few to tell" (None), never a number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

LEVEL = 0.95
RESAMPLES = 1000
MIN_RUNS = 3
# The order in which a headline metric is chosen: the first with enough runs on both sides.
METRICS = ("eval_score", "confidence", "completed", "iterations", "tokens", "duration_s")
# Metrics where less is better (a positive difference is then worse).
LOWER_IS_BETTER = frozenset({"iterations", "tokens", "duration_s"})


@dataclass(frozen=True)
class Comparison:
    """Runs with vs without a fact on one metric: means, difference, its interval and the counts."""

    metric: str
    with_mean: float
    without_mean: float
    diff: float
    low: float
    high: float
    n_with: int
    n_without: int

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    @property
    def is_worse(self) -> bool:
        """The runs that carried the fact did worse, beyond the uncertainty."""
        return self.low > 0 if self.metric in LOWER_IS_BETTER else self.high < 0

    @property
    def is_better(self) -> bool:
        return self.high < 0 if self.metric in LOWER_IS_BETTER else self.low > 0

    def as_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def compare(
    metric: str,
    with_values: Sequence[float],
    without_values: Sequence[float],
    *,
    seed: int = 0,
    level: float = LEVEL,
    resamples: int = RESAMPLES,
    min_runs: int = MIN_RUNS,
) -> Comparison | None:
    """The difference of means with a seeded bootstrap interval, or None when a side has fewer than `min_runs`."""
    a = np.asarray([float(v) for v in with_values], dtype=float)
    b = np.asarray([float(v) for v in without_values], dtype=float)
    if len(a) < min_runs or len(b) < min_runs:
        return None
    rng = np.random.default_rng(seed)
    means_a = a[rng.integers(0, len(a), size=(resamples, len(a)))].mean(axis=1)
    means_b = b[rng.integers(0, len(b), size=(resamples, len(b)))].mean(axis=1)
    diffs = means_a - means_b
    tail = (1 - level) / 2
    low, high = np.quantile(diffs, [tail, 1 - tail])
    return Comparison(
        metric=metric,
        with_mean=round(float(a.mean()), 6),
        without_mean=round(float(b.mean()), 6),
        diff=round(float(a.mean() - b.mean()), 6),
        low=round(float(low), 6),
        high=round(float(high), 6),
        n_with=len(a),
        n_without=len(b),
    )


def compare_all(
    with_runs: Sequence[Mapping[str, float | None]],
    without_runs: Sequence[Mapping[str, float | None]],
    *,
    seed: int = 0,
    first_only: bool = False,
) -> list[Comparison]:
    """One comparison per metric that has enough runs reporting it on both sides, in `METRICS` order
    (only the first, the headline, with `first_only`: a list of many facts needs no more)."""
    out = []
    for metric in METRICS:
        found = compare(
            metric,
            [r[metric] for r in with_runs if r.get(metric) is not None],  # type: ignore[misc]
            [r[metric] for r in without_runs if r.get(metric) is not None],  # type: ignore[misc]
            seed=seed,
        )
        if found is not None:
            out.append(found)
            if first_only:
                break
    return out


def headline(comparisons: Sequence[Comparison]) -> Comparison | None:
    """The comparison a list shows: the first metric (in `METRICS` order) with enough runs."""
    return comparisons[0] if comparisons else None


def sort_key(comparison: Comparison | None) -> tuple[int, float]:
    """Best measured effect first, then facts too few to tell, worst last."""
    if comparison is None:
        return (1, 0.0)
    sign = -1.0 if comparison.metric in LOWER_IS_BETTER else 1.0
    effect = sign * comparison.diff
    return (0 if effect >= 0 else 2, -effect)


def trial_arm(*, index: int, seed: int, assignment: str) -> bool:
    """Whether the `index`-th run of a trial carries the fact: alternating (first carries) or seeded random."""
    if assignment == "alternate":
        return index % 2 == 0
    return bool(np.random.default_rng([seed, index]).integers(0, 2))
