// In-place LayerNorm of each row, for CPU-emulated adapters (see gemm_lanes.wgsl): one
// workgroup of four invocations per row, the lanes of one SIMD register, reading consecutive
// words; their partial sums meet in workgroup memory (the barriers switch no other context).
@group(0) @binding(1) var<storage, read> gamma: array<f32>;
@group(0) @binding(2) var<storage, read> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;

var<workgroup> part: array<f32, 4>;

fn lanes_sum(lane: u32, v: f32) -> f32 {
    part[lane] = v;
    workgroupBarrier();
    let s = (part[0] + part[1]) + (part[2] + part[3]);
    workgroupBarrier();
    return s;
}

@compute @workgroup_size(4)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let lane = lid.x;
    let row = row_index(wg);
    if (row >= p.rows) {
        return;
    }
    let o0 = row * p.dim;
    var sum = 0.0;
    for (var c = lane; c < p.dim; c += 4u) {
        sum += x[o0 + c];
    }
    let mean = lanes_sum(lane, sum) / f32(p.dim);
    var sq = 0.0;
    for (var c = lane; c < p.dim; c += 4u) {
        let d = x[o0 + c] - mean;
        sq += d * d;
    }
    let inv = inverseSqrt(lanes_sum(lane, sq) / f32(p.dim) + p.eps);
    for (var c = lane; c < p.dim; c += 4u) {
        x[o0 + c] = (x[o0 + c] - mean) * inv * gamma[c] + beta[c];
    }
}
