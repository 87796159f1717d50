"""Export an experiment's curated memory with its provenance as JSON Lines, and import it elsewhere.

One record per line, `{"type": ..., ...}`: header, memory_version (MEMORY.md versions), proposal (facts,
tools, antipatterns with lifecycle fields), fact_version, evidence, vote, decision, event (lifecycle),
exposure, trial (with its arms). Proposals are named by (kind, key), runs by the runtime's run id, people by
username, so an archive means the same thing in another deployment. Every text is redacted on the way out.
Import is idempotent: a proposal already there only gains what it lacks.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from experiments.models import Experiment
from memory.curation.models import (
    Decision,
    Evidence,
    Exposure,
    Fact,
    FactEvent,
    FactTrial,
    Proposal,
    TrialArm,
    Vote,
)
from memory.curation.render import MARKER, marked_proposals
from memory.models import MemoryDocument
from state.services_redaction import redactor_for

FORMAT = "awp-memory/1"


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def _parse(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def _name(proposal: Proposal | None) -> list[str] | None:
    return [proposal.kind, proposal.key] if proposal is not None else None


def _portable(details: dict[str, Any], names: dict[int, Any]) -> dict[str, Any]:
    """Details with this database's proposal ids replaced by names (kind, key) another deployment understands."""
    out = dict(details or {})
    if isinstance(out.get("supersedes"), int):
        out["supersedes"] = names.get(out["supersedes"])
    if isinstance(out.get("contradicts"), list):
        out["contradicts"] = [
            {**c, "ref": ["proposal", *names[int(c["ref"][9:])]]} if isinstance(c, dict) and str(c.get("ref", "")).startswith("proposal:")
            and c["ref"][9:].isdigit() and int(c["ref"][9:]) in names else c
            for c in out["contradicts"]
        ]  # fmt: skip
    return out


def _local(details: dict[str, Any], found: dict[Any, Proposal]) -> dict[str, Any]:
    """Names in imported details back to this database's proposal ids (dropped when the named item is absent)."""
    out = dict(details or {})
    if isinstance(out.get("supersedes"), list):
        known = found.get(tuple(out["supersedes"]))
        out["supersedes"] = known.pk if known else None
    if isinstance(out.get("contradicts"), list):
        local = []
        for c in out["contradicts"]:
            ref = c.get("ref") if isinstance(c, dict) else None
            if isinstance(ref, list) and len(ref) == 3:
                known = found.get((ref[1], ref[2]))
                if known is None:
                    continue
                c = {**c, "ref": f"proposal:{known.pk}"}
            local.append(c)
        out["contradicts"] = local
    return out


def export_records(experiment: Experiment) -> Iterator[dict[str, Any]]:
    """Every record of the experiment's archive, redacted for it, in an order import can follow."""
    redact = redactor_for(experiment)
    yield {"type": "header", "format": FORMAT, "experiment": experiment.slug, "exported_at": _when(timezone.now())}
    proposals = list(experiment.proposals.select_related("superseded_by").order_by("pk"))
    names = {p.pk: _name(p) for p in proposals}
    for doc in experiment.memory_documents.select_related("author").order_by("version"):
        # MEMORY.md lines carry `<!-- proposal:<id> -->` markers of this database: the names travel beside them.
        markers = {str(pk): names[pk] for pk in marked_proposals(doc.content) if pk in names}
        yield {"type": "memory_version", "version": doc.version, "content": redact.text(doc.content), "reason": redact.text(doc.reason),
               "source": doc.source, "author": doc.author_label or (doc.author.get_username() if doc.author else ""),
               "created_at": _when(doc.created_at), "markers": markers}  # fmt: skip
    for p in proposals:
        yield {"type": "proposal", "name": _name(p), "text": redact.text(p.text), "edited_text": redact.text(p.edited_text),
               "status": p.status, "origin": p.origin, "version": p.version, "details": redact.value(_portable(p.details, names)),
               "is_pinned": p.is_pinned, "valid_until": _when(p.valid_until), "retired_as": p.retired_as,
               "superseded_by": _name(p.superseded_by), "first_seen_at": _when(p.first_seen_at), "decided_at": _when(p.decided_at)}  # fmt: skip
    for f in Fact.objects.filter(proposal__in=proposals).select_related("proposal", "author").order_by("pk"):
        yield {"type": "fact_version", "proposal": _name(f.proposal), "version": f.version, "text": redact.text(f.text), "state": f.state,
               "memory_version": f.memory_version, "author": f.author.get_username() if f.author else "", "created_at": _when(f.created_at)}  # fmt: skip
    for e in Evidence.objects.filter(proposal__in=proposals).select_related("proposal").order_by("pk"):
        yield {"type": "evidence", "proposal": _name(e.proposal), "ref": redact.text(e.ref), "digest_sha": e.digest_sha,
               "run_id": redact.text(e.run_ref), "iteration": e.iteration, "note": redact.text(e.note), "created_at": _when(e.created_at)}  # fmt: skip
    for v in Vote.objects.filter(proposal__in=proposals).select_related("proposal", "reviewer").order_by("pk"):
        yield {"type": "vote", "proposal": _name(v.proposal), "reviewer": v.reviewer.get_username(), "verdict": v.verdict,
               "text": redact.text(v.text), "reason": redact.text(v.reason), "via": v.via, "created_at": _when(v.created_at)}  # fmt: skip
    for d in Decision.objects.filter(proposal__in=proposals).select_related("proposal").order_by("pk"):
        yield {"type": "decision", "proposal": _name(d.proposal), "outcome": d.outcome, "text": redact.text(d.text),
               "reason": redact.text(d.reason), "decided_by": d.decided_by, "memory_version": d.memory_version, "created_at": _when(d.created_at)}  # fmt: skip
    for ev in FactEvent.objects.filter(proposal__in=proposals).select_related("proposal", "related").order_by("pk"):
        yield {"type": "event", "proposal": _name(ev.proposal), "action": ev.action, "actor": ev.actor_label, "reason": redact.text(ev.reason),
               "related": _name(ev.related), "memory_version": ev.memory_version, "details": redact.value(ev.details), "created_at": _when(ev.created_at)}  # fmt: skip
    for x in Exposure.objects.filter(run__experiment=experiment).select_related("run", "proposal").order_by("pk"):
        yield {"type": "exposure", "run_id": redact.text(x.run.run_id), "proposal": _name(x.proposal), "item": redact.text(x.item),
               "channel": x.channel, "mode": x.mode, "agent_id": redact.text(x.agent_id), "memory_version": x.memory_version,
               "created_at": _when(x.created_at)}  # fmt: skip
    for t in FactTrial.objects.filter(proposal__in=proposals).select_related("proposal").order_by("pk"):
        arms = [{"index": a.index, "carried": a.carried, "run_id": redact.text(a.run.run_id) if a.run else None} for a in t.arms.select_related("run")]
        yield {"type": "trial", "proposal": _name(t.proposal), "runs_planned": t.runs_planned, "assignment": t.assignment, "seed": t.seed,
               "status": t.status, "started_by": t.started_by, "created_at": _when(t.created_at), "decided_at": _when(t.decided_at), "arms": arms}  # fmt: skip


def _relinked(content: str, markers: dict[str, Any], found: dict[Any, Proposal]) -> str:
    """MEMORY.md text with the exporting database's `proposal:<id>` markers turned into this database's ids."""

    def local(match: re.Match[str]) -> str:
        name = markers.get(match.group(1))
        known = found.get(tuple(name)) if isinstance(name, list) and len(name) == 2 else None
        return match.group(0).replace(f"proposal:{match.group(1)}", f"proposal:{known.pk}", 1) if known else match.group(0)

    return MARKER.sub(local, content)


class ArchiveError(Exception):
    """The archive cannot be read (not JSON Lines of this format)."""


@transaction.atomic
def import_records(experiment: Experiment, records: Iterable[dict[str, Any]], *, restore: bool = False) -> dict[str, Any]:
    """Import an archive into `experiment`: as pending proposals carrying their provenance, or with `restore`
    as they were (statuses, versions, MEMORY.md versions into an experiment without any, lifecycle, trials)."""
    Experiment.objects.select_for_update().filter(pk=experiment.pk).values_list("pk", flat=True).get()
    summary = {"proposals": 0, "proposals_known": 0, "fact_versions": 0, "evidence": 0, "votes": 0, "decisions": 0,
               "events": 0, "memory_versions": 0, "exposures": 0, "trials": 0, "skipped": 0}  # fmt: skip
    users = {u.get_username(): u for u in get_user_model().objects.all()}
    runs = dict(experiment.runs.values_list("run_id", "pk"))
    found = {(p.kind, p.key): p for p in experiment.proposals.all()}
    fresh_memory = not experiment.memory_documents.exists()
    source = ""
    links: list[tuple[Proposal, Any]] = []
    documents: list[dict[str, Any]] = []
    created: set[int] = set()

    def proposal_of(name: Any) -> Proposal | None:
        return found.get(tuple(name)) if isinstance(name, list) and len(name) == 2 else None  # type: ignore[arg-type]

    for record in records:
        kind = record.get("type")
        if kind == "header":
            if record.get("format") != FORMAT:
                raise ArchiveError(f"Not an {FORMAT} archive (format {record.get('format')!r}).")
            source = str(record.get("experiment", ""))
        elif kind == "memory_version":
            if restore and fresh_memory:
                documents.append(record)  # written once every proposal exists here: markers name this database's ids
            else:
                summary["skipped"] += 1
        elif kind == "proposal":
            name: tuple[str, str] = (str(record["name"][0]), str(record["name"][1]))
            if name in found:
                summary["proposals_known"] += 1
                continue
            details = _local(record.get("details") or {}, found)
            fields: dict[str, Any] = {"edited_text": record["edited_text"], "origin": record["origin"], "version": record["version"],
                                      "first_seen_at": _parse(record["first_seen_at"]) or timezone.now()}  # fmt: skip
            if restore:
                fields |= {"status": record["status"], "is_pinned": record["is_pinned"], "valid_until": _parse(record["valid_until"]),
                           "retired_as": record["retired_as"], "decided_at": _parse(record["decided_at"])}  # fmt: skip
            else:
                details["imported"] = {"from": source, "status": record["status"], "retired_as": record["retired_as"]}
            proposal = Proposal.objects.create(experiment=experiment, kind=name[0], key=name[1], text=record["text"], details=details, **fields)
            found[name] = proposal
            created.add(proposal.pk)
            if restore and record.get("superseded_by"):
                links.append((proposal, record["superseded_by"]))
            summary["proposals"] += 1
        elif kind == "evidence":
            owner = proposal_of(record["proposal"])
            if owner is None:
                continue
            _, made = Evidence.objects.get_or_create(proposal=owner, ref=record["ref"][:400], defaults={
                "digest_sha": record["digest_sha"], "run_id": runs.get(record["run_id"]), "run_ref": record["run_id"][:200],
                "iteration": record["iteration"], "note": record["note"][:300]})  # fmt: skip
            summary["evidence"] += made
        elif not restore:
            summary["skipped"] += 1
        else:
            summary[_restore_one(kind, record, proposal_of, created, users, runs)] += 1
    for proposal, target in links:
        proposal.superseded_by = proposal_of(target)
        proposal.save(update_fields=["superseded_by"])
    for record in documents:
        MemoryDocument.objects.create(experiment=experiment, version=record["version"],
                                      content=_relinked(record["content"], record.get("markers") or {}, found),
                                      reason=record["reason"][:500], source=record["source"], author_label=record["author"][:200],
                                      created_at=_parse(record["created_at"]) or timezone.now())  # fmt: skip
        summary["memory_versions"] += 1
    if restore and not fresh_memory:
        summary["memory_versions"] += _add_restored_lines(experiment, [p for p in found.values() if p.pk in created])
    return {"experiment": experiment.slug, "from": source, "restore": restore, **summary}


def _add_restored_lines(experiment: Experiment, restored: list[Proposal]) -> int:
    """An experiment with its own MEMORY.md gets the restored promoted items in one new version (or none)."""
    from memory.curation.render import marked_proposals, promoted_line, upsert_promoted
    from memory.longterm import current_long_term, write_long_term_version

    current = current_long_term(experiment)
    content = current.content if current else ""
    missing = [p for p in restored if p.status == Proposal.Status.APPROVED and p.pk not in marked_proposals(content)]
    for proposal in missing:
        version = max([f.version for f in proposal.facts.all()] or [1])
        line = promoted_line(text=proposal.promoted_text, proposal_id=proposal.pk, version=version)
        content = upsert_promoted(content, kind=proposal.kind, proposal_id=proposal.pk, line=line)
    if not missing:
        return 0
    write_long_term_version(experiment=experiment, content=content, reason=f"import of {len(missing)} restored item(s)",
                            source=MemoryDocument.Source.IMPORT, author_label="importer")  # fmt: skip
    return 1


def _restore_one(kind: Any, record: dict[str, Any], proposal_of: Any, created: set[int], users: dict[str, Any], runs: dict[str, int]) -> str:
    """Restore one record of a proposal this import created (a proposal already there keeps its own history)."""
    proposal = proposal_of(record.get("proposal"))
    if kind == "exposure":
        run = runs.get(record["run_id"])
        if run is None:
            return "skipped"
        item = f"proposal:{proposal.pk}" if proposal is not None else record["item"]  # ids are this database's
        _, made = Exposure.objects.get_or_create(run_id=run, item=item, channel=record["channel"], agent_id=record["agent_id"],
                                                 defaults={"proposal": proposal, "mode": record["mode"], "memory_version": record["memory_version"]})  # fmt: skip
        return "exposures" if made else "skipped"
    if proposal is None or proposal.pk not in created:
        return "skipped"
    when = _parse(record.get("created_at")) or timezone.now()
    if kind == "fact_version":
        Fact.objects.create(proposal=proposal, version=record["version"], text=record["text"], state=record["state"],
                            memory_version=record["memory_version"], author=users.get(record["author"]), created_at=when)  # fmt: skip
        return "fact_versions"
    if kind == "vote":
        reviewer = users.get(record["reviewer"])
        if reviewer is None:
            return "skipped"
        Vote.objects.create(proposal=proposal, reviewer=reviewer, verdict=record["verdict"], text=record["text"], reason=record["reason"],
                            via=record["via"], created_at=when)  # fmt: skip
        return "votes"
    if kind == "decision":
        Decision.objects.create(proposal=proposal, outcome=record["outcome"], text=record["text"], reason=record["reason"],
                                decided_by=record["decided_by"], memory_version=record["memory_version"], created_at=when)  # fmt: skip
        return "decisions"
    if kind == "event":
        FactEvent.objects.create(proposal=proposal, action=record["action"], actor_label=record["actor"][:200], reason=record["reason"],
                                 related=proposal_of(record.get("related")), memory_version=record["memory_version"],
                                 details=record["details"] or {}, created_at=when)  # fmt: skip
        return "events"
    if kind == "trial":
        trial = FactTrial.objects.create(proposal=proposal, runs_planned=record["runs_planned"], assignment=record["assignment"],
                                         seed=record["seed"], status=record["status"], started_by=record["started_by"],
                                         created_at=when, decided_at=_parse(record.get("decided_at")))  # fmt: skip
        TrialArm.objects.bulk_create([TrialArm(trial=trial, index=a["index"], carried=a["carried"], run_id=runs.get(a["run_id"] or ""))
                                      for a in record["arms"]])  # fmt: skip
        return "trials"
    return "skipped"
