//! q8 (per-channel int8 weights, activations quantized per sequence as ONNX Runtime's
//! `DynamicQuantizeLinear`) on the real all-MiniLM-L6-v2: its linear weights quantized in Rust
//! exactly as onnxruntime's `quantize_dynamic(per_channel=True, reduce_range=True, QInt8)`
//! does, then the integer path (`Quantized::Int`) against the dequantized f32 path
//! (`Quantized::F32`) and against the unquantized model; and answers that do not depend on
//! how sequences are batched.

mod common;
use common::*;
use std::sync::Arc;
use webert::cpu::{kernels, CpuExecutor};
use webert::exec::{Batch, Quantized, Want};
use webert::model::{ChannelQuant, ModelFiles, Plan, Quant, TextTokenizer, Weights};

/// onnxruntime's weight quantizer for QInt8, symmetric, reduce_range, per output channel:
/// `absmax` of the row (range widened to 0), `scale = f32(2·absmax / 128)`,
/// `code = round_half_even(w / scale)` (within ±64); scale 1 for an all-zero row.
fn quantize_row(row: &[f32]) -> (f32, Vec<u8>) {
    let (lo, hi) = (row.iter()).fold((0f32, 0f32), |(l, h), &v| (l.min(v), h.max(v)));
    let absmax = lo.abs().max(hi.abs());
    let scale = (2.0 * absmax as f64 / 128.0) as f32;
    let scale = if scale < f32::MIN_POSITIVE {
        1.0
    } else {
        scale
    };
    let codes = row
        .iter()
        .map(|&v| (v / scale).round_ties_even().clamp(-128.0, 127.0) as i8 as u8)
        .collect();
    (scale, codes)
}

/// Every encoder linear weight quantized as q8, its f32 data replaced by the dequantization
/// (what the ONNX importer hands over).
fn quantize_linears(w: &mut Weights) -> usize {
    let names: Vec<String> = (w.names())
        .filter(|n| n.contains("encoder.layer.") && n.ends_with(".weight"))
        .cloned()
        .collect();
    let mut count = 0;
    for name in names {
        let t = w.get_mut(&name).unwrap();
        let [n, k] = t.shape[..] else { continue };
        let mut q = ChannelQuant {
            signed: true,
            codes: Vec::with_capacity(n * k),
            scales: Vec::with_capacity(n),
            zero_points: vec![0; n],
        };
        for row in t.data.chunks_exact(k) {
            let (s, c) = quantize_row(row);
            q.scales.push(s);
            q.codes.extend(c);
        }
        t.data = q.dequantize();
        t.quant = Some(Box::new(Quant::Channel(q)));
        count += 1;
    }
    count
}

fn minilm(quantize: bool) -> (Arc<Plan>, Vec<webert::model::Tensor>, TextTokenizer) {
    let (cfg, tok, mut w) = ModelFiles::from_dir(&model_dir("minilm"))
        .unwrap()
        .load()
        .unwrap();
    if quantize {
        assert_eq!(quantize_linears(&mut w), 6 * 6, "six linears per layer");
    }
    let (plan, weights) = Plan::build(cfg, w).unwrap();
    (Arc::new(plan), weights, tok)
}

const TEXTS: [&str; 4] = [
    "The quick brown fox jumps over the lazy dog.",
    "Quantized encoders should answer like their float originals.",
    "A",
    "WebAssembly relaxed SIMD gives 8-bit dot products; ONNX Runtime Web uses them too, \
     and this sentence is long enough to span several strips of every tile height.",
];

fn batch(tok: &TextTokenizer, texts: &[&str]) -> Batch {
    let encs: Vec<Vec<u32>> = (texts.iter())
        .map(|t| tok.encode(t, None).unwrap().get_ids().to_vec())
        .collect();
    let seq_len = encs.iter().map(Vec::len).max().unwrap();
    let mut b = Batch {
        seq_len,
        ..Batch::default()
    };
    for e in &encs {
        b.lens.push(e.len());
        b.ids
            .extend(e.iter().copied().chain(std::iter::repeat(0)).take(seq_len));
    }
    b.type_ids = vec![0; b.ids.len()];
    b
}

/// Each sequence's real token rows of a `[batch·seq_len, h]` hidden state.
fn rows(b: &Batch, hidden: &[f32], h: usize) -> Vec<Vec<f32>> {
    (b.lens.iter().enumerate())
        .map(|(s, &len)| hidden[s * b.seq_len * h..(s * b.seq_len + len) * h].to_vec())
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

/// The smallest per-token cosine between two hidden states.
fn min_token_cosine(a: &[f32], b: &[f32], h: usize) -> f64 {
    (a.chunks_exact(h).zip(b.chunks_exact(h)))
        .map(|(x, y)| cosine(x, y))
        .fold(1.0, f64::min)
}

/// The mean of a sequence's token rows (sentence-transformers' pooling).
fn mean(rows: &[f32], h: usize) -> Vec<f32> {
    let n = (rows.len() / h) as f32;
    (0..h)
        .map(|j| rows.chunks_exact(h).map(|r| r[j]).sum::<f32>() / n)
        .collect()
}

/// The kernels here with q8 tiles, and the portable int8 one (relaxed-simd's layout).
fn q8_kernels() -> Vec<&'static kernels::Kernel> {
    let mut v: Vec<_> = (kernels::available().into_iter())
        .filter(|k| !k.q8.is_empty())
        .collect();
    v.push(kernels::int8_reference());
    v
}

#[test]
fn q8_integer_path_follows_the_dequantized_model() {
    let (plan, weights, tok) = minilm(true);
    let (plain_plan, plain_weights, _) = minilm(false);
    let h = plan.config.hidden_size;
    let b = batch(&tok, &TEXTS);
    let hidden = |mut ex: CpuExecutor| ex.forward(&b, Want::Hidden).unwrap().hidden.unwrap();
    let scalar = kernels::by_name("scalar").unwrap();
    let f32_path = hidden(CpuExecutor::new(
        plan.clone(),
        weights.clone(),
        scalar,
        Quantized::F32,
    ));
    let original = hidden(CpuExecutor::new(
        plain_plan,
        plain_weights,
        scalar,
        Quantized::Int,
    ));
    let f32_rows = rows(&b, &f32_path, h);
    let orig_rows = rows(&b, &original, h);
    for kernel in q8_kernels() {
        let ex = CpuExecutor::new(plan.clone(), weights.clone(), kernel, Quantized::Int);
        // reduce_range codes (±64) take each kernel's first q8 tile, relaxed-simd's int8 one
        // (weights 0..=127) included: a column spanning -64..=64 spills a code, not the matrix
        assert_eq!(
            ex.int_kernel_names(),
            [kernel.q8[0].name],
            "{}: every q8 weight on its first tile",
            kernel.name
        );
        let int_rows = rows(&b, &hidden(ex), h);
        for (s, text) in TEXTS.iter().enumerate() {
            let vs_f32 = min_token_cosine(&int_rows[s], &f32_rows[s], h);
            let vs_orig = min_token_cosine(&int_rows[s], &orig_rows[s], h);
            let q_vs_orig = min_token_cosine(&f32_rows[s], &orig_rows[s], h);
            let pooled = cosine(&mean(&int_rows[s], h), &mean(&f32_rows[s], h));
            let pooled_orig = cosine(&mean(&int_rows[s], h), &mean(&orig_rows[s], h));
            eprintln!(
                "{} `{text:.20}`: int vs dequantized f32: token cosine ≥ {vs_f32:.5}, mean \
                 pooled {pooled:.6}; int vs unquantized: tokens ≥ {vs_orig:.5}, pooled \
                 {pooled_orig:.6} (dequantized f32 vs unquantized: tokens ≥ {q_vs_orig:.5})",
                kernel.name
            );
            // Measured: tokens ≥ 0.990, pooled ≥ 0.993 (uint8 activations per tensor, as onnxruntime).
            assert!(vs_f32 >= 0.97, "{}: {text}: {vs_f32}", kernel.name);
            assert!(pooled >= 0.985, "{}: {text}: pooled {pooled}", kernel.name);
            assert!(
                pooled_orig >= 0.98,
                "{}: {text}: {pooled_orig}",
                kernel.name
            );
        }
    }
}

/// A sequence's answer is the same alone or padded in a batch: activations are quantized per
/// sequence, over its real tokens.
#[test]
fn q8_answers_do_not_depend_on_batching() {
    let (plan, weights, tok) = minilm(true);
    let h = plan.config.hidden_size;
    for kernel in q8_kernels() {
        let mut ex = CpuExecutor::new(plan.clone(), weights.clone(), kernel, Quantized::Int);
        let b = batch(&tok, &TEXTS);
        let together = rows(
            &b,
            &ex.forward(&b, Want::Hidden).unwrap().hidden.unwrap(),
            h,
        );
        for (s, text) in TEXTS.iter().enumerate() {
            let one = batch(&tok, &[text]);
            let alone = ex.forward(&one, Want::Hidden).unwrap().hidden.unwrap();
            assert_eq!(alone, together[s], "{}: {text}", kernel.name);
        }
    }
}
