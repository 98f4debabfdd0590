// Workgroup reductions for CPU-emulated adapters (the lanes variant of common.wgsl; see
// gemm_lanes.wgsl): a workgroup of four invocations, the lanes of one SIMD register in the
// emulator, whose partials meet in workgroup memory (those barriers switch no other context).
const WG: u32 = 4u;
var<workgroup> red: array<f32, 4>;

struct Lanes {
    @builtin(local_invocation_index) t: u32,
}

fn reduce_sum(l: Lanes, v: f32) -> f32 {
    red[l.t] = v;
    workgroupBarrier();
    let r = (red[0] + red[1]) + (red[2] + red[3]);
    workgroupBarrier();
    return r;
}

// Rows beyond 65535 workgroups spill into the y dimension.
fn row_index(wg: vec3<u32>) -> u32 {
    return wg.x + wg.y * 65535u;
}
