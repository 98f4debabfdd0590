// Workgroup reductions shared by the row-wise shaders (prepended to them at load).
const WG: u32 = 256u;
var<workgroup> red: array<f32, 256>;

// The entry point's invocation ids (common_subgroup.wgsl's add the subgroup's).
struct Lanes {
    @builtin(local_invocation_index) t: u32,
}

fn reduce_sum(l: Lanes, v: f32) -> f32 {
    let t = l.t;
    red[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

fn reduce_max(l: Lanes, v: f32) -> f32 {
    let t = l.t;
    red[t] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if (t < s) {
            red[t] = max(red[t], red[t + s]);
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

// Rows beyond 65535 workgroups spill into the y dimension.
fn row_index(wg: vec3<u32>) -> u32 {
    return wg.x + wg.y * 65535u;
}
