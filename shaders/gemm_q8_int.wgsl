// out[m][col_off + n] = act(f32(S) * (sa[m] * sw[n]) + bias) + residual, where
// S = sum_k (qa - za)(qw - zw) exactly: onnxruntime's MatMulInteger after
// DynamicQuantizeLinear (q8_quantize.wgsl made qa, 4 uint8 codes per u32, and each row's
// scale, zero point and code sum). W's codes are uint8 too (src/gpu/packed.rs), so the tile
// sums qa * qw with dot4U8Packed and the zero points enter once, after the k loop:
// S = sum qa*qw - zw * sum qa - za * sum qw + k * za * zw, in wrapping u32 arithmetic (the
// true S fits in i32). Tiles as in gemm.wgsl: 64 columns x BM rows, 16-deep k slices (4 words
// per row), each of the 16x8 invocations an RMx4 block.
@group(0) @binding(1) var<storage, read> xq: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
// Per row of w: scale (bits), zero point, code sum.
@group(0) @binding(6) var<storage, read> wmeta: array<vec4<u32>>;
// Per row of xq: scale (bits), zero point, code sum.
@group(0) @binding(7) var<storage, read> ameta: array<vec4<u32>>;

const BM: u32 = 8u * RM;
const BN: u32 = 64u;
const PITCH: u32 = 5u;

var<workgroup> xs: array<u32, BM * PITCH>;
var<workgroup> ws: array<u32, 320>;

@compute @workgroup_size(16, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let kw = p.k / 4u;
    var acc: array<vec4<u32>, RM>;
    for (var k0 = 0u; k0 < kw; k0 += 4u) {
        for (var e = t; e < BN * 4u; e += 128u) {
            let li = e / 4u;
            let lk = e % 4u;
            let kk = k0 + lk;
            let c = col0 + li;
            ws[li * PITCH + lk] = select(0u, w[c * kw + kk], c < p.n && kk < kw);
            if (li < BM) {
                let r = row0 + li;
                xs[li * PITCH + lk] = select(0u, xq[r * kw + kk], r < p.m && kk < kw);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < 4u; kk++) {
            var b: array<u32, 4>;
            for (var j = 0u; j < 4u; j++) {
                b[j] = ws[(lid.x + 16u * j) * PITCH + kk];
            }
            for (var i = 0u; i < RM; i++) {
                let a = xs[(lid.y + 8u * i) * PITCH + kk];
                acc[i] += vec4<u32>(dot4U8Packed(a, b[0]), dot4U8Packed(a, b[1]), dot4U8Packed(a, b[2]), dot4U8Packed(a, b[3]));
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < RM; i++) {
        let r = row0 + lid.y + 8u * i;
        if (r >= p.m) {
            continue;
        }
        let am = ameta[r];
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + lid.x + 16u * j;
            if (c < p.n) {
                let wm = wmeta[c];
                let s = acc[i][j] - wm.y * am.z - am.y * wm.z + p.k * am.y * wm.y;
                write_out(0u, r, c, f32(bitcast<i32>(s)) * (bitcast<f32>(am.x) * bitcast<f32>(wm.x)));
            }
        }
    }
}
