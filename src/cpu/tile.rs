//! The interface between the GEMM drivers and the ISA files: the register-tile function types,
//! the `Kernel` / `QKernel` that describe one ISA's tiles, and the helpers the tiles share.

use super::dynamic_quant::ActCodes;

/// `C[rows×cols] (+)= Astrip[k×mr] · Bpanel[k×nr]` for one register tile.
pub type TileFn = unsafe fn(
    k: usize,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
);

pub struct Kernel {
    pub name: &'static str,
    pub mr: usize,
    pub nr: usize,
    pub tile: TileFn,
    /// Tiles for a last strip of fewer real rows (`tails[rows - 1]`, reading the same `mr`-row
    /// strip layout), so that its zero padding is not computed; empty where `tile` is used.
    pub tails: &'static [TileFn],
    /// Tiles that prefetch their weight panel ahead as they go (`streaming[rows - 1]`, up to
    /// `mr` rows; a tile of more rows than `rows` computes padding and stores `rows`), for
    /// calls of one strip that spread no hints (see `gemm.rs`); empty where `tile` and `tails`
    /// serve there too.
    pub streaming: &'static [TileFn],
    /// Elementwise row ops compiled for the same ISA.
    pub ops: &'static super::math::RowOps,
    /// The integer-dot tile for block-quantized weights, where this ISA has a fast one.
    pub quant: Option<&'static QKernel>,
    /// The integer tiles for per-channel 8-bit weights (q8), in order of preference: a weight
    /// goes to the first whose weight operand takes its codes (`QKernel::w_range`), else f32.
    pub q8: &'static [&'static QKernel],
}

/// The tile for a strip of `rows` real rows of `mr`: the kernel's short-strip tile of that
/// height where it has one, else its full tile.
pub fn tile_for<T: Copy>(tile: T, tails: &[T], rows: usize, mr: usize) -> T {
    match tails.get(rows.wrapping_sub(1)) {
        Some(&short) if rows < mr => short,
        _ => tile,
    }
}

/// One quantized register tile's operands (see `qpack.rs` and `quantize.rs` for the layouts):
/// `blocks` weight blocks of `steps` steps of `group` k each.
pub struct QTile {
    pub blocks: usize,
    pub steps: usize,
    /// A codes (int8 or little-endian int16), `[block][step][mr][group]`.
    pub a: *const u8,
    /// Per block: `mr` scales, then the `mr` sums of their codes (integers, exact in f32).
    pub a_scales: *const f32,
    /// Weight codes (< 128), `[block][step][nr][group]`.
    pub b: *const u8,
    /// Per block: `nr` scales, then (unless `zero`) `nr` terms `zero point · scale`.
    pub b_scales: *const f32,
    /// The zero point of every weight block when they are all this integer (symmetric
    /// quantization): it is then subtracted from the sums, `Σ qa·qw − zero·Σ qa`.
    pub zero: Option<i32>,
    /// Per-channel (q8) weights: one block of all k, rescaled exactly as ONNX Runtime's
    /// `MatMulInteger` → `Cast` → `Mul` (see `qgemm.rs`); `a_scales` then holds the strip's
    /// `mr` activation scales and `b_scales` the panel's `nr` weight scales.
    pub channel: Option<ChannelTerms>,
}

/// The integer corrections of a per-channel tile: with `dot = Σ a*·w*` over the tile's codes,
/// `C[i][j] = f32(dot + d[j]·sum[i] + e[i]·t[j] + x[i][j]) · (sa[i]·sw[j])` in wrapping int32
/// (exact: the true sum fits).
#[derive(Clone, Copy)]
pub struct ChannelTerms {
    /// The strip's `mr` code sums `sum[i] = Σ_k a*`, then its `mr` offsets `e[i]`.
    pub a: *const i32,
    /// The panel's `nr` offsets `d[j]`, then its `nr` terms `t[j]`.
    pub b: *const i32,
    /// Null, or `x`: `mr × nr` int32 (row stride `nr`), the products of the weight codes that
    /// did not fit the tile's operand (`PackedQ`'s spills).
    pub extra: *const i32,
}

/// Writes `C[rows×cols] = A·Wᵀ` for one quantized tile.
pub type QTileFn = unsafe fn(t: QTile, c: *mut f32, ldc: usize, rows: usize, cols: usize);

/// One block of a full strip of A to quantize.
pub struct StripBlock {
    /// Where the codes go, as `[step][mr][group]`.
    pub chunk: *mut u8,
    /// Row `i < mr` of the strip, `block` floats, starts at `a + i·lda`.
    pub a: *const f32,
    pub lda: usize,
    /// Per row: the factor into codes (`a_max / max|row|`).
    pub inv: *const f32,
    pub block: usize,
    /// Per row: the sum of its codes is added here.
    pub sums: *mut i32,
}

/// Quantizes a [`StripBlock`]: each value times its row's `inv`, rounded to nearest even.
/// Every implementation gives the codes of `quantize::quantize_rows`.
pub type QuantizeFn = unsafe fn(kern: &QKernel, s: StripBlock);

pub struct QKernel {
    pub name: &'static str,
    pub mr: usize,
    pub nr: usize,
    /// Consecutive k summed into one 32-bit lane: 4 for int8 dot products, 2 for int16.
    pub group: usize,
    /// Bytes per A code: 1 (int8) or 2 (int16, 256 times finer).
    pub a_bytes: usize,
    pub tile: QTileFn,
    /// As [`Kernel::tails`]: tiles for a short last strip, `tails[rows - 1]`.
    pub tails: &'static [QTileFn],
    pub quantize: QuantizeFn,
    /// Whether the tile computes block-quantized (q4) weights; the native ones take only q8.
    pub blocks: bool,
    /// How q8 activations are stored for this tile.
    pub q8_a: ActCodes,
    /// The row ops of the same ISA (the q8 activation quantizer).
    pub ops: &'static super::math::RowOps,
    /// The range of the weight operand; q8 codes are shifted per column into it (bytes, two's
    /// complement where negative).
    pub w_range: (i32, i32),
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}x{})", self.name, self.mr, self.nr)
    }
}

/// Writes (or adds) the valid `rows × cols` corner of a full `mr × nr` tile held in `tile`.
///
/// # Safety
/// `c` must be valid for `rows` rows of `cols` floats with stride `ldc`.
#[inline(always)]
pub(super) unsafe fn store_partial(
    tile: &[f32],
    nr: usize,
    c: *mut f32,
    ldc: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    for i in 0..rows {
        for j in 0..cols {
            let dst = c.add(i * ldc + j);
            let v = tile[i * nr + j];
            *dst = if accumulate { *dst + v } else { v };
        }
    }
}
