//! How fast weights can stream: the bytes of packed weights one forward reads, and this
//! machine's single-thread read bandwidth to compare it with. At a few tokens a forward is
//! little more than one pass over its weights, so their ratio is how close it runs to memory.

use super::model::{CpuModel, Packed};
use crate::model::WeightUse;
use std::collections::BTreeSet;

/// Floats summed per step: independent lanes, so that the compiler vectorizes the sum.
const LANES: usize = 16;

impl CpuModel {
    /// Bytes of the packed linear weights the encoder multiplies by (heads excluded), each
    /// counted once however many ops share it.
    pub fn encoder_weight_bytes(&self) -> usize {
        let ops = &self.plan.ops[..self.plan.encoder_ops];
        let ids: BTreeSet<usize> = (ops.iter().flat_map(|op| op.weights()))
            .filter(|u| u.1 == WeightUse::Gemm)
            .map(|u| u.0 .0)
            .collect();
        (ids.into_iter().filter_map(|id| self.packed[id].as_ref()))
            .map(|p| match p {
                Packed::F32(b) => b.bytes(),
                Packed::Int(q) | Packed::Q8(_, q) => q.bytes(),
            })
            .sum()
    }
}

/// Single-thread read bandwidth in GB/s: the best of `rounds` sums over a buffer of `bytes`
/// (make it well over the last-level cache), timed by `now_ms`.
pub fn stream_read_gb_per_s(bytes: usize, rounds: usize, now_ms: impl Fn() -> f64) -> f64 {
    let data: Vec<f32> = (0..bytes / 4).map(|i| (i % 7) as f32).collect();
    let mut best = f64::INFINITY;
    let mut sink = 0.0f32;
    for _ in 0..rounds.max(1) {
        let t = now_ms();
        sink += sum(&data);
        best = best.min(now_ms() - t);
    }
    // Keeps the sums from being optimized away.
    std::hint::black_box(sink);
    (data.len() * 4) as f64 / (best.max(1e-6) * 1e6)
}

fn sum(x: &[f32]) -> f32 {
    let mut acc = [0.0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for (a, v) in acc.iter_mut().zip(c) {
            *a += v;
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_sum_reads_every_float() {
        let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        assert_eq!(super::sum(&x), 499_500.0);
        assert_eq!(super::sum(&x[..37]), 666.0);
    }
}
