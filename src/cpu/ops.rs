//! One op of the plan on the CPU: the model's weights and kernel, the call's buffers and
//! scratch.

use super::attention::{self, attention};
use super::gemm::gemm;
use super::math;
use super::model::{CpuModel, Packed};
use super::pool;
use super::qgemm::{qgemm, qgemm_channel};
use super::quantize::RowGroup;
use super::rotary;
use super::state::CpuState;
use super::tile::Kernel;
use crate::exec::Batch;
use crate::model::{Op, Rows};

impl CpuModel {
    /// Runs op `i` of the plan over `batch`, in `state`'s buffers.
    pub(super) fn run(&self, state: &mut CpuState, i: usize, batch: &Batch) {
        let plan = &self.plan;
        match plan.ops[i] {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm,
                position_offset,
                out,
            } => {
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
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
                state.bufs[out.0] = dst;
            }
            Op::Linear {
                x,
                linear,
                act,
                residual,
                norm,
                out,
            } => {
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
                let src = &state.bufs[x.0];
                let (rows, k, n) = (src.len() / linear.n_in, linear.n_in, linear.n_out);
                match self.packed[linear.weight.0]
                    .as_ref()
                    .expect("every linear weight is packed at load")
                {
                    Packed::F32(w) => {
                        let a_pack = &mut state.a_pack;
                        gemm(self.kernel, rows, src, k, w, &mut dst, n, false, a_pack)
                    }
                    Packed::Int(w) => {
                        let qk = self
                            .kernel
                            .quant
                            .expect("packed for this kernel's int8 tile");
                        qgemm(qk, rows, src, k, w, &mut dst, n, &mut state.a_quant)
                    }
                    Packed::Q8(qk, w) => {
                        row_groups(batch, plan.buffers[x.0].rows, &mut state.groups);
                        let (scratch, groups) = (&mut state.a_quant, &state.groups);
                        qgemm_channel(qk, rows, src, k, w, &mut dst, n, scratch, groups)
                    }
                }
                let w = &self.weights;
                let epilogue = math::Epilogue {
                    cols: linear.n_out,
                    bias: linear.bias.map(|b| w[b.0].data.as_slice()),
                    act,
                    residual: residual.map(|r| state.bufs[r.0].as_slice()),
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
                state.bufs[out.0] = dst;
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
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
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
                let (qkv, lens) = (&state.bufs[qkv.0], &batch.lens);
                let terms = attention::Terms {
                    bias,
                    relative,
                    window,
                };
                attention(self.kernel, qkv, &mut dst, lens, shape, terms, &state.attn);
                state.bufs[out.0] = dst;
            }
            Op::Rotary { qkv, rotation } => {
                if rotation.dynamic.is_some() && state.rotary_rows.is_none() {
                    state.rotary_rows = rotation.rows(&batch.lens, batch.seq_len);
                }
                let qkv = &mut state.bufs[qkv.0];
                match (rotation.dynamic, &state.rotary_rows) {
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
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
                let n = plan.buffers[out.0].cols;
                let src = &state.bufs[x.0];
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
                state.bufs[out.0] = dst;
            }
            Op::Norm { x, norm, out } => {
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
                if x != out {
                    dst.copy_from_slice(&state.bufs[x.0]);
                }
                let (w, cols) = (&self.weights, plan.buffers[out.0].cols);
                let (gamma, beta) = (&w[norm.gamma.0].data, &w[norm.beta.0].data);
                for row in dst.chunks_exact_mut(cols) {
                    // SAFETY: the row ops belong to the kernel selected for this CPU.
                    unsafe {
                        (self.kernel.ops.layer_norm)(row, gamma, beta, norm.eps, norm.centered)
                    };
                }
                state.bufs[out.0] = dst;
            }
            Op::MeanPool { x, out } => {
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
                let cols = plan.buffers[out.0].cols;
                let (src, l) = (&state.bufs[x.0], batch.seq_len);
                for (s, (row, &len)) in dst.chunks_exact_mut(cols).zip(&batch.lens).enumerate() {
                    row.fill(0.0);
                    for t in src[s * l * cols..].chunks_exact(cols).take(len) {
                        row.iter_mut().zip(t).for_each(|(o, x)| *o += x);
                    }
                    let inv = 1.0 / len.max(1) as f32;
                    row.iter_mut().for_each(|o| *o *= inv);
                }
                state.bufs[out.0] = dst;
            }
            Op::Gather { x, out } => {
                let mut dst = std::mem::take(&mut state.bufs[out.0]);
                let cols = plan.buffers[out.0].cols;
                let rows = batch.source_rows(plan.buffers[out.0].rows);
                let src = &state.bufs[x.0];
                for (row, r) in dst.chunks_exact_mut(cols).zip(rows) {
                    row.copy_from_slice(&src[r * cols..(r + 1) * cols]);
                }
                state.bufs[out.0] = dst;
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
