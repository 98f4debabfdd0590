//! Executes the same plan as the CPU executor with WGSL compute shaders through wgpu: weights
//! uploaded once, one static buffer plan per shape bucket, one command encoder and one
//! `queue.submit` per forward, one readback.

mod bucket;
mod bucket_inputs;
mod buffers;
mod builder;
mod context;
mod gemm_plan;
mod gemm_steps;
mod gemm_trials;
mod kernels;
#[cfg(all(test, not(target_arch = "wasm32")))]
mod math_wgsl_tests;
mod op_steps;
mod packed;
mod params;
mod pipelines;
mod readback;
mod recorder;
mod saved;
mod shader_code;
mod tiling_cache;
mod timing;
mod tune;
mod verify;
mod weights;
mod workgroups;

use crate::error::{Error, GpuErrorKind, Result};
use crate::exec::{Batch, Dims, Output, Want};
use crate::model::{Plan, Tensor};
use bucket::Bucket;
use builder::Builder;
pub use context::{GpuContext, GpuOptions, KernelOptions, TileChoice};
use pipelines::Pipelines;
use std::collections::HashMap;
use std::sync::Arc;
pub use weights::WeightBytes;

#[cfg(any(test, feature = "test-hooks"))]
pub use tiling_cache::forget_for_test as forget_tilings_for_test;

/// Timed GEMM tilings kept between processes: [`export_tilings`] gives every tiling this
/// process timed as JSON to store; [`import_tilings`] reads such a text back before loading,
/// and shapes it covers are then not timed again (where the adapter, kernel choice and
/// shaders are still the same). [`tilings_timed`] counts the tilings timed so far: when it
/// changes, there is something new to store.
pub use saved::import as import_tilings;
pub use tiling_cache::{export as export_tilings, timed_count as tilings_timed};

/// Runs `work` inside validation, internal and out-of-memory error scopes of `device`: its
/// result, and what the device refused, if anything, in one line (wgpu's description runs over
/// several: "Caused by: …").
async fn refused<T>(
    device: &wgpu::Device,
    work: impl std::future::Future<Output = T>,
) -> (T, Option<String>) {
    let out_of_memory = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let invalid = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = work.await;
    let invalid = invalid.pop().await;
    let internal = internal.pop().await;
    let error = invalid.or(internal).or(out_of_memory.pop().await);
    let why = error.map(|e| {
        e.to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    });
    (out, why)
}

/// Longest sequence the wide-head attention shader handles (its workgroup score buffer).
const MAX_SEQ: usize = 512;
/// Widest head the attention shaders handle.
const MAX_HEAD_DIM: usize = 256;
/// Widest head the tiled attention shader handles; wider ones take `attention_wide`.
const TILED_HEAD_DIM: usize = 64;

pub struct GpuExecutor {
    ctx: GpuContext,
    pipelines: Pipelines,
    plan: Arc<Plan>,
    weights: Vec<weights::GpuWeight>,
    weight_bytes: WeightBytes,
    dummy: wgpu::Buffer,
    buckets: HashMap<Dims, Bucket>,
    /// GEMM tilings timed on this device (with `KernelChoice::tune`).
    tuned: HashMap<tune::GemmKey, tune::Tuned>,
    /// Every candidate timed here, a line per shape, for `bench`.
    timings: Vec<String>,
    /// Timing failed once (the device refused something): tilings go by rule from then on.
    tuning_failed: bool,
    /// Cooperative matrices were checked on the device (`verify.rs`).
    coop_checked: bool,
    /// What the coop check meets in their place (tests).
    #[cfg(any(test, feature = "test-hooks"))]
    coop_stand_in: Option<verify::StandIn>,
    /// Timestamps rounded down to multiples of this many ms, as browsers round them (tests).
    #[cfg(any(test, feature = "test-hooks"))]
    timestamp_quantum_ms: Option<f64>,
    /// Timing GEMM tilings records a dispatch the device refuses (tests of the fallback).
    #[cfg(any(test, feature = "test-hooks"))]
    refuse_timing: bool,
    /// Submissions to let through before the device is destroyed with one in flight (tests).
    #[cfg(any(test, feature = "test-hooks"))]
    lose_after: std::sync::atomic::AtomicUsize,
    /// Hidden states come back shifted by one token (tests of wrong answers).
    #[cfg(any(test, feature = "test-hooks"))]
    shift_rows: bool,
}

impl GpuExecutor {
    /// Uploads `weights` (the plan's, by `WeightId`); the caller keeps them, for the CPU.
    pub fn new(ctx: GpuContext, plan: Arc<Plan>, weights: &[Tensor]) -> Result<Self> {
        let cfg = &plan.config;
        if cfg.head_dim() > MAX_HEAD_DIM {
            return Err(Error::gpu(
                GpuErrorKind::Unavailable,
                format!(
                    "head size {} exceeds the attention shader's {MAX_HEAD_DIM}",
                    cfg.head_dim()
                ),
            ));
        }
        let (weights, weight_bytes) = weights::upload(&ctx, &plan, weights)?;
        let dummy = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("unused"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let pipelines = Pipelines::new(&ctx.device, &ctx.choice, ctx.q8_int());
        ctx.check()?;
        // Cooperative matrices the device would not be made with.
        let timings = (ctx.coop_failed.iter())
            .map(|why| format!("cooperative matrices off: {why}"))
            .collect();
        Ok(GpuExecutor {
            ctx,
            pipelines,
            plan,
            weights,
            weight_bytes,
            dummy,
            buckets: HashMap::new(),
            tuned: HashMap::new(),
            timings,
            tuning_failed: false,
            coop_checked: false,
            #[cfg(any(test, feature = "test-hooks"))]
            coop_stand_in: None,
            #[cfg(any(test, feature = "test-hooks"))]
            timestamp_quantum_ms: None,
            #[cfg(any(test, feature = "test-hooks"))]
            refuse_timing: false,
            #[cfg(any(test, feature = "test-hooks"))]
            lose_after: std::sync::atomic::AtomicUsize::new(usize::MAX),
            #[cfg(any(test, feature = "test-hooks"))]
            shift_rows: false,
        })
    }

    /// Bytes of weights on the GPU, and what they would take dequantized.
    pub fn weight_bytes(&self) -> WeightBytes {
        self.weight_bytes
    }

    /// Destroys the device, as a driver reset would; later calls fail and the engine falls back.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn destroy_device(&self) {
        self.ctx.device.destroy();
    }

    /// Destroys the device right after the submission that follows `after` more, while its
    /// work is in flight: a device lost in the middle of a forward.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn destroy_device_during_submission(&self, after: usize) {
        self.lose_after
            .store(after, std::sync::atomic::Ordering::Relaxed);
    }

    /// Makes hidden states come back shifted by one token, as a miscompiled shader's might.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn shift_rows_for_test(&mut self) {
        self.shift_rows = true;
    }

    #[cfg(any(test, feature = "test-hooks"))]
    fn count_submission(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        match self.lose_after.load(Relaxed) {
            usize::MAX => {}
            0 => {
                self.lose_after.store(usize::MAX, Relaxed);
                self.ctx.device.destroy();
            }
            n => self.lose_after.store(n - 1, Relaxed),
        }
    }

    pub fn adapter_name(&self) -> String {
        self.ctx.name()
    }

    /// What builds a bucket's dispatches from this executor's device, plan and weights.
    fn builder(&self) -> Builder<'_> {
        Builder {
            device: &self.ctx.device,
            queue: &self.ctx.queue,
            pipelines: &self.pipelines,
            plan: &self.plan,
            weights: &self.weights,
            dummy: &self.dummy,
            choice: &self.ctx.choice,
            tuned: &self.tuned,
        }
    }

    /// Each distinct GEMM of a forward of `dims` with its tiling and how often it runs, e.g.
    /// `128x2304x768: gemm_f16 16x64 split-k 4 (x6)`, and for a timed tiling its time and the
    /// rule's (`…, timed 0.0210 ms, rule 0.0300 ms`).
    pub fn gemm_plans(&self, dims: Dims) -> Vec<String> {
        let mut seen: Vec<(gemm_steps::GemmShape, usize)> = Vec::new();
        for g in self.builder().gemms(dims) {
            let same =
                |s: &gemm_steps::GemmShape| (s.m, s.n, s.k, s.plan) == (g.m, g.n, g.k, g.plan);
            match seen.iter_mut().find(|(s, _)| same(s)) {
                Some((_, n)) => *n += 1,
                None => seen.push((g, 1)),
            }
        }
        (seen.iter())
            .map(|(g, n)| {
                let timed = self
                    .tuned
                    .get(&g.key())
                    .map(|t| format!(", {}", t.describe()));
                let (m, plan) = (g.m, g.plan.describe());
                format!(
                    "{m}x{}x{}: {plan} (x{n}){}",
                    g.n,
                    g.k,
                    timed.unwrap_or_default()
                )
            })
            .collect()
    }

    /// Each GEMM shape timed by this executor: every candidate tiling and its GPU ms, the
    /// rule's first.
    pub fn gemm_timings(&self) -> Vec<String> {
        self.timings.clone()
    }

    /// Whether a batch of `dims` can run here: an `UnsupportedShape` error says why not, and
    /// leaves the device usable for other calls.
    pub fn supports(&self, dims: Dims) -> Result<()> {
        // Only the wide-head shader keeps a row of scores; the tiled ones stream the keys.
        let head_dim = self.plan.config.head_dim();
        if head_dim > TILED_HEAD_DIM && dims.seq_len > MAX_SEQ {
            return Err(Error::gpu(
                GpuErrorKind::UnsupportedShape,
                format!(
                    "sequence of {} tokens exceeds the {MAX_SEQ} of the attention shader for heads of {head_dim}",
                    dims.seq_len
                ),
            ));
        }
        let one = Dims { batch: 1, ..dims };
        let max = self.ctx.max_binding() as usize;
        let too_big = |s: &&crate::model::BufferSpec| one.rows(s.rows) * s.cols * 4 > max;
        if let Some(spec) = self.plan.buffers.iter().find(too_big) {
            return Err(Error::gpu(
                GpuErrorKind::UnsupportedShape,
                format!(
                    "the `{}` activations of one sequence of {} tokens exceed the adapter's storage binding limit of {max} bytes",
                    spec.name, dims.seq_len
                ),
            ));
        }
        Ok(())
    }

    /// GPU time per kernel family (ms, from timestamp queries) for one forward of `batch`,
    /// each dispatch in a pass of its own, the task head's as `head`; `None` when the adapter
    /// has no timestamps.
    pub async fn profile(
        &mut self,
        batch: &Batch,
        want: Want,
    ) -> Result<Option<Vec<(&'static str, f64)>>> {
        if !self.ctx.has_timestamps() {
            return Ok(None);
        }
        self.forward(batch, want).await?;
        let Some(bucket) = self.buckets.get(&batch.dims()) else {
            return Ok(None); // the batch ran in parts: no bucket holds it whole
        };
        let steps = bucket.steps(want);
        let passes: Vec<Vec<&recorder::Step>> = steps.iter().map(|s| vec![*s]).collect();
        let times = self.time_passes(&passes).await?;
        let mut totals: Vec<(&'static str, f64)> = Vec::new();
        for (i, (s, &ms)) in steps.iter().zip(&times).enumerate() {
            let name = if i < bucket.encoder_steps {
                s.kernel.name()
            } else {
                "head"
            };
            match totals.iter_mut().find(|(k, _)| *k == name) {
                Some(e) => e.1 += ms,
                None => totals.push((name, ms)),
            }
        }
        Ok(Some(totals))
    }

    /// One forward, in as many submissions as it takes to keep every activation buffer
    /// within the binding limit (sequences are independent, so the batch is split).
    pub async fn forward(&mut self, batch: &Batch, want: Want) -> Result<Output> {
        batch.check(&self.plan.config)?;
        self.supports(batch.dims())?;
        let b = batch.batch_size();
        let limit = self.ctx.max_binding() as usize;
        let fits = |n: usize| {
            let dims = Dims {
                batch: n,
                ..batch.dims()
            };
            (self.plan.buffers.iter()).all(|s| dims.rows(s.rows) * s.cols * 4 <= limit)
        };
        let per = (1..=b).rev().find(|&n| fits(n)).unwrap_or(1);
        if per >= b {
            return self.forward_one(batch, want).await;
        }
        let mut out = Output::default();
        for s0 in (0..b).step_by(per) {
            let part = self
                .forward_one(&batch.slice(s0..b.min(s0 + per)), want)
                .await?;
            if let Some(h) = part.hidden {
                out.hidden.get_or_insert_with(Vec::new).extend(h);
            }
            if let Some(l) = part.logits {
                out.logits.get_or_insert_with(Vec::new).extend(l);
            }
        }
        Ok(out)
    }

    async fn forward_one(&mut self, batch: &Batch, want: Want) -> Result<Output> {
        self.ctx.check()?;
        let dims = batch.dims();
        if !self.buckets.contains_key(&dims) {
            self.check_coop(dims).await?;
            if self.ctx.choice.tune {
                self.tune(dims).await?;
            }
            let bucket = self.builder().build(dims)?;
            self.buckets.insert(dims, bucket);
        }
        let bucket = &self.buckets[&dims];
        bucket.inputs.write(&self.ctx.queue, batch);
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forward"),
            });
        self.encode(&mut enc, &bucket.steps(want))?;
        let mut reads = Vec::new();
        let hidden = want.hidden().then(|| {
            let bytes = dims.rows(crate::model::Rows::Tokens) * self.plan.config.hidden_size * 4;
            let src = &bucket.acts[self.plan.hidden.0];
            enc.copy_buffer_to_buffer(src, 0, &bucket.staging_hidden, 0, bytes as u64);
            reads.push((&bucket.staging_hidden, bytes));
        });
        let head = want
            .head_index()
            .and_then(|i| Some((self.plan.head(i)?, i)));
        let logits = match head.and_then(|(h, i)| Some((h.logits, bucket.staging_logits.get(i)?))) {
            Some((id, staging)) => {
                let spec = &self.plan.buffers[id.0];
                let bytes = dims.rows(spec.rows) * spec.cols * 4;
                if bytes > 0 {
                    enc.copy_buffer_to_buffer(&bucket.acts[id.0], 0, staging, 0, bytes as u64);
                }
                reads.push((staging, bytes));
                Some(())
            }
            _ => None,
        };
        let mut read = self.submit_and_read(enc, &reads).await?.into_iter();
        let mut next = || read.next().map(|b| readback::f32s(&b));
        #[allow(unused_mut)]
        let mut hidden = hidden.and_then(|()| next());
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some(h) = hidden.as_mut().filter(|_| self.shift_rows) {
            h.rotate_left(self.plan.config.hidden_size);
        }
        Ok(Output {
            hidden,
            logits: logits.and_then(|()| next()),
        })
    }

    /// Records `steps` into `enc` in one compute pass.
    fn encode(&self, enc: &mut wgpu::CommandEncoder, steps: &[&recorder::Step]) -> Result<()> {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("forward"),
            timestamp_writes: None,
        });
        steps.iter().try_for_each(|s| self.dispatch(&mut pass, s))
    }

    fn dispatch(&self, pass: &mut wgpu::ComputePass, s: &recorder::Step) -> Result<()> {
        pass.set_pipeline(self.pipelines.get(s.kernel)?);
        pass.set_bind_group(0, &s.bind_group, &[]);
        pass.dispatch_workgroups(s.groups[0], s.groups[1], s.groups[2]);
        Ok(())
    }

    /// Submits `enc`, waits for it, and reads the first `bytes` of each staging buffer back.
    async fn submit_and_read(
        &self,
        enc: wgpu::CommandEncoder,
        reads: &[(&wgpu::Buffer, usize)],
    ) -> Result<Vec<Vec<u8>>> {
        self.ctx.queue.submit([enc.finish()]);
        #[cfg(any(test, feature = "test-hooks"))]
        self.count_submission();
        let maps: Vec<_> = reads.iter().map(|(b, _)| readback::map_read(b)).collect();
        #[cfg(not(target_arch = "wasm32"))]
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| {
                Error::gpu(
                    GpuErrorKind::DeviceLost,
                    format!("waiting for the GPU: {e}"),
                )
            })?;
        for map in maps {
            let mapped = map.await;
            self.ctx.check()?;
            mapped.map_err(|e| {
                Error::gpu(GpuErrorKind::Internal, format!("reading results back: {e}"))
            })?;
        }
        self.ctx.check()?;
        reads
            .iter()
            .map(|(b, bytes)| readback::read_bytes(b, *bytes))
            .collect()
    }
}
