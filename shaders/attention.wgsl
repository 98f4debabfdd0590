// Self-attention over the fused [q|k|v] rows, tiled: one workgroup per (16 query rows, head,
// sequence) walks the keys 16 at a time. The K and V tiles sit in workgroup memory, shared by
// the 16 queries; the softmax is online (running max and sum, exp in f32), so scores never
// leave workgroup memory and no [B,H,L,L] buffer exists. Keys past the sequence's length are
// never read: that is the padding mask. Head sizes up to 64 (attention_wide.wgsl above that).
// Q, K and V tiles hold OP: f32, or f16 with f16 compute (4-term dots of q·k in f16 added to
// f32 scores; softmax and the P·V sums in f32).
const BQ: u32 = 16u;
const BK: u32 = 16u;
const HD: u32 = TILED_HEAD_DIM;
// Row stride of the K tile: the 16 lanes read 16 different keys at once, in distinct banks.
const KS: u32 = 65u;
const NEG: f32 = -3.0e38;

var<workgroup> qs: array<OP, 1024>; // BQ x HD
var<workgroup> ks: array<OP, 1040>; // BK x KS
var<workgroup> vs: array<OP, 1024>; // BK x HD
var<workgroup> ss: array<f32, 256>; // BQ x BK scores
var<workgroup> ps: array<f32, 256>; // BQ x BK probabilities
var<workgroup> len_shared: u32;

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let lane = lid.x; // the tile's key for scores; output dims lane + 16c
    let qi = lid.y; // the query row within the block
    let h = wg.y;
    let b = wg.z;
    let hd = p.head_dim;
    let ld = 3u * p.hidden;
    let base = b * p.seq_len;
    if (t == 0u) {
        len_shared = min(lens[b], p.seq_len);
    }
    // Uniform for the barriers in the key loop.
    let len = workgroupUniformLoad(&len_shared);
    for (var e = t; e < BQ * HD; e += 256u) {
        let row = wg.x * BQ + e / HD;
        let d = e % HD;
        var v = 0.0;
        if (row < p.seq_len && d < hd) {
            v = qkv[(base + row) * ld + h * hd + d];
        }
        qs[e] = OP(v);
    }
    var m = NEG;
    var l = 0.0;
    var acc = array<f32, 4>(0.0, 0.0, 0.0, 0.0);
    let first = wg.x * BQ;
    let keys = key_range(first, min(first + BQ, p.seq_len) - 1u, len);
    for (var k0 = keys.x; k0 < keys.y; k0 += BK) {
        workgroupBarrier(); // the previous tile is no longer read
        for (var e = t; e < BK * HD; e += 256u) {
            let key = k0 + e / HD;
            let d = e % HD;
            var kv = 0.0;
            var vv = 0.0;
            if (key < keys.y && d < hd) {
                let o = (base + key) * ld + h * hd + d;
                kv = qkv[o + p.hidden];
                vv = qkv[o + 2u * p.hidden];
            }
            ks[(e / HD) * KS + d] = OP(kv);
            vs[e] = OP(vv);
        }
        workgroupBarrier();
        let valid = k0 + lane < keys.y && in_window(wg.x * BQ + qi, k0 + lane);
        var s = NEG;
        if (valid) {
            // Dimensions past hd are zeros in both tiles, so 4 at a time is exact.
            var dot = 0.0;
            let q0 = qi * HD;
            let kb = lane * KS;
            for (var d = 0u; d < hd; d += 4u) {
                let part = qs[q0 + d] * ks[kb + d] + qs[q0 + d + 1u] * ks[kb + d + 1u]
                    + qs[q0 + d + 2u] * ks[kb + d + 2u] + qs[q0 + d + 3u] * ks[kb + d + 3u];
                dot += f32(part);
            }
            let row = wg.x * BQ + qi;
            let qo = (base + min(row, p.seq_len - 1u)) * ld + h * hd;
            let ko = (base + k0 + lane) * ld + p.hidden + h * hd;
            dot += relative_terms(h, row, k0 + lane, qo, ko);
            s = dot * p.scale + score_bias(h, row, k0 + lane);
        }
        ss[qi * BK + lane] = s;
        workgroupBarrier();
        var tile_max = NEG;
        for (var j = 0u; j < BK; j++) {
            tile_max = max(tile_max, ss[qi * BK + j]);
        }
        let m_new = max(m, tile_max);
        ps[qi * BK + lane] = select(0.0, exp_poly(s - m_new), valid);
        workgroupBarrier();
        let corr = exp_poly(m - m_new);
        m = m_new;
        l *= corr;
        for (var c = 0u; c < 4u; c++) {
            acc[c] *= corr;
        }
        for (var j = 0u; j < BK; j++) {
            let pj = ps[qi * BK + j];
            l += pj;
            for (var c = 0u; c < 4u; c++) {
                acc[c] = fma(pj, f32(vs[j * HD + lane + 16u * c]), acc[c]);
            }
        }
    }
    let row = wg.x * BQ + qi;
    if (row < p.seq_len) {
        let inv = select(0.0, 1.0 / l, l > 0.0);
        let o0 = (base + row) * p.hidden + h * hd;
        for (var c = 0u; c < 4u; c++) {
            let d = lane + 16u * c;
            if (d < hd) {
                out[o0 + d] = acc[c] * inv;
            }
        }
    }
}
