//! A subcommand's engine, loaded with options from `--backend` and the `WEBERT_*` variables.

use super::args::Common;
use webert::engine::{Device, Engine, GpuOptions, LoadOptions};
use webert::{Error, Result};

/// Load options from a backend and the `WEBERT_*` variables (a malformed value is an error).
pub fn options(device: Device) -> Result<LoadOptions> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (f16, f16_compute) = match var("WEBERT_GPU_F16").as_deref() {
        None => (None, None),
        Some("0" | "off") => (Some(false), Some(false)),
        Some("1" | "storage") => (Some(true), Some(false)),
        Some("compute") => (Some(true), Some(true)),
        Some(o) => {
            return Err(Error::Input(format!(
            "WEBERT_GPU_F16={o}: use off (f32), storage (f16 weights) or compute (f16 arithmetic)"
        )))
        }
    };
    let switch = |name: &str| match var(name).as_deref() {
        None => Ok(None),
        Some("0") => Ok(Some(false)),
        Some("1") => Ok(Some(true)),
        Some(o) => Err(Error::Input(format!("{name}={o}: use 0 or 1"))),
    };
    // Process-wide, as the thread count is.
    webert::cpu::gemm::set_prefetch(switch("WEBERT_PREFETCH")?);
    let tile = match var("WEBERT_GPU_TILE").as_deref() {
        None | Some("auto") => None,
        Some(t) => Some(
            t.parse()
                .map_err(|e| Error::Input(format!("WEBERT_GPU_TILE: {e}")))?,
        ),
    };
    let kernels = webert::engine::KernelOptions {
        subgroups: switch("WEBERT_GPU_SUBGROUPS")?,
        f16_compute,
        coop: switch("WEBERT_GPU_COOP")?,
        tile,
        lanes: switch("WEBERT_GPU_LANES")?,
        tune: switch("WEBERT_GPU_TUNE")?,
    };
    let max_binding = match var("WEBERT_GPU_MAX_BINDING") {
        None => None,
        Some(v) => Some(v.parse().map_err(|_| {
            Error::Input(format!(
                "WEBERT_GPU_MAX_BINDING={v}: expected a number of bytes"
            ))
        })?),
    };
    let dequantize = match var("WEBERT_GPU_WEIGHTS").as_deref() {
        None => None,
        Some("packed") => Some(false),
        Some("dequant") => Some(true),
        Some(o) => {
            return Err(Error::Input(format!(
                "WEBERT_GPU_WEIGHTS={o}: use packed or dequant"
            )))
        }
    };
    let q8_int = match var("WEBERT_GPU_Q8").as_deref() {
        None => None,
        Some("int") => Some(true),
        Some("float") => Some(false),
        Some(o) => return Err(Error::Input(format!("WEBERT_GPU_Q8={o}: use int or float"))),
    };
    let quantized = match var("WEBERT_QUANTIZED").as_deref() {
        None | Some("int") => webert::engine::Quantized::Int,
        Some("f32") => webert::engine::Quantized::F32,
        Some(o) => {
            return Err(Error::Input(format!(
                "WEBERT_QUANTIZED={o}: use int or f32"
            )))
        }
    };
    let memory_budget = match var("WEBERT_MEMORY_BUDGET") {
        None => None,
        Some(v) => Some(webert::byte_sizes::parse(&v).ok_or_else(|| {
            Error::Input(format!(
                "WEBERT_MEMORY_BUDGET={v}: expected bytes, e.g. 4G or 512M"
            ))
        })?),
    };
    Ok(LoadOptions {
        device,
        gpu: GpuOptions {
            max_binding,
            f16,
            kernels,
            dequantize,
            q8_int,
        },
        isa: var("WEBERT_ISA"),
        quantized,
        memory_budget,
        ..Default::default()
    })
}

/// The engine of a subcommand's `--model` on its `--backend`.
pub async fn load(c: &Common) -> Result<Engine> {
    Engine::load(c.model.files()?, options(c.backend)?).await
}
