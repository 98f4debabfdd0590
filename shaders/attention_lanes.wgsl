// Self-attention over the fused [q|k|v] rows for CPU-emulated adapters (see gemm_lanes.wgsl):
// one invocation per query row, neighbouring invocations on neighbouring rows of the same
// head, so every lane reads the same key and value word at once (one load, replicated) and
// nothing is shared: no workgroup memory, no barriers. Online softmax over the keys of the
// sequence (keys past its length are never read: the padding mask); head sizes up to
// TILED_HEAD_DIM. Rows past the sequence compute on a clamped row and are not stored.
const HD: u32 = TILED_HEAD_DIM;
const NEG: f32 = -3.0e38;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let h = wg.y;
    let b = wg.z;
    let hd = p.head_dim;
    let ld = 3u * p.hidden;
    let base = b * p.seq_len;
    let len = min(lens[b], p.seq_len);
    let row = wg.x * 64u + lid.x;
    let q0 = (base + min(row, p.seq_len - 1u)) * ld + h * hd;
    var q: array<f32, HD>;
    var acc: array<f32, HD>;
    for (var d = 0u; d < hd; d++) {
        q[d] = qkv[q0 + d];
    }
    var m = NEG;
    var l = 0.0;
    let keys = key_range(row, row, len);
    for (var j = keys.x; j < keys.y; j++) {
        let k0 = (base + j) * ld + p.hidden + h * hd;
        var dot = 0.0;
        for (var d = 0u; d < hd; d++) {
            dot = fma(q[d], qkv[k0 + d], dot);
        }
        dot += relative_terms(h, row, j, q0, k0);
        let s = dot * p.scale + score_bias(h, row, j);
        let m_new = max(m, s);
        let corr = exp_poly(m - m_new);
        let pj = exp_poly(s - m_new);
        l = l * corr + pj;
        m = m_new;
        let v0 = k0 + p.hidden;
        for (var d = 0u; d < hd; d++) {
            acc[d] = fma(pj, qkv[v0 + d], acc[d] * corr);
        }
    }
    if (row < p.seq_len) {
        let inv = select(0.0, 1.0 / l, l > 0.0);
        let o0 = (base + row) * p.hidden + h * hd;
        for (var d = 0u; d < hd; d++) {
            out[o0 + d] = acc[d] * inv;
        }
    }
}
