//! Zero-shot classification, two ways:
//! - **NLI** (a sequence classifier whose `id2label` has an `entail…` label, e.g. an MNLI
//!   checkpoint), as Hugging Face's `ZeroShotClassificationPipeline`: each (text, hypothesis)
//!   pair is classified; one label: softmax of the entailment logits across the candidate
//!   labels; `multi_label` (or a single candidate): per label, softmax over [contradiction,
//!   entailment]. Every pair of every text goes through the engine in one batched run.
//! - **Similarity** (any other encoder): the text against `hypothesis_template` filled with each
//!   label, mean-pooled and L2-normalised; `softmax(20·cos)` over labels (20 is
//!   sentence-transformers' contrastive scale), or `sigmoid(20·cos)` per label when several may
//!   hold. These are relative similarities, not probabilities.

use super::embed::{cosine, embed, EmbedOptions, Pooling};
use super::{ranked, sigmoid, softmax, LabelScore};
use crate::engine::{Engine, Want};
use crate::error::{Error, Result};
use crate::model::Architecture;
use serde::Serialize;

pub const SCALE: f32 = 20.0;

#[derive(Debug, Clone)]
pub struct ZeroShotOptions {
    pub hypothesis_template: String,
    pub multi_label: bool,
    /// As for the other tasks: `None` refuses a text longer than the model takes, a length cuts
    /// the text (never the hypothesis) there.
    pub truncation: Option<usize>,
}

impl Default for ZeroShotOptions {
    fn default() -> Self {
        ZeroShotOptions {
            hypothesis_template: "This example is {}.".into(),
            multi_label: false,
            truncation: None,
        }
    }
}

/// How a model does zero-shot classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Entailment scores of a natural-language-inference classifier.
    Nli,
    /// Sentence-embedding similarity of the text and each hypothesis.
    Similarity,
}

/// NLI for a sequence classifier with an entailment label, similarity for anything else.
pub fn method(engine: &Engine) -> Method {
    if engine.architecture() == Architecture::SequenceClassification
        && entailment_id(&engine.config.id2label).is_some()
    {
        Method::Nli
    } else {
        Method::Similarity
    }
}

/// The first label that starts with "entail" (any case), as the HF pipeline finds it.
fn entailment_id(labels: &[String]) -> Option<usize> {
    labels
        .iter()
        .position(|l| l.to_lowercase().starts_with("entail"))
}

pub async fn zero_shot(
    engine: &Engine,
    text: &str,
    labels: &[&str],
    opts: &ZeroShotOptions,
) -> Result<Vec<LabelScore>> {
    Ok(zero_shot_many(engine, &[text], labels, opts)
        .await?
        .remove(0))
}

/// Each text's labels, best first.
pub async fn zero_shot_many(
    engine: &Engine,
    texts: &[&str],
    labels: &[&str],
    opts: &ZeroShotOptions,
) -> Result<Vec<Vec<LabelScore>>> {
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
    let scores = match method(engine) {
        Method::Nli => nli(engine, texts, &hypotheses, opts).await?,
        Method::Similarity => {
            let mut out = Vec::with_capacity(texts.len());
            for t in texts {
                out.push(similarity(engine, t, &hypotheses, opts).await?);
            }
            out
        }
    };
    Ok(scores.into_iter().map(|s| ranked(labels, s)).collect())
}

async fn nli(
    engine: &Engine,
    texts: &[&str],
    hypotheses: &[String],
    opts: &ZeroShotOptions,
) -> Result<Vec<Vec<f32>>> {
    let multi_label = opts.multi_label;
    let n_labels = engine.config.id2label.len();
    let entail = entailment_id(&engine.config.id2label).expect("checked by method()");
    let contradiction = if entail == 0 { n_labels - 1 } else { 0 };
    let mut windows = Vec::with_capacity(texts.len() * hypotheses.len());
    for t in texts {
        for h in hypotheses {
            // As HF's pipeline (`truncation="only_first"`): only the premise is cut.
            let enc = match opts.truncation {
                Some(n) => (engine.tokenizer).encode_only_first(t, h, n.min(engine.max_len()))?,
                None => engine.encode(t, Some(h), None)?,
            };
            windows.push(enc);
        }
    }
    let outs = engine.run(&windows, Want::Logits, &[]).await?;
    if outs
        .first()
        .is_some_and(|o| o.logits.len() <= entail.max(contradiction))
    {
        return Err(Error::Input(format!(
            "the NLI head has {} logits but id2label names {n_labels} labels",
            outs[0].logits.len()
        )));
    }
    let per_label = multi_label || hypotheses.len() == 1;
    Ok(outs
        .chunks(hypotheses.len())
        .map(|pairs| {
            if per_label {
                (pairs.iter())
                    .map(|o| softmax(&[o.logits[contradiction], o.logits[entail]])[1])
                    .collect()
            } else {
                softmax(&pairs.iter().map(|o| o.logits[entail]).collect::<Vec<_>>())
            }
        })
        .collect())
}

async fn similarity(
    engine: &Engine,
    text: &str,
    hypotheses: &[String],
    opts: &ZeroShotOptions,
) -> Result<Vec<f32>> {
    let multi_label = opts.multi_label;
    let mut all = vec![text];
    all.extend(hypotheses.iter().map(String::as_str));
    let eo = EmbedOptions {
        pooling: Pooling::Mean,
        normalize: true,
        truncation: opts.truncation,
    };
    let vecs = embed(engine, &all, eo).await?;
    let logits: Vec<f32> = vecs[1..]
        .iter()
        .map(|v| SCALE * cosine(&vecs[0], v))
        .collect();
    Ok(if multi_label {
        logits.iter().map(|&x| sigmoid(x)).collect()
    } else {
        softmax(&logits)
    })
}
