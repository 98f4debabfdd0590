//! Compute pipelines, built once per device from each kernel's WGSL (`shader_code.rs`).

use super::context::KernelChoice;
use super::kernels::Kernel;
use crate::error::{Error, GpuErrorKind, Result};

pub struct Pipelines {
    pipelines: Vec<(Kernel, wgpu::ComputePipeline)>,
}

impl Pipelines {
    /// Every kernel the device can run (f16 ones need their feature), in the variants `choice`
    /// names; the integer q8 GEMM only with `int_dot`. The cooperative-matrix GEMM is built
    /// later, when it is checked (`verify.rs`): a shader the driver refuses must not count as
    /// the device failing.
    pub fn new(device: &wgpu::Device, choice: &KernelChoice, int_dot: bool) -> Self {
        let pipelines = Kernel::ALL
            .iter()
            .filter(|k| k.available(choice) && **k != Kernel::GemmCoop)
            .filter(|k| int_dot || !k.int_dot())
            .map(|k| (*k, build(device, k.name(), &k.code(choice))))
            .collect();
        Pipelines { pipelines }
    }

    /// Adds (or replaces) the pipeline of `k`.
    pub fn insert(&mut self, k: Kernel, pipeline: wgpu::ComputePipeline) {
        self.pipelines.retain(|x| x.0 != k);
        self.pipelines.push((k, pipeline));
    }

    /// The pipeline of `k`; an error when it was not built (the f16 GEMM without the feature).
    pub fn get(&self, k: Kernel) -> Result<&wgpu::ComputePipeline> {
        let found = self.pipelines.iter().find(|x| x.0 == k);
        found.map(|(_, p)| p).ok_or_else(|| {
            let msg = format!("no `{}` pipeline on this device", k.name());
            Error::gpu(GpuErrorKind::Internal, msg)
        })
    }
}

/// The compute pipeline of WGSL `code` (entry point `main`).
pub fn build(device: &wgpu::Device, label: &str, code: &str) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(label),
        source: wgpu::ShaderSource::Wgsl(code.into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    })
}
