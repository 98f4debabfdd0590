#!/usr/bin/env python3
"""BERT's pre-training heads: seeded next-sentence-prediction heads on the real splade-tiny
encoder, and PyTorch goldens for next-sentence prediction and masked-LM pseudo-log-likelihood.

Writes (deterministic; rerunning rewrites identical files):
    tests/heads/nsp/{config.json,head.safetensors}          BertForNextSentencePrediction
    tests/heads/pretraining/{config.json,head.safetensors}  BertForPreTraining
        head.safetensors: bert.pooler.dense.{weight,bias} [128,128]/[128] and
        cls.seq_relationship.{weight,bias} [2,128]/[2], drawn from a fixed seed (random, NOT
        trained: the IsNext/NotNext scores mean nothing). splade-tiny (a BertForMaskedLM) has no
        pooler. The pre-training model takes its masked-LM head from splade-tiny itself
        (cls.predictions.*, decoder tied to the word embeddings: no decoder tensor exists).
    tests/golden/nsp.json   IsNext/NotNext logits and softmax per pair, for both heads
    tests/golden/pll.json   pseudo-log-likelihoods on splade-tiny (Salazar et al. 2020)

A test model folder is models/splade-tiny/{model.safetensors,tokenizer*.json} plus
tests/heads/<kind>/{config.json,head.safetensors} (tests/common/mod.rs `with_head_on`).

PLL definition (what webert implements): tokenize with special tokens; for each non-special
token i (n of them), replace it by the mask token and take log_softmax(MLM logits at i)[orig id];
the PLL is the sum. A text whose n content tokens exceed the window's room c = max_length -
(special tokens) scores token i in the window of content tokens [s, s + c) with
s = clamp(i - (c - 1) // 2, 0, n - c), i.e. centred on i, special tokens around it, positions
from 0: every token scored once, with as much context on both sides as the window allows.

Usage:  /work/pyenv/bin/python scripts/make_mlm_goldens.py
Made with: torch 2.15, transformers 5.24, tokenizers 0.22, safetensors, numpy (fp32, CPU, eval,
eager attention, one thread).
"""
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch
from safetensors.torch import save_file
from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM,
                          BertForNextSentencePrediction, BertForPreTraining)
import transformers
import tokenizers

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
HEADS = ROOT / "tests" / "heads"
GOLDEN = ROOT / "tests" / "golden"
SEEDS = {"nsp": 20261201, "pretraining": 20261202}
POOLER_STD = 0.05  # pre-activations of std ~0.5 on splade's [CLS] state (norm ~11): tanh not saturated
NSP_STD = 0.3      # IsNext/NotNext logit gaps of a few units: probabilities away from 0 and 1
BIAS_STD = 0.1
ARCH = {"nsp": "BertForNextSentencePrediction", "pretraining": "BertForPreTraining"}

PAIRS = [
    ("The weather was cold this morning.", "She wore a thick coat and gloves."),
    ("I went to the store to buy milk.", "Penguins live in Antarctica."),
    ("He opened the door.", "The room was dark and quiet."),
    ("Zoë moved to Zürich in 2019.", "Elle y apprend l'allemand ☕ — lentement."),
    ("Stock markets fell sharply on Monday after the central bank raised interest rates again, "
     "surprising analysts who had expected a pause.",
     "Investors moved their money into government bonds, and the dollar rose against most currencies."),
    ("", "An empty first sentence."),
]

PLL_TEXTS = [
    {"text": "The cat sat on the mat."},
    {"text": "Paris is the capital of France."},
    {"text": "the the of cat mat sat on"},
    {"text": "Zoë visited Zürich and São Paulo — naïve café ☕ in 2019!"},
    {"text": "Emoji 😀 then words 🤗 after."},
    {"text": "A"},
    {"text": ""},
]
LONG = ("The history of the printing press begins in the fifteenth century, when Johannes Gutenberg "
        "combined movable metal type, oil-based ink and a wooden press adapted from those used for wine. "
        "Within a few decades, printing shops had spread across Europe, books became cheaper, and ideas "
        "travelled faster than ever before.")
PLL_TEXTS += [{"text": LONG, "max_length": 24}, {"text": LONG, "max_length": 64}, {"text": LONG}]


def r7(x):
    return float(f"{float(x):.7g}")


def versions():
    return {"python": sys.version.split()[0], "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__}


def seeded(seed, h):
    g = torch.Generator().manual_seed(seed)
    return {
        "bert.pooler.dense.weight": (torch.randn(h, h, generator=g) * POOLER_STD).contiguous(),
        "bert.pooler.dense.bias": (torch.randn(h, generator=g) * BIAS_STD).contiguous(),
        "cls.seq_relationship.weight": (torch.randn(2, h, generator=g) * NSP_STD).contiguous(),
        "cls.seq_relationship.bias": (torch.randn(2, generator=g) * BIAS_STD).contiguous(),
    }


def write_heads(base_cfg):
    h = base_cfg["hidden_size"]
    out = {}
    for kind, seed in SEEDS.items():
        d = HEADS / kind
        d.mkdir(parents=True, exist_ok=True)
        cfg = dict(base_cfg)
        cfg["architectures"] = [ARCH[kind]]
        cfg["_webert_note"] = (f"random seeded pooler + cls.seq_relationship on splade-tiny "
                               f"(scripts/make_mlm_goldens.py, seed {seed}); not trained")
        with open(d / "config.json", "w") as f:
            json.dump(cfg, f, indent=2, sort_keys=True)
            f.write("\n")
        tensors = seeded(seed, h)
        meta = {"webert": f"random NSP head (not trained) for splade-tiny; scripts/make_mlm_goldens.py "
                          f"seed={seed} pooler_std={POOLER_STD} nsp_std={NSP_STD} bias_std={BIAS_STD}"}
        save_file(tensors, str(d / "head.safetensors"), metadata=meta)
        os.chmod(d / "head.safetensors", 0o644)
        out[kind] = tensors
    return out


def nsp_model(kind, mlm_state, head):
    cls = {"nsp": BertForNextSentencePrediction, "pretraining": BertForPreTraining}[kind]
    cfg = BertConfig.from_pretrained(str(HEADS / kind))
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = cls(cfg)
    want = model.state_dict()
    sd = {k: v for k, v in mlm_state.items() if k in want}
    sd.update(head)
    if "cls.predictions.decoder.weight" in want:  # tied: the word embeddings
        sd["cls.predictions.decoder.weight"] = sd["bert.embeddings.word_embeddings.weight"]
    if "cls.predictions.decoder.bias" in want:
        sd["cls.predictions.decoder.bias"] = sd["cls.predictions.bias"]
    missing = sorted(k for k in want if k not in sd and not k.endswith("position_ids"))
    assert not missing, missing
    model.load_state_dict(sd, strict=False)
    return model.eval()


def gen_nsp(tok, mlm_state, heads):
    out = {"versions": versions(), "labels": ["IsNext", "NotNext"],
           "notes": "tokenizer(a, b); softmax over the two seq_relationship logits, index 0 = IsNext",
           "models": {}}
    for kind in SEEDS:
        m = nsp_model(kind, mlm_state, heads[kind])
        cases = []
        for a, b in PAIRS:
            enc = tok(a, b, return_tensors="pt")
            with torch.no_grad():
                o = m(**enc)
            logits = (o.logits if kind == "nsp" else o.seq_relationship_logits)[0]
            p = torch.softmax(logits.double(), -1)
            cases.append({"text": a, "text_pair": b, "input_ids": enc["input_ids"][0].tolist(),
                          "token_type_ids": enc["token_type_ids"][0].tolist(),
                          "logits": [r7(x) for x in logits], "probs": [r7(x) for x in p]})
            print(f"nsp {kind}: {a[:24]!r} / {b[:24]!r}: IsNext {float(p[0]):.4f}")
        out["models"][kind] = {"architecture": ARCH[kind], "seed": SEEDS[kind], "cases": cases}
    (GOLDEN / "nsp.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


def windows(n, c):
    """Per content token i: the start of its window of c content tokens (centred, clamped)."""
    return [0 if n <= c else min(max(i - (c - 1) // 2, 0), n - c) for i in range(n)]


def pll(model, tok, text, max_length):
    enc = tok(text, return_offsets_mapping=True, return_special_tokens_mask=True)
    ids, special, offsets = enc["input_ids"], enc["special_tokens_mask"], enc["offset_mapping"]
    content = [i for i, s in enumerate(special) if s == 0]
    n = len(content)
    prefix = ids[:content[0]] if content else ids
    suffix = ids[content[-1] + 1:] if content else []
    c = max_length - len(prefix) - len(suffix)
    starts = windows(n, c)
    seqs, pos = [], []
    for i in range(n):
        s = starts[i]
        body = [ids[content[j]] for j in range(s, min(s + c, n))]
        at = i - s
        body[at] = tok.mask_token_id
        seqs.append(prefix + body + suffix)
        pos.append(len(prefix) + at)
    tokens, total = [], 0.0
    for b0 in range(0, n, 64):
        batch = seqs[b0:b0 + 64]
        L = max(len(x) for x in batch)
        inp = torch.tensor([x + [tok.pad_token_id] * (L - len(x)) for x in batch])
        att = torch.tensor([[1] * len(x) + [0] * (L - len(x)) for x in batch])
        with torch.no_grad():
            lg = model(input_ids=inp, attention_mask=att, token_type_ids=torch.zeros_like(inp)).logits
        for k in range(len(batch)):
            i = b0 + k
            lp = torch.log_softmax(lg[k, pos[i]].double(), -1)[ids[content[i]]].item()
            total += lp
            st, en = offsets[content[i]]
            tokens.append({"token": tok.convert_ids_to_tokens(ids[content[i]]), "log_prob": r7(lp),
                           "start": st, "end": en})
    return {"input_ids": ids, "window_starts": starts, "pseudo_log_likelihood": r7(total), "tokens": tokens}


def gen_pll(tok, model):
    cases = []
    for case in PLL_TEXTS:
        ml = case.get("max_length", tok.model_max_length if tok.model_max_length < 1e9 else 512)
        r = pll(model, tok, case["text"], ml)
        cases.append({"text": case["text"], "max_length": case.get("max_length"), **r})
        print(f"pll (max {ml}) {case['text'][:40]!r}: {r['pseudo_log_likelihood']} over {len(r['tokens'])} tokens")
    (GOLDEN / "pll.json").write_text(json.dumps({
        "model": "models/splade-tiny (BertForMaskedLM, decoder tied to the word embeddings)",
        "versions": versions(),
        "definition": __doc__[__doc__.index("PLL definition"):__doc__.index("Usage:")].strip(),
        "notes": "max_length null: the model's limit; offsets are code points; log_prob in float64 "
                 "from fp32 logits; window_starts[i]: first content token of token i's window",
        "cases": cases,
    }, indent=1, ensure_ascii=False) + "\n")


def main():
    torch.set_num_threads(1)
    folder = MODELS / "splade-tiny"
    tok = AutoTokenizer.from_pretrained(str(folder))
    mlm = BertForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    base = json.loads((folder / "config.json").read_text())
    heads = write_heads(base)
    gen_nsp(tok, mlm.state_dict(), heads)
    gen_pll(tok, mlm)


if __name__ == "__main__":
    main()
