// A gated MLP's middle, one invocation per output element: out[r][c] = act(x[r][c]) *
// x[r][cols + c], where the input projection wrote [gate | up] side by side.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    if (e >= p.rows * p.cols) {
        return;
    }
    let r = e / p.cols;
    let c = e % p.cols;
    let g = r * 2u * p.cols + c;
    out[e] = activate(x[g]) * x[g + p.cols];
}
