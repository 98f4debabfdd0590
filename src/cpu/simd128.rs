//! WebAssembly `simd128` micro-kernel: 4 rows × 8 columns, 8 v128 accumulators (V8 maps
//! v128 to 16 xmm registers, so the tile stays small enough not to spill).

use super::kernels::{store_partial, Kernel};
use std::arch::wasm32::*;

const MR: usize = 4;
const NR: usize = 8;

pub static KERNEL: Kernel = Kernel {
    name: "simd128",
    mr: MR,
    nr: NR,
    tile,
    ops: &ROW_OPS,
};

super::math::row_ops!();

/// # Safety
/// `a` holds `k*MR` floats, `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`.
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
    let mut acc = [[f32x4_splat(0.0); 2]; MR];
    for kk in 0..k {
        let bp = b.add(kk * NR);
        let b0 = v128_load(bp as *const v128);
        let b1 = v128_load(bp.add(4) as *const v128);
        let ap = a.add(kk * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = f32x4_splat(*ap.add(i));
            row[0] = f32x4_add(row[0], f32x4_mul(x, b0));
            row[1] = f32x4_add(row[1], f32x4_mul(x, b1));
        }
    }
    let mut t = [0f32; MR * NR];
    for (i, row) in acc.iter().enumerate() {
        v128_store(t.as_mut_ptr().add(i * NR) as *mut v128, row[0]);
        v128_store(t.as_mut_ptr().add(i * NR + 4) as *mut v128, row[1]);
    }
    store_partial(&t, NR, c, ldc, rows, cols, accumulate);
}
