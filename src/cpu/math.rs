//! Branch-free elementwise math, written once over [`Lanes`]: exp, erf, tanh, activations,
//! softmax and LayerNorm rows. Accurate to a few ulp, well inside the 1e-4 parity budget.

use crate::model::Activation;

/// The f32 arithmetic the elementwise functions are written in: `f32` itself (portable loops
/// the compiler vectorises for the kernel's ISA) or one SIMD register where a kernel implements
/// it by hand (wasm's `f32x4`, whose `madd` can then be fused).
pub trait Lanes: Copy {
    /// Values per register, at most 16.
    const WIDTH: usize;
    fn splat(x: f32) -> Self;
    /// The first `WIDTH` values of `s`.
    fn load(s: &[f32]) -> Self;
    fn store(self, s: &mut [f32]);
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    fn div(self, b: Self) -> Self;
    /// `self · b + c`, rounded once or twice: whichever the ISA does faster.
    fn madd(self, b: Self, c: Self) -> Self;
    /// `b` where `b < self`, else `self` (a NaN `self` stays).
    fn min(self, b: Self) -> Self;
    /// `b` where `self < b`, else `self` (a NaN `self` stays).
    fn max(self, b: Self) -> Self;
    /// The float whose bits are `(bits(self) − bits(bias)) << 23`.
    fn sub_bits_shl23(self, bias: Self) -> Self;
    fn sum_lanes(self) -> f32;
    fn max_lanes(self) -> f32;
}

impl Lanes for f32 {
    const WIDTH: usize = 1;
    #[inline(always)]
    fn splat(x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn load(s: &[f32]) -> f32 {
        s[0]
    }
    #[inline(always)]
    fn store(self, s: &mut [f32]) {
        s[0] = self;
    }
    #[inline(always)]
    fn add(self, b: f32) -> f32 {
        self + b
    }
    #[inline(always)]
    fn sub(self, b: f32) -> f32 {
        self - b
    }
    #[inline(always)]
    fn mul(self, b: f32) -> f32 {
        self * b
    }
    #[inline(always)]
    fn div(self, b: f32) -> f32 {
        self / b
    }
    #[inline(always)]
    fn madd(self, b: f32, c: f32) -> f32 {
        self * b + c
    }
    #[inline(always)]
    fn min(self, b: f32) -> f32 {
        if b < self {
            b
        } else {
            self
        }
    }
    #[inline(always)]
    fn max(self, b: f32) -> f32 {
        if self < b {
            b
        } else {
            self
        }
    }
    #[inline(always)]
    fn sub_bits_shl23(self, bias: f32) -> f32 {
        f32::from_bits(self.to_bits().wrapping_sub(bias.to_bits()) << 23)
    }
    #[inline(always)]
    fn sum_lanes(self) -> f32 {
        self
    }
    #[inline(always)]
    fn max_lanes(self) -> f32 {
        self
    }
}

/// The polynomial coefficients and bounds of [`exp`], [`erf`] and [`tanh`], as values.
///
/// V8 rebuilds every `v128.const` inside a loop from immediates, several instructions for each
/// of a GELU vector's constants, so on wasm the loops take them through [`opaque`] once per
/// row: the compiler then splats them before the loop and V8 keeps them in registers.
#[derive(Clone, Copy)]
pub struct Coeffs {
    exp_lo: f32,
    exp_hi: f32,
    log2_e: f32,
    rounder: f32,
    exp_bias: f32,
    neg_ln2_hi: f32,
    neg_ln2_lo: f32,
    exp_poly: [f32; 5],
    erf_bound: f32,
    erf_num: [f32; 7],
    erf_den: [f32; 5],
    tanh_bound: f32,
    gelu_tanh: [f32; 2],
    frac_1_sqrt_2: f32,
    zero: f32,
    one: f32,
    half: f32,
}

/// 1.5 · 2^23: adding it rounds a float below 2^22 in magnitude to an integer, which then sits
/// in the low mantissa bits (to nearest, without SSE4.1's `roundps`).
const ROUNDER: f32 = 12_582_912.0;

pub const COEFFS: Coeffs = Coeffs {
    exp_lo: -87.3,
    exp_hi: 88.0,
    log2_e: std::f32::consts::LOG2_E,
    rounder: ROUNDER,
    // bits(n + ROUNDER) − bits(exp_bias) = n + 127, the biased exponent of 2^n
    exp_bias: f32::from_bits(ROUNDER.to_bits() - 127),
    neg_ln2_hi: -0.693_145_75,
    neg_ln2_lo: -1.428_606_8e-6,
    // r²/2!, …, r⁶/6! (slightly tuned)
    exp_poly: [
        0.5,
        0.166_666_67,
        0.041_666_41,
        0.008_333_452,
        0.001_388_947,
    ],
    // erf(x) = x·P(x²)/Q(x²) on [-4, 4] (±1 in f32 beyond), the rational fit of Eigen and XLA:
    // P's coefficients of x⁰…x¹², Q's of x⁰…x⁸
    erf_bound: 4.0,
    erf_num: [
        -1.609_603_3e-2,
        -2.954_6e-3,
        -7.349_906_3e-4,
        -5.692_506_4e-5,
        -2.101_024e-6,
        2.770_681_4e-8,
        -2.726_142_3e-10,
    ],
    erf_den: [
        -1.426_473_9e-2,
        -7.373_329_2e-3,
        -1.682_827e-3,
        -2.133_740_6e-4,
        -1.456_607_2e-5,
    ],
    tanh_bound: 9.0,
    gelu_tanh: [0.797_884_6, 0.044_715],
    frac_1_sqrt_2: std::f32::consts::FRAC_1_SQRT_2,
    zero: 0.0,
    one: 1.0,
    half: 0.5,
};

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
pub fn exp<L: Lanes>(x: L, k: &Coeffs) -> L {
    let s = L::splat;
    let x = x.max(s(k.exp_lo)).min(s(k.exp_hi));
    let t = x.madd(s(k.log2_e), s(k.rounder));
    let n = t.sub(s(k.rounder));
    let r = n.madd(s(k.neg_ln2_hi), x);
    let r = n.madd(s(k.neg_ln2_lo), r);
    let [c2, c3, c4, c5, c6] = k.exp_poly.map(s);
    let p = r.madd(c6, c5).madd(r, c4).madd(r, c3).madd(r, c2);
    let p = p.madd(r, s(k.one)).madd(r, s(k.one));
    // n in [-126, 127] after the clamp
    t.sub_bits_shl23(s(k.exp_bias)).mul(p)
}

/// `erf(x)` (abs. err < 5e-7): a rational function, one division and no exponential.
#[inline(always)]
pub fn erf<L: Lanes>(x: L, k: &Coeffs) -> L {
    let s = L::splat;
    let x = x.max(s(-k.erf_bound)).min(s(k.erf_bound));
    let x2 = x.mul(x);
    let [p0, p1, p2, p3, p4, p5, p6] = k.erf_num.map(s);
    let p = p6.madd(x2, p5).madd(x2, p4).madd(x2, p3).madd(x2, p2);
    let p = p.madd(x2, p1).madd(x2, p0).mul(x);
    let [q0, q1, q2, q3, q4] = k.erf_den.map(s);
    let q = q4.madd(x2, q3).madd(x2, q2).madd(x2, q1).madd(x2, q0);
    p.div(q)
}

#[inline(always)]
pub fn tanh<L: Lanes>(x: L, k: &Coeffs) -> L {
    let x = x.max(L::splat(-k.tanh_bound)).min(L::splat(k.tanh_bound));
    let e = exp(x.add(x), k);
    let one = L::splat(k.one);
    e.sub(one).div(e.add(one))
}

/// `x/2 · (1 + erf(x/√2))`
#[inline(always)]
fn gelu<L: Lanes>(x: L, k: &Coeffs) -> L {
    let h = x.mul(L::splat(k.half));
    erf(x.mul(L::splat(k.frac_1_sqrt_2)), k).madd(h, h)
}

#[inline(always)]
fn gelu_tanh<L: Lanes>(x: L, k: &Coeffs) -> L {
    let [a, b] = k.gelu_tanh.map(L::splat);
    let h = x.mul(L::splat(k.half));
    let inner = x.mul(x).mul(x).madd(b, x).mul(a);
    tanh(inner, k).madd(h, h)
}

/// `x / (1 + e^-x)`
#[inline(always)]
fn silu<L: Lanes>(x: L, k: &Coeffs) -> L {
    x.div(exp(x.mul(L::splat(-k.one)), k).add(L::splat(k.one)))
}

/// `row[i] = f(row[i])`, `L::WIDTH` values at a time (a zero-padded register for the tail).
#[inline(always)]
fn map<L: Lanes>(row: &mut [f32], f: impl Fn(L) -> L) {
    let mut chunks = row.chunks_exact_mut(L::WIDTH);
    for c in &mut chunks {
        f(L::load(c)).store(c);
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        let mut t = [0f32; 16];
        t[..rest.len()].copy_from_slice(rest);
        f(L::load(&t)).store(&mut t);
        rest.copy_from_slice(&t[..rest.len()]);
    }
}

/// One loop per activation (a `match` inside the loop would block vectorisation).
#[inline(always)]
fn activate<L: Lanes>(act: Activation, row: &mut [f32]) {
    let k = &opaque(COEFFS);
    match act {
        Activation::None => {}
        Activation::Gelu => map(row, |x: L| gelu(x, k)),
        Activation::GeluTanh => map(row, |x: L| gelu_tanh(x, k)),
        Activation::Relu => map(row, |x: L| x.max(L::splat(k.zero))),
        Activation::Tanh => map(row, |x: L| tanh(x, k)),
        Activation::Silu => map(row, |x: L| silu(x, k)),
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

/// What follows a GEMM, per output row: `LN(act(row + bias) + residual)`.
#[derive(Clone, Copy)]
pub struct Epilogue<'a> {
    pub cols: usize,
    pub bias: Option<&'a [f32]>,
    pub act: Activation,
    /// Same shape as the output.
    pub residual: Option<&'a [f32]>,
    /// `(gamma, beta, eps, centered)`: a LayerNorm, or an RMSNorm where not `centered`.
    pub norm: Option<(&'a [f32], &'a [f32], f32, bool)>,
}

#[inline(always)]
pub fn epilogue_rows<L: Lanes>(out: &mut [f32], e: &Epilogue) {
    for (r, row) in out.chunks_exact_mut(e.cols).enumerate() {
        // Plain loops, not `for_each` closures: they must inline into the caller's
        // `target_feature` function to be vectorised for its ISA.
        if let Some(b) = e.bias {
            for (x, b) in row.iter_mut().zip(b) {
                *x += b;
            }
        }
        activate::<L>(e.act, row);
        if let Some(res) = e.residual {
            for (x, r) in row.iter_mut().zip(&res[r * e.cols..(r + 1) * e.cols]) {
                *x += r;
            }
        }
        if let Some((g, b, eps, centered)) = e.norm {
            layer_norm(row, g, b, eps, centered);
        }
    }
}

/// LayerNorm of a row; RMSNorm (no mean subtracted) where not `centered`.
#[inline(always)]
pub fn layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32, centered: bool) {
    let n = row.len() as f32;
    if centered {
        let mean = sum(row) / n;
        for x in row.iter_mut() {
            *x -= mean;
        }
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
pub fn softmax_rows<L: Lanes>(rows: &mut [f32], cols: usize, scale: f32, inv_sums: &mut [f32]) {
    let k = &opaque(COEFFS);
    // 16 lanes of independent accumulators, so the loops are not one long dependency (and
    // scalar code vectorises)
    let (n, w) = (16 / L::WIDTH, 16);
    for (row, inv) in rows.chunks_exact_mut(cols).zip(inv_sums.iter_mut()) {
        let mut mx = [L::splat(f32::NEG_INFINITY); 16];
        let mut chunks = row.chunks_exact(w);
        for c in &mut chunks {
            for (j, m) in mx[..n].iter_mut().enumerate() {
                *m = m.max(L::load(&c[j * L::WIDTH..]));
            }
        }
        let m = chunks.remainder().iter().fold(
            mx[..n]
                .iter()
                .map(|v| v.max_lanes())
                .fold(f32::NEG_INFINITY, f32::max),
            |m, &x| m.max(x),
        );
        // exp(x·scale − m·scale), fused with the sums
        let (sv, shift) = (L::splat(scale), L::splat(-m * scale));
        let mut acc = [L::splat(0.0); 16];
        let mut chunks = row.chunks_exact_mut(w);
        for c in &mut chunks {
            for (j, a) in acc[..n].iter_mut().enumerate() {
                let v = &mut c[j * L::WIDTH..];
                let e = exp(L::load(v).madd(sv, shift), k);
                e.store(v);
                *a = a.add(e);
            }
        }
        let mut total: f32 = acc[..n].iter().map(|a| a.sum_lanes()).sum();
        for x in chunks.into_remainder() {
            *x = exp(x.madd(scale, -m * scale), k);
            total += *x;
        }
        *inv = 1.0 / total;
    }
}

/// The running (min, max) of a row from a start value.
pub type RangeFn = unsafe fn(&[f32], (f32, f32)) -> (f32, f32);

/// Row-wise elementwise ops, compiled once per ISA (see `row_ops!`).
pub struct RowOps {
    pub epilogue: unsafe fn(&mut [f32], &Epilogue),
    pub softmax: unsafe fn(&mut [f32], usize, f32, &mut [f32]),
    pub layer_norm: unsafe fn(&mut [f32], &[f32], &[f32], f32, bool),
    /// The running (min, max) of a row from a start value (`dynamic_quant::q8_range`).
    pub q8_range: RangeFn,
    /// One row's `DynamicQuantizeLinear` codes (`dynamic_quant::q8_codes`).
    pub q8_codes: unsafe fn(&[f32], crate::cpu::dynamic_quant::Q8Row, &mut [u32]) -> i32,
}

/// Instantiates [`RowOps`] with the generic code compiled for the given [`Lanes`] and target
/// features.
macro_rules! row_ops {
    ($lanes:ty $(, $feature:literal)?) => {
        pub static ROW_OPS: $crate::cpu::math::RowOps = {
            type L = $lanes;
            $(#[target_feature(enable = $feature)])?
            unsafe fn epilogue(out: &mut [f32], e: &$crate::cpu::math::Epilogue) {
                $crate::cpu::math::epilogue_rows::<L>(out, e)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn softmax(rows: &mut [f32], cols: usize, scale: f32, inv: &mut [f32]) {
                $crate::cpu::math::softmax_rows::<L>(rows, cols, scale, inv)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn layer_norm(row: &mut [f32], g: &[f32], b: &[f32], eps: f32, c: bool) {
                $crate::cpu::math::layer_norm(row, g, b, eps, c)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn q8_range(x: &[f32], init: (f32, f32)) -> (f32, f32) {
                $crate::cpu::dynamic_quant::q8_range(x, init)
            }
            $(#[target_feature(enable = $feature)])?
            unsafe fn q8_codes(
                x: &[f32],
                row: $crate::cpu::dynamic_quant::Q8Row,
                out: &mut [u32],
            ) -> i32 {
                $crate::cpu::dynamic_quant::q8_codes(x, row, out)
            }
            $crate::cpu::math::RowOps {
                epilogue,
                softmax,
                layer_norm,
                q8_range,
                q8_codes,
            }
        };
    };
}
pub(crate) use row_ops;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::activation::erf_series;

    #[test]
    fn exp_erf_tanh_match_std() {
        let mut x = -30.0f32;
        while x < 30.0 {
            let e = exp::<f32>(x, &COEFFS);
            assert!(((e - x.exp()) / x.exp()).abs() < 5e-7, "exp({x})");
            let (t, want) = (tanh::<f32>(x, &COEFFS), (x as f64).tanh() as f32);
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
            let got = erf::<f32>(x, &COEFFS);
            assert!((got - want).abs() < 5e-7, "erf({x}) = {got}");
        }
        for x in [0.0f32, 1e-3, 0.7, 2.5] {
            assert_eq!(
                erf(-x, &COEFFS),
                -erf::<f32>(x, &COEFFS),
                "erf is odd at {x}"
            );
        }
        assert!(erf(f32::NAN, &COEFFS).is_nan() && exp(f32::NAN, &COEFFS).is_nan());
        let tiny = exp(-1000.0, &COEFFS);
        assert!(tiny > 0.0 && tiny < 1e-30);
        assert!(exp(1000.0, &COEFFS).is_finite());
    }

    #[test]
    fn erf_is_accurate_everywhere() {
        let mut x = -6.0f32;
        while x <= 6.0 {
            let got = erf::<f32>(x, &COEFFS) as f64;
            let want = if x.abs() <= 3.0 {
                erf_series(x as f64)
            } else {
                // 1 − erfc(x), erfc(3) = 2.2e-5
                (x as f64).signum()
            };
            let tol = if x.abs() <= 3.0 { 5e-7 } else { 3e-5 };
            assert!((got - want).abs() < tol, "erf({x}) = {got} vs {want}");
            x += 1e-3;
        }
        assert!(erf::<f32>(f32::NAN, &COEFFS).is_nan());
    }

    /// Each kernel's row ops (SIMD lanes where it has them, tails included) against the
    /// portable `f32` ones.
    #[test]
    fn every_kernel_row_ops_match_the_portable_ones() {
        use crate::cpu::kernels::available;
        let cols = 37;
        let x: Vec<f32> = (0..3 * cols)
            .map(|i| (i as f32 * 0.37).sin() * 6.0)
            .collect();
        for kern in available() {
            for act in [
                Activation::Gelu,
                Activation::GeluTanh,
                Activation::Tanh,
                Activation::Relu,
                Activation::Silu,
            ] {
                let e = Epilogue {
                    cols,
                    bias: None,
                    act,
                    residual: None,
                    norm: None,
                };
                let (mut got, mut want) = (x.clone(), x.clone());
                // SAFETY: `available` lists kernels this CPU runs.
                unsafe { (kern.ops.epilogue)(&mut got, &e) };
                epilogue_rows::<f32>(&mut want, &e);
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - w).abs() <= 2e-6 * w.abs().max(1.0),
                        "{kern:?} {act:?} at {i}"
                    );
                }
            }
            let (mut got, mut want) = (x.clone(), x.clone());
            let (mut inv_got, mut inv_want) = ([0.0; 3], [0.0; 3]);
            // SAFETY: as above.
            unsafe { (kern.ops.softmax)(&mut got, cols, 0.7, &mut inv_got) };
            softmax_rows::<f32>(&mut want, cols, 0.7, &mut inv_want);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let (g, w) = (g * inv_got[i / cols], w * inv_want[i / cols]);
                assert!((g - w).abs() <= 1e-6, "{kern:?} softmax at {i}: {g} vs {w}");
            }
        }
    }

    #[test]
    fn softmax_and_layernorm() {
        let mut r = vec![1.0, 2.0, 3.0];
        let mut inv = [0.0];
        softmax_rows::<f32>(&mut r, 3, 1.0, &mut inv);
        assert!((r.iter().sum::<f32>() * inv[0] - 1.0).abs() < 1e-6);
        assert!((r[2] * inv[0] - 0.665_240_9).abs() < 1e-6);
        // rows longer than one 16-lane chunk, scaled
        let x: Vec<f32> = (0..2 * 37).map(|i| (i % 37) as f32 * 0.3 - 5.0).collect();
        let (mut r, mut inv) = (x.clone(), [0.0; 2]);
        softmax_rows::<f32>(&mut r, 37, 0.5, &mut inv);
        for (row, (xs, inv)) in r.chunks(37).zip(x.chunks(37).zip(inv)) {
            let sum: f64 = xs.iter().map(|&v| (0.5 * v as f64).exp()).sum();
            for (p, &v) in row.iter().zip(xs) {
                let want = (0.5 * v as f64).exp() / sum;
                assert!((*p as f64 * inv as f64 - want).abs() < 1e-6);
            }
        }
        let mut r = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(&mut r, &[1.0; 4], &[0.0; 4], 0.0, true);
        assert!((r[0] + 1.341_640_8).abs() < 1e-5);
        // RMSNorm: 1 / sqrt(mean(1, 4, 9, 16) + 0.5) = 1 / sqrt(8), then the weight and bias
        let mut r = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(
            &mut r,
            &[1.0, 2.0, 1.0, 1.0],
            &[0.0, 0.0, 0.0, 0.5],
            0.5,
            false,
        );
        let inv = 1.0 / 8f32.sqrt();
        let want = [inv, 4.0 * inv, 3.0 * inv, 4.0 * inv + 0.5];
        assert!(
            r.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6),
            "{r:?}"
        );
        let long: Vec<f32> = (0..37).map(|i| i as f32 * 0.25 - 3.0).collect();
        assert!((sum(&long) - long.iter().sum::<f32>()).abs() < 1e-4);
    }
}
