//! MPNet's entry: relative bucket bias on the attention scores.

use super::bert::{BERT, BERT_LAYER};
use super::roberta::{ROBERTA_HEAD, ROBERTA_MLM};
use super::{DistanceBias, Family, LayerTemplates, ModelType, Positions};

pub(super) const MPNET: Family = Family {
    model_type: ModelType::MpNet,
    names: &["mpnet"],
    class: "MPNet",
    prefix: "mpnet",
    token_types: false,
    positions: Positions::AfterIndex(1),
    layer: LayerTemplates {
        qkv: [
            "encoder.layer.{i}.attention.attn.q",
            "encoder.layer.{i}.attention.attn.k",
            "encoder.layer.{i}.attention.attn.v",
        ],
        attn_out: "encoder.layer.{i}.attention.attn.o",
        attn_norm: "encoder.layer.{i}.attention.LayerNorm",
        ..BERT_LAYER
    },
    distance_bias: DistanceBias::RelativeBuckets {
        table: "encoder.relative_attention_bias.weight",
        rows_key: "relative_attention_num_buckets",
        buckets: 32,
        max_distance: 128,
    },
    sequence_head: ROBERTA_HEAD,
    mlm: ROBERTA_MLM,
    next_sentence: false,
    ..BERT
};
