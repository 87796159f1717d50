"""AWP folders → the ledger: one pass over a folder (import) or repeated passes (watch), resumable by cursors.

Files map to events through the pure readers in experiments.awp; everything lands through
experiments.ingest.append_events. A file's events, its cursor and its problems are written in one
transaction, so a process killed at any point resumes exactly: no event twice, none missed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils.text import slugify

from experiments.awp import layout
from experiments.awp.digests import check_digest
from experiments.awp.events import EventSpec, file_event, line_event, parse_time
from experiments.awp.tail import tail_jsonl
from experiments.awp.timing import Read, append_order, graph_rank, stamp
from experiments.ingest import append_events
from experiments.models import (
    BoardPost,
    Digest,
    Event,
    Experiment,
    IngestCursor,
    IngestProblem,
    Run,
    Task,
    WorkspaceFile,
)
from experiments.projections import ProjectionContext, handle_workspace_file
from experiments.projections import WorkspaceFile as WorkspaceFileIn
from experiments.protocol import ProtocolError, parse_protocol
from state.declared import StoreWatch

# In watch mode a JSON file that does not parse yet may still be being written by hand (the runtime
# writes atomically); it becomes a problem once it has been left alone this long.
SETTLE_SECONDS = 2.0


@dataclass
class PassStats:
    new_events: int = 0
    new_problems: int = 0
    new_files: int = 0
    touched_runs: set[int] = field(default_factory=set)


@dataclass
class ImportSummary:
    runs: int
    events: int
    board_posts: int
    digests: int
    problems: int
    workspace_files: int
    new_events: int
    experiments: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "events": self.events,
            "board_posts": self.board_posts,
            "digests": self.digests,
            "problems": self.problems,
            "workspace_files": self.workspace_files,
            "new_events": self.new_events,
            "experiments": self.experiments,
        }


@dataclass
class _RunWork:
    run: Run
    reads: list[Read] = field(default_factory=list)
    cursors: list[tuple[str, int, int, str]] = field(default_factory=list)  # (abs path, offset, generation, sha)
    problems: list[IngestProblem] = field(default_factory=list)


class FolderImporter:
    """Imports one AWP folder (any of the three kinds); keep the instance to follow the folder (watch)."""

    def __init__(self, root: Path, *, experiment_slug: str | None = None, source: str = "import", final: bool = True) -> None:
        self.root = root.resolve()
        self.experiment_slug = experiment_slug
        self.ctx = ProjectionContext(strict=False, source=source)
        self.final = final
        self._stat_cache: dict[str, tuple[int, int]] = {}
        self._ranks: dict[str, tuple[int, dict[str, int]]] = {}
        self._stores = StoreWatch()
        self.experiments: dict[int, Experiment] = {}
        self.run_pks: set[int] = set()
        # When a file read too early (JSON still settling) must be read again: a watcher comes back then,
        # even if nothing else changes in the folder.
        self.recheck_at: float | None = None

    # ---- the pass ---------------------------------------------------------------------------------

    def sync(self, progress: Callable[[int], None] | None = None, total: Callable[[int], None] | None = None) -> PassStats:
        """One pass over the folder: ingest whatever is new since the cursors."""
        stats = PassStats()
        self.recheck_at = None
        kind = layout.detect_kind(self.root)
        if kind == layout.EXPERIMENTS_ROOT:
            for experiment_dir in layout.experiment_dirs(self.root):
                self._sync_experiment_dir(experiment_dir, stats, progress, total)
        elif kind is not None:
            experiment = self._experiment_for_folder()
            self._sync_workflow(self.root, experiment, None, stats, progress, total)
        return stats

    def _experiment_for_folder(self) -> Experiment:
        slug = self.experiment_slug or slugify(self.root.name)[:80] or "imported"
        experiment, _ = Experiment.objects.get_or_create(slug=slug, defaults={"name": self.experiment_slug or self.root.name})
        self.experiments[experiment.pk] = experiment
        return experiment

    def _sync_experiment_dir(self, experiment_dir: Path, stats: PassStats, progress: Any, total: Any) -> None:
        manifest = _read_json(experiment_dir / "experiment.json")
        manifest = manifest if isinstance(manifest, dict) else {}
        external = str(manifest.get("experiment_id") or experiment_dir.name)
        if self.experiment_slug:
            experiment, _ = Experiment.objects.get_or_create(slug=self.experiment_slug, defaults={"name": self.experiment_slug})
        else:
            experiment = Experiment.objects.filter(external_id=external[:64]).first()
            if experiment is None:
                slug = slugify(manifest.get("name") or external)[:70] or "experiment"
                if Experiment.objects.filter(slug=slug).exists():
                    slug = f"{slug}-{slugify(external)[-8:]}"
                experiment = Experiment.objects.create(slug=slug, name=str(manifest.get("name") or external)[:200], external_id=external[:64])
        changed = False
        for attr, value in (("external_id", external[:64]), ("goal", str(manifest.get("goal") or ""))):
            if value and not getattr(experiment, attr):
                setattr(experiment, attr, value)
                changed = True
        if changed:
            experiment.save()
        self.experiments[experiment.pk] = experiment
        for task_dir in layout.task_dirs(experiment_dir):
            task = self._sync_task(experiment, task_dir)
            for workflow_dir in layout.task_workflow_dirs(task_dir):
                self._sync_workflow(workflow_dir, experiment, task, stats, progress, total)
            self._sync_best(task, task_dir)

    def _sync_task(self, experiment: Experiment, task_dir: Path) -> Task:
        data = _read_json(task_dir / "task.json")
        data = data if isinstance(data, dict) else {}
        name = task_dir.name
        number = data.get("task_number") if isinstance(data.get("task_number"), int) else int(name.split("-", 1)[0] or 0) if name[:3].isdigit() else 0
        slug = name.split("-", 1)[1] if "-" in name else name
        task, _ = Task.objects.update_or_create(
            experiment=experiment,
            number=number,
            defaults={
                "slug": slug[:200],
                "external_id": str(data.get("task_id") or name)[:200],
                "mode": data.get("mode") if data.get("mode") in Task.Mode.values else Task.Mode.SEED,
                "prompt": str(data.get("user_prompt") or ""),
                "feedback": str(data.get("user_feedback") or ""),
                "inputs": data.get("inputs") if isinstance(data.get("inputs"), list) else [],
            },
        )
        return task

    def _sync_best(self, task: Task, task_dir: Path) -> None:
        best = _read_json(task_dir / "BEST" / "manifest.json")
        if not isinstance(best, dict) or not best.get("winner_run_id"):
            return
        run = Run.objects.filter(experiment=task.experiment, run_id=str(best["winner_run_id"])).first()
        loss = best.get("loss") if isinstance(best.get("loss"), int | float) else None
        Task.objects.filter(pk=task.pk).update(best_run=run, best_reason=str(best.get("reason") or "")[:32], best_loss=loss, best_manifest=best)
        if run is not None and loss is not None and run.loss != loss:
            Run.objects.filter(pk=run.pk).update(loss=loss)

    # ---- one workflow dir -------------------------------------------------------------------------

    def _sync_workflow(self, workflow_dir: Path, experiment: Experiment, task: Task | None, stats: PassStats, progress: Any, total: Any) -> None:
        scan = layout.scan_workflow(workflow_dir)
        if scan.protocol_path and not experiment.protocol_yaml:
            self._adopt_protocol(experiment, workflow_dir / scan.protocol_path, stats)
        self._learn_secret_store(experiment, workflow_dir, stats)  # before any text of the pass is stored
        runs = self._ensure_runs(experiment, task, scan, workflow_dir)
        if total:
            total(len(scan.files) + len(scan.memory))
        cursors = {c.path: c for c in IngestCursor.objects.filter(experiment=experiment, folder=str(workflow_dir))}
        rank = self._graph_rank(workflow_dir, scan)
        work: dict[str, _RunWork] = {}
        files = sorted(scan.files, key=lambda f: (runs[f.run_id].depth, f.run_id, f.order, f.relpath))
        for source in files:
            item = work.setdefault(source.run_id, _RunWork(run=runs[source.run_id]))
            self._read_source(workflow_dir, source, cursors.get(str(workflow_dir / source.relpath)), item)
            if progress:
                progress(1)
        for item in work.values():
            if item.reads or item.cursors or item.problems:
                self._commit(item, str(workflow_dir), rank, stats)
        self._sync_memory(experiment, workflow_dir, scan, runs, stats, progress)

    def _graph_rank(self, workflow_dir: Path, scan: layout.WorkflowScan) -> dict[str, int]:
        """The DAG's agents in dependency order, from the folder's own workflow.awp.yaml (cached by mtime)."""
        if not scan.protocol_path:
            return {}
        path = workflow_dir / scan.protocol_path
        try:
            signature = path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        cached = self._ranks.get(str(path))
        if cached is None or cached[0] != signature:
            try:
                protocol = parse_protocol(path.read_text(encoding="utf-8", errors="replace"))
            except ProtocolError:
                protocol = {}
            cached = self._ranks[str(path)] = (signature, graph_rank(protocol))
        return cached[1]

    def _adopt_protocol(self, experiment: Experiment, path: Path, stats: PassStats) -> None:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            parsed = parse_protocol(text)
        except ProtocolError as exc:
            self._problem_now(experiment, None, path, "protocol_invalid", str(exc), stats)
            return
        experiment.protocol_yaml, experiment.protocol = text, parsed
        experiment.save(update_fields=["protocol_yaml", "protocol", "updated_at"])

    def _learn_secret_store(self, experiment: Experiment, workflow_dir: Path, stats: PassStats) -> None:
        """The runtime's own secrets (secrets.yaml, .env) become known secrets: masked by value in any shape.
        A value that cannot be masked by value, or a store that cannot be read, is a problem naming the entry."""
        reading = self._stores.learn(experiment, workflow_dir)
        if reading is None:
            return
        problems = [self._problem(None, workflow_dir / file, "secret_not_maskable", f"{name}: {message}", key=name) for file, name, message in reading.unmaskable]
        problems += [self._problem(None, workflow_dir / file, "secret_store_unreadable", f"{file}: {why}; its secrets are not known") for file, why in reading.unreadable]
        for problem in problems:
            problem.experiment = experiment
        if problems:
            IngestProblem.objects.bulk_create(problems, ignore_conflicts=True)
            stats.new_problems += len(problems)

    def _ensure_runs(self, experiment: Experiment, task: Task | None, scan: layout.WorkflowScan, workflow_dir: Path) -> dict[str, Run]:
        ids = list(scan.runs)
        existing = {run.run_id: run for run in Run.objects.filter(experiment=experiment, run_id__in=ids)}
        ordered = sorted(scan.runs.values(), key=lambda r: r.depth)
        for found in ordered:
            parent = existing.get(found.parent_run_id) if found.parent_run_id else None
            wanted = {
                "parent_id": parent.pk if parent else None,
                "depth": found.depth,
                "parent_worker": found.parent_worker,
                "engine": "dag" if found.engine == "dag" else "delegation_loop",
                "role": "submanager" if found.depth else ("seed" if task else ""),
                "source_path": str(workflow_dir / found.relpath) if found.relpath else str(workflow_dir),
                "task_id": task.pk if task else None,
            }
            run = existing.get(found.run_id)
            if run is None:
                Run.objects.bulk_create([Run(experiment=experiment, run_id=found.run_id, **wanted)], ignore_conflicts=True)
                run = Run.objects.get(experiment=experiment, run_id=found.run_id)
                existing[found.run_id] = run
            elif found.relpath and any(getattr(run, k) != v for k, v in wanted.items()):
                # A stub run (digests seen before its manifest) learns its place in the tree later.
                Run.objects.filter(pk=run.pk).update(**wanted)
                for key, value in wanted.items():
                    setattr(run, key, value)
            self.run_pks.add(run.pk)
        for source in scan.files:
            if source.run_id not in existing:  # logs or a blackboard of a run with no run dir (yet)
                run, _ = Run.objects.get_or_create(experiment=experiment, run_id=source.run_id, defaults={"source_path": str(workflow_dir)})
                existing[source.run_id] = run
                self.run_pks.add(run.pk)
        return existing

    def _read_source(self, workflow_dir: Path, source: layout.SourceFile, cursor: IngestCursor | None, item: _RunWork) -> None:
        path = workflow_dir / source.relpath
        try:
            stat = path.stat()
        except FileNotFoundError:
            return
        signature = (stat.st_size, stat.st_mtime_ns)
        if self._stat_cache.get(str(path)) == signature:
            return
        if not self.final and source.final_after and not any((workflow_dir / rel).exists() for rel in source.final_after):
            return  # the iteration is still open: the runtime will rewrite this file when it closes it
        if source.is_jsonl:
            done = self._read_jsonl(workflow_dir, source, path, cursor, item, stat.st_mtime)
        else:
            done = self._read_json_file(workflow_dir, source, path, cursor, item, stat.st_mtime)
        if done:
            self._stat_cache[str(path)] = signature

    def _read_json_file(self, workflow_dir: Path, source: layout.SourceFile, path: Path, cursor: IngestCursor | None, item: _RunWork, mtime: float) -> bool:
        raw = path.read_bytes()
        sha = hashlib.sha256(raw).hexdigest()
        if cursor is not None and cursor.content_sha == sha:
            return True
        if cursor is not None and cursor.content_sha:
            item.problems.append(self._problem(item.run, path, "file_rewritten", "This file changed after it was ingested; the ledger keeps the first version.", key=sha))
            item.cursors.append((str(path), 0, 0, sha))
            return True
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if not self.final and time.time() - mtime < SETTLE_SECONDS:
                settled = mtime + SETTLE_SECONDS
                self.recheck_at = min(self.recheck_at or settled, settled)
                return False
            item.problems.append(self._problem(item.run, path, "invalid_json", f"Not valid JSON: {exc}", key=sha))
            item.cursors.append((str(path), 0, 0, sha))
            return True
        if source.kind == "digest":
            claimed = path.stem
            computed, error = check_digest(data, claimed)
            if error:
                item.problems.append(self._problem(item.run, path, "digest_sha_mismatch", error, key=sha))
                item.cursors.append((str(path), 0, 0, sha))
                return True
            item.reads.append(Read(file_event(source, data, digest_sha=computed), (source.order, source.relpath, 0), parse_time(mtime)))
        else:
            item.reads.append(Read(file_event(source, data), (source.order, source.relpath, 0), parse_time(mtime)))
        item.cursors.append((str(path), 0, 0, sha))
        return True

    def _read_jsonl(self, workflow_dir: Path, source: layout.SourceFile, path: Path, cursor: IngestCursor | None, item: _RunWork, mtime: float) -> bool:
        offset = cursor.offset if cursor else 0
        generation = cursor.generation if cursor else 0
        result = tail_jsonl(path, offset)
        if result.truncated:
            item.problems.append(
                self._problem(item.run, path, "file_truncated", f"The file shrank below the {offset} bytes already ingested; reading it again from the start.", key=f"g{generation}")
            )
            generation += 1
            offset = 0
            result = tail_jsonl(path, 0)
        for line in result.lines:
            if line.error:
                item.problems.append(self._problem(item.run, path, "invalid_line", f"Line at byte {line.offset}: {line.error}", offset=line.offset, key=f"g{generation}"))
                continue
            spec = line_event(source, line.value, line.offset, generation=generation)
            item.reads.append(Read(spec, (source.order, source.relpath, generation, line.offset), parse_time(mtime)))
        if self.final and result.pending_bytes:
            item.problems.append(
                self._problem(item.run, path, "incomplete_line", f"{result.pending_bytes} bytes after the last newline (a line cut short); not imported.", offset=result.next_offset, key=f"g{generation}")
            )
        if result.next_offset != offset or generation != (cursor.generation if cursor else 0) or cursor is None:
            item.cursors.append((str(path), result.next_offset, generation, ""))
        return not result.pending_bytes

    def _problem(self, run: Run | None, path: Path, code: str, message: str, *, offset: int | None = None, key: str = "") -> IngestProblem:
        experiment_id = run.experiment_id if run else None
        return IngestProblem(
            experiment_id=experiment_id,
            run=run,
            path=_relative(path, self.root),
            offset=offset,
            code=code,
            message=message,
            dedupe_key=f"{path}|{code}|{offset}|{key}"[:1200],
        )

    def _problem_now(self, experiment: Experiment, run: Run | None, path: Path, code: str, message: str, stats: PassStats) -> None:
        problem = self._problem(run, path, code, message)
        problem.experiment = experiment
        IngestProblem.objects.bulk_create([problem], ignore_conflicts=True)
        stats.new_problems += 1

    def _commit(self, item: _RunWork, folder: str, rank: dict[str, int], stats: PassStats) -> None:
        # A one-shot import appends a finished run in time order; a watched run keeps the order files arrived in.
        reads = append_order(stamp(item.reads), rank, finished=self.final)
        with transaction.atomic():
            result = append_events(item.run, [_event_in(read.spec) for read in reads], ctx=self.ctx)
            for path, offset, generation, sha in item.cursors:
                IngestCursor.objects.update_or_create(experiment_id=item.run.experiment_id, path=path, defaults={"folder": folder, "offset": offset, "generation": generation, "content_sha": sha})
            if item.problems:
                IngestProblem.objects.bulk_create(item.problems, ignore_conflicts=True)
        stats.new_events += result.new_count
        stats.new_problems += len(item.problems)
        stats.touched_runs.add(item.run.pk)

    # ---- workspace memory files -------------------------------------------------------------------

    def _sync_memory(self, experiment: Experiment, workflow_dir: Path, scan: layout.WorkflowScan, runs: dict[str, Run], stats: PassStats, progress: Any) -> None:
        if not scan.memory:
            return
        prefix = _relative(workflow_dir, self.root)
        root_runs = [run for run in runs.values() if run.depth == 0]
        latest = max(root_runs, key=lambda r: r.run_id) if root_runs else None
        known = set(WorkspaceFile.objects.filter(experiment=experiment, workflow_dir=str(workflow_dir)).values_list("relpath", "sha256"))
        for memory in scan.memory:
            if progress:
                progress(1)
            path = workflow_dir / memory.relpath
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            signature = (stat.st_size, stat.st_mtime_ns)
            if self._stat_cache.get(str(path)) == signature:
                continue
            raw = path.read_bytes()
            sha = hashlib.sha256(raw).hexdigest()
            relpath = memory.relpath if prefix in ("", ".") else f"{prefix}/{memory.relpath}"
            self._stat_cache[str(path)] = signature
            if (relpath, sha) in known:
                continue
            content = raw.decode("utf-8", errors="replace")
            with transaction.atomic():
                _row, created = WorkspaceFile.objects.get_or_create(
                    experiment=experiment,
                    relpath=relpath,
                    sha256=sha,
                    defaults={"run": latest, "kind": memory.kind, "content": content, "workflow_dir": str(workflow_dir)},
                )
                if created:
                    handle_workspace_file(
                        experiment, WorkspaceFileIn(kind=memory.kind, relpath=relpath, content=content, sha256=sha, workflow_dir=str(workflow_dir), run=latest)
                    )
                    stats.new_files += 1
            known.add((relpath, sha))

    # ---- totals -----------------------------------------------------------------------------------

    def summary(self, new_events: int) -> ImportSummary:
        """Totals for what this folder holds in the database, plus what the last passes added."""
        run_pks = list(self.run_pks)
        experiments = list(self.experiments.values())
        return ImportSummary(
            runs=len(run_pks),
            events=Event.objects.filter(run_id__in=run_pks).count(),
            board_posts=BoardPost.objects.filter(run_id__in=run_pks).count(),
            digests=Digest.objects.filter(run_id__in=run_pks).count(),
            problems=IngestProblem.objects.filter(Q(run_id__in=run_pks) | Q(dedupe_key__startswith=f"{self.root}/")).count(),
            workspace_files=WorkspaceFile.objects.filter(experiment__in=experiments, workflow_dir__startswith=str(self.root)).count(),
            new_events=new_events,
            experiments=[e.slug for e in experiments],
        )


def _event_in(spec: EventSpec) -> EventSpec:
    """The spec clipped to the ledger's column widths (names in files can be longer than a worker id should be)."""
    return dataclasses.replace(spec, dedupe_key=spec.dedupe_key[:300], agent_id=spec.agent_id[:200])


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def import_folders(*, paths: list[Path], experiment_slug: str | None = None, progress: Any = None, total: Any = None) -> ImportSummary:
    """One pass over each folder; the summary adds up all of them."""
    summaries = []
    for path in paths:
        importer = FolderImporter(path, experiment_slug=experiment_slug)
        stats = importer.sync(progress=progress, total=total)
        summaries.append(importer.summary(stats.new_events))
    return ImportSummary(
        runs=sum(s.runs for s in summaries),
        events=sum(s.events for s in summaries),
        board_posts=sum(s.board_posts for s in summaries),
        digests=sum(s.digests for s in summaries),
        problems=sum(s.problems for s in summaries),
        workspace_files=sum(s.workspace_files for s in summaries),
        new_events=sum(s.new_events for s in summaries),
        experiments=sorted({slug for s in summaries for slug in s.experiments}),
    )

