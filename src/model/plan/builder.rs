//! Takes a checkpoint's tensors into the plan's weight list, each once: linears, norms, and
//! the fused, stacked and interleaved forms of q/k/v and gated MLPs.

use super::{BufId, BufferSpec, Linear, Norm, Op, Rows, WeightId};
use crate::error::{Error, Result};
use crate::model::activation::Activation;
use crate::model::config::ModelConfig;
use crate::model::family::{layer_name, layer_names, variant_name, InterleavedQkv, NormKind};
use crate::model::weights::{Quant, Tensor, Weights};
use std::collections::HashMap;

pub(super) struct Builder<'a> {
    pub(super) cfg: &'a ModelConfig,
    pub(super) src: Weights,
    pub(super) weights: Vec<Tensor>,
    pub(super) names: Vec<String>,
    /// Weights already taken, by name: a module every layer shares is held once.
    pub(super) taken: HashMap<String, WeightId>,
    pub(super) buffers: Vec<BufferSpec>,
    pub(super) ops: Vec<Op>,
    /// The encoder layer being built, if any.
    pub(super) layer: Option<usize>,
}

impl Builder<'_> {
    /// The copy of tensor `name` the current layer reads: the latest [`variant_name`] at or
    /// before it, where the file has one, else `name`.
    pub(super) fn resolve(&self, name: &str) -> String {
        let i = self.layer.unwrap_or(0);
        (1..=i)
            .rev()
            .map(|j| variant_name(name, j))
            .find(|v| self.taken.contains_key(v) || self.src.contains(self.prefix(), v))
            .unwrap_or_else(|| name.to_string())
    }

    pub(super) fn prefix(&self) -> &'static str {
        self.cfg.model_type.prefix()
    }

    pub(super) fn push(&mut self, name: &str, t: Tensor) -> WeightId {
        self.weights.push(t);
        self.names.push(name.to_string());
        let id = WeightId(self.weights.len() - 1);
        self.taken.insert(name.to_string(), id);
        id
    }

    pub(super) fn weight(&mut self, name: &str, shape: &[usize]) -> Result<WeightId> {
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

    pub(super) fn buffer(&mut self, name: &'static str, rows: Rows, cols: usize) -> BufId {
        self.buffers.push(BufferSpec {
            name: name.into(),
            rows,
            cols,
        });
        BufId(self.buffers.len() - 1)
    }

    /// A linear with a bias unless the family or config says it has none.
    pub(super) fn linear(&mut self, name: &str, n_in: usize, n_out: usize) -> Result<Linear> {
        let biased = self.cfg.biased(name);
        self.linear_with(name, n_in, n_out, biased)
    }

    /// A layer's linear from its family template: without a bias where the family says so.
    pub(super) fn layer_linear(
        &mut self,
        template: &str,
        i: usize,
        n_in: usize,
        n_out: usize,
    ) -> Result<Linear> {
        self.linear(&layer_name(template, i), n_in, n_out)
    }

    pub(super) fn linear_with(
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
    pub(super) fn norm(&mut self, name: &str, n: usize) -> Result<Norm> {
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
    pub(super) fn part(&mut self, name: &str, shape: &[usize], keep: bool) -> Result<Tensor> {
        if !keep {
            return self.src.take(self.prefix(), name, shape);
        }
        let t = self.src.take(self.prefix(), name, shape)?;
        self.src.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// DeBERTa v1's `in_proj` (rows head by head: each head's Q, K, V in turn; no bias) with
    /// its Q and V biases, as the `[3h, h]` Q-then-K-then-V matrix of [`Self::fused_qkv`].
    pub(super) fn interleaved_qkv(
        &mut self,
        names: InterleavedQkv,
        i: usize,
        h: usize,
    ) -> Result<Linear> {
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
    pub(super) fn qkv(&mut self, i: usize, h: usize) -> Result<Linear> {
        let t = &self.cfg.family().layer;
        match (t.interleaved_qkv, t.fused_qkv) {
            (Some(names), _) => self.interleaved_qkv(names, i, h),
            (None, Some(module)) => self.linear(&layer_name(module, i), h, 3 * h),
            (None, None) => self.fused_qkv(layer_names(self.cfg.model_type, i).qkv, h),
        }
    }

    /// `l` with the two halves of its output rows swapped (`[up | gate]` → `[gate | up]`).
    pub(super) fn swap_halves(&mut self, l: Linear) -> Result<Linear> {
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
    pub(super) fn stacked(
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
    pub(super) fn fused_qkv(&mut self, names: [String; 3], h: usize) -> Result<Linear> {
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

    pub(super) fn op_linear(&mut self, x: BufId, linear: Linear, act: Activation, out: BufId) {
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

/// `heads` blocks of `block` values from `kv` blocks, block `j` a copy of block
/// `j / (heads / kv)` (`repeat_kv` of grouped-query attention).
fn repeat_heads(x: &[f32], kv: usize, heads: usize, block: usize) -> Vec<f32> {
    let group = heads / kv;
    (0..heads)
        .flat_map(|j| &x[j / group * block..(j / group + 1) * block])
        .copied()
        .collect()
}
