//! The activation functions a layer or head applies, by the names configs give them.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Activation {
    None,
    /// Exact GELU with erf.
    Gelu,
    /// GELU with the tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
    Tanh,
    /// `x · sigmoid(x)` (`silu`, `swish`).
    Silu,
}

impl Activation {
    pub(super) fn parse(file: &str, name: &str) -> Result<Self> {
        match name {
            "gelu" | "gelu_python" => Ok(Activation::Gelu),
            "gelu_new" | "gelu_pytorch_tanh" | "gelu_fast" => Ok(Activation::GeluTanh),
            "relu" => Ok(Activation::Relu),
            "tanh" => Ok(Activation::Tanh),
            "silu" | "swish" => Ok(Activation::Silu),
            other => Err(Error::config(
                file,
                format!("unsupported hidden_act `{other}`; supported: gelu, gelu_new, gelu_pytorch_tanh, relu, tanh, silu"),
            )),
        }
    }
}

/// erf in f64 by its Taylor series, the reference both executors' erf is tested against
/// (exact to ~1e-13 for |x| ≤ 3, ~1e-9 at 4).
#[cfg(test)]
pub fn erf_series(x: f64) -> f64 {
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}
