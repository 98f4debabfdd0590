//! The files of a Hugging Face model folder, read from disk (native) or handed over as bytes
//! (browser): config, tokenizer, and weights as safetensors (shards merged) or ONNX.

use super::config::ModelConfig;
use super::sentence;
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

/// transformers.js's `dtype` names and the ONNX file each one reads (`fp32` also takes
/// safetensors, before its ONNX file).
pub const DTYPES: &[(&str, &str)] = &[
    ("fp32", "onnx/model.onnx"),
    ("fp16", "onnx/model_fp16.onnx"),
    ("q8", "onnx/model_quantized.onnx"),
    ("int8", "onnx/model_int8.onnx"),
    ("uint8", "onnx/model_uint8.onnx"),
    ("q4", "onnx/model_q4.onnx"),
    ("q4f16", "onnx/model_q4f16.onnx"),
    ("bnb4", "onnx/model_bnb4.onnx"),
];

/// The ONNX variants of [`WEIGHT_FILES`], full precision first.
fn onnx_preference() -> impl Iterator<Item = &'static str> {
    WEIGHT_FILES
        .iter()
        .copied()
        .filter(|f| f.ends_with(".onnx"))
}

/// The ONNX file of a dtype; an unknown name is an error that lists the known ones.
pub fn dtype_file(dtype: &str) -> Result<&'static str> {
    (DTYPES.iter().find(|(d, _)| *d == dtype).map(|(_, f)| *f)).ok_or_else(|| {
        let names: Vec<&str> = DTYPES.iter().map(|(d, _)| *d).collect();
        Error::Input(format!(
            "unknown dtype `{dtype}`; use one of {}",
            names.join(", ")
        ))
    })
}

/// The dtypes whose files are among `names` (a folder's relative paths), as `dtype (file)`.
pub fn dtypes_present(names: &[String]) -> Vec<String> {
    let has = |f: &str| names.iter().any(|n| n == f);
    let mut out = Vec::new();
    if names.iter().any(|n| n.ends_with(".safetensors")) {
        out.push("fp32 (safetensors)".to_string());
    }
    for (d, f) in DTYPES {
        if has(f) {
            out.push(format!("{d} ({f})"));
        }
    }
    out
}

/// The weight files webert reads from a folder whose files are `names`: for `dtype`, its
/// file (`fp32`: safetensors shards when there are any, else `onnx/model.onnx`); without one,
/// the most accurate set present ([`WEIGHT_FILES`]' order, then any other `.onnx`).
pub fn pick_weights(origin: &str, names: &[String], dtype: Option<&str>) -> Result<Vec<String>> {
    let mut shards: Vec<String> = (names.iter())
        .filter(|n| n.ends_with(".safetensors"))
        .cloned()
        .collect();
    shards.sort();
    let has = |f: &str| names.iter().any(|n| n == f);
    let Some(dtype) = dtype else {
        if !shards.is_empty() {
            return Ok(shards);
        }
        let onnx = (onnx_preference().find(|f| has(f)).map(str::to_string))
            .or_else(|| names.iter().find(|n| n.ends_with(".onnx")).cloned());
        return onnx
            .map(|f| vec![f])
            .ok_or_else(|| Error::NoWeights(origin.to_string()));
    };
    let file = dtype_file(dtype)?;
    if dtype == "fp32" && !shards.is_empty() {
        return Ok(shards);
    }
    if has(file) {
        return Ok(vec![file.to_string()]);
    }
    let present = dtypes_present(names);
    let present = match present.is_empty() {
        true => "none of the dtypes' files".to_string(),
        false => present.join(", "),
    };
    let or = if dtype == "fp32" {
        " or safetensors"
    } else {
        ""
    };
    Err(Error::config(
        origin,
        format!("has no {dtype} weights ({file}{or}); it has: {present}"),
    ))
}

/// The files of a folder listed by `names` that the engine reads: the required and text
/// files present and one set of weights ([`pick_weights`]).
pub fn pick(origin: &str, names: &[String], dtype: Option<&str>) -> Result<Vec<String>> {
    let has = |f: &str| names.iter().any(|n| n == f);
    if let Some(missing) = REQUIRED_FILES.iter().find(|f| !has(f)) {
        return Err(Error::config(origin, format!("has no {missing}")));
    }
    let mut out: Vec<String> = (TEXT_FILES.iter())
        .filter(|f| has(f))
        .map(|f| f.to_string())
        .collect();
    out.extend(pick_weights(origin, names, dtype)?);
    Ok(out)
}

/// [`REQUIRED_FILES`], [`TEXT_FILES`], [`WEIGHT_FILES`] and [`DTYPES`] (`{ dtype: file }`) as
/// JSON, for the JS package.
pub fn layout_json() -> String {
    let dtypes: serde_json::Map<String, serde_json::Value> = (DTYPES.iter())
        .map(|(d, f)| (d.to_string(), serde_json::json!(f)))
        .collect();
    serde_json::json!({
        "required": REQUIRED_FILES,
        "text": TEXT_FILES,
        "weights": WEIGHT_FILES,
        "dtypes": dtypes,
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

    /// Reads the files webert uses from a model folder: the most accurate weights present.
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn from_dir(dir: &std::path::Path) -> Result<Self> {
        Self::from_dir_dtype(dir, None)
    }

    /// Reads the files webert uses from a model folder, with the weights of `dtype` (see
    /// [`pick_weights`]).
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn from_dir_dtype(dir: &std::path::Path, dtype: Option<&str>) -> Result<Self> {
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
        for sub in ["", "onnx"] {
            let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
                continue;
            };
            for entry in entries {
                let entry = entry.map_err(|e| io(dir, e))?;
                let name = entry.file_name().to_string_lossy().to_string();
                if entry.path().is_file() {
                    names.push(if sub.is_empty() {
                        name
                    } else {
                        format!("onnx/{name}")
                    });
                }
            }
        }
        // The JSON files (config, tokenizer, a shard index...) and one set of weights.
        let mut wanted: Vec<String> = (names.iter())
            .filter(|n| n.ends_with(".json") && !n.contains('/'))
            .cloned()
            .collect();
        // A folder without config.json is no model folder: say that before looking for weights
        // (the loader names a missing tokenizer).
        if !wanted.iter().any(|n| n == "config.json") {
            return Err(Error::config(&files.origin, "has no config.json"));
        }
        // A sentence-transformers folder's Pooling config, in the subfolder modules.json names.
        if names.iter().any(|n| n == sentence::MODULES) {
            let path = dir.join(sentence::MODULES);
            let modules = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            let pooling = sentence::pooling_file(&files.origin, &modules)?;
            wanted.extend(pooling.filter(|p| dir.join(p).is_file()));
        }
        wanted.extend(pick_weights(&files.origin, &names, dtype)?);
        wanted.sort();
        for name in wanted {
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
    pub fn load(self) -> Result<(ModelConfig, TextTokenizer, Weights)> {
        self.load_within(super::budget::DEFAULT)
    }

    /// As [`Self::load`], refusing a model whose weights would take more than `budget` bytes
    /// as f32: by the sizes `config.json` declares, before any weight file is read, then by
    /// the shapes each file declares, before converting it.
    pub fn load_within(mut self, budget: u64) -> Result<(ModelConfig, TextTokenizer, Weights)> {
        let (config, tokenizer) = self.config_and_tokenizer(budget)?;
        let weights = self.weights_within(&config, budget)?;
        Ok((config, tokenizer, weights))
    }

    /// The config and tokenizer of a folder without weights (timing a family's shape with
    /// seeded weights: `webert bench --shape config`).
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    pub fn config_and_tokenizer_of(dir: &std::path::Path) -> Result<(ModelConfig, TextTokenizer)> {
        let mut files = ModelFiles::new(dir.display().to_string());
        for name in ["config.json", "tokenizer.json", "tokenizer_config.json"] {
            if let Ok(bytes) = std::fs::read(dir.join(name)) {
                files.add(name, bytes);
            }
        }
        files.config_and_tokenizer(super::budget::DEFAULT)
    }

    /// The config (with a sentence-transformers folder's pooling) and the tokenizer, without
    /// reading any weights.
    pub fn config_and_tokenizer(&mut self, budget: u64) -> Result<(ModelConfig, TextTokenizer)> {
        let origin = self.origin.clone();
        let cfg_text = self
            .text("config.json")?
            .ok_or_else(|| Error::config(&origin, "has no config.json"))?;
        let mut config = ModelConfig::from_json(&format!("{origin}/config.json"), &cfg_text)?;
        config.check_budget(budget)?;
        if let Some(modules) = self.text(sentence::MODULES)? {
            let pooling = match sentence::pooling_file(&origin, &modules)? {
                Some(file) => self.text(&file)?,
                None => None,
            };
            let settings = self.text(sentence::SETTINGS)?;
            config.sentence = Some(sentence::SentenceConfig::parse(
                &origin,
                &modules,
                pooling.as_deref(),
                settings.as_deref(),
            )?);
        }
        let tok_json = self.take("tokenizer.json").ok_or_else(|| {
            Error::config(
                &origin,
                "has no tokenizer.json (only fast-tokenizer folders are supported)",
            )
        })?;
        let tok_cfg = self.text("tokenizer_config.json")?;
        let tokenizer = TextTokenizer::from_json(&tok_json, tok_cfg.as_deref())?;
        Ok((config, tokenizer))
    }

    fn weights_within(&mut self, config: &super::ModelConfig, budget: u64) -> Result<Weights> {
        let origin = self.origin.clone();
        let mut weights = Weights::default();
        let mut names: Vec<String> = self.files.iter().map(|(n, _)| n.clone()).collect();
        names.sort();
        for name in names.iter().filter(|n| n.ends_with(".safetensors")) {
            if let Some(bytes) = self.take(name) {
                weights.add_safetensors_within(&format!("{origin}/{name}"), &bytes, budget)?;
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
            let file = format!("{origin}/{onnx}");
            weights = super::onnx::import_checked(&file, &bytes, config, budget)?;
        }
        let family = config.model_type.family();
        for other in family.other_prefixes {
            weights.rename_prefix(other, family.prefix);
        }
        Ok(weights)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dtypes_choose_transformers_js_files() {
        let all = names(&[
            "config.json",
            "tokenizer.json",
            "onnx/model.onnx",
            "onnx/model_fp16.onnx",
            "onnx/model_quantized.onnx",
            "onnx/model_int8.onnx",
            "onnx/model_uint8.onnx",
            "onnx/model_q4.onnx",
            "onnx/model_q4f16.onnx",
            "onnx/model_bnb4.onnx",
        ]);
        for (dtype, file) in DTYPES {
            assert_eq!(pick_weights("m", &all, Some(dtype)).unwrap(), [*file]);
        }
        assert_eq!(pick_weights("m", &all, None).unwrap(), ["onnx/model.onnx"]);
        let q = names(&["onnx/model_q4f16.onnx", "onnx/model_quantized.onnx"]);
        assert_eq!(
            pick_weights("m", &q, None).unwrap(),
            ["onnx/model_quantized.onnx"]
        );
        let odd = names(&["onnx/model_custom.onnx"]);
        assert_eq!(
            pick_weights("m", &odd, None).unwrap(),
            ["onnx/model_custom.onnx"]
        );
    }

    #[test]
    fn fp32_prefers_safetensors_shards() {
        let n = names(&[
            "model-00002-of-00002.safetensors",
            "model-00001-of-00002.safetensors",
            "onnx/model.onnx",
            "onnx/model_q4.onnx",
        ]);
        let shards = [
            "model-00001-of-00002.safetensors",
            "model-00002-of-00002.safetensors",
        ];
        assert_eq!(pick_weights("m", &n, Some("fp32")).unwrap(), shards);
        assert_eq!(pick_weights("m", &n, None).unwrap(), shards);
        assert_eq!(
            pick_weights("m", &n, Some("q4")).unwrap(),
            ["onnx/model_q4.onnx"]
        );
    }

    #[test]
    fn a_missing_dtype_names_the_ones_present() {
        let n = names(&["config.json", "onnx/model_q4.onnx", "onnx/model_fp16.onnx"]);
        let e = pick_weights("org/m", &n, Some("q8"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("org/m: has no q8 weights (onnx/model_quantized.onnx)"),
            "{e}"
        );
        assert!(
            e.contains("fp16 (onnx/model_fp16.onnx), q4 (onnx/model_q4.onnx)"),
            "{e}"
        );
        let e = pick_weights("m", &names(&["model.safetensors"]), Some("fp16"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("it has: fp32 (safetensors)"), "{e}");
        let e = pick_weights("m", &n, Some("int4")).unwrap_err().to_string();
        assert!(
            e.contains(
                "unknown dtype `int4`; use one of fp32, fp16, q8, int8, uint8, q4, q4f16, bnb4"
            ),
            "{e}"
        );
        let e = pick_weights("m", &names(&["config.json"]), None).unwrap_err();
        assert!(matches!(e, Error::NoWeights(_)));
    }

    #[test]
    fn pick_lists_text_files_then_weights() {
        let n = names(&[
            "config.json",
            "tokenizer.json",
            "special_tokens_map.json",
            "tokenizer_config.json",
            "onnx/model_q4.onnx",
        ]);
        assert_eq!(
            pick("m", &n, None).unwrap(),
            [
                "config.json",
                "tokenizer.json",
                "tokenizer_config.json",
                "onnx/model_q4.onnx"
            ]
        );
        let e = pick("m", &names(&["config.json"]), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no tokenizer.json"), "{e}");
    }
}
