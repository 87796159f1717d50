"""A tiny OpenAI-compatible chat completions server on loopback for agent frameworks under test.

One rule set: with tools offered and no tool result yet, the model calls the first tool with {"topic": …};
with a tool result, it answers with that result; without tools, it answers from the last user message.
Usage counts are fixed per answer, so a test knows the token totals to expect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROMPT_TOKENS, COMPLETION_TOKENS = 50, 10


def _answer(body: dict[str, Any], number: int) -> dict[str, Any]:
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    user_text = last_user.get("content") if isinstance(last_user.get("content"), str) else json.dumps(last_user.get("content"))
    message: dict[str, Any]
    if tools and not tool_results:
        name = tools[0]["function"]["name"]
        arguments = json.dumps({"topic": "packing list for Lisbon"})
        message = {"role": "assistant", "content": None, "tool_calls": [{"id": f"call_{number}", "type": "function", "function": {"name": name, "arguments": arguments}}]}
        finish = "tool_calls"
    elif tool_results:
        message = {"role": "assistant", "content": f"Plan ready. The writer says: {tool_results[-1].get('content')}"}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": f"Pack sunscreen and a light jacket ({len(user_text or '')} chars read)."}
        finish = "stop"
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 1_700_000_000 + number,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS, "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS},
    }


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with fake._lock:
                    fake.requests.append(body)
                    number = len(fake.requests)
                data = json.dumps(_answer(body, number)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
