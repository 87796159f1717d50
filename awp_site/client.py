"""A small push client for POST /api/v1/ingest: batching, idempotency keys, retries with backoff, flush on exit.

    from awp_site.client import IngestClient
    with IngestClient("http://127.0.0.1:8000", token="awp_…", run_id="my-run") as client:
        client.send("run.start", {"task": "Collect facts"})
        client.send("metric.confidence", {"mean": 0.9}, iteration=1)
"""

from __future__ import annotations

import atexit
import hashlib
import json
import threading
import time
import uuid
from typing import Any

import requests

RETRY_STATUSES = {429, 500, 502, 503, 504}


class IngestError(RuntimeError):
    """The server refused a batch (4xx): retrying would not help. `body` holds {code, message, errors?}."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"ingest refused ({status}): {body}")
        self.status, self.body = status, body


class IngestClient:
    """Buffers events and pushes them in batches; every event carries an idempotency key, so retries are safe."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        run_id: str,
        batch_size: int = 500,
        retries: int = 5,
        backoff: float = 0.5,
        timeout: float = 30.0,
        session: requests.Session | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/api/v1/ingest"
        self.run_id, self.batch_size, self.retries, self.backoff, self.timeout = run_id, batch_size, retries, backoff, timeout
        self.session = session or requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self._buffer: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._prefix = uuid.uuid4().hex[:12]
        self._counter = 0
        self.seqs: list[int] = []
        atexit.register(self.flush)

    def send(self, kind: str, payload: dict[str, Any] | None = None, *, agent_id: str = "", iteration: int | None = None, idempotency_key: str | None = None, ts: float | str | None = None) -> None:
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
        for batch in batches:
            seqs.extend(self._post({"run_id": self.run_id, "events": batch}))
        self.seqs.extend(seqs)
        return seqs

    def _post(self, body: dict[str, Any]) -> list[int]:
        data = json.dumps(body)
        for attempt in range(self.retries + 1):
            try:
                response = self.session.post(self.url, data=data, headers={"Content-Type": "application/json"}, timeout=self.timeout)
            except (requests.ConnectionError, requests.Timeout):
                if attempt == self.retries:
                    raise
            else:
                if response.status_code == 200:
                    return list(response.json()["seqs"])
                if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                    raise IngestError(response.status_code, _body(response))
                if response.status_code == 429:
                    time.sleep(float(_body(response).get("retry_after", 1)) if isinstance(_body(response), dict) else 1.0)
                    continue
            # Exponential backoff with a little deterministic jitter per batch.
            jitter = int(hashlib.sha256(data.encode()).hexdigest()[:2], 16) / 2550
            time.sleep(self.backoff * (2**attempt) + jitter)
        return []

    def close(self) -> None:
        self.flush()
        atexit.unregister(self.flush)

    def __enter__(self) -> IngestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _body(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:500]
