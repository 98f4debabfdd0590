// The attention shaders' buffers (prepended to each): [q|k|v] rows in, per-sequence
// lengths, context rows out, and the distance bias table (a dummy when bias_width is 0).
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> lens: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> distance_bias: array<f32>;

// What is added to the scaled score of query `row` and key `key` of head `h`.
fn score_bias(h: u32, row: u32, key: u32) -> f32 {
    if (p.bias_width == 0u) {
        return 0.0;
    }
    // Rows past the sequence (computed, never stored) read the last real row's entries.
    return distance_bias[h * p.bias_width + p.bias_center + key - min(row, p.bias_center)];
}
