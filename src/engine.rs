//! A loaded model: config, tokenizer and an executor, plus padding of tokenized windows into
//! batches. Tasks talk to this, never to an executor directly.

use crate::cpu::{kernels, pool, CpuExecutor};
use crate::error::{Error, GpuErrorKind, Result};
use crate::exec::{Batch, Output};
pub use crate::exec::{Quantized, Want};
#[cfg(feature = "test-hooks")]
pub use crate::gpu::forget_tilings_for_test as forget_gpu_tilings_for_test;
pub use crate::gpu::{
    export_tilings as export_gpu_tilings, import_tilings as import_gpu_tilings,
    tilings_timed as gpu_tilings_timed,
};
use crate::gpu::{GpuContext, GpuExecutor};
pub use crate::gpu::{GpuOptions, KernelOptions, TileChoice, WeightBytes};
use crate::model::{
    budget, Architecture, HeadKind, ModelConfig, ModelFiles, Plan, Rows, TextTokenizer, Weights,
    Windowing,
};
use std::sync::{Arc, Mutex};
use tokenizers::Encoding;

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

/// The load-time timing under [`Device::Auto`]: one window of `tokens` tokens, encoder and
/// head, on each backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    pub adapter: String,
    pub tokens: usize,
    /// Best of two, after a warm-up (pipeline compilation, buffer sizing).
    pub gpu_ms: f64,
    /// Best of one or two: a second run only when the first was slower than the GPU.
    pub cpu_ms: f64,
    /// How alike the two hidden states of the window are: their cosine once the CPU's mean
    /// token is taken from both (`centred_cosine`): 1 for the same answers, ~0 for unrelated
    /// ones.
    pub agreement: f64,
}

/// Below this `Probe::agreement` the GPU computes wrong answers (a driver's miscompiled
/// shader, say) and is given up however fast it is. Correct f16 or low-bit GPU kernels stay
/// above 0.99 of the CPU's.
pub const PROBE_AGREEMENT: f64 = 0.9;

impl Probe {
    /// The GPU is kept only when its answers agree with the CPU's and it is strictly faster
    /// (a NaN timing or agreement means the CPU).
    pub fn gpu_wins(&self) -> bool {
        self.agrees() && gpu_is_faster(self.gpu_ms, self.cpu_ms)
    }

    pub fn agrees(&self) -> bool {
        self.agreement >= PROBE_AGREEMENT
    }
}

fn gpu_is_faster(gpu_ms: f64, cpu_ms: f64) -> bool {
    gpu_ms < cpu_ms
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} took {:.1} ms for {} tokens, the CPU path {:.1} ms; hidden states agree to {:.5}{}: using the {}",
            self.adapter,
            self.gpu_ms,
            self.tokens,
            self.cpu_ms,
            self.agreement,
            if self.agrees() { "" } else { " (wrong answers on the GPU)" },
            if self.gpu_wins() { "GPU" } else { "CPU" }
        )
    }
}

/// The probe's window length (capped at the model's).
const PROBE_TOKENS: usize = 128;

/// How to load a model ([`Engine::load`]); the default is `auto` with every setting at its
/// default. The library reads no environment variables: the CLI maps its `WEBERT_*` onto this.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub device: Device,
    /// How `Device::Auto` chooses between the GPU and the CPU.
    pub auto: AutoOptions,
    /// Settings of the GPU executor (f16 weights, binding limit).
    pub gpu: GpuOptions,
    /// The CPU micro-kernel by name (see [`kernels::names`]); `None` picks the fastest this
    /// machine runs. A name it cannot run is an error.
    pub isa: Option<String>,
    /// CPU threads (the caller's included) of the process-wide pool that every engine shares;
    /// `None` leaves the pool as it is.
    pub threads: Option<usize>,
    /// How the CPU path computes with q4 weights (the GPU dequantizes them).
    pub quantized: Quantized,
    /// Bytes the model's f32 weights and one batch's activations may take together; a model
    /// or a call that would need more is refused before allocating ([`Error::Budget`]).
    /// `None`: [`budget::DEFAULT`] (2 GiB in wasm32, 8 GiB natively).
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

struct Gpu {
    exec: GpuExecutor,
    /// Set after a failure under `Device::Auto`: the CPU answers from then on.
    failed: Option<String>,
}

/// Most windows run in one forward pass; bounds activation memory on long documents.
const MAX_BATCH: usize = 32;

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
    cpu: Mutex<CpuExecutor>,
    gpu: Mutex<Option<Gpu>>,
    device: Device,
    kernel: &'static str,
    int_kernel: Option<&'static str>,
    last_backend: Mutex<String>,
    probe: Option<Probe>,
    watch: Mutex<Option<Arc<dyn Watch>>>,
    #[cfg(any(test, feature = "test-hooks"))]
    panic_next: std::sync::atomic::AtomicBool,
}

/// Per window: the hidden states `[len, h]` and the head's logits rows for it, each empty
/// when not asked for.
#[derive(Debug)]
pub struct WindowOutput {
    pub hidden: Vec<f32>,
    pub logits: Vec<f32>,
}

impl Engine {
    /// Loads a model folder's files for `options.device`; with `Auto`, a GPU that cannot be
    /// set up, or is slower than the CPU, means the CPU.
    pub async fn load(files: ModelFiles, options: LoadOptions) -> Result<Engine> {
        let (config, tokenizer, weights) = files.load_within(options.budget())?;
        Engine::build(config, tokenizer, weights, options).await
    }

    /// As [`Engine::load`], from a config, tokenizer and weights already at hand (the CLI's
    /// random models of standard shapes for timing).
    pub async fn build(
        config: ModelConfig,
        tokenizer: TextTokenizer,
        weights: Weights,
        options: LoadOptions,
    ) -> Result<Engine> {
        let kernel = match &options.isa {
            Some(name) => kernels::by_name(name)?,
            None => kernels::select(),
        };
        match options.threads {
            Some(0) => return Err(Error::Input("threads must be at least 1".into())),
            Some(n) => pool::set_threads(n),
            None => {}
        }
        let held = weights.bytes();
        let what = || format!("the weights of this {}", config.architecture_name());
        budget::check(what, Some(held), options.budget())?;
        let (plan, tensors) = Plan::build(config.clone(), weights)?;
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
        let mut cpu = CpuExecutor::new(plan.clone(), tensors, kernel, options.quantized);
        cpu.set_budget(options.budget().saturating_sub(held));
        let (kernel, int_kernel) = (cpu.kernel_name(), cpu.int_kernel_name());
        let last = match &gpu {
            Some(g) => format!("gpu {}", g.adapter_name()),
            None => format!("cpu-{kernel}"),
        };
        let mut engine = Engine {
            config,
            tokenizer,
            plan,
            cpu: Mutex::new(cpu),
            gpu: Mutex::new(gpu.map(|exec| Gpu { exec, failed: None })),
            device,
            kernel,
            int_kernel,
            last_backend: Mutex::new(last),
            probe: None,
            watch: Mutex::new(None),
            #[cfg(any(test, feature = "test-hooks"))]
            panic_next: Default::default(),
        };
        if device == Device::Auto && auto.probe {
            engine.probe_backends().await;
        }
        Ok(engine)
    }

    /// What the probe's forwards ask for: the hidden state (compared), and the head's logits
    /// where there is a head (what tasks read).
    fn probe_want(&self) -> Want {
        match self.plan.heads.is_empty() {
            false => Want::Both,
            true => Want::Hidden,
        }
    }

    /// Times one window on the GPU and on the CPU, and gives the GPU up (freeing its
    /// memory) unless it is faster and its hidden state agrees with the CPU's. A GPU error
    /// here counts as a failure under auto.
    async fn probe_backends(&mut self) {
        let tokens = self.max_len().min(PROBE_TOKENS);
        if tokens == 0 || !self.has_gpu() {
            return;
        }
        let batch = self.probe_batch(tokens);
        let want = self.probe_want();
        let cpu_backend = format!("cpu-{}", self.kernel);
        let last_backend = self
            .last_backend
            .get_mut()
            .unwrap_or_else(|p| p.into_inner());
        let gpu = self.gpu.get_mut().unwrap_or_else(|p| p.into_inner());
        let Some(g) = gpu.as_mut() else { return };
        let (gpu_ms, gpu_out) = match best_gpu_ms(&mut g.exec, &batch, want).await {
            Ok(timed) => timed,
            Err(e) => {
                g.failed = Some(e.to_string());
                *last_backend = cpu_backend;
                return;
            }
        };
        let adapter = g.exec.adapter_name();
        let cpu = self.cpu.get_mut().unwrap_or_else(|p| p.into_inner());
        let Ok((mut cpu_ms, cpu_out)) = cpu_ms_of(cpu, &batch, want) else {
            return; // the CPU path itself fails: the GPU stays
        };
        let agreement = centred_cosine(
            gpu_out.hidden.as_deref().unwrap_or_default(),
            cpu_out.hidden.as_deref().unwrap_or_default(),
            self.config.hidden_size,
        );
        if gpu_is_faster(gpu_ms, cpu_ms) {
            // That CPU run was the first (cold): one more before the GPU wins.
            if let Ok((again, _)) = cpu_ms_of(cpu, &batch, want) {
                cpu_ms = cpu_ms.min(again);
            }
        }
        let probe = Probe {
            adapter,
            tokens,
            gpu_ms,
            cpu_ms,
            agreement,
        };
        if !probe.gpu_wins() {
            *gpu = None;
            *last_backend = cpu_backend;
        }
        self.probe = Some(probe);
    }

    /// One window of `n` valid ids: `[CLS]` (when the tokenizer has one), then ordinary ids;
    /// one picked row for heads over picked rows (fill-mask).
    fn probe_batch(&self, n: usize) -> Batch {
        let vocab = self.config.vocab_size.max(1);
        let mut ids: Vec<u32> = (0..n).map(|i| ((1000 + i) % vocab) as u32).collect();
        if let Some(cls) = self.tokenizer.cls_id {
            ids[0] = cls;
        }
        let picks = self.plan.logits_rows(0) == Some(Rows::Picked);
        Batch {
            ids,
            type_ids: vec![0; n],
            lens: vec![n],
            seq_len: n,
            picked: if picks { vec![n / 2] } else { Vec::new() },
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
    pub fn probe(&self) -> Option<&Probe> {
        self.probe.as_ref()
    }

    /// Whether a GPU executor is held (it may have failed since: see `gpu_failure`; one
    /// slower than the CPU at load is dropped).
    pub fn has_gpu(&self) -> bool {
        self.gpu.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Makes the next GPU call fail as if the device were lost (tests of the fallback).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn lose_gpu_for_test(&self) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            g.exec.destroy_device();
        }
    }

    /// Makes the GPU device go lost with a submission in flight, after `after` more submissions
    /// (a forward is one, or one per part of a batch too large to bind): a loss in the middle of
    /// a call.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn lose_gpu_during_forward_for_test(&self, after: usize) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            g.exec.destroy_device_during_submission(after);
        }
    }

    /// Rounds the GPU's timestamps down to multiples of `ms`, as browsers do, so that timing
    /// GEMM tilings repeats its candidates as it must there.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn round_gpu_timestamps_for_test(&self, ms: f64) {
        self.with_gpu_for_test(|exec| exec.round_timestamps_for_test(ms));
    }

    /// Applies a test hook to the GPU executor, where there is one.
    #[cfg(any(test, feature = "test-hooks"))]
    fn with_gpu_for_test(&self, hook: impl FnOnce(&mut GpuExecutor)) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            hook(&mut g.exec);
        }
    }

    /// Pretends the GPU offers cooperative matrices that compute wrong answers, which their
    /// check on the device must catch before a forward uses them.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn fail_gpu_coop_check_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.fail_coop_check_for_test());
    }

    /// Pretends the GPU offers cooperative matrices whose shader the device refuses: that must
    /// turn them off, not count as the device failing.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn refuse_gpu_coop_shader_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.refuse_coop_shader_for_test());
    }

    /// The cooperative-matrix check's verdict on a stand-in (the tiled f16 GEMM on 16-row
    /// tiles; on another layer's weights when `wrong`): `None` when it agrees with the 64-row
    /// one, else why not.
    #[cfg(any(test, feature = "test-hooks"))]
    #[allow(clippy::await_holding_lock)]
    pub async fn check_gpu_gemm_for_test(&self, wrong: bool) -> Result<Option<String>> {
        let dims = self.probe_batch(8).dims();
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        let Some(g) = gpu.as_ref() else {
            return Ok(None);
        };
        g.exec.check_gemm_for_test(dims, wrong).await
    }

    /// Makes the GPU device refuse the timing of GEMM tilings, as a driver might.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn refuse_gpu_timing_for_test(&self) {
        self.with_gpu_for_test(|exec| exec.refuse_timing_for_test());
    }

    /// Makes the next forward pass panic, as a bug inside a call would (tests of the recovery
    /// from a trapped WebAssembly instance).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn panic_in_next_forward_for_test(&self) {
        self.panic_next
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The GPU's tiling of each GEMM of a forward over `windows` (empty on the CPU).
    pub fn gpu_gemm_plans(&self, windows: &[Encoding]) -> Vec<String> {
        let batch = self.pad(windows, &[]);
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        (gpu.as_ref()).map_or_else(Vec::new, |g| g.exec.gemm_plans(batch.dims()))
    }

    /// The GEMM tilings the GPU timed so far, a line per shape with each candidate's GPU ms
    /// (empty on the CPU or when tilings go by rule).
    pub fn gpu_gemm_timings(&self) -> Vec<String> {
        let gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        (gpu.as_ref()).map_or_else(Vec::new, |g| g.exec.gemm_timings())
    }

    /// Per-kernel GPU milliseconds for one forward over `windows` (padded as `run` pads them),
    /// with the task head's as `head` when `want` runs it, when the model runs on a GPU with
    /// timestamp queries.
    #[allow(clippy::await_holding_lock)]
    pub async fn gpu_profile(
        &self,
        windows: &[Encoding],
        want: Want,
    ) -> Result<Option<Vec<(&'static str, f64)>>> {
        let batch = self.pad(windows, &[]);
        let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        match gpu.as_mut() {
            Some(g) => g.exec.profile(&batch, want).await,
            None => Ok(None),
        }
    }

    /// Milliseconds per kind of op of one CPU forward over `windows` (encoder and head).
    pub fn cpu_profile(&self, windows: &[Encoding]) -> Result<Vec<(String, f64)>> {
        let batch = self.pad(windows, &[]);
        let mut cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
        pool::take_stats();
        let mut kinds = cpu.profile(&batch, now_ms)?;
        if pool::threads() > 1 {
            let [mine, theirs, spins, loops, idle_spins] = pool::take_stats();
            kinds.push(("pool: tasks run by the caller".into(), mine as f64));
            kinds.push(("pool: tasks run by helpers".into(), theirs as f64));
            kinds.push(("pool: parallel loops".into(), loops as f64));
            kinds.push(("pool: caller's spins waiting".into(), spins as f64));
            kinds.push((
                "pool: helpers' spins between loops".into(),
                idle_spins as f64,
            ));
        }
        Ok(kinds)
    }

    /// Wall-clock milliseconds (best of `runs`) of the task head alone on the CPU, over the
    /// hidden state of `windows`: what a GPU encoder plus a CPU head would spend on the head.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn cpu_head_ms(&self, windows: &[Encoding], runs: usize) -> Result<f64> {
        let batch = self.pad(windows, &[]);
        let mut cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
        let hidden = cpu
            .forward(&batch, Want::Hidden)?
            .hidden
            .unwrap_or_default();
        let mut best = f64::INFINITY;
        for _ in 0..runs.max(1) {
            let t = std::time::Instant::now();
            cpu.head(&batch, &hidden)?;
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(best)
    }

    /// The hidden state of one window on the CPU executor, whatever the backend: what `bench`
    /// checks the GPU's against.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn cpu_hidden(&self, window: &Encoding) -> Result<Vec<f32>> {
        let batch = self.pad(std::slice::from_ref(window), &[]);
        let mut cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
        let mut hidden = cpu
            .forward(&batch, Want::Hidden)?
            .hidden
            .unwrap_or_default();
        hidden.truncate(window.len() * self.config.hidden_size);
        Ok(hidden)
    }

    // The guards below are held across `.await`: the engine serves one call at a time, which
    // also keeps GPU submissions ordered. Its futures are therefore not `Send`.
    #[allow(clippy::await_holding_lock)]
    async fn forward(&self, batch: &Batch, want: Want) -> Result<Output> {
        #[cfg(any(test, feature = "test-hooks"))]
        if self
            .panic_next
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            panic!("a panic inside a forward pass, asked for by a test hook");
        }
        {
            let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(g) = gpu.as_mut().filter(|g| g.failed.is_none()) {
                match g.exec.forward(batch, want).await {
                    Ok(out) => {
                        self.set_backend(format!("gpu {}", g.exec.adapter_name()));
                        return Ok(out);
                    }
                    Err(e) if self.device != Device::Auto => return Err(e),
                    // This call only: the CPU runs it and the GPU stays for the next.
                    Err(e) if e.gpu_kind().is_some_and(GpuErrorKind::keeps_device) => {}
                    Err(e) if e.gpu_kind().is_some() => g.failed = Some(e.to_string()),
                    Err(e) => return Err(e),
                }
            }
        }
        let out = self
            .cpu
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forward(batch, want)?;
        self.set_backend(format!("cpu-{}", self.kernel));
        Ok(out)
    }

    fn set_backend(&self, b: String) {
        *self.last_backend.lock().unwrap_or_else(|p| p.into_inner()) = b;
    }

    pub fn architecture(&self) -> Architecture {
        self.config.architecture
    }

    pub fn require(&self, arch: Architecture, what: &'static str) -> Result<()> {
        if self.config.architecture != arch {
            return Err(Error::WrongHead(what, self.config.architecture_name()));
        }
        Ok(())
    }

    /// What to ask `run` for to get the logits of the model's head of `kind` (`what` names
    /// it in the error when the checkpoint has none).
    pub fn want_head(&self, kind: HeadKind, what: &'static str) -> Result<Want> {
        (self.plan.head_of(kind))
            .map(Want::Head)
            .ok_or_else(|| Error::WrongHead(what, self.config.architecture_name()))
    }

    /// The longest window this model takes: the tokenizer's limit within the position table.
    pub fn max_len(&self) -> usize {
        let m = self.config.max_sequence_len();
        self.tokenizer.model_max_length.map_or(m, |t| t.min(m))
    }

    /// One window for a text (or pair). Inputs longer than the model takes fail unless
    /// `truncation` names a length (capped at the model's), which cuts them as HF's
    /// `truncation=True, max_length=n` does (longest first).
    pub fn encode(
        &self,
        text: &str,
        pair: Option<&str>,
        truncation: Option<usize>,
    ) -> Result<Encoding> {
        let max_len = self.max_len();
        if let Some(n) = truncation {
            let w = Windowing {
                max_len: n.min(max_len),
                stride: 0,
                only_second: false,
            };
            let mut windows = self.tokenizer.encode_windows(text, pair, w)?;
            return Ok(windows.swap_remove(0));
        }
        let enc = self.tokenizer.encode(text, pair)?;
        if enc.len() > max_len {
            return Err(too_long(enc.len(), max_len));
        }
        Ok(enc)
    }

    /// Runs windows through the encoder (and the head when `want` asks for logits), in padded
    /// batches. `picked[w]` are token positions of window `w` whose head rows are wanted
    /// (fill-mask).
    pub async fn run(
        &self,
        windows: &[Encoding],
        want: Want,
        picked: &[Vec<usize>],
    ) -> Result<Vec<WindowOutput>> {
        let mut out = Vec::with_capacity(windows.len());
        let h = self.config.hidden_size;
        let head = want.head_index().unwrap_or(0);
        let (logit_cols, logit_rows) = (self.plan.logits_cols(head), self.plan.logits_rows(head));
        let watch = self.watch.lock().unwrap().clone();
        // Watched: one window per forward on either executor, so that progress and cancelling
        // go by window (on a GPU, one submission and readback per window).
        let batch = if watch.is_some() { 1 } else { MAX_BATCH };
        for (chunk_i, chunk) in windows.chunks(batch).enumerate() {
            if let Some(w) = &watch {
                if !w.between(chunk_i * batch, windows.len()).await {
                    return Err(Error::Cancelled);
                }
            }
            let picked = picked.get(chunk_i * batch..).unwrap_or(&[]);
            let batch = self.pad(chunk, picked);
            let Output { hidden, logits } = self.forward(&batch, want).await?;
            let (hidden, logits) = (hidden.unwrap_or_default(), logits.unwrap_or_default());
            let l = batch.seq_len;
            let mut picked_row = 0;
            for (i, enc) in chunk.iter().enumerate() {
                let len = enc.len();
                let rows = match logit_rows.filter(|_| want.head()) {
                    Some(Rows::Tokens) => i * l..i * l + len,
                    Some(Rows::First) => i..i + 1,
                    Some(Rows::Picked) => {
                        let n = picked.get(i).map_or(0, Vec::len);
                        picked_row += n;
                        picked_row - n..picked_row
                    }
                    None => 0..0,
                };
                let hidden_rows = if want.hidden() {
                    i * l..i * l + len
                } else {
                    0..0
                };
                out.push(WindowOutput {
                    hidden: rows_of(&hidden, hidden_rows, h, "hidden state")?,
                    logits: rows_of(&logits, rows, logit_cols, "logits")?,
                });
            }
        }
        if let Some(w) = &watch {
            if !w.between(windows.len(), windows.len()).await {
                return Err(Error::Cancelled);
            }
        }
        Ok(out)
    }

    /// Watches the calls from now on (progress and cancelling by window), until set to `None`.
    pub fn set_watch(&self, watch: Option<Arc<dyn Watch>>) {
        *self.watch.lock().unwrap() = watch;
    }

    fn pad(&self, chunk: &[Encoding], picked: &[Vec<usize>]) -> Batch {
        let l = chunk.iter().map(Encoding::len).max().unwrap_or(0);
        let mut b = Batch {
            seq_len: l,
            ..Batch::default()
        };
        for (i, enc) in chunk.iter().enumerate() {
            b.ids.extend(enc.get_ids());
            b.ids
                .extend(std::iter::repeat_n(self.tokenizer.pad_id, l - enc.len()));
            let types = enc.get_type_ids().iter().map(|&t| {
                if self.config.type_vocab_size == 0 {
                    0
                } else {
                    t
                }
            });
            b.type_ids.extend(types);
            b.type_ids.extend(std::iter::repeat_n(0, l - enc.len()));
            b.lens.push(enc.len());
            if let Some(p) = picked.get(i) {
                b.picked.extend(p.iter().map(|&r| i * l + r));
            }
        }
        b
    }
}

/// `rows` rows of `cols` values out of `values`; an error, not a panic, when an executor
/// returned fewer than the batch needs.
fn rows_of(
    values: &[f32],
    rows: std::ops::Range<usize>,
    cols: usize,
    what: &str,
) -> Result<Vec<f32>> {
    let span = rows.start * cols..rows.end * cols;
    values
        .get(span.clone())
        .map(<[f32]>::to_vec)
        .ok_or_else(|| {
            Error::Input(format!(
                "the executor returned {} {what} values; the batch needs {}",
                values.len(),
                span.end
            ))
        })
}

/// Best of two GPU forwards of `batch`, after an untimed warm-up.
/// The best of two timed forwards after a warm-up, and the last one's output.
async fn best_gpu_ms(exec: &mut GpuExecutor, batch: &Batch, want: Want) -> Result<(f64, Output)> {
    let mut out = exec.forward(batch, want).await?;
    let mut best = f64::INFINITY;
    for _ in 0..2 {
        let t = now_ms();
        out = exec.forward(batch, want).await?;
        best = best.min(now_ms() - t);
    }
    Ok((best, out))
}

fn cpu_ms_of(cpu: &mut CpuExecutor, batch: &Batch, want: Want) -> Result<(f64, Output)> {
    let t = now_ms();
    let out = cpu.forward(batch, want)?;
    Ok((now_ms() - t, out))
}

/// The cosine of `a` and `b` (rows of `width` values) once `b`'s mean row is taken from both,
/// so that the direction all of BERT's hidden states share does not count: 1 for the same
/// states, ~0 for unrelated ones; NaN for inputs of different shapes or non-finite values.
fn centred_cosine(a: &[f32], b: &[f32], width: usize) -> f64 {
    if a.len() != b.len() || a.is_empty() || width == 0 || !b.len().is_multiple_of(width) {
        return f64::NAN;
    }
    let rows = b.len() / width;
    let mut mean = vec![0.0f64; width];
    for row in b.chunks(width) {
        for (m, &x) in mean.iter_mut().zip(row) {
            *m += x as f64 / rows as f64;
        }
    }
    let cosine = |mean: &[f64]| {
        let (mut ab, mut aa, mut bb) = (0.0, 0.0, 0.0);
        for (ra, rb) in a.chunks(width).zip(b.chunks(width)) {
            for ((&x, &y), m) in ra.iter().zip(rb).zip(mean) {
                let (x, y) = (x as f64 - m, y as f64 - m);
                ab += x * y;
                aa += x * x;
                bb += y * y;
            }
        }
        (ab / (aa * bb).sqrt(), bb)
    };
    let (plain, total) = cosine(&vec![0.0; width]);
    let (centred, varying) = cosine(&mean);
    // Rows all but alike (one row, or a model whose states hardly vary) leave nothing above
    // rounding to compare once centred: then the plain cosine.
    match varying > 1e-4 * total {
        true => centred,
        false => plain,
    }
}

/// Milliseconds since an arbitrary origin. `std::time::Instant` panics on
/// wasm32-unknown-unknown, where this asks `performance.now()` (or `Date.now()`).
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn now_ms() -> f64 {
    use wasm_bindgen::JsCast;
    let get = |o: &wasm_bindgen::JsValue, k: &str| js_sys::Reflect::get(o, &k.into()).ok();
    let performance = get(&js_sys::global(), "performance");
    let now = performance.as_ref().and_then(|p| {
        let f = get(p, "now")?.dyn_into::<js_sys::Function>().ok()?;
        f.call0(p).ok()?.as_f64()
    });
    now.unwrap_or_else(js_sys::Date::now)
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn now_ms() -> f64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    ORIGIN
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

/// The one error of every task that reads a whole input at once (classification, features,
/// zero-shot, fill-mask, …) when it is longer than the model takes and no truncation was asked.
pub fn too_long(len: usize, max_len: usize) -> Error {
    Error::Input(format!(
        "input is {len} tokens; the model takes at most {max_len} (to cut it there: \
         `truncation: true` in JS, --truncate in the CLI)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(gpu_ms: f64, cpu_ms: f64) -> Probe {
        Probe {
            agreement: 0.9999,
            adapter: "llvmpipe (Vulkan)".into(),
            tokens: 128,
            gpu_ms,
            cpu_ms,
        }
    }

    #[test]
    fn the_gpu_is_kept_only_when_strictly_faster() {
        assert!(probe(3.0, 80.0).gpu_wins());
        let wrong = |agreement| Probe {
            agreement,
            ..probe(3.0, 80.0)
        };
        assert!(!wrong(0.2).gpu_wins() && !wrong(f64::NAN).gpu_wins());
        assert!(wrong(0.2)
            .to_string()
            .ends_with("hidden states agree to 0.20000 (wrong answers on the GPU): using the CPU"));
        assert!(!probe(412.3, 80.1).gpu_wins());
        assert!(!probe(80.0, 80.0).gpu_wins());
        assert!(!probe(f64::NAN, 80.0).gpu_wins());
        assert!(!probe(3.0, f64::NAN).gpu_wins());
    }

    #[test]
    fn the_probe_explains_its_choice() {
        assert_eq!(
            probe(412.34, 80.06).to_string(),
            "llvmpipe (Vulkan) took 412.3 ms for 128 tokens, the CPU path 80.1 ms; hidden states agree to 0.99990: using the CPU"
        );
        assert!(probe(3.0, 80.0).to_string().ends_with("using the GPU"));
    }

    #[test]
    fn the_centred_cosine_ignores_what_all_rows_share() {
        // Two rows of 3 sharing a large common part: the plain cosine of the swapped rows
        // would be ~1, the centred one is -1.
        let b = [10.0, 10.0, 11.0, 10.0, 11.0, 10.0];
        let swapped = [10.0, 11.0, 10.0, 10.0, 10.0, 11.0];
        assert!((centred_cosine(&b, &b, 3) - 1.0).abs() < 1e-12);
        assert!((centred_cosine(&swapped, &b, 3) + 1.0).abs() < 1e-12);
        // One row, or rows all but alike: nothing to centre on, the plain cosine.
        assert!((centred_cosine(&[1.0, 0.0], &[1.0, 1.0], 2) - 0.5f64.sqrt()).abs() < 1e-12);
        let alike = [1.0, 1.0, 1.0, 1.000001];
        assert!(centred_cosine(&[1.0, 1.0, 1.000001, 1.0], &alike, 2) > 0.999);
        assert!(centred_cosine(&[1.0, 2.0], &[1.0, 2.0, 3.0], 1).is_nan());
        assert!(centred_cosine(&[f32::NAN, 2.0], &[1.0, 2.0], 1).is_nan());
    }

    #[test]
    fn the_clock_moves_forward() {
        let t = now_ms();
        let mut last = t;
        for _ in 0..1000 {
            let now = now_ms();
            assert!(now >= last, "the clock went back: {last} -> {now}");
            last = now;
        }
        // Node's WASI wakes sleepers on a millisecond timer that may fire a little early, so the
        // bound leaves room for that while still telling milliseconds from seconds or ticks.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let slept = now_ms() - t;
        assert!(
            (15.0..10_000.0).contains(&slept),
            "a 20 ms sleep measured {slept} ms"
        );
    }
}
