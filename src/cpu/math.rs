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
fn activate(act: Activation, x: f32) -> f32 {
    match act {
        Activation::None => x,
        Activation::Gelu => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
        Activation::GeluTanh => 0.5 * x * (1.0 + tanh(0.797_884_6 * (x + 0.044_715 * x * x * x))),
        Activation::Relu => x.max(0.0),
        Activation::Tanh => tanh(x),
    }
}

/// `row = act(row + bias) + residual`.
#[inline(always)]
pub fn bias_act_residual(
    row: &mut [f32],
    bias: Option<&[f32]>,
    act: Activation,
    residual: Option<&[f32]>,
) {
    if let Some(b) = bias {
        row.iter_mut().zip(b).for_each(|(x, b)| *x += b);
    }
    if act != Activation::None {
        row.iter_mut().for_each(|x| *x = activate(act, *x));
    }
    if let Some(r) = residual {
        row.iter_mut().zip(r).for_each(|(x, r)| *x += r);
    }
}

#[inline(always)]
pub fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *x = (*x - mean) * inv * g + b;
    }
}

/// In-place softmax of `scale * row`.
#[inline(always)]
pub fn softmax_scaled(row: &mut [f32], scale: f32) {
    let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    let mut sum = 0.0;
    for x in row.iter_mut() {
        *x = exp((*x - max) * scale);
        sum += *x;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|x| *x *= inv);
}

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
        softmax_scaled(&mut r, 1.0);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((r[2] - 0.665_240_9).abs() < 1e-6);
        let mut r = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut r, &[1.0; 4], &[0.0; 4], 0.0);
        assert!((r[0] + 1.341_640_8).abs() < 1e-5);
    }
}
