//! Portable micro-kernel; the compiler vectorises it for the baseline ISA.

use super::kernels::{store_partial, Kernel};

const MR: usize = 4;
const NR: usize = 8;

pub static KERNEL: Kernel = Kernel {
    name: "scalar",
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
    let a = std::slice::from_raw_parts(a, k * MR);
    let b = std::slice::from_raw_parts(b, k * NR);
    let mut acc = [0f32; MR * NR];
    for (ak, bk) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        for i in 0..MR {
            for j in 0..NR {
                acc[i * NR + j] += ak[i] * bk[j];
            }
        }
    }
    store_partial(&acc, NR, c, ldc, rows, cols, accumulate);
}
