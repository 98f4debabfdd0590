// out[r] = x[rows[r] - lo] for rows[r] in [lo, hi), other rows untouched: the first token of
// each sequence, the rows a head was asked for, or the word-embedding rows held by one chunk
// of a table split across buffers.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> rows: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    if (e >= p.rows * p.cols) {
        return;
    }
    let r = e / p.cols;
    let c = e % p.cols;
    let src = rows[r];
    if (src >= p.lo && src < p.hi) {
        out[e] = x[(src - p.lo) * p.cols + c];
    }
}
