//! Packed-model images across the JS boundary: an engine's image out a chunk at a time, an
//! engine built from one (`crate::cpu::image`).

use super::bindings::{js_error, ModelLoader, WebEngine};
use crate::cpu::image::{ImageCursor, ImageSource};
use crate::engine::{Engine, LoadOptions};
use crate::error::parse_name;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl ModelLoader {
    /// Builds a CPU engine from a packed-model image (`WebEngine.imageChunk` of an engine
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

/// A packed-model image being written out of an engine a chunk at a time
/// (`WebEngine.imageCursor`, `WebEngine.imageChunk`).
#[wasm_bindgen(js_name = ImageCursor)]
pub struct WebImageCursor(ImageCursor);

#[wasm_bindgen(js_class = ImageCursor)]
impl WebImageCursor {
    /// The image's length in bytes.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> f64 {
        self.0.len() as f64
    }

    /// Whether every byte is out.
    #[wasm_bindgen(getter)]
    pub fn done(&self) -> bool {
        self.0.done()
    }
}

#[wasm_bindgen]
impl WebEngine {
    /// The start of this engine's packed-model image (for `ModelLoader.loadImage`), to take
    /// with `imageChunk` a piece at a time: the image is never held whole, in the WebAssembly
    /// memory or in JS.
    #[wasm_bindgen(js_name = imageCursor)]
    pub fn image_cursor(&self) -> Result<WebImageCursor, JsError> {
        self.engine
            .image_cursor()
            .map(WebImageCursor)
            .map_err(js_error)
    }

    /// The next `max` bytes of the image (fewer at its end), copied out of the WebAssembly
    /// memory; an error for a cursor of another engine.
    #[wasm_bindgen(js_name = imageChunk)]
    pub fn image_chunk(
        &self,
        cursor: &mut WebImageCursor,
        max: f64,
    ) -> Result<js_sys::Uint8Array, JsError> {
        let max = (max.max(1.0) as u64).min(1 << 30);
        let left = cursor.0.len() - cursor.0.at();
        let out = js_sys::Uint8Array::new_with_length(max.min(left) as u32);
        let mut at = 0u32;
        let mut sink = |part: &[u8]| {
            out.subarray(at, at + part.len() as u32).copy_from(part);
            at += part.len() as u32;
        };
        (self.engine)
            .write_image_chunk(&mut cursor.0, max, &mut sink)
            .map_err(js_error)?;
        Ok(out.subarray(0, at))
    }
}
