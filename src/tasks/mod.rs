//! Tokenization-aware post-processing with the semantics of the Hugging Face pipelines.

pub mod checksums;
pub mod classify;
pub mod embed;
pub mod entity;
pub mod fill_mask;
pub mod head;
pub mod identifiers;
pub mod logistic;
pub mod ner;
pub mod next_sentence;
pub mod patterns;
pub mod qa;
pub mod redact;
pub mod registry;
pub mod scoring;
pub mod train;
pub mod zero_shot;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelScore {
    pub label: String,
    pub score: f32,
}

/// Labels paired with their scores, best first.
pub(crate) fn ranked<L: ToString>(
    labels: impl IntoIterator<Item = L>,
    scores: impl IntoIterator<Item = f32>,
) -> Vec<LabelScore> {
    let mut out: Vec<LabelScore> = (labels.into_iter().zip(scores))
        .map(|(l, score)| LabelScore {
            label: l.to_string(),
            score,
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

pub(crate) fn softmax(x: &[f32]) -> Vec<f32> {
    let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let e: Vec<f32> = x.iter().map(|v| (v - max).exp()).collect();
    let sum: f32 = e.iter().sum();
    e.iter().map(|v| v / sum).collect()
}

pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// Index of the largest value; the first one on ties, as numpy's argmax.
pub(crate) fn argmax(x: &[f32]) -> usize {
    x.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |(bi, bv), (i, &v)| {
            if v > bv {
                (i, v)
            } else {
                (bi, bv)
            }
        })
        .0
}
