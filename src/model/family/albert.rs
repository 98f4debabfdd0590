//! ALBERT's entry: one layer's weights shared by every layer.

use super::bert::{BERT, BERT_EMBEDDINGS, BERT_KEYS};
use super::{
    ConfigKeys, EmbeddingNames, Family, FfnGate, LayerTemplates, MlmNames, ModelType, PooledHead,
};
use crate::model::activation::Activation;

pub(super) const ALBERT: Family = Family {
    model_type: ModelType::Albert,
    names: &["albert"],
    class: "Albert",
    prefix: "albert",
    keys: ConfigKeys {
        default_act: "gelu_new",
        ..BERT_KEYS
    },
    embeddings: EmbeddingNames {
        project: "encoder.embedding_hidden_mapping_in",
        ..BERT_EMBEDDINGS
    },
    // One layer group of one layer, shared by every layer (`num_hidden_groups` 1).
    layer: LayerTemplates {
        qkv: [
            "encoder.albert_layer_groups.0.albert_layers.0.attention.query",
            "encoder.albert_layer_groups.0.albert_layers.0.attention.key",
            "encoder.albert_layer_groups.0.albert_layers.0.attention.value",
        ],
        fused_qkv: None,
        interleaved_qkv: None,
        attn_out: "encoder.albert_layer_groups.0.albert_layers.0.attention.dense",
        attn_norm: "encoder.albert_layer_groups.0.albert_layers.0.attention.LayerNorm",
        ffn_gate: FfnGate::First,
        ffn_in: "encoder.albert_layer_groups.0.albert_layers.0.ffn",
        ffn_out: "encoder.albert_layer_groups.0.albert_layers.0.ffn_output",
        ffn_norm: "encoder.albert_layer_groups.0.albert_layers.0.full_layer_layer_norm",
    },
    sequence_head: PooledHead {
        dense: "pooler",
        act: Activation::Tanh,
        out: "classifier",
    },
    mlm: MlmNames {
        dense: "predictions.dense",
        norm: "predictions.LayerNorm",
        decoder: "predictions.decoder",
        bias: "predictions.bias",
        act: None,
        transform: true,
    },
    next_sentence: false,
    ..BERT
};
