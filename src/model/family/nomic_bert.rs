//! NomicBERT's entry: post-norm SwiGLU layers with rotary positions.

use super::bert::{BERT, BERT_EMBEDDINGS, BERT_LAYER, BERT_MLM};
use super::{
    BiasSwitch, ConfigKeys, DynamicKeys, EmbeddingNames, Family, FfnGate, LayerTemplates, MlmNames,
    Mlp, ModelType, Positions, Rotary,
};

/// NomicBERT's layer as the Hub's remote code and transformers 5 store it.
pub(super) const NOMIC_LAYER: LayerTemplates = LayerTemplates {
    fused_qkv: Some("encoder.layers.{i}.attn.Wqkv"),
    attn_out: "encoder.layers.{i}.attn.out_proj",
    attn_norm: "encoder.layers.{i}.norm1",
    ffn_gate: FfnGate::Module("encoder.layers.{i}.mlp.fc12"),
    ffn_in: "encoder.layers.{i}.mlp.fc11",
    ffn_out: "encoder.layers.{i}.mlp.fc2",
    ffn_norm: "encoder.layers.{i}.norm2",
    ..BERT_LAYER
};

pub(super) const NOMIC_BERT: Family = Family {
    model_type: ModelType::NomicBert,
    names: &["nomic_bert"],
    class: "NomicBert",
    prefix: "nomic_bert",
    // transformers 5's keys, else the Hub's remote-code ones (`activation_function`
    // swiglu, trained positions before the NTK-extended `n_positions`).
    keys: ConfigKeys {
        hidden: &["hidden_size", "n_embd"],
        layers: &["num_hidden_layers", "n_layer"],
        heads: &["num_attention_heads", "n_head"],
        intermediate: &["intermediate_size", "n_inner"],
        act: &["hidden_act", "activation_function"],
        default_act: "silu",
        norm_eps: &["layer_norm_eps", "layer_norm_epsilon"],
        positions: &[
            "max_position_embeddings",
            "max_trained_positions",
            "n_positions",
        ],
    },
    positions: Positions::None,
    embeddings: EmbeddingNames {
        norm: Some("emb_ln"),
        ..BERT_EMBEDDINGS
    },
    layer: NOMIC_LAYER,
    // The remote code's switches (false in the published checkpoints; transformers 5
    // has no biases there and no such keys).
    bias_switches: &[
        BiasSwitch {
            key: "qkv_proj_bias",
            default: false,
            modules: &[
                "encoder.layers.{i}.attn.Wqkv",
                "encoder.layers.{i}.attn.out_proj",
            ],
        },
        BiasSwitch {
            key: "mlp_fc1_bias",
            default: false,
            modules: &["encoder.layers.{i}.mlp.fc11", "encoder.layers.{i}.mlp.fc12"],
        },
        BiasSwitch {
            key: "mlp_fc2_bias",
            default: false,
            modules: &["encoder.layers.{i}.mlp.fc2"],
        },
    ],
    // xPos (`rotary_emb_scale_base`), RMSNorm and parallel blocks are not built.
    unbuilt_flags: &[
        "prenorm",
        "causal",
        "rotary_emb_interleaved",
        "rotary_emb_scale_base",
        "use_rms_norm",
        "parallel_block",
        "scale_attn_by_inverse_layer_idx",
    ],
    mlp: Mlp::GatedHiddenAct,
    rotary: Some(Rotary {
        interleaved: false,
        theta: 1000.0,
        theta_keys: &["rope_theta", "rotary_emb_base"],
        value_key: None,
        local: None,
        dynamic: Some(DynamicKeys {
            factor: "rotary_scaling_factor",
            trained: "max_trained_positions",
            extended: "n_positions",
        }),
    }),
    mlm: MlmNames {
        norm: "cls.predictions.transform.layer_norm",
        ..BERT_MLM
    },
    next_sentence: false,
    ..BERT
};
