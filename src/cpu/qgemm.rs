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
//! and add the exact integer corrections ([`ChannelTerms`](super::tile::ChannelTerms)):
//! `Σ (a* + e)(w* + d) = Σ a*w* + d·Σ a* + e·(Σ w* + k·d)` with `e = c − za`, `d = cw − zw`.

use super::dynamic_quant::{params_of_range, ActCodes, Q8Row};
use super::pool::{self, SharedMut};
use super::tile::{tile_for, ChannelTerms, QKernel, QTile, StripBlock};
use crate::model::{BlockQuant, ChannelQuant};

/// Weights packed for a [`QKernel`]: per panel of `nr` columns and per block, steps of
/// `nr × group` codes (`group` consecutive k feed one 32-bit lane of the dot product), and
/// beside them `nr` scales then, unless the zero point is shared, `nr` zero-point terms.
#[derive(Debug, Default, Clone)]
pub struct PackedQ {
    pub n: usize,
    pub k: usize,
    nr: usize,
    group: usize,
    block: usize,
    codes: Vec<u8>,
    scales: Vec<f32>,
    /// Every block's zero point, when they are all this integer.
    zero: Option<i32>,
    /// Per-channel (q8) weights: per panel `nr` offsets `d` then `nr` terms `t`
    /// ([`ChannelTerms`]); empty for block-quantized ones.
    ints: Vec<i32>,
    /// Per-channel weights whose column spans more codes than the tile's weight operand hold
    /// (onnxruntime's reduce_range int8 codes are -64..=64, one more than relaxed-simd's
    /// 0..=127): the few codes outside it are stored clamped, and what was cut is added to the
    /// tile's integer sums ([`ChannelTerms::extra`]). Panel p's are `spills[spill_at[p]..spill_at[p + 1]]`.
    spills: Vec<Spill>,
    spill_at: Vec<usize>,
}

/// A weight code cut to fit the tile's operand: `rest` = the code less the stored one, at
/// column `col` of its panel and depth `k`.
#[derive(Debug, Clone, Copy)]
struct Spill {
    col: usize,
    k: usize,
    rest: i32,
}

/// At most one spilled code per this many weights (else the next tile takes the matrix): the
/// spills' scalar products then cost a fraction of the integer tile.
const SPILL_RARITY: usize = 128;

impl PackedQ {
    /// Packs `q`, the codes of a `[n, k]` matrix, or `None` when its blocks do not split into
    /// whole groups or a block's dot product could overflow int32 (then the f32 path runs it).
    pub fn new(kern: &QKernel, n: usize, k: usize, q: &BlockQuant) -> Option<Self> {
        let (nr, block, group) = (kern.nr, q.block, kern.group);
        let blocks = q.blocks(k);
        let max_code = q.codes.iter().copied().max().unwrap_or(0) as u64;
        let zero = q.zero_points.first().copied().filter(|&z| {
            (0.0..128.0).contains(&z) && z.fract() == 0.0 && q.zero_points.iter().all(|&y| y == z)
        });
        let a_sum = block as u64 * a_max(kern) as u64;
        let sane = kern.blocks
            && block > 0
            && block.is_multiple_of(group)
            && q.codes.len() == n * k
            && q.scales.len() == n * blocks
            && q.zero_points.len() == n * blocks
            && max_code < 128
            && a_sum * max_code <= i32::MAX as u64 // the int32 sums `Σ qa·qw`
            && a_sum <= 1 << 24; // A's code sums travel as exact f32
        if !sane {
            return None;
        }
        let zero = zero.map(|z| z as i32);
        let per_block = if zero.is_some() { nr } else { 2 * nr };
        let panels = n.div_ceil(nr);
        let mut codes = vec![0u8; panels * blocks * block * nr];
        let mut scales = vec![0f32; panels * blocks * per_block];
        for j in 0..n {
            let (p, jj) = (j / nr, j % nr);
            for b in 0..blocks {
                let chunk = (p * blocks + b) * block * nr;
                for kk in b * block..k.min((b + 1) * block) {
                    let t = kk - b * block;
                    codes[chunk + (t / group) * group * nr + jj * group + t % group] =
                        q.codes[j * k + kk];
                }
                let s = (p * blocks + b) * per_block;
                let sw = q.scales[j * blocks + b];
                scales[s + jj] = sw;
                if zero.is_none() {
                    scales[s + nr + jj] = q.zero_points[j * blocks + b] * sw;
                }
            }
        }
        Some(PackedQ {
            n,
            k,
            nr,
            group,
            block,
            codes,
            scales,
            zero,
            ints: Vec::new(),
            spills: Vec::new(),
            spill_at: Vec::new(),
        })
    }

    /// Packs the per-channel 8-bit codes of a `[n, k]` matrix as one block of all k (padded to
    /// whole groups with zero codes), each column shifted into the kernel's weight range and
    /// the rare codes still outside it spilled (see [`PackedQ::spills`]); `None` when there
    /// would be more than one spill per [`SPILL_RARITY`] weights or the int32 sums could
    /// overflow.
    pub fn channel(kern: &QKernel, n: usize, k: usize, q: &ChannelQuant) -> Option<Self> {
        let (nr, group, (lo, hi)) = (kern.nr, kern.group, kern.w_range);
        let block = k.div_ceil(group) * group;
        let sane = k > 0
            && q.codes.len() == n * k
            && q.scales.len() == n
            && q.zero_points.len() == n
            && block as u64 * 255 * 255 <= i32::MAX as u64; // any true Σ (qa − za)(qw − zw)
        if !sane {
            return None;
        }
        let panels = n.div_ceil(nr);
        let mut codes = vec![0u8; panels * block * nr];
        let mut scales = vec![0f32; panels * nr];
        let mut ints = vec![0i32; panels * 2 * nr];
        let (mut spills, mut spill_at) = (Vec::new(), vec![0]);
        for j in 0..n {
            let row = || (j * k..(j + 1) * k).map(|i| q.code(i));
            let zw = q.zero_points[j];
            let cw = column_shift(row(), zw, (lo, hi));
            let (p, jj) = (j / nr, j % nr);
            let mut sum = 0i32;
            for (kk, c) in row().enumerate() {
                let w = c - cw;
                let stored = w.clamp(lo, hi);
                if stored != w {
                    spills.push(Spill {
                        col: jj,
                        k: kk,
                        rest: w - stored,
                    });
                }
                sum += w;
                codes[p * block * nr + (kk / group) * group * nr + jj * group + kk % group] =
                    stored as u8;
            }
            if spills.len() * SPILL_RARITY > n * k {
                return None;
            }
            scales[p * nr + jj] = q.scales[j];
            let d = cw - zw;
            ints[p * 2 * nr + jj] = d;
            ints[p * 2 * nr + nr + jj] = sum.wrapping_add((k as i32).wrapping_mul(d));
            if jj == nr - 1 || j == n - 1 {
                spill_at.push(spills.len());
            }
        }
        Some(PackedQ {
            n,
            k,
            nr,
            group,
            block,
            codes,
            scales,
            zero: None,
            ints,
            spills,
            spill_at,
        })
    }

    /// How many weight codes did not fit the tile's operand (per-channel weights).
    pub fn spills(&self) -> usize {
        self.spills.len()
    }

    pub fn bytes(&self) -> usize {
        self.codes.len()
            + self.scales.len() * 4
            + self.ints.len() * 4
            + self.spills.len() * std::mem::size_of::<Spill>()
    }

    /// Whether these are per-channel (q8) weights, for [`qgemm_channel`].
    pub fn is_channel(&self) -> bool {
        !self.ints.is_empty()
    }

    fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }
}

/// The shift `cw` of a column's codes into the operand range `lo..=hi` (stored `c − cw`): the
/// one nearest its zero point when every code fits, else the one that leaves the fewest codes
/// outside.
fn column_shift(codes: impl Iterator<Item = i32> + Clone, zw: i32, (lo, hi): (i32, i32)) -> i32 {
    let (min, max) = codes
        .clone()
        .fold((i32::MAX, i32::MIN), |(a, b), c| (a.min(c), b.max(c)));
    if max - min <= hi - lo {
        return zw.clamp(max - hi, min - lo);
    }
    let mut count = vec![0usize; (max - min + 1) as usize];
    codes.for_each(|c| count[(c - min) as usize] += 1);
    let width = (hi - lo + 1) as usize;
    let mut inside: usize = count[..width].iter().sum();
    let (mut best, mut best_start) = (inside, 0);
    for start in 1..=count.len() - width {
        inside = inside + count[start + width - 1] - count[start - 1];
        if inside > best {
            (best, best_start) = (inside, start);
        }
    }
    min + best_start as i32 - lo
}

/// A quantized per call: `mr`-row strips laid out like the weight panels.
#[derive(Debug, Default)]
pub struct QScratch {
    codes: Vec<u8>,
    scales: Vec<f32>,
    /// Per-channel mode: per strip `mr` code sums then `mr` offsets ([`ChannelTerms`]).
    ints: Vec<i32>,
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

/// Quantizes A per row group as `DynamicQuantizeLinear` into one block of `block` k per strip
/// (`[strip][step][mr][group]`, codes as the kernel's [`ActCodes`]), with per strip `mr` scales
/// (then `mr` unused floats, so strips keep the block layout's stride) and `mr` code sums then
/// `mr` offsets in `ints`. The range and the codes are the kernel's ISA row ops
/// ([`q8_range`](super::dynamic_quant::q8_range), [`q8_codes`](super::dynamic_quant::q8_codes)); a step of one row is 4 bytes (`group · a_bytes`).
#[allow(clippy::too_many_arguments)]
fn quantize_a_channel(
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

/// The largest activation code: int8 or int16, symmetric.
fn a_max(kern: &QKernel) -> i32 {
    if kern.a_bytes == 1 {
        127
    } else {
        32767
    }
}

/// Quantizes each row's blocks (symmetric, scale = max|a| / a_max) into strips
/// `[strip][block][step][mr][group]` of little-endian int8/int16 codes, with per strip and block
/// `mr` scales then the `mr` sums of their codes (zero-padded rows and k give zero codes).
fn quantize_a(
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
    use crate::cpu::dynamic_quant::{dynamic_code, dynamic_params};
    use crate::cpu::kernels::{available, quant_reference};

    /// Both relaxed-simd int8 tiles (where they compute exactly), whichever one this engine's
    /// kernel runs.
    fn add_relaxed_tiles(v: &mut Vec<&'static QKernel>) {
        #[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
        if crate::cpu::relaxed::int8_dot_works() {
            for k in crate::cpu::relaxed::QUANT_TILES {
                if !v.iter().any(|h| std::ptr::eq(*h, k)) {
                    v.push(k);
                }
            }
        }
        let _ = v;
    }

    /// Every quantized tile here, and the portable int8 one.
    fn quant_kernels() -> Vec<&'static QKernel> {
        let mut v: Vec<_> = available().into_iter().filter_map(|k| k.quant).collect();
        add_relaxed_tiles(&mut v);
        v.extend(v.clone().into_iter().map(quant_reference));
        v.push(&crate::cpu::scalar::QUANT_I8);
        v
    }

    fn rand(len: usize, seed: u64) -> impl Iterator<Item = u64> {
        let mut s = seed.wrapping_mul(6364136223846793005) ^ 0x9E37_79B9_7F4A_7C15;
        (0..len).map(move |_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            s >> 33
        })
    }

    fn quant(n: usize, k: usize, block: usize, seed: u64) -> BlockQuant {
        let blocks = k.div_ceil(block);
        BlockQuant {
            block,
            codes: rand(n * k, seed).map(|r| (r % 16) as u8).collect(),
            scales: rand(n * blocks, seed + 1)
                .map(|r| (r % 1000) as f32 * 1e-4 + 1e-3)
                .collect(),
            zero_points: rand(n * blocks, seed + 2)
                .map(|r| (r % 16) as f32)
                .collect(),
        }
    }

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

    /// Every q8 tile here, and the portable references of every activation layout.
    fn q8_kernels() -> Vec<&'static QKernel> {
        let mut v: Vec<&'static QKernel> = Vec::new();
        for k in available() {
            v.extend(k.q8.iter().copied());
        }
        add_relaxed_tiles(&mut v);
        use crate::cpu::scalar::{QUANT as I16, QUANT_I8, QUANT_U8S8};
        v.extend([&I16, &QUANT_I8, &QUANT_U8S8]);
        v
    }

    /// Random per-channel codes in `lo..=hi` with zero points in `zp`.
    fn channel_quant(
        n: usize,
        k: usize,
        lo: i32,
        hi: i32,
        zp: (i32, i32),
        seed: u64,
    ) -> ChannelQuant {
        let span = (hi - lo + 1) as u64;
        let zspan = (zp.1 - zp.0 + 1) as u64;
        ChannelQuant {
            signed: lo < 0,
            codes: rand(n * k, seed)
                .map(|r| (lo + (r % span) as i32) as u8)
                .collect(),
            scales: rand(n, seed + 1)
                .map(|r| (r % 1000) as f32 * 1e-5 + 1e-4)
                .collect(),
            zero_points: rand(n, seed + 2)
                .map(|r| zp.0 + (r % zspan) as i32)
                .collect(),
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

    /// Every ISA's q8 row ops give `dynamic_params` / `dynamic_code` bit for bit: ties, values
    /// on and past the clamp bounds, signed zeros, tiny values, every code layout, ragged k.
    #[test]
    fn q8_row_ops_match_dynamic_quantize_linear() {
        let mut all = q8_kernels();
        all.extend(available().iter().filter_map(|k| k.quant));
        for qk in all {
            for k in [1usize, 3, 16, 17, 64, 101, 384] {
                for case in 0..4 {
                    let mut x: Vec<f32> = rand(k, (k + case) as u64)
                        .map(|r| (r % 20001) as f32 / 3000.0 - 3.0 * case as f32)
                        .collect();
                    if case == 3 {
                        x.iter_mut().for_each(|v| *v = v.abs() * 1e-3);
                    }
                    let (scale, zp) = dynamic_params(x.iter().copied());
                    // SAFETY: `q8_kernels` and `available` list kernels this machine runs.
                    let range = unsafe { (qk.ops.q8_range)(&x, (0.0, 0.0)) };
                    assert_eq!(params_of_range(range), (scale, zp), "{} range", qk.name);
                    // ties, bounds, far outside, zeros and a denormal
                    for (i, v) in [
                        2.5 * scale,
                        -3.5 * scale,
                        255.0 * scale,
                        1e6,
                        -1e6,
                        -0.0,
                        0.0,
                        1e-40,
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        if i < k {
                            x[(i * 7) % k] = v;
                        }
                    }
                    for codes in [ActCodes::Uint8, ActCodes::Int8, ActCodes::Int16] {
                        let c = codes.offset(zp);
                        let row = Q8Row {
                            scale,
                            zp,
                            c,
                            codes,
                        };
                        let mut out = vec![0u32; k.div_ceil(2)];
                        // SAFETY: as above.
                        let sum = unsafe { (qk.ops.q8_codes)(&x, row, &mut out) };
                        let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_ne_bytes()).collect();
                        let want: Vec<i32> =
                            x.iter().map(|&v| dynamic_code(v, scale, zp) - c).collect();
                        assert_eq!(sum, want.iter().sum::<i32>(), "{} {codes:?} sum", qk.name);
                        for (i, &w) in want.iter().enumerate() {
                            let got = match codes {
                                ActCodes::Uint8 => bytes[i] as i32,
                                ActCodes::Int8 => bytes[i] as i8 as i32,
                                ActCodes::Int16 => {
                                    i16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]) as i32
                                }
                            };
                            assert_eq!(got, w, "{} {codes:?} k={k} x[{i}] = {}", qk.name, x[i]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn q8_packing_spills_only_rare_codes() {
        let qk = &crate::cpu::scalar::QUANT_I8; // weights 0..=127
        let (n, k) = (3, 256);
        let mut q = channel_quant(n, k, -64, 63, (0, 0), 1);
        assert_eq!(PackedQ::channel(qk, n, k, &q).unwrap().spills(), 0);
        q.codes[k + 20] = 64; // column 1 now spans -64..=64
        q.codes[k + 21] = (-64i8) as u8;
        q.codes[k + 22] = (-64i8) as u8;
        assert_eq!(PackedQ::channel(qk, n, k, &q).unwrap().spills(), 1);
        let wide = &crate::cpu::scalar::QUANT; // weights 0..=255
        assert_eq!(PackedQ::channel(wide, n, k, &q).unwrap().spills(), 0);
        // full-range codes would spill about half of every column
        let q = channel_quant(n, k, -128, 127, (0, 0), 1);
        assert!(PackedQ::channel(qk, n, k, &q).is_none());
        assert!(PackedQ::channel(wide, n, k, &q).is_some());
        assert!(
            PackedQ::new(&crate::cpu::scalar::QUANT_U8S8, 3, 16, &quant(3, 16, 16, 1)).is_none()
        );
    }

    #[test]
    fn unpackable_quantizations_are_refused() {
        for qk in quant_kernels() {
            let mut q = quant(4, 27, 9, 1);
            assert!(PackedQ::new(qk, 4, 27, &q).is_none(), "block of 9");
            q = quant(1, 4096, 4096, 1);
            q.codes[0] = 127;
            let overflows = 4096 * 127 * a_max(qk) as i64 > i32::MAX as i64;
            assert_eq!(
                PackedQ::new(qk, 1, 4096, &q).is_none(),
                overflows,
                "int32 range"
            );
            q = quant(4, 32, 32, 1);
            q.codes[5] = 200;
            assert!(PackedQ::new(qk, 4, 32, &q).is_none(), "8-bit code");
            q = quant(4, 32, 32, 1);
            q.scales.pop();
            assert!(PackedQ::new(qk, 4, 32, &q).is_none(), "short scales");
        }
    }
}
