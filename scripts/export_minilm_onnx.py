#!/usr/bin/env python3
"""Export models/minilm (BertModel) to ONNX f32 for the onnxruntime benchmark peer.

Uses the dynamo exporter (the legacy TorchScript exporter bakes the mask length
into the graph and gives wrong results at other lengths). Dynamic batch and
sequence axes; inputs input_ids/attention_mask/token_type_ids; output
last_hidden_state. Verifies against PyTorch (max abs diff < 1e-4).

Usage: HF_HUB_OFFLINE=1 python scripts/export_minilm_onnx.py [--model DIR] [--out FILE]
"""
import argparse
import os
import pathlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import onnxruntime as ort
import torch
from transformers import AutoModel

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMES = ("input_ids", "attention_mask", "token_type_ids")


class Encoder(torch.nn.Module):
    """Positional-argument wrapper returning only last_hidden_state."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask, token_type_ids):
        return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                         token_type_ids=token_type_ids).last_hidden_state


def inputs(batch, seq, vocab, pad=0):
    g = torch.Generator().manual_seed(batch * 1000 + seq)
    ids = torch.randint(1000, vocab, (batch, seq), generator=g)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if pad:  # right-pad the last row so masking is exercised
        mask[-1, seq - pad:] = 0
    return ids, mask, torch.zeros(batch, seq, dtype=torch.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=ROOT / "models/minilm")
    ap.add_argument("--out", default=ROOT / "models/bench/minilm.onnx")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    bert = AutoModel.from_pretrained(a.model, attn_implementation="eager").eval()
    model = Encoder(bert).eval()
    vocab = bert.config.vocab_size
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("sequence")
    shapes = {n: {0: batch, 1: seq} for n in NAMES}
    with torch.no_grad():
        prog = torch.onnx.export(model, inputs(2, 16, vocab), dynamo=True,
                                 input_names=list(NAMES), output_names=["last_hidden_state"],
                                 dynamic_shapes=shapes, external_data=False)
    prog.save(str(out))
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB)")

    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    worst = 0.0
    for b, s, pad in [(1, 7, 0), (1, 128, 0), (3, 45, 10), (2, 300, 37)]:
        x = inputs(b, s, vocab, pad)
        with torch.no_grad():
            ref = model(*x).numpy()
        got = sess.run(None, {n: t.numpy() for n, t in zip(NAMES, x)})[0]
        diff = float(np.abs(ref - got).max())
        worst = max(worst, diff)
        print(f"batch={b} seq={s} pad={pad}: max abs diff {diff:.2e}")
    assert worst < 1e-4, f"ONNX export disagrees with PyTorch: {worst}"
    print("ok")


if __name__ == "__main__":
    main()
