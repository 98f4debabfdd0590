//! Branch-free elementwise math the compiler can vectorise: exp, erf, tanh, activations,
//! softmax and LayerNorm rows. Accurate to a few ulp, well inside the 1e-4 parity budget.

use crate::model::Activation;

/// The polynomial coefficients and bounds of [`exp`], [`erf`] and [`tanh`], as values.
///
/// V8 rebuilds every `v128.const` inside a loop from immediates (3-4 instructions each, about
/// 20 per GELU vector), so on wasm the loops take them through [`opaque`] once per row: the
/// compiler then splats them before the loop and V8 keeps them in registers.
#[derive(Clone, Copy)]
pub struct Coeffs {
    exp_lo: f32,
    exp_hi: f32,
    log2_e: f32,
    rounder: f32,
    ln2_hi: f32,
    ln2_lo: f32,
    exp_poly: [f32; 5],
    erf_p: f32,
    erf_poly: [f32; 5],
    tanh_bound: f32,
    gelu_tanh: [f32; 2],
    frac_1_sqrt_2: f32,
    one: f32,
    half: f32,
    neg_zero: f32,
}

pub const COEFFS: Coeffs = Coeffs {
    exp_lo: -87.3,
    exp_hi: 88.0,
    log2_e: std::f32::consts::LOG2_E,
    // 1.5 · 2^23: adding it rounds a float below 2^22 in magnitude to an integer, which then
    // sits in the low mantissa bits (to nearest, without SSE4.1's `roundps`).
    rounder: 12_582_912.0,
    ln2_hi: 0.693_145_75,
    ln2_lo: 1.428_606_8e-6,
    // r²/2!, …, r⁶/6! (slightly tuned)
    exp_poly: [
        0.5,
        0.166_666_67,
        0.041_666_41,
        0.008_333_452,
        0.001_388_947,
    ],
    erf_p: 0.327_591_1,
    erf_poly: [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ],
    tanh_bound: 9.0,
    gelu_tanh: [0.797_884_6, 0.044_715],
    frac_1_sqrt_2: std::f32::consts::FRAC_1_SQRT_2,
    one: 1.0,
    half: 0.5,
    neg_zero: -0.0,
};

/// `x.clamp(lo, hi)` (NaN stays NaN) without `clamp`'s check that `lo <= hi`.
#[inline(always)]
fn clamp(x: f32, lo: f32, hi: f32) -> f32 {
    let x = if x < lo { lo } else { x };
    if x > hi {
        hi
    } else {
        x
    }
}

/// `v`, hidden from the optimiser on wasm (see [`Coeffs`]).
#[inline(always)]
pub fn opaque<T: Copy>(v: T) -> T {
    if cfg!(target_arch = "wasm32") {
        std::hint::black_box(v)
    } else {
        v
    }
}

/// `e^x` by range reduction to `[-ln2/2, ln2/2]` and a degree-6 polynomial (rel. err < 2e-7).
/// `2^n` is built from the rounded float's bits: a float-to-int conversion (saturating in Rust)
/// would not vectorise on x86 and costs a fix-up sequence in wasm.
#[inline(always)]
pub fn exp(x: f32, k: &Coeffs) -> f32 {
    let x = clamp(x, k.exp_lo, k.exp_hi);
    let t = x * k.log2_e + k.rounder;
    let n = t - k.rounder;
    let r = x - n * k.ln2_hi - n * k.ln2_lo;
    let [c2, c3, c4, c5, c6] = k.exp_poly;
    let p = k.one + r * (k.one + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * c6)))));
    // n = bits(t) - bits(rounder), in [-126, 127] after the clamp
    let biased = t
        .to_bits()
        .wrapping_sub(k.rounder.to_bits())
        .wrapping_add(127);
    f32::from_bits(biased << 23) * p
}

/// Abramowitz–Stegun 7.1.26 (abs. err < 1.5e-7).
#[inline(always)]
pub fn erf(x: f32, k: &Coeffs) -> f32 {
    let a = x.abs();
    let t = k.one / (k.one + k.erf_p * a);
    let [p1, p2, p3, p4, p5] = k.erf_poly;
    let poly = t * (p1 + t * (p2 + t * (p3 + t * (p4 + t * p5))));
    let y = k.one - poly * exp(-a * a, k);
    // `y.copysign(x)` with one mask constant (f32x4.abs needs none)
    f32::from_bits(y.abs().to_bits() | (x.to_bits() & k.neg_zero.to_bits()))
}

#[inline(always)]
pub fn tanh(x: f32, k: &Coeffs) -> f32 {
    let x = clamp(x, -k.tanh_bound, k.tanh_bound);
    let e = exp(x + x, k);
    (e - k.one) / (e + k.one)
}

#[inline(always)]
fn gelu(x: f32, k: &Coeffs) -> f32 {
    k.half * x * (k.one + erf(x * k.frac_1_sqrt_2, k))
}

#[inline(always)]
fn gelu_tanh(x: f32, k: &Coeffs) -> f32 {
    let [a, b] = k.gelu_tanh;
    k.half * x * (k.one + tanh(a * (x + b * x * x * x), k))
}

/// One loop per activation (a `match` inside the loop would block vectorisation).
#[inline(always)]
fn activate(act: Activation, row: &mut [f32]) {
    let k = &opaque(COEFFS);
    match act {
        Activation::None => {}
        Activation::Gelu => {
            for x in row.iter_mut() {
                *x = gelu(*x, k);
            }
        }
        Activation::GeluTanh => {
            for x in row.iter_mut() {
                *x = gelu_tanh(*x, k);
            }
        }
        Activation::Relu => {
            for x in row.iter_mut() {
                *x = x.max(0.0);
            }
        }
        Activation::Tanh => {
            for x in row.iter_mut() {
                *x = tanh(*x, k);
            }
        }
    }
}

/// Lane-parallel sum: independent accumulators let the compiler vectorise a float reduction.
#[inline(always)]
fn sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for i in 0..16 {
            acc[i] += c[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn max(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let chunks = x.chunks_exact(16);
    let tail = chunks
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    for c in chunks {
        for i in 0..16 {
            acc[i] = if c[i] > acc[i] { c[i] } else { acc[i] };
        }
    }
    acc.iter().fold(tail, |m, &v| if v > m { v } else { m })
}

/// What follows a GEMM, per output row: `LN(act(row + bias) + residual)`.
pub struct Epilogue<'a> {
    pub cols: usize,
    pub bias: Option<&'a [f32]>,
    pub act: Activation,
    /// Same shape as the output.
    pub residual: Option<&'a [f32]>,
    pub norm: Option<(&'a [f32], &'a [f32], f32)>,
}

#[inline(always)]
pub fn epilogue_rows(out: &mut [f32], e: &Epilogue) {
    for (r, row) in out.chunks_exact_mut(e.cols).enumerate() {
        // Plain loops, not `for_each` closures: they must inline into the caller's
        // `target_feature` function to be vectorised for its ISA.
        if let Some(b) = e.bias {
            for (x, b) in row.iter_mut().zip(b) {
                *x += b;
            }
        }
        activate(e.act, row);
        if let Some(res) = e.residual {
            for (x, r) in row.iter_mut().zip(&res[r * e.cols..(r + 1) * e.cols]) {
                *x += r;
            }
        }
        if let Some((g, b, eps)) = e.norm {
            layer_norm(row, g, b, eps);
        }
    }
}

#[inline(always)]
pub fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum(row) / n;
    for x in row.iter_mut() {
        *x -= mean;
    }
    let sq: f32 = {
        let mut acc = [0f32; 16];
        let chunks = row.chunks_exact(16);
        let tail: f32 = chunks.remainder().iter().map(|x| x * x).sum();
        for c in chunks {
            for i in 0..16 {
                acc[i] += c[i] * c[i];
            }
        }
        acc.iter().sum::<f32>() + tail
    };
    let inv = 1.0 / (sq / n + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = *x * inv * g + b;
    }
}

/// `exp(scale · (x − max))` in place for each row of `cols` values, leaving the division by the
/// row's sum to the caller (attention applies it to the much smaller `P·V`): `inv_sums[r]`
/// receives row `r`'s `1 / Σ`.
#[inline(always)]
pub fn softmax_rows(rows: &mut [f32], cols: usize, scale: f32, inv_sums: &mut [f32]) {
    let k = &opaque(COEFFS);
    for (row, inv) in rows.chunks_exact_mut(cols).zip(inv_sums.iter_mut()) {
        let m = max(row);
        // lane-parallel sum, as in `sum`, fused with the exponentials
        let mut acc = [0f32; 16];
        let mut chunks = row.chunks_exact_mut(16);
        for c in &mut chunks {
            for (x, a) in c.iter_mut().zip(acc.iter_mut()) {
                *x = exp((*x - m) * scale, k);
                *a += *x;
            }
        }
        let mut tail = 0.0;
        for x in chunks.into_remainder() {
            *x = exp((*x - m) * scale, k);
            tail += *x;
        }
        *inv = 1.0 / (acc.iter().sum::<f32>() + tail);
    }
}

/// Row-wise elementwise ops, compiled once per ISA (see `row_ops!`).
pub struct RowOps {
    pub epilogue: unsafe fn(&mut [f32], &Epilogue),
    pub softmax: unsafe fn(&mut [f32], usize, f32, &mut [f32]),
    pub layer_norm: unsafe fn(&mut [f32], &[f32], &[f32], f32),
}

/// Instantiates [`RowOps`] with the generic code compiled for the given target features.
macro_rules! row_ops {
    ($($feature:literal)?) => {
        pub static ROW_OPS: $crate::cpu::math::RowOps = {
            $(#[target_feature(enable = $feature)])?
            unsafe fn epilogue(out: &mut [f32], e: &$crate::cpu::math::Epilogue) {
                $crate::cpu::math::epilogue_rows(out, e)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn softmax(rows: &mut [f32], cols: usize, scale: f32, inv: &mut [f32]) {
                $crate::cpu::math::softmax_rows(rows, cols, scale, inv)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn layer_norm(row: &mut [f32], g: &[f32], b: &[f32], eps: f32) {
                $crate::cpu::math::layer_norm(row, g, b, eps)
            }
            $crate::cpu::math::RowOps { epilogue, softmax, layer_norm }
        };
    };
}
pub(crate) use row_ops;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_erf_tanh_match_std() {
        let mut x = -30.0f32;
        while x < 30.0 {
            let e = exp(x, &COEFFS);
            assert!(((e - x.exp()) / x.exp()).abs() < 5e-7, "exp({x})");
            let (t, want) = (tanh(x, &COEFFS), (x as f64).tanh() as f32);
            assert!((t - want).abs() < 3e-7, "tanh({x}) = {t} vs {want}");
            x += 0.01;
        }
        // erf reference values
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (-2.0, -0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            let got = erf(x, &COEFFS);
            assert!((got - want).abs() < 5e-7, "erf({x}) = {got}");
        }
        for x in [0.0f32, 1e-3, 0.7, 2.5] {
            assert_eq!(erf(-x, &COEFFS), -erf(x, &COEFFS), "erf is odd at {x}");
        }
        assert!(erf(f32::NAN, &COEFFS).is_nan() && exp(f32::NAN, &COEFFS).is_nan());
        let tiny = exp(-1000.0, &COEFFS);
        assert!(tiny > 0.0 && tiny < 1e-30);
        assert!(exp(1000.0, &COEFFS).is_finite());
    }

    #[test]
    fn softmax_and_layernorm() {
        let mut r = vec![1.0, 2.0, 3.0];
        let mut inv = [0.0];
        softmax_rows(&mut r, 3, 1.0, &mut inv);
        assert!((r.iter().sum::<f32>() * inv[0] - 1.0).abs() < 1e-6);
        assert!((r[2] * inv[0] - 0.665_240_9).abs() < 1e-6);
        // rows longer than one 16-lane chunk, scaled
        let x: Vec<f32> = (0..2 * 37).map(|i| (i % 37) as f32 * 0.3 - 5.0).collect();
        let (mut r, mut inv) = (x.clone(), [0.0; 2]);
        softmax_rows(&mut r, 37, 0.5, &mut inv);
        for (row, (xs, inv)) in r.chunks(37).zip(x.chunks(37).zip(inv)) {
            let sum: f64 = xs.iter().map(|&v| (0.5 * v as f64).exp()).sum();
            for (p, &v) in row.iter().zip(xs) {
                let want = (0.5 * v as f64).exp() / sum;
                assert!((*p as f64 * inv as f64 - want).abs() < 1e-6);
            }
        }
        let mut r = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut r, &[1.0; 4], &[0.0; 4], 0.0);
        assert!((r[0] + 1.341_640_8).abs() < 1e-5);
        let long: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
        assert_eq!(max(&long), 6.0);
        assert!((sum(&long) - long.iter().sum::<f32>()).abs() < 1e-4);
    }
}
