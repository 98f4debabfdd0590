//! Workgroup grids of the kernels that are not tiled, past 65535 groups spilling into `y`.

/// Workgroups for one workgroup per row, rows past 65535 going to `y`.
pub fn per_row(rows: usize) -> [u32; 3] {
    let x = rows.clamp(1, 65535);
    [x as u32, rows.div_ceil(65535).max(1) as u32, 1]
}

/// Workgroups of 256 for one invocation per element, past 65535 groups going to `y`.
pub fn per_element(n: usize) -> [u32; 3] {
    let groups = n.div_ceil(256);
    [
        groups.clamp(1, 65535) as u32,
        groups.div_ceil(65535).max(1) as u32,
        1,
    ]
}
