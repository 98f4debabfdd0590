// A GEMM's output (prepended to every GEMM shader): one sum plus bias, through the activation,
// plus the residual, at row r and column c of split-K part z (0 when the GEMM runs whole:
// part z writes its raw sums to rows z * m + r, and the bucket then sets no bias, activation
// or residual). Outside the m x n output: nothing.
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;

fn write_out(z: u32, r: u32, c: u32, sum: f32) {
    if (r < p.m && c < p.n) {
        let o = (z * p.m + r) * p.ldo + p.col_off + c;
        var v = sum;
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
