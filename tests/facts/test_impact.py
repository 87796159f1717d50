"""The impact statistics (memory/impact.py): no effect → the interval covers zero at about its stated rate;
a planted effect is found; too few runs are "too few to tell"."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from memory import impact


def _simulate(rng: random.Random, n: int, shift: float) -> list[float]:
    return [min(1.0, max(0.0, rng.gauss(0.6 + shift, 0.15))) for _ in range(n)]


@settings(max_examples=4, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(15, 30))
def test_no_effect_interval_covers_zero_at_the_stated_rate(seed: int, n: int) -> None:
    rng = random.Random(seed)
    trials = 120
    covered = 0
    for trial in range(trials):
        found = impact.compare("confidence", _simulate(rng, n, 0), _simulate(rng, n, 0), seed=trial, resamples=600)
        assert found is not None
        covered += found.low <= 0 <= found.high
    # Stated 95 %: a percentile bootstrap at these counts runs a little under; 120 trials have a binomial sd of ~2 %.
    assert covered / trials >= 0.87


@settings(max_examples=10, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(8, 30))
def test_planted_effect_is_found(seed: int, n: int) -> None:
    rng = random.Random(seed)
    found = impact.compare("confidence", _simulate(rng, n, 0.3), _simulate(rng, n, 0), seed=seed)
    assert found is not None
    assert found.low > 0 and found.is_better and not found.is_worse
    assert found.n_with == n and found.n_without == n


@settings(max_examples=10, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_planted_harm_is_flagged_worse(seed: int) -> None:
    rng = random.Random(seed)
    found = impact.compare("eval_score", _simulate(rng, 20, -0.3), _simulate(rng, 20, 0), seed=seed)
    assert found is not None and found.is_worse and found.high < 0
    tokens = impact.compare("tokens", [900.0, 1000, 1100, 950], [500.0, 520, 480, 510], seed=seed)
    assert tokens is not None and tokens.is_worse  # more tokens is worse


def test_too_few_runs_is_none_and_same_seed_same_interval() -> None:
    assert impact.compare("confidence", [0.9, 0.8], [0.1, 0.2, 0.3]) is None
    first = impact.compare("confidence", [0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3], seed=7)
    assert first == impact.compare("confidence", [0.9, 0.8, 0.7, 0.6], [0.1, 0.2, 0.3], seed=7)
    runs_with = [{"confidence": 0.9, "completed": 1.0}] * 3
    runs_without = [{"confidence": 0.4, "completed": 1.0}] * 2 + [{"confidence": 0.5, "completed": None}]
    [conf] = impact.compare_all(runs_with, runs_without)
    assert conf.metric == "confidence" and conf.diff > 0  # completed has 2 runs on one side: too few


def test_sort_key_best_first_unknown_middle_worst_last() -> None:
    good = impact.Comparison("confidence", 0.9, 0.5, 0.4, 0.3, 0.5, 3, 3)
    bad = impact.Comparison("confidence", 0.5, 0.9, -0.4, -0.5, -0.3, 3, 3)
    assert sorted([bad, None, good], key=impact.sort_key) == [good, None, bad]


def test_trial_arms_alternate_or_follow_the_seed() -> None:
    assert [impact.trial_arm(index=i, seed=1, assignment="alternate") for i in range(4)] == [True, False, True, False]
    random_arms = [impact.trial_arm(index=i, seed=5, assignment="random") for i in range(20)]
    assert random_arms == [impact.trial_arm(index=i, seed=5, assignment="random") for i in range(20)]
    assert 0 < sum(random_arms) < 20
