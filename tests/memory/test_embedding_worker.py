"""The ONNX embedder gives sentence-transformers' vectors on float32 weights and near ones on int8 (the default), and
one process (awp_embed --loop) holds the model."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from memory import embeddings
from tests.conftest import ROOT, subprocess_env
from tests.proofkit import wait_until

# sentence-transformers 6.2 on torch 2.13, all-MiniLM-L6-v2 from the gt wheel: the first 8 dimensions.
REFERENCE = {
    "Sibling workers post their findings to the shared blackboard.": [
        -0.01845, 0.016017, -0.078991, -0.003586, -0.030496, 0.005029, -0.059841, -0.046762,
    ],
    "how do workers coordinate": [-0.011085, 0.000604, -0.02922, -0.005641, 0.006771, 0.000112, -0.037813, -0.058015],
}  # fmt: skip


def _encoder(*, quantize: bool):
    from memory.minilm_onnx import Encoder, weights_dir

    return Encoder(embeddings.model_file(quantize=quantize), weights_dir() / "tokenizer.json")


def test_int8_vectors_are_near_float32_ones_and_each_text_keeps_its_own() -> None:
    texts = [*REFERENCE, "short", "word " * 400, "a middle-sized text about workers and their blackboard " * 5, "ünïcode — 42"]
    full, int8 = _encoder(quantize=False).encode(texts), _encoder(quantize=True).encode(texts)
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-5)
    assert float((full * int8).sum(axis=1).min()) > 0.85  # 0.94-0.98 on prose, 0.88 on `word word …`: a model name of their own
    alone = np.array([_encoder(quantize=True).encode([text])[0] for text in texts[:3]])
    assert np.array_equal(alone, int8[:3])  # a text's vector does not depend on the texts batched with it
    assert embeddings.current_model_name() != embeddings.MODEL_NAME  # int8 by default, stored under a name of its own


def test_onnx_float32_vectors_are_those_of_sentence_transformers(settings) -> None:
    settings.AWP_EMBED_WEIGHTS = "float32"
    assert embeddings.current_model_name() == embeddings.MODEL_NAME
    texts = list(REFERENCE)
    vectors = _encoder(quantize=False).encode(texts)
    assert vectors.shape == (2, embeddings.DIMENSIONS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(vector[:8], REFERENCE[text], atol=2e-5), (text, vector[:8])
    assert abs(float(vectors[0] @ vectors[1]) - 0.286985) < 1e-4
    # The same text embedded alone or in a padded batch gives the same vector.
    assert np.allclose(_encoder(quantize=False).encode([texts[1]])[0], vectors[1], atol=1e-5)


@pytest.mark.django_db(transaction=True)
def test_the_web_process_asks_the_worker_for_vectors_and_a_wrong_key_is_refused(settings, tmp_path) -> None:
    model = embeddings.model_file()  # built once into the shared data dir; the worker reuses it
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / model.name).symlink_to(model)
    settings.AWP_DATA_DIR = tmp_path
    env = subprocess_env(AWP_DATA_DIR=str(tmp_path), SECRET_KEY=str(settings.SECRET_KEY))
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "awp_embed", "--loop", "--interval", "60"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_until(lambda: embeddings._ask_worker(["warm up"]) is not None, timeout=120, what="the worker answers")
        texts = list(REFERENCE) + ["", "ünïcode — 42"]
        remote = embeddings._ask_worker(texts)
        assert remote is not None and remote.shape == (len(texts), embeddings.DIMENSIONS)
        assert np.allclose(remote, np.array(embeddings._load().encode(texts)), atol=1e-5)
        # A process that does not know this install's secret gets nothing (and would embed by itself).
        settings.SECRET_KEY = "another-install"
        assert embeddings._ask_worker(["x"]) is None
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    # A stopped worker leaves no socket behind: the next web process embeds by itself at once.
    deadline = time.monotonic() + 10
    while embeddings.socket_path().exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not embeddings.socket_path().exists()


def test_a_fresh_data_dir_builds_the_graph_from_the_wheel(settings, tmp_path) -> None:
    from memory.minilm_onnx import Encoder, weights_dir

    settings.AWP_DATA_DIR = tmp_path
    built = embeddings.model_file(quantize=False)
    assert built.parent == tmp_path / "models" and built.stat().st_size > 80_000_000
    assert not [p for p in built.parent.iterdir() if p.name.endswith(".tmp")]  # written atomically
    text = next(iter(REFERENCE))
    vector = Encoder(built, weights_dir() / "tokenizer.json").encode([text])[0]
    assert np.allclose(vector[:8], REFERENCE[text], atol=2e-5)
    assert embeddings.model_file(quantize=False) == built  # built once
    int8 = embeddings.model_file()  # the default: int8 weights, a quarter of the size
    assert int8 != built and 15_000_000 < int8.stat().st_size < 30_000_000


def test_the_model_process_starts_on_demand_stops_when_idle_and_starts_again() -> None:
    embeddings.model_file()  # built before the clock of the idle period starts
    host = embeddings.ModelHost(idle_seconds=1)
    try:
        assert host.state == embeddings.STOPPED
        texts = list(REFERENCE)
        vectors = host.encode(texts)
        assert host.state == embeddings.READY and vectors.shape == (2, embeddings.DIMENSIONS)
        assert np.allclose(vectors, _encoder(quantize=embeddings.int8_weights()).encode(texts), atol=1e-5)
        first = host._proc
        assert first is not None and first.poll() is None
        wait_until(lambda: host.state == embeddings.STOPPED, timeout=60, what="the idle model process stops")
        assert first.wait(timeout=30) == 0  # ended, and reaped: its memory is given back
        again = host.encode(texts[1:])  # the next request starts it again
        assert np.allclose(again[0], vectors[1], atol=1e-5) and host._proc is not None and host._proc.pid != first.pid
    finally:
        host.close()
    assert host.state == embeddings.STOPPED and host._proc is None


def test_the_model_process_loads_no_django() -> None:
    check = "import sys, memory.model_process, memory.minilm_onnx; sys.exit(any(m.split('.')[0] == 'django' for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", check], cwd=ROOT).returncode == 0


def test_long_texts_are_embedded_a_few_at_a_time_with_the_vectors_of_one_by_one() -> None:
    from memory.minilm_onnx import ATTENTION_BUDGET, MAX_TOKENS

    assert ATTENTION_BUDGET // MAX_TOKENS**2 <= 2  # a batch of 256-token texts holds one or two of them, not 32
    texts = ["short", "word " * 400, "a middle-sized text about workers and their blackboard " * 5, "ünïcode — 42"]
    together = np.array(embeddings.embed_texts(texts))
    alone = np.array([embeddings.embed_query(text) for text in texts])
    assert np.allclose(together, alone, atol=1e-5)
