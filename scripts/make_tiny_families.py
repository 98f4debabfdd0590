#!/usr/bin/env python3
"""Tiny seeded random-weight checkpoints of four more model families (MPNet, ALBERT, DeBERTa-v3,
Jina embeddings v2), with PyTorch f32 goldens, under tests/tiny/<name>/, plus reference tables of
the host-side position math in tests/golden/positions.json.

Same conventions, init, corpus, test texts and golden.json format as scripts/make_tiny_models.py
(whose helpers are imported from it; read its docstring first). **The weights are random and mean
nothing.** What is new here:

  * Relative positions. MPNet (bucketed relative attention bias, 32 buckets, max distance 128) and
    DeBERTa-v3 (disentangled c2p / p2c attention, log-bucketed positions; position_buckets 8 and
    max_relative_positions 16 in the tiny models) have cases longer than their exact / bucket
    limits: MPNet inputs of 162-276 tokens (relative distances > 128), DeBERTa inputs of 65-162
    tokens (> 2 * position_buckets). Jina v2 uses symmetric ALiBi (no position table) and has
    inputs of 276 (4 heads) and 162 (6 heads) tokens.
  * mpnet-base-st is a sentence-transformers folder as published (all-mpnet-base-v2 layout:
    modules.json, 1_Pooling/config.json with mean pooling, a 2_Normalize entry,
    sentence_bert_config.json, config_sentence_transformers.json). Its golden adds, per input,
    `mean_pooled` = sum_t(h_t * m_t) / max(sum_t m_t, 1e-9) over the real tokens (sentence-
    transformers' Pooling) and `sentence_embedding` = mean_pooled / max(||mean_pooled||_2, 1e-12)
    (its Normalize), both computed here in torch (the sentence-transformers package is not used).
  * jina-v2-base (4 heads) and jina-v2-6heads (6 heads, hidden 48: the non-power-of-two ALiBi slope
    rule) have no transformers class: the golden comes from JinaBertRef below, an exact PyTorch
    re-implementation of JinaBertModel from jinaai/jina-bert-implementation `modeling_bert.py`
    (remote code of jina-embeddings-v2-*-en). Their golden adds `mean_pooled` (JinaBertModel.encode:
    mean over real tokens, not normalised). config.json is laid out as the Hub's
    jina-embeddings-v2-base-en config.json (model_type "bert", position_embedding_type "alibi",
    feed_forward_type "geglu", architectures ["JinaBertForMaskedLM"], auto_map to the remote code);
    the weights are JinaBertModel's (no prefix, pooler included, no MLM head), so head is "base".
  * Tokenizers:
      - MPNet: WordPiece (the BERT vocabulary subset of make_tiny_models.py) wrapped in
        MPNetTokenizer: `<s> <pad> </s> <unk>` first (pad id 1), `<mask>` last (lstrip), unk_token
        `[UNK]` as in all-mpnet-base-v2, RobertaProcessing (`<s> A </s></s> B </s>`, type ids all 0).
      - ALBERT: SentencePiece-style Unigram (pieces and scores computed from the normalised CORPUS
        as make_tiny_models.py does for XLM-R), `<pad> <unk> [CLS] [SEP] [MASK]` first, `[MASK]`
        lstrip. tokenizer.json has AlbertConverter's layout, as the real albert-base-v2
        tokenizer.json: normalizer Replace(``) Replace('') NFKD StripAccents Lowercase
        Replace(" {2,}"), pre-tokenizer Metaspace(prepend always, split), TemplateProcessing with
        type id 1 for the second segment. Not included: the `Precompiled` (nmt_nfkc) charsmap of the
        real file (a 320 KB blob that only a SentencePiece model file provides).
      - DeBERTa-v3: Unigram, cased, `[PAD] [CLS] [SEP] [UNK]` first, `[MASK]` last; DebertaV2Converter
        layout: normalizer Strip Replace(" {2,}"), pre-tokenizer Sequence[Metaspace(prepend always)]
        (again without the Precompiled charsmap).
    transformers 5 rebuilds the normalizer / pre-tokenizer of AlbertTokenizer / DebertaV2Tokenizer
    from its own __init__ when it loads a folder; every golden input is checked to tokenize the same
    way with the HF tokenizer and with tokenizer.json (the `tokenizers` library). transformers 5's
    AlbertTokenizer does not return token_type_ids; the folders set model_input_names so that it
    does (type ids 1 on the second segment, as tokenizer.json and ALBERT's pretraining have them),
    and the model is fed them.
  * DeBERTa-v3 MLM uses `legacy: false` (the `lm_predictions.lm_head.*` head of the official
    microsoft/deberta-v3-* checkpoints: dense, act, LayerNorm, logits = x @ word_embeddings^T + bias).

golden.json: as make_tiny_models.py's, plus `mean_pooled` / `sentence_embedding` per input where
stated above, and a top-level `embedding` object describing them. The golden model is always the
saved folder reloaded in f32 (transformers' from_pretrained, or JinaBertRef + load_state_dict
strict).

tests/golden/positions.json: integer tables computed by the real PyTorch code (transformers'
MPNetEncoder.relative_position_bucket and deberta_v2 make_log_bucket_position /
build_relative_position, the remote code's _get_alibi_head_slopes), to check host-side position
math bit-exactly.

Usage:  HF_HUB_OFFLINE=1 /work/pyenv/bin/python scripts/make_tiny_families.py [--only a,b] [--out DIR]
        (--only positions: only tests/golden/positions.json; --positions PATH to write it elsewhere)
Needs:  torch, transformers 5.x (tested 5.25.0), tokenizers, safetensors, numpy; models/minilm/
tokenizer.json (scripts/setup.sh). Deterministic: rerunning rewrites identical files.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_tiny_models as mtm  # noqa: E402  (sets the env vars and single-threaded torch)
from make_tiny_models import (  # noqa: E402
    BIO,
    CORPUS,
    GAP_WARN,
    NORM_STD,
    BIAS_STD,
    SEQ3,
    TEXTS,
    TINY,
    WEIGHT_STD,
    case,
    cls_cases,
    labels_kw,
    mask_token,
    mlm_cases,
    qa_cases,
    rl,
    roberta_pair_cases,
    tok_cases,
    wordpiece_tokenizer,
    wordpiece_vocab,
)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
from collections import Counter  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, normalizers, pre_tokenizers  # noqa: E402
from transformers import (  # noqa: E402
    AlbertConfig,
    AlbertForMaskedLM,
    AlbertForQuestionAnswering,
    AlbertForSequenceClassification,
    AlbertForTokenClassification,
    AlbertTokenizer,
    AutoTokenizer,
    BertTokenizer,
    DebertaConfig,
    DebertaForMaskedLM,
    DebertaForSequenceClassification,
    DebertaV2Config,
    DebertaV2ForMaskedLM,
    DebertaV2ForQuestionAnswering,
    DebertaV2ForSequenceClassification,
    DebertaV2ForTokenClassification,
    DebertaV2Tokenizer,
    MPNetConfig,
    RoFormerConfig,
    RoFormerForMaskedLM,
    RoFormerForQuestionAnswering,
    RoFormerForSequenceClassification,
    RoFormerForTokenClassification,
    MPNetForMaskedLM,
    MPNetForQuestionAnswering,
    MPNetForSequenceClassification,
    MPNetForTokenClassification,
    MPNetModel,
    MPNetTokenizer,
)
from transformers.models.deberta_v2 import modeling_deberta_v2 as deberta_mod  # noqa: E402
from transformers.models.mpnet.modeling_mpnet import MPNetEncoder  # noqa: E402

ROOT = mtm.ROOT
POSITIONS_JSON = ROOT / "tests" / "golden" / "positions.json"

MPNET_POSITIONS = 514  # all-mpnet-base-v2: 512 tokens + padding_idx 1 + 1
DEBERTA_BUCKETS = 8
DEBERTA_MAX_REL = 16

# Longer inputs: corpus sentences joined (the longest input of each folder is asserted below).
# WordPiece (MPNet, Jina): LONG 276 tokens, MID 162. Unigram (DeBERTa): D_SHORT 65, D_MID 153.
LONG = " ".join(CORPUS[:17])
MID = " ".join(CORPUS[:10])
D_SHORT = " ".join(CORPUS[:2])
D_MID = " ".join(CORPUS[:5])


def long_mlm(text: str, m: str) -> str:
    out = text.replace("capital of France", f"{m} of France").replace("the lazy dog", f"the lazy {m}")
    assert out.count(m) == 2, out
    return out


# --------------------------------------------------------------------------------------------
# init (make_tiny_models.init_weights, with Jina's lower-case `mlp.layernorm` also a LayerNorm)
# --------------------------------------------------------------------------------------------


def init_weights(model, seed: int):
    """Deterministic wide init of every parameter (tied parameters are drawn once). Same draws as
    make_tiny_models.init_weights for every name it knows; `layernorm` (any case) is a norm too."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name:
                continue  # RoFormer's sinusoidal table: computed, not learned
            low = name.lower()
            is_norm = "layernorm" in low or "layer_norm" in low
            if is_norm and name.endswith("weight"):
                p.copy_(1.0 + NORM_STD * torch.randn(p.shape, generator=g))
            elif name.endswith("bias") or is_norm:
                p.copy_(BIAS_STD * torch.randn(p.shape, generator=g))
            else:
                p.copy_(WEIGHT_STD * torch.randn(p.shape, generator=g))
    model.eval()
    return model


# --------------------------------------------------------------------------------------------
# tokenizers
# --------------------------------------------------------------------------------------------

CHAR_PENALTY = mtm.CHAR_PENALTY


unigram_pieces = mtm.unigram_pieces
head_logits = mtm.head_logits


def mpnet_tokenizer(max_len: int = 512):
    """WordPiece as all-mpnet-base-v2: `<s> <pad> </s> <unk>` + the BERT-style vocabulary + `<mask>`."""
    wp = wordpiece_vocab(False)
    head = ["<s>", "<pad>", "</s>", "<unk>"]
    vocab = {t: i for i, t in enumerate(head)}
    for t, i in sorted(wp.items(), key=lambda x: x[1]):
        vocab[t] = len(vocab)
    vocab["<mask>"] = len(vocab)
    tok = MPNetTokenizer(vocab=vocab, mask_token=mask_token())
    tok.model_max_length = max_len
    assert tok.pad_token_id == 1 and tok.cls_token_id == 0 and tok.sep_token_id == 2
    assert tok.mask_token_id == len(vocab) - 1 and tok.unk_token == "[UNK]"
    return tok


def albert_normalizer():
    """AlbertConverter.normalizer (keep_accents False, do_lower_case True), without Precompiled."""
    return normalizers.Sequence(
        [
            normalizers.Replace("``", '"'),
            normalizers.Replace("''", '"'),
            normalizers.NFKD(),
            normalizers.StripAccents(),
            normalizers.Lowercase(),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )


def albert_tokenizer(max_len: int):
    norm = albert_normalizer()
    lines = [norm.normalize_str(line) for line in CORPUS]
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    vocab = [(t, 0.0) for t in specials] + [p for p in unigram_pieces(lines) if p[0] not in specials]
    tok = AlbertTokenizer(
        vocab=vocab,
        mask_token=AddedToken("[MASK]", lstrip=True, rstrip=False, normalized=False, special=True),
        model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    )
    tok.backend_tokenizer.normalizer = norm
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.model_max_length = max_len
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (0, 1, 2, 3, 4)
    return tok


def deberta_tokenizer(max_len: int):
    specials = ["[PAD]", "[CLS]", "[SEP]", "[UNK]"]
    vocab = [(t, 0.0) for t in specials] + unigram_pieces(CORPUS) + [("[MASK]", 0.0)]
    tok = DebertaV2Tokenizer(vocab=vocab)
    # DebertaV2Converter's normalizer and pre-tokenizer (do_lower_case False, split_by_punct False)
    tok.backend_tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    )
    tok.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")]
    )
    tok.model_max_length = max_len
    assert (tok.pad_token_id, tok.cls_token_id, tok.sep_token_id, tok.unk_token_id) == (0, 1, 2, 3)
    assert tok.mask_token_id == len(vocab) - 1
    return tok


# --------------------------------------------------------------------------------------------
# Jina embeddings v2 (JinaBertModel of jinaai/jina-bert-implementation, re-implemented exactly)
# --------------------------------------------------------------------------------------------


def get_alibi_head_slopes(n_heads: int) -> list:
    """`_get_alibi_head_slopes` of the remote code (Python floats; the model casts them to f32)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n_heads).is_integer():
        return get_slopes_power_of_2(n_heads)
    closest_power_of_2 = 2 ** math.floor(math.log2(n_heads))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + get_alibi_head_slopes(2 * closest_power_of_2)[0::2][: n_heads - closest_power_of_2]
    )


def alibi_tensor(n_heads: int, size: int) -> torch.Tensor:
    """JinaBertEncoder.rebuild_alibi_tensor: [1, heads, size, size] = -slope_h * |j - i| in f32
    (the encoder slices its max_position_embeddings-sized buffer to [:, :, :seq, :seq])."""
    context_position = torch.arange(size)[:, None]
    memory_position = torch.arange(size)[None, :]
    relative_position = torch.abs(memory_position - context_position)
    relative_position = relative_position.unsqueeze(0).expand(n_heads, -1, -1)
    slopes = torch.Tensor(get_alibi_head_slopes(n_heads)) * -1
    alibi = slopes.unsqueeze(1).unsqueeze(1) * relative_position
    return alibi.unsqueeze(0)


class JinaCfg:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class JinaEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size, padding_idx=c.pad_token_id)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, input_ids, token_type_ids):
        # position_embedding_type "alibi": no position embeddings
        return self.LayerNorm(self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids))


class JinaSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c.num_attention_heads
        self.attention_head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)

    def heads(self, x):
        return x.view(x.shape[:-1] + (self.num_attention_heads, self.attention_head_size)).permute(0, 2, 1, 3)

    def forward(self, h, attention_mask, bias, sdpa=False):
        q, k, v = self.heads(self.query(h)), self.heads(self.key(h)), self.heads(self.value(h))
        if sdpa:  # attn_implementation "torch"
            ctx = F.scaled_dot_product_attention(q, k, v, attention_mask + bias)
        else:  # the remote code's eager path
            scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
            scores = scores + attention_mask
            ctx = torch.matmul(F.softmax(scores + bias, dim=-1), v)
        ctx = ctx.permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[:-2] + (-1,))


class JinaSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class JinaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.add_module("self", JinaSelfAttention(c))
        self.output = JinaSelfOutput(c)

    def forward(self, h, attention_mask, bias, sdpa=False):
        return self.output(self._modules["self"](h, attention_mask, bias, sdpa), h)


class JinaGLUMLP(nn.Module):
    """feed_forward_type "geglu": gelu(erf)(first half) * second half, wo, LayerNorm(+ residual)."""

    def __init__(self, c):
        super().__init__()
        self.intermediate_size = c.intermediate_size
        self.gated_layers = nn.Linear(c.hidden_size, c.intermediate_size * 2, bias=False)
        self.act = nn.GELU()
        self.wo = nn.Linear(c.intermediate_size, c.hidden_size)
        self.layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, h):
        residual = h
        h = self.gated_layers(h)
        gated = h[:, :, : self.intermediate_size]
        non_gated = h[:, :, self.intermediate_size :]
        h = self.act(gated) * non_gated
        h = self.wo(h)
        return self.layernorm(h + residual)


class JinaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = JinaAttention(c)
        self.mlp = JinaGLUMLP(c)

    def forward(self, h, attention_mask, bias, sdpa=False):
        return self.mlp(self.attention(h, attention_mask, bias, sdpa))


class JinaEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_attention_heads = c.num_attention_heads
        self.layer = nn.ModuleList([JinaLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, h, attention_mask, sdpa=False):
        bias = alibi_tensor(self.num_attention_heads, h.shape[1]).to(h.dtype)
        states = [h]
        for layer in self.layer:
            h = layer(h, attention_mask, bias, sdpa)
            states.append(h)
        return states


class JinaPooler(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)

    def forward(self, h):
        return torch.tanh(self.dense(h[:, 0]))


class JinaBertRef(nn.Module):
    """JinaBertModel (add_pooling_layer=True) in eval mode; state-dict names as the Hub's files."""

    def __init__(self, c):
        super().__init__()
        self.config = c
        self.embeddings = JinaEmbeddings(c)
        self.encoder = JinaEncoder(c)
        self.pooler = JinaPooler(c)

    def forward(self, input_ids, attention_mask, token_type_ids=None, sdpa=False):
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        h = self.embeddings(input_ids, token_type_ids)
        # ModuleUtilsMixin.get_extended_attention_mask
        ext = (1.0 - attention_mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
        states = self.encoder(h, ext, sdpa)
        return JinaCfg(last_hidden_state=states[-1], hidden_states=tuple(states), pooler_output=self.pooler(states[-1]))


def jina_config(vocab_size: int, hidden: int, heads: int) -> dict:
    """Key layout of the Hub's jinaai/jina-embeddings-v2-base-en config.json, tiny sizes."""
    return {
        "_name_or_path": "jinaai/jina-bert-implementation",
        "model_max_length": 8192,
        "architectures": ["JinaBertForMaskedLM"],
        "attention_probs_dropout_prob": 0.0,
        "auto_map": {
            "AutoConfig": "jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig",
            "AutoModelForMaskedLM": "jinaai/jina-bert-implementation--modeling_bert.JinaBertForMaskedLM",
            "AutoModel": "jinaai/jina-bert-implementation--modeling_bert.JinaBertModel",
            "AutoModelForSequenceClassification": "jinaai/jina-bert-implementation--modeling_bert.JinaBertForSequenceClassification",
        },
        "classifier_dropout": None,
        "gradient_checkpointing": False,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": hidden,
        "initializer_range": 0.02,
        "intermediate_size": TINY["inter"],
        "layer_norm_eps": 1e-12,
        "max_position_embeddings": 8192,
        "model_type": "bert",
        "num_attention_heads": heads,
        "num_hidden_layers": TINY["layers"],
        "pad_token_id": 0,
        "position_embedding_type": "alibi",
        "torch_dtype": "float32",
        "transformers_version": "4.26.0",
        "type_vocab_size": 2,
        "use_cache": True,
        "vocab_size": vocab_size,
        "feed_forward_type": "geglu",
        "emb_pooler": "mean",
    }


class JinaModelSpec:
    """Wraps JinaBertRef so the generic code can save / reload / run it."""

    def __init__(self, cfg: dict):
        self.cfg_dict = cfg
        self.config = JinaCfg(**cfg)
        self.model = JinaBertRef(self.config)


# --------------------------------------------------------------------------------------------
# builders
# --------------------------------------------------------------------------------------------


def mpnet_cfg(tok, **kw):
    return MPNetConfig(
        vocab_size=len(tok),
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inter"],
        max_position_embeddings=MPNET_POSITIONS,
        relative_attention_num_buckets=32,  # MPNetEncoder always buckets with the default 32
        layer_norm_eps=1e-5,
        hidden_act="gelu",
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        **kw,
    )


def build_mpnet_base(seed):
    tok = mpnet_tokenizer()
    return MPNetModel(mpnet_cfg(tok)), tok


def build_mpnet_mlm(seed):
    tok = mpnet_tokenizer()
    return MPNetForMaskedLM(mpnet_cfg(tok, tie_word_embeddings=True)), tok


def build_mpnet_seqcls(seed):
    tok = mpnet_tokenizer()
    return MPNetForSequenceClassification(mpnet_cfg(tok, **labels_kw(SEQ3))), tok


def build_mpnet_tokcls(seed):
    tok = mpnet_tokenizer()
    return MPNetForTokenClassification(mpnet_cfg(tok, **labels_kw(BIO))), tok


def build_mpnet_qa(seed):
    tok = mpnet_tokenizer()
    return MPNetForQuestionAnswering(mpnet_cfg(tok)), tok


def albert_cfg(tok, **kw):
    return AlbertConfig(
        vocab_size=len(tok),
        embedding_size=16,
        hidden_size=TINY["hidden"],
        num_hidden_layers=3,
        num_hidden_groups=1,
        inner_group_num=1,
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inter"],
        hidden_act="gelu_new",
        max_position_embeddings=TINY["positions"],
        type_vocab_size=2,
        layer_norm_eps=1e-12,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
        **kw,
    )


def build_albert_seqcls(seed):
    tok = albert_tokenizer(TINY["positions"])
    return AlbertForSequenceClassification(albert_cfg(tok, **labels_kw(SEQ3))), tok


def build_albert_mlm(seed):
    tok = albert_tokenizer(TINY["positions"])
    return AlbertForMaskedLM(albert_cfg(tok, tie_word_embeddings=True)), tok


def build_albert_tokcls(seed):
    tok = albert_tokenizer(TINY["positions"])
    return AlbertForTokenClassification(albert_cfg(tok, **labels_kw(BIO))), tok


def build_albert_qa(seed):
    tok = albert_tokenizer(TINY["positions"])
    return AlbertForQuestionAnswering(albert_cfg(tok)), tok


def deberta_sizes(tok):
    """What the tiny DeBERTa-v3 and v1 configs share."""
    return dict(
        vocab_size=len(tok),
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inter"],
        hidden_act="gelu",
        max_position_embeddings=512,
        type_vocab_size=0,
        relative_attention=True,
        max_relative_positions=DEBERTA_MAX_REL,
        layer_norm_eps=1e-7,
        pad_token_id=0,
    )


def deberta_cfg(tok, **kw):
    return DebertaV2Config(
        **deberta_sizes(tok),
        position_buckets=DEBERTA_BUCKETS,
        pos_att_type=["p2c", "c2p"],
        share_att_key=True,
        norm_rel_ebd="layer_norm",
        position_biased_input=False,
        **kw,
    )


def build_deberta_seqcls(seed):
    tok = deberta_tokenizer(512)
    return DebertaV2ForSequenceClassification(deberta_cfg(tok, **labels_kw(SEQ3))), tok


def build_deberta_mlm(seed):
    tok = deberta_tokenizer(512)
    return DebertaV2ForMaskedLM(deberta_cfg(tok, legacy=False)), tok


def build_deberta_tokcls(seed):
    tok = deberta_tokenizer(512)
    return DebertaV2ForTokenClassification(deberta_cfg(tok, **labels_kw(BIO))), tok


def build_deberta_qa(seed):
    tok = deberta_tokenizer(512)
    return DebertaV2ForQuestionAnswering(deberta_cfg(tok)), tok


def deberta_v1_cfg(tok, **kw):
    """DeBERTa v1 (microsoft/deberta-base's settings, tiny): head-interleaved in_proj with q_bias
    and v_bias, c2p and p2c by their own pos_proj / pos_q_proj, no buckets, no LayerNorm on the
    relative embeddings; absolute positions as well, to cover position_biased_input."""
    return DebertaConfig(**deberta_sizes(tok), pos_att_type="c2p|p2c", position_biased_input=True, **kw)


def build_deberta_v1_seqcls(seed):
    tok = deberta_tokenizer(512)
    return DebertaForSequenceClassification(deberta_v1_cfg(tok, **labels_kw(SEQ3))), tok


def build_deberta_v1_mlm(seed):
    tok = deberta_tokenizer(512)
    return DebertaForMaskedLM(deberta_v1_cfg(tok, legacy=False)), tok


def roformer_cfg(tok, **kw):
    """RoFormer: BERT with interleaved rotary Q and K (V too with rotary_value); an embedding
    width below the hidden one, so that `embeddings_project` is taken."""
    return RoFormerConfig(
        vocab_size=len(tok),
        embedding_size=24,
        hidden_size=TINY["hidden"],
        num_hidden_layers=TINY["layers"],
        num_attention_heads=TINY["heads"],
        intermediate_size=TINY["inter"],
        hidden_act="gelu",
        max_position_embeddings=512,
        type_vocab_size=2,
        pad_token_id=0,
        **kw,
    )


def build_roformer_seqcls(seed):
    tok = mtm.wordpiece_tokenizer(BertTokenizer, cased=False, max_len=512)
    return RoFormerForSequenceClassification(roformer_cfg(tok, **labels_kw(SEQ3))), tok


def build_roformer_mlm(seed):
    tok = mtm.wordpiece_tokenizer(BertTokenizer, cased=False, max_len=512)
    return RoFormerForMaskedLM(roformer_cfg(tok, rotary_value=True)), tok


def build_roformer_tokcls(seed):
    tok = mtm.wordpiece_tokenizer(BertTokenizer, cased=False, max_len=512)
    return RoFormerForTokenClassification(roformer_cfg(tok, **labels_kw(BIO))), tok


def build_roformer_qa(seed):
    tok = mtm.wordpiece_tokenizer(BertTokenizer, cased=False, max_len=512)
    return RoFormerForQuestionAnswering(roformer_cfg(tok, rotary_value=True)), tok


def build_jina(hidden, heads):
    def build(seed):
        tok = wordpiece_tokenizer(BertTokenizer, False, 8192)
        return JinaModelSpec(jina_config(len(tok), hidden, heads)), tok

    return build


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------


def st_cases():
    return [
        case("short", TEXTS["short"]),
        case("unicode", TEXTS["unicode"]),
        case("batch", TEXTS["pos"], "Hello world!"),
        case("long", LONG),
    ]


def jina_cases(long_case):
    return [
        case("short", TEXTS["short"]),
        case("unicode", TEXTS["unicode"]),
        case("pair", (TEXTS["q"], TEXTS["ctx"])),
        case("batch", TEXTS["pos"], TEXTS["neg"], "Hello world!"),
        long_case,
    ]


def with_long(cases, *extra):
    return list(cases) + list(extra)


# name -> spec; lengths: (min, max) token count of the longest input of the folder
SPECS = {
    "mpnet-base-st": dict(build=build_mpnet_base, seed=201, head="base", cases=st_cases(), st=True, longest=(200, 300)),
    "mpnet-mlm": dict(
        build=build_mpnet_mlm,
        seed=202,
        head="mlm",
        cases=with_long(mlm_cases("<mask>"), case("long_masks", long_mlm(MID, "<mask>"))),
        longest=(131, 300),
    ),
    "mpnet-seqcls": dict(
        build=build_mpnet_seqcls,
        seed=203,
        head="seqcls",
        cases=with_long(roberta_pair_cases(), case("long_pair", (TEXTS["q"], MID))),
        longest=(131, 300),
    ),
    "mpnet-tokcls": dict(
        build=build_mpnet_tokcls,
        seed=204,
        head="tokcls",
        cases=with_long(tok_cases(), case("long_batch", MID, TEXTS["ner"])),
        longest=(131, 300),
    ),
    "mpnet-qa": dict(
        build=build_mpnet_qa,
        seed=205,
        head="qa",
        cases=with_long(qa_cases(), case("long", (TEXTS["q"], MID))),
        longest=(131, 300),
    ),
    "albert-seqcls": dict(build=build_albert_seqcls, seed=211, head="seqcls", cases=cls_cases(), longest=(10, 64)),
    "albert-mlm": dict(build=build_albert_mlm, seed=212, head="mlm", cases=mlm_cases("[MASK]"), longest=(10, 64)),
    "albert-tokcls": dict(build=build_albert_tokcls, seed=213, head="tokcls", cases=tok_cases(), longest=(10, 64)),
    "albert-qa": dict(build=build_albert_qa, seed=214, head="qa", cases=qa_cases(), longest=(10, 64)),
    "deberta-v3-seqcls": dict(
        build=build_deberta_seqcls,
        seed=221,
        head="seqcls",
        cases=with_long(cls_cases(), case("long_pair", (TEXTS["q"], D_SHORT)), case("long_batch", D_MID, TEXTS["pos"])),
        longest=(60, 300),
    ),
    "deberta-v3-mlm": dict(
        build=build_deberta_mlm,
        seed=222,
        head="mlm",
        cases=with_long(mlm_cases("[MASK]"), case("long_masks", long_mlm(D_MID, "[MASK]"))),
        longest=(60, 300),
    ),
    "deberta-v3-tokcls": dict(
        build=build_deberta_tokcls,
        seed=223,
        head="tokcls",
        cases=with_long(tok_cases(), case("long", D_SHORT)),
        longest=(60, 300),
    ),
    "deberta-v3-qa": dict(
        build=build_deberta_qa,
        seed=224,
        head="qa",
        cases=with_long(qa_cases(), case("long_batch", (TEXTS["q"], D_MID), ("Who wrote the book?", D_SHORT))),
        longest=(60, 300),
    ),
    "deberta-v1-seqcls": dict(
        build=build_deberta_v1_seqcls,
        seed=225,
        head="seqcls",
        cases=with_long(cls_cases(), case("long_batch", D_MID, TEXTS["pos"])),
        longest=(60, 300),
    ),
    "deberta-v1-mlm": dict(
        build=build_deberta_v1_mlm,
        seed=226,
        head="mlm",
        cases=with_long(mlm_cases("[MASK]"), case("long_masks", long_mlm(D_MID, "[MASK]"))),
        longest=(60, 300),
    ),
    "roformer-seqcls": dict(
        build=build_roformer_seqcls,
        seed=241,
        head="seqcls",
        cases=with_long(cls_cases(), case("long_batch", LONG, TEXTS["pos"])),
        longest=(200, 300),
    ),
    "roformer-mlm": dict(
        build=build_roformer_mlm,
        seed=242,
        head="mlm",
        cases=with_long(mlm_cases("[MASK]"), case("long_masks", long_mlm(MID, "[MASK]"))),
        longest=(131, 300),
    ),
    "roformer-tokcls": dict(
        build=build_roformer_tokcls,
        seed=243,
        head="tokcls",
        cases=with_long(tok_cases(), case("long", MID)),
        longest=(100, 300),
    ),
    "roformer-qa": dict(
        build=build_roformer_qa,
        seed=244,
        head="qa",
        cases=with_long(qa_cases(), case("long", (TEXTS["q"], MID))),
        longest=(100, 300),
    ),
    "jina-v2-base": dict(
        build=build_jina(TINY["hidden"], 4),
        seed=231,
        head="base",
        cases=jina_cases(case("long", LONG)),
        jina=True,
        longest=(200, 300),
    ),
    "jina-v2-6heads": dict(
        build=build_jina(48, 6),
        seed=232,
        head="base",
        cases=jina_cases(case("long_batch", MID, TEXTS["ner"])),
        jina=True,
        longest=(131, 300),
    ),
}


# --------------------------------------------------------------------------------------------
# saving / reloading
# --------------------------------------------------------------------------------------------

ST_MODULES = [
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def write_json(path: Path, obj, indent=2):
    with open(path, "w") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=False)
        f.write("\n")
    os.chmod(path, 0o644)


def save_st(out: Path, hidden: int):
    """sentence-transformers files as in sentence-transformers/all-mpnet-base-v2 (2_Normalize has no
    files, so no folder)."""
    write_json(out / "modules.json", ST_MODULES)
    write_json(out / "sentence_bert_config.json", {"max_seq_length": 384, "do_lower_case": False})
    write_json(
        out / "config_sentence_transformers.json",
        {"__version__": {"sentence_transformers": "2.0.0", "transformers": "4.6.1", "pytorch": "1.8.1"}},
    )
    pool = out / "1_Pooling"
    pool.mkdir()
    os.chmod(pool, 0o755)
    write_json(
        pool / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
        },
    )


def save(model, tok, out: Path, spec):
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tok.save_pretrained(out)
    if spec.get("jina"):
        write_json(out / "config.json", model.cfg_dict)
        sd = {k: v.detach().clone().contiguous() for k, v in model.model.state_dict().items()}
        save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    else:
        model.save_pretrained(out)
    for p in out.iterdir():
        os.chmod(p, 0o644)
    if spec.get("st"):
        save_st(out, model.config.hidden_size)


def reload(model, out: Path, spec):
    """The golden model: the saved folder reloaded in f32."""
    if spec.get("jina"):
        cfg = json.load(open(out / "config.json"))
        m = JinaBertRef(JinaCfg(**cfg))
        m.load_state_dict(load_file(str(out / "model.safetensors")), strict=True)
        return m.eval()
    m = type(model).from_pretrained(out, dtype=torch.float32)
    for k, v in m.state_dict().items():
        assert v.dtype == torch.float32, k
    # every saved tensor was loaded (nothing silently re-initialised)
    saved = load_file(str(out / "model.safetensors"))
    msd = m.state_dict()
    for k, v in saved.items():
        assert k in msd and torch.equal(msd[k], v), k
    return m.eval()


# --------------------------------------------------------------------------------------------
# goldens
# --------------------------------------------------------------------------------------------


def mean_pool(h, mask):
    m = mask.unsqueeze(-1).expand(h.size()).float()
    return torch.sum(h * m, 1) / torch.clamp(m.sum(1), min=1e-9)


def golden(name, spec, model, out: Path):
    tok = AutoTokenizer.from_pretrained(out)
    raw = Tokenizer.from_file(str(out / "tokenizer.json"))
    jina = spec.get("jina", False)
    cfg = model.config
    head = spec["head"]
    embeds = jina or spec.get("st", False)
    cases, warns, longest = [], [], 0
    for c in spec["cases"]:
        texts = [t for t, _ in c["inputs"]]
        pairs = [p for _, p in c["inputs"]]
        if any(p is not None for p in pairs):
            assert all(p is not None for p in pairs), "a batch mixes pairs and single texts"
            enc = tok(texts, pairs, padding=True, return_tensors="pt")
        else:
            enc = tok(texts, padding=True, return_tensors="pt")
        feed = {k: v for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.no_grad():
            if jina:
                o = model(**feed)
                o_sdpa = model(**feed, sdpa=True)
                assert torch.allclose(o.last_hidden_state, o_sdpa.last_hidden_state, atol=2e-5), name
            else:
                o = model(**feed, output_hidden_states=True)
        hidden = o.hidden_states[-1]
        if embeds:
            pooled = mean_pool(hidden, feed["attention_mask"])
            sent = F.normalize(pooled, p=2, dim=1)
        items = []
        for i, (t, p) in enumerate(c["inputs"]):
            r = raw.encode(t, p) if p is not None else raw.encode(t)
            n = len(r.ids)
            longest = max(longest, n)
            assert enc["attention_mask"][i].sum().item() == n
            assert enc["input_ids"][i][:n].tolist() == r.ids, (name, c["name"], r.tokens)
            if "token_type_ids" in enc:
                assert enc["token_type_ids"][i][:n].tolist() == r.type_ids, (name, c["name"])
            else:
                assert not any(r.type_ids), (name, c["name"], "type ids the model does not get")
            item = dict(text=t)
            if p is not None:
                item["text_pair"] = p
            item["tokens"] = r.tokens
            item["input_ids"] = r.ids
            item["token_type_ids"] = r.type_ids
            item["last_hidden_state"] = rl(hidden[i, :n])
            if embeds:
                item["mean_pooled"] = rl(pooled[i])
                if spec.get("st"):
                    item["sentence_embedding"] = rl(sent[i])
            head_logits(item, head, o, i, n, r, tok.mask_token_id, f"{name}/{c['name']}[{i}]", warns)
            items.append(item)
        cases.append(dict(name=c["name"], inputs=items))
    lo, hi = spec["longest"]
    assert lo <= longest <= hi, (name, longest, spec["longest"])
    if jina:
        model_type, arch, problem_type, id2label = "bert", cfg.architectures[0], None, []
    else:
        model_type, arch = cfg.model_type, cfg.architectures[0]
        problem_type = getattr(cfg, "problem_type", None)
        id2label = [cfg.id2label[i] for i in range(len(cfg.id2label))] if head in ("seqcls", "tokcls") else []
    g = dict(
        model_type=model_type,
        architecture=arch,
        head=head,
        weights="f32",
        problem_type=problem_type,
        id2label=id2label,
        mask_token=tok.mask_token,
        seed=spec["seed"],
        note="random seeded tiny model (scripts/make_tiny_families.py); outputs mean nothing",
        versions=dict(torch=torch.__version__.split("+")[0], transformers=transformers.__version__),
    )
    if jina:
        g["reference"] = (
            "JinaBertModel of jinaai/jina-bert-implementation modeling_bert.py, re-implemented in "
            "scripts/make_tiny_families.py (JinaBertRef); scores = QK^T/sqrt(d) + mask + alibi, "
            "alibi[h,i,j] = -slope_h * |i - j| (f32)"
        )
    if embeds:
        g["embedding"] = dict(
            mean_pooled="sum over real tokens of last_hidden_state / max(count, 1e-9) (mean pooling)",
        )
        if spec.get("st"):
            g["embedding"]["sentence_embedding"] = "mean_pooled / max(L2 norm, 1e-12) (sentence-transformers Normalize)"
    g["cases"] = cases
    with open(out / "golden.json", "w") as f:
        json.dump(g, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    os.chmod(out / "golden.json", 0o644)
    return warns, longest


# --------------------------------------------------------------------------------------------
# tests/golden/positions.json
# --------------------------------------------------------------------------------------------

REL_RANGE = (-2100, 2100)


def f9(x) -> float:
    return float(f"{float(x):.9g}")


def positions_json(path: Path):
    rel = torch.arange(REL_RANGE[0], REL_RANGE[1] + 1, dtype=torch.long)

    # MPNet: relative_position = memory - context (key index minus query index)
    mp = MPNetEncoder.relative_position_bucket(rel, num_buckets=32, max_distance=128)
    mp = [int(x) for x in mp.tolist()]
    # the same formula in f64 (numpy), to report where f32 matters
    n = -rel.numpy().astype(np.int64)
    ret = (n < 0).astype(np.int64) * 16
    n = np.abs(n)
    with np.errstate(divide="ignore"):
        large = 8 + (np.log(n / 8.0) / math.log(128 / 8) * 8).astype(np.int64)
    large = np.minimum(large, 15)
    f64 = (ret + np.where(n < 8, n, large)).tolist()
    mp_f64_diff = [r for r, a, b in zip(rel.tolist(), mp, f64) if a != b]

    deb = []
    for bucket_size, max_position in [(256, 512), (8, 16), (128, 256)]:
        b = deberta_mod.make_log_bucket_position(rel, bucket_size, max_position)
        assert b.dtype == torch.float32
        ints = b.to(torch.long).tolist()
        # f64 recomputation
        r = rel.numpy().astype(np.float64)
        mid = bucket_size // 2
        absp = np.where((r < mid) & (r > -mid), mid - 1, np.abs(r))
        logp = np.ceil(np.log(absp / mid) / np.log((max_position - 1) / mid) * (mid - 1)) + mid
        ref64 = np.where(absp <= mid, r, logp * np.sign(r)).astype(np.int64).tolist()
        diff = [x for x, a, c in zip(rel.tolist(), ints, ref64) if a != c]
        deb.append(
            dict(
                bucket_size=bucket_size,
                max_position=max_position,
                buckets=ints,
                f64_formula_differs_at=diff,
            )
        )

    q = torch.zeros(1, 20, 4)
    brp = deberta_mod.build_relative_position(q, q, bucket_size=8, max_position=16)
    assert brp.dtype == torch.long and tuple(brp.shape) == (1, 20, 20)

    slopes = {}
    for n_heads in range(1, 41):
        s = torch.Tensor(get_alibi_head_slopes(n_heads))  # f32, as the model stores them
        slopes[str(n_heads)] = [f9(x) for x in s.tolist()]

    doc = {
        "relative_positions": f"every table runs over relative positions {REL_RANGE[0]}..={REL_RANGE[1]} in order "
        "(index i holds relative position -2100 + i)",
        "mpnet_buckets": "transformers MPNetEncoder.relative_position_bucket(relative_position, num_buckets=32, "
        "max_distance=128) with relative_position = memory - context = key index j - query index i. It negates "
        "(n = i - j), adds 16 when n < 0 (key after query), keeps |n| < 8 exact, else 8 + "
        "int(log(|n|.float() / 8) / math.log(128 / 8) * 8) (torch f32 log; truncation toward zero), capped at 15. "
        "The encoder always calls it with the default num_buckets=32 (config.relative_attention_num_buckets only "
        "sizes the embedding) and with positions 0..len-1 (not the padding-offset position ids); the bias "
        "relative_attention_bias[bucket][head] is added to QK^T/sqrt(d) (after scaling), before the mask, in "
        "every layer. mpnet_f64_formula_differs_at: relative positions where the same formula in f64 gives "
        "another bucket.",
        "deberta_buckets": "transformers deberta_v2 make_log_bucket_position(relative_pos, bucket_size, "
        "max_position) for relative_pos = query index i - key index j, then .to(torch.long) as "
        "build_relative_position does. mid = bucket_size // 2; |rel| <= mid: rel itself; else "
        "sign(rel) * (ceil(log(|rel| / mid) / log((max_position - 1) / mid) * (mid - 1)) + mid), in torch "
        "f32 (|rel| / mid is true division of a long tensor; log((max_position-1)/mid) is a f32 tensor). "
        "Values are NOT clamped here: the attention clamps c2p index = clamp(rel + span, 0, 2*span - 1) and "
        "p2c index = clamp(-rel + span, 0, 2*span - 1), span = position_buckets (or max_relative_positions "
        "when position_buckets <= 0). f64_formula_differs_at: where the same formula in f64 disagrees.",
        "deberta_build_relative_position": "build_relative_position(query, key, bucket_size, max_position): "
        "rel[i][j] = i - j for query row i and key column j (both from 0), log-bucketed when bucket_size > 0 and "
        "max_position > 0, cast to long, shape [1, q, k]. The example is the real function's output for q = k = "
        "20, bucket_size 8, max_position 16.",
        "alibi_slopes": "_get_alibi_head_slopes(n) of jinaai/jina-bert-implementation modeling_bert.py for "
        "n = 1..=40, in Python f64 then stored as f32 (torch.Tensor(list)); written with 9 significant digits "
        "(exact f32 round trip). The bias is -slope_h * |i - j| (f32 product), added to QK^T/sqrt(d) together "
        "with the padding mask.",
    }
    obj = dict(
        note="reference tables computed with the real PyTorch code (scripts/make_tiny_families.py)",
        versions=dict(torch=torch.__version__.split("+")[0], transformers=transformers.__version__),
        doc=doc,
        relative_position_range=list(REL_RANGE),
        mpnet_buckets=dict(num_buckets=32, max_distance=128, buckets=mp, f64_formula_differs_at=mp_f64_diff),
        deberta_buckets=deb,
        deberta_build_relative_position=dict(
            query_size=20, key_size=20, bucket_size=8, max_position=16, matrix=brp[0].tolist()
        ),
        alibi_slopes=slopes,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    os.chmod(path, 0o644)
    print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: mpnet f64 diffs {mp_f64_diff}, "
          f"deberta f64 diffs {[d['f64_formula_differs_at'] for d in deb]}")


# --------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "tests" / "tiny"))
    ap.add_argument("--positions", default=str(POSITIONS_JSON))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    out_root = Path(args.out)
    # the Unigram pieces are make_tiny_models.py's algorithm
    assert unigram_pieces(CORPUS) == mtm.unigram_vocab()[4:-1]
    if not only or "positions" in only:
        positions_json(Path(args.positions))
    warns = []
    for name, spec in SPECS.items():
        if only and name not in only:
            continue
        torch.manual_seed(spec["seed"])
        model, tok = spec["build"](spec["seed"])
        if spec.get("jina"):
            init_weights(model.model, spec["seed"])
        else:
            init_weights(model, spec["seed"])
            model.config.architectures = [type(model).__name__]
        out = out_root / name
        save(model, tok, out, spec)
        gm = reload(model, out, spec)
        # the reloaded model equals the in-memory one, tied and unsaved parameters included
        mem = model.model.state_dict() if spec.get("jina") else model.state_dict()
        got = gm.state_dict()
        assert sorted(mem) == sorted(got), (name, set(mem) ^ set(got))
        for k, v in mem.items():
            assert torch.equal(got[k], v), (name, k)
        w, longest = golden(name, spec, gm, out)
        warns += w
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        cls = "JinaBertRef" if spec.get("jina") else type(model).__name__
        print(f"{name:20s} {cls:36s} vocab {len(tok):4d}  longest {longest:3d}  {size / 1024:6.1f} KiB")
    for w in warns:
        print("WARNING", w, file=sys.stderr)


if __name__ == "__main__":
    main()
