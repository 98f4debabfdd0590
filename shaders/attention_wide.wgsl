// Self-attention for head sizes above 64 (attention.wgsl tiles the common ones): one workgroup
// per (query row, head, sequence) over the fused [q|k|v] rows. Scores live in workgroup memory
// only; keys past the sequence's real length are never read (the padding mask). Two-pass softmax
// with exp in f32.
var<workgroup> scores: array<f32, MAX_SEQ>;
var<workgroup> q: array<f32, MAX_HEAD_DIM>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, lanes: Lanes) {
    let t = lanes.t;
    let i = wg.x;
    let h = wg.y;
    let b = wg.z;
    let len = min(lens[b], MAX_SEQ);
    let ld = 3u * p.hidden;
    let row = b * p.seq_len + i;
    let q0 = row * ld + h * p.head_dim;
    let o0 = row * p.hidden + h * p.head_dim;
    for (var d = t; d < p.head_dim; d += WG) {
        q[d] = qkv[q0 + d];
    }
    workgroupBarrier();
    var m = -3.0e38;
    let keys = key_range(i, i, len);
    for (var j = t; j < len; j += WG) {
        let k0 = (b * p.seq_len + j) * ld + p.hidden + h * p.head_dim;
        var s = 0.0;
        for (var d = 0u; d < p.head_dim; d++) {
            s = fma(q[d], qkv[k0 + d], s);
        }
        s += relative_terms(h, i, j, q0, k0);
        s = s * p.scale + score_bias(h, i, j);
        if (j < keys.x || j >= keys.y) {
            s = -3.0e38;
        }
        scores[j] = s;
        m = max(m, s);
    }
    m = reduce_max(lanes, m);
    var sum = 0.0;
    for (var j = t; j < len; j += WG) {
        let e = select(0.0, exp_poly(scores[j] - m), j >= keys.x && j < keys.y);
        scores[j] = e;
        sum += e;
    }
    sum = reduce_sum(lanes, sum);
    let inv = select(0.0, 1.0 / sum, len > 0u);
    for (var d = t; d < p.head_dim; d += WG) {
        var acc = 0.0;
        for (var j = 0u; j < len; j++) {
            acc = fma(scores[j], qkv[(b * p.seq_len + j) * ld + 2u * p.hidden + h * p.head_dim + d], acc);
        }
        out[o0 + d] = acc * inv;
    }
}
