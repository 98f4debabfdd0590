//! AArch64 NEON micro-kernel: 8 rows × 8 columns, 16 q-register accumulators.

use super::tile::{store_partial, Kernel};
use std::arch::aarch64::*;

const MR: usize = 8;
const NR: usize = 8;

pub static KERNEL: Kernel = Kernel {
    name: "neon",
    mr: MR,
    nr: NR,
    tile,
    tails: &[],
    streaming: &[],
    ops: &ROW_OPS,
    quant: None,
    q8: &[],
};

super::math::row_ops!(f32);

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
    let mut acc = [[vdupq_n_f32(0.0); 2]; MR];
    for kk in 0..k {
        let bp = b.add(kk * NR);
        let b0 = vld1q_f32(bp);
        let b1 = vld1q_f32(bp.add(4));
        let ap = a.add(kk * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = vdupq_n_f32(*ap.add(i));
            row[0] = vfmaq_f32(row[0], x, b0);
            row[1] = vfmaq_f32(row[1], x, b1);
        }
    }
    let mut t = [0f32; MR * NR];
    for (i, row) in acc.iter().enumerate() {
        vst1q_f32(t.as_mut_ptr().add(i * NR), row[0]);
        vst1q_f32(t.as_mut_ptr().add(i * NR + 4), row[1]);
    }
    store_partial(&t, NR, c, ldc, rows, cols, accumulate);
}
