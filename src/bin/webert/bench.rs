//! `webert bench`: forward passes timed, with the GPU's kernels, tilings and agreement with
//! the CPU.

use clap::Args;
use std::time::Instant;
use webert::engine::{Device, Engine, Want, WindowOutput};
use webert::{Error, Result};

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    model: super::hub::Source,
    #[arg(long, default_value_t = 1)]
    batch: usize,
    #[arg(long, default_value_t = 128)]
    seq_len: usize,
    #[arg(long, default_value_t = 20)]
    runs: usize,
    /// Untimed calls before the timed ones; the first (timed alone as `first_ms`: buffers
    /// built, GEMM tilings timed) always runs
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    #[arg(long, value_enum, default_value = "cpu")]
    backend: Device,
    /// Time a standard shape (bert-base, bert-large, minilm-l6, HxLxAxI, or `config`: the
    /// folder's own) of the folder's family with random weights, using --model only for
    /// its config and tokenizer
    #[arg(long)]
    shape: Option<String>,
    /// Run the task head too; with a GPU, also time the head alone on the CPU
    #[arg(long)]
    head: bool,
    /// On the CPU, also measure this machine's single-thread read bandwidth (summing 512 MiB)
    /// and its tile's multiply-add peak: how near them the forward runs (`of_read_bandwidth`,
    /// and `of_floor`, the longer of streaming the weights and computing at peak)
    #[arg(long)]
    bandwidth: bool,
    /// With --shape: quantize the random encoder weights (q4: 4-bit blocks of 32; q8: int8
    /// per channel), as the transformers.js exports are
    #[arg(long)]
    quant: Option<String>,
}

async fn load(a: &BenchArgs) -> Result<Engine> {
    let options = super::load::options(a.backend)?;
    let Some(shape) = &a.shape else {
        return Engine::load(a.model.files()?, options).await;
    };
    // A local folder needs no weights here (its config at `--shape config`).
    let local = std::path::Path::new(&a.model.model);
    let (config, tokenizer) = match local.is_dir() {
        true => webert::model::ModelFiles::config_and_tokenizer_of(local)?,
        false => {
            let (config, tokenizer, _) = a.model.files()?.load()?;
            (config, tokenizer)
        }
    };
    let quantize = match a.quant.as_deref() {
        None => None,
        Some(q @ ("q4" | "q8")) => Some(q == "q8"),
        Some(q) => return Err(Error::Input(format!("--quant {q}: use q4 or q8"))),
    };
    let fabricate = webert::model::synthetic::Fabricate { seed: 42, quantize };
    let (config, weights) = webert::model::synthetic::random_model(config, shape, fabricate)
        .ok_or_else(|| {
            Error::Input(format!(
                "unknown shape `{shape}`; use bert-base, bert-large, minilm-l6, HxLxAxI or config"
            ))
        })?;
    Engine::build(config, tokenizer, weights, options).await
}

/// FLOPs of the encoder's linears and attention for `batch` sequences of `seq` tokens, and
/// the bytes of its linear weights (f16 when the backend stores them so).
fn work(engine: &Engine, batch: usize, seq: usize) -> (f64, f64) {
    let width = if engine.backend().contains("f16 weights") {
        2.0
    } else {
        4.0
    };
    (
        engine.encoder_flops(batch, seq),
        engine.encoder_linear_params() * width,
    )
}

/// The process's peak resident set (Linux's `VmHWM`; a CPU-emulated GPU's memory too).
fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// How far the GPU's hidden state of the first window (in the batch as timed) is from the
/// CPU's: cosine and largest difference. `timed` is the last timed forward's output when it
/// has the hidden states (a long input on an emulated GPU takes minutes a forward).
async fn cpu_parity(
    engine: &Engine,
    windows: &[tokenizers::Encoding],
    timed: Option<Vec<WindowOutput>>,
) -> Result<serde_json::Value> {
    let gpu = match timed {
        Some(out) => out,
        None => engine.run(windows, Want::Hidden, &[]).await?,
    };
    let cpu = engine.cpu_hidden(&windows[0])?;
    let (a, b) = (&gpu[0].hidden, &cpu);
    let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| (p * q) as f64).sum::<f64>();
    let cosine = dot(a, b) / (dot(a, a) * dot(b, b)).sqrt();
    let max_diff = (a.iter().zip(b))
        .map(|(p, q)| (p - q).abs())
        .fold(0.0f32, f32::max);
    Ok(serde_json::json!({ "cosine": cosine, "max_abs_diff": max_diff, "values": a.len() }))
}

/// Times the encoder (and the head with `head`) on `batch` copies of a text of exactly
/// `seq_len` tokens.
pub async fn run(a: BenchArgs) -> Result<()> {
    let engine = load(&a).await?;
    let want = if a.head { Want::Logits } else { Want::Hidden };
    let words = "the quick brown fox jumps over the lazy dog while a curious cat watches quietly ";
    let mut text = String::new();
    while engine.tokenizer.encode(&text, None)?.len() < a.seq_len {
        text.push_str(words);
    }
    let enc = engine.encode(&text, None, Some(a.seq_len))?;
    let windows = vec![enc; a.batch];
    // The first call builds the shape's buffers (and times its GEMM tilings).
    let t = Instant::now();
    engine.run(&windows, want, &[]).await?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    // Long inputs on an emulated GPU take minutes a forward: say where the run is.
    let progress = |what: String, ms: f64| {
        if ms >= 1000.0 {
            eprintln!("bench: {what}: {ms:.1} ms");
        }
    };
    progress("first call".into(), first_ms);
    for _ in 1..a.warmup {
        engine.run(&windows, want, &[]).await?;
    }
    let mut times = Vec::with_capacity(a.runs);
    let mut last = None;
    for _ in 0..a.runs.max(1) {
        let t = Instant::now();
        last = Some(engine.run(&windows, want, &[]).await?);
        let ms = t.elapsed().as_secs_f64() * 1e3;
        times.push(ms);
        progress(format!("run {} of {}", times.len(), a.runs.max(1)), ms);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let parity = match engine.backend().starts_with("gpu") {
        true => {
            let timed = last.filter(|_| want == Want::Hidden);
            Some(cpu_parity(&engine, &windows, timed).await?)
        }
        false => None,
    };
    if let Some(p) = parity.as_ref().filter(|_| median >= 1000.0) {
        eprintln!("bench: parity with the CPU {p}; now the per-kernel profile (two forwards)");
    }
    let gpu = engine.gpu_profile(&windows, want).await?;
    let cpu_head = match a.head {
        true => Some(engine.cpu_head_ms(&windows, a.runs)?),
        false => None,
    };
    let gpu_total: Option<f64> = gpu.as_ref().map(|k| k.iter().map(|(_, ms)| ms).sum());
    let gemms = engine.gpu_gemm_plans(&windows);
    let (flops, weight_bytes) = work(&engine, a.batch, a.seq_len);
    let per_kernel: Option<serde_json::Value> = gpu.map(|k| {
        k.into_iter()
            .map(|(name, ms)| (name.to_string(), serde_json::json!(ms)))
            .collect()
    });
    let mut label = a.shape.clone().unwrap_or_else(|| a.model.model.clone());
    if let Some(q) = &a.quant {
        label = format!("{label} {q}");
    }
    let weights = engine.gpu_weight_bytes();
    // At a few tokens a CPU forward is mostly one pass over its weights: how near memory speed.
    let on_cpu = engine.backend().starts_with("cpu");
    let cpu_bytes = engine.cpu_weight_bytes() as f64;
    let roofline =
        (on_cpu && a.bandwidth).then(|| engine.cpu_roofline(a.batch, a.seq_len, median, 512 << 20));
    println!(
        "{}",
        serde_json::json!({
            "gpu_ms_by_kernel": per_kernel,
            "gpu_ms": gpu_total,
            "gpu_gemms": gemms,
            "gpu_gemm_timings": engine.gpu_gemm_timings(),
            "cpu_parity": parity,
            "cpu_head_ms": cpu_head,
            "gpu_weight_bytes": weights.map(|w| w.uploaded),
            "gpu_weight_bytes_dequantized": weights.map(|w| w.dequantized),
            "gpu_gemm_weight_bytes": weights.map(|w| w.gemm_uploaded),
            "gpu_gemm_weight_bytes_dequantized": weights.map(|w| w.gemm_dequantized),
            "model": label,
            "backend": engine.backend(),
            "load_times": engine.load_times(),
            "batch": a.batch,
            "seq_len": a.seq_len,
            "peak_rss_mib": peak_rss_kb().map(|kb| kb as f64 / 1024.0),
            "runs": times.len(),
            "first_ms": first_ms,
            "median_ms": median,
            "min_ms": times[0],
            "ms_per_sequence": median / a.batch as f64,
            "encoder_tflop_per_s": flops / (median * 1e9),
            "encoder_weight_gb_per_s": weight_bytes / (median * 1e6),
            "cpu_weight_bytes": on_cpu.then_some(cpu_bytes),
            "cpu_weight_gb_per_s": on_cpu.then(|| cpu_bytes / (median * 1e6)),
            "read_gb_per_s": roofline.map(|r| r.read_gb_per_s),
            "of_read_bandwidth": roofline.map(|r| r.of_read_bandwidth),
            "cpu_peak_gmac_per_s": roofline.and_then(|r| r.peak_gmac_per_s),
            "floor_ms": roofline.and_then(|r| r.floor_ms),
            "of_floor": roofline.and_then(|r| r.of_floor),
            "sequences_per_s": a.batch as f64 * 1e3 / median,
        })
    );
    Ok(())
}
