//! Compute pipelines, built once per device from the WGSL in `shaders/`.

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const GEMM: &str = include_str!("../../shaders/gemm.wgsl");
const ATTENTION_IO: &str = include_str!("../../shaders/attention_io.wgsl");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Embeddings,
    /// GEMM with vec4 loads (`k % 4 == 0`, every real model).
    Gemm,
    /// GEMM with scalar loads, for any `k`.
    GemmScalar,
    /// GEMM with f16 weights (`k % 4 == 0`), on adapters with `shader-f16`.
    GemmF16,
    LayerNorm,
    /// Tiled attention with an online softmax, head sizes up to [`Kernel::TILED_HEAD_DIM`].
    Attention,
    /// One workgroup per query row, for larger heads.
    AttentionWide,
    Gather,
}

pub struct Pipelines {
    pipelines: Vec<(Kernel, wgpu::ComputePipeline)>,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embeddings => "embeddings",
            Kernel::Gemm => "gemm",
            Kernel::GemmScalar => "gemm_scalar",
            Kernel::GemmF16 => "gemm_f16",
            Kernel::LayerNorm => "layer_norm",
            Kernel::Attention => "attention",
            Kernel::AttentionWide => "attention_wide",
            Kernel::Gather => "gather",
        }
    }

    const ALL: [Kernel; 8] = [
        Kernel::Embeddings,
        Kernel::Gemm,
        Kernel::GemmScalar,
        Kernel::GemmF16,
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

    /// The GEMM variant for a reduction of `k` over f16 or f32 weights.
    pub fn gemm(k: usize, f16: bool) -> Kernel {
        if f16 {
            Kernel::GemmF16
        } else if k.is_multiple_of(4) {
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
            Kernel::GemmF16 => (include_str!("../../shaders/gemm_f16.wgsl"), GEMM),
            Kernel::LayerNorm => (COMMON, include_str!("../../shaders/layer_norm.wgsl")),
            Kernel::Attention => (ATTENTION_IO, include_str!("../../shaders/attention.wgsl")),
            Kernel::AttentionWide => (
                concat!(
                    include_str!("../../shaders/common.wgsl"),
                    include_str!("../../shaders/attention_io.wgsl")
                ),
                include_str!("../../shaders/attention_wide.wgsl"),
            ),
            Kernel::Gather => ("", include_str!("../../shaders/gather.wgsl")),
        };
        format!("{prelude}\n{body}")
    }
}

impl Pipelines {
    /// Every kernel, the f16 one only when `f16` (its module needs the device feature).
    pub fn new(device: &wgpu::Device, f16: bool) -> Self {
        let pipelines = Kernel::ALL
            .iter()
            .filter(|k| f16 || **k != Kernel::GemmF16)
            .map(|k| {
                let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                    label: Some(k.name()),
                    source: wgpu::ShaderSource::Wgsl(k.code().into()),
                });
                let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(k.name()),
                    layout: None,
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: Default::default(),
                    cache: None,
                });
                (*k, pipeline)
            })
            .collect();
        Pipelines { pipelines }
    }

    pub fn get(&self, k: Kernel) -> &wgpu::ComputePipeline {
        let i = self.pipelines.iter().position(|x| x.0 == k).unwrap_or(0);
        &self.pipelines[i].1
    }
}
