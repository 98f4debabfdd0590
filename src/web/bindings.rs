//! wasm-bindgen exports: model files handed over as bytes, one loaded model per `WebEngine`,
//! task calls as JSON in and JSON out (see `calls`). Errors reach JS as `Error`s.

use super::calls;
use crate::engine::Engine;
use crate::model::ModelFiles;
use std::sync::Mutex;
use wasm_bindgen::prelude::*;

/// The last panic's message; a panic aborts the instance, so JS reads it from the trapped one.
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

#[wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = info.to_string();
        }
        console_error_panic_hook::hook(info);
    }));
}

#[wasm_bindgen(js_name = lastPanic)]
pub fn last_panic() -> String {
    LAST_PANIC.lock().map(|s| s.clone()).unwrap_or_default()
}

/// Collects a model folder's files, then builds the engine from them.
#[wasm_bindgen]
pub struct ModelLoader {
    files: ModelFiles,
}

#[wasm_bindgen]
impl ModelLoader {
    /// `origin` names the folder (URL or folder name) in error messages.
    #[wasm_bindgen(constructor)]
    pub fn new(origin: String) -> ModelLoader {
        ModelLoader {
            files: ModelFiles::new(origin),
        }
    }

    /// Adds one file by its path inside the folder, e.g. `onnx/model_q4.onnx`.
    pub fn add(&mut self, name: String, bytes: Vec<u8>) {
        self.files.add(name, bytes);
    }

    /// Parses config and tokenizer, converts and packs the weights; consumes the files.
    pub fn load(self) -> Result<WebEngine, JsError> {
        let engine = Engine::load(self.files).map_err(|e| JsError::new(&e.to_string()))?;
        Ok(WebEngine { engine })
    }
}

#[wasm_bindgen]
pub struct WebEngine {
    engine: Engine,
}

#[wasm_bindgen]
impl WebEngine {
    /// JSON: backend, model type, architecture, labels, maximum length, hidden size, mask token.
    pub fn info(&self) -> String {
        calls::info(&self.engine)
    }

    /// Runs one task request (JSON) and returns its result (JSON). Offsets are UTF-16 indices.
    pub fn call(&self, task: &str, request: &str) -> Result<String, JsError> {
        // This engine runs on the CPU, whose futures complete without ever waiting, so
        // driving them to completion here cannot block. A WebGPU engine needs an async export.
        pollster::block_on(calls::call(&self.engine, task, request))
            .map_err(|e| JsError::new(&e.to_string()))
    }
}

/// Panics on purpose, so tests can check that a trapped instance is replaced. Never called
/// by the library itself.
#[wasm_bindgen(js_name = debugTrap)]
pub fn debug_trap() {
    panic!("debugTrap called");
}
