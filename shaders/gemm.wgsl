// out[m][n0 + n] = act(sum_k x[m][k] * w[n][k] + bias[n0 + n]) + residual[m][n0 + n]
// w is a PyTorch Linear weight [n, k] (or the chunk of its rows starting at n0 = p.col_off),
// so both operands are k-contiguous: tiles are loaded as vec4 along k (`load_x`/`load_w`
// come from the variant prepended to this file: f32 vec4, f16 vec4, or scalar for k % 4 != 0)
// and kept that way in workgroup memory; the inner product is a dot of vec4s.
// 64x64 output tiles (16x64 for short inputs), 16-deep k slices; each of the 16x8 invocations
// accumulates an RMx4 block in f32 (8x4: 12 vec4 reads from workgroup memory per 128 FMAs),
// on rows lid.y + 8i and columns
// lid.x + 16j, so neighbouring invocations read tile rows 5 vec4s apart (no bank conflicts)
// and store neighbouring columns (coalesced).
// Sizes come from the uniform (`GemmParams` in src/gpu/params.rs), so one pipeline serves
// every shape; edges are bounds-checked.
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

// RM (rows per invocation) comes from the pipeline: 8 (64-row tiles) or 2 (16-row tiles).
const BM: u32 = 8u * RM;
const BN: u32 = 64u;
const BK: u32 = 16u;
// Row pitch of a tile in workgroup memory, in vec4s: BK / 4 plus one of padding.
const PITCH: u32 = 5u;

var<workgroup> xs: array<vec4<f32>, BM * PITCH>;
var<workgroup> ws: array<vec4<f32>, 320>; // [BN][PITCH]

fn erf(v: f32) -> f32 {
    // Abramowitz-Stegun 7.1.26, |error| < 1.5e-7 (WGSL has no erf).
    let a = abs(v);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) * exp(-a * a);
    return select(-y, y, v >= 0.0);
}

fn safe_tanh(v: f32) -> f32 {
    let e = exp(2.0 * clamp(v, -9.0, 9.0));
    return (e - 1.0) / (e + 1.0);
}

fn activate(v: f32) -> f32 {
    switch p.act {
        case ACT_GELU: { return 0.5 * v * (1.0 + erf(v * 0.70710678118654752)); }
        case ACT_GELU_TANH: { return 0.5 * v * (1.0 + safe_tanh(0.7978845608 * (v + 0.044715 * v * v * v))); }
        case ACT_RELU: { return max(v, 0.0); }
        case ACT_TANH: { return safe_tanh(v); }
        default: { return v; }
    }
}

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
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var e = t; e < BN * 4u; e += 128u) {
            let li = e / 4u;
            let lk = e % 4u;
            ws[li * PITCH + lk] = load_w(col0 + li, k0 + lk * 4u);
            if (li < BM) {
                xs[li * PITCH + lk] = load_x(row0 + li, k0 + lk * 4u);
            }
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK / 4u; kk++) {
            var b: array<vec4<f32>, 4>;
            for (var j = 0u; j < 4u; j++) {
                b[j] = ws[(lid.x + 16u * j) * PITCH + kk];
            }
            for (var i = 0u; i < RM; i++) {
                let a = xs[(lid.y + 8u * i) * PITCH + kk];
                acc[i] += vec4<f32>(dot(a, b[0]), dot(a, b[1]), dot(a, b[2]), dot(a, b[3]));
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < RM; i++) {
        let r = row0 + lid.y + 8u * i;
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + lid.x + 16u * j;
            if (r < p.m && c < p.n) {
                let o = r * p.ldo + p.col_off + c;
                var v = acc[i][j];
                if (p.has_bias != 0u) {
                    v += bias[p.col_off + c];
                }
                v = activate(v);
                if (p.has_residual != 0u) {
                    v += residual[o];
                }
                out[o] = v;
            }
        }
    }
}
