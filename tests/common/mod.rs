//! Shared helpers for the golden tests: model folders, golden JSON, tolerances.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use webert::engine::{Engine, LoadOptions};
use webert::model::ModelFiles;

pub mod pretraining;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A real checkpoint fetched by `scripts/fetch_models.sh`; the tests fail loudly without it.
pub fn model_dir(name: &str) -> PathBuf {
    let dir = std::env::var("WEBERT_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root().join("models"))
        .join(name);
    assert!(
        dir.join("config.json").is_file(),
        "{} is missing: run scripts/fetch_models.sh",
        dir.display()
    );
    dir
}

pub fn golden(name: &str) -> Value {
    let path = root().join("tests/golden").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// MiniLM's encoder and tokenizer plus a committed seeded head (`tests/heads/NAME`), put
/// together in a temporary folder the way a user's fine-tuned checkpoint would look.
pub fn with_head(head: &str) -> PathBuf {
    with_head_on("minilm", head)
}

/// The real encoder `models/ENCODER` (weights and tokenizer) plus the committed seeded head
/// `tests/heads/HEAD`, in a temporary folder.
pub fn with_head_on(encoder: &str, head: &str) -> PathBuf {
    // One folder per test process (WASI has no process ids; its tests run one process at a time).
    #[cfg(not(target_os = "wasi"))]
    let tag = std::process::id();
    #[cfg(target_os = "wasi")]
    let tag = "wasi";
    let dir = root()
        .join("target/test-models")
        .join(format!("{encoder}-{head}-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let base = model_dir(encoder);
    for f in [
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ] {
        if base.join(f).is_file() {
            link(&base.join(f), &dir.join(f));
        }
    }
    let heads = root().join("tests/heads").join(head);
    link(&heads.join("config.json"), &dir.join("config.json"));
    link(
        &heads.join("head.safetensors"),
        &dir.join("head.safetensors"),
    );
    dir
}

fn link(src: &Path, dst: &Path) {
    #[cfg(unix)]
    let r = std::os::unix::fs::symlink(src, dst);
    #[cfg(not(unix))]
    let r = std::fs::copy(src, dst).map(|_| ());
    r.unwrap_or_else(|e| panic!("link {}: {e}", src.display()));
}

/// A model folder loaded for the CPU.
pub fn engine(dir: &Path) -> Engine {
    try_engine(dir).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

/// The GPU executor with f32 weights (the goldens' precision), its other settings the defaults.
#[allow(dead_code)]
pub fn gpu_f32() -> LoadOptions {
    LoadOptions {
        device: webert::engine::Device::Gpu,
        gpu: webert::engine::GpuOptions {
            f16: Some(false),
            ..webert::engine::GpuOptions::DEFAULT
        },
        ..Default::default()
    }
}

pub fn try_engine(dir: &Path) -> webert::Result<Engine> {
    let files = ModelFiles::from_dir(dir)?;
    pollster::block_on(Engine::load(files, LoadOptions::cpu()))
}

/// A CPU executor of the model in `dir` on `kernel`, and its tokenizer.
pub fn cpu_executor(
    dir: &Path,
    kernel: &'static webert::cpu::kernels::Kernel,
    quantized: webert::exec::Quantized,
) -> (webert::cpu::CpuExecutor, webert::model::TextTokenizer) {
    let (cfg, tok, w) = ModelFiles::from_dir(dir).unwrap().load().unwrap();
    let (plan, weights) = webert::model::Plan::build(cfg, w).unwrap();
    let exec = webert::cpu::CpuExecutor::new(std::sync::Arc::new(plan), weights, kernel, quantized);
    (exec, tok)
}

pub fn floats(v: &Value) -> Vec<f32> {
    match v {
        Value::Array(a) => a.iter().flat_map(floats).collect(),
        Value::Number(n) => vec![n.as_f64().unwrap() as f32],
        other => panic!("not a number array: {other}"),
    }
}

pub fn ids(v: &Value) -> Vec<u32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect()
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len(), "length differs");
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[track_caller]
pub fn assert_close(what: &str, got: &[f32], want: &[f32], tol: f32) {
    let d = max_abs_diff(got, want);
    assert!(d <= tol, "{what}: max abs diff {d:e} > {tol:e}");
}

pub fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` missing in {v}"))
}

pub fn opt_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The hidden states and logits of `text` alone, as bits (answers compared bit for bit).
#[allow(dead_code)]
pub fn answer_bits(engine: &Engine, text: &str) -> Vec<u32> {
    let window = engine.tokenizer.encode(text, None).unwrap();
    let out = pollster::block_on(engine.run(&[window], webert::engine::Want::Both, &[])).unwrap();
    let [w] = &out[..] else { panic!("one window") };
    (w.hidden.iter().chain(&w.logits))
        .map(|x| x.to_bits())
        .collect()
}
