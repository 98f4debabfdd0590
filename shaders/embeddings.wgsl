// out[row] = LayerNorm(word[id] + position[pos] + token_type[type]): one workgroup per token.
// With `gathered`, `word` already holds each token's row (gathered from a split table).
struct Params {
    rows: u32,
    seq_len: u32,
    dim: u32,
    position_offset: u32,
    has_types: u32,
    eps: f32,
    gathered: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> type_ids: array<u32>;
@group(0) @binding(3) var<storage, read> word: array<f32>;
@group(0) @binding(4) var<storage, read> position: array<f32>;
@group(0) @binding(5) var<storage, read> token_type: array<f32>;
@group(0) @binding(6) var<storage, read> gamma: array<f32>;
@group(0) @binding(7) var<storage, read> beta: array<f32>;
@group(0) @binding(8) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let row = row_index(wg);
    if (row >= p.rows) {
        return;
    }
    let w0 = select(ids[row], row, p.gathered != 0u) * p.dim;
    let p0 = (row % p.seq_len + p.position_offset) * p.dim;
    let t0 = type_ids[row] * p.dim;
    let o0 = row * p.dim;
    var sum = 0.0;
    for (var c = t; c < p.dim; c += WG) {
        var v = word[w0 + c] + position[p0 + c];
        if (p.has_types != 0u) {
            v += token_type[t0 + c];
        }
        out[o0 + c] = v;
        sum += v;
    }
    let mean = reduce_sum(t, sum) / f32(p.dim);
    var sq = 0.0;
    for (var c = t; c < p.dim; c += WG) {
        let d = out[o0 + c] - mean;
        sq += d * d;
    }
    let inv = inverseSqrt(reduce_sum(t, sq) / f32(p.dim) + p.eps);
    for (var c = t; c < p.dim; c += WG) {
        out[o0 + c] = (out[o0 + c] - mean) * inv * gamma[c] + beta[c];
    }
}
