//! A loaded model: config, tokenizer and its executors, CPU and GPU. Tasks talk to this, never
//! to an executor directly.

mod auto;
mod backend;
mod clock;
mod cpu;
mod encode;
mod image;
mod load;
mod load_times;
mod options;
mod probe;
mod profile;
mod roofline;
mod run;
#[cfg(any(test, feature = "test-hooks"))]
mod test_hooks;

use crate::error::{Error, Result};
pub use crate::exec::{Quantized, Want};
#[cfg(feature = "test-hooks")]
pub use crate::gpu::forget_tilings_for_test as forget_gpu_tilings_for_test;
use crate::gpu::GpuExecutor;
pub use crate::gpu::{
    export_tilings as export_gpu_tilings, import_tilings as import_gpu_tilings,
    tilings_timed as gpu_tilings_timed,
};
pub use crate::gpu::{GpuOptions, KernelOptions, TileChoice, WeightBytes};
use crate::model::{Architecture, HeadKind, ModelConfig, Plan, TextTokenizer};
pub use encode::too_long;
pub use load_times::LoadTimes;
pub use options::{AutoOptions, Device, LoadOptions};
pub use probe::{Probe, PROBE_AGREEMENT};
pub use roofline::Roofline;
pub use run::WindowOutput;
use std::sync::{Arc, Mutex};

struct Gpu {
    exec: GpuExecutor,
    /// Set after a failure under `Device::Auto`: the CPU answers from then on.
    failed: Option<String>,
}

/// Watches a call's windows: before each batch, and once all are done, `between(done, total)`
/// reports the windows run so far; its future resolving to `false` cancels the call
/// ([`Error::Cancelled`]). A watched call runs one window per batch (CPU and GPU), so that
/// progress and cancelling go by window.
pub trait Watch: Send + Sync {
    fn between(
        &self,
        done: usize,
        total: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool>>>;
}

pub struct Engine {
    pub config: ModelConfig,
    pub tokenizer: TextTokenizer,
    plan: Arc<Plan>,
    cpu: cpu::Cpu,
    gpu: Mutex<Option<Gpu>>,
    device: Device,
    kernel: &'static str,
    int_kernel: Option<&'static str>,
    last_backend: Mutex<String>,
    probe: Option<Probe>,
    load_times: LoadTimes,
    watch: Mutex<Option<Arc<dyn Watch>>>,
    #[cfg(any(test, feature = "test-hooks"))]
    panic_next: std::sync::atomic::AtomicBool,
}

impl Engine {
    pub fn architecture(&self) -> Architecture {
        self.config.architecture
    }

    /// Where the load's time went.
    pub fn load_times(&self) -> LoadTimes {
        self.load_times
    }

    /// What to ask `run` for to get the logits of the model's head of `kind` (`what` names
    /// it in the error when the checkpoint has none): the one way a task asks for a head.
    pub fn want_head(&self, kind: HeadKind, what: &'static str) -> Result<Want> {
        match self.plan.head_of(kind) {
            Some(0) => Ok(Want::Logits),
            Some(i) => Ok(Want::Head(i)),
            None => Err(Error::WrongHead(what, self.config.architecture_name())),
        }
    }
}
