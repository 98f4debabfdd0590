//! WebAssembly `simd128` micro-kernel: 4 rows × 8 columns. V8 gives wasm 15 allocatable xmm
//! registers (xmm15 is its scratch) and, without FMA, each multiply-add needs a temporary:
//! 4x8 measured fastest (5x8, 6x8, 4x12, 3x16 spill or lose to it, `examples/gemm_bench.rs`).

use super::kernels::{store_partial, Kernel};
use std::arch::wasm32::*;

const MR: usize = 4;
const NV: usize = 2;

pub static KERNEL: Kernel = Kernel {
    name: "simd128",
    mr: MR,
    nr: 4 * NV,
    tile,
    ops: &ROW_OPS,
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
