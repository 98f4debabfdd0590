//! Texts into windows of tokens the model takes.

use super::Engine;
use crate::error::{Error, Result};
use crate::model::Windowing;
use tokenizers::Encoding;

impl Engine {
    /// The longest window this model takes: the tokenizer's limit within the position table.
    pub fn max_len(&self) -> usize {
        let m = self.config.max_sequence_len();
        self.tokenizer.model_max_length.map_or(m, |t| t.min(m))
    }

    /// One window for a text (or pair). Inputs longer than the model takes fail unless
    /// `truncation` names a length (capped at the model's), which cuts them as HF's
    /// `truncation=True, max_length=n` does (longest first).
    pub fn encode(
        &self,
        text: &str,
        pair: Option<&str>,
        truncation: Option<usize>,
    ) -> Result<Encoding> {
        let max_len = self.max_len();
        if let Some(n) = truncation {
            let w = Windowing {
                max_len: n.min(max_len),
                stride: 0,
                only_second: false,
            };
            let mut windows = self.tokenizer.encode_windows(text, pair, w)?;
            return Ok(windows.swap_remove(0));
        }
        let enc = self.tokenizer.encode(text, pair)?;
        if enc.len() > max_len {
            return Err(too_long(enc.len(), max_len));
        }
        Ok(enc)
    }
}

/// The one error of every task that reads a whole input at once (classification, features,
/// zero-shot, fill-mask, …) when it is longer than the model takes and no truncation was asked.
pub fn too_long(len: usize, max_len: usize) -> Error {
    Error::Input(format!(
        "input is {len} tokens; the model takes at most {max_len} (to cut it there: \
         `truncation: true` in JS, --truncate in the CLI)"
    ))
}
