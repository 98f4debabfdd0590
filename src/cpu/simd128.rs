//! WebAssembly `simd128` micro-kernel: 4 rows × 8 columns. V8 gives wasm 15 allocatable xmm
//! registers (xmm15 is its scratch) and, without FMA, each multiply-add needs a temporary:
//! 4x8 is the fastest (5x8, 6x8, 4x12, 3x16 spill or lose to it, `examples/gemm_bench.rs`;
//! docs/performance.md).

use super::dynamic_quant::ActCodes;
use super::tile::{store_partial, ChannelTerms, Kernel, QKernel, QTile, StripBlock};
use std::arch::wasm32::*;

const MR: usize = 4;
const NV: usize = 2;

pub static KERNEL: Kernel = Kernel {
    name: "simd128",
    mr: MR,
    nr: 4 * NV,
    tile: tile::<MR>,
    tails: &[tile::<1>, tile::<2>, tile::<3>],
    streaming: &[],
    ops: &ROW_OPS,
    quant: Some(&QUANT),
    q8: &[&QUANT],
};

/// Integer tile with int16 activations: `i32x4.dot_i16x8_s` takes 8 products per instruction
/// (an f32 multiply-add 4), and int16 rounding keeps logits within 1e-3 of f32.
pub(super) static QUANT: QKernel = QKernel {
    name: "simd128 int16",
    mr: MR,
    nr: 4 * NV,
    group: 2,
    a_bytes: 2,
    tile: qtile::<MR>,
    tails: &[qtile::<1>, qtile::<2>, qtile::<3>],
    quantize: quantize_int16,
    blocks: true,
    q8_a: ActCodes::Int16,
    ops: &ROW_OPS,
    w_range: (0, 255),
};

super::math::row_ops!(F32x4);

/// Defines a [`Lanes`](super::math::Lanes) type over `f32x4` whose `madd(a, b, c)` is
/// `$madd(a, b, c)`: mul + add here, `relaxed_madd` in the relaxed-simd kernel.
macro_rules! f32x4_lanes {
    ($name:ident, $madd:expr) => {
        #[derive(Clone, Copy)]
        pub(super) struct $name(core::arch::wasm32::v128);

        impl $crate::cpu::math::Lanes for $name {
            const WIDTH: usize = 4;
            #[inline(always)]
            fn splat(x: f32) -> Self {
                Self(f32x4_splat(x))
            }
            #[inline(always)]
            fn load(s: &[f32]) -> Self {
                assert!(s.len() >= 4);
                // SAFETY: four floats, checked above (unaligned loads are allowed).
                Self(unsafe { v128_load(s.as_ptr() as *const v128) })
            }
            #[inline(always)]
            fn store(self, s: &mut [f32]) {
                assert!(s.len() >= 4);
                // SAFETY: as in `load`.
                unsafe { v128_store(s.as_mut_ptr() as *mut v128, self.0) }
            }
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                Self(f32x4_add(self.0, b.0))
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                Self(f32x4_sub(self.0, b.0))
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                Self(f32x4_mul(self.0, b.0))
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                Self(f32x4_div(self.0, b.0))
            }
            #[inline(always)]
            fn madd(self, b: Self, c: Self) -> Self {
                let madd: fn(v128, v128, v128) -> v128 = $madd;
                Self(madd(self.0, b.0, c.0))
            }
            #[inline(always)]
            fn min(self, b: Self) -> Self {
                Self(f32x4_pmin(self.0, b.0))
            }
            #[inline(always)]
            fn max(self, b: Self) -> Self {
                Self(f32x4_pmax(self.0, b.0))
            }
            #[inline(always)]
            fn sub_bits_shl23(self, bias: Self) -> Self {
                Self(i32x4_shl(i32x4_sub(self.0, bias.0), 23))
            }
            #[inline(always)]
            fn sum_lanes(self) -> f32 {
                f32x4_extract_lane::<0>($crate::cpu::simd128::reduce(self.0, |a, b| {
                    f32x4_add(a, b)
                }))
            }
            #[inline(always)]
            fn max_lanes(self) -> f32 {
                f32x4_extract_lane::<0>($crate::cpu::simd128::reduce(self.0, |a, b| {
                    f32x4_pmax(a, b)
                }))
            }
        }
    };
}
#[cfg_attr(not(target_feature = "relaxed-simd"), allow(unused_imports))]
pub(super) use f32x4_lanes;

f32x4_lanes!(F32x4, |a, b, c| f32x4_add(f32x4_mul(a, b), c));

/// The tile of `R ≤ MR` rows (`MR`: the full one; fewer: a short last strip).
///
/// # Safety
/// As [`tile_with`], for a strip packed `MR` wide.
#[allow(clippy::too_many_arguments)]
unsafe fn tile<const R: usize>(
    k: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let mul_add = |x, y, z| f32x4_add(z, f32x4_mul(x, y));
    tile_with::<R, NV, MR>(k, a, b, c, ldc, rows, cols, accumulate, mul_add)
}

/// `C[rows×cols] (+)= A·B` for one `MR × 4·NV` tile, with `madd(a, b, c) = a·b + c`; A's strip
/// holds `AS ≥ MR` rows per k (a tile for the short last strip reads only its first rows).
///
/// # Safety
/// `a` holds `k*AS` floats, `b` holds `k*4*NV`, and `c` covers `rows × cols` with stride `ldc`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn tile_with<const MR: usize, const NV: usize, const AS: usize>(
    k: usize,
    mut a: *const f32,
    mut b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
    madd: impl Fn(v128, v128, v128) -> v128,
) {
    let mut acc = [[f32x4_splat(0.0); NV]; MR];
    for _ in 0..k {
        let bv: [v128; NV] = std::array::from_fn(|j| v128_load(b.add(4 * j) as *const v128));
        for (i, row) in acc.iter_mut().enumerate() {
            let x = v128_load32_splat(a.add(i) as *const u32);
            for (r, &bj) in row.iter_mut().zip(&bv) {
                *r = madd(x, bj, *r);
            }
        }
        a = a.add(AS);
        b = b.add(4 * NV);
    }
    if rows == MR && cols == 4 * NV {
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                let dst = c.add(i * ldc + 4 * j) as *mut v128;
                let v = if accumulate {
                    f32x4_add(v, v128_load(dst))
                } else {
                    v
                };
                v128_store(dst, v);
            }
        }
    } else {
        // Big enough for every tile shape this file instantiates (checked at compile time).
        const { assert!(MR * NV * 4 <= 64) };
        let mut t = [0f32; 64];
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                v128_store(t.as_mut_ptr().add(i * 4 * NV + 4 * j) as *mut v128, v);
            }
        }
        store_partial(&t, 4 * NV, c, ldc, rows, cols, accumulate);
    }
}

/// # Safety
/// `t` points at a full strip (`R` of its rows are read) and panel of `t.blocks` blocks (see
/// [`QTile`]), and `c` covers `rows × cols` with stride `ldc`.
unsafe fn qtile<const R: usize>(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    qtile_with::<R, NV, MR>(
        t,
        (c, ldc, rows, cols),
        8 * NV,
        |b, j| u16x8_load_extend_u8x8(b.add(8 * j)),
        |x, w, d| i32x4_add(d, i32x4_dot_i16x8(x, w)),
        |x, y, z| f32x4_add(z, f32x4_mul(x, y)),
    )
}

/// One quantized `R` × `4·V` tile, the body the int16 and int8 tiles share: per block, `steps`
/// steps of `dot(x, w, acc)` (a row's 4 A bytes splat against `load_w(b, j)`, the weights of
/// column vector `j`; `b` advances `b_step` bytes a step), then the block's scaling. `out` is
/// C's `(pointer, ldc, rows, cols)`. The strip was packed `AS ≥ R` rows high (a tile for a short
/// last strip reads its first rows).
///
/// # Safety
/// As [`qtile`], with `load_w` reading inside a step's `b_step` bytes.
#[inline(always)]
pub(super) unsafe fn qtile_with<const R: usize, const V: usize, const AS: usize>(
    t: QTile,
    out: (*mut f32, usize, usize, usize),
    b_step: usize,
    load_w: impl Fn(*const u8, usize) -> v128 + Copy,
    dot: impl Fn(v128, v128, v128) -> v128 + Copy,
    madd: impl Fn(v128, v128, v128) -> v128 + Copy,
) {
    let (c, ldc, rows, cols) = out;
    let acc = match (t.channel, t.zero) {
        (Some(ch), _) => qtile_channel::<R, V, AS>(&t, ch, b_step, load_w, dot),
        (None, Some(_)) => qtile_sums::<R, V, AS, true>(&t, b_step, load_w, dot, madd),
        (None, None) => qtile_sums::<R, V, AS, false>(&t, b_step, load_w, dot, madd),
    };
    store_tile(&acc, c, ldc, rows, cols);
}

/// The int32 sums of one block: `steps` steps of `dot`, advancing `a` and `b`.
#[inline(always)]
unsafe fn block_dot<const R: usize, const V: usize, const AS: usize>(
    a: &mut *const u8,
    b: &mut *const u8,
    steps: usize,
    b_step: usize,
    load_w: impl Fn(*const u8, usize) -> v128,
    dot: impl Fn(v128, v128, v128) -> v128,
) -> [[v128; V]; R] {
    let mut sums = [[i32x4_splat(0); V]; R];
    for _ in 0..steps {
        let w: [v128; V] = std::array::from_fn(|j| load_w(*b, j));
        for (i, d) in sums.iter_mut().enumerate() {
            let x = v128_load32_splat(a.add(4 * i) as *const u32);
            for (dj, &wj) in d.iter_mut().zip(&w) {
                *dj = dot(x, wj, *dj);
            }
        }
        *a = a.add(4 * AS);
        *b = b.add(b_step);
    }
    sums
}

/// A per-channel (q8) tile: one block of exact int32 sums, corrected and rescaled as
/// [`ChannelTerms`] says: `C = f32(dot + d·sum + e·t) · (sa·sw)`.
#[inline(always)]
unsafe fn qtile_channel<const R: usize, const V: usize, const AS: usize>(
    t: &QTile,
    ch: ChannelTerms,
    b_step: usize,
    load_w: impl Fn(*const u8, usize) -> v128,
    dot: impl Fn(v128, v128, v128) -> v128,
) -> [[v128; V]; R] {
    let (mut a, mut b) = (t.a, t.b);
    let sums = block_dot::<R, V, AS>(&mut a, &mut b, t.steps, b_step, load_w, dot);
    let mut acc = [[f32x4_splat(0.0); V]; R];
    for (i, (row, d)) in acc.iter_mut().zip(&sums).enumerate() {
        let (sum, e) = (i32x4_splat(*ch.a.add(i)), i32x4_splat(*ch.a.add(AS + i)));
        let sa = f32x4_splat(*t.a_scales.add(i));
        for (j, (r, &dj)) in row.iter_mut().zip(d).enumerate() {
            let off = v128_load(ch.b.add(4 * j) as *const v128);
            let tj = v128_load(ch.b.add(4 * V + 4 * j) as *const v128);
            let mut total = i32x4_add(dj, i32x4_add(i32x4_mul(off, sum), i32x4_mul(e, tj)));
            if !ch.extra.is_null() {
                let x = v128_load(ch.extra.add(i * 4 * V + 4 * j) as *const v128);
                total = i32x4_add(total, x);
            }
            let sw = v128_load(t.b_scales.add(4 * j) as *const v128);
            *r = f32x4_mul(f32x4_convert_i32x4(total), f32x4_mul(sa, sw));
        }
    }
    acc
}

/// The f32 accumulators of [`qtile_with`], with the zero point shared (`SHARED`, subtracted
/// from the block sums) or per block.
#[inline(always)]
unsafe fn qtile_sums<const R: usize, const V: usize, const AS: usize, const SHARED: bool>(
    t: &QTile,
    b_step: usize,
    load_w: impl Fn(*const u8, usize) -> v128,
    dot: impl Fn(v128, v128, v128) -> v128,
    madd: impl Fn(v128, v128, v128) -> v128,
) -> [[v128; V]; R] {
    let (mut a, mut b) = (t.a, t.b);
    let mut acc = [[f32x4_splat(0.0); V]; R];
    for blk in 0..t.blocks {
        let sums = block_dot::<R, V, AS>(&mut a, &mut b, t.steps, b_step, &load_w, &dot);
        add_scaled_block::<R, V, AS, SHARED>(&mut acc, &sums, t, blk, &madd);
    }
    acc
}

/// Adds one weight block's int32 sums, scaled, to a quantized tile's f32 accumulators:
/// `acc += dot·(sa·sw) − (sa·Σqa)·(zp·sw)`, or `acc += (dot − zp·Σqa)·(sa·sw)` when the zero
/// point is `SHARED`, with `madd(a, b, c) = a·b + c`. The subtraction is in f32 (exact below
/// 2^24): in int32, V8's scalar float-to-int conversion of `Σqa` made the tile slower
/// (docs/performance.md).
///
/// # Safety
/// `t.a_scales` and `t.b_scales` hold the per-block scales of the tile's strip and panel (see
/// [`QTile`]).
#[inline(always)]
unsafe fn add_scaled_block<const R: usize, const V: usize, const AS: usize, const SHARED: bool>(
    acc: &mut [[v128; V]; R],
    dot: &[[v128; V]; R],
    t: &QTile,
    blk: usize,
    madd: impl Fn(v128, v128, v128) -> v128,
) {
    let per_block = if SHARED { 4 * V } else { 8 * V };
    let (sa, sb) = (
        t.a_scales.add(blk * 2 * AS),
        t.b_scales.add(blk * per_block),
    );
    for (i, (row, d)) in acc.iter_mut().zip(dot).enumerate() {
        let (scale, code_sum) = (*sa.add(i), *sa.add(AS + i));
        let s = f32x4_splat(scale);
        for (j, (r, &dj)) in row.iter_mut().zip(d).enumerate() {
            let sw = v128_load(sb.add(4 * j) as *const v128);
            let dj = f32x4_convert_i32x4(dj);
            *r = if SHARED {
                let zero_sum = f32x4_splat(t.zero.unwrap_or(0) as f32 * code_sum);
                madd(f32x4_sub(dj, zero_sum), f32x4_mul(s, sw), *r)
            } else {
                let zw = v128_load(sb.add(4 * V + 4 * j) as *const v128);
                let scaled = madd(dj, f32x4_mul(s, sw), *r);
                madd(f32x4_splat(-(scale * code_sum)), zw, scaled)
            };
        }
    }
}

/// The strip's `R` rows, 4 k from `a`, scaled and rounded to nearest even; adds them to `sums`.
#[inline(always)]
unsafe fn quantize_4k<const R: usize>(
    a: *const f32,
    lda: usize,
    inv: &[v128; R],
    sums: &mut [v128; R],
) -> [v128; R] {
    std::array::from_fn(|i| {
        let x = f32x4_mul(v128_load(a.add(i * lda) as *const v128), inv[i]);
        let q = i32x4_trunc_sat_f32x4(f32x4_nearest(x));
        sums[i] = i32x4_add(sums[i], q);
        q
    })
}

/// [`QuantizeFn`](super::tile::QuantizeFn) for int8 codes in groups of 4 (the relaxed-simd
/// tile, `R` rows): each 4 rows × 4 k of a step narrow to one vector, 2 rows to half of one.
///
/// # Safety
/// As [`quantize_rows`](super::quantize::quantize_rows), for a kernel with `mr = R`, `group = 4`,
/// `a_bytes = 1` and `block % 4 == 0`.
#[cfg_attr(not(target_feature = "relaxed-simd"), allow(dead_code))] // tests use it everywhere
pub(super) unsafe fn quantize_int8<const R: usize>(kern: &QKernel, s: StripBlock) {
    let (chunk, a, lda, inv, block, sums) = (s.chunk, s.a, s.lda, s.inv, s.block, s.sums);
    debug_assert!(kern.mr == R && kern.group == 4 && kern.a_bytes == 1);
    debug_assert!(block.is_multiple_of(4));
    let inv: [v128; R] = std::array::from_fn(|i| f32x4_splat(*inv.add(i)));
    let mut acc = [i32x4_splat(0); R];
    let mut out = chunk;
    for step in 0..block / 4 {
        let q = quantize_4k(a.add(4 * step), lda, &inv, &mut acc);
        let mut i = 0;
        while i + 4 <= R {
            let lo = i16x8_narrow_i32x4(q[i], q[i + 1]);
            let hi = i16x8_narrow_i32x4(q[i + 2], q[i + 3]);
            v128_store(out as *mut v128, i8x16_narrow_i16x8(lo, hi));
            (i, out) = (i + 4, out.add(16));
        }
        if i + 2 <= R {
            let two = i16x8_narrow_i32x4(q[i], q[i + 1]);
            v128_store64_lane::<0>(i8x16_narrow_i16x8(two, two), out as *mut u64);
            (i, out) = (i + 2, out.add(8));
        }
        if i < R {
            let one = i16x8_narrow_i32x4(q[i], q[i]);
            v128_store32_lane::<0>(i8x16_narrow_i16x8(one, one), out as *mut u32);
            out = out.add(4);
        }
    }
    add_lanes(&acc, sums);
}

/// [`QuantizeFn`](super::tile::QuantizeFn) for int16 codes in pairs (the int16 tile): 4 k
/// of 4 rows make two steps, the even and odd pairs of the narrowed rows.
///
/// # Safety
/// As [`quantize_rows`](super::quantize::quantize_rows), for a kernel with `mr = 4`, `group = 2`
/// and `a_bytes = 2`.
unsafe fn quantize_int16(kern: &QKernel, s: StripBlock) {
    if !s.block.is_multiple_of(4) {
        return super::quantize::quantize_rows(kern, s);
    }
    let (chunk, a, lda, inv, block, sums) = (s.chunk, s.a, s.lda, s.inv, s.block, s.sums);
    debug_assert!(kern.mr == MR && kern.group == 2 && kern.a_bytes == 2);
    let inv: [v128; MR] = std::array::from_fn(|i| f32x4_splat(*inv.add(i)));
    let mut acc = [i32x4_splat(0); MR];
    for quad in 0..block / 4 {
        let q = quantize_4k(a.add(4 * quad), lda, &inv, &mut acc);
        // rows 0-1 and 2-3 as int16; as 32-bit lanes: [r0 k01, r0 k23, r1 k01, r1 k23]
        let (lo, hi) = (
            i16x8_narrow_i32x4(q[0], q[1]),
            i16x8_narrow_i32x4(q[2], q[3]),
        );
        let out = chunk.add(32 * quad) as *mut v128;
        v128_store(out, i32x4_shuffle::<0, 2, 4, 6>(lo, hi));
        v128_store(out.add(1), i32x4_shuffle::<1, 3, 5, 7>(lo, hi));
    }
    add_lanes(&acc, sums);
}

/// `sums[i] += Σ lanes of acc[i]`.
#[inline(always)]
unsafe fn add_lanes<const R: usize>(acc: &[v128; R], sums: *mut i32) {
    for (i, &v) in acc.iter().enumerate() {
        *sums.add(i) += i32x4_extract_lane::<0>(reduce(v, |a, b| i32x4_add(a, b)));
    }
}

/// `op` over the four 32-bit lanes of `v`, in lane 0.
#[inline(always)]
pub(super) fn reduce(v: v128, op: impl Fn(v128, v128) -> v128) -> v128 {
    let pair = op(v, i32x4_shuffle::<2, 3, 0, 1>(v, v));
    op(pair, i32x4_shuffle::<1, 0, 3, 2>(pair, pair))
}

/// Writes the valid `rows × cols` corner of an `R` × `4·V` tile of f32 accumulators to C.
///
/// # Safety
/// `c` covers `rows × cols` with stride `ldc`.
#[inline(always)]
pub(super) unsafe fn store_tile<const R: usize, const V: usize>(
    acc: &[[v128; V]; R],
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
) {
    if rows == R && cols == 4 * V {
        for (i, row) in acc.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                v128_store(c.add(i * ldc + 4 * j) as *mut v128, v);
            }
        }
        return;
    }
    const { assert!(R * 4 * V <= 64) };
    let mut out = [0f32; 64];
    for (i, row) in acc.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            v128_store(out.as_mut_ptr().add(i * 4 * V + 4 * j) as *mut v128, v);
        }
    }
    store_partial(&out, 4 * V, c, ldc, rows, cols, false);
}
