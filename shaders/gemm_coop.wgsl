// out[m][n0 + n] = act(sum_k x[m][k] * w[n][k] + bias[n0 + n]) + residual[m][n0 + n] on
// cooperative matrices (tensor cores): 64x64 output tiles, 32-deep k slices staged in
// workgroup memory as f16 (x widened from f32 activations, w from f16 weights), f32
// accumulators. The workgroup is four subgroups of SG invocations (a fixed size, given at
// pipeline creation); each owns a 32x32 quarter of the tile as 2x2 16x16 fragments.
// Split-K as in gemm.wgsl: workgroup z sums k in [z * k_len, (z + 1) * k_len) into rows
// z * m + r. The loads (`load_x`/`load_w`) come from gemm_f16.wgsl.

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 32u;
const THREADS: u32 = 4u * SG;

var<workgroup> xs: array<f16, 2048>; // [BM][BK]: A, row-major
var<workgroup> ws: array<f16, 2048>; // [BN][BK]: B = wᵀ, column-major
var<workgroup> cs: array<f32, 1024>; // one 16x16 fragment per subgroup, for the epilogue

@compute @workgroup_size(THREADS)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let qr = (sg / 2u) * 32u;
    let qc = (sg % 2u) * 32u;
    var c00 = coop_mat16x16<f32, C>();
    var c01 = coop_mat16x16<f32, C>();
    var c10 = coop_mat16x16<f32, C>();
    var c11 = coop_mat16x16<f32, C>();
    let k_len = select(p.k, p.k_len, p.k_len != 0u);
    let k_begin = wg.z * k_len;
    let k_end = min(p.k, k_begin + k_len);
    for (var k0 = k_begin; k0 < k_end; k0 += BK) {
        for (var e = t; e < BM * BK / 4u; e += THREADS) {
            let r = e / (BK / 4u);
            let kq = (e % (BK / 4u)) * 4u;
            let xv = vec4<f16>(load_x(row0 + r, k0 + kq));
            let wv = vec4<f16>(load_w(col0 + r, k0 + kq));
            let o = r * BK + kq;
            for (var i = 0u; i < 4u; i++) {
                xs[o + i] = xv[i];
                ws[o + i] = wv[i];
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&xs[qr * BK + kk], BK);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&xs[(qr + 16u) * BK + kk], BK);
            let b0 = coopLoad<coop_mat16x16<f16, B>>(&ws[qc * BK + kk], BK);
            let b1 = coopLoad<coop_mat16x16<f16, B>>(&ws[(qc + 16u) * BK + kk], BK);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c11 = coopMultiplyAdd(a1, b1, c11);
        }
        workgroupBarrier();
    }
    let stage = sg * 256u;
    for (var f = 0u; f < 4u; f++) {
        switch f {
            case 0u: { coopStoreT(c00, &cs[stage], 16u); }
            case 1u: { coopStoreT(c01, &cs[stage], 16u); }
            case 2u: { coopStoreT(c10, &cs[stage], 16u); }
            default: { coopStoreT(c11, &cs[stage], 16u); }
        }
        workgroupBarrier();
        let r0 = row0 + qr + (f / 2u) * 16u;
        let c0 = col0 + qc + (f % 2u) * 16u;
        for (var e = lane; e < 256u; e += SG) {
            write_out(wg.z, r0 + e / 16u, c0 + e % 16u, cs[stage + e]);
        }
        workgroupBarrier();
    }
}
