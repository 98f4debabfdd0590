//! Quantizes A for the integer tiles on each call, into `mr`-row strips laid out like the
//! weight panels ([`QScratch`]): per row and weight block, symmetric, to int8 or int16 for
//! block-quantized (q4) weights; per row group as `DynamicQuantizeLinear` for q8 weights.

use super::dynamic_quant::{params_of_range, Q8Row};
use super::pool::{self, SharedMut};
use super::tile::{QKernel, StripBlock};

/// A quantized per call: `mr`-row strips laid out like the weight panels.
#[derive(Debug, Default)]
pub struct QScratch {
    pub(super) codes: Vec<u8>,
    pub(super) scales: Vec<f32>,
    /// Per-channel mode: per strip `mr` code sums then `mr` offsets
    /// ([`ChannelTerms`](super::tile::ChannelTerms)).
    pub(super) ints: Vec<i32>,
    /// Per-channel mode: each row's (scale, zero point).
    params: Vec<(f32, i32)>,
}

/// Rows `start..end` of A quantized as one tensor, with the scale and zero point of rows
/// `start..start + real` (the rest are padding, quantized alike and never read back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowGroup {
    pub start: usize,
    pub end: usize,
    pub real: usize,
}

/// Quantizes A per row group as `DynamicQuantizeLinear` into one block of `block` k per strip
/// (`[strip][step][mr][group]`, codes as the kernel's
/// [`ActCodes`](super::dynamic_quant::ActCodes)), with per strip `mr` scales (then `mr` unused
/// floats, so strips keep the block layout's stride) and `mr` code sums then `mr` offsets in
/// `ints`. The range and the codes are the kernel's ISA row ops
/// ([`q8_range`](super::dynamic_quant::q8_range), [`q8_codes`](super::dynamic_quant::q8_codes));
/// a step of one row is 4 bytes (`group · a_bytes`).
#[allow(clippy::too_many_arguments)]
pub(super) fn quantize_a_channel(
    dst: &mut QScratch,
    kern: &QKernel,
    a: &[f32],
    lda: usize,
    m: usize,
    k: usize,
    block: usize,
    groups: &[RowGroup],
) {
    let (mr, group, width) = (kern.mr, kern.group, kern.a_bytes);
    assert_eq!(group * width, 4, "a step of one row is one 32-bit lane");
    let strips = m.div_ceil(mr);
    let QScratch {
        codes,
        scales,
        ints,
        params,
    } = dst;
    params.clear();
    for g in groups {
        assert!(
            g.start == params.len() && g.real <= g.end - g.start,
            "row groups"
        );
        let range = (g.start..g.start + g.real).fold((0.0, 0.0), |r, row| {
            // SAFETY: the kernel's ISA runs on this machine (it was selected for it).
            unsafe { (kern.ops.q8_range)(&a[row * lda..row * lda + k], r) }
        });
        params.resize(g.end, params_of_range(range));
    }
    assert_eq!(params.len(), m, "row groups cover every row");
    codes.clear();
    codes.resize(strips * block * mr * width, 0);
    scales.clear();
    scales.resize(strips * 2 * mr, 0.0);
    ints.clear();
    ints.resize(strips * 2 * mr, 0);
    let strip_codes = block * mr * width;
    let steps = block / group;
    let params = &*params;
    let (codes, scales, ints) = (
        SharedMut(codes.as_mut_ptr()),
        SharedMut(scales.as_mut_ptr()),
        SharedMut(ints.as_mut_ptr()),
    );
    let pieces = pool::pieces(strips.div_ceil(8));
    pool::run(pieces, &|piece, _| {
        let mut row_codes = vec![0u32; steps];
        for s in piece * strips / pieces..(piece + 1) * strips / pieces {
            // SAFETY: strip s's codes, scales and ints lie inside the buffers sized above and
            // belong to this piece alone.
            let (chunk, scales, ints) = unsafe {
                (
                    std::slice::from_raw_parts_mut(
                        codes.get().add(s * strip_codes) as *mut [u8; 4],
                        steps * mr,
                    ),
                    std::slice::from_raw_parts_mut(scales.get().add(s * 2 * mr), mr),
                    std::slice::from_raw_parts_mut(ints.get().add(s * 2 * mr), 2 * mr),
                )
            };
            for i in 0..mr.min(m - s * mr) {
                let r = s * mr + i;
                let (scale, zp) = params[r];
                let c = kern.q8_a.offset(zp);
                let row = Q8Row {
                    scale,
                    zp,
                    c,
                    codes: kern.q8_a,
                };
                // codes past k (to the whole last step) stay zero
                row_codes[steps - 1] = 0;
                // SAFETY: the kernel's ISA runs on this machine; `row_codes` holds k codes.
                ints[i] =
                    unsafe { (kern.ops.q8_codes)(&a[r * lda..r * lda + k], row, &mut row_codes) };
                for (step, &w) in row_codes.iter().enumerate() {
                    chunk[step * mr + i] = w.to_ne_bytes();
                }
                scales[i] = scale;
                ints[mr + i] = c - zp;
            }
        }
    });
}

/// The largest activation code: int8 or int16, symmetric.
pub(super) fn a_max(kern: &QKernel) -> i32 {
    if kern.a_bytes == 1 {
        127
    } else {
        32767
    }
}

/// Quantizes each row's blocks (symmetric, scale = max|a| / a_max) into strips
/// `[strip][block][step][mr][group]` of little-endian int8/int16 codes, with per strip and block
/// `mr` scales then the `mr` sums of their codes (zero-padded rows and k give zero codes).
pub(super) fn quantize_a(
    dst: &mut QScratch,
    kern: &QKernel,
    a: &[f32],
    lda: usize,
    m: usize,
    k: usize,
    block: usize,
) {
    let (mr, width) = (kern.mr, kern.a_bytes);
    assert!(
        mr <= MAX_MR,
        "quantized tiles are at most {MAX_MR} rows high"
    );
    let (strips, blocks) = (m.div_ceil(mr), k.div_ceil(block));
    let top = a_max(kern) as f32;
    let QScratch { codes, scales, .. } = dst;
    codes.clear();
    codes.resize(strips * blocks * block * mr * width, 0);
    scales.clear();
    scales.resize(strips * blocks * 2 * mr, 0.0);
    let strip_codes = blocks * block * mr * width;
    let (codes, scales) = (
        SharedMut(codes.as_mut_ptr()),
        SharedMut(scales.as_mut_ptr()),
    );
    let pieces = pool::pieces(strips.div_ceil(8));
    pool::run(pieces, &|piece, _| {
        let (mut amax, mut inv, mut sums) = ([0f32; MAX_MR], [0f32; MAX_MR], [0i32; MAX_MR]);
        for s in piece * strips / pieces..(piece + 1) * strips / pieces {
            // SAFETY: strip s's codes and scales lie inside the buffers sized above and
            // belong to this piece alone.
            let (codes, scales) = unsafe {
                (
                    std::slice::from_raw_parts_mut(codes.get().add(s * strip_codes), strip_codes),
                    std::slice::from_raw_parts_mut(
                        scales.get().add(s * blocks * 2 * mr),
                        blocks * 2 * mr,
                    ),
                )
            };
            let rows = mr.min(m - s * mr);
            for b in 0..blocks {
                let (k0, len) = (b * block, block.min(k - b * block));
                for i in 0..rows {
                    let at = (s * mr + i) * lda + k0;
                    amax[i] = abs_max(&a[at..at + len]);
                    inv[i] = if amax[i] > 0.0 { top / amax[i] } else { 0.0 };
                }
                let chunk = &mut codes[b * block * mr * width..(b + 1) * block * mr * width];
                sums.fill(0);
                if rows == mr && len == block {
                    let first = s * mr * lda + k0;
                    assert!(a.len() >= first + (mr - 1) * lda + block);
                    // SAFETY: the assert bounds the strip's rows; `chunk`, `inv` and `sums`
                    // have the lengths the kernel's layout needs.
                    unsafe {
                        (kern.quantize)(
                            kern,
                            StripBlock {
                                chunk: chunk.as_mut_ptr(),
                                a: a[first..].as_ptr(),
                                lda,
                                inv: inv.as_ptr(),
                                block,
                                sums: sums.as_mut_ptr(),
                            },
                        )
                    };
                } else {
                    for i in 0..rows {
                        let at = (s * mr + i) * lda + k0;
                        sums[i] = quantize_row(kern, chunk, &a[at..at + len], inv[i], i);
                    }
                }
                let sc = b * 2 * mr;
                for i in 0..rows {
                    scales[sc + i] = amax[i] / top;
                    scales[sc + mr + i] = sums[i] as f32;
                }
            }
        }
    });
}

/// The tallest quantized tile.
const MAX_MR: usize = 16;

/// max |x|, in independent lanes so that it vectorises.
fn abs_max(x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = x.chunks_exact(8);
    let tail = chunks.remainder().iter().fold(0f32, |m, v| m.max(v.abs()));
    for c in chunks {
        for (m, v) in acc.iter_mut().zip(c) {
            let v = v.abs();
            *m = if v > *m { v } else { *m };
        }
    }
    acc.iter().fold(tail, |m, &v| m.max(v))
}

/// The portable [`QuantizeFn`](super::tile::QuantizeFn): one row at a time.
///
/// # Safety
/// `s` holds `mr` rows of `block` floats, room for the strip block's codes, and `mr` values of
/// `inv` and `sums`.
pub unsafe fn quantize_rows(kern: &QKernel, s: StripBlock) {
    let (chunk, a, lda, inv, block, sums) = (s.chunk, s.a, s.lda, s.inv, s.block, s.sums);
    let chunk = std::slice::from_raw_parts_mut(chunk, block * kern.mr * kern.a_bytes);
    for i in 0..kern.mr {
        let row = std::slice::from_raw_parts(a.add(i * lda), block);
        *sums.add(i) += quantize_row(kern, chunk, row, *inv.add(i), i);
    }
}

/// Writes row `i`'s codes of one block into its strip chunk; returns their sum.
fn quantize_row(kern: &QKernel, chunk: &mut [u8], x: &[f32], inv: f32, i: usize) -> i32 {
    let (mr, group, width) = (kern.mr, kern.group, kern.a_bytes);
    let mut sum = 0i32;
    for (g, xs) in x.chunks(group).enumerate() {
        let base = (g * group * mr + i * group) * width;
        let out = &mut chunk[base..base + xs.len() * width];
        for (o, &v) in out.chunks_exact_mut(width).zip(xs) {
            let q = (v * inv).round_ties_even() as i32;
            sum += q;
            o.copy_from_slice(&(q as i16).to_le_bytes()[..width]);
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::quant_fixtures::{quant_kernels, rand};

    /// The ISA quantizers write the codes and sums of the portable one, bit for bit.
    #[test]
    fn every_quantizer_matches_the_portable_one() {
        #[cfg_attr(not(target_arch = "wasm32"), allow(unused_mut))]
        let mut kernels = quant_kernels();
        // The int8 quantizer also where the int8 tile is not selected (Node 20), on its layout.
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        {
            use crate::cpu::simd128::quantize_int8;
            let i8 = &crate::cpu::scalar::QUANT_I8;
            for (mr, quantize) in [
                (1, quantize_int8::<1> as super::super::tile::QuantizeFn),
                (2, quantize_int8::<2>),
                (4, quantize_int8::<4>),
                (7, quantize_int8::<7>),
            ] {
                kernels.push(Box::leak(Box::new(QKernel {
                    mr,
                    quantize,
                    ..*i8
                })));
            }
        }
        for qk in kernels {
            let portable = QKernel {
                quantize: quantize_rows,
                ..*qk
            };
            for &(m, k, block) in &[(8usize, 64usize, 32usize), (13, 100, 32), (4, 24, 8)] {
                let lda = k + 5;
                let mut a: Vec<f32> = rand(m * lda, m as u64)
                    .map(|r| (r % 20001) as f32 / 700.0 - 14.0)
                    .collect();
                a[3] = 0.5 * 127.0 / 14.0; // a tie once scaled, in some blocks
                a[lda..lda + k].fill(0.0); // an all-zero row
                let (mut got, mut want) = (QScratch::default(), QScratch::default());
                quantize_a(&mut got, qk, &a, lda, m, k, block);
                quantize_a(&mut want, &portable, &a, lda, m, k, block);
                assert_eq!(got.codes, want.codes, "{} m={m} k={k}", qk.name);
                assert_eq!(got.scales, want.scales, "{} m={m} k={k}", qk.name);
            }
        }
    }
}
