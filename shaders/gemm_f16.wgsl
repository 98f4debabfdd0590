// GEMM with f16 weights (half the memory and bandwidth), widened to f32 on load; k % 4 == 0.
// (`enable f16;` heads the module: directives must come before the generated prelude.)
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> w: array<vec4<f16>>;

fn load_x(r: u32, k: u32) -> vec4<f32> {
    if (r < p.m && k < p.k) {
        return x[(r * p.k + k) / 4u];
    }
    return vec4<f32>();
}

fn load_w(r: u32, k: u32) -> vec4<f32> {
    if (r < p.n && k < p.k) {
        return vec4<f32>(w[(r * p.k + k) / 4u]);
    }
    return vec4<f32>();
}
