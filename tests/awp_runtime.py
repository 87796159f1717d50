"""Drive the real AWP runtime (awp-agents) against a scriptable fake OpenAI-compatible server on 127.0.0.1.

    llm = FakeLLM(Script(iterations=2, facts=["42 is even"])).start()
    run_delegation_loop(tmp_path / "wf", llm)          # a real AgentWorkflow run, in a subprocess
    llm.manager_prompts()                               # what the runtime sent the root manager
    llm.stop()

Fixtures: `fake_llm` (function scope, a fresh server per test). The runtime runs in a child process so its
environment (LLM_BASE_URL, HOME, AWP_* paths) never leaks into the test process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

MODEL = "fake-model"
_WORKER_MARK = re.compile(r"FAKEWORKER#(\d+)")
_DAG_MARK = re.compile(r"FAKEDAG:(\w+)")
_REFLECTION_MARK = "AWP-REFLECTION"  # memory.recall.REFLECTION_MARK: the dashboard asking for a belief
_JUDGE_MARK = "AWP-CONTRADICTION"  # memory.curation.contradictions.JUDGE_MARK: the dashboard asking a judge
_REFLECTING_AGENT = re.compile(r"^Agent: (\S+)$", re.M)
_SUB_MANAGER = re.compile(r"## Submanager task\nYou have been spawned as a sub-manager for `(\w+)`")

# What each DAG agent answers (the researcher's secret is there to test redaction end to end).
DAG_ANSWERS: dict[str, dict[str, Any]] = {
    "researcher": {
        "findings": ["42 is even", "42 = 6 x 7"],
        "summary": "Researched the number 42.",
        "internal_reasoning": "scratch notes nobody else should read",
        "api_key": "sk-test-SECRET-4242",
        "confidence": 0.9,
    },
    "analyst": {"analysis": "42 is a pronic number.", "summary": "Analysed the findings.", "score": 0.8, "confidence": 0.85},
}


@dataclass
class Script:
    """What the fake LLM answers.

    iterations: delegate iterations of the root manager before it completes.
    facts: worker summary per iteration (cycled); the digest keeps "<worker>: <summary>" as a key fact.
    confidences: worker confidence per iteration (cycled); < 0.3 makes the runtime record an antipattern.
    workers: worker ids per iteration (cycled).
    submanagers: in iteration 1 the root delegates this many sub-managers (as_submanager) instead of workers.
    open_questions: what each worker reports as open.
    extra_fields: extra keys merged into every worker result (e.g. a secret to test redaction).
    reflection_answer: what the dashboard's reflection prompt gets instead of a belief (to test malformed answers).
    """

    iterations: int = 2
    facts: list[str] = field(default_factory=lambda: ["FACT_ALPHA: 42 is even and equals 6 x 7."])
    confidences: list[float] = field(default_factory=lambda: [0.95])
    workers: list[str] = field(default_factory=lambda: ["fact_collector"])
    submanagers: int = 0
    open_questions: list[str] = field(default_factory=lambda: ["Is 42 also a pronic number?"])
    extra_fields: dict[str, Any] = field(default_factory=dict)
    delay_s: float = 0.0
    shapes: bool = False  # workers and DAG agents hand out SHAPED_SECRETS in every shape (see below)
    reflection_answer: str | None = None  # the dashboard's reflection prompt: None → a well-formed belief
    reflection_echo: bool = False  # the belief repeats the prompt's episodes (what a model may well do)
    # (marker, confidences with, confidences without): when the root manager's first prompt (its memory) holds
    # `marker`, it hands the marker to its workers, and workers whose prompt holds it report the first list
    # (cycled) instead of the second: a fact that measurably helps.
    boost: tuple[str, list[float], list[float]] | None = None
    judge_answer: str = '{"contradicts": true, "why": "warm is the opposite of cold"}'  # the contradiction judge's answer


def _text(messages: list[dict[str, Any]]) -> str:
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        out.append(str(content or ""))
    return "\n".join(out)


class FakeLLM:
    """A threaded HTTP server speaking just enough of /v1/chat/completions for the AWP runtime."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[dict[str, Any]] = []  # every request body, as it arrived
        self._lock = threading.Lock()
        self._root_calls = 0
        self._sub_calls: dict[str, int] = {}
        self._primed = False
        self._boosted = 0
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        handler = _handler_for(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reset(self, script: Script | None = None) -> None:
        """Start a new run: forget the root manager's iteration count (and optionally change the script)."""
        with self._lock:
            self._root_calls = 0
            self._sub_calls.clear()
            self._primed = False
            if script is not None:
                self.script = script

    def reflection_bodies(self) -> list[dict[str, Any]]:
        """The whole body of every reflection request, as it arrived."""
        with self._lock:
            return [b for b in self.bodies if _REFLECTION_MARK in _text(b.get("messages", []))]

    def reflection_prompts(self) -> list[str]:
        """The user messages of every reflection request the dashboard sent, in order."""
        return [r["user"] for r in self.requests if r["role"] == "reflection"]

    def manager_prompts(self) -> list[str]:
        """The user messages of every root-manager request, in order."""
        return [r["user"] for r in self.requests if r["role"] == "root_manager"]

    # -- decisions -------------------------------------------------------------------------------
    def decide(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        messages = body.get("messages", [])
        user = _text([m for m in messages if m.get("role") == "user"])
        first_user = _text([m for m in messages if m.get("role") == "user"][:1])
        everything = _text(messages)
        script = self.script
        if _JUDGE_MARK in everything:
            self._record("judge", user)
            return "judge", {"content": script.judge_answer}
        if _REFLECTION_MARK in everything:
            self._record("reflection", user)
            return "reflection", {"content": self._reflection(user)}
        if "## Worker Result" in first_user and "Validation Agent" in everything:
            # The runtime's LLM validation of a low-confidence (or partial sub-manager) result. It must not
            # count as a root-manager call: two sub-managers finishing together validated in a random order
            # and took the root's scripted decisions, so the root's run depended on thread timing.
            return "validator", {"content": json.dumps({"valid": True, "feedback": "Looks fine.", "suggestion": ""})}
        sub = _SUB_MANAGER.search(first_user)
        if "## Original Task" in first_user and sub:
            # Each sub-manager delegates on its own first call and completes afterwards, decided by its own
            # call count: the former test of "FACT_SUB" anywhere in the prompt also matched what a sibling
            # had already written (a late-starting sub-manager then completed without its worker).
            with self._lock:
                self._sub_calls[sub.group(1)] = call = self._sub_calls.get(sub.group(1), 0) + 1
            return "sub_manager", {"content": json.dumps(self._sub_delegate() if call == 1 else self._sub_complete())}
        if "## Original Task" in first_user:
            with self._lock:
                self._root_calls += 1
                call = self._root_calls
            self._record("root_manager", user)
            if call == 1 and script.boost:
                self._primed = script.boost[0] in everything
            if call > script.iterations:
                return "root_manager", {"content": json.dumps(self._complete())}
            return "root_manager", {"content": json.dumps(self._delegate(call))}
        dag = _DAG_MARK.search(everything)
        if dag:
            name = dag.group(1)
            answers = SHAPED_DAG_ANSWERS if script.shapes else DAG_ANSWERS
            return "dag_agent", {"content": json.dumps(answers.get(name) or {**GENERIC, "summary": f"{name} did its part."})}
        match = _WORKER_MARK.search(everything)
        if match and script.shapes:
            return "worker", self._shaped_worker_turn(body, messages)
        if match:
            return "worker", {"content": json.dumps(self._worker_result(int(match.group(1)), everything))}
        return "other", {"content": json.dumps(GENERIC)}

    def _reflection(self, user: str) -> str:
        if self.script.reflection_answer is not None:
            return self.script.reflection_answer
        if self.script.reflection_echo:
            listing = " ".join(line for line in user.splitlines() if re.match(r"^\d+\. ", line))
            return json.dumps({"belief": f"BELIEF: {listing}"[:1900]})
        agent = _REFLECTING_AGENT.search(user)
        episodes = len(re.findall(r"^\d+\. ", user, re.M))
        name = agent.group(1) if agent else "the agent"
        return json.dumps({"belief": f"BELIEF: {name} holds that 42 is even, after {episodes} episodes."})

    def _record(self, role: str, user: str) -> None:
        with self._lock:
            self.requests.append({"role": role, "user": user, "t": time.time()})

    def _delegate(self, iteration: int) -> dict[str, Any]:
        script = self.script
        if iteration == 1 and script.submanagers:
            delegations = [
                {
                    "worker_id": f"sub_research_{n}",
                    "instructions": f"Research part {n} of the number 42 with your own workers.",
                    "as_submanager": True,
                    "tools_allowed": [],
                    "output_contract": {"summary": "string", "confidence": "number"},
                }
                for n in range(1, script.submanagers + 1)
            ]
        else:
            worker = script.workers[(iteration - 1) % len(script.workers)]
            delegations = [
                {
                    "worker_id": worker,
                    "instructions": f"FAKEWORKER#{iteration}: collect facts about the number 42 (iteration {iteration})."
                    + (f" Known fact: {script.boost[0]}." if script.boost and self._primed else ""),
                    "tools_allowed": ["board.post", "board.read", "memory.write"] if script.shapes else [],
                    "output_contract": {"summary": "string", "confidence": "number"},
                }
            ]
        return {"decision": "delegate", "reasoning": f"Iteration {iteration}: need more facts.", "confidence": 0.5, "delegations": delegations}

    def _complete(self) -> dict[str, Any]:
        return {
            "decision": "complete",
            "reasoning": "The workers delivered the facts.",
            "confidence": 0.95,
            "final_result": {"summary": "42 is even and equals 6 x 7.", "confidence": 0.95},
        }

    def _sub_delegate(self) -> dict[str, Any]:
        return {
            "decision": "delegate",
            "reasoning": "Sub-manager needs one worker.",
            "confidence": 0.5,
            "delegations": [
                {
                    "worker_id": "sub_worker",
                    "instructions": "FAKEWORKER#0: FACT_SUB collect one fact about 42.",
                    "tools_allowed": [],
                    "output_contract": {"summary": "string", "confidence": "number"},
                }
            ],
        }

    def _sub_complete(self) -> dict[str, Any]:
        return {
            "decision": "complete",
            "reasoning": "Sub-worker done.",
            "confidence": 0.9,
            "final_result": {"summary": "FACT_SUB: 42 is a pronic number (6 x 7).", "confidence": 0.9},
        }

    def _shaped_worker_turn(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A worker that handles credentials: a board post, then a memory note, then its result (tool calls)."""
        offered = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        done = sum(1 for m in messages if m.get("role") == "tool")
        for step, (tool, arguments) in enumerate([("board_post", SHAPED_BOARD_POST), ("memory_write", SHAPED_MEMORY_WRITE)]):
            if done == step and tool in offered:
                call = {"id": f"call_{step}", "type": "function", "function": {"name": tool, "arguments": json.dumps(arguments)}}
                return {"content": None, "tool_calls": [call]}
        return {"content": json.dumps(SHAPED_WORKER_RESULT)}

    def _worker_result(self, iteration: int, everything: str) -> dict[str, Any]:
        script = self.script
        if script.delay_s:
            time.sleep(script.delay_s)
        if iteration == 0:
            summary, confidence = "FACT_SUB: 42 is a pronic number (6 x 7).", 0.9
        else:
            summary = script.facts[(iteration - 1) % len(script.facts)]
            confidence = script.confidences[(iteration - 1) % len(script.confidences)]
            if script.boost:
                marker, with_fact, without_fact = script.boost
                with self._lock:
                    self._boosted += 1
                    count = self._boosted
                chosen = with_fact if marker in everything else without_fact
                confidence = chosen[count % len(chosen)]
        return {
            "summary": summary,
            "findings": [summary],
            "open_questions": list(script.open_questions),
            "confidence": confidence,
            **script.extra_fields,
        }


# -- secrets in every shape (Script(shapes=True)) ------------------------------------------------------------
# Each value reaches the run folder in its own shape; a viewer or a read token must never see any of them.
SHAPED_SECRETS = {
    "nested_key": "SHAPED-nested-7c1f",  # api_key three levels down, inside a list of dicts (board payload)
    "bearer": "SHAPED-bearer-52aa",  # an HTTP Authorization header line inside a text field
    "dsn": "SHAPED-dsn-0e93",  # the password of a connection URL, in prose
    "env": "SHAPED-env-d4b8",  # `export AWS_SECRET_ACCESS_KEY=...` in a multi-line string
    "quoted": "SHAPED-quoted-1b6e",  # under `password` on the board, then quoted in a later summary
    "repr": "SHAPED-repr-93fd",  # a Python dict repr in a memory note
    "json_in_text": "SHAPED-jsontext-aa20",  # a JSON document serialized into a string field
    "multiline": "SHAPED-clientsecret-4d21",  # `client_secret = ...` inside a multi-line build log
    "prose_token": "SHAPED-prosetoken-8e07",  # under access_token, and quoted in a harmless summary
    "notes_repr": "SHAPED-ownerpw-61c3",  # {'owner_password': ...} nested under a harmless key (repr bullet)
}
SHAPED_BOARD_POST = {
    "topic": "credentials-check",
    "payload": {
        "services": [
            {"name": "search", "auth": {"kind": "key", "config": {"api_key": SHAPED_SECRETS["nested_key"]}}},
            {"name": "billing", "auth": {"kind": "none"}},
        ],
        "request_log": (
            "GET /v1/items HTTP/1.1\nHost: api.example.test\n"
            f"Authorization: Bearer {SHAPED_SECRETS['bearer']}\nAccept: application/json"
        ),
        "login": {"user": "svc-reader", "password": SHAPED_SECRETS["quoted"]},
    },
}
SHAPED_MEMORY_WRITE = {
    "content": "Worker note: connected with settings " + repr({"host": "db.internal", "secret": SHAPED_SECRETS["repr"], "port": 5432}),
    "target": "daily",
}
SHAPED_WORKER_RESULT = {
    "summary": (
        f"FACT_SHAPES: 42 is even. Logged in as svc-reader with password {SHAPED_SECRETS['quoted']}; "
        f"the warehouse answered at postgres://svc:{SHAPED_SECRETS['dsn']}@warehouse.internal:5432/facts."
    ),
    "setup_script": (
        "#!/bin/sh\nexport AWS_REGION=eu-west-1\n"
        f"export AWS_SECRET_ACCESS_KEY={SHAPED_SECRETS['env']}\npython collect.py --fast\n"
    ),
    "raw_config": json.dumps({"client": {"id": "c-17", "client_secret": SHAPED_SECRETS["json_in_text"]}}),
    "findings": ["42 is even", "42 = 6 x 7"],
    "confidence": 0.9,
}
# DAG agents: the runtime writes each result into data/state and into the daily log as `- **key**: value`
# bullets with nested values as Python reprs.
SHAPED_DAG_ANSWERS: dict[str, dict[str, Any]] = {
    "researcher": {
        "findings": ["42 is even", "42 = 6 x 7"],
        "summary": f"Researched 42. The auth header uses {SHAPED_SECRETS['prose_token']} for now.",
        "access_token": SHAPED_SECRETS["prose_token"],
        "notes": {"owner_password": SHAPED_SECRETS["notes_repr"], "public": "the door code is not here"},
        "build_log": f"step1 ok\nclient_secret = {SHAPED_SECRETS['multiline']}\nstep2 ok",
        "confidence": 0.9,
    },
    "analyst": {
        "analysis": "42 is a pronic number.",
        "summary": "Analysed the findings.",
        "services": [{"name": "search", "config": {"api_key": SHAPED_SECRETS["nested_key"]}}],
        "confidence": 0.85,
    },
}


GENERIC = {
    "score": 0.9,
    "passed": True,
    "verdict": "pass",
    "confidence": 0.9,
    "summary": "Looks fine.",
    "defects": [],
    "prescriptions": [],
    "critical_count": 0,
}


def _handler_for(llm: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            return

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            self._send_json({"data": [{"id": MODEL}]})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            with llm._lock:
                llm.bodies.append(body)
            _kind, message = llm.decide(body)
            usage = {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            if body.get("stream"):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunk = {"id": "x", "object": "chat.completion.chunk", "model": body.get("model"),
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": message.get("content") or ""}, "finish_reason": None}]}
                last = {"id": "x", "object": "chat.completion.chunk", "model": body.get("model"),
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage}
                for part in (chunk, last):
                    self.wfile.write(b"data: " + json.dumps(part).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                return
            self._send_json({
                "id": "fake", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
                "usage": usage,
            })

        def _send_json(self, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


# -- driving the runtime -----------------------------------------------------------------------------

DRIVER = Path(__file__).with_name("awp_driver.py")


def runtime_env(llm: FakeLLM, home: Path) -> dict[str, str]:
    """Environment for a runtime child process: the fake LLM, a scratch HOME, no Django settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE_URL"))}
    home.mkdir(parents=True, exist_ok=True)
    env.update({
        "LLM_BASE_URL": llm.url,
        "LLM_API_KEY": "fake-key",
        "HOME": str(home),
        "AWP_UI_DB_PATH": str(home / "awp_ui.db"),
        "PYTHONUNBUFFERED": "1",
        "NO_COLOR": "1",
    })
    return env


def _run_driver(mode: str, target: Path, llm: FakeLLM, *, background: bool = False, timeout: float = 120, **options: Any):  # type: ignore[no-untyped-def]
    target.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, str(DRIVER), mode, str(target), json.dumps(options)]
    env = runtime_env(llm, target.parent / f".home-{target.name}")
    if background:
        return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    result = subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"the AWP runtime failed ({mode}):\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def run_delegation_loop(workflow_dir: Path, llm: FakeLLM, *, task: str = "Collect facts about the number 42.", background: bool = False, **options: Any):  # type: ignore[no-untyped-def]
    """One AgentWorkflow (delegation loop) run into workflow_dir; returns the runtime's result summary.

    With background=True returns the Popen (the runtime keeps writing while the test does other things).
    """
    llm.reset()
    return _run_driver("loop", workflow_dir, llm, background=background, task=task, **options)


def run_with_submanagers(workflow_dir: Path, llm: FakeLLM, *, count: int = 2, **options: Any) -> dict[str, Any]:
    """A delegation loop whose root delegates `count` sub-managers in its first iteration."""
    llm.reset(Script(**{**llm.script.__dict__, "submanagers": count}))
    return _run_driver("loop", workflow_dir, llm, task="Research the number 42 with sub-managers.", **options)


def run_experiment_cli(root: Path, llm: FakeLLM, *, name: str = "facts-42", goal: str = "Learn about 42") -> dict[str, Any]:
    """The experiment hierarchy through the `awp` CLI: experiment create, task create, run --target."""
    llm.reset()
    return _run_driver("cli", root, llm, name=name, goal=goal)


def run_dag(workflow_dir: Path, llm: FakeLLM, *, agents: list[str] | None = None) -> dict[str, Any]:
    """A DAG workflow with a memory section; writes data/state/<run>/.

    By default two agents (researcher → analyst); `agents` makes a chain of those agents in that order instead.
    """
    llm.reset()
    return _run_driver("dag", workflow_dir, llm, **({"agents": agents} if agents else {}))


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    llm = FakeLLM().start()
    yield llm
    llm.stop()
