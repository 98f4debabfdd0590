#!/usr/bin/env python3
"""Goldens for the demo's MiniLM as it ships, q8 (`models/minilm/onnx/model_quantized.onnx`, the
file scripts/make_onnx_dtypes.py makes as `minilm-optimum-q8.onnx` and scripts/setup.sh copies
into the demo's folder): the Similarity tab's ranking and cosines and the Classification tab's
zero-shot by similarity, computed by onnxruntime on that same file.

The cases (query, candidates, texts, labels, template) are those of tests/golden/minilm.json, so
the f32 and q8 goldens differ only in the weights. onnxruntime runs one text at a time (batch 1,
as transformers.js's pipelines do and as webert's per-sequence activation quantization matches),
1 thread, graph optimizations off (as scripts/make_onnx_dtypes.py's goldens).

Usage:  python scripts/make_demo_q8_golden.py [--model FILE]   -> tests/golden/minilm_q8.json
Tested with: onnxruntime 1.32.0, tokenizers 0.22, numpy 2.4 (/work/pyenv or the onnx-dtypes venv
plus `tokenizers`).
"""
import argparse
import json
import os
import pathlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = pathlib.Path(os.environ.get("WEBERT_MODELS", ROOT / "models"))
F32 = ROOT / "tests/golden/minilm.json"
OUT = ROOT / "tests/golden/minilm_q8.json"
SCALE = 20.0


def rf(x):
    return float(f"{float(x):.7g}")


def main():
    import onnxruntime as ort
    from tokenizers import Tokenizer

    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=str(MODELS / "minilm/onnx/model_quantized.onnx"))
    a = ap.parse_args()
    path = pathlib.Path(a.model)
    tok = Tokenizer.from_file(str(MODELS / "minilm/tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])

    def embed(text):
        ids = np.array([tok.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        h = sess.run(None, feeds)[0][0].astype(np.float64)
        e = h.mean(axis=0)
        return e / np.linalg.norm(e)

    f32 = json.loads(F32.read_text())
    s = f32["similarity"]
    q = embed(s["query"])
    cos = [float(q @ embed(c)) for c in s["candidates"]]
    order = sorted(range(len(cos)), key=lambda i: -cos[i])
    similarity = {"pooling": s["pooling"], "query": s["query"], "candidates": s["candidates"],
                  "cosine": [rf(c) for c in cos], "ranking": order}

    z = f32["zero_shot"]
    cases = []
    for c in z["cases"]:
        t = embed(c["sequence"])
        cs = np.array([t @ embed(z["hypothesis_template"].format(l)) for l in c["candidate_labels"]])
        logits = SCALE * cs
        soft = np.exp(logits - logits.max())
        soft /= soft.sum()
        sig = 1 / (1 + np.exp(-logits))
        case = {"sequence": c["sequence"], "candidate_labels": c["candidate_labels"], "cosine": [rf(x) for x in cs]}
        for key, scores in (("single_label", soft), ("multi_label", sig)):
            o = np.argsort(-scores, kind="stable")
            case[key] = {"labels": [c["candidate_labels"][i] for i in o], "scores": [rf(scores[i]) for i in o]}
        cases.append(case)
    zero_shot = {k: v for k, v in z.items() if k != "cases"}
    zero_shot["cases"] = cases

    out = {"model": "models/minilm/onnx/model_quantized.onnx (scripts/make_onnx_dtypes.py minilm-optimum-q8)",
           "file_size": path.stat().st_size,
           "generator": "scripts/make_demo_q8_golden.py",
           "versions": {"onnxruntime": ort.__version__, "numpy": np.__version__},
           "note": "onnxruntime on the q8 file, one text per run, 1 thread, graph optimizations off; "
                   "cases as tests/golden/minilm.json",
           "similarity": similarity, "zero_shot": zero_shot}
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: ranking {order}, cosines {[round(c, 4) for c in cos]}")


if __name__ == "__main__":
    main()
