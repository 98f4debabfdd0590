//! AVX2+FMA micro-kernel: 6 rows × 16 columns, 12 ymm accumulators; and a q8 tile.

use super::dynamic_quant::ActCodes;
use super::tile::{store_partial, Kernel, QKernel, QTile};
use std::arch::x86_64::*;

const MR: usize = 6;
const NR: usize = 16;

pub static KERNEL: Kernel = Kernel {
    name: "avx2",
    mr: MR,
    nr: NR,
    tile: tile::<MR>,
    tails: &[tile::<1>, tile::<2>, tile::<3>, tile::<4>, tile::<5>],
    streaming: &[],
    ops: &ROW_OPS,
    quant: None,
    q8: &[&Q8],
};

const QMR: usize = 4;
const QNR: usize = 16;

/// The q8 tile: `vpmaddubsw` multiplies uint8 activations by int8 weights and adds pairs into
/// int16, which saturates unless `|w| ≤ 64` (`2·255·64 < 2^15`: onnxruntime's reduce_range
/// weights); `vpmaddwd` by ones widens the pairs into the int32 sums. 4 rows × 16 columns, and
/// tiles of fewer rows for a short last strip.
pub(super) static Q8: QKernel = QKernel {
    name: "avx2 u8s8",
    mr: QMR,
    nr: QNR,
    group: 4,
    a_bytes: 1,
    tile: q8_tile::<QMR>,
    tails: &[q8_tile::<1>, q8_tile::<2>, q8_tile::<3>],
    quantize: super::quantize::quantize_rows,
    blocks: false,
    q8_a: ActCodes::Uint8,
    ops: &ROW_OPS,
    w_range: (-64, 64),
};

/// The q8 tile of `R ≤ QMR` rows of a strip packed `QMR` high.
///
/// # Safety
/// The CPU supports AVX2; `t` is a per-channel tile (see `qgemm.rs`) packed for [`Q8`], and `c`
/// covers `rows × cols` with stride `ldc`, `rows ≤ R`.
#[target_feature(enable = "avx2")]
unsafe fn q8_tile<const R: usize>(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    let Some(ch) = t.channel else {
        return; // `blocks: false`: block-quantized weights are never packed for this tile
    };
    let ones = _mm256_set1_epi16(1);
    let mut acc = [[_mm256_setzero_si256(); 2]; R];
    let (mut a, mut b) = (t.a, t.b);
    for _ in 0..t.steps {
        let w0 = _mm256_loadu_si256(b as *const __m256i);
        let w1 = _mm256_loadu_si256(b.add(32) as *const __m256i);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm256_set1_epi32((a.add(4 * i) as *const i32).read_unaligned());
            let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(x, w0), ones);
            let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(x, w1), ones);
            row[0] = _mm256_add_epi32(row[0], p0);
            row[1] = _mm256_add_epi32(row[1], p1);
        }
        a = a.add(4 * QMR);
        b = b.add(4 * QNR);
    }
    let full = rows == R && cols == QNR;
    let mut out = [0f32; QMR * QNR];
    for (i, row) in acc.iter().enumerate() {
        let (sum, e) = (
            _mm256_set1_epi32(*ch.a.add(i)),
            _mm256_set1_epi32(*ch.a.add(QMR + i)),
        );
        let sa = _mm256_set1_ps(*t.a_scales.add(i));
        for (v, &dot) in row.iter().enumerate() {
            let d = _mm256_loadu_si256(ch.b.add(8 * v) as *const __m256i);
            let tj = _mm256_loadu_si256(ch.b.add(QNR + 8 * v) as *const __m256i);
            let fix = _mm256_add_epi32(_mm256_mullo_epi32(d, sum), _mm256_mullo_epi32(e, tj));
            let mut total = _mm256_add_epi32(dot, fix);
            if !ch.extra.is_null() {
                let x = _mm256_loadu_si256(ch.extra.add(i * QNR + 8 * v) as *const __m256i);
                total = _mm256_add_epi32(total, x);
            }
            let total = _mm256_cvtepi32_ps(total);
            let sw = _mm256_loadu_ps(t.b_scales.add(8 * v));
            let r = _mm256_mul_ps(total, _mm256_mul_ps(sa, sw));
            let dst = if full {
                c.add(i * ldc + 8 * v)
            } else {
                out.as_mut_ptr().add(i * QNR + 8 * v)
            };
            _mm256_storeu_ps(dst, r);
        }
    }
    if !full {
        store_partial(&out, QNR, c, ldc, rows, cols, false);
    }
}

super::math::row_ops!(f32, "avx2,fma");

/// # Safety
/// The CPU supports AVX2 and FMA (checked by `kernels::available`); `a` holds `k*MR` floats,
/// `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`, `rows ≤ R` (the first `R`
/// rows of a strip packed `MR` high: a short last strip computes no padding).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
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
    let mut acc = [[_mm256_setzero_ps(); 2]; R];
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
    if rows == R && cols == NR {
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
