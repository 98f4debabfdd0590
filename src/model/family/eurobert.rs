//! EuroBERT's entry: Llama's layer attending both ways.

use super::bert::{BERT, BERT_EMBEDDINGS, BERT_KEYS, BERT_LAYER};
use super::{
    BiasSwitch, ConfigKeys, EmbeddingNames, Family, FfnGate, HeadPooling, LayerTemplates, MlmNames,
    Mlp, ModelType, NormKind, NormPlacement, PooledHead, PoolingKey, Positions, Rotary,
};
use crate::model::activation::Activation;

pub(super) const EUROBERT: Family = Family {
    model_type: ModelType::EuroBert,
    names: &["eurobert"],
    class: "EuroBert",
    prefix: "model",
    keys: ConfigKeys {
        default_act: "silu",
        norm_eps: &["rms_norm_eps"],
        ..BERT_KEYS
    },
    token_types: false,
    default_type_vocab_size: 0,
    positions: Positions::None,
    default_norm_eps: 1e-5,
    norm_kind: NormKind::Rms,
    norms: NormPlacement::Pre {
        final_norm: "norm",
        first_attn_norm: true,
    },
    embeddings: EmbeddingNames {
        word: "embed_tokens",
        norm: None,
        ..BERT_EMBEDDINGS
    },
    layer: LayerTemplates {
        qkv: [
            "layers.{i}.self_attn.q_proj",
            "layers.{i}.self_attn.k_proj",
            "layers.{i}.self_attn.v_proj",
        ],
        attn_out: "layers.{i}.self_attn.o_proj",
        attn_norm: "layers.{i}.input_layernorm",
        ffn_gate: FfnGate::Module("layers.{i}.mlp.gate_proj"),
        ffn_in: "layers.{i}.mlp.up_proj",
        ffn_out: "layers.{i}.mlp.down_proj",
        ffn_norm: "layers.{i}.post_attention_layernorm",
        ..BERT_LAYER
    },
    bias_switches: &[
        BiasSwitch {
            key: "attention_bias",
            default: false,
            modules: &[
                "layers.{i}.self_attn.q_proj",
                "layers.{i}.self_attn.k_proj",
                "layers.{i}.self_attn.v_proj",
                "layers.{i}.self_attn.o_proj",
            ],
        },
        // `EuroBertForMaskedLM` gives its `lm_head` a bias by `mlp_bias` too.
        BiasSwitch {
            key: "mlp_bias",
            default: false,
            modules: &[
                "layers.{i}.mlp.gate_proj",
                "layers.{i}.mlp.up_proj",
                "layers.{i}.mlp.down_proj",
                "lm_head",
            ],
        },
    ],
    mlp: Mlp::GatedHiddenAct,
    rotary: Some(Rotary {
        interleaved: false,
        theta: 250_000.0,
        theta_keys: &["rope_theta"],
        value_key: None,
        local: None,
        dynamic: None,
    }),
    sequence_head: PooledHead {
        dense: "dense",
        act: Activation::Gelu,
        out: "classifier",
    },
    // The Hub's remote code.
    sequence_head_legacy: Some(PooledHead {
        dense: "dense",
        act: Activation::Gelu,
        out: "out_proj",
    }),
    // transformers 5's key, else the Hub's remote code's.
    pooling: Some(PoolingKey {
        keys: &["classifier_pooling", "clf_pooling"],
        values: &[
            ("bos", HeadPooling::First),
            ("mean", HeadPooling::Mean),
            ("late", HeadPooling::Late),
        ],
        default: HeadPooling::Late,
    }),
    mlm: MlmNames {
        dense: "",
        norm: "",
        decoder: "lm_head",
        bias: "lm_head.bias",
        act: None,
        transform: false,
    },
    next_sentence: false,
    ..BERT
};
