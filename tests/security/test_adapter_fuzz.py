"""The two adapters outside /api/v1 (OTLP in, MCP out) under hostile input: never a 5xx, whatever the body.

schemathesis covers the OpenAPI schema of /api/v1; these endpoints are not in it, so hypothesis sends them the
same hostile shapes (bytes, deep nesting, NaN, NUL, lone surrogates, huge numbers, wrong content types, bad gzip,
tool calls with arguments of every type) through the running server. Seeded: the same inputs every run.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import make_experiment, make_token

pytestmark = pytest.mark.django_db(transaction=True)

FUZZ = settings(max_examples=100, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
HOSTILE_TEXT = st.sampled_from(["\x00", "\ud800", "NaN", "Infinity", "9" * 400, "[" * 2000, "é" * 1000, ""]) | st.text(max_size=50)
JSONISH: Any = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80) | st.floats() | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(HOSTILE_TEXT, inner, max_size=4),
    max_leaves=12,
)
CONTENT_TYPES = st.sampled_from(["application/json", "application/x-protobuf", "application/json; charset=utf-8", "text/plain", "", "application/x-protobuf; foo=bar"])


def _body(value: Any) -> bytes:
    try:
        return json.dumps(value, allow_nan=True).encode("utf-8", "surrogatepass")
    except (ValueError, RecursionError):
        return b"{"


@pytest.fixture
def server_and_tokens(asgi_server):  # type: ignore[no-untyped-def]
    experiment = make_experiment()
    return asgi_server, make_token(experiment, ["ingest"]), make_token(experiment, ["memory:read", "memory:write", "review"])


def test_otlp_receiver_never_answers_5xx(server_and_tokens) -> None:
    server, ingest, _ = server_and_tokens
    session = requests.Session()

    @FUZZ
    @given(payload=JSONISH | st.binary(max_size=300), content_type=CONTENT_TYPES, gzipped=st.booleans(), deep=st.booleans())
    def check(payload: Any, content_type: str, gzipped: bool, deep: bool) -> None:
        body = payload if isinstance(payload, bytes) else _body({"resourceSpans": [payload]})
        if deep:
            body = b'{"resourceSpans":' + b"[" * 5000 + b"]" * 5000 + b"}"
        headers = {"Authorization": f"Bearer {ingest}", "Content-Type": content_type}
        if gzipped:
            body, headers["Content-Encoding"] = (gzip.compress(body) if payload else b"not gzip"), "gzip"
        answer = session.post(f"{server.url}/otel/v1/traces", data=body, headers=headers, timeout=30)
        assert answer.status_code < 500, (answer.status_code, answer.text[:300], body[:200])

    check()


def test_mcp_tools_never_answer_5xx(server_and_tokens) -> None:
    server, _, token = server_and_tokens
    session = requests.Session()
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    listed = session.post(f"{server.url}/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}, headers=headers, timeout=30)
    tools = sorted(tool["name"] for tool in listed.json()["result"]["tools"])
    assert len(tools) >= 10

    @FUZZ
    @given(tool=st.sampled_from(tools), arguments=JSONISH, raw=st.none() | st.binary(max_size=200), method=st.sampled_from(["tools/call", "resources/read", "nope"]))
    def check(tool: str, arguments: Any, raw: bytes | None, method: str) -> None:
        params = {"name": tool, "arguments": arguments} if method == "tools/call" else {"uri": arguments}
        body = raw if raw is not None else _body({"jsonrpc": "2.0", "id": 2, "method": method, "params": params})
        answer = session.post(f"{server.url}/mcp/", data=body, headers=headers, timeout=30)
        assert answer.status_code < 500, (answer.status_code, answer.text[:300], body[:200])
        # tool_failed is the SDK's answer to an exception no tool expected: the MCP form of a 500.
        assert "tool_failed" not in answer.text, (answer.text[:300], body[:200])

    check()
