//! Where a CPU forward pass spends its time, per kind of op: a random MiniLM-L6-shaped model
//! (f32, or with q4 weights like the PII export: `--q4`, or per-channel q8 weights like
//! transformers.js's `model_quantized.onnx`: `--q8`) on 128 tokens (`--tokens N`). Needs no files, so it
//! also runs for wasm32-wasip1 in Chromium (`node tests/bench/wasi-chromium.mjs <wasm> --q4`).
//! `--threads N`: native only, N threads. `--prefetch on|off`: the f32 GEMMs prefetch the
//! weights ahead or not (else as the CPU wants, or the wasm default).
//! Natively, `--model DIR` profiles a model folder instead (e.g. which linears run on integers),
//! `--isa NAME` picks another kernel (avx2 on an AVX-512 machine), `--runs N` (10); with
//! `--shape bert-base` (`minilm-l6`, `bert-large`) the folder's family at that shape with seeded
//! weights. Per kind of
//! op: the mean and the minimum over the runs (the minimum moves less on a loaded machine).
use std::time::Instant;
use webert::cpu::{kernels, CpuExecutor};
use webert::exec::{Batch, Quantized};
use webert::model::{synthetic, ModelConfig, Plan};

fn main() {
    let q4 = std::env::args().any(|a| a == "--q4");
    let q8 = std::env::args().any(|a| a == "--q8");
    let f32_only = std::env::args().any(|a| a == "--f32");
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--prefetch") {
        webert::cpu::gemm::set_prefetch(Some(args[i + 1] == "on"));
    }
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        webert::cpu::pool::set_threads(args[i + 1].parse().expect("--threads N"));
    }
    let dir = args
        .iter()
        .position(|a| a == "--model")
        .map(|i| &args[i + 1]);
    let (cfg, weights) = match dir {
        Some(dir) => match args.iter().position(|a| a == "--shape") {
            // The folder's family at a standard shape (or its own: `config`), seeded weights.
            Some(i) => {
                let path = std::path::Path::new(dir).join("config.json");
                let text = std::fs::read_to_string(&path).expect("config.json");
                let cfg = ModelConfig::from_json("config.json", &text).expect("config");
                let fabricate = synthetic::Fabricate {
                    seed: 1,
                    quantize: (q4 || q8).then_some(q8),
                };
                synthetic::random_model(cfg, &args[i + 1], fabricate).expect("--shape NAME")
            }
            None => {
                let files =
                    webert::model::ModelFiles::from_dir(dir.as_ref()).expect("model folder");
                let (cfg, _, weights) = files.load().expect("model");
                (cfg, weights)
            }
        },
        None => {
            let cfg = ModelConfig::from_json(
                "config.json",
                r#"{"model_type":"bert","vocab_size":30522,"hidden_size":384,"num_hidden_layers":6,
            "num_attention_heads":12,"intermediate_size":1536,"max_position_embeddings":512}"#,
            )
            .expect("config");
            let fabricate = synthetic::Fabricate {
                seed: 1,
                quantize: (q4 || q8).then_some(q8),
            };
            synthetic::random_model(cfg, "minilm-l6", fabricate).expect("shape")
        }
    };
    let (plan, weights) = Plan::build(cfg, weights).expect("plan");
    let quantized = if f32_only {
        Quantized::F32
    } else {
        Quantized::Int
    };
    let cfg_vocab = plan.config.vocab_size as u32;
    let plan = std::sync::Arc::new(plan);
    let kernel = match args.iter().position(|a| a == "--isa") {
        Some(i) => kernels::by_name(&args[i + 1]).expect("--isa NAME"),
        None => kernels::select(),
    };
    let mut exec = CpuExecutor::new(plan, weights, kernel, quantized);
    let l = args
        .iter()
        .position(|a| a == "--tokens")
        .map_or(128, |i| args[i + 1].parse().expect("--tokens N"));
    let batch = Batch {
        ids: (0..l as u32).map(|i| (1000 + i * 7) % cfg_vocab).collect(),
        type_ids: vec![0; l],
        lens: vec![l],
        seq_len: l,
        picked: vec![],
    };
    let start = Instant::now();
    let now = || start.elapsed().as_secs_f64() * 1e3;
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .map_or(10, |i| args[i + 1].parse().expect("--runs N"));
    // per kind of op: (name, mean ms, min ms)
    let mut totals: Vec<(String, f64, f64)> = Vec::new();
    for r in 0..runs + 2 {
        let p = exec.profile(&batch, now).expect("forward");
        if r < 2 {
            continue;
        }
        for (k, ms) in p {
            match totals.iter_mut().find(|(t, ..)| *t == k) {
                Some((_, t, m)) => (*t, *m) = (*t + ms / runs as f64, m.min(ms)),
                None => totals.push((k, ms / runs as f64, ms)),
            }
        }
    }
    let all: f64 = totals.iter().map(|(_, ms, _)| ms).sum();
    let all_min: f64 = totals.iter().map(|(.., ms)| ms).sum();
    println!(
        "{} ({}), 1x{l} tokens: {all:.1} ms per forward (sum of minima {all_min:.1})",
        exec.kernel_name(),
        match (dir, q4, q8, f32_only) {
            (Some(_), .., true) => "model, quantized weights in f32",
            (Some(_), ..) => "model",
            (None, true, ..) => "q4 weights",
            (None, _, true, _) => "q8 weights",
            (None, ..) => "f32 weights",
        }
    );
    for (k, ms, min) in totals {
        println!(
            "  {ms:7.2} ms {:5.1}%  min {min:7.2}  {k}",
            100.0 * ms / all
        );
    }
    if let Some(kb) = peak_rss_kb() {
        println!("peak resident memory {:.1} MiB", kb as f64 / 1024.0);
    }
}

/// The process's peak resident set (Linux's `VmHWM`), in KiB.
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
