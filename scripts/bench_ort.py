#!/usr/bin/env python3
"""Benchmark peer: time onnxruntime (CPU, 1 thread, ORT_ENABLE_ALL) on the same
inputs as `webert bench`. Prints one JSON line per config.

Input, as in `webert bench`: the sentence below repeated until the tokenizer
(special tokens included) gives >= L tokens, then the first L ids ([CLS] ...,
right-truncated, so the final [SEP] is cut); B copies; all-ones mask, zero type ids.

Usage: python scripts/bench_ort.py [--only NAME ...] [--runs N] [--warmup W]
Names: minilm-1x128 minilm-1x15 minilm-8x128 pii-1x128 pii-1x15
Needs models/bench/minilm.onnx (scripts/export_minilm_onnx.py).
"""
import argparse
import json
import pathlib
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORDS = "the quick brown fox jumps over the lazy dog while a curious cat watches quietly "
MODELS = {  # name -> (onnx file, tokenizer dir)
    "minilm": (ROOT / "models/bench/minilm.onnx", ROOT / "models/minilm"),
    "pii": (ROOT / "models/pii/onnx/model_q4.onnx", ROOT / "models/pii"),
}
CONFIGS = [("minilm", 1, 128), ("minilm", 1, 15), ("minilm", 8, 128), ("pii", 1, 128), ("pii", 1, 15)]


def bench_ids(tok_dir, seq_len):
    tok = Tokenizer.from_file(str(tok_dir / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    text = ""
    while len(tok.encode(text).ids) < seq_len:
        text += WORDS
    return tok.encode(text).ids[:seq_len]


def session(path):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", help="config names, e.g. minilm-1x128")
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    sessions = {}
    for model, batch, seq_len in CONFIGS:
        name = f"{model}-{batch}x{seq_len}"
        if a.only and name not in a.only:
            continue
        onnx_path, tok_dir = MODELS[model]
        if model not in sessions:
            sessions[model] = session(onnx_path)
        sess = sessions[model]
        ids = np.array([bench_ids(tok_dir, seq_len)] * batch, dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        feed = {i.name: feed[i.name] for i in sess.get_inputs()}
        for _ in range(a.warmup):
            sess.run(None, feed)
        times = []
        for _ in range(max(a.runs, 1)):
            t = time.perf_counter()
            sess.run(None, feed)
            times.append((time.perf_counter() - t) * 1e3)
        median = sorted(times)[len(times) // 2]  # same rule as webert bench
        print(json.dumps({
            "config": name, "model": str(onnx_path.relative_to(ROOT)), "backend": f"ort-{ort.__version__}-cpu-1t",
            "batch": batch, "seq_len": seq_len, "runs": len(times), "median_ms": median, "min_ms": min(times),
            "ms_per_sequence": median / batch, "sequences_per_s": batch * 1e3 / median,
        }), flush=True)


if __name__ == "__main__":
    main()
