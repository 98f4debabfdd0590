#!/usr/bin/env python3
"""Build the seeded (random, NOT fine-tuned) test heads that sit on top of the real MiniLM encoder.

No package we can fetch ships a fine-tuned BERT sequence-classification or question-answering
checkpoint, so the tests use the real all-MiniLM-L6-v2 encoder plus a randomly initialised head
drawn from a fixed seed. Only the head tensors are written; a test model folder is assembled as

    models/minilm/model.safetensors   encoder (names WITHOUT a `bert.` prefix, includes pooler.dense.*)
    models/minilm/tokenizer*.json ... tokenizer files
    tests/heads/<kind>/config.json    MiniLM config + architectures (+ id2label/label2id)
    tests/heads/<kind>/head.safetensors

Outputs (deterministic; rerunning rewrites byte-identical files):
    tests/heads/seqcls/{config.json,head.safetensors}  BertForSequenceClassification, 3 labels:
        classifier.weight [3,384], classifier.bias [3]   (MiniLM already has pooler.dense.*)
    tests/heads/qa/{config.json,head.safetensors}      BertForQuestionAnswering:
        qa_outputs.weight [2,384], qa_outputs.bias [2]

The label names of the seqcls head ("negative"/"neutral"/"positive") are cosmetic: the head is
random, its predictions mean nothing. Weights are drawn much wider than HF's N(0, 0.02^2) so that
logits are spread out and argmax / top-k orderings are decisive enough that f32 rounding
differences between implementations cannot flip them: seqcls N(0, 4^2) (the MiniLM pooler output
has norm ~1.2, so logits get std ~5), QA N(0, 0.5^2) (token states have norm ~9); biases N(0, 0.1^2).

Usage:  HF_HUB_OFFLINE=1 python scripts/make_test_heads.py [--models models] [--out tests/heads]
Needs:  torch, safetensors, numpy (transformers only for the self-check at the end).
"""
import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from safetensors import safe_open
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parent.parent
SEED_SEQCLS = 20240601
# 20240888 rather than the first candidate 20240602: among seeds 20240602..20240901 it is one of the
# few whose head gives the [CLS] "no answer" span a score comparable to the best real span on the
# handle_impossible_answer case of tests/golden/qa.json, so that the null answer shows up in its top 3.
SEED_QA = 20240888
SEQCLS_WEIGHT_STD = 4.0
QA_WEIGHT_STD = 0.5
BIAS_STD = 0.1
SEQCLS_LABELS = ["negative", "neutral", "positive"]  # cosmetic names for a random head


def minilm_config(models: Path) -> dict:
    with open(models / "minilm" / "config.json") as f:
        return json.load(f)


def encoder_tensor_names(models: Path) -> list:
    with safe_open(str(models / "minilm" / "model.safetensors"), "pt") as f:
        return list(f.keys())


def seeded_linear(seed: int, n_out: int, n_in: int, std: float):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n_out, n_in, generator=g, dtype=torch.float32) * std
    b = torch.randn(n_out, generator=g, dtype=torch.float32) * BIAS_STD
    return w.contiguous(), b.contiguous()


def head_configs(base: dict):
    seqcls = dict(base)
    seqcls["architectures"] = ["BertForSequenceClassification"]
    seqcls["id2label"] = {str(i): l for i, l in enumerate(SEQCLS_LABELS)}
    seqcls["label2id"] = {l: i for i, l in enumerate(SEQCLS_LABELS)}
    seqcls["_webert_note"] = (
        "random seeded test head on all-MiniLM-L6-v2 (scripts/make_test_heads.py, seed %d); "
        "label names are cosmetic" % SEED_SEQCLS
    )
    qa = dict(base)
    qa["architectures"] = ["BertForQuestionAnswering"]
    qa["_webert_note"] = (
        "random seeded test head on all-MiniLM-L6-v2 (scripts/make_test_heads.py, seed %d)" % SEED_QA
    )
    return seqcls, qa


def write(out_dir: Path, config: dict, tensors: dict, meta: dict):
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "config.json", "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
        f.write("\n")
    save_file(tensors, str(out_dir / "head.safetensors"), metadata=meta)
    os.chmod(out_dir / "head.safetensors", 0o644)  # safetensors creates the file 0600


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=str(ROOT / "models"))
    ap.add_argument("--out", default=str(ROOT / "tests" / "heads"))
    ap.add_argument("--no-check", action="store_true", help="skip the transformers self-check")
    args = ap.parse_args()
    models, out = Path(args.models), Path(args.out)

    names = encoder_tensor_names(models)
    prefixed = any(n.startswith("bert.") for n in names)
    has_pooler = any(n.endswith("pooler.dense.weight") for n in names)
    print(f"MiniLM: {len(names)} tensors, `bert.` prefix: {prefixed}, pooler.dense present: {has_pooler}")
    base = minilm_config(models)
    h = base["hidden_size"]
    seqcls_cfg, qa_cfg = head_configs(base)

    w, b = seeded_linear(SEED_SEQCLS, len(SEQCLS_LABELS), h, SEQCLS_WEIGHT_STD)
    seqcls = {"classifier.weight": w, "classifier.bias": b}
    if not has_pooler:  # not the case for all-MiniLM-L6-v2, kept for other encoders
        pw, pb = seeded_linear(SEED_SEQCLS + 1, h, h, 1.0 / h ** 0.5)
        seqcls["bert.pooler.dense.weight"] = pw
        seqcls["bert.pooler.dense.bias"] = pb
    # one metadata key only: safetensors writes the metadata map in hash order, so several keys
    # would make the file bytes differ from run to run
    meta = {"webert": f"random test head (not fine-tuned) for all-MiniLM-L6-v2; scripts/make_test_heads.py "
                      f"seed={SEED_SEQCLS} weight_std={SEQCLS_WEIGHT_STD} bias_std={BIAS_STD}"}
    write(out / "seqcls", seqcls_cfg, seqcls, meta)

    w, b = seeded_linear(SEED_QA, 2, h, QA_WEIGHT_STD)
    meta = {"webert": f"random test head (not fine-tuned) for all-MiniLM-L6-v2; scripts/make_test_heads.py "
                      f"seed={SEED_QA} weight_std={QA_WEIGHT_STD} bias_std={BIAS_STD}"}
    write(out / "qa", qa_cfg, {"qa_outputs.weight": w, "qa_outputs.bias": b}, meta)
    for kind in ("seqcls", "qa"):
        for fn in ("config.json", "head.safetensors"):
            p = out / kind / fn
            print(f"wrote {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p} ({p.stat().st_size} bytes)")

    if not args.no_check:
        sys.dont_write_bytecode = True
        sys.path.insert(0, str(ROOT / "tests" / "golden"))
        from generate import load_head_model  # noqa: E402  (same assembly the goldens use)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(models / "minilm"))
        torch.set_num_threads(1)
        m = load_head_model("seqcls", models, out)
        for t in ["I loved it.", "Terrible service.", "The meeting is on Tuesday."]:
            with torch.no_grad():
                logits = m(**tok(t, return_tensors="pt")).logits[0]
            print(f"seqcls {t!r}: logits {[round(x, 4) for x in logits.tolist()]} "
                  f"-> {SEQCLS_LABELS[int(logits.argmax())]}")
        m = load_head_model("qa", models, out)
        enc = tok("Who wrote it?", "It was written by Jane Austen in 1813.", return_tensors="pt")
        with torch.no_grad():
            o = m(**enc)
        print("qa start logits", [round(x, 3) for x in o.start_logits[0].tolist()])


if __name__ == "__main__":
    main()
