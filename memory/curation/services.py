"""Curation use cases: curate a run tree, review a proposal (votes, quorum), promote, edit, retract."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from awp_site.live import announce_experiment_changed
from experiments.models import Digest, Event, Experiment, Membership, Run, role_at_least
from experiments.projections import WorkspaceFile
from memory.curation import contradictions, curator, runtime_files
from memory.curation.models import CuratedRun, Decision, Evidence, Fact, FactEvent, Proposal, Vote
from memory.curation.render import promoted_line, remove_promoted, upsert_promoted
from memory.longterm import current_long_term, write_long_term_version
from otel.send import memory_event

CURATOR_EVENT_KINDS = ("iteration.decision", "worker.spawn", "worker.complete", "run.complete")


class ReviewRefused(Exception):
    """A review action that is not allowed: an HTTP status, a machine-readable code and a sentence."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class CurationSummary:
    """What one curation pass changed."""

    proposed: int = 0
    already_known: int = 0
    evidence_added: int = 0
    runs: int = 0

    def add(self, other: CurationSummary) -> None:
        self.proposed += other.proposed
        self.already_known += other.already_known
        self.evidence_added += other.evidence_added
        self.runs += other.runs

    def as_dict(self) -> dict[str, int]:
        return {
            "proposed": self.proposed,
            "already_known": self.already_known,
            "evidence_added": self.evidence_added,
            "runs": self.runs,
        }


# ---------------------------------------------------------------- run trees


def root_of(run: Run) -> Run:
    """The root manager run of `run`'s tree."""
    while run.parent_id is not None:
        run = Run.objects.get(pk=run.parent_id)
    return run


def run_tree(root: Run) -> list[Run]:
    """The root and all its sub-manager runs, at any depth."""
    tree, frontier = [root], [root.pk]
    while frontier:
        children = list(Run.objects.filter(parent_id__in=frontier))
        tree.extend(children)
        frontier = [child.pk for child in children]
    return tree


def _digest_in(row: Digest) -> curator.DigestIn:
    return curator.DigestIn(
        sha=row.sha,
        run_id=row.run_ref or (row.run.run_id if row.run else ""),
        iteration=row.iteration,
        goal=row.goal,
        key_facts=tuple(str(fact) for fact in row.key_facts or []),
        confidence_trend=tuple(float(c) for c in row.confidence_trend or [] if isinstance(c, (int, float))),
        child_digest_hashes=tuple(str(c) for c in row.child_digest_hashes or []),
    )


def tree_digests(experiment: Experiment, runs: list[Run]) -> list[curator.DigestIn]:
    """Every digest of the runs, plus every child digest they reference, resolved by SHA across the experiment."""
    run_ids = [run.run_id for run in runs]
    rows = list(Digest.objects.filter(experiment=experiment, run__in=runs)) + list(
        Digest.objects.filter(experiment=experiment, run__isnull=True, run_ref__in=run_ids)
    )
    digests = {row.sha: _digest_in(row) for row in rows}
    missing = curator.missing_children(digests.values())
    while missing:
        found = [_digest_in(row) for row in Digest.objects.filter(experiment=experiment, sha__in=missing)]
        digests.update((digest.sha, digest) for digest in found)
        missing = curator.missing_children(digests.values()) - {d.sha for d in found} if found else set()
    return list(digests.values())


def tree_events(runs: list[Run]) -> list[curator.LedgerEvent]:
    """The ledger events the antipattern and tool rules read, for every run of the tree."""
    names = {run.pk: run.run_id for run in runs}
    rows = Event.objects.filter(run__in=runs, kind__in=CURATOR_EVENT_KINDS).order_by("run_id", "seq")
    return [
        curator.LedgerEvent(
            run_id=names[row.run_id],
            seq=row.seq,
            kind=row.kind,
            iteration=row.iteration,
            agent_id=row.agent_id,
            payload=row.payload if isinstance(row.payload, dict) else {},
        )
        for row in rows.only("run_id", "seq", "kind", "iteration", "agent_id", "payload")
    ]


# ---------------------------------------------------------------- curation


@transaction.atomic
def curate_run(*, run: Run) -> CurationSummary:
    """Curate the whole tree of `run`'s root; idempotent (known items only gain new evidence)."""
    root = root_of(run)
    experiment = root.experiment
    runs = run_tree(root)
    candidates = curator.curate(tree_digests(experiment, runs), tree_events(runs))
    summary = apply_candidates(experiment=experiment, candidates=candidates, origin=Proposal.Origin.DASHBOARD)
    summary.runs = 1
    CuratedRun.objects.update_or_create(
        run=root,
        defaults={"curated_at": timezone.now(), "proposed": summary.proposed, "already_known": summary.already_known},
    )
    return summary


def curate_experiment(*, experiment: Experiment, only_new: bool = False) -> CurationSummary:
    """Curate every finished root run of the experiment (only those not curated yet with `only_new`)."""
    roots = experiment.runs.filter(parent__isnull=True).exclude(status=Run.Status.RUNNING).order_by("created_at")
    if only_new:
        roots = roots.filter(curation__isnull=True)
    total = CurationSummary()
    for root in roots:
        total.add(curate_run(run=root))
    return total


@transaction.atomic
def apply_candidates(*, experiment: Experiment, candidates: Iterable[curator.Candidate], origin: str) -> CurationSummary:
    """Create proposals for new candidates and attach evidence to known ones (whatever their status).

    A constant number of queries per call, however many candidates: lookups and inserts are batched.
    """
    # Serialise curations of one experiment, so two passes never create the same proposal twice.
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    candidates = list(candidates)
    summary = CurationSummary()
    found = _existing_proposals(experiment, candidates)
    versions = _tool_versions(experiment, candidates)
    new: list[Proposal] = []
    for candidate in candidates:
        if (candidate.kind, candidate.key) in found:
            summary.already_known += 1
            continue
        version = 1
        if candidate.kind == Proposal.Kind.TOOL:
            name = str(candidate.details.get("name", ""))
            versions[name] = version = versions.get(name, 0) + 1
        proposal = Proposal(
            experiment=experiment,
            kind=candidate.kind,
            key=candidate.key,
            text=candidate.text,
            origin=origin,
            version=version,
            details=candidate.details,
        )
        found[(candidate.kind, candidate.key)] = proposal
        new.append(proposal)
    _flag_contradictions(experiment, [p for p in new if p.kind == Proposal.Kind.FACT])
    Proposal.objects.bulk_create(new)
    summary.proposed = len(new)
    known_refs = set(
        Evidence.objects.filter(proposal__in=[p.pk for p in found.values()]).values_list("proposal_id", "ref")
    )
    runs_by_id = dict(experiment.runs.values_list("run_id", "pk"))
    fresh: list[Evidence] = []
    for candidate in candidates:
        proposal = found[(candidate.kind, candidate.key)]
        for ref in candidate.evidence:
            if (proposal.pk, ref.ref[:400]) in known_refs:
                continue
            known_refs.add((proposal.pk, ref.ref[:400]))
            fresh.append(
                Evidence(
                    proposal=proposal,
                    ref=ref.ref[:400],
                    digest_sha=ref.digest_sha,
                    run_id=runs_by_id.get(ref.run_id),
                    run_ref=ref.run_id[:200],
                    iteration=ref.iteration,
                    note=ref.note[:300],
                )
            )
    Evidence.objects.bulk_create(fresh, ignore_conflicts=True)
    summary.evidence_added = len(fresh)
    if new or fresh:
        _announce(experiment)
    return summary


def _flag_contradictions(experiment: Experiment, candidates: list[Proposal]) -> None:
    """Mark new fact candidates that contradict a promoted fact or a subscribed pool fact (never resolved here)."""
    if not candidates:
        return
    from pool.shared import subscribed_facts

    known = [(f"proposal:{pk}", edited or text) for pk, text, edited in
             experiment.proposals.filter(kind=Proposal.Kind.FACT, status=Proposal.Status.APPROVED).values_list("pk", "text", "edited_text")]
    known += [(f"pool:{fact.label}", fact.statement) for fact in subscribed_facts(experiment)]  # fmt: skip
    if not known:
        return
    texts = dict(known)
    for candidate in candidates:
        found = contradictions.conflicts(candidate.text, known)
        if found:
            candidate.details = {**candidate.details, "contradicts": [
                {"ref": ref, "text": texts[ref], "why": c.why, "similarity": c.similarity} for ref, c in found[:5]
            ]}  # fmt: skip
        elif contradictions.near(candidate.text, known):
            # The configured LLM judges it later (awp_curate), outside any transaction: ingest never waits on it.
            candidate.details = {**candidate.details, "judge_pending": True}


def judge_contradictions(*, experiment_id: int) -> int:
    """Ask the configured LLM whether candidates near a known fact contradict it; returns how many it flagged.

    Does nothing without a configured chat endpoint (the candidates keep waiting for one). The prompts are built
    and masked by memory.outbound, the one way to a third party, and kept with the answers on the candidate."""
    from memory import outbound
    from pool.shared import subscribed_facts

    if not outbound.is_configured():
        return 0
    experiment = Experiment.objects.get(pk=experiment_id)
    known = [(f"proposal:{p.pk}", p.promoted_text) for p in experiment.proposals.filter(kind=Proposal.Kind.FACT, status=Proposal.Status.APPROVED)]
    known += [(f"pool:{fact.label}", fact.statement) for fact in subscribed_facts(experiment)]
    flagged = 0
    for candidate in experiment.proposals.filter(kind=Proposal.Kind.FACT, status=Proposal.Status.PENDING, details__judge_pending=True):
        found, asked = [], []
        for ref, text in contradictions.near(candidate.text, known)[:3]:
            messages = outbound.outbound_messages(experiment, contradictions.judge_messages(candidate.text, text))
            try:
                answer = outbound.send_chat(experiment, messages)
            except outbound.EndpointFailed:
                return flagged  # the endpoint is down: the candidates stay pending for the next pass
            asked.append({"ref": ref, "prompt": messages, "answer": answer})
            verdict = contradictions.parse_verdict(answer, contradictions.similarity(candidate.text, text))
            if verdict is not None:
                found.append({"ref": ref, "text": text, "why": verdict.why, "similarity": verdict.similarity})
        details = {k: v for k, v in candidate.details.items() if k != "judge_pending"} | {"judged": asked}
        if found:
            details["contradicts"] = found
            flagged += 1
        Proposal.objects.filter(pk=candidate.pk).update(details=details)
    if flagged:
        _announce(experiment)
    return flagged


def _existing_proposals(experiment: Experiment, candidates: list[curator.Candidate]) -> dict[tuple[str, str], Proposal]:
    """Known proposals for the candidates, by (kind, key); a fact also matches a promoted text of it."""
    keys = {(c.kind, c.key) for c in candidates}
    rows = Proposal.objects.filter(experiment=experiment, key__in={key for _, key in keys})
    found = {(p.kind, p.key): p for p in rows if (p.kind, p.key) in keys}
    texts = {c.text for c in candidates if c.kind == Proposal.Kind.FACT and (c.kind, c.key) not in found}
    if texts:
        # A line we wrote back for an edited fact comes back through the runtime's files: it is that fact.
        versions = Fact.objects.filter(proposal__experiment=experiment, proposal__kind=Proposal.Kind.FACT, text__in=texts)
        by_text = {fact.text: fact.proposal for fact in versions.select_related("proposal")}
        for candidate in candidates:
            if candidate.kind == Proposal.Kind.FACT and candidate.text in by_text:
                found.setdefault((candidate.kind, candidate.key), by_text[candidate.text])
    return found


def _tool_versions(experiment: Experiment, candidates: list[curator.Candidate]) -> dict[str, int]:
    """The highest known recipe version per tool name among the candidates' names."""
    names = {str(c.details.get("name", "")) for c in candidates if c.kind == Proposal.Kind.TOOL}
    if not names:
        return {}
    rows = Proposal.objects.filter(experiment=experiment, kind=Proposal.Kind.TOOL, details__name__in=list(names))
    versions: dict[str, int] = {}
    for name, version in rows.values_list("details__name", "version"):
        versions[str(name)] = max(versions.get(str(name), 0), version)
    return versions


def runtime_file_candidates(file: WorkspaceFile) -> list[curator.Candidate]:
    """Proposals the runtime curator's own files stand for (one file of memory/tools|facts|antipatterns)."""
    ref = f"file:{file.relpath}"
    if file.kind == "fact":
        return [
            curator.Candidate(
                kind="fact",
                key=curator.fact_key(line.text),
                text=curator.clean_fact(line.text),
                evidence=[curator.EvidenceRef(ref=f"{ref}:{line.run_id}", run_id=line.run_id, note=line.day)],
            )
            for line in runtime_files.parse_facts_file(file.relpath, file.content)
        ]
    if file.kind == "tool":
        return [
            curator.Candidate(
                kind="tool",
                key=f"{version.name}#{version.content_hash}",
                text=f"{version.name}: {version.purpose or '(no description)'}",
                evidence=[curator.EvidenceRef(ref=f"{ref}#v{version.version}", run_id=version.run_id)],
                details={
                    "name": version.name,
                    "content_hash": version.content_hash,
                    "purpose": version.purpose,
                    "parameters": version.parameters,
                    "runtime_version": version.version,
                    "created_by": version.created_by,
                },
            )
            for version in runtime_files.parse_tool_recipe(file.relpath, file.content)
            if version.content_hash
        ]
    if file.kind == "antipattern":
        found = runtime_files.parse_antipattern(file.relpath, file.content)
        excerpt = " ".join(found.instructions.split())[:200] or "(no instructions)"
        return [
            curator.Candidate(
                kind="antipattern",
                key=found.sha,
                text=f"[{found.reason}] {excerpt}",
                evidence=[curator.EvidenceRef(ref=ref, run_id=found.run_id, iteration=found.iteration)],
                details={"reason": found.reason, "signature": found.signature, "instructions": found.instructions},
            )
        ]
    return []


def ingest_runtime_file(experiment: Experiment, file: WorkspaceFile) -> CurationSummary:
    """File handler: the runtime curator's files become proposals marked with that origin."""
    candidates = runtime_file_candidates(file)
    return apply_candidates(experiment=experiment, candidates=candidates, origin=Proposal.Origin.RUNTIME)


# ---------------------------------------------------------------- review


def _require_curator(experiment: Experiment, user: Any) -> None:
    if user is None or not getattr(user, "is_authenticated", False):
        raise ReviewRefused(403, "reviewer_required", "Reviews need a named user (a token must be issued --user).")
    if not role_at_least(experiment.role_of(user), Membership.Role.CURATOR):
        raise ReviewRefused(403, "forbidden", "Only curators and owners of this experiment may review or retract.")


@transaction.atomic
def review_proposal(
    *, proposal: Proposal, reviewer: Any, verdict: str, text: str = "", reason: str = "", via: str = "session"
) -> Proposal:
    """Record one reviewer's vote; at the experiment's quorum the proposal is approved (promoted) or rejected."""
    experiment = proposal.experiment
    _require_curator(experiment, reviewer)
    if verdict not in Vote.Verdict.values:
        raise ReviewRefused(422, "invalid_verdict", "The verdict must be 'approve' or 'reject'.")
    proposal = Proposal.objects.select_for_update().select_related("experiment").get(pk=proposal.pk)
    if proposal.status != Proposal.Status.PENDING:
        raise ReviewRefused(409, "already_decided", f"This proposal is already {proposal.status}.")
    if proposal.votes.filter(reviewer=reviewer).exists():
        raise ReviewRefused(409, "already_voted", "You have already voted on this proposal.")
    edited = text.strip() if verdict == Vote.Verdict.APPROVE else ""
    if edited == proposal.text.strip():
        edited = ""
    Vote.objects.create(
        proposal=proposal, reviewer=reviewer, verdict=verdict, text=edited, reason=reason.strip(), via=via[:120]
    )
    votes = list(proposal.votes.select_related("reviewer").order_by("created_at", "pk"))
    quorum = max(1, experiment.review_quorum or 1)
    approvals = [vote for vote in votes if vote.verdict == Vote.Verdict.APPROVE]
    rejections = [vote for vote in votes if vote.verdict == Vote.Verdict.REJECT]
    if len(approvals) >= quorum:
        chosen = edited or next((vote.text for vote in reversed(approvals) if vote.text), "")
        _promote(proposal, approvals, chosen, reviewer)
    elif len(rejections) >= quorum:
        _reject(proposal, rejections)
    _announce(experiment)
    return proposal


def _usernames(votes: list[Vote]) -> str:
    return ", ".join(vote.reviewer.get_username() for vote in votes)[:500]


def _next_fact_version(proposal: Proposal) -> int:
    latest = proposal.facts.aggregate(top=Max("version"))["top"]
    return (latest or 0) + 1


def _memory_with(proposal: Proposal, *, version: int) -> str:
    current = current_long_term(proposal.experiment)
    line = promoted_line(text=proposal.promoted_text, proposal_id=proposal.pk, version=version)
    return upsert_promoted(current.content if current else "", kind=proposal.kind, proposal_id=proposal.pk, line=line)


def _promote(proposal: Proposal, approvals: list[Vote], edited: str, actor: Any) -> None:
    proposal.edited_text = edited
    proposal.status = Proposal.Status.APPROVED
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["edited_text", "status", "decided_at", "updated_at"])
    version = _next_fact_version(proposal)
    document = write_long_term_version(
        experiment=proposal.experiment,
        content=_memory_with(proposal, version=version),
        reason=f"Promote {proposal.kind} {proposal.short_id}: {proposal.promoted_text[:200]}",
        source="promotion",
        author=actor,
    )
    Fact.objects.create(proposal=proposal, version=version, text=proposal.promoted_text, memory_version=document.version, author=actor)
    FactEvent.objects.create(
        proposal=proposal, action=FactEvent.Action.PROMOTE, actor=actor, actor_label=actor.get_username(),
        reason="; ".join(vote.reason for vote in approvals if vote.reason)[:2000], memory_version=document.version,
    )  # fmt: skip
    Decision.objects.create(
        proposal=proposal,
        outcome=Decision.Outcome.APPROVED,
        text=proposal.promoted_text,
        reason="; ".join(vote.reason for vote in approvals if vote.reason)[:2000],
        decided_by=_usernames(approvals),
        memory_version=document.version,
    )
    memory_event("update_memory", experiment=proposal.experiment, **{"awp.review.status": "approved", "awp.proposal.id": proposal.pk, "awp.proposal.kind": proposal.kind,
                 "awp.memory.tier": "long_term", "awp.fact.version": version, "awp.memory.version": document.version, "awp.review.votes": len(approvals)})  # fmt: skip
    _schedule_writeback(proposal.experiment, "promotion")


def _reject(proposal: Proposal, rejections: list[Vote]) -> None:
    proposal.status = Proposal.Status.REJECTED
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decided_at", "updated_at"])
    Decision.objects.create(
        proposal=proposal,
        outcome=Decision.Outcome.REJECTED,
        reason="; ".join(vote.reason for vote in rejections if vote.reason)[:2000],
        decided_by=_usernames(rejections),
    )
    memory_event("update_memory", experiment=proposal.experiment, **{"awp.review.status": "rejected", "awp.proposal.id": proposal.pk, "awp.proposal.kind": proposal.kind, "awp.review.votes": len(rejections)})
    if proposal.origin == Proposal.Origin.RUNTIME and proposal.kind == Proposal.Kind.FACT:
        # The runtime already wrote this fact where the next run reads it: write-back takes it out.
        _schedule_writeback(proposal.experiment, "rejection")


@transaction.atomic
def retract_proposal(*, proposal: Proposal, actor: Any, reason: str = "") -> Proposal:
    """Take a promoted item out of long-term memory: a new MEMORY.md version and a retracted Fact version."""
    _require_curator(proposal.experiment, actor)
    proposal = Proposal.objects.select_for_update().select_related("experiment").get(pk=proposal.pk)
    if proposal.status != Proposal.Status.APPROVED:
        raise ReviewRefused(409, "not_promoted", f"Only promoted items can be retracted; this one is {proposal.status}.")
    current = current_long_term(proposal.experiment)
    document = write_long_term_version(
        experiment=proposal.experiment,
        content=remove_promoted(current.content if current else "", proposal.pk),
        reason=f"Retract {proposal.kind} {proposal.short_id}: {reason or proposal.promoted_text[:200]}"[:500],
        source="retraction",
        author=actor,
    )
    proposal.status = Proposal.Status.RETRACTED
    proposal.decided_at = timezone.now()
    proposal.save(update_fields=["status", "decided_at", "updated_at"])
    Fact.objects.create(
        proposal=proposal,
        version=_next_fact_version(proposal),
        text=proposal.promoted_text,
        state=Fact.State.RETRACTED,
        memory_version=document.version,
        author=actor,
    )
    Decision.objects.create(
        proposal=proposal,
        outcome=Decision.Outcome.RETRACTED,
        reason=reason,
        decided_by=actor.get_username(),
        memory_version=document.version,
    )
    _schedule_writeback(proposal.experiment, "retraction")
    _announce(proposal.experiment)
    return proposal


@transaction.atomic
def edit_promoted(*, proposal: Proposal, actor: Any, text: str, reason: str = "") -> Proposal:
    """Change the text of a promoted item: Fact version +1 and a new MEMORY.md version."""
    _require_curator(proposal.experiment, actor)
    proposal = Proposal.objects.select_for_update().select_related("experiment").get(pk=proposal.pk)
    text = text.strip()
    if proposal.status != Proposal.Status.APPROVED:
        raise ReviewRefused(409, "not_promoted", f"Only promoted items can be edited; this one is {proposal.status}.")
    if not text:
        raise ReviewRefused(422, "empty_text", "The edited text must not be empty.")
    if text == proposal.promoted_text:
        return proposal
    proposal.edited_text = "" if text == proposal.text else text
    proposal.save(update_fields=["edited_text", "updated_at"])
    version = _next_fact_version(proposal)
    document = write_long_term_version(
        experiment=proposal.experiment,
        content=_memory_with(proposal, version=version),
        reason=f"Edit {proposal.kind} {proposal.short_id}: {reason or text[:200]}"[:500],
        source="promotion",
        author=actor,
    )
    Fact.objects.create(proposal=proposal, version=version, text=text, memory_version=document.version, author=actor)
    Decision.objects.create(
        proposal=proposal,
        outcome=Decision.Outcome.EDITED,
        text=text,
        reason=reason,
        decided_by=actor.get_username(),
        memory_version=document.version,
    )
    memory_event("update_memory", experiment=proposal.experiment, **{"awp.review.status": "edited", "awp.proposal.id": proposal.pk, "awp.proposal.kind": proposal.kind,
                 "awp.memory.tier": "long_term", "awp.fact.version": version, "awp.memory.version": document.version})  # fmt: skip
    _schedule_writeback(proposal.experiment, "promotion")
    _announce(proposal.experiment)
    return proposal


def bulk_review(*, experiment: Experiment, ids: list[int], reviewer: Any, verdict: str, reason: str = "") -> dict[str, Any]:
    """Vote on several pending proposals at once; each is its own transaction, refusals are reported per id."""
    done: list[int] = []
    refused: dict[int, str] = {}
    for proposal in Proposal.objects.filter(experiment=experiment, pk__in=ids).order_by("pk"):
        try:
            review_proposal(proposal=proposal, reviewer=reviewer, verdict=verdict, reason=reason)
            done.append(proposal.pk)
        except ReviewRefused as refusal:
            refused[proposal.pk] = refusal.code
    return {"done": done, "refused": refused}


# ---------------------------------------------------------------- side effects after commit


def _schedule_writeback(experiment: Experiment, trigger: str) -> None:
    if not (experiment.writeback_enabled and experiment.workspace_path):
        return
    from memory.curation.writeback import write_back

    experiment_id = experiment.pk
    transaction.on_commit(lambda: write_back(experiment_id=experiment_id, trigger=trigger), robust=True)


def _announce(experiment: Experiment) -> None:
    experiment_id = experiment.pk
    transaction.on_commit(lambda: announce_experiment_changed(experiment_id=experiment_id, what="review"), robust=True)


# ---------------------------------------------------------------- proposals by agents


PROPOSABLE_KINDS = (Proposal.Kind.FACT, Proposal.Kind.TOOL, Proposal.Kind.ANTIPATTERN)
STATEMENT_MAX_CHARS = 2000


def agent_proposal_key(kind: str, statement: str) -> str:
    """The proposal key of an agent's statement: a fact as the curator keys it, other kinds by their text."""
    if kind == Proposal.Kind.FACT:
        return curator.fact_key(statement)
    return f"agent:{curator.antipattern_key(' '.join(statement.split()))}"


@transaction.atomic
def propose_item(
    *, experiment: Experiment, kind: str, statement: str, agent_id: str, client: str, via: str,
    source: str = "", evidence: str = "", run_id: str = "", idempotency_key: str = "",
) -> tuple[Proposal, bool]:
    """An agent proposes a fact, tool or antipattern: it waits in the Review queue (never written to MEMORY.md here).

    Returns (proposal, created). The same statement from several agents is one proposal with one piece of
    evidence per proposer; a repeated `idempotency_key` from the same caller (`via`) returns its first proposal.
    """
    if kind not in PROPOSABLE_KINDS:
        raise ReviewRefused(422, "invalid_kind", "kind must be fact, tool or antipattern.")
    statement = statement.strip()
    if not statement or len(statement) > STATEMENT_MAX_CHARS:
        raise ReviewRefused(422, "invalid_statement", f"statement must be 1 to {STATEMENT_MAX_CHARS} characters.")
    # The experiment row lock (the one apply_candidates takes) serialises concurrent proposers of one experiment.
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    ref = f"agent:{via}:{idempotency_key}"[:400] if idempotency_key else ""
    if ref:
        earlier = Evidence.objects.filter(proposal__experiment=experiment, ref=ref).select_related("proposal").first()
        if earlier is not None:
            return earlier.proposal, False
    key = agent_proposal_key(kind, statement)
    existed = Proposal.objects.filter(experiment=experiment, kind=kind, key=key).exists()
    text = curator.clean_fact(statement) if kind == Proposal.Kind.FACT else statement
    note = f"proposed by {agent_id} via {client}"[:300]
    details = {"proposed_by": {"agent_id": agent_id, "client": client, "via": via}, "source": source, "evidence": evidence}
    candidate = curator.Candidate(
        kind=kind, key=key, text=text, details=details,
        evidence=[curator.EvidenceRef(ref=ref or f"agent:{via}:{uuid.uuid4().hex}"[:400], run_id=run_id, note=note)],
    )  # fmt: skip
    apply_candidates(experiment=experiment, candidates=[candidate], origin=Proposal.Origin.AGENT)
    return Proposal.objects.get(experiment=experiment, kind=kind, key=key), not existed


def proposal_status(proposal: Proposal) -> dict[str, Any]:
    """pending | approved (with the MEMORY.md version it was promoted into) | rejected (with the reason) | retracted."""
    answer: dict[str, Any] = {"proposal_id": proposal.pk, "status": proposal.status, "kind": proposal.kind}
    decision = proposal.decisions.order_by("-created_at", "-pk").first()
    if proposal.status == Proposal.Status.APPROVED and decision is not None:
        answer.update(memory_version=decision.memory_version, text=proposal.promoted_text, decided_by=decision.decided_by)
    elif proposal.status in (Proposal.Status.REJECTED, Proposal.Status.RETRACTED) and decision is not None:
        answer.update(reason=decision.reason, decided_by=decision.decided_by, memory_version=decision.memory_version)
    return answer
