//! ELECTRA's entry.

use super::bert::BERT;
use super::{Family, MlmNames, ModelType, PooledHead};
use crate::model::activation::Activation;

pub(super) const ELECTRA: Family = Family {
    model_type: ModelType::Electra,
    names: &["electra"],
    class: "Electra",
    prefix: "electra",
    sequence_head: PooledHead {
        dense: "classifier.dense",
        act: Activation::Gelu,
        out: "classifier.out_proj",
    },
    mlm: MlmNames {
        dense: "generator_predictions.dense",
        norm: "generator_predictions.LayerNorm",
        decoder: "generator_lm_head",
        bias: "generator_lm_head.bias",
        act: Some(Activation::Gelu),
        transform: true,
    },
    next_sentence: false,
    ..BERT
};
