//! GEMM dispatches outside a forward, on operands of their own: every candidate tiling of
//! each shape, for timing (`tune.rs`, `timing.rs`), and given tilings on the model's weights,
//! for checks that compare kernels (`verify.rs`).

use super::buffers::storage;
use super::builder::Builder;
use super::gemm_plan::GemmPlan;
use super::gemm_steps::{gemm_params, GemmBuffers, GemmShape};
use super::recorder::{Recorder, Step};
use super::tune::{self, GemmKey};
use super::weights::GemmWeights;
use crate::error::Result;
use crate::model::Activation;

/// The candidate tilings' dispatches of the GEMMs being tuned: each (shape, tiling) owns a
/// range of `steps` per weight of that shape, the tiling's GEMM and, when split, its reduce
/// pass.
pub struct TimingSteps {
    pub steps: Vec<Step>,
    pub owners: Vec<(GemmKey, GemmPlan, Vec<std::ops::Range<usize>>)>,
}

impl Builder<'_> {
    /// The dispatches that time every candidate tiling of each shape of `shapes` (`tune.rs`):
    /// each shape is given as all the GEMMs of a forward that have it, and each candidate gets
    /// one dispatch (two, split) per GEMM's weights (up to `MAX_SOURCES`), so that timing can
    /// cycle through weights the cache has not just read, as a forward does. Activations are
    /// zeros of the shape's own. Shapes whose operands, or whose rule's split sums, would not
    /// fit `max_binding` bytes are left out.
    pub fn timing_steps(
        &self,
        shapes: &[Vec<GemmShape>],
        max_binding: usize,
    ) -> Result<TimingSteps> {
        const MAX_SOURCES: usize = 16;
        let d = self.device;
        let fits = |bytes: usize| bytes <= max_binding;
        let mut todo = Vec::new();
        for gemms in shapes {
            let Some(key) = gemms.first().map(GemmShape::key) else {
                continue;
            };
            let (m, n, k) = (key.m, key.n, key.k);
            let mut plans = tune::candidates(self.choice, key);
            let rule = plans[0];
            plans.retain(|p| p.split_k == 1 || fits(p.split_k as usize * m * n * 4));
            // The rule's tiling must stay first: the others are measured against it.
            if plans.first() == Some(&rule) && fits(m * k * 4) && fits(m * n * 4) {
                todo.push((&gemms[..gemms.len().min(MAX_SOURCES)], key, plans));
            }
        }
        let scratch = (todo.iter().flat_map(|(_, key, plans)| {
            (plans.iter())
                .filter(|p| p.split_k > 1)
                .map(|p| p.split_k as usize * key.m * key.n * 4)
        }))
        .max();
        let mut rec = Recorder {
            bytes: Vec::new(),
            align: d.limits().min_uniform_buffer_offset_alignment.max(16) as usize,
            steps: Vec::new(),
            scratch: scratch.map(|b| storage(d, "split_k", b)),
        };
        let mut owners = Vec::new();
        for (gemms, key, plans) in todo {
            let (m, n, k) = (key.m, key.n, key.k);
            let x = storage(d, "tune_x", m * k * 4);
            let out = storage(d, "tune_out", m * n * 4);
            let meta = (key.weights == GemmWeights::Q8Int).then(|| storage(d, "tune_meta", m * 16));
            for plan in plans {
                let mut ranges = Vec::with_capacity(gemms.len());
                for g in gemms {
                    let weight = &self.weights[g.linear.weight.0];
                    let c = &weight.chunks[g.chunk];
                    let mut params =
                        gemm_params(m, c, &g.linear, Activation::None, false, weight.block);
                    (params.has_bias, params.ldo, params.col_off) = (0, n as u32, 0);
                    let mut extra: Vec<&wgpu::Buffer> = c.aux.iter().collect();
                    extra.extend(meta.as_ref());
                    let buffers = GemmBuffers {
                        x: &x,
                        w: &c.buffer,
                        bias: self.dummy,
                        residual: self.dummy,
                        out: &out,
                        extra,
                    };
                    let start = rec.steps.len();
                    self.push_gemm(&mut rec, plan, params, buffers);
                    ranges.push(start..rec.steps.len());
                }
                owners.push((key, plan, ranges));
            }
        }
        Ok(TimingSteps {
            steps: self.bind_all(rec)?,
            owners,
        })
    }

    /// For checks that compare kernels on the model's own weights: each run of `runs` is one
    /// GEMM of `m` rows of `x` by a GEMM's weights (bias and epilogue left out), tiled by its
    /// plan (a split one through partial sums and the reduce pass), into a buffer of its own.
    pub fn gemm_steps(
        &self,
        m: usize,
        x: &wgpu::Buffer,
        runs: &[(GemmPlan, &GemmShape, &wgpu::Buffer)],
    ) -> Result<Vec<Step>> {
        let split_bytes = (runs.iter().filter(|r| r.0.split_k > 1))
            .map(|r| r.0.split_k as usize * m * r.1.n * 4)
            .max();
        let mut rec = Recorder {
            bytes: Vec::new(),
            align: (self.device.limits().min_uniform_buffer_offset_alignment).max(16) as usize,
            steps: Vec::new(),
            scratch: split_bytes.map(|b| storage(self.device, "check_split_k", b)),
        };
        for &(plan, g, out) in runs {
            let weight = &self.weights[g.linear.weight.0];
            let c = &weight.chunks[g.chunk];
            let mut params = gemm_params(m, c, &g.linear, Activation::None, false, weight.block);
            (params.has_bias, params.ldo, params.col_off) = (0, g.n as u32, 0);
            let buffers = GemmBuffers {
                x,
                w: &c.buffer,
                bias: self.dummy,
                residual: self.dummy,
                out,
                extra: c.aux.iter().collect(),
            };
            self.push_gemm(&mut rec, plan, params, buffers);
        }
        self.bind_all(rec)
    }
}
