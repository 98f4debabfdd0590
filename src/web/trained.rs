//! Classifier heads taught in the page (`train` in the package): fitting one on features the
//! package computed with `feature-extraction`, and `text-classification` with one, as JSON
//! requests like the other tasks'.

use super::calls::{parse, to_json};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::tasks::classify::{ClassifyOptions, ScoreFn};
use crate::tasks::head::{ClassifierHead, EncoderId};
use crate::tasks::train;
use serde::Deserialize;

/// The task name of a call that classifies with a loaded head.
pub const TASK: &str = "trained-classification";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    text: String,
    text_pair: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    /// Which of the engine's heads (`addHead`'s answer).
    head: usize,
    inputs: Vec<Input>,
    top_k: Option<usize>,
    function_to_apply: Option<ScoreFn>,
    truncation: Option<serde_json::Value>,
}

/// Fits a head on `features` (`labels.len()` rows of the model's hidden size) and returns the
/// head file's bytes.
pub fn fit(engine: &Engine, features: &[f32], labels_json: &str, c: f64) -> Result<Vec<u8>> {
    let labels: Vec<String> = serde_json::from_str(labels_json)
        .map_err(|e| Error::Input(format!("labels must be a list of strings: {e}")))?;
    let d = engine.config.hidden_size;
    if features.len() != labels.len() * d {
        return Err(Error::Input(format!(
            "{} feature values for {} examples of {d}",
            features.len(),
            labels.len()
        )));
    }
    if labels.iter().any(String::is_empty) {
        return Err(Error::Input("labels must be non-empty strings".into()));
    }
    let rows: Vec<Vec<f32>> = features.chunks(d).map(<[f32]>::to_vec).collect();
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let head = train::fit_head(&rows, &refs, c, EncoderId::of(&engine.config))?;
    head.to_safetensors()
}

/// Reads a head file and checks it against the engine's encoder: the head, and its
/// description as JSON (labels, C, encoder, examples, iterations, converged).
pub fn load(engine: &Engine, bytes: &[u8]) -> Result<(ClassifierHead, String)> {
    let head = ClassifierHead::from_safetensors(bytes)?;
    head.check_encoder(&EncoderId::of(&engine.config))?;
    let info = to_json(&head)?;
    Ok((head, info))
}

pub async fn call(
    engine: &Engine,
    heads: &[std::rc::Rc<ClassifierHead>],
    json: &str,
) -> Result<String> {
    let r: Request = parse("text-classification", json)?;
    let head = heads
        .get(r.head)
        .ok_or_else(|| Error::Input(format!("no classifier head {}", r.head)))?;
    if r.inputs.iter().any(|i| i.text_pair.is_some()) {
        return Err(Error::Input(
            "a trained classifier takes single texts, not pairs (text_pair)".into(),
        ));
    }
    let truncation = match r.truncation {
        None | Some(serde_json::Value::Bool(false)) => None,
        Some(serde_json::Value::Bool(true)) => Some(usize::MAX),
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            Error::Input(
                "text-classification options: truncation must be a boolean or a number of tokens"
                    .into(),
            )
        })? as usize),
    };
    let opts = ClassifyOptions {
        top_k: r.top_k,
        function: r.function_to_apply.unwrap_or_default(),
        truncation,
    };
    let texts: Vec<&str> = r.inputs.iter().map(|i| i.text.as_str()).collect();
    to_json(&train::classify(engine, head, &texts, opts).await?)
}
