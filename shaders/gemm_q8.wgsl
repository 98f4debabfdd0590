// GEMM operands: f32 activations, q8 weights (src/gpu/packed.rs): uint8 codes 4 per u32
// (int8 ones offset by 128, with their zero points), per row of w a (scale, zero point) pair;
// each vec4 is dequantized on load exactly as at import, (code - zp) * scale; k % 4 == 0.
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(6) var<storage, read> wq: array<vec2<f32>>;

fn load_x(r: u32, k: u32) -> vec4<f32> {
    if (r < p.m && k < p.k) {
        return x[(r * p.k + k) / 4u];
    }
    return vec4<f32>();
}

fn load_w(r: u32, k: u32) -> vec4<f32> {
    if (r >= p.n || k >= p.k) {
        return vec4<f32>();
    }
    let word = w[(r * p.k + k) / 4u];
    let codes = vec4<f32>(vec4<u32>(word, word >> 8u, word >> 16u, word >> 24u) & vec4<u32>(255u));
    let q = wq[r];
    return (codes - q.y) * q.x;
}
