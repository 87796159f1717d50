"""Builders for tests: make_<thing>(**overrides) with sensible defaults."""

from __future__ import annotations

import itertools
from typing import Any

from django.contrib.auth import get_user_model
from django.utils import timezone

from experiments.models import ApiToken, Experiment, Membership, Run

_counter = itertools.count(1)
PASSWORD = "correct-horse-battery"


def make_user(username: str | None = None, **overrides: Any) -> Any:
    username = username or f"user{next(_counter)}"
    user = get_user_model().objects.create_user(username=username, password=PASSWORD, **overrides)
    return user


def make_experiment(**overrides: Any) -> Experiment:
    n = next(_counter)
    defaults: dict[str, Any] = {"slug": f"exp-{n}", "name": f"Experiment {n}", "goal": "Find out things."}
    defaults.update(overrides)
    return Experiment.objects.create(**defaults)


def make_member(experiment: Experiment, role: str = Membership.Role.VIEWER, user: Any = None) -> Any:
    user = user or make_user()
    Membership.objects.create(user=user, experiment=experiment, role=role)
    return user


def make_run(experiment: Experiment | None = None, **overrides: Any) -> Run:
    experiment = experiment or make_experiment()
    n = next(_counter)
    defaults: dict[str, Any] = {"run_id": f"2026-11-21_00-00-{n:02d}_abcdef{n:02d}", "started_at": timezone.now()}
    defaults.update(overrides)
    return Run.objects.create(experiment=experiment, **defaults)


def make_token(experiment: Experiment, scopes: list[str] | None = None, **overrides: Any) -> str:
    _token, secret = ApiToken.issue(
        experiment=experiment, name=overrides.pop("name", f"token{next(_counter)}"), scopes=scopes or ["ingest"], **overrides
    )
    return secret
