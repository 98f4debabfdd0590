#!/usr/bin/env python3
"""Regenerate the JSON golden files the Rust tests compare against.

    HF_HUB_OFFLINE=1 python tests/golden/generate.py [--only minilm,seqcls,qa,pii,splade]

References are HF transformers PyTorch f32 on CPU (eval mode, no_grad, eager attention, one
thread) and onnxruntime (CPU) for the shipped q4 PII model; task outputs come from the HF
pipelines. See README.md next to this file for the environment and the tolerances.

Needs transformers 4.x (tested: 4.57.6): transformers 5 removed the `question-answering`
pipeline. The other pipelines are unchanged between 4.57 and 5.x (this script runs on 5.x
with --only minilm,seqcls,pii,splade).

Models come from models/ (scripts/fetch_models.sh) and the seeded heads from tests/heads/
(scripts/make_test_heads.py). Nothing is downloaded.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import hashlib
import json
import platform
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)
warnings.filterwarnings("ignore", message=".*fallback heuristic.*")

import transformers  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import (  # noqa: E402
    AutoTokenizer,
    BertConfig,
    BertForMaskedLM,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    pipeline,
)

transformers.logging.set_verbosity_error()

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
HEADS = ROOT / "tests" / "heads"
OUT = ROOT / "tests" / "golden"
SIG = 7  # significant digits kept for floats
GAP_WARN = 1e-3  # warn when consecutive ranked scores are closer than this (relative)

# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def rf(x) -> float:
    return float(f"{float(x):.{SIG}g}")


def rl(a):
    """numpy / torch array -> nested lists of floats rounded to SIG significant digits."""
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    a = np.asarray(a)
    if a.ndim == 0:
        return rf(a)
    if a.ndim == 1:
        return [rf(v) for v in a.tolist()]
    return [rl(v) for v in a]


def clean(o):
    """Pipeline outputs -> plain JSON (numpy scalars converted, floats rounded)."""
    if isinstance(o, dict):
        return {k: clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [clean(v) for v in o]
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return rf(o)
    if isinstance(o, torch.Tensor):
        return clean(o.tolist())
    return o


def ints(a):
    if isinstance(a, torch.Tensor):
        a = a.tolist()
    return [int(v) for v in a]


def encode_json(o, ind=0) -> str:
    """Indented JSON, but lists of scalars stay on one line (keeps files diffable and small)."""
    pad = "  " * ind
    if isinstance(o, dict):
        if not o:
            return "{}"
        items = [f"{pad}  {json.dumps(k, ensure_ascii=False)}: {encode_json(v, ind + 1)}" for k, v in o.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(o, (list, tuple)):
        if all(not isinstance(v, (dict, list, tuple)) for v in o):
            return json.dumps(list(o), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return "[\n" + ",\n".join(pad + "  " + encode_json(v, ind + 1) for v in o) + "\n" + pad + "]"
    return json.dumps(o, ensure_ascii=False, allow_nan=False)


def write_json(name: str, obj: dict):
    path = OUT / name
    text = encode_json(obj) + "\n"
    path.write_text(text, encoding="utf-8")
    size = path.stat().st_size
    print(f"wrote {path} ({size / 1e6:.2f} MB)")
    if size > 3_000_000:
        print(f"WARNING: {name} is above 3 MB")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def versions() -> dict:
    v = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "numpy": np.__version__,
    }
    for mod in ("tokenizers", "safetensors", "onnxruntime", "onnx"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            pass
    return v


def check_gaps(what: str, scores, rel: float = GAP_WARN):
    """Warn if a ranked list has near ties that f32 noise could reorder."""
    s = [float(x) for x in scores]
    for i in range(len(s) - 1):
        gap = abs(s[i] - s[i + 1])
        if gap < rel * max(abs(s[i]), 1e-12):
            print(f"WARNING near tie in {what}: rank {i} {s[i]:.7g} vs rank {i + 1} {s[i + 1]:.7g}")


def tokenizer_info(tok, folder: Path, call: str) -> dict:
    tj = json.loads((folder / "tokenizer.json").read_text())
    mml = tok.model_max_length
    return {
        "file": f"models/{folder.name}/tokenizer.json",
        "tokenizer_json_sha256": sha256(folder / "tokenizer.json"),
        "hf_class": type(tok).__name__,
        "model_max_length": mml if mml < 1e9 else None,
        "model_max_length_note": None if mml < 1e9 else f"unset in tokenizer_config.json ({mml:.3g})",
        "tokenizer_json_truncation": tj.get("truncation"),
        "tokenizer_json_padding": tj.get("padding"),
        "normalizer": tj.get("normalizer"),
        "call": call,
        "offsets": "character offsets are Unicode code point indices into the Python str (not bytes)",
    }


def model_info(folder: str, cls: str, extra=None) -> dict:
    d = {"dir": f"models/{folder}", "class": cls, "dtype": "float32", "device": "cpu",
         "attn_implementation": "eager", "mode": "eval, torch.no_grad"}
    d.update(extra or {})
    return d


def eager(cfg):
    cfg._attn_implementation = "eager"
    return cfg


# --------------------------------------------------------------------------------------------
# model assembly (shared with scripts/make_test_heads.py)
# --------------------------------------------------------------------------------------------


def encoder_state(models: Path = MODELS, prefix: str = "bert.") -> dict:
    """MiniLM's model.safetensors (names without `bert.`), re-prefixed for a task model."""
    sd = load_file(str(models / "minilm" / "model.safetensors"))
    return {(k if k.startswith(prefix) else prefix + k): v for k, v in sd.items()
            if not k.endswith("position_ids")}


def load_head_model(kind: str, models: Path = MODELS, heads: Path = HEADS):
    """MiniLM encoder + seeded head, assembled like the Rust test folder
    (models/minilm/model.safetensors + tests/heads/<kind>/{config.json,head.safetensors})."""
    cls = {"seqcls": BertForSequenceClassification, "qa": BertForQuestionAnswering}[kind]
    cfg = eager(BertConfig.from_pretrained(str(heads / kind)))
    torch.manual_seed(0)
    model = cls(cfg)
    sd = encoder_state(models)
    sd.update(load_file(str(heads / kind / "head.safetensors")))
    want = set(model.state_dict().keys())
    dropped = sorted(k for k in sd if k not in want)  # QA has no pooler
    assert all(k.startswith("bert.pooler.") for k in dropped), dropped
    missing = sorted(want - set(sd))
    assert not missing, missing
    model.load_state_dict({k: v for k, v in sd.items() if k in want}, strict=True)
    return model.eval()


# --------------------------------------------------------------------------------------------
# ONNX MatMulNBits / DequantizeLinear -> f32 state dict
# --------------------------------------------------------------------------------------------


def dequantize_onnx_bert(onnx_path) -> dict:
    """Dequantize a transformers.js-style quantized BERT ONNX export into an f32 HF state dict.

    * MatMulNBits (com.microsoft, bits=4): B is uint8 [N, n_blocks, block_size/2], two 4-bit
      values per byte, LOW nibble first; scales [N, n_blocks] (f32); optional zero_points
      (uint8 packed 4-bit [N, ceil(n_blocks/2)], or float [N, n_blocks]), default 8.
      W[n][k] = (q[n][k] - zp[n][k // block_size]) * scale[n][k // block_size]; W is [N=out, K=in],
      already the torch nn.Linear layout.
    * MatMul with an f32 initializer B [in, out]: transposed to [out, in].
    * DequantizeLinear on a (Gather of a) uint8/int8 initializer (embedding tables):
      W = (q - zero_point) * scale, per tensor or per `axis`.
    * Plain f32 initializers named like HF parameters (`*.weight`, `*.bias`) are kept as is.
    Parameter names come from the bias initializer of the Add that consumes the MatMul output
    (`bert.encoder.layer.0.attention.self.query.bias` -> `...query.weight`), falling back to the
    node name (`/bert/encoder/layer.0/attention/self/query/MatMul_Q4` -> the same).
    Returns {name: np.float32 array}.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(onnx_path))
    g = model.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    consumers = {}
    for n in g.node:
        for x in n.input:
            consumers.setdefault(x, []).append(n)

    def attrs(node):
        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    def linear_name(node) -> str:
        for c in consumers.get(node.output[0], []):
            if c.op_type == "Add":
                for x in c.input:
                    if x in inits and x.endswith(".bias"):
                        return x[: -len(".bias")] + ".weight"
        path = node.name.strip("/").rsplit("/", 1)[0]
        return path.replace("/", ".") + ".weight"

    out = {}
    for node in g.node:
        if node.op_type == "MatMulNBits":
            a = attrs(node)
            k, n, bits, bs = a["K"], a["N"], a["bits"], a["block_size"]
            if bits != 4:
                raise NotImplementedError(f"{node.name}: bits={bits}")
            if len(node.input) > 4 and node.input[4]:
                raise NotImplementedError(f"{node.name}: g_idx")
            n_blocks = (k + bs - 1) // bs
            q = inits[node.input[1]].reshape(n, n_blocks, bs // 2)
            q = np.stack([q & 0x0F, q >> 4], axis=-1).reshape(n, n_blocks, bs).astype(np.float32)
            scale = inits[node.input[2]].reshape(n, n_blocks).astype(np.float32)
            if len(node.input) > 3 and node.input[3]:
                zp = inits[node.input[3]]
                if zp.dtype == np.uint8:
                    zp = zp.reshape(n, -1)
                    zp = np.stack([zp & 0x0F, zp >> 4], axis=-1).reshape(n, -1)[:, :n_blocks]
                zp = zp.reshape(n, n_blocks).astype(np.float32)
            else:
                zp = np.full((n, n_blocks), 8.0, dtype=np.float32)
            w = ((q - zp[:, :, None]) * scale[:, :, None]).reshape(n, n_blocks * bs)[:, :k]
            name = linear_name(node)
            out[name] = np.ascontiguousarray(w, dtype=np.float32)
            if len(node.input) > 5 and node.input[5]:
                out[name[: -len(".weight")] + ".bias"] = inits[node.input[5]].astype(np.float32)
        elif node.op_type == "MatMul" and node.input[1] in inits:
            out[linear_name(node)] = np.ascontiguousarray(inits[node.input[1]].T, dtype=np.float32)
        elif node.op_type == "DequantizeLinear":
            x, s = node.input[0], node.input[1]
            src = x if x in inits else producer[x].input[0]  # Gather(table_quantized, ids)
            if src not in inits:
                continue  # activation quantization, not a weight
            qv = inits[src].astype(np.float32)
            scale = inits[s].astype(np.float32)
            zp = inits[node.input[2]].astype(np.float32) if len(node.input) > 2 and node.input[2] else np.float32(0)
            if scale.ndim == 1 and scale.size > 1:
                axis = attrs(node).get("axis", 1)
                shape = [1] * qv.ndim
                shape[axis] = -1
                scale, zp = scale.reshape(shape), np.asarray(zp).reshape(shape if np.ndim(zp) else [])
            name = s[: -len("_scale")] if s.endswith("_scale") else src.replace("_quantized", "")
            out[name] = ((qv - zp) * scale).astype(np.float32)
    for name, arr in inits.items():
        if arr.dtype == np.float32 and name.endswith((".weight", ".bias")) and name not in out:
            out[name] = arr
    return out


def load_pii_torch(models: Path = MODELS):
    folder = models / "pii"
    sd = {k: torch.from_numpy(np.array(v)) for k, v in dequantize_onnx_bert(folder / "onnx" / "model_q4.onnx").items()}
    cfg = eager(BertConfig.from_pretrained(str(folder)))
    torch.manual_seed(0)
    model = BertForTokenClassification(cfg)
    want = set(model.state_dict().keys())
    assert set(sd) == want, (sorted(set(sd) - want), sorted(want - set(sd)))
    model.load_state_dict(sd, strict=True)
    return model.eval()


# --------------------------------------------------------------------------------------------
# texts
# --------------------------------------------------------------------------------------------

LONG_TEXT = (
    "The history of the printing press begins long before Johannes Gutenberg set up his workshop in Mainz. "
    "In China, craftsmen carved entire pages into wooden blocks as early as the seventh century, and by the "
    "eleventh century Bi Sheng had experimented with movable type made of baked clay. Korean printers later cast "
    "metal type and produced the Jikji, a Buddhist text, in 1377. What Gutenberg contributed around 1440 was a "
    "complete system: a hand mould for casting uniform letters quickly, an oil-based ink that clung to metal, and "
    "a screw press adapted from the presses used to make wine and olive oil. Together these made it possible to "
    "print hundreds of identical copies of a book in the time a scribe needed to copy a single one. The famous "
    "Gutenberg Bible, finished in about 1455, showed that printed books could rival the beauty of manuscripts. "
    "Within fifty years, presses were operating in more than two hundred European cities, and an estimated twenty "
    "million volumes had been printed. Prices fell, literacy spread beyond monasteries and universities, and "
    "ideas travelled faster than ever before. Scholars could compare identical editions, scientists could share "
    "precise diagrams, and reformers such as Martin Luther used pamphlets to reach ordinary readers across the "
    "continent. Governments and churches soon tried to control what was printed through licences, censorship "
    "and lists of forbidden books, but the flood of paper proved impossible to stop. Historians still debate how "
    "much the press caused the changes that followed, yet few doubt that it transformed how knowledge was made, "
    "stored and shared, and that its effects can still be felt in the age of the internet."
)

QA_LONG_EXTRA = (
    " Paper itself had a long journey too. It was invented in China during the Han dynasty, traditionally "
    "credited to the court official Cai Lun in the year 105, and the technique reached Samarkand in the eighth "
    "century. From there papermaking spread to Baghdad, Cairo and finally to Spain and Italy, where the mills "
    "of Fabriano became famous for their watermarks. By the time Gutenberg began printing, paper was cheap "
    "enough to make mass production worthwhile, although the most luxurious copies of his Bible were still "
    "printed on vellum made from calfskin. A single vellum copy is thought to have required the skins of more "
    "than one hundred and seventy calves. Today forty-nine copies of the Gutenberg Bible survive, some complete "
    "and some in fragments, and they are among the most valuable books in the world."
)


# --------------------------------------------------------------------------------------------
# minilm.json
# --------------------------------------------------------------------------------------------


def pool(hidden: torch.Tensor, mask: torch.Tensor) -> dict:
    """hidden [B,T,H], mask [B,T] -> sentence-transformers style poolings (f32 torch)."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
    mx = hidden.masked_fill(m == 0, -1e9).max(1).values
    return {
        "mean": mean,
        "mean_l2": torch.nn.functional.normalize(mean, p=2, dim=1),
        "cls": hidden[:, 0],
        "max": mx,
    }


def gen_minilm():
    folder = MODELS / "minilm"
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = BertModel.from_pretrained(str(folder), attn_implementation="eager").eval()

    def run(enc):
        with torch.no_grad():
            return model(**enc).last_hidden_state

    cases_def = [
        # name, text, text_pair, truncation max_length, keep last_hidden_state
        ("short", "The quick brown fox jumps over the lazy dog.", None, None, True),
        ("pair", "How old are you?", "I am twenty-five years old and I live in Berlin.", None, True),
        ("unicode", "Café déjà vu: re\u0301sume\u0301 naïve — 東京タワーは美しい。🤗Hugging Face 🤗 rocks! ß ﬁ Ünïcödé",
         None, None, True),
        ("unicode_whitespace", "zero\u200bwidth\u00a0nbsp\ttab\nnewline  x\u3000ideographic-space", None, None, True),
        ("punctuation_numbers", "Email me at john.doe@example.com or call +1 (555) 010-9999!!! It's $3.50 #deal",
         None, None, True),
        ("empty", "", None, None, True),
        ("whitespace_only", "   \n\t ", None, None, False),
        ("long", LONG_TEXT, None, None, False),
        ("long_truncated_256", LONG_TEXT, None, 256, False),
    ]
    cases = []
    for name, text, pair, trunc, keep_hidden in cases_def:
        kw = dict(truncation=True, max_length=trunc) if trunc else {}
        enc = tok(text, pair, return_tensors="pt", **kw) if pair is not None else tok(text, return_tensors="pt", **kw)
        offs = tok(text, pair, return_offsets_mapping=True, **kw)["offset_mapping"] if pair is not None else \
            tok(text, return_offsets_mapping=True, **kw)["offset_mapping"]
        h = run(enc)
        p = pool(h, enc["attention_mask"])
        c = {
            "name": name,
            "text": text,
            "text_pair": pair,
            "truncation_max_length": trunc,
            "input_ids": ints(enc["input_ids"][0]),
            "token_type_ids": ints(enc["token_type_ids"][0]),
            "tokens": tok.convert_ids_to_tokens(enc["input_ids"][0]),
            "offsets": [[int(a), int(b)] for a, b in offs],
            "pooled": {k: rl(v[0]) for k, v in p.items()},
        }
        if keep_hidden:
            c["last_hidden_state"] = rl(h[0])
        cases.append(c)
        print(f"minilm {name}: {len(c['input_ids'])} tokens")

    # padded batch: same poolings with the attention mask doing the work
    btexts = ["A short one.", "A noticeably longer sentence that needs several more tokens than the first.", ""]
    benc = tok(btexts, padding=True, return_tensors="pt")
    bp = pool(run(benc), benc["attention_mask"])
    batch = {
        "texts": btexts,
        "padding": "longest (right), pad id 0, attention_mask 0 on pads",
        "input_ids": [ints(r) for r in benc["input_ids"]],
        "attention_mask": [ints(r) for r in benc["attention_mask"]],
        "pooled": {k: rl(v) for k, v in bp.items()},
    }

    def embed(texts):
        e = tok(texts, padding=True, return_tensors="pt")
        return pool(run(e), e["attention_mask"])["mean_l2"]

    query = "How do I bake fresh bread at home?"
    cands = [
        "A simple recipe for homemade sourdough loaves.",
        "Tips for kneading dough and proving it overnight.",
        "The stock market fell sharply on Monday.",
        "Bakeries in Paris open early in the morning.",
        "How to change a flat tyre on a bicycle.",
        "Flour, water, salt and yeast are all you need.",
    ]
    e = embed([query] + cands)
    cos = (e[1:] @ e[0]).numpy()
    order = [int(i) for i in np.argsort(-cos, kind="stable")]
    check_gaps("similarity", cos[order])
    similarity = {
        "pooling": "mean_l2",
        "query": query,
        "candidates": cands,
        "cosine": rl(cos),
        "ranking": order,
    }

    template = "This example is {}."
    zs_cases = [
        ("The new graphics card renders games at 120 frames per second.", ["technology", "sports", "cooking", "politics"]),
        ("The striker scored twice in the second half to win the final.", ["sports", "finance", "music"]),
        ("Simmer the onions slowly in butter until golden.", ["cooking", "travel", "science", "law"]),
        ("Parliament passed the budget after a long night of debate.", ["politics", "weather", "gardening"]),
    ]
    zs = []
    for text, labels in zs_cases:
        hyps = [template.format(l) for l in labels]
        e = embed([text] + hyps)
        cos = (e[1:] @ e[0]).double().numpy()
        soft = np.exp(20 * cos - (20 * cos).max())
        soft = soft / soft.sum()
        sig = 1 / (1 + np.exp(-20 * cos))
        so = np.argsort(-soft, kind="stable")
        mo = np.argsort(-sig, kind="stable")
        check_gaps(f"zero-shot {text[:20]}", soft[so])
        zs.append({
            "sequence": text,
            "candidate_labels": labels,
            "hypotheses": hyps,
            "cosine": rl(cos),
            "single_label": {"labels": [labels[i] for i in so], "scores": rl(soft[so])},
            "multi_label": {"labels": [labels[i] for i in mo], "scores": rl(sig[mo])},
        })
    zero_shot = {
        "hypothesis_template": template,
        "pooling": "mean_l2 (mean over attention-masked tokens incl. [CLS]/[SEP], then L2 normalise)",
        "scale": 20.0,
        "formula": "cos_i = dot(emb(text), emb(template.format(label_i))) with mean_l2 embeddings; "
                   "single_label: score_i = softmax_i(20 * cos); multi_label: score_i = sigmoid(20 * cos_i); "
                   "labels sorted by score, descending (20 = sentence-transformers MultipleNegativesRankingLoss scale)",
        "cases": zs,
    }

    write_json("minilm.json", {
        "model": model_info("minilm", "BertModel",
                            {"source": "all-MiniLM-L6-v2 (sentence-transformers)",
                             "sentence_transformers_max_seq_length": 256,
                             "sentence_transformers_modules": "Transformer -> Pooling(mean) -> Normalize"}),
        "tokenizer": tokenizer_info(tok, folder, "tokenizer(text[, text_pair]) -- HF __call__ disables the "
                                                 "tokenizer.json padding (Fixed 128) and truncation (128): no padding, "
                                                 "no truncation unless truncation_max_length is set"),
        "versions": versions(),
        "pooled_fields": {
            "mean": "sum(h * mask) / max(sum(mask), 1e-9) over all attention-masked tokens incl. [CLS]/[SEP]",
            "mean_l2": "mean / max(||mean||_2, 1e-12)  (= sentence-transformers all-MiniLM-L6-v2 output)",
            "cls": "h[0] (raw, no pooler)",
            "max": "max over attention-masked tokens (pads set to -1e9)",
        },
        "cases": cases,
        "batch": batch,
        "similarity": similarity,
        "zero_shot": zero_shot,
    })


# --------------------------------------------------------------------------------------------
# seqcls.json
# --------------------------------------------------------------------------------------------


def gen_seqcls():
    folder = MODELS / "minilm"
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = load_head_model("seqcls")
    pipe = pipeline("text-classification", model=model, tokenizer=tok, device="cpu")
    inputs = [
        ("I absolutely loved this movie, it was fantastic!", None),
        ("This is the worst product I have ever bought.", None),
        ("The package arrived on Tuesday.", None),
        ("Très bien 👍 東京 re\u0301sume\u0301", None),
        ("", None),
        (LONG_TEXT, None),
        ("Is the hotel close to the station?", "Yes, it is a five minute walk from the central station."),
        ("The food was cold.", "The waiter apologised and brought a new plate."),
    ]
    cases = []
    for text, pair in inputs:
        enc = tok(text, pair, return_tensors="pt") if pair is not None else tok(text, return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0]
        x = {"text": text, "text_pair": pair} if pair is not None else text
        soft = clean(pipe(x, top_k=None))
        sig = clean(pipe(x, top_k=None, function_to_apply="sigmoid"))
        check_gaps(f"seqcls softmax {text[:20]}", [d["score"] for d in soft])
        check_gaps(f"seqcls sigmoid {text[:20]}", [d["score"] for d in sig])
        cases.append({
            "text": text,
            "text_pair": pair,
            "input_ids": ints(enc["input_ids"][0]),
            "token_type_ids": ints(enc["token_type_ids"][0]),
            "logits": rl(logits),
            "pipeline": {"softmax": soft, "sigmoid": sig},
        })
        print(f"seqcls {text[:30]!r}: {soft[0]['label']} {soft[0]['score']:.4f}")
    write_json("seqcls.json", {
        "model": model_info("minilm", "BertForSequenceClassification", {
            "head": "tests/heads/seqcls (random seeded head, scripts/make_test_heads.py; labels are cosmetic)",
            "assembly": "models/minilm/model.safetensors (prefixed with `bert.`) + tests/heads/seqcls/head.safetensors "
                        "+ tests/heads/seqcls/config.json",
            "id2label": {str(k): v for k, v in model.config.id2label.items()},
        }),
        "tokenizer": tokenizer_info(tok, folder, "pipeline: tokenizer(text[, text_pair=...]) -- no padding, no truncation"),
        "versions": versions(),
        "pipeline": {"task": "text-classification", "top_k": None,
                     "softmax": "default function_to_apply (softmax, since num_labels > 1 and no problem_type)",
                     "sigmoid": "function_to_apply='sigmoid'",
                     "order": "sorted by score, descending"},
        "cases": cases,
    })


# --------------------------------------------------------------------------------------------
# qa.json
# --------------------------------------------------------------------------------------------


def gen_qa():
    if "question-answering" not in transformers.pipelines.SUPPORTED_TASKS:
        sys.exit("qa.json needs the question-answering pipeline: use transformers 4.x (e.g. 4.57.6)")
    folder = MODELS / "minilm"
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = load_head_model("qa")
    pipe = pipeline("question-answering", model=model, tokenizer=tok, device="cpu")
    mid_context = (
        "Marie Curie was born in Warsaw in 1867. She moved to Paris in 1891 to study physics and mathematics at "
        "the Sorbonne. Together with her husband Pierre she discovered polonium and radium, and in 1903 she shared "
        "the Nobel Prize in Physics with Pierre Curie and Henri Becquerel. In 1911 she received a second Nobel "
        "Prize, this time in Chemistry, making her the first person to win Nobel Prizes in two different sciences. "
        "She died in 1934 in Passy, France, from aplastic anaemia probably caused by her long exposure to radiation."
    )
    defaults = dict(top_k=3, max_seq_len=384, doc_stride=128, max_question_len=64, max_answer_len=15,
                    handle_impossible_answer=False, align_to_words=True)
    cases_def = [
        ("short", "What is the capital of France?",
         "Paris is the capital and most populous city of France. It is located on the Seine river.", {}),
        ("unicode", "Où se trouve la tour de Tokyo ?",
         "La tour de Tokyo (東京タワー) se trouve à Minato, Tōkyō 🗼. Elle mesure 333 mètres et fut achevée en 1958; "
         "re\u0301sume\u0301: c'est un symbole 🤗 de la reconstruction.", {}),
        ("long_multi_window", "How many copies of the Gutenberg Bible survive?", LONG_TEXT + QA_LONG_EXTRA, {}),
        ("small_windows", "Where was Marie Curie born?", mid_context + QA_LONG_EXTRA, dict(max_seq_len=64, doc_stride=16)),
        ("impossible", "What is the boiling point of mercury?", mid_context, dict(handle_impossible_answer=True)),
        ("short_answers_no_align", "When did she receive her second Nobel Prize?", mid_context,
         dict(max_answer_len=5, align_to_words=False)),
    ]
    cases = []
    for name, q, ctx, over in cases_def:
        params = dict(defaults, **over)
        out = pipe(question=q, context=ctx, **params)
        out = clean(out if isinstance(out, list) else [out])
        check_gaps(f"qa {name}", [a["score"] for a in out])
        # the windows the pipeline builds (fast tokenizer path)
        enc = tok(q, ctx, truncation="only_second", max_length=params["max_seq_len"], stride=params["doc_stride"],
                  return_overflowing_tokens=True, return_offsets_mapping=True)
        c = {
            "name": name,
            "question": q,
            "context": ctx,
            "params": params,
            "num_windows": len(enc["input_ids"]),
            "window_input_ids": [ints(w) for w in enc["input_ids"]],
            "answers": out,
        }
        if name == "short":
            e1 = tok(q, ctx, return_tensors="pt")
            with torch.no_grad():
                o = model(**e1)
            c["raw"] = {
                "input_ids": ints(e1["input_ids"][0]),
                "token_type_ids": ints(e1["token_type_ids"][0]),
                "offsets": [[int(a), int(b)] for a, b in tok(q, ctx, return_offsets_mapping=True)["offset_mapping"]],
                "start_logits": rl(o.start_logits[0]),
                "end_logits": rl(o.end_logits[0]),
            }
        cases.append(c)
        print(f"qa {name}: {c['num_windows']} window(s), top answer {out[0]}")
    write_json("qa.json", {
        "model": model_info("minilm", "BertForQuestionAnswering", {
            "head": "tests/heads/qa (random seeded head, scripts/make_test_heads.py)",
            "assembly": "models/minilm/model.safetensors (prefixed with `bert.`, pooler unused) + "
                        "tests/heads/qa/head.safetensors + tests/heads/qa/config.json",
        }),
        "tokenizer": tokenizer_info(tok, folder,
                                    "pipeline: tokenizer(question, context, truncation='only_second', "
                                    "max_length=max_seq_len, stride=doc_stride, return_overflowing_tokens=True, "
                                    "return_offsets_mapping=True, padding='do_not_pad')"),
        "versions": versions(),
        "pipeline": {
            "task": "question-answering",
            "notes": [
                "max_seq_len default = min(tokenizer.model_max_length=512, 384) = 384; doc_stride default 128",
                "max_question_len is only used by the slow-tokenizer path; the fast path never truncates the question",
                "scores: p_mask (question, special tokens except [CLS], padding) logits set to -10000, softmax over the "
                "window for start and end separately, score(s,e) = p_start[s] * p_end[e] for s <= e <= s + max_answer_len - 1; "
                "[CLS] probability zeroed after the null score is taken",
                "per window the best top_k*2+10 (align_to_words) or top_k spans are decoded; with align_to_words, "
                "start/end expand to the pre-tokenizer word containing the token (word_to_chars)",
                "answers whose text matches case-insensitively are MERGED and their scores SUMMED (also across windows)",
                "handle_impossible_answer: adds {answer:'', start:0, end:0, score: min over windows of p_start[CLS]*p_end[CLS]}",
                "final list sorted by score, descending, truncated to top_k; start/end are code point offsets in context",
            ],
        },
        "cases": cases,
    })


# --------------------------------------------------------------------------------------------
# pii.json
# --------------------------------------------------------------------------------------------


def gen_pii():
    import onnxruntime as ort

    folder = MODELS / "pii"
    onnx_path = folder / "onnx" / "model_q4.onnx"
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = load_pii_torch()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
    pipe = pipeline("token-classification", model=model, tokenizer=tok, device="cpu")

    long_max, long_stride = 128, 32
    tok_long = AutoTokenizer.from_pretrained(str(folder), model_max_length=long_max)
    pipe_long = pipeline("token-classification", model=model, tokenizer=tok_long, device="cpu")

    pii_snippets = [
        "Please contact Daniel Okafor at daniel.okafor@example.net or on 020 7946 0958.",
        "The invoice goes to 221B Baker Street, London NW1 6XE.",
        "Her colleague Sofía Hernández can be reached at +34 912 345 678.",
        "Send the contract to 1600 Amphitheatre Parkway, Mountain View, CA 94043.",
        "Employee ID 48213, SSN 078-05-1120, was issued to Priya Raman.",
    ]
    long_text = " ".join(
        [LONG_TEXT[:600], pii_snippets[0], LONG_TEXT[600:1300], pii_snippets[1], pii_snippets[2],
         LONG_TEXT[1300:], pii_snippets[3], QA_LONG_EXTRA, pii_snippets[4]])
    texts = [
        ("names_email", "My name is John Smith and my email is john.smith@example.com."),
        ("phones", "Call me at (555) 123-4567 or +1 415 555 0199 tomorrow morning."),
        ("address", "Ship it to 1600 Pennsylvania Avenue NW, Washington, DC 20500, attention Karen Lee."),
        ("unicode", "🤗 Hi, I'm Zoë Müller from Zürich 🇨🇭; write to zoë.müller@beispiel.de ✉️ or call +41 44 123 45 67."),
        ("ids", "My SSN is 123-45-6789, passport X12345678, driver's license D1234567, routing number 021000021 "
                "and account 000123456789."),
        ("address_url", "Maria García lives at 42 Elm Street, Apt 5B, Springfield, IL 62704. "
                        "Her website is https://maria.example.org/about"),
        ("no_pii", "The weather is nice today and the meeting went well."),
        ("empty", ""),
    ]

    def ort_logits(enc):
        feed = {k: np.asarray(enc[k], dtype=np.int64)[None] for k in ("input_ids", "attention_mask", "token_type_ids")}
        return sess.run(["logits"], feed)[0][0]

    def torch_logits(enc):
        t = {k: torch.tensor([enc[k]]) for k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.no_grad():
            return model(**t).logits[0].numpy()

    strategies = ["none", "simple", "first", "average", "max"]
    worst = 0.0
    cases = []
    for name, text in texts:
        enc = tok(text, return_offsets_mapping=True)
        lo, lt = ort_logits(enc), torch_logits(enc)
        diff = float(np.abs(lo - lt).max())
        worst = max(worst, diff)
        agree = int((lo.argmax(-1) == lt.argmax(-1)).sum())
        pl = {s: clean(pipe(text, aggregation_strategy=s)) for s in strategies}
        cases.append({
            "name": name,
            "text": text,
            "input_ids": ints(enc["input_ids"]),
            "tokens": tok.convert_ids_to_tokens(enc["input_ids"]),
            "offsets": [[int(a), int(b)] for a, b in enc["offset_mapping"]],
            "ort_vs_torch_max_abs_diff": rf(diff),
            "argmax_agree": f"{agree}/{len(enc['input_ids'])}",
            "ort_logits": rl(lo),
            "torch_logits": rl(lt),
            "pipeline": pl,
        })
        # decisiveness of the per-token argmax used by none/simple/first
        srt = np.sort(torch.softmax(torch.from_numpy(lt), -1).numpy(), -1)
        margin = float((srt[:, -1] - srt[:, -2]).min()) if len(srt) else 1.0
        print(f"pii {name}: {len(enc['input_ids'])} tokens, ort-vs-torch max|diff| {diff:.2e}, "
              f"argmax agree {agree}/{len(enc['input_ids'])}, min top1-top2 prob margin {margin:.2e}")
        if margin < 1e-3:
            print(f"WARNING pii {name}: near tie between labels (margin {margin:.2e})")

    # long text: windows of model_max_length tokens overlapping by `stride` (aggregation != none only)
    wenc = tok_long(long_text, truncation=True, max_length=long_max, stride=long_stride,
                    return_overflowing_tokens=True, return_offsets_mapping=True)
    win = []
    for i in range(len(wenc["input_ids"])):
        e = {k: wenc[k][i] for k in ("input_ids", "attention_mask", "token_type_ids")}
        lo, lt = ort_logits(e), torch_logits(e)
        diff = float(np.abs(lo - lt).max())
        worst = max(worst, diff)
        srt = np.sort(torch.softmax(torch.from_numpy(lt), -1).numpy(), -1)
        if float((srt[:, -1] - srt[:, -2]).min()) < 1e-3:
            print(f"WARNING pii long window {i}: near tie between labels")
        win.append({"input_ids": ints(e["input_ids"]),
                    "offsets": [[int(a), int(b)] for a, b in wenc["offset_mapping"][i]],
                    "ort_vs_torch_max_abs_diff": rf(diff),
                    "ort_logits": rl(lo), "torch_logits": rl(lt)})
    full_len = len(tok(long_text)["input_ids"])
    long_case = {
        "name": "long_windowed",
        "text": long_text,
        "full_length_tokens": full_len,
        "model_max_length": long_max,
        "stride": long_stride,
        "windowing": "tokenizer(text, truncation=True, max_length=model_max_length, stride=stride, "
                     "return_overflowing_tokens=True, padding=True): each window is [CLS] + up to "
                     "model_max_length-2 tokens + [SEP], consecutive windows share `stride` tokens; "
                     "entities from all windows are merged by aggregate_overlapping_entities (sorted by start; "
                     "overlapping: keep the longer, then the higher score)",
        "windows": win,
        "pipeline": {s: clean(pipe_long(long_text, aggregation_strategy=s, stride=long_stride))
                     for s in strategies if s != "none"},
    }
    print(f"pii long_windowed: {full_len} tokens, {len(win)} windows of {long_max} (stride {long_stride})")
    print(f"pii ORT (q4) vs torch (dequantized f32) overall max|diff| = {worst:.3e}")
    write_json("pii.json", {
        "model": model_info("pii", "BertForTokenClassification", {
            "onnx": "models/pii/onnx/model_q4.onnx",
            "onnx_sha256": sha256(onnx_path),
            "torch_weights": "dequantize_onnx_bert() in generate.py: MatMulNBits 4-bit, W[n][k] = (q - zp) * scale, "
                             "zp = 8 when absent, low nibble first, block_size 32, W already [out, in]; "
                             "embedding tables via DequantizeLinear (uint8, per-tensor scale/zero_point)",
            "ort": {"providers": ["CPUExecutionProvider"], "intra_op_num_threads": 1,
                    "graph_optimization_level": "default (ORT_ENABLE_ALL)"},
            "id2label": {str(k): v for k, v in model.config.id2label.items()},
        }),
        "tokenizer": tokenizer_info(tok, folder,
                                    "pipeline: tokenizer(text, truncation=True, return_special_tokens_mask=True, "
                                    "return_offsets_mapping=True); model_max_length is unset (1e30), so there is no "
                                    "effective truncation: texts > 512 tokens would overflow the position embeddings"),
        "versions": versions(),
        "ort_vs_torch_max_abs_diff": rf(worst),
        "pipeline": {
            "task": "token-classification",
            "model": "torch model (dequantized f32 weights)",
            "aggregation_strategies": strategies,
            "ignore_labels": ["O"],
            "notes": [
                "scores = softmax over the 35 labels per token; special tokens skipped",
                "none: one entry per non-O token: entity, score, index (token index in the window incl. [CLS]), word, start, end",
                "simple: adjacent tokens grouped when same tag and the next is not B-; entity_group = tag without B-/I-, "
                "score = mean of token scores, word = convert_tokens_to_string (## merged)",
                "first/average/max: tokens first merged into words (is_subword = token text length != offset span "
                "length, i.e. a ## continuation; [UNK] never a subword), then grouped as in simple",
            ],
        },
        "cases": cases,
        "long": long_case,
    })


# --------------------------------------------------------------------------------------------
# splade.json
# --------------------------------------------------------------------------------------------


def gen_splade():
    folder = MODELS / "splade-tiny"
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = BertForMaskedLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    pipe = pipeline("fill-mask", model=model, tokenizer=tok, device="cpu")
    texts = [
        "The capital of France is [MASK].",
        "I want to [MASK] a new car next year.",
        "She drank a cup of hot [MASK] this morning.",
        "Paris is a beautiful [MASK] in europe.",
        "The [MASK] sat on the [MASK] all afternoon.",
    ]

    def logits_of(text):
        enc = tok(text, return_tensors="pt")
        with torch.no_grad():
            return enc, model(**enc).logits[0]

    fill = []
    for t in texts:
        out = clean(pipe(t, top_k=5))
        enc, lg = logits_of(t)
        pos = [int(i) for i in (enc["input_ids"][0] == tok.mask_token_id).nonzero()[:, 0]]
        groups = out if pos and len(pos) > 1 else [out]  # HF: flat list for one mask, list of lists for several
        for gi, grp in enumerate(groups):
            check_gaps(f"fill-mask {t[:20]} #{gi}", [d["score"] for d in grp])
        fill.append({"text": t, "input_ids": ints(enc["input_ids"][0]), "mask_positions": pos,
                     "top_k": 5, "predictions": groups})
        print(f"splade fill-mask {t!r}: {[d['token_str'] for d in groups[0]]}")

    mask_rows = []
    for t in texts[:2]:
        enc, lg = logits_of(t)
        pos = [int(i) for i in (enc["input_ids"][0] == tok.mask_token_id).nonzero()[:, 0]]
        mask_rows.append({"text": t, "input_ids": ints(enc["input_ids"][0]), "mask_positions": pos,
                          "logits": rl(lg[pos])})
    t_all = "Hello world, this is a [MASK] test."
    enc, lg = logits_of(t_all)
    all_rows = {"text": t_all, "input_ids": ints(enc["input_ids"][0]), "columns": [0, 64], "logits": rl(lg[:, :64])}

    sparse = []
    for t in ["Gutenberg invented the printing press.", "What is the boiling point of water at sea level?"]:
        enc, lg = logits_of(t)
        w = torch.log1p(torch.relu(lg)).max(0).values  # single unpadded sequence: all tokens masked in
        top = torch.argsort(w, descending=True, stable=True)[:32]
        sparse.append({"text": t, "input_ids": ints(enc["input_ids"][0]),
                       "top_ids": ints(top), "top_tokens": tok.convert_ids_to_tokens(top.tolist()),
                       "top_weights": rl(w[top]), "nonzero": int((w > 0).sum())})

    write_json("splade.json", {
        "model": model_info("splade-tiny", "BertForMaskedLM", {
            "notes": "legacy LayerNorm gamma/beta names; no cls.predictions.decoder.weight: decoder tied to "
                     "bert.embeddings.word_embeddings.weight, decoder bias = cls.predictions.bias",
        }),
        "tokenizer": tokenizer_info(tok, folder, "tokenizer(text) -- no padding, no truncation"),
        "versions": versions(),
        "fill_mask": {
            "task": "fill-mask",
            "notes": "softmax over the vocab at each [MASK]; top_k by probability. predictions[i] is the "
                     "top_k list {score, token, token_str, sequence} for mask_positions[i] (the HF pipeline returns "
                     "that list directly for a single mask, a list of lists for several). Each mask is filled "
                     "independently; with several masks the HF `sequence` keeps the other [MASK] and also the "
                     "[CLS]/[SEP] tokens (decode without skip_special_tokens), with one mask they are skipped.",
            "cases": fill,
        },
        "mask_logits": {"notes": "full-vocabulary MLM logit rows at the [MASK] positions", "cases": mask_rows},
        "all_positions_logits": all_rows,
        "sparse": {"formula": "w[v] = max over tokens t (incl. [CLS]/[SEP]) of log(1 + relu(logits[t][v])); "
                              "top 32 by weight (SPLADE max pooling)",
                   "cases": sparse},
    })


GENERATORS = {"minilm": gen_minilm, "seqcls": gen_seqcls, "qa": gen_qa, "pii": gen_pii, "splade": gen_splade}


def main():
    global OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(GENERATORS), help="comma-separated subset of " + ",".join(GENERATORS))
    ap.add_argument("--out", default=str(OUT), help="output folder (default: tests/golden)")
    args = ap.parse_args()
    OUT = Path(args.out)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in args.only.split(","):
        GENERATORS[name.strip()]()


if __name__ == "__main__":
    main()
