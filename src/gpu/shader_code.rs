//! Each kernel's WGSL module, put together from `shaders/`: directives, the generated
//! uniforms and constants (`params.rs`), the shared helpers it uses, then its own code.

use super::context::KernelChoice;
use super::kernels::Kernel;
use super::params::{
    self, AttentionParams, EmbeddingsParams, GateParams, GatherParams, GemmParams,
    GemmReduceParams, LayerNormParams, Q8Params, RotaryParams, RowsParams,
};

const COMMON: &str = include_str!("../../shaders/common.wgsl");
const COMMON_SUBGROUP: &str = include_str!("../../shaders/common_subgroup.wgsl");
const COMMON_LANES: &str = include_str!("../../shaders/common_lanes.wgsl");
const MATH: &str = include_str!("../../shaders/math.wgsl");
const ACTIVATION: &str = concat!(
    include_str!("../../shaders/math.wgsl"),
    include_str!("../../shaders/activation.wgsl")
);
const GEMM: &str = include_str!("../../shaders/gemm.wgsl");
const GEMM_OUT: &str = include_str!("../../shaders/gemm_out.wgsl");
const ATTENTION_IO: &str = concat!(
    include_str!("../../shaders/math.wgsl"),
    include_str!("../../shaders/attention_io.wgsl")
);

impl Kernel {
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
            Kernel::Q8Quantize => (
                &[COMMON, MATH],
                include_str!("../../shaders/q8_quantize.wgsl"),
            ),
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
}

#[cfg(all(test, not(target_arch = "wasm32")))]
pub(super) mod tests {
    use super::*;
    use wgpu::naga;

    /// A hardware adapter's choice with f16 weights, the other capabilities as given.
    pub(in crate::gpu) fn choice(
        subgroups: bool,
        f16_compute: bool,
        coop: Option<u32>,
    ) -> KernelChoice {
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
}
