#!/usr/bin/env python3
"""Build tiny seeded random-weight checkpoints of every supported model family and head, with
PyTorch goldens, under tests/tiny/<name>/ (checked by tests/families.rs).

Real checkpoints exist in this repo only for BERT. These folders cover DistilBERT, RoBERTa,
XLM-RoBERTa and ELECTRA (with embedding_size != hidden_size), the task heads of each family,
f16 / bf16 weights, sharded safetensors and legacy LayerNorm names (`gamma` / `beta`).
**The weights are random and mean nothing**; the folders test wiring and numerics only.

Every model is tiny (hidden 32, 2 layers, 4 heads, intermediate 64, 64 positions, vocabulary of
a few hundred tokens) and initialised much wider than HF's N(0, 0.02^2) (linear / embedding std
0.4, LayerNorm gamma 1 + N(0, 0.2^2), all biases N(0, 0.2^2)) so that outputs are far from
uniform and label orders are decisive.

Tokenizers (all built here, nothing downloaded):
  * WordPiece (BERT / DistilBERT / ELECTRA): a subset of models/minilm/tokenizer.json's vocabulary
    (the pieces MiniLM uses on CORPUS plus every character of CORPUS, bare and as `##c`), wrapped in
    transformers' BertTokenizer / DistilBertTokenizer. One variant is cased (no lower-casing, accents
    kept).
  * byte-level BPE (RoBERTa): trained with the `tokenizers` library on CORPUS, wrapped in
    RobertaTokenizer (`<mask>` is the last id, as in roberta-base).
  * SentencePiece-style Unigram (XLM-R): pieces and log-frequency scores computed from CORPUS
    (the `tokenizers` UnigramTrainer is not reproducible run to run), wrapped in
    XLMRobertaTokenizer (WhitespaceSplit + Metaspace pre-tokenizer, `<mask>` last).

golden.json per folder (floats rounded to 7 significant digits):
  {model_type, architecture, head, problem_type, id2label, mask_token,
   cases: [{name, inputs: [{text, text_pair?, input_ids, token_type_ids, mask_positions?,
                            last_hidden_state [len][h], logits}]}]}
Each case is ONE forward pass: a case with several inputs is a right-padded batch (HF pads with the
tokenizer's pad id and an attention mask; only the real tokens' rows are stored). `token_type_ids`
are the tokenizer's (tokenizers-library) type ids; the model gets what the HF tokenizer returns for
it (no token_type_ids at all for RoBERTa / XLM-R / DistilBERT, i.e. zeros). logits:
  seqcls [n_labels], tokcls [len][n_labels], qa [len][2] (start, end), mlm [n_masks][vocab] (rows at
  mask_positions only), base: absent.
last_hidden_state is `output_hidden_states=True` -> hidden_states[-1], in f32 eval mode. For the f16 /
bf16 folders the golden model is the saved checkpoint reloaded in f32 (the rounded weights, computed
in f32).

Usage:  HF_HUB_OFFLINE=1 /work/pyenv/bin/python scripts/make_tiny_models.py [--only a,b] [--out DIR]
Needs:  torch, transformers 5.x (tested 5.24), tokenizers, safetensors, numpy. Deterministic:
rerunning rewrites identical files (single-threaded torch and tokenizers).
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ["TOKENIZERS_PARALLELISM"] = "false"  # deterministic tokenizer training
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import shutil
import sys
import unicodedata
import warnings
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)
warnings.filterwarnings("ignore")

import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import (  # noqa: E402
    AutoTokenizer,
    BertConfig,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    BertTokenizer,
    DistilBertConfig,
    DistilBertForMaskedLM,
    DistilBertForSequenceClassification,
    DistilBertTokenizer,
    ElectraConfig,
    ElectraForQuestionAnswering,
    ElectraForSequenceClassification,
    RobertaConfig,
    RobertaForSequenceClassification,
    RobertaForTokenClassification,
    RobertaTokenizer,
    XLMRobertaConfig,
    XLMRobertaForMaskedLM,
    XLMRobertaTokenizer,
)

transformers.logging.set_verbosity_error()

ROOT = Path(__file__).resolve().parent.parent
MINILM_TOKENIZER = ROOT / "models" / "minilm" / "tokenizer.json"
SIG = 7
GAP_WARN = 1e-3

TINY = dict(hidden=32, layers=2, heads=4, inter=64, positions=64)
WEIGHT_STD = 0.4
NORM_STD = 0.2
BIAS_STD = 0.2

# Training / vocabulary corpus. Test texts below are drawn from the same words (plus a few unseen
# ones, so that unknown pieces and sub-word splits occur).
CORPUS = """
The quick brown fox jumps over the lazy dog.
A small town by the river is quiet in spring and busy in summer.
Where is the museum? The museum is in the old town, near the river.
My name is Sarah and I live in London with my brother John.
Paris is the capital of France and Berlin is the capital of Germany.
I love coffee and tea in the morning, but I drink water at night.
The weather was cold, so we stayed at home and read books all day.
She works at a hospital in New York and he teaches music in Boston.
Café au lait, crème brûlée and a naïve piñata: déjà vu in Zoë's café.
Łódź, Kraków and Gdańsk are cities in Poland; Zürich and Genève are in Switzerland.
Hello world! This is a test of the tokenizer with numbers like 42, 3.14 and 2024.
The company announced new products on Monday, and its shares rose by ten percent.
Who wrote the book about the war? It was written by a famous author from Russia.
Students learn mathematics, history, science and languages at school every week.
The movie was great, the actors were wonderful and the music was beautiful.
The food was terrible and the service was slow; I will not come back.
Maria visited her friends in Madrid and Barcelona during the holidays.
Trains leave the central station every hour, and the journey takes two hours.
Can you tell me how to get to the airport from here?
We walked along the beach at sunset and watched the boats come in.
""".strip().splitlines()

TEXTS = dict(
    short="The quick brown fox jumps over the lazy dog.",
    unicode="Café déjà vu: naïve Zoë visits Łódź 🎉 tonight!",
    unseen="Zebras quietly yawn.",
    q="Where is the museum?",
    ctx="The museum is in the old town, near the river.",
    a="Paris is the capital of France.",
    b="Berlin is the capital of Germany.",
    pos="The movie was great and the music was beautiful.",
    neg="The food was terrible and the service was slow.",
    ner="My name is Sarah and I live in London.",
)


def rf(x) -> float:
    return float(f"{float(x):.{SIG}g}")


def rl(a):
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    a = np.asarray(a)
    if a.ndim == 0:
        return rf(a)
    if a.ndim == 1:
        return [rf(v) for v in a.tolist()]
    return [rl(v) for v in a]


# --------------------------------------------------------------------------------------------
# tokenizers
# --------------------------------------------------------------------------------------------


def corpus_chars(cased: bool) -> list:
    chars = set()
    for line in CORPUS:
        for c in line:
            if c.isspace():
                continue
            if not cased:
                # BertNormalizer(lowercase=True, strip_accents=None): lower, NFD, drop Mn
                for d in unicodedata.normalize("NFD", c.lower()):
                    if unicodedata.category(d) != "Mn":
                        chars.add(d)
            else:
                chars.add(c)
    return sorted(chars)


def wordpiece_vocab(cased: bool) -> dict:
    """MiniLM's pieces for CORPUS + every corpus character (bare and `##`), in MiniLM id order."""
    minilm = Tokenizer.from_file(str(MINILM_TOKENIZER))
    mvocab = minilm.get_vocab()
    pieces = set()
    for line in CORPUS:
        for t in minilm.encode(line, add_special_tokens=False).tokens:
            pieces.add(t)
            if cased and not t.startswith("##") and t.isalpha():
                pieces.add(t.capitalize())
    for c in corpus_chars(cased):
        pieces.add(c)
        pieces.add("##" + c)
    pieces.discard("[UNK]")
    specials = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    rest = sorted(pieces, key=lambda p: (mvocab.get(p, 10**9), p))
    return {p: i for i, p in enumerate(specials + rest)}


def wordpiece_tokenizer(cls, cased: bool, max_len: int):
    vocab = wordpiece_vocab(cased)
    if cased:
        tok = cls(vocab=vocab, do_lower_case=False, strip_accents=False)
    else:
        tok = cls(vocab=vocab)
    tok.model_max_length = max_len
    return tok


def mask_token():
    """`<mask>` eats the space before it, as in roberta-base's and xlm-roberta-base's tokenizer.json."""
    return AddedToken("<mask>", lstrip=True, rstrip=False, normalized=False, special=True)


def bpe_tokenizer(max_len: int):
    """Byte-level BPE as RoBERTa: trained on CORPUS, `<mask>` appended as the last id."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(
        vocab_size=560,
        min_frequency=2,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    t.train_from_iterator(CORPUS, trainer=tr)
    m = json.loads(t.to_str())["model"]
    vocab = dict(m["vocab"])
    vocab["<mask>"] = len(vocab)
    merges = [tuple(x) if isinstance(x, list) else tuple(x.split(" ")) for x in m["merges"]]
    tok = RobertaTokenizer(vocab=vocab, merges=merges, mask_token=mask_token())
    tok.model_max_length = max_len
    return tok


CHAR_PENALTY = 4.0


def unigram_pieces(lines) -> list:
    """SentencePiece-style Unigram pieces and scores computed from `lines` (the `tokenizers`
    UnigramTrainer is not reproducible from run to run, so the pieces are chosen here):
    every character, `▁` + each word seen twice, and word-internal substrings of 2-4 characters
    seen in at least two distinct words; score = log(frequency / total), minus CHAR_PENALTY for
    single characters."""
    from collections import Counter

    chars, words, subs, sub_words = Counter(), Counter(), Counter(), {}
    for line in lines:
        for raw in line.split():
            word = "".join(c for c in raw if c.isalnum() or c == "'")
            for c in raw:
                chars[c] += 1
            chars["▁"] += 1
            if word:
                words["▁" + word] += 1
            for n in (2, 3, 4):
                for i in range(1, len(word) - n + 1):
                    sub = word[i : i + n]
                    subs[sub] += 1
                    sub_words.setdefault(sub, set()).add(word)
    counts = Counter(chars)
    counts.update({w: c for w, c in words.items() if c >= 2})
    counts.update({s: c for s, c in subs.items() if len(sub_words[s]) >= 2})
    total = sum(counts.values())
    # single characters are a fallback: penalised so that whole words and longer pieces win, as
    # in a trained SentencePiece model
    return sorted(
        ((p, round(float(np.log(c / total)) - (CHAR_PENALTY if len(p) == 1 else 0.0), 4)) for p, c in counts.items()),
        key=lambda x: (-x[1], x[0]),
    )


def unigram_vocab() -> list:
    """The XLM-R-style vocabulary of CORPUS: `<s> <pad> </s> <unk>`, the pieces, `<mask>`."""
    specials = [(t, 0.0) for t in ("<s>", "<pad>", "</s>", "<unk>")]
    return specials + unigram_pieces(CORPUS) + [("<mask>", 0.0)]


def unigram_tokenizer(max_len: int):
    """SentencePiece-style Unigram as XLM-R: `<s> <pad> </s> <unk>` first, `<mask>` last."""
    tok = XLMRobertaTokenizer(vocab=unigram_vocab(), mask_token=mask_token())
    tok.model_max_length = max_len
    return tok


# --------------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------------


def init_weights(model, seed: int):
    """Deterministic wide init of every parameter (tied parameters are drawn once)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            is_norm = "LayerNorm" in name or "layer_norm" in name
            if is_norm and name.endswith("weight"):
                p.copy_(1.0 + NORM_STD * torch.randn(p.shape, generator=g))
            elif name.endswith("bias") or is_norm:
                p.copy_(BIAS_STD * torch.randn(p.shape, generator=g))
            else:
                p.copy_(WEIGHT_STD * torch.randn(p.shape, generator=g))
    model.eval()
    return model


def bert_like(cfg_cls, vocab_size, **kw):
    return cfg_cls(
        vocab_size=vocab_size,
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inter"],
        max_position_embeddings=TINY["positions"],
        **kw,
    )


def labels_kw(labels, **kw):
    return dict(
        id2label={i: l for i, l in enumerate(labels)},
        label2id={l: i for i, l in enumerate(labels)},
        **kw,
    )


SEQ3 = ["negative", "neutral", "positive"]
BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
TOPICS = ["sports", "politics", "science", "culture"]


# Each spec: name -> (builder(seed) -> (model, tokenizer), head, cases, save mode)
def case(name, *inputs):
    """inputs: str or (text, pair)."""
    return dict(name=name, inputs=[(i, None) if isinstance(i, str) else i for i in inputs])


def cls_cases(pairs=True):
    cs = [
        case("short", TEXTS["short"]),
        case("unicode", TEXTS["unicode"]),
        case("unseen", TEXTS["unseen"]),
    ]
    if pairs:
        cs.append(case("pair", (TEXTS["q"], TEXTS["ctx"])))
    cs.append(case("batch", TEXTS["pos"], TEXTS["neg"], "Hello world!"))
    return cs


def tok_cases():
    return [
        case("ner", TEXTS["ner"]),
        case("unicode", TEXTS["unicode"]),
        case("batch", TEXTS["short"], "Maria visited Madrid.", TEXTS["ner"]),
    ]


def mlm_cases(m):
    return [
        case("one_mask", f"Paris is the {m} of France."),
        case("two_masks", f"I love {m} and tea in the {m}."),
        case("unicode", f"Zoë drank a café {m} in Łódź 🎉."),
        case("batch", f"The {m} was great.", f"We walked along the {m} at sunset and watched the boats."),
    ]


def qa_cases():
    return [
        case("museum", (TEXTS["q"], TEXTS["ctx"])),
        case("unicode", ("Who is naïve?", "Zoë is naïve, says the café owner in Łódź 🎉.")),
        case(
            "batch",
            ("Who wrote the book?", "It was written by a famous author from Russia."),
            ("Where does she work?", "She works at a hospital in New York."),
        ),
    ]


def roberta_pair_cases():
    return [
        case("pair", (TEXTS["a"], TEXTS["b"])),
        case("pair_qa", (TEXTS["q"], TEXTS["ctx"])),
        case("single", TEXTS["short"]),
        case("unicode_pair", (TEXTS["unicode"], "Café au lait in Zürich.")),
        case("batch", (TEXTS["pos"], TEXTS["neg"]), (TEXTS["a"], "Hello!"), ("Short.", TEXTS["ctx"])),
    ]


def build_distilbert_seqcls(seed):
    tok = wordpiece_tokenizer(DistilBertTokenizer, False, TINY["positions"])
    cfg = DistilBertConfig(
        vocab_size=len(tok),
        dim=TINY["hidden"],
        n_layers=TINY["layers"],
        n_heads=TINY["heads"],
        hidden_dim=TINY["inter"],
        max_position_embeddings=TINY["positions"],
        activation="gelu",
        pad_token_id=tok.pad_token_id,
        **labels_kw(SEQ3),
    )
    return DistilBertForSequenceClassification(cfg), tok


def build_distilbert_mlm(seed):
    tok = wordpiece_tokenizer(DistilBertTokenizer, False, TINY["positions"])
    cfg = DistilBertConfig(
        vocab_size=len(tok),
        dim=TINY["hidden"],
        n_layers=TINY["layers"],
        n_heads=TINY["heads"],
        hidden_dim=TINY["inter"],
        max_position_embeddings=TINY["positions"],
        activation="gelu",
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=True,
    )
    return DistilBertForMaskedLM(cfg), tok


def roberta_cfg(tok, cls=RobertaConfig, **kw):
    return bert_like(
        cls,
        len(tok),
        type_vocab_size=1,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        layer_norm_eps=1e-5,
        hidden_act="gelu",
        **kw,
    )


def build_roberta_tokcls(seed):
    tok = bpe_tokenizer(TINY["positions"] - 2)
    assert tok.pad_token_id == 1
    return RobertaForTokenClassification(roberta_cfg(tok, **labels_kw(BIO))), tok


def build_roberta_seqcls(seed):
    tok = bpe_tokenizer(TINY["positions"] - 2)
    return RobertaForSequenceClassification(roberta_cfg(tok, **labels_kw(SEQ3))), tok


def build_xlmr_mlm(seed):
    tok = unigram_tokenizer(TINY["positions"] - 2)
    assert tok.pad_token_id == 1 and tok.unk_token_id == 3
    cfg = roberta_cfg(tok, cls=XLMRobertaConfig, tie_word_embeddings=True)
    return XLMRobertaForMaskedLM(cfg), tok


def electra_cfg(tok, **kw):
    return bert_like(ElectraConfig, len(tok), embedding_size=kw.pop("embedding_size", 16), hidden_act="gelu", **kw)


def build_electra_qa(seed):
    tok = wordpiece_tokenizer(BertTokenizer, False, TINY["positions"])
    return ElectraForQuestionAnswering(electra_cfg(tok)), tok


def build_electra_seqcls(seed):
    tok = wordpiece_tokenizer(BertTokenizer, False, TINY["positions"])
    cfg = electra_cfg(tok, embedding_size=TINY["hidden"], **labels_kw(SEQ3))
    return ElectraForSequenceClassification(cfg), tok


def build_bert_gelu_tanh(seed):
    tok = wordpiece_tokenizer(BertTokenizer, True, TINY["positions"])
    cfg = bert_like(BertConfig, len(tok), hidden_act="gelu_new", **labels_kw(BIO))
    return BertForTokenClassification(cfg), tok


def build_bert_base(seed):
    tok = wordpiece_tokenizer(BertTokenizer, False, TINY["positions"])
    return BertModel(bert_like(BertConfig, len(tok))), tok


def build_bert_legacy(seed):
    tok = wordpiece_tokenizer(BertTokenizer, False, TINY["positions"])
    cfg = bert_like(BertConfig, len(tok), problem_type="multi_label_classification", **labels_kw(TOPICS))
    return BertForSequenceClassification(cfg), tok


SPECS = {
    "distilbert-seqcls": dict(build=build_distilbert_seqcls, seed=101, head="seqcls", cases=cls_cases()),
    "distilbert-mlm": dict(build=build_distilbert_mlm, seed=102, head="mlm", cases=mlm_cases("[MASK]")),
    "roberta-tokcls": dict(build=build_roberta_tokcls, seed=103, head="tokcls", cases=tok_cases()),
    "roberta-seqcls": dict(build=build_roberta_seqcls, seed=104, head="seqcls", cases=roberta_pair_cases()),
    "xlmr-mlm": dict(build=build_xlmr_mlm, seed=105, head="mlm", cases=mlm_cases("<mask>")),
    "electra-qa": dict(build=build_electra_qa, seed=106, head="qa", cases=qa_cases()),
    "electra-seqcls": dict(build=build_electra_seqcls, seed=107, head="seqcls", cases=cls_cases()),
    "bert-gelu-tanh-f16": dict(build=build_bert_gelu_tanh, seed=108, head="tokcls", cases=tok_cases(), save="f16"),
    "bert-bf16-sharded": dict(build=build_bert_base, seed=109, head="base", cases=cls_cases(), save="bf16-sharded"),
    "bert-prefixed-legacy": dict(build=build_bert_legacy, seed=110, head="seqcls", cases=cls_cases(), save="legacy"),
}


# --------------------------------------------------------------------------------------------
# saving
# --------------------------------------------------------------------------------------------


def legacy_name(k: str) -> str:
    if ".LayerNorm." in k or k.split(".")[-2] == "LayerNorm":
        if k.endswith(".weight"):
            return k[: -len("weight")] + "gamma"
        if k.endswith(".bias"):
            return k[: -len("bias")] + "beta"
    return k


def save(model, tok, out: Path, mode: str):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tok.save_pretrained(out)
    if mode == "f32":
        model.save_pretrained(out)
    elif mode == "f16":
        model.to(torch.float16).save_pretrained(out)
        model.to(torch.float32)
    elif mode == "bf16-sharded":
        model.to(torch.bfloat16).save_pretrained(out, max_shard_size="50KB")
        model.to(torch.float32)
        shards = sorted(p.name for p in out.glob("*.safetensors"))
        assert shards == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"], shards
        assert (out / "model.safetensors.index.json").is_file()
    elif mode == "legacy":
        model.config.save_pretrained(out)
        sd = {legacy_name(k): v.detach().clone().contiguous() for k, v in model.state_dict().items()}
        n = sum(k.endswith((".gamma", ".beta")) for k in sd)
        assert n == 2 * (1 + 2 * TINY["layers"]), n
        assert all(k.startswith(("bert.", "classifier.")) for k in sd), list(sd)
        save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    else:
        raise ValueError(mode)
    for p in out.iterdir():
        os.chmod(p, 0o644)


def reload(model, out: Path, mode: str):
    """The golden model: the saved checkpoint reloaded in f32 (legacy names: the in-memory model,
    checked against a renamed-back copy of the file)."""
    if mode == "legacy":
        sd = load_file(str(out / "model.safetensors"))
        back = {k[: -len("gamma")] + "weight" if k.endswith(".gamma") else
                k[: -len("beta")] + "bias" if k.endswith(".beta") else k: v for k, v in sd.items()}
        m = type(model)(model.config)
        missing, unexpected = m.load_state_dict(back, strict=False)
        assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
        return m.eval()
    m = type(model).from_pretrained(out, dtype=torch.float32)
    for k, v in m.state_dict().items():
        assert v.dtype == torch.float32, k
    return m.eval()


# --------------------------------------------------------------------------------------------
# goldens
# --------------------------------------------------------------------------------------------


def head_logits(item, head, o, i, n, r, mask_id, where, warns):
    """The head's outputs of batch row `i` (`n` real tokens, encoding `r`) into `item`:
    seqcls [labels] (a near tie is warned about), tokcls / qa [n][..], mlm the mask rows."""
    if head == "seqcls":
        item["logits"] = rl(o.logits[i])
        s = sorted(o.logits[i].tolist(), reverse=True)
        if min(a - b for a, b in zip(s, s[1:])) < GAP_WARN:
            warns.append(f"{where}: near tie in logits {s}")
    elif head == "tokcls":
        item["logits"] = rl(o.logits[i, :n])
    elif head == "qa":
        item["logits"] = rl(torch.stack([o.start_logits[i, :n], o.end_logits[i, :n]], dim=-1))
    elif head == "mlm":
        pos = [j for j, x in enumerate(r.ids) if x == mask_id]
        assert pos, (where, r.tokens)
        item["mask_positions"] = pos
        item["logits"] = rl(o.logits[i, pos])


def golden(name, spec, model, out: Path):
    tok = AutoTokenizer.from_pretrained(out)
    raw = Tokenizer.from_file(str(out / "tokenizer.json"))
    cfg = model.config
    head = spec["head"]
    cases = []
    warns = []
    for c in spec["cases"]:
        texts = [t for t, _ in c["inputs"]]
        pairs = [p for _, p in c["inputs"]]
        has_pair = any(p is not None for p in pairs)
        if has_pair:
            assert all(p is not None for p in pairs), "a batch mixes pairs and single texts"
            enc = tok(texts, pairs, padding=True, return_tensors="pt")
        else:
            enc = tok(texts, padding=True, return_tensors="pt")
        feed = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.no_grad():
            o = model(**feed, output_hidden_states=True)
        hidden = o.hidden_states[-1]
        items = []
        for i, (t, p) in enumerate(c["inputs"]):
            r = raw.encode(t, p) if p is not None else raw.encode(t)
            n = len(r.ids)
            assert enc["attention_mask"][i].sum().item() == n
            assert enc["input_ids"][i][:n].tolist() == r.ids, (name, c["name"], r.ids)
            if "token_type_ids" in enc:
                assert enc["token_type_ids"][i][:n].tolist() == r.type_ids
            item = dict(text=t)
            if p is not None:
                item["text_pair"] = p
            item["tokens"] = r.tokens
            item["input_ids"] = r.ids
            item["token_type_ids"] = r.type_ids
            item["last_hidden_state"] = rl(hidden[i, :n])
            head_logits(item, head, o, i, n, r, tok.mask_token_id, f"{name}/{c['name']}[{i}]", warns)
            items.append(item)
        cases.append(dict(name=c["name"], inputs=items))
    id2label = [cfg.id2label[i] for i in range(len(cfg.id2label))] if head in ("seqcls", "tokcls") else []
    g = dict(
        model_type=cfg.model_type,
        architecture=cfg.architectures[0] if cfg.architectures else type(model).__name__,
        head=head,
        weights=spec.get("save", "f32"),
        problem_type=getattr(cfg, "problem_type", None),
        id2label=id2label,
        mask_token=tok.mask_token,
        seed=spec["seed"],
        note="random seeded tiny model (scripts/make_tiny_models.py); outputs mean nothing",
        versions=dict(torch=torch.__version__.split("+")[0], transformers=transformers.__version__),
        cases=cases,
    )
    with open(out / "golden.json", "w") as f:
        json.dump(g, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    os.chmod(out / "golden.json", 0o644)
    return warns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "tests" / "tiny"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    out_root = Path(args.out)
    warns = []
    for name, spec in SPECS.items():
        if only and name not in only:
            continue
        torch.manual_seed(spec["seed"])
        model, tok = spec["build"](spec["seed"])
        init_weights(model, spec["seed"])
        model.config.architectures = [type(model).__name__]
        out = out_root / name
        mode = spec.get("save", "f32")
        save(model, tok, out, mode)
        gm = reload(model, out, mode)
        warns += golden(name, spec, gm, out)
        size = sum(p.stat().st_size for p in out.iterdir())
        print(f"{name:22s} {type(model).__name__:36s} vocab {len(tok):4d}  {size / 1024:6.1f} KiB")
    total = sum(p.stat().st_size for p in out_root.rglob("*") if p.is_file())
    print(f"total {total / 1024:.1f} KiB")
    for w in warns:
        print("WARNING", w, file=sys.stderr)


if __name__ == "__main__":
    main()
