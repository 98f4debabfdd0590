//! Executes the plan on the CPU with the best SIMD micro-kernel for this machine.

pub mod attention;
pub mod bandwidth;
pub mod dynamic_quant;
mod executor;
mod forward;
pub mod gemm;
mod half_values;
pub mod image;
pub mod kernels;
pub mod math;
mod model;
mod ops;
mod palette;
pub mod peak;
pub mod pool;
pub mod prefetch_trial;
pub mod qgemm;
pub mod qpack;
mod quant_fixtures;
pub mod quantize;
mod rotary;
mod scalar;
mod state;
pub mod tile;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(all(target_arch = "wasm32", target_feature = "relaxed-simd"))]
mod relaxed;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;

pub use executor::CpuExecutor;
pub use model::CpuModel;
pub use prefetch_trial::{PrefetchChoice, PrefetchTrial};
pub use state::CpuState;
