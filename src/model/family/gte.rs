//! GTE's entry: NomicBERT's layer with biases, `[up | gate]` in one module.

use super::bert::{BERT, BERT_LAYER};
use super::{Family, FfnGate, LayerTemplates, MlmNames, Mlp, ModelType, Positions, Rotary};
use crate::model::activation::Activation;

/// GTE's layer as the Hub's remote code (`new`) and transformers 5 store it.
pub(super) const GTE_LAYER: LayerTemplates = LayerTemplates {
    fused_qkv: Some("encoder.layer.{i}.attention.qkv_proj"),
    attn_out: "encoder.layer.{i}.attention.o_proj",
    attn_norm: "encoder.layer.{i}.attn_ln",
    ffn_gate: FfnGate::Second,
    ffn_in: "encoder.layer.{i}.mlp.up_gate_proj",
    ffn_out: "encoder.layer.{i}.mlp.down_proj",
    ffn_norm: "encoder.layer.{i}.mlp_ln",
    ..BERT_LAYER
};

pub(super) const GTE: Family = Family {
    model_type: ModelType::Gte,
    // `new`: the Hub's remote code (gte-multilingual-*), which saves the base as `new.`.
    names: &["gte", "new"],
    class: "Gte",
    prefix: "gte",
    other_prefixes: &["new"],
    unbuilt_flags: &["logn_attention_scale", "logn_attention_clip1"],
    default_type_vocab_size: 0,
    positions: Positions::None,
    layer: GTE_LAYER,
    unbiased: &["encoder.layer.{i}.mlp.up_gate_proj"],
    mlp: Mlp::GatedHiddenAct,
    rotary: Some(Rotary {
        interleaved: false,
        theta: 160_000.0,
        theta_keys: &["rope_theta"],
        value_key: None,
        local: None,
        dynamic: None,
    }),
    mlm: MlmNames {
        dense: "lm_head.dense",
        norm: "lm_head.norm",
        decoder: "lm_head.decoder",
        bias: "lm_head.bias",
        act: Some(Activation::Gelu),
        transform: true,
    },
    next_sentence: false,
    ..BERT
};
