//! DeBERTa's entries, v2/v3 and v1: disentangled attention over relative embeddings.

use super::bert::{BERT, BERT_EMBEDDINGS, BERT_LAYER, BERT_MLM};
use super::{
    DistanceBias, EmbeddingNames, Family, InterleavedQkv, LayerTemplates, MlmNames, ModelType,
    PooledHead,
};
use crate::model::activation::Activation;

/// DeBERTa's (v1 and v2): its `ContextPooler` belongs to the task model, not under `deberta.`.
pub(super) const DEBERTA_HEAD: PooledHead = PooledHead {
    dense: "pooler.dense",
    act: Activation::Gelu,
    out: "classifier",
};

pub(super) const DEBERTA_MLM: MlmNames = MlmNames {
    dense: "lm_predictions.lm_head.dense",
    norm: "lm_predictions.lm_head.LayerNorm",
    decoder: "lm_predictions.lm_head.decoder",
    bias: "lm_predictions.lm_head.bias",
    act: None,
    transform: true,
};

pub(super) const DEBERTA_EMBEDDINGS: EmbeddingNames = EmbeddingNames {
    project: "embeddings.embed_proj",
    project_before_norm: true,
    ..BERT_EMBEDDINGS
};

pub(super) const DEBERTA_V2: Family = Family {
    model_type: ModelType::DebertaV2,
    names: &["deberta-v2"],
    class: "DebertaV2",
    prefix: "deberta",
    default_type_vocab_size: 0,
    positions_key: Some("position_biased_input"),
    embeddings: DEBERTA_EMBEDDINGS,
    layer: LayerTemplates {
        qkv: [
            "encoder.layer.{i}.attention.self.query_proj",
            "encoder.layer.{i}.attention.self.key_proj",
            "encoder.layer.{i}.attention.self.value_proj",
        ],
        ..BERT_LAYER
    },
    distance_bias: DistanceBias::Disentangled {
        embeddings: "encoder.rel_embeddings.weight",
        norm: "encoder.LayerNorm",
        pos_key: "encoder.layer.{i}.attention.self.pos_key_proj",
        pos_query: "encoder.layer.{i}.attention.self.pos_query_proj",
    },
    sequence_head: DEBERTA_HEAD,
    pooler_act_key: Some("pooler_hidden_act"),
    mlm: DEBERTA_MLM,
    mlm_legacy: Some(BERT_MLM),
    next_sentence: false,
    ..BERT
};

pub(super) const DEBERTA: Family = Family {
    model_type: ModelType::Deberta,
    names: &["deberta"],
    class: "Deberta",
    prefix: "deberta",
    default_type_vocab_size: 0,
    positions_key: Some("position_biased_input"),
    embeddings: DEBERTA_EMBEDDINGS,
    layer: LayerTemplates {
        interleaved_qkv: Some(InterleavedQkv {
            weight: "encoder.layer.{i}.attention.self.in_proj.weight",
            q_bias: "encoder.layer.{i}.attention.self.q_bias",
            v_bias: "encoder.layer.{i}.attention.self.v_bias",
        }),
        ..BERT_LAYER
    },
    distance_bias: DistanceBias::Disentangled {
        embeddings: "encoder.rel_embeddings.weight",
        norm: "encoder.LayerNorm",
        pos_key: "encoder.layer.{i}.attention.self.pos_proj",
        pos_query: "encoder.layer.{i}.attention.self.pos_q_proj",
    },
    unbiased: &["encoder.layer.{i}.attention.self.pos_proj"],
    sequence_head: DEBERTA_HEAD,
    pooler_act_key: Some("pooler_hidden_act"),
    mlm: DEBERTA_MLM,
    mlm_legacy: Some(BERT_MLM),
    next_sentence: false,
    ..BERT
};
