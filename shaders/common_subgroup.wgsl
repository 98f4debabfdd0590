// Workgroup reductions over subgroup operations (the `subgroups` variant of common.wgsl):
// each subgroup reduces in registers, its first invocation writes one partial, and every
// invocation adds the partials in subgroup order: two barriers instead of nine, for any
// subgroup size. The workgroup must be uniform at each call, as for common.wgsl.
const WG: u32 = 256u;
var<workgroup> red: array<f32, 256>;

// The entry point's invocation ids (common.wgsl's has only `t`).
struct Lanes {
    @builtin(local_invocation_index) t: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
    @builtin(num_subgroups) count: u32,
}

fn reduce_sum(l: Lanes, v: f32) -> f32 {
    let s = subgroupAdd(v);
    if (l.lane == 0u) {
        red[l.sg] = s;
    }
    workgroupBarrier();
    var r = 0.0;
    for (var i = 0u; i < l.count; i++) {
        r += red[i];
    }
    workgroupBarrier();
    return r;
}

fn reduce_max(l: Lanes, v: f32) -> f32 {
    let s = subgroupMax(v);
    if (l.lane == 0u) {
        red[l.sg] = s;
    }
    workgroupBarrier();
    var r = red[0];
    for (var i = 1u; i < l.count; i++) {
        r = max(r, red[i]);
    }
    workgroupBarrier();
    return r;
}

// Rows beyond 65535 workgroups spill into the y dimension.
fn row_index(wg: vec3<u32>) -> u32 {
    return wg.x + wg.y * 65535u;
}
