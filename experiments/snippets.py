"""Ready-to-copy ways into an experiment, filled with its slug and the server's address (pure: text in, text out).

Shown on the Connect page. With a freshly issued secret they carry it (the one time it is shown);
otherwise they read it from the AWP_TOKEN environment variable.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class Snippet:
    key: str
    title: str
    lead: str
    language: str
    code: str


def snippets_for(*, server: str, slug: str, token: str | None) -> list[Snippet]:
    """The four ways in: watch a folder, the push client, plain curl, the memory API as an AWP runtime calls it."""
    py_token = repr(token) if token else 'os.environ["AWP_TOKEN"]'
    auth = f"-H \"Authorization: Bearer {token}\"" if token else '-H "Authorization: Bearer $AWP_TOKEN"'
    ingest_body = json.dumps({"run_id": "curl-run-1", "events": [
        {"kind": "run.start", "payload": {"task": "Hello from curl"}, "idempotency_key": "curl-run-1-start"},
        {"kind": "metric.confidence", "payload": {"mean": 0.7}, "iteration": 1, "idempotency_key": "curl-run-1-m1"},
    ]})  # fmt: skip
    search_body = json.dumps({"query": "rate limit", "mode": "keyword", "max_results": 5, "agent_id": "manager"})
    return [
        Snippet(
            "watch", "Watch a folder", "On the server's machine: follow an AWP workflow folder as the runtime writes it "
            "(kernel notifications; resumes after a restart). No token needed: it writes to the database directly.",
            "shell", f"python manage.py awp_watch /path/to/your/workflow --experiment {shlex.quote(slug)}",
        ),
        Snippet(
            "push", "Push from your runtime (Python)", "Install the standalone client (pip install ./clients/python "
            "from this repository; no Django needed), then run this script. Events are batched, retried, and "
            "idempotent.", "python",
            "import os\n"
            "import time\n\n"
            "from awp_memory_client import IngestClient\n\n"
            "run_id = f\"my-run-{int(time.time())}\"\n"
            f"with IngestClient({server!r}, token={py_token}, run_id=run_id) as client:\n"
            "    client.send(\"run.start\", {\"task\": \"My first pushed run\"})\n"
            "    client.send(\"metric.confidence\", {\"mean\": 0.8}, iteration=1)\n"
            "    client.send(\"run.complete\", {\"status\": \"complete\", \"reason\": \"done\"})\n"
            "print(\"pushed\", run_id)\n",
        ),
        Snippet(
            "curl", "Push with curl", "Any language can POST a batch: all or nothing, idempotent by idempotency_key.",
            "shell", f"curl -sS -X POST {server}/api/v1/ingest \\\n  {auth} \\\n  -H \"Content-Type: application/json\" \\\n"
            f"  -d {shlex.quote(ingest_body)}",
        ),
        Snippet(
            "memory", "Memory API (as an AWP runtime calls it)", "Search the experiment's memory and fetch the prior-run "
            "block a ROOT manager is primed with. Needs the memory:read scope.", "shell",
            f"curl -sS -X POST {server}/api/v1/experiments/{slug}/memory/search \\\n  {auth} \\\n"
            f"  -H \"Content-Type: application/json\" \\\n  -d {shlex.quote(search_body)}\n\n"
            f"curl -sS -X POST {server}/api/v1/experiments/{slug}/memory/prior \\\n  {auth} \\\n"
            "  -H \"Content-Type: application/json\" -d '{\"agent_id\": \"manager\"}'",
        ),
    ]
