//! Which backend runs an engine's calls, and why the GPU was given up where it was.

use super::probe::Probe;
use super::Engine;
use crate::gpu::WeightBytes;

impl Engine {
    /// Bytes of weights on the GPU and what they would take dequantized (f32, or f16 with
    /// `shader-f16`); `None` without a GPU executor.
    pub fn gpu_weight_bytes(&self) -> Option<WeightBytes> {
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        gpu.as_ref().map(|g| g.exec.weight_bytes())
    }

    /// The CPU's integer tile for block-quantized (q4) weights, e.g. `relaxed-simd int8`; `None`
    /// when the CPU computes every weight in f32.
    pub fn int_kernel(&self) -> Option<&'static str> {
        self.int_kernel
    }

    /// The backend of the latest forward pass (before any, the one that will be tried first):
    /// `gpu <adapter>` or `cpu-<isa>`.
    pub fn backend(&self) -> String {
        self.last_backend
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Why the GPU was given up for the CPU, if it was: a failure, or the load-time probe.
    pub fn gpu_failure(&self) -> Option<String> {
        let failed = (self.gpu.lock().unwrap_or_else(|p| p.into_inner()))
            .as_ref()
            .and_then(|g| g.failed.clone());
        failed.or_else(|| {
            (self.probe.as_ref())
                .filter(|p| !p.gpu_wins())
                .map(Probe::to_string)
        })
    }

    /// The load-time timing of both backends under [`Device::Auto`], when it ran.
    ///
    /// [`Device::Auto`]: super::Device::Auto
    pub fn probe(&self) -> Option<&Probe> {
        self.probe.as_ref()
    }

    /// Whether a GPU executor is held (it may have failed since: see `gpu_failure`; one
    /// slower than the CPU at load is dropped).
    pub fn has_gpu(&self) -> bool {
        self.gpu.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    pub(super) fn set_backend(&self, b: String) {
        *self.last_backend.lock().unwrap_or_else(|p| p.into_inner()) = b;
    }
}
