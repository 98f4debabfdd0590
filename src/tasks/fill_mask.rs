//! Fill-mask (`fill-mask` pipeline): the top-k tokens for each mask, with the sequence
//! they complete. Only the mask rows go through the vocabulary decoder.

use super::registry::{self, Call};
use super::softmax;
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    pub score: f32,
    pub token: u32,
    pub token_str: String,
    pub sequence: String,
}

/// How many predictions a mask gets when the caller does not say.
pub const DEFAULT_TOP_K: usize = 5;

/// One list of predictions per mask token in `text`, in text order.
pub async fn fill_mask(
    engine: &Engine,
    text: &str,
    top_k: usize,
    truncation: Option<usize>,
) -> Result<Vec<Vec<Prediction>>> {
    let want = registry::want_head(engine, Call::FillMask)?;
    let tok = &engine.tokenizer;
    let mask_id = tok
        .mask_id
        .ok_or_else(|| Error::Tokenizer("the tokenizer has no mask token".into()))?;
    let enc = engine.encode(text, None, truncation)?;
    let ids = enc.get_ids().to_vec();
    let masks: Vec<usize> = ids
        .iter()
        .enumerate()
        .filter(|(_, &id)| id == mask_id)
        .map(|(i, _)| i)
        .collect();
    if masks.is_empty() {
        return Err(Error::Input(format!(
            "no mask token in the input; write {} where a word is missing",
            tok.mask_token.as_deref().unwrap_or("[MASK]")
        )));
    }
    let out = engine
        .run(
            std::slice::from_ref(&enc),
            want,
            std::slice::from_ref(&masks),
        )
        .await?;
    let vocab = engine.config.vocab_size;
    let single = masks.len() == 1;
    let mut result = Vec::with_capacity(masks.len());
    for (m, &pos) in masks.iter().enumerate() {
        let probs = softmax(&out[0].logits[m * vocab..(m + 1) * vocab]);
        let mut order: Vec<usize> = (0..vocab).collect();
        let k = top_k.min(vocab);
        if k == 0 {
            result.push(Vec::new());
            continue;
        }
        order.select_nth_unstable_by(k - 1, |a, b| probs[*b].total_cmp(&probs[*a]));
        order.truncate(k);
        order.sort_by(|a, b| probs[*b].total_cmp(&probs[*a]));
        let row = order
            .into_iter()
            .map(|p| {
                let mut filled = ids.clone();
                filled[pos] = p as u32;
                filled.retain(|&t| t != tok.pad_id);
                Prediction {
                    score: probs[p],
                    token: p as u32,
                    token_str: tok.decode(&[p as u32], false),
                    sequence: tok.decode(&filled, single),
                }
            })
            .collect();
        result.push(row);
    }
    Ok(result)
}
