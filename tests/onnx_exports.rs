//! Real ONNX exports of other families: the tiny seeded DistilBERT, RoBERTa and ELECTRA
//! checkpoints of `tests/tiny` exported by torch.onnx's TorchScript exporter (as optimum does)
//! and quantized as transformers.js does (q8 `MatMulInteger`, q4 `MatMulNBits`), by
//! `scripts/make_tiny_onnx_exports.py` into `tests/onnx-exports/<folder>`; webert on each file
//! (with the folder's config and tokenizer) against onnxruntime on the same file
//! (`onnx_golden.json` there), with the integer kernels and (but for q8, whose f32
//! path does not quantize activations as onnxruntime does) in f32.

mod common;
use common::*;
use pollster::block_on;
use webert::engine::{Engine, LoadOptions, Quantized, Want};
use webert::model::ModelFiles;

const FOLDERS: [&str; 4] = [
    "distilbert-seqcls",
    "roberta-seqcls",
    "roberta-tokcls",
    "electra-seqcls",
];

fn softmax(row: &[f32]) -> Vec<f32> {
    let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let e: Vec<f32> = row.iter().map(|v| (v - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// A model folder: `dir`'s config and tokenizer files and the export's ONNX file of `dtype`.
fn onnx_only(dir: &std::path::Path, exports: &std::path::Path, dtype: &str) -> std::path::PathBuf {
    let name = dir.file_name().unwrap().to_str().unwrap();
    let out =
        (root().join("target/test-models")).join(format!("{name}-{dtype}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(out.join("onnx")).unwrap();
    for f in std::fs::read_dir(dir).unwrap().map(|f| f.unwrap().path()) {
        if f.extension().is_some_and(|e| e == "json") {
            std::fs::copy(&f, out.join(f.file_name().unwrap())).unwrap();
        }
    }
    let file = webert::model::files::dtype_file(dtype).unwrap();
    std::fs::copy(exports.join(file), out.join(file)).unwrap();
    out
}

#[test]
fn torch_exports_of_other_families_match_onnxruntime() {
    for name in FOLDERS {
        let dir = root().join("tests/tiny").join(name);
        let exports = root().join("tests/onnx-exports").join(name);
        let golden = std::fs::read_to_string(exports.join("onnx_golden.json")).unwrap();
        let golden: serde_json::Value = serde_json::from_str(&golden).unwrap();
        for (dtype, rows) in golden["dtypes"].as_object().unwrap() {
            let paths: &[Quantized] = match dtype.as_str() {
                "q8" => &[Quantized::Int],
                _ => &[Quantized::Int, Quantized::F32],
            };
            for &quantized in paths {
                let files =
                    ModelFiles::from_dir_dtype(&onnx_only(&dir, &exports, dtype), Some(dtype))
                        .unwrap();
                let options = LoadOptions {
                    quantized,
                    ..LoadOptions::cpu()
                };
                let what = format!("{name} {dtype} {quantized:?}");
                let e: Engine = block_on(Engine::load(files, options)).unwrap();
                let mut worst = 0f32;
                for row in rows.as_array().unwrap() {
                    let enc = e.encode(str_of(row, "text"), None, None).unwrap();
                    assert_eq!(enc.get_ids(), ids(&row["input_ids"]), "{what}: tokens");
                    // one row per token (token classification) or one for the sequence
                    let probs = row["probs"].as_array().unwrap();
                    let want: Vec<Vec<f32>> = match probs[0].is_array() {
                        true => probs.iter().map(floats).collect(),
                        false => vec![floats(&row["probs"])],
                    };
                    let width = want[0].len();
                    let logits = block_on(e.run(&[enc], Want::Logits, &[]))
                        .unwrap()
                        .remove(0)
                        .logits;
                    let got: Vec<Vec<f32>> = logits.chunks_exact(width).map(softmax).collect();
                    assert_eq!(got.len(), want.len(), "{what}: rows");
                    for (g, w) in got.iter().zip(&want) {
                        worst = worst.max(max_abs_diff(g, w));
                    }
                }
                eprintln!("{what}: max |Δp| {worst:.1e} against onnxruntime");
                // Measured ≤ 1.5e-6 on every file (q8 included: onnxruntime's arithmetic).
                assert!(worst < 1e-4, "{what}: max |Δp| {worst}");
            }
        }
    }
}
