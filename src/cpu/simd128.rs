//! WebAssembly `simd128` micro-kernel: 4 rows × 8 columns. V8 gives wasm 15 allocatable xmm
//! registers (xmm15 is its scratch) and, without FMA, each multiply-add needs a temporary:
//! 4x8 measured fastest (5x8, 6x8, 4x12, 3x16 spill or lose to it, `examples/gemm_bench.rs`).

use super::kernels::{store_partial, Kernel, QKernel, QTile};
use std::arch::wasm32::*;

const MR: usize = 4;
const NV: usize = 2;

pub static KERNEL: Kernel = Kernel {
    name: "simd128",
    mr: MR,
    nr: 4 * NV,
    tile,
    ops: &ROW_OPS,
    quant: Some(&QUANT),
};

/// Integer tile with int16 activations: `i32x4.dot_i16x8_s` takes 8 products per instruction
/// (an f32 multiply-add 4), and int16 rounding keeps logits within 1e-3 of f32.
pub(super) static QUANT: QKernel = QKernel {
    name: "simd128 int16",
    mr: MR,
    nr: 4 * NV,
    group: 2,
    a_bytes: 2,
    tile: qtile,
};

super::math::row_ops!();

/// # Safety
/// As [`tile_with`].
#[allow(clippy::too_many_arguments)]
unsafe fn tile(
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
    tile_with::<MR, NV>(k, a, b, c, ldc, rows, cols, accumulate, mul_add)
}

/// `C[rows×cols] (+)= A·B` for one `MR × 4·NV` tile, with `madd(a, b, c) = a·b + c`.
///
/// # Safety
/// `a` holds `k*MR` floats, `b` holds `k*4*NV`, and `c` covers `rows × cols` with stride `ldc`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) unsafe fn tile_with<const MR: usize, const NV: usize>(
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
        a = a.add(MR);
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
/// `t` points at a full strip and panel of `t.blocks` blocks (see `qgemm.rs`), and `c` covers
/// `rows × cols` with stride `ldc`.
unsafe fn qtile(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    let (mut a, mut b) = (t.a, t.b);
    let mut acc = [[f32x4_splat(0.0); NV]; MR];
    for blk in 0..t.blocks {
        let mut dot = [[i32x4_splat(0); NV]; MR];
        for _ in 0..t.steps {
            let w: [v128; NV] = std::array::from_fn(|j| u16x8_load_extend_u8x8(b.add(8 * j)));
            for (i, d) in dot.iter_mut().enumerate() {
                let x = v128_load32_splat(a.add(4 * i) as *const u32);
                for (dj, &wj) in d.iter_mut().zip(&w) {
                    *dj = i32x4_add(*dj, i32x4_dot_i16x8(x, wj));
                }
            }
            a = a.add(4 * MR);
            b = b.add(8 * NV);
        }
        let (sa, sb) = (t.a_scales.add(blk * 2 * MR), t.b_scales.add(blk * 8 * NV));
        for (i, (row, d)) in acc.iter_mut().zip(&dot).enumerate() {
            let (s, z) = (f32x4_splat(*sa.add(i)), f32x4_splat(*sa.add(MR + i)));
            for (j, (r, &dj)) in row.iter_mut().zip(d).enumerate() {
                let sw = v128_load(sb.add(4 * j) as *const v128);
                let zw = v128_load(sb.add(4 * NV + 4 * j) as *const v128);
                let scaled = f32x4_mul(f32x4_convert_i32x4(dj), f32x4_mul(s, sw));
                *r = f32x4_sub(f32x4_add(*r, scaled), f32x4_mul(z, zw));
            }
        }
    }
    store_tile(&acc, c, ldc, rows, cols);
}

/// Writes the valid `rows × cols` corner of a 4x8 tile of f32 accumulators to C.
///
/// # Safety
/// `c` covers `rows × cols` with stride `ldc`.
pub(super) unsafe fn store_tile(
    acc: &[[v128; NV]; MR],
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
) {
    let mut out = [0f32; MR * 4 * NV];
    for (i, row) in acc.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            v128_store(out.as_mut_ptr().add(i * 4 * NV + 4 * j) as *mut v128, v);
        }
    }
    store_partial(&out, 4 * NV, c, ldc, rows, cols, false);
}
