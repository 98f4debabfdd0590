//! What a bucket reads from each call: token ids, type ids, lengths and picked rows, written
//! before each forward.

use super::buffers::{filled, storage};
use crate::exec::{Batch, Dims};
use crate::model::{Op, Plan, Rotation};

/// The per-call inputs of a bucket, written before each forward, and the fixed first-row
/// index of each sequence.
pub struct BucketInputs {
    pub ids: wgpu::Buffer,
    pub type_ids: wgpu::Buffer,
    pub lens: wgpu::Buffer,
    pub picked: wgpu::Buffer,
    pub first_rows: wgpu::Buffer,
    /// One row of rotary angles per token row, for a rotation scaled by each call's lengths.
    pub rotary_rows: Option<(wgpu::Buffer, Rotation)>,
}

impl BucketInputs {
    pub fn new(device: &wgpu::Device, queue: &wgpu::Queue, dims: Dims, plan: &Plan) -> Self {
        let tokens = dims.batch * dims.seq_len;
        let dynamic = plan.ops.iter().find_map(|op| match op {
            Op::Rotary { rotation, .. } if rotation.dynamic.is_some() => Some(*rotation),
            _ => None,
        });
        let first: Vec<u32> = (0..dims.batch).map(|s| (s * dims.seq_len) as u32).collect();
        BucketInputs {
            ids: storage(device, "ids", tokens * 4),
            type_ids: storage(device, "type_ids", tokens * 4),
            lens: storage(device, "lens", dims.batch * 4),
            picked: storage(device, "picked", dims.picked * 4),
            first_rows: filled(
                device,
                queue,
                "first_rows",
                wgpu::BufferUsages::STORAGE,
                bytemuck::cast_slice(&first),
            ),
            rotary_rows: dynamic.map(|r| (storage(device, "rotary_rows", tokens * r.dim * 4), r)),
        }
    }

    /// Writes `batch` (of this bucket's dims) into the input buffers.
    pub fn write(&self, queue: &wgpu::Queue, batch: &Batch) {
        let u32s = |v: &[usize]| v.iter().map(|&x| x as u32).collect::<Vec<_>>();
        queue.write_buffer(&self.ids, 0, bytemuck::cast_slice(&batch.ids));
        queue.write_buffer(&self.type_ids, 0, bytemuck::cast_slice(&batch.type_ids));
        queue.write_buffer(&self.lens, 0, bytemuck::cast_slice(&u32s(&batch.lens)));
        if !batch.picked.is_empty() {
            let picked = u32s(&batch.picked);
            queue.write_buffer(&self.picked, 0, bytemuck::cast_slice(&picked));
        }
        if let Some((buffer, rotation)) = &self.rotary_rows {
            let rows = rotation
                .rows(&batch.lens, batch.seq_len)
                .unwrap_or_default();
            queue.write_buffer(buffer, 0, bytemuck::cast_slice(&rows));
        }
    }
}
