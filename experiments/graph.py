"""The run as a graph (pure): a DAG workflow's nodes from workflow.awp.yaml with each agent's status, and a
delegation loop's manager → iteration → worker tree with sub-managers' own trees nested under their worker.

Layout is not done here: static/js/graph.js hands these nodes and edges to dagre (vendored) in the browser;
the template lists the same nodes as text, which is both the fallback and what the script reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass
class Node:
    id: str
    label: str
    kind: str  # dag-agent | manager | iteration | worker
    status: str = ""  # complete | running | pending | failed | "" (unknown)
    agent: str = ""  # the Timeline's worker filter for this node ("" = not filterable)
    run_pk: int | None = None  # the run whose Timeline the node filters
    duration_s: float | None = None
    confidence: float | None = None
    parent: str = ""  # tree parent (delegation) — also an edge
    depends_on: list[str] = field(default_factory=list)
    depth: int = 0
    href: str = ""  # the Timeline filtered to `agent` (set by the view layer, which knows the URLs)


@dataclass(frozen=True)
class AgentFacts:
    """What the ledger says about one DAG agent: when its state snapshot was written and its confidence."""

    finished_at: datetime | None
    confidence: float | None


def dag_steps(protocol: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(node id, agent, depends_on) of orchestration.graph in workflow.awp.yaml; [] when it has none."""
    orchestration = protocol.get("orchestration") if isinstance(protocol, dict) else None
    graph = orchestration.get("graph") if isinstance(orchestration, dict) else None
    steps = []
    for item in graph if isinstance(graph, list) else []:
        if isinstance(item, dict) and item.get("id"):
            deps = item.get("depends_on") if isinstance(item.get("depends_on"), list) else []
            steps.append((str(item["id"]), str(item.get("agent") or item["id"]), [str(d) for d in deps]))
    return steps


def dag_graph(steps: list[tuple[str, str, list[str]]], facts: dict[str, AgentFacts], *, run_pk: int, run_started: datetime | None, run_status: str) -> list[Node]:
    """One node per step (plus agents that wrote state but are not in the graph), status and duration from facts."""
    nodes: list[Node] = []
    known = {step_id for step_id, _, _ in steps}
    agent_of = {step_id: agent for step_id, agent, _ in steps}
    for step_id, agent, deps in steps:
        fact = facts.get(agent) or facts.get(step_id)
        if fact is not None:
            status = "complete"
        elif run_status == "running" and all((agent_of.get(d, d) in facts) or (d in facts) for d in deps):
            status = "running"
        else:
            status = "pending" if run_status == "running" else "not run"
        duration = None
        if fact is not None and fact.finished_at is not None:
            starts = [f.finished_at for d in deps if (f := facts.get(agent_of.get(d, d))) is not None and f.finished_at is not None]
            begin = max(starts) if starts else run_started
            if begin is not None:
                duration = max(0.0, (fact.finished_at - begin).total_seconds())
        nodes.append(Node(step_id, step_id if step_id == agent else f"{step_id} ({agent})", "dag-agent", status, agent, run_pk, duration, fact.confidence if fact else None, depends_on=[d for d in deps if d in known]))
    for agent, fact in sorted(facts.items()):
        if agent not in known and agent not in agent_of.values():
            nodes.append(Node(agent, agent, "dag-agent", "complete", agent, run_pk, None, fact.confidence))
    return nodes


@dataclass(frozen=True)
class WorkerRow:
    """One delegation of a run's iteration: the worker, whether it finished, its confidence, its sub-manager run."""

    run_pk: int
    iteration: int
    worker: str
    status: str
    confidence: float | None = None
    duration_s: float | None = None
    child_run_pk: int | None = None


@dataclass(frozen=True)
class RunInfo:
    pk: int
    run_id: str
    status: str
    duration_s: float | None


def delegation_tree(root: RunInfo, runs: dict[int, RunInfo], workers: list[WorkerRow], *, max_depth: int = 8) -> list[Node]:
    """Manager → iteration → worker nodes for `root`, each sub-manager's run nested under its worker node."""
    by_run: dict[int, list[WorkerRow]] = {}
    for row in workers:
        by_run.setdefault(row.run_pk, []).append(row)
    nodes: list[Node] = []
    seen: set[int] = set()

    def add_run(info: RunInfo, parent: str, depth: int) -> None:
        if info.pk in seen:
            return
        seen.add(info.pk)
        manager_id = f"r{info.pk}"
        nodes.append(Node(manager_id, f"manager · {info.run_id}", "manager", info.status, "", info.pk, info.duration_s, parent=parent, depth=depth))
        for iteration in sorted({row.iteration for row in by_run.get(info.pk, [])}):
            iteration_id = f"{manager_id}-i{iteration}"
            nodes.append(Node(iteration_id, f"iteration {iteration}", "iteration", "", "", info.pk, parent=manager_id, depth=depth))
            for row in sorted((r for r in by_run[info.pk] if r.iteration == iteration), key=lambda r: r.worker):
                worker_id = f"{iteration_id}-{row.worker}"
                nodes.append(Node(worker_id, row.worker, "worker", row.status, row.worker, info.pk, row.duration_s, row.confidence, parent=iteration_id, depth=depth))
                child = runs.get(row.child_run_pk) if row.child_run_pk else None
                if child is not None and depth < max_depth:
                    add_run(child, worker_id, depth + 1)

    add_run(root, "", 0)
    return nodes


def edges_of(nodes: list[Node]) -> list[tuple[str, str]]:
    """(from, to) pairs: dependencies of DAG steps and tree parents of delegation nodes."""
    ids = {n.id for n in nodes}
    out = [(dep, n.id) for n in nodes for dep in n.depends_on if dep in ids]
    return out + [(n.parent, n.id) for n in nodes if n.parent and n.parent in ids]


@dataclass(frozen=True)
class SpanRow:
    """One OpenTelemetry span of a run's ledger: its ids, and for an agent span the agent and how it ended."""

    seq: int
    span_id: str
    parent_span_id: str
    agent: str = ""  # set for agent spans (worker.complete events of an OTel run)
    status: str = ""
    duration_s: float | None = None


def span_agent_tree(root: RunInfo, spans: list[SpanRow], *, max_depth: int = 16) -> list[Node]:
    """An OTel run's agents as a delegation tree: each agent span under the nearest agent span above it
    (through tool and model spans in between), the outermost ones under the run."""
    parent_of = {row.span_id: row.parent_span_id for row in spans}
    agents = {row.span_id: row for row in spans if row.agent}
    manager_id = f"r{root.pk}"
    placed: list[tuple[int, int, Node]] = []
    for row in agents.values():
        above, depth, hops = parent_of.get(row.span_id, ""), 0, 0
        while above and above not in agents and hops < 64:
            above, hops = parent_of.get(above, ""), hops + 1
        chain = above
        while chain in agents and depth < max_depth:
            depth += 1
            chain = parent_of.get(chain, "")
            while chain and chain not in agents and hops < 128:
                chain, hops = parent_of.get(chain, ""), hops + 1
        status = "failed" if row.status == "error" else "complete"
        parent = f"s{above}" if above in agents else manager_id
        placed.append((depth, row.seq, Node(f"s{row.span_id}", row.agent, "worker", status, row.agent, root.pk, row.duration_s, parent=parent, depth=depth)))
    nodes = [Node(manager_id, f"run · {root.run_id}", "manager", root.status, "", root.pk, root.duration_s)]
    return nodes + [node for _, _, node in sorted(placed, key=lambda item: (item[0], item[1]))]
