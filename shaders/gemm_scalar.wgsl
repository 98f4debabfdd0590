// GEMM operands as scalars, for k that is not a multiple of 4 (tiny test models).
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;

fn load4(r: u32, k: u32, rows: u32, isx: bool) -> vec4<f32> {
    var v = vec4<f32>();
    if (r < rows) {
        for (var c = 0u; c < 4u; c++) {
            if (k + c < p.k) {
                if (isx) {
                    v[c] = x[r * p.k + k + c];
                } else {
                    v[c] = w[r * p.k + k + c];
                }
            }
        }
    }
    return v;
}

fn load_x(r: u32, k: u32) -> vec4<f32> {
    return load4(r, k, p.m, true);
}

fn load_w(r: u32, k: u32) -> vec4<f32> {
    return load4(r, k, p.n, false);
}
