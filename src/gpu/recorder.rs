//! Recording dispatches: each one's parameters packed into one uniform buffer at the offsets
//! the device requires between uniform bindings, then bound with its storage buffers into a
//! `Step`.

use super::buffers::filled;
use super::builder::Builder;
use super::kernels::Kernel;
use crate::error::Result;

/// A dispatch ready to record: its pipeline, bind group and workgroup grid.
pub struct Step {
    pub kernel: Kernel,
    pub bind_group: wgpu::BindGroup,
    pub groups: [u32; 3],
}

/// A dispatch before its bind group exists: its parameters' place in the bucket's uniform
/// buffer and the storage buffers bound after them (bindings 1, 2, …).
pub struct Pending {
    kernel: Kernel,
    params: std::ops::Range<u64>,
    buffers: Vec<wgpu::Buffer>,
    groups: [u32; 3],
}

/// Collects the dispatches of a bucket and their parameters, at the offsets the device
/// requires between uniform bindings.
pub struct Recorder {
    pub bytes: Vec<u8>,
    pub align: usize,
    pub steps: Vec<Pending>,
    /// The split-K GEMMs' partial sums, shared by all of them (they run one after another).
    pub scratch: Option<wgpu::Buffer>,
}

impl Recorder {
    pub fn push<P: bytemuck::Pod>(
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

impl Builder<'_> {
    /// The recorded dispatches with their bind groups, their parameters in one uniform buffer.
    pub fn bind_all(&self, rec: Recorder) -> Result<Vec<Step>> {
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
}
