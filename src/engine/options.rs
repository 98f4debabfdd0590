//! How to load a model: the device, how `auto` chooses it, and each backend's settings.

use crate::exec::Quantized;
use crate::gpu::GpuOptions;
use crate::model::budget;

/// Where the model runs: `auto`, `gpu` (also `webgpu`) or `cpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(not(target_arch = "wasm32"), derive(clap::ValueEnum))]
pub enum Device {
    /// The GPU when a hardware adapter works and is faster than the CPU at load (one forward
    /// timed on each), else the CPU; falls back to the CPU for good if the GPU fails later
    /// (device lost, validation error).
    #[default]
    Auto,
    /// The GPU, any adapter (software ones included); its failures are errors.
    #[serde(alias = "webgpu")]
    #[cfg_attr(not(target_arch = "wasm32"), value(alias = "webgpu"))]
    Gpu,
    Cpu,
}

/// How [`Device::Auto`] chooses between the GPU and the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AutoOptions {
    /// Let a CPU-emulated adapter (lavapipe, SwiftShader) take part; otherwise it is skipped as
    /// slower than the CPU path.
    pub allow_software: bool,
    /// Time one forward on each backend at load and keep the GPU only if it is faster. Off,
    /// a GPU that sets up is used: tests and benchmarks of the GPU path under auto.
    pub probe: bool,
}

impl Default for AutoOptions {
    fn default() -> Self {
        AutoOptions {
            allow_software: false,
            probe: true,
        }
    }
}

/// How to load a model ([`Engine::load`]); the default is `auto` with every setting at its
/// default. The library reads no environment variables: the CLI maps its `WEBERT_*` onto this.
///
/// [`Engine::load`]: super::Engine::load
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub device: Device,
    /// How `Device::Auto` chooses between the GPU and the CPU.
    pub auto: AutoOptions,
    /// Settings of the GPU executor (f16 weights, binding limit).
    pub gpu: GpuOptions,
    /// The CPU micro-kernel by name (see [`kernels::names`]); `None` picks the fastest this
    /// machine runs. A name it cannot run is an error.
    ///
    /// [`kernels::names`]: crate::cpu::kernels::names
    pub isa: Option<String>,
    /// CPU threads (the caller's included) of the process-wide pool that every engine shares;
    /// `None` leaves the pool as it is.
    pub threads: Option<usize>,
    /// How the CPU path computes with q4 weights (the GPU dequantizes them).
    pub quantized: Quantized,
    /// Bytes the model's f32 weights and one batch's activations may take together; a model
    /// or a call that would need more is refused before allocating ([`Error::Budget`]).
    /// `None`: [`budget::DEFAULT`] (2 GiB in wasm32, 8 GiB natively).
    ///
    /// [`Error::Budget`]: crate::error::Error::Budget
    pub memory_budget: Option<u64>,
    /// The GPU's hidden states come back shifted by one token, as a miscompiled shader's
    /// might (tests of the probe's check of answers).
    #[cfg(feature = "test-hooks")]
    pub shift_gpu_rows_for_test: bool,
}

impl LoadOptions {
    /// The memory budget in effect.
    pub fn budget(&self) -> u64 {
        self.memory_budget.unwrap_or(budget::DEFAULT)
    }

    /// The CPU only, every other setting at its default.
    pub fn cpu() -> Self {
        LoadOptions {
            device: Device::Cpu,
            ..Default::default()
        }
    }
}
