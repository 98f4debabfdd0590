//! Building an engine: weights within the memory budget, the CPU executor, and the GPU's
//! where the device asks for one.

use super::cpu::Cpu;
use super::load_times::{Laps, LoadTimes};
use super::options::{Device, LoadOptions};
use super::{Engine, Gpu};
use crate::cpu::tile::Kernel;
use crate::cpu::{kernels, pool, CpuModel};
use crate::error::{Error, GpuErrorKind, Result};
use crate::gpu::{GpuContext, GpuExecutor, GpuOptions};
use crate::model::{budget, ModelConfig, ModelFiles, Plan, TextTokenizer, Weights};
use std::sync::{Arc, Mutex};

impl Engine {
    /// Loads a model folder's files for `options.device`; with `Auto`, a GPU that cannot be
    /// set up, or is slower than the CPU, means the CPU.
    pub async fn load(files: ModelFiles, options: LoadOptions) -> Result<Engine> {
        let mut laps = Laps::start();
        let (config, tokenizer, weights) = files.load_within(options.budget())?;
        let parse_ms = laps.lap();
        let mut engine = Engine::build(config, tokenizer, weights, options).await?;
        engine.load_times.parse_ms = parse_ms;
        Ok(engine)
    }

    /// As [`Engine::load`], from a config, tokenizer and weights already at hand (the CLI's
    /// random models of standard shapes for timing).
    pub async fn build(
        config: ModelConfig,
        tokenizer: TextTokenizer,
        weights: Weights,
        options: LoadOptions,
    ) -> Result<Engine> {
        let kernel = cpu_setup(&options)?;
        let held = weights.bytes();
        let what = || format!("the weights of this {}", config.architecture_name());
        budget::check(what, Some(held), options.budget())?;
        let mut laps = Laps::start();
        let (plan, tensors) = Plan::build(config.clone(), weights)?;
        let plan_ms = laps.lap();
        let plan = Arc::new(plan);
        let (device, auto) = (options.device, options.auto);
        let gpu_options = options.gpu.for_quantized(options.quantized);
        #[allow(unused_mut)]
        let mut gpu = match device {
            Device::Cpu => None,
            Device::Gpu => Some(Engine::gpu(&plan, &tensors, true, gpu_options).await?),
            Device::Auto => {
                (Engine::gpu(&plan, &tensors, auto.allow_software, gpu_options).await).ok()
            }
        };
        #[cfg(feature = "test-hooks")]
        if let Some(g) = gpu.as_mut().filter(|_| options.shift_gpu_rows_for_test) {
            g.shift_rows_for_test();
        }
        let gpu_ms = laps.lap();
        let mut cpu = CpuModel::new(plan.clone(), tensors, kernel, options.quantized);
        let pack_ms = laps.lap();
        cpu.set_budget(options.budget().saturating_sub(held));
        let times = LoadTimes {
            plan_ms,
            gpu_ms,
            pack_ms,
            ..LoadTimes::default()
        };
        let mut engine = Engine::assemble(config, tokenizer, plan, cpu, gpu, device, times);
        if device == Device::Auto && auto.probe {
            engine.probe_backends().await;
            engine.load_times.probe_ms = laps.lap();
        }
        Ok(engine)
    }

    /// An engine of its parts, the GPU's where there is one.
    pub(super) fn assemble(
        config: ModelConfig,
        tokenizer: TextTokenizer,
        plan: Arc<Plan>,
        cpu: CpuModel,
        gpu: Option<GpuExecutor>,
        device: Device,
        load_times: LoadTimes,
    ) -> Engine {
        let (kernel, int_kernel) = (cpu.kernel_name(), cpu.int_kernel_name());
        let last = match &gpu {
            Some(g) => format!("gpu {}", g.adapter_name()),
            None => format!("cpu-{kernel}"),
        };
        Engine {
            config,
            tokenizer,
            plan,
            cpu: Cpu::new(cpu),
            gpu: Mutex::new(gpu.map(|exec| Gpu { exec, failed: None })),
            device,
            kernel,
            int_kernel,
            last_backend: Mutex::new(last),
            probe: None,
            load_times,
            watch: Mutex::new(None),
            #[cfg(any(test, feature = "test-hooks"))]
            panic_next: Default::default(),
        }
    }

    async fn gpu(
        plan: &Arc<Plan>,
        tensors: &[crate::model::Tensor],
        allow_software: bool,
        options: GpuOptions,
    ) -> Result<GpuExecutor> {
        let ctx = GpuContext::new(options).await?;
        if !allow_software && ctx.is_software() {
            return Err(Error::gpu(
                GpuErrorKind::Unavailable,
                format!(
                    "{} is a software adapter, slower than the CPU path",
                    ctx.name()
                ),
            ));
        }
        GpuExecutor::new(ctx, plan.clone(), tensors)
    }
}

/// The kernel `options` ask for (else this machine's fastest), with the CPU threads set.
pub(super) fn cpu_setup(options: &LoadOptions) -> Result<&'static Kernel> {
    let kernel = match &options.isa {
        Some(name) => kernels::by_name(name)?,
        None => kernels::select(),
    };
    match options.threads {
        Some(0) => return Err(Error::Input("threads must be at least 1".into())),
        Some(n) => pool::set_threads(n),
        None => {}
    }
    Ok(kernel)
}
