//! Weights packed once for a [`QKernel`]'s tiles ([`PackedQ`]): block-quantized (q4) codes as
//! they are, per-channel (q8) codes shifted per column into the tile's weight operand, the rare
//! codes that still do not fit kept aside as spills.

use super::quantize::a_max;
use super::tile::QKernel;
use crate::model::{BlockQuant, ChannelQuant};

/// Weights packed for a [`QKernel`]: per panel of `nr` columns and per block, steps of
/// `nr × group` codes (`group` consecutive k feed one 32-bit lane of the dot product), and
/// beside them `nr` scales then, unless the zero point is shared, `nr` zero-point terms.
#[derive(Debug, Default, Clone)]
pub struct PackedQ {
    pub n: usize,
    pub k: usize,
    pub(super) nr: usize,
    pub(super) group: usize,
    pub(super) block: usize,
    pub(super) codes: Vec<u8>,
    pub(super) scales: Vec<f32>,
    /// Every block's zero point, when they are all this integer.
    pub(super) zero: Option<i32>,
    /// Per-channel (q8) weights: per panel `nr` offsets `d` then `nr` terms `t`
    /// ([`ChannelTerms`](super::tile::ChannelTerms)); empty for block-quantized ones.
    pub(super) ints: Vec<i32>,
    /// Per-channel weights whose column spans more codes than the tile's weight operand hold
    /// (onnxruntime's reduce_range int8 codes are -64..=64, one more than relaxed-simd's
    /// 0..=127): the few codes outside it are stored clamped, and what was cut is added to the
    /// tile's integer sums ([`ChannelTerms::extra`](super::tile::ChannelTerms::extra)). Panel
    /// p's are `spills[spill_at[p]..spill_at[p + 1]]`.
    pub(super) spills: Vec<Spill>,
    pub(super) spill_at: Vec<usize>,
}

/// A weight code cut to fit the tile's operand: `rest` = the code less the stored one, at
/// column `col` of its panel and depth `k`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spill {
    pub(super) col: usize,
    pub(super) k: usize,
    pub(super) rest: i32,
}

/// At most one spilled code per this many weights (else the next tile takes the matrix): the
/// spills' scalar products then cost a fraction of the integer tile.
pub(super) const SPILL_RARITY: usize = 128;

impl PackedQ {
    /// Packs `q`, the codes of a `[n, k]` matrix, or `None` when its blocks do not split into
    /// whole groups or a block's dot product could overflow int32 (then the f32 path runs it).
    pub fn new(kern: &QKernel, n: usize, k: usize, q: &BlockQuant) -> Option<Self> {
        let (nr, block, group) = (kern.nr, q.block, kern.group);
        let blocks = q.blocks(k);
        let max_code = q.codes.iter().copied().max().unwrap_or(0) as u64;
        let zero = q.zero_points.first().copied().filter(|&z| {
            (0.0..128.0).contains(&z) && z.fract() == 0.0 && q.zero_points.iter().all(|&y| y == z)
        });
        let a_sum = block as u64 * a_max(kern) as u64;
        let sane = kern.blocks
            && block > 0
            && block.is_multiple_of(group)
            && q.codes.len() == n * k
            && q.scales.len() == n * blocks
            && q.zero_points.len() == n * blocks
            && max_code < 128
            && a_sum * max_code <= i32::MAX as u64 // the int32 sums `Σ qa·qw`
            && a_sum <= 1 << 24; // A's code sums travel as exact f32
        if !sane {
            return None;
        }
        let zero = zero.map(|z| z as i32);
        let per_block = if zero.is_some() { nr } else { 2 * nr };
        let panels = n.div_ceil(nr);
        let mut codes = vec![0u8; panels * blocks * block * nr];
        let mut scales = vec![0f32; panels * blocks * per_block];
        for j in 0..n {
            let (p, jj) = (j / nr, j % nr);
            for b in 0..blocks {
                let chunk = (p * blocks + b) * block * nr + jj * group;
                let part = &q.codes[j * k + b * block..j * k + k.min((b + 1) * block)];
                for (g, codes_g) in part.chunks(group).enumerate() {
                    codes[chunk + g * group * nr..][..codes_g.len()].copy_from_slice(codes_g);
                }
                let s = (p * blocks + b) * per_block;
                let sw = q.scales[j * blocks + b];
                scales[s + jj] = sw;
                if zero.is_none() {
                    scales[s + nr + jj] = q.zero_points[j * blocks + b] * sw;
                }
            }
        }
        Some(PackedQ {
            n,
            k,
            nr,
            group,
            block,
            codes,
            scales,
            zero,
            ints: Vec::new(),
            spills: Vec::new(),
            spill_at: Vec::new(),
        })
    }

    /// Packs the per-channel 8-bit codes of a `[n, k]` matrix as one block of all k (padded to
    /// whole groups with zero codes), each column shifted into the kernel's weight range and
    /// the rare codes still outside it spilled (see [`PackedQ::spills`]); `None` when there
    /// would be more than one spill per [`SPILL_RARITY`] weights or the int32 sums could
    /// overflow.
    pub fn channel(kern: &QKernel, n: usize, k: usize, q: &ChannelQuant) -> Option<Self> {
        let (nr, group, (lo, hi)) = (kern.nr, kern.group, kern.w_range);
        let block = k.div_ceil(group) * group;
        let sane = k > 0
            && q.codes.len() == n * k
            && q.scales.len() == n
            && q.zero_points.len() == n
            && block as u64 * 255 * 255 <= i32::MAX as u64; // any true Σ (qa − za)(qw − zw)
        if !sane {
            return None;
        }
        let panels = n.div_ceil(nr);
        let mut codes = vec![0u8; panels * block * nr];
        let mut scales = vec![0f32; panels * nr];
        let mut ints = vec![0i32; panels * 2 * nr];
        let (mut spills, mut spill_at) = (Vec::new(), vec![0]);
        // Codes as integers: i8 or u8 reinterpreted, without a branch per code.
        let flip = if q.signed { 0x80u8 } else { 0 };
        let base = if q.signed { -128 } else { 0 };
        let int = |c: u8| (c ^ flip) as i32 + base;
        // One column's stored codes, before they are spread over its panel's groups: the loops
        // over a whole column have no branch and vectorize.
        let mut stored = vec![0u8; k];
        for (j, row) in q.codes.chunks_exact(k).enumerate() {
            let zw = q.zero_points[j];
            let cw = column_shift(row.iter().map(|&c| int(c)), zw, (lo, hi));
            let (p, jj) = (j / nr, j % nr);
            let (mut sum, mut cut) = (0i32, false);
            for (&c, o) in row.iter().zip(&mut stored) {
                let w = int(c) - cw;
                let kept = w.clamp(lo, hi);
                cut |= kept != w;
                sum += w;
                *o = kept as u8;
            }
            if cut {
                for (t, &c) in row.iter().enumerate() {
                    let w = int(c) - cw;
                    let kept = w.clamp(lo, hi);
                    if kept != w {
                        spills.push(Spill {
                            col: jj,
                            k: t,
                            rest: w - kept,
                        });
                    }
                }
                if spills.len() * SPILL_RARITY > n * k {
                    return None;
                }
            }
            // Group g of this column lands at `p·block·nr + g·group·nr + jj·group`.
            let column = &mut codes[p * block * nr + jj * group..];
            match group {
                4 => spread::<4>(&stored, column, nr),
                2 => spread::<2>(&stored, column, nr),
                _ => {
                    for (g, part) in stored.chunks(group).enumerate() {
                        column[g * group * nr..][..part.len()].copy_from_slice(part);
                    }
                }
            }
            scales[p * nr + jj] = q.scales[j];
            let d = cw - zw;
            ints[p * 2 * nr + jj] = d;
            ints[p * 2 * nr + nr + jj] = sum.wrapping_add((k as i32).wrapping_mul(d));
            if jj == nr - 1 || j == n - 1 {
                spill_at.push(spills.len());
            }
        }
        Some(PackedQ {
            n,
            k,
            nr,
            group,
            block,
            codes,
            scales,
            zero: None,
            ints,
            spills,
            spill_at,
        })
    }

    /// How many weight codes did not fit the tile's operand (per-channel weights).
    pub fn spills(&self) -> usize {
        self.spills.len()
    }

    pub fn bytes(&self) -> usize {
        self.codes.len()
            + self.scales.len() * 4
            + self.ints.len() * 4
            + self.spills.len() * std::mem::size_of::<Spill>()
    }

    /// Whether these are per-channel (q8) weights, for
    /// [`qgemm_channel`](super::qgemm::qgemm_channel).
    pub fn is_channel(&self) -> bool {
        !self.ints.is_empty()
    }

    pub(super) fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }
}

/// Spreads one column's codes over its panel: group g of `G` codes at `g·G·nr` of `column`
/// (a last short group padded by the zeros already there).
fn spread<const G: usize>(stored: &[u8], column: &mut [u8], nr: usize) {
    let whole = stored.chunks_exact(G);
    let rest = whole.remainder();
    let groups = whole.len();
    for (g, part) in whole.enumerate() {
        column[g * G * nr..][..G].copy_from_slice(part);
    }
    if !rest.is_empty() {
        column[groups * G * nr..][..rest.len()].copy_from_slice(rest);
    }
}

/// The shift `cw` of a column's codes into the operand range `lo..=hi` (stored `c − cw`): the
/// one nearest its zero point when every code fits, else the one that leaves the fewest codes
/// outside.
fn column_shift(codes: impl Iterator<Item = i32> + Clone, zw: i32, (lo, hi): (i32, i32)) -> i32 {
    let (min, max) = codes
        .clone()
        .fold((i32::MAX, i32::MIN), |(a, b), c| (a.min(c), b.max(c)));
    if max - min <= hi - lo {
        return zw.clamp(max - hi, min - lo);
    }
    let mut count = vec![0usize; (max - min + 1) as usize];
    codes.for_each(|c| count[(c - min) as usize] += 1);
    let width = (hi - lo + 1) as usize;
    let mut inside: usize = count[..width].iter().sum();
    let (mut best, mut best_start) = (inside, 0);
    for start in 1..=count.len() - width {
        inside = inside + count[start + width - 1] - count[start - 1];
        if inside > best {
            (best, best_start) = (inside, start);
        }
    }
    min + best_start as i32 - lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::quant_fixtures::{channel_quant, q8_kernels, quant, quant_kernels};

    /// Per-channel packing one code at a time, as it was written first: what the column loops
    /// must reproduce.
    fn channel_by_code(kern: &QKernel, n: usize, k: usize, q: &ChannelQuant) -> Option<PackedQ> {
        let (nr, group, (lo, hi)) = (kern.nr, kern.group, kern.w_range);
        let block = k.div_ceil(group) * group;
        let panels = n.div_ceil(nr);
        let mut codes = vec![0u8; panels * block * nr];
        let (mut scales, mut ints) = (vec![0f32; panels * nr], vec![0i32; panels * 2 * nr]);
        let (mut spills, mut spill_at) = (Vec::new(), vec![0]);
        let int = |c: u8| if q.signed { c as i8 as i32 } else { c as i32 };
        for (j, row) in q.codes.chunks_exact(k).enumerate() {
            let zw = q.zero_points[j];
            let cw = column_shift(row.iter().map(|&c| int(c)), zw, (lo, hi));
            let (p, jj) = (j / nr, j % nr);
            let mut sum = 0i32;
            for (t, &c) in row.iter().enumerate() {
                let w = int(c) - cw;
                let stored = w.clamp(lo, hi);
                if stored != w {
                    spills.push(Spill {
                        col: jj,
                        k: t,
                        rest: w - stored,
                    });
                }
                sum += w;
                let (g, i) = (t / group, t % group);
                codes[p * block * nr + g * group * nr + jj * group + i] = stored as u8;
            }
            if spills.len() * SPILL_RARITY > n * k {
                return None;
            }
            scales[p * nr + jj] = q.scales[j];
            let d = cw - zw;
            ints[p * 2 * nr + jj] = d;
            ints[p * 2 * nr + nr + jj] = sum.wrapping_add((k as i32).wrapping_mul(d));
            if jj == nr - 1 || j == n - 1 {
                spill_at.push(spills.len());
            }
        }
        let (zero, spills) = (None, spills);
        Some(PackedQ {
            n,
            k,
            nr,
            group,
            block,
            codes,
            scales,
            zero,
            ints,
            spills,
            spill_at,
        })
    }

    #[test]
    fn q8_packing_by_column_equals_packing_by_code() {
        let mut packed = 0;
        for qk in q8_kernels() {
            for (n, k, lo, hi, zp, seed) in [
                (5, 384, -127, 127, (0, 0), 1),
                (17, 37, 0, 255, (100, 140), 2), // k not a whole number of groups
                (9, 1536, -64, 64, (0, 0), 3),   // onnxruntime's reduce_range codes
                (3, 96, -128, 127, (-3, 3), 4),
                (2, 6, 0, 255, (0, 255), 5),
            ] {
                let mut q = channel_quant(n, k, lo, hi, zp, seed);
                // A few codes far from the rest: spills where the tile's range is narrower.
                for (j, c) in [(0, 0u8), (1, 255), (n - 1, 128)] {
                    q.codes[j * k + k / 2] = c;
                }
                let by_code = channel_by_code(qk, n, k, &q);
                let by_column = PackedQ::channel(qk, n, k, &q);
                let at = format!("{} n {n} k {k} codes {lo}..={hi}", qk.name);
                let (Some(a), Some(b)) = (&by_column, &by_code) else {
                    assert_eq!(by_column.is_some(), by_code.is_some(), "{at}");
                    continue;
                };
                packed += 1;
                assert_eq!(a.codes, b.codes, "{at}");
                assert_eq!(a.scales, b.scales, "{at}");
                assert_eq!(a.ints, b.ints, "{at}");
                assert_eq!(a.spill_at, b.spill_at, "{at}");
                let spill = |s: &Spill| (s.col, s.k, s.rest);
                let spills = |p: &PackedQ| p.spills.iter().map(spill).collect::<Vec<_>>();
                assert_eq!(spills(a), spills(b), "{at}");
            }
        }
        assert!(packed > 10, "only {packed} matrices packed");
    }

    #[test]
    fn q8_packing_spills_only_rare_codes() {
        let qk = &crate::cpu::scalar::QUANT_I8; // weights 0..=127
        let (n, k) = (3, 256);
        let mut q = channel_quant(n, k, -64, 63, (0, 0), 1);
        assert_eq!(PackedQ::channel(qk, n, k, &q).unwrap().spills(), 0);
        q.codes[k + 20] = 64; // column 1 now spans -64..=64
        q.codes[k + 21] = (-64i8) as u8;
        q.codes[k + 22] = (-64i8) as u8;
        assert_eq!(PackedQ::channel(qk, n, k, &q).unwrap().spills(), 1);
        let wide = &crate::cpu::scalar::QUANT; // weights 0..=255
        assert_eq!(PackedQ::channel(wide, n, k, &q).unwrap().spills(), 0);
        // full-range codes would spill about half of every column
        let q = channel_quant(n, k, -128, 127, (0, 0), 1);
        assert!(PackedQ::channel(qk, n, k, &q).is_none());
        assert!(PackedQ::channel(wide, n, k, &q).is_some());
        assert!(
            PackedQ::new(&crate::cpu::scalar::QUANT_U8S8, 3, 16, &quant(3, 16, 16, 1)).is_none()
        );
    }

    #[test]
    fn unpackable_quantizations_are_refused() {
        for qk in quant_kernels() {
            let mut q = quant(4, 27, 9, 1);
            assert!(PackedQ::new(qk, 4, 27, &q).is_none(), "block of 9");
            q = quant(1, 4096, 4096, 1);
            q.codes[0] = 127;
            let overflows = 4096 * 127 * a_max(qk) as i64 > i32::MAX as i64;
            assert_eq!(
                PackedQ::new(qk, 1, 4096, &q).is_none(),
                overflows,
                "int32 range"
            );
            q = quant(4, 32, 32, 1);
            q.codes[5] = 200;
            assert!(PackedQ::new(qk, 4, 32, &q).is_none(), "8-bit code");
            q = quant(4, 32, 32, 1);
            q.scales.pop();
            assert!(PackedQ::new(qk, 4, 32, &q).is_none(), "short scales");
        }
    }
}
