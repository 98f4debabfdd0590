//! ModernBERT's entry: pre-norm layers, fused Q/K/V, rotary with sliding-window layers.

use super::bert::{BERT, BERT_EMBEDDINGS, BERT_KEYS, BERT_LAYER};
use super::{
    BiasSwitch, ConfigKeys, EmbeddingNames, Family, HeadPooling, HeadTransform, LayerTemplates,
    LocalAttention, MlmNames, Mlp, ModelType, NormPlacement, PooledHead, PoolingKey, Positions,
    Rotary,
};
use crate::model::activation::Activation;

pub(super) const MODERNBERT: Family = Family {
    model_type: ModelType::ModernBert,
    ignored_position_types: &["absolute"],
    names: &["modernbert"],
    class: "ModernBert",
    prefix: "model",
    keys: ConfigKeys {
        act: &["hidden_activation"],
        norm_eps: &["norm_eps"],
        ..BERT_KEYS
    },
    token_types: false,
    default_type_vocab_size: 0,
    positions: Positions::None,
    default_norm_eps: 1e-5,
    norms: NormPlacement::Pre {
        final_norm: "final_norm",
        first_attn_norm: false,
    },
    embeddings: EmbeddingNames {
        word: "embeddings.tok_embeddings",
        norm: Some("embeddings.norm"),
        ..BERT_EMBEDDINGS
    },
    layer: LayerTemplates {
        fused_qkv: Some("layers.{i}.attn.Wqkv"),
        attn_out: "layers.{i}.attn.Wo",
        attn_norm: "layers.{i}.attn_norm",
        ffn_in: "layers.{i}.mlp.Wi",
        ffn_out: "layers.{i}.mlp.Wo",
        ffn_norm: "layers.{i}.mlp_norm",
        ..BERT_LAYER
    },
    bias_switches: &[
        BiasSwitch {
            key: "attention_bias",
            default: false,
            modules: &["layers.{i}.attn.Wqkv", "layers.{i}.attn.Wo"],
        },
        BiasSwitch {
            key: "mlp_bias",
            default: false,
            modules: &["layers.{i}.mlp.Wi", "layers.{i}.mlp.Wo"],
        },
        BiasSwitch {
            key: "norm_bias",
            default: false,
            modules: &[
                "embeddings.norm",
                "layers.{i}.attn_norm",
                "layers.{i}.mlp_norm",
                "final_norm",
                "head.norm",
            ],
        },
        BiasSwitch {
            key: "classifier_bias",
            default: false,
            modules: &["head.dense"],
        },
        BiasSwitch {
            key: "decoder_bias",
            default: true,
            modules: &["decoder"],
        },
    ],
    mlp: Mlp::GatedHiddenAct,
    rotary: Some(Rotary {
        interleaved: false,
        theta: 160_000.0,
        theta_keys: &["global_rope_theta", "rope_theta"],
        value_key: None,
        local: Some(LocalAttention {
            window_key: "local_attention",
            default_window: 128,
            every_key: "global_attn_every_n_layers",
            default_every: 3,
            theta_key: "local_rope_theta",
            theta: 10_000.0,
        }),
        dynamic: None,
    }),
    sequence_head: PooledHead {
        dense: "head.dense",
        act: Activation::Gelu,
        out: "classifier",
    },
    pooling: Some(PoolingKey {
        keys: &["classifier_pooling"],
        values: &[("cls", HeadPooling::First), ("mean", HeadPooling::Mean)],
        default: HeadPooling::First,
    }),
    head_transform: Some(HeadTransform {
        dense: "head.dense",
        norm: "head.norm",
        out: "classifier",
    }),
    pooler_act_key: Some("classifier_activation"),
    mlm: MlmNames {
        dense: "head.dense",
        norm: "head.norm",
        decoder: "decoder",
        bias: "decoder.bias",
        act: None,
        transform: true,
    },
    next_sentence: false,
    ..BERT
};
