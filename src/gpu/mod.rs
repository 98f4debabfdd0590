//! Executes the same plan as the CPU executor with WGSL compute shaders through wgpu: weights
//! uploaded once, one static buffer plan per shape bucket, one command encoder and one
//! `queue.submit` per forward, one readback.

mod bucket;
mod context;
mod pipelines;
mod readback;
mod weights;

use crate::cpu::{Batch, Output};
use crate::error::{Error, Result};
use crate::model::{BufferSpec, Plan};
use bucket::{Bucket, Builder, Shape};
pub use context::{GpuContext, GpuOptions};
use pipelines::Pipelines;
use std::collections::HashMap;

/// Longest sequence the attention shader handles (its workgroup score buffer).
const MAX_SEQ: usize = 512;
const MAX_HEAD_DIM: usize = 256;

pub struct GpuExecutor {
    ctx: GpuContext,
    pipelines: Pipelines,
    plan: Plan,
    weights: Vec<weights::GpuWeight>,
    dummy: wgpu::Buffer,
    buckets: HashMap<Shape, Bucket>,
}

impl GpuExecutor {
    /// Uploads the plan's weights. The plan's tensors are kept (the CPU executor needs them as
    /// the fallback); pass a clone of the plan metadata with the weights when both run.
    pub fn new(ctx: GpuContext, plan: &Plan) -> Result<Self> {
        let cfg = &plan.config;
        if cfg.head_dim() > MAX_HEAD_DIM {
            return Err(Error::Gpu(format!(
                "head size {} exceeds the attention shader's {MAX_HEAD_DIM}",
                cfg.head_dim()
            )));
        }
        let weights = weights::upload(&ctx, plan)?;
        let dummy = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("unused"),
            size: 16,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        });
        let pipelines = Pipelines::new(&ctx.device, ctx.f16());
        let meta = Plan {
            config: plan.config.clone(),
            weights: Vec::new(),
            weight_names: plan.weight_names.clone(),
            buffers: plan.buffers.clone(),
            ops: plan.ops.clone(),
            encoder_ops: plan.encoder_ops,
            hidden: plan.hidden,
            logits: plan.logits,
        };
        ctx.check()?;
        Ok(GpuExecutor {
            ctx,
            pipelines,
            plan: meta,
            weights,
            dummy,
            buckets: HashMap::new(),
        })
    }

    /// Destroys the device, as a driver reset would; later calls fail and the engine falls back.
    pub fn destroy_device(&self) {
        self.ctx.device.destroy();
    }

    pub fn adapter_name(&self) -> String {
        self.ctx.name()
    }

    /// GPU time per kernel family (ms, from timestamp queries) for one forward of `batch`,
    /// each dispatch in a pass of its own, the task head's as `head`; `None` when the adapter
    /// has no timestamps.
    pub async fn profile(
        &mut self,
        batch: &Batch,
        head: bool,
    ) -> Result<Option<Vec<(&'static str, f64)>>> {
        if !self.ctx.has_timestamps() {
            return Ok(None);
        }
        self.forward_one(batch, head).await?;
        let shape = Shape {
            batch: batch.batch_size(),
            seq_len: batch.seq_len,
            picked: batch.picked.len(),
        };
        let bucket = &self.buckets[&shape];
        let steps = if head {
            &bucket.steps[..]
        } else {
            &bucket.steps[..bucket.encoder_steps]
        };
        let n = (2 * steps.len()) as u32;
        let d = &self.ctx.device;
        let set = d.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("profile"),
            ty: wgpu::QueryType::Timestamp,
            count: n,
        });
        let resolve = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("timestamps"),
            size: n as u64 * 8,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = bucket::staging(d, n as usize * 8);
        let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("profile"),
        });
        for (i, s) in steps.iter().enumerate() {
            let writes = wgpu::ComputePassTimestampWrites {
                query_set: &set,
                beginning_of_pass_write_index: Some(2 * i as u32),
                end_of_pass_write_index: Some(2 * i as u32 + 1),
            };
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: None,
                timestamp_writes: Some(writes),
            });
            pass.set_pipeline(self.pipelines.get(s.kernel));
            pass.set_bind_group(0, &s.bind_group, &[]);
            pass.dispatch_workgroups(s.groups[0], s.groups[1], s.groups[2]);
        }
        enc.resolve_query_set(&set, 0..n, &resolve, 0);
        enc.copy_buffer_to_buffer(&resolve, 0, &staging, 0, n as u64 * 8);
        self.ctx.queue.submit([enc.finish()]);
        let map = readback::map_read(&staging);
        #[cfg(not(target_arch = "wasm32"))]
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Gpu(format!("waiting for the GPU: {e}")))?;
        map.await
            .map_err(|e| Error::Gpu(format!("reading timestamps: {e}")))?;
        let ticks: Vec<u64> = match staging.get_mapped_range(..) {
            Ok(v) => v
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect(),
            Err(_) => Vec::new(),
        };
        staging.unmap();
        let period_ms = self.ctx.queue.get_timestamp_period() as f64 * 1e-6;
        let mut totals: Vec<(&'static str, f64)> = Vec::new();
        for (i, (s, t)) in steps.iter().zip(ticks.chunks_exact(2)).enumerate() {
            let ms = t[1].saturating_sub(t[0]) as f64 * period_ms;
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
    pub async fn forward(&mut self, batch: &Batch, head: bool) -> Result<Output> {
        let b = batch.batch_size();
        let limit = self.ctx.max_binding() as usize;
        let fits = |n: usize| {
            let shape = Shape {
                batch: n,
                seq_len: batch.seq_len,
                picked: batch.picked.len(),
            };
            (self.plan.buffers.iter()).all(|s| shape.rows(s.rows) * s.cols * 4 <= limit)
        };
        let per = (1..=b).rev().find(|&n| fits(n)).unwrap_or(b).max(1);
        if per >= b {
            return self.forward_one(batch, head).await;
        }
        let mut out = Output {
            hidden: Vec::new(),
            logits: None,
        };
        for s0 in (0..b).step_by(per) {
            let part = self
                .forward_one(&batch.slice(s0..b.min(s0 + per)), head)
                .await?;
            out.hidden.extend(part.hidden);
            if let Some(l) = part.logits {
                out.logits.get_or_insert_with(Vec::new).extend(l);
            }
        }
        Ok(out)
    }

    async fn forward_one(&mut self, batch: &Batch, head: bool) -> Result<Output> {
        self.ctx.check()?;
        let (b, l) = (batch.batch_size(), batch.seq_len);
        if l > MAX_SEQ {
            return Err(Error::Gpu(format!(
                "sequence of {l} tokens exceeds the attention shader's {MAX_SEQ}"
            )));
        }
        let shape = Shape {
            batch: b,
            seq_len: l,
            picked: batch.picked.len(),
        };
        if !self.buckets.contains_key(&shape) {
            let max = self.ctx.max_binding() as usize;
            let too_big = |s: &&BufferSpec| shape.rows(s.rows) * s.cols * 4 > max;
            if let Some(spec) = self.plan.buffers.iter().find(too_big) {
                return Err(Error::Gpu(format!(
                    "the `{}` activations of {b} x {l} tokens exceed the adapter's storage binding limit of {max} bytes",
                    spec.name
                )));
            }
            let builder = Builder {
                device: &self.ctx.device,
                queue: &self.ctx.queue,
                pipelines: &self.pipelines,
                plan: &self.plan,
                weights: &self.weights,
                dummy: &self.dummy,
            };
            let bucket = builder.build(shape);
            self.buckets.insert(shape, bucket);
        }
        let bucket = &self.buckets[&shape];
        let q = &self.ctx.queue;
        let words = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        q.write_buffer(&bucket.ids, 0, &words(&batch.ids));
        q.write_buffer(&bucket.type_ids, 0, &words(&batch.type_ids));
        q.write_buffer(
            &bucket.lens,
            0,
            &words(&batch.lens.iter().map(|&x| x as u32).collect::<Vec<_>>()),
        );
        if !batch.picked.is_empty() {
            q.write_buffer(
                &bucket.picked,
                0,
                &words(&batch.picked.iter().map(|&x| x as u32).collect::<Vec<_>>()),
            );
        }
        let steps = if head {
            &bucket.steps[..]
        } else {
            &bucket.steps[..bucket.encoder_steps]
        };
        let mut enc = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("forward"),
            });
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("forward"),
                timestamp_writes: None,
            });
            for s in steps {
                pass.set_pipeline(self.pipelines.get(s.kernel));
                pass.set_bind_group(0, &s.bind_group, &[]);
                pass.dispatch_workgroups(s.groups[0], s.groups[1], s.groups[2]);
            }
        }
        let hidden_floats = b * l * self.plan.config.hidden_size;
        enc.copy_buffer_to_buffer(
            &bucket.acts[self.plan.hidden.0],
            0,
            &bucket.staging_hidden,
            0,
            (hidden_floats * 4) as u64,
        );
        let logits = match (head, self.plan.logits, &bucket.staging_logits) {
            (true, Some(id), Some(staging)) => {
                let spec = &self.plan.buffers[id.0];
                let floats = shape.rows(spec.rows) * spec.cols;
                if floats > 0 {
                    enc.copy_buffer_to_buffer(
                        &bucket.acts[id.0],
                        0,
                        staging,
                        0,
                        (floats * 4) as u64,
                    );
                }
                Some((staging, floats))
            }
            _ => None,
        };
        q.submit([enc.finish()]);
        let hidden_map = readback::map_read(&bucket.staging_hidden);
        let logits_map = logits.map(|(s, _)| readback::map_read(s));
        #[cfg(not(target_arch = "wasm32"))]
        self.ctx
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Gpu(format!("waiting for the GPU: {e}")))?;
        hidden_map
            .await
            .map_err(|e| Error::Gpu(format!("reading results back: {e}")))?;
        if let Some(m) = logits_map {
            m.await
                .map_err(|e| Error::Gpu(format!("reading results back: {e}")))?;
        }
        self.ctx.check()?;
        let hidden = readback::read_f32(&bucket.staging_hidden, hidden_floats);
        let logits = logits.map(|(s, floats)| readback::read_f32(s, floats));
        if hidden.len() != hidden_floats {
            return Err(Error::Gpu("could not read the hidden states back".into()));
        }
        Ok(Output { hidden, logits })
    }
}
