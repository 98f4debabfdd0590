//! Timing on the device: passes between timestamp queries (`bench`'s per-kernel profile), and
//! the GEMM tilings of `tune.rs` timed on first use of each shape.

use super::gemm_plan::GemmPlan;
use super::gemm_steps::GemmShape;
use super::recorder::Step;
use super::tiling_cache;
use super::tune::{self, GemmKey};
use super::GpuExecutor;
use crate::error::Result;

/// Most passes timed in one submission: two queries each, and a query set holds 4096.
const MAX_TIMED: usize = 2048;
/// Repetitions of one candidate in its pass at most, where timestamps are coarse.
const MAX_REPS: usize = 512;
/// A candidate tiling, its GPU ms per GEMM, and how many GEMMs its pass ran.
type Timed = (GemmPlan, f64, usize);

/// Where timestamps are rounded (browsers), a candidate's pass repeats its dispatches until it
/// lasts this many rounding steps, so the rounding costs it at most 1/20 of its time.
const STEPS_PER_PASS: f64 = 20.0;

impl GpuExecutor {
    /// GPU ms of each of `passes`, each a compute pass of its own between two timestamps.
    pub(super) async fn time_passes(&self, passes: &[Vec<&Step>]) -> Result<Vec<f64>> {
        let d = &self.ctx.device;
        let period_ms = self.ctx.queue.get_timestamp_period() as f64 * 1e-6;
        let mut out = Vec::with_capacity(passes.len());
        for part in passes.chunks(MAX_TIMED) {
            let n = (2 * part.len()) as u32;
            let set = d.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: n,
            });
            let resolve = d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("timestamps"),
                size: n as u64 * 8,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let staging = super::buffers::staging(d, n as usize * 8);
            let mut enc = d.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("timed"),
            });
            for (i, steps) in part.iter().enumerate() {
                let writes = wgpu::ComputePassTimestampWrites {
                    query_set: &set,
                    beginning_of_pass_write_index: Some(2 * i as u32),
                    end_of_pass_write_index: Some(2 * i as u32 + 1),
                };
                let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: Some(writes),
                });
                steps.iter().try_for_each(|s| self.dispatch(&mut pass, s))?;
                #[cfg(any(test, feature = "test-hooks"))]
                if self.refuse_timing {
                    if let Some(s) = steps.first() {
                        let too_many = d.limits().max_compute_workgroups_per_dimension + 1;
                        pass.set_pipeline(self.pipelines.get(s.kernel)?);
                        pass.set_bind_group(0, &s.bind_group, &[]);
                        pass.dispatch_workgroups(too_many, 1, 1);
                    }
                }
            }
            enc.resolve_query_set(&set, 0..n, &resolve, 0);
            enc.copy_buffer_to_buffer(&resolve, 0, &staging, 0, n as u64 * 8);
            let mut read = self
                .submit_and_read(enc, &[(&staging, n as usize * 8)])
                .await?;
            let ticks = (read.remove(0).chunks_exact(8))
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                .collect::<Vec<_>>();
            out.extend(ticks.chunks_exact(2).map(|t| {
                let ms = t[1].saturating_sub(t[0]) as f64 * period_ms;
                // Tests round native timestamps as a browser does.
                #[cfg(any(test, feature = "test-hooks"))]
                if let Some(q) = self.timestamp_quantum_ms {
                    return (ms / q).floor() * q;
                }
                ms
            }));
        }
        Ok(out)
    }

    /// The resolution of timestamps: exact natively; browsers round them to 100 µs (Chromium,
    /// against timing attacks).
    fn timestamp_quantum_ms(&self) -> f64 {
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some(q) = self.timestamp_quantum_ms {
            return q;
        }
        if cfg!(target_arch = "wasm32") {
            0.1
        } else {
            0.0
        }
    }

    /// Rounds timestamps down to multiples of `ms`, as browsers do: timing then repeats each
    /// candidate as it must in a browser.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn round_timestamps_for_test(&mut self, ms: f64) {
        self.timestamp_quantum_ms = Some(ms);
    }

    /// Makes the device refuse the next timing of GEMM tilings (a dispatch over its limits).
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn refuse_timing_for_test(&mut self) {
        self.refuse_timing = true;
    }

    /// Times the candidate tilings of the GEMMs of a forward of `dims` whose shapes have none
    /// yet (`tune.rs`) and keeps the fastest. Should the device refuse any of it, tilings go
    /// by rule from then on and the forward goes on.
    pub(super) async fn tune(&mut self, dims: crate::exec::Dims) -> Result<()> {
        if self.tuning_failed {
            return Ok(());
        }
        let adapter = self.ctx.identity();
        let choice = self.ctx.choice;
        // Each shape not timed yet, with every GEMM of the forward that has it.
        let mut todo: Vec<Vec<GemmShape>> = Vec::new();
        for g in self.builder().gemms(dims) {
            let key = g.key();
            if self.tuned.contains_key(&key) {
                continue;
            }
            if let Some(same) = todo.iter_mut().find(|t| t[0].key() == key) {
                same.push(g);
                continue;
            }
            match tiling_cache::cached(&adapter, &choice, key) {
                Some(t) => _ = self.tuned.insert(key, t),
                None => todo.push(vec![g]),
            }
        }
        if todo.is_empty() {
            return Ok(());
        }
        let device = self.ctx.device.clone();
        let (timed, refused) = super::refused(&device, self.time_tilings(&todo)).await;
        if let Some(why) = refused {
            self.tuning_failed = true;
            let line = format!("timing GEMM tilings failed, tilings by rule from now: {why}");
            self.timings.push(line);
            return Ok(());
        }
        for (key, timed) in timed? {
            let line = (timed.iter()).map(|(p, ms, n)| format!("{} {ms:.4} ms x{n}", p.describe()));
            let (m, n, k, w) = (key.m, key.n, key.k, key.weights);
            let line = format!("{m}x{n}x{k} {w:?}: {}", line.collect::<Vec<_>>().join(", "));
            self.timings.push(line);
            let timed: Vec<(GemmPlan, f64)> = timed.iter().map(|t| (t.0, t.1)).collect();
            if let Some(t) = tune::pick(&timed) {
                self.tuned.insert(key, t);
                tiling_cache::remember(&adapter, &choice, key, t);
            }
        }
        Ok(())
    }

    /// Each shape of `todo` with its candidate tilings' GPU ms per GEMM, the rule's first: a
    /// warm-up round, then the faster of two. A candidate's pass runs it once on each of its
    /// shape's weights in turn (cold, as in a forward); where timestamps are rounded, each
    /// shape's candidates first get a repetition count (cycling through the weights) that makes
    /// the rule's pass last `STEPS_PER_PASS` rounding steps.
    async fn time_tilings(&self, todo: &[Vec<GemmShape>]) -> Result<Vec<(GemmKey, Vec<Timed>)>> {
        let max = self.ctx.max_binding() as usize;
        let timing = self.builder().timing_steps(todo, max)?;
        let owners = &timing.owners;
        let passes = |reps: &[usize], which: &dyn Fn(usize) -> bool| -> Vec<Vec<&Step>> {
            (owners.iter().enumerate())
                .filter(|(i, _)| which(*i))
                .map(|(i, (_, _, sources))| {
                    let runs =
                        (0..reps[i]).map(|j| &timing.steps[sources[j % sources.len()].clone()]);
                    runs.flatten().collect()
                })
                .collect()
        };
        // The rule's tiling comes first among each shape's candidates.
        let rules: Vec<usize> = (0..owners.len())
            .filter(|&i| i == 0 || owners[i - 1].0 != owners[i].0)
            .collect();
        let mut reps: Vec<usize> = owners.iter().map(|o| o.2.len()).collect();
        // The first use of each pipeline and buffer is slow: a warm-up round, not timed.
        self.time_passes(&passes(&reps, &|_| true)).await?;
        let quantum = self.timestamp_quantum_ms();
        if quantum > 0.0 {
            let target = STEPS_PER_PASS * quantum;
            let rule = |i: usize| rules.contains(&i);
            let mut rule_ms = self.time_passes(&passes(&reps, &rule)).await?;
            for _ in 0..3 {
                let mut again = false;
                for (&r, &ms) in rules.iter().zip(&rule_ms) {
                    if ms >= target || reps[r] >= MAX_REPS {
                        continue;
                    }
                    let per_run = ms.max(quantum) / reps[r] as f64;
                    // A quarter more than the estimate, against the next round's noise.
                    let n =
                        ((1.25 * target / per_run).ceil() as usize).clamp(reps[r] + 1, MAX_REPS);
                    for (i, o) in owners.iter().enumerate() {
                        if o.0 == owners[r].0 {
                            reps[i] = n;
                        }
                    }
                    again = true;
                }
                if !again {
                    break;
                }
                rule_ms = self
                    .time_passes(&passes(&reps, &|i| rules.contains(&i)))
                    .await?;
            }
        }
        let mut best = vec![f64::INFINITY; owners.len()];
        for _ in 0..2 {
            let ms = self.time_passes(&passes(&reps, &|_| true)).await?;
            for ((b, ms), n) in best.iter_mut().zip(ms).zip(&reps) {
                *b = b.min(ms / *n as f64);
            }
        }
        let mut out: Vec<(GemmKey, Vec<Timed>)> = Vec::new();
        for (((key, plan, _), ms), reps) in owners.iter().zip(best).zip(reps) {
            let t = (*plan, ms, reps);
            match out.last_mut() {
                Some((k, v)) if k == key => v.push(t),
                _ => out.push((*key, vec![t])),
            }
        }
        Ok(out)
    }
}
