//! BERT's entry: the defaults every other entry starts from.

use super::{
    ConfigKeys, DistanceBias, EmbeddingNames, Family, FfnGate, LayerTemplates, MlmNames, Mlp,
    ModelType, NormKind, NormPlacement, PooledHead, Positions,
};
use crate::model::activation::Activation;

pub(super) const BERT_KEYS: ConfigKeys = ConfigKeys {
    hidden: &["hidden_size"],
    layers: &["num_hidden_layers"],
    heads: &["num_attention_heads"],
    intermediate: &["intermediate_size"],
    act: &["hidden_act"],
    default_act: "gelu",
    norm_eps: &["layer_norm_eps"],
    positions: &["max_position_embeddings"],
};

pub(super) const BERT_EMBEDDINGS: EmbeddingNames = EmbeddingNames {
    word: "embeddings.word_embeddings",
    position: "embeddings.position_embeddings",
    token_type: "embeddings.token_type_embeddings",
    norm: Some("embeddings.LayerNorm"),
    project: "embeddings_project",
    project_before_norm: false,
};

pub(super) const BERT_LAYER: LayerTemplates = LayerTemplates {
    qkv: [
        "encoder.layer.{i}.attention.self.query",
        "encoder.layer.{i}.attention.self.key",
        "encoder.layer.{i}.attention.self.value",
    ],
    fused_qkv: None,
    interleaved_qkv: None,
    attn_out: "encoder.layer.{i}.attention.output.dense",
    attn_norm: "encoder.layer.{i}.attention.output.LayerNorm",
    ffn_gate: FfnGate::First,
    ffn_in: "encoder.layer.{i}.intermediate.dense",
    ffn_out: "encoder.layer.{i}.output.dense",
    ffn_norm: "encoder.layer.{i}.output.LayerNorm",
};

pub(super) const BERT_MLM: MlmNames = MlmNames {
    dense: "cls.predictions.transform.dense",
    norm: "cls.predictions.transform.LayerNorm",
    decoder: "cls.predictions.decoder",
    bias: "cls.predictions.bias",
    act: None,
    transform: true,
};

pub(super) const BERT: Family = Family {
    model_type: ModelType::Bert,
    names: &["bert"],
    selected_by: None,
    class: "Bert",
    prefix: "bert",
    keys: BERT_KEYS,
    token_types: true,
    default_type_vocab_size: 2,
    positions: Positions::FromZero,
    positions_key: None,
    ignored_position_types: &[],
    default_norm_eps: 1e-12,
    norm_kind: NormKind::Layer,
    norms: NormPlacement::Post,
    embeddings: BERT_EMBEDDINGS,
    layer: BERT_LAYER,
    unbiased: &[],
    bias_switches: &[],
    unbuilt_flags: &[],
    other_prefixes: &[],
    mlp: Mlp::Plain,
    distance_bias: DistanceBias::None,
    rotary: None,
    sequence_head: PooledHead {
        dense: "pooler.dense",
        act: Activation::Tanh,
        out: "classifier",
    },
    sequence_head_legacy: None,
    pooling: None,
    head_transform: None,
    pooler_act_key: None,
    mlm: BERT_MLM,
    mlm_legacy: None,
    next_sentence: true,
    encoder_only: false,
};
