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

use super::dynamic_quant::ActCodes;
use super::simd128::tile_with;
use super::tile::{Kernel, QKernel, QTile, TileFn};
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
    streaming: &[],
    ops: &ROW_OPS,
    quant: Some(&QUANT),
    // int8, its weight operand 0..=127: onnxruntime's reduce_range codes (-64..=64) fit but
    // for a rare spilled code (`PackedQ::channel`); wider codes take the int16 tile
    q8: &[&QUANT, &super::simd128::QUANT],
};

/// The kernel where the engine lowers `relaxed_dot` through `pmaddubsw` (x86 without AVX-VNNI,
/// [`dot_is_pmaddubsw`]): its integer tiles take the dot product in two steps instead.
pub static KERNEL_PAIRS: Kernel = Kernel {
    quant: Some(&QUANT_PAIRS),
    q8: &[&QUANT_PAIRS, &super::simd128::QUANT],
    ..KERNEL
};

/// The same kernel where the engine's `relaxed_dot` is wrong (Node 20's V8 11.3 computes it
/// with other signedness): q4 weights take the int16 tile of `simd128`.
pub static KERNEL_INT16: Kernel = Kernel {
    quant: Some(&super::simd128::QUANT),
    q8: &[&super::simd128::QUANT],
    ..KERNEL
};

/// Whether the engine computes `i32x4.relaxed_dot_i8x16_i7x16_add` as x86's `pmaddubsw` (the
/// second operand unsigned, pairs saturated to i16), then `pmaddwd` by a vector of ones it
/// rebuilds each time, then `paddd`: five instructions, where AVX-VNNI's `vpdpbusd` or Arm's
/// `sdot` take one. Told by the relaxed semantics on operands outside their promised range:
/// 127·255 four times is 65534 there (saturated pairs), 129540 with `vpdpbusd`, −508 with
/// signed products.
pub fn dot_is_pmaddubsw() -> bool {
    let (a, b) = std::hint::black_box((i8x16_splat(127), u8x16_splat(255)));
    let d = i32x4_relaxed_dot_i8x16_i7x16_add(a, b, i32x4_splat(0));
    i32x4_extract_lane::<0>(d) == 65534
}

/// Whether the int8 tiles compute exact products here: `relaxed_dot` must give exact sums
/// when its second operand is below 128, but Node 20's V8 (11.3, relaxed-simd behind a flag)
/// gets them wrong in some register assignments, so each tile is run on a small product.
pub fn int8_dot_works() -> bool {
    QUANT_TILES.into_iter().all(tile_is_exact)
}

fn tile_is_exact(kern: &'static QKernel) -> bool {
    use super::qgemm::qgemm;
    use super::qpack::PackedQ;
    use super::quantize::QScratch;
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
    let Some(w) = PackedQ::new(kern, n, k, &q) else {
        return false;
    };
    let mut c = vec![0.0; m * n];
    qgemm(
        kern,
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

/// The int8 tile with the dot product in two steps, for engines that lower the fused one
/// through `pmaddubsw` ([`dot_is_pmaddubsw`]): `i16x8.relaxed_dot_i8x16_i7x16` (one
/// `pmaddubsw`; a pair of products, at most 2·128·127, never saturates), then
/// `i32x4.dot_i16x8` against a ones vector kept in a register (one `pmaddwd`), then the add:
/// three instructions instead of five, bit for bit the same sums (in Chromium on such a CPU,
/// q8 92–95 GOP/s against 60–77 for the fused tile; docs/performance.md).
static QUANT_PAIRS: QKernel = QKernel {
    name: "relaxed-simd int8 pairs",
    tile: qtile_pairs::<QMR>,
    tails: &[qtile_pairs::<1>],
    ..QUANT
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
/// [`QTile`]), and `c` covers `rows × cols` with stride `ldc`.
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

/// As [`qtile`], the dot in two steps ([`QUANT_PAIRS`]).
///
/// # Safety
/// As [`qtile`].
unsafe fn qtile_pairs<const R: usize>(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    // Opaque, so that it stays one register instead of a constant V8 rebuilds at each use.
    let ones = std::hint::black_box(i16x8_splat(1));
    super::simd128::qtile_with::<R, QNV, QMR>(
        t,
        (c, ldc, rows, cols),
        4 * QNR,
        |b, j| v128_load(b.add(16 * j) as *const v128),
        |x, w, d| {
            i32x4_add(
                d,
                i32x4_dot_i16x8(i16x8_relaxed_dot_i8x16_i7x16(x, w), ones),
            )
        },
        |x, y, z| f32x4_relaxed_madd(x, y, z),
    )
}

/// Every integer tile of this file (a kernel runs one of them; the tests check both).
pub(super) const QUANT_TILES: [&QKernel; 2] = [&QUANT, &QUANT_PAIRS];
