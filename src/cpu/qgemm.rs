//! Integer GEMM for block-quantized weights (ONNX `MatMulNBits`): `C = A · Wᵀ` with W kept as
//! its 7-bit codes and A quantized per row and per weight block on the fly, to int8 or int16
//! as the kernel's dot product takes it. A block's int32 dot products are scaled into f32:
//! `C[i][j] = Σ_b sa[i][b]·sw[j][b]·Σ_k qa·qw − (sa[i][b]·Σ_k qa)·(zp[j][b]·sw[j][b])`,
//! which is `Σ_k a·w` with `a ≈ sa·qa` and `w = (qw − zp)·sw` exact. When every block has the
//! same integer zero point (symmetric exports), it is subtracted from the sums instead:
//! `C[i][j] = Σ_b sa·sw·(Σ_k qa·qw − zp·Σ_k qa)`, one multiply-add per block fewer, and the
//! weights carry no zero-point terms.

//!
//! Per-channel 8-bit weights (q8, ONNX `MatMulInteger`) take ONNX Runtime's arithmetic
//! instead: A is quantized per tensor (a [`RowGroup`]) to uint8 as `DynamicQuantizeLinear`
//! does, the int32 sums `Σ (qa − za)(qw − zw)` are exact, and `C = f32(sum) · (sa·sw)`.
//! Tiles take the codes shifted into their operands' ranges (`a* = qa − c`, `w* = qw − cw`)
//! and add the exact integer corrections ([`ChannelTerms`]):
//! `Σ (a* + e)(w* + d) = Σ a*w* + d·Σ a* + e·(Σ w* + k·d)` with `e = c − za`, `d = cw − zw`.
//!
//! This file runs the tiles over weights packed once ([`PackedQ`], `qpack.rs`) and A quantized
//! per call ([`QScratch`], `quantize.rs`).

use super::dynamic_quant::ActCodes;
use super::pool::{self, SharedMut};
use super::qpack::{PackedQ, Spill};
use super::quantize::{quantize_a, quantize_a_channel, QScratch, RowGroup};
use super::tile::{tile_for, ChannelTerms, QKernel, QTile};

/// `C = A · Wᵀ` for per-channel (q8) weights: each group's rows of A quantized per tensor
/// (`groups` cover `0..m` in order), exact int32 sums, `C = f32(sum) · (sa·sw)`.
#[allow(clippy::too_many_arguments)]
pub fn qgemm_channel(
    kern: &QKernel,
    m: usize,
    a: &[f32],
    lda: usize,
    w: &PackedQ,
    c: &mut [f32],
    ldc: usize,
    scratch: &mut QScratch,
    groups: &[RowGroup],
) {
    assert!(w.is_channel(), "W was not packed per channel");
    check_operands(kern, m, a, lda, w, c, ldc);
    if m == 0 || w.n == 0 {
        return;
    }
    quantize_a_channel(scratch, kern, a, lda, m, w.k, w.block, groups);
    run_tiles(kern, m, w, c, ldc, scratch);
}

fn check_operands(
    kern: &QKernel,
    m: usize,
    a: &[f32],
    lda: usize,
    w: &PackedQ,
    c: &[f32],
    ldc: usize,
) {
    assert!(
        w.nr == kern.nr && w.group == kern.group,
        "W was packed for another kernel"
    );
    assert!(
        m == 0 || (a.len() >= (m - 1) * lda + w.k && c.len() >= (m - 1) * ldc + w.n),
        "qgemm operand too short"
    );
}

/// `C = A · Wᵀ` for row-major `a` (stride `lda`) into row-major `c` (stride `ldc`).
#[allow(clippy::too_many_arguments)]
pub fn qgemm(
    kern: &QKernel,
    m: usize,
    a: &[f32],
    lda: usize,
    w: &PackedQ,
    c: &mut [f32],
    ldc: usize,
    scratch: &mut QScratch,
) {
    assert!(
        !w.is_channel(),
        "per-channel weights go through qgemm_channel"
    );
    check_operands(kern, m, a, lda, w, c, ldc);
    if m == 0 || w.n == 0 {
        return;
    }
    let k = w.k;
    quantize_a(scratch, kern, a, lda, m, k, w.block);
    run_tiles(kern, m, w, c, ldc, scratch);
}

/// Runs the tiles of `C = A·Wᵀ` over A as `quantize_a` or `quantize_a_channel` left it.
fn run_tiles(kern: &QKernel, m: usize, w: &PackedQ, c: &mut [f32], ldc: usize, scratch: &QScratch) {
    let (n, mr, nr) = (w.n, kern.mr, kern.nr);
    let (block, blocks) = (w.block, w.blocks());
    let strips = m.div_ceil(mr);
    let (a_strip, b_panel) = (blocks * block * mr * kern.a_bytes, blocks * block * nr);
    let panels = n.div_ceil(nr);
    let panel_scales = w.scales.len() / panels;
    let c_out = SharedMut(c.as_mut_ptr());
    let pieces = pool::pieces(panels);
    pool::run(pieces, &|piece, _| {
        let mut extra = vec![0i32; if w.spills.is_empty() { 0 } else { mr * nr }];
        for p in piece * panels / pieces..(piece + 1) * panels / pieces {
            let cols = nr.min(n - p * nr);
            let codes = &w.codes[p * b_panel..(p + 1) * b_panel];
            let scales = &w.scales[p * panel_scales..(p + 1) * panel_scales];
            for s in 0..strips {
                let rows = mr.min(m - s * mr);
                let a_codes = &scratch.codes[s * a_strip..(s + 1) * a_strip];
                let a_scales = &scratch.scales[s * blocks * 2 * mr..(s + 1) * blocks * 2 * mr];
                let channel = w.is_channel().then(|| ChannelTerms {
                    a: scratch.ints[s * 2 * mr..(s + 1) * 2 * mr].as_ptr(),
                    b: w.ints[p * 2 * nr..(p + 1) * 2 * nr].as_ptr(),
                    extra: match &w.spills[w.spill_at[p]..w.spill_at[p + 1]] {
                        [] => std::ptr::null(),
                        spills => {
                            spill_products(&mut extra, spills, a_codes, kern, rows);
                            extra.as_ptr()
                        }
                    },
                });
                // SAFETY: the slices above hold exactly the strip and panel the tile reads;
                // the tile writes rows < `rows` and cols < `cols` of this panel's columns of
                // C, inside `c` by the length assert and written by no other piece.
                let tile = tile_for(kern.tile, kern.tails, rows, mr);
                unsafe {
                    tile(
                        QTile {
                            blocks,
                            steps: block / kern.group,
                            a: a_codes.as_ptr(),
                            a_scales: a_scales.as_ptr(),
                            b: codes.as_ptr(),
                            b_scales: scales.as_ptr(),
                            zero: w.zero,
                            channel,
                        },
                        c_out.get().add(s * mr * ldc + p * nr),
                        ldc,
                        rows,
                        cols,
                    )
                };
            }
        }
    });
}

/// `extra[i][col] = Σ a*[i][k]·rest` over a panel's spills, for the strip's first `rows` rows
/// of A codes (`[step][mr][group]`, as [`quantize_a_channel`] stores them).
fn spill_products(extra: &mut [i32], spills: &[Spill], a: &[u8], kern: &QKernel, rows: usize) {
    let (mr, nr, group, width) = (kern.mr, kern.nr, kern.group, kern.a_bytes);
    extra.fill(0);
    for sp in spills {
        for i in 0..rows {
            let at = ((sp.k / group) * mr + i) * 4 + (sp.k % group) * width;
            let code = match kern.q8_a {
                ActCodes::Int8 => a[at] as i8 as i32,
                ActCodes::Uint8 => a[at] as i32,
                ActCodes::Int16 => i16::from_le_bytes([a[at], a[at + 1]]) as i32,
            };
            extra[i * nr + sp.col] += code * sp.rest;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::dynamic_quant::{dynamic_code, dynamic_params};
    use crate::cpu::qpack::SPILL_RARITY;
    use crate::cpu::quant_fixtures::{channel_quant, q8_kernels, quant, quant_kernels, rand};
    use crate::cpu::quantize::a_max;
    use crate::model::{BlockQuant, ChannelQuant};

    fn dequantize(q: &BlockQuant, n: usize, k: usize) -> Vec<f32> {
        let blocks = q.blocks(k);
        (0..n * k)
            .map(|i| {
                let (j, kk) = (i / k, i % k);
                let b = j * blocks + kk / q.block;
                (q.codes[i] as f32 - q.zero_points[b]) * q.scales[b]
            })
            .collect()
    }

    /// Every quantized kernel against f64 sums over the dequantized weights: the only error
    /// is A's rounding, at most half a step (max|a| / 2·a_max) per element.
    #[test]
    fn every_quantized_kernel_matches_the_dequantized_product() {
        for qk in quant_kernels() {
            for &(m, n, k, block) in &[
                (1usize, 1usize, 32usize, 32usize),
                (5, 7, 40, 16),
                (13, 33, 300, 32),
                (128, 96, 64, 32),
                (3, 70, 129, 64),
                (9, 8, 4, 4),
                (4, 8, 8, 2),
                (6, 9, 24, 8), // with 5, 3 and 1: last strips of every height below 2 and 4
            ] {
                if !block.is_multiple_of(qk.group) {
                    continue;
                }
                for zeros in 0..3 {
                    let mut q = quant(n, k, block, 7 + n as u64);
                    // per-block zero points, one shared integer (subtracted in int32), and a
                    // shared fraction (per-block arithmetic again)
                    match zeros {
                        0 => {}
                        1 => q.zero_points.fill(8.0),
                        _ => q.zero_points.fill(7.5),
                    }
                    let w = dequantize(&q, n, k);
                    let lda = k + 3;
                    let a: Vec<f32> = rand(m * lda, 3 + m as u64)
                        .map(|r| (r % 2001) as f32 / 1000.0 - 1.0)
                        .collect();
                    let packed = PackedQ::new(qk, n, k, &q).expect("packable");
                    let ldc = n + 2;
                    let mut c = vec![f32::NAN; m * ldc];
                    qgemm(
                        qk,
                        m,
                        &a,
                        lda,
                        &packed,
                        &mut c,
                        ldc,
                        &mut QScratch::default(),
                    );
                    for i in 0..m {
                        for j in 0..n {
                            let (exact, bound) = (0..k).fold((0f64, 0f64), |(s, e), kk| {
                                let (x, y) = (a[i * lda + kk] as f64, w[j * k + kk] as f64);
                                // per-element rounding bound: half a step of this block's scale
                                let b0 = kk / block * block;
                                let blk = &a[i * lda + b0..i * lda + k.min(b0 + block)];
                                let amax = blk.iter().fold(0f32, |m, v| m.max(v.abs())) as f64;
                                (s + x * y, e + amax / (2 * a_max(qk)) as f64 * y.abs())
                            });
                            let got = c[i * ldc + j] as f64;
                            assert!(
                            (got - exact).abs() <= bound * 1.01 + 1e-5,
                            "{} m={m} n={n} k={k} block={block} zeros {zeros} ({i},{j}): {got} vs {exact} (bound {bound})",
                            qk.name
                        );
                        }
                        assert!(
                            c[i * ldc + n..i * ldc + n + 2].iter().all(|x| x.is_nan()),
                            "wrote past n"
                        );
                    }
                    let z0 = q.zero_points[0];
                    let shared = z0.fract() == 0.0 && q.zero_points.iter().all(|&z| z == z0);
                    assert_eq!(packed.zero.is_some(), shared, "shared zero point found");
                    assert!(shared || zeros != 1);
                }
            }
        }
    }

    /// ONNX Runtime's arithmetic, written plainly: each group quantized by
    /// `DynamicQuantizeLinear`, `Σ (qa − za)(qw − zw)` in i64, `f32(sum) · (sa·sw)`.
    fn q8_reference(
        a: &[f32],
        lda: usize,
        k: usize,
        q: &ChannelQuant,
        groups: &[RowGroup],
    ) -> Vec<f32> {
        let n = q.scales.len();
        let mut out = Vec::new();
        for g in groups {
            let (sa, za) = dynamic_params(
                (g.start..g.start + g.real).flat_map(|r| a[r * lda..r * lda + k].iter().copied()),
            );
            for r in g.start..g.end {
                let qa: Vec<i64> = (0..k)
                    .map(|kk| dynamic_code(a[r * lda + kk], sa, za) as i64 - za as i64)
                    .collect();
                for j in 0..n {
                    let zw = q.zero_points[j] as i64;
                    let sum: i64 = (0..k)
                        .map(|kk| qa[kk] * (q.code(j * k + kk) as i64 - zw))
                        .sum();
                    assert!(sum.unsigned_abs() < 1 << 31);
                    out.push(sum as i32 as f32 * (sa * q.scales[j]));
                }
            }
        }
        out
    }

    /// The fewest codes of `q` that any shift per column leaves outside `lo..=hi`, by trying
    /// every shift.
    fn fewest_spills(q: &ChannelQuant, n: usize, k: usize, (lo, hi): (i32, i32)) -> usize {
        (0..n)
            .map(|j| {
                let col: Vec<i32> = (j * k..(j + 1) * k).map(|i| q.code(i)).collect();
                (-400..400)
                    .map(|cw| {
                        col.iter()
                            .filter(|&&c| !(lo..=hi).contains(&(c - cw)))
                            .count()
                    })
                    .min()
                    .unwrap()
            })
            .sum()
    }

    /// Every q8 tile gives ONNX Runtime's result bit for bit: exact int32 sums, the same
    /// f32 rescale. Weights of every storage: reduce_range int8 (symmetric, ±64), uint8 with
    /// zero points, full-range int8; row groups with padding rows; ragged m, n and k.
    #[test]
    fn every_q8_kernel_matches_the_integer_reference() {
        let forms: [(i32, i32, (i32, i32)); 5] = [
            (-64, 64, (0, 0)),
            (-64, 63, (0, 0)),
            (0, 255, (0, 255)),
            (-128, 127, (-20, 20)),
            (-70, 70, (-3, 3)),
        ];
        let names: Vec<_> = q8_kernels().iter().map(|k| k.name).collect();
        // scripts/test.sh checks that Chromium's relaxed-simd run covered the int8 tile
        eprintln!("q8 tiles checked: {}", names.join(", "));
        for qk in q8_kernels() {
            let mut spilled = 0;
            for &(m, n, k) in &[
                (1usize, 1usize, 1usize),
                (5, 7, 40),
                (13, 33, 301),
                (40, 96, 384),
                (3, 70, 129),
                (9, 17, 6),
                (14, 20, 64), // with 13, 5 and 1: short last strips of 12-, 8- and 4-row tiles
            ] {
                for (f, &(lo, hi, zp)) in forms.iter().enumerate() {
                    let q = channel_quant(n, k, lo, hi, zp, 11 + f as u64 + n as u64);
                    let spills = fewest_spills(&q, n, k, qk.w_range);
                    let Some(packed) = PackedQ::channel(qk, n, k, &q) else {
                        assert!(
                            spills * SPILL_RARITY > n * k,
                            "{} refused codes {lo}..={hi}",
                            qk.name
                        );
                        continue;
                    };
                    assert_eq!(packed.spills(), spills, "{} codes {lo}..={hi}", qk.name);
                    spilled += spills;
                    let lda = k + 3;
                    let mut a: Vec<f32> = rand(m * lda, 5 + m as u64)
                        .map(|r| (r % 4001) as f32 / 1000.0 - 1.5)
                        .collect();
                    // A row of padding with values far outside its group's range.
                    a[(m - 1) * lda..(m - 1) * lda + k].fill(50.0);
                    let groups: Vec<RowGroup> = match m {
                        1 => vec![RowGroup {
                            start: 0,
                            end: 1,
                            real: 1,
                        }],
                        _ => vec![
                            RowGroup {
                                start: 0,
                                end: m / 2,
                                real: m / 2,
                            },
                            RowGroup {
                                start: m / 2,
                                end: m,
                                real: m - m / 2 - 1,
                            },
                        ],
                    };
                    let want = q8_reference(&a, lda, k, &q, &groups);
                    let ldc = n + 2;
                    let mut c = vec![f32::NAN; m * ldc];
                    let mut scratch = QScratch::default();
                    qgemm_channel(qk, m, &a, lda, &packed, &mut c, ldc, &mut scratch, &groups);
                    for i in 0..m {
                        for j in 0..n {
                            assert_eq!(
                                c[i * ldc + j].to_bits(),
                                want[i * n + j].to_bits(),
                                "{} m={m} n={n} k={k} codes {lo}..={hi} ({i},{j}): {} vs {}",
                                qk.name,
                                c[i * ldc + j],
                                want[i * n + j]
                            );
                        }
                        assert!(c[i * ldc + n..i * ldc + n + 2].iter().all(|x| x.is_nan()));
                    }
                }
            }
            if qk.w_range.1 - qk.w_range.0 < 128 {
                assert!(spilled > 0, "{}: no spilled codes checked", qk.name);
            }
        }
    }
}
