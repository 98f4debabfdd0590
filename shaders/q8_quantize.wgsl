// DynamicQuantizeLinear of row r of x over its row group's range (as onnxruntime's
// GetQuantizationParameter + MlasQuantizeLinear, and the CPU executor's `dynamic_params`):
// scale = (max - min) / 255 (1 for an empty range), zp = round_half_even(clamp(-min / scale,
// 0, 255)), q = clamp(round_half_even(x / scale) + zp, 0, 255). A row group is one sequence's
// real tokens (p.kind 0), one row (1: first-token rows), or a sequence's picked rows (2).
// Writes the codes 4 per u32 and (scale bits, zp, code sum) per row.
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> range: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> lens: array<u32>;
@group(0) @binding(4) var<storage, read> picked: array<u32>;
@group(0) @binding(5) var<storage, read_write> xq: array<u32>;
@group(0) @binding(6) var<storage, read_write> ameta: array<vec4<u32>>;

// x / scale where it decides a code: the quick division, unless it lies so near a
// half-integer that its error could round it to the other code.
fn code_quotient(x: f32, scale: f32) -> f32 {
    let y = x / scale;
    let near = abs(abs(y - trunc(y)) - 0.5) <= 1e-6 * max(abs(y), 1.0);
    return select(y, div_rn(x, scale), near);
}

fn codes_quotient(x: vec4<f32>, scale: f32) -> vec4<f32> {
    return vec4<f32>(
        code_quotient(x.x, scale),
        code_quotient(x.y, scale),
        code_quotient(x.z, scale),
        code_quotient(x.w, scale),
    );
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, l: Lanes) {
    let t = l.t;
    let r = row_index(wg);
    if (r >= p.rows) {
        return;
    }
    var lo = 0.0;
    var hi = 0.0;
    if (p.kind == 0u) {
        let s = r / p.seq_len;
        let first = s * p.seq_len;
        for (var j = first + t; j < first + lens[s]; j += WG) {
            lo = min(lo, range[j].x);
            hi = max(hi, range[j].y);
        }
    } else if (p.kind == 1u) {
        lo = range[r].x;
        hi = range[r].y;
    } else {
        let s = picked[r] / p.seq_len;
        for (var j = t; j < p.rows; j += WG) {
            if (picked[j] / p.seq_len == s) {
                lo = min(lo, range[j].x);
                hi = max(hi, range[j].y);
            }
        }
    }
    let mn = -reduce_max(l, -lo);
    let mx = reduce_max(l, hi);
    let scale = select(div_rn(mx - mn, 255.0), 1.0, mx == mn);
    let zp = round(clamp(0.0 - div_rn(mn, scale), 0.0, 255.0));
    let kw = p.k / 4u;
    var sum = 0.0;
    for (var c = t; c < kw; c += WG) {
        let q = clamp(round(codes_quotient(x[r * kw + c], scale)) + zp, vec4<f32>(0.0), vec4<f32>(255.0));
        let u = vec4<u32>(q);
        xq[r * kw + c] = u.x | (u.y << 8u) | (u.z << 16u) | (u.w << 24u);
        sum += q.x + q.y + q.z + q.w;
    }
    let total = reduce_sum(l, sum);
    if (t == 0u) {
        ameta[r] = vec4<u32>(bitcast<u32>(scale), u32(zp), u32(total), 0u);
    }
}
