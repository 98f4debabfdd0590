//! RoFormer's entry: interleaved rotary positions.

use super::bert::BERT;
use super::{Family, ModelType, PooledHead, Positions, Rotary};
use crate::model::activation::Activation;

pub(super) const ROFORMER: Family = Family {
    model_type: ModelType::RoFormer,
    names: &["roformer"],
    class: "RoFormer",
    prefix: "roformer",
    positions: Positions::None,
    rotary: Some(Rotary {
        interleaved: true,
        theta: 10000.0,
        theta_keys: &[],
        value_key: Some("rotary_value"),
        local: None,
        dynamic: None,
    }),
    sequence_head: PooledHead {
        dense: "classifier.dense",
        act: Activation::Gelu,
        out: "classifier.out_proj",
    },
    next_sentence: false,
    ..BERT
};
