//! AVX-512F micro-kernel: 12 rows × 32 columns, 24 zmm accumulators; and a q8 tile with
//! AVX-512 VNNI.

use super::dynamic_quant::ActCodes;
use super::tile::{store_partial, Kernel, QKernel, QTile};
use std::arch::x86_64::*;

const MR: usize = 12;
const NR: usize = 32;

pub static KERNEL: Kernel = Kernel {
    name: "avx512",
    mr: MR,
    nr: NR,
    tile: tile::<MR, false>,
    tails: &[
        tile::<1, false>,
        tile::<2, false>,
        tile::<3, false>,
        tile::<4, false>,
        tile::<5, false>,
        tile::<6, false>,
        tile::<7, false>,
        tile::<8, false>,
        tile::<9, false>,
        tile::<10, false>,
        tile::<11, false>,
    ],
    // One to three rows take the 4-row tile (the strip's padding rows are zeros, never
    // stored): the stream sets the pace, and the shorter tiles kept up with it less well
    // (MiniLM f32 at 3 tokens 1.69–1.87 → 1.37–1.52 ms; docs/performance.md).
    streaming: &[
        tile::<4, true>,
        tile::<4, true>,
        tile::<4, true>,
        tile::<4, true>,
        tile::<5, true>,
        tile::<6, true>,
        tile::<7, true>,
        tile::<8, true>,
        tile::<9, true>,
        tile::<10, true>,
        tile::<11, true>,
        tile::<12, true>,
    ],
    ops: &ROW_OPS,
    quant: None,
    q8: &[&super::avx2::Q8],
};

/// The same kernel where the CPU has AVX-512 VNNI: q8 weights of any 8-bit range.
pub static KERNEL_VNNI: Kernel = Kernel {
    q8: &[&Q8_VNNI],
    ..KERNEL
};

const QMR: usize = 12;
const QNR: usize = 32;

/// The q8 tile: `vpdpbusd` adds 4 uint8 × int8 products into each int32 lane (64 per
/// instruction), exact for any weights. 12 rows × 32 columns, 24 zmm accumulators; tiles of
/// fewer rows for a short last strip.
static Q8_VNNI: QKernel = QKernel {
    name: "avx512-vnni u8s8",
    mr: QMR,
    nr: QNR,
    group: 4,
    a_bytes: 1,
    tile: q8_tile::<QMR>,
    tails: &[
        q8_tile::<1>,
        q8_tile::<2>,
        q8_tile::<3>,
        q8_tile::<4>,
        q8_tile::<5>,
        q8_tile::<6>,
        q8_tile::<7>,
        q8_tile::<8>,
        q8_tile::<9>,
        q8_tile::<10>,
        q8_tile::<11>,
    ],
    quantize: super::quantize::quantize_rows,
    blocks: false,
    q8_a: ActCodes::Uint8,
    ops: &ROW_OPS,
    w_range: (-128, 127),
};

/// The q8 tile of `R ≤ QMR` rows of a strip packed `QMR` high.
///
/// # Safety
/// The CPU supports AVX-512F/BW and VNNI; `t` is a per-channel tile (see `qgemm.rs`) packed for
/// [`Q8_VNNI`], and `c` covers `rows × cols` with stride `ldc`, `rows ≤ R`.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn q8_tile<const R: usize>(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize) {
    let Some(ch) = t.channel else {
        return; // `blocks: false`: block-quantized weights are never packed for this tile
    };
    let mut acc = [[_mm512_setzero_si512(); 2]; R];
    let (mut a, mut b) = (t.a, t.b);
    for _ in 0..t.steps {
        let w0 = _mm512_loadu_si512(b as *const _);
        let w1 = _mm512_loadu_si512(b.add(64) as *const _);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_epi32((a.add(4 * i) as *const i32).read_unaligned());
            row[0] = _mm512_dpbusd_epi32(row[0], x, w0);
            row[1] = _mm512_dpbusd_epi32(row[1], x, w1);
        }
        a = a.add(4 * QMR);
        b = b.add(4 * QNR);
    }
    let full = rows == R && cols == QNR;
    let mut out = [0f32; QMR * QNR];
    for (i, row) in acc.iter().enumerate() {
        let (sum, e) = (
            _mm512_set1_epi32(*ch.a.add(i)),
            _mm512_set1_epi32(*ch.a.add(QMR + i)),
        );
        let sa = _mm512_set1_ps(*t.a_scales.add(i));
        for (v, &dot) in row.iter().enumerate() {
            let d = _mm512_loadu_si512(ch.b.add(16 * v) as *const _);
            let tj = _mm512_loadu_si512(ch.b.add(QNR + 16 * v) as *const _);
            let fix = _mm512_add_epi32(_mm512_mullo_epi32(d, sum), _mm512_mullo_epi32(e, tj));
            let mut total = _mm512_add_epi32(dot, fix);
            if !ch.extra.is_null() {
                let x = _mm512_loadu_si512(ch.extra.add(i * QNR + 16 * v) as *const _);
                total = _mm512_add_epi32(total, x);
            }
            let total = _mm512_cvtepi32_ps(total);
            let sw = _mm512_loadu_ps(t.b_scales.add(16 * v));
            let r = _mm512_mul_ps(total, _mm512_mul_ps(sa, sw));
            let dst = if full {
                c.add(i * ldc + 16 * v)
            } else {
                out.as_mut_ptr().add(i * QNR + 16 * v)
            };
            _mm512_storeu_ps(dst, r);
        }
    }
    if !full {
        store_partial(&out, QNR, c, ldc, rows, cols, false);
    }
}

super::math::row_ops!(f32, "avx512f,avx2,fma");

/// How far ahead of its k step a streaming tile prefetches its weights: 16 KiB, 128 steps,
/// into L2 (`prefetcht1`). MiniLM f32 on Zen 4 at 4 / 8 / 11 tokens: 0.65–0.75 / 0.81–0.86 /
/// 0.91–0.96 of the time without; 8 KiB a little less, 4 KiB far less, more than 16 KiB no
/// more (docs/performance.md).
const STREAM_AHEAD: usize = 4096;

/// # Safety
/// The CPU supports AVX-512F (checked by `kernels::available`); `a` holds `k*MR` floats,
/// `b` holds `k*NR`, and `c` covers `rows × cols` with stride `ldc`, `rows ≤ R` (the first `R`
/// rows of a strip packed `MR` high: a short last strip computes no padding). With `STREAM`,
/// it prefetches [`STREAM_AHEAD`] floats past each step (hints only, never read).
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx512f")]
unsafe fn tile<const R: usize, const STREAM: bool>(
    k: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let mut acc = [[_mm512_setzero_ps(); 2]; R];
    for kk in 0..k {
        let bp = b.add(kk * NR);
        if STREAM {
            let ahead = bp.wrapping_add(STREAM_AHEAD) as *const i8;
            _mm_prefetch::<_MM_HINT_T1>(ahead);
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(64));
        }
        let b0 = _mm512_loadu_ps(bp);
        let b1 = _mm512_loadu_ps(bp.add(16));
        let ap = a.add(kk * MR);
        for (i, row) in acc.iter_mut().enumerate() {
            let x = _mm512_set1_ps(*ap.add(i));
            row[0] = _mm512_fmadd_ps(x, b0, row[0]);
            row[1] = _mm512_fmadd_ps(x, b1, row[1]);
        }
    }
    if rows == R && cols == NR {
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
