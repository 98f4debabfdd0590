// The attention shaders' uniforms and buffers (prepended to both): [q|k|v] rows in, per-sequence
// lengths, context rows out.
struct Params {
    seq_len: u32,
    heads: u32,
    head_dim: u32,
    hidden: u32,
    scale: f32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> lens: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
