//! Compute pipelines, built once per device from the WGSL in `shaders/`.

const COMMON: &str = include_str!("../../shaders/common.wgsl");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Embeddings,
    Gemm,
    LayerNorm,
    Attention,
    Gather,
}

pub struct Pipelines {
    pipelines: Vec<wgpu::ComputePipeline>,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        self.source().0
    }

    const ALL: [Kernel; 5] = [
        Kernel::Embeddings,
        Kernel::Gemm,
        Kernel::LayerNorm,
        Kernel::Attention,
        Kernel::Gather,
    ];

    fn source(self) -> (&'static str, &'static str, bool) {
        match self {
            Kernel::Embeddings => (
                "embeddings",
                include_str!("../../shaders/embeddings.wgsl"),
                true,
            ),
            Kernel::Gemm => ("gemm", include_str!("../../shaders/gemm.wgsl"), false),
            Kernel::LayerNorm => (
                "layer_norm",
                include_str!("../../shaders/layer_norm.wgsl"),
                true,
            ),
            Kernel::Attention => (
                "attention",
                include_str!("../../shaders/attention.wgsl"),
                true,
            ),
            Kernel::Gather => ("gather", include_str!("../../shaders/gather.wgsl"), false),
        }
    }
}

impl Pipelines {
    pub fn new(device: &wgpu::Device) -> Self {
        let pipelines = Kernel::ALL
            .iter()
            .map(|k| {
                let (name, src, common) = k.source();
                let code = if common {
                    format!("{COMMON}\n{src}")
                } else {
                    src.to_string()
                };
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(name),
                    source: wgpu::ShaderSource::Wgsl(code.into()),
                });
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(name),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                })
            })
            .collect();
        Pipelines { pipelines }
    }

    pub fn get(&self, k: Kernel) -> &wgpu::ComputePipeline {
        &self.pipelines[Kernel::ALL.iter().position(|x| *x == k).unwrap_or(0)]
    }
}
