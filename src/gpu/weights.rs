//! Weight placement: each tensor in one storage buffer, or split by row ranges into several
//! when it exceeds the adapter's binding or buffer size (XLM-R's 250k-row embedding table is
//! 768 MB). Only tensors whose users can take row ranges are split: Linear weights (one GEMM
//! per chunk of output columns) and the word embeddings (one gather per chunk). Each chunk is
//! a buffer of its own, bound whole, so no offset alignment is involved.

use super::context::GpuContext;
use crate::error::{Error, Result};
use crate::model::{Op, Plan};

pub struct Chunk {
    pub buffer: wgpu::Buffer,
    /// First row of the tensor this chunk holds.
    pub row0: usize,
    pub rows: usize,
}

pub struct GpuWeight {
    pub chunks: Vec<Chunk>,
}

impl GpuWeight {
    /// The whole tensor, for users that never take split tensors.
    pub fn whole(&self) -> &wgpu::Buffer {
        &self.chunks[0].buffer
    }
}

/// Which weights may be split: every use of them takes row ranges.
fn splittable(plan: &Plan) -> Vec<bool> {
    let mut ok = vec![true; plan.weights.len()];
    for op in &plan.ops {
        let whole = match op {
            Op::Embeddings {
                position,
                token_type,
                norm,
                ..
            } => vec![
                Some(*position),
                *token_type,
                Some(norm.gamma),
                Some(norm.beta),
            ],
            Op::Linear { linear, norm, .. } => {
                vec![linear.bias, norm.map(|n| n.gamma), norm.map(|n| n.beta)]
            }
            Op::Attention { .. } | Op::Gather { .. } => Vec::new(),
        };
        for id in whole.into_iter().flatten() {
            ok[id.0] = false;
        }
    }
    ok
}

pub fn upload(ctx: &GpuContext, plan: &Plan) -> Result<Vec<GpuWeight>> {
    let limits = &ctx.limits;
    let mut limit = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    if let Some(cap) = ctx.options.max_weight_binding {
        limit = limit.min(cap);
    }
    let splittable = splittable(plan);
    let mut out = Vec::with_capacity(plan.weights.len());
    for (i, (t, name)) in plan.weights.iter().zip(&plan.weight_names).enumerate() {
        let rows = t.shape.first().copied().unwrap_or(1).max(1);
        let row_bytes = (t.data.len() / rows * 4) as u64;
        let bytes = row_bytes * rows as u64;
        let per_chunk = if bytes <= limit {
            rows
        } else if splittable[i] && row_bytes <= limit {
            (limit / row_bytes) as usize
        } else {
            return Err(Error::Gpu(format!(
                "tensor `{name}` ({bytes} bytes) exceeds the adapter's storage binding limit of {limit} bytes"
            )));
        };
        let cols = t.data.len() / rows;
        let chunks = (0..rows)
            .step_by(per_chunk)
            .map(|row0| {
                let n = per_chunk.min(rows - row0);
                let data = &t.data[row0 * cols..(row0 + n) * cols];
                let bytes: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
                Chunk {
                    buffer: super::bucket::filled(
                        &ctx.device,
                        &ctx.queue,
                        name,
                        wgpu::BufferUsages::STORAGE,
                        &bytes,
                    ),
                    row0,
                    rows: n,
                }
            })
            .collect();
        out.push(GpuWeight { chunks });
    }
    Ok(out)
}
