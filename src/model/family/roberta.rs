//! RoBERTa's entry (CamemBERT's too) and XLM-R's: RoBERTa's under its own name and class.

use super::bert::BERT;
use super::{Family, MlmNames, ModelType, PooledHead, Positions};
use crate::model::activation::Activation;

pub(super) const ROBERTA_HEAD: PooledHead = PooledHead {
    dense: "classifier.dense",
    act: Activation::Tanh,
    out: "classifier.out_proj",
};

pub(super) const ROBERTA_MLM: MlmNames = MlmNames {
    dense: "lm_head.dense",
    norm: "lm_head.layer_norm",
    decoder: "lm_head.decoder",
    bias: "lm_head.bias",
    act: Some(Activation::Gelu),
    transform: true,
};

pub(super) const ROBERTA: Family = Family {
    model_type: ModelType::Roberta,
    names: &["roberta", "camembert"],
    class: "Roberta",
    prefix: "roberta",
    positions: Positions::AfterPadding,
    sequence_head: ROBERTA_HEAD,
    mlm: ROBERTA_MLM,
    next_sentence: false,
    ..BERT
};

pub(super) const XLM_ROBERTA: Family = Family {
    model_type: ModelType::XlmRoberta,
    names: &["xlm-roberta"],
    class: "XLMRoberta",
    ..ROBERTA
};
