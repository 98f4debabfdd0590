//! webert: BERT-family encoders from one plan, executed on CPU SIMD kernels or WebGPU.

pub mod cpu;
pub mod engine;
pub mod error;
pub mod gpu;
pub mod model;
pub mod tasks;

pub use error::{Error, Result};
pub mod web;
