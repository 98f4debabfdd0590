// out[m][n0 + n] = act(sum_k x[m][k] * w[n][k] + bias[n0 + n]) + residual[m][n0 + n]
// w is a PyTorch Linear weight [n, k] (or the chunk of its rows starting at n0 = p.col_off),
// so both operands are k-contiguous: tiles are loaded as vec4 along k (`load_x`/`load_w`
// come from the variant prepended to this file: f32 vec4, f16 vec4, or scalar for k % 4 != 0)
// and kept that way in workgroup memory as vec4<OP>; the inner product is a dot of vec4s.
// OP is f32, or f16 with f16 compute: tiles then take half the workgroup memory and the dots
// run in f16, each 4-term dot added to f32 sums.
// Split-K: workgroup z sums k in [z * k_len, (z + 1) * k_len) and writes raw sums to rows
// z * m + r (the bucket then sets no bias, activation or residual, and ldo = n).
// 64x64 output tiles (16x64 for short inputs), 16-deep k slices; each of the 16x8 invocations
// accumulates an RMx4 block in f32 (8x4: 12 vec4 reads from workgroup memory per 128 FMAs),
// on rows lid.y + 8i and columns
// lid.x + 16j, so neighbouring invocations read tile rows 5 vec4s apart (no bank conflicts)
// and store neighbouring columns (coalesced).
// Sizes come from the uniform (`GemmParams` in src/gpu/params.rs), so one pipeline serves
// every shape; edges are bounds-checked.

// RM (rows per invocation) comes from the pipeline: 8 (64-row tiles) or 2 (16-row tiles).
const BM: u32 = 8u * RM;
const BN: u32 = 64u;
const BK: u32 = 16u;
// Row pitch of a tile in workgroup memory, in vec4s: BK / 4 plus one of padding.
const PITCH: u32 = 5u;

var<workgroup> xs: array<vec4<OP>, BM * PITCH>;
var<workgroup> ws: array<vec4<OP>, 320>; // [BN][PITCH]

@compute @workgroup_size(16, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    // Each invocation loads two vec4s of each tile; four neighbours cover 64 bytes of a row.
    var acc: array<vec4<f32>, RM>;
    let k_len = select(p.k, p.k_len, p.k_len != 0u);
    let k_begin = wg.z * k_len;
    let k_end = min(p.k, k_begin + k_len);
    for (var k0 = k_begin; k0 < k_end; k0 += BK) {
        for (var e = t; e < BN * 4u; e += 128u) {
            let li = e / 4u;
            let lk = e % 4u;
            // k_len is a multiple of BK, so a slice never reaches into the next part.
            ws[li * PITCH + lk] = vec4<OP>(load_w(col0 + li, k0 + lk * 4u));
            if (li < BM) {
                xs[li * PITCH + lk] = vec4<OP>(load_x(row0 + li, k0 + lk * 4u));
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK / 4u; kk++) {
            var b: array<vec4<OP>, 4>;
            for (var j = 0u; j < 4u; j++) {
                b[j] = ws[(lid.x + 16u * j) * PITCH + kk];
            }
            for (var i = 0u; i < RM; i++) {
                let a = xs[(lid.y + 8u * i) * PITCH + kk];
                acc[i] += vec4<f32>(vec4<OP>(dot(a, b[0]), dot(a, b[1]), dot(a, b[2]), dot(a, b[3])));
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < RM; i++) {
        for (var j = 0u; j < 4u; j++) {
            write_out(wg.z, row0 + lid.y + 8u * i, col0 + lid.x + 16u * j, acc[i][j]);
        }
    }
}
