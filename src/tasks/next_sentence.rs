//! Next-sentence prediction (BERT's second pre-training objective): does sentence B follow
//! sentence A? A softmax over `cls.seq_relationship`'s two logits, index 0 being `IsNext` as
//! in Hugging Face's `BertForNextSentencePrediction`.

use super::registry::{self, Call};
use super::{ranked, softmax, LabelScore};
use crate::engine::Engine;
use crate::error::Result;

pub const LABELS: [&str; 2] = ["IsNext", "NotNext"];

/// One `[IsNext, NotNext]` pair of scores per `(a, b)`, the likelier first. `truncation` cuts
/// pairs longer than the model takes (longest first) instead of failing.
pub async fn next_sentence(
    engine: &Engine,
    pairs: &[(&str, &str)],
    truncation: Option<usize>,
) -> Result<Vec<Vec<LabelScore>>> {
    let want = registry::want_head(engine, Call::NextSentence)?;
    let windows = (pairs.iter())
        .map(|(a, b)| engine.encode(a, Some(b), truncation))
        .collect::<Result<Vec<_>>>()?;
    let outs = engine.run(&windows, want, &[]).await?;
    Ok(outs
        .iter()
        .map(|o| ranked(LABELS, softmax(&o.logits)))
        .collect())
}
