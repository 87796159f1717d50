"""Real AWP runs (awp-agents against the tests' fake LLM) made once per module, imported per test."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.awp_runtime import FakeLLM, Script, run_dag, run_delegation_loop, run_with_submanagers


@pytest.fixture(scope="session")
def real_trees(tmp_path_factory) -> Iterator[dict[str, Path]]:  # type: ignore[no-untyped-def]
    """A 3-iteration delegation loop, a second loop with other confidences, a loop with sub-managers, a DAG."""
    base = tmp_path_factory.mktemp("awp-charts")
    llm = FakeLLM(Script(iterations=2, confidences=[0.95, 0.2])).start()  # two delegations, then complete
    try:
        run_delegation_loop(base / "loop", llm)
        llm.reset(Script(iterations=2, confidences=[0.4, 0.7]))
        run_delegation_loop(base / "loop2", llm)
        llm.reset(Script(iterations=2))
        run_with_submanagers(base / "subs", llm, count=2)
        run_dag(base / "dag", llm)
    finally:
        llm.stop()
    yield {"loop": base / "loop", "loop2": base / "loop2", "subs": base / "subs", "dag": base / "dag"}


def awp_import(folder: Path, slug: str) -> dict:
    out = io.StringIO()
    call_command("awp_import", str(folder), "--experiment", slug, "--json", stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])
