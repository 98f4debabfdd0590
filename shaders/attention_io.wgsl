// The attention shaders' buffers (prepended to both): [q|k|v] rows in, per-sequence
// lengths, context rows out.
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> lens: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
