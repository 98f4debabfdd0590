//! Packed-model images across the JS boundary: an engine's image out as Blob parts, an engine
//! built from one (`crate::cpu::image`).

use super::bindings::{js_error, ModelLoader, WebEngine};
use crate::cpu::image::ImageSource;
use crate::engine::{Engine, LoadOptions};
use crate::error::parse_name;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl ModelLoader {
    /// Builds a CPU engine from a packed-model image (`WebEngine.imageParts` of an engine
    /// loaded from the same files) and the folder's other files (config, tokenizer; no
    /// weights). An error when the image is another build's, kernel's or `quantized` mode's,
    /// or damaged: then load the files.
    #[wasm_bindgen(js_name = loadImage)]
    pub fn load_image(
        self,
        image: &js_sys::Uint8Array,
        quantized: String,
    ) -> Result<WebEngine, JsError> {
        let options = LoadOptions {
            quantized: parse_name("quantized", &quantized).map_err(js_error)?,
            memory_budget: self.budget,
            ..LoadOptions::cpu()
        };
        let engine = Engine::from_image(self.files, &JsImage(image), options).map_err(js_error)?;
        Ok(WebEngine::new(engine))
    }
}

/// An image in a JS array, copied from straight into each array the engine keeps.
struct JsImage<'a>(&'a js_sys::Uint8Array);

impl ImageSource for JsImage<'_> {
    fn byte_len(&self) -> usize {
        self.0.length() as usize
    }
    fn read(&self, at: usize, dst: &mut [u8]) {
        self.0
            .subarray(at as u32, (at + dst.len()) as u32)
            .copy_to(dst);
    }
}

#[wasm_bindgen]
impl WebEngine {
    /// This engine's packed-model image for `ModelLoader.loadImage`, as parts to put in a
    /// `Blob` (each copied out of the WebAssembly memory, which the image never takes whole).
    #[wasm_bindgen(js_name = imageParts)]
    pub fn image_parts(&self) -> Result<js_sys::Array, JsError> {
        let parts = js_sys::Array::new();
        let mut sink = |part: &[u8]| {
            if !part.is_empty() {
                parts.push(&js_sys::Uint8Array::from(part));
            }
        };
        self.engine.write_image(&mut sink).map_err(js_error)?;
        Ok(parts)
    }
}
