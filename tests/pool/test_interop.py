"""End to end with the real AWP runtime: a pool fact accepted through the server is written back into the
workflow folder of a subscribed experiment, and that folder's next real run carries it under
`## PRIOR RUN MEMORY`; the folder of an unsubscribed experiment never sees it."""

from __future__ import annotations

import re

import pytest

from experiments.models import Experiment
from pool import services
from tests.awp_runtime import FakeLLM, Script, run_delegation_loop
from tests.factories import make_experiment, make_member
from tests.pool.helpers import PoolClient, create_claw

pytestmark = [pytest.mark.interop, pytest.mark.django_db(transaction=True)]

STATEMENT = "POOL_FACT_E142: error E142 with a DB timeout maps to mitigation M7"


def prior_block(prompt: str) -> str:
    match = re.search(r"## PRIOR RUN MEMORY\n(.*?)(?:\n## |\Z)", prompt, re.S)
    return match.group(1) if match else ""


def test_next_real_run_of_a_subscribed_experiment_is_primed_with_the_pool_fact(tmp_path, live_server_factory):
    subscribed_dir, unsubscribed_dir = tmp_path / "subscribed", tmp_path / "unsubscribed"
    subscribed_dir.mkdir()
    unsubscribed_dir.mkdir()
    subscribed = make_experiment(slug="pool-subscribed")
    unsubscribed = make_experiment(slug="pool-unsubscribed")
    for experiment, folder in ((subscribed, subscribed_dir), (unsubscribed, unsubscribed_dir)):
        Experiment.objects.filter(pk=experiment.pk).update(workspace_path=str(folder), writeback_enabled=True)
    services.set_subscription(experiment=subscribed, mode="tags", tags=["incident"], user=make_member(subscribed, "owner"))

    server = live_server_factory(AWP_POOL_CLAW_ID="deploy-interop")
    c1, c2, c3 = (PoolClient(server.url, name, create_claw(name)) for name in ("claw-1", "claw-2", "claw-3"))
    for c in (c1, c2, c3):
        c.presence()
    c1.propose("p-interop", STATEMENT, tags=["incident"])
    c1.vote("p-interop", "yes")
    assert c2.vote("p-interop", "yes").json()["decision"]["outcome"] == "accepted"

    # Write-back ran in the server process after the commit: only the subscribed folder has the fact.
    facts = "".join(p.read_text() for p in (subscribed_dir / "memory" / "facts").glob("*.md"))
    assert f"- [pool:fact:p-interop v1] {STATEMENT}" in facts
    assert not (unsubscribed_dir / "memory" / "facts").exists()

    llm = FakeLLM(Script(iterations=1, facts=["FACT_OTHER: 42 is pronic."])).start()
    try:
        run_delegation_loop(subscribed_dir, llm)
        primed = llm.manager_prompts()[0]
        assert "## PRIOR RUN MEMORY" in primed and STATEMENT in prior_block(primed)
        llm.reset()
        before = len(llm.manager_prompts())
        run_delegation_loop(unsubscribed_dir, llm)
        assert STATEMENT not in llm.manager_prompts()[before]
    finally:
        llm.stop()
