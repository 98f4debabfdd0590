//! The compute kernels: every shader variant, which one runs an op under a `KernelChoice`,
//! and the output rows a GEMM kernel's workgroup covers. Their WGSL is in `shader_code.rs`.

use super::context::KernelChoice;
use super::weights::GemmWeights;

/// Widest head the per-row attention kernel takes: on lavapipe it goes wrong with 64-wide
/// heads past ~490 keys (all rows of the layer; cause not found, see docs/performance.md), so
/// wider heads take the tiled kernel there too.
const LANES_HEAD_DIM: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    Embeddings,
    /// GEMM with vec4 loads (`k % 4 == 0`, every real model).
    Gemm(Tile),
    /// GEMM with scalar loads, for any `k`.
    GemmScalar(Tile),
    /// GEMM for CPU-emulated adapters: lanes split k, no workgroup tiles (`k % 4 == 0`).
    GemmLanes,
    /// GEMM with f16 weights (`k % 4 == 0`), on adapters with `shader-f16`; with f16 compute
    /// its tiles and products are f16 (sums f32).
    GemmF16(Tile),
    /// f16 GEMM on cooperative matrices (64x64 tiles), where the adapter has them.
    GemmCoop,
    /// Sums the split-K parts of a GEMM and applies its epilogue.
    GemmReduce,
    LayerNorm,
    /// LayerNorm for CPU-emulated adapters: four lanes per row, no tree reduction.
    LayerNormLanes,
    /// Tiled attention with an online softmax, head sizes up to `TILED_HEAD_DIM`.
    Attention,
    /// One workgroup per query row, for larger heads.
    AttentionWide,
    /// One invocation per query row, nothing shared: for CPU-emulated adapters.
    AttentionLanes,
    /// A gated MLP's `act(gate) * up`.
    Gate,
    /// Rotary positions on Q and K (and V).
    Rotary,
    Gather,
    /// Row copies (a pre-norm's input kept) and per-sequence means of token rows.
    Rows,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    pub(super) fn for_rows(m: usize) -> Tile {
        if m <= 32 {
            Tile::Short
        } else {
            Tile::Tall
        }
    }
}

impl Kernel {
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Embeddings => "embeddings",
            Kernel::Gemm(_) => "gemm",
            Kernel::GemmScalar(_) => "gemm_scalar",
            Kernel::GemmLanes => "gemm_lanes",
            Kernel::GemmF16(_) => "gemm_f16",
            Kernel::GemmCoop => "gemm_coop",
            Kernel::GemmReduce => "gemm_reduce",
            Kernel::LayerNorm => "layer_norm",
            Kernel::LayerNormLanes => "layer_norm_lanes",
            Kernel::Attention => "attention",
            Kernel::AttentionWide => "attention_wide",
            Kernel::AttentionLanes => "attention_lanes",
            Kernel::Gate => "gate",
            Kernel::Rotary => "rotary",
            Kernel::Gather => "gather",
            Kernel::Rows => "rows",
            Kernel::GemmQ4(_) => "gemm_q4",
            Kernel::GemmQ8(_) => "gemm_q8",
            Kernel::GemmQ8Int(_) => "gemm_q8_int",
            Kernel::Q8Range | Kernel::Q8Quantize => "q8_quantize",
        }
    }

    /// Kernels that need WGSL's `packed_4x8_integer_dot_product`.
    pub(super) fn int_dot(self) -> bool {
        matches!(self, Kernel::GemmQ8Int(_))
    }

    pub(super) const ALL: [Kernel; 27] = [
        Kernel::Embeddings,
        Kernel::Gemm(Tile::Tall),
        Kernel::Gemm(Tile::Short),
        Kernel::GemmScalar(Tile::Tall),
        Kernel::GemmScalar(Tile::Short),
        Kernel::GemmLanes,
        Kernel::GemmF16(Tile::Tall),
        Kernel::GemmF16(Tile::Short),
        Kernel::GemmCoop,
        Kernel::GemmReduce,
        Kernel::LayerNorm,
        Kernel::LayerNormLanes,
        Kernel::Attention,
        Kernel::AttentionWide,
        Kernel::AttentionLanes,
        Kernel::Gate,
        Kernel::Rotary,
        Kernel::Gather,
        Kernel::Rows,
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
    pub fn attention(choice: &KernelChoice, head_dim: usize) -> Kernel {
        if head_dim > super::TILED_HEAD_DIM {
            Kernel::AttentionWide
        } else if choice.lanes && head_dim <= LANES_HEAD_DIM {
            Kernel::AttentionLanes
        } else {
            Kernel::Attention
        }
    }

    /// The LayerNorm variant.
    pub fn layer_norm(choice: &KernelChoice) -> Kernel {
        if choice.lanes {
            Kernel::LayerNormLanes
        } else {
            Kernel::LayerNorm
        }
    }

    /// The GEMM over weights `w` with a reduction of `k`, on 64- or 16-row tiles (`short`).
    pub fn gemm_tiled(k: usize, w: GemmWeights, short: bool) -> Kernel {
        let tile = if short { Tile::Short } else { Tile::Tall };
        match w {
            GemmWeights::F16 => Kernel::GemmF16(tile),
            GemmWeights::Q4 => Kernel::GemmQ4(tile),
            GemmWeights::Q8 => Kernel::GemmQ8(tile),
            GemmWeights::Q8Int => Kernel::GemmQ8Int(tile),
            GemmWeights::F32 if k.is_multiple_of(4) => Kernel::Gemm(tile),
            GemmWeights::F32 => Kernel::GemmScalar(tile),
        }
    }

    /// The output rows one workgroup covers, for GEMMs.
    pub fn tile_rows(self) -> usize {
        match self {
            Kernel::Gemm(t) | Kernel::GemmScalar(t) | Kernel::GemmF16(t) => t.rows(),
            Kernel::GemmCoop => 64,
            Kernel::GemmLanes => 4,
            Kernel::GemmQ4(t) | Kernel::GemmQ8(t) | Kernel::GemmQ8Int(t) => t.rows(),
            _ => 1,
        }
    }

    /// Whether the device runs this kernel (its features are on).
    pub(super) fn available(self, choice: &KernelChoice) -> bool {
        match self {
            Kernel::GemmF16(_) => choice.f16_weights,
            Kernel::GemmCoop => choice.coop.is_some(),
            _ => true,
        }
    }
}
