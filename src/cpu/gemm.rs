//! Blocked GEMM `C[m×n] (+)= A[m×k] · B` with both operands packed into the register-tile
//! layouts of the selected micro-kernel. B (weights, or K/V inside attention) is packed once
//! into `nr`-wide column panels; A is packed per call into `mr`-row strips.

use super::pool::{self, SharedMut};
use super::tile::{tile_for, Kernel};
use std::sync::atomic::{AtomicU8, Ordering};

/// Depth of one K block: a `kc × nr` B block of 16 KiB stays in L1 while every A strip passes
/// over it (kc 128 for 32-wide panels, 512 for 8-wide ones: fewer passes over C, and B streams
/// in longer runs).
fn kc_for(nr: usize) -> usize {
    (4096 / nr).clamp(128, 512)
}

/// Depth of one K block when few rows walk each weight panel whole (see `gemm_shared`): the
/// block then need not stay in L1 for the short strips that follow the first (they read it
/// from L2), and deeper blocks store and reload C less often (AVX-512, MiniLM f32 at 15
/// tokens: sum of per-op minima 4.0 → 3.8 ms against 128; AVX2 5.2 → 4.6 against 256).
const FEW_ROWS_KC: usize = 512;

/// Packed A up to this size is taken to stay in L2 for a whole call (see `gemm_shared`): a
/// quarter of L2 where the CPU says how large it is, at least 128 KiB and at most 256. With
/// 1 MiB or more (Zen 4), 15 rows padded to two 12-row strips over k = 1536 (a BERT FFN's
/// second linear, 144 KiB) take the few-row walk: MiniLM f32 at 15 tokens 5.0 → 4.0 ms.
/// WebAssembly cannot ask, and keeps the smallest.
fn a_in_l2_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| (l2_bytes().unwrap_or(0) / 4).clamp(128 << 10, 256 << 10))
}

/// The L2 cache of this core, in bytes, where CPUID reports it (AMD and Intel: extended leaf 6).
#[cfg(target_arch = "x86_64")]
fn l2_bytes() -> Option<usize> {
    use std::arch::x86_64::__cpuid;
    let leaves = __cpuid(0x8000_0000).eax;
    let kib = (leaves >= 0x8000_0006).then(|| __cpuid(0x8000_0006).ecx >> 16)?;
    (kib > 0).then_some(kib as usize * 1024)
}

#[cfg(not(target_arch = "x86_64"))]
fn l2_bytes() -> Option<usize> {
    None
}

/// When few rows walk the weights in memory order, the block they prefetch is this many
/// ahead: the next one alone arrives too late to hide the stream (MiniLM f32 at 15 tokens,
/// AVX2: 7 % faster at 4 than at 1; docs/performance.md).
const BLOCKS_AHEAD: usize = 4;

/// Whether GEMMs prefetch the weights ahead of the tiles where that is a choice (natively the
/// few-row calls, in WebAssembly every call): 0 decided by the CPU ([`prefetch_by_cpu`]), 1
/// never, 2 always ([`set_prefetch`]).
static PREFETCH: AtomicU8 = AtomicU8::new(0);

/// Overrides whether GEMMs prefetch the weights ahead (`None`: as the CPU wants), for
/// measuring it on another machine (`WEBERT_PREFETCH` in the CLI) and for the engine's timed
/// choice in WebAssembly (`PrefetchTrial`), which cannot ask the CPU what it is.
pub fn set_prefetch(on: Option<bool>) {
    PREFETCH.store(on.map_or(0, |on| 1 + on as u8), Ordering::Relaxed);
}

/// The override [`set_prefetch`] set last.
pub fn prefetch_override() -> Option<bool> {
    match PREFETCH.load(Ordering::Relaxed) {
        0 => None,
        on => Some(on == 2),
    }
}

/// Whether the GEMMs that may prefetch the weights ahead do.
pub fn prefetch_chosen() -> bool {
    prefetch_override().unwrap_or_else(prefetch_by_cpu)
}

/// AMD cores with AVX-512 (Zen 4 and later) run few-row GEMMs faster without the hints: the
/// burst of them at each tile call seems to hold up the tile's own loads there, and the
/// cores' stream prefetchers keep up alone (MiniLM f32 at 15 tokens 8.1 → 6.3 ms); on an AVX2
/// Zen 3 the hints had gained 5–10 % (docs/performance.md).
#[cfg(target_arch = "x86_64")]
fn prefetch_by_cpu() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        use std::arch::x86_64::__cpuid;
        let (vendor, sig) = (__cpuid(0), __cpuid(1).eax);
        let amd = (vendor.ebx, vendor.edx, vendor.ecx) == (0x6874_7541, 0x6974_6E65, 0x444D_4163);
        let family = ((sig >> 8) & 0xf) + ((sig >> 20) & 0xff);
        !(amd && family >= 0x19 && std::arch::is_x86_feature_detected!("avx512f"))
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn prefetch_by_cpu() -> bool {
    true
}

/// B packed as panels of `nr` columns: `data[p][kk][j] = B(kk, p*nr + j)`, zero padded.
#[derive(Debug, Default, Clone)]
pub struct PackedB {
    pub n: usize,
    pub k: usize,
    nr: usize,
    data: Vec<f32>,
}

impl PackedB {
    /// Packs a row-major `[n, k]` matrix (PyTorch `Linear` weights, attention keys).
    pub fn from_nk(kern: &Kernel, n: usize, k: usize, src: &[f32], ld: usize) -> Self {
        let mut p = PackedB::default();
        p.repack_nk(kern, n, k, src, ld);
        p
    }

    /// Re-fills this buffer from a row-major `[k, n]` source (attention values): each panel
    /// row is a straight copy.
    pub fn repack_kn(&mut self, kern: &Kernel, n: usize, k: usize, src: &[f32], ld: usize) {
        self.reset(kern, n, k);
        let nr = self.nr;
        for (p, panel) in self.data.chunks_exact_mut(k * nr).enumerate() {
            let (c0, cols) = (p * nr, nr.min(n - p * nr));
            // Copies of a constant size compile to vector moves; others call `memory.copy` in
            // wasm, a runtime call per panel row.
            match (cols, nr) {
                (8, 8) => copy_rows::<8>(panel, src, c0, ld),
                (16, 16) => copy_rows::<16>(panel, src, c0, ld),
                (32, 32) => copy_rows::<32>(panel, src, c0, ld),
                _ => {
                    for (kk, dst) in panel.chunks_exact_mut(nr).enumerate() {
                        dst[..cols].copy_from_slice(&src[kk * ld + c0..kk * ld + c0 + cols]);
                    }
                }
            }
        }
    }

    /// Re-fills this buffer from a row-major `[n, k]` source (attention keys), reusing the
    /// allocation.
    pub fn repack_nk(&mut self, kern: &Kernel, n: usize, k: usize, src: &[f32], ld: usize) {
        self.reset(kern, n, k);
        let nr = self.nr;
        for (p, panel) in self.data.chunks_exact_mut(k * nr).enumerate() {
            let (c0, cols) = (p * nr, nr.min(n - p * nr));
            match (cols, nr) {
                (8, 8) => transpose_rows::<8>(panel, src, c0, ld, k),
                (16, 16) => transpose_rows::<16>(panel, src, c0, ld, k),
                (32, 32) => transpose_rows::<32>(panel, src, c0, ld, k),
                _ => {
                    for j in 0..cols {
                        let row = &src[(c0 + j) * ld..(c0 + j) * ld + k];
                        for (kk, &x) in row.iter().enumerate() {
                            panel[kk * nr + j] = x;
                        }
                    }
                }
            }
        }
    }

    /// The panel width and the packed panels (a packed-model image's view of this weight).
    pub(super) fn parts(&self) -> (usize, &[f32]) {
        (self.nr, &self.data)
    }

    /// Panels packed before for `kern` (read back from an image); `None` when their width or
    /// length is not `kern`'s for `[n, k]`.
    pub(super) fn from_parts(
        kern: &Kernel,
        n: usize,
        k: usize,
        nr: usize,
        data: Vec<f32>,
    ) -> Option<Self> {
        (nr == kern.nr && data.len() == n.div_ceil(nr) * k * nr).then_some(PackedB {
            n,
            k,
            nr,
            data,
        })
    }

    fn reset(&mut self, kern: &Kernel, n: usize, k: usize) {
        let nr = kern.nr;
        (self.n, self.k, self.nr) = (n, k, nr);
        self.data.clear();
        self.data.resize(n.div_ceil(nr) * k * nr, 0.0);
    }

    pub fn bytes(&self) -> usize {
        self.data.len() * 4
    }
}

/// `C = A · B` (or `C += A · B` with `accumulate`). `a` is row-major with stride `lda`,
/// `c` row-major with stride `ldc`; `a_pack` is scratch reused between calls.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    kern: &Kernel,
    m: usize,
    a: &[f32],
    lda: usize,
    b: &PackedB,
    c: &mut [f32],
    ldc: usize,
    accumulate: bool,
    a_pack: &mut Vec<f32>,
) {
    let c_len = c.len();
    // SAFETY: `c` is borrowed mutably for the whole call.
    unsafe {
        gemm_shared(
            kern,
            m,
            a,
            lda,
            b,
            (SharedMut(c.as_mut_ptr()), c_len),
            ldc,
            accumulate,
            a_pack,
        )
    }
}

/// [`gemm`] into C given as a pointer and length, for callers whose tasks write disjoint
/// columns of one buffer.
///
/// # Safety
/// `c.0` must be valid for writes of `c.1` floats, and no one else may access the `m` rows
/// of `n` columns that this call writes while it runs.
#[allow(clippy::too_many_arguments)]
pub unsafe fn gemm_shared(
    kern: &Kernel,
    m: usize,
    a: &[f32],
    lda: usize,
    b: &PackedB,
    (c_out, c_len): (SharedMut<f32>, usize),
    ldc: usize,
    accumulate: bool,
    a_pack: &mut Vec<f32>,
) {
    let (n, k, mr, nr) = (b.n, b.k, kern.mr, kern.nr);
    assert_eq!(b.nr, nr, "B was packed for another kernel");
    if m == 0 || n == 0 {
        return;
    }
    assert!(
        a.len() >= (m - 1) * lda + k && c_len >= (m - 1) * ldc + n,
        "gemm operand too short"
    );
    if k == 0 {
        if !accumulate {
            // SAFETY: row i's n floats lie inside C by the assert.
            (0..m).for_each(|i| unsafe {
                std::slice::from_raw_parts_mut(c_out.get().add(i * ldc), n).fill(0.0)
            });
        }
        return;
    }
    let (strips, panels) = (m.div_ceil(mr), n.div_ceil(nr));
    // Few rows (a page's short calls): all of packed A stays in L2, so each panel of B is read
    // once, whole and in memory order, every strip passing over each of its blocks while the
    // block is in L1 or L2. More rows: a block of A stays cached while the panels pass over it.
    // WebAssembly takes the first order only without touching ahead: its touch is a load, and
    // with touches the second order ran as fast or faster (Zen 3, Zen 4); without, the first
    // is 4–5 % faster at 8–15 tokens (Zen 4; docs/performance.md).
    let chosen = prefetch_chosen();
    let wasm = cfg!(target_arch = "wasm32");
    let panel_outer = strips * mr * k * 4 <= a_in_l2_bytes() && !(wasm && chosen);
    let prefetch = match panel_outer || wasm {
        true => chosen,
        false => true,
    };
    // The touches ahead are spread over a block's strips: deeper blocks would burst them.
    let kc = match panel_outer && !prefetch {
        true => FEW_ROWS_KC,
        false => kc_for(nr),
    };
    // A call of one strip, where no hints are spread over it, streams each weight block
    // through a tile that prefetches it ahead (where the kernel has such tiles): the cores'
    // own prefetchers fall behind a lone strip. Strips after the first give them time, and
    // there the tiles gain nothing. A B that fits the share of L2 kept for A (attention's
    // keys and values) is in cache already.
    let streaming = strips == 1
        && panel_outer
        && !prefetch
        && !kern.streaming.is_empty()
        && b.bytes() > a_in_l2_bytes();
    pack_a(a_pack, a, lda, m, mr, k, kc);
    let a_pack = &a_pack[..];
    let pieces = pool::pieces(panels);
    pool::run(pieces, &|piece, _| {
        let span = piece * panels / pieces..(piece + 1) * panels / pieces;
        let span_end = span.end * k * nr;
        // Runs every strip over block `k0..k0 + kcb` of panel `p`, spreading over the strips
        // the touches of `next`, the block that follows.
        let strips_over = |p: usize, k0: usize, kcb: usize, next: &[f32]| {
            let cols = nr.min(n - p * nr);
            let a_block = &a_pack[strips * mr * k0..strips * mr * (k0 + kcb)];
            let b_block = &b.data[p * k * nr + k0 * nr..p * k * nr + (k0 + kcb) * nr];
            let per_strip = if prefetch {
                lines_per_strip(kcb * nr, strips)
            } else {
                0
            };
            for s in 0..strips {
                touch_lines(next, s * per_strip, per_strip);
                let rows = mr.min(m - s * mr);
                let a_strip = &a_block[s * kcb * mr..(s + 1) * kcb * mr];
                let tile = match streaming {
                    true => kern.streaming[rows - 1],
                    false => tile_for(kern.tile, kern.tails, rows, mr),
                };
                // SAFETY: the strip holds kcb*mr floats and the block kcb*nr (asserted by the
                // slicing above); the kernel writes only rows < `rows` and cols < `cols` of
                // this panel's columns of C, inside C by the length assert and written by no
                // other piece.
                unsafe {
                    tile(
                        kcb,
                        a_strip.as_ptr(),
                        b_block.as_ptr(),
                        c_out.get().add(s * mr * ldc + p * nr),
                        ldc,
                        rows,
                        cols,
                        accumulate || k0 > 0,
                    );
                }
            }
        };
        if panel_outer {
            for p in span.clone() {
                for k0 in (0..k).step_by(kc) {
                    let kcb = kc.min(k - k0);
                    let end = p * k * nr + (k0 + kcb) * nr;
                    let ahead = (end + (BLOCKS_AHEAD - 1) * kc * nr).min(span_end);
                    strips_over(p, k0, kcb, &b.data[ahead..(ahead + kc * nr).min(span_end)]);
                }
            }
            return;
        }
        for k0 in (0..k).step_by(kc) {
            let kcb = kc.min(k - k0);
            for p in span.clone() {
                let next = match p + 1 < span.end {
                    true => &b.data[(p + 1) * k * nr + k0 * nr..(p + 1) * k * nr + (k0 + kcb) * nr],
                    false => &[],
                };
                strips_over(p, k0, kcb, next);
            }
        }
    });
}

/// How many cache lines of a panel of `len` floats each of `strips` strips touches.
fn lines_per_strip(len: usize, strips: usize) -> usize {
    len.div_ceil(16).div_ceil(strips.max(1))
}

/// Starts loading lines `first..first + count` (64 bytes each) of `next` (those that exist).
/// Spread over the strips of one block, this loads the next block's weights while this one
/// computes; the f32 forward gains from it, the int8 GEMM does not (docs/performance.md). No
/// division per call: a tile is short.
#[inline]
fn touch_lines(next: &[f32], first: usize, count: usize) {
    let end = (first + count).min(next.len().div_ceil(16));
    for l in first..end {
        // SAFETY: 16 * l < next.len().
        unsafe { prefetch(next.as_ptr().add(16 * l)) };
    }
}

/// A prefetch hint where the ISA has one: unlike a load, it does not hold up the
/// instructions after it while the line comes from memory.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefetch(p: *const f32) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    _mm_prefetch::<_MM_HINT_T0>(p.cast());
}

/// WebAssembly has no prefetch instruction: a volatile read (never optimized away) loads the
/// line instead.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn prefetch(p: *const f32) {
    std::ptr::read_volatile(p);
}

/// `panel[kk][j] = src[kk * ld + c0 + j]` for a full panel of `NR` columns.
#[inline(always)]
fn copy_rows<const NR: usize>(panel: &mut [f32], src: &[f32], c0: usize, ld: usize) {
    for (kk, dst) in panel.chunks_exact_mut(NR).enumerate() {
        let row: &[f32; NR] = src[kk * ld + c0..][..NR].try_into().expect("NR floats");
        dst.copy_from_slice(row);
    }
}

/// `panel[kk][j] = src[(c0 + j) * ld + kk]` for a full panel of `NR` rows of `k` values.
#[inline(always)]
fn transpose_rows<const NR: usize>(panel: &mut [f32], src: &[f32], c0: usize, ld: usize, k: usize) {
    let rows: [&[f32]; NR] = std::array::from_fn(|j| &src[(c0 + j) * ld..(c0 + j) * ld + k]);
    for (kk, dst) in panel.chunks_exact_mut(NR).enumerate().take(k) {
        for (d, r) in dst.iter_mut().zip(&rows) {
            *d = r[kk];
        }
    }
}

/// Packs A into blocks of `kc` columns (the last may be shorter), each block into `mr`-row
/// strips `strip[kk][i]`, zero padded: block `k0` starts at `strips * mr * k0`. Runs of strips
/// are packed in parallel.
fn pack_a(dst: &mut Vec<f32>, a: &[f32], lda: usize, m: usize, mr: usize, k: usize, kc: usize) {
    let strips = m.div_ceil(mr);
    // Every float is written below (a short strip's padding too), so what the buffer held
    // before is not cleared first: that was a second pass over it on every call.
    dst.resize(strips * mr * k, 0.0);
    let out = SharedMut(dst.as_mut_ptr());
    let pieces = pool::pieces(strips.div_ceil(4));
    pool::run(pieces, &|piece, _| {
        for k0 in (0..k).step_by(kc) {
            let kcb = kc.min(k - k0);
            for s in piece * strips / pieces..(piece + 1) * strips / pieces {
                // SAFETY: strip s of block k0 lies inside `dst` (sized above) and belongs to
                // this piece alone.
                let strip = unsafe {
                    std::slice::from_raw_parts_mut(
                        out.get().add(strips * mr * k0 + s * kcb * mr),
                        kcb * mr,
                    )
                };
                let row = |i: usize| &a[(s * mr + i) * lda + k0..(s * mr + i) * lda + k0 + kcb];
                let rows = mr.min(m - s * mr);
                // Full strips of the usual heights interleave rows with constant strides.
                match (rows == mr, mr) {
                    (true, 4) => interleave::<4>(strip, std::array::from_fn(row)),
                    (true, 6) => interleave::<6>(strip, std::array::from_fn(row)),
                    (true, 8) => interleave::<8>(strip, std::array::from_fn(row)),
                    (true, 12) => interleave::<12>(strip, std::array::from_fn(row)),
                    _ => {
                        for i in 0..mr {
                            let column = strip[i..].iter_mut().step_by(mr);
                            if i < rows {
                                column.zip(row(i)).for_each(|(d, &x)| *d = x);
                            } else {
                                column.for_each(|d| *d = 0.0);
                            }
                        }
                    }
                }
            }
        }
    });
}

/// `strip[kk * MR + i] = rows[i][kk]`.
#[inline(always)]
fn interleave<const MR: usize>(strip: &mut [f32], rows: [&[f32]; MR]) {
    let kc = rows[0].len();
    for (kk, out) in strip.chunks_exact_mut(MR).enumerate().take(kc) {
        for (o, r) in out.iter_mut().zip(&rows) {
            *o = r[kk];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::available;

    fn naive(m: usize, n: usize, k: usize, a: &[f32], b_nk: &[f32]) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k)
                    .map(|kk| a[i * k + kk] as f64 * b_nk[j * k + kk] as f64)
                    .sum::<f64>() as f32;
            }
        }
        c
    }

    fn rand_vec(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
            })
            .collect()
    }

    #[test]
    fn every_kernel_matches_naive_on_ragged_shapes() {
        // Prefetch hints on and off (a hint changes no result, so other tests may run while
        // this one sets them); in WebAssembly they also pick the walk over the weights.
        for (kern, prefetch) in available()
            .into_iter()
            .flat_map(|k| [(k, true), (k, false)])
        {
            set_prefetch(Some(prefetch));
            for &(m, n, k) in &[
                (1, 1, 1),
                (5, 7, 3),
                (13, 33, 300),
                (128, 96, 64),
                (3, 70, 513),
                (31, 17, 1),
                // last strips of every height below 4, 6 and 12 (the short-strip tiles)
                (2, 9, 40),
                (14, 10, 9),
                (16, 24, 70),
                (21, 35, 33),
                (22, 40, 17),
                (23, 33, 65),
                // few rows over several of the deeper K blocks of that order
                (15, 40, 1100),
                // one strip over B past `a_in_l2_bytes` (the streaming tiles), ragged and full
                (2, 70, 1100),
                (5, 70, 1100),
                (12, 65, 1030),
                // packed A past `a_in_l2_bytes`: K blocks outermost
                (150, 40, 500),
            ] {
                let a = rand_vec(m * k, 1 + m as u64);
                let b = rand_vec(n * k, 2 + n as u64);
                let packed = PackedB::from_nk(kern, n, k, &b, k);
                let mut c = vec![0.0; m * n];
                let mut scratch = Vec::new();
                gemm(kern, m, &a, k, &packed, &mut c, n, false, &mut scratch);
                let want = naive(m, n, k, &a, &b);
                let err = c
                    .iter()
                    .zip(&want)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0, f32::max);
                assert!(err < 1e-4, "{} m={m} n={n} k={k}: max err {err}", kern.name);
                // accumulate adds on top of what is there
                gemm(kern, m, &a, k, &packed, &mut c, n, true, &mut scratch);
                let err2 = c
                    .iter()
                    .zip(&want)
                    .map(|(x, y)| (x - 2.0 * y).abs())
                    .fold(0.0, f32::max);
                assert!(err2 < 2e-4, "{} accumulate: {err2}", kern.name);
            }
        }
        set_prefetch(None);
    }

    #[test]
    fn strided_operands_and_kn_packing() {
        for kern in available() {
            let (m, n, k) = (9, 11, 20);
            let a = rand_vec(m * 32, 3);
            let b_kn = rand_vec(k * 16, 4); // [k, n] with stride 16
            let mut packed = PackedB::default();
            packed.repack_kn(kern, n, k, &b_kn, 16);
            let mut c = vec![7.0; m * 24];
            gemm(kern, m, &a, 32, &packed, &mut c, 24, false, &mut Vec::new());
            for i in 0..m {
                for j in 0..n {
                    let want: f32 = (0..k).map(|kk| a[i * 32 + kk] * b_kn[kk * 16 + j]).sum();
                    assert!((c[i * 24 + j] - want).abs() < 1e-4, "{}", kern.name);
                }
                assert!(
                    c[i * 24 + n..(i + 1) * 24].iter().all(|&x| x == 7.0),
                    "wrote outside C"
                );
            }
        }
    }
}
