//! DistilBERT's entry.

use super::bert::{BERT, BERT_KEYS};
use super::{ConfigKeys, Family, FfnGate, LayerTemplates, MlmNames, ModelType, PooledHead};
use crate::model::activation::Activation;

pub(super) const DISTILBERT: Family = Family {
    model_type: ModelType::DistilBert,
    names: &["distilbert"],
    class: "DistilBert",
    prefix: "distilbert",
    keys: ConfigKeys {
        hidden: &["dim"],
        layers: &["n_layers"],
        heads: &["n_heads"],
        intermediate: &["hidden_dim"],
        act: &["activation"],
        default_act: "gelu",
        ..BERT_KEYS
    },
    token_types: false,
    layer: LayerTemplates {
        qkv: [
            "transformer.layer.{i}.attention.q_lin",
            "transformer.layer.{i}.attention.k_lin",
            "transformer.layer.{i}.attention.v_lin",
        ],
        fused_qkv: None,
        interleaved_qkv: None,
        attn_out: "transformer.layer.{i}.attention.out_lin",
        attn_norm: "transformer.layer.{i}.sa_layer_norm",
        ffn_gate: FfnGate::First,
        ffn_in: "transformer.layer.{i}.ffn.lin1",
        ffn_out: "transformer.layer.{i}.ffn.lin2",
        ffn_norm: "transformer.layer.{i}.output_layer_norm",
    },
    sequence_head: PooledHead {
        dense: "pre_classifier",
        act: Activation::Relu,
        out: "classifier",
    },
    mlm: MlmNames {
        dense: "vocab_transform",
        norm: "vocab_layer_norm",
        decoder: "vocab_projector",
        bias: "vocab_projector.bias",
        act: None,
        transform: true,
    },
    next_sentence: false,
    ..BERT
};
