//! Feature extraction: token hidden states or one pooled vector per text.

use crate::engine::{Engine, Want};
use crate::error::Result;

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
}

#[derive(Debug, Clone, Copy, Default)]
pub struct EmbedOptions {
    pub pooling: Pooling,
    pub normalize: bool,
    pub truncation: Option<usize>,
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
