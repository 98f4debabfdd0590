//! wasm-bindgen exports for measuring a loaded model in the browser: where a forward's time
//! goes, how near this machine's limits it runs, and the helpers' warm-up.

use super::bindings::{js_error, WebEngine};
use crate::engine::Want;
use wasm_bindgen::prelude::*;

/// Bytes the read bandwidth is measured over: past most last-level caches, and allocated once
/// in the module's memory (which WebAssembly never gives back).
const READ_BYTES: usize = 64 << 20;

#[wasm_bindgen]
impl WebEngine {
    /// Milliseconds per GPU kernel (JSON object, `null` without timestamp queries), or per
    /// kind of op on the CPU path, of one forward over `text`, for profiling in a browser.
    pub fn profile(&self, text: String) -> js_sys::Promise {
        self.one_at_a_time(|engine| async move {
            let window = engine.encode(&text, None, Some(usize::MAX))?;
            let kernels: Option<Vec<(String, f64)>> = if engine.has_gpu() {
                let k = engine.gpu_profile(&[window], Want::Hidden).await?;
                k.map(|k| k.into_iter().map(|(n, ms)| (n.to_string(), ms)).collect())
            } else {
                Some(engine.cpu_profile(&[window])?)
            };
            let json: Option<serde_json::Map<String, serde_json::Value>> =
                kernels.map(|k| k.into_iter().map(|(n, ms)| (n, ms.into())).collect());
            Ok(serde_json::json!(json).to_string())
        })
    }

    /// Runs `runs` CPU forwards over a text of about `tokens` tokens and drops the results:
    /// the threads build's helpers run unoptimized code until they have done some work, and
    /// the first forwards time the prefetch choice ([`Self::weight_prefetch`]).
    #[wasm_bindgen(js_name = warmUp)]
    pub fn warm_up(&self, runs: usize, tokens: usize) -> Result<(), JsError> {
        if self.engine.has_gpu() {
            return Ok(());
        }
        let text = "warm up the threads ".repeat(tokens / 4 + 1);
        let window = self
            .engine
            .encode(&text, None, Some(tokens))
            .map_err(js_error)?;
        for _ in 0..runs {
            (self.engine)
                .cpu_warm_up(std::slice::from_ref(&window))
                .map_err(js_error)?;
        }
        Ok(())
    }

    /// Whether the f32 GEMMs prefetch the weights ahead, and how that was chosen (timed in
    /// the first forwards: WebAssembly cannot ask what the CPU is).
    #[wasm_bindgen(js_name = weightPrefetch)]
    pub fn weight_prefetch(&self) -> String {
        self.engine.weight_prefetch()
    }

    /// The roofline of CPU forwards over `text` (JSON, `null` on a GPU): the median ms of
    /// `runs`, the packed weight bytes each reads and their GB/s, this machine's single-thread
    /// read bandwidth (summing 64 MiB) and the fraction of it, the tile's multiply-add peak, and
    /// the forward's floor (the longer of the two) with the fraction of it reached.
    pub fn roofline(&self, text: String, runs: usize) -> js_sys::Promise {
        self.one_at_a_time(move |engine| async move {
            let window = engine.encode(&text, None, Some(usize::MAX))?;
            let r = engine.time_cpu_roofline(&window, runs, READ_BYTES).await?;
            Ok(serde_json::json!(r).to_string())
        })
    }
}
