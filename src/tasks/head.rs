//! A classification head trained on sentence embeddings (see `train`): scikit-learn's
//! `coef_` / `intercept_` layout, the labels, and the encoder it was trained on, kept as a
//! small safetensors file.
//!
//! File: tensors `weight` `[rows, hidden]` and `bias` `[rows]` (f32; f64 is read too), where
//! `rows` is 1 for two labels (the second label's logit against the first, as sklearn) and
//! the label count otherwise; metadata `format` = `webert-classifier-head`, `labels` (JSON
//! array, sorted), `C`, `model_type`, `hidden_size`, `config_hash`, `pooling` = `mean`,
//! `normalize` = `true`, and what training recorded (`examples`, `iterations`, `converged`).

use super::classify::ScoreFn;
use super::logistic::Fit;
use super::{ranked, sigmoid, softmax, LabelScore};
use crate::error::{Error, Result};
use crate::model::ModelConfig;
use safetensors::{Dtype, SafeTensors};
use std::collections::HashMap;

const FORMAT: &str = "webert-classifier-head";

/// What a head must be used with: the encoder that made its features.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EncoderId {
    pub model_type: String,
    pub hidden_size: usize,
    /// FNV-1a (64 bits, hex) of the encoder's settings in the config: not the task head's
    /// labels, so a checkpoint's fine-tuned and bare forms, or its ONNX exports, match.
    pub config_hash: String,
}

impl EncoderId {
    pub fn of(c: &ModelConfig) -> EncoderId {
        let canonical = format!(
            "{}|vocab={}|hidden={}|embedding={}|layers={}|heads={}|intermediate={}|act={:?}|\
             positions={}|offset={}|types={}|eps={:e}",
            c.model_type.name(),
            c.vocab_size,
            c.hidden_size,
            c.embedding_size,
            c.num_layers,
            c.num_heads,
            c.intermediate_size,
            c.hidden_act,
            c.max_position_embeddings,
            c.position_offset,
            c.type_vocab_size,
            c.layer_norm_eps,
        );
        let hash = canonical.bytes().fold(0xcbf29ce484222325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100000001b3)
        });
        EncoderId {
            model_type: c.model_type.name().to_string(),
            hidden_size: c.hidden_size,
            config_hash: format!("{hash:016x}"),
        }
    }
}

impl std::fmt::Display for EncoderId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} encoder of hidden size {} (config hash {})",
            self.model_type, self.hidden_size, self.config_hash
        )
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClassifierHead {
    /// Sorted; index `i` is class `i`.
    pub labels: Vec<String>,
    /// `[rows, hidden]` row-major.
    #[serde(skip)]
    pub weight: Vec<f32>,
    #[serde(skip)]
    pub bias: Vec<f32>,
    #[serde(rename = "C")]
    pub c: f64,
    pub encoder: EncoderId,
    pub examples: usize,
    pub iterations: usize,
    pub converged: bool,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::Safetensors {
        file: "classifier head".into(),
        msg: msg.into(),
    }
}

impl ClassifierHead {
    pub fn from_fit(
        fit: &Fit,
        labels: Vec<String>,
        c: f64,
        encoder: EncoderId,
        examples: usize,
    ) -> Self {
        ClassifierHead {
            labels,
            weight: fit.coef.iter().map(|&v| v as f32).collect(),
            bias: fit.intercept.iter().map(|&v| v as f32).collect(),
            c,
            encoder,
            examples,
            iterations: fit.iterations,
            converged: fit.converged,
        }
    }

    pub fn hidden_size(&self) -> usize {
        self.encoder.hidden_size
    }

    fn rows(&self) -> usize {
        self.bias.len()
    }

    /// One logit per label for a feature vector (two labels: `[0, w·x + b]`, whose softmax
    /// is sklearn's `[1 − σ, σ]`).
    pub fn logits(&self, x: &[f32]) -> Vec<f64> {
        let h = self.hidden_size();
        let z = (self.weight.chunks_exact(h).zip(&self.bias)).map(|(w, &b)| {
            w.iter()
                .zip(x)
                .map(|(&w, &x)| w as f64 * x as f64)
                .sum::<f64>()
                + b as f64
        });
        if self.rows() == 1 {
            std::iter::once(0.0).chain(z).collect()
        } else {
            z.collect()
        }
    }

    /// Labels with scores, best first, as text classification returns them.
    pub fn scores(&self, x: &[f32], function: ScoreFn, top_k: Option<usize>) -> Vec<LabelScore> {
        let logits: Vec<f32> = self.logits(x).iter().map(|&v| v as f32).collect();
        let scores = match function {
            ScoreFn::Sigmoid => logits.iter().map(|&v| sigmoid(v)).collect(),
            ScoreFn::None => logits,
            ScoreFn::Auto | ScoreFn::Softmax => softmax(&logits),
        };
        let mut ranked = ranked(&self.labels, scores);
        ranked.truncate(top_k.unwrap_or(usize::MAX));
        ranked
    }

    /// An error unless the head was trained on features of this encoder.
    pub fn check_encoder(&self, model: &EncoderId) -> Result<()> {
        if &self.encoder != model {
            return Err(Error::WrongEncoder {
                head: self.encoder.to_string(),
                model: model.to_string(),
            });
        }
        Ok(())
    }

    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let h = self.hidden_size();
        let w: Vec<u8> = self.weight.iter().flat_map(|v| v.to_le_bytes()).collect();
        let b: Vec<u8> = self.bias.iter().flat_map(|v| v.to_le_bytes()).collect();
        fn view(shape: Vec<usize>, data: &[u8]) -> Result<safetensors::tensor::TensorView<'_>> {
            safetensors::tensor::TensorView::new(Dtype::F32, shape, data)
                .map_err(|e| bad(e.to_string()))
        }
        let views = vec![
            ("bias", view(vec![self.rows()], &b)?),
            ("weight", view(vec![self.rows(), h], &w)?),
        ];
        let labels = serde_json::to_string(&self.labels).map_err(|e| bad(e.to_string()))?;
        let meta: HashMap<String, String> = [
            ("format", FORMAT.to_string()),
            ("labels", labels),
            ("C", format!("{:?}", self.c)),
            ("model_type", self.encoder.model_type.clone()),
            ("hidden_size", h.to_string()),
            ("config_hash", self.encoder.config_hash.clone()),
            ("pooling", "mean".into()),
            ("normalize", "true".into()),
            ("examples", self.examples.to_string()),
            ("iterations", self.iterations.to_string()),
            ("converged", self.converged.to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        safetensors::serialize(views, Some(meta)).map_err(|e| bad(e.to_string()))
    }

    /// Reads a head file; anything malformed is an error, never a panic.
    pub fn from_safetensors(bytes: &[u8]) -> Result<Self> {
        let st = SafeTensors::deserialize(bytes).map_err(|e| bad(e.to_string()))?;
        let (_, header) = SafeTensors::read_metadata(bytes).map_err(|e| bad(e.to_string()))?;
        let meta = header.metadata().clone().unwrap_or_default();
        let get = |k: &str| {
            meta.get(k).map(String::as_str).ok_or_else(|| {
                bad(format!(
                    "no `{k}` in the metadata: not a webert classifier head"
                ))
            })
        };
        if get("format")? != FORMAT {
            return Err(bad(format!("format is `{}`, not {FORMAT}", get("format")?)));
        }
        let labels: Vec<String> =
            serde_json::from_str(get("labels")?).map_err(|e| bad(format!("labels: {e}")))?;
        let mut sorted = labels.clone();
        sorted.sort();
        sorted.dedup();
        if labels.len() < 2 || sorted != labels {
            return Err(bad("labels must be two or more distinct strings, sorted"));
        }
        let number = |k: &str| -> Result<f64> {
            get(k)?
                .parse::<f64>()
                .map_err(|_| bad(format!("`{k}` is not a number")))
        };
        let c = number("C")?;
        let hidden = number("hidden_size")?;
        if !((1.0..=1e6).contains(&hidden) && hidden.fract() == 0.0) {
            return Err(bad("hidden_size must be a positive integer"));
        }
        let hidden = hidden as usize;
        let rows = if labels.len() == 2 { 1 } else { labels.len() };
        let weight = tensor(&st, "weight", &[rows, hidden])?;
        let bias = tensor(&st, "bias", &[rows])?;
        let count = |k: &str| meta.get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
        Ok(ClassifierHead {
            labels,
            weight,
            bias,
            c,
            encoder: EncoderId {
                model_type: get("model_type")?.to_string(),
                hidden_size: hidden,
                config_hash: get("config_hash")?.to_string(),
            },
            examples: count("examples"),
            iterations: count("iterations"),
            converged: meta.get("converged").is_none_or(|v| v == "true"),
        })
    }
}

/// A finite f32 (or f64) tensor of exactly `shape`.
fn tensor(st: &SafeTensors, name: &str, shape: &[usize]) -> Result<Vec<f32>> {
    let view = st
        .tensor(name)
        .map_err(|_| bad(format!("no `{name}` tensor")))?;
    if view.shape() != shape {
        return Err(bad(format!(
            "`{name}` has shape {:?}; the labels and hidden size need {shape:?}",
            view.shape()
        )));
    }
    let raw = view.data();
    let data: Vec<f32> = match view.dtype() {
        Dtype::F32 => (raw.chunks_exact(4))
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F64 => (raw.chunks_exact(8))
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32)
            .collect(),
        other => return Err(bad(format!("`{name}` is {other:?}; expected F32 or F64"))),
    };
    if data.len() != shape.iter().product::<usize>() || data.iter().any(|v| !v.is_finite()) {
        return Err(bad(format!("`{name}` must hold {shape:?} finite values")));
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(labels: &[&str], rows: usize) -> ClassifierHead {
        ClassifierHead {
            labels: labels.iter().map(|s| s.to_string()).collect(),
            weight: (0..rows * 3).map(|i| i as f32 * 0.25 - 1.0).collect(),
            bias: (0..rows).map(|i| i as f32 * 0.5).collect(),
            c: 2.5,
            encoder: EncoderId {
                model_type: "bert".into(),
                hidden_size: 3,
                config_hash: "0123456789abcdef".into(),
            },
            examples: 12,
            iterations: 40,
            converged: true,
        }
    }

    #[test]
    fn a_head_file_round_trips() {
        for h in [head(&["a", "b", "c"], 3), head(&["neg", "pos"], 1)] {
            let bytes = h.to_safetensors().unwrap();
            assert_eq!(ClassifierHead::from_safetensors(&bytes).unwrap(), h);
        }
    }

    #[test]
    fn two_labels_score_as_sklearn_binary() {
        let h = head(&["neg", "pos"], 1);
        let x = [0.3f32, -0.2, 0.9];
        let z: f64 = -0.3 + 0.75 * 0.2 - 0.5 * 0.9; // w = [-1, -0.75, -0.5], b = 0
        let p = 1.0 / (1.0 + (-z).exp());
        let s = h.scores(&x, ScoreFn::Auto, None);
        let pos = s.iter().find(|l| l.label == "pos").unwrap().score;
        assert!((pos as f64 - p).abs() < 1e-6, "{pos} vs {p}");
        assert_eq!(h.scores(&x, ScoreFn::Auto, Some(1)).len(), 1);
    }

    #[test]
    fn malformed_bytes_are_errors_not_panics() {
        let good = head(&["a", "b", "c"], 3).to_safetensors().unwrap();
        assert!(ClassifierHead::from_safetensors(&[]).is_err());
        assert!(ClassifierHead::from_safetensors(b"not a safetensors file at all").is_err());
        for cut in 0..good.len() {
            assert!(ClassifierHead::from_safetensors(&good[..cut]).is_err());
        }
        // Every single-byte corruption either fails cleanly or still reads as a head.
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x5a;
            let _ = ClassifierHead::from_safetensors(&b);
        }
        let mut other = head(&["a", "b", "c"], 3);
        other.labels = vec!["b".into(), "a".into(), "c".into()];
        let unsorted = other.to_safetensors().unwrap();
        assert!(ClassifierHead::from_safetensors(&unsorted).is_err());
    }

    /// Writes head files as seeds of the `head` fuzz target into `$WEBERT_FUZZ_SEEDS`
    /// (scripts/fuzz.sh runs this).
    #[test]
    #[ignore]
    fn write_fuzz_seeds() {
        let Ok(dir) = std::env::var("WEBERT_FUZZ_SEEDS") else {
            return;
        };
        std::fs::create_dir_all(&dir).unwrap();
        let heads = [head(&["a", "b", "c"], 3), head(&["neg", "pos"], 1)];
        for (i, h) in heads.iter().enumerate() {
            std::fs::write(format!("{dir}/head-{i}"), h.to_safetensors().unwrap()).unwrap();
        }
    }

    #[test]
    fn a_head_refuses_another_encoder() {
        let h = head(&["a", "b", "c"], 3);
        let mut other = h.encoder.clone();
        assert!(h.check_encoder(&other).is_ok());
        other.config_hash = "fedcba9876543210".into();
        let e = h.check_encoder(&other).unwrap_err().to_string();
        assert!(
            e.contains("0123456789abcdef") && e.contains("fedcba9876543210"),
            "{e}"
        );
    }
}
