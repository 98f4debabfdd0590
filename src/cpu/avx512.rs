//! AVX-512F micro-kernel: 12 rows × 32 columns, 24 zmm accumulators.

use super::kernels::{store_partial, Kernel};
use std::arch::x86_64::*;

const MR: usize = 12;
const NR: usize = 32;

pub static KERNEL: Kernel = Kernel {
    name: "avx512",
    mr: MR,
    nr: NR,
    tile,
    tails: &[],
    ops: &ROW_OPS,
    quant: None,
    q8: &[],
};

super::math::row_ops!(f32, "avx512f,avx2,fma");

/// # Safety
/// The CPU supports AVX-512F (checked by `kernels::available`); `a` holds `k*MR` floats,
/// `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
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
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    for kk in 0..k {
        let bp = b.add(kk * NR);
        let b0 = _mm512_loadu_ps(bp);
        let b1 = _mm512_loadu_ps(bp.add(16));
        let ap = a.add(kk * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*ap.add(i));
            row[0] = _mm512_fmadd_ps(x, b0, row[0]);
            row[1] = _mm512_fmadd_ps(x, b1, row[1]);
        }
    }
    if rows == MR && cols == NR {
        for (i, row) in acc.iter().enumerate() {
            let dst = c.add(i * ldc);
            let (mut v0, mut v1) = (row[0], row[1]);
            if accumulate {
                v0 = _mm512_add_ps(v0, _mm512_loadu_ps(dst));
                v1 = _mm512_add_ps(v1, _mm512_loadu_ps(dst.add(16)));
            }
            _mm512_storeu_ps(dst, v0);
            _mm512_storeu_ps(dst.add(16), v1);
        }
    } else {
        let mut t = [0f32; MR * NR];
        for (i, row) in acc.iter().enumerate() {
            _mm512_storeu_ps(t.as_mut_ptr().add(i * NR), row[0]);
            _mm512_storeu_ps(t.as_mut_ptr().add(i * NR + 16), row[1]);
        }
        store_partial(&t, NR, c, ldc, rows, cols, accumulate);
    }
}
