//! What both executors consume and return: the padded batch and its checks, the row counts of
//! a buffer for a batch, what a caller wants back, and how block-quantized weights are computed.

use crate::error::{Error, Result};
use crate::model::{ModelConfig, Rows};

/// A padded batch: `batch` sequences of `seq_len` tokens, right-padded; `lens[s]` are real.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    pub lens: Vec<usize>,
    pub seq_len: usize,
    /// Token rows (`s * seq_len + i`) for heads over picked rows (fill-mask).
    pub picked: Vec<usize>,
}

/// The sizes a batch gives every buffer of the plan (and the key of a GPU buffer plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dims {
    pub batch: usize,
    pub seq_len: usize,
    pub picked: usize,
}

impl Dims {
    /// The rows a buffer of row kind `r` has for these sizes.
    pub fn rows(&self, r: Rows) -> usize {
        match r {
            Rows::Tokens => self.batch * self.seq_len,
            Rows::First => self.batch,
            Rows::Picked => self.picked,
        }
    }
}

impl Batch {
    pub fn batch_size(&self) -> usize {
        self.lens.len()
    }

    pub fn dims(&self) -> Dims {
        Dims {
            batch: self.batch_size(),
            seq_len: self.seq_len,
            picked: self.picked.len(),
        }
    }

    /// The token rows a buffer of row kind `r` is gathered from, in order.
    pub fn source_rows(&self, r: Rows) -> Vec<usize> {
        match r {
            Rows::First => (0..self.batch_size()).map(|s| s * self.seq_len).collect(),
            Rows::Picked => self.picked.clone(),
            Rows::Tokens => (0..self.batch_size() * self.seq_len).collect(),
        }
    }

    /// The sequences `seqs`, picked rows renumbered (they are in sequence order).
    pub fn slice(&self, seqs: std::ops::Range<usize>) -> Batch {
        let l = self.seq_len;
        let rows = seqs.start * l..seqs.end * l;
        Batch {
            ids: self.ids[rows.clone()].to_vec(),
            type_ids: self.type_ids[rows.clone()].to_vec(),
            lens: self.lens[seqs].to_vec(),
            seq_len: l,
            picked: (self.picked.iter())
                .filter(|p| rows.contains(p))
                .map(|p| p - rows.start)
                .collect(),
        }
    }

    /// Checks that the batch is consistent and fits the model: every executor calls this
    /// before touching its buffers, so no id can index past a table.
    pub fn check(&self, cfg: &ModelConfig) -> Result<()> {
        let n = self.batch_size() * self.seq_len;
        if self.ids.len() != n || self.type_ids.len() != n {
            return Err(Error::Input(format!(
                "batch holds {} ids for {n} positions",
                self.ids.len()
            )));
        }
        if self.seq_len > cfg.max_sequence_len() {
            return Err(Error::Input(format!(
                "sequence of {} tokens exceeds the model's maximum of {}",
                self.seq_len,
                cfg.max_sequence_len()
            )));
        }
        if let Some(id) = self.ids.iter().find(|&&id| id as usize >= cfg.vocab_size) {
            return Err(Error::Input(format!(
                "token id {id} is outside the vocabulary of {}",
                cfg.vocab_size
            )));
        }
        if (self.type_ids.iter()).any(|&t| t as usize >= cfg.type_vocab_size.max(1)) {
            return Err(Error::Input(
                "token type id outside the model's type vocabulary".into(),
            ));
        }
        if self.lens.iter().any(|&len| len > self.seq_len) || self.picked.iter().any(|&r| r >= n) {
            return Err(Error::Input(
                "sequence length or picked row out of range".into(),
            ));
        }
        Ok(())
    }
}

/// What a forward pass hands back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// The last hidden state only; the task head does not run.
    Hidden,
    /// The (first) head's logits only; the hidden state is not copied out.
    Logits,
    /// The hidden state and the first head's logits.
    Both,
    /// The logits of the plan's head `i` only (`Head(0)` is `Logits`); a checkpoint with
    /// several heads (`BertForPreTraining`) runs just the one asked for.
    Head(usize),
}

impl Want {
    pub fn head(self) -> bool {
        self != Want::Hidden
    }

    pub fn hidden(self) -> bool {
        matches!(self, Want::Hidden | Want::Both)
    }

    /// Which of the plan's heads runs, when one does.
    pub fn head_index(self) -> Option<usize> {
        match self {
            Want::Hidden => None,
            Want::Logits | Want::Both => Some(0),
            Want::Head(i) => Some(i),
        }
    }
}

/// What a forward pass returns: the last hidden state `[b*l, h]` and the head's logits, each
/// when asked for (logits only where the plan has a head).
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub hidden: Option<Vec<f32>>,
    pub logits: Option<Vec<f32>>,
}

/// How the CPU computes with weights that came quantized (q4 and q8 ONNX exports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Quantized {
    /// Integer dot products on the weights' codes where the kernel has them. q4: activations
    /// quantized per row and block, int8 with relaxed-simd, int16 with plain simd128 (natively
    /// f32). q8: onnxruntime's arithmetic (activations per sequence as `DynamicQuantizeLinear`,
    /// exact int32 sums) on every ISA. Accuracy in docs/quantization.md.
    #[default]
    Int,
    /// Always on the dequantized f32 weights, as ONNX Runtime computes them.
    F32,
}
