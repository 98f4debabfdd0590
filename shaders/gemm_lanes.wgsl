// out[m][n0 + n] = act(sum_k x[m][k] * w[n][k] + bias[n0 + n]) + residual[m][n0 + n], as
// gemm.wgsl, for CPU-emulated adapters (SwiftShader, lavapipe). Those run four invocations as
// the lanes of one SIMD register: a storage load is one vector load only where the lanes read
// consecutive words (else four scalar loads), and a barrier switches every invocation's
// context. So here the four lanes of a group split k (lane l takes k = l, l + 4, …: x and w
// are read as consecutive words), each group accumulates a 4x4 output block with no
// workgroup memory, and one barrier at the end sums the lanes. Rows and columns past the
// matrix load clamped (every lane stays active) and are not stored. Needs k % 4 == 0.
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;

// 8 groups of 4 lanes: a workgroup covers 4 rows and 64 columns (8 per group).
var<workgroup> partial: array<f32, 1024>; // [group][row][col][lane]

@compute @workgroup_size(4, 8)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let lane = lid.x;
    let row0 = wg.y * 4u;
    let col0 = wg.x * 64u + lid.y * 8u;
    let x0 = min(row0, p.m - 1u) * p.k;
    let x1 = min(row0 + 1u, p.m - 1u) * p.k;
    let x2 = min(row0 + 2u, p.m - 1u) * p.k;
    let x3 = min(row0 + 3u, p.m - 1u) * p.k;
    var wr: array<u32, 8>;
    for (var j = 0u; j < 8u; j++) {
        wr[j] = min(col0 + j, p.n - 1u) * p.k;
    }
    let w0 = wr[0]; let w1 = wr[1]; let w2 = wr[2]; let w3 = wr[3];
    let w4 = wr[4]; let w5 = wr[5]; let w6 = wr[6]; let w7 = wr[7];
    var a0 = vec4<f32>(); var a1 = vec4<f32>(); var a2 = vec4<f32>(); var a3 = vec4<f32>();
    var b0 = vec4<f32>(); var b1 = vec4<f32>(); var b2 = vec4<f32>(); var b3 = vec4<f32>();
    let k_len = select(p.k, p.k_len, p.k_len != 0u);
    let k_begin = wg.z * k_len;
    let k_end = min(p.k, k_begin + k_len);
    for (var k = k_begin + lane; k < k_end; k += 4u) {
        let lo = vec4<f32>(w[w0 + k], w[w1 + k], w[w2 + k], w[w3 + k]);
        let hi = vec4<f32>(w[w4 + k], w[w5 + k], w[w6 + k], w[w7 + k]);
        let y0 = x[x0 + k]; let y1 = x[x1 + k]; let y2 = x[x2 + k]; let y3 = x[x3 + k];
        a0 += y0 * lo; b0 += y0 * hi;
        a1 += y1 * lo; b1 += y1 * hi;
        a2 += y2 * lo; b2 += y2 * hi;
        a3 += y3 * lo; b3 += y3 * hi;
    }
    let base = lid.y * 128u + lane;
    for (var j = 0u; j < 4u; j++) {
        partial[base + j * 4u] = a0[j];
        partial[base + 16u + j * 4u] = b0[j];
        partial[base + 32u + j * 4u] = a1[j];
        partial[base + 48u + j * 4u] = b1[j];
        partial[base + 64u + j * 4u] = a2[j];
        partial[base + 80u + j * 4u] = b2[j];
        partial[base + 96u + j * 4u] = a3[j];
        partial[base + 112u + j * 4u] = b3[j];
    }
    workgroupBarrier();
    // lane i sums and stores row i of its group's block
    let r = row0 + lane;
    for (var j = 0u; j < 8u; j++) {
        let at = lid.y * 128u + lane * 32u + j * 4u;
        write_out(wg.z, r, col0 + j, partial[at] + partial[at + 1u] + partial[at + 2u] + partial[at + 3u]);
    }
}
