//! wasm-bindgen exports: model files handed over as bytes, one loaded model per `WebEngine`,
//! task calls as JSON in and JSON out (see `calls`). Errors reach JS as `Error`s.

use super::{calls, trained};
use crate::engine::{AutoOptions, Engine, LoadOptions, Watch};
use crate::error::parse_name;
use crate::model::ModelFiles;
use crate::tasks::head::ClassifierHead;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Mutex;
use wasm_bindgen::prelude::*;

/// The last panic's message; a panic aborts the instance, so JS reads it from the trapped one.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        // A helper thread's panic aborts only its own worker: the dispatcher waiting for its
        // task must fail instead of waiting forever.
        crate::cpu::pool::poison();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
        console_error_panic_hook::hook(info);
        notify_panic(&info.to_string());
    }));
}

/// A panic inside an async call traps in a microtask, outside any promise: `globalThis.
/// __webertPanic(message)`, when the JS wrapper set it, lets it fail the pending call instead.
fn notify_panic(message: &str) {
    let global = js_sys::global();
    if let Ok(f) = js_sys::Reflect::get(&global, &JsValue::from_str("__webertPanic")) {
        if let Some(f) = f.dyn_ref::<js_sys::Function>() {
            let _ = f.call1(&JsValue::UNDEFINED, &JsValue::from_str(message));
        }
    }
}

/// The file names of a model folder the engine reads (JSON: `required`, `text`, and `weights`
/// in order of preference), so that the package fetches by the engine's own list.
#[wasm_bindgen(js_name = modelFiles)]
pub fn model_files() -> String {
    crate::model::files::layout_json()
}

/// The files of a folder whose relative paths are `names` (a JSON array) that the engine reads
/// for `dtype` (or the most accurate weights present), as a JSON array; errors name `origin`.
#[wasm_bindgen(js_name = pickModelFiles)]
pub fn pick_model_files(
    origin: &str,
    names: &str,
    dtype: Option<String>,
) -> Result<String, JsError> {
    let names: Vec<String> =
        serde_json::from_str(names).map_err(|e| JsError::new(&e.to_string()))?;
    let picked = crate::model::files::pick(origin, &names, dtype.as_deref()).map_err(js_error)?;
    Ok(serde_json::to_string(&picked).unwrap_or_default())
}

/// Redacts `text`: entities as JSON `[{label, start, end}]` (UTF-16 offsets), options as JSON
/// `{style, mask}`; returns the redacted text. Needs no model.
#[wasm_bindgen]
pub fn redact(text: &str, entities: &str, options: &str) -> Result<String, JsError> {
    calls::redact(text, entities, options).map_err(js_error)
}

/// Reads GEMM tilings that an earlier page timed (`exportGpuTilings`), so that shapes they
/// cover are not timed again on this adapter; returns how many rows the text has.
#[wasm_bindgen(js_name = importGpuTilings)]
pub fn import_gpu_tilings(json: &str) -> Result<u32, JsError> {
    crate::engine::import_gpu_tilings(json)
        .map(|n| n as u32)
        .map_err(js_error)
}

/// The GEMM tilings this instance timed or read, as JSON to store.
#[wasm_bindgen(js_name = exportGpuTilings)]
pub fn export_gpu_tilings() -> String {
    crate::engine::export_gpu_tilings()
}

/// How many GEMM tilings this instance has timed: when it changes, there is something to store.
#[wasm_bindgen(js_name = gpuTilingsTimed)]
pub fn gpu_tilings_timed() -> f64 {
    crate::engine::gpu_tilings_timed() as f64
}

#[wasm_bindgen(js_name = lastPanic)]
pub fn last_panic() -> String {
    LAST_PANIC.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Collects a model folder's files, then builds the engine from them.
#[wasm_bindgen]
pub struct ModelLoader {
    pub(super) files: ModelFiles,
    pub(super) budget: Option<u64>,
    gpu_dequantize: Option<bool>,
    gpu_tune: Option<bool>,
}

#[wasm_bindgen]
impl ModelLoader {
    /// `origin` names the folder (URL or folder name) in error messages.
    #[wasm_bindgen(constructor)]
    pub fn new(origin: String) -> ModelLoader {
        ModelLoader {
            files: ModelFiles::new(origin),
            budget: None,
            gpu_dequantize: None,
            gpu_tune: None,
        }
    }

    /// Bytes the weights (as f32) and one batch's activations may take (default 2 GiB): a
    /// model that declares more is refused before allocating, a call that needs more fails.
    #[wasm_bindgen(js_name = setMemoryBudget)]
    pub fn set_memory_budget(&mut self, bytes: f64) -> Result<(), JsError> {
        if !(bytes.is_finite() && bytes >= 1.0) {
            return Err(JsError::new(&format!(
                "memoryBudget must be a positive number of bytes, not {bytes}"
            )));
        }
        self.budget = Some(bytes.min(u64::MAX as f64) as u64);
        Ok(())
    }

    /// How WebGPU keeps q4 and q8 weights: `packed` (their 4- or 8-bit codes, unpacked inside
    /// the GEMM) or `dequantized` (f32/f16 at upload); by default packed on hardware adapters
    /// and dequantized on software ones, except q8 weights on the integer path (packed on every
    /// adapter; `dequantized` computes them in f32).
    #[wasm_bindgen(js_name = setGpuWeights)]
    pub fn set_gpu_weights(&mut self, kind: &str) -> Result<(), JsError> {
        self.gpu_dequantize = Some(!either("gpuWeights", kind, "packed", "dequantized")?);
        Ok(())
    }

    /// How WebGPU tiles its GEMMs: `timed` (each shape's candidate tilings timed on the device
    /// the first time it runs; needs timestamp queries) or `rule`; by default timed on
    /// hardware adapters that have timestamp queries.
    #[wasm_bindgen(js_name = setGpuTilings)]
    pub fn set_gpu_tilings(&mut self, kind: &str) -> Result<(), JsError> {
        self.gpu_tune = Some(either("gpuTilings", kind, "timed", "rule")?);
        Ok(())
    }

    /// Adds one file by its path inside the folder, e.g. `onnx/model_q4.onnx`.
    pub fn add(&mut self, name: String, bytes: Vec<u8>) {
        self.files.add(name, bytes);
    }

    /// Parses config and tokenizer, converts and packs the weights, and sets up `device`
    /// (`auto`, `webgpu` or `cpu`); consumes the files. `allow_fallback_adapter` lets `auto`
    /// use a CPU-emulated adapter (SwiftShader), which it otherwise skips as slower than the
    /// CPU path. `probe`: `auto` times one forward on WebGPU and on the CPU and keeps the
    /// faster; without it, WebGPU is used whenever it sets up. `quantized` (`int` or `f32`):
    /// how the CPU path computes with q4 weights.
    pub async fn load(
        self,
        device: String,
        allow_fallback_adapter: bool,
        probe: bool,
        quantized: String,
    ) -> Result<WebEngine, JsError> {
        let options = LoadOptions {
            device: parse_name("device", &device).map_err(js_error)?,
            auto: AutoOptions {
                allow_software: allow_fallback_adapter,
                probe,
            },
            quantized: parse_name("quantized", &quantized).map_err(js_error)?,
            memory_budget: self.budget,
            gpu: crate::engine::GpuOptions {
                dequantize: self.gpu_dequantize,
                kernels: crate::engine::KernelOptions {
                    tune: self.gpu_tune,
                    ..crate::engine::KernelOptions::AUTO
                },
                ..crate::engine::GpuOptions::DEFAULT
            },
            ..Default::default()
        };
        let engine = Engine::load(self.files, options).await.map_err(js_error)?;
        Ok(WebEngine::new(engine))
    }
}

/// A JS function `(done, total) => Promise<boolean>` as the engine's [`Watch`].
struct JsWatch(js_sys::Function);

// SAFETY: the engine calls its watch only on the thread that made the call (the worker's); the
// threads build's helpers never reach it. `Watch` is Send + Sync for native engines.
unsafe impl Send for JsWatch {}
unsafe impl Sync for JsWatch {}

impl Watch for JsWatch {
    fn between(
        &self,
        done: usize,
        total: usize,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool>>> {
        let answer = self.0.call2(
            &JsValue::NULL,
            &(done as u32).into(),
            &(total as u32).into(),
        );
        Box::pin(async move {
            match answer {
                Ok(p) => wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&p))
                    .await
                    .is_ok_and(|v| v.as_bool() != Some(false)),
                Err(_) => false,
            }
        })
    }
}

/// Option `name`'s value `kind`: true for `yes`, false for `no`, else an error naming both.
fn either(name: &str, kind: &str, yes: &str, no: &str) -> Result<bool, JsError> {
    match kind {
        k if k == yes => Ok(true),
        k if k == no => Ok(false),
        _ => Err(JsError::new(&format!(
            "{name} must be '{yes}' or '{no}', not `{kind}`"
        ))),
    }
}

pub(super) fn js_error(e: crate::error::Error) -> JsError {
    JsError::new(&e.to_string())
}

#[wasm_bindgen]
pub struct WebEngine {
    pub(super) engine: Rc<Engine>,
    /// The engine serves one call at a time (a second would meet its locks mid-call).
    busy: Rc<Cell<bool>>,
    /// Classifier heads taught or loaded for this encoder (`addHead`), by index.
    heads: RefCell<Vec<Rc<ClassifierHead>>>,
}

impl WebEngine {
    pub(super) fn new(engine: Engine) -> WebEngine {
        WebEngine {
            engine: Rc::new(engine),
            busy: Rc::new(Cell::new(false)),
            heads: RefCell::new(Vec::new()),
        }
    }
}

#[wasm_bindgen]
impl WebEngine {
    /// JSON: backend, model type, architecture, labels, maximum length, hidden size, mask token.
    pub fn info(&self) -> String {
        calls::info(&self.engine)
    }

    /// Whether a WebGPU device was set up: calls must then go through the async `call`.
    #[wasm_bindgen(js_name = hasGpu)]
    pub fn has_gpu(&self) -> bool {
        self.engine.has_gpu()
    }

    /// Runs one task request (JSON) on an engine without a GPU and returns its result (JSON).
    /// Synchronous, so that a trap surfaces as an exception of this very call.
    #[wasm_bindgen(js_name = callSync)]
    pub fn call_sync(&self, task: &str, request: &str) -> Result<String, JsError> {
        if self.engine.has_gpu() {
            return Err(JsError::new(
                "webert: a WebGPU engine answers through call()",
            ));
        }
        // CPU futures complete without ever waiting, so driving them here cannot block.
        if task == trained::TASK {
            let heads = self.heads.borrow().clone();
            return pollster::block_on(trained::call(&self.engine, &heads, request))
                .map_err(js_error);
        }
        pollster::block_on(calls::call(&self.engine, task, request)).map_err(js_error)
    }

    /// Runs one task request (JSON); the promise resolves to its result (JSON). Offsets are
    /// UTF-16 indices. Await each call before the next.
    pub fn call(&self, task: String, request: String) -> js_sys::Promise {
        let heads = self.heads.borrow().clone();
        self.one_at_a_time(|engine| async move {
            match task.as_str() {
                trained::TASK => trained::call(&engine, &heads, &request).await,
                _ => calls::call(&engine, &task, &request).await,
            }
        })
    }

    /// Fits a classifier head (scikit-learn's `LogisticRegression(C)`) on `features`, one
    /// row of the hidden size per label of `labels` (JSON list), as `feature-extraction`
    /// with mean pooling and normalisation made them; returns the head file (safetensors).
    #[wasm_bindgen(js_name = fitHead)]
    pub fn fit_head(&self, features: &[f32], labels: &str, c: f64) -> Result<Vec<u8>, JsError> {
        trained::fit(&self.engine, features, labels, c).map_err(js_error)
    }

    /// Reads a head file made for this encoder and keeps it; returns JSON with its index
    /// (`id`, for `trained-classification` requests), labels, C and how it was trained.
    #[wasm_bindgen(js_name = addHead)]
    pub fn add_head(&self, bytes: &[u8]) -> Result<String, JsError> {
        let (head, info) = trained::load(&self.engine, bytes).map_err(js_error)?;
        let mut heads = self.heads.borrow_mut();
        heads.push(Rc::new(head));
        Ok(format!("{{\"id\":{},\"head\":{info}}}", heads.len() - 1))
    }

    /// As `call`, watched: before each window (one per batch on the CPU) and at the end,
    /// `watch(done, total)` is called; the promise it returns resolving to `false` cancels the
    /// call. Awaiting that promise lets the worker's event loop run (an abort message) mid-call.
    #[wasm_bindgen(js_name = callWatched)]
    pub fn call_watched(
        &self,
        task: String,
        request: String,
        watch: js_sys::Function,
    ) -> js_sys::Promise {
        let heads = self.heads.borrow().clone();
        self.one_at_a_time(|engine| async move {
            engine.set_watch(Some(std::sync::Arc::new(JsWatch(watch))));
            let result = match task.as_str() {
                trained::TASK => trained::call(&engine, &heads, &request).await,
                _ => calls::call(&engine, &task, &request).await,
            };
            engine.set_watch(None);
            result
        })
    }

    /// Runs `work` on the engine as a promise of its JSON, refusing a second one meanwhile.
    pub(super) fn one_at_a_time<F, Fut>(&self, work: F) -> js_sys::Promise
    where
        F: FnOnce(Rc<Engine>) -> Fut + 'static,
        Fut: std::future::Future<Output = crate::error::Result<String>> + 'static,
    {
        let (engine, busy) = (self.engine.clone(), self.busy.clone());
        wasm_bindgen_futures::future_to_promise(async move {
            if busy.replace(true) {
                return Err(JsError::new(
                    "webert: this engine is already running a call; await it before the next",
                )
                .into());
            }
            let result = work(engine).await;
            busy.set(false);
            result.map(JsValue::from).map_err(|e| js_error(e).into())
        })
    }

    /// The backend of the latest call: `gpu <adapter>` or `cpu-<isa>`.
    pub fn backend(&self) -> String {
        self.engine.backend()
    }

    /// Why the GPU was given up for the CPU, if it was.
    #[wasm_bindgen(js_name = gpuFailure)]
    pub fn gpu_failure(&self) -> Option<String> {
        self.engine.gpu_failure()
    }

    /// Destroys the GPU device as a lost device would be (tests of the CPU fallback).
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = debugLoseDevice)]
    pub fn debug_lose_device(&self) {
        self.engine.lose_gpu_for_test();
    }

    /// Loses the GPU device with the submission after `after` more in flight (a loss in the
    /// middle of a call's batch).
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = debugLoseDeviceDuringForward)]
    pub fn debug_lose_device_during_forward(&self, after: usize) {
        self.engine.lose_gpu_during_forward_for_test(after);
    }

    /// Sets whether the f32 GEMMs prefetch the weights ahead (`undefined`: as the CPU wants),
    /// ending the timing of that choice, for measuring both in one page.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = debugSetWeightPrefetch)]
    pub fn debug_set_weight_prefetch(&self, on: Option<bool>) {
        self.engine.set_weight_prefetch_for_test(on);
    }

    /// Makes the next forward pass panic: a trap inside a call.
    #[cfg(feature = "test-hooks")]
    #[wasm_bindgen(js_name = debugTrapInNextForward)]
    pub fn debug_trap_in_next_forward(&self) {
        self.engine.panic_in_next_forward_for_test();
    }
}

/// Panics on purpose, so tests can check that a trapped instance is replaced. Never called
/// by the library itself.
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = debugTrap)]
pub fn debug_trap() {
    panic!("debugTrap called");
}

/// Bytes of this instance's linear memory (tests and the soak script watch it).
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = debugMemoryBytes)]
pub fn debug_memory_bytes() -> f64 {
    (core::arch::wasm32::memory_size(0) * 65536) as f64
}

/// As [`debug_trap`], inside a future (how a WebGPU call would trap).
#[cfg(feature = "test-hooks")]
#[wasm_bindgen(js_name = debugTrapAsync)]
pub fn debug_trap_async() -> js_sys::Promise {
    wasm_bindgen_futures::future_to_promise(async { panic!("debugTrapAsync called") })
}

/// Whether this is the threads build (shared memory, atomics): then [`set_threads`] can use
/// Web Workers that run [`thread_pool_helper`].
#[wasm_bindgen(js_name = canThread)]
pub fn can_thread() -> bool {
    crate::cpu::pool::can_thread()
}

/// Uses up to `n` threads (the caller's included) for the CPU path from the next call on,
/// as far as helpers have started; returns the count in force now (always 1 without the
/// threads build, which has no helpers).
#[wasm_bindgen(js_name = setThreads)]
pub fn set_threads(n: usize) -> usize {
    crate::cpu::pool::set_threads(n);
    crate::cpu::pool::threads()
}

/// Threads build: makes this Web Worker a helper of the CPU thread pool and works for it;
/// returns after a while idle (`true`: call again after a turn of the event loop), or at once
/// with `false` when the pool is full or there are no threads.
#[wasm_bindgen(js_name = threadPoolHelper)]
pub fn thread_pool_helper() -> bool {
    crate::cpu::pool::helper_main()
}

/// Helpers that have joined the pool so far.
#[wasm_bindgen(js_name = threadPoolHelpers)]
pub fn thread_pool_helpers() -> usize {
    crate::cpu::pool::helpers()
}

/// The instance's memory and module, for starting helpers that share them.
#[wasm_bindgen(js_name = sharedMemory)]
pub fn shared_memory() -> JsValue {
    wasm_bindgen::memory()
}

#[wasm_bindgen(js_name = sharedModule)]
pub fn shared_module() -> JsValue {
    if can_thread() {
        wasm_bindgen::module()
    } else {
        JsValue::NULL
    }
}
