//! The integer path for q4 weights (`Quantized::Int`) on the shipped PII model, through the
//! portable kernels that share the SIMD tiles' numerics: int16 activations (plain simd128)
//! stay within ONNX Runtime's tolerance; int8 (relaxed-simd) moves logits visibly but keeps
//! every token's label. The browser tests check the same on the real relaxed-simd tile.

mod common;
use common::*;
use serde_json::Value;
use webert::cpu::{kernels, CpuExecutor};
use webert::exec::{Batch, Quantized, Want};

fn executor(kernel: &'static kernels::Kernel) -> CpuExecutor {
    cpu_executor(&model_dir("pii"), kernel, Quantized::Int).0
}

/// Every golden input (the cases and the long text's windows) with its PyTorch logits.
fn inputs() -> Vec<(String, Vec<u32>, Vec<f32>)> {
    let g = golden("pii.json");
    let windows = g["long"]["windows"].as_array().unwrap().iter();
    let cases = g["cases"].as_array().unwrap().iter();
    let named = |name: String, v: &Value| (name, ids(&v["input_ids"]), floats(&v["torch_logits"]));
    cases
        .map(|c| named(str_of(c, "name").to_string(), c))
        .chain(
            windows
                .enumerate()
                .map(|(i, w)| named(format!("window {i}"), w)),
        )
        .collect()
}

fn logits(ex: &mut CpuExecutor, ids: &[u32]) -> Vec<f32> {
    let l = ids.len();
    let batch = Batch {
        ids: ids.to_vec(),
        type_ids: vec![0; l],
        lens: vec![l],
        seq_len: l,
        picked: vec![],
    };
    ex.forward(&batch, Want::Logits).unwrap().logits.unwrap()
}

fn softmax(row: &[f32]) -> Vec<f32> {
    let m = row.iter().fold(f32::MIN, |a, &b| a.max(b));
    let e: Vec<f32> = row.iter().map(|x| (x - m).exp()).collect();
    let s: f32 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

#[test]
fn int16_activations_stay_within_onnx_runtime_tolerance() {
    let scalar = kernels::available()
        .into_iter()
        .find(|k| k.name == "scalar")
        .unwrap();
    assert_eq!(scalar.quant.unwrap().a_bytes, 2);
    let mut ex = executor(scalar);
    for (name, ids, want) in inputs() {
        assert_close(&name, &logits(&mut ex, &ids), &want, 1e-3);
    }
}

#[test]
fn int8_activations_keep_every_token_label() {
    let mut ex = executor(kernels::int8_reference());
    let (mut worst_logit, mut worst_score) = (0f32, 0f32);
    for (name, ids, want) in inputs() {
        let got = logits(&mut ex, &ids);
        let labels = want.len() / ids.len();
        for (t, (g, w)) in got.chunks(labels).zip(want.chunks(labels)).enumerate() {
            let argmax = |v: &[f32]| (0..labels).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
            assert_eq!(argmax(g), argmax(w), "{name}, token {t}: label");
            let (pg, pw) = (softmax(g), softmax(w));
            worst_score = pg
                .iter()
                .zip(&pw)
                .fold(worst_score, |m, (a, b)| m.max((a - b).abs()));
            worst_logit = g
                .iter()
                .zip(w)
                .fold(worst_logit, |m, (a, b)| m.max((a - b).abs()));
        }
    }
    // The measured movement is in docs/quantization.md; the bounds leave room above it.
    assert!(worst_logit < 0.6, "logits moved by {worst_logit}");
    assert!(worst_score < 0.05, "scores moved by {worst_score}");
    assert!(worst_logit > 1e-3, "the int8 path was not taken");
}
