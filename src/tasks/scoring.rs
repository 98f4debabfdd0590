//! Masked-LM scoring (`text-scoring`): the pseudo-log-likelihood of a text (Salazar et al.,
//! 2020, "Masked Language Model Scoring"). Each non-special token is masked in turn and scored
//! by the log-softmax of the MLM logits at its original id; the PLL is their sum. The masked
//! copies run as batches of sequences through the engine, and only the masked row of each goes
//! through the vocabulary decoder (a picked row).
//!
//! A text longer than one window scores each token once, in a window of `max_len` tokens
//! centred on it (clamped at the text's ends): every masked copy is its own sequence anyway,
//! so each token gets as much context on both sides as the model takes, at no extra cost.

use super::registry::{self, Call};
use crate::engine::Engine;
use crate::error::{Error, Result};
use serde::Serialize;
use tokenizers::Encoding;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenScore {
    pub token: String,
    /// Natural log of the probability of this token where it is masked.
    pub log_prob: f32,
    /// Code-point offsets into the text.
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    pub pseudo_log_likelihood: f32,
    pub tokens: Vec<TokenScore>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ScoreOptions {
    /// Window length in tokens, special tokens included; the model's maximum when `None`.
    pub max_len: Option<usize>,
}

/// Masked copies sent to the engine per call: bounds the ids held at once on long texts.
const COPIES_PER_RUN: usize = 256;

/// One masked copy: its sequence, where the mask is (`at`), the id it hides, and which text
/// and scored token it is for.
struct Masked {
    ids: Vec<u32>,
    at: usize,
    orig: u32,
    text: usize,
    token: usize,
}

/// The pseudo-log-likelihood of each text, with every scored token's log-probability.
pub async fn score(engine: &Engine, texts: &[&str], opts: ScoreOptions) -> Result<Vec<Scored>> {
    let want = registry::want_head(engine, Call::Score)?;
    let tok = &engine.tokenizer;
    let mask_id = tok
        .mask_id
        .ok_or_else(|| Error::Tokenizer("the tokenizer has no mask token".into()))?;
    let max_len = opts
        .max_len
        .unwrap_or(engine.max_len())
        .min(engine.max_len());
    let mut results = Vec::with_capacity(texts.len());
    let mut copies = Vec::new();
    for (t, text) in texts.iter().enumerate() {
        let enc = tok.encode(text, None)?;
        let (scored, text_copies) = masked_copies(&enc, max_len, mask_id, t)?;
        results.push(Scored {
            pseudo_log_likelihood: 0.0,
            tokens: scored
                .iter()
                .map(|&i| TokenScore {
                    token: tok.id_to_token(enc.get_ids()[i]),
                    log_prob: 0.0,
                    start: enc.get_offsets()[i].0,
                    end: enc.get_offsets()[i].1,
                })
                .collect(),
        });
        copies.extend(text_copies);
    }
    let vocab = engine.config.vocab_size;
    let mut sums = vec![0.0f64; texts.len()];
    for chunk in copies.chunks(COPIES_PER_RUN) {
        let windows: Vec<Encoding> = chunk.iter().map(|c| sequence(&c.ids)).collect();
        let picked: Vec<Vec<usize>> = chunk.iter().map(|c| vec![c.at]).collect();
        let outs = engine.run(&windows, want, &picked).await?;
        for (c, out) in chunk.iter().zip(&outs) {
            let row = out.logits.get(..vocab).ok_or_else(|| {
                Error::Input(format!(
                    "{} logits for a vocabulary of {vocab}",
                    out.logits.len()
                ))
            })?;
            // A tokenizer may know ids past the model's vocabulary (added tokens).
            let lp = log_softmax_at(row, c.orig as usize).ok_or_else(|| {
                Error::Input(format!(
                    "token id {} is outside the vocabulary of {vocab}",
                    c.orig
                ))
            })?;
            sums[c.text] += lp;
            results[c.text].tokens[c.token].log_prob = lp as f32;
        }
    }
    for (r, s) in results.iter_mut().zip(sums) {
        r.pseudo_log_likelihood = s as f32;
    }
    Ok(results)
}

/// The positions of `enc` that are scored (its non-special tokens), and a masked copy for
/// each: the special tokens around the text, and the window of the text's tokens centred on
/// the masked one.
fn masked_copies(
    enc: &Encoding,
    max_len: usize,
    mask_id: u32,
    text: usize,
) -> Result<(Vec<usize>, Vec<Masked>)> {
    let ids = enc.get_ids();
    let special = enc.get_special_tokens_mask();
    let scored: Vec<usize> = (0..ids.len()).filter(|&i| special[i] == 0).collect();
    let (Some(&first), Some(&last)) = (scored.first(), scored.last()) else {
        return Ok((scored, Vec::new()));
    };
    let (prefix, inner, suffix) = (&ids[..first], &ids[first..=last], &ids[last + 1..]);
    let room = max_len.saturating_sub(prefix.len() + suffix.len());
    if room == 0 {
        return Err(Error::Input(format!(
            "a window of {max_len} tokens leaves no room for the text after {} special tokens",
            prefix.len() + suffix.len()
        )));
    }
    let copies = (scored.iter().enumerate())
        .map(|(token, &i)| {
            let start = window_start(i - first, inner.len(), room);
            let body = &inner[start..inner.len().min(start + room)];
            let mut seq = Vec::with_capacity(prefix.len() + body.len() + suffix.len());
            seq.extend_from_slice(prefix);
            seq.extend_from_slice(body);
            seq.extend_from_slice(suffix);
            let at = prefix.len() + (i - first - start);
            seq[at] = mask_id;
            Masked {
                ids: seq,
                at,
                orig: ids[i],
                text,
                token,
            }
        })
        .collect();
    Ok((scored, copies))
}

/// The first of `room` consecutive tokens (of `n`) that centre token `i`, clamped to the text.
fn window_start(i: usize, n: usize, room: usize) -> usize {
    if n <= room {
        return 0;
    }
    i.saturating_sub((room - 1) / 2).min(n - room)
}

/// A sequence of ids for the engine (one type, no offsets: only ids and length are read).
fn sequence(ids: &[u32]) -> Encoding {
    let n = ids.len();
    Encoding::new(
        ids.to_vec(),
        vec![0; n],
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        vec![1; n],
        Vec::new(),
        Default::default(),
    )
}

/// `log_softmax(row)[id]`, in f64; `None` when `id` is past the row.
fn log_softmax_at(row: &[f32], id: usize) -> Option<f64> {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x)) as f64;
    let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
    Some(*row.get(id)? as f64 - max - sum.ln())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_centre_each_token_within_the_text() {
        // Fits: one window from the start.
        assert_eq!(window_start(3, 5, 5), 0);
        // Room 4 in 10 tokens: one token of left context where possible (4 - 1) / 2 = 1.
        let starts: Vec<usize> = (0..10).map(|i| window_start(i, 10, 4)).collect();
        assert_eq!(starts, [0, 0, 1, 2, 3, 4, 5, 6, 6, 6]);
        for (i, &s) in starts.iter().enumerate() {
            assert!(s <= i && i < s + 4);
        }
    }

    #[test]
    fn log_softmax_matches_the_formula() {
        let row = [1.0f32, 2.0, 3.0];
        let z: f64 = row.iter().map(|&x| (x as f64).exp()).sum();
        assert!((log_softmax_at(&row, 1).unwrap() - (2.0 - z.ln())).abs() < 1e-12);
        assert_eq!(log_softmax_at(&row, 3), None);
    }
}
