//! Weight placement: each tensor in one storage buffer, or split by row ranges into several
//! when it exceeds the adapter's binding or buffer size (XLM-R's 250k-row embedding table is
//! 768 MB). Only tensors whose users can take row ranges are split: Linear weights (one GEMM
//! per chunk of output columns) and the word embeddings (one gather per chunk). Each chunk is
//! a buffer of its own, bound whole, so no offset alignment is involved. With `shader-f16`,
//! the GEMM weight matrices are stored as f16.
//!
//! Quantized GEMM weights stay packed unless `GpuOptions::dequantize` (see `packed.rs`; q8
//! weights on the integer path stay packed regardless): q4 block codes 8 per u32 with f32 block
//! scales and 4-bit zero points, q8 codes 4 per u32 with per-column scales and zero points; each
//! chunk carries those extra buffers as `aux`.

use super::context::GpuContext;
use super::packed::{self, Packed};
use crate::error::{Error, GpuErrorKind, Result};
use crate::model::{Plan, Tensor, WeightUse};

pub struct Chunk {
    pub buffer: wgpu::Buffer,
    /// First row of the tensor this chunk holds.
    pub row0: usize,
    pub rows: usize,
    /// A packed weight's scales and zero points for these rows, bound after the GEMM's output.
    pub aux: Vec<wgpu::Buffer>,
}

pub struct GpuWeight {
    pub chunks: Vec<Chunk>,
    pub f16: bool,
    pub packed: Packed,
    /// The block width of q4 weights.
    pub block: usize,
}

/// Bytes the weights take on the GPU, and what they would take dequantized (f32, or f16 for
/// GEMM weights on adapters with `shader-f16`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeightBytes {
    pub uploaded: u64,
    pub dequantized: u64,
    /// The same for the GEMM weight matrices alone (the ones that may stay packed).
    pub gemm_uploaded: u64,
    pub gemm_dequantized: u64,
}

impl GpuWeight {
    /// The whole tensor, for users that never take split tensors.
    pub fn whole(&self) -> &wgpu::Buffer {
        &self.chunks[0].buffer
    }
}

/// What a GEMM's weights are on the GPU: f32, f16, or packed low-bit codes (`packed.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmWeights {
    F32,
    F16,
    Q4,
    Q8,
    Q8Int,
}

impl GemmWeights {
    pub fn of(w: &GpuWeight) -> GemmWeights {
        match w.packed {
            Packed::Q4 => GemmWeights::Q4,
            Packed::Q8 => GemmWeights::Q8,
            Packed::Q8Int => GemmWeights::Q8Int,
            Packed::None if w.f16 => GemmWeights::F16,
            Packed::None => GemmWeights::F32,
        }
    }

    /// Whether its reduction can be split: the integer q8 GEMM needs whole sums for its
    /// zero-point corrections.
    pub fn splits(self) -> bool {
        self != GemmWeights::Q8Int
    }
}

/// Per weight: whether it may be split (every user takes row ranges) and whether it may be
/// f16 (its only users are vec4 GEMMs).
fn roles(plan: &Plan, weights: &[Tensor]) -> (Vec<bool>, Vec<bool>) {
    let n = plan.weight_names.len();
    let (mut whole, mut gemm, mut other) = (vec![false; n], vec![false; n], vec![false; n]);
    for (id, used) in plan.ops.iter().flat_map(|op| op.weights()) {
        match used {
            WeightUse::Gemm if weights[id.0].shape.get(1).is_some_and(|k| k % 4 == 0) => {
                gemm[id.0] = true
            }
            WeightUse::Gemm | WeightUse::Rows => other[id.0] = true,
            WeightUse::Whole => (whole[id.0], other[id.0]) = (true, true),
        }
    }
    let splittable = whole.iter().map(|w| !w).collect();
    let half = gemm.iter().zip(&other).map(|(g, o)| *g && !o).collect();
    (splittable, half)
}

pub fn upload(
    ctx: &GpuContext,
    plan: &Plan,
    weights: &[Tensor],
) -> Result<(Vec<GpuWeight>, WeightBytes)> {
    let limit = ctx.max_binding();
    let (splittable, half) = roles(plan, weights);
    let mut out = Vec::with_capacity(weights.len());
    let mut total = WeightBytes::default();
    for (i, (t, name)) in weights.iter().zip(&plan.weight_names).enumerate() {
        let f16 = half[i] && ctx.f16();
        let rows = t.shape.first().copied().unwrap_or(1).max(1);
        let cols = t.data.len() / rows;
        let float_row = (cols * if f16 { 2 } else { 4 }) as u64;
        total.dequantized += float_row * rows as u64;
        if half[i] {
            total.gemm_dequantized += float_row * rows as u64;
        }
        // Only GEMM-only weights (`half`) may stay packed: nothing else reads codes. Integer
        // q8 weights are packed even where the others are dequantized (`GpuContext::q8_int`).
        let form = match half[i] {
            true => match packed::form(t, cols, ctx.q8_int()) {
                Packed::Q8Int => Packed::Q8Int,
                _ if ctx.dequantize() => Packed::None,
                p => p,
            },
            false => Packed::None,
        };
        let row_bytes = match form {
            Packed::None => float_row,
            p => p.row_bytes(cols),
        };
        let bytes = row_bytes * rows as u64;
        let per_chunk = if bytes <= limit {
            rows
        } else if splittable[i] && row_bytes <= limit {
            (limit / row_bytes) as usize
        } else {
            return Err(Error::gpu(
                GpuErrorKind::Unavailable,
                format!("tensor `{name}` ({bytes} bytes) exceeds the adapter's storage binding limit of {limit} bytes"),
            ));
        };
        let new_buffer = |label: &str, bytes: &[u8]| {
            super::buffers::filled(
                &ctx.device,
                &ctx.queue,
                label,
                wgpu::BufferUsages::STORAGE,
                bytes,
            )
        };
        let chunks = (0..rows)
            .step_by(per_chunk)
            .map(|row0| {
                let n = per_chunk.min(rows - row0);
                let (bytes, aux) = match (form, t.quant.as_deref()) {
                    (Packed::None, _) | (_, None) => {
                        let data = &t.data[row0 * cols..(row0 + n) * cols];
                        let bytes: Vec<u8> = if f16 {
                            (data.iter())
                                .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
                                .collect()
                        } else {
                            data.iter().flat_map(|x| x.to_le_bytes()).collect()
                        };
                        (bytes, Vec::new())
                    }
                    (p, Some(q)) => packed::pack(p, q, cols, row0..row0 + n),
                };
                let uploaded = (bytes.len() + aux.iter().map(Vec::len).sum::<usize>()) as u64;
                total.uploaded += uploaded;
                if half[i] {
                    total.gemm_uploaded += uploaded;
                }
                Chunk {
                    buffer: new_buffer(name, &bytes),
                    row0,
                    rows: n,
                    aux: aux.iter().map(|a| new_buffer(name, a)).collect(),
                }
            })
            .collect();
        out.push(GpuWeight {
            chunks,
            f16,
            packed: form,
            block: match t.quant.as_deref() {
                Some(crate::model::Quant::Block(b)) => b.block,
                _ => 0,
            },
        });
    }
    Ok((out, total))
}
