"""Recall@10 of semantic memory search on a labelled query set (bench/data/recall_set.json).

    .venv/bin/python bench/search_recall.py            # the configured embedder (ONNX Runtime), fp32 and int8 graphs
    .venv/bin/python bench/search_recall.py --torch    # also sentence-transformers on torch (the "before"), if installed

Each query names the entries that answer it; 400 generated AWP-shaped distractors (daily-log lines, worker
results, board posts about other things) join the entries. Recall@10 = the share of answering entries found
among each query's 10 nearest by cosine, averaged over the queries: the exact scan memory.search runs for
experiments of this size.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SET = ROOT / "bench" / "data" / "recall_set.json"
K = 10

Encode = Callable[[list[str]], np.ndarray]

_AGENTS = ["fact_collector", "verifier", "writer", "analyst", "planner", "extractor", "ops", "researcher", "qa"]
_SUBJECTS = [
    "The onboarding checklist", "The staging cluster", "The quarterly report", "The marketing newsletter",
    "The vendor contract", "The mobile app build", "The warehouse inventory", "The hiring plan",
    "The customer survey", "The annual audit", "The office move", "The translation memory", "The design system",
    "The release train", "The data retention policy", "The sprint retrospective", "The training dataset",
    "The support macro library", "The partner portal", "The energy bill",
]
_PREDICATES = [
    "was reviewed and needs two more sign-offs", "is blocked on a missing answer from legal",
    "moved to next week because of the holiday", "now has an owner in the platform team",
    "was archived after the project ended", "lists three open questions for the steering group",
    "grew by a third since the last iteration", "was compared against last year's figures",
    "is waiting for the design review", "was split into two smaller tasks", "needs a final proofread",
    "was shared with the regional managers", "has a draft ready for comments",
    "was merged with the older version", "is on track for the end of the month",
    "was estimated at four person-days", "got a new template", "was cancelled by the sponsor",
    "was translated into Spanish", "was checked by the verifier and found consistent",
]


def distractors(n: int = 400, seed: int = 19) -> list[str]:
    """AWP-shaped memory about other matters, deterministic for a seed."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        agent, subject, predicate = rng.choice(_AGENTS), rng.choice(_SUBJECTS), rng.choice(_PREDICATES)
        shape = i % 3
        if shape == 0:
            out.append(f"### {rng.randrange(24):02d}:{rng.randrange(60):02d}:00 -- {agent} (confidence: "
                       f"{rng.randrange(2, 10) / 10})\n{subject} {predicate}.")  # fmt: skip
        elif shape == 1:
            out.append(f"{agent} (iteration {rng.randrange(1, 6)}): {subject} {predicate}.")
        else:
            out.append(f"[{rng.choice(['findings', 'status', 'handoff'])}] {agent}: {subject} {predicate}.")
    return out


def recall_at_k(encode: Encode, k: int = K) -> dict[str, float]:
    """Recall@k (and the mean reciprocal rank of the first answer) of `encode` on the labelled set."""
    data = json.loads(SET.read_text())
    ids = [e["id"] for e in data["entries"]] + [f"x{i}" for i in range(len(distractors()))]
    corpus = [e["content"] for e in data["entries"]] + distractors()
    started = time.perf_counter()
    docs = encode(corpus)
    seconds = time.perf_counter() - started
    queries = encode([q["q"] for q in data["queries"]])
    recalls, reciprocal = [], []
    for query, vector in zip(data["queries"], queries, strict=True):
        ranked = [ids[i] for i in np.argsort(-(docs @ vector))]
        wanted = set(query["relevant"])
        recalls.append(len(wanted & set(ranked[:k])) / len(wanted))
        first = min(ranked.index(r) for r in wanted)
        reciprocal.append(1.0 / (first + 1))
    return {"recall": float(np.mean(recalls)), "mrr": float(np.mean(reciprocal)), "docs": len(corpus),
            "queries": len(queries), "embed_s": seconds}  # fmt: skip


def _onnx_encoder(*, quantize: bool) -> Encode:
    from memory.embeddings import model_file
    from memory.minilm_onnx import Encoder, weights_dir

    encoder = Encoder(model_file(quantize=quantize), weights_dir() / "tokenizer.json")
    return encoder.encode


def _torch_encoder() -> Encode:
    from sentence_transformers import SentenceTransformer

    from memory.minilm_onnx import weights_dir

    model = SentenceTransformer(str(weights_dir()), device="cpu")
    return lambda texts: model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--torch", action="store_true", help="also measure sentence-transformers on torch")
    parser.add_argument("--quick", action="store_true", help="accepted for run_all; the set is small anyway")
    args = parser.parse_args()
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")
    import django

    django.setup()
    routes: list[tuple[str, Callable[[], Encode]]] = []
    if args.torch:
        routes.append(("torch + sentence-transformers (before)", _torch_encoder))
    routes += [("ONNX Runtime, float32 (after)", lambda: _onnx_encoder(quantize=False)),
               ("ONNX Runtime, int8 weights", lambda: _onnx_encoder(quantize=True))]  # fmt: skip
    print("| embedder | recall@10 | MRR | docs | queries | embed docs s |")
    print("|---|---|---|---|---|---|")
    for name, make in routes:
        result = recall_at_k(make())
        print(f"| {name} | {result['recall']:.3f} | {result['mrr']:.3f} | {result['docs']} | {result['queries']} "
              f"| {result['embed_s']:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
