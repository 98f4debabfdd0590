// The second pass of a split-K GEMM: out[r][col_off + c] = act(sum_z part[z * m + r][c] +
// bias) + residual, one invocation per output element; the parts are added in order, so the
// result does not depend on scheduling.
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read> residual: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    if (e >= p.m * p.n) {
        return;
    }
    let r = e / p.n;
    let c = e % p.n;
    var v = 0.0;
    for (var z = 0u; z < p.splits; z++) {
        v += part[(z * p.m + r) * p.n + c];
    }
    if (p.has_bias != 0u) {
        v += bias[p.col_off + c];
    }
    v = activate(v);
    let o = r * p.ldo + p.col_off + c;
    if (p.has_residual != 0u) {
        v += residual[o];
    }
    out[o] = v;
}
