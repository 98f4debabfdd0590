// In-place LayerNorm of each row (RMSNorm where p.centered is 0: no mean subtracted, the
// square root of the mean square): one workgroup of WG invocations per row; the reductions come
// from common.wgsl, with subgroups common_subgroup.wgsl, or on CPU-emulated adapters
// common_lanes.wgsl (four invocations reading consecutive words).
@group(0) @binding(1) var<storage, read> gamma: array<f32>;
@group(0) @binding(2) var<storage, read> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, l: Lanes) {
    let t = l.t;
    let row = row_index(wg);
    if (row >= p.rows) {
        return;
    }
    let o0 = row * p.dim;
    var sum = 0.0;
    for (var c = t; c < p.dim; c += WG) {
        sum += x[o0 + c];
    }
    let mean = select(0.0, reduce_sum(l, sum) / f32(p.dim), p.centered != 0u);
    var sq = 0.0;
    for (var c = t; c < p.dim; c += WG) {
        let d = x[o0 + c] - mean;
        sq += d * d;
    }
    let inv = 1.0 / sqrt(reduce_sum(l, sq) / f32(p.dim) + p.eps);
    for (var c = t; c < p.dim; c += WG) {
        x[o0 + c] = (x[o0 + c] - mean) * inv * gamma[c] + beta[c];
    }
}
