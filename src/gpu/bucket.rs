//! The static buffer plan for one (batch, length, picked rows) bucket: inputs, activations,
//! uniforms, bind groups and dispatch sizes, all made once and reused by every call that fits.

use super::pipelines::{Kernel, Pipelines};
use super::weights::GpuWeight;
use crate::model::{Activation, BufId, Op, Plan, Rows};

pub struct Step {
    pub kernel: Kernel,
    pub bind_group: wgpu::BindGroup,
    pub groups: [u32; 3],
}

pub struct Bucket {
    pub ids: wgpu::Buffer,
    pub type_ids: wgpu::Buffer,
    pub lens: wgpu::Buffer,
    pub picked: wgpu::Buffer,
    pub acts: Vec<wgpu::Buffer>,
    pub steps: Vec<Step>,
    /// `steps[..encoder_steps]` produce the last hidden state.
    pub encoder_steps: usize,
    pub staging_hidden: wgpu::Buffer,
    pub staging_logits: Option<wgpu::Buffer>,
}

/// What a bucket is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    pub batch: usize,
    pub seq_len: usize,
    pub picked: usize,
}

impl Shape {
    pub fn rows(&self, r: Rows) -> usize {
        match r {
            Rows::Tokens => self.batch * self.seq_len,
            Rows::First => self.batch,
            Rows::Picked => self.picked,
        }
    }
}

fn storage(device: &wgpu::Device, label: &str, bytes: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16) as u64,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

pub fn staging(device: &wgpu::Device, bytes: usize) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: bytes.max(16) as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    })
}

/// A buffer filled through the queue: unlike `create_buffer_init` (mapped at creation), this
/// does not panic when the device has been lost, it only records an error.
pub fn filled(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    label: &str,
    usage: wgpu::BufferUsages,
    bytes: &[u8],
) -> wgpu::Buffer {
    let size = bytes.len().max(16).next_multiple_of(4);
    let b = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: size as u64,
        usage: usage | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    queue.write_buffer(&b, 0, bytes);
    b
}

fn uniform(device: &wgpu::Device, queue: &wgpu::Queue, words: &[u32]) -> wgpu::Buffer {
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    bytes.resize(32.max(bytes.len().next_multiple_of(16)), 0);
    filled(device, queue, "params", wgpu::BufferUsages::UNIFORM, &bytes)
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

fn act_code(a: Activation) -> u32 {
    match a {
        Activation::None => 0,
        Activation::Gelu => 1,
        Activation::GeluTanh => 2,
        Activation::Relu => 3,
        Activation::Tanh => 4,
    }
}

pub struct Builder<'a> {
    pub device: &'a wgpu::Device,
    pub queue: &'a wgpu::Queue,
    pub pipelines: &'a Pipelines,
    pub plan: &'a Plan,
    pub weights: &'a [GpuWeight],
    pub dummy: &'a wgpu::Buffer,
}

impl Builder<'_> {
    pub fn build(&self, shape: Shape) -> Bucket {
        let d = self.device;
        let tokens = shape.batch * shape.seq_len;
        let ids = storage(d, "ids", tokens * 4);
        let type_ids = storage(d, "type_ids", tokens * 4);
        let lens = storage(d, "lens", shape.batch * 4);
        let picked = storage(d, "picked", shape.picked * 4);
        let first: Vec<u32> = (0..shape.batch)
            .map(|s| (s * shape.seq_len) as u32)
            .collect();
        let first_bytes: Vec<u8> = first.iter().flat_map(|v| v.to_le_bytes()).collect();
        let first_rows = filled(
            d,
            self.queue,
            "first_rows",
            wgpu::BufferUsages::STORAGE,
            &first_bytes,
        );
        let acts: Vec<wgpu::Buffer> = self
            .plan
            .buffers
            .iter()
            .map(|b| storage(d, b.name, shape.rows(b.rows) * b.cols * 4))
            .collect();
        let mut steps = Vec::new();
        let mut encoder_steps = 0;
        for (i, op) in self.plan.ops.iter().enumerate() {
            if i == self.plan.encoder_ops {
                encoder_steps = steps.len();
            }
            self.op_steps(
                op,
                shape,
                &acts,
                &ids,
                &type_ids,
                &lens,
                &first_rows,
                &picked,
                &mut steps,
            );
        }
        if self.plan.encoder_ops == self.plan.ops.len() {
            encoder_steps = steps.len();
        }
        let hidden_bytes = tokens * self.plan.config.hidden_size * 4;
        let staging_logits = self.plan.logits.map(|l| {
            let spec = &self.plan.buffers[l.0];
            staging(d, shape.rows(spec.rows) * spec.cols * 4)
        });
        Bucket {
            ids,
            type_ids,
            lens,
            picked,
            acts,
            steps,
            encoder_steps,
            staging_hidden: staging(d, hidden_bytes),
            staging_logits,
        }
    }

    fn bind(&self, k: Kernel, params: &wgpu::Buffer, buffers: &[&wgpu::Buffer]) -> wgpu::BindGroup {
        let layout = self.pipelines.get(k).get_bind_group_layout(0);
        let mut entries = vec![wgpu::BindGroupEntry {
            binding: 0,
            resource: params.as_entire_binding(),
        }];
        entries.extend(
            buffers
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32 + 1,
                    resource: b.as_entire_binding(),
                }),
        );
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &layout,
            entries: &entries,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn op_steps(
        &self,
        op: &Op,
        shape: Shape,
        acts: &[wgpu::Buffer],
        ids: &wgpu::Buffer,
        type_ids: &wgpu::Buffer,
        lens: &wgpu::Buffer,
        first_rows: &wgpu::Buffer,
        picked: &wgpu::Buffer,
        steps: &mut Vec<Step>,
    ) {
        let plan = self.plan;
        let d = self.device;
        let w = |id: crate::model::WeightId| self.weights[id.0].whole();
        let rows_of = |b: BufId| shape.rows(plan.buffers[b.0].rows);
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
                let gathered = (chunks.len() > 1).then(|| storage(d, "word_rows", rows * dim * 4));
                if let Some(g) = &gathered {
                    for c in chunks {
                        let hi = (c.row0 + c.rows) as u32;
                        let params = [rows as u32, dim as u32, c.row0 as u32, hi];
                        let p = uniform(d, self.queue, &params);
                        steps.push(Step {
                            kernel: Kernel::Gather,
                            bind_group: self.bind(Kernel::Gather, &p, &[&c.buffer, ids, g]),
                            groups: per_element(rows * dim),
                        });
                    }
                }
                let p = uniform(
                    d,
                    self.queue,
                    &[
                        rows as u32,
                        shape.seq_len as u32,
                        dim as u32,
                        position_offset as u32,
                        token_type.is_some() as u32,
                        norm.eps.to_bits(),
                        gathered.is_some() as u32,
                    ],
                );
                let tt = token_type.map_or(self.dummy, w);
                let bg = self.bind(
                    Kernel::Embeddings,
                    &p,
                    &[
                        ids,
                        type_ids,
                        gathered.as_ref().unwrap_or_else(|| w(word)),
                        w(position),
                        tt,
                        w(norm.gamma),
                        w(norm.beta),
                        &acts[out.0],
                    ],
                );
                steps.push(Step {
                    kernel: Kernel::Embeddings,
                    bind_group: bg,
                    groups: per_row(rows),
                });
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
                let kernel = Kernel::gemm(m, linear.n_in, weight.f16);
                // One GEMM per chunk of a split weight: a range of output columns each.
                for c in &weight.chunks {
                    let p = uniform(
                        d,
                        self.queue,
                        &[
                            m as u32,
                            c.rows as u32,
                            linear.n_in as u32,
                            act_code(act),
                            linear.bias.is_some() as u32,
                            residual.is_some() as u32,
                            linear.n_out as u32,
                            c.row0 as u32,
                        ],
                    );
                    let bg = self.bind(
                        kernel,
                        &p,
                        &[&acts[x.0], &c.buffer, bias, res, &acts[out.0]],
                    );
                    steps.push(Step {
                        kernel,
                        bind_group: bg,
                        groups: [
                            c.rows.div_ceil(64) as u32,
                            m.div_ceil(kernel.tile_rows()) as u32,
                            1,
                        ],
                    });
                }
                if let Some(n) = norm {
                    let p = uniform(
                        self.device,
                        self.queue,
                        &[m as u32, linear.n_out as u32, n.eps.to_bits()],
                    );
                    let bg = self.bind(
                        Kernel::LayerNorm,
                        &p,
                        &[w(n.gamma), w(n.beta), &acts[out.0]],
                    );
                    steps.push(Step {
                        kernel: Kernel::LayerNorm,
                        bind_group: bg,
                        groups: per_row(m),
                    });
                }
            }
            Op::Attention {
                qkv,
                out,
                heads,
                head_dim,
            } => {
                let scale = 1.0 / (head_dim as f32).sqrt();
                let p = uniform(
                    d,
                    self.queue,
                    &[
                        shape.seq_len as u32,
                        heads as u32,
                        head_dim as u32,
                        (heads * head_dim) as u32,
                        scale.to_bits(),
                    ],
                );
                let kernel = Kernel::attention(head_dim);
                let bg = self.bind(kernel, &p, &[&acts[qkv.0], lens, &acts[out.0]]);
                let query_blocks = match kernel {
                    Kernel::Attention => shape.seq_len.div_ceil(16),
                    _ => shape.seq_len,
                };
                steps.push(Step {
                    kernel,
                    bind_group: bg,
                    groups: [query_blocks as u32, heads as u32, shape.batch as u32],
                });
            }
            Op::Gather { x, out } => {
                let spec = &plan.buffers[out.0];
                let rows = shape.rows(spec.rows);
                let index = if spec.rows == Rows::Picked {
                    picked
                } else {
                    first_rows
                };
                let p = uniform(d, self.queue, &[rows as u32, spec.cols as u32, 0, u32::MAX]);
                let bg = self.bind(Kernel::Gather, &p, &[&acts[x.0], index, &acts[out.0]]);
                steps.push(Step {
                    kernel: Kernel::Gather,
                    bind_group: bg,
                    groups: per_element(rows * spec.cols),
                });
            }
        }
    }
}
