"""Reflections: compact an agent's recent visible episodes into one belief through an OpenAI-compatible endpoint.

The prompt is built, masked and sent by memory.outbound, the one way to a third party.

A reflection is asked in a short transaction (a pending row holding the masked prompt and its episodes), the
endpoint is called outside any transaction, and the answer is stored in one transaction with its episode and
its Review proposal, or the failure is recorded for a later retry: never half-stored.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from experiments.models import Experiment
from memory import outbound, recall
from memory.chunks import upsert_chunk
from memory.episodes import recall_agents
from memory.models import Episode, MemoryChunk, Reflection
from state.services_redaction import redact_text_for

logger = logging.getLogger(__name__)
OFF_SENTENCE = outbound.OFF_SENTENCE
MAX_EPISODES = 20
RETRY_BASE = timedelta(minutes=1)
RETRY_MAX = timedelta(hours=1)
STALE_PENDING = timedelta(minutes=10)


@dataclass
class ReflectSummary:
    reflections: int = 0
    agents: int = 0
    skipped: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"reflections": self.reflections, "agents": self.agents, "skipped": self.skipped}


def is_enabled() -> bool:
    """Reflection needs a configured chat endpoint (memory.outbound); without one it is off."""
    return outbound.is_configured()


def model_name() -> str:
    return outbound.model_name()


def seen_count(experiment: Experiment, agent_id: str) -> int:
    """Episodes that count toward an agent's reflection cadence: its own and the public record (not reflections).

    As in the reference, peers' outputs do not move the cadence, so a chatty sibling does not make an agent reflect.
    """
    own_or_public = Q(agent_id=agent_id) | Q(is_public=True)
    return Episode.objects.filter(own_or_public, experiment=experiment).exclude(kind="reflection").count()


def _covered(experiment: Experiment, agent_id: str) -> int:
    done = Reflection.objects.filter(experiment=experiment, agent_id=agent_id).exclude(status=Reflection.Status.FAILED)
    return done.aggregate(top=Max("seen"))["top"] or 0


def _retryable(experiment: Experiment, agent_id: str, *, force: bool) -> Reflection | None:
    now = timezone.now()
    failed = Q(status=Reflection.Status.FAILED)
    if not force:
        failed &= Q(next_retry_at__isnull=True) | Q(next_retry_at__lte=now)
    stale = Q(status=Reflection.Status.PENDING, created_at__lt=now - STALE_PENDING)
    return Reflection.objects.filter(failed | stale, experiment=experiment, agent_id=agent_id).order_by("created_at").first()


def schedule_due_reflections(experiment: Experiment) -> None:
    """From the ingest projector: after the commit, reflect for agents that are due (never inside the ingest)."""
    try:
        every = recall.reflection_every(experiment.memory_config)
    except recall.RecallConfigError:
        return  # the Memory tab names the bad setting; ingest goes on
    if not every or not is_enabled():
        return
    experiment_pk = experiment.pk

    def reflect_after_commit() -> None:
        found = Experiment.objects.filter(pk=experiment_pk).first()
        if found is not None:
            reflect_experiment(experiment=found, trigger="every")

    transaction.on_commit(reflect_after_commit, robust=True)


def reflect_experiment(*, experiment: Experiment, agent_id: str | None = None, force: bool = False, trigger: str = "every") -> ReflectSummary:
    """Reflect for every agent (or one) that is due, or for each of them with `force`; failed ones are retried."""
    summary = ReflectSummary()
    if not is_enabled():
        agents = [agent_id] if agent_id else recall_agents(experiment)
        summary.agents = summary.skipped = len(agents)
        return summary
    every = recall.reflection_every(experiment.memory_config)
    for agent in [agent_id] if agent_id else recall_agents(experiment):
        summary.agents += 1
        reflection = _request(experiment, agent, every=every, force=force, trigger=trigger)
        if reflection is not None and run_reflection(reflection):
            summary.reflections += 1
        else:
            summary.skipped += 1
    return summary


@transaction.atomic
def _request(experiment: Experiment, agent_id: str, *, every: int | None, force: bool, trigger: str) -> Reflection | None:
    """A pending reflection for the agent if one is due (or a failed one to retry); None when nothing is due."""
    # Serialise per experiment: two ingests committing at once must not ask for the same reflection twice.
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    retry = _retryable(experiment, agent_id, force=force)
    if retry is not None:
        retry.status = Reflection.Status.PENDING
        retry.created_at = timezone.now()
        retry.save(update_fields=["status", "created_at"])
        return retry
    seen = seen_count(experiment, agent_id)
    if not force and not recall.reflection_due(seen, _covered(experiment, agent_id), every):
        return None
    # Built and masked by the one outbound builder (memory.outbound): the agent's view, never_share and
    # unshareable fields out, masked by key, pattern, value and the detector. Stored as it will be sent.
    prompt = outbound.reflection_prompt(experiment, agent_id, limit=min(MAX_EPISODES, max(every or 0, 8)))
    if prompt is None:
        return None
    return Reflection.objects.create(
        experiment=experiment, agent_id=agent_id, trigger=trigger, seen=seen, model=model_name(), prompt=prompt.messages,
        episode_keys=prompt.episode_keys,
    )  # fmt: skip


def run_reflection(reflection: Reflection) -> bool:
    """Ask the endpoint (outside any transaction) and store the outcome; True when a belief was stored."""
    experiment = reflection.experiment
    answer = ""
    # Masked again at the time of sending (secrets learnt since the prompt was stored), and stored exactly as sent.
    messages = outbound.outbound_messages(experiment, reflection.prompt)
    if messages != reflection.prompt:
        reflection.prompt = messages
        Reflection.objects.filter(pk=reflection.pk).update(prompt=messages)
    try:
        answer = outbound.send_chat(experiment, messages)  # scanned and masked like ingested text
        belief = recall.parse_reflection(answer)
    except (outbound.EndpointFailed, recall.MalformedReflection) as exc:
        _record_failure(reflection, str(exc), answer)
        return False
    _store(reflection, redact_text_for(experiment, belief), answer)
    return True


def _record_failure(reflection: Reflection, error: str, answer: str) -> None:
    attempts = reflection.attempts + 1
    delay = min(RETRY_MAX, RETRY_BASE * (2 ** (attempts - 1)))
    Reflection.objects.filter(pk=reflection.pk).update(
        status=Reflection.Status.FAILED, attempts=attempts, error=redact_text_for(reflection.experiment, error)[:2000],
        answer=redact_text_for(reflection.experiment, answer)[:10_000], next_retry_at=timezone.now() + delay,
    )  # fmt: skip
    logger.warning("reflection %s of %s failed (attempt %s): %s", reflection.pk, reflection.agent_id, attempts, error)


@transaction.atomic
def _store(reflection: Reflection, belief: str, answer: str) -> None:
    from memory.curation.curator import Candidate, EvidenceRef
    from memory.curation.models import Proposal
    from memory.curation.services import apply_candidates

    experiment = reflection.experiment
    sources = list(Episode.objects.filter(experiment=experiment, key__in=reflection.episode_keys).select_related("run"))
    # The belief sits on the turn clock where its latest episode is (episode_keys are in clock order).
    last = next((e for e in sources if e.key == reflection.episode_keys[-1]), None) if reflection.episode_keys else None
    now = timezone.now()
    Episode.objects.create(
        experiment=experiment, run=last.run if last else None, key=f"refl:{reflection.pk}", agent_id=reflection.agent_id,
        kind="reflection", turn=last.turn if last else 0, is_public=True, fields={"belief": belief}, text=belief,
        words=sorted(recall.words(belief)), reflection=reflection, occurred_at=now,
    )  # fmt: skip
    upsert_chunk(experiment=experiment, tier=MemoryChunk.Tier.EPISODIC, ref_key=f"refl:{reflection.pk}",
                 source=f"reflection of {reflection.agent_id}", content=belief, agent_id=reflection.agent_id, occurred_at=now)  # fmt: skip
    candidate = Candidate(
        kind=Proposal.Kind.REFLECTION, key=f"reflection:{reflection.pk}", text=belief,
        evidence=[EvidenceRef(ref=f"episode:{e.key}", run_id=e.run.run_id if e.run else "", iteration=e.turn,
                              note=f"{e.kind} by {e.agent_id or 'run'}") for e in sources],
        details={"agent_id": reflection.agent_id, "reflection_id": reflection.pk, "model": reflection.model,
                 "episodes": reflection.episode_keys},
    )  # fmt: skip
    apply_candidates(experiment=experiment, candidates=[candidate], origin=Proposal.Origin.DASHBOARD)
    proposal = Proposal.objects.get(experiment=experiment, kind=Proposal.Kind.REFLECTION, key=candidate.key)
    Reflection.objects.filter(pk=reflection.pk).update(
        status=Reflection.Status.DONE, belief=belief, answer=answer[:10_000], error="", completed_at=now,
        proposal=proposal, attempts=reflection.attempts + 1, next_retry_at=None,
    )  # fmt: skip

