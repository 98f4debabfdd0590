//! Compute pipelines, built once per device from the WGSL in `shaders/`.

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const GEMM: &str = include_str!("../../shaders/gemm.wgsl");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Embeddings,
    /// GEMM with vec4 loads (`k % 4 == 0`, every real model).
    Gemm,
    /// GEMM with scalar loads, for any `k`.
    GemmScalar,
    LayerNorm,
    /// Tiled attention with an online softmax, head sizes up to [`Kernel::TILED_HEAD_DIM`].
    Attention,
    /// One workgroup per query row, for larger heads.
    AttentionWide,
    Gather,
}

pub struct Pipelines {
    pipelines: Vec<wgpu::ComputePipeline>,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embeddings => "embeddings",
            Kernel::Gemm => "gemm",
            Kernel::GemmScalar => "gemm_scalar",
            Kernel::LayerNorm => "layer_norm",
            Kernel::Attention => "attention",
            Kernel::AttentionWide => "attention_wide",
            Kernel::Gather => "gather",
        }
    }

    const ALL: [Kernel; 7] = [
        Kernel::Embeddings,
        Kernel::Gemm,
        Kernel::GemmScalar,
        Kernel::LayerNorm,
        Kernel::Attention,
        Kernel::AttentionWide,
        Kernel::Gather,
    ];

    pub const TILED_HEAD_DIM: usize = 64;

    /// The attention variant for a head size.
    pub fn attention(head_dim: usize) -> Kernel {
        if head_dim <= Kernel::TILED_HEAD_DIM {
            Kernel::Attention
        } else {
            Kernel::AttentionWide
        }
    }

    /// The GEMM variant for a reduction of `k`.
    pub fn gemm(k: usize) -> Kernel {
        if k.is_multiple_of(4) {
            Kernel::Gemm
        } else {
            Kernel::GemmScalar
        }
    }

    /// The shader: a variant prelude (which may hold `enable` directives) before the body.
    fn code(self) -> String {
        let (prelude, body) = match self {
            Kernel::Embeddings => (COMMON, include_str!("../../shaders/embeddings.wgsl")),
            Kernel::Gemm => (include_str!("../../shaders/gemm_vec4.wgsl"), GEMM),
            Kernel::GemmScalar => (include_str!("../../shaders/gemm_scalar.wgsl"), GEMM),
            Kernel::LayerNorm => (COMMON, include_str!("../../shaders/layer_norm.wgsl")),
            Kernel::Attention => ("", include_str!("../../shaders/attention.wgsl")),
            Kernel::AttentionWide => (COMMON, include_str!("../../shaders/attention_wide.wgsl")),
            Kernel::Gather => ("", include_str!("../../shaders/gather.wgsl")),
        };
        format!("{prelude}\n{body}")
    }
}

impl Pipelines {
    pub fn new(device: &wgpu::Device) -> Self {
        let pipelines = Kernel::ALL
            .iter()
            .map(|k| {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(k.name()),
                    source: wgpu::ShaderSource::Wgsl(k.code().into()),
                });
                device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(k.name()),
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
