#!/usr/bin/env python3
"""Seeded NLI head on the real MiniLM encoder, and zero-shot goldens from Hugging Face's
ZeroShotClassificationPipeline over it.

Writes
    tests/heads/nli/{config.json,head.safetensors}  BertForSequenceClassification with 3 labels
        CONTRADICTION / NEUTRAL / ENTAILMENT (as roberta-large-mnli names them), a random head
        (classifier.weight [3,384], classifier.bias [3]) drawn from a fixed seed: NOT an NLI model,
        its "entailment" means nothing; it tests the wiring (entailment label from id2label, pairs,
        softmax across labels, per-label [contradiction, entailment] softmax).
    tests/golden/nli.json  per case: text(s), candidate labels, template, the pipeline's output
        single-label and multi-label, and the raw logits of every (text, hypothesis) pair.

Usage:  /work/pyenv/bin/python scripts/make_nli_golden.py
Tested with: torch 2.15, transformers 5.24, safetensors 0.7 (CPU, f32, eager attention, 1 thread).
"""
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch
from safetensors.torch import load_file, save_file

ROOT = Path(__file__).resolve().parent.parent
sys.dont_write_bytecode = True
sys.path.insert(0, str(ROOT / "tests" / "golden"))
from generate import encoder_state, eager, rf  # noqa: E402

from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, pipeline  # noqa: E402

SEED = 20240620
WEIGHT_STD = 4.0  # wide, as the other seeded heads: decisive orderings under f32 rounding
BIAS_STD = 0.1
LABELS = ["CONTRADICTION", "NEUTRAL", "ENTAILMENT"]
MODELS = ROOT / "models"
HEAD = ROOT / "tests" / "heads" / "nli"
OUT = ROOT / "tests" / "golden" / "nli.json"

LONG_PREMISE = " ".join(
    f"Day {i}: the train from Zürich reached Milan at {7 + i % 12}:{10 + i % 50} after a delay, "
    f"and the hotel near the station charged {80 + 7 * i} euros for a room with a view." for i in range(30))
LONG_TEMPLATE = ("Reading the whole account from the first day to the last, with its trains, stations, hotels, "
                 "delays, prices and views, and setting aside every detail that does not bear on the question, "
                 * 8) + "the text is mostly about {}."

CASES = [
    {"name": "tech", "texts": ["The new graphics card renders games at 120 frames per second."],
     "labels": ["technology", "sports", "cooking", "politics"], "template": None},
    {"name": "custom_template", "texts": ["Parliament voted on the budget after a long debate."],
     "labels": ["politics", "economy", "weather"], "template": "The topic of this text is {}."},
    {"name": "unicode_batch", "texts": ["Zoë a gagné le match 3–1 ⚽ hier soir à Zürich.",
                                        "Mix flour, water and salt; knead for ten minutes."],
     "labels": ["sport", "cuisine", "finance", "musique", "voyage"], "template": "Ce texte parle de {}."},
    {"name": "one_label", "texts": ["I would like to cancel my subscription."],
     "labels": ["complaint"], "template": None},
    # Over the model's 512 tokens: the pipeline cuts only the premise (truncation="only_first").
    {"name": "long_premise", "texts": [LONG_PREMISE], "labels": ["travel", "finance", "weather"], "template": None},
    # A hypothesis long enough that longest-first would cut it too; only_first keeps it whole.
    {"name": "long_hypothesis", "texts": [LONG_PREMISE[:1800]], "labels": ["travel", "finance"],
     "template": LONG_TEMPLATE},
]


def write_head(h: int):
    g = torch.Generator().manual_seed(SEED)
    w = (torch.randn(len(LABELS), h, generator=g) * WEIGHT_STD).contiguous()
    b = (torch.randn(len(LABELS), generator=g) * BIAS_STD).contiguous()
    cfg = json.loads((MODELS / "minilm" / "config.json").read_text())
    cfg["architectures"] = ["BertForSequenceClassification"]
    cfg["id2label"] = {str(i): l for i, l in enumerate(LABELS)}
    cfg["label2id"] = {l: i for i, l in enumerate(LABELS)}
    cfg["_webert_note"] = f"random seeded NLI-shaped test head on all-MiniLM-L6-v2 (scripts/make_nli_golden.py, seed {SEED})"
    HEAD.mkdir(parents=True, exist_ok=True)
    (HEAD / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    meta = {"webert": f"random test head (not fine-tuned) for all-MiniLM-L6-v2; scripts/make_nli_golden.py "
                      f"seed={SEED} weight_std={WEIGHT_STD} bias_std={BIAS_STD}"}
    save_file({"classifier.weight": w, "classifier.bias": b}, str(HEAD / "head.safetensors"), metadata=meta)
    os.chmod(HEAD / "head.safetensors", 0o644)


def load_model():
    cfg = eager(BertConfig.from_pretrained(str(HEAD)))
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg)
    sd = encoder_state(MODELS)
    sd.update(load_file(str(HEAD / "head.safetensors")))
    model.load_state_dict(sd, strict=True)
    return model.eval()


def main():
    torch.set_num_threads(1)
    h = json.loads((MODELS / "minilm" / "config.json").read_text())["hidden_size"]
    write_head(h)
    model = load_model()
    tok = AutoTokenizer.from_pretrained(str(MODELS / "minilm"))
    zs = pipeline("zero-shot-classification", model=model, tokenizer=tok, device="cpu")
    default_template = "This example is {}."
    out = {"model": "models/minilm + tests/heads/nli", "labels": LABELS, "default_template": default_template, "cases": []}
    for c in CASES:
        template = c["template"] or default_template
        kw = {} if c["template"] is None else {"hypothesis_template": c["template"]}
        case = {"name": c["name"], "texts": c["texts"], "candidate_labels": c["labels"],
                "hypothesis_template": c["template"], "results": []}
        for text in c["texts"]:
            r = {}
            for key, multi in (("single_label", False), ("multi_label", True)):
                p = zs(text, c["labels"], multi_label=multi, **kw)
                r[key] = {"labels": p["labels"], "scores": [rf(s) for s in p["scores"]]}
                gaps = [a - b for a, b in zip(p["scores"], p["scores"][1:])]
                if key == "single_label" and gaps and min(gaps) < 1e-3:
                    print(f"warning: {c['name']} {key}: near tie {min(gaps):.2e}")
            enc = tok([text] * len(c["labels"]), [template.format(l) for l in c["labels"]],
                      return_tensors="pt", padding=True, truncation="only_first")
            with torch.no_grad():
                r["logits"] = [[rf(x) for x in row] for row in model(**enc).logits.tolist()]
            case["results"].append(r)
        out["cases"].append(case)
        print(c["name"], [(r["single_label"]["labels"][0], r["single_label"]["scores"][0]) for r in case["results"]])
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} and {HEAD.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
