//! ONNX `DynamicQuantizeLinear` for q8 activations: a tensor's scale and uint8 zero point, a
//! value's code, the row code writer that the row ops compile per ISA, and the forms the tiles
//! take the codes in.

/// How a tile takes q8 activations: `DynamicQuantizeLinear`'s uint8 codes `qa` with zero
/// point `za`, stored as `a* = qa − c` (`e = c − za` in
/// [`ChannelTerms`](super::tile::ChannelTerms)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActCodes {
    /// int8 `qa − 128` (the signed operand of relaxed-simd's dot product).
    Int8,
    /// uint8 `qa` (the unsigned operand of `vpdpbusd` / `vpmaddubsw`).
    Uint8,
    /// int16 `qa − za` (exact, no correction).
    Int16,
}

impl ActCodes {
    /// The `c` of `a* = qa − c` for a row whose zero point is `zp`.
    pub fn offset(self, zp: i32) -> i32 {
        match self {
            ActCodes::Int8 => 128,
            ActCodes::Uint8 => 0,
            ActCodes::Int16 => zp,
        }
    }
}

/// `DynamicQuantizeLinear`'s scale and uint8 zero point for values `x`, as ONNX Runtime
/// computes them: the range widened to include 0, `scale = (max − min) / 255` (1 when the
/// range is empty), `zp = round_half_even(clamp(−min / scale, 0, 255))`.
pub fn dynamic_params(x: impl IntoIterator<Item = f32>) -> (f32, i32) {
    let (min, max) = x
        .into_iter()
        .fold((0f32, 0f32), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let scale = if max == min { 1.0 } else { (max - min) / 255.0 };
    let zp = (0.0 - min / scale).clamp(0.0, 255.0).round_ties_even() as i32;
    (scale, zp)
}

/// `DynamicQuantizeLinear`'s code of `x`: `saturate(round_half_even(x / scale) + zp)`.
#[inline(always)]
pub fn dynamic_code(x: f32, scale: f32, zp: i32) -> i32 {
    (x / scale)
        .round_ties_even()
        .clamp(-zp as f32, (255 - zp) as f32) as i32
        + zp
}

/// How one row of A is stored by [`q8_codes`]: `a* = qa − c` as `codes`, where `qa` is the
/// `DynamicQuantizeLinear` code for `scale` and `zp`.
#[derive(Debug, Clone, Copy)]
pub struct Q8Row {
    pub scale: f32,
    pub zp: i32,
    pub c: i32,
    pub codes: ActCodes,
}

/// The running (min, max) of `x` from `init` (a NaN is skipped, as `f32::min` does). A plain
/// fold: LLVM vectorises its `minnum`/`maxnum` reductions per ISA (an array of lanes instead
/// was compiled with lane reversals every step). Compiled per ISA as a row op.
#[inline(always)]
pub fn q8_range(x: &[f32], init: (f32, f32)) -> (f32, f32) {
    x.iter().fold(init, |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

/// One row's `DynamicQuantizeLinear` codes stored as `row.codes` (`a* = qa − c`: uint8, int8
/// or little-endian int16) from the start of `out`, a code per byte or pair of bytes; returns
/// `Σ a*`. Bit for bit [`dynamic_code`]: the same division, the quotient clamped to the codes'
/// range (integer bounds, so clamping before rounding is the same) and rounded to nearest even by
/// adding 1.5·2^23 (exact for |q| < 2^22). Plain loops that vectorise per ISA (a row op). A NaN
/// gives an unspecified code.
#[inline(always)]
pub fn q8_codes(x: &[f32], row: Q8Row, out: &mut [u32]) -> i32 {
    let bytes = out.len() * 4;
    let out = out.as_mut_ptr();
    // SAFETY: `out` holds `bytes` bytes, aligned for any of the code types.
    unsafe {
        match row.codes {
            ActCodes::Uint8 => codes_as(
                x,
                row,
                std::slice::from_raw_parts_mut(out as *mut u8, bytes),
            ),
            ActCodes::Int8 => codes_as(
                x,
                row,
                std::slice::from_raw_parts_mut(out as *mut i8, bytes),
            ),
            ActCodes::Int16 => codes_as(
                x,
                row,
                std::slice::from_raw_parts_mut(out as *mut i16, bytes / 2),
            ),
        }
    }
}

/// The integer types A's codes are stored in.
trait Code: Copy {
    fn of(q: i32) -> Self;
}

impl Code for u8 {
    #[inline(always)]
    fn of(q: i32) -> u8 {
        q as u8
    }
}

impl Code for i8 {
    #[inline(always)]
    fn of(q: i32) -> i8 {
        q as i8
    }
}

impl Code for i16 {
    #[inline(always)]
    fn of(q: i32) -> i16 {
        (q as i16).to_le()
    }
}

#[inline(always)]
fn codes_as<T: Code>(x: &[f32], row: Q8Row, out: &mut [T]) -> i32 {
    const ROUNDER: f32 = 12_582_912.0; // 1.5 · 2^23
    assert!(out.len() >= x.len(), "room for a code per value");
    let (lo, hi) = (-row.zp as f32, (255 - row.zp) as f32);
    let shift = (row.zp - row.c).wrapping_sub(ROUNDER.to_bits() as i32);
    let mut sum = 0i32;
    for (o, &v) in out.iter_mut().zip(x) {
        let y = v / row.scale;
        let y = if y < lo { lo } else { y };
        let y = if y > hi { hi } else { y };
        let q = ((y + ROUNDER).to_bits() as i32).wrapping_add(shift);
        sum = sum.wrapping_add(q);
        *o = T::of(q);
    }
    sum
}

/// [`dynamic_params`] from the range of the values.
pub(super) fn params_of_range((min, max): (f32, f32)) -> (f32, i32) {
    dynamic_params([min, max])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::kernels::available;
    use crate::cpu::quant_fixtures::{q8_kernels, rand};

    /// `DynamicQuantizeLinear` on small cases worked by hand.
    #[test]
    fn dynamic_quantization_follows_onnx() {
        // all positive: min widened to 0, zero point 0; 2.0 is the top code
        let (s, z) = dynamic_params([0.5f32, 2.0]);
        assert_eq!((s, z), (2.0 / 255.0, 0));
        assert_eq!(dynamic_code(2.0, s, z), 255);
        // all negative: zero point 255
        let (s, z) = dynamic_params([-1.0f32, -0.25]);
        assert_eq!((s, z), (1.0 / 255.0, 255));
        assert_eq!(dynamic_code(-1.0, s, z), 0);
        assert_eq!(dynamic_code(0.0, s, z), 255);
        // empty range: scale 1, zero point 0
        assert_eq!(dynamic_params([0.0f32; 3]), (1.0, 0));
        // halves round to even; out of range saturates
        assert_eq!(dynamic_code(2.5, 1.0, 10), 12);
        assert_eq!(dynamic_code(3.5, 1.0, 10), 14);
        assert_eq!(dynamic_code(-20.0, 1.0, 10), 0);
        assert_eq!(dynamic_code(400.0, 1.0, 10), 255);
    }

    /// Every ISA's q8 row ops give `dynamic_params` / `dynamic_code` bit for bit: ties, values
    /// on and past the clamp bounds, signed zeros, tiny values, every code layout, ragged k.
    #[test]
    fn q8_row_ops_match_dynamic_quantize_linear() {
        let mut all = q8_kernels();
        all.extend(available().iter().filter_map(|k| k.quant));
        for qk in all {
            for k in [1usize, 3, 16, 17, 64, 101, 384] {
                for case in 0..4 {
                    let mut x: Vec<f32> = rand(k, (k + case) as u64)
                        .map(|r| (r % 20001) as f32 / 3000.0 - 3.0 * case as f32)
                        .collect();
                    if case == 3 {
                        x.iter_mut().for_each(|v| *v = v.abs() * 1e-3);
                    }
                    let (scale, zp) = dynamic_params(x.iter().copied());
                    // SAFETY: `q8_kernels` and `available` list kernels this machine runs.
                    let range = unsafe { (qk.ops.q8_range)(&x, (0.0, 0.0)) };
                    assert_eq!(params_of_range(range), (scale, zp), "{} range", qk.name);
                    // ties, bounds, far outside, zeros and a denormal
                    for (i, v) in [
                        2.5 * scale,
                        -3.5 * scale,
                        255.0 * scale,
                        1e6,
                        -1e6,
                        -0.0,
                        0.0,
                        1e-40,
                    ]
                    .into_iter()
                    .enumerate()
                    {
                        if i < k {
                            x[(i * 7) % k] = v;
                        }
                    }
                    for codes in [ActCodes::Uint8, ActCodes::Int8, ActCodes::Int16] {
                        let c = codes.offset(zp);
                        let row = Q8Row {
                            scale,
                            zp,
                            c,
                            codes,
                        };
                        let mut out = vec![0u32; k.div_ceil(2)];
                        // SAFETY: as above.
                        let sum = unsafe { (qk.ops.q8_codes)(&x, row, &mut out) };
                        let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_ne_bytes()).collect();
                        let want: Vec<i32> =
                            x.iter().map(|&v| dynamic_code(v, scale, zp) - c).collect();
                        assert_eq!(sum, want.iter().sum::<i32>(), "{} {codes:?} sum", qk.name);
                        for (i, &w) in want.iter().enumerate() {
                            let got = match codes {
                                ActCodes::Uint8 => bytes[i] as i32,
                                ActCodes::Int8 => bytes[i] as i8 as i32,
                                ActCodes::Int16 => {
                                    i16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]) as i32
                                }
                            };
                            assert_eq!(got, w, "{} {codes:?} k={k} x[{i}] = {}", qk.name, x[i]);
                        }
                    }
                }
            }
        }
    }
}
