"""The HTTP part: one `post_json` that retries the retryable and honours Retry-After, and two clients on it.

    with IngestClient("http://127.0.0.1:8000", token="awp_…", run_id="my-run") as client:
        client.send("run.start", {"task": "Collect facts"})
"""

from __future__ import annotations

import atexit
import hashlib
import http.client
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from typing import Any

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ApiError(RuntimeError):
    """The server refused a request (4xx), or kept failing past the retries. `body` holds {code, message, ...}."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"request refused ({status}): {body}")
        self.status, self.body = status, body

    @property
    def code(self) -> str | None:
        return self.body.get("code") if isinstance(self.body, dict) else None


class IngestError(ApiError):
    """An ingest batch was refused: retrying would not help."""


class MemoryError(ApiError):  # noqa: A001 - the memory API's error, named for it
    """A memory API call was refused."""


def retry_after_seconds(headers: Any, body: Any, *, default: float, cap: float) -> float:
    """How long the server asked us to wait: the Retry-After header (seconds), else the body's retry_after."""
    raw = headers.get("Retry-After") if headers is not None else None
    for value in (raw, body.get("retry_after") if isinstance(body, dict) else None):
        try:
            if value is not None:
                return max(0.0, min(cap, float(value)))
        except (TypeError, ValueError):
            continue  # an HTTP date or junk: fall through to the default
    return min(cap, default)


class Transport:
    """POSTs JSON with a bearer token; retries 429/5xx and connection errors; never retries a 4xx."""

    def __init__(self, base_url: str, *, token: str, retries: int = 5, backoff: float = 0.5, timeout: float = 30.0,
                 max_retry_after: float = 60.0, sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.base_url = base_url.rstrip("/")
        self.token, self.retries, self.backoff, self.timeout = token, retries, backoff, timeout
        self.max_retry_after, self.sleep = max_retry_after, sleep

    def post_json(self, path: str, body: dict[str, Any], *, error: type[ApiError] = ApiError, headers: dict[str, str] | None = None) -> Any:
        return self._call("POST", path, json.dumps(body).encode(), error=error, headers=headers)

    def get_json(self, path: str, *, error: type[ApiError] = ApiError) -> Any:
        return self._call("GET", path, None, error=error)

    def _call(self, method: str, path: str, data: bytes | None, *, error: type[ApiError], headers: dict[str, str] | None = None) -> Any:
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(
                self.base_url + path, data=data, method=method,
                headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json", "Accept": "application/json", **(headers or {})},
            )  # fmt: skip
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 - the caller's server
                    return _json(response.read())
            except urllib.error.HTTPError as refused:
                status, payload = refused.code, _json(refused.read())
                if status not in RETRY_STATUSES or attempt == self.retries:
                    raise error(status, payload) from None
                if status in (429, 503):
                    # The server said when: waiting less only earns another 429.
                    self.sleep(retry_after_seconds(refused.headers, payload, default=1.0, cap=self.max_retry_after))
                    continue
            except (OSError, http.client.HTTPException):  # refused, reset, timed out, cut short: the server may be restarting
                if attempt == self.retries:
                    raise
            # Exponential backoff with a little deterministic jitter per body.
            jitter = int(hashlib.sha256(data or path.encode()).hexdigest()[:2], 16) / 2550
            self.sleep(self.backoff * (2**attempt) + jitter)
        raise AssertionError("unreachable")


class IngestClient:
    """Buffers events and pushes them to POST /api/v1/ingest in batches; every event carries an idempotency key.

    `accept_async=True` asks the server to accept each batch and append it beside the request (`Prefer:
    respond-async`): a push returns as soon as the batch is stored, and `wait()` collects the seqs (or raises the
    refusal) once the server has applied them. A server that does not apply the preference answers with seqs."""

    def __init__(self, base_url: str, *, token: str, run_id: str, batch_size: int = 500, retries: int = 5,
                 backoff: float = 0.5, timeout: float = 30.0, max_retry_after: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep, accept_async: bool = False) -> None:  # fmt: skip
        self.transport = Transport(base_url, token=token, retries=retries, backoff=backoff, timeout=timeout,
                                   max_retry_after=max_retry_after, sleep=sleep)  # fmt: skip
        self.run_id, self.batch_size = run_id, batch_size
        self.accept_async = accept_async
        self.pending: list[str] = []  # status URLs of accepted batches not yet waited for, in the order pushed
        self._buffer: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._prefix = uuid.uuid4().hex[:12]
        self._counter = 0
        self.seqs: list[int] = []
        atexit.register(self.flush)

    def send(self, kind: str, payload: dict[str, Any] | None = None, *, agent_id: str = "", iteration: int | None = None,
             idempotency_key: str | None = None, ts: float | str | None = None) -> None:  # fmt: skip
        """Queue one event; a full buffer is pushed at once."""
        with self._lock:
            self._counter += 1
            key = idempotency_key or f"{self._prefix}-{self._counter}"
            event: dict[str, Any] = {"kind": kind, "payload": payload or {}, "idempotency_key": key, "ts": ts if ts is not None else time.time()}
            if agent_id:
                event["agent_id"] = agent_id
            if iteration is not None:
                event["iteration"] = iteration
            self._buffer.append(event)
            full = len(self._buffer) >= self.batch_size
        if full:
            self.flush()

    def flush(self) -> list[int]:
        """Push everything buffered; returns the seqs the server gave (the same on a replay)."""
        with self._lock:
            batches = [self._buffer[i : i + self.batch_size] for i in range(0, len(self._buffer), self.batch_size)]
            self._buffer = []
        seqs: list[int] = []
        prefer = {"Prefer": "respond-async"} if self.accept_async else None
        for batch in batches:
            answer = self.transport.post_json("/api/v1/ingest", {"run_id": self.run_id, "events": batch}, error=IngestError, headers=prefer)
            if "status_url" in answer:
                self.pending.append(answer["status_url"])
            else:
                seqs.extend(answer["seqs"])
        self.seqs.extend(seqs)
        return seqs

    def wait(self, *, timeout: float = 300.0, poll: float = 0.05) -> list[int]:
        """Flush, then wait until every accepted batch is applied; returns their seqs in push order (raises
        IngestError with the server's refusal for a batch it refused: nothing of that batch was stored)."""
        self.flush()
        deadline = time.monotonic() + timeout
        seqs: list[int] = []
        while self.pending:
            receipt = self.transport.get_json(self.pending[0], error=IngestError)
            if receipt["state"] == "pending":
                if time.monotonic() > deadline:
                    raise TimeoutError(f"batch {receipt['batch']} still waits for the server after {timeout} s")
                self.transport.sleep(poll)
                continue
            self.pending.pop(0)
            if receipt["state"] != "applied":
                raise IngestError(422, receipt["result"])
            seqs.extend(receipt["result"]["seqs"])
        self.seqs.extend(seqs)
        return seqs

    def declare_secrets(self, values: Iterable[str]) -> int:
        """Tell the server which values are secret (the runtime's own, in any shape) before any event carries them:
        each is masked by value on every way out from then on. Returns how many were new; never echoes them."""
        answer = self.transport.post_json("/api/v1/secrets", {"values": list(values)}, error=IngestError)
        return int(answer["new"])

    def close(self) -> None:
        self.flush()
        atexit.unregister(self.flush)

    def __enter__(self) -> IngestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class MemoryClient:
    """The memory API of one experiment as an AWP runtime calls it; each method returns the envelope's `data`."""

    def __init__(self, base_url: str, *, token: str, experiment: str, agent_id: str = "", **transport: Any) -> None:
        self.transport = Transport(base_url, token=token, **transport)
        self.prefix, self.agent_id = f"/api/v1/experiments/{experiment}", agent_id

    def _call(self, path: str, body: dict[str, Any]) -> Any:
        body.setdefault("agent_id", self.agent_id)
        answer = self.transport.post_json(self.prefix + path, body, error=MemoryError)
        return answer.get("data") if isinstance(answer, dict) else answer

    def search(self, query: str, *, mode: str = "keyword", tiers: list[str] | None = None, max_results: int = 10, agent_id: str = "") -> Any:
        """Search memory (keyword | semantic | date_range | agent_filter) → {results: [...], total}."""
        return self._call("/memory/search", {"query": query, "mode": mode, "tiers": tiers or [], "max_results": max_results, **_agent(agent_id)})

    def write(self, content: str, *, target: str = "daily", run_id: str = "", agent_id: str = "") -> Any:
        """Write a daily-log entry (or long-term, when the agent may)."""
        return self._call("/memory/write", {"content": content, "target": target, "run_id": run_id, **_agent(agent_id)})

    def prior(self, *, agent_id: str = "") -> Any:
        """The `## PRIOR RUN MEMORY` block a ROOT manager is primed with."""
        return self._call("/memory/prior", _agent(agent_id))

    def recall(self, query: str = "", *, agent_id: str = "") -> Any:
        """What the agent would recall: its episodes and what sharing lets it see, ranked by salience."""
        return self._call("/memory/recall", {"query": query, **_agent(agent_id)})


def _agent(agent_id: str) -> dict[str, str]:
    return {"agent_id": agent_id} if agent_id else {}


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode() or "null")
    except ValueError:
        return raw[:500].decode(errors="replace")
