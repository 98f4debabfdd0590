//! Executes the plan on the CPU with the best SIMD micro-kernel for this machine.

pub mod attention;
pub mod bandwidth;
pub mod dynamic_quant;
pub mod gemm;
pub mod kernels;
pub mod math;
pub mod peak;
pub mod pool;
pub mod qgemm;
pub mod qpack;
mod quant_fixtures;
pub mod quantize;
mod rotary;
mod scalar;
pub mod tile;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
mod relaxed;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;

use crate::error::{Error, Result};
use crate::exec::{Batch, Output, Quantized, Want};
use crate::model::{Op, Plan, Quant, Rows, Tensor, WeightId, WeightUse};
use attention::{attention, AttentionScratch};
use gemm::{gemm, PackedB};
use qgemm::{qgemm, qgemm_channel};
use qpack::PackedQ;
use quantize::{QScratch, RowGroup};
use std::sync::Arc;
use tile::{Kernel, QKernel};

/// A linear weight in the layout of the kernel that multiplies it.
enum Packed {
    F32(PackedB),
    /// Block-quantized (q4) codes for the kernel's `quant` tile.
    Int(PackedQ),
    /// Per-channel 8-bit (q8) codes for one of the kernel's `q8` tiles.
    Q8(&'static QKernel, PackedQ),
}

pub struct CpuExecutor {
    plan: Arc<Plan>,
    kernel: &'static Kernel,
    /// Tensors read as they are (tables, biases, norms), by `WeightId`; those that only served
    /// as GEMM operands are left empty once packed, so weights are held once.
    weights: Vec<Tensor>,
    /// Linear weights in the layout of the kernel that multiplies them, by `WeightId`.
    packed: Vec<Option<Packed>>,
    bufs: Vec<Vec<f32>>,
    attn: AttentionScratch,
    a_pack: Vec<f32>,
    a_quant: QScratch,
    groups: Vec<RowGroup>,
    /// This call's rows of rotary angles under dynamic scaling (every layer turns by the
    /// same ones), made by the first layer that needs them.
    rotary_rows: Option<Vec<f32>>,
    /// Bytes the activation buffers of one batch may take (see `model::budget`).
    budget: u64,
}

impl CpuExecutor {
    /// Packs every linear weight of `plan` for `kernel` (see [`kernels::select`]).
    pub fn new(
        plan: Arc<Plan>,
        mut weights: Vec<Tensor>,
        kernel: &'static Kernel,
        quantized: Quantized,
    ) -> Self {
        let uses: Vec<_> = plan.ops.iter().flat_map(|op| op.weights()).collect();
        let linear = uses.iter().filter(|u| u.1 == WeightUse::Gemm).map(|u| u.0);
        let read: Vec<WeightId> = (uses.iter())
            .filter(|u| u.1 != WeightUse::Gemm)
            .map(|u| u.0)
            .collect();
        let mut packed: Vec<Option<Packed>> = (0..weights.len()).map(|_| None).collect();
        for id in linear {
            if packed[id.0].is_some() {
                continue;
            }
            let t = &weights[id.0];
            let (n, k) = (t.shape[0], t.shape[1]);
            let int = match (t.quant.as_deref(), quantized) {
                (Some(Quant::Block(q)), Quantized::Int) => kernel
                    .quant
                    .and_then(|qk| PackedQ::new(qk, n, k, q))
                    .map(Packed::Int),
                (Some(Quant::Channel(q)), Quantized::Int) => (kernel.q8.iter())
                    .find_map(|&qk| PackedQ::channel(qk, n, k, q).map(|p| Packed::Q8(qk, p))),
                _ => None,
            };
            packed[id.0] = Some(match int {
                Some(p) => p,
                None => Packed::F32(PackedB::from_nk(kernel, n, k, &t.data, k)),
            });
            if !read.contains(&id) {
                weights[id.0] = Tensor::new(vec![0], Vec::new());
            }
        }
        let bufs = vec![Vec::new(); plan.buffers.len()];
        CpuExecutor {
            plan,
            kernel,
            weights,
            packed,
            bufs,
            attn: AttentionScratch::default(),
            a_pack: Vec::new(),
            a_quant: QScratch::default(),
            groups: Vec::new(),
            rotary_rows: None,
            budget: u64::MAX,
        }
    }

    /// Refuses batches whose activation buffers would take more than `bytes`
    /// ([`Error::Budget`]) before sizing them.
    pub fn set_budget(&mut self, bytes: u64) {
        self.budget = bytes;
    }

    pub fn kernel_name(&self) -> &'static str {
        self.kernel.name
    }

    /// The kernel the weights were packed for.
    pub fn kernel(&self) -> &'static Kernel {
        self.kernel
    }

    /// The integer tile that multiplies quantized weights, when any are packed for one (the
    /// first weight's, where q8 weights went to more than one).
    pub fn int_kernel_name(&self) -> Option<&'static str> {
        self.int_kernel_names().first().copied()
    }

    /// Every integer tile some weight is packed for, in the order of the weights.
    pub fn int_kernel_names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        for p in self.packed.iter().flatten() {
            let name = match p {
                Packed::Int(_) => self.kernel.quant.map(|q| q.name),
                Packed::Q8(qk, _) => Some(qk.name),
                Packed::F32(_) => None,
            };
            if let Some(name) = name.filter(|n| !names.contains(n)) {
                names.push(name);
            }
        }
        names
    }

    /// Runs the encoder, and the task head when `want` asks for logits.
    pub fn forward(&mut self, batch: &Batch, want: Want) -> Result<Output> {
        self.size(batch)?;
        let plan = self.plan.clone();
        let head = want.head_index().and_then(|i| plan.head(i));
        let head_ops = head.map_or(0..0, |h| h.ops.clone());
        for i in (0..plan.encoder_ops).chain(head_ops) {
            self.run(i, batch);
        }
        pool::rest();
        let copy = |b: &[f32], what: &str| -> Result<Vec<f32>> {
            let mut v = crate::model::budget::try_vec(b.len(), what)?;
            v.extend_from_slice(b);
            Ok(v)
        };
        Ok(Output {
            hidden: (want.hidden())
                .then(|| copy(&self.bufs[plan.hidden.0], "the hidden states"))
                .transpose()?,
            logits: head
                .map(|h| copy(&self.bufs[h.logits.0], "the logits"))
                .transpose()?,
        })
    }

    /// Milliseconds per kind of op summed over one forward pass (encoder and head), read
    /// from `now_ms` (the caller's clock: `Instant` is unavailable in browsers).
    pub fn profile(
        &mut self,
        batch: &Batch,
        now_ms: impl Fn() -> f64,
    ) -> Result<Vec<(String, f64)>> {
        self.size(batch)?;
        let mut totals: Vec<(String, f64)> = Vec::new();
        let plan = self.plan.clone();
        let head_ops = plan.head(0).map_or(0..0, |h| h.ops.clone());
        for i in (0..plan.encoder_ops).chain(head_ops) {
            let t = now_ms();
            self.run(i, batch);
            let ms = now_ms() - t;
            let kind = self.op_kind(i);
            match totals.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, total)) => *total += ms,
                None => totals.push((kind, ms)),
            }
        }
        pool::rest();
        Ok(totals)
    }

    fn op_kind(&self, i: usize) -> String {
        match &self.plan.ops[i] {
            Op::Embeddings { .. } => "embeddings".into(),
            Op::Attention {
                bias,
                relative,
                window,
                ..
            } => match (bias, relative, window) {
                (Some(_), ..) => "attention + distance bias".into(),
                (_, Some(_), _) => "attention + disentangled terms".into(),
                (.., Some(_)) => "attention, sliding window".into(),
                _ => "attention".into(),
            },
            Op::Gate { act, .. } => format!("gate {act:?}"),
            Op::Rotary { .. } => "rotary".into(),
            Op::Norm { .. } => "layer norm".into(),
            Op::MeanPool { .. } => "mean pool".into(),
            Op::Gather { .. } => "gather".into(),
            Op::Linear {
                linear, act, norm, ..
            } => {
                let gemm = match self.packed[linear.weight.0] {
                    Some(Packed::Int(_)) => "int",
                    Some(Packed::Q8(..)) => "q8",
                    _ => "f32",
                };
                let tail = if norm.is_some() { " + add & norm" } else { "" };
                format!(
                    "linear {}x{} {gemm} {act:?}{tail}",
                    linear.n_in, linear.n_out
                )
            }
        }
    }

    /// Runs only the task head over `hidden`, the last hidden state of `batch` (a head on the
    /// CPU after a GPU encoder; see docs/performance.md, GPU).
    pub fn head(&mut self, batch: &Batch, hidden: &[f32]) -> Result<Option<Vec<f32>>> {
        self.size(batch)?;
        let h = &mut self.bufs[self.plan.hidden.0];
        if h.len() != hidden.len() {
            return Err(Error::Input(format!(
                "{} hidden values for a batch of {}",
                hidden.len(),
                h.len()
            )));
        }
        h.copy_from_slice(hidden);
        let plan = self.plan.clone();
        let Some(head) = plan.head(0) else {
            return Ok(None);
        };
        for i in head.ops.clone() {
            self.run(i, batch);
        }
        pool::rest();
        Ok(Some(self.bufs[head.logits.0].clone()))
    }

    /// Checks `batch` and sizes the activation buffers for it: within the budget (the
    /// buffers and a copy of the hidden states), allocated fallibly.
    fn size(&mut self, batch: &Batch) -> Result<()> {
        use crate::model::budget;
        batch.check(&self.plan.config)?;
        self.rotary_rows = None;
        let dims = batch.dims();
        let lens: Option<Vec<usize>> = (self.plan.buffers.iter())
            .map(|spec| dims.rows(spec.rows).checked_mul(spec.cols))
            .collect();
        let cfg = &self.plan.config;
        let hidden = dims.rows(crate::model::Rows::Tokens) as u64 * cfg.hidden_size as u64;
        let scratch = attention::scratch_bytes(dims.seq_len, cfg.head_dim())
            .checked_mul(pool::threads().min(pool::MAX_WORKERS) as u64);
        let total = (lens.as_ref())
            .and_then(|l| l.iter().try_fold(hidden, |s, &n| s.checked_add(n as u64)))
            .and_then(|n| n.checked_mul(4))
            .zip(scratch)
            .and_then(|(n, s)| n.checked_add(s));
        let what = || {
            format!(
                "the activations of a batch of {} sequences of {} tokens",
                dims.batch, dims.seq_len
            )
        };
        budget::check(what, total, self.budget)?;
        let lens = lens.unwrap_or_default();
        for ((buf, spec), n) in self.bufs.iter_mut().zip(&self.plan.buffers).zip(lens) {
            budget::try_grow(buf, n, &format!("the `{}` buffer", spec.name))?;
            buf.resize(n, 0.0);
        }
        Ok(())
    }

    fn run(&mut self, i: usize, batch: &Batch) {
        let plan = self.plan.clone();
        match plan.ops[i] {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm,
                position_offset,
                out,
            } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let w = &self.weights;
                let e = w[word.0].shape[1];
                for (r, row) in dst.chunks_exact_mut(e).enumerate() {
                    let (id, pos) = (batch.ids[r] as usize, r % batch.seq_len + position_offset);
                    row.copy_from_slice(&w[word.0].data[id * e..(id + 1) * e]);
                    if let Some(position) = position {
                        let p = &w[position.0].data[pos * e..(pos + 1) * e];
                        row.iter_mut().zip(p).for_each(|(x, y)| *x += y);
                    }
                    if let Some(tt) = token_type {
                        let t = batch.type_ids[r] as usize;
                        row.iter_mut()
                            .zip(&w[tt.0].data[t * e..(t + 1) * e])
                            .for_each(|(x, y)| *x += y);
                    }
                    if let Some(norm) = norm {
                        let (gamma, beta) = (&w[norm.gamma.0].data, &w[norm.beta.0].data);
                        // SAFETY: the row ops belong to the kernel selected for this CPU.
                        unsafe {
                            (self.kernel.ops.layer_norm)(row, gamma, beta, norm.eps, norm.centered)
                        };
                    }
                }
                self.bufs[out.0] = dst;
            }
            Op::Linear {
                x,
                linear,
                act,
                residual,
                norm,
                out,
            } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let src = &self.bufs[x.0];
                let (rows, k, n) = (src.len() / linear.n_in, linear.n_in, linear.n_out);
                match self.packed[linear.weight.0]
                    .as_ref()
                    .expect("every linear weight is packed at load")
                {
                    Packed::F32(w) => {
                        let a_pack = &mut self.a_pack;
                        gemm(self.kernel, rows, src, k, w, &mut dst, n, false, a_pack)
                    }
                    Packed::Int(w) => {
                        let qk = self
                            .kernel
                            .quant
                            .expect("packed for this kernel's int8 tile");
                        qgemm(qk, rows, src, k, w, &mut dst, n, &mut self.a_quant)
                    }
                    Packed::Q8(qk, w) => {
                        row_groups(batch, plan.buffers[x.0].rows, &mut self.groups);
                        let (scratch, groups) = (&mut self.a_quant, &self.groups);
                        qgemm_channel(qk, rows, src, k, w, &mut dst, n, scratch, groups)
                    }
                }
                let w = &self.weights;
                let epilogue = math::Epilogue {
                    cols: linear.n_out,
                    bias: linear.bias.map(|b| w[b.0].data.as_slice()),
                    act,
                    residual: residual.map(|r| self.bufs[r.0].as_slice()),
                    norm: norm.map(|n| {
                        (
                            w[n.gamma.0].data.as_slice(),
                            w[n.beta.0].data.as_slice(),
                            n.eps,
                            n.centered,
                        )
                    }),
                };
                parallel_epilogue(self.kernel, &mut dst, &epilogue);
                self.bufs[out.0] = dst;
            }
            Op::Attention {
                qkv,
                out,
                heads,
                head_dim,
                scale,
                bias,
                relative,
                window,
            } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let table =
                    |id: Option<crate::model::WeightId>| id.map(|id| &self.weights[id.0].data[..]);
                let relative = relative.map(|r| attention::Relative {
                    pos_key: table(r.pos_key),
                    pos_query: table(r.pos_query),
                    index: &self.weights[r.index.0].data,
                    center: r.center,
                });
                let shape = attention::Shape {
                    seq_len: batch.seq_len,
                    heads,
                    head_dim,
                    scale,
                };
                let bias = bias.map(|b| attention::Bias {
                    table: &self.weights[b.table.0].data,
                    center: b.center,
                });
                let (qkv, lens) = (&self.bufs[qkv.0], &batch.lens);
                let terms = attention::Terms {
                    bias,
                    relative,
                    window,
                };
                attention(self.kernel, qkv, &mut dst, lens, shape, terms, &self.attn);
                self.bufs[out.0] = dst;
            }
            Op::Rotary { qkv, rotation } => {
                if rotation.dynamic.is_some() && self.rotary_rows.is_none() {
                    self.rotary_rows = rotation.rows(&batch.lens, batch.seq_len);
                }
                let qkv = &mut self.bufs[qkv.0];
                match (rotation.dynamic, &self.rotary_rows) {
                    // one row of angles per token row: the period is the whole batch
                    (Some(_), Some(rows)) => {
                        rotary::rotate(qkv, batch.lens.len() * batch.seq_len, &rotation, rows)
                    }
                    _ => {
                        let table = &self.weights[rotation.table.0].data;
                        rotary::rotate(qkv, batch.seq_len, &rotation, table);
                    }
                }
            }
            Op::Gate { x, out, act } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let n = plan.buffers[out.0].cols;
                let src = &self.bufs[x.0];
                for (row, gate_up) in dst.chunks_exact_mut(n).zip(src.chunks_exact(2 * n)) {
                    row.copy_from_slice(&gate_up[..n]);
                }
                let epilogue = math::Epilogue {
                    cols: n,
                    bias: None,
                    act,
                    residual: None,
                    norm: None,
                };
                parallel_epilogue(self.kernel, &mut dst, &epilogue);
                for (row, gate_up) in dst.chunks_exact_mut(n).zip(src.chunks_exact(2 * n)) {
                    row.iter_mut().zip(&gate_up[n..]).for_each(|(o, u)| *o *= u);
                }
                self.bufs[out.0] = dst;
            }
            Op::Norm { x, norm, out } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                if x != out {
                    dst.copy_from_slice(&self.bufs[x.0]);
                }
                let (w, cols) = (&self.weights, plan.buffers[out.0].cols);
                let (gamma, beta) = (&w[norm.gamma.0].data, &w[norm.beta.0].data);
                for row in dst.chunks_exact_mut(cols) {
                    // SAFETY: the row ops belong to the kernel selected for this CPU.
                    unsafe {
                        (self.kernel.ops.layer_norm)(row, gamma, beta, norm.eps, norm.centered)
                    };
                }
                self.bufs[out.0] = dst;
            }
            Op::MeanPool { x, out } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let cols = plan.buffers[out.0].cols;
                let (src, l) = (&self.bufs[x.0], batch.seq_len);
                for (s, (row, &len)) in dst.chunks_exact_mut(cols).zip(&batch.lens).enumerate() {
                    row.fill(0.0);
                    for t in src[s * l * cols..].chunks_exact(cols).take(len) {
                        row.iter_mut().zip(t).for_each(|(o, x)| *o += x);
                    }
                    let inv = 1.0 / len.max(1) as f32;
                    row.iter_mut().for_each(|o| *o *= inv);
                }
                self.bufs[out.0] = dst;
            }
            Op::Gather { x, out } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                let cols = plan.buffers[out.0].cols;
                let rows = batch.source_rows(plan.buffers[out.0].rows);
                let src = &self.bufs[x.0];
                for (row, r) in dst.chunks_exact_mut(cols).zip(rows) {
                    row.copy_from_slice(&src[r * cols..(r + 1) * cols]);
                }
                self.bufs[out.0] = dst;
            }
        }
    }
}

/// The rows of a buffer of row kind `rows` that q8 activations quantize as one tensor: one
/// sequence's (its real tokens set the range), so that results do not depend on batching or
/// padding and equal ONNX Runtime's on that sequence alone (docs/quantization.md).
fn row_groups(batch: &Batch, rows: Rows, out: &mut Vec<RowGroup>) {
    out.clear();
    let l = batch.seq_len;
    match rows {
        Rows::Tokens => out.extend(batch.lens.iter().enumerate().map(|(s, &len)| RowGroup {
            start: s * l,
            end: (s + 1) * l,
            real: len,
        })),
        Rows::First => out.extend((0..batch.batch_size()).map(|s| RowGroup {
            start: s,
            end: s + 1,
            real: 1,
        })),
        Rows::Picked => {
            for (i, &p) in batch.picked.iter().enumerate() {
                match out.last_mut() {
                    Some(g) if batch.picked[g.start] / l == p / l => {
                        (g.end, g.real) = (i + 1, i + 1 - g.start)
                    }
                    _ => out.push(RowGroup {
                        start: i,
                        end: i + 1,
                        real: 1,
                    }),
                }
            }
        }
    }
}

/// Runs the epilogue over pieces of whole rows in parallel.
fn parallel_epilogue(kernel: &Kernel, dst: &mut [f32], e: &math::Epilogue) {
    let rows = dst.len() / e.cols;
    assert!(e.residual.is_none_or(|r| r.len() == dst.len()));
    let pieces = pool::pieces(rows.div_ceil(8));
    let out = pool::SharedMut(dst.as_mut_ptr());
    pool::run(pieces, &|piece, _| {
        let span = piece * rows / pieces * e.cols..(piece + 1) * rows / pieces * e.cols;
        // SAFETY: the pieces' row spans are disjoint and inside `dst`.
        let part = unsafe { std::slice::from_raw_parts_mut(out.get().add(span.start), span.len()) };
        let e = math::Epilogue {
            residual: e.residual.map(|r| &r[span.clone()]),
            ..*e
        };
        // SAFETY: the row ops belong to the kernel selected for this CPU.
        unsafe { (kernel.ops.epilogue)(part, &e) };
    });
}
