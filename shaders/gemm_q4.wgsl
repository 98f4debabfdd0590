// GEMM operands: f32 activations, q4 weights (src/gpu/packed.rs): codes 8 per u32 along the
// flat [n, k] chunk, f32 scales and 4-bit zero points per block of `p.block` k. Each vec4 of
// weights is dequantized on load exactly as at import, (code - zp) * scale; k % 4 == 0, so
// a vec4 is one half of a u32.
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(6) var<storage, read> scales: array<f32>;
@group(0) @binding(7) var<storage, read> zps: array<u32>;

fn load_x(r: u32, k: u32) -> vec4<f32> {
    if (r < p.m && k < p.k) {
        return x[(r * p.k + k) / 4u];
    }
    return vec4<f32>();
}

fn nibble(words_index: u32) -> u32 {
    return (zps[words_index / 8u] >> (4u * (words_index % 8u))) & 15u;
}

fn load_w(r: u32, k: u32) -> vec4<f32> {
    if (r >= p.n || k >= p.k) {
        return vec4<f32>();
    }
    let flat = r * p.k + k;
    let word = w[flat / 8u] >> (4u * (flat % 8u));
    let codes = vec4<f32>(vec4<u32>(word, word >> 4u, word >> 8u, word >> 12u) & vec4<u32>(15u));
    let blocks = (p.k + p.block - 1u) / p.block;
    let b0 = r * blocks + k / p.block;
    let b3 = r * blocks + (k + 3u) / p.block;
    if (b0 == b3) {
        return (codes - f32(nibble(b0))) * scales[b0];
    }
    // A block boundary inside the vec4 (blocks not a multiple of 4 wide).
    var v: vec4<f32>;
    for (var i = 0u; i < 4u; i++) {
        let b = r * blocks + (k + i) / p.block;
        v[i] = (codes[i] - f32(nibble(b))) * scales[b];
    }
    return v;
}
