// Whole rows, one invocation per output element: mean 0 copies x to out (a pre-norm keeps its
// input), mean 1 writes out[s] = the mean of sequence s's real token rows (lens[s] of seq_len).
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> lens: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    if (e >= p.rows * p.cols) {
        return;
    }
    if (p.mean == 0u) {
        out[e] = x[e];
        return;
    }
    let s = e / p.cols;
    let c = e % p.cols;
    let len = min(lens[s], p.seq_len);
    var sum = 0.0;
    for (var t = 0u; t < len; t++) {
        sum += x[(s * p.seq_len + t) * p.cols + c];
    }
    out[e] = sum / f32(max(len, 1u));
}
