// GEMM epilogue activations (prepended to the GEMM shaders); codes from src/gpu/params.rs.
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
        case ACT_SILU: { return v / (1.0 + exp(-clamp(v, -80.0, 80.0))); }
        default: { return v; }
    }
}
