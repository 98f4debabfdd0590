//! WebAssembly `relaxed-simd` micro-kernel: the `simd128` tile body with fused multiply-add
//! (`f32x4.relaxed_madd`, an FMA where the CPU has one), 4 rows × 8 columns. LLVM hoists all
//! `MR` A splats of a step, so a tile needs MR·NV accumulators + NV B vectors + MR splats of
//! V8's 15 registers: 4x8 takes 14. In Chromium 156 (`examples/gemm_bench.rs`), 4x8, 3x12 and
//! 2x16 all run about 1.25x the plain `simd128` kernel; 5x8 (17 registers) spills and is slower
//! than `simd128`, though it is the fastest in Node 20's older V8.

use super::kernels::Kernel;
use super::simd128::tile_with;
use std::arch::wasm32::*;

const MR: usize = 4;
const NV: usize = 2;

pub static KERNEL: Kernel = Kernel {
    name: "relaxed-simd",
    mr: MR,
    nr: 4 * NV,
    tile,
    ops: &super::simd128::ROW_OPS,
};

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
    let madd = |x, y, z| f32x4_relaxed_madd(x, y, z);
    tile_with::<MR, NV>(k, a, b, c, ldc, rows, cols, accumulate, madd)
}
