//! Executes the plan on the CPU with the best SIMD micro-kernel for this machine.

pub mod attention;
pub mod gemm;
pub mod kernels;
pub mod math;
pub mod pool;
pub mod qgemm;
mod scalar;

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
use crate::model::{Op, Plan, Rows, Tensor, WeightId};
use attention::{attention, AttentionScratch};
use gemm::{gemm, PackedB};
use kernels::Kernel;
use qgemm::{qgemm, PackedQ, QScratch};
use std::collections::HashMap;

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

impl Batch {
    pub fn batch_size(&self) -> usize {
        self.lens.len()
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
}

/// What a forward pass returns: the last hidden state `[b*l, h]` and the head's logits.
#[derive(Debug, Clone)]
pub struct Output {
    pub hidden: Vec<f32>,
    pub logits: Option<Vec<f32>>,
}

/// How the CPU computes with weights that came block-quantized (q4 ONNX exports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Quantized {
    /// Integer dot products on the weights' codes, activations quantized per row and block,
    /// where the kernel has them: int8 with relaxed-simd (about 2x the f32 speed; logits move
    /// by up to ~0.4, scores by ~2e-2), int16 with plain simd128 (logits within 1e-3); the
    /// native kernels compute in f32.
    #[default]
    Int,
    /// Always on the dequantized f32 weights, as ONNX Runtime computes them.
    F32,
}

impl std::str::FromStr for Quantized {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "int" => Ok(Quantized::Int),
            "f32" => Ok(Quantized::F32),
            o => Err(Error::Input(format!(
                "unknown quantized compute `{o}`; use int or f32"
            ))),
        }
    }
}

/// A linear weight in the layout of the kernel that multiplies it.
enum Packed {
    F32(PackedB),
    Int(PackedQ),
}

pub struct CpuExecutor {
    plan: Plan,
    kernel: &'static Kernel,
    packed: HashMap<WeightId, Packed>,
    bufs: Vec<Vec<f32>>,
    attn: AttentionScratch,
    a_pack: Vec<f32>,
    a_quant: QScratch,
}

impl CpuExecutor {
    /// Packs every linear weight for the selected kernel; unpacked copies that only served
    /// as GEMM operands are freed, so weights are held once.
    pub fn new(plan: Plan, quantized: Quantized) -> Self {
        Self::with_kernel(plan, kernels::select(), quantized)
    }

    /// Runs on a given micro-kernel (one of [`kernels::available`]).
    pub fn with_kernel(mut plan: Plan, kernel: &'static Kernel, quantized: Quantized) -> Self {
        let mut gathered = Vec::new();
        let mut linear = Vec::new();
        for op in &plan.ops {
            match op {
                Op::Embeddings {
                    word,
                    position,
                    token_type,
                    ..
                } => {
                    gathered.extend([*word, *position]);
                    gathered.extend(*token_type);
                }
                Op::Linear { linear: l, .. } => linear.push(l.weight),
                _ => {}
            }
        }
        let mut packed = HashMap::new();
        for id in linear {
            if packed.contains_key(&id) {
                continue;
            }
            let t = &plan.weights[id.0];
            let (n, k) = (t.shape[0], t.shape[1]);
            let int8 = match (kernel.quant, &t.quant, quantized) {
                (Some(qk), Some(q), Quantized::Int) => PackedQ::new(qk, n, k, q),
                _ => None,
            };
            let p = match int8 {
                Some(q) => Packed::Int(q),
                None => Packed::F32(PackedB::from_nk(kernel, n, k, &t.data, k)),
            };
            packed.insert(id, p);
            if !gathered.contains(&id) {
                plan.weights[id.0] = Tensor::new(vec![0], Vec::new());
            }
        }
        let bufs = vec![Vec::new(); plan.buffers.len()];
        CpuExecutor {
            plan,
            kernel,
            packed,
            bufs,
            attn: AttentionScratch::default(),
            a_pack: Vec::new(),
            a_quant: QScratch::default(),
        }
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    pub fn kernel_name(&self) -> &'static str {
        self.kernel.name
    }

    /// The integer tile that multiplies block-quantized weights, when any are packed for it.
    pub fn int_kernel_name(&self) -> Option<&'static str> {
        let any = self.packed.values().any(|p| matches!(p, Packed::Int(_)));
        self.kernel.quant.filter(|_| any).map(|q| q.name)
    }

    /// Runs the encoder, and the task head when `head` is set.
    pub fn forward(&mut self, batch: &Batch, head: bool) -> Result<Output> {
        self.size(batch)?;
        let end = if head {
            self.plan.ops.len()
        } else {
            self.plan.encoder_ops
        };
        for i in 0..end {
            self.run(i, batch);
        }
        pool::rest();
        Ok(Output {
            hidden: self.bufs[self.plan.hidden.0].clone(),
            logits: if head {
                self.plan.logits.map(|id| self.bufs[id.0].clone())
            } else {
                None
            },
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
        for i in 0..self.plan.ops.len() {
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
            Op::Attention { .. } => "attention".into(),
            Op::Gather { .. } => "gather".into(),
            Op::Linear {
                linear, act, norm, ..
            } => {
                let gemm = match self.packed[&linear.weight] {
                    Packed::F32(_) => "f32",
                    Packed::Int(_) => "int",
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
    /// CPU after a GPU encoder; see `src/gpu/NOTES.md`).
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
        for i in self.plan.encoder_ops..self.plan.ops.len() {
            self.run(i, batch);
        }
        pool::rest();
        Ok(self.plan.logits.map(|id| self.bufs[id.0].clone()))
    }

    /// Checks `batch` and sizes the activation buffers for it.
    fn size(&mut self, batch: &Batch) -> Result<()> {
        self.check(batch)?;
        let (b, l) = (batch.batch_size(), batch.seq_len);
        for (buf, spec) in self.bufs.iter_mut().zip(&self.plan.buffers) {
            let rows = match spec.rows {
                Rows::Tokens => b * l,
                Rows::First => b,
                Rows::Picked => batch.picked.len(),
            };
            buf.resize(rows * spec.cols, 0.0);
        }
        Ok(())
    }

    fn check(&self, batch: &Batch) -> Result<()> {
        let cfg = &self.plan.config;
        let n = batch.batch_size() * batch.seq_len;
        if batch.ids.len() != n || batch.type_ids.len() != n {
            return Err(Error::Input(format!(
                "batch holds {} ids for {n} positions",
                batch.ids.len()
            )));
        }
        if batch.seq_len > cfg.max_sequence_len() {
            return Err(Error::Input(format!(
                "sequence of {} tokens exceeds the model's maximum of {}",
                batch.seq_len,
                cfg.max_sequence_len()
            )));
        }
        if let Some(id) = batch.ids.iter().find(|&&id| id as usize >= cfg.vocab_size) {
            return Err(Error::Input(format!(
                "token id {id} is outside the vocabulary of {}",
                cfg.vocab_size
            )));
        }
        if batch
            .type_ids
            .iter()
            .any(|&t| t as usize >= cfg.type_vocab_size.max(1))
        {
            return Err(Error::Input(
                "token type id outside the model's type vocabulary".into(),
            ));
        }
        if batch.lens.iter().any(|&len| len > batch.seq_len) || batch.picked.iter().any(|&r| r >= n)
        {
            return Err(Error::Input(
                "sequence length or picked row out of range".into(),
            ));
        }
        Ok(())
    }

    fn run(&mut self, i: usize, batch: &Batch) {
        let op = self.plan.ops[i].clone();
        match op {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm,
                position_offset,
                out,
            } => {
                let (mut dst, plan) = (std::mem::take(&mut self.bufs[out.0]), &self.plan);
                let w = &plan.weights;
                let e = w[word.0].shape[1];
                for (r, row) in dst.chunks_exact_mut(e).enumerate() {
                    let (id, pos) = (batch.ids[r] as usize, r % batch.seq_len + position_offset);
                    row.copy_from_slice(&w[word.0].data[id * e..(id + 1) * e]);
                    let p = &w[position.0].data[pos * e..(pos + 1) * e];
                    row.iter_mut().zip(p).for_each(|(x, y)| *x += y);
                    if let Some(tt) = token_type {
                        let t = batch.type_ids[r] as usize;
                        row.iter_mut()
                            .zip(&w[tt.0].data[t * e..(t + 1) * e])
                            .for_each(|(x, y)| *x += y);
                    }
                    // SAFETY: the row ops belong to the kernel selected for this CPU.
                    unsafe {
                        (self.kernel.ops.layer_norm)(
                            row,
                            &w[norm.gamma.0].data,
                            &w[norm.beta.0].data,
                            norm.eps,
                        )
                    };
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
                let (mut dst, plan) = (std::mem::take(&mut self.bufs[out.0]), &self.plan);
                let src = &self.bufs[x.0];
                let (rows, k, n) = (src.len() / linear.n_in, linear.n_in, linear.n_out);
                match &self.packed[&linear.weight] {
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
                }
                let w = &plan.weights;
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
            } => {
                let mut dst = std::mem::take(&mut self.bufs[out.0]);
                attention(
                    self.kernel,
                    &self.bufs[qkv.0],
                    &mut dst,
                    &batch.lens,
                    batch.seq_len,
                    heads,
                    head_dim,
                    &self.attn,
                );
                self.bufs[out.0] = dst;
            }
            Op::Gather { x, out } => {
                let (mut dst, plan) = (std::mem::take(&mut self.bufs[out.0]), &self.plan);
                let cols = plan.buffers[out.0].cols;
                let rows: Vec<usize> = match plan.buffers[out.0].rows {
                    Rows::First => (0..batch.batch_size()).map(|s| s * batch.seq_len).collect(),
                    Rows::Picked => batch.picked.clone(),
                    Rows::Tokens => (0..batch.batch_size() * batch.seq_len).collect(),
                };
                let src = &self.bufs[x.0];
                for (row, r) in dst.chunks_exact_mut(cols).zip(rows) {
                    row.copy_from_slice(&src[r * cols..(r + 1) * cols]);
                }
                self.bufs[out.0] = dst;
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
