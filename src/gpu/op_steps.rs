//! The dispatches of each op of the plan: embeddings, linears (on packed weights too),
//! attention, rotary positions, gates, norms, pooling and gathers.

use super::bucket_inputs::BucketInputs;
use super::buffers::storage;
use super::builder::Builder;
use super::gemm_steps::{gemm_params, GemmBuffers};
use super::kernels::Kernel;
use super::packed::Packed;
use super::params::{
    act_code, AttentionParams, EmbeddingsParams, GateParams, GatherParams, LayerNormParams,
    Q8Params, RotaryParams, RowsParams,
};
use super::recorder::Recorder;
use super::weights::GemmWeights;
use super::workgroups::{per_element, per_row};
use crate::exec::Dims;
use crate::model::{BufId, Disentangled, Norm, Op, Rows, WeightId};

impl Builder<'_> {
    /// `rows` rows of `cols` of `out` from `x`: copied (`mean` 0) or, per sequence, the mean
    /// of its real token rows (`mean` 1).
    #[allow(clippy::too_many_arguments)]
    fn rows_op(
        &self,
        rec: &mut Recorder,
        x: &wgpu::Buffer,
        inputs: &BucketInputs,
        out: &wgpu::Buffer,
        rows: usize,
        cols: usize,
        dims: Dims,
        mean: u32,
    ) {
        let params = RowsParams {
            rows: rows as u32,
            cols: cols as u32,
            seq_len: dims.seq_len as u32,
            mean,
        };
        let buffers = [x, &inputs.lens, out];
        rec.push(Kernel::Rows, params, &buffers, per_element(rows * cols));
    }

    /// In-place LayerNorm of `rows` rows of `dim` values of `x`.
    fn layer_norm(
        &self,
        rec: &mut Recorder,
        norm: Norm,
        rows: usize,
        dim: usize,
        x: &wgpu::Buffer,
    ) {
        let w = |id: WeightId| self.weights[id.0].whole();
        let params = LayerNormParams {
            rows: rows as u32,
            dim: dim as u32,
            eps: norm.eps,
            centered: norm.centered as u32,
        };
        rec.push(
            Kernel::layer_norm(self.choice),
            params,
            &[w(norm.gamma), w(norm.beta), x],
            per_row(rows),
        );
    }

    pub fn op_steps(
        &self,
        op: &Op,
        dims: Dims,
        inputs: &BucketInputs,
        acts: &[wgpu::Buffer],
        rec: &mut Recorder,
    ) {
        let plan = self.plan;
        let w = |id: WeightId| self.weights[id.0].whole();
        let rows_of = |b: BufId| dims.rows(plan.buffers[b.0].rows);
        match *op {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm,
                position_offset,
                out,
            } => {
                let rows = rows_of(out);
                let dim = plan.buffers[out.0].cols;
                // A split table: each chunk's rows are gathered first, then read in order.
                let chunks = &self.weights[word.0].chunks;
                let gathered =
                    (chunks.len() > 1).then(|| storage(self.device, "word_rows", rows * dim * 4));
                if let Some(g) = &gathered {
                    for c in chunks {
                        let params = GatherParams {
                            rows: rows as u32,
                            cols: dim as u32,
                            lo: c.row0 as u32,
                            hi: (c.row0 + c.rows) as u32,
                        };
                        let buffers = [&c.buffer, &inputs.ids, g];
                        rec.push(Kernel::Gather, params, &buffers, per_element(rows * dim));
                    }
                }
                let params = EmbeddingsParams {
                    rows: rows as u32,
                    seq_len: dims.seq_len as u32,
                    dim: dim as u32,
                    position_offset: position_offset as u32,
                    has_types: token_type.is_some() as u32,
                    gathered: gathered.is_some() as u32,
                    has_position: position.is_some() as u32,
                };
                let buffers = [
                    &inputs.ids,
                    &inputs.type_ids,
                    gathered.as_ref().unwrap_or_else(|| w(word)),
                    position.map_or(self.dummy, w),
                    token_type.map_or(self.dummy, w),
                    &acts[out.0],
                ];
                rec.push(
                    Kernel::Embeddings,
                    params,
                    &buffers,
                    per_element(rows * dim),
                );
                if let Some(norm) = norm {
                    self.layer_norm(rec, norm, rows, dim, &acts[out.0]);
                }
            }
            Op::Linear {
                x,
                linear,
                act,
                residual,
                norm,
                out,
            } => {
                let m = rows_of(x);
                let bias = linear.bias.map_or(self.dummy, w);
                let res = residual.map_or(self.dummy, |r| &acts[r.0]);
                let weight = &self.weights[linear.weight.0];
                if weight.packed != Packed::None {
                    self.packed_linear(op, dims, inputs, acts, rec);
                    return;
                }
                // One GEMM per chunk of a split weight: a range of output columns each.
                let weights = GemmWeights::of(weight);
                for c in &weight.chunks {
                    let plan = self.gemm_plan(m, c.rows, linear.n_in, weights);
                    let params = gemm_params(m, c, &linear, act, residual.is_some(), 0);
                    let buffers = GemmBuffers {
                        x: &acts[x.0],
                        w: &c.buffer,
                        bias,
                        residual: res,
                        out: &acts[out.0],
                        extra: Vec::new(),
                    };
                    self.push_gemm(rec, plan, params, buffers);
                }
                if let Some(n) = norm {
                    self.layer_norm(rec, n, m, linear.n_out, &acts[out.0]);
                }
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
                let params = AttentionParams {
                    seq_len: dims.seq_len as u32,
                    heads: heads as u32,
                    head_dim: head_dim as u32,
                    hidden: (heads * head_dim) as u32,
                    scale,
                    bias_width: bias.map_or(0, |b| 2 * b.center + 1) as u32,
                    bias_center: bias.map_or(0, |b| b.center) as u32,
                    rel_center: relative.map_or(0, |r| r.center) as u32,
                    has_c2p: relative.is_some_and(|r| r.pos_key.is_some()) as u32,
                    has_p2c: relative.is_some_and(|r| r.pos_query.is_some()) as u32,
                    has_window: window.is_some() as u32,
                    window: window.unwrap_or(0).min(u32::MAX as usize) as u32,
                };
                let kernel = Kernel::attention(self.choice, head_dim);
                let query_blocks = match kernel {
                    Kernel::Attention => dims.seq_len.div_ceil(16),
                    Kernel::AttentionLanes => dims.seq_len.div_ceil(64),
                    _ => dims.seq_len,
                };
                let groups = [query_blocks as u32, heads as u32, dims.batch as u32];
                let table = bias.map_or(self.dummy, |b| w(b.table));
                let rel = |id: fn(&Disentangled) -> Option<WeightId>| {
                    relative.and_then(|r| id(&r)).map_or(self.dummy, w)
                };
                let buffers = [
                    &acts[qkv.0],
                    &inputs.lens,
                    &acts[out.0],
                    table,
                    rel(|r| r.pos_key),
                    rel(|r| r.pos_query),
                    rel(|r| Some(r.index)),
                ];
                rec.push(kernel, params, &buffers, groups);
            }
            Op::Rotary { qkv, rotation: r } => {
                let rows = dims.rows(plan.buffers[qkv.0].rows);
                // A dynamic rotation reads one row of angles per token row (period: all rows).
                let rows_table = (inputs.rotary_rows.as_ref()).filter(|_| r.dynamic.is_some());
                let period = if rows_table.is_some() {
                    rows
                } else {
                    dims.seq_len
                };
                let params = RotaryParams {
                    rows: rows as u32,
                    seq_len: period as u32,
                    heads: r.heads as u32,
                    head_dim: r.head_dim as u32,
                    dim: r.dim as u32,
                    interleaved: r.interleaved as u32,
                    parts: r.parts as u32,
                };
                let table = rows_table.map_or_else(|| w(r.table), |(b, _)| b);
                let buffers = [&acts[qkv.0], table];
                let pairs = rows * r.parts * r.heads * (r.dim / 2);
                rec.push(Kernel::Rotary, params, &buffers, per_element(pairs));
            }
            Op::Gate { x, out, act } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                let params = GateParams {
                    rows: rows as u32,
                    cols: spec.cols as u32,
                    act: act_code(act),
                };
                let buffers = [&acts[x.0], &acts[out.0]];
                rec.push(
                    Kernel::Gate,
                    params,
                    &buffers,
                    per_element(rows * spec.cols),
                );
            }
            Op::Norm { x, norm, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                if x != out {
                    self.rows_op(
                        rec,
                        &acts[x.0],
                        inputs,
                        &acts[out.0],
                        rows,
                        spec.cols,
                        dims,
                        0,
                    );
                }
                self.layer_norm(rec, norm, rows, spec.cols, &acts[out.0]);
            }
            Op::MeanPool { x, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                self.rows_op(
                    rec,
                    &acts[x.0],
                    inputs,
                    &acts[out.0],
                    rows,
                    spec.cols,
                    dims,
                    1,
                );
            }
            Op::Gather { x, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                let index = match spec.rows {
                    Rows::Picked => &inputs.picked,
                    _ => &inputs.first_rows,
                };
                let params = GatherParams {
                    rows: rows as u32,
                    cols: spec.cols as u32,
                    lo: 0,
                    hi: u32::MAX,
                };
                let buffers = [&acts[x.0], index, &acts[out.0]];
                rec.push(
                    Kernel::Gather,
                    params,
                    &buffers,
                    per_element(rows * spec.cols),
                );
            }
        }
    }

    /// A linear on a packed low-bit weight (`packed.rs`): for integer q8, the activations
    /// quantized first (per row range, then per row group), then one GEMM per chunk.
    fn packed_linear(
        &self,
        op: &Op,
        dims: Dims,
        inputs: &BucketInputs,
        acts: &[wgpu::Buffer],
        rec: &mut Recorder,
    ) {
        let Op::Linear {
            x,
            linear,
            act,
            residual,
            norm,
            out,
        } = *op
        else {
            return;
        };
        let w = |id: WeightId| self.weights[id.0].whole();
        let rows = self.plan.buffers[x.0].rows;
        let (m, k) = (dims.rows(rows), linear.n_in);
        let weight = &self.weights[linear.weight.0];
        let quantized = (weight.packed == Packed::Q8Int).then(|| {
            let range = storage(self.device, "q8_range", m * 8);
            let codes = storage(self.device, "q8_codes", m * k);
            let meta = storage(self.device, "q8_meta", m * 16);
            let params = Q8Params {
                rows: m as u32,
                k: k as u32,
                seq_len: dims.seq_len as u32,
                kind: match rows {
                    Rows::Tokens => 0,
                    Rows::First => 1,
                    Rows::Picked => 2,
                },
            };
            rec.push(Kernel::Q8Range, params, &[&acts[x.0], &range], per_row(m));
            let buffers = [
                &acts[x.0],
                &range,
                &inputs.lens,
                &inputs.picked,
                &codes,
                &meta,
            ];
            rec.push(Kernel::Q8Quantize, params, &buffers, per_row(m));
            (codes, meta)
        });
        let bias = linear.bias.map_or(self.dummy, w);
        let res = residual.map_or(self.dummy, |r| &acts[r.0]);
        let weights = GemmWeights::of(weight);
        for c in &weight.chunks {
            let plan = self.gemm_plan(m, c.rows, k, weights);
            let params = gemm_params(m, c, &linear, act, residual.is_some(), weight.block);
            let mut extra: Vec<&wgpu::Buffer> = c.aux.iter().collect();
            extra.extend(quantized.as_ref().map(|q| &q.1));
            let buffers = GemmBuffers {
                x: quantized.as_ref().map_or(&acts[x.0], |q| &q.0),
                w: &c.buffer,
                bias,
                residual: res,
                out: &acts[out.0],
                extra,
            };
            self.push_gemm(rec, plan, params, buffers);
        }
        if let Some(n) = norm {
            self.layer_norm(rec, n, m, linear.n_out, &acts[out.0]);
        }
    }
}
