//! Zero-shot classification by embedding similarity: the text against
//! `hypothesis_template` filled with each candidate label, mean-pooled and L2-normalised.
//! Scores are `softmax(20·cos)` over labels (20 is sentence-transformers' contrastive scale),
//! or `sigmoid(20·cos)` per label when several may hold.

use super::embed::{cosine, embed, EmbedOptions, Pooling};
use super::{sigmoid, softmax, LabelScore};
use crate::engine::Engine;
use crate::error::{Error, Result};

pub const SCALE: f32 = 20.0;

#[derive(Debug, Clone)]
pub struct ZeroShotOptions {
    pub hypothesis_template: String,
    pub multi_label: bool,
}

impl Default for ZeroShotOptions {
    fn default() -> Self {
        ZeroShotOptions {
            hypothesis_template: "This example is {}.".into(),
            multi_label: false,
        }
    }
}

pub async fn zero_shot(
    engine: &Engine,
    text: &str,
    labels: &[&str],
    opts: &ZeroShotOptions,
) -> Result<Vec<LabelScore>> {
    if labels.is_empty() {
        return Err(Error::Input(
            "zero-shot classification needs at least one candidate label".into(),
        ));
    }
    if !opts.hypothesis_template.contains("{}") {
        return Err(Error::Input(
            "hypothesis_template must contain `{}` where the label goes".into(),
        ));
    }
    let hypotheses: Vec<String> = labels
        .iter()
        .map(|l| opts.hypothesis_template.replace("{}", l))
        .collect();
    let mut all = vec![text];
    all.extend(hypotheses.iter().map(String::as_str));
    let eo = EmbedOptions {
        pooling: Pooling::Mean,
        normalize: true,
        truncation: Some(usize::MAX),
    };
    let vecs = embed(engine, &all, eo).await?;
    let logits: Vec<f32> = vecs[1..]
        .iter()
        .map(|v| SCALE * cosine(&vecs[0], v))
        .collect();
    let scores = if opts.multi_label {
        logits.iter().map(|&x| sigmoid(x)).collect()
    } else {
        softmax(&logits)
    };
    let mut out: Vec<LabelScore> = labels
        .iter()
        .zip(scores)
        .map(|(l, score)| LabelScore {
            label: l.to_string(),
            score,
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(out)
}
