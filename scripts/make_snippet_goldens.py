"""Goldens for tests/browser/snippets.test.mjs: what Hugging Face's Python pipelines answer for
the inputs of transformers.js's documentation snippets, on the local models the test's mock Hub
serves under the snippets' model ids (seeded tiny checkpoints of tests/tiny, and MiniLM).
Writes tests/golden/snippets.json.
    /work/pyenv/bin/python scripts/make_snippet_goldens.py    (torch, transformers)
"""
import json
from pathlib import Path

import torch
from transformers import pipeline

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "tests" / "tiny"


def run(name, task, model, *args, **kwargs):
    pipe = pipeline(task, model=str(model), device="cpu")
    with torch.no_grad():
        out = pipe(*args, **kwargs)
    return {"name": name, "output": out}


def features(model, text, pooled):
    pipe = pipeline("feature-extraction", model=str(model), device="cpu")
    states = torch.tensor(pipe(text))  # [1, tokens, hidden]
    if not pooled:
        return states.tolist()
    mean = states.mean(dim=1)
    return torch.nn.functional.normalize(mean, dim=-1).tolist()


cases = [
    run("sentiment", "text-classification", TINY / "distilbert-seqcls", "I love transformers!"),
    run("sentiment top 5", "text-classification", TINY / "roberta-seqcls", "Le meilleur film de tous les temps.", top_k=5),
    run("toxic, all labels", "text-classification", TINY / "electra-seqcls", "I hate you!", top_k=None),
    run("fill-mask ettin", "fill-mask", TINY / "modernbert-mlm", "The capital of France is [MASK]."),
    run("fill-mask bert", "fill-mask", TINY / "distilbert-mlm", "The goal of life is [MASK]."),
    run("fill-mask top 1", "fill-mask", TINY / "distilbert-mlm", "The Milky Way is a [MASK] galaxy.", top_k=1),
    {"name": "features", "output": features(ROOT / "models" / "minilm", "This is a simple test.", False)},
    {"name": "features mean normalized", "output": features(ROOT / "models" / "minilm", "This is a simple test.", True)},
]
out = ROOT / "tests" / "golden" / "snippets.json"
out.write_text(json.dumps({"generator": "scripts/make_snippet_goldens.py", "cases": cases}, indent=1) + "\n")
print(f"wrote {out}")
