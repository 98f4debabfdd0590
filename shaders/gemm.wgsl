// out[m][n] = act(sum_k x[m][k] * w[n][k] + bias[n]) + residual[m][n]
// w is a PyTorch Linear weight [n, k]. 64x64 output tiles staged through workgroup memory in
// 16-deep K slices; each of the 16x16 invocations accumulates a 4x4 register block in f32.
// Sizes come from the uniform, so one pipeline serves every shape; edges are bounds-checked.
struct Params {
    m: u32,
    n: u32,
    k: u32,
    act: u32,
    has_bias: u32,
    has_residual: u32,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

const BM: u32 = 64u;
const BN: u32 = 64u;
const BK: u32 = 16u;
const ACT_NONE: u32 = 0u;
const ACT_GELU: u32 = 1u;
const ACT_GELU_TANH: u32 = 2u;
const ACT_RELU: u32 = 3u;
const ACT_TANH: u32 = 4u;

var<workgroup> xs: array<f32, 1024>; // [BK][BM]
var<workgroup> ws: array<f32, 1024>; // [BK][BN]

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

@compute @workgroup_size(16, 16)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    var acc: array<f32, 16>;
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        for (var l = 0u; l < 4u; l++) {
            let e = t + l * 256u;
            let i = e / BK;
            let kk = e % BK;
            let gk = k0 + kk;
            var xv = 0.0;
            if (row0 + i < p.m && gk < p.k) {
                xv = x[(row0 + i) * p.k + gk];
            }
            xs[kk * BM + i] = xv;
            var wv = 0.0;
            if (col0 + i < p.n && gk < p.k) {
                wv = w[(col0 + i) * p.k + gk];
            }
            ws[kk * BN + i] = wv;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            var a: array<f32, 4>;
            var b: array<f32, 4>;
            for (var i = 0u; i < 4u; i++) {
                a[i] = xs[kk * BM + lid.y * 4u + i];
                b[i] = ws[kk * BN + lid.x * 4u + i];
            }
            for (var i = 0u; i < 4u; i++) {
                for (var j = 0u; j < 4u; j++) {
                    acc[i * 4u + j] = fma(a[i], b[j], acc[i * 4u + j]);
                }
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < 4u; i++) {
        let r = row0 + lid.y * 4u + i;
        for (var j = 0u; j < 4u; j++) {
            let c = col0 + lid.x * 4u + j;
            if (r < p.m && c < p.n) {
                var v = acc[i * 4u + j];
                if (p.has_bias != 0u) {
                    v += bias[c];
                }
                v = activate(v);
                if (p.has_residual != 0u) {
                    v += residual[r * p.n + c];
                }
                out[r * p.n + c] = v;
            }
        }
    }
}
