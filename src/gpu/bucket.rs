//! The static buffer plan for one (batch, length, picked rows) bucket: inputs, activations,
//! one uniform buffer for every dispatch's parameters, bind groups and dispatch sizes, all
//! made once and reused by every call that fits.

use super::buffers::{filled, staging, storage};
use super::context::KernelChoice;
use super::gemm_plan::GemmPlan;
use super::kernels::Kernel;
use super::packed::Packed;
use super::params::{
    act_code, AttentionParams, EmbeddingsParams, GateParams, GatherParams, GemmParams,
    GemmReduceParams, LayerNormParams, Q8Params, RotaryParams, RowsParams,
};
use super::pipelines::Pipelines;
use super::tune::{self, GemmKey, Tuned};
use super::weights::{Chunk, GemmWeights, GpuWeight};
use crate::error::Result;
use crate::exec::{Batch, Dims, Want};
use crate::model::{
    Activation, BufId, Disentangled, Linear, Norm, Op, Plan, Rotation, Rows, WeightId,
};
use std::collections::HashMap;

pub struct Step {
    pub kernel: Kernel,
    pub bind_group: wgpu::BindGroup,
    pub groups: [u32; 3],
}

/// The per-call inputs of a bucket, written before each forward, and the fixed first-row
/// index of each sequence.
pub struct BucketInputs {
    pub ids: wgpu::Buffer,
    pub type_ids: wgpu::Buffer,
    pub lens: wgpu::Buffer,
    pub picked: wgpu::Buffer,
    pub first_rows: wgpu::Buffer,
    /// One row of rotary angles per token row, for a rotation scaled by each call's lengths.
    pub rotary_rows: Option<(wgpu::Buffer, Rotation)>,
}

impl BucketInputs {
    fn new(device: &wgpu::Device, queue: &wgpu::Queue, dims: Dims, plan: &Plan) -> Self {
        let tokens = dims.batch * dims.seq_len;
        let dynamic = plan.ops.iter().find_map(|op| match op {
            Op::Rotary { rotation, .. } if rotation.dynamic.is_some() => Some(*rotation),
            _ => None,
        });
        let first: Vec<u32> = (0..dims.batch).map(|s| (s * dims.seq_len) as u32).collect();
        BucketInputs {
            ids: storage(device, "ids", tokens * 4),
            type_ids: storage(device, "type_ids", tokens * 4),
            lens: storage(device, "lens", dims.batch * 4),
            picked: storage(device, "picked", dims.picked * 4),
            first_rows: filled(
                device,
                queue,
                "first_rows",
                wgpu::BufferUsages::STORAGE,
                bytemuck::cast_slice(&first),
            ),
            rotary_rows: dynamic.map(|r| (storage(device, "rotary_rows", tokens * r.dim * 4), r)),
        }
    }

    /// Writes `batch` (of this bucket's dims) into the input buffers.
    pub fn write(&self, queue: &wgpu::Queue, batch: &Batch) {
        let u32s = |v: &[usize]| v.iter().map(|&x| x as u32).collect::<Vec<_>>();
        queue.write_buffer(&self.ids, 0, bytemuck::cast_slice(&batch.ids));
        queue.write_buffer(&self.type_ids, 0, bytemuck::cast_slice(&batch.type_ids));
        queue.write_buffer(&self.lens, 0, bytemuck::cast_slice(&u32s(&batch.lens)));
        if !batch.picked.is_empty() {
            let picked = u32s(&batch.picked);
            queue.write_buffer(&self.picked, 0, bytemuck::cast_slice(&picked));
        }
        if let Some((buffer, rotation)) = &self.rotary_rows {
            let rows = rotation
                .rows(&batch.lens, batch.seq_len)
                .unwrap_or_default();
            queue.write_buffer(buffer, 0, bytemuck::cast_slice(&rows));
        }
    }
}

pub struct Bucket {
    pub inputs: BucketInputs,
    pub acts: Vec<wgpu::Buffer>,
    pub steps: Vec<Step>,
    /// `steps[..encoder_steps]` produce the last hidden state.
    pub encoder_steps: usize,
    /// The steps of each of the plan's heads.
    pub head_steps: Vec<std::ops::Range<usize>>,
    pub staging_hidden: wgpu::Buffer,
    /// One per head of the plan.
    pub staging_logits: Vec<wgpu::Buffer>,
}

impl Bucket {
    /// The steps a forward that wants `want` runs: the encoder's, then the head's it asks for.
    pub fn steps(&self, want: Want) -> Vec<&Step> {
        let head = want.head_index().and_then(|i| self.head_steps.get(i));
        let head = head.map_or(&[][..], |r| &self.steps[r.clone()]);
        self.steps[..self.encoder_steps]
            .iter()
            .chain(head)
            .collect()
    }
}

/// Workgroups for one workgroup per row, rows past 65535 going to `y`.
fn per_row(rows: usize) -> [u32; 3] {
    let x = rows.clamp(1, 65535);
    [x as u32, rows.div_ceil(65535).max(1) as u32, 1]
}

/// Workgroups of 256 for one invocation per element, past 65535 groups going to `y`.
fn per_element(n: usize) -> [u32; 3] {
    let groups = n.div_ceil(256);
    [
        groups.clamp(1, 65535) as u32,
        groups.div_ceil(65535).max(1) as u32,
        1,
    ]
}

/// A dispatch before its bind group exists: its parameters' place in the bucket's uniform
/// buffer and the storage buffers bound after them (bindings 1, 2, …).
struct Pending {
    kernel: Kernel,
    params: std::ops::Range<u64>,
    buffers: Vec<wgpu::Buffer>,
    groups: [u32; 3],
}

/// Collects the dispatches of a bucket and their parameters, at the offsets the device
/// requires between uniform bindings.
struct Recorder {
    bytes: Vec<u8>,
    align: usize,
    steps: Vec<Pending>,
    /// The split-K GEMMs' partial sums, shared by all of them (they run one after another).
    scratch: Option<wgpu::Buffer>,
}

impl Recorder {
    fn push<P: bytemuck::Pod>(
        &mut self,
        kernel: Kernel,
        params: P,
        buffers: &[&wgpu::Buffer],
        groups: [u32; 3],
    ) {
        let start = self.bytes.len().next_multiple_of(self.align);
        self.bytes.resize(start, 0);
        self.bytes.extend_from_slice(bytemuck::bytes_of(&params));
        // A binding's size is a multiple of 16 bytes for uniforms.
        let end = start + std::mem::size_of::<P>().next_multiple_of(16);
        self.bytes.resize(end, 0);
        self.steps.push(Pending {
            kernel,
            params: start as u64..end as u64,
            buffers: buffers.iter().map(|&b| b.clone()).collect(),
            groups,
        });
    }
}

/// One GEMM of a forward: its shape, weights and tiling, and where it comes from (chunk
/// `chunk` of `linear`'s weight).
#[derive(Debug, Clone, Copy)]
pub struct GemmShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub weights: GemmWeights,
    pub plan: GemmPlan,
    pub linear: Linear,
    pub chunk: usize,
}

impl GemmShape {
    pub fn key(&self) -> GemmKey {
        GemmKey::new(self.m, self.n, self.k, self.weights)
    }
}

/// The buffers of one GEMM dispatch: operands, epilogue inputs, output, then what its weight
/// form binds after them (q4 scales and zero points, q8 scales, quantized activations' meta).
struct GemmBuffers<'b> {
    x: &'b wgpu::Buffer,
    w: &'b wgpu::Buffer,
    bias: &'b wgpu::Buffer,
    residual: &'b wgpu::Buffer,
    out: &'b wgpu::Buffer,
    extra: Vec<&'b wgpu::Buffer>,
}

/// The candidate tilings' dispatches of the GEMMs being tuned: each (shape, tiling) owns a
/// range of `steps` per weight of that shape, the tiling's GEMM and, when split, its reduce
/// pass.
pub struct TimingSteps {
    pub steps: Vec<Step>,
    pub owners: Vec<(GemmKey, GemmPlan, Vec<std::ops::Range<usize>>)>,
}

pub struct Builder<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub pipelines: &'a Pipelines,
    pub plan: &'a Plan,
    pub weights: &'a [GpuWeight],
    pub dummy: &'a wgpu::Buffer,
    pub choice: &'a KernelChoice,
    /// Tilings timed on this device, by shape (`tune.rs`).
    pub tuned: &'a HashMap<GemmKey, Tuned>,
}

impl Builder<'_> {
    pub fn build(&self, dims: Dims) -> Result<Bucket> {
        let d = self.device;
        let inputs = BucketInputs::new(d, self.queue, dims, self.plan);
        let acts: Vec<wgpu::Buffer> = (self.plan.buffers.iter())
            .map(|b| storage(d, b.name, dims.rows(b.rows) * b.cols * 4))
            .collect();
        let align = d.limits().min_uniform_buffer_offset_alignment.max(16) as usize;
        let scratch_bytes = (self.gemms(dims).iter())
            .filter(|g| g.plan.split_k > 1)
            .map(|g| g.plan.split_k as usize * g.m * g.n * 4)
            .max();
        let mut rec = Recorder {
            bytes: Vec::new(),
            align,
            steps: Vec::new(),
            scratch: scratch_bytes.map(|b| storage(d, "split_k", b)),
        };
        // `first_step[i]`: the first step of op `i` (one more entry for the end).
        let mut first_step = Vec::with_capacity(self.plan.ops.len() + 1);
        for op in &self.plan.ops {
            first_step.push(rec.steps.len());
            self.op_steps(op, dims, &inputs, &acts, &mut rec);
        }
        first_step.push(rec.steps.len());
        let encoder_steps = first_step[self.plan.encoder_ops];
        let head_steps = (self.plan.heads.iter())
            .map(|h| first_step[h.ops.start]..first_step[h.ops.end])
            .collect();
        let steps = self.bind_all(rec)?;
        let hidden_bytes = dims.rows(Rows::Tokens) * self.plan.config.hidden_size * 4;
        let staging_logits = (self.plan.heads.iter())
            .map(|h| {
                let spec = &self.plan.buffers[h.logits.0];
                staging(d, dims.rows(spec.rows) * spec.cols * 4)
            })
            .collect();
        Ok(Bucket {
            inputs,
            acts,
            steps,
            encoder_steps,
            head_steps,
            staging_hidden: staging(d, hidden_bytes),
            staging_logits,
        })
    }

    /// The recorded dispatches with their bind groups, their parameters in one uniform buffer.
    fn bind_all(&self, rec: Recorder) -> Result<Vec<Step>> {
        let uniforms = filled(
            self.device,
            self.queue,
            "params",
            wgpu::BufferUsages::UNIFORM,
            &rec.bytes,
        );
        (rec.steps.into_iter())
            .map(|p| self.bind(p, &uniforms))
            .collect()
    }

    fn bind(&self, p: Pending, uniforms: &wgpu::Buffer) -> Result<Step> {
        let layout = self.pipelines.get(p.kernel)?.get_bind_group_layout(0);
        let params = wgpu::BufferBinding {
            buffer: uniforms,
            offset: p.params.start,
            size: std::num::NonZeroU64::new(p.params.end - p.params.start),
        };
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: wgpu::BindingResource::Buffer(params),
        }];
        entries.extend(
            p.buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        let bind_group = self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        });
        Ok(Step {
            kernel: p.kernel,
            bind_group,
            groups: p.groups,
        })
    }

    /// Every GEMM of a forward of `dims` (one per chunk of a split weight) and its tiling.
    pub fn gemms(&self, dims: Dims) -> Vec<GemmShape> {
        let mut out = Vec::new();
        for op in &self.plan.ops {
            if let Op::Linear { x, linear, .. } = op {
                let m = dims.rows(self.plan.buffers[x.0].rows);
                let weight = &self.weights[linear.weight.0];
                let weights = GemmWeights::of(weight);
                for (chunk, c) in weight.chunks.iter().enumerate() {
                    let (n, k) = (c.rows, linear.n_in);
                    out.push(GemmShape {
                        m,
                        n,
                        k,
                        weights,
                        plan: self.gemm_plan(m, n, k, weights),
                        linear: *linear,
                        chunk,
                    });
                }
            }
        }
        out
    }

    /// A GEMM's tiling: the one timed for its shape, else the rule's.
    fn gemm_plan(&self, m: usize, n: usize, k: usize, weights: GemmWeights) -> GemmPlan {
        match self.tuned.get(&GemmKey::new(m, n, k, weights)) {
            Some(t) => t.plan,
            None => GemmPlan::choose(self.choice, m, n, k, weights),
        }
    }

    /// One GEMM with `params` (its whole reduction and epilogue): in one dispatch, or split
    /// into raw partial sums in the recorder's scratch and a reduce pass that applies the
    /// epilogue.
    fn push_gemm(
        &self,
        rec: &mut Recorder,
        plan: GemmPlan,
        mut params: GemmParams,
        b: GemmBuffers,
    ) {
        let (m, n) = (params.m as usize, params.n as usize);
        let scratch = rec.scratch.clone().filter(|_| plan.split_k > 1);
        let Some(part) = scratch else {
            let whole = GemmPlan { split_k: 1, ..plan };
            let mut buffers = vec![b.x, b.w, b.bias, b.residual, b.out];
            buffers.extend(b.extra);
            rec.push(plan.kernel, params, &buffers, whole.groups(m, n));
            return;
        };
        let reduce = GemmReduceParams {
            m: params.m,
            n: params.n,
            splits: plan.split_k,
            act: params.act,
            has_bias: params.has_bias,
            has_residual: params.has_residual,
            ldo: params.ldo,
            col_off: params.col_off,
        };
        params.k_len = plan.k_len(params.k as usize) as u32;
        params.act = act_code(Activation::None);
        (params.has_bias, params.has_residual) = (0, 0);
        (params.ldo, params.col_off) = (params.n, 0);
        let mut buffers = vec![b.x, b.w, self.dummy, self.dummy, &part];
        buffers.extend(b.extra);
        rec.push(plan.kernel, params, &buffers, plan.groups(m, n));
        let buffers = [&part, b.bias, b.residual, b.out];
        rec.push(Kernel::GemmReduce, reduce, &buffers, per_element(m * n));
    }

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

    /// `rows` rows of `cols` of `out` from `x`: copied (`mean` 0) or, per sequence, the mean
    /// of its real token rows (`mean` 1).
    #[allow(clippy::too_many_arguments)]
    fn rows_op(
        &self,
        rec: &mut Recorder,
        x: &wgpu::Buffer,
        inputs: &BucketInputs,
        out: &wgpu::Buffer,
        rows: usize,
        cols: usize,
        dims: Dims,
        mean: u32,
    ) {
        let params = RowsParams {
            rows: rows as u32,
            cols: cols as u32,
            seq_len: dims.seq_len as u32,
            mean,
        };
        let buffers = [x, &inputs.lens, out];
        rec.push(Kernel::Rows, params, &buffers, per_element(rows * cols));
    }

    /// In-place LayerNorm of `rows` rows of `dim` values of `x`.
    fn layer_norm(
        &self,
        rec: &mut Recorder,
        norm: Norm,
        rows: usize,
        dim: usize,
        x: &wgpu::Buffer,
    ) {
        let w = |id: WeightId| self.weights[id.0].whole();
        let params = LayerNormParams {
            rows: rows as u32,
            dim: dim as u32,
            eps: norm.eps,
            centered: norm.centered as u32,
        };
        rec.push(
            Kernel::layer_norm(self.choice),
            params,
            &[w(norm.gamma), w(norm.beta), x],
            per_row(rows),
        );
    }

    fn op_steps(
        &self,
        op: &Op,
        dims: Dims,
        inputs: &BucketInputs,
        acts: &[wgpu::Buffer],
        rec: &mut Recorder,
    ) {
        let plan = self.plan;
        let w = |id: WeightId| self.weights[id.0].whole();
        let rows_of = |b: BufId| dims.rows(plan.buffers[b.0].rows);
        match *op {
            Op::Embeddings {
                word,
                position,
                token_type,
                norm,
                position_offset,
                out,
            } => {
                let rows = rows_of(out);
                let dim = plan.buffers[out.0].cols;
                // A split table: each chunk's rows are gathered first, then read in order.
                let chunks = &self.weights[word.0].chunks;
                let gathered =
                    (chunks.len() > 1).then(|| storage(self.device, "word_rows", rows * dim * 4));
                if let Some(g) = &gathered {
                    for c in chunks {
                        let params = GatherParams {
                            rows: rows as u32,
                            cols: dim as u32,
                            lo: c.row0 as u32,
                            hi: (c.row0 + c.rows) as u32,
                        };
                        let buffers = [&c.buffer, &inputs.ids, g];
                        rec.push(Kernel::Gather, params, &buffers, per_element(rows * dim));
                    }
                }
                let params = EmbeddingsParams {
                    rows: rows as u32,
                    seq_len: dims.seq_len as u32,
                    dim: dim as u32,
                    position_offset: position_offset as u32,
                    has_types: token_type.is_some() as u32,
                    gathered: gathered.is_some() as u32,
                    has_position: position.is_some() as u32,
                };
                let buffers = [
                    &inputs.ids,
                    &inputs.type_ids,
                    gathered.as_ref().unwrap_or_else(|| w(word)),
                    position.map_or(self.dummy, w),
                    token_type.map_or(self.dummy, w),
                    &acts[out.0],
                ];
                rec.push(
                    Kernel::Embeddings,
                    params,
                    &buffers,
                    per_element(rows * dim),
                );
                if let Some(norm) = norm {
                    self.layer_norm(rec, norm, rows, dim, &acts[out.0]);
                }
            }
            Op::Linear {
                x,
                linear,
                act,
                residual,
                norm,
                out,
            } => {
                let m = rows_of(x);
                let bias = linear.bias.map_or(self.dummy, w);
                let res = residual.map_or(self.dummy, |r| &acts[r.0]);
                let weight = &self.weights[linear.weight.0];
                if weight.packed != Packed::None {
                    self.packed_linear(op, dims, inputs, acts, rec);
                    return;
                }
                // One GEMM per chunk of a split weight: a range of output columns each.
                let weights = GemmWeights::of(weight);
                for c in &weight.chunks {
                    let plan = self.gemm_plan(m, c.rows, linear.n_in, weights);
                    let params = gemm_params(m, c, &linear, act, residual.is_some(), 0);
                    let buffers = GemmBuffers {
                        x: &acts[x.0],
                        w: &c.buffer,
                        bias,
                        residual: res,
                        out: &acts[out.0],
                        extra: Vec::new(),
                    };
                    self.push_gemm(rec, plan, params, buffers);
                }
                if let Some(n) = norm {
                    self.layer_norm(rec, n, m, linear.n_out, &acts[out.0]);
                }
            }
            Op::Attention {
                qkv,
                out,
                heads,
                head_dim,
                scale,
                bias,
                relative,
                window,
            } => {
                let params = AttentionParams {
                    seq_len: dims.seq_len as u32,
                    heads: heads as u32,
                    head_dim: head_dim as u32,
                    hidden: (heads * head_dim) as u32,
                    scale,
                    bias_width: bias.map_or(0, |b| 2 * b.center + 1) as u32,
                    bias_center: bias.map_or(0, |b| b.center) as u32,
                    rel_center: relative.map_or(0, |r| r.center) as u32,
                    has_c2p: relative.is_some_and(|r| r.pos_key.is_some()) as u32,
                    has_p2c: relative.is_some_and(|r| r.pos_query.is_some()) as u32,
                    has_window: window.is_some() as u32,
                    window: window.unwrap_or(0).min(u32::MAX as usize) as u32,
                };
                let kernel = Kernel::attention(self.choice, head_dim);
                let query_blocks = match kernel {
                    Kernel::Attention => dims.seq_len.div_ceil(16),
                    Kernel::AttentionLanes => dims.seq_len.div_ceil(64),
                    _ => dims.seq_len,
                };
                let groups = [query_blocks as u32, heads as u32, dims.batch as u32];
                let table = bias.map_or(self.dummy, |b| w(b.table));
                let rel = |id: fn(&Disentangled) -> Option<WeightId>| {
                    relative.and_then(|r| id(&r)).map_or(self.dummy, w)
                };
                let buffers = [
                    &acts[qkv.0],
                    &inputs.lens,
                    &acts[out.0],
                    table,
                    rel(|r| r.pos_key),
                    rel(|r| r.pos_query),
                    rel(|r| Some(r.index)),
                ];
                rec.push(kernel, params, &buffers, groups);
            }
            Op::Rotary { qkv, rotation: r } => {
                let rows = dims.rows(plan.buffers[qkv.0].rows);
                // A dynamic rotation reads one row of angles per token row (period: all rows).
                let rows_table = (inputs.rotary_rows.as_ref()).filter(|_| r.dynamic.is_some());
                let period = if rows_table.is_some() {
                    rows
                } else {
                    dims.seq_len
                };
                let params = RotaryParams {
                    rows: rows as u32,
                    seq_len: period as u32,
                    heads: r.heads as u32,
                    head_dim: r.head_dim as u32,
                    dim: r.dim as u32,
                    interleaved: r.interleaved as u32,
                    parts: r.parts as u32,
                };
                let table = rows_table.map_or_else(|| w(r.table), |(b, _)| b);
                let buffers = [&acts[qkv.0], table];
                let pairs = rows * r.parts * r.heads * (r.dim / 2);
                rec.push(Kernel::Rotary, params, &buffers, per_element(pairs));
            }
            Op::Gate { x, out, act } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                let params = GateParams {
                    rows: rows as u32,
                    cols: spec.cols as u32,
                    act: act_code(act),
                };
                let buffers = [&acts[x.0], &acts[out.0]];
                rec.push(
                    Kernel::Gate,
                    params,
                    &buffers,
                    per_element(rows * spec.cols),
                );
            }
            Op::Norm { x, norm, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                if x != out {
                    self.rows_op(
                        rec,
                        &acts[x.0],
                        inputs,
                        &acts[out.0],
                        rows,
                        spec.cols,
                        dims,
                        0,
                    );
                }
                self.layer_norm(rec, norm, rows, spec.cols, &acts[out.0]);
            }
            Op::MeanPool { x, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                self.rows_op(
                    rec,
                    &acts[x.0],
                    inputs,
                    &acts[out.0],
                    rows,
                    spec.cols,
                    dims,
                    1,
                );
            }
            Op::Gather { x, out } => {
                let spec = &plan.buffers[out.0];
                let rows = dims.rows(spec.rows);
                let index = match spec.rows {
                    Rows::Picked => &inputs.picked,
                    _ => &inputs.first_rows,
                };
                let params = GatherParams {
                    rows: rows as u32,
                    cols: spec.cols as u32,
                    lo: 0,
                    hi: u32::MAX,
                };
                let buffers = [&acts[x.0], index, &acts[out.0]];
                rec.push(
                    Kernel::Gather,
                    params,
                    &buffers,
                    per_element(rows * spec.cols),
                );
            }
        }
    }

    /// A linear on a packed low-bit weight (`packed.rs`): for integer q8, the activations
    /// quantized first (per row range, then per row group), then one GEMM per chunk.
    fn packed_linear(
        &self,
        op: &Op,
        dims: Dims,
        inputs: &BucketInputs,
        acts: &[wgpu::Buffer],
        rec: &mut Recorder,
    ) {
        let Op::Linear {
            x,
            linear,
            act,
            residual,
            norm,
            out,
        } = *op
        else {
            return;
        };
        let w = |id: WeightId| self.weights[id.0].whole();
        let rows = self.plan.buffers[x.0].rows;
        let (m, k) = (dims.rows(rows), linear.n_in);
        let weight = &self.weights[linear.weight.0];
        let quantized = (weight.packed == Packed::Q8Int).then(|| {
            let range = storage(self.device, "q8_range", m * 8);
            let codes = storage(self.device, "q8_codes", m * k);
            let meta = storage(self.device, "q8_meta", m * 16);
            let params = Q8Params {
                rows: m as u32,
                k: k as u32,
                seq_len: dims.seq_len as u32,
                kind: match rows {
                    Rows::Tokens => 0,
                    Rows::First => 1,
                    Rows::Picked => 2,
                },
            };
            rec.push(Kernel::Q8Range, params, &[&acts[x.0], &range], per_row(m));
            let buffers = [
                &acts[x.0],
                &range,
                &inputs.lens,
                &inputs.picked,
                &codes,
                &meta,
            ];
            rec.push(Kernel::Q8Quantize, params, &buffers, per_row(m));
            (codes, meta)
        });
        let bias = linear.bias.map_or(self.dummy, w);
        let res = residual.map_or(self.dummy, |r| &acts[r.0]);
        let weights = GemmWeights::of(weight);
        for c in &weight.chunks {
            let plan = self.gemm_plan(m, c.rows, k, weights);
            let params = gemm_params(m, c, &linear, act, residual.is_some(), weight.block);
            let mut extra: Vec<&wgpu::Buffer> = c.aux.iter().collect();
            extra.extend(quantized.as_ref().map(|q| &q.1));
            let buffers = GemmBuffers {
                x: quantized.as_ref().map_or(&acts[x.0], |q| &q.0),
                w: &c.buffer,
                bias,
                residual: res,
                out: &acts[out.0],
                extra,
            };
            self.push_gemm(rec, plan, params, buffers);
        }
        if let Some(n) = norm {
            self.layer_norm(rec, n, m, linear.n_out, &acts[out.0]);
        }
    }
}

/// The uniforms of one GEMM over chunk `c` of a linear's weight (the whole reduction; `block`:
/// q4 weights' block width, else 0).
fn gemm_params(
    m: usize,
    c: &Chunk,
    linear: &Linear,
    act: Activation,
    residual: bool,
    block: usize,
) -> GemmParams {
    GemmParams {
        m: m as u32,
        n: c.rows as u32,
        k: linear.n_in as u32,
        act: act_code(act),
        has_bias: linear.bias.is_some() as u32,
        has_residual: residual as u32,
        ldo: linear.n_out as u32,
        col_off: c.row0 as u32,
        k_len: 0,
        block: block as u32,
    }
}
