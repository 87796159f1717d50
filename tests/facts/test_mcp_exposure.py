"""The MCP tools call the same memory services: what they serve to a run is its exposure, through `mcp`, and a
fact on trial is withheld from the same arms."""

from __future__ import annotations

import pytest

from experiments.models import ApiToken
from memory.curation import lifecycle
from memory.curation.models import Exposure
from memory_mcp import tools
from memory_mcp.principal import Principal
from tests.factories import make_run
from tests.facts.test_services_api import FACT, _proposed

pytestmark = pytest.mark.django_db


def test_mcp_prior_recall_and_memory_md_record_exposure_and_respect_trial_arms(experiment, curator):
    fact = _proposed(experiment)
    lifecycle.approve_on_trial(proposal=fact, reviewer=curator, runs=4)
    token, _secret = ApiToken.issue(experiment=experiment, name="mcp-agent", scopes=["memory:read"])
    principal = Principal(token=token)
    given, withheld = make_run(experiment), make_run(experiment)
    for run, carried in ((given, True), (withheld, False)):
        prior = tools.prior(principal, agent_id="planner", run_id=run.run_id)["block"]
        memory = tools.read_long_term(principal, agent_id="planner", version=None, run_id=run.run_id)["content"]
        tools.recall(principal, agent_id="planner", query="42", top_k=None, run_id=run.run_id)
        assert (FACT in prior) is carried and (FACT in memory) is carried
    rows = set(Exposure.objects.filter(proposal=fact).values_list("run_id", "channel", "mode", "agent_id"))
    assert rows == {(given.pk, "mcp", "served", "planner")}
    assert FACT in experiment.memory_documents.order_by("-version").first().content  # the stored version is untouched
