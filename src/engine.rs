//! A loaded model: config, tokenizer and an executor, plus padding of tokenized windows into
//! batches. Tasks talk to this, never to an executor directly.

pub use crate::cpu::Quantized;
use crate::cpu::{Batch, CpuExecutor, Output};
use crate::error::{Error, Result};
use crate::gpu::{GpuContext, GpuExecutor, GpuOptions};
use crate::model::{Architecture, ModelConfig, ModelFiles, Plan, TextTokenizer, Windowing};
use std::sync::Mutex;
use tokenizers::Encoding;

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Device {
    /// The GPU when a hardware adapter works, else the CPU; falls back to the CPU for good
    /// if the GPU fails later (device lost, validation error).
    #[default]
    Auto,
    /// The GPU, any adapter (software ones included); its failures are errors.
    Gpu,
    Cpu,
}

impl std::str::FromStr for Device {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Device::Auto),
            "gpu" | "webgpu" => Ok(Device::Gpu),
            "cpu" => Ok(Device::Cpu),
            o => Err(Error::Input(format!(
                "unknown backend `{o}`; use auto, gpu or cpu"
            ))),
        }
    }
}

/// How to load a model: [`Engine::load_with_options`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    pub device: Device,
    /// Lets `Auto` use a CPU-emulated adapter too (tests of the GPU path and its fallback).
    pub allow_software: bool,
    /// How the CPU path computes with q4 weights (the GPU dequantizes them).
    pub quantized: Quantized,
}

struct Gpu {
    exec: GpuExecutor,
    /// Set after a failure under `Device::Auto`: the CPU answers from then on.
    failed: Option<String>,
}

/// Most windows run in one forward pass; bounds activation memory on long documents.
const MAX_BATCH: usize = 32;

pub struct Engine {
    pub config: ModelConfig,
    pub tokenizer: TextTokenizer,
    cpu: Mutex<CpuExecutor>,
    gpu: Mutex<Option<Gpu>>,
    device: Device,
    kernel: &'static str,
    last_backend: Mutex<String>,
}

/// Per window: the hidden states `[len, h]` and the head's logits rows for it.
pub struct WindowOutput {
    pub hidden: Vec<f32>,
    pub logits: Vec<f32>,
}

impl Engine {
    /// Loads a model for the CPU.
    pub fn load(files: ModelFiles) -> Result<Engine> {
        let (config, tokenizer, weights) = files.load()?;
        let plan = Plan::build(config.clone(), weights)?;
        let q = Quantized::default();
        Ok(Engine::assemble(
            config,
            tokenizer,
            plan,
            None,
            Device::Cpu,
            q,
        ))
    }

    /// Loads a model for `device`; with `Auto`, a GPU that cannot be set up means the CPU.
    pub async fn load_on(files: ModelFiles, device: Device) -> Result<Engine> {
        Engine::load_with(files, device, false).await
    }

    /// As [`Engine::load_on`]; `allow_software` lets `Auto` use a CPU-emulated adapter too
    /// (tests of the GPU path and its fallback on machines without a GPU).
    pub async fn load_with(
        files: ModelFiles,
        device: Device,
        allow_software: bool,
    ) -> Result<Engine> {
        let options = LoadOptions {
            device,
            allow_software,
            ..Default::default()
        };
        Engine::load_with_options(files, options).await
    }

    pub async fn load_with_options(files: ModelFiles, options: LoadOptions) -> Result<Engine> {
        let (config, tokenizer, weights) = files.load()?;
        let plan = Plan::build(config.clone(), weights)?;
        Engine::on_device(config, tokenizer, plan, options).await
    }

    /// Loads a model for the GPU (any adapter) with explicit executor settings: tests and
    /// benchmarks of split weights and of f16.
    pub async fn load_gpu_with(files: ModelFiles, options: GpuOptions) -> Result<Engine> {
        let (config, tokenizer, weights) = files.load()?;
        let plan = Plan::build(config.clone(), weights)?;
        let gpu = Engine::gpu(&plan, true, options).await?;
        Ok(Engine::assemble(
            config,
            tokenizer,
            plan,
            Some(gpu),
            Device::Gpu,
            Quantized::default(),
        ))
    }

    /// A model of a standard shape (`bert-base`, …) with random weights and the tokenizer of
    /// `files`, for timing only.
    pub async fn synthetic(files: ModelFiles, shape: &str, device: Device) -> Result<Engine> {
        let (config, tokenizer, _) = files.load()?;
        let (config, weights) = crate::model::synthetic::random_model(config, shape, 42)
            .ok_or_else(|| {
                Error::Input(format!(
                    "unknown shape `{shape}`; use bert-base, bert-large or minilm-l6"
                ))
            })?;
        let plan = Plan::build(config.clone(), weights)?;
        let options = LoadOptions {
            device,
            ..Default::default()
        };
        Engine::on_device(config, tokenizer, plan, options).await
    }

    /// Sets up the GPU executor `device` asks for (none for the CPU), then the CPU executor.
    async fn on_device(
        config: ModelConfig,
        tokenizer: TextTokenizer,
        plan: Plan,
        options: LoadOptions,
    ) -> Result<Engine> {
        let LoadOptions {
            device,
            allow_software,
            quantized,
        } = options;
        let gpu = match device {
            Device::Cpu => None,
            Device::Gpu => Some(Engine::gpu(&plan, true, GpuOptions::from_env()).await?),
            Device::Auto => Engine::gpu(&plan, allow_software, GpuOptions::from_env())
                .await
                .ok(),
        };
        Ok(Engine::assemble(
            config, tokenizer, plan, gpu, device, quantized,
        ))
    }

    async fn gpu(plan: &Plan, allow_software: bool, options: GpuOptions) -> Result<GpuExecutor> {
        let ctx = GpuContext::new(options).await?;
        if !allow_software && ctx.is_software() {
            return Err(Error::Gpu(format!(
                "{} is a software adapter, slower than the CPU path",
                ctx.name()
            )));
        }
        GpuExecutor::new(ctx, plan)
    }

    fn assemble(
        config: ModelConfig,
        tokenizer: TextTokenizer,
        plan: Plan,
        gpu: Option<GpuExecutor>,
        device: Device,
        quantized: Quantized,
    ) -> Engine {
        let cpu = CpuExecutor::new(plan, quantized);
        let kernel = cpu.kernel_name();
        let last = match &gpu {
            Some(g) => format!("gpu {}", g.adapter_name()),
            None => format!("cpu-{kernel}"),
        };
        Engine {
            config,
            tokenizer,
            cpu: Mutex::new(cpu),
            gpu: Mutex::new(gpu.map(|exec| Gpu { exec, failed: None })),
            device,
            kernel,
            last_backend: Mutex::new(last),
        }
    }

    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn from_dir(dir: impl AsRef<std::path::Path>) -> Result<Engine> {
        Engine::load(ModelFiles::from_dir(dir.as_ref())?)
    }

    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub async fn from_dir_on(dir: impl AsRef<std::path::Path>, device: Device) -> Result<Engine> {
        Engine::load_on(ModelFiles::from_dir(dir.as_ref())?, device).await
    }

    /// The backend of the latest forward pass (before any, the one that will be tried first):
    /// `gpu <adapter>` or `cpu-<isa>`.
    pub fn backend(&self) -> String {
        self.last_backend
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Why the GPU was given up for the CPU, if it was.
    pub fn gpu_failure(&self) -> Option<String> {
        self.gpu
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .and_then(|g| g.failed.clone())
    }

    /// Whether a GPU executor was set up (it may have failed since: see `gpu_failure`).
    pub fn has_gpu(&self) -> bool {
        self.gpu.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// Makes the next GPU call fail as if the device were lost (tests of the fallback).
    pub fn lose_gpu_for_test(&self) {
        if let Some(g) = self.gpu.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            g.exec.destroy_device();
        }
    }

    /// Per-kernel GPU milliseconds for one forward over `windows` (padded as `run` pads them),
    /// with the task head's as `head` when `head` is set, when the model runs on a GPU with
    /// timestamp queries.
    #[allow(clippy::await_holding_lock)]
    pub async fn gpu_profile(
        &self,
        windows: &[Encoding],
        head: bool,
    ) -> Result<Option<Vec<(&'static str, f64)>>> {
        let batch = self.pad(windows, &[]);
        let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
        match gpu.as_mut() {
            Some(g) => g.exec.profile(&batch, head).await,
            None => Ok(None),
        }
    }

    /// Wall-clock milliseconds (best of `runs`) of the task head alone on the CPU, over the
    /// hidden state of `windows`: what a GPU encoder plus a CPU head would spend on the head.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn cpu_head_ms(&self, windows: &[Encoding], runs: usize) -> Result<f64> {
        let batch = self.pad(windows, &[]);
        let mut cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
        let hidden = cpu.forward(&batch, false)?.hidden;
        let mut best = f64::INFINITY;
        for _ in 0..runs.max(1) {
            let t = std::time::Instant::now();
            cpu.head(&batch, &hidden)?;
            best = best.min(t.elapsed().as_secs_f64() * 1e3);
        }
        Ok(best)
    }

    // The guards below are held across `.await`: the engine serves one call at a time, which
    // also keeps GPU submissions ordered. Its futures are therefore not `Send`.
    #[allow(clippy::await_holding_lock)]
    async fn forward(&self, batch: &Batch, head: bool) -> Result<Output> {
        {
            let mut gpu = self.gpu.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(g) = gpu.as_mut().filter(|g| g.failed.is_none()) {
                match g.exec.forward(batch, head).await {
                    Ok(out) => {
                        self.set_backend(format!("gpu {}", g.exec.adapter_name()));
                        return Ok(out);
                    }
                    Err(e) if self.device == Device::Auto => g.failed = Some(e.to_string()),
                    Err(e) => return Err(e),
                }
            }
        }
        let out = self
            .cpu
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .forward(batch, head)?;
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
            return Err(Error::WrongHead(
                what,
                self.config.architecture.name().to_string(),
            ));
        }
        Ok(())
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
            return Err(Error::Input(format!(
                "input is {} tokens; the model takes at most {max_len} (enable truncation to cut it)",
                enc.len()
            )));
        }
        Ok(enc)
    }

    /// Runs windows through the encoder (and the head when `head`), in padded batches.
    /// `picked[w]` are token positions of window `w` whose head rows are wanted (fill-mask).
    pub async fn run(
        &self,
        windows: &[Encoding],
        head: bool,
        picked: &[Vec<usize>],
    ) -> Result<Vec<WindowOutput>> {
        let mut out = Vec::with_capacity(windows.len());
        let h = self.config.hidden_size;
        let (logit_cols, logit_rows) = {
            let cpu = self.cpu.lock().unwrap_or_else(|p| p.into_inner());
            (cpu.plan().logits_cols(), cpu.plan().logits_rows())
        };
        for (chunk_i, chunk) in windows.chunks(MAX_BATCH).enumerate() {
            let batch = self.pad(chunk, picked.get(chunk_i * MAX_BATCH..).unwrap_or(&[]));
            let Output { hidden, logits } = self.forward(&batch, head).await?;
            let l = batch.seq_len;
            let mut picked_row = 0;
            for (i, enc) in chunk.iter().enumerate() {
                let len = enc.len();
                let rows = match logit_rows {
                    Some(crate::model::Rows::Tokens) => i * l..i * l + len,
                    Some(crate::model::Rows::First) => i..i + 1,
                    Some(crate::model::Rows::Picked) => {
                        let n = picked.get(chunk_i * MAX_BATCH + i).map_or(0, Vec::len);
                        picked_row += n;
                        picked_row - n..picked_row
                    }
                    None => 0..0,
                };
                out.push(WindowOutput {
                    hidden: hidden[i * l * h..(i * l + len) * h].to_vec(),
                    logits: logits.as_ref().map_or(Vec::new(), |lg| {
                        lg[rows.start * logit_cols..rows.end * logit_cols].to_vec()
                    }),
                });
            }
        }
        Ok(out)
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
