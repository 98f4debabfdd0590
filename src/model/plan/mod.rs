//! The forward pass, written once: an ordered list of fused ops over named activation buffers.
//! The CPU and GPU executors both run exactly this list.

mod build;
mod builder;
pub(super) mod heads;
mod position_terms;
mod stored;

pub use stored::StoredPlan;

use crate::model::activation::Activation;
use crate::model::config::{HeadKind, ModelConfig};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct WeightId(pub usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BufId(pub usize);

/// How many rows a buffer has for a batch of `b` sequences of `l` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Rows {
    /// One row per token: `b * l`.
    Tokens,
    /// The first token of each sequence: `b`.
    First,
    /// Token rows chosen per call (mask positions for fill-mask).
    Picked,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BufferSpec {
    pub name: Cow<'static, str>,
    pub rows: Rows,
    pub cols: usize,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Linear {
    /// PyTorch layout `[out, in]`.
    pub weight: WeightId,
    pub bias: Option<WeightId>,
    pub n_in: usize,
    pub n_out: usize,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Norm {
    pub gamma: WeightId,
    pub beta: WeightId,
    pub eps: f32,
    /// `false`: RMSNorm, `x / sqrt(mean(x²) + eps) · gamma + beta` (no mean subtracted).
    pub centered: bool,
}

/// A `[heads, 2 * center + 1]` table of what attention adds to the score of query `i` and key
/// `j`: entry `h, j - i + center` (built at load from the family's relative bias or ALiBi).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct DistanceTable {
    pub table: WeightId,
    pub center: usize,
}

/// DeBERTa's disentangled terms of one layer: the `[rows, hidden]` relative embeddings
/// projected by the layer's key projection (content-to-position: `q_i · pos_key[r]`) and
/// query projection (position-to-content: `k_j · pos_query[r]`), where `r` is entry
/// `i - j + center` of `index` (f32-held row numbers, shared by every layer).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Disentangled {
    pub pos_key: Option<WeightId>,
    pub pos_query: Option<WeightId>,
    pub index: WeightId,
    pub center: usize,
    pub rows: usize,
}

/// What `Op::Rotary` turns and by which table.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Rotation {
    pub heads: usize,
    pub head_dim: usize,
    pub dim: usize,
    pub interleaved: bool,
    pub parts: usize,
    /// `[positions, dim]`: cosines then sines.
    pub table: WeightId,
    /// Dynamic NTK scaling: each call turns by [`Rotation::rows`] instead of `table`.
    pub dynamic: Option<DynamicRotation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DynamicRotation {
    pub theta: f64,
    pub position_scale: f64,
    pub trained: usize,
    pub factor: f64,
}

impl Rotation {
    /// Under dynamic scaling, one row of angles per token row of a batch of `lens`
    /// (`seq_len` rows per sequence), each sequence turning by its own length's base.
    pub fn rows(&self, lens: &[usize], seq_len: usize) -> Option<Vec<f32>> {
        let d = self.dynamic?;
        Some(crate::model::positions::dynamic_rows(
            lens,
            seq_len,
            self.dim,
            d.theta,
            d.position_scale,
            (d.trained, d.factor),
        ))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Op {
    /// `out = LN(word[id] + position[offset + i] + token_type[t])`, each part but the word
    /// embeddings optional.
    Embeddings {
        word: WeightId,
        position: Option<WeightId>,
        token_type: Option<WeightId>,
        norm: Option<Norm>,
        position_offset: usize,
        out: BufId,
    },
    /// `out = LN(act(x · Wᵀ + b) + residual)`, each part optional.
    Linear {
        x: BufId,
        linear: Linear,
        act: Activation,
        residual: Option<BufId>,
        norm: Option<Norm>,
        out: BufId,
    },
    /// Multi-head self-attention over a fused `[q | k | v]` buffer, padding keys masked:
    /// `softmax((q·k + c2p + p2c) * scale + bias[j - i])·v`, the disentangled terms and the
    /// distance bias optional.
    Attention {
        qkv: BufId,
        out: BufId,
        heads: usize,
        head_dim: usize,
        scale: f32,
        bias: Option<DistanceTable>,
        relative: Option<Disentangled>,
        /// A sliding window: query `i` sees only keys with `|i - j| <= window`.
        window: Option<usize>,
    },
    /// `out = LN(x)` row by row (`out` may be `x`): the pre-norm families' norms.
    Norm { x: BufId, norm: Norm, out: BufId },
    /// `out[s]` = the mean of sequence `s`'s real token rows of `x` (a `First`-rows buffer).
    MeanPool { x: BufId, out: BufId },
    /// Rotary positions, in place on a fused `[q | k | v]` buffer: in each head of the first
    /// `parts` (2: Q and K; 3: V too), pairs of the first `dim` dimensions (`(2i, 2i + 1)`
    /// when `interleaved`, else `(i, i + dim/2)`) turned by the angles of the token's
    /// position (`table`: `[positions, dim]`, cosines then sines).
    Rotary { qkv: BufId, rotation: Rotation },
    /// A gated MLP's middle: `out = act(x[.., ..n]) * x[.., n..]` for `x` of `2n` columns.
    Gate {
        x: BufId,
        out: BufId,
        act: Activation,
    },
    /// Copies the rows named by `out`'s row kind (`First` or `Picked`) out of a token buffer.
    Gather { x: BufId, out: BufId },
}

/// How an op reads a weight, which decides the form each executor keeps it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightUse {
    /// The `[out, in]` matrix of a GEMM.
    Gemm,
    /// Rows looked up one at a time (a table that may be split by rows).
    Rows,
    /// Read whole (biases, norms, small tables).
    Whole,
}

impl Op {
    /// Every weight the op reads and how; both executors place weights by this alone.
    pub fn weights(&self) -> Vec<(WeightId, WeightUse)> {
        use WeightUse::*;
        let norm = |n: &Norm| [(n.gamma, Whole), (n.beta, Whole)];
        match self {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm: n,
                ..
            } => {
                let mut v = vec![(*word, Rows)];
                v.extend(position.iter().chain(token_type).map(|&id| (id, Whole)));
                v.extend(n.iter().flat_map(norm));
                v
            }
            Op::Linear {
                linear, norm: n, ..
            } => {
                let mut v = vec![(linear.weight, Gemm)];
                v.extend(linear.bias.map(|b| (b, Whole)));
                v.extend(n.iter().flat_map(norm));
                v
            }
            Op::Attention { bias, relative, .. } => {
                let mut v: Vec<_> = bias.iter().map(|b| (b.table, Whole)).collect();
                if let Some(r) = relative {
                    let tables = [r.pos_key, r.pos_query, Some(r.index)];
                    v.extend(tables.into_iter().flatten().map(|id| (id, Whole)));
                }
                v
            }
            Op::Rotary { rotation, .. } => vec![(rotation.table, Whole)],
            Op::Norm { norm: n, .. } => norm(n).to_vec(),
            Op::Gate { .. } | Op::Gather { .. } | Op::MeanPool { .. } => Vec::new(),
        }
    }
}

/// The op graph: immutable once built, shared by the engine and both executors, each of which
/// owns the weights in its own form (packed for a CPU kernel, uploaded to a GPU).
#[derive(Debug)]
pub struct Plan {
    pub config: ModelConfig,
    /// Names of the weights, indexed by [`WeightId`] (error messages, GPU labels).
    pub weight_names: Vec<String>,
    pub buffers: Vec<BufferSpec>,
    pub ops: Vec<Op>,
    /// `ops[..encoder_ops]` produce the last hidden state; the rest are the task heads.
    pub encoder_ops: usize,
    pub hidden: BufId,
    /// The checkpoint's heads, each over the hidden state (most have one; `BertForPreTraining`
    /// has the masked LM, then next-sentence prediction).
    pub heads: Vec<Head>,
}

/// One task head: `ops` (a range after the encoder's) read the hidden state and write `logits`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Head {
    pub kind: HeadKind,
    pub ops: std::ops::Range<usize>,
    pub logits: BufId,
}

impl Plan {
    pub fn head(&self, i: usize) -> Option<&Head> {
        self.heads.get(i)
    }

    /// The index of the head of `kind`, when the checkpoint has one.
    pub fn head_of(&self, kind: HeadKind) -> Option<usize> {
        self.heads.iter().position(|h| h.kind == kind)
    }

    pub fn logits_rows(&self, head: usize) -> Option<Rows> {
        self.head(head).map(|h| self.buffers[h.logits.0].rows)
    }

    pub fn logits_cols(&self, head: usize) -> usize {
        self.head(head).map_or(0, |h| self.buffers[h.logits.0].cols)
    }
}
