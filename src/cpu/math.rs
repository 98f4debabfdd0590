//! Branch-free elementwise math the compiler can vectorise: exp, erf, tanh, activations,
//! softmax and LayerNorm rows. Accurate to a few ulp, well inside the 1e-4 parity budget.

use crate::model::Activation;

/// Round-to-nearest through the float mantissa; vectorises without SSE4.1's `roundps`.
#[inline(always)]
fn round(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
    (x + MAGIC) - MAGIC
}

/// `e^x` by range reduction to `[-ln2/2, ln2/2]` and a degree-6 polynomial (rel. err < 2e-7).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    let x = x.clamp(-87.3, 88.0);
    let n = round(x * std::f32::consts::LOG2_E);
    let r = x - n * 0.693_145_75 - n * 1.428_606_8e-6;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (0.166_666_67
                    + r * (0.041_666_41 + r * (0.008_333_452 + r * 0.001_388_947)))));
    f32::from_bits(((n as i32 + 127) << 23) as u32) * p
}

/// Abramowitz–Stegun 7.1.26 (abs. err < 1.5e-7).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let e = exp(2.0 * x.clamp(-9.0, 9.0));
    (e - 1.0) / (e + 1.0)
}

#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

#[inline(always)]
fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + tanh(0.797_884_6 * (x + 0.044_715 * x * x * x)))
}

/// One loop per activation (a `match` inside the loop would block vectorisation).
#[inline(always)]
fn activate(act: Activation, row: &mut [f32]) {
    match act {
        Activation::None => {}
        Activation::Gelu => {
            for x in row.iter_mut() {
                *x = gelu(*x);
            }
        }
        Activation::GeluTanh => {
            for x in row.iter_mut() {
                *x = gelu_tanh(*x);
            }
        }
        Activation::Relu => {
            for x in row.iter_mut() {
                *x = x.max(0.0);
            }
        }
        Activation::Tanh => {
            for x in row.iter_mut() {
                *x = tanh(*x);
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

/// In-place softmax of `scale * row` for each row of `cols` values.
#[inline(always)]
pub fn softmax_rows(rows: &mut [f32], cols: usize, scale: f32) {
    for row in rows.chunks_exact_mut(cols) {
        let m = max(row);
        for x in row.iter_mut() {
            *x = exp((*x - m) * scale);
        }
        let inv = 1.0 / sum(row);
        for x in row.iter_mut() {
            *x *= inv;
        }
    }
}

/// Row-wise elementwise ops, compiled once per ISA (see `row_ops!`).
pub struct RowOps {
    pub epilogue: unsafe fn(&mut [f32], &Epilogue),
    pub softmax: unsafe fn(&mut [f32], usize, f32),
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
            unsafe fn softmax(rows: &mut [f32], cols: usize, scale: f32) {
                $crate::cpu::math::softmax_rows(rows, cols, scale)
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
            let e = exp(x);
            assert!(((e - x.exp()) / x.exp()).abs() < 5e-7, "exp({x})");
            let (t, want) = (tanh(x), (x as f64).tanh() as f32);
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
            assert!((erf(x) - want).abs() < 5e-7, "erf({x}) = {}", erf(x));
        }
        assert_eq!(exp(-1000.0).min(1e-30), exp(-1000.0));
        assert!(exp(1000.0).is_finite());
    }

    #[test]
    fn softmax_and_layernorm() {
        let mut r = vec![1.0, 2.0, 3.0];
        softmax_rows(&mut r, 3, 1.0);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((r[2] - 0.665_240_9).abs() < 1e-6);
        let mut r = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut r, &[1.0; 4], &[0.0; 4], 0.0);
        assert!((r[0] + 1.341_640_8).abs() < 1e-5);
        let long: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
        assert_eq!(max(&long), 6.0);
        assert!((sum(&long) - long.iter().sum::<f32>()).abs() < 1e-4);
    }
}
