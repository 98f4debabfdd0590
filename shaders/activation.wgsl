// GEMM epilogue activations (prepended to the GEMM shaders, after math.wgsl); codes from
// src/gpu/params.rs.
fn safe_tanh(v: f32) -> f32 {
    let e = exp_poly(2.0 * clamp(v, -9.0, 9.0));
    return (e - 1.0) / (e + 1.0);
}

fn activate(v: f32) -> f32 {
    switch p.act {
        case ACT_GELU: { return erf(v * 0.70710678118654752) * (0.5 * v) + 0.5 * v; }
        case ACT_GELU_TANH: { return 0.5 * v * (1.0 + safe_tanh(0.7978845608 * (v + 0.044715 * v * v * v))); }
        case ACT_RELU: { return max(v, 0.0); }
        case ACT_TANH: { return safe_tanh(v); }
        case ACT_SILU: { return v / (exp_poly(-v) + 1.0); }
        default: { return v; }
    }
}
