//! The uniforms of each kernel, declared once: the `uniforms!` macro makes the Rust struct
//! that is written to the GPU and the WGSL struct the shader reads from the same field list,
//! and the shared constants are written into every shader's prelude from the Rust values, so
//! the two sides cannot drift.

use crate::model::Activation;

/// Field types a uniform may have, with their WGSL names.
pub trait Wgsl {
    const NAME: &'static str;
}

impl Wgsl for u32 {
    const NAME: &'static str = "u32";
}

impl Wgsl for f32 {
    const NAME: &'static str = "f32";
}

macro_rules! uniforms {
    ($($(#[$doc:meta])* $name:ident { $($(#[$fdoc:meta])* $field:ident: $ty:ty),* $(,)? })*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            $($(#[$fdoc])* pub $field: $ty),*
        }

        impl $name {
            /// The WGSL declaration of this struct as `Params`, bound at 0 as `p`.
            pub fn wgsl() -> String {
                let fields: Vec<String> =
                    vec![$(format!("    {}: {},", stringify!($field), <$ty as Wgsl>::NAME)),*];
                format!(
                    "struct Params {{\n{}\n}}\n@group(0) @binding(0) var<uniform> p: Params;\n",
                    fields.join("\n")
                )
            }
        }
    )*};
}

uniforms! {
    /// `out[row] = word[id] + position[pos] + token_type[type]` (the LayerNorm follows).
    EmbeddingsParams {
        rows: u32,
        seq_len: u32,
        dim: u32,
        position_offset: u32,
        has_types: u32,
        /// `word` holds each token's row already (gathered from a split table).
        gathered: u32,
        has_position: u32,
    }
    /// `out[m][col_off + n] = act(x · wᵀ + bias) + residual` over one chunk of w's rows.
    GemmParams {
        m: u32,
        n: u32,
        k: u32,
        act: u32,
        has_bias: u32,
        has_residual: u32,
        /// Row stride of out and residual.
        ldo: u32,
        /// The output column this chunk of w starts at.
        col_off: u32,
        /// The reduction of one split-K part (workgroup z); 0: all of `k`. With parts, each
        /// writes its raw sums to rows `z * m + r` of a scratch buffer (`GemmReduce` adds them).
        k_len: u32,
        /// The block width of q4 weights (GEMMs on packed weights, `packed.rs`); 0 otherwise.
        block: u32,
    }
    /// `out[m][col_off + n] = act(sum_z part[z * m + r][n] + bias) + residual`.
    GemmReduceParams {
        m: u32,
        n: u32,
        splits: u32,
        act: u32,
        has_bias: u32,
        has_residual: u32,
        ldo: u32,
        col_off: u32,
    }
    /// Activations quantized as `DynamicQuantizeLinear` per row group (`kind`: 0 a sequence's
    /// tokens, 1 single rows, 2 a sequence's picked rows) for the integer q8 GEMM.
    Q8Params {
        rows: u32,
        k: u32,
        seq_len: u32,
        kind: u32,
    }
    /// `centered` 0: RMSNorm (no mean subtracted).
    LayerNormParams {
        rows: u32,
        dim: u32,
        eps: f32,
        centered: u32,
    }
    /// `softmax(q·k * scale + bias[h][j - i + bias_center])·v`; `bias_width` 0: no bias.
    AttentionParams {
        seq_len: u32,
        heads: u32,
        head_dim: u32,
        hidden: u32,
        scale: f32,
        bias_width: u32,
        bias_center: u32,
        /// DeBERTa's terms: the distance `i - j` of row `rel_index[i - j + rel_center]` of
        /// the projected relative embeddings; `has_c2p` / `has_p2c` 0: without.
        rel_center: u32,
        has_c2p: u32,
        has_p2c: u32,
        /// A sliding window: query `i` sees keys with `|i - j| <= window` (`has_window` 1).
        has_window: u32,
        window: u32,
    }
    /// Rotary positions: `rows` token rows of `seq_len` per sequence; `parts` of Q, K, V.
    RotaryParams {
        rows: u32,
        seq_len: u32,
        heads: u32,
        head_dim: u32,
        dim: u32,
        interleaved: u32,
        parts: u32,
    }
    /// A gated MLP's middle: `out[r][c] = act(x[r][c]) * x[r][cols + c]`.
    GateParams {
        rows: u32,
        cols: u32,
        act: u32,
    }
    /// `mean` 0: `out[r] = x[r]`; 1: `out[s]` = the mean of sequence `s`'s real rows.
    RowsParams {
        rows: u32,
        cols: u32,
        seq_len: u32,
        mean: u32,
    }
    /// `out[r] = x[rows[r] - lo]` for `rows[r]` in `[lo, hi)`.
    GatherParams {
        rows: u32,
        cols: u32,
        lo: u32,
        hi: u32,
    }
}

/// The code a shader gives an activation.
pub fn act_code(a: Activation) -> u32 {
    match a {
        Activation::None => 0,
        Activation::Gelu => 1,
        Activation::GeluTanh => 2,
        Activation::Relu => 3,
        Activation::Tanh => 4,
        Activation::Silu => 5,
    }
}

/// The constants every shader may use, from their Rust values.
pub fn constants() -> String {
    let acts = [
        ("ACT_NONE", Activation::None),
        ("ACT_GELU", Activation::Gelu),
        ("ACT_GELU_TANH", Activation::GeluTanh),
        ("ACT_RELU", Activation::Relu),
        ("ACT_TANH", Activation::Tanh),
        ("ACT_SILU", Activation::Silu),
    ];
    let mut out: String = (acts.iter())
        .map(|(name, a)| format!("const {name}: u32 = {}u;\n", act_code(*a)))
        .collect();
    out += &format!("const MAX_SEQ: u32 = {}u;\n", super::MAX_SEQ);
    out += &format!("const MAX_HEAD_DIM: u32 = {}u;\n", super::MAX_HEAD_DIM);
    out += &format!("const TILED_HEAD_DIM: u32 = {}u;\n", super::TILED_HEAD_DIM);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wgsl_struct_lists_the_rust_fields_in_order() {
        assert_eq!(
            LayerNormParams::wgsl(),
            "struct Params {\n    rows: u32,\n    dim: u32,\n    eps: f32,\n    centered: u32,\n}\n\
             @group(0) @binding(0) var<uniform> p: Params;\n"
        );
        assert_eq!(std::mem::size_of::<GemmParams>(), 40);
    }
}
