//! webert: BERT-family encoders from one plan, executed on CPU SIMD kernels or WebGPU.
#![cfg_attr(
    all(target_arch = "wasm32", target_feature = "atomics"),
    feature(stdarch_wasm_atomic_wait)
)]

pub mod byte_sizes;
pub mod cpu;
pub mod engine;
pub mod error;
pub mod exec;
#[doc(hidden)]
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub mod fuzz;
pub mod gpu;
pub mod model;
pub mod tasks;

pub use error::{Error, GpuError, GpuErrorKind, Result};
pub mod web;
