//! This machine's single-thread multiply-add peak through the kernel's own register tiles, on
//! operands already in L1. With the read bandwidth (`bandwidth.rs`) it bounds a forward from
//! below: weights must stream from memory and their multiply-adds must run, so a forward
//! takes at least the longer of the two (a roofline). At a few tokens f32 on AVX2 is near the
//! multiply-add bound rather than the memory one.

use super::tile::{ChannelTerms, Kernel, QKernel, QTile};

/// Depth of one timed tile: about a K block of the GEMM's.
const K: usize = 256;

/// Tiles per timed round: ~10 ms, so that a browser's coarse clock (1 ms in some) still
/// times it to a few percent.
const REPS: usize = 20_000;

/// Multiply-adds per second (×1e9) of `kern`'s f32 tile, best of `rounds` timed by `now_ms`.
pub fn f32_gmac_per_s(kern: &Kernel, rounds: usize, now_ms: impl Fn() -> f64) -> f64 {
    let (mr, nr) = (kern.mr, kern.nr);
    let a = vec![0.5f32; K * mr];
    let b = vec![0.25f32; K * nr];
    let mut c = vec![0f32; mr * nr];
    best(rounds, &now_ms, (REPS * K * mr * nr) as f64, || {
        for _ in 0..REPS {
            // SAFETY: `a` holds K·mr floats, `b` K·nr, and `c` one mr × nr tile of stride nr.
            unsafe { (kern.tile)(K, a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), nr, mr, nr, true) };
        }
        std::hint::black_box(&mut c);
    })
}

/// The same for a per-channel 8-bit (q8) tile, counting each code product as a multiply-add.
pub fn q8_gmac_per_s(qk: &QKernel, rounds: usize, now_ms: impl Fn() -> f64) -> f64 {
    let (mr, nr, steps) = (qk.mr, qk.nr, K / qk.group);
    let a = vec![1u8; K * mr * qk.a_bytes];
    let b = vec![1u8; K * nr];
    let (a_scales, b_scales) = (vec![1f32; 2 * mr], vec![1f32; 2 * nr]);
    let (a_terms, b_terms) = (vec![0i32; 2 * mr], vec![0i32; 2 * nr]);
    let mut c = vec![0f32; mr * nr];
    let tile = || QTile {
        blocks: 1,
        steps,
        a: a.as_ptr(),
        a_scales: a_scales.as_ptr(),
        b: b.as_ptr(),
        b_scales: b_scales.as_ptr(),
        zero: None,
        channel: Some(ChannelTerms {
            a: a_terms.as_ptr(),
            b: b_terms.as_ptr(),
            extra: std::ptr::null(),
        }),
    };
    best(rounds, &now_ms, (REPS * K * mr * nr) as f64, || {
        for _ in 0..REPS {
            // SAFETY: every operand above holds at least what one mr × nr tile of `steps`
            // steps reads (codes of `group` k per step, two terms per row and column), and
            // `c` one tile of stride nr.
            unsafe { (qk.tile)(tile(), c.as_mut_ptr(), nr, mr, nr) };
        }
        std::hint::black_box(&mut c);
    })
}

/// `macs / 1e9` per second of the fastest of `rounds` runs of `run`.
fn best(rounds: usize, now_ms: &impl Fn() -> f64, macs: f64, mut run: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..rounds.max(1) {
        let t = now_ms();
        run();
        best = best.min(now_ms() - t);
    }
    macs / (best.max(1e-6) * 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::available;

    fn clock() -> impl Fn() -> f64 {
        let start = std::time::Instant::now();
        move || start.elapsed().as_secs_f64() * 1e3
    }

    /// Every f32 and q8 tile this machine runs is timed to a finite, positive rate.
    #[test]
    fn every_tile_here_is_timed() {
        for kern in available() {
            let rate = f32_gmac_per_s(kern, 1, clock());
            assert!(rate.is_finite() && rate > 0.0, "{}: {rate}", kern.name);
            for qk in kern.q8 {
                let rate = q8_gmac_per_s(qk, 1, clock());
                assert!(rate.is_finite() && rate > 0.0, "{}: {rate}", qk.name);
            }
        }
    }
}
