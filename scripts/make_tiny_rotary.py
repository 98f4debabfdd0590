#!/usr/bin/env python3
"""Tiny seeded random-weight checkpoints of the rotary, long-context encoder families, with PyTorch
f32 goldens, under tests/tiny/<name>/ (checked by tests/families.rs).

Same conventions, init, corpus, test texts and golden.json format as scripts/make_tiny_families.py
(whose SPECS machinery, save / reload / golden are reused here; read its docstring and
make_tiny_models.py's first). **The weights are random and mean nothing.** What is new here:

  * ModernBERT (transformers' ModernBert*): pre-norm without layer 0's attention norm, a final
    norm, fused Wqkv, GeGLU, rotary positions (rotate-half) with a base per layer kind, and
    sliding-window attention on the layers that are not global. The tiny models have 3 layers,
    global every 2nd (layers 0 and 2 global, 1 local), local_attention 16 (a query sees keys up to 8
    tokens away), global_rope_theta 160000 and local_rope_theta 10000, so that inputs of 40-280
    tokens reach well past the window and the fast rotary frequencies wrap many times.
      - modernbert-mlm keeps the configuration keys of the checkpoints on the Hub (transformers 4.x:
        global_attn_every_n_layers, global_rope_theta, local_rope_theta, no layer_types /
        rope_parameters); the other folders are as transformers 5 saves them (layer_types and
        rope_parameters per layer type).
      - modernbert-seqcls pools the first token (classifier_pooling "cls") and has 1024 positions
        and an input of more than 512 tokens (the GPU's old limit); modernbert-seqcls-mean
        the mean of the real tokens; modernbert-tokcls has every bias switched on (attention_bias,
        mlp_bias, norm_bias, classifier_bias) and classifier_activation "gelu_pytorch_tanh".
      - Tokenizer: byte-level BPE as ModernBERT's tokenizer.json (trained on CORPUS), specials
        [UNK] [CLS] [SEP] [PAD] [MASK] appended last as in answerdotai/ModernBERT-base ([MASK] eats
        the space before it), TemplateProcessing `[CLS] $A [SEP]` / `[CLS] $A [SEP] $B [SEP]`, type
        ids all 0, and no token_type_ids given to the model.

  * nomic-bert-hub: NomicBertModel with config.json as nomic-embed-text-v1.5's remote code has it
    (n_embd, activation_function swiglu, rotary_emb_base, max_trained_positions 2048 beside
    n_positions 8192 and rotary_scaling_factor 2, ...); the golden is transformers 5's NomicBertModel
    on the same weights (the file is what both write), within the trained 2048 positions.
  * nomic-bert-ntk-hub: the same remote-code layout with dynamic NTK scaling in reach
    (max_trained_positions 24, rotary_scaling_factor 2, n_positions 512): a sequence longer than
    24 tokens turns by the base 1000 * (2n/24 - 1)^(d/(d-2)). The golden is transformers 5's
    `rope_type: dynamic` model (max_position_embeddings 24) run on each sequence alone with its
    rotary state reset, so each text turns by its own length, as webert does.
  * NomicBERT and GTE as transformers 5 has them in-library (JinaEmbeddingsV3's layer: separate
    q / k / v / o projections, post-norm, gate / up / down MLP, rotate-half rotary positions, no
    position table): nomic-bert-* (no biases in the layers, SiLU gate, rope_theta 1000, WordPiece
    as nomic-embed-text), gte-* (biases but on gate / up, GELU gate, XLM-R-style Unigram as
    gte-multilingual; gte-mlm turns by `rope_type: linear`, factor 2).
  * gte-new-hub: GteForSequenceClassification saved as the remote code (`model_type: new`,
    `rope_scaling: {type: ntk, factor: 2}`, the base under `new.`); the golden is transformers 5's
    model with the same rotary angles (`linear` rope of factor 2^(2/d) on the base 160000 * 2).

  * EuroBERT (transformers 5's EuroBert*): Llama's layer attending both ways (pre-RMSNorm, final
    norm, SwiGLU, rotate-half rotary, no biases), 3 layers, with a Llama 3 style tokenizer (byte-level
    BPE after Llama 3's regex split, <|begin_of_text|> <|end_of_text|> <|mask|> appended, the end
    token as padding, `<|begin_of_text|> $A <|end_of_text|>`). eurobert-mlm: rope_theta 250000 (the
    config's default); eurobert-seqcls: classifier_pooling late (the default), 1024 positions, 618
    tokens, rope_theta 1000 so that three of the 8-wide heads' four frequencies wrap (the slowest
    turns 3.5 rad); -bos and -mean-gqa the other poolings (-mean-gqa with 2 K/V heads for 4);
    eurobert-tokcls with attention_bias and mlp_bias. EuroBERT records hidden states before its final norm: the goldens' hidden states are
    the base model's last_hidden_state (LastHidden). eurobert-seqcls-hub is rewritten after its golden
    as the Hub's remote-code checkpoints are: `clf_pooling` (mean), a flat `rope_theta` (1000),
    `rope_scaling` null, the head's output projection `out_proj`.

Usage:  HF_HUB_OFFLINE=1 /work/pyenv/bin/python scripts/make_tiny_rotary.py [--only a,b] [--out DIR]
Needs:  torch, transformers 5.x (tested 5.25.0), tokenizers, safetensors. Deterministic.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import make_tiny_families as mtf  # noqa: E402
import make_tiny_models as mtm  # noqa: E402
from make_tiny_models import CORPUS, SEQ3, TEXTS, BIO, case, cls_cases, labels_kw, mlm_cases, qa_cases, tok_cases  # noqa: E402

import argparse  # noqa: E402
import json  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import (  # noqa: E402
    BertTokenizer,
    EuroBertConfig,
    EuroBertForMaskedLM,
    EuroBertForSequenceClassification,
    EuroBertForTokenClassification,
    GteConfig,
    GteForMaskedLM,
    GteForSequenceClassification,
    GteForTokenClassification,
    NomicBertConfig,
    NomicBertForMaskedLM,
    NomicBertForSequenceClassification,
    NomicBertForTokenClassification,
    NomicBertModel,
    ModernBertConfig,
    ModernBertForMaskedLM,
    ModernBertForQuestionAnswering,
    ModernBertForSequenceClassification,
    ModernBertForTokenClassification,
    PreTrainedTokenizerFast,
)

LONG = mtf.LONG
MID = mtf.MID
SHORTISH = " ".join(CORPUS[:3])

MB_SPECIALS = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def modernbert_tokenizer(max_len: int):
    """Byte-level BPE trained on CORPUS with ModernBERT's specials appended last."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(
        vocab_size=560,
        min_frequency=2,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    t.train_from_iterator(CORPUS, trainer=tr)
    base = t.get_vocab_size()
    t.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in MB_SPECIALS[:4]])
    t.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=False, special=True, normalized=False)])
    ids = {s: t.token_to_id(s) for s in MB_SPECIALS}
    assert ids["[UNK]"] == base and ids["[MASK]"] == base + 4, ids
    t.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0",
        pair="[CLS]:0 $A:0 [SEP]:0 $B:0 [SEP]:0",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=t,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_input_names=["input_ids", "attention_mask"],
        model_max_length=max_len,
    )
    return tok


def modernbert_cfg(tok, hub_keys=False, positions=512, **kw):
    ids = tok.convert_tokens_to_ids
    cfg = ModernBertConfig(
        vocab_size=len(tok),
        hidden_size=mtm.TINY["hidden"],
        intermediate_size=mtm.TINY["inter"],
        num_hidden_layers=3,
        num_attention_heads=mtm.TINY["heads"],
        max_position_embeddings=positions,
        global_attn_every_n_layers=2,
        local_attention=16,
        global_rope_theta=160000.0,
        local_rope_theta=10000.0,
        pad_token_id=ids("[PAD]"),
        bos_token_id=ids("[CLS]"),
        cls_token_id=ids("[CLS]"),
        eos_token_id=ids("[SEP]"),
        sep_token_id=ids("[SEP]"),
        **kw,
    )
    assert cfg.layer_types == ["full_attention", "sliding_attention", "full_attention"], cfg.layer_types
    cfg.hub_keys = hub_keys
    return cfg


def hub_layout(out: Path):
    """Rewrites config.json with the keys of the ModernBERT checkpoints on the Hub (transformers
    4.x): the layer pattern as global_attn_every_n_layers, the bases as global / local_rope_theta."""
    p = out / "config.json"
    c = json.load(open(p))
    params = c.pop("rope_parameters")
    c.pop("layer_types")
    c.pop("hub_keys", None)
    c["global_attn_every_n_layers"] = 2
    c["global_rope_theta"] = params["full_attention"]["rope_theta"]
    c["local_rope_theta"] = params["sliding_attention"]["rope_theta"]
    mtf.write_json(p, c)


def build(cls, positions=512, **kw):
    def b(seed):
        tok = modernbert_tokenizer(positions)
        hub = kw.pop("hub_keys", False)
        return cls(modernbert_cfg(tok, hub_keys=hub, positions=positions, **kw)), tok

    return b


def tiny_cfg(config_cls, tok, **kw):
    """The tiny sizes in a NomicBERT or GTE config."""
    return config_cls(
        vocab_size=len(tok),
        hidden_size=mtm.TINY["hidden"],
        num_hidden_layers=mtm.TINY["layers"],
        num_attention_heads=mtm.TINY["heads"],
        intermediate_size=mtm.TINY["inter"],
        pad_token_id=tok.pad_token_id,
        **{"max_position_embeddings": 512, **kw},
    )


def build_nomic(cls, **kw):
    def b(seed):
        tok = mtm.wordpiece_tokenizer(BertTokenizer, cased=False, max_len=512)
        return cls(tiny_cfg(NomicBertConfig, tok, **kw)), tok

    return b


def nomic_hub_layout(out: Path, trained=2048, positions=8192):
    """Rewrites config.json as nomic-ai/nomic-embed-text-v1.5's (remote code): n_embd / n_head /
    n_layer / n_inner, activation_function swiglu, rotary_emb_*, layer_norm_epsilon, the bias and
    norm switches, max_trained_positions beside the NTK-extended n_positions."""
    p = out / "config.json"
    c = json.load(open(p))
    hub = {
        "activation_function": "swiglu",
        "architectures": ["NomicBertModel"],
        "auto_map": {
            "AutoConfig": "nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig",
            "AutoModel": "nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel",
        },
        "bos_token_id": None,
        "causal": False,
        "dense_seq_output": True,
        "embd_pdrop": 0.0,
        "eos_token_id": None,
        "fused_bias_fc": True,
        "fused_dropout_add_ln": True,
        "initializer_range": 0.02,
        "layer_norm_epsilon": c["layer_norm_eps"],
        "max_trained_positions": trained,
        "mlp_fc1_bias": False,
        "mlp_fc2_bias": False,
        "model_type": "nomic_bert",
        "n_embd": c["hidden_size"],
        "n_head": c["num_attention_heads"],
        "n_inner": c["intermediate_size"],
        "n_layer": c["num_hidden_layers"],
        "n_positions": positions,
        "pad_vocab_size_multiple": 64,
        "parallel_block": False,
        "parallel_block_tied_norm": False,
        "prenorm": False,
        "qkv_proj_bias": False,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.0,
        "rotary_emb_base": c["rope_parameters"]["rope_theta"],
        "rotary_emb_fraction": 1.0,
        "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None,
        "rotary_scaling_factor": 2,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.0,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "torch_dtype": "float32",
        "transformers_version": "4.34.0",
        "type_vocab_size": c["type_vocab_size"],
        "use_cache": True,
        "use_flash_attn": True,
        "use_rms_norm": False,
        "use_xentropy": True,
        "vocab_size": c["vocab_size"],
    }
    mtf.write_json(p, hub)


# Llama 3's pre-tokenizer split (meta-llama/Meta-Llama-3-8B tokenizer.json, as EuroBERT's).
LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
EB_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|mask|>"]


def eurobert_tokenizer(max_len: int):
    """Byte-level BPE trained on CORPUS with Llama 3's regex split, EuroBERT's specials appended
    after the merges' vocabulary (begin, end, mask in EuroBERT's order), TemplateProcessing
    `<|begin_of_text|> $A <|end_of_text|>` (pairs: `... $A <|end_of_text|> $B <|end_of_text|>`),
    the end token doubling as padding as in EuroBERT's config."""
    t = Tokenizer(models.BPE(ignore_merges=True))
    t.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    t.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(
        vocab_size=560,
        min_frequency=2,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    t.train_from_iterator(CORPUS, trainer=tr)
    base = t.get_vocab_size()
    t.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in EB_SPECIALS])
    ids = {s: t.token_to_id(s) for s in EB_SPECIALS}
    assert ids["<|begin_of_text|>"] == base and ids["<|mask|>"] == base + 2, ids
    bos, eos = EB_SPECIALS[:2]
    t.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0 {eos}:0",
        pair=f"{bos}:0 $A:0 {eos}:0 $B:0 {eos}:0",
        special_tokens=[(bos, ids[bos]), (eos, ids[eos])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=t,
        bos_token=bos,
        eos_token=eos,
        pad_token=eos,
        mask_token="<|mask|>",
        model_input_names=["input_ids", "attention_mask"],
        model_max_length=max_len,
    )


def build_eurobert(cls, theta, positions=512, **kw):
    def b(seed):
        tok = eurobert_tokenizer(positions)
        ids = tok.convert_tokens_to_ids
        cfg = EuroBertConfig(
            vocab_size=len(tok),
            hidden_size=mtm.TINY["hidden"],
            intermediate_size=mtm.TINY["inter"],
            num_hidden_layers=3,
            num_attention_heads=mtm.TINY["heads"],
            max_position_embeddings=positions,
            rope_parameters={"rope_type": "default", "rope_theta": theta},
            pad_token_id=ids("<|end_of_text|>"),
            bos_token_id=ids("<|begin_of_text|>"),
            eos_token_id=ids("<|end_of_text|>"),
            mask_token_id=ids("<|mask|>"),
            **kw,
        )
        return cls(cfg), tok

    return b


class EachAlone(torch.nn.Module):
    """NomicBertModel on each sequence of a batch alone, its rotary frequencies reset first:
    transformers' dynamic rope keeps the longest length it has seen and turns a batch by its
    padded length, where webert turns each sequence by its own length (as a fresh model run on
    that text alone does)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(self, input_ids, attention_mask, token_type_ids=None, output_hidden_states=False):
        out = torch.zeros(*input_ids.shape, self.config.hidden_size)
        rope = self.model.rotary_emb
        for i in range(input_ids.shape[0]):
            n = int(attention_mask[i].sum())
            rope.register_buffer("inv_freq", rope.original_inv_freq.clone(), persistent=False)
            rope.max_seq_len_cached = rope.original_max_seq_len
            feed = dict(input_ids=input_ids[i : i + 1, :n], attention_mask=attention_mask[i : i + 1, :n])
            if token_type_ids is not None:
                feed["token_type_ids"] = token_type_ids[i : i + 1, :n]
            out[i, :n] = self.model(**feed).last_hidden_state[0]
        return SimpleNamespace(hidden_states=(out,), last_hidden_state=out)


class LastHidden(torch.nn.Module):
    """EuroBERT records each layer's output as `hidden_states`, the last before the final norm:
    the golden's hidden states are the base model's `last_hidden_state` (after it)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.config = model.config

    def forward(self, **feed):
        feed.pop("output_hidden_states", None)
        o = self.model(**feed)
        o.hidden_states = (self.model.model(**feed).last_hidden_state,)
        return o


def eurobert_hub_layout(out: Path):
    """Rewrites the folder as the EuroBERT checkpoints' remote code (transformers 4.x) has it:
    `clf_pooling`, a flat `rope_theta` with `rope_scaling` null, and the sequence head's output
    projection named `out_proj`."""
    p = out / "config.json"
    c = json.load(open(p))
    c["clf_pooling"] = c.pop("classifier_pooling")
    c["rope_theta"] = c.pop("rope_parameters")["rope_theta"]
    c["rope_scaling"] = None
    c["auto_map"] = {
        "AutoConfig": "EuroBERT/EuroBERT-210m--configuration_eurobert.EuroBertConfig",
        "AutoModelForSequenceClassification": "EuroBERT/EuroBERT-210m--modeling_eurobert.EuroBertForSequenceClassification",
    }
    c["transformers_version"] = "4.48.0"
    mtf.write_json(p, c)
    w = load_file(str(out / "model.safetensors"))
    w = {k.replace("classifier.", "out_proj.", 1) if k.startswith("classifier.") else k: v for k, v in w.items()}
    save_file(w, str(out / "model.safetensors"), metadata={"format": "pt"})


# GTE's remote code (`model_type: new`) scales its rotary positions by a fixed NTK factor:
# inv_freq = (theta * f)^(-2j/d) / f^(2/d). That is transformers 5's `linear` rope with
# factor f^(2/d) on the base theta * f, which makes the golden of the `new` layout.
NTK_FACTOR, NTK_THETA, HEAD_DIM = 2.0, 160000.0, mtm.TINY["hidden"] // mtm.TINY["heads"]
# nomic-bert-ntk-hub's trained length: the short texts stay within it, the long ones scale.
NTK_TRAINED = 24


def gte_new_layout(out: Path):
    """Rewrites the folder as Alibaba-NLP/gte-multilingual-*'s remote code saves it: config
    `model_type: new` with `rope_theta` and `rope_scaling: {type: ntk}`, the remote code's
    switches, and the task model's base under `new.`."""
    p = out / "config.json"
    c = json.load(open(p))
    del c["rope_parameters"]
    c.update({
        "architectures": ["NewForSequenceClassification"],
        "auto_map": {
            "AutoConfig": "Alibaba-NLP/new-impl--configuration.NewConfig",
            "AutoModel": "Alibaba-NLP/new-impl--modeling.NewModel",
            "AutoModelForSequenceClassification": "Alibaba-NLP/new-impl--modeling.NewForSequenceClassification",
        },
        "layer_norm_type": "layer_norm",
        "logn_attention_clip1": False,
        "logn_attention_scale": False,
        "model_type": "new",
        "pack_qkv": True,
        "position_embedding_type": "rope",
        "rope_scaling": {"factor": NTK_FACTOR, "type": "ntk"},
        "rope_theta": NTK_THETA,
        "unpad_inputs": False,
        "use_memory_efficient_attention": False,
    })
    json.dump(c, open(p, "w"), indent=2, sort_keys=True)
    w = load_file(str(out / "model.safetensors"))
    w = {("new." + k[len("gte."):] if k.startswith("gte.") else k): v for k, v in w.items()}
    save_file(w, str(out / "model.safetensors"), metadata={"format": "pt"})


def build_gte(cls, **kw):
    def b(seed):
        tok = mtm.unigram_tokenizer(512)
        return cls(tiny_cfg(GteConfig, tok, **kw)), tok

    return b


SPECS = {
    "modernbert-mlm": dict(
        build=build(ModernBertForMaskedLM, hub_keys=True),
        seed=251,
        head="mlm",
        cases=mtf.with_long(mlm_cases("[MASK]"), case("long_masks", mtf.long_mlm(MID, "[MASK]"))),
        longest=(120, 400),
    ),
    "modernbert-seqcls": dict(
        build=build(ModernBertForSequenceClassification, positions=1024, **labels_kw(SEQ3)),
        seed=252,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", LONG, TEXTS["pos"], SHORTISH)),
        longest=(513, 1024),
    ),
    "modernbert-seqcls-mean": dict(
        build=build(ModernBertForSequenceClassification, classifier_pooling="mean", **labels_kw(SEQ3)),
        seed=253,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
    ),
    "modernbert-tokcls": dict(
        build=build(
            ModernBertForTokenClassification,
            attention_bias=True,
            mlp_bias=True,
            norm_bias=True,
            classifier_bias=True,
            classifier_activation="gelu_pytorch_tanh",
            **labels_kw(BIO),
        ),
        seed=254,
        head="tokcls",
        cases=mtf.with_long(tok_cases(), case("long", SHORTISH)),
        longest=(40, 400),
    ),
    "modernbert-qa": dict(
        build=build(ModernBertForQuestionAnswering),
        seed=255,
        head="qa",
        cases=mtf.with_long(qa_cases(), case("long", (TEXTS["q"], MID))),
        longest=(120, 400),
    ),
    "nomic-bert-seqcls": dict(
        build=build_nomic(NomicBertForSequenceClassification, **labels_kw(SEQ3)),
        seed=261,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
    ),
    "nomic-bert-mlm": dict(
        build=build_nomic(NomicBertForMaskedLM),
        seed=262,
        head="mlm",
        cases=mtf.with_long(mlm_cases("[MASK]"), case("long_masks", mtf.long_mlm(MID, "[MASK]"))),
        longest=(120, 400),
    ),
    "nomic-bert-hub": dict(
        build=build_nomic(NomicBertModel),
        seed=265,
        head="base",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
        nomic_hub=True,
    ),
    "nomic-bert-tokcls": dict(
        build=build_nomic(NomicBertForTokenClassification, **labels_kw(BIO)),
        seed=268,
        head="tokcls",
        cases=mtf.with_long(tok_cases(), case("long", MID)),
        longest=(100, 400),
    ),
    "gte-tokcls": dict(
        build=build_gte(GteForTokenClassification, **labels_kw(BIO)),
        seed=269,
        head="tokcls",
        cases=mtf.with_long(tok_cases(), case("long", MID)),
        longest=(100, 400),
    ),
    "nomic-bert-ntk-hub": dict(
        build=build_nomic(
            NomicBertModel,
            max_position_embeddings=NTK_TRAINED,
            rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 1000.0},
        ),
        seed=267,
        head="base",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"], SHORTISH)),
        longest=(120, 400),
        nomic_hub=dict(trained=NTK_TRAINED, positions=512),
        each_alone=True,
    ),
    "gte-seqcls": dict(
        build=build_gte(GteForSequenceClassification, **labels_kw(SEQ3)),
        seed=263,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
    ),
    "gte-new-hub": dict(
        build=build_gte(
            GteForSequenceClassification,
            rope_parameters={
                "rope_type": "linear",
                "factor": NTK_FACTOR ** (2 / HEAD_DIM),
                "rope_theta": NTK_THETA * NTK_FACTOR,
            },
            **labels_kw(SEQ3),
        ),
        seed=266,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
        gte_new=True,
    ),
    "gte-mlm": dict(
        build=build_gte(GteForMaskedLM, rope_parameters={"rope_type": "linear", "factor": 2.0, "rope_theta": 160000.0}),
        seed=264,
        head="mlm",
        cases=mtf.with_long(mlm_cases("<mask>"), case("long_masks", mtf.long_mlm(MID, "<mask>"))),
        longest=(120, 400),
    ),
    "eurobert-mlm": dict(
        build=build_eurobert(EuroBertForMaskedLM, 250000.0),
        seed=271,
        head="mlm",
        cases=mtf.with_long(mlm_cases("<|mask|>"), case("long_masks", mtf.long_mlm(MID, "<|mask|>"))),
        longest=(120, 400),
    ),
    "eurobert-seqcls": dict(
        build=build_eurobert(EuroBertForSequenceClassification, 1000.0, positions=1024, **labels_kw(SEQ3)),
        seed=272,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", LONG, TEXTS["pos"], SHORTISH)),
        longest=(513, 1024),
    ),
    "eurobert-seqcls-bos": dict(
        build=build_eurobert(EuroBertForSequenceClassification, 1000.0, classifier_pooling="bos", **labels_kw(SEQ3)),
        seed=273,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
    ),
    "eurobert-seqcls-mean-gqa": dict(
        build=build_eurobert(
            EuroBertForSequenceClassification,
            1000.0,
            classifier_pooling="mean",
            num_key_value_heads=2,
            **labels_kw(SEQ3),
        ),
        seed=274,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
    ),
    "eurobert-seqcls-hub": dict(
        build=build_eurobert(EuroBertForSequenceClassification, 1000.0, classifier_pooling="mean", **labels_kw(SEQ3)),
        seed=276,
        head="seqcls",
        cases=mtf.with_long(cls_cases(), case("long_batch", MID, TEXTS["pos"])),
        longest=(120, 400),
        eurobert_hub=True,
    ),
    "eurobert-tokcls": dict(
        build=build_eurobert(
            EuroBertForTokenClassification, 10000.0, attention_bias=True, mlp_bias=True, **labels_kw(BIO)
        ),
        seed=275,
        head="tokcls",
        cases=mtf.with_long(tok_cases(), case("long", SHORTISH)),
        longest=(40, 400),
    ),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(mtf.ROOT / "tests" / "tiny"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    warns = []
    for name, spec in SPECS.items():
        if only and name not in only:
            continue
        torch.manual_seed(spec["seed"])
        model, tok = spec["build"](spec["seed"])
        hub = getattr(model.config, "hub_keys", False)
        if hasattr(model.config, "hub_keys"):
            del model.config.hub_keys
        mtf.init_weights(model, spec["seed"])
        model.config.architectures = [type(model).__name__]
        out = Path(args.out) / name
        mtf.save(model, tok, out, spec)
        if hub:
            hub_layout(out)
        if spec.get("nomic_hub"):
            # reloaded by transformers 5 first; the Hub's config has no transformers class
            gm = type(model).from_pretrained(out, dtype=torch.float32).eval()
            nomic_hub_layout(out, **({} if spec["nomic_hub"] is True else spec["nomic_hub"]))
        # transformers 5 saves NomicBERT and GTE in their Hub layouts (emb_ln, Wqkv, fc11, ...;
        # qkv_proj, up_gate_proj, ...) and renames them back on load: the reloaded model is
        # compared with the in-memory one below, not the file with it.
        if spec.get("nomic_hub"):
            pass
        elif name.startswith(("nomic", "gte")):
            gm = type(model).from_pretrained(out, dtype=torch.float32).eval()
        else:
            gm = mtf.reload(model, out, spec)
        mem, got = model.state_dict(), gm.state_dict()
        assert sorted(mem) == sorted(got), (name, set(mem) ^ set(got))
        for k, v in mem.items():
            assert torch.equal(got[k], v), (name, k)
        assert getattr(gm.config, "layer_types", None) == getattr(model.config, "layer_types", None), name
        if name.startswith("eurobert"):
            gm = LastHidden(gm)
        if spec.get("each_alone"):
            gm = EachAlone(gm)
        if spec.get("gte_new"):
            # the golden is transformers 5's model, reloaded from the file before its rewrite
            w, longest = mtf.golden(name, spec, gm, out)
            gte_new_layout(out)
            warns += w
            print(f"{name:24s} {type(model).__name__:36s} vocab {len(tok):4d}  longest {longest:3d}  (new layout)")
            continue
        if spec.get("eurobert_hub"):
            # the golden is transformers 5's model, reloaded from the file before its rewrite
            w, longest = mtf.golden(name, spec, gm, out)
            eurobert_hub_layout(out)
            warns += w
            print(f"{name:24s} {type(model).__name__:36s} vocab {len(tok):4d}  longest {longest:3d}  (hub layout)")
            continue
        w, longest = mtf.golden(name, spec, gm, out)
        warns += w
        size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        print(f"{name:24s} {type(model).__name__:36s} vocab {len(tok):4d}  longest {longest:3d}  {size / 1024:6.1f} KiB")
    for w in warns:
        print("WARNING", w, file=sys.stderr)


if __name__ == "__main__":
    main()
