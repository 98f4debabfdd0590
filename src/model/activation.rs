//! The activation functions a layer or head applies, by the names configs give them.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
