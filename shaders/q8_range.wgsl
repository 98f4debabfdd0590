// range[r] = (min, max) of row r of x (k values), each widened to include 0: the first half
// of DynamicQuantizeLinear's range, per row (q8_quantize.wgsl combines a row group's).
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> range: array<vec2<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, l: Lanes) {
    let t = l.t;
    let r = row_index(wg);
    if (r >= p.rows) {
        return;
    }
    var lo = 0.0;
    var hi = 0.0;
    for (var c = t; c < p.k; c += WG) {
        let v = x[r * p.k + c];
        lo = min(lo, v);
        hi = max(hi, v);
    }
    let mn = -reduce_max(l, -lo);
    let mx = reduce_max(l, hi);
    if (t == 0u) {
        range[r] = vec2<f32>(mn, mx);
    }
}
