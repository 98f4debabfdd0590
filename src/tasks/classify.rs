//! Sequence classification (`text-classification` pipeline): single texts and pairs.

use super::registry::{self, Call};
use super::{ranked, sigmoid, softmax, LabelScore};
use crate::engine::Engine;
use crate::error::Result;

/// HF's `function_to_apply`: `softmax`, `sigmoid` or `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum ScoreFn {
    /// Softmax, or sigmoid for multi-label checkpoints and single-logit heads (as HF); what
    /// leaving the option out means, so it has no name.
    #[default]
    #[serde(skip)]
    #[cfg_attr(not(target_arch = "wasm32"), value(skip))]
    Auto,
    Softmax,
    Sigmoid,
    None,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ClassifyOptions {
    /// Labels to return, best first; `None` returns all.
    pub top_k: Option<usize>,
    pub function: ScoreFn,
    /// Cut inputs longer than the model takes instead of failing.
    pub truncation: Option<usize>,
}

pub async fn classify(
    engine: &Engine,
    inputs: &[(&str, Option<&str>)],
    opts: ClassifyOptions,
) -> Result<Vec<Vec<LabelScore>>> {
    let want = registry::want_head(engine, Call::Classify)?;
    let mut windows = Vec::with_capacity(inputs.len());
    for (text, pair) in inputs {
        windows.push(engine.encode(text, *pair, opts.truncation)?);
    }
    let outs = engine.run(&windows, want, &[]).await?;
    let f = match opts.function {
        ScoreFn::Auto
            if engine.config.multi_label || outs.first().is_some_and(|o| o.logits.len() == 1) =>
        {
            ScoreFn::Sigmoid
        }
        ScoreFn::Auto => ScoreFn::Softmax,
        f => f,
    };
    Ok(outs
        .iter()
        .map(|o| {
            let scores = match f {
                ScoreFn::Sigmoid => o.logits.iter().map(|&x| sigmoid(x)).collect(),
                ScoreFn::None => o.logits.clone(),
                _ => softmax(&o.logits),
            };
            let mut ranked = ranked(engine.config.labels(scores.len()), scores);
            ranked.truncate(opts.top_k.unwrap_or(usize::MAX));
            ranked
        })
        .collect())
}
