// out[row] = word[id] + position[pos] + token_type[type] (the last two optional), one
// invocation per element; the shared LayerNorm pass follows. With `gathered`, `word` already
// holds each token's row (gathered from a split table).
@group(0) @binding(1) var<storage, read> ids: array<u32>;
@group(0) @binding(2) var<storage, read> type_ids: array<u32>;
@group(0) @binding(3) var<storage, read> word: array<f32>;
@group(0) @binding(4) var<storage, read> position: array<f32>;
@group(0) @binding(5) var<storage, read> token_type: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    if (e >= p.rows * p.dim) {
        return;
    }
    let row = e / p.dim;
    let c = e % p.dim;
    let w0 = select(ids[row], row, p.gathered != 0u) * p.dim;
    let p0 = (row % p.seq_len + p.position_offset) * p.dim;
    var v = word[w0 + c];
    if (p.has_position != 0u) {
        v += position[p0 + c];
    }
    if (p.has_types != 0u) {
        v += token_type[type_ids[row] * p.dim + c];
    }
    out[e] = v;
}
