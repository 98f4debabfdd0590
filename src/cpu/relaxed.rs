//! WebAssembly `relaxed-simd` micro-kernel: the `simd128` tile body with fused multiply-add
//! (`f32x4.relaxed_madd`, an FMA where the CPU has one), 6 rows × 8 columns. A tile needs
//! MR·NV accumulators + NV B vectors + the A splats live at once of V8's 15 registers.
//!
//! 6x8 (12 + 2 + 1) fits only when LLVM emits each row's splat next to its two FMAs, which it
//! does with loop strength reduction off (`-C llvm-args=-disable-lsr`, which also folds the
//! tile's constant address offsets into its loads). The package's builds pass that flag with
//! `--cfg webert_no_lsr` (`scripts/wasm_flags.sh`). With LSR on, LLVM groups the FMAs by B
//! vector, all six splats are live, and 6x8 spills (slower than 4x8), so such builds keep
//! 4x8. Without LSR, 6x8 beats 4x8 at 128 tokens and ties at 15 (`examples/gemm_bench.rs`
//! in Chromium; figures in docs/performance.md).

use super::kernels::{ActCodes, Kernel, QKernel, QTile, TileFn};
use super::simd128::tile_with;
use std::arch::wasm32::*;

super::math::row_ops!(FusedF32x4);
super::simd128::f32x4_lanes!(FusedF32x4, |a, b, c| f32x4_relaxed_madd(a, b, c));

#[cfg(webert_no_lsr)]
const MR: usize = 6;
#[cfg(not(webert_no_lsr))]
const MR: usize = 4;
const NV: usize = 2;

pub static KERNEL: Kernel = Kernel {
    name: "relaxed-simd",
    mr: MR,
    nr: 4 * NV,
    tile: tile::<MR>,
    tails: TAILS,
    ops: &ROW_OPS,
    quant: Some(&QUANT),
    // int8 where a weight's columns each span at most 128 codes (reduce_range exports),
    // else the int16 tile
    q8: &[&QUANT, &super::simd128::QUANT],
};

/// The same kernel where the engine's `relaxed_dot` is wrong (Node 20's V8 11.3 computes it
/// with other signedness): q4 weights take the int16 tile of `simd128`.
pub static KERNEL_INT16: Kernel = Kernel {
    quant: Some(&super::simd128::QUANT),
    q8: &[&super::simd128::QUANT],
    ..KERNEL
};

/// Whether the int8 tile computes exact products here: `relaxed_dot` must give exact sums
/// when its second operand is below 128, but Node 20's V8 (11.3, relaxed-simd behind a flag)
/// gets them wrong in some register assignments, so the real tile is run on a small product.
pub fn int8_dot_works() -> bool {
    use super::qgemm::{qgemm, PackedQ, QScratch};
    let (m, n, k) = (QMR, QNR, 64);
    let q = crate::model::BlockQuant {
        block: 32,
        codes: (0..n * k).map(|i| (i * 7 % 16) as u8).collect(),
        scales: vec![1.0; n * 2],
        zero_points: vec![0.0; n * 2],
    };
    // Integer activations within int8: quantization is exact, so the product must be too.
    let a: Vec<f32> = (0..m * k)
        .map(|i| match i % 32 {
            0 => 127.0, // every block's max: scale 1
            _ => (i * 37 % 255) as f32 - 127.0,
        })
        .collect();
    let Some(w) = PackedQ::new(&QUANT, n, k, &q) else {
        return false;
    };
    let mut c = vec![0.0; m * n];
    qgemm(
        &QUANT,
        m,
        std::hint::black_box(&a),
        k,
        &w,
        &mut c,
        n,
        &mut QScratch::default(),
    );
    (0..m * n).all(|ij| {
        let (i, j) = (ij / n, ij % n);
        let want: f32 = (0..k)
            .map(|kk| a[i * k + kk] * q.codes[j * k + kk] as f32)
            .sum();
        c[ij] == want
    })
}

/// The integer tile: 2 rows × 16 columns. In Chromium it beats 4x8 (which spills: 8 int32 dot
/// and 8 f32 accumulators) and 3x8, 3x12, 2x12, 2x24, 1x16 and 1x32 (`examples/gemm_bench.rs`;
/// figures in docs/performance.md).
const QMR: usize = 2;
const QNV: usize = 4;
const QNR: usize = 4 * QNV;

/// Integer tile: `i32x4.relaxed_dot_i8x16_i7x16_add` (one `vpdpbusd` where the CPU has
/// AVX-VNNI) takes 16 products per instruction, four times an f32 FMA.
static QUANT: QKernel = QKernel {
    name: "relaxed-simd int8",
    mr: QMR,
    nr: QNR,
    group: 4,
    a_bytes: 1,
    tile: qtile::<QMR>,
    tails: &[qtile::<1>],
    quantize: super::simd128::quantize_int8::<QMR>,
    blocks: true,
    q8_a: ActCodes::Int8,
    ops: &ROW_OPS,
    w_range: (0, 127),
};

#[cfg(webert_no_lsr)]
const TAILS: &[TileFn] = &[tile::<1>, tile::<2>, tile::<3>, tile::<4>, tile::<5>];
#[cfg(not(webert_no_lsr))]
const TAILS: &[TileFn] = &[tile::<1>, tile::<2>, tile::<3>];

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
    let madd = |x, y, z| f32x4_relaxed_madd(x, y, z);
    tile_with::<R, NV, MR>(k, a, b, c, ldc, rows, cols, accumulate, madd)
}

/// # Safety
/// `t` points at a full strip (`R` of its rows are read) and panel of `t.blocks` blocks (see
/// `qgemm.rs`), and `c` covers
/// `rows × cols` with stride `ldc`.
unsafe fn qtile<const R: usize>(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    super::simd128::qtile_with::<R, QNV, QMR>(
        t,
        (c, ldc, rows, cols),
        4 * QNR,
        |b, j| v128_load(b.add(16 * j) as *const v128),
        |x, w, d| i32x4_relaxed_dot_i8x16_i7x16_add(x, w, d),
        |x, y, z| f32x4_relaxed_madd(x, y, z),
    )
}
