// Rotary positions in place on the fused [q | k | v] rows, one invocation per turned pair:
// pair i of a head's first `dim` dimensions ((2i, 2i + 1) interleaved, else (i, i + dim/2))
// turned by the angle of the row's position (table: [positions, dim], cosines then sines).
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let e = gid.x + gid.y * 65535u * 256u;
    let half = p.dim / 2u;
    let per_row = p.parts * p.heads * half;
    if (e >= p.rows * per_row) {
        return;
    }
    let row = e / per_row;
    let head = (e % per_row) / half;
    let i = e % half;
    var a = i;
    var b = i + half;
    if (p.interleaved != 0u) {
        a = 2u * i;
        b = 2u * i + 1u;
    }
    let base = row * 3u * p.heads * p.head_dim + head * p.head_dim;
    let angles = (row % p.seq_len) * p.dim;
    let c = table[angles + i];
    let s = table[angles + half + i];
    let xa = qkv[base + a];
    let xb = qkv[base + b];
    qkv[base + a] = xa * c - xb * s;
    qkv[base + b] = xb * c + xa * s;
}
