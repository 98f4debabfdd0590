//! Feature extraction: token hidden states or one pooled vector per text.

use crate::engine::{Engine, Want};
use crate::error::{Error, Result};
use crate::model::config::ModelConfig;
use crate::model::sentence::PoolingMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Pooling {
    Cls,
    /// Mean over the real (unpadded) tokens, as sentence-transformers does.
    #[default]
    Mean,
    /// Element-wise max over the real tokens.
    Max,
    /// The sum over the real tokens divided by the square root of their count.
    #[serde(rename = "mean_sqrt_len")]
    #[cfg_attr(not(target_arch = "wasm32"), value(name = "mean_sqrt_len"))]
    MeanSqrtLen,
    /// Mean weighted by position (1 for the first token, n for the last).
    #[serde(rename = "weighted_mean")]
    #[cfg_attr(not(target_arch = "wasm32"), value(name = "weighted_mean"))]
    WeightedMean,
    /// The last real token.
    #[serde(rename = "last_token")]
    #[cfg_attr(not(target_arch = "wasm32"), value(name = "last_token"))]
    LastToken,
}

impl Pooling {
    fn of(mode: PoolingMode) -> Pooling {
        match mode {
            PoolingMode::Cls => Pooling::Cls,
            PoolingMode::Mean => Pooling::Mean,
            PoolingMode::Max => Pooling::Max,
            PoolingMode::MeanSqrtLen => Pooling::MeanSqrtLen,
            PoolingMode::WeightedMean => Pooling::WeightedMean,
            PoolingMode::LastToken => Pooling::LastToken,
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct EmbedOptions {
    pub pooling: Pooling,
    pub normalize: bool,
    pub truncation: Option<usize>,
}

impl EmbedOptions {
    /// The model's own settings where it is a sentence-transformers folder (its Pooling
    /// module, a Normalize module, inputs cut at `max_seq_length` when truncating), else mean
    /// pooling without normalisation; `pooling` / `normalize` given by the caller win.
    pub fn for_model(
        cfg: &ModelConfig,
        pooling: Option<Pooling>,
        normalize: Option<bool>,
        truncation: Option<usize>,
    ) -> Result<EmbedOptions> {
        let st = cfg.sentence.clone().unwrap_or_default();
        let pooling = match (pooling, st.pooling.as_slice()) {
            (Some(p), _) => p,
            (None, []) => Pooling::Mean,
            (None, [one]) => Pooling::of(*one),
            (None, several) => {
                return Err(Error::Input(format!(
                    "the model's Pooling module concatenates several poolings ({several:?}), which webert does not; choose one with the pooling option"
                )))
            }
        };
        let truncation = match (truncation, st.max_seq_length) {
            (Some(n), Some(m)) => Some(n.min(m)),
            (t, _) => t,
        };
        Ok(EmbedOptions {
            pooling,
            normalize: normalize.unwrap_or(st.normalize),
            truncation,
        })
    }
}

/// Last hidden state of each text, `[tokens][hidden]`.
pub async fn hidden_states(
    engine: &Engine,
    inputs: &[(&str, Option<&str>)],
    truncation: Option<usize>,
) -> Result<Vec<Vec<Vec<f32>>>> {
    let windows = inputs
        .iter()
        .map(|(t, p)| engine.encode(t, *p, truncation))
        .collect::<Result<Vec<_>>>()?;
    let h = engine.config.hidden_size;
    let outs = engine.run(&windows, Want::Hidden, &[]).await?;
    Ok(outs
        .into_iter()
        .map(|o| o.hidden.chunks(h).map(<[f32]>::to_vec).collect())
        .collect())
}

/// One vector per text.
pub async fn embed(engine: &Engine, texts: &[&str], opts: EmbedOptions) -> Result<Vec<Vec<f32>>> {
    let inputs: Vec<(&str, Option<&str>)> = texts.iter().map(|t| (*t, None)).collect();
    let states = hidden_states(engine, &inputs, opts.truncation).await?;
    Ok(states
        .iter()
        .map(|tokens| {
            let mut v = pool(tokens, opts.pooling);
            if opts.normalize {
                l2_normalize(&mut v);
            }
            v
        })
        .collect())
}

pub fn pool(tokens: &[Vec<f32>], pooling: Pooling) -> Vec<f32> {
    let Some(first) = tokens.first() else {
        return Vec::new();
    };
    match pooling {
        Pooling::Cls => first.clone(),
        Pooling::Mean => {
            let mut acc = vec![0.0; first.len()];
            for t in tokens {
                acc.iter_mut().zip(t).for_each(|(a, x)| *a += x);
            }
            acc.iter().map(|a| a / tokens.len() as f32).collect()
        }
        Pooling::Max => tokens.iter().skip(1).fold(first.clone(), |mut m, t| {
            m.iter_mut().zip(t).for_each(|(a, x)| *a = a.max(*x));
            m
        }),
        Pooling::MeanSqrtLen | Pooling::WeightedMean => {
            let weighted = pooling == Pooling::WeightedMean;
            let mut acc = vec![0.0; first.len()];
            for (i, t) in tokens.iter().enumerate() {
                let w = if weighted { (i + 1) as f32 } else { 1.0 };
                acc.iter_mut().zip(t).for_each(|(a, x)| *a += w * x);
            }
            let n = tokens.len() as f32;
            let div = if weighted {
                n * (n + 1.0) / 2.0
            } else {
                n.sqrt()
            };
            acc.iter().map(|a| a / div).collect()
        }
        Pooling::LastToken => tokens[tokens.len() - 1].clone(),
    }
}

pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= norm);
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(1e-12)
}

/// Ranks `docs` by cosine similarity to `query`: `(index, score)`, best first.
pub async fn rank(
    engine: &Engine,
    query: &str,
    docs: &[&str],
    opts: EmbedOptions,
) -> Result<Vec<(usize, f32)>> {
    let mut all = vec![query];
    all.extend_from_slice(docs);
    let vecs = embed(engine, &all, opts).await?;
    let mut ranked: Vec<(usize, f32)> = vecs[1..]
        .iter()
        .enumerate()
        .map(|(i, v)| (i, cosine(&vecs[0], v)))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    Ok(ranked)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_transformers_poolings() {
        let t = vec![vec![1.0, -2.0], vec![3.0, 4.0], vec![5.0, 0.0]];
        assert_eq!(pool(&t, Pooling::Cls), [1.0, -2.0]);
        assert_eq!(pool(&t, Pooling::Mean), [3.0, 2.0 / 3.0]);
        assert_eq!(pool(&t, Pooling::Max), [5.0, 4.0]);
        let s = 3f32.sqrt();
        assert_eq!(pool(&t, Pooling::MeanSqrtLen), [9.0 / s, 2.0 / s]);
        // weights 1, 2, 3 over a sum of 6
        assert_eq!(pool(&t, Pooling::WeightedMean), [22.0 / 6.0, 6.0 / 6.0]);
        assert_eq!(pool(&t, Pooling::LastToken), [5.0, 0.0]);
        assert!(pool(&[], Pooling::LastToken).is_empty());
    }
}
