//! The files of a Hugging Face model folder, read from disk (native) or handed over as bytes
//! (browser): config, tokenizer, and weights as safetensors (shards merged) or ONNX.

use super::config::ModelConfig;
use super::tokenizer::TextTokenizer;
use super::weights::Weights;
use crate::error::{Error, Result};

#[derive(Default)]
pub struct ModelFiles {
    /// Where the files came from, for error messages.
    pub origin: String,
    /// `(relative path, bytes)` of every file.
    pub files: Vec<(String, Vec<u8>)>,
}

/// The files a model folder must have.
pub const REQUIRED_FILES: &[&str] = &["config.json", "tokenizer.json"];
/// The text files read when present.
pub const TEXT_FILES: &[&str] = &["config.json", "tokenizer.json", "tokenizer_config.json"];
/// Weight files in order of preference (safetensors shards, found by their index, come
/// before the ONNX exports); the JS package fetches by this list.
pub const WEIGHT_FILES: &[&str] = &[
    "model.safetensors",
    "onnx/model.onnx",
    "onnx/model_fp16.onnx",
    "onnx/model_quantized.onnx",
    "onnx/model_int8.onnx",
    "onnx/model_uint8.onnx",
    "onnx/model_q4.onnx",
    "onnx/model_q4f16.onnx",
    "onnx/model_bnb4.onnx",
];

/// The ONNX variants of [`WEIGHT_FILES`], full precision first.
fn onnx_preference() -> impl Iterator<Item = &'static str> {
    WEIGHT_FILES
        .iter()
        .copied()
        .filter(|f| f.ends_with(".onnx"))
}

/// [`REQUIRED_FILES`], [`TEXT_FILES`] and [`WEIGHT_FILES`] as JSON, for the JS package.
pub fn layout_json() -> String {
    serde_json::json!({
        "required": REQUIRED_FILES,
        "text": TEXT_FILES,
        "weights": WEIGHT_FILES,
    })
    .to_string()
}

impl ModelFiles {
    pub fn new(origin: impl Into<String>) -> Self {
        ModelFiles {
            origin: origin.into(),
            files: Vec::new(),
        }
    }

    pub fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.files.push((name.into(), bytes));
    }

    /// Reads the files webert uses from a model folder.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn from_dir(dir: &std::path::Path) -> Result<Self> {
        let io = |p: &std::path::Path, e| Error::Io {
            path: p.display().to_string(),
            source: e,
        };
        let mut files = ModelFiles::new(dir.display().to_string());
        let meta = std::fs::metadata(dir).map_err(|e| io(dir, e))?;
        if !meta.is_dir() {
            return Err(Error::config(&files.origin, "is not a folder"));
        }
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
            let name = entry
                .map_err(|e| io(dir, e))?
                .file_name()
                .to_string_lossy()
                .to_string();
            if name.ends_with(".json") || name.ends_with(".safetensors") {
                names.push(name);
            }
        }
        let has_safetensors = names.iter().any(|n| n.ends_with(".safetensors"));
        if !has_safetensors {
            if let Some(onnx) = onnx_preference().find(|p| dir.join(p).is_file()) {
                names.push(onnx.to_string());
            }
        }
        names.sort();
        for name in names {
            let path = dir.join(&name);
            files.add(name, std::fs::read(&path).map_err(|e| io(&path, e))?);
        }
        Ok(files)
    }

    fn take(&mut self, name: &str) -> Option<Vec<u8>> {
        let i = self.files.iter().position(|(n, _)| n == name)?;
        Some(self.files.swap_remove(i).1)
    }

    fn text(&mut self, name: &str) -> Result<Option<String>> {
        match self.take(name) {
            None => Ok(None),
            Some(b) => String::from_utf8(b).map(Some).map_err(|_| {
                Error::config(&format!("{}/{name}", self.origin), "is not UTF-8 text")
            }),
        }
    }

    /// Parses config and tokenizer and converts the weights, consuming the raw bytes so
    /// that each file's memory is released as soon as it is converted.
    pub fn load(mut self) -> Result<(ModelConfig, TextTokenizer, Weights)> {
        let origin = self.origin.clone();
        let cfg_text = self
            .text("config.json")?
            .ok_or_else(|| Error::config(&origin, "has no config.json"))?;
        let config = ModelConfig::from_json(&format!("{origin}/config.json"), &cfg_text)?;
        let tok_json = self.take("tokenizer.json").ok_or_else(|| {
            Error::config(
                &origin,
                "has no tokenizer.json (only fast-tokenizer folders are supported)",
            )
        })?;
        let tok_cfg = self.text("tokenizer_config.json")?;
        let tokenizer = TextTokenizer::from_json(&tok_json, tok_cfg.as_deref())?;
        drop(tok_json);

        let mut weights = Weights::default();
        let mut names: Vec<String> = self.files.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        for name in names.iter().filter(|n| n.ends_with(".safetensors")) {
            if let Some(bytes) = self.take(name) {
                weights.add_safetensors(&format!("{origin}/{name}"), &bytes)?;
            }
        }
        if weights.is_empty() {
            let onnx = onnx_preference()
                .map(|s| s.to_string())
                .find(|p| names.contains(p))
                .or_else(|| names.iter().find(|n| n.ends_with(".onnx")).cloned())
                .ok_or_else(|| Error::NoWeights(origin.clone()))?;
            let bytes = self
                .take(&onnx)
                .ok_or_else(|| Error::NoWeights(origin.clone()))?;
            weights =
                super::onnx::import_as(&format!("{origin}/{onnx}"), &bytes, config.model_type)?;
        }
        Ok((config, tokenizer, weights))
    }
}
