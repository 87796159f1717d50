"""The lifecycle of a promoted fact: pin, unpin, retire, restore, supersede, expire, and trials of a promotion.

Each step is a FactEvent (who, why, which MEMORY.md version it wrote); nothing is ever deleted: a retired
fact leaves MEMORY.md in a new version and keeps its versions, evidence, reviews and exposures.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from experiments.models import Experiment
from memory.curation import curator
from memory.curation.models import Decision, Evidence, Fact, FactEvent, FactTrial, Proposal
from memory.curation.render import remove_promoted
from memory.curation.services import (
    ReviewRefused,
    _announce,
    _memory_with,
    _next_fact_version,
    _require_curator,
    _schedule_writeback,
    review_proposal,
)
from memory.longterm import current_long_term, write_long_term_version


def _label(actor: Any) -> str:
    return actor.get_username() if getattr(actor, "is_authenticated", False) else "automation"


def record_event(
    proposal: Proposal, action: str, actor: Any = None, *, reason: str = "", related: Proposal | None = None,
    memory_version: int | None = None, details: dict[str, Any] | None = None, label: str = "",
) -> FactEvent:
    """Append one audited lifecycle event."""
    return FactEvent.objects.create(
        proposal=proposal, action=action, actor=actor if getattr(actor, "is_authenticated", False) else None,
        actor_label=(label or _label(actor))[:200], reason=reason[:2000], related=related,
        memory_version=memory_version, details=details or {},
    )  # fmt: skip


def _locked_fact(proposal: Proposal) -> Proposal:
    locked = Proposal.objects.select_for_update().select_related("experiment").get(pk=proposal.pk)
    if locked.kind != Proposal.Kind.FACT:
        raise ReviewRefused(409, "not_a_fact", "Only facts have a lifecycle; this item is a " + locked.kind + ".")
    return locked


def _require_active(proposal: Proposal, verb: str) -> None:
    if proposal.status != Proposal.Status.APPROVED:
        raise ReviewRefused(409, "not_active", f"Only an active (promoted) fact can be {verb}; this one is {status_of(proposal)}.")


def status_of(proposal: Proposal, *, on_trial: bool | None = None) -> str:
    """active | trial | retired | superseded | expired (pending and rejected proposals keep their own name)."""
    if proposal.status == Proposal.Status.APPROVED:
        if on_trial is None:
            on_trial = proposal.trials.filter(status=FactTrial.Status.RUNNING).exists()
        return "trial" if on_trial else "active"
    if proposal.status == Proposal.Status.RETRACTED:
        return proposal.retired_as or "retired"
    return proposal.status


@transaction.atomic
def pin_fact(*, proposal: Proposal, actor: Any, pinned: bool = True, reason: str = "") -> Proposal:
    """Pin (always first in the prior-run block, never retired by automation) or unpin an active fact."""
    _require_curator(proposal.experiment, actor)
    proposal = _locked_fact(proposal)
    _require_active(proposal, "pinned" if pinned else "unpinned")
    if proposal.is_pinned != pinned:
        proposal.is_pinned = pinned
        proposal.save(update_fields=["is_pinned", "updated_at"])
        record_event(proposal, FactEvent.Action.PIN if pinned else FactEvent.Action.UNPIN, actor, reason=reason)
        _announce(proposal.experiment)
    return proposal


def _take_out(proposal: Proposal, actor: Any, *, reason: str, retired_as: str, action: str, related: Proposal | None = None) -> int:
    """Tombstone: a new MEMORY.md version without the fact, a retracted Fact version, a decision and an event."""
    current = current_long_term(proposal.experiment)
    document = write_long_term_version(
        experiment=proposal.experiment,
        content=remove_promoted(current.content if current else "", proposal.pk),
        reason=f"{retired_as.capitalize()} {proposal.short_id}: {reason or proposal.promoted_text[:200]}"[:500],
        source="retraction",
        author=actor,
        author_label="" if getattr(actor, "is_authenticated", False) else "automation",
    )
    proposal.status = Proposal.Status.RETRACTED
    proposal.retired_as = retired_as
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "retired_as", "decided_at", "updated_at", "superseded_by"])
    Fact.objects.create(
        proposal=proposal, version=_next_fact_version(proposal), text=proposal.promoted_text,
        state=Fact.State.RETRACTED, memory_version=document.version,
        author=actor if getattr(actor, "is_authenticated", False) else None,
    )  # fmt: skip
    Decision.objects.create(
        proposal=proposal, outcome=Decision.Outcome.RETRACTED, reason=reason, decided_by=_label(actor),
        memory_version=document.version,
    )  # fmt: skip
    record_event(proposal, action, actor, reason=reason, related=related, memory_version=document.version)
    FactTrial.objects.filter(proposal=proposal, status__in=[FactTrial.Status.RUNNING, FactTrial.Status.MEASURED]).update(
        status=FactTrial.Status.RETIRED, decided_at=timezone.now()
    )
    _schedule_writeback(proposal.experiment, "retraction")
    _announce(proposal.experiment)
    return document.version


@transaction.atomic
def retire_fact(*, proposal: Proposal, actor: Any, reason: str = "") -> Proposal:
    """Retire an active fact: it leaves MEMORY.md (a new version) and the prior-run block, and stays in history."""
    _require_curator(proposal.experiment, actor)
    proposal = _locked_fact(proposal)
    _require_active(proposal, "retired")
    _take_out(proposal, actor, reason=reason.strip(), retired_as="retired", action=FactEvent.Action.RETIRE)
    return proposal


@transaction.atomic
def restore_fact(*, proposal: Proposal, actor: Any, reason: str = "") -> Proposal:
    """Bring a retired, superseded or expired fact back: a new Fact version and a new MEMORY.md version."""
    _require_curator(proposal.experiment, actor)
    proposal = _locked_fact(proposal)
    if proposal.status != Proposal.Status.RETRACTED:
        raise ReviewRefused(409, "not_retired", f"Only a retired fact can be restored; this one is {status_of(proposal)}.")
    proposal.status = Proposal.Status.APPROVED
    proposal.retired_as = ""
    proposal.superseded_by = None
    if proposal.valid_until and proposal.valid_until <= timezone.now():
        proposal.valid_until = None
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "retired_as", "superseded_by", "valid_until", "decided_at", "updated_at"])
    version = _next_fact_version(proposal)
    document = write_long_term_version(
        experiment=proposal.experiment, content=_memory_with(proposal, version=version),
        reason=f"Restore {proposal.short_id}: {reason or proposal.promoted_text[:200]}"[:500], source="promotion", author=actor,
    )  # fmt: skip
    Fact.objects.create(proposal=proposal, version=version, text=proposal.promoted_text, memory_version=document.version, author=actor)
    record_event(proposal, FactEvent.Action.RESTORE, actor, reason=reason.strip(), memory_version=document.version)
    _schedule_writeback(proposal.experiment, "promotion")
    _announce(proposal.experiment)
    return proposal


@transaction.atomic
def supersede_fact(*, proposal: Proposal, actor: Any, text: str, reason: str = "", candidate: Proposal | None = None) -> Proposal:
    """A new fact replaces an active one: the new one promoted, the old one retired as superseded, both linked.

    `candidate`: a pending proposal (a contradicting candidate) that becomes the new fact with its evidence.
    Returns the new fact.
    """
    _require_curator(proposal.experiment, actor)
    old = _locked_fact(proposal)
    _require_active(old, "superseded")
    text = " ".join(text.split())
    if not text:
        raise ReviewRefused(422, "text_required", "The superseding fact needs a text.")
    experiment = old.experiment
    if candidate is None:
        key = curator.fact_key(text)
        candidate = Proposal.objects.filter(experiment=experiment, kind=Proposal.Kind.FACT, key=key).first()
        if candidate is None:
            candidate = Proposal.objects.create(
                experiment=experiment, kind=Proposal.Kind.FACT, key=key, text=text,
                details={"supersedes": old.pk}, first_seen_at=timezone.now(),
            )  # fmt: skip
            Evidence.objects.create(proposal=candidate, ref=f"supersedes:{old.pk}", note=f"supersedes {old.short_id}"[:300])
    if candidate.pk == old.pk or candidate.status != Proposal.Status.PENDING:
        raise ReviewRefused(409, "already_known", f"This text is already {candidate.short_id} ({status_of(candidate)}).")
    review_proposal(proposal=candidate, reviewer=actor, verdict="approve", text=text if text != candidate.text else "", reason=reason)
    candidate.refresh_from_db()
    if candidate.status != Proposal.Status.APPROVED:
        # A quorum above one: the candidate waits for more votes; the old fact stays until it is promoted.
        return candidate
    old.superseded_by = candidate
    _take_out(old, actor, reason=reason.strip() or f"superseded by {candidate.short_id}", retired_as="superseded",
              action=FactEvent.Action.SUPERSEDE, related=candidate)  # fmt: skip
    record_event(candidate, FactEvent.Action.SUPERSEDE, actor, reason=f"supersedes {old.short_id}", related=old)
    return candidate


@transaction.atomic
def set_valid_until(*, proposal: Proposal, actor: Any, valid_until: datetime | None) -> Proposal:
    """Give an active fact an expiry time (None: it never expires)."""
    _require_curator(proposal.experiment, actor)
    proposal = _locked_fact(proposal)
    _require_active(proposal, "given an expiry")
    proposal.valid_until = valid_until
    proposal.save(update_fields=["valid_until", "updated_at"])
    record_event(proposal, FactEvent.Action.EXPIRE, actor, details={"valid_until": valid_until.isoformat() if valid_until else None})
    return proposal


def expire_due(*, experiment: Experiment | None = None, now: datetime | None = None) -> list[int]:
    """Retire (as expired) every active, unpinned fact past its valid_until; returns their ids."""
    due = Proposal.objects.filter(kind=Proposal.Kind.FACT, status=Proposal.Status.APPROVED, is_pinned=False,
                                  valid_until__lte=now or timezone.now())  # fmt: skip
    if experiment is not None:
        due = due.filter(experiment=experiment)
    done = []
    for proposal_id in due.values_list("pk", flat=True):
        with transaction.atomic():
            proposal = _locked_fact(Proposal(pk=proposal_id))
            if proposal.status == Proposal.Status.APPROVED and not proposal.is_pinned:
                _take_out(proposal, None, reason="valid_until passed", retired_as="expired", action=FactEvent.Action.EXPIRE)
                done.append(proposal_id)
    return done


# ---------------------------------------------------------------- trials


@transaction.atomic
def approve_on_trial(
    *, proposal: Proposal, reviewer: Any, runs: int, assignment: str = FactTrial.Assignment.ALTERNATE, seed: int = 0, reason: str = ""
) -> FactTrial | None:
    """Approve a fact on trial: for the next `runs` runs the server gives it to one arm only, then asks again."""
    if not 2 <= runs <= 1000:
        raise ReviewRefused(422, "runs", "A trial needs between 2 and 1000 runs.")
    if assignment not in FactTrial.Assignment.values:
        raise ReviewRefused(422, "assignment", "assignment must be 'alternate' or 'random'.")
    if proposal.kind != Proposal.Kind.FACT:
        raise ReviewRefused(409, "not_a_fact", "Only facts can be approved on trial.")
    review_proposal(proposal=proposal, reviewer=reviewer, verdict="approve", reason=reason)
    proposal.refresh_from_db()
    if proposal.status != Proposal.Status.APPROVED:
        return None
    trial = FactTrial.objects.create(proposal=proposal, runs_planned=runs, assignment=assignment, seed=seed, started_by=_label(reviewer))
    record_event(proposal, FactEvent.Action.TRIAL_START, reviewer, reason=reason,
                 details={"runs": runs, "assignment": assignment, "seed": seed})  # fmt: skip
    return trial


@transaction.atomic
def decide_trial(*, trial: FactTrial, actor: Any, keep: bool, reason: str = "") -> FactTrial:
    """The final decision after (or during) a trial: keep the fact for every run, or retire it."""
    proposal = trial.proposal
    _require_curator(proposal.experiment, actor)
    trial = FactTrial.objects.select_for_update().get(pk=trial.pk)
    if trial.status not in (FactTrial.Status.RUNNING, FactTrial.Status.MEASURED):
        raise ReviewRefused(409, "trial_decided", f"This trial is already {trial.status}.")
    trial.status = FactTrial.Status.KEPT if keep else FactTrial.Status.RETIRED
    trial.decided_at = timezone.now()
    trial.save(update_fields=["status", "decided_at"])
    trial.arms.filter(run__isnull=True).delete()
    record_event(proposal, FactEvent.Action.TRIAL_DECIDE, actor, reason=reason, details={"keep": keep, "trial": trial.pk})
    if keep:
        _schedule_writeback(proposal.experiment, "promotion")
    else:
        retire_fact(proposal=proposal, actor=actor, reason=reason or "retired after its trial")
    return trial


@transaction.atomic
def resolve_contradiction(*, candidate: Proposal, actor: Any, action: str, fact_id: int | None = None, reason: str = "") -> Proposal:
    """A reviewer's answer to a contradicting candidate: supersede the fact with it, keep both, or reject it."""
    if action == "keep_both":
        return review_proposal(proposal=candidate, reviewer=actor, verdict="approve", reason=reason or "kept beside the fact it contradicts")
    if action == "reject":
        return review_proposal(proposal=candidate, reviewer=actor, verdict="reject", reason=reason or "contradicts a promoted fact")
    if action != "supersede":
        raise ReviewRefused(422, "action", "action must be supersede, keep_both or reject.")
    refs = [str(c.get("ref", "")) for c in (candidate.details or {}).get("contradicts", [])]
    known = [int(ref.split(":", 1)[1]) for ref in refs if ref.startswith("proposal:")]
    target = fact_id if fact_id is not None else (known[0] if known else None)
    old = Proposal.objects.filter(experiment=candidate.experiment, pk=target).first() if target is not None else None
    if old is None:
        raise ReviewRefused(422, "fact_id", "Name the promoted fact of this experiment the candidate supersedes (fact_id).")
    return supersede_fact(proposal=old, actor=actor, text=candidate.text, reason=reason, candidate=candidate)
