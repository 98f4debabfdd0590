//! Compute pipelines, built once per device from the WGSL in `shaders/`.

use super::context::KernelChoice;
use super::params::{
    self, AttentionParams, EmbeddingsParams, GateParams, GatherParams, GemmParams,
    GemmReduceParams, LayerNormParams, Q8Params, RotaryParams, RowsParams,
};
use crate::error::{Error, GpuErrorKind, Result};

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const COMMON_SUBGROUP: &str = include_str!("../../shaders/common_subgroup.wgsl");
const COMMON_LANES: &str = include_str!("../../shaders/common_lanes.wgsl");
const ACTIVATION: &str = include_str!("../../shaders/activation.wgsl");
const GEMM: &str = include_str!("../../shaders/gemm.wgsl");
const GEMM_OUT: &str = include_str!("../../shaders/gemm_out.wgsl");
const ATTENTION_IO: &str = include_str!("../../shaders/attention_io.wgsl");

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
    fn int_dot(self) -> bool {
        matches!(self, Kernel::GemmQ8Int(_))
    }

    const ALL: [Kernel; 27] = [
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

    /// The WGSL of this kernel's uniforms (see `params.rs`).
    fn params(self) -> String {
        match self {
            Kernel::Embeddings => EmbeddingsParams::wgsl(),
            Kernel::Gemm(_)
            | Kernel::GemmScalar(_)
            | Kernel::GemmLanes
            | Kernel::GemmF16(_)
            | Kernel::GemmCoop
            | Kernel::GemmQ4(_)
            | Kernel::GemmQ8(_)
            | Kernel::GemmQ8Int(_) => GemmParams::wgsl(),
            Kernel::GemmReduce => GemmReduceParams::wgsl(),
            Kernel::LayerNorm | Kernel::LayerNormLanes => LayerNormParams::wgsl(),
            Kernel::Attention | Kernel::AttentionWide | Kernel::AttentionLanes => {
                AttentionParams::wgsl()
            }
            Kernel::Gate => GateParams::wgsl(),
            Kernel::Rotary => RotaryParams::wgsl(),
            Kernel::Gather => GatherParams::wgsl(),
            Kernel::Rows => RowsParams::wgsl(),
            Kernel::Q8Range | Kernel::Q8Quantize => Q8Params::wgsl(),
        }
    }

    /// The shader: directives, the generated uniforms and constants (GEMMs also get their
    /// rows per invocation, `RM`, 8 of them down a tile; f16-capable kernels their operand
    /// type `OP`), the shared helpers it uses, then its own code; each part only uses what
    /// an earlier one declares. `choice` picks the variant (subgroup reductions, f16 compute).
    pub(super) fn code(self, choice: &KernelChoice) -> String {
        let f16_ops = choice.f16_compute
            && matches!(
                self,
                Kernel::GemmF16(_) | Kernel::GemmQ4(_) | Kernel::GemmQ8(_) | Kernel::Attention
            );
        let subgroups =
            choice.subgroups && matches!(self, Kernel::LayerNorm | Kernel::AttentionWide);
        let mut directives = String::new();
        if matches!(self, Kernel::GemmF16(_) | Kernel::GemmCoop) || f16_ops {
            directives += "enable f16;\n";
        }
        // No `enable subgroups;`: naga 30 rejects the directive and gates subgroup operations
        // by the device feature instead (wgpu offers them natively only).
        if self == Kernel::GemmCoop {
            directives += "enable wgpu_cooperative_matrix;\n";
        }
        let common = if subgroups { COMMON_SUBGROUP } else { COMMON };
        let f16_loads = include_str!("../../shaders/gemm_f16.wgsl");
        let (helpers, body): (&[&str], &str) = match self {
            Kernel::Embeddings => (&[], include_str!("../../shaders/embeddings.wgsl")),
            Kernel::Gemm(_) => (
                &[
                    ACTIVATION,
                    GEMM_OUT,
                    include_str!("../../shaders/gemm_vec4.wgsl"),
                ],
                GEMM,
            ),
            Kernel::GemmScalar(_) => (
                &[
                    ACTIVATION,
                    GEMM_OUT,
                    include_str!("../../shaders/gemm_scalar.wgsl"),
                ],
                GEMM,
            ),
            Kernel::GemmLanes => (
                &[ACTIVATION, GEMM_OUT],
                include_str!("../../shaders/gemm_lanes.wgsl"),
            ),
            Kernel::GemmF16(_) => (&[ACTIVATION, GEMM_OUT, f16_loads], GEMM),
            Kernel::GemmCoop => (
                &[ACTIVATION, GEMM_OUT, f16_loads],
                include_str!("../../shaders/gemm_coop.wgsl"),
            ),
            Kernel::GemmReduce => (
                &[ACTIVATION],
                include_str!("../../shaders/gemm_reduce.wgsl"),
            ),
            Kernel::LayerNorm => (&[common], include_str!("../../shaders/layer_norm.wgsl")),
            Kernel::LayerNormLanes => (
                &[COMMON_LANES],
                include_str!("../../shaders/layer_norm.wgsl"),
            ),
            Kernel::Attention => (
                &[ATTENTION_IO],
                include_str!("../../shaders/attention.wgsl"),
            ),
            Kernel::AttentionWide => (
                &[common, ATTENTION_IO],
                include_str!("../../shaders/attention_wide.wgsl"),
            ),
            Kernel::AttentionLanes => (
                &[ATTENTION_IO],
                include_str!("../../shaders/attention_lanes.wgsl"),
            ),
            Kernel::Gate => (&[ACTIVATION], include_str!("../../shaders/gate.wgsl")),
            Kernel::Rotary => (&[], include_str!("../../shaders/rotary.wgsl")),
            Kernel::Gather => (&[], include_str!("../../shaders/gather.wgsl")),
            Kernel::Rows => (&[], include_str!("../../shaders/rows.wgsl")),
            Kernel::GemmQ4(_) => (
                &[
                    ACTIVATION,
                    GEMM_OUT,
                    include_str!("../../shaders/gemm_q4.wgsl"),
                ],
                GEMM,
            ),
            Kernel::GemmQ8(_) => (
                &[
                    ACTIVATION,
                    GEMM_OUT,
                    include_str!("../../shaders/gemm_q8.wgsl"),
                ],
                GEMM,
            ),
            Kernel::GemmQ8Int(_) => (
                &[ACTIVATION, GEMM_OUT],
                include_str!("../../shaders/gemm_q8_int.wgsl"),
            ),
            Kernel::Q8Range => (&[COMMON], include_str!("../../shaders/q8_range.wgsl")),
            Kernel::Q8Quantize => (&[COMMON], include_str!("../../shaders/q8_quantize.wgsl")),
        };
        let mut consts = match self.tile_rows() {
            _ if self == Kernel::GemmLanes => String::new(),
            1 => String::new(),
            r => format!("const RM: u32 = {}u;\n", r / 8),
        };
        if matches!(
            self,
            Kernel::Gemm(_)
                | Kernel::GemmScalar(_)
                | Kernel::GemmF16(_)
                | Kernel::GemmQ4(_)
                | Kernel::GemmQ8(_)
                | Kernel::Attention
        ) {
            consts += &format!("alias OP = {};\n", if f16_ops { "f16" } else { "f32" });
        }
        if self == Kernel::GemmCoop {
            consts += &format!("const SG: u32 = {}u;\n", choice.coop.unwrap_or(32));
        }
        format!(
            "{directives}{}{}{consts}{}\n{body}",
            self.params(),
            params::constants(),
            helpers.join("\n")
        )
    }

    /// Whether the device runs this kernel (its features are on).
    fn available(self, choice: &KernelChoice) -> bool {
        match self {
            Kernel::GemmF16(_) => choice.f16_weights,
            Kernel::GemmCoop => choice.coop.is_some(),
            _ => true,
        }
    }
}

/// What a GEMM's weights are on the GPU: f32, f16, or packed low-bit codes (`packed.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GemmWeights {
    F32,
    F16,
    Q4,
    Q8,
    Q8Int,
}

impl GemmWeights {
    pub fn of(w: &super::weights::GpuWeight) -> GemmWeights {
        use super::packed::Packed;
        match w.packed {
            Packed::Q4 => GemmWeights::Q4,
            Packed::Q8 => GemmWeights::Q8,
            Packed::Q8Int => GemmWeights::Q8Int,
            Packed::None if w.f16 => GemmWeights::F16,
            Packed::None => GemmWeights::F32,
        }
    }

    /// Whether its reduction can be split: the integer q8 GEMM needs whole sums for its
    /// zero-point corrections.
    pub fn splits(self) -> bool {
        self != GemmWeights::Q8Int
    }
}

/// How one GEMM is dispatched: its kernel, the workgroup grid over (columns, rows) and the
/// number of parts its reduction is split into (`> 1`: partial sums, then `GemmReduce`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GemmPlan {
    pub kernel: Kernel,
    pub split_k: u32,
}

/// Workgroups a hardware GPU wants in flight per GEMM before it is worth splitting the
/// reduction: a large GPU has ~100+ compute units, each holding several workgroups.
const HARDWARE_GROUPS: usize = 512;
/// The shortest reduction one split part is given.
pub const MIN_SPLIT_K: usize = 128;

impl GemmPlan {
    /// The tiling of an `m × n` GEMM over a reduction of `k` on weights `w`, by the options'
    /// fixed tiling or by rule: 16-row tiles for short inputs; on hardware GPUs, cooperative
    /// matrices when on (f16 weights), then 16-row tiles and split-K until the grid fills a
    /// large GPU (`HARDWARE_GROUPS`); CPU-emulated adapters keep whole tiles (one thread per
    /// core already has enough workgroups).
    pub fn choose(choice: &KernelChoice, m: usize, n: usize, k: usize, w: GemmWeights) -> GemmPlan {
        let splits_for = |groups: usize| -> u32 {
            let mut s = 1;
            while w.splits() && groups * s < HARDWARE_GROUPS && k / (2 * s) >= MIN_SPLIT_K {
                s *= 2;
            }
            s as u32
        };
        if let Some(t) = choice.tile {
            let split_k = match w.splits() {
                true => t.split_k.min(k.div_ceil(32) as u32).max(1),
                false => 1,
            };
            let kernel = Kernel::gemm_tiled(k, w, t.short);
            return GemmPlan { kernel, split_k };
        }
        if w == GemmWeights::F16 && choice.coop.is_some() && m > 32 {
            let groups = n.div_ceil(64) * m.div_ceil(64);
            let split_k = splits_for(groups);
            return GemmPlan {
                kernel: Kernel::GemmCoop,
                split_k,
            };
        }
        let kernel = Kernel::gemm_tiled(k, w, Tile::for_rows(m) == Tile::Short);
        if choice.lanes && kernel == Kernel::Gemm(Tile::for_rows(m)) {
            return GemmPlan {
                kernel: Kernel::GemmLanes,
                split_k: 1,
            };
        }
        if !choice.hardware {
            return GemmPlan { kernel, split_k: 1 };
        }
        let short = m <= 32 || n.div_ceil(64) * m.div_ceil(64) < HARDWARE_GROUPS;
        let kernel = Kernel::gemm_tiled(k, w, short);
        let groups = n.div_ceil(64) * m.div_ceil(kernel.tile_rows());
        GemmPlan {
            kernel,
            split_k: splits_for(groups),
        }
    }

    /// The (x, y, z) workgroup grid: column tiles, row tiles, split parts.
    pub fn groups(&self, m: usize, n: usize) -> [u32; 3] {
        [
            n.div_ceil(64) as u32,
            m.div_ceil(self.kernel.tile_rows()) as u32,
            self.split_k,
        ]
    }

    /// The reduction each part covers: a multiple of the kernels' 32-deep k slices.
    pub fn k_len(&self, k: usize) -> usize {
        k.div_ceil(self.split_k as usize).next_multiple_of(32)
    }

    /// `gemm_f16 16x64 split 4`, for `bench`.
    pub fn describe(&self) -> String {
        let tile = match self.kernel.tile_rows() {
            1 => String::new(),
            r => format!(" {r}x64"),
        };
        let split = match self.split_k {
            1 => String::new(),
            s => format!(" split-k {s}"),
        };
        format!("{}{tile}{split}", self.kernel.name())
    }
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

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::super::context::TileChoice;
    use super::*;
    use wgpu::naga;

    fn choice(subgroups: bool, f16_compute: bool, coop: Option<u32>) -> KernelChoice {
        KernelChoice {
            f16_weights: true,
            f16_compute,
            subgroups,
            coop,
            tile: None,
            hardware: true,
            lanes: false,
            tune: false,
        }
    }

    /// Parses and validates `k`'s module with every capability on, then writes it as SPIR-V
    /// (what Vulkan drivers receive), so variants no local adapter runs are still checked.
    fn check(k: Kernel, c: &KernelChoice) {
        let code = k.code(c);
        let module = naga::front::wgsl::parse_str(&code)
            .unwrap_or_else(|e| panic!("{}: {}\n{code}", k.name(), e.emit_to_string(&code)));
        let mut validator = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        );
        let info = validator
            .validate(&module)
            .unwrap_or_else(|e| panic!("{}: {}", k.name(), e.emit_to_string(&code)));
        let options = naga::back::spv::Options {
            lang_version: (1, 6),
            ..Default::default()
        };
        naga::back::spv::write_vec(&module, &info, &options, None)
            .unwrap_or_else(|e| panic!("{}: SPIR-V: {e}", k.name()));
    }

    #[test]
    fn every_kernel_variant_validates() {
        for (subgroups, f16) in [(false, false), (true, false), (false, true), (true, true)] {
            let c = choice(subgroups, f16, None);
            for k in Kernel::ALL.iter().filter(|k| k.available(&c)) {
                check(*k, &c);
            }
        }
    }

    #[test]
    fn the_cooperative_matrix_gemm_validates_for_each_subgroup_size() {
        for size in [32, 64] {
            let c = choice(true, true, Some(size));
            let code = Kernel::GemmCoop.code(&c);
            assert!(
                code.contains("coopMultiplyAdd") && code.contains(&format!("SG: u32 = {size}u"))
            );
            check(Kernel::GemmCoop, &c);
        }
    }

    const F32: GemmWeights = GemmWeights::F32;
    const F16: GemmWeights = GemmWeights::F16;

    #[test]
    fn packed_weights_take_the_same_tiling_rule() {
        let c = choice(false, false, None);
        // bert-base q4 at 1 x 128 tokens: split like f32 (same GEMM body); integer q8 only
        // takes short tiles (its zero-point corrections need whole sums).
        let f32 = GemmPlan::choose(&c, 128, 768, 3072, F32);
        let q4 = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q4);
        assert_eq!(
            (q4.kernel, q4.split_k),
            (Kernel::GemmQ4(Tile::Short), f32.split_k)
        );
        let q8 = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q8Int);
        assert_eq!((q8.kernel, q8.split_k), (Kernel::GemmQ8Int(Tile::Short), 1));
        let q8 = GemmPlan::choose(&c, 4096, 768, 768, GemmWeights::Q8);
        assert_eq!((q8.kernel, q8.split_k), (Kernel::GemmQ8(Tile::Tall), 1));
    }

    #[test]
    fn gemms_split_only_on_hardware_and_only_long_reductions() {
        let mut c = choice(false, false, None);
        // bert-base at 1 x 128 tokens: 16-row tiles and split-K fill a large GPU.
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!(p.kernel, Kernel::Gemm(Tile::Short));
        assert!(p.split_k > 1 && p.k_len(3072) >= MIN_SPLIT_K, "{p:?}");
        let groups = p.groups(128, 768);
        assert!((groups[0] * groups[1] * groups[2]) as usize >= HARDWARE_GROUPS);
        // A large batch has enough tiles already.
        let p = GemmPlan::choose(&c, 4096, 768, 768, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::Gemm(Tile::Tall), 1));
        // Never split a reduction too short to share.
        assert_eq!(GemmPlan::choose(&c, 128, 64, 64, F32).split_k, 1);
        // CPU-emulated adapters: the plain rule, or the lanes GEMM for f32 with k % 4 == 0.
        c.hardware = false;
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::Gemm(Tile::Tall), 1));
        c.lanes = true;
        let p = GemmPlan::choose(&c, 128, 768, 3072, F32);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmLanes, 1));
        assert_eq!(p.groups(128, 768), [12, 32, 1]);
        for (k, w) in [(3071, F32), (3072, F16), (3072, GemmWeights::Q4)] {
            assert_ne!(
                GemmPlan::choose(&c, 128, 768, k, w).kernel,
                Kernel::GemmLanes
            );
        }
        c.lanes = false;
        // A fixed tiling wins, split at most once per 32-deep slice.
        c.tile = Some("16:4".parse().unwrap());
        let p = GemmPlan::choose(&c, 128, 768, 40, F16);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmF16(Tile::Short), 2));
        assert_eq!(p.describe(), "gemm_f16 16x64 split-k 2");
        let p = GemmPlan::choose(&c, 128, 768, 3072, GemmWeights::Q8Int);
        assert_eq!((p.kernel, p.split_k), (Kernel::GemmQ8Int(Tile::Short), 1));
        assert!("32".parse::<TileChoice>().is_err() && "64:0".parse::<TileChoice>().is_err());
    }
}
