//! The forward pass, written once: an ordered list of fused ops over named activation buffers.
//! The CPU and GPU executors both run exactly this list.

use super::config::{Activation, HeadKind, ModelConfig};
use super::family::{
    layer_name, layer_names, variant_name, DistanceBias, FfnGate, InterleavedQkv, NormKind,
    NormPlacement,
};
use super::weights::{Quant, Tensor, Weights};
use crate::error::{Error, Result};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WeightId(pub usize);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufId(pub usize);

/// How many rows a buffer has for a batch of `b` sequences of `l` tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rows {
    /// One row per token: `b * l`.
    Tokens,
    /// The first token of each sequence: `b`.
    First,
    /// Token rows chosen per call (mask positions for fill-mask).
    Picked,
}

#[derive(Debug, Clone)]
pub struct BufferSpec {
    pub name: &'static str,
    pub rows: Rows,
    pub cols: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Linear {
    /// PyTorch layout `[out, in]`.
    pub weight: WeightId,
    pub bias: Option<WeightId>,
    pub n_in: usize,
    pub n_out: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Norm {
    pub gamma: WeightId,
    pub beta: WeightId,
    pub eps: f32,
    /// `false`: RMSNorm, `x / sqrt(mean(x²) + eps) · gamma + beta` (no mean subtracted).
    pub centered: bool,
}

/// A `[heads, 2 * center + 1]` table of what attention adds to the score of query `i` and key
/// `j`: entry `h, j - i + center` (built at load from the family's relative bias or ALiBi).
#[derive(Debug, Clone, Copy)]
pub struct DistanceTable {
    pub table: WeightId,
    pub center: usize,
}

/// DeBERTa's disentangled terms of one layer: the `[rows, hidden]` relative embeddings
/// projected by the layer's key projection (content-to-position: `q_i · pos_key[r]`) and
/// query projection (position-to-content: `k_j · pos_query[r]`), where `r` is entry
/// `i - j + center` of `index` (f32-held row numbers, shared by every layer).
#[derive(Debug, Clone, Copy)]
pub struct Disentangled {
    pub pos_key: Option<WeightId>,
    pub pos_query: Option<WeightId>,
    pub index: WeightId,
    pub center: usize,
    pub rows: usize,
}

/// What `Op::Rotary` turns and by which table.
#[derive(Debug, Clone, Copy)]
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

#[derive(Debug, Clone, Copy, PartialEq)]
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
        Some(super::positions::dynamic_rows(
            lens,
            seq_len,
            self.dim,
            d.theta,
            d.position_scale,
            (d.trained, d.factor),
        ))
    }
}

#[derive(Debug, Clone)]
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
#[derive(Debug, Clone)]
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

/// DeBERTa's relative embeddings as every layer projects them.
struct RelativeEmbeddings {
    values: Vec<f32>,
    rows: usize,
    index: WeightId,
    center: usize,
}

struct Builder<'a> {
    cfg: &'a ModelConfig,
    src: Weights,
    weights: Vec<Tensor>,
    names: Vec<String>,
    /// Weights already taken, by name: a module every layer shares is held once.
    taken: HashMap<String, WeightId>,
    buffers: Vec<BufferSpec>,
    ops: Vec<Op>,
    /// The encoder layer being built, if any.
    layer: Option<usize>,
}

impl Builder<'_> {
    /// The copy of tensor `name` the current layer reads: the latest [`variant_name`] at or
    /// before it, where the file has one, else `name`.
    fn resolve(&self, name: &str) -> String {
        let i = self.layer.unwrap_or(0);
        (1..=i)
            .rev()
            .map(|j| variant_name(name, j))
            .find(|v| self.taken.contains_key(v) || self.src.contains(self.prefix(), v))
            .unwrap_or_else(|| name.to_string())
    }

    fn prefix(&self) -> &'static str {
        self.cfg.model_type.prefix()
    }

    fn push(&mut self, name: &str, t: Tensor) -> WeightId {
        self.weights.push(t);
        self.names.push(name.to_string());
        let id = WeightId(self.weights.len() - 1);
        self.taken.insert(name.to_string(), id);
        id
    }

    fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
        let name = &self.resolve(name);
        if let Some(&id) = self.taken.get(name) {
            let got = &self.weights[id.0].shape;
            if got != shape {
                return Err(Error::TensorShape {
                    name: name.to_string(),
                    got: got.clone(),
                    expected: shape.to_vec(),
                });
            }
            return Ok(id);
        }
        let t = self.src.take(self.prefix(), name, shape)?;
        Ok(self.push(name, t))
    }

    fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.buffers.push(BufferSpec { name, rows, cols });
        BufId(self.buffers.len() - 1)
    }

    /// A linear with a bias unless the family or config says it has none.
    fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        let biased = self.cfg.biased(name);
        self.linear_with(name, n_in, n_out, biased)
    }

    /// A layer's linear from its family template: without a bias where the family says so.
    fn layer_linear(
        &mut self,
        template: &str,
        i: usize,
        n_in: usize,
        n_out: usize,
    ) -> Result<Linear> {
        self.linear(&layer_name(template, i), n_in, n_out)
    }

    fn linear_with(
        &mut self,
        name: &str,
        n_in: usize,
        n_out: usize,
        biased: bool,
    ) -> Result<Linear> {
        let weight = self.weight(&format!("{name}.weight"), &[n_out, n_in])?;
        let bias = match biased {
            true => Some(self.weight(&format!("{name}.bias"), &[n_out])?),
            false => None,
        };
        Ok(Linear {
            weight,
            bias,
            n_in,
            n_out,
        })
    }

    /// A LayerNorm or the family's RMSNorm; one without a bias (ModernBERT's, every RMSNorm)
    /// adds zeros.
    fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
        let gamma = self.weight(&format!("{name}.weight"), &[n])?;
        let bias = format!("{name}.bias");
        let centered = self.cfg.family().norm_kind == NormKind::Layer;
        let beta = match centered && self.cfg.biased(name) {
            true => self.weight(&bias, &[n])?,
            false => match self.taken.get(&bias) {
                Some(&id) => id,
                None => self.push(&bias, Tensor::new(vec![n], vec![0.0; n])),
            },
        };
        Ok(Norm {
            gamma,
            beta,
            eps: self.cfg.layer_norm_eps,
            centered,
        })
    }

    /// A tensor from the store: taken, or with `keep` copied (for another layer to read too).
    fn part(&mut self, name: &str, shape: &[usize], keep: bool) -> Result<Tensor> {
        if !keep {
            return self.src.take(self.prefix(), name, shape);
        }
        let t = self.src.take(self.prefix(), name, shape)?;
        self.src.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// DeBERTa v1's `in_proj` (rows head by head: each head's Q, K, V in turn; no bias) with
    /// its Q and V biases, as the `[3h, h]` Q-then-K-then-V matrix of [`Self::fused_qkv`].
    fn interleaved_qkv(&mut self, names: InterleavedQkv, i: usize, h: usize) -> Result<Linear> {
        let (heads, d) = (self.cfg.num_heads, self.cfg.head_dim());
        let fused = self
            .src
            .take(self.prefix(), &layer_name(names.weight, i), &[3 * h, h])?;
        let mut w = vec![0.0; 3 * h * h];
        for head in 0..heads {
            for part in 0..3 {
                let from = (head * 3 + part) * d * h;
                let to = (part * h + head * d) * h;
                w[to..to + d * h].copy_from_slice(&fused.data[from..from + d * h]);
            }
        }
        let mut b = self
            .src
            .take(self.prefix(), &layer_name(names.q_bias, i), &[h])?
            .data;
        b.resize(2 * h, 0.0);
        b.extend(
            self.src
                .take(self.prefix(), &layer_name(names.v_bias, i), &[h])?
                .data,
        );
        let stem = layer_name(names.weight, i);
        let weight = self.push(&format!("{stem}.qkv"), Tensor::new(vec![3 * h, h], w));
        let bias = Some(self.push(&format!("{stem}.qkv.bias"), Tensor::new(vec![3 * h], b)));
        Ok(Linear {
            weight,
            bias,
            n_in: h,
            n_out: 3 * h,
        })
    }

    /// Layer `i`'s Q, K and V: one `[3h, h]` module where the family stores them so, else
    /// three fused into one.
    fn qkv(&mut self, i: usize, h: usize) -> Result<Linear> {
        let t = &self.cfg.family().layer;
        match (t.interleaved_qkv, t.fused_qkv) {
            (Some(names), _) => self.interleaved_qkv(names, i, h),
            (None, Some(module)) => self.linear(&layer_name(module, i), h, 3 * h),
            (None, None) => self.fused_qkv(layer_names(self.cfg.model_type, i).qkv, h),
        }
    }

    /// `l` with the two halves of its output rows swapped (`[up | gate]` → `[gate | up]`).
    fn swap_halves(&mut self, l: Linear) -> Result<Linear> {
        let half = l.n_out / 2;
        let w = &mut self.weights[l.weight.0];
        if let Some(q) = w.quant.as_mut() {
            q.swap_row_halves();
        }
        let (up, gate) = w.data.split_at(half * l.n_in);
        w.data = [gate, up].concat();
        if let Some(b) = l.bias {
            let b = &mut self.weights[b.0].data;
            let (up, gate) = b.split_at(half);
            *b = [gate, up].concat();
        }
        Ok(l)
    }

    /// Layer `i`'s modules `templates` (each `[n_out, n_in]`) stacked into one linear, their
    /// rows in turn; a missing bias is zeros where another module has one.
    fn stacked(
        &mut self,
        templates: &[&str],
        i: usize,
        n_in: usize,
        n_out: usize,
    ) -> Result<Linear> {
        let names: Vec<String> = templates.iter().map(|t| layer_name(t, i)).collect();
        let mut w = Vec::with_capacity(templates.len() * n_out * n_in);
        let (mut b, mut quants) = (Vec::new(), Vec::new());
        let mut biased = false;
        for name in &names {
            let t = self
                .src
                .take(self.prefix(), &format!("{name}.weight"), &[n_out, n_in])?;
            w.extend(t.data);
            quants.extend(t.quant);
            match self.cfg.biased(name) {
                true => {
                    let bias = self
                        .src
                        .take(self.prefix(), &format!("{name}.bias"), &[n_out])?;
                    b.extend(bias.data);
                    biased = true;
                }
                false => b.extend(std::iter::repeat_n(0.0, n_out)),
            }
        }
        let rows = templates.len() * n_out;
        let mut fused = Tensor::new(vec![rows, n_in], w);
        if quants.len() == templates.len() {
            fused.quant = Quant::concat(quants.iter().map(|q| &**q)).map(Box::new);
        }
        let stem = names.join("+");
        let weight = self.push(&format!("{stem}.weight"), fused);
        let bias = biased.then(|| self.push(&format!("{stem}.bias"), Tensor::new(vec![rows], b)));
        Ok(Linear {
            weight,
            bias,
            n_in,
            n_out: rows,
        })
    }

    /// Q, K and V projections fused into one `[3h, h]` matrix so one GEMM produces all three.
    fn fused_qkv(&mut self, names: [String; 3], h: usize) -> Result<Linear> {
        let stem = names[0].rsplit_once('.').map_or("", |(s, _)| s).to_string();
        let parts: Vec<[String; 2]> = (names.iter())
            .map(|n| [format!("{n}.weight"), format!("{n}.bias")].map(|t| self.resolve(&t)))
            .collect();
        // Copies only ever start at a later layer, so the latest one names the combination.
        let latest = (parts.iter().flatten())
            .filter_map(|p| p.rsplit_once('#').and_then(|(_, j)| j.parse().ok()))
            .max();
        let tagged = |n: String| latest.map_or(n.clone(), |j| variant_name(&n, j));
        let (wname, bname) = (
            tagged(format!("{stem}.qkv.weight")),
            tagged(format!("{stem}.qkv.bias")),
        );
        if let (Some(&weight), Some(&bias)) = (self.taken.get(&wname), self.taken.get(&bname)) {
            return Ok(Linear {
                weight,
                bias: Some(bias),
                n_in: h,
                n_out: 3 * h,
            });
        }
        let mut w = Vec::with_capacity(3 * h * h);
        let mut b = Vec::with_capacity(3 * h);
        let mut quants = Vec::new();
        // A shared layer's parts stay in the store: a later layer may fuse them with a copy.
        let shared = !self.cfg.family().layer.qkv[0].contains("{i}");
        let (heads, d) = (self.cfg.num_heads, self.cfg.head_dim());
        for (p, (name, [wn, bn])) in names.iter().zip(&parts).enumerate() {
            // K and V of grouped heads: each K/V head's rows once per query head it serves.
            let kv = if p == 0 { heads } else { self.cfg.kv_heads };
            let t = self.part(wn, &[kv * d, h], shared)?;
            if kv != heads && t.quant.is_some() {
                return Err(Error::UnsupportedArchitecture(format!(
                    "`{wn}` quantized with {kv} K/V heads of {heads}"
                )));
            }
            w.extend(repeat_heads(&t.data, kv, heads, d * h));
            quants.extend(t.quant);
            match self.cfg.biased(name) {
                true => {
                    let bias = self.part(bn, &[kv * d], shared)?.data;
                    b.extend(repeat_heads(&bias, kv, heads, d));
                }
                false => b.extend(std::iter::repeat_n(0.0, h)),
            }
        }
        let mut fused = Tensor::new(vec![3 * h, h], w);
        if quants.len() == 3 {
            fused.quant = Quant::concat(quants.iter().map(|q| &**q)).map(Box::new);
        }
        let weight = self.push(&wname, fused);
        let bias = Some(self.push(&bname, Tensor::new(vec![3 * h], b)));
        Ok(Linear {
            weight,
            bias,
            n_in: h,
            n_out: 3 * h,
        })
    }

    /// The family's distance bias as one `[heads, 2L - 1]` table over every distance a
    /// sequence of the longest length `L` has.
    fn distance_table(&mut self) -> Result<Option<DistanceTable>> {
        let cfg = self.cfg;
        let (heads, len) = (cfg.num_heads, cfg.max_sequence_len());
        let values = match cfg.family().distance_bias {
            DistanceBias::None => return Ok(None),
            DistanceBias::RelativeBuckets {
                table,
                buckets,
                max_distance,
                ..
            } => {
                let rows = cfg.relative_buckets;
                let t = self.src.take(self.prefix(), table, &[rows, heads])?;
                super::positions::relative_bias_table(&t.data, heads, buckets, max_distance, len)
            }
            DistanceBias::Alibi => super::positions::alibi_table(heads, len),
            DistanceBias::Disentangled { .. } => return Ok(None),
        };
        let table = self.push(
            "attention.distance_bias",
            Tensor::new(vec![heads, 2 * len - 1], values),
        );
        Ok(Some(DistanceTable {
            table,
            center: len - 1,
        }))
    }

    /// DeBERTa's relative embeddings (`2 * span` rows, LayerNormed where the config says)
    /// and the index of the row each distance reads; `None` without disentangled attention.
    fn relative_embeddings(&mut self) -> Result<Option<RelativeEmbeddings>> {
        let cfg = self.cfg;
        let (
            Some(d),
            DistanceBias::Disentangled {
                embeddings, norm, ..
            },
        ) = (cfg.disentangled, cfg.family().distance_bias)
        else {
            return Ok(None);
        };
        let h = cfg.hidden_size;
        let rows = 2 * d.span;
        // A table longer than the span is used in part, as the reference does.
        let mut values = match self.src.take(self.prefix(), embeddings, &[rows, h]) {
            Err(Error::TensorShape { got, .. })
                if got.len() == 2 && got[0] > rows && got[1] == h =>
            {
                self.src.take(self.prefix(), embeddings, &got)?.data
            }
            t => t?.data,
        };
        values.truncate(rows * h);
        if d.norm {
            let gamma = self
                .src
                .take(self.prefix(), &format!("{norm}.weight"), &[h])?;
            let beta = self
                .src
                .take(self.prefix(), &format!("{norm}.bias"), &[h])?;
            for row in values.chunks_exact_mut(h) {
                super::positions::layer_norm(row, &gamma.data, &beta.data, cfg.layer_norm_eps);
            }
        }
        let len = cfg.max_sequence_len();
        let index = super::positions::disentangled_index(len, d.buckets, d.max_relative, d.span);
        let index = self.push(
            "attention.relative_index",
            Tensor::new(vec![2 * len - 1], index),
        );
        Ok(Some(RelativeEmbeddings {
            values,
            rows,
            index,
            center: len - 1,
        }))
    }

    /// Layer `i`'s projections of the relative embeddings: by its own key and query
    /// projections (rows `h..2h` and `0..h` of the fused `qkv`) where the config shares
    /// them, else by its `pos_key_proj` / `pos_query_proj`.
    fn disentangled(
        &mut self,
        rel: &RelativeEmbeddings,
        qkv: Linear,
        i: usize,
    ) -> Result<Disentangled> {
        let cfg = self.cfg;
        let d = cfg
            .disentangled
            .expect("relative embeddings come with their settings");
        let h = cfg.hidden_size;
        let DistanceBias::Disentangled {
            pos_key, pos_query, ..
        } = cfg.family().distance_bias
        else {
            unreachable!("relative embeddings are DeBERTa's")
        };
        // With share_att_key the projection is Q's or K's own weight, unless the file holds
        // one of its own: an ONNX export whose relative path kept K / Q in f32 while the
        // hidden-state path was quantized (see onnx/structure.rs).
        let project = |b: &mut Self, own: &str, part: usize, name: &str| -> Result<WeightId> {
            let own_name = layer_name(own, i);
            let has_own = b.src.contains(b.prefix(), &format!("{own_name}.weight"));
            let (w, bias) = if d.share_key && !has_own {
                let w = b.weights[qkv.weight.0].data[part * h * h..(part + 1) * h * h].to_vec();
                let bias = qkv
                    .bias
                    .map(|id| b.weights[id.0].data[part * h..(part + 1) * h].to_vec());
                (w, bias)
            } else {
                let biased = match d.share_key {
                    true => b.src.contains(b.prefix(), &format!("{own_name}.bias")),
                    false => !cfg.family().unbiased.contains(&own),
                };
                let l = b.linear_with(&own_name, h, h, biased)?;
                let bias = l.bias.map(|id| b.weights[id.0].data.clone());
                (b.weights[l.weight.0].data.clone(), bias)
            };
            let bias = bias.unwrap_or_else(|| vec![0.0; h]);
            let values = super::positions::project_rows(&rel.values, &w, &bias, h);
            Ok(b.push(&layer_name(name, i), Tensor::new(vec![rel.rows, h], values)))
        };
        let pos_key = match d.c2p {
            true => Some(project(
                self,
                pos_key,
                1,
                "encoder.layer.{i}.attention.pos_key",
            )?),
            false => None,
        };
        let pos_query = match d.p2c {
            true => Some(project(
                self,
                pos_query,
                0,
                "encoder.layer.{i}.attention.pos_query",
            )?),
            false => None,
        };
        Ok(Disentangled {
            pos_key,
            pos_query,
            index: rel.index,
            center: rel.center,
            rows: rel.rows,
        })
    }

    /// The rotary ops over `qkv`: the global layers' first, then the sliding-window layers'
    /// where they turn by a base of their own; none without rotary positions.
    fn rotations(&mut self, qkv: BufId) -> Result<Vec<Op>> {
        let cfg = self.cfg;
        let Some(r) = cfg.rotary else {
            return Ok(Vec::new());
        };
        let len = cfg.max_sequence_len();
        let thetas = [Some(r.theta), r.local_theta.filter(|t| *t != r.theta)];
        let names = ["rotary.table", "rotary.table.local"];
        let mut ops = Vec::new();
        for (i, (theta, name)) in thetas.into_iter().zip(names).enumerate() {
            let Some(theta) = theta else { continue };
            let dynamic = r.dynamic.filter(|_| i == 0).map(|d| DynamicRotation {
                theta,
                position_scale: r.position_scale,
                trained: d.trained,
                factor: d.factor,
            });
            // A dynamic rotation's table holds the trained positions only.
            let len = dynamic.map_or(len, |d| d.trained.min(len));
            // An ONNX graph's own table (RoFormer's, checked against the config at import; in
            // a q8 file rounded to 8 bits), so that webert computes what the graph does.
            let imported = (self.src.find(self.prefix(), name))
                .map(|(_, t)| t.shape.clone())
                .filter(|s| i == 0 && s.len() == 2 && s[0] >= len && s[1] == r.dim);
            let table = match imported {
                Some(shape) => self.weight(name, &shape)?,
                None => {
                    let values =
                        super::positions::rotary_table(len, r.dim, theta, r.position_scale);
                    self.push(name, Tensor::new(vec![len, r.dim], values))
                }
            };
            let rotation = Rotation {
                heads: cfg.num_heads,
                head_dim: cfg.head_dim(),
                dim: r.dim,
                interleaved: r.interleaved,
                parts: if r.value { 3 } else { 2 },
                table,
                dynamic,
            };
            ops.push(Op::Rotary { qkv, rotation });
        }
        Ok(ops)
    }

    fn op_linear(&mut self, x: BufId, linear: Linear, act: Activation, out: BufId) {
        self.ops.push(Op::Linear {
            x,
            linear,
            act,
            residual: None,
            norm: None,
            out,
        });
    }
}

impl Plan {
    /// The graph and its weights, indexed by [`WeightId`].
    pub fn build(cfg: ModelConfig, weights: Weights) -> Result<(Plan, Vec<Tensor>)> {
        let mut b = Builder {
            cfg: &cfg,
            src: weights,
            weights: Vec::new(),
            names: Vec::new(),
            taken: HashMap::new(),
            buffers: Vec::new(),
            ops: Vec::new(),
            layer: None,
        };
        let fam = cfg.family();
        let names = &fam.embeddings;
        let (h, e) = (cfg.hidden_size, cfg.embedding_size);
        let hidden = b.buffer("hidden", Rows::Tokens, h);
        let hidden_mid = b.buffer("hidden_mid", Rows::Tokens, h);
        let qkv = b.buffer("qkv", Rows::Tokens, 3 * h);
        let ctx = b.buffer("context", Rows::Tokens, h);
        let inter = b.buffer("intermediate", Rows::Tokens, cfg.intermediate_size);
        let gated = (cfg.gate_act.is_some())
            .then(|| b.buffer("gate_up", Rows::Tokens, 2 * cfg.intermediate_size));

        let word = b.weight(&format!("{}.weight", names.word), &[cfg.vocab_size, e])?;
        let position = match cfg.position_table {
            true => Some(b.weight(
                &format!("{}.weight", names.position),
                &[cfg.max_position_embeddings, e],
            )?),
            false => None,
        };
        let token_type = if cfg.type_vocab_size > 0 {
            Some(b.weight(
                &format!("{}.weight", names.token_type),
                &[cfg.type_vocab_size, e],
            )?)
        } else {
            None
        };
        // ALBERT projects even where the widths agree; ELECTRA only where they differ.
        let project = e != h
            || b.src
                .contains(b.prefix(), &format!("{}.weight", names.project));
        // DeBERTa projects (without a bias) before the LayerNorm, the others after it.
        let before = project && names.project_before_norm;
        let norm = match names.norm {
            Some(name) => Some(b.norm(name, if before { h } else { e })?),
            None => None,
        };
        let embed_out = if project {
            b.buffer("embeddings", Rows::Tokens, e)
        } else {
            hidden
        };
        b.ops.push(Op::Embeddings {
            word,
            position,
            token_type,
            norm: norm.filter(|_| !before),
            position_offset: cfg.position_offset,
            out: embed_out,
        });
        if project {
            let proj = b.linear_with(names.project, e, h, !before)?;
            b.ops.push(Op::Linear {
                x: embed_out,
                linear: proj,
                act: Activation::None,
                residual: None,
                norm: norm.filter(|_| before),
                out: hidden,
            });
        }
        let bias = b.distance_table()?;
        let relative_embeddings = b.relative_embeddings()?;
        let rotations = b.rotations(qkv)?;
        let pre_norm = match fam.norms {
            NormPlacement::Pre {
                first_attn_norm, ..
            } => Some((b.buffer("normed", Rows::Tokens, h), first_attn_norm)),
            NormPlacement::Post => None,
        };
        // A sub-block's input, LayerNormed first in a pre-norm family.
        let normed_input = |b: &mut Builder, x: BufId, name: &str, skip: bool| -> Result<BufId> {
            let Some((normed, _)) = pre_norm.filter(|_| !skip) else {
                return Ok(x);
            };
            let norm = b.norm(name, h)?;
            b.ops.push(Op::Norm {
                x,
                norm,
                out: normed,
            });
            Ok(normed)
        };

        for i in 0..cfg.num_layers {
            b.layer = Some(i);
            let n = layer_names(cfg.model_type, i);
            let t = &fam.layer;
            let skip_first = i == 0 && pre_norm.is_some_and(|(_, first)| !first);
            let attn_in = normed_input(&mut b, hidden, &n.attn_norm, skip_first)?;
            let qkv_w = b.qkv(i, h)?;
            b.op_linear(attn_in, qkv_w, Activation::None, qkv);
            let window = cfg.window(i);
            if let Some(r) = rotations
                .get(window.is_some() as usize)
                .or(rotations.first())
            {
                b.ops.push(r.clone());
            }
            let relative = match &relative_embeddings {
                Some(rel) => Some(b.disentangled(rel, qkv_w, i)?),
                None => None,
            };
            // DeBERTa divides every term by sqrt(d · (1 + its relative terms)).
            let terms = cfg
                .disentangled
                .map_or(0, |d| d.c2p as usize + d.p2c as usize);
            let scale = 1.0 / ((cfg.head_dim() * (1 + terms)) as f32).sqrt();
            b.ops.push(Op::Attention {
                qkv,
                out: ctx,
                heads: cfg.num_heads,
                head_dim: cfg.head_dim(),
                scale,
                bias,
                relative,
                window,
            });
            let attn_out = b.layer_linear(t.attn_out, i, h, h)?;
            let post_norm = match pre_norm {
                None => Some(b.norm(&n.attn_norm, h)?),
                Some(_) => None,
            };
            b.ops.push(Op::Linear {
                x: ctx,
                linear: attn_out,
                act: Activation::None,
                residual: Some(hidden),
                norm: post_norm,
                out: hidden_mid,
            });
            let mlp_in = normed_input(&mut b, hidden_mid, &n.ffn_norm, false)?;
            let i_size = cfg.intermediate_size;
            match (gated, cfg.gate_act) {
                (Some(gate_up), Some(act)) => {
                    let ffn_in = match t.ffn_gate {
                        FfnGate::Module(gate) => b.stacked(&[gate, t.ffn_in], i, h, i_size)?,
                        FfnGate::First => b.layer_linear(t.ffn_in, i, h, 2 * i_size)?,
                        FfnGate::Second => {
                            let l = b.layer_linear(t.ffn_in, i, h, 2 * i_size)?;
                            b.swap_halves(l)?
                        }
                    };
                    b.op_linear(mlp_in, ffn_in, Activation::None, gate_up);
                    b.ops.push(Op::Gate {
                        x: gate_up,
                        out: inter,
                        act,
                    });
                }
                _ => {
                    let ffn_in = b.layer_linear(t.ffn_in, i, h, i_size)?;
                    b.op_linear(mlp_in, ffn_in, cfg.hidden_act, inter);
                }
            }
            let ffn_out = b.layer_linear(t.ffn_out, i, i_size, h)?;
            let post_norm = match pre_norm {
                None => Some(b.norm(&n.ffn_norm, h)?),
                Some(_) => None,
            };
            b.ops.push(Op::Linear {
                x: inter,
                linear: ffn_out,
                act: Activation::None,
                residual: Some(hidden_mid),
                norm: post_norm,
                out: hidden,
            });
        }
        if let NormPlacement::Pre { final_norm, .. } = fam.norms {
            b.layer = None;
            let norm = b.norm(final_norm, h)?;
            b.ops.push(Op::Norm {
                x: hidden,
                norm,
                out: hidden,
            });
        }
        b.layer = None;
        let encoder_ops = b.ops.len();
        let mut heads = Vec::new();
        for &kind in cfg.architecture.heads() {
            let start = b.ops.len();
            let logits = super::heads::build_head(
                &mut HeadBuilder {
                    b: &mut b,
                    hidden,
                    word,
                },
                kind,
            )?;
            heads.push(Head {
                kind,
                ops: start..b.ops.len(),
                logits,
            });
        }
        let Builder {
            weights,
            names,
            buffers,
            ops,
            ..
        } = b;
        let plan = Plan {
            config: cfg,
            weight_names: names,
            buffers,
            ops,
            encoder_ops,
            hidden,
            heads,
        };
        Ok((plan, weights))
    }
}

/// `heads` blocks of `block` values from `kv` blocks, block `j` a copy of block
/// `j / (heads / kv)` (`repeat_kv` of grouped-query attention).
fn repeat_heads(x: &[f32], kv: usize, heads: usize, block: usize) -> Vec<f32> {
    let group = heads / kv;
    (0..heads)
        .flat_map(|j| &x[j / group * block..(j / group + 1) * block])
        .copied()
        .collect()
}

/// What the task heads (in `heads.rs`) may use of the builder.
pub(super) struct HeadBuilder<'a, 'b> {
    b: &'a mut Builder<'b>,
    pub hidden: BufId,
    /// The word embeddings, which masked-LM decoders tie to.
    pub word: WeightId,
}

impl HeadBuilder<'_, '_> {
    pub fn cfg(&self) -> &ModelConfig {
        self.b.cfg
    }
    pub fn has(&self, name: &str) -> bool {
        self.b.src.contains(self.b.prefix(), name)
    }
    pub fn rows_of(&self, name: &str) -> Option<usize> {
        self.b
            .src
            .find(self.b.prefix(), name)
            .and_then(|(_, t)| t.shape.first().copied())
    }
    pub fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
        self.b.weight(name, shape)
    }
    pub fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        self.b.linear(name, n_in, n_out)
    }
    pub fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
        self.b.norm(name, n)
    }
    pub fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.b.buffer(name, rows, cols)
    }
    pub fn rows(&self, x: BufId) -> Rows {
        self.b.buffers[x.0].rows
    }
    pub fn cols(&self, x: BufId) -> usize {
        self.b.buffers[x.0].cols
    }
    pub fn push(&mut self, op: Op) {
        self.b.ops.push(op);
    }
    /// Appends `out = act(x · Wᵀ + b)` into a new buffer and returns it.
    pub fn dense(&mut self, x: BufId, l: Linear, act: Activation, name: &'static str) -> BufId {
        let rows = self.b.buffers[x.0].rows;
        let out = self.buffer(name, rows, l.n_out);
        self.b.op_linear(x, l, act, out);
        out
    }
    pub fn missing(&self, what: &str) -> Error {
        Error::MissingTensor(what.to_string())
    }
}
