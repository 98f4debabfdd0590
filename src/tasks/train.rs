//! Teaching a classifier from examples: the examples' sentence embeddings (mean-pooled,
//! L2-normalised: `feature-extraction` with `pooling: mean, normalize: true`) fitted by
//! [`logistic`](super::logistic), and classification with the resulting head.

use super::classify::ClassifyOptions;
use super::embed::{self, EmbedOptions, Pooling};
use super::head::{ClassifierHead, EncoderId};
use super::{logistic, LabelScore};
use crate::engine::Engine;
use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    pub text: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy)]
pub struct TrainOptions {
    /// sklearn's `C`: inverse regularisation strength (default 1).
    pub c: f64,
    /// Cut examples longer than the model takes (default: at the model's limit).
    pub truncation: Option<usize>,
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            c: 1.0,
            truncation: Some(usize::MAX),
        }
    }
}

/// The features a head works on.
pub async fn features(
    engine: &Engine,
    texts: &[&str],
    truncation: Option<usize>,
) -> Result<Vec<Vec<f32>>> {
    let opts = EmbedOptions {
        pooling: Pooling::Mean,
        normalize: true,
        truncation,
    };
    embed::embed(engine, texts, opts).await
}

/// Embeds the examples and fits a head on them.
pub async fn train(
    engine: &Engine,
    examples: &[Example],
    opts: TrainOptions,
) -> Result<ClassifierHead> {
    check_examples(examples)?;
    let texts: Vec<&str> = examples.iter().map(|e| e.text.as_str()).collect();
    let x = features(engine, &texts, opts.truncation).await?;
    let labels: Vec<&str> = examples.iter().map(|e| e.label.as_str()).collect();
    fit_head(&x, &labels, opts.c, EncoderId::of(&engine.config))
}

fn check_examples(examples: &[Example]) -> Result<()> {
    if examples.is_empty() {
        return Err(Error::Input("no training examples".into()));
    }
    if let Some(i) = examples.iter().position(|e| e.label.is_empty()) {
        return Err(Error::Input(format!(
            "example {} has an empty label",
            i + 1
        )));
    }
    Ok(())
}

/// Fits a head on features already computed (one row per example). Labels are ordered as
/// sorted strings, as sklearn's `classes_`.
pub fn fit_head(
    features: &[Vec<f32>],
    labels: &[&str],
    c: f64,
    encoder: EncoderId,
) -> Result<ClassifierHead> {
    if features.len() != labels.len() {
        return Err(Error::Input(format!(
            "{} feature rows for {} labels",
            features.len(),
            labels.len()
        )));
    }
    let d = encoder.hidden_size;
    if let Some(row) = features.iter().position(|f| f.len() != d) {
        return Err(Error::Input(format!(
            "feature row {row} has {} values; the encoder's hidden size is {d}",
            features[row].len()
        )));
    }
    let mut classes: Vec<&str> = labels.to_vec();
    classes.sort_unstable();
    classes.dedup();
    if classes.len() < 2 {
        return Err(Error::Input(format!(
            "training needs examples of at least two labels; got only {}",
            classes.first().map_or("none".into(), |l| format!("`{l}`"))
        )));
    }
    let y: Vec<usize> = (labels.iter())
        .map(|l| classes.binary_search(l).unwrap_or(0))
        .collect();
    let x: Vec<f64> = features.iter().flatten().map(|&v| v as f64).collect();
    let fit = logistic::fit(&x, d, &y, classes.len(), c)?;
    let classes = classes.into_iter().map(String::from).collect();
    Ok(ClassifierHead::from_fit(
        &fit,
        classes,
        c,
        encoder,
        labels.len(),
    ))
}

/// Classifies texts with a trained head on this engine's encoder.
pub async fn classify(
    engine: &Engine,
    head: &ClassifierHead,
    texts: &[&str],
    opts: ClassifyOptions,
) -> Result<Vec<Vec<LabelScore>>> {
    head.check_encoder(&EncoderId::of(&engine.config))?;
    let x = features(engine, texts, opts.truncation).await?;
    Ok(x.iter()
        .map(|v| head.scores(v, opts.function, opts.top_k))
        .collect())
}
