//! AVX2+FMA micro-kernel: 6 rows × 16 columns, 12 ymm accumulators.

use super::kernels::{store_partial, Kernel};
use std::arch::x86_64::*;

const MR: usize = 6;
const NR: usize = 16;

pub static KERNEL: Kernel = Kernel {
    name: "avx2",
    mr: MR,
    nr: NR,
    tile,
    tails: &[],
    ops: &ROW_OPS,
    quant: None,
    q8: &[],
};

super::math::row_ops!(f32, "avx2,fma");

/// # Safety
/// The CPU supports AVX2 and FMA (checked by `kernels::available`); `a` holds `k*MR` floats,
/// `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
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
    let mut acc = [[_mm256_setzero_ps(); 2]; MR];
    for kk in 0..k {
        let bp = b.add(kk * NR);
        let b0 = _mm256_loadu_ps(bp);
        let b1 = _mm256_loadu_ps(bp.add(8));
        let ap = a.add(kk * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm256_broadcast_ss(&*ap.add(i));
            row[0] = _mm256_fmadd_ps(x, b0, row[0]);
            row[1] = _mm256_fmadd_ps(x, b1, row[1]);
        }
    }
    if rows == MR && cols == NR {
        for (i, row) in acc.iter().enumerate() {
            let dst = c.add(i * ldc);
            let (mut v0, mut v1) = (row[0], row[1]);
            if accumulate {
                v0 = _mm256_add_ps(v0, _mm256_loadu_ps(dst));
                v1 = _mm256_add_ps(v1, _mm256_loadu_ps(dst.add(8)));
            }
            _mm256_storeu_ps(dst, v0);
            _mm256_storeu_ps(dst.add(8), v1);
        }
    } else {
        let mut t = [0f32; MR * NR];
        for (i, row) in acc.iter().enumerate() {
            _mm256_storeu_ps(t.as_mut_ptr().add(i * NR), row[0]);
            _mm256_storeu_ps(t.as_mut_ptr().add(i * NR + 8), row[1]);
        }
        store_partial(&t, NR, c, ldc, rows, cols, accumulate);
    }
}
