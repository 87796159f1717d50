"""Where things are in an AWP folder: detect its kind and list its runs, source files and memory files."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

WORKFLOW = "workflow"
EXPERIMENTS_ROOT = "experiments_root"
DAG = "dag"

ITERATION_FILES = {
    "manager_decision.json": "iteration.decision",
    "budget_snapshot.json": "iteration.budget",
    "validation.json": "iteration.validation",
    "critique.json": "iteration.critique",
}
DELEGATION_FILES = {
    "envelope.json": "worker.spawn",
    "result.json": "worker.complete",
    "tool_calls.json": "worker.tool_calls",
    "critique.json": "worker.critique",
}
# Written progressively and then rewritten by DelegationLoopRunner.log_iteration (awp-agents 1.0.56).
REWRITTEN_FILES = {"manager_decision.json", "budget_snapshot.json", "envelope.json", "result.json", "tool_calls.json"}
MEMORY_DIRS = {"tools": "tool", "facts": "fact", "antipatterns": "antipattern"}
DAILY_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}\.md$")
ITERATION_DIR = re.compile(r"^\d+$")


@dataclass(frozen=True)
class RunDir:
    """A run found on disk; `relpath` is its run directory relative to the workflow dir ('' when none)."""

    run_id: str
    relpath: str
    parent_run_id: str | None = None
    depth: int = 0
    parent_worker: str = ""
    engine: str = "delegation_loop"
    has_manifest: bool = False


@dataclass(frozen=True)
class SourceFile:
    """One file that yields ledger events: a whole JSON file (`kind` = event kind) or a JSONL stream."""

    relpath: str
    run_id: str
    kind: str  # an event kind for JSON files; "jsonl:metric" | "jsonl:log" | "jsonl:tool" | "jsonl:board" for streams
    iteration: int | None = None
    worker: str = ""
    depth: int = 0
    order: tuple[int, ...] = (0,)
    # The runtime writes some iteration files twice (progressively, then again when the iteration ends);
    # a follower should wait until one of these exists before taking the file as final.
    final_after: tuple[str, ...] = ()

    @property
    def is_jsonl(self) -> bool:
        return self.kind.startswith("jsonl:")


@dataclass(frozen=True)
class MemoryFile:
    """A workspace memory file (kind long_term | daily | tool | fact | antipattern)."""

    relpath: str
    kind: str


@dataclass
class WorkflowScan:
    runs: dict[str, RunDir] = field(default_factory=dict)
    files: list[SourceFile] = field(default_factory=list)
    memory: list[MemoryFile] = field(default_factory=list)
    protocol_path: str | None = None


def detect_kind(path: Path) -> str | None:
    """Which AWP folder `path` is: an experiments root, a workflow dir (delegation loop), a DAG workflow, or None."""
    if (path / "experiment.json").is_file() or any(path.glob("*/experiment.json")):
        return EXPERIMENTS_ROOT
    if any(path.glob("workspace/runs/*/run_manifest.json")) or (path / "workspace" / "blackboard").is_dir():
        return WORKFLOW
    if any(path.glob("data/state/*/*.json")):
        return DAG
    if (path / "workspace").is_dir() or (path / "workflow.awp.yaml").is_file():
        return WORKFLOW
    return None


def experiment_dirs(root: Path) -> list[Path]:
    """Experiment folders under an experiments root (the root itself when it holds experiment.json)."""
    if (root / "experiment.json").is_file():
        return [root]
    return sorted(p.parent for p in root.glob("*/experiment.json"))


def task_dirs(experiment_dir: Path) -> list[Path]:
    """Task folders (tasks/NNN-slug with task.json) of an experiment folder, in task order."""
    return sorted(p.parent for p in experiment_dir.glob("tasks/*/task.json"))


def task_workflow_dirs(task_dir: Path) -> list[Path]:
    """Workflow dirs of a task: seed/, refinement iterations and optimisation epoch runs that hold AWP runs."""
    found = [task_dir / "seed"] if (task_dir / "seed").is_dir() else []
    found += sorted(p for p in task_dir.glob("refinements/*/iter_*") if p.is_dir())
    found += sorted(p for p in task_dir.glob("optimizations/*/epoch_*/runs/*") if p.is_dir())
    return found


def _iteration_number(name: str) -> int | None:
    return int(name) if ITERATION_DIR.match(name) else None


def _visible(names: list[str]) -> list[str]:
    # The runtime writes JSON via <file>.tmp + os.replace: a .tmp is never a finished file.
    return sorted(name for name in names if not name.endswith(".tmp"))


def _scan_run_dir(root: Path, run_dir: Path, run: RunDir, scan: WorkflowScan) -> None:
    rel = run.relpath
    names = _visible(os.listdir(run_dir)) if run_dir.is_dir() else []
    if "run_manifest.json" in names:
        scan.files.append(SourceFile(f"{rel}/run_manifest.json", run.run_id, "run.start", depth=run.depth, order=(0,)))
    if "metrics.jsonl" in names:
        scan.files.append(SourceFile(f"{rel}/metrics.jsonl", run.run_id, "jsonl:metric", depth=run.depth, order=(2,)))
    if "digest" in names and (run_dir / "digest").is_dir():
        for name in _visible(os.listdir(run_dir / "digest")):
            if name.endswith(".json"):
                scan.files.append(SourceFile(f"{rel}/digest/{name}", run.run_id, "digest", depth=run.depth, order=(3,)))
    if "iterations" in names and (run_dir / "iterations").is_dir():
        for iteration_name in _visible(os.listdir(run_dir / "iterations")):
            number = _iteration_number(iteration_name)
            if number is None:
                continue
            _scan_iteration(root, run_dir / "iterations" / iteration_name, f"{rel}/iterations/{iteration_name}", number, run, scan)
    if "run_completion.json" in names:
        scan.files.append(SourceFile(f"{rel}/run_completion.json", run.run_id, "run.complete", depth=run.depth, order=(9,)))


def _scan_iteration(root: Path, it_dir: Path, rel: str, number: int, run: RunDir, scan: WorkflowScan) -> None:
    names = _visible(os.listdir(it_dir))
    # validation.json is the last file the runtime writes when it closes an iteration.
    settled = (f"{rel}/validation.json", f"{run.relpath}/run_completion.json")
    for position, (name, kind) in enumerate(ITERATION_FILES.items()):
        if name in names:
            final_after = settled if name in REWRITTEN_FILES else ()
            scan.files.append(SourceFile(f"{rel}/{name}", run.run_id, kind, iteration=number, depth=run.depth, order=(1, number, 0, position), final_after=final_after))
    if "delegations" not in names or not (it_dir / "delegations").is_dir():
        return
    for worker in _visible(os.listdir(it_dir / "delegations")):
        worker_dir = it_dir / "delegations" / worker
        if not worker_dir.is_dir():
            continue
        worker_names = _visible(os.listdir(worker_dir))
        for position, (name, kind) in enumerate(DELEGATION_FILES.items()):
            if name in worker_names:
                final_after = settled if name in REWRITTEN_FILES else ()
                scan.files.append(
                    SourceFile(
                        f"{rel}/delegations/{worker}/{name}",
                        run.run_id,
                        kind,
                        iteration=number,
                        worker=worker,
                        depth=run.depth,
                        order=(1, number, 1, position),
                        final_after=final_after,
                    )
                )
        if "runs" in worker_names and (worker_dir / "runs").is_dir():
            for sub_id in _visible(os.listdir(worker_dir / "runs")):
                sub_dir = worker_dir / "runs" / sub_id
                if not sub_dir.is_dir():
                    continue
                child = RunDir(
                    run_id=sub_id,
                    relpath=f"{rel}/delegations/{worker}/runs/{sub_id}",
                    parent_run_id=run.run_id,
                    depth=run.depth + 1,
                    parent_worker=worker,
                    has_manifest=(sub_dir / "run_manifest.json").is_file(),
                )
                scan.runs[sub_id] = child
                _scan_run_dir(root, sub_dir, child, scan)


def scan_workflow(root: Path) -> WorkflowScan:
    """List every run, event source and memory file of a workflow dir (delegation loop and DAG alike)."""
    scan = WorkflowScan()
    if (root / "workflow.awp.yaml").is_file():
        scan.protocol_path = "workflow.awp.yaml"
    runs_dir = root / "workspace" / "runs"
    stubs: list[str] = []
    if runs_dir.is_dir():
        for run_id in _visible(os.listdir(runs_dir)):
            run_dir = runs_dir / run_id
            if not run_dir.is_dir():
                continue
            if (run_dir / "run_manifest.json").is_file() or (run_dir / "iterations").is_dir():
                run = RunDir(run_id=run_id, relpath=f"workspace/runs/{run_id}", has_manifest=(run_dir / "run_manifest.json").is_file())
                scan.runs[run_id] = run
                _scan_run_dir(root, run_dir, run, scan)
            else:
                stubs.append(run_id)
    # Sub-managers keep their digests in a top-level stub dir; they belong to the nested run of that id.
    for run_id in stubs:
        run = scan.runs.get(run_id) or RunDir(run_id=run_id, relpath="")
        scan.runs.setdefault(run_id, run)
        digest_dir = runs_dir / run_id / "digest"
        if digest_dir.is_dir():
            for name in _visible(os.listdir(digest_dir)):
                if name.endswith(".json"):
                    scan.files.append(SourceFile(f"workspace/runs/{run_id}/digest/{name}", run_id, "digest", depth=run.depth, order=(3,)))
    _scan_logs(root, scan)
    _scan_blackboard(root, scan)
    _scan_dag(root, scan)
    _scan_memory(root, scan)
    return scan


def _scan_logs(root: Path, scan: WorkflowScan) -> None:
    logs = root / "logs"
    if not logs.is_dir():
        return
    for run_id in _visible(os.listdir(logs)):
        log_dir = logs / run_id
        if not log_dir.is_dir():
            continue
        _add_log_streams(log_dir, f"logs/{run_id}", run_id, scan)
        for sub in _visible(os.listdir(log_dir)):
            # Sub-manager logs: logs/<root>/sub_<worker>__<sub_run_id>/
            if sub.startswith("sub_") and "__" in sub and (log_dir / sub).is_dir():
                _add_log_streams(log_dir / sub, f"logs/{run_id}/{sub}", sub.rsplit("__", 1)[1], scan)


def _add_log_streams(log_dir: Path, rel: str, run_id: str, scan: WorkflowScan) -> None:
    depth = scan.runs[run_id].depth if run_id in scan.runs else 0
    if (log_dir / "events.jsonl").is_file():
        scan.files.append(SourceFile(f"{rel}/events.jsonl", run_id, "jsonl:log", depth=depth, order=(4,)))
    if (log_dir / "tool_calls.jsonl").is_file():
        scan.files.append(SourceFile(f"{rel}/tool_calls.jsonl", run_id, "jsonl:tool", depth=depth, order=(5,)))


def _scan_blackboard(root: Path, scan: WorkflowScan) -> None:
    board = root / "workspace" / "blackboard"
    if not board.is_dir():
        return
    for name in _visible(os.listdir(board)):
        if name.endswith(".jsonl"):
            run_id = name[: -len(".jsonl")]
            depth = scan.runs[run_id].depth if run_id in scan.runs else 0
            scan.files.append(SourceFile(f"workspace/blackboard/{name}", run_id, "jsonl:board", depth=depth, order=(6,)))


def _scan_dag(root: Path, scan: WorkflowScan) -> None:
    state = root / "data" / "state"
    if not state.is_dir():
        return
    for run_id in _visible(os.listdir(state)):
        run_dir = state / run_id
        if not run_dir.is_dir():
            continue
        scan.runs.setdefault(run_id, RunDir(run_id=run_id, relpath=f"data/state/{run_id}", engine="dag", has_manifest=True))
        # Listed by name only: the importer applies them in the runtime's order, which their contents give
        # (experiments.awp.timing.runtime_key), never by mtime or name.
        names = [n for n in _visible(os.listdir(run_dir)) if n.endswith(".json")]
        for position, name in enumerate(names):
            scan.files.append(SourceFile(f"data/state/{run_id}/{name}", run_id, "state.snapshot", worker=name[:-5], order=(1, position)))


def _scan_memory(root: Path, scan: WorkflowScan) -> None:
    if (root / "workspace" / "MEMORY.md").is_file():
        scan.memory.append(MemoryFile("workspace/MEMORY.md", "long_term"))
    daily = root / "workspace" / "memory"
    if daily.is_dir():
        scan.memory.extend(MemoryFile(f"workspace/memory/{n}", "daily") for n in _visible(os.listdir(daily)) if DAILY_NAME.match(n))
    for folder, kind in MEMORY_DIRS.items():
        directory = root / "memory" / folder
        if directory.is_dir():
            scan.memory.extend(MemoryFile(f"memory/{folder}/{n}", kind) for n in _visible(os.listdir(directory)) if n.endswith(".md"))
