"""The standalone client against a small local HTTP server: batching, idempotency, Retry-After, refusals."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from awp_memory_client import IngestClient, IngestError, MemoryClient, MemoryError
from awp_memory_client.client import retry_after_seconds


class FakeServer:
    """Answers each POST from a queue of (status, headers, body); records what it received."""

    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, str], Any]] = []
        self.received: list[tuple[str, dict[str, str], Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.received.append((self.path, dict(self.headers), body))
                status, headers, answer = outer.answers.pop(0) if outer.answers else (200, {}, {"seqs": [1]})
                raw = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


def test_events_go_in_batches_with_idempotency_keys_and_the_token(server: FakeServer) -> None:
    server.answers = [(200, {}, {"seqs": [1, 2]}), (200, {}, {"seqs": [3]})]
    with IngestClient(server.url, token="awp_t", run_id="r1", batch_size=2) as client:
        client.send("run.start", {"task": "t"})
        client.send("metric.confidence", {"mean": 0.5}, iteration=1, agent_id="w1")
        client.send("run.complete", {"status": "complete"})
    assert client.seqs == [1, 2, 3]
    paths = [path for path, _, _ in server.received]
    assert paths == ["/api/v1/ingest", "/api/v1/ingest"]
    first = server.received[0]
    assert first[1]["Authorization"] == "Bearer awp_t" and first[2]["run_id"] == "r1"
    events = first[2]["events"] + server.received[1][2]["events"]
    assert [e["kind"] for e in events] == ["run.start", "metric.confidence", "run.complete"]
    assert len({e["idempotency_key"] for e in events}) == 3 and events[1]["iteration"] == 1 and events[1]["agent_id"] == "w1"


def test_429_waits_for_retry_after_then_sends_the_same_batch(server: FakeServer) -> None:
    slept: list[float] = []
    server.answers = [(429, {"Retry-After": "7"}, {"code": "rate_limited", "retry_after": 7}), (200, {}, {"seqs": [1]})]
    client = IngestClient(server.url, token="t", run_id="r", sleep=slept.append)
    client.send("run.start", {})
    assert client.flush() == [1]
    assert slept == [7.0]
    assert server.received[0][2] == server.received[1][2]  # same idempotency keys: a replay stores nothing twice
    client.close()


def test_retry_after_is_capped_and_falls_back_to_the_body() -> None:
    assert retry_after_seconds({"Retry-After": "3600"}, {}, default=1, cap=60) == 60
    assert retry_after_seconds({}, {"retry_after": 2}, default=1, cap=60) == 2
    assert retry_after_seconds({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, {}, default=1.5, cap=60) == 1.5


def test_a_4xx_is_raised_with_the_servers_code_and_not_retried(server: FakeServer) -> None:
    server.answers = [(422, {}, {"code": "invalid_events", "message": "1 event(s) were refused"})]
    client = IngestClient(server.url, token="t", run_id="r", sleep=lambda s: None)
    client.send("nonsense", {})
    with pytest.raises(IngestError) as refused:
        client.flush()
    assert refused.value.status == 422 and refused.value.code == "invalid_events" and len(server.received) == 1
    client.close()


def test_5xx_is_retried_with_backoff_until_it_gives_up(server: FakeServer) -> None:
    slept: list[float] = []
    server.answers = [(502, {}, {})] * 3
    client = IngestClient(server.url, token="t", run_id="r", retries=2, backoff=0.1, sleep=slept.append)
    client.send("run.start", {})
    with pytest.raises(IngestError):
        client.flush()
    assert len(server.received) == 3 and len(slept) == 2 and slept[1] > slept[0]
    client.close()


def test_memory_client_calls_the_memory_api_of_its_experiment(server: FakeServer) -> None:
    server.answers = [
        (200, {}, {"ok": True, "status": 200, "data": {"results": [{"tier": "working", "content": "x"}], "total": 1}}),
        (200, {}, {"ok": True, "status": 200, "data": {"block": "## PRIOR RUN MEMORY"}}),
        (403, {}, {"ok": False, "status": 403, "code": "scope_missing"}),
    ]
    memory = MemoryClient(server.url, token="t", experiment="exp-1", agent_id="manager", sleep=lambda s: None)
    assert memory.search("rate", max_results=3)["total"] == 1
    assert memory.prior()["block"].startswith("## PRIOR")
    with pytest.raises(MemoryError) as refused:
        memory.write("note")
    assert refused.value.code == "scope_missing"
    assert [p for p, _, _ in server.received] == ["/api/v1/experiments/exp-1/memory/search", "/api/v1/experiments/exp-1/memory/prior", "/api/v1/experiments/exp-1/memory/write"]
    assert server.received[0][2] == {"query": "rate", "mode": "keyword", "tiers": [], "max_results": 3, "agent_id": "manager"}


def test_the_package_imports_without_django_or_requests() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    import awp_memory_client

    src = str(Path(awp_memory_client.__file__).resolve().parents[1])
    code = "import sys, awp_memory_client; assert 'django' not in sys.modules and 'requests' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ, "PYTHONPATH": src})


def test_a_server_that_is_down_is_retried_then_reported() -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    slept: list[float] = []
    client = IngestClient(f"http://127.0.0.1:{port}", token="t", run_id="r", retries=2, backoff=0.01, sleep=slept.append)
    client.send("run.start", {})
    with pytest.raises(OSError):
        client.flush()
    assert len(slept) == 2
    client.close()  # the failed batch left the buffer: nothing more to send


def test_declared_secrets_go_to_their_endpoint_and_a_refusal_is_raised(server: FakeServer) -> None:
    server.answers = [(200, {}, {"declared": 2, "new": 1}), (422, {}, {"code": "invalid_secrets", "errors": [{"index": 0, "code": "too_short"}]})]
    with IngestClient(server.url, token="awp_t", run_id="r1") as client:
        assert client.declare_secrets(iter(["plum orchard velvet 1987", "Tr0ub4dor&3"])) == 1
        with pytest.raises(IngestError) as refused:
            client.declare_secrets(["abc"])
    assert refused.value.code == "invalid_secrets"
    assert [(path, body) for path, _, body in server.received] == [
        ("/api/v1/secrets", {"values": ["plum orchard velvet 1987", "Tr0ub4dor&3"]}),
        ("/api/v1/secrets", {"values": ["abc"]}),
    ]
