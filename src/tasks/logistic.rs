//! L2-regularised logistic regression with exactly scikit-learn's `LogisticRegression(C)`
//! objective (lbfgs, sklearn ≥ 1.5): an unpenalised intercept, and
//!
//! - two classes: one coefficient vector, ½‖w‖² + C Σᵢ log(1 + exp(−ŷᵢ (w·xᵢ + b))), ŷ ∈ {−1, 1};
//! - more: one vector per class, ½‖W‖² + C Σᵢ CE(softmax(W xᵢ + b), yᵢ).
//!
//! Solved in f64 by L-BFGS from zero to a gradient far below sklearn's `tol`; no randomness,
//! every sum in a fixed order, so a fit is reproducible bit for bit on one platform.

use crate::error::{Error, Result};

/// A fitted model in scikit-learn's layout: `coef` `[rows, d]` row-major and `intercept`
/// `[rows]`, with one row for two classes (the second class's logit against the first) and
/// one per class otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    pub coef: Vec<f64>,
    pub intercept: Vec<f64>,
    pub rows: usize,
    pub iterations: usize,
    /// The largest gradient component of the objective divided by `C · n` at the end.
    pub gradient: f64,
    pub converged: bool,
}

/// The objective's gradient (divided by `C · n`) at which L-BFGS stops; f64 rounding may stop
/// it a little above, which still counts as converged below `CONVERGED`.
const GTOL: f64 = 1e-10;
const CONVERGED: f64 = 1e-8;
const MAX_ITER: usize = 5000;
/// L-BFGS history length.
const MEMORY: usize = 20;

/// Fits `n` rows of `d` features (`x` row-major) to classes `y` (each below `classes`).
pub fn fit(x: &[f64], d: usize, y: &[usize], classes: usize, c: f64) -> Result<Fit> {
    let n = y.len();
    if !(c.is_finite() && c > 0.0) {
        return Err(Error::Input(format!(
            "C must be a positive finite number, got {c}"
        )));
    }
    if classes < 2 {
        return Err(Error::Input(
            "training needs examples of at least two labels".into(),
        ));
    }
    if d == 0 || x.len() != n * d {
        return Err(Error::Input(format!(
            "{} feature values for {n} examples of {d} features",
            x.len()
        )));
    }
    if let Some(bad) = y.iter().find(|&&k| k >= classes) {
        return Err(Error::Input(format!("class {bad} of {classes}")));
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::Input("features must be finite numbers".into()));
    }
    let rows = if classes == 2 { 1 } else { classes };
    // The unpenalised intercept absorbs any shift of the features: W(x − μ) + (b + Wμ) is the
    // same model under the same penalty. Centred features condition L-BFGS much better
    // (sentence embeddings share a large common direction); b is moved back at the end.
    let mut mean = vec![0.0; d];
    x.chunks_exact(d).for_each(|xi| axpy(1.0, xi, &mut mean));
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let centred: Vec<f64> = (x.chunks_exact(d))
        .flat_map(|xi| xi.iter().zip(&mean).map(|(v, m)| v - m))
        .collect();
    let problem = Problem {
        x: &centred,
        y,
        d,
        rows,
        scale: 1.0 / (c * n as f64),
        inv_n: 1.0 / n as f64,
    };
    let (theta, iterations, gradient) = lbfgs(&problem, rows * (d + 1));
    let (coef, intercept) = theta.split_at(rows * d);
    let mut intercept: Vec<f64> = (intercept.iter().zip(coef.chunks_exact(d)))
        .map(|(b, w)| b - dot(w, &mean))
        .collect();
    if rows > 1 {
        // Softmax ignores a shift common to every intercept; sklearn's lbfgs keeps their sum
        // at zero, which this fixes whatever rounding did on the way.
        let mean = intercept.iter().sum::<f64>() / rows as f64;
        intercept.iter_mut().for_each(|b| *b -= mean);
    }
    Ok(Fit {
        coef: coef.to_vec(),
        intercept,
        rows,
        iterations,
        gradient,
        converged: gradient <= CONVERGED,
    })
}

/// The objective divided by `C · n`: mean loss + ‖W‖² / (2 C n).
struct Problem<'a> {
    x: &'a [f64],
    y: &'a [usize],
    d: usize,
    rows: usize,
    /// 1 / (C n): the penalty's weight.
    scale: f64,
    inv_n: f64,
}

impl Problem<'_> {
    /// The objective at `theta` (`[W | b]`); its gradient into `grad`.
    fn eval(&self, theta: &[f64], grad: &mut [f64]) -> f64 {
        let (d, rows) = (self.d, self.rows);
        let (w, b) = theta.split_at(rows * d);
        grad.fill(0.0);
        let (gw, gb) = grad.split_at_mut(rows * d);
        let mut loss = 0.0;
        let mut z = vec![0.0; rows.max(2)];
        for (xi, &yi) in self.x.chunks_exact(d).zip(self.y) {
            for (k, zk) in z.iter_mut().take(rows).enumerate() {
                *zk = dot(&w[k * d..(k + 1) * d], xi) + b[k];
            }
            if rows == 1 {
                // Binary: p = σ(z), loss = softplus(z) − y z, residual p − y.
                let (zi, t) = (z[0], (yi == 1) as u8 as f64);
                loss += zi.max(0.0) + (-zi.abs()).exp().ln_1p() - t * zi;
                let r = sigmoid(zi) - t;
                axpy(r, xi, &mut gw[..d]);
                gb[0] += r;
            } else {
                let max = z.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v));
                let sum: f64 = z.iter().map(|&v| (v - max).exp()).sum();
                loss += max + sum.ln() - z[yi];
                for k in 0..rows {
                    let r = (z[k] - max).exp() / sum - (k == yi) as u8 as f64;
                    axpy(r, xi, &mut gw[k * d..(k + 1) * d]);
                    gb[k] += r;
                }
            }
        }
        let mut penalty = 0.0;
        for (g, &wi) in gw.iter_mut().zip(w) {
            *g = *g * self.inv_n + self.scale * wi;
            penalty += wi * wi;
        }
        gb.iter_mut().for_each(|g| *g *= self.inv_n);
        loss * self.inv_n + 0.5 * self.scale * penalty
    }
}

fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Dot product with four running sums (vectorises; the order is fixed, so is the result).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..4 {
            acc[j] += x[j] * y[j];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    y.iter_mut().zip(x).for_each(|(y, x)| *y += a * x);
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// L-BFGS with a backtracking (Armijo) line search, from zero: `(θ, iterations, |∇|∞)`.
fn lbfgs(p: &Problem, len: usize) -> (Vec<f64>, usize, f64) {
    let mut theta = vec![0.0; len];
    let mut grad = vec![0.0; len];
    let mut f = p.eval(&theta, &mut grad);
    let mut history: std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)> =
        std::collections::VecDeque::with_capacity(MEMORY);
    let (mut next, mut next_grad) = (vec![0.0; len], vec![0.0; len]);
    let mut iter = 0;
    while iter < MAX_ITER && max_abs(&grad) > GTOL {
        iter += 1;
        let dir = direction(&grad, &history);
        let slope = dot(&grad, &dir);
        if slope >= 0.0 {
            // Not a descent direction (rounding): start again from the gradient.
            history.clear();
            continue;
        }
        let mut step = if history.is_empty() {
            (1.0 / max_abs(&grad)).min(1.0)
        } else {
            1.0
        };
        let mut accepted = None;
        for _ in 0..60 {
            for i in 0..len {
                next[i] = theta[i] + step * dir[i];
            }
            let fnext = p.eval(&next, &mut next_grad);
            // Armijo; or, where f has no digits left to decrease, Hager and Zhang's
            // approximate Wolfe conditions on the slope along the step.
            let slope_next = dot(&next_grad, &dir);
            let armijo = fnext <= f + 1e-4 * step * slope;
            let approx_wolfe = fnext <= f + 1e-12 * f.abs()
                && slope_next <= -(1.0 - 2e-4) * slope
                && slope_next >= 0.9 * slope;
            if armijo || approx_wolfe {
                accepted = Some(fnext);
                break;
            }
            step *= 0.5;
        }
        let Some(fnext) = accepted else {
            break; // no decrease left at f64 precision
        };
        let s: Vec<f64> = (0..len).map(|i| next[i] - theta[i]).collect();
        let yv: Vec<f64> = (0..len).map(|i| next_grad[i] - grad[i]).collect();
        let sy = dot(&s, &yv);
        let done = max_abs(&s) <= 1e-15 * max_abs(&next).max(1.0);
        std::mem::swap(&mut theta, &mut next);
        std::mem::swap(&mut grad, &mut next_grad);
        f = fnext;
        if sy > 1e-300 {
            if history.len() == MEMORY {
                history.pop_front();
            }
            history.push_back((s, yv, 1.0 / sy));
        }
        if done {
            break;
        }
    }
    let g = max_abs(&grad);
    (theta, iter, g)
}

/// The two-loop recursion: −H∇ for the inverse Hessian approximation of `history`.
fn direction(
    grad: &[f64],
    history: &std::collections::VecDeque<(Vec<f64>, Vec<f64>, f64)>,
) -> Vec<f64> {
    let mut q: Vec<f64> = grad.iter().map(|g| -g).collect();
    let mut alphas = Vec::with_capacity(history.len());
    for (s, y, rho) in history.iter().rev() {
        let a = rho * dot(s, &q);
        axpy(-a, y, &mut q);
        alphas.push(a);
    }
    if let Some((s, y, _)) = history.back() {
        let gamma = dot(s, y) / dot(y, y);
        q.iter_mut().for_each(|v| *v *= gamma);
    }
    for ((s, y, rho), a) in history.iter().zip(alphas.into_iter().rev()) {
        let b = rho * dot(y, &q);
        axpy(a - b, s, &mut q);
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic data set: `n` points of `d` features around class centres.
    fn data(n: usize, d: usize, classes: usize) -> (Vec<f64>, Vec<usize>) {
        let mut state = 12345u64;
        let mut rand = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..n {
            let k = i % classes;
            for j in 0..d {
                x.push(rand() + if j % classes == k { 0.8 } else { 0.0 });
            }
            y.push(k);
        }
        (x, y)
    }

    /// The optimality conditions of the objective: W = C Σ (y − p) xᵀ, Σ (y − p) = 0.
    fn check_stationary(x: &[f64], y: &[usize], d: usize, classes: usize, c: f64, f: &Fit) {
        let rows = f.rows;
        let mut gw = vec![0.0; rows * d];
        let mut gb = vec![0.0; rows];
        for (xi, &yi) in x.chunks_exact(d).zip(y) {
            let z: Vec<f64> = (0..rows)
                .map(|k| dot(&f.coef[k * d..(k + 1) * d], xi) + f.intercept[k])
                .collect();
            let p: Vec<f64> = if rows == 1 {
                vec![sigmoid(z[0])]
            } else {
                let m = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
                z.iter().map(|v| (v - m).exp() / s).collect()
            };
            for k in 0..rows {
                let t = if rows == 1 {
                    (yi == 1) as u8
                } else {
                    (yi == k) as u8
                } as f64;
                axpy(c * (p[k] - t), xi, &mut gw[k * d..(k + 1) * d]);
                gb[k] += c * (p[k] - t);
            }
        }
        // The gradient of the objective divided by C n, as the solver's tolerance is.
        let cn = c * y.len() as f64;
        for (g, w) in gw.iter().zip(&f.coef) {
            assert!(((g + w) / cn).abs() < 1e-9, "dW = {}", g + w);
        }
        for g in gb {
            assert!((g / cn).abs() < 1e-9, "db = {g}");
        }
        assert!(f.converged, "{f:?}");
        let _ = classes;
    }

    #[test]
    fn multinomial_fit_is_stationary_and_repeatable() {
        let (d, k) = (7, 3);
        let (x, y) = data(60, d, k);
        for c in [0.1, 1.0, 100.0] {
            let f = fit(&x, d, &y, k, c).unwrap();
            assert_eq!((f.rows, f.coef.len()), (3, 21));
            check_stationary(&x, &y, d, k, c, &f);
            assert!(f.intercept.iter().sum::<f64>().abs() < 1e-12);
            assert_eq!(f, fit(&x, d, &y, k, c).unwrap());
        }
    }

    #[test]
    fn binary_fit_is_one_logistic_vector() {
        let d = 5;
        let (x, y) = data(40, d, 2);
        let f = fit(&x, d, &y, 2, 1.0).unwrap();
        assert_eq!((f.rows, f.coef.len(), f.intercept.len()), (1, 5, 1));
        check_stationary(&x, &y, d, 2, 1.0, &f);
    }

    #[test]
    fn separable_data_still_converges_under_the_penalty() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let f = fit(&x, 1, &[0, 0, 1, 1], 2, 1000.0).unwrap();
        check_stationary(&x, &[0, 0, 1, 1], 1, 2, 1000.0, &f);
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(fit(&[1.0, 2.0], 1, &[0, 1], 2, 0.0).is_err());
        assert!(fit(&[1.0, 2.0], 1, &[0, 1], 2, f64::INFINITY).is_err());
        assert!(fit(&[1.0, 2.0], 1, &[0, 0], 1, 1.0).is_err());
        assert!(fit(&[1.0], 1, &[0, 1], 2, 1.0).is_err());
        assert!(fit(&[1.0, f64::NAN], 1, &[0, 1], 2, 1.0).is_err());
        assert!(fit(&[1.0, 2.0], 1, &[0, 2], 2, 1.0).is_err());
    }
}
