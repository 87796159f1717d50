"""Child-process driver of the real AWP runtime (used by tests/awp_runtime.py; not a test module).

    python tests/awp_driver.py loop|cli|dag TARGET_DIR '{"task": ...}'
Prints one JSON line with what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODEL = "fake-model"

DAG_WORKFLOW = """\
awp: "1.0.0"
workflow:
  name: "facts-dag"
  version: "1.0.0"
  description: "Two agents: a researcher and an analyst."
orchestration:
  engine: "dag"
  graph:
    - id: "researcher"
      agent: "researcher"
      depends_on: []
      share_input: {}
    - id: "analyst"
      agent: "analyst"
      depends_on: ["researcher"]
      share_input: {}
  execution:
    mode: "sequential"
state:
  persistence:
    enabled: true
    path: "data/state"
  sharing:
    strategy: "selective"
    rules:
      - from_agent: "researcher"
        to_agents: ["analyst"]
        fields: ["findings", "summary"]
    never_share: ["internal_reasoning"]
    sensitive_fields: ["api_key"]
memory:
  enabled: true
  daily_log:
    enabled: true
    auto_write: true
    retention_days: 30
"""

AGENT_YAML = """\
awp_agent: "1.0.0"
identity:
  id: "{name}"
  role: "{name}"
  description: "FAKEDAG:{name} agent."
runtime:
  class_name: "Agent"
  strategy_folder: "workflow"
model:
  name: "fake-model"
  parameters:
    temperature: 0.0
prompt:
  system: "instructions/SYSTEM_PROMPT.md"
  user_template: "prompt/00_INTRO.md"
output:
  format: "json"
  contract:
    summary:
      type: "string"
      required: true
    confidence:
      type: "number"
      minimum: 0.0
      maximum: 1.0
      required: true
"""


def run_loop(target: Path, options: dict) -> dict:
    from awp.data.workflow import AgentWorkflow

    workflow = AgentWorkflow(
        inputs={},
        task=options.get("task", "Collect facts about the number 42."),
        model=MODEL,
        worker_model=MODEL,
        output_dir=str(target),
        critique_enabled=False,
        planning_enabled=False,
        diagnosis_enabled=False,
        strategy_switching_enabled=False,
        trace_enabled=options.get("trace", False),
        code_mode=False,
        tool_creation=False,
        sandbox="none",
        max_loops=options.get("max_loops", 6),
        max_wall_time=120,
    )
    result = workflow.run()
    return {"status": result.get("status") if isinstance(result, dict) else str(result)}


def run_cli(root: Path, options: dict) -> dict:
    env = dict(os.environ, AWP_EXPERIMENTS_ROOT=str(root))
    awp = [sys.executable, "-m", "awp"]

    def call(*args: str) -> dict:
        out = subprocess.run([*awp, *args], env=env, capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise SystemExit(f"awp {' '.join(args)} failed: {out.stdout}\n{out.stderr}")
        start = out.stdout.find("{")
        return json.JSONDecoder().raw_decode(out.stdout[start:])[0] if start >= 0 else {}

    experiment = call("experiment", "create", options.get("name", "facts-42"), "--goal", options.get("goal", "Learn about 42"))
    exp_id = experiment["experiment_id"]
    task = call("task", "create", exp_id, "Collect facts about the number 42.")
    task_id = task["task_id"]
    scratch = root / ".scratch"
    scratch.mkdir(exist_ok=True)
    run = call("run", str(scratch), "--target", f"{exp_id}:{task_id}", "--task", "Collect facts about the number 42.",
               "--model", MODEL, "--worker-model", MODEL)
    return {"experiment_id": exp_id, "task_id": task_id, **run}


def chain_workflow(agents: list[str]) -> str:
    """A sequential DAG where each agent depends on the one before it (names chosen by the caller)."""
    nodes = []
    for before, name in zip([None, *agents], agents, strict=False):
        depends = f'["{before}"]' if before else "[]"
        nodes.append(f'    - id: "{name}"\n      agent: "{name}"\n      depends_on: {depends}\n      share_input: {{}}\n')
    head, tail = DAG_WORKFLOW.split("  graph:\n", 1)
    return head + "  graph:\n" + "".join(nodes) + tail[tail.index("  execution:") :]


def run_dag(target: Path, options: dict) -> dict:
    agents = options.get("agents") or ["researcher", "analyst"]
    (target / "workflow.awp.yaml").write_text(chain_workflow(agents) if options.get("agents") else DAG_WORKFLOW)
    for name in agents:
        agent = target / "agents" / name
        (agent / "workflow" / "instructions").mkdir(parents=True, exist_ok=True)
        (agent / "workflow" / "prompt").mkdir(parents=True, exist_ok=True)
        (agent / "agent.awp.yaml").write_text(AGENT_YAML.format(name=name))
        (agent / "workflow" / "instructions" / "SYSTEM_PROMPT.md").write_text(f"You are FAKEDAG:{name}. Answer in JSON.\n")
        (agent / "workflow" / "prompt" / "00_INTRO.md").write_text("Task: {task}\n")
    from awp.runtime.runner import WorkflowRunner

    runner = WorkflowRunner(target, manager_model=MODEL, worker_model=MODEL)
    state = runner.run("Say something about 42")
    return {"keys": sorted(state.keys()) if isinstance(state, dict) else []}


def settle_directory_walks() -> None:
    """Work around a race inside awp-agents 1.0.56 (the newest on PyPI), found by this suite's flaky sub-manager test.

    Before a worker calls the model, the runtime lists the workspace for its prompt
    (`DelegationLoopRunner._build_directory_tree`): it lists a folder, then stats each file it listed. The runtime's
    own background writer stages every file as `<name>.tmp` and renames it into place, so a file staged and renamed
    between the listing and the stat raises FileNotFoundError and the worker fails before its first model call
    (about 1 run in 15 with two sub-managers, whose runners write beside each other's workers; the traceback ends
    in `size = entry.stat().st_size`). Upstream's fix would skip an entry that vanished; here the walk is taken
    again, so the listing the worker sees is still the runtime's own and what the runtime writes is unchanged.
    """
    from awp.runtime.delegation_loop_runner import DelegationLoopRunner

    walk = DelegationLoopRunner._build_directory_tree

    def settled(workspace: Path, output: Path, max_files: int = 60) -> str:
        for _ in range(50):
            try:
                return walk(workspace, output, max_files)
            except FileNotFoundError:  # a staged file renamed mid-walk: the folder has moved on, list it again
                continue
        return walk(workspace, output, max_files)

    DelegationLoopRunner._build_directory_tree = staticmethod(settled)  # type: ignore[method-assign]


def main() -> None:
    mode, target, options = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    target.mkdir(parents=True, exist_ok=True)
    settle_directory_walks()
    result = {"loop": run_loop, "cli": run_cli, "dag": run_dag}[mode](target, options)
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
