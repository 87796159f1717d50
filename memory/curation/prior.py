"""The `## PRIOR RUN MEMORY` block for the next run, built from promoted items only."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery
from django.utils import timezone

from experiments.models import Experiment
from memory.curation.models import Evidence, Proposal
from memory.curation.render import PRIOR_CAP, PriorItems, prior_block

# The run a fact is attributed to in the facts-file line format: its earliest evidence with a run id.
_first_run_ref = Evidence.objects.filter(proposal=OuterRef("pk")).exclude(run_ref="").order_by("pk").values("run_ref")[:1]


def promoted_items(experiment: Experiment, withheld: frozenset[int] | set[int] = frozenset()) -> PriorItems:
    """Promoted tools (by name), facts (pinned first, then newest promotion first) and antipatterns, and
    subscribed pool facts; without expired facts and those a trial withholds (`withheld` proposal ids)."""
    proposals = list(
        Proposal.objects.promoted()
        .filter(experiment=experiment)
        .exclude(pk__in=list(withheld))
        .exclude(valid_until__lte=timezone.now())
        .annotate(first_run=Subquery(_first_run_ref))
        .order_by("-is_pinned", "-decided_at", "-pk")
    )
    tools = sorted(
        (str(p.details.get("name") or p.key.split("#")[0]), _purpose(p)) for p in proposals if p.kind == Proposal.Kind.TOOL
    )
    facts = [(_first_run(p), p.promoted_text) for p in proposals if p.kind == Proposal.Kind.FACT]
    antipatterns = [_antipattern(p) for p in proposals if p.kind == Proposal.Kind.ANTIPATTERN]
    from pool.shared import subscribed_facts

    shared = [(fact.label, fact.statement) for fact in subscribed_facts(experiment)]
    return PriorItems(tools=tools, facts=facts, antipatterns=antipatterns, shared=shared)


def _purpose(proposal: Proposal) -> str:
    name = str(proposal.details.get("name") or "")
    text = proposal.promoted_text
    return text[len(name) + 2 :] if name and text.startswith(f"{name}: ") else text


def _antipattern(proposal: Proposal) -> tuple[str, str, str]:
    reason = str(proposal.details.get("reason") or "antipattern")
    text = proposal.promoted_text
    return reason, proposal.key, text.removeprefix(f"[{reason}] ")


def _first_run(proposal: Proposal) -> str:
    return getattr(proposal, "first_run", None) or "dashboard"


def prior_run_block(
    experiment: Experiment, max_chars: int = PRIOR_CAP, *, run_id: str = "", agent_id: str = "", channel: str = "prior"
) -> str:
    """Known Tools / Confirmed Facts / Antipatterns to Avoid from promoted memory, at most `max_chars` long.

    With `run_id` (a run of the experiment) the block is that run's: a fact on trial is left out when the
    run's arm withholds it, and what the block carries is recorded as the run's exposure (`channel`: prior,
    or mcp for the MCP tools).
    """
    from memory import exposure

    run = exposure.run_named(experiment, run_id)
    block = prior_block(promoted_items(experiment, exposure.withheld_for_run(experiment, run)), max_chars=max_chars)
    exposure.record_served(experiment=experiment, run=run, channel=channel, agent_id=agent_id, text=block)
    return block
