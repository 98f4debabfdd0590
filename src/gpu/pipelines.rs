//! Compute pipelines, built once per device from the WGSL in `shaders/`.

use super::params::{
    self, AttentionParams, EmbeddingsParams, GatherParams, GemmParams, GemmQParams,
    LayerNormParams, Q8Params,
};
use crate::error::{Error, GpuErrorKind, Result};

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const GEMM: &str = include_str!("../../shaders/gemm.wgsl");
const ATTENTION_IO: &str = include_str!("../../shaders/attention_io.wgsl");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    Embeddings,
    /// GEMM with vec4 loads (`k % 4 == 0`, every real model).
    Gemm(Tile),
    /// GEMM with scalar loads, for any `k`.
    GemmScalar(Tile),
    /// GEMM with f16 weights (`k % 4 == 0`), on adapters with `shader-f16`.
    GemmF16(Tile),
    LayerNorm,
    /// Tiled attention with an online softmax, head sizes up to `TILED_HEAD_DIM`.
    Attention,
    /// One workgroup per query row, for larger heads.
    AttentionWide,
    Gather,
    /// GEMMs on packed low-bit weights (`packed.rs`): q4 and q8 unpacked to f32 on load, and
    /// q8 with integer dot products on activations quantized by `Q8Range` + `Q8Quantize`.
    GemmQ4(Tile),
    GemmQ8(Tile),
    GemmQ8Int(Tile),
    Q8Range,
    Q8Quantize,
}

/// GEMM output tile height: 64 rows, or 16 for short inputs, where most of a 64-row tile
/// would be padding (and a small grid of tall tiles leaves most of a GPU idle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tile {
    Tall,
    Short,
}

impl Tile {
    /// Rows of the output tile.
    pub fn rows(self) -> usize {
        match self {
            Tile::Tall => 64,
            Tile::Short => 16,
        }
    }

    fn for_rows(m: usize) -> Tile {
        if m <= 32 {
            Tile::Short
        } else {
            Tile::Tall
        }
    }
}

pub struct Pipelines {
    pipelines: Vec<(Kernel, wgpu::ComputePipeline)>,
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embeddings => "embeddings",
            Kernel::Gemm(_) => "gemm",
            Kernel::GemmScalar(_) => "gemm_scalar",
            Kernel::GemmF16(_) => "gemm_f16",
            Kernel::LayerNorm => "layer_norm",
            Kernel::Attention => "attention",
            Kernel::AttentionWide => "attention_wide",
            Kernel::Gather => "gather",
            Kernel::GemmQ4(_) => "gemm_q4",
            Kernel::GemmQ8(_) => "gemm_q8",
            Kernel::GemmQ8Int(_) => "gemm_q8_int",
            Kernel::Q8Range | Kernel::Q8Quantize => "q8_quantize",
        }
    }

    /// Kernels that need WGSL's `packed_4x8_integer_dot_product`.
    fn int_dot(self) -> bool {
        matches!(self, Kernel::GemmQ8Int(_))
    }

    const ALL: [Kernel; 19] = [
        Kernel::Embeddings,
        Kernel::Gemm(Tile::Tall),
        Kernel::Gemm(Tile::Short),
        Kernel::GemmScalar(Tile::Tall),
        Kernel::GemmScalar(Tile::Short),
        Kernel::GemmF16(Tile::Tall),
        Kernel::GemmF16(Tile::Short),
        Kernel::LayerNorm,
        Kernel::Attention,
        Kernel::AttentionWide,
        Kernel::Gather,
        Kernel::GemmQ4(Tile::Tall),
        Kernel::GemmQ4(Tile::Short),
        Kernel::GemmQ8(Tile::Tall),
        Kernel::GemmQ8(Tile::Short),
        Kernel::GemmQ8Int(Tile::Tall),
        Kernel::GemmQ8Int(Tile::Short),
        Kernel::Q8Range,
        Kernel::Q8Quantize,
    ];

    /// The attention variant for a head size.
    pub fn attention(head_dim: usize) -> Kernel {
        if head_dim <= super::TILED_HEAD_DIM {
            Kernel::Attention
        } else {
            Kernel::AttentionWide
        }
    }

    /// The GEMM variant for `m` rows, a reduction of `k`, and f16 or f32 weights.
    pub fn gemm(m: usize, k: usize, f16: bool) -> Kernel {
        let tile = Tile::for_rows(m);
        if f16 {
            Kernel::GemmF16(tile)
        } else if k.is_multiple_of(4) {
            Kernel::Gemm(tile)
        } else {
            Kernel::GemmScalar(tile)
        }
    }

    /// The GEMM on a weight packed as `packed`, for `m` rows.
    pub fn packed_gemm(packed: super::packed::Packed, m: usize) -> Kernel {
        use super::packed::Packed;
        let tile = Tile::for_rows(m);
        match packed {
            Packed::Q4 => Kernel::GemmQ4(tile),
            Packed::Q8 => Kernel::GemmQ8(tile),
            Packed::Q8Int => Kernel::GemmQ8Int(tile),
            Packed::None => Kernel::Gemm(tile),
        }
    }

    /// The output rows one workgroup covers, for GEMMs.
    pub fn tile_rows(self) -> usize {
        match self {
            Kernel::Gemm(t) | Kernel::GemmScalar(t) | Kernel::GemmF16(t) => t.rows(),
            Kernel::GemmQ4(t) | Kernel::GemmQ8(t) | Kernel::GemmQ8Int(t) => t.rows(),
            _ => 1,
        }
    }

    /// The WGSL of this kernel's uniforms (see `params.rs`).
    fn params(self) -> String {
        match self {
            Kernel::Embeddings => EmbeddingsParams::wgsl(),
            Kernel::Gemm(_) | Kernel::GemmScalar(_) | Kernel::GemmF16(_) => GemmParams::wgsl(),
            Kernel::LayerNorm => LayerNormParams::wgsl(),
            Kernel::Attention | Kernel::AttentionWide => AttentionParams::wgsl(),
            Kernel::Gather => GatherParams::wgsl(),
            Kernel::GemmQ4(_) | Kernel::GemmQ8(_) | Kernel::GemmQ8Int(_) => GemmQParams::wgsl(),
            Kernel::Q8Range | Kernel::Q8Quantize => Q8Params::wgsl(),
        }
    }

    /// The shader: directives, the generated uniforms and constants (GEMMs also get their
    /// rows per invocation, `RM`, 8 of them down a tile), the shared helpers it uses, then
    /// its own code; each part only uses what an earlier one declares.
    fn code(self) -> String {
        let directives = match self {
            Kernel::GemmF16(_) => "enable f16;\n",
            _ => "",
        };
        let (helpers, body): (&[&str], &str) = match self {
            Kernel::Embeddings => (&[], include_str!("../../shaders/embeddings.wgsl")),
            Kernel::Gemm(_) => (&[include_str!("../../shaders/gemm_vec4.wgsl")], GEMM),
            Kernel::GemmScalar(_) => (&[include_str!("../../shaders/gemm_scalar.wgsl")], GEMM),
            Kernel::GemmF16(_) => (&[include_str!("../../shaders/gemm_f16.wgsl")], GEMM),
            Kernel::LayerNorm => (&[COMMON], include_str!("../../shaders/layer_norm.wgsl")),
            Kernel::Attention => (
                &[ATTENTION_IO],
                include_str!("../../shaders/attention.wgsl"),
            ),
            Kernel::AttentionWide => (
                &[COMMON, ATTENTION_IO],
                include_str!("../../shaders/attention_wide.wgsl"),
            ),
            Kernel::Gather => (&[], include_str!("../../shaders/gather.wgsl")),
            Kernel::GemmQ4(_) => (&[include_str!("../../shaders/gemm_q4.wgsl")], GEMM),
            Kernel::GemmQ8(_) => (&[include_str!("../../shaders/gemm_q8.wgsl")], GEMM),
            Kernel::GemmQ8Int(_) => (
                &[include_str!("../../shaders/activation.wgsl")],
                include_str!("../../shaders/gemm_q8_int.wgsl"),
            ),
            Kernel::Q8Range => (&[COMMON], include_str!("../../shaders/q8_range.wgsl")),
            Kernel::Q8Quantize => (&[COMMON], include_str!("../../shaders/q8_quantize.wgsl")),
        };
        let rows = match self.tile_rows() {
            1 => String::new(),
            r => format!("const RM: u32 = {}u;\n", r / 8),
        };
        format!(
            "{directives}{}{}{rows}{}\n{body}",
            self.params(),
            params::constants(),
            helpers.join("\n")
        )
    }
}

impl Pipelines {
    /// Every kernel, the f16 one only when `f16` (its module needs the device feature), the
    /// integer q8 GEMM only with `int_dot`.
    pub fn new(device: &wgpu::Device, f16: bool, int_dot: bool) -> Self {
        let pipelines = Kernel::ALL
            .iter()
            .filter(|k| f16 || !matches!(k, Kernel::GemmF16(_)))
            .filter(|k| int_dot || !k.int_dot())
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

    /// The pipeline of `k`; an error when it was not built (the f16 GEMM without the feature).
    pub fn get(&self, k: Kernel) -> Result<&wgpu::ComputePipeline> {
        let found = self.pipelines.iter().find(|x| x.0 == k);
        found.map(|(_, p)| p).ok_or_else(|| {
            let msg = format!("no `{}` pipeline on this device", k.name());
            Error::gpu(GpuErrorKind::Internal, msg)
        })
    }
}
