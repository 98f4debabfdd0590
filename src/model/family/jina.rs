//! Jina v2's entry: BERT with ALiBi and a gated MLP, selected by `position_embedding_type`.

use super::bert::{BERT, BERT_LAYER};
use super::{DistanceBias, Family, LayerTemplates, Mlp, ModelType, Positions};

pub(super) const JINA_BERT: Family = Family {
    model_type: ModelType::JinaBert,
    names: &["bert"],
    selected_by: Some(("position_embedding_type", "alibi")),
    class: "JinaBert",
    positions: Positions::None,
    layer: LayerTemplates {
        ffn_in: "encoder.layer.{i}.mlp.gated_layers",
        ffn_out: "encoder.layer.{i}.mlp.wo",
        ffn_norm: "encoder.layer.{i}.mlp.layernorm",
        ..BERT_LAYER
    },
    unbiased: &["encoder.layer.{i}.mlp.gated_layers"],
    mlp: Mlp::Gated {
        kind_key: "feed_forward_type",
    },
    distance_bias: DistanceBias::Alibi,
    next_sentence: false,
    encoder_only: true,
    ..BERT
};
